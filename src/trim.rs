//! Trimming: changing a running tree between ticks, from a queue of tasks.
//!
//! Between two ticks (never during one) [`Trimmer::between_ticks`] takes
//! tasks from the head of its queue and, for each, either
//! - **defers** it (to the back of the queue): the task declines this gap
//!   (`:not-before` not reached, or [`TrimRequest::Skip`]), or its change
//!   would touch a node that is running (a deferred action in flight is a
//!   running node): a replaced node or an undone one with a running node in
//!   its subtree, a composite given a new child or a new order of its
//!   children while it runs, a node removed from a running parent (as
//!   Forester replaces the parent to change its children);
//! - **rejects** it (dropped): its target does not exist, it replaces or
//!   removes the root, the changed tree does not compile (the diagnostics
//!   are the reason), or the task says [`TrimRequest::Reject`];
//! - **applies** it: the changed tree data is compiled into a new [`Tree`]
//!   and the db is carried over to it (see [`crate::migrate::migrate()`]).
//!   What the task hands over with its change comes with it: node types and
//!   functions ([`TrimTask::extend_registry`], compiled against and kept in
//!   [`Gap::registry`]) and changes to the db ([`TrimTask::db_patch`];
//!   a data task's `:db` and `:dissoc`), made after the carrying over.
//!
//! At most one task is applied in a gap; each task is looked at at most once
//! per gap; a deferred or rejected task lets the next one be looked at, and
//! the tasks not reached keep their order.
//!
//! ```
//! use std::sync::Arc;
//! use aido::runner::{PlayMode, Runner};
//! use aido::trim::{DataTask, TrimOutcome};
//! use aido::{Registry, Value, compile_str, read_value};
//!
//! let registry = Registry::new();
//! let tree = compile_str(
//!     "patrol.edn",
//!     "[:sequence {:id :patrol :memory true}
//!        [:inc! {:key :rounds}]
//!        [:wait {:id :walk :ticks 2}]
//!        [:inc! {:id :report :key :reports}]]",
//!     &registry,
//! )
//! .map_err(|d| d.render())?;
//!
//! let mut runner = Runner::load(Arc::new(tree), Value::map());
//! runner.set_registry(registry);
//! // After two ticks, report twice as loud; a change to a running node waits.
//! runner.trim(Box::new(DataTask::from_value(&read_value(
//!     "{:task :louder, :target :report, :not-before 2,
//!       :replace [:sequence [:inc! {:key :reports}] [:inc! {:key :reports}]]}",
//! )?)?));
//! runner.play(PlayMode::StopByExecuteLoopCount, 6)?;
//! let mut outcomes = Vec::new();
//! while runner.update()?.is_some() {
//!     outcomes.extend(runner.trims().iter().map(|t| t.outcome));
//! }
//! // Deferred twice (`:not-before`), applied in the gap after tick 2; the
//! // walk went on where it was.
//! assert_eq!(
//!     outcomes,
//!     [TrimOutcome::Deferred, TrimOutcome::Deferred, TrimOutcome::Applied]
//! );
//! assert_eq!(runner.db().get(&Value::keyword("reports")), Some(&Value::Int(4)));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::VecDeque;
use std::fmt;

use crate::diag::{Code, Diagnostics};
use crate::extend::RegistryError;
use crate::migrate::{Migration, NodeMap, migrate_with};
use crate::registry::Registry;
use crate::tick::catch_quietly;
use crate::tree::{NodeIndex, Tree};
use crate::value::{Keyword, Map, Value, kw};

/// What a task can see of the tree between two ticks.
#[derive(Debug, Clone, Copy)]
pub struct TreeSnapshot<'a> {
    /// How many ticks have run so far (0 before the first).
    pub tick: u64,
    /// The db as the last tick left it.
    pub db: &'a Value,
    /// The tree as it is now.
    pub tree: &'a Tree,
    /// The ids of the nodes that ended the last tick Running.
    pub running: &'a [Value],
}

/// A change to the tree's data, at a node named by its id (explicit, or
/// derived from its position such as `"0.3"`).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum TrimChange {
    /// Put `with` (tree data) in the place of the node `target`.
    Replace {
        /// The node to replace.
        target: Value,
        /// The tree data to put there.
        with: Value,
    },
    /// Put the children of `target` in a new order: `order[i]` is the
    /// current position of the child that comes `i`th.
    Reorder {
        /// The node whose children move.
        target: Value,
        /// A permutation of `0..n`.
        order: Vec<usize>,
    },
    /// Insert `node` (tree data) among the children of `target` at `at`.
    Insert {
        /// The parent.
        target: Value,
        /// The tree data to insert.
        node: Value,
        /// The position, `0..=n`.
        at: usize,
    },
    /// Remove the node `target` and its subtree.
    Remove {
        /// The node to remove.
        target: Value,
    },
    /// Restore what the applied task named `task` changed.
    Undo {
        /// The name of the task to undo.
        task: Value,
    },
}

