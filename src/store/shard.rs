//! Shard-owned agents: many agents ticked many times a second by the
//! worker that holds their shard's lease, kept in memory between
//! checkpoints, recovered exactly after a crash.
//!
//! Each agent's key hashes into one of a fixed number of logical shards
//! ([`shard_of`]). A worker leases a shard ([`ShardStore::acquire`]: a
//! lease with an epoch, renewed while the worker lives; a lapsed lease is
//! taken by another worker, which bumps the epoch), loads the shard's last
//! checkpoint and replays the journal written since, then ticks: for each
//! tick it first journals the tick's events (inputs and deferred-action
//! completions) and its time (one entry per shard per tick), then applies
//! them and ticks every agent with `batch::tick_all_into`; every K ticks it
//! checkpoints the agents whose encoded db changed. Every write is fenced
//! by the epoch: a worker whose lease was taken writes nothing
//! ([`ShardErrorKind::Fenced`]) and must stop.
//!
//! A tick is a pure function of (db, tree), its time is the journal's
//! `:aido/now` and its randomness the agent's `:aido/seed` (set from the
//! agent's key when the agent is made), so the replay of a journal gives
//! the dbs of a run that never crashed, bit for bit: the only ticks lost
//! in a crash are ticks whose journal entry was never written, and no one
//! saw their result.
//!
//! The logic is here, written against the [`ShardStore`] trait;
//! [`MemoryShards`] keeps shards in memory (tests, one process) and
//! `pg_shard::PgShards` (feature `postgres`) in PostgreSQL. Lease times
//! are the caller's clock, in milliseconds, as the store's claims are.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use crate::handler::Completion;
use crate::session::{merge_input, results_input, seed_db};
use crate::tick::{AgentTick, Status};
use crate::tree::Tree;
use crate::value::{Map, Value, decode, encode, kw};

use super::StoreError;

/// The shard of `agent` among `shards` (at least 1): FNV-1a (64 bits) of
/// the key's UTF-8 bytes, modulo `shards`. The function is fixed: stored
/// shards depend on it, so it never changes between versions.
///
/// ```
/// assert_eq!(aido::store::shard::shard_of("agent-1", 1), 0);
/// assert_eq!(aido::store::shard::shard_of("agent-1", 16), aido::store::shard::shard_of("agent-1", 16));
/// ```
pub fn shard_of(agent: &str, shards: u32) -> u32 {
    let hash = key_hash(agent);
    (hash % u64::from(shards.max(1))) as u32
}

fn key_hash(agent: &str) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in agent.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

/// The `:aido/seed` an agent made by a shard starts with: its key's hash,
/// so that two runs of a shard draw the same numbers.
pub fn agent_seed(agent: &str) -> i64 {
    (key_hash(agent) >> 1) as i64
}

/// A shard's lease as its owner holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lease {
    /// The shard.
    pub shard: u32,
    /// Counted up each time the shard changes hands; every write names it.
    pub epoch: i64,
    /// When the lease lapses (milliseconds, the caller's clock) unless renewed.
    pub until: i64,
}

/// A shard as its new owner loads it: the last checkpoint and the journal
/// written after it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ShardState {
    /// The tick the checkpoint was taken after (0: none yet).
    pub tick: u64,
    /// Every agent's encoded db at the checkpoint, by key.
    pub agents: Vec<(String, Vec<u8>)>,
    /// The journal entries after `tick`, in order: (tick, encoded entry).
    pub journal: Vec<(u64, Vec<u8>)>,
}

/// Where shards are kept. Every write takes the writer's [`Lease`] and
/// changes nothing, returning [`ShardErrorKind::Fenced`], when the shard's
/// epoch is no longer the lease's.
pub trait ShardStore {
    /// Takes `shard` for `owner` if no one holds it or its lease lapsed by
    /// `now` (the epoch counted up), until `now + lease_ms`; `None` while
    /// another owner's lease runs. `shards` is the number of logical shards
    /// the caller hashes keys into: a store made with another number is
    /// [`ShardErrorKind::ShardCount`].
    fn acquire(
        &mut self,
        shard: u32,
        shards: u32,
        owner: &str,
        now: i64,
        lease_ms: i64,
    ) -> Result<Option<Lease>, ShardError>;

