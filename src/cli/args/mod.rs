//! The command line, defined with clap's derive: one file per group of
//! commands (`tree.rs`: check, show, migrate, nodes; `tick.rs`: run, bench;
//! `test.rs`: test), and here the top level, `aido completions`, and the
//! translation of clap's errors into the tool's messages
//! (`aido: unknown flag `--tick``, then the command's usage line).
//!
//! Values are taken as written (`OsString`) and checked by the commands,
//! which name the flag in their errors (`aido: --ticks: expected a positive
//! integer, got `0``); clap checks the shape of the command line: known
//! commands and flags (with a "did you mean" for a misspelt one), a value
//! for every flag that takes one, no flag given twice.

mod chat;
mod shard;
mod store;
mod test;
mod tick;
mod tree;

use std::ffi::{OsStr, OsString};
use std::path::PathBuf;

use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

pub(crate) use chat::{CHAT_USAGE, ChatArgs};
pub(crate) use shard::{SHARD_USAGE, ShardArgs};
pub(crate) use store::{
    AGENTS_USAGE, AgentsArgs, SEND_USAGE, STORE_USAGE, SendArgs, StoreArgs, WORKER_USAGE,
    WorkerArgs,
};
pub(crate) use test::TestArgs;
pub(crate) use tick::{BENCH_USAGE, BenchArgs, RUN_USAGE, RunArgs};
pub(crate) use tree::{
    CHECK_USAGE, CheckArgs, MIGRATE_USAGE, MigrateArgs, NODES_USAGE, NodesArgs, SHOW_USAGE,
    ShowArgs,
};

use super::Failure;
use aido::Value;

/// The usage line of the tool as a whole, for mistakes before a command.
const TOP_USAGE_LINE: &str = "aido COMMAND ...";

/// `aido --help`'s usage: every command's usage line.
const TOP_USAGE: &str = "\
aido check FILE...        compile each tree and report every problem
       aido run TREE [options]   tick a tree and print the db after every tick
       aido chat TREE [options]  talk to a tree a line at a time: replies, :undo, --record
       aido migrate OLD NEW --db SAVE [--save OUT]
                                 carry a saved db over to a new version of its tree
       aido test [PATH...]       run the scenarios (*.test.edn) under PATH
       aido nodes                print every node type and function
       aido bench TREE [options] time ticks of one or many agents
       aido show TREE [--format text|dot|mermaid]
                                 print a tree as an outline, a Graphviz or a Mermaid graph
       aido store init URL       create aido's tables in a PostgreSQL database (feature postgres)
       aido send --store URL AGENT INPUT
                                 append an input map to a stored agent's inbox
       aido agents --store URL [AGENT]
                                 list stored agents, or print one: db, version, inbox, outbox
       aido shard TREE --store URL --shards N [options]
                                 own shards of stored agents and tick them many times a second
       aido completions SHELL    print a completion script for bash, zsh or fish
       aido help [COMMAND]       print this help, or a command's help
       aido --version            print the version";

/// How every command's help is laid out: the usage line first (scripts and
/// tests look for `usage: aido run TREE`), then what it does, its
/// arguments and options, and its exit statuses.
pub(crate) const TEMPLATE: &str = "usage: {usage}\n\n{about-with-newline}\n{all-args}{after-help}";

/// aido: behaviour trees written as EDN data.
#[derive(Parser, Debug)]
#[command(
    name = "aido",
    version,
    about = "aido: behaviour trees written as EDN data",
    override_usage = TOP_USAGE,
    help_template = "{about-with-newline}\nusage: {usage}\n\n{all-args}{after-help}",
    after_help = "Run `aido help COMMAND` for a command's options.\n\n\
                  exit status: 0 ok, 1 the tree has compile errors (test: a scenario failed),\n\
                  2 bad arguments or input files",
    subcommand_required = true,
    disable_help_subcommand = false,
)]
pub(crate) struct Aido {
    #[command(subcommand)]
    pub(crate) command: Command,
}

