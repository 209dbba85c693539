//! A tree's lifecycle: a [`Runner`] owns a tree and a db and plays, pauses,
//! resumes, stops, resets, loads and destroys it, counting loops by a play
//! mode, as the Unity behaviour-tree engine defines these operations.
//!
//! One loop is one tick. A *report* is a tick that ends in Success or
//! Failure; a *notify* is a tick that ends Running (notify executing) or an
//! interrupt (notify interrupt): pausing, stopping, resetting or destroying
//! a tree that is executing (played or resumed, its last tick Running).
//! The same operation on a paused, stopped, reported or reset tree
//! interrupts nothing.
//!
//! Pause and stop keep the tree's progress: the running set and all node
//! memory stay in the db, no halt hook runs and no cancel request is made,
//! and resume (or play) goes on from the interrupted nodes. Reset and
//! destroy halt the running nodes (halt hooks, cancel requests) and clear
//! all node memory, persistent state included. Each operation then runs
//! every node type's lifecycle hook for each of its nodes, in depth-first
//! order.

use std::fmt;
use std::sync::Arc;

use crate::extend::{Imp, Lifecycle};
use crate::migrate::Migration;
use crate::registry::Registry;
use crate::tick::{
    AgentTick, Engine, Status, Tick, TickOptions, TraceEvent, db_map, halt_running,
    run_tick_with_options,
};
use crate::tree::{NodeIndex, Tree};
use crate::trim::{TrimReport, TrimTask, Trimmer};
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
    /// Ticks that end Running, and interrupts of an executing tree.
    StopByNotifyLoopCount,
    /// Ticks that end Running.
    StopByNotifyExecutingLoopCount,
    /// Interrupts: pausing, stopping, resetting or destroying an executing
    /// tree (played or resumed, its last tick Running). Operating on a
    /// paused or stopped tree again interrupts nothing.
    StopByNotifyInterruptLoopCount,
}

/// What happened in one loop or operation, for counting.
#[derive(Clone, Copy)]
enum Event {
    Ticked(Status),
    Interrupted,
}

impl PlayMode {
    fn counts(self, event: Event) -> bool {
        use PlayMode::*;
        match (self, event) {
            (StopByExecuteLoopCount, Event::Ticked(_)) => true,
            (StopByReportLoopCount, Event::Ticked(s)) => {
                matches!(s, Status::Success | Status::Failure)
            }
            (StopByReportSuccessLoopCount, Event::Ticked(s)) => s == Status::Success,
            (StopByReportFailureLoopCount, Event::Ticked(s)) => s == Status::Failure,
            (StopByNotifyLoopCount, Event::Ticked(s)) => s == Status::Running,
            (StopByNotifyLoopCount, Event::Interrupted) => true,
            (StopByNotifyExecutingLoopCount, Event::Ticked(s)) => s == Status::Running,
            (StopByNotifyInterruptLoopCount, Event::Interrupted) => true,
            _ => false,
        }
    }
}

/// Why a runner operation was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RunnerError {
    /// The tree was destroyed; load it again first.
    Destructed,
}

impl fmt::Display for RunnerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunnerError::Destructed => f.write_str("the tree was destroyed: load it again first"),
        }
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
    tree: Arc<Tree>,
    db: Value,
    status: TreeStatus,
    mode: PlayMode,
    target: u64,
    accumulated: u64,
    last_status: Vec<Option<Status>>,
    /// Whether each node was halted after it last returned.
    halted: Vec<bool>,
    options: TickOptions,
    /// Trim tasks, worked through before each tick.
    trimmer: Trimmer,
    /// What compiles the trimmed trees.
    registry: Registry,
    /// Ticks run since the runner was loaded.
    ticks: u64,
    /// The tasks looked at before the last tick.
    last_trims: Vec<TrimReport>,
}

impl Runner {
    /// Loads `tree` with `db` (a saved db carries on where it left off):
    /// every lifecycle hook gets [`Lifecycle::Construct`]; the status is Reset.
    pub fn load(tree: Arc<Tree>, db: Value) -> Runner {
        let n = tree.len();
        let mut runner = Runner {
            tree,
            db,
            status: TreeStatus::Reset,
            mode: PlayMode::StopByExecuteLoopCount,
            target: 0,
            accumulated: 0,
            last_status: vec![None; n],
            halted: vec![false; n],
            options: TickOptions {
                trace: true,
                ..TickOptions::default()
            },
            trimmer: Trimmer::new(),
            registry: Registry::new(),
            ticks: 0,
            last_trims: Vec::new(),
        };
        runner.hooks(Lifecycle::Construct);
        runner
    }

    /// Swaps in another version of the tree between ticks: the db is
    /// carried over to it (see [`crate::migrate::migrate()`]), and the report says
    /// what was kept, dropped and halted.
    pub fn reload(&mut self, tree: Arc<Tree>) -> Migration {
        let db = std::mem::take(&mut self.db);
        let (db, report) = crate::migrate::migrate(db, &self.tree, &tree);
        self.db = db;
        self.set_tree(tree);
        report
    }

