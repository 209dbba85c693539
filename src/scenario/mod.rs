//! Scenarios: a tree, a starting db, inputs, stubs and expectations,
//! run tick by tick and recorded, for tests.
//!
//! A scenario file (`NAME.test.edn`) is an EDN map:
//!
//! ```clojure
//! {:tree "guard.edn"                 ; relative to the scenario file, or an inline tree
//!  :nodes "game-nodes.edn"           ; optional node model
//!  :db {:pos 0}                      ; or a file name (EDN, or JSON if it ends in .json)
//!  :seed 7
//!  :ticks 12                         ; default: the last tick :expect names, else 1
//!  :inputs [nil {:intruder 3}]       ; merged before each tick; or a file name
//!  :stubs {:guard/sees? [:failure :failure :success]  ; by node type or node id
//!          :patrol {:status :running}}
//!  :trims "guard.trims.edn"          ; trim tasks between ticks, or inline
//!  :expect [{:tick 3 :status :running :db {:action :chase}}  ; only the listed db keys
//!           {:tick 12 :status :success}]}
//! ```
//!
//! [`Scenario::run`] gives the [`RunRecord`] and its text timeline (trace
//! on, `:aido/*` keys left out), ready for a snapshot test;
//! [`ScenarioRun::check`] compares it with the expectations and
//! [`golden_diff`] with a golden timeline.
//!
//! ```
//! use aido::{Registry, Status, compile_str, scenario::Scenario};
//!
//! let tree = compile_str("t.edn", "[:sequence [:inc! {:key :n}] [:less-than? {:key :n :val 2}]]", &Registry::new()).unwrap();
//! let scenario = Scenario::new("count", tree).ticks(2);
//! let run = scenario.run();
//! assert_eq!(run.record.ticks[1].status, Status::Failure);
//! // The text timeline, one block a tick, with the nodes visited:
//! // tick 1: success
//! //   + :n 1
//! //   nodes:
//! //     :sequence "0" success
//! //       :inc! "0.0" success
//! //       :less-than? "0.1" success
//! assert!(run.timeline.starts_with("tick 1: success\n  + :n 1\n"));
//! ```

mod coverage;
mod golden;
mod parse;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use crate::diag::Diagnostics;
use crate::record::{Event, Recorder, RunRecord, TimelineOptions, timeline};
use crate::registry::Registry;
use crate::stub::Stubs;
use crate::tick::{Status, TickError};
use crate::tree::Tree;
use crate::trim::{DataTask, Trimmer};
use crate::value::{Map, Value};

pub use coverage::{Coverage, NodeCoverage, TreeCoverage};
pub use golden::{GoldenDiff, golden_diff};

/// What is wrong with a scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ScenarioErrorKind {
    /// A file cannot be read.
    Io,
    /// A file is not valid EDN (or JSON).
    Read,
    /// A key the scenario format does not know.
    UnknownKey,
    /// A value of the wrong kind (a `:ticks` that is not a positive integer, ...).
    BadValue,
    /// The node model is malformed.
    Model,
    /// A stub is malformed or names nothing in the tree.
    Stub,
    /// The tree does not compile (see [`ScenarioError::diagnostics`]).
    Compile,
}

/// Why a scenario cannot be run, with where.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ScenarioError {
    /// What kind of problem.
    pub kind: ScenarioErrorKind,
    /// Where: `file`, or `file:line:col`.
    pub place: String,
    /// What is wrong.
    pub message: String,
    /// The tree's diagnostics, for [`ScenarioErrorKind::Compile`].
    pub diagnostics: Option<Diagnostics>,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.place, self.message)
    }
}

impl std::error::Error for ScenarioError {}

/// What the db and the status must be after one tick.
#[derive(Debug, Clone, PartialEq)]
pub struct Expectation {
    /// The tick, from 1.
    pub tick: u64,
    /// The root's status, if checked.
    pub status: Option<Status>,
    /// Top-level db keys and their values; only these are compared (`nil`
    /// expects the key absent or nil).
    pub db: Map,
}

