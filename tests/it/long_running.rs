//! Long-running behaviours: Running across ticks, halting, reactive and
//! memory composites, Skipped and preconditions, parallel policies,
//! deferred actions, and the tree lifecycle.
#![allow(clippy::panic, clippy::expect_used, clippy::unwrap_used)]

use std::sync::Arc;

use aido::{
    Registry, Status, Tick, Tree, Value, compile_str,
    extend::{Lifecycle, NodeType},
    read_value,
    runner::{PlayMode, Runner, TreeStatus},
    tick::{TickOptions, TraceEvent, run_tick_with_options},
};

/// Test node types:
/// - `[:t/cond {:name :a}]`: Success if the db's `:a` is true, else Failure;
/// - `[:t/async {:name :x}]`: Running until the db's `:x` is `:done` (then
///   Success) or `:fail` (then Failure); its halt hook appends its name to
///   `:halted`; lifecycle hooks append `[event name]` to `:events`.
fn registry() -> Registry {
    let mut r = Registry::new();
    let mut cond = NodeType::new("t/cond");
    let name = cond.key_slot("name");
    r.node_type(cond.tick(move |ctx| {
        Ok(Status::from_bool(
            ctx.db_at(name) == Some(&Value::Bool(true)),
        ))
    }))
    .unwrap();
    let mut async_node = NodeType::new("t/async");
    let name = async_node.slot::<aido::value::Keyword>("name");
    r.node_type(
        async_node
            .tick(move |ctx| {
                let name = Value::Keyword(ctx.get(name)?);
                Ok(
                    match ctx
                        .db()
                        .get(&name)
                        .and_then(Value::as_keyword)
                        .map(|k| k.as_str())
                    {
                        Some("done") => Status::Success,
                        Some("fail") => Status::Failure,
                        _ => Status::Running,
                    },
                )
            })
            .on_halt(move |ctx| {
                let name = ctx.get(name).map(Value::Keyword).unwrap_or_default();
                push(ctx.db_mut(), "halted", name);
            })
            .on_lifecycle(move |ctx, event| {
                let name = ctx.get(name).map(Value::Keyword).unwrap_or_default();
                let event = Value::keyword(&format!("{event:?}").to_lowercase());
                push(
                    ctx.db_mut(),
                    "events",
                    Value::Vector(aido::value::thin_vec![event, name]),
                );
            }),
    )
    .unwrap();
    r.node_type(
        NodeType::new("t/switch")
            .children(aido::extend::Arity::AtLeast(1))
            .tick(|ctx| {
                let which = ctx
                    .db()
                    .get(&Value::keyword("which"))
                    .and_then(Value::as_int)
                    .unwrap_or(0);
                Ok(ctx.tick_child(which as usize))
            }),
    )
    .unwrap();
    r
}

fn push(db: &mut aido::value::Map, key: &str, value: Value) {
    let slot = db
        .entry(Value::keyword(key))
        .or_insert(Value::Vector(aido::value::thin_vec![]));
    if let Value::Vector(v) = slot {
        v.push(value);
    }
}

fn tree(src: &str) -> Tree {
    compile_str("t.edn", src, &registry()).unwrap_or_else(|d| panic!("{}", d.render()))
}

fn traced(db: Value, tree: &Tree) -> Tick {
    run_tick_with_options(
        db,
        tree,
        &TickOptions {
            trace: true,
            ..TickOptions::default()
        },
    )
}

/// The trace as text: `id:status` for a tick, `halt id` for a halt.
fn trace_text(tree: &Tree, tick: &Tick) -> Vec<String> {
    trace_events(tree, tick.trace())
}

fn trace_events(tree: &Tree, trace: &[TraceEvent]) -> Vec<String> {
    trace
        .iter()
        .map(|e| match *e {
            TraceEvent::Ticked { node, status } => format!("{}:{status}", id(tree, node)),
            TraceEvent::Halted { node } => format!("halt {}", id(tree, node)),
            _ => "?".to_owned(),
        })
        .collect()
}

fn id(tree: &Tree, node: aido::tree::NodeIndex) -> String {
    match tree.node_id(node).unwrap() {
        Value::Keyword(k) => k.as_str().to_owned(),
        other => other.to_string(),
    }
}

fn db(text: &str) -> Value {
    read_value(text).unwrap()
}

fn set(db: &mut Value, key: &str, value: Value) {
    db.assoc_in(&[Value::keyword(key)], value).unwrap();
}

fn get(db: &Value, key: &str) -> Option<Value> {
    db.get(&Value::keyword(key)).cloned()
}

const SEQ3: &str =
    "[:sequence {:id :seq} [:t/cond {:id :cond-a :name :a}] [:t/cond {:id :cond-b :name :b}] X]";

#[test]
fn seed_scenario_5_1_all_children_succeed() {
    let t = tree(&SEQ3.replace('X', "[:success {:id :sync-act}]"));
    let tick = traced(db("{:a true :b true}"), &t);
    assert_eq!(tick.status, Status::Success);
    assert_eq!(
        trace_text(&t, &tick),
        [
            "cond-a:success",
            "cond-b:success",
            "sync-act:success",
            "seq:success"
        ]
    );
}

#[test]
fn seed_scenario_5_2_an_asynchronous_action_runs() {
    let t = tree(&SEQ3.replace('X', "[:t/async {:id :async-act :name :act}]"));
    let tick = traced(db("{:a true :b true}"), &t);
    assert_eq!(tick.status, Status::Running);
    assert_eq!(
        trace_text(&t, &tick),
        [
            "cond-a:success",
            "cond-b:success",
            "async-act:running",
            "seq:running"
        ]
    );
    // The running set is stored in tree order.
    assert_eq!(get(&tick.db, "aido/running"), Some(db("[:seq :async-act]")));
}

#[test]
fn seed_scenario_5_3_a_failing_condition_halts_the_running_action() {
    let t = tree(&SEQ3.replace('X', "[:t/async {:id :async-act :name :act}]"));
    let first = traced(db("{:a true :b true}"), &t);
    assert_eq!(first.status, Status::Running);
    let mut next = first.db;
    set(&mut next, "a", Value::Bool(false));
    let tick = traced(next, &t);
    assert_eq!(tick.status, Status::Failure);
    // CondB is idle and is not halted; the running AsyncAct is, before the sequence reports.
    assert_eq!(
        trace_text(&t, &tick),
        ["cond-a:failure", "halt async-act", "seq:failure"]
    );
    assert_eq!(get(&tick.db, "halted"), Some(db("[:act]")));
    assert_eq!(get(&tick.db, "aido/running"), None);
}

#[test]
fn seed_scenario_5_4_the_running_child_changes() {
    let t = tree(
        "[:sequence {:id :seq} [:t/cond {:id :cond-a :name :a}]
           [:t/async {:id :async-1 :name :one}] [:t/async {:id :async-2 :name :two}]]",
    );
    let n = traced(db("{:a true}"), &t);
    assert_eq!(n.status, Status::Running);
    assert_eq!(
        trace_text(&t, &n),
        ["cond-a:success", "async-1:running", "seq:running"]
    );
    let mut next = n.db;
    set(&mut next, "one", Value::keyword("done"));
    let n1 = traced(next, &t);
    assert_eq!(n1.status, Status::Running);
    assert_eq!(
        trace_text(&t, &n1),
        [
            "cond-a:success",
            "async-1:success",
            "async-2:running",
            "seq:running"
        ]
    );
    assert_eq!(get(&n1.db, "halted"), None);
    assert_eq!(get(&n1.db, "aido/running"), Some(db("[:seq :async-2]")));
}

#[test]
fn a_higher_priority_branch_taking_over_halts_the_running_one() {
    let t = tree(
        "[:selector {:id :root}
           [:sequence {:id :flee} [:t/cond {:id :enemy? :name :enemy}] [:t/async {:id :run-away :name :run}]]
           [:t/async {:id :walk :name :walk}]]",
    );
    let walking = traced(db("{}"), &t);
    assert_eq!(
        trace_text(&t, &walking),
        [
            "enemy?:failure",
            "flee:failure",
            "walk:running",
            "root:running"
        ]
    );
    let mut next = walking.db;
    set(&mut next, "enemy", Value::Bool(true));
    let fleeing = traced(next, &t);
    assert_eq!(fleeing.status, Status::Running);
    assert_eq!(
        trace_text(&t, &fleeing),
        [
            "enemy?:success",
            "run-away:running",
            "flee:running",
            "halt walk",
            "root:running"
        ]
    );
    assert_eq!(get(&fleeing.db, "halted"), Some(db("[:walk]")));
}

#[test]
fn a_node_not_reached_is_halted_at_the_end_of_the_tick_with_its_subtree() {
    // :t/switch ticks the child that `:which` names; switching it moves to
    // the other child: nothing reactive halts the first, the end-of-tick
    // sweep does, deepest first, and clears the subtree's run state (the
    // choose-each's pool is persistent state and stays).
    let t = tree(
        "[:t/switch {:id :pick}
           [:sequence {:id :left} [:choose-each {:id :ce} [:t/async {:id :deep :name :deep}]]]
           [:t/async {:id :right :name :right}]]",
    );
    let mut d = db("{:which 0 :aido/seed 1}");
    let tick = traced(d, &t);
    assert_eq!(tick.status, Status::Running);
    assert!(
        get(&tick.db, "aido/memory").is_some(),
        "the choose-each pool is in memory"
    );
    d = tick.db;
    set(&mut d, "which", Value::Int(1));
    let tick = traced(d, &t);
    assert_eq!(
        trace_text(&t, &tick),
        [
            "right:running",
            "pick:running",
            "halt deep",
            "halt ce",
            "halt left"
        ]
    );
    assert_eq!(get(&tick.db, "halted"), Some(db("[:deep]")));
    assert_eq!(
        get(&tick.db, "aido/memory"),
        Some(db("{:ce {:pool []}}")),
        "the halted subtree's run state is cleared, the pool kept"
    );
    assert_eq!(get(&tick.db, "aido/running"), Some(db("[:pick :right]")));
}

