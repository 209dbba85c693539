//! `aido worker TREE --store URL` (ticks, dispatches, schedules) and `aido
//! chat TREE --store URL --user ID` (a chat whose state lives in the
//! store). They need the `postgres` feature; without it each says so in one
//! line.

use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use aido::Tree;
use aido::session::TurnOptions;

use super::Failure;
use super::args::{self, CHAT_USAGE, ChatArgs, WORKER_USAGE, WorkerArgs};
use super::load::compile_tree;

/// What `aido worker` and `aido chat --store` were asked to serve.
// Without the feature, the commands check their flags and then say so.
#[cfg_attr(not(feature = "postgres"), allow(dead_code))]
pub(crate) struct Serve {
    pub(crate) url: String,
    pub(crate) tree: Arc<Tree>,
    pub(crate) previous: Vec<Arc<Tree>>,
    pub(crate) turn: TurnOptions,
    pub(crate) handler: aido::handler::HandlerOptions,
    pub(crate) programs: Vec<(aido::value::Keyword, aido::handler::Program)>,
    /// `--lease S`, in milliseconds.
    pub(crate) lease_ms: Option<i64>,
}

impl Serve {
    fn new(
        url: String,
        tree: &Path,
        previous: &[std::ffi::OsString],
        handlers: (&[std::ffi::OsString], Option<&std::ffi::OsStr>),
    ) -> Result<Serve, Failure> {
        let tree = Arc::new(compile_tree(tree)?);
        let previous = previous
            .iter()
            .map(|p| compile_tree(Path::new(p)).map(Arc::new))
            .collect::<Result<Vec<_>, Failure>>()?;
        let (handler, programs) = super::context::handler_flags(handlers.0, handlers.1)?;
        Ok(Serve {
            url,
            tree,
            previous,
            turn: TurnOptions::default(),
            handler,
            programs,
            lease_ms: None,
        })
    }
}

/// `aido worker TREE --store URL [...]`.
pub(crate) fn worker_main(parsed: &WorkerArgs, out: &mut dyn Write) -> Result<i32, Failure> {
    let url = super::store::store_url(parsed.store.as_ref(), WORKER_USAGE)?;
    let tree = args::one_tree(&parsed.paths, "worker", WORKER_USAGE)?;
    super::use_model(parsed.nodes.as_deref())?;
    let workers = args::positive("--workers", parsed.workers.as_deref())?.unwrap_or(1);
    if workers > 256 {
        return Err(Failure::input(
            "--workers",
            format!("at most 256 threads, got {workers}"),
        ));
    }
    let mut serve = Serve::new(
        url,
        &tree,
        &parsed.previous,
        (&parsed.handler, parsed.handler_timeout.as_deref()),
    )?;
    if let Some(n) = args::positive("--max-ticks", parsed.max_ticks.as_deref())? {
        serve.turn.max_ticks = n;
    }
    if let Some(text) = args::text("--lease", parsed.lease.as_deref())? {
        serve.lease_ms = match text.parse::<f64>() {
            Ok(s) if s.is_finite() && s > 0.0 && s < 1e9 => Some((s * 1000.0).ceil() as i64),
            _ => {
                return Err(Failure::input(
                    "--lease",
                    format!("expected a number of seconds above 0, got `{text}`"),
                ));
            }
        };
    }
    backend::serve(serve, usize::try_from(workers).unwrap_or(1), out)
}

