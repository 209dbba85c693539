//! Long-running behaviours: which nodes are running across ticks, and
//! halting the ones that are no longer reached.
//!
//! The db keeps the ids of the nodes that ended the last tick Running under
//! `:aido/running`. A node from that set that is not ticked again is halted:
//! at once when a reactive composite moves past it, otherwise at the end of
//! the tick. Halting runs the halt hooks of the node and of every running
//! node below it (deepest first), emits cancel requests for deferred actions,
//! and clears the node memory of the whole subtree.

use crate::extend::Imp;
use crate::nodes::{Memory, one_visit_leaf};
use crate::tree::{Kind, NodeIndex, Opt, Reset, same_id};
use crate::value::map::SCAN_LIMIT;
use crate::value::{Keyword, Map, Value, kw};

use super::{
    Engine, Fate, FnCtx, Long, NodeCtx, PlainPath, RunningKey, Status, eval, panic_message,
};

/// A request to the outside system about a deferred action (`:defer`).
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// The stable id of the `:defer` node: the key of its completion under
    /// `:aido/results`.
    pub node: Value,
    /// The request's id, unique within the db (handed out from the counter
    /// `:aido/requests`): a completion names it under `:request`, so that a
    /// late answer to an abandoned request is never taken for the answer
    /// to a newer one.
    pub request: i64,
    /// The action's name, its `:action` option.
    pub action: Keyword,
    /// The node's other options, resolved when the action was launched.
    pub options: Map,
}

impl Request {
    /// `{:node id, :request n, :action :name, :options {...}}`.
    pub fn to_value(&self) -> Value {
        Value::map_from([
            (Value::keyword("node"), self.node.clone()),
            (Value::Keyword(kw::REQUEST), Value::Int(self.request)),
            (Value::keyword("action"), Value::Keyword(self.action)),
            (
                Value::keyword("options"),
                Value::Map(Box::new(self.options.clone())),
            ),
        ])
    }

    /// The request back from [`Request::to_value`]'s map (as a store's
    /// outbox keeps it); `None` for anything else.
    pub fn from_value(value: &Value) -> Option<Request> {
        let map = value.as_map()?;
        let Some(Value::Int(request)) = map.get(&Value::Keyword(kw::REQUEST)) else {
            return None;
        };
        let action = map.get(&Value::keyword("action"))?.as_keyword()?;
        let options = match map.get(&Value::keyword("options")) {
            Some(Value::Map(options)) => options.as_ref().clone(),
            None => Map::default(),
            Some(_) => return None,
        };
        Some(Request {
            node: map.get(&Value::keyword("node"))?.clone(),
            request: *request,
            action,
            options,
        })
    }
}

/// Why a completion under `:aido/results` was dropped without being applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DropReason {
    /// The tree has no node with that id.
    UnknownNode,
    /// The node has no request in flight with the id the completion names
    /// (it was cancelled, already answered, or never launched).
    NotInFlight,
    /// The completion does not name its request (`:request`).
    NoRequest,
    /// `:aido/results` itself is not a map of completions by node id.
    NotAMap,
}

impl DropReason {
    /// `"unknown-node"`, `"not-in-flight"`, `"no-request"` or `"not-a-map"`.
    pub fn as_str(self) -> &'static str {
        match self {
            DropReason::UnknownNode => "unknown-node",
            DropReason::NotInFlight => "not-in-flight",
            DropReason::NoRequest => "no-request",
            DropReason::NotAMap => "not-a-map",
        }
    }
}

/// A completion that a tick took out of `:aido/results` and dropped.
#[derive(Debug, Clone, PartialEq)]
pub struct DroppedResult {
    /// The node id it was written under (nil when `:aido/results` was not a map).
    pub node: Value,
    /// Why it was dropped.
    pub reason: DropReason,
    /// The completion as it was written (the whole `:aido/results` value
    /// when that was not a map).
    pub completion: Value,
}

impl DroppedResult {
    /// `{:node id, :reason :not-in-flight, :completion {...}}`.
    pub fn to_value(&self) -> Value {
        Value::map_from([
            (Value::keyword("node"), self.node.clone()),
            (
                Value::keyword("reason"),
                Value::keyword(self.reason.as_str()),
            ),
            (Value::keyword("completion"), self.completion.clone()),
        ])
    }
}

/// Something a tick noticed that may be a mistake in the tree; the tick
/// goes on.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum TickWarning {
    /// A reactive selector ticked again a child that had run and failed
    /// since the selector began running; it runs again, and the later
    /// children that were running are halted. Two long-running children
    /// that take turns this way loop for ever (BehaviorTree.CPP's "only a
    /// single child can return RUNNING"); a higher-priority branch taking
    /// over on purpose looks the same, so the tick is not stopped.
    RunningChildChanged {
        /// The selector's id.
        node: Value,
        /// The child that runs again.
        restarted: Value,
        /// The later children that were running, now halted.
        halted: Vec<Value>,
    },
}

impl TickWarning {
    /// `{:warning :running-child-changed, :node id, :restarted id, :halted [id ..]}`.
    pub fn to_value(&self) -> Value {
        match self {
            TickWarning::RunningChildChanged {
                node,
                restarted,
                halted,
            } => Value::map_from([
                (
                    Value::keyword("warning"),
                    Value::keyword("running-child-changed"),
                ),
                (Value::keyword("node"), node.clone()),
                (Value::keyword("restarted"), restarted.clone()),
                (
                    Value::keyword("halted"),
                    Value::Vector(halted.as_slice().into()),
                ),
            ]),
        }
    }
}

/// One event of a traced tick.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TraceEvent {
    /// The node was ticked (or short-circuited by a precondition) and returned `status`.
    Ticked {
        /// The node.
        node: NodeIndex,
        /// What it returned.
        status: Status,
    },
    /// The node was halted.
    Halted {
        /// The node.
        node: NodeIndex,
    },
}

thread_local! {
    /// Emptied maps and vectors that a halt took out of a db on this thread
    /// (node memory, the running set): the next start of something long
    /// reuses them and the room they have, so that a long action halted and
    /// started again allocates nothing once warm.
    static SPARE: std::cell::RefCell<Spare> = const {
        std::cell::RefCell::new(Spare {
            maps: Vec::new(),
            vectors: Vec::new(),
        })
    };
}

/// Empty maps and vectors, kept whole as values (a value keeps its box).
/// (The last running set and node memory a halt took out of a db are
/// kept in the thread's long-running state: `Long::parked_running`,
/// `Long::parked_memory`.)
struct Spare {
    maps: Vec<Value>,
    vectors: Vec<Value>,
}

/// Whether `value` is a map or vector small enough to keep (see
/// [`SPARE_ROOM`]).
fn small_enough(value: &Value) -> bool {
    match value {
        Value::Map(map) => map.capacity() <= SPARE_ROOM,
        Value::Vector(items) => items.capacity() <= SPARE_ROOM,
        _ => false,
    }
}

/// Keeps `value`, a running set or a node memory map just taken out of a
/// db by a halt, whole in `slot` (of the thread's long-running state,
/// which the next tick takes), if it is small; what the slot held before
/// is recycled.
fn park(value: Value, slot: &mut Option<Value>) {
    if !small_enough(&value) {
        recycle(value);
        return;
    }
    if let Some(before) = slot.replace(value) {
        recycle(before);
    }
}

/// [`park`] of a value already put in `slot` (swapped in, see
/// `Engine::park_tail_key`), `before` what the slot held: the same
/// choice, made after the move.
#[inline(always)]
fn parked_in(slot: &mut Option<Value>, before: Option<Value>) {
    if !slot.as_ref().is_some_and(small_enough) {
        if let Some(large) = std::mem::replace(slot, before) {
            recycle(large);
        }
    } else if let Some(before) = before {
        recycle(before);
    }
}

/// [`park`] for the running set, with what it names (see
/// [`Long::parked_running_names`]).
fn park_running(long: &mut Long, value: Value, names: u64) {
    park(value, &mut long.parked_running);
    note_parked_names(long, names);
}

/// Notes what the running set just parked (if it was kept) names.
#[inline(always)]
fn note_parked_names(long: &mut Long, names: u64) {
    long.parked_running_names = if long.parked_running.is_some() {
        names
    } else {
        0
    };
}

/// Whether `kept` are the nodes from the root down to `id`, each the
/// parent of the next: climbed from `id`.
fn names_run_from_root(tree: &crate::tree::Tree, id: u32, kept: &[u32]) -> bool {
    let mut node = id;
    for &k in kept.iter().rev() {
        if k != node {
            return false;
        }
        node = tree.nodes.get(node as usize).map_or(u32::MAX, |n| n.parent);
    }
    kept.first() == Some(&0)
}

/// The running set a halt kept (`parked`, [`Long::parked_running`], with
/// `names`, [`Long::parked_running_names`]), if it names the nodes `now`
/// (in that order) of `tree`: ready to be put back in the db as it is.
/// Anything else parked is recycled.
/// (`kept`: the ids of the nodes `now`, kept on this thread for `tree`
/// (`Long::filed_ids`) with their stamp, compared with rather than the
/// nodes' when given; not even that when the set was parked naming them.)
fn parked_running(
    tree: &crate::tree::Tree,
    now: &[u32],
    kept: Option<(&[Value], u64)>,
    parked: Option<Value>,
    names: u64,
) -> Option<Value> {
    let parked = parked?;
    if let Value::Vector(ids) = &parked
        && ids.len() == now.len()
        && match kept {
            // Parked while it named the ids kept for these nodes.
            Some((kept, stamp)) if names == stamp => kept.len() == ids.len(),
            Some((kept, _)) => {
                kept.len() == ids.len() && ids.iter().zip(kept).all(|(id, k)| same_id(k, id))
            }
            None => ids.iter().zip(now).all(|(id, &n)| {
                tree.nodes
                    .get(n as usize)
                    .is_some_and(|n| same_id(&n.id, id))
            }),
        }
    {
        return Some(parked);
    }
    recycle(parked);
    None
}

/// A node's new memory (see `Engine::set_memory`).
pub(crate) enum NewMemory {
    /// This value.
    Whole(Value),
    /// The one-entry map `{key value}`, the usual run state (a count, a
    /// place): written into the node's map in place when that map is
    /// `{key old}`, and otherwise made from a spare map.
    One(Keyword, Value),
}

