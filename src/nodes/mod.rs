//! The built-in node types: their specs, their lowering from options to a
//! typed [`Kind`], and the dispatch of a tick to each node's behaviour.

pub(crate) mod closure;
mod composite;
pub(crate) mod data;
mod decorators;
mod long;
mod long_path;
mod lower;
mod plain;
mod random;

pub(crate) use lower::{LowerFn, Lowering, Options, Row, is_precondition};
pub(crate) use plain::{mark_plain, mark_plain_node};

use crate::extend::{CallFn, Imp, NodeType};
use crate::spec::{Arity, OptionType};
use crate::tick::{Engine, NodeCtx, PlainPath, Status, eval};
use crate::tree::{CustomOptions, Kind, Node, Opt, Parallel, Reset};
use crate::value::Value;

/// Every built-in node type, one [`Row`] each, gathered from the family files.
pub(crate) fn builtin_types() -> Vec<NodeType> {
    [
        composite::rows(),
        decorators::rows(),
        random::rows(),
        data::rows(),
        long::rows(),
    ]
    .into_iter()
    .flatten()
    .map(Row::node_type)
    .collect()
}

/// The arities rows use most.
pub(super) const SOME: Arity = Arity::AtLeast(1);
pub(super) const ONE: Arity = Arity::Exactly(1);
pub(super) const LEAF: Arity = Arity::Exactly(0);

/// An option of a row: `(key, type, required)`.
pub(super) type OptionRow = (&'static str, OptionType, bool);

/// The leaves that finish in the tick they are visited: their tick is
/// [`Engine::leaf`], shared by both paths, and everything else the engine
/// needs to know of them follows from being listed here (see
/// [`Traits::ONE_VISIT_LEAF`]). A new leaf of this sort is a row, a `Kind`
/// variant, a name in this pattern and an arm in `Engine::leaf`.
macro_rules! one_visit_leaf {
    () => {
        Kind::Success
            | Kind::Failure
            | Kind::Present { .. }
            | Kind::Equal { .. }
            | Kind::Test { .. }
            | Kind::Define { .. }
            | Kind::Inc { .. }
            | Kind::Dissoc { .. }
            | Kind::Emit { .. }
            | Kind::Matches(_)
            | Kind::Typed(_)
    };
}
pub(crate) use one_visit_leaf;

/// What the engine needs to know of a node besides its tick, in one table
/// ([`Kind::traits`]): which interpreter may take it, whether it can run
/// long by itself, and the memory it keeps in the db.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Traits {
    /// How the plain path may take it (with plain children and no
    /// preconditions); `None`: never.
    pub(crate) plain: Option<Shape>,
    /// Whether the node itself can return Running.
    pub(crate) runs_long: bool,
    /// The memory it keeps under its id.
    pub(crate) memory: Memory,
    /// When that memory is state an edit of the tree should carry over by
    /// `:id` (`aido check`'s warning about stateful nodes without one).
    pub(crate) state: When,
}

/// The children a node needs for the plain path to take it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shape {
    /// None: a leaf.
    Leaf,
    /// Exactly one: loops and decorators.
    OneChild,
    /// At least one (an empty flow is skipped).
    Children,
}

/// The shape of a node's memory (ARCHITECTURE.md, *Long-running state*).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Memory {
    /// None.
    Nothing,
    /// `{:index i}`: a memory flow's place (run state).
    Index,
    /// `{:done [..]}`: finished children by position (run state).
    Done,
    /// `{:running i}`: a random decider's pick (run state).
    RunningPick,
    /// `{:pool [i ..]}` (persistent) and `:running` (run state).
    Pool,
    /// `{:iteration k}`: a loop's finished iterations (run state).
    Iteration,
    /// `{:ticks k}` (run state).
    Ticks,
    /// `{:launched {..}, :request n}` (run state).
    Launched,
    /// Whatever a user node type keeps; run state unless it says otherwise.
    User { persistent: bool },
    /// A decorator's count, time or status (`{:ticks k}`, `{:since t}`,
    /// `{:attempt k}`, `{:status-was s}`), naming no child: cleared by a
    /// halt unless it resets `:never` (its `:reset`, [`Reset`]).
    Decorator(Reset),
}

