//! The per-event worker, the dispatcher and the scheduler over the store
//! seam: the same checks against `MemoryStore` and (feature `postgres`) a
//! throwaway PostgreSQL cluster.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::Duration;

use aido::handler::Program;
use aido::store::{
    DispatchOptions, Dispatcher, InboxItem, MemoryStore, OutboxKind, Store, Worker, WorkerOptions,
};
use aido::tick::Wake;
use aido::value::Keyword;
use aido::{Registry, Status, Value, compile_str, read_value};

/// Counts its ticks in `:n` and echoes each input into `:replies`.
pub(crate) const ECHO: &str = "[:sequence [:inc! {:key :n}] [:present? {:key :input}] \
     [:emit! {:key :replies :val [:aido/db :input]}] [:dissoc! {:key :input}]]";

/// Counts its ticks, asks a service about each input, replies its answer.
pub(crate) const ASK: &str = "[:sequence [:inc! {:key :n}] \
     [:defer {:id :ask :action :svc/echo :into :answer :text [:aido/db :input]}] \
     [:emit! {:key :replies :val [:aido/db :answer]}]]";

fn tree(text: &str) -> Arc<aido::Tree> {
    Arc::new(compile_str("t.edn", text, &Registry::new()).unwrap())
}

fn input(text: &str) -> InboxItem {
    InboxItem::Input(Value::map_from([(
        Value::keyword("input"),
        Value::string(text),
    )]))
}

fn get(db: &Value, key: &str) -> Value {
    db.get(&Value::keyword(key)).cloned().unwrap_or(Value::Nil)
}

/// The first free claim of `agent`'s outbox (others' claims taken too).
fn claim_of(store: &mut dyn Store, agent: &str) -> aido::store::Claim {
    let claims = store.claim(0, 1_000, 100).unwrap();
    claims.into_iter().find(|c| c.agent == agent).unwrap()
}

/// Scheduler turns until nothing is due (bounded).
fn drain(worker: &mut Worker, store: &mut dyn Store, now: i64) -> usize {
    let mut turns = 0;
    for _ in 0..1_000 {
        let done = worker.run_due(store, now, 16).unwrap();
        if done.is_empty() {
            return turns;
        }
        turns += done.len();
    }
    panic!("still turning after 1,000 rounds");
}

/// One input is one turn, one commit, one tick: taken in the order sent,
/// each reply in order; the inbox is emptied; nothing left due.
fn events_in_order(store: &mut dyn Store) {
    let mut worker = Worker::new(tree(ECHO));
    for text in ["a", "b", "c"] {
        store.append("ann", input(text)).unwrap();
    }
    store.append("bob", input("x")).unwrap();
    let first = worker.turn(store, "ann", 0).unwrap().unwrap();
    assert_eq!(
        (first.version, first.ticks, first.status),
        (1, 1, Status::Success)
    );
    assert_eq!(first.replies, vec![Value::string("a")]);
    assert_eq!(drain(&mut worker, store, 0), 3);
    let ann = store.load("ann").unwrap().unwrap();
    assert_eq!(ann.version, 3);
    assert_eq!(get(&ann.db, "n"), Value::Int(3));
    assert_eq!(
        get(&ann.db, "replies"),
        read_value("[\"a\" \"b\" \"c\"]").unwrap()
    );
    assert_eq!(ann.wake, Wake::OnEvent);
    assert!(store.inbox("ann").unwrap().is_empty());
    assert_eq!(store.load("bob").unwrap().unwrap().version, 1);
    // Nothing waits: a turn has nothing to do.
    assert!(worker.turn(store, "ann", 0).unwrap().is_none());
    assert!(store.due(0, 10).unwrap().is_empty());
}

/// A folder of the caller's own (the checks run over the memory store and
/// over PostgreSQL at the same time).
fn scratch_dir(name: &str) -> std::path::PathBuf {
    static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    std::env::temp_dir().join(format!("aido-worker-{name}-{}-{n}", std::process::id()))
}

