//! Ticking: `run_tick(db, &tree)` returns the new db and a [`Status`].
//!
//! The db is moved in and moved out; all per-agent state lives in it, under
//! `:aido/` keys, and only while it differs from the default: node memory
//! (`:aido/memory`), the nodes that ended the last tick Running
//! (`:aido/running`), request ids handed out (`:aido/requests`), the random
//! generator's seed and position (`:aido/seed`, `:aido/rng-pos`), the tree's
//! fingerprint (`:aido/tree`) and the last tick's error (`:aido/error`).
//! Completions come in under `:aido/results` and are gone when the tick
//! ends; working memory (`:aido/locals`) is visible during one tick only.
//! The `Engine` that walks the tree is defined here, the node behaviours in
//! `crate::nodes`; `eval.rs` resolves options, `ctx.rs` is what user code
//! sees, `halt.rs` keeps the running set. A tick does no I/O.

mod ctx;
mod eval;
mod halt;
mod time;
mod wake;
mod writes;

use std::fmt;
use std::sync::Arc;

use crate::migrate::Migration;
use crate::rng::Rng;
use crate::source::{LineCol, Span};
use crate::tree::Tree;
use crate::value::{Keyword, Map, Value, kw};

pub use ctx::{FnCtx, NodeCtx};
pub(crate) use eval::{catch_quietly, eval, panic_message};
pub use halt::{DropReason, DroppedResult, Request, TickWarning, TraceEvent};
pub(crate) use halt::{reserved_reach, starts_at_memory};
pub use time::{TimeError, advance_time};
pub use wake::{Wake, next_wake};
pub(crate) use writes::{Writes, leaf_path};

/// The default number of node visits one tick may make.
pub const DEFAULT_STEP_BUDGET: u64 = 1_000_000;

/// The default work budget of one tick: see [`TickOptions::work_budget`].
pub const DEFAULT_WORK_BUDGET: u64 = 1_000_000;

/// The outcome of ticking a node or a tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Status {
    /// The node did what it set out to do.
    Success,
    /// The node could not do it.
    Failure,
    /// The node is still at work; tick again.
    Running,
    /// Something is wrong with the tree or the db: goes straight to the root.
    Error,
    /// The node was not ticked: a precondition (`:aido/skip-if`) said so.
    /// Sequences and selectors go on to the next child. A sequence with a
    /// skipped child and none that failed or runs is skipped itself; a
    /// selector or parallel only when all its children were.
    Skipped,
}

impl Status {
    /// `"success"`, `"failure"`, `"running"`, `"error"` or `"skipped"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Success => "success",
            Status::Failure => "failure",
            Status::Running => "running",
            Status::Error => "error",
            Status::Skipped => "skipped",
        }
    }

    /// The status as a keyword value, e.g. `:success`.
    pub fn to_value(self) -> Value {
        Value::keyword(self.as_str())
    }

    /// The status a keyword value names (`:success`, ...): the inverse of
    /// [`Status::to_value`].
    pub fn from_value(value: &Value) -> Option<Status> {
        match value.as_keyword()?.as_str() {
            "success" => Some(Status::Success),
            "failure" => Some(Status::Failure),
            "running" => Some(Status::Running),
            "error" => Some(Status::Error),
            "skipped" => Some(Status::Skipped),
            _ => None,
        }
    }

    /// Success for `true`, Failure for `false`.
    pub fn from_bool(ok: bool) -> Status {
        if ok { Status::Success } else { Status::Failure }
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which limit, if any, ended a tick in Error: hosts tell a runaway tree
/// from a mistake in one without reading messages. (One kind, a node type
/// breaking its one-visit declaration, is a mistake in the host's code.)
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TickErrorKind {
    /// Not a limit: a value of the wrong type, a failed or panicking user
    /// node, an integer overflow, a broken db.
    Other,
    /// The step budget ([`TickOptions::step_budget`] node visits) was spent.
    StepBudget,
    /// The work budget ([`TickOptions::work_budget`]: elements copied, built
    /// or compared) was spent.
    WorkBudget,
    /// A value written to the db would nest deeper than [`crate::read::MAX_DEPTH`].
    TooDeep,
    /// The seeded random stream reached the end of `:aido/rng-pos`.
    RandomExhausted,
    /// Not a limit: a node of a type declared to finish in one visit
    /// ([`NodeType::one_visit`](crate::extend::NodeType::one_visit))
    /// returned Running, breaking its declaration.
    OneVisitRunning,
}

impl TickErrorKind {
    /// A stable code: `T0000` (other), `T0001` (step budget), `T0002`
    /// (work budget), `T0003` (too deep), `T0004` (random stream exhausted),
    /// `T0005` (a one-visit node returned Running).
    pub fn code(self) -> &'static str {
        match self {
            TickErrorKind::Other => "T0000",
            TickErrorKind::StepBudget => "T0001",
            TickErrorKind::WorkBudget => "T0002",
            TickErrorKind::TooDeep => "T0003",
            TickErrorKind::RandomExhausted => "T0004",
            TickErrorKind::OneVisitRunning => "T0005",
        }
    }
}

/// What went wrong in a tick that ended in [`Status::Error`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct TickError {
    /// Which limit ended the tick, if one did.
    pub kind: TickErrorKind,
    /// The stable id of the node where it happened.
    pub node: Value,
    /// That node's type.
    pub node_type: Keyword,
    /// That node's path: child indices from the root.
    pub path: Vec<usize>,
    /// That node's span in the tree's source, if it was read from text.
    pub span: Option<Span>,
    /// The span as a line and column, if known.
    pub location: Option<LineCol>,
    /// The file the node came from, when the tree includes others (the
    /// span and location are then in that file).
    pub file: Option<std::sync::Arc<str>>,
    /// What went wrong.
    pub message: String,
}

impl TickError {
    /// The error as a map, as stored under `:aido/error`.
    pub fn to_value(&self) -> Value {
        let mut m = Map::default();
        m.insert(Value::keyword("node"), self.node.clone());
        m.insert(Value::keyword("type"), Value::Keyword(self.node_type));
        m.insert(
            Value::keyword("path"),
            Value::Vector(self.path.iter().map(|&i| Value::Int(i as i64)).collect()),
        );
        if let Some(file) = &self.file {
            m.insert(Value::keyword("file"), Value::string(file));
        }
        if let Some(at) = self.location {
            m.insert(Value::keyword("line"), Value::Int(at.line as i64));
            m.insert(Value::keyword("column"), Value::Int(at.column as i64));
        }
        m.insert(Value::keyword("message"), Value::string(&self.message));
        if self.kind != TickErrorKind::Other {
            m.insert(Value::keyword("code"), Value::string(self.kind.code()));
        }
        Value::Map(Box::new(m))
    }
}

impl fmt::Display for TickError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} (node {} `{}`",
            self.message, self.node, self.node_type
        )?;
        match (&self.file, self.location) {
            (Some(file), Some(at)) => write!(f, " at {file}:{at}")?,
            (None, Some(at)) => write!(f, " at {at}")?,
            _ => {}
        }
        f.write_str(")")
    }
}

impl std::error::Error for TickError {}

/// The result of one tick.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Tick {
    /// The db after the tick (as it stood at the error, for [`Status::Error`]).
    pub db: Value,
    /// The root's status.
    pub status: Status,
    /// Why the tick ended in Error, if it did (boxed: ticks that succeed
    /// should not pay for moving an error around).
    pub error: Option<Box<TickError>>,
    /// How many node visits the tick made.
    pub steps: u64,
    /// Launch and cancel requests and the trace; most ticks have none.
    extras: Option<Arc<Extras>>,
}

/// The rarer things a tick produces. Held in an `Arc`, though never
/// shared while a tick makes it: dropping a tick's results that have none
/// (nearly every tick's, dropped by the caller each time) is then a test
/// in place, where a `Box`'s drop is a call that saves registers first.
#[derive(Debug, Clone, Default)]
pub(crate) struct Extras {
    launches: Vec<Request>,
    cancels: Vec<Request>,
    dropped: Vec<DroppedResult>,
    warnings: Vec<TickWarning>,
    trace: Vec<TraceEvent>,
    migration: Option<Box<Migration>>,
}

/// The accessors of what a tick produced besides its status, error and
/// steps, shared by [`Tick`] and [`AgentTick`] (both keep it in `extras`).
macro_rules! extras_accessors {
    () => {
        /// Deferred actions to start: the outside system does the work and
        /// reports back under `:aido/results` (see [`Request`]).
        pub fn launches(&self) -> &[Request] {
            self.extras.as_ref().map_or(&[], |e| &e.launches)
        }

        /// Deferred actions to abandon: their node was halted before completion.
        pub fn cancels(&self) -> &[Request] {
            self.extras.as_ref().map_or(&[], |e| &e.cancels)
        }

        /// Completions under `:aido/results` that the tick dropped without
        /// applying them: written under a node id the tree does not have, for a
        /// request that is not in flight, without naming their request, or a
        /// `:aido/results` that is not a map (see [`DroppedResult`]).
        pub fn dropped(&self) -> &[DroppedResult] {
            self.extras.as_ref().map_or(&[], |e| &e.dropped)
        }

        /// What the tick noticed that may be a mistake in the tree (see [`TickWarning`]).
        pub fn warnings(&self) -> &[TickWarning] {
            self.extras.as_ref().map_or(&[], |e| &e.warnings)
        }

        /// What became of the db's state if it was last ticked with another
        /// tree (its `:aido/tree` fingerprint differs): it was carried over to
        /// this tree by node id first (see [`crate::migrate::migrate`]).
        pub fn migration(&self) -> Option<&Migration> {
            self.extras.as_ref().and_then(|e| e.migration.as_deref())
        }

        /// With [`TickOptions::trace`]: what each node returned, and each halt,
        /// in the order they happened.
        pub fn trace(&self) -> &[TraceEvent] {
            self.extras.as_ref().map_or(&[], |e| &e.trace)
        }
    };
}

impl Tick {
    extras_accessors!();

    /// The tick taken apart: its db, and the rest as an [`AgentTick`].
    pub fn split(self) -> (Value, AgentTick) {
        let rest = AgentTick {
            status: self.status,
            error: self.error,
            steps: self.steps,
            extras: self.extras,
        };
        (self.db, rest)
    }
}

/// What one agent's tick produced besides its db: a [`Tick`] without the
/// db, as [`crate::batch::tick_all`] hands it back (the dbs stay in place).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct AgentTick {
    /// The root's status.
    pub status: Status,
    /// Why the tick ended in Error, if it did.
    pub error: Option<Box<TickError>>,
    /// How many node visits the tick made.
    pub steps: u64,
    extras: Option<Arc<Extras>>,
}

impl Default for AgentTick {
    /// A Success with nothing else: what a slot holds before its agent is ticked.
    fn default() -> AgentTick {
        AgentTick {
            status: Status::Success,
            error: None,
            steps: 0,
            extras: None,
        }
    }
}

impl AgentTick {
    extras_accessors!();
}

