//! Handlers: the programs that do a deferred action's work.
//!
//! A `:defer` node emits a launch request ([`Request`]) and waits for a
//! completion under `:aido/results`. [`Handlers`] maps action names
//! (`:llm/ask`) to programs and turns each launch into a running program
//! and each finished program into a [`Completion`], in the exact form a
//! tick takes:
//!
//! - the program is started directly ([`std::process::Command`], no shell:
//!   its path and arguments are passed as given, never re-parsed), in a
//!   process group of its own;
//! - it reads one JSON object on standard input: `{"request": 3, "action":
//!   ":llm/ask", "node": ":ask", "options": {..}}`, plus `"idempotency-key":
//!   "AGENT/3"` when the handlers serve a named agent ([`Handlers::agent`]),
//!   written with the plain JSON mapping of `value::json`;
//! - what it prints on standard output is read as one JSON value (the
//!   project's JSON reader, at most [`HandlerOptions::max_output`] bytes)
//!   and becomes the completion's `:result` (nothing printed: no
//!   `:result`); exit status 0 makes it `:success`, anything else `:failure`,
//!   with its standard error (at most [`HandlerOptions::max_message`]
//!   bytes, shown escaped) as the `:message`;
//! - a cancel request, a timeout ([`HandlerOptions::timeout`]) or too much
//!   output stops the program's process group: SIGTERM, then SIGKILL after
//!   [`HandlerOptions::grace`]; every program is reaped, so none is left
//!   as a zombie, what it started and left running when it exits is killed
//!   with its group, and dropping [`Handlers`] stops and reaps them all;
//! - a cancelled request never completes: its program's late answer is
//!   thrown away, so it cannot be taken for the answer to a newer question;
//! - a launch whose action has no handler is a [`HandlerNotice`] and stays
//!   in flight (the host may answer it some other way).
//!
//! Programs run concurrently, each watched by its own threads; the host
//! goes on ticking and collects completions with [`Handlers::poll`] or
//! [`Handlers::wait`], then hands them to the next tick with [`deliver`].
//!
//! Handlers are the host's edge: nothing here runs inside a tick, which
//! stays a pure function of db and tree. Signals need Unix; elsewhere a
//! cancelled or timed-out program is left to finish and its answer dropped.

use std::collections::HashMap;
use std::ffi::OsString;
use std::fmt;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStderr, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::source::{excerpt, io_reason};
use crate::tick::{Request, Status};
use crate::value::{JsonMapping, Keyword, Map, Value};

/// The longest excerpt of a program's standard error a message quotes, in
/// characters.
const MESSAGE_CHARS: usize = 500;

/// A program that handles an action: a path and its arguments, passed to
/// the operating system as they are (no shell, no splitting, no globbing).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Program {
    path: PathBuf,
    args: Vec<OsString>,
    env: Vec<(OsString, OsString)>,
}

impl Program {
    /// The program at `path`, with no arguments. A path without a slash is
    /// looked up on `PATH`, as [`Command::new`] does.
    pub fn new(path: impl Into<PathBuf>) -> Program {
        Program {
            path: path.into(),
            args: Vec::new(),
            env: Vec::new(),
        }
    }

    /// Sets an environment variable for the program (it inherits the
    /// host's environment otherwise).
    #[must_use]
    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Program {
        self.env.push((key.into(), value.into()));
        self
    }

    /// Adds one argument, passed as it is.
    #[must_use]
    pub fn arg(mut self, arg: impl Into<OsString>) -> Program {
        self.args.push(arg.into());
        self
    }

    /// The program's path.
    pub fn path(&self) -> &std::path::Path {
        &self.path
    }

    /// Parses `ACTION=COMMAND`, the command line's `--handler` flag: the
    /// action's name (a keyword, with or without its colon) and the program's
    /// path, taken whole (a space is part of the path, never a separator).
    ///
    /// ```
    /// use aido::handler::Program;
    /// let (action, program) = Program::parse_flag("llm/ask=./ask.sh").unwrap();
    /// assert_eq!(action.as_str(), "llm/ask");
    /// assert_eq!(program.path(), std::path::Path::new("./ask.sh"));
    /// assert!(Program::parse_flag("llm/ask").is_err());
    /// ```
    pub fn parse_flag(flag: &str) -> Result<(Keyword, Program), FlagError> {
        let Some((action, command)) = flag.split_once('=') else {
            return Err(FlagError::NoEquals);
        };
        let action = action.strip_prefix(':').unwrap_or(action);
        // The reader decides what a keyword is.
        let keyword = match crate::read::read_value(&format!(":{action}")) {
            Ok(Value::Keyword(keyword)) => keyword,
            _ => return Err(FlagError::BadAction(excerpt(action, 80))),
        };
        if command.is_empty() {
            return Err(FlagError::NoCommand);
        }
        Ok((keyword, Program::new(command)))
    }
}

