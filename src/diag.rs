//! Compile diagnostics: typed data with spans, rendered rustc-style at the edge.

use std::fmt::{self, Write};
use std::sync::Arc;

use crate::read::ReadError;
use crate::source::{Source, Span};

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
        }
    }
}

/// One problem found in a tree.
#[derive(Debug, Clone, PartialEq)]
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
pub struct Diagnostics {
    /// The problems, in the order they occur in the tree.
    pub items: Vec<Diagnostic>,
    /// The source the spans refer to, if the tree was read from text.
    pub source: Option<Arc<Source>>,
}

impl Diagnostics {
    pub(crate) fn from_read_error(e: &ReadError, source: Arc<Source>) -> Diagnostics {
        Diagnostics {
            items: vec![Diagnostic::new(Code::Read, e.kind.to_string()).at(Some(e.span), &[])],
            source: Some(source),
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
    pub fn render(&self) -> String {
        let mut out = String::new();
        for d in &self.items {
            render_one(&mut out, d, self.source.as_deref());
        }
        let n = self.items.len();
        let _ = writeln!(
            out,
            "error: {n} problem{} found",
            if n == 1 { "" } else { "s" }
        );
        out
    }
}

impl fmt::Display for Diagnostics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.render())
    }
}

impl std::error::Error for Diagnostics {}

fn render_one(out: &mut String, d: &Diagnostic, source: Option<&Source>) {
    let _ = writeln!(out, "error[{}]: {}", d.code.as_str(), d.message);
    match (source, d.span) {
        (Some(src), Some(span)) => {
            let start = src.line_col(span.start);
            let line_no = start.line.to_string();
            let pad = " ".repeat(line_no.len());
            let _ = writeln!(out, "{pad}--> {}:{start}", src.name());
            let _ = writeln!(out, "{pad} |");
            let text = src.line_text(start.line);
            let _ = writeln!(out, "{line_no} | {text}");
            // Underline the form, or its first line if it spans several.
            let end = src.line_col(span.end);
            let width = if end.line == start.line {
                end.column.saturating_sub(start.column).max(1)
            } else {
                text.chars().count().saturating_sub(start.column - 1).max(1)
            };
            let _ = writeln!(
                out,
                "{pad} | {}{}",
                " ".repeat(start.column - 1),
                "^".repeat(width)
            );
            render_notes(out, d, &pad);
        }
        (Some(src), None) => {
            let _ = writeln!(out, " --> {}", src.name());
            render_notes(out, d, " ");
        }
        (None, _) => render_notes(out, d, " "),
    }
    out.push('\n');
}

fn render_notes(out: &mut String, d: &Diagnostic, pad: &str) {
    if d.code != Code::Read {
        let _ = writeln!(out, "{pad} = node: {}", path_text(&d.path));
    }
    if let Some(help) = &d.help {
        let _ = writeln!(out, "{pad} = help: {help}");
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

/// The candidate closest to `word`, if it is close enough to be a likely typo.
pub(crate) fn did_you_mean<'a>(
    word: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let limit = (word.chars().count() / 3).max(1);
    candidates
        .into_iter()
        .map(|c| (edit_distance(word, c), c))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, c)| (*d, *c))
        .map(|(_, c)| c)
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
