//! aido's own test suite (tests/data/conformance/aido-suite.edn, the cases of
//! the Clojure original), run through the library: every case's every tick
//! must match what the Clojure original produced (status, and the db without aido-namespaced keys);
//! and the outline of every case's compiled tree, snapshotted.
#![allow(clippy::panic, clippy::expect_used, clippy::unwrap_used)]

use crate::common;

use aido::record::outline;
use aido::{Registry, compile, run_tick};

#[test]
fn every_case_of_aidos_suite_passes_through_the_library() {
    let cases = common::conformance_cases();
    assert!(cases.len() >= 17, "the suite has {} cases", cases.len());
    let registry = Registry::new();
    for case in &cases {
        let tree = compile(&case.tree, &registry)
            .unwrap_or_else(|d| panic!("case {}: {}", case.name, d.render()));
        let mut db = case.db.clone();
        for (i, expected) in case.expect.iter().enumerate() {
            let tick = run_tick(db, &tree);
            assert_eq!(
                tick.status.to_value(),
                expected.status,
                "case {} tick {}: status",
                case.name,
                i + 1
            );
            assert_eq!(
                common::without_aido_keys(&tick.db),
                expected.db,
                "case {} tick {}: db",
                case.name,
                i + 1
            );
            db = tick.db;
        }
        assert_eq!(case.expect.len() as i64, case.ticks, "case {}", case.name);
    }
}

#[test]
fn without_aido_keys_drops_only_the_aido_namespace() {
    let db = aido::read_value("{:a 1, :aido/memory {}, :aido.x/y 2, :b/c 3}").unwrap();
    assert_eq!(common::without_aido_keys(&db).to_string(), "{:a 1, :b/c 3}");
}

/// The compiled tree of every case as `aido show` prints it (node types,
/// ids, options as written, in tree order): a change to how the suite's
/// trees compile (node placement, derived ids, options kept) shows here.
#[test]
fn the_suites_trees_as_outlines() {
    let registry = Registry::new();
    let mut text = String::new();
    for case in &common::conformance_cases() {
        let tree = compile(&case.tree, &registry)
            .unwrap_or_else(|d| panic!("case {}: {}", case.name, d.render()));
        let outline = outline(&tree);
        assert_eq!(outline.lines().count(), tree.len(), "case {}", case.name);
        text.push_str(&format!(";; {}\n{outline}\n", case.name));
    }
    insta::with_settings!({snapshot_path => "../../snapshots", prepend_module_to_snapshot => true}, {
        insta::assert_snapshot!(text);
    });
}
