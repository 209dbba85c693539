//! `aido bench TREE [options]`: time the ticks of one or many agents and
//! measure the memory their dbs hold.

use std::io::{self, Write};
use std::num::NonZeroUsize;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use aido::{
    Tree, Value, run_tick,
    tick::{AgentTick, tick_in_place},
    value::Map,
};

use super::Failure;
use super::alloc_count;
use super::args::{self, BENCH_USAGE, BenchArgs};
use super::load::{compile_tree, name, read_db_or_empty};

/// Ticks in the warm-up of a single agent, at most.
const WARM_UP_TICKS: u64 = 1000;

/// Agents ticked once in the warm-up of many, at most.
const WARM_UP_AGENTS: usize = 10_000;

/// The ticks per agent when `--ticks` is not given is this divided by M.
const DEFAULT_TOTAL_TICKS: u64 = 1_000_000;

/// How the results are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Text,
    Edn,
}

/// The checked settings of one benchmark.
#[derive(Debug)]
struct Config {
    tree: PathBuf,
    db: Option<PathBuf>,
    ticks: u64,
    agents: usize,
    /// `ticks * agents`, known not to overflow.
    total_ticks: u64,
    /// `--threads`: `None` for one per core.
    threads: Option<NonZeroUsize>,
    seed: Option<i64>,
    format: Format,
}

impl Config {
    fn from_args(parsed: &BenchArgs) -> Result<Config, Failure> {
        let tree = args::one_tree(&parsed.paths, "bench", BENCH_USAGE)?;
        let agents = match args::positive("--agents", parsed.agents.as_deref())? {
            None => 1,
            Some(m) => usize::try_from(m).map_err(|_| {
                Failure::input("--agents", format!("{m} agents cannot be held in memory"))
            })?,
        };
        let agents_u64 = agents as u64;
        let ticks = match args::positive("--ticks", parsed.ticks.as_deref())? {
            Some(n) => n,
            None => (DEFAULT_TOTAL_TICKS / agents_u64).max(1),
        };
        let Some(total_ticks) = ticks.checked_mul(agents_u64) else {
            return Err(Failure::input(
                "--ticks",
                format!("{ticks} ticks x {agents} agents is more ticks than a 64-bit count holds"),
            ));
        };
        let threads = match args::positive("--threads", parsed.threads.as_deref())? {
            None => None,
            Some(t) => Some(
                usize::try_from(t)
                    .ok()
                    .and_then(NonZeroUsize::new)
                    .ok_or_else(|| {
                        Failure::input("--threads", format!("{t} threads is too many"))
                    })?,
            ),
        };
        let seed = match args::integer("--seed", parsed.seed.as_deref())? {
            None => None,
            Some(seed) => {
                // Agent i gets S + i: the last agent's seed must be an integer too.
                let last = i64::try_from(agents - 1)
                    .ok()
                    .and_then(|i| seed.checked_add(i));
                if last.is_none() {
                    return Err(Failure::input(
                        "--seed",
                        format!("{seed} + {} overflows a 64-bit integer", agents - 1),
                    ));
                }
                Some(seed)
            }
        };
        let format = match args::text("--format", parsed.format.as_deref())? {
            None | Some("text") => Format::Text,
            Some("edn") => Format::Edn,
            Some(other) => {
                return Err(Failure::input(
                    "--format",
                    format!("expected `text` or `edn`, got `{other}`"),
                ));
            }
        };
        Ok(Config {
            tree,
            db: parsed.db.as_ref().map(PathBuf::from),
            ticks,
            agents,
            total_ticks,
            threads,
            seed,
            format,
        })
    }
}

/// What one benchmark measured.
struct Measured {
    elapsed: Duration,
    /// Bytes allocated for the agents' dbs after the ticking, less the baseline.
    db_bytes: usize,
    /// Allocation calls made while the ticks were timed.
    allocations: u64,
    /// The agents' final dbs.
    dbs: Vec<Value>,
}

