//! `aido shard` against a throwaway PostgreSQL cluster, with real faults: a
//! worker killed with SIGKILL between checkpoints, a worker paused with
//! SIGSTOP past its lease while another takes its shards over. Each checks
//! the stored dbs, bit for bit, against the same shards ticked in this
//! process, never interrupted. Points in a run are reached through the
//! worker's test hook (`AIDO_SHARD_HOOK=SHARD:TICK`: it says so on stdout
//! and waits for a line on stdin); every wait is for a line, a row or a
//! process, bounded generously.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Arc;
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use aido::store::shard::{MemoryShards, ShardConfig, ShardEvent, ShardOwner, shard_of};
use aido::value::{decode, encode};
use aido::{Registry, Value, compile_str};

use crate::pg::{Cluster, Database, shared};

/// How long any one wait may take before the test fails: far above what
/// a loaded machine needs.
const BOUND: Duration = Duration::from_secs(120);

const TREE: &str = "[:sequence
  [:inc! {:key :n}]
  [:randomly {:p 0.5} [:inc! {:key :heads}] [:inc! {:key :tails}]]
  [:wait {:seconds 0.05}]]";

const SHARDS: u32 = 2;
const AGENTS: u64 = 8;
const RATE: f64 = 500.0;
/// The workers' lease, in seconds: what a new worker waits after an owner
/// stopped renewing. A worker that misses its own renewal on a loaded
/// machine renews late (fenced by its epoch, not by the time) unless
/// another worker took the shard, which the tests allow for.
const LEASE: &str = "0.5";

fn aido() -> Command {
    Command::new(env!("CARGO_BIN_EXE_aido"))
}

/// A worker of the test's store, its stdout lines coming through a channel.
struct Worker {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    seen: Vec<String>,
}

