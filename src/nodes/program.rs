//! The plain path as a program of status-directed jumps.
//!
//! A plain subtree (see [`super::mark_plain`]) is compiled, once, into a
//! program in which sequences, selectors and the decorators `:invert`,
//! `:always`, `:never` and `:force` have no instruction of their own: only
//! leaves, domain nodes, counting parallels and the two loops are
//! instructions. Each instruction has one edge per status it can answer
//! (Success, Failure: nothing in a plain subtree runs), worked out here by
//! following the composites' step functions upward (`Flow::resume`, the
//! decorators' status maps): a sequence's child that succeeds goes on to
//! the entry of the next one, the last one's Success is the sequence's,
//! and so on up. An edge ends at the next instruction or at the end of the
//! subtree with a status, and carries how many nodes it enters on the way
//! (each one step of the budget). Entering a composite enters its first
//! child, the next node in pre-order, so the nodes an edge enters are the
//! ids just before its target's node, a chain the rare out-of-steps case
//! walks to name the node that ran out, as the recursive walk does.
//!
//! A loop or a counting parallel is two instructions: its entry, which
//! resolves its options into a slot of a small array (one slot a level of
//! loops and parallels, sized when compiled), and its resume, which takes
//! its child's status and calls `Repeat`'s or `Count`'s resume.

use super::composite::{self, Count, Counted, Flow, Repeat};
use super::decorators;
use crate::tick::{Engine, Status};
use crate::tree::{CountMode, Kind, Node, Parallel};

/// The most loops and parallels nested within one another that a program
/// holds; a plain subtree with more keeps the recursive plain path.
pub(crate) const MAX_SLOTS: usize = 15;

/// An edge's target that ends the subtree with Success (with Failure: the next one).
const END_SUCCESS: u32 = u32::MAX - 1;

/// No slot to count in: the slot past the last, which counts what no one reads.
const NO_HIT: u8 = MAX_SLOTS as u8;

/// A jump: to instruction `target` (or the end of the subtree, `END_SUCCESS`
/// and up), entering `enter` nodes on the way (the `enter` ids before the
/// target's node); on the way, the parallel whose slot is `hit` counts its
/// child (`NO_HIT`: none).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Edge {
    target: u32,
    enter: u16,
    hit: u8,
}

impl Edge {
    const fn end(status: Status) -> Edge {
        Edge {
            target: match status {
                Status::Success => END_SUCCESS,
                _ => END_SUCCESS + 1,
            },
            enter: 0,
            hit: NO_HIT,
        }
    }

    const fn to(target: u32) -> Edge {
        Edge {
            target,
            enter: 0,
            hit: NO_HIT,
        }
    }

    const PLACEHOLDER: Edge = Edge::end(Status::Failure);
}

/// What an instruction does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    /// `[:success]` and `[:failure]`: edge 0 or 1 at once.
    Success,
    Failure,
    /// The usual leaves, matched here rather than by their kind.
    Present,
    Test,
    Define,
    Inc,
    /// Any other leaf or a domain node: ticked, its status picks edge 0 or 1.
    Leaf,
    /// A loop entered: its count resolved into the slot; edge 0 enters
    /// its child, edge 1 is the loop's status when the count is 0.
    LoopEnter,
    /// A loop's child answered the status that goes on (`status`, the
    /// loop's `Repeat::keep_going`; any other is the loop's, an edge
    /// worked out when compiled): edges 0 and 1 are the loop's own, edge 2
    /// enters the child again.
    LoopNext,
    /// A parallel entered: its `:how-many` into the slot; edge 0 enters its
    /// first child. Each child's status is counted on its edges (`hit`).
    ParEnter,
    /// A parallel's children all answered: edges 0 and 1 are the
    /// parallel's own; `status` is what it counts (Success or Failure).
    ParEnd,
}

/// One instruction (see the module's documentation).
#[derive(Debug, Clone, Copy)]
struct Instr {
    op: Op,
    /// The slot of a loop or parallel.
    slot: u8,
    /// What `LoopNext` and `ParEnd` take (see [`Op`]).
    status: Status,
    /// The node it stands for (a loop's or parallel's for their resumes).
    node: u32,
    edges: [Edge; 3],
}

/// A plain subtree's program: its instructions and the edge that enters it.
#[derive(Debug, Default, Clone)]
pub(crate) struct Program {
    instrs: Vec<Instr>,
    entry: Option<Edge>,
    /// The most nodes one run of the program can enter (`u64::MAX` when
    /// a loop's count is not a constant): a tick with more steps left runs
    /// it without testing the budget on each edge.
    max_steps: u64,
}

