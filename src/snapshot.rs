//! Scenario runs as insta snapshots (cargo feature `insta`).
//!
//! The two things every crate that tests its trees writes:
//!
//! - [`assert_timeline_snapshot!`](crate::assert_timeline_snapshot) runs a
//!   [`Scenario`], checks its expectations and snapshots its text timeline
//!   under a readable name (the scenario's, `guard` for
//!   `trees/guard.test.edn`, or one given);
//! - [`glob_scenarios!`](crate::glob_scenarios) runs every scenario file
//!   matching a glob (relative to the test's source file, as insta's
//!   `glob!`), each with its own snapshot named after its file: a failing
//!   file is reported by name and the others still run.
//!
//! ```ignore
//! // tests/trees.rs of a game
//! #[test]
//! fn every_tree_scenario() {
//!     aido::glob_scenarios!("../trees", "*.test.edn", &my_game::registry());
//! }
//!
//! #[test]
//! fn the_guard_chases() {
//!     let tree = aido::compile_file("trees/guard.edn", &my_game::registry()).unwrap();
//!     let run = aido::assert_timeline_snapshot!(&aido::scenario::Scenario::new("guard", tree).ticks(3));
//!     assert_eq!(run.record.n_ticks(), 3);
//! }
//! ```
//!
//! A scenario whose `:expect` does not hold, or whose file cannot be read
//! or compiled, fails the test with the reasons `aido test` gives. The
//! snapshot takes the place of a golden timeline: a `NAME.timeline` beside
//! the file is not read (`aido test` still checks it). Snapshots are written
//! and reviewed the insta way (`cargo insta review`, or `INSTA_UPDATE`).

use std::fmt;
use std::path::Path;

use crate::registry::Registry;
use crate::scenario::{Mismatch, Scenario, ScenarioError, ScenarioRun};

#[doc(hidden)]
pub use insta as __insta;

/// Why a scenario's snapshot test failed before its snapshot was compared.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum SnapshotError {
    /// The scenario file could not be read, parsed or compiled.
    Load(ScenarioError),
    /// The run did not meet the scenario's expectations.
    Expectations {
        /// The scenario's name.
        scenario: String,
        /// Every expectation that did not hold.
        mismatches: Vec<Mismatch>,
    },
}

impl fmt::Display for SnapshotError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SnapshotError::Load(e) => {
                write!(f, "{e}")?;
                if let Some(d) = &e.diagnostics {
                    write!(f, ":\n{}", d.render())?;
                }
                Ok(())
            }
            SnapshotError::Expectations {
                scenario,
                mismatches,
            } => {
                write!(f, "{scenario}: the expectations do not hold")?;
                for m in mismatches {
                    write!(f, "\n  {m}")?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for SnapshotError {}

/// Runs `scenario` and checks its expectations: the run, or every
/// expectation that did not hold.
pub fn run_checked(scenario: &Scenario) -> Result<ScenarioRun, SnapshotError> {
    let run = scenario.run();
    let mismatches = run.check(&scenario.expect);
    if mismatches.is_empty() {
        Ok(run)
    } else {
        Err(SnapshotError::Expectations {
            scenario: scenario.name.clone(),
            mismatches,
        })
    }
}

/// Loads the scenario file at `path` (with `registry`), runs it and checks
/// its expectations: the run, or why it could not be read, compiled or run
/// as expected.
pub fn run_file(path: &Path, registry: &Registry) -> Result<ScenarioRun, SnapshotError> {
    let scenario = Scenario::load(path, registry).map_err(SnapshotError::Load)?;
    run_checked(&scenario)
}

/// The snapshot name for a scenario: its file name without `.test.edn`
/// (or `.edn`), characters other than letters, digits, `-` and `_` as `-`.
pub fn snapshot_name(scenario_name: &str) -> String {
    let file = scenario_name
        .rsplit(['/', '\\'])
        .next()
        .unwrap_or(scenario_name);
    let stem = file
        .strip_suffix(".test.edn")
        .or_else(|| file.strip_suffix(".edn"))
        .unwrap_or(file);
    stem.chars()
        .map(|c| {
            if c.is_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect()
}

/// Runs a [`Scenario`](crate::scenario::Scenario), checks its expectations and
/// asserts its text timeline as an insta snapshot; evaluates to the
/// [`ScenarioRun`](crate::scenario::ScenarioRun). The snapshot is named
/// after the scenario ([`snapshot::snapshot_name`](crate::snapshot::snapshot_name)),
/// or after the name given first. Cargo feature `insta`.
///
/// ```ignore
/// let run = aido::assert_timeline_snapshot!(&scenario);
/// aido::assert_timeline_snapshot!("guard-at-night", &night_scenario);
/// ```
#[cfg_attr(docsrs, doc(cfg(feature = "insta")))]
#[macro_export]
macro_rules! assert_timeline_snapshot {
    ($scenario:expr) => {{
        let scenario: &$crate::scenario::Scenario = $scenario;
        $crate::assert_timeline_snapshot!($crate::snapshot::snapshot_name(&scenario.name), scenario)
    }};
    ($name:expr, $scenario:expr) => {{
        let scenario: &$crate::scenario::Scenario = $scenario;
        match $crate::snapshot::run_checked(scenario) {
            Ok(run) => {
                $crate::snapshot::__insta::assert_snapshot!(
                    ::std::string::String::from($name),
                    run.timeline.as_str()
                );
                run
            }
            Err(reasons) => ::std::panic!("{}", reasons),
        }
    }};
}

/// Runs every scenario file that matches a glob, each against `registry`,
/// checks its expectations and asserts its timeline as an insta snapshot
/// named after the file. As insta's `glob!`, the glob is relative to the
/// calling test's file, or to a base folder given first (itself relative
/// to that file; a glob cannot climb with `..`). Cargo feature `insta`.
///
/// ```ignore
/// aido::glob_scenarios!("../trees", "*.test.edn", &my_game::registry());
/// aido::glob_scenarios!("scenarios/**/*.test.edn", &my_game::registry());
/// ```
#[cfg_attr(docsrs, doc(cfg(feature = "insta")))]
#[macro_export]
macro_rules! glob_scenarios {
    ($base:expr, $glob:expr, $registry:expr) => {{
        let registry: &$crate::Registry = $registry;
        $crate::snapshot::__insta::glob!($base, $glob, |path| {
            match $crate::snapshot::run_file(path, registry) {
                Ok(run) => $crate::snapshot::__insta::assert_snapshot!(run.timeline.as_str()),
                Err(reasons) => ::std::panic!("{}", reasons),
            }
        });
    }};
    ($glob:expr, $registry:expr) => {{
        let registry: &$crate::Registry = $registry;
        $crate::snapshot::__insta::glob!($glob, |path| {
            match $crate::snapshot::run_file(path, registry) {
                Ok(run) => $crate::snapshot::__insta::assert_snapshot!(run.timeline.as_str()),
                Err(reasons) => ::std::panic!("{}", reasons),
            }
        });
    }};
}
