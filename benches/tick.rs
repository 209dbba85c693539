//! Tick benchmarks: one npc agent (also with an action that runs long, and
//! with a db of many keys), a large generated tree (per tick and per node
//! visit), the cost of a visit in a tree of about 10,000 nodes against one
//! of about 100, and 10,000 npc agents ticked together on every core and on
//! one.
//!
//! Two references show how far the interpreter is from what is possible:
//! npc written by hand in Rust over aido's db, with a key hint per site as
//! the compiled tree has (checked to reach the same db as the tree), and a
//! node type registered in Rust that reads one option and one db key,
//! against the built-in `:test?` doing the same (declared to finish in one
//! visit, as a condition is, and without the declaration). Their ratios, and that of
//! npc with an action that runs long against npc, are printed
//! from one run in which the workloads take turns (see `common::interleaved`), so
//! that load from elsewhere on a shared machine hits all of them alike.
//!
//! Before measuring, each workload is ticked until it settles and its mean
//! node visits per tick are printed, so that ns per visit can be read off
//! (criterion's throughput is set to the visits, rounded to an integer).

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use std::time::{Duration, Instant};

use aido::extend::{NodeType, OptionType};
use aido::{
    Registry, Status, Tree, Value,
    batch::tick_all_into,
    compile_str, read_value, run_tick,
    tick::{AgentTick, tick_in_place},
};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

use common::hand::HandNpc;
use common::{NPC, NPC_DB, count_nodes, interleaved, large_tree};

/// Agents in the `tick_all` benches.
const AGENTS: usize = 10_000;

/// Samples of each kind in the interleaved `tick_all` speed-up measurement.
const SPEEDUP_SAMPLES: usize = 30;

/// Ticks in one npc cycle (nine of wandering, one of eating).
const NPC_CYCLE: usize = 10;

/// Samples of each workload in the interleaved reference comparisons.
const REFERENCE_SAMPLES: usize = 30;

/// Ticks in one sample of the interleaved reference comparisons.
const REFERENCE_TICKS: usize = 10_000;

