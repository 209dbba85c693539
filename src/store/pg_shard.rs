//! `PgShards`: shard-owned agents (see [`super::shard`]) in PostgreSQL
//! (feature `postgres`).
//!
//! The shard tables have a schema version of their own, in
//! `aido.shard_meta`, made by [`init`] after the store's tables
//! (`aido store init URL` runs both):
//!
//! - `aido.shards (shard, shards, epoch, owner, lease_until,
//!   checkpoint_tick)`: one row a shard, its lease and its last checkpoint;
//! - `aido.shard_agents (shard, key, db)`: each agent's db at the last
//!   checkpoint that changed it, in the binary encoding;
//! - `aido.shard_journal (shard, tick, entry)`: one row per shard per tick
//!   since the last checkpoint.
//!
//! Every write is a transaction that first locks the shard's row and
//! compares its epoch with the lease's: a write from an old epoch rolls
//! back and changes nothing.

use postgres::{Client, GenericClient, Transaction};

use super::postgres::{connect, db_error};
use super::shard::{Lease, ShardError, ShardErrorKind, ShardState, ShardStore};
use super::{StoreError, StoreErrorKind};

/// The version of the shard tables this build makes and uses.
pub const SHARD_SCHEMA_VERSION: i64 = 1;

const SHARD_MIGRATION_1: &str = "
CREATE TABLE aido.shard_meta (schema_version bigint NOT NULL);
CREATE TABLE aido.shards (
    shard integer PRIMARY KEY,
    shards integer NOT NULL,
    epoch bigint NOT NULL,
    owner text NOT NULL,
    lease_until bigint NOT NULL,
    checkpoint_tick bigint NOT NULL
);
CREATE TABLE aido.shard_agents (
    shard integer NOT NULL,
    key text NOT NULL,
    db bytea NOT NULL,
    PRIMARY KEY (shard, key)
);
CREATE TABLE aido.shard_journal (
    shard integer NOT NULL,
    tick bigint NOT NULL,
    entry bytea NOT NULL,
    PRIMARY KEY (shard, tick)
);
";

/// Creates the shard tables at `url`, or checks that they are there at
/// [`SHARD_SCHEMA_VERSION`]; returns whether it created them. The store's
/// own tables must be there first (`postgres::init`); a shard schema of
/// another version is [`StoreErrorKind::SchemaVersion`] and is left as it is.
pub fn init(url: &str) -> Result<bool, StoreError> {
    let mut client = connect(url)?;
    let mut tx = client.transaction().map_err(db_error)?;
    tx.execute("SELECT pg_advisory_xact_lock(7272025)", &[])
        .map_err(db_error)?;
    match shard_schema_version(&mut tx)? {
        Some(found) if found == SHARD_SCHEMA_VERSION => Ok(false),
        Some(found) => Err(StoreError::new(StoreErrorKind::SchemaVersion {
            found,
            expected: SHARD_SCHEMA_VERSION,
        })),
        None => {
            tx.batch_execute(SHARD_MIGRATION_1).map_err(db_error)?;
            tx.execute(
                "INSERT INTO aido.shard_meta (schema_version) VALUES ($1)",
                &[&SHARD_SCHEMA_VERSION],
            )
            .map_err(db_error)?;
            tx.commit().map_err(db_error)?;
            Ok(true)
        }
    }
}

fn shard_schema_version(client: &mut impl GenericClient) -> Result<Option<i64>, StoreError> {
    let exists: Option<String> = client
        .query_one("SELECT to_regclass('aido.shard_meta')::text", &[])
        .and_then(|row| row.try_get(0))
        .map_err(db_error)?;
    if exists.is_none() {
        return Ok(None);
    }
    let row = client
        .query_one("SELECT max(schema_version) FROM aido.shard_meta", &[])
        .map_err(db_error)?;
    row.try_get::<_, Option<i64>>(0).map_err(db_error)
}

/// Shards kept in PostgreSQL: one connection, used by one thread, for as
/// many shards as the worker owns.
pub struct PgShards {
    client: Client,
}

impl std::fmt::Debug for PgShards {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PgShards")
    }
}

impl PgShards {
    /// Connects to `url` and checks the shard tables' version.
    pub fn open(url: &str) -> Result<PgShards, StoreError> {
        let mut client = connect(url)?;
        match shard_schema_version(&mut client)? {
            None => Err(StoreError::new(StoreErrorKind::NoSchema)),
            Some(found) if found != SHARD_SCHEMA_VERSION => {
                Err(StoreError::new(StoreErrorKind::SchemaVersion {
                    found,
                    expected: SHARD_SCHEMA_VERSION,
                }))
            }
            Some(_) => Ok(PgShards { client }),
        }
    }

