//! Tests of node memory's marked removals (see `MARK_FROM` in
//! `tick::halt`).
#![cfg(test)]

use super::MOVED;
use crate::extend::{Arity, NodeType};
use crate::record::{Recorder, TimelineOptions, timeline};
use crate::tick::{Status, TickOptions, run_tick_traced};
use crate::{Registry, Tree, Value, compile_str};

/// The node memory entries that the engine's removals moved (or went
/// over) while `f` ran on this thread.
fn moved_by(f: impl FnOnce()) -> usize {
    let before = MOVED.with(std::cell::Cell::get);
    f();
    MOVED.with(std::cell::Cell::get) - before
}

fn reads(text: &str, registry: &Registry) -> bool {
    compile_str("t", text, registry).unwrap().reads_memory
}

#[test]
fn a_tree_reads_node_memory_by_user_code_or_a_key_path_that_starts_there() {
    let plain = Registry::new();
    // Nothing but the engine: the waits' memory, other keys, the
    // standard functions.
    assert!(!reads(
        "[:parallel {:policy :sequence} [:wait {:ticks 1}] [:present? {:key [:m :aido/memory]}]
          [:define! {:key :x :val [:aido/fn + 1 [:aido/db :y]]}]
          [:define! {:key :x :val [:aido/db :m [:aido/db :k]]}]]",
        &plain
    ));
    // A user node type, handed the db.
    let mut with_node = Registry::new();
    with_node
        .node_type(NodeType::new("t/n").tick(|_| Ok(Status::Success)))
        .unwrap();
    assert!(reads("[:sequence [:wait {:ticks 1}] [:t/n]]", &with_node));
    // A user function, handed the db.
    let mut with_fn = Registry::new();
    with_fn
        .function("t/f", Arity::Exactly(0), |_, _| Ok(Value::Nil))
        .unwrap();
    assert!(reads(
        "[:sequence [:wait {:ticks 1}] [:define! {:key :x :val [:aido/fn t/f]}]]",
        &with_fn
    ));
    // A data node whose key path starts at `:aido/memory`, reading or
    // writing.
    assert!(reads("[:present? {:key :aido/memory}]", &plain));
    assert!(reads("[:dissoc! {:key :aido/memory}]", &plain));
    assert!(reads("[:define! {:key :aido/memory :val {}}]", &plain));
    // A dynamic option reading it: the whole map, under it, through a
    // function's arguments, or by a top key worked out when ticked.
    for val in [
        "[:aido/db :aido/memory]",
        "[:aido/db :aido/memory \"0\" :ticks]",
        "[:aido/db :aido/memory [:aido/db :k]]",
        "[:aido/db [:aido/db :k]]",
        "[:aido/fn count [:aido/db :aido/memory]]",
    ] {
        let text = format!("[:define! {{:key :x :val {val}}}]");
        assert!(reads(&text, &plain), "{val}");
    }
    assert!(reads(
        "[:wait {:ticks [:aido/db :aido/memory \"0\" :ticks]}]",
        &plain
    ));
}

/// `body` with `PROBE` made a leaf that copies an absent key, in a tree
/// that marks removals, and in its twin, whose probe reads under
/// `:aido/memory` (the same nil): the twin takes each entry out at
/// once.
fn twins(body: &str) -> (Tree, Tree) {
    let registry = Registry::new();
    let plain = body.replace(
        "PROBE",
        "[:define! {:key :seen :val [:aido/db :m :absent]}]",
    );
    let reader = body.replace(
        "PROBE",
        "[:define! {:key :seen :val [:aido/db :aido/memory :absent]}]",
    );
    let plain = compile_str("t", &plain, &registry).unwrap();
    let reader = compile_str("t", &reader, &registry).unwrap();
    assert!(!plain.reads_memory && reader.reads_memory);
    (plain, reader)
}

/// `n` copies of `child`, one a line.
fn times(n: usize, child: &str) -> String {
    vec![child; n].join("\n")
}

