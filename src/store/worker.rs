//! The per-event worker: a stored agent's turn as an adapter over the
//! session loop ([`Session::turn_with`]), inside one [`Store::turn`].
//!
//! One turn is one event: the agent held against every other writer, its
//! db and its oldest inbox entry loaded; the entry merged (an input into the
//! db, a completion under `:aido/results`); ticks until the tree is not
//! Running, or it waits only for an event or a time, or the turn's tick
//! limit; the db written with version + 1 and its next wake
//! ([`next_wake`]), the entry deleted, the turn's launches and cancels put
//! in the outbox; all of it committed together. An agent with no entry
//! waiting takes a turn when its wake has come ([`is_due`]): that is the
//! scheduler ([`Worker::run_due`]).
//!
//! A tree edited since the agent's last turn is carried over on the turn's
//! first tick (the tick migrates a db of another fingerprint by node id),
//! and the commit records the new fingerprint.

use std::sync::Arc;

use super::{Commit, InboxItem, Locked, OutboxEntry, Store, StoreError, TurnWork, is_due};
use crate::session::{Session, TurnOptions};
use crate::tick::{Request, Status, TickError, Wake, next_wake};
use crate::tree::Tree;
use crate::value::{Map, Value, kw};

/// The points of a turn a probe is told of ([`Worker::set_probe`]), in
/// the order a turn reaches them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TurnPoint {
    /// The agent is held and loaded, its entry read, and it has a turn to
    /// take; nothing ticked yet.
    BeforeTick,
    /// The ticks are done and the commit is made, not yet written.
    AfterTick,
    /// The commit is written and the transaction is over.
    AfterCommit,
}

impl TurnPoint {
    /// `"before-tick"`, `"after-tick"` or `"after-commit"`.
    pub fn as_str(self) -> &'static str {
        match self {
            TurnPoint::BeforeTick => "before-tick",
            TurnPoint::AfterTick => "after-tick",
            TurnPoint::AfterCommit => "after-commit",
        }
    }

    /// The point named by [`TurnPoint::as_str`].
    pub fn from_name(name: &str) -> Option<TurnPoint> {
        [
            TurnPoint::BeforeTick,
            TurnPoint::AfterTick,
            TurnPoint::AfterCommit,
        ]
        .into_iter()
        .find(|p| p.as_str() == name)
    }
}

/// How a worker takes its turns.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct WorkerOptions {
    /// The session's turn: the reply key and the tick limit (default 100);
    /// `end_at_rest` is always set, since deferred actions run in a
    /// dispatcher and not in the turn.
    pub turn: TurnOptions,
    /// Whether the worker's clock is the agents' clock (default no): before
    /// each turn `:aido/now` is moved on to the turn's `now`, in seconds
    /// (never back), so that timed nodes run and an agent whose wake is a
    /// time (`Wake::At`) is ticked when it comes. Without it, `:aido/now`
    /// is the hosts' (sent as input), and a time wakes no agent.
    pub clock: bool,
}

impl Default for WorkerOptions {
    fn default() -> WorkerOptions {
        WorkerOptions {
            turn: TurnOptions {
                end_at_rest: true,
                ..TurnOptions::default()
            },
            clock: false,
        }
    }
}

/// What one committed turn did.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct TurnReport {
    /// The agent.
    pub agent: String,
    /// Its version after the turn.
    pub version: u64,
    /// The inbox entry the turn consumed (`None`: a turn of the scheduler).
    pub event: Option<InboxItem>,
    /// The ticks the turn took.
    pub ticks: u64,
    /// The last tick's status.
    pub status: Status,
    /// The last tick's error, if it ended in one (the db as it stood is
    /// committed with it, as every host keeps it).
    pub error: Option<Box<TickError>>,
    /// The values the turn appended to the reply key.
    pub replies: Vec<Value>,
    /// The launches and cancels written to the outbox.
    pub outbox: Vec<OutboxEntry>,
    /// The fingerprint of the tree the agent was last ticked with, when it
    /// was another than the worker's: its db was carried over.
    pub migrated_from: Option<i64>,
}

/// Something told of each point of a turn (a test's fault injection, a
/// host's trace).
pub type Probe = Box<dyn FnMut(TurnPoint, &str) + Send>;