pub(crate) fn main(parsed: &BenchArgs, out: &mut dyn Write) -> Result<i32, Failure> {
    let config = Config::from_args(parsed)?;

    let tree = compile_tree(&config.tree)?;
    let template = read_db_or_empty(config.db.as_deref())?;

    let measured = measure(&tree, &template, &config)?;
    let failed = measured
        .dbs
        .iter()
        .filter(|db| db.get(&Value::keyword("aido/error")).is_some())
        .count();
    if failed > 0 {
        out.flush()?;
        let _ = writeln!(
            io::stderr(),
            "aido: {}: the last tick ended in error for {failed} of {} agents (see :aido/error in the db)",
            name(&config.tree),
            config.agents
        );
    }
    report(out, &config, measured)?;
    Ok(0)
}

/// Warms up, makes the agents' dbs, times the ticks and counts the memory.
fn measure(tree: &Tree, template: &Value, config: &Config) -> Result<Measured, Failure> {
    let agent_db = |i: usize| agent_db(template, config.seed, i);
    let ticker = Ticker::new(config.threads)?;
    warm_up(tree, config, &ticker, agent_db);

    // Room for the dbs is made before the baseline: the slots are added by
    // size, so that only what the dbs themselves hold is measured.
    let too_many = |_| {
        Failure::input(
            "--agents",
            format!("not enough memory for {} agents", config.agents),
        )
    };
    refuse_beyond_memory(tree, template, config)?;
    let mut dbs: Vec<Value> = Vec::new();
    dbs.try_reserve_exact(config.agents).map_err(too_many)?;
    let mut statuses: Vec<AgentTick> = Vec::new();
    if config.agents > 1 {
        statuses
            .try_reserve_exact(config.agents)
            .map_err(too_many)?;
        statuses.resize(config.agents, AgentTick::default());
    }

    let baseline = alloc_count::bytes_in_use();
    dbs.extend((0..config.agents).map(agent_db));

    let calls_before = alloc_count::allocation_calls();
    let start = Instant::now();
    if let [only] = dbs.as_mut_slice() {
        let mut db = std::mem::take(only);
        for _ in 0..config.ticks {
            db = run_tick(db, tree).db;
        }
        *only = db;
    } else {
        for _ in 0..config.ticks {
            ticker.tick(tree, &mut dbs, &mut statuses);
        }
    }
    let elapsed = start.elapsed();
    let allocations = alloc_count::allocation_calls().saturating_sub(calls_before);
    let db_bytes = alloc_count::bytes_in_use().saturating_sub(baseline);

    Ok(Measured {
        elapsed,
        db_bytes,
        allocations,
        dbs,
    })
}

/// Refuses a number of agents whose dbs would not fit in the memory the
/// system has available, so that the bench fails cleanly instead of aborting
/// on an allocation failure halfway through making them. One agent's db,
/// ticked a few times, is measured; the estimate counts twice that (dbs
/// grow and shrink as they tick) plus its slot.
fn refuse_beyond_memory(tree: &Tree, template: &Value, config: &Config) -> Result<(), Failure> {
    let Some(available) = available_memory() else {
        return Ok(());
    };
    let before = alloc_count::bytes_in_use();
    let mut db = agent_db(template, config.seed, 0);
    for _ in 0..config.ticks.min(WARM_UP_TICKS) {
        db = run_tick(db, tree).db;
    }
    let per_agent = alloc_count::bytes_in_use().saturating_sub(before);
    drop(db);
    let slot = std::mem::size_of::<Value>() + std::mem::size_of::<AgentTick>();
    let needed = (per_agent as u64)
        .saturating_mul(2)
        .saturating_add(slot as u64)
        .saturating_mul(config.agents as u64);
    if needed > available {
        return Err(Failure::input(
            "--agents",
            format!(
                "{} agents need about {} MB, more than the {} MB of memory available",
                config.agents,
                needed >> 20,
                available >> 20
            ),
        ));
    }
    Ok(())
}

