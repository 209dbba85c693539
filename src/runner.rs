//! A tree's lifecycle: a [`Runner`] owns a tree and a db and plays, pauses,
//! resumes, stops, resets, loads and destroys it, counting loops by a play
//! mode, as the Unity behaviour-tree engine defines these operations.
//!
//! One loop is one tick. A *report* is a tick that ends in Success or
//! Failure; a *notify executing* is a tick that ends Running. A *notify
//! interrupt* is pausing, stopping, resetting or destroying a tree while it
//! is executing, in the middle of a traversal; the engine's traversal is
//! one tick, which nothing interrupts, and between ticks a tree whose last
//! tick ended Running is a *notified executing* tree, which (in the seed's
//! words) such an operation "won't interrupt". So no operation of a
//! `Runner` counts as an interrupt, and the interrupt-counting play modes
//! count only what else they count (see [`PlayMode`]).
//!
//! Pause and stop keep the tree's progress: the running set and all node
//! memory stay in the db, no halt hook runs and no cancel request is made,
//! and resume (or play) goes on from the interrupted nodes. Reset and
//! destroy halt the running nodes (halt hooks, cancel requests) and clear
//! all node memory, persistent state included. Each operation then runs
//! every node type's lifecycle hook for each of its nodes, in depth-first
//! order.
//!
//! The tree's root has the seed's three operations as callbacks
//! ([`Runner::on_root`]): *execute* when a tick starts, *report* with the
//! status when a tick ends in Success or Failure, *notify* with the
//! executing nodes when a tick ends Running. A run record
//! ([`Runner::record_run`]) shows them as notes (`:root/execute`,
//! `:root/report`, `:root/notify`) on the tick they belong to, with the
//! trim tasks looked at before it.

use std::fmt;
use std::sync::Arc;

use crate::extend::{Imp, Lifecycle};
use crate::migrate::Migration;
use crate::record::{Event, RunRecord};
use crate::registry::Registry;
use crate::session::Session;
use crate::tick::{
    AgentTick, Engine, Status, Tick, TickOptions, TraceEvent, catch_quietly, db_map, halt_running,
    panic_message,
};
use crate::tree::{NodeIndex, Tree};
use crate::trim::{TrimReport, TrimTask};
use crate::value::{Keyword, Value, kw};

/// Where a tree stands in its lifecycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TreeStatus {
    /// Destroyed: only [`Runner::load`] brings it back.
    Destructed,
    /// Play was called; no loop has run yet.
    Played,
    /// Resume was called; no loop has run since.
    Resumed,
    /// Looping, the target loop count not yet reached.
    Executing,
    /// Paused: [`Runner::resume`] goes on with the remaining loops.
    Paused,
    /// Stopped, or the target loop count was reached.
    Stopped,
    /// Loaded or reset: fresh, nothing running, no node memory.
    Reset,
}

/// Which loops count towards the target loop count, and so when play stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum PlayMode {
    /// Every tick.
    StopByExecuteLoopCount,
    /// Ticks that end in Success or Failure.
    StopByReportLoopCount,
    /// Ticks that end in Success.
    StopByReportSuccessLoopCount,
    /// Ticks that end in Failure.
    StopByReportFailureLoopCount,
    /// Ticks that end Running (notify executing) and interrupts (notify
    /// interrupt); a tick engine has no interrupts (see the module
    /// documentation), so this counts as [`PlayMode::StopByNotifyExecutingLoopCount`].
    StopByNotifyLoopCount,
    /// Ticks that end Running.
    StopByNotifyExecutingLoopCount,
    /// Interrupts of a tree in the middle of a traversal. A tick is never
    /// interrupted and pausing, stopping, resetting or destroying between
    /// ticks interrupts nothing, so no loop counts: the tree plays until
    /// it is paused or stopped (a target of 0 stops it at the first update).
    StopByNotifyInterruptLoopCount,
}

impl PlayMode {
    /// Whether a tick that ended with `status` counts as a loop.
    fn counts(self, status: Status) -> bool {
        use PlayMode::*;
        match self {
            StopByExecuteLoopCount => true,
            StopByReportLoopCount => matches!(status, Status::Success | Status::Failure),
            StopByReportSuccessLoopCount => status == Status::Success,
            StopByReportFailureLoopCount => status == Status::Failure,
            StopByNotifyLoopCount | StopByNotifyExecutingLoopCount => status == Status::Running,
            StopByNotifyInterruptLoopCount => false,
        }
    }
}

