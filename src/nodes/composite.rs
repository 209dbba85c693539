//! Selector, sequence, loops, parallel and decorators: the one place their
//! meaning is written, for both interpreters.
//!
//! The composites here are generic over `PLAIN` (see [`Engine::visit`]): the
//! general path's instance ticks each child through [`Engine::tick`] and
//! keeps node memory, halting and skipping; the plain path's ticks a leaf
//! child in place, and there every branch of that bookkeeping is behind
//! `!PLAIN`, so it compiles away (a plain child returns only Success,
//! Failure or Error, and a plain composite has nothing to keep or halt).
//! `TRACE` says whether the plain path writes the trace as it goes; the
//! general path's instance passes `false` (it traces in [`Engine::tick`]).
//!
//! Selectors and sequences are reactive by default (BehaviorTree.CPP's
//! ReactiveFallback and ReactiveSequence): every tick starts again from the
//! first child, and when a child stops them (Running or Failure for a
//! sequence, Running or Success for a selector) every later child that is
//! still running from an earlier tick is halted. With `{:memory true}` they
//! resume from the child that was running (SequenceWithMemory), keeping its
//! index in node memory. Skipped children are passed over; a sequence with
//! a skipped child (and none failed or running) is Skipped, a selector only
//! when every child was. Error always goes straight up.

use crate::tick::{Engine, PlainPath, Status};
use crate::tree::{CountMode, Node, Opt, Parallel};
use crate::value::{Map, Value, kw};

use super::{Lowering, ONE, OptionRow, Row, SOME};
use crate::diag::Code;
use crate::spec::OptionType;
use crate::tree::Kind;

/// The rows of the flows, loops, the parallel and the decorators.
pub(super) fn rows() -> Vec<Row> {
    use OptionType as T;
    const MEMORY: &[OptionRow] = &[("memory", T::Flag, false)];
    const COUNT: &[OptionRow] = &[("count", T::Count, true)];
    vec![
        Row::new(
            "selector",
            "Ticks its children in order until one succeeds or runs; fails if all fail. With :memory true it resumes at the child that was running.",
            SOME,
            MEMORY,
            |l| {
                Some(Kind::Selector {
                    memory: l.flag("memory"),
                })
            },
        ),
        Row::new(
            "sequence",
            "Ticks its children in order until one fails or runs; succeeds if all succeed. With :memory true it resumes at the child that was running.",
            SOME,
            MEMORY,
            |l| {
                Some(Kind::Sequence {
                    memory: l.flag("memory"),
                })
            },
        ),
        Row::new(
            "loop",
            "Ticks its child up to :count times while it succeeds; returns the first other status, else success.",
            ONE,
            COUNT,
            |l| {
                Some(Kind::Loop {
                    count: l.take("count"),
                })
            },
        ),
        Row::new(
            "loop-until-success",
            "Ticks its child up to :count times while it fails; returns the first other status, else failure.",
            ONE,
            COUNT,
            |l| {
                Some(Kind::LoopUntilSuccess {
                    count: l.take("count"),
                })
            },
        ),
        Row::new(
            "parallel",
            "Ticks every child; decides by :mode and :how-many, by :policy, or by success and failure thresholds.",
            SOME,
            &[
                ("mode", T::OneOf(&["success", "failure"]), false),
                ("how-many", T::Count, false),
                ("policy", T::OneOf(&["sequence", "selector"]), false),
                ("success-threshold", T::Count, false),
                ("failure-threshold", T::Count, false),
            ],
            |l| Some(Kind::Parallel(lower_parallel(l))),
        ),
        Row::new(
            "invert",
            "Success becomes failure and failure success.",
            ONE,
            &[],
            |_| Some(Kind::Invert),
        ),
        Row::new(
            "always",
            "Its child's status, with failure turned into success.",
            ONE,
            &[],
            |_| Some(Kind::Always),
        ),
        Row::new(
            "never",
            "Its child's status, with success turned into failure.",
            ONE,
            &[],
            |_| Some(Kind::Never),
        ),
    ]
}

/// Checks that a `:parallel` uses exactly one way of deciding, and builds it.
fn lower_parallel(l: &mut Lowering<'_, '_>) -> Parallel {
    let constant_count = |l: &Lowering<'_, '_>, key: &str| match l.opts.peek(key) {
        Some(Opt::Const(Value::Int(n))) => Some((*n).max(0) as u64),
        _ => None,
    };
    // Given at all, valid or not: a bad value was reported already.
    let has = |l: &Lowering<'_, '_>, key: &str| l.opts.given(key);
    let count = has(l, "mode") || has(l, "how-many");
    let policy = has(l, "policy");
    let thresholds = has(l, "success-threshold") || has(l, "failure-threshold");
    let forms = usize::from(count) + usize::from(policy) + usize::from(thresholds);
    if forms != 1 {
        l.error(
            Code::MissingOption,
            if forms == 0 {
                "`:parallel` needs `:mode` and `:how-many`, or `:policy`, or `:success-threshold`/`:failure-threshold`".to_owned()
            } else {
                "`:parallel` takes one way of deciding: `:mode` and `:how-many`, or `:policy`, or thresholds, not several".to_owned()
            },
            None,
        );
    }
    let n_children = l.n_children;
    for key in ["how-many", "success-threshold", "failure-threshold"] {
        if let Some(n) = constant_count(l, key)
            && n as usize > n_children
        {
            let at = l.opts.span_of(key);
            l.error(
                Code::BadOptionValue,
                format!("`:{key}` is {n} but the node has only {n_children} children"),
                at,
            );
        }
    }
    if policy {
        return match l.take("policy") {
            Opt::Const(Value::Keyword(k)) if k.as_str() == "selector" => Parallel::Selector,
            _ => Parallel::Sequence,
        };
    }
    if thresholds {
        let success = l.take("success-threshold");
        let failure = l.take("failure-threshold");
        let constant = |opt: &Opt| match opt {
            Opt::Const(Value::Int(n)) => Some(Some((*n).max(0) as u64)),
            Opt::Const(Value::Nil) => Some(None),
            _ => None,
        };
        return match (constant(&success), constant(&failure)) {
            (Some(success), Some(failure)) => Parallel::Thresholds { success, failure },
            _ => Parallel::DynamicThresholds(Box::new([success, failure])),
        };
    }
    if count && !(has(l, "mode") && has(l, "how-many")) {
        let missing = if has(l, "mode") { ":how-many" } else { ":mode" };
        l.error(
            Code::MissingOption,
            format!("`:parallel` with `:mode`/`:how-many` needs both: `{missing}` is missing"),
            None,
        );
    }
    // By the keywords' codes: reading a keyword's text takes the
    // interner's lock.
    let mode = match l.take("mode") {
        Opt::Const(Value::Keyword(kw::FAILURE)) => CountMode::Failures,
        Opt::Const(Value::Keyword(kw::SUCCESS)) => CountMode::Successes,
        other => CountMode::Dynamic(other),
    };
    Parallel::Count {
        mode,
        how_many: l.take("how-many"),
    }
}

/// `:invert`: the child's Success is Failure and its Failure Success;
/// anything else goes up as it is.
#[inline(always)]
pub(super) fn invert(child: Status) -> Status {
    match child {
        Status::Success => Status::Failure,
        Status::Failure => Status::Success,
        other => other,
    }
}

