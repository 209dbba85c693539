//! Per-site key hints: every leaf that names a db key remembers where it
//! found it and tries that place first, in place, before any search. A
//! hint is only ever a guess, so a tree whose hints were learnt on other
//! dbs must read and write exactly what the db holds: here one tree is
//! ticked over dbs of every shape (keys in any order, absent, past the
//! short scan's 8 keys, moved by a removal), traced and untraced, and each
//! tick is checked against what the db's own look-ups say.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use crate::common::Gen;

use aido::tick::{TickOptions, TraceEvent, run_tick_with_options, tick_in_place};
use aido::value::Map;
use aido::{Registry, Status, Value, compile_str};

/// The keys the leaves name.
const KEYS: usize = 12;

/// The tree: a `:present?` and a `:test?` of every key (each under
/// `:always`, so that all are visited), then writes: `:define!` of `:k3`,
/// `:inc!` of `:k5`, `:dissoc!` of `:k8` (which moves the keys after it),
/// `:inc!` of `:k9`.
fn tree_text() -> String {
    let mut text = String::from("[:sequence");
    for i in 0..KEYS {
        text.push_str(&format!(" [:always [:present? {{:key :k{i}}}]]"));
    }
    for i in 0..KEYS {
        text.push_str(&format!(
            " [:always [:test? {{:key :k{i} :oper >= :val 3}}]]"
        ));
    }
    text.push_str(" [:define! {:key :k3 :val 7}] [:inc! {:key :k5}]");
    text.push_str(" [:dissoc! {:key :k8}] [:inc! {:key :k9}]]");
    text
}

/// The pre-order index of the `:present?` leaf of key `i`, and of its `:test?`.
fn present_node(i: usize) -> usize {
    2 + 2 * i
}

fn test_node(i: usize) -> usize {
    2 + 2 * (KEYS + i)
}

/// A db of some of the keys and 0 to 13 others, in a random order, each
/// key an integer or a float.
fn random_db(g: &mut Gen) -> Map {
    let mut entries: Vec<(String, Value)> = Vec::new();
    for i in 0..KEYS {
        if g.below(2) == 0 {
            entries.push((format!("k{i}"), number(g)));
        }
    }
    for i in 0..g.below(14) {
        entries.push((format!("other-{i}"), number(g)));
    }
    // Fisher-Yates with the test's generator.
    for i in (1..entries.len()).rev() {
        entries.swap(i, g.below(i as u64 + 1) as usize);
    }
    let mut map = Map::new();
    for (key, value) in entries {
        map.insert(Value::keyword(&key), value);
    }
    map
}

fn number(g: &mut Gen) -> Value {
    match g.below(8) {
        0 => Value::Float(2.5),
        1 => Value::Float(3.5),
        n => Value::Int(n as i64 - 1),
    }
}

fn kw(i: usize) -> Value {
    Value::keyword(&format!("k{i}"))
}

/// What the tree's conditions say of `db`, by the db's own look-ups: each
/// key's `:present?` and `:test?` status.
fn expected_statuses(db: &Map) -> Vec<(usize, Status)> {
    let mut want = Vec::new();
    for i in 0..KEYS {
        let value = db.get(&kw(i));
        want.push((present_node(i), Status::from_bool(value.is_some())));
        let at_least_3 = match value {
            Some(Value::Int(n)) => *n >= 3,
            Some(Value::Float(x)) => *x >= 3.0,
            _ => false,
        };
        want.push((test_node(i), Status::from_bool(at_least_3)));
    }
    want.sort_by_key(|(node, _)| *node);
    want
}

/// What the tree's writes make of `db`, by the db's own operations.
fn expected_db(mut db: Map) -> Map {
    db.insert(kw(3), Value::Int(7));
    for i in [5, 9] {
        let next = match db.get(&kw(i)) {
            Some(Value::Int(n)) => Value::Int(n + 1),
            Some(Value::Float(x)) => Value::Float(x + 1.0),
            _ => Value::Int(1),
        };
        db.insert(kw(i), next);
        if i == 5 {
            db.shift_remove(&kw(8));
        }
    }
    db
}

/// The statuses the trace gives the leaves of [`expected_statuses`].
fn traced_statuses(trace: &[TraceEvent]) -> Vec<(usize, Status)> {
    let mut got: Vec<(usize, Status)> = trace
        .iter()
        .filter_map(|event| match event {
            TraceEvent::Ticked { node, status } => Some((node.index(), *status)),
            _ => None,
        })
        .filter(|(node, _)| *node >= 2 && *node < test_node(KEYS) && node % 2 == 0)
        .collect();
    got.sort_by_key(|(node, _)| *node);
    got
}

#[test]
fn leaves_read_and_write_what_the_db_holds_wherever_their_hints_point() {
    let tree = compile_str("hints.edn", &tree_text(), &Registry::new()).unwrap();
    let traced = TickOptions {
        trace: true,
        ..TickOptions::default()
    };
    let mut g = Gen(23);
    let mut sizes = [0usize; 2];
    for round in 0..300 {
        let start = random_db(&mut g);
        sizes[usize::from(start.len() > 8)] += 1;
        let want_statuses = expected_statuses(&start);
        let want_db = Value::from(expected_db(start.clone()));
        // Untraced, in place: the hints were learnt on the dbs before.
        let mut db = Value::from(start.clone());
        let tick = tick_in_place(&mut db, &tree);
        assert_eq!(
            tick.status,
            Status::Success,
            "round {round}: {:?}",
            tick.error
        );
        assert_eq!(
            db,
            want_db,
            "round {round}, untraced, from {}",
            Value::from(start.clone())
        );
        // Traced, from the same db: the hints were just learnt on it.
        let tick = run_tick_with_options(Value::from(start.clone()), &tree, &traced);
        assert_eq!(tick.db, want_db, "round {round}, traced");
        assert_eq!(
            traced_statuses(tick.trace()),
            want_statuses,
            "round {round}, from {}",
            Value::from(start)
        );
    }
    // Both small dbs (scanned) and large ones (hashed) were ticked.
    assert!(sizes.iter().all(|&n| n > 50), "{sizes:?}");
}
