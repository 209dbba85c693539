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
