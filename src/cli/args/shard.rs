//! `aido shard`: a worker of shard-owned agents (feature `postgres`).

use std::ffi::OsString;

use super::TEMPLATE;

pub(crate) const SHARD_USAGE: &str =
    "aido shard TREE --store URL --shards N [--checkpoint-every K] [--tick-rate HZ] [--ticks T]
                  [--agents M] [--lease S] [--max-shards J] [--owner NAME]";

/// Own shards of agents kept in PostgreSQL and tick them (feature postgres)
#[derive(clap::Args, Debug)]
#[command(
    override_usage = SHARD_USAGE,
    help_template = TEMPLATE,
    long_about = "\
Ticks the agents of the store at URL (made with `aido store init URL`) HZ
times a second with TREE, as one of any number of workers. Agent keys hash
into N logical shards; this worker leases every shard no one holds (a
lease of S seconds, renewed while it runs; one that lapsed is taken over,
and its epoch counted up), loads the shard's last checkpoint and replays
the journal written since, then ticks all its agents in memory. Each tick
is journaled first (one row per shard per tick, with its time) and every K
ticks the agents whose db changed are checkpointed. A worker whose shard
was taken over writes nothing more to it: it says so and lets the shard go.

Time is logical: tick t of a shard has :aido/now (t - 1) / HZ seconds, and
every agent is made with an :aido/seed from its key, so a shard recovered
after a crash has the dbs of a run that never crashed, bit for bit.
With --agents M, the agents agent-0 ... agent-(M-1) are made at the first
tick of their shard. Lease times are read from this machine's clock: the
workers' clocks must agree to well within S.",
    after_help = "\
Each shard taken prints `shard I: taken, epoch E, tick T (R replayed), A
agents`; each shard finished (with --ticks) `shard I: tick T, A agents,
checkpointed`. Without --ticks the worker runs until it is killed, which
loses nothing the journal holds.

exit status: 0 every shard reached tick T, 1 a shard was taken from this
worker (its writes were refused), 2 bad arguments, a bad URL, a server that
cannot be reached, or a store of another schema version"
)]
pub(crate) struct ShardArgs {
    /// The tree file
    #[arg(value_name = "TREE")]
    pub(crate) paths: Vec<OsString>,
    /// The store's URL
    #[arg(long, value_name = "URL")]
    pub(crate) store: Option<OsString>,
    /// The number of logical shards agent keys hash into, the same for every
    /// worker of the store
    #[arg(long, value_name = "N")]
    pub(crate) shards: Option<OsString>,
    /// Checkpoint the changed agents every K ticks (default 60)
    #[arg(long, value_name = "K")]
    pub(crate) checkpoint_every: Option<OsString>,
    /// Ticks a second (default 20)
    #[arg(long, value_name = "HZ")]
    pub(crate) tick_rate: Option<OsString>,
    /// Stop once every shard has reached tick T (default: run until killed)
    #[arg(long, value_name = "T")]
    pub(crate) ticks: Option<OsString>,
    /// Make the agents agent-0 ... agent-(M-1) at the first tick of their shard
    #[arg(long, value_name = "M")]
    pub(crate) agents: Option<OsString>,
    /// How long a lease lasts unless renewed, in seconds (default 10)
    #[arg(long, value_name = "S")]
    pub(crate) lease: Option<OsString>,
    /// Hold at most J shards at a time (default: every shard no one holds),
    /// so that workers started together share the shards
    #[arg(long, value_name = "J")]
    pub(crate) max_shards: Option<OsString>,
    /// This worker's name in the store, beside its leases (default: worker-PID)
    #[arg(long, value_name = "NAME")]
    pub(crate) owner: Option<OsString>,
}
