//! Helpers shared by the integration tests.
#![allow(dead_code, clippy::panic, clippy::expect_used, clippy::unwrap_used)]

use std::path::PathBuf;

use aido::{Value, read_value};

/// The folder of the repository's shipped examples (the bench workload
/// `npc.edn` and `npc-db.edn` among them).
pub fn examples_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples")
}

/// The folder of the test data (`tests/data`).
pub fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data")
}

pub struct Expected {
    pub status: Value,
    pub db: Value,
}

pub struct Case {
    pub name: String,
    pub tree: Value,
    pub db: Value,
    pub ticks: i64,
    pub expect: Vec<Expected>,
}

fn field<'a>(m: &'a Value, key: &str) -> &'a Value {
    m.get(&Value::keyword(key))
        .unwrap_or_else(|| panic!("missing {key} in {m}"))
}

/// The cases of aido's own suite.
pub fn conformance_cases() -> Vec<Case> {
    let path = data_dir().join("conformance/aido-suite.edn");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let suite = read_value(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    suite
        .as_seq()
        .expect("the suite is a vector")
        .iter()
        .map(|c| Case {
            name: field(c, "name").as_str().expect("name").to_owned(),
            tree: field(c, "tree").clone(),
            db: field(c, "db").clone(),
            ticks: field(c, "ticks").as_int().expect("ticks"),
            expect: field(c, "expect")
                .as_seq()
                .expect("expect")
                .iter()
                .map(|e| Expected {
                    status: field(e, "status").clone(),
                    db: field(e, "db").clone(),
                })
                .collect(),
        })
        .collect()
}

/// The db without keys whose namespace is `aido` or starts with `aido.`.
pub fn without_aido_keys(db: &Value) -> Value {
    let map = db.as_map().expect("db is a map");
    Value::map_from(
        map.iter()
            .filter(|(k, _)| {
                !k.as_keyword()
                    .and_then(|k| k.namespace())
                    .is_some_and(|ns| ns == "aido" || ns.starts_with("aido."))
            })
            .map(|(k, v)| (k.clone(), v.clone())),
    )
}

/// What one run of the `aido` binary did.
#[derive(Debug, PartialEq)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    /// Runs `command` (an `aido` invocation) to completion.
    pub fn of(command: &mut std::process::Command) -> Run {
        let output = command.output().expect("the binary runs");
        Run {
            code: output.status.code().expect("exited, not killed"),
            stdout: String::from_utf8(output.stdout).expect("stdout is UTF-8"),
            stderr: String::from_utf8(output.stderr).expect("stderr is UTF-8"),
        }
    }

    /// Runs `command` with `input` on its standard input (a pipe).
    pub fn with_input(command: &mut std::process::Command, input: &str) -> Run {
        use std::io::Write;
        use std::process::Stdio;
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the binary runs");
        let mut stdin = child.stdin.take().expect("a pipe");
        let input = input.to_owned();
        // Written from another thread, so that a full stdout pipe cannot
        // block both sides.
        let writer = std::thread::spawn(move || {
            let _ = stdin.write_all(input.as_bytes());
        });
        let output = child.wait_with_output().expect("the binary runs");
        writer.join().expect("the writer ends");
        Run {
            code: output.status.code().expect("exited, not killed"),
            stdout: String::from_utf8(output.stdout).expect("stdout is UTF-8"),
            stderr: String::from_utf8(output.stderr).expect("stderr is UTF-8"),
        }
    }
}

/// A small deterministic generator (SplitMix64), so that failures replay.
pub struct Gen(pub u64);

impl Gen {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    pub fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len() as u64) as usize]
    }
}
