//! Time without a clock: no library code reads one, `aido run --dt` moves
//! `:aido/now` on, and a cooldown's state (a time in the db) follows its
//! node across a save and a resume with an edited tree, and across a reload.
#![allow(clippy::panic, clippy::expect_used, clippy::unwrap_used)]

use crate::common;

use std::fs;
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

/// The statuses and dbs of the lines of a run.
fn ticks(run: &Run) -> Vec<(String, Value)> {
    assert_eq!(run.code, 0, "{run:?}");
    run.stdout
        .lines()
        .map(|l| {
            let line = read_value(l).unwrap();
            let status = line.get(&Value::keyword("status")).unwrap().to_string();
            (status, line.get(&Value::keyword("db")).unwrap().clone())
        })
        .collect()
}

fn statuses(run: &Run) -> Vec<String> {
    ticks(run).into_iter().map(|(s, _)| s).collect()
}

/// A fresh folder under the system's temp dir, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(test: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("aido-time-{}-{test}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    fn write(&self, name: &str, text: &str) -> String {
        let path = self.0.join(name);
        fs::write(&path, text).unwrap();
        path.to_string_lossy().into_owned()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// Every `.rs` file under `dir`.
fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn no_library_code_reads_a_clock() {
    // A tick is a pure function of (db, tree): the time is `:aido/now`, set
    // by the host. `aido bench` measures how long ticks take, outside them;
    // handlers time the programs a host runs between ticks; `aido chat
    // --idle` times the silence between lines; `aido shard` paces its ticks
    // and reads lease times from the clock, while the ticks' own time comes
    // from the journal; `aido worker` is a host whose clock sets stored
    // agents' `:aido/now` and leases (the library's store takes the time
    // from its caller).
    const ALLOWED: &[&str] = &[
        "src/cli/bench.rs",
        "src/handler.rs",
        "src/cli/chat.rs",
        "src/cli/shard.rs",
        "src/cli/worker.rs",
    ];
    const CLOCKS: &[&str] = &[
        "Instant",
        "SystemTime",
        "UNIX_EPOCH",
        "chrono",
        "time::now",
        "elapsed()",
    ];
    let mut files = Vec::new();
    sources(&root().join("src"), &mut files);
    assert!(files.len() > 50, "the library's sources are found");
    let mut reads = Vec::new();
    for file in &files {
        let name = file
            .strip_prefix(root())
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        if ALLOWED.contains(&name.as_str()) {
            continue;
        }
        let text = fs::read_to_string(file).unwrap();
        for (i, line) in text.lines().enumerate() {
            let code = line.trim_start();
            if code.starts_with("//") {
                continue;
            }
            for clock in CLOCKS {
                if code.contains(clock) {
                    reads.push(format!("{name}:{}: {clock}", i + 1));
                }
            }
        }
    }
    assert_eq!(
        reads,
        Vec::<String>::new(),
        "library code that reads a clock"
    );
}

#[test]
fn dt_moves_the_clock_on_before_each_tick() {
    let dir = Scratch::new("dt");
    let tree = dir.write("wait.edn", "[:wait {:seconds 1}]");
    let run = aido(&["run", &tree, "--dt", "0.5", "--ticks", "4"]);
    assert_eq!(
        statuses(&run),
        [":running", ":running", ":success", ":running"]
    );
    let nows: Vec<Value> = ticks(&run)
        .iter()
        .map(|(_, db)| db.get(&Value::keyword("aido/now")).unwrap().clone())
        .collect();
    assert_eq!(nows, [0.0, 0.5, 1.0, 1.5].map(Value::Float));
    // Without --dt there is no time: the wait says what it needs.
    let run = aido(&["run", &tree]);
    assert_eq!(statuses(&run), [":error"]);
    assert!(run.stdout.contains(":aido/now"), "{run:?}");
    // A bad step is refused before the first tick.
    for bad in ["-1", "x", "inf", "NaN"] {
        let run = aido(&["run", &tree, "--dt", bad]);
        assert_eq!(run.code, 2, "--dt {bad}: {run:?}");
        assert!(run.stderr.contains("--dt"), "{run:?}");
    }
    // A db whose time is not a number is an error that names it.
    let db = dir.write("db.edn", "{:aido/now \"noon\"}");
    let run = aido(&["run", &tree, "--db", &db, "--dt", "1"]);
    assert_eq!(run.code, 2, "{run:?}");
    assert!(run.stderr.contains(":aido/now"), "{run:?}");
}

/// The number of attacks in a db.
fn attacks(db: &Value) -> Value {
    db.get(&Value::keyword("attacks"))
        .cloned()
        .unwrap_or_default()
}

#[test]
fn a_cooldown_survives_a_save_and_a_resume_with_an_edited_tree() {
    let dir = Scratch::new("save");
    let tree = dir.write(
        "npc.edn",
        "[:selector [:cooldown {:id :attack :seconds 3} [:inc! {:key :attacks}]] [:inc! {:key :waits}]]",
    );
    let db = dir.0.join("db.edn").to_string_lossy().into_owned();
    let run = aido(&["run", &tree, "--dt", "1", "--ticks", "2", "--save", &db]);
    assert_eq!(attacks(&ticks(&run)[1].1), Value::Int(1));
    // The edited tree has a node before the cooldown; the cooldown keeps
    // its id, so its state follows it: cooling until 3.0, attacking again
    // at 3.0 (the resumed run's second tick).
    let edited = dir.write(
        "npc2.edn",
        "[:selector [:test? {:key :fleeing :oper = :val true}] [:cooldown {:id :attack :seconds 3} [:inc! {:key :attacks}]] [:inc! {:key :waits}]]",
    );
    let run = aido(&["run", &edited, "--db", &db, "--dt", "1", "--ticks", "2"]);
    let resumed = ticks(&run);
    assert_eq!(
        attacks(&resumed[0].1),
        Value::Int(1),
        "still cooling at 2.0"
    );
    assert_eq!(attacks(&resumed[1].1), Value::Int(2), "ready at 3.0");
    // A control: the same resume without the saved state attacks at once.
    let run = aido(&["run", &edited, "--dt", "1", "--ticks", "1"]);
    assert_eq!(attacks(&ticks(&run)[0].1), Value::Int(1));
}

#[test]
fn a_cooldown_follows_its_node_across_a_reload() {
    let dir = Scratch::new("reload");
    // No explicit id: the reload matches the nodes of the two trees.
    let tree = dir.write(
        "a.edn",
        "[:selector [:cooldown {:ticks 3} [:inc! {:key :attacks}]] [:inc! {:key :waits}]]",
    );
    let edited = dir.write(
        "b.edn",
        "[:selector [:present? {:key :fleeing}] [:cooldown {:ticks 3} [:inc! {:key :attacks}]] [:inc! {:key :waits}]]",
    );
    let reload = format!("2={edited}");
    let run = aido(&["run", &tree, "--ticks", "5", "--reload", &reload]);
    let counts: Vec<Value> = ticks(&run).iter().map(|(_, db)| attacks(db)).collect();
    // Attack at tick 1, cooling through ticks 2-4 (across the reload), attack at 5.
    assert_eq!(counts, [1, 1, 1, 1, 2].map(Value::Int));
}