/// When a node keeps state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum When {
    Never,
    Always,
    /// Only over a child that can run long.
    IfLongBelow,
}

impl Traits {
    /// A leaf that finishes in one visit and keeps nothing.
    pub(crate) const ONE_VISIT_LEAF: Traits = Traits {
        plain: Some(Shape::Leaf),
        runs_long: false,
        memory: Memory::Nothing,
        state: When::Never,
    };
}

impl Kind {
    /// This node's [`Traits`]: the one table of them.
    pub(crate) fn traits(&self) -> Traits {
        let t = |plain, runs_long, memory, state| Traits {
            plain,
            runs_long,
            memory,
            state,
        };
        use Memory as M;
        use Shape::{Children, OneChild};
        match self {
            one_visit_leaf!() => Traits::ONE_VISIT_LEAF,
            Kind::Selector { memory: false } => t(Some(Children), false, M::Done, When::Never),
            Kind::Sequence { memory: false } => {
                t(Some(Children), false, M::Done, When::IfLongBelow)
            }
            Kind::Selector { memory: true } | Kind::Sequence { memory: true } => {
                t(None, false, M::Index, When::Always)
            }
            // aido's counting parallel keeps no state; with none of its
            // children able to run, it is a loop over them all.
            Kind::Parallel(Parallel::Count { .. }) => {
                t(Some(Children), false, M::Done, When::Never)
            }
            Kind::Parallel(_) => t(None, false, M::Done, When::Always),
            Kind::Loop { .. } | Kind::LoopUntilSuccess { .. } => {
                t(Some(OneChild), false, M::Iteration, When::IfLongBelow)
            }
            Kind::Invert | Kind::Always | Kind::Never => {
                t(Some(OneChild), false, M::Nothing, When::Never)
            }
            Kind::SelectorP { .. }
            | Kind::Randomly { .. }
            | Kind::Choose
            | Kind::WeightedChoice { .. } => t(None, false, M::RunningPick, When::IfLongBelow),
            Kind::ChooseEach { .. } => t(None, false, M::Pool, When::Always),
            Kind::Wait { .. } => t(None, true, M::Ticks, When::Always),
            Kind::WaitSeconds { .. } => t(None, true, M::Decorator(Reset::OnExit), When::Always),
            Kind::Force { .. } => t(Some(OneChild), false, M::Nothing, When::Never),
            Kind::Timeout { reset, .. } | Kind::Throttle { reset, .. } => {
                t(None, false, M::Decorator(*reset), When::Always)
            }
            Kind::Cooldown(c) => t(None, false, M::Decorator(c.reset), When::Always),
            Kind::Retry { reset, .. } | Kind::Repeat { reset, .. } | Kind::Delay { reset, .. } => {
                t(None, true, M::Decorator(*reset), When::Always)
            }
            Kind::RunOnce { .. } => t(None, false, M::Decorator(Reset::Never), When::Always),
            Kind::KeepRunningUntilFailure => t(None, true, M::Nothing, When::Never),
            Kind::ParallelAll { .. } => t(None, false, M::Done, When::Always),
            Kind::If | Kind::Switch(_) => t(None, false, M::Nothing, When::Never),
            Kind::Defer { .. } => t(None, true, M::Launched, When::Always),
            // A node type declared to finish in one visit is a leaf as the
            // built-in ones are; its memory, if it keeps any, is still its
            // own to declare run state or persistent.
            Kind::Custom { node_type, .. } => t(
                node_type.one_visit.then_some(Shape::Leaf),
                !node_type.one_visit,
                M::User {
                    persistent: node_type.persistent,
                },
                When::Never,
            ),
        }
    }
}

