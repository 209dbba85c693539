//! Changing trees at run time through the binary: the trimming examples
//! (examples/trim/) through `aido run --trims --trace`, `--reload`, a saved
//! db carried over by `aido migrate` in another process, and the warning of
//! `aido check`.
#![allow(clippy::panic, clippy::expect_used, clippy::unwrap_used)]

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use aido::{Value, read_value};
use common::Run;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn aido(args: &[&str]) -> Run {
    Run::of(
        Command::new(env!("CARGO_BIN_EXE_aido"))
            .args(args)
            .current_dir(root()),
    )
}

fn lines(run: &Run) -> Vec<Value> {
    assert_eq!(run.code, 0, "{run:?}");
    run.stdout.lines().map(|l| read_value(l).unwrap()).collect()
}

fn key(m: &Value, k: &str) -> Value {
    m.get(&Value::keyword(k)).cloned().unwrap_or_default()
}

/// A fresh folder under the system's temp dir, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(test: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("aido-trim-{}-{test}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    fn file(&self, name: &str) -> String {
        self.0.join(name).to_string_lossy().into_owned()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn the_trimming_examples() {
    insta::with_settings!({snapshot_path => "../../snapshots", prepend_module_to_snapshot => true}, {
        for name in ["pick", "queue"] {
            let f = |ext: &str| format!("examples/trim/{name}{ext}");
            let run = aido(&[
                "run", &f(".edn"), "--db", &f(".db.edn"), "--trims", &f(".trims.edn"),
                "--ticks", "10", "--trace",
            ]);
            let lines = lines(&run);
            assert_eq!(lines.len(), 10);
            insta::assert_snapshot!(name, run.stdout);
        }
    });
}

#[test]
fn breaking_pick_into_a_subtree_keeps_the_memory_of_the_nodes_around_it() {
    let run = aido(&[
        "run",
        "examples/trim/pick.edn",
        "--db",
        "examples/trim/pick.db.edn",
        "--trims",
        "examples/trim/pick.trims.edn",
        "--ticks",
        "7",
        "--trace",
    ]);
    let lines = lines(&run);
    // Deferred (not before tick 5) until the gap after tick 5, then applied.
    for line in &lines[..5] {
        assert_eq!(
            key(&key(line, "trim").as_seq().unwrap()[0], "outcome"),
            Value::keyword("deferred")
        );
    }
    let trims = key(&lines[5], "trim");
    let applied = &trims.as_seq().unwrap()[0];
    assert_eq!(key(applied, "outcome"), Value::keyword("applied"));
    assert_eq!(
        key(&key(applied, "change"), "inserted").to_string(),
        "[:complex-pick :check-cond-pick :pick-impl]"
    );
    // Tick 5 left `move` resuming at `carry`, running: tick 6 goes on there.
    let trace = key(&lines[5], "trace");
    assert_eq!(trace.as_seq().unwrap()[0].to_string(), "[:carry :success]");
    // Tick 7 runs the new subtree.
    assert!(
        key(&lines[6], "trace")
            .to_string()
            .starts_with("[[:check-cond-pick :success]")
    );
}

#[test]
fn a_reload_switches_trees_and_a_file_that_does_not_compile_is_refused() {
    // A reload file that does not compile stops the run before tick 1,
    // whatever tick it is for.
    let run = aido(&[
        "run",
        "examples/trim/patrol.edn",
        "--ticks",
        "5",
        "--reload",
        "4=tests/data/trim/bad.edn",
        "--reload=3=examples/trim/patrol-v2.edn",
    ]);
    assert_eq!(run.code, 1, "{run:?}");
    assert_eq!(run.stdout, "");
    assert!(run.stderr.contains("error[E0003]"), "{}", run.stderr);
    assert!(
        run.stderr.contains("tests/data/trim/bad.edn"),
        "{}",
        run.stderr
    );
    let run = aido(&[
        "run",
        "examples/trim/patrol.edn",
        "--ticks",
        "5",
        "--reload=3=examples/trim/patrol-v2.edn",
    ]);
    let lines = lines(&run);
    assert_eq!(key(&lines[1], "reload"), Value::Nil);
    let reload = key(&lines[2], "reload");
    assert_eq!(
        key(&reload, "file"),
        Value::string("examples/trim/patrol-v2.edn")
    );
    assert_eq!(
        key(&reload, "kept").to_string(),
        "[[:walk :stroll] :patrol]"
    );
    assert_eq!(key(&reload, "dropped").to_string(), "[]");
    // The walk (three ticks long) ends on tick 4 and the patrol reports,
    // without greeting: it resumed at the walk. The next round greets.
    assert_eq!(key(&lines[2], "status"), Value::keyword("running"));
    assert_eq!(key(&lines[3], "status"), Value::keyword("success"));
    let db = key(&lines[3], "db");
    assert_eq!(key(&db, "reports"), Value::Int(1));
    assert_eq!(key(&db, "rounds"), Value::Int(1));
    assert_eq!(key(&db, "greeted"), Value::Nil);
    assert_eq!(key(&key(&lines[4], "db"), "greeted"), Value::Bool(true));
}

