//! The plain path: a leaner tick for subtrees that cannot run long.
//!
//! Most of a typical tree is conditions and actions under reactive selectors,
//! sequences and loops: nodes that finish in the tick they are visited. Such a
//! subtree has no running children to halt, no skipped children to pass over
//! and no preconditions to check, so the engine walks it with a smaller
//! interpreter that leaves out that bookkeeping, also while other parts of
//! the tree run long: no node in a plain subtree can be in the running set (a
//! db that says otherwise came from elsewhere, and the tick then keeps to the
//! general path). A traced tick takes it too, in a second instance (`TRACE`)
//! that writes each node's status into the trace as the general path does;
//! the untraced instance carries no trace of it. The results, the db, the
//! step count and the trace are the same as the general path's;
//! tests/it/plain.rs compares the two on generated trees. Neither instance
//! notes the keys its writing leaves write (`:define!`, `:inc!`,
//! `:dissoc!`), so that a traced tick pays nothing for noting: a tick that
//! notes them is traced, and its trace names each writing leaf it ticked
//! (see `tick::writes`).
//!
//! The plain path writes no node's meaning of its own. The flows, loops,
//! counting parallel and decorators are the functions of `composite.rs`,
//! generic over `PLAIN`, and the leaves are [`Engine::leaf`]: `tick_plain`
//! calls their plain instances. What stays path-specific is mechanics, not
//! meaning:
//!
//! - the dispatch: `tick_plain` matches the kinds that can be plain, while
//!   [`Engine::tick`] matches every kind after its step count and
//!   preconditions, and keeps the running set and the trace; both arms of a
//!   kind call the same function;
//! - how a child is visited ([`Engine::visit`]): a plain child's step is
//!   counted and its kind read once, a leaf is ticked in place, without a
//!   call, and each plain composite, decorator and domain node is called
//!   by a function of its own (`plain_selector`, `plain_repeat`,
//!   `plain_custom`, ...: the plain instance of its `composite.rs`
//!   function, or the node type's call), so that a composite child costs one
//!   call that saves only the registers its kind needs and no second match
//!   on the kind (on the general path too, for a plain child of an
//!   untraced tick), except that a plain selector runs a plain sequence
//!   child's loop inside its own ([`Engine::visit_inlining`]) and an
//!   untraced tick runs a plain selector root's loop in its own frame; the
//!   root of a plain subtree entered from `tick_plain` goes through
//!   `plain_node`, which has every plain kind inlined;
//! - how the children are found (`Children` in `composite.rs`): the plain
//!   path walks the pre-order layout instead of slicing the child table;
//! - which kinds may be plain ([`mark_plain`], from `Kind::traits`).
//!
//! The bookkeeping of the general path (node memory, halting, skipped and
//! running children) sits behind `!PLAIN` in the shared functions and
//! compiles away in the plain instance.