/// Settings for one tick.
#[derive(Debug, Clone)]
pub struct TickOptions {
    /// Node visits allowed before the tick ends in Error "step budget exceeded".
    pub step_budget: u64,
    /// Work allowed besides visits, in elements copied, built or compared
    /// (a string counts one per 64 bytes): values read from the db and
    /// written back, function arguments and results, comparisons of
    /// collections. Beyond it the tick ends in Error
    /// ([`TickErrorKind::WorkBudget`]), so one tick of any tree ends in
    /// bounded time and builds values of bounded size. Budgets above
    /// `u32::MAX` count as `u32::MAX`.
    pub work_budget: u64,
    /// Working memory, visible as `:aido/locals` during this tick only.
    pub locals: Option<Value>,
    /// Record every node's status and every halt in [`Tick::trace`].
    pub trace: bool,
}

impl Default for TickOptions {
    fn default() -> TickOptions {
        DEFAULT_OPTIONS.clone()
    }
}

/// The default options, as a constant that the plain ticks (and a
/// recorder's default tick) read in place: nothing is built for them on
/// each tick, and the checks for locals and tracing fold away.
pub(crate) static DEFAULT_OPTIONS: TickOptions = TickOptions {
    step_budget: DEFAULT_STEP_BUDGET,
    work_budget: DEFAULT_WORK_BUDGET,
    locals: None,
    trace: false,
};

/// Ticks `tree` once against `db` and returns the new db and the status.
///
/// ```
/// let tree = aido::compile_str("t.edn", "[:inc! {:key :n}]", &aido::Registry::new()).unwrap();
/// let tick = aido::run_tick(aido::Value::map(), &tree);
/// assert_eq!(tick.status, aido::Status::Success);
/// assert_eq!(tick.db.to_string(), "{:n 1}");
/// ```
pub fn run_tick(db: Value, tree: &Tree) -> Tick {
    // Inlined with constant options, so that the checks for locals and
    // tracing fold away on the most common path.
    tick_inline(db, tree, &DEFAULT_OPTIONS)
}

/// Like [`run_tick`], with `locals` as working memory under `:aido/locals`.
pub fn run_tick_with(db: Value, tree: &Tree, locals: Value) -> Tick {
    let options = TickOptions {
        locals: Some(locals),
        ..TickOptions::default()
    };
    run_tick_with_options(db, tree, &options)
}

/// Like [`run_tick`], with explicit [`TickOptions`].
pub fn run_tick_with_options(db: Value, tree: &Tree, options: &TickOptions) -> Tick {
    tick_inline(db, tree, options)
}

/// Ticks `tree` once against `db` where it is: the hosts' fast path, for a
/// host that keeps its agents' dbs in place and wants the status. The same
/// tick as [`run_tick`], without moving the db in and out, returning what
/// it produced besides the db. Nothing is built that the caller did not
/// ask for: no trace, no list of visits or writes, and the rarer results
/// (launch and cancel requests, dropped completions, warnings) only when
/// the tick has some, so that a steady tick allocates nothing. A db that is
/// not a map is left as it was, and the tick is an Error.
///
/// ```
/// use aido::{Registry, Status, Value, compile_str, tick::tick_in_place};
///
/// let tree = compile_str("t.edn", "[:inc! {:key :n}]", &Registry::new()).unwrap();
/// // A host's agents, each a db kept where it is.
/// let mut agents = vec![Value::map(), Value::map()];
/// for _ in 0..3 {
///     for db in &mut agents {
///         let tick = tick_in_place(db, &tree);
///         assert_eq!(tick.status, Status::Success);
///         assert!(tick.launches().is_empty() && tick.trace().is_empty());
///     }
/// }
/// assert_eq!(agents[1].to_string(), "{:n 3}");
/// ```
pub fn tick_in_place(db: &mut Value, tree: &Tree) -> AgentTick {
    tick_in_place_inline(db, tree, &DEFAULT_OPTIONS).into_agent_tick()
}

/// Like [`run_tick_with_options`], traced whatever `options` say, with the
/// trace written into `trace` instead of [`Tick::trace`]: `trace` is cleared
/// first and keeps its room, so a caller that keeps one buffer across ticks
/// (a [`crate::record::Recorder`], a session) traces without allocating once
/// the buffer has grown to a tick's length.
///
/// ```
/// use aido::tick::{TickOptions, run_tick_traced};
///
/// let tree = aido::compile_str("t.edn", "[:inc! {:key :n}]", &aido::Registry::new()).unwrap();
/// let mut trace = Vec::new();
/// let mut db = aido::Value::map();
/// for _ in 0..3 {
///     db = run_tick_traced(db, &tree, &TickOptions::default(), &mut trace).db;
///     assert_eq!(trace.len(), 1);
/// }
/// ```
pub fn run_tick_traced(
    db: Value,
    tree: &Tree,
    options: &TickOptions,
    trace: &mut Vec<TraceEvent>,
) -> Tick {
    // Options whose budgets are the defaults and without locals (a trace
    // asked for or not: the tick is traced either way) tick as the
    // constant `run_tick` reads, so that the set-up and the end fold
    // their reads of them away; any others at run time, in a call.
    if options.step_budget == DEFAULT_STEP_BUDGET
        && options.work_budget == DEFAULT_WORK_BUDGET
        && options.locals.is_none()
    {
        run_tick_noting(db, tree, &DEFAULT_OPTIONS, Some(trace), None)
    } else {
        run_tick_traced_with(db, tree, options, trace)
    }
}

/// [`run_tick_traced`] with options other than the defaults, read at run
/// time.
#[inline(never)]
fn run_tick_traced_with(
    db: Value,
    tree: &Tree,
    options: &TickOptions,
    trace: &mut Vec<TraceEvent>,
) -> Tick {
    run_tick_noting(db, tree, options, Some(trace), None)
}

/// Like [`run_tick_with_options`], with the trace written into `trace` when
/// given (as [`run_tick_traced`] does), and the top-level keys the tick
/// writes noted into `writes` when given (cleared first), but for those of
/// the plain path's writing leaves, which the trace names (see
/// `tick::writes`): what a recorder asks for. Inlined into its callers,
/// [`run_tick_traced`] (which notes no writes) and the recorder's tick,
/// so that neither pays a call and the traced tick's tests of what it does
/// not ask for fold away.
#[inline(always)]
pub(crate) fn run_tick_noting(
    mut db: Value,
    tree: &Tree,
    options: &TickOptions,
    trace: Option<&mut Vec<TraceEvent>>,
    writes: Option<&mut Writes>,
) -> Tick {
    let trace = match trace {
        Some(trace) => {
            trace.clear();
            Some(trace)
        }
        None if options.trace => {
            return tick_owning_trace(&mut db, tree, options, writes).into_tick(db);
        }
        None => None,
    };
    tick_in_place_with(&mut db, tree, options, trace, writes).into_tick(db)
}

/// Like [`run_tick_with_options`], with every node on the general path:
/// the plain path (see `nodes::plain`) is not taken. For the tests that
/// check that both paths give the same status, db, steps, error and
/// trace; hosts have no reason to call it.
#[doc(hidden)]
pub fn run_tick_general_path(mut db: Value, tree: &Tree, options: &TickOptions) -> Tick {
    let mut trace = Vec::new();
    let outcome = {
        let map = match db_map(&mut db, tree) {
            Ok(map) => map,
            Err(tick) => return *tick,
        };
        let mut engine = Engine::new(tree, map, options, options.trace.then_some(&mut trace));
        engine.plain = PlainPath::Off;
        let status = engine.tick_root::<false>(tree, options);
        engine.finish(status, options)
    };
    outcome.with_trace(trace).into_tick(db)
}

#[inline(always)]
fn tick_inline(mut db: Value, tree: &Tree, options: &TickOptions) -> Tick {
    let outcome = tick_in_place_inline(&mut db, tree, options);
    outcome.into_tick(db)
}

#[inline(always)]
fn tick_in_place_inline(db: &mut Value, tree: &Tree, options: &TickOptions) -> Outcome {
    if options.trace {
        return tick_owning_trace(db, tree, options, None);
    }
    tick_in_place_with(db, tree, options, None, None)
}

/// Ticks `tree` once against `db` where it is, tracing into `trace` when
/// given (the caller's buffer, written in place: nothing is moved in or
/// out) and noting the top-level keys the tick writes into `writes` when
/// given (cleared first). Every entry point that ticks a db in full goes
/// through here.
#[inline(always)]
fn tick_in_place_with(
    db: &mut Value,
    tree: &Tree,
    options: &TickOptions,
    trace: Option<&mut Vec<TraceEvent>>,
    mut writes: Option<&mut Writes>,
) -> Outcome {
    if db.is_nil() {
        *db = Value::map();
    }
    let Value::Map(map) = db else {
        return not_a_map_outcome(db, tree);
    };
    // Known where this is inlined into `run_tick_traced` (and into the
    // untraced ticks): a traced tick's plain root then runs in its frame.
    let traced = trace.is_some();
    let mut engine = Engine::new(tree, map, options, trace);
    if let Some(writes) = writes.as_deref_mut() {
        writes.clear();
        engine.note_writes(std::mem::take(writes));
    }
    let status = if traced {
        engine.tick_root::<true>(tree, options)
    } else {
        engine.tick_root::<false>(tree, options)
    };
    // `Engine::finish_noted`, with the engine taken apart where it stands.
    let (status, steps) = engine.end(status, options);
    let Engine {
        error,
        long,
        migration,
        ..
    } = engine;
    Outcome::of(status, steps, error, long, migration, writes)
}

/// A tick whose options ask for a trace and whose caller gave no buffer
/// for it: traced into a new one, handed out in [`Tick::trace`].
#[cold]
#[inline(never)]
fn tick_owning_trace(
    db: &mut Value,
    tree: &Tree,
    options: &TickOptions,
    writes: Option<&mut Writes>,
) -> Outcome {
    let mut trace = Vec::new();
    let outcome = tick_in_place_with(db, tree, options, Some(&mut trace), writes);
    outcome.with_trace(trace)
}

/// Halts every node of `tree` that the db says is running, as resetting or
/// destroying a tree does: halt hooks run, cancel requests for deferred
/// actions are emitted, and the run state of the halted subtrees is cleared
/// (persistent state stays; see [`crate::extend::NodeType::persistent_memory`]).
/// Completions under `:aido/results` are left as they are. The
/// returned tick's status is Success (Error if a halt hook failed); its trace
/// lists the halts.
///
/// ```
/// use aido::{Registry, Status, Value, compile_str, run_tick};
///
/// let tree = compile_str("t.edn", "[:wait {:id :nap :ticks 5}]", &Registry::new()).unwrap();
/// let running = run_tick(Value::map(), &tree);
/// assert_eq!(running.status, Status::Running);
/// let halted = aido::tick::halt_running(running.db, &tree);
/// assert_eq!(halted.trace().len(), 1);
/// // Its run state (the running set, the `:wait`'s count) is cleared.
/// assert_eq!(halted.db.get(&Value::keyword("aido/running")), None);
/// assert_eq!(halted.db.get(&Value::keyword("aido/memory")), None);
/// ```
pub fn halt_running(mut db: Value, tree: &Tree) -> Tick {
    let options = TickOptions::default();
    let mut trace = Vec::new();
    let outcome = {
        let map = match db_map(&mut db, tree) {
            Ok(map) => map,
            Err(tick) => return *tick,
        };
        let mut engine = Engine::new(tree, map, &options, Some(&mut trace));
        engine.prepare(&options);
        // No node is ticked: completions wait for the tick that can take them.
        engine.results_maybe = false;
        engine.sweep();
        engine.finish(Status::Success, &options)
    };
    outcome.with_trace(trace).into_tick(db)
}

