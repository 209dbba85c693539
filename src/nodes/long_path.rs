//! The long path: a reactive flow with a `:wait` below it, ticked as the
//! plain path ticks a flow.
//!
//! A `:selector` or `:sequence` is general when a node below it can run,
//! and the general path then visits it and every flow between it and the
//! running node with their bookkeeping: a frame each, each child's plain
//! flag tested, each visit looked up in the running set. When the one
//! child of a flow that is not plain is a `:wait` or another such flow
//! (and nothing there has preconditions: [`Node::long_path`], marked when
//! the tree is compiled), that bookkeeping has one answer the wait alone
//! can give: the flows above it return Running exactly when it does, and
//! nothing else below them can run, be skipped or keep marks that outlive
//! the tick. So an untraced tick visits such a flow on the long path: its
//! plain children through the plain path's visit, its one other child
//! here, and
//!
//! - the wait, returning Running, notes itself and each flow above it up
//!   to the first that is not on the long path, children first, as their
//!   general visits would have as they returned (nothing happens between
//!   its return and theirs: their later children are plain);
//! - a flow that returns anything else does the bookkeeping of a general
//!   visit itself when something runs or ran (halting its long child when
//!   an earlier child decided it, clearing marks, noting the visit), and
//!   nothing when nothing does;
//! - a flow whose long child was running and moves on keeps it marked, as
//!   the general flow does, until the flow ends in the same tick.
//!
//! Marks that outlive a tick belong to a reactive sequence kept by a
//! reactive sequence parent that runs on (`Engine::kept_by_parent`): a
//! general reactive sequence's long-path sequence children, and theirs,
//! are left general (`unmark_kept_sequences`). A traced tick, and a tick
//! on the general path (`PlainPath::Off`), visit these flows as before, so
//! that every trace event keeps its place; tests/it/long_path.rs compares
//! both paths' dbs, statuses, steps, requests and running sets.

use super::composite::{Children, Flow};
use crate::tick::{Engine, Fate, Status};
use crate::tree::{Kind, Node, Opt};
use crate::value::kw;

/// Marks node `i`, a node that is not plain (`kids` its children, marked
/// already), as on the long path ([`Node::long_path`]) when it is a
/// reactive `:selector` or `:sequence` that may be. A reactive sequence
/// that is not keeps its long-path sequence children general (see the
/// module's doc).
#[cold]
#[inline(never)]
pub(super) fn mark_long_path(nodes: &mut [Node], i: usize, kids: &[u32]) {
    let Some(node) = nodes.get_mut(i) else {
        return;
    };
    // A tree marked again (stubs put in: `Stubs::apply`) may have taken a
    // node, or a child that could not run, off the long path.
    node.long_child_at = 0;
    if !matches!(
        node.kind,
        Kind::Selector { memory: false } | Kind::Sequence { memory: false }
    ) {
        return;
    }
    let long_child_at = may_take_long_path(nodes, i, kids);
    match nodes.get_mut(i) {
        Some(node) if let Some(at) = long_child_at => {
            node.long_child_at = at;
            note_long_run(nodes, u32::try_from(i).unwrap_or(u32::MAX));
        }
        Some(node) if matches!(node.kind, Kind::Sequence { .. }) => {
            unmark_kept_sequences(nodes, kids);
        }
        _ => {}
    }
}

/// Notes in the `:wait` at the end of long-path flow `top`'s run of long
/// children the number of nodes from `top` to it ([`Node::long_run`]). Flows are marked children first, so the topmost flow of a
/// run notes itself last; a flow left general afterwards
/// ([`unmark_kept_sequences`]) hands the run to the flow below it.
fn note_long_run(nodes: &mut [Node], top: u32) {
    let mut flow = top;
    let mut len = 1_u32;
    loop {
        let Some(node) = nodes.get(flow as usize) else {
            return;
        };
        // A long-path flow's children are in pre-order, and one of them
        // is not plain: a `:wait` or another long-path flow.
        let end = node.subtree_end;
        let mut child = flow + 1;
        let long = loop {
            match nodes.get(child as usize) {
                Some(n) if child < end && n.plain => child = n.subtree_end,
                Some(n) if child < end => break n,
                _ => return,
            }
        };
        len += 1;
        if matches!(long.kind, Kind::Wait { .. }) {
            if let Some(wait) = nodes.get_mut(child as usize) {
                wait.long_run = u8::try_from(len).unwrap_or(0);
            }
            return;
        }
        if !long.long_path() {
            return;
        }
        flow = child;
    }
}