/// A run to make and check: see [the module](crate::scenario).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Scenario {
    /// The scenario's name (its file's path, for a file).
    pub name: String,
    /// The tree, with its stubs applied.
    pub tree: Tree,
    /// Where the tree came from: its file, or the scenario's for an inline tree.
    pub tree_name: String,
    /// The starting db.
    pub db: Value,
    /// Put under `:aido/seed` before the first tick.
    pub seed: Option<i64>,
    /// How many ticks to run.
    pub ticks: u64,
    /// Inputs by tick (from 1): merged into the db before that tick.
    pub inputs: BTreeMap<u64, Map>,
    /// The stubs the tree was compiled with (told the tick before each,
    /// and put back in place after a trim).
    pub stubs: Stubs,
    /// Trim tasks, queued before tick 1 and worked through between ticks.
    pub trims: Vec<DataTask>,
    /// The registry the tree was compiled against, for the trims.
    pub registry: Registry,
    /// What must hold after given ticks.
    pub expect: Vec<Expectation>,
    /// The golden timeline's path: `NAME.timeline` beside `NAME.test.edn`.
    pub golden: Option<PathBuf>,
}

/// A scenario's recorded run.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ScenarioRun {
    /// Every tick, recorded.
    pub record: RunRecord,
    /// The text timeline: trace on, `:aido/*` keys left out.
    pub timeline: String,
    /// The db the last tick left.
    pub db: Value,
}

/// One expectation that did not hold.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Mismatch {
    /// The root's status differs.
    Status {
        /// The tick.
        tick: u64,
        /// What was expected.
        expected: Status,
        /// What the tick returned.
        actual: Status,
        /// The tick's error, if it ended in Error: what went wrong, with
        /// its code, node and place.
        error: Option<Box<TickError>>,
    },
    /// A db key's value differs (`actual: None`: the key is absent).
    Db {
        /// The tick.
        tick: u64,
        /// The key.
        key: Value,
        /// What was expected.
        expected: Value,
        /// What the db holds.
        actual: Option<Value>,
    },
    /// The run has no such tick.
    NoTick {
        /// The tick named.
        tick: u64,
    },
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Mismatch::Status {
                tick,
                expected,
                actual,
                error,
            } => {
                write!(f, "tick {tick}: expected status {expected}, got {actual}")?;
                match error {
                    Some(error) => write!(f, ": error[{}]: {error}", error.kind.code()),
                    None => Ok(()),
                }
            }
            Mismatch::Db {
                tick,
                key,
                expected,
                actual: Some(actual),
            } => write!(
                f,
                "tick {tick}: db key {key}: expected {expected}, got {actual}"
            ),
            Mismatch::Db {
                tick,
                key,
                expected,
                actual: None,
            } => write!(
                f,
                "tick {tick}: db key {key}: expected {expected}, but the key is absent"
            ),
            Mismatch::NoTick { tick } => write!(f, "tick {tick}: the run has no such tick"),
        }
    }
}

impl Scenario {
    /// A scenario of one tick of `tree` from an empty db, with nothing expected.
    pub fn new(name: impl Into<String>, tree: Tree) -> Scenario {
        let name = name.into();
        let tree_name = tree
            .source()
            .map_or_else(|| name.clone(), |s| s.name().to_owned());
        Scenario {
            name,
            tree,
            tree_name,
            db: Value::map(),
            seed: None,
            ticks: 1,
            inputs: BTreeMap::new(),
            stubs: Stubs::new(),
            trims: Vec::new(),
            registry: Registry::new(),
            expect: Vec::new(),
            golden: None,
        }
    }

    /// Reads the scenario file at `path`; its tree is compiled against
    /// `registry` (plus its node model and stubs).
    pub fn load(path: &Path, registry: &crate::Registry) -> Result<Scenario, ScenarioError> {
        parse::load(path, registry)
    }

    /// Reads a scenario from `text`; `name` is used in messages and
    /// relative file names are looked up in `dir`.
    pub fn parse(
        name: &str,
        text: &str,
        dir: &Path,
        registry: &crate::Registry,
    ) -> Result<Scenario, ScenarioError> {
        parse::parse(name, text, dir, registry)
    }

    /// Sets the starting db.
    pub fn db(mut self, db: Value) -> Scenario {
        self.db = db;
        self
    }

    /// Sets the seed.
    pub fn seed(mut self, seed: i64) -> Scenario {
        self.seed = Some(seed);
        self
    }

    /// Sets how many ticks to run.
    pub fn ticks(mut self, ticks: u64) -> Scenario {
        self.ticks = ticks;
        self
    }