/// `:always`: the child's Failure is Success; anything else goes up as it is.
#[inline(always)]
pub(super) fn always(child: Status) -> Status {
    match child {
        Status::Failure => Status::Success,
        other => other,
    }
}

/// `:never`: the child's Success is Failure; anything else goes up as it is.
#[inline(always)]
pub(super) fn never(child: Status) -> Status {
    match child {
        Status::Success => Status::Failure,
        other => other,
    }
}

/// How a selector and a sequence differ: which status moves on to the next child.
///
/// With [`Repeat`], [`Count`] and the decorators' status maps ([`invert`],
/// [`always`], [`never`], `decorators::force`), this is one of the step
/// functions that say what a composite means, once for both interpreters:
/// a composite starts by visiting its first child, and each child's status
/// is handed to its `resume`, which says whether to go on to the next child
/// (or the same one again) or what the composite's status is. The
/// functions below drive them in their loops, for both paths; the general
/// path's instance adds the bookkeeping only it does (node memory, halting,
/// skipped and running children).
#[derive(Clone, Copy)]
pub(super) struct Flow {
    /// The status that moves on (Failure for a selector, Success for a sequence).
    pub(super) next: Status,
}

impl Flow {
    /// A selector: its children in order until one does not fail.
    pub(super) const SELECTOR: Flow = Flow {
        next: Status::Failure,
    };
    /// A sequence: its children in order until one does not succeed.
    pub(super) const SEQUENCE: Flow = Flow {
        next: Status::Success,
    };

    /// A child answered `child`: `None` goes on to the next child (the
    /// status that moves on, or Skipped, which is passed over), else the
    /// flow's status.
    #[inline(always)]
    pub(super) fn resume(self, child: Status) -> Option<Status> {
        if child == self.next || child == Status::Skipped {
            None
        } else {
            Some(child)
        }
    }

    /// Every child moved on: the flow's status (Skipped aside, which only
    /// the general path meets).
    #[inline(always)]
    pub(super) fn end(self) -> Status {
        self.next
    }
}

/// `:loop` (`keep_going` Success) and `:loop-until-success` (Failure) as
/// step functions (see [`Flow`]).
#[derive(Clone, Copy)]
pub(super) struct Repeat {
    /// The status that ticks the child again.
    pub(super) keep_going: Status,
}

impl Repeat {
    /// `:loop`.
    pub(super) const LOOP: Repeat = Repeat {
        keep_going: Status::Success,
    };
    /// `:loop-until-success`.
    pub(super) const UNTIL_SUCCESS: Repeat = Repeat {
        keep_going: Status::Failure,
    };

    /// Before iteration `done` (0-based) of `count`: `None` ticks the child,
    /// else the loop's status (all iterations done).
    #[inline(always)]
    pub(super) fn start(self, done: u64, count: u64) -> Option<Status> {
        (done >= count).then_some(self.keep_going)
    }

    /// The child answered `child` in iteration `done - 1`: `None` ticks it
    /// again, else the loop's status (the first other status, or
    /// `keep_going` once `count` iterations are done).
    #[inline(always)]
    pub(super) fn resume(self, child: Status, done: u64, count: u64) -> Option<Status> {
        if child != self.keep_going {
            Some(child)
        } else {
            self.start(done, count)
        }
    }
}

/// aido's counting parallel as a step function (see [`Flow`]): what it
/// counts and how many it needs. Only failures are counted, in the
/// parallel's loop: a child that answered neither Error nor Skipped and did
/// not fail succeeded (Running counts as succeeded), so that the successes
/// are the children counted less the failures, and the parallel's status
/// is one comparison of its failures with a limit ([`Count::limit`]),
/// worked out when compiled for constant options ([`Node::count`]).
#[derive(Clone, Copy)]
pub(super) struct Count {
    pub(super) counted: Counted,
    pub(super) how_many: u64,
}

impl Count {
    /// The count of options `counted` and `how_many`.
    pub(super) fn new(counted: Counted, how_many: u64) -> Count {
        Count { counted, how_many }
    }

    /// The limit of a parallel whose [`Node::count`] is `packed`: `None`
    /// when its options are not constants that fit (`Node::NO_COUNT`).
    #[inline(always)]
    pub(super) fn known(packed: u32) -> Option<u64> {
        (packed != Node::NO_COUNT).then_some(u64::from(packed))
    }

    /// With `n` children counted (not skipped), the parallel succeeds when
    /// fewer than this many failed: `:mode :success` needs `:how-many` of
    /// the `n` to succeed, so at most `n - how-many` to fail; `:mode
    /// :failure` fails when `:how-many` failed.
    #[inline(always)]
    pub(super) fn limit(self, n: u64) -> u64 {
        match self.counted {
            Counted::Successes => (n + 1).saturating_sub(self.how_many),
            Counted::Failures => self.how_many,
        }
    }

    /// A child answered `child`: `None` goes on to the next child (every
    /// child is ticked), `Some(Error)` ends the parallel at once. Of the
    /// statuses a child goes on with (Success, Failure, Running, Skipped)
    /// only Failure's has its low bit set: a test and an add a child,
    /// without a branch on the status.
    #[inline(always)]
    pub(super) fn resume(failures: &mut u64, child: Status) -> Option<Status> {
        if child == Status::Error {
            return Some(Status::Error);
        }
        *failures += u64::from(child as u8 & 1);
        None
    }

    /// [`Count::resume`] with Success and Failure, what a plain child
    /// answers but for Error, told apart by one test (their codes are 0
    /// and 1, the failures' count): the other statuses as `resume` counts
    /// them.
    #[inline(always)]
    pub(super) fn resume_plain(failures: &mut u64, child: Status) -> Option<Status> {
        if child as u8 <= Status::Failure as u8 {
            *failures += u64::from(child as u8);
            return None;
        }
        Count::resume(failures, child)
    }

    /// Every child answered, `failures` of them failing: the parallel's
    /// status against its limit (a parallel whose children were all
    /// skipped is Skipped, which only the general path meets).
    #[inline(always)]
    pub(super) fn end(failures: u64, limit: u64) -> Status {
        Status::from_bool(failures < limit)
    }
}

/// The children of a composite from a given index on, each with its index,
/// id and node. The general path reads them from the child table; the plain
/// path walks the pre-order layout (first child at the composite's id + 1,
/// the next at the previous one's `subtree_end`), which the compiler checked
/// for every plain node.
pub(super) struct Children<'t, 'k, const PLAIN: bool> {
    /// The tree's nodes; on the plain path only up to the end of the
    /// composite's subtree, so that the fetch of a child's node is also the
    /// check that the children are done.
    pub(super) nodes: &'t [Node],
    /// The child table's entries (general path).
    kids: &'k [u32],
    /// The index of the next child.
    i: usize,
    /// Plain path: the id of the next child.
    next: u32,
}

impl<'t, 'k, const PLAIN: bool> Children<'t, 'k, PLAIN> {
    /// The children of node `id` (`node`) from index `start` on (the plain
    /// path always starts at 0), `all` being the tree's nodes or, on the
    /// plain path, any slice of them from the root that holds `node`'s
    /// subtree (a plain selector's, for a sequence inlined into its loop:
    /// the same base, so its loop needs no register of its own for it).
    #[inline(always)]
    pub(super) fn new(
        all: &'t [Node],
        id: u32,
        node: &Node,
        kids: &'k [u32],
        start: usize,
    ) -> Self {
        let nodes = if PLAIN {
            // Cut at the subtree's end (which the compiler checked lies
            // within the tree), the base left as it is: a slice taken with
            // `get` picks another base when out of range, which is a new
            // value for the loop to keep.
            let end = (node.subtree_end as usize).min(all.len());
            all.get(..end).unwrap_or(all)
        } else {
            all
        };
        Children {
            nodes,
            kids,
            i: start,
            next: id + 1,
        }
    }