/// What a task asks for in one gap between ticks.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum TrimRequest {
    /// Not now: the task goes to the back of the queue, with the reason.
    Skip(String),
    /// Never: the task is dropped, with the reason.
    Reject(String),
    /// Try this change.
    Attempt(TrimChange),
}

/// Changes to the db that a task makes with its change: keys set (merged
/// over the db) and keys removed, at the top level. The library's own
/// `:aido/*` keys are not a task's to change.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DbPatch {
    /// Keys set to these values.
    pub set: Map,
    /// Keys removed (after `set` is merged).
    pub remove: Vec<Value>,
}

impl DbPatch {
    /// Whether the patch changes nothing.
    pub fn is_empty(&self) -> bool {
        self.set.is_empty() && self.remove.is_empty()
    }

    /// The first `:aido/*` key the patch names, if any.
    fn reserved_key(&self) -> Option<&Value> {
        self.set.keys().chain(&self.remove).find(|k| {
            k.as_keyword()
                .is_some_and(|k| k.namespace() == Some("aido"))
        })
    }

    /// Makes the changes to `db` (a db that is not a map is left alone).
    fn apply(&self, db: &mut Value) {
        if let Some(map) = db.as_map_mut() {
            for (key, value) in &self.set {
                map.insert(key.clone(), value.clone());
            }
            for key in &self.remove {
                map.shift_remove(key);
            }
        }
    }
}

/// A task in a [`Trimmer`]'s queue, written in Rust.
pub trait TrimTask: Send {
    /// The task's name, as reported and as named by an undo.
    fn name(&self) -> Value;
    /// Looks at the tree between two ticks and says what to do.
    fn process(&mut self, snapshot: &TreeSnapshot<'_>) -> TrimRequest;
    /// Adds the node types and functions the change needs (called on a copy
    /// of the registry when the task attempts a change): the changed tree is
    /// compiled against the copy, which, if the change is applied, becomes
    /// the registry of the trees that follow ([`Gap::registry`]; a
    /// [`crate::runner::Runner`] keeps it). An error rejects the task. By
    /// default nothing is added.
    fn extend_registry(&self, registry: &mut Registry) -> Result<(), RegistryError> {
        let _ = registry;
        Ok(())
    }
    /// The changes to the db made with the change, once the db is carried
    /// over to the new tree (called when the task attempts a change; a patch
    /// that names an `:aido/*` key rejects the task). By default none.
    fn db_patch(&self) -> DbPatch {
        DbPatch::default()
    }
}

/// A bad trim task in data: what kind of mistake, where in the tasks'
/// data, and a message that names the task without printing it whole.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TrimTaskError {
    /// What kind of mistake.
    pub kind: TrimTaskErrorKind,
    /// Where it is in the data read (see [`crate::source::Spans`] for
    /// paths): from [`DataTask::many`], the task's index first, then the
    /// position of the offending key or value in its map (keys and values
    /// interleaved); empty for the whole form.
    pub path: Vec<usize>,
    /// What is wrong.
    pub message: String,
}

/// What is wrong with a trim task in data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TrimTaskErrorKind {
    /// The tasks are not a vector, or a task is not a map.
    NotAMap,
    /// A key a task does not take (the message suggests the nearest one).
    UnknownKey,
    /// A key the task needs is missing (`:target`, `:at`), or it has none
    /// or several of `:replace :reorder :insert :remove :undo`.
    MissingKey,
    /// Keys that do not go together (`:at` without `:insert`, `:undo`
    /// with `:target`).
    Conflict,
    /// A value of the wrong type (`:not-before`, `:reorder`, `:at`).
    BadValue,
}

impl TrimTaskErrorKind {
    /// A stable code: `R0001` to `R0005`, in the order of the variants.
    pub fn code(self) -> &'static str {
        match self {
            TrimTaskErrorKind::NotAMap => "R0001",
            TrimTaskErrorKind::UnknownKey => "R0002",
            TrimTaskErrorKind::MissingKey => "R0003",
            TrimTaskErrorKind::Conflict => "R0004",
            TrimTaskErrorKind::BadValue => "R0005",
        }
    }
}

impl fmt::Display for TrimTaskError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for TrimTaskError {}

/// The keys a trim task takes.
const TASK_KEYS: [&str; 11] = [
    "task",
    "target",
    "not-before",
    "replace",
    "reorder",
    "insert",
    "at",
    "remove",
    "undo",
    "db",
    "dissoc",
];

/// A value as a message shows it: at most 40 characters.
fn shown(value: &Value) -> String {
    value.abbreviated(40).0
}

