//! Recording a run: what every tick did, node by node, in one format shared
//! by the text timeline, the visual timeline page and scenario tests.
//!
//! A [`Recorder`] is attached to a sequence of ticks. It ticks with tracing
//! on, and for each tick keeps a [`TickRecord`]: the root's status, the
//! nodes visited in tree order with their depth and status, the events
//! (halts, skips, launches, cancels, errors, trims, reloads), the input
//! merged before the tick and the db's changes against the tick before.
//! The finished [`RunRecord`] also holds the shape of every tree the run
//! used (a trim or a reload changes it) and the starting db, so the db at
//! any tick can be rebuilt from the changes alone.
//!
//! From a record come the text timeline ([`timeline`], what `aido run
//! --format pretty` prints) and the timeline page ([`page`], `aido run
//! --timeline`); [`outline`], [`dot`] and [`mermaid`] show a tree itself.
//!
//! ```
//! use aido::record::{Recorder, TimelineOptions, timeline};
//! use aido::{Registry, Status, compile_str, read_value};
//!
//! let tree = compile_str(
//!     "count.edn",
//!     "[:sequence [:inc! {:key :n}] [:less-than? {:key :n :val 2}]]",
//!     &Registry::new(),
//! )
//! .unwrap();
//! let mut db = read_value("{}").unwrap();
//! let mut recorder = Recorder::new(&tree, &db);
//! for _ in 0..2 {
//!     db = recorder.tick(db, &tree).db;
//! }
//! let run = recorder.finish();
//! assert_eq!(run.tick(0).map(|t| t.status), Some(Status::Success));
//! assert_eq!(run.tick(1).map(|t| t.status), Some(Status::Failure));
//! assert_eq!(
//!     timeline(&run, &TimelineOptions::default()),
//!     "tick 1: success\n  + :n 1\n\ntick 2: failure\n  ~ :n 1 -> 2\n"
//! );
//! ```

mod page;
mod recorder;
mod show;
mod stored;
mod timeline;

use std::sync::Arc;

use crate::source::{Source, Span};
use crate::tick::{DroppedResult, Request, Status, TickError, TickWarning};
use crate::tree::{NodeIndex, Tree};
use crate::value::{Keyword, Map, Value};

pub use page::{PageOptions, page};
pub use recorder::Recorder;
pub use show::{dot, mermaid, node_options, outline};
use stored::Changes;
pub use stored::TickChanges;
pub use timeline::{TimelineOptions, timeline, timeline_block};

/// A whole recorded run.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RunRecord {
    /// The shape of every tree the run used, in the order they were first
    /// used; [`TickRecord::tree`] indexes into it.
    pub trees: Vec<TreeRecord>,
    /// The db before the first tick (before its input was merged).
    pub start_db: Value,
    /// One compact entry per tick, in order: a tick's [`TickRecord`] is
    /// made from it as it is read ([`RunRecord::ticks`], [`RunRecord::tick`]).
    entries: Vec<TickEntry>,
    /// The lists of visits the ticks name ([`TickEntry::visits`]): ticks
    /// that visit alike share one.
    visit_lists: Vec<Arc<[Visit]>>,
    /// The notes of the ticks that have some, by the tick's index, in order.
    notes: Vec<(usize, Arc<TickNotes>)>,
    /// The number of the first tick ([`Recorder::numbered_from`]).
    first_tick: u64,
    /// The changes of every tick, one tick's after another's, in a compact
    /// form: a tick's record names its range ([`RunRecord::changes`]), so
    /// that a tick's changes cost the record no allocation of their own.
    changes: Changes,
}

/// A run record's lists, emptied, kept for the next record made on the
/// same thread (see [`Room::take`]).
#[derive(Debug, Default)]
struct Room {
    entries: Vec<TickEntry>,
    visit_lists: Vec<Arc<[Visit]>>,
    notes: Vec<(usize, Arc<TickNotes>)>,
    changes: Changes,
}

/// The most bytes of room a thread keeps from a dropped record for the
/// next one: enough for a run of tens of thousands of npc ticks, so that
/// a host recording many runs one after another (`aido test` over many
/// scenarios, a chat session, a bench) writes into memory already faulted
/// in, while a record bigger than this gives its memory back.
const ROOM_LIMIT: usize = 4 << 20;

thread_local! {
    /// The room of the last record dropped on this thread, if it was small
    /// enough to keep ([`ROOM_LIMIT`]).
    static SPARE_ROOM: std::cell::Cell<Option<Room>> = const { std::cell::Cell::new(None) };
}

impl Room {
    /// The room a dropped record left on this thread, else new lists.
    fn take() -> Room {
        SPARE_ROOM
            .try_with(std::cell::Cell::take)
            .ok()
            .flatten()
            .unwrap_or_default()
    }