impl NewMemory {
    /// The memory as a value.
    pub(crate) fn into_value(self) -> Value {
        match self {
            NewMemory::Whole(value) => value,
            NewMemory::One(key, value) => spare_map_of(Value::Keyword(key), value),
        }
    }

    /// Writes the memory over `slot`, the node's state so far: a one-entry
    /// map in place where it can, and otherwise `old` is what becomes of
    /// the state replaced (recycled or dropped).
    #[inline(always)]
    pub(crate) fn write_over(self, slot: &mut Value, old: fn(Value)) {
        let new = match self {
            NewMemory::Whole(value) => value,
            NewMemory::One(key, value) => {
                if let Value::Map(map) = slot
                    && map.len() == 1
                    && map.keyword_at(0, key)
                    && let Some(in_place) = map.value_at_mut(0)
                {
                    let old = std::mem::replace(in_place, value);
                    // A count (the usual run state) owns nothing: no call
                    // to drop it.
                    if let Value::Int(_) = old {
                        std::mem::forget(old);
                    }
                    return;
                }
                spare_map_of(Value::Keyword(key), value)
            }
        };
        old(std::mem::replace(slot, new));
    }
}

/// The node memory map a halt kept in `long` ([`Long::parked_memory`]),
/// if its one entry is `id`'s: that entry's state replaced by `state` (in
/// place, or the old one kept as a spare map), ready to be put back in the
/// db. `Err(state)` otherwise (anything else parked is recycled).
pub(crate) fn parked_memory(
    long: &mut Long,
    id: &Value,
    state: NewMemory,
) -> Result<Value, NewMemory> {
    let Some(mut parked) = long.parked_memory.take() else {
        return Err(state);
    };
    if let Value::Map(memory) = &mut parked
        && holds_only(memory, id)
        && let Some(slot) = memory.value_at_mut(0)
    {
        state.write_over(slot, recycle);
        return Ok(parked);
    }
    recycle(parked);
    Err(state)
}

/// Whether node memory `memory` holds one entry, `id`'s.
#[inline(always)]
fn holds_only(memory: &Map, id: &Value) -> bool {
    memory.len() == 1
        && match id {
            // A keyword id is compared by its interned index, without
            // making the stored key's value (see `Map::keyword_at`).
            Value::Keyword(k) => memory.keyword_at(0, *k),
            id => memory.get_index(0).is_some_and(|(k, _)| same_id(k, id)),
        }
}

/// [`parked_memory`] of the count `{key count}`, in place: when the node
/// memory map the halt kept in `long` holds only `id`'s `{key old-count}`,
/// the count is written over the old one and the map, left where it is
/// (in [`Long::parked_memory`]), is ready to be put back in the db.
/// Otherwise nothing is done.
pub(crate) fn parked_count<'a>(
    long: &'a mut Long,
    id: &Value,
    key: Keyword,
    count: i64,
) -> Option<&'a mut Value> {
    let parked = long.parked_memory.as_mut()?;
    if let Value::Map(memory) = &mut *parked
        && holds_only(memory, id)
        && let Some(Value::Map(state)) = memory.value_at_mut(0)
        && state.len() == 1
        && state.keyword_at(0, key)
        && let Some(Value::Int(old)) = state.value_at_mut(0)
    {
        *old = count;
        return Some(parked);
    }
    None
}

/// At most this many of each are kept, each with room for at most
/// [`SPARE_ROOM`] elements: a spare is a small thing kept for reuse, not a
/// way to hold on to the memory of a large one.
const SPARE_KEPT: usize = 16;
const SPARE_ROOM: usize = 16;

/// An empty map: a spare one from this thread if there is one.
pub(crate) fn spare_map() -> Value {
    SPARE
        .try_with(|s| s.try_borrow_mut().ok()?.maps.pop())
        .ok()
        .flatten()
        .unwrap_or_else(Value::map)
}

/// A map of one entry, in a spare map if there is one.
pub(crate) fn spare_map_of(key: Value, value: Value) -> Value {
    let mut map = spare_map();
    if let Value::Map(m) = &mut map {
        // A spare map is empty: nothing to search.
        m.push(key, value);
    }
    map
}

/// An empty vector: a spare one from this thread if there is one.
fn spare_vector() -> Value {
    SPARE
        .try_with(|s| s.try_borrow_mut().ok()?.vectors.pop())
        .ok()
        .flatten()
        .unwrap_or_else(|| Value::Vector(crate::value::ThinVec::new()))
}

/// Drops `value`, keeping it emptied for reuse if it is a small map or
/// vector (what it held is dropped as usual).
pub(crate) fn recycle(mut value: Value) {
    if small_enough(&value) {
        match &mut value {
            Value::Map(map) => map.clear(),
            Value::Vector(items) => items.clear(),
            _ => {}
        }
        let _ = SPARE.try_with(|s| {
            if let Ok(mut s) = s.try_borrow_mut() {
                let kept = if matches!(value, Value::Map(_)) {
                    &mut s.maps
                } else {
                    &mut s.vectors
                };
                if kept.len() < SPARE_KEPT {
                    kept.push(value);
                }
            }
        });
    }
}

impl Engine<'_> {
    /// Takes the long-running key at `at` (`:aido/memory` or
    /// `:aido/running`, found by its hint) out of the db, recycling its
    /// value. The other key, usually stored after it, moves up by one: its
    /// hint follows, so that the rest of the tick (a halt removes node
    /// memory, then the running set) finds it without a search.
    pub(crate) fn remove_long_key(&mut self, at: usize) {
        if let Some(old) = self.take_long_key(at) {
            recycle(old);
        }
    }

    /// [`Engine::take_long_key`] of `key` (`:aido/memory` or
    /// `:aido/running`) at `at`, in line: as one of the db's last two
    /// entries (the usual halt of a long action) it is taken out by
    /// `Map::swap_out_tail_keyword` (`:aido/running`, whose bit of the filter
    /// no other name has, without a pass over the other keys).
    ///
    /// The value is parked as [`park`] parks it, in the thread's
    /// long-running state: its running set (`RUNNING`, with what it names,
    /// as [`park_running`] does) or its node memory. From the db's tail it
    /// goes to its slot there without a copy through the stack (see
    /// `Map::swap_out_tail_keyword`). Whether the key was there.
    #[inline(always)]
    fn park_tail_key<const RUNNING: bool>(&mut self, at: usize, key: Keyword, names: u64) -> bool {
        // The halt has its long-running state already: no call to make one.
        if self.long.is_none() {
            self.long = Some(Long::fresh());
        }
        let Some(long) = self.long.as_deref_mut() else {
            return false;
        };
        let slot = if RUNNING {
            &mut long.parked_running
        } else {
            &mut long.parked_memory
        };
        let before = slot.take();
        if !self
            .db
            .swap_out_tail_keyword(at, key, slot.insert(Value::Nil))
        {
            *slot = before;
            let Some(old) = self.take_long_key(at) else {
                return false;
            };
            let long = self.long_state();
            if RUNNING {
                park_running(long, old, names);
            } else {
                park(old, &mut long.parked_memory);
            }
            return true;
        }
        let tree = self.tree;
        tree.memory_key_hint.shift_past(at);
        tree.running_key_hint.shift_past(at);
        parked_in(slot, before);
        if RUNNING {
            note_parked_names(long, names);
        }
        true
    }

    /// [`Engine::remove_long_key`], the value handed back.
    fn take_long_key(&mut self, at: usize) -> Option<Value> {
        let (key, old) = self.db.shift_remove_index(at)?;
        // A keyword owns nothing: no call to drop it.
        if let Value::Keyword(_) = key {
            std::mem::forget(key);
        }
        let tree = self.tree;
        tree.memory_key_hint.shift_past(at);
        tree.running_key_hint.shift_past(at);
        Some(old)
    }
}

/// Whether `ids` (as many as `filed`) name the nodes of `filed`, the
/// running set left filed by the last tick on this thread, in its order:
/// each id compared in place with its node's, and each node's fate set to
/// [`Fate::Pending`] on the way (the set is then this tick's as it is).
/// The nodes are checked against `tree`, which need not be the tree that
/// filed them: a node the tree does not have, or a plain one, is no match.
#[inline(always)]
fn filed_names(tree: &crate::tree::Tree, filed: &mut [(u32, Fate)], ids: &[Value]) -> bool {
    for (id, (n, fate)) in ids.iter().zip(filed.iter_mut()) {
        match tree.nodes.get(*n as usize) {
            Some(node) if !node.plain && same_id(&node.id, id) => *fate = Fate::Pending,
            _ => return false,
        }
    }
    true
}

/// Whether `ids` (as many as `filed`) are `filed_ids`, the ids of the
/// nodes of `filed` kept for this tree (`Long::filed_ids`): each compared
/// with its clone, and each fate set to [`Fate::Pending`] on the way, as
/// [`filed_names`] does, without reading the nodes.
#[inline(always)]
fn filed_ids_name(filed_ids: &[Value], filed: &mut [(u32, Fate)], ids: &[Value]) -> bool {
    for ((id, kept), (_, fate)) in ids.iter().zip(filed_ids).zip(filed.iter_mut()) {
        if !same_id(kept, id) {
            return false;
        }
        *fate = Fate::Pending;
    }
    true
}

impl Long {
    /// Keeps `ids`, just proven to name the nodes of `prev_running` in the
    /// tree whose identity is `tree`, as `filed_ids`: when the ids kept
    /// from before are those nodes' and the same (usually the same
    /// objects, one comparison each), nothing is cloned again.
    #[inline(never)]
    pub(crate) fn keep_filed_ids(&mut self, tree: u64, ids: &[Value]) {
        let Long {
            prev_running,
            filed_ids,
            filed_ids_nodes,
            ..
        } = self;
        let same = self.filed_ids_for == tree
            && filed_ids.len() == ids.len()
            && filed_ids_nodes.len() == prev_running.len()
            && filed_ids_nodes
                .iter()
                .zip(prev_running.iter())
                .all(|(&kept, &(n, _))| kept == n)
            && filed_ids.iter().zip(ids).all(|(k, id)| same_id(k, id));
        if !same {
            self.filed_ids_stamp = next_stamp();
            filed_ids.clear();
            filed_ids.extend(ids.iter().cloned());
            filed_ids_nodes.clear();
            filed_ids_nodes.extend(prev_running.iter().map(|&(n, _)| n));
            self.filed_run_wait = 0;
        }
        self.filed_ids_for = tree;
        self.prev_ids_for = tree;
    }
}

