//! The store seam: `next_wake` over today's node types, and the store
//! contract, the same checks run against `MemoryStore` and (feature
//! `postgres`) a throwaway PostgreSQL cluster: version conflicts, inbox
//! order, duplicate completions, an idempotent outbox, leases that expire,
//! dbs that read back exactly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use aido::store::{Commit, InboxItem, MemoryStore, OutboxEntry, OutboxKind, Store, StoreErrorKind};
use aido::tick::{Wake, next_wake};
use aido::value::encode;
use aido::{Registry, Status, Value, compile_str, read_value, run_tick};

fn tree(text: &str) -> aido::Tree {
    compile_str("t.edn", text, &Registry::new()).unwrap()
}

// ---- next_wake ----

#[test]
fn next_wake_reads_the_running_set() {
    let waits = tree("[:sequence [:wait {:ticks 3}] [:defer {:id :ask, :action :ask}]]");
    // Never ticked: nothing runs, the first event starts it.
    assert_eq!(next_wake(&Value::map(), &waits), Wake::OnEvent);
    let t1 = run_tick(Value::map(), &waits);
    assert_eq!(t1.status, Status::Running);
    assert_eq!(next_wake(&t1.db, &waits), Wake::Ticks(2));
    let t2 = run_tick(t1.db, &waits);
    assert_eq!(next_wake(&t2.db, &waits), Wake::Ticks(1));
    let t3 = run_tick(t2.db, &waits);
    let t4 = run_tick(t3.db, &waits);
    // The wait is done; the defer waits for its completion.
    assert_eq!(t4.launches().len(), 1);
    assert_eq!(next_wake(&t4.db, &waits), Wake::OnEvent);
    // A completion waiting under :aido/results wants a tick now.
    let mut db = t4.db.clone();
    let launched = &t4.launches()[0];
    let completion = Value::map_from([
        (Value::keyword("request"), Value::Int(launched.request)),
        (Value::keyword("status"), Value::keyword("success")),
    ]);
    db.as_map_mut().unwrap().insert(
        Value::keyword("aido/results"),
        Value::map_from([(launched.node.clone(), completion)]),
    );
    assert_eq!(next_wake(&db, &waits), Wake::Now);
    let t5 = run_tick(db, &waits);
    assert_eq!(t5.status, Status::Success);
    // Finished: only an event ticks it again.
    assert_eq!(next_wake(&t5.db, &waits), Wake::OnEvent);
}

#[test]
fn next_wake_is_now_for_what_may_change_on_any_tick() {
    // A wait whose count comes from the db may change with the db.
    let dynamic = tree("[:wait {:ticks [:aido/db :n]}]");
    let t = run_tick(read_value("{:n 5}").unwrap(), &dynamic);
    assert_eq!(t.status, Status::Running);
    assert_eq!(next_wake(&t.db, &dynamic), Wake::Now);
    // A db of another tree: the tick migrates it first.
    let other = tree("[:selector [:wait {:ticks 9}]]");
    assert_eq!(next_wake(&t.db, &other), Wake::Now);
    // A db that is not a map never ticks.
    assert_eq!(next_wake(&Value::Int(1), &dynamic), Wake::Never);
}

#[test]
fn next_wake_of_a_parallel_is_its_most_urgent_leaf() {
    let both = tree(
        "[:parallel {:policy :sequence} [:wait {:ticks 5}] [:wait {:ticks 2}] [:defer {:action :a}]]",
    );
    let t = run_tick(Value::map(), &both);
    assert_eq!(next_wake(&t.db, &both), Wake::Ticks(1));
    assert!(Wake::Now < Wake::Ticks(1) && Wake::Ticks(9) < Wake::OnEvent);
}