/// Whether node `i`, a reactive flow that is not plain (`kids` its
/// children), may take the long path: no preconditions, its children in
/// pre-order, and one of them not plain, a `:wait` or a long-path flow
/// without preconditions, that lies no further after it than
/// [`Node::long_child_at`] holds. If so, how far after it that child lies.
fn may_take_long_path(nodes: &[Node], i: usize, kids: &[u32]) -> Option<u8> {
    let node = nodes.get(i)?;
    if node.pre.is_some() || !super::plain::in_pre_order(nodes, i, kids) {
        return None;
    }
    let mut general = kids
        .iter()
        .filter_map(|&k| nodes.get(k as usize).map(|n| (k, n)))
        .filter(|(_, n)| !n.plain);
    match (general.next(), general.next()) {
        (Some((k, one)), None)
            if one.pre.is_none() && (matches!(one.kind, Kind::Wait { .. }) || one.long_path()) =>
        {
            u8::try_from((k as usize).checked_sub(i)?).ok()
        }
        _ => None,
    }
}

/// `kids`, the children of a general reactive sequence: those that are
/// reactive sequences on the long path go back to the general path, and
/// so, in turn, do theirs (see the module's doc).
fn unmark_kept_sequences(nodes: &mut [Node], kids: &[u32]) {
    for &k in kids {
        unmark_kept_sequence(nodes, k);
    }
}

/// [`unmark_kept_sequences`] of one child, `k`.
fn unmark_kept_sequence(nodes: &mut [Node], k: u32) {
    let Some(node) = nodes.get_mut(k as usize) else {
        return;
    };
    if !(node.long_path() && matches!(node.kind, Kind::Sequence { memory: false })) {
        return;
    }
    node.long_child_at = 0;
    let end = node.subtree_end;
    // A long-path flow's children are in pre-order.
    let mut child = k + 1;
    while child < end {
        unmark_kept_sequence(nodes, child);
        let Some(n) = nodes.get_mut(child as usize) else {
            return;
        };
        let next = n.subtree_end;
        if n.long_path() {
            // It stays on the long path: its run of flows begins there.
            note_long_run(nodes, child);
        } else if matches!(n.kind, Kind::Wait { .. }) {
            n.long_run = 0;
        }
        child = next;
    }
}

/// The parent of node `node` when it is on the long path.
#[inline(always)]
fn long_path_parent(nodes: &[Node], node: u32) -> Option<u32> {
    let here = nodes.get(node as usize)?;
    nodes
        .get(here.parent as usize)
        .filter(|parent| parent.long_path())
        .map(|_| here.parent)
}

/// [`Node::long_run`] of wait `id` (whose parent is on the long path)
/// worked out by climbing from it.
fn long_run_climbed(nodes: &[Node], id: u32) -> u8 {
    let (mut node, mut len) = (id, 1_u32);
    while let Some(parent) = long_path_parent(nodes, node) {
        node = parent;
        len += 1;
    }
    u8::try_from(len).unwrap_or(0)
}

/// Whether `set` names the run of wait `id` (whose parent is on the long
/// path), its top first, and nothing else ([`Node::long_run`] of them).
fn is_run_of(nodes: &[Node], id: u32, set: &[(u32, Fate)]) -> bool {
    // Climbed from the wait, as the set is read from its end (nothing is
    // allocated: the allocation tests tick with these checks).
    let mut node = Some(id);
    for &(n, _) in set.iter().rev() {
        if node != Some(n) {
            return false;
        }
        node = long_path_parent(nodes, n);
    }
    node.is_none()
}

impl<'t> Engine<'t> {
    /// Ticks the tree's root, `root`, on the long path (an untraced tick):
    /// what [`Engine::tick`] does for it, without its frame. A `:selector`
    /// root, the usual root of a reactive tree, runs its loop here, in the
    /// tick's own frame, as the plain path's does
    /// (`Engine::tick_plain_root`): its call saved as many registers as
    /// the tick had saved already. A `:sequence` root is a call.
    #[inline(always)]
    pub(crate) fn tick_long_root(&mut self, root: &'t Node) -> Status {
        if let Kind::Sequence { .. } = root.kind {
            self.long_flow::<true, true>(0, root)
        } else {
            self.long_flow_here::<false, true, true>(0, root)
        }
    }

    /// Ticks `:sequence` (`SEQUENCE`) or `:selector` `id` (`node`) on the
    /// long path ([`Node::long_path`], an untraced tick that takes the
    /// plain path), counting its step first with `STEP` (the general
    /// dispatch counted it already).
    #[inline(never)]
    pub(super) fn long_flow<const SEQUENCE: bool, const STEP: bool>(
        &mut self,
        id: u32,
        node: &'t Node,
    ) -> Status {
        self.long_flow_here::<SEQUENCE, STEP, true>(id, node)
    }

