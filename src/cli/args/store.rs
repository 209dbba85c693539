//! The store's commands: `store init`, `send`, `agents` (feature `postgres`;
//! without it each says so in one line).

use std::ffi::OsString;

use super::TEMPLATE;

pub(crate) const STORE_USAGE: &str = "aido store init URL";
pub(crate) const SEND_USAGE: &str = "aido send --store URL AGENT INPUT";
pub(crate) const AGENTS_USAGE: &str = "aido agents --store URL [AGENT]";
pub(crate) const WORKER_USAGE: &str = "aido worker TREE --store URL [--handler ACTION=COMMAND]... [--handler-timeout S]
                   [--lease S] [--workers N] [--max-ticks N] [--previous OLD_TREE]... [--nodes MODEL]";

/// Create aido's tables in a PostgreSQL database (feature postgres)
#[derive(clap::Args, Debug)]
#[command(
    override_usage = STORE_USAGE,
    help_template = TEMPLATE,
    long_about = "\
Creates aido's tables (the schema `aido`: agents, inbox, outbox) in the
PostgreSQL database at URL (postgres://user:password@host:port/db, or
`host=... user=... dbname=...`), or checks that they are there at this
version. A schema of another version is an error and is left as it is.",
    after_help = "exit status: 0 created or already current, 2 bad arguments, a bad URL, a\n\
                  server that cannot be reached, or a schema of another version"
)]
pub(crate) struct StoreArgs {
    /// `init`, then the database's URL
    #[arg(value_name = "init URL")]
    pub(crate) paths: Vec<OsString>,
}

/// Append an input map to a stored agent's inbox (feature postgres)
#[derive(clap::Args, Debug)]
#[command(
    override_usage = SEND_USAGE,
    help_template = TEMPLATE,
    long_about = "\
Appends INPUT, an EDN map such as '{:input \"hi\"}', to the inbox of AGENT
in the store at URL. A worker merges it into the agent's db before a tick,
in the order inputs were sent.",
    after_help = "exit status: 0 sent, 2 bad arguments, an INPUT that is not an EDN map, or a\n\
                  store that cannot be used"
)]
pub(crate) struct SendArgs {
    /// The agent's key, then the input (an EDN map)
    #[arg(value_name = "AGENT INPUT")]
    pub(crate) paths: Vec<OsString>,
    /// The store's URL
    #[arg(long, value_name = "URL")]
    pub(crate) store: Option<OsString>,
}

/// List stored agents, or print one: db, version, inbox, outbox (feature postgres)
#[derive(clap::Args, Debug)]
#[command(
    override_usage = AGENTS_USAGE,
    help_template = TEMPLATE,
    long_about = "\
Without AGENT, lists the agents in the store at URL, one a line: key,
version, tree fingerprint, next wake. With AGENT, prints it as one EDN map:
{:agent, :version, :tree, :wake, :db, :inbox [...], :outbox [...]}.",
    after_help = "exit status: 0 listed, 2 bad arguments, an unknown AGENT, or a store that\n\
                  cannot be used"
)]
pub(crate) struct AgentsArgs {
    /// The agent to print (default: list them all)
    #[arg(value_name = "AGENT")]
    pub(crate) paths: Vec<OsString>,
    /// The store's URL
    #[arg(long, value_name = "URL")]
    pub(crate) store: Option<OsString>,
}

/// Tick stored agents, run their deferred actions, wake them on time (feature postgres)
#[derive(clap::Args, Debug)]
#[command(
    override_usage = WORKER_USAGE,
    help_template = TEMPLATE,
    long_about = "\
Serves the agents in the store at URL with TREE until SIGTERM or SIGINT.
Each event (an input sent with `aido send` or `aido chat --store`, a
deferred action's completion, an agent's wake time come) is one turn in one
transaction: the agent's row locked, the event merged, the tree ticked until
it is not Running or it waits for an event or a time, the db written with
the next version and wake, the event consumed and the turn's launches and
cancels put in the outbox, all committed together. Deferred actions are run
by the --handler programs on leased claims, with the idempotency key
AGENT/REQUEST. Time (:aido/now) is the worker's clock, in Unix seconds.

Any number of workers, on any number of machines, may serve one store: each
agent has one writer at a time. A worker that loses the server prints one
line and reconnects with back-off; nothing committed is lost, and what was
not committed is done again. One line is printed per turn.",
    after_help = "exit status: 0 stopped by a signal, 1 the tree has compile errors, 2 bad\n\
                  arguments, a bad URL, a server that cannot be reached at start, or a schema\n\
                  of another version"
)]
pub(crate) struct WorkerArgs {
    /// The tree file
    #[arg(value_name = "TREE")]
    pub(crate) paths: Vec<OsString>,
    /// The store's URL
    #[arg(long, value_name = "URL")]
    pub(crate) store: Option<OsString>,
    /// Run COMMAND for each launch of the deferred action ACTION
    /// (repeatable), as `aido chat --handler` does, with the idempotency key
    /// AGENT/REQUEST in its input
    #[arg(long = "handler", value_name = "ACTION=COMMAND")]
    pub(crate) handler: Vec<OsString>,
    /// Seconds a handler program may take before it is stopped and its
    /// request fails (default: no limit)
    #[arg(long, value_name = "S")]
    pub(crate) handler_timeout: Option<OsString>,
    /// Seconds a dispatcher's claim on a launch holds before another
    /// dispatcher may run it again (default: the handler timeout plus its
    /// grace plus 60 s, or 60 s without a timeout)
    #[arg(long, value_name = "S")]
    pub(crate) lease: Option<OsString>,
    /// Threads, each with its own connection (default 1)
    #[arg(long, value_name = "N")]
    pub(crate) workers: Option<OsString>,
    /// The most ticks a turn takes (default 100)
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub(crate) max_ticks: Option<OsString>,
    /// An earlier version of TREE (repeatable): agents last ticked with it
    /// are carried over exactly, knowing both trees (others by node id)
    #[arg(long, value_name = "OLD_TREE")]
    pub(crate) previous: Vec<OsString>,
    /// A node model: the application's node types and functions
    #[arg(long, value_name = "MODEL")]
    pub(crate) nodes: Option<OsString>,
}
