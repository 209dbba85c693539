//! Per-event workers against a PostgreSQL server (feature `postgres`):
//! a turn's commit latency (median and p99 of 1,000 turns of one
//! conversation: the input appended, then one `Worker::turn`), and turns per
//! second with 8 conversations served by 8 threads, each with its own
//! connection. The server is the one at `AIDO_BENCH_STORE` (a URL or
//! `host=... dbname=...`); its `aido` schema is dropped and made again.
//!
//! `AIDO_BENCH_STORE='host=/tmp/pg user=aido dbname=bench' cargo bench
//! --features postgres --bench store`
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

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
}
