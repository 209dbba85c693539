//! The one loop that ticks a tree over time: a [`Session`] holds the tree
//! (with its stubs and the registry it compiles against), the db, the trim
//! tasks, the run record and the programs that do deferred actions, and
//! moves them on one tick at a time. `aido run`, `aido test`
//! ([`crate::scenario::Scenario::run`]), [`crate::runner::Runner`] and
//! `aido chat` are adapters over it, so a behaviour is the same from every
//! entry point.
//!
//! Between two ticks, in this order: the clock moves on
//! ([`Session::advance_time`]), the host's input is merged
//! ([`Session::input`]), the tree may be swapped ([`Session::reload`]),
//! then [`Session::between_ticks`] merges the completions that the
//! [`Handlers`] report and works through the trim tasks. [`Session::tick`]
//! ticks, records, and hands the tick's launches and cancels to the
//! handlers. A chat turn ([`Session::turn`]) is an input followed by ticks
//! until the tree is no longer Running.
//!
//! ```
//! use std::sync::Arc;
//! use aido::{Registry, Status, Value, compile_str, session::Session, value::Map};
//!
//! let tree = compile_str("t.edn", "[:inc! {:key :n}]", &Registry::new()).unwrap();
//! let mut session = Session::new(Arc::new(tree), Value::map());
//! let tick = session.step(None);
//! assert_eq!(tick.status, Status::Success);
//! assert_eq!(session.db().get(&Value::keyword("n")), Some(&Value::Int(1)));
//! ```

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::handler::Completion;
use crate::migrate::Migration;
use crate::record::{Event, Recorder, RunRecord};
use crate::registry::Registry;
use crate::stub::Stubs;
use crate::tick::{
    AgentTick, Request, Status, Tick, TickOptions, TimeError, run_tick_with_options,
};
use crate::tree::Tree;
use crate::trim::{TrimReport, TrimTask, Trimmer};
use crate::value::{Map, Value, kw};

/// The programs that do a session's deferred actions (`:defer`): the
/// session hands them each tick's launches and cancels, and merges the
/// completions they report before the next tick (recorded as that tick's
/// input, so a recorded run replays without them).
pub trait Handlers: Send {
    /// Starts the work a tick launched.
    fn launch(&mut self, request: &Request);
    /// Abandons a request (its node was halted): a late answer to it is
    /// dropped by the tick anyway.
    fn cancel(&mut self, request: &Request);
    /// The completions that arrived since the last call, in order.
    fn completions(&mut self) -> Vec<Completion>;
    /// Whether some launched work is still under way, so that a chat turn
    /// whose tree waits for it is worth another tick.
    fn busy(&self) -> bool;
    /// Blocks until some launched work has an answer (or a while has
    /// passed): called between the ticks of a chat turn while
    /// [`Handlers::busy`].
    fn wait(&mut self) {}
    /// Whether a completion is ready now, without waiting (kept for the
    /// next [`Handlers::completions`]): a chat between lines asks, to tick
    /// the tree when an answer arrives ([`Session::wake`]).
    fn ready(&mut self) -> bool {
        false
    }
}

/// The handler programs (`aido chat --handler`, `aido run --handler`) are a
/// [`Handlers`]: each launch starts its action's program, a cancel stops it,
/// and what the programs answer comes in before the next tick. A launch of
/// an action no program handles stays in flight (the host says so).
impl Handlers for crate::handler::Handlers {
    fn launch(&mut self, request: &Request) {
        // No program for the action: it stays in flight, as without handlers.
        let _ = crate::handler::Handlers::launch(self, request);
    }

    fn cancel(&mut self, request: &Request) {
        crate::handler::Handlers::cancel(self, request);
    }

    fn completions(&mut self) -> Vec<Completion> {
        self.poll()
    }

    fn busy(&self) -> bool {
        crate::handler::Handlers::busy(self)
    }

    fn wait(&mut self) {
        // Long enough not to spin, short enough that a chat stays lively.
        let _ = self.wait_until_ready(std::time::Duration::from_millis(250));
    }

    fn ready(&mut self) -> bool {
        self.wait_until_ready(std::time::Duration::ZERO)
    }
}

/// What [`Session::between_ticks`] did before a tick.
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct Gap {
    /// The trim tasks looked at, with what became of each.
    pub trims: Vec<TrimReport>,
    /// Whether there were trim tasks to look at.
    pub trimmed: bool,
    /// Whether a trim changed the tree.
    pub tree_changed: bool,
    /// The completions merged under `:aido/results`.
    pub completions: Vec<Completion>,
}

