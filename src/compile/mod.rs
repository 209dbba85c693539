//! The compiler: tree data (with spans, when read from text) to a flat [`Tree`].
//!
//! It walks the whole tree once, collecting every problem rather than stopping
//! at the first, and lowers each node into a typed `Kind` so that the
//! interpreter never checks the shape of the tree again.

mod file;
mod include;
mod loader;
mod options;
mod params;

pub use file::{CompileFileError, compile_file};
pub(crate) use include::has_include;
pub use include::{MAX_EXPANDED_NODES, MAX_EXPANDED_TEXT, MAX_INCLUDE_DEPTH};
pub(crate) use loader::NoLoader;
pub use loader::{FsLoader, LoadError, Loader};
use std::borrow::Cow;
use std::fmt::Write;
use std::sync::Arc;

use crate::diag::{Code, Diagnostic, Diagnostics, Report, did_you_mean};
use crate::extend::Imp;
use crate::nodes::{Lowering, Options};
use crate::read::{
    Document, Item, LazyForm, MAX_DEPTH, NodeForms, NodeOptions, TreeForm, read, read_tree,
};
use crate::registry::Registry;
use crate::source::{FormSpans, Source, SourceMap, Span};
use crate::tree::{Node, NodeId, Opt, Tree};
use crate::value::{Keyword, Value};

/// Compiles tree data that has no source text (built in Rust or read from a db).
///
/// The tree keeps the data it was compiled from ([`Tree::form`]): given a
/// `Value`, it moves the value in; given a `&Value`, it keeps a copy.
///
/// ```
/// use aido::{Registry, Status, Value, compile, read_value, run_tick};
///
/// let data = read_value("[:sequence [:inc! {:key :n}] [:inc! {:key :n}]]").unwrap();
/// let tree = compile(&data, &Registry::new()).unwrap();
/// let tick = run_tick(Value::map(), &tree);
/// assert_eq!((tick.status, tick.db.to_string()), (Status::Success, "{:n 2}".into()));
/// ```
pub fn compile<'a>(
    tree: impl Into<Cow<'a, Value>>,
    registry: &Registry,
) -> Result<Tree, Diagnostics> {
    let tree = tree.into();
    // Data built in Rust has not been through the reader's nesting limit;
    // the compiler's walk (dynamic options nest) must not overflow the stack.
    if tree.depth_beyond(MAX_DEPTH).is_some() {
        return Err(Diagnostics {
            items: vec![Diagnostic::new(
                Code::TooDeep,
                format!("the tree's data nests more than {MAX_DEPTH} deep"),
            )],
            source: None,
            files: None,
        });
    }
    let mut compiled = Compiler::new(registry, None).run(NodeForm::Value(&tree), None)?;
    // The tree keeps its data (for trims): a copy only if it was borrowed.
    compiled.form = LazyForm::ready(tree.into_owned());
    Ok(compiled)
}

/// Compiles a tree read from text, so that diagnostics point into that text.
///
/// Given a `Document`, the tree takes its data over; given a `&Document`,
/// it keeps a copy (see [`compile`]).
///
/// Compiling from text does no I/O: an `:include` is an error here (see
/// [`compile_document_with`]).
pub fn compile_document<'a>(
    doc: impl Into<Cow<'a, Document>>,
    registry: &Registry,
) -> Result<Tree, Diagnostics> {
    compile_document_with(doc, registry, &NoLoader)
}

/// Compiles a tree read from text like [`compile_document`], taking the
/// files its `:include`s name from `loader`. The tree's data
/// ([`Tree::form`]) is then the data with every include expanded.
pub fn compile_document_with<'a>(
    doc: impl Into<Cow<'a, Document>>,
    registry: &Registry,
    loader: &dyn Loader,
) -> Result<Tree, Diagnostics> {
    let doc = doc.into();
    let (mut tree, expanded) = compile_read(
        &doc.value,
        doc.spans.root(),
        doc.source.clone(),
        registry,
        loader,
    )?;
    tree.form = LazyForm::ready(match (expanded, doc) {
        (Some(value), _) => value,
        (None, Cow::Borrowed(doc)) => doc.value.clone(),
        (None, Cow::Owned(doc)) => doc.value,
    });
    Ok(tree)
}

