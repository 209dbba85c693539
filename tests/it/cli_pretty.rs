//! `aido run --format pretty` (the text timeline) on the shipped examples,
//! its `--aido-keys` and `--trace`, and `--timeline OUT.html` through the
//! binary; the edn and json lines stay as they were.
#![allow(clippy::panic, clippy::expect_used, clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::Command;

use aido::record::{Recorder, TimelineOptions, timeline};
use aido::{Registry, compile_str, read_value};

use crate::common::Run;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Runs `aido args..` in the repository's root.
fn aido(args: &[&str]) -> Run {
    Run::of(
        Command::new(env!("CARGO_BIN_EXE_aido"))
            .args(args)
            .current_dir(root()),
    )
}

fn ok(args: &[&str]) -> String {
    let out = aido(args);
    assert_eq!(out.code, 0, "aido {args:?}: {}", out.stderr);
    out.stdout
}

/// A fresh folder under the system's temp dir, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(test: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("aido-pretty-{}-{test}", std::process::id()));
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
fn the_examples_as_text_timelines() {
    insta::with_settings!({snapshot_path => "../../snapshots", prepend_module_to_snapshot => true}, {
        let npc = ok(&[
            "run", "examples/npc.edn", "--db", "examples/npc-db.edn", "--ticks", "12",
            "--format", "pretty", "--trace",
        ]);
        assert_eq!(npc.matches("tick ").count(), 12);
        insta::assert_snapshot!("npc", npc);
        let chatbot = ok(&[
            "run", "examples/chatbot.edn", "--inputs", "examples/chatbot-inputs.edn",
            "--seed", "1", "--ticks", "9", "--format", "pretty",
        ]);
        insta::assert_snapshot!("chatbot", chatbot);
        for name in ["ask", "errands", "greeting", "guard", "race"] {
            let tree = format!("examples/long/{name}.edn");
            let inputs = format!("examples/long/{name}.inputs.edn");
            let script = read_value(&std::fs::read_to_string(root().join(&inputs)).unwrap()).unwrap();
            let ticks = script.as_seq().unwrap().len().to_string();
            let text = ok(&[
                "run", &tree, "--inputs", &inputs, "--ticks", &ticks, "--seed", "1",
                "--format", "pretty", "--trace",
            ]);
            insta::assert_snapshot!(format!("long_{name}"), text);
        }
        let pick = ok(&[
            "run", "examples/trim/pick.edn", "--db", "examples/trim/pick.db.edn",
            "--trims", "examples/trim/pick.trims.edn", "--ticks", "6", "--format", "pretty", "--trace",
        ]);
        assert!(pick.contains("\n  trim {:task "), "{pick}");
        insta::assert_snapshot!("trim_pick", pick);
        let reload = ok(&[
            "run", "examples/trim/patrol.edn", "--ticks", "5",
            "--reload", "3=examples/trim/patrol-v2.edn", "--format", "pretty", "--trace",
        ]);
        assert!(reload.contains("\n  reload {:file \"examples/trim/patrol-v2.edn\", :kept [[:walk :stroll] :patrol]"), "{reload}");
        insta::assert_snapshot!("trim_patrol_reload", reload);
    });
}

#[test]
fn pretty_is_the_library_timeline_of_the_same_run() {
    let text = std::fs::read_to_string(root().join("examples/npc.edn")).unwrap();
    let tree = compile_str("examples/npc.edn", &text, &Registry::new()).unwrap();
    let mut db =
        read_value(&std::fs::read_to_string(root().join("examples/npc-db.edn")).unwrap()).unwrap();
    let mut recorder = Recorder::new(&tree, &db);
    for _ in 0..12 {
        db = recorder.tick(db, &tree).db;
    }
    let run = recorder.finish();
    for (flags, options) in [
        (&[][..], TimelineOptions::default()),
        (
            &["--trace"][..],
            TimelineOptions {
                aido_keys: false,
                trace: true,
            },
        ),
        (
            &["--aido-keys"][..],
            TimelineOptions {
                aido_keys: true,
                trace: false,
            },
        ),
        (
            &["--trace", "--aido-keys"][..],
            TimelineOptions {
                aido_keys: true,
                trace: true,
            },
        ),
    ] {
        let mut args = vec![
            "run",
            "examples/npc.edn",
            "--db",
            "examples/npc-db.edn",
            "--ticks",
            "12",
            "--format",
            "pretty",
        ];
        args.extend_from_slice(flags);
        assert_eq!(ok(&args), timeline(&run, &options), "{flags:?}");
    }
}