/// A task written as data, an EDN map:
///
/// ```clojure
/// {:task :split-pick :target :pick :not-before 5
///  :replace [:sequence {:id :complex-pick} [:present? {:key :item}] [:inc! {:key :picked}]]}
/// {:task :reverse :target :queue :reorder [4 3 2 1 0]}
/// {:task :extra :target :queue :insert [:inc! {:key :n}] :at 0}
/// {:task :drop :target "0.3" :remove true}
/// {:task :back :undo :split-pick}
/// {:task :arm :target :guard :insert [:inc! {:key :shots}] :at 0
///  :db {:ammo 10} :dissoc [:unarmed]}
/// ```
///
/// `:not-before N` defers the task until N ticks have run (it can be
/// applied in the gap after tick N at the earliest). `:db {..}` (keys
/// merged into the db) and `:dissoc [..]` (keys removed) change the db with
/// the change (see [`TrimTask::db_patch`]); a data task's node types are
/// those of the registry the tree is compiled against (built-ins, the
/// application's, a node model's).
#[derive(Debug, Clone, PartialEq)]
pub struct DataTask {
    name: Value,
    not_before: u64,
    change: TrimChange,
    patch: DbPatch,
}

impl DataTask {
    /// Reads a task from its map.
    pub fn from_value(task: &Value) -> Result<DataTask, TrimTaskError> {
        let Some(map) = task.as_map() else {
            return Err(TrimTaskError {
                kind: TrimTaskErrorKind::NotAMap,
                path: Vec::new(),
                message: format!("a trim task is a map, found {}", task.type_with_article()),
            });
        };
        // The task as messages name it: by its :task, else as "a trim task".
        let named = match map.get(&Value::keyword("task")) {
            Some(name) => format!("trim task {}", shown(name)),
            None => "a trim task".to_owned(),
        };
        // The position of key `k`'s value (or of the key, for `key_only`)
        // among the map's elements.
        let at = |k: &str, key_only: bool| -> Vec<usize> {
            map.get_index_of(&Value::keyword(k))
                .map(|i| vec![2 * i + usize::from(!key_only)])
                .unwrap_or_default()
        };
        let bad = |kind: TrimTaskErrorKind, path: Vec<usize>, message: String| TrimTaskError {
            kind,
            path,
            message,
        };
        for (i, key) in map.keys().enumerate() {
            let text = key.as_keyword().map(|k| k.as_str());
            if text.is_some_and(|t| TASK_KEYS.contains(&t)) {
                continue;
            }
            let help = text
                .and_then(|t| crate::diag::did_you_mean(t, TASK_KEYS))
                .map(|k| format!(" (did you mean `:{k}`?)"))
                .unwrap_or_default();
            return Err(bad(
                TrimTaskErrorKind::UnknownKey,
                vec![2 * i],
                format!(
                    "unknown key `{}` in {named}{help}; a task takes :{}",
                    shown(key),
                    TASK_KEYS.join(" :")
                ),
            ));
        }
        let get = |k: &str| map.get(&Value::keyword(k));
        let name = get("task").cloned().unwrap_or(Value::Nil);
        let not_before = match get("not-before") {
            None => 0,
            Some(v) => v
                .as_int()
                .and_then(|n| u64::try_from(n).ok())
                .ok_or_else(|| {
                    bad(
                        TrimTaskErrorKind::BadValue,
                        at("not-before", false),
                        format!(":not-before must be a tick number, found `{}`", shown(v)),
                    )
                })?,
        };
        let target = || {
            get("target").cloned().ok_or_else(|| {
                bad(
                    TrimTaskErrorKind::MissingKey,
                    Vec::new(),
                    format!("{named} has no :target"),
                )
            })
        };
        let kinds = ["replace", "reorder", "insert", "remove", "undo"]
            .iter()
            .filter(|k| get(k).is_some())
            .count();
        if kinds != 1 {
            return Err(bad(
                TrimTaskErrorKind::MissingKey,
                Vec::new(),
                format!("{named} needs exactly one of :replace :reorder :insert :remove :undo"),
            ));
        }
        if get("at").is_some() && get("insert").is_none() {
            return Err(bad(
                TrimTaskErrorKind::Conflict,
                at("at", true),
                format!("{named} has :at without :insert"),
            ));
        }
        if get("undo").is_some() && get("target").is_some() {
            return Err(bad(
                TrimTaskErrorKind::Conflict,
                at("target", true),
                format!(
                    "{named} has :undo and :target (an undo restores the place its task changed)"
                ),
            ));
        }
        // A flag is `true` or absent: `{:remove false}` must not remove.
        if let Some(flag) = get("remove")
            && *flag != Value::Bool(true)
        {
            return Err(bad(
                TrimTaskErrorKind::BadValue,
                at("remove", false),
                format!(
                    ":remove takes true (remove the target), found `{}`",
                    shown(flag)
                ),
            ));
        }
        let change = if let Some(with) = get("replace") {
            if with.is_nil() {
                return Err(bad(
                    TrimTaskErrorKind::BadValue,
                    at("replace", false),
                    ":replace takes the tree data to put in the target's place, found nil \
                     (to remove the target, say :remove true)"
                        .to_owned(),
                ));
            }
            TrimChange::Replace {
                target: target()?,
                with: with.clone(),
            }
        } else if let Some(order) = get("reorder") {
            let order = order
                .as_seq()
                .and_then(|o| {
                    o.iter()
                        .map(|i| i.as_int().and_then(|i| usize::try_from(i).ok()))
                        .collect::<Option<Vec<usize>>>()
                })
                .ok_or_else(|| {
                    bad(
                        TrimTaskErrorKind::BadValue,
                        at("reorder", false),
                        format!(
                            ":reorder must be a vector of positions, found `{}`",
                            shown(order)
                        ),
                    )
                })?;
            TrimChange::Reorder {
                target: target()?,
                order,
            }
        } else if let Some(node) = get("insert") {
            let at_value = match get("at") {
                None => {
                    return Err(bad(
                        TrimTaskErrorKind::MissingKey,
                        at("insert", true),
                        format!("{named} has :insert without :at"),
                    ));
                }
                Some(v) => v
                    .as_int()
                    .and_then(|n| usize::try_from(n).ok())
                    .ok_or_else(|| {
                        bad(
                            TrimTaskErrorKind::BadValue,
                            at("at", false),
                            format!(":at must be a position, found `{}`", shown(v)),
                        )
                    })?,
            };
            TrimChange::Insert {
                target: target()?,
                node: node.clone(),
                at: at_value,
            }
        } else if let Some(task) = get("undo") {
            TrimChange::Undo { task: task.clone() }
        } else {
            TrimChange::Remove { target: target()? }
        };
        let mut patch = DbPatch::default();
        if let Some(set) = get("db") {
            let Some(set) = set.as_map() else {
                return Err(bad(
                    TrimTaskErrorKind::BadValue,
                    at("db", false),
                    format!(
                        ":db must be a map of keys to set, found {}",
                        set.type_name()
                    ),
                ));
            };
            patch.set = set.clone();
        }
        if let Some(remove) = get("dissoc") {
            let Some(remove) = remove.as_seq().filter(|_| !matches!(remove, Value::Set(_))) else {
                return Err(bad(
                    TrimTaskErrorKind::BadValue,
                    at("dissoc", false),
                    format!(
                        ":dissoc must be a vector of keys to remove, found {}",
                        remove.type_name()
                    ),
                ));
            };
            patch.remove = remove.to_vec();
        }
        if let Some(key) = patch.reserved_key() {
            return Err(bad(
                TrimTaskErrorKind::BadValue,
                Vec::new(),
                format!("{named} changes {key}: the :aido/* keys are the library's own"),
            ));
        }
        Ok(DataTask {
            name,
            not_before,
            change,
            patch,
        })
    }