    /// Empties the lists and keeps them for the next record on this
    /// thread, unless they are bigger than [`ROOM_LIMIT`] or the thread
    /// already keeps a bigger room.
    fn keep(mut self) {
        use std::mem::size_of;
        let bytes = self.entries.capacity() * size_of::<TickEntry>()
            + self.visit_lists.capacity() * size_of::<Arc<[Visit]>>()
            + self.notes.capacity() * size_of::<(usize, Arc<TickNotes>)>()
            + self.changes.room_bytes();
        if bytes > ROOM_LIMIT {
            return;
        }
        self.entries.clear();
        self.visit_lists.clear();
        self.notes.clear();
        self.changes.clear();
        let _ = SPARE_ROOM.try_with(|spare| {
            let kept = spare.take();
            let bigger = kept
                .as_ref()
                .is_some_and(|k| k.entries.capacity() > self.entries.capacity());
            spare.set(if bigger { kept } else { Some(self) });
        });
    }
}

impl Drop for RunRecord {
    fn drop(&mut self) {
        Room {
            entries: std::mem::take(&mut self.entries),
            visit_lists: std::mem::take(&mut self.visit_lists),
            notes: std::mem::take(&mut self.notes),
            changes: std::mem::take(&mut self.changes),
        }
        .keep();
    }
}

/// The shape of a tree, as a run record keeps it.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct TreeRecord {
    /// Every node, in tree order (pre-order: a node before its children).
    pub nodes: Vec<NodeRecord>,
    /// The text the tree was compiled from, if it was read from text.
    pub source: Option<Arc<Source>>,
    /// Every file the tree was compiled from: `source` first, then the
    /// files it includes (empty if the tree was not read from text).
    pub files: Vec<Arc<Source>>,
    /// The tree's fingerprint (see [`Tree::fingerprint`]).
    pub fingerprint: i64,
}

/// One node of a recorded tree.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct NodeRecord {
    /// The stable id.
    pub id: Value,
    /// The node type, e.g. `:selector`.
    pub node_type: Keyword,
    /// How deep it sits: 0 for the root.
    pub depth: u32,
    /// Its parent's index in [`TreeRecord::nodes`], `None` for the root.
    pub parent: Option<u32>,
    /// Its span in its file's text, if the tree was read from text.
    pub span: Option<Span>,
    /// Its file: an index into [`TreeRecord::files`] (0, the tree's own
    /// file, unless it came from an included one).
    pub file: usize,
    /// Its 1-based line in its file, if the tree was read from text.
    pub line: Option<usize>,
    /// Its options as written, without `:id` (see [`node_options`]).
    pub options: Option<Map>,
}

/// What one tick did.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct TickRecord {
    /// The tick's number, from 1 (or from where a resumed run goes on:
    /// [`Recorder::numbered_from`]).
    pub tick: u64,
    /// The tree it ran: an index into [`RunRecord::trees`].
    pub tree: usize,
    /// The root's status.
    pub status: Status,
    /// How many node visits it made.
    pub steps: u64,
    /// Every node ticked, once each, in tree order (see [`Visit`]); ticks
    /// that visit alike share one list.
    pub visits: Arc<[Visit]>,
    /// The input, halts and events, only for a tick that has any (see
    /// [`TickRecord::input`], [`TickRecord::halts`], [`TickRecord::events`]).
    notes: Option<Arc<TickNotes>>,
    /// Where the tick's changes start in its run's list of changes, and
    /// how many they are: see [`RunRecord::changes`].
    changes_at: usize,
    n_changes: u32,
}

/// What a tick's record holds only when there is some of it.
#[derive(Debug, Clone, PartialEq, Default)]
struct TickNotes {
    input: Option<Map>,
    halts: Vec<NodeIndex>,
    events: Vec<Event>,
}

impl TickNotes {
    /// The notes of a tick, boxed, if there are any: the test made where
    /// the tick is recorded (most ticks have none), the box out of line.
    #[inline(always)]
    fn of(input: Option<Map>, halts: Vec<NodeIndex>, events: Vec<Event>) -> Option<Arc<TickNotes>> {
        if input.is_none() && halts.is_empty() && events.is_empty() {
            return None;
        }
        Some(TickNotes::boxed(input, halts, events))
    }

    #[cold]
    #[inline(never)]
    fn boxed(input: Option<Map>, halts: Vec<NodeIndex>, events: Vec<Event>) -> Arc<TickNotes> {
        Arc::new(TickNotes {
            input,
            halts,
            events,
        })
    }
}

