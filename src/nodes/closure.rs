//! The plain path: each plain node compiled into a closure.
//!
//! Most of a typical tree is conditions and actions under reactive
//! selectors, sequences and loops (see `nodes::plain`). Each plain node is
//! one closure, built once for the tree (on its first untraced tick, and
//! on its first traced tick for the traced tick's, [`Closures`]), that
//! captures what its visit reads:
//! a `:test?`'s key (with a slot hint of its own), its constant and a
//! comparison chosen by its operator; a `:define!`'s constant integer; a
//! flow's or parallel's children as closures; a loop's count; a counting
//! parallel's limit. A visit is then one indirect call, with no match on
//! the node's kind, no fetch of its node and no re-reading of its options;
//! a leaf under a loop or a decorator is inlined into its parent's
//! closure, so that its visit is not even a call, and a loop's rounds over
//! a leaf whose work is done in line (a hint's hit) make no call at all,
//! so that the loop's closure saves no registers ([`Rounds`]).
//!
//! The meaning stays where it is written: the leaves' slow ways are the
//! functions of `data.rs` (`Engine::inc`, `Engine::define`,
//! `Engine::test_missed`, [`Engine::leaf`] for the others), a domain node
//! is [`Engine::custom`], the composites are driven by the step functions of
//! `composite.rs` (`Repeat`, `Count`, `invert`, ...), their options from
//! the db resolved by its functions (`count_opt`, `count_options`). A plain
//! child answers Success, Failure or Error (never Running or Skipped), so
//! a flow's step is one comparison. Each visit counts its step and tests
//! the budget as [`Engine::visit`] does, at the same node, so that a tick
//! out of steps ends where the walk's did; below the root of a subtree
//! whose most steps are known and fit the steps left (`Guarded`), no
//! visit can spend the budget, and the visits only count their steps. The traced tick has closures
//! of its own (`TRACE`), which write each status into the trace where the
//! walk did; tests/it/plain.rs compares both with the general path.

use std::marker::PhantomData;
use std::sync::OnceLock;
use std::sync::atomic::AtomicU32;
use std::sync::atomic::Ordering::Relaxed;

use super::composite::{self, Count, Repeat};
use super::data::holds_no_heap;
use super::decorators;
use crate::spec::Operator;
use crate::tick::{Engine, Status};
use crate::tree::{KeyPath, Kind, Node, Opt, Parallel, SlotHint};
use crate::value::{Keyword, Value};

/// One plain node's visit: its step counted and tested, its work done.
pub(crate) type Visit = Box<dyn Fn(&mut Engine<'_>) -> Status + Send + Sync>;

/// A tree's closures, indexed by node: one for each plain node that is
/// entered from outside a closure (the root of a plain subtree: the tree's
/// root, or a plain child of a node that is not plain; and a child of a
/// plain `:selector` root or of a `:sequence` child of it, which the root's
/// walk visits, see `Engine::tick_plain_root`), which owns its children's;
/// `None` for the others. Built on the first untraced (or traced) tick,
/// from the tree's nodes as they then are. A clone of the tree starts
/// without them and builds its own; a tree whose nodes change
/// (`Stubs::apply`) drops them ([`Closures::reset`]).
#[derive(Default)]
pub(crate) struct Closures {
    /// The untraced tick's.
    untraced: OnceLock<Box<[Option<Visit>]>>,
    /// The traced tick's, which write each node's status into the trace.
    traced: OnceLock<Box<[Option<Visit>]>>,
}

impl Clone for Closures {
    fn clone(&self) -> Closures {
        Closures::default()
    }
}

impl std::fmt::Debug for Closures {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Closures")
            .field("untraced", &self.untraced.get().map(|table| table.len()))
            .field("traced", &self.traced.get().map(|table| table.len()))
            .finish()
    }
}

impl Closures {
    /// The table of the untraced or (`TRACE`) the traced closures.
    #[inline(always)]
    fn lock<const TRACE: bool>(&self) -> &OnceLock<Box<[Option<Visit>]>> {
        if TRACE { &self.traced } else { &self.untraced }
    }

    /// The closures of `nodes`, the tree's nodes, built on first use.
    #[inline(always)]
    fn table<const TRACE: bool>(&self, nodes: &[Node]) -> &[Option<Visit>] {
        self.lock::<TRACE>()
            .get_or_init(|| build_table::<TRACE>(nodes))
    }

    /// Drops the closures, for a tree whose nodes changed.
    pub(crate) fn reset(&mut self) {
        self.untraced = OnceLock::new();
        self.traced = OnceLock::new();
    }

    /// Whether the untraced or (`TRACE`) the traced closures are built (for
    /// the tests).
    #[cfg(test)]
    pub(crate) fn is_built<const TRACE: bool>(&self) -> bool {
        self.lock::<TRACE>().get().is_some()
    }
}

/// Counts a visit's step as `$steps` ([`Steps`]) does for node `$id`,
/// and ends the visit when it says so (node `$id` read only then).
macro_rules! step {
    ($e:ident, $id:expr, $steps:expr) => {
        match Steps::step(&$steps, $e) {
            Step::Go => {}
            Step::Spent => return $e.out_of_steps($id),
            Step::Ticked(status) => return status,
        }
    };
}

/// What counting a visit's step says.
enum Step {
    /// The visit goes on.
    Go,
    /// The visit took the budget to zero: it fails at its node, as
    /// [`Engine::visit`]'s does.
    Spent,
    /// The visit was made another way, with this status.
    Ticked(Status),
}

/// How a closure counts its visit's step.
trait Steps: Send + Sync + 'static {
    /// Counts a visit's step.
    fn step(&self, e: &mut Engine<'_>) -> Step;
}

/// The steps of the nodes below a closure's: [`Tested`] or [`Counted`].
trait Kid: Steps + Default + Copy {}