    /// Plain path: the children of a flow from child `first` on, up to
    /// (not including) node `end`, which is where its subtree ends or one
    /// of its children, with all the tree's nodes `all`: as
    /// [`Children::new`], the fetch of a child's node is the check that
    /// they are done.
    #[inline(always)]
    pub(super) fn until(all: &'t [Node], first: u32, end: u32) -> Self {
        let end = (end as usize).min(all.len());
        Children {
            nodes: all.get(..end).unwrap_or(all),
            kids: &[],
            i: 0,
            next: first,
        }
    }

    /// The next child. The plain path reads the one after it (its
    /// subtree's end) at once, so that the loop keeps only that id across
    /// the child's visit.
    #[inline(always)]
    pub(super) fn next(&mut self) -> Option<(usize, u32, &'t Node)> {
        let i = self.i;
        let (child, node) = if PLAIN {
            let child = self.next;
            let node = self.nodes.get(child as usize)?;
            self.next = node.subtree_end;
            (child, node)
        } else {
            let child = *self.kids.get(i)?;
            (child, &self.nodes[child as usize])
        };
        self.i = i + 1;
        Some((i, child, node))
    }

    /// Plain path: the id after the last child returned (where its
    /// subtree ends), which tells that child apart from its siblings.
    #[inline(always)]
    pub(super) fn after_last(&self) -> u32 {
        self.next
    }
}

impl<'t> Engine<'t> {
    /// A selector: its children in order until one does not fail.
    /// `kids` is the child table's slice on the general path; the plain path
    /// passes none (see [`Children`]).
    #[inline(always)]
    pub(super) fn selector<const PLAIN: bool, const TRACE: bool>(
        &mut self,
        id: u32,
        node: &Node,
        memory: bool,
        kids: &[u32],
    ) -> Status {
        let flow = Flow::SELECTOR;
        if !PLAIN && memory {
            self.flow::<true, false, false>(id, node, kids, flow)
        } else {
            self.flow::<false, PLAIN, TRACE>(id, node, kids, flow)
        }
    }

    /// A sequence: its children in order until one does not succeed.
    /// `kids` as for [`Engine::selector`].
    #[inline(always)]
    pub(super) fn sequence<const PLAIN: bool, const TRACE: bool>(
        &mut self,
        id: u32,
        node: &Node,
        memory: bool,
        kids: &[u32],
    ) -> Status {
        let flow = Flow::SEQUENCE;
        if !PLAIN && memory {
            self.flow::<true, false, false>(id, node, kids, flow)
        } else {
            self.flow::<false, PLAIN, TRACE>(id, node, kids, flow)
        }
    }

    /// The loop shared by selectors and sequences: each child in turn; one
    /// whose status is `flow.next` moves on (and, on the general path, one
    /// that was skipped), any other status is the composite's; when all
    /// moved on, `flow.next` is. `MEMORY` picks the resuming variant,
    /// `PLAIN` the plain path's instance (constants, so the reactive and
    /// the plain instance carry no trace of what they leave out).
    ///
    /// A reactive composite that is still running marks, in node memory
    /// (`{:done [nil :success ..]}`, run state), the children that were
    /// running after the last tick (or, ticked again within one tick,
    /// earlier in it) and have since finished with the status that moves
    /// on. A sequence does not tick a marked child again until it
    /// finishes or is halted, so a finished action is not started over;
    /// a marked child that is a reactive sequence is ticked again (its
    /// conditions are guards), and, kept by its parent
    /// ([`Engine::kept_by_parent`]), reads and keeps its own marks. A
    /// selector ticks every child again (a higher-priority branch may take
    /// over); a marked child that runs again while a later one was running
    /// is reported (see [`crate::tick::TickWarning`]). Children that finish in the
    /// tick they are ticked (conditions) are checked every tick.
    ///
    /// Skipped children are passed over. A sequence with a skipped child and
    /// none that failed or runs is Skipped; a selector is Skipped only when
    /// every child was.
    #[inline(always)]
    fn flow<const MEMORY: bool, const PLAIN: bool, const TRACE: bool>(
        &mut self,
        id: u32,
        node: &Node,
        kids: &[u32],
        flow: Flow,
    ) -> Status {
        let tree = self.tree;
        self.flow_within::<MEMORY, PLAIN, TRACE>(id, node, kids, flow, &tree.nodes)
    }

    /// [`Engine::tick`] of general node `id` (`node`), a `:sequence`
    /// (`SEQUENCE`) or `:selector` without memory or preconditions, a child
    /// of a general flow: the step, the flow and the bookkeeping of a
    /// visit ([`Engine::visited`]), called from the parent's loop without
    /// the general dispatch (the node fetched again, its plain flag and
    /// preconditions tested, its kind matched) and without the frame of
    /// [`Engine::tick`], which saves every register its many arms need.
    #[inline(never)]
    fn tick_flow<const SEQUENCE: bool>(&mut self, id: u32, node: &'t Node) -> Status {
        self.fuel -= 1;
        if self.fuel == 0 {
            return self.out_of_steps(id);
        }
        let tree = self.tree;
        let kids = tree.children_of(node);
        let flow = if SEQUENCE {
            Flow::SEQUENCE
        } else {
            Flow::SELECTOR
        };
        let status = self.flow_within::<false, false, false>(id, node, kids, flow, &tree.nodes);
        self.visited(id, status)
    }

    /// A plain `:sequence` inlined into a flow's loop (see
    /// [`Engine::visit_inlining`]): its children are fetched from `all`,
    /// the nodes the flow's own loop fetches from (see [`Children::new`]),
    /// so that the inlined loop shares the flow's base rather than loading
    /// the tree's nodes again and keeping them on the stack.
    #[inline(always)]
    pub(super) fn sequence_within<const TRACE: bool>(
        &mut self,
        id: u32,
        node: &Node,
        all: &'t [Node],
    ) -> Status {
        self.flow_within::<false, true, TRACE>(id, node, &[], Flow::SEQUENCE, all)
    }