/// One chat turn: a line of input, then ticks until the tree is not Running.
#[derive(Debug)]
#[non_exhaustive]
pub struct Turn {
    /// The values appended to the reply key during the turn, in order.
    pub replies: Vec<Value>,
    /// The last tick's status.
    pub status: Status,
    /// How many ticks the turn took.
    pub ticks: u64,
    /// The last tick, with its error, if it ended in one.
    pub last: AgentTick,
    /// The deferred actions the turn's ticks launched.
    pub launches: Vec<Request>,
    /// The deferred actions the turn's ticks cancelled.
    pub cancels: Vec<Request>,
    /// The completions the handlers reported during the turn.
    pub completions: Vec<Completion>,
    /// Whether the host's interrupt ended the turn while it waited for the
    /// handlers ([`Session::set_interrupt`]): the tree is still Running.
    pub interrupted: bool,
}

/// What starts a turn that no line started ([`Session::wake`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Wake {
    /// Nobody said anything for a while (`aido chat --idle`): the turn's
    /// first tick sees `:aido/idle true`, and the key is gone after the
    /// turn.
    Idle,
    /// A deferred action's answer arrived between lines: it is merged and
    /// the tree ticked, so what it makes the tree say is said at once.
    Answer,
}

/// Where a chat turn puts its line and finds its replies.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct TurnOptions {
    /// The db key the line goes under (default `:input`).
    pub input_key: Value,
    /// The db key whose vector the tree appends replies to (default `:replies`).
    pub reply_key: Value,
    /// The most ticks a turn takes (default 100).
    pub max_ticks: u64,
    /// Whether the turn also ends when no handler of this session is at
    /// work and the tree waits only for an event or a time
    /// ([`crate::tick::next_wake`] is `OnEvent`, `At` or `Never`), since
    /// more ticks would change nothing (default no). A store's worker sets
    /// it: its deferred actions run in a dispatcher, not in the session.
    pub end_at_rest: bool,
}

impl Default for TurnOptions {
    fn default() -> TurnOptions {
        TurnOptions {
            input_key: Value::keyword("input"),
            reply_key: Value::keyword("replies"),
            max_ticks: 100,
            end_at_rest: false,
        }
    }
}

/// The loop: see [the module](crate::session).
pub struct Session {
    tree: Arc<Tree>,
    registry: Registry,
    stubs: Stubs,
    db: Value,
    trimmer: Trimmer,
    recorder: Option<Recorder>,
    options: TickOptions,
    /// Ticks run so far.
    ticks: u64,
    handlers: Option<Box<dyn Handlers>>,
    /// Whether recorded trim reports carry each applied task's change.
    trim_changes: bool,
    /// Set by the host when a turn waiting for the handlers should end.
    interrupt: Option<Arc<AtomicBool>>,
}

impl fmt::Debug for Session {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Session")
            .field("ticks", &self.ticks)
            .field("db", &self.db)
            .field("recording", &self.recorder.is_some())
            .field("handlers", &self.handlers.is_some())
            .finish_non_exhaustive()
    }
}

impl Session {
    /// A session of `tree` from `db`, with the built-in registry, no stubs,
    /// no trims, no record and no handlers.
    pub fn new(tree: Arc<Tree>, db: Value) -> Session {
        Session {
            tree,
            registry: Registry::new(),
            stubs: Stubs::new(),
            db,
            trimmer: Trimmer::new(),
            recorder: None,
            options: TickOptions::default(),
            ticks: 0,
            handlers: None,
            trim_changes: true,
            interrupt: None,
        }
    }

    /// Sets the registry that trimmed trees are compiled against.
    pub fn set_registry(&mut self, registry: Registry) {
        self.registry = registry;
    }

    /// Sets the stubs the tree was compiled with: they are told the tick
    /// before each, and put back in place after a trim.
    pub fn set_stubs(&mut self, stubs: Stubs) {
        self.stubs = stubs;
    }

    /// Sets each tick's options (a recorded session traces whatever they say).
    pub fn set_tick_options(&mut self, options: TickOptions) {
        self.options = options;
    }

    /// Whether the run record's trim reports carry each applied task's
    /// change (`:change`; default yes).
    pub fn set_trim_changes(&mut self, changes: bool) {
        self.trim_changes = changes;
    }

    /// Sets the flag that ends a turn's wait for the handlers: while it is
    /// set, a turn whose tree is Running and whose handlers are busy ends
    /// (still Running) instead of waiting, so that a host with new input
    /// (`aido chat` at a terminal: a line typed meanwhile) gets to it. The
    /// host clears it.
    pub fn set_interrupt(&mut self, flag: Arc<AtomicBool>) {
        self.interrupt = Some(flag);
    }

