//! `aido shard TREE --store URL --shards N [options]`: a worker of
//! shard-owned agents (see `aido::store::shard`). It needs the `postgres`
//! feature; without it the command says so in one line.

use std::io::Write;
use std::path::PathBuf;

use super::Failure;
use super::args::{self, SHARD_USAGE, ShardArgs};

/// The test hook: `AIDO_SHARD_HOOK=SHARD:TICK` makes the worker wait right
/// after shard SHARD's tick TICK (journaled, and checkpointed if it was
/// due), saying so on stdout, until it reads a line on stdin, so that a
/// test can kill or pause it at a known point between checkpoints.
const HOOK: &str = "AIDO_SHARD_HOOK";

/// What the command line asks for.
#[derive(Debug)]
// Without the `postgres` feature the flags are checked, then refused.
#[cfg_attr(not(feature = "postgres"), allow(dead_code))]
struct Config {
    tree: PathBuf,
    url: String,
    shards: u32,
    checkpoint_every: u64,
    tick_rate: f64,
    ticks: Option<u64>,
    agents: u64,
    lease_ms: i64,
    max_shards: u64,
    owner: String,
    hook: Option<(u32, u64)>,
}

impl Config {
    fn from_args(parsed: &ShardArgs) -> Result<Config, Failure> {
        let tree = args::one_tree(&parsed.paths, "shard", SHARD_USAGE)?;
        let url = match args::text("--store", parsed.store.as_deref())? {
            Some(url) => url.to_owned(),
            None => return Err(Failure::usage("`--store URL` is required", SHARD_USAGE)),
        };
        let shards = match args::positive("--shards", parsed.shards.as_deref())? {
            None => return Err(Failure::usage("`--shards N` is required", SHARD_USAGE)),
            Some(n) => u32::try_from(n)
                .ok()
                .filter(|n| i32::try_from(*n).is_ok())
                .ok_or_else(|| {
                    Failure::input("--shards", format!("{n} shards is more than {}", i32::MAX))
                })?,
        };
        let checkpoint_every =
            args::positive("--checkpoint-every", parsed.checkpoint_every.as_deref())?.unwrap_or(60);
        let tick_rate =
            args::positive_number("--tick-rate", parsed.tick_rate.as_deref())?.unwrap_or(20.0);
        let ticks = args::positive("--ticks", parsed.ticks.as_deref())?;
        let agents = args::positive("--agents", parsed.agents.as_deref())?.unwrap_or(0);
        let lease = args::positive_number("--lease", parsed.lease.as_deref())?.unwrap_or(10.0);
        // Renewed at the first tick after half of it is gone: two tick
        // periods must fit in it, with room to spare.
        if lease < 4.0 / tick_rate {
            return Err(Failure::input(
                "--lease",
                format!(
                    "{lease} seconds is less than four ticks at {tick_rate} Hz: the lease would lapse between renewals"
                ),
            ));
        }
        let lease_ms = (lease * 1000.0).min(i64::MAX as f64) as i64;
        let max_shards =
            args::positive("--max-shards", parsed.max_shards.as_deref())?.unwrap_or(u64::MAX);
        let owner = match args::text("--owner", parsed.owner.as_deref())? {
            Some(name) => name.to_owned(),
            None => format!("worker-{}", std::process::id()),
        };
        Ok(Config {
            tree,
            url,
            shards,
            checkpoint_every,
            tick_rate,
            ticks,
            agents,
            lease_ms,
            max_shards,
            owner,
            hook: hook()?,
        })
    }
}

/// `AIDO_SHARD_HOOK`, if set.
fn hook() -> Result<Option<(u32, u64)>, Failure> {
    let Some(value) = std::env::var_os(HOOK) else {
        return Ok(None);
    };
    let parsed = value.to_str().and_then(|text| {
        let (shard, tick) = text.split_once(':')?;
        Some((shard.parse().ok()?, tick.parse().ok()?))
    });
    parsed.map(Some).ok_or_else(|| {
        Failure::input(
            HOOK,
            format!("expected SHARD:TICK, got `{}`", value.to_string_lossy()),
        )
    })
}

/// `aido shard`.
pub(crate) fn main(parsed: &ShardArgs, out: &mut dyn Write) -> Result<i32, Failure> {
    let config = Config::from_args(parsed)?;
    backend::run(&config, out)
}

#[cfg(feature = "postgres")]
mod backend {
    use std::collections::HashMap;
    use std::io::Write;
    use std::sync::Arc;
    use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

    use aido::store::StoreError;
    use aido::store::pg_shard::PgShards;
    use aido::store::shard::{ShardConfig, ShardError, ShardEvent, ShardOwner, shard_of};

    use super::Config;
    use crate::cli::Failure;
    use crate::cli::load::compile_tree;

    fn failure(e: impl Into<ShardError>) -> Failure {
        Failure::input("store", e.into().to_string())
    }

