//! Compile diagnostics: typed data with spans, rendered rustc-style at the edge.

use std::fmt::{self, Write};
use std::sync::Arc;

use crate::read::ReadError;
use crate::source::{Source, SourceMap, Span};

/// A stable code for each kind of problem the compiler reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Code {
    /// E0001: the text could not be read as EDN.
    Read,
    /// E0002: a node is not a vector headed by a keyword.
    NotANode,
    /// E0003: the node type is not registered.
    UnknownNodeType,
    /// E0004: a required option is missing.
    MissingOption,
    /// E0005: an option key the node type does not accept.
    UnknownOption,
    /// E0006: a constant option of the wrong type or range.
    BadOptionValue,
    /// E0007: the number of children is outside the node type's arity.
    Arity,
    /// E0008: `[:aido/fn f ..]` names an unregistered function.
    UnknownFunction,
    /// E0009: a malformed `[:aido/fn ..]` or `[:aido/db ..]`.
    BadDynamic,
    /// E0010: two nodes have the same `:id`.
    DuplicateId,
    /// E0011: the tree nests too deeply.
    TooDeep,
    /// E0012: a function refused the constant arguments of a call (a value
    /// of the wrong type, a bad regular expression).
    BadArgument,
    /// E0013: a constant the tree writes, appends or compares (or what a
    /// node stores at its `:into`) does not fit the type the node model's
    /// `:db` declares at that key path, or the path cannot be written under
    /// the declared types.
    SchemaMismatch,
    /// W0001 (a warning): a db key is read but nothing writes it, it is not in
    /// the example db, and it is likely a misspelling of one that is.
    ReadNeverWritten,
    /// W0002 (a warning): a literal vector that looks like a misspelt
    /// dynamic option (`[:db :x]` for `[:aido/db :x]`).
    LooksDynamic,
    /// E0014: an `:include` names a file that cannot be found, read or
    /// read as EDN, or a path that is refused.
    IncludeFile,
    /// E0015: a file includes itself, directly or through others.
    IncludeCycle,
    /// E0016: an argument of an `:include` is missing, unknown or of the
    /// wrong type, or `[:aido/arg ..]` names no parameter.
    IncludeArgument,
    /// E0017: a malformed `:aido/params` declaration or `:include` node.
    BadInclude,
    /// E0018: includes nest too deeply or expand to too many nodes.
    IncludeLimit,
    /// W0003 (a warning): an included file declares a parameter it never uses.
    UnusedParam,
}

impl Code {
    /// The code as printed, e.g. `E0003`.
    pub fn as_str(self) -> &'static str {
        match self {
            Code::Read => "E0001",
            Code::NotANode => "E0002",
            Code::UnknownNodeType => "E0003",
            Code::MissingOption => "E0004",
            Code::UnknownOption => "E0005",
            Code::BadOptionValue => "E0006",
            Code::Arity => "E0007",
            Code::UnknownFunction => "E0008",
            Code::BadDynamic => "E0009",
            Code::DuplicateId => "E0010",
            Code::TooDeep => "E0011",
            Code::BadArgument => "E0012",
            Code::SchemaMismatch => "E0013",
            Code::ReadNeverWritten => "W0001",
            Code::LooksDynamic => "W0002",
            Code::IncludeFile => "E0014",
            Code::IncludeCycle => "E0015",
            Code::IncludeArgument => "E0016",
            Code::BadInclude => "E0017",
            Code::IncludeLimit => "E0018",
            Code::UnusedParam => "W0003",
        }
    }
}

impl Code {
    /// Whether the code is a warning (`W…`): the tree still compiles and
    /// runs; `aido check` exits 0 unless `--deny-warnings`.
    pub fn is_warning(self) -> bool {
        match self {
            Code::ReadNeverWritten | Code::LooksDynamic | Code::UnusedParam => true,
            Code::Read
            | Code::NotANode
            | Code::UnknownNodeType
            | Code::MissingOption
            | Code::UnknownOption
            | Code::BadOptionValue
            | Code::Arity
            | Code::UnknownFunction
            | Code::BadDynamic
            | Code::DuplicateId
            | Code::TooDeep
            | Code::BadArgument
            | Code::SchemaMismatch
            | Code::IncludeFile
            | Code::IncludeCycle
            | Code::IncludeArgument
            | Code::BadInclude
            | Code::IncludeLimit => false,
        }
    }
}