/// Why a runner operation was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RunnerError {
    /// The tree was destroyed; load it again first.
    Destructed,
    /// The tree is loaded (not destroyed): [`Runner::load_again`] loads only
    /// a tree whose instance does not exist.
    Loaded,
}

impl fmt::Display for RunnerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunnerError::Destructed => f.write_str("the tree was destroyed: load it again first"),
            RunnerError::Loaded => {
                f.write_str("the tree is loaded: only a destroyed tree can be loaded again")
            }
        }
    }
}

/// What the tree's root tells its callbacks ([`Runner::on_root`]): the
/// Tree Root Node operations of the Unity behaviour-tree engine.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum RootEvent {
    /// OnExecute: a tick (one traversal of the tree) starts.
    Execute,
    /// OnReport: the tick ended in Success or Failure, given here.
    Report(Status),
    /// OnNotify: the tick ended Running (the tree notified executing). The
    /// executing nodes are the running nodes with no running child, the
    /// ones that asked to be ticked again, by id in depth-first order.
    Notify {
        /// The ids of the executing nodes.
        executing: Vec<Value>,
    },
}

impl RootEvent {
    /// The event as a run-record note: `:root/execute` (data nil),
    /// `:root/report` (the status) or `:root/notify` (`{:executing [..]}`).
    pub fn to_note(&self) -> Event {
        let (kind, data) = match self {
            RootEvent::Execute => ("root/execute", Value::Nil),
            RootEvent::Report(status) => ("root/report", status.to_value()),
            RootEvent::Notify { executing } => (
                "root/notify",
                Value::map_from([(
                    Value::keyword("executing"),
                    Value::Vector(executing.as_slice().into()),
                )]),
            ),
        };
        Event::Note {
            kind: Keyword::new(kind),
            data,
        }
    }
}

/// A root callback: the event and the db (before the tick for
/// [`RootEvent::Execute`], after it for the others).
type RootCallback = Box<dyn FnMut(&RootEvent, &Value) + Send>;

/// The root callbacks, in the order they were added.
#[derive(Default)]
struct RootCallbacks(Vec<RootCallback>);

impl fmt::Debug for RootCallbacks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} root callbacks", self.0.len())
    }
}

impl std::error::Error for RunnerError {}

/// One node in a [`Properties`] view.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeProperties {
    /// The node.
    pub node: NodeIndex,
    /// Its stable id.
    pub id: Value,
    /// Its type, e.g. `:sequence`.
    pub node_type: Keyword,
    /// Its depth: 0 for the root.
    pub depth: usize,
    /// What it returned when last ticked by this runner (`None`: not ticked
    /// since load or reset).
    pub last_status: Option<Status>,
    /// Whether it was halted after it last returned `last_status`.
    pub halted: bool,
    /// Whether it ended the last tick Running.
    pub running: bool,
    /// Its node memory, if it has any.
    pub memory: Option<Value>,
}

/// A view of a runner and its nodes, down to a chosen depth.
#[derive(Debug, Clone, PartialEq)]
pub struct Properties {
    /// The tree's lifecycle status.
    pub status: TreeStatus,
    /// The play mode.
    pub mode: PlayMode,
    /// The target loop count.
    pub target: u64,
    /// The loops counted so far under the play mode.
    pub accumulated: u64,
    /// The nodes, depth first.
    pub nodes: Vec<NodeProperties>,
}

/// Owns a tree and a db and runs the tree's lifecycle.
///
/// ```
/// use std::sync::Arc;
/// use aido::runner::{PlayMode, Runner, TreeStatus};
/// use aido::{Registry, Status, Value, compile_str};
///
/// let tree = compile_str("walk.edn", "[:sequence [:wait {:ticks 1}] [:inc! {:key :steps}]]", &Registry::new()).unwrap();
/// let mut runner = Runner::load(Arc::new(tree), Value::map());
/// // Play until two ticks have reported Success or Failure.
/// runner.play(PlayMode::StopByReportLoopCount, 2).unwrap();
/// let mut statuses = Vec::new();
/// while let Some(tick) = runner.update().unwrap() {
///     statuses.push(tick.status);
/// }
/// assert_eq!(statuses, [Status::Running, Status::Success, Status::Running, Status::Success]);
/// assert_eq!(runner.status(), TreeStatus::Stopped);
/// assert_eq!(runner.db().get(&Value::keyword("steps")), Some(&Value::Int(2)));
/// ```
#[derive(Debug)]
pub struct Runner {
    /// The tree, the db, the trims and the run record, ticked by the one loop.
    session: Session,
    status: TreeStatus,
    mode: PlayMode,
    target: u64,
    accumulated: u64,
    last_status: Vec<Option<Status>>,
    /// Whether each node was halted after it last returned.
    halted: Vec<bool>,
    /// The tasks looked at before the last tick.
    last_trims: Vec<TrimReport>,
    /// The root's callbacks.
    callbacks: RootCallbacks,
    /// What the root told its callbacks in the last update.
    last_root: Vec<RootEvent>,
    /// Panics of root callbacks in the last update, as messages.
    callback_panics: Vec<String>,
}

