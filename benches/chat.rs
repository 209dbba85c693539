//! Chat benchmarks: what a turn adds to the tick it runs (`turn/*`: the
//! same line ticked with `run_tick` alone, through a session's turn, and
//! through a recorded session's turn, as `aido chat` runs it), and a
//! 1,000-turn conversation scenario run as `aido test` runs it
//! (`conversation/1000_turns`).

#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::path::Path;
use std::sync::Arc;

use aido::scenario::Scenario;
use aido::session::{Session, TurnOptions};
use aido::{Registry, Value, compile_str, run_tick};
use criterion::{BatchSize, Criterion, criterion_group, criterion_main};

const BOT: &str = include_str!("../tests/data/chat/greet.edn");

fn turn(c: &mut Criterion) {
    let tree = Arc::new(compile_str("greet.edn", BOT, &Registry::new()).unwrap());
    let options = TurnOptions::default();
    let mut group = c.benchmark_group("turn");
    // The db a turn starts from: a seeded bot that said a few things. The
    // replies are cleared each time, so every iteration does the same work.
    let start = {
        let mut session = Session::new(tree.clone(), Value::map());
        session.seed(1);
        for _ in 0..3 {
            session.turn("what", &options);
        }
        session.db().clone()
    };
    let with_input = {
        let mut db = start.clone();
        let map = db.as_map_mut().unwrap();
        map.insert(Value::keyword("input"), Value::string("what"));
        db
    };
    group.bench_function("tick_alone", |b| {
        b.iter(|| run_tick(with_input.clone(), &tree))
    });
    // The session is made outside the timed part (its registry of
    // built-ins is built once per session, not per turn).
    group.bench_function("session_turn", |b| {
        b.iter_batched_ref(
            || Session::new(tree.clone(), start.clone()),
            |session| session.turn("what", &options),
            BatchSize::SmallInput,
        )
    });
    group.bench_function("recorded_session_turn", |b| {
        b.iter_batched_ref(
            || {
                let mut session = Session::new(tree.clone(), start.clone());
                session.record();
                session
            },
            |session| session.turn("what", &options),
            BatchSize::SmallInput,
        )
    });
    group.finish();
}

fn conversation(c: &mut Criterion) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/chat");
    let mut text = String::from("{:tree \"greet.edn\" :seed 1 :conversation [");
    for i in 0..1000 {
        text.push_str(match i % 4 {
            0 => "[\"hi\" #{\"Hello!\" \"Hi there!\" \"Hey!\"}]",
            1 => "[\"what\" \"Sorry?\"]",
            2 => "[\"time?\" {:handler :svc/time :answer \"12:00\"} \"12:00\"]",
            _ => "[\"stop\" nil]",
        });
    }
    text.push_str("]}");
    let scenario = Scenario::parse("talk.test.edn", &text, &dir, &Registry::new()).unwrap();
    let run = scenario.run();
    assert!(run.turn_mismatch.is_none(), "{:?}", run.turn_mismatch);
    assert_eq!(run.replies.len(), 1000);
    let mut group = c.benchmark_group("conversation");
    group.sample_size(10);
    group.bench_function("1000_turns", |b| b.iter(|| scenario.run()));
    group.finish();
}

criterion_group!(benches, turn, conversation);
criterion_main!(benches);
