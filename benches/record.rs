//! What tracing and recording cost a tick: the npc workload ticked plain,
//! traced (into a trace buffer kept across ticks) and recorded by a
//! [`Recorder`] comparing the keys each tick wrote (as a session records:
//! what the timeline page, `aido test` and chat pay every tick) and
//! comparing every value of the db (a recorder's default), and a db whose
//! big map changes in one key every tick, recorded both ways.
//!
//! The ratios are printed from one run in which the workloads take turns
//! (see `common::interleaved`), so that load from elsewhere on a shared
//! machine hits all of them alike; criterion then measures each alone.

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use std::time::Duration;

use aido::record::Recorder;
use aido::tick::{TickOptions, TraceEvent, run_tick_traced};
use aido::{Registry, Tree, Value, compile_str, read_value, run_tick};
use criterion::{Criterion, criterion_group, criterion_main};

use common::{NPC, NPC_DB, interleaved};

/// Samples of each workload in the interleaved comparison.
const SAMPLES: usize = 30;

/// Ticks in one sample: a recorder is made afresh for each sample, so its
/// cost is spread over this many ticks.
const TICKS: usize = 10_000;

fn compile(name: &str, text: &str) -> Tree {
    compile_str(name, text, &Registry::new()).expect("the bench tree compiles")
}

fn traced() -> TickOptions {
    TickOptions {
        trace: true,
        ..TickOptions::default()
    }
}

/// Ticks `db` `TICKS` times, plain.
fn plain_ticks(tree: &Tree, db: &mut Value) {
    for _ in 0..TICKS {
        *db = run_tick(std::mem::take(db), tree).db;
    }
}

/// Ticks `db` `TICKS` times, traced into `trace`.
fn traced_ticks(tree: &Tree, db: &mut Value, trace: &mut Vec<TraceEvent>) {
    let options = traced();
    for _ in 0..TICKS {
        *db = run_tick_traced(std::mem::take(db), tree, &options, trace).db;
    }
}

/// Ticks `db` `TICKS` times with a fresh recorder, comparing only the
/// keys each tick wrote when `keyed`.
fn recorded_ticks(tree: &Tree, db: &mut Value, keyed: bool) {
    let mut recorder = Recorder::new(tree, db);
    if keyed {
        recorder = recorder.comparing_written_keys();
    }
    for _ in 0..TICKS {
        *db = recorder.tick(std::mem::take(db), tree).db;
    }
    std::hint::black_box(recorder.finish());
}

/// A tree that changes one key of a 1,000-key map each tick.
const BIG_MAP: &str = "[:inc! {:key [:big 500]}]";

fn big_map_db() -> Value {
    let mut big = aido::value::Map::default();
    for i in 0..1000 {
        big.insert(Value::Int(i), Value::Int(0));
    }
    let mut db = aido::value::Map::default();
    db.insert(Value::keyword("big"), Value::Map(Box::new(big)));
    Value::Map(Box::new(db))
}

/// The npc db with 1,000 more top-level keys that no node reads or writes.
fn npc_wide_db() -> Value {
    let mut db = read_value(NPC_DB).unwrap();
    let map = db.as_map_mut().unwrap();
    for i in 0..1000 {
        map.insert(Value::keyword(&format!("other-{i}")), Value::Int(i));
    }
    db
}

fn record(c: &mut Criterion) {
    let npc = compile("npc.edn", NPC);
    let big = compile("big-map.edn", BIG_MAP);
    let start = read_value(NPC_DB).unwrap();
    let (mut plain_db, mut traced_db) = (start.clone(), start.clone());
    let (mut recorded_db, mut full_db) = (start.clone(), start);
    let (mut big_plain_db, mut big_recorded_db, mut big_full_db) =
        (big_map_db(), big_map_db(), big_map_db());
    let (mut wide_plain_db, mut wide_recorded_db, mut wide_full_db) =
        (npc_wide_db(), npc_wide_db(), npc_wide_db());
    let mut trace = Vec::new();
    let times = interleaved(
        SAMPLES,
        &mut [
            &mut || plain_ticks(&npc, &mut plain_db),
            &mut || traced_ticks(&npc, &mut traced_db, &mut trace),
            &mut || recorded_ticks(&npc, &mut recorded_db, true),
            &mut || recorded_ticks(&npc, &mut full_db, false),
            &mut || plain_ticks(&big, &mut big_plain_db),
            &mut || recorded_ticks(&big, &mut big_recorded_db, true),
            &mut || recorded_ticks(&big, &mut big_full_db, false),
            &mut || plain_ticks(&npc, &mut wide_plain_db),
            &mut || recorded_ticks(&npc, &mut wide_recorded_db, true),
            &mut || recorded_ticks(&npc, &mut wide_full_db, false),
        ],
    );
    let ns: Vec<f64> = times
        .iter()
        .map(|d: &Duration| d.as_secs_f64() * 1e9 / TICKS as f64)
        .collect();
    let [
        plain,
        traced_ns,
        recorded,
        full,
        big_plain,
        big_recorded,
        big_full,
        wide_plain,
        wide_recorded,
        wide_full,
    ] = ns[..]
    else {
        unreachable!("ten workloads")
    };
    eprintln!(
        "record (fastest of {SAMPLES} interleaved samples of {TICKS} ticks):\n  \
         npc plain {plain:.1} ns, traced {traced_ns:.1} ns: {:.2}x, \
         recorded {recorded:.1} ns: {:.2}x (comparing every value: {full:.1} ns, {:.2}x)\n  \
         1,000-key map edited in one key: plain {big_plain:.1} ns, recorded {big_recorded:.1} ns: \
         {:.2}x (comparing every value: {big_full:.1} ns, {:.2}x)\n  \
         npc with 1,000 other keys: plain {wide_plain:.1} ns, recorded {wide_recorded:.1} ns: \
         {:.2}x (comparing every value: {wide_full:.1} ns, {:.2}x)",
        traced_ns / plain,
        recorded / plain,
        full / plain,
        big_recorded / big_plain,
        big_full / big_plain,
        wide_recorded / wide_plain,
        wide_full / wide_plain,
    );

    let mut group = c.benchmark_group("record");
    let mut db = read_value(NPC_DB).unwrap();
    group.bench_function("npc_traced", |b| {
        b.iter(|| {
            db = run_tick_traced(std::mem::take(&mut db), &npc, &traced(), &mut trace).db;
        })
    });
    // A fresh recorder every `TICKS` ticks, so that the record stays small.
    let mut recorder = Recorder::new(&npc, &db).comparing_written_keys();
    let mut recorded = 0;
    group.bench_function("npc_recorded", |b| {
        b.iter(|| {
            if recorded == TICKS {
                recorder = Recorder::new(&npc, &db).comparing_written_keys();
                recorded = 0;
            }
            recorded += 1;
            db = recorder.tick(std::mem::take(&mut db), &npc).db;
        })
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = common::config();
    targets = record
}
criterion_main!(benches);
