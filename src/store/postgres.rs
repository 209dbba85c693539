//! `PgStore`: the store seam in PostgreSQL (feature `postgres`).
//!
//! The tables live in the schema `aido`, made by [`init`] (`aido store init
//! URL`), whose version is in `aido.meta`:
//!
//! - `aido.agents (key, version, tree, db, wake_kind, wake_arg)`: one row an
//!   agent, its db in the binary encoding (`value::encode`);
//! - `aido.inbox (seq, agent, request, item)`: inputs (`request` null) and
//!   completions, unique per (agent, request) while they wait;
//! - `aido.outbox (id, agent, request, kind, value, lease_until, token)`:
//!   launches and cancels, unique per (agent, request, kind), claimed with a
//!   lease by `FOR UPDATE SKIP LOCKED`.
//!
//! A commit locks the agent's row (`FOR UPDATE`), checks its version,
//! writes the db, deletes the consumed inbox rows and inserts the outbox
//! rows in one transaction. Finishing a claim deletes the outbox row only if
//! the claim's token still holds it, and inserts the completion in the same
//! transaction. Connections are plain (no TLS), and give up after
//! [`CONNECT_TIMEOUT_SECS`] unless the URL says otherwise; errors never show
//! the URL's password.

use std::str::FromStr;

use postgres::error::SqlState;
use postgres::{Client, Config, NoTls, Row};

use super::{
    AgentSummary, Claim, Commit, InboxEntry, InboxItem, Loaded, Locked, OutboxEntry, OutboxKind,
    Store, StoreError, StoreErrorKind, TurnWork, check_input,
};
use crate::tick::Wake;
use crate::value::{Value, decode, encode};

/// The version of the tables this build makes and uses.
pub const SCHEMA_VERSION: i64 = 1;

const MIGRATION_1: &str = "
CREATE SCHEMA aido;
CREATE TABLE aido.meta (schema_version bigint NOT NULL);
CREATE TABLE aido.agents (
    key text PRIMARY KEY,
    version bigint NOT NULL,
    tree bigint NOT NULL,
    db bytea NOT NULL,
    wake_kind smallint NOT NULL,
    wake_arg bigint NOT NULL
);
CREATE INDEX agents_wake ON aido.agents (wake_kind, wake_arg);
CREATE TABLE aido.inbox (
    seq bigserial PRIMARY KEY,
    agent text NOT NULL,
    request bigint,
    item bytea NOT NULL
);
CREATE INDEX inbox_agent ON aido.inbox (agent, seq);
CREATE UNIQUE INDEX inbox_completion ON aido.inbox (agent, request) WHERE request IS NOT NULL;
CREATE TABLE aido.outbox (
    id bigserial PRIMARY KEY,
    agent text NOT NULL,
    request bigint NOT NULL,
    kind text NOT NULL,
    value bytea NOT NULL,
    lease_until bigint,
    token bigint NOT NULL DEFAULT 0,
    UNIQUE (agent, request, kind)
);
CREATE SEQUENCE aido.claim_tokens;
";

/// How long connecting may take when the URL sets no `connect_timeout`.
pub const CONNECT_TIMEOUT_SECS: u64 = 10;

/// What [`init`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Init {
    /// It made the tables.
    Created,
    /// They were there already, at this build's version.
    AlreadyCurrent,
}

/// Agents kept in PostgreSQL: one connection, used by one thread.
pub struct PgStore {
    client: Client,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PgStore")
    }
}

/// Parses `url` and connects, with errors that never show its password.
pub(super) fn connect(url: &str) -> Result<Client, StoreError> {
    let mut config = Config::from_str(url)
        .map_err(|e| StoreError::new(StoreErrorKind::BadUrl(scrub(&e.to_string(), url, None))))?;
    let password = config.get_password().map(<[u8]>::to_vec);
    // A host that drops packets would otherwise hang the command.
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(std::time::Duration::from_secs(CONNECT_TIMEOUT_SECS));
    }
    config.connect(NoTls).map_err(|e| {
        StoreError::new(StoreErrorKind::Connection(scrub(
            &e.to_string(),
            url,
            password.as_deref(),
        )))
    })
}