impl Program {
    /// The program of the plain subtree rooted at node 0 of `nodes`, or an
    /// empty one when the root is not plain, its loops and parallels
    /// nest deeper than [`MAX_SLOTS`] or a parallel's `:mode` is not a
    /// constant.
    pub(crate) fn build(nodes: &[Node]) -> Program {
        let mut program = Program::default();
        let Some(root) = nodes.first() else {
            return program;
        };
        if !root.plain {
            return program;
        }
        let mut builder = Builder {
            nodes,
            instrs: Vec::new(),
        };
        let entry = builder.node(0, Edge::end(Status::Success), Edge::end(Status::Failure), 0);
        if let Some(entry) = entry {
            program.instrs = builder.instrs;
            program.entry = Some(entry);
            program.max_steps = max_steps(nodes, 0);
        }
        program
    }

    /// Whether the program holds the subtree.
    #[inline(always)]
    pub(crate) fn entry(&self) -> Option<Edge> {
        self.entry
    }
}

struct Builder<'n> {
    nodes: &'n [Node],
    instrs: Vec<Instr>,
}

impl Builder<'_> {
    fn push(&mut self, op: Op, slot: usize, node: u32, status: Status) -> u32 {
        let at = self.instrs.len() as u32;
        self.instrs.push(Instr {
            op,
            slot: slot as u8,
            status,
            node,
            edges: [Edge::PLACEHOLDER; 3],
        });
        at
    }

    fn set(&mut self, at: u32, edge: usize, to: Edge) {
        if let Some(instr) = self.instrs.get_mut(at as usize)
            && let Some(e) = instr.edges.get_mut(edge)
        {
            *e = to;
        }
    }

    /// Compiles node `id`, whose Success goes on along `success` and
    /// Failure along `failure`, `slot` being its level of loops and
    /// parallels: the edge that enters it (`None` when it cannot be).
    fn node(&mut self, id: u32, success: Edge, failure: Edge, slot: usize) -> Option<Edge> {
        let node = self.nodes.get(id as usize)?;
        let after = |status: Status| match status {
            Status::Success => success,
            _ => failure,
        };
        let entered = |e: Edge| {
            Some(Edge {
                target: e.target,
                enter: e.enter.checked_add(1)?,
                hit: e.hit,
            })
        };
        match &node.kind {
            Kind::Selector { .. } | Kind::Sequence { .. } => {
                let flow = if matches!(node.kind, Kind::Sequence { .. }) {
                    Flow::SEQUENCE
                } else {
                    Flow::SELECTOR
                };
                let kids = self.children(id);
                // From the last child back: each child's status either
                // moves on to the next child's entry or is the flow's.
                let mut next = after(flow.end());
                for &kid in kids.iter().rev() {
                    let on = |status: Status| match flow.resume(status) {
                        None => next,
                        Some(status) => after(status),
                    };
                    let (s, f) = (on(Status::Success), on(Status::Failure));
                    next = self.node(kid, s, f, slot)?;
                }
                entered(next)
            }
            Kind::Invert | Kind::Always | Kind::Never | Kind::Force { .. } => {
                let map = |status: Status| match &node.kind {
                    Kind::Invert => composite::invert(status),
                    Kind::Always => composite::always(status),
                    Kind::Never => composite::never(status),
                    Kind::Force { success } => decorators::force(status, *success),
                    _ => status,
                };
                let (s, f) = (after(map(Status::Success)), after(map(Status::Failure)));
                entered(self.node(id + 1, s, f, slot)?)
            }
            Kind::Loop { .. } | Kind::LoopUntilSuccess { .. } => {
                if slot >= MAX_SLOTS {
                    return None;
                }
                let repeat = repeat_of(&node.kind);
                let enter = self.push(Op::LoopEnter, slot, id, Status::Success);
                let again = self.push(Op::LoopNext, slot, id, repeat.keep_going);
                // A status that stops the loop whatever its count is the
                // loop's; the one that goes on is counted at `again`.
                let on = |status: Status| match repeat.resume(status, 0, u64::MAX) {
                    Some(status) => after(status),
                    None => Edge::to(again),
                };
                let (s, f) = (on(Status::Success), on(Status::Failure));
                let child = self.node(id + 1, s, f, slot + 1)?;
                self.set(enter, 0, child);
                self.set(enter, 1, after(repeat.keep_going));
                self.set(again, 0, success);
                self.set(again, 1, failure);
                self.set(again, 2, child);
                entered(Edge::to(enter))
            }
            Kind::Parallel(Parallel::Count { mode, .. }) => {
                if slot >= MAX_SLOTS {
                    return None;
                }
                let counted = match mode {
                    CountMode::Successes => Counted::Successes,
                    CountMode::Failures => Counted::Failures,
                    CountMode::Dynamic(_) => return None,
                };
                let enter = self.push(Op::ParEnter, slot, id, Status::Success);
                let end = self.push(Op::ParEnd, slot, id, Status::Success);
                if counted == Counted::Failures
                    && let Some(instr) = self.instrs.get_mut(end as usize)
                {
                    instr.status = Status::Failure;
                }
                // Each child's status counted (`Count::resume`) on its way
                // to the next child.
                let counts = |status: Status| {
                    let mut count = Count {
                        counted,
                        how_many: 0,
                        hits: 0,
                    };
                    let _ = count.resume(status);
                    count.hits > 0
                };
                let kids = self.children(id);
                let mut next = Edge::to(end);
                for &kid in kids.iter().rev() {
                    let on = |status: Status| Edge {
                        hit: if counts(status) { slot as u8 } else { NO_HIT },
                        ..next
                    };
                    let (s, f) = (on(Status::Success), on(Status::Failure));
                    next = self.node(kid, s, f, slot + 1)?;
                }
                self.set(enter, 0, next);
                self.set(end, 0, success);
                self.set(end, 1, failure);
                entered(Edge::to(enter))
            }
            kind => {
                let op = match kind {
                    Kind::Success => Op::Success,
                    Kind::Failure => Op::Failure,
                    Kind::Present { .. } => Op::Present,
                    Kind::Test { .. } => Op::Test,
                    Kind::Define { .. } => Op::Define,
                    Kind::Inc { .. } => Op::Inc,
                    _ => Op::Leaf,
                };
                let at = self.push(op, slot, id, Status::Success);
                self.set(at, 0, success);
                self.set(at, 1, failure);
                entered(Edge::to(at))
            }
        }
    }

    /// The children of plain node `id`, in the pre-order layout.
    fn children(&self, id: u32) -> Vec<u32> {
        let mut kids = Vec::new();
        let Some(node) = self.nodes.get(id as usize) else {
            return kids;
        };
        let mut next = id + 1;
        while next < node.subtree_end {
            kids.push(next);
            match self.nodes.get(next as usize) {
                Some(kid) => next = kid.subtree_end,
                None => break,
            }
        }
        kids
    }
}

