//! Ticking many agents that share one tree.

use rayon::prelude::*;

use crate::tick::{AgentTick, tick_in_place};
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
/// by one with [`crate::run_tick`].
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

/// A builder of a pool that ticks batches: worker threads with the stacks
/// deep trees need. `threads` 0 is one thread per core (rayon's default).
fn pool_builder(threads: usize) -> rayon::ThreadPoolBuilder {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .stack_size(WORKER_STACK)
        .thread_name(|i| format!("aido-tick-{i}"))
}

/// The pool that ticks batches, made on first use; `None` if the system
/// refused its threads (the global pool is used then).
fn pool() -> Option<&'static rayon::ThreadPool> {
    static POOL: std::sync::OnceLock<Option<rayon::ThreadPool>> = std::sync::OnceLock::new();
    POOL.get_or_init(|| pool_builder(0).build().ok()).as_ref()
}

/// A pool of a chosen number of threads that ticks batches, for a host
/// that wants to leave cores to other work, or to measure how ticking
/// scales ([`tick_all_into`] uses one thread per core). The results are
/// the same as with [`tick_all_into`], whatever the number of threads.
///
/// ```
/// use std::num::NonZeroUsize;
/// let tree = aido::compile_str("t.edn", "[:inc! {:key :n}]", &aido::Registry::new()).unwrap();
/// let pool = aido::batch::TickPool::new(NonZeroUsize::MIN).unwrap();
/// let mut agents = vec![aido::Value::map(); 100];
/// let mut ticks = vec![aido::tick::AgentTick::default(); 100];
/// pool.tick_all_into(&tree, &mut agents, &mut ticks);
/// assert_eq!(agents[99].to_string(), "{:n 1}");
/// ```
pub struct TickPool {
    pool: rayon::ThreadPool,
}

impl TickPool {
    /// A pool of `threads` worker threads; an error if the system refuses them.
    pub fn new(threads: std::num::NonZeroUsize) -> std::io::Result<TickPool> {
        pool_builder(threads.get())
            .build()
            .map(|pool| TickPool { pool })
            .map_err(std::io::Error::other)
    }

    /// How many worker threads the pool has.
    pub fn threads(&self) -> usize {
        self.pool.current_num_threads()
    }

    /// [`tick_all_into`] on this pool's threads.
    pub fn tick_all_into(&self, tree: &Tree, dbs: &mut [Value], ticks: &mut [AgentTick]) {
        self.pool.install(|| tick_chunks(tree, dbs, ticks));
    }
}

impl std::fmt::Debug for TickPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TickPool")
            .field("threads", &self.threads())
            .finish()
    }
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
                *slot = tick_in_place(db, tree);
            }
        });
}
