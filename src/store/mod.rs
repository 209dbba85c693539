//! The store seam: agents kept outside the process, ticked by any number of
//! workers, one writer per agent at a time.
//!
//! A [`Store`] keeps, per agent (a text key): its db, a version counted up
//! by every commit, the fingerprint of the tree that last ticked it and its
//! next wake ([`Wake`]); an inbox (inputs and deferred-action completions,
//! in order); and an outbox of launch and cancel requests, written in the
//! same commit as the tick that made them and claimed by dispatchers with a
//! lease.
//!
//! What this makes exactly once and what at least once:
//! - a commit succeeds only if the agent's version is still the one loaded
//!   (optimistic concurrency, [`StoreErrorKind::Conflict`] otherwise), and
//!   it removes the inbox entries it consumed and adds the outbox entries
//!   its ticks made in the same step: each input and each completion
//!   changes the db exactly once, and no launch exists without its tick;
//! - a completion is accepted once per (agent, request) while it waits
//!   ([`StoreErrorKind::DuplicateCompletion`]), and is written only by the
//!   dispatcher that still holds the launch's claim, in the same step that
//!   deletes the launch ([`StoreErrorKind::ClaimLost`] otherwise); one that
//!   arrives after its request was answered is dropped by the tick (a
//!   completion is applied only to the request it names);
//! - a handler's external effect is at least once: a dispatcher that dies
//!   after running it loses its lease, and another runs it again. The
//!   handler gets the key `agent/request` to make its effect idempotent.
//!
//! [`MemoryStore`] keeps everything in memory (for tests and single
//! processes); `postgres::PgStore` (feature `postgres`) in PostgreSQL.
//! Time is given by the caller, in milliseconds, so that leases are
//! testable without sleeping.

pub mod dispatch;
mod memory;
#[cfg(feature = "postgres")]
pub mod pg_shard;
#[cfg(feature = "postgres")]
pub mod postgres;
pub mod shard;
pub mod worker;

use std::fmt;

pub use dispatch::{DispatchOptions, DispatchPoint, DispatchStep, Dispatcher};
pub use memory::MemoryStore;
pub use worker::{TurnPoint, TurnReport, Worker, WorkerOptions};

use crate::tick::{Request, Wake};
use crate::value::{BinaryError, Value};

/// An agent as loaded from a store.
#[derive(Debug, Clone, PartialEq)]
pub struct Loaded {
    /// The agent's db.
    pub db: Value,
    /// Its version: 1 after the first commit, one more after each.
    pub version: u64,
    /// The fingerprint of the tree that last ticked it (`Tree::fingerprint`).
    pub tree: i64,
    /// When it next needs a tick, as its last commit said.
    pub wake: Wake,
}

/// What an agent's inbox holds.
#[derive(Debug, Clone, PartialEq)]
pub enum InboxItem {
    /// An input: a map merged into the db before a tick (`{:input "hi"}`).
    Input(Value),
    /// A deferred action's completion: the answer to `request`, as a handler
    /// gave it (`{:status :success, :result ...}`).
    Completion {
        /// The request id it answers.
        request: i64,
        /// The completion itself.
        value: Value,
    },
}

/// One inbox entry: its place in the agent's order and what it holds.
#[derive(Debug, Clone, PartialEq)]
pub struct InboxEntry {
    /// Increasing in the order entries were appended (per store).
    pub seq: i64,
    /// The input or completion.
    pub item: InboxItem,
}

/// Whether an outbox entry launches an action or cancels one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum OutboxKind {
    /// Start the deferred action.
    Launch,
    /// Cancel it (its `:defer` was halted).
    Cancel,
}

impl OutboxKind {
    /// `"launch"` or `"cancel"`.
    pub fn as_str(self) -> &'static str {
        match self {
            OutboxKind::Launch => "launch",
            OutboxKind::Cancel => "cancel",
        }
    }
}

/// A launch or cancel request for a dispatcher.
#[derive(Debug, Clone, PartialEq)]
pub struct OutboxEntry {
    /// The request id (unique within the agent's db).
    pub request: i64,
    /// Launch or cancel.
    pub kind: OutboxKind,
    /// The request as `Request::to_value` gives it.
    pub value: Value,
}

impl OutboxEntry {
    /// The outbox entry of a launch a tick made (`Tick::launches`).
    pub fn launch(request: &Request) -> OutboxEntry {
        OutboxEntry {
            request: request.request,
            kind: OutboxKind::Launch,
            value: request.to_value(),
        }
    }

    /// The outbox entry of a cancel a tick made (`Tick::cancels`).
    pub fn cancel(request: &Request) -> OutboxEntry {
        OutboxEntry {
            request: request.request,
            kind: OutboxKind::Cancel,
            value: request.to_value(),
        }
    }
}

/// What one commit writes.
#[derive(Debug, Clone, PartialEq)]
pub struct Commit {
    /// The new db.
    pub db: Value,
    /// The fingerprint of the tree that ticked it.
    pub tree: i64,
    /// `next_wake` of the new db.
    pub wake: Wake,
    /// The inbox entries (by `seq`) the ticks consumed: removed by the commit.
    pub consumed: Vec<i64>,
    /// The launches and cancels the ticks made: added by the commit, once
    /// per (agent, request, kind) however often the commit is retried.
    pub outbox: Vec<OutboxEntry>,
}