    /// Reads a vector of task maps; an error's path starts with the index
    /// of the task it is in.
    pub fn many(tasks: &Value) -> Result<Vec<DataTask>, TrimTaskError> {
        match tasks {
            Value::Vector(items) => items
                .iter()
                .enumerate()
                .map(|(i, task)| {
                    DataTask::from_value(task).map_err(|mut e| {
                        e.path.insert(0, i);
                        e
                    })
                })
                .collect(),
            other => Err(TrimTaskError {
                kind: TrimTaskErrorKind::NotAMap,
                path: Vec::new(),
                message: format!(
                    "trim tasks are a vector of maps, found {}",
                    other.type_with_article()
                ),
            }),
        }
    }
}

impl TrimTask for DataTask {
    fn name(&self) -> Value {
        self.name.clone()
    }

    fn process(&mut self, snapshot: &TreeSnapshot<'_>) -> TrimRequest {
        if snapshot.tick < self.not_before {
            return TrimRequest::Skip(format!(
                "waits until {} ticks have run ({} so far)",
                self.not_before, snapshot.tick
            ));
        }
        TrimRequest::Attempt(self.change.clone())
    }

    fn db_patch(&self) -> DbPatch {
        self.patch.clone()
    }
}

/// What became of a task in one gap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TrimOutcome {
    /// The tree was changed.
    Applied,
    /// Back to the end of the queue.
    Deferred,
    /// Dropped.
    Rejected,
}

impl TrimOutcome {
    /// `"applied"`, `"deferred"` or `"rejected"`.
    pub fn as_str(self) -> &'static str {
        match self {
            TrimOutcome::Applied => "applied",
            TrimOutcome::Deferred => "deferred",
            TrimOutcome::Rejected => "rejected",
        }
    }
}

