//! The runner after seed 001: the root's callbacks (OnExecute, OnReport,
//! OnNotify) and the run record that shows them, loading only a destroyed
//! tree, the group operations of a forest, and a reload's cancel requests.
#![allow(clippy::panic, clippy::expect_used, clippy::unwrap_used)]

use std::sync::{Arc, Mutex};

use aido::{
    Registry, Status, Tree, Value, compile_str,
    extend::NodeType,
    forest::Forest,
    read_value,
    record::Event,
    runner::{PlayMode, RootEvent, Runner, RunnerError, TreeStatus},
};

fn tree(src: &str) -> Arc<Tree> {
    Arc::new(compile_str("t.edn", src, &registry()).unwrap_or_else(|d| panic!("{}", d.render())))
}

fn db(text: &str) -> Value {
    read_value(text).unwrap()
}

fn get(db: &Value, key: &str) -> Option<Value> {
    db.get(&Value::keyword(key)).cloned()
}

/// `[:t/hooked]` succeeds and appends each lifecycle event to `:events`.
fn registry() -> Registry {
    let mut r = Registry::new();
    r.node_type(
        NodeType::new("t/hooked")
            .tick(|_| Ok(Status::Success))
            .on_lifecycle(|ctx, event| {
                let event = Value::keyword(&format!("{event:?}").to_lowercase());
                let slot = ctx
                    .db_mut()
                    .entry(Value::keyword("events"))
                    .or_insert(Value::Vector(aido::value::thin_vec![]));
                if let Value::Vector(v) = slot {
                    v.push(event);
                }
            }),
    )
    .unwrap();
    r
}

/// Counts rounds, waits a tick, then fails if `:stop` is there.
const PATROL: &str = "[:sequence {:id :patrol}
  [:inc! {:key :rounds}]
  [:wait {:id :walk :ticks 1}]
  [:invert [:present? {:key :stop}]]]";

/// Root events as text, for comparing.
fn shown(events: &[RootEvent]) -> Vec<String> {
    events
        .iter()
        .map(|e| match e {
            RootEvent::Execute => "execute".to_owned(),
            RootEvent::Report(s) => format!("report {}", s.to_value()),
            RootEvent::Notify { executing } => {
                format!("notify {}", Value::Vector(executing.as_slice().into()))
            }
            other => format!("{other:?}"),
        })
        .collect()
}

#[test]
fn the_root_callbacks_run_on_execute_report_and_notify() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut r = Runner::load(tree(PATROL), Value::map());
    let log = Arc::clone(&seen);
    r.on_root(move |event, db| {
        // The db is the one before the tick for execute, after it otherwise.
        log.lock().unwrap().push((event.clone(), get(db, "rounds")));
    });
    r.play(PlayMode::StopByExecuteLoopCount, 3).unwrap();
    r.update().unwrap();
    assert_eq!(
        shown(r.root_events()),
        ["execute", "notify [:walk]"],
        "a tick that ends Running notifies, with the executing node (not its running parent)"
    );
    r.update().unwrap();
    assert_eq!(shown(r.root_events()), ["execute", "report :success"]);
    r.db_mut()
        .as_map_mut()
        .unwrap()
        .insert(Value::keyword("stop"), Value::Bool(true));
    r.update().unwrap();
    assert_eq!(shown(r.root_events()), ["execute", "notify [:walk]"]);
    // Stopped by the target: no more loops, no more callbacks; a stop
    // between ticks interrupts nothing, so nothing is notified.
    assert!(r.update().unwrap().is_none());
    r.pause().unwrap();
    let seen = seen.lock().unwrap();
    let rounds: Vec<Option<Value>> = seen.iter().map(|(_, n)| n.clone()).collect();
    assert_eq!(
        rounds,
        // The reactive sequence counts a round in every tick.
        [
            None,
            Some(Value::Int(1)),
            Some(Value::Int(1)),
            Some(Value::Int(2)),
            Some(Value::Int(2)),
            Some(Value::Int(3))
        ]
    );
    assert_eq!(seen.len(), 6);
}