#[test]
fn next_wake_of_timed_nodes_is_the_time_their_period_ends() {
    // `:aido/now` is 2.5 s at the first tick: the wait ends at 2.5 + 1.25 s.
    let wait = tree("[:wait {:id :w, :seconds 1.25}]");
    let t = run_tick(read_value("{:aido/now 2.5}").unwrap(), &wait);
    assert_eq!(t.status, Status::Running);
    assert_eq!(next_wake(&t.db, &wait), Wake::At(3750));
    // A timeout in seconds over a deferred action: its end, not the event.
    let timeout = tree("[:timeout {:id :t, :seconds 2} [:defer {:id :ask, :action :ask}]]");
    let t = run_tick(read_value("{:aido/now 10}").unwrap(), &timeout);
    assert_eq!(t.status, Status::Running);
    assert_eq!(next_wake(&t.db, &timeout), Wake::At(12000));
    // One that counts its own ticks needs them.
    let ticks = tree("[:timeout {:id :t, :ticks 3} [:defer {:id :ask, :action :ask}]]");
    let t = run_tick(Value::map(), &ticks);
    assert_eq!(next_wake(&t.db, &ticks), Wake::Now);
    // A retry between attempts ticks again now.
    let retry = tree("[:retry {:id :r, :count 3} [:failure]]");
    let t = run_tick(Value::map(), &retry);
    assert_eq!(t.status, Status::Running);
    assert_eq!(next_wake(&t.db, &retry), Wake::Now);
}

// ---- the contract ----

fn input(n: i64) -> InboxItem {
    InboxItem::Input(Value::map_from([(Value::keyword("n"), Value::Int(n))]))
}

fn commit_of(db: Value, consumed: Vec<i64>, outbox: Vec<OutboxEntry>) -> Commit {
    Commit {
        db,
        tree: 42,
        wake: Wake::OnEvent,
        consumed,
        outbox,
    }
}

fn launch(request: i64) -> OutboxEntry {
    OutboxEntry {
        request,
        kind: OutboxKind::Launch,
        value: Value::map_from([(Value::keyword("request"), Value::Int(request))]),
    }
}

fn db(n: i64) -> Value {
    Value::map_from([(Value::keyword("n"), Value::Int(n))])
}

/// Commits that expect a version other than the stored one change nothing.
fn version_conflicts(store: &mut dyn Store) {
    assert!(store.load("a").unwrap().is_none());
    assert_eq!(
        store
            .commit("a", 0, commit_of(db(1), vec![], vec![]))
            .unwrap(),
        1
    );
    let err = store
        .commit("a", 0, commit_of(db(99), vec![], vec![]))
        .unwrap_err();
    assert_eq!(err.code(), "S0001");
    assert!(matches!(
        err.kind,
        StoreErrorKind::Conflict {
            expected: 0,
            found: 1,
            ..
        }
    ));
    let loaded = store.load("a").unwrap().unwrap();
    assert_eq!(
        (loaded.version, loaded.db.clone(), loaded.tree),
        (1, db(1), 42)
    );
    assert_eq!(
        store
            .commit("a", 1, commit_of(db(2), vec![], vec![]))
            .unwrap(),
        2
    );
    // A second worker that loaded version 1 loses, and its inbox
    // consumption and launches with it.
    let seq = store.append("a", input(1)).unwrap();
    let err = store
        .commit("a", 1, commit_of(db(99), vec![seq], vec![launch(1)]))
        .unwrap_err();
    assert!(matches!(
        err.kind,
        StoreErrorKind::Conflict {
            expected: 1,
            found: 2,
            ..
        }
    ));
    assert_eq!(store.load("a").unwrap().unwrap().db, db(2));
    assert_eq!(store.inbox("a").unwrap().len(), 1);
    assert!(store.outbox("a").unwrap().is_empty());
    let summary = store.agents().unwrap();
    assert_eq!(summary.len(), 1);
    assert_eq!((summary[0].key.as_str(), summary[0].version), ("a", 2));
}

