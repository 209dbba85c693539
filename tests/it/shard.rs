//! Shard-owned agents (`aido::store::shard`): leases with epochs, fenced
//! writes, the journal and its exact replay, in memory; the same against a
//! throwaway PostgreSQL cluster (feature `postgres`), and the fault tests
//! of `aido shard` (tests/it/shard_faults.rs).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use aido::handler::Completion;
use aido::store::shard::{
    MemoryShards, ShardConfig, ShardErrorKind, ShardEvent, ShardOwner, ShardStore, agent_seed,
    shard_of,
};
use aido::tick::Request;
use aido::value::Keyword;
use aido::value::encode;
use aido::{Registry, Status, Tree, Value, compile_str, read_value};

/// Every tick: `:n` counts up, a coin is drawn from the agent's seed, and a
/// deferred action waits for its completion.
pub(crate) const TREE: &str = "[:sequence
  [:inc! {:key :n}]
  [:randomly {:p 0.5} [:inc! {:key :heads}] [:inc! {:key :tails}]]
  [:defer {:id :ask :action :svc/ask :into :reply}]]";

pub(crate) fn tree() -> Arc<Tree> {
    Arc::new(compile_str("shard.edn", TREE, &Registry::new()).unwrap())
}

pub(crate) const AGENTS: usize = 6;

/// What tick `t` receives: the agents made at tick 1, an input to one agent
/// a tick, and completions of the first two requests of agent a0.
pub(crate) fn events(t: u64) -> Vec<ShardEvent> {
    let mut events = Vec::new();
    if t == 1 {
        for i in 0..AGENTS {
            events.push(ShardEvent::Input {
                agent: format!("a{i}"),
                input: Default::default(),
            });
        }
    }
    let input = read_value(&format!("{{:msg {t}}}"))
        .unwrap()
        .into_map()
        .unwrap();
    events.push(ShardEvent::Input {
        agent: format!("a{}", t % AGENTS as u64),
        input,
    });
    for (at, request) in [(5, 1), (17, 2)] {
        if t == at {
            events.push(ShardEvent::Completion {
                agent: "a0".into(),
                completion: Completion::new(
                    &Request {
                        node: Value::keyword("ask"),
                        request,
                        action: Keyword::new("svc/ask"),
                        options: Default::default(),
                    },
                    Status::Success,
                    Some(Value::string(&format!("answer {request}"))),
                ),
            });
        }
    }
    events
}

pub(crate) fn config(checkpoint_every: u64) -> ShardConfig {
    ShardConfig {
        shards: 1,
        checkpoint_every,
        lease_ms: 1_000,
    }
}

/// Ticks `owner` from its next tick through `last`, at 10 Hz of logical time.
pub(crate) fn run_to(owner: &mut ShardOwner, store: &mut dyn ShardStore, clock: i64, last: u64) {
    while owner.tick_number() < last {
        let t = owner.tick_number() + 1;
        owner
            .tick(store, clock, (t - 1) as f64 / 10.0, &events(t))
            .unwrap();
    }
}

/// Every agent's encoded db, by key.
pub(crate) fn encoded<'a>(
    agents: impl Iterator<Item = (&'a str, &'a Value)>,
) -> Vec<(String, Vec<u8>)> {
    let mut all: Vec<_> = agents
        .map(|(k, db)| (k.to_owned(), encode(db).unwrap()))
        .collect();
    all.sort();
    all
}

/// The dbs of a shard ticked `ticks` times in one go, never interrupted.
pub(crate) fn reference(ticks: u64) -> Vec<(String, Vec<u8>)> {
    let mut store = MemoryShards::new();
    let mut owner = ShardOwner::take(&mut store, tree(), 0, "ref", 0, config(7))
        .unwrap()
        .unwrap();
    run_to(&mut owner, &mut store, 0, ticks);
    encoded(owner.agents())
}

#[test]
fn keys_hash_into_shards_by_a_fixed_function() {
    // FNV-1a 64 of the key: the values are fixed, since stored shards
    // depend on them.
    assert_eq!(shard_of("agent-1", 16), 0);
    assert_eq!(shard_of("a0", 16), 4);
    assert_eq!(shard_of("npc-42", 16), 1);
    assert_eq!(shard_of("", 16), 5);
    assert_eq!(shard_of("npc-42", 0), 0);
    assert_eq!(agent_seed("a0"), 310_195_336_492_786_106);
}