/// `message` with the URL and the password, wherever they appear, replaced.
fn scrub(message: &str, url: &str, password: Option<&[u8]>) -> String {
    let mut text = message.replace(url, "<the store URL>");
    if let Some(password) = password.and_then(|p| std::str::from_utf8(p).ok())
        && !password.is_empty()
    {
        text = text.replace(password, "***");
    }
    text
}

pub(super) fn db_error(e: postgres::Error) -> StoreError {
    if let Some(db) = e.as_db_error() {
        if db.code() == &SqlState::UNDEFINED_TABLE || db.code() == &SqlState::INVALID_SCHEMA_NAME {
            return StoreError::new(StoreErrorKind::NoSchema);
        }
        if [
            SqlState::ADMIN_SHUTDOWN,
            SqlState::CRASH_SHUTDOWN,
            SqlState::CANNOT_CONNECT_NOW,
        ]
        .contains(db.code())
        {
            // The server is going away or not up yet: a worker reconnects.
            return StoreError::new(StoreErrorKind::Connection(db.message().to_owned()));
        }
        return StoreError::new(StoreErrorKind::Database(db.message().to_owned()));
    }
    StoreError::new(StoreErrorKind::Connection(e.to_string()))
}

fn is_unique_violation(e: &postgres::Error) -> bool {
    e.code() == Some(&SqlState::UNIQUE_VIOLATION)
}

/// Creates the tables at `url` (the migration to [`SCHEMA_VERSION`]), or
/// checks that they are there at that version. A schema of another version
/// is [`StoreErrorKind::SchemaVersion`]; nothing is changed then.
pub fn init(url: &str) -> Result<Init, StoreError> {
    let mut client = connect(url)?;
    let mut tx = client.transaction().map_err(db_error)?;
    // Two `init`s at once: the second waits, then finds the tables.
    tx.execute("SELECT pg_advisory_xact_lock(7272024)", &[])
        .map_err(db_error)?;
    match schema_version(&mut tx)? {
        Some(found) if found == SCHEMA_VERSION => Ok(Init::AlreadyCurrent),
        Some(found) => Err(StoreError::new(StoreErrorKind::SchemaVersion {
            found,
            expected: SCHEMA_VERSION,
        })),
        None => {
            tx.batch_execute(MIGRATION_1).map_err(db_error)?;
            tx.execute(
                "INSERT INTO aido.meta (schema_version) VALUES ($1)",
                &[&SCHEMA_VERSION],
            )
            .map_err(db_error)?;
            tx.commit().map_err(db_error)?;
            Ok(Init::Created)
        }
    }
}

/// The version in `aido.meta`, or `None` without the tables.
fn schema_version(client: &mut impl postgres::GenericClient) -> Result<Option<i64>, StoreError> {
    let exists: Option<String> = client
        .query_one("SELECT to_regclass('aido.meta')::text", &[])
        .and_then(|row| row.try_get(0))
        .map_err(db_error)?;
    if exists.is_none() {
        return Ok(None);
    }
    let row = client
        .query_opt("SELECT max(schema_version) FROM aido.meta", &[])
        .map_err(db_error)?;
    Ok(row.and_then(|row| row.try_get::<_, Option<i64>>(0).ok().flatten()))
}

impl PgStore {
    /// Connects to `url` and checks the schema's version.
    pub fn open(url: &str) -> Result<PgStore, StoreError> {
        let mut client = connect(url)?;
        match schema_version(&mut client)? {
            None => Err(StoreError::new(StoreErrorKind::NoSchema)),
            Some(found) if found != SCHEMA_VERSION => {
                Err(StoreError::new(StoreErrorKind::SchemaVersion {
                    found,
                    expected: SCHEMA_VERSION,
                }))
            }
            Some(_) => Ok(PgStore { client }),
        }
    }

    /// Whether the connection is gone (the server stopped, the network
    /// failed): open a new one.
    pub fn is_closed(&self) -> bool {
        self.client.is_closed()
    }
}

fn get<'a, T: postgres::types::FromSql<'a>>(row: &'a Row, i: usize) -> Result<T, StoreError> {
    row.try_get(i)
        .map_err(|e| StoreError::new(StoreErrorKind::Database(e.to_string())))
}

fn version_of(v: i64) -> u64 {
    u64::try_from(v).unwrap_or(0)
}

fn kind_from(text: &str) -> OutboxKind {
    if text == "cancel" {
        OutboxKind::Cancel
    } else {
        OutboxKind::Launch
    }
}

