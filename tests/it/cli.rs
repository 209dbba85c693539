//! The `aido` command-line tool, run as a real process: aido's own suite
//! through `aido run`, saved dbs carried across processes, seeded runs, every
//! error path, and snapshots of whole runs of the shipped examples.

// clippy.toml allows these only inside `#[test]` functions; the helpers here
// (and in `common`) are test code too, where failing loudly is the point.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use common::Run;

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use aido::{Value, read_value};

const MANIFEST_DIR: &str = env!("CARGO_MANIFEST_DIR");

impl Run {
    /// Each stdout line read as EDN.
    fn lines(&self) -> Vec<Value> {
        self.stdout
            .lines()
            .map(|l| read_value(l).unwrap_or_else(|e| panic!("line `{l}` is not EDN: {e}")))
            .collect()
    }

    /// Asserts a clean failure: the exit code, nothing on stdout, and stderr
    /// starting with `first_line`, with no sign of a panic.
    fn assert_fails(&self, code: i32, first_line: &str) {
        assert_eq!(self.code, code, "exit code of {self:?}");
        assert_eq!(self.stdout, "", "stdout of {self:?}");
        assert_eq!(
            self.stderr.lines().next(),
            Some(first_line),
            "stderr of {self:?}"
        );
        assert_no_panic(&self.stderr);
    }
}

fn assert_no_panic(stderr: &str) {
    assert!(!stderr.contains("panicked"), "stderr: {stderr}");
    assert!(!stderr.contains("RUST_BACKTRACE"), "stderr: {stderr}");
}

/// Runs `aido args..` in `dir`.
fn aido(dir: &Path, args: &[&str]) -> Run {
    Run::of(
        Command::new(env!("CARGO_BIN_EXE_aido"))
            .args(args)
            .current_dir(dir),
    )
}

/// A fresh folder under the system's temp dir, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(test: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("aido-cli-{}-{test}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("scratch dir");
        Scratch(dir)
    }

    fn path(&self) -> &Path {
        &self.0
    }

    fn write(&self, name: &str, text: &str) {
        std::fs::write(self.0.join(name), text).expect("write scratch file");
    }

    fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.0.join(name)).expect("read scratch file")
    }

    /// The names of the files in the folder, sorted.
    fn files(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(&self.0)
            .expect("list scratch dir")
            .map(|e| {
                e.expect("dir entry")
                    .file_name()
                    .to_string_lossy()
                    .into_owned()
            })
            .collect();
        names.sort();
        names
    }

    fn run(&self, args: &[&str]) -> Run {
        aido(&self.0, args)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn key(m: &Value, k: &str) -> Value {
    m.get(&Value::keyword(k)).cloned().unwrap_or_default()
}

/// The `:db` of a printed tick line.
fn db_of(line: &Value) -> Value {
    key(line, "db")
}

fn ints(v: &Value) -> Vec<i64> {
    v.as_seq()
        .unwrap_or_else(|| panic!("{v} is not a vector"))
        .iter()
        .map(|x| x.as_int().expect("an integer"))
        .collect()
}

// --- aido's own suite -------------------------------------------------------

#[test]
fn every_case_of_aidos_suite_passes_through_the_cli() {
    let suite = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/conformance/aido-suite.edn"
    );
    assert!(Path::new(suite).exists(), "{suite}");
    let cases = common::conformance_cases();
    assert!(cases.len() >= 17, "the suite has {} cases", cases.len());
    let dir = Scratch::new("suite");
    for (i, case) in cases.iter().enumerate() {
        let (tree, db) = (format!("{i}-tree.edn"), format!("{i}-db.edn"));
        dir.write(&tree, &case.tree.to_string());
        dir.write(&db, &case.db.to_string());
        let ticks = case.ticks.to_string();
        let run = dir.run(&["run", &tree, "--db", &db, "--ticks", &ticks]);
        assert_eq!(run.code, 0, "case {}: {run:?}", case.name);
        let lines = run.lines();
        assert_eq!(
            lines.len(),
            case.expect.len(),
            "case {}: {}",
            case.name,
            run.stdout
        );
        for (n, (line, expected)) in lines.iter().zip(&case.expect).enumerate() {
            let at = format!("case {} tick {}", case.name, n + 1);
            assert_eq!(key(line, "tick"), Value::Int(n as i64 + 1), "{at}");
            assert_eq!(key(line, "status"), expected.status, "{at}: status");
            assert_eq!(
                common::without_aido_keys(&db_of(line)),
                expected.db,
                "{at}: db"
            );
        }
    }
}