/// Each step counted and the budget tested: the visit that takes it to
/// zero fails at its node, as [`Engine::visit`]'s does.
#[derive(Default, Clone, Copy)]
struct Tested;

impl Steps for Tested {
    #[inline(always)]
    fn step(&self, e: &mut Engine<'_>) -> Step {
        e.fuel -= 1;
        if e.fuel == 0 { Step::Spent } else { Step::Go }
    }
}

impl Kid for Tested {}

/// Each step counted, the budget not tested: below a [`Guarded`] closure,
/// entered only with more steps left than its subtree can take.
#[derive(Default, Clone, Copy)]
struct Counted;

impl Steps for Counted {
    #[inline(always)]
    fn step(&self, e: &mut Engine<'_>) -> Step {
        e.fuel -= 1;
        Step::Go
    }
}

impl Kid for Counted {}

/// The root of a plain subtree that can take at most `most` steps in a
/// tick (`most_steps`): entered with more fuel than that, no visit in it
/// can take the fuel to zero, so its nodes' closures count their steps
/// without testing the budget ([`Counted`]); otherwise the subtree's
/// closure that tests it at each visit (`tested`) is ticked instead.
struct Guarded {
    most: u64,
    tested: Visit,
}

impl Steps for Guarded {
    #[inline(always)]
    fn step(&self, e: &mut Engine<'_>) -> Step {
        if e.fuel <= self.most {
            return Step::Ticked((self.tested)(e));
        }
        e.fuel -= 1;
        Step::Go
    }
}

/// The closures of the roots of the plain subtrees of `nodes`.
#[cold]
#[inline(never)]
fn build_table<const TRACE: bool>(nodes: &[Node]) -> Box<[Option<Visit>]> {
    // A plain root's walk runs in the tick's frame (`Engine::tick_plain_root`):
    // its children, and those of a `:sequence` child it inlines, are
    // entered from there.
    let walked_root = nodes
        .first()
        .filter(|root| root.plain && matches!(root.kind, Kind::Selector { .. }));
    let from_root_walk = |parent: &Node| {
        walked_root.is_some_and(|root| {
            std::ptr::eq(parent, root)
                || (parent.parent == 0 && matches!(parent.kind, Kind::Sequence { .. }))
        })
    };
    let root = |node: &Node| {
        node.plain
            && nodes.get(node.parent as usize).is_none_or(|parent| {
                !parent.plain || std::ptr::eq(parent, node) || from_root_walk(parent)
            })
    };
    (0..nodes.len())
        .map(|i| {
            let node = nodes.get(i)?;
            let id = u32::try_from(i).ok()?;
            root(node).then(|| build_root::<TRACE>(nodes, id))
        })
        .collect()
}

/// The closures of plain node `id`'s children (the pre-order layout's
/// walk: the first child after the node, each next one at the end of the
/// one before).
fn children<const TRACE: bool, K: Kid>(nodes: &[Node], id: u32, node: &Node) -> Box<[Visit]> {
    let mut kids = Vec::new();
    let mut next = id + 1;
    while next < node.subtree_end {
        let Some(kid) = nodes.get(next as usize) else {
            break;
        };
        kids.push(build::<TRACE, K>(nodes, next));
        next = kid.subtree_end;
    }
    kids.into_boxed_slice()
}