    /// Extends the lease to `now + lease_ms`.
    fn renew(&mut self, lease: &mut Lease, now: i64, lease_ms: i64) -> Result<(), ShardError>;

    /// The shard's last checkpoint and the journal after it.
    fn load(&mut self, lease: &Lease) -> Result<ShardState, ShardError>;

    /// Writes the journal entry of tick `tick`.
    fn journal(&mut self, lease: &Lease, tick: u64, entry: &[u8]) -> Result<(), ShardError>;

    /// Writes the changed agents' dbs and marks the checkpoint as taken
    /// after `tick`, dropping the journal up to it, in one step.
    fn checkpoint(
        &mut self,
        lease: &Lease,
        tick: u64,
        changed: &[(String, Vec<u8>)],
    ) -> Result<(), ShardError>;

    /// Gives the lease up (another worker may take the shard at once).
    fn release(&mut self, lease: &Lease) -> Result<(), ShardError>;
}

/// What one tick of a shard receives from outside.
#[derive(Debug, Clone, PartialEq)]
pub enum ShardEvent {
    /// An input map merged into the agent's db before the tick (nil
    /// removes a key). An agent the shard does not have yet is made by its
    /// first input: `{}` with its `:aido/seed` ([`agent_seed`]).
    Input {
        /// The agent's key.
        agent: String,
        /// The input.
        input: Map,
    },
    /// A deferred action's completion, merged under `:aido/results`.
    Completion {
        /// The agent's key.
        agent: String,
        /// The completion.
        completion: Completion,
    },
}

impl ShardEvent {
    /// The agent the event is for.
    pub fn agent(&self) -> &str {
        match self {
            ShardEvent::Input { agent, .. } | ShardEvent::Completion { agent, .. } => agent,
        }
    }

    fn to_value(&self) -> Value {
        match self {
            ShardEvent::Input { agent, input } => Value::Vector(crate::value::thin_vec![
                Value::string(agent),
                Value::keyword("input"),
                Value::Map(Box::new(input.clone())),
            ]),
            ShardEvent::Completion { agent, completion } => Value::Vector(crate::value::thin_vec![
                Value::string(agent),
                Value::keyword("completion"),
                completion.node.clone(),
                Value::Int(completion.request),
                Value::Keyword(completion.action),
                completion.status.to_value(),
                completion.result.clone().unwrap_or(Value::Nil),
            ]),
        }
    }

    fn from_value(value: &Value) -> Option<ShardEvent> {
        let Value::Vector(items) = value else {
            return None;
        };
        let agent = items.first()?.as_str()?.to_owned();
        match (items.get(1)?, items.get(2..)?) {
            (Value::Keyword(k), [Value::Map(input)]) if k.as_str() == "input" => {
                Some(ShardEvent::Input {
                    agent,
                    input: input.as_ref().clone(),
                })
            }
            (
                Value::Keyword(k),
                [
                    node,
                    Value::Int(request),
                    Value::Keyword(action),
                    status,
                    result,
                ],
            ) if k.as_str() == "completion" => Some(ShardEvent::Completion {
                agent,
                completion: Completion {
                    node: node.clone(),
                    request: *request,
                    action: *action,
                    status: Status::from_value(status)?,
                    result: (!result.is_nil()).then(|| result.clone()),
                    failure: None,
                },
            }),
            _ => None,
        }
    }
}

/// How a shard is owned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShardConfig {
    /// The number of logical shards keys hash into ([`shard_of`]).
    pub shards: u32,
    /// Checkpoint after every this many ticks (at least 1).
    pub checkpoint_every: u64,
    /// How long a lease lasts unless renewed, in milliseconds. The owner
    /// renews it when half of it is gone.
    pub lease_ms: i64,
}

