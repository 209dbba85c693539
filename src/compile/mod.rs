//! The compiler: tree data (with spans, when read from text) to a flat [`Tree`].
//!
//! It walks the whole tree once, collecting every problem rather than stopping
//! at the first, and lowers each node into a typed [`Kind`] so that the
//! interpreter never checks the shape of the tree again.

mod options;

pub(crate) use options::Options;

use std::collections::HashMap;
use std::sync::Arc;

use crate::diag::{Code, Diagnostic, Diagnostics, did_you_mean};
use crate::read::{Document, MAX_DEPTH, read};
use crate::registry::{Imp, Registry};
use crate::source::{FormSpans, Source, Span};
use crate::tree::{Node, Tree};
use crate::value::{FastBuildHasher, Keyword, Value};

/// Compiles tree data that has no source text (built in Rust or read from a db).
pub fn compile(tree: &Value, registry: &Registry) -> Result<Tree, Diagnostics> {
    Compiler::new(registry, None).run(tree, None)
}

/// Compiles a tree read from text, so that diagnostics point into that text.
pub fn compile_document(doc: &Document, registry: &Registry) -> Result<Tree, Diagnostics> {
    Compiler::new(registry, Some(doc.source.clone())).run(&doc.value, Some(doc.spans.root()))
}

/// Reads and compiles the tree in `text`; `name` (usually the file's path) is
/// used in diagnostics. A reading error is reported as a diagnostic too.
pub fn compile_str(name: &str, text: &str, registry: &Registry) -> Result<Tree, Diagnostics> {
    let source = Arc::new(Source::new(name, text));
    match read(source.clone()) {
        Ok(doc) => compile_document(&doc, registry),
        Err(e) => Err(Diagnostics::from_read_error(&e, source)),
    }
}

pub(crate) struct Compiler<'r> {
    registry: &'r Registry,
    source: Option<Arc<Source>>,
    nodes: Vec<Node>,
    child_ids: Vec<u32>,
    diags: Vec<Diagnostic>,
    path: Vec<usize>,
    /// Every node id seen so far, with the index of the node that has it;
    /// it becomes the tree's index of nodes by id.
    ids: HashMap<Value, u32, FastBuildHasher>,
    /// Where each node's id was written (its `:id` value, else the node).
    id_spans: Vec<Option<Span>>,
    /// Child indices of the nodes being compiled, as a stack.
    kids: Vec<u32>,
}

/// Where a node sits: its parent and its position among the parent's children.
#[derive(Clone, Copy)]
struct Place<'a> {
    parent: u32,
    index: u32,
    parent_id: &'a str,
}

