//! Property tests over hostile input: the reader on random bytes and on
//! mutations of every shipped tree, print → read and JSON round trips of
//! random values, compiling random trees, ticking them over random dbs
//! (tampered `:aido/*` keys included), and the CLI's flags and files.
//!
//! Each target runs a bounded number of cases so that CI stays fast;
//! `AIDO_FUZZ_CASES=N` runs N per target instead (the longer campaign:
//! `AIDO_FUZZ_CASES=20000 cargo test --release --test it fuzz:: -- --nocapture`),
//! and prints the executions per target and the slowest tick seen.
#![allow(clippy::panic, clippy::expect_used, clippy::unwrap_used)]

use crate::common;

use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use aido::{
    Registry, Status, Value, compile, compile_str,
    read::read_text,
    read_value,
    tick::{TickOptions, run_tick_with_options},
    value::{BINARY_VERSION, JsonMapping, Map, Set, Symbol, decode, encode},
};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

/// Cases per target: `AIDO_FUZZ_CASES`, else `default`.
fn cases(default: u32) -> u32 {
    std::env::var("AIDO_FUZZ_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(default)
}

pub(crate) fn runner(default: u32) -> TestRunner {
    TestRunner::new(Config {
        cases: cases(default),
        failure_persistence: None,
        ..Config::default()
    })
}

static SLOWEST_TICK: Mutex<Duration> = Mutex::new(Duration::ZERO);

pub(crate) fn report(target: &str, executions: u64) {
    eprintln!("fuzz: {target}: {executions} executions");
}

// ---- values ----

fn name() -> impl Strategy<Value = String> {
    "[a-z*+!?<>=_-][a-z0-9*+!?<>=_.-]{0,6}(/[a-z][a-z0-9-]{0,4})?".prop_filter(
        "not a number-like or reserved name",
        |s| {
            let reserved = matches!(s.as_str(), "nil" | "true" | "false");
            let number_like = s.starts_with(['-', '+', '.'])
                && s.chars().nth(1).is_some_and(|c| c.is_ascii_digit());
            !reserved && !number_like
        },
    )
}

fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Nil),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::Int),
        prop_oneof![
            any::<f64>(),
            Just(f64::NAN),
            Just(f64::INFINITY),
            Just(f64::NEG_INFINITY),
            Just(-0.0)
        ]
        .prop_map(Value::Float),
        any::<String>().prop_map(|s| Value::string(&s)),
        "(:[a-z]{1,4}|[a-z ]{0,4})".prop_map(|s| Value::string(&s)),
        any::<char>().prop_map(Value::Char),
        name().prop_map(|s| Value::keyword(&s)),
        name().prop_map(|s| Value::symbol(&s)),
    ]
}

pub(crate) fn value() -> impl Strategy<Value = Value> {
    scalar().prop_recursive(6, 64, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::vector),
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::list),
            prop::collection::vec(inner.clone(), 0..6)
                .prop_map(|xs| Value::Set(Box::new(xs.into_iter().collect::<Set>()))),
            prop::collection::vec((inner.clone(), inner.clone()), 0..6)
                .prop_map(|kv| Value::Map(Box::new(kv.into_iter().collect::<Map>()))),
            ("[a-z][a-z0-9]{0,5}(/[a-z]{1,3})?", inner)
                .prop_map(|(tag, v)| Value::Tagged(Symbol::new(&tag), Box::new(v))),
        ]
    })
}

#[test]
fn printed_values_read_back_equal() {
    let mut runner = runner(256);
    let runs = AtomicU64::new(0);
    runner
        .run(&value(), |v| {
            runs.fetch_add(1, Ordering::Relaxed);
            let text = v.to_string();
            let back =
                read_value(&text).map_err(|e| TestCaseError::fail(format!("{text}: {e}")))?;
            prop_assert!(
                v.first_difference(&back).is_none(),
                "{text} read back as {back}"
            );
            Ok(())
        })
        .unwrap();
    report("print → read", runs.into_inner());
}