/// A shard held by this worker: its agents in memory.
#[derive(Debug)]
pub struct ShardOwner {
    lease: Lease,
    config: ShardConfig,
    tree: Arc<Tree>,
    tick: u64,
    keys: Vec<String>,
    dbs: Vec<Value>,
    index: HashMap<String, usize>,
    /// Each agent's db as last written (`None`: never written).
    saved: Vec<Option<Vec<u8>>>,
    ticks: Vec<AgentTick>,
    replayed: u64,
}

impl ShardOwner {
    /// Takes `shard` for `owner` if it is free (see [`ShardStore::acquire`]),
    /// loads its last checkpoint and replays the journal after it; `None`
    /// while another owner holds it.
    pub fn take(
        store: &mut dyn ShardStore,
        tree: Arc<Tree>,
        shard: u32,
        owner: &str,
        now: i64,
        config: ShardConfig,
    ) -> Result<Option<ShardOwner>, ShardError> {
        let Some(lease) = store.acquire(shard, config.shards, owner, now, config.lease_ms)? else {
            return Ok(None);
        };
        let state = store.load(&lease)?;
        let mut this = ShardOwner {
            lease,
            config,
            tree,
            tick: state.tick,
            keys: Vec::new(),
            dbs: Vec::new(),
            index: HashMap::new(),
            saved: Vec::new(),
            ticks: Vec::new(),
            replayed: 0,
        };
        for (key, bytes) in state.agents {
            let db = decode(&bytes).map_err(StoreError::from)?;
            let i = this.agent_slot(&key, db);
            this.saved[i] = Some(bytes);
        }
        for (tick, bytes) in state.journal {
            if tick != this.tick + 1 {
                return Err(ShardError::journal(
                    shard,
                    tick,
                    format!("the entry after tick {} is missing", this.tick),
                ));
            }
            let (now, events) = decode_entry(&bytes)
                .ok_or_else(|| ShardError::journal(shard, tick, "the entry does not read"))?;
            this.apply(now, &events)?;
            this.replayed += 1;
        }
        Ok(Some(this))
    }

    /// Ticks every agent once at time `now` (seconds, put under each db's
    /// `:aido/now`) after merging `events`. The tick is journaled first, so
    /// that a new owner replays it exactly; then, every `checkpoint_every`
    /// ticks, the changed agents are checkpointed. The lease is renewed
    /// when half of it is gone by `clock` (milliseconds). Returns each
    /// agent's tick, in the order of [`ShardOwner::agents`].
    ///
    /// A [`ShardErrorKind::Fenced`] error means another worker took the
    /// shard: this owner's state is stale and it must be dropped.
    pub fn tick(
        &mut self,
        store: &mut dyn ShardStore,
        clock: i64,
        now: f64,
        events: &[ShardEvent],
    ) -> Result<&[AgentTick], ShardError> {
        if clock >= self.lease.until - self.config.lease_ms / 2 {
            store.renew(&mut self.lease, clock, self.config.lease_ms)?;
        }
        for event in events {
            let expected = shard_of(event.agent(), self.config.shards);
            if expected != self.lease.shard {
                return Err(ShardError::new(ShardErrorKind::WrongShard {
                    agent: event.agent().to_owned(),
                    shard: self.lease.shard,
                    expected,
                }));
            }
        }
        let entry = encode_entry(now, events)?;
        store.journal(&self.lease, self.tick + 1, &entry)?;
        self.apply(now, events)?;
        if self
            .tick
            .is_multiple_of(self.config.checkpoint_every.max(1))
        {
            self.checkpoint(store)?;
        }
        Ok(&self.ticks)
    }