/// Compiles a form read from `source`, expanding its includes (if it has
/// any) first: the tree, and the expanded data if there were includes.
fn compile_read(
    value: &Value,
    spans: FormSpans<'_>,
    source: Arc<Source>,
    registry: &Registry,
    loader: &dyn Loader,
) -> Result<(Tree, Option<Value>), Diagnostics> {
    // A tree without includes costs nothing more to compile: `:include` is
    // no node type, so only a tree that fails with an unknown node type is
    // looked through for includes (one that declares parameters is seen at
    // its root).
    if !include::declares_params(value) {
        match Compiler::new(registry, Some(source.clone())).run(NodeForm::Value(value), Some(spans))
        {
            Ok(tree) => return Ok((tree, None)),
            Err(d)
                if !(d.items.iter().any(|d| d.code == Code::UnknownNodeType)
                    && include::has_include(value)) =>
            {
                return Err(d);
            }
            Err(_) => {}
        }
    }
    let expanded = include::expand(value, Some(spans), source.clone(), loader);
    let files = Arc::new(expanded.files);
    let (warnings, errors): (Vec<Diagnostic>, Vec<Diagnostic>) = expanded
        .diags
        .into_iter()
        .partition(|d| d.code.is_warning());
    let warnings = once_each(warnings);
    let fail = |mut items: Vec<Diagnostic>| Diagnostics {
        items: {
            items.extend(warnings.iter().cloned());
            once_each(items)
        },
        source: Some(source.clone()),
        files: Some(files.clone()),
    };
    if !errors.is_empty() {
        return Err(fail(errors));
    }
    let mut compiler = Compiler::new(registry, Some(source.clone()));
    compiler.files = Some(files.clone());
    match compiler.run(
        NodeForm::Value(&expanded.value),
        Some(expanded.spans.root()),
    ) {
        Ok(mut tree) => {
            tree.files = Some(files);
            tree.warnings = warnings;
            Ok((tree, Some(expanded.value)))
        }
        Err(d) => Err(fail(d.items)),
    }
}

/// `items` without repeats: a problem inside a file included twice is
/// reported once (same code, place and message).
fn once_each(items: Vec<Diagnostic>) -> Vec<Diagnostic> {
    let mut seen = std::collections::HashSet::new();
    items
        .into_iter()
        .filter(|d| seen.insert((d.code, d.span.map(|s| (s.start, s.end)), d.message.clone())))
        .collect()
}

/// Compiles the form `value` found inside a larger document (a scenario's
/// inline tree), so that diagnostics point into that document's text.
pub(crate) fn compile_form(
    value: &Value,
    spans: FormSpans<'_>,
    source: Arc<Source>,
    registry: &Registry,
) -> Result<Tree, Diagnostics> {
    let loader = FsLoader::for_file(source.name());
    let (mut tree, expanded) = compile_read(value, spans, source, registry, &loader)?;
    tree.form = LazyForm::ready(expanded.unwrap_or_else(|| value.clone()));
    Ok(tree)
}

/// Reads and compiles the tree in `text`; `name` (usually the file's path) is
/// used in diagnostics. A reading error is reported as a diagnostic too.
///
/// Every problem is reported at once, each with a stable code and a place:
///
/// ```
/// use aido::diag::Code;
/// use aido::{Registry, compile_str};
///
/// let errors = compile_str("t.edn", "[:sequence [:jump!] [:inc!]]", &Registry::new()).unwrap_err();
/// let codes: Vec<Code> = errors.items.iter().map(|d| d.code).collect();
/// assert_eq!(codes, [Code::UnknownNodeType, Code::MissingOption]);
/// assert!(errors.render().contains("t.edn:1:13"));
/// ```
pub fn compile_str(name: &str, text: &str, registry: &Registry) -> Result<Tree, Diagnostics> {
    compile_source(Arc::new(Source::new(name, text)), registry)
}

/// Reads and compiles the tree in `source`, like [`compile_str`], for a
/// text that is already a [`Source`] (a `Source` made from a `String`
/// takes the text over, so a big file is not held twice).
///
/// ```
/// use std::sync::Arc;
/// use aido::{Registry, compile::compile_source, source::Source};
///
/// let text = String::from("[:sequence [:inc! {:key :n}]]");
/// let tree = compile_source(Arc::new(Source::new("t.edn", text)), &Registry::new()).unwrap();
/// assert_eq!(tree.len(), 2);
/// ```
///
/// Compiling from text does no I/O: an `:include` is an error here (see
/// [`compile_source_with`]).
pub fn compile_source(source: Arc<Source>, registry: &Registry) -> Result<Tree, Diagnostics> {
    compile_source_with(source, registry, &NoLoader)
}

