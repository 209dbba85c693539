//! Property tests over the surfaces added since the first campaign: node
//! models, stubs, scenarios, the run record and its page, the outline and
//! graphs of `aido show`, migrations between random tree pairs, trim tasks
//! as random data through a `Trimmer` and a `Runner`, and the newer
//! commands of the binary (`test`, `show`, `nodes`, `--nodes`, `--stubs`,
//! `--save-tree`, `--timeline`). Same settings as `fuzz.rs`:
//! `AIDO_FUZZ_CASES=N` runs N cases per target and prints the executions.
#![allow(clippy::panic, clippy::expect_used, clippy::unwrap_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use aido::record::{PageOptions, Recorder, dot, mermaid, outline, page};
use aido::runner::{PlayMode, Runner};
use aido::scenario::Scenario;
use aido::stub::Stubs;
use aido::tick::{TickOptions, run_tick_with_options};
use aido::trim::{DataTask, Trimmer};
use aido::{Registry, Value, compile, read_value};
use proptest::prelude::*;

use super::fuzz::{db, node, report, runner, tick_a_few, value};

/// Small budgets: a random tree must not make a case slow.
fn options() -> TickOptions {
    TickOptions {
        step_budget: 20_000,
        work_budget: 200_000,
        trace: true,
        ..TickOptions::default()
    }
}

/// What a db is after ticking `tree` `n` times from `db`.
fn ticked(tree: &aido::Tree, mut db: Value, n: usize) -> Value {
    for _ in 0..n {
        db = run_tick_with_options(db, tree, &options()).db;
    }
    db
}

/// Node ids and names a random task or stub may name.
fn id() -> impl Strategy<Value = Value> {
    prop::sample::select(vec![
        "\"0\"",
        "\"0.0\"",
        "\"0.1\"",
        "\"0.0.0\"",
        "\"0.2\"",
        ":a",
        ":w",
        ":nope",
        ":sequence",
        ":selector",
        ":inc!",
        ":wait",
        "nil",
        "7",
    ])
    .prop_map(|t| read_value(t).unwrap())
}

/// A trim task as data: mostly the keys a task takes, with values that are
/// right, wrong, or random.
fn task() -> impl Strategy<Value = Value> {
    let key = prop::sample::select(vec![
        "task",
        "target",
        "not-before",
        "replace",
        "reorder",
        "insert",
        "at",
        "remove",
        "undo",
        "targte",
    ]);
    let val = prop_oneof![
        3 => id(),
        2 => node(),
        1 => (0i64..4).prop_map(Value::Int),
        1 => prop::collection::vec((0i64..4).prop_map(Value::Int), 0..4).prop_map(Value::vector),
        1 => any::<bool>().prop_map(Value::Bool),
        1 => value(),
    ];
    prop::collection::vec((key, val), 0..5).prop_map(|entries| {
        Value::map_from(entries.into_iter().map(|(k, v)| (Value::keyword(k), v)))
    })
}

/// A stub: statuses, sequences, maps with the keys a stub takes, or junk.
fn stub() -> impl Strategy<Value = Value> {
    prop::sample::select(vec![
        ":success",
        ":failure",
        ":running",
        ":error",
        "[:failure :success]",
        "[]",
        "{:status :success :db {:seen true}}",
        "{:status :error :message \"boom\"}",
        "{:status :success :after 2}",
        "{:status :success :after -1}",
        "{:status :nope}",
        "{:db 1}",
        "7",
        "[{:status :running} :success {:status :failure :db {:n 1}}]",
    ])
    .prop_map(|t| read_value(t).unwrap())
}

#[test]
fn migrations_between_random_tree_pairs_keep_the_db_readable() {
    let registry = Registry::new();
    let runs = AtomicU64::new(0);
    runner(64)
        .run(&(node(), node(), db()), |(old, new, db)| {
            runs.fetch_add(1, Ordering::Relaxed);
            let (Ok(old), Ok(new)) = (compile(&old, &registry), compile(&new, &registry)) else {
                return Ok(());
            };
            let db = ticked(&old, db, 2);
            let (db, report) = aido::migrate::migrate(db, &old, &new);
            let _ = report.to_value();
            tick_a_few(&new, db, 2);
            Ok(())
        })
        .unwrap();
    report("migrate between random tree pairs", runs.into_inner());
}