impl Engine<'_> {
    /// Ticks node `id` and returns its status.
    pub(crate) fn tick(&mut self, id: u32) -> Status {
        let tree = self.tree;
        let node = &tree.nodes[id as usize];
        if node.plain {
            // The untraced tick checks its own case first, as it did when
            // the plain path did not trace.
            if self.plain == PlainPath::Untraced {
                return self.tick_closure_apart::<false>(id);
            }
            if self.plain == PlainPath::Traced {
                return self.tick_closure_apart::<true>(id);
            }
        }
        self.fuel -= 1;
        if self.fuel == 0 {
            return self.out_of_steps(id);
        }
        if let Some(pre) = &node.pre
            && let Some(status) = self.preconditions(id, pre)
        {
            return status;
        }
        // Only composites look at their children: leaves skip the slicing.
        let kids = || tree.children_of(node);
        let status = match &node.kind {
            // A flow on the long path keeps its own bookkeeping.
            Kind::Selector { .. } if node.long_path() && self.plain == PlainPath::Untraced => {
                return self.long_flow::<false, false>(id, node);
            }
            Kind::Sequence { .. } if node.long_path() && self.plain == PlainPath::Untraced => {
                return self.long_flow::<true, false>(id, node);
            }
            Kind::Selector { memory } => self.selector::<false, false>(id, node, *memory, kids()),
            Kind::Sequence { memory } => self.sequence::<false, false>(id, node, *memory, kids()),
            Kind::SelectorP { p } => self.selector_p(id, p, kids()),
            Kind::Loop { count } => {
                self.repeat::<false, false>(id, count, kids(), composite::Repeat::LOOP)
            }
            Kind::LoopUntilSuccess { count } => {
                self.repeat::<false, false>(id, count, kids(), composite::Repeat::UNTIL_SUCCESS)
            }
            Kind::Parallel(how) => self.parallel(id, node, how, kids()),
            Kind::Randomly { p } => self.randomly(id, p, kids()),
            Kind::Choose => self.choose(id, kids()),
            Kind::ChooseEach { repeat } => self.choose_each(id, repeat, kids()),
            Kind::WeightedChoice { weights } => self.weighted_choice(id, weights, kids()),
            Kind::Invert => composite::invert(self.tick(kids()[0])),
            Kind::Always => composite::always(self.tick(kids()[0])),
            Kind::Never => composite::never(self.tick(kids()[0])),
            Kind::Wait { ticks } => self.wait(id, ticks),
            Kind::Defer {
                action,
                into,
                options,
            } => self.defer(id, *action, into.as_deref(), options),
            Kind::Custom { node_type, options } => self.custom(id, node_type, options),
            Kind::WaitSeconds { seconds } => self.wait_seconds(id, seconds),
            Kind::Timeout { period, reset } => self.timeout(id, period, *reset, kids()[0]),
            Kind::Cooldown(c) => self.cooldown(id, c, kids()[0]),
            Kind::Retry { count, reset } => self.attempts(id, count, *reset, kids()[0], true),
            Kind::Repeat { count, reset } => self.attempts(id, count, *reset, kids()[0], false),
            Kind::RunOnce { then } => self.run_once(id, *then, kids()[0]),
            Kind::Delay { period, reset } => self.delay(id, period, *reset, kids()[0]),
            Kind::Throttle { period, .. } => self.throttle(id, period, kids()[0]),
            Kind::KeepRunningUntilFailure => self.keep_running_until_failure(kids()[0]),
            Kind::Force { success } => decorators::force(self.tick(kids()[0]), *success),
            Kind::ParallelAll { max_failures } => self.parallel_all(id, max_failures, kids()),
            Kind::If => self.if_then_else(kids()),
            Kind::Switch(s) => self.switch(id, s, kids()),
            kind @ one_visit_leaf!() => self.leaf::<true>(id, kind),
        };
        self.visited(id, status)
    }

    /// The end of a general visit of node `id` that returned `status`.
    /// Watched: something ran after the last tick, or the tick is traced.
    /// (Noting the visit on the way out is as good as on the way in: the
    /// node cannot be halted while it is being ticked.)
    #[inline(always)]
    fn visited(&mut self, id: u32, status: Status) -> Status {
        if self.watch {
            self.watched(id, status);
        } else if status == Status::Running {
            self.note_running(id);
        }
        status
    }

    /// [`Engine::tick`] of `:wait` node `id` (`ticks` its count), a child of
    /// a general flow with no preconditions, in the flow's own frame: what
    /// the general visit does for it (the step, the wait, the bookkeeping
    /// of a visit) without the call, whose entry and exit cost more than a
    /// wait under way. A wait under way with a keyword id is counted where
    /// the position hints say ([`Engine::wait_counted`], `node` its node)
    /// before the general look-up of [`Engine::wait_for`].
    #[inline(always)]
    pub(super) fn tick_wait(&mut self, id: u32, node: &Node, ticks: &Opt) -> Status {
        self.fuel -= 1;
        if self.fuel == 0 {
            return self.out_of_steps(id);
        }
        let status = match self.count_opt(id, "ticks", ticks) {
            Ok(n) if self.wait_counted(node, n) => Status::Running,
            Ok(n) => self.wait_for(id, n),
            Err(status) => status,
        };
        self.visited(id, status)
    }

    /// Ticks a leaf that finishes in one visit: shared by the general and
    /// the plain path.
    #[inline(always)]
    pub(super) fn leaf<const NOTE: bool>(&mut self, id: u32, kind: &Kind) -> Status {
        match kind {
            Kind::Success => Status::Success,
            Kind::Failure => Status::Failure,
            Kind::Present { key } => Status::from_bool(key.get(self.db).is_some()),
            Kind::Equal { v1, v2 } => self.equal(id, v1, v2),
            Kind::Test { key, oper, val } => self.test(id, key, oper, val),
            Kind::Define { key, val } => self.define::<NOTE>(id, key, val),
            Kind::Inc { key } => self.inc::<NOTE>(id, key),
            Kind::Dissoc { key } => self.dissoc::<NOTE>(id, key),
            Kind::Emit { key, val, keep } => self.emit(id, key, val, keep),
            Kind::Matches(m) => self.matches(id, m),
            Kind::Typed(t) => self.typed_write(id, t),
            // Not leaves that finish in one visit: neither dispatch sends
            // them here.
            Kind::Selector { .. }
            | Kind::Sequence { .. }
            | Kind::SelectorP { .. }
            | Kind::Loop { .. }
            | Kind::LoopUntilSuccess { .. }
            | Kind::Parallel(_)
            | Kind::Randomly { .. }
            | Kind::Choose
            | Kind::ChooseEach { .. }
            | Kind::WeightedChoice { .. }
            | Kind::Invert
            | Kind::Always
            | Kind::Never
            | Kind::Custom { .. }
            | Kind::Wait { .. }
            | Kind::Defer { .. }
            | Kind::WaitSeconds { .. }
            | Kind::Timeout { .. }
            | Kind::Cooldown(_)
            | Kind::Retry { .. }
            | Kind::Repeat { .. }
            | Kind::RunOnce { .. }
            | Kind::Delay { .. }
            | Kind::Throttle { .. }
            | Kind::KeepRunningUntilFailure
            | Kind::Force { .. }
            | Kind::ParallelAll { .. }
            | Kind::If
            | Kind::Switch(_) => self.fail(id, "not a leaf node"),
        }
    }
}

