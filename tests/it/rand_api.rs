//! The tick's generator through `rand`'s API (cargo feature `rand`):
//! seed 004's random loop count written with a `rand`-based function,
//! seeded and replayable, across a save and a reload too.
#![cfg(feature = "rand")]
#![allow(clippy::panic, clippy::expect_used, clippy::unwrap_used)]

use aido::extend::{Arity, NodeType};
use aido::tick::TickErrorKind;
use aido::{Registry, Status, Tree, Value, compile_str, read_value, run_tick};
use rand::RngExt;
use rand::seq::{IndexedRandom, SliceRandom};

/// Seed 004 compiles its tree with `{:rand rand-int}` and writes
/// `[:loop {:count [:aido/fn rand 5]} ...]`: a host's function replaces the
/// standard one of the same name, so `rand` here is Clojure's `rand-int` (an
/// integer in `[0, n)`), drawn with `rand`'s `random_range`.
fn registry() -> Registry {
    let mut registry = Registry::new();
    registry
        .function("rand", Arity::Exactly(1), |ctx, args| {
            let n = args[0].as_int().ok_or("rand takes an integer")?;
            Ok(Value::Int(ctx.rng().random_range(0..n)))
        })
        .unwrap();
    registry
        .node_type(NodeType::new("game/shuffle!").tick(|ctx| {
            let key = Value::keyword("deck");
            let mut deck = ctx
                .db()
                .get(&key)
                .cloned()
                .unwrap_or_default()
                .into_seq()
                .unwrap_or_default();
            deck.shuffle(&mut ctx.rng());
            let top = deck.choose(&mut ctx.rng()).cloned().unwrap_or_default();
            ctx.db_mut().insert(key, Value::Vector(deck));
            ctx.db_mut().insert(Value::keyword("top"), top);
            Ok(Status::Success)
        }))
        .unwrap();
    registry
}

fn tree() -> Tree {
    compile_str(
        "wander.edn",
        "[:sequence
           [:loop {:count [:aido/fn rand 5]} [:inc! {:key :steps}]]
           [:counter! {:key :ticks}]
           [:game/shuffle!]]",
        &registry(),
    )
    .unwrap()
}

/// The `:steps` after each of `ticks` ticks from `db`, and the last db.
fn run(mut db: Value, tree: &Tree, ticks: usize) -> (Vec<i64>, Value) {
    let mut steps = Vec::new();
    for _ in 0..ticks {
        let tick = run_tick(db, tree);
        assert_eq!(tick.status, Status::Success, "{:?}", tick.error);
        steps.push(
            tick.db
                .get(&Value::keyword("steps"))
                .and_then(Value::as_int)
                .unwrap_or(0),
        );
        db = tick.db;
    }
    (steps, db)
}

const START: &str = "{:aido/seed 42, :deck [:a :b :c :d :e :f]}";

#[test]
fn a_rand_based_function_is_seeded_and_replays_the_same_run() {
    let tree = tree();
    let (steps, last) = run(read_value(START).unwrap(), &tree, 12);
    let (again, last_again) = run(read_value(START).unwrap(), &tree, 12);
    assert_eq!(steps, again);
    assert_eq!(last, last_again);

    // Each loop ran between 0 and 4 times, and not the same number every tick.
    let counts: Vec<i64> = std::iter::once(steps[0])
        .chain(steps.windows(2).map(|w| w[1] - w[0]))
        .collect();
    assert!(counts.iter().all(|c| (0..5).contains(c)), "{counts:?}");
    assert!(counts.iter().any(|c| *c != counts[0]), "{counts:?}");
    // The shuffle drew from the same stream: the deck was reordered.
    assert_ne!(
        last.get(&Value::keyword("deck")),
        read_value(START).unwrap().get(&Value::keyword("deck"))
    );

    // Another seed, another run.
    let (other, _) = run(
        read_value("{:aido/seed 43, :deck [:a :b :c :d :e :f]}").unwrap(),
        &tree,
        12,
    );
    assert_ne!(steps, other);
}

#[test]
fn a_saved_and_reloaded_db_goes_on_with_the_same_numbers() {
    let tree = tree();
    let (straight, last) = run(read_value(START).unwrap(), &tree, 10);

    let (first, saved) = run(read_value(START).unwrap(), &tree, 4);
    // Saved as text and read back, as a game saves its agents, and ticked
    // by a tree compiled again (another process would).
    let reloaded = read_value(&saved.to_string()).unwrap();
    let (rest, last_reloaded) = run(reloaded, &self::tree(), 6);
    assert_eq!([first, rest].concat(), straight);
    assert_eq!(last_reloaded, last);
}

#[test]
fn each_draw_takes_one_position_of_the_stream() {
    let mut registry = Registry::new();
    registry
        .function("three", Arity::Exactly(0), |ctx, _| {
            let mut rng = ctx.rng();
            let mut bytes = [0u8; 12];
            rand::Rng::fill_bytes(&mut rng, &mut bytes); // two positions
            Ok(Value::Int(i64::from(rand::Rng::next_u32(&mut rng)))) // one more
        })
        .unwrap();
    let tree = compile_str(
        "t.edn",
        "[:define! {:key :x :val [:aido/fn three]}]",
        &registry,
    )
    .unwrap();
    let tick = run_tick(read_value("{:aido/seed 1}").unwrap(), &tree);
    assert_eq!(
        tick.db.get(&Value::keyword("aido/rng-pos")),
        Some(&Value::Int(3))
    );
}

#[test]
fn an_exhausted_stream_ends_the_tick_in_error_through_rand_too() {
    let tree = tree();
    let db = read_value(&format!("{{:aido/seed 1, :aido/rng-pos {}}}", i64::MAX)).unwrap();
    let tick = run_tick(db, &tree);
    assert_eq!(tick.status, Status::Error);
    assert_eq!(tick.error.unwrap().kind, TickErrorKind::RandomExhausted);
}