#[test]
fn memory_sequences_resume_where_reactive_ones_restart() {
    let src = |memory: &str| {
        format!(
            "[:sequence {{:id :seq {memory}}} [:inc! {{:id :count :key :n}}]
               [:t/async {{:id :one :name :one}}] [:t/async {{:id :two :name :two}}]]"
        )
    };
    for (memory, counts) in [("", [1, 2, 3]), (":memory true", [1, 1, 1])] {
        // Reactive: :inc! is ticked every tick; with memory only at the start.
        // In both, :one, once finished, is not started over while :two runs.
        let t = tree(&src(memory));
        let mut d = db("{}");
        let mut seen = vec![];
        for i in 0..3 {
            if i == 1 {
                set(&mut d, "one", Value::keyword("done"));
            }
            let tick = traced(d, &t);
            assert_eq!(tick.status, Status::Running);
            seen.push(get(&tick.db, "n").and_then(|v| v.as_int()).unwrap());
            d = tick.db;
        }
        assert_eq!(seen, counts, "memory: {memory:?}");
        if memory.is_empty() {
            assert_eq!(
                d.get_in(&[Value::keyword("aido/memory"), Value::keyword("seq")]),
                Some(&db("{:done [nil :success nil]}"))
            );
        } else {
            assert_eq!(
                d.get_in(&[Value::keyword("aido/memory"), Value::keyword("seq")]),
                Some(&db("{:index 2}"))
            );
        }
    }
    // A failure resets the memory sequence's index.
    let t = tree(&src(":memory true"));
    let mut d = db("{:one :done}");
    d = traced(d, &t).db;
    set(&mut d, "two", Value::keyword("fail"));
    let tick = traced(d, &t);
    assert_eq!(tick.status, Status::Failure);
    assert_eq!(get(&tick.db, "aido/memory"), None);
    assert_eq!(get(&tick.db, "n"), Some(Value::Int(1)));
}

#[test]
fn memory_selectors_resume_and_a_success_resets() {
    let t = tree(
        "[:selector {:id :sel :memory true} [:t/cond {:name :a}] [:t/async {:id :job :name :job}] [:success]]",
    );
    let first = traced(db("{}"), &t);
    assert_eq!(first.status, Status::Running);
    // The condition now holds, but a memory selector does not look back.
    let mut d = first.db;
    set(&mut d, "a", Value::Bool(true));
    set(&mut d, "job", Value::keyword("done"));
    let tick = traced(d, &t);
    assert_eq!(tick.status, Status::Success);
    assert_eq!(trace_text(&t, &tick), ["job:success", "sel:success"]);
    assert_eq!(get(&tick.db, "aido/memory"), None);
}

#[test]
fn a_precondition_that_fires_halts_a_running_node() {
    let t = tree("[:t/async {:id :job :name :job :aido/skip-if [:aido/db :cancelled]}]");
    let first = traced(db("{}"), &t);
    assert_eq!(first.status, Status::Running);
    let mut d = first.db;
    set(&mut d, "cancelled", Value::Bool(true));
    let tick = traced(d, &t);
    assert_eq!(tick.status, Status::Skipped);
    assert_eq!(trace_text(&t, &tick), ["halt job", "job:skipped"]);
    assert_eq!(get(&tick.db, "halted"), Some(db("[:job]")));
}

#[test]
fn parallel_sequence_policy_keeps_finished_children_and_halts_the_rest_on_failure() {
    let t = tree(
        "[:parallel {:id :par :policy :sequence}
           [:t/async {:id :a :name :a}] [:t/async {:id :b :name :b}] [:t/async {:id :c :name :c}]]",
    );
    let mut d = db("{}");
    let tick = traced(d, &t);
    assert_eq!(tick.status, Status::Running);
    d = tick.db;
    // :a succeeds; it keeps its status and is not ticked again.
    set(&mut d, "a", Value::keyword("done"));
    let tick = traced(d, &t);
    assert_eq!(
        trace_text(&t, &tick),
        ["a:success", "b:running", "c:running", "par:running"]
    );
    d = tick.db;
    assert_eq!(
        d.get_in(&[Value::keyword("aido/memory"), Value::keyword("par")]),
        Some(&db("{:done [:success nil nil]}"))
    );
    set(&mut d, "a", Value::keyword("fail")); // would fail now, but :a is finished
    set(&mut d, "b", Value::keyword("fail"));
    let tick = traced(d, &t);
    assert_eq!(tick.status, Status::Failure);
    // Every child not finished is ticked; the decided parallel then halts
    // the child still running before it reports.
    assert_eq!(
        trace_text(&t, &tick),
        ["b:failure", "c:running", "halt c", "par:failure"]
    );
    assert_eq!(get(&tick.db, "halted"), Some(db("[:c]")));
    assert_eq!(get(&tick.db, "aido/memory"), None);
    // The next tick starts a fresh round: :a is ticked again.
    let tick = traced(tick.db, &t);
    assert_eq!(trace_text(&t, &tick)[0], "a:failure");
}

#[test]
fn parallel_selector_policy_succeeds_at_the_first_success() {
    let t = tree(
        "[:parallel {:id :par :policy :selector} [:t/async {:id :a :name :a}] [:t/async {:id :b :name :b}]]",
    );
    let mut d = traced(db("{}"), &t).db;
    set(&mut d, "a", Value::keyword("fail"));
    let tick = traced(d, &t);
    assert_eq!(tick.status, Status::Running, "one failure is not enough");
    let mut d = tick.db;
    set(&mut d, "b", Value::keyword("fail"));
    assert_eq!(traced(d.clone(), &t).status, Status::Failure);
    set(&mut d, "b", Value::keyword("done"));
    assert_eq!(traced(d, &t).status, Status::Success);
}

#[test]
fn parallel_thresholds() {
    let t = tree(
        "[:parallel {:id :par :success-threshold 2 :failure-threshold 2}
           [:t/async {:id :a :name :a}] [:t/async {:id :b :name :b}] [:t/async {:id :c :name :c}]]",
    );
    let d = db("{:a :done :b :fail}");
    let tick = traced(d, &t);
    assert_eq!(tick.status, Status::Running);
    let mut d = tick.db;
    set(&mut d, "c", Value::keyword("done"));
    assert_eq!(traced(d, &t).status, Status::Success);
    let mut d = traced(db("{}"), &t).db;
    set(&mut d, "a", Value::keyword("fail"));
    set(&mut d, "b", Value::keyword("fail"));
    let tick = traced(d, &t);
    assert_eq!(tick.status, Status::Failure);
    // The failure threshold is reached at :b; :c is still ticked, then halted.
    assert_eq!(
        trace_text(&t, &tick),
        [
            "a:failure",
            "b:failure",
            "c:running",
            "halt c",
            "par:failure"
        ]
    );
}

#[test]
fn aidos_parallel_is_unchanged() {
    let t =
        tree("[:parallel {:mode :success :how-many 1} [:t/async {:id :a :name :a}] [:failure]]");
    let tick = traced(db("{}"), &t);
    // Running counts as succeeded; the parallel reports and keeps no memory.
    assert_eq!(tick.status, Status::Success);
    assert_eq!(get(&tick.db, "aido/memory"), None);
}

#[test]
fn a_launch_request_lists_the_options_in_source_order() {
    let t = tree("[:defer {:action :x/go :a 1 :into :r :b 2 :c 3 :d 4}]");
    let tick = traced(db("{}"), &t);
    let options = Value::Map(Box::new(tick.launches()[0].options.clone()));
    assert_eq!(options.to_string(), "{:a 1, :b 2, :c 3, :d 4}");
}

#[test]
fn deferred_actions_launch_complete_and_cancel() {
    let t = tree(
        "[:selector
           [:t/cond {:name :interrupted}]
           [:defer {:id :ask :action :llm/ask :prompt [:aido/db :input] :into :answer}]]",
    );
    let first = traced(db("{:input \"hello?\"}"), &t);
    assert_eq!(first.status, Status::Running);
    assert_eq!(first.launches().len(), 1);
    assert_eq!(
        first.launches()[0].to_value(),
        db("{:node :ask, :request 1, :action :llm/ask, :options {:prompt \"hello?\"}}")
    );
    // Still pending: Running, no second launch.
    let second = traced(first.db, &t);
    assert_eq!(
        (second.status, second.launches().len()),
        (Status::Running, 0)
    );
    // The outside system reports completion in the db.
    let mut d = second.db;
    set(
        &mut d,
        "aido/results",
        db("{:ask {:request 1, :status :success, :result \"hi!\"}}"),
    );
    let done = traced(d, &t);
    assert_eq!(done.status, Status::Success);
    assert_eq!(get(&done.db, "answer"), Some(Value::string("hi!")));
    assert_eq!(get(&done.db, "aido/results"), None);
    assert_eq!(get(&done.db, "aido/memory"), None);
    // Launched again, then halted before completion: a cancel request.
    let again = traced(done.db, &t);
    assert_eq!(again.launches().len(), 1);
    let mut d = again.db;
    set(&mut d, "interrupted", Value::Bool(true));
    let cancelled = traced(d, &t);
    assert_eq!(cancelled.status, Status::Success);
    assert_eq!(cancelled.cancels().len(), 1);
    assert_eq!(
        cancelled.cancels()[0].to_value(),
        db("{:node :ask, :request 2, :action :llm/ask, :options {:prompt \"hello?\"}}")
    );
    // A bad completion is an Error, not a guess.
    let mut d = traced(db("{}"), &t).db;
    set(
        &mut d,
        "aido/results",
        db("{:ask {:request 1, :status :maybe}}"),
    );
    assert_eq!(traced(d, &t).status, Status::Error);
}