/// A stamp for ids kept (`Long::filed_ids_stamp`) no other has had, on
/// any thread: never 0.
fn next_stamp() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// Whether two short lists of node indices are the same, compared in line
/// (a slice's `==` calls `memcmp`).
#[inline(always)]
fn same_nodes(a: &[u32], b: &[u32]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y)
}

impl Engine<'_> {
    /// Reads `:aido/running` into `prev_running`. Unknown ids are an error:
    /// the db belongs to another tree. Returns whether it names a plain
    /// node (which only a db from elsewhere can: see `PlainPath::Off`).
    #[inline(always)]
    pub(crate) fn load_running(&mut self) -> bool {
        if let Some(at) = self.tree.running_key_hint.find(self.db, kw::RUNNING)
            && self.take_filed_running(at)
        {
            return false;
        }
        self.load_running_anew()
    }

    /// The usual tick while something runs: the set the last tick on this
    /// thread ended with, left filed (`Long::filed`), named again by the
    /// db, taken over in place (inlined into the tick's set-up). Each id is
    /// compared in place (a host may have edited the set between ticks),
    /// and nothing is filed again. Whether it was. (`at`: where the db
    /// holds `:aido/running`.)
    #[inline(always)]
    pub(crate) fn take_filed_running(&mut self, at: usize) -> bool {
        let tree = self.tree;
        let Some(Value::Vector(ids)) = self.db.value_at(at) else {
            return false;
        };
        let long = match &mut self.long {
            Some(long) => long,
            none => none.insert(Long::spare()),
        };
        if !(long.filed && ids.len() == long.prev_running.len()) {
            return false;
        }
        // The usual case: the same tree took this set over before, and
        // its nodes' ids are kept (`Long::filed_ids`).
        let same = if long.prev_ids_for == tree.identity.get() && long.filed_ids.len() == ids.len()
        {
            filed_ids_name(&long.filed_ids, &mut long.prev_running, ids)
        } else {
            filed_names(tree, &mut long.prev_running, ids) && {
                long.keep_filed_ids(tree.identity.get(), ids);
                true
            }
        };
        if same {
            long.filed = false;
            long.db_names_prev = !tree.writes_running;
        }
        same
    }

    /// The steady tick's load: the usual db something runs in (see
    /// [`Engine::take_usual_running`]), naming the set the last tick on
    /// this thread left filed with its ids kept for this tree
    /// (`Long::prev_ids_for`), each id the same keyword or the same string
    /// object as the one kept. Taken over as [`Engine::take_filed_running`]
    /// does, each id compared in place (a host may have edited the set),
    /// without a call. The usual db without a set (the tick after a halt)
    /// is taken here too, as `Engine::take_usual_running` takes it when
    /// the key's bit of the filter proves it absent. Anything else (the
    /// fingerprint not worked out yet, no spare state, an id equal only by
    /// value) is left to the general load, which does the same with
    /// calls. Whether it was one of those dbs; if not, nothing was done but
    /// fates set pending and the spare taken, as the general load does too.
    #[inline(always)]
    pub(crate) fn take_usual_leaf(&mut self) -> bool {
        let (db, tree) = (&*self.db, self.tree);
        // `:aido/error` and `:aido/results` share a bit of the filter.
        if !(db.lacks_keyword(kw::ERROR) && db.lacks_keyword(kw::RESULTS)) {
            return false;
        }
        let stamped = matches!(
            (
                tree.fingerprint.get(),
                tree.fingerprint_hint
                    .hit(db, kw::TREE)
                    .and_then(|at| db.value_at(at)),
            ),
            (Some(f), Some(Value::Int(g))) if f == g
        );
        if !stamped {
            return false;
        }
        let Some(at) = tree.running_key_hint.hit(db, kw::RUNNING) else {
            if db.lacks_keyword(kw::RUNNING) {
                self.had_tree = true;
                return true;
            }
            return false;
        };
        let Some(Value::Vector(ids)) = db.value_at(at) else {
            return false;
        };
        let long = match &mut self.long {
            Some(long) => long,
            none => match Long::spare_kept() {
                Some(long) => none.insert(long),
                None => return false,
            },
        };
        let n = ids.len();
        if !(long.filed
            && long.prev_ids_for == tree.identity.get()
            && long.filed_ids.len() == n
            && long.prev_running.len() == n)
        {
            return false;
        }
        for ((id, kept), (_, fate)) in ids
            .iter()
            .zip(&long.filed_ids)
            .zip(long.prev_running.iter_mut())
        {
            let same = match (kept, id) {
                (Value::Keyword(x), Value::Keyword(y)) => x == y,
                (Value::Str(x), Value::Str(y)) => crate::value::ArcStr::ptr_eq(x, y),
                _ => false,
            };
            if !same {
                return false;
            }
            *fate = Fate::Pending;
        }
        long.filed = false;
        long.db_names_prev = !tree.writes_running;
        self.had_tree = true;
        self.running_key = RunningKey::Held;
        self.watch = true;
        true
    }

    /// [`Engine::load_running`] when the set is not the one left filed.
    #[inline(never)]
    pub(crate) fn load_running_anew(&mut self) -> bool {
        let tree = self.tree;
        let Some(running) = tree
            .running_key_hint
            .find(self.db, kw::RUNNING)
            .and_then(|i| self.db.value_at(i))
        else {
            return false;
        };
        let Some(ids) = running.as_seq() else {
            let msg = format!(
                "`:aido/running` must be a vector of node ids, found {}",
                running.type_name()
            );
            self.fail(0, msg);
            return false;
        };
        // Filled in place: the long-running state may be this thread's
        // spare, whose vectors have room from earlier ticks.
        let long = match &mut self.long {
            Some(long) => long,
            none => none.insert(Long::spare()),
        };
        // A set left filed that the db does not name (see
        // `Engine::take_filed_running`): its nodes are the hint.
        if long.filed {
            long.unfile();
        }
        long.forget_prev();
        // The usual case: the same nodes as the last running set on this
        // thread, in the same order, each a keyword or the tree's own string
        // (one comparison in place each), in pre-order and none plain: taken
        // over and filed in `where_running` in one pass.
        if ids.len() == long.last_running.len() {
            if long.where_running.len() < tree.nodes.len() {
                long.where_running.resize(tree.nodes.len(), (0, 0));
            }
            let Long {
                prev_running: nodes,
                last_running,
                where_running,
                generation,
                ..
            } = &mut **long;
            let mut same = true;
            for (i, (id, &n)) in ids.iter().zip(last_running.iter()).enumerate() {
                let in_order = nodes.last().is_none_or(|&(before, _)| before < n);
                match (
                    tree.nodes.get(n as usize),
                    where_running.get_mut(n as usize),
                ) {
                    (Some(node), Some(entry))
                        if in_order && !node.plain && same_id(&node.id, id) =>
                    {
                        nodes.push((n, Fate::Pending));
                        *entry = (*generation, i as u32);
                    }
                    _ => {
                        same = false;
                        break;
                    }
                }
            }
            if same {
                long.db_names_prev = !tree.writes_running;
                return false;
            }
            // Entries filed for a part of the set: forgotten.
            long.forget_prev();
        }
        let Long {
            prev_running: nodes,
            last_running,
            ..
        } = &mut **long;
        let mut any_plain = false;
        // Stored in pre-order without repeats (see `store_running`), the
        // usual case: then there is nothing to sort.
        let mut sorted = true;
        for (i, id) in ids.iter().enumerate() {
            // Usually the node at the same place in the last running set,
            // the same id (a keyword, or a clone of the tree's string).
            let hinted = match last_running.get(i) {
                Some(&n)
                    if tree
                        .nodes
                        .get(n as usize)
                        .is_some_and(|n| same_id(&n.id, id)) =>
                {
                    Some(n)
                }
                _ => None,
            };
            match hinted.or_else(|| tree.find(id).map(|node| node.0)) {
                Some(node) => {
                    if let Some(&(before, _)) = nodes.last() {
                        sorted &= before < node;
                    }
                    any_plain |= tree.nodes[node as usize].plain;
                    nodes.push((node, Fate::Pending));
                }
                None => {
                    nodes.clear();
                    let msg =
                        format!("`:aido/running` names node {id}, which this tree does not have");
                    self.fail(0, msg);
                    return false;
                }
            }
        }
        if !sorted {
            nodes.sort_unstable_by_key(|(n, _)| *n);
            nodes.dedup_by_key(|(n, _)| *n);
        }
        // In pre-order without repeats, the db names `prev_running` as it
        // is (and keeps naming it, unless a node writes there).
        long.db_names_prev = sorted && !tree.writes_running;
        long.index_prev(tree.nodes.len());
        any_plain
    }

    /// The long-running state, made on first use.
    #[inline]
    pub(crate) fn long_state(&mut self) -> &mut Long {
        self.long.get_or_insert_with(Long::fresh)
    }

    /// Notes that `node` returned Running (a visit not watched, see
    /// `Engine::visited`). The rest of the tick watches its visits, so
    /// that a node ticked again in this tick that finishes leaves
    /// `now_running` ([`Engine::watched`]).
    #[inline(always)]
    pub(crate) fn note_running(&mut self, node: u32) {
        match self.long.as_mut() {
            Some(long) => {
                long.note_now(node);
                self.watch = true;
            }
            None => self.note_first_running(node),
        }
    }

    /// [`Engine::note_running`] for the first node of a tick that keeps
    /// no long-running state yet.
    #[cold]
    #[inline(never)]
    fn note_first_running(&mut self, node: u32) {
        self.long_state().note_now(node);
        self.watch = true;
    }

    /// Reports a completion dropped without being applied.
    #[cold]
    pub(crate) fn drop_result(&mut self, node: Value, reason: DropReason, completion: Value) {
        self.long_state().dropped.push(DroppedResult {
            node,
            reason,
            completion,
        });
    }

    /// Drops a `:aido/results` that is not a map, reporting it.
    #[cold]
    pub(crate) fn drop_results_not_a_map(&mut self) {
        if let Some(results) = self.db.shift_remove(&Value::Keyword(kw::RESULTS)) {
            self.drop_result(Value::Nil, DropReason::NotAMap, results);
        }
    }

    /// At the end of a tick, drops every completion still under
    /// `:aido/results`: no node took it, so it answers no request in flight
    /// (its node is unknown, was not reached and so was halted, or has
    /// another request in flight).
    #[cold]
    #[inline(never)]
    pub(crate) fn drop_stale_results(&mut self) {
        let key = Value::Keyword(kw::RESULTS);
        let Some(results) = self.db.shift_remove(&key) else {
            return;
        };
        let results = match results.into_map() {
            Ok(results) => results,
            Err(results) => {
                self.drop_result(Value::Nil, DropReason::NotAMap, results);
                return;
            }
        };
        for (node, completion) in results {
            let reason = if self.tree.find(&node).is_none() {
                DropReason::UnknownNode
            } else if completion.get(&Value::Keyword(kw::REQUEST)).is_none() {
                DropReason::NoRequest
            } else {
                DropReason::NotInFlight
            };
            self.drop_result(node, reason, completion);
        }
    }

    /// Notes a trace event, if the tick is traced.
    #[inline(always)]
    pub(crate) fn note_trace(&mut self, event: TraceEvent) {
        if let Some(trace) = self.trace.as_mut() {
            trace.push(event);
        }
    }

    /// Ends the running set of a tick that did not end in Error: halts the
    /// nodes that ran and were not reached ([`Engine::sweep`]) and writes
    /// the nodes running now under `:aido/running` (removing the key when
    /// nothing runs). The usual tick while something runs ticked each node
    /// of the set it began with again, and each returned Running again
    /// (`Fate::Running`), and nothing else started: while loading the set
    /// proved that the db names it and nothing since could have edited it
    /// (`Long::db_names_prev`), there is nothing to halt or write, and the
    /// set stays filed for the next tick (`Long::filed`). Otherwise the
    /// db's ids are compared in place, one by one.
    #[inline(always)]
    pub(crate) fn end_running(&mut self) {
        if self.file_running_if_unchanged() {
            return;
        }
        self.sweep();
        self.store_running_changed();
    }

    /// The usual end of a tick while something runs: when the db still
    /// names the set loaded (see [`Long::db_names_prev`]) and every node of
    /// it ran again and nothing else started, there is nothing to halt or
    /// write, and the set is left filed for the next tick on this thread.
    /// Whether it was.
    #[inline(always)]
    pub(crate) fn file_running_if_unchanged(&mut self) -> bool {
        // Nothing started (`now_running` empty) and every node of the set
        // ran again: one test of the two.
        if let Some(long) = self.long.as_mut()
            && long.db_names_prev
            && (long.now_running.len() | (long.prev_running.len() ^ long.runs_again as usize)) == 0
            && !long.prev_running.is_empty()
        {
            // (Or every one pending: counted as run again whole, see
            // `Long::mark_run_again`.)
            debug_assert!(
                long.prev_running
                    .iter()
                    .all(|&(_, fate)| fate == Fate::Running)
                    || long
                        .prev_running
                        .iter()
                        .all(|&(_, fate)| fate == Fate::Pending)
            );
            // Taking the filed set over sets every fate pending again
            // (`filed_names`), and forgetting it empties the set: its count
            // of nodes running again starts there.
            long.runs_again = 0;
            long.filed = true;
            return true;
        }
        false
    }

    /// Writes the nodes running now under `:aido/running`, when the set
    /// may differ from the db's (see [`Engine::end_running`]): those noted
    /// in `now_running` and those of the last tick's set that ran again,
    /// in pre-order, left in `now_running` as the next tick's hint.
    #[inline(never)]
    fn store_running_changed(&mut self) {
        let tree = self.tree;
        // A db without `:aido/running` when the tick began (which the
        // set-up proved: see `Engine::take_reserved`) has none now unless
        // a data node of the tree writes it or user code was handed the
        // db: then no search (the usual start after a halt).
        let at = if self.running_key != RunningKey::Absent || tree.writes_running {
            tree.running_key_hint.find(self.db, kw::RUNNING)
        } else {
            None
        };
        if let Some(long) = self.long.as_mut() {
            let Long {
                prev_running,
                now_running,
                ..
            } = &mut **long;
            now_running.extend(
                prev_running
                    .iter()
                    .filter(|&&(_, fate)| fate == Fate::Running)
                    .map(|&(n, _)| n),
            );
        }
        let Some(long) = self.long.as_mut().filter(|l| !l.now_running.is_empty()) else {
            // Kept whole: the same nodes usually start again.
            // While the db named the set loaded, and the ids kept are
            // that set's, the set parked names them (see
            // `Long::parked_running_names`).
            let names = match self.long.as_deref() {
                Some(l) if l.db_names_prev && l.prev_ids_for == tree.identity.get() => {
                    l.filed_ids_stamp
                }
                _ => 0,
            };
            if let Some(i) = at {
                self.park_tail_key::<true>(i, kw::RUNNING, names);
            }
            return;
        };
        let now = &mut long.now_running;
        let nodes = &tree.nodes;
        // Noted as each node returned, children before their parents: in
        // reverse pre-order, the usual case for the nodes that started.
        if now.windows(2).all(|w| w[0] > w[1]) {
            now.reverse();
        } else {
            now.sort_unstable();
            now.dedup();
        }
        let ids = |now: &[u32]| {
            let mut ids = spare_vector();
            if let Value::Vector(items) = &mut ids {
                items.extend(now.iter().map(|&n| nodes[n as usize].id.clone()));
            }
            ids
        };
        let Some(at) = at else {
            // The hint's search proved it absent: appended without another,
            // usually as the last halt took it out.
            // The ids kept for these nodes, when they are: the parked set
            // is compared with them rather than with the nodes.
            let identity = tree.identity.get();
            let kept_here =
                long.filed_ids_for == identity && same_nodes(&long.filed_ids_nodes, now);
            let parked = long.parked_running.take();
            let names = std::mem::take(&mut long.parked_running_names);
            let kept = kept_here.then_some((long.filed_ids.as_slice(), long.filed_ids_stamp));
            let running = match parked_running(tree, now, kept, parked, names) {
                Some(running) => running,
                None => ids(now),
            };
            let at = self.db.push_keyword(kw::RUNNING, running);
            tree.running_key_hint.remember(Some(at));
            self.wrote_state = true;
            long.file_started(tree.nodes.len());
            // The ids just written name the nodes filed, in their order
            // (made from them, or the parked set checked against them):
            // the ids kept for those nodes (filed as `now` was), if they
            // are, serve the next tick as they are; else these are kept.
            if kept_here {
                long.prev_ids_for = identity;
            } else if let Some(Value::Vector(ids)) = self.db.value_at(at) {
                long.keep_filed_ids(identity, ids);
            }
            return;
        };
        let slot = &mut self.db[at];
        if let Value::Vector(old) = slot
            && old.len() == now.len()
            && old
                .iter()
                .zip(now.iter())
                .all(|(old, &n)| same_id(old, &nodes[n as usize].id))
        {
            return;
        }
        recycle(std::mem::replace(slot, ids(now)));
        self.wrote_state = true;
    }

    /// Whether the tick so far left the tick's end nothing but the running
    /// set to settle, as [`Engine::end_run_at_root`] and
    /// [`Engine::halt_run_at_root`] need: the db holds `:aido/running`, no
    /// error, nothing kept running, started, run again, marked, noted or
    /// requested, and no policy parallel's journal.
    #[inline(always)]
    fn quiet_at_root(&self, long: &Long) -> bool {
        self.running_key == RunningKey::Held
            && self.error.is_none()
            && !self.keep_running
            && long.now_running.is_empty()
            && long.runs_again == 0
            && long.memory_marked == 0
            && !long.marks_raised_results
            && long.writes.is_none()
            && (long.launches.len()
                | long.cancels.len()
                | long.dropped.len()
                | long.warnings.len()
                | long.journal.len()
                | long.rollback_depth as usize)
                == 0
    }

    /// The root, a flow on the long path, returned a status other than
    /// Running while something ran: the tick ends here. When what ran was
    /// all halted (or finished) in this tick, and nothing runs now or has
    /// anything to hand out, the end of the tick has only the db's
    /// `:aido/running` to take out (and park, as [`Engine::store_running_changed`]
    /// does): taken out now, and the long-running state kept as this
    /// thread's spare, the tick's end finds nothing running and nothing to
    /// write back for it. (The usual halt of a long action: the branch
    /// before it wins.)
    #[inline(never)]
    pub(crate) fn end_run_at_root(&mut self) {
        let tree = self.tree;
        let Some(long) = self.long.as_deref() else {
            return;
        };
        debug_assert!(self.trace.is_none());
        if !(self.quiet_at_root(long) && long.prev_running.iter().all(|&(_, f)| f != Fate::Pending))
        {
            return;
        }
        // No fate is Running (`runs_again` counts them) or Pending: none
        // runs on, and none is left to halt.
        let names = if long.db_names_prev && long.prev_ids_for == tree.identity.get() {
            long.filed_ids_stamp
        } else {
            0
        };
        if let Some(at) = tree.running_key_hint.find(self.db, kw::RUNNING) {
            self.park_tail_key::<true>(at, kw::RUNNING, names);
        }
        self.running_key = RunningKey::Absent;
        if let Some(long) = self.long.take() {
            Long::recycle_quiet(long);
        }
    }

    /// The usual halt of a long action, as one step: the root, a flow on
    /// the long path, is decided by a child before `kid`, its one child
    /// that can run, and what ran after the last tick is the root and
    /// `kid`'s run, none ticked yet in this tick, with all of node memory
    /// the deepest one's (a wait's count). Halting `kid` halts them all
    /// and takes that memory out (parked, as [`Engine::park_memory_of`]
    /// does), which leaves the root no marks to clear; the root's visit
    /// ends the tick, whose end has only `:aido/running` to take out and
    /// park ([`Engine::end_run_at_root`]). All of it is done here, and the
    /// long-running state kept as this thread's spare. Whether it was (if
    /// not, nothing was done).
    #[inline(never)]
    pub(crate) fn halt_run_at_root(&mut self, kid: u32) -> bool {
        let tree = self.tree;
        let (Some(long), Some(node)) = (self.long.as_deref(), tree.nodes.get(kid as usize)) else {
            return false;
        };
        debug_assert!(self.trace.is_none());
        // The set is in pre-order without repeats: after the root, `kid`
        // and nodes of its subtree, the last the deepest.
        let (Some(&(0, Fate::Pending)), Some(&(first, _)), Some(&(deepest, _))) = (
            long.prev_running.first(),
            long.prev_running.get(1),
            long.prev_running.last(),
        ) else {
            return false;
        };
        if !(first == kid
            && deepest < node.subtree_end
            && self.quiet_at_root(long)
            && long.prev_running.iter().all(|&(_, f)| f == Fate::Pending))
        {
            return false;
        }
        let names = if long.db_names_prev && long.prev_ids_for == tree.identity.get() {
            long.filed_ids_stamp
        } else {
            0
        };
        if !self.park_memory_of(deepest) {
            return false;
        }
        if let Some(at) = tree.running_key_hint.find(self.db, kw::RUNNING) {
            self.park_tail_key::<true>(at, kw::RUNNING, names);
        }
        self.running_key = RunningKey::Absent;
        if let Some(long) = self.long.take() {
            Long::recycle_quiet(long);
        }
        true
    }

    /// The usual start of a long action after its halt, as one step: wait
    /// `id` returned Running on the long path, the db held no
    /// `:aido/running` when the tick began and nothing ran since, and the
    /// flows above it reach the root (its [`Node::long_run`] counts them
    /// all), which returns Running with them and ends the tick. When the
    /// set the halt parked names these nodes (parked naming the ids kept
    /// for them, [`Long::parked_running_names`]), it is put back in the db
    /// now, where the end of the tick would have appended it (nothing is
    /// written in between), and taken over as a set the tick loaded and
    /// that ran again: the end of the tick leaves it filed, as it leaves a
    /// set that ran on. Whether it was (if not, nothing was done).
    ///
    /// [`Node::long_run`]: crate::tree::Node
    #[inline(never)]
    pub(crate) fn start_parked(&mut self, id: u32) -> bool {
        let tree = self.tree;
        let (Some(long), Some(wait)) = (self.long.as_deref_mut(), tree.nodes.get(id as usize))
        else {
            return false;
        };
        let len = usize::from(wait.long_run);
        let identity = tree.identity.get();
        if !(self.running_key == RunningKey::Absent
            && !tree.writes_running
            && long.parked_running_names != 0
            && long.parked_running_names == long.filed_ids_stamp
            && long.filed_ids_for == identity
            && long.filed_ids_nodes.len() == len
            && long.prev_running.is_empty()
            && long.now_running.is_empty()
            && matches!(&long.parked_running, Some(Value::Vector(ids)) if ids.len() == len))
        {
            return false;
        }
        // The ids kept name the wait and the flows above it, up to the
        // root: the nodes kept are these, climbed from the wait, unless
        // the wait's check as it ran on proved so already (for the nodes
        // kept, in this tree: `Long::filed_run_wait`).
        if long.filed_run_wait != id && !names_run_from_root(tree, id, &long.filed_ids_nodes) {
            return false;
        }
        debug_assert!(names_run_from_root(tree, id, &long.filed_ids_nodes));
        long.parked_running_names = 0;
        // Loaded, and run again: what `Engine::take_filed_running` and each
        // node's visit would have left.
        if long.where_running.len() < tree.nodes.len() {
            long.where_running.resize(tree.nodes.len(), (0, 0));
        }
        let Long {
            prev_running,
            filed_ids_nodes,
            where_running,
            generation,
            ..
        } = long;
        for (i, &n) in filed_ids_nodes.iter().enumerate() {
            prev_running.push((n, Fate::Running));
            if let Some(entry) = where_running.get_mut(n as usize) {
                *entry = (*generation, i as u32);
            }
        }
        long.runs_again = wait.long_run.into();
        long.db_names_prev = true;
        long.prev_ids_for = identity;
        let Some(running) = long.parked_running.as_mut() else {
            return false;
        };
        // Swapped into the db's room, leaving its nil parked: the set
        // moves whole, never through the stack (see `Map::push_keyword_swap`).
        let at = self.db.push_keyword_swap(kw::RUNNING, running);
        // Nil: nothing to drop.
        std::mem::forget(long.parked_running.take());
        tree.running_key_hint.remember(Some(at));
        // State written in a db that records this tree (the usual one,
        // which the set-up found stamped) leaves nothing to stamp: the
        // end of the tick then files the set as the usual tick's end does.
        self.wrote_state = !self.had_tree;
        self.running_key = RunningKey::Held;
        self.watch = true;
        true
    }

    /// Records the running set after a tick that ended in Error, if the
    /// tick changed it: nodes that started running stay running (so they are
    /// halted once a later tick passes them by), nodes halted are gone (so
    /// they are not halted twice), and nodes the tick did not reach keep
    /// running. A tick that changed nothing (its running set could not even
    /// be read) leaves the db's as it was.
    #[cold]
    pub(crate) fn store_running_after_error(&mut self) {
        let Some(long) = self.long.as_mut() else {
            return;
        };
        let changed = !long.now_running.is_empty()
            || long
                .prev_running
                .iter()
                .any(|(_, fate)| matches!(fate, Fate::Halted | Fate::Running));
        if !changed {
            return;
        }
        // Those that ran again are added by `store_running_changed`.
        let not_reached = long
            .prev_running
            .iter()
            .filter(|(_, fate)| *fate == Fate::Pending)
            .map(|(n, _)| *n);
        let mut now = std::mem::take(&mut long.now_running);
        now.extend(not_reached);
        long.now_running = now;
        self.store_running_changed();
    }

    /// A watched visit (see `Engine::tick`) of `node` returned `status`:
    /// notes it running if it returned Running, marks it visited if it
    /// was running after the last tick, and traces it if the tick is
    /// traced, with one look at the long-running state. A node of the last
    /// tick's set that runs again keeps its place there (`Fate::Running`)
    /// instead of being noted in `now_running`. A node ticked again in the
    /// tick in which it returned Running, and finishing now, no longer
    /// runs: its fate is `Fate::Visited` again, or it leaves `now_running`.
    #[inline(always)]
    pub(crate) fn watched(&mut self, node: u32, status: Status) {
        let running = status == Status::Running;
        match self.long.as_mut() {
            Some(long) => match long
                .running_at(node)
                .and_then(|i| long.prev_running.get_mut(i))
            {
                Some((_, fate)) if *fate != Fate::Halted => {
                    if running {
                        if *fate != Fate::Running {
                            *fate = Fate::Running;
                            long.runs_again += 1;
                        }
                    } else if *fate == Fate::Pending {
                        *fate = Fate::Visited;
                    } else if *fate == Fate::Running {
                        // Ran again earlier in this tick and finished since
                        // (ticked again in one tick: a loop over a counting
                        // parallel, which counts Running as succeeded).
                        *fate = Fate::Visited;
                        long.runs_again -= 1;
                    }
                }
                _ => {
                    if running {
                        long.note_now(node);
                    } else if !long.now_running.is_empty() {
                        long.finished_again(node);
                    }
                }
            },
            None => {
                if running {
                    self.note_first_running(node);
                }
            }
        }
        self.note_trace(TraceEvent::Ticked {
            node: NodeIndex(node),
            status,
        });
    }

    /// Whether anything in the tree is (or was, after the last tick) running.
    #[inline]
    pub(crate) fn anything_running(&self) -> bool {
        self.long
            .as_ref()
            .is_some_and(|l| !(l.prev_running.is_empty() && l.now_running.is_empty()))
    }

    /// Halts the running nodes not reached in this tick, deepest first.
    #[inline(always)]
    pub(crate) fn sweep(&mut self) {
        // Usually every one was reached: then there is nothing to do.
        if self
            .long
            .as_ref()
            .is_some_and(|l| l.prev_running.iter().any(|(_, f)| *f == Fate::Pending))
        {
            self.sweep_pending();
        }
    }

    /// [`Engine::sweep`] when a node was not reached.
    #[inline(never)]
    fn sweep_pending(&mut self) {
        let n = self.long.as_ref().map_or(0, |l| l.prev_running.len());
        for i in (0..n).rev() {
            let pending = self
                .long
                .as_ref()
                .and_then(|l| l.prev_running.get(i))
                .copied();
            if let Some((node, Fate::Pending)) = pending {
                self.halt_subtree(node);
            }
        }
    }

    /// Halts the children of a composite after position `after` (`kids` are
    /// its children), as a reactive sequence or selector does.
    #[inline(always)]
    pub(crate) fn halt_children_after(&mut self, kids: &[u32], after: usize) {
        // The last child has nothing after it: the usual case for a running
        // child, which a tree puts last more often than not.
        if after + 1 < kids.len() && self.anything_running() {
            self.halt_children_after_slow(kids, after);
        }
    }

    #[inline(never)]
    fn halt_children_after_slow(&mut self, kids: &[u32], after: usize) {
        for &child in kids.iter().skip(after + 1) {
            self.halt_subtree(child);
        }
    }

    /// Halts every running node in `node`'s subtree, deepest first, then
    /// clears the node memory of the whole subtree. Nothing happens if
    /// nothing in the subtree is running.
    pub(crate) fn halt_subtree(&mut self, node: u32) {
        let tree = self.tree;
        let Some(n) = tree.nodes.get(node as usize) else {
            return;
        };
        // Nothing runs in a plain subtree while the plain path is taken (a
        // db that names a plain node running turns it off, see `PlainPath`).
        if (n.plain && self.plain != PlainPath::Off) || !self.anything_running() {
            return;
        }
        let end = n.subtree_end;
        let range = node..end;
        let long = self.long_state();
        // Running: not reached yet, or ticked again and running again.
        let live = |fate: Fate| matches!(fate, Fate::Pending | Fate::Running);
        // Most subtrees passed by run nothing: found in the running set,
        // which is in pre-order without repeats (see `load_running_anew`),
        // by a binary search for where the subtree's nodes sit in it, and
        // in the few nodes running now.
        let now_below = noted_below(long, range.clone(), None);
        let from = long.prev_running.partition_point(|(n, _)| *n < node);
        let to = from
            + long
                .prev_running
                .get(from..)
                .map_or(0, |after| after.partition_point(|(n, _)| *n < end));
        let below = long.prev_running.get_mut(from..to).unwrap_or_default();
        let live_below = below.iter().any(|&(_, fate)| live(fate));
        if !live_below && !now_below {
            return;
        }
        // Into room kept from earlier halts: a halt allocates no list.
        let mut active = std::mem::take(&mut long.halting);
        active.clear();
        // Deepest first: the subtree's part of the set, in pre-order,
        // read backwards, each live node marked halted on the way.
        let mut stopped_again = 0;
        for (n, fate) in below.iter_mut().rev() {
            if live(*fate) {
                active.push(*n);
                stopped_again += u32::from(*fate == Fate::Running);
                *fate = Fate::Halted;
            }
        }
        long.runs_again = long.runs_again.saturating_sub(stopped_again);
        // Nodes that started running in this tick: rarer, and merged in.
        if now_below {
            let first = active.len();
            noted_below(long, range, Some(&mut active));
            for i in first..active.len() {
                if let Some(&n) = active.get(i) {
                    long.finished_again(n);
                }
            }
            active.sort_unstable_by(|a, b| b.cmp(a));
            active.dedup();
        }
        for &n in &active {
            self.halt_one(n);
        }
        self.clear_memory(node, end, &active);
        self.long_state().halting = active;
    }

    /// Runs the halt behaviour of one node: its hook, or a cancel request.
    fn halt_one(&mut self, node: u32) {
        self.note_trace(TraceEvent::Halted {
            node: NodeIndex(node),
        });
        let tree = self.tree;
        let n = &tree.nodes[node as usize];
        match &n.kind {
            Kind::Defer { action, .. } if self.memory(node).is_some() => {
                // Launched in this tick: the launch is taken back, and there
                // is nothing to cancel.
                let launches = &mut self.long_state().launches;
                if let Some(i) = launches.iter().position(|r| r.node == n.id) {
                    launches.remove(i);
                    return;
                }
                let memory = self.memory(node);
                let options = memory
                    .and_then(|m| m.get(&Value::Keyword(kw::LAUNCHED)))
                    .and_then(Value::as_map)
                    .cloned()
                    .unwrap_or_default();
                let request = memory
                    .and_then(|m| m.get(&Value::Keyword(kw::REQUEST)))
                    .and_then(Value::as_int)
                    .unwrap_or(0);
                self.long_state().cancels.push(Request {
                    node: n.id.clone(),
                    request,
                    action: *action,
                    options,
                });
            }
            Kind::Custom { node_type, options } => {
                if let (Imp::Custom(_), Some(hook)) = (&node_type.imp, &node_type.halt) {
                    let hook = hook.clone();
                    self.run_hook(node, |ctx| hook(ctx));
                }
                for (_, opt) in options.iter() {
                    self.halt_functions(node, opt);
                }
            }
            // A node that keeps nothing outside the db has nothing to do:
            // its run state is cleared with its subtree's.
            Kind::Defer { .. }
            | one_visit_leaf!()
            | Kind::Selector { .. }
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
            | Kind::Switch(_) => {}
        }
    }

    /// Calls the halt hooks of the functions a halted node's option uses.
    fn halt_functions(&mut self, node: u32, opt: &Opt) {
        if let Opt::Call(function, args) = opt {
            if let Some(hook) = &function.halt {
                let id = self.tree.nodes[node as usize].id.clone();
                let mut ctx = FnCtx {
                    db: self.db,
                    rng: &mut self.rng,
                };
                if let Err(panic) = crate::tick::catch_quietly(|| hook(&mut ctx, &id)) {
                    let msg = format!(
                        "halt hook of function `{}` panicked: {}",
                        function.name.as_str(),
                        panic_message(panic.as_ref())
                    );
                    self.fail(node, msg);
                }
            }
            for arg in args.iter() {
                self.halt_functions(node, arg);
            }
        }
    }

    /// Runs a user hook for `node` with a [`NodeCtx`] that cannot tick children;
    /// a panic becomes an error of the tick.
    pub(crate) fn run_hook(&mut self, node: u32, hook: impl FnOnce(&mut NodeCtx<'_, '_>)) {
        let was = std::mem::replace(&mut self.in_hook, true);
        let (result, db_lent) = {
            let mut ctx = NodeCtx::new(self, node);
            let result = crate::tick::catch_quietly(|| hook(&mut ctx));
            (result, ctx.db_lent)
        };
        self.in_hook = was;
        if db_lent {
            self.check_lent_db(node);
        }
        if let Err(panic) = result {
            let msg = format!("hook panicked: {}", panic_message(panic.as_ref()));
            self.fail(node, msg);
        }
        // A random draw of the hook's that failed (an exhausted stream) is
        // the hook's error, at its node: not left for the next node that
        // draws to take as its own, nor lost.
        if let Some(e) = self.rng.error.take() {
            self.fail(node, e);
        }
    }

    /// The usual halt's memory, when node `node` (just halted) holds all
    /// of it and all of it is run state (the caller knows its kind): the
    /// map `:aido/memory` has its one entry, found where the position
    /// hints say, and is taken out whole and kept for that node's next
    /// start, as [`Engine::clear_memory`] keeps it. Whether it was.
    #[inline(always)]
    pub(crate) fn park_memory_of(&mut self, node: u32) -> bool {
        let tree = self.tree;
        let (Some(at), Some(n)) = (
            tree.memory_key_hint.hit(self.db, kw::MEMORY),
            tree.nodes.get(node as usize),
        ) else {
            return false;
        };
        let only = match self.db.value_at(at) {
            Some(Value::Map(memory)) if memory.len() == 1 => match &*n.id {
                Value::Keyword(k) => memory.keyword_at(0, *k),
                id => memory.get_index(0).is_some_and(|(k, _)| same_id(k, id)),
            },
            _ => false,
        };
        if !only {
            return false;
        }
        self.wrote(kw::MEMORY);
        self.park_tail_key::<false>(at, kw::MEMORY, 0);
        true
    }

    /// Clears the run state of every node in `start..end`: what a halt
    /// abandons (a running child, a count in progress, a loop's iteration, a
    /// deferred action in flight). Persistent state stays: `:choose-each`'s
    /// pool, and the memory of user node types that declare theirs
    /// persistent ([`crate::extend::NodeType::persistent_memory`]).
    ///
    /// `halted` are the nodes just halted (distinct). Each step costs the
    /// smaller of the subtree and the map, as [`noted_below`] does for the
    /// running list: the usual halt, where all the memory there is belongs
    /// to halted nodes and is run state, is proved by looking each halted
    /// node up by its position hint until every entry is accounted for;
    /// otherwise a subtree smaller than a large map (of more than
    /// [`SCAN_LIMIT`] entries) has its nodes' entries found
    /// node by node, and the entries taken out in one order-keeping pass
    /// from the first of them (one shift when it is the only one), and a
    /// larger one is cleared by one pass over the map.
    pub(crate) fn clear_memory(&mut self, start: u32, end: u32, halted: &[u32]) {
        self.wrote(kw::MEMORY);
        let tree = self.tree;
        let Some(at) = tree.memory_key_hint.find(self.db, kw::MEMORY) else {
            return;
        };
        // Entries of a large map may be marked removed in this tick (see
        // `mark_removed`): absent to the search node by node, and gone with the
        // map or in a pass over all of it.
        let marked = memory_marks(self.long.as_deref());
        let may_mark = self.may_mark_memory();
        if let Some((_, Value::Map(memory))) = self.db.get_index_mut(at) {
            // The usual halt: all the memory there is belongs to nodes just
            // halted (in the subtree), and is run state. The states and the
            // map are recycled whole, without removing entries one by one.
            if memory.len() <= halted.len() && all_run_state_of(tree, memory, halted) {
                // One node's state (a long action's, the usual case): kept
                // whole for that node's next start.
                if memory.len() == 1 {
                    if let Some(old) = self.take_long_key(at) {
                        park(old, &mut self.long_state().parked_memory);
                    }
                    return;
                }
                for state in memory.values_mut() {
                    recycle(std::mem::take(state));
                }
                if let Some(long) = self.long.as_deref_mut() {
                    long.memory_marked = 0;
                }
                self.remove_long_key(at);
                return;
            }
            // Where the pass that takes entries out starts, found node by
            // node when the subtree is the smaller.
            let from = if memory.len() > SCAN_LIMIT && ((end - start) as usize) < memory.len() {
                match cleared_node_by_node(tree, memory, start..end, marked) {
                    Cleared::None => return,
                    // Marked, in a large map (each again found node by
                    // node: what a halt takes out is taken out again).
                    Cleared::One(_) | Cleared::From(_) if may_mark && memory.len() >= MARK_FROM => {
                        let Some(long) = self.long.as_deref_mut() else {
                            return;
                        };
                        // The write-back's settling, raised (see `mark_removed`).
                        if !self.results_maybe {
                            self.results_maybe = true;
                            long.marks_raised_results = true;
                        }
                        let mut gone = false;
                        for n in start..end {
                            let n = &tree.nodes[n as usize];
                            if let Some(i) = n.memory_hint.find_value(memory, &n.id)
                                && let Some(state) = memory.value_at_mut(i)
                                && !(marked_nil(state, long.memory_marked))
                                && !keeps_after_halt(n.kind.traits().memory, state)
                            {
                                gone |= mark_removed(&mut long.memory_marked, memory, i);
                                if gone {
                                    break;
                                }
                            }
                        }
                        if gone {
                            self.remove_long_key(at);
                        }
                        return;
                    }
                    Cleared::One(i) => {
                        count_moved(memory.len().saturating_sub(i + 1));
                        if let Some((_, old)) = memory.shift_remove_index(i) {
                            recycle(old);
                        }
                        if memory.is_empty() {
                            self.remove_long_key(at);
                        }
                        return;
                    }
                    Cleared::From(i) => i,
                }
            } else {
                0
            };
            // Each id looked up among the few nodes just halted, else in
            // the tree (a hash), so that the pass is linear in the map.
            // Marked entries leave in the same pass, from the first entry.
            let few = halted.len() <= SCAN_LIMIT;
            let from = if marked { 0 } else { from };
            count_moved(memory.len().saturating_sub(from));
            memory.retain_from(from, |id, state| {
                if marked && state.is_nil() {
                    return false;
                }
                let node = if few {
                    halted
                        .iter()
                        .copied()
                        .find(|&n| same_id(&tree.nodes[n as usize].id, id))
                        .or_else(|| tree.find(id).map(|n| n.0))
                } else {
                    tree.find(id).map(|n| n.0)
                };
                let Some(node) = node.filter(|n| (start..end).contains(n)) else {
                    return true;
                };
                let keep = keeps_after_halt(tree.nodes[node as usize].kind.traits().memory, state);
                if !keep {
                    recycle(std::mem::take(state));
                }
                keep
            });
            if marked && let Some(long) = self.long.as_deref_mut() {
                long.memory_marked = 0;
            }
            if memory.is_empty() {
                self.remove_long_key(at);
            }
        }
    }
}