#[test]
fn aido_keys_are_left_out_unless_asked_for() {
    let args = [
        "run",
        "examples/long/errands.edn",
        "--ticks",
        "3",
        "--format",
        "pretty",
    ];
    let plain = ok(&args);
    assert!(!plain.contains(":aido/"), "{plain}");
    let mut with = args.to_vec();
    with.push("--aido-keys");
    let all = ok(&with);
    assert!(
        all.contains("\n  + :aido/running [:errands :shop]\n"),
        "{all}"
    );
    assert!(
        all.contains("\n  + :aido/memory {:errands {:index 1}, :shop {:ticks 1}}\n"),
        "{all}"
    );
    // Every line of the plain timeline is in the full one, in order.
    let mut rest = all.lines();
    for line in plain.lines() {
        assert!(rest.any(|l| l == line), "{line}");
    }

    let refused = aido(&["run", "examples/npc.edn", "--aido-keys"]);
    assert_eq!(refused.code, 2);
    assert!(
        refused.stderr.starts_with("aido: --aido-keys: "),
        "{}",
        refused.stderr
    );
    assert_eq!(refused.stdout, "");
}

#[test]
fn runs_that_end_in_equal_dbs_print_the_same() {
    let dir = Scratch::new("equal");
    std::fs::write(
        dir.file("t.edn"),
        "[:sequence [:define! {:key :b :val 3}] [:define! {:key :a :val 4}] [:dissoc! {:key :c}]]",
    )
    .unwrap();
    std::fs::write(dir.file("one.edn"), "{:a 1, :b 2, :c 0, :z 9}").unwrap();
    std::fs::write(dir.file("two.edn"), "{:z 9, :c 0, :b 2, :a 1}").unwrap();
    let run = |db: &str| {
        ok(&[
            "run",
            &dir.file("t.edn"),
            "--db",
            &dir.file(db),
            "--format",
            "pretty",
        ])
    };
    let one = run("one.edn");
    assert_eq!(
        one,
        "tick 1: success\n  ~ :a 1 -> 4\n  ~ :b 2 -> 3\n  - :c\n"
    );
    assert_eq!(one, run("two.edn"));
}

#[test]
fn edn_and_json_lines_stay_as_they_were() {
    let dir = Scratch::new("lines");
    let base = [
        "run",
        "examples/long/ask.edn",
        "--inputs",
        "examples/long/ask.inputs.edn",
        "--ticks",
        "7",
    ];
    for extra in [
        &[][..],
        &["--trace"][..],
        &["--format", "json"][..],
        &["--format", "json", "--trace"][..],
    ] {
        let mut args = base.to_vec();
        args.extend_from_slice(extra);
        let before = ok(&args);
        let page = dir.file("page.html");
        args.extend_from_slice(&["--timeline", &page]);
        assert_eq!(
            ok(&args),
            before,
            "{extra:?}: --timeline changes nothing printed"
        );
        assert!(
            std::fs::read_to_string(&page)
                .unwrap()
                .starts_with("<!DOCTYPE html>")
        );
        if !extra.contains(&"--trace") {
            assert!(!before.contains("trace"), "{extra:?}");
        }
    }
}

#[test]
fn the_timeline_page_is_saved_whole_or_not_at_all() {
    let dir = Scratch::new("save");
    let page = dir.file("run.html");
    // An error run still gets its page, with the error in it.
    std::fs::write(dir.file("bad.edn"), "[:less-than? {:key :name :val 3}]").unwrap();
    std::fs::write(dir.file("db.edn"), "{:name \"x\"}").unwrap();
    let out = aido(&[
        "run",
        &dir.file("bad.edn"),
        "--db",
        &dir.file("db.edn"),
        "--format",
        "pretty",
        "--timeline",
        &page,
    ]);
    assert_eq!(out.code, 0);
    assert!(
        out.stdout.starts_with("tick 1: error\n  error "),
        "{}",
        out.stdout
    );
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        html.contains("[\"error\",\"\\\"0\\\"\","),
        "the error event is in the page"
    );
    assert!(html.ends_with("</html>\n"));
    let left: Vec<_> = std::fs::read_dir(&dir.0)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left.len(), 3, "no temporary file is left: {left:?}");

    // A folder that does not exist: exit 2, nothing written.
    let nowhere = dir.file("no/such/run.html");
    let out = aido(&["run", "examples/npc.edn", "--timeline", &nowhere]);
    assert_eq!(out.code, 2);
    assert_eq!(
        out.stderr.lines().next(),
        Some(format!("aido: {nowhere}: cannot save: no such file or directory").as_str())
    );
    assert!(!Path::new(&nowhere).exists());

    // A folder, or no name at all: refused before the first tick.
    for bad in [dir.0.to_string_lossy().into_owned(), String::new()] {
        let out = aido(&["run", "examples/npc.edn", "--timeline", &bad]);
        assert_eq!(out.code, 2, "{bad}");
        assert_eq!(out.stdout, "", "nothing is printed");
        assert!(
            out.stderr
                .starts_with("aido: --timeline: expected a file to write the page to"),
            "{}",
            out.stderr
        );
    }
}