/// The most nodes one visit of plain node `id` enters (see `Program::max_steps`).
fn max_steps(nodes: &[Node], id: u32) -> u64 {
    let Some(node) = nodes.get(id as usize) else {
        return u64::MAX;
    };
    let mut below = 0u64;
    let mut next = id + 1;
    while next < node.subtree_end {
        below = below.saturating_add(max_steps(nodes, next));
        match nodes.get(next as usize) {
            Some(kid) => next = kid.subtree_end,
            None => break,
        }
    }
    match &node.kind {
        Kind::Loop { count } | Kind::LoopUntilSuccess { count } => match count {
            crate::tree::Opt::Const(crate::value::Value::Int(n)) if *n >= 0 => {
                below.saturating_mul(*n as u64).saturating_add(1)
            }
            _ => u64::MAX,
        },
        _ => below.saturating_add(1),
    }
}

fn repeat_of(kind: &Kind) -> Repeat {
    match kind {
        Kind::LoopUntilSuccess { .. } => Repeat::UNTIL_SUCCESS,
        _ => Repeat::LOOP,
    }
}

impl<'t> Engine<'t> {
    /// Runs the tree's plain root program from its entry.
    #[inline(always)]
    pub(crate) fn run_program(&mut self, entry: Edge) -> Status {
        if self.fuel > self.tree.program.max_steps {
            self.run_program_as::<false>(entry)
        } else {
            self.run_program_as::<true>(entry)
        }
    }