#[test]
fn running_state_survives_a_save_and_a_load() {
    let src = "[:sequence [:t/cond {:name :go}] [:wait {:id :w :ticks 3}] [:inc! {:key :arrived}]]";
    let t = tree(src);
    let mut d = db("{:go true}");
    for _ in 0..2 {
        d = traced(d, &t).db;
    }
    // Another process: the db as text, a freshly compiled tree.
    let saved = d.to_string();
    let t2 = tree(src);
    let mut d2 = db(&saved);
    let tick = traced(d2.clone(), &t2);
    assert_eq!(tick.status, Status::Running);
    d2 = tick.db;
    let tick = traced(d2, &t2);
    assert_eq!(tick.status, Status::Success);
    assert_eq!(get(&tick.db, "arrived"), Some(Value::Int(1)));
    // Halting also works across the save: stop going, the wait is halted.
    let mut d = db(&saved);
    set(&mut d, "go", Value::Bool(false));
    let tick = traced(d, &t2);
    assert_eq!(
        trace_text(&t2, &tick)
            .iter()
            .filter(|e| e.starts_with("halt"))
            .count(),
        1
    );
    assert_eq!(get(&tick.db, "aido/memory"), None);
}

/// A running `:wait` under a general flow is counted where the position
/// hints of `:aido/memory` and of its own entry say when they hit, and by
/// the full look-up when a host moved `:aido/memory` between ticks or the
/// wait's id is derived (a string): each way, the same statuses and the
/// same `{:ticks k}` in the db after every tick.
#[test]
fn a_running_wait_counts_the_same_wherever_its_memory_is() {
    for (wait, id) in [
        ("[:wait {:id :w :ticks 4}]", Value::keyword("w")),
        ("[:wait {:ticks 4}]", db("\"0.1\"")),
    ] {
        let t = tree(&format!(
            "[:sequence [:success] {wait} [:inc! {{:key :arrived}}]]"
        ));
        for moved in [false, true] {
            let mut d = db("{:a 1}");
            for k in 1..=5 {
                if moved
                    && let Value::Map(m) = &mut d
                    && let Some(memory) = m.shift_remove(&Value::keyword("aido/memory"))
                {
                    m.insert(Value::keyword(&format!("k{k}")), Value::Int(k));
                    m.insert(Value::keyword("aido/memory"), memory);
                }
                let tick = traced(d, &t);
                d = tick.db;
                let memory = get(&d, "aido/memory");
                if k < 5 {
                    assert_eq!(tick.status, Status::Running, "{wait}, tick {k}");
                    let expect = db(&format!("{{{id} {{:ticks {k}}}}}"));
                    assert_eq!(memory, Some(expect), "{wait}, tick {k}");
                } else {
                    assert_eq!(tick.status, Status::Success, "{wait}, tick {k}");
                    assert_eq!(memory, None, "{wait}, tick {k}");
                    assert_eq!(get(&d, "arrived"), Some(Value::Int(1)));
                }
            }
        }
    }
}

#[test]
fn a_db_from_another_tree_is_an_error() {
    let tick = traced(db("{:aido/running [\"0.7\"]}"), &tree("[:success]"));
    assert_eq!(tick.status, Status::Error);
    assert!(
        tick.error
            .unwrap()
            .message
            .contains("which this tree does not have")
    );
}

fn runner(src: &str, start: &str) -> Runner {
    Runner::load(Arc::new(tree(src)), db(start))
}

const LIFE: &str = "[:sequence [:t/cond {:name :go}] [:t/async {:id :job :name :job}]]";

#[test]
fn runner_lifecycle_statuses_and_hooks() {
    let mut r = runner(LIFE, "{:go true}");
    assert_eq!(r.status(), TreeStatus::Reset);
    assert_eq!(get(r.db(), "events"), Some(db("[[:construct :job]]")));
    assert!(
        r.update().unwrap().is_none(),
        "a reset tree does not run until played"
    );
    r.play(PlayMode::StopByExecuteLoopCount, 10).unwrap();
    assert_eq!(r.status(), TreeStatus::Played);
    assert_eq!(r.update().unwrap().map(|t| t.status), Some(Status::Running));
    assert_eq!(r.status(), TreeStatus::Executing);
    // Pausing keeps the running node (no halt hook runs); only the pause hooks run.
    r.pause().unwrap();
    assert_eq!(r.status(), TreeStatus::Paused);
    assert_eq!(get(r.db(), "halted"), None);
    assert_eq!(get(r.db(), "aido/running"), Some(db("[\"0\" :job]")));
    assert_eq!(
        get(r.db(), "events"),
        Some(db("[[:construct :job] [:pause :job]]"))
    );
    assert!(r.update().unwrap().is_none(), "paused");
    r.resume().unwrap();
    assert_eq!(r.status(), TreeStatus::Resumed);
    // Resume goes on from the running node: it is ticked, never halted.
    let tick = r.update().unwrap().unwrap();
    assert_eq!(tick.status, Status::Running);
    assert!(
        !tick
            .trace()
            .iter()
            .any(|e| matches!(e, TraceEvent::Halted { .. }))
    );
    assert_eq!(r.accumulated(), 2, "resume goes on with the loop count");
    r.stop().unwrap();
    assert_eq!(r.status(), TreeStatus::Stopped);
    assert_eq!(get(r.db(), "halted"), None, "stopping halts nothing");
    assert_eq!(get(r.db(), "aido/running"), Some(db("[\"0\" :job]")));
    // Reset halts what runs and clears the state.
    let tick = r.reset().unwrap();
    assert_eq!((r.status(), r.accumulated()), (TreeStatus::Reset, 0));
    assert_eq!(trace_text(r.tree(), &tick), ["halt job", "halt \"0\""]);
    assert_eq!(get(r.db(), "halted"), Some(db("[:job]")));
    assert_eq!(get(r.db(), "aido/running"), None);
    r.destroy().unwrap();
    assert_eq!(r.status(), TreeStatus::Destructed);
    assert_eq!(
        get(r.db(), "events"),
        Some(db(
            "[[:construct :job] [:pause :job] [:stop :job] [:reset :job] [:destruct :job]]"
        ))
    );
    assert!(r.play(PlayMode::StopByExecuteLoopCount, 1).is_err());
    r.load_again().unwrap();
    assert_eq!(r.status(), TreeStatus::Reset);
}

/// Plays `mode` with target 2 through a scripted world and returns the
/// number of updates until the runner stopped.
fn loops_until_stopped(
    mode: PlayMode,
    script: &[(&str, Value)],
    interrupt_after: Option<usize>,
) -> usize {
    let mut r = runner(LIFE, "{:go true}");
    r.play(mode, 2).unwrap();
    for (i, (key, value)) in script.iter().enumerate() {
        set(r.db_mut(), key, value.clone());
        r.update().unwrap();
        if interrupt_after == Some(i) {
            r.pause().unwrap();
            r.resume().unwrap();
        }
        if r.status() == TreeStatus::Stopped {
            return i + 1;
        }
    }
    usize::MAX
}

#[test]
fn every_play_mode_counts_its_own_loops() {
    let k = Value::keyword;
    // Each step sets a key, then ticks: :job :done succeeds, :fail fails,
    // anything else runs; :go false fails at once.
    let script = [
        ("job", k("working")), // running
        ("job", k("done")),    // success
        ("job", k("working")), // running
        ("job", k("fail")),    // failure
        ("job", k("done")),    // success
        ("job", k("fail")),    // failure
        ("job", k("working")), // running
    ];
    assert_eq!(
        loops_until_stopped(PlayMode::StopByExecuteLoopCount, &script, None),
        2
    );
    assert_eq!(
        loops_until_stopped(PlayMode::StopByReportLoopCount, &script, None),
        4
    );
    assert_eq!(
        loops_until_stopped(PlayMode::StopByReportSuccessLoopCount, &script, None),
        5
    );
    assert_eq!(
        loops_until_stopped(PlayMode::StopByReportFailureLoopCount, &script, None),
        6
    );
    assert_eq!(
        loops_until_stopped(PlayMode::StopByNotifyExecutingLoopCount, &script, None),
        3
    );
    // A pause between ticks interrupts nothing (the tree notified executing
    // and is not executing), so it is no notify: the running ticks alone
    // count, with or without the pause.
    assert_eq!(
        loops_until_stopped(PlayMode::StopByNotifyLoopCount, &script, Some(0)),
        3
    );
    assert_eq!(
        loops_until_stopped(PlayMode::StopByNotifyLoopCount, &script, None),
        3
    );
    // Interrupts alone: none between ticks, so the tree plays on.
    let mut r = runner(LIFE, "{:go true}");
    r.play(PlayMode::StopByNotifyInterruptLoopCount, 2).unwrap();
    r.update().unwrap();
    r.pause().unwrap();
    assert_eq!(r.accumulated(), 0);
    r.resume().unwrap();
    r.update().unwrap();
    r.stop().unwrap();
    assert_eq!(r.accumulated(), 0);
    // Reaching the target stops the tree and keeps what still runs; playing
    // again goes on from it.
    let mut r = runner(LIFE, "{:go true}");
    r.play(PlayMode::StopByExecuteLoopCount, 1).unwrap();
    r.update().unwrap();
    assert_eq!(r.status(), TreeStatus::Stopped);
    assert_eq!(get(r.db(), "halted"), None);
    assert_eq!(get(r.db(), "aido/running"), Some(db("[\"0\" :job]")));
    r.play(PlayMode::StopByExecuteLoopCount, 1).unwrap();
    set(r.db_mut(), "job", Value::keyword("done"));
    assert_eq!(r.update().unwrap().unwrap().status, Status::Success);
    assert_eq!(get(r.db(), "halted"), None);
}

