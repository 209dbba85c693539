//! Per-event workers against a PostgreSQL server (feature `postgres`):
//! a turn's commit latency (median and p99 of 1,000 turns of one
//! conversation: the input appended, then one `Worker::turn`), and turns per
//! second with 8 conversations served by 8 threads, each with its own
//! connection; and recovery after a worker is killed with SIGKILL in the
//! middle of a turn (after its tick, before its commit: the binary's test
//! hook `AIDO_TEST_FAULT`), five trials each of a new `aido worker` started
//! after the kill, to the lost turn committed, and of a worker already
//! running (held stopped until the kill), to the same. The server is the
//! one at `AIDO_BENCH_STORE` (a URL or `host=... dbname=...`); its `aido`
//! schema is dropped and made again.
//!
//! `AIDO_BENCH_STORE='host=/tmp/pg user=aido dbname=bench' cargo bench
//! --features postgres --bench store`
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader};
use std::os::unix::process::ExitStatusExt;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use aido::store::postgres::{PgStore, init};
use aido::store::{InboxItem, Store, Worker};
use aido::{Registry, Value, compile_str};

const ECHO: &str = "[:sequence [:inc! {:key :n}] [:present? {:key :input}] \
     [:emit! {:key :replies :val [:aido/db :input] :keep 20}] [:dissoc! {:key :input}]]";

fn input(i: usize) -> InboxItem {
    InboxItem::Input(Value::map_from([(
        Value::keyword("input"),
        Value::string(&format!("message {i}")),
    )]))
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

fn main() {
    let Ok(url) = std::env::var("AIDO_BENCH_STORE") else {
        eprintln!("store bench: skipped: set AIDO_BENCH_STORE to a PostgreSQL URL");
        return;
    };
    let mut client = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    client
        .batch_execute("DROP SCHEMA IF EXISTS aido CASCADE")
        .unwrap();
    init(&url).unwrap();
    let tree = Arc::new(compile_str("echo.edn", ECHO, &Registry::new()).unwrap());

    // One conversation: append, then the turn that takes it and commits.
    let mut store = PgStore::open(&url).unwrap();
    let mut worker = Worker::new(Arc::clone(&tree));
    let mut times = Vec::new();
    for i in 0..1_100 {
        store.append("solo", input(i)).unwrap();
        let start = Instant::now();
        worker.turn(&mut store, "solo", 0).unwrap().unwrap();
        if i >= 100 {
            times.push(start.elapsed());
        }
    }
    times.sort();
    println!(
        "turn commit latency, one conversation: median {:.0} µs, p99 {:.0} µs ({} turns)",
        percentile(&times, 0.5).as_secs_f64() * 1e6,
        percentile(&times, 0.99).as_secs_f64() * 1e6,
        times.len()
    );

    // Eight conversations, eight threads, each input appended then taken.
    let turns = 300;
    let start = Instant::now();
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let (url, tree) = (url.clone(), Arc::clone(&tree));
            std::thread::spawn(move || {
                let mut store = PgStore::open(&url).unwrap();
                let mut worker = Worker::new(tree);
                let agent = format!("talk-{t}");
                for i in 0..turns {
                    store.append(&agent, input(i)).unwrap();
                    worker.turn(&mut store, &agent, 0).unwrap().unwrap();
                }
            })
        })
        .collect();
    for thread in threads {
        thread.join().unwrap();
    }
    let elapsed = start.elapsed();
    println!(
        "8 conversations on 8 threads: {:.0} turns/s ({} turns in {:.2} s)",
        (8 * turns) as f64 / elapsed.as_secs_f64(),
        8 * turns,
        elapsed.as_secs_f64()
    );

    recovery(&url);
}

/// An `aido worker` of `tree` on the store at `url` (its turn lines piped),
/// killing itself at `fault` if given.
fn worker(tree: &std::path::Path, url: &str, fault: Option<&str>) -> Child {
    let mut command = Command::new(env!("CARGO_BIN_EXE_aido"));
    command
        .arg("worker")
        .arg(tree)
        .args(["--store", url])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    if let Some(fault) = fault {
        command.env("AIDO_TEST_FAULT", fault);
    }
    command.spawn().unwrap()
}

/// Reads the worker's lines until it prints `agent`'s first committed turn.
fn committed(lines: &mut impl BufRead, agent: &str) {
    let start = format!("\"{agent}\" v1:");
    let mut line = String::new();
    loop {
        line.clear();
        assert!(lines.read_line(&mut line).unwrap() > 0, "the worker ended");
        if line.starts_with(&start) {
            return;
        }
    }
}

/// Kills a worker on the agent's first turn, after its tick and before its
/// commit, and waits for it to be gone.
fn kill_mid_turn(tree: &std::path::Path, url: &str, store: &mut PgStore, agent: &str) {
    store.append(agent, input(0)).unwrap();
    let status = worker(tree, url, Some("after-tick:1")).wait().unwrap();
    assert_eq!(status.signal(), Some(9), "killed by its hook");
    assert_eq!(store.load(agent).unwrap().map(|l| l.version), None);
}

fn recovery(url: &str) {
    let dir = std::env::temp_dir().join(format!("aido-bench-store-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let tree = dir.join("echo.edn");
    std::fs::write(&tree, ECHO).unwrap();
    let mut store = PgStore::open(url).unwrap();
    let (mut fresh, mut takeover) = (Vec::new(), Vec::new());
    for trial in 0..5 {
        let agent = format!("fresh-{trial}");
        kill_mid_turn(&tree, url, &mut store, &agent);
        let start = Instant::now();
        let mut next = worker(&tree, url, None);
        committed(&mut BufReader::new(next.stdout.take().unwrap()), &agent);
        fresh.push(start.elapsed());
        next.kill().unwrap();
        next.wait().unwrap();

        let agent = format!("takeover-{trial}");
        let mut running = worker(&tree, url, None);
        let mut lines = BufReader::new(running.stdout.take().unwrap());
        lines.read_line(&mut String::new()).unwrap(); // "serving the store ..."
        let pid = rustix::process::Pid::from_child(&running);
        rustix::process::kill_process(pid, rustix::process::Signal::STOP).unwrap();
        kill_mid_turn(&tree, url, &mut store, &agent);
        let start = Instant::now();
        rustix::process::kill_process(pid, rustix::process::Signal::CONT).unwrap();
        committed(&mut lines, &agent);
        takeover.push(start.elapsed());
        running.kill().unwrap();
        running.wait().unwrap();
    }
    let _ = std::fs::remove_dir_all(&dir);
    let ms = |times: &[Duration]| {
        times
            .iter()
            .map(|t| format!("{:.0}", t.as_secs_f64() * 1e3))
            .collect::<Vec<_>>()
            .join(" ")
    };
    println!(
        "recovery after SIGKILL mid-turn, new worker started to the lost turn committed: {} ms",
        ms(&fresh)
    );
    println!(
        "recovery after SIGKILL mid-turn, a running worker takes over: {} ms",
        ms(&takeover)
    );
}
