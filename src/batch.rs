//! Ticking many agents that share one tree.

use rayon::prelude::*;

use crate::tick::{Status, run_tick};
use crate::tree::Tree;
use crate::value::Value;

/// Agents handed to one rayon task at a time: large enough that scheduling
/// costs little next to ticking (64 npc ticks take about 5 µs), small enough
/// that the cores finish a round close together.
const CHUNK: usize = 64;

/// Ticks every agent's db once against the shared `tree`, in parallel across
/// the cores (on a rayon pool of this crate's, whose threads have stacks for
/// the deepest tree the reader reads), and returns each agent's status.
///
/// Each agent's tick reads and writes only its own db, so the results are the
/// same whatever the number of threads, and the same as ticking the agents one
/// by one with [`run_tick`].
///
/// ```
/// let tree = aido::compile_str("t.edn", "[:inc! {:key :n}]", &aido::Registry::new()).unwrap();
/// let mut agents = vec![aido::Value::map(); 1000];
/// let statuses = aido::tick_all(&tree, &mut agents);
/// assert!(statuses.iter().all(|s| *s == aido::Status::Success));
/// assert_eq!(agents[999].to_string(), "{:n 1}");
/// ```
pub fn tick_all(tree: &Tree, dbs: &mut [Value]) -> Vec<Status> {
    let mut statuses = vec![Status::Success; dbs.len()];
    tick_all_into(tree, dbs, &mut statuses);
    statuses
}

/// Like [`tick_all`], writing the statuses into `statuses` (which must be as
/// long as `dbs`; extra entries on either side are left alone). Allocates nothing.
pub fn tick_all_into(tree: &Tree, dbs: &mut [Value], statuses: &mut [Status]) {
    match pool() {
        Some(pool) => pool.install(|| tick_chunks(tree, dbs, statuses)),
        None => tick_chunks(tree, dbs, statuses),
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

fn tick_chunks(tree: &Tree, dbs: &mut [Value], statuses: &mut [Status]) {
    dbs.par_chunks_mut(CHUNK)
        .zip(statuses.par_chunks_mut(CHUNK))
        .for_each(|(dbs, statuses)| {
            for (db, status) in dbs.iter_mut().zip(statuses.iter_mut()) {
                let tick = run_tick(std::mem::take(db), tree);
                *db = tick.db;
                *status = tick.status;
            }
        });
}