    /// Every shard's last checkpoint tick, by shard: how far the shards of
    /// the store have got. Shards made with another number of shards than
    /// `shards` are [`ShardErrorKind::ShardCount`].
    pub fn progress(&mut self, shards: u32) -> Result<Vec<(u32, u64)>, ShardError> {
        let rows = self
            .client
            .query(
                "SELECT shard, checkpoint_tick, shards FROM aido.shards ORDER BY shard",
                &[],
            )
            .map_err(db_error)?;
        let mut progress = Vec::with_capacity(rows.len());
        for row in rows {
            let shard: i32 = row.try_get(0).map_err(db_error)?;
            let tick: i64 = row.try_get(1).map_err(db_error)?;
            let found: i32 = row.try_get(2).map_err(db_error)?;
            if found != shard_id(shards) {
                return Err(ShardError::new(ShardErrorKind::ShardCount {
                    found: u32::try_from(found).unwrap_or(0),
                    expected: shards,
                }));
            }
            progress.push((u32::try_from(shard).unwrap_or(0), tick_of(tick)));
        }
        Ok(progress)
    }

    /// Runs `f` in a transaction that holds the shard's row, if the shard
    /// is still at the lease's epoch; commits what `f` wrote.
    fn fenced<R>(
        &mut self,
        lease: &Lease,
        f: impl FnOnce(&mut Transaction<'_>) -> Result<R, StoreError>,
    ) -> Result<R, ShardError> {
        let mut tx = self.client.transaction().map_err(db_error)?;
        let shard = shard_id(lease.shard);
        let found: i64 = tx
            .query_opt(
                "SELECT epoch FROM aido.shards WHERE shard = $1 FOR UPDATE",
                &[&shard],
            )
            .map_err(db_error)?
            .map(|row| row.try_get(0))
            .transpose()
            .map_err(db_error)?
            .unwrap_or(0);
        if found != lease.epoch {
            return Err(ShardError::new(ShardErrorKind::Fenced {
                shard: lease.shard,
                epoch: lease.epoch,
                found,
            }));
        }
        let r = f(&mut tx)?;
        tx.commit().map_err(db_error)?;
        Ok(r)
    }
}

/// A shard number as stored (`integer`); shard numbers are below the
/// number of shards, a `u32` the CLI keeps far smaller.
fn shard_id(shard: u32) -> i32 {
    i32::try_from(shard).unwrap_or(i32::MAX)
}

fn tick_id(tick: u64) -> i64 {
    i64::try_from(tick).unwrap_or(i64::MAX)
}

fn tick_of(stored: i64) -> u64 {
    u64::try_from(stored).unwrap_or(0)
}

impl ShardStore for PgShards {
    fn acquire(
        &mut self,
        shard: u32,
        shards: u32,
        owner: &str,
        now: i64,
        lease_ms: i64,
    ) -> Result<Option<Lease>, ShardError> {
        let mut tx = self.client.transaction().map_err(db_error)?;
        let id = shard_id(shard);
        let count = shard_id(shards);
        let until = now.saturating_add(lease_ms);
        // The first owner of a shard inserts its row; two at once: one
        // inserts, the other finds it held.
        tx.execute(
            "INSERT INTO aido.shards (shard, shards, epoch, owner, lease_until, checkpoint_tick) \
             VALUES ($1, $2, 0, '', 0, 0) ON CONFLICT (shard) DO NOTHING",
            &[&id, &count],
        )
        .map_err(db_error)?;
        let row = tx
            .query_one(
                "SELECT shards, epoch, lease_until FROM aido.shards WHERE shard = $1 FOR UPDATE",
                &[&id],
            )
            .map_err(db_error)?;
        let (found, epoch, lease_until): (i32, i64, i64) = (
            row.try_get(0).map_err(db_error)?,
            row.try_get(1).map_err(db_error)?,
            row.try_get(2).map_err(db_error)?,
        );
        if found != count {
            return Err(ShardError::new(ShardErrorKind::ShardCount {
                found: u32::try_from(found).unwrap_or(0),
                expected: shards,
            }));
        }
        if epoch > 0 && lease_until > now {
            return Ok(None);
        }
        let epoch = epoch + 1;
        tx.execute(
            "UPDATE aido.shards SET epoch = $2, owner = $3, lease_until = $4 WHERE shard = $1",
            &[&id, &epoch, &owner, &until],
        )
        .map_err(db_error)?;
        tx.commit().map_err(db_error)?;
        Ok(Some(Lease {
            shard,
            epoch,
            until,
        }))
    }