/// The inbox reads in the order it was appended, per agent, and a commit
/// removes exactly what it consumed.
fn inbox_order(store: &mut dyn Store) {
    let mut seqs = Vec::new();
    for n in 1..=5 {
        seqs.push(store.append("a", input(n)).unwrap());
        store.append("b", input(100 + n)).unwrap();
    }
    let inbox = store.inbox("a").unwrap();
    assert_eq!(inbox.iter().map(|e| e.seq).collect::<Vec<_>>(), seqs);
    assert_eq!(
        inbox.iter().map(|e| e.item.clone()).collect::<Vec<_>>(),
        (1..=5).map(input).collect::<Vec<_>>()
    );
    store
        .commit("a", 0, commit_of(db(2), seqs[..2].to_vec(), vec![]))
        .unwrap();
    let left = store.inbox("a").unwrap();
    assert_eq!(
        left.iter().map(|e| e.item.clone()).collect::<Vec<_>>(),
        (3..=5).map(input).collect::<Vec<_>>()
    );
    // Another agent's entries are not consumed by naming their seq.
    let b = store.inbox("b").unwrap();
    store
        .commit("a", 1, commit_of(db(3), vec![b[0].seq], vec![]))
        .unwrap();
    assert_eq!(store.inbox("b").unwrap().len(), 5);
    // An input that is not a map is refused.
    let err = store
        .append("a", InboxItem::Input(Value::Int(1)))
        .unwrap_err();
    assert_eq!(err.code(), "S0010");
}

/// One completion per (agent, request) waits at a time.
fn duplicate_completion_rejected(store: &mut dyn Store) {
    let done = |n| InboxItem::Completion {
        request: 7,
        value: read_value(&format!("{{:status :success :result {n}}}")).unwrap(),
    };
    store.append("a", done(1)).unwrap();
    let err = store.append("a", done(2)).unwrap_err();
    assert_eq!(err.code(), "S0002");
    assert!(matches!(
        err.kind,
        StoreErrorKind::DuplicateCompletion { request: 7, .. }
    ));
    // The same request id of another agent is another request.
    store.append("b", done(3)).unwrap();
    let inbox = store.inbox("a").unwrap();
    assert_eq!(inbox.len(), 1);
    assert_eq!(inbox[0].item, done(1));
}

/// A launch is written once however often a turn is retried.
fn outbox_idempotent(store: &mut dyn Store) {
    store
        .commit("a", 0, commit_of(db(1), vec![], vec![launch(1)]))
        .unwrap();
    store
        .commit("a", 1, commit_of(db(1), vec![], vec![launch(1), launch(2)]))
        .unwrap();
    let cancel = OutboxEntry {
        kind: OutboxKind::Cancel,
        ..launch(1)
    };
    store
        .commit(
            "a",
            2,
            commit_of(db(1), vec![], vec![launch(2), cancel.clone()]),
        )
        .unwrap();
    assert_eq!(
        store.outbox("a").unwrap(),
        vec![launch(1), launch(2), cancel]
    );
}

/// A claim holds its entries until its lease ends; then another dispatcher
/// takes them, and the first one's finish changes nothing.
fn lease_expiry(store: &mut dyn Store) {
    store
        .commit("a", 0, commit_of(db(1), vec![], vec![launch(1), launch(2)]))
        .unwrap();
    let first = store.claim(1_000, 100, 1).unwrap();
    assert_eq!(first.len(), 1);
    assert_eq!(first[0].entry, launch(1));
    assert_eq!(first[0].idempotency_key(), "a/1");
    // A second dispatcher skips the held entry.
    let second = store.claim(1_010, 100, 10).unwrap();
    assert_eq!(
        second.iter().map(|c| c.entry.request).collect::<Vec<_>>(),
        [2]
    );
    assert!(store.claim(1_050, 100, 10).unwrap().is_empty());
    // The first lease ends: a third dispatcher takes request 1 again.
    let third = store.claim(1_100, 100, 10).unwrap();
    assert_eq!(
        third.iter().map(|c| c.entry.request).collect::<Vec<_>>(),
        [1]
    );
    let answer = read_value("{:status :success :result :late}").unwrap();
    let err = store.finish(&first[0], Some(answer)).unwrap_err();
    assert_eq!(err.code(), "S0003");
    assert!(store.inbox("a").unwrap().is_empty());
    let answer = read_value("{:status :success :result :ok}").unwrap();
    store.finish(&third[0], Some(answer.clone())).unwrap();
    assert_eq!(
        store.inbox("a").unwrap()[0].item,
        InboxItem::Completion {
            request: 1,
            value: answer
        }
    );
    // Finished once; a second finish of the same claim is lost.
    assert_eq!(store.finish(&third[0], None).unwrap_err().code(), "S0003");
    // A cancel (or a launch finished without completion) just goes.
    store.finish(&second[0], None).unwrap();
    assert!(store.outbox("a").unwrap().is_empty());
}

