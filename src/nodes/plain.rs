//! The plain path: a leaner tick for subtrees that cannot run long.
//!
//! Most of a typical tree is conditions and actions under reactive selectors,
//! sequences and loops: nodes that finish in the tick they are visited. Such a
//! subtree has no running children to halt, no skipped children to pass over
//! and no preconditions to check, so the engine walks it with a smaller
//! interpreter that leaves out that bookkeeping, also while other parts of
//! the tree run long: no node in a plain subtree can be in the running set (a
//! db that says otherwise came from elsewhere, and the tick then keeps to the
//! general path). A plain subtree is ticked through its closures
//! (`nodes::closure`), one a plain node, built once for the tree, the
//! traced tick's (`TRACE`) writing each node's status into the trace as
//! the general path does; what is left here is the root's walk: a leaf
//! root ticked in place, and a plain `:selector` root's loop run in the
//! tick's own frame, its plain `:sequence` children's loops inlined into
//! it and its and their leaves ticked in place, any other child entered
//! through its closure. The results, the db, the step count and the trace
//! are the same as the general path's; tests/it/plain.rs compares the two
//! on generated trees. Neither notes the keys its writing leaves write
//! (`:define!`, `:inc!`, `:dissoc!`), so that a traced tick pays nothing
//! for noting: a tick that notes them is traced, and its trace names each
//! writing leaf it ticked (see `tick::writes`).
//!
//! The plain path writes no node's meaning of its own. The flows of the
//! root's walk are the functions of `composite.rs`, generic over `PLAIN`,
//! the leaves are [`Engine::leaf`], and the closures call the same step
//! functions and leaves. What stays path-specific is mechanics, not
//! meaning:
//!
//! - how a child is visited ([`Engine::visit`]): a plain child's step is
//!   counted and its kind read once, a leaf is ticked in place, without a
//!   call, a plain `:sequence` child of the root's selector has its loop
//!   inlined ([`Engine::visit_inlining`]), and anything else is its
//!   closure (on the general path too, for a plain child, out of line);
//! - how the children are found (`Children` in `composite.rs`): the plain
//!   path walks the pre-order layout instead of slicing the child table;
//! - which kinds may be plain ([`mark_plain`], from `Kind::traits`).
//!
//! The bookkeeping of the general path (node memory, halting, skipped and
//! running children) sits behind `!PLAIN` in the shared functions and
//! compiles away in the plain instance.

use super::{Shape, composite, one_visit_leaf};
use crate::tick::{Engine, PlainPath, Status, TraceEvent};
use crate::tree::{CountMode, Kind, Node, NodeIndex, Opt, Parallel};
use crate::value::Value;

/// Marks the plain nodes of a finished tree (see [`Node::plain`]): a node is
/// plain when its own kind finishes in one visit (its [`Traits::plain`](super::Traits::plain)), it has no preconditions,
/// and all its children are plain. Children are laid out in pre-order, which
/// the plain path relies on; a node whose children are not is left general.
/// A plain loop whose child (the next node) is an `:inc!` or `:define!` is
/// marked as repeating an action ([`Node::repeats_action`]), so that the
/// choice of its loop is made here, once, rather than on every tick.
pub(crate) fn mark_plain(nodes: &mut [Node], child_ids: &[u32]) {
    for i in (0..nodes.len()).rev() {
        let Some(node) = nodes.get(i) else { continue };
        let kids = child_ids
            .get(node.children.0 as usize..node.children.1 as usize)
            .unwrap_or(&[]);
        mark_plain_node(nodes, i, kids);
    }
}