/// Whether every entry of `memory` (no longer than `halted`) is the run
/// state of a node of `halted`. A few halted nodes are compared with each
/// key in place; more are each looked up by their position hint, until as
/// many have been found as the map has entries (ids are distinct, so each
/// find is another entry), which is linear where the comparisons of every
/// key with every node were quadratic.
fn all_run_state_of(tree: &crate::tree::Tree, memory: &Map, halted: &[u32]) -> bool {
    // A few halted nodes: each key compared with their ids in place.
    if halted.len() <= SCAN_LIMIT {
        return memory.keys().all(|id| {
            halted.iter().any(|&n| {
                let n = &tree.nodes[n as usize];
                same_id(&n.id, id) && run_state_only(n.kind.traits().memory)
            })
        });
    }
    let mut found = 0;
    for &n in halted {
        if found == memory.len() {
            break;
        }
        let n = &tree.nodes[n as usize];
        if n.memory_hint.find_value(memory, &n.id).is_some() {
            if !run_state_only(n.kind.traits().memory) {
                return false;
            }
            found += 1;
        }
    }
    found == memory.len()
}

/// Whether the long-running state `long` counts entries of node memory
/// marked removed in this tick (see `mark_removed`).
#[inline(always)]
fn memory_marks(long: Option<&Long>) -> bool {
    long.is_some_and(|l| l.memory_marked > 0)
}