    /// Sets the programs that do the deferred actions.
    pub fn set_handlers(&mut self, handlers: Box<dyn Handlers>) {
        self.handlers = Some(handlers);
    }

    /// Starts a run record from here (the tree and db as they are now);
    /// starting again drops the record so far.
    pub fn record(&mut self) {
        self.record_numbered_from(1);
    }

    /// Like [`Session::record`], numbering the recorded ticks from `first`
    /// ([`Recorder::numbered_from`]): a run resumed from a save.
    pub fn record_numbered_from(&mut self, first: u64) {
        // Every change the session makes to the db between ticks is told to
        // the recorder (inputs, the clock, completions) or reported as one
        // it cannot name (trims, reloads, the seed, `db_mut`), so that it
        // compares only what each tick wrote.
        let recorder = Recorder::new(&self.tree, &self.db).numbered_from(first);
        self.recorder = Some(recorder.comparing_written_keys());
    }

    /// The run record so far, if one was started.
    pub fn run_record(&self) -> Option<&RunRecord> {
        self.recorder.as_ref().map(Recorder::run)
    }

    /// Ends the session, handing back its run record (if one was started)
    /// and its db.
    pub fn finish(self) -> (Option<RunRecord>, Value) {
        (self.recorder.map(Recorder::finish), self.db)
    }

    /// Notes an event of the next tick in the run record, if there is one.
    pub fn note(&mut self, event: Event) {
        if let Some(recorder) = &mut self.recorder {
            recorder.event(event);
        }
    }

    /// Queues a trim task, worked through before the next ticks (see [`Trimmer`]).
    pub fn trim(&mut self, task: Box<dyn TrimTask>) {
        self.trimmer.push(task);
    }

    /// The db.
    pub fn db(&self) -> &Value {
        &self.db
    }

    /// The db, to change between ticks.
    pub fn db_mut(&mut self) -> &mut Value {
        self.db_changed();
        &mut self.db
    }

    /// Tells the run record, if there is one, that the db changed between
    /// ticks in a way it was not told of.
    fn db_changed(&mut self) {
        if let Some(recorder) = &mut self.recorder {
            recorder.db_changed();
        }
    }

    /// The tree.
    pub fn tree(&self) -> &Arc<Tree> {
        &self.tree
    }

    /// The registry trimmed trees are compiled against, with what applied
    /// trim tasks added to it.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The ticks run so far.
    pub fn ticks(&self) -> u64 {
        self.ticks
    }

    /// Puts the integer `seed` under `:aido/seed`: random nodes draw a
    /// fresh, reproducible stream, so a position saved from an earlier
    /// seed (`:aido/rng-pos`) is dropped.
    pub fn seed(&mut self, seed: i64) {
        seed_db(&mut self.db, seed);
        self.db_changed();
    }

    /// Moves the db's clock `:aido/now` on by `dt` seconds (see
    /// [`crate::tick::advance_time`]) and records the new time as the
    /// next tick's input. On an error the db is as it was.
    pub fn advance_time(&mut self, dt: f64) -> Result<f64, TimeError> {
        let now = crate::tick::advance_time(&mut self.db, dt)?;
        if let Some(recorder) = &mut self.recorder {
            recorder.input(&one(Value::Keyword(kw::NOW), Value::Float(now)));
        }
        Ok(now)
    }

    /// Merges `input` into the db, key by key (a key given nil is removed:
    /// [`merge_input`]), recorded as the next tick's input.
    pub fn input(&mut self, input: &Map) {
        merge_input(&mut self.db, input);
        if let Some(recorder) = &mut self.recorder
            && !input.is_empty()
        {
            recorder.input(input);
        }
    }

    /// Switches to `tree`, carrying the db over (see
    /// [`crate::migrate::migrate()`]); `registry`, if given, is what the
    /// trims compile against from now on. The caller notes the report in
    /// the run record as it wants it shown ([`Session::note`]).
    pub fn reload(&mut self, tree: Arc<Tree>, registry: Option<Registry>) -> Migration {
        let db = std::mem::take(&mut self.db);
        let (db, report) = crate::migrate::migrate(db, &self.tree, &tree);
        self.db = db;
        self.tree = tree;
        self.db_changed();
        if let Some(registry) = registry {
            self.registry = registry;
        }
        report
    }

