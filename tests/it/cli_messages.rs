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

/// The folder of the project's examples, from the test's working folder.
fn example(path: &str) -> String {
    std::env::current_dir()
        .unwrap()
        .join("examples")
        .join(path)
        .display()
        .to_string()
}

#[test]
fn show_and_migrate_take_a_node_model() {
    let s = Scratch::new("nodes");
    s.write(
        "m.nodes.edn",
        "{:nodes {:guard/sees? {:children 0 :options {:range :int}}}}",
    )
    .write(
        "v1.edn",
        "[:selector {:id :top} [:guard/sees? {:id :look :range 3}] [:wait {:id :w :ticks 3}]]",
    )
    .write("v2.edn", "[:selector {:id :top} [:wait {:id :w :ticks 3}]]")
    .write("m.stubs.edn", "{:look :failure}");
    let show = s.run(&["show", "v1.edn", "--nodes", "m.nodes.edn"]);
    assert_eq!(show.code, 0, "{show:?}");
    assert!(
        show.stdout.contains(":guard/sees? :look {:range 3}"),
        "{}",
        show.stdout
    );
    // Without the model the type is unknown, as before.
    assert_eq!(s.run(&["show", "v1.edn"]).code, 1);
    let run = s.run(&[
        "run",
        "v1.edn",
        "--nodes",
        "m.nodes.edn",
        "--stubs",
        "m.stubs.edn",
        "--save",
        "save.edn",
    ]);
    assert_eq!(run.code, 0, "{run:?}");
    let migrate = s.run(&[
        "migrate",
        "v1.edn",
        "v2.edn",
        "--db",
        "save.edn",
        "--nodes",
        "m.nodes.edn",
    ]);
    assert_eq!(migrate.code, 0, "{migrate:?}");
    assert!(
        migrate.stdout.starts_with("{:kept [:w :top]"),
        "{}",
        migrate.stdout
    );
    // The model is an input: a save over it is refused.
    let over = s.run(&[
        "migrate",
        "v1.edn",
        "v2.edn",
        "--db",
        "save.edn",
        "--nodes",
        "m.nodes.edn",
        "--save",
        "m.nodes.edn",
    ]);
    assert_eq!(over.code, 2, "{over:?}");
}

#[test]
fn a_trimmed_tree_is_saved_for_a_later_migration() {
    // After a trim, the save was last ticked with a tree no file holds:
    // `--save-tree` writes it, and `aido migrate` takes it as OLD.
    let s = Scratch::new("save-tree");
    let (pick, db, trims) = (
        example("trim/pick.edn"),
        example("trim/pick.db.edn"),
        example("trim/pick.trims.edn"),
    );
    let run = s.run(&[
        "run",
        &pick,
        "--db",
        &db,
        "--trims",
        &trims,
        "--ticks",
        "8",
        "--save",
        "save.edn",
        "--save-tree",
        "trimmed.edn",
    ]);
    assert_eq!(run.code, 0, "{run:?}");
    let trimmed = std::fs::read_to_string(s.0.join("trimmed.edn")).unwrap();
    assert!(trimmed.contains(":complex-pick"), "{trimmed}");
    let from_file = s.run(&["migrate", &pick, &pick, "--db", "save.edn"]);
    assert_eq!(from_file.code, 2, "{from_file:?}");
    let migrate = s.run(&["migrate", "trimmed.edn", &pick, "--db", "save.edn"]);
    assert_eq!(migrate.code, 0, "{migrate:?}");
    assert!(migrate.stdout.contains(":dropped"), "{}", migrate.stdout);
    // A tree is EDN; and it is never written over an input.
    let json = s.run(&["run", &pick, "--save-tree", "t.json"]);
    assert_eq!(json.code, 2, "{json:?}");
    let over = s.run(&["run", &pick, "--db", &db, "--save-tree", &db]);
    assert_eq!(over.code, 2, "{over:?}");
}