#[test]
fn an_agent_is_made_seeded_and_completions_reach_its_tree() {
    let mut store = MemoryShards::new();
    let mut owner = ShardOwner::take(&mut store, tree(), 0, "w", 0, config(4))
        .unwrap()
        .unwrap();
    run_to(&mut owner, &mut store, 0, 20);
    let a0 = owner.agent("a0").unwrap();
    assert_eq!(a0.get(&Value::keyword("n")), Some(&Value::Int(20)));
    assert_eq!(
        a0.get(&Value::keyword("aido/seed")),
        Some(&Value::Int(agent_seed("a0")))
    );
    assert_eq!(
        a0.get(&Value::keyword("aido/now")),
        Some(&Value::Float(1.9))
    );
    // Both answers were applied: the second one is the reply now.
    assert_eq!(
        a0.get(&Value::keyword("reply")),
        Some(&Value::string("answer 2"))
    );
    // The seeds differ, so the coins do: not every agent has the same draws.
    let heads: Vec<_> = owner
        .agents()
        .map(|(_, db)| db.get(&Value::keyword("heads")).cloned())
        .collect();
    assert!(heads.iter().any(|h| h != &heads[0]), "{heads:?}");
    // The checkpoint at tick 20 holds every agent as it is.
    let mut checkpointed = store.checkpointed(0);
    checkpointed.sort();
    assert_eq!(checkpointed, encoded(owner.agents()));
}

#[test]
fn a_new_owner_replays_the_journal_into_the_dbs_of_a_run_never_interrupted() {
    for crash_at in [3, 7, 13, 14, 20] {
        let mut store = MemoryShards::new();
        let mut first = ShardOwner::take(&mut store, tree(), 0, "first", 0, config(7))
            .unwrap()
            .unwrap();
        run_to(&mut first, &mut store, 0, crash_at);
        // The first owner dies here: what it held in memory is gone.
        drop(first);
        // Its lease runs until 1,000: no one takes the shard before.
        assert!(
            ShardOwner::take(&mut store, tree(), 0, "second", 999, config(7))
                .unwrap()
                .is_none()
        );
        let mut second = ShardOwner::take(&mut store, tree(), 0, "second", 1_000, config(7))
            .unwrap()
            .unwrap();
        assert_eq!(second.lease().epoch, 2);
        assert_eq!(second.tick_number(), crash_at);
        assert_eq!(second.replayed(), crash_at % 7, "crash at {crash_at}");
        run_to(&mut second, &mut store, 1_000, 30);
        assert_eq!(
            encoded(second.agents()),
            reference(30),
            "crash at {crash_at}"
        );
    }
}

#[test]
fn a_paused_owner_whose_shard_was_taken_writes_nothing() {
    let mut store = MemoryShards::new();
    let mut first = ShardOwner::take(&mut store, tree(), 0, "first", 0, config(5))
        .unwrap()
        .unwrap();
    run_to(&mut first, &mut store, 0, 12);
    // The first owner stops answering; its lease lapses and another takes
    // the shard, replays ticks 11 and 12 and goes on.
    let mut second = ShardOwner::take(&mut store, tree(), 0, "second", 1_500, config(5))
        .unwrap()
        .unwrap();
    run_to(&mut second, &mut store, 1_500, 15);
    let before = store.checkpointed(0);
    // The first owner wakes up: its tick, its checkpoint and its release
    // are all refused, and the store is as the second owner left it.
    let err = first.tick(&mut store, 1_600, 1.2, &events(13)).unwrap_err();
    assert!(err.is_fenced(), "{err}");
    assert_eq!(err.code(), "S0101");
    assert!(matches!(
        err.kind,
        ShardErrorKind::Fenced {
            shard: 0,
            epoch: 1,
            found: 2
        }
    ));
    assert!(first.checkpoint(&mut store).unwrap_err().is_fenced());
    assert!(first.release(&mut store).unwrap_err().is_fenced());
    assert_eq!(store.checkpointed(0), before);
    run_to(&mut second, &mut store, 1_600, 30);
    assert_eq!(encoded(second.agents()), reference(30));
}

#[test]
fn a_live_owner_keeps_its_lease_by_renewing_it() {
    let mut store = MemoryShards::new();
    let mut owner = ShardOwner::take(&mut store, tree(), 0, "w", 0, config(5))
        .unwrap()
        .unwrap();
    // Ticks every 100 ms for ten lease lengths: renewed at each half.
    for step in 1..=100 {
        let clock = step * 100;
        let t = owner.tick_number() + 1;
        owner.tick(&mut store, clock, 0.0, &events(t)).unwrap();
        assert!(
            ShardOwner::take(&mut store, tree(), 0, "other", clock, config(5))
                .unwrap()
                .is_none(),
            "taken at {clock}"
        );
    }
    // Released, the shard is free at once, with the checkpoint written.
    owner.release(&mut store).unwrap();
    let next = ShardOwner::take(&mut store, tree(), 0, "other", 10_001, config(5))
        .unwrap()
        .unwrap();
    assert_eq!((next.tick_number(), next.replayed()), (100, 0));
}