    fn set_tree(&mut self, tree: Arc<Tree>) {
        self.last_status = vec![None; tree.len()];
        self.halted = vec![false; tree.len()];
        self.tree = tree;
    }

    /// The registry that trimmed trees are compiled against (by default,
    /// the built-in node types only).
    pub fn set_registry(&mut self, registry: Registry) {
        self.registry = registry;
    }

    /// Queues a trim task: tasks are worked through before each tick (see
    /// [`Trimmer`]).
    pub fn trim(&mut self, task: Box<dyn TrimTask>) {
        self.trimmer.push(task);
    }

    /// What became of the trim tasks looked at before the last tick.
    pub fn trims(&self) -> &[TrimReport] {
        &self.last_trims
    }

    /// Loads a destroyed runner's tree again (see [`Runner::load`]).
    pub fn load_again(&mut self) {
        self.status = TreeStatus::Reset;
        self.accumulated = 0;
        self.last_status.iter_mut().for_each(|s| *s = None);
        self.halted.iter_mut().for_each(|h| *h = false);
        self.hooks(Lifecycle::Construct);
    }

    /// Sets the step budget and other settings of each tick (tracing stays on:
    /// it feeds [`Runner::properties`]).
    pub fn set_tick_options(&mut self, options: TickOptions) {
        self.options = TickOptions {
            trace: true,
            ..options
        };
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
        // An interrupt may have reached the target while the tree was paused.
        if self.accumulated >= self.target {
            self.hooks(Lifecycle::Stop);
            self.status = TreeStatus::Stopped;
            return Ok(None);
        }
        let mut db = std::mem::take(&mut self.db);
        self.last_trims.clear();
        if !self.trimmer.is_empty() {
            let gap = self
                .trimmer
                .between_ticks(self.ticks, db, &self.tree, &self.registry);
            db = gap.db;
            self.last_trims = gap.reports;
            if let Some(tree) = gap.tree {
                self.set_tree(Arc::new(tree));
            }
        }
        let (db, tick) = run_tick_with_options(db, &self.tree, &self.options).split();
        self.ticks += 1;
        self.db = db;
        self.record(tick.trace());
        self.status = TreeStatus::Executing;
        self.count(Event::Ticked(tick.status));
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
        self.count_interrupt();
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
        self.count_interrupt();
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
        self.count_interrupt();
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
        self.count_interrupt();
        let tick = self.halt_all();
        self.hooks(Lifecycle::Destruct);
        self.clear_state();
        self.status = TreeStatus::Destructed;
        Ok(tick)
    }

    /// Removes all node memory and pending completions.
    fn clear_state(&mut self) {
        if let Some(db) = self.db.as_map_mut() {
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
        &self.db
    }

    /// The db, to change between loops.
    pub fn db_mut(&mut self) -> &mut Value {
        &mut self.db
    }

    /// The tree.
    pub fn tree(&self) -> &Arc<Tree> {
        &self.tree
    }

    /// Each node's type, id, last status and memory, down to `depth` (0: the root only).
    pub fn properties(&self, depth: usize) -> Properties {
        let tree = &self.tree;
        let running: Vec<&Value> = self
            .db
            .get(&Value::Keyword(kw::RUNNING))
            .and_then(Value::as_seq)
            .map(|ids| ids.iter().collect())
            .unwrap_or_default();
        let memory = self.db.get(&Value::Keyword(kw::MEMORY));
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

    fn count(&mut self, event: Event) {
        if self.mode.counts(event) {
            self.accumulated += 1;
        }
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

    /// Counts an interrupt if the tree is executing: played or resumed,
    /// with nodes that ended the last tick Running. A paused, stopped,
    /// reported or reset tree has nothing to interrupt.
    fn count_interrupt(&mut self) {
        let executing = matches!(
            self.status,
            TreeStatus::Played | TreeStatus::Resumed | TreeStatus::Executing
        );
        if executing && self.db.get(&Value::Keyword(kw::RUNNING)).is_some() {
            self.count(Event::Interrupted);
        }
    }

    fn halt_all(&mut self) -> Tick {
        let db = std::mem::take(&mut self.db);
        let tick = halt_running(db, &self.tree);
        self.db = tick.db.clone();
        self.record(tick.trace());
        tick
    }

    /// Runs every node type's lifecycle hook for `event`, depth first.
    fn hooks(&mut self, event: Lifecycle) {
        let tree = self.tree.clone();
        let has_hooks = tree.nodes.iter().any(|n| {
            matches!(&n.kind, crate::tree::Kind::Custom { node_type, .. }
                if node_type.lifecycle.is_some() && matches!(node_type.imp, Imp::Custom(_)))
        });
        if !has_hooks {
            return;
        }
        let mut db = std::mem::take(&mut self.db);
        let options = TickOptions::default();
        let map = match db_map(&mut db, &tree) {
            Ok(map) => map,
            Err(tick) => {
                self.db = tick.db;
                return;
            }
        };
        let mut engine = Engine::new(&tree, map, &options);
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
        self.db = db;
    }
}