    /// Writes the agents whose db changed since they were last written, and
    /// marks the checkpoint; returns how many agents it wrote.
    pub fn checkpoint(&mut self, store: &mut dyn ShardStore) -> Result<usize, ShardError> {
        let mut changed = Vec::new();
        let mut at = Vec::new();
        for (i, db) in self.dbs.iter().enumerate() {
            let bytes = encode(db).map_err(StoreError::from)?;
            if self.saved[i].as_deref() != Some(bytes.as_slice()) {
                changed.push((self.keys[i].clone(), bytes));
                at.push(i);
            }
        }
        store.checkpoint(&self.lease, self.tick, &changed)?;
        let n = changed.len();
        for (i, (_, bytes)) in at.into_iter().zip(changed) {
            self.saved[i] = Some(bytes);
        }
        Ok(n)
    }

    /// Gives the shard up after a last checkpoint.
    pub fn release(mut self, store: &mut dyn ShardStore) -> Result<(), ShardError> {
        self.checkpoint(store)?;
        store.release(&self.lease)
    }

    /// The agents, by key, in the order they were made.
    pub fn agents(&self) -> impl Iterator<Item = (&str, &Value)> {
        self.keys.iter().map(String::as_str).zip(&self.dbs)
    }

    /// One agent's db.
    pub fn agent(&self, key: &str) -> Option<&Value> {
        self.index.get(key).and_then(|&i| self.dbs.get(i))
    }

    /// The number of the last tick (0 before the first).
    pub fn tick_number(&self) -> u64 {
        self.tick
    }

    /// The lease held.
    pub fn lease(&self) -> Lease {
        self.lease
    }

    /// How many journaled ticks [`ShardOwner::take`] replayed.
    pub fn replayed(&self) -> u64 {
        self.replayed
    }

    /// The slot of agent `key`, made with `db` if it has none.
    fn agent_slot(&mut self, key: &str, db: Value) -> usize {
        if let Some(&i) = self.index.get(key) {
            return i;
        }
        let i = self.keys.len();
        self.keys.push(key.to_owned());
        self.dbs.push(db);
        self.saved.push(None);
        self.ticks.push(AgentTick::default());
        self.index.insert(key.to_owned(), i);
        i
    }

    /// One tick: the events merged, the time set, every agent ticked. The
    /// same code runs live and in a replay, which is what makes the replay
    /// exact.
    fn apply(&mut self, now: f64, events: &[ShardEvent]) -> Result<(), ShardError> {
        for event in events {
            let agent = event.agent();
            let i = match self.index.get(agent) {
                Some(&i) => i,
                None => {
                    let mut db = Value::map();
                    seed_db(&mut db, agent_seed(agent));
                    self.agent_slot(agent, db)
                }
            };
            let db = &mut self.dbs[i];
            match event {
                ShardEvent::Input { input, .. } => merge_input(db, input),
                ShardEvent::Completion { completion, .. } => {
                    let results =
                        Map::from_iter([(completion.node.clone(), completion.to_value())]);
                    let input = results_input(db, results);
                    merge_input(db, &input);
                }
            }
        }
        for db in &mut self.dbs {
            if let Some(map) = db.as_map_mut() {
                map.insert(Value::Keyword(kw::NOW), Value::Float(now));
            }
        }
        tick_agents(&self.tree, &mut self.dbs, &mut self.ticks);
        self.tick += 1;
        Ok(())
    }
}

#[cfg(feature = "rayon")]
fn tick_agents(tree: &Tree, dbs: &mut [Value], ticks: &mut [AgentTick]) {
    crate::batch::tick_all_into(tree, dbs, ticks);
}

#[cfg(not(feature = "rayon"))]
fn tick_agents(tree: &Tree, dbs: &mut [Value], ticks: &mut [AgentTick]) {
    for (db, slot) in dbs.iter_mut().zip(ticks.iter_mut()) {
        *slot = crate::tick::tick_in_place(db, tree);
    }
}

