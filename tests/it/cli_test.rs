//! `aido test`, `aido nodes`, `check --nodes` and `run --stubs` through the
//! binary: every exit code, failing expectations and goldens (the report
//! snapshotted), `--accept`, coverage, node models.
#![allow(clippy::panic, clippy::expect_used, clippy::unwrap_used)]

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::Run;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn aido(dir: &Path, args: &[&str]) -> Run {
    Run::of(
        Command::new(env!("CARGO_BIN_EXE_aido"))
            .current_dir(dir)
            .args(args),
    )
}

/// A fresh folder holding `files` (name, text).
fn folder(name: &str, files: &[(&str, &str)]) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("cli_test")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for (file, text) in files {
        std::fs::write(dir.join(file), text).unwrap();
    }
    dir
}

macro_rules! snapshot {
    ($value:expr) => {
        insta::with_settings!({snapshot_path => "../../snapshots", prepend_module_to_snapshot => true}, {
            insta::assert_snapshot!($value);
        });
    };
}

const COUNT: &str =
    "[:sequence {:id :count} [:inc! {:key :n}] [:less-than? {:id :small? :key :n :val 3}]]";

#[test]
fn every_shipped_scenario_passes_and_the_exit_code_is_0() {
    let run = aido(root(), &["test", "examples/"]);
    assert_eq!((run.code, run.stderr.as_str()), (0, ""));
    snapshot!(run.stdout);
}

#[test]
fn a_failing_expectation_fails_with_exit_code_1_and_says_why() {
    let dir = folder(
        "expect",
        &[
            ("count.edn", COUNT),
            (
                "count.test.edn",
                "{:tree \"count.edn\" :ticks 3 :expect [{:tick 2 :status :success :db {:n 2}} {:tick 3 :status :success :db {:n 4 :m 1}}]}",
            ),
            (
                "fine.test.edn",
                "{:tree \"count.edn\" :expect [{:tick 1 :db {:n 1}}]}",
            ),
        ],
    );
    let run = aido(&dir, &["test"]);
    assert_eq!((run.code, run.stderr.as_str()), (1, ""));
    snapshot!(run.stdout);
}

#[test]
fn a_failing_golden_shows_the_first_tick_node_and_key_that_differ() {
    let dir = folder(
        "golden",
        &[
            ("count.edn", COUNT),
            ("count.test.edn", "{:tree \"count.edn\" :ticks 4}"),
        ],
    );
    let accepted = aido(&dir, &["test", "--accept"]);
    assert_eq!(accepted.code, 0, "{}", accepted.stderr);
    // The tree changes: the counter is allowed one more step.
    std::fs::write(dir.join("count.edn"), COUNT.replace(":val 3", ":val 4")).unwrap();
    let run = aido(&dir, &["test"]);
    assert_eq!((run.code, run.stderr.as_str()), (1, ""));
    snapshot!(run.stdout);
}

#[test]
fn accept_writes_and_updates_golden_timelines_and_says_which() {
    let dir = folder(
        "accept",
        &[
            ("count.edn", COUNT),
            ("count.test.edn", "{:tree \"count.edn\" :ticks 2}"),
        ],
    );
    // Neither :expect nor a golden file: it could never fail, so it fails.
    let run = aido(&dir, &["test"]);
    assert_eq!(run.code, 1);
    assert_eq!(
        run.stdout,
        "FAILED count.test.edn\n  no :expect and no golden timeline count.timeline: this scenario cannot \
         fail; add :expect, or write the golden file with `aido test --accept`\n0 passed, 1 failed\n"
    );

    let run = aido(&dir, &["test", "--accept"]);
    assert_eq!(
        (run.code, run.stdout.as_str()),
        (
            0,
            "ok count.test.edn\n  wrote count.timeline\n1 passed, 0 failed\n"
        )
    );
    let golden = std::fs::read_to_string(dir.join("count.timeline")).unwrap();
    assert!(
        golden.starts_with("tick 1: success\n  + :n 1\n  nodes:\n"),
        "{golden}"
    );

    // Accepting again changes nothing and says nothing.
    let run = aido(&dir, &["test", "--accept"]);
    assert_eq!(run.stdout, "ok count.test.edn\n1 passed, 0 failed\n");

    std::fs::write(dir.join("count.test.edn"), "{:tree \"count.edn\" :ticks 3}").unwrap();
    assert_eq!(aido(&dir, &["test"]).code, 1);
    let run = aido(&dir, &["test", "--accept"]);
    assert_eq!(
        (run.code, run.stdout.as_str()),
        (
            0,
            "ok count.test.edn\n  updated count.timeline\n1 passed, 0 failed\n"
        )
    );
    assert_eq!(aido(&dir, &["test"]).code, 0);
    // No temporary file is left behind.
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["count.edn", "count.test.edn", "count.timeline"]);
}

