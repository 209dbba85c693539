//! The commands that tick trees: `run`, `bench`.

use std::ffi::OsString;

use super::TEMPLATE;

pub(crate) const RUN_USAGE: &str = "aido run TREE [--db DB] [--ticks N] [--seed S] [--dt D] [--inputs INPUTS] [--save OUT] [--format edn|json|pretty] [--trace]
                [--aido-keys] [--timeline OUT.html] [--trims TRIMS] [--reload N=FILE]... [--save-tree OUT] [--strict]
                [--handler ACTION=COMMAND]... [--handler-timeout S]";
pub(crate) const BENCH_USAGE: &str =
    "aido bench TREE [--db DB] [--ticks N] [--agents M] [--threads T] [--seed S] [--format edn]";

/// Tick a tree and print the db after every tick
#[derive(clap::Args, Debug)]
#[command(
    override_usage = RUN_USAGE,
    help_template = TEMPLATE,
    long_about = "\
Ticks TREE N times, each tick starting from the db the previous one left,
and prints one line per tick: {:tick 1, :status :success, :db {...}}. A tick
that launches or cancels deferred actions (`:defer`) also has
:launch [{:node id, :request n, :action :name, :options {...}} ...] and/or
:cancel [...]; an outside system's completions can be scripted with --inputs as
{:aido/results {node-id {:request n, :status :success, :result x}}}. A
completion that answers no request in flight is not applied: the tick lists it
under :dropped [{:node id, :reason :not-in-flight, :completion {...}} ...].
A tick that noticed a likely mistake in the tree lists it under :warnings.",
    after_help = "\
A db that was last ticked with another tree (its :aido/tree fingerprint
differs) is carried over to TREE by node id first; that tick's line gets
:migrated {:kept [...], :dropped [...], :halted [...]}.

exit status: 0 every tick ran (whatever its status), 1 the tree (or a reload
file) has compile errors (or, with --strict, a tick ended in Error), 2 bad
arguments or an unreadable or malformed file"
)]
pub(crate) struct RunArgs {
    /// The tree file
    #[arg(value_name = "TREE")]
    pub(crate) paths: Vec<OsString>,
    /// The starting db: an EDN map, or a JSON object if DB ends in .json
    /// (default: an empty map); a save's :aido/tick (the ticks it has had)
    /// is taken out, and this run numbers its ticks on from there
    #[arg(long, value_name = "DB")]
    pub(crate) db: Option<OsString>,
    /// How many ticks to run, a positive integer (default: as many as INPUTS
    /// has elements, else 1)
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub(crate) ticks: Option<OsString>,
    /// Put the integer S under :aido/seed before the first tick, so that
    /// random nodes draw a fresh, reproducible stream
    #[arg(long, value_name = "S", allow_negative_numbers = true)]
    pub(crate) seed: Option<OsString>,
    /// Move the db's clock :aido/now on by D seconds (a number, 0 or more)
    /// before each tick, from 0.0 at the first tick of a db without one;
    /// options in :seconds read it (no node reads a clock)
    #[arg(long, value_name = "D")]
    pub(crate) dt: Option<OsString>,
    /// An EDN vector, or a JSON array if INPUTS ends in .json; element i (a
    /// map or nil) is merged into the db before this run's tick i+1, key by
    /// key, a key given nil being removed; elements past the last tick are
    /// ignored
    #[arg(long, value_name = "INPUTS")]
    pub(crate) inputs: Option<OsString>,
    /// Write the final db to OUT atomically (JSON if OUT ends in .json, else
    /// EDN), with :aido/tick, the number of the last tick, for a run that
    /// goes on from it
    #[arg(long, value_name = "OUT")]
    pub(crate) save: Option<OsString>,
    /// Write the tree as it stands after the last tick (after trims and
    /// reloads) to OUT atomically, as EDN: the tree the saved db was last
    /// ticked with, for `aido migrate`
    #[arg(long, value_name = "OUT")]
    pub(crate) save_tree: Option<OsString>,
    /// Exit with status 1 if a tick ended in Error (the run still does every
    /// tick and saves)
    #[arg(long)]
    pub(crate) strict: bool,
    /// Print each tick as `edn` (default), as a line of `json`, or as a short
    /// `pretty` block: the status, the input merged, the db's changes
    /// (`+ :key value` added, `~ :key old -> new` changed, `- :key` removed;
    /// keys sorted) and the events (halts, skips, launches, cancels, errors,
    /// trims, reloads); a json line that would hold NaN or an infinity stops
    /// the run (exit 2)
    #[arg(long, value_name = "F")]
    pub(crate) format: Option<OsString>,
    /// Add :trace to each line: [node-id :status] for every node ticked and
    /// [:halt node-id] for every node halted, in order (and :change to each
    /// applied trim task); with --format pretty, the nodes ticked as an
    /// indented tree: type, id, status
    #[arg(long)]
    pub(crate) trace: bool,
    /// With --format pretty, show changes to the library's :aido/* keys too
    #[arg(long)]
    pub(crate) aido_keys: bool,
    /// Write the whole run to OUT as one self-contained HTML page (the tree,
    /// a grid of node statuses per tick, the db with its changes, the events,
    /// the source), saved atomically after the last tick
    #[arg(long, value_name = "OUT")]
    pub(crate) timeline: Option<OsString>,
    /// An EDN vector of trim tasks, queued before tick 1 and worked through
    /// between ticks; each tick before which a task was looked at gets
    /// :trim [{:task t, :outcome :applied|:deferred|:rejected, :reason "..."} ...]
    /// (an applied task that changed the db also has :db {...} and :dissoc [...])
    #[arg(long, value_name = "TRIMS")]
    pub(crate) trims: Option<OsString>,
    /// An EDN map of stubs, {node-id-or-type stub ...}, put in place of nodes
    /// of TREE (see `aido help test`) and kept in place after every trim and
    /// reload; a stub by id wins over one by type
    #[arg(long, value_name = "STUBS")]
    pub(crate) stubs: Option<OsString>,
    /// A node model: the application's node types and functions
    #[arg(long, value_name = "MODEL")]
    pub(crate) nodes: Option<OsString>,
    /// Switch to the tree in FILE before tick N (numbered as the lines are:
    /// on from a save's :aido/tick), carrying the db over
    /// (repeatable); tick N's line gets :reload {:file ..., :kept [...],
    /// :dropped [...], :halted [...]} (with :cancel [...], the cancel requests
    /// of deferred actions halted because they are gone), or {:file ...,
    /// :rejected "..."} if FILE does not compile (the run goes on with the old
    /// tree); several reloads before one tick: a vector of their reports, in
    /// order. Every FILE is read and compiled before tick 1: one that does
    /// not, or an N past the last tick, stops the run before it starts
    #[arg(long, value_name = "N=FILE")]
    pub(crate) reload: Vec<OsString>,
    /// Run COMMAND (a program, taken whole: no shell, no arguments) for
    /// each launch of the deferred action ACTION (repeatable): the launch's
    /// options and request id go in as one JSON object on standard input,
    /// what it prints (JSON) is the completion's :result, exit status 0 is
    /// :success and anything else :failure; a cancel stops it
    #[arg(long = "handler", value_name = "ACTION=COMMAND")]
    pub(crate) handler: Vec<OsString>,
    /// Seconds a handler program may take before it is stopped and its
    /// request fails (default: no limit)
    #[arg(long, value_name = "S")]
    pub(crate) handler_timeout: Option<OsString>,
}