impl<'t> Engine<'t> {
    /// Ticks node `id` of a user node type, whose options are `options`:
    /// one call of its node type's closure ([`CallFn`]), which makes the
    /// whole call (`Engine::user_tick`). Shared by both paths: the plain
    /// path takes a node type declared to finish in one visit, which
    /// breaks its declaration if it returns Running. Nothing is kept
    /// across the call, so that it is inlined into the composites' loops
    /// (`plain_custom`) without a register saved for it.
    #[inline(always)]
    pub(super) fn custom(
        &mut self,
        id: u32,
        node_type: &NodeType,
        options: &CustomOptions,
    ) -> Status {
        // Kept in the node (see `CustomOptions::call`), else a stub's,
        // whose call is made out of line, so that the usual one does not
        // join it again.
        match options.call() {
            Some(f) => f(self, id, options.slots()),
            None => self.call_stub(id, node_type, options),
        }
    }

    /// Ticks the tree's root, a node of user node type `node_type` declared
    /// to finish in one visit, whose options are `options`, on the usual
    /// untraced tick: its step counted and its call made from the tick's
    /// own arm (`Engine::tick_root`), without the plain path's dispatch and
    /// a closure's call. (With a default step
    /// budget the compiler then knows the step cannot run out.)
    #[inline(always)]
    pub(crate) fn custom_root(
        &mut self,
        node_type: &std::sync::Arc<NodeType>,
        options: &CustomOptions,
    ) -> Status {
        self.fuel -= 1;
        if self.fuel == 0 {
            return self.out_of_steps(0);
        }
        self.custom(0, node_type, options)
    }