#[test]
fn events_for_another_shard_and_another_shard_count_are_refused() {
    let mut store = MemoryShards::new();
    let four = ShardConfig {
        shards: 4,
        ..config(5)
    };
    let mut owner = ShardOwner::take(&mut store, tree(), 1, "w", 0, four)
        .unwrap()
        .unwrap();
    let event = ShardEvent::Input {
        agent: "a0".into(),
        input: Default::default(),
    };
    let err = owner.tick(&mut store, 0, 0.0, &[event]).unwrap_err();
    assert_eq!(err.code(), "S0103");
    assert_eq!(owner.tick_number(), 0, "nothing was ticked");
    let err = ShardOwner::take(&mut store, tree(), 1, "v", 5_000, config(5)).unwrap_err();
    assert_eq!(err.code(), "S0102");
}

#[cfg(feature = "postgres")]
mod postgres {
    use super::*;
    use aido::store::pg_shard::{PgShards, init as shard_init};
    use aido::store::postgres::init;

    #[test]
    fn postgres_shards_replay_and_fence_as_memory_does() {
        let Some(cluster) = crate::pg::shared("postgres_shards_replay_and_fence_as_memory_does")
        else {
            return;
        };
        let url = cluster.database();
        // Before init: one clear error.
        assert_eq!(PgShards::open(&url).unwrap_err().code(), "S0008");
        init(&url).unwrap();
        assert!(shard_init(&url).unwrap());
        assert!(!shard_init(&url).unwrap());
        let mut one = PgShards::open(&url).unwrap();
        let mut two = PgShards::open(&url).unwrap();
        let mut first = ShardOwner::take(&mut one, tree(), 0, "first", 0, config(7))
            .unwrap()
            .unwrap();
        run_to(&mut first, &mut one, 0, 10);
        assert!(
            ShardOwner::take(&mut two, tree(), 0, "second", 500, config(7))
                .unwrap()
                .is_none()
        );
        let mut second = ShardOwner::take(&mut two, tree(), 0, "second", 1_000, config(7))
            .unwrap()
            .unwrap();
        assert_eq!((second.tick_number(), second.replayed()), (10, 3));
        let err = first.tick(&mut one, 1_000, 1.0, &events(11)).unwrap_err();
        assert!(err.is_fenced(), "{err}");
        run_to(&mut second, &mut two, 1_000, 30);
        assert_eq!(encoded(second.agents()), reference(30));
        second.release(&mut two).unwrap();
        // Loaded again, the checkpoint alone gives the same dbs.
        let third = ShardOwner::take(&mut one, tree(), 0, "third", 1_000, config(7))
            .unwrap()
            .unwrap();
        assert_eq!((third.tick_number(), third.replayed()), (30, 0));
        assert_eq!(encoded(third.agents()), reference(30));
        // Another shard count, and a shard schema of another version.
        let err = ShardOwner::take(
            &mut two,
            tree(),
            0,
            "w",
            9_000,
            ShardConfig {
                shards: 2,
                ..config(7)
            },
        )
        .unwrap_err();
        assert_eq!(err.code(), "S0102");
        let mut client = ::postgres::Client::connect(&url, ::postgres::NoTls).unwrap();
        client
            .execute("UPDATE aido.shard_meta SET schema_version = 99", &[])
            .unwrap();
        assert_eq!(PgShards::open(&url).unwrap_err().code(), "S0007");
        assert_eq!(shard_init(&url).unwrap_err().code(), "S0007");
    }
}

/// Built without the `postgres` feature, `aido shard` checks its flags,
/// then says so in one line (run by `cargo test` without the feature).
#[cfg(not(feature = "postgres"))]
#[test]
fn without_the_postgres_feature_the_shard_command_says_so() {
    let dir = std::env::temp_dir().join(format!("aido-shard-nopg-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let tree = dir.join("t.edn");
    std::fs::write(&tree, TREE).unwrap();
    let run = crate::common::Run::of(
        std::process::Command::new(env!("CARGO_BIN_EXE_aido"))
            .arg("shard")
            .arg(&tree)
            .args(["--store", "postgres://localhost/x", "--shards", "4"]),
    );
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(run.code, 2);
    assert_eq!(
        run.stderr,
        "aido: store: this aido was built without the `postgres` feature \
         (cargo build --features postgres)\n"
    );
}
