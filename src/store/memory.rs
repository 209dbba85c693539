//! `MemoryStore`: the store seam in memory, for tests and single processes.

use std::collections::BTreeMap;

use super::{
    AgentSummary, Claim, Commit, InboxEntry, InboxItem, Loaded, OutboxEntry, OutboxKind, Store,
    StoreError, StoreErrorKind, check_input, is_due,
};
use crate::value::{Value, decode, encode};

/// Agents, inboxes and outboxes in memory. Dbs are kept encoded (as
/// PostgreSQL keeps them), so a value that does not round-trip would show
/// here too.
#[derive(Debug, Default)]
pub struct MemoryStore {
    agents: BTreeMap<String, Row>,
    /// seq → (agent, item); a `BTreeMap`, so an agent's inbox reads in order.
    inbox: BTreeMap<i64, (String, InboxItem)>,
    /// id → outbox row.
    outbox: BTreeMap<i64, OutRow>,
    next_seq: i64,
    next_token: i64,
}

#[derive(Debug)]
struct Row {
    db: Vec<u8>,
    version: u64,
    tree: i64,
    wake: crate::tick::Wake,
}

#[derive(Debug)]
struct OutRow {
    agent: String,
    entry: OutboxEntry,
    lease_until: Option<i64>,
    token: i64,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> MemoryStore {
        MemoryStore::default()
    }

    fn next(counter: &mut i64) -> i64 {
        *counter += 1;
        *counter
    }
}

impl Store for MemoryStore {
    fn load(&mut self, agent: &str) -> Result<Option<Loaded>, StoreError> {
        let Some(row) = self.agents.get(agent) else {
            return Ok(None);
        };
        Ok(Some(Loaded {
            db: decode(&row.db)?,
            version: row.version,
            tree: row.tree,
            wake: row.wake,
        }))
    }

    fn commit(&mut self, agent: &str, loaded: u64, commit: Commit) -> Result<u64, StoreError> {
        let found = self.agents.get(agent).map_or(0, |row| row.version);
        if found != loaded {
            return Err(StoreError::new(StoreErrorKind::Conflict {
                agent: agent.to_owned(),
                expected: loaded,
                found,
            }));
        }
        let db = encode(&commit.db)?;
        let version = loaded + 1;
        self.agents.insert(
            agent.to_owned(),
            Row {
                db,
                version,
                tree: commit.tree,
                wake: commit.wake,
            },
        );
        for seq in &commit.consumed {
            if self.inbox.get(seq).is_some_and(|(a, _)| a == agent) {
                self.inbox.remove(seq);
            }
        }
        for entry in commit.outbox {
            let exists = self.outbox.values().any(|row| {
                row.agent == agent
                    && row.entry.request == entry.request
                    && row.entry.kind == entry.kind
            });
            if !exists {
                let id = Self::next(&mut self.next_seq);
                self.outbox.insert(
                    id,
                    OutRow {
                        agent: agent.to_owned(),
                        entry,
                        lease_until: None,
                        token: 0,
                    },
                );
            }
        }
        Ok(version)
    }

    fn append(&mut self, agent: &str, item: InboxItem) -> Result<i64, StoreError> {
        match &item {
            InboxItem::Input(input) => check_input(input)?,
            InboxItem::Completion { request, .. } => {
                let waiting = self.inbox.values().any(|(a, i)| {
                    a == agent
                        && matches!(i, InboxItem::Completion { request: r, .. } if r == request)
                });
                if waiting {
                    return Err(StoreError::new(StoreErrorKind::DuplicateCompletion {
                        agent: agent.to_owned(),
                        request: *request,
                    }));
                }
            }
        }
        let seq = Self::next(&mut self.next_seq);
        self.inbox.insert(seq, (agent.to_owned(), item));
        Ok(seq)
    }

    fn inbox(&mut self, agent: &str) -> Result<Vec<InboxEntry>, StoreError> {
        Ok(self
            .inbox
            .iter()
            .filter(|(_, (a, _))| a == agent)
            .map(|(seq, (_, item))| InboxEntry {
                seq: *seq,
                item: item.clone(),
            })
            .collect())
    }

    fn outbox(&mut self, agent: &str) -> Result<Vec<OutboxEntry>, StoreError> {
        Ok(self
            .outbox
            .values()
            .filter(|row| row.agent == agent)
            .map(|row| row.entry.clone())
            .collect())
    }

    fn claim(&mut self, now: i64, lease_ms: i64, max: usize) -> Result<Vec<Claim>, StoreError> {
        let mut claims = Vec::new();
        for (id, row) in self.outbox.iter_mut() {
            if claims.len() == max {
                break;
            }
            if row.lease_until.is_some_and(|until| until > now) {
                continue;
            }
            let token = Self::next(&mut self.next_token);
            let lease_until = now.saturating_add(lease_ms);
            row.lease_until = Some(lease_until);
            row.token = token;
            claims.push(Claim {
                id: *id,
                agent: row.agent.clone(),
                entry: row.entry.clone(),
                token,
                lease_until,
            });
        }
        Ok(claims)
    }

    fn finish(&mut self, claim: &Claim, completion: Option<Value>) -> Result<(), StoreError> {
        let held = self
            .outbox
            .get(&claim.id)
            .is_some_and(|row| row.token == claim.token);
        if !held {
            return Err(StoreError::new(StoreErrorKind::ClaimLost {
                agent: claim.agent.clone(),
                request: claim.entry.request,
            }));
        }
        if let Some(value) = completion {
            let request = claim.entry.request;
            self.append(&claim.agent, InboxItem::Completion { request, value })?;
        }
        self.outbox.remove(&claim.id);
        if claim.entry.kind == OutboxKind::Cancel {
            self.outbox.retain(|_, row| {
                !(row.agent == claim.agent
                    && row.entry.request == claim.entry.request
                    && row.entry.kind == OutboxKind::Launch)
            });
        }
        Ok(())
    }

    fn agents(&mut self) -> Result<Vec<AgentSummary>, StoreError> {
        Ok(self
            .agents
            .iter()
            .map(|(key, row)| AgentSummary {
                key: key.clone(),
                version: row.version,
                tree: row.tree,
                wake: row.wake,
            })
            .collect())
    }

    fn due(&mut self, now: i64, max: usize) -> Result<Vec<String>, StoreError> {
        let mut due: Vec<String> = Vec::new();
        for (agent, _) in self.inbox.values() {
            if due.len() == max {
                return Ok(due);
            }
            if !due.contains(agent) {
                due.push(agent.clone());
            }
        }
        for (key, row) in &self.agents {
            if due.len() == max {
                break;
            }
            if is_due(row.wake, now) && !due.contains(key) {
                due.push(key.clone());
            }
        }
        Ok(due)
    }
}
