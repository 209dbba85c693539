//! The `aido` binary's messages and the gaps between its commands: errors
//! that say what and where, files checked before the first tick, node
//! models on every command that compiles a tree, and trimmed trees saved.
#![allow(clippy::panic, clippy::expect_used, clippy::unwrap_used)]

use std::path::PathBuf;
use std::process::Command;

use crate::common::Run;

/// A folder of its own for one test, removed when the test ends.
struct Scratch(PathBuf);

impl Scratch {
    fn new(test: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("aido-messages-{}-{test}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    fn write(&self, name: &str, text: &str) -> &Scratch {
        std::fs::write(self.0.join(name), text).unwrap();
        self
    }

    /// Runs `aido` with `args` in the folder.
    fn run(&self, args: &[&str]) -> Run {
        Run::of(
            Command::new(env!("CARGO_BIN_EXE_aido"))
                .args(args)
                .current_dir(&self.0)
                .env_remove("AIDO_MAX_DIAGNOSTICS"),
        )
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn a_failing_scenario_shows_the_ticks_error_with_its_code_node_and_place() {
    // A declared node type without a stub ends the tick in Error: the
    // report used to say only "expected status success, got error".
    let s = Scratch::new("tick-error");
    s.write(
        "t.edn",
        "[:sequence\n  [:inc! {:key :n}]\n  [:guard/sees? {:id :look}]]",
    )
    .write("m.nodes.edn", "{:nodes {:guard/sees? {:children 0}}}")
    .write(
        "t.test.edn",
        "{:tree \"t.edn\" :nodes \"m.nodes.edn\" :expect [{:tick 1 :status :success}]}",
    );
    let run = s.run(&["test", "t.test.edn"]);
    assert_eq!(run.code, 1, "{run:?}");
    let line = run
        .stdout
        .lines()
        .find(|l| l.contains("expected status"))
        .unwrap();
    assert!(
        line.starts_with("  tick 1: expected status success, got error: error[T0000]: "),
        "{line}"
    );
    assert!(
        line.ends_with("(node :look `:guard/sees?` at 3:3)"),
        "{line}"
    );
}
