//! Showing a tree: an indented outline, a Graphviz digraph and a Mermaid
//! flowchart.
//!
//! ```
//! use aido::record::{dot, mermaid, outline};
//! use aido::{Registry, compile_str};
//!
//! let tree = compile_str(
//!     "hungry.edn",
//!     "[:selector {:id :root}\n [:greater-than? {:key :hunger :val 8}]\n [:inc! {:key :hunger}]]",
//!     &Registry::new(),
//! )
//! .unwrap();
//! assert_eq!(
//!     outline(&tree),
//!     ":selector :root  ; line 1\n  \
//!        :greater-than? \"root.0\" {:key :hunger, :val 8}  ; line 2\n  \
//!        :inc! \"root.1\" {:key :hunger}  ; line 3\n"
//! );
//! assert!(dot(&tree).contains("  n0 -> n1;\n  n0 -> n2;\n"));
//! assert!(mermaid(&tree).starts_with("flowchart TD\n"));
//! ```

use std::fmt::Write;

use crate::tree::{NodeIndex, Tree};
use crate::value::{Map, Value};

/// The options of `node` as they were written in the tree's data, without
/// `:id` (shown on its own): constants and dynamic options (`[:aido/db ..]`,
/// `[:aido/fn ..]`) alike. `None` when the node was written without options.
pub fn node_options(tree: &Tree, node: NodeIndex) -> Option<Map> {
    let mut form = tree.form();
    for index in tree.path(node) {
        let Value::Vector(items) = form else {
            return None;
        };
        let first_child = match items.get(1) {
            Some(Value::Map(_)) => 2,
            _ => 1,
        };
        form = items.get(first_child + index)?;
    }
    let Value::Vector(items) = form else {
        return None;
    };
    let Some(Value::Map(options)) = items.get(1) else {
        return None;
    };
    let mut options = options.as_ref().clone();
    options.shift_remove(&Value::keyword("id"));
    (!options.is_empty()).then_some(options)
}

/// The tree as an indented outline, one line per node in tree order: node
/// type, id (explicit or derived), the options as written, and the source
/// line as an EDN comment when the tree was read from text.
pub fn outline(tree: &Tree) -> String {
    let mut out = String::new();
    let source = tree.source();
    let mut depth: Vec<usize> = Vec::with_capacity(tree.len());
    for node in tree.iter() {
        let d = match tree.nodes.get(node.index()).map(|n| n.parent) {
            Some(parent) if parent != u32::MAX => {
                depth.get(parent as usize).copied().unwrap_or(0) + 1
            }
            _ => 0,
        };
        depth.push(d);
        let node_type = tree.node_type(node).map(|k| k.to_string());
        let id = tree.node_id(node).cloned().unwrap_or_default();
        let _ = write!(
            out,
            "{}{} {id}",
            "  ".repeat(d),
            node_type.unwrap_or_default()
        );
        if let Some(options) = node_options(tree, node) {
            let _ = write!(out, " {}", Value::Map(Box::new(options)));
        }
        if let Some((file, span)) = tree.span(node).and_then(|s| tree.locate(s)) {
            let line = file.line_col(span.start).line;
            // A node from an included file names its file.
            if source.is_some_and(|root| std::sync::Arc::ptr_eq(root, file)) {
                let _ = write!(out, "  ; line {line}");
            } else {
                let _ = write!(out, "  ; {} line {line}", file.name());
            }
        }
        out.push('\n');
    }
    out
}

/// The tree as a Graphviz digraph: one node per tree node, labelled with its
/// type and id, its options as written (without `:doc`; long ones cut) and
/// its `:doc`, and edges from each parent to its children in order.
pub fn dot(tree: &Tree) -> String {
    let mut out = String::from(
        "digraph tree {\n  \
         graph [rankdir=TB, ordering=out];\n  \
         node [shape=box, style=\"rounded,filled\", fillcolor=\"#f4f6fb\", color=\"#7a86a8\", fontname=\"Helvetica\", fontsize=11];\n  \
         edge [color=\"#7a86a8\", arrowsize=0.6];\n",
    );
    for node in tree.iter() {
        let leaf = tree.children(node).next().is_none();
        let label: Vec<String> = label_lines(tree, node)
            .iter()
            .map(|line| dot_escape(line))
            .collect();
        let _ = writeln!(
            out,
            "  n{} [label=\"{}\"{}];",
            node.index(),
            label.join("\\n"),
            if leaf { ", fillcolor=\"#ffffff\"" } else { "" }
        );
    }
    for node in tree.iter() {
        for child in tree.children(node) {
            let _ = writeln!(out, "  n{} -> n{};", node.index(), child.index());
        }
    }
    out.push_str("}\n");
    out
}

/// The tree as a Mermaid `flowchart TD`, with the nodes and edges of [`dot`].
pub fn mermaid(tree: &Tree) -> String {
    let mut out = String::from("flowchart TD\n");
    for node in tree.iter() {
        let label: Vec<String> = label_lines(tree, node)
            .iter()
            .map(|line| mermaid_escape(line))
            .collect();
        let _ = writeln!(out, "  n{}[\"{}\"]", node.index(), label.join("<br/>"));
    }
    for node in tree.iter() {
        for child in tree.children(node) {
            let _ = writeln!(out, "  n{} --> n{}", node.index(), child.index());
        }
    }
    out
}

/// The longest options or documentation line of a graph's node label.
const LABEL_CHARS: usize = 60;

/// The lines of a node's label in a graph: type, id, then the options as
/// written but `:doc`, then the `:doc`, each cut to [`LABEL_CHARS`].
fn label_lines(tree: &Tree, node: NodeIndex) -> Vec<String> {
    let mut lines = vec![type_text(tree, node), id_text(tree, node)];
    if let Some(mut options) = node_options(tree, node) {
        let doc = options.shift_remove(&Value::keyword("doc"));
        if !options.is_empty() {
            lines.push(cut(&Value::Map(Box::new(options)).to_string()));
        }
        match &doc {
            Some(Value::Str(text)) => lines.push(cut(text)),
            Some(other) => lines.push(cut(&other.to_string())),
            None => {}
        }
    }
    lines
}

/// `text` cut to [`LABEL_CHARS`] characters, with `...` when it was longer.
fn cut(text: &str) -> String {
    match text.char_indices().nth(LABEL_CHARS) {
        Some((at, _)) => format!("{}...", &text[..at]),
        None => text.to_owned(),
    }
}

fn type_text(tree: &Tree, node: NodeIndex) -> String {
    tree.node_type(node)
        .map(|k| k.to_string())
        .unwrap_or_default()
}

fn id_text(tree: &Tree, node: NodeIndex) -> String {
    tree.node_id(node).map(Value::to_string).unwrap_or_default()
}

/// Escapes text for a double-quoted Graphviz string.
fn dot_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

/// Escapes text for a double-quoted Mermaid label (Mermaid's `#name;` entities).
fn mermaid_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '"' => out.push_str("#quot;"),
            '#' => out.push_str("#35;"),
            '<' => out.push_str("#lt;"),
            '>' => out.push_str("#gt;"),
            '\n' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}