/// The memory the system can give without swapping, if known
/// (`MemAvailable` of `/proc/meminfo` on Linux).
fn available_memory() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb.saturating_mul(1024))
}

/// Ticks copies of the first agents' dbs, so that the code, the tree and
/// rayon's threads are ready, and drops them. The rayon pool is started here,
/// before the memory baseline, so its buffers are not counted.
fn warm_up(tree: &Tree, config: &Config, ticker: &Ticker, agent_db: impl Fn(usize) -> Value) {
    if config.agents == 1 {
        let mut db = agent_db(0);
        for _ in 0..config.ticks.min(WARM_UP_TICKS) {
            db = run_tick(db, tree).db;
        }
    } else {
        let n = config.agents.min(WARM_UP_AGENTS);
        let mut dbs: Vec<Value> = (0..n).map(agent_db).collect();
        let mut statuses = vec![AgentTick::default(); n];
        ticker.tick(tree, &mut dbs, &mut statuses);
    }
}

/// How many agents are ticked together.
enum Ticker {
    /// With `tick_all_into`, on the crate's pool of one thread per core.
    #[cfg(feature = "rayon")]
    Cores,
    /// One by one, in a plain loop on the calling thread (`--threads 1`, or
    /// a build without the `rayon` feature).
    OneThread,
    /// On a pool of `--threads` threads.
    #[cfg(feature = "rayon")]
    Pool(aido::batch::TickPool),
}

impl Ticker {
    fn new(threads: Option<NonZeroUsize>) -> Result<Ticker, Failure> {
        match threads {
            Some(t) if t.get() == 1 => Ok(Ticker::OneThread),
            #[cfg(feature = "rayon")]
            None => Ok(Ticker::Cores),
            #[cfg(not(feature = "rayon"))]
            None => Ok(Ticker::OneThread),
            #[cfg(feature = "rayon")]
            Some(t) => aido::batch::TickPool::new(t)
                .map(Ticker::Pool)
                .map_err(|e| Failure::input("--threads", format!("cannot start {t} threads: {e}"))),
            #[cfg(not(feature = "rayon"))]
            Some(t) => Err(Failure::input(
                "--threads",
                format!("this build ticks on one thread, not {t} (it lacks the `rayon` feature)"),
            )),
        }
    }

    /// Ticks every agent once.
    fn tick(&self, tree: &Tree, dbs: &mut [Value], ticks: &mut [AgentTick]) {
        match self {
            #[cfg(feature = "rayon")]
            Ticker::Cores => aido::batch::tick_all_into(tree, dbs, ticks),
            Ticker::OneThread => one_by_one(tree, dbs, ticks),
            #[cfg(feature = "rayon")]
            Ticker::Pool(pool) => pool.tick_all_into(tree, dbs, ticks),
        }
    }
}

/// Ticks every agent once, one after another on this thread.
fn one_by_one(tree: &Tree, dbs: &mut [Value], ticks: &mut [AgentTick]) {
    for (db, slot) in dbs.iter_mut().zip(ticks.iter_mut()) {
        *slot = tick_in_place(db, tree);
    }
}

/// Agent `i`'s starting db: the template, with the seed `S + i` if seeded.
/// A new seed starts a fresh stream, so a saved position is dropped.
fn agent_db(template: &Value, seed: Option<i64>, i: usize) -> Value {
    let mut db = template.clone();
    if let Some(seed) = seed {
        // The sum was checked with the arguments.
        let seed = i64::try_from(i)
            .ok()
            .and_then(|i| seed.checked_add(i))
            .unwrap_or(seed);
        aido::session::seed_db(&mut db, seed);
    }
    db
}