#[test]
fn random_trim_tasks_go_through_a_trimmer_and_a_runner() {
    let registry = Registry::new();
    let runs = AtomicU64::new(0);
    let tasks = prop::collection::vec(task(), 0..5);
    runner(64)
        .run(
            &(node(), node(), db(), tasks),
            |(tree, other, db, tasks)| {
                runs.fetch_add(1, Ordering::Relaxed);
                let tasks: Vec<DataTask> = tasks
                    .iter()
                    .filter_map(|t| DataTask::from_value(t).ok())
                    .collect();
                let _ = DataTask::many(&Value::Vector(tasks.iter().map(|_| Value::Nil).collect()));
                let Ok(tree) = compile(&tree, &registry) else {
                    return Ok(());
                };
                // Through a Trimmer between ticks.
                let mut trimmer = Trimmer::new();
                for task in &tasks {
                    trimmer.push(Box::new(task.clone()));
                }
                let (mut db_now, mut tree_now) = (db.clone(), tree.clone());
                for n in 0..3 {
                    let gap = trimmer.between_ticks(n, db_now, &tree_now, &registry);
                    db_now = gap.db;
                    if let Some(changed) = gap.tree {
                        tree_now = changed;
                    }
                    for report in &gap.reports {
                        let _ = report.to_value(true);
                    }
                    db_now = ticked(&tree_now, db_now, 1);
                }
                tick_a_few(&tree_now, db_now, 1);
                // Through a Runner, with a reload to another random tree.
                let mut agent = Runner::load(Arc::new(tree), db);
                agent.set_registry(registry.clone());
                agent.set_tick_options(options());
                for task in tasks {
                    agent.trim(Box::new(task));
                }
                if agent.play(PlayMode::StopByExecuteLoopCount, 4).is_ok() {
                    for step in 0..6 {
                        if step == 2
                            && let Ok(other) = compile(&other, &registry)
                        {
                            let _ = agent.reload(Arc::new(other));
                        }
                        if !matches!(agent.update(), Ok(Some(_))) {
                            break;
                        }
                    }
                }
                let _ = agent.properties(3);
                let _ = agent.reset();
                let _ = agent.destroy();
                Ok(())
            },
        )
        .unwrap();
    report(
        "trim tasks as random data, Trimmer and Runner",
        runs.into_inner(),
    );
}

#[test]
fn random_stubs_and_models_compile_and_tick_or_refuse() {
    let runs = AtomicU64::new(0);
    let stubs = prop::collection::vec((id(), stub()), 0..4);
    let model_part = prop::sample::select(vec![
        "{:x/y {:children 0}}",
        "{:x/y {:children :many :options {:range :int :mode {:type :one-of :values [:a :b]}}}}",
        "{:x/y {:children [1 2] :open-options true :doc \"d\"}}",
        "{:sequence {}}",
        "{:x/y {:options {:id :string}}}",
        "{:x/y {:children -1}}",
        "{:x/y {:options {:r {:type :nope}}}}",
        "{\"x\" {}}",
        "[]",
    ]);
    runner(64)
        .run(
            &(node(), stubs, model_part, db()),
            |(tree, stubs, model, db)| {
                runs.fetch_add(1, Ordering::Relaxed);
                let mut registry = Registry::new();
                let model =
                    read_value(&format!("{{:nodes {model} :functions {{f {{:arity 1}}}}}}"))
                        .unwrap();
                if registry.declare_model(&model).is_ok() {
                    let written = registry.model();
                    let mut again = Registry::new();
                    prop_assert!(again.declare_model(&written).is_ok(), "{written}");
                }
                let stubs = Value::map_from(stubs);
                let Ok(stubs) = Stubs::from_value(&stubs) else {
                    return Ok(());
                };
                let Ok(tree) = stubs.compile(&tree, &registry) else {
                    return Ok(());
                };
                let mut db = db;
                for n in 1..=3 {
                    stubs.set_tick(n);
                    db = run_tick_with_options(db, &tree, &options()).db;
                }
                Ok(())
            },
        )
        .unwrap();
    report("random stubs and node models", runs.into_inner());
}