#[test]
fn json_round_trips_keep_values_or_refuse_them() {
    let mut runner = runner(256);
    let runs = AtomicU64::new(0);
    runner
        .run(&value(), |v| {
            runs.fetch_add(1, Ordering::Relaxed);
            // The tagged mapping keeps every value exactly.
            let json = v.to_json_with(JsonMapping::Tagged).unwrap().to_string();
            let back = Value::from_json_text(&json, JsonMapping::Tagged)
                .map_err(|e| TestCaseError::fail(format!("{json}: {e}")))?;
            prop_assert!(v.first_difference(&back).is_none(), "{v} → {json} → {back}");
            // The plain one may refuse or change a value, but never panics.
            if let Ok(plain) = v.to_json_with(JsonMapping::Plain) {
                let _ = Value::from_json_text(&plain.to_string(), JsonMapping::Plain);
            }
            Ok(())
        })
        .unwrap();
    report("JSON round trips", runs.into_inner());
}

// ---- the binary encoding ----

#[test]
fn binary_round_trips_keep_every_value_exactly() {
    let mut runner = runner(256);
    let runs = AtomicU64::new(0);
    runner
        .run(&value(), |v| {
            runs.fetch_add(1, Ordering::Relaxed);
            let bytes = encode(&v).map_err(|e| TestCaseError::fail(format!("{v}: {e}")))?;
            prop_assert_eq!(bytes[0], BINARY_VERSION);
            let back = decode(&bytes).map_err(|e| TestCaseError::fail(format!("{v}: {e}")))?;
            prop_assert!(v.first_difference(&back).is_none(), "{v} decoded as {back}");
            // Byte for byte: float bits, vector or list, order all kept.
            prop_assert_eq!(encode(&back).unwrap(), bytes.clone());
            // Every strict prefix ends inside the value: an error, never a value.
            for end in 0..bytes.len() {
                prop_assert!(
                    decode(&bytes[..end]).is_err(),
                    "{v}: prefix of {end} bytes decoded"
                );
            }
            Ok(())
        })
        .unwrap();
    report("binary round trips", runs.into_inner());
}

#[test]
fn binary_decoding_survives_random_and_mutated_bytes() {
    let mut runner = runner(512);
    let runs = AtomicU64::new(0);
    let input = (
        value(),
        prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..4),
        prop::collection::vec(any::<u8>(), 0..64),
    );
    runner
        .run(&input, |(v, flips, random)| {
            runs.fetch_add(1, Ordering::Relaxed);
            let mut bytes = encode(&v).unwrap();
            for (at, byte) in flips {
                let i = at.index(bytes.len());
                bytes[i] = byte;
            }
            for blob in [
                &bytes,
                &random,
                &[&[BINARY_VERSION][..], &random[..]].concat(),
            ] {
                // Whatever decodes is a value that encodes and decodes again.
                if let Ok(back) = decode(blob) {
                    let again = encode(&back).unwrap();
                    prop_assert!(decode(&again).unwrap().first_difference(&back).is_none());
                }
            }
            Ok(())
        })
        .unwrap();
    report("binary decoding of random bytes", runs.into_inner());
}

// ---- the reader ----

#[test]
fn the_reader_survives_random_bytes() {
    let mut runner = runner(1024);
    let runs = AtomicU64::new(0);
    let bytes = prop_oneof![
        prop::collection::vec(any::<u8>(), 0..200),
        // Bytes drawn from EDN's own alphabet reach deeper into the reader.
        prop::collection::vec(
            prop::sample::select(b"()[]{}#_:;\\\"'^`~@ ,\n\t0123456789.eE+-/aZ%&*!?<>=|".to_vec()),
            0..200
        ),
    ];
    runner
        .run(&bytes, |bytes| {
            runs.fetch_add(1, Ordering::Relaxed);
            let text = String::from_utf8_lossy(&bytes);
            if let Ok((v, _)) = read_text(&text) {
                prop_assert_eq!(read_value(&v.to_string()).ok(), Some(v));
            }
            let _ = compile_str("fuzz.edn", &text, &Registry::new());
            let _ = Value::from_json_text(&text, JsonMapping::Plain);
            let _ = Value::from_json_text(&text, JsonMapping::Tagged);
            Ok(())
        })
        .unwrap();
    report("reader on random bytes", runs.into_inner());
}

