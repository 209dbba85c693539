//! Sample inputs on nodes (`:aido/samples`) and `aido check --samples`:
//! through the library (each kind of problem, with its node and place) and
//! through the binary (one line a problem, the summary, exit codes).
#![allow(clippy::panic, clippy::expect_used, clippy::unwrap_used)]

use crate::common;

use std::path::Path;
use std::process::Command;

use aido::samples::{SampleErrorKind, SampleOptions, check_samples, node_samples};
use aido::{Registry, Status, Value, compile_file, compile_str, read_value, run_tick};
use common::Run;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn aido(args: &[&str]) -> Run {
    Run::of(
        Command::new(env!("CARGO_BIN_EXE_aido"))
            .current_dir(root())
            .args(args),
    )
}

macro_rules! snapshot {
    ($value:expr) => {
        insta::with_settings!({snapshot_path => "../../snapshots", prepend_module_to_snapshot => true}, {
            insta::assert_snapshot!($value);
        });
    };
}

#[test]
fn samples_are_kept_as_data_and_never_read_by_a_tick() {
    let text = r#"[:matches? {:key :input :regex "^hi" :aido/samples ["hi there" "hello"]}]"#;
    let tree = compile_str("t.edn", text, &Registry::new()).unwrap();
    assert_eq!(
        node_samples(&tree, tree.root()),
        Some(vec![Value::string("hi there"), Value::string("hello")])
    );
    // A tick does not see them: with no input the node fails, as without.
    let tick = run_tick(Value::map(), &tree);
    assert_eq!(tick.status, Status::Failure);
    let plain = compile_str(
        "t.edn",
        r#"[:matches? {:key :input :regex "^hi"}]"#,
        &Registry::new(),
    )
    .unwrap();
    assert_eq!(tick.db, run_tick(Value::map(), &plain).db);
}

#[test]
fn each_sample_must_make_its_node_succeed_and_not_be_taken_earlier() {
    let tree = compile_file(root().join("tests/data/samples/bot.edn"), &Registry::new()).unwrap();
    let report = check_samples(&tree, &Value::map(), &SampleOptions::default());
    assert_eq!((report.checked, report.passed), (8, 3));
    assert!(report.has_errors());
    let problems: Vec<(SampleErrorKind, Value, Value, String)> = report
        .problems
        .iter()
        .map(|p| {
            let node = p.node.unwrap();
            (
                p.kind,
                tree.node_id(node).unwrap().clone(),
                p.sample.clone().unwrap(),
                p.place.clone(),
            )
        })
        .collect();
    let at = |line_col: &str| format!("{}:{line_col}", tree.source().unwrap().name());
    assert_eq!(
        problems,
        [
            (
                SampleErrorKind::Failed,
                Value::keyword("bye?"),
                Value::string("Goodbye!"),
                at("6:3")
            ),
            (
                SampleErrorKind::Taken,
                Value::keyword("hello?"),
                Value::string("hi, bye"),
                at("11:3")
            ),
            (
                SampleErrorKind::Failed,
                Value::keyword("hello?"),
                Value::string("howdy"),
                at("11:3")
            ),
            (
                SampleErrorKind::Failed,
                Value::keyword("more?"),
                Value::string("tell me more"),
                at("17:3")
            ),
            (
                SampleErrorKind::Error,
                Value::keyword("number?"),
                Value::Int(42),
                at("20:2")
            ),
        ]
    );
    let codes: Vec<&str> = report.problems.iter().map(|p| p.kind.code()).collect();
    assert_eq!(codes, ["I0001", "I0002", "I0001", "I0001", "I0003"]);

    // With the topic set in the db, the third branch is reached.
    let db = read_value("{:topic :time}").unwrap();
    let report = check_samples(&tree, &db, &SampleOptions::default());
    assert!(
        !report
            .problems
            .iter()
            .any(|p| p.sample == Some(Value::string("tell me more"))),
        "{:?}",
        report.problems
    );
}

