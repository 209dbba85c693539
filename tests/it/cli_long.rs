//! The long-running examples (examples/long/) driven through `aido run
//! --inputs --trace`, one snapshot per scenario: how each tree and its db
//! evolve tick by tick, with every halt, launch and cancel.
#![allow(clippy::panic, clippy::expect_used, clippy::unwrap_used)]

use std::process::Command;

#[test]
fn long_running_scenarios() {
    insta::with_settings!({snapshot_path => "../../snapshots", prepend_module_to_snapshot => true}, {
        insta::glob!("../../examples/long", "*.inputs.edn", |inputs| {
            let tree = inputs.with_file_name(
                inputs.file_name().unwrap().to_string_lossy().replace(".inputs.edn", ".edn"),
            );
            let script = aido::read_value(&std::fs::read_to_string(inputs).unwrap()).unwrap();
            let ticks = script.as_seq().expect("inputs are a vector").len();
            let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
            let rel = |p: &std::path::Path| p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            let out = Command::new(env!("CARGO_BIN_EXE_aido"))
                .current_dir(root)
                .args(["run", &rel(&tree), "--inputs", &rel(inputs), "--ticks", &ticks.to_string()])
                .args(["--seed", "1", "--trace"])
                .output()
                .unwrap();
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            let stdout = String::from_utf8(out.stdout).unwrap();
            assert_eq!(stdout.lines().count(), ticks);
            insta::assert_snapshot!(stdout);
        });
    });
}