/// Reads and compiles the tree in `source` like [`compile_source`], taking
/// the files its `:include`s name from `loader` (paths are resolved against
/// `source`'s name).
pub fn compile_source_with(
    source: Arc<Source>,
    registry: &Registry,
    loader: &dyn Loader,
) -> Result<Tree, Diagnostics> {
    // The tree's nodes are read without their value and compiled from
    // what the reader recorded. A tree whose ticks may record its
    // fingerprint, which prints its data, gets its data made from that
    // record; any other reads it again from its text if it is ever asked
    // for. A tree that declares parameters, may have includes (it fails
    // with an unknown node type) or is no vector goes the way of the
    // whole value.
    match read_tree(source.text()) {
        Ok((TreeForm::Nodes(forms), spans))
            if !forms.root_has_option(Keyword::new("aido/params")) =>
        {
            let form = NodeForm::Read(&forms, forms.root());
            match Compiler::new(registry, Some(source.clone())).run(form, Some(spans.root())) {
                Ok(mut tree) => {
                    tree.form = if may_keep_state(&tree.nodes) {
                        LazyForm::ready(forms.into_value())
                    } else {
                        LazyForm::from_source(source)
                    };
                    return Ok(tree);
                }
                Err(d) if !d.items.iter().any(|d| d.code == Code::UnknownNodeType) => {
                    return Err(d);
                }
                Err(_) => {}
            }
        }
        Ok(_) => {}
        Err(e) => return Err(Diagnostics::from_read_error(&e, source)),
    }
    match read(source.clone()) {
        // The document was read here: its data moves into the tree.
        Ok(doc) => compile_document_with(doc, registry, loader),
        Err(e) => Err(Diagnostics::from_read_error(&e, source)),
    }
}

/// Whether ticks of the tree of `nodes` may keep state in the db, which
/// then records the tree's fingerprint under `:aido/tree` (the tick's
/// `wrote_state`: node memory or a running set written). A plain root
/// ([`Node::plain`](crate::tree::Node)) has a plain subtree, the whole
/// tree, none of whose built-in nodes runs long or writes memory; a node
/// type registered in Rust may write memory even when declared to finish
/// in one visit. (A db that already records a tree asks for the
/// fingerprint too, whatever the tree: then a plain tree reads its data.)
fn may_keep_state(nodes: &[crate::tree::Node]) -> bool {
    match nodes.first() {
        Some(root) if root.plain => nodes
            .iter()
            .any(|n| matches!(n.kind, crate::tree::Kind::Custom { .. })),
        _ => true,
    }
}

/// A node as the compiler reads it: data (a tree built in Rust or read as
/// a value: `compile`, includes, parameters, a scenario's inline tree) or
/// a node vector the reader recorded from text without building it
/// ([`NodeForms`]). [`Compiler::node`] and the options' lowering are
/// written once over both.
#[derive(Clone, Copy)]
pub(crate) enum NodeForm<'a> {
    Value(&'a Value),
    Read(&'a NodeForms, u32),
}

impl NodeForm<'_> {
    /// How many nodes the form holds, to size the compiler's tables.
    fn count_nodes(self) -> usize {
        match self {
            NodeForm::Value(value) => count_nodes(value, 0),
            NodeForm::Read(forms, _) => forms.len(),
        }
    }
}

/// A node's children in either form (see [`NodeForm`]).
#[derive(Clone, Copy)]
enum Children<'a> {
    Values(&'a [Value]),
    Read(&'a NodeForms, &'a [Item]),
}

impl<'a> Children<'a> {
    #[inline(always)]
    fn len(self) -> usize {
        match self {
            Children::Values(items) => items.len(),
            Children::Read(_, items) => items.len(),
        }
    }

    #[inline(always)]
    fn get(self, i: usize) -> Option<NodeForm<'a>> {
        match self {
            Children::Values(items) => items.get(i).map(NodeForm::Value),
            Children::Read(forms, items) => items.get(i).map(|item| match item {
                Item::Value(value) => NodeForm::Value(value),
                Item::Node(index) => NodeForm::Read(forms, *index),
            }),
        }
    }
}

pub(crate) struct Compiler<'r> {
    registry: &'r Registry,
    source: Option<Arc<Source>>,
    /// The files of a tree with includes: spans are in the map's space.
    files: Option<Arc<SourceMap>>,
    nodes: Vec<Node>,
    child_ids: Vec<u32>,
    diags: Vec<Diagnostic>,
    /// Where the node being compiled sits, its parent and its position
    /// among the parent's children: an error's node path is worked out
    /// from it, and its ancestors' slots, only when one is reported.
    at: (u32, u32),
    /// How many ancestors the node being compiled has.
    depth: usize,
    /// Every node id seen so far, with the index of the node that has it;
    /// it becomes the tree's index of nodes by id.
    ids: crate::value::ValueIndex,
    /// Where each node's id was written (its `:id` value, else the node).
    id_spans: Vec<Option<Span>>,
    /// The nodes whose id was reported as a duplicate: the derived ids under
    /// them repeat by consequence, and are not reported again.
    duplicated: Vec<u32>,
    /// Child indices of the nodes being compiled, as a stack.
    kids: Vec<u32>,
    /// The id texts of the nodes being compiled, as a stack: a derived id
    /// extends its parent's text, an explicit one starts anew after it.
    id_texts: String,
    /// Emptied vectors for nodes' options, kept to save an allocation a node
    /// (as many as the tree is deep).
    spare_entries: Vec<Vec<(Keyword, Opt)>>,
    /// The "did you mean" of each unknown name met so far.
    suggestions: Suggestions,
    /// The keywords `:doc` and `:aido/samples`, which every node accepts.
    doc_and_samples: (Keyword, Keyword),
    /// Keywords a name list (`OptionType::OneOf`) accepted, with the list:
    /// accepted again by their codes (`options::checks`).
    accepted_names: Vec<(&'static [&'static str], Keyword)>,
    /// Symbols the operator type accepted: accepted again by their codes.
    accepted_operators: Vec<crate::value::Symbol>,
    /// Whether a dynamic option lowered so far can read `:aido/memory`
    /// (see `Tree::reads_memory`).
    dynamic_reads_memory: bool,
}