/// The commands. (Each one's summary is its arguments' doc comment.)
#[derive(Subcommand, Debug)]
#[allow(missing_docs)]
pub(crate) enum Command {
    Check(CheckArgs),
    Run(RunArgs),
    Chat(ChatArgs),
    Migrate(MigrateArgs),
    Test(TestArgs),
    Nodes(NodesArgs),
    Bench(BenchArgs),
    Show(ShowArgs),
    Store(StoreArgs),
    Send(SendArgs),
    Agents(AgentsArgs),
    Shard(ShardArgs),
    Worker(WorkerArgs),
    Completions(CompletionsArgs),
}

/// Print a shell completion script
#[derive(clap::Args, Debug)]
#[command(
    override_usage = "aido completions bash|zsh|fish",
    help_template = TEMPLATE,
    long_about = "Prints a completion script for SHELL on stdout, generated from the \
                  command line's definitions:\n\n  \
                  bash: aido completions bash > ~/.local/share/bash-completion/completions/aido\n  \
                  zsh:  aido completions zsh > ~/.zfunc/_aido   (with ~/.zfunc in $fpath)\n  \
                  fish: aido completions fish > ~/.config/fish/completions/aido.fish",
    after_help = "exit status: 0 printed, 2 bad arguments"
)]
pub(crate) struct CompletionsArgs {
    /// The shell: bash, zsh or fish
    #[arg(value_name = "SHELL")]
    pub(crate) shell: Shell,
}

/// The shells `aido completions` writes scripts for.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Shell {
    /// Bash
    Bash,
    /// Zsh
    Zsh,
    /// Fish
    Fish,
}

/// What a command line asks for.
#[derive(Debug)]
pub(crate) enum Parsed {
    /// A command to run.
    Command(Box<Command>),
    /// Text to print, then exit 0: `--help`, `help COMMAND`, `--version`.
    Print(String),
}

/// Parses the command line (without the program's name).
pub(crate) fn parse(args: &[OsString]) -> Result<Parsed, Failure> {
    let argv = std::iter::once(OsString::from("aido")).chain(args.iter().cloned());
    let matches = match Aido::command().try_get_matches_from(argv) {
        Ok(matches) => matches,
        Err(e) if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) => {
            return Ok(Parsed::Print(e.render().to_string()));
        }
        Err(e) => return Err(translate(&e, args)),
    };
    Aido::from_arg_matches(&matches)
        .map(|aido| Parsed::Command(Box::new(aido.command)))
        .map_err(|e| translate(&e, args))
}

/// Writes the completion script for `shell`.
pub(crate) fn completions(shell: Shell, out: &mut dyn std::io::Write) {
    let mut command = Aido::command();
    let generator = match shell {
        Shell::Bash => clap_complete::Shell::Bash,
        Shell::Zsh => clap_complete::Shell::Zsh,
        Shell::Fish => clap_complete::Shell::Fish,
    };
    clap_complete::generate(generator, &mut command, "aido", out);
}

/// The usage line of the command the arguments name, else the tool's.
fn usage_line(args: &[OsString]) -> &'static str {
    match args.first().and_then(|a| a.to_str()) {
        Some("check") => tree::CHECK_USAGE,
        Some("run") => tick::RUN_USAGE,
        Some("migrate") => tree::MIGRATE_USAGE,
        Some("test") => test::TEST_USAGE,
        Some("nodes") => tree::NODES_USAGE,
        Some("bench") => tick::BENCH_USAGE,
        Some("show") => tree::SHOW_USAGE,
        Some("completions") => "aido completions bash|zsh|fish",
        _ => TOP_USAGE_LINE,
    }
}

/// A string of the error's context, if it has one.
fn context(e: &clap::Error, kind: ContextKind) -> Option<String> {
    match e.get(kind)? {
        ContextValue::String(s) => Some(s.clone()),
        ContextValue::Strings(s) => s.first().cloned(),
        _ => None,
    }
}

/// The flag's name in clap's description of it (`--db <DB>`, `--ticks=3`).
fn flag_name(arg: &str) -> String {
    arg.split([' ', '='])
        .next()
        .unwrap_or(arg)
        .trim_end_matches("...")
        .to_owned()
}

