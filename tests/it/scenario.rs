//! Scenarios, stubs and node models through the library: every shipped
//! scenario run with `Scenario` (its expectations hold and its timeline is
//! its golden file), stubs by node type and by id, node models, coverage.
#![allow(clippy::panic, clippy::expect_used, clippy::unwrap_used)]

use crate::common;

use std::path::{Path, PathBuf};

use aido::{
    Registry, Status, Value, compile_file, compile_str,
    diag::Code,
    model::ModelErrorKind,
    read_value,
    scenario::{
        ChatGapKind, Coverage, Expectation, Mismatch, Scenario, ScenarioErrorKind, golden_diff,
    },
    stub::{Stub, StubErrorKind, StubbedCompileError, Stubs},
};

fn scenario_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if path.is_dir() && name != "target" {
            scenario_files(&path, out);
        } else if name.ends_with(".test.edn") {
            out.push(path);
        }
    }
}

fn map(text: &str) -> aido::value::Map {
    match read_value(text).unwrap().into_map() {
        Ok(m) => m,
        Err(other) => panic!("not a map: {other}"),
    }
}

/// Every shipped example tree has a scenario, and every scenario passes:
/// its expectations hold and its timeline equals its golden file.
#[test]
fn every_shipped_scenario_passes_through_the_library() {
    let mut files = Vec::new();
    scenario_files(&common::examples_dir(), &mut files);
    assert!(files.len() >= 13, "{files:?}");
    let mut trees_with_scenarios = Vec::new();
    for file in &files {
        let scenario = Scenario::load(file, &Registry::new())
            .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let run = scenario.run();
        assert_eq!(run.check(&scenario.expect), [], "{}", file.display());
        let golden = scenario.golden.as_ref().unwrap();
        if golden.exists() {
            assert_eq!(
                std::fs::read_to_string(golden).unwrap(),
                run.timeline,
                "{}",
                golden.display()
            );
        } else {
            assert!(
                scenario.checks_something(),
                "{} can never fail",
                file.display()
            );
        }
        trees_with_scenarios.push(PathBuf::from(&scenario.tree_name));
    }
    let examples = common::examples_dir();
    for dir in [
        examples.clone(),
        examples.join("long"),
        examples.join("trim"),
        examples.join("chatbot"),
        examples.join("guard"),
    ] {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            let data = name.contains("inputs")
                || name.contains(".db.")
                || name.ends_with("-db.edn")
                || name.contains("trims");
            if name.ends_with(".edn") && !name.ends_with(".test.edn") && !data {
                assert!(
                    trees_with_scenarios.contains(&path),
                    "{} has no scenario",
                    path.display()
                );
            }
        }
    }
}

#[test]
fn a_scenario_built_in_code_gives_its_timeline_for_a_snapshot() {
    let tree = compile_file(
        common::examples_dir().join("long/guard.edn"),
        &Registry::new(),
    )
    .unwrap();
    let scenario = Scenario::new("guard", tree)
        .ticks(4)
        .input(3, map("{:alarm true}"))
        .expect(Expectation {
            tick: 3,
            status: Some(Status::Success),
            db: map("{:action :raise-the-alarm}"),
        });
    let run = scenario.run();
    assert_eq!(run.check(&scenario.expect), []);
    insta::with_settings!({snapshot_path => "../../snapshots", prepend_module_to_snapshot => true}, {
        insta::assert_snapshot!(run.timeline);
    });
}

#[test]
fn mismatches_name_the_tick_the_key_and_both_values() {
    let tree = compile_str("t.edn", "[:inc! {:key :n}]", &Registry::new()).unwrap();
    let run = Scenario::new("n", tree).ticks(2).run();
    let expect = [
        Expectation {
            tick: 2,
            status: Some(Status::Failure),
            db: map("{:n 2 :m nil}"),
        },
        Expectation {
            tick: 1,
            status: None,
            db: map("{:n 5 :gone 1}"),
        },
        Expectation {
            tick: 3,
            status: None,
            db: map("{}"),
        },
    ];
    assert_eq!(
        run.check(&expect),
        [
            Mismatch::Status {
                tick: 2,
                expected: Status::Failure,
                actual: Status::Success,
                error: None
            },
            Mismatch::Db {
                tick: 1,
                key: Value::keyword("n"),
                expected: Value::Int(5),
                actual: Some(Value::Int(1))
            },
            Mismatch::Db {
                tick: 1,
                key: Value::keyword("gone"),
                expected: Value::Int(1),
                actual: None
            },
            Mismatch::NoTick { tick: 3 },
        ]
    );
}

