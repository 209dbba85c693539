//! The plain path: a flat interpreter for subtrees that cannot run long.
//!
//! Most of a typical tree is conditions and actions under reactive selectors,
//! sequences and loops: nodes that finish in the tick they are visited. Such a
//! subtree has no running children to halt, no skipped children to pass over
//! and no preconditions to check. The compiler lowers every node of it into
//! one [`Instr`] of the tree's program (`Tree::program`, beside the node
//! table and indexed like it: 12 bytes a node, the kind's tag, the end of
//! its subtree and its parent), and the engine ticks it with one loop over
//! that program, [`Engine::run_plain`], instead of one call per node. No node
//! in a plain subtree can be in the running set (a db that says otherwise
//! came from elsewhere, and the tick then keeps to the general path), so
//! this holds while other parts of the tree run long too. A traced tick takes
//! it as well, in a second instance (`TRACE`) that writes each node's status
//! into the trace as the general path does; the untraced instance carries no
//! trace of it. The results, the db, the step count and the trace are the
//! same as the general path's; tests/it/plain.rs compares the two on
//! generated trees.
//!
//! The loop writes no node's meaning of its own: a composite is a small
//! state machine of `composite.rs` (start: visit the first child; resume with
//! a child's status: visit the next child, or the same one again, or answer
//! with a status; [`Flow`], [`Repeat`], [`Count`] and the decorators' status
//! maps), which the general path's functions call in their own loops, and a
//! leaf is [`Engine::leaf`]. The loop only finds the children (the first at
//! the composite's index + 1, the next at the previous one's subtree end,
//! the parent by its link), counts the steps and keeps the counts of the
//! loops and parallels it is in.
//!
//! Those counts are the interpreter's only stack (a flow or a decorator
//! needs nothing but the child that answered): a stack of [`Count`]s that
//! the thread keeps from one plain subtree to the next (as it keeps a spare
//! long-running state), so that a steady tick allocates nothing. It grows
//! once to the deepest nesting of loops and parallels in a plain subtree,
//! bounded by the tree's depth, and is empty between plain subtrees (they
//! never nest: a plain node's children are plain).

use super::composite::{Count, Counted, Flow, Repeat, always, invert, never};
use super::{Shape, decorators, one_visit_leaf};
use crate::tick::{Engine, Status, TraceEvent};
use crate::tree::{Instr, Kind, Node, NodeIndex, Op, Parallel};

/// Marks the plain nodes of a finished tree (see [`Node::plain`]) and lowers
/// them into the tree's program, which it returns (one [`Instr`] per node,
/// [`Op::General`] for a node that is not plain). A node is plain when its
/// own kind finishes in one visit (its [`Traits::plain`](super::Traits::plain)),
/// it has no preconditions, and all its children are plain. Children are
/// laid out in pre-order, which the plain path relies on; a node whose
/// children are not is left general.
pub(crate) fn mark_plain(nodes: &mut [Node], child_ids: &[u32]) -> Vec<Instr> {
    for i in (0..nodes.len()).rev() {
        let node = &nodes[i];
        let kids = child_ids
            .get(node.children.0 as usize..node.children.1 as usize)
            .unwrap_or(&[]);
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
        if let Some(node) = nodes.get_mut(i) {
            node.plain = plain;
        }
    }
    nodes
        .iter()
        .map(|node| Instr {
            op: if node.plain {
                op_of(&node.kind)
            } else {
                Op::General
            },
            end: node.subtree_end,
            parent: node.parent,
        })
        .collect()
}

/// The instruction a plain node of kind `kind` lowers to.
fn op_of(kind: &Kind) -> Op {
    match kind {
        Kind::Selector { memory: false } => Op::Selector,
        Kind::Sequence { memory: false } => Op::Sequence,
        Kind::Parallel(Parallel::Count { .. }) => Op::Parallel,
        Kind::Loop { .. } => Op::Loop,
        Kind::LoopUntilSuccess { .. } => Op::LoopUntilSuccess,
        Kind::Invert => Op::Invert,
        Kind::Always => Op::Always,
        Kind::Never => Op::Never,
        Kind::Force { success: true } => Op::ForceSuccess,
        Kind::Force { success: false } => Op::ForceFailure,
        one_visit_leaf!() => Op::Leaf,
        // Never plain (`Kind::traits`).
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
        | Kind::Custom { .. }
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
        | Kind::Switch(_) => Op::General,
    }
}