/// A change that was applied: the node whose data changed, before and after.
#[derive(Debug, Clone, PartialEq)]
pub struct AppliedChange {
    /// The id (in the tree before) of the node whose data was replaced.
    pub node: Value,
    /// Its data before.
    pub before: Value,
    /// Its data after (nil if it was removed).
    pub after: Value,
    /// Ids of the nodes of the new tree that did not exist before.
    pub inserted: Vec<Value>,
    /// Ids of the nodes of the old tree that are gone.
    pub removed: Vec<Value>,
    /// What became of the db's state.
    pub migration: Migration,
    /// The changes to the db made with the change.
    pub db: DbPatch,
}

impl AppliedChange {
    /// `{:node id, :before data, :after data, :inserted [..], :removed [..]}`.
    pub fn to_value(&self) -> Value {
        Value::map_from([
            (Value::keyword("node"), self.node.clone()),
            (Value::keyword("before"), self.before.clone()),
            (Value::keyword("after"), self.after.clone()),
            (
                Value::keyword("inserted"),
                Value::Vector(self.inserted.as_slice().into()),
            ),
            (
                Value::keyword("removed"),
                Value::Vector(self.removed.as_slice().into()),
            ),
        ])
    }
}

/// One task looked at in a gap.
#[derive(Debug, Clone)]
pub struct TrimReport {
    /// The task's name.
    pub task: Value,
    /// What became of it.
    pub outcome: TrimOutcome,
    /// Why it was deferred or rejected.
    pub reason: Option<String>,
    /// The change, if it was applied.
    pub change: Option<AppliedChange>,
    /// The compile errors of a change rejected because it did not compile.
    pub diagnostics: Option<Diagnostics>,
}

impl TrimReport {
    /// `{:task name, :outcome :deferred, :reason "..."}`; an applied task
    /// that changed the db also gets `:db {..}` (the keys set) and
    /// `:dissoc [..]` (the keys removed), and with `change`, `:change` (see
    /// [`AppliedChange::to_value`]).
    pub fn to_value(&self, change: bool) -> Value {
        let mut m = Value::map_from([
            (Value::keyword("task"), self.task.clone()),
            (
                Value::keyword("outcome"),
                Value::keyword(self.outcome.as_str()),
            ),
        ]);
        if let Some(map) = m.as_map_mut() {
            if let Some(reason) = &self.reason {
                map.insert(Value::keyword("reason"), Value::string(reason));
            }
            if let Some(c) = &self.change {
                if !c.db.set.is_empty() {
                    map.insert(Value::keyword("db"), Value::Map(Box::new(c.db.set.clone())));
                }
                if !c.db.remove.is_empty() {
                    map.insert(
                        Value::keyword("dissoc"),
                        Value::Vector(c.db.remove.as_slice().into()),
                    );
                }
            }
            if change && let Some(c) = &self.change {
                map.insert(Value::keyword("change"), c.to_value());
            }
        }
        m
    }
}

/// What one gap between ticks did.
#[derive(Debug, Clone)]
pub struct Gap {
    /// The db, carried over to the new tree if a task was applied.
    pub db: Value,
    /// The new tree, if a task was applied.
    pub tree: Option<Tree>,
    /// The registry it was compiled against, if a task was applied: the one
    /// given, with what the task added ([`TrimTask::extend_registry`]).
    /// Trees that follow are compiled against it.
    pub registry: Option<Registry>,
    /// The tasks looked at, in order.
    pub reports: Vec<TrimReport>,
}

/// An applied change, kept so that it can be undone.
struct Done {
    task: Value,
    /// The node the change produced (for a removal, the parent it was
    /// removed from), by its id in the tree as it is now: every later
    /// change carries it over by the node map, so that an undo finds the
    /// node wherever it moved; `None` once it is gone.
    node: Option<Value>,
    /// That node's type, checked again before an undo.
    node_type: Keyword,
    /// The node's data before the change.
    before: Value,
}

/// A queue of trim tasks for one running tree.
///
/// ```
/// use aido::{Registry, compile_str, read_value, run_tick, trim::{DataTask, Trimmer}};
///
/// let registry = Registry::new();
/// let mut tree = compile_str("t.edn", "[:sequence [:inc! {:key :a}]]", &registry).unwrap();
/// let mut trimmer = Trimmer::new();
/// let task = read_value("{:task :more, :target \"0\", :insert [:inc! {:key :b}], :at 1}").unwrap();
/// trimmer.push(Box::new(DataTask::from_value(&task).unwrap()));
///
/// let mut db = run_tick(read_value("{}").unwrap(), &tree).db;
/// let gap = trimmer.between_ticks(1, db, &tree, &registry);
/// assert_eq!(gap.reports[0].outcome, aido::trim::TrimOutcome::Applied);
/// tree = gap.tree.unwrap();
/// db = run_tick(gap.db, &tree).db;
/// assert_eq!(db.to_string(), "{:a 2, :b 1}");
/// ```
#[derive(Default)]
pub struct Trimmer {
    queue: VecDeque<Box<dyn TrimTask>>,
    done: Vec<Done>,
}

impl fmt::Debug for Trimmer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Trimmer")
            .field("queued", &self.queue.len())
            .field("applied", &self.done.len())
            .finish()
    }
}