/// A db reads back from the store exactly as it was committed.
fn encoding_round_trip(store: &mut dyn Store) {
    let tricky = read_value(
        "{:nan ##NaN, :neg-zero -0.0, :inf ##-Inf, :big 9223372036854775807, :min -9223372036854775808, \
         :list (1 \"two\" \\3), :set #{[1] (2)}, :tagged #my/tag {:a #{}}, \
         :text \"héllo\\n\\u0000\", :sym a/b, \"key\" [nil true false], \
         :aido/memory {\"x\" {:ticks 1}}, :aido/running [\"x\"]}",
    )
    .unwrap();
    store
        .commit("a", 0, commit_of(tricky.clone(), vec![], vec![]))
        .unwrap();
    let back = store.load("a").unwrap().unwrap().db;
    assert_eq!(encode(&back).unwrap(), encode(&tricky).unwrap());
    assert_eq!(back.to_string(), tricky.to_string());
}

/// A turn's launches go into the outbox with the commit of its tick, and
/// its completion comes back through the inbox to the `:defer` waiting.
fn a_turn_with_a_deferred_action(store: &mut dyn Store) {
    let t = tree("[:defer {:id :ask, :action :llm/ask, :into :answer, :prompt \"hi?\"}]");
    let first = run_tick(Value::map(), &t);
    let outbox: Vec<OutboxEntry> = first.launches().iter().map(OutboxEntry::launch).collect();
    let commit = Commit {
        db: first.db.clone(),
        tree: t.fingerprint(),
        wake: next_wake(&first.db, &t),
        consumed: vec![],
        outbox,
    };
    store.commit("a", 0, commit).unwrap();
    let loaded = store.load("a").unwrap().unwrap();
    assert_eq!((loaded.wake, loaded.tree), (Wake::OnEvent, t.fingerprint()));
    let claim = store.claim(0, 1_000, 10).unwrap().remove(0);
    assert_eq!(
        claim.entry.value,
        read_value("{:node :ask, :request 1, :action :llm/ask, :options {:prompt \"hi?\"}}")
            .unwrap()
    );
    let completion = read_value("{:request 1, :status :success, :result \"hello\"}").unwrap();
    store.finish(&claim, Some(completion)).unwrap();
    // What a worker will do: the completion under :aido/results, a tick.
    let inbox = store.inbox("a").unwrap();
    let InboxItem::Completion { value, .. } = &inbox[0].item else {
        panic!("{inbox:?}")
    };
    let mut db = loaded.db;
    db.as_map_mut().unwrap().insert(
        Value::keyword("aido/results"),
        Value::map_from([(Value::keyword("ask"), value.clone())]),
    );
    let done = run_tick(db, &t);
    assert_eq!(done.status, Status::Success);
    let commit = commit_of(done.db, vec![inbox[0].seq], vec![]);
    assert_eq!(store.commit("a", loaded.version, commit).unwrap(), 2);
    let after = store.load("a").unwrap().unwrap().db;
    assert_eq!(
        after.get(&Value::keyword("answer")),
        Some(&Value::string("hello"))
    );
    assert!(store.inbox("a").unwrap().is_empty() && store.outbox("a").unwrap().is_empty());
}

type Check = fn(&mut dyn Store);

const CONTRACT: &[(&str, Check)] = &[
    ("version_conflicts", version_conflicts),
    ("inbox_order", inbox_order),
    (
        "duplicate_completion_rejected",
        duplicate_completion_rejected,
    ),
    ("outbox_idempotent", outbox_idempotent),
    ("lease_expiry", lease_expiry),
    ("encoding_round_trip", encoding_round_trip),
    (
        "a_turn_with_a_deferred_action",
        a_turn_with_a_deferred_action,
    ),
];