/// A wake as stored: a kind code and its argument (ticks or time).
fn wake_parts(wake: Wake) -> (i16, i64) {
    match wake {
        Wake::Now => (0, 0),
        Wake::Ticks(n) => (1, i64::try_from(n).unwrap_or(i64::MAX)),
        Wake::At(t) => (2, t),
        Wake::OnEvent => (3, 0),
        Wake::Never => (4, 0),
    }
}

/// The wake from its stored parts; an unknown kind reads as `Now`, the safe
/// answer (a tick too many changes nothing that a due tick would not).
fn wake_from_parts(kind: i16, arg: i64) -> Wake {
    match kind {
        1 => Wake::Ticks(u64::try_from(arg).unwrap_or(0)),
        2 => Wake::At(arg),
        3 => Wake::OnEvent,
        4 => Wake::Never,
        _ => Wake::Now,
    }
}

fn inbox_row(item: &InboxItem) -> Result<(Option<i64>, Vec<u8>), StoreError> {
    Ok(match item {
        InboxItem::Input(input) => {
            check_input(input)?;
            (None, encode(input)?)
        }
        InboxItem::Completion { request, value } => (Some(*request), encode(value)?),
    })
}

fn insert_inbox(
    client: &mut impl postgres::GenericClient,
    agent: &str,
    item: &InboxItem,
) -> Result<i64, StoreError> {
    let (request, bytes) = inbox_row(item)?;
    match client.query_one(
        "INSERT INTO aido.inbox (agent, request, item) VALUES ($1, $2, $3) RETURNING seq",
        &[&agent, &request, &bytes],
    ) {
        Ok(row) => get(&row, 0),
        Err(e) if is_unique_violation(&e) => {
            Err(StoreError::new(StoreErrorKind::DuplicateCompletion {
                agent: agent.to_owned(),
                request: request.unwrap_or(0),
            }))
        }
        Err(e) => Err(db_error(e)),
    }
}

/// Writes `commit` in `tx` if the agent is still at version `loaded`: the
/// row locked, the version checked, the db written, the consumed inbox rows
/// deleted, the outbox rows inserted once per (agent, request, kind).
fn write_commit(
    tx: &mut postgres::Transaction<'_>,
    agent: &str,
    loaded: u64,
    commit: Commit,
) -> Result<u64, StoreError> {
    let db = encode(&commit.db)?;
    let (wake_kind, wake_arg) = wake_parts(commit.wake);
    let version = i64::try_from(loaded.saturating_add(1)).unwrap_or(i64::MAX);
    let conflict = |found: u64| {
        StoreError::new(StoreErrorKind::Conflict {
            agent: agent.to_owned(),
            expected: loaded,
            found,
        })
    };
    let found = tx
        .query_opt(
            "SELECT version FROM aido.agents WHERE key = $1 FOR UPDATE",
            &[&agent],
        )
        .map_err(db_error)?
        .map(|row| get::<i64>(&row, 0))
        .transpose()?
        .map_or(0, version_of);
    if found != loaded {
        return Err(conflict(found));
    }
    let written = if loaded == 0 {
        tx.execute(
            "INSERT INTO aido.agents (key, version, tree, db, wake_kind, wake_arg)
             VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (key) DO NOTHING",
            &[&agent, &version, &commit.tree, &db, &wake_kind, &wake_arg],
        )
    } else {
        tx.execute(
            "UPDATE aido.agents SET version = $2, tree = $3, db = $4, wake_kind = $5, wake_arg = $6
             WHERE key = $1",
            &[&agent, &version, &commit.tree, &db, &wake_kind, &wake_arg],
        )
    }
    .map_err(db_error)?;
    if written != 1 {
        // Another worker created the agent between the check and the insert.
        return Err(conflict(1));
    }
    if !commit.consumed.is_empty() {
        tx.execute(
            "DELETE FROM aido.inbox WHERE agent = $1 AND seq = ANY($2)",
            &[&agent, &commit.consumed],
        )
        .map_err(db_error)?;
    }
    for entry in &commit.outbox {
        let value = encode(&entry.value)?;
        tx.execute(
            "INSERT INTO aido.outbox (agent, request, kind, value) VALUES ($1, $2, $3, $4)
             ON CONFLICT (agent, request, kind) DO NOTHING",
            &[&agent, &entry.request, &entry.kind.as_str(), &value],
        )
        .map_err(db_error)?;
    }
    Ok(loaded + 1)
}