/// Marks node `i`, whose children are `kids`, as [`mark_plain`] does, once
/// its children are marked: what the compiler does as each node is
/// finished (its children are then finished and marked), so that a
/// compile makes no second pass over the nodes.
#[inline]
pub(crate) fn mark_plain_node(nodes: &mut [Node], i: usize, kids: &[u32]) {
    let Some(node) = nodes.get(i) else { return };
    let own = node.pre.is_none()
        && match node.kind.traits().plain {
            Some(Shape::Leaf) => kids.is_empty(),
            Some(Shape::OneChild) => kids.len() == 1,
            Some(Shape::Children) => !kids.is_empty(),
            None => false,
        };
    let plain = own && in_pre_order(nodes, i, kids) && {
        kids.iter()
            .all(|&k| nodes.get(k as usize).is_some_and(|n| n.plain))
    };
    let repeats_action = plain
        && matches!(node.kind, Kind::Loop { .. } | Kind::LoopUntilSuccess { .. })
        && nodes
            .get(i + 1)
            .is_some_and(|child| matches!(child.kind, Kind::Inc { .. } | Kind::Define { .. }));
    if let Some(node) = nodes.get_mut(i) {
        node.plain = plain;
        node.repeats_action = repeats_action;
        node.count = constant_count(&node.kind, kids.len());
    }
    // A reactive flow that is not plain may take the long path: worked
    // out out of line, so that the compiler's loop over the nodes stays
    // as small as it was.
    if !plain {
        super::long_path::mark_long_path(nodes, i, kids);
    }
}

/// [`Node::count`] of a node of kind `kind` with `n_kids` children: a
/// loop's constant `:count`, or a counting parallel's limit
/// ([`composite::Count::limit`]: it succeeds when fewer of its children
/// fail) worked out from its constant `:mode` and `:how-many`, when it fits
/// below [`Node::NO_COUNT`]; `NO_COUNT` for anything else, whose options
/// the tick resolves as before (a count from the db, one out of range).
/// Worked out for every node, plain or not (a test of the plain mark
/// first made the compile of the 9,680-node tree cost more, not less).
pub(crate) fn constant_count(kind: &Kind, n_kids: usize) -> u32 {
    let below = |opt: &Opt, limit: u32| match opt {
        Opt::Const(Value::Int(n)) => u32::try_from(*n).ok().filter(|n| *n < limit),
        _ => None,
    };
    let count = match kind {
        Kind::Loop { count } | Kind::LoopUntilSuccess { count } => below(count, Node::NO_COUNT),
        Kind::Parallel(Parallel::Count { mode, how_many }) => {
            let counted = match mode {
                CountMode::Successes => Some(composite::Counted::Successes),
                CountMode::Failures => Some(composite::Counted::Failures),
                CountMode::Dynamic(_) => None,
            };
            counted
                .zip(below(how_many, Node::NO_COUNT))
                .map(|(counted, n)| composite::Count::new(counted, u64::from(n)))
                .and_then(|count| u32::try_from(count.limit(n_kids as u64)).ok())
                .filter(|limit| *limit < Node::NO_COUNT)
        }
        // No count of its own: the plain path never reads it.
        _ => None,
    };
    count.unwrap_or(Node::NO_COUNT)
}

/// Whether node `i`'s children are `i + 1` and then each one's subtree end,
/// the last ending where `i`'s subtree does.
pub(super) fn in_pre_order(nodes: &[Node], i: usize, kids: &[u32]) -> bool {
    let mut next = i + 1;
    for &k in kids {
        if k as usize != next {
            return false;
        }
        match nodes.get(next) {
            Some(n) => next = n.subtree_end as usize,
            None => return false,
        }
    }
    nodes.get(i).is_some_and(|n| n.subtree_end as usize == next)
}

impl<'t> Engine<'t> {
    /// Ticks the tree's root, `root`, a plain node, on the plain path: the
    /// visit a composite makes of a plain child (its step counted,
    /// a leaf ticked in place, anything else entered through its closure),
    /// so that the root, already fetched by `Engine::tick_root`, is not
    /// fetched again, and a leaf or `:selector` root is ticked without a
    /// call.
    ///
    /// A leaf root is ticked in place; a `:selector` root, the usual root
    /// of a reactive tree, is told apart next and its loop run here, in
    /// the tick's own frame, without a call (its plain `:sequence`
    /// children's loops inlined into it, their leaves and its own ticked
    /// in place, any other child entered through its closure); any other
    /// root is its closure (`nodes::closure`), out of line, so that the
    /// tick's own code is the same for every root.
    ///
    /// With `TRACE`, the same on the tracing instance, each status written
    /// into the trace as the plain path writes it ([`Engine::traced`]):
    /// a traced tick's root is entered here from the traced tick's own
    /// frame (`Engine::tick_root`), or through
    /// [`Engine::tick_plain_root_traced`], which is this alone.
    #[inline(always)]
    pub(crate) fn tick_plain_root<const TRACE: bool>(&mut self, root: &Node) -> Status {
        self.fuel -= 1;
        if self.fuel == 0 {
            return self.out_of_steps(0);
        }
        if let kind @ one_visit_leaf!() = &root.kind {
            let status = self.leaf::<false>(0, kind);
            self.traced::<TRACE>(0, status)
        } else if let Kind::Selector { .. } = root.kind {
            let status = self.selector::<true, TRACE>(0, root, false, &[]);
            self.traced::<TRACE>(0, status)
        } else {
            // Any other root is its closure (`nodes::closure`), which
            // counts its step again.
            self.fuel += 1;
            self.tick_closure_apart::<TRACE>(0)
        }
    }