/// Whether node `i`'s children are `i + 1` and then each one's subtree end,
/// the last ending where `i`'s subtree does.
fn in_pre_order(nodes: &[Node], i: usize, kids: &[u32]) -> bool {
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

thread_local! {
    /// The plain interpreter's stack of counts, emptied, kept from one
    /// plain subtree to the next on this thread, so that a steady tick
    /// allocates nothing.
    static SPARE_COUNTS: std::cell::Cell<Vec<Count>> = const { std::cell::Cell::new(Vec::new()) };
}

/// What a composite does once a child has answered.
enum Next {
    /// Visit this child (the next one, or the same one again).
    Visit(u32),
    /// It is done, with this status.
    Done(Status),
}

impl Engine<'_> {
    /// Ticks plain node `root` (see [`mark_plain`]) with the flat loop.
    ///
    /// The loop keeps two things: the instruction being visited (`pc`) and,
    /// once it answers, its status. Down: a visit counts one step and
    /// either answers (a leaf) or enters a composite, whose first child is
    /// the next instruction. Up: the answer goes to the parent
    /// ([`Instr::parent`]), whose step function says whether to visit its
    /// next child (the answering one's [`Instr::end`], while inside the
    /// parent's) or the same one again, or to answer itself. A flow or a
    /// decorator needs nothing more; a loop or a counting parallel keeps a
    /// [`Count`] on a stack while it runs (they nest, so the innermost is
    /// on top). Each visit counts one step, as [`Engine::tick`] counts one;
    /// the visit that spends the budget is an Error at its node and is not
    /// traced, as there. With `TRACE` each node's status goes into the
    /// trace as it answers, as [`Engine::tick`] writes it.
    #[inline(never)]
    pub(super) fn run_plain<const TRACE: bool>(&mut self, root: u32) -> Status {
        let mut counts = Vec::new();
        let status = self.run_plain_with::<TRACE>(root, &mut counts);
        if counts.capacity() != 0 {
            counts.clear();
            SPARE_COUNTS.set(counts);
        }
        status
    }

    /// [`Engine::run_plain`] with `counts` for the loops and parallels
    /// being ticked (empty, without room, until the first is entered).
    #[inline(always)]
    fn run_plain_with<const TRACE: bool>(&mut self, root: u32, counts: &mut Vec<Count>) -> Status {
        let tree = self.tree;
        let program: &[Instr] = &tree.program;
        let mut pc = root;
        loop {
            // Down: visit `pc`, entering composites, until a node answers.
            self.fuel -= 1;
            let mut status = if self.fuel == 0 {
                self.out_of_steps(pc)
            } else {
                let op = program[pc as usize].op;
                let mut spent = false;
                let status = match op {
                    Op::Leaf => self.leaf(pc, &tree.nodes[pc as usize].kind),
                    Op::Selector
                    | Op::Sequence
                    | Op::Invert
                    | Op::Always
                    | Op::Never
                    | Op::ForceSuccess
                    | Op::ForceFailure => {
                        pc += 1;
                        // A first child that is a leaf is ticked at once.
                        if program[pc as usize].op != Op::Leaf {
                            continue;
                        }
                        self.fuel -= 1;
                        if self.fuel == 0 {
                            spent = true;
                            self.out_of_steps(pc)
                        } else {
                            self.leaf(pc, &tree.nodes[pc as usize].kind)
                        }
                    }
                    Op::Loop | Op::LoopUntilSuccess | Op::Parallel => {
                        match self.enter_counted(pc, op, counts) {
                            None => {
                                pc += 1;
                                continue;
                            }
                            Some(status) => status,
                        }
                    }
                    Op::General => self.fail(pc, "not a plain node"),
                };
                // (The visit that spent the budget is not traced.)
                if TRACE && !spent {
                    self.trace_plain(pc, status);
                }
                status
            };
            // Up: hand `status` to the composites above until one visits a
            // child that is not a leaf (down again) or the root answers.
            'up: loop {
                if pc == root {
                    return status;
                }
                let parent = program[pc as usize].parent;
                let Instr {
                    op: parent_op,
                    end: parent_end,
                    ..
                } = program[parent as usize];
                // The children of `parent` answer to it: while the next one
                // is a leaf, it is ticked here, with the parent at hand.
                loop {
                    let end = program[pc as usize].end;
                    let next = match parent_op {
                        Op::Selector | Op::Sequence => {
                            let flow = if parent_op == Op::Selector {
                                Flow::SELECTOR
                            } else {
                                Flow::SEQUENCE
                            };
                            // The flow's children, while they are leaves, are
                            // ticked here, in a loop of the flow's own.
                            let mut end = end;
                            loop {
                                if let Some(done) = flow.resume(status) {
                                    break Next::Done(done);
                                }
                                // The child after the one that answered, if any.
                                if end >= parent_end {
                                    break Next::Done(flow.end());
                                }
                                pc = end;
                                let child = program[pc as usize];
                                if child.op != Op::Leaf {
                                    break Next::Visit(pc);
                                }
                                end = child.end;
                                self.fuel -= 1;
                                if self.fuel == 0 {
                                    status = self.out_of_steps(pc);
                                    continue;
                                }
                                status = self.leaf(pc, &tree.nodes[pc as usize].kind);
                                if TRACE {
                                    self.trace_plain(pc, status);
                                }
                            }
                        }
                        Op::Loop | Op::LoopUntilSuccess | Op::Parallel => {
                            match self.resume_counted(parent, parent_op, status, counts) {
                                Some(done) => Next::Done(done),
                                None if parent_op == Op::Parallel => {
                                    if end < parent_end {
                                        Next::Visit(end)
                                    } else {
                                        let done = counts.pop().map_or(Status::Error, Count::end);
                                        Next::Done(done)
                                    }
                                }
                                None => Next::Visit(pc),
                            }
                        }
                        Op::Invert => Next::Done(invert(status)),
                        Op::Always => Next::Done(always(status)),
                        Op::Never => Next::Done(never(status)),
                        Op::ForceSuccess => Next::Done(decorators::force(status, true)),
                        Op::ForceFailure => Next::Done(decorators::force(status, false)),
                        // Never a parent.
                        Op::Leaf | Op::General => {
                            Next::Done(self.fail(parent, "not a plain composite"))
                        }
                    };
                    match next {
                        Next::Visit(next) => {
                            pc = next;
                            if program[pc as usize].op != Op::Leaf {
                                break 'up;
                            }
                            self.fuel -= 1;
                            status = if self.fuel == 0 {
                                self.out_of_steps(pc)
                            } else {
                                let status = self.leaf(pc, &tree.nodes[pc as usize].kind);
                                if TRACE {
                                    self.trace_plain(pc, status);
                                }
                                status
                            };
                        }
                        Next::Done(done) => {
                            pc = parent;
                            status = done;
                            if TRACE {
                                self.trace_plain(pc, status);
                            }
                            continue 'up;
                        }
                    }
                }
            }
        }
    }

    /// Enters plain loop or counting parallel `id` (`op`): resolves its
    /// options and pushes its [`Count`]; `None` then visits its first
    /// child, else it answers at once (an Error in an option, or a loop of
    /// no iterations).
    #[inline(never)]
    fn enter_counted(&mut self, id: u32, op: Op, counts: &mut Vec<Count>) -> Option<Status> {
        let count = if op == Op::Parallel {
            self.plain_count(id)
        } else {
            self.loop_count(id)
                .and_then(|n| match repeat_of(op).start(0, n) {
                    Some(status) => Err(status),
                    None => Ok(Count {
                        counted: Counted::Successes,
                        how_many: n,
                        hits: 0,
                    }),
                })
        };
        match count {
            Ok(count) => {
                if counts.capacity() == 0 {
                    *counts = SPARE_COUNTS.take();
                }
                counts.push(count);
                None
            }
            Err(status) => Some(status),
        }
    }

    /// A child of plain loop or counting parallel `id` (`op`) answered
    /// `status`: `Some` is the composite's answer (its count popped); `None`
    /// visits the child again (a loop) or the next child (a parallel, which
    /// answers [`Count::end`] after its last).
    #[inline(never)]
    fn resume_counted(
        &mut self,
        id: u32,
        op: Op,
        status: Status,
        counts: &mut Vec<Count>,
    ) -> Option<Status> {
        let Some(count) = counts.last_mut() else {
            return Some(self.fail(id, "a plain loop or parallel without its count"));
        };
        let done = if op == Op::Parallel {
            count.resume(status)
        } else {
            count.hits += 1;
            repeat_of(op).resume(status, count.hits, count.how_many)
        };
        if done.is_some() {
            counts.pop();
        }
        done
    }

    /// [`Engine::run_plain`], traced: kept out of [`Engine::tick`]'s body,
    /// so that the untraced tick's dispatch stays as small as it was.
    #[cold]
    #[inline(never)]
    pub(super) fn run_plain_traced(&mut self, id: u32) -> Status {
        self.run_plain::<true>(id)
    }

    /// The count of plain loop `id`, resolved as the general path resolves it.
    #[inline(always)]
    fn loop_count(&mut self, id: u32) -> Result<u64, Status> {
        let tree = self.tree;
        match &tree.nodes[id as usize].kind {
            Kind::Loop { count } | Kind::LoopUntilSuccess { count } => {
                self.count_opt(id, "count", count)
            }
            _ => Err(self.fail(id, "not a loop")),
        }
    }

    /// The options of plain counting parallel `id`, resolved as the
    /// general path resolves them.
    #[inline(always)]
    fn plain_count(&mut self, id: u32) -> Result<Count, Status> {
        let tree = self.tree;
        match &tree.nodes[id as usize].kind {
            Kind::Parallel(Parallel::Count { mode, how_many }) => {
                self.count_options(id, mode, how_many)
            }
            _ => Err(self.fail(id, "not a counting parallel")),
        }
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
}