    /// [`Engine::long_flow`] in its caller's frame; a long child that is a
    /// flow is visited in this frame too when `NEST` (one level: the usual
    /// wait under a sequence under the root), else by a call.
    #[inline(always)]
    fn long_flow_here<const SEQUENCE: bool, const STEP: bool, const NEST: bool>(
        &mut self,
        id: u32,
        node: &'t Node,
    ) -> Status {
        if STEP {
            self.fuel -= 1;
            if self.fuel == 0 {
                return self.out_of_steps(id);
            }
        }
        let flow = if SEQUENCE {
            Flow::SEQUENCE
        } else {
            Flow::SELECTOR
        };
        let tree = self.tree;
        // The plain children before the long child: the loop's fetch of a
        // child stops at the long child (`Node::long_child_at`), so it tests
        // no child's plain flag.
        let mut children =
            Children::<true>::until(&tree.nodes, id + 1, id + u32::from(node.long_child_at));
        // The loop keeps no child index: the rare ends that need it (when
        // something runs or ran) work it out from the child's id, or from
        // where its subtree ends.
        while let Some((_, child, kid)) = children.next() {
            debug_assert!(kid.plain);
            let status = if SEQUENCE {
                self.visit::<true, false>(child, kid)
            } else {
                self.visit_inlining::<true, false, true>(child, kid, children.nodes)
            };
            if status == flow.next {
                continue;
            }
            return self.long_flow_ended(id, node, Some(children.after_last()), SEQUENCE, status);
        }
        // Where the loop stopped: the long child (the children are in
        // pre-order), its id kept by the loop rather than worked out again.
        let long_child = children.after_last();
        let Some(kid) = tree.nodes.get(long_child as usize) else {
            return self.long_flow_ended(id, node, None, SEQUENCE, flow.end());
        };
        debug_assert!(!kid.plain && long_child < node.subtree_end);
        let status = self.long_child::<NEST>(long_child, kid);
        // The wait noted this flow running with itself.
        if status == Status::Running {
            return Status::Running;
        }
        if status != flow.next {
            return self.long_flow_ended(id, node, Some(kid.subtree_end), SEQUENCE, status);
        }
        if self.long.is_some()
            && let Err(status) = self.long_child_moved_on(id, long_child, SEQUENCE)
        {
            return status;
        }
        if kid.subtree_end >= node.subtree_end {
            // The long child was the last (the usual wait at the end).
            return self.long_flow_ended(id, node, None, SEQUENCE, flow.end());
        }
        self.long_flow_after::<SEQUENCE>(id, node, kid.subtree_end)
    }

    /// [`Engine::long_flow_here`] past its long child, which moved on: the
    /// plain children after it, from `first` on, visited by a call (the
    /// usual long child, a wait, runs on and ends the flow's visit).
    #[inline(never)]
    fn long_flow_after<const SEQUENCE: bool>(
        &mut self,
        id: u32,
        node: &'t Node,
        first: u32,
    ) -> Status {
        let flow = if SEQUENCE {
            Flow::SEQUENCE
        } else {
            Flow::SELECTOR
        };
        let tree = self.tree;
        let mut children = Children::<true>::until(&tree.nodes, first, node.subtree_end);
        while let Some((_, child, kid)) = children.next() {
            debug_assert!(kid.plain);
            let status = self.visit::<true, false>(child, kid);
            if status == flow.next {
                continue;
            }
            return self.long_flow_ended(id, node, Some(children.after_last()), SEQUENCE, status);
        }
        self.long_flow_ended(id, node, None, SEQUENCE, flow.end())
    }

    /// The one child of long-path flow that is not plain: a `:wait` or
    /// another long-path flow.
    #[inline(always)]
    fn long_child<const NEST: bool>(&mut self, id: u32, node: &'t Node) -> Status {
        match &node.kind {
            Kind::Wait { ticks } => self.long_wait(id, node, ticks),
            Kind::Sequence { .. } if NEST => self.long_flow_here::<true, true, false>(id, node),
            Kind::Selector { .. } if NEST => self.long_flow_here::<false, true, false>(id, node),
            Kind::Sequence { .. } => self.long_flow::<true, true>(id, node),
            Kind::Selector { .. } => self.long_flow::<false, true>(id, node),
            // Never here (see `may_take_long_path`).
            _ => self.tick(id),
        }
    }