// --- saved dbs and seeds ----------------------------------------------------

const CHOOSE_EACH: &str = "[:choose-each [:emit! {:key :seen :val 0}] [:emit! {:key :seen :val 1}] \
                           [:emit! {:key :seen :val 2}] [:emit! {:key :seen :val 3}]]";

#[test]
fn a_saved_db_continues_a_choose_each_round_in_another_process() {
    let dir = Scratch::new("resume");
    dir.write("tree.edn", CHOOSE_EACH);

    let first = dir.run(&[
        "run", "tree.edn", "--seed", "7", "--ticks", "2", "--save", "s.edn",
    ]);
    assert_eq!(first.code, 0, "{first:?}");
    let saved = read_value(&dir.read("s.edn")).expect("the saved db is EDN");
    assert_eq!(key(&saved, "aido/seed"), Value::Int(7));
    assert_eq!(ints(&key(&saved, "seen")).len(), 2);
    // The saved db is the last tick's, with the count of ticks run.
    let mut last = db_of(&first.lines()[1]);
    if let Some(map) = last.as_map_mut() {
        map.insert(Value::keyword("aido/tick"), Value::Int(2));
    }
    assert_eq!(last, saved, "the saved db is the last tick's");

    let second = dir.run(&[
        "run", "tree.edn", "--db", "s.edn", "--ticks", "2", "--save", "s.edn",
    ]);
    assert_eq!(second.code, 0, "{second:?}");
    for line in second.lines() {
        assert_eq!(key(&line, "status"), Value::keyword("success"), "{line}");
    }
    let seen = ints(&key(&read_value(&dir.read("s.edn")).expect("EDN"), "seen"));
    let mut sorted = seen.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, [0, 1, 2, 3], "every child once: {seen:?}");

    // The round carried over exactly as if one process had run all four ticks.
    let whole = dir.run(&["run", "tree.edn", "--seed", "7", "--ticks", "4"]);
    assert_eq!(ints(&key(&db_of(&whole.lines()[3]), "seen")), seen);

    // Without :repeat, the fifth tick finds the round used up.
    let fifth = dir.run(&["run", "tree.edn", "--db", "s.edn"]);
    assert_eq!(fifth.code, 0, "{fifth:?}");
    let line = &fifth.lines()[0];
    assert_eq!(key(line, "status"), Value::keyword("failure"));
    assert_eq!(ints(&key(&db_of(line), "seen")), seen);
    assert_eq!(
        dir.files(),
        ["s.edn", "tree.edn"],
        "no temporary file is left"
    );
}

const CHOOSE: &str = "[:choose [:inc! {:key :a}] [:inc! {:key :b}] [:inc! {:key :c}]]";

#[test]
fn the_same_seed_gives_the_same_run_and_another_seed_another() {
    let dir = Scratch::new("seeds");
    dir.write("tree.edn", CHOOSE);
    let run = |seed: &str| {
        let run = dir.run(&["run", "tree.edn", "--ticks", "100", "--seed", seed]);
        assert_eq!(run.code, 0, "{run:?}");
        assert_eq!(run.stdout.lines().count(), 100);
        run.stdout
    };
    let (a, again, b) = (run("42"), run("42"), run("43"));
    assert_eq!(a, again);
    assert_ne!(a, b);
    // All three children get picked over 100 ticks.
    let last = read_value(a.lines().last().expect("a line")).expect("EDN");
    let counts: Vec<i64> = ["a", "b", "c"]
        .iter()
        .map(|k| key(&db_of(&last), k).as_int().unwrap_or(0))
        .collect();
    assert_eq!(counts.iter().sum::<i64>(), 100);
    assert!(counts.iter().all(|&n| n > 0), "{counts:?}");
}

#[test]
fn a_seed_replaces_the_dbs_seed_and_restarts_its_stream() {
    let dir = Scratch::new("reseed");
    dir.write("tree.edn", CHOOSE);
    dir.write("db.edn", "{:aido/seed 1, :aido/rng-pos 17}");
    let fresh = dir.run(&["run", "tree.edn", "--ticks", "20", "--seed", "5"]);
    let over = dir.run(&[
        "run", "tree.edn", "--ticks", "20", "--seed", "5", "--db", "db.edn",
    ]);
    assert_eq!(fresh.code, 0, "{fresh:?}");
    assert_eq!(over.stdout, fresh.stdout);
}