/// Whether `state`, a node memory entry, is marked removed (`marked`: the
/// count of marks).
#[inline(always)]
fn marked_nil(state: &Value, marked: u32) -> bool {
    marked > 0 && state.is_nil()
}

/// What a halt takes out of node memory, found node by node.
enum Cleared {
    /// Nothing.
    None,
    /// The entry at this position alone.
    One(usize),
    /// Two or more entries, the first at this position.
    From(usize),
}

/// Finds the entries of the nodes of `range` in `memory` by their position
/// hints, and which of them a halt takes out ([`keeps_after_halt`], which
/// also takes a pool's running child out of the state it keeps).
fn cleared_node_by_node(
    tree: &crate::tree::Tree,
    memory: &mut Map,
    range: std::ops::Range<u32>,
    marked: bool,
) -> Cleared {
    let mut first = None;
    let mut count = 0usize;
    for n in range {
        let n = &tree.nodes[n as usize];
        let Some(i) = n.memory_hint.find_value(memory, &n.id) else {
            continue;
        };
        let Some(state) = memory.value_at_mut(i) else {
            continue;
        };
        // An entry marked removed in this tick is absent.
        if marked && state.is_nil() {
            continue;
        }
        if !keeps_after_halt(n.kind.traits().memory, state) {
            count += 1;
            first = Some(first.map_or(i, |f: usize| f.min(i)));
        }
    }
    match (first, count) {
        (Some(i), 1) => Cleared::One(i),
        (Some(i), _) => Cleared::From(i),
        (None, _) => Cleared::None,
    }
}

