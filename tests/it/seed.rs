//! The behaviours the seed documents describe, each a scenario in
//! tests/data/seed/: a tree (`NAME.edn`, whose comment names the rule),
//! scripted inputs (`NAME.inputs.edn`, optional) and the ticks the rule
//! expects (`NAME.expect.edn`). Each runs through `aido run --trace` and
//! every line is checked against its expectation:
//!
//! - `:status`: the tick's status;
//! - `:db`: a map of keys whose values must be as given (other keys are free);
//!   `:absent`: keys that must not be in the db;
//! - `:halts`: the ids of the nodes halted, in order (none if left out);
//! - `:ticked`: the ids of the nodes ticked, in order (not checked if left out);
//! - `:launch`, `:cancel`, `:dropped`, `:warnings`: exactly these requests,
//!   dropped completions or warnings (none if left out).
//!
//! The whole run is also snapshotted, so every change shows as a diff.
#![allow(clippy::panic, clippy::expect_used, clippy::unwrap_used)]

use std::path::Path;
use std::process::Command;

use aido::{Value, read_value};

fn kw(name: &str) -> Value {
    Value::keyword(name)
}

/// The ids in a traced line's `:trace`: halted ones and ticked ones.
fn halts_and_ticks(line: &Value) -> (Vec<Value>, Vec<Value>) {
    let mut halts = vec![];
    let mut ticked = vec![];
    for event in line
        .get(&kw("trace"))
        .and_then(Value::as_seq)
        .unwrap_or(&[])
    {
        let pair = event.as_seq().unwrap();
        if pair[0] == kw("halt") {
            halts.push(pair[1].clone());
        } else {
            ticked.push(pair[0].clone());
        }
    }
    (halts, ticked)
}

fn check_tick(name: &str, n: usize, line: &Value, expect: &Value) {
    let at = format!("{name}, tick {n}");
    let expect_map = expect
        .as_map()
        .unwrap_or_else(|| panic!("{at}: expectation is not a map"));
    for key in expect_map.keys() {
        let known = [
            "status", "db", "absent", "halts", "ticked", "launch", "cancel", "dropped", "warnings",
        ];
        let k = key
            .as_keyword()
            .map(|k| k.as_str().to_owned())
            .unwrap_or_default();
        assert!(
            known.contains(&k.as_str()),
            "{at}: unknown expectation key {key}"
        );
    }
    assert_eq!(line.get(&kw("tick")), Some(&Value::Int(n as i64)), "{at}");
    assert_eq!(
        line.get(&kw("status")),
        expect.get(&kw("status")),
        "{at}: status"
    );
    let db = line.get(&kw("db")).unwrap();
    if let Some(want) = expect.get(&kw("db")) {
        for (key, value) in want.as_map().unwrap() {
            assert_eq!(db.get(key), Some(value), "{at}: db key {key} in {db}");
        }
    }
    if let Some(absent) = expect.get(&kw("absent")) {
        for key in absent.as_seq().unwrap() {
            assert_eq!(
                db.get(key),
                None,
                "{at}: db key {key} should be absent in {db}"
            );
        }
    }
    let (halts, ticked) = halts_and_ticks(line);
    let want_halts = expect
        .get(&kw("halts"))
        .map(|h| h.as_seq().unwrap().to_vec())
        .unwrap_or_default();
    assert_eq!(halts, want_halts, "{at}: halts");
    if let Some(want) = expect.get(&kw("ticked")) {
        assert_eq!(ticked, want.as_seq().unwrap(), "{at}: ticked");
    }
    for key in ["launch", "cancel", "dropped", "warnings"] {
        assert_eq!(line.get(&kw(key)), expect.get(&kw(key)), "{at}: {key}");
    }
}

fn run_scenario(tree: &Path) -> String {
    let name = tree.file_stem().unwrap().to_string_lossy().into_owned();
    let dir = tree.parent().unwrap();
    let expect_path = dir.join(format!("{name}.expect.edn"));
    let expect = read_value(&std::fs::read_to_string(&expect_path).unwrap()).unwrap();
    let expect = expect.as_seq().expect("expectations are a vector");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let rel = |p: &Path| p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_aido"));
    cmd.current_dir(root)
        .args(["run", &rel(tree), "--ticks", &expect.len().to_string()])
        .args(["--seed", "1", "--trace"]);
    let inputs = dir.join(format!("{name}.inputs.edn"));
    if inputs.exists() {
        cmd.args(["--inputs", &rel(&inputs)]);
    }
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{name}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<Value> = stdout.lines().map(|l| read_value(l).unwrap()).collect();
    assert_eq!(lines.len(), expect.len(), "{name}: one line a tick");
    for (i, (line, want)) in lines.iter().zip(expect).enumerate() {
        check_tick(&name, i + 1, line, want);
    }
    stdout
}

#[test]
fn seed_scenarios() {
    insta::with_settings!({snapshot_path => "../../snapshots", prepend_module_to_snapshot => true}, {
        insta::glob!("../data/seed", "*.edn", |path| {
            let file = path.file_name().unwrap().to_string_lossy();
            if file.ends_with(".expect.edn") || file.ends_with(".inputs.edn") {
                return;
            }
            let stdout = run_scenario(path);
            insta::assert_snapshot!(stdout);
        });
    });
}

/// The form in seed 004's README, `[:aido/fn rand 5]`, uses `rand` as the
/// user registered it there (Clojure's `rand-int`); here `rand` is the
/// standard float function, and a float count is an Error at the loop, never
/// a silent rounding. (tests/data/seed/readme-dynamic-count.edn runs the
/// form that works: `rand-int`.)
#[test]
fn a_float_count_from_rand_is_an_error_at_the_loop() {
    let tree = aido::compile_str(
        "t.edn",
        "[:loop {:count [:aido/fn rand 5]} [:inc! {:key :steps}]]",
        &aido::Registry::new(),
    )
    .unwrap();
    let tick = aido::run_tick(read_value("{:aido/seed 1}").unwrap(), &tree);
    assert_eq!(tick.status, aido::Status::Error);
    let error = tick.error.unwrap();
    assert_eq!(
        (error.node_type.as_str(), error.path.as_slice()),
        ("loop", &[][..])
    );
    assert_eq!(tick.db.get(&kw("steps")), None);
}
