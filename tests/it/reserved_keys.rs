//! The reserved keys a tick reads from every db (`:aido/error`,
//! `:aido/running`, `:aido/results`, `:aido/tree`) and the seed: a tick
//! learns that a db holds none of the first four from one test of the db's
//! filter of keyword keys, so here a host puts each of them into a db
//! between two ticks, in dbs of every size (no room, a small map, a map with
//! a hash index, keys interned anywhere around the filter's bits), and the
//! next tick must see it, through `run_tick` and `tick_in_place` alike.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use aido::tick::tick_in_place;
use aido::{Registry, Status, Tree, Value, compile_str, read_value, run_tick};

fn kw(name: &str) -> Value {
    Value::keyword(name)
}

fn tree(text: &str) -> Tree {
    compile_str("t.edn", text, &Registry::new()).unwrap()
}

/// Dbs of every shape the tick's shortcut must read right: empty, one
/// key, a few, and past the short scan (a map with an index), their keys
/// fresh keywords interned one after another, so that they take every bit
/// of the filter but the reserved keys'.
fn dbs(tag: &str) -> Vec<Value> {
    [0, 1, 5, 20, 40]
        .into_iter()
        .map(|n| {
            let mut db = Value::map();
            let map = db.as_map_mut().unwrap();
            for i in 0..n {
                map.insert(kw(&format!("reserved-keys-{tag}-{n}-{i}")), Value::Int(i));
            }
            db
        })
        .collect()
}

/// Ticks `db` once, by `run_tick` or in place.
fn tick(db: Value, tree: &Tree, in_place: bool) -> (Value, aido::tick::AgentTick) {
    if in_place {
        let mut db = db;
        let rest = tick_in_place(&mut db, tree);
        (db, rest)
    } else {
        run_tick(db, tree).split()
    }
}

fn put(db: &mut Value, key: &str, value: Value) {
    db.as_map_mut().unwrap().insert(kw(key), value);
}

#[test]
fn an_error_a_host_puts_in_between_ticks_is_taken_out_by_the_next() {
    let tree = tree("[:success]");
    for in_place in [false, true] {
        for db in dbs("error") {
            let (mut db, first) = tick(db, &tree, in_place);
            assert_eq!(first.status, Status::Success);
            put(&mut db, "aido/error", Value::string("left by the host"));
            let (db, _) = tick(db, &tree, in_place);
            assert_eq!(db.get(&kw("aido/error")), None, "{db}");
        }
    }
}

#[test]
fn a_running_set_a_host_puts_in_between_ticks_is_halted_when_not_reached() {
    // The wait runs while `:go` is absent; with `:go` the selector stops at
    // the first child, so a running wait is halted and the set emptied.
    let tree = tree("[:selector [:present? {:key :go}] [:wait {:id :w :ticks 5}]]");
    let (running_db, running) = tick(Value::map(), &tree, false);
    assert_eq!(running.status, Status::Running);
    let set = running_db.get(&kw("aido/running")).unwrap().clone();
    for in_place in [false, true] {
        for mut db in dbs("running") {
            put(&mut db, "go", Value::Bool(true));
            let (mut db, first) = tick(db, &tree, in_place);
            assert_eq!(first.status, Status::Success);
            assert_eq!(db.get(&kw("aido/running")), None);
            put(&mut db, "aido/running", set.clone());
            let (db, _) = tick(db, &tree, in_place);
            // Seen: the wait was halted and the set written back empty
            // (without the shortcut seeing it, it would stay as put).
            assert_eq!(db.get(&kw("aido/running")), None, "{db}");
        }
    }
}

#[test]
fn completions_a_host_puts_in_between_ticks_are_taken_or_dropped() {
    let tree = tree("[:success]");
    let results = read_value("{:no-such-node {:status :success}}").unwrap();
    for in_place in [false, true] {
        for db in dbs("results") {
            let (mut db, first) = tick(db, &tree, in_place);
            assert!(first.dropped().is_empty());
            put(&mut db, "aido/results", results.clone());
            let (_, second) = tick(db, &tree, in_place);
            assert_eq!(second.dropped().len(), 1);
        }
    }
}

#[test]
fn another_trees_fingerprint_a_host_puts_in_between_ticks_carries_the_db_over() {
    let tree = tree("[:success]");
    for in_place in [false, true] {
        for db in dbs("tree") {
            let (mut db, first) = tick(db, &tree, in_place);
            assert!(first.migration().is_none());
            put(&mut db, "aido/tree", Value::Int(12_345));
            let (_, second) = tick(db, &tree, in_place);
            assert!(second.migration().is_some());
        }
    }
}

#[test]
fn a_seed_a_host_puts_in_between_ticks_seeds_the_next_draw() {
    let tree = tree("[:randomly {:p 0.5} [:inc! {:key :a}]]");
    for in_place in [false, true] {
        let mut after = Vec::new();
        for _ in 0..2 {
            for db in dbs("seed") {
                let (mut db, _) = tick(db, &tree, in_place);
                assert_eq!(db.get(&kw("aido/rng-pos")), None);
                put(&mut db, "aido/seed", Value::Int(7));
                // (The first tick drew unseeded: only the second's draw is compared.)
                let a_before = db.get(&kw("a")).cloned();
                let (db, _) = tick(db, &tree, in_place);
                assert_eq!(db.get(&kw("aido/rng-pos")), Some(&Value::Int(1)), "{db}");
                after.push(db.get(&kw("a")).cloned() != a_before);
            }
        }
        // The same seed draws the same: each db's second run as its first.
        let (first, second) = after.split_at(after.len() / 2);
        assert_eq!(first, second);
    }
}

/// A db something runs in (`:aido/running` and `:aido/tree` where the
/// tree's position hints find them) learns that it holds no error and no
/// completions from the filter alone, and reads the fingerprint where its
/// hint says: a host that puts an error, completions or another tree's
/// fingerprint beside the running set between two ticks must still be seen.
#[test]
fn an_error_completions_or_a_fingerprint_a_host_puts_beside_a_running_set_are_seen() {
    let tree = tree("[:sequence [:inc! {:key :n}] [:wait {:id :w :ticks 1000}]]");
    let results = read_value("{:no-such-node {:status :success}}").unwrap();
    for in_place in [false, true] {
        for db in dbs("beside-running") {
            // Three ticks, so the hints have found the keys where they are.
            let mut db = db;
            for _ in 0..3 {
                let (next, rest) = tick(db, &tree, in_place);
                assert_eq!(rest.status, Status::Running);
                db = next;
            }
            assert!(db.get(&kw("aido/running")).is_some(), "{db}");
            put(&mut db, "aido/error", Value::string("left by the host"));
            let (mut db, second) = tick(db, &tree, in_place);
            assert_eq!(second.status, Status::Running);
            assert_eq!(db.get(&kw("aido/error")), None, "{db}");
            assert!(second.dropped().is_empty());
            put(&mut db, "aido/results", results.clone());
            let (db, third) = tick(db, &tree, in_place);
            assert_eq!(third.status, Status::Running);
            assert_eq!(third.dropped().len(), 1, "{db}");
            assert_eq!(db.get(&kw("n")), Some(&Value::Int(5)));
            // Another tree's fingerprint: the db is carried over.
            let (mut db, fourth) = tick(db, &tree, in_place);
            assert!(fourth.migration().is_none());
            put(&mut db, "aido/tree", Value::Int(12_345));
            let (_, fifth) = tick(db, &tree, in_place);
            assert!(fifth.migration().is_some());
        }
    }
}