/// The step functions of a plain loop instruction.
#[inline(always)]
fn repeat_of(op: Op) -> Repeat {
    if op == Op::Loop {
        Repeat::LOOP
    } else {
        Repeat::UNTIL_SUCCESS
    }
}

#[cfg(test)]
mod tests {
    use crate::{Registry, compile_str};

    /// The plain flags of a tree's nodes, in pre-order.
    fn plain(text: &str) -> Vec<bool> {
        match compile_str("t.edn", text, &Registry::new()) {
            Ok(tree) => tree.nodes.iter().map(|n| n.plain).collect(),
            Err(e) => vec![e.to_string().is_empty()],
        }
    }

    #[test]
    fn plain_nodes_lower_to_instructions_with_their_subtree_end_and_parent() {
        use crate::tree::{Instr, Op};
        let tree = compile_str(
            "t.edn",
            "[:sequence [:loop {:count 2} [:invert [:success]]] [:wait {:ticks 1}] [:failure]]",
            &Registry::new(),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let ins = |op, end, parent| Instr { op, end, parent };
        assert_eq!(
            tree.program,
            [
                ins(Op::General, 6, u32::MAX),
                ins(Op::Loop, 4, 0),
                ins(Op::Invert, 4, 1),
                ins(Op::Leaf, 4, 2),
                ins(Op::General, 5, 0),
                ins(Op::Leaf, 6, 0),
            ]
        );
        assert_eq!(std::mem::size_of::<Instr>(), 12);
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
}