    /// [`Engine::flow`], its children fetched from `all` (see
    /// [`Children::new`]).
    #[inline(always)]
    fn flow_within<const MEMORY: bool, const PLAIN: bool, const TRACE: bool>(
        &mut self,
        id: u32,
        node: &Node,
        kids: &[u32],
        flow: Flow,
        all: &'t [Node],
    ) -> Status {
        let (start, mut any_skipped) = if MEMORY {
            match self.resume_state(id, kids.len()) {
                Ok(state) => state,
                Err(status) => return status,
            }
        } else {
            (0, false)
        };
        let sequence = flow.next == Status::Success;
        // Only a composite that was running (or a reactive sequence that its
        // parent keeps as finished, see `Engine::kept_by_parent`) can have
        // marked children, and only a child that can run (not plain) and
        // did not run in the last tick can be marked: node memory is looked
        // at for those alone, and whether the composite keeps marks is
        // worked out only when a child needs it, so a composite whose
        // running child goes on pays little.
        let mut keeps: Option<bool> = if MEMORY { Some(false) } else { None };
        let mut all_skipped = true;
        let mut children = Children::<PLAIN>::new(all, id, node, kids, start);
        while let Some((i, child, kid)) = children.next() {
            // A plain child of a general flow: it returns Success, Failure
            // or Error (never Running or Skipped), was not running and is
            // never marked, so only its status is looked at.
            if !MEMORY && !PLAIN && kid.plain {
                let status = if sequence {
                    self.visit::<false, false>(child, kid)
                } else {
                    self.visit_inlining::<false, false, true>(child, kid, children.nodes)
                };
                if status == flow.next {
                    all_skipped = false;
                    continue;
                }
                if status == Status::Error {
                    return Status::Error;
                }
                return self.flow_ended::<false>(id, kids, i, keeps, sequence, status);
            }
            let can_run = !MEMORY && !PLAIN && !kid.plain;
            let child_was_running = can_run && self.was_running(child);
            let mut marked = false;
            if can_run
                && !child_was_running
                && *keeps.get_or_insert_with(|| self.keeps_marks(id, sequence))
            {
                match self.kept_status(id, i, kids.len()) {
                    // A sequence keeps its finished children's Success. A
                    // finished reactive sequence is ticked again (its
                    // conditions are guards to check), with its own marks
                    // keeping its finished children; any other child would
                    // start over, so it is kept as it is.
                    Ok(Some(_)) if sequence && !is_reactive_sequence(kid) => {
                        all_skipped = false;
                        continue;
                    }
                    Ok(Some(_)) if sequence => {}
                    // A selector checks its children again every tick, so
                    // that a higher-priority branch can take over; a mark
                    // only says that this one ran and failed.
                    Ok(Some(_)) => marked = true,
                    Ok(None) => {}
                    Err(status) => return status,
                }
            }
            // A plain selector's plain sequence children are inlined into
            // its loop (see `Engine::visit_inlining`); a `:wait` child of a
            // general flow is visited in place (see `Engine::tick_wait`).
            let status = match &kid.kind {
                Kind::Wait { ticks } if !PLAIN && kid.pre.is_none() => {
                    self.tick_wait(child, kid, ticks)
                }
                Kind::Sequence { memory: false } if !PLAIN && !kid.plain && kid.pre.is_none() => {
                    if kid.long_path() && self.plain == PlainPath::Untraced {
                        self.long_flow::<true, true>(child, kid)
                    } else {
                        self.tick_flow::<true>(child, kid)
                    }
                }
                Kind::Selector { memory: false } if !PLAIN && !kid.plain && kid.pre.is_none() => {
                    if kid.long_path() && self.plain == PlainPath::Untraced {
                        self.long_flow::<false, true>(child, kid)
                    } else {
                        self.tick_flow::<false>(child, kid)
                    }
                }
                _ if PLAIN && !sequence => {
                    self.visit_inlining::<PLAIN, TRACE, true>(child, kid, children.nodes)
                }
                _ => self.visit::<PLAIN, TRACE>(child, kid),
            };
            if marked
                && status == Status::Running
                && let Err(status) = self.restarted(id, kids, i)
            {
                return status;
            }
            // A plain child is never Skipped (nor Running): only
            // `flow.next` moves on, one test, and any other status is the
            // flow's (a plain composite has nothing to halt or keep).
            if PLAIN {
                if status == flow.next {
                    continue;
                }
                return status;
            }
            let Some(decided) = flow.resume(status) else {
                if status == Status::Skipped {
                    any_skipped = true;
                    continue;
                }
                all_skipped = false;
                if child_was_running
                    && *keeps.get_or_insert_with(|| self.keeps_marks(id, sequence))
                    && let Err(e) = self.keep_done(id, i, kids.len(), flow.next)
                {
                    return self.fail(id, e);
                }
                continue;
            };
            match decided {
                Status::Error => return Status::Error,
                Status::Running => {
                    self.halt_children_after(kids, i);
                    if MEMORY && let Err(e) = self.set_resume_state(id, i, any_skipped) {
                        return self.fail(id, e);
                    }
                    return Status::Running;
                }
                decided => {
                    return self.flow_ended::<MEMORY>(id, kids, i, keeps, sequence, decided);
                }
            }
        }
        let skipped = !PLAIN && ((all_skipped && start == 0) || (sequence && any_skipped));
        // Kept by its parent, a sequence that succeeds keeps its marks.
        if !PLAIN
            && ((MEMORY && start > 0) || (!MEMORY && self.marks_maybe(id, keeps)))
            && let Err(e) = self.end_marks::<MEMORY>(id, kids, sequence, !skipped)
        {
            return self.fail(id, e);
        }
        if skipped { Status::Skipped } else { flow.end() }
    }

    /// Flow `id` is decided by its child `i` with `decided`, a status that
    /// ends it (neither Running nor Error): the children after `i` are
    /// halted, and its marks go (resetAllChildren), with those of the
    /// finished children it kept. `decided`, or Error if the marks could
    /// not be cleared.
    #[inline(always)]
    pub(super) fn flow_ended<const MEMORY: bool>(
        &mut self,
        id: u32,
        kids: &[u32],
        i: usize,
        keeps: Option<bool>,
        sequence: bool,
        decided: Status,
    ) -> Status {
        self.halt_children_after(kids, i);
        if (MEMORY || self.marks_maybe(id, keeps))
            && let Err(e) = self.end_marks::<MEMORY>(id, kids, sequence, false)
        {
            return self.fail(id, e);
        }
        decided
    }

    /// Child `i` of reactive selector `id` ran and failed since the selector
    /// began running, and runs again: its mark goes, and if a later child
    /// was running (and is now halted) the tick reports it. Two long-running
    /// children that take turns this way loop for ever.
    #[cold]
    #[inline(never)]
    fn restarted(&mut self, id: u32, kids: &[u32], i: usize) -> Result<(), Status> {
        let n = kids.len();
        let mut done = self
            .memory(id)
            .and_then(|m| read_done(m, n))
            .unwrap_or_else(|| vec![None; n]);
        done[i] = None;
        let state = done.iter().any(Option::is_some).then(|| done_value(&done));
        if let Err(e) = self.set_memory(id, state) {
            return Err(self.fail(id, e));
        }
        let tree = self.tree;
        let halted: Vec<Value> = kids[i + 1..]
            .iter()
            .filter(|&&k| self.was_running(k))
            .map(|&k| tree.nodes[k as usize].id.clone())
            .collect();
        if !halted.is_empty() {
            let warning = crate::tick::TickWarning::RunningChildChanged {
                node: tree.nodes[id as usize].id.clone(),
                restarted: tree.nodes[kids[i] as usize].id.clone(),
                halted,
            };
            self.long_state().warnings.push(warning);
        }
        Ok(())
    }

    /// A flow that finished (or, `MEMORY`, finished a round past its first
    /// child) drops its memory, and a reactive sequence the marks of the
    /// finished children it kept; but a reactive sequence that succeeded
    /// (`succeeded`) and that its parent keeps as finished keeps its marks.
    #[inline(never)]
    pub(super) fn end_marks<const MEMORY: bool>(
        &mut self,
        id: u32,
        kids: &[u32],
        sequence: bool,
        succeeded: bool,
    ) -> Result<(), String> {
        if !MEMORY && sequence && succeeded && self.kept_by_parent(id) {
            return Ok(());
        }
        self.set_memory(id, None)?;
        if !MEMORY && sequence {
            self.clear_kept_below(id, kids);
        }
        Ok(())
    }