impl Trimmer {
    /// An empty queue.
    pub fn new() -> Trimmer {
        Trimmer::default()
    }

    /// Adds a task at the back of the queue.
    pub fn push(&mut self, task: Box<dyn TrimTask>) {
        self.queue.push_back(task);
    }

    /// How many tasks wait.
    pub fn len(&self) -> usize {
        self.queue.len()
    }

    /// Whether no task waits.
    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// Works through the queue between two ticks (`tick` ticks have run):
    /// see the module documentation for the rules.
    pub fn between_ticks(&mut self, tick: u64, db: Value, tree: &Tree, registry: &Registry) -> Gap {
        let mut gap = Gap {
            db,
            tree: None,
            registry: None,
            reports: Vec::new(),
        };
        if self.queue.is_empty() {
            return gap;
        }
        let running: Vec<Value> = gap
            .db
            .get(&Value::Keyword(kw::RUNNING))
            .and_then(Value::as_seq)
            .map(<[Value]>::to_vec)
            .unwrap_or_default();
        let mut deferred = Vec::new();
        for _ in 0..self.queue.len() {
            let Some(mut task) = self.queue.pop_front() else {
                break;
            };
            let snapshot = TreeSnapshot {
                tick,
                db: &gap.db,
                tree,
                running: &running,
            };
            // A task that panics is rejected, as a node type that panics
            // ends its tick in Error: the db and the queue stay.
            let asked = crate::tick::catch_quietly(|| (task.name(), task.process(&snapshot)));
            let (name, attempt) = match asked {
                Ok((name, TrimRequest::Skip(reason))) => {
                    (name, Err(Refusal::new(TrimOutcome::Deferred, reason)))
                }
                Ok((name, TrimRequest::Reject(reason))) => {
                    (name, Err(Refusal::new(TrimOutcome::Rejected, reason)))
                }
                Ok((name, TrimRequest::Attempt(change))) => {
                    let attempt =
                        self.attempt_with(task.as_ref(), &change, tree, &running, registry);
                    (name, attempt)
                }
                Err(panic) => {
                    let message = crate::tick::panic_message(panic.as_ref());
                    let name = crate::tick::catch_quietly(|| task.name()).unwrap_or(Value::Nil);
                    let reason = format!("the task panicked: {message}");
                    (name, Err(Refusal::new(TrimOutcome::Rejected, reason)))
                }
            };
            match attempt {
                Ok((new_tree, done, mut change, registry)) => {
                    let db = std::mem::take(&mut gap.db);
                    let map = NodeMap::between(tree, &new_tree);
                    let (mut db, migration) = migrate_with(db, tree, &new_tree, &map);
                    change.db.apply(&mut db);
                    change.inserted = (0..new_tree.nodes.len())
                        .filter(|n| !map.to_new.contains(&Some(*n as u32)))
                        .map(|n| new_tree.nodes[n].id.clone())
                        .collect();
                    change.removed = (0..tree.nodes.len())
                        .filter(|&o| map.to_new[o].is_none())
                        .map(|o| tree.nodes[o].id.clone())
                        .collect();
                    change.migration = migration;
                    // The nodes earlier changes produced follow their nodes.
                    for earlier in &mut self.done {
                        earlier.node = earlier.node.take().and_then(|id| {
                            let n = map.get(tree.find(&id)?.0)?;
                            new_tree.node_id(NodeIndex(n)).cloned()
                        });
                    }
                    gap.db = db;
                    gap.tree = Some(new_tree);
                    gap.registry = Some(registry);
                    self.done.push(Done {
                        task: name.clone(),
                        ..done
                    });
                    gap.reports.push(TrimReport {
                        task: name,
                        outcome: TrimOutcome::Applied,
                        reason: None,
                        change: Some(change),
                        diagnostics: None,
                    });
                    break;
                }
                Err(Refusal {
                    outcome,
                    reason,
                    diagnostics,
                }) => {
                    gap.reports.push(TrimReport {
                        task: name,
                        outcome,
                        reason: Some(reason),
                        change: None,
                        diagnostics,
                    });
                    if outcome == TrimOutcome::Deferred {
                        deferred.push(task);
                    }
                }
            }
        }
        self.queue.extend(deferred);
        gap
    }

    /// Works out the changed tree with what the task hands over (its node
    /// types and functions, its db patch), or why not.
    fn attempt_with(
        &self,
        task: &dyn TrimTask,
        change: &TrimChange,
        tree: &Tree,
        running: &[Value],
        registry: &Registry,
    ) -> Result<(Tree, Done, AppliedChange, Registry), Refusal> {
        let reject = |reason: String| Refusal::new(TrimOutcome::Rejected, reason);
        let mut extended = registry.clone();
        match catch_quietly(|| task.extend_registry(&mut extended)) {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(reject(format!("its node types and functions: {e}"))),
            Err(_) => return Err(reject("its extend_registry panicked".to_owned())),
        }
        let patch = catch_quietly(|| task.db_patch())
            .map_err(|_| reject("its db_patch panicked".to_owned()))?;
        if let Some(key) = patch.reserved_key() {
            return Err(reject(format!(
                "its db patch changes {key}: the :aido/* keys are the library's own"
            )));
        }
        let (new_tree, done, mut applied) = self.attempt(change, tree, running, &extended)?;
        applied.db = patch;
        Ok((new_tree, done, applied, extended))
    }