/// An outbox entry claimed by a dispatcher, until `lease_until`.
#[derive(Debug, Clone, PartialEq)]
pub struct Claim {
    /// The outbox row.
    pub id: i64,
    /// The agent it belongs to.
    pub agent: String,
    /// The entry.
    pub entry: OutboxEntry,
    /// Distinguishes this claim from a later claim of the same row.
    pub token: i64,
    /// When the lease ends (milliseconds, the caller's clock).
    pub lease_until: i64,
}

impl Claim {
    /// The idempotency key a handler gets: `agent/request`.
    pub fn idempotency_key(&self) -> String {
        format!("{}/{}", self.agent, self.entry.request)
    }
}

/// One agent in a listing.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentSummary {
    /// The agent's key.
    pub key: String,
    /// Its version.
    pub version: u64,
    /// The fingerprint of the tree that last ticked it.
    pub tree: i64,
    /// Its next wake.
    pub wake: Wake,
}

/// What [`Store::turn`] found and did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Locked {
    /// Another worker holds the agent: nothing was done.
    Busy,
    /// The work had nothing to commit.
    Idle,
    /// The work's commit was written: the agent's new version.
    Committed(u64),
}

/// The work of one turn, given the agent as loaded (`None`: never
/// committed) and its oldest inbox entry (`None`: none waiting); it returns
/// the commit to write, or `None` when there is nothing to do.
pub type TurnWork<'a> =
    Box<dyn FnOnce(Option<Loaded>, Option<InboxEntry>) -> Result<Option<Commit>, StoreError> + 'a>;

/// Whether an agent whose last commit said `wake` needs a tick at `now`
/// (milliseconds): `Now` and `Ticks` always, `At(t)` once `t <= now`.
pub fn is_due(wake: Wake, now: i64) -> bool {
    match wake {
        Wake::Now | Wake::Ticks(_) => true,
        Wake::At(t) => t <= now,
        Wake::OnEvent | Wake::Never => false,
    }
}

/// Where agents live between ticks. See the module documentation for what
/// each operation guarantees; every implementation passes the same contract
/// tests (tests/it/store.rs).
pub trait Store {
    /// The agent's db, version, tree fingerprint and wake; `None` if it was
    /// never committed.
    fn load(&mut self, agent: &str) -> Result<Option<Loaded>, StoreError>;

    /// Writes `commit` if the agent's version is still `loaded` (0 for an
    /// agent never committed), and returns the new version, `loaded + 1`.
    /// Removes the consumed inbox entries and adds the outbox entries in the
    /// same step; on a [`StoreErrorKind::Conflict`] nothing changes.
    fn commit(&mut self, agent: &str, loaded: u64, commit: Commit) -> Result<u64, StoreError>;

    /// Appends to the agent's inbox and returns the entry's `seq`. A
    /// completion for a request that already has one waiting is
    /// [`StoreErrorKind::DuplicateCompletion`].
    fn append(&mut self, agent: &str, item: InboxItem) -> Result<i64, StoreError>;

    /// The agent's inbox, in the order it was appended.
    fn inbox(&mut self, agent: &str) -> Result<Vec<InboxEntry>, StoreError>;

    /// The agent's outbox, claimed or not, in the order it was written.
    fn outbox(&mut self, agent: &str) -> Result<Vec<OutboxEntry>, StoreError>;

    /// Claims up to `max` outbox entries whose lease is free (never claimed,
    /// or ended by `now`), oldest first, each until `now + lease_ms`.
    /// Entries another dispatcher holds are skipped, not waited for.
    fn claim(&mut self, now: i64, lease_ms: i64, max: usize) -> Result<Vec<Claim>, StoreError>;

    /// Finishes a claim: deletes the outbox entry and, given a completion,
    /// appends it to the agent's inbox, in one step; finishing a cancel
    /// also deletes its request's launch, claimed or not, so that no
    /// dispatcher starts it later and one running it finds its claim lost.
    /// If the entry is gone or claimed again since, nothing changes:
    /// [`StoreErrorKind::ClaimLost`].
    fn finish(&mut self, claim: &Claim, completion: Option<Value>) -> Result<(), StoreError>;

    /// Every agent, by key.
    fn agents(&mut self) -> Result<Vec<AgentSummary>, StoreError>;

    /// Up to `max` agents that need a turn at `now` (milliseconds): those
    /// with inbox entries waiting, oldest entry first, then those whose
    /// wake has come ([`is_due`]); each once.
    fn due(&mut self, now: i64, max: usize) -> Result<Vec<String>, StoreError>;