#[test]
fn a_tick_in_error_reports_nothing_and_a_panicking_callback_is_caught() {
    let mut r = Runner::load(tree("[:inc! {:key :name}]"), db("{:name \"x\"}"));
    let calls = Arc::new(Mutex::new(0));
    let count = Arc::clone(&calls);
    r.on_root(|_, _| panic!("boom"));
    r.on_root(move |_, _| *count.lock().unwrap() += 1);
    r.record_run();
    r.play(PlayMode::StopByExecuteLoopCount, 1).unwrap();
    let tick = r.update().unwrap().unwrap();
    assert_eq!(tick.status, Status::Error);
    assert_eq!(shown(r.root_events()), ["execute"]);
    // The panic did not stop the next callback, and is kept.
    assert_eq!(*calls.lock().unwrap(), 1);
    assert_eq!(r.callback_panics(), ["root callback panicked: boom"]);
    let record = r.run_record().unwrap();
    let kinds: Vec<String> = record
        .tick(0)
        .unwrap()
        .events()
        .iter()
        .map(Event::kind)
        .collect();
    assert_eq!(kinds, ["root/panic", "root/execute", "error"]);
}

#[test]
fn the_run_record_shows_the_root_events_and_the_trims_of_each_tick() {
    let mut r = Runner::load(tree(PATROL), Value::map());
    r.record_run();
    r.trim(Box::new(
        aido::trim::DataTask::from_value(&db(
            "{:task :louder :target :patrol :not-before 1 :insert [:inc! {:key :shouts}] :at 0}",
        ))
        .unwrap(),
    ));
    r.play(PlayMode::StopByExecuteLoopCount, 3).unwrap();
    while r.update().unwrap().is_some() {}
    let record = r.run_record().unwrap();
    let events: Vec<Vec<String>> = record
        .ticks()
        .map(|t| {
            t.events()
                .iter()
                .map(|e| match e {
                    Event::Note { kind, data } => format!("{kind} {data}"),
                    Event::Trim(report) => format!("trim {}", get(report, "outcome").unwrap()),
                    other => other.kind(),
                })
                .collect()
        })
        .collect();
    assert_eq!(
        events,
        [
            vec![
                // Not before 1 tick has run.
                "trim :deferred".to_owned(),
                ":root/execute nil".to_owned(),
                ":root/notify {:executing [:walk]}".to_owned()
            ],
            vec![
                // The insert waits while the sequence runs (seed 002).
                "trim :deferred".to_owned(),
                ":root/execute nil".to_owned(),
                ":root/report :success".to_owned()
            ],
            vec![
                "trim :applied".to_owned(),
                ":root/execute nil".to_owned(),
                ":root/notify {:executing [:walk]}".to_owned()
            ],
        ]
    );
    assert_eq!(record.trees.len(), 2, "the trimmed tree is recorded too");
}

#[test]
fn load_again_loads_only_a_destroyed_tree() {
    let mut r = Runner::load(tree("[:t/hooked]"), Value::map());
    assert_eq!(get(r.db(), "events"), Some(db("[:construct]")));
    // A live runner (reset, playing, stopped) refuses and changes nothing.
    assert_eq!(r.load_again(), Err(RunnerError::Loaded));
    r.play(PlayMode::StopByExecuteLoopCount, 5).unwrap();
    r.update().unwrap();
    assert_eq!(r.load_again(), Err(RunnerError::Loaded));
    assert_eq!(r.status(), TreeStatus::Executing);
    assert_eq!(r.accumulated(), 1);
    r.stop().unwrap();
    assert_eq!(r.load_again(), Err(RunnerError::Loaded));
    assert_eq!(get(r.db(), "events"), Some(db("[:construct :stop]")));
    // A destroyed one is loaded again: its construct hooks run once more.
    r.destroy().unwrap();
    r.load_again().unwrap();
    assert_eq!(r.status(), TreeStatus::Reset);
    assert_eq!(
        get(r.db(), "events"),
        Some(db("[:construct :stop :destruct :construct]"))
    );
}