#[test]
fn the_property_view_shows_each_node_to_a_depth() {
    let mut r = runner(LIFE, "{:go true}");
    r.play(PlayMode::StopByExecuteLoopCount, 5).unwrap();
    r.update().unwrap();
    let shallow = r.properties(0);
    assert_eq!(shallow.nodes.len(), 1);
    assert_eq!(
        (shallow.status, shallow.target, shallow.accumulated),
        (TreeStatus::Executing, 5, 1)
    );
    let all = r.properties(9);
    let rows: Vec<String> = all
        .nodes
        .iter()
        .map(|n| {
            format!(
                "{} {} {} {:?} {}",
                n.depth, n.node_type, n.id, n.last_status, n.running
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            "0 :sequence \"0\" Some(Running) true",
            "1 :t/cond \"0.0\" Some(Success) false",
            "1 :t/async :job Some(Running) true",
        ]
    );
    // Paused, the node is still running; reset halts it.
    r.pause().unwrap();
    let after = r.properties(9);
    assert_eq!(after.nodes[2].last_status, Some(Status::Running));
    assert!(after.nodes[2].running);
    r.reset().unwrap();
    let after = r.properties(9);
    assert_eq!(after.nodes[2].last_status, None);
    assert!(!after.nodes[2].running);
    let _ = Lifecycle::Construct;
}

#[test]
fn functions_used_by_a_halted_node_get_their_halt_hook() {
    let mut r = registry();
    r.function("t/reserve", aido::extend::Arity::Exactly(1), |_, args| {
        Ok(args[0].clone())
    })
    .unwrap();
    r.function_halt("t/reserve", |_, id| {
        RELEASED.with(|released| released.borrow_mut().push(id.to_string()));
    })
    .unwrap();
    assert!(r.function_halt("nope", |_, _| {}).is_err());
    assert!(
        r.function_halt("+", |_, _| {}).is_err(),
        "standard functions have no halt hook"
    );
    let t = compile_str(
        "t.edn",
        "[:selector [:t/cond {:name :stop}] [:t/async {:id :job :name [:aido/fn t/reserve :job]}]]",
        &r,
    )
    .unwrap();
    let mut d = traced(db("{}"), &t).db;
    set(&mut d, "stop", Value::Bool(true));
    traced(d, &t);
    RELEASED.with(|released| assert_eq!(*released.borrow(), [":job"]));
}

thread_local! {
    static RELEASED: std::cell::RefCell<Vec<String>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The tree of the runner tests below: a memory sequence of errands, the
/// second a deferred action; `:t/async` records its halts under `:halted`.
const ERRANDS: &str = "[:sequence {:id :errands :memory true}
   [:inc! {:id :left :key :left}]
   [:defer {:id :ask :action :x/ask}]
   [:t/async {:id :walk :name :walk}]]";

#[test]
fn pause_and_stop_keep_progress_and_run_only_their_hooks() {
    let mut r = runner(ERRANDS, "{}");
    r.play(PlayMode::StopByExecuteLoopCount, 10).unwrap();
    let first = r.update().unwrap().unwrap();
    assert_eq!(first.launches().len(), 1);
    // Deliver the answer, then run on to :walk.
    let request = first.launches()[0].request;
    let results = format!("{{:ask {{:request {request}, :status :success}}}}");
    set(r.db_mut(), "aido/results", db(&results));
    assert_eq!(r.update().unwrap().unwrap().status, Status::Running);
    let before = r.db().clone();
    assert_eq!(
        get(&before, "aido/memory"),
        Some(db("{:errands {:index 2}}"))
    );
    // Pause: nothing halted or cancelled, the db's progress untouched; only
    // the pause hook ran (it appends to :events).
    r.pause().unwrap();
    let mut after = r.db().clone();
    let events = after
        .as_map_mut()
        .unwrap()
        .shift_remove(&Value::keyword("events"));
    let mut before = before;
    before
        .as_map_mut()
        .unwrap()
        .shift_remove(&Value::keyword("events"));
    assert_eq!(after, before);
    assert_eq!(events, Some(db("[[:construct :walk] [:pause :walk]]")));
    assert_eq!(r.status(), TreeStatus::Paused);
    // Resume: the memory sequence goes on at :walk; :left is not run again.
    r.resume().unwrap();
    set(r.db_mut(), "walk", Value::keyword("done"));
    let tick = r.update().unwrap().unwrap();
    assert_eq!(tick.status, Status::Success);
    assert_eq!(
        trace_events(r.tree(), tick.trace()),
        ["walk:success", "errands:success"]
    );
    assert_eq!(get(r.db(), "left"), Some(Value::Int(1)));
    // A deferred action in flight survives a stop; play goes on with it.
    let mut r = runner(ERRANDS, "{}");
    r.play(PlayMode::StopByExecuteLoopCount, 10).unwrap();
    let request = r.update().unwrap().unwrap().launches()[0].request;
    r.stop().unwrap();
    assert_eq!(r.status(), TreeStatus::Stopped);
    assert!(r.update().unwrap().is_none(), "stopped");
    assert_eq!(
        get(r.db(), "aido/memory").and_then(|m| m.get(&Value::keyword("ask")).cloned()),
        Some(db(&format!("{{:launched {{}}, :request {request}}}")))
    );
    r.play(PlayMode::StopByExecuteLoopCount, 10).unwrap();
    let results = format!("{{:ask {{:request {request}, :status :success}}}}");
    set(r.db_mut(), "aido/results", db(&results));
    let tick = r.update().unwrap().unwrap();
    assert!(tick.cancels().is_empty() && tick.dropped().is_empty());
    assert_eq!(
        trace_events(r.tree(), tick.trace()),
        ["ask:success", "walk:running", "errands:running"]
    );
}

#[test]
fn reset_and_destroy_halt_cancel_and_clear() {
    for destroy in [false, true] {
        let mut r = runner(ERRANDS, "{}");
        r.play(PlayMode::StopByExecuteLoopCount, 10).unwrap();
        let launched = r.update().unwrap().unwrap().launches()[0].clone();
        let tick = if destroy {
            r.destroy().unwrap()
        } else {
            r.reset().unwrap()
        };
        assert_eq!(tick.cancels(), [launched]);
        assert_eq!(trace_text(r.tree(), &tick), ["halt ask", "halt errands"]);
        assert_eq!(get(r.db(), "aido/memory"), None);
        assert_eq!(get(r.db(), "aido/running"), None);
        // The request counter stays: ids are never handed out twice.
        assert_eq!(get(r.db(), "aido/requests"), Some(Value::Int(1)));
    }
}

#[test]
fn nothing_between_ticks_counts_as_an_interrupt() {
    // After a tick that ends Running the tree has notified executing; seed
    // 001: pausing, stopping or resetting a notified executing tree "won't
    // interrupt anything". Each operation comes right after a Running tick
    // (reset is left out: it sets the count back to 0 anyway).
    for op in ["pause", "stop", "destroy"] {
        for mode in [
            PlayMode::StopByNotifyInterruptLoopCount,
            PlayMode::StopByNotifyLoopCount,
        ] {
            let mut r = runner(LIFE, "{:go true}");
            r.play(mode, 3).unwrap();
            assert_eq!(r.update().unwrap().unwrap().status, Status::Running);
            let counted = r.accumulated();
            match op {
                "pause" => r.pause().unwrap(),
                "stop" => r.stop().unwrap(),
                _ => drop(r.destroy().unwrap()),
            }
            assert_eq!(r.accumulated(), counted, "{op} under {mode:?}");
        }
    }
    // Under the interrupt mode, then, the tree plays until it is stopped.
    let mut r = runner(LIFE, "{:go true}");
    r.play(PlayMode::StopByNotifyInterruptLoopCount, 1).unwrap();
    for _ in 0..5 {
        assert!(r.update().unwrap().is_some());
        r.pause().unwrap();
        r.resume().unwrap();
    }
    assert_eq!(r.accumulated(), 0);
    assert_eq!(r.status(), TreeStatus::Resumed);
    // A target of 0 is reached before the first loop.
    r.play(PlayMode::StopByNotifyInterruptLoopCount, 0).unwrap();
    assert!(r.update().unwrap().is_none());
    assert_eq!(r.status(), TreeStatus::Stopped);
}

#[test]
fn user_node_types_declare_persistent_memory() {
    // :t/tally counts its ticks in node memory and runs for ever.
    let tally = |name: &str, persistent: bool| {
        NodeType::new(name)
            .persistent_memory(persistent)
            .tick(|ctx| {
                let n = ctx.memory().and_then(Value::as_int).unwrap_or(0);
                ctx.set_memory(Some(Value::Int(n + 1)))?;
                Ok(Status::Running)
            })
    };
    let mut reg = registry();
    reg.node_type(tally("t/tally", false)).unwrap();
    reg.node_type(tally("t/tally-kept", true)).unwrap();
    let t = compile_str(
        "t.edn",
        "[:selector [:t/cond {:name :stop}]
           [:parallel {:policy :sequence} [:t/tally {:id :run}] [:t/tally-kept {:id :kept}]]]",
        &reg,
    )
    .unwrap();
    let mut d = db("{}");
    for _ in 0..2 {
        d = traced(d, &t).db;
    }
    assert_eq!(get(&d, "aido/memory"), Some(db("{:run 2, :kept 2}")));
    // Halted: run state is cleared, persistent state kept.
    set(&mut d, "stop", Value::Bool(true));
    d = traced(d, &t).db;
    assert_eq!(get(&d, "aido/memory"), Some(db("{:kept 2}")));
    set(&mut d, "stop", Value::Bool(false));
    d = traced(d, &t).db;
    assert_eq!(get(&d, "aido/memory"), Some(db("{:kept 3, :run 1}")));
}