/// What a run record keeps of one tick, in 32 bytes: its [`TickRecord`]
/// is made from it as it is read. The tick's number follows from its
/// place, its changes start where the tick before's end, and its notes
/// (rare) are found by its index in [`RunRecord`]'s side list.
#[derive(Debug, Clone, Copy)]
struct TickEntry {
    steps: u64,
    /// Where the tick's changes end in the run's list of changes.
    changes_end: usize,
    /// Its list of visits: an index into [`RunRecord`]'s lists.
    visits: u32,
    /// The tree it ran: an index into [`RunRecord::trees`].
    tree: u32,
    status: Status,
    /// Whether the tick has notes in the run's side list.
    noted: bool,
}

/// The ticks of a [`RunRecord`], in order, each [`TickRecord`] made as it
/// is reached ([`RunRecord::ticks`]).
#[derive(Debug, Clone)]
pub struct Ticks<'a> {
    run: &'a RunRecord,
    range: std::ops::Range<usize>,
}

impl Iterator for Ticks<'_> {
    type Item = TickRecord;

    fn next(&mut self) -> Option<TickRecord> {
        let i = self.range.next()?;
        self.run.tick(i)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.range.size_hint()
    }

    fn nth(&mut self, n: usize) -> Option<TickRecord> {
        let i = self.range.nth(n)?;
        self.run.tick(i)
    }

    fn last(mut self) -> Option<TickRecord> {
        self.next_back()
    }
}

impl DoubleEndedIterator for Ticks<'_> {
    fn next_back(&mut self) -> Option<TickRecord> {
        let i = self.range.next_back()?;
        self.run.tick(i)
    }
}

impl ExactSizeIterator for Ticks<'_> {}

impl std::iter::FusedIterator for Ticks<'_> {}

/// A node ticked during a tick.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Visit {
    /// The node, in the tick's tree.
    pub node: NodeIndex,
    /// Its stable id.
    pub id: Value,
    /// How deep it sits: 0 for the root.
    pub depth: u32,
    /// What it returned the last time it was ticked in this tick
    /// ([`Status::Skipped`] when a precondition skipped it).
    pub status: Status,
    /// How many times it was ticked (a loop ticks its child again and again).
    pub count: u32,
    /// Whether it was halted after it was last ticked in this tick.
    pub halted: bool,
}

/// Something a tick did besides visiting nodes, or something done to the
/// tree or the db just before it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Event {
    /// A running node was halted.
    Halted {
        /// The node's id.
        node: Value,
    },
    /// A precondition skipped the node.
    Skipped {
        /// The node's id.
        node: Value,
    },
    /// A deferred action was launched.
    Launched(Request),
    /// A deferred action was cancelled.
    Cancelled(Request),
    /// A deferred completion answered no request in flight and was dropped,
    /// never applied.
    Dropped(DroppedResult),
    /// The tick noticed something that may be a mistake in the tree.
    Warning(TickWarning),
    /// The tick ended in Error (with the node's span).
    Error(Box<TickError>),
    /// A trim task was looked at before the tick: its report, as
    /// `{:task t, :outcome :applied|:deferred|:rejected, ...}`.
    Trim(Value),
    /// The tree was switched for another before the tick: the report, as
    /// `{:file f, :kept [...], :dropped [...], :halted [...]}` or
    /// `{:file f, :rejected "..."}`.
    Reload(Value),
    /// The db was last ticked with another tree and was carried over by
    /// node id: `{:kept [...], :dropped [...], :halted [...]}`.
    Migrated(Value),
    /// Anything else a host wants on the timeline: a kind and its data.
    Note {
        /// What kind of note, e.g. `:chat/said`.
        kind: Keyword,
        /// Its data.
        data: Value,
    },
}

impl Event {
    /// The event's kind as a word: `halt`, `skip`, `launch`, `cancel`,
    /// `dropped`, `warning`, `error`, `trim`, `reload`, `migrated`, or a
    /// note's kind without its colon.
    pub fn kind(&self) -> String {
        match self {
            Event::Halted { .. } => "halt".into(),
            Event::Skipped { .. } => "skip".into(),
            Event::Launched(_) => "launch".into(),
            Event::Cancelled(_) => "cancel".into(),
            Event::Dropped(_) => "dropped".into(),
            Event::Warning(_) => "warning".into(),
            Event::Error(_) => "error".into(),
            Event::Trim(_) => "trim".into(),
            Event::Reload(_) => "reload".into(),
            Event::Migrated(_) => "migrated".into(),
            Event::Note { kind, .. } => kind.to_string().trim_start_matches(':').to_owned(),
        }
    }

    /// The id of the node the event is about, if it is about one.
    pub fn node(&self) -> Option<&Value> {
        match self {
            Event::Halted { node } | Event::Skipped { node } => Some(node),
            Event::Launched(r) | Event::Cancelled(r) => Some(&r.node),
            Event::Error(e) => Some(&e.node),
            Event::Dropped(d) => Some(&d.node),
            Event::Warning(TickWarning::RunningChildChanged { node, .. }) => Some(node),
            Event::Trim(_) | Event::Reload(_) | Event::Migrated(_) | Event::Note { .. } => None,
        }
    }
}