/// Where a compile step reports a problem: the compiler collects them (with
/// the node's path); lowering a node needs nothing more of it.
pub(crate) trait Report {
    /// Reports a problem with `code`, at `span` if known.
    fn report(&mut self, code: Code, message: String, span: Option<Span>);
}

/// One problem found in a tree.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Diagnostic {
    /// What kind of problem.
    pub code: Code,
    /// One sentence saying what is wrong.
    pub message: String,
    /// The offending form, when the tree was read from text.
    pub span: Option<Span>,
    /// The node's position: child indices from the root (empty for the root).
    pub path: Vec<usize>,
    /// A suggestion, such as "did you mean `:selector`?".
    pub help: Option<String>,
}

impl Diagnostic {
    pub(crate) fn new(code: Code, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            code,
            message: message.into(),
            span: None,
            path: Vec::new(),
            help: None,
        }
    }

    pub(crate) fn at(mut self, span: Option<Span>, path: &[usize]) -> Diagnostic {
        self.span = span;
        self.path = path.to_vec();
        self
    }
}

/// Every problem found in one tree, with the source they refer to.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Diagnostics {
    /// The problems, in the order they occur in the tree.
    pub items: Vec<Diagnostic>,
    /// The source the spans refer to, if the tree was read from text.
    pub source: Option<Arc<Source>>,
    /// The files of a tree that includes others (see [`SourceMap`]): spans
    /// are then in the map's space, and each diagnostic is shown in its own
    /// file with the chain of includes that brought it in.
    pub files: Option<Arc<SourceMap>>,
}

impl Diagnostics {
    pub(crate) fn from_read_error(e: &ReadError, source: Arc<Source>) -> Diagnostics {
        Diagnostics {
            items: vec![Diagnostic::new(Code::Read, e.kind.to_string()).at(Some(e.span), &[])],
            source: Some(source),
            files: None,
        }
    }

    /// `items` (such as a tree's warnings) with the files their spans are in.
    pub fn new(items: Vec<Diagnostic>, files: Arc<SourceMap>) -> Diagnostics {
        Diagnostics {
            items,
            source: files.source(crate::source::FileId(0)).cloned(),
            files: Some(files),
        }
    }

    /// The file and the span in that file's text of `d` (one of these
    /// diagnostics), if it has a span and the tree was read from text.
    pub fn locate(&self, d: &Diagnostic) -> Option<(Arc<Source>, Span)> {
        let span = d.span?;
        match &self.files {
            Some(map) => {
                let at = map.locate(span)?;
                Some((map.source(at.file)?.clone(), at.span))
            }
            None => Some((self.source.clone()?, span)),
        }
    }

    /// How many problems.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Renders every diagnostic rustc-style: the message, `file:line:column`,
    /// the source line with a caret under the form, the node path and any help.
    /// Output stays proportionate to the input: see [`RenderLimits`] (the
    /// defaults) and [`Diagnostics::render_with`].
    pub fn render(&self) -> String {
        self.render_with(&RenderLimits::default())
    }

    /// Renders like [`Diagnostics::render`], within `limits`: at most
    /// `max_diagnostics` diagnostics (then a line saying how many more), each
    /// source line cut to a window of `max_line_chars` characters around the
    /// caret, messages cut to `max_message_chars`, and control characters
    /// escaped (`\u{1b}`), so that a file cannot drive the terminal.
    pub fn render_with(&self, limits: &RenderLimits) -> String {
        let mut out = String::new();
        for d in self.items.iter().take(limits.max_diagnostics) {
            match (&self.files, d.span) {
                (Some(map), Some(span)) => {
                    let at = map.locate(span);
                    let source = at.and_then(|at| map.source(at.file));
                    let mut local = d.clone();
                    local.span = at.map(|at| at.span);
                    let chain = map.include_chain(span);
                    render_one(&mut out, &local, source.map(|s| &**s), &chain, limits);
                }
                _ => render_one(&mut out, d, self.source.as_deref(), &[], limits),
            }
        }
        let n = self.items.len();
        if n > limits.max_diagnostics {
            let _ = writeln!(
                out,
                "error: {} more problem{} not shown",
                n - limits.max_diagnostics,
                if n - limits.max_diagnostics == 1 {
                    ""
                } else {
                    "s"
                }
            );
        }
        // Problems and warnings are counted apart: a warning is no problem.
        let warnings = self.items.iter().filter(|d| d.code.is_warning()).count();
        let errors = n - warnings;
        let plural = |k: usize| if k == 1 { "" } else { "s" };
        let _ = match (errors, warnings) {
            (0, w) => writeln!(out, "warning: {w} warning{}", plural(w)),
            (e, 0) => writeln!(out, "error: {e} problem{} found", plural(e)),
            (e, w) => writeln!(
                out,
                "error: {e} problem{} found (and {w} warning{})",
                plural(e),
                plural(w)
            ),
        };
        out
    }
}

