//! The run record: what a recorder keeps of each tick (visits in tree order
//! with depth, halts, skips, launches, cancels, errors, inputs, db changes),
//! and the text timeline made from it.
#![allow(clippy::panic, clippy::expect_used, clippy::unwrap_used)]

use aido::record::{
    DbChange, Event, NodeState, Recorder, RunRecord, TimelineOptions, diff, timeline,
};
use aido::{Registry, Status, Tree, Value, compile_str, read_value, value::Map};

fn tree(text: &str) -> Tree {
    compile_str("tree.edn", text, &Registry::new()).unwrap()
}

fn map(text: &str) -> Map {
    read_value(text).unwrap().as_map().unwrap().clone()
}

/// Runs `tree` from `db` with one input per tick (`nil` for none).
fn record(tree: &Tree, db: &str, inputs: &[&str]) -> RunRecord {
    let mut db = read_value(db).unwrap();
    let mut recorder = Recorder::new(tree, &db);
    for input in inputs {
        if *input != "nil" {
            let input = map(input);
            for (k, v) in &input {
                db.as_map_mut().unwrap().insert(k.clone(), v.clone());
            }
            recorder.input(&input);
        }
        db = recorder.tick(db, tree).db;
    }
    recorder.finish()
}

fn ids(values: impl IntoIterator<Item = Value>) -> Vec<String> {
    values.into_iter().map(|v| v.to_string()).collect()
}

#[test]
fn visits_are_in_tree_order_with_depth_and_their_last_status() {
    let t = tree(
        "[:selector
           [:sequence [:greater-than? {:key :hunger :val 8}] [:define! {:key :action :val :eat}]]
           [:sequence [:inc! {:key :hunger}] [:loop {:count 3} [:inc! {:key :wander}]]]]",
    );
    let run = record(&t, "{:hunger 0}", &["nil"]);
    let tick = &run.tick(0).unwrap();
    assert_eq!(tick.status, Status::Success);
    let seen: Vec<(String, u32, Status, u32)> = tick
        .visits
        .iter()
        .map(|v| (v.id.to_string(), v.depth, v.status, v.count))
        .collect();
    let s = |id: &str, depth, status, count| (id.to_owned(), depth, status, count);
    assert_eq!(
        seen,
        vec![
            s("\"0\"", 0, Status::Success, 1),
            s("\"0.0\"", 1, Status::Failure, 1),
            s("\"0.0.0\"", 2, Status::Failure, 1),
            s("\"0.1\"", 1, Status::Success, 1),
            s("\"0.1.0\"", 2, Status::Success, 1),
            s("\"0.1.1\"", 2, Status::Success, 1),
            s("\"0.1.1.0\"", 3, Status::Success, 3),
        ]
    );
    // The node never reached this tick is not visited.
    let states = tick.node_states(t.len());
    assert_eq!(states[2], NodeState::Ticked(Status::Failure));
    assert_eq!(states[3], NodeState::None);
    assert_eq!(run.trees[0].nodes.len(), t.len());
    assert_eq!(run.trees[0].nodes[6].line, Some(3));
}

