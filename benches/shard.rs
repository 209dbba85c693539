//! Shard-owned agents (`aido::store::shard`), in memory and in a throwaway
//! PostgreSQL cluster (started as the tests start theirs, tests/it/pg.rs;
//! without the server binaries only the memory figures are measured):
//!
//! - `tick/*`: one tick of a shard of 1,000 agents, journaled, without a
//!   checkpoint (`journal_only`) and with a checkpoint of every agent
//!   (`checkpoint_every_tick`: each tick changes every agent). The
//!   difference is the checkpoint of 1,000 agents, whence agents per second.
//! - `recover/*`: taking a shard over: its checkpoint of 1,000 agents loaded
//!   and 59 journaled ticks replayed.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use std::sync::Arc;

use aido::store::shard::{MemoryShards, ShardConfig, ShardEvent, ShardOwner, ShardStore};
use aido::{Registry, Tree, compile_str};
use criterion::{Criterion, criterion_group, criterion_main};

#[cfg(feature = "postgres")]
#[path = "../tests/it/pg.rs"]
#[allow(dead_code)]
mod pg;

const TREE: &str = "[:sequence
  [:inc! {:key :n}]
  [:randomly {:p 0.5} [:inc! {:key :heads}] [:inc! {:key :tails}]]
  [:wait {:seconds 0.05}]]";

const AGENTS: usize = 1_000;

fn tree() -> Arc<Tree> {
    Arc::new(compile_str("shard.edn", TREE, &Registry::new()).unwrap())
}

fn config(checkpoint_every: u64) -> ShardConfig {
    ShardConfig {
        shards: 1,
        checkpoint_every,
        lease_ms: 1 << 40,
    }
}

fn spawn() -> Vec<ShardEvent> {
    (0..AGENTS)
        .map(|i| ShardEvent::Input {
            agent: format!("agent-{i}"),
            input: Default::default(),
        })
        .collect()
}

/// A shard of 1,000 agents after its first tick, in `store`.
fn owner(store: &mut dyn ShardStore, checkpoint_every: u64) -> ShardOwner {
    let mut owner = ShardOwner::take(store, tree(), 0, "bench", 0, config(checkpoint_every))
        .unwrap()
        .unwrap();
    owner.tick(store, 0, 0.0, &spawn()).unwrap();
    owner
}

fn tick(c: &mut Criterion, name: &str, stores: &mut dyn FnMut() -> Box<dyn ShardStore>) {
    let mut group = c.benchmark_group(format!("tick/{name}"));
    group.sample_size(20);
    for (label, every) in [("journal_only", u64::MAX), ("checkpoint_every_tick", 1)] {
        let mut store = stores();
        let mut owner = owner(&mut *store, every);
        group.bench_function(label, |b| {
            b.iter(|| {
                let t = owner.tick_number() as f64;
                owner.tick(&mut *store, 0, t / 60.0, &[]).unwrap().len()
            })
        });
    }
    group.finish();
}

fn recover(c: &mut Criterion, name: &str, store: &mut dyn ShardStore) {
    let mut group = c.benchmark_group(format!("recover/{name}"));
    group.sample_size(10);
    // Checkpointed at tick 1, then 59 ticks journaled.
    let mut first = owner(store, 1_000);
    first.checkpoint(store).unwrap();
    for t in 2..=60 {
        first.tick(store, 0, f64::from(t) / 60.0, &[]).unwrap();
    }
    drop(first);
    let mut clock = 0;
    group.bench_function("1000_agents_59_ticks", |b| {
        b.iter(|| {
            // Each take finds the last owner's lease lapsed.
            clock += 1 << 41;
            let owner = ShardOwner::take(store, tree(), 0, "next", clock, config(1_000))
                .unwrap()
                .unwrap();
            assert_eq!(owner.replayed(), 59);
            owner.tick_number()
        })
    });
    group.finish();
}

fn shards(c: &mut Criterion) {
    tick(c, "memory", &mut || Box::new(MemoryShards::new()));
    recover(c, "memory", &mut MemoryShards::new());
    #[cfg(feature = "postgres")]
    {
        let Some(cluster) = pg::Cluster::start("shard bench") else {
            return;
        };
        let mut store = || -> Box<dyn ShardStore> {
            let url = cluster.database();
            aido::store::postgres::init(&url).unwrap();
            aido::store::pg_shard::init(&url).unwrap();
            Box::new(aido::store::pg_shard::PgShards::open(&url).unwrap())
        };
        tick(c, "postgres", &mut store);
        recover(c, "postgres", &mut *store());
    }
}

criterion_group!(benches, shards);
criterion_main!(benches);
