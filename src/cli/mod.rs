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
mod chat_input;
mod check;
mod load;
mod migrate;
mod nodes;
mod run;
mod save;
mod shard;
mod show;
mod store;
mod test;
mod worker;

use std::ffi::OsString;
use std::io::{self, BufWriter, Write};

pub use alloc_count::AllocCounter;
pub use context::{Cli, main_with};
pub(crate) use context::{handler_programs, registry, seconds, use_model};

mod context;

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
    use args::Command;
    let command = match args::parse(args)? {
        args::Parsed::Command(command) => command,
        args::Parsed::Print(text) => {
            write!(out, "{text}")?;
            if !text.ends_with('\n') {
                writeln!(out)?;
            }
            return Ok(0);
        }
    };
    match &*command {
        Command::Check(a) => check::main(a, out),
        Command::Run(a) => run::main(a, out),
        Command::Chat(a) => chat::main(a, out),
        Command::Migrate(a) => migrate::main(a, out),
        Command::Test(a) => test::main(a, out),
        Command::Nodes(a) => nodes::main(a, out),
        Command::Bench(a) => bench::main(a, out),
        Command::Show(a) => show::main(a, out),
        Command::Store(a) => store::store_main(a, out),
        Command::Send(a) => store::send_main(a, out),
        Command::Agents(a) => store::agents_main(a, out),
        Command::Shard(a) => shard::main(a, out),
        Command::Worker(a) => worker::worker_main(a, out),
        Command::Completions(a) => {
            args::completions(a.shell, out);
            Ok(0)
        }
    }
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