/// A change to one top-level key of the db.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum DbChange {
    /// The key was not there before.
    Added {
        /// The key.
        key: Value,
        /// Its value now.
        value: Value,
    },
    /// The key's value changed.
    Changed {
        /// The key.
        key: Value,
        /// Its value before.
        old: Value,
        /// Its value now.
        new: Value,
    },
    /// The key is gone.
    Removed {
        /// The key.
        key: Value,
        /// Its value before.
        old: Value,
    },
    /// The key's value is a vector or list of at least [`MIN_APPEND`]
    /// elements that grew at its end and is otherwise unchanged: only the
    /// new elements are recorded, so a log that grows every tick costs the
    /// record what it gained, not its whole length every tick.
    Appended {
        /// The key.
        key: Value,
        /// The elements added at the end, in order.
        items: Vec<Value>,
    },
    /// The key's value is a map of at least [`MIN_APPEND`] entries, or a
    /// vector or list of at least that many elements that kept its length,
    /// and fewer than half of its entries changed: only those are recorded,
    /// as changes whose keys are the map's keys or the vector's indices
    /// (integers), nested the same way. A big map or a long vector edited in
    /// one place costs the record that place, not its whole value twice.
    Edited {
        /// The key.
        key: Value,
        /// The changes inside the value: map keys sorted by their EDN text,
        /// vector indices in order.
        changes: Vec<DbChange>,
    },
}

/// The fewest elements a vector or list must have had for its growth to be
/// recorded as [`DbChange::Appended`]: a short one is shown whole, old and
/// new, which reads better.
pub const MIN_APPEND: usize = 8;

impl DbChange {
    /// The key that changed.
    pub fn key(&self) -> &Value {
        match self {
            DbChange::Added { key, .. }
            | DbChange::Changed { key, .. }
            | DbChange::Removed { key, .. }
            | DbChange::Appended { key, .. }
            | DbChange::Edited { key, .. } => key,
        }
    }

    /// Whether the key is one of the library's own, `:aido/*`.
    pub fn is_aido_key(&self) -> bool {
        is_aido_key(self.key())
    }
}

/// Whether `key` is one of the library's own keys, `:aido/*`.
pub(crate) fn is_aido_key(key: &Value) -> bool {
    key.as_keyword()
        .is_some_and(|k| k.to_string().starts_with(":aido/"))
}

/// The changes that turn `old` into `new`, by top-level key, sorted by the
/// key's EDN text. A db that is not a map counts as an empty one.
pub fn diff(old: &Value, new: &Value) -> Vec<DbChange> {
    let mut last = old.as_map().cloned().unwrap_or_default();
    let mut changes = Vec::new();
    diff_into(
        &mut last,
        new.as_map().unwrap_or(&Map::default()),
        &mut changes,
    );
    changes
}

/// Appends to `out` the changes that turn `last` into `new`, sorted by the
/// key's EDN text, and makes `last` equal to `new` on the way: only what
/// changed is copied (a value that grew at its end or changed in a few
/// entries is recorded, and copied, by those alone).
fn diff_into(last: &mut Map, new: &Map, out: &mut Vec<DbChange>) {
    let from = out.len();
    let mut added = false;
    for (i, (key, value)) in new.iter().enumerate() {
        // Most dbs keep their keys in place from tick to tick: the same
        // position is tried before a hashed look-up.
        let at = match last.get_index(i) {
            Some((k, _)) if same(k, key) => Some(i),
            _ => last.get_index_of(key),
        };
        let before = at.and_then(|at| last.get_index_mut(at)).map(|(_, v)| v);
        match before {
            None => {
                added = true;
                last.insert(key.clone(), value.clone());
                out.push(DbChange::Added {
                    key: key.clone(),
                    value: value.clone(),
                });
            }
            Some(before) => out.extend(change(key, before, value)),
        }
    }
    // Every key of `new` is in `last`: when they are as many, none went.
    if last.len() != new.len() || added {
        let mut i = 0;
        while let Some((key, _)) = last.get_index(i) {
            if new.contains_key(key) {
                i += 1;
            } else if let Some((key, old)) = last.shift_remove_index(i) {
                out.push(DbChange::Removed { key, old });
            }
        }
    }
    if let Some(changes) = out.get_mut(from..) {
        sort_by_key_text(changes, DbChange::key);
    }
}

