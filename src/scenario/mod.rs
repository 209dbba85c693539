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
//! assert_eq!(run.record.tick(1).map(|t| t.status), Some(Status::Failure));
//! // The text timeline, one block a tick, with the nodes visited:
//! // tick 1: success
//! //   + :n 1
//! //   nodes:
//! //     :sequence "0" success
//! //       :inc! "0.0" success
//! //       :less-than? "0.1" success
//! assert!(run.timeline.starts_with("tick 1: success\n  + :n 1\n"));
//! ```

mod conversation;
mod coverage;
mod golden;
mod parse;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::diag::Diagnostics;
use crate::record::{Event, Recorder, RunRecord, TimelineOptions, timeline};
use crate::registry::Registry;
use crate::session::Session;
use crate::stub::Stubs;
use crate::tick::{Status, TickError};
use crate::tree::Tree;
use crate::trim::DataTask;
use crate::value::{Map, Value};

pub use conversation::{
    Conversation, ConversationStep, ExpectedReply, HandlerAnswer, TurnMismatch, accept_replies,
    replies_match,
};
pub use coverage::{ChatCoverage, ChatGap, ChatGapKind, Coverage, NodeCoverage, TreeCoverage};

pub use crate::session::merge_input;
pub use golden::{GoldenDiff, golden_diff};
pub use parse::golden_path;

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
///
/// ```
/// use aido::scenario::{Expectation, Scenario};
/// use aido::{Registry, Status, Value, compile_str, read_value};
///
/// let tree = compile_str(
///     "guard.edn",
///     "[:selector [:sequence [:present? {:key :alarm}] [:define! {:key :action :val :raise}]]
///                 [:define! {:key :action :val :patrol}]]",
///     &Registry::new(),
/// )
/// .unwrap();
/// let alarm = read_value("{:alarm true}").unwrap().into_map().unwrap();
/// let mut raised = aido::value::Map::default();
/// raised.insert(Value::keyword("action"), Value::keyword("raise"));
/// let scenario = Scenario::new("guard", tree)
///     .ticks(2)
///     .input(2, alarm)
///     .expect(Expectation { tick: 2, status: Some(Status::Success), db: raised });
/// let run = scenario.run();
/// assert!(run.check(&scenario.expect).is_empty());
/// assert!(run.timeline.contains("tick 2: success\n  input {:alarm true}\n"));
/// ```
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
    /// A chat-shaped scenario's turns (`:conversation`), run in place of
    /// `:ticks` and `:inputs`.
    pub conversation: Option<Conversation>,
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
    /// A conversation's first turn whose replies differ from the ones expected.
    pub turn_mismatch: Option<TurnMismatch>,
    /// A conversation's replies, turn by turn.
    pub replies: Vec<Vec<Value>>,
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
    /// A conversation's turn made other replies than expected.
    Turn(TurnMismatch),
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
            Mismatch::Turn(turn) => turn.fmt(f),
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
            conversation: None,
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

    /// Whether the scenario checks something: an expectation, or a
    /// conversation turn with its replies written.
    pub fn checks_something(&self) -> bool {
        !self.expect.is_empty()
            || self.conversation.as_ref().is_some_and(|c| {
                c.steps.iter().any(|step| {
                    matches!(
                        step,
                        ConversationStep::Turn {
                            replies: Some(_),
                            ..
                        }
                    )
                })
            })
    }

    /// Runs the scenario and records it.
    pub fn run(&self) -> ScenarioRun {
        if let Some(conversation) = &self.conversation {
            return self.run_conversation(conversation);
        }
        let mut session = self.session();
        let mut recorded = 0u64;
        let mut stopped = None;
        for n in 1..=self.ticks {
            // The time, then the input, are merged before the tick, and
            // recorded as its input. (A db whose `:aido/now` is not a
            // number keeps it: the first node that reads the time fails.)
            if let Some(dt) = self.dt {
                let _ = session.advance_time(dt);
            }
            session.step(self.inputs.get(&n));
            let last = session.run_record().map_or(0, |r| {
                r.ticks().last().map_or(0, |tick| recorded_weight(r, &tick))
            });
            recorded = recorded.saturating_add(last);
            if recorded > self.max_recorded {
                stopped = Some(format!(
                    "the run stopped after tick {n} of {}: it recorded more than {} values \
                     (db changes and visits)",
                    self.ticks, self.max_recorded
                ));
                break;
            }
        }
        let (record, db) = session.finish();
        let record = record.unwrap_or_else(|| Recorder::new(&self.tree, &self.db).finish());
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
            turn_mismatch: None,
            replies: Vec::new(),
        }
    }

    /// Runs a conversation, turn by turn: the first turn whose replies
    /// differ is noted, and the run goes on to the end.
    fn run_conversation(&self, conversation: &Conversation) -> ScenarioRun {
        let mut session = self.session();
        let answers = conversation::ScriptedAnswers::default();
        session.set_handlers(Box::new(answers.clone()));
        let mut recorded = 0u64;
        let mut stopped = None;
        let mut turn_mismatch = None;
        let mut replies = Vec::new();
        for step in &conversation.steps {
            let (line, wake, given, expected) = match step {
                ConversationStep::Db(db) => {
                    *session.db_mut() = db.clone();
                    continue;
                }
                ConversationStep::Turn {
                    line,
                    wake,
                    answers,
                    replies,
                } => (line, wake, answers, replies),
            };
            answers.give(given);
            let first_tick = session.ticks();
            let turn = match wake {
                Some(why) => session.wake(*why, &conversation.options),
                None => session.turn(line, &conversation.options),
            };
            let n = replies.len() + 1;
            if turn_mismatch.is_none()
                && let Some(expected) = expected
                && !replies_match(expected, &turn.replies)
            {
                turn_mismatch = Some(TurnMismatch {
                    turn: n,
                    line: line.clone(),
                    expected: expected.iter().map(ExpectedReply::to_value).collect(),
                    actual: turn.replies.clone(),
                    changes: session.run_record().map_or_else(String::new, |run| {
                        turn_changes(run, first_tick, session.ticks())
                    }),
                });
            }
            replies.push(turn.replies);
            let run = session.run_record();
            let weight: u64 = run.map_or(0, |run| {
                let from = usize::try_from(first_tick).unwrap_or(usize::MAX);
                run.ticks()
                    .skip(from)
                    .map(|tick| recorded_weight(run, &tick))
                    .sum()
            });
            recorded = recorded.saturating_add(weight);
            if recorded > self.max_recorded {
                stopped = Some(format!(
                    "the conversation stopped after turn {n}: it recorded more than {} values \
                     (db changes and visits)",
                    self.max_recorded
                ));
                break;
            }
        }
        let (record, db) = session.finish();
        let record = record.unwrap_or_else(|| Recorder::new(&self.tree, &self.db).finish());
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
            turn_mismatch,
            replies,
        }
    }

    /// The session this scenario runs on: its tree, stubs, registry,
    /// seeded db and trims, recording.
    fn session(&self) -> Session {
        let mut session = Session::new(Arc::new(self.tree.clone()), self.db.clone());
        if let Some(seed) = self.seed {
            session.seed(seed);
        }
        session.set_registry(self.registry.clone());
        session.set_stubs(self.stubs.clone());
        for task in &self.trims {
            session.trim(Box::new(task.clone()));
        }
        session.record();
        session
    }
}