    /// Merges `input` into the db before tick `tick` (from 1).
    pub fn input(mut self, tick: u64, input: Map) -> Scenario {
        self.inputs.entry(tick).or_default().extend(input);
        self
    }

    /// Queues a trim task (see [`DataTask`]); the tree is recompiled
    /// against the scenario's registry ([`Scenario::registry`]).
    pub fn trim(mut self, task: DataTask) -> Scenario {
        self.trims.push(task);
        self
    }

    /// Sets the registry the tree was compiled against (default: the built-ins).
    pub fn registry(mut self, registry: Registry) -> Scenario {
        self.registry = registry;
        self
    }

    /// Sets the stubs the tree was compiled with ([`Stubs::compile`]), so
    /// that the run tells them each tick.
    pub fn stubs(mut self, stubs: Stubs) -> Scenario {
        self.stubs = stubs;
        self
    }

    /// Adds an expectation.
    pub fn expect(mut self, expectation: Expectation) -> Scenario {
        self.expect.push(expectation);
        self
    }

    /// Runs the scenario and records it.
    pub fn run(&self) -> ScenarioRun {
        let mut db = self.db.clone();
        if let (Some(seed), Some(map)) = (self.seed, db.as_map_mut()) {
            map.insert(Value::keyword("aido/seed"), Value::Int(seed));
            map.shift_remove(&Value::keyword("aido/rng-pos"));
        }
        let mut recorder = Recorder::new(&self.tree, &db);
        let mut trimmer = Trimmer::new();
        for task in &self.trims {
            trimmer.push(Box::new(task.clone()));
        }
        // The tree after a trim, if one was applied.
        let mut trimmed: Option<Tree> = None;
        for n in 1..=self.ticks {
            if let Some(input) = self.inputs.get(&n) {
                if let Some(map) = db.as_map_mut() {
                    for (key, value) in input {
                        map.insert(key.clone(), value.clone());
                    }
                }
                recorder.input(input);
            }
            if !trimmer.is_empty() {
                let tree = trimmed.as_ref().unwrap_or(&self.tree);
                let gap = trimmer.between_ticks(n - 1, db, tree, &self.registry);
                db = gap.db;
                if let Some(new_tree) = gap.tree {
                    trimmed = Some(self.stubs.apply_matching(new_tree));
                }
                for report in &gap.reports {
                    recorder.event(Event::Trim(report.to_value(true)));
                }
            }
            self.stubs.set_tick(n);
            let tree = trimmed.as_ref().unwrap_or(&self.tree);
            db = recorder.tick(db, tree).db;
        }
        let record = recorder.finish();
        let timeline = timeline(
            &record,
            &TimelineOptions {
                trace: true,
                ..TimelineOptions::default()
            },
        );
        ScenarioRun {
            record,
            timeline,
            db,
        }
    }
}

impl ScenarioRun {
    /// The expectations that do not hold, in order.
    pub fn check(&self, expect: &[Expectation]) -> Vec<Mismatch> {
        let mut mismatches = Vec::new();
        for e in expect {
            let Some(tick) = usize::try_from(e.tick)
                .ok()
                .filter(|&t| t >= 1)
                .and_then(|t| self.record.ticks.get(t - 1))
            else {
                mismatches.push(Mismatch::NoTick { tick: e.tick });
                continue;
            };
            if let Some(expected) = e.status
                && expected != tick.status
            {
                let error = tick.events.iter().find_map(|event| match event {
                    Event::Error(error) => Some(error.clone()),
                    _ => None,
                });
                mismatches.push(Mismatch::Status {
                    tick: e.tick,
                    expected,
                    actual: tick.status,
                    error,
                });
            }
            if e.db.is_empty() {
                continue;
            }
            let db = self.record.db_after(tick.tick as usize);
            for (key, expected) in &e.db {
                let actual = db.get(key);
                let holds = match actual {
                    Some(actual) => actual == expected,
                    None => *expected == Value::Nil,
                };
                if !holds {
                    mismatches.push(Mismatch::Db {
                        tick: e.tick,
                        key: key.clone(),
                        expected: expected.clone(),
                        actual: actual.cloned(),
                    });
                }
            }
        }
        mismatches
    }
}