#[test]
fn a_saved_db_is_migrated_in_another_process() {
    let dir = Scratch::new("migrate");
    let (save, out) = (dir.file("save.edn"), dir.file("out.edn"));
    // A first process walks for one tick and saves.
    lines(&aido(&["run", "examples/trim/patrol.edn", "--save", &save]));
    // A second one carries the save over to version 2.
    let run = aido(&[
        "migrate",
        "examples/trim/patrol.edn",
        "examples/trim/patrol-v2.edn",
        "--db",
        &save,
        "--save",
        &out,
    ]);
    let report = &lines(&run)[0];
    assert_eq!(key(report, "kept").to_string(), "[[:walk :stroll] :patrol]");
    assert_eq!(key(report, "halted").to_string(), "[]");
    let migrated = read_value(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(
        key(&migrated, "aido/memory").to_string(),
        "{:stroll {:ticks 1}, :patrol {:index 2}}"
    );
    // A third one goes on from there: two more ticks of walking, then the
    // end of the walk and the report.
    let run = aido(&[
        "run",
        "examples/trim/patrol-v2.edn",
        "--db",
        &out,
        "--ticks",
        "3",
    ]);
    let lines2 = lines(&run);
    assert_eq!(key(&lines2[1], "status"), Value::keyword("running"));
    assert_eq!(key(&lines2[2], "status"), Value::keyword("success"));
    assert_eq!(key(&key(&lines2[2], "db"), "reports"), Value::Int(1));
    assert_eq!(key(&key(&lines2[2], "db"), "greeted"), Value::Nil);
    assert!(lines2.iter().all(|l| key(l, "migrated").is_nil()));
    // A save that was made with another tree is refused.
    let again = aido(&[
        "migrate",
        "examples/trim/patrol.edn",
        "examples/trim/patrol-v2.edn",
        "--db",
        &out,
    ]);
    assert_eq!(again.code, 2);
    assert!(
        again
            .stderr
            .contains("last ticked with examples/trim/patrol-v2.edn already")
    );
    // Ticking the old save with the new tree carries it over by id and says so.
    let direct = aido(&["run", "examples/trim/patrol-v2.edn", "--db", &save]);
    let line = &lines(&direct)[0];
    assert_ne!(key(line, "status"), Value::keyword("error"));
    assert_eq!(key(&key(line, "migrated"), "halted").to_string(), "[:walk]");
}

#[test]
fn check_warns_about_stateful_nodes_without_an_id() {
    let run = aido(&["check", "examples/trim/patrol.edn", "examples/chatbot.edn"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout.lines().count(), 2);
    let warnings: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(
        warnings[0]
            .starts_with("warning: examples/chatbot.edn:15:4: `:choose-each` node \"0.1.0.1\"")
    );
}

#[test]
fn bad_trim_files_and_reload_flags_are_clear_errors() {
    let dir = Scratch::new("bad");
    let trims = dir.file("trims.edn");
    // Each error is placed at its key or value, with its code.
    for (text, why) in [
        (
            "{:task :x}",
            "1:1: error[R0001]: trim tasks are a vector of maps, found a map",
        ),
        (
            "[{:task :x, :target :a, :remove true, :colour :red}]",
            "1:39: error[R0002]: unknown key `:colour` in trim task :x; a task takes :task",
        ),
        (
            "[{:task :x, :targte :a, :remove true}]",
            "1:13: error[R0002]: unknown key `:targte` in trim task :x (did you mean `:target`?)",
        ),
        (
            "[{:task :x, :target :a}]",
            "1:2: error[R0003]: trim task :x needs exactly one of :replace :reorder :insert :remove :undo",
        ),
        (
            "[{:task :x, :target :a, :insert [:success]}]",
            "1:25: error[R0003]: trim task :x has :insert without :at",
        ),
        (
            "[{:task :x, :target :a, :remove true, :at 1}]",
            "1:39: error[R0004]: trim task :x has :at without :insert",
        ),
        (
            "[{:task :x, :target :a, :undo :y}]",
            "1:13: error[R0004]: trim task :x has :undo and :target",
        ),
        (
            "[{:task :x, :target :a, :reorder [0 :b]}]",
            "1:34: error[R0005]: :reorder must be a vector of positions",
        ),
        (
            "[{:task :x, :target :a, :remove true, :not-before -1}]",
            "1:51: error[R0005]: :not-before must be a tick number",
        ),
    ] {
        std::fs::write(&trims, text).unwrap();
        let run = aido(&["run", "examples/trim/patrol.edn", "--trims", &trims]);
        assert_eq!(run.code, 2, "{text}: {run:?}");
        assert_eq!(run.stdout, "", "{text}");
        let expected = format!("aido: {trims}:{why}");
        assert!(run.stderr.starts_with(&expected), "{text}: {}", run.stderr);
        assert!(!run.stderr.contains("panicked"));
    }
    // A task of a megabyte is named in a few words, not printed whole.
    let big = format!("[{{:task \"{}\", :target :a}}]", "x".repeat(1 << 20));
    std::fs::write(&trims, big).unwrap();
    let run = aido(&["run", "examples/trim/patrol.edn", "--trims", &trims]);
    assert_eq!(run.code, 2, "{run:?}");
    assert!(run.stderr.len() < 300, "{}", run.stderr.len());
    for flag in ["--reload=0=x.edn", "--reload=x.edn", "--reload=2="] {
        let run = aido(&["run", "examples/trim/patrol.edn", flag]);
        assert_eq!(run.code, 2, "{flag}: {run:?}");
        assert!(
            run.stderr.starts_with("aido: --reload: expected N=FILE"),
            "{}",
            run.stderr
        );
    }
    // A reload file that cannot be read stops the run before tick 1, as
    // does one for a tick the run never reaches.
    let run = aido(&[
        "run",
        "examples/trim/patrol.edn",
        "--ticks",
        "2",
        "--reload",
        "2=no/such.edn",
    ]);
    assert_eq!((run.code, run.stdout.as_str()), (2, ""), "{run:?}");
    assert!(
        run.stderr.starts_with("aido: no/such.edn: "),
        "{}",
        run.stderr
    );
    let run = aido(&[
        "run",
        "examples/trim/patrol.edn",
        "--ticks",
        "2",
        "--reload",
        "5=examples/trim/patrol-v2.edn",
    ]);
    assert_eq!((run.code, run.stdout.as_str()), (2, ""), "{run:?}");
    assert_eq!(
        run.stderr,
        "aido: --reload: 5=examples/trim/patrol-v2.edn: the run has 2 ticks, so tick 5 never \
         comes\n"
    );
    let run = aido(&[
        "migrate",
        "examples/trim/patrol.edn",
        "examples/trim/patrol-v2.edn",
    ]);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("`--db SAVE` is required"));
}

#[test]
fn two_reloads_before_one_tick_report_both_in_order() {
    // patrol -> patrol-v2 -> patrol again, both before tick 2: two reports,
    // in the order given (a broken file is refused before tick 1, see
    // bad_trim_files_and_reload_flags_are_clear_errors).
    let run = aido(&[
        "run",
        "examples/trim/patrol.edn",
        "--ticks",
        "2",
        "--reload",
        "2=examples/trim/patrol-v2.edn",
        "--reload",
        "2=examples/trim/patrol.edn",
    ]);
    let lines = lines(&run);
    let reloads = key(&lines[1], "reload");
    let reloads = reloads.as_seq().unwrap_or_else(|| panic!("{reloads}"));
    let files: Vec<Value> = reloads.iter().map(|r| key(r, "file")).collect();
    assert_eq!(
        files,
        [
            Value::string("examples/trim/patrol-v2.edn"),
            Value::string("examples/trim/patrol.edn")
        ]
    );
    for report in reloads {
        assert!(key(report, "kept").as_seq().is_some(), "{report}");
    }
}

#[test]
fn migrate_refuses_a_malformed_running_set() {
    let dir = Scratch::new("migrate-malformed");
    let save = dir.file("save.edn");
    std::fs::write(&save, "{:aido/running {:walk true}, :n 1}").unwrap();
    let run = aido(&[
        "migrate",
        "examples/trim/patrol.edn",
        "examples/trim/patrol-v2.edn",
        "--db",
        &save,
    ]);
    assert_eq!(run.code, 2, "{run:?}");
    assert!(
        run.stderr
            .contains("`:aido/running` must be a vector of node ids, found a map"),
        "{run:?}"
    );
    assert_eq!(run.stdout, "");
}