/// The text timeline of ticks `from + 1 ..= to` (statuses and db changes).
fn turn_changes(run: &RunRecord, from: u64, to: u64) -> String {
    let from = usize::try_from(from).unwrap_or(usize::MAX);
    let to = usize::try_from(to).unwrap_or(usize::MAX);
    (from..to.min(run.n_ticks()))
        .map(|i| crate::record::timeline_block(run, i, &TimelineOptions::default()))
        .collect()
}

/// What one recorded tick holds, counted as [`MAX_RECORDED`] counts it
/// (each value measured up to the bound: a bigger one counts as past it).
fn recorded_weight(run: &crate::record::RunRecord, tick: &crate::record::TickRecord) -> u64 {
    changes_weight(run.changes(tick)).saturating_add(tick.visits.len() as u64)
}

/// The values db changes hold, nested edits included, as [`MAX_RECORDED`] counts them.
fn changes_weight<C: std::borrow::Borrow<crate::record::DbChange>>(
    changes: impl IntoIterator<Item = C>,
) -> u64 {
    use crate::record::DbChange;
    let weight = |v: &Value| v.measure(MAX_RECORDED).0;
    let changes = changes.into_iter().map(|change| match change.borrow() {
        DbChange::Added { key, value } => weight(key) + weight(value),
        DbChange::Changed { key, old, new } => weight(key) + weight(old) + weight(new),
        DbChange::Removed { key, old } => weight(key) + weight(old),
        DbChange::Appended { key, items } => items
            .iter()
            .map(weight)
            .fold(weight(key), u64::saturating_add),
        DbChange::Edited { key, changes } => weight(key).saturating_add(changes_weight(changes)),
    });
    changes.fold(0, u64::saturating_add)
}

impl ScenarioRun {
    /// The expectations that do not hold, in order.
    pub fn check(&self, expect: &[Expectation]) -> Vec<Mismatch> {
        let mut mismatches: Vec<Mismatch> = self
            .turn_mismatch
            .iter()
            .cloned()
            .map(Mismatch::Turn)
            .collect();
        for e in expect {
            let Some(tick) = usize::try_from(e.tick)
                .ok()
                .filter(|&t| t >= 1)
                .and_then(|t| self.record.tick(t - 1))
            else {
                mismatches.push(Mismatch::NoTick { tick: e.tick });
                continue;
            };
            if let Some(expected) = e.status
                && expected != tick.status
            {
                let error = tick.events().iter().find_map(|event| match event {
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