    /// Merges the completions the handlers report, then works through the
    /// trim tasks (recorded as trim events).
    pub fn between_ticks(&mut self) -> Gap {
        let mut gap = Gap::default();
        if let Some(handlers) = &mut self.handlers {
            gap.completions = handlers.completions();
        }
        if !gap.completions.is_empty() {
            let results: Map = gap
                .completions
                .iter()
                .map(|c| (c.node.clone(), c.to_value()))
                .collect();
            self.complete(results);
        }
        if self.trimmer.is_empty() {
            return gap;
        }
        gap.trimmed = true;
        let db = std::mem::take(&mut self.db);
        let trimmed = self
            .trimmer
            .between_ticks(self.ticks, db, &self.tree, &self.registry);
        self.db = trimmed.db;
        self.db_changed();
        if let Some(registry) = trimmed.registry {
            self.registry = registry;
        }
        if let Some(tree) = trimmed.tree {
            self.tree = Arc::new(self.stubs.apply_matching(tree));
            gap.tree_changed = true;
        }
        if let Some(recorder) = &mut self.recorder {
            for report in &trimmed.reports {
                recorder.event(Event::Trim(report.to_value(self.trim_changes)));
            }
        }
        gap.trims = trimmed.reports;
        gap
    }

    /// Merges completions by node id under `:aido/results` (recorded as
    /// input): how a handler's answer, or a recorded one, reaches the tree.
    pub fn complete(&mut self, results: Map) {
        if results.is_empty() {
            return;
        }
        let input = results_input(&self.db, results);
        self.input(&input);
    }

    /// Ticks once and records the tick; its launches and cancels go to the
    /// handlers. The db stays in the session ([`Session::db`]).
    pub fn tick(&mut self) -> AgentTick {
        self.tick_noting(|_, _| Vec::new())
    }

    /// Like [`Session::tick`]; `notes` sees the tick before it is recorded
    /// and gives the events to record with it.
    pub fn tick_noting(&mut self, notes: impl FnOnce(&Tree, &Tick) -> Vec<Event>) -> AgentTick {
        self.ticks += 1;
        self.stubs.set_tick(self.ticks);
        let db = std::mem::take(&mut self.db);
        // A recorded tick is traced into the recorder's buffer (unless the
        // caller asked for the trace in the tick itself), noting the keys
        // it writes.
        let tick = match &mut self.recorder {
            Some(recorder) => recorder.run_tick(db, &self.tree, &self.options),
            None => run_tick_with_options(db, &self.tree, &self.options),
        };
        let events = notes(&self.tree, &tick);
        if let Some(recorder) = &mut self.recorder {
            for event in events {
                recorder.event(event);
            }
            recorder.record_run(&self.tree, &tick);
        }
        let (db, tick) = tick.split();
        self.db = db;
        if let Some(handlers) = &mut self.handlers {
            for request in tick.cancels() {
                handlers.cancel(request);
            }
            for request in tick.launches() {
                handlers.launch(request);
            }
        }
        tick
    }

    /// One step as `aido test` takes it: `input` merged, the gap between
    /// ticks, one tick.
    pub fn step(&mut self, input: Option<&Map>) -> AgentTick {
        if let Some(input) = input {
            self.input(input);
        }
        self.between_ticks();
        self.tick()
    }

    /// One chat turn: `line` goes under the input key, then the tree is
    /// ticked until it is not Running, at most `options.max_ticks` times
    /// (between two of them, while the handlers are at work, the session
    /// waits for them: [`Handlers::wait`]); each value the turn appends to
    /// the reply key is a reply.
    pub fn turn(&mut self, line: &str, options: &TurnOptions) -> Turn {
        let input = one(options.input_key.clone(), Value::string(line));
        self.turn_with(Some(&input), options)
    }

    /// A turn without a line, ticked as [`Session::turn`] ticks: for
    /// [`Wake::Idle`], with `:aido/idle true` merged before it (and taken
    /// out after it, recorded as the next tick's input); for
    /// [`Wake::Answer`], with nothing but the completions that arrived.
    pub fn wake(&mut self, why: Wake, options: &TurnOptions) -> Turn {
        let idle = Value::keyword("aido/idle");
        match why {
            Wake::Idle => {
                let turn = self.turn_with(Some(&one(idle.clone(), Value::Bool(true))), options);
                self.input(&one(idle, Value::Nil));
                turn
            }
            Wake::Answer => self.turn_with(Some(&Map::default()), options),
        }
    }

    /// Whether the handlers have a completion ready now (see
    /// [`Handlers::ready`]).
    pub fn answers_ready(&mut self) -> bool {
        self.handlers.as_mut().is_some_and(|h| h.ready())
    }