#[test]
fn halts_launches_cancels_and_inputs_are_recorded() {
    let t = tree(
        "[:selector {:id :bot}
          [:sequence {:id :stop} [:test? {:key :input :oper = :val \"stop\"}] [:dissoc! {:key :input}]]
          [:sequence {:id :answer}
           [:present? {:key :input}]
           [:defer {:id :ask :action :llm/ask :prompt [:aido/db :input] :into :reply}]]]",
    );
    let run = record(&t, "{}", &["{:input \"hi\"}", "nil", "{:input \"stop\"}"]);
    let [first, second, third] = &run.ticks().collect::<Vec<_>>()[..] else {
        panic!("three ticks")
    };
    assert_eq!(first.status, Status::Running);
    assert_eq!(first.input(), Some(&map("{:input \"hi\"}")));
    assert!(matches!(first.events(), [Event::Launched(r)] if r.node == Value::keyword("ask")));
    assert!(second.events().is_empty() && second.input().is_none());
    assert_eq!(third.status, Status::Success);
    assert_eq!(ids(third.halted().cloned()), [":ask", ":answer"]);
    assert!(
        third
            .events()
            .iter()
            .any(|e| matches!(e, Event::Cancelled(r) if r.node == Value::keyword("ask")))
    );
    // `:ask` was not ticked in the third tick: halted, not visited.
    let ask = t.find(&Value::keyword("ask")).unwrap();
    assert_eq!(third.node_states(t.len())[ask.index()], NodeState::Halted);
    assert_eq!(third.halts().len(), 2);
    assert!(third.visits.iter().all(|v| v.id != Value::keyword("ask")));
    // The input shows in the changes, and so do the library's keys.
    let (first_changes, third_changes) = (
        run.changes(first).collect::<Vec<_>>(),
        run.changes(third).collect::<Vec<_>>(),
    );
    let keys: Vec<String> = first_changes.iter().map(|c| c.key().to_string()).collect();
    assert_eq!(
        keys,
        [
            ":aido/memory",
            ":aido/requests",
            ":aido/running",
            ":aido/tree",
            ":input"
        ]
    );
    assert_eq!(
        first_changes[4],
        DbChange::Added {
            key: Value::keyword("input"),
            value: Value::string("hi")
        }
    );
    assert!(first_changes[1].is_aido_key() && !first_changes[4].is_aido_key());
    assert_eq!(
        third_changes
            .iter()
            .map(|c| c.key().to_string())
            .collect::<Vec<_>>(),
        [":aido/memory", ":aido/running", ":input"],
    );
    // "stop" came in and was taken out again: "hi" is what left.
    assert_eq!(
        third_changes[2],
        DbChange::Removed {
            key: Value::keyword("input"),
            old: Value::string("hi")
        }
    );
}

#[test]
fn a_node_halted_after_its_visit_is_halted_at_that_tick() {
    // The parallel decides at its second child's success, in the second
    // tick, and halts the first, which it ticked before.
    let t = tree("[:parallel {:policy :selector} [:wait {:ticks 5}] [:wait {:ticks 1}]]");
    let run = record(&t, "{}", &["nil", "nil"]);
    assert_eq!(run.tick(0).unwrap().status, Status::Running);
    let tick = &run.tick(1).unwrap();
    let wait = tick.visits.iter().find(|v| v.id.to_string() == "\"0.0\"");
    assert_eq!(tick.status, Status::Success);
    let wait = wait.expect("the wait was ticked");
    assert_eq!(wait.status, Status::Running);
    assert!(wait.halted);
    assert_eq!(tick.node_states(t.len())[1], NodeState::Halted);
    assert_eq!(ids(tick.halted().cloned()), ["\"0.0\""]);
}

#[test]
fn skips_and_errors_are_events() {
    let t = tree(
        "[:sequence
           [:success {:aido/skip-if true}]
           [:less-than? {:key :name :val 3}]]",
    );
    let run = record(&t, "{:name \"x\"}", &["nil"]);
    let tick = &run.tick(0).unwrap();
    assert_eq!(tick.status, Status::Error);
    assert!(matches!(&tick.events()[0], Event::Skipped { node } if node.to_string() == "\"0.0\""));
    let Event::Error(error) = &tick.events()[1] else {
        panic!("{:?}", tick.events())
    };
    assert_eq!(error.node.to_string(), "\"0.1\"");
    assert_eq!(error.location.unwrap().line, 3);
    assert!(error.span.is_some());
    assert_eq!(
        tick.node_states(t.len())[2],
        NodeState::Ticked(Status::Error)
    );
}

#[test]
fn events_told_before_a_tick_come_first() {
    let t = tree("[:success]");
    let db = Value::map();
    let mut recorder = Recorder::new(&t, &db);
    recorder.event(Event::Trim(read_value("{:outcome :applied}").unwrap()));
    let db = recorder.tick(db, &t).db;
    recorder.tick(db, &t);
    let run = recorder.finish();
    assert_eq!(run.tick(0).unwrap().events().len(), 1);
    assert_eq!(run.tick(0).unwrap().events()[0].kind(), "trim");
    assert!(run.tick(1).unwrap().events().is_empty());
}

#[test]
fn another_tree_is_recorded_with_its_shape() {
    let first = tree("[:sequence {:id :main} [:wait {:id :w :ticks 5}]]");
    let second = tree("[:sequence {:id :main} [:inc! {:key :n}] [:wait {:id :w :ticks 5}]]");
    let mut db = Value::map();
    let mut recorder = Recorder::new(&first, &db);
    db = recorder.tick(db, &first).db;
    db = recorder.tick(db, &second).db;
    db = recorder.tick(db, &second).db;
    recorder.tick(db, &first);
    let run = recorder.finish();
    assert_eq!(run.trees.len(), 2);
    // The tree of the tick before is known without a search, each time.
    let trees: Vec<usize> = run.ticks().map(|t| t.tree).collect();
    assert_eq!(trees, [0, 1, 1, 0]);
    assert_eq!(run.tick(1).unwrap().visits.len(), 3);
    assert!(
        run.tick(1)
            .unwrap()
            .events()
            .iter()
            .any(|e| e.kind() == "migrated")
    );
}

#[test]
fn the_db_at_any_tick_is_rebuilt_from_the_changes() {
    let t = tree(
        "[:sequence [:inc! {:key :n}] [:choose [:define! {:key :a :val 1}] [:dissoc! {:key :a}]]]",
    );
    let mut db = read_value("{:aido/seed 7}").unwrap();
    let mut recorder = Recorder::new(&t, &db);
    let mut dbs = vec![db.clone()];
    for _ in 0..20 {
        db = recorder.tick(db, &t).db;
        dbs.push(db.clone());
    }
    let run = recorder.finish();
    for (n, db) in dbs.iter().enumerate() {
        assert_eq!(&run.db_after(n), db, "after tick {n}");
    }
}

/// `ticks` ticks of `t` recorded from the db `db` (by a recorder comparing
/// only written keys if `keyed`), the host editing the db after tick `n`
/// (counted from 0) with `edit(n, db)`, which says whether it changed it;
/// each db after a tick checked against the record's.
fn recorded_with_edits(
    t: &Tree,
    db: &str,
    keyed: bool,
    ticks: usize,
    mut edit: impl FnMut(usize, &mut Map) -> bool,
) -> RunRecord {
    let mut db = read_value(db).unwrap();
    let mut recorder = Recorder::new(t, &db);
    if keyed {
        recorder = recorder.comparing_written_keys();
    }
    let mut dbs = vec![db.clone()];
    for n in 0..ticks {
        db = recorder.tick(db, t).db;
        dbs.push(db.clone());
        if edit(n, db.as_map_mut().unwrap()) && keyed {
            recorder.db_changed();
        }
    }
    let run = recorder.finish();
    for (n, db) in dbs.iter().enumerate() {
        assert_eq!(&run.db_after(n), db, "after tick {n}");
    }
    run
}

#[test]
fn a_small_db_whose_keys_move_between_ticks_is_recorded_right() {
    // A db of at most 8 keys is compared value by value at the places of
    // the db before's keys: a host's edit between ticks that moves a key,
    // or puts another in its place, is found and compared in full, by a
    // recorder comparing every value and by one comparing written keys.
    let t = tree("[:inc! {:key :n}]");
    for keyed in [false, true] {
        let run = recorded_with_edits(&t, "{:n 0 :a 1 :b 2}", keyed, 5, |edit, map| {
            match edit {
                // `:a` moves to the end, its value kept.
                0 => {
                    let a = map.shift_remove(&Value::keyword("a")).unwrap();
                    map.insert(Value::keyword("a"), a);
                }
                // `:c` takes `:a`'s place.
                1 => {
                    map.swap_remove(&Value::keyword("a"));
                    map.insert(Value::keyword("c"), Value::Int(3));
                }
                // A value changed, the keys where they were.
                2 => {
                    map.insert(Value::keyword("b"), Value::Int(-2));
                }
                _ => return false,
            }
            true
        });
        assert_eq!(
            timeline(&run, &TimelineOptions::default()),
            "tick 1: success\n  ~ :n 0 -> 1\n\n\
             tick 2: success\n  ~ :n 1 -> 2\n\n\
             tick 3: success\n  - :a\n  + :c 3\n  ~ :n 2 -> 3\n\n\
             tick 4: success\n  ~ :b 2 -> -2\n  ~ :n 3 -> 4\n\n\
             tick 5: success\n  ~ :n 4 -> 5\n",
            "comparing written keys: {keyed}"
        );
    }
}

#[test]
fn a_key_replaced_after_keys_already_compared_is_recorded_in_order() {
    // The keys of a small db are checked as their values are compared, in
    // the order of their text: here `:a` and `:n` changed before `:z` is
    // found replaced by `:b`, and the tick's changes are still those of
    // the full comparison, in the order of the keys' text.
    let t = tree("[:inc! {:key :n}]");
    for keyed in [false, true] {
        let run = recorded_with_edits(&t, "{:n 0 :a 1 :z 2}", keyed, 3, |edit, map| {
            if edit != 0 {
                return false;
            }
            map.insert(Value::keyword("a"), Value::Int(5));
            map.swap_remove(&Value::keyword("z"));
            map.insert(Value::keyword("b"), Value::Int(3));
            true
        });
        assert_eq!(
            timeline(&run, &TimelineOptions::default()),
            "tick 1: success\n  ~ :n 0 -> 1\n\n\
             tick 2: success\n  ~ :a 1 -> 5\n  + :b 3\n  ~ :n 1 -> 2\n  - :z\n\n\
             tick 3: success\n  ~ :n 2 -> 3\n",
            "comparing written keys: {keyed}"
        );
    }
}

#[test]
fn diffs_list_keys_in_the_order_of_their_text() {
    let old = read_value("{:b 1, :a 1, :z 1, \"s\" 1, :n 1}").unwrap();
    let new = read_value("{:z 2, :c 1, :a 1, :b 1.0, \"s\" 1}").unwrap();
    let keys: Vec<String> = diff(&old, &new)
        .iter()
        .map(|c| match c {
            DbChange::Added { key, .. } => format!("+{key}"),
            DbChange::Changed { key, .. } => format!("~{key}"),
            DbChange::Removed { key, .. } => format!("-{key}"),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(keys, ["~:b", "+:c", "-:n", "~:z"]);
}

#[test]
fn the_text_timeline_shows_changes_events_and_visits() {
    let t = tree(
        "[:selector {:id :bot}
          [:sequence {:id :answer}
           [:present? {:key :input}]
           [:defer {:id :ask :action :llm/ask :prompt [:aido/db :input] :into :reply}]]]",
    );
    let run = record(&t, "{}", &["{:input \"hi\"}"]);
    let plain = timeline(&run, &TimelineOptions::default());
    assert_eq!(
        plain,
        "tick 1: running\n  input {:input \"hi\"}\n  + :input \"hi\"\n  launch :ask :llm/ask {:prompt \"hi\"}\n"
    );
    let traced = timeline(
        &run,
        &TimelineOptions {
            aido_keys: false,
            trace: true,
        },
    );
    assert_eq!(
        traced,
        "tick 1: running
  input {:input \"hi\"}
  + :input \"hi\"
  launch :ask :llm/ask {:prompt \"hi\"}
  nodes:
    :selector :bot running
      :sequence :answer running
        :present? \"answer.0\" success
        :defer :ask running
"
    );
    let with_aido_keys = timeline(
        &run,
        &TimelineOptions {
            aido_keys: true,
            trace: false,
        },
    );
    assert!(with_aido_keys.contains("\n  + :aido/running [:bot :answer :ask]\n  + :aido/tree "));
}

/// The timeline prints every map in the db sorted by key, nested ones too, so
/// writing the same keys in another order does not change it.
#[test]
fn nested_maps_print_in_a_stable_order() {
    let timeline_of = |tree: &str| {
        let tree = compile_str("t.edn", tree, &Registry::new()).unwrap();
        let db = read_value("{}").unwrap();
        let mut recorder = Recorder::new(&tree, &db);
        recorder.tick(db, &tree);
        timeline(&recorder.finish(), &TimelineOptions::default())
    };
    let one = timeline_of("[:define! {:key :pos :val {:y 2 :x 1 :tags #{:b :a}}}]");
    let two = timeline_of("[:define! {:key :pos :val {:x 1 :y 2 :tags #{:a :b}}}]");
    assert_eq!(one, two);
    assert_eq!(
        one,
        "tick 1: success\n  + :pos {:tags #{:a :b}, :x 1, :y 2}\n"
    );
}

/// Recording a run both ways, comparing every value of the db (the
/// reference) and comparing only the keys each tick wrote
/// (`Recorder::comparing_written_keys`), gives the same records.
mod both_ways {
    use std::sync::Arc;

    use super::*;
    use crate::common::Gen;
    use aido::extend::NodeType;
    use aido::session::{Session, merge_input, results_input};
    use aido::tick::{Request, TickOptions};

    /// Keys the generated nodes write: top-level keywords, paths into a big
    /// map and a long vector (recorded as edits), a log (recorded as
    /// appends), a string key (which the tick cannot note), the library's
    /// own keys.
    const KEYS: &[&str] = &[
        ":a",
        ":b",
        ":log",
        "[:m 3]",
        "[:m :x]",
        "[:v 2]",
        "\"s\"",
        "[:cd :k]",
        ":aido/requests",
    ];
    // Past 32 bits, a float and a character: the record packs a scalar
    // change in 16 bytes, or with its payloads in a side list when they
    // need 8 bytes.
    const VALUES: &[&str] = &[
        "0",
        "1",
        "-3",
        "\"t\"",
        ":k",
        "nil",
        "[1 2]",
        "2.5",
        "{:x 1}",
        "4294967296",
        "-0.0",
        "\\a",
    ];

    /// A random leaf: every data node, `:matches?` and `:defer` with
    /// `:into`, a `:wait`, and the user node types of [`registry`].
    fn leaf(g: &mut Gen) -> String {
        let key = g.pick(KEYS);
        let val = g.pick(VALUES);
        match g.below(19) {
            0 => "[:success]".into(),
            1 => "[:failure]".into(),
            2 => format!("[:present? {{:key {key}}}]"),
            3 => format!("[:greater-than? {{:key {key} :val {}}}]", g.below(4)),
            4 => format!("[:equal? {{:v1 [:aido/db {key}] :v2 {val}}}]"),
            5 | 6 => format!("[:define! {{:key {key} :val {val}}}]"),
            7 | 8 => format!("[:inc! {{:key {key}}}]"),
            9 => format!("[:dissoc! {{:key {key}}}]"),
            10 => format!(
                "[:emit! {{:key {key} :val {val} :keep {}}}]",
                2 + g.below(8)
            ),
            11 => format!("[:matches? {{:key :text :regex \"[0-9]+\" :into {key}}}]"),
            12 => format!("[:wait {{:ticks {}}}]", 1 + g.below(2)),
            13 => format!("[:defer {{:action :ask :into {key}}}]"),
            14 => "[:test/lend!]".into(),
            15 => format!("[:test/put! {{:at {key}}}]"),
            16 => "[:test/remember!]".into(),
            17 => format!("[:test? {{:key {key} :oper >= :val {}}}]", g.below(3)),
            _ => format!("[:emit! {{:key :log :val {val}}}]"),
        }
    }

    /// A random tree: composites with and without memory, parallels that
    /// roll back, random deciders, decorators with state (a cooldown kept
    /// at a db key), preconditions.
    fn tree_text(g: &mut Gen, depth: u32) -> String {
        if depth == 0 || g.below(4) == 0 {
            return leaf(g);
        }
        let kids = |g: &mut Gen, most: u64| {
            (0..1 + g.below(most))
                .map(|_| tree_text(g, depth - 1))
                .collect::<Vec<_>>()
                .join(" ")
        };
        match g.below(20) {
            0 | 1 => format!("[:selector {}]", kids(g, 4)),
            2 | 3 => format!("[:sequence {}]", kids(g, 4)),
            4 => format!("[:sequence {{:memory true}} {}]", kids(g, 3)),
            5 => format!("[:selector {{:memory true}} {}]", kids(g, 3)),
            6 => format!("[:parallel {{:policy :sequence}} {}]", kids(g, 3)),
            7 => format!("[:parallel {{:policy :selector}} {}]", kids(g, 3)),
            8 => format!("[:loop {{:count {}}} {}]", g.below(3), kids(g, 1)),
            9 => format!("[:invert {}]", kids(g, 1)),
            10 => format!("[:choose-each {{:repeat true}} {}]", kids(g, 3)),
            11 => format!("[:choose {}]", kids(g, 3)),
            12 => format!("[:randomly {{:p 0.5}} {}]", kids(g, 2)),
            13 => format!("[:selector {{:aido/skip-if [:aido/db :c]}} {}]", kids(g, 3)),
            14 => format!("[:retry {{:count 2}} {}]", kids(g, 1)),
            15 => format!("[:run-once {}]", kids(g, 1)),
            16 => format!("[:cooldown {{:seconds 1 :key [:cd :k]}} {}]", kids(g, 1)),
            17 => format!("[:timeout {{:ticks 2}} {}]", kids(g, 1)),
            18 => format!(
                "[:weighted-choice {{:weights [1 2]}} {} {}]",
                tree_text(g, depth - 1),
                tree_text(g, depth - 1)
            ),
            _ => format!("[:parallel {{:mode :success :how-many 1}} {}]", kids(g, 3)),
        }
    }

    /// A seeded db with a big map, a long vector, a log and a string; in
    /// half the cases with more keys than a recorder compares whole, so
    /// that both ways of finding the changes are met.
    fn db(g: &mut Gen) -> Value {
        let a = if g.below(3) == 0 { "" } else { ":a 1" };
        let more = if g.below(2) == 0 {
            ""
        } else {
            ":p1 0 :p2 0 :p3 0 :p4 0"
        };
        read_value(&format!(
            "{{:aido/seed {} {a} :b 2 :c {} :text \"ab 12 cd\" \
              :m {{0 0 1 1 2 2 3 3 4 4 5 5 6 6 7 7 :x 0}} {more} \
              :v [0 0 0 0 0 0 0 0 0 0] :log [1 2 3 4 5 6 7 8]}}",
            g.below(1000),
            g.below(2) == 0
        ))
        .unwrap()
    }

    /// User node types: one that is lent the whole db, one that writes a
    /// key through its key slot, one with memory whose halt hook is lent
    /// the db.
    fn registry() -> Registry {
        let mut registry = Registry::new();
        let lend = NodeType::new("test/lend!").tick(|ctx| {
            let lent = Value::keyword("lent");
            let n = ctx.db().get(&lent).and_then(Value::as_int).unwrap_or(0);
            ctx.db_mut().insert(lent, Value::Int(n + 1));
            Ok(Status::Success)
        });
        let mut put = NodeType::new("test/put!");
        let at = put.key_slot("at");
        let put = put.tick(move |ctx| {
            let value = Value::Int(ctx.random_below(3) as i64);
            ctx.set_db_at(at, value)?;
            Ok(Status::Success)
        });
        let remember = NodeType::new("test/remember!")
            .tick(|ctx| {
                let n = ctx.memory().and_then(Value::as_int).unwrap_or(0);
                if n >= 2 {
                    ctx.set_memory(None)?;
                    return Ok(Status::Success);
                }
                ctx.set_memory(Some(Value::Int(n + 1)))?;
                Ok(Status::Running)
            })
            .on_halt(|ctx| {
                ctx.db_mut()
                    .insert(Value::keyword("halted"), Value::Bool(true));
            });
        for node_type in [lend, put, remember] {
            registry.node_type(node_type).unwrap();
        }
        registry
    }

    /// A generated tree that compiles, with its text.
    fn compiled(g: &mut Gen, registry: &Registry) -> (String, Tree) {
        loop {
            let text = tree_text(g, 4);
            if let Ok(tree) = compile_str("t.edn", &text, registry) {
                return (text, tree);
            }
        }
    }

    /// Completions for the requests launched, every other one a failure.
    fn completions(db: &Value, launched: &[Request]) -> Map {
        let results: Map = launched
            .iter()
            .map(|r| {
                let status = if r.request % 2 == 0 {
                    "success"
                } else {
                    "failure"
                };
                let completion = read_value(&format!(
                    "{{:request {} :status :{status} :result {}}}",
                    r.request, r.request
                ))
                .unwrap();
                (r.node.clone(), completion)
            })
            .collect();
        results_input(db, results)
    }

    /// The first tick whose records differ, shown whole with its changes.
    pub(super) fn same_ticks(case: u64, text: &str, full: &RunRecord, keyed: &RunRecord) {
        assert_eq!(full.n_ticks(), keyed.n_ticks());
        for (n, (a, b)) in full.ticks().zip(keyed.ticks()).enumerate() {
            let (a_changes, b_changes) = (
                full.changes(&a).collect::<Vec<_>>(),
                keyed.changes(&b).collect::<Vec<_>>(),
            );
            assert!(
                a == b && a_changes == b_changes,
                "case {case}, tick {}: the records differ\ntree: {text}\n\
                 full: {a:#?}\n{a_changes:#?}\nkeyed: {b:#?}\n{b_changes:#?}",
                n + 1
            );
        }
    }

    #[test]
    fn a_recorder_comparing_written_keys_records_what_the_full_comparison_does() {
        let registry = registry();
        let ticks = 8;
        let (mut compared, mut edited) = (0, 0);
        for case in 0..400 {
            let mut g = Gen(case);
            let (text, first) = compiled(&mut g, &registry);
            let (_, second) = compiled(&mut g, &registry);
            let start = db(&mut g);
            let mut full = Recorder::new(&first, &start);
            let mut keyed = Recorder::new(&first, &start).comparing_written_keys();
            let (mut db_full, mut db_keyed) = (start.clone(), start);
            let mut tree = &first;
            let mut launched: Vec<Request> = Vec::new();
            let mut dbs = vec![db_full.clone()];
            for t in 0..ticks {
                // The gap before the tick, the same for both.
                let mut input = one(":aido/now", &format!("{}.0", t));
                let mut options = TickOptions::default();
                match g.below(9) {
                    0 => input.extend(map(&format!("{{:a {}}}", g.pick(VALUES)))),
                    1 => input.extend(map("{:c true :b nil}")),
                    2 => {
                        // An edit the host tells of.
                        for db in [&mut db_full, &mut db_keyed] {
                            let m = db.as_map_mut().unwrap();
                            m.insert(Value::keyword("b"), Value::Int(t));
                            m.shift_remove(&Value::keyword("log"));
                        }
                        keyed.db_changed();
                        edited += 1;
                    }
                    3 => options.locals = Some(read_value("{:l 1}").unwrap()),
                    4 => {
                        // Another tree: the tick carries the db over itself.
                        tree = if std::ptr::eq(tree, &first) {
                            &second
                        } else {
                            &first
                        };
                    }
                    5 => {
                        // A reload: carried over between ticks and told.
                        let next = if std::ptr::eq(tree, &first) {
                            &second
                        } else {
                            &first
                        };
                        let mut report = None;
                        for db in [&mut db_full, &mut db_keyed] {
                            let (carried, r) =
                                aido::migrate::migrate(std::mem::take(db), tree, next);
                            *db = carried;
                            report = Some(r.to_value());
                        }
                        let report = report.unwrap();
                        full.event(Event::Reload(report.clone()));
                        keyed.event(Event::Reload(report));
                        tree = next;
                    }
                    _ => {}
                }
                if !launched.is_empty() && g.below(2) == 0 {
                    input.extend(completions(&db_full, &launched));
                }
                for (db, recorder) in [(&mut db_full, &mut full), (&mut db_keyed, &mut keyed)] {
                    merge_input(db, &input);
                    recorder.input(&input);
                }
                let a = full.tick_with_options(std::mem::take(&mut db_full), tree, &options);
                let b = keyed.tick_with_options(std::mem::take(&mut db_keyed), tree, &options);
                assert_eq!(
                    a.db, b.db,
                    "case {case}: a seeded tick is a function of db and tree"
                );
                launched = a.launches().to_vec();
                (db_full, db_keyed) = (a.db, b.db);
                dbs.push(db_full.clone());
                compared += 1;
            }
            let (full, keyed) = (full.finish(), keyed.finish());
            same_ticks(case, &text, &full, &keyed);
            // Both against the changes worked out from the dbs alone.
            for (n, tick) in full.ticks().enumerate() {
                assert_eq!(
                    full.changes(&tick).collect::<Vec<_>>(),
                    diff(&dbs[n], &dbs[n + 1]),
                    "case {case}, tick {}\ntree: {text}",
                    n + 1
                );
            }
            assert_eq!(keyed.db_after(ticks as usize), db_keyed);
        }
        assert!(
            compared == 400 * 8 && edited > 100,
            "{compared} ticks, {edited} edits"
        );
    }

    fn one(key: &str, value: &str) -> Map {
        map(&format!("{{{key} {value}}}"))
    }

    #[test]
    fn a_recorded_session_records_what_each_tick_and_each_gap_changed() {
        // The session records comparing written keys; every change it makes
        // between ticks (inputs, the clock, completions, trims, reloads,
        // the seed, the db lent to the host) is in the record, as a full
        // comparison of the dbs before and after finds it.
        let registry = registry();
        let ticks = 8;
        for case in 0..150 {
            let mut g = Gen(1_000 + case);
            let (text, first) = compiled(&mut g, &registry);
            let (_, second) = compiled(&mut g, &registry);
            let (first, second) = (Arc::new(first), Arc::new(second));
            let mut session = Session::new(Arc::clone(&first), db(&mut g));
            session.set_registry(registry.clone());
            session.record();
            let mut dbs = vec![session.db().clone()];
            let mut launched: Vec<Request> = Vec::new();
            for t in 0..ticks {
                session.advance_time(0.5).unwrap();
                match g.below(8) {
                    0 => session.input(&map(&format!("{{:a {} :c nil}}", g.pick(VALUES)))),
                    1 => {
                        let m = session.db_mut().as_map_mut().unwrap();
                        m.insert(Value::keyword("b"), Value::Int(t));
                    }
                    2 => session.trim(Box::new(
                        aido::trim::DataTask::from_value(
                            &read_value(&format!(
                                "{{:task :t{t} :target \"0\" :insert [:inc! {{:key :a}}] :at 0 \
                                  :db {{:b {t}}} :dissoc [:c]}}"
                            ))
                            .unwrap(),
                        )
                        .unwrap(),
                    )),
                    3 => {
                        let next = if Arc::ptr_eq(session.tree(), &first) {
                            Arc::clone(&second)
                        } else {
                            Arc::clone(&first)
                        };
                        session.reload(next, None);
                    }
                    4 => session.seed(t),
                    _ => {}
                }
                if !launched.is_empty() {
                    let results = completions(session.db(), &launched);
                    session.input(&results);
                }
                session.between_ticks();
                let tick = session.tick();
                launched = tick.launches().to_vec();
                dbs.push(session.db().clone());
            }
            let (run, _) = session.finish();
            let run = run.unwrap();
            for (n, tick) in run.ticks().enumerate() {
                assert_eq!(
                    run.changes(&tick).collect::<Vec<_>>(),
                    diff(&dbs[n], &dbs[n + 1]),
                    "case {case}, tick {}\ntree: {text}",
                    n + 1
                );
            }
        }
    }

    #[test]
    fn a_change_between_ticks_that_is_not_told_is_not_seen() {
        // What the host of a recorder comparing written keys promises, shown
        // by breaking it: an edit between ticks that it does not tell of is
        // missing from the record (the full comparison finds it), and told,
        // it is there. A db of at most 8 keys is compared whole (cheaper
        // than noting the tick's writes): there the edit is found anyway.
        let t = tree("[:inc! {:key :n}]");
        let changes = |start: &str, tell: bool, keyed: bool| {
            let start = read_value(start).unwrap();
            let mut recorder = Recorder::new(&t, &start);
            if keyed {
                recorder = recorder.comparing_written_keys();
            }
            let mut db = recorder.tick(start.clone(), &t).db;
            db.as_map_mut()
                .unwrap()
                .insert(Value::keyword("other"), Value::Int(1));
            if tell {
                recorder.db_changed();
            }
            recorder.tick(db, &t);
            let run = recorder.finish();
            let keys: Vec<String> = run
                .changes(&run.tick(1).unwrap())
                .collect::<Vec<_>>()
                .iter()
                .map(|c| c.key().to_string())
                .collect();
            keys
        };
        let big = "{:n 0 :other 0 :a 0 :b 0 :c 0 :d 0 :e 0 :f 0 :g 0}";
        assert_eq!(changes(big, false, false), [":n", ":other"]);
        assert_eq!(changes(big, true, true), [":n", ":other"]);
        assert_eq!(changes(big, false, true), [":n"]);
        let small = "{:n 0 :other 0 :a 0 :b 0 :c 0 :d 0 :e 0 :f 0}";
        assert_eq!(changes(small, false, true), [":n", ":other"]);
    }
}

/// Cases the generated runs of `both_ways` may not reach, each recorded
/// both ways and compared.
mod both_ways_cases {
    use super::*;
    use aido::session::merge_input;
    use aido::tick::TickOptions;

    /// Records `tree` from `db` both ways, one tick per gap (an input,
    /// `nil` for none, and whether the tick has locals), and checks that
    /// the records are the same; returns the changed keys of each tick.
    fn both(tree_text: &str, db: &str, gaps: &[(&str, bool)]) -> Vec<Vec<String>> {
        let t = tree(tree_text);
        let start = read_value(db).unwrap();
        let mut full = Recorder::new(&t, &start);
        let mut keyed = Recorder::new(&t, &start).comparing_written_keys();
        let (mut a, mut b) = (start.clone(), start);
        for (input, locals) in gaps {
            if *input != "nil" {
                let input = map(input);
                for (db, recorder) in [(&mut a, &mut full), (&mut b, &mut keyed)] {
                    merge_input(db, &input);
                    recorder.input(&input);
                }
            }
            let options = TickOptions {
                locals: locals.then(|| Value::Int(1)),
                ..TickOptions::default()
            };
            a = full.tick_with_options(a, &t, &options).db;
            b = keyed.tick_with_options(b, &t, &options).db;
        }
        let (full, keyed) = (full.finish(), keyed.finish());
        super::both_ways::same_ticks(0, tree_text, &full, &keyed);
        keyed
            .ticks()
            .map(|t| {
                keyed
                    .changes(&t)
                    .collect::<Vec<_>>()
                    .iter()
                    .map(|c| c.key().to_string())
                    .collect()
            })
            .collect()
    }

    #[test]
    fn locals_a_tick_takes_out_of_the_db_are_recorded() {
        // The db had `:aido/locals` (a host put it there): the tick with
        // locals replaces them and takes them out at its end.
        let keys = both("[:success]", "{:aido/locals 5}", &[("nil", true)]);
        assert_eq!(keys, [[":aido/locals"]]);
    }

    #[test]
    fn completions_taken_after_an_error_tick_are_recorded() {
        // The second tick ends in Error before the `:defer` takes its
        // completion, which stays; the third takes it, though its gap tells
        // of `:bad` alone.
        let keys = both(
            "[:sequence [:inc! {:key :bad}] [:defer {:id :d :action :ask}]]",
            "{:bad 0}",
            &[
                ("nil", false),
                (
                    "{:bad \"x\" :aido/results {:d {:request 1 :status :success}}}",
                    false,
                ),
                ("{:bad 0}", false),
            ],
        );
        assert!(keys[1].contains(&":aido/error".to_owned()), "{keys:?}");
        assert!(keys[2].contains(&":aido/results".to_owned()), "{keys:?}");
    }
}

#[test]
fn each_tick_is_made_from_its_entry_with_its_own_number_changes_and_input() {
    // Inputs at ticks 2 and 5 only: each tick finds its own notes (a side
    // list of the run), its own range of changes and its number, forwards,
    // backwards and by index alike.
    let t = tree("[:sequence [:inc! {:key :n}] [:less-than? {:key :n :val 4}]]");
    let run = record(
        &t,
        "{:n 0}",
        &["nil", "{:x 1}", "nil", "nil", "{:x 2 :y 3}", "nil"],
    );
    assert_eq!(run.n_ticks(), 6);
    assert_eq!(run.ticks().len(), 6);
    let forwards: Vec<_> = run.ticks().collect();
    let mut backwards: Vec<_> = run.ticks().rev().collect();
    backwards.reverse();
    assert_eq!(forwards, backwards);
    let by_index: Vec<_> = (0..6).map(|i| run.tick(i).unwrap()).collect();
    assert_eq!(forwards, by_index);
    assert!(run.tick(6).is_none());
    assert_eq!(run.ticks().last(), run.tick(5));
    assert_eq!(run.ticks().nth(4), run.tick(4));

    let numbers: Vec<u64> = run.ticks().map(|t| t.tick).collect();
    assert_eq!(numbers, [1, 2, 3, 4, 5, 6]);
    let inputs: Vec<Option<Map>> = run.ticks().map(|t| t.input().cloned()).collect();
    assert_eq!(
        inputs,
        [
            None,
            Some(map("{:x 1}")),
            None,
            None,
            Some(map("{:x 2 :y 3}")),
            None
        ]
    );
    let statuses: Vec<Status> = run.ticks().map(|t| t.status).collect();
    use Status::{Failure, Success};
    assert_eq!(
        statuses,
        [Success, Success, Success, Failure, Failure, Failure]
    );
    // Tick 2 added :x and changed :n; tick 5 changed :x, added :y, changed :n.
    let keys = |i: usize| -> Vec<String> {
        let tick = run.tick(i).unwrap();
        run.changes(&tick).map(|c| c.key().to_string()).collect()
    };
    assert_eq!(keys(0), [":n"]);
    assert_eq!(keys(1), [":n", ":x"]);
    assert_eq!(keys(4), [":n", ":x", ":y"]);
    assert_eq!(run.db_after(6), read_value("{:n 6 :x 2 :y 3}").unwrap());
    assert_eq!(run.db_after(99), run.db_after(6));
    assert_eq!(run.db_after(0), read_value("{:n 0}").unwrap());
}

#[test]
fn numbering_a_recorder_from_a_save_numbers_every_tick_on_from_it() {
    let t = tree("[:inc! {:key :n}]");
    let mut db = read_value("{}").unwrap();
    let mut recorder = Recorder::new(&t, &db).numbered_from(41);
    for _ in 0..3 {
        db = recorder.tick(db, &t).db;
    }
    let numbers: Vec<u64> = recorder.ticks().map(|t| t.tick).collect();
    assert_eq!(numbers, [41, 42, 43]);
}
