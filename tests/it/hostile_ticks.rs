//! Ticks on hostile trees: many nodes started, ended or halted in one tick.
//! Each tree in `tests/data/hostile-ticks/` is run by `aido run --trace`
//! (with its `.inputs.edn`, if any) and its output compared with the
//! `.out` beside it, written by the engine before its halts looked nodes up
//! by subtree; and large trees are ticked to check the work of a halt does
//! not grow with the square of the tree (`benches/hostile/scale.sh`
//! measures it).
#![allow(clippy::panic, clippy::expect_used, clippy::unwrap_used)]

use std::process::Command;

use aido::{Registry, Value, compile_str, read_value, run_tick};

/// Runs `name.edn` of `tests/data/hostile-ticks/` for as many ticks as its
/// `.out` has lines, and compares the output with it.
fn check(name: &str) {
    let dir = crate::common::data_dir().join("hostile-ticks");
    let expected = std::fs::read_to_string(dir.join(format!("{name}.out"))).unwrap();
    let ticks = expected.lines().count().to_string();
    let mut command = Command::new(env!("CARGO_BIN_EXE_aido"));
    command
        .arg("run")
        .arg(dir.join(format!("{name}.edn")))
        .args(["--ticks", &ticks, "--trace"]);
    let inputs = dir.join(format!("{name}.inputs.edn"));
    if inputs.exists() {
        command.arg("--inputs").arg(inputs);
    }
    let out = command.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8(out.stdout).unwrap(), expected, "{name}");
}

#[test]
fn waits_halted_at_once_leave_no_memory() {
    // One halt of 13 nodes whose memory is all the map holds, all run
    // state: proved by looking each halted node up by its hint.
    check("waits-halted-at-once");
}

#[test]
fn waits_halted_at_once_beside_kept_memory_keep_the_rest_in_order() {
    // The halted subtree (20 nodes) holds a pool and a delay that keeps
    // its count, and two waits outside it run on: the halted subtree is
    // larger than the map, which is cleared in one pass.
    check("waits-halted-at-once-beside-kept-memory");
}

#[test]
fn selectors_each_halting_a_wait_take_one_entry_out_each() {
    // Twelve halts of one wait each, the map larger than the subtree: the
    // wait's entry is found by its hint and shifted out alone.
    check("selectors-each-halt-a-wait");
}

#[test]
fn selectors_each_halting_several_waits_take_their_entries_out_in_one_pass() {
    // Each halted parallel holds two waits and a delay that keeps its
    // count (one a pool whose running pick goes), the map larger than the
    // subtree: found node by node, taken out in one pass from the first.
    check("selectors-each-halt-several-waits");
}

#[test]
fn waits_ending_a_third_at_a_time_leave_the_rest_in_order() {
    // 300 waits (a memory map with its index) of 1, 2 and 3 ticks: each
    // tick takes every third entry out, from the front of the map, between
    // entries that stay.
    check("waits-end-in-one-tick");
}

#[test]
fn waits_ending_and_starting_again_in_each_tick_fill_the_memory_in_order() {
    // 300 one-tick waits under a loop: the map emptied from its front, then
    // filled again, in the same tick.
    check("waits-end-and-start-again");
}

#[test]
fn selectors_each_halting_their_own_waits_take_the_first_entry_out_each() {
    // 300 halts of one wait each, in the order the waits started: each
    // takes the first entry of a large map out.
    check("selectors-each-halt-their-waits");
}

#[test]
fn waits_ending_in_a_tick_that_ends_in_error_leave_the_memory_in_order() {
    // 100 waits of 150 end in the third tick, taken out of a large memory
    // map as they end, and a node then ends the tick in error: the memory
    // it keeps is the 50 that run on, in order.
    check("waits-end-then-error");
}

#[test]
fn a_data_node_reads_the_memory_without_the_entries_taken_out_before_it() {
    // 140 waits, of which 70 end in the second tick, each taken out of a
    // large memory map alone; a node after them copies the whole map: it
    // holds the 70 that run on, in order, and nothing of those that ended.
    let mut text = String::from("[:parallel {:mode :success :how-many 141}");
    for _ in 0..70 {
        text.push_str("\n[:wait {:ticks 1}] [:wait {:ticks 3}]");
    }
    text.push_str(
        "\n[:sequence [:dissoc! {:key :m}] [:define! {:key :m :val [:aido/db :aido/memory]}]]]",
    );
    let tree = compile_str("t", &text, &Registry::new()).unwrap();
    let db = run_tick(run_tick(Value::map(), &tree).db, &tree).db;
    let copied = db
        .get(&Value::keyword("m"))
        .and_then(Value::as_map)
        .unwrap();
    let ids: Vec<String> = copied.keys().map(ToString::to_string).collect();
    let expected: Vec<String> = (0..70).map(|i| format!("\"0.{}\"", 2 * i + 1)).collect();
    assert_eq!(ids, expected);
    assert!(copied.values().all(|v| !v.is_nil()));
}