/// The db's map (a nil db becomes an empty map); a db that is not a map is
/// an Error tick. (The map stays in the db: a `Value` cannot give up its
/// box without another to take its place, see `value/deep.rs`.)
#[inline(always)]
pub(crate) fn db_map<'d>(db: &'d mut Value, tree: &Tree) -> Result<&'d mut Map, Box<Tick>> {
    if db.is_nil() {
        *db = Value::map();
    }
    match db {
        Value::Map(m) => Ok(m),
        other => Err(not_a_map(std::mem::take(other), tree)),
    }
}

#[cold]
#[inline(never)]
fn not_a_map(other: Value, tree: &Tree) -> Box<Tick> {
    let error = not_a_map_error(&other, tree);
    Box::new(Tick {
        db: other,
        status: Status::Error,
        error: Some(error),
        steps: 0,
        extras: None,
    })
}

/// The outcome of a tick whose db is `other`, not a map: an Error that
/// leaves the db as it is.
#[cold]
#[inline(never)]
fn not_a_map_outcome(other: &Value, tree: &Tree) -> Outcome {
    Outcome {
        status: Status::Error,
        error: Some(not_a_map_error(other, tree)),
        steps: 0,
        extras: None,
    }
}

/// The error of a tick whose db is `other`, not a map.
#[cold]
#[inline(never)]
fn not_a_map_error(other: &Value, tree: &Tree) -> Box<TickError> {
    Box::new(TickError {
        kind: TickErrorKind::Other,
        node: tree.node_id(tree.root()).cloned().unwrap_or_default(),
        node_type: tree
            .node_type(tree.root())
            .unwrap_or_else(|| Keyword::new("aido/invalid")),
        path: Vec::new(),
        span: None,
        location: None,
        file: None,
        message: format!("the db must be a map, found {}", other.type_with_article()),
    })
}

/// The tick's extras, with the report of the db's carrying over.
#[cold]
#[inline(never)]
fn carried_over(extras: Option<Arc<Extras>>, migration: Box<Migration>) -> Arc<Extras> {
    let mut extras = extras.unwrap_or_default();
    Arc::make_mut(&mut extras).migration = Some(migration);
    extras
}

/// What a finished tick produced, besides its db.
pub(crate) struct Outcome {
    pub(crate) status: Status,
    pub(crate) error: Option<Box<TickError>>,
    pub(crate) steps: u64,
    pub(crate) extras: Option<Arc<Extras>>,
}

impl Outcome {
    /// What a tick that ended with `status` after `steps` visits produced,
    /// from the parts of its engine, `status` as [`Engine::end`] settled it
    /// (Error if the tick has an error); the keys it wrote handed back in
    /// `writes_out` (when given).
    #[inline(always)]
    pub(crate) fn of(
        status: Status,
        steps: u64,
        error: Option<Box<TickError>>,
        long: Option<Box<Long>>,
        migration: Option<Box<Migration>>,
        writes_out: Option<&mut Writes>,
    ) -> Outcome {
        // A match, not a closure: the hand-back is then inlined into the
        // tick's frame, and the noted writes are looked at only when the
        // caller asked for them.
        let extras = match long {
            None => None,
            Some(mut long) => {
                if let Some(out) = writes_out
                    && let Some(writes) = long.writes.take()
                {
                    *out = writes;
                }
                Long::hand_over(long)
            }
        };
        let extras = match migration {
            None => extras,
            Some(m) => Some(carried_over(extras, m)),
        };
        Outcome {
            status,
            error,
            steps,
            extras,
        }
    }

    /// The outcome with `trace` handed out in its extras ([`Tick::trace`]),
    /// for a tick traced into a buffer of its own.
    pub(crate) fn with_trace(mut self, trace: Vec<TraceEvent>) -> Outcome {
        if !trace.is_empty() {
            Arc::make_mut(self.extras.get_or_insert_with(Arc::default)).trace = trace;
        }
        self
    }

    #[inline(always)]
    pub(crate) fn into_tick(self, db: Value) -> Tick {
        Tick {
            db,
            status: self.status,
            error: self.error,
            steps: self.steps,
            extras: self.extras,
        }
    }

    #[inline(always)]
    pub(crate) fn into_agent_tick(self) -> AgentTick {
        AgentTick {
            status: self.status,
            error: self.error,
            steps: self.steps,
            extras: self.extras,
        }
    }
}

/// The state of one tick in progress.
pub(crate) struct Engine<'t> {
    pub(crate) tree: &'t Tree,
    pub(crate) db: &'t mut Map,
    /// Visits left before the step budget is exceeded, plus one: counted
    /// down on every visit, and the visit that takes it to zero fails.
    pub(crate) fuel: u64,
    /// The fuel given to the tick: the step budget plus one, and one more
    /// for each visit made after the budget ran out (which tops `fuel` up).
    /// The visits made so far are this less `fuel`. One word, not the
    /// budget and a count of visits over it, so that the engine, with its
    /// trace buffer, stays within 128 bytes, which are moved without a call
    /// to `memcpy`.
    pub(crate) fuel_given: u64,
    pub(crate) rng: Rng,
    pub(crate) error: Option<Box<TickError>>,
    /// The state of long-running behaviours, made only when a tick needs
    /// it (something runs, a deferred action starts, the keys written are
    /// noted): most ticks of most trees never do, and pay nothing for it.
    pub(crate) long: Option<Box<Long>>,
    /// Where a traced tick writes its events: the caller's buffer, borrowed
    /// for the tick and written in place (cleared by the caller). An
    /// untraced tick pays one word for it.
    pub(crate) trace: Option<&'t mut Vec<TraceEvent>>,
    /// Set while halt or lifecycle hooks run: they may not tick children.
    pub(crate) in_hook: bool,
    /// Leave the running set as it is at the end (an engine that only runs hooks).
    pub(crate) keep_running: bool,
    /// Whether the db had `:aido/running` when the tick began, and if not,
    /// whether it can have gained one since but by the tree's own data
    /// nodes (see [`RunningKey`]).
    pub(crate) running_key: RunningKey,
    /// Whether visits must be watched: something ran after the last tick, or
    /// the tick is traced (see `Engine::tick`); or something ran earlier in
    /// this tick (see `Engine::note_running`).
    pub(crate) watch: bool,
    /// Whether plain subtrees take the plain path (see `nodes::plain`), and
    /// its tracing instance or not.
    pub(crate) plain: PlainPath,
    /// Whether the db records this tree's fingerprint (or was carried over
    /// to this tree), so that it need not be stamped at the end.
    pub(crate) had_tree: bool,
    /// Whether the tick wrote node memory or a running set: a db with state
    /// records the tree it belongs to. (Left clear by a start that puts a
    /// parked set back in a db that records it already, `Engine::start_parked`.)
    pub(crate) wrote_state: bool,
    /// The carrying over of a db last ticked with another tree.
    pub(crate) migration: Option<Box<Migration>>,
    /// Whether the db may hold `:aido/results` (a small db's key pass
    /// proves it absent): completions left there at the end are dropped.
    pub(crate) results_maybe: bool,
}

/// What the tick knows of the db's `:aido/running` key (see
/// [`Engine::running_key`]): one byte, as the engine's flags are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum RunningKey {
    /// Absent when the tick began (the set-up proves it: see
    /// [`Engine::prepare`]), and since then only the tree's own data nodes
    /// can have written it (`Tree::writes_running`): the end of a tick
    /// that starts something appends the set without a search.
    Absent = 0,
    /// Present when the tick began.
    Held = 1,
    /// Absent when the tick began, but user code was handed the db since
    /// ([`Engine::check_lent_db`]) and may have added it.
    Lent = 2,
}

/// How a tick takes plain subtrees (see `nodes::plain`): one byte, as the
/// engine's flags are, so that the engine stays as small as it was, and
/// the untraced tick's case is zero, which its dispatch tests for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum PlainPath {
    /// On the plain path, untraced.
    Untraced = 0,
    /// On the plain path's tracing instance, which writes each node's
    /// status into the trace as the general path does.
    Traced = 1,
    /// On the general path: a db from elsewhere says a plain node is
    /// running (plain nodes cannot run), and the general path visits and
    /// keeps it; or a test compares the paths.
    Off = 2,
}

