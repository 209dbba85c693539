//! Tick scenarios as data: each file of `tests/data/tick/` is a scenario (a
//! tree, a db, optional inputs, seed and stubs, a number of ticks; the
//! `*.test.edn` format of `aido test`), whose comment says what it shows.
//! Its snapshot is the run's text timeline with the nodes ticked and every
//! db change, the library's own `:aido/*` keys included (but the tree's
//! fingerprint `:aido/tree`, which tests/it/trim.rs covers), then the db the
//! last tick left: a change of any tick's status, any node's status, any
//! write, halt or error message changes the snapshot.
#![allow(clippy::panic, clippy::expect_used, clippy::unwrap_used)]

use aido::record::{TimelineOptions, timeline};
use aido::{Registry, Value, scenario::Scenario};

#[test]
fn tick_scenarios() {
    insta::with_settings!({snapshot_path => "../../snapshots", prepend_module_to_snapshot => true}, {
        insta::glob!("../data/tick", "*.edn", |path| {
            let scenario = Scenario::load(path, &Registry::new())
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let run = scenario.run();
            assert_eq!(run.check(&scenario.expect), [], "{}", path.display());
            let options = TimelineOptions { aido_keys: true, trace: true };
            let text: String = timeline(&run.record, &options)
                .lines()
                .filter(|line| !line.trim_start().contains(" :aido/tree "))
                .map(|line| format!("{line}\n"))
                .collect();
            let mut db = run.db.clone();
            if let Some(map) = db.as_map_mut() {
                map.shift_remove(&Value::keyword("aido/tree"));
            }
            insta::assert_snapshot!(format!("{text}\nlast db: {db}\n"));
        });
    });
}