/// A journal entry: `{:now t, :events [...]}` in the binary encoding.
fn encode_entry(now: f64, events: &[ShardEvent]) -> Result<Vec<u8>, ShardError> {
    let entry = Value::map_from([
        (Value::Keyword(kw::NOW), Value::Float(now)),
        (
            Value::keyword("events"),
            Value::Vector(events.iter().map(ShardEvent::to_value).collect()),
        ),
    ]);
    Ok(encode(&entry).map_err(StoreError::from)?)
}

fn decode_entry(bytes: &[u8]) -> Option<(f64, Vec<ShardEvent>)> {
    let entry = decode(bytes).ok()?;
    let now = entry.get(&Value::Keyword(kw::NOW))?.as_f64()?;
    let Some(Value::Vector(events)) = entry.get(&Value::keyword("events")) else {
        return None;
    };
    let events = events
        .iter()
        .map(ShardEvent::from_value)
        .collect::<Option<Vec<_>>>()?;
    Some((now, events))
}

/// Shards kept in memory, shared by every clone (so that two owners in one
/// test contend for one shard).
#[derive(Debug, Clone, Default)]
pub struct MemoryShards {
    inner: Arc<Mutex<HashMap<u32, MemoryShard>>>,
}

#[derive(Debug, Default)]
struct MemoryShard {
    shards: u32,
    epoch: i64,
    until: i64,
    /// The checkpoint tick.
    tick: u64,
    agents: BTreeMap<String, Vec<u8>>,
    journal: Vec<(u64, Vec<u8>)>,
}

impl MemoryShards {
    /// No shards yet.
    pub fn new() -> MemoryShards {
        MemoryShards::default()
    }

    /// The agents of `shard` as its last checkpoint wrote them, by key.
    pub fn checkpointed(&self, shard: u32) -> Vec<(String, Vec<u8>)> {
        let shards = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        shards
            .get(&shard)
            .map(|s| {
                s.agents
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect()
            })
            .unwrap_or_default()
    }

    fn with<R>(
        &self,
        lease: &Lease,
        f: impl FnOnce(&mut MemoryShard) -> R,
    ) -> Result<R, ShardError> {
        let mut shards = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let found = shards.get(&lease.shard).map_or(0, |s| s.epoch);
        match shards.get_mut(&lease.shard) {
            Some(shard) if shard.epoch == lease.epoch => Ok(f(shard)),
            _ => Err(ShardError::fenced(lease, found)),
        }
    }
}

impl ShardStore for MemoryShards {
    fn acquire(
        &mut self,
        shard: u32,
        shards: u32,
        _owner: &str,
        now: i64,
        lease_ms: i64,
    ) -> Result<Option<Lease>, ShardError> {
        let mut all = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let entry = all.entry(shard).or_insert_with(|| MemoryShard {
            shards,
            ..MemoryShard::default()
        });
        if entry.shards != shards {
            return Err(ShardError::new(ShardErrorKind::ShardCount {
                found: entry.shards,
                expected: shards,
            }));
        }
        if entry.epoch > 0 && entry.until > now {
            return Ok(None);
        }
        entry.epoch += 1;
        entry.until = now + lease_ms;
        Ok(Some(Lease {
            shard,
            epoch: entry.epoch,
            until: entry.until,
        }))
    }

    fn renew(&mut self, lease: &mut Lease, now: i64, lease_ms: i64) -> Result<(), ShardError> {
        let until = now + lease_ms;
        self.with(lease, |s| s.until = until)?;
        lease.until = until;
        Ok(())
    }

    fn load(&mut self, lease: &Lease) -> Result<ShardState, ShardError> {
        self.with(lease, |s| ShardState {
            tick: s.tick,
            agents: s
                .agents
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            journal: s.journal.clone(),
        })
    }

    fn journal(&mut self, lease: &Lease, tick: u64, entry: &[u8]) -> Result<(), ShardError> {
        self.with(lease, |s| s.journal.push((tick, entry.to_vec())))
    }

