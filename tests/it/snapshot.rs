//! The insta helpers for scenario runs (cargo feature `insta`):
//! `assert_timeline_snapshot!` and `glob_scenarios!`.
#![cfg(feature = "insta")]
#![allow(clippy::panic, clippy::expect_used, clippy::unwrap_used)]

use std::path::Path;

use aido::scenario::{Expectation, Mismatch, Scenario};
use aido::snapshot::{SnapshotError, run_file, snapshot_name};
use aido::{Registry, Status, Value, compile_str};

fn in_snapshots(f: impl FnOnce()) {
    insta::with_settings!({snapshot_path => "../../snapshots", prepend_module_to_snapshot => true}, {
        f();
    });
}

/// Every scenario file in a folder is a snapshot of its own
/// (`it__snapshot__scenario_files@count.test.edn.snap`).
#[test]
fn scenario_files() {
    in_snapshots(|| aido::glob_scenarios!("../data/snapshot", "*.test.edn", &Registry::new()));
}

#[test]
fn a_scenario_built_in_rust_is_snapshotted_under_its_name() {
    let tree = compile_str(
        "wait.edn",
        "[:sequence {:id :errand} [:wait {:id :walk :ticks 1}] [:inc! {:key :done}]]",
        &Registry::new(),
    )
    .unwrap();
    let scenario = Scenario::new("trees/errand.test.edn", tree).ticks(2);
    in_snapshots(|| {
        let run = aido::assert_timeline_snapshot!(&scenario);
        assert_eq!(run.record.tick(1).unwrap().status, Status::Success);
        aido::assert_timeline_snapshot!("errand-named", &scenario);
    });
}

#[test]
fn snapshot_names_are_the_file_stems() {
    assert_eq!(snapshot_name("trees/guard.test.edn"), "guard");
    assert_eq!(snapshot_name(r"trees\night watch.edn"), "night-watch");
    assert_eq!(snapshot_name("count"), "count");
}

#[test]
fn a_failed_expectation_or_an_unreadable_file_fails_before_the_snapshot() {
    let tree = compile_str("t.edn", "[:inc! {:key :n}]", &Registry::new()).unwrap();
    let mut db = aido::value::Map::default();
    db.insert(Value::keyword("n"), Value::Int(5));
    let scenario = Scenario::new("wrong", tree).ticks(1).expect(Expectation {
        tick: 1,
        status: Some(Status::Success),
        db,
    });
    match aido::snapshot::run_checked(&scenario) {
        Err(SnapshotError::Expectations { mismatches, .. }) => {
            assert!(
                matches!(mismatches.as_slice(), [Mismatch::Db { .. }]),
                "{mismatches:?}"
            )
        }
        other => panic!("{other:?}"),
    }

    let missing = run_file(
        Path::new("tests/data/snapshot/no-such.test.edn"),
        &Registry::new(),
    );
    assert!(matches!(missing, Err(SnapshotError::Load(_))));
}