    /// A `:wait` child `id` (`node`, `ticks` its count) of a long-path
    /// flow: [`Engine::tick_wait`], but a wait that returns Running notes
    /// the flows above it too ([`Engine::long_running`]).
    #[inline(always)]
    fn long_wait(&mut self, id: u32, node: &Node, ticks: &Opt) -> Status {
        self.fuel -= 1;
        if self.fuel == 0 {
            return self.out_of_steps(id);
        }
        debug_assert!(self.long.as_ref().is_none_or(|l| l.writes.is_none()));
        let status = match self.count_opt(id, "ticks", ticks) {
            Ok(n) if self.wait_counted_noting::<false>(node, n) => Status::Running,
            Ok(n) => self.wait_for(id, n),
            Err(status) => status,
        };
        if status == Status::Running {
            self.long_running(id);
        } else {
            self.visited(id, status);
        }
        status
    }

    /// Wait `id` returned Running on the long path: it and each flow above
    /// it that is on the long path return Running, and each is noted, as
    /// its general visit would note it ([`Engine::watched`]), children
    /// first. The usual tick while the wait runs on finds them all in the
    /// running set it loaded, still pending ([`Engine::long_ran_again`]).
    #[inline(always)]
    fn long_running(&mut self, id: u32) {
        if !(self.watch && self.long_ran_again(id)) {
            self.long_running_noted(id);
        }
    }

    /// Whether wait `id`, returning Running on the long path, and the
    /// flows above it up to the first that is not on the long path (the
    /// top) are all in the running set the tick loaded and still pending:
    /// then each is marked running again in place, as [`Engine::watched`]
    /// would mark it. They are the set's entries from the top's to the
    /// wait's: the set is in pre-order without repeats and names no plain
    /// node (or the tick would not be on the plain path), and the nodes of
    /// the top's subtree that are not plain are these alone.
    #[inline(always)]
    fn long_ran_again(&mut self, id: u32) -> bool {
        let tree = self.tree;
        let nodes = &tree.nodes;
        let Some(long) = self.long.as_deref_mut() else {
            return false;
        };
        // The usual tick while the wait runs on: the set is its run, the
        // root's, as a check made on an earlier tick proved
        // (`Long::filed_run_wait`), so the run is the whole set, from its
        // first entry, whose fate answers for all (see below). The root
        // returns Running with the wait, which ends the tick: nothing
        // reads a fate before the tick's end, and the set is counted as
        // run again whole, its fates left pending, to be marked running
        // by the end only if it looks at them (`Long::mark_run_again`).
        if long.filed_run_wait == id && long.prev_ids_for == tree.identity.get() {
            debug_assert!(is_run_of(nodes, id, &long.prev_running));
            debug_assert_eq!(
                long.running_at(id).map(|at| at + 1),
                Some(long.prev_running.len())
            );
            let Some(&(0, Fate::Pending)) = long.prev_running.first() else {
                return false;
            };
            debug_assert_eq!(long.runs_again, 0);
            long.runs_again = long.prev_running.len() as u32;
            return true;
        }
        let Some(at) = long.running_at(id) else {
            return false;
        };
        // How many they are, worked out when the tree was compiled (0 for
        // a run too long to note: the general bookkeeping's then).
        let Some(&Node { long_run, .. }) = nodes.get(id as usize) else {
            return false;
        };
        debug_assert_eq!(long_run, long_run_climbed(nodes, id));
        let len = usize::from(long_run);
        let Some(chain) = (at + 1)
            .checked_sub(len)
            .and_then(|first| long.prev_running.get_mut(first..=at))
        else {
            return false;
        };
        // The first is the top when it is a long-path flow above the wait:
        // the run from it down holds no more than `len` nodes, each
        // in the set at most once.
        //
        // Each is still pending, or the first is not (a node ticked again
        // in the tick in which it ran, or halted): the nodes below it are
        // visited only within its visit, and halted only within it or
        // with it, and the end of either sets its fate. So the first's
        // fate answers for all.
        let Some(&(first, Fate::Pending)) = chain.first() else {
            return false;
        };
        if !nodes
            .get(first as usize)
            .is_some_and(|n| n.long_path() && n.subtree_end > id)
        {
            return false;
        }
        debug_assert!(chain.iter().all(|&(_, fate)| fate == Fate::Pending));
        for (_, fate) in chain.iter_mut() {
            *fate = Fate::Running;
        }
        long.runs_again += u32::from(long_run);
        // The run is the whole set, from the root, whose ids are kept for
        // this tree: the next tick that loads them need not climb it again.
        if at + 1 == len
            && len == long.prev_running.len()
            && first == 0
            && long.prev_ids_for == tree.identity.get()
        {
            long.filed_run_wait = id;
        }
        true
    }