/// Appends to `out` the changes that turn `last` into `new` at the
/// top-level keys `keys` (each once, in the order of their text), and
/// makes `last` equal to `new` at those keys: the same changes as
/// [`diff_into`] gives when no other key differs, without looking at the
/// others.
fn diff_keys(last: &mut Map, new: &Map, keys: impl Iterator<Item = Keyword>, out: &mut Changes) {
    use crate::value::find_kw;
    for k in keys {
        let now_at = find_kw(new, k);
        // The two maps usually hold their keys in the same order: the
        // position in `new` is tried in `last` before a look-up.
        let last_at = match now_at {
            Some(at) if last.keyword_at(at, k) => Some(at),
            _ => find_kw(last, k),
        };
        match (last_at, now_at.and_then(|i| new.value_at(i))) {
            (None, None) => {}
            (None, Some(value)) => {
                last.insert(Value::Keyword(k), value.clone());
                out.push(DbChange::Added {
                    key: Value::Keyword(k),
                    value: value.clone(),
                });
            }
            (Some(at), None) => {
                if let Some((key, old)) = last.shift_remove_index(at) {
                    out.push(DbChange::Removed { key, old });
                }
            }
            (Some(at), Some(value)) => {
                if let Some(before) = last.value_at_mut(at) {
                    push_change(k, before, value, out);
                }
            }
        }
    }
}

/// Appends to `out` how the value at the top-level keyword `key` became
/// `now`, if they differ, with `before` made equal to `now` (see
/// [`change`]): a scalar, the usual value, without a call, kept packed and
/// written over `before` in place. Always inlined: left to the compiler,
/// whether it is depends on how the crate's code is split for code
/// generation, and a call here costs a recorded tick about 50 instructions.
#[inline(always)]
fn push_change(key: Keyword, before: &mut Value, now: &Value, out: &mut Changes) {
    // Two scalars of one kind (the usual value) are told apart first: they
    // are never collections.
    // The commonest change, packed without asking the values' kinds again.
    if let (Value::Int(a), Value::Int(b)) = (&mut *before, now)
        && (*a == *b || out.push_ints(key, *a, *b))
    {
        *a = *b;
        return;
    }
    let equal = match (&*before, now) {
        (Value::Int(a), Value::Int(b)) => a == b,
        (Value::Keyword(a), Value::Keyword(b)) => a == b,
        (Value::Bool(a), Value::Bool(b)) => a == b,
        _ if is_collection(before) && is_collection(now) => {
            if let Some(change) = change(&Value::Keyword(key), before, now) {
                out.push(change);
            }
            return;
        }
        _ => same(before, now),
    };
    if equal {
        return;
    }
    if out.push_scalars(key, before, now) {
        // Written in place: a scalar of the same kind has nothing to drop.
        match (&mut *before, now) {
            (Value::Int(a), Value::Int(b)) => *a = *b,
            (Value::Keyword(a), Value::Keyword(b)) => *a = *b,
            (Value::Bool(a), Value::Bool(b)) => *a = *b,
            (before, now) => *before = now.clone(),
        }
        return;
    }
    out.push(DbChange::Changed {
        key: Value::Keyword(key),
        old: std::mem::replace(before, now.clone()),
        new: now.clone(),
    });
}

/// Whether `value` is a vector, list, set, map or tagged value.
#[inline]
fn is_collection(value: &Value) -> bool {
    matches!(
        value,
        Value::Vector(_) | Value::List(_) | Value::Set(_) | Value::Map(_) | Value::Tagged(..)
    )
}

/// How `before` became `now`, if they differ, with `before` made equal to
/// `now`: an append, an edit of a few entries, or the whole value. A big
/// value that did not change costs one pass over it.
fn change(key: &Value, before: &mut Value, now: &Value) -> Option<DbChange> {
    let mut changes = Vec::new();
    match (&mut *before, now) {
        (Value::Map(old), Value::Map(new)) => match changed_entries(old, new) {
            Some(0) => return None,
            Some(_) => diff_into(old, new, &mut changes),
            None => {}
        },
        (Value::Vector(old), Value::Vector(new)) | (Value::List(old), Value::List(new)) => {
            if let Some(items) = appended(old, new) {
                old.extend(items.iter().cloned());
                return Some(DbChange::Appended {
                    key: key.clone(),
                    items: items.to_vec(),
                });
            }
            match changed_elements(old, new) {
                Some(0) => return None,
                Some(_) => {
                    for (i, (old, new)) in old.iter_mut().zip(new.iter()).enumerate() {
                        changes.extend(change(&Value::Int(i as i64), old, new));
                    }
                }
                None => {}
            }
        }
        _ => {}
    }
    if !changes.is_empty() {
        return Some(DbChange::Edited {
            key: key.clone(),
            changes,
        });
    }
    if same(before, now) {
        return None;
    }
    Some(DbChange::Changed {
        key: key.clone(),
        old: std::mem::replace(before, now.clone()),
        new: now.clone(),
    })
}