// --- inputs, formats and dbs ------------------------------------------------

#[test]
fn inputs_are_merged_before_their_tick() {
    let dir = Scratch::new("inputs");
    dir.write(
        "tree.edn",
        "[:sequence [:present? {:key :go}] [:inc! {:key :n}] [:dissoc! {:key :go}]]",
    );
    dir.write("db.edn", "{:n 10, :keep 1}");
    // The third element is never used (two ticks), so it is not checked.
    dir.write("inputs.edn", "[{:go true, :keep 2} nil :unused]");
    let run = dir.run(&[
        "run",
        "tree.edn",
        "--db",
        "db.edn",
        "--inputs",
        "inputs.edn",
        "--ticks",
        "2",
    ]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        run.stdout,
        "{:tick 1, :status :success, :db {:n 11, :keep 2}}\n\
         {:tick 2, :status :failure, :db {:n 11, :keep 2}}\n"
    );
}

#[test]
fn json_format_prints_one_json_object_per_tick() {
    let dir = Scratch::new("json-format");
    dir.write(
        "tree.edn",
        "[:sequence [:inc! {:key :n}] [:define! {:key :mood :val :calm}]]",
    );
    let run = dir.run(&["run", "tree.edn", "--ticks", "2", "--format", "json"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        run.stdout,
        "{\"tick\":1,\"status\":\":success\",\"db\":{\"n\":1,\"mood\":\":calm\"}}\n\
         {\"tick\":2,\"status\":\":success\",\"db\":{\"n\":2,\"mood\":\":calm\"}}\n"
    );
    for line in run.stdout.lines() {
        let json: serde_json::Value = serde_json::from_str(line).expect("each line is JSON");
        let keys: Vec<&String> = json.as_object().expect("an object").keys().collect();
        assert_eq!(keys, ["tick", "status", "db"]);
    }
}

#[test]
fn a_json_db_is_read_and_saved_as_json() {
    let dir = Scratch::new("json-db");
    dir.write(
        "tree.edn",
        "[:sequence [:test? {:key :mood :oper = :val :calm}] [:inc! {:key :n}]]",
    );
    dir.write("db.json", r#"{"n": 41, "mood": ":calm", "name": "Ann"}"#);
    let run = dir.run(&["run", "tree.edn", "--db", "db.json", "--save", "out.json"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        run.stdout,
        "{:tick 1, :status :success, :db {:n 42, :mood :calm, :name \"Ann\"}}\n"
    );
    assert_eq!(
        dir.read("out.json"),
        "{\n  \"n\": 42,\n  \"mood\": \":calm\",\n  \"name\": \"Ann\",\n  \"aido/tick\": 1\n}\n"
    );
    // The saved JSON reads back as the same db.
    let again = dir.run(&["run", "tree.edn", "--db", "out.json"]);
    assert_eq!(
        db_of(&again.lines()[0]).to_string(),
        "{:n 43, :mood :calm, :name \"Ann\"}"
    );
}

#[test]
fn a_tick_that_ends_in_error_is_printed_and_the_run_goes_on() {
    let dir = Scratch::new("tick-error");
    dir.write("tree.edn", "[:selector\n [:inc! {:key :n}]]");
    dir.write("db.edn", "{:n \"ten\"}");
    dir.write("inputs.edn", "[nil {:n 1}]");
    let run = dir.run(&[
        "run",
        "tree.edn",
        "--db",
        "db.edn",
        "--inputs",
        "inputs.edn",
        "--ticks",
        "2",
    ]);
    assert_eq!(run.code, 0, "{run:?}");
    let lines = run.lines();
    assert_eq!(key(&lines[0], "status"), Value::keyword("error"));
    let error = key(&db_of(&lines[0]), "aido/error");
    assert_eq!(key(&error, "line"), Value::Int(2), "{error}");
    assert_eq!(key(&lines[1], "status"), Value::keyword("success"));
    assert_eq!(
        db_of(&lines[1]).to_string(),
        "{:n 2}",
        "the error is cleared"
    );
    assert!(
        run.stderr
            .starts_with("aido: tree.edn: tick 1 ended in error: "),
        "{}",
        run.stderr
    );
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
}

// --- error paths ------------------------------------------------------------

#[test]
fn missing_and_malformed_trees_are_reported_with_their_place() {
    let dir = Scratch::new("bad-tree");
    dir.run(&["run", "missing.edn"])
        .assert_fails(2, "aido: missing.edn: no such file or directory");
    dir.write("open.edn", "[:selector");
    let run = dir.run(&["run", "open.edn"]);
    run.assert_fails(2, "aido: open.edn:1:1: `[` opened here is never closed");
    assert_eq!(run.stderr.lines().count(), 1);
}

#[test]
fn compile_errors_exit_1_with_rendered_diagnostics() {
    let dir = Scratch::new("compile-error");
    dir.write("tree.edn", "[:selector\n  [:sequense [:success]]]");
    let run = dir.run(&["run", "tree.edn", "--ticks", "3"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert_eq!(run.stdout, "");
    assert!(run.stderr.starts_with("error[E0003]: "), "{}", run.stderr);
    assert!(run.stderr.contains("--> tree.edn:2:4"), "{}", run.stderr);
    assert_no_panic(&run.stderr);
}

#[test]
fn bad_flags_are_reported_with_the_usage() {
    let dir = Scratch::new("bad-flags");
    dir.write("tree.edn", "[:success]");
    let positive = "expected a positive integer";
    dir.run(&["run", "tree.edn", "--ticks", "0"])
        .assert_fails(2, &format!("aido: --ticks: {positive}, got `0`"));
    dir.run(&["run", "tree.edn", "--ticks", "x"])
        .assert_fails(2, &format!("aido: --ticks: {positive}, got `x`"));
    dir.run(&["run", "tree.edn", "--ticks=-3"])
        .assert_fails(2, &format!("aido: --ticks: {positive}, got `-3`"));
    dir.run(&["run", "tree.edn", "--seed", "1.5"])
        .assert_fails(2, "aido: --seed: expected an integer, got `1.5`");
    dir.run(&["run", "tree.edn", "--format", "xml"])
        .assert_fails(
            2,
            "aido: --format: expected `edn`, `json` or `pretty`, got `xml`",
        );

    let run = dir.run(&["run", "tree.edn", "--tick", "3"]);
    run.assert_fails(2, "aido: unknown flag `--tick`");
    assert!(
        run.stderr.contains("usage: aido run TREE"),
        "{}",
        run.stderr
    );
    dir.run(&["run", "tree.edn", "--db"])
        .assert_fails(2, "aido: `--db` needs a value");
    dir.run(&["run", "tree.edn", "--db", "--ticks", "2"])
        .assert_fails(2, "aido: `--db` needs a value");
    dir.run(&["run", "tree.edn", "--ticks", "2", "--ticks", "3"])
        .assert_fails(2, "aido: `--ticks` given more than once");
    dir.run(&["run"]).assert_fails(2, "aido: no TREE given");
    dir.run(&["run", "tree.edn", "other.edn"]).assert_fails(
        2,
        "aido: unexpected argument `other.edn`: run takes one TREE",
    );
}

#[test]
fn unknown_commands_and_help() {
    let dir = Scratch::new("commands");
    let run = dir.run(&["frobnicate"]);
    run.assert_fails(2, "aido: unknown command `frobnicate`");
    assert!(run.stderr.contains("aido --help"), "{}", run.stderr);
    dir.run(&["--frob"])
        .assert_fails(2, "aido: unknown flag `--frob`");
    dir.run(&[]).assert_fails(2, "aido: no command given");

    for args in [&["--help"][..], &["help"], &["-h"]] {
        let run = dir.run(args);
        assert_eq!((run.code, run.stderr.as_str()), (0, ""), "{args:?}");
        assert!(run.stdout.contains("aido run TREE"), "{}", run.stdout);
        assert!(run.stdout.contains("aido check FILE"), "{}", run.stdout);
    }
    let run = dir.run(&["run", "--help"]);
    assert_eq!(run.code, 0);
    assert!(
        run.stdout.starts_with("usage: aido run TREE"),
        "{}",
        run.stdout
    );
    assert_eq!(run, dir.run(&["help", "run"]));
}

#[test]
fn dbs_that_are_not_maps_or_not_well_formed_are_refused() {
    let dir = Scratch::new("bad-db");
    dir.write("tree.edn", "[:success]");
    dir.write("vec.edn", "[1 2]");
    dir.run(&["run", "tree.edn", "--db", "vec.edn"])
        .assert_fails(2, "aido: vec.edn: the db must be a map, found a vector");
    dir.write("int.json", "7");
    dir.run(&["run", "tree.edn", "--db", "int.json"])
        .assert_fails(2, "aido: int.json: the db must be a map, found an integer");
    dir.write("dup.edn", "{:a 1\n :a 2}");
    dir.run(&["run", "tree.edn", "--db", "dup.edn"])
        .assert_fails(2, "aido: dup.edn:2:2: duplicate map key :a");
    dir.write("comma.json", "{\"a\": 1,}");
    dir.run(&["run", "tree.edn", "--db", "comma.json"])
        .assert_fails(2, "aido: comma.json:1:9: trailing comma");
    dir.write("dup.json", "{\"a\": 1,\n \"a\": 2}");
    dir.run(&["run", "tree.edn", "--db", "dup.json"])
        .assert_fails(2, "aido: dup.json:2:8: duplicate key :a");
    dir.run(&["run", "tree.edn", "--db", "none.json"])
        .assert_fails(2, "aido: none.json: no such file or directory");
}

#[test]
fn inputs_that_are_not_a_vector_of_maps_are_refused() {
    let dir = Scratch::new("bad-inputs");
    dir.write("tree.edn", "[:success]");
    dir.write("map.edn", "{:input :hello}");
    dir.run(&["run", "tree.edn", "--inputs", "map.edn"])
        .assert_fails(
            2,
            "aido: map.edn: the inputs must be a vector of maps or nils, found a map",
        );
    dir.write("elem.edn", "[{:a 1}\n nil\n :oops]");
    dir.run(&["run", "tree.edn", "--inputs", "elem.edn", "--ticks", "3"]).assert_fails(
        2,
        "aido: elem.edn:3:2: input 2 (merged before tick 3) must be a map or nil, found a keyword",
    );
    dir.write("open.edn", "[{:a 1}");
    let run = dir.run(&["run", "tree.edn", "--inputs", "open.edn"]);
    run.assert_fails(2, "aido: open.edn:1:1: `[` opened here is never closed");
}

#[test]
fn a_failed_save_leaves_no_file_behind() {
    let dir = Scratch::new("bad-save");
    dir.write("tree.edn", "[:inc! {:key :n}]");
    let run = dir.run(&["run", "tree.edn", "--save", "nowhere/s.edn"]);
    assert_eq!(run.code, 2, "{run:?}");
    assert_eq!(
        run.stdout, "",
        "the target is checked before the first tick, so no tick runs"
    );
    assert_eq!(
        run.stderr,
        "aido: nowhere/s.edn: cannot save: no such file or directory\n"
    );

    // The temporary file is written, but the rename over a folder fails: it must go.
    std::fs::create_dir(dir.path().join("taken")).expect("mkdir");
    dir.write("taken/keep", "");
    let run = dir.run(&["run", "tree.edn", "--save", "taken"]);
    assert_eq!(run.code, 2, "{run:?}");
    assert!(
        run.stderr.starts_with("aido: taken: cannot save: "),
        "{}",
        run.stderr
    );
    assert_eq!(run.stderr.lines().count(), 1);
    assert_no_panic(&run.stderr);
    assert_eq!(dir.files(), ["taken", "tree.edn"]);
}

#[test]
fn a_save_replaces_the_old_file_whole() {
    let dir = Scratch::new("save");
    dir.write("tree.edn", "[:inc! {:key :n}]");
    dir.write(
        "s.edn",
        "{:n 1, :old \"a much longer text than the new db will need\"}",
    );
    let run = dir.run(&[
        "run", "tree.edn", "--db", "s.edn", "--save", "s.edn", "--ticks", "3",
    ]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        dir.read("s.edn"),
        "{:n 4, :old \"a much longer text than the new db will need\", :aido/tick 3}\n"
    );
    assert_eq!(dir.files(), ["s.edn", "tree.edn"]);
}

#[test]
fn a_closed_stdout_ends_the_run_quietly() {
    let dir = Scratch::new("pipe");
    dir.write("tree.edn", "[:inc! {:key :n}]");
    let mut child = Command::new(env!("CARGO_BIN_EXE_aido"))
        .args(["run", "tree.edn", "--ticks", "1000000"])
        .current_dir(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let stdout = child.stdout.take().expect("piped stdout");
    let mut first = String::new();
    BufReader::new(stdout)
        .read_line(&mut first)
        .expect("a first line");
    assert_eq!(first, "{:tick 1, :status :success, :db {:n 1}}\n");
    // The reader is dropped here, closing the pipe.
    let status = child.wait().expect("wait");
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .expect("piped stderr")
        .read_to_string(&mut stderr)
        .expect("stderr");
    assert_eq!((status.code(), stderr.as_str()), (Some(0), ""));
}

// --- check ------------------------------------------------------------------

#[test]
fn check_reports_each_file_and_exits_with_the_worst_outcome() {
    let dir = Scratch::new("check");
    dir.write("good.edn", "[:selector [:success] [:failure]]");
    dir.write("leaf.edn", "[:success]");
    let run = dir.run(&["check", "good.edn", "leaf.edn"]);
    assert_eq!(
        run,
        Run {
            code: 0,
            stdout: "ok: good.edn (3 nodes)\nok: leaf.edn (1 node)\n".into(),
            stderr: String::new()
        }
    );

    dir.write("bad.edn", "[:selector [:sucess]]");
    let run = dir.run(&["check", "bad.edn", "good.edn"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert_eq!(
        run.stdout, "ok: good.edn (3 nodes)\n",
        "later files are still checked"
    );
    assert!(run.stderr.starts_with("error[E0003]: "), "{}", run.stderr);
    assert!(run.stderr.contains("--> bad.edn:1:13"), "{}", run.stderr);

    // A malformed file is a problem found by check (E0001), not a bad argument.
    dir.write("open.edn", "[:selector");
    let run = dir.run(&["check", "open.edn"]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.starts_with("error[E0001]: "), "{}", run.stderr);

    let run = dir.run(&["check", "bad.edn", "missing.edn", "good.edn"]);
    assert_eq!(run.code, 2, "{run:?}");
    assert!(
        run.stderr
            .contains("\naido: missing.edn: no such file or directory\n"),
        "{}",
        run.stderr
    );
    assert_eq!(run.stdout, "ok: good.edn (3 nodes)\n");

    dir.run(&["check"]).assert_fails(2, "aido: no FILE given");
    dir.run(&["check", "--strict", "good.edn"])
        .assert_fails(2, "aido: unknown flag `--strict`");
}

#[test]
fn the_shipped_examples_compile() {
    let run = aido(
        Path::new(MANIFEST_DIR),
        &["check", "examples/npc.edn", "examples/chatbot.edn"],
    );
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout.lines().count(), 2);
}

// --- snapshots --------------------------------------------------------------

macro_rules! snapshot {
    ($name:expr, $value:expr) => {
        insta::with_settings!({snapshot_path => "../../snapshots", prepend_module_to_snapshot => true}, {
            insta::assert_snapshot!($name, $value);
        })
    };
}

#[test]
fn snapshot_of_the_npc_example() {
    let run = aido(
        Path::new(MANIFEST_DIR),
        &[
            "run",
            "examples/npc.edn",
            "--db",
            "examples/npc-db.edn",
            "--ticks",
            "12",
        ],
    );
    assert_eq!((run.code, run.stderr.as_str()), (0, ""));
    snapshot!("npc_run", run.stdout);
}

#[test]
fn snapshot_of_the_chatbot_example() {
    let inputs =
        std::fs::read_to_string(Path::new(MANIFEST_DIR).join("examples/chatbot-inputs.edn"))
            .expect("the inputs file");
    let ticks = read_value(&inputs)
        .expect("EDN")
        .as_seq()
        .expect("a vector")
        .len()
        .to_string();
    let run = aido(
        Path::new(MANIFEST_DIR),
        &[
            "run",
            "examples/chatbot.edn",
            "--inputs",
            "examples/chatbot-inputs.edn",
            "--seed",
            "1",
            "--ticks",
            &ticks,
        ],
    );
    assert_eq!((run.code, run.stderr.as_str()), (0, ""));
    snapshot!("chatbot_run", run.stdout);
}

#[test]
fn snapshot_of_check_on_a_tree_with_several_mistakes() {
    let dir = Scratch::new("check-snapshot");
    dir.write(
        "mistakes.edn",
        ";; A tree with a mistake on almost every line.\n\
         [:selector\n \
         [:sequense [:present? {:key :hunger}]]\n \
         [:define! {:val 1}]\n \
         [:loop {:count 3 :times 2} [:success]]\n \
         [:invert [:success] [:failure]]\n \
         (:success)]\n",
    );
    let run = dir.run(&["check", "mistakes.edn"]);
    assert_eq!((run.code, run.stdout.as_str()), (1, ""));
    snapshot!("check_mistakes", run.stderr);
}