/// A launch goes to the outbox with its turn; the dispatcher runs the
/// program with the idempotency key, writes the completion and deletes the
/// launch; the next turn applies it once.
fn a_deferred_action_through_the_dispatcher(store: &mut dyn Store) {
    let dir = scratch_dir("defer");
    std::fs::create_dir_all(&dir).unwrap();
    let keys = dir.join("keys");
    let _ = std::fs::remove_file(&keys);
    // Answers with the request's text; notes each idempotency key.
    let script = format!(
        "read -r line; key=$(printf '%s' \"$line\" | sed 's/.*\"idempotency-key\":\"\\([^\"]*\\)\".*/\\1/'); \
         echo \"$key\" >> '{}'; printf '\"pong\"'",
        keys.display()
    );
    let mut worker = Worker::new(tree(ASK));
    let mut dispatcher = Dispatcher::new(DispatchOptions::default());
    dispatcher.insert(
        Keyword::new("svc/echo"),
        Program::new("/bin/sh").arg("-c").arg(script),
    );
    store.append("ann", input("ping")).unwrap();
    let turn = worker.turn(store, "ann", 0).unwrap().unwrap();
    assert_eq!(turn.status, Status::Running);
    assert_eq!(turn.ticks, 1, "a turn waiting on an event ends at rest");
    assert_eq!(turn.outbox.len(), 1);
    assert_eq!(store.outbox("ann").unwrap()[0].kind, OutboxKind::Launch);
    let step = dispatcher.step(store, 0).unwrap();
    assert_eq!(step.started, 1);
    for _ in 0..600 {
        if !dispatcher.busy() {
            break;
        }
        dispatcher.wait(Duration::from_millis(100));
        dispatcher.step(store, 0).unwrap();
    }
    assert!(!dispatcher.busy(), "the handler answered");
    assert!(store.outbox("ann").unwrap().is_empty());
    assert_eq!(store.inbox("ann").unwrap().len(), 1);
    assert_eq!(drain(&mut worker, store, 0), 1);
    let ann = store.load("ann").unwrap().unwrap();
    assert_eq!(get(&ann.db, "replies"), read_value("[\"pong\"]").unwrap());
    assert_eq!((ann.version, get(&ann.db, "n")), (2, Value::Int(2)));
    assert_eq!(std::fs::read_to_string(&keys).unwrap(), "ann/1\n");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Duplicate, late and cancelled completions change the db at most once.
fn duplicate_late_and_cancelled_completions(store: &mut dyn Store) {
    let mut worker = Worker::new(tree(ASK));
    store.append("ann", input("ping")).unwrap();
    worker.turn(store, "ann", 0).unwrap().unwrap();
    let answer = |text: &str| {
        read_value(&format!(
            "{{:node :ask, :request 1, :status :success, :result \"{text}\"}}"
        ))
        .unwrap()
    };
    let claim = store.claim(0, 1_000, 10).unwrap().remove(0);
    store.finish(&claim, Some(answer("one"))).unwrap();
    // The same answer again, from a claim that no longer holds: refused.
    assert_eq!(
        store
            .finish(&claim, Some(answer("two")))
            .unwrap_err()
            .code(),
        "S0003"
    );
    // A duplicate sent straight to the inbox while the first waits: refused.
    let duplicate = InboxItem::Completion {
        request: 1,
        value: answer("three"),
    };
    assert_eq!(
        store.append("ann", duplicate.clone()).unwrap_err().code(),
        "S0002"
    );
    drain(&mut worker, store, 0);
    // A late duplicate after the first was applied: taken, and dropped by
    // the tick (request 1 is no longer in flight).
    store.append("ann", duplicate).unwrap();
    drain(&mut worker, store, 0);
    let ann = store.load("ann").unwrap().unwrap();
    assert_eq!(get(&ann.db, "replies"), read_value("[\"one\"]").unwrap());
    assert_eq!(get(&ann.db, "answer"), Value::string("one"));
    assert!(store.inbox("ann").unwrap().is_empty());

    // A cancel: the tree moves on while its action runs.
    let cancelling = tree(
        "[:sequence [:present? {:key :input}] \
         [:defer {:id :ask :action :svc/echo :into :answer}]]",
    );
    let mut worker = Worker::new(cancelling);
    store.append("cy", input("ping")).unwrap();
    worker.turn(store, "cy", 0).unwrap().unwrap();
    let launch = claim_of(store, "cy");
    assert_eq!(launch.entry.kind, OutboxKind::Launch);
    store
        .append("cy", InboxItem::Input(read_value("{:input nil}").unwrap()))
        .unwrap();
    let cancelled = worker.turn(store, "cy", 0).unwrap().unwrap();
    assert_eq!(cancelled.outbox.len(), 1);
    let cancel = claim_of(store, "cy");
    assert_eq!(cancel.entry.kind, OutboxKind::Cancel);
    store.finish(&cancel, None).unwrap();
    // The launch went with its cancel: its late answer is refused.
    assert!(store.outbox("cy").unwrap().is_empty());
    assert_eq!(
        store
            .finish(&launch, Some(answer("late")))
            .unwrap_err()
            .code(),
        "S0003"
    );
    assert_eq!(
        get(&store.load("cy").unwrap().unwrap().db, "answer"),
        Value::Nil
    );
}

/// A cancel stops the program of its request that runs in the
/// dispatcher, and its launch is gone from the outbox.
fn a_cancel_stops_the_running_program(store: &mut dyn Store) {
    let dir = scratch_dir("cancel");
    std::fs::create_dir_all(&dir).unwrap();
    let pid_file = dir.join("pid");
    let _ = std::fs::remove_file(&pid_file);
    let script = format!("echo $$ > '{}'; exec sleep 600", pid_file.display());
    let waits = tree(
        "[:sequence [:present? {:key :input}] \
         [:defer {:id :ask :action :svc/slow :into :answer}]]",
    );
    let mut worker = Worker::new(waits);
    let mut dispatcher = Dispatcher::new(DispatchOptions::default());
    dispatcher.insert(
        Keyword::new("svc/slow"),
        Program::new("/bin/sh").arg("-c").arg(script),
    );
    store.append("dee", input("go")).unwrap();
    worker.turn(store, "dee", 0).unwrap().unwrap();
    assert_eq!(dispatcher.step(store, 0).unwrap().started, 1);
    let mut pid = String::new();
    for _ in 0..6_000 {
        pid = std::fs::read_to_string(&pid_file).unwrap_or_default();
        if pid.ends_with('\n') {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let proc = std::path::PathBuf::from(format!("/proc/{}", pid.trim()));
    assert!(proc.exists(), "the program runs");
    store
        .append("dee", InboxItem::Input(read_value("{:input nil}").unwrap()))
        .unwrap();
    let turn = worker.turn(store, "dee", 0).unwrap().unwrap();
    assert_eq!(turn.outbox[0].kind, OutboxKind::Cancel);
    assert_eq!(dispatcher.step(store, 0).unwrap().cancelled, 1);
    assert!(!dispatcher.busy());
    assert!(store.outbox("dee").unwrap().is_empty());
    // Stopped (SIGTERM to its group) and reaped.
    for _ in 0..6_000 {
        if stopped(&proc) {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(stopped(&proc), "the program was stopped");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Whether the process at `/proc/PID` has ended (gone, or a zombie).
fn stopped(proc: &std::path::Path) -> bool {
    match std::fs::read_to_string(proc.join("stat")) {
        Ok(stat) => stat.contains(") Z "),
        Err(_) => true,
    }
}

/// The scheduler ticks an agent whose wake has come, with the worker's
/// clock, and leaves the others.
fn the_scheduler_ticks_what_is_due(store: &mut dyn Store) {
    let timed = tree("[:sequence [:wait {:id :w :seconds 2}] [:inc! {:key :done}]]");
    let mut options = WorkerOptions::default();
    options.clock = true;
    let mut worker = Worker::with_options(timed, options);
    store.append("ann", input("go")).unwrap();
    let turn = worker.turn(store, "ann", 10_000).unwrap().unwrap();
    assert_eq!(turn.status, Status::Running);
    assert_eq!(store.load("ann").unwrap().unwrap().wake, Wake::At(12_000));
    assert!(worker.run_due(store, 11_999, 10).unwrap().is_empty());
    let done = worker.run_due(store, 12_000, 10).unwrap();
    assert_eq!(done.len(), 1);
    assert_eq!(done[0].status, Status::Success);
    let ann = store.load("ann").unwrap().unwrap();
    assert_eq!(get(&ann.db, "done"), Value::Int(1));
    assert_eq!(get(&ann.db, "aido/now"), Value::Float(12.0));
    assert_eq!(ann.wake, Wake::OnEvent);
}

/// Agents stored by one tree, then ticked by an edited one: carried over on
/// their first turn with it, the new fingerprint recorded. A worker that
/// knows the earlier tree carries a running memory sequence over exactly;
/// one that does not keeps state by node id and starts the sequence afresh.
fn a_tree_upgraded_while_agents_are_stored(store: &mut dyn Store) {
    let text = |say: &str| {
        format!(
            "[:sequence {{:id :main :memory true}} [:inc! {{:id :count :key :n}}] \
             [:wait {{:id :w :ticks 100}}] [:emit! {{:id :say :key :replies :val \"{say}\"}}]]"
        )
    };
    let (v1, v2) = (tree(&text("v1")), tree(&text("v2")));
    let mut options = WorkerOptions::default();
    options.turn.max_ticks = 1;
    let mut old = Worker::with_options(Arc::clone(&v1), options.clone());
    let mut knows = Worker::with_options(Arc::clone(&v2), options.clone());
    knows.add_previous(Arc::clone(&v1));
    let mut new = Worker::with_options(Arc::clone(&v2), options);
    for (agent, worker, n) in [("ann", &mut knows, 1), ("bob", &mut new, 2)] {
        store.append(agent, input("hi")).unwrap();
        old.turn(store, agent, 0).unwrap().unwrap();
        assert_eq!(store.load(agent).unwrap().unwrap().tree, v1.fingerprint());
        store.append(agent, input("again")).unwrap();
        let turn = worker.turn(store, agent, 0).unwrap().unwrap();
        assert_eq!(turn.migrated_from, Some(v1.fingerprint()));
        let after = store.load(agent).unwrap().unwrap();
        assert_eq!(after.tree, v2.fingerprint());
        assert_eq!(get(&after.db, "n"), Value::Int(n), "{agent}");
        // The wait went on counting where it was.
        let memory = get(&after.db, "aido/memory");
        assert_eq!(
            memory.get(&Value::keyword("w")),
            Some(&read_value("{:ticks 2}").unwrap()),
            "{agent}"
        );
    }
}

type Check = fn(&mut dyn Store);

pub(crate) const CHECKS: &[(&str, Check)] = &[
    ("events_in_order", events_in_order),
    (
        "a_deferred_action_through_the_dispatcher",
        a_deferred_action_through_the_dispatcher,
    ),
    (
        "duplicate_late_and_cancelled_completions",
        duplicate_late_and_cancelled_completions,
    ),
    (
        "a_cancel_stops_the_running_program",
        a_cancel_stops_the_running_program,
    ),
    (
        "the_scheduler_ticks_what_is_due",
        the_scheduler_ticks_what_is_due,
    ),
    (
        "a_tree_upgraded_while_agents_are_stored",
        a_tree_upgraded_while_agents_are_stored,
    ),
];

#[test]
fn workers_over_the_memory_store() {
    for (name, check) in CHECKS {
        eprintln!("memory: {name}");
        check(&mut MemoryStore::new());
    }
}

#[cfg(feature = "postgres")]
#[test]
fn workers_over_postgres() {
    use aido::store::postgres::{PgStore, init};
    let Some(cluster) = crate::pg::shared("workers_over_postgres") else {
        return;
    };
    for (name, check) in CHECKS {
        eprintln!("postgres: {name}");
        let url = cluster.database();
        init(&url).unwrap();
        check(&mut PgStore::open(&url).unwrap());
    }
}