impl Runner {
    /// Loads `tree` with `db` (a saved db carries on where it left off):
    /// every lifecycle hook gets [`Lifecycle::Construct`]; the status is Reset.
    pub fn load(tree: Arc<Tree>, db: Value) -> Runner {
        let n = tree.len();
        let mut session = Session::new(tree, db);
        session.set_tick_options(TickOptions {
            trace: true,
            ..TickOptions::default()
        });
        let mut runner = Runner {
            session,
            status: TreeStatus::Reset,
            mode: PlayMode::StopByExecuteLoopCount,
            target: 0,
            accumulated: 0,
            last_status: vec![None; n],
            halted: vec![false; n],
            last_trims: Vec::new(),
            callbacks: RootCallbacks::default(),
            last_root: Vec::new(),
            callback_panics: Vec::new(),
        };
        runner.hooks(Lifecycle::Construct);
        runner
    }

    /// Swaps in another version of the tree between ticks: the db is
    /// carried over to it (see [`crate::migrate::migrate()`]), and the report says
    /// what was kept, dropped and halted, with the cancel requests of the
    /// deferred actions halted (hand them to the system running the
    /// actions, as a tick's [`Tick::cancels`]). A run record gets the
    /// report as a reload event on the next tick.
    pub fn reload(&mut self, tree: Arc<Tree>) -> Migration {
        let report = self.session.reload(tree, None);
        self.session.note(Event::Reload(report.to_value()));
        self.tree_changed();
        report
    }

    /// Starts the per-node views afresh for a new tree.
    fn tree_changed(&mut self) {
        let n = self.session.tree().len();
        self.last_status = vec![None; n];
        self.halted = vec![false; n];
    }

    /// The registry that trimmed trees are compiled against (by default,
    /// the built-in node types only). An applied trim task's node types and
    /// functions ([`TrimTask::extend_registry`]) are added to it.
    pub fn set_registry(&mut self, registry: Registry) {
        self.session.set_registry(registry);
    }

    /// Queues a trim task: tasks are worked through before each tick (see
    /// [`crate::trim::Trimmer`]).
    pub fn trim(&mut self, task: Box<dyn TrimTask>) {
        self.session.trim(task);
    }

    /// What became of the trim tasks looked at before the last tick.
    pub fn trims(&self) -> &[TrimReport] {
        &self.last_trims
    }

    /// The registry that trimmed trees are compiled against, with what
    /// applied trim tasks added to it.
    pub fn registry(&self) -> &Registry {
        self.session.registry()
    }

    /// Adds a root callback, run with each [`RootEvent`]: when a tick
    /// starts, and when it ends in Success or Failure (report) or Running
    /// (notify); a tick that ends Skipped or in Error reports and notifies
    /// nothing. Pausing, stopping, resetting or destroying between ticks
    /// interrupts nothing (see the module documentation), so no interrupt
    /// is notified. A callback that panics is caught: the message is in
    /// [`Runner::callback_panics`] and in the run record, and the other
    /// callbacks still run.
    pub fn on_root(&mut self, callback: impl FnMut(&RootEvent, &Value) + Send + 'static) {
        self.callbacks.0.push(Box::new(callback));
    }

    /// What the root told its callbacks (and the run record) in the last
    /// update, in order; empty when the runner has no root callback and
    /// records no run, since the events are then not worked out.
    pub fn root_events(&self) -> &[RootEvent] {
        &self.last_root
    }

    /// The panic messages of root callbacks in the last update.
    pub fn callback_panics(&self) -> &[String] {
        &self.callback_panics
    }