#[test]
fn the_input_key_is_an_option_and_a_tree_without_samples_is_a_warning() {
    let tree = compile_str(
        "t.edn",
        r#"[:matches? {:key :text :regex "^hi" :aido/samples ["hi"]}]"#,
        &Registry::new(),
    )
    .unwrap();
    let text = SampleOptions::default().input_key(Value::keyword("text"));
    let report = check_samples(&tree, &Value::map(), &text);
    assert_eq!(
        (report.checked, report.passed, report.problems.len()),
        (1, 1, 0)
    );
    let report = check_samples(&tree, &Value::map(), &SampleOptions::default());
    assert_eq!(report.problems[0].kind, SampleErrorKind::Failed);

    let tree = compile_str("t.edn", "[:success]", &Registry::new()).unwrap();
    let report = check_samples(&tree, &Value::map(), &SampleOptions::default());
    assert_eq!(report.checked, 0);
    assert!(!report.has_errors());
    assert_eq!(
        report.problems.iter().map(|p| p.kind).collect::<Vec<_>>(),
        [SampleErrorKind::NoSamples]
    );
    assert!(report.problems[0].kind.is_warning());
}

#[test]
fn check_samples_reports_one_line_a_problem_and_exits_1() {
    let run = aido(&["check", "--samples", "tests/data/samples/bot.edn"]);
    assert_eq!(run.code, 1);
    assert_eq!(
        run.stdout,
        "ok: tests/data/samples/bot.edn (12 nodes)\nsamples: tests/data/samples/bot.edn: 3 of 8 passed\n"
    );
    snapshot!(run.stderr);
}

#[test]
fn check_samples_passes_with_the_example_db_and_the_input_key() {
    let args = [
        "check",
        "--samples",
        "tests/data/samples/topic.edn",
        "--db",
        "tests/data/samples/topic.db.edn",
        "--input-key",
        ":text",
    ];
    let run = aido(&args);
    assert_eq!(
        (run.code, run.stdout.as_str(), run.stderr.as_str()),
        (
            0,
            "ok: tests/data/samples/topic.edn (5 nodes)\nsamples: tests/data/samples/topic.edn: 3 of 3 passed\n",
            ""
        )
    );
    // Under the default :input, the tree reads nothing: every sample fails
    // (and :text, read and never written, is the warning W0001).
    let run = aido(&args[..5]);
    assert_eq!(run.code, 1);
    let samples: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.starts_with("error[I"))
        .collect();
    assert_eq!(samples.len(), 3, "{}", run.stderr);
    assert!(samples.iter().all(|l| l.starts_with("error[I0001]: ")));
}

#[test]
fn check_samples_flags_are_checked() {
    // A tree without samples: a warning, which --deny-warnings makes fatal.
    let run = aido(&["check", "--samples", "examples/npc.edn"]);
    assert_eq!(run.code, 0);
    assert!(
        run.stderr.starts_with("warning[I0004]: examples/npc.edn: "),
        "{}",
        run.stderr
    );
    let run = aido(&["check", "--samples", "--deny-warnings", "examples/npc.edn"]);
    assert_eq!(run.code, 1);
    // A malformed key, and --input-key without --samples, are refused.
    let run = aido(&[
        "check",
        "--samples",
        "--input-key",
        "a b",
        "tests/data/samples/bot.edn",
    ]);
    assert_eq!(
        (run.code, run.stderr.as_str()),
        (
            2,
            "aido: --input-key: expected a keyword such as :input, got `a b`\n"
        )
    );
    let run = aido(&["check", "--input-key", ":text", "examples/npc.edn"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    // Without --samples, samples are not tried.
    let run = aido(&["check", "tests/data/samples/bot.edn"]);
    assert_eq!(
        (run.code, run.stdout.as_str()),
        (0, "ok: tests/data/samples/bot.edn (12 nodes)\n")
    );
}