/// Why a `--handler ACTION=COMMAND` flag was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum FlagError {
    /// There is no `=`.
    NoEquals,
    /// The action is not a keyword's name (shown escaped).
    BadAction(String),
    /// Nothing follows the `=`.
    NoCommand,
}

impl fmt::Display for FlagError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FlagError::NoEquals => f.write_str("expected ACTION=COMMAND, as in llm/ask=./ask.sh"),
            FlagError::BadAction(action) => write!(f, "`{action}` is not an action's name"),
            FlagError::NoCommand => f.write_str("no program after `=`"),
        }
    }
}

impl std::error::Error for FlagError {}

/// How handlers run: the limits of time and output.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct HandlerOptions {
    /// How long a program may take before it is stopped and its request
    /// fails ([`HandlerFailure::Timeout`]); `None` (the default): no limit.
    pub timeout: Option<Duration>,
    /// How long a program has to exit after SIGTERM before it gets
    /// SIGKILL (default 2 s).
    pub grace: Duration,
    /// The most a program may print on standard output, in bytes (default
    /// 1 MiB); a program that prints more is stopped and fails.
    pub max_output: u64,
    /// The most of a program's standard error kept for the message, in
    /// bytes (default 64 KiB); the rest is read and thrown away.
    pub max_message: u64,
}

impl Default for HandlerOptions {
    fn default() -> Self {
        HandlerOptions {
            timeout: None,
            grace: Duration::from_secs(2),
            max_output: 1 << 20,
            max_message: 64 << 10,
        }
    }
}

/// Why a handled request failed: its completion's `:reason` and message.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum HandlerFailure {
    /// The program could not be started (`H0001`).
    Spawn {
        /// The program's path, escaped.
        program: String,
        /// Why, in a few words.
        reason: String,
    },
    /// The program exited with a status other than 0, or was killed by a
    /// signal it was not sent by the handlers (`H0002`).
    Exit {
        /// Its exit code, if it exited.
        code: Option<i32>,
        /// The signal that ended it, if one did (Unix).
        signal: Option<i32>,
        /// The start of its standard error, escaped and trimmed.
        stderr: String,
    },
    /// The program took longer than [`HandlerOptions::timeout`] (`H0003`).
    Timeout {
        /// The limit, in milliseconds.
        limit_ms: u128,
    },
    /// The program printed more than [`HandlerOptions::max_output`] bytes
    /// (`H0004`).
    TooMuchOutput {
        /// The limit, in bytes.
        limit: u64,
    },
    /// What the program printed is not one JSON value (or not UTF-8)
    /// (`H0005`).
    BadOutput {
        /// What is wrong with it, with its line and column.
        reason: String,
    },
    /// The request cannot be written as JSON (a NaN among its options, say)
    /// (`H0006`); the program is not started.
    BadRequest {
        /// Why.
        reason: String,
    },
    /// Reading the program's output or waiting for it failed (`H0007`).
    Io {
        /// Why, in a few words.
        reason: String,
    },
}

impl HandlerFailure {
    /// A stable code: `H0001` (cannot start) to `H0007` (I/O).
    pub fn code(&self) -> &'static str {
        match self {
            HandlerFailure::Spawn { .. } => "H0001",
            HandlerFailure::Exit { .. } => "H0002",
            HandlerFailure::Timeout { .. } => "H0003",
            HandlerFailure::TooMuchOutput { .. } => "H0004",
            HandlerFailure::BadOutput { .. } => "H0005",
            HandlerFailure::BadRequest { .. } => "H0006",
            HandlerFailure::Io { .. } => "H0007",
        }
    }

    /// The completion's `:reason`: `:spawn`, `:exit`, `:timeout`,
    /// `:too-much-output`, `:bad-output`, `:bad-request` or `:io`.
    pub fn reason(&self) -> &'static str {
        match self {
            HandlerFailure::Spawn { .. } => "spawn",
            HandlerFailure::Exit { .. } => "exit",
            HandlerFailure::Timeout { .. } => "timeout",
            HandlerFailure::TooMuchOutput { .. } => "too-much-output",
            HandlerFailure::BadOutput { .. } => "bad-output",
            HandlerFailure::BadRequest { .. } => "bad-request",
            HandlerFailure::Io { .. } => "io",
        }
    }
}

