//! Subcommands of the `aido` tool: parse the arguments, call the library,
//! render the results and turn the outcome into an exit code.
//!
//! Exit codes: 0 when all went well, 1 when a tree has compile errors (or,
//! for `aido test`, a scenario fails), 2 for bad arguments and for files
//! that cannot be read or are malformed. Every failure is one line on
//! stderr, `aido: <what>: <why>`, except compile errors, which are rendered
//! rustc-style.
//!
//! An application ships the tool with its own node types and functions by
//! handing its registry to [`main_with`] (or [`Cli`]) from its own `main`:
//!
//! ```no_run
//! use aido::{Registry, Status, extend::NodeType};
//!
//! let mut registry = Registry::new();
//! registry
//!     .node_type(NodeType::new("guard/sees?").tick(|_| Ok(Status::Failure)))
//!     .unwrap();
//! aido::cli::main_with(registry);
//! ```
// The CLI is written as a user of the library: its matches on the library's
// `#[non_exhaustive]` enums keep the wildcard arm they need outside the crate.
#![allow(unreachable_patterns)]

mod alloc_count;
mod args;
mod bench;
mod chat;
mod check;
mod load;
mod migrate;
mod nodes;
mod run;
mod save;
mod show;
mod test;

use std::ffi::OsString;
use std::io::{self, BufWriter, Write};

pub use alloc_count::AllocCounter;
pub use context::{Cli, main_with};
pub(crate) use context::{registry, use_model};

mod context;

/// The overview printed by `aido --help`.
const USAGE: &str = "\
aido: behaviour trees written as EDN data

usage:
  aido check FILE...        compile each tree and report every problem
  aido run TREE [options]   tick a tree and print the db after every tick
  aido chat TREE [options]  talk to a tree a line at a time: replies, :undo, --record
  aido migrate OLD NEW --db SAVE [--save OUT]
                            carry a saved db over to a new version of its tree
  aido test [PATH...]       run the scenarios (*.test.edn) under PATH: expectations,
                            golden timelines, --accept, --coverage
  aido nodes                print every node type and function: options, arity, doc
  aido bench TREE [options] time ticks of one or many agents, measure their memory
  aido show TREE [--format text|dot|mermaid]
                            print a tree as an outline, a Graphviz or a Mermaid graph
  aido help [COMMAND]       print this help, or a command's help
  aido --version            print the version