/// Takes the turns of stored agents with one tree. See [the
/// module](crate::store::worker).
///
/// ```
/// use std::sync::Arc;
/// use aido::store::{InboxItem, MemoryStore, Store, Worker};
/// use aido::{Registry, Value, compile_str, read_value};
///
/// let tree = compile_str("t.edn", "[:inc! {:key :n}]", &Registry::new()).unwrap();
/// let mut store = MemoryStore::new();
/// store.append("ann", InboxItem::Input(read_value("{:input \"hi\"}").unwrap())).unwrap();
/// let mut worker = Worker::new(Arc::new(tree));
/// let turns = worker.run_due(&mut store, 0, 10).unwrap();
/// assert_eq!(turns[0].version, 1);
/// assert_eq!(store.load("ann").unwrap().unwrap().db.get(&Value::keyword("n")), Some(&Value::Int(1)));
/// ```
pub struct Worker {
    tree: Arc<Tree>,
    options: WorkerOptions,
    probe: Option<Probe>,
    /// Earlier trees, by fingerprint: a db last ticked with one of them is
    /// carried over exactly ([`crate::migrate::migrate`]).
    previous: Vec<Arc<Tree>>,
}

impl std::fmt::Debug for Worker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Worker")
            .field("tree", &self.tree.fingerprint())
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl Worker {
    /// A worker of `tree`, with the default options.
    pub fn new(tree: Arc<Tree>) -> Worker {
        Worker::with_options(tree, WorkerOptions::default())
    }

    /// A worker of `tree` with `options`.
    pub fn with_options(tree: Arc<Tree>, mut options: WorkerOptions) -> Worker {
        options.turn.end_at_rest = true;
        Worker {
            tree,
            options,
            probe: None,
            previous: Vec::new(),
        }
    }

    /// Remembers an earlier version of the tree. A db last ticked with it
    /// is carried over to this worker's tree knowing both
    /// ([`crate::migrate::migrate`]: a memory composite resumes where it
    /// was, a removed running `:defer` is cancelled); a db of a tree the
    /// worker does not know is carried over by node id on its first tick,
    /// where memory that names children by position is dropped.
    pub fn add_previous(&mut self, tree: Arc<Tree>) {
        if tree.fingerprint() != self.tree.fingerprint() {
            self.previous.push(tree);
        }
    }

    /// Tells `probe` of each point of every turn, with the agent's key.
    pub fn set_probe(&mut self, probe: Probe) {
        self.probe = Some(probe);
    }

    /// The tree.
    pub fn tree(&self) -> &Arc<Tree> {
        &self.tree
    }

    /// One turn of `agent` at `now` (milliseconds, the caller's clock, to
    /// which `Wake::At` is compared): its oldest inbox entry, or, with none,
    /// a tick if its wake has come. `Ok(None)`: nothing to do, or another
    /// worker holds the agent. On an error nothing was written.
    pub fn turn(
        &mut self,
        store: &mut dyn Store,
        agent: &str,
        now: i64,
    ) -> Result<Option<TurnReport>, StoreError> {
        let tree = Arc::clone(&self.tree);
        let options = &self.options;
        let previous = &self.previous;
        let mut probe = self.probe.as_mut();
        let mut report = None;
        let work: TurnWork<'_> = Box::new(|loaded, entry| {
            let due = loaded.as_ref().is_some_and(|l| match l.wake {
                Wake::At(_) if !options.clock => false,
                wake => is_due(wake, now),
            });
            if entry.is_none() && !due {
                return Ok(None);
            }
            if let Some(probe) = probe.as_mut() {
                probe(TurnPoint::BeforeTick, agent);
            }
            let migrated_from = loaded
                .as_ref()
                .map(|l| l.tree)
                .filter(|f| *f != tree.fingerprint());
            let db = loaded.map_or_else(Value::map, |l| l.db);
            let old = migrated_from.and_then(|f| previous.iter().find(|t| t.fingerprint() == f));
            let mut cancels = Vec::new();
            let mut session = match old {
                Some(old) => {
                    let mut session = Session::new(Arc::clone(old), db);
                    cancels = session.reload(Arc::clone(&tree), None).cancels;
                    session
                }
                None => Session::new(Arc::clone(&tree), db),
            };
            if options.clock {
                set_clock(&mut session, now);
            }
            let input = match entry.as_ref().map(|e| &e.item) {
                Some(InboxItem::Input(Value::Map(input))) => Some(input.as_ref()),
                Some(InboxItem::Completion { value, .. }) => {
                    session.complete(completion_results(value));
                    None
                }
                // `append` takes only maps; anything else merges nothing.
                Some(InboxItem::Input(_)) | None => None,
            };
            let turn = session.turn_with(input, &options.turn);
            let (_, db) = session.finish();
            cancels.extend(turn.cancels.iter().cloned());
            let outbox = outbox_of(&turn.launches, &cancels);
            let commit = Commit {
                wake: next_wake(&db, &tree),
                db,
                tree: tree.fingerprint(),
                consumed: entry.iter().map(|e| e.seq).collect(),
                outbox: outbox.clone(),
            };
            if let Some(probe) = probe.as_mut() {
                probe(TurnPoint::AfterTick, agent);
            }
            report = Some(TurnReport {
                agent: agent.to_owned(),
                version: 0,
                event: entry.map(|e| e.item),
                ticks: turn.ticks,
                status: turn.status,
                error: turn.last.error,
                replies: turn.replies,
                outbox,
                migrated_from,
            });
            Ok(Some(commit))
        });
        let locked = store.turn(agent, work)?;
        let Locked::Committed(version) = locked else {
            return Ok(None);
        };
        if let Some(probe) = self.probe.as_mut() {
            probe(TurnPoint::AfterCommit, agent);
        }
        Ok(report.map(|mut r| {
            r.version = version;
            r
        }))
    }

    /// The scheduler: a turn for each agent that needs one at `now` (up to
    /// `max` of them: [`Store::due`]), in the order the store gives them.
    /// Agents another worker holds are left to it.
    pub fn run_due(
        &mut self,
        store: &mut dyn Store,
        now: i64,
        max: usize,
    ) -> Result<Vec<TurnReport>, StoreError> {
        let mut reports = Vec::new();
        for agent in store.due(now, max)? {
            if let Some(report) = self.turn(store, &agent, now)? {
                reports.push(report);
            }
        }
        Ok(reports)
    }
}