#[test]
fn the_memory_store_keeps_the_contract() {
    for (name, check) in CONTRACT {
        eprintln!("memory: {name}");
        check(&mut MemoryStore::new());
    }
}

#[cfg(feature = "postgres")]
mod postgres {
    use super::*;
    use crate::pg::Cluster;
    use aido::store::postgres::{Init, PgStore, SCHEMA_VERSION, init};

    /// The PostgreSQL store, each part in databases of its own on one
    /// throwaway cluster (starting a cluster is most of a part's time).
    #[test]
    fn postgres_store() {
        let Some(cluster) = crate::pg::shared("postgres_store") else {
            return;
        };
        postgres_keeps_the_contract(cluster);
        postgres_across_connections(cluster);
        the_store_commands_through_the_binary(cluster);
    }

    fn postgres_keeps_the_contract(cluster: &Cluster) {
        for (name, check) in CONTRACT {
            eprintln!("postgres: {name}");
            let url = cluster.database();
            assert_eq!(init(&url).unwrap(), Init::Created);
            check(&mut PgStore::open(&url).unwrap());
        }
    }

    fn postgres_across_connections(cluster: &Cluster) {
        let url = cluster.database();
        // Opening before init: one clear error.
        assert_eq!(PgStore::open(&url).unwrap_err().code(), "S0008");
        assert_eq!(init(&url).unwrap(), Init::Created);
        assert_eq!(init(&url).unwrap(), Init::AlreadyCurrent);
        let mut one = PgStore::open(&url).unwrap();
        let mut two = PgStore::open(&url).unwrap();
        one.commit("a", 0, commit_of(db(1), vec![], vec![launch(1), launch(2)]))
            .unwrap();
        // Both workers load version 1; the second commit conflicts.
        let v1 = one.load("a").unwrap().unwrap().version;
        let v2 = two.load("a").unwrap().unwrap().version;
        one.commit("a", v1, commit_of(db(2), vec![], vec![]))
            .unwrap();
        let err = two
            .commit("a", v2, commit_of(db(3), vec![], vec![]))
            .unwrap_err();
        assert_eq!(err.code(), "S0001");
        assert_eq!(two.load("a").unwrap().unwrap().db, db(2));
        // Two dispatchers claim different entries.
        let a = one.claim(0, 1_000, 1).unwrap();
        let b = two.claim(0, 1_000, 1).unwrap();
        assert_eq!((a.len(), b.len()), (1, 1));
        assert_ne!(a[0].entry.request, b[0].entry.request);
        // A schema of another version is one clear error, and is left alone.
        let mut client = ::postgres::Client::connect(&url, ::postgres::NoTls).unwrap();
        client
            .execute("UPDATE aido.meta SET schema_version = 99", &[])
            .unwrap();
        let err = PgStore::open(&url).unwrap_err();
        assert!(matches!(
            err.kind,
            StoreErrorKind::SchemaVersion {
                found: 99,
                expected: SCHEMA_VERSION
            }
        ));
        assert_eq!(init(&url).unwrap_err().code(), "S0007");
    }

    fn aido(args: &[&str]) -> crate::common::Run {
        crate::common::Run::of(std::process::Command::new(env!("CARGO_BIN_EXE_aido")).args(args))
    }

