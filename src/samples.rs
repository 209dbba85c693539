//! Sample inputs written on nodes, checked: `aido check --samples`.
//!
//! Any node may carry `:aido/samples ["hi there" "hello"]`: inputs it is
//! meant to accept. The compiler checks that they are a vector and keeps
//! them in the tree's data, as it keeps `:doc`; a tick never reads them.
//! [`check_samples`] puts each sample under the input key (`:input`) of a
//! copy of a starting db, ticks the tree once and asks two things of the
//! tick:
//!
//! - no `:selector` above the node took the sample in an earlier branch
//!   (a branch before the node's returned success or running), else
//!   [`SampleErrorKind::Taken`], naming the branch;
//! - the node returned success, else [`SampleErrorKind::Failed`] (it
//!   failed, ran, or was not ticked at all), or
//!   [`SampleErrorKind::Error`] if the tick ended in Error.
//!
//! ```
//! use aido::{Registry, Value, compile_str};
//! use aido::samples::{SampleErrorKind, SampleOptions, check_samples};
//!
//! let tree = compile_str(
//!     "bot.edn",
//!     r#"[:selector
//!          [:sequence [:matches? {:key :input :regex "bye"}] [:emit! {:key :replies :val "Bye!"}]]
//!          [:matches? {:key :input :regex "^hi" :aido/samples ["hi there" "hello, bye"]}]]"#,
//!     &Registry::new(),
//! )
//! .unwrap();
//! let report = check_samples(&tree, &Value::map(), &SampleOptions::default());
//! assert_eq!((report.checked, report.passed), (2, 1));
//! // "hello, bye" is taken by the first branch, which says goodbye.
//! assert_eq!(report.problems[0].kind, SampleErrorKind::Taken);
//! assert_eq!(report.problems[0].place, "bot.edn:3:10");
//! ```

use std::fmt;

use crate::record::node_options;
use crate::session::merge_input;
use crate::tick::{Status, TickOptions, TraceEvent, run_tick_with_options};
use crate::tree::{NodeIndex, Tree};
use crate::value::{Map, Value};

/// The option that carries a node's samples.
pub const SAMPLES_KEY: &str = "aido/samples";

/// How samples are put on the db.
///
/// ```
/// use aido::{Value, samples::SampleOptions};
/// let options = SampleOptions::default().input_key(Value::keyword("text"));
/// assert_eq!(options.input_key, Value::keyword("text"));
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SampleOptions {
    /// The db key each sample goes under (default `:input`, as in `aido chat`).
    pub input_key: Value,
}

impl Default for SampleOptions {
    fn default() -> SampleOptions {
        SampleOptions {
            input_key: Value::keyword("input"),
        }
    }
}

impl SampleOptions {
    /// Sets [`SampleOptions::input_key`].
    pub fn input_key(mut self, key: Value) -> SampleOptions {
        self.input_key = key;
        self
    }
}

/// What is wrong with a sample, with a stable code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SampleErrorKind {
    /// I0001: the sample does not make its node succeed (it fails, runs,
    /// or is not ticked).
    Failed,
    /// I0002: an earlier branch of a `:selector` above the node takes the
    /// sample.
    Taken,
    /// I0003: the tick with the sample ends in Error.
    Error,
    /// I0004 (a warning): no node of the tree has samples.
    NoSamples,
}

impl SampleErrorKind {
    /// The stable code, `I0001` to `I0004`.
    pub fn code(self) -> &'static str {
        match self {
            SampleErrorKind::Failed => "I0001",
            SampleErrorKind::Taken => "I0002",
            SampleErrorKind::Error => "I0003",
            SampleErrorKind::NoSamples => "I0004",
        }
    }

    /// Whether it is a warning rather than an error.
    pub fn is_warning(self) -> bool {
        match self {
            SampleErrorKind::NoSamples => true,
            SampleErrorKind::Failed | SampleErrorKind::Taken | SampleErrorKind::Error => false,
        }
    }
}

/// One sample that does not do what it says, or a warning.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SampleProblem {
    /// What kind of problem.
    pub kind: SampleErrorKind,
    /// The node whose sample it is (`None` for a warning about the tree).
    pub node: Option<NodeIndex>,
    /// The sample.
    pub sample: Option<Value>,
    /// Where: the node's `file:line:col`, or the tree's name.
    pub place: String,
    /// What is wrong, in one line.
    pub message: String,
}

impl fmt::Display for SampleProblem {
    /// `error[I0002]: bot.edn:3:7: ...`, or `warning[I0004]: ...`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let level = if self.kind.is_warning() {
            "warning"
        } else {
            "error"
        };
        write!(
            f,
            "{level}[{}]: {}: {}",
            self.kind.code(),
            self.place,
            self.message
        )
    }
}

/// What [`check_samples`] found.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct SampleReport {
    /// How many samples were tried.
    pub checked: usize,
    /// How many did what they say.
    pub passed: usize,
    /// The problems and warnings, in tree order.
    pub problems: Vec<SampleProblem>,
}

impl SampleReport {
    /// Whether a sample failed (warnings aside).
    pub fn has_errors(&self) -> bool {
        self.problems.iter().any(|p| !p.kind.is_warning())
    }
}

/// The samples written on `node` (`:aido/samples`), if any.
pub fn node_samples(tree: &Tree, node: NodeIndex) -> Option<Vec<Value>> {
    let options = node_options(tree, node)?;
    match options.get(&Value::keyword(SAMPLES_KEY))? {
        Value::Vector(items) | Value::List(items) => Some(items.to_vec()),
        _ => None,
    }
}