    /// [`Engine::tick_plain_root`], traced: a traced tick's plain root,
    /// kept out of the untraced tick's body. A root `:selector` runs its
    /// loop in this function's frame, as the untraced one runs in the
    /// tick's.
    #[cold]
    #[inline(never)]
    pub(crate) fn tick_plain_root_traced(&mut self, root: &Node) -> Status {
        self.tick_plain_root::<true>(root)
    }

    /// Writes plain node `id`'s status into the trace: the event
    /// [`Engine::tick`] writes for a node it ticks. (A plain node is never in
    /// the running set, so there is no visit to note and nothing runs.)
    #[inline(always)]
    fn trace_plain(&mut self, id: u32, status: Status) {
        self.note_trace(TraceEvent::Ticked {
            node: NodeIndex(id),
            status,
        });
    }

    /// Ticks child `id` (whose node is `node`) of a composite: the one
    /// place where the two paths differ in how a child is visited. The
    /// general path goes through [`Engine::tick`], which checks
    /// preconditions and keeps the running set and the trace, except that
    /// an untraced tick hands a plain child to the plain path here. A plain
    /// child's step is counted here and its kind read once: a leaf (which
    /// has no children in a plain subtree) is ticked in place, without a
    /// call, any other kind through its own function
    /// ([`Engine::plain_composite`]). `TRACE` (plain path only) writes the
    /// leaf's status into the trace; the general path traces in
    /// [`Engine::tick`].
    #[inline(always)]
    pub(super) fn visit<const PLAIN: bool, const TRACE: bool>(
        &mut self,
        id: u32,
        node: &Node,
    ) -> Status {
        self.visit_inlining::<PLAIN, TRACE, false>(id, node, &[])
    }

    /// [`Engine::visit`], with a plain `:sequence` child's body inlined
    /// into the caller when `SEQUENCE` (a plain selector's loop, see
    /// `Engine::flow`): a selector of sequences is the usual shape of a
    /// reactive tree, and the sequence's call then saves no registers of
    /// its own. The inlined sequence visits its children through
    /// [`Engine::visit`], so that nothing is inlined twice, and fetches
    /// them from `all`, the nodes its caller's loop fetches from (with
    /// `SEQUENCE`: see [`Engine::sequence_within`]).
    #[inline(always)]
    pub(super) fn visit_inlining<const PLAIN: bool, const TRACE: bool, const SEQUENCE: bool>(
        &mut self,
        id: u32,
        node: &Node,
        all: &'t [Node],
    ) -> Status {
        // A plain child of a general node goes straight to the plain path
        // (what `Engine::tick` would do first, without the call).
        let plain = PLAIN || (node.plain && self.plain == PlainPath::Untraced);
        if !plain {
            return self.tick(id);
        }
        // A plain child that is neither a leaf nor a sequence inlined into
        // its caller is its closure (see `nodes::closure`).
        let walked = matches!(node.kind, one_visit_leaf!())
            || (SEQUENCE && matches!(node.kind, Kind::Sequence { .. }));
        if !walked {
            // In the root's walk, in the tick's frame; out of line from
            // the general path.
            return if PLAIN {
                self.tick_closure::<TRACE>(id)
            } else {
                self.tick_closure_apart::<TRACE>(id)
            };
        }
        self.fuel -= 1;
        if self.fuel == 0 {
            return self.out_of_steps(id);
        }
        // A leaf is ticked in place (one comparison tells the leaves, whose
        // tags come first, and one jump table picks one), a sequence's loop
        // run here.
        match &node.kind {
            kind @ one_visit_leaf!() => {
                let status = self.leaf::<false>(id, kind);
                self.traced::<TRACE>(id, status)
            }
            Kind::Sequence { .. } if SEQUENCE => {
                let status = self.sequence_within::<TRACE>(id, node, all);
                self.traced::<TRACE>(id, status)
            }
            // Entered through its closure above, so never here.
            _ => self.fail(id, "not a plain leaf"),
        }
    }

