//! A throwaway PostgreSQL cluster for the store tests: `initdb` in a
//! temporary folder (as the user `nobody` when the tests run as root, since
//! PostgreSQL refuses to run as root), listening only on a Unix socket in
//! that folder, stopped and removed when the `Cluster` is dropped.
//!
//! The server binaries are looked for in `AIDO_PG_BIN`, then in Debian's
//! `/usr/lib/postgresql/*/bin`, then through `pg_config --bindir`. Without
//! them a test says so and passes, except under `CI=true`, where it fails.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};

/// A running cluster; dropping it stops the server and removes its folder.
pub struct Cluster {
    dir: PathBuf,
    bin: PathBuf,
    as_nobody: bool,
    databases: AtomicU32,
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
    /// Starts a cluster, or returns `None` (after saying why) when no
    /// PostgreSQL is installed and this is not CI.
    pub fn start(test: &str) -> Option<Cluster> {
        let Some(bin) = find_bin() else {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "{test}: no PostgreSQL server binaries (initdb) found, and CI=true"
            );
            eprintln!("{test}: skipped: no PostgreSQL server binaries (initdb) found");
            return None;
        };
        static N: AtomicU32 = AtomicU32::new(0);
        let dir = std::env::temp_dir().join(format!(
            "aido-pg-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let as_nobody = is_root();
        let cluster = Cluster {
            dir,
            bin,
            as_nobody,
            databases: AtomicU32::new(0),
        };
        if as_nobody {
            let status = Command::new("chown")
                .args(["nobody"])
                .arg(&cluster.dir)
                .status()
                .unwrap();
            assert!(status.success(), "chown nobody {}", cluster.dir.display());
        }
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
        Some(cluster)
    }

    fn run(&self, program: &str, args: &[&std::ffi::OsStr]) {
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

    /// A new, empty database; its connection string.
    pub fn database(&self) -> String {
        let name = format!("t{}", self.databases.fetch_add(1, Ordering::Relaxed));
        let mut client = postgres::Client::connect(&self.url("postgres"), postgres::NoTls).unwrap();
        client
            .batch_execute(&format!("CREATE DATABASE {name}"))
            .unwrap();
        self.url(&name)
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
            "-c listen_addresses='' -c unix_socket_directories='{}' -c fsync=off -c max_connections=40",
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
    fn drop(&mut self) {
        let data = self.dir.join("data");
        let path = self.bin.join("pg_ctl");
        let mut command = if self.as_nobody {
            let mut c = Command::new("runuser");
            c.args(["-u", "nobody", "--"]).arg(&path);
            c
        } else {
            Command::new(&path)
        };
        let _ = command
            .arg("-D")
            .arg(&data)
            .args(["-m", "immediate", "-w", "stop"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