    /// Starts a run record from here (the tree and db as they are now): each
    /// update adds its tick, with the trim tasks looked at before it and the
    /// root's events as notes (see [`RootEvent::to_note`]). Starting again
    /// drops the record so far.
    pub fn record_run(&mut self) {
        self.session.record();
    }

    /// The run record, if [`Runner::record_run`] started one.
    pub fn run_record(&self) -> Option<&RunRecord> {
        self.session.run_record()
    }

    /// Loads a destroyed runner's tree again (see [`Runner::load`]): only a
    /// tree whose instance does not exist is loaded, so a live runner
    /// refuses with [`RunnerError::Loaded`] and nothing changes (no
    /// construct hook runs).
    pub fn load_again(&mut self) -> Result<(), RunnerError> {
        if self.status != TreeStatus::Destructed {
            return Err(RunnerError::Loaded);
        }
        self.status = TreeStatus::Reset;
        self.accumulated = 0;
        self.last_status.iter_mut().for_each(|s| *s = None);
        self.halted.iter_mut().for_each(|h| *h = false);
        self.hooks(Lifecycle::Construct);
        Ok(())
    }

    /// Sets the step budget and other settings of each tick (tracing stays on:
    /// it feeds [`Runner::properties`]).
    pub fn set_tick_options(&mut self, options: TickOptions) {
        self.session.set_tick_options(TickOptions {
            trace: true,
            ..options
        });
    }

    /// Starts playing: loops are counted from 0 under `mode` until `target`.
    pub fn play(&mut self, mode: PlayMode, target: u64) -> Result<(), RunnerError> {
        self.alive()?;
        self.mode = mode;
        self.target = target;
        self.accumulated = 0;
        self.status = TreeStatus::Played;
        Ok(())
    }

    /// Runs one loop (one tick) if the tree is playing; `None` if it is not
    /// (paused, stopped, reset, or the target was reached). Reaching the
    /// target stops the tree, interrupting whatever still runs.
    ///
    /// The tick's db stays in the runner ([`Runner::db`]); what else the
    /// tick produced (status, error, requests, trace) is handed back.
    pub fn update(&mut self) -> Result<Option<AgentTick>, RunnerError> {
        self.alive()?;
        if !matches!(
            self.status,
            TreeStatus::Played | TreeStatus::Resumed | TreeStatus::Executing
        ) {
            return Ok(None);
        }
        // A target of 0 is reached before the first loop.
        if self.accumulated >= self.target {
            self.hooks(Lifecycle::Stop);
            self.status = TreeStatus::Stopped;
            return Ok(None);
        }
        self.last_root.clear();
        self.callback_panics.clear();
        let gap = self.session.between_ticks();
        self.last_trims = gap.trims;
        if gap.tree_changed {
            self.tree_changed();
        }
        // The root's events are worked out only for someone to tell.
        let listened = !self.callbacks.0.is_empty() || self.session.run_record().is_some();
        if listened {
            let db = self.session.db().clone();
            let notes = self.root(RootEvent::Execute, &db);
            for note in notes {
                self.session.note(note);
            }
        }
        let Runner {
            session,
            callbacks,
            last_root,
            callback_panics,
            ..
        } = self;
        let mut root = Root {
            callbacks,
            last_root,
            callback_panics,
        };
        let tick = session.tick_noting(|tree, tick| {
            if !listened {
                return Vec::new();
            }
            match tick.status {
                Status::Success | Status::Failure => {
                    root.tell(RootEvent::Report(tick.status), &tick.db)
                }
                Status::Running => {
                    let executing = executing_nodes(tree, &tick.db);
                    root.tell(RootEvent::Notify { executing }, &tick.db)
                }
                Status::Skipped | Status::Error => Vec::new(),
            }
        });
        self.record(tick.trace());
        self.status = TreeStatus::Executing;
        self.count(tick.status);
        if self.accumulated >= self.target {
            // Stopped with its progress kept, as `stop` does.
            self.hooks(Lifecycle::Stop);
            self.status = TreeStatus::Stopped;
        }
        Ok(Some(tick))
    }

    /// Pauses, keeping the tree's progress (running nodes, node memory,
    /// deferred actions in flight): only the [`Lifecycle::Pause`] hooks run.
    /// [`Runner::resume`] goes on from where the tree was.
    pub fn pause(&mut self) -> Result<(), RunnerError> {
        self.alive()?;
        self.hooks(Lifecycle::Pause);
        self.status = TreeStatus::Paused;
        Ok(())
    }