    /// [`Engine::long_running`] past its usual case: each node noted by
    /// the general bookkeeping of a visit, the wait first. (A tick that
    /// does not watch its visits does from the wait's note on, see
    /// [`Engine::note_running`]: the flows above it, Running too, are
    /// noted as it was.)
    #[inline(never)]
    fn long_running_noted(&mut self, id: u32) {
        let nodes = &self.tree.nodes;
        let mut node = id;
        if !self.watch {
            // The usual start after a halt: the set parked put back.
            if self.start_parked(id) {
                return;
            }
            // Each noted in turn in the long-running state, taken once, as
            // `Engine::note_running` notes one.
            self.watch = true;
            let long = self.long_state();
            // The usual start: nothing noted yet, and the run's length
            // worked out when the tree was compiled (`Node::long_run`, 0
            // for a run too long to count). Its nodes are distinct and
            // none is noted: each is noted as `Long::note_now` would,
            // without looking for it first, up through its parents.
            if long.now_running.is_empty()
                && let Some(&Node { long_run, .. }) = nodes.get(id as usize)
                && long_run > 0
                && let Some(room) = long.now_at.get_mut(..nodes.len())
            {
                debug_assert_eq!(long_run, long_run_climbed(nodes, id));
                long.now_stamp = long.now_stamp.wrapping_add(1);
                for at in 0..u32::from(long_run) {
                    let (Some(entry), Some(here)) =
                        (room.get_mut(node as usize), nodes.get(node as usize))
                    else {
                        break;
                    };
                    long.now_running.push(node);
                    *entry = (long.now_stamp, at);
                    node = here.parent;
                }
                return;
            }
            loop {
                long.note_now(node);
                match long_path_parent(nodes, node) {
                    Some(parent) => node = parent,
                    None => return,
                }
            }
        }
        loop {
            self.visited(node, Status::Running);
            match long_path_parent(nodes, node) {
                Some(parent) => node = parent,
                None => return,
            }
        }
    }

    /// Child `child` of long-path flow `id` moved on while something runs
    /// or ran: marked, if it was running and the flow keeps marks, as a
    /// general flow marks it (the flow ends in this tick, and the mark
    /// with it).
    #[cold]
    #[inline(never)]
    fn long_child_moved_on(&mut self, id: u32, child: u32, sequence: bool) -> Result<(), Status> {
        if self.long_child_was_running(id, child) && self.keeps_marks(id, sequence) {
            let tree = self.tree;
            let kids = tree.children_of(&tree.nodes[id as usize]);
            let n = kids.len();
            let Some(i) = kids.iter().position(|&k| k == child) else {
                return Ok(());
            };
            let next = if sequence {
                Status::Success
            } else {
                Status::Failure
            };
            if let Err(e) = self.keep_done(id, i, n, next) {
                return Err(self.fail(id, e));
            }
        }
        Ok(())
    }

    /// Whether `child`, the long child of long-path flow `id`, just
    /// visited and not Running, was running before that visit, as the
    /// general flow asks before it ([`Engine::was_running`]): it ended the
    /// last tick Running, or flow `id` returned Running earlier in this
    /// tick (ticked again in one tick, by a loop over a counting parallel
    /// for one), which it does only with its long child Running, visited
    /// by it alone. (Of a child that finished earlier in this tick it may
    /// say so too, but the flow then does not run and keeps no marks:
    /// the answer changes nothing.)
    fn long_child_was_running(&self, id: u32, child: u32) -> bool {
        self.long
            .as_ref()
            .is_some_and(|l| l.running_at(child).is_some() || l.runs_now(id))
    }

    /// Long-path flow `id` (`node`) returns `status`, not Running: decided
    /// by the child whose subtree ends where `decided_after` says, or
    /// (`None`) when every child moved on. While nothing runs or ran there
    /// is nothing to keep; otherwise [`Engine::long_flow_settled`].
    #[inline(always)]
    fn long_flow_ended(
        &mut self,
        id: u32,
        node: &Node,
        decided_after: Option<u32>,
        sequence: bool,
        status: Status,
    ) -> Status {
        if self.long.is_some() {
            return self.long_flow_settled(id, node, decided_after, sequence, status);
        }
        status
    }