/// Each tick of `tree` (`:stop` set from the second on), traced and
/// recorded: the dbs as printed, the traces, the timeline, and the
/// entries moved.
fn run(tree: &Tree, ticks: usize) -> (Vec<String>, Vec<String>, String, usize) {
    let mut db = Value::map();
    let mut recorded = Value::map();
    let mut recorder = Recorder::new(tree, &db);
    let (mut dbs, mut traces) = (Vec::new(), Vec::new());
    let mut moved = 0;
    for tick in 0..ticks {
        if tick == 1 {
            for db in [&mut db, &mut recorded] {
                if let Value::Map(m) = db {
                    m.insert(Value::keyword("stop"), Value::Bool(true));
                }
            }
        }
        let mut trace = Vec::new();
        moved += moved_by(|| {
            db = run_tick_traced(db.clone(), tree, &TickOptions::default(), &mut trace).db;
        });
        // No mark is left in the db.
        if let Some(Value::Map(memory)) = db.get(&Value::keyword("aido/memory")) {
            assert!(memory.values().all(|v| !v.is_nil()), "{db}");
        }
        // The twins' fingerprints differ: left out.
        let mut shown = db.clone();
        if let Value::Map(m) = &mut shown {
            m.shift_remove(&Value::keyword("aido/tree"));
        }
        dbs.push(shown.to_string());
        traces.push(format!("{trace:?}"));
        recorded = recorder.tick(recorded, tree).db;
        assert_eq!(recorded.to_string(), db.to_string());
    }
    let run = recorder.finish();
    (
        dbs,
        traces,
        timeline(&run, &TimelineOptions::default()),
        moved,
    )
}

/// Ticks the twins of `body` and checks that they leave the same dbs
/// (node memory in the same order), traces and timelines; the entries
/// each moved.
fn same_as_taken_out_at_once(body: &str, ticks: usize) -> (usize, usize) {
    let (plain, reader) = twins(body);
    let (dbs, traces, timeline, marked) = run(&plain, ticks);
    let (dbs_at_once, traces_at_once, timeline_at_once, at_once) = run(&reader, ticks);
    assert_eq!(dbs, dbs_at_once);
    assert_eq!(traces, traces_at_once);
    assert_eq!(timeline, timeline_at_once);
    (marked, at_once)
}

#[test]
fn marked_removals_leave_the_memory_that_taking_each_out_at_once_leaves() {
    // Waits ending beside waits running on; waits ending and written
    // again in the same tick (a loop starts them anew), beside others;
    // selectors each halting its own wait; a halt of a subtree smaller
    // than the map after marks (found node by node), and of one larger
    // than it (a pass over the whole map), each traced and recorded.
    let bodies = [
        format!(
            "[:parallel {{:policy :sequence}} {} PROBE]",
            times(70, "[:wait {:ticks 1}] [:wait {:ticks 3}]")
        ),
        format!(
            "[:parallel {{:policy :sequence}} {} {} PROBE]",
            times(70, "[:loop {:count 2} [:wait {:ticks 1}]]"),
            times(5, "[:wait {:ticks 9}]")
        ),
        format!(
            "[:parallel {{:policy :sequence}} {} {} PROBE]",
            times(
                70,
                "[:selector [:present? {:key :stop}] [:wait {:ticks 5}]]"
            ),
            times(5, "[:wait {:ticks 9}]")
        ),
        format!(
            "[:parallel {{:policy :sequence}} {} [:selector [:present? {{:key :stop}}] [:parallel {{:policy :sequence}} {}]] [:wait {{:ticks 9}}] PROBE]",
            times(70, "[:wait {:ticks 1}]"),
            times(
                20,
                "[:wait {:ticks 5}] [:delay {:ticks 3} [:wait {:ticks 4}]]"
            )
        ),
        format!(
            "[:parallel {{:policy :sequence}} {} [:selector [:present? {{:key :stop}}] [:parallel {{:policy :sequence}} {}]] [:wait {{:ticks 9}}] PROBE]",
            times(70, "[:wait {:ticks 1}]"),
            times(100, "[:wait {:ticks 5}]")
        ),
    ];
    for body in &bodies {
        let (marked, at_once) = same_as_taken_out_at_once(body, 5);
        assert!(marked <= at_once, "{marked} > {at_once}");
    }
}

#[test]
fn waits_ending_or_halted_one_by_one_move_each_memory_entry_at_most_once_a_tick() {
    // Each wait's entry is the first of `:aido/memory` when it goes:
    // taken out at once, each moved every later entry (n²/2 a tick);
    // marked, they leave together, in one pass (or with the map).
    for n in [1_000, 2_000] {
        for (child, ticks) in [
            ("[:wait {:ticks 1}] [:wait {:ticks 3}]", 3),
            ("[:selector [:present? {:key :stop}] [:wait {:ticks 5}]]", 2),
        ] {
            let body = format!(
                "[:parallel {{:policy :sequence}} {} [:wait {{:ticks 9}}] PROBE]",
                times(n, child)
            );
            let (plain, reader) = twins(&body);
            let (_, _, _, marked) = run(&plain, ticks);
            let (_, _, _, at_once) = run(&reader, ticks);
            assert!(marked <= 4 * n, "{n}: {marked}");
            assert!(at_once >= n * n / 4, "{n}: {at_once}");
        }
    }
}
