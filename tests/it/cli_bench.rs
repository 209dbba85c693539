//! `aido bench`, run as a real process: the EDN report of the npc workload,
//! seeded agents that match `aido run`, and bad arguments. Timings are never
//! asserted, only their presence and types.

// clippy.toml allows these only inside `#[test]` functions; the helpers here
// are test code too, where failing loudly is the point.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::Command;

use aido::{Value, read_value, value::Map};

use crate::common;

use common::Run;

/// Runs `aido args..` with `env` set.
fn aido_with(env: &[(&str, &str)], args: &[&str]) -> Run {
    Run::of(
        Command::new(env!("CARGO_BIN_EXE_aido"))
            .args(args)
            .envs(env.iter().copied()),
    )
}

fn aido(args: &[&str]) -> Run {
    aido_with(&[], args)
}

fn bench_file(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples")
        .join(name)
        .display()
        .to_string()
}

/// The one EDN line a successful `--format edn` run prints.
fn report(run: &Run) -> Value {
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stderr, "", "{run:?}");
    let lines: Vec<&str> = run.stdout.lines().collect();
    let [line] = lines.as_slice() else {
        panic!("expected one line: {run:?}");
    };
    read_value(line).unwrap_or_else(|e| panic!("`{line}` is not EDN: {e}"))
}

fn field<'a>(report: &'a Value, key: &str) -> &'a Value {
    report
        .get(&Value::keyword(key))
        .unwrap_or_else(|| panic!("no :{key} in {report}"))
}