    /// [`Engine::long_flow_ended`] while something runs or ran: what the
    /// general flow does as it ends (its later children halted when one
    /// decided it, its marks cleared) and the bookkeeping of its visit.
    #[cold]
    #[inline(never)]
    fn long_flow_settled(
        &mut self,
        id: u32,
        node: &Node,
        decided_after: Option<u32>,
        sequence: bool,
        status: Status,
    ) -> Status {
        let status = if status == Status::Error {
            status
        } else {
            let tree = self.tree;
            let kids = tree.children_of(node);
            // The child that decided: the one whose subtree ends there
            // (the children's subtrees follow one another).
            let decided_at = decided_after.and_then(|end| {
                kids.iter().position(|&k| {
                    tree.nodes
                        .get(k as usize)
                        .is_some_and(|n| n.subtree_end == end)
                })
            });
            // The general flow works out whether it keeps marks when it
            // reaches its child that can run, if that child was not
            // running, or when that child moves on. (It then reads its
            // marks of a child that was not running, which it has only
            // while such a child kept by it runs on: never below a flow
            // on the long path, see the module's doc.)
            let long_at = kids
                .iter()
                .position(|&k| tree.nodes.get(k as usize).is_some_and(|n| !n.plain));
            // The usual halt at the root: all of it in one step.
            if id == 0
                && let (Some(i), Some(at)) = (decided_at, long_at)
                && at > i
                && self.halt_run_at_root(kids[at])
            {
                return status;
            }
            let asked = match (decided_at, long_at) {
                (Some(i), Some(at)) if i < at => false,
                (Some(i), Some(at)) if i == at => !self.long_child_was_running(id, kids[at]),
                _ => true,
            };
            let keeps = asked.then(|| self.keeps_marks(id, sequence));
            match decided_at {
                Some(i) => {
                    // The general flow halts its children after `i`
                    // (`Engine::flow_ended`): here each is plain, and runs
                    // nothing, but the long child, if it comes after.
                    if let Some(at) = long_at
                        && at > i
                    {
                        self.halt_long_child(kids[at]);
                    }
                    if !self.marks_maybe(id, keeps) {
                        status
                    } else if !sequence && self.db.lacks_keyword(kw::MEMORY) {
                        // A selector's marks are its memory, and the db
                        // has none (the halt took the wait's out).
                        self.wrote(kw::MEMORY);
                        status
                    } else if let Err(e) = self.end_marks::<false>(id, kids, sequence, false) {
                        self.fail(id, e)
                    } else {
                        status
                    }
                }
                None => {
                    if self.marks_maybe(id, keeps)
                        && let Err(e) = self.end_marks::<false>(id, kids, sequence, true)
                    {
                        self.fail(id, e)
                    } else {
                        status
                    }
                }
            }
        };
        self.visited(id, status);
        // The root: the tick ends with its visit.
        if id == 0 {
            self.end_run_at_root();
        }
        status
    }
}

impl Engine<'_> {
    /// Halts `kid`, the child of a long-path flow that is not plain (a
    /// `:wait` or a long-path flow), as [`Engine::halt_subtree`] does, when
    /// it ran after the last tick and nothing started in this tick: the
    /// running nodes of its subtree are then its entries in the running
    /// set loaded, from its own on (the set is in pre-order without
    /// repeats), each halted deepest first, and its subtree's memory
    /// cleared. Their halts do nothing else: the nodes of a long-path
    /// subtree that are not plain are `:wait`s and flows, and the tick is
    /// untraced. Anything else goes to [`Engine::halt_subtree`].
    #[inline(never)]
    fn halt_long_child(&mut self, kid: u32) {
        let tree = self.tree;
        debug_assert!(self.trace.is_none());
        let (Some(long), Some(node)) = (self.long.as_deref_mut(), tree.nodes.get(kid as usize))
        else {
            return;
        };
        let at = match long.running_at(kid) {
            Some(at) if long.now_running.is_empty() => at,
            _ => return self.halt_subtree(kid),
        };
        let end = node.subtree_end;
        let below = long.prev_running.get_mut(at..).unwrap_or_default();
        let n_below = below.partition_point(|&(n, _)| n < end);
        // The usual memory there: the wait's count alone, that of the
        // deepest node to halt (a wait's and a flow's memory are run
        // state), taken out whole and kept; then each node is marked
        // halted, and no list of them is made. Anything else clears the
        // memory of the nodes halted, listed.
        let deepest = below
            .iter()
            .take(n_below)
            .rev()
            .find(|&&(_, fate)| matches!(fate, Fate::Pending | Fate::Running));
        let Some(&(deepest, _)) = deepest else {
            return;
        };
        if self.park_memory_of(deepest) {
            let Some(long) = self.long.as_deref_mut() else {
                return;
            };
            let below = long.prev_running.get_mut(at..).unwrap_or_default();
            let mut stopped_again = 0;
            for (_, fate) in below.iter_mut().take(n_below) {
                if matches!(*fate, Fate::Pending | Fate::Running) {
                    stopped_again += u32::from(*fate == Fate::Running);
                    *fate = Fate::Halted;
                }
            }
            long.runs_again = long.runs_again.saturating_sub(stopped_again);
            return;
        }
        let Some(long) = self.long.as_deref_mut() else {
            return;
        };
        let mut halted = std::mem::take(&mut long.halting);
        halted.clear();
        let below = long.prev_running.get_mut(at..).unwrap_or_default();
        let mut stopped_again = 0;
        for (n, fate) in below.iter_mut().take(n_below).rev() {
            if matches!(*fate, Fate::Pending | Fate::Running) {
                debug_assert!(tree.nodes.get(*n as usize).is_some_and(|n| matches!(
                    n.kind,
                    Kind::Wait { .. } | Kind::Selector { .. } | Kind::Sequence { .. }
                )));
                halted.push(*n);
                stopped_again += u32::from(*fate == Fate::Running);
                *fate = Fate::Halted;
            }
        }
        long.runs_again = long.runs_again.saturating_sub(stopped_again);
        self.clear_memory(kid, end, &halted);
        self.long_state().halting = halted;
    }
}