/// `aido chat TREE --store URL --user ID [...]`.
pub(crate) fn chat_main(parsed: &ChatArgs, out: &mut dyn Write) -> Result<i32, Failure> {
    let url = super::store::store_url(parsed.store.as_ref(), CHAT_USAGE)?;
    let Some(user) = parsed.user.as_ref() else {
        return Err(Failure::usage(
            "`--store URL` needs `--user ID`",
            CHAT_USAGE,
        ));
    };
    let user = args::text("--user", Some(user))?
        .unwrap_or_default()
        .to_owned();
    for (flag, given) in [
        ("--db", parsed.db.is_some()),
        ("--save", parsed.save.is_some()),
        ("--seed", parsed.seed.is_some()),
        ("--record", parsed.record.is_some()),
        ("--jsonl", parsed.jsonl),
        ("--watch", parsed.watch),
    ] {
        if given {
            return Err(Failure::usage(
                format!(
                    "{flag} is not for a chat kept in a store (--store): the store keeps its db"
                ),
                CHAT_USAGE,
            ));
        }
    }
    let tree = args::one_tree(&parsed.paths, "chat", CHAT_USAGE)?;
    super::use_model(parsed.nodes.as_deref())?;
    let mut serve = Serve::new(
        url,
        &tree,
        &[],
        (&parsed.handler, parsed.handler_timeout.as_deref()),
    )?;
    if let Some(n) = args::positive("--max-ticks", parsed.max_ticks.as_deref())? {
        serve.turn.max_ticks = n;
    }
    for (flag, value, slot) in [
        ("--input-key", &parsed.input_key, &mut serve.turn.input_key),
        ("--reply-key", &parsed.reply_key, &mut serve.turn.reply_key),
    ] {
        if let Some(text) = args::text(flag, value.as_deref())? {
            let name = text.strip_prefix(':').unwrap_or(text);
            *slot = match aido::read_value(&format!(":{name}")) {
                Ok(k @ aido::Value::Keyword(_)) => k,
                _ => {
                    return Err(Failure::input(
                        flag,
                        format!("expected a keyword such as :input, got `{text}`"),
                    ));
                }
            };
        }
    }
    let history = parsed.history.as_ref().map(std::path::PathBuf::from);
    backend::chat(serve, &user, history, out)
}

#[cfg(feature = "postgres")]
mod backend {
    use std::io::{self, IsTerminal, Write};
    use std::path::PathBuf;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::time::{Duration, SystemTime, UNIX_EPOCH};

    use aido::Value;
    use aido::store::postgres::PgStore;
    use aido::store::{
        DispatchOptions, DispatchPoint, Dispatcher, InboxItem, OutboxKind, Store, StoreError,
        StoreErrorKind, TurnPoint, TurnReport, Worker, WorkerOptions,
    };

    use super::Serve;
    use crate::cli::Failure;
    use crate::cli::chat_input::{Heard, Lines};
    use crate::cli::load::max_input_bytes;

    fn failure(e: StoreError) -> Failure {
        Failure::input("store", e.to_string())
    }