/// Seed 003: a concurrent decider that fails rolls back "persistent state
/// changes" made below it in that tick; db writes by actions stay.
#[test]
fn a_failing_policy_parallel_puts_back_persistent_memory() {
    // :t/count counts its ticks in persistent memory and in the db's :n.
    let mut reg = registry();
    reg.node_type(
        NodeType::new("t/count")
            .persistent_memory(true)
            .tick(|ctx| {
                let n = ctx.memory().and_then(Value::as_int).unwrap_or(0);
                ctx.set_memory(Some(Value::Int(n + 1)))?;
                let key = Value::keyword("n");
                let seen = ctx.db().get(&key).and_then(Value::as_int).unwrap_or(0);
                ctx.db_mut().insert(key, Value::Int(seen + 1));
                Ok(Status::Success)
            }),
    )
    .unwrap();
    let t = compile_str(
        "t.edn",
        "[:parallel {:policy :sequence}
           [:parallel {:policy :selector} [:t/count {:id :c}]]
           [:t/cond {:name :go}]]",
        &reg,
    )
    .unwrap();
    let mut d = db("{}");
    let mut memory = vec![];
    for go in [false, true, false, true] {
        set(&mut d, "go", Value::Bool(go));
        let tick = traced(d, &t);
        assert_eq!(tick.status, Status::from_bool(go));
        d = tick.db;
        memory.push(get(&d, "aido/memory"));
    }
    // Counted only in the ticks that succeeded; the db's :n every tick.
    let c = |n: &str| Some(db(&format!("{{:c {n}}}")));
    assert_eq!(memory, vec![None, c("1"), c("1"), c("2")]);
    assert_eq!(get(&d, "n"), Some(Value::Int(4)));
}

#[test]
#[cfg(feature = "rayon")]
fn tick_all_hands_back_every_agents_requests_and_errors() {
    let t = tree(
        "[:selector [:t/cond {:name :stop}]
           [:sequence [:test? {:key :n :oper < :val 10}] [:defer {:id :ask :action :x/ask :n [:aido/db :n]}]]]",
    );
    let mut agents: Vec<Value> = (0..300)
        .map(|i| {
            let n = if i == 7 {
                "\"x\"".to_owned()
            } else {
                (i % 12).to_string()
            };
            db(&format!("{{:n {n}}}"))
        })
        .collect();
    let ticks = aido::batch::tick_all(&t, &mut agents);
    assert_eq!(ticks.len(), 300);
    for (i, tick) in ticks.iter().enumerate() {
        let n = i % 12;
        if i == 7 {
            // Comparing a string with `<` is an Error, handed back with the agent's tick.
            assert_eq!(tick.status, Status::Error);
            assert!(tick.error.is_some());
        } else if n < 10 {
            assert_eq!(tick.status, Status::Running);
            assert_eq!(tick.launches().len(), 1, "agent {i}");
            assert_eq!(
                tick.launches()[0].to_value(),
                db(&format!(
                    "{{:node :ask, :request 1, :action :x/ask, :options {{:n {n}}}}}"
                ))
            );
        } else {
            assert_eq!((tick.status, tick.launches().len()), (Status::Failure, 0));
        }
    }
    // Stopping cancels each running agent's request, and the batch says so.
    for agent in agents.iter_mut() {
        set(agent, "stop", Value::Bool(true));
    }
    let ticks = aido::batch::tick_all(&t, &mut agents);
    let cancels: usize = ticks.iter().map(|t| t.cancels().len()).sum();
    let running = (0..300).filter(|i| i % 12 < 10 && *i != 7).count();
    assert_eq!(cancels, running);
    assert!(ticks.iter().all(|t| t.status == Status::Success));
}

#[test]
fn a_completion_waiting_across_a_reload_is_applied_by_the_next_tick() {
    let old = tree(
        "[:sequence [:inc! {:key :n}] [:defer {:id :ask :action :x/ask}] [:t/async {:id :gone :name :gone}]]",
    );
    let new = tree("[:sequence [:inc! {:key :n}] [:defer {:id :ask :action :x/ask}]]");
    let mut d = traced(db("{}"), &old).db;
    set(
        &mut d,
        "aido/results",
        db("{:ask {:request 1, :status :success}}"),
    );
    // The reload halts nothing that the completion answers, and keeps it.
    let (d, _) = aido::migrate::migrate(d, &old, &new);
    assert_eq!(
        get(&d, "aido/results"),
        Some(db("{:ask {:request 1, :status :success}}"))
    );
    let tick = traced(d, &new);
    assert_eq!(tick.status, Status::Success);
    assert!(tick.dropped().is_empty());
    // `interrupt` leaves completions alone too: the next tick drops this one,
    // whose request was cancelled.
    let mut d = traced(db("{}"), &new).db;
    set(
        &mut d,
        "aido/results",
        db("{:ask {:request 2, :status :success}}"),
    );
    let halted = aido::tick::halt_running(d, &new);
    assert_eq!(halted.cancels().len(), 1);
    assert!(get(&halted.db, "aido/results").is_some());
    let tick = traced(halted.db, &new);
    assert_eq!(tick.dropped().len(), 1);
    assert_eq!(
        tick.dropped()[0].reason,
        aido::tick::DropReason::NotInFlight
    );
    assert_eq!(tick.launches().len(), 1, "a fresh request");
}

#[test]
fn a_request_counter_that_is_not_a_count_is_an_error_at_the_defer() {
    let t = tree("[:defer {:id :ask :action :x/ask}]");
    for bad in ["{:aido/requests \"7\"}", "{:aido/requests -1}"] {
        let tick = traced(db(bad), &t);
        assert_eq!(tick.status, Status::Error, "{bad}");
        assert!(tick.launches().is_empty());
        assert_eq!(tick.error.unwrap().node, Value::keyword("ask"));
    }
    // Ids go on from the counter.
    let tick = traced(db("{:aido/requests 41}"), &t);
    assert_eq!(tick.launches()[0].request, 42);
    assert_eq!(get(&tick.db, "aido/requests"), Some(Value::Int(42)));
}

#[test]
fn migration_moves_kept_children_and_running_picks_with_their_children() {
    let memory_of = |d: &Value, id: &str| {
        d.get_in(&[Value::keyword("aido/memory"), Value::keyword(id)])
            .cloned()
    };
    // A sequence keeps :w1's Success; a child inserted before it shifts it.
    let old = tree("[:sequence {:id :seq} [:wait {:id :w1 :ticks 1}] [:wait {:id :w2 :ticks 2}]]");
    let new = tree(
        "[:sequence {:id :seq} [:success {:id :ok}] [:wait {:id :w1 :ticks 1}] [:wait {:id :w2 :ticks 2}]]",
    );
    let mut d = db("{}");
    for _ in 0..2 {
        d = traced(d, &old).db;
    }
    assert_eq!(memory_of(&d, "seq"), Some(db("{:done [:success nil]}")));
    let (d, _) = aido::migrate::migrate(d, &old, &new);
    assert_eq!(memory_of(&d, "seq"), Some(db("{:done [nil :success nil]}")));
    let tick = traced(d, &new);
    assert_eq!(
        trace_text(&new, &tick),
        ["ok:success", "w2:running", "seq:running"]
    );
    // A random decider's running pick follows its child.
    let old = tree("[:choose {:id :c} [:wait {:id :a :ticks 3}] [:wait {:id :b :ticks 3}]]");
    let new = tree(
        "[:choose {:id :c} [:success {:id :new}] [:wait {:id :a :ticks 3}] [:wait {:id :b :ticks 3}]]",
    );
    let d = traced(db("{:aido/seed 1}"), &old).db;
    let picked = memory_of(&d, "c").unwrap();
    let i = picked
        .get(&Value::keyword("running"))
        .unwrap()
        .as_int()
        .unwrap();
    let (d, _) = aido::migrate::migrate(d, &old, &new);
    assert_eq!(
        memory_of(&d, "c"),
        Some(db(&format!("{{:running {}}}", i + 1)))
    );
    let tick = traced(d, &new);
    let child = if i == 0 { "a" } else { "b" };
    assert_eq!(
        trace_text(&new, &tick),
        [format!("{child}:running"), "c:running".to_owned()]
    );
}

/// `db` with `n` more keys the tree never reads: above the size a short
/// scan serves, so reserved keys are found by their hash.
fn with_other_keys(mut db: Value, n: i64) -> Value {
    for i in 0..n {
        set(&mut db, &format!("other-{i}"), Value::Int(i));
    }
    db
}

#[test]
fn reserved_keys_in_a_db_of_many_keys_are_found_without_fail() {
    let t = tree("[:sequence [:inc! {:key :n}] [:defer {:id :ask :action :x/ask}]]");
    // A launch, its completion taken, and a stale one dropped, in a db of 20 keys.
    let d = with_other_keys(db("{}"), 20);
    let first = run_tick_with_options(d, &t, &TickOptions::default());
    assert_eq!(first.status, Status::Running);
    assert_eq!(first.launches().len(), 1);
    let mut d = first.db;
    assert!(get(&d, "aido/running").is_some());
    set(
        &mut d,
        "aido/results",
        db("{:ask {:request 1 :status :success} :gone {:request 9 :status :success}}"),
    );
    let second = run_tick_with_options(d, &t, &TickOptions::default());
    assert_eq!(second.status, Status::Success);
    assert_eq!(second.dropped().len(), 1);
    assert_eq!(
        second.dropped()[0].reason,
        aido::tick::DropReason::UnknownNode
    );
    assert_eq!(get(&second.db, "aido/results"), None);
    assert_eq!(get(&second.db, "aido/running"), None);
    // An error a tick left is cleared by the next one.
    let mut d = second.db;
    set(&mut d, "n", Value::string("x"));
    let failed = run_tick_with_options(d, &t, &TickOptions::default());
    assert_eq!(failed.status, Status::Error);
    let mut d = failed.db;
    assert!(get(&d, "aido/error").is_some());
    set(&mut d, "n", Value::Int(0));
    let again = run_tick_with_options(d, &t, &TickOptions::default());
    assert_eq!(again.status, Status::Running);
    assert_eq!(get(&again.db, "aido/error"), None);
}