    /// Works out the changed tree, or why not.
    fn attempt(
        &self,
        change: &TrimChange,
        tree: &Tree,
        running: &[Value],
        registry: &Registry,
    ) -> Result<(Tree, Done, AppliedChange), Refusal> {
        let reject = |reason: String| Err(Refusal::new(TrimOutcome::Rejected, reason));
        let find = |target: &Value| match tree.find(target) {
            Some(n) => Ok(n),
            None => Err(Refusal::new(
                TrimOutcome::Rejected,
                format!("the tree has no node {target}"),
            )),
        };
        // The node whose data is rewritten, and its new data. A new subtree
        // in it is checked on its own first, before the tree's data is
        // copied.
        let (node, after): (NodeIndex, Value) = match change {
            TrimChange::Replace { target, with } => {
                let n = find(target)?;
                if n == tree.root() {
                    return reject("a trim cannot replace the root".to_owned());
                }
                if with.is_nil() {
                    return reject(
                        "a replacement is tree data, not nil (a removal is TrimChange::Remove)"
                            .to_owned(),
                    );
                }
                self.touches_running(tree, n, running)?;
                check_alone(with, &tree.path(n), registry)?;
                (n, with.clone())
            }
            TrimChange::Remove { target } => {
                let n = find(target)?;
                if n == tree.root() {
                    return reject("a trim cannot remove the root".to_owned());
                }
                // Recorded as a change of the parent, so that an undo puts
                // the node back among its siblings.
                let path = tree.path(n);
                let Some((&at, parent_path)) = path.split_last() else {
                    return reject("a trim cannot remove the root".to_owned());
                };
                let Some(parent) = node_at(tree, parent_path) else {
                    return reject(format!("the tree has no parent of {target}"));
                };
                // Removing a child changes its parent: not while the parent runs.
                self.touches_running(tree, parent, running)?;
                let (head, kids) = split_node(node_form(tree, parent));
                let mut items = head.to_vec();
                items.extend(
                    kids.iter()
                        .enumerate()
                        .filter(|&(i, _)| i != at)
                        .map(|(_, k)| k.clone()),
                );
                (parent, Value::Vector(items.into()))
            }
            TrimChange::Reorder { target, order } => {
                let n = find(target)?;
                let (head, kids) = split_node(node_form(tree, n));
                let mut seen = vec![false; kids.len()];
                let is_permutation = order.len() == kids.len()
                    && order
                        .iter()
                        .all(|&i| i < seen.len() && !std::mem::replace(&mut seen[i], true));
                if !is_permutation {
                    return reject(format!(
                        "{order:?} is not an order of the {} children of {target}",
                        kids.len()
                    ));
                }
                self.touches_running(tree, n, running)?;
                let mut items = head.to_vec();
                items.extend(order.iter().map(|&i| kids[i].clone()));
                (n, Value::Vector(items.into()))
            }
            TrimChange::Insert { target, node, at } => {
                let n = find(target)?;
                let (head, kids) = split_node(node_form(tree, n));
                if *at > kids.len() {
                    return reject(format!(
                        "cannot insert at {at}: {target} has {} children",
                        kids.len()
                    ));
                }
                self.touches_running(tree, n, running)?;
                let mut path = tree.path(n);
                path.push(*at);
                check_alone(node, &path, registry)?;
                let mut items = head.to_vec();
                items.extend(kids[..*at].iter().cloned());
                items.push(node.clone());
                items.extend(kids[*at..].iter().cloned());
                (n, Value::Vector(items.into()))
            }
            TrimChange::Undo { task } => {
                let Some(done) = self.done.iter().rev().find(|d| d.task == *task) else {
                    return reject(format!("no applied task {task} to undo"));
                };
                let found = done.node.as_ref().and_then(|id| tree.find(id));
                let Some(n) = found.filter(|&n| tree.node_type(n) == Some(done.node_type)) else {
                    return reject(format!("the node task {task} changed is gone"));
                };
                self.touches_running(tree, n, running)?;
                check_alone(&done.before, &tree.path(n), registry)?;
                (n, done.before.clone())
            }
        };
        let path = tree.path(node);
        let before = node_form(tree, node).clone();
        let form = replace_at(tree.form(), &path, &after);
        let new_tree = crate::compile::compile(form, registry).map_err(|d| Refusal {
            outcome: TrimOutcome::Rejected,
            reason: d.render().trim_end().to_owned(),
            diagnostics: Some(d),
        })?;
        // A removal is reported as the removed node's, recorded as its parent's.
        let (id, shown_before, shown_after) = match change {
            TrimChange::Remove { target } => {
                let n = find(target)?;
                let removed = node_form(tree, n).clone();
                (
                    tree.node_id(n).cloned().unwrap_or_default(),
                    removed,
                    Value::Nil,
                )
            }
            _ => (
                tree.node_id(node).cloned().unwrap_or_default(),
                before.clone(),
                after,
            ),
        };
        // The node the change produced sits where the changed node sat.
        let produced = node_at(&new_tree, &path);
        let done = Done {
            task: Value::Nil,
            node: produced.and_then(|n| new_tree.node_id(n).cloned()),
            node_type: produced
                .and_then(|n| new_tree.node_type(n))
                .unwrap_or_else(|| Keyword::new("aido/unknown")),
            before,
        };
        Ok((
            new_tree,
            done,
            AppliedChange {
                node: id,
                before: shown_before,
                after: shown_after,
                inserted: Vec::new(),
                removed: Vec::new(),
                migration: Migration::default(),
                db: DbPatch::default(),
            },
        ))
    }

