//! The store's commands: `store init`, `send`, `agents` (feature `postgres`;
//! without it each says so in one line).

use std::ffi::OsString;

use super::TEMPLATE;

pub(crate) const STORE_USAGE: &str = "aido store init URL";
pub(crate) const SEND_USAGE: &str = "aido send --store URL AGENT INPUT";
pub(crate) const AGENTS_USAGE: &str = "aido agents --store URL [AGENT]";

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
