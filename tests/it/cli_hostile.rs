//! The `aido` binary against hostile files and flags: saving (atomic,
//! exclusive, permissions and links kept, nothing written that would not read
//! back), closed pipes, huge and endless inputs, diagnostics that stay small
//! and inert, and precise messages.
#![allow(clippy::panic, clippy::expect_used, clippy::unwrap_used)]

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use aido::{Value, read_value, value::JsonMapping};
use common::Run;

struct Scratch(PathBuf);

impl Scratch {
    fn new(test: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("aido-hostile-{}-{test}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("scratch dir");
        Scratch(dir)
    }

    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }

    fn write(&self, name: &str, text: &str) {
        std::fs::write(self.0.join(name), text).expect("write scratch file");
    }

    fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.0.join(name)).expect("read scratch file")
    }

    fn files(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(&self.0)
            .expect("list scratch dir")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_aido"));
        command
            .args(args)
            .current_dir(&self.0)
            .env_remove("AIDO_MAX_INPUT_BYTES")
            .env_remove("AIDO_MAX_DIAGNOSTICS");
        command
    }

    fn run(&self, args: &[&str]) -> Run {
        Run::of(&mut self.command(args))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn assert_exit(run: &Run, code: i32) {
    assert_eq!(run.code, code, "{run:?}");
    assert!(!run.stderr.contains("panicked"), "{run:?}");
}

/// Runs `args` with stdout closed before the command writes to it.
fn run_with_closed_stdout(dir: &Scratch, args: &[&str]) -> i32 {
    let mut child = dir
        .command(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    drop(child.stdout.take());
    child.wait().expect("wait").code().expect("exited")
}

#[test]
fn a_save_is_made_even_when_stdout_closes_early() {
    let dir = Scratch::new("pipe-save");
    dir.write("tree.edn", "[:inc! {:key :n}]");
    let code = run_with_closed_stdout(
        &dir,
        &["run", "tree.edn", "--ticks", "3000", "--save", "out.edn"],
    );
    assert_eq!(code, 0);
    assert_eq!(
        read_value(&dir.read("out.edn")).unwrap(),
        read_value("{:n 3000 :aido/tick 3000}").unwrap()
    );
}

#[test]
fn a_closed_stdout_keeps_the_worst_exit_status() {
    let dir = Scratch::new("pipe-check");
    dir.write("good.edn", "[:success]");
    dir.write("bad.edn", "[:sucess]");
    let code = run_with_closed_stdout(&dir, &["check", "good.edn", "bad.edn"]);
    assert_eq!(code, 1);
}

#[test]
fn saving_over_the_tree_or_another_input_is_refused_before_any_tick() {
    let dir = Scratch::new("over-input");
    dir.write("tree.edn", "[:inc! {:key :n}]");
    dir.write("inputs.edn", "[{:a 1}]");
    let run = dir.run(&["run", "tree.edn", "--save", "tree.edn"]);
    assert_exit(&run, 2);
    assert_eq!(run.stdout, "");
    assert_eq!(dir.read("tree.edn"), "[:inc! {:key :n}]");
    let run = dir.run(&[
        "run",
        "tree.edn",
        "--inputs",
        "inputs.edn",
        "--save",
        "./inputs.edn",
    ]);
    assert_exit(&run, 2);
    assert_eq!(dir.read("inputs.edn"), "[{:a 1}]");
    // Saving over the db that was read is how a save game goes on.
    dir.write("db.edn", "{:n 1}");
    let run = dir.run(&["run", "tree.edn", "--db", "db.edn", "--save", "db.edn"]);
    assert_exit(&run, 0);
    assert_eq!(dir.read("db.edn"), "{:n 2, :aido/tick 1}\n");
}

#[cfg(unix)]
#[test]
fn a_save_keeps_permissions_writes_through_links_and_leaves_no_temporary_file() {
    use std::os::unix::fs::{PermissionsExt, symlink};
    let dir = Scratch::new("perm");
    dir.write("tree.edn", "[:inc! {:key :n}]");
    dir.write("private.edn", "{:n 41}");
    std::fs::set_permissions(
        dir.path("private.edn"),
        std::fs::Permissions::from_mode(0o600),
    )
    .unwrap();
    let run = dir.run(&[
        "run",
        "tree.edn",
        "--db",
        "private.edn",
        "--save",
        "private.edn",
    ]);
    assert_exit(&run, 0);
    let mode = std::fs::metadata(dir.path("private.edn"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    assert_eq!(dir.read("private.edn"), "{:n 42, :aido/tick 1}\n");
    // A new file gets the usual permissions (0666 less the umask), as
    // `File::create` would give it: readable by others under umask 022.
    let run = dir.run(&["run", "tree.edn", "--save", "new.edn"]);
    assert_exit(&run, 0);
    let mode = std::fs::metadata(dir.path("new.edn"))
        .unwrap()
        .permissions()
        .mode();
    let umask = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            let line = s.lines().find(|l| l.starts_with("Umask:"))?.to_owned();
            u32::from_str_radix(line.split_whitespace().nth(1)?, 8).ok()
        })
        .unwrap_or(0o022);
    assert_eq!(mode & 0o777, 0o666 & !umask);
    std::fs::remove_file(dir.path("new.edn")).unwrap();

    // A link at the target stays a link; the file it points to is replaced.
    std::fs::create_dir(dir.path("real")).unwrap();
    dir.write("real/save.edn", "{}");
    symlink("real/save.edn", dir.path("link.edn")).unwrap();
    let run = dir.run(&["run", "tree.edn", "--save", "link.edn"]);
    assert_exit(&run, 0);
    assert!(
        std::fs::symlink_metadata(dir.path("link.edn"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(dir.read("real/save.edn"), "{:n 1, :aido/tick 1}\n");
    assert_eq!(dir.files(), ["link.edn", "private.edn", "real", "tree.edn"]);
}

#[cfg(unix)]
#[test]
fn a_planted_link_at_an_old_style_temporary_name_is_never_followed() {
    use std::os::unix::fs::symlink;
    let dir = Scratch::new("plant");
    dir.write("tree.edn", "[:inc! {:key :n}]");
    dir.write("victim", "precious");
    // An attacker cannot know the temporary name; plant links at every name
    // a pid-only scheme would use for the next few processes.
    let me = std::process::id();
    for pid in me..me + 200 {
        let _ = symlink(dir.path("victim"), dir.path(&format!("out.edn.tmp-{pid}")));
    }
    let run = dir.run(&["run", "tree.edn", "--save", "out.edn"]);
    assert_exit(&run, 0);
    assert_eq!(dir.read("victim"), "precious");
    assert_eq!(dir.read("out.edn"), "{:n 1, :aido/tick 1}\n");
}

#[cfg(target_os = "linux")]
#[test]
fn stale_temporary_files_of_a_killed_save_are_removed() {
    let dir = Scratch::new("stale");
    dir.write("tree.edn", "[:inc! {:key :n}]");
    // No process has pid 4194304 or more on Linux (its pid_max).
    dir.write("out.edn.aido-tmp-4194305-0123456789abcdef", "half a save");
    let run = dir.run(&["run", "tree.edn", "--save", "out.edn"]);
    assert_exit(&run, 0);
    assert_eq!(dir.files(), ["out.edn", "tree.edn"]);
}

#[test]
fn json_saves_refuse_what_would_not_read_back() {
    let dir = Scratch::new("json-lossy");
    dir.write("tree.edn", "[:success]");
    for (name, db) in [
        ("colon", r#"{:greeting ":hello"}"#),
        ("collide", r#"{:a 1, "a" 2}"#),
        ("nan", "{:x ##NaN}"),
        ("inf", "{:x [1 ##Inf]}"),
        ("slashes", r#"{"a/b/c" 1}"#),
        ("set", "{:s #{1 2}}"),
    ] {
        dir.write(&format!("{name}.edn"), db);
        let run = dir.run(&[
            "run",
            "tree.edn",
            "--db",
            &format!("{name}.edn"),
            "--save",
            "out.json",
        ]);
        assert_exit(&run, 2);
        assert!(
            run.stderr.starts_with("aido: out.json: cannot save: "),
            "{name}: {}",
            run.stderr
        );
        assert!(!dir.path("out.json").exists(), "{name}");
        // The tagged mapping keeps each of them exactly.
        let run = dir.run(&[
            "run",
            "tree.edn",
            "--db",
            &format!("{name}.edn"),
            "--save",
            "out.tagged.json",
        ]);
        assert_exit(&run, 0);
        let mut back =
            Value::from_json_text(&dir.read("out.tagged.json"), JsonMapping::Tagged).unwrap();
        // The save says how many ticks it has had, and is otherwise the db.
        let count = back
            .as_map_mut()
            .and_then(|m| m.shift_remove(&Value::keyword("aido/tick")));
        assert_eq!(count, Some(Value::Int(1)), "{name}");
        assert_eq!(back, read_value(db).unwrap(), "{name}");
        let run = dir.run(&["run", "tree.edn", "--db", "out.tagged.json"]);
        assert_exit(&run, 0);
    }
}

#[test]
fn a_saved_db_always_reads_back() {
    let dir = Scratch::new("deep-save");
    // Each visit nests the db one level deeper than the reader's limit allows.
    dir.write(
        "tree.edn",
        "[:loop {:count 300} [:define! {:key [:m :y] :val [:aido/db :m]}]]",
    );
    let run = dir.run(&["run", "tree.edn", "--save", "out.edn"]);
    assert!(run.code == 0 || run.code == 2, "{run:?}");
    assert!(!run.stderr.contains("panicked"), "{run:?}");
    if dir.path("out.edn").exists() {
        read_value(&dir.read("out.edn")).expect("what aido writes, aido reads");
    }
}

#[test]
fn json_dbs_with_big_integers_or_a_byte_order_mark_are_refused_where_they_are() {
    let dir = Scratch::new("json-read");
    dir.write("tree.edn", "[:success]");
    dir.write("big.json", "{\"a\": 1,\n \"b\": 18446744073709551616}");
    let run = dir.run(&["run", "tree.edn", "--db", "big.json"]);
    assert_exit(&run, 2);
    assert_eq!(
        run.stderr,
        "aido: big.json:2:7: integer 18446744073709551616 does not fit in 64 signed bits\n"
    );
    dir.write("bom.json", "\u{feff}{\"a\": 1}");
    let run = dir.run(&["run", "tree.edn", "--db", "bom.json"]);
    assert_exit(&run, 2);
    assert!(run.stderr.contains("byte-order mark"), "{}", run.stderr);
}

#[test]
fn inputs_beyond_the_size_limit_are_refused_quickly() {
    let dir = Scratch::new("size");
    if Path::new("/dev/zero").exists() {
        let run = dir.run(&["check", "/dev/zero"]);
        assert_exit(&run, 2);
        assert!(
            run.stderr
                .starts_with("aido: /dev/zero: larger than the input limit"),
            "{}",
            run.stderr
        );
    }
    dir.write("tree.edn", "[:success]");
    let run = Run::of(
        dir.command(&["check", "tree.edn"])
            .env("AIDO_MAX_INPUT_BYTES", "5"),
    );
    assert_exit(&run, 2);
    assert_eq!(
        run.stderr,
        "aido: tree.edn: larger than the input limit of 5 bytes (set AIDO_MAX_INPUT_BYTES to raise it)\n"
    );
    let run = Run::of(
        dir.command(&["check", "tree.edn"])
            .env("AIDO_MAX_INPUT_BYTES", "10"),
    );
    assert_exit(&run, 0);
}

#[test]
fn diagnostics_are_capped_per_file_and_per_line() {
    let dir = Scratch::new("diag-cap");
    let mut tree = String::from("[:sequence");
    for i in 0..2_000 {
        tree.push_str(&format!(" [:unknown-{i}]"));
    }
    tree.push(']');
    dir.write("many.edn", &tree);
    let run = dir.run(&["check", "many.edn"]);
    assert_exit(&run, 1);
    assert_eq!(run.stderr.matches("error[E0003]").count(), 50);
    assert!(
        run.stderr.contains("error: 1950 more problems not shown\n"),
        "{}",
        &run.stderr[run.stderr.len() - 200..]
    );
    assert!(run.stderr.ends_with("error: 2000 problems found\n"));
    // Each diagnostic shows a window of the line, not the whole 30 KB line.
    assert!(run.stderr.len() < 50 * 700, "{} bytes", run.stderr.len());
    let run = Run::of(
        dir.command(&["check", "many.edn"])
            .env("AIDO_MAX_DIAGNOSTICS", "3"),
    );
    assert_eq!(run.stderr.matches("error[E0003]").count(), 3);
}

#[test]
fn control_characters_in_a_tree_are_escaped_in_diagnostics() {
    let dir = Scratch::new("escape");
    dir.write("evil.edn", "[:sequence \"\u{1b}[2J\r fake ok\" [:nope]]");
    let run = dir.run(&["check", "evil.edn"]);
    assert_exit(&run, 1);
    assert!(
        !run.stderr.contains('\u{1b}') && !run.stderr.contains('\r'),
        "{:?}",
        run.stderr
    );
    assert!(
        run.stderr.contains("\\u{1b}[2J\\u{d} fake ok"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_huge_unknown_name_is_reported_quickly_and_briefly() {
    let dir = Scratch::new("huge-name");
    let name = "x".repeat(2_000_000);
    dir.write("huge.edn", &format!("[:{name}]"));
    let run = dir.run(&["check", "huge.edn"]);
    assert_exit(&run, 1);
    assert!(
        run.stderr.len() < 2_000,
        "{} bytes of diagnostics",
        run.stderr.len()
    );
    assert!(!run.stderr.contains("did you mean"));
}

#[test]
fn messages_say_what_is_wrong() {
    let dir = Scratch::new("messages");
    dir.write("tree.edn", "[:success]");
    let run = dir.run(&["run", "tree.edn", "--ticks", "99999999999999999999"]);
    assert_exit(&run, 2);
    assert_eq!(
        run.stderr,
        "aido: --ticks: `99999999999999999999` is too large (at most 18446744073709551615)\n"
    );
    let run = dir.run(&["run", "tree.edn", "--seed", "-99999999999999999999"]);
    assert_exit(&run, 2);
    assert!(run.stderr.contains("is out of range"), "{}", run.stderr);
    dir.write("nul.edn", "[:success]\0");
    let run = dir.run(&["check", "nul.edn"]);
    assert_exit(&run, 1);
    assert!(!run.stderr.contains("more than one form"), "{}", run.stderr);
    assert!(
        run.stderr
            .starts_with("error[E0001]: unexpected character `\\0` after the form"),
        "{}",
        run.stderr
    );
}

#[test]
fn bench_refuses_more_agents_than_memory_allows() {
    let dir = Scratch::new("bench-agents");
    let npc = common::examples_dir().join("npc.edn");
    // Five billion agents need terabytes at a few hundred bytes each: more
    // than any machine this runs on has (fifty million, the number here
    // before, fit once the db became compact).
    let run = dir.run(&[
        "bench",
        npc.to_str().unwrap(),
        "--agents",
        "5000000000",
        "--ticks",
        "1",
    ]);
    assert_exit(&run, 2);
    assert!(run.stderr.starts_with("aido: --agents: "), "{}", run.stderr);
}

#[test]
fn a_save_and_a_page_to_one_file_are_refused_before_any_tick() {
    let dir = Scratch::new("save-page");
    dir.write("tree.edn", "[:inc! {:key :n}]");
    for page in ["out.edn", "./out.edn"] {
        let run = dir.run(&["run", "tree.edn", "--save", "out.edn", "--timeline", page]);
        assert_exit(&run, 2);
        assert_eq!(run.stdout, "", "{run:?}");
        assert!(run.stderr.contains("--save file"), "{run:?}");
        assert_eq!(dir.files(), ["tree.edn"]);
    }
}

#[cfg(unix)]
#[test]
fn a_read_only_target_is_refused_as_cp_does() {
    use std::os::unix::fs::PermissionsExt;
    let dir = Scratch::new("read-only");
    dir.write("tree.edn", "[:inc! {:key :n}]");
    dir.write("kept.edn", "{:n 41}");
    std::fs::set_permissions(dir.path("kept.edn"), std::fs::Permissions::from_mode(0o444)).unwrap();
    let run = dir.run(&["run", "tree.edn", "--save", "kept.edn"]);
    assert_exit(&run, 2);
    assert_eq!(run.stdout, "", "refused before the first tick: {run:?}");
    assert_eq!(
        run.stderr,
        "aido: kept.edn: cannot save: the file is read-only\n"
    );
    assert_eq!(dir.read("kept.edn"), "{:n 41}");
    // The same for a page and a golden timeline.
    let run = dir.run(&["run", "tree.edn", "--timeline", "kept.edn"]);
    assert_exit(&run, 2);
    assert_eq!(dir.read("kept.edn"), "{:n 41}");
    dir.write("t.test.edn", "{:tree \"tree.edn\"}");
    dir.write("t.timeline", "old");
    std::fs::set_permissions(
        dir.path("t.timeline"),
        std::fs::Permissions::from_mode(0o444),
    )
    .unwrap();
    let run = dir.run(&["test", "t.test.edn", "--accept"]);
    assert_exit(&run, 2);
    assert!(
        run.stderr
            .contains("t.timeline: cannot save: the file is read-only"),
        "{run:?}"
    );
    assert_eq!(dir.read("t.timeline"), "old");
}

#[test]
fn golden_timelines_go_through_the_atomic_exclusive_writer() {
    let dir = Scratch::new("golden-writer");
    dir.write("tree.edn", "[:inc! {:key :n}]");
    dir.write("t.test.edn", "{:tree \"tree.edn\"}");
    // A killed --accept left its temporary file (no process has pid
    // 4194305 on Linux): the next one removes it.
    dir.write(
        "t.timeline.aido-tmp-4194305-0123456789abcdef",
        "half a golden",
    );
    let run = dir.run(&["test", "t.test.edn", "--accept"]);
    assert_exit(&run, 0);
    assert!(run.stdout.contains("wrote t.timeline"), "{run:?}");
    assert!(dir.read("t.timeline").starts_with("tick 1: success"));
    assert!(
        !dir.files().iter().any(|f| f.contains("aido-tmp")),
        "{:?}",
        dir.files()
    );
}

#[test]
fn a_scenario_reads_only_files_in_its_folder_and_never_echoes_them() {
    let dir = Scratch::new("confined");
    std::fs::create_dir_all(dir.path("s")).unwrap();
    dir.write("secret.edn", "SECRET_TOKEN=hunter2 and more");
    dir.write("s/tree.edn", "[:success]");
    #[cfg(unix)]
    std::os::unix::fs::symlink(dir.path("secret.edn"), dir.path("s/link.edn")).unwrap();
    let secret = dir.path("secret.edn").display().to_string();
    let mut cases = vec![
        format!("{{:tree \"{secret}\" :expect [{{:tick 1}}]}}"),
        "{:tree \"../secret.edn\" :expect [{:tick 1}]}".to_owned(),
        "{:tree \"tree.edn\" :db \"../secret.edn\" :expect [{:tick 1}]}".to_owned(),
        "{:tree \"tree.edn\" :inputs \"/proc/self/environ\" :expect [{:tick 1}]}".to_owned(),
        "{:tree \"tree.edn\" :stubs \"../secret.edn\" :expect [{:tick 1}]}".to_owned(),
        "{:tree \"tree.edn\" :trims \"../secret.edn\" :expect [{:tick 1}]}".to_owned(),
        "{:tree \"tree.edn\" :nodes \"../secret.edn\" :expect [{:tick 1}]}".to_owned(),
    ];
    if cfg!(unix) {
        cases.push("{:tree \"link.edn\" :expect [{:tick 1}]}".to_owned());
    }
    for case in &cases {
        dir.write("s/x.test.edn", case);
        let run = dir
            .command(&["test", "s/x.test.edn"])
            .env("SECRET_TOKEN", "hunter2")
            .output()
            .unwrap();
        let (stdout, stderr) = (
            String::from_utf8_lossy(&run.stdout),
            String::from_utf8_lossy(&run.stderr),
        );
        assert_eq!(run.status.code(), Some(2), "{case}: {stdout}{stderr}");
        assert!(
            stderr.contains("outside the scenario's folder"),
            "{case}: {stderr}"
        );
        assert!(
            !stderr.contains("hunter2") && !stdout.contains("hunter2"),
            "{case}: {stderr}"
        );
    }
    // The flag lets them through; a read error then quotes a short excerpt.
    dir.write(
        "s/x.test.edn",
        "{:tree \"../secret.edn\" :expect [{:tick 1}]}",
    );
    dir.write(
        "secret.edn",
        &format!("[:success {}]", "TOKEN=x/y/".repeat(1000)),
    );
    let run = dir.run(&["test", "s/x.test.edn", "--allow-outside"]);
    assert_exit(&run, 2);
    assert!(run.stderr.len() < 400, "{run:?}");
    assert!(
        run.stderr.contains("invalid symbol `TOKEN=x/y/TOKEN="),
        "{run:?}"
    );
}

#[test]
fn files_a_scenario_names_keep_the_input_limit() {
    let dir = Scratch::new("scenario-limit");
    dir.write("tree.edn", "[:success]");
    dir.write("big.edn", &format!("{{:a \"{}\"}}", "x".repeat(200)));
    dir.write(
        "x.test.edn",
        "{:tree \"tree.edn\" :db \"big.edn\" :expect [{:tick 1}]}",
    );
    let run = dir
        .command(&["test", "x.test.edn"])
        .env("AIDO_MAX_INPUT_BYTES", "100")
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        stderr.contains("larger than the input limit of 100 bytes"),
        "{stderr}"
    );
    // A device is stopped at the limit too (it would never end).
    #[cfg(target_os = "linux")]
    {
        dir.write(
            "x.test.edn",
            "{:tree \"tree.edn\" :db \"zero.edn\" :expect [{:tick 1}]}",
        );
        std::os::unix::fs::symlink("/dev/zero", dir.path("zero.edn")).unwrap();
        let run = dir.run(&["test", "x.test.edn", "--allow-outside"]);
        assert_exit(&run, 2);
        assert!(
            run.stderr.contains("larger than the input limit"),
            "{run:?}"
        );
    }
}

#[test]
fn a_scenario_asking_for_endless_ticks_is_refused() {
    let dir = Scratch::new("scenario-ticks");
    dir.write("tree.edn", "[:success]");
    for case in [
        "{:tree \"tree.edn\" :ticks 9223372036854775807 :expect [{:tick 1}]}",
        "{:tree \"tree.edn\" :expect [{:tick 9223372036854775807}]}",
    ] {
        dir.write("x.test.edn", case);
        let run = dir.run(&["test", "x.test.edn"]);
        assert_exit(&run, 2);
        assert!(run.stderr.contains("at most 100000 ticks"), "{run:?}");
    }
}

#[test]
fn a_scenario_json_db_is_read_as_aido_run_reads_it() {
    let dir = Scratch::new("scenario-json");
    dir.write("tree.edn", "[:success]");
    dir.write("big.json", "{\"n\": 12345678901234567890}");
    dir.write("bom.json", "\u{feff}{\"n\": 1}");
    dir.write(
        "db.tagged.json",
        "{\"k\": {\"#kw\": \"a/b\"}, \"n\": 9007199254740993}",
    );
    for (db, code, expect) in [
        ("big.json", 2, "64 signed bits"),
        ("bom.json", 2, "byte-order mark"),
        ("db.tagged.json", 0, ""),
    ] {
        dir.write(
            "x.test.edn",
            &format!(
                "{{:tree \"tree.edn\" :db \"{db}\" :expect [{{:tick 1 :db {{:k :a/b :n 9007199254740993}}}}]}}"
            ),
        );
        let run = dir.run(&["test", "x.test.edn"]);
        assert_exit(&run, code);
        assert!(run.stderr.contains(expect), "{db}: {run:?}");
        // aido run --db says the same.
        let run = dir.run(&["run", "tree.edn", "--db", db]);
        assert_exit(&run, code);
        assert!(run.stderr.contains(expect), "{db}: {run:?}");
    }
}

#[test]
fn control_characters_never_reach_the_terminal() {
    let dir = Scratch::new("control-chars");
    dir.write(
        "tree.edn",
        "[:sequence {:id \"a\u{1b}c\u{0}z\"} [:success {:id \"x\u{1b}[31mred\"}]]",
    );
    for args in [
        &["show", "tree.edn"][..],
        &["show", "tree.edn", "--format", "dot"],
        &["show", "tree.edn", "--format", "mermaid"],
        &["run", "tree.edn", "--format", "pretty", "--trace"],
        &["run", "tree.edn", "--trace"],
    ] {
        let run = dir.run(args);
        assert_exit(&run, 0);
        assert!(
            !run.stdout.contains(['\u{1b}', '\u{0}']) && !run.stderr.contains(['\u{1b}', '\u{0}']),
            "{args:?}: {run:?}"
        );
        assert!(run.stdout.contains("\\u001b"), "{args:?}: {run:?}");
    }
    // A node's error message (a stub's, here) in the pretty timeline and on stderr.
    dir.write(
        "stubs.edn",
        "{:boom {:status :error :message \"\u{1b}[2J gone\"}}",
    );
    dir.write("boom.edn", "[:sequence [:success {:id :boom}]]");
    let run = dir.run(&[
        "run",
        "boom.edn",
        "--stubs",
        "stubs.edn",
        "--format",
        "pretty",
    ]);
    assert_exit(&run, 0);
    assert!(run.stdout.contains("[2J gone"), "{run:?}");
    assert!(
        !run.stdout.contains('\u{1b}') && !run.stderr.contains('\u{1b}'),
        "{run:?}"
    );
    // One-line read errors: a bad token and a file name with an escape.
    dir.write("bad.edn", "[:a \u{1b}c]");
    dir.write("bad2.edn", "[:a 12\u{1b}c]");
    dir.write("e\u{1b}c.edn", "[");
    for file in ["bad.edn", "bad2.edn", "e\u{1b}c.edn", "no\u{1b}such.edn"] {
        let run = dir.run(&["run", file]);
        assert_ne!(run.code, 0);
        assert!(!run.stderr.contains('\u{1b}'), "{file:?}: {run:?}");
    }
}

#[test]
fn json_tick_lines_refuse_nan_and_infinities_instead_of_printing_null() {
    let dir = Scratch::new("json-lines-nan");
    dir.write(
        "tree.edn",
        "[:define! {:key :x :val [:aido/fn / 1.0 [:aido/db :zero]]}]",
    );
    dir.write("db.edn", "{:zero 0.0}");
    let run = dir.run(&["run", "tree.edn", "--db", "db.edn", "--format", "json"]);
    assert_exit(&run, 2);
    assert!(!run.stdout.contains("null"), "{run:?}");
    assert!(
        run.stderr.starts_with("aido: --format json: tick 1: "),
        "{run:?}"
    );
    // The EDN line holds it.
    let run = dir.run(&["run", "tree.edn", "--db", "db.edn"]);
    assert_exit(&run, 0);
    assert!(run.stdout.contains("##Inf"), "{run:?}");
}