/// Checks every sample of `tree` against a copy of `db` (see [the
/// module](crate::samples)): one tick a sample.
pub fn check_samples(tree: &Tree, db: &Value, options: &SampleOptions) -> SampleReport {
    let mut report = SampleReport::default();
    let tick_options = TickOptions {
        trace: true,
        ..TickOptions::default()
    };
    for node in tree.iter() {
        let Some(samples) = node_samples(tree, node) else {
            continue;
        };
        for sample in samples {
            report.checked += 1;
            let mut start = db.clone();
            let mut input = Map::default();
            input.insert(options.input_key.clone(), sample.clone());
            merge_input(&mut start, &input);
            let tick = run_tick_with_options(start, tree, &tick_options);
            let mut last = vec![None; tree.len()];
            for event in tick.trace() {
                if let TraceEvent::Ticked { node, status } = event
                    && let Some(slot) = last.get_mut(node.index())
                {
                    *slot = Some(*status);
                }
            }
            let problem = |kind, message: String| SampleProblem {
                kind,
                node: Some(node),
                sample: Some(sample.clone()),
                place: place(tree, node),
                message: format!("sample {sample} of {}: {message}", describe(tree, node)),
            };
            if let Some(error) = &tick.error {
                report.problems.push(problem(
                    SampleErrorKind::Error,
                    format!("the tick ended in error[{}]: {error}", error.kind.code()),
                ));
            } else if let Some(taken) = taken_by(tree, node, &last) {
                report.problems.push(problem(SampleErrorKind::Taken, taken));
            } else {
                match last.get(node.index()).copied().flatten() {
                    Some(Status::Success) => report.passed += 1,
                    Some(status) => report.problems.push(problem(
                        SampleErrorKind::Failed,
                        format!("the node returned {status}, not success"),
                    )),
                    None => report.problems.push(problem(
                        SampleErrorKind::Failed,
                        format!(
                            "the node was not ticked{}",
                            stopped_above(tree, node, &last)
                        ),
                    )),
                }
            }
        }
    }
    if report.checked == 0 {
        let name = tree
            .source()
            .map_or_else(|| "the tree".to_owned(), |s| s.name().to_owned());
        report.problems.push(SampleProblem {
            kind: SampleErrorKind::NoSamples,
            node: None,
            sample: None,
            place: name,
            message: "no node has :aido/samples, so no sample was checked".to_owned(),
        });
    }
    report
}

/// The node's ancestors, root first.
fn ancestors(tree: &Tree, node: NodeIndex) -> Vec<NodeIndex> {
    let mut chain = Vec::new();
    let mut at = node.index();
    while let Some(parent) = tree.nodes.get(at).map(|n| n.parent) {
        if parent == u32::MAX {
            break;
        }
        chain.push(NodeIndex(parent));
        at = parent as usize;
    }
    chain.reverse();
    chain
}

/// The earlier branch of a `:selector` above `node` that took the tick,
/// said in words; the outermost such selector first, as it decided first.
fn taken_by(tree: &Tree, node: NodeIndex, last: &[Option<Status>]) -> Option<String> {
    let chain = ancestors(tree, node);
    for (depth, &selector) in chain.iter().enumerate() {
        if tree.node_type(selector).map(|k| k.as_str()) != Some("selector") {
            continue;
        }
        let own = chain.get(depth + 1).copied().unwrap_or(node);
        for (i, branch) in tree.children(selector).enumerate() {
            if branch == own {
                break;
            }
            if let Some(status @ (Status::Success | Status::Running)) =
                last.get(branch.index()).copied().flatten()
            {
                return Some(format!(
                    "taken by an earlier branch: {}{}, branch {} of {}, returned {status}",
                    describe(tree, branch),
                    line(tree, branch),
                    i + 1,
                    describe(tree, selector),
                ));
            }
        }
    }
    None
}

/// Why a node was not ticked: the nearest ancestor ticked, and what it returned.
fn stopped_above(tree: &Tree, node: NodeIndex, last: &[Option<Status>]) -> String {
    ancestors(tree, node)
        .into_iter()
        .rev()
        .find_map(|a| {
            let status = last.get(a.index()).copied().flatten()?;
            Some(format!(
                " ({}{} returned {status} before reaching it)",
                describe(tree, a),
                line(tree, a)
            ))
        })
        .unwrap_or_default()
}

/// `:type id`.
fn describe(tree: &Tree, node: NodeIndex) -> String {
    let node_type = tree
        .node_type(node)
        .map(|k| k.to_string())
        .unwrap_or_default();
    let id = tree.node_id(node).cloned().unwrap_or_default();
    format!("{node_type} {id}")
}

/// ` (line N)`, if known.
fn line(tree: &Tree, node: NodeIndex) -> String {
    tree.span(node)
        .and_then(|span| tree.locate(span))
        .map(|(src, span)| format!(" (line {})", src.line_col(span.start).line))
        .unwrap_or_default()
}

/// The node's `file:line:col`, or the tree's name.
fn place(tree: &Tree, node: NodeIndex) -> String {
    match tree.span(node).and_then(|span| tree.locate(span)) {
        Some((src, span)) => format!("{}:{}", src.name(), src.line_col(span.start)),
        None => tree
            .source()
            .map_or_else(|| "the tree".to_owned(), |s| s.name().to_owned()),
    }
}