/// Whether a halted node of kind `memory` keeps its memory entry `state`:
/// a pool keeps what it has drawn (its running child is taken out), a
/// persistent state stays, run state goes. Taking the running child out
/// again finds nothing, so a second call says the same.
fn keeps_after_halt(memory: Memory, state: &mut Value) -> bool {
    match memory {
        Memory::Pool => {
            if let Value::Map(m) = state {
                m.shift_remove(&Value::Keyword(kw::RUNNING_CHILD));
                !m.is_empty()
            } else {
                false
            }
        }
        other => !run_state_only(other),
    }
}

/// Whether a node of `range` (a subtree's pre-order numbers) is noted
/// running in this tick (`Long::now_running`); with `found`, each such
/// node is pushed there. Looked up node by node in `Long::now_at` when the
/// subtree is no larger than the list, else found by a pass over the list:
/// a halt costs the smaller of the two, so that a tick that notes many
/// nodes and halts many small subtrees (each selector of a wide parallel
/// halting its later child) does not pass over every noted node at each
/// halt.
fn noted_below(long: &Long, range: std::ops::Range<u32>, found: Option<&mut Vec<u32>>) -> bool {
    let noted = long.now_running.len();
    if noted == 0 {
        return false;
    }
    let by_node = range.len() <= noted;
    match found {
        None if by_node => range.clone().any(|n| long.now_has(n)),
        None => long.now_running.iter().any(|n| range.contains(n)),
        Some(found) if by_node => {
            let before = found.len();
            found.extend(range.filter(|&n| long.now_has(n)));
            found.len() > before
        }
        Some(found) => {
            let before = found.len();
            found.extend(
                long.now_running
                    .iter()
                    .copied()
                    .filter(|n| range.contains(n)),
            );
            found.len() > before
        }
    }
}