    /// [`Engine::custom`] of a stub's node, whose options are built
    /// without its node type's tick (see `CustomOptions::call`): the call
    /// through the node type's closure (`stub_call`).
    #[cold]
    #[inline(never)]
    fn call_stub(&mut self, id: u32, node_type: &NodeType, options: &CustomOptions) -> Status {
        match stub_call(node_type) {
            Some(f) => f(self, id, options.slots()),
            None => self.fail(id, "built-in node type lowered as custom"),
        }
    }

    /// A user node's whole call, inside its node type's closure
    /// ([`CallFn`]), where its tick `f` is inlined: node `id`, whose
    /// declared options are `slots`, its [`NodeCtx`], one call of `f`
    /// through the panic guard, and what the call comes to
    /// ([`NodeCtx::returned`]: the usual return is one test; everything
    /// else is [`Engine::custom_result`], out of line).
    #[inline(always)]
    pub(crate) fn user_tick<F>(&mut self, id: u32, slots: &[crate::tree::Slot], f: &F) -> Status
    where
        F: Fn(&mut NodeCtx<'_, '_>) -> Result<Status, crate::extend::NodeError>,
    {
        let mut ctx = NodeCtx {
            engine: self,
            node: id,
            slots,
            db_lent: false,
        };
        // The context's address is taken only by the tick's own calls
        // (`NodeCtx::get` and `db_at` give its fields apart to theirs), so
        // that where the tick does not take it the fields stay in
        // registers and a db never handed out is not tested for. The
        // node's own error and a panic are settled out of line.
        match crate::tick::catch_quietly(|| f(&mut ctx)) {
            Ok(Ok(status)) => ctx.returned(status),
            Ok(Err(e)) => ctx.engine.custom_failed(ctx.node, e, ctx.db_lent),
            Err(panic) => ctx.engine.custom_panicked(ctx.node, panic, ctx.db_lent),
        }
    }

    /// What user node `id`'s call comes to when it returned `status` but
    /// not the usual way: the db it was handed checked, an error of its
    /// options or random draws, an error below it (its own error among
    /// them: [`NodeCtx::refused`]), a broken one-visit declaration. The
    /// node's type is found again here, so that the call keeps nothing
    /// for this in a register.
    #[cold]
    #[inline(never)]
    pub(crate) fn custom_result(&mut self, id: u32, status: Status, db_lent: bool) -> Status {
        if let Some(status) = self.custom_settled(id, db_lent) {
            return status;
        }
        let tree = self.tree;
        match (status, tree.nodes.get(id as usize).map(|n| &n.kind)) {
            // An Error below this node is not the node's to swallow.
            _ if self.error.is_some() => Status::Error,
            (Status::Running, Some(Kind::Custom { node_type, .. })) if node_type.one_visit => {
                self.ran_in_one_visit(id, node_type)
            }
            (status, _) => status,
        }
    }

    /// User node `id` panicked (`panic`): the tick's error, unless an
    /// error came first (the db it was handed, its options or draws).
    #[cold]
    #[inline(never)]
    pub(crate) fn custom_panicked(
        &mut self,
        id: u32,
        panic: Box<dyn std::any::Any + Send>,
        db_lent: bool,
    ) -> Status {
        if let Some(status) = self.custom_settled(id, db_lent) {
            return status;
        }
        let msg = crate::tick::panic_message(panic.as_ref());
        self.fail(id, format!("node panicked: {msg}"))
    }