    /// Reactive sequence `id` ends (finishes, not kept by its parent): the
    /// reactive sequences below it that it kept as finished, and that kept
    /// their own finished children, drop those marks (run state). Nodes
    /// running now keep theirs (only a counting parallel ends with a child
    /// running).
    #[inline]
    fn clear_kept_below(&mut self, id: u32, kids: &[u32]) {
        let tree = self.tree;
        let nested = kids.iter().any(|&k| {
            let kid = &tree.nodes[k as usize];
            !kid.plain && is_reactive_sequence(kid)
        });
        if nested {
            self.clear_marks_in(id + 1, tree.nodes[id as usize].subtree_end);
        }
    }

    #[cold]
    #[inline(never)]
    fn clear_marks_in(&mut self, start: u32, end: u32) {
        let tree = self.tree;
        self.wrote(kw::MEMORY);
        let long = self.long.as_deref();
        let key = Value::Keyword(kw::MEMORY);
        let Some(Value::Map(memory)) = self.db.get_mut(&key) else {
            return;
        };
        memory.retain(|node_id, _| {
            tree.find(node_id).is_none_or(|n| {
                !((start..end).contains(&n.0)
                    && is_reactive_sequence(&tree.nodes[n.index()])
                    && !long.is_some_and(|l| l.runs_now(n.0)))
            })
        });
        if memory.is_empty() {
            self.db.shift_remove(&key);
        }
    }

    /// Whether reactive composite `id` keeps marks of finished children (and
    /// so reads them): it was running, or (`sequence`) its parent keeps it
    /// as finished. Nothing is kept while nothing runs.
    #[inline]
    pub(super) fn keeps_marks(&self, id: u32, sequence: bool) -> bool {
        self.long.is_some() && self.keeps_marks_while_running(id, sequence)
    }

    /// [`Engine::keeps_marks`] once something runs or ran: out of line, so
    /// that the flows' usual answer (nothing runs) is one test.
    #[inline(never)]
    fn keeps_marks_while_running(&self, id: u32, sequence: bool) -> bool {
        self.was_running(id) || (sequence && self.kept_by_parent(id))
    }

    /// Whether the parent of reactive sequence `id` keeps it as finished, or
    /// will, should it finish now: the parent is a reactive sequence that
    /// keeps marks (it was running, or its own parent keeps it), and `id`
    /// was running or is marked there. Such a sequence keeps the marks of
    /// its own finished children, so that ticked again (its conditions are
    /// guards) it does not start them over.
    #[cold]
    #[inline(never)]
    fn kept_by_parent(&self, id: u32) -> bool {
        let tree = self.tree;
        let node = &tree.nodes[id as usize];
        let Some(parent) = tree.nodes.get(node.parent as usize) else {
            return false;
        };
        if !is_reactive_sequence(parent) || self.long.is_none() {
            return false;
        }
        let marked = || {
            self.memory(node.parent)
                .and_then(|m| m.get(&Value::Keyword(kw::DONE)))
                .and_then(Value::as_seq)
                .and_then(|done| done.get(node.index_in_parent as usize))
                .is_some_and(|d| !d.is_nil())
        };
        (self.was_running(id) || marked())
            && (self.was_running(node.parent) || self.kept_by_parent(node.parent))
    }

    /// Whether reactive composite `id` may have marks to clear: it was
    /// running (`keeps`, if already worked out).
    #[inline]
    pub(super) fn marks_maybe(&self, id: u32, keeps: Option<bool>) -> bool {
        keeps.unwrap_or_else(|| self.was_running(id))
    }

    /// Whether `node` runs as its last visit left it: it ended the last
    /// tick Running, or returned Running earlier in this tick, and neither
    /// finished nor was halted since (see `Long::runs`). Inlined, the usual
    /// answer (nothing runs or ran: no long-running state) is one test.
    #[inline(always)]
    pub(crate) fn was_running(&self, node: u32) -> bool {
        match self.long.as_deref() {
            Some(long) => long.runs(node),
            None => false,
        }
    }

    /// The status reactive composite `id` keeps for its child `i`, if any.
    fn kept_status(&mut self, id: u32, i: usize, n: usize) -> Result<Option<Status>, Status> {
        let Some(memory) = self.memory(id) else {
            return Ok(None);
        };
        match read_done(memory, n) {
            Some(done) => Ok(done[i]),
            None => {
                let msg =
                    format!("node memory {memory} is not {{:done [..]}} with one entry per child");
                Err(self.fail(id, msg))
            }
        }
    }

    /// Keeps `status` for child `i` of reactive composite `id`.
    pub(super) fn keep_done(
        &mut self,
        id: u32,
        i: usize,
        n: usize,
        status: Status,
    ) -> Result<(), String> {
        let mut done = self
            .memory(id)
            .and_then(|m| read_done(m, n))
            .unwrap_or_else(|| vec![None; n]);
        done[i] = Some(status);
        self.set_memory(id, Some(done_value(&done)))
    }

    /// Where a memory composite resumes (the index in its memory, or 0) and
    /// whether a child was skipped before it in this round.
    fn resume_state(&mut self, id: u32, n: usize) -> Result<(usize, bool), Status> {
        let Some(memory) = self.memory(id) else {
            return Ok((0, false));
        };
        let skipped = memory.get(&Value::Keyword(kw::SKIPPED)) == Some(&Value::Bool(true));
        match memory
            .get(&Value::Keyword(kw::INDEX))
            .and_then(Value::as_int)
        {
            Some(i) if i >= 0 && (i as usize) < n => Ok((i as usize, skipped)),
            _ => {
                let msg = format!("node memory {memory} is not {{:index i}} with i below {n}");
                Err(self.fail(id, msg))
            }
        }
    }

    fn set_resume_state(&mut self, id: u32, i: usize, skipped: bool) -> Result<(), String> {
        if i == 0 {
            return self.set_memory(id, None);
        }
        let mut m = Map::default();
        m.insert(Value::Keyword(kw::INDEX), Value::Int(i as i64));
        if skipped {
            m.insert(Value::Keyword(kw::SKIPPED), Value::Bool(true));
        }
        self.set_memory(id, Some(Value::Map(Box::new(m))))
    }

    /// `:loop` ([`Repeat::LOOP`]: stops at the first status that is not
    /// Success) and `:loop-until-success` ([`Repeat::UNTIL_SUCCESS`]). While the
    /// child runs, the iterations finished so far are node memory
    /// (`{:iteration k}`, run state): the next tick goes on with iteration
    /// k + 1 rather than starting over. Finishing clears it. On the plain
    /// path (`PLAIN`, `kids` empty) the child cannot run, so there is no
    /// iteration to keep.
    #[inline(always)]
    pub(super) fn repeat<const PLAIN: bool, const TRACE: bool>(
        &mut self,
        id: u32,
        count: &Opt,
        kids: &[u32],
        repeat: Repeat,
    ) -> Status {
        self.repeat_over::<PLAIN, TRACE, false>(id, count, Node::NO_COUNT, kids, repeat)
    }

