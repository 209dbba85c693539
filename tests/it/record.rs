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
    let tick = &run.ticks[0];
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
    let [first, second, third] = &run.ticks[..] else {
        panic!("three ticks")
    };
    assert_eq!(first.status, Status::Running);
    assert_eq!(first.input, Some(map("{:input \"hi\"}")));
    assert!(matches!(&first.events[..], [Event::Launched(r)] if r.node == Value::keyword("ask")));
    assert!(second.events.is_empty() && second.input.is_none());
    assert_eq!(third.status, Status::Success);
    assert_eq!(ids(third.halted().cloned()), [":ask", ":answer"]);
    assert!(
        third
            .events
            .iter()
            .any(|e| matches!(e, Event::Cancelled(r) if r.node == Value::keyword("ask")))
    );
    // `:ask` was not ticked in the third tick: halted, not visited.
    let ask = t.find(&Value::keyword("ask")).unwrap();
    assert_eq!(third.node_states(t.len())[ask.index()], NodeState::Halted);
    assert_eq!(third.halts.len(), 2);
    assert!(third.visits.iter().all(|v| v.id != Value::keyword("ask")));
    // The input shows in the changes, and so do the library's keys.
    let keys: Vec<String> = first.changes.iter().map(|c| c.key().to_string()).collect();
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
        first.changes[4],
        DbChange::Added {
            key: Value::keyword("input"),
            value: Value::string("hi")
        }
    );
    assert!(first.changes[1].is_aido_key() && !first.changes[4].is_aido_key());
    assert_eq!(
        third
            .changes
            .iter()
            .map(|c| c.key().to_string())
            .collect::<Vec<_>>(),
        [":aido/memory", ":aido/running", ":input"],
    );
    // "stop" came in and was taken out again: "hi" is what left.
    assert_eq!(
        third.changes[2],
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
    assert_eq!(run.ticks[0].status, Status::Running);
    let tick = &run.ticks[1];
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
    let tick = &run.ticks[0];
    assert_eq!(tick.status, Status::Error);
    assert!(matches!(&tick.events[0], Event::Skipped { node } if node.to_string() == "\"0.0\""));
    let Event::Error(error) = &tick.events[1] else {
        panic!("{:?}", tick.events)
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
    assert_eq!(run.ticks[0].events.len(), 1);
    assert_eq!(run.ticks[0].events[0].kind(), "trim");
    assert!(run.ticks[1].events.is_empty());
}

#[test]
fn another_tree_is_recorded_with_its_shape() {
    let first = tree("[:sequence {:id :main} [:wait {:id :w :ticks 5}]]");
    let second = tree("[:sequence {:id :main} [:inc! {:key :n}] [:wait {:id :w :ticks 5}]]");
    let mut db = Value::map();
    let mut recorder = Recorder::new(&first, &db);
    db = recorder.tick(db, &first).db;
    db = recorder.tick(db, &second).db;
    recorder.tick(db, &first);
    let run = recorder.finish();
    assert_eq!(run.trees.len(), 2);
    let trees: Vec<usize> = run.ticks.iter().map(|t| t.tree).collect();
    assert_eq!(trees, [0, 1, 0]);
    assert_eq!(run.ticks[1].visits.len(), 3);
    assert!(run.ticks[1].events.iter().any(|e| e.kind() == "migrated"));
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