/// How much of each diagnostic [`Diagnostics::render_with`] shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct RenderLimits {
    /// Diagnostics shown per file; the rest are counted (default 50).
    pub max_diagnostics: usize,
    /// Characters of the source line shown, around the caret (default 120).
    pub max_line_chars: usize,
    /// Characters of a message or help shown (default 300).
    pub max_message_chars: usize,
}

impl Default for RenderLimits {
    fn default() -> RenderLimits {
        RenderLimits {
            max_diagnostics: 50,
            max_line_chars: 120,
            max_message_chars: 300,
        }
    }
}

impl RenderLimits {
    /// The defaults with another cap on the number of diagnostics shown.
    pub fn with_max_diagnostics(mut self, n: usize) -> RenderLimits {
        self.max_diagnostics = n;
        self
    }
}

/// `text` with control characters escaped and cut to `max` characters
/// (ending in `...` when cut): [`crate::source::excerpt`].
pub(crate) fn clean(text: &str, max: usize) -> String {
    crate::source::excerpt(text, max)
}

impl fmt::Display for Diagnostics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.render())
    }
}

impl std::error::Error for Diagnostics {}

fn render_one(
    out: &mut String,
    d: &Diagnostic,
    source: Option<&Source>,
    chain: &[String],
    limits: &RenderLimits,
) {
    let _ = writeln!(
        out,
        "{}[{}]: {}",
        if d.code.is_warning() {
            "warning"
        } else {
            "error"
        },
        d.code.as_str(),
        clean(&d.message, limits.max_message_chars)
    );
    match (source, d.span) {
        (Some(src), Some(span)) => {
            let start = src.line_col(span.start);
            let line_no = start.line.to_string();
            let pad = " ".repeat(line_no.len());
            let name = clean(src.name(), limits.max_message_chars);
            let _ = writeln!(out, "{pad}--> {name}:{start}");
            let _ = writeln!(out, "{pad} |");
            let text = src.line_text(start.line);
            // Underline the form, or its first line if it spans several.
            let end = src.line_col(span.end);
            let width = if end.line == start.line {
                end.column.saturating_sub(start.column).max(1)
            } else {
                text.chars().count().saturating_sub(start.column - 1).max(1)
            };
            let (shown, caret_at, caret_width) =
                window(text, start.column - 1, width, limits.max_line_chars);
            let _ = writeln!(out, "{line_no} | {shown}");
            let _ = writeln!(
                out,
                "{pad} | {}{}",
                " ".repeat(caret_at),
                "^".repeat(caret_width.max(1))
            );
            render_notes(out, d, &pad, limits);
            for place in chain {
                let _ = writeln!(
                    out,
                    "{pad} = note: included from {}",
                    clean(place, limits.max_message_chars)
                );
            }
        }
        (Some(src), None) => {
            let _ = writeln!(out, " --> {}", clean(src.name(), limits.max_message_chars));
            render_notes(out, d, " ", limits);
        }
        (None, _) => render_notes(out, d, " ", limits),
    }
    out.push('\n');
}