/// Moves the session's `:aido/now` on to `now` milliseconds, in seconds,
/// never back; a db whose time is not a number is left to the tick to
/// report.
fn set_clock(session: &mut Session, now: i64) {
    let seconds = now as f64 / 1000.0;
    let current = match session.db().get(&Value::Keyword(kw::NOW)) {
        None => {
            // A db without a clock starts at 0.0, then moves on.
            let _ = session.advance_time(0.0);
            0.0
        }
        Some(t) => match t.as_f64() {
            Some(t) => t,
            None => return,
        },
    };
    if seconds > current {
        let _ = session.advance_time(seconds - current);
    }
}

/// A stored completion as the session merges it: under its node's id (its
/// `:node`, which the dispatcher writes), without the `:node` key. One
/// without a node goes under nil, where the tick drops it and says so.
fn completion_results(value: &Value) -> Map {
    let node_key = Value::keyword("node");
    let node = value.get(&node_key).cloned().unwrap_or(Value::Nil);
    let mut completion = value.clone();
    if let Some(map) = completion.as_map_mut() {
        map.shift_remove(&node_key);
    }
    let mut results = Map::default();
    results.insert(node, completion);
    results
}

/// The outbox entries of a turn: cancels first, then launches, as the
/// session hands them to in-process handlers; a request launched and
/// cancelled within the turn is left out (nothing ever ran it).
fn outbox_of(launches: &[Request], cancels: &[Request]) -> Vec<OutboxEntry> {
    let launched = |r: &Request| launches.iter().any(|l| l.request == r.request);
    let cancelled = |r: &Request| cancels.iter().any(|c| c.request == r.request);
    cancels
        .iter()
        .filter(|r| !launched(r))
        .map(OutboxEntry::cancel)
        .chain(
            launches
                .iter()
                .filter(|r| !cancelled(r))
                .map(OutboxEntry::launch),
        )
        .collect()
}