/// A registry with `npc/hungry?`, a node type registered in Rust that
/// reads one option (`:min`) and one db key (`:key`), both through slots:
/// Success if the value at the key is above the minimum; declared to
/// finish in one visit, and as `npc/hungry-undeclared?` without that.
/// `[:test? {:key :hunger :oper > :val 8}]` is the same node built in.
fn domain_registry() -> Registry {
    let mut registry = Registry::new();
    registry.node_type(common::hungry()).unwrap();
    registry.node_type(common::hungry_undeclared()).unwrap();
    // The same node reading its option by name, as before slots.
    let hunger = Value::keyword("hunger");
    registry
        .node_type(
            NodeType::new("npc/hungry-by-name?")
                .required("min", OptionType::Int)
                .tick(move |ctx| {
                    #[allow(deprecated)]
                    let min = ctx.option("min")?.and_then(|v| v.as_int()).unwrap_or(0);
                    let above = matches!(ctx.db().get(&hunger), Some(Value::Int(h)) if *h > min);
                    Ok(Status::from_bool(above))
                }),
        )
        .unwrap();
    registry
}

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
    // The cost of a visit as the tree grows: a tree of about 100 nodes
    // against one of about 10,000, whose node table overflows L2.
    let (small_text, huge_text) = (large_tree(3, 5), large_tree(6, 5));
    let (small, huge) = (
        compile("small.edn", &small_text),
        compile("huge.edn", &huge_text),
    );
    let (mut small_db, small_visits) = settle(&small, Value::map(), 2_000, 1_000);
    let (mut huge_db, huge_visits) = settle(&huge, Value::map(), 2_000, 100);
    let (small_ticks, huge_ticks) = (2_000, 60);
    let per_visit = interleaved(
        30,
        &mut [
            &mut || {
                for _ in 0..small_ticks {
                    small_db = run_tick(std::mem::take(&mut small_db), &small).db;
                }
            },
            &mut || {
                for _ in 0..huge_ticks {
                    huge_db = run_tick(std::mem::take(&mut huge_db), &huge).db;
                }
            },
        ],
    );
    let small_ns = per_visit[0].as_nanos() as f64 / (small_ticks as f64 * small_visits);
    let huge_ns = per_visit[1].as_nanos() as f64 / (huge_ticks as f64 * huge_visits);
    eprintln!(
        "tick per visit, interleaved (fastest of 30):\n  \
         {} nodes ({small_visits:.0} visits a tick) {small_ns:.2} ns, \
         {} nodes ({huge_visits:.0} visits a tick) {huge_ns:.2} ns: {:.2}x",
        count_nodes(&small_text),
        count_nodes(&huge_text),
        huge_ns / small_ns,
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

    // The references, checked to do what the trees do.
    let hand = HandNpc::new();
    let mut hand_db = read_value(NPC_DB).unwrap();
    let mut tree_db = hand_db.clone();
    for _ in 0..100 {
        let want = run_tick(std::mem::take(&mut tree_db), &npc);
        tree_db = want.db;
        let got = hand.tick(hand_db.as_map_mut().unwrap());
        assert_eq!(got, want.status);
        assert_eq!(
            hand_db, tree_db,
            "the hand-written npc reaches the tree's db"
        );
    }
    let domain = compile_str(
        "domain.edn",
        "[:npc/hungry? {:key :hunger :min 8}]",
        &domain_registry(),
    )
    .unwrap();
    let undeclared = compile_str(
        "undeclared.edn",
        "[:npc/hungry-undeclared? {:key :hunger :min 8}]",
        &domain_registry(),
    )
    .unwrap();
    let by_name = compile_str(
        "by-name.edn",
        "[:npc/hungry-by-name? {:min 8}]",
        &domain_registry(),
    )
    .unwrap();
    let builtin = compile("test.edn", "[:test? {:key :hunger :oper > :val 8}]");
    for hunger in [0, 8, 9] {
        let mut db = npc_db.clone();
        db.as_map_mut()
            .unwrap()
            .insert(Value::keyword("hunger"), Value::Int(hunger));
        assert_eq!(
            run_tick(db.clone(), &domain).status,
            run_tick(db.clone(), &builtin).status
        );
        assert_eq!(
            run_tick(db.clone(), &undeclared).status,
            run_tick(db.clone(), &builtin).status
        );
        assert_eq!(
            run_tick(db.clone(), &by_name).status,
            run_tick(db, &builtin).status
        );
    }
    let mut small_db = npc_db.clone();
    // npc with 20 keys the tree never reads: above the 8 keys a short scan serves.
    let mut wide_db = npc_db.clone();
    if let Value::Map(map) = &mut wide_db {
        for i in 0..20 {
            map.insert(Value::keyword(&format!("other-{i}")), Value::Int(i));
        }
    }
    let (mut domain_db, mut builtin_db) = (npc_db.clone(), npc_db.clone());
    let mut by_name_db = npc_db.clone();
    let mut undeclared_db = npc_db.clone();
    let mut long_db = running_db.clone();
    let ticks = |tree: &Tree, db: &mut Value| {
        for _ in 0..REFERENCE_TICKS {
            tick_in_place(db, tree);
        }
    };
    let times = interleaved(
        REFERENCE_SAMPLES,
        &mut [
            &mut || ticks(&npc, &mut small_db),
            &mut || {
                let map = hand_db.as_map_mut().unwrap();
                for _ in 0..REFERENCE_TICKS {
                    std::hint::black_box(hand.tick(map));
                }
            },
            &mut || ticks(&npc, &mut wide_db),
            &mut || ticks(&domain, &mut domain_db),
            &mut || ticks(&builtin, &mut builtin_db),
            &mut || ticks(&by_name, &mut by_name_db),
            &mut || ticks(&running, &mut long_db),
            &mut || ticks(&undeclared, &mut undeclared_db),
        ],
    );
    let ns = |d: Duration| d.as_secs_f64() * 1e9 / REFERENCE_TICKS as f64;
    let (npc_ns, hand_ns, wide_ns, domain_ns, builtin_ns, by_name_ns, long_ns) = (
        ns(times[0]),
        ns(times[1]),
        ns(times[2]),
        ns(times[3]),
        ns(times[4]),
        ns(times[5]),
        ns(times[6]),
    );
    let undeclared_ns = ns(times[7]);
    eprintln!(
        "references (fastest of {REFERENCE_SAMPLES} interleaved samples of {REFERENCE_TICKS} ticks):\n  \
         npc {npc_ns:.1} ns, hand-written {hand_ns:.1} ns: {:.2}x\n  \
         npc with 20 other keys {wide_ns:.1} ns: {:.2}x npc\n  \
         domain node {domain_ns:.1} ns, :test? {builtin_ns:.1} ns: {:.2}x\n  \
         domain node not declared one-visit {undeclared_ns:.1} ns: {:.2}x :test?\n  \
         domain node reading its option by name {by_name_ns:.1} ns: {:.2}x :test?\n  \
         npc with a long action running (npc_running) {long_ns:.1} ns: {:.2}x npc",
        npc_ns / hand_ns,
        wide_ns / npc_ns,
        domain_ns / builtin_ns,
        undeclared_ns / builtin_ns,
        by_name_ns / builtin_ns,
        long_ns / npc_ns
    );

    let mut group = c.benchmark_group("tick");
    bench_ticks(&mut group, "npc", &npc, &npc_db);
    {
        let mut db = read_value(NPC_DB).unwrap();
        group.bench_function("npc_hand_written", |b| {
            let map = db.as_map_mut().unwrap();
            b.iter(|| hand.tick(map))
        });
    }
    bench_ticks(&mut group, "npc_20_other_keys", &npc, &wide_db);
    bench_ticks(&mut group, "domain_node", &domain, &npc_db);
    bench_ticks(&mut group, "domain_node_undeclared", &undeclared, &npc_db);
    bench_ticks(&mut group, "test_node", &builtin, &npc_db);
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
    // One thread is a plain loop on this thread: no pool, no scheduling.
    // (Running `tick_all_into` inside a one-thread rayon pool would not do:
    // it ticks on the crate's own pool, whatever pool calls it.)
    let one_thread = |dbs: &mut [Value], statuses: &mut [AgentTick]| {
        for (db, slot) in dbs.iter_mut().zip(statuses.iter_mut()) {
            *slot = tick_in_place(db, &npc);
        }
    };
    eprintln!(
        "tick_all: {} threads available",
        std::thread::available_parallelism().map_or(1, |n| n.get())
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
            one_thread(&mut dbs, &mut statuses);
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
        b.iter(|| one_thread(&mut dbs, &mut statuses))
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = common::config();
    targets = tick, tick_all
}
criterion_main!(benches);
