//! What a program hands the CLI: the registry its trees are compiled
//! against and, optionally, its allocation counter. Commands find them
//! through [`registry`] for the duration of one [`Cli::run`].

use std::cell::RefCell;
use std::ffi::OsString;

use aido::Registry;

use super::alloc_count::{self, AllocCounter};

/// The `aido` tool with an application's node types and functions.
///
/// ```
/// use aido::Registry;
/// use aido::cli::Cli;
///
/// let cli = Cli::new(Registry::new());
/// let args: Vec<std::ffi::OsString> = vec!["--version".into()];
/// assert_eq!(cli.run(&args), 0);
/// ```
#[derive(Debug, Clone)]
pub struct Cli {
    registry: Registry,
    alloc_counter: Option<AllocCounter>,
}

thread_local! {
    static REGISTRY: RefCell<Option<Registry>> = const { RefCell::new(None) };
}

impl Cli {
    /// The tool compiling trees against `registry` (which should start from
    /// [`Registry::new`], so that the built-ins are there).
    pub fn new(registry: Registry) -> Cli {
        Cli {
            registry,
            alloc_counter: None,
        }
    }

    /// Hands over the program's allocation counter, so that `aido bench`
    /// reports the bytes a db holds and the allocations a tick makes
    /// (without one it says that memory was not measured).
    pub fn alloc_counter(mut self, counter: AllocCounter) -> Cli {
        self.alloc_counter = Some(counter);
        self
    }

    /// Runs the command line `args` (without the program's name), printing
    /// to stdout and stderr, and returns the exit code.
    pub fn run(&self, args: &[OsString]) -> i32 {
        let old_registry = REGISTRY.with(|r| r.replace(Some(self.registry.clone())));
        let old_counter = alloc_count::install(self.alloc_counter);
        let code = super::run(args);
        alloc_count::install(old_counter);
        REGISTRY.with(|r| r.replace(old_registry));
        code
    }

    /// Runs the process's command line and exits with its code.
    pub fn main(&self) -> ! {
        let args: Vec<OsString> = std::env::args_os().skip(1).collect();
        std::process::exit(self.run(&args))
    }
}

/// The `aido` tool with `registry`'s node types and functions: runs the
/// process's command line and exits. A program's whole `main` can be this
/// one call.
pub fn main_with(registry: Registry) -> ! {
    Cli::new(registry).main()
}

/// The registry of the running command: the program's, else the built-ins.
pub(crate) fn registry() -> Registry {
    REGISTRY.with(|r| r.borrow().clone()).unwrap_or_default()
}

/// Adds the node model at `path`, if one is given, to the registry of the
/// running command (`--nodes MODEL`).
pub(crate) fn use_model(path: Option<&std::ffi::OsStr>) -> Result<(), super::Failure> {
    let Some(path) = path else {
        return Ok(());
    };
    let mut registry = registry();
    super::test::declare_model(&mut registry, std::path::Path::new(path))?;
    REGISTRY.with(|r| r.replace(Some(registry)));
    Ok(())
}

/// A flag's number of seconds above 0 (`--handler-timeout`, `--idle`).
pub(crate) fn seconds(
    flag: &str,
    value: Option<&std::ffi::OsStr>,
) -> Result<Option<std::time::Duration>, super::Failure> {
    match super::args::text(flag, value)? {
        None => Ok(None),
        Some(text) => text
            .parse::<f64>()
            .ok()
            .filter(|s| *s > 0.0)
            .and_then(|s| std::time::Duration::try_from_secs_f64(s).ok())
            .map(Some)
            .ok_or_else(|| {
                super::Failure::input(
                    flag,
                    format!("expected a number of seconds above 0, got `{text}`"),
                )
            }),
    }
}

/// The handler programs of `--handler ACTION=COMMAND` (repeatable) and
/// `--handler-timeout S`, with the actions they do; `None` without a
/// `--handler`.
pub(crate) fn handler_programs(
    flags: &[std::ffi::OsString],
    timeout: Option<&std::ffi::OsStr>,
) -> Result<Option<(aido::handler::Handlers, Vec<aido::value::Keyword>)>, super::Failure> {
    let (options, programs) = handler_flags(flags, timeout)?;
    if programs.is_empty() {
        return Ok(None);
    }
    let mut handlers = aido::handler::Handlers::new(options);
    let mut actions = Vec::new();
    for (action, program) in programs {
        handlers.insert(action, program);
        actions.push(action);
    }
    Ok(Some((handlers, actions)))
}

/// The `--handler ACTION=COMMAND` flags and `--handler-timeout S`, checked:
/// the handlers' options and each action's program, in the order given.
pub(crate) fn handler_flags(
    flags: &[std::ffi::OsString],
    timeout: Option<&std::ffi::OsStr>,
) -> Result<
    (
        aido::handler::HandlerOptions,
        Vec<(aido::value::Keyword, aido::handler::Program)>,
    ),
    super::Failure,
> {
    use aido::handler::{HandlerOptions, Program};
    let timeout = seconds("--handler-timeout", timeout)?;
    let mut programs = Vec::new();
    for flag in flags {
        let text = super::args::text("--handler", Some(flag))?.unwrap_or_default();
        let (action, program) = Program::parse_flag(text)
            .map_err(|e| super::Failure::input("--handler", e.to_string()))?;
        programs.push((action, program));
    }
    let options = HandlerOptions {
        timeout,
        ..HandlerOptions::default()
    };
    Ok((options, programs))
}
