//! Throwaway PostgreSQL clusters for the store tests: `initdb` in a
//! temporary folder (as the user `nobody` when the tests run as root, since
//! PostgreSQL refuses to run as root), listening only on a Unix socket in
//! that folder.
//!
//! Most tests share one cluster ([`shared`]), each in databases of its own
//! ([`Cluster::database`]): making a cluster costs about a second of a
//! loaded machine's time. A test that stops or restarts the server takes a
//! cluster of its own ([`Cluster::start`]).
//!
//! Every cluster has a reaper: a small shell process, in a process group
//! of its own, that reads from a pipe only this process writes to. When
//! the pipe closes (the owned cluster is dropped, or the test process
//! ends however it ends: normally, by a panic, by Ctrl-C or by SIGKILL,
//! which is how the shared cluster, a static that is never dropped, goes)
//! the reaper stops the server (`pg_ctl -m immediate`) and removes the
//! folder. The kernel closes the pipe, so no exit hook is needed.
//!
//! The server binaries are looked for in `AIDO_PG_BIN`, then in Debian's
//! `/usr/lib/postgresql/*/bin`, then through `pg_config --bindir`. Without
//! them a test says so and passes, except under `CI=true`, where it fails.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::ffi::OsStr;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, OnceLock};

/// A running cluster. Its reaper stops the server and removes its folder
/// when the cluster is dropped or the test process ends.
pub struct Cluster {
    dir: PathBuf,
    bin: PathBuf,
    as_nobody: bool,
    databases: AtomicU32,
    /// Databases given back, to be emptied and handed out again.
    free: Mutex<Vec<String>>,
    /// The reaper and the pipe it waits on; `None` once dropped.
    reaper: Option<(Child, ChildStdin)>,
}

/// The cluster shared by every test that never stops its server, started
/// by the first test that asks; each test makes databases of its own in
/// it. `None` (after saying why) when no PostgreSQL is installed and this
/// is not CI.
pub fn shared(test: &str) -> Option<&'static Cluster> {
    let bin = find_bin_or_skip(test)?;
    static SHARED: OnceLock<Cluster> = OnceLock::new();
    Some(SHARED.get_or_init(|| Cluster::make(bin)))
}

fn find_bin_or_skip(test: &str) -> Option<PathBuf> {
    let bin = find_bin();
    if bin.is_none() {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "{test}: no PostgreSQL server binaries (initdb) found, and CI=true"
        );
        eprintln!("{test}: skipped: no PostgreSQL server binaries (initdb) found");
    }
    bin
}

/// `text` quoted for the shell.
fn quoted(text: &OsStr) -> String {
    format!("'{}'", text.to_string_lossy().replace('\'', "'\\''"))
}

fn find_bin() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("AIDO_PG_BIN") {
        return Some(PathBuf::from(dir));
    }
    let mut debian: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path().join("bin"))
        .filter(|p| p.join("initdb").exists())
        .collect();
    debian.sort();
    if let Some(newest) = debian.pop() {
        return Some(newest);
    }
    let out = Command::new("pg_config").arg("--bindir").output().ok()?;
    let dir = PathBuf::from(String::from_utf8(out.stdout).ok()?.trim());
    dir.join("initdb").exists().then_some(dir)
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

impl Cluster {
    /// Starts a cluster of the test's own, for a test that stops or
    /// restarts its server; `None` (after saying why) when no PostgreSQL
    /// is installed and this is not CI.
    pub fn start(test: &str) -> Option<Cluster> {
        Some(Cluster::make(find_bin_or_skip(test)?))
    }