/// See [`Engine::long`].
#[derive(Default)]
pub(crate) struct Long {
    /// Nodes that ended the previous tick Running, in pre-order, with what
    /// became of them in this tick.
    pub(crate) prev_running: Vec<(u32, Fate)>,
    /// How many entries of `prev_running` have the fate
    /// [`Fate::Running`] (ran again, and returned Running again): a tick
    /// that continues its whole set is then told by one comparison with
    /// the set's length, without a pass over the fates. Kept by the only
    /// places that set or change that fate (`Engine::watched`, a halt) and
    /// reset where the fates are (a set loaded or emptied). The one
    /// exception: a wait at the end of the root's run, the whole set,
    /// counts every node here and leaves their fates pending, which the
    /// end of the tick marks only if it reads them
    /// ([`Long::mark_run_again`]).
    pub(crate) runs_again: u32,
    /// Nodes that returned Running in this tick, besides those of
    /// `prev_running` that did again (their fate is then
    /// [`Fate::Running`]: the usual tick while something runs notes
    /// nothing here). A node ticked again in the same tick that finishes
    /// leaves it ([`Long::finished_again`]).
    pub(crate) now_running: Vec<u32>,
    /// By node index, where the node sits in `now_running`, valid when
    /// stamped with `now_stamp`: whether a node returned Running in this
    /// tick, and has not finished since, is one look-up instead of a
    /// search of the list, which a tick that ticks nodes again (a loop
    /// over a counting parallel) asks at every visit. Kept by every
    /// change a tick makes to `now_running` until its end ([`Long::note_now`],
    /// [`Long::finished_again`], a halt); sized to the largest tree ticked on
    /// this thread.
    pub(crate) now_at: Vec<(u32, u32)>,
    /// Stamps the entries of `now_at`; moved on each time a node is noted
    /// in an empty `now_running`, so older entries never match.
    pub(crate) now_stamp: u32,
    /// Whether `prev_running`, filed in `where_running`, is the running
    /// set the last tick on this thread ended with, left in place for the
    /// next tick: loading a set that names the same nodes then compares
    /// each id and files nothing. Cleared when the state is taken for
    /// anything else (see [`Long::fresh`]).
    pub(crate) filed: bool,
    /// Clones of the ids of the nodes `filed_ids_nodes` (by index, in that
    /// order) in the tree whose identity is `filed_ids_for` (0: none; see
    /// [`crate::tree::Identity`]), proven equal to those nodes' ids when
    /// kept. While `prev_ids_for` says they are `prev_running`'s nodes, a
    /// tick of that same tree that takes the set over again compares the
    /// db's ids with these, without reading the nodes (a host may still
    /// have edited the set in place: each id is compared); and a start of
    /// the same nodes puts the set back and files it without a comparison
    /// with the nodes.
    pub(crate) filed_ids: Vec<Value>,
    /// The nodes whose ids `filed_ids` holds, in that order.
    pub(crate) filed_ids_nodes: Vec<u32>,
    /// The identity of the tree `filed_ids` were proven in; 0 for none.
    pub(crate) filed_ids_for: u64,
    /// Made anew each time `filed_ids` are (never 0, unique in the
    /// process): a running set parked naming them says so with it.
    pub(crate) filed_ids_stamp: u64,
    /// `filed_ids_for` while `filed_ids_nodes` are the nodes of
    /// `prev_running`, in its order; else 0 (forgotten with
    /// `prev_running`). One comparison with the tree's identity says both.
    pub(crate) prev_ids_for: u64,
    /// When not 0: the `:wait` at the end of the run of long-path flows
    /// that `filed_ids_nodes` are, the whole run and nothing else, its top
    /// the root, in the tree whose identity is `filed_ids_for`. (Such a
    /// wait has a parent, so it is never node 0.) Proven by the wait's
    /// general check as it ran on (`Engine::long_ran_again`), and
    /// forgotten when `filed_ids_nodes` change: while `prev_ids_for` says
    /// those are the nodes of `prev_running`, that wait running on counts
    /// the whole set as run again without climbing the run (see
    /// [`Long::mark_run_again`]).
    pub(crate) filed_run_wait: u32,
    /// The running set the last tick on this thread ended with, when it
    /// is not `filed`: a guess at the nodes `:aido/running` names, position
    /// by position, so that loading it compares each id with one node's id
    /// instead of hashing it (a string id hashes with SipHash). Only ever
    /// a hint: a wrong one costs a look-up.
    pub(crate) last_running: Vec<u32>,
    /// By node index, where the node sits in `prev_running`, valid when
    /// stamped with the current `generation`: whether a node was running,
    /// and its fate, are then one look-up instead of a search of the set.
    /// Sized to the largest tree ticked on this thread (room kept).
    pub(crate) where_running: Vec<(u32, u32)>,
    /// Stamps the entries of `where_running` made for this tick's
    /// `prev_running`; moved on each time that set is emptied, so older
    /// entries (of another tick, agent or tree) never match.
    pub(crate) generation: u32,
    /// Whether the db's `:aido/running` names the nodes of `prev_running`,
    /// in that order, as it did when the tick began: proven by loading it,
    /// and forgotten when user code is handed the db to change (it could
    /// edit the set in place). While it holds, a tick that ends with the
    /// nodes it began with has nothing to compare or write back.
    pub(crate) db_names_prev: bool,
    pub(crate) launches: Vec<Request>,
    pub(crate) cancels: Vec<Request>,
    pub(crate) dropped: Vec<DroppedResult>,
    pub(crate) warnings: Vec<TickWarning>,
    /// Persistent memory as it was before each write made below a policy
    /// parallel in this tick, in the order written (see
    /// `Engine::roll_back_persistent`).
    pub(crate) journal: Vec<(u32, Option<Value>)>,
    /// Room for the nodes one halt stops (see `Engine::halt_subtree`),
    /// kept from tick to tick.
    pub(crate) halting: Vec<u32>,
    /// How many policy parallels are being ticked, one inside another:
    /// while any is, persistent memory written is journaled, so that a
    /// parallel that fails can put it back.
    pub(crate) rollback_depth: u32,
    /// The top-level keys the tick writes, noted when its caller asks (a
    /// recorder, which traces too, so that the long-running state is there:
    /// see `writes.rs`); the caller's buffer, handed back at the end.
    pub(crate) writes: Option<Writes>,
    /// How many entries of a large `:aido/memory` this tick marked removed
    /// (`nil` in their place, see `halt::mark_removed`): taken out together by the
    /// write-back ([`Engine::settle_memory`]).
    pub(crate) memory_marked: u32,
    /// Whether the first mark raised the engine's `results_maybe`, which
    /// brings the write-back to the settling (the db had no completions).
    pub(crate) marks_raised_results: bool,
    /// The `:aido/running` vector the last halt on this thread removed,
    /// with its ids, kept here, where the next tick finds it without the
    /// thread's spare lists: a long action started again after its halt
    /// usually runs the same nodes, and puts it back as it is (see
    /// `halt::parked_running`).
    pub(crate) parked_running: Option<Value>,
    /// When not 0, `parked_running` was the db's set while it named the
    /// ids kept with this stamp (`Long::filed_ids_stamp`), by value: a
    /// start of those same nodes puts it back without comparing its ids.
    pub(crate) parked_running_names: u64,
    /// The `:aido/memory` map the last halt on this thread removed when it
    /// held one node's state, with that entry: the same node started again
    /// puts it back with its new state, no entry made or dropped (see
    /// `halt::parked_memory`).
    pub(crate) parked_memory: Option<Value>,
}

thread_local! {
    /// An emptied long-running state kept from an earlier tick on this
    /// thread: ticks while something runs reuse it, and the room its vectors
    /// have, instead of allocating afresh.
    static SPARE_LONG: std::cell::Cell<Option<Box<Long>>> = const { std::cell::Cell::new(None) };
}

impl Long {
    /// An empty state: this thread's spare if it has one, its running set
    /// forgotten (see [`Long::filed`]).
    #[inline(always)]
    pub(crate) fn fresh() -> Box<Long> {
        let mut long = Long::spare();
        if long.filed {
            long.unfile();
        }
        long
    }

    /// This thread's spare state (or a new one) as it was left, a running
    /// set still filed: for loading `:aido/running`, which compares the db's
    /// set with it.
    #[inline(always)]
    pub(crate) fn spare() -> Box<Long> {
        match SPARE_LONG.take() {
            Some(long) => long,
            None => Long::new_boxed(),
        }
    }

    /// This thread's spare state as it was left, if it has one: as
    /// [`Long::spare`], without making one (a call) when not.
    #[inline(always)]
    pub(crate) fn spare_kept() -> Option<Box<Long>> {
        SPARE_LONG.take()
    }

    /// Forgets the running set left filed, keeping its nodes as the hint
    /// the next load starts from (`last_running`).
    #[cold]
    #[inline(never)]
    pub(crate) fn unfile(&mut self) {
        self.filed = false;
        self.last_running.clear();
        self.last_running
            .extend(self.prev_running.iter().map(|&(n, _)| n));
        self.forget_prev();
    }

    /// A new, empty state: the first on this thread.
    #[cold]
    #[inline(never)]
    fn new_boxed() -> Box<Long> {
        Box::default()
    }

    /// What a tick's long-running state hands out (launches, cancels,
    /// dropped completions, warnings), the state itself kept as this
    /// thread's spare. Most ticks hand out nothing: then nothing is moved.
    #[inline(always)]
    fn hand_over(long: Box<Long>) -> Option<Arc<Extras>> {
        // One test of the four lengths together: the usual tick hands out
        // nothing, and four tests cost more than one.
        if (long.launches.len() | long.cancels.len() | long.dropped.len() | long.warnings.len())
            == 0
        {
            Long::recycle_quiet(long);
            return None;
        }
        Long::hand_over_extras(long)
    }

    /// [`Long::hand_over`] when the tick has something to hand out.
    #[cold]
    #[inline(never)]
    fn hand_over_extras(mut long: Box<Long>) -> Option<Arc<Extras>> {
        let extras = Arc::new(Extras {
            launches: std::mem::take(&mut long.launches),
            cancels: std::mem::take(&mut long.cancels),
            dropped: std::mem::take(&mut long.dropped),
            warnings: std::mem::take(&mut long.warnings),
            trace: Vec::new(),
            migration: None,
        });
        Long::recycle(long);
        Some(extras)
    }

    /// [`Long::recycle`] for a tick that handed nothing out: what it would
    /// hand out is empty already, so only the running sets and the journal
    /// are emptied. A tick that ended with the set it began with left it
    /// filed (`Long::filed`), and its lists are empty: nothing is moved.
    #[inline(always)]
    fn recycle_quiet(mut long: Box<Long>) {
        // The usual tick while something runs left its set filed and wrote
        // no journal or notes: nothing to empty.
        if !(long.filed
            && (long.journal.len() | long.rollback_depth as usize) == 0
            && long.writes.is_none())
        {
            long.empty_quiet();
        }
        Long::keep_spare(long);
    }

    /// [`Long::recycle_quiet`]'s emptying, out of line.
    #[inline(never)]
    fn empty_quiet(&mut self) {
        if !self.filed {
            self.keep_last_running();
        }
        self.journal.clear();
        self.rollback_depth = 0;
        self.writes = None;
    }

    /// Forgets the running set the tick loaded, and keeps the one it ended
    /// with (`now_running`, in pre-order once stored) as the next load's
    /// hint.
    #[inline(never)]
    fn keep_last_running(&mut self) {
        self.forget_prev();
        std::mem::swap(&mut self.last_running, &mut self.now_running);
        self.now_running.clear();
    }

    /// Keeps `long` as this thread's spare. The slot is empty while a tick
    /// holds the spare: what it held before, if anything, is dropped out
    /// of line.
    #[inline(always)]
    fn keep_spare(long: Box<Long>) {
        if let Some(old) = SPARE_LONG.replace(Some(long)) {
            drop_spare(old);
        }
    }

    /// Empties `long` (what a tick hands out was moved out of it already)
    /// and keeps it as this thread's spare.
    fn recycle(mut long: Box<Long>) {
        if !long.filed {
            long.keep_last_running();
        }
        long.launches.clear();
        long.cancels.clear();
        long.dropped.clear();
        long.warnings.clear();
        long.journal.clear();
        long.rollback_depth = 0;
        long.writes = None;
        Long::keep_spare(long);
    }
}

#[cold]
#[inline(never)]
fn drop_spare(long: Box<Long>) {
    drop(long);
}

impl Long {
    /// Empties `prev_running`, and with it every entry of `where_running`.
    #[inline(always)]
    pub(crate) fn forget_prev(&mut self) {
        self.prev_running.clear();
        self.runs_again = 0;
        self.db_names_prev = false;
        self.filed = false;
        self.prev_ids_for = 0;
        self.generation = self.generation.wrapping_add(1);
        if self.generation == 0 {
            // Once in 2^32 times: entries stamped long ago could match again.
            self.where_running.clear();
            self.generation = 1;
        }
    }

    /// Files the set a tick just wrote under `:aido/running`, where there
    /// was none (`now_running`, in pre-order): left filed for the next tick
    /// on this thread as a set that ran on unchanged is (see
    /// `Engine::take_filed_running`, which compares the db's ids with it),
    /// and kept as the next load's hint (`last_running`). The usual case: a
    /// long action that starts again after a halt.
    #[cold]
    #[inline(never)]
    pub(crate) fn file_started(&mut self, n_nodes: usize) {
        self.forget_prev();
        if self.where_running.len() < n_nodes {
            self.where_running.resize(n_nodes, (0, 0));
        }
        let Long {
            prev_running,
            now_running,
            where_running,
            generation,
            ..
        } = self;
        for (i, &n) in now_running.iter().enumerate() {
            prev_running.push((n, Fate::Pending));
            if let Some(entry) = where_running.get_mut(n as usize) {
                *entry = (*generation, i as u32);
            }
        }
        std::mem::swap(&mut self.last_running, &mut self.now_running);
        self.now_running.clear();
        self.filed = true;
    }

    /// Files every node of `prev_running` in `where_running` (`n_nodes`:
    /// the tree's size, which every node index is below).
    #[inline(always)]
    pub(crate) fn index_prev(&mut self, n_nodes: usize) {
        if self.where_running.len() < n_nodes {
            self.where_running.resize(n_nodes, (0, 0));
        }
        let generation = self.generation;
        for (i, &(n, _)) in self.prev_running.iter().enumerate() {
            if let Some(entry) = self.where_running.get_mut(n as usize) {
                *entry = (generation, i as u32);
            }
        }
    }