#[test]
#[cfg(feature = "rayon")]
fn tick_pools_of_any_size_and_ticks_in_place_give_tick_alls_results() {
    use std::num::NonZeroUsize;
    let t = tree(
        "[:selector [:t/cond {:name :stop}]
           [:sequence [:test? {:key :n :oper < :val 10}] [:defer {:id :ask :action :x/ask :n [:aido/db :n]}]]]",
    );
    let agents: Vec<Value> = (0..300)
        .map(|i| {
            let n = if i == 7 {
                "\"x\"".to_owned()
            } else {
                (i % 12).to_string()
            };
            with_other_keys(db(&format!("{{:n {n}}}")), i % 3 * 10)
        })
        .collect();
    let summary = |ticks: &[aido::tick::AgentTick]| -> Vec<String> {
        ticks
            .iter()
            .map(|t| {
                let launches: Vec<String> = t
                    .launches()
                    .iter()
                    .map(|r| r.to_value().to_string())
                    .collect();
                format!(
                    "{} {:?} {launches:?} {}",
                    t.status,
                    t.error,
                    t.cancels().len()
                )
            })
            .collect()
    };
    let mut want_dbs = agents.clone();
    let mut want = Vec::new();
    for round in 0..3 {
        if round == 2 {
            want_dbs
                .iter_mut()
                .for_each(|d| set(d, "stop", Value::Bool(true)));
        }
        want.push(summary(&aido::batch::tick_all(&t, &mut want_dbs)));
    }
    for threads in [1, 3] {
        let pool = aido::batch::TickPool::new(NonZeroUsize::new(threads).unwrap()).unwrap();
        assert_eq!(pool.threads(), threads);
        let mut dbs = agents.clone();
        let mut ticks = vec![aido::tick::AgentTick::default(); dbs.len()];
        for (round, want) in want.iter().enumerate() {
            if round == 2 {
                dbs.iter_mut()
                    .for_each(|d| set(d, "stop", Value::Bool(true)));
            }
            pool.tick_all_into(&t, &mut dbs, &mut ticks);
            assert_eq!(&summary(&ticks), want, "{threads} threads, round {round}");
        }
        assert_eq!(dbs, want_dbs, "{threads} threads");
    }
    let mut dbs = agents.clone();
    for (round, want) in want.iter().enumerate() {
        if round == 2 {
            dbs.iter_mut()
                .for_each(|d| set(d, "stop", Value::Bool(true)));
        }
        let ticks: Vec<_> = dbs
            .iter_mut()
            .map(|d| aido::tick::tick_in_place(d, &t))
            .collect();
        assert_eq!(&summary(&ticks), want, "in place, round {round}");
    }
    assert_eq!(dbs, want_dbs, "in place");
}

#[test]
fn a_tick_in_place_keeps_a_db_that_is_not_a_map() {
    let t = tree("[:inc! {:key :n}]");
    let mut d = Value::Vector(aido::value::thin_vec![Value::Int(1)]);
    let tick = aido::tick::tick_in_place(&mut d, &t);
    assert_eq!(tick.status, Status::Error);
    assert_eq!(d, Value::Vector(aido::value::thin_vec![Value::Int(1)]));
    let by_value = aido::run_tick(d.clone(), &t);
    assert_eq!(tick.error, by_value.error);
    // A nil db is an empty map, as for run_tick.
    let mut nil = Value::Nil;
    assert_eq!(
        aido::tick::tick_in_place(&mut nil, &t).status,
        Status::Success
    );
    assert_eq!(nil.to_string(), "{:n 1}");
}

/// Node memory is found by position hints kept in the tree: agents whose
/// dbs order `:aido/memory` and its entries differently, ticked in turn
/// with one tree, end as each does ticked alone with a tree of its own.
#[test]
fn node_memory_is_found_whatever_the_order_of_each_agents_db() {
    let src = "[:sequence {:memory true} [:wait {:ticks 3}] [:wait {:id :w2 :ticks 2}] \
               [:inc! {:key :n}]]";
    let shared = tree(src);
    let mut ahead = db("{:a 1}");
    for _ in 0..2 {
        ahead = aido::run_tick(ahead, &shared).db;
    }
    // The same state, with the db's keys and the memory's entries reversed.
    let reversed = |d: &Value| -> Value {
        let mut out = aido::value::Map::default();
        for (k, v) in d.as_map().unwrap().iter().rev() {
            let v = match (k, v) {
                (Value::Keyword(k), Value::Map(m)) if k.as_str() == "aido/memory" => {
                    Value::Map(Box::new(
                        m.iter()
                            .rev()
                            .map(|(a, b)| (a.clone(), b.clone()))
                            .collect(),
                    ))
                }
                _ => v.clone(),
            };
            out.insert(k.clone(), v);
        }
        Value::Map(Box::new(out))
    };
    let starts = [db("{:a 1}"), ahead.clone(), reversed(&ahead)];
    assert_ne!(starts[1].to_string(), starts[2].to_string());
    let mut together = starts.clone();
    let mut alone: Vec<(Value, Tree)> = starts.iter().map(|d| (d.clone(), tree(src))).collect();
    for round in 0..12 {
        for (i, d) in together.iter_mut().enumerate() {
            let tick = aido::run_tick(std::mem::take(d), &shared);
            *d = tick.db;
            let (own_db, own_tree) = &mut alone[i];
            let own = aido::run_tick(std::mem::take(own_db), own_tree);
            *own_db = own.db;
            assert_eq!(tick.status, own.status, "agent {i}, round {round}");
            assert_eq!(*d, *own_db, "agent {i}, round {round}");
        }
    }
    // Each agent went round its sequence: the counts differ by the start.
    let n = |d: &Value| get(d, "n").and_then(|v| v.as_int()).unwrap_or(0);
    assert_eq!(n(&together[1]), n(&together[2]));
    assert!(n(&together[0]) >= 1);
}

/// Each db's running set is read from that db: the set the last tick on
/// the thread ended with is only a guess at it. Two agents of one tree
/// whose running sets are as long and begin alike, ticked in turn, each
/// keep and halt their own nodes.
#[test]
fn agents_ticked_in_turn_each_keep_their_own_running_set() {
    let t = tree(
        "[:selector {:id :root}
           [:sequence {:id :l} [:present? {:key :left}] [:wait {:id :a :ticks 9}]]
           [:sequence {:id :r} [:wait {:id :b :ticks 9}]]]",
    );
    let mut left = db("{:left true}");
    let mut right = db("{}");
    for round in 1..=3 {
        left = aido::run_tick(left, &t).db;
        right = aido::run_tick(right, &t).db;
        assert_eq!(get(&left, "aido/running"), Some(db("[:root :l :a]")));
        assert_eq!(get(&right, "aido/running"), Some(db("[:root :r :b]")));
        let memory = format!("{{:ticks {round}}}");
        let count = |d: &Value, id: &str| {
            get(d, "aido/memory").and_then(|m| m.get(&Value::keyword(id)).cloned())
        };
        assert_eq!(count(&left, "a"), Some(db(&memory)), "round {round}");
        assert_eq!(count(&right, "b"), Some(db(&memory)), "round {round}");
    }
    // Swapped: each agent halts what it ran, and only that.
    set(&mut right, "left", Value::Bool(true));
    if let Value::Map(m) = &mut left {
        m.shift_remove(&Value::keyword("left"));
    }
    let tick = traced(left, &t);
    assert_eq!(
        trace_text(&t, &tick),
        [
            "\"l.0\":failure",
            "halt a",
            "l:failure",
            "b:running",
            "r:running",
            "root:running"
        ]
    );
    assert_eq!(get(&tick.db, "aido/running"), Some(db("[:root :r :b]")));
    let tick = traced(right, &t);
    assert_eq!(
        trace_text(&t, &tick),
        [
            "\"l.0\":success",
            "a:running",
            "l:running",
            "halt b",
            "halt r",
            "root:running"
        ]
    );
    assert_eq!(get(&tick.db, "aido/running"), Some(db("[:root :l :a]")));
}

/// A node that rewrites an id of `:aido/running` in place while the set
/// stays the same does not leave its edit behind: the tick writes the set
/// it ends with whenever the db's differs, so the next tick reads it.
#[test]
fn a_running_set_edited_in_place_during_a_tick_is_written_again() {
    let mut r = Registry::new();
    r.node_type(NodeType::new("t/scribble").tick(|ctx| {
        if let Some(Value::Vector(ids)) = ctx.db_mut().get_mut(&Value::keyword("aido/running")) {
            ids[0] = Value::keyword("junk");
        }
        Ok(Status::Success)
    }))
    .unwrap();
    let t = compile_str(
        "t.edn",
        "[:sequence {:id :s} [:t/scribble] [:wait {:id :w :ticks 9}]]",
        &r,
    )
    .unwrap();
    let mut d = Value::map();
    for _ in 0..3 {
        let tick = aido::run_tick(d, &t);
        assert_eq!(tick.status, Status::Running, "{:?}", tick.error);
        assert_eq!(get(&tick.db, "aido/running"), Some(db("[:s :w]")));
        d = tick.db;
    }
}

/// A host that edits `:aido/running` in place between ticks, naming as
/// many nodes as before: the tick reads the edited set (the node it no
/// longer names is not halted, the one it names and that is not reached
/// is), and writes the set it ends with, which differs from the db's.
#[test]
fn a_running_set_edited_in_place_between_ticks_is_read_and_written_again() {
    let t = compile_str(
        "t.edn",
        "[:selector {:id :s} [:wait {:id :a :ticks 9}] [:wait {:id :b :ticks 9}]]",
        &Registry::new(),
    )
    .unwrap();
    let mut d = Value::map();
    for round in 0..3 {
        let tick = traced(d, &t);
        assert_eq!(tick.status, Status::Running, "{:?}", tick.error);
        assert_eq!(get(&tick.db, "aido/running"), Some(db("[:s :a]")));
        if round > 0 {
            // The edit of the round before named `:b`, which was not
            // reached: halted; `:a` goes on from its count.
            assert_eq!(trace_text(&t, &tick), ["a:running", "halt b", "s:running"]);
            assert_eq!(
                get(&tick.db, "aido/memory"),
                Some(db(&format!("{{:a {{:ticks {}}}}}", round + 1)))
            );
        }
        d = tick.db;
        if let Value::Map(m) = &mut d
            && let Some(Value::Vector(ids)) = m.get_mut(&Value::keyword("aido/running"))
        {
            ids[1] = Value::keyword("b");
        }
    }
}