impl fmt::Display for HandlerFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HandlerFailure::Spawn { program, reason } => {
                write!(f, "cannot start the handler `{program}`: {reason}")
            }
            HandlerFailure::Exit {
                code,
                signal,
                stderr,
            } => {
                match (code, signal) {
                    (Some(code), _) => write!(f, "the handler exited with status {code}")?,
                    (None, Some(signal)) => write!(f, "the handler was killed by signal {signal}")?,
                    (None, None) => f.write_str("the handler failed")?,
                }
                if !stderr.is_empty() {
                    write!(f, ": {stderr}")?;
                }
                Ok(())
            }
            HandlerFailure::Timeout { limit_ms } => {
                write!(
                    f,
                    "the handler took longer than {limit_ms} ms and was stopped"
                )
            }
            HandlerFailure::TooMuchOutput { limit } => write!(
                f,
                "the handler printed more than {limit} bytes and was stopped"
            ),
            HandlerFailure::BadOutput { reason } => {
                write!(f, "the handler's output is not one JSON value: {reason}")
            }
            HandlerFailure::BadRequest { reason } => {
                write!(f, "the request cannot be written as JSON: {reason}")
            }
            HandlerFailure::Io { reason } => write!(f, "the handler's output: {reason}"),
        }
    }
}

impl std::error::Error for HandlerFailure {}

/// The answer to one launch: the request it answers and how it ended. The
/// one completion type: a handler program's answer, a scripted one in a
/// conversation scenario and a host's own ([`crate::session::Handlers`])
/// are all this.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Completion {
    /// The `:defer` node's id: the key under `:aido/results`.
    pub node: Value,
    /// The request answered: an answer to a request no longer in flight is
    /// dropped by the tick, never taken for a newer one.
    pub request: i64,
    /// The action.
    pub action: Keyword,
    /// [`Status::Success`] or [`Status::Failure`].
    pub status: Status,
    /// The completion's `:result`: what the program printed, read as JSON
    /// (`None`: it printed nothing); for a program that failed, `{:reason
    /// r, :code "H000n", :message "..."}`, so a `:defer`'s `:into` can say
    /// why.
    pub result: Option<Value>,
    /// Why the program failed, as typed data (a program's failure only).
    pub failure: Option<HandlerFailure>,
}

impl Completion {
    /// The answer `result` with `status` to `request`, as a host or a
    /// recorded conversation gives it.
    pub fn new(request: &Request, status: Status, result: Option<Value>) -> Completion {
        Completion {
            node: request.node.clone(),
            request: request.request,
            action: request.action,
            status,
            result,
            failure: None,
        }
    }

    /// The failure of `request`'s program: `:failure`, with the failure as
    /// the `:result` map.
    pub fn failed(request: &Request, failure: HandlerFailure) -> Completion {
        let result = Value::map_from([
            (Value::keyword("reason"), Value::keyword(failure.reason())),
            (Value::keyword("code"), Value::string(failure.code())),
            (
                Value::keyword("message"),
                Value::string(&failure.to_string()),
            ),
        ]);
        Completion {
            failure: Some(failure),
            ..Completion::new(request, Status::Failure, Some(result))
        }
    }

    /// The completion as a tick takes it under `:aido/results` (keyed by
    /// [`Completion::node`]): `{:request 3, :status :success, :result x}`,
    /// or `{:request 3, :status :failure, :result {:reason :exit, :code
    /// "H0002", :message "..."}}`.
    pub fn to_value(&self) -> Value {
        let status = match self.status {
            Status::Success => "success",
            _ => "failure",
        };
        let mut map = Map::default();
        map.insert(Value::keyword("request"), Value::Int(self.request));
        map.insert(Value::keyword("status"), Value::keyword(status));
        if let Some(result) = &self.result {
            map.insert(Value::keyword("result"), result.clone());
        }
        Value::Map(Box::new(map))
    }
}