#[test]
fn malformed_or_unreadable_scenarios_are_located_errors_with_exit_code_2() {
    let dir = folder(
        "malformed",
        &[
            ("count.edn", COUNT),
            (
                "a.test.edn",
                "{:tree \"count.edn\"\n :expect [{:tick 1 :status :fine}]}",
            ),
            ("b.test.edn", "{:tree \"count.edn\" :expect [{:tick 1}"),
            ("c.test.edn", "{:tree \"missing.edn\" :expect [{:tick 1}]}"),
            (
                "d.test.edn",
                "{:tree \"count.edn\" :stubs {:nobody :success} :expect [{:tick 1}]}",
            ),
            (
                "e.test.edn",
                "{:tree \"count.edn\" :expect [{:tick 1 :status :success}]}",
            ),
        ],
    );
    let run = aido(&dir, &["test"]);
    assert_eq!(run.code, 2);
    assert_eq!(
        run.stdout,
        "FAILED a.test.edn\nFAILED b.test.edn\nFAILED c.test.edn\nFAILED d.test.edn\nok e.test.edn\n1 passed, 4 failed\n"
    );
    assert_eq!(
        run.stderr,
        "aido: a.test.edn:2:28: `:status` is :success, :failure, :running, :error or :skipped, found `:fine`\n\
         aido: b.test.edn:1:28: `[` opened here is never closed\n\
         aido: c.test.edn:1:8: `:tree` names a file that cannot be read: missing.edn: no such file or directory\n\
         aido: d.test.edn:1:28: stub :nobody names no node of the tree, by id or by node type\n"
    );

    let missing = aido(&dir, &["test", "nothere"]);
    assert_eq!(
        (missing.code, missing.stderr.as_str()),
        (2, "aido: nothere: no such file or directory\n")
    );
    let empty = folder("empty", &[("count.edn", COUNT)]);
    let none = aido(&empty, &["test"]);
    assert_eq!(
        (none.code, none.stderr.as_str()),
        (2, "aido: .: no scenario files (*.test.edn) found\n")
    );
    let flag = aido(&dir, &["test", "--acept"]);
    assert_eq!(flag.code, 2);
}

#[test]
fn a_tree_that_does_not_compile_fails_its_scenario_with_the_diagnostics() {
    let dir = folder(
        "compile",
        &[
            ("bad.edn", "[:sequence [:inc {:key :n}]]"),
            ("bad.test.edn", "{:tree \"bad.edn\" :expect [{:tick 1}]}"),
        ],
    );
    let run = aido(&dir, &["test"]);
    assert_eq!(run.code, 1);
    snapshot!(run.stdout);
}

#[test]
fn coverage_lists_nodes_never_ticked_and_statuses_never_seen() {
    let run = aido(
        root(),
        &[
            "test",
            "examples/long/guard.test.edn",
            "examples/npc.test.edn",
            "--coverage",
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    snapshot!(run.stdout);
}

/// The chat coverage of a report: its summary line and the gap lines
/// under it, for the tree named `tree`.
fn chat_coverage<'a>(stdout: &'a str, tree: &str) -> Vec<&'a str> {
    let head = format!("chat coverage: {tree}: ");
    let mut lines = stdout.lines().skip_while(|l| !l.starts_with(&head));
    let Some(summary) = lines.next() else {
        panic!("no chat coverage for {tree} in:\n{stdout}");
    };
    std::iter::once(summary)
        .chain(lines.take_while(|l| l.starts_with("  ")))
        .collect()
}