/// Whether a halt clears all of a node's memory of kind `memory`: all of it
/// is run state. (`clear_memory`'s rule for the usual halt, which does not
/// look at the state.)
fn run_state_only(memory: Memory) -> bool {
    match memory {
        Memory::User { persistent } => !persistent,
        Memory::Decorator(reset) => reset != Reset::Never,
        Memory::Pool => false,
        Memory::Nothing
        | Memory::Index
        | Memory::Done
        | Memory::RunningPick
        | Memory::Iteration
        | Memory::Ticks
        | Memory::Launched => true,
    }
}

impl Engine<'_> {
    /// Below a policy parallel: notes the memory `node` has before it is
    /// written, if that memory is persistent, so that a Failure of the
    /// parallel can put it back.
    #[cold]
    #[inline(never)]
    pub(crate) fn journal_persistent(&mut self, node: u32) {
        let persistent = match self.tree.nodes[node as usize].kind.traits().memory {
            Memory::Pool => true,
            Memory::User { persistent } => persistent,
            Memory::Decorator(reset) => reset == Reset::Never,
            Memory::Nothing
            | Memory::Index
            | Memory::Done
            | Memory::RunningPick
            | Memory::Iteration
            | Memory::Ticks
            | Memory::Launched => false,
        };
        if persistent {
            let before = self.memory(node).cloned();
            self.long_state().journal.push((node, before));
        }
    }

    /// A policy parallel failed: the persistent memory written below it in
    /// this tick (journal entries from `mark` on) is put back as it was,
    /// latest write first. Run state in it is not: nothing below the
    /// parallel runs any more (`:choose-each`'s running pick is dropped).
    #[cold]
    #[inline(never)]
    pub(crate) fn roll_back_persistent(&mut self, mark: usize) {
        let Some(long) = self.long.as_mut() else {
            return;
        };
        if long.journal.len() <= mark {
            return;
        }
        let entries: Vec<(u32, Option<Value>)> = long.journal.drain(mark..).rev().collect();
        // Putting back is not a write to journal for a parallel above: the
        // memory is as it was before any of them wrote it.
        let depth = std::mem::take(&mut long.rollback_depth);
        for (node, before) in entries {
            let mut before = before;
            if self.tree.nodes[node as usize].kind.traits().memory == Memory::Pool
                && let Some(Value::Map(m)) = &mut before
            {
                m.shift_remove(&Value::Keyword(kw::RUNNING_CHILD));
                if m.is_empty() {
                    before = None;
                }
            }
            if let Err(e) = self.set_memory(node, before) {
                self.fail(node, e);
                break;
            }
        }
        self.long_state().rollback_depth = depth;
    }

    /// Checks a node's preconditions; `Some(status)` if one decided the
    /// outcome without ticking the node (which is then halted if it was running).
    #[inline(never)]
    pub(crate) fn preconditions(
        &mut self,
        node: u32,
        pre: &crate::tree::Preconditions,
    ) -> Option<Status> {
        let checks = [
            (&pre.failure_if, Status::Failure),
            (&pre.success_if, Status::Success),
            (&pre.skip_if, Status::Skipped),
        ];
        for (opt, status) in checks {
            let Some(opt) = opt else { continue };
            let holds = match eval(opt, self.db, &mut self.rng) {
                Ok(v) => v.is_truthy(),
                Err(e) => {
                    let e = self.rng.error.take().unwrap_or(e);
                    return Some(self.fail(node, e));
                }
            };
            if holds {
                self.halt_subtree(node);
                self.note_trace(TraceEvent::Ticked {
                    node: NodeIndex(node),
                    status,
                });
                return Some(status);
            }
        }
        None
    }
}

// Node memory's removals from a large map, marked and taken out together.
// (Kept in this file: a module of their own moved the release build's
// partition of code and made unrelated hot functions longer.)
//
// Taking one entry out of `:aido/memory` moves every later entry
// (`Map::shift_remove_index`), so a tick in which N waits end, or N halts
// each take one entry out, moved N²/2 entries. In a tree where nothing but
// the engine reads or writes node memory while a tick runs
// (`Tree::reads_memory` unset: no user node type or function, no data node
// or dynamic option whose key path can start at `:aido/memory`), a removal
// from a map of `MARK_FROM` entries or more leaves `nil` in the entry's
// place instead (its state recycled) and counts it on the long-running
// state (`Long::memory_marked`). The engine takes a marked entry as absent
// (`Engine::memory`, a halt's search node by node); a node whose memory is
// written again takes its marked entry out and is pushed at the end, where
// it went before; and the marked entries leave in one order-keeping pass:
// at the end of the tick (`Engine::settle_memory`, from the write-back),
// or in the pass of a halt that goes over the whole map. The write-back
// pays no test for it: the first mark of a tick raises the engine's
// `results_maybe`, a test that only a tick whose db holds completions
// passes, and whose work it then does (after the last halt). So the map a tick
// leaves is the one that taking each entry out at once would have left,
// in the same order, and nothing outside the engine sees a mark.
//
// A tree with such a reader takes each entry out at once, as the reader
// must see: its removals from a large map stay quadratic in a tick.