/// Puts completions into `db` under `:aido/results`, for the next tick to
/// take, and hands back those that must wait: one whose node already has a
/// completion waiting there goes in after the tick that takes that one.
/// A db that is not a map, or whose `:aido/results` is not a map, takes
/// nothing (the tick reports such a db).
pub fn deliver(db: &mut Value, completions: Vec<Completion>) -> Vec<Completion> {
    let mut later = Vec::new();
    let key = Value::keyword("aido/results");
    let Some(map) = db.as_map_mut() else {
        return completions;
    };
    let results = map.entry(key).or_insert_with(Value::map);
    let Some(results) = results.as_map_mut() else {
        return completions;
    };
    for completion in completions {
        if results.contains_key(&completion.node) {
            later.push(completion);
        } else {
            results.insert(completion.node.clone(), completion.to_value());
        }
    }
    later
}

/// Something the host should know that is not a completion.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum HandlerNotice {
    /// A launch whose action has no handler: it stays in flight, for the
    /// host to answer some other way (or a cancel to end).
    NoHandler {
        /// The launch.
        request: Request,
    },
}

impl fmt::Display for HandlerNotice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HandlerNotice::NoHandler { request } => write!(
                f,
                "no handler for {} (request {} of node {}): it stays in flight",
                request.action, request.request, request.node
            ),
        }
    }
}

/// Why a program is being stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    Cancel,
    Timeout,
    TooMuchOutput,
}

/// What a program's threads share: its pid, whether it has exited (and so
/// must no longer be signalled), and whether it is to be stopped.
#[derive(Debug, Default)]
struct ControlState {
    pid: Option<u32>,
    exited: bool,
    stop: Option<Stop>,
}

#[derive(Debug, Default)]
struct Control {
    state: Mutex<ControlState>,
    changed: Condvar,
}

impl Control {
    fn lock(&self) -> MutexGuard<'_, ControlState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Asks for the program to be stopped (the first reason wins).
    fn stop(&self, why: Stop) {
        let mut state = self.lock();
        if state.stop.is_none() {
            state.stop = Some(why);
        }
        self.changed.notify_all();
    }
}

/// What a program's worker thread hands back when it has been reaped.
struct Finished {
    request: i64,
    /// Which launch of that request (see [`Job::serial`]).
    serial: u64,
    outcome: Result<Option<Value>, HandlerFailure>,
}

/// One program in flight (or being stopped).
struct Job {
    request: Request,
    /// Unique among the launches of these handlers: a program replaced
    /// under the same request id cannot answer for its replacement.
    serial: u64,
    control: Arc<Control>,
    cancelled: bool,
    threads: Vec<JoinHandle<()>>,
}

/// Action names mapped to the programs that handle them, and the programs
/// running now. See the module documentation.
///
/// ```no_run
/// use aido::handler::{Handlers, HandlerOptions, Program, deliver};
/// use aido::{Registry, Value, compile_str, run_tick};
/// use std::time::Duration;
///
/// let tree = compile_str("ask.edn", "[:defer {:id :ask :action :llm/ask :into :reply}]", &Registry::new()).unwrap();
/// let mut handlers = Handlers::new(HandlerOptions::default());
/// handlers.insert(aido::value::Keyword::new("llm/ask"), Program::new("./ask.sh"));
/// let mut db = Value::map();
/// loop {
///     let tick = run_tick(db, &tree);
///     let notices = handlers.submit(tick.launches(), tick.cancels());
///     db = tick.db;
///     if tick.status != aido::Status::Running { break; }
///     let completions = handlers.wait(Duration::from_secs(30));
///     let _later = deliver(&mut db, completions);
/// }
/// ```
pub struct Handlers {
    programs: HashMap<Keyword, Program>,
    options: HandlerOptions,
    agent: Option<String>,
    jobs: HashMap<i64, Job>,
    ready: Vec<Completion>,
    sender: Sender<Finished>,
    receiver: Receiver<Finished>,
    thrown_away: u64,
    launched: u64,
}

impl fmt::Debug for Handlers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Handlers")
            .field("programs", &self.programs)
            .field("options", &self.options)
            .field("agent", &self.agent)
            .field("running", &self.jobs.len())
            .finish_non_exhaustive()
    }
}