impl<'r> Compiler<'r> {
    fn new(registry: &'r Registry, source: Option<Arc<Source>>) -> Compiler<'r> {
        Compiler {
            registry,
            source,
            nodes: Vec::new(),
            child_ids: Vec::new(),
            diags: Vec::new(),
            path: Vec::new(),
            ids: HashMap::default(),
            id_spans: Vec::new(),
            kids: Vec::new(),
        }
    }

    fn run(mut self, tree: &Value, spans: Option<FormSpans<'_>>) -> Result<Tree, Diagnostics> {
        let root = Place {
            parent: u32::MAX,
            index: 0,
            parent_id: "",
        };
        let n = count_nodes(tree, 0);
        self.nodes.reserve(n);
        self.child_ids.reserve(n);
        self.id_spans.reserve(n);
        self.ids.reserve(n);
        self.node(tree, spans, root);
        if self.diags.is_empty() && !self.nodes.is_empty() {
            Ok(Tree {
                nodes: self.nodes,
                child_ids: self.child_ids,
                source: self.source,
                index_by_id: self.ids,
            })
        } else {
            Err(Diagnostics {
                items: self.diags,
                source: self.source,
            })
        }
    }

    pub(crate) fn error(
        &mut self,
        code: Code,
        message: String,
        span: Option<Span>,
    ) -> &mut Diagnostic {
        let d = Diagnostic::new(code, message).at(span, &self.path);
        self.diags.push(d);
        let last = self.diags.len() - 1;
        &mut self.diags[last]
    }

    /// Compiles one node and its subtree; returns its index if it could be built.
    fn node(
        &mut self,
        value: &Value,
        spans: Option<FormSpans<'_>>,
        place: Place<'_>,
    ) -> Option<u32> {
        let span = spans.map(FormSpans::span);
        if self.path.len() > MAX_DEPTH {
            self.error(
                Code::TooDeep,
                format!("the tree nests more than {MAX_DEPTH} nodes deep"),
                span,
            );
            return None;
        }
        let items = match value {
            Value::Vector(items) => items.as_slice(),
            Value::List(_) => {
                self.error(
                    Code::NotANode,
                    "a node is a vector `[:type {options}? children*]`, not a list".to_owned(),
                    span,
                );
                return None;
            }
            other => {
                self.error(
                    Code::NotANode,
                    format!(
                        "expected a node `[:type {{options}}? children*]`, found {} `{}`",
                        other.type_name(),
                        short(other)
                    ),
                    span,
                );
                return None;
            }
        };
        let head_span = spans.and_then(|s| s.child(0)).map(FormSpans::span);
        let type_name = match items.first() {
            Some(Value::Keyword(k)) => Some(*k),
            Some(other) => {
                self.error(
                    Code::NotANode,
                    format!(
                        "a node starts with its type keyword, found {} `{}`",
                        other.type_name(),
                        short(other)
                    ),
                    head_span,
                );
                None
            }
            None => {
                self.error(
                    Code::NotANode,
                    "an empty vector is not a node".to_owned(),
                    span,
                );
                return None;
            }
        };
        let node_type = type_name.and_then(|name| {
            let found = self.registry.lookup_node_type(name).cloned();
            if found.is_none() {
                let help = did_you_mean(name.as_str(), self.registry.node_type_names())
                    .map(|s| format!("did you mean `:{s}`?"));
                self.error(
                    Code::UnknownNodeType,
                    format!("unknown node type `{name}`"),
                    head_span,
                )
                .help = help;
            }
            found
        });

        // `[:type {options} children..]`: the options map is optional.
        let (options_value, options_spans, first_child) = match items.get(1) {
            Some(Value::Map(m)) => (Some(m.as_ref()), spans.and_then(|s| s.child(1)), 2),
            _ => (None, None, 1),
        };
        let children = &items[first_child.min(items.len())..];

        let index = u32::try_from(self.nodes.len()).unwrap_or(u32::MAX);
        let mut options = Options::lower(
            self,
            node_type.as_deref(),
            options_value,
            options_spans,
            head_span.or(span),
        );
        let id = self.node_id(&options, place, index, span);
        let id_text = id_text(&id);

        if let Some(nt) = &node_type
            && !nt.arity.allows(children.len())
        {
            self.error(
                Code::Arity,
                format!("`{}` takes {}, found {}", nt.name, nt.arity, children.len()),
                head_span.or(span),
            );
        }

        // Reserve the slot so that the node precedes its children (pre-order).
        self.nodes.push(Node {
            kind: crate::tree::Kind::Success,
            type_name: type_name.unwrap_or_else(|| Keyword::new("aido/invalid")),
            id,
            children: (0, 0),
            parent: place.parent,
            index_in_parent: place.index,
            subtree_end: index + 1,
            pre: None,
            span,
        });

        let kids_start = self.kids.len();
        for (i, child) in children.iter().enumerate() {
            let child_spans = spans.and_then(|s| s.child(first_child + i));
            self.path.push(i);
            let place = Place {
                parent: index,
                index: u32::try_from(i).unwrap_or(u32::MAX),
                parent_id: &id_text,
            };
            if let Some(c) = self.node(child, child_spans, place) {
                self.kids.push(c);
            }
            self.path.pop();
        }

        let pre = options.take_preconditions();
        let node_type = node_type?;
        let kind = match &node_type.imp {
            Imp::Builtin(b) => b.lower(self, options, children.len(), head_span.or(span))?,
            Imp::Custom(_) => crate::tree::Kind::Custom {
                options: options.into_custom(),
                node_type: node_type.clone(),
            },
        };
        let start = u32::try_from(self.child_ids.len()).unwrap_or(u32::MAX);
        self.child_ids.extend_from_slice(&self.kids[kids_start..]);
        self.kids.truncate(kids_start);
        let end = u32::try_from(self.child_ids.len()).unwrap_or(u32::MAX);
        let subtree_end = u32::try_from(self.nodes.len()).unwrap_or(u32::MAX);
        let node = self.nodes.get_mut(index as usize)?;
        node.kind = kind;
        node.children = (start, end);
        node.subtree_end = subtree_end;
        node.pre = pre;
        Some(index)
    }

    /// The node's stable id: its `:id`, or its parent's id and its position.
    fn node_id(
        &mut self,
        options: &Options,
        place: Place<'_>,
        index: u32,
        span: Option<Span>,
    ) -> Value {
        let (id, id_span) = match options.explicit_id() {
            Some((id, id_span)) => (id.clone(), id_span.or(span)),
            None if place.parent == u32::MAX => (Value::string("0"), span),
            None => (Value::Str(child_id(place.parent_id, place.index)), span),
        };
        self.id_spans.push(id_span);
        if let Some(&first) = self.ids.get(&id) {
            let first = self.id_spans.get(first as usize).copied().flatten();
            let at = match (first, &self.source) {
                (Some(s), Some(src)) => format!(" (first used at {})", src.line_col(s.start)),
                _ => String::new(),
            };
            self.error(
                Code::DuplicateId,
                format!("duplicate node id {id}{at}"),
                id_span,
            );
        } else {
            self.ids.insert(id.clone(), index);
        }
        id
    }
}

/// How many nodes `value` holds (vectors headed by a keyword), to size tables.
fn count_nodes(value: &Value, depth: usize) -> usize {
    match value {
        Value::Vector(items)
            if depth <= MAX_DEPTH && matches!(items.first(), Some(Value::Keyword(_))) =>
        {
            1 + items
                .iter()
                .skip(1)
                .map(|v| count_nodes(v, depth + 1))
                .sum::<usize>()
        }
        _ => 0,
    }
}

/// `parent.index`, without the formatting machinery: this runs once per node.
fn child_id(parent: &str, index: u32) -> Arc<str> {
    let mut digits = [0u8; 10];
    let mut n = index;
    let mut start = digits.len();
    loop {
        start -= 1;
        digits[start] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    // Built on the stack when it fits: one allocation per node, the Arc's.
    let mut buf = [0u8; 64];
    let len = parent.len() + 1 + digits.len() - start;
    if let Some(out) = buf.get_mut(..len) {
        out[..parent.len()].copy_from_slice(parent.as_bytes());
        out[parent.len()] = b'.';
        out[parent.len() + 1..].copy_from_slice(&digits[start..]);
        if let Ok(text) = std::str::from_utf8(out) {
            return Arc::from(text);
        }
    }
    let mut id = String::with_capacity(len);
    id.push_str(parent);
    id.push('.');
    id.extend(digits[start..].iter().map(|&d| char::from(d)));
    Arc::from(id)
}

/// The text children's ids are built from: shared with the id where it can be.
fn id_text(id: &Value) -> Arc<str> {
    match id {
        Value::Str(s) => s.clone(),
        Value::Keyword(k) => Arc::from(k.as_str()),
        other => Arc::from(other.to_string()),
    }
}

/// A value's text, cut short for messages.
pub(crate) fn short(v: &Value) -> String {
    let text = v.to_string();
    if text.chars().count() > 40 {
        let cut: String = text.chars().take(37).collect();
        format!("{cut}...")
    } else {
        text
    }
}