    /// The wall clock in Unix milliseconds: leases and `:aido/now`.
    fn now_ms() -> i64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
    }

    /// The test hook `AIDO_TEST_FAULT=POINT:K`: the process kills itself
    /// with SIGKILL the K-th time (over all its threads) it reaches POINT
    /// (`before-tick`, `after-tick`, `after-commit` of a turn, or
    /// `after-handler`: a program answered, its completion not written), so
    /// that fault tests hit each point exactly.
    struct Fault {
        point: String,
        at: u64,
        seen: AtomicU64,
    }

    impl Fault {
        fn from_env() -> Option<Arc<Fault>> {
            let text = std::env::var("AIDO_TEST_FAULT").ok()?;
            let (point, at) = text.split_once(':')?;
            Some(Arc::new(Fault {
                point: point.to_owned(),
                at: at.parse().ok()?,
                seen: AtomicU64::new(0),
            }))
        }

        fn reach(&self, point: &str) {
            if point == self.point && self.seen.fetch_add(1, Ordering::SeqCst) + 1 == self.at {
                die();
            }
        }
    }

    #[cfg(unix)]
    fn die() {
        let _ =
            rustix::process::kill_process(rustix::process::getpid(), rustix::process::Signal::KILL);
    }

    #[cfg(not(unix))]
    fn die() {
        std::process::abort();
    }

    fn worker_of(serve: &Serve, fault: Option<&Arc<Fault>>) -> Worker {
        let options = WorkerOptions {
            turn: serve.turn.clone(),
            clock: true,
        };
        let mut worker = Worker::with_options(Arc::clone(&serve.tree), options);
        for tree in &serve.previous {
            worker.add_previous(Arc::clone(tree));
        }
        if let Some(fault) = fault {
            let fault = Arc::clone(fault);
            worker.set_probe(Box::new(move |point: TurnPoint, _: &str| {
                fault.reach(point.as_str());
            }));
        }
        worker
    }

    fn dispatcher_of(serve: &Serve, fault: Option<&Arc<Fault>>) -> Dispatcher {
        let mut options = DispatchOptions {
            handler: serve.handler.clone(),
            ..DispatchOptions::default()
        };
        if let Some(timeout) = serve.handler.timeout {
            let extra = serve.handler.grace + Duration::from_secs(60);
            options.lease_ms = i64::try_from((timeout + extra).as_millis()).unwrap_or(i64::MAX);
        }
        if let Some(lease) = serve.lease_ms {
            options.lease_ms = lease;
        }
        let mut dispatcher = Dispatcher::new(options);
        for (action, program) in &serve.programs {
            dispatcher.insert(*action, program.clone());
        }
        if let Some(fault) = fault {
            let fault = Arc::clone(fault);
            dispatcher.set_probe(Box::new(move |point: DispatchPoint, _| {
                fault.reach(point.as_str());
            }));
        }
        dispatcher
    }

    /// One line a turn: `agent vN: status, n ticks[, replies [...]]`.
    fn turn_line(report: &TurnReport) -> String {
        let mut line = format!(
            "{:?} v{}: {}, {} tick{}",
            report.agent,
            report.version,
            report.status,
            report.ticks,
            if report.ticks == 1 { "" } else { "s" }
        );
        if !report.replies.is_empty() {
            line.push_str(&format!(
                ", replies {}",
                Value::Vector(report.replies.as_slice().into())
            ));
        }
        for entry in &report.outbox {
            line.push_str(&format!(", {} {}", entry.kind.as_str(), entry.request));
        }
        if let Some(error) = &report.error {
            line.push_str(&format!(", error {}", error.kind.code()));
        }
        crate::cli::escaped_lines(&line)
    }

    /// Where the worker threads' lines go: the main thread writes them out
    /// (it holds the output).
    type Say = std::sync::mpsc::Sender<String>;

    /// Whether the error means the connection is gone.
    fn is_connection(e: &StoreError, store: &PgStore) -> bool {
        matches!(e.kind, StoreErrorKind::Connection(_)) || store.is_closed()
    }

    /// Sleeps `total` in short slices, returning early once `stop` is set.
    fn pause(total: Duration, stop: &AtomicBool) {
        let slice = Duration::from_millis(20);
        let mut left = total;
        while !left.is_zero() && !stop.load(Ordering::SeqCst) {
            let step = left.min(slice);
            std::thread::sleep(step);
            left -= step;
        }
    }

    /// One worker thread: turns, dispatches and wakes until `stop`;
    /// reconnects with back-off when the server goes away.
    fn work(serve: &Serve, stop: &AtomicBool, fault: Option<&Arc<Fault>>, say: &Say) {
        let say = |line: &str| {
            let _ = say.send(line.to_owned());
        };
        let mut worker = worker_of(serve, fault);
        let mut dispatcher = dispatcher_of(serve, fault);
        let mut store: Option<PgStore> = None;
        let mut retry = Duration::from_millis(100);
        let mut idle = Duration::from_millis(1);
        let mut down = false;
        while !stop.load(Ordering::SeqCst) {
            let Some(current) = store.as_mut() else {
                match PgStore::open(&serve.url) {
                    Ok(opened) => {
                        if down {
                            say("store reachable again");
                        }
                        down = false;
                        retry = Duration::from_millis(100);
                        store = Some(opened);
                    }
                    Err(e) => {
                        if !down {
                            say(&format!("{e}; retrying with back-off"));
                        }
                        down = true;
                        pause(retry, stop);
                        retry = (retry * 2).min(Duration::from_secs(5));
                    }
                }
                continue;
            };
            let now = now_ms();
            let step = dispatcher
                .step(current, now)
                .and_then(|step| Ok((step, worker.run_due(current, now, 32)?)));
            match step {
                Ok((step, turns)) => {
                    for report in &turns {
                        say(&turn_line(report));
                    }
                    if turns.is_empty() && step.is_empty() {
                        if dispatcher.busy() {
                            dispatcher.wait(idle);
                        } else {
                            pause(idle, stop);
                        }
                        idle = (idle * 2).min(Duration::from_millis(100));
                    } else {
                        idle = Duration::from_millis(1);
                    }
                }
                Err(e) if is_connection(&e, current) => {
                    say(&format!("{e}; reconnecting"));
                    down = true;
                    store = None;
                }
                Err(e) => {
                    // A turn that failed (a conflict, a db that does not
                    // encode) wrote nothing; it is tried again.
                    say(&e.to_string());
                    pause(retry, stop);
                }
            }
        }
    }

    /// Blocks SIGTERM and SIGINT in this thread and every thread it starts
    /// from now on, and sets `stop` when one arrives.
    #[cfg(unix)]
    fn on_signal(stop: Arc<AtomicBool>) -> Result<(), Failure> {
        use nix::sys::signal::{SigSet, Signal};
        let mut set = SigSet::empty();
        set.add(Signal::SIGTERM);
        set.add(Signal::SIGINT);
        set.thread_block()
            .map_err(|e| Failure::input("signals", e.to_string()))?;
        std::thread::spawn(move || {
            if set.wait().is_ok() {
                stop.store(true, Ordering::SeqCst);
            }
        });
        Ok(())
    }

    #[cfg(not(unix))]
    fn on_signal(_stop: Arc<AtomicBool>) -> Result<(), Failure> {
        Ok(())
    }

    pub(super) fn serve(serve: Serve, workers: usize, out: &mut dyn Write) -> Result<i32, Failure> {
        // A bad URL, a server down, a schema of another version: one line, now.
        drop(PgStore::open(&serve.url).map_err(failure)?);
        let stop = Arc::new(AtomicBool::new(false));
        on_signal(Arc::clone(&stop))?;
        let fault = Fault::from_env();
        writeln!(
            out,
            "serving the store with tree {} ({} worker{}); stop with SIGTERM or SIGINT",
            serve.tree.fingerprint(),
            workers,
            if workers == 1 { "" } else { "s" }
        )?;
        out.flush()?;
        let serve = Arc::new(serve);
        let (sender, lines) = std::sync::mpsc::channel();
        let threads: Vec<_> = (0..workers)
            .map(|_| {
                let (serve, stop, fault) = (Arc::clone(&serve), Arc::clone(&stop), fault.clone());
                let say = sender.clone();
                std::thread::spawn(move || work(&serve, &stop, fault.as_ref(), &say))
            })
            .collect();
        drop(sender);
        // Until every thread has ended and dropped its sender.
        for line in lines {
            writeln!(out, "{line}")?;
            out.flush()?;
        }
        for thread in threads {
            let _ = thread.join();
        }
        writeln!(out, "stopped")?;
        Ok(0)
    }

    /// The reply key's values in `db`.
    fn replies(db: Option<&Value>, key: &Value) -> Vec<Value> {
        match db.and_then(|db| db.get(key)) {
            Some(Value::Vector(items)) => items.to_vec(),
            Some(Value::Nil) | None => Vec::new(),
            Some(other) => vec![other.clone()],
        }
    }

    fn print_reply(out: &mut dyn Write, reply: &Value) -> io::Result<()> {
        writeln!(out, "{}", crate::cli::chat::reply_text(reply))
    }

    /// Whether `agent` waits for nothing this chat can bring: no inbox
    /// entry, and no launch in the outbox whose action a program here does.
    fn settled(
        store: &mut PgStore,
        agent: &str,
        serve: &Serve,
        dispatcher: &Dispatcher,
    ) -> Result<bool, StoreError> {
        if !store.inbox(agent)?.is_empty() || dispatcher.busy() {
            return Ok(false);
        }
        let handled = |entry: &aido::store::OutboxEntry| {
            entry.kind == OutboxKind::Cancel
                || aido::tick::Request::from_value(&entry.value)
                    .is_some_and(|r| serve.programs.iter().any(|(a, _)| *a == r.action))
        };
        Ok(!store.outbox(agent)?.iter().any(handled))
    }

    /// The chat: each line from the chat's one line reader
    /// ([`Lines`]: rustyline at a terminal, one line per turn from a pipe,
    /// lines over `AIDO_MAX_INPUT_BYTES` or not UTF-8 skipped with a
    /// notice) goes to the agent's inbox, and the replies its turns commit
    /// are printed.
    pub(super) fn chat(
        serve: Serve,
        agent: &str,
        history: Option<PathBuf>,
        out: &mut dyn Write,
    ) -> Result<i32, Failure> {
        let mut store = PgStore::open(&serve.url).map_err(failure)?;
        let mut worker = worker_of(&serve, None);
        let mut dispatcher = dispatcher_of(&serve, None);
        let key = serve.turn.reply_key.clone();
        let limit = max_input_bytes()?;
        let mut lines = Lines::start(io::stdin().is_terminal(), limit, history)
            .map_err(|why| Failure::input("the terminal", why))?;
        lines.ask();
        loop {
            let line = match lines.wait(None) {
                Some(Heard::Line(line)) => line,
                Some(Heard::Skipped(why)) => {
                    eprintln!("aido: {}", crate::cli::escaped_lines(&why));
                    lines.ask();
                    continue;
                }
                Some(Heard::End) | None => break,
            };
            let before = store.load(agent).map_err(failure)?;
            let mut shown = replies(before.as_ref().map(|l| &l.db), &key).len();
            let input = Value::map_from([(serve.turn.input_key.clone(), Value::string(&line))]);
            store
                .append(agent, InboxItem::Input(input))
                .map_err(failure)?;
            // Turns (this chat's, or any worker's serving the store) until
            // the agent waits for nothing this chat can bring; an agent that
            // wants a tick on every tick is left to the workers after a while.
            for _ in 0..10_000 {
                dispatcher.step(&mut store, now_ms()).map_err(failure)?;
                let turned = worker.turn(&mut store, agent, now_ms()).map_err(failure)?;
                let after = store.load(agent).map_err(failure)?;
                let all = replies(after.as_ref().map(|l| &l.db), &key);
                let mut said = Vec::new();
                for reply in all.iter().skip(shown) {
                    print_reply(&mut said, reply)?;
                }
                lines.print(&said, out)?;
                shown = shown.max(all.len());
                if let Some(error) = turned.as_ref().and_then(|t| t.error.as_ref()) {
                    eprintln!("aido: {}", crate::cli::escaped_lines(&error.to_string()));
                }
                if turned.is_none() {
                    if settled(&mut store, agent, &serve, &dispatcher).map_err(failure)? {
                        break;
                    }
                    dispatcher.wait(Duration::from_millis(50));
                }
            }
            lines.ask();
        }
        lines.finish();
        Ok(0)
    }
}

#[cfg(not(feature = "postgres"))]
mod backend {
    use std::io::Write;

    use super::Serve;
    use crate::cli::Failure;

    pub(super) fn serve(_: Serve, _: usize, _: &mut dyn Write) -> Result<i32, Failure> {
        Err(crate::cli::store::without_postgres())
    }

    pub(super) fn chat(
        _: Serve,
        _: &str,
        _: Option<std::path::PathBuf>,
        _: &mut dyn Write,
    ) -> Result<i32, Failure> {
        Err(crate::cli::store::without_postgres())
    }
}