    fn renew(&mut self, lease: &mut Lease, now: i64, lease_ms: i64) -> Result<(), ShardError> {
        let until = now.saturating_add(lease_ms);
        let id = shard_id(lease.shard);
        self.fenced(lease, |tx| {
            tx.execute(
                "UPDATE aido.shards SET lease_until = $2 WHERE shard = $1",
                &[&id, &until],
            )
            .map_err(db_error)
        })?;
        lease.until = until;
        Ok(())
    }

    fn load(&mut self, lease: &Lease) -> Result<ShardState, ShardError> {
        let id = shard_id(lease.shard);
        self.fenced(lease, |tx| {
            let tick: i64 = tx
                .query_one(
                    "SELECT checkpoint_tick FROM aido.shards WHERE shard = $1",
                    &[&id],
                )
                .and_then(|row| row.try_get(0))
                .map_err(db_error)?;
            let agents = tx
                .query(
                    "SELECT key, db FROM aido.shard_agents WHERE shard = $1 ORDER BY key",
                    &[&id],
                )
                .map_err(db_error)?
                .into_iter()
                .map(|row| Ok((row.try_get(0)?, row.try_get(1)?)))
                .collect::<Result<Vec<(String, Vec<u8>)>, postgres::Error>>()
                .map_err(db_error)?;
            let journal = tx
                .query(
                    "SELECT tick, entry FROM aido.shard_journal WHERE shard = $1 AND tick > $2 \
                     ORDER BY tick",
                    &[&id, &tick],
                )
                .map_err(db_error)?
                .into_iter()
                .map(|row| Ok((tick_of(row.try_get(0)?), row.try_get(1)?)))
                .collect::<Result<Vec<(u64, Vec<u8>)>, postgres::Error>>()
                .map_err(db_error)?;
            Ok(ShardState {
                tick: tick_of(tick),
                agents,
                journal,
            })
        })
    }

    fn journal(&mut self, lease: &Lease, tick: u64, entry: &[u8]) -> Result<(), ShardError> {
        let id = shard_id(lease.shard);
        let tick = tick_id(tick);
        self.fenced(lease, |tx| {
            tx.execute(
                "INSERT INTO aido.shard_journal (shard, tick, entry) VALUES ($1, $2, $3)",
                &[&id, &tick, &entry],
            )
            .map_err(db_error)
        })?;
        Ok(())
    }

    fn checkpoint(
        &mut self,
        lease: &Lease,
        tick: u64,
        changed: &[(String, Vec<u8>)],
    ) -> Result<(), ShardError> {
        let id = shard_id(lease.shard);
        let tick = tick_id(tick);
        self.fenced(lease, |tx| {
            if !changed.is_empty() {
                let keys: Vec<&str> = changed.iter().map(|(k, _)| k.as_str()).collect();
                let dbs: Vec<&[u8]> = changed.iter().map(|(_, d)| d.as_slice()).collect();
                tx.execute(
                    "INSERT INTO aido.shard_agents (shard, key, db) \
                     SELECT $1, k, d FROM unnest($2::text[], $3::bytea[]) AS u(k, d) \
                     ON CONFLICT (shard, key) DO UPDATE SET db = EXCLUDED.db",
                    &[&id, &keys, &dbs],
                )
                .map_err(db_error)?;
            }
            tx.execute(
                "UPDATE aido.shards SET checkpoint_tick = $2 WHERE shard = $1",
                &[&id, &tick],
            )
            .map_err(db_error)?;
            tx.execute(
                "DELETE FROM aido.shard_journal WHERE shard = $1 AND tick <= $2",
                &[&id, &tick],
            )
            .map_err(db_error)?;
            Ok(())
        })
    }

    fn release(&mut self, lease: &Lease) -> Result<(), ShardError> {
        let id = shard_id(lease.shard);
        self.fenced(lease, |tx| {
            tx.execute(
                "UPDATE aido.shards SET lease_until = 0 WHERE shard = $1",
                &[&id],
            )
            .map_err(db_error)
        })?;
        Ok(())
    }
}