/// How many different unknown names of one compile get a "did you mean":
/// the search compares a name with every registered one (thousands, with a
/// large node model), and more problems than this are more than anyone
/// reads (`aido check` shows 50 by default).
pub(crate) const MAX_SUGGESTIONS: usize = 64;

/// The "did you mean" of unknown node types and functions, worked out once
/// per name and for at most [`MAX_SUGGESTIONS`] names per compile, so that
/// thousands of unknown names against thousands of known ones cost a
/// bounded number of comparisons.
#[derive(Default)]
pub(crate) struct Suggestions {
    /// By unknown name (and whether it names a function): the suggestion.
    by_name: std::collections::HashMap<(Keyword, bool), Option<String>>,
}

impl Suggestions {
    /// The help for the unknown `name` (a function if `function`), from
    /// `candidates`, formatted by `help`.
    pub(crate) fn help<'a>(
        &mut self,
        name: Keyword,
        function: bool,
        candidates: impl IntoIterator<Item = &'a str>,
        help: impl FnOnce(&str) -> String,
    ) -> Option<String> {
        if let Some(known) = self.by_name.get(&(name, function)) {
            return known.clone();
        }
        if self.by_name.len() >= MAX_SUGGESTIONS {
            return None;
        }
        let found = did_you_mean(name.as_str(), candidates).map(help);
        self.by_name.insert((name, function), found.clone());
        found
    }
}

impl Report for Compiler<'_> {
    fn report(&mut self, code: Code, message: String, span: Option<Span>) {
        self.error(code, message, span);
    }
}

/// Where a node sits: its parent and its position among the parent's children.
#[derive(Clone, Copy)]
struct Place {
    parent: u32,
    index: u32,
    /// Where the parent's id text starts in `Compiler::id_texts`; it runs
    /// to the end.
    parent_id_from: usize,
}

impl Place {
    /// The root's place: no parent.
    const ROOT: Place = Place {
        parent: u32::MAX,
        index: 0,
        parent_id_from: 0,
    };
}