impl Worker {
    fn start(
        tree: &Path,
        url: &str,
        ticks: u64,
        checkpoint_every: u64,
        hook: Option<&str>,
    ) -> Worker {
        let mut command = aido();
        command.args(["shard"]).arg(tree).args([
            "--store",
            url,
            "--shards",
            &SHARDS.to_string(),
            "--agents",
            &AGENTS.to_string(),
            "--ticks",
            &ticks.to_string(),
            "--tick-rate",
            &RATE.to_string(),
            "--checkpoint-every",
            &checkpoint_every.to_string(),
            "--lease",
            LEASE,
        ]);
        match hook {
            Some(hook) => command.env("AIDO_SHARD_HOOK", hook),
            None => command.env_remove("AIDO_SHARD_HOOK"),
        };
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (send, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if send.send(line).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        Worker {
            child,
            stdin,
            lines,
            seen: Vec::new(),
        }
    }

    /// Waits for a stdout line that starts with `prefix`; returns it.
    fn wait_line(&mut self, prefix: &str) -> String {
        if let Some(line) = self.seen.iter().find(|l| l.starts_with(prefix)) {
            return line.clone();
        }
        let deadline = Instant::now() + BOUND;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    if line.starts_with(prefix) {
                        return line;
                    }
                }
                Err(RecvTimeoutError::Timeout) => {
                    panic!(
                        "no line `{prefix}...` within {BOUND:?}; saw {:?}",
                        self.seen
                    )
                }
                Err(RecvTimeoutError::Disconnected) => {
                    let (code, stderr) = self.finish();
                    panic!(
                        "the worker ended ({code:?}) before `{prefix}...`; saw {:?}; stderr {stderr}",
                        self.seen
                    )
                }
            }
        }
    }

    /// Lets a worker held by its hook go on.
    fn release_hook(&mut self) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(b"go\n").unwrap();
        stdin.flush().unwrap();
    }

    fn exited(&mut self) -> bool {
        self.child.try_wait().unwrap().is_some()
    }

    /// Waits for the worker to end; its exit code and stderr.
    fn finish(&mut self) -> (Option<i32>, String) {
        self.stdin = None;
        let deadline = Instant::now() + BOUND;
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            assert!(
                Instant::now() < deadline,
                "the worker did not end within {BOUND:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        while let Ok(line) = self.lines.try_recv() {
            self.seen.push(line);
        }
        let mut stderr = String::new();
        self.child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut stderr)
            .unwrap();
        (status.code(), stderr)
    }

    fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .args([signal, &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success(), "kill {signal}");
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A store with the tables made, and the tree file in a folder of its own.
fn setup(cluster: &Cluster) -> (Database<'_>, PathBuf) {
    let url = cluster.database();
    let run = aido().args(["store", "init", &url]).output().unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let tree = tree_file(cluster, &url);
    (url, tree)
}

/// The tree, in a file named for the database `url` (the cluster is
/// shared by tests running at the same time).
fn tree_file(cluster: &Cluster, url: &str) -> PathBuf {
    let database = url.rsplit('=').next().unwrap();
    let tree = cluster.dir().join(format!("{database}-tree.edn"));
    std::fs::write(&tree, TREE).unwrap();
    tree
}

fn client(url: &str) -> postgres::Client {
    postgres::Client::connect(url, postgres::NoTls).unwrap()
}

/// Every stored agent's encoded db, by key.
fn stored(client: &mut postgres::Client) -> Vec<(String, Vec<u8>)> {
    client
        .query("SELECT key, db FROM aido.shard_agents ORDER BY key", &[])
        .unwrap()
        .into_iter()
        .map(|row| (row.get(0), row.get(1)))
        .collect()
}

/// The dbs of every shard ticked `ticks` times in this process, never
/// interrupted, as `aido shard` ticks them: the shard's `--agents` made at
/// its first tick, tick t at `:aido/now` (t - 1) / HZ.
fn reference(ticks: u64) -> Vec<(String, Vec<u8>)> {
    let tree = Arc::new(compile_str("shard-tree.edn", TREE, &Registry::new()).unwrap());
    let mut all = Vec::new();
    for shard in 0..SHARDS {
        let mut store = MemoryShards::new();
        let config = ShardConfig {
            shards: SHARDS,
            checkpoint_every: 1_000,
            lease_ms: 1_000,
        };
        let mut owner = ShardOwner::take(&mut store, Arc::clone(&tree), shard, "ref", 0, config)
            .unwrap()
            .unwrap();
        for t in 1..=ticks {
            let events: Vec<ShardEvent> = if t == 1 {
                (0..AGENTS)
                    .map(|i| format!("agent-{i}"))
                    .filter(|k| shard_of(k, SHARDS) == shard)
                    .map(|agent| ShardEvent::Input {
                        agent,
                        input: Default::default(),
                    })
                    .collect()
            } else {
                Vec::new()
            };
            owner
                .tick(&mut store, 0, (t - 1) as f64 / RATE, &events)
                .unwrap();
        }
        all.extend(
            owner
                .agents()
                .map(|(k, db)| (k.to_owned(), encode(db).unwrap())),
        );
    }
    all.sort();
    all
}

fn n_of(bytes: &[u8]) -> i64 {
    match decode(bytes).unwrap().get(&Value::keyword("n")) {
        Some(Value::Int(n)) => *n,
        other => panic!("no :n in a stored agent: {other:?}"),
    }
}

#[test]
fn a_shard_owner_killed_between_checkpoints_is_recovered_bit_for_bit() {
    let Some(cluster) = shared("a_shard_owner_killed_between_checkpoints") else {
        return;
    };
    let (url, tree) = setup(cluster);
    let mut db = client(&url);
    let mut first = Worker::start(&tree, &url, 60, 10, Some("0:37"));
    first.wait_line("hook: shard 0 at tick 37");
    // Between checkpoints: shard 0's checkpoint is at tick 30 and its
    // journal holds ticks 31 to 37.
    let row = db
        .query_one(
            "SELECT checkpoint_tick FROM aido.shards WHERE shard = 0",
            &[],
        )
        .unwrap();
    assert_eq!(row.get::<_, i64>(0), 30);
    let journal: Vec<i64> = db
        .query(
            "SELECT tick FROM aido.shard_journal WHERE shard = 0 ORDER BY tick",
            &[],
        )
        .unwrap()
        .into_iter()
        .map(|r| r.get(0))
        .collect();
    assert_eq!(journal, (31..=37).collect::<Vec<i64>>());
    first.signal("-KILL");
    let (code, _) = first.finish();
    assert_eq!(code, None, "killed by a signal");
    // A new worker waits out the dead one's lease, takes both shards,
    // replays their journals and finishes the run.
    let mut second = Worker::start(&tree, &url, 60, 10, None);
    second.wait_line("shard 0: taken, epoch 2, tick 37 (7 replayed), 4 agents");
    let (code, stderr) = second.finish();
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        second
            .seen
            .iter()
            .any(|l| l.starts_with("shard 1: taken, epoch 2")),
        "{:?}",
        second.seen
    );
    assert_eq!(stored(&mut db), reference(60));
}