/// A tick that ends with the set it began with leaves it filed for the
/// next tick on its thread, which compares the db's ids with it: a host's
/// edit between two such ticks, of the same length, is read (and the node
/// it names, not reached, halted), never taken for the set filed.
#[test]
fn a_running_set_edited_after_a_tick_that_kept_it_is_read_as_edited() {
    for (text, edited, kept) in [
        (
            "[:selector {:id :s} [:wait {:id :a :ticks 9}] [:wait {:id :b :ticks 9}]]",
            Value::keyword("b"),
            "[:s :a]",
        ),
        // Derived ids: strings, compared by text once not the tree's own.
        (
            "[:selector [:wait {:ticks 9}] [:wait {:ticks 9}]]",
            Value::string("0.1"),
            "[\"0\" \"0.0\"]",
        ),
    ] {
        let t = compile_str("t.edn", text, &Registry::new()).unwrap();
        let mut d = Value::map();
        // The first tick starts the wait; the second ends with the set it
        // began with, and leaves it filed.
        for _ in 0..2 {
            let tick = traced(d, &t);
            assert_eq!(get(&tick.db, "aido/running"), Some(db(kept)), "{text}");
            d = tick.db;
        }
        if let Value::Map(m) = &mut d
            && let Some(Value::Vector(ids)) = m.get_mut(&Value::keyword("aido/running"))
        {
            ids[1] = edited.clone();
        }
        let tick = traced(d, &t);
        let halted = match &edited {
            Value::Keyword(k) => format!("halt {}", k.as_str()),
            other => format!("halt {other}"),
        };
        assert!(
            trace_text(&t, &tick).contains(&halted),
            "{text}: {:?}",
            trace_text(&t, &tick)
        );
        assert_eq!(get(&tick.db, "aido/running"), Some(db(kept)), "{text}");
    }
}

/// The set a tick leaves filed belongs to its db: a tick of another db on
/// the same thread that starts something without a running set of its own
/// neither halts nor keeps the nodes of the set filed.
#[test]
fn a_set_left_filed_by_one_db_is_not_taken_for_anothers() {
    let t = compile_str(
        "t.edn",
        "[:selector {:id :s} [:sequence {:id :q} [:present? {:id :go :key :go}] [:wait {:id :a :ticks 9}]] [:wait {:id :b :ticks 9}]]",
        &Registry::new(),
    )
    .unwrap();
    let mut first = db("{:go true}");
    for _ in 0..2 {
        first = aido::run_tick(first, &t).db;
    }
    assert_eq!(get(&first, "aido/running"), Some(db("[:s :q :a]")));
    let other = traced(Value::map(), &t);
    assert_eq!(get(&other.db, "aido/running"), Some(db("[:s :b]")));
    assert_eq!(
        trace_text(&t, &other),
        ["go:failure", "q:failure", "b:running", "s:running"]
    );
    // The first db goes on as it was.
    let tick = traced(first, &t);
    assert_eq!(get(&tick.db, "aido/running"), Some(db("[:s :q :a]")));
    assert!(!trace_text(&t, &tick).iter().any(|e| e.starts_with("halt")));
}

/// A data node that writes `:aido/running` while the set stays the same:
/// the tick writes the set it ends with over the write, as it does after
/// user code's edit.
#[test]
fn a_running_set_written_by_a_data_node_is_written_again() {
    for write in [
        "[:define! {:key :aido/running :val [:x]}]",
        "[:define! {:key :aido/running :val [:s :x]}]",
        "[:emit! {:key :aido/running :val :x}]",
    ] {
        let text = format!("[:sequence {{:id :s}} {write} [:wait {{:id :w :ticks 9}}]]");
        let t = compile_str("t.edn", &text, &Registry::new()).unwrap();
        let mut d = Value::map();
        for round in 0..3 {
            let tick = aido::run_tick(d, &t);
            assert_eq!(
                tick.status,
                Status::Running,
                "{write} {round}: {:?}",
                tick.error
            );
            assert_eq!(
                get(&tick.db, "aido/running"),
                Some(db("[:s :w]")),
                "{write}"
            );
            d = tick.db;
        }
    }
}

/// A halt keeps the running set and the node memory it takes out of the
/// db whole, for the same nodes to put back when they start again: nodes
/// that differ get their own set and memory, whichever was kept, and the
/// same nodes get theirs as a fresh start writes them.
#[test]
fn a_set_and_memory_a_halt_kept_are_put_back_only_for_the_same_nodes() {
    let t = tree(
        "[:selector {:id :s}
          [:sequence {:id :q} [:present? {:key :go}] [:wait {:id :a :ticks 9}]]
          [:sequence {:id :r} [:present? {:key :other}] [:wait {:id :b :ticks 9}]]]",
    );
    let mut d = Value::map();
    // Each tick's keys, and the running set and memory it must end with
    // (nil: none).
    let steps = [
        ("{:go true}", "[:s :q :a]", "{:a {:ticks 1}}"),
        ("{}", "nil", "nil"),
        // Another node of the same depth starts: the set and memory kept
        // from `:a` are not its own.
        ("{:other true}", "[:s :r :b]", "{:b {:ticks 1}}"),
        ("{:other true}", "[:s :r :b]", "{:b {:ticks 2}}"),
        ("{}", "nil", "nil"),
        // The same node starts again: its own set and memory, counted anew.
        ("{:other true}", "[:s :r :b]", "{:b {:ticks 1}}"),
        ("{}", "nil", "nil"),
        ("{:go true}", "[:s :q :a]", "{:a {:ticks 1}}"),
    ];
    for (i, (keys, running, memory)) in steps.into_iter().enumerate() {
        for key in ["go", "other"] {
            if let Value::Map(m) = &mut d {
                m.shift_remove(&Value::keyword(key));
            }
        }
        if let Value::Map(keys) = &db(keys) {
            for (k, v) in keys.iter() {
                set(&mut d, k.as_keyword().unwrap().as_str(), v.clone());
            }
        }
        let tick = aido::run_tick(d, &t);
        let expect = |text: &str| Some(db(text)).filter(|v| !v.is_nil());
        assert_eq!(get(&tick.db, "aido/running"), expect(running), "tick {i}");
        assert_eq!(get(&tick.db, "aido/memory"), expect(memory), "tick {i}");
        d = tick.db;
    }
}

/// A node's run state written as a one-entry map is written in place
/// only over a map of the same key: a `:wait` that starts with the id of
/// a halted node whose memory had another key gets `{:ticks 1}`.
#[test]
fn a_count_is_written_in_place_only_over_a_state_of_the_same_key() {
    let mut r = Registry::new();
    r.node_type(NodeType::new("t/mem").tick(|ctx| {
        ctx.set_memory(Some(db("{:other 7}")))?;
        Ok(Status::Running)
    }))
    .unwrap();
    let first = compile_str(
        "a.edn",
        "[:sequence [:present? {:key :go}] [:t/mem {:id :w}]]",
        &r,
    )
    .unwrap();
    let d = aido::run_tick(db("{:go true}"), &first).db;
    assert_eq!(get(&d, "aido/memory"), Some(db("{:w {:other 7}}")));
    // Halted: the memory is taken out of the db.
    let mut d = d;
    if let Value::Map(m) = &mut d {
        m.shift_remove(&Value::keyword("go"));
    }
    let d = aido::run_tick(d, &first).db;
    assert_eq!(get(&d, "aido/memory"), None);
    let second = tree("[:sequence [:success] [:wait {:id :w :ticks 5}]]");
    let d = aido::run_tick(Value::map(), &second).db;
    assert_eq!(get(&d, "aido/memory"), Some(db("{:w {:ticks 1}}")));
    let d = aido::run_tick(d, &second).db;
    assert_eq!(get(&d, "aido/memory"), Some(db("{:w {:ticks 2}}")));
}

/// A tick that continues the running set it loaded (left filed, the usual
/// tick while something runs) ends without the whole write-back: it must
/// still write back a seeded draw's position and take its locals out.
#[test]
fn a_tick_that_continues_its_running_set_still_writes_back_its_draws_and_locals() {
    let drawing = tree(
        "[:sequence [:selector [:randomly {:p 0.5} [:inc! {:key :a}]] [:success]]
          [:wait {:id :w :ticks 1000}]]",
    );
    let mut db = db("{:aido/seed 7}");
    let mut positions = Vec::new();
    for _ in 0..4 {
        let tick = aido::run_tick(db, &drawing);
        assert_eq!(tick.status, Status::Running);
        db = tick.db;
        positions.push(get(&db, "aido/rng-pos"));
    }
    // Each tick draws once, and each position is written back.
    assert_eq!(
        positions,
        (1..=4).map(|n| Some(Value::Int(n))).collect::<Vec<_>>()
    );
    // Locals, in a tree that draws nothing.
    let tree = tree("[:sequence [:inc! {:key :a}] [:wait {:id :w :ticks 1000}]]");
    let mut db = Value::map();
    for n in 0..4 {
        let options = TickOptions {
            locals: Some(read_value("{:n 1}").unwrap()),
            ..TickOptions::default()
        };
        let tick = run_tick_with_options(db, &tree, &options);
        assert_eq!(tick.status, Status::Running, "tick {n}");
        db = tick.db;
        assert_eq!(get(&db, "aido/locals"), None, "tick {n}: {db}");
    }
}

/// A plain child of a general flow that ends the tick in Error leaves the
/// running child after it as it was: an Error tick halts nothing and keeps
/// the db's running set and node memory.
#[test]
fn a_plain_child_in_error_leaves_the_running_child_after_it_as_it_was() {
    let tree = tree(
        "[:selector [:sequence [:present? {:key :go}] [:inc! {:key :s}]]
                    [:wait {:id :w :ticks 5}]]",
    );
    let first = aido::run_tick(db("{}"), &tree);
    assert_eq!(first.status, Status::Running);
    let mut db = first.db;
    let running = get(&db, "aido/running");
    let memory = get(&db, "aido/memory");
    assert!(running.is_some() && memory.is_some(), "{db}");
    set(&mut db, "go", Value::Bool(true));
    set(&mut db, "s", Value::string("not a number"));
    let second = aido::run_tick(db, &tree);
    assert_eq!(second.status, Status::Error);
    assert_eq!(get(&second.db, "aido/running"), running);
    assert_eq!(get(&second.db, "aido/memory"), memory);
}