/// Time ticks of one or many agents and measure their memory
#[derive(clap::Args, Debug)]
#[command(
    override_usage = BENCH_USAGE,
    help_template = TEMPLATE,
    long_about = "\
Ticks M agents, each starting from DB, N times each, and prints the time per
tick, the ticks per second, the bytes each agent's db holds and the
allocations per tick:

  npc.edn: 1 agent x 1000000 ticks in 0.093 s
    93.1 ns per tick, 10.7 M ticks per second, 520 bytes per agent, 0 allocations per tick

One agent is ticked in a plain loop of run_tick; more are ticked together
with tick_all_into, in parallel across the cores, or with --threads T on T
threads (T = 1: one by one in a plain loop on one thread, no pool). Only the
ticking is timed,
after a warm-up on copies of the dbs (up to 1000 ticks of one agent, or one
tick of up to 10000 agents) that leaves the agents' dbs as they were, so each
agent's final db is its db after exactly N ticks.

Bytes per agent are measured with a counting allocator: the bytes allocated
after the ticking, less those allocated before the dbs were made (so the tree
is not counted), divided by M, plus the size of the slot each db takes in the
vector of agents. With more than one agent, the few kilobytes rayon keeps for
its queues are counted too: spread over M agents, they matter only when M is
small. Allocations per tick are all the allocation calls made while the ticks
were timed (rayon's included), divided by N x M.",
    after_help = "exit status: 0 every tick ran (whatever its status), 1 the tree has compile\n\
                  errors, 2 bad arguments or an unreadable or malformed file"
)]
pub(crate) struct BenchArgs {
    /// The tree file
    #[arg(value_name = "TREE")]
    pub(crate) paths: Vec<OsString>,
    /// The starting db: an EDN map, or a JSON object if DB ends in .json
    /// (default: an empty map)
    #[arg(long, value_name = "DB")]
    pub(crate) db: Option<OsString>,
    /// Ticks per agent, a positive integer (default 1000000 / M, at least 1)
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub(crate) ticks: Option<OsString>,
    /// How many agents, a positive integer (default 1)
    #[arg(long, value_name = "M", allow_negative_numbers = true)]
    pub(crate) agents: Option<OsString>,
    /// Tick the agents on T threads, a positive integer (default: one per
    /// core; 1 ticks them one by one on the calling thread)
    #[arg(long, value_name = "T", allow_negative_numbers = true)]
    pub(crate) threads: Option<OsString>,
    /// Give agent i the seed S + i under :aido/seed (and no :aido/rng-pos),
    /// so that agents differ but every run is the same
    #[arg(long, value_name = "S", allow_negative_numbers = true)]
    pub(crate) seed: Option<OsString>,
    /// `text` (default) or `edn`: one map {:ticks N, :agents M, :ns-per-tick
    /// X, :ticks-per-second Y, :bytes-per-agent Z, :allocations-per-tick A,
    /// :db <agent 0's final db>}
    #[arg(long, value_name = "F")]
    pub(crate) format: Option<OsString>,
}