    /// [`Engine::repeat`], with `ACTION` (plain path only) saying whether
    /// the child is an action to tick in a loop of its own, and `known` the
    /// loop node's [`Node::count`] (plain path only: the general path passes
    /// [`Node::NO_COUNT`]).
    #[inline(always)]
    fn repeat_over<const PLAIN: bool, const TRACE: bool, const ACTION: bool>(
        &mut self,
        id: u32,
        count: &Opt,
        known: u32,
        kids: &[u32],
        repeat: Repeat,
    ) -> Status {
        // A constant count, worked out when the tree was compiled, is one
        // comparison; anything else is resolved as the general path does.
        let count = if PLAIN && known != Node::NO_COUNT {
            u64::from(known)
        } else {
            match self.count_opt(id, "count", count) {
                Ok(n) => n,
                Err(status) => return status,
            }
        };
        let start = match if PLAIN { None } else { self.memory(id) } {
            None => 0,
            Some(memory) => match memory
                .get(&Value::Keyword(kw::ITERATION))
                .and_then(Value::as_int)
            {
                Some(k) if k > 0 => k as u64,
                _ => {
                    let msg =
                        format!("node memory {memory} is not {{:iteration k}} with k above 0");
                    return self.fail(id, msg);
                }
            },
        };
        let tree = self.tree;
        let child = if PLAIN { id + 1 } else { kids[0] };
        let node = &tree.nodes[child as usize];
        // `i`: the iterations finished. Nothing but the visit and the step
        // is in the loop, so the plain instance keeps `i` and `count` in
        // registers across its leaf child's code.
        let mut i = start;
        let status = match (repeat.start(i, count), PLAIN && ACTION, &node.kind) {
            (Some(status), _, _) => status,
            // A plain loop over an action (the usual loop: `:inc!` or
            // `:define!` done `count` times) ticks it in a loop of its own,
            // its kind matched once (see `Engine::repeat_action`); the
            // plain path keeps no iteration. `ACTION` (`mark_plain`'s
            // choice, made when the tree was compiled) leaves these arms
            // out of every other loop's instance. The traced instance
            // takes it too: the action's code is inlined into the loop
            // (`#[inline(always)]` on the closure; left to itself, the
            // traced action stayed a call each iteration).
            (None, true, Kind::Inc { key }) => self.repeat_action::<TRACE>(
                child,
                count,
                repeat,
                #[inline(always)]
                |e| e.inc::<TRACE>(child, key),
            ),
            (None, true, Kind::Define { key, val }) => self.repeat_action::<TRACE>(
                child,
                count,
                repeat,
                #[inline(always)]
                |e| e.define::<TRACE>(child, key, val),
            ),
            // A plain loop over a `:test?` (`:less-than?`,
            // `:greater-than?`) likewise, in the instance of the loops
            // that do not repeat an action: the child's kind, which this
            // match reads anyway, chooses it (a mark of its own, tested in
            // the visit's match, moved the code of the flows' tests).
            (None, false, Kind::Test { key, oper, val }) if PLAIN => self.repeat_action::<TRACE>(
                child,
                count,
                repeat,
                #[inline(always)]
                |e| e.test_repeated(child, key, oper, val),
            ),
            // A plain loop over a plain flow or counting parallel runs the
            // child's loop inside its own, the child's kind matched once:
            // each round is then neither a dispatch nor a call, whose frame
            // saved as many registers as the loop's.
            (None, false, Kind::Sequence { .. }) if PLAIN => self.repeat_action::<TRACE>(
                child,
                count,
                repeat,
                #[inline(always)]
                |e| e.sequence::<true, TRACE>(child, node, false, &[]),
            ),
            (None, false, Kind::Selector { .. }) if PLAIN => self.repeat_action::<TRACE>(
                child,
                count,
                repeat,
                #[inline(always)]
                |e| e.selector::<true, TRACE>(child, node, false, &[]),
            ),
            (None, false, Kind::Parallel(Parallel::Count { mode, how_many })) if PLAIN => self
                .repeat_action::<TRACE>(
                    child,
                    count,
                    repeat,
                    #[inline(always)]
                    |e| e.parallel_count::<true, TRACE>(child, node, mode, how_many, &[]),
                ),
            (None, _, _) => loop {
                let status = self.visit::<PLAIN, TRACE>(child, node);
                // Any status but `keep_going` stops the loop in iteration
                // `i`, as `resume` says; tested first, so that the loop
                // goes on with a branch, not a select.
                if status != repeat.keep_going {
                    break status;
                }
                i += 1;
                if let Some(status) = repeat.resume(status, i, count) {
                    break status;
                }
            },
        };
        if PLAIN {
            return status;
        }
        if status != repeat.keep_going {
            // The child stopped the loop in iteration i.
            if status == Status::Running && i == start {
                // Still at the iteration the memory names.
                return status;
            }
            let state = (status == Status::Running && i > 0)
                .then(|| Value::map_from([(Value::Keyword(kw::ITERATION), Value::Int(i as i64))]));
            if (state.is_some() || start > 0)
                && let Err(e) = self.set_memory(id, state)
            {
                return self.fail(id, e);
            }
            return status;
        }
        if start > 0
            && let Err(e) = self.set_memory(id, None)
        {
            return self.fail(id, e);
        }
        status
    }

    /// The plain instance of [`Engine::repeat`]'s loop over a leaf child
    /// (`child`) that `tick` ticks in place, for `count` iterations (at
    /// least one): the leaf's kind is matched once, by the caller, so that
    /// the leaf is ticked in the loop's body without the visit's leaf test
    /// and jump table on each iteration; its step is counted and its
    /// status traced as [`Engine::visit`] does for a leaf. (Only for the
    /// actions a loop repeats and for `:test?`, each in an instance of its
    /// own: with every leaf's code in it, the loop's body became a call.)
    #[inline(always)]
    fn repeat_action<const TRACE: bool>(
        &mut self,
        child: u32,
        count: u64,
        repeat: Repeat,
        mut tick: impl FnMut(&mut Self) -> Status,
    ) -> Status {
        let mut i = 0;
        loop {
            self.fuel -= 1;
            if self.fuel == 0 {
                return self.out_of_steps(child);
            }
            let status = tick(self);
            let status = self.traced::<TRACE>(child, status);
            if status != repeat.keep_going {
                break status;
            }
            i += 1;
            if let Some(status) = repeat.resume(status, i, count) {
                break status;
            }
        }
    }

    #[inline(never)]
    pub(super) fn parallel(
        &mut self,
        id: u32,
        node: &Node,
        how: &Parallel,
        kids: &[u32],
    ) -> Status {
        let n = kids.len() as u64;
        match how {
            Parallel::Count { mode, how_many } => {
                self.parallel_count::<false, false>(id, node, mode, how_many, kids)
            }
            Parallel::Sequence => self.parallel_policy(id, kids, n, 1),
            Parallel::Selector => self.parallel_policy(id, kids, 1, n),
            Parallel::Thresholds { success, failure } => {
                self.parallel_policy(id, kids, success.unwrap_or(n), failure.unwrap_or(1))
            }
            Parallel::DynamicThresholds(thresholds) => {
                let [success, failure] = &**thresholds;
                let mut threshold = |name: &str, opt: &Opt, default: u64| match opt {
                    Opt::Const(Value::Nil) => Ok(default),
                    opt => self.count_opt(id, name, opt).and_then(|k| {
                        if k > n {
                            let msg =
                                format!("`:{name}` is {k} but the node has only {n} children");
                            Err(self.fail(id, msg))
                        } else {
                            Ok(k)
                        }
                    }),
                };
                let success = match threshold("success-threshold", success, n) {
                    Ok(k) => k,
                    Err(status) => return status,
                };
                let failure = match threshold("failure-threshold", failure, 1) {
                    Ok(k) => k,
                    Err(status) => return status,
                };
                self.parallel_policy(id, kids, success, failure)
            }
        }
    }