    /// Whether `node` runs now: it returned Running in this tick, or it
    /// ran after the last one and was ticked again with that result.
    pub(crate) fn runs_now(&self, node: u32) -> bool {
        self.now_has(node)
            || self
                .running_at(node)
                .and_then(|i| self.prev_running.get(i))
                .is_some_and(|&(_, fate)| fate == Fate::Running)
    }

    /// Whether `node` runs as its last visit left it: it ended the last
    /// tick Running and, if ticked again since, returned Running again; or
    /// it returned Running in this tick (a node ticked again in the tick in
    /// which it ran, by a loop over a counting parallel for one, is then
    /// running when it is ticked again). A node halted since does not run.
    /// Out of line, called by [`Engine::was_running`] only once something
    /// runs or ran, so that the flows that inline that test keep their code
    /// as small as before this search had two parts.
    #[inline(never)]
    pub(crate) fn runs(&self, node: u32) -> bool {
        match self.running_at(node).and_then(|i| self.prev_running.get(i)) {
            Some(&(_, Fate::Pending | Fate::Running)) => true,
            _ => self.now_has(node),
        }
    }

    /// Notes that `node` returned Running in this tick, in `now_running`
    /// once (a node that returns Running again before it finishes is there
    /// already), and where it sits there (`now_at`).
    #[inline(always)]
    pub(crate) fn note_now(&mut self, node: u32) {
        if self.now_running.is_empty() {
            // Nothing is noted: every entry of `now_at` is old.
            self.now_stamp = self.now_stamp.wrapping_add(1);
        } else if self.now_has(node) {
            return;
        }
        let at = self.now_running.len() as u32;
        self.now_running.push(node);
        self.file_now(node, at);
    }

    /// Whether `node` is in `now_running`: it returned Running in this
    /// tick and has neither finished nor been halted since.
    #[inline(always)]
    pub(crate) fn now_has(&self, node: u32) -> bool {
        match self.now_at.get(node as usize) {
            Some(&(stamp, at)) if stamp == self.now_stamp => {
                self.now_running.get(at as usize) == Some(&node)
            }
            _ => false,
        }
    }

    /// Files `node` as sitting at `at` in `now_running`.
    #[inline]
    fn file_now(&mut self, node: u32, at: u32) {
        let i = node as usize;
        if self.now_at.len() <= i {
            self.grow_now_at(i + 1);
        }
        if let Some(entry) = self.now_at.get_mut(i) {
            *entry = (self.now_stamp, at);
        }
    }

    /// Makes room in `now_at` for `len` nodes (once for each larger tree
    /// on this thread).
    #[cold]
    #[inline(never)]
    fn grow_now_at(&mut self, len: usize) {
        self.now_at.resize(len, (0, 0));
    }

    /// `node`, noted running in this tick (in `now_running`), was ticked
    /// again in the same tick and finished, or was halted: it no longer
    /// runs. Taken out
    /// in place of the last noted node, whose entry moves with it (the
    /// list is put in pre-order when it is stored).
    #[cold]
    #[inline(never)]
    pub(crate) fn finished_again(&mut self, node: u32) {
        let Some(&(stamp, at)) = self.now_at.get(node as usize) else {
            return;
        };
        if stamp != self.now_stamp || self.now_running.get(at as usize) != Some(&node) {
            return;
        }
        self.now_running.swap_remove(at as usize);
        if let Some(&moved) = self.now_running.get(at as usize) {
            self.file_now(moved, at);
        }
        if let Some(entry) = self.now_at.get_mut(node as usize) {
            entry.0 = self.now_stamp.wrapping_sub(1);
        }
    }

    /// Marks every node of `prev_running` running again when the set was
    /// counted as run again whole with its fates left pending (the usual
    /// tick while a wait at the end of the root's run runs on, see
    /// `Engine::long_ran_again`): `runs_again` counts every node, and the
    /// first is still pending. Called where the tick's end reads the
    /// fates; the usual end reads only the count.
    #[inline(always)]
    pub(crate) fn mark_run_again(&mut self) {
        if self.runs_again as usize == self.prev_running.len()
            && let Some(&(_, Fate::Pending)) = self.prev_running.first()
        {
            for (_, fate) in self.prev_running.iter_mut() {
                *fate = Fate::Running;
            }
        }
    }

    /// Where `node` sits in `prev_running`, if it ended the last tick Running.
    #[inline(always)]
    pub(crate) fn running_at(&self, node: u32) -> Option<usize> {
        match self.where_running.get(node as usize) {
            Some(&(generation, i)) if generation == self.generation => Some(i as usize),
            _ => None,
        }
    }
}

/// Whether `db` is stamped with `tree`'s fingerprint under `:aido/tree`,
/// found where the tree's position hint says (a u64 compare against the
/// tree's cached fingerprint).
#[inline(always)]
fn stamped_by(db: &Map, tree: &Tree) -> bool {
    matches!(
        tree.fingerprint_hint.hit(db, kw::TREE).and_then(|i| db.value_at(i)),
        Some(Value::Int(f)) if *f == tree.fingerprint()
    )
}

/// The bit of reserved keyword `k` in `Map::reserved_keywords` (every
/// reserved keyword's index is below 64).
#[inline(always)]
fn bit(k: Keyword) -> u64 {
    1 << (k.index() % 64)
}

/// What became, in this tick, of a node that was running after the last one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fate {
    /// Not reached yet.
    Pending,
    /// Ticked again.
    Visited,
    /// Halted.
    Halted,
    /// Ticked again, and Running again: still running. (Such a node is not
    /// noted in `Long::now_running`, so that a tick that continues what
    /// ran notes and compares nothing but these fates.) Ticked once more in
    /// the same tick, it is `Visited` again if it finishes.
    Running,
}