    /// `status`, written into the trace first with `TRACE`.
    #[inline(always)]
    pub(super) fn traced<const TRACE: bool>(&mut self, id: u32, status: Status) -> Status {
        if TRACE {
            self.trace_plain(id, status);
        }
        status
    }
}

#[cfg(test)]
mod tests {
    use crate::{Registry, compile_str};

    /// One flag of each of a tree's nodes, in pre-order.
    fn flags(text: &str, flag: fn(&crate::tree::Node) -> bool) -> Vec<bool> {
        match compile_str("t.edn", text, &Registry::new()) {
            Ok(tree) => tree.nodes.iter().map(flag).collect(),
            Err(e) => vec![e.to_string().is_empty()],
        }
    }

    /// The plain flags of a tree's nodes, in pre-order.
    fn plain(text: &str) -> Vec<bool> {
        flags(text, |n| n.plain)
    }

    #[test]
    fn conditions_and_actions_under_reactive_composites_are_plain() {
        assert_eq!(
            plain(
                "[:selector [:sequence [:present? {:key :a}] [:inc! {:key :a}]] [:loop {:count 2} [:invert [:success]]]]"
            ),
            vec![true; 7]
        );
        assert_eq!(
            plain("[:parallel {:mode :success :how-many 1} [:failure] [:never [:success]]]"),
            vec![true; 4]
        );
    }

    #[test]
    fn what_can_run_be_skipped_or_remember_is_not_nor_is_anything_above_it() {
        // A wait can run: its ancestors are general, its plain sibling stays plain.
        assert_eq!(
            plain("[:sequence [:selector [:wait {:ticks 1}] [:success]] [:failure]]"),
            vec![false, false, false, true, true]
        );
        // Memory and preconditions make their own node general, not its children.
        assert_eq!(
            plain(
                "[:sequence {:memory true} [:success] [:selector {:aido/skip-if true} [:success]]]"
            ),
            vec![false, true, false, true]
        );
        // A loop over a child that can run keeps its iteration: general.
        assert_eq!(
            plain("[:loop {:count 2} [:wait {:ticks 1}]]"),
            vec![false, false]
        );
        // An empty sequence is skipped, and a parallel keeps finished children.
        assert_eq!(plain("[:sequence]"), vec![false]);
        assert_eq!(
            plain("[:parallel {:policy :selector} [:success]]"),
            vec![false, true]
        );
    }

    /// Which nodes repeat an action in a loop of their own, in pre-order.
    fn repeats_action(text: &str) -> Vec<bool> {
        flags(text, |n| n.repeats_action)
    }

    #[test]
    fn a_plain_loop_over_an_action_is_marked_once_when_compiled() {
        // Both loops over both actions.
        assert_eq!(
            repeats_action(
                "[:sequence [:loop {:count 3} [:inc! {:key :a}]] [:loop-until-success {:count 2} [:define! {:key :b :val 1}]]]"
            ),
            vec![false, true, false, true, false]
        );
        // A loop over a condition, a composite or a decorator is not, nor is
        // a loop that cannot be plain (its child has a precondition).
        assert_eq!(
            repeats_action(
                "[:sequence [:loop {:count 2} [:present? {:key :a}]] [:loop {:count 2} [:sequence [:inc! {:key :a}]]] [:loop {:count 2} [:invert [:inc! {:key :a}]]] [:loop {:count 2} [:inc! {:key :a :aido/skip-if true}]]]"
            ),
            vec![false; 11]
        );
    }

    /// Each node's constant count, in pre-order (`None` for `NO_COUNT`).
    fn counts(text: &str) -> Vec<Option<u32>> {
        match compile_str("t.edn", text, &Registry::new()) {
            Ok(tree) => tree
                .nodes
                .iter()
                .map(|n| (n.count != crate::tree::Node::NO_COUNT).then_some(n.count))
                .collect(),
            Err(e) => vec![Some(e.to_string().len() as u32)],
        }
    }