#[test]
fn a_node_reads_memory_after_halts_in_the_same_tick() {
    // `t/peek`, ticked after three halted parallels and six halted waits in
    // the tick that sets `:stop`, writes the ids it finds in
    // `:aido/memory` under `:seen`: the halted nodes' entries are gone at
    // once, the rest in their order.
    use aido::Status;
    use aido::extend::NodeType;
    let mut registry = Registry::new();
    registry
        .node_type(NodeType::new("t/peek").tick(|ctx| {
            if ctx.db().get(&Value::keyword("stop")).is_none() {
                return Ok(Status::Running);
            }
            let seen: Vec<Value> = match ctx.db().get(&Value::keyword("aido/memory")) {
                Some(Value::Map(memory)) => memory.keys().cloned().collect(),
                _ => Vec::new(),
            };
            ctx.db_mut()
                .insert(Value::keyword("seen"), Value::Vector(seen.into()));
            Ok(Status::Success)
        }))
        .unwrap();
    // Six halted waits, or 70 (a large map, whose entries taken out one
    // by one are gone before the node is handed the db).
    for (waits, seen) in [
        (6, "[\"0.10.1\" \"0.11.1\" \"0.12.1\"]"),
        (70, "[\"0.74.1\" \"0.75.1\" \"0.76.1\"]"),
    ] {
        let mut text = String::from("[:parallel {:policy :sequence}");
        for _ in 0..3 {
            text.push_str(
                "\n[:selector [:present? {:key :stop}] [:parallel {:policy :sequence} [:wait {:ticks 5}] [:wait {:ticks 5}]]]",
            );
        }
        for _ in 0..waits {
            text.push_str("\n[:selector [:present? {:key :stop}] [:wait {:ticks 5}]]");
        }
        text.push_str("\n[:t/peek]");
        for _ in 0..3 {
            text.push_str("\n[:selector [:present? {:key :stop}] [:wait {:ticks 5}]]");
        }
        text.push(']');
        let tree = compile_str("t", &text, &registry).unwrap();
        let db = ticked_then_stopped(&tree);
        assert_eq!(
            db.get(&Value::keyword("seen")),
            Some(&read_value(seen).unwrap()),
            "{waits}"
        );
    }
}

/// `tree` ticked from an empty db, then again with `:stop` set: the second
/// tick's db, a map.
fn ticked_then_stopped(tree: &aido::Tree) -> Value {
    let mut db = run_tick(Value::map(), tree).db;
    if let Value::Map(m) = &mut db {
        m.insert(Value::keyword("stop"), Value::Bool(true));
    }
    let db = run_tick(db, tree).db;
    assert!(db.as_map().is_some(), "not a map: {db}");
    db
}

#[test]
fn a_subtree_started_and_halted_in_one_tick_is_found_by_a_pass_over_the_noted_nodes() {
    // The halted parallel's subtree (6 nodes) is larger than the list of
    // nodes noted running (5): the list is searched.
    check("halted-in-the-tick-they-started");
}

#[test]
fn a_subtree_started_and_halted_beside_many_started_is_found_node_by_node() {
    // 14 nodes noted running, the halted subtree of 6: each of its nodes
    // is looked up.
    check("halted-beside-many-started");
}

#[test]
fn selectors_halting_running_waits_beside_waits_started_in_the_tick() {
    // Each selector halts its wait (running since the last tick) while the
    // waits of the first branch have just started: a one-node subtree
    // looked up, nothing noted in it.
    check("selectors-halt-beside-started");
}

/// A counting parallel whose first branch starts `n` waits once `:stop` is
/// set, then `n` selectors that each succeed at their first child and so
/// halt their second, a wait that never runs.
fn halts_beside_many_started(n: usize) -> String {
    let mut text = String::from(
        "[:parallel {:mode :success :how-many 1}\n[:sequence [:present? {:key :stop}] [:parallel {:policy :sequence}",
    );
    for _ in 0..n {
        text.push_str("\n[:wait {:ticks 5}]");
    }
    text.push_str("]]");
    for _ in 0..n {
        text.push_str("\n[:selector [:success] [:wait {:ticks 5}]]");
    }
    text.push(']');
    text
}

#[test]
fn many_halts_in_a_tick_that_started_many_nodes_leave_the_started_ones_running() {
    // 40,000 waits started, then 40,000 one-node subtrees halted in the
    // same tick: each halt used to pass over every node noted running, 1.6
    // billion comparisons in the tick (the release build's instructions
    // grew 2.95 times a doubling; now 2.0, see README). The final state is
    // checked; the time is not.
    let n = 40_000;
    let tree = compile_str("t", &halts_beside_many_started(n), &Registry::new()).unwrap();
    let db = ticked_then_stopped(&tree);
    // The sequence, the parallel and its waits run; no selector does.
    let running = db.get(&Value::keyword("aido/running")).unwrap();
    assert_eq!(running.as_seq().map(<[Value]>::len), Some(n + 2));
    let Some(Value::Map(memory)) = db.get(&Value::keyword("aido/memory")) else {
        panic!("no memory")
    };
    assert_eq!(memory.len(), n);
    let first = read_value("\"0.0.1.0\"").unwrap();
    assert_eq!(memory.get_index(0).map(|(k, _)| k), Some(&first));
}