/// Whether every count `X of Y` of a chat coverage summary has X = Y.
fn all_covered(summary: &str) -> bool {
    let words: Vec<&str> = summary.split_whitespace().collect();
    let counts: Vec<(&str, &str)> = words
        .windows(3)
        .filter(|w| w[1] == "of")
        .map(|w| (w[0], w[2]))
        .collect();
    counts.len() == 4 && counts.iter().all(|(x, y)| x == y)
}

#[test]
fn chat_coverage_names_each_pattern_member_and_deferred_answer_never_seen() {
    // One conversation covers part of the bot: the report says what is
    // left, each located.
    let run = aido(
        root(),
        &[
            "test",
            "tests/data/chat-coverage/some.test.edn",
            "--coverage",
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    snapshot!(run.stdout);

    // With the other conversation, every fact is covered.
    let run = aido(root(), &["test", "tests/data/chat-coverage", "--coverage"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        chat_coverage(&run.stdout, "tests/data/chat-coverage/bot.edn"),
        [
            "chat coverage: tests/data/chat-coverage/bot.edn: 3 of 3 patterns matched, 3 of 3 \
             pool members said, 1 of 1 deferred action answered with success, 1 of 1 with \
             failure or timeout"
        ]
    );
}

#[test]
fn the_example_bots_conversations_reach_full_chat_coverage() {
    let run = aido(root(), &["test", "examples/chatbot", "--coverage"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let chat = chat_coverage(&run.stdout, "examples/chatbot/bot.edn");
    assert!(chat.len() == 1 && all_covered(chat[0]), "{chat:#?}");
    // Its conversation alone (no raw `:aido/results` in the inputs) covers
    // the service's answers both ways.
    let run = aido(
        root(),
        &["test", "examples/chatbot/service.test.edn", "--coverage"],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let chat = chat_coverage(&run.stdout, "examples/chatbot/bot.edn");
    assert!(
        chat[0].ends_with(
            "1 of 1 deferred action answered with success, 1 of 1 with failure or timeout"
        ),
        "{chat:#?}"
    );
}

#[test]
fn stubs_by_type_and_by_id_in_a_scenario_and_in_aido_run() {
    let dir = folder(
        "stubs",
        &[
            (
                "guard.edn",
                "[:selector [:sequence [:guard/sees? {:range 3}] [:define! {:key :action :val :chase}]] [:sequence [:walk {:id :patrol}] [:define! {:key :action :val :patrol}]]]",
            ),
            (
                "stubs.edn",
                "{:guard/sees? [:failure :failure :success] :patrol {:status :success :db {:walked true}}}",
            ),
            (
                "guard.test.edn",
                "{:tree \"guard.edn\" :ticks 3 :stubs \"stubs.edn\" :expect [{:tick 2 :status :success :db {:action :patrol :walked true}} {:tick 3 :db {:action :chase}}]}",
            ),
        ],
    );
    let run = aido(&dir, &["test"]);
    assert_eq!(
        (run.code, run.stdout.as_str()),
        (0, "ok guard.test.edn\n1 passed, 0 failed\n"),
        "{}",
        run.stderr
    );

    let run = aido(
        &dir,
        &["run", "guard.edn", "--stubs", "stubs.edn", "--ticks", "3"],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    snapshot!(run.stdout);

    // Without the stubs, the game's node types are unknown.
    assert_eq!(aido(&dir, &["run", "guard.edn"]).code, 1);
    std::fs::write(dir.join("bad-stubs.edn"), "{:guard/sees? :maybe}").unwrap();
    let bad = aido(&dir, &["run", "guard.edn", "--stubs", "bad-stubs.edn"]);
    assert_eq!(
        (bad.code, bad.stderr.as_str()),
        (
            2,
            "aido: bad-stubs.edn:1:15: stub :guard/sees?: a stub's status is :success, :failure, :running or :error, found `:maybe`\n"
        )
    );
}

#[test]
fn check_and_run_know_the_node_types_a_model_declares() {
    let game = root().join("examples/game");
    let plain = aido(&game, &["check", "trees/guard.edn"]);
    assert_eq!(plain.code, 1);
    assert!(
        plain
            .stderr
            .contains("error[E0003]: unknown node type `:guard/sees?`"),
        "{}",
        plain.stderr
    );
    let checked = aido(
        &game,
        &["check", "--nodes", "game-nodes.edn", "trees/guard.edn"],
    );
    assert_eq!(
        (
            checked.code,
            checked.stdout.as_str(),
            checked.stderr.as_str()
        ),
        (0, "ok: trees/guard.edn (8 nodes)\n", "")
    );

    let dir = folder(
        "model",
        &[(
            "bad.edn",
            "[:selector [:guard/see? {:range 3}] [:guard/sees? {:range \"far\" :mod 1}] [:guard/sees?]]",
        )],
    );
    let model = game.join("game-nodes.edn");
    let run = aido(
        &dir,
        &["check", "--nodes", model.to_str().unwrap(), "bad.edn"],
    );
    assert_eq!(run.code, 1);
    snapshot!(run.stderr);

    // Run: a declared node without a stub ends the tick in Error; with one it runs.
    let db = ["--db", "trees/near.db.edn"];
    let unstubbed = aido(
        &game,
        &[
            &["run", "trees/guard.edn", "--nodes", "game-nodes.edn"][..],
            &db,
        ]
        .concat(),
    );
    assert_eq!(unstubbed.code, 0);
    assert!(
        unstubbed.stdout.starts_with("{:tick 1, :status :error,"),
        "{}",
        unstubbed.stdout
    );
    assert!(
        unstubbed
            .stderr
            .contains("`:guard/sees?` is declared in a node model and has no behaviour here"),
        "{}",
        unstubbed.stderr
    );
    std::fs::write(
        dir.join("sees.edn"),
        "{:guard/sees? :success :measure {:status :success :db {:gap 9}}}",
    )
    .unwrap();
    let stubs = dir.join("sees.edn");
    let stubbed = aido(
        &game,
        &[
            &[
                "run",
                "trees/guard.edn",
                "--nodes",
                "game-nodes.edn",
                "--stubs",
                stubs.to_str().unwrap(),
            ][..],
            &db,
        ]
        .concat(),
    );
    assert_eq!(
        (
            stubbed.code,
            stubbed.stdout.as_str(),
            stubbed.stderr.as_str()
        ),
        (
            0,
            "{:tick 1, :status :success, :db {:pos 0, :intruder 2, :action :chase, :gap 9}}\n",
            ""
        )
    );

    std::fs::write(
        dir.join("bad-model.edn"),
        "{:nodes {:x/y {:children :lots}}}",
    )
    .unwrap();
    let bad = aido(&dir, &["check", "--nodes", "bad-model.edn", "bad.edn"]);
    assert_eq!(
        (bad.code, bad.stderr.as_str()),
        (
            2,
            "aido: bad-model.edn:1:26: `:children` must be a count n, counts [n m ..], :some, :any or {:at-least n}, found `:lots`\n"
        )
    );
}

#[test]
fn nodes_prints_the_reference_with_the_models_node_types() {
    let run = aido(
        root(),
        &["nodes", "--nodes", "examples/game/game-nodes.edn"],
    );
    assert_eq!((run.code, run.stderr.as_str()), (0, ""));
    snapshot!(run.stdout);

    // As EDN, the reference is itself a model that reads back.
    let edn = aido(root(), &["nodes", "--format", "edn"]);
    assert_eq!(edn.code, 0);
    let reference = aido::read_value(&edn.stdout).unwrap();
    assert_eq!(reference, aido::Registry::new().reference());
    assert_eq!(aido(root(), &["nodes", "--format", "xml"]).code, 2);
}

/// A program's own registry reaches every command through `aido::cli::Cli`.
#[test]
fn the_cli_as_a_library_checks_trees_against_the_programs_registry() {
    let dir = folder(
        "library",
        &[("tea.edn", "[:beverage/drink! {:beverage :tea}]")],
    );
    let args: Vec<std::ffi::OsString> = vec!["check".into(), dir.join("tea.edn").into()];
    assert_eq!(aido::cli::Cli::new(aido::Registry::new()).run(&args), 1);
    let mut registry = aido::Registry::new();
    registry
        .node_type(
            aido::extend::NodeType::new("beverage/drink!")
                .required("beverage", aido::extend::OptionType::Keyword),
        )
        .unwrap();
    assert_eq!(aido::cli::Cli::new(registry).run(&args), 0);
}

/// A stub alone accepts any options on an unknown node type; with the
/// model (`--nodes`, or a scenario's `:nodes`) a misspelt option fails.
#[test]
fn test_checks_stubbed_trees_against_a_model() {
    let model = root().join("examples/game/game-nodes.edn");
    let dir = folder(
        "test-nodes",
        &[
            ("t.edn", "[:guard/sees? {:rang 3}]"),
            (
                "t.test.edn",
                "{:tree \"t.edn\" :stubs {:guard/sees? :success} :expect [{:tick 1 :status :success}]}",
            ),
        ],
    );
    let run = aido(&dir, &["test"]);
    assert_eq!(
        (run.code, run.stdout.as_str()),
        (0, "ok t.test.edn\n1 passed, 0 failed\n")
    );
    let run = aido(&dir, &["test", "--nodes", model.to_str().unwrap()]);
    assert_eq!(run.code, 1);
    assert!(
        run.stdout
            .starts_with("FAILED t.test.edn\n  t.edn: the tree has 2 compile errors:\n"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("error[E0005]: `:guard/sees?` has no option `:rang`"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("help: did you mean `:range`?"),
        "{}",
        run.stdout
    );
}

#[test]
fn run_keeps_its_stubs_across_trims_and_reloads_and_ids_win_over_types() {
    let dir = folder(
        "stubs-kept",
        &[
            (
                "t.edn",
                "[:sequence {:id :main} [:guard/sees? {:id :eye}] [:inc! {:id :count :key :n}]]",
            ),
            (
                "t2.edn",
                "[:sequence {:id :main} [:guard/sees? {:id :eye}] [:guard/sees?] [:inc! {:id :count :key :n}]]",
            ),
            // The stub by id comes first in the map: it still wins.
            ("stubs.edn", "{:eye :success :guard/sees? :failure}"),
            (
                "trims.edn",
                "[{:task :more :target :count :not-before 1 :replace [:inc! {:id :count :key :n}]}]",
            ),
        ],
    );
    let run = aido(
        &dir,
        &[
            "run",
            "t.edn",
            "--stubs",
            "stubs.edn",
            "--ticks",
            "3",
            "--trims",
            "trims.edn",
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let statuses: Vec<&str> = run
        .stdout
        .lines()
        .map(|l| {
            if l.contains(":status :success") {
                "success"
            } else {
                "other"
            }
        })
        .collect();
    // The trim before tick 2 keeps the stub of :eye in place.
    assert_eq!(statuses, ["success"; 3], "{}", run.stdout);
    assert!(run.stdout.contains(":outcome :applied"), "{}", run.stdout);

    let run = aido(
        &dir,
        &[
            "run",
            "t.edn",
            "--stubs",
            "stubs.edn",
            "--ticks",
            "2",
            "--reload",
            "2=t2.edn",
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert!(lines[0].contains(":status :success"), "{}", run.stdout);
    // After the reload the node without an id gets the stub by type.
    assert!(lines[1].contains(":status :failure"), "{}", run.stdout);
    assert!(
        lines[1].contains(":reload {:file \"t2.edn\""),
        "{}",
        run.stdout
    );

    // A reload that gives a stubbed id a type the tool does not know, then
    // a trim: the trim compiles with that type's placeholder.
    std::fs::write(
        dir.join("t3.edn"),
        "[:sequence {:id :main} [:guard/hears? {:id :eye}] [:inc! {:id :count :key :n}]]",
    )
    .unwrap();
    std::fs::write(
        dir.join("trims3.edn"),
        "[{:task :more :target :count :not-before 2 :replace [:inc! {:id :count :key :m}]}]",
    )
    .unwrap();
    let run = aido(
        &dir,
        &[
            "run",
            "t.edn",
            "--stubs",
            "stubs.edn",
            "--ticks",
            "3",
            "--reload",
            "2=t3.edn",
            "--trims",
            "trims3.edn",
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert!(lines[2].contains(":outcome :applied"), "{}", run.stdout);
    assert!(lines[2].contains(":status :success"), "{}", run.stdout);
}