/// How many entries two maps differ in (changed, added or removed), if
/// fewer than half of the entries of the bigger one, which has at least
/// [`MIN_APPEND`]. Entries are compared position by position while the
/// keys line up (the usual case: a tick that edits a map keeps its order),
/// by look-up where they do not.
fn changed_entries(old: &Map, new: &Map) -> Option<usize> {
    let size = old.len().max(new.len());
    if size < MIN_APPEND {
        return None;
    }
    let limit = size / 2;
    let (mut changed, mut added) = (0, 0);
    for (i, (key, value)) in new.iter().enumerate() {
        let before = match old.get_index(i) {
            Some((k, v)) if same(k, key) => Some(v),
            _ => old.get(key),
        };
        match before {
            Some(before) if same(before, value) => continue,
            Some(_) => changed += 1,
            None => added += 1,
        }
        if changed + added >= limit {
            return None;
        }
    }
    // The keys of `new` that `old` has are `new.len() - added`; the rest of
    // `old`'s keys went.
    let removed = old.len() - (new.len() - added);
    let differ = changed + added + removed;
    (differ < limit).then_some(differ)
}

/// How many elements two vectors of the same length, at least
/// [`MIN_APPEND`], differ in, if fewer than half.
fn changed_elements(old: &[Value], new: &[Value]) -> Option<usize> {
    if old.len() != new.len() || old.len() < MIN_APPEND {
        return None;
    }
    let limit = old.len() / 2;
    let mut changed = 0;
    for (a, b) in old.iter().zip(new) {
        changed += usize::from(!same(a, b));
        if changed >= limit {
            return None;
        }
    }
    Some(changed)
}

/// The elements `new` has past the end of `old`, if `old` has at least
/// [`MIN_APPEND`] elements and `new` starts with them.
fn appended<'a>(old: &[Value], new: &'a [Value]) -> Option<&'a [Value]> {
    let (kept, added) = new.split_at_checked(old.len())?;
    let grew = old.len() >= MIN_APPEND && !added.is_empty();
    (grew && kept.iter().zip(old).all(|(a, b)| same(a, b))).then_some(added)
}

/// Equal, and printed alike: `1` and `1.0` are equal in Clojure, but a
/// change from one to the other is worth showing, at any depth. Maps are
/// compared entry by entry in their order while their keys line up, so
/// that comparing a big map with its unchanged copy hashes nothing.
#[inline]
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        // The usual keys and values, without the general comparison.
        (Value::Int(x), Value::Int(y)) => x == y,
        (Value::Keyword(x), Value::Keyword(y)) => x == y,
        (Value::Str(x), Value::Str(y)) => x == y,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Vector(x), Value::Vector(y)) | (Value::List(x), Value::List(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b))
        }
        (Value::Map(x), Value::Map(y)) => {
            if x.len() != y.len() {
                return false;
            }
            for (i, (key, value)) in x.iter().enumerate() {
                let other = match y.get_index(i) {
                    Some((k, v)) if same(k, key) => Some(v),
                    _ => y.get(key),
                };
                if !other.is_some_and(|other| same(value, other)) {
                    return false;
                }
            }
            true
        }
        _ => a == b && std::mem::discriminant(a) == std::mem::discriminant(b),
    }
}

/// Sorts by the EDN text of a key (stable, so that two runs that end in
/// equal dbs list their keys alike). Keywords, the usual keys, are
/// compared by their interned text without building it; items already in
/// order are left as they are.
pub(crate) fn sort_by_key_text<T>(items: &mut [T], key: impl Fn(&T) -> &Value) {
    let keyword_order = |a: &T, b: &T| match (key(a), key(b)) {
        (Value::Keyword(a), Value::Keyword(b)) => Some(a.as_str().cmp(b.as_str())),
        _ => None,
    };
    if items
        .windows(2)
        .all(|w| keyword_order(&w[0], &w[1]).is_some_and(|o| o.is_le()))
    {
        return;
    }
    if items.iter().all(|item| key(item).as_keyword().is_some()) {
        items.sort_by(|a, b| keyword_order(a, b).unwrap_or(std::cmp::Ordering::Equal));
    } else {
        items.sort_by_cached_key(|item| key(item).to_string());
    }
}

impl TreeRecord {
    /// The shape of `tree`.
    pub fn of(tree: &Tree) -> TreeRecord {
        let source = tree.source().cloned();
        let mut nodes: Vec<NodeRecord> = Vec::with_capacity(tree.len());
        for node in &tree.nodes {
            let parent = (node.parent != u32::MAX).then_some(node.parent);
            let depth = parent
                .and_then(|p| nodes.get(p as usize))
                .map_or(0, |p| p.depth + 1);
            let at = node.span.and_then(|s| tree.locate(s));
            let line = at.map(|(file, span)| file.line_col(span.start).line);
            let file = match (tree.files(), node.span) {
                (Some(files), Some(span)) => files.locate(span).map_or(0, |at| at.file.0 as usize),
                _ => 0,
            };
            nodes.push(NodeRecord {
                id: node.id.clone(),
                node_type: node.type_name,
                depth,
                parent,
                span: at.map(|(_, span)| span),
                file,
                line,
                options: node_options(tree, NodeIndex(nodes.len() as u32)),
            });
        }
        TreeRecord {
            nodes,
            files: match tree.files() {
                Some(files) => files.sources().cloned().collect(),
                None => source.iter().cloned().collect(),
            },
            source,
            fingerprint: tree.fingerprint(),
        }
    }