#[cfg(test)]
mod tests {
    use crate::{Registry, compile_str};

    /// Which nodes of a tree, in pre-order, are on the long path.
    fn long(text: &str) -> Vec<bool> {
        let tree = compile_str("t.edn", text, &Registry::new()).unwrap();
        tree.nodes.iter().map(|n| n.long_path()).collect()
    }

    #[test]
    fn flows_whose_one_child_that_can_run_is_a_wait_or_such_a_flow_take_the_long_path() {
        // npc's walk: the root and the last sequence; plain ones are not.
        assert_eq!(
            long(
                "[:selector [:sequence [:present? {:key :a}] [:success]] \
                 [:sequence [:inc! {:key :n}] [:loop {:count 2} [:inc! {:key :m}]] [:wait {:ticks 3}]]]"
            ),
            [true, false, false, false, true, false, false, false, false]
        );
        // Two children that can run, a precondition, memory or a wait
        // under a decorator keep a flow general.
        assert_eq!(
            long("[:sequence [:wait {:ticks 1}] [:wait {:ticks 2}]]"),
            [false; 3]
        );
        assert_eq!(
            long("[:selector [:sequence {:aido/skip-if true} [:wait {:ticks 1}]] [:success]]"),
            [false; 4]
        );
        assert_eq!(
            long("[:selector [:wait {:ticks 1 :aido/skip-if true}]]"),
            [false; 2]
        );
        assert_eq!(
            long("[:sequence {:memory true} [:success] [:wait {:ticks 1}]]"),
            [false; 3]
        );
        assert_eq!(
            long("[:sequence [:always [:wait {:ticks 1}]] [:success]]"),
            [false; 4]
        );
        // Under a flow that stays general, its children may still be on
        // the long path (a selector below a general selector).
        assert_eq!(
            long(
                "[:selector [:selector [:present? {:key :a}] [:wait {:ticks 1}]] [:wait {:ticks 2}]]"
            ),
            [false, true, false, false, false]
        );
    }

    /// Each node's [`Node::long_child_at`], checked against the child it
    /// names: the one child that is not plain, its earlier siblings plain.
    fn long_children(text: &str) -> Vec<u8> {
        let tree = compile_str("t.edn", text, &Registry::new()).unwrap();
        for (i, node) in tree.nodes.iter().enumerate() {
            if node.long_child_at == 0 {
                continue;
            }
            let long = i + usize::from(node.long_child_at);
            let kids = tree.children_of(node);
            let at = kids.iter().position(|&k| k as usize == long).unwrap();
            assert!(!tree.nodes[long].plain, "{text}: node {i}");
            assert!(kids[..at].iter().all(|&k| tree.nodes[k as usize].plain));
            assert!(kids[at + 1..].iter().all(|&k| tree.nodes[k as usize].plain));
        }
        tree.nodes.iter().map(|n| n.long_child_at).collect()
    }