    /// Milliseconds since the epoch: the clock leases are read from.
    fn clock() -> i64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
    }

    /// The events of a shard's tick `t`: at tick 1, the `--agents` of the
    /// shard are made.
    fn events(config: &Config, shard: u32, t: u64) -> Vec<ShardEvent> {
        if t != 1 {
            return Vec::new();
        }
        (0..config.agents)
            .map(|i| format!("agent-{i}"))
            .filter(|key| shard_of(key, config.shards) == shard)
            .map(|agent| ShardEvent::Input {
                agent,
                input: Default::default(),
            })
            .collect()
    }

    pub(super) fn run(config: &Config, out: &mut dyn Write) -> Result<i32, Failure> {
        let tree = Arc::new(compile_tree(&config.tree)?);
        let mut store = PgShards::open(&config.url).map_err(|e: StoreError| failure(e))?;
        let shard_config = ShardConfig {
            shards: config.shards,
            checkpoint_every: config.checkpoint_every,
            lease_ms: config.lease_ms,
        };
        let period = Duration::from_secs_f64(1.0 / config.tick_rate);
        let retry = Duration::from_millis(u64::try_from(config.lease_ms / 4).unwrap_or(1).max(1));
        let mut owned: Vec<ShardOwner> = Vec::new();
        let mut lost = false;
        let mut next_take = Instant::now();
        let mut next_tick = Instant::now();
        loop {
            if Instant::now() >= next_take {
                let done: HashMap<u32, u64> = store
                    .progress(config.shards)
                    .map_err(failure)?
                    .into_iter()
                    .collect();
                let finished = |shard: u32| {
                    config
                        .ticks
                        .is_some_and(|t| done.get(&shard).is_some_and(|&at| at >= t))
                };
                if config.ticks.is_some() && owned.is_empty() && (0..config.shards).all(finished) {
                    break;
                }
                for shard in 0..config.shards {
                    if owned.len() as u64 >= config.max_shards {
                        break;
                    }
                    if finished(shard) || owned.iter().any(|o| o.lease().shard == shard) {
                        continue;
                    }
                    let taken = ShardOwner::take(
                        &mut store,
                        Arc::clone(&tree),
                        shard,
                        &config.owner,
                        clock(),
                        shard_config,
                    )
                    .map_err(failure)?;
                    if let Some(owner) = taken {
                        writeln!(
                            out,
                            "shard {shard}: taken, epoch {}, tick {} ({} replayed), {} agents",
                            owner.lease().epoch,
                            owner.tick_number(),
                            owner.replayed(),
                            owner.agents().count()
                        )?;
                        out.flush()?;
                        owned.push(owner);
                    }
                }
                next_take = Instant::now() + retry;
            }
            let ticking = !owned.is_empty() && Instant::now() >= next_tick;
            let mut i = 0;
            while ticking && i < owned.len() {
                let owner = &mut owned[i];
                let shard = owner.lease().shard;
                let t = owner.tick_number() + 1;
                let finished = config.ticks.is_some_and(|last| t > last);
                let result = if finished {
                    Ok(())
                } else {
                    let now = (t - 1) as f64 / config.tick_rate;
                    owner
                        .tick(&mut store, clock(), now, &events(config, shard, t))
                        .map(|_| ())
                };
                match result {
                    Ok(()) if finished || config.ticks == Some(t) => {
                        let owner = owned.swap_remove(i);
                        let (t, agents) = (owner.tick_number(), owner.agents().count());
                        match owner.release(&mut store) {
                            Ok(()) => {
                                writeln!(
                                    out,
                                    "shard {shard}: tick {t}, {agents} agents, checkpointed"
                                )?;
                                out.flush()?;
                                // See at once whether every shard is done.
                                next_take = Instant::now();
                            }
                            Err(e) if e.is_fenced() => {
                                eprintln!("aido: {e}");
                                lost = true;
                            }
                            Err(e) => return Err(failure(e)),
                        }
                    }
                    Ok(()) => {
                        if config.hook == Some((shard, t)) {
                            writeln!(out, "hook: shard {shard} at tick {t}")?;
                            out.flush()?;
                            // Held at a known point, outside any
                            // transaction, until a line (or the end) on
                            // stdin: the test kills or pauses the process
                            // here.
                            let mut line = String::new();
                            std::io::stdin().read_line(&mut line)?;
                        }
                        i += 1;
                    }
                    Err(e) if e.is_fenced() => {
                        eprintln!("aido: {e}");
                        owned.swap_remove(i);
                        lost = true;
                    }
                    Err(e) => return Err(failure(e)),
                }
            }
            let now = Instant::now();
            if ticking {
                next_tick += period;
                if next_tick < now {
                    // Behind (a slow tick, a pause): no burst to catch up.
                    next_tick = now;
                }
            }
            let wake = if owned.is_empty() {
                next_take
            } else {
                next_tick.min(next_take)
            };
            if let Some(wait) = wake.checked_duration_since(now) {
                std::thread::sleep(wait);
            }
        }
        Ok(i32::from(lost))
    }
}

#[cfg(not(feature = "postgres"))]
mod backend {
    use std::io::Write;

    use super::Config;
    use crate::cli::Failure;

    pub(super) fn run(_config: &Config, _out: &mut dyn Write) -> Result<i32, Failure> {
        Err(crate::cli::store::without_postgres())
    }
}
