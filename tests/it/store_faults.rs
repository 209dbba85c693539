//! `aido worker` and `aido chat --store` against a real PostgreSQL server,
//! with real faults: workers killed with SIGKILL at each point of a turn (a
//! test hook, `AIDO_TEST_FAULT`, makes the binary kill itself there), a
//! dispatcher killed after its program answered, the server stopped
//! abruptly and started again, two workers on one conversation. After each,
//! the invariants: every agent's `n` (one a tick) equals its version and
//! its committed ticks; every input replied once, in order; each
//! completion applied once; every db reads back equal. Where the tree
//! launches deferred actions, their program logs every launch it runs, and
//! the log is checked too: every (agent, request) launched at most once
//! (a dispatcher's retry runs the same launch again, with the same key and
//! options; a second committed launch of one input is a failure), none
//! launched by a tick that was not committed, and the completions applied
//! are exactly the distinct requests answered.
//!
//! Waits poll the store's rows and the processes, with a generous bound;
//! none is a sleep that makes timing work.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Write;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use aido::Value;
use aido::store::postgres::{PgStore, init};
use aido::store::{InboxItem, Store};
use aido::value::{decode, encode};

use crate::pg::{Cluster, shared};
use crate::store_worker::{ASK, ECHO};

/// Long enough for any slow machine; reached only by a test about to fail.
const PATIENCE: Duration = Duration::from_secs(120);

struct Scratch(PathBuf);