    fn the_store_commands_through_the_binary(cluster: &Cluster) {
        let url = cluster.database();
        // Before init: one line saying what to do.
        let run = aido(&["agents", "--store", &url]);
        assert_eq!(run.code, 2);
        assert!(run.stderr.contains("[S0008]"), "{}", run.stderr);
        assert_eq!(run.stderr.lines().count(), 1);
        let run = aido(&["store", "init", &url]);
        assert_eq!(
            (run.code, run.stdout.as_str()),
            (0, "created the aido tables, schema version 1\n")
        );
        let run = aido(&["store", "init", &url]);
        assert_eq!(run.code, 0, "{}", run.stderr);
        for input in ["{:input \"hi\"}", "{:input \"again\"}"] {
            let run = aido(&["send", "--store", &url, "chat-1", input]);
            assert_eq!(run.code, 0, "{}", run.stderr);
        }
        let run = aido(&["send", "--store", &url, "chat-1", "[:not :a :map]"]);
        assert_eq!(run.code, 2);
        assert!(
            run.stderr
                .starts_with("aido: INPUT: an input is an EDN map"),
            "{}",
            run.stderr
        );
        // A committed agent shows its db, version and wake.
        let mut store = PgStore::open(&url).unwrap();
        store
            .commit("npc-7", 0, commit_of(db(3), vec![], vec![launch(1)]))
            .unwrap();
        let run = aido(&["agents", "--store", &url]);
        assert_eq!(run.code, 0, "{}", run.stderr);
        assert_eq!(run.stdout, "\"npc-7\" version 1 tree 42 wake :event\n");
        let run = aido(&["agents", "--store", &url, "npc-7"]);
        let shown = read_value(run.stdout.trim()).unwrap();
        assert_eq!(
            shown,
            read_value(
                "{:agent \"npc-7\", :version 1, :tree 42, :wake :event, :db {:n 3}, :inbox [], \
                 :outbox [{:request 1, :kind :launch, :value {:request 1}}]}"
            )
            .unwrap()
        );
        // An agent with only inputs so far: its inbox, in order.
        let run = aido(&["agents", "--store", &url, "chat-1"]);
        let shown = read_value(run.stdout.trim()).unwrap();
        let inbox = shown
            .get(&Value::keyword("inbox"))
            .unwrap()
            .as_seq()
            .unwrap();
        let texts: Vec<String> = inbox
            .iter()
            .map(|e| e.get(&Value::keyword("input")).unwrap().to_string())
            .collect();
        assert_eq!(texts, ["{:input \"hi\"}", "{:input \"again\"}"]);
        let run = aido(&["agents", "--store", &url, "nobody-here"]);
        assert_eq!(run.code, 2);
        assert!(run.stderr.contains("no such agent"), "{}", run.stderr);
        // The server down, a bad URL: one line each, never the password.
        let down = format!(
            "postgres://aido:s3cret-pw@localhost/x?host={}/none",
            cluster.dir().display()
        );
        let bad = "postgres://aido:s3cret-pw@localhost:notaport/x";
        for (url, code) in [(down.as_str(), "[S0006]"), (bad, "[S0005]")] {
            for args in [
                vec!["store", "init", url],
                vec!["send", "--store", url, "a", "{}"],
                vec!["agents", "--store", url],
            ] {
                let run = aido(&args);
                assert_eq!(run.code, 2, "{args:?}");
                assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
                assert!(run.stderr.contains(code), "{}", run.stderr);
                assert!(!run.stderr.contains("s3cret"), "{}", run.stderr);
            }
        }
    }
}

/// Built without the `postgres` feature, each store command says so in one
/// line (run by `cargo test --no-default-features`).
#[cfg(not(feature = "postgres"))]
#[test]
fn without_the_postgres_feature_the_store_commands_say_so() {
    for args in [
        vec!["store", "init", "postgres://localhost/x"],
        vec!["send", "--store", "postgres://localhost/x", "a", "{}"],
        vec!["agents", "--store", "postgres://localhost/x"],
        vec![
            "worker",
            "examples/greet.edn",
            "--store",
            "postgres://localhost/x",
        ],
        vec![
            "chat",
            "examples/greet.edn",
            "--store",
            "postgres://localhost/x",
            "--user",
            "ann",
        ],
    ] {
        let run = crate::common::Run::of(
            std::process::Command::new(env!("CARGO_BIN_EXE_aido")).args(&args),
        );
        assert_eq!(run.code, 2, "{args:?}");
        assert_eq!(
            run.stderr,
            "aido: store: this aido was built without the `postgres` feature \
             (cargo build --features postgres)\n"
        );
    }
}