    #[test]
    fn a_long_path_flow_knows_how_far_after_it_its_long_child_lies() {
        // npc's walk: the root's long child is its second sequence, whose
        // long child is the wait after three plain children.
        assert_eq!(
            long_children(
                "[:selector [:sequence [:present? {:key :a}] [:success]] \
                 [:sequence [:inc! {:key :n}] [:loop {:count 2} [:inc! {:key :m}]] [:wait {:ticks 3}] [:success]]]"
            ),
            [4, 0, 0, 0, 4, 0, 0, 0, 0, 0]
        );
        // A long child first: right after the flow.
        assert_eq!(
            long_children("[:selector [:wait {:ticks 1}] [:success]]"),
            [1, 0, 0]
        );
        // Plain children worth 255 nodes in front of the wait: the most
        // the mark holds. One more and the flow stays general.
        let flow = |n: usize| {
            format!(
                "[:sequence {} [:wait {{:ticks 1}}]]",
                "[:success] ".repeat(n)
            )
        };
        let marks = long_children(&flow(254));
        assert_eq!((marks[0], long(&flow(254))[0]), (255, true));
        let marks = long_children(&flow(255));
        assert_eq!((marks[0], long(&flow(255))[0]), (0, false));
    }

    /// Each `:wait`'s [`Node::long_run`] in a tree, by its index, with the
    /// climb it stands for.
    fn tops(text: &str) -> Vec<(usize, u8)> {
        let tree = compile_str("t.edn", text, &Registry::new()).unwrap();
        let waits = (0..tree.nodes.len()).filter(|&i| {
            matches!(tree.nodes[i].kind, crate::tree::Kind::Wait { .. })
                && tree
                    .nodes
                    .get(tree.nodes[i].parent as usize)
                    .is_some_and(|p| p.long_path())
        });
        waits
            .map(|i| {
                let len = tree.nodes[i].long_run;
                assert_eq!(len, super::long_run_climbed(&tree.nodes, i as u32));
                (i, len)
            })
            .collect()
    }

    #[test]
    fn a_wait_on_the_long_path_knows_how_many_flows_lie_above_it() {
        // npc's walk: the root, its last sequence and the wait.
        assert_eq!(
            tops(
                "[:selector [:sequence [:present? {:key :a}] [:success]] \
                 [:sequence [:inc! {:key :n}] [:loop {:count 2} [:inc! {:key :m}]] [:wait {:ticks 3}]]]"
            ),
            [(8, 3)]
        );
        assert_eq!(tops("[:sequence [:wait {:ticks 1}]]"), [(1, 2)]);
        // Below a general flow, the run begins under it.
        assert_eq!(
            tops(
                "[:selector [:selector [:present? {:key :a}] [:sequence [:wait {:ticks 1}]]] [:wait {:ticks 2}]]"
            ),
            [(4, 3)]
        );
        // Sequences a general reactive sequence keeps go back to the
        // general path after the run was noted: it then begins at the
        // selector below them, or nowhere.
        assert_eq!(
            tops(
                "[:sequence [:sequence [:selector [:failure] [:sequence [:success] [:wait {:ticks 1}]]]] [:wait {:ticks 2}]]"
            ),
            [(6, 3)]
        );
        assert_eq!(
            tops(
                "[:sequence [:sequence [:success] [:sequence [:wait {:ticks 1}]]] [:wait {:ticks 2}]]"
            ),
            []
        );
        let tree = compile_str(
            "t.edn",
            "[:sequence [:sequence [:success] [:sequence [:wait {:ticks 1}]]] [:wait {:ticks 2}]]",
            &Registry::new(),
        )
        .unwrap();
        assert_eq!(tree.nodes[4].long_run, 0);
    }

    #[test]
    fn a_general_reactive_sequence_keeps_its_sequences_over_waits_general_all_the_way_down() {
        // The outer sequence is general (two waits): the sequence it may
        // keep as finished, and the sequence that one keeps, go back to
        // the general path; a selector between breaks the chain, and
        // the sequence below it stays on the long path.
        assert_eq!(
            long(
                "[:sequence [:sequence [:success] [:sequence [:wait {:ticks 1}]]] [:wait {:ticks 2}]]"
            ),
            [false, false, false, false, false, false]
        );
        assert_eq!(
            long(
                "[:sequence [:sequence [:selector [:failure] [:sequence [:wait {:ticks 1}]]]] [:wait {:ticks 2}]]"
            ),
            [false, false, true, false, true, false, false]
        );
        // A general selector keeps nothing of a finished child.
        assert_eq!(
            long("[:selector [:sequence [:wait {:ticks 1}]] [:wait {:ticks 2}]]"),
            [false, true, false, false]
        );
    }
}