impl Scratch {
    fn new(test: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("aido-faults-{test}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    fn file(&self, name: &str, text: &str) -> PathBuf {
        let path = self.0.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A worker process; killed (and reaped) if the test ends first.
struct Worker(Child);

impl Worker {
    fn start(tree: &Path, url: &str, extra: &[&str], fault: Option<&str>) -> Worker {
        let mut command = Command::new(env!("CARGO_BIN_EXE_aido"));
        command
            .arg("worker")
            .arg(tree)
            .args(["--store", url])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        if let Some(fault) = fault {
            command.env("AIDO_TEST_FAULT", fault);
        }
        Worker(command.spawn().unwrap())
    }

    /// Waits for the process to end by itself; its status.
    fn wait_dead(&mut self) -> std::process::ExitStatus {
        let start = Instant::now();
        loop {
            if let Some(status) = self.0.try_wait().unwrap() {
                return status;
            }
            assert!(start.elapsed() < PATIENCE, "the worker did not end");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// SIGTERM, then the exit status (0: a clean stop).
    fn stop(mut self) -> std::process::ExitStatus {
        let pid = rustix::process::Pid::from_child(&self.0);
        rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
        self.wait_dead()
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Polls `done` against the store until it holds, failing after PATIENCE.
fn wait_for(url: &str, what: &str, mut done: impl FnMut(&mut PgStore) -> bool) {
    let start = Instant::now();
    loop {
        if let Ok(mut store) = PgStore::open(url)
            && done(&mut store)
        {
            return;
        }
        assert!(start.elapsed() < PATIENCE, "gave up waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn input(text: &str) -> InboxItem {
    InboxItem::Input(Value::map_from([(
        Value::keyword("input"),
        Value::string(text),
    )]))
}

fn key(db: &Value, name: &str) -> Value {
    db.get(&Value::keyword(name)).cloned().unwrap_or(Value::Nil)
}

/// A handler program for `:svc/echo` that appends the JSON it was given
/// (its idempotency key `agent/request` and its launch's options) as one
/// line to `log`, and answers the launch's `:text`: the record of every
/// launch a committed turn made that a dispatcher ran. A run that was
/// given nothing records nothing: a worker killed after starting the
/// program and before writing its launch leaves it reading the end of its
/// input, and that run was never a launch.
fn launch_logger(scratch: &Scratch, log: &Path) -> PathBuf {
    let name = format!("{}.sh", log.file_name().unwrap().to_string_lossy());
    let handler = scratch.file(
        &name,
        &format!(
            "#!/bin/sh\nread -r line || [ -n \"$line\" ] || exit 0\n\
             printf '%s\\n' \"$line\" >> '{}'\n\
             text=$(printf '%s' \"$line\" | sed 's/.*\"text\":\"\\([^\"]*\\)\".*/\\1/')\n\
             printf '\"%s\"' \"$text\"\n",
            log.display()
        ),
    );
    std::fs::set_permissions(
        &handler,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    handler
}

/// The launches `launch_logger` recorded: (agent, request, text), one per
/// run of the program (a dispatcher's retry of a launch is a second run).
fn launches(log: &Path) -> Vec<(String, u64, String)> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    text.lines()
        .map(|line| {
            let json: serde_json::Value = serde_json::from_str(line).unwrap();
            let key = json["idempotency-key"].as_str().unwrap();
            let (agent, request) = key.rsplit_once('/').unwrap();
            let request: u64 = request.parse().unwrap();
            assert_eq!(json["request"].as_u64(), Some(request), "{line}");
            let text = json["options"]["text"].as_str().unwrap();
            (agent.to_owned(), request, text.to_owned())
        })
        .collect()
}

/// Every launch in `log` against the committed dbs: a request run more
/// than once (a dispatcher's retry) was the same launch each time; no
/// input was launched by two requests (two committed ticks launching it);
/// every request was made by a committed tick (its number within the
/// agent's `:aido/requests`); and the answers applied, the agent's
/// replies, are exactly the distinct requests answered, in order.
fn check_launches(store: &mut PgStore, log: &Path) {
    use std::collections::{BTreeMap, BTreeSet};
    let mut by_request: BTreeMap<(String, u64), BTreeSet<String>> = BTreeMap::new();
    let mut by_text: BTreeMap<(String, String), BTreeSet<u64>> = BTreeMap::new();
    for (agent, request, text) in launches(log) {
        by_request
            .entry((agent.clone(), request))
            .or_default()
            .insert(text.clone());
        by_text.entry((agent, text)).or_default().insert(request);
    }
    for ((agent, request), texts) in &by_request {
        assert_eq!(
            texts.len(),
            1,
            "{agent}/{request} ran as launches of {texts:?}"
        );
    }
    for ((agent, text), requests) in &by_text {
        assert_eq!(
            requests.len(),
            1,
            "{agent}: the input {text:?} launched more than once: requests {requests:?}"
        );
    }
    for agent in store.agents().unwrap() {
        let loaded = store.load(&agent.key).unwrap().unwrap();
        let made = match key(&loaded.db, "aido/requests") {
            Value::Int(made) => made,
            _ => 0,
        };
        let answered: Vec<Value> = by_request
            .iter()
            .filter(|((a, _), _)| *a == agent.key)
            .map(|((_, request), texts)| {
                assert!(
                    i64::try_from(*request).unwrap() <= made,
                    "{}/{request} launched by no committed tick ({made} made)",
                    agent.key
                );
                Value::string(texts.first().unwrap())
            })
            .collect();
        assert_eq!(
            key(&loaded.db, "replies"),
            Value::Vector(answered.into()),
            "{}: the completions applied are the requests answered",
            agent.key
        );
    }
}

/// Every agent: `n` equals its version (one tick a commit), its replies are
/// `expect(agent)` in order, its inbox and outbox are empty; its db reads
/// back equal. With a launch log, `check_launches` too; without one, the
/// tree launches nothing.
fn check_invariants(
    store: &mut PgStore,
    expect: &dyn Fn(&str) -> Vec<Value>,
    launch_log: Option<&Path>,
) {
    if let Some(log) = launch_log {
        check_launches(store, log);
    }
    for agent in store.agents().unwrap() {
        let loaded = store.load(&agent.key).unwrap().unwrap();
        let version = i64::try_from(loaded.version).unwrap();
        assert_eq!(key(&loaded.db, "n"), Value::Int(version), "{}", agent.key);
        assert_eq!(
            key(&loaded.db, "replies"),
            Value::Vector(expect(&agent.key).into()),
            "{}",
            agent.key
        );
        assert!(store.inbox(&agent.key).unwrap().is_empty(), "{}", agent.key);
        assert!(
            store.outbox(&agent.key).unwrap().is_empty(),
            "{}",
            agent.key
        );
        if launch_log.is_none() {
            assert_eq!(
                key(&loaded.db, "aido/requests"),
                Value::Nil,
                "{}",
                agent.key
            );
        }
        assert_eq!(decode(&encode(&loaded.db).unwrap()).unwrap(), loaded.db);
        assert_eq!(store.load(&agent.key).unwrap().unwrap(), loaded);
    }
}

fn messages(agent: &str, count: usize) -> Vec<Value> {
    (0..count)
        .map(|i| Value::string(&format!("{agent}-{i}")))
        .collect()
}

/// A worker killed with SIGKILL before the tick, after it before the
/// commit, and after the commit, at several turns: the next worker takes
/// over, no turn is lost and none is applied twice.
#[test]
fn a_worker_killed_at_any_point_of_a_turn_loses_nothing() {
    let Some(cluster) = shared("a_worker_killed_at_any_point_of_a_turn_loses_nothing") else {
        return;
    };
    let scratch = Scratch::new("kill");
    let tree = scratch.file("echo.edn", ECHO);
    // Each fault in a database of its own, all at once: they wait on
    // processes and on the server far more than they compute.
    each_fault(&[1, 4], |point, at| {
        let url = cluster.database();
        init(&url).unwrap();
        let mut store = PgStore::open(&url).unwrap();
        for agent in ["a", "b"] {
            for text in messages(agent, 4) {
                store.append(agent, input(text.as_str().unwrap())).unwrap();
            }
        }
        let fault = format!("{point}:{at}");
        let status = Worker::start(&tree, &url, &[], Some(&fault)).wait_dead();
        assert_eq!(status.signal(), Some(9), "{fault}: killed by its hook");
        let committed: u64 = store.agents().unwrap().iter().map(|a| a.version).sum();
        let expected = if point == "after-commit" { at } else { at - 1 };
        assert_eq!(
            committed, expected,
            "{fault}: what was committed before the kill"
        );
        let worker = Worker::start(&tree, &url, &[], None);
        wait_for(&url, "every input taken", |s| {
            s.due(i64::MAX, 10).unwrap().is_empty()
                && s.agents().unwrap().iter().map(|a| a.version).sum::<u64>() == 8
        });
        assert!(worker.stop().success(), "{fault}: a clean stop");
        check_invariants(&mut store, &|agent| messages(agent, 4), None);
    });
}

/// Runs `check` for each point of a turn a worker can be killed at
/// (before the tick, after it, after the commit) at each turn of `turns`,
/// every case in a thread of its own; a failure fails the test.
fn each_fault(turns: &[u64], check: impl Fn(&str, u64) + Sync) {
    std::thread::scope(|scope| {
        for point in ["before-tick", "after-tick", "after-commit"] {
            for &at in turns {
                let check = &check;
                scope.spawn(move || check(point, at));
            }
        }
    });
}

/// The same kills in an agent whose every input launches a deferred
/// action, answered by a program that logs each launch it runs: killed
/// at the first turn (an input's, launching) and at the third (whichever
/// came third: an input's or a completion's), at each point. No input is
/// launched twice, each answer is applied once, and nothing launched was
/// made by a tick that was not committed.
#[test]
fn a_worker_killed_at_any_point_of_a_launching_turn_launches_once() {
    let Some(cluster) = shared("a_worker_killed_at_any_point_of_a_launching_turn") else {
        return;
    };
    let scratch = Scratch::new("kill-launch");
    let tree = scratch.file("ask.edn", ASK);
    each_fault(&[1, 3], |point, at| {
        let fault = format!("{point}:{at}");
        let log = scratch.0.join(format!("launches-{point}-{at}"));
        let handler = launch_logger(&scratch, &log);
        let flag = format!("svc/echo={}", handler.display());
        let args = ["--handler", flag.as_str(), "--lease", "1"];
        let url = cluster.database();
        init(&url).unwrap();
        let mut store = PgStore::open(&url).unwrap();
        let agents = ["a", "b"];
        for agent in agents {
            store.append(agent, input(&format!("{agent}-0"))).unwrap();
        }
        let status = Worker::start(&tree, &url, &args, Some(&fault)).wait_dead();
        assert_eq!(status.signal(), Some(9), "{fault}: killed by its hook");
        let worker = Worker::start(&tree, &url, &args, None);
        // At rest: `count` replies each, nothing waiting in or out.
        let answered = |s: &mut PgStore, count: usize| {
            agents.iter().all(|a| {
                s.load(a)
                    .unwrap()
                    .is_some_and(|l| match &key(&l.db, "replies") {
                        Value::Vector(replies) => replies.len() >= count,
                        _ => false,
                    })
                    && s.inbox(a).unwrap().is_empty()
                    && s.outbox(a).unwrap().is_empty()
            })
        };
        wait_for(&url, "the first answers", |s| answered(s, 1));
        for agent in agents {
            store.append(agent, input(&format!("{agent}-1"))).unwrap();
        }
        wait_for(&url, "the second answers", |s| answered(s, 2));
        assert!(worker.stop().success(), "{fault}: a clean stop");
        check_invariants(&mut store, &|agent| messages(agent, 2), Some(&log));
    });
}

/// A dispatcher killed after its program answered and before the
/// completion was written: the lease ends, another runs the program again
/// (the same idempotency key), and the completion is applied once.
#[test]
fn a_dispatcher_killed_after_its_handler_ran_applies_the_completion_once() {
    let Some(cluster) = shared("a_dispatcher_killed_after_its_handler_ran") else {
        return;
    };
    let scratch = Scratch::new("dispatch");
    let tree = scratch.file("ask.edn", ASK);
    let log = scratch.0.join("launches");
    let handler = launch_logger(&scratch, &log);
    let url = cluster.database();
    init(&url).unwrap();
    let mut store = PgStore::open(&url).unwrap();
    store.append("ann", input("ping")).unwrap();
    let flag = format!("svc/echo={}", handler.display());
    let args = ["--handler", flag.as_str(), "--lease", "1"];
    let status = Worker::start(&tree, &url, &args, Some("after-handler:1")).wait_dead();
    assert_eq!(status.signal(), Some(9));
    let ping = ("ann".to_owned(), 1, "ping".to_owned());
    assert_eq!(launches(&log), std::slice::from_ref(&ping));
    assert!(
        store.inbox("ann").unwrap().is_empty(),
        "no completion written"
    );
    let worker = Worker::start(&tree, &url, &args, None);
    wait_for(&url, "the answer applied", |s| {
        s.load("ann").unwrap().is_some_and(|l| l.version == 2)
    });
    assert!(worker.stop().success());
    // At least once outside, with the same key; once in the db.
    assert_eq!(launches(&log), [ping.clone(), ping]);
    check_invariants(&mut store, &|_| vec![Value::string("ping")], Some(&log));
}

/// The server stopped abruptly mid-run and started again: the workers
/// reconnect by themselves and finish; nothing committed is lost.
#[test]
fn workers_recover_from_a_server_restart() {
    let Some(cluster) = Cluster::start("workers_recover_from_a_server_restart") else {
        return;
    };
    let scratch = Scratch::new("restart");
    let tree = scratch.file("echo.edn", ECHO);
    let url = cluster.database();
    init(&url).unwrap();
    let worker = Worker::start(&tree, &url, &["--workers", "2"], None);
    let mut store = PgStore::open(&url).unwrap();
    for text in messages("a", 20) {
        store.append("a", input(text.as_str().unwrap())).unwrap();
    }
    wait_for(&url, "some turns", |s| {
        s.load("a").unwrap().is_some_and(|l| l.version >= 1)
    });
    cluster.stop_now();
    cluster.start_again();
    let mut store = PgStore::open(&url).unwrap();
    for text in messages("b", 20) {
        store.append("b", input(text.as_str().unwrap())).unwrap();
    }
    wait_for(&url, "every input taken", |s| {
        s.agents().unwrap().iter().map(|a| a.version).sum::<u64>() == 40
    });
    assert!(worker.stop().success());
    check_invariants(&mut store, &|agent| messages(agent, 20), None);
    // Dropped, the cluster's reaper stops the server and removes its
    // folder: the same closing of its pipe that the end of the test
    // process brings, however the process ends.
    let dir = cluster.dir().to_owned();
    let pid = std::fs::read_to_string(dir.join("data/postmaster.pid")).unwrap();
    let stat = PathBuf::from(format!("/proc/{}/stat", pid.lines().next().unwrap()));
    drop(store);
    drop(url);
    drop(cluster);
    assert!(!dir.exists(), "{} is left", dir.display());
    // Gone, or a zombie waiting for init to reap it: stopped either way.
    let state = std::fs::read_to_string(&stat).unwrap_or_default();
    assert!(
        state.is_empty() || state.contains(") Z "),
        "the server runs on: {state}"
    );
}

/// Two worker processes of two threads each, one conversation, 100
/// messages sent while they run: every reply, in order.
#[test]
fn two_workers_one_conversation_keep_the_order() {
    let Some(cluster) = shared("two_workers_one_conversation_keep_the_order") else {
        return;
    };
    let scratch = Scratch::new("two");
    let tree = scratch.file("echo.edn", ECHO);
    let url = cluster.database();
    init(&url).unwrap();
    let first = Worker::start(&tree, &url, &["--workers", "2"], None);
    let second = Worker::start(&tree, &url, &["--workers", "2"], None);
    let mut store = PgStore::open(&url).unwrap();
    for text in messages("talk", 100) {
        store.append("talk", input(text.as_str().unwrap())).unwrap();
    }
    wait_for(&url, "100 turns", |s| {
        s.load("talk").unwrap().is_some_and(|l| l.version == 100)
    });
    assert!(first.stop().success() && second.stop().success());
    check_invariants(&mut store, &|agent| messages(agent, 100), None);
}

/// The commands' errors: one line each, exit status 2.
#[test]
fn worker_errors_are_one_line_each() {
    let Some(cluster) = shared("worker_errors_are_one_line_each") else {
        return;
    };
    let scratch = Scratch::new("errors");
    let tree = scratch.file("echo.edn", ECHO);
    let url = cluster.database();
    init(&url).unwrap();
    let mut client = ::postgres::Client::connect(&url, ::postgres::NoTls).unwrap();
    let other = cluster.database();
    init(&other).unwrap();
    let mut other_client = ::postgres::Client::connect(&other, ::postgres::NoTls).unwrap();
    other_client
        .batch_execute("UPDATE aido.meta SET schema_version = 99")
        .unwrap();
    let gone = format!(
        "host={}/nowhere user=aido dbname=x",
        cluster.dir().display()
    );
    for (store, code) in [
        ("postgres://aido@[bad", "S0005"),
        (gone.as_str(), "S0006"),
        (other.as_str(), "S0007"),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_aido"))
            .arg("worker")
            .arg(&tree)
            .args(["--store", store])
            .output()
            .unwrap();
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert_eq!(out.status.code(), Some(2), "{store}: {stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "{store}: {stderr}");
        assert!(stderr.contains(code), "{store}: {stderr}");
    }
    // A chat kept in the store: each line a committed turn, its reply printed.
    let mut chat = Command::new(env!("CARGO_BIN_EXE_aido"))
        .arg("chat")
        .arg(&tree)
        .args(["--store", url.as_str(), "--user", "ann"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    chat.stdin
        .take()
        .unwrap()
        .write_all(b"hello\nagain\n")
        .unwrap();
    let out = chat.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8(out.stdout).unwrap(), "hello\nagain\n");
    let row = client
        .query_one("SELECT version FROM aido.agents WHERE key = 'ann'", &[])
        .unwrap();
    assert_eq!(row.get::<_, i64>(0), 2);
}

/// `aido chat --store` reads its lines with the local chat's reader: from
/// a pipe one line a turn, a line longer than `AIDO_MAX_INPUT_BYTES` (which
/// bounds the tree file too) or
/// not UTF-8 skipped with a notice on standard error, the chat going on.
#[test]
fn a_store_chat_reads_its_lines_like_a_local_chat() {
    let Some(cluster) = shared("a_store_chat_reads_its_lines_like_a_local_chat") else {
        return;
    };
    let scratch = Scratch::new("chat-lines");
    let tree = scratch.file("echo.edn", ECHO);
    let url = cluster.database();
    init(&url).unwrap();
    let mut chat = Command::new(env!("CARGO_BIN_EXE_aido"))
        .arg("chat")
        .arg(&tree)
        .args(["--store", url.as_str(), "--user", "ann"])
        .env("AIDO_MAX_INPUT_BYTES", "1000")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut text = b"hello\n".to_vec();
    text.extend_from_slice(&[b'x'; 1500]);
    text.extend_from_slice(b"\nbad \xff byte\nagain\r\n");
    chat.stdin.take().unwrap().write_all(&text).unwrap();
    let out = chat.wait_with_output().unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(out.status.success(), "{stderr}");
    assert_eq!(String::from_utf8(out.stdout).unwrap(), "hello\nagain\n");
    assert_eq!(
        stderr,
        "aido: standard input: a line longer than 1000 bytes (AIDO_MAX_INPUT_BYTES) was skipped\n\
         aido: standard input: a line that is not valid UTF-8 was skipped\n"
    );
    let mut store = PgStore::open(&url).unwrap();
    check_invariants(&mut store, &|_| messages_of(&["hello", "again"]), None);
}

fn messages_of(texts: &[&str]) -> Vec<Value> {
    texts.iter().map(|t| Value::string(t)).collect()
}