    #[test]
    fn constant_counts_are_worked_out_once_when_compiled() {
        // A loop's count as it is; a counting parallel's how-many shifted
        // left with its mode in the low bit; a dynamic option, or a count
        // too large for the packing, is left to the tick.
        assert_eq!(
            counts(
                "[:sequence [:loop {:count 3} [:success]] [:loop-until-success {:count 0} [:success]] [:loop {:count [:aido/db :n]} [:success]]]"
            ),
            vec![None, Some(3), None, Some(0), None, None, None]
        );
        // A counting parallel's limit: with `:mode :success`, the
        // children less `:how-many`, plus one; with `:mode :failure`,
        // `:how-many`.
        assert_eq!(
            counts(
                "[:selector [:parallel {:mode :success :how-many 1} [:success]] [:parallel {:mode :failure :how-many 1} [:success]] [:parallel {:mode [:aido/db :m] :how-many 1} [:success]] [:parallel {:mode :success :how-many [:aido/db :n]} [:success]]]"
            ),
            vec![None, Some(1), None, Some(1), None, None, None, None, None]
        );
        assert_eq!(
            counts(
                "[:sequence [:parallel {:mode :success :how-many 2} [:success] [:failure] [:success]] [:parallel {:mode :failure :how-many 3} [:success] [:failure] [:success]] [:parallel {:mode :success :how-many 0} [:success]]]"
            ),
            vec![
                None,
                Some(2),
                None,
                None,
                None,
                Some(3),
                None,
                None,
                None,
                Some(2),
                None
            ]
        );
        // (A constant `:how-many` is at most the number of children, which
        // the compiler checks, so it always fits.)
        assert_eq!(
            counts(
                "[:selector [:loop {:count 4294967294} [:success]] [:loop {:count 4294967295} [:success]] [:loop {:count 4294967296} [:success]]]"
            ),
            vec![None, Some(4294967294), None, None, None, None, None]
        );
        // A policy parallel has no count; a loop off the plain path has its
        // count marked too (only the plain path reads it).
        assert_eq!(
            counts("[:parallel {:policy :selector} [:success]]"),
            vec![None, None]
        );
        assert_eq!(
            counts("[:loop {:count 2} [:wait {:ticks 1}]]"),
            vec![Some(2), None]
        );
    }

    #[test]
    fn the_compilers_marks_are_those_of_a_pass_over_the_finished_tree() {
        // The compiler marks each node as it finishes it; `mark_plain`
        // (which stubbed trees go through) marks a finished tree in one
        // pass from its last node: the same marks.
        let mut texts: Vec<String> = ["examples/npc.edn", "examples/greet.edn"]
            .iter()
            .map(|f| std::fs::read_to_string(f).unwrap())
            .collect();
        texts.extend(
            [
                "[:selector [:sequence [:present? {:key :a}] [:inc! {:key :a}]] [:loop {:count 2} [:invert [:success]]]]",
                "[:sequence [:selector [:wait {:ticks 1}] [:success]] [:failure]]",
                "[:sequence {:memory true} [:success] [:selector {:aido/skip-if true} [:success]]]",
                "[:sequence [:loop {:count 3} [:inc! {:key :a}]] [:loop-until-success {:count 2} [:define! {:key :b :val 1}]]]",
                "[:sequence [:loop {:count 2} [:present? {:key :a}]] [:loop {:count 2} [:invert [:inc! {:key :a :aido/skip-if true}]]]]",
                "[:parallel {:policy :selector} [:success] [:failure]]",
            ]
            .map(String::from),
        );
        for text in &texts {
            let mut tree = compile_str("t.edn", text, &Registry::new()).unwrap();
            let marks = |t: &crate::tree::Tree| -> Vec<(bool, bool, u32)> {
                t.nodes
                    .iter()
                    .map(|n| (n.plain, n.repeats_action, n.count))
                    .collect()
            };
            let compiled = marks(&tree);
            assert!(compiled.iter().any(|m| m.0), "{text}");
            for node in &mut tree.nodes {
                (node.plain, node.repeats_action) = (!node.plain, !node.repeats_action);
                node.count = node.count.wrapping_add(1);
            }
            super::mark_plain(&mut tree.nodes, &tree.child_ids);
            assert_eq!(marks(&tree), compiled, "{text}");
        }
    }

    #[test]
    fn a_node_stays_within_176_bytes() {
        assert!(std::mem::size_of::<crate::tree::Node>() <= 176);
    }
}