#[test]
fn a_paused_shard_owner_whose_shards_were_taken_writes_nothing() {
    let Some(cluster) = shared("a_paused_shard_owner_whose_shards_were_taken") else {
        return;
    };
    let (url, tree) = setup(cluster);
    let mut db = client(&url);
    let mut first = Worker::start(&tree, &url, 200, 5, Some("1:23"));
    first.wait_line("hook: shard 1 at tick 23");
    // Paused past its lease, outside any transaction.
    first.signal("-STOP");
    let mut second = Worker::start(&tree, &url, 200, 5, None);
    let mut highest: HashMap<String, i64> = HashMap::new();
    let mut check = |db: &mut postgres::Client| {
        for (key, bytes) in stored(db) {
            let n = n_of(&bytes);
            let before = highest.insert(key.clone(), n).unwrap_or(0);
            assert!(n >= before, "agent {key} went back from n {before} to {n}");
        }
    };
    second.wait_line("shard 0: taken, epoch 2");
    second.wait_line("shard 1: taken, epoch 2");
    check(&mut db);
    // Woken, the first worker tries its next tick: refused, it lets the
    // shards go and says so, while the second goes on.
    first.signal("-CONT");
    first.release_hook();
    let deadline = Instant::now() + BOUND;
    while !(first.exited() && second.exited()) {
        assert!(
            Instant::now() < deadline,
            "the workers did not end within {BOUND:?}"
        );
        check(&mut db);
        std::thread::sleep(Duration::from_millis(10));
    }
    check(&mut db);
    let (code, stderr) = first.finish();
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("[S0101]"), "{stderr}");
    assert!(stderr.contains("was taken by another worker"), "{stderr}");
    // The second worker renews its leases at half their length; on a
    // machine so loaded that a tick waits longer than that, the first may
    // take a shard back, and the second is fenced out of it in turn: the
    // same rules, and the same result.
    let (code, stderr) = second.finish();
    assert!(
        code == Some(0) || (code == Some(1) && stderr.contains("[S0101]")),
        "{code:?} {stderr}"
    );
    // The refused writes changed nothing: the store holds the dbs of a run
    // never interrupted.
    assert_eq!(stored(&mut db), reference(200));
    let epochs: Vec<i64> = db
        .query("SELECT epoch FROM aido.shards ORDER BY shard", &[])
        .unwrap()
        .into_iter()
        .map(|r| r.get(0))
        .collect();
    assert!(epochs.iter().all(|&e| e >= 2), "{epochs:?}");
}

#[test]
fn the_shard_command_says_what_is_wrong_in_one_line() {
    let Some(cluster) = shared("the_shard_command_says_what_is_wrong") else {
        return;
    };
    let url = cluster.database();
    let tree = tree_file(cluster, &url);
    let run = |args: &[&str]| {
        let out = aido().arg("shard").arg(&tree).args(args).output().unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let gone = format!("host={}/gone user=aido", cluster.dir().display());
    for (args, code) in [
        (vec!["--store", url.as_str(), "--shards", "2"], "[S0008]"),
        (
            vec!["--store", "postgres://a@[", "--shards", "2"],
            "[S0005]",
        ),
        (vec!["--store", gone.as_str(), "--shards", "2"], "[S0006]"),
    ] {
        let (status, stderr) = run(&args);
        assert_eq!(status, Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(code), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
    }
    let init = aido().args(["store", "init", &url]).output().unwrap();
    assert!(init.status.success());
    // The shard tables at another version.
    client(&url)
        .execute("UPDATE aido.shard_meta SET schema_version = 99", &[])
        .unwrap();
    let (status, stderr) = run(&["--store", &url, "--shards", "2"]);
    assert_eq!(status, Some(2), "{stderr}");
    assert!(stderr.contains("[S0007]"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    client(&url)
        .execute("UPDATE aido.shard_meta SET schema_version = 1", &[])
        .unwrap();
    // Another shard count than the store's.
    let (status, stderr) = run(&[
        "--store",
        &url,
        "--shards",
        "2",
        "--ticks",
        "3",
        "--tick-rate",
        "100",
    ]);
    assert_eq!(status, Some(0), "{stderr}");
    let (status, stderr) = run(&["--store", &url, "--shards", "3", "--ticks", "3"]);
    assert_eq!(status, Some(2), "{stderr}");
    assert!(stderr.contains("[S0102]"), "{stderr}");
    // With --max-shards 1 the worker holds one shard at a time: it
    // finishes the first before it takes the second.
    let (fresh, _) = setup(cluster);
    let out = aido()
        .arg("shard")
        .arg(&tree)
        .args([
            "--store",
            &fresh,
            "--shards",
            "2",
            "--ticks",
            "6",
            "--tick-rate",
            "100",
        ])
        .args(["--max-shards", "1", "--agents", "8"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "shard 0: taken, epoch 1, tick 0 (0 replayed), 0 agents\n\
         shard 0: tick 6, 4 agents, checkpointed\n\
         shard 1: taken, epoch 1, tick 0 (0 replayed), 0 agents\n\
         shard 1: tick 6, 4 agents, checkpointed\n"
    );
    // A lease too short for the tick rate, and a malformed hook.
    let (status, stderr) = run(&["--store", &url, "--shards", "2", "--lease", "0.1"]);
    assert_eq!(
        (status, stderr.as_str()),
        (
            Some(2),
            "aido: --lease: 0.1 seconds is less than four ticks at 20 Hz: the lease would lapse between renewals\n"
        )
    );
    let out = aido()
        .arg("shard")
        .arg(&tree)
        .args(["--store", &url, "--shards", "2"])
        .env("AIDO_SHARD_HOOK", "soon")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "aido: AIDO_SHARD_HOOK: expected SHARD:TICK, got `soon`\n"
    );
}