    /// The index of the node whose id is `id`.
    pub fn find(&self, id: &Value) -> Option<usize> {
        self.nodes.iter().position(|n| &n.id == id)
    }
}

/// The state of a node at a tick, as the timeline page shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum NodeState {
    /// Ticked; its last status.
    Ticked(Status),
    /// Halted (and not ticked after that in the same tick).
    Halted,
    /// Not ticked this tick.
    None,
}

impl NodeState {
    /// `success`, `failure`, `running`, `error`, `skipped`, `idle`,
    /// `halted` or `none`.
    pub fn as_str(self) -> &'static str {
        match self {
            NodeState::Ticked(status) => status.as_str(),
            NodeState::Halted => "halted",
            NodeState::None => "none",
        }
    }
}

impl TickRecord {
    /// The input merged into the db just before the tick, if any.
    pub fn input(&self) -> Option<&Map> {
        self.notes.as_ref().and_then(|n| n.input.as_ref())
    }

    /// Every node halted in this tick, in the order they were halted
    /// (ticked or not; see [`Visit::halted`] for the ones ticked).
    pub fn halts(&self) -> &[NodeIndex] {
        self.notes.as_ref().map_or(&[], |n| &n.halts)
    }

    /// What happened besides visits: first what was done between the
    /// ticks (trims, reloads, a carried-over db), then, in the order they
    /// happened, halts, skips, launches, cancels and the error.
    pub fn events(&self) -> &[Event] {
        self.notes.as_ref().map_or(&[], |n| &n.events)
    }

    /// The state of every node of the tick's tree (`n_nodes` of them), by
    /// node index: its last status if ticked, Halted if halted after that
    /// (or halted without being ticked), else None.
    pub fn node_states(&self, n_nodes: usize) -> Vec<NodeState> {
        let mut states = vec![NodeState::None; n_nodes];
        for node in self.halts() {
            if let Some(state) = states.get_mut(node.index()) {
                *state = NodeState::Halted;
            }
        }
        for visit in self.visits.iter() {
            if let Some(state) = states.get_mut(visit.node.index()) {
                *state = if visit.halted {
                    NodeState::Halted
                } else {
                    NodeState::Ticked(visit.status)
                };
            }
        }
        states
    }

    /// The ids of the nodes halted in this tick, in the order they were halted.
    pub fn halted(&self) -> impl Iterator<Item = &Value> {
        self.events().iter().filter_map(|e| match e {
            Event::Halted { node } => Some(node),
            _ => None,
        })
    }
}