impl Handlers {
    /// No handlers yet, with these limits.
    pub fn new(options: HandlerOptions) -> Handlers {
        let (sender, receiver) = channel();
        Handlers {
            programs: HashMap::new(),
            options,
            agent: None,
            jobs: HashMap::new(),
            ready: Vec::new(),
            sender,
            receiver,
            thrown_away: 0,
            launched: 0,
        }
    }

    /// Handles `action` with `program` (replacing any earlier one).
    pub fn insert(&mut self, action: Keyword, program: Program) -> &mut Handlers {
        self.programs.insert(action, program);
        self
    }

    /// The agent these handlers serve: each request then carries the
    /// idempotency key `"AGENT/REQUEST"`, unique across agents, so an
    /// external effect done twice (a crash and a replay) can be recognised.
    pub fn agent(&mut self, agent: impl Into<String>) -> &mut Handlers {
        self.agent = Some(agent.into());
        self
    }

    /// Whether `action` has a handler.
    pub fn handles(&self, action: Keyword) -> bool {
        self.programs.contains_key(&action)
    }

    /// Hands a tick's launches and cancels over: each cancel stops its
    /// request's program (its answer will never be delivered), then each
    /// launch starts its handler. Returns the launches no handler took.
    pub fn submit(&mut self, launches: &[Request], cancels: &[Request]) -> Vec<HandlerNotice> {
        for request in cancels {
            self.cancel(request);
        }
        launches
            .iter()
            .filter_map(|request| self.launch(request).err())
            .collect()
    }