/// Every `.edn` file shipped: the examples and the test data.
fn shipped_trees() -> Vec<(PathBuf, String)> {
    let mut files = Vec::new();
    let mut dirs = vec![common::examples_dir(), common::data_dir()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "edn") {
                let text = std::fs::read_to_string(&path).unwrap();
                files.push((path, text));
            }
        }
    }
    files.sort();
    files
}

#[derive(Debug, Clone)]
enum Mutation {
    Insert(usize, u8),
    Delete(usize, usize),
    Replace(usize, u8),
    Duplicate(usize, usize),
}

fn mutate(text: &str, mutations: &[Mutation]) -> String {
    let mut bytes = text.as_bytes().to_vec();
    for m in mutations {
        let n = bytes.len().max(1);
        match *m {
            Mutation::Insert(at, b) => bytes.insert(at % (bytes.len() + 1), b),
            Mutation::Delete(at, len) => {
                let at = at % n;
                let end = (at + len % 16).min(bytes.len());
                bytes.drain(at.min(end)..end);
            }
            Mutation::Replace(at, b) => {
                if !bytes.is_empty() {
                    bytes[at % n] = b;
                }
            }
            Mutation::Duplicate(at, len) => {
                let at = at % n;
                let end = (at + len % 64).min(bytes.len());
                let copy = bytes[at.min(end)..end].to_vec();
                let to = end.min(bytes.len());
                bytes.splice(to..to, copy);
            }
        }
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let byte = prop_oneof![
        any::<u8>(),
        prop::sample::select(b"()[]{}#:\\\" 09-".to_vec())
    ];
    prop_oneof![
        (any::<usize>(), byte.clone()).prop_map(|(a, b)| Mutation::Insert(a, b)),
        (any::<usize>(), any::<usize>()).prop_map(|(a, l)| Mutation::Delete(a, l)),
        (any::<usize>(), byte).prop_map(|(a, b)| Mutation::Replace(a, b)),
        (any::<usize>(), any::<usize>()).prop_map(|(a, l)| Mutation::Duplicate(a, l)),
    ]
}

#[test]
fn mutations_of_every_shipped_tree_read_compile_and_tick_without_a_crash() {
    let files = shipped_trees();
    assert!(files.len() >= 20, "{} files", files.len());
    let mut runner = runner(1024);
    let runs = AtomicU64::new(0);
    let registry = Registry::new();
    let strategy = (0..files.len(), prop::collection::vec(mutation(), 1..4));
    runner
        .run(&strategy, |(i, mutations)| {
            runs.fetch_add(1, Ordering::Relaxed);
            let text = mutate(&files[i].1, &mutations);
            if let Ok(tree) = compile_str("fuzz.edn", &text, &registry) {
                tick_a_few(&tree, Value::map(), 3);
            }
            Ok(())
        })
        .unwrap();
    report(
        "reader + compiler on mutated shipped files",
        runs.into_inner(),
    );
}

// ---- trees and dbs ----

const NODE_TYPES: &[&str] = &[
    "selector",
    "sequence",
    "selector-p",
    "loop",
    "loop-until-success",
    "parallel",
    "randomly",
    "choose",
    "choose-each",
    "weighted-choice",
    "invert",
    "always",
    "never",
    "success",
    "failure",
    "wait",
    "defer",
    "present?",
    "equal?",
    "test?",
    "less-than?",
    "greater-than?",
    "define!",
    "inc!",
    "counter!",
    "dissoc!",
    "emit!",
    "no-such-node",
];
const OPTION_KEYS: &[&str] = &[
    "id",
    "p",
    "count",
    "mode",
    "how-many",
    "repeat",
    "weights",
    "key",
    "val",
    "v1",
    "v2",
    "oper",
    "memory",
    "policy",
    "success-threshold",
    "failure-threshold",
    "ticks",
    "action",
    "into",
    "aido/skip-if",
    "aido/success-if",
    "aido/failure-if",
    "typo",
];

fn option_value() -> impl Strategy<Value = Value> {
    let key = prop::sample::select(vec![":a", ":b", ":n", "[:a :b]", "[:m 0]", "1", "\"s\""]);
    prop_oneof![
        4 => scalar(),
        2 => key.prop_map(|k| read_value(k).unwrap()),
        1 => prop::sample::select(vec![
            "[:aido/db :a]", "[:aido/db :n]", "[:aido/db :a :b]", "[:aido/fn + [:aido/db :n] 1]",
            "[:aido/fn str [:aido/db :a] [:aido/db :a]]", "[:aido/fn rand-int 5]", "[:aido/fn / 1 0]",
            "[:aido/fn max ##NaN 1]", "[1 2 3]", "[0.5 1e308 1e308]", ":success", ":sequence",
            "=", "not=", "<", "[:aido/fn nope]", "[:aido/db]",
        ])
        .prop_map(|t| read_value(t).unwrap()),
    ]
}

pub(crate) fn node() -> impl Strategy<Value = Value> {
    let leaf = (
        prop::sample::select(NODE_TYPES),
        prop::collection::vec((prop::sample::select(OPTION_KEYS), option_value()), 0..3),
    )
        .prop_map(|(t, opts)| node_value(t, opts, Vec::new()));
    leaf.prop_recursive(5, 48, 4, |inner| {
        (
            prop::sample::select(NODE_TYPES),
            prop::collection::vec((prop::sample::select(OPTION_KEYS), option_value()), 0..3),
            prop::collection::vec(inner, 0..4),
        )
            .prop_map(|(t, opts, kids)| node_value(t, opts, kids))
    })
}

fn node_value(t: &str, opts: Vec<(&str, Value)>, kids: Vec<Value>) -> Value {
    let mut items = vec![Value::keyword(t)];
    if !opts.is_empty() {
        items.push(Value::map_from(
            opts.into_iter().map(|(k, v)| (Value::keyword(k), v)),
        ));
    }
    items.extend(kids);
    Value::Vector(items.into())
}

/// A db with ordinary keys and, often, tampered `:aido/*` keys.
pub(crate) fn db() -> impl Strategy<Value = Value> {
    let aido = prop::sample::select(vec![
        "aido/running",
        "aido/memory",
        "aido/seed",
        "aido/rng-pos",
        "aido/results",
        "aido/tree",
        "aido/error",
        "aido/locals",
    ]);
    let tampered = prop_oneof![
        value(),
        Just(read_value("[\"0\" \"0.0\" \"0.1\" :nope 7]").unwrap()),
        Just(read_value("{\"0\" {:launched {}} \"0.0\" {:ticks -1} \"0.1\" {:pool [9 9]} \"0.2\" {:index 99}}").unwrap()),
        Just(read_value("{\"0\" {:status :success :result 1} \"0.0\" 5}").unwrap()),
        Just(Value::Int(i64::MAX)),
        Just(Value::Int(-1)),
    ];
    (
        prop::collection::vec(
            (prop::sample::select(vec!["a", "b", "n", "m", "x"]), value()),
            0..4,
        ),
        prop::collection::vec((aido, tampered), 0..3),
    )
        .prop_map(|(plain, tampered)| {
            Value::map_from(
                plain
                    .into_iter()
                    .chain(tampered)
                    .map(|(k, v)| (Value::keyword(k), v)),
            )
        })
}

/// Ticks `tree` `n` times from `db` with small budgets, noting the slowest tick.
pub(crate) fn tick_a_few(tree: &aido::Tree, db: Value, n: usize) {
    let options = TickOptions {
        step_budget: 20_000,
        work_budget: 200_000,
        ..TickOptions::default()
    };
    let mut db = db;
    for _ in 0..n {
        let started = Instant::now();
        let tick = run_tick_with_options(db, tree, &options);
        let took = started.elapsed();
        {
            let mut slowest = SLOWEST_TICK.lock().unwrap();
            *slowest = (*slowest).max(took);
        }
        assert!(
            took < Duration::from_secs(5),
            "a tick took {took:?} on {}",
            tree.form()
        );
        assert_eq!(tick.status == Status::Error, tick.error.is_some());
        // What a tick leaves, a file keeps: the db prints and reads back.
        let text = tick.db.to_string();
        let back = read_value(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
        assert!(tick.db.first_difference(&back).is_none(), "{text}");
        db = tick.db;
    }
}

#[test]
fn random_trees_compile_and_tick_over_random_dbs() {
    let mut runner = runner(256);
    let runs = AtomicU64::new(0);
    let registry = Registry::new();
    runner
        .run(&(node(), db()), |(tree, db)| {
            runs.fetch_add(1, Ordering::Relaxed);
            if let Ok(tree) = compile(&tree, &registry) {
                tick_a_few(&tree, db, 3);
            }
            Ok(())
        })
        .unwrap();
    report("compile + tick of random trees and dbs", runs.into_inner());
    eprintln!(
        "fuzz: slowest tick seen: {:?}",
        SLOWEST_TICK.lock().unwrap()
    );
}

// ---- the command line ----

#[test]
fn the_command_line_survives_random_flags_and_files() {
    let dir = std::env::temp_dir().join(format!("aido-fuzz-cli-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("a-dir")).unwrap();
    for (name, text) in [
        (
            "tree.edn",
            "[:sequence [:inc! {:key :n}] [:wait {:id :w :ticks 2}]]",
        ),
        ("bad.edn", "[:sequnce [:x]]"),
        ("junk.edn", "[:a]\0\u{1b}[2J"),
        ("db.edn", "{:n 1}"),
        ("db.json", "{\"n\": 1, \"s\": \":kw\"}"),
        ("big.json", "{\"n\": 99999999999999999999}"),
        ("inputs.edn", "[{:n 5} nil]"),
        ("trims.edn", "[{:task :t :target :w :remove true}]"),
        (
            "deep.edn",
            &format!("{}{}", "[".repeat(300), "]".repeat(300)),
        ),
    ] {
        std::fs::write(dir.join(name), text).unwrap();
    }
    let word = prop::sample::select(vec![
        "run",
        "check",
        "bench",
        "migrate",
        "help",
        "--help",
        "--version",
        "tree.edn",
        "bad.edn",
        "junk.edn",
        "db.edn",
        "db.json",
        "big.json",
        "inputs.edn",
        "trims.edn",
        "deep.edn",
        "missing.edn",
        "a-dir",
        "/dev/null",
        "--db",
        "--ticks",
        "--seed",
        "--inputs",
        "--save",
        "--format",
        "--trace",
        "--trims",
        "--reload",
        "--agents",
        "json",
        "edn",
        "text",
        "0",
        "1",
        "3",
        "-1",
        "99999999999999999999",
        "2=tree.edn",
        "out.edn",
        "out.json",
        "out.tagged.json",
        "a-dir/out.edn",
        "missing/out.edn",
        "--",
        "-",
        "--ticks=2",
        "--nope",
    ]);
    let mut runner = runner(48);
    let runs = AtomicU64::new(0);
    runner
        .run(&prop::collection::vec(word, 0..7), |args| {
            runs.fetch_add(1, Ordering::Relaxed);
            // Keep each run short: a bench of many ticks is not the point here.
            let mut args: Vec<&str> = args;
            if args.first() == Some(&"bench") {
                args.extend(["--ticks", "10"]);
            }
            let output = std::process::Command::new(env!("CARGO_BIN_EXE_aido"))
                .args(&args)
                .current_dir(&dir)
                .stdin(std::process::Stdio::null())
                .output()
                .unwrap();
            let code = output.status.code();
            let stderr = String::from_utf8_lossy(&output.stderr);
            prop_assert!(matches!(code, Some(0..=2)), "{args:?}: {code:?} {stderr}");
            prop_assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
            prop_assert!(
                code == Some(0) || !stderr.is_empty(),
                "{args:?}: failed silently"
            );
            // A file the command saved reads back.
            for out in ["out.edn", "a-dir/out.edn"] {
                if let Ok(text) = std::fs::read_to_string(dir.join(out)) {
                    prop_assert!(
                        read_value(&text).is_ok(),
                        "{args:?}: {out} does not read back"
                    );
                }
            }
            Ok(())
        })
        .unwrap();
    report("CLI flags and files", runs.into_inner());
    let _ = std::fs::remove_dir_all(&dir);
}