impl RunRecord {
    /// The db's changes in `tick`, one of this run's ticks, against the db
    /// the tick before left (or the starting db), by top-level key, sorted
    /// by the key's EDN text. Inputs, trims and reloads show here too.
    ///
    ///
    /// The record keeps its changes in a compact form (a keyword key set
    /// from one scalar to another in 24 bytes, with nothing to drop): they
    /// are made again as they are read, a string or a collection cloned.
    ///
    /// ```
    /// use aido::record::{DbChange, Recorder};
    /// use aido::{Registry, Value, compile_str};
    ///
    /// let tree = compile_str("t.edn", "[:inc! {:key :n}]", &Registry::new()).unwrap();
    /// let mut recorder = Recorder::new(&tree, &Value::map());
    /// let db = recorder.tick(Value::map(), &tree).db;
    /// recorder.tick(db, &tree);
    /// let run = recorder.finish();
    /// let second = run.tick(1).unwrap();
    /// let changes: Vec<DbChange> = run.changes(&second).collect();
    /// assert!(matches!(
    ///     changes[..],
    ///     [DbChange::Changed { new: Value::Int(2), .. }]
    /// ));
    /// ```
    pub fn changes(&self, tick: &TickRecord) -> TickChanges<'_> {
        let end = tick.changes_at.saturating_add(tick.n_changes as usize);
        self.changes.get(tick.changes_at..end)
    }

    /// The db as it stood after tick `n` (0: the starting db), rebuilt from
    /// the starting db and the changes.
    pub fn db_after(&self, n: usize) -> Value {
        let mut db = self.start_db.clone();
        let end = n
            .checked_sub(1)
            .and_then(|last| {
                self.entries
                    .get(last.min(self.entries.len().saturating_sub(1)))
            })
            .map_or(0, |e| e.changes_end);
        apply(&mut db, self.changes.get(0..end));
        db
    }

    /// Every tick, in order: each [`TickRecord`] is made as it is reached
    /// (the record keeps a compact entry a tick), so the iterator yields
    /// owned records. Its `len()` is the number of ticks.
    ///
    /// ```
    /// use aido::record::Recorder;
    /// use aido::{Registry, Status, Value, compile_str};
    ///
    /// let tree = compile_str("t.edn", "[:inc! {:key :n}]", &Registry::new()).unwrap();
    /// let mut recorder = Recorder::new(&tree, &Value::map());
    /// let db = recorder.tick(Value::map(), &tree).db;
    /// recorder.tick(db, &tree);
    /// let run = recorder.finish();
    /// assert_eq!(run.ticks().len(), 2);
    /// let numbers: Vec<u64> = run.ticks().map(|t| t.tick).collect();
    /// assert_eq!(numbers, [1, 2]);
    /// assert!(run.ticks().all(|t| t.status == Status::Success));
    /// ```
    pub fn ticks(&self) -> Ticks<'_> {
        Ticks {
            run: self,
            range: 0..self.entries.len(),
        }
    }

    /// The record of tick `index` (from 0, whatever the ticks' numbers),
    /// made from the run's compact entry; `None` past the last tick.
    pub fn tick(&self, index: usize) -> Option<TickRecord> {
        let entry = self.entries.get(index)?;
        let changes_at = index
            .checked_sub(1)
            .and_then(|before| self.entries.get(before))
            .map_or(0, |e| e.changes_end);
        let notes = if entry.noted {
            self.notes
                .binary_search_by_key(&index, |(i, _)| *i)
                .ok()
                .and_then(|at| self.notes.get(at))
                .map(|(_, notes)| Arc::clone(notes))
        } else {
            None
        };
        let visits = match self.visit_lists.get(entry.visits as usize) {
            Some(visits) => Arc::clone(visits),
            None => Arc::from(Vec::new()),
        };
        Some(TickRecord {
            tick: self.first_tick.saturating_add(index as u64),
            tree: entry.tree as usize,
            status: entry.status,
            steps: entry.steps,
            visits,
            notes,
            changes_at,
            n_changes: u32::try_from(entry.changes_end.saturating_sub(changes_at))
                .unwrap_or(u32::MAX),
        })
    }

    /// The number of ticks recorded.
    pub fn n_ticks(&self) -> usize {
        self.entries.len()
    }
}

/// Applies changes to a db map (added keys go to the end).
pub(crate) fn apply(db: &mut Value, changes: impl IntoIterator<Item = DbChange>) {
    if db.as_map().is_none() {
        *db = Value::map();
    }
    if let Some(map) = db.as_map_mut() {
        for change in changes {
            apply_one(map, &change);
        }
    }
}

/// Applies changes keyed by a map's keys.
fn apply_to_map(map: &mut Map, changes: &[DbChange]) {
    for change in changes {
        apply_one(map, change);
    }
}

/// Applies one change keyed by a map's keys.
fn apply_one(map: &mut Map, change: &DbChange) {
    match change {
        DbChange::Added { key, value } => {
            map.insert(key.clone(), value.clone());
        }
        DbChange::Changed { key, new, .. } => {
            map.insert(key.clone(), new.clone());
        }
        DbChange::Removed { key, .. } => {
            map.shift_remove(key);
        }
        DbChange::Appended { key, items } => {
            if let Some(Value::Vector(v) | Value::List(v)) = map.get_mut(key) {
                v.extend(items.iter().cloned());
            }
        }
        DbChange::Edited { key, changes } => {
            if let Some(value) = map.get_mut(key) {
                apply_inside(value, changes);
            }
        }
    }
}

/// Applies the changes of a [`DbChange::Edited`] inside the value edited:
/// keyed by a map's keys, or by a vector's (or list's) indices.
fn apply_inside(value: &mut Value, changes: &[DbChange]) {
    let items = match value {
        Value::Map(map) => return apply_to_map(map, changes),
        Value::Vector(items) | Value::List(items) => items,
        _ => return,
    };
    for change in changes {
        let slot = change
            .key()
            .as_int()
            .and_then(|i| usize::try_from(i).ok())
            .and_then(|i| items.get_mut(i));
        let Some(slot) = slot else {
            continue;
        };
        match change {
            DbChange::Changed { new, .. } => *slot = new.clone(),
            DbChange::Appended { items, .. } => {
                if let Value::Vector(v) | Value::List(v) = slot {
                    v.extend(items.iter().cloned());
                }
            }
            DbChange::Edited { changes, .. } => apply_inside(slot, changes),
            // An element is never added or removed by an edit: its vector
            // keeps its length.
            DbChange::Added { .. } | DbChange::Removed { .. } => {}
        }
    }
}
