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
//! assert_eq!(run.ticks[0].status, Status::Success);
//! assert_eq!(run.ticks[1].status, Status::Failure);
//! assert_eq!(
//!     timeline(&run, &TimelineOptions::default()),
//!     "tick 1: success\n  + :n 1\n\ntick 2: failure\n  ~ :n 1 -> 2\n"
//! );
//! ```

mod page;
mod show;
mod timeline;

use std::sync::Arc;

use crate::source::{Source, Span};
use crate::tick::{
    DroppedResult, Request, Status, Tick, TickError, TickOptions, TickWarning, TraceEvent, Writes,
    run_tick_noting,
};
use crate::tree::{NodeIndex, Tree};
use crate::value::{Keyword, Map, Value};

pub use page::{PageOptions, page};
pub use show::{dot, mermaid, node_options, outline};
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
    /// One record per tick, in order.
    pub ticks: Vec<TickRecord>,
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
    /// The input merged into the db just before the tick, if any.
    pub input: Option<Map>,
    /// Every node ticked, once each, in tree order (see [`Visit`]); ticks
    /// that visit alike share one list.
    pub visits: Arc<[Visit]>,
    /// Every node halted in this tick, in the order they were halted
    /// (ticked or not; see [`Visit::halted`] for the ones ticked).
    pub halts: Vec<NodeIndex>,
    /// What happened besides visits: first what was done between the
    /// ticks (trims, reloads, a carried-over db), then, in the order they
    /// happened, halts, skips, launches, cancels and the error.
    pub events: Vec<Event>,
    /// The db's changes against the db the tick before left (or the
    /// starting db), by top-level key, sorted by the key's EDN text.
    /// Inputs, trims and reloads show here too.
    pub changes: Vec<DbChange>,
}

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
fn diff_keys(
    last: &mut Map,
    new: &Map,
    keys: impl Iterator<Item = Keyword>,
    out: &mut Vec<DbChange>,
) {
    use crate::value::find_kw;
    for k in keys {
        let now = find_kw(new, k).and_then(|i| new.get_index(i));
        match (find_kw(last, k), now) {
            (None, None) => {}
            (None, Some((key, value))) => {
                last.insert(key.clone(), value.clone());
                out.push(DbChange::Added {
                    key: key.clone(),
                    value: value.clone(),
                });
            }
            (Some(at), None) => {
                if let Some((key, old)) = last.shift_remove_index(at) {
                    out.push(DbChange::Removed { key, old });
                }
            }
            (Some(at), Some((key, value))) => {
                if let Some((_, before)) = last.get_index_mut(at) {
                    out.extend(change(key, before, value));
                }
            }
        }
    }
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
    /// The state of every node of the tick's tree (`n_nodes` of them), by
    /// node index: its last status if ticked, Halted if halted after that
    /// (or halted without being ticked), else None.
    pub fn node_states(&self, n_nodes: usize) -> Vec<NodeState> {
        let mut states = vec![NodeState::None; n_nodes];
        for node in &self.halts {
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
        self.events.iter().filter_map(|e| match e {
            Event::Halted { node } => Some(node),
            _ => None,
        })
    }
}

/// Records ticks as they are run.
///
/// Tick through [`Recorder::tick`] (or tick with [`TickOptions::trace`] on
/// and hand each tick to [`Recorder::record`]); tell it about inputs with
/// [`Recorder::input`] and about trims, reloads and notes with
/// [`Recorder::event`] before the tick they precede.
///
/// What a tick costs the record is what it changed: the trace and the
/// tick's visits are built in buffers kept across ticks, a tick that visits
/// the nodes an earlier one did shares its list of visits, and the db is
/// compared with a copy kept up to date by the changes alone (an append or
/// a small edit copies what was added or edited, never the whole value).
///
/// By default every value of the db is compared with the copy at every
/// tick, so that a host may change the db between ticks as it likes. A
/// host that tells the recorder of every change between ticks makes it
/// [`Recorder::comparing_written_keys`]: then only the keys the tick wrote
/// and the keys of the inputs are compared, and a tick costs the record
/// what it wrote, whatever the size of the db.
#[derive(Debug)]
pub struct Recorder {
    run: RunRecord,
    /// The db as the last tick left it (or the starting db), kept equal to
    /// it by applying each tick's changes.
    last_db: Map,
    input: Option<Map>,
    events: Vec<Event>,
    /// The number of the first tick recorded ([`Recorder::numbered_from`]).
    first_tick: u64,
    /// The trace of [`Recorder::tick`]'s ticks, cleared and filled each tick.
    trace: Vec<TraceEvent>,
    /// By node index, the node's place in `visits` this tick (`u32::MAX`
    /// when not visited); put back to `u32::MAX` after each tick.
    slots: Vec<u32>,
    /// This tick's visits, without their ids, built here: a list of
    /// [`Visit`]s is made only when no recent tick's list is alike.
    visits: Vec<Mark>,
    /// This tick's db changes, built here before they are kept.
    changes: Vec<DbChange>,
    /// The lists of visits of the last few ticks, newest last, with the
    /// tree they visited: a tick that visits the same nodes of the same tree
    /// with the same statuses shares one.
    recent: Vec<(usize, Arc<[Visit]>)>,
    /// Whether the host tells every change between ticks
    /// ([`Recorder::comparing_written_keys`]).
    told: bool,
    /// The top-level keys the tick run here wrote, noted by the engine
    /// (kept across ticks).
    writes: Writes,
    /// Whether `writes` holds the notes of the tick about to be recorded.
    noted: bool,
    /// The keys changed since the last tick recorded, as told (inputs), or
    /// that anything may have changed ([`Recorder::db_changed`]).
    between: Writes,
    /// Whether the tick run here ([`Recorder::run_tick`]) left its trace in the
    /// recorder's buffer rather than in the tick.
    buffered: bool,
    /// The last tick's visits in the order they were traced, and the list
    /// kept for them, with its tree.
    last_marks: Vec<Mark>,
    last_visits: Option<(usize, Arc<[Visit]>)>,
    /// Room for the keys a tick's changes are looked for at, with their
    /// text, sorted by it (kept across ticks).
    keys: Vec<(&'static str, Keyword)>,
    /// The keys of `keys` in the order the last tick wrote them.
    last_keys: Vec<Keyword>,
}

/// A visit as a recorder builds it: a [`Visit`] without what the node's
/// index gives (its id and depth).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Mark {
    node: NodeIndex,
    status: Status,
    count: u32,
    halted: bool,
}

/// How many recent lists of visits a recorder looks through for one to
/// share: enough for a tree that cycles through a few paths.
const RECENT_VISITS: usize = 8;

impl Recorder {
    /// A recorder for a run of `tree` that starts from `db`.
    pub fn new(tree: &Tree, db: &Value) -> Recorder {
        Recorder {
            run: RunRecord {
                trees: vec![TreeRecord::of(tree)],
                start_db: db.clone(),
                ticks: Vec::new(),
            },
            last_db: db.as_map().cloned().unwrap_or_default(),
            input: None,
            events: Vec::new(),
            first_tick: 1,
            trace: Vec::new(),
            slots: Vec::new(),
            visits: Vec::new(),
            changes: Vec::new(),
            recent: Vec::new(),
            told: false,
            writes: Writes::default(),
            noted: false,
            between: Writes::default(),
            buffered: false,
            last_marks: Vec::new(),
            last_visits: None,
            keys: Vec::new(),
            last_keys: Vec::new(),
        }
    }

    /// Makes the recorder compare, at each tick, only the top-level keys the
    /// tick wrote (the engine notes them) and the keys of the inputs told
    /// with [`Recorder::input`], instead of every value of the db: a tick
    /// then costs the record what it wrote, not what the db holds, and the
    /// record is the same.
    ///
    /// The host promises that, between ticks, the db changes only as it
    /// tells the recorder: through inputs noted with [`Recorder::input`], or
    /// in any other way (a trim, a reload, an edit, a new db) followed by
    /// [`Recorder::db_changed`]. A tick whose user code was handed the whole
    /// db (`NodeCtx::db_mut`), that carried the db over to another tree, or
    /// that wrote a key that is not a keyword is compared in full, as are
    /// the ticks handed to [`Recorder::record`]. A session
    /// ([`crate::session::Session`]) records this way.
    ///
    /// ```
    /// use aido::record::{Recorder, TimelineOptions, timeline};
    /// use aido::{Registry, Value, compile_str, read_value};
    ///
    /// let tree = compile_str("t.edn", "[:inc! {:key :n}]", &Registry::new()).unwrap();
    /// let mut db = read_value("{:big [1 2 3 4 5 6 7 8 9 10]}").unwrap();
    /// let mut recorder = Recorder::new(&tree, &db).comparing_written_keys();
    /// db = recorder.tick(db, &tree).db;
    /// // A change between ticks: told, so that it is recorded.
    /// db.as_map_mut().unwrap().insert(Value::keyword("big"), Value::Int(0));
    /// recorder.db_changed();
    /// db = recorder.tick(db, &tree).db;
    /// let run = recorder.finish();
    /// assert_eq!(
    ///     timeline(&run, &TimelineOptions::default()),
    ///     "tick 1: success\n  + :n 1\n\n\
    ///      tick 2: success\n  ~ :big [1 2 3 4 5 6 7 8 9 10] -> 0\n  ~ :n 1 -> 2\n"
    /// );
    /// assert_eq!(run.db_after(2), db);
    /// ```
    #[must_use]
    pub fn comparing_written_keys(mut self) -> Recorder {
        self.told = true;
        self
    }

    /// Tells the recorder that the db was changed between ticks other than
    /// by the inputs it was told of: the next tick's db is compared with
    /// the one before in full. Needed only by a recorder
    /// [`comparing_written_keys`](Recorder::comparing_written_keys).
    pub fn db_changed(&mut self) {
        self.between.everything();
    }

    /// Numbers the recorded ticks from `first` instead of 1 (a run resumed
    /// from a save goes on from the tick the save left off at):
    /// [`TickRecord::tick`] and the text timeline show these numbers.
    #[must_use]
    pub fn numbered_from(mut self, first: u64) -> Recorder {
        self.first_tick = first.max(1);
        self
    }

    /// Notes an input merged into the db before the next tick.
    pub fn input(&mut self, input: &Map) {
        if self.told {
            for key in input.keys() {
                self.between.top(key);
            }
        }
        match &mut self.input {
            Some(merged) => merged.extend(input.iter().map(|(k, v)| (k.clone(), v.clone()))),
            None => self.input = Some(input.clone()),
        }
    }

    /// Notes an event that happened before the next tick: a trim, a reload,
    /// a note. (A trim, a reload or a carrying over may have changed the
    /// db: the next tick is compared in full.)
    pub fn event(&mut self, event: Event) {
        if matches!(
            event,
            Event::Trim(_) | Event::Reload(_) | Event::Migrated(_)
        ) {
            self.between.everything();
        }
        self.events.push(event);
    }

    /// Runs one traced tick and records it.
    pub fn tick(&mut self, db: Value, tree: &Tree) -> Tick {
        self.tick_with_options(db, tree, &TickOptions::default())
    }

    /// Runs one tick with `options`, traced whatever they say, and records
    /// it. The trace goes into a buffer the recorder keeps, not into the
    /// returned tick.
    pub fn tick_with_options(&mut self, db: Value, tree: &Tree, options: &TickOptions) -> Tick {
        let tick = self.run_buffered(db, tree, options, true);
        self.record_run(tree, &tick);
        tick
    }

    /// Runs one tick to be recorded next by [`Recorder::record_run`] (the
    /// caller may look at it first): traced into the recorder's buffer, or
    /// into the tick when `options` ask for a trace, with the keys it writes
    /// noted when the recorder compares only those.
    pub(crate) fn run_tick(&mut self, db: Value, tree: &Tree, options: &TickOptions) -> Tick {
        self.run_buffered(db, tree, options, !options.trace)
    }

    fn run_buffered(
        &mut self,
        db: Value,
        tree: &Tree,
        options: &TickOptions,
        buffered: bool,
    ) -> Tick {
        let writes = self.told.then_some(&mut self.writes);
        let trace = buffered.then_some(&mut self.trace);
        let tick = run_tick_noting(db, tree, options, trace, writes);
        self.buffered = buffered;
        self.noted = self.told;
        tick
    }

    /// Records the tick [`Recorder::run_tick`] ran.
    pub(crate) fn record_run(&mut self, tree: &Tree, tick: &Tick) {
        let trace = std::mem::take(&mut self.trace);
        let events = if self.buffered {
            &trace[..]
        } else {
            tick.trace()
        };
        self.record_with(tree, tick, events);
        self.trace = trace;
    }

    /// Records a tick that has been run with [`TickOptions::trace`] on
    /// (without it, the record has no visits or halts).
    pub fn record(&mut self, tree: &Tree, tick: &Tick) {
        self.record_traced(tree, tick, tick.trace());
    }

    /// Records a tick whose trace is `trace` (see
    /// [`run_tick_traced`](crate::tick::run_tick_traced)). Its db is compared
    /// with the one before in full.
    pub fn record_traced(&mut self, tree: &Tree, tick: &Tick, trace: &[TraceEvent]) {
        self.noted = false;
        self.record_with(tree, tick, trace);
    }

    /// Records `tick`, whose trace is `trace`; `self.noted` says whether
    /// the engine noted the keys it wrote into `self.writes`.
    fn record_with(&mut self, tree: &Tree, tick: &Tick, trace: &[TraceEvent]) {
        let tree_index = self.tree_index(tree);
        let shape = &self.run.trees[tree_index];

        // Each node once, with its last status; halts in the order they came.
        if self.slots.len() < shape.nodes.len() {
            self.slots.resize(shape.nodes.len(), u32::MAX);
        }
        let at = &mut self.slots;
        let visits = &mut self.visits;
        visits.clear();
        let mut halts: Vec<NodeIndex> = Vec::new();
        let mut events = std::mem::take(&mut self.events);
        if let Some(m) = tick.migration() {
            events.push(Event::Migrated(m.to_value()));
        }
        for event in trace {
            match *event {
                TraceEvent::Ticked { node, status } => {
                    let Some(slot) = at.get_mut(node.index()) else {
                        continue;
                    };
                    if let Some(visit) = visits.get_mut(*slot as usize) {
                        visit.status = status;
                        visit.count += 1;
                        visit.halted = false;
                    } else {
                        *slot = visits.len() as u32;
                        visits.push(Mark {
                            node,
                            status,
                            count: 1,
                            halted: false,
                        });
                    }
                    if status == Status::Skipped {
                        let id = tree.node_id(node).cloned().unwrap_or_default();
                        events.push(Event::Skipped { node: id });
                    }
                }
                TraceEvent::Halted { node } => {
                    halts.push(node);
                    if let Some(visit) = at
                        .get(node.index())
                        .and_then(|&slot| visits.get_mut(slot as usize))
                    {
                        visit.halted = true;
                    }
                    let id = tree.node_id(node).cloned().unwrap_or_default();
                    events.push(Event::Halted { node: id });
                }
            }
        }
        for visit in visits.iter() {
            if let Some(slot) = at.get_mut(visit.node.index()) {
                *slot = u32::MAX;
            }
        }
        // A tick that visits as the last one did, in the same order, shares
        // its list without sorting again (the usual case of a steady run).
        let visits = match &self.last_visits {
            Some((tree, list)) if *tree == tree_index && self.last_marks == *visits => {
                Arc::clone(list)
            }
            _ => {
                self.last_marks.clone_from(visits);
                visits.sort_unstable_by_key(|v| v.node.index());
                let list = self.shared_visits(tree_index);
                self.last_visits = Some((tree_index, Arc::clone(&list)));
                list
            }
        };
        events.extend(tick.launches().iter().cloned().map(Event::Launched));
        events.extend(tick.cancels().iter().cloned().map(Event::Cancelled));
        events.extend(tick.dropped().iter().cloned().map(Event::Dropped));
        events.extend(tick.warnings().iter().cloned().map(Event::Warning));
        if let Some(error) = &tick.error {
            events.push(Event::Error(error.clone()));
        }

        // Built in a buffer, then moved out in one allocation of its size.
        let noted = std::mem::take(&mut self.noted);
        match (
            noted,
            tick.db.as_map(),
            self.writes.keys(),
            self.between.keys(),
        ) {
            (true, Some(new), Some(written), Some(told)) => {
                // Looked at in the order of their text, so that the changes
                // come out sorted: each key's text is read once.
                // A tick that writes the keys the last one did, in the same
                // order (the usual case), keeps their sorted list.
                let writes = &self.writes;
                let told = told.iter().copied().filter(|k| !writes.contains(*k));
                let last = &mut self.last_keys;
                let mut same = true;
                let mut n = 0;
                for k in written.iter().copied().chain(told) {
                    same &= last.get(n) == Some(&k);
                    if !same {
                        last.truncate(n);
                        last.push(k);
                    }
                    n += 1;
                }
                if !same || n != last.len() {
                    last.truncate(n);
                    self.keys.clear();
                    self.keys.extend(last.iter().map(|&k| (k.as_str(), k)));
                    self.keys.sort_unstable_by_key(|(text, _)| *text);
                }
                diff_keys(
                    &mut self.last_db,
                    new,
                    self.keys.iter().map(|(_, k)| *k),
                    &mut self.changes,
                );
            }
            (_, new, _, _) => diff_into(
                &mut self.last_db,
                new.unwrap_or(&Map::default()),
                &mut self.changes,
            ),
        }
        self.between.clear();
        let changes: Vec<DbChange> = self.changes.drain(..).collect();
        self.run.ticks.push(TickRecord {
            tick: self.first_tick + self.run.ticks.len() as u64,
            tree: tree_index,
            status: tick.status,
            steps: tick.steps,
            input: self.input.take(),
            visits,
            halts,
            events,
            changes,
        });
    }

    /// This tick's visits (of tree `tree`) as a list to keep: a recent
    /// tick's equal list if there is one, else a new one.
    fn shared_visits(&mut self, tree: usize) -> Arc<[Visit]> {
        // Within one tree a node's index gives its id and depth.
        let alike = |a: &Visit, b: &Mark| {
            (a.node, a.status, a.count, a.halted) == (b.node, b.status, b.count, b.halted)
        };
        let marks = &self.visits;
        if let Some((_, list)) = self.recent.iter().rev().find(|(t, list)| {
            *t == tree
                && list.len() == marks.len()
                && list.iter().zip(marks.iter()).all(|(a, b)| alike(a, b))
        }) {
            return Arc::clone(list);
        }
        let nodes = self.run.trees.get(tree).map_or(&[][..], |t| &t.nodes[..]);
        let list: Arc<[Visit]> = marks
            .iter()
            .map(|m| {
                let (id, depth) = nodes
                    .get(m.node.index())
                    .map_or((Value::Nil, 0), |n| (n.id.clone(), n.depth));
                Visit {
                    node: m.node,
                    id,
                    depth,
                    status: m.status,
                    count: m.count,
                    halted: m.halted,
                }
            })
            .collect();
        if self.recent.len() == RECENT_VISITS {
            self.recent.remove(0);
        }
        self.recent.push((tree, Arc::clone(&list)));
        list
    }

    /// The index of `tree`'s shape in the record, adding it if it is new.
    fn tree_index(&mut self, tree: &Tree) -> usize {
        let fingerprint = tree.fingerprint();
        let last = self.run.ticks.last().map_or(0, |t| t.tree);
        if self.run.trees.get(last).map(|t| t.fingerprint) == Some(fingerprint) {
            return last;
        }
        if let Some(i) = self
            .run
            .trees
            .iter()
            .position(|t| t.fingerprint == fingerprint)
        {
            return i;
        }
        self.run.trees.push(TreeRecord::of(tree));
        self.run.trees.len() - 1
    }

    /// The ticks recorded so far.
    pub fn ticks(&self) -> &[TickRecord] {
        &self.run.ticks
    }

    /// The run recorded so far.
    pub fn run(&self) -> &RunRecord {
        &self.run
    }

    /// The record of the run.
    pub fn finish(self) -> RunRecord {
        self.run
    }
}

impl RunRecord {
    /// The db as it stood after tick `n` (0: the starting db), rebuilt from
    /// the starting db and the changes.
    pub fn db_after(&self, n: usize) -> Value {
        let mut db = self.start_db.clone();
        for tick in self.ticks.iter().take(n) {
            apply(&mut db, &tick.changes);
        }
        db
    }
}

/// Applies changes to a db map (added keys go to the end).
pub(crate) fn apply(db: &mut Value, changes: &[DbChange]) {
    if db.as_map().is_none() {
        *db = Value::map();
    }
    if let Some(map) = db.as_map_mut() {
        apply_to_map(map, changes);
    }
}

/// Applies changes keyed by a map's keys.
fn apply_to_map(map: &mut Map, changes: &[DbChange]) {
    for change in changes {
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