    /// Resumes a paused tree with its remaining loop count.
    pub fn resume(&mut self) -> Result<(), RunnerError> {
        self.alive()?;
        if self.status == TreeStatus::Paused {
            self.status = TreeStatus::Resumed;
        }
        Ok(())
    }

    /// Stops, keeping the tree's progress as [`Runner::pause`] does: only
    /// the [`Lifecycle::Stop`] hooks run. [`Runner::play`] goes on from the
    /// interrupted nodes with a new loop count.
    pub fn stop(&mut self) -> Result<(), RunnerError> {
        self.alive()?;
        self.hooks(Lifecycle::Stop);
        self.status = TreeStatus::Stopped;
        Ok(())
    }

    /// Resets: halts the running nodes (halt hooks, cancel requests), runs
    /// the [`Lifecycle::Reset`] hooks, then clears all node memory
    /// (persistent state too), pending completions and the loop count. The
    /// request counter `:aido/requests` stays, so request ids stay unique.
    /// The returned tick lists the halts and cancels.
    pub fn reset(&mut self) -> Result<Tick, RunnerError> {
        self.alive()?;
        let tick = self.halt_all();
        self.hooks(Lifecycle::Reset);
        self.clear_state();
        self.accumulated = 0;
        self.last_status.iter_mut().for_each(|s| *s = None);
        self.halted.iter_mut().for_each(|h| *h = false);
        self.status = TreeStatus::Reset;
        Ok(tick)
    }

    /// Destroys: halts the running nodes (halt hooks, cancel requests),
    /// runs the [`Lifecycle::Destruct`] hooks, then clears all node memory
    /// as [`Runner::reset`] does. The rest of the db is kept (see
    /// [`Runner::db`]).
    pub fn destroy(&mut self) -> Result<Tick, RunnerError> {
        self.alive()?;
        let tick = self.halt_all();
        self.hooks(Lifecycle::Destruct);
        self.clear_state();
        self.status = TreeStatus::Destructed;
        Ok(tick)
    }

    /// Removes all node memory and pending completions.
    fn clear_state(&mut self) {
        if let Some(db) = self.session.db_mut().as_map_mut() {
            db.shift_remove(&Value::Keyword(kw::MEMORY));
            db.shift_remove(&Value::Keyword(kw::RESULTS));
        }
    }

    /// The tree's lifecycle status.
    pub fn status(&self) -> TreeStatus {
        self.status
    }

    /// The play mode.
    pub fn mode(&self) -> PlayMode {
        self.mode
    }

    /// The target loop count.
    pub fn target(&self) -> u64 {
        self.target
    }

    /// The loops counted so far under the play mode.
    pub fn accumulated(&self) -> u64 {
        self.accumulated
    }

    /// The db.
    pub fn db(&self) -> &Value {
        self.session.db()
    }

    /// The db, to change between loops.
    pub fn db_mut(&mut self) -> &mut Value {
        self.session.db_mut()
    }

    /// The tree.
    pub fn tree(&self) -> &Arc<Tree> {
        self.session.tree()
    }

    /// Each node's type, id, last status and memory, down to `depth` (0: the root only).
    pub fn properties(&self, depth: usize) -> Properties {
        let tree = self.session.tree();
        let running: Vec<&Value> = self
            .session
            .db()
            .get(&Value::Keyword(kw::RUNNING))
            .and_then(Value::as_seq)
            .map(|ids| ids.iter().collect())
            .unwrap_or_default();
        let memory = self.session.db().get(&Value::Keyword(kw::MEMORY));
        let mut nodes = Vec::new();
        let mut stack = vec![(tree.root(), 0usize)];
        while let Some((node, d)) = stack.pop() {
            let id = tree.node_id(node).cloned().unwrap_or_default();
            nodes.push(NodeProperties {
                node,
                node_type: tree
                    .node_type(node)
                    .unwrap_or_else(|| Keyword::new("aido/invalid")),
                depth: d,
                last_status: self.last_status.get(node.index()).copied().flatten(),
                halted: self.halted.get(node.index()).copied().unwrap_or(false),
                running: running.contains(&&id),
                memory: memory.and_then(|m| m.get(&id)).cloned(),
                id,
            });
            if d < depth {
                let children: Vec<NodeIndex> = tree.children(node).collect();
                stack.extend(children.into_iter().rev().map(|c| (c, d + 1)));
            }
        }
        Properties {
            status: self.status,
            mode: self.mode,
            target: self.target,
            accumulated: self.accumulated,
            nodes,
        }
    }

