//! Ticking many agents that share one tree.

use rayon::prelude::*;

use crate::tick::{AgentTick, run_tick};
use crate::tree::Tree;
use crate::value::Value;

/// Agents handed to one rayon task at a time: large enough that scheduling
/// costs little next to ticking (64 npc ticks take about 5 µs), small enough
/// that the cores finish a round close together.
const CHUNK: usize = 64;

/// Ticks every agent's db once against the shared `tree`, in parallel across
/// the cores (on a rayon pool of this crate's, whose threads have stacks for
/// the deepest tree the reader reads), and returns what each agent's tick
/// produced besides its db: its status and error, and the launch and cancel
/// requests of its deferred actions (and any completions it dropped), so
/// that a host can hand every agent's requests to the systems that do the work.
///
/// Each agent's tick reads and writes only its own db, so the results are the
/// same whatever the number of threads, and the same as ticking the agents one
/// by one with [`run_tick`].
///
/// ```
/// let tree = aido::compile_str("t.edn", "[:inc! {:key :n}]", &aido::Registry::new()).unwrap();
/// let mut agents = vec![aido::Value::map(); 1000];
/// let ticks = aido::batch::tick_all(&tree, &mut agents);
/// assert!(ticks.iter().all(|t| t.status == aido::Status::Success && t.launches().is_empty()));
/// assert_eq!(agents[999].to_string(), "{:n 1}");
/// ```
pub fn tick_all(tree: &Tree, dbs: &mut [Value]) -> Vec<AgentTick> {
    let mut ticks = vec![AgentTick::default(); dbs.len()];
    tick_all_into(tree, dbs, &mut ticks);
    ticks
}

/// Like [`tick_all`], writing each agent's [`AgentTick`] into `ticks` (which
/// must be as long as `dbs`; extra entries on either side are left alone).
/// Allocates nothing for agents whose ticks make no requests.
pub fn tick_all_into(tree: &Tree, dbs: &mut [Value], ticks: &mut [AgentTick]) {
    match pool() {
        Some(pool) => pool.install(|| tick_chunks(tree, dbs, ticks)),
        None => tick_chunks(tree, dbs, ticks),
    }
}

/// The stack of each worker thread: room for a tree as deep as the reader
/// allows (`MAX_DEPTH` levels, each a few frames of the interpreter; a debug
/// build needs about 20 KiB a level), where rayon's default 2 MiB is not. It
/// is address space: only the pages a tick touches are used.
const WORKER_STACK: usize = 64 << 20;

/// The pool that ticks batches, made on first use; `None` if the system
/// refused its threads (the global pool is used then).
fn pool() -> Option<&'static rayon::ThreadPool> {
    static POOL: std::sync::OnceLock<Option<rayon::ThreadPool>> = std::sync::OnceLock::new();
    POOL.get_or_init(|| {
        rayon::ThreadPoolBuilder::new()
            .stack_size(WORKER_STACK)
            .thread_name(|i| format!("aido-tick-{i}"))
            .build()
            .ok()
    })
    .as_ref()
}

/// Runs `f` on the pool that ticks batches (the global pool if it could
/// not be made), so that parallel work over trees has the stacks it needs.
pub(crate) fn install<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    match pool() {
        Some(pool) => pool.install(f),
        None => f(),
    }
}

fn tick_chunks(tree: &Tree, dbs: &mut [Value], ticks: &mut [AgentTick]) {
    dbs.par_chunks_mut(CHUNK)
        .zip(ticks.par_chunks_mut(CHUNK))
        .for_each(|(dbs, ticks)| {
            for (db, slot) in dbs.iter_mut().zip(ticks.iter_mut()) {
                let (new_db, tick) = run_tick(std::mem::take(db), tree).split();
                *db = new_db;
                *slot = tick;
            }
        });
}