    /// aido's parallel: ticks every child; Running counts as succeeded. With
    /// `:mode :success` it succeeds when at least `:how-many` children
    /// succeeded, else fails; with `:mode :failure` it fails when at least
    /// `:how-many` failed, else succeeds. Skipped children count as neither.
    /// It keeps no state, so the plain path (`PLAIN`, `kids` empty) runs it
    /// too when none of its children can run.
    #[inline(always)]
    pub(super) fn parallel_count<const PLAIN: bool, const TRACE: bool>(
        &mut self,
        id: u32,
        node: &Node,
        mode: &CountMode,
        how_many: &Opt,
        kids: &[u32],
    ) -> Status {
        // Constant options, worked out when the tree was compiled into
        // the parallel's limit ([`Node::count`]), are read from the node
        // on the plain path; anything else is resolved here.
        let known = if PLAIN {
            Count::known(node.count)
        } else {
            None
        };
        let options = match known {
            Some(_) => None,
            None => match self.count_options(id, mode, how_many) {
                Ok(count) => Some(count),
                Err(status) => return status,
            },
        };
        let mut failures = 0u64;
        let mut skipped = 0usize;
        let tree = self.tree;
        let mut children = Children::<PLAIN>::new(&tree.nodes, id, node, kids, 0);
        while let Some((_, child, kid)) = children.next() {
            let status = self.visit::<PLAIN, TRACE>(child, kid);
            if let Some(status) = Count::resume(&mut failures, status) {
                return status;
            }
            if !PLAIN && status == Status::Skipped {
                skipped += 1;
            }
        }
        if !PLAIN && skipped == kids.len() {
            return Status::Skipped;
        }
        let limit = match (known, options) {
            (Some(limit), _) => limit,
            // A plain node's children are its child table's range.
            (None, Some(count)) if PLAIN => {
                count.limit(u64::from(node.children.1.saturating_sub(node.children.0)))
            }
            (None, Some(count)) => count.limit((kids.len() - skipped) as u64),
            // Resolved above when not known.
            (None, None) => 0,
        };
        Count::end(failures, limit)
    }

    /// The options of aido's parallel: what it counts (`:mode`) and
    /// `:how-many`. Constants, the usual case, are read in place; anything
    /// else is resolved out of line ([`Engine::count_options_resolved`]).
    #[inline(always)]
    pub(super) fn count_options(
        &mut self,
        id: u32,
        mode: &CountMode,
        how_many: &Opt,
    ) -> Result<Count, Status> {
        // The two ways meet as scalars, not as a `Result` the call
        // returns through memory, so the fast way keeps them in registers.
        let (counted, how_many) = match (mode, how_many) {
            (CountMode::Successes, Opt::Const(Value::Int(n))) if *n >= 0 => {
                (Counted::Successes, *n as u64)
            }
            (CountMode::Failures, Opt::Const(Value::Int(n))) if *n >= 0 => {
                (Counted::Failures, *n as u64)
            }
            _ => {
                let count = self.count_options_resolved(id, mode, how_many)?;
                (count.counted, count.how_many)
            }
        };
        Ok(Count::new(counted, how_many))
    }

    /// [`Engine::count_options`] for options that are not both constants:
    /// each resolved, and checked, in the tick.
    #[inline(never)]
    fn count_options_resolved(
        &mut self,
        id: u32,
        mode: &CountMode,
        how_many: &Opt,
    ) -> Result<Count, Status> {
        let counted = match mode {
            CountMode::Successes => Counted::Successes,
            CountMode::Failures => Counted::Failures,
            CountMode::Dynamic(mode) => self.opt_as(
                id,
                "mode",
                mode,
                |v| match v.as_keyword() {
                    Some(kw::SUCCESS) => Some(Counted::Successes),
                    Some(kw::FAILURE) => Some(Counted::Failures),
                    _ => None,
                },
                "one of :success :failure",
            )?,
        };
        let how_many = self.count_opt(id, "how-many", how_many)?;
        Ok(Count::new(counted, how_many))
    }

    /// A parallel with a policy. Each tick it ticks every child that has not
    /// finished in this round (so every child starts on the first tick);
    /// children that finished keep their status (in node memory,
    /// `{:done [..]}`) and are not ticked again until the parallel reports.
    /// Then it decides: Success once `need_success` children succeeded,
    /// Failure once `need_failure` failed (or success is out of reach). When
    /// decided, the children still running are halted (launches they made in
    /// this tick are taken back) before it reports, and the next tick starts
    /// a fresh round.
    ///
    /// A Failure rolls the whole range back (seed 003: "persistent state
    /// changes won't be applied, and deferred action launch requests won't
    /// be submitted"): every running node below it is halted, finished
    /// children included, so every launch made below it in this tick is taken
    /// back; and the persistent memory written below it in this tick
    /// (`:choose-each`'s pool, a user node type's persistent memory) is put
    /// back as it was. The db writes of actions stay.
    fn parallel_policy(
        &mut self,
        id: u32,
        kids: &[u32],
        need_success: u64,
        need_failure: u64,
    ) -> Status {
        let long = self.long_state();
        let mark = long.journal.len();
        long.rollback_depth += 1;
        let status = self.parallel_round(id, kids, need_success, need_failure);
        self.long_state().rollback_depth -= 1;
        if status == Status::Failure {
            self.roll_back_persistent(mark);
        }
        let long = self.long_state();
        if long.rollback_depth == 0 {
            long.journal.clear();
        }
        status
    }

    /// One tick of a policy parallel's round (see [`Engine::parallel_policy`]).
    fn parallel_round(
        &mut self,
        id: u32,
        kids: &[u32],
        need_success: u64,
        need_failure: u64,
    ) -> Status {
        let n = kids.len();
        let mut done: Vec<Option<Status>> = match self.memory(id) {
            None => vec![None; n],
            Some(memory) => match read_done(memory, n) {
                Some(done) => done,
                None => {
                    let msg = format!(
                        "node memory {memory} is not {{:done [..]}} with one entry per child"
                    );
                    return self.fail(id, msg);
                }
            },
        };
        for (i, &child) in kids.iter().enumerate() {
            if done[i].is_some() {
                continue;
            }
            match self.tick(child) {
                Status::Running => {}
                Status::Error => return Status::Error,
                finished => done[i] = Some(finished),
            }
        }
        let count = |s: Status| done.iter().filter(|d| **d == Some(s)).count() as u64;
        let (succeeded, failed, skipped) = (
            count(Status::Success),
            count(Status::Failure),
            count(Status::Skipped),
        );
        let n = n as u64;
        let reachable = n - failed - skipped;
        let decided = if skipped == n {
            Some(Status::Skipped)
        } else if succeeded >= need_success.min(n - skipped) && succeeded > 0 {
            Some(Status::Success)
        } else if failed >= need_failure || reachable < need_success.min(n - skipped) {
            Some(Status::Failure)
        } else {
            None
        };
        match decided {
            Some(status) => {
                // Terminate what is still running (on Failure, anything
                // running below a finished child too), then report; the next
                // tick starts afresh.
                for (i, &child) in kids.iter().enumerate() {
                    if done[i].is_none() || status == Status::Failure {
                        self.halt_subtree(child);
                    }
                }
                if let Err(e) = self.set_memory(id, None) {
                    return self.fail(id, e);
                }
                status
            }
            None => {
                // Nothing finished yet is the default state: store nothing.
                let state = done.iter().any(Option::is_some).then(|| done_value(&done));
                if let Err(e) = self.set_memory(id, state) {
                    return self.fail(id, e);
                }
                Status::Running
            }
        }
    }
}