/// Turns clap's error into the tool's: one line saying what is wrong (and a
/// second with "did you mean" when clap has a suggestion), then the
/// command's usage line.
fn translate(e: &clap::Error, args: &[OsString]) -> Failure {
    let usage = usage_line(args);
    let arg = context(e, ContextKind::InvalidArg).map(|a| flag_name(&a));
    let mut reason = match (e.kind(), &arg) {
        (ErrorKind::InvalidSubcommand, _) => format!(
            "unknown command `{}`",
            context(e, ContextKind::InvalidSubcommand).unwrap_or_default()
        ),
        (ErrorKind::UnknownArgument, Some(arg)) => {
            // A value where a switch takes none (`--trace=1`) is not an unknown flag.
            let given = args.iter().filter_map(|a| a.to_str()).find(|a| {
                a.split_once('=')
                    .is_some_and(|(name, _)| name == arg.as_str())
            });
            match given {
                Some(_) => format!("`{arg}` takes no value"),
                None => format!("unknown flag `{arg}`"),
            }
        }
        (ErrorKind::NoEquals | ErrorKind::TooManyValues, Some(arg)) => {
            format!("`{arg}` takes no value")
        }
        (ErrorKind::InvalidValue, Some(arg))
            if context(e, ContextKind::InvalidValue).is_none_or(|v| v.is_empty()) =>
        {
            format!("`{arg}` needs a value")
        }
        (ErrorKind::ArgumentConflict, Some(arg))
            if context(e, ContextKind::PriorArg)
                .map(|a| flag_name(&a))
                .as_ref()
                == Some(arg) =>
        {
            format!("`{arg}` given more than once")
        }
        (ErrorKind::MissingSubcommand | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand, _) => {
            "no command given".to_owned()
        }
        (ErrorKind::MissingRequiredArgument, _) => format!(
            "missing {}",
            context(e, ContextKind::InvalidArg).unwrap_or_else(|| "an argument".to_owned())
        ),
        (ErrorKind::InvalidValue, Some(arg)) => format!(
            "`{arg}`: `{}` is not one of {}",
            context(e, ContextKind::InvalidValue).unwrap_or_default(),
            match e.get(ContextKind::ValidValue) {
                Some(ContextValue::Strings(valid)) => valid.join(", "),
                _ => "the values it takes".to_owned(),
            }
        ),
        _ => {
            // Anything else: clap's own first line, without its prefix.
            let text = e.render().to_string();
            let line = text.lines().next().unwrap_or("bad arguments");
            line.trim_start_matches("error: ").to_owned()
        }
    };
    let suggested = match e.get(ContextKind::SuggestedSubcommand) {
        Some(ContextValue::Strings(s)) => s.first().cloned(),
        Some(ContextValue::String(s)) => Some(s.clone()),
        _ => None,
    }
    .or_else(|| match e.get(ContextKind::SuggestedArg) {
        Some(ContextValue::String(s)) => Some(flag_name(s)),
        Some(ContextValue::Strings(s)) => s.first().map(|s| flag_name(s)),
        _ => None,
    });
    if let Some(suggestion) = suggested {
        reason.push_str(&format!("\n  did you mean `{suggestion}`?"));
    }
    Failure::usage(reason, usage)
}

/// The one positional argument, TREE, of a command that takes a tree.
pub(crate) fn one_tree(
    positional: &[OsString],
    command: &str,
    usage: &'static str,
) -> Result<PathBuf, Failure> {
    match positional {
        [tree] => Ok(PathBuf::from(tree)),
        [] => Err(Failure::usage("no TREE given", usage)),
        [_, extra, ..] => Err(Failure::usage(
            format!(
                "unexpected argument `{}`: {command} takes one TREE",
                extra.to_string_lossy()
            ),
            usage,
        )),
    }
}

/// The value of `flag` as a positive integer, if given.
pub(crate) fn positive(flag: &str, value: Option<&OsStr>) -> Result<Option<u64>, Failure> {
    match text(flag, value)? {
        None => Ok(None),
        Some(text) => match text.parse::<u64>() {
            Ok(n) if n > 0 => Ok(Some(n)),
            Err(e) if *e.kind() == std::num::IntErrorKind::PosOverflow => Err(Failure::input(
                flag,
                format!("`{text}` is too large (at most {})", u64::MAX),
            )),
            _ => Err(Failure::input(
                flag,
                format!("expected a positive integer, got `{text}`"),
            )),
        },
    }
}