/// A leaf's work after its step: the usual case in line ([`Work::hit`]),
/// the rest the slow way ([`Work::miss`], a call out of line), so that a
/// loop over the leaf runs its rounds without a call while they hit
/// ([`Rounds`]).
trait Work: Send + Sync + 'static {
    /// The leaf's status when its work is done in line (its key's hint
    /// hit, or the filter proved the key absent); None for the slow way.
    fn hit(&self, e: &mut Engine<'_>) -> Option<Status>;

    /// The leaf's status the slow way, after [`Work::hit`] said None.
    fn miss(&self, e: &mut Engine<'_>) -> Status;
}

/// A leaf's visit: its step counted as `K` does, its work, its status
/// traced (`TRACE`).
#[inline(always)]
fn visit<K: Kid, const TRACE: bool, L: Work>(e: &mut Engine<'_>, id: u32, leaf: &L) -> Status {
    step!(e, id, K::default());
    let status = match leaf.hit(e) {
        Some(status) => status,
        None => leaf.miss(e),
    };
    e.traced::<TRACE>(id, status)
}

/// [`visit`] as far as it goes in line: None when the leaf's work must go
/// the slow way (its step counted; [`Work::miss`] and the trace are left
/// to the caller).
#[inline(always)]
fn visit_in_line<K: Kid, const TRACE: bool, L: Work>(
    e: &mut Engine<'_>,
    id: u32,
    leaf: &L,
) -> Option<Status> {
    match K::default().step(e) {
        Step::Go => {}
        Step::Spent => return Some(e.out_of_steps(id)),
        Step::Ticked(status) => return Some(status),
    }
    let status = leaf.hit(e)?;
    Some(e.traced::<TRACE>(id, status))
}

/// How a leaf's closure is wrapped: alone ([`Alone`]), or inside its
/// parent's own closure when the parent is a loop ([`Looped`]) or a
/// decorator ([`Mapped`]), so that the leaf is inlined into it and its
/// visit is not a call.
trait Wrap {
    /// The visit of leaf `id`, whose work is `leaf` and whose step is
    /// counted as `K` does, so wrapped.
    fn wrap<K: Kid, const TRACE: bool, L: Work>(self, id: u32, leaf: L) -> Visit;
}

/// A leaf's closure alone.
struct Alone;

impl Wrap for Alone {
    fn wrap<K: Kid, const TRACE: bool, L: Work>(self, id: u32, leaf: L) -> Visit {
        Box::new(move |e: &mut Engine<'_>| visit::<K, TRACE, L>(e, id, &leaf))
    }
}

/// A loop of constant count over a leaf (`LOOP`: `:loop`, else
/// `:loop-until-success`).
struct Looped<S, const LOOP: bool> {
    id: u32,
    count: u64,
    steps: S,
}

impl<S: Steps, const LOOP: bool> Wrap for Looped<S, LOOP> {
    fn wrap<K: Kid, const TRACE: bool, L: Work>(self, leaf_id: u32, leaf: L) -> Visit {
        let Looped { id, count, steps } = self;
        let rounds = Rounds::<K, L, LOOP, TRACE> {
            id,
            leaf_id,
            leaf,
            kid: PhantomData,
        };
        Box::new(move |e: &mut Engine<'_>| {
            step!(e, id, steps);
            rounds.run(e, count)
        })
    }
}

/// The rounds of loop `id` over leaf `leaf_id`: while the leaf's work is
/// done in line the rounds make no call, so the loop's closure keeps its
/// state in registers without saving any; the first round whose work goes
/// the slow way hands the rounds left to [`Rounds::run_missed`], out of
/// line.
struct Rounds<K, L, const LOOP: bool, const TRACE: bool> {
    id: u32,
    leaf_id: u32,
    leaf: L,
    /// How the leaf's step is counted.
    kid: PhantomData<K>,
}

impl<K: Kid, L: Work, const LOOP: bool, const TRACE: bool> Rounds<K, L, LOOP, TRACE> {
    /// `left` rounds, each ticking the leaf; the loop's status.
    #[inline(always)]
    fn run(&self, e: &mut Engine<'_>, mut left: u64) -> Status {
        let keep_going = keep_going::<LOOP>();
        while left != 0 {
            let Some(status) = visit_in_line::<K, TRACE, L>(e, self.leaf_id, &self.leaf) else {
                return self.run_missed(e, left);
            };
            if status != keep_going {
                return e.traced::<TRACE>(self.id, status);
            }
            left -= 1;
        }
        e.traced::<TRACE>(self.id, keep_going)
    }

    /// [`Rounds::run`] from a round whose leaf's step is counted and whose
    /// work goes the slow way, `left` rounds left with it.
    #[inline(never)]
    fn run_missed(&self, e: &mut Engine<'_>, left: u64) -> Status {
        let keep_going = keep_going::<LOOP>();
        let status = self.leaf.miss(e);
        let status = e.traced::<TRACE>(self.leaf_id, status);
        if status != keep_going {
            return e.traced::<TRACE>(self.id, status);
        }
        for _ in 1..left {
            let status = visit::<K, TRACE, L>(e, self.leaf_id, &self.leaf);
            if status != keep_going {
                return e.traced::<TRACE>(self.id, status);
            }
        }
        e.traced::<TRACE>(self.id, keep_going)
    }
}

/// A decorator over a leaf, its status mapped by `map`.
struct Mapped<S, M> {
    id: u32,
    map: M,
    steps: S,
}

impl<S: Steps, M: Fn(Status) -> Status + Send + Sync + 'static> Wrap for Mapped<S, M> {
    fn wrap<K: Kid, const TRACE: bool, L: Work>(self, leaf_id: u32, leaf: L) -> Visit {
        let Mapped { id, map, steps } = self;
        Box::new(move |e: &mut Engine<'_>| {
            step!(e, id, steps);
            let status = map(visit::<K, TRACE, L>(e, leaf_id, &leaf));
            e.traced::<TRACE>(id, status)
        })
    }
}

/// The status that ticks a loop's child again ([`Repeat::keep_going`]).
#[inline(always)]
fn keep_going<const LOOP: bool>() -> Status {
    if LOOP {
        Repeat::LOOP.keep_going
    } else {
        Repeat::UNTIL_SUCCESS.keep_going
    }
}

/// A keyword key and the position where it was last found: the usual key
/// of a data leaf, read without a test of the key path's kind. The
/// position is a guess, as a [`SlotHint`]'s is (loaded once a look-up,
/// and checked against the db); for a key the db's filter said it lacks,
/// it is 1, so that the next visit's miss, at a slot past the first that
/// the map has, asks the filter without a bounds test of its own
/// ([`Map::lacks_keyword_past`](crate::value::Map)). Anything but the
/// hit and the filter's answer goes through a [`KeyPath`] made for it
/// ([`Key::path`]), whose hint hands back where it found the key.
struct Key {
    key: Keyword,
    at: AtomicU32,
}

impl Key {
    /// The key of `path` when it is a keyword.
    fn of(path: &KeyPath) -> Option<Key> {
        match path {
            KeyPath::Kw(key, _) => Some(Key {
                key: *key,
                at: AtomicU32::new(0),
            }),
            KeyPath::One(_) | KeyPath::Path(_) => None,
        }
    }

    /// The position to look at, loaded once for the look-up.
    #[inline(always)]
    fn at(&self) -> usize {
        self.at.load(Relaxed) as usize
    }

    /// The db's filter said the key is absent: the next visits look at
    /// slot 1 (see [`Key`]).
    #[inline(always)]
    fn lacked(&self) {
        self.at.store(1, Relaxed);
    }

    /// Runs `f` with the key as a key path, and keeps the position where
    /// the key then is, when its hint found or put it there.
    #[inline(always)]
    fn path<R>(&self, e: &mut Engine<'_>, f: impl FnOnce(&mut Engine<'_>, &KeyPath) -> R) -> R {
        let hint = SlotHint::default();
        hint.remember(Some(self.at()));
        let path = KeyPath::Kw(self.key, hint);
        let result = f(e, &path);
        if let KeyPath::Kw(_, hint) = &path
            && let Some(at) = hint.hit(e.db, self.key)
        {
            self.at.store(u32::try_from(at).unwrap_or(0), Relaxed);
        }
        result
    }
}