const GUARD: &str = "[:selector {:id :guard}
  [:sequence {:id :chase} [:guard/sees? {:range 3}] [:define! {:key :action :val :chase}]]
  [:sequence [:patrol {:speed 2} [:success]] [:define! {:key :action :val :patrol}]]]";

/// A stub by an unknown node type: a sequence by tick whose last step repeats.
#[test]
fn a_stub_by_unknown_node_type_follows_its_sequence_then_repeats_the_last() {
    let mut stubs = Stubs::new();
    stubs.insert(
        Value::keyword("guard/sees?"),
        Stub::from_value(&read_value("[:failure :success :failure]").unwrap()).unwrap(),
    );
    stubs.insert(Value::keyword("patrol"), Stub::status(Status::Success));
    let tree = stubs
        .compile(&read_value(GUARD).unwrap(), &Registry::new())
        .unwrap();
    let run = Scenario::new("guard", tree).stubs(stubs).ticks(5).run();
    let actions: Vec<String> = (1..=5)
        .map(|n| {
            run.record
                .db_after(n)
                .get(&Value::keyword("action"))
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(
        actions,
        [":patrol", ":chase", ":patrol", ":patrol", ":patrol"]
    );
    // The stubbed nodes keep their node types and ids in the record.
    let nodes = &run.record.trees[0].nodes;
    assert_eq!(nodes[2].node_type.to_string(), ":guard/sees?");
    assert_eq!(nodes[2].id, Value::string("chase.0"));
}

/// A stub by derived id replaces one node (its children stay, unticked), and
/// the ids of every other node are those of the tree without stubs.
#[test]
fn a_stub_by_id_replaces_one_node_and_keeps_every_id() {
    let tree_data = read_value("[:sequence [:selector [:failure] [:define! {:key :a :val 1}]] [:define! {:key :b :val 2}] [:define! {:key :c :val 3}]]").unwrap();
    let plain = aido::compile(&tree_data, &Registry::new()).unwrap();
    let mut stubs = Stubs::new();
    stubs.insert(
        Value::string("0.0"),
        Stub::from_value(&read_value("{:status :success :db {:stubbed true}}").unwrap()).unwrap(),
    );
    let tree = stubs.compile(&tree_data, &Registry::new()).unwrap();
    let ids = |t: &aido::Tree| {
        t.iter()
            .map(|n| t.node_id(n).unwrap().to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(ids(&tree), ids(&plain));
    let run = Scenario::new("s", tree).stubs(stubs).run();
    assert_eq!(run.db.to_string(), "{:stubbed true, :b 2, :c 3}");
    let visited: Vec<String> = run
        .record
        .tick(0)
        .unwrap()
        .visits
        .iter()
        .map(|v| v.id.to_string())
        .collect();
    assert_eq!(visited, ["\"0\"", "\"0.0\"", "\"0.1\"", "\"0.2\""]);
}

/// A deferred completion runs, counting in node memory; a halt starts it over.
#[test]
fn a_deferred_stub_runs_then_completes_and_starts_over_when_halted() {
    let tree_data = read_value("[:sequence [:invert [:test? {:key :stop :oper = :val true}]] [:fetch {:id :job}] [:inc! {:key :done}]]").unwrap();
    let mut stubs = Stubs::new();
    stubs.insert(
        Value::keyword("job"),
        Stub::from_value(&read_value("{:status :success :after 2 :db {:fetched true}}").unwrap())
            .unwrap(),
    );
    let tree = stubs.compile(&tree_data, &Registry::new()).unwrap();
    let run = Scenario::new("job", tree.clone())
        .stubs(stubs.clone())
        .ticks(4)
        .run();
    let statuses: Vec<Status> = run.record.ticks().map(|t| t.status).collect();
    assert_eq!(
        statuses,
        [
            Status::Running,
            Status::Running,
            Status::Success,
            Status::Running
        ]
    );
    assert_eq!(
        run.record.db_after(3).get(&Value::keyword("fetched")),
        Some(&Value::Bool(true))
    );

    // Stopped on tick 2: the job is halted; on tick 3 it starts again from nothing.
    let run = Scenario::new("job", tree)
        .stubs(stubs)
        .ticks(5)
        .input(2, map("{:stop true}"))
        .input(3, map("{:stop false}"))
        .run();
    let statuses: Vec<Status> = run.record.ticks().map(|t| t.status).collect();
    assert_eq!(
        statuses,
        [
            Status::Running,
            Status::Failure,
            Status::Running,
            Status::Running,
            Status::Success
        ]
    );
    assert_eq!(
        run.record
            .tick(1)
            .unwrap()
            .halted()
            .cloned()
            .collect::<Vec<_>>(),
        [Value::keyword("job")]
    );
}

#[test]
fn a_stubbed_error_ends_the_tick_in_error_with_its_message() {
    let stubs = Stubs::from_value(
        &read_value("{:boom {:status :error :message \"the network is down\"}}").unwrap(),
    )
    .unwrap();
    let tree = stubs
        .compile(
            &read_value("[:sequence [:boom]]").unwrap(),
            &Registry::new(),
        )
        .unwrap();
    let run = Scenario::new("e", tree).stubs(stubs).run();
    assert_eq!(run.record.tick(0).unwrap().status, Status::Error);
    assert!(
        run.timeline.contains("the network is down"),
        "{}",
        run.timeline
    );
}

#[test]
fn bad_stubs_are_errors_of_their_kind() {
    let kind = |text: &str| {
        Stubs::from_value(&read_value(text).unwrap())
            .unwrap_err()
            .kind
    };
    assert_eq!(kind("[:success]"), StubErrorKind::NotAMap);
    assert_eq!(kind("{:x :maybe}"), StubErrorKind::BadStub);
    assert_eq!(kind("{:x []}"), StubErrorKind::BadStub);
    assert_eq!(
        kind("{:x {:status :success :after -1}}"),
        StubErrorKind::BadStub
    );
    assert_eq!(
        kind("{:x {:status :success :then :x}}"),
        StubErrorKind::BadStub
    );
    assert_eq!(kind("{:x {:db {:a 1}}}"), StubErrorKind::BadStub);

    let stubs = Stubs::from_value(&read_value("{:nowhere :success}").unwrap()).unwrap();
    match stubs.compile(&read_value("[:success]").unwrap(), &Registry::new()) {
        Err(StubbedCompileError::Stub(e)) => assert_eq!(e.kind, StubErrorKind::NoMatch),
        other => panic!("{other:?}"),
    }
    // A stub by type does not make a tree with other unknown types compile.
    match stubs.compile(&read_value("[:nowhere/else]").unwrap(), &Registry::new()) {
        Err(StubbedCompileError::Compile(d)) => assert_eq!(d.items[0].code, Code::UnknownNodeType),
        other => panic!("{other:?}"),
    }
}

const MODEL: &str = "{:nodes {:guard/sees? {:doc \"Is the intruder within range?\" :children 0
                       :options {:range {:type :int :required true :doc \"In steps\"} :mode {:type :keyword}}}
         :guard/patrol {:children :some}
         :guard/pick {:children [1 2] :options {:how {:type :one-of :values [:fast :slow]}}}}
 :functions {dist {:arity 2 :doc \"Grid distance\"}}}";

#[test]
fn a_tree_using_model_declared_nodes_is_checked_like_one_using_built_ins() {
    let mut registry = Registry::new();
    registry.declare_model_text("game.edn", MODEL).unwrap();
    let ok = "[:guard/patrol [:guard/sees? {:range [:aido/fn dist 1 2] :mode :near}] [:guard/pick {:how :fast} [:success]]]";
    assert!(compile_str("t.edn", ok, &registry).is_ok());
    let bad = "[:guard/patrol [:guard/see? {:range 1}] [:guard/sees? {:range \"far\"}] [:guard/sees?] [:guard/sees? {:range 1 :mod :x}] [:guard/pick {:how :medium} [:success]] [:guard/pick] [:define! {:key :d :val [:aido/fn dist 1]}]]";
    let codes: Vec<Code> = compile_str("t.edn", bad, &registry)
        .unwrap_err()
        .items
        .iter()
        .map(|d| d.code)
        .collect();
    assert_eq!(
        codes,
        [
            Code::UnknownNodeType,
            Code::BadOptionValue,
            Code::MissingOption,
            Code::UnknownOption,
            Code::BadOptionValue,
            Code::Arity,
            Code::BadDynamic,
        ]
    );
    // Run without a stub, a declared node says it has no behaviour.
    let tree = compile_str("t.edn", "[:guard/sees? {:range 1}]", &registry).unwrap();
    let tick = aido::run_tick(Value::map(), &tree);
    assert_eq!(tick.status, Status::Error);
    assert!(
        tick.error
            .unwrap()
            .message
            .contains("declared in a node model")
    );
}

#[test]
fn a_registry_writes_its_model_and_reads_it_back() {
    let mut registry = Registry::new();
    registry.declare_model_text("game.edn", MODEL).unwrap();
    let model = registry.model();
    insta::with_settings!({snapshot_path => "../../snapshots", prepend_module_to_snapshot => true}, {
        insta::assert_snapshot!(aido::model::model_text(&model));
    });
    let mut again = Registry::new();
    again
        .declare_model(&read_value(&aido::model::model_text(&model)).unwrap())
        .unwrap();
    assert_eq!(again.model(), model);
    // The reference holds the built-ins too, each with its documentation.
    let reference = registry.reference();
    let selector = reference
        .get(&Value::keyword("nodes"))
        .unwrap()
        .get(&Value::keyword("selector"))
        .unwrap();
    assert!(selector.get(&Value::keyword("doc")).is_some());
}

#[test]
fn bad_models_are_errors_of_their_kind_at_their_place() {
    let errors = |text: &str| {
        let e = Registry::new()
            .declare_model_text("m.edn", text)
            .unwrap_err();
        e.errors
            .iter()
            .map(|err| (err.kind, e.line_col(err).map(|lc| lc.to_string())))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        errors("[]"),
        [(ModelErrorKind::NotAMap, Some("1:1".to_owned()))]
    );
    assert_eq!(
        errors("{:nodez {}}"),
        [(ModelErrorKind::UnknownKey, Some("1:2".to_owned()))]
    );
    assert_eq!(
        errors(
            "{:nodes {:a/b {:children :many\n :options {:x {:type :integer} :y :bool :z {:required true}}}\n :selector {}\n \"c\" {}}}"
        ),
        [
            (ModelErrorKind::BadArity, Some("1:26".to_owned())),
            (ModelErrorKind::BadOptionType, Some("2:22".to_owned())),
            (ModelErrorKind::BadOptionType, Some("2:44".to_owned())),
            (ModelErrorKind::Builtin, Some("3:2".to_owned())),
            (ModelErrorKind::BadName, Some("4:2".to_owned())),
        ]
    );
    // A model may replace a standard function, as the application it
    // describes may (aido check warns): no error.
    let mut replaced = Registry::new();
    replaced
        .declare_model_text("m.edn", "{:functions {+ {}}}")
        .unwrap();
    assert_eq!(
        replaced
            .replaced_standard_functions()
            .iter()
            .map(|f| f.name().as_str())
            .collect::<Vec<_>>(),
        ["+"]
    );
    assert_eq!(
        errors("{:nodes"),
        [(ModelErrorKind::Read, Some("1:1".to_owned()))]
    );
    // Options every node takes from the library cannot be redeclared.
    assert_eq!(
        errors("{:nodes {:a/b {:options {:id :string\n :range :int :aido/pre :any}}}}"),
        [
            (ModelErrorKind::ReservedOption, Some("1:26".to_owned())),
            (ModelErrorKind::ReservedOption, Some("2:14".to_owned())),
        ]
    );
}

#[test]
fn a_model_never_replaces_a_registered_node_type() {
    let mut registry = Registry::new();
    registry
        .node_type(aido::extend::NodeType::new("guard/sees?").tick(|_| Ok(Status::Success)))
        .unwrap();
    registry.declare_model_text("game.edn", MODEL).unwrap();
    let tree = compile_str("t.edn", "[:guard/sees?]", &registry).unwrap();
    assert_eq!(aido::run_tick(Value::map(), &tree).status, Status::Success);
}

#[test]
fn coverage_names_nodes_never_ticked_and_statuses_never_seen() {
    let tree = compile_str("c.edn", "[:selector\n [:present? {:key :a}]\n [:sequence [:present? {:key :b}] [:define! {:key :c :val 1}]]\n [:success]]", &Registry::new()).unwrap();
    let mut coverage = Coverage::new();
    for db in ["{:a 1}", "{}"] {
        let run = Scenario::new("c", tree.clone())
            .db(read_value(db).unwrap())
            .run();
        coverage.add("c.edn", &run.record);
    }
    insta::with_settings!({snapshot_path => "../../snapshots", prepend_module_to_snapshot => true}, {
        insta::assert_snapshot!(coverage.report());
    });
}

#[test]
fn chat_coverage_counts_patterns_pool_members_and_deferred_answers() {
    let tree = compile_str(
        "bot.edn",
        "[:selector\n [:sequence [:matches? {:id :hi? :key :input :regex \"hi\"}]\n  [:choose-each {:id :pool}\n   [:emit! {:key :replies :val 1}]\n   [:failure]\n   [:emit! {:key :replies :val 3}]]]\n [:matches? {:id :bye? :key :input :regex \"bye\"}]\n [:sequence [:test? {:key :input :oper = :val \"ask\"}] [:defer {:id :ask :action :svc/ask}]]]",
        &Registry::new(),
    )
    .unwrap();
    let mut coverage = Coverage::new();
    // Three greetings from a pool of three (each member is picked once,
    // one of them fails), then a deferred action answered with failure.
    let run = Scenario::new("c", tree)
        .seed(1)
        .ticks(5)
        .input(1, map("{:input \"hi\"}"))
        .input(4, map("{:input \"ask\"}"))
        .input(
            5,
            map("{:aido/results {:ask {:request 1 :status :failure}}}"),
        )
        .run();
    coverage.add("bot.edn", &run.record);
    let tree = &coverage.trees[0];
    let chat = tree.chat();
    let gaps: Vec<(Value, ChatGapKind)> = chat
        .gaps
        .iter()
        .map(|g| (tree.nodes[g.node].id.clone(), g.kind))
        .collect();
    assert_eq!(
        gaps,
        [
            (Value::string("pool.1"), ChatGapKind::NeverSaid),
            (Value::keyword("bye?"), ChatGapKind::NeverMatched),
            (Value::keyword("ask"), ChatGapKind::NeverSucceeded),
        ]
    );
    assert_eq!(
        (
            chat.patterns,
            chat.members,
            chat.answered_success,
            chat.answered_failure
        ),
        ((1, 2), (2, 3), (0, 1), (1, 1))
    );
    // Each gap is located: file, line and column of its node.
    let report = chat.report(tree);
    assert!(
        report.contains(
            "  bot.edn:5:4: :failure \"pool.1\": never said (member 2 of :choose-each :pool, \
             picked, never succeeded)\n"
        ),
        "{report}"
    );
    assert!(
        report.contains("  bot.edn:7:2: :matches? :bye?: pattern \"bye\" never matched\n"),
        "{report}"
    );
    assert!(
        report
            .contains("  bot.edn:8:55: :defer :ask: action :svc/ask never answered with success\n"),
        "{report}"
    );
}

#[test]
fn scenario_files_with_mistakes_are_located_errors() {
    let dir = common::examples_dir();
    let error = |text: &str| {
        let e = Scenario::parse("s.test.edn", text, &dir, &Registry::new()).unwrap_err();
        (e.kind, e.place)
    };
    assert_eq!(
        error("{:tree \"npc.edn\" :tiks 3}"),
        (ScenarioErrorKind::UnknownKey, "s.test.edn:1:18".to_owned())
    );
    assert_eq!(
        error("{:tree \"npc.edn\"\n :ticks 0}"),
        (ScenarioErrorKind::BadValue, "s.test.edn:2:9".to_owned())
    );
    assert_eq!(
        error("{:tree \"npc.edn\" :ticks 2 :expect [{:tick 3}]}"),
        (ScenarioErrorKind::BadValue, "s.test.edn:1:36".to_owned())
    );
    assert_eq!(
        error("{:tree \"npc.edn\" :expect [{:tick 1 :status :fine}]}"),
        (ScenarioErrorKind::BadValue, "s.test.edn:1:44".to_owned())
    );
    assert_eq!(
        error("{:tree \"npc.edn\" :inputs [1]}"),
        (ScenarioErrorKind::BadValue, "s.test.edn:1:27".to_owned())
    );
    assert_eq!(
        error("{:tree \"npc.edn\" :dt -0.5}"),
        (ScenarioErrorKind::BadValue, "s.test.edn:1:22".to_owned())
    );
    assert_eq!(
        error("{:tree \"npc.edn\" :stubs {:nobody :success}}"),
        (ScenarioErrorKind::Stub, "s.test.edn:1:26".to_owned())
    );
    assert_eq!(error("{:tree \"nothere.edn\"}").0, ScenarioErrorKind::Io);
    assert_eq!(
        error("{:tree [:selector [:nope]]}").0,
        ScenarioErrorKind::Compile
    );
    // An inline tree's diagnostics point into the scenario file.
    let inline = Scenario::parse(
        "s.test.edn",
        "{:tree [:selector [:nope]]}",
        &dir,
        &Registry::new(),
    )
    .unwrap_err();
    let rendered = inline.diagnostics.unwrap().render();
    assert!(rendered.contains("--> s.test.edn:1:20"), "{rendered}");
    assert_eq!(error("{:tree \"npc.edn\"").0, ScenarioErrorKind::Read);
    assert_eq!(
        error("{:ticks 1}"),
        (ScenarioErrorKind::BadValue, "s.test.edn:1:1".to_owned())
    );
}

#[test]
fn a_scenario_with_a_time_step_moves_the_clock_before_each_tick() {
    let tree = aido::compile_str("w.edn", "[:wait {:seconds 1}]", &Registry::new()).unwrap();
    let run = Scenario::new("w", tree).dt(0.5).ticks(3).run();
    let statuses: Vec<_> = run.record.ticks().map(|t| t.status).collect();
    use aido::Status::{Running, Success};
    assert_eq!(statuses, [Running, Running, Success]);
    assert_eq!(
        run.db.get(&aido::Value::keyword("aido/now")),
        Some(&aido::Value::Float(1.0))
    );
}

#[test]
fn a_golden_diff_starts_at_the_first_tick_that_differs() {
    let tree = compile_file(common::examples_dir().join("npc.edn"), &Registry::new()).unwrap();
    let golden = Scenario::new("npc", tree.clone())
        .db(read_value("{:hunger 7}").unwrap())
        .ticks(4)
        .run()
        .timeline;
    let run = Scenario::new("npc", tree)
        .db(read_value("{:hunger 7 :enemy true :courage 9}").unwrap())
        .ticks(4)
        .run();
    let diff = golden_diff(&golden, &run.timeline).unwrap();
    assert_eq!(
        (diff.tick, diff.node.as_deref(), diff.key.as_deref()),
        (1, Some(":sequence \"0.1\""), Some(":action"))
    );
    assert_eq!(diff.later, 3);
}

/// After a trim the tree is compiled again; the stubs are put back in place
/// on whatever nodes they still name.
#[test]
fn stubs_stay_in_place_after_a_trim() {
    let text = "{:tree [:sequence {:id :main} [:guard/sees?] [:inc! {:id :count :key :n}]]
                 :stubs {:guard/sees? :success}
                 :trims [{:task :more :target :count :not-before 2
                          :replace [:sequence {:id :count} [:guard/sees?] [:inc! {:key :n}] [:inc! {:key :n}]]}]
                 :ticks 3}";
    let scenario = Scenario::parse("t.test.edn", text, Path::new("."), &Registry::new()).unwrap();
    let run = scenario.run();
    let n: Vec<String> = (1..=3)
        .map(|t| {
            run.record
                .db_after(t)
                .get(&Value::keyword("n"))
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(n, ["1", "2", "4"]);
    assert!(run.record.ticks().all(|t| t.status == Status::Success));
    assert_eq!(run.record.trees.len(), 2);
}

#[test]
fn a_run_that_records_too_much_stops_and_says_why() {
    let tree = aido::compile_str(
        "t.edn",
        "[:sequence [:inc! {:key :n}] [:emit! {:key :log :val [:aido/db :n]}]]",
        &Registry::new(),
    )
    .unwrap();
    let mut scenario = Scenario::new("log", tree).ticks(1000);
    scenario.max_recorded = 5_000;
    let run = scenario.run();
    let why = run.stopped.as_deref().expect("stopped");
    assert!(why.contains("recorded more than 5000 values"), "{why}");
    let ran = run.record.n_ticks();
    assert!(ran > 10 && ran < 1000, "{ran}");
    // Within the bound the run goes to its end.
    scenario.max_recorded = aido::scenario::MAX_RECORDED;
    assert!(scenario.run().stopped.is_none());
}