    /// One turn of `agent` in one step: holds the agent against every other
    /// turn and commit, loads it and its oldest inbox entry, hands both to
    /// `work` and writes the commit it returns (the version checked, the
    /// entry consumed, the outbox filled, as [`Store::commit`] does). An
    /// agent another worker holds is [`Locked::Busy`], not waited for.
    ///
    /// This default loads, calls `work` and commits with the version check,
    /// so a turn that raced another worker's fails with
    /// [`StoreErrorKind::Conflict`] and changes nothing; `PgStore` holds the
    /// agent's row locked for the whole step, in one transaction.
    fn turn(&mut self, agent: &str, work: TurnWork<'_>) -> Result<Locked, StoreError> {
        let loaded = self.load(agent)?;
        let version = loaded.as_ref().map_or(0, |l| l.version);
        let entry = self.inbox(agent)?.into_iter().next();
        match work(loaded, entry)? {
            None => Ok(Locked::Idle),
            Some(commit) => self.commit(agent, version, commit).map(Locked::Committed),
        }
    }
}

/// A store operation that failed.
#[derive(Debug, Clone, PartialEq)]
pub struct StoreError {
    /// What went wrong.
    pub kind: StoreErrorKind,
}

/// The kinds of [`StoreError`], each with a stable code (`S0001`...).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum StoreErrorKind {
    /// The agent's version is no longer the one loaded: another worker
    /// committed first. Load again and redo the turn.
    Conflict {
        /// The agent.
        agent: String,
        /// The version the commit expected.
        expected: u64,
        /// The version found (0: no such agent).
        found: u64,
    },
    /// A completion for a request that already has one waiting.
    DuplicateCompletion {
        /// The agent.
        agent: String,
        /// The request.
        request: i64,
    },
    /// The claim's outbox entry is gone or claimed again.
    ClaimLost {
        /// The agent.
        agent: String,
        /// The request.
        request: i64,
    },
    /// A stored db that does not decode.
    Encoding(BinaryError),
    /// The store's URL is not one this build can use (the password never
    /// appears in it).
    BadUrl(String),
    /// The server could not be reached, or the connection broke.
    Connection(String),
    /// The store's schema is of another version than this build's.
    SchemaVersion {
        /// The version found.
        found: i64,
        /// The version this build uses.
        expected: i64,
    },
    /// The store has no schema yet: `aido store init URL` creates it.
    NoSchema,
    /// Any other error the database reported.
    Database(String),
    /// An input that is not a map.
    BadInput(String),
}

impl StoreErrorKind {
    /// The stable code of the kind, `S0001` to `S0010`, never reused.
    pub fn code(&self) -> &'static str {
        match self {
            StoreErrorKind::Conflict { .. } => "S0001",
            StoreErrorKind::DuplicateCompletion { .. } => "S0002",
            StoreErrorKind::ClaimLost { .. } => "S0003",
            StoreErrorKind::Encoding(_) => "S0004",
            StoreErrorKind::BadUrl(_) => "S0005",
            StoreErrorKind::Connection(_) => "S0006",
            StoreErrorKind::SchemaVersion { .. } => "S0007",
            StoreErrorKind::NoSchema => "S0008",
            StoreErrorKind::Database(_) => "S0009",
            StoreErrorKind::BadInput(_) => "S0010",
        }
    }
}

impl StoreError {
    /// An error of `kind`.
    pub fn new(kind: StoreErrorKind) -> StoreError {
        StoreError { kind }
    }

    /// The stable code of the error's kind.
    pub fn code(&self) -> &'static str {
        self.kind.code()
    }
}

impl From<BinaryError> for StoreError {
    fn from(e: BinaryError) -> StoreError {
        StoreError::new(StoreErrorKind::Encoding(e))
    }
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            StoreErrorKind::Conflict {
                agent,
                expected,
                found,
            } => write!(
                f,
                "agent {agent:?} is at version {found}, not {expected}: another worker committed first"
            )?,
            StoreErrorKind::DuplicateCompletion { agent, request } => write!(
                f,
                "agent {agent:?} already has a completion waiting for request {request}"
            )?,
            StoreErrorKind::ClaimLost { agent, request } => write!(
                f,
                "the claim on {agent}/{request} was lost: its lease ended and another dispatcher took it, or it was finished"
            )?,
            StoreErrorKind::Encoding(e) => write!(f, "a stored db does not decode: {e}")?,
            StoreErrorKind::BadUrl(why) => write!(f, "bad store URL: {why}")?,
            StoreErrorKind::Connection(why) => write!(f, "cannot reach the store: {why}")?,
            StoreErrorKind::SchemaVersion { found, expected } => write!(
                f,
                "the store's schema is version {found}, this aido uses version {expected}"
            )?,
            StoreErrorKind::NoSchema => {
                f.write_str("the store has no aido tables: run `aido store init URL` first")?
            }
            StoreErrorKind::Database(why) => write!(f, "the store failed: {why}")?,
            StoreErrorKind::BadInput(why) => write!(f, "bad input: {why}")?,
        }
        write!(f, " [{}]", self.code())
    }
}

impl std::error::Error for StoreError {}

/// An input must be a map (its entries are merged into the db).
pub fn check_input(input: &Value) -> Result<(), StoreError> {
    match input {
        Value::Map(_) => Ok(()),
        other => Err(StoreError::new(StoreErrorKind::BadInput(format!(
            "an input is a map, such as {{:input \"hi\"}}, not {}",
            other.type_with_article()
        )))),
    }
}