    /// User node `id`'s tick returned `error`: the tick's error, unless an
    /// error came first (the db it was handed, its options or draws, a
    /// node below it).
    #[cold]
    #[inline(never)]
    pub(crate) fn custom_failed(
        &mut self,
        id: u32,
        error: crate::extend::NodeError,
        db_lent: bool,
    ) -> Status {
        if let Some(status) = self.custom_settled(id, db_lent) {
            return status;
        }
        self.fail(id, error.0)
    }

    /// What comes first after a user node's call: the db it was handed
    /// checked, then an error of its options or random draws, which is the
    /// tick's error (`Some(Status::Error)`).
    #[inline(always)]
    fn custom_settled(&mut self, id: u32, db_lent: bool) -> Option<Status> {
        if db_lent {
            self.check_lent_db(id);
        }
        let e = self.rng.error.take()?;
        Some(self.fail(id, e))
    }
}

/// The tick of a stub's node, whose options are built without it (see
/// `CustomOptions::call`): its node type's closure itself (`None` for a
/// built-in type).
#[inline(always)]
fn stub_call(node_type: &NodeType) -> Option<&CallFn> {
    match &node_type.imp {
        Imp::Custom(f) => Some(&***f),
        Imp::Builtin(_) => None,
    }
}

impl Engine<'_> {
    /// Node `id`, of `node_type` declared to finish in one visit, returned
    /// Running: an Error at the node, as a built-in leaf's broken contract
    /// would be, never a Running that nothing would halt.
    #[cold]
    #[inline(never)]
    fn ran_in_one_visit(&mut self, id: u32, node_type: &NodeType) -> Status {
        if self.error.is_none() {
            self.rng.error_kind = Some(crate::tick::TickErrorKind::OneVisitRunning);
        }
        self.fail(
            id,
            format!(
                "node type `{}` is declared to finish in one visit, but the node returned Running",
                node_type.name
            ),
        )
    }

    /// Resolves a non-negative integer option (a count); a constant, the
    /// usual case, is read in place without the general conversion.
    #[inline(always)]
    pub(crate) fn count_opt(&mut self, id: u32, name: &str, opt: &Opt) -> Result<u64, Status> {
        match opt {
            Opt::Const(Value::Int(n)) if *n >= 0 => Ok(*n as u64),
            _ => self.opt_as(id, name, opt, as_count, "a non-negative integer"),
        }
    }

    /// Resolves `opt`, converting its value with `convert`; any problem is an Error at `id`.
    #[inline]
    pub(crate) fn opt_as<T>(
        &mut self,
        id: u32,
        name: &str,
        opt: &Opt,
        convert: impl Fn(&Value) -> Option<T>,
        // Shown only in an error: formatted only then.
        expected: impl std::fmt::Display,
    ) -> Result<T, Status> {
        // Constants were checked by the compiler: convert them without a detour.
        if let Opt::Const(v) = opt
            && let Some(x) = convert(v)
        {
            return Ok(x);
        }
        let value = match eval(opt, self.db, &mut self.rng) {
            Ok(v) => v,
            Err(e) => {
                let e = self.rng.error.take().unwrap_or(e);
                return Err(self.fail(id, e));
            }
        };
        match convert(&value) {
            Some(x) => Ok(x),
            None => {
                let msg = format!(
                    "`:{name}` expected {expected}, found {} `{}`",
                    value.type_name(),
                    value
                );
                Err(self.fail(id, msg))
            }
        }
    }
}

/// A non-negative integer.
pub(crate) fn as_count(v: &Value) -> Option<u64> {
    match v {
        Value::Int(i) if *i >= 0 => Some(*i as u64),
        _ => None,
    }
}

/// A number from 0 to 1.
pub(crate) fn as_probability(v: &Value) -> Option<f64> {
    v.as_f64().filter(|p| (0.0..=1.0).contains(p))
}
