//! Tick benchmarks: one npc agent (also with an action that runs long), a
//! large generated tree (per tick and per node visit), and 10,000 npc agents
//! ticked together on every core and on one.
//!
//! Before measuring, each workload is ticked until it settles and its mean
//! node visits per tick are printed, so that ns per visit can be read off
//! (criterion's throughput is set to the visits, rounded to an integer).

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use std::time::{Duration, Instant};

use aido::{
    Registry, Status, Tree, Value, batch::tick_all_into, compile_str, read_value, run_tick,
    tick::AgentTick,
};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

use common::{NPC, NPC_DB, count_nodes, large_tree};

/// Agents in the `tick_all` benches.
const AGENTS: usize = 10_000;

/// Samples of each kind in the interleaved `tick_all` speed-up measurement.
const SPEEDUP_SAMPLES: usize = 30;

/// Ticks in one npc cycle (nine of wandering, one of eating).
const NPC_CYCLE: usize = 10;

fn compile(name: &str, text: &str) -> Tree {
    compile_str(name, text, &Registry::new()).expect("the bench tree compiles")
}

/// Ticks `db` `warm_up` times, then `sample` more times, and returns the db
/// reached and the mean node visits per tick over the sample.
fn settle(tree: &Tree, mut db: Value, warm_up: u64, sample: u64) -> (Value, f64) {
    for _ in 0..warm_up {
        db = run_tick(db, tree).db;
    }
    let mut visits = 0;
    for _ in 0..sample {
        let tick = run_tick(db, tree);
        assert_ne!(tick.status, Status::Error, "{:?}", tick.error);
        visits += tick.steps;
        db = tick.db;
    }
    (db, visits as f64 / sample as f64)
}

/// Benchmarks one tick per iteration, each continuing from the last db.
fn bench_ticks(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    id: &str,
    tree: &Tree,
    db: &Value,
) {
    let mut db = db.clone();
    group.bench_function(id, |b| {
        b.iter(|| {
            let tick = run_tick(std::mem::take(&mut db), tree);
            db = tick.db;
            tick.status
        })
    });
}

fn tick(c: &mut Criterion) {
    let npc = compile("npc.edn", NPC);
    let (npc_db, npc_visits) = settle(&npc, read_value(NPC_DB).unwrap(), 1_000, 10_000);
    let large_text = large_tree(4, 5);
    let large = compile("large.edn", &large_text);
    let (large_db, large_visits) = settle(&large, Value::map(), 10_000, 10_000);
    eprintln!("tick/npc: {npc_visits:.2} node visits per tick");
    eprintln!(
        "tick/large: {} nodes, {large_visits:.2} node visits per tick",
        count_nodes(&large_text)
    );

    // npc whose wandering ends in a walk that runs long: nine ticks in ten
    // continue it, the tenth (eating) halts it; the running set, node memory
    // and halting are all at work.
    let running_text = NPC.replace(
        "[:define! {:key :action :val :wander}]",
        "[:define! {:key :action :val :wander}] [:wait {:id :walk :ticks 1000000000}]",
    );
    let running = compile("npc-running.edn", &running_text);
    let (running_db, _) = settle(&running, read_value(NPC_DB).unwrap(), 1_000, 1);

    // npc whose db also holds 10,000 keys the tree never reads: a tick must
    // cost about what it costs with the five keys of npc_db.
    let mut big_db = npc_db.clone();
    if let Value::Map(map) = &mut big_db {
        for i in 0..10_000 {
            map.insert(Value::keyword(&format!("other-{i}")), Value::Int(i));
        }
    }

    let mut group = c.benchmark_group("tick");
    bench_ticks(&mut group, "npc", &npc, &npc_db);
    bench_ticks(&mut group, "npc_10k_other_keys", &npc, &big_db);
    bench_ticks(&mut group, "npc_running", &running, &running_db);
    group.throughput(Throughput::Elements(npc_visits.round() as u64));
    bench_ticks(&mut group, "npc_visits", &npc, &npc_db);
    group.throughput(Throughput::Elements(large_visits.round() as u64));
    bench_ticks(&mut group, "large", &large, &large_db);
    group.finish();
}

fn tick_all(c: &mut Criterion) {
    let npc = compile("npc.edn", NPC);
    let (npc_db, _) = settle(&npc, read_value(NPC_DB).unwrap(), 1_000, 1);
    let mut dbs = vec![npc_db; AGENTS];
    let mut statuses = vec![AgentTick::default(); AGENTS];
    let one_thread = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    eprintln!(
        "tick_all: {} threads in rayon's global pool",
        rayon::current_num_threads()
    );

    // The speed-up over one thread, measured with the two interleaved so
    // that load from elsewhere on a shared machine hits both alike; the
    // fastest sample of each is the one least disturbed. A sample is a whole
    // npc cycle of rounds, so that both see every kind of tick.
    let (mut all, mut one) = (Duration::MAX, Duration::MAX);
    for _ in 0..SPEEDUP_SAMPLES {
        let start = Instant::now();
        for _ in 0..NPC_CYCLE {
            tick_all_into(&npc, &mut dbs, &mut statuses);
        }
        all = all.min(start.elapsed());
        let start = Instant::now();
        for _ in 0..NPC_CYCLE {
            one_thread.install(|| tick_all_into(&npc, &mut dbs, &mut statuses));
        }
        one = one.min(start.elapsed());
    }
    let round = |d: Duration| d / NPC_CYCLE as u32;
    eprintln!(
        "tick_all: {:.2}x the one-thread throughput ({:?} against {:?} a round; fastest of {SPEEDUP_SAMPLES} interleaved samples of {NPC_CYCLE} rounds each)",
        one.as_secs_f64() / all.as_secs_f64(),
        round(all),
        round(one)
    );

    let mut group = c.benchmark_group("tick_all");
    group.throughput(Throughput::Elements(AGENTS as u64));
    group.bench_function("npc_10k", |b| {
        b.iter(|| tick_all_into(&npc, &mut dbs, &mut statuses))
    });
    group.bench_function("npc_10k_1_thread", |b| {
        b.iter(|| one_thread.install(|| tick_all_into(&npc, &mut dbs, &mut statuses)))
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = common::config();
    targets = tick, tick_all
}
criterion_main!(benches);
