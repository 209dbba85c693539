//! `aido run` for a designer scripting a run: inputs as JSON, the tick count
//! taken from the inputs, a nil input that removes a key and `--strict`.
//! Each runs the real binary.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::Run;
use aido::{Value, read_value};

macro_rules! snapshot {
    ($name:expr, $value:expr) => {
        insta::with_settings!({snapshot_path => "../../snapshots", prepend_module_to_snapshot => true}, {
            insta::assert_snapshot!($name, $value);
        });
    };
}

/// A fresh folder under the system's temp dir, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(test: &str) -> Scratch {
        let dir =
            std::env::temp_dir().join(format!("aido-authoring-{}-{test}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    fn write(&self, name: &str, text: &str) {
        std::fs::write(self.0.join(name), text).unwrap();
    }

    fn aido(&self, args: &[&str]) -> Run {
        Run::of(
            Command::new(env!("CARGO_BIN_EXE_aido"))
                .args(args)
                .current_dir(&self.0),
        )
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Each stdout line's `:tick` and `:db`.
fn ticks(run: &Run) -> Vec<(i64, Value)> {
    run.stdout
        .lines()
        .map(|l| {
            let line = read_value(l).unwrap();
            let n = line
                .get(&Value::keyword("tick"))
                .and_then(Value::as_int)
                .unwrap();
            (n, line.get(&Value::keyword("db")).cloned().unwrap())
        })
        .collect()
}

const ECHO: &str =
    "[:sequence [:present? {:key :said}] [:emit! {:key :heard :val [:aido/db :said]}]]";

#[test]
fn json_inputs_set_the_tick_count_and_nil_removes_a_key() {
    let dir = Scratch::new("json-inputs");
    dir.write("echo.edn", ECHO);
    dir.write(
        "inputs.json",
        r#"[{"said": "hi"}, null, {"said": null}, {"said": "bye"}]"#,
    );
    let run = dir.aido(&["run", "echo.edn", "--inputs", "inputs.json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let ticks = ticks(&run);
    // Four ticks without --ticks: one an input.
    assert_eq!(ticks.len(), 4);
    let said: Vec<String> = ticks
        .iter()
        .map(|(_, db)| {
            db.get(&Value::keyword("said"))
                .map_or("-".into(), |v| v.to_string())
        })
        .collect();
    // Tick 3's nil removed :said, so the tree heard nothing then.
    assert_eq!(said, ["\"hi\"", "\"hi\"", "-", "\"bye\""]);
    assert_eq!(
        ticks[3]
            .1
            .get(&Value::keyword("heard"))
            .unwrap()
            .to_string(),
        r#"["hi" "hi" "bye"]"#
    );
    // --ticks still wins.
    let two = dir.aido(&["run", "echo.edn", "--inputs", "inputs.json", "--ticks", "2"]);
    assert_eq!(self::ticks(&two).len(), 2);
}

#[test]
fn a_json_inputs_file_that_is_not_an_array_is_refused() {
    let dir = Scratch::new("json-inputs-bad");
    dir.write("echo.edn", ECHO);
    dir.write("inputs.json", r#"{"said": "hi"}"#);
    let run = dir.aido(&["run", "echo.edn", "--inputs", "inputs.json"]);
    assert_eq!(run.code, 2);
    assert_eq!(
        run.stderr.trim_end(),
        "aido: inputs.json: the inputs must be a vector of maps or nils, found a map"
    );
    dir.write("inputs.json", r#"[{"said": "hi"}, 3]"#);
    let run = dir.aido(&["run", "echo.edn", "--inputs", "inputs.json"]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr
            .contains("input 1 (merged before tick 2) must be a map or nil"),
        "{}",
        run.stderr
    );
}

#[test]
fn strict_exits_1_when_a_tick_ends_in_error_after_running_every_tick() {
    let dir = Scratch::new("strict");
    dir.write("inc.edn", "[:inc! {:key :n}]");
    dir.write("inputs.edn", "[nil {:n \"x\"} {:n 5}]");
    let lax = dir.aido(&["run", "inc.edn", "--inputs", "inputs.edn"]);
    assert_eq!(lax.code, 0, "{}", lax.stderr);
    let strict = dir.aido(&[
        "run",
        "inc.edn",
        "--inputs",
        "inputs.edn",
        "--strict",
        "--save",
        "out.edn",
    ]);
    assert_eq!(strict.code, 1, "{}", strict.stderr);
    // Every tick ran and printed, the error was reported, the db was saved.
    assert_eq!(ticks(&strict).len(), 3);
    assert!(
        strict.stderr.contains("tick 2 ended in error"),
        "{}",
        strict.stderr
    );
    assert!(dir.path().join("out.edn").exists());
    let clean = dir.aido(&["run", "inc.edn", "--ticks", "2", "--strict"]);
    assert_eq!(clean.code, 0, "{}", clean.stderr);
}

#[test]
fn a_resumed_run_numbers_its_ticks_on_from_the_save() {
    let dir = Scratch::new("resume");
    dir.write("inc.edn", "[:inc! {:key :n}]");
    dir.write("other.edn", "[:inc! {:key :m}]");
    let first = dir.aido(&["run", "inc.edn", "--ticks", "3", "--save", "s.edn"]);
    assert_eq!(first.code, 0, "{}", first.stderr);
    let numbers = |run: &Run| ticks(run).into_iter().map(|(n, _)| n).collect::<Vec<_>>();
    assert_eq!(numbers(&first), [1, 2, 3]);
    // Only the save carries the count.
    assert_eq!(
        std::fs::read_to_string(dir.path().join("s.edn")).unwrap(),
        "{:n 3, :aido/tick 3}\n"
    );
    let resumed = dir.aido(&[
        "run", "inc.edn", "--db", "s.edn", "--ticks", "2", "--save", "s.edn",
    ]);
    assert_eq!(resumed.code, 0, "{}", resumed.stderr);
    assert_eq!(
        resumed.stdout,
        "{:tick 4, :status :success, :db {:n 4}}\n{:tick 5, :status :success, :db {:n 5}}\n"
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("s.edn")).unwrap(),
        "{:n 5, :aido/tick 5}\n"
    );
    // The pretty format and the error lines number on too; a reload is
    // before the tick of that number.
    let pretty = dir.aido(&[
        "run",
        "other.edn",
        "--db",
        "s.edn",
        "--ticks",
        "2",
        "--format",
        "pretty",
        "--reload",
        "7=inc.edn",
    ]);
    assert_eq!(pretty.code, 0, "{}", pretty.stderr);
    let heads: Vec<&str> = pretty
        .stdout
        .lines()
        .filter(|l| l.starts_with("tick "))
        .collect();
    assert_eq!(heads, ["tick 6: success", "tick 7: success"]);
    assert!(pretty.stdout.contains("~ :n 5 -> 6"), "{}", pretty.stdout);
    let passed = dir.aido(&["run", "inc.edn", "--db", "s.edn", "--reload", "5=other.edn"]);
    assert_eq!(passed.code, 2);
    assert_eq!(
        passed.stderr.trim_end(),
        "aido: --reload: 5=other.edn: the run goes on from the save after tick 5, so tick 5 has passed"
    );
    dir.write("bad.edn", "{:n 1 :aido/tick \"three\"}");
    let bad = dir.aido(&["run", "inc.edn", "--db", "bad.edn"]);
    assert_eq!(bad.code, 2);
    assert_eq!(
        bad.stderr.trim_end(),
        "aido: bad.edn: `:aido/tick` is how many ticks the save has had, a whole number 0 or more; found a string `\"three\"`"
    );
    // A db written by hand, without the count, starts at tick 1.
    dir.write("hand.edn", "{:n 10}");
    let hand = dir.aido(&["run", "inc.edn", "--db", "hand.edn"]);
    assert_eq!(hand.stdout, "{:tick 1, :status :success, :db {:n 11}}\n");
}

#[test]
fn show_puts_options_and_doc_in_graph_labels_and_takes_a_node_model() {
    let dir = Scratch::new("show");
    dir.write(
        "tree.edn",
        "[:sequence {:doc \"Guard \\\"the\\\" door.\"}\n [:game/sees? {:range 3}]\n [:define! {:key :action :val :chase :doc \"Run after them.\"}]]",
    );
    dir.write(
        "model.edn",
        "{:nodes {:game/sees? {:doc \"Whether an intruder is in range.\" :children 0 :options {:range {:type :int}}}}}",
    );
    let unknown = dir.aido(&["show", "tree.edn"]);
    assert_eq!(unknown.code, 1);
    assert!(
        unknown.stderr.contains("unknown node type `:game/sees?`"),
        "{}",
        unknown.stderr
    );

    let dot = dir.aido(&[
        "show",
        "tree.edn",
        "--nodes",
        "model.edn",
        "--format",
        "dot",
    ]);
    assert_eq!(dot.code, 0, "{}", dot.stderr);
    snapshot!("show_dot_options_and_doc", dot.stdout);
    let mermaid = dir.aido(&[
        "show",
        "tree.edn",
        "--nodes",
        "model.edn",
        "--format",
        "mermaid",
    ]);
    assert_eq!(mermaid.code, 0, "{}", mermaid.stderr);
    snapshot!("show_mermaid_options_and_doc", mermaid.stdout);
    let text = dir.aido(&["show", "tree.edn", "--nodes", "model.edn"]);
    assert!(
        text.stdout
            .starts_with(":sequence \"0\" {:doc \"Guard \\\"the\\\" door.\"}  ; line 1\n"),
        "{}",
        text.stdout
    );
}

const TYPO_TREE: &str = "[:selector
 [:sequence
  [:present? {:key :intruderr}]
  [:define! {:key :target :val [:db :pos]}]
  [:test? {:key :alarm :oper = :val true}]]
 [:define! {:key :intruder :val [:aido/fn inc [:aido/db :count]]}]]";

#[test]
fn check_warns_with_codes_and_fails_on_warnings_only_when_asked() {
    let dir = Scratch::new("warnings");
    dir.write("guard.edn", TYPO_TREE);
    let run = dir.aido(&["check", "guard.edn"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout, "ok: guard.edn (6 nodes)\n");
    // Without an example db, only the key that looks misspelt is reported
    // (:alarm and :count may come from the host).
    snapshot!("check_warnings", run.stderr);

    let denied = dir.aido(&["check", "guard.edn", "--deny-warnings"]);
    assert_eq!(denied.code, 1);
    assert_eq!(denied.stderr, run.stderr);

    dir.write(
        "clean.edn",
        "[:sequence [:present? {:key :a}] [:define! {:key :a :val [:aido/db :b]}]]",
    );
    let clean = dir.aido(&["check", "clean.edn", "--deny-warnings"]);
    assert_eq!((clean.code, clean.stderr.as_str()), (0, ""));
}

#[test]
fn check_with_an_example_db_reports_every_key_read_that_nothing_provides() {
    let dir = Scratch::new("example-db");
    dir.write("guard.edn", TYPO_TREE);
    dir.write("host.edn", "{:alarm false}");
    let run = dir.aido(&["check", "guard.edn", "--db", "host.edn"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let codes: Vec<&str> = run
        .stderr
        .lines()
        .filter_map(|l| l.strip_prefix("warning[").and_then(|l| l.get(..5)))
        .collect();
    // :intruderr (with its did-you-mean), :count (nothing provides it), the
    // literal vector; :alarm is in the example db.
    assert_eq!(codes, ["W0001", "W0002", "W0001"]);
    assert!(
        run.stderr.contains(
            "`:count` is read here but never written, and the example db does not have it"
        ),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains(":alarm"), "{}", run.stderr);
    dir.write("host.json", r#"{"alarm": false, "count": 2}"#);
    let json = dir.aido(&["check", "guard.edn", "--db", "host.json"]);
    assert!(!json.stderr.contains(":count"), "{}", json.stderr);
    let missing = dir.aido(&["check", "guard.edn", "--db", "nope.edn"]);
    assert_eq!(missing.code, 2);
}

const SCHEMA_MODEL: &str = "{:db {:hunger {:type :int :default 0 :doc \"0 to 10\"}
      :replies {:type [:vector :string]}
      :mood :keyword
      :input :string}}";

#[test]
fn check_holds_constant_writes_and_comparisons_to_the_models_db_schema() {
    let dir = Scratch::new("schema");
    dir.write("model.edn", SCHEMA_MODEL);
    dir.write(
        "npc.edn",
        "[:sequence
 [:define! {:key :hunger :val \"lots\"}]
 [:emit! {:key :replies :val 5}]
 [:inc! {:key :mood}]
 [:test? {:key :hunger :oper > :val \"x\"}]
 [:matches? {:key :mood :regex \"ok\"}]
 [:present? {:key :hungry}]
 [:define! {:key :hunger :val 3}]
 [:emit! {:key :replies :val \"fine\"}]
 [:less-than? {:key :hunger :val 8}]
 [:matches? {:key :input :regex \"hi\"}]]",
    );
    let run = dir.aido(&["check", "npc.edn", "--nodes", "model.edn"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    snapshot!("check_schema", run.stderr);
    // Without the model there is no schema to hold the tree to.
    let free = dir.aido(&["check", "npc.edn"]);
    assert_eq!(free.code, 0, "{}", free.stderr);
}

#[test]
fn check_holds_increments_into_and_nested_writes_to_the_schema() {
    let dir = Scratch::new("schema-paths");
    dir.write(
        "model.edn",
        "{:db {:hunger :int :mood :keyword :greeting :string :answer :string :input :string
      :stats {:type [:map-of :keyword :int]}
      :words {:type [:vector :string]}
      :notes {:type :map}}}",
    );
    dir.write(
        "bot.edn",
        "[:sequence {:id :bot}
 [:inc! {:key [:stats :hp]}]
 [:inc! {:key [:words 0]}]
 [:define! {:key [:stats :hp] :val \"full\"}]
 [:define! {:key [:stats \"hp\"] :val 1}]
 [:define! {:key [:words :first] :val \"hi\"}]
 [:define! {:key [:hunger :level] :val 1}]
 [:emit! {:key [:stats :log] :val 1}]
 [:matches? {:key :input :regex \"(h)i\" :into :greeting}]
 [:matches? {:key :input :regex \"hi\" :into :hunger}]
 [:defer {:id :ask :action :svc/ask :into [:mood :text]}]
 [:inc! {:key [:stats :hp]}]
 [:define! {:key [:words 0] :val \"hi\"}]
 [:define! {:key [:notes :any :depth] :val 1}]
 [:matches? {:key :input :regex \"hi\" :into :greeting}]
 [:matches? {:key :input :regex \"(h)i\" :into :words}]
 [:defer {:id :ask2 :action :svc/ask :into :answer}]]",
    );
    let run = dir.aido(&["check", "bot.edn", "--nodes", "model.edn"]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    snapshot!("check_schema_paths", run.stderr);
    // One problem in each of nodes 1 to 9; the first and the last six are right.
    assert_eq!(run.stderr.matches("error[E0013]").count(), 9);
}

#[test]
fn check_holds_an_example_db_to_the_schema() {
    let dir = Scratch::new("schema-db");
    dir.write("model.edn", SCHEMA_MODEL);
    dir.write("tree.edn", "[:inc! {:key :hunger}]");
    dir.write("good.edn", "{:hunger 2 :replies [\"hi\"] :other 1}");
    dir.write("bad.edn", "{:hunger \"x\" :replies [\"hi\" 5] :mood :calm}");
    let good = dir.aido(&[
        "check",
        "tree.edn",
        "--nodes",
        "model.edn",
        "--db",
        "good.edn",
    ]);
    assert_eq!((good.code, good.stderr.as_str()), (0, ""));
    let bad = dir.aido(&[
        "check",
        "tree.edn",
        "--nodes",
        "model.edn",
        "--db",
        "bad.edn",
    ]);
    assert_eq!(bad.code, 1);
    assert_eq!(
        bad.stderr,
        "error[E0013]: bad.edn: `:hunger` does not fit the schema: expected an integer, found string `\"x\"`\n\
         error[E0013]: bad.edn: `:replies` does not fit the schema: element 1: expected a string, found integer `5`\n"
    );
}

#[test]
fn a_db_schema_with_a_bad_type_or_default_is_a_model_error() {
    let dir = Scratch::new("schema-model");
    dir.write("tree.edn", "[:success]");
    dir.write(
        "model.edn",
        "{:db {:hunger {:type :integer} :replies {:type [:list :string]} :mood {:type :keyword :default 3}}}",
    );
    let run = dir.aido(&["check", "tree.edn", "--nodes", "model.edn"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    snapshot!("schema_model_errors", run.stderr);
}