/// A leaf that answers one status (`FAILURE`: Failure, else Success).
struct Answer<const FAILURE: bool>;

impl<const FAILURE: bool> Work for Answer<FAILURE> {
    #[inline(always)]
    fn hit(&self, _: &mut Engine<'_>) -> Option<Status> {
        Some(Status::from_bool(!FAILURE))
    }

    #[inline(always)]
    fn miss(&self, _: &mut Engine<'_>) -> Status {
        Status::from_bool(!FAILURE)
    }
}

/// A leaf whose work is all the slow way: `f`, a call.
struct Slow<F>(F);

impl<F: Fn(&mut Engine<'_>) -> Status + Send + Sync + 'static> Work for Slow<F> {
    #[inline(always)]
    fn hit(&self, _: &mut Engine<'_>) -> Option<Status> {
        None
    }

    #[inline(always)]
    fn miss(&self, e: &mut Engine<'_>) -> Status {
        (self.0)(e)
    }
}

/// A `:present?` of a keyword.
struct Present {
    key: Key,
}

impl Work for Present {
    #[inline(always)]
    fn hit(&self, e: &mut Engine<'_>) -> Option<Status> {
        let at = self.key.at();
        if e.db.keyword_value_at(at, self.key.key).is_some() {
            return Some(Status::Success);
        }
        if e.db.lacks_keyword_past(at, self.key.key) {
            return Some(Status::Failure);
        }
        None
    }

    #[inline(always)]
    fn miss(&self, e: &mut Engine<'_>) -> Status {
        present_missed(e, &self.key)
    }
}

/// A `:test?` of a keyword against constant integer `b`, its comparison
/// `holds` inlined.
struct TestInt<F> {
    id: u32,
    key: Key,
    oper: Operator,
    b: i64,
    holds: F,
}

impl<F: Fn(i64, i64) -> bool + Send + Sync + 'static> Work for TestInt<F> {
    #[inline(always)]
    fn hit(&self, e: &mut Engine<'_>) -> Option<Status> {
        let at = self.key.at();
        if let Some(Value::Int(a)) = e.db.keyword_value_at(at, self.key.key) {
            return Some(Status::from_bool((self.holds)(*a, self.b)));
        }
        if e.db.lacks_keyword_past(at, self.key.key) {
            return Some(Status::Failure);
        }
        None
    }

    #[inline(always)]
    fn miss(&self, e: &mut Engine<'_>) -> Status {
        test_missed(e, self.id, &self.key, self.oper, self.b)
    }
}

/// An `:inc!` of a keyword.
struct Inc {
    id: u32,
    key: Key,
}

impl Work for Inc {
    #[inline(always)]
    fn hit(&self, e: &mut Engine<'_>) -> Option<Status> {
        if let Some(Value::Int(i)) = e.db.keyword_value_at_mut(self.key.at(), self.key.key)
            && let Some(next) = i.checked_add(1)
        {
            *i = next;
            return Some(Status::Success);
        }
        None
    }

    #[inline(always)]
    fn miss(&self, e: &mut Engine<'_>) -> Status {
        inc_missed(e, self.id, &self.key)
    }
}

/// A `:define!` of a keyword to constant integer `n` (`val`).
struct DefineInt {
    id: u32,
    key: Key,
    n: i64,
    val: Opt,
}

impl Work for DefineInt {
    #[inline(always)]
    fn hit(&self, e: &mut Engine<'_>) -> Option<Status> {
        if let Some(slot) = e.db.keyword_value_at_mut(self.key.at(), self.key.key)
            && holds_no_heap(slot)
        {
            std::mem::forget(std::mem::replace(slot, Value::Int(self.n)));
            return Some(Status::Success);
        }
        None
    }

    #[inline(always)]
    fn miss(&self, e: &mut Engine<'_>) -> Status {
        define_missed(e, self.id, &self.key, &self.val)
    }
}

