//! The guard tree with the game's real nodes: a scenario built in Rust, and
//! the game's own binary (the aido tool with the game's registry).

use std::process::Command;

use aido::{Status, compile_file, read_value, scenario::Scenario};
use aido_game_example::registry;

fn tree_path() -> String {
    concat!(env!("CARGO_MANIFEST_DIR"), "/trees/guard.edn").to_owned()
}

#[test]
fn the_guard_chases_an_intruder_within_range() {
    let tree = compile_file(tree_path(), &registry()).expect("the tree compiles");
    let intruder = read_value("{:intruder 4}")
        .expect("reads")
        .into_map()
        .expect("a map");
    let scenario = Scenario::new("guard", tree)
        .db(read_value("{:pos 0}").expect("reads"))
        .ticks(3)
        .input(1, intruder);
    // The timeline as a snapshot (tests/snapshots/guard__guard.snap).
    let run = aido::assert_timeline_snapshot!(&scenario);
    let statuses: Vec<Status> = run.record.ticks().map(|t| t.status).collect();
    assert_eq!(statuses, [Status::Success; 3]);
    // Out of range (4 > 3): patrol one step; at pos 1 the intruder is 3 away: chase.
    assert_eq!(
        run.db.to_string(),
        "{:pos 1, :intruder 4, :action :chase, :gap 3}"
    );
}

/// Every scenario in the game's folder is a snapshot test of its own
/// (tests/snapshots/guard__scenario_files.snap: with one file, insta names
/// it after the test alone; with more, `scenario_files@FILE`).
#[test]
fn scenario_files() {
    aido::glob_scenarios!("..", "*.test.edn", &registry());
}

fn game(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_game"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("the game binary runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn the_game_binary_checks_runs_and_tests_trees_with_its_own_nodes() {
    let (code, out, err) = game(&["check", "trees/guard.edn"]);
    assert_eq!(
        (code, out.as_str(), err.as_str()),
        (0, "ok: trees/guard.edn (8 nodes)\n", "")
    );

    let (code, out, _) = game(&[
        "run",
        "trees/guard.edn",
        "--db",
        "trees/near.db.edn",
        "--ticks",
        "1",
    ]);
    assert_eq!(code, 0);
    assert!(
        out.starts_with(
            "{:tick 1, :status :success, :db {:pos 0, :intruder 2, :action :chase, :gap 2"
        ),
        "{out}"
    );

    let (code, out, _) = game(&["test", "guard.test.edn"]);
    assert_eq!(
        (code, out.as_str()),
        (0, "ok guard.test.edn\n1 passed, 0 failed\n")
    );

    let (code, out, _) = game(&["nodes"]);
    assert_eq!(code, 0);
    assert!(
        out.contains("\n  :guard/sees?  no children\n    Succeeds when the intruder"),
        "{out}"
    );
    assert!(
        out.contains("\n  dist  2 arguments\n    The grid distance between two positions.\n"),
        "{out}"
    );
}