/// The agent's row, read with `suffix` (`FOR UPDATE` to lock it).
fn load_in(
    client: &mut impl postgres::GenericClient,
    agent: &str,
    suffix: &str,
) -> Result<Option<Loaded>, StoreError> {
    let query = format!(
        "SELECT db, version, tree, wake_kind, wake_arg FROM aido.agents WHERE key = $1 {suffix}"
    );
    let Some(row) = client.query_opt(&query, &[&agent]).map_err(db_error)? else {
        return Ok(None);
    };
    let bytes: Vec<u8> = get(&row, 0)?;
    Ok(Some(Loaded {
        db: decode(&bytes)?,
        version: version_of(get(&row, 1)?),
        tree: get(&row, 2)?,
        wake: wake_from_parts(get(&row, 3)?, get(&row, 4)?),
    }))
}

/// The agent's inbox in order, at most `limit` entries.
fn inbox_in(
    client: &mut impl postgres::GenericClient,
    agent: &str,
    limit: i64,
) -> Result<Vec<InboxEntry>, StoreError> {
    let rows = client
        .query(
            "SELECT seq, request, item FROM aido.inbox WHERE agent = $1 ORDER BY seq LIMIT $2",
            &[&agent, &limit],
        )
        .map_err(db_error)?;
    rows.iter()
        .map(|row| {
            let seq = get(row, 0)?;
            let request: Option<i64> = get(row, 1)?;
            let bytes: Vec<u8> = get(row, 2)?;
            let value = decode(&bytes)?;
            let item = match request {
                None => InboxItem::Input(value),
                Some(request) => InboxItem::Completion { request, value },
            };
            Ok(InboxEntry { seq, item })
        })
        .collect()
}

/// The advisory lock key of an agent's turns (a 64-bit hash of its key, in
/// a space of its own).
const TURN_LOCK: &str = "SELECT pg_try_advisory_xact_lock(hashtextextended($1, 7272024))";

impl Store for PgStore {
    fn load(&mut self, agent: &str) -> Result<Option<Loaded>, StoreError> {
        load_in(&mut self.client, agent, "")
    }

    fn commit(&mut self, agent: &str, loaded: u64, commit: Commit) -> Result<u64, StoreError> {
        let mut tx = self.client.transaction().map_err(db_error)?;
        let version = write_commit(&mut tx, agent, loaded, commit)?;
        tx.commit().map_err(db_error)?;
        Ok(version)
    }

    fn append(&mut self, agent: &str, item: InboxItem) -> Result<i64, StoreError> {
        insert_inbox(&mut self.client, agent, &item)
    }

    fn inbox(&mut self, agent: &str) -> Result<Vec<InboxEntry>, StoreError> {
        inbox_in(&mut self.client, agent, i64::MAX)
    }

    fn outbox(&mut self, agent: &str) -> Result<Vec<OutboxEntry>, StoreError> {
        let rows = self
            .client
            .query(
                "SELECT request, kind, value FROM aido.outbox WHERE agent = $1 ORDER BY id",
                &[&agent],
            )
            .map_err(db_error)?;
        rows.iter()
            .map(|row| {
                let bytes: Vec<u8> = get(row, 2)?;
                Ok(OutboxEntry {
                    request: get(row, 0)?,
                    kind: kind_from(get(row, 1)?),
                    value: decode(&bytes)?,
                })
            })
            .collect()
    }

    fn claim(&mut self, now: i64, lease_ms: i64, max: usize) -> Result<Vec<Claim>, StoreError> {
        let until = now.saturating_add(lease_ms);
        let limit = i64::try_from(max).unwrap_or(i64::MAX);
        let rows = self
            .client
            .query(
                "UPDATE aido.outbox SET lease_until = $2, token = nextval('aido.claim_tokens')
                 WHERE id IN (
                     SELECT id FROM aido.outbox
                     WHERE lease_until IS NULL OR lease_until <= $1
                     ORDER BY id LIMIT $3
                     FOR UPDATE SKIP LOCKED)
                 RETURNING id, agent, request, kind, value, token, lease_until",
                &[&now, &until, &limit],
            )
            .map_err(db_error)?;
        let mut claims = rows
            .iter()
            .map(|row| {
                let bytes: Vec<u8> = get(row, 4)?;
                Ok(Claim {
                    id: get(row, 0)?,
                    agent: get(row, 1)?,
                    entry: OutboxEntry {
                        request: get(row, 2)?,
                        kind: kind_from(get(row, 3)?),
                        value: decode(&bytes)?,
                    },
                    token: get(row, 5)?,
                    lease_until: get(row, 6)?,
                })
            })
            .collect::<Result<Vec<Claim>, StoreError>>()?;
        claims.sort_by_key(|c| c.id);
        Ok(claims)
    }

