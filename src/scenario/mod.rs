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
use crate::tick::Status;
use crate::tree::Tree;
use crate::trim::{DataTask, Trimmer};
use crate::value::{Map, Value};

pub use coverage::{Coverage, NodeCoverage, TreeCoverage};

/// Merges one tick's input into the db, key by key, as scenarios and `aido
/// run --inputs` do before the tick: a key given `nil` is removed (a host
/// says "no longer there"), any other value is set.
///
/// ```
/// let mut db = aido::read_value("{:input \"hi\" :n 1}").unwrap();
/// let input = aido::read_value("{:input nil :n 2}").unwrap().into_map().unwrap();
/// aido::scenario::merge_input(&mut db, &input);
/// assert_eq!(db.to_string(), "{:n 2}");
/// ```
pub fn merge_input(db: &mut Value, input: &Map) {
    if let Some(map) = db.as_map_mut() {
        for (key, value) in input {
            if value.is_nil() {
                map.shift_remove(key);
            } else {
                map.insert(key.clone(), value.clone());
            }
        }
    }
}
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
    /// A file the scenario names lies outside its folder (see
    /// [`ScenarioOptions::allow_outside`]).
    Outside,
}

/// The most ticks a scenario file may ask for (`:ticks`, or a `:tick` in
/// `:expect`): every tick is recorded, so a run's memory grows with them.
pub const MAX_TICKS: u64 = 100_000;

/// The most values a scenario's run may record (the db changes of every
/// tick, each value counted by its elements, a string one element per 64
/// bytes, and the nodes each tick visits): about 16 million, a little under
/// a gigabyte. A run that records more stops there (see
/// [`ScenarioRun::stopped`]).
pub const MAX_RECORDED: u64 = 1 << 24;

/// How a scenario file and the files it names are read.
///
/// ```
/// use aido::scenario::ScenarioOptions;
/// let options = ScenarioOptions::default().allow_outside(true).max_file_bytes(1 << 20);
/// assert!(options.allow_outside && options.max_file_bytes == 1 << 20);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ScenarioOptions {
    /// The largest file read, in bytes (default
    /// [`crate::source::DEFAULT_MAX_FILE_BYTES`], 64 MiB).
    pub max_file_bytes: u64,
    /// Whether the files a scenario names (tree, db, inputs, trims, stubs,
    /// node model) may lie outside the scenario's folder: an absolute
    /// path, a `..`, or a link that leads out. Default `false`: a scenario
    /// from an untrusted folder reads nothing else.
    pub allow_outside: bool,
}

impl Default for ScenarioOptions {
    fn default() -> ScenarioOptions {
        ScenarioOptions {
            max_file_bytes: crate::source::DEFAULT_MAX_FILE_BYTES,
            allow_outside: false,
        }
    }
}

impl ScenarioOptions {
    /// Sets [`ScenarioOptions::max_file_bytes`].
    pub fn max_file_bytes(mut self, bytes: u64) -> ScenarioOptions {
        self.max_file_bytes = bytes;
        self
    }

    /// Sets [`ScenarioOptions::allow_outside`].
    pub fn allow_outside(mut self, allow: bool) -> ScenarioOptions {
        self.allow_outside = allow;
        self
    }
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
    /// Seconds the db's clock `:aido/now` moves on before each tick (from
    /// 0 at the first tick of a db without one; see
    /// [`crate::tick::advance_time`]).
    pub dt: Option<f64>,
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
    /// The most values the run may record (default [`MAX_RECORDED`]).
    pub max_recorded: u64,
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
    /// Why the run stopped before its last tick, if it did: it recorded
    /// more than [`MAX_RECORDED`] values.
    pub stopped: Option<String>,
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
            } => write!(f, "tick {tick}: expected status {expected}, got {actual}"),
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
            dt: None,
            ticks: 1,
            inputs: BTreeMap::new(),
            stubs: Stubs::new(),
            trims: Vec::new(),
            registry: Registry::new(),
            expect: Vec::new(),
            golden: None,
            max_recorded: MAX_RECORDED,
        }
    }

    /// Reads the scenario file at `path`; its tree is compiled against
    /// `registry` (plus its node model and stubs).
    pub fn load(path: &Path, registry: &crate::Registry) -> Result<Scenario, ScenarioError> {
        parse::load(path, registry, &ScenarioOptions::default())
    }

    /// Like [`Scenario::load`], with the file size limit and the folder
    /// rule of `options`.
    pub fn load_with(
        path: &Path,
        registry: &crate::Registry,
        options: &ScenarioOptions,
    ) -> Result<Scenario, ScenarioError> {
        parse::load(path, registry, options)
    }

    /// Reads a scenario from `text`; `name` is used in messages and
    /// relative file names are looked up in `dir`.
    pub fn parse(
        name: &str,
        text: &str,
        dir: &Path,
        registry: &crate::Registry,
    ) -> Result<Scenario, ScenarioError> {
        parse::parse(name, text, dir, registry, &ScenarioOptions::default())
    }

    /// Like [`Scenario::parse`], with the file size limit and the folder
    /// rule of `options` (the folder is `dir`).
    pub fn parse_with(
        name: &str,
        text: &str,
        dir: &Path,
        registry: &crate::Registry,
        options: &ScenarioOptions,
    ) -> Result<Scenario, ScenarioError> {
        parse::parse(name, text, dir, registry, options)
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

    /// Moves the clock `:aido/now` on by `dt` seconds before each tick.
    pub fn dt(mut self, dt: f64) -> Scenario {
        self.dt = Some(dt);
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
        let mut recorded = 0u64;
        let mut stopped = None;
        for n in 1..=self.ticks {
            // The time, then the input, are merged before the tick, and
            // recorded as its input. (A db whose `:aido/now` is not a
            // number keeps it: the first node that reads the time fails.)
            let mut merged = Map::default();
            if let Some(dt) = self.dt
                && let Ok(now) = crate::tick::advance_time(&mut db, dt)
            {
                merged.insert(Value::Keyword(crate::value::kw::NOW), Value::Float(now));
            }
            if let Some(input) = self.inputs.get(&n) {
                merge_input(&mut db, input);
                merged.extend(input.iter().map(|(k, v)| (k.clone(), v.clone())));
            }
            if !merged.is_empty() {
                recorder.input(&merged);
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
            recorded = recorded.saturating_add(recorder.ticks().last().map_or(0, recorded_weight));
            if recorded > self.max_recorded {
                stopped = Some(format!(
                    "the run stopped after tick {n} of {}: it recorded more than {} values \
                     (db changes and visits)",
                    self.ticks, self.max_recorded
                ));
                break;
            }
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
            stopped,
        }
    }
}

/// What one recorded tick holds, counted as [`MAX_RECORDED`] counts it
/// (each value measured up to the bound: a bigger one counts as past it).
fn recorded_weight(tick: &crate::record::TickRecord) -> u64 {
    use crate::record::DbChange;
    let weight = |v: &Value| v.measure(MAX_RECORDED).0;
    let changes = tick.changes.iter().map(|change| match change {
        DbChange::Added { key, value } => weight(key) + weight(value),
        DbChange::Changed { key, old, new } => weight(key) + weight(old) + weight(new),
        DbChange::Removed { key, old } => weight(key) + weight(old),
    });
    changes.fold(tick.visits.len() as u64, u64::saturating_add)
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
                mismatches.push(Mismatch::Status {
                    tick: e.tick,
                    expected,
                    actual: tick.status,
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