    /// [`Engine::run_program`], testing the step budget on each edge with `CHECKED`.
    #[inline(never)]
    fn run_program_as<const CHECKED: bool>(&mut self, entry: Edge) -> Status {
        let tree = self.tree;
        let instrs = &tree.program.instrs[..];
        let nodes = &tree.nodes[..];
        // Per slot: a loop's iterations done or a parallel's children
        // counted, and the loop's count or the parallel's `:how-many`; the
        // last slot counts the edges that count nothing.
        let mut done = [0u64; MAX_SLOTS + 1];
        let mut limit = [0u64; MAX_SLOTS + 1];
        let mut fuel = self.fuel;
        let mut edge = entry;
        loop {
            let enter = u64::from(edge.enter);
            if CHECKED && fuel <= enter {
                self.fuel = fuel;
                return self.program_out_of_steps(edge);
            }
            fuel -= enter;
            done[usize::from(edge.hit) & MAX_SLOTS] += 1;
            let Some(instr) = instrs.get(edge.target as usize) else {
                self.fuel = fuel;
                return if edge.target == END_SUCCESS {
                    Status::Success
                } else {
                    Status::Failure
                };
            };
            let id = instr.node;
            let status = match instr.op {
                Op::Success => Status::Success,
                Op::Failure => Status::Failure,
                Op::Present => match nodes.get(id as usize).map(|n| &n.kind) {
                    Some(Kind::Present { key }) => Status::from_bool(key.get(self.db).is_some()),
                    _ => Status::Error,
                },
                Op::Test => match nodes.get(id as usize).map(|n| &n.kind) {
                    Some(Kind::Test { key, oper, val }) => self.test(id, key, oper, val),
                    _ => Status::Error,
                },
                Op::Define => match nodes.get(id as usize).map(|n| &n.kind) {
                    Some(Kind::Define { key, val }) => self.define::<false>(id, key, val),
                    _ => Status::Error,
                },
                Op::Inc => match nodes.get(id as usize).map(|n| &n.kind) {
                    Some(Kind::Inc { key }) => self.inc::<false>(id, key),
                    _ => Status::Error,
                },
                Op::Leaf => {
                    self.fuel = fuel;
                    let status = match nodes.get(id as usize).map(|n| &n.kind) {
                        Some(kind @ super::one_visit_leaf!()) => self.leaf::<false>(id, kind),
                        Some(Kind::Custom { node_type, options }) => {
                            self.call_custom::<true, false>(id, node_type, options)
                        }
                        _ => Status::Error,
                    };
                    fuel = self.fuel;
                    status
                }
                Op::LoopEnter => {
                    let count = match nodes.get(id as usize).map(|n| &n.kind) {
                        Some(Kind::Loop { count } | Kind::LoopUntilSuccess { count }) => count,
                        _ => return self.fail(id, "not a loop"),
                    };
                    let count = match self.count_opt(id, "count", count) {
                        Ok(n) => n,
                        Err(status) => {
                            self.fuel = fuel;
                            return status;
                        }
                    };
                    let slot = usize::from(instr.slot) & MAX_SLOTS;
                    done[slot] = 0;
                    limit[slot] = count;
                    // The child's entry, or the loop's status at once.
                    Status::from_bool(count != 0)
                }
                Op::LoopNext => {
                    let slot = usize::from(instr.slot) & MAX_SLOTS;
                    done[slot] += 1;
                    let repeat = Repeat {
                        keep_going: instr.status,
                    };
                    match repeat.resume(instr.status, done[slot], limit[slot]) {
                        Some(status) => status,
                        None => {
                            edge = instr.edges[2];
                            continue;
                        }
                    }
                }
                Op::ParEnter => {
                    let how_many = match nodes.get(id as usize).map(|n| &n.kind) {
                        Some(Kind::Parallel(Parallel::Count { mode, how_many })) => {
                            match self.count_options(id, mode, how_many) {
                                Ok(count) => count.how_many,
                                Err(status) => {
                                    self.fuel = fuel;
                                    return status;
                                }
                            }
                        }
                        _ => return self.fail(id, "not a parallel"),
                    };
                    let slot = usize::from(instr.slot) & MAX_SLOTS;
                    done[slot] = 0;
                    limit[slot] = how_many;
                    Status::Success
                }
                Op::ParEnd => {
                    let slot = usize::from(instr.slot) & MAX_SLOTS;
                    let counted = if instr.status == Status::Success {
                        Counted::Successes
                    } else {
                        Counted::Failures
                    };
                    Count {
                        counted,
                        how_many: limit[slot],
                        hits: done[slot],
                    }
                    .end()
                }
            };
            let at = status as usize;
            if at > 1 {
                self.fuel = fuel;
                if status != Status::Error || self.error.is_some() {
                    return status;
                }
                return self.fail(id, "not a plain node");
            }
            edge = instr.edges[at];
        }
    }
}

impl Engine<'_> {
    /// The step budget ran out on `edge`'s way: the nodes it enters are
    /// walked one at a time, as the recursive walk enters them, so that the
    /// error names the same node.
    #[cold]
    #[inline(never)]
    fn program_out_of_steps(&mut self, edge: Edge) -> Status {
        let tree = self.tree;
        let target = tree
            .program
            .instrs
            .get(edge.target as usize)
            .map_or(0, |i| i.node);
        let first = target + 1 - u32::from(edge.enter);
        for id in first..=target {
            self.fuel -= 1;
            if self.fuel == 0 {
                return self.out_of_steps(id);
            }
        }
        self.fail(target, "the step budget ran out")
    }
}