run options:
  --db DB          the starting db: an EDN map, or a JSON object if DB ends in .json
                   (default: an empty map)
  --ticks N        how many ticks to run (default 1)
  --seed S         seed the random generator with the integer S
  --inputs INPUTS  an EDN vector; element i (a map or nil) is merged into the db
                   before tick i+1
  --save OUT       write the final db to OUT (JSON if OUT ends in .json, else EDN)
  --format F       print each tick as `edn` (default), `json`, or a `pretty` block
                   (status, db changes, events)
  --trace          add `:trace` to each tick: the nodes ticked and halted, in order
                   (pretty: the nodes ticked as an indented tree)
  --aido-keys      pretty: show changes to the :aido/* keys too
  --timeline OUT   write the run as a self-contained HTML page to OUT
  --trims TRIMS    an EDN vector of trim tasks, worked through between ticks
  --reload N=FILE  switch to the tree in FILE before tick N (repeatable)
  --stubs STUBS    an EDN map of stubs by node id or node type (see `aido help test`)
  --nodes MODEL    a node model declaring the application's node types and functions
                   (also for check, test and nodes)

bench options:
  --db DB          the starting db of every agent (default: an empty map)
  --ticks N        ticks per agent (default 1000000 / M)
  --agents M       how many agents, ticked in parallel when more than one (default 1)
  --seed S         give agent i the seed S + i
  --format F       print the results as `text` (default) or as one `edn` map

exit status: 0 ok, 1 the tree has compile errors (test: a scenario failed),
2 bad arguments or input files
";

/// Why a subcommand stopped early.
#[derive(Debug)]
pub(crate) enum Failure {
    /// The command line is wrong: the reason, then the command's usage line.
    Usage {
        /// One line saying what is wrong.
        reason: String,
        /// The usage line of the subcommand concerned.
        usage: &'static str,
    },
    /// An input is unusable: printed as `aido: <what>: <why>`.
    Input {
        /// The path or flag concerned, e.g. `db.edn:3:7` or `--ticks`.
        what: String,
        /// What is wrong with it.
        why: String,
    },
    /// The tree has compile errors, rendered rustc-style.
    Compile(String),
    /// Writing to stdout failed.
    Stdout(io::Error),
}

impl Failure {
    pub(crate) fn input(what: impl Into<String>, why: impl Into<String>) -> Failure {
        Failure::Input {
            what: what.into(),
            why: why.into(),
        }
    }

    pub(crate) fn usage(reason: impl Into<String>, usage: &'static str) -> Failure {
        Failure::Usage {
            reason: reason.into(),
            usage,
        }
    }
}

impl From<io::Error> for Failure {
    /// Only stdout is written through `?`: files report their own errors.
    fn from(e: io::Error) -> Failure {
        Failure::Stdout(e)
    }
}

/// Runs the command line `args` (without the program name) and returns the exit code.
fn run(args: &[OsString]) -> i32 {
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let result = dispatch(args, &mut out);
    // Flush before reporting, so that the lines printed so far come first.
    // A reader that went away by the end changes nothing: the status stays
    // what the command said (a check that found errors still exits 1).
    let result = result.and_then(|code| match out.flush() {
        Err(e) if e.kind() != io::ErrorKind::BrokenPipe => Err(Failure::Stdout(e)),
        _ => Ok(code),
    });
    match result {
        Ok(code) => code,
        Err(failure) => report(failure),
    }
}

fn dispatch(args: &[OsString], out: &mut dyn Write) -> Result<i32, Failure> {
    let Some(first) = args.first() else {
        return Err(Failure::usage("no command given", "aido COMMAND ..."));
    };
    let rest = &args[1..];
    match first.to_str() {
        Some("check") => check::main(rest, out),
        Some("run") => run::main(rest, out),
        Some("chat") => chat::main(rest, out),
        Some("migrate") => migrate::main(rest, out),
        Some("test") => test::main(rest, out),
        Some("nodes") => nodes::main(rest, out),
        Some("bench") => bench::main(rest, out),
        Some("show") => show::main(rest, out),
        Some("help" | "--help" | "-h") => help(rest, out),
        Some("--version" | "-V") => {
            writeln!(out, "aido {}", env!("CARGO_PKG_VERSION"))?;
            Ok(0)
        }
        Some(flag) if flag.starts_with('-') => Err(Failure::usage(
            format!("unknown flag `{flag}`"),
            "aido COMMAND ...",
        )),
        _ => Err(Failure::usage(
            format!("unknown command `{}`", first.to_string_lossy()),
            "aido COMMAND ...",
        )),
    }
}

/// `aido help [COMMAND]`: the overview, or one command's usage.
fn help(rest: &[OsString], out: &mut dyn Write) -> Result<i32, Failure> {
    let text = match rest.first().and_then(|c| c.to_str()) {
        None => USAGE,
        Some("check") => check::USAGE,
        Some("run") => run::USAGE,
        Some("chat") => chat::USAGE,
        Some("migrate") => migrate::USAGE,
        Some("test") => test::USAGE,
        Some("nodes") => nodes::USAGE,
        Some("bench") => bench::USAGE,
        Some("show") => show::USAGE,
        Some(other) => {
            return Err(Failure::usage(
                format!("no help for unknown command `{other}`"),
                "aido help [COMMAND]",
            ));
        }
    };
    write!(out, "{text}")?;
    if !text.ends_with('\n') {
        writeln!(out)?;
    }
    Ok(0)
}

/// `text` with control characters escaped line by line
/// ([`aido::source::excerpt`]): what reaches the terminal is inert.
pub(crate) fn escaped_lines(text: &str) -> String {
    text.split('\n')
        .map(|line| aido::source::excerpt(line, usize::MAX))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Prints `failure` on stderr and returns its exit code.
fn report(failure: Failure) -> i32 {
    let mut err = io::stderr().lock();
    // Nothing useful can be done if stderr itself is closed.
    let (code, _) = match failure {
        Failure::Usage { reason, usage } => (
            2,
            writeln!(
                err,
                "aido: {reason}\nusage: {usage}\nFor more, run `aido --help`."
            ),
        ),
        Failure::Input { what, why } => (
            2,
            writeln!(
                err,
                "aido: {}: {}",
                escaped_lines(&what),
                escaped_lines(&why)
            ),
        ),
        Failure::Compile(rendered) => (1, write!(err, "{rendered}")),
        // The reader went away (`aido run ... | head`): stop quietly.
        Failure::Stdout(e) if e.kind() == io::ErrorKind::BrokenPipe => (0, Ok(())),
        Failure::Stdout(e) => (2, writeln!(err, "aido: stdout: {}", load::io_reason(&e))),
    };
    code
}