    /// Defers (as an error) a change to the subtree of `n` while a node in
    /// it runs.
    fn touches_running(&self, tree: &Tree, n: NodeIndex, running: &[Value]) -> Result<(), Refusal> {
        let end = tree.nodes[n.index()].subtree_end as usize;
        for id in running {
            if let Some(r) = tree.find(id)
                && (n.index()..end).contains(&r.index())
            {
                return Err(Refusal::new(
                    TrimOutcome::Deferred,
                    format!("node {id} is running"),
                ));
            }
        }
        Ok(())
    }
}

/// Rejects a new subtree (the data of a node placed at `path`) that does
/// not compile on its own for a reason it would have anywhere in a tree
/// (an unknown node type, a bad option, ...), with those problems, their
/// paths made to start at the root. A task whose new node is wrong is thus
/// refused at the cost of that node, not of compiling the whole tree again
/// for every such task. Problems that depend on the rest of the tree
/// (duplicate ids, depth) are left to the whole tree's compile.
fn check_alone(form: &Value, path: &[usize], registry: &Registry) -> Result<(), Refusal> {
    let Err(mut diagnostics) = crate::compile::compile(form, registry) else {
        return Ok(());
    };
    diagnostics
        .items
        .retain(|d| !matches!(d.code, Code::DuplicateId | Code::TooDeep));
    if diagnostics.items.is_empty() {
        return Ok(());
    }
    for d in &mut diagnostics.items {
        d.path.splice(0..0, path.iter().copied());
    }
    Err(Refusal {
        outcome: TrimOutcome::Rejected,
        reason: diagnostics.render().trim_end().to_owned(),
        diagnostics: Some(diagnostics),
    })
}

/// Why a task was deferred or rejected.
struct Refusal {
    outcome: TrimOutcome,
    reason: String,
    diagnostics: Option<Diagnostics>,
}

impl Refusal {
    fn new(outcome: TrimOutcome, reason: String) -> Refusal {
        Refusal {
            outcome,
            reason,
            diagnostics: None,
        }
    }
}

/// A node's data in the tree's data.
fn node_form(tree: &Tree, node: NodeIndex) -> &Value {
    let mut here = tree.form();
    for i in tree.path(node) {
        let (_, kids) = split_node(here);
        match kids.get(i) {
            Some(k) => here = k,
            None => break,
        }
    }
    here
}

/// The node at `path` (child positions from the root).
fn node_at(tree: &Tree, path: &[usize]) -> Option<NodeIndex> {
    let mut here = tree.root();
    for &i in path {
        here = tree.children(here).nth(i)?;
    }
    Some(here)
}

/// A node's data split into its head (type and options) and its children.
fn split_node(form: &Value) -> (&[Value], &[Value]) {
    match form {
        Value::Vector(items) => {
            let head = if matches!(items.get(1), Some(Value::Map(_))) {
                2
            } else {
                1
            };
            items.split_at(head.min(items.len()))
        }
        _ => (&[], &[]),
    }
}

/// `form` with the node at `path` replaced by `with` (removed if nil).
fn replace_at(form: &Value, path: &[usize], with: &Value) -> Value {
    let Some((&first, rest)) = path.split_first() else {
        return with.clone();
    };
    let (head, kids) = split_node(form);
    let mut items = head.to_vec();
    for (i, kid) in kids.iter().enumerate() {
        if i != first {
            items.push(kid.clone());
        } else if !rest.is_empty() {
            items.push(replace_at(kid, rest, with));
        } else if !with.is_nil() {
            items.push(with.clone());
        }
    }
    Value::Vector(items.into())
}