#[test]
fn halting_with_a_hook_that_panics_is_an_error_tick() {
    // `halt_running` finishes a tick whose status is Success; the end of
    // the tick makes it an Error because a hook failed (the status is
    // settled where the end writes the error back).
    let mut r = Registry::new();
    r.node_type(
        NodeType::new("t/stuck")
            .tick(|_| Ok(Status::Running))
            .on_halt(|_| panic!("the hook fails")),
    )
    .unwrap();
    let t = compile_str("t.edn", "[:t/stuck {:id :s}]", &r).unwrap();
    let running = aido::run_tick(Value::map(), &t);
    assert_eq!(running.status, Status::Running);
    let halted = aido::tick::halt_running(running.db, &t);
    assert_eq!(halted.status, Status::Error);
    let error = halted.error.as_deref().unwrap();
    assert_eq!(error.node, Value::keyword("s"));
    assert!(halted.db.get(&Value::keyword("aido/error")).is_some());
}

/// Ticks `t` from an empty db, `inputs[i]` (EDN maps, `nil` for none)
/// merged into the db before tick `i`, three ways: untraced, traced and
/// recorded. The three agree on each tick's status and db; the traced
/// ticks and the run record are handed back.
fn ticked_three_ways(t: &Tree, inputs: &[&str]) -> (Vec<Tick>, aido::record::RunRecord) {
    let (mut plain, mut traced_db, mut recorded) = (Value::map(), Value::map(), Value::map());
    let mut recorder = aido::record::Recorder::new(t, &recorded);
    let mut ticks = Vec::new();
    for input in inputs {
        if *input != "nil" {
            let input = db(input);
            for d in [&mut plain, &mut traced_db, &mut recorded] {
                for (k, v) in input.as_map().unwrap() {
                    d.as_map_mut().unwrap().insert(k.clone(), v.clone());
                }
            }
            recorder.input(input.as_map().unwrap());
        }
        let p = aido::run_tick(plain, t);
        let tr = traced(traced_db, t);
        let r = recorder.tick(recorded, t);
        assert_eq!((p.status, &p.db), (tr.status, &tr.db), "untraced vs traced");
        assert_eq!((r.status, &r.db), (tr.status, &tr.db), "recorded vs traced");
        (plain, traced_db, recorded) = (p.db, tr.db.clone(), r.db);
        ticks.push(tr);
    }
    (ticks, recorder.finish())
}

/// A loop over aido's counting parallel (which counts Running as
/// succeeded) ticks the sequence below it again within one tick: a wait
/// that ran and finished there keeps its Success while the sequence runs,
/// as between ticks, and is not started over; the next tick finds the
/// sequence at its second wait, and a halt stops that one.
#[test]
fn a_sequence_ticked_again_within_a_tick_keeps_a_child_that_ran_and_finished() {
    let t = tree(
        "[:selector {:id :root} [:present? {:id :stop :key :stop}]
           [:loop {:id :loop :count 3}
            [:parallel {:id :par :mode :success :how-many 1}
             [:sequence {:id :seq} [:wait {:id :w1 :ticks 1}] [:wait {:id :w2 :ticks 2}]]]]]",
    );
    let (ticks, run) = ticked_three_ways(&t, &["nil", "nil", "{:stop true}"]);
    // Iteration 1 starts w1, iteration 2 finishes it and starts w2, and
    // iteration 3 goes on with w2, w1 kept.
    assert_eq!(
        trace_text(&t, &ticks[0]),
        [
            "stop:failure",
            "w1:running",
            "seq:running",
            "par:success",
            "w1:success",
            "w2:running",
            "seq:running",
            "par:success",
            "w2:running",
            "seq:running",
            "par:success",
            "loop:success",
            "root:success"
        ]
    );
    assert_eq!(get(&ticks[0].db, "aido/running"), Some(db("[:seq :w2]")));
    // w2 finishes in iteration 1 and the sequence with it; iteration 2
    // starts w1 afresh, iteration 3 finishes it (kept) and starts w2.
    assert_eq!(
        trace_text(&t, &ticks[1]),
        [
            "stop:failure",
            "w2:success",
            "seq:success",
            "par:success",
            "w1:running",
            "seq:running",
            "par:success",
            "w1:success",
            "w2:running",
            "seq:running",
            "par:success",
            "loop:success",
            "root:success"
        ]
    );
    assert_eq!(get(&ticks[1].db, "aido/running"), Some(db("[:seq :w2]")));
    // What runs is halted, deepest first: w2 and the sequence, not w1.
    assert_eq!(
        trace_text(&t, &ticks[2]),
        ["stop:success", "halt w2", "halt seq", "root:success"]
    );
    assert_eq!(get(&ticks[2].db, "aido/running"), None);
    assert_eq!(get(&ticks[2].db, "aido/memory"), None);
    // The record: w1 ticked twice in the first tick, its last status
    // Success; the third tick's halts.
    let first = run.tick(0).unwrap();
    let w1 = first
        .visits
        .iter()
        .find(|v| v.id == Value::keyword("w1"))
        .unwrap();
    assert_eq!(
        (w1.status, w1.count, w1.halted),
        (Status::Success, 2, false)
    );
    let third = run.tick(2).unwrap();
    let halted: Vec<&Value> = third.halted().collect();
    assert_eq!(halted, [&Value::keyword("w2"), &Value::keyword("seq")]);
}

/// A node that returned Running and then finished in the same tick (a
/// loop over a counting parallel ticks it again) does not run after the
/// tick: it is not in `:aido/running`, and a later tick that passes it by
/// halts nothing.
#[test]
fn a_node_that_ran_and_finished_within_a_tick_is_not_running_after_it() {
    let t = tree(
        "[:selector {:id :root} [:present? {:id :stop :key :stop}]
           [:loop {:id :loop :count 2}
            [:parallel {:id :par :mode :success :how-many 1} [:wait {:id :w :ticks 1}]]]]",
    );
    let (ticks, run) = ticked_three_ways(&t, &["nil", "{:stop true}"]);
    assert_eq!(
        trace_text(&t, &ticks[0]),
        [
            "stop:failure",
            "w:running",
            "par:success",
            "w:success",
            "par:success",
            "loop:success",
            "root:success"
        ]
    );
    assert_eq!(get(&ticks[0].db, "aido/running"), None);
    assert_eq!(get(&ticks[0].db, "aido/memory"), None);
    assert_eq!(trace_text(&t, &ticks[1]), ["stop:success", "root:success"]);
    let first = run.tick(0).unwrap();
    let w = first
        .visits
        .iter()
        .find(|v| v.id == Value::keyword("w"))
        .unwrap();
    assert_eq!((w.status, w.count), (Status::Success, 2));
    assert!(run.tick(1).unwrap().halts().is_empty());
    // A wait of the running set that runs on in its first visit and
    // finishes in its second (the third tick: Running twice, Success,
    // Running, Running, Success) leaves the set too.
    let t = tree(
        "[:loop {:id :loop :count 2}
           [:parallel {:id :par :mode :success :how-many 1} [:wait {:id :w :ticks 2}]]]",
    );
    let (ticks, _) = ticked_three_ways(&t, &["nil", "nil", "nil"]);
    let running: Vec<Option<Value>> = ticks.iter().map(|t| get(&t.db, "aido/running")).collect();
    assert_eq!(running, [Some(db("[:w]")), Some(db("[:w]")), None]);
    assert_eq!(
        trace_text(&t, &ticks[2]),
        [
            "w:running",
            "par:success",
            "w:success",
            "par:success",
            "loop:success"
        ]
    );
}

/// A node type of the host's that ticks its child twice is another way
/// to tick a node again within a tick: the same holds under it.
#[test]
fn a_user_node_that_ticks_its_child_twice_keeps_finished_children_and_drops_finished_nodes() {
    let mut r = Registry::new();
    r.node_type(
        NodeType::new("t/twice")
            .children(aido::extend::Arity::Exactly(1))
            .tick(|ctx| {
                ctx.tick_child(0);
                Ok(ctx.tick_child(0))
            }),
    )
    .unwrap();
    let t = compile_str(
        "t.edn",
        "[:t/twice {:id :twice}
          [:sequence {:id :seq} [:wait {:id :w1 :ticks 1}] [:wait {:id :w2 :ticks 1}]]]",
        &r,
    )
    .unwrap();
    let (ticks, _) = ticked_three_ways(&t, &["nil", "nil"]);
    assert_eq!(
        trace_text(&t, &ticks[0]),
        [
            "w1:running",
            "seq:running",
            "w1:success",
            "w2:running",
            "seq:running",
            "twice:running"
        ]
    );
    assert_eq!(
        get(&ticks[0].db, "aido/running"),
        Some(db("[:twice :seq :w2]"))
    );
    // w1 is kept: w2 finishes the sequence, whose next round starts w1.
    assert_eq!(
        trace_text(&t, &ticks[1]),
        [
            "w2:success",
            "seq:success",
            "w1:running",
            "seq:running",
            "twice:running"
        ]
    );
    assert_eq!(
        get(&ticks[1].db, "aido/running"),
        Some(db("[:twice :seq :w1]"))
    );
    let t = compile_str(
        "t.edn",
        "[:t/twice {:id :twice} [:wait {:id :w :ticks 1}]]",
        &r,
    )
    .unwrap();
    let (ticks, _) = ticked_three_ways(&t, &["nil"]);
    assert_eq!(
        trace_text(&t, &ticks[0]),
        ["w:running", "w:success", "twice:success"]
    );
    assert_eq!(get(&ticks[0].db, "aido/running"), None);
}