    /// Whether the handlers have work under way ([`Handlers::busy`]).
    pub fn handlers_busy(&self) -> bool {
        self.handlers.as_ref().is_some_and(|h| h.busy())
    }

    /// A turn of any event: `input`, if given, merged as [`Session::input`]
    /// does (a store's worker gives an inbox entry's input, or merges a
    /// completion with [`Session::complete`] first and gives none), then
    /// ticks as [`Session::turn`] takes them.
    pub fn turn_with(&mut self, input: Option<&Map>, options: &TurnOptions) -> Turn {
        let before = replies_of(&self.db, &options.reply_key);
        if let Some(input) = input {
            self.input(input);
        }
        let mut launches = Vec::new();
        let mut cancels = Vec::new();
        let mut completions = Vec::new();
        let mut ticks = 0;
        let mut interrupted = false;
        let last = loop {
            let gap = self.between_ticks();
            completions.extend(gap.completions);
            let tick = self.tick();
            launches.extend(tick.launches().iter().cloned());
            cancels.extend(tick.cancels().iter().cloned());
            ticks += 1;
            if tick.status != Status::Running || ticks >= options.max_ticks.max(1) {
                break tick;
            }
            let flag = self.interrupt.clone();
            let asked_to_stop = || flag.as_ref().is_some_and(|f| f.load(Ordering::SeqCst));
            let busy = self.handlers.as_ref().is_some_and(|h| h.busy());
            if options.end_at_rest
                && !busy
                && matches!(
                    crate::tick::next_wake(&self.db, &self.tree),
                    crate::tick::Wake::OnEvent
                        | crate::tick::Wake::At(_)
                        | crate::tick::Wake::Never
                )
            {
                break tick;
            }
            if let Some(handlers) = &mut self.handlers
                && busy
            {
                if !asked_to_stop() {
                    handlers.wait();
                }
                if asked_to_stop() && handlers.busy() {
                    interrupted = true;
                    break tick;
                }
            }
        };
        let after = replies_of(&self.db, &options.reply_key);
        let replies = match (&before, &after) {
            (Some(old), Some(new)) if new.starts_with(old) => new[old.len()..].to_vec(),
            (_, Some(new)) if before.as_ref() != after.as_ref() => new.clone(),
            _ => Vec::new(),
        };
        Turn {
            replies,
            status: last.status,
            ticks,
            last,
            launches,
            cancels,
            completions,
            interrupted,
        }
    }
}

/// A map of one entry.
fn one(key: Value, value: Value) -> Map {
    let mut map = Map::default();
    map.insert(key, value);
    map
}

/// The reply key's values: a vector's elements, another value as one.
fn replies_of(db: &Value, key: &Value) -> Option<Vec<Value>> {
    match db.get(key)? {
        Value::Nil => None,
        Value::Vector(items) => Some(items.to_vec()),
        other => Some(vec![other.clone()]),
    }
}

/// Merges one tick's input into the db, key by key, as scenarios and `aido
/// run --inputs` do before the tick: a key given `nil` is removed (a host
/// says "no longer there"), any other value is set.
///
/// ```
/// let mut db = aido::read_value("{:input \"hi\" :n 1}").unwrap();
/// let input = aido::read_value("{:input nil :n 2}").unwrap().into_map().unwrap();
/// aido::session::merge_input(&mut db, &input);
/// assert_eq!(db.to_string(), "{:n 2}");
/// ```
pub fn merge_input(db: &mut Value, input: &Map) {
    if let Some(map) = db.as_map_mut() {
        for (key, value) in input {
            if value.is_nil() {
                map.shift_remove(key);
            } else {
                map.insert(key.clone(), value.clone());
            }
        }
    }
}

/// The input that merges completions (`results`, by node id) under the
/// db's `:aido/results`, keeping the ones already waiting there: how a
/// completion reaches the tree, in a session ([`Session::complete`]) and in
/// a store's shard.
pub fn results_input(db: &Value, results: Map) -> Map {
    let key = Value::Keyword(kw::RESULTS);
    let mut merged = match db.get(&key) {
        Some(Value::Map(old)) => old.as_ref().clone(),
        _ => Map::default(),
    };
    merged.extend(results);
    one(key, Value::Map(Box::new(merged)))
}

/// Seeds the random generator of `db`: see [`Session::seed`].
pub fn seed_db(db: &mut Value, seed: i64) {
    if let Some(map) = db.as_map_mut() {
        map.insert(Value::keyword("aido/seed"), Value::Int(seed));
        map.shift_remove(&Value::keyword("aido/rng-pos"));
    }
}