    fn alive(&self) -> Result<(), RunnerError> {
        if self.status == TreeStatus::Destructed {
            Err(RunnerError::Destructed)
        } else {
            Ok(())
        }
    }

    fn count(&mut self, status: Status) {
        if self.mode.counts(status) {
            self.accumulated += 1;
        }
    }

    /// Runs the root callbacks with `event`; gives the notes for the run record.
    fn root(&mut self, event: RootEvent, db: &Value) -> Vec<Event> {
        Root {
            callbacks: &mut self.callbacks,
            last_root: &mut self.last_root,
            callback_panics: &mut self.callback_panics,
        }
        .tell(event, db)
    }

    fn record(&mut self, trace: &[TraceEvent]) {
        for event in trace {
            match *event {
                TraceEvent::Ticked { node, status } => {
                    self.last_status[node.index()] = Some(status);
                    self.halted[node.index()] = false;
                }
                TraceEvent::Halted { node } => self.halted[node.index()] = true,
            }
        }
    }

    fn halt_all(&mut self) -> Tick {
        let db = std::mem::take(self.session.db_mut());
        let tick = halt_running(db, self.session.tree());
        *self.session.db_mut() = tick.db.clone();
        self.record(tick.trace());
        tick
    }

    /// Runs every node type's lifecycle hook for `event`, depth first.
    fn hooks(&mut self, event: Lifecycle) {
        let tree = self.session.tree().clone();
        let has_hooks = tree.nodes.iter().any(|n| {
            matches!(&n.kind, crate::tree::Kind::Custom { node_type, .. }
                if node_type.lifecycle.is_some() && matches!(node_type.imp, Imp::Custom(_)))
        });
        if !has_hooks {
            return;
        }
        let mut db = std::mem::take(self.session.db_mut());
        let options = TickOptions::default();
        let map = match db_map(&mut db, &tree) {
            Ok(map) => map,
            Err(tick) => {
                *self.session.db_mut() = tick.db;
                return;
            }
        };
        let mut engine = Engine::new(&tree, map, &options, None);
        engine.prepare(&options);
        engine.keep_running = true;
        for (i, node) in tree.nodes.iter().enumerate() {
            if let crate::tree::Kind::Custom { node_type, .. } = &node.kind
                && let Some(hook) = &node_type.lifecycle
            {
                let hook = hook.clone();
                engine.run_hook(i as u32, |ctx| hook(ctx, event));
            }
        }
        engine.finish(Status::Success, &options);
        *self.session.db_mut() = db;
    }
}

/// The root's callbacks and what they were told, borrowed for one event.
struct Root<'a> {
    callbacks: &'a mut RootCallbacks,
    last_root: &'a mut Vec<RootEvent>,
    callback_panics: &'a mut Vec<String>,
}

impl Root<'_> {
    /// Runs the callbacks with `event`; gives the notes for the run record:
    /// the panics caught, then the event.
    fn tell(&mut self, event: RootEvent, db: &Value) -> Vec<Event> {
        let mut notes = Vec::new();
        for callback in &mut self.callbacks.0 {
            if let Err(panic) = catch_quietly(|| callback(&event, db)) {
                let message = format!("root callback panicked: {}", panic_message(panic.as_ref()));
                notes.push(Event::Note {
                    kind: Keyword::new("root/panic"),
                    data: Value::string(&message),
                });
                self.callback_panics.push(message);
            }
        }
        notes.push(event.to_note());
        self.last_root.push(event);
        notes
    }
}

/// The running nodes of `db` that have no running node below them, by id
/// in depth-first order: the ones a tick that ended Running will go on from.
fn executing_nodes(tree: &Tree, db: &Value) -> Vec<Value> {
    let mut running: Vec<NodeIndex> = db
        .get(&Value::Keyword(kw::RUNNING))
        .and_then(Value::as_seq)
        .unwrap_or(&[])
        .iter()
        .filter_map(|id| tree.find(id))
        .collect();
    running.sort_unstable();
    running
        .iter()
        .enumerate()
        .filter(|&(i, n)| {
            let end = tree.nodes[n.index()].subtree_end as usize;
            running.get(i + 1).is_none_or(|next| next.index() >= end)
        })
        .filter_map(|(_, &n)| tree.node_id(n).cloned())
        .collect()
}