/// How many entries `:aido/memory` holds before a removal from it is
/// marked (see the comment above) instead of moving every later
/// entry: below it, the move is short.
pub(crate) const MARK_FROM: usize = 64;

#[cfg(test)]
thread_local! {
    /// The node memory entries that the engine's removals moved (or went
    /// over) on this thread: the tests' measure of their work.
    pub(crate) static MOVED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Counts `n` node memory entries moved or gone over by a removal (in
/// tests only).
#[inline(always)]
pub(crate) fn count_moved(n: usize) {
    #[cfg(test)]
    MOVED.with(|moved| moved.set(moved.get() + n));
    let _ = n;
}

/// Two facts about `nodes`, in one pass the compiler makes over every tree
/// (and `Stubs::apply` again):
/// - whether a node writes under `:aido/running`: a data node whose key
///   path (or `:into`) starts there. Such a tree gets no shortcut at the
///   end of a tick (`Long::db_names_prev`): the set the tick ends with is
///   compared id by id with the db's, and written over an edit. (User code
///   handed the db is caught when it returns, see `Engine::check_lent_db`.)
/// - whether a node can read or write `:aido/memory` while a tick runs, the
///   engine aside (`Tree::reads_memory`): a user node type (handed the db,
///   and its halt hook too), or a data node whose key path (or `:into`)
///   starts there. The dynamic options (`[:aido/db ..]`, `[:aido/fn ..]`)
///   are told by the compiler as it lowers them
///   (`Compiler::dynamic_reads_memory`).
pub(crate) fn reserved_reach(nodes: &[crate::tree::Node]) -> (bool, bool) {
    use crate::tree::KeyPath;
    // A key path's top key, compared in place with both.
    let top = |key: &KeyPath| {
        let k = match key {
            KeyPath::Kw(k, _) => Some(*k),
            KeyPath::One(Value::Keyword(k)) => Some(*k),
            KeyPath::Path(path) => match path.first() {
                Some(Value::Keyword(k)) => Some(*k),
                _ => None,
            },
            KeyPath::One(_) => None,
        };
        (k == Some(kw::RUNNING), k == Some(kw::MEMORY))
    };
    let none = (false, false);
    let either = |a: (bool, bool), b: (bool, bool)| (a.0 | b.0, a.1 | b.1);
    let (mut running, mut memory) = none;
    for node in nodes {
        let (r, m) = match &node.kind {
            Kind::Define { key, .. }
            | Kind::Inc { key }
            | Kind::Dissoc { key }
            | Kind::Emit { key, .. } => top(key),
            Kind::Typed(t) => top(t.write.key()),
            Kind::Matches(m) => {
                let into = m.into.as_ref().map_or(none, |t| top(&t.path));
                (into.0, into.1 | top(&m.key).1)
            }
            Kind::Defer { into, .. } => into.as_ref().map_or(none, |t| top(&t.path)),
            // Reads.
            Kind::Present { key } | Kind::Test { key, .. } => (false, top(key).1),
            Kind::Cooldown(c) => (false, c.key.as_ref().is_some_and(|k| top(k).1)),
            // Handed the db: caught when it returns for the running set
            // (`Engine::check_lent_db`).
            Kind::Custom { .. } => (false, true),
            // Options only (told by the compiler), or none.
            Kind::Success
            | Kind::Failure
            | Kind::Equal { .. }
            | Kind::Selector { .. }
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
            | Kind::WaitSeconds { .. }
            | Kind::Timeout { .. }
            | Kind::Retry { .. }
            | Kind::Repeat { .. }
            | Kind::RunOnce { .. }
            | Kind::Delay { .. }
            | Kind::Throttle { .. }
            | Kind::KeepRunningUntilFailure
            | Kind::Force { .. }
            | Kind::ParallelAll { .. }
            | Kind::If
            | Kind::Switch(_) => none,
        };
        (running, memory) = either((running, memory), (r, m));
    }
    (running, memory)
}

/// Whether key path `key` starts at `:aido/memory` (compared in place;
/// the compiler asks it of every `[:aido/db ..]`; out of line, so that
/// the compiler's lowering keeps its shape).
#[inline(never)]
pub(crate) fn starts_at_memory(key: &crate::tree::KeyPath) -> bool {
    use crate::tree::KeyPath;
    let memory = |v: &Value| matches!(v, Value::Keyword(k) if *k == kw::MEMORY);
    match key {
        KeyPath::Kw(k, _) => *k == kw::MEMORY,
        KeyPath::One(v) => memory(v),
        KeyPath::Path(path) => path.first().is_some_and(memory),
    }
}

/// Marks entry `i` of node memory `memory` removed: its state recycled and
/// `nil` left in its place, so that no later entry moves, and counted in
/// `marked`. An entry marked already is left as it is. Whether every entry
/// is now marked: the count is then zero again, and the caller takes the
/// map out.
pub(crate) fn mark_removed(marked: &mut u32, memory: &mut Map, i: usize) -> bool {
    let Some(state) = memory.value_at_mut(i) else {
        return false;
    };
    if !(state.is_nil() && *marked > 0) {
        recycle(std::mem::take(state));
        *marked += 1;
    }
    if (*marked as usize) < memory.len() {
        return false;
    }
    // The count is checked before the map goes: an entry taken out
    // otherwise (a reactive sequence's marks) may have left it high.
    count_moved(memory.len());
    let nils = memory.values().filter(|v| v.is_nil()).count();
    if nils == memory.len() {
        *marked = 0;
        return true;
    }
    *marked = nils as u32;
    false
}

impl Engine<'_> {
    /// Whether entries of `:aido/memory` are marked removed in this tick.
    #[inline(always)]
    pub(crate) fn memory_marked(&self) -> bool {
        self.long.as_deref().is_some_and(|l| l.memory_marked > 0)
    }

    /// Whether this tick may mark removals from node memory: the tree has
    /// no reader of it but the engine, the tick has its long-running state
    /// (where the marks are counted), and its end writes back.
    #[inline(always)]
    pub(crate) fn may_mark_memory(&self) -> bool {
        !self.tree.reads_memory && !self.keep_running && self.long.is_some()
    }

    /// Takes entry `i` out of node memory, a map of [`MARK_FROM`] entries or
    /// more at position `at` of the db: marked when the tick may mark,
    /// else shifted out.
    #[cold]
    #[inline(never)]
    pub(crate) fn remove_large_memory(&mut self, at: usize, i: usize) {
        let may_mark = self.may_mark_memory();
        let Some((_, Value::Map(memory))) = self.db.get_index_mut(at) else {
            return;
        };
        let gone = match self.long.as_deref_mut() {
            Some(long) if may_mark => {
                if !self.results_maybe {
                    self.results_maybe = true;
                    long.marks_raised_results = true;
                }
                mark_removed(&mut long.memory_marked, memory, i)
            }
            _ => {
                count_moved(memory.len().saturating_sub(i + 1));
                if let Some((_, old)) = memory.shift_remove_index(i) {
                    recycle(old);
                }
                memory.is_empty()
            }
        };
        if gone {
            self.remove_long_key(at);
        }
    }

    /// Writes `state` as the memory of `node`, whose entry is `i` in node
    /// memory, a map of [`MARK_FROM`] entries or more at position `at` of
    /// the db: over the old state, or, when the entry is marked removed,
    /// as a new entry at the end (where taking it out at once and writing
    /// it again puts it), the marked one taken out alone.
    #[cold]
    #[inline(never)]
    pub(crate) fn write_large_memory(&mut self, at: usize, i: usize, node: u32, state: NewMemory) {
        let tree = self.tree;
        let n = &tree.nodes[node as usize];
        let Value::Map(memory) = &mut self.db[at] else {
            return;
        };
        match self.long.as_deref_mut() {
            Some(long) if long.memory_marked > 0 && memory[i].is_nil() => {
                count_moved(memory.len().saturating_sub(i + 1));
                memory.shift_remove_index(i);
                long.memory_marked -= 1;
                let pushed = memory.push(n.id.clone(), state.into_value());
                n.memory_hint.remember(Some(pushed));
            }
            _ => state.write_over(&mut memory[i], drop),
        }
    }

    /// Takes the entries of `:aido/memory` marked removed in this tick out,
    /// in one order-keeping pass: at the end of the tick, from the
    /// write-back's test of `results_maybe` (after the last halt), which
    /// the first mark raised if the db had no completions. Whether it did:
    /// then the write-back has no completions to deal with.
    #[inline(always)]
    pub(crate) fn settle_memory(&mut self) -> bool {
        match self.long.as_deref() {
            Some(long) if long.marks_raised_results || long.memory_marked != 0 => {
                self.settle_marks()
            }
            _ => false,
        }
    }

    /// [`Engine::settle_memory`] when the tick marked entries.
    #[cold]
    #[inline(never)]
    fn settle_marks(&mut self) -> bool {
        let Some(long) = self.long.as_deref_mut() else {
            return false;
        };
        let raised = std::mem::take(&mut long.marks_raised_results);
        let marked = std::mem::take(&mut long.memory_marked) != 0;
        let tree = self.tree;
        if marked
            && let Some(at) = tree.memory_key_hint.find(self.db, kw::MEMORY)
            && let Some((_, Value::Map(memory))) = self.db.get_index_mut(at)
        {
            count_moved(memory.len());
            memory.retain(|_, state| !state.is_nil());
            if memory.is_empty() {
                self.remove_long_key(at);
            }
        }
        raised
    }
}

#[cfg(test)]
mod marks_tests;