#[test]
fn a_forest_applies_each_operation_to_every_tree() {
    let shared = tree(
        "[:sequence [:t/hooked] [:inc! {:key :n}] [:selector [:present? {:key :quick}] [:wait {:id :w :ticks 1}]]]",
    );
    let mut forest = Forest::of_agents(&shared, vec![Value::map(); 3]);
    assert_eq!(forest.len(), 3);
    assert!(
        forest
            .runners()
            .iter()
            .all(|r| r.status() == TreeStatus::Reset)
    );
    assert_eq!(forest.play(PlayMode::StopByReportLoopCount, 2), 3);
    // Each runner counts its own loops: one agent's db makes it report at once.
    forest.runners_mut()[2]
        .db_mut()
        .as_map_mut()
        .unwrap()
        .insert(Value::keyword("quick"), Value::Bool(true));
    let ticks = forest.update();
    let statuses: Vec<(usize, Status)> = ticks.iter().map(|(i, t)| (*i, t.status)).collect();
    assert_eq!(
        statuses,
        [
            (0, Status::Running),
            (1, Status::Running),
            (2, Status::Success)
        ]
    );
    let counts: Vec<u64> = forest.runners().iter().map(Runner::accumulated).collect();
    assert_eq!(counts, [0, 0, 1]);
    // Pause all: nothing ticks until resumed; hooks run in every tree.
    assert_eq!(forest.pause(), 3);
    assert!(forest.update().is_empty());
    assert_eq!(forest.resume(), 3);
    assert_eq!(forest.update().len(), 3);
    // Destroy one; the group operations leave it out, and load brings back
    // only it.
    forest.runners_mut()[1].destroy().unwrap();
    assert_eq!(forest.stop(), 2);
    assert_eq!(forest.play(PlayMode::StopByExecuteLoopCount, 1), 2);
    assert_eq!(forest.update().len(), 2);
    assert_eq!(forest.load(), 1);
    assert_eq!(forest.runners()[1].status(), TreeStatus::Reset);
    let events: Vec<Option<Value>> = forest
        .runners()
        .iter()
        .map(|r| get(r.db(), "events"))
        .collect();
    assert_eq!(
        events,
        [
            Some(db("[:construct :pause :stop :stop]")),
            Some(db("[:construct :pause :destruct :construct]")),
            // The third reported twice in its first two loops: its target.
            Some(db("[:construct :pause :stop :stop :stop]")),
        ]
    );
    // Reset and destroy hand back each tree's halts and cancels.
    let reset = forest.reset();
    assert_eq!(reset.len(), 3);
    let destroyed = forest.destroy();
    assert_eq!(
        destroyed.iter().map(|(i, _)| *i).collect::<Vec<_>>(),
        [0, 1, 2]
    );
    assert_eq!(forest.play(PlayMode::StopByExecuteLoopCount, 1), 0);
    assert!(forest.destroy().is_empty());
}

#[test]
fn a_forest_updates_many_agents_as_tick_all_ticks_them() {
    let shared = tree(
        "[:selector [:present? {:key :done}] [:sequence [:inc! {:key :n}] [:wait {:ticks 2}]]]",
    );
    let agents: Vec<Value> = (0..300)
        .map(|i| match i % 3 {
            0 => db(&format!("{{:id {i}, :done true}}")),
            _ => db(&format!("{{:id {i}}}")),
        })
        .collect();
    let mut by_hand = agents.clone();
    let mut forest = Forest::of_agents(&shared, agents);
    forest.play(PlayMode::StopByExecuteLoopCount, 4);
    for _ in 0..4 {
        let ticks = forest.update();
        assert_eq!(ticks.len(), 300);
        for (i, tick) in ticks {
            let t = aido::run_tick(std::mem::take(&mut by_hand[i]), &shared);
            assert_eq!(tick.status, t.status, "agent {i}");
            by_hand[i] = t.db;
        }
    }
    for (runner, db) in forest.runners().iter().zip(&by_hand) {
        assert_eq!(runner.db(), db);
    }
    assert!(forest.update().is_empty());
}

#[test]
fn a_runner_reload_reports_the_cancel_of_a_removed_deferred_action() {
    let old =
        tree("[:sequence {:id :answer} [:defer {:id :ask :action :llm/ask}] [:inc! {:key :n}]]");
    let new = tree("[:sequence {:id :answer} [:inc! {:key :n}]]");
    let mut r = Runner::load(old, Value::map());
    r.record_run();
    r.play(PlayMode::StopByExecuteLoopCount, 2).unwrap();
    let launched = r.update().unwrap().unwrap().launches()[0].clone();
    let report = r.reload(new);
    assert_eq!(report.cancels, std::slice::from_ref(&launched));
    assert_eq!(
        get(&report.to_value(), "cancel"),
        Some(Value::Vector(aido::value::thin_vec![launched.to_value()]))
    );
    r.update().unwrap();
    let record = r.run_record().unwrap();
    let reload = record
        .tick(1)
        .unwrap()
        .events()
        .iter()
        .find_map(|e| match e {
            Event::Reload(v) => Some(v.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(get(&reload, "halted"), Some(db("[:ask]")));
    assert_eq!(
        get(&reload, "cancel"),
        Some(Value::Vector(aido::value::thin_vec![launched.to_value()]))
    );
}

#[test]
fn a_runner_without_listeners_works_out_no_root_events() {
    let mut r = Runner::load(tree(PATROL), Value::map());
    r.play(PlayMode::StopByExecuteLoopCount, 2).unwrap();
    r.update().unwrap();
    assert!(r.root_events().is_empty());
    // A callback added later hears the next tick.
    r.on_root(|_, _| {});
    r.update().unwrap();
    assert_eq!(shown(r.root_events()), ["execute", "report :success"]);
}