#[test]
fn random_scenarios_run_and_record_their_page_and_outline() {
    let dir = std::env::temp_dir().join(format!("aido-fuzz-scenario-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let registry = Registry::new();
    let runs = AtomicU64::new(0);
    let part = prop::sample::select(vec![
        ":ticks 3",
        ":ticks 0",
        ":seed 7",
        ":seed :x",
        ":inputs [{:a 1} nil {:n 2}]",
        ":inputs {2 {:a 1}}",
        ":stubs {:inc! :failure}",
        ":stubs {\"0.0\" [:running :success]}",
        ":trims [{:task :t :target \"0.0\" :remove true :not-before 1}]",
        ":trims [{:task :t}]",
        ":expect [{:tick 1 :status :success}]",
        ":expect [{:tick 9 :db {:n 1}}]",
        ":nodes {:nodes {:x/y {:children 0}}}",
        ":golden \"g.timeline\"",
        ":tree \"missing.edn\"",
        ":colour :red",
    ]);
    runner(64)
        .run(
            &(node(), db(), prop::collection::vec(part, 0..4)),
            |(tree, db, parts)| {
                runs.fetch_add(1, Ordering::Relaxed);
                let text = format!("{{:tree {tree} :db {db} {}}}", parts.join(" "));
                let Ok(scenario) = Scenario::parse("s.test.edn", &text, &dir, &registry) else {
                    return Ok(());
                };
                let run = scenario.run();
                let _ = run.check(&scenario.expect);
                let _ = page(&run.record, &PageOptions::titled("s.test.edn"));
                let _ = (
                    outline(&scenario.tree),
                    dot(&scenario.tree),
                    mermaid(&scenario.tree),
                );
                // The record rebuilds every db the run went through.
                prop_assert_eq!(run.record.db_after(run.record.n_ticks()), run.db);
                Ok(())
            },
        )
        .unwrap();
    report(
        "scenarios from random parts, their record, page and outline",
        runs.into_inner(),
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_record_and_page_of_random_runs_rebuild_every_db() {
    let registry = Registry::new();
    let runs = AtomicU64::new(0);
    runner(64)
        .run(&(node(), db()), |(tree, db)| {
            runs.fetch_add(1, Ordering::Relaxed);
            let Ok(tree) = compile(&tree, &registry) else {
                return Ok(());
            };
            let mut recorder = Recorder::new(&tree, &db);
            let mut dbs = vec![db.clone()];
            let mut db = db;
            for _ in 0..4 {
                let tick = run_tick_with_options(db, &tree, &options());
                recorder.record(&tree, &tick);
                db = tick.db;
                dbs.push(db.clone());
            }
            let run = recorder.finish();
            for (n, want) in dbs.iter().enumerate().skip(1) {
                let got = run.db_after(n);
                prop_assert!(
                    want.as_map().is_none() || got == *want,
                    "tick {n}: {got} != {want}"
                );
            }
            let _ = page(&run, &PageOptions::titled("t.edn"));
            let _ = aido::record::timeline(&run, &aido::record::TimelineOptions::default());
            let _ = (outline(&tree), dot(&tree), mermaid(&tree));
            Ok(())
        })
        .unwrap();
    report(
        "run records, pages, timelines and outlines of random runs",
        runs.into_inner(),
    );
}

#[test]
fn the_newer_commands_survive_random_flags_and_files() {
    let dir = std::env::temp_dir().join(format!("aido-fuzz-cli2-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for (name, text) in [
        (
            "tree.edn",
            "[:sequence [:inc! {:key :n}] [:x/y {:id :look}] [:wait {:id :w :ticks 2}]]",
        ),
        ("v2.edn", "[:sequence [:wait {:id :w :ticks 2}]]"),
        ("m.nodes.edn", "{:nodes {:x/y {:children 0}}}"),
        ("bad.nodes.edn", "{:nodes {:x/y {:options {:id :string}}}}"),
        ("stubs.edn", "{:look [:running :success]}"),
        ("bad-stubs.edn", "{:look :nope}"),
        ("trims.edn", "[{:task :t :target :w :remove true}]"),
        ("bad-trims.edn", "[{:task :t :targte :w}]"),
        (
            "s.test.edn",
            "{:tree \"tree.edn\" :nodes \"m.nodes.edn\" :stubs {:look :success} :ticks 2 :expect [{:tick 1 :status :running}]}",
        ),
        ("bad.test.edn", "{:tree \"tree.edn\" :ticks -1}"),
    ] {
        std::fs::write(dir.join(name), text).unwrap();
    }
    let word = prop::sample::select(vec![
        "test",
        "show",
        "nodes",
        "run",
        "migrate",
        "check",
        "tree.edn",
        "v2.edn",
        "s.test.edn",
        "bad.test.edn",
        "m.nodes.edn",
        "bad.nodes.edn",
        "stubs.edn",
        "bad-stubs.edn",
        "trims.edn",
        "bad-trims.edn",
        "--nodes",
        "--stubs",
        "--trims",
        "--save-tree",
        "--save",
        "--timeline",
        "--db",
        "--ticks",
        "--format",
        "--accept",
        "--coverage",
        "--reload",
        "2=v2.edn",
        "9=v2.edn",
        "out.edn",
        "out.json",
        "page.html",
        "dot",
        "mermaid",
        "edn",
        "text",
        "pretty",
        "2",
        ".",
    ]);
    let runs = AtomicU64::new(0);
    runner(24)
        .run(&prop::collection::vec(word, 0..7), |args| {
            runs.fetch_add(1, Ordering::Relaxed);
            let output = std::process::Command::new(env!("CARGO_BIN_EXE_aido"))
                .args(&args)
                .current_dir(&dir)
                .stdin(std::process::Stdio::null())
                .output()
                .unwrap();
            let code = output.status.code();
            let stderr = String::from_utf8_lossy(&output.stderr);
            prop_assert!(matches!(code, Some(0..=2)), "{args:?}: {code:?} {stderr}");
            prop_assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
            // `aido test --accept` may write golden files: they stay in the folder.
            Ok(())
        })
        .unwrap();
    report("test, show, nodes and the newer flags", runs.into_inner());
    let _ = std::fs::remove_dir_all(&dir);
}

/// One edit of a db's big values between ticks: which value (`:m`, a map,
/// or `:v`, a vector, or the map nested in `:m`'s key 0), where, and what.
#[derive(Debug, Clone)]
enum Edit {
    Set(u8, i64, i64),
    Remove(u8, i64),
    Push(i64),
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (0u8..3, 0i64..24, -3i64..3).prop_map(|(t, k, v)| Edit::Set(t, k, v)),
        (0u8..3, 0i64..24).prop_map(|(t, k)| Edit::Remove(t, k)),
        (-3i64..3).prop_map(Edit::Push),
    ]
}

fn edited(mut db: Value, edits: &[Edit]) -> Value {
    let map = db.as_map_mut().unwrap();
    for edit in edits {
        match *edit {
            Edit::Set(target, k, v) => match (target, map.get_mut(&Value::keyword("m"))) {
                (0, Some(Value::Map(m))) => {
                    m.insert(Value::Int(k), Value::Int(v));
                }
                (1, Some(Value::Map(m))) => {
                    if let Some(Value::Map(inner)) = m.get_mut(&Value::Int(0)) {
                        inner.insert(Value::Int(k), Value::Int(v));
                    }
                }
                _ => {
                    if let Some(Value::Vector(items)) = map.get_mut(&Value::keyword("v"))
                        && let Some(slot) = items.get_mut(k as usize)
                    {
                        *slot = Value::Int(v);
                    }
                }
            },
            Edit::Remove(target, k) => match map.get_mut(&Value::keyword("m")) {
                Some(Value::Map(m)) if target == 0 => {
                    m.shift_remove(&Value::Int(k));
                }
                _ => {
                    if let Some(Value::Vector(items)) = map.get_mut(&Value::keyword("v"))
                        && (k as usize) < items.len()
                    {
                        items.remove(k as usize);
                    }
                }
            },
            Edit::Push(v) => {
                if let Some(Value::Vector(items)) = map.get_mut(&Value::keyword("v")) {
                    items.push(Value::Int(v));
                }
            }
        }
    }
    db
}

#[test]
fn the_record_rebuilds_every_db_through_appends_and_edits_of_big_values() {
    let tree = aido::compile_str("t.edn", "[:inc! {:key :n}]", &Registry::new()).unwrap();
    let runs = AtomicU64::new(0);
    let start = (
        prop::collection::vec(-3i64..3, 8..24),
        prop::collection::vec(-3i64..3, 8..24),
        prop::collection::vec(prop::collection::vec(edit(), 0..6), 1..8),
    );
    runner(256)
        .run(&start, |(m, v, steps)| {
            runs.fetch_add(1, Ordering::Relaxed);
            let inner = Value::map_from((0..10).map(|k| (Value::Int(k), Value::Int(k))));
            let mut big: Vec<(Value, Value)> = (0..m.len() as i64)
                .zip(m)
                .map(|(k, x)| (Value::Int(k), Value::Int(x)))
                .collect();
            big[0].1 = inner;
            let db = Value::map_from([
                (Value::keyword("m"), Value::map_from(big)),
                (
                    Value::keyword("v"),
                    Value::Vector(v.into_iter().map(Value::Int).collect()),
                ),
            ]);
            let mut recorder = Recorder::new(&tree, &db);
            let mut dbs = vec![db.clone()];
            let mut db = db;
            for edits in &steps {
                db = recorder.tick(edited(db, edits), &tree).db;
                dbs.push(db.clone());
            }
            let run = recorder.finish();
            for (n, want) in dbs.iter().enumerate() {
                let got = run.db_after(n);
                prop_assert_eq!(&got, want, "tick {}", n);
            }
            let _ = page(&run, &PageOptions::titled("t.edn"));
            let _ = aido::record::timeline(&run, &aido::record::TimelineOptions::default());
            Ok(())
        })
        .unwrap();
    report(
        "run records of big maps and vectors edited between ticks",
        runs.into_inner(),
    );
}