/// Prints the results as text lines or as one EDN map.
fn report(out: &mut dyn Write, config: &Config, measured: Measured) -> Result<(), Failure> {
    let Measured {
        elapsed,
        db_bytes,
        allocations,
        mut dbs,
    } = measured;
    let total = config.total_ticks as f64;
    // A clock too coarse to see the run still gives finite rates.
    let nanos = elapsed.as_nanos().max(1) as f64;
    let ns_per_tick = nanos / total;
    let ticks_per_second = total / (nanos / 1e9);
    let allocations_per_tick = allocations as f64 / total;
    let bytes_per_agent = db_bytes.div_ceil(config.agents) + size_of::<Value>();

    match config.format {
        Format::Text => {
            writeln!(
                out,
                "{}: {} x {} in {:.3} s",
                name(&config.tree),
                plural(config.agents as u64, "agent"),
                plural(config.ticks, "tick"),
                elapsed.as_secs_f64()
            )?;
            if alloc_count::counting() {
                writeln!(
                    out,
                    "  {ns_per_tick:.1} ns per tick, {} ticks per second, {bytes_per_agent} bytes per agent, {} allocations per tick",
                    scaled(ticks_per_second),
                    decimal(allocations_per_tick)
                )?;
            } else {
                writeln!(
                    out,
                    "  {ns_per_tick:.1} ns per tick, {} ticks per second (memory not measured: this program hands the CLI no allocation counter)",
                    scaled(ticks_per_second),
                )?;
            }
        }
        Format::Edn => {
            let int = |n: u64| Value::Int(i64::try_from(n).unwrap_or(i64::MAX));
            let mut line = Map::default();
            line.insert(Value::keyword("ticks"), int(config.ticks));
            line.insert(Value::keyword("agents"), int(config.agents as u64));
            line.insert(Value::keyword("ns-per-tick"), Value::Float(ns_per_tick));
            line.insert(
                Value::keyword("ticks-per-second"),
                Value::Float(ticks_per_second),
            );
            if alloc_count::counting() {
                line.insert(
                    Value::keyword("bytes-per-agent"),
                    int(bytes_per_agent as u64),
                );
                line.insert(
                    Value::keyword("allocations-per-tick"),
                    Value::Float(allocations_per_tick),
                );
            }
            let db = dbs.first_mut().map(std::mem::take).unwrap_or_default();
            line.insert(Value::keyword("db"), db);
            writeln!(out, "{}", Value::Map(Box::new(line)))?;
        }
    }
    Ok(())
}

/// `1 agent`, `4 agents`.
fn plural(n: u64, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// A rate with a unit prefix: `10.7 M`, `950.0 k`, `12.0`.
fn scaled(x: f64) -> String {
    for (scale, prefix) in [(1e9, " G"), (1e6, " M"), (1e3, " k")] {
        if x >= scale {
            return format!("{:.1}{prefix}", x / scale);
        }
    }
    format!("{x:.1}")
}

/// `0` exactly when nothing happened, else two decimals (or more for tiny rates).
fn decimal(x: f64) -> String {
    if x == 0.0 {
        "0".to_owned()
    } else if x >= 0.01 {
        format!("{x:.2}")
    } else {
        format!("{x:.2e}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_are_written_with_a_prefix() {
        assert_eq!(scaled(10_734_000.0), "10.7 M");
        assert_eq!(scaled(950_000.0), "950.0 k");
        assert_eq!(scaled(2.5e9), "2.5 G");
        assert_eq!(scaled(12.0), "12.0");
        assert_eq!(decimal(0.0), "0");
        assert_eq!(decimal(1.5), "1.50");
        assert_eq!(decimal(0.000_004), "4.00e-6");
        assert_eq!(plural(1, "agent"), "1 agent");
        assert_eq!(plural(3, "tick"), "3 ticks");
    }

    #[test]
    fn seeds_count_up_from_s_and_drop_the_position() {
        let template = Value::map_from([
            (Value::keyword("aido/rng-pos"), Value::Int(9)),
            (Value::keyword("a"), Value::Int(1)),
        ]);
        assert_eq!(
            agent_db(&template, Some(5), 2).to_string(),
            "{:a 1, :aido/seed 7}"
        );
        assert_eq!(agent_db(&template, None, 2), template);
    }
}