/// The leaf's closure of plain node `id` wrapped by `wrap`, when it is a
/// leaf with a closure of its own.
fn leaf<W: Wrap, K: Kid, const TRACE: bool>(node: &Node, id: u32, wrap: W) -> Result<Visit, W> {
    Ok(match &node.kind {
        Kind::Success => wrap.wrap::<K, TRACE, _>(id, Answer::<false>),
        Kind::Failure => wrap.wrap::<K, TRACE, _>(id, Answer::<true>),
        Kind::Present { key: path } => match Key::of(path) {
            Some(key) => wrap.wrap::<K, TRACE, _>(id, Present { key }),
            None => {
                let path = path.clone();
                wrap.wrap::<K, TRACE, _>(
                    id,
                    Slow(move |e: &mut Engine<'_>| Status::from_bool(path.get(e.db).is_some())),
                )
            }
        },
        Kind::Test { key, oper, val } => match (Key::of(key), val) {
            (Some(key), Opt::Const(Value::Int(b))) => {
                let (oper, b) = (*oper, *b);
                match oper {
                    Operator::Lt => test_by::<W, K, _, TRACE>(wrap, id, key, oper, b, |a, b| a < b),
                    Operator::Le => {
                        test_by::<W, K, _, TRACE>(wrap, id, key, oper, b, |a, b| a <= b)
                    }
                    Operator::Gt => test_by::<W, K, _, TRACE>(wrap, id, key, oper, b, |a, b| a > b),
                    Operator::Ge => {
                        test_by::<W, K, _, TRACE>(wrap, id, key, oper, b, |a, b| a >= b)
                    }
                    Operator::Eq => {
                        test_by::<W, K, _, TRACE>(wrap, id, key, oper, b, |a, b| a == b)
                    }
                    Operator::NotEq => {
                        test_by::<W, K, _, TRACE>(wrap, id, key, oper, b, |a, b| a != b)
                    }
                }
            }
            _ => {
                let (path, oper, val) = (key.clone(), *oper, val.clone());
                wrap.wrap::<K, TRACE, _>(
                    id,
                    Slow(move |e: &mut Engine<'_>| e.test_missed(id, &path, oper, &val)),
                )
            }
        },
        Kind::Inc { key: path } => match Key::of(path) {
            Some(key) => wrap.wrap::<K, TRACE, _>(id, Inc { id, key }),
            None => {
                let path = path.clone();
                wrap.wrap::<K, TRACE, _>(
                    id,
                    Slow(move |e: &mut Engine<'_>| e.inc::<false>(id, &path)),
                )
            }
        },
        Kind::Define { key: path, val } => match (Key::of(path), val) {
            (Some(key), Opt::Const(Value::Int(n))) => {
                let (n, val) = (*n, val.clone());
                wrap.wrap::<K, TRACE, _>(id, DefineInt { id, key, n, val })
            }
            _ => {
                let (path, val) = (path.clone(), val.clone());
                wrap.wrap::<K, TRACE, _>(
                    id,
                    Slow(move |e: &mut Engine<'_>| e.define::<false>(id, &path, &val)),
                )
            }
        },
        // The other leaves that finish in one visit: their tick as the
        // walk's, from a clone of their kind.
        kind @ (Kind::Equal { .. }
        | Kind::Dissoc { .. }
        | Kind::Emit { .. }
        | Kind::Matches(_)
        | Kind::Typed(_)) => {
            let kind = kind.clone();
            wrap.wrap::<K, TRACE, _>(
                id,
                Slow(move |e: &mut Engine<'_>| e.leaf::<false>(id, &kind)),
            )
        }
        // A domain node declared to finish in one visit: its call.
        Kind::Custom { node_type, options } => {
            let (node_type, options) = (node_type.clone(), options.clone());
            wrap.wrap::<K, TRACE, _>(
                id,
                Slow(move |e: &mut Engine<'_>| e.custom(id, &node_type, &options)),
            )
        }
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
        | Kind::Switch(_) => return Err(wrap),
    })
}

/// A `:present?` whose key's hint missed: [`KeyPath::get`]'s slow way.
#[cold]
#[inline(never)]
fn present_missed(e: &mut Engine<'_>, key: &Key) -> Status {
    if e.db.lacks_keyword(key.key) {
        key.lacked();
        return Status::Failure;
    }
    key.path(e, |e, path| {
        Status::from_bool(path.get_slow(e.db).is_some())
    })
}

/// An `:inc!` whose key's hint missed, or whose value is not an integer
/// that can be counted up: [`Engine::inc`]'s slow way.
#[cold]
#[inline(never)]
fn inc_missed(e: &mut Engine<'_>, id: u32, key: &Key) -> Status {
    key.path(e, |e, path| e.inc::<false>(id, path))
}

/// A `:define!` whose key's hint missed, or whose slot holds a value to
/// drop: [`Engine::define`]'s slow way.
#[cold]
#[inline(never)]
fn define_missed(e: &mut Engine<'_>, id: u32, key: &Key, val: &Opt) -> Status {
    key.path(e, |e, path| e.define::<false>(id, path, val))
}

/// A `:test?` whose key's hint missed, or whose value is not an integer:
/// [`Engine::test`]'s slow way.
#[cold]
#[inline(never)]
fn test_missed(e: &mut Engine<'_>, id: u32, key: &Key, oper: Operator, b: i64) -> Status {
    if e.db.lacks_keyword(key.key) {
        key.lacked();
        return Status::Failure;
    }
    let val = Opt::Const(Value::Int(b));
    key.path(e, |e, path| e.test_missed(id, path, oper, &val))
}

/// A `:test?` against constant integer `b`, its comparison `holds`
/// inlined into the closure.
#[inline(always)]
fn test_by<W: Wrap, K: Kid, F: Fn(i64, i64) -> bool + Send + Sync + 'static, const TRACE: bool>(
    wrap: W,
    id: u32,
    key: Key,
    oper: Operator,
    b: i64,
    holds: F,
) -> Visit {
    wrap.wrap::<K, TRACE, _>(
        id,
        TestInt {
            id,
            key,
            oper,
            b,
            holds,
        },
    )
}

/// The closure of plain node `id` and of its subtree, entered from
/// outside a closure: a composite whose subtree's most steps are known
/// ([`most_steps`]) and at least [`GUARDED_FROM`] is [`Guarded`], its subtree's closures [`Counted`]
/// (with the [`Tested`] ones kept for a tick short of steps); any other
/// node's closures are [`Tested`].
fn build_root<const TRACE: bool>(nodes: &[Node], id: u32) -> Visit {
    let tested = build::<TRACE, Tested>(nodes, id);
    match nodes.get(id as usize) {
        Some(node) if is_composite(&node.kind) => match most_steps(nodes, id) {
            Some(most) if most >= GUARDED_FROM => {
                build_with::<TRACE, Counted, _>(nodes, id, Guarded { most, tested })
            }
            Some(_) | None => tested,
        },
        _ => tested,
    }
}

/// The fewest most steps of a [`Guarded`] subtree: its test on entering
/// costs more than a step's test, each visit below it saves one, and a
/// smaller subtree does not repay it (npc's `:loop` of 3 over an `:inc!`,
/// 4 steps, so guarded: npc 509.9 → 510.9 instructions a tick).
const GUARDED_FROM: u64 = 8;

/// Whether `kind` is a plain composite, which has a closure of its own
/// over its children's (the others plain are `leaf`'s).
fn is_composite(kind: &Kind) -> bool {
    matches!(
        kind,
        Kind::Selector { memory: false }
            | Kind::Sequence { memory: false }
            | Kind::Parallel(Parallel::Count { .. })
            | Kind::Loop { .. }
            | Kind::LoopUntilSuccess { .. }
            | Kind::Invert
            | Kind::Always
            | Kind::Never
            | Kind::Force { .. }
    )
}

/// The most steps plain node `id`'s subtree can take in one visit of it:
/// one a node, its loops' children's times their constant counts; `None`
/// for a loop whose count comes from the db, or a sum that does not fit.
/// A domain node takes its one step (a node type is plain only as a
/// one-visit leaf).
pub(crate) fn most_steps(nodes: &[Node], id: u32) -> Option<u64> {
    let node = nodes.get(id as usize)?;
    let below = match &node.kind {
        Kind::Loop { .. } | Kind::LoopUntilSuccess { .. } => {
            if node.count == Node::NO_COUNT {
                return None;
            }
            most_steps(nodes, id + 1)?.checked_mul(u64::from(node.count))?
        }
        _ if is_composite(&node.kind) => {
            let mut sum = 0u64;
            let mut next = id + 1;
            while next < node.subtree_end {
                sum = sum.checked_add(most_steps(nodes, next)?)?;
                next = nodes.get(next as usize)?.subtree_end;
            }
            sum
        }
        _ => 0,
    };
    below.checked_add(1)
}

/// The closure of plain node `id` and of its subtree, each node's step
/// counted as `K` does.
fn build<const TRACE: bool, K: Kid>(nodes: &[Node], id: u32) -> Visit {
    build_with::<TRACE, K, K>(nodes, id, K::default())
}

/// The closure of plain node `id` and of its subtree: a leaf's step
/// counted as `K` does; a composite's own as `steps` does, its
/// children's as `K`.
fn build_with<const TRACE: bool, K: Kid, S: Steps>(nodes: &[Node], id: u32, steps: S) -> Visit {
    let Some(node) = nodes.get(id as usize) else {
        return Box::new(move |e: &mut Engine<'_>| e.fail(id, "not a plain node"));
    };
    if let Ok(visit) = leaf::<_, K, TRACE>(node, id, Alone) {
        return visit;
    }
    match &node.kind {
        Kind::Selector { memory: false } => {
            flow::<false, TRACE, _>(id, steps, children::<TRACE, K>(nodes, id, node))
        }
        Kind::Sequence { memory: false } => {
            flow::<true, TRACE, _>(id, steps, children::<TRACE, K>(nodes, id, node))
        }
        Kind::Parallel(Parallel::Count { mode, how_many }) => {
            let kids = children::<TRACE, K>(nodes, id, node);
            match Count::known(node.count) {
                Some(limit) => Box::new(move |e: &mut Engine<'_>| {
                    step!(e, id, steps);
                    let mut failures = 0u64;
                    for kid in kids.iter() {
                        if let Some(status) = Count::resume_plain(&mut failures, kid(e)) {
                            return e.traced::<TRACE>(id, status);
                        }
                    }
                    e.traced::<TRACE>(id, Count::end(failures, limit))
                }),
                // Options from the db, resolved on each visit; the limit
                // is worked out from the children, as the walk does.
                None => {
                    let (mode, how_many) = (mode.clone(), how_many.clone());
                    let n = u64::from(node.children.1.saturating_sub(node.children.0));
                    Box::new(move |e: &mut Engine<'_>| {
                        step!(e, id, steps);
                        let count = match e.count_options(id, &mode, &how_many) {
                            Ok(count) => count,
                            Err(status) => return e.traced::<TRACE>(id, status),
                        };
                        let mut failures = 0u64;
                        for kid in kids.iter() {
                            if let Some(status) = Count::resume_plain(&mut failures, kid(e)) {
                                return e.traced::<TRACE>(id, status);
                            }
                        }
                        e.traced::<TRACE>(id, Count::end(failures, count.limit(n)))
                    })
                }
            }
        }
        Kind::Loop { count } => repeat::<true, TRACE, K, _>(nodes, id, node, count, steps),
        Kind::LoopUntilSuccess { count } => {
            repeat::<false, TRACE, K, _>(nodes, id, node, count, steps)
        }
        Kind::Invert => decorator::<_, TRACE, K, _>(nodes, id, steps, composite::invert),
        Kind::Always => decorator::<_, TRACE, K, _>(nodes, id, steps, composite::always),
        Kind::Never => decorator::<_, TRACE, K, _>(nodes, id, steps, composite::never),
        Kind::Force { success: true } => {
            decorator::<_, TRACE, K, _>(nodes, id, steps, |s| decorators::force(s, true))
        }
        Kind::Force { success: false } => {
            decorator::<_, TRACE, K, _>(nodes, id, steps, |s| decorators::force(s, false))
        }
        // Never plain (`Kind::traits`), so never here; the leaves are
        // `leaf`'s.
        Kind::Selector { memory: true }
        | Kind::Sequence { memory: true }
        | Kind::Parallel(_)
        | Kind::SelectorP { .. }
        | Kind::Randomly { .. }
        | Kind::Choose
        | Kind::ChooseEach { .. }
        | Kind::WeightedChoice { .. }
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
        | Kind::ParallelAll { .. }
        | Kind::If
        | Kind::Switch(_)
        | Kind::Success
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
        | Kind::Custom { .. } => Box::new(move |e: &mut Engine<'_>| e.fail(id, "not a plain node")),
    }
}

/// A selector (`SEQUENCE` false) or sequence of node `id` over `kids`,
/// its step counted as `steps` does: a plain child answers Success,
/// Failure or Error, so the flow's step ([`composite::Flow::resume`]) is
/// one comparison.
fn flow<const SEQUENCE: bool, const TRACE: bool, S: Steps>(
    id: u32,
    steps: S,
    kids: Box<[Visit]>,
) -> Visit {
    Box::new(move |e: &mut Engine<'_>| {
        step!(e, id, steps);
        let next = if SEQUENCE {
            composite::Flow::SEQUENCE.next
        } else {
            composite::Flow::SELECTOR.next
        };
        for kid in kids.iter() {
            let status = kid(e);
            if status != next {
                return e.traced::<TRACE>(id, status);
            }
        }
        e.traced::<TRACE>(id, next)
    })
}

/// A loop of node `id` (`LOOP`: `:loop`, else `:loop-until-success`) over
/// its one child, its step counted as `steps` does and its child's as `K`
/// does: a constant count with a leaf child inlined into it; a count from
/// the db resolved on each visit.
fn repeat<const LOOP: bool, const TRACE: bool, K: Kid, S: Steps>(
    nodes: &[Node],
    id: u32,
    node: &Node,
    count: &Opt,
    steps: S,
) -> Visit {
    let known = (node.count != Node::NO_COUNT).then_some(u64::from(node.count));
    let steps = match (known, nodes.get(id as usize + 1)) {
        (Some(count), Some(child)) => {
            match leaf::<_, K, TRACE>(child, id + 1, Looped::<S, LOOP> { id, count, steps }) {
                Ok(visit) => return visit,
                Err(looped) => looped.steps,
            }
        }
        _ => steps,
    };
    let child = build::<TRACE, K>(nodes, id + 1);
    match known {
        Some(count) => Box::new(move |e: &mut Engine<'_>| {
            step!(e, id, steps);
            let keep_going = keep_going::<LOOP>();
            for _ in 0..count {
                let status = child(e);
                if status != keep_going {
                    return e.traced::<TRACE>(id, status);
                }
            }
            e.traced::<TRACE>(id, keep_going)
        }),
        None => {
            let count = count.clone();
            Box::new(move |e: &mut Engine<'_>| {
                step!(e, id, steps);
                let count = match e.count_opt(id, "count", &count) {
                    Ok(n) => n,
                    Err(status) => return e.traced::<TRACE>(id, status),
                };
                let keep_going = keep_going::<LOOP>();
                for _ in 0..count {
                    let status = child(e);
                    if status != keep_going {
                        return e.traced::<TRACE>(id, status);
                    }
                }
                e.traced::<TRACE>(id, keep_going)
            })
        }
    }
}

/// A decorator of node `id` over its one child, its status mapped by
/// `map`, its step counted as `steps` does and its child's as `K` does: a
/// leaf child is inlined into it.
fn decorator<
    M: Fn(Status) -> Status + Copy + Send + Sync + 'static,
    const TRACE: bool,
    K: Kid,
    S: Steps,
>(
    nodes: &[Node],
    id: u32,
    steps: S,
    map: M,
) -> Visit {
    let steps = match nodes.get(id as usize + 1) {
        Some(child) => {
            match leaf::<_, K, TRACE>(child, id + 1, Mapped::<S, M> { id, map, steps }) {
                Ok(visit) => return visit,
                Err(mapped) => mapped.steps,
            }
        }
        None => steps,
    };
    let child = build::<TRACE, K>(nodes, id + 1);
    Box::new(move |e: &mut Engine<'_>| {
        step!(e, id, steps);
        let status = map(child(e));
        e.traced::<TRACE>(id, status)
    })
}

impl Engine<'_> {
    /// Ticks plain node `id`, entered from outside a closure: its closure
    /// (`TRACE`: the traced tick's), built with the others on the tree's
    /// first tick of that kind.
    #[inline(always)]
    pub(crate) fn tick_closure<const TRACE: bool>(&mut self, id: u32) -> Status {
        let tree = self.tree;
        if let Some(table) = tree.closures.lock::<TRACE>().get()
            && let Some(Some(visit)) = table.get(id as usize)
        {
            return visit(self);
        }
        self.tick_closure_first::<TRACE>(id)
    }

    /// [`Engine::tick_closure`] out of line: the general path's entry into
    /// a plain subtree (a plain child of a general node, the dispatch of a
    /// plain node), so that the general visit's code does not hold the
    /// closure's call.
    #[inline(never)]
    pub(crate) fn tick_closure_apart<const TRACE: bool>(&mut self, id: u32) -> Status {
        self.tick_closure::<TRACE>(id)
    }

    /// [`Engine::tick_closure`] before the closures are built (they are
    /// built here), or of a plain node inside a plain subtree, which its
    /// parent's closure visits: never entered from outside it by the
    /// engine; a closure built for the visit, should it be.
    #[cold]
    #[inline(never)]
    fn tick_closure_first<const TRACE: bool>(&mut self, id: u32) -> Status {
        let tree = self.tree;
        match tree.closures.table::<TRACE>(&tree.nodes).get(id as usize) {
            Some(Some(visit)) => visit(self),
            _ => build::<TRACE, Tested>(&tree.nodes, id)(self),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::tick::{TickOptions, run_tick, run_tick_with_options};
    use crate::{Registry, Value, compile_str};

    /// The closures are built on the first untraced tick, not by the
    /// compiler or a traced tick; a clone of a ticked tree builds its own.
    #[test]
    fn the_closures_are_built_on_the_first_untraced_tick() {
        let text = "[:selector [:loop {:count 2} [:inc! {:key :n}]] [:success]]";
        let tree = compile_str("t.edn", text, &Registry::new()).unwrap();
        assert!(!tree.closures.is_built::<false>());
        let traced = TickOptions {
            trace: true,
            ..TickOptions::default()
        };
        let t = run_tick_with_options(Value::map(), &tree, &traced);
        assert!(!tree.closures.is_built::<false>());
        let u = run_tick(Value::map(), &tree);
        assert!(tree.closures.is_built::<false>());
        assert_eq!((t.status, &t.db, t.steps), (u.status, &u.db, u.steps));
        let clone = tree.clone();
        assert!(!clone.closures.is_built::<false>());
        assert_eq!(run_tick(Value::map(), &clone).db, u.db);
        assert!(clone.closures.is_built::<false>());
    }

    /// A traced tick builds and ticks the traced closures (not the
    /// untraced ones), which write the general path's trace, event by
    /// event: a flow, a decorator and a loop over leaves inlined into them.
    #[test]
    fn a_traced_tick_builds_and_traces_through_the_traced_closures() {
        let text = "[:selector [:sequence [:present? {:key :x}] [:success]] \
                    [:invert [:inc! {:key :n}]] [:loop {:count 2} [:inc! {:key :m}]]]";
        let tree = compile_str("t.edn", text, &Registry::new()).unwrap();
        let traced = TickOptions {
            trace: true,
            ..TickOptions::default()
        };
        let t = run_tick_with_options(Value::map(), &tree, &traced);
        assert!(tree.closures.is_built::<true>());
        assert!(!tree.closures.is_built::<false>());
        let g = crate::tick::run_tick_general_path(Value::map(), &tree, &traced);
        assert_eq!(t.trace().len(), 8);
        assert_eq!(
            (t.status, &t.db, t.steps, t.trace()),
            (g.status, &g.db, g.steps, g.trace())
        );
    }

    /// A plain `:selector` root's walk enters the children it does not
    /// inline (a `:sequence` child's loop is) through closures of their
    /// own, and with every step budget, traced or not, the tick ends as
    /// the general path's.
    #[test]
    fn a_selector_roots_walk_enters_its_other_children_by_their_closures() {
        let text = "[:selector [:sequence [:present? {:key :x}] [:invert [:inc! {:key :n}]]] \
                    [:loop {:count 2} [:inc! {:key :m}]] [:success]]";
        let tree = compile_str("t.edn", text, &Registry::new()).unwrap();
        run_tick(Value::map(), &tree);
        let table = tree.closures.table::<false>(&tree.nodes);
        let entered: Vec<usize> = (0..table.len()).filter(|&i| table[i].is_some()).collect();
        // The root, its children and its sequence's: not the leaves under
        // the invert and the loop, which are inlined into their closures.
        assert_eq!(entered, [0, 1, 2, 3, 5, 7]);
        for trace in [false, true] {
            for step_budget in 1..=10 {
                let options = TickOptions {
                    trace,
                    step_budget,
                    ..TickOptions::default()
                };
                let t = run_tick_with_options(Value::map(), &tree, &options);
                let g = crate::tick::run_tick_general_path(Value::map(), &tree, &options);
                assert_eq!(
                    (t.status, &t.db, t.steps, t.trace()),
                    (g.status, &g.db, g.steps, g.trace()),
                    "budget {step_budget}, traced {trace}"
                );
            }
        }
    }

    /// A plain subtree's most steps: one a node, a constant loop's
    /// child's times its count; no bound for a loop whose count comes from
    /// the db, or for a product that does not fit.
    #[test]
    fn a_subtrees_most_steps_count_each_node_times_its_loops() {
        let most = |text: &str| {
            let tree = compile_str("t.edn", text, &Registry::new()).unwrap();
            super::most_steps(&tree.nodes, 0)
        };
        assert_eq!(most("[:inc! {:key :n}]"), Some(1));
        assert_eq!(most("[:sequence [:success] [:invert [:failure]]]"), Some(4));
        assert_eq!(
            most("[:loop {:count 3} [:selector [:failure] [:loop {:count 2} [:success]]]]"),
            Some(1 + 3 * (1 + 1 + (1 + 2)))
        );
        assert_eq!(
            most("[:parallel {:mode :success :how-many 1} [:success] [:always [:failure]]]"),
            Some(4)
        );
        assert_eq!(most("[:loop {:count [:aido/db :k]} [:success]]"), None);
        let deep = (0..8).fold("[:success]".to_string(), |child, _| {
            format!("[:loop {{:count 4000000000}} {child}]")
        });
        assert_eq!(most(&deep), None);
    }

    /// A miss at slot `at` asks the filter only past slot 0 and inside the
    /// map, and then answers as `Map::lacks_keyword` does: maps with no
    /// room, room for one, and several keys, each key present and absent.
    #[test]
    fn the_filter_past_a_missed_slot_answers_as_lacks_keyword() {
        use crate::value::{Keyword, Map};
        let keys: Vec<Keyword> = ["a", "b", "c", "d", "e"].map(Keyword::new).to_vec();
        for n in 0..=4 {
            let mut map = Map::new();
            for (i, k) in keys.iter().take(n).enumerate() {
                map.insert(Value::Keyword(*k), Value::Int(i as i64));
            }
            for key in &keys {
                for at in 0..=map.capacity() + 1 {
                    let past = at != 0 && at < map.capacity();
                    assert_eq!(
                        map.lacks_keyword_past(at, *key),
                        past && map.lacks_keyword(*key),
                        "{n} keys, {key} at {at}"
                    );
                    if n > 0 && keys[..n].contains(key) {
                        assert!(!map.lacks_keyword_past(at, *key));
                    }
                }
            }
        }
    }

    /// A leaf root keeps its visit in the tick: no closures are built.
    #[test]
    fn a_leaf_root_builds_no_closures() {
        let tree = compile_str("t.edn", "[:inc! {:key :n}]", &Registry::new()).unwrap();
        assert_eq!(run_tick(Value::map(), &tree).steps, 1);
        assert!(!tree.closures.is_built::<false>());
        let traced = TickOptions {
            trace: true,
            ..TickOptions::default()
        };
        assert_eq!(run_tick_with_options(Value::map(), &tree, &traced).steps, 1);
        assert!(!tree.closures.is_built::<true>());
    }
}
