//! Group operations: a [`Forest`] of runners (the tree instances of one
//! level, or every agent that shares a tree) played, paused, resumed,
//! stopped, reset, loaded and destroyed together, as the Unity
//! behaviour-tree engine's group operations at engine and forest level do.
//!
//! A group operation is the single operation applied to each tree instance
//! in the forest, in order, with the same statuses, hooks and loop counting
//! as on one [`Runner`]: a destroyed instance is left out of play, pause,
//! resume, stop, reset, destroy and update (it refuses them), and
//! [`Forest::load`] loads exactly the destroyed instances again, since
//! loading instantiates only the trees whose instances don't exist.
//!
//! ```
//! use std::sync::Arc;
//! use aido::forest::Forest;
//! use aido::runner::{PlayMode, TreeStatus};
//! use aido::{Registry, Value, compile_str};
//!
//! let tree = Arc::new(compile_str("t.edn", "[:inc! {:key :n}]", &Registry::new()).unwrap());
//! // One runner per agent, all sharing the tree.
//! let mut forest = Forest::of_agents(&tree, vec![Value::map(); 100]);
//! forest.play(PlayMode::StopByExecuteLoopCount, 2);
//! while !forest.update().is_empty() {}
//! assert!(forest.runners().iter().all(|r| r.status() == TreeStatus::Stopped));
//! assert_eq!(forest.runners()[99].db().to_string(), "{:n 2}");
//! ```

use std::sync::Arc;

use crate::runner::{PlayMode, Runner};
use crate::tick::{AgentTick, Tick};
use crate::tree::Tree;
use crate::value::Value;

/// A group of runners operated on together.
#[derive(Debug, Default)]
pub struct Forest {
    runners: Vec<Runner>,
}

impl Forest {
    /// An empty forest.
    pub fn new() -> Forest {
        Forest::default()
    }

    /// A forest of one runner per agent db, all sharing `tree` (as
    /// [`crate::batch::tick_all`]'s agents do), each loaded as
    /// [`Runner::load`] loads one.
    pub fn of_agents(tree: &Arc<Tree>, dbs: impl IntoIterator<Item = Value>) -> Forest {
        Forest {
            runners: dbs
                .into_iter()
                .map(|db| Runner::load(Arc::clone(tree), db))
                .collect(),
        }
    }

    /// Adds a runner (already loaded); returns its position in the forest.
    pub fn push(&mut self, runner: Runner) -> usize {
        self.runners.push(runner);
        self.runners.len() - 1
    }

    /// The runners, in the order they were added.
    pub fn runners(&self) -> &[Runner] {
        &self.runners
    }

    /// The runners, to operate on one of them alone.
    pub fn runners_mut(&mut self) -> &mut [Runner] {
        &mut self.runners
    }

    /// How many runners the forest has.
    pub fn len(&self) -> usize {
        self.runners.len()
    }

    /// Whether the forest has no runner.
    pub fn is_empty(&self) -> bool {
        self.runners.is_empty()
    }

    /// Plays every live runner ([`Runner::play`]); returns how many played.
    pub fn play(&mut self, mode: PlayMode, target: u64) -> usize {
        self.each(|r| r.play(mode, target).is_ok())
    }

    /// Pauses every live runner ([`Runner::pause`]); returns how many.
    pub fn pause(&mut self) -> usize {
        self.each(|r| r.pause().is_ok())
    }

    /// Resumes every live runner ([`Runner::resume`]; only a paused one
    /// changes); returns how many were live.
    pub fn resume(&mut self) -> usize {
        self.each(|r| r.resume().is_ok())
    }

    /// Stops every live runner ([`Runner::stop`]); returns how many.
    pub fn stop(&mut self) -> usize {
        self.each(|r| r.stop().is_ok())
    }

    /// Resets every live runner ([`Runner::reset`]): each one's tick, with
    /// its halts and cancel requests, by the runner's position.
    pub fn reset(&mut self) -> Vec<(usize, Tick)> {
        self.ticks(Runner::reset)
    }

    /// Destroys every live runner ([`Runner::destroy`]): each one's tick,
    /// with its halts and cancel requests, by the runner's position.
    pub fn destroy(&mut self) -> Vec<(usize, Tick)> {
        self.ticks(Runner::destroy)
    }

    /// Loads every destroyed runner again ([`Runner::load_again`]); live
    /// ones are left as they are. Returns how many were loaded.
    pub fn load(&mut self) -> usize {
        self.each(|r| r.load_again().is_ok())
    }

    /// Runs one loop of every playing runner ([`Runner::update`]), across
    /// the cores with the `rayon` feature (each runner reads and writes only
    /// its own tree and db, so the result is the same as one by one): what
    /// each tick produced, by the runner's position. Empty when no runner is
    /// playing.
    pub fn update(&mut self) -> Vec<(usize, AgentTick)> {
        let ticks: Vec<Option<AgentTick>> = update_all(&mut self.runners);
        ticks
            .into_iter()
            .enumerate()
            .filter_map(|(i, t)| Some((i, t?)))
            .collect()
    }

    fn each(&mut self, op: impl Fn(&mut Runner) -> bool) -> usize {
        self.runners.iter_mut().map(op).filter(|&done| done).count()
    }

    fn ticks(
        &mut self,
        op: impl Fn(&mut Runner) -> Result<Tick, crate::runner::RunnerError>,
    ) -> Vec<(usize, Tick)> {
        self.runners
            .iter_mut()
            .enumerate()
            .filter_map(|(i, r)| Some((i, op(r).ok()?)))
            .collect()
    }
}

#[cfg(feature = "rayon")]
fn update_all(runners: &mut [Runner]) -> Vec<Option<AgentTick>> {
    use rayon::prelude::*;
    crate::batch::install(|| {
        runners
            .par_iter_mut()
            .map(|r| r.update().ok().flatten())
            .collect()
    })
}

#[cfg(not(feature = "rayon"))]
fn update_all(runners: &mut [Runner]) -> Vec<Option<AgentTick>> {
    runners
        .iter_mut()
        .map(|r| r.update().ok().flatten())
        .collect()
}