use super::{Shape, composite, decorators, one_visit_leaf};
use crate::extend::NodeType;
use crate::tick::{Engine, PlainPath, Status, TraceEvent};
use crate::tree::{CountMode, CustomOptions, Kind, Node, NodeIndex, Opt, Parallel};
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
    /// Ticks plain node `id` (see [`mark_plain`]): the composites and
    /// decorators of `composite.rs`, in their plain instance, and the leaves.
    /// With `TRACE` each node's status goes into the trace as it returns,
    /// as [`Engine::tick`] writes it.
    pub(crate) fn tick_plain<const TRACE: bool>(&mut self, id: u32) -> Status {
        self.fuel -= 1;
        if self.fuel == 0 {
            return self.out_of_steps(id);
        }
        let tree = self.tree;
        self.plain_node_call::<TRACE>(id, &tree.nodes[id as usize])
    }

    /// Ticks the tree's root, `root`, a plain node, on the plain path: the
    /// visit a composite makes of a plain child (its step counted,
    /// a leaf ticked in place, anything else called by its own function),
    /// so that the root, already fetched by `Engine::tick_root`, is neither
    /// fetched again nor entered through [`Engine::plain_node`]'s call,
    /// which saves every register any plain kind needs.
    ///
    /// A leaf root is ticked in place; a `:selector` root, the usual root
    /// of a reactive tree, is told apart next and its loop run here, in
    /// the tick's own frame, without a call (its plain `:sequence`
    /// children inlined into it as into any plain selector); testing it in
    /// the visit's one match made that match two jump tables, which every
    /// other root paid for.
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
            self.plain_composite::<TRACE>(0, root)
        }
    }

    /// [`Engine::tick_plain_root`], traced: a traced tick's plain root,
    /// kept out of the untraced tick's body as [`Engine::tick_plain_traced`]
    /// is. A root `:selector` runs its loop in this function's frame, as
    /// the untraced one runs in the tick's, without the further call to
    /// [`Engine::plain_node`]'s function and its match of every kind.
    #[cold]
    #[inline(never)]
    pub(crate) fn tick_plain_root_traced(&mut self, root: &Node) -> Status {
        self.tick_plain_root::<true>(root)
    }

    /// Ticks plain node `id` (whose node is `node`) once its step is
    /// counted: [`Engine::tick_plain`] without the step.
    #[inline(always)]
    fn plain_node<const TRACE: bool>(&mut self, id: u32, node: &Node) -> Status {
        let status = match &node.kind {
            Kind::Selector { memory: false } => self.selector::<true, TRACE>(id, node, false, &[]),
            Kind::Sequence { memory: false } => self.sequence::<true, TRACE>(id, node, false, &[]),
            Kind::Parallel(Parallel::Count { mode, how_many }) => {
                self.parallel_count::<true, TRACE>(id, node, mode, how_many, &[])
            }
            Kind::Loop { count } if node.repeats_action => {
                self.repeat_plain::<TRACE, true>(id, count, node.count, composite::Repeat::LOOP)
            }
            Kind::Loop { count } => {
                self.repeat_plain::<TRACE, false>(id, count, node.count, composite::Repeat::LOOP)
            }
            Kind::LoopUntilSuccess { count } if node.repeats_action => self
                .repeat_plain::<TRACE, true>(
                    id,
                    count,
                    node.count,
                    composite::Repeat::UNTIL_SUCCESS,
                ),
            Kind::LoopUntilSuccess { count } => self.repeat_plain::<TRACE, false>(
                id,
                count,
                node.count,
                composite::Repeat::UNTIL_SUCCESS,
            ),
            Kind::Invert => composite::invert(self.tick_only_child::<TRACE>(id)),
            Kind::Always => composite::always(self.tick_only_child::<TRACE>(id)),
            Kind::Never => composite::never(self.tick_only_child::<TRACE>(id)),
            Kind::Force { success } => {
                decorators::force(self.tick_only_child::<TRACE>(id), *success)
            }
            kind @ one_visit_leaf!() => self.leaf::<false>(id, kind),
            // Plain only when its node type finishes in one visit: one
            // indirect call, which keeps nothing across it.
            Kind::Custom { node_type, options } => self.custom(id, node_type, options),
            // Never plain (`Kind::traits`), so never here.
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
            | Kind::Switch(_) => self.fail(id, "not a plain node"),
        };
        if TRACE {
            self.trace_plain(id, status);
        }
        status
    }

    /// [`Engine::tick_plain`], traced: kept out of [`Engine::tick`]'s body,
    /// so that the untraced tick's dispatch stays as small as it was (a
    /// traced tick's plain root is entered by
    /// [`Engine::tick_plain_root_traced`]).
    #[cold]
    #[inline(never)]
    pub(crate) fn tick_plain_traced(&mut self, id: u32) -> Status {
        self.tick_plain::<true>(id)
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
        self.fuel -= 1;
        if self.fuel == 0 {
            return self.out_of_steps(id);
        }
        // The kind is matched once: a leaf is ticked in place (one
        // comparison tells the leaves, whose tags come first, and one jump
        // table picks one), anything else is called by its own function
        // from a second table. (The general path's instance, for a plain
        // child of an untraced tick, has `TRACE` false.)
        match &node.kind {
            kind @ one_visit_leaf!() => {
                let status = self.leaf::<false>(id, kind);
                self.traced::<TRACE>(id, status)
            }
            Kind::Sequence { .. } if SEQUENCE => {
                let status = self.sequence_within::<TRACE>(id, node, all);
                self.traced::<TRACE>(id, status)
            }
            _ => self.plain_composite::<TRACE>(id, node),
        }
    }

    /// Calls the function of plain node `id` that is not a leaf: each plain
    /// composite and decorator has its own (its plain instance of the
    /// `composite.rs` function that says what it means), so that it saves
    /// only the registers it needs and its kind is not matched again (a
    /// plain flow never has memory, so its flag is not looked at), and so
    /// has a plain domain node (`plain_custom`). Anything else goes
    /// through [`Engine::plain_node`].
    #[inline(always)]
    fn plain_composite<const TRACE: bool>(&mut self, id: u32, node: &Node) -> Status {
        match &node.kind {
            Kind::Selector { .. } => self.plain_selector::<TRACE>(id, node),
            Kind::Sequence { .. } => self.plain_sequence::<TRACE>(id, node),
            Kind::Parallel(Parallel::Count { mode, how_many }) => {
                self.plain_parallel::<TRACE>(id, node, mode, how_many)
            }
            // A loop over an action has a function of its own
            // (`mark_plain` chose it), so that no other loop's frame saves
            // the registers its loop needs.
            Kind::Loop { count } if node.repeats_action => {
                self.plain_repeat::<TRACE, true, true>(id, count, node.count)
            }
            Kind::Loop { count } => self.plain_repeat::<TRACE, true, false>(id, count, node.count),
            Kind::LoopUntilSuccess { count } if node.repeats_action => {
                self.plain_repeat::<TRACE, false, true>(id, count, node.count)
            }
            Kind::LoopUntilSuccess { count } => {
                self.plain_repeat::<TRACE, false, false>(id, count, node.count)
            }
            Kind::Invert => self.plain_invert::<TRACE>(id),
            Kind::Always => self.plain_always::<TRACE>(id),
            Kind::Never => self.plain_never::<TRACE>(id),
            Kind::Force { success } => self.plain_force::<TRACE>(id, *success),
            // A plain domain node: its call, without `plain_node`'s
            // second match of every kind.
            Kind::Custom { node_type, options } => {
                self.plain_custom::<TRACE>(id, node_type, options)
            }
            // Never plain, so never here: `plain_node` matches them all.
            _ => self.plain_node_call::<TRACE>(id, node),
        }
    }

    /// A plain domain node's call (a node type declared to finish in one
    /// visit, [`Engine::custom`]): one indirect call, inlined into the
    /// composite's loop, whose frame keeps nothing for it.
    #[inline(always)]
    fn plain_custom<const TRACE: bool>(
        &mut self,
        id: u32,
        node_type: &NodeType,
        options: &CustomOptions,
    ) -> Status {
        let status = self.custom(id, node_type, options);
        self.traced::<TRACE>(id, status)
    }

    /// A plain `:selector`'s own call (its status traced with `TRACE`).
    #[inline(never)]
    fn plain_selector<const TRACE: bool>(&mut self, id: u32, node: &Node) -> Status {
        let status = self.selector::<true, TRACE>(id, node, false, &[]);
        self.traced::<TRACE>(id, status)
    }

    /// A plain `:sequence`'s own call.
    #[inline(never)]
    fn plain_sequence<const TRACE: bool>(&mut self, id: u32, node: &Node) -> Status {
        let status = self.sequence::<true, TRACE>(id, node, false, &[]);
        self.traced::<TRACE>(id, status)
    }

    /// A plain counting `:parallel`'s own call.
    #[inline(never)]
    fn plain_parallel<const TRACE: bool>(
        &mut self,
        id: u32,
        node: &Node,
        mode: &CountMode,
        how_many: &Opt,
    ) -> Status {
        let status = self.parallel_count::<true, TRACE>(id, node, mode, how_many, &[]);
        self.traced::<TRACE>(id, status)
    }

    /// A plain `:loop` (`LOOP`) or `:loop-until-success`'s own call; with
    /// `ACTION`, a loop whose child is an action ([`Node::repeats_action`]).
    /// `known` is the loop node's [`Node::count`], passed by value so that
    /// a constant count reaches the loop in a register.
    #[inline(never)]
    fn plain_repeat<const TRACE: bool, const LOOP: bool, const ACTION: bool>(
        &mut self,
        id: u32,
        count: &Opt,
        known: u32,
    ) -> Status {
        let repeat = if LOOP {
            composite::Repeat::LOOP
        } else {
            composite::Repeat::UNTIL_SUCCESS
        };
        let status = self.repeat_plain::<TRACE, ACTION>(id, count, known, repeat);
        self.traced::<TRACE>(id, status)
    }

    /// A plain `:invert`'s own call.
    #[inline(never)]
    fn plain_invert<const TRACE: bool>(&mut self, id: u32) -> Status {
        let status = composite::invert(self.tick_only_child::<TRACE>(id));
        self.traced::<TRACE>(id, status)
    }

    /// A plain `:always`'s own call.
    #[inline(never)]
    fn plain_always<const TRACE: bool>(&mut self, id: u32) -> Status {
        let status = composite::always(self.tick_only_child::<TRACE>(id));
        self.traced::<TRACE>(id, status)
    }

    /// A plain `:never`'s own call.
    #[inline(never)]
    fn plain_never<const TRACE: bool>(&mut self, id: u32) -> Status {
        let status = composite::never(self.tick_only_child::<TRACE>(id));
        self.traced::<TRACE>(id, status)
    }

    /// A plain `:force`'s own call.
    #[inline(never)]
    fn plain_force<const TRACE: bool>(&mut self, id: u32, success: bool) -> Status {
        let status = decorators::force(self.tick_only_child::<TRACE>(id), success);
        self.traced::<TRACE>(id, status)
    }

    /// `status`, written into the trace first with `TRACE`.
    #[inline(always)]
    pub(super) fn traced<const TRACE: bool>(&mut self, id: u32, status: Status) -> Status {
        if TRACE {
            self.trace_plain(id, status);
        }
        status
    }

    /// [`Engine::plain_node`] as a call: [`Engine::tick_plain`]'s node (the
    /// root of a plain subtree, with every plain kind inlined) and a plain
    /// domain node.
    #[inline(never)]
    fn plain_node_call<const TRACE: bool>(&mut self, id: u32, node: &Node) -> Status {
        self.plain_node::<TRACE>(id, node)
    }

    /// Ticks the one child of plain decorator `id`, which comes right after it.
    #[inline(always)]
    fn tick_only_child<const TRACE: bool>(&mut self, id: u32) -> Status {
        let tree = self.tree;
        self.visit::<true, TRACE>(id + 1, &tree.nodes[id as usize + 1])
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