/// At most `max` characters of `line` around the `width` characters from
/// column `from` (0-based), control characters escaped: the text shown,
/// where the caret starts in it and how wide it is.
fn window(line: &str, from: usize, width: usize, max: usize) -> (String, usize, usize) {
    let max = max.max(8);
    // Start a little before the form when the line is too long to show whole.
    let shown_whole = line
        .chars()
        .map(|c| if c.is_control() { 8 } else { 1 })
        .sum::<usize>()
        <= max;
    let first = if shown_whole {
        0
    } else {
        from.saturating_sub(max / 4)
    };
    let mut shown = String::new();
    let mut caret_at = 0;
    let mut caret_width = 0;
    let mut used = 0;
    if first > 0 {
        shown.push_str("...");
        used = 3;
    }
    let mut cut = false;
    for (i, c) in line.chars().enumerate().skip(first) {
        if used >= max {
            cut = true;
            break;
        }
        if i == from {
            caret_at = used;
        }
        let n = crate::source::push_escaped(&mut shown, c);
        if i >= from && i < from + width {
            caret_width += n;
        }
        used += n;
    }
    if cut {
        shown.push_str("...");
    }
    if from >= line.chars().count() {
        caret_at = used;
    }
    (shown, caret_at, caret_width)
}

fn render_notes(out: &mut String, d: &Diagnostic, pad: &str, limits: &RenderLimits) {
    if d.code != Code::Read {
        let _ = writeln!(
            out,
            "{pad} = node: {}",
            clean(&path_text(&d.path), limits.max_message_chars)
        );
    }
    if let Some(help) = &d.help {
        let _ = writeln!(
            out,
            "{pad} = help: {}",
            clean(help, limits.max_message_chars)
        );
    }
}

/// A node path as text: `root` or `root > 1 > 0` (child indices).
pub fn path_text(path: &[usize]) -> String {
    let mut s = String::from("root");
    for i in path {
        let _ = write!(s, " > {i}");
    }
    s
}

/// Names longer than this get no "did you mean".
const MAX_SUGGEST_CHARS: usize = 64;

/// The candidate closest to `word`, if it is close enough to be a likely typo.
pub(crate) fn did_you_mean<'a>(
    word: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    // A name far longer than any candidate is no typo of one; skipping it
    // keeps a huge name from costing a huge distance computation.
    let n = word.chars().count();
    if n > MAX_SUGGEST_CHARS {
        return None;
    }
    let limit = (n / 3).max(1);
    let bag = AsciiBag::of(word);
    candidates
        .into_iter()
        // The distance is at least the difference in length, and at least
        // the number of characters one has that the other lacks: both are
        // cheap to check, and rule out nearly every name of a large model.
        .filter(|c| c.chars().count().abs_diff(n) <= limit)
        .filter(|c| match (&bag, AsciiBag::of(c)) {
            (Some(a), Some(b)) => a.distance(&b) <= limit,
            _ => true,
        })
        .map(|c| (edit_distance(word, c), c))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, c)| (*d, *c))
        .map(|(_, c)| c)
}

/// How many times each ASCII character occurs in a text.
struct AsciiBag([u8; 128]);

impl AsciiBag {
    /// The bag of `text`, if it is ASCII and no character occurs more than
    /// 255 times.
    fn of(text: &str) -> Option<AsciiBag> {
        let mut counts = [0u8; 128];
        for b in text.bytes() {
            let slot = counts.get_mut(usize::from(b))?;
            *slot = slot.checked_add(1)?;
        }
        Some(AsciiBag(counts))
    }

    /// A lower bound of the edit distance between the two texts: an edit
    /// adds, removes or replaces at most one character of each, and a swap
    /// changes neither bag.
    fn distance(&self, other: &AsciiBag) -> usize {
        let (mut missing, mut extra) = (0usize, 0usize);
        for (a, b) in self.0.iter().zip(&other.0) {
            if a > b {
                missing += usize::from(a - b);
            } else {
                extra += usize::from(b - a);
            }
        }
        missing.max(extra)
    }
}

/// Optimal string alignment distance (Levenshtein plus adjacent swaps).
fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut prev2 = vec![0; b.len() + 1];
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for i in 1..=a.len() {
        cur[0] = i;
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            cur[j] = (prev[j] + 1).min(cur[j - 1] + 1).min(prev[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                cur[j] = cur[j].min(prev2[j - 2] + 1);
            }
        }
        std::mem::swap(&mut prev2, &mut prev);
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_the_nearest_close_candidate() {
        let names = ["selector", "sequence", "selector-p"];
        assert_eq!(did_you_mean("selecter", names), Some("selector"));
        assert_eq!(did_you_mean("sequnece", names), Some("sequence"));
        assert_eq!(did_you_mean("banana", names), None);
    }
}