/// The value of `flag` as a number above 0 (seconds, a rate), if given.
pub(crate) fn positive_number(flag: &str, value: Option<&OsStr>) -> Result<Option<f64>, Failure> {
    match text(flag, value)? {
        None => Ok(None),
        Some(text) => match text.parse::<f64>() {
            Ok(n) if n.is_finite() && n > 0.0 => Ok(Some(n)),
            _ => Err(Failure::input(
                flag,
                format!("expected a number above 0, got `{text}`"),
            )),
        },
    }
}

/// The value of `flag` as an integer, if given.
pub(crate) fn integer(flag: &str, value: Option<&OsStr>) -> Result<Option<i64>, Failure> {
    match text(flag, value)? {
        None => Ok(None),
        Some(text) => text.parse::<i64>().map(Some).map_err(|e| match e.kind() {
            std::num::IntErrorKind::PosOverflow | std::num::IntErrorKind::NegOverflow => {
                Failure::input(
                    flag,
                    format!("`{text}` is out of range ({} to {})", i64::MIN, i64::MAX),
                )
            }
            _ => Failure::input(flag, format!("expected an integer, got `{text}`")),
        }),
    }
}

/// The value of `flag` as a keyword (`:input` or `input`), if given.
pub(crate) fn keyword(flag: &str, value: Option<&OsStr>) -> Result<Option<Value>, Failure> {
    let Some(text) = text(flag, value)? else {
        return Ok(None);
    };
    let name = text.strip_prefix(':').unwrap_or(text);
    match aido::read::read_value(&format!(":{name}")) {
        Ok(value @ Value::Keyword(_)) => Ok(Some(value)),
        _ => Err(Failure::input(
            flag,
            format!("expected a keyword such as :input, got `{text}`"),
        )),
    }
}

/// The value given for `flag` as text; a value that is not UTF-8 is an error.
pub(crate) fn text<'a>(flag: &str, value: Option<&'a OsStr>) -> Result<Option<&'a str>, Failure> {
    match value {
        None => Ok(None),
        Some(v) => v.to_str().map(Some).ok_or_else(|| {
            Failure::input(
                flag,
                format!("`{}` is not valid UTF-8", v.to_string_lossy()),
            )
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reason(words: &[&str]) -> String {
        let args: Vec<OsString> = words.iter().map(OsString::from).collect();
        match parse(&args) {
            Err(Failure::Usage { reason, .. }) => reason,
            other => panic!("expected a usage error, got {other:?}"),
        }
    }

    #[test]
    fn the_definitions_are_consistent() {
        Aido::command().debug_assert();
    }

    #[test]
    fn misspelt_flags_and_commands_get_a_suggestion() {
        assert_eq!(
            reason(&["run", "t.edn", "--tick", "3"]),
            "unknown flag `--tick`\n  did you mean `--ticks`?"
        );
        assert_eq!(
            reason(&["chek", "t.edn"]),
            "unknown command `chek`\n  did you mean `check`?"
        );
        assert_eq!(reason(&["run", "t.edn", "--zzz"]), "unknown flag `--zzz`");
    }

    #[test]
    fn the_shape_of_the_command_line_is_checked() {
        assert_eq!(
            reason(&["run", "t.edn", "--trace=1"]),
            "`--trace` takes no value"
        );
        assert_eq!(reason(&["run", "t.edn", "--db"]), "`--db` needs a value");
        assert_eq!(
            reason(&["run", "t.edn", "--seed", "1", "--seed=2"]),
            "`--seed` given more than once"
        );
        assert_eq!(reason(&[]), "no command given");
    }

    #[test]
    fn flags_and_positionals_mix_in_any_order() {
        let args: Vec<OsString> = ["run", "--seed", "-4", "a", "--", "--ticks"]
            .iter()
            .map(OsString::from)
            .collect();
        let Ok(Parsed::Command(command)) = parse(&args) else {
            panic!("parsed");
        };
        let Command::Run(run) = *command else {
            panic!("a run");
        };
        assert_eq!(run.paths, ["a", "--ticks"]);
        assert_eq!(run.seed.as_deref(), Some(OsStr::new("-4")));
    }
}