impl<'t> Engine<'t> {
    /// An engine for one tick on `map`, traced into `trace` when given
    /// (whatever `options` say: a caller whose options ask for a trace
    /// gives a buffer); call [`Engine::prepare`] next.
    #[inline(always)]
    pub(crate) fn new(
        tree: &'t Tree,
        map: &'t mut Map,
        options: &TickOptions,
        trace: Option<&'t mut Vec<TraceEvent>>,
    ) -> Engine<'t> {
        // Returned as a literal so that it is built in the caller's frame:
        // the engine is large and this runs on every tick.
        Engine {
            tree,
            db: map,
            fuel: options.step_budget.saturating_add(1),
            fuel_given: options.step_budget.saturating_add(1),
            rng: Rng::with_work_budget(options.work_budget),
            error: None,
            long: None,
            in_hook: false,
            keep_running: false,
            running_key: RunningKey::Absent,
            watch: trace.is_some(),
            plain: if trace.is_some() {
                PlainPath::Traced
            } else {
                PlainPath::Untraced
            },
            trace,
            had_tree: false,
            wrote_state: false,
            migration: None,
            results_maybe: false,
        }
    }

    /// Prepares the tick ([`Engine::prepare`]) and ticks the root: Success
    /// without a visit for an empty tree or a db whose preparation failed
    /// (the error is then the tick's). Every entry point that ticks a tree
    /// goes through here.
    ///
    /// `TRACED` says that the tick has a trace: a traced plain root then
    /// runs in the caller's frame ([`Engine::tick_plain_root`] inlined);
    /// without it, in [`Engine::tick_plain_root_traced`]'s, out of the
    /// untraced tick's body.
    #[inline(always)]
    pub(crate) fn tick_root<const TRACED: bool>(
        &mut self,
        tree: &'t Tree,
        options: &TickOptions,
    ) -> Status {
        let usual = self.prepare(options);
        match tree.nodes.first() {
            // A db holding none of the reserved keys a tick reads: the
            // preparation set no error and left the path as it was built,
            // which the compiler then knows (one test for the usual tick).
            Some(root) if usual && root.plain && self.plain == PlainPath::Untraced => {
                use crate::tree::Kind;
                match &root.kind {
                    crate::nodes::one_visit_leaf!() => self.tick_plain_root::<false>(root),
                    Kind::Selector { .. }
                    | Kind::Sequence { .. }
                    | Kind::Parallel(_)
                    | Kind::Loop { .. }
                    | Kind::LoopUntilSuccess { .. }
                    | Kind::Invert
                    | Kind::Always
                    | Kind::Never
                    | Kind::Force { .. } => self.tick_plain_root::<false>(root),
                    // A plain domain root: called from here (`Engine::custom_root`).
                    Kind::Custom { node_type, options } => self.custom_root(node_type, options),
                    _ => self.tick(0),
                }
            }
            // The usual traced tick, as the untraced one above: a plain
            // root on the tracing instance, with the error known absent.
            Some(root) if TRACED && usual && root.plain && self.plain == PlainPath::Traced => {
                self.tick_plain_root::<true>(root)
            }
            Some(_) if self.error.is_some() => Status::Success,
            // A root on the long path, of an untraced tick whose db holds
            // reserved keys (something runs): entered there directly,
            // without the general dispatch's frame. (Tested only for such
            // a db: a general root of a usual db, a domain node's, pays
            // nothing for it.)
            Some(root) if !usual && root.long_path() && self.plain == PlainPath::Untraced => {
                self.tick_long_root(root)
            }
            // A plain root is entered on the plain path directly, traced or
            // not, without the general path's dispatch.
            Some(root) if root.plain => match self.plain {
                PlainPath::Untraced => self.tick_plain_root::<false>(root),
                PlainPath::Traced if TRACED => self.tick_plain_root::<true>(root),
                PlainPath::Traced => self.tick_plain_root_traced(root),
                PlainPath::Off => self.tick(0),
            },
            Some(_) => self.tick(0),
            None => Status::Success,
        }
    }

    /// Clears the last error, adds the locals and loads the running set.
    /// Returns whether the db held none of the reserved keys a tick reads
    /// (the usual tick: nothing was taken, loaded or carried over).
    #[inline(always)]
    pub(crate) fn prepare(&mut self, options: &TickOptions) -> bool {
        // Which reserved keys the db holds is one word (see
        // `Map::reserved_keywords`): a db holding none of those a tick
        // reads (most dbs, on most ticks) costs no look-up, whatever its
        // size, and `:aido/results` is then known absent.
        // (The four have three bits of the filter, which no other name has:
        // see `intern::TICK_READ_BITS`. The four tests are one.)
        let db = &*self.db;
        let usual = db.lacks_keyword(kw::ERROR)
            && db.lacks_keyword(kw::RUNNING)
            && db.lacks_keyword(kw::RESULTS)
            && db.lacks_keyword(kw::TREE);
        if !usual {
            self.take_reserved();
        }
        if let Some(locals) = &options.locals {
            self.db.insert(Value::Keyword(kw::LOCALS), locals.clone());
            self.wrote(kw::LOCALS);
        }
        usual
    }

    /// [`Engine::prepare`]'s part for a db holding some of the reserved
    /// keys a tick reads: takes out the last
    /// tick's error, compares the tree's fingerprint (carrying over a db
    /// last ticked with another tree), notes whether completions may wait
    /// under `:aido/results`, and loads the running set if there is one
    /// (here, out of the plain tick's way: the usual load, of a set that
    /// continues, is inlined into this function).
    #[inline(never)]
    fn take_reserved(&mut self) {
        // The usual loads are a leaf: no call, so few registers saved on
        // their way; anything else goes on in a tail call.
        if !self.take_usual_leaf() {
            self.take_reserved_rest();
        }
    }

    /// [`Engine::take_reserved`] past the usual loads (see
    /// [`Engine::take_usual_leaf`]).
    #[inline(never)]
    fn take_reserved_rest(&mut self) {
        if !self.take_usual_running() {
            self.take_reserved_otherwise();
        }
    }

    /// [`Engine::take_reserved`] past the usual db something runs in: out
    /// of line, so that the usual one's function saves few registers.
    #[inline(never)]
    fn take_reserved_otherwise(&mut self) {
        let read = bit(kw::ERROR) | bit(kw::RUNNING) | bit(kw::RESULTS) | bit(kw::TREE);
        let reserved = self.db.reserved_keywords(read);
        let running = self.has_running(reserved);
        self.running_key = if running {
            RunningKey::Held
        } else {
            RunningKey::Absent
        };
        if running {
            if self.load_running() {
                self.plain = PlainPath::Off;
            }
            self.watch_running();
        }
    }

    /// [`Engine::take_reserved`] for the usual db there, one that something
    /// runs in: `:aido/running` and this tree's `:aido/tree`, no error, no
    /// completions. `:aido/error` and `:aido/results` share a bit of the
    /// filter of keyword keys that no other name has
    /// (`intern::TICK_READ_BITS`), so a clear bit proves both absent; the
    /// tree's position hints of the other two, when they hit, prove those
    /// present and say where. Then no pass over the db's keys is needed and
    /// each key is looked at once. Whether it was that db (if not, nothing
    /// was done).
    #[inline(always)]
    fn take_usual_running(&mut self) -> bool {
        let (db, tree) = (&*self.db, self.tree);
        if !(db.lacks_keyword(kw::ERROR) && db.lacks_keyword(kw::RESULTS)) {
            return false;
        }
        let Some(at) = tree.running_key_hint.hit(db, kw::RUNNING) else {
            // The tick after a halt: the key's bit of the filter, its own
            // (`intern::TICK_READ_BITS`), proves it absent with one test,
            // here, without a call; else a search does.
            if db.lacks_keyword(kw::RUNNING) && stamped_by(db, tree) {
                self.had_tree = true;
                return true;
            }
            return self.take_stamped_idle();
        };
        if !stamped_by(db, tree) {
            return false;
        }
        self.had_tree = true;
        self.running_key = RunningKey::Held;
        if self.take_filed_running(at) {
            // A set is filed only when it is not empty (see
            // `Engine::file_running_if_unchanged`): something runs.
            debug_assert!(
                self.long
                    .as_ref()
                    .is_some_and(|l| !l.prev_running.is_empty())
            );
            self.watch = true;
            return true;
        }
        if self.load_running_anew() {
            self.plain = PlainPath::Off;
        }
        self.watch_running();
        true
    }

    /// [`Engine::take_usual_running`] for a db without a running set there:
    /// the usual one is stamped with this tree's fingerprint and holds no
    /// `:aido/running` at all (the tick after a halt, or after a long
    /// action ended), which a search for the key proves where its own bit
    /// of the filter did not (a large map's filter keeps the bits of keys
    /// removed; see [`Engine::take_usual_running`]). Then the tree is
    /// known as the db's and nothing is loaded, as
    /// [`Engine::take_reserved_otherwise`] would find, without its pass
    /// over the db's keys. Whether it was that db (if not, nothing was
    /// done).
    #[inline(never)]
    fn take_stamped_idle(&mut self) -> bool {
        let (db, tree) = (&*self.db, self.tree);
        if !stamped_by(db, tree) || db.keyword_position(kw::RUNNING).is_some() {
            return false;
        }
        self.had_tree = true;
        true
    }

    /// With a running set loaded: something that ran after the last tick
    /// is watched in this one.
    #[inline(always)]
    fn watch_running(&mut self) {
        if let Some(long) = &self.long {
            self.watch |= !long.prev_running.is_empty();
        }
    }

    /// Whether the db has a running set, once the other reserved keys are
    /// dealt with (see [`Engine::take_reserved`]).
    #[inline(always)]
    fn has_running(&mut self, reserved: u64) -> bool {
        let has = |k: Keyword| reserved & bit(k) != 0;
        self.results_maybe = has(kw::RESULTS);
        if has(kw::ERROR)
            && let Some(i) = crate::value::find_kw(self.db, kw::ERROR)
        {
            self.db.shift_remove_index(i);
            self.wrote(kw::ERROR);
        }
        if has(kw::TREE) {
            // A u64 compare against the tree's cached fingerprint.
            match self.tree.recorded_fingerprint(self.db) {
                Some(Value::Int(f)) if *f == self.tree.fingerprint() => self.had_tree = true,
                Some(_) => {
                    self.had_tree = true;
                    self.carry_over();
                }
                None => {}
            }
        }
        match &self.migration {
            None => has(kw::RUNNING),
            // A carried-over db may have lost its running set.
            Some(_) => crate::value::find_kw(self.db, kw::RUNNING).is_some(),
        }
    }

    /// The db was last ticked with another tree: carries its state over.
    #[cold]
    #[inline(never)]
    fn carry_over(&mut self) {
        let report = crate::migrate::migrate_by_id(self.db, self.tree);
        self.migration = Some(Box::new(report));
        self.wrote_anything();
    }

    /// Ends the tick: halts what was running and was not reached, records
    /// what runs now, writes back the generator's position and any error.
    /// The db stays where it is (the engine only borrows it).
    #[inline(always)]
    pub(crate) fn finish(self, status: Status, options: &TickOptions) -> Outcome {
        self.finish_noted(status, options, None)
    }

    /// [`Engine::finish`], with the keys the tick wrote handed back in
    /// `writes_out` (when given: see [`Engine::note_writes`]).
    #[inline(always)]
    pub(crate) fn finish_noted(
        mut self,
        status: Status,
        options: &TickOptions,
        writes_out: Option<&mut Writes>,
    ) -> Outcome {
        let (status, steps) = self.end(status, options);
        let Engine {
            error,
            long,
            migration,
            ..
        } = self;
        Outcome::of(status, steps, error, long, migration, writes_out)
    }

    /// The end of the tick in place: writes back what the tick leaves in
    /// the db ([`Engine::write_back`]) and returns the tick's status, which
    /// was `status` and is Error if the tick has an error, with the visits
    /// made. The
    /// caller then takes the engine apart by value where it stands, as
    /// [`Engine::finish_noted`] does, and hands the parts to
    /// [`Outcome::of`]: moving the engine into a call copied its 128 bytes
    /// on every tick.
    #[inline(always)]
    pub(crate) fn end(&mut self, status: Status, options: &TickOptions) -> (Status, u64) {
        // Most ticks leave nothing to write back: nothing ran or runs, no
        // completion waited, no state, error, locals or random draw. They
        // pass these tests and no more, and having no error keep their
        // status without another test; the others write back, out of line
        // but for the usual tick while something runs on. Whether locals
        // were added is all the write-back reads of the options: a flag,
        // folded where the options are constant.
        let wrote = if self.had_running() {
            // The usual one of these, the tick while something runs on,
            // in the tick's frame: no call.
            self.write_back(options.locals.is_some());
            true
        } else if self.long.is_some()
            || self.results_maybe
            || self.wrote_state
            || self.error.is_some()
            || options.locals.is_some()
            || self.rng.drew()
        {
            self.write_back_all(options.locals.is_some());
            true
        } else {
            false
        };
        if wrote && self.error.is_some() {
            return (Status::Error, self.steps());
        }
        (status, self.steps())
    }

    /// The end of a tick that loaded a running set (see
    /// [`Engine::finish_noted`]): halts what was running and was not
    /// reached, records what runs now, drops stale completions, writes back
    /// the generator's position, the tree's fingerprint and any error, and
    /// takes the locals out (`locals`: whether the tick added them). Its
    /// usual case is a few tests, inlined; the rest is out of line
    /// ([`Engine::write_back_all`]).
    #[inline(always)]
    fn write_back(&mut self, locals: bool) {
        // The usual tick while something runs: it continued what ran and
        // wrote nothing else back. Its running set is left filed here,
        // without the frame of the whole write-back. (Its caller tested
        // that a set was loaded.)
        debug_assert!(self.had_running());
        if !self.keep_running
            && self.error.is_none()
            && !self.results_maybe
            && !self.wrote_state
            && !locals
            && !self.rng.drew()
            && self.file_running_if_unchanged()
        {
            // Noted out of line: the usual write-back then makes no call.
            if self.writes().is_some() {
                self.wrote_running();
            }
            return;
        }
        self.write_back_all(locals);
    }

    /// Notes `:aido/running` written, for [`Engine::write_back`].
    #[cold]
    #[inline(never)]
    fn wrote_running(&mut self) {
        self.wrote(kw::RUNNING);
    }

    /// [`Engine::write_back`] past its usual case: everything a tick may
    /// leave in the db.
    #[inline(never)]
    fn write_back_all(&mut self, locals: bool) {
        if !self.keep_running && (self.had_running() || self.long.is_some()) {
            if self.may_store_running() {
                self.wrote(kw::RUNNING);
            }
            // The fates of a set loaded, read from here on, marked if it
            // was counted as run again whole.
            if self.had_running()
                && let Some(long) = self.long.as_mut()
            {
                long.mark_run_again();
            }
            if self.error.is_none() {
                self.end_running();
            } else {
                self.store_running_after_error();
            }
        }
        if self.results_maybe && !self.settle_memory() {
            // Completions are taken, put back and dropped only from a
            // `:aido/results` that was there when the tick began.
            self.wrote(kw::RESULTS);
            if self.error.is_none() && !self.keep_running {
                self.drop_stale_results();
            }
        }
        if self.rng.store(self.db) {
            self.wrote(kw::RNG_POS);
        }
        // An Error tick keeps the state it stored too, so it records its
        // tree as well: a later tree can then carry that state over.
        if self.wrote_state && !self.had_tree {
            crate::migrate::stamp(self.db, self.tree);
            self.wrote(kw::TREE);
        }
        if locals {
            self.db.shift_remove(&Value::Keyword(kw::LOCALS));
        }
        if let Some(e) = &self.error {
            self.db.insert(Value::Keyword(kw::ERROR), e.to_value());
            self.wrote(kw::ERROR);
        }
    }

    /// Whether the db had `:aido/running` when the tick began.
    #[inline(always)]
    pub(crate) fn had_running(&self) -> bool {
        self.running_key == RunningKey::Held
    }

    /// Whether the end of the tick may write or remove `:aido/running`:
    /// something ran before it or runs now.
    fn may_store_running(&self) -> bool {
        self.had_running()
            || self
                .long
                .as_ref()
                .is_some_and(|l| !l.now_running.is_empty())
    }

    /// After user code that was handed the db: an Error at `node` if it
    /// left a value nested deeper than the reader reads, which no save
    /// could read back.
    #[cold]
    #[inline(never)]
    pub(crate) fn check_lent_db(&mut self, node: u32) {
        // The running set may have been edited in place: compared again
        // at the end of the tick (and one may have been added).
        if self.running_key == RunningKey::Absent {
            self.running_key = RunningKey::Lent;
        }
        if let Some(long) = self.long.as_mut() {
            long.db_names_prev = false;
        }
        let limit = crate::read::MAX_DEPTH - 1;
        let deepest = self
            .db
            .iter()
            .find_map(|(k, v)| k.depth_beyond(limit).or_else(|| v.depth_beyond(limit)));
        if let Some(depth) = deepest
            && self.error.is_none()
        {
            self.rng.error_kind = Some(TickErrorKind::TooDeep);
            self.fail(
                node,
                format!(
                    "the node left a value nesting {} deep in the db, more than {}",
                    depth + 1,
                    crate::read::MAX_DEPTH
                ),
            );
        }
    }

    /// The node visits made so far, the one that exceeded the budget included.
    pub(crate) fn steps(&self) -> u64 {
        self.fuel_given - self.fuel
    }

    /// A visit found the step budget spent: an Error at `node`. The fuel is
    /// topped up by one so that any later visit fails the same way.
    #[cold]
    #[inline(never)]
    pub(crate) fn out_of_steps(&mut self, node: u32) -> Status {
        // The first visit over the budget sets the tick's error, and only
        // its message is kept: the base is then still the budget plus one.
        let budget = self.fuel_given - 1;
        self.fuel_given += 1;
        self.fuel = 1;
        if self.error.is_none() {
            self.rng.error_kind = Some(TickErrorKind::StepBudget);
        }
        self.fail(
            node,
            format!("step budget exceeded ({budget} node visits in one tick)"),
        )
    }

    /// Records an error at `node` and returns [`Status::Error`]. The first
    /// error of a tick is kept: it is the cause of any that follow.
    #[cold]
    #[inline(never)]
    pub(crate) fn fail(&mut self, node: u32, message: impl Into<String>) -> Status {
        if self.error.is_none() {
            let tree = self.tree;
            let n = &tree.nodes[node as usize];
            self.error = Some(Box::new(TickError {
                kind: self.rng.error_kind.take().unwrap_or(TickErrorKind::Other),
                node: n.id.clone(),
                node_type: n.type_name,
                path: tree.path(crate::tree::NodeIndex(node)),
                span: n.span.and_then(|s| tree.locate(s)).map(|(_, s)| s),
                location: n
                    .span
                    .and_then(|s| tree.locate(s))
                    .map(|(src, s)| src.line_col(s.start)),
                file: tree
                    .files
                    .as_ref()
                    .and(n.span)
                    .and_then(|s| tree.locate(s))
                    .map(|(src, _)| std::sync::Arc::from(src.name())),
                message: message.into(),
            }));
        }
        Status::Error
    }

    /// The memory of `node`, if it has any.
    ///
    /// `:aido/memory` and the node's entry in it are found by position
    /// hints kept in the tree (one comparison each in the usual case), so
    /// that a node id, which may be a string, is not hashed on every tick.
    pub(crate) fn memory(&self, node: u32) -> Option<&Value> {
        let tree = self.tree;
        let n = &tree.nodes[node as usize];
        let Value::Map(memory) = tree.memory_of(self.db)? else {
            return None;
        };
        let i = n.memory_hint.find_value(memory, &n.id)?;
        match memory.value_at(i) {
            // An entry marked removed in this tick is absent (`halt::mark_removed`).
            Some(Value::Nil) if self.memory_marked() => None,
            found => found,
        }
    }

    /// The memory of `node`, if it has any, to change in place. Inlined: a
    /// running `:wait` calls it every tick, and the call cost more than
    /// its two position hints' comparisons.
    #[inline(always)]
    pub(crate) fn memory_mut(&mut self, node: u32) -> Option<&mut Value> {
        self.wrote(kw::MEMORY);
        let tree = self.tree;
        let n = &tree.nodes[node as usize];
        let Value::Map(memory) = tree.memory_of_mut(self.db)? else {
            return None;
        };
        let i = n.memory_hint.find_value(memory, &n.id)?;
        memory.value_at_mut(i)
    }

    /// Sets (or, with `None`, clears) the memory of `node`. Only non-default
    /// state is stored: clearing the last entry removes `:aido/memory`.
    pub(crate) fn set_memory(&mut self, node: u32, state: Option<Value>) -> Result<(), String> {
        self.put_memory(node, state.map(halt::NewMemory::Whole))
    }

    /// Sets the memory of `node` to the one-entry map `{key count}` (a
    /// count starting again or going on): in place when the node's memory,
    /// or the map the last halt kept for it, is `{key old}`. The usual
    /// start after a halt (`:aido/memory` absent, the map the halt kept
    /// holding only this node's `{key old-count}`) writes the count over
    /// the old one and swaps the map into the db: no value is built, and
    /// none goes through the stack, whose whole reloads would wait on the
    /// stores of its pieces. Anything else is [`Engine::put_memory`]'s.
    #[inline(never)]
    pub(crate) fn put_count(&mut self, node: u32, key: Keyword, count: i64) -> Result<(), String> {
        let tree = self.tree;
        let n = &tree.nodes[node as usize];
        if self.long.as_ref().is_none_or(|l| l.rollback_depth == 0)
            // Absent, as the filter proves it after the halt that took it
            // out (no call to search for it).
            && (self.db.lacks_keyword(kw::MEMORY)
                || tree.memory_key_hint.find(self.db, kw::MEMORY).is_none())
            // The long-running state, as `Engine::long_state` takes it.
            && let long = self.long.get_or_insert_with(Long::fresh)
            && let Some(parked) = halt::parked_count(long, &n.id, key, count)
        {
            let at = self.db.push_keyword_swap(kw::MEMORY, parked);
            // Nil (the room's): nothing to drop.
            std::mem::forget(long.parked_memory.take());
            tree.memory_key_hint.remember(Some(at));
            n.memory_hint.remember(Some(0));
            self.wrote_state = true;
            self.wrote(kw::MEMORY);
            return Ok(());
        }
        self.put_memory(node, Some(halt::NewMemory::One(key, Value::Int(count))))
    }

    /// [`Engine::set_memory`] and [`Engine::put_count`].
    fn put_memory(&mut self, node: u32, state: Option<halt::NewMemory>) -> Result<(), String> {
        if self.long.as_ref().is_some_and(|l| l.rollback_depth > 0) {
            self.journal_persistent(node);
        }
        self.wrote(kw::MEMORY);
        let tree = self.tree;
        let n = &tree.nodes[node as usize];
        let id: &Value = &n.id;
        match state {
            Some(state) => {
                // The hint's search proves the key absent: appended without
                // a second search; usually as the last halt took it out,
                // holding this node's entry, which takes the new state.
                let (at, state) = match tree.memory_key_hint.find(self.db, kw::MEMORY) {
                    Some(i) => (i, state),
                    None => match halt::parked_memory(self.long_state(), id, state) {
                        Ok(memory) => {
                            self.wrote_state = true;
                            let at = self.db.push_keyword(kw::MEMORY, memory);
                            tree.memory_key_hint.remember(Some(at));
                            n.memory_hint.remember(Some(0));
                            return Ok(());
                        }
                        Err(state) => {
                            let at = self.db.push_keyword(kw::MEMORY, Value::Nil);
                            tree.memory_key_hint.remember(Some(at));
                            (at, state)
                        }
                    },
                };
                let slot = &mut self.db[at];
                if slot.is_nil() {
                    *slot = halt::spare_map();
                }
                self.wrote_state = true;
                let Value::Map(memory) = slot else {
                    return Err(format!(
                        "`:aido/memory` must be a map, found {}",
                        slot.type_with_article()
                    ));
                };
                match n.memory_hint.find_value(memory, id) {
                    // A large map's entry may be marked removed.
                    Some(i) if memory.len() >= halt::MARK_FROM => {
                        self.write_large_memory(at, i, node, state);
                    }
                    Some(i) => state.write_over(&mut memory[i], drop),
                    // The hint's search proves the id absent.
                    None => {
                        let at = memory.push(id.clone(), state.into_value());
                        n.memory_hint.remember(Some(at));
                    }
                }
            }
            None => {
                // Found by the position hints, as when written; a db the
                // filter proves without node memory (a flow ending after
                // the halt that cleared it) has nothing to clear.
                if self.db.lacks_keyword(kw::MEMORY) {
                    return Ok(());
                }
                let Some(at) = tree.memory_key_hint.find(self.db, kw::MEMORY) else {
                    return Ok(());
                };
                if let Some((_, Value::Map(memory))) = self.db.get_index_mut(at) {
                    if let Some(i) = n.memory_hint.find_value(memory, id) {
                        // A large map's entry is marked removed, if the
                        // tree allows, rather than moving every later one.
                        if memory.len() >= halt::MARK_FROM {
                            self.remove_large_memory(at, i);
                            return Ok(());
                        }
                        if let Some((_, old)) = memory.shift_remove_index(i) {
                            halt::recycle(old);
                        }
                    }
                    if memory.is_empty() {
                        self.remove_long_key(at);
                    }
                }
            }
        }
        Ok(())
    }

    /// A random float in `[0, 1)` from the tick's generator.
    pub(crate) fn random(&mut self) -> Result<f64, String> {
        let x = self.rng.next_f64(self.db);
        match self.rng.error.take() {
            Some(e) => Err(e),
            None => Ok(x),
        }
    }

    /// A random integer in `[0, n)`, `n > 0`.
    pub(crate) fn random_below(&mut self, n: u64) -> Result<u64, String> {
        let x = self.rng.below(self.db, n);
        match self.rng.error.take() {
            Some(e) => Err(e),
            None => Ok(x),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Engine, Fate, Long, SPARE_LONG, TickOptions, run_tick_traced};
    use crate::{Registry, Value, compile_str};

    #[test]
    fn the_engine_stays_within_128_bytes() {
        // `finish` takes it by value: up to 128 bytes are moved inline, a
        // larger engine with a call to `memcpy` on every tick.
        assert!(
            std::mem::size_of::<Engine<'_>>() <= 128,
            "{} bytes",
            std::mem::size_of::<Engine<'_>>()
        );
    }

    #[test]
    fn a_traced_tick_that_runs_nothing_makes_no_long_running_state() {
        // On a thread of its own, whose spare state starts empty: a tick
        // that made one would leave it there.
        let made = std::thread::spawn(|| {
            let text = "[:sequence [:inc! {:key :n}] [:loop {:count 2} [:success]]]";
            let tree = compile_str("t.edn", text, &Registry::new()).ok()?;
            let mut trace = Vec::new();
            let tick = run_tick_traced(Value::map(), &tree, &TickOptions::default(), &mut trace);
            Some((tick.steps, trace.len(), SPARE_LONG.take().is_some()))
        })
        .join();
        assert_eq!(made.ok().flatten(), Some((5, 5, false)));
    }

    #[test]
    fn a_loaded_running_set_is_known_as_the_dbs_until_user_code_gets_the_db() {
        let text = "[:sequence {:id :s} [:wait {:id :w :ticks 9}]]";
        let tree = compile_str("t.edn", text, &Registry::new()).unwrap();
        let options = TickOptions::default();
        let mut db = crate::run_tick(Value::map(), &tree).db;
        let Value::Map(map) = &mut db else {
            panic!("not a map: {db}")
        };
        let names_prev = |engine: &Engine<'_>| engine.long.as_ref().map(|l| l.db_names_prev);
        let mut engine = Engine::new(&tree, map, &options, None);
        engine.prepare(&options);
        assert_eq!(names_prev(&engine), Some(true));
        // User code handed the db may edit the set in place: the end of
        // the tick compares it again.
        engine.check_lent_db(1);
        assert_eq!(names_prev(&engine), Some(false));
        // A set out of pre-order is sorted when loaded: the db's differs.
        let mut db = crate::read_value("{:aido/running [:w :s]}").unwrap();
        let Value::Map(map) = &mut db else {
            panic!("not a map: {db}")
        };
        let mut engine = Engine::new(&tree, map, &options, None);
        engine.prepare(&options);
        assert_eq!(names_prev(&engine), Some(false));
    }

    #[test]
    fn where_running_forgets_each_set_it_filed_even_when_its_stamp_wraps() {
        let mut long = Long::default();
        long.forget_prev();
        long.prev_running
            .extend([(2, Fate::Pending), (5, Fate::Pending)]);
        long.index_prev(8);
        let at = |long: &Long| [2, 3, 5, 9].map(|n| long.running_at(n));
        assert_eq!(at(&long), [Some(0), None, Some(1), None]);
        long.forget_prev();
        assert_eq!(at(&long), [None; 4]);
        // The stamp runs round: the entries filed under its first values
        // (2 and 5, above) must not count again.
        long.generation = u32::MAX - 1;
        long.prev_running.push((3, Fate::Pending));
        long.index_prev(8);
        assert_eq!(at(&long), [None, Some(0), None, None]);
        long.forget_prev();
        long.forget_prev();
        assert_eq!(long.generation, 1);
        assert_eq!(at(&long), [None; 4]);
        long.prev_running.push((9, Fate::Pending));
        long.index_prev(10);
        assert_eq!(at(&long), [None, None, None, Some(0)]);
    }

    /// A halt stops the nodes of its subtree that ran after the last tick
    /// and those that started in this one, deepest first (in pre-order
    /// backwards), whichever list each came from.
    #[test]
    fn a_halt_stops_nodes_of_both_ticks_deepest_first() {
        use super::halt::TraceEvent;
        // Pre-order: 0 :s, 1 :a, 2 :w1, 3 :b, 4 :w2.
        let text = "[:sequence {:id :s} [:sequence {:id :a} [:wait {:id :w1 :ticks 9}]] \
                    [:sequence {:id :b} [:wait {:id :w2 :ticks 9}]]]";
        let tree = compile_str("t.edn", text, &Registry::new()).unwrap();
        let options = TickOptions::default();
        let mut db = Value::map();
        let Value::Map(map) = &mut db else {
            panic!("not a map: {db}")
        };
        let mut trace = Vec::new();
        let mut engine = Engine::new(&tree, map, &options, Some(&mut trace));
        let mut long = Box::<Long>::default();
        long.forget_prev();
        // :a and :w1 ran after the last tick (:w1 again in this one); :w2
        // and then :b started in this one, noted children first.
        long.prev_running
            .extend([(1, Fate::Pending), (2, Fate::Running)]);
        long.runs_again = 1;
        long.index_prev(tree.nodes.len());
        long.note_now(4);
        long.note_now(3);
        engine.long = Some(long);
        engine.halt_subtree(0);
        let long = engine.long.take().unwrap();
        assert!(long.now_running.is_empty());
        assert!(long.prev_running.iter().all(|&(_, f)| f == Fate::Halted));
        assert_eq!(long.runs_again, 0);
        drop(engine);
        let halted: Vec<u32> = trace
            .iter()
            .filter_map(|e| match e {
                TraceEvent::Halted { node } => Some(node.0),
                TraceEvent::Ticked { .. } => None,
            })
            .collect();
        assert_eq!(halted, [4, 3, 2, 1]);
    }

    /// A tick continues its whole set when every node of it ran again
    /// and returned Running again: counted as the fates are set
    /// (`Long::runs_again`), and a node halted after it ran again no
    /// longer counts, so that the set is not left filed as unchanged.
    #[test]
    fn a_set_counts_as_running_again_only_while_no_node_of_it_is_halted() {
        use crate::tick::Status;
        // Pre-order: 0 :s, 1 :w.
        let text = "[:sequence {:id :s} [:wait {:id :w :ticks 9}]]";
        let tree = compile_str("t.edn", text, &Registry::new()).unwrap();
        let options = TickOptions::default();
        for halt in [false, true] {
            let mut db = Value::map();
            let Value::Map(map) = &mut db else {
                panic!("not a map: {db}")
            };
            let mut engine = Engine::new(&tree, map, &options, None);
            let mut long = Box::<Long>::default();
            long.forget_prev();
            long.prev_running
                .extend([(0, Fate::Pending), (1, Fate::Pending)]);
            long.index_prev(tree.nodes.len());
            long.db_names_prev = true;
            engine.long = Some(long);
            // The wait twice (a node ticked again in the same tick counts
            // once), then its sequence.
            engine.watched(1, Status::Running);
            engine.watched(1, Status::Running);
            engine.watched(0, Status::Running);
            assert_eq!(engine.long.as_ref().map(|l| l.runs_again), Some(2));
            if halt {
                engine.halt_subtree(1);
                assert_eq!(engine.long.as_ref().map(|l| l.runs_again), Some(1));
            }
            assert_eq!(engine.file_running_if_unchanged(), !halt, "halt {halt}");
            // A set left filed counts nothing: taking it over sets every
            // fate pending again.
            let long = engine.long.take().unwrap();
            assert_eq!(
                (long.filed, long.runs_again),
                (!halt, if halt { 1 } else { 0 })
            );
        }
    }

    /// A state kept as the thread's spare with its running set filed is
    /// kept as it is only when it has nothing else to empty: a journal, a
    /// parallel's depth or noted writes are emptied all the same, and the
    /// set stays filed.
    #[test]
    fn a_halt_parks_the_set_and_the_memory_in_the_threads_long_state_and_a_start_takes_them() {
        // The usual halt of a long action keeps the `:aido/running` vector
        // and the `:aido/memory` map it took out of the db in the thread's
        // long-running state (`Long::parked_running`, `Long::parked_memory`);
        // the next start of the same nodes puts those same values back
        // (the same allocations), and the slots are empty again.
        let text = "[:selector [:sequence [:present? {:key :stop}] [:success]] \
                    [:sequence {:id :s} [:wait {:id :w :ticks 9}]]]";
        let tree = compile_str("t.edn", text, &Registry::new()).unwrap();
        let parked = || {
            let long = SPARE_LONG.take();
            let found = long.as_ref().map(|l| {
                let address = |v: &Option<Value>| match v {
                    Some(Value::Vector(ids)) => Some(ids.as_ptr() as usize),
                    Some(Value::Map(map)) => Some(&**map as *const _ as usize),
                    _ => None,
                };
                (
                    l.parked_running.clone(),
                    address(&l.parked_running),
                    l.parked_memory.clone(),
                    address(&l.parked_memory),
                )
            });
            SPARE_LONG.set(long);
            found
        };
        let running = Value::Keyword(super::kw::RUNNING);
        let memory = Value::Keyword(super::kw::MEMORY);
        let mut db = crate::run_tick(Value::map(), &tree).db;
        for round in 0..3 {
            let Value::Map(map) = &mut db else {
                panic!("not a map: {db}")
            };
            let set = map.get(&running).cloned();
            assert_eq!(set, Some(crate::read_value("[\"0\" :s :w]").unwrap()));
            map.insert(Value::keyword("stop"), Value::Bool(true));
            db = crate::run_tick(db, &tree).db;
            let Value::Map(map) = &mut db else {
                panic!("not a map: {db}")
            };
            assert_eq!(map.get(&running), None, "{round}");
            assert_eq!(map.get(&memory), None, "{round}");
            let Some((Some(set_parked), Some(set_at), Some(memory_parked), Some(memory_at))) =
                parked()
            else {
                panic!("nothing parked in round {round}")
            };
            assert_eq!(Some(set_parked), set, "{round}");
            assert_eq!(
                memory_parked,
                crate::read_value("{:w {:ticks 1}}").unwrap(),
                "{round}"
            );
            map.shift_remove(&Value::keyword("stop"));
            db = crate::run_tick(db, &tree).db;
            let Value::Map(map) = &db else {
                panic!("not a map: {db}")
            };
            let Some(Value::Vector(ids)) = map.get(&running) else {
                panic!("no set in round {round}: {db}")
            };
            assert_eq!(ids.as_ptr() as usize, set_at, "{round}");
            let Some(Value::Map(state)) = map.get(&memory) else {
                panic!("no memory in round {round}: {db}")
            };
            assert_eq!(&**state as *const _ as usize, memory_at, "{round}");
            assert_eq!(parked().map(|p| (p.0, p.2)), Some((None, None)), "{round}");
        }
    }

    #[test]
    fn a_spare_kept_with_its_set_filed_is_emptied_of_anything_else() {
        for case in 0..4 {
            let mut long = Box::<Long>::default();
            long.prev_running.push((1, Fate::Running));
            long.runs_again = 1;
            long.filed = true;
            match case {
                0 => long.journal.push((1, Some(Value::Int(1)))),
                1 => long.rollback_depth = 1,
                2 => long.writes = Some(crate::tick::writes::Writes::default()),
                _ => {}
            }
            Long::recycle_quiet(long);
            let kept = SPARE_LONG.take().map(|l| {
                (
                    l.journal.len(),
                    l.rollback_depth,
                    l.writes.is_some(),
                    l.filed,
                    l.prev_running.len(),
                )
            });
            assert_eq!(kept, Some((0, 0, false, true, 1)), "case {case}");
        }
    }

    #[test]
    fn the_nodes_noted_running_in_a_tick_are_found_by_their_filed_place() {
        // Notes, finishes and halts of nodes in an order of their own,
        // against a plain list: `now_has` answers as the list does, each
        // node is in `now_running` at most once, and a later tick (the
        // list emptied) starts from nothing.
        let mut long = Box::<Long>::default();
        let mut model: Vec<u32> = Vec::new();
        let mut x = 0x9e37_79b9_u64;
        let mut next = move |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % n) as u32
        };
        for round in 0..40 {
            for _ in 0..200 {
                let node = next(64);
                match next(8) {
                    0..=3 => {
                        long.note_now(node);
                        if !model.contains(&node) {
                            model.push(node);
                        }
                    }
                    4..=6 => {
                        long.finished_again(node);
                        model.retain(|&n| n != node);
                    }
                    _ => {
                        // A halt of the nodes `from..from + 8`.
                        let from = next(64);
                        let range = from..from + 8;
                        let halted: Vec<u32> = long
                            .now_running
                            .iter()
                            .copied()
                            .filter(|n| range.contains(n))
                            .collect();
                        for n in halted {
                            long.finished_again(n);
                        }
                        model.retain(|n| !range.contains(n));
                    }
                }
                for n in 0..70 {
                    assert_eq!(
                        long.now_has(n),
                        model.contains(&n),
                        "round {round}, node {n}"
                    );
                    assert_eq!(long.runs(n), model.contains(&n), "round {round}, node {n}");
                }
                let mut now = long.now_running.clone();
                now.sort_unstable();
                let mut expected = model.clone();
                expected.sort_unstable();
                assert_eq!(now, expected, "round {round}");
            }
            // The tick ends: the list is emptied as `keep_last_running` does.
            long.keep_last_running();
            model.clear();
            assert!((0..70).all(|n| !long.now_has(n)), "round {round}");
        }
    }
}