/// What aido's parallel counts, its `:mode` once resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Counted {
    /// It succeeds when at least `:how-many` children succeed.
    Successes,
    /// It fails when at least `:how-many` children fail.
    Failures,
}

/// Whether `node` is a reactive sequence (one without `:memory`).
#[inline(always)]
fn is_reactive_sequence(node: &Node) -> bool {
    matches!(node.kind, Kind::Sequence { memory: false })
}

pub(super) fn read_done(memory: &Value, n: usize) -> Option<Vec<Option<Status>>> {
    let done = memory.get(&Value::Keyword(kw::DONE))?.as_seq()?;
    if done.len() != n {
        return None;
    }
    done.iter()
        .map(|v| match v {
            Value::Nil => Some(None),
            Value::Keyword(k) => match *k {
                kw::SUCCESS => Some(Some(Status::Success)),
                kw::FAILURE => Some(Some(Status::Failure)),
                kw::SKIPPED => Some(Some(Status::Skipped)),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

pub(super) fn done_value(done: &[Option<Status>]) -> Value {
    let mut m = Map::default();
    m.insert(
        Value::Keyword(kw::DONE),
        Value::Vector(
            done.iter()
                .map(|s| s.map_or(Value::Nil, Status::to_value))
                .collect(),
        ),
    );
    Value::Map(Box::new(m))
}

/// The truthiness of a resolved option, used by `:repeat`.
pub(super) fn as_bool(v: &Value) -> Option<bool> {
    match v {
        Value::Bool(b) => Some(*b),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::{Count, Counted, Flow, Repeat, always, invert, never};
    use crate::tick::Status;

    /// A constant `:mode` is resolved when the tree is compiled, by the
    /// keyword's code; any other value is left to the tick.
    #[test]
    fn a_constant_count_mode_is_resolved_when_compiled() {
        use crate::tree::{CountMode, Kind, Parallel};
        let mode = |text: &str| {
            let tree = crate::compile_str("t.edn", text, &crate::Registry::new())
                .unwrap_or_else(|e| panic!("{e:?}"));
            match &tree.nodes[0].kind {
                Kind::Parallel(Parallel::Count { mode, .. }) => match mode {
                    CountMode::Successes => "successes",
                    CountMode::Failures => "failures",
                    CountMode::Dynamic(_) => "dynamic",
                },
                _ => "not a counting parallel",
            }
        };
        let parallel = |m: &str| format!("[:parallel {{:mode {m} :how-many 1}} [:success]]");
        assert_eq!(mode(&parallel(":success")), "successes");
        assert_eq!(mode(&parallel(":failure")), "failures");
        assert_eq!(mode(&parallel("[:aido/db :m]")), "dynamic");
    }

    #[test]
    fn flows_move_on_at_their_status_and_skipped_and_stop_at_any_other() {
        use Status::*;
        let seq = Flow::SEQUENCE;
        let sel = Flow::SELECTOR;
        assert_eq!(
            ALL.map(|s| seq.resume(s)),
            [None, Some(Failure), Some(Running), Some(Error), None]
        );
        assert_eq!(
            ALL.map(|s| sel.resume(s)),
            [Some(Success), None, Some(Running), Some(Error), None]
        );
        assert_eq!((seq.end(), sel.end()), (Success, Failure));
    }

    #[test]
    fn loops_tick_again_while_their_status_comes_until_the_count() {
        use Status::*;
        let l = Repeat::LOOP;
        assert_eq!(l.start(0, 0), Some(Success));
        assert_eq!(l.start(0, 2), None);
        assert_eq!(l.resume(Success, 1, 2), None);
        assert_eq!(l.resume(Success, 2, 2), Some(Success));
        assert_eq!(l.resume(Running, 1, 2), Some(Running));
        let u = Repeat::UNTIL_SUCCESS;
        assert_eq!(u.resume(Failure, 1, 3), None);
        assert_eq!(u.resume(Success, 1, 3), Some(Success));
        assert_eq!(u.resume(Failure, 3, 3), Some(Failure));
    }

    #[test]
    fn the_counting_parallel_counts_running_as_success_and_stops_at_an_error() {
        use Status::*;
        // Two of three counted children succeed (Running counts), the
        // skipped one is not counted: only failures are counted, against
        // the limit of the children counted.
        let c = Count::new(Counted::Successes, 2);
        let mut failures = 0;
        assert_eq!(
            [Success, Failure, Skipped].map(|s| Count::resume(&mut failures, s)),
            [None; 3]
        );
        assert_eq!(Count::end(failures, c.limit(2)), Failure);
        assert_eq!(Count::resume(&mut failures, Running), None);
        assert_eq!(Count::end(failures, c.limit(3)), Success);
        assert_eq!(Count::resume(&mut failures, Error), Some(Error));
        // More needed than there are children: it cannot succeed.
        assert_eq!(Count::end(0, c.limit(1)), Failure);
        assert_eq!(
            Count::end(0, Count::new(Counted::Successes, 0).limit(0)),
            Success
        );
        let f = Count::new(Counted::Failures, 1);
        let mut failures = 0;
        assert_eq!(Count::resume(&mut failures, Running), None);
        assert_eq!(Count::end(failures, f.limit(1)), Success);
        assert_eq!(Count::resume(&mut failures, Failure), None);
        assert_eq!(Count::end(failures, f.limit(2)), Failure);
    }

    const ALL: [Status; 5] = [
        Status::Success,
        Status::Failure,
        Status::Running,
        Status::Error,
        Status::Skipped,
    ];

    /// `Count::resume_plain` counts and stops as `Count::resume` does, for
    /// every status and every count before it.
    #[test]
    fn the_plain_count_resumes_as_the_count_for_every_status() {
        for child in ALL {
            for before in [0, 1, 7] {
                let (mut plain, mut counted) = (before, before);
                assert_eq!(
                    Count::resume_plain(&mut plain, child),
                    Count::resume(&mut counted, child),
                    "{child:?}"
                );
                assert_eq!(plain, counted, "{child:?} after {before}");
            }
        }
    }

    #[test]
    fn decorators_map_success_and_failure_and_pass_the_rest_up() {
        let mapped = |f: fn(Status) -> Status| ALL.map(f);
        use Status::*;
        assert_eq!(mapped(invert), [Failure, Success, Running, Error, Skipped]);
        assert_eq!(mapped(always), [Success, Success, Running, Error, Skipped]);
        assert_eq!(mapped(never), [Failure, Failure, Running, Error, Skipped]);
    }
}