/// The db without the keys in the `aido` namespace (seed, rng position).
fn without_aido_keys(db: &Value) -> Value {
    let map: Map = db
        .as_map()
        .expect("the db is a map")
        .iter()
        .filter(|(k, _)| {
            !k.as_keyword()
                .is_some_and(|k| k.as_str().starts_with("aido/"))
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    Value::Map(Box::new(map))
}

/// A scratch file under the system's temp dir, removed when dropped.
struct ScratchFile(PathBuf);

impl ScratchFile {
    fn new(name: &str, text: &str) -> ScratchFile {
        let path = std::env::temp_dir().join(format!("aido-bench-{}-{name}", std::process::id()));
        std::fs::write(&path, text).expect("scratch file");
        ScratchFile(path)
    }

    fn path(&self) -> &str {
        self.0.to_str().expect("a UTF-8 temp path")
    }
}

impl Drop for ScratchFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Random nodes of every kind, so that the seed decides the db.
const RANDOM_TREE: &str = "
[:sequence
 [:randomly {:p 0.5} [:inc! {:key :heads}] [:inc! {:key :tails}]]
 [:choose [:inc! {:key :a}] [:inc! {:key :b}] [:inc! {:key :c}]]
 [:weighted-choice {:weights [1 2 3]}
  [:define! {:key :w :val 1}] [:define! {:key :w :val 2}] [:define! {:key :w :val 3}]]]";

#[test]
fn npc_report_has_the_db_after_a_hundred_thousand_ticks_and_no_allocations() {
    let run = aido(&[
        "bench",
        &bench_file("npc.edn"),
        "--db",
        &bench_file("npc-db.edn"),
        "--ticks",
        "100000",
        "--format",
        "edn",
    ]);
    let report = report(&run);
    assert_eq!(field(&report, "ticks"), &Value::Int(100_000));
    assert_eq!(field(&report, "agents"), &Value::Int(1));
    assert_eq!(
        without_aido_keys(field(&report, "db")),
        read_value("{:hunger 0, :courage 7, :steps 90000, :wander 270000, :action :eat}").unwrap()
    );
    match field(&report, "bytes-per-agent") {
        Value::Int(bytes) => assert!((1..4096).contains(bytes), "{report}"),
        other => panic!("bytes per agent: {other}"),
    }
    // One allocation in the whole run: the db's entries growing to hold
    // `:action`, its fifth key, in the first tick (a small map grows one
    // entry at a time). Steady ticks allocate nothing (tests/alloc.rs).
    assert_eq!(
        field(&report, "allocations-per-tick"),
        &Value::Float(1.0 / 100_000.0)
    );
    for rate in ["ns-per-tick", "ticks-per-second"] {
        assert!(
            matches!(field(&report, rate), Value::Float(x) if *x > 0.0),
            "{report}"
        );
    }
}

#[test]
fn text_report_names_the_tree_and_the_counts() {
    let tree = bench_file("npc.edn");
    let run = aido(&["bench", &tree, "--ticks", "1000", "--agents", "3"]);
    assert_eq!(run.code, 0, "{run:?}");
    let lines: Vec<&str> = run.stdout.lines().collect();
    let [first, second] = lines.as_slice() else {
        panic!("expected two lines: {run:?}");
    };
    assert!(
        first.starts_with(&format!("{tree}: 3 agents x 1000 ticks in ")),
        "{first}"
    );
    for part in [
        " ns per tick, ",
        " ticks per second, ",
        " bytes per agent, ",
        " allocations per tick",
    ] {
        assert!(second.contains(part), "`{part}` in {second}");
    }
}

#[test]
fn seeded_agent_zero_matches_aido_run_whatever_the_thread_count() {
    let tree = ScratchFile::new("random.edn", RANDOM_TREE);
    let run = aido(&["run", tree.path(), "--seed", "1", "--ticks", "100"]);
    assert_eq!(run.code, 0, "{run:?}");
    let last = read_value(run.stdout.lines().last().expect("100 lines")).unwrap();
    let expected = field(&last, "db").clone();
    assert_ne!(without_aido_keys(&expected), Value::map(), "{expected}");

    for threads in ["1", "2", "3"] {
        let run = aido_with(
            &[("RAYON_NUM_THREADS", threads)],
            &[
                "bench",
                tree.path(),
                "--agents",
                "4",
                "--ticks",
                "100",
                "--seed",
                "1",
                "--format",
                "edn",
            ],
        );
        let by_env = report(&run);
        assert_eq!(field(&by_env, "agents"), &Value::Int(4));
        assert_eq!(field(&by_env, "db"), &expected, "{threads} threads");
        // The same with a pool of that many threads (1: a plain loop); a
        // build without the `rayon` feature has no pool, and says so.
        if !cfg!(feature = "rayon") && threads != "1" {
            let run = aido(&["bench", tree.path(), "--threads", threads]);
            assert_eq!(run.code, 2, "{run:?}");
            assert!(run.stderr.contains("rayon"), "{run:?}");
            continue;
        }
        let run = aido(&[
            "bench",
            tree.path(),
            "--agents",
            "4",
            "--ticks",
            "100",
            "--seed",
            "1",
            "--threads",
            threads,
            "--format",
            "edn",
        ]);
        let pooled = report(&run);
        assert_eq!(field(&pooled, "db"), &expected, "--threads {threads}");
    }
}

#[test]
fn bad_arguments_exit_2_with_a_reason() {
    let tree = bench_file("npc.edn");
    let cases: [(&[&str], &str); 6] = [
        (
            &["bench", &tree, "--agents", "0"],
            "aido: --agents: expected a positive integer, got `0`",
        ),
        (
            &["bench", &tree, "--ticks", "x"],
            "aido: --ticks: expected a positive integer, got `x`",
        ),
        (&["bench"], "aido: no TREE given"),
        (
            &[
                "bench",
                &tree,
                "--ticks",
                "18446744073709551615",
                "--agents",
                "2",
            ],
            "aido: --ticks: 18446744073709551615 ticks x 2 agents is more ticks than a 64-bit count holds",
        ),
        (
            &["bench", &tree, "--agents", "2", "--threads", "0"],
            "aido: --threads: expected a positive integer, got `0`",
        ),
        (
            &["bench", &tree, "--format", "json"],
            "aido: --format: expected `text` or `edn`, got `json`",
        ),
    ];
    for (args, reason) in cases {
        let run = aido(args);
        assert_eq!(run.code, 2, "{args:?}: {run:?}");
        assert_eq!(run.stdout, "", "{args:?}: {run:?}");
        assert_eq!(run.stderr.lines().next(), Some(reason), "{args:?}");
        assert!(!run.stderr.contains("panicked"), "{run:?}");
    }
}

#[test]
fn help_describes_bench() {
    let run = aido(&["help", "bench"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.starts_with("usage: aido bench TREE"), "{run:?}");
    assert!(run.stdout.contains("bytes per agent"), "{run:?}");
    assert!(aido(&["--help"]).stdout.contains("aido bench TREE"));
}