    /// Starts the handler of `request`'s action. A program that cannot be
    /// started, or a request that cannot be written as JSON, is a failed
    /// completion (ready at the next [`poll`](Handlers::poll)); an action
    /// without a handler is a notice, and nothing is started.
    pub fn launch(&mut self, request: &Request) -> Result<(), HandlerNotice> {
        let Some(program) = self.programs.get(&request.action) else {
            return Err(HandlerNotice::NoHandler {
                request: request.clone(),
            });
        };
        let input = match self.request_json(request) {
            Ok(input) => input,
            Err(failure) => {
                self.ready.push(Completion::failed(request, failure));
                return Ok(());
            }
        };
        let mut command = Command::new(&program.path);
        command
            .args(&program.args)
            .envs(program.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        #[cfg(unix)]
        {
            // A group of its own, so that a stop reaches what it started too
            // (the `sleep` of a shell script).
            use std::os::unix::process::CommandExt;
            command.process_group(0);
        }
        let child = match command.spawn() {
            Ok(child) => child,
            Err(e) => {
                let failure = HandlerFailure::Spawn {
                    program: excerpt(&program.path.to_string_lossy(), 200),
                    reason: io_reason(&e),
                };
                self.ready.push(Completion::failed(request, failure));
                return Ok(());
            }
        };
        let control = Arc::new(Control::default());
        control.lock().pid = Some(child.id());
        self.launched += 1;
        let serial = self.launched;
        let threads = start(
            child,
            input,
            (request.request, serial),
            Arc::clone(&control),
            self.options.clone(),
            self.sender.clone(),
        );
        // A request id already in flight (two dbs sharing these handlers)
        // would lose track of a program: stop the older one.
        if let Some(old) = self.jobs.insert(
            request.request,
            Job {
                request: request.clone(),
                serial,
                control,
                cancelled: false,
                threads,
            },
        ) {
            old.control.stop(Stop::Cancel);
            self.thrown_away += 1;
            join(old.threads);
        }
        Ok(())
    }

    /// Stops the program handling `request`, if one runs: it will never
    /// complete. A request no program handles is ignored.
    pub fn cancel(&mut self, request: &Request) {
        if let Some(job) = self.jobs.get_mut(&request.request)
            && job.request.node == request.node
        {
            job.cancelled = true;
            job.control.stop(Stop::Cancel);
        }
        // A failure made at launch (no program to start) and not yet polled.
        let before = self.ready.len();
        self.ready
            .retain(|c| !(c.request == request.request && c.node == request.node));
        self.thrown_away += (before - self.ready.len()) as u64;
    }

    /// The completions ready now, without waiting; the answers of
    /// cancelled requests are thrown away here.
    pub fn poll(&mut self) -> Vec<Completion> {
        let mut out = std::mem::take(&mut self.ready);
        while let Ok(finished) = self.receiver.try_recv() {
            out.extend(self.finish(finished));
        }
        out
    }

    /// Waits until at least one completion is ready, or `timeout` has
    /// passed, and returns those ready (possibly none). Returns at once
    /// when no program runs.
    pub fn wait(&mut self, timeout: Duration) -> Vec<Completion> {
        self.wait_until_ready(timeout);
        self.poll()
    }

    /// Waits as [`wait`](Handlers::wait) does, but keeps the completions
    /// for the next [`poll`](Handlers::poll); returns whether one is ready.
    /// For a loop that blocks in one place and collects in another.
    pub fn wait_until_ready(&mut self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        while self.ready.is_empty() && self.busy() {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.receiver.recv_timeout(left) {
                Ok(finished) => {
                    let done = self.finish(finished);
                    self.ready.extend(done);
                }
                Err(_) => break,
            }
        }
        !self.ready.is_empty()
    }

    /// Whether a program whose answer will be delivered is still at work
    /// (cancelled ones, whose answers are thrown away, do not count).
    pub fn busy(&self) -> bool {
        self.jobs.values().any(|job| !job.cancelled)
    }

    /// Waits until every program, cancelled ones included, has exited and
    /// been reaped, or `timeout` has passed; returns whether none is left.
    /// Completions that arrive meanwhile are kept for the next
    /// [`poll`](Handlers::poll).
    pub fn settle(&mut self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        while !self.jobs.is_empty() {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.receiver.recv_timeout(left) {
                Ok(finished) => {
                    let done = self.finish(finished);
                    self.ready.extend(done);
                }
                Err(_) => return false,
            }
        }
        true
    }

    /// The requests whose programs have not been reaped yet (cancelled ones
    /// included), in no particular order.
    pub fn running(&self) -> Vec<i64> {
        self.jobs.keys().copied().collect()
    }

    /// The process id of the program handling `request`, while it runs.
    pub fn pid(&self, request: i64) -> Option<u32> {
        let job = self.jobs.get(&request)?;
        let state = job.control.lock();
        if state.exited { None } else { state.pid }
    }

    /// How many answers were thrown away because their request had been
    /// cancelled.
    pub fn thrown_away(&self) -> u64 {
        self.thrown_away
    }

    fn finish(&mut self, finished: Finished) -> Option<Completion> {
        if self.jobs.get(&finished.request)?.serial != finished.serial {
            // A replaced program (its replacement still runs).
            return None;
        }
        let job = self.jobs.remove(&finished.request)?;
        join(job.threads);
        if job.cancelled {
            self.thrown_away += 1;
            return None;
        }
        let request = &job.request;
        Some(match finished.outcome {
            Ok(result) => Completion::new(request, Status::Success, result),
            Err(failure) => Completion::failed(request, failure),
        })
    }

    /// The JSON object a program reads on standard input.
    fn request_json(&self, request: &Request) -> Result<Vec<u8>, HandlerFailure> {
        let mut map = Map::default();
        map.insert(Value::keyword("request"), Value::Int(request.request));
        map.insert(Value::keyword("action"), Value::Keyword(request.action));
        map.insert(Value::keyword("node"), request.node.clone());
        map.insert(
            Value::keyword("options"),
            Value::Map(Box::new(request.options.clone())),
        );
        if let Some(agent) = &self.agent {
            map.insert(
                Value::keyword("idempotency-key"),
                Value::string(&format!("{agent}/{}", request.request)),
            );
        }
        let json = Value::Map(Box::new(map))
            .to_json_with(JsonMapping::Plain)
            .map_err(|e| HandlerFailure::BadRequest {
                reason: e.to_string(),
            })?;
        let mut bytes = json.to_string().into_bytes();
        bytes.push(b'\n');
        Ok(bytes)
    }
}

impl Drop for Handlers {
    /// Stops every program still running and reaps it.
    fn drop(&mut self) {
        for job in self.jobs.values() {
            job.control.stop(Stop::Cancel);
        }
        for (_, job) in self.jobs.drain() {
            join(job.threads);
        }
    }
}

fn join(threads: Vec<JoinHandle<()>>) {
    for thread in threads {
        let _ = thread.join();
    }
}

/// Starts the threads that feed, read, watch and reap one program.
fn start(
    mut child: Child,
    input: Vec<u8>,
    (request, serial): (i64, u64),
    control: Arc<Control>,
    options: HandlerOptions,
    sender: Sender<Finished>,
) -> Vec<JoinHandle<()>> {
    // The pipes' threads end when every process holding a pipe has closed
    // it; they are not joined, so a process that escaped the group (with
    // `setsid`) and holds a pipe cannot hold the handlers up.
    if let Some(mut stdin) = child.stdin.take() {
        // A program that does not read its input (or exits first) is fine.
        std::thread::spawn(move || {
            let _ = stdin.write_all(&input);
        });
    }
    let (stderr_sender, stderr_receiver) = channel();
    let stderr = child.stderr.take();
    let max_message = options.max_message;
    std::thread::spawn(move || {
        let _ = stderr_sender.send(read_stderr(stderr, max_message));
    });
    let (stdout_sender, stdout_receiver) = channel();
    let stdout = child.stdout.take();
    let max_output = options.max_output;
    let stdout_control = Arc::clone(&control);
    std::thread::spawn(move || {
        let output = read_stdout(stdout, max_output);
        if matches!(output, Err(OutputError::TooMuch)) {
            stdout_control.stop(Stop::TooMuchOutput);
        }
        let _ = stdout_sender.send(output);
    });
    let watch_control = Arc::clone(&control);
    let watch_options = options.clone();
    let watcher = std::thread::spawn(move || {
        watch(&watch_control, &watch_options);
    });
    let worker = std::thread::spawn(move || {
        let status = reap(&mut child, &control);
        // Once the program and what it left behind are gone, its pipes
        // close at once; the grace period is for a process outside its group.
        let output = stdout_receiver
            .recv_timeout(options.grace)
            .unwrap_or_else(|_| {
                Err(OutputError::Io(std::io::Error::other(
                    "its standard output was still open after it exited",
                )))
            });
        let stderr = stderr_receiver
            .recv_timeout(options.grace)
            .unwrap_or_default();
        let stop = control.lock().stop;
        let outcome = outcome(output, status, stop, &stderr, &options);
        let _ = sender.send(Finished {
            request,
            serial,
            outcome,
        });
    });
    vec![watcher, worker]
}

enum OutputError {
    TooMuch,
    Io(std::io::Error),
}

fn read_stdout(stdout: Option<ChildStdout>, max: u64) -> Result<Vec<u8>, OutputError> {
    let Some(stdout) = stdout else {
        return Ok(Vec::new());
    };
    let mut bytes = Vec::new();
    stdout
        .take(max.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(OutputError::Io)?;
    if bytes.len() as u64 > max {
        return Err(OutputError::TooMuch);
    }
    Ok(bytes)
}

/// Keeps the first `max` bytes of standard error and reads the rest away,
/// so that a chatty program never blocks on a full pipe.
fn read_stderr(stderr: Option<ChildStderr>, max: u64) -> Vec<u8> {
    let Some(mut stderr) = stderr else {
        return Vec::new();
    };
    let mut kept = Vec::new();
    let _ = (&mut stderr).take(max).read_to_end(&mut kept);
    let _ = std::io::copy(&mut stderr, &mut std::io::sink());
    kept
}

/// Waits for the program to exit, marks it exited (so that it is signalled
/// no more), kills what is left of its process group, then reaps it.
fn reap(child: &mut Child, control: &Control) -> std::io::Result<ExitStatus> {
    sys::wait_exited(child);
    {
        let mut state = control.lock();
        state.exited = true;
        // What it started and left running (a `sleep &`) is stopped with
        // it, while its pid, not yet reaped, still names the group.
        if let Some(pid) = state.pid {
            sys::kill(pid);
        }
        control.changed.notify_all();
    }
    child.wait()
}

/// Stops the program when asked to, or when its time is up: SIGTERM to its
/// group, then SIGKILL after the grace period. Returns once it has exited.
fn watch(control: &Control, options: &HandlerOptions) {
    let started = Instant::now();
    let mut state = control.lock();
    loop {
        if state.exited {
            return;
        }
        if state.stop.is_some() {
            break;
        }
        let wait = match options.timeout {
            Some(limit) => {
                let left = limit.saturating_sub(started.elapsed());
                if left.is_zero() {
                    state.stop = Some(Stop::Timeout);
                    break;
                }
                left
            }
            None => Duration::from_secs(3600),
        };
        state = match control.changed.wait_timeout(state, wait) {
            Ok((state, _)) => state,
            Err(e) => e.into_inner().0,
        };
    }
    if let Some(pid) = state.pid {
        sys::terminate(pid);
    }
    let grace_started = Instant::now();
    while !state.exited {
        let left = options.grace.saturating_sub(grace_started.elapsed());
        if left.is_zero() {
            if let Some(pid) = state.pid {
                sys::kill(pid);
            }
            return;
        }
        state = match control.changed.wait_timeout(state, left) {
            Ok((state, _)) => state,
            Err(e) => e.into_inner().0,
        };
    }
}

/// The completion's outcome from what the program did.
fn outcome(
    output: Result<Vec<u8>, OutputError>,
    status: std::io::Result<ExitStatus>,
    stop: Option<Stop>,
    stderr: &[u8],
    options: &HandlerOptions,
) -> Result<Option<Value>, HandlerFailure> {
    match stop {
        Some(Stop::Timeout) => {
            return Err(HandlerFailure::Timeout {
                limit_ms: options.timeout.unwrap_or_default().as_millis(),
            });
        }
        Some(Stop::TooMuchOutput) => {
            return Err(HandlerFailure::TooMuchOutput {
                limit: options.max_output,
            });
        }
        // A cancelled request's outcome is thrown away.
        Some(Stop::Cancel) | None => {}
    }
    let status = status.map_err(|e| HandlerFailure::Io {
        reason: io_reason(&e),
    })?;
    if !status.success() {
        let text = String::from_utf8_lossy(stderr);
        return Err(HandlerFailure::Exit {
            code: status.code(),
            signal: sys::signal(&status),
            stderr: excerpt(text.trim(), MESSAGE_CHARS),
        });
    }
    let bytes = match output {
        Ok(bytes) => bytes,
        Err(OutputError::TooMuch) => {
            return Err(HandlerFailure::TooMuchOutput {
                limit: options.max_output,
            });
        }
        Err(OutputError::Io(e)) => {
            return Err(HandlerFailure::Io {
                reason: io_reason(&e),
            });
        }
    };
    let text = String::from_utf8(bytes).map_err(|e| HandlerFailure::BadOutput {
        reason: format!(
            "not valid UTF-8 text (at byte {})",
            e.utf8_error().valid_up_to()
        ),
    })?;
    if text.trim().is_empty() {
        return Ok(None);
    }
    Value::from_json_text(&text, JsonMapping::Plain)
        .map(Some)
        .map_err(|e| HandlerFailure::BadOutput {
            reason: excerpt(&e.to_string(), MESSAGE_CHARS),
        })
}

#[cfg(unix)]
mod sys {
    use rustix::process::{Pid, Signal, WaitIdOptions, kill_process_group, waitid};
    use std::process::{Child, ExitStatus};

    fn group(pid: u32) -> Option<Pid> {
        Pid::from_raw(i32::try_from(pid).ok()?)
    }

    /// Blocks until the child has exited, leaving it unreaped (a zombie
    /// keeps its pid, so no other process can be signalled by mistake).
    pub(super) fn wait_exited(child: &Child) {
        let pid = Pid::from_child(child);
        loop {
            match waitid(
                rustix::process::WaitId::Pid(pid),
                WaitIdOptions::EXITED | WaitIdOptions::NOWAIT,
            ) {
                Err(rustix::io::Errno::INTR) => {}
                // Exited, or cannot be waited for: `Child::wait` reports it.
                _ => return,
            }
        }
    }

    pub(super) fn terminate(pid: u32) {
        if let Some(pid) = group(pid) {
            let _ = kill_process_group(pid, Signal::TERM);
        }
    }

    pub(super) fn kill(pid: u32) {
        if let Some(pid) = group(pid) {
            let _ = kill_process_group(pid, Signal::KILL);
        }
    }

    pub(super) fn signal(status: &ExitStatus) -> Option<i32> {
        use std::os::unix::process::ExitStatusExt;
        status.signal()
    }
}

#[cfg(not(unix))]
mod sys {
    use std::process::{Child, ExitStatus};

    pub(super) fn wait_exited(_child: &Child) {}

    pub(super) fn terminate(_pid: u32) {}

    pub(super) fn kill(_pid: u32) {}

    pub(super) fn signal(_status: &ExitStatus) -> Option<i32> {
        None
    }
}