    fn checkpoint(
        &mut self,
        lease: &Lease,
        tick: u64,
        changed: &[(String, Vec<u8>)],
    ) -> Result<(), ShardError> {
        self.with(lease, |s| {
            for (key, bytes) in changed {
                s.agents.insert(key.clone(), bytes.clone());
            }
            s.tick = tick;
            s.journal.retain(|(t, _)| *t > tick);
        })
    }

    fn release(&mut self, lease: &Lease) -> Result<(), ShardError> {
        self.with(lease, |s| s.until = 0)
    }
}

/// A shard operation that failed.
#[derive(Debug, Clone, PartialEq)]
pub struct ShardError {
    /// What went wrong.
    pub kind: ShardErrorKind,
}

/// The kinds of [`ShardError`], each with a stable code: the store's own
/// (`S0001`...) or the shard range `S0101`...
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ShardErrorKind {
    /// A store error (connection, schema, encoding).
    Store(StoreError),
    /// The shard changed hands: this owner's lease is no longer current,
    /// and its write changed nothing.
    Fenced {
        /// The shard.
        shard: u32,
        /// The epoch of the lease written with.
        epoch: i64,
        /// The shard's epoch now.
        found: i64,
    },
    /// The store's shards were made with another number of shards.
    ShardCount {
        /// The number the store has.
        found: u32,
        /// The number asked for.
        expected: u32,
    },
    /// An event for an agent of another shard.
    WrongShard {
        /// The agent.
        agent: String,
        /// The shard it was given to.
        shard: u32,
        /// The shard its key hashes into.
        expected: u32,
    },
    /// A journal that cannot be replayed.
    Journal {
        /// The shard.
        shard: u32,
        /// The tick of the entry.
        tick: u64,
        /// What is wrong with it.
        why: String,
    },
}

impl ShardError {
    /// An error of `kind`.
    pub fn new(kind: ShardErrorKind) -> ShardError {
        ShardError { kind }
    }

    fn fenced(lease: &Lease, found: i64) -> ShardError {
        ShardError::new(ShardErrorKind::Fenced {
            shard: lease.shard,
            epoch: lease.epoch,
            found,
        })
    }

    fn journal(shard: u32, tick: u64, why: impl Into<String>) -> ShardError {
        ShardError::new(ShardErrorKind::Journal {
            shard,
            tick,
            why: why.into(),
        })
    }

    /// The stable code of the error's kind.
    pub fn code(&self) -> &'static str {
        match &self.kind {
            ShardErrorKind::Store(e) => e.code(),
            ShardErrorKind::Fenced { .. } => "S0101",
            ShardErrorKind::ShardCount { .. } => "S0102",
            ShardErrorKind::WrongShard { .. } => "S0103",
            ShardErrorKind::Journal { .. } => "S0104",
        }
    }

    /// Whether another worker took the shard (the owner must stop).
    pub fn is_fenced(&self) -> bool {
        matches!(self.kind, ShardErrorKind::Fenced { .. })
    }
}

impl From<StoreError> for ShardError {
    fn from(e: StoreError) -> ShardError {
        ShardError::new(ShardErrorKind::Store(e))
    }
}

impl fmt::Display for ShardError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            // The store's message carries its own code.
            ShardErrorKind::Store(e) => return write!(f, "{e}"),
            ShardErrorKind::Fenced {
                shard,
                epoch,
                found,
            } => write!(
                f,
                "shard {shard} was taken by another worker (epoch {found}, this worker's lease was epoch {epoch}): nothing was written"
            )?,
            ShardErrorKind::ShardCount { found, expected } => write!(
                f,
                "the store's shards were made as {found} shards, not {expected}: keys would hash elsewhere"
            )?,
            ShardErrorKind::WrongShard {
                agent,
                shard,
                expected,
            } => write!(
                f,
                "agent {agent:?} belongs to shard {expected}, not shard {shard}"
            )?,
            ShardErrorKind::Journal { shard, tick, why } => {
                write!(f, "shard {shard}'s journal at tick {tick}: {why}")?
            }
        }
        write!(f, " [{}]", self.code())
    }
}

impl std::error::Error for ShardError {}