    fn finish(&mut self, claim: &Claim, completion: Option<Value>) -> Result<(), StoreError> {
        let mut tx = self.client.transaction().map_err(db_error)?;
        let deleted = tx
            .execute(
                "DELETE FROM aido.outbox WHERE id = $1 AND token = $2",
                &[&claim.id, &claim.token],
            )
            .map_err(db_error)?;
        if deleted != 1 {
            return Err(StoreError::new(StoreErrorKind::ClaimLost {
                agent: claim.agent.clone(),
                request: claim.entry.request,
            }));
        }
        if claim.entry.kind == OutboxKind::Cancel {
            tx.execute(
                "DELETE FROM aido.outbox WHERE agent = $1 AND request = $2 AND kind = 'launch'",
                &[&claim.agent, &claim.entry.request],
            )
            .map_err(db_error)?;
        }
        if let Some(value) = completion {
            let item = InboxItem::Completion {
                request: claim.entry.request,
                value,
            };
            insert_inbox(&mut tx, &claim.agent, &item)?;
        }
        tx.commit().map_err(db_error)
    }

    fn agents(&mut self) -> Result<Vec<AgentSummary>, StoreError> {
        let rows = self
            .client
            .query(
                "SELECT key, version, tree, wake_kind, wake_arg FROM aido.agents ORDER BY key",
                &[],
            )
            .map_err(db_error)?;
        rows.iter()
            .map(|row| {
                Ok(AgentSummary {
                    key: get(row, 0)?,
                    version: version_of(get(row, 1)?),
                    tree: get(row, 2)?,
                    wake: wake_from_parts(get(row, 3)?, get(row, 4)?),
                })
            })
            .collect()
    }

    fn due(&mut self, now: i64, max: usize) -> Result<Vec<String>, StoreError> {
        let limit = i64::try_from(max).unwrap_or(i64::MAX);
        let rows = self
            .client
            .query(
                "SELECT agent FROM (
                     SELECT agent, 0 AS class, min(seq) AS ord FROM aido.inbox GROUP BY agent
                     UNION ALL
                     SELECT key, 1, 0 FROM aido.agents
                     WHERE wake_kind IN (0, 1) OR (wake_kind = 2 AND wake_arg <= $1)
                 ) due
                 GROUP BY agent ORDER BY min(class), min(ord), agent LIMIT $2",
                &[&now, &limit],
            )
            .map_err(db_error)?;
        rows.iter().map(|row| get(row, 0)).collect()
    }

    /// The whole turn in one transaction: the agent's advisory lock taken
    /// (or [`Locked::Busy`] at once), its row locked `FOR UPDATE`, its
    /// oldest inbox entry read, the work done, its commit written and the
    /// transaction committed. A worker that dies anywhere before the commit
    /// leaves everything as it was: the server rolls the transaction back
    /// when the connection drops.
    fn turn(&mut self, agent: &str, work: TurnWork<'_>) -> Result<Locked, StoreError> {
        let mut tx = self.client.transaction().map_err(db_error)?;
        let held: bool = tx
            .query_one(TURN_LOCK, &[&agent])
            .map_err(db_error)
            .and_then(|row| get(&row, 0))?;
        if !held {
            return Ok(Locked::Busy);
        }
        let loaded = load_in(&mut tx, agent, "FOR UPDATE")?;
        let version = loaded.as_ref().map_or(0, |l| l.version);
        let entry = inbox_in(&mut tx, agent, 1)?.into_iter().next();
        let Some(commit) = work(loaded, entry)? else {
            tx.commit().map_err(db_error)?;
            return Ok(Locked::Idle);
        };
        let version = write_commit(&mut tx, agent, version, commit)?;
        tx.commit().map_err(db_error)?;
        Ok(Locked::Committed(version))
    }
}