    fn make(bin: PathBuf) -> Cluster {
        static N: AtomicU32 = AtomicU32::new(0);
        let dir = std::env::temp_dir().join(format!(
            "aido-pg-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let as_nobody = is_root();
        let mut cluster = Cluster {
            dir,
            bin,
            as_nobody,
            databases: AtomicU32::new(0),
            free: Mutex::new(Vec::new()),
            reaper: None,
        };
        if as_nobody {
            let status = Command::new("chown")
                .args(["nobody"])
                .arg(&cluster.dir)
                .status()
                .unwrap();
            assert!(status.success(), "chown nobody {}", cluster.dir.display());
        }
        cluster.reaper = Some(cluster.reaper());
        let data = cluster.dir.join("data");
        cluster.run(
            "initdb",
            &[
                "-D".as_ref(),
                data.as_os_str(),
                "-U".as_ref(),
                "aido".as_ref(),
                "-A".as_ref(),
                "trust".as_ref(),
                "--no-locale".as_ref(),
                "-E".as_ref(),
                "UTF8".as_ref(),
                "--no-sync".as_ref(),
            ],
        );
        cluster.start_again();
        cluster
    }

    /// Starts the reaper: it waits for the end of its standard input (the
    /// pipe's only writer is this process, which never writes), then stops
    /// the server and removes the folder. In a process group of its own, so
    /// that a Ctrl-C meant for the tests does not stop it before it cleans.
    fn reaper(&self) -> (Child, ChildStdin) {
        let pg_ctl = self.bin.join("pg_ctl");
        let prefix = if self.as_nobody {
            "runuser -u nobody -- "
        } else {
            ""
        };
        let script = format!(
            "read _ ; {prefix}{} -D {} -m immediate -w stop >/dev/null 2>&1 ; rm -rf {}",
            quoted(pg_ctl.as_os_str()),
            quoted(self.dir.join("data").as_os_str()),
            quoted(self.dir.as_os_str()),
        );
        let mut child = Command::new("sh")
            .args(["-c", &script])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        (child, stdin)
    }

    fn run(&self, program: &str, args: &[&OsStr]) {
        let path = self.bin.join(program);
        let mut command = if self.as_nobody {
            let mut c = Command::new("runuser");
            c.args(["-u", "nobody", "--"]).arg(&path);
            c
        } else {
            Command::new(&path)
        };
        let out = command
            .args(args)
            .current_dir(&self.dir)
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(
            out.status.success(),
            "{program} failed: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// The connection string of database `db`.
    pub fn url(&self, db: &str) -> String {
        format!("host={} user=aido dbname={db}", self.dir.display())
    }

    /// An empty database of the caller's own, until the returned guard
    /// is dropped; it derefs to its connection string.
    ///
    /// A database given back is emptied and handed out again: the store
    /// keeps everything in its schema `aido`, so dropping that schema
    /// leaves what a new database has, at a small part of the cost of
    /// `CREATE DATABASE` (which copies the template's catalogs).
    pub fn database(&self) -> Database<'_> {
        let used = self.free.lock().unwrap().pop();
        let name = match used {
            Some(name) => {
                let mut client =
                    postgres::Client::connect(&self.url(&name), postgres::NoTls).unwrap();
                client
                    .batch_execute("DROP SCHEMA IF EXISTS aido CASCADE")
                    .unwrap();
                name
            }
            None => {
                let name = format!("t{}", self.databases.fetch_add(1, Ordering::Relaxed));
                let mut client =
                    postgres::Client::connect(&self.url("postgres"), postgres::NoTls).unwrap();
                client
                    .batch_execute(&format!("CREATE DATABASE {name}"))
                    .unwrap();
                name
            }
        };
        Database {
            url: self.url(&name),
            name,
            cluster: self,
        }
    }

    /// Stops the server at once (`-m immediate`: no checkpoint, every
    /// connection cut), as a crash would, keeping its data.
    pub fn stop_now(&self) {
        let data = self.dir.join("data");
        self.run(
            "pg_ctl",
            &[
                "-D".as_ref(),
                data.as_os_str(),
                "-m".as_ref(),
                "immediate".as_ref(),
                "-w".as_ref(),
                "stop".as_ref(),
            ],
        );
    }

    /// Starts the server again after [`Cluster::stop_now`], on its data.
    pub fn start_again(&self) {
        let data = self.dir.join("data");
        let options = format!(
            "-c listen_addresses='' -c unix_socket_directories='{}' -c fsync=off -c max_connections=100",
            self.dir.display()
        );
        let log = self.dir.join("log");
        self.run(
            "pg_ctl",
            &[
                "-D".as_ref(),
                data.as_os_str(),
                "-o".as_ref(),
                options.as_ref(),
                "-l".as_ref(),
                log.as_os_str(),
                "-w".as_ref(),
                "start".as_ref(),
            ],
        );
    }

    /// The folder of the cluster (its socket is there).
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

impl Drop for Cluster {
    /// Closes the reaper's pipe and waits while it stops the server and
    /// removes the folder.
    fn drop(&mut self) {
        if let Some((mut child, stdin)) = self.reaper.take() {
            drop(stdin);
            let _ = child.wait();
        }
    }
}

/// A database of a [`Cluster`] held by one test ([`Cluster::database`]);
/// it derefs to the database's connection string.
pub struct Database<'a> {
    url: String,
    name: String,
    cluster: &'a Cluster,
}

impl std::ops::Deref for Database<'_> {
    type Target = String;

    fn deref(&self) -> &String {
        &self.url
    }
}

impl Drop for Database<'_> {
    /// Gives the database back to its cluster, unless the test is failing
    /// (what it left may still be in use).
    fn drop(&mut self) {
        if !std::thread::panicking()
            && let Ok(mut free) = self.cluster.free.lock()
        {
            free.push(std::mem::take(&mut self.name));
        }
    }
}