impl<'r> Compiler<'r> {
    fn new(registry: &'r Registry, source: Option<Arc<Source>>) -> Compiler<'r> {
        Compiler {
            registry,
            source,
            files: None,
            nodes: Vec::new(),
            child_ids: Vec::new(),
            diags: Vec::new(),
            at: (u32::MAX, 0),
            depth: 0,
            ids: crate::value::ValueIndex::default(),
            id_spans: Vec::new(),
            duplicated: Vec::new(),
            kids: Vec::new(),
            id_texts: String::new(),
            spare_entries: Vec::new(),
            suggestions: Suggestions::default(),
            doc_and_samples: options::doc_and_samples(),
            accepted_names: Vec::new(),
            accepted_operators: Vec::new(),
            dynamic_reads_memory: false,
        }
    }

    fn run(
        mut self,
        tree: NodeForm<'_>,
        spans: Option<FormSpans<'_>>,
    ) -> Result<Tree, Diagnostics> {
        let root = Place::ROOT;
        // The reader counted the node-shaped forms of a text it read:
        // the nodes, or a few more (a reservation, not a result).
        let n = spans
            .and_then(FormSpans::node_forms)
            .unwrap_or_else(|| tree.count_nodes());
        self.nodes.reserve(n);
        self.child_ids.reserve(n);
        self.id_spans.reserve(n);
        self.ids = crate::value::ValueIndex::with_capacity(n);
        self.node(tree, spans, root);
        if self.diags.is_empty() && !self.nodes.is_empty() {
            // (Each node was marked plain or not as it was finished.)
            let (writes_running, reads_memory) = crate::tick::reserved_reach(&self.nodes);
            let reads_memory = reads_memory || self.dynamic_reads_memory;
            Ok(Tree {
                nodes: self.nodes,
                child_ids: self.child_ids,
                source: self.source,
                files: None,
                warnings: Vec::new(),
                index_by_id: self.ids,
                // Set by the caller, who may own the data.
                form: LazyForm::ready(Value::Nil),
                fingerprint: std::sync::OnceLock::new(),
                fingerprint_hint: crate::tree::SlotHint::default(),
                memory_key_hint: crate::tree::SlotHint::default(),
                running_key_hint: crate::tree::SlotHint::default(),
                closures: Default::default(),
                writes_running,
                reads_memory,
                identity: crate::tree::Identity::fresh(),
            })
        } else {
            Err(Diagnostics {
                items: self.diags,
                source: self.source,
                files: None,
            })
        }
    }

    pub(crate) fn error(
        &mut self,
        code: Code,
        message: String,
        span: Option<Span>,
    ) -> &mut Diagnostic {
        let path = self.path();
        let d = Diagnostic::new(code, message).at(span, &path);
        self.diags.push(d);
        let last = self.diags.len() - 1;
        &mut self.diags[last]
    }

    /// The node path of the node being compiled: its position among its
    /// parent's children, after its parent's path. Worked out from the
    /// slots of its ancestors, which precede it in the table, and only for
    /// an error: a node costs no push and pop of a path kept as it goes.
    #[cold]
    #[inline(never)]
    fn path(&self) -> Vec<usize> {
        let mut path = Vec::new();
        let mut place = self.at;
        while place.0 != u32::MAX {
            path.push(place.1 as usize);
            place = match self.nodes.get(place.0 as usize) {
                Some(parent) => (parent.parent, parent.index_in_parent),
                None => break,
            };
        }
        path.reverse();
        path
    }

    /// Compiles one node and its subtree; returns its index if it could be built.
    fn node(
        &mut self,
        form: NodeForm<'_>,
        spans: Option<FormSpans<'_>>,
        place: Place,
    ) -> Option<u32> {
        self.at = (place.parent, place.index);
        let span = spans.map(FormSpans::span);
        if self.depth > MAX_DEPTH {
            self.error(
                Code::TooDeep,
                format!("the tree nests more than {MAX_DEPTH} nodes deep"),
                span,
            );
            return None;
        }
        // The node's head, options map and children, in either form.
        let made_options;
        let (head, options_value, children) = match form {
            NodeForm::Value(Value::Vector(items)) => {
                let options = match items.get(1) {
                    Some(Value::Map(m)) => Some(m.as_ref()),
                    _ => None,
                };
                let first = if options.is_some() { 2 } else { 1 };
                let children = items.get(first..).unwrap_or_default();
                (items.first(), options, Children::Values(children))
            }
            NodeForm::Read(forms, index) => {
                let node = forms.node(index);
                // An options map kept as pairs is made here, for this
                // node's lowering, and gone with it; the table keeps the
                // pairs for the tree's data.
                let options = match node.options {
                    Some(NodeOptions::Pairs(range)) => {
                        made_options = Some(forms.clone_map(*range));
                        made_options.as_ref()
                    }
                    Some(NodeOptions::Map(map)) => Some(map),
                    None => None,
                };
                // The reader reads a node's head as a value, never a node.
                let (head, children) = match node.items.split_first() {
                    Some((Item::Value(head), children)) => (Some(head), children),
                    Some((Item::Node(_), children)) => (None, children),
                    None => (None, &[][..]),
                };
                (head, options, Children::Read(forms, children))
            }
            NodeForm::Value(Value::List(_)) => {
                self.error(
                    Code::NotANode,
                    "a node is a vector `[:type {options}? children*]`, not a list".to_owned(),
                    span,
                );
                return None;
            }
            NodeForm::Value(other) => {
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
        let type_name = match head {
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
            let found = self.registry.lookup_node_type(name);
            if found.is_none() {
                let help =
                    self.suggestions
                        .help(name, false, self.registry.node_type_names(), |s| {
                            format!("did you mean `:{s}`?")
                        });
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
        let (options_spans, first_child) = match options_value {
            Some(_) => (spans.and_then(|s| s.child(1)), 2),
            None => (None, 1),
        };

        let index = u32::try_from(self.nodes.len()).unwrap_or(u32::MAX);
        let mut entries = self.spare_entries.pop().unwrap_or_default();
        let mut options = options::lower_options(
            self,
            node_type.map(|nt| &**nt),
            options_value,
            options_spans,
            head_span.or(span),
            &mut entries,
        );
        let id_texts_len = self.id_texts.len();
        let (id, id_from) = self.node_id(&options, place, index, span);

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
            plain: false,
            repeats_action: false,
            long_child_at: 0,
            count: crate::tree::Node::NO_COUNT,
            span,
            memory_hint: crate::tree::SlotHint::default(),
            long_run: 0,
        });

        let kids_start = self.kids.len();
        self.depth += 1;
        for i in 0..children.len() {
            let Some(child) = children.get(i) else { break };
            let child_spans = spans.and_then(|s| s.child(first_child + i));
            let child_place = Place {
                parent: index,
                index: u32::try_from(i).unwrap_or(u32::MAX),
                parent_id_from: id_from,
            };
            if let Some(c) = self.node(child, child_spans, child_place) {
                self.kids.push(c);
            }
        }
        self.depth -= 1;
        // The children moved it; the lowering's errors are this node's.
        if children.len() != 0 {
            self.at = (place.parent, place.index);
        }
        self.id_texts.truncate(id_texts_len);

        let pre = options.take_preconditions();
        let kind = match node_type {
            Some(nt) => match &nt.imp {
                Imp::Builtin(lower) => lower(&mut Lowering {
                    opts: options,
                    n_children: children.len(),
                    span: head_span.or(span),
                    report: self,
                }),
                Imp::Custom(_) => Some(crate::tree::Kind::Custom {
                    options: crate::tree::CustomOptions::new(nt, options.take_custom()),
                    node_type: Arc::clone(nt),
                }),
            },
            None => {
                drop(options);
                None
            }
        };
        // The options are used up: their vector serves a later node.
        entries.clear();
        self.spare_entries.push(entries);
        let kind = match self.registry.db_schema() {
            Some(schema) => typed(kind?, schema),
            None => kind?,
        };
        let start = u32::try_from(self.child_ids.len()).unwrap_or(u32::MAX);
        // A leaf, most nodes, has no children to copy: without the test,
        // a call to `memcpy` of nothing.
        if self.kids.len() > kids_start {
            self.child_ids.extend_from_slice(&self.kids[kids_start..]);
            self.kids.truncate(kids_start);
        }
        let end = u32::try_from(self.child_ids.len()).unwrap_or(u32::MAX);
        let subtree_end = u32::try_from(self.nodes.len()).unwrap_or(u32::MAX);
        let node = self.nodes.get_mut(index as usize)?;
        // The slot holds what was pushed above: a `Kind::Success` and no
        // preconditions, which hold nothing to drop. Tested in place and
        // forgotten, they cost a test each where assigning over them called
        // their drop glue.
        match std::mem::replace(&mut node.kind, kind) {
            placeholder @ crate::tree::Kind::Success => std::mem::forget(placeholder),
            other => drop(other),
        }
        if let Some(unexpected) = std::mem::replace(&mut node.pre, pre) {
            drop(unexpected);
        }
        node.children = (start, end);
        node.subtree_end = subtree_end;
        // Its children are finished and marked: marked in turn here, not
        // in a pass of its own after the walk.
        let kids = self
            .child_ids
            .get(start as usize..end as usize)
            .unwrap_or_default();
        crate::nodes::mark_plain_node(&mut self.nodes, index as usize, kids);
        Some(index)
    }

    /// The node's stable id (its `:id`, or its parent's id and its
    /// position), with where its text starts in `id_texts`, which it ends.
    fn node_id(
        &mut self,
        options: &Options<'_>,
        place: Place,
        index: u32,
        span: Option<Span>,
    ) -> (NodeId, usize) {
        let own_from = self.id_texts.len();
        let (id, id_span, id_from) = match options.explicit_id() {
            Some((id, id_span)) => {
                push_id_text(&mut self.id_texts, id);
                (NodeId::given(id.clone()), id_span.or(span), own_from)
            }
            None if place.parent == u32::MAX => {
                self.id_texts.push('0');
                (NodeId::derived("0"), span, own_from)
            }
            None => {
                push_index(&mut self.id_texts, place.index);
                let text = self.id_texts.get(place.parent_id_from..).unwrap_or("");
                (NodeId::derived(text), span, place.parent_id_from)
            }
        };
        self.id_spans.push(id_span);
        // One hash and one probe: the id is nearly always new. A derived
        // id is hashed and compared by its text, never made into a string.
        let nodes = &self.nodes;
        let hash = id.index_hash(self.ids.hasher());
        let first = self.ids.insert(
            hash,
            index,
            |i| nodes.get(i as usize).is_some_and(|n| n.id.same_as(&id)),
            |hasher, i| nodes.get(i as usize).map_or(0, |n| n.id.index_hash(hasher)),
        );
        let derived = options.explicit_id().is_none();
        if first.is_some() && derived && self.duplicated.contains(&place.parent) {
            // Its parent's id was a duplicate, so its own derived id is too:
            // one mistake, already reported.
            self.duplicated.push(index);
        } else if let Some(first) = first {
            self.duplicated.push(index);
            let first = self.id_spans.get(first as usize).copied().flatten();
            let at = match (first, &self.files, &self.source) {
                (Some(s), Some(files), _) => files
                    .place(s)
                    .map(|p| format!(" (first used at {p})"))
                    .unwrap_or_default(),
                (Some(s), None, Some(src)) => format!(" (first used at {})", src.line_col(s.start)),
                _ => String::new(),
            };
            self.error(
                Code::DuplicateId,
                format!("duplicate node id {id}{at}"),
                id_span,
            );
        }
        (id, id_from)
    }
}

/// `kind` with its writes held to the db schema: a `:define!`, `:emit!` or
/// `:inc!` of a declared key becomes [`Kind::Typed`](crate::tree::Kind),
/// and the `:into` of `:matches?` and `:defer` gets its check (a tree
/// compiled without a schema has neither). A key declared `:any` or `:map`
/// takes everything, so its writes stay as they are and cost nothing more.
fn typed(kind: crate::tree::Kind, schema: &crate::schema::DbSchema) -> crate::tree::Kind {
    use crate::spec::{DbType, OptionType};
    use crate::tree::{KeyPath, Kind, SchemaCheck, TypedWrite, WriteKind};
    #[derive(Clone, Copy, PartialEq)]
    enum Write {
        Set,
        Append,
        Increment,
    }
    let check = |key: &KeyPath, write: Write| -> Option<SchemaCheck> {
        let top = schema.get(&key.top()?)?;
        let ty = &top.ty;
        if matches!(ty, DbType::Plain(OptionType::Any) | DbType::Map) {
            return None;
        }
        let value = |ty: &DbType| {
            Some(SchemaCheck {
                ty: ty.clone(),
                whole: false,
            })
        };
        let whole = Some(SchemaCheck {
            ty: ty.clone(),
            whole: true,
        });
        match (key.n_keys() > 1, write, ty) {
            (true, ..) => whole,
            (false, Write::Set, ty) => value(ty),
            (false, Write::Append, DbType::Vector(elem)) => value(elem),
            // Appending makes a vector, which the declared type is not.
            (false, Write::Append, _) => whole,
            // Adding 1 to a number gives a number, or an Error.
            (false, Write::Increment, DbType::Plain(OptionType::Number)) => None,
            (false, Write::Increment, ty) => value(ty),
        }
    };
    let typed =
        |write: WriteKind, check: SchemaCheck| Kind::Typed(Box::new(TypedWrite { write, check }));
    match kind {
        Kind::Define { key, val } => match check(&key, Write::Set) {
            Some(c) => typed(WriteKind::Define { key, val }, c),
            None => Kind::Define { key, val },
        },
        Kind::Emit { key, val, keep } => match check(&key, Write::Append) {
            Some(c) => typed(WriteKind::Emit { key, val, keep }, c),
            None => Kind::Emit { key, val, keep },
        },
        Kind::Inc { key } => match check(&key, Write::Increment) {
            Some(c) => typed(WriteKind::Inc { key }, c),
            None => Kind::Inc { key },
        },
        Kind::Matches(mut m) => {
            if let Some(into) = &mut m.into {
                into.check = check(&into.path, Write::Set);
            }
            Kind::Matches(m)
        }
        Kind::Defer {
            action,
            mut into,
            options,
        } => {
            if let Some(into) = &mut into {
                into.check = check(&into.path, Write::Set);
            }
            Kind::Defer {
                action,
                into,
                options,
            }
        }
        other => other,
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

/// Appends `.index` to the id text of a node's parent: its own id text.
/// This runs once per node, so it avoids the formatting machinery.
fn push_index(id_texts: &mut String, index: u32) {
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
    id_texts.push('.');
    id_texts.extend(digits[start..].iter().map(|&d| char::from(d)));
}

/// Appends the text that children's ids are built from.
fn push_id_text(id_texts: &mut String, id: &Value) {
    match id {
        Value::Str(s) => id_texts.push_str(s),
        Value::Keyword(k) => id_texts.push_str(k.as_str()),
        other => {
            // Writing to a String cannot fail.
            let _ = write!(id_texts, "{other}");
        }
    }
}

/// A value's text, cut short for messages.
pub(crate) fn short(v: &Value) -> String {
    v.abbreviated(40).0
}

#[cfg(test)]
mod form_tests;
#[cfg(test)]
mod tests {
    use super::count_nodes;
    use crate::read::read_text;

    /// The reader's count of node-shaped forms, which sizes the compiler's
    /// tables, and the compiler's own walk.
    fn counts(text: &str) -> (Option<usize>, usize) {
        let (value, spans) = read_text(text).unwrap();
        (spans.root().node_forms(), count_nodes(&value, 0))
    }

    /// Each node's children, as indices in pre-order: leaves copy none
    /// into the table, composites their own, in order.
    #[test]
    fn each_node_gets_its_own_children_and_a_leaf_none() {
        let text = "[:sequence [:success] [:selector [:failure] [:invert [:success]] \
                    [:failure]] [:success]]";
        let tree = crate::compile_str("t.edn", text, &crate::Registry::new()).unwrap();
        let children: Vec<Vec<usize>> = tree
            .iter()
            .map(|n| tree.children(n).map(|c| c.index()).collect())
            .collect();
        let expected: [&[usize]; 8] = [&[1, 2, 7], &[], &[3, 4, 6], &[], &[5], &[], &[], &[]];
        assert_eq!(children, expected);
    }

    /// Each error's code and node path, in the order reported.
    fn errors(text: &str) -> Vec<(crate::diag::Code, Vec<usize>)> {
        let errors = crate::compile_str("t.edn", text, &crate::Registry::new()).unwrap_err();
        errors
            .items
            .iter()
            .map(|d| (d.code, d.path.clone()))
            .collect()
    }

    /// The node path is worked out from the table only for an error: an
    /// error before a node's children, in one of them, and in its
    /// lowering after them each name their own node.
    #[test]
    fn an_errors_node_path_is_its_nodes_place_in_the_tree() {
        use crate::diag::Code;
        let text = "[:sequence [:selector [:success] [:inc!] 5] [:invert [:jump!]] \
                    [:sequence [:success] [:parallel {:how-many 1} [:jump!] [:success]]]]";
        let expected = [
            (Code::MissingOption, vec![0, 1]),
            (Code::NotANode, vec![0, 2]),
            (Code::UnknownNodeType, vec![1, 0]),
            (Code::UnknownNodeType, vec![2, 1, 0]),
            (Code::MissingOption, vec![2, 1]),
        ];
        assert_eq!(errors(text), expected);
        assert_eq!(errors("[:inc!]"), [(Code::MissingOption, vec![])]);
        assert_eq!(
            errors("[:sequence [:success] 5]"),
            [(Code::NotANode, vec![1])]
        );
    }

    /// A keyword a name list accepted is accepted again by its code, but
    /// only with that list: another keyword, or the same keyword where
    /// another list is asked, is still checked.
    #[test]
    fn a_name_lists_accepted_keyword_is_remembered_with_its_list() {
        use crate::diag::Code;
        let parallel = |mode: &str| format!("[:parallel {{:mode {mode} :how-many 1}} [:success]]");
        let ok = format!(
            "[:sequence {} {}]",
            parallel(":success"),
            parallel(":success")
        );
        assert!(crate::compile_str("t.edn", &ok, &crate::Registry::new()).is_ok());
        let text = format!(
            "[:sequence {} {} {} [:parallel {{:policy :success}} [:success]]]",
            parallel(":success"),
            parallel(":failure"),
            parallel(":sucess"),
        );
        let expected = [
            (Code::BadOptionValue, vec![2]),
            (Code::BadOptionValue, vec![3]),
        ];
        assert_eq!(errors(&text), expected);
        let text = format!(
            "[:sequence {} [:parallel {{:policy :success}} [:success]]]",
            parallel(":success"),
        );
        assert_eq!(errors(&text), [(Code::BadOptionValue, vec![1])]);
    }

    /// An operator symbol the check accepted is accepted again by its
    /// code; another symbol is still checked.
    #[test]
    fn an_accepted_operator_is_remembered() {
        use crate::diag::Code;
        let test = |oper: &str| format!("[:test? {{:key :k :oper {oper} :val 1}}]");
        let ok = format!("[:sequence {} {} {}]", test("<="), test("<="), test(">"));
        assert!(crate::compile_str("t.edn", &ok, &crate::Registry::new()).is_ok());
        let text = format!("[:sequence {} {} {}]", test("<="), test("=<"), test("<="));
        assert_eq!(errors(&text), [(Code::BadOptionValue, vec![1])]);
    }

    #[test]
    fn the_readers_count_of_node_forms_is_the_nodes_of_a_tree() {
        // Vectors in options maps (key paths, dynamic options) and
        // discarded nodes are not counted.
        let tree = "[:sequence {:id :s} [:inc! {:key [:a :b]}] #_ [:success] \
                    [:selector [:define! {:key :k :val [:aido/db :n]}] [:failure]]]";
        assert_eq!(counts(tree), (Some(5), 5));
        for file in [
            "examples/npc.edn",
            "examples/chatbot.edn",
            "examples/greet.edn",
        ] {
            let text = std::fs::read_to_string(file).unwrap();
            let (hint, walked) = counts(&text);
            assert_eq!(hint, Some(walked), "{file}");
        }
        // Not a tree: the count is at least the nodes, never fewer.
        assert_eq!(counts("[1 [:a] #{[:b]}]"), (Some(2), 0));
        assert_eq!(counts(":a"), (None, 0));
    }
}
