//! Stubs: nodes replaced, for a test or a one-off run, by a scripted behaviour.
//!
//! A stub is named by a node id (`:patrol`, `"0.1"`) or by a node type
//! (`:guard/sees?`, which the registry need not know) and says what the
//! node returns:
//!
//! | written as | behaviour |
//! |---|---|
//! | `:success` | that status every time (`:success :failure :running :error`) |
//! | `{:status :success :db {:seen true}}` | that status, merging `:db` into the db each time |
//! | `[:failure :failure :success]` | at tick n, element n (from 1; the last repeats); elements are statuses or maps |
//! | `{:status :success :after 2}` | a deferred completion: Running the first 2 times it is ticked, then the status (and `:db`); a halt starts it over |
//!
//! A map may also have `:message` (the error's text, with `:status :error`).
//!
//! **How a stub takes a node's place.** The tree is compiled as it is, so
//! every id, derived or explicit, is the one the real tree has, and every
//! compile check still applies. Node types that the registry does not know
//! and that a stub names (by the type, or by the explicit `:id` of a node
//! of that type) are first registered as placeholders that take any
//! options and children. After compiling, each stubbed node's
//! behaviour is replaced by the stub's (its children stay in the tree but
//! are not ticked; its preconditions still apply). A key that is both a
//! node's id and a node type names the node. The sequence of a stub counts
//! the run's ticks, which the host tells it with [`Stubs::set_tick`];
//! a deferred completion counts in the node's memory, in the db.
//!
//! ```
//! use aido::{Registry, Status, read_value, run_tick, stub::Stubs};
//!
//! let stubs = Stubs::from_value(&read_value("{:guard/sees? [:failure :success]}").unwrap()).unwrap();
//! let tree = read_value("[:selector [:guard/sees?] [:define! {:key :idle :val true}]]").unwrap();
//! let tree = stubs.compile(&tree, &Registry::new()).unwrap();
//! stubs.set_tick(1);
//! assert_eq!(run_tick(read_value("{}").unwrap(), &tree).db.to_string(), "{:idle true}");
//! stubs.set_tick(2);
//! assert_eq!(run_tick(read_value("{}").unwrap(), &tree).status, Status::Success);
//! ```

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::compile::compile;
use crate::diag::Diagnostics;
use crate::extend::{NodeError, NodeType};
use crate::read::Document;
use crate::registry::Registry;
use crate::source::{Span, Spans};
use crate::spec::Arity;
use crate::tick::{NodeCtx, Status};
use crate::tree::{Kind, Tree};
use crate::value::{Keyword, Map, Value};

/// One scripted answer of a stub.
#[derive(Debug, Clone, PartialEq)]
pub struct StubStep {
    /// What the node returns (Success, Failure, Running or Error).
    pub status: Status,
    /// Merged into the db, key by key, when the node returns `status`.
    pub db: Map,
    /// Running this many times first (a deferred completion); 0: at once.
    pub after: u64,
    /// The error's text, when `status` is Error.
    pub message: Option<String>,
}

/// What a stubbed node does: one step, or one a tick (the last repeats).
#[derive(Debug, Clone, PartialEq)]
pub struct Stub {
    /// The steps by tick: tick n takes step n-1, or the last one.
    pub steps: Vec<StubStep>,
}

impl Stub {
    /// A stub that always returns `status`.
    pub fn status(status: Status) -> Stub {
        Stub {
            steps: vec![StubStep {
                status,
                db: Map::default(),
                after: 0,
                message: None,
            }],
        }
    }

    /// A stub read from its EDN form (see [the module](crate::stub)).
    pub fn from_value(value: &Value) -> Result<Stub, String> {
        let steps = match value {
            Value::Vector(items) if items.is_empty() => {
                return Err("a sequence of statuses needs at least one".to_owned());
            }
            Value::Vector(items) => items
                .iter()
                .enumerate()
                .map(|(i, item)| step(item).map_err(|e| format!("element {i}: {e}")))
                .collect::<Result<Vec<_>, _>>()?,
            other => vec![step(other)?],
        };
        Ok(Stub { steps })
    }

    /// The step for tick `tick` (from 1).
    fn step_at(&self, tick: u64) -> Option<&StubStep> {
        let i = usize::try_from(tick.saturating_sub(1)).unwrap_or(usize::MAX);
        self.steps.get(i).or_else(|| self.steps.last())
    }
}

/// The status a stub returns: any but Skipped, which belongs to preconditions.
fn status_of(value: &Value) -> Result<Status, String> {
    match Status::from_value(value) {
        Some(status) if status != Status::Skipped => Ok(status),
        _ => Err(format!(
            "a stub's status is :success, :failure, :running or :error, found `{}`",
            value.abbreviated(40).0
        )),
    }
}

fn step(value: &Value) -> Result<StubStep, String> {
    let Value::Map(map) = value else {
        return Ok(StubStep {
            status: status_of(value)?,
            db: Map::default(),
            after: 0,
            message: None,
        });
    };
    for key in map.keys() {
        let known = key
            .as_keyword()
            .is_some_and(|k| matches!(k.as_str(), "status" | "db" | "after" | "message"));
        if !known {
            return Err(format!(
                "unknown key `{}` in a stub; it takes :status :db :after :message",
                key.abbreviated(40).0
            ));
        }
    }
    let status = match map.get(&Value::keyword("status")) {
        Some(s) => status_of(s)?,
        None => return Err("a stub map needs `:status`".to_owned()),
    };
    let db = match map.get(&Value::keyword("db")) {
        None => Map::default(),
        Some(Value::Map(db)) => db.as_ref().clone(),
        Some(other) => {
            return Err(format!(
                "a stub's `:db` is a map merged into the db, found {}",
                other.type_with_article()
            ));
        }
    };
    let after = match map.get(&Value::keyword("after")) {
        None => 0,
        Some(Value::Int(n)) if *n >= 0 => *n as u64,
        Some(other) => {
            return Err(format!(
                "a stub's `:after` is a count of ticks, found `{}`",
                other.abbreviated(40).0
            ));
        }
    };
    let message = match map.get(&Value::keyword("message")) {
        None => None,
        Some(Value::Str(s)) => Some(s.to_string()),
        Some(other) => {
            return Err(format!(
                "a stub's `:message` is a string, found {}",
                other.type_with_article()
            ));
        }
    };
    Ok(StubStep {
        status,
        db,
        after,
        message,
    })
}

/// What is wrong with a set of stubs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StubErrorKind {
    /// The stubs are not a map of node ids or types to stubs.
    NotAMap,
    /// A stub is malformed.
    BadStub,
    /// A stub names no node of the tree, by id or by type.
    NoMatch,
}

/// One problem with a stub, with where it was written.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct StubError {
    /// What kind of problem.
    pub kind: StubErrorKind,
    /// The stub's key, if the problem is one stub's.
    pub key: Option<Value>,
    /// What is wrong.
    pub message: String,
    /// Where, when the stubs were read from text.
    pub span: Option<Span>,
}

impl fmt::Display for StubError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for StubError {}

/// Why a tree could not be compiled with its stubs.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum StubbedCompileError {
    /// The tree does not compile.
    Compile(Diagnostics),
    /// A stub names nothing in the tree.
    Stub(StubError),
}

impl fmt::Display for StubbedCompileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StubbedCompileError::Compile(d) => f.write_str(&d.render()),
            StubbedCompileError::Stub(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for StubbedCompileError {}

#[derive(Debug, Clone)]
struct Entry {
    key: Value,
    stub: Arc<Stub>,
    span: Option<Span>,
}

/// Stubs by node id or node type, and the tick the run is at.
///
/// A stubbed tree shares the tick counter with the `Stubs` it was made
/// from: set it before each tick ([`Stubs::set_tick`]).
#[derive(Debug, Clone, Default)]
pub struct Stubs {
    entries: Vec<Entry>,
    tick: Arc<AtomicU64>,
}

impl Stubs {
    /// No stubs.
    pub fn new() -> Stubs {
        Stubs::default()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Stubs the node whose id is `key`, or else every node of type `key`.
    pub fn insert(&mut self, key: Value, stub: Stub) -> &mut Stubs {
        self.entries.retain(|e| e.key != key);
        self.entries.push(Entry {
            key,
            stub: Arc::new(stub),
            span: None,
        });
        self
    }

    /// Stubs from their EDN map, `{id-or-type stub ...}`.
    pub fn from_value(value: &Value) -> Result<Stubs, StubError> {
        Stubs::from_value_with_spans(value, None)
    }

    /// Stubs from their EDN map, with the spans it was read with, so that
    /// errors point at the stub concerned.
    pub fn from_value_with_spans(value: &Value, spans: Option<&Spans>) -> Result<Stubs, StubError> {
        Stubs::at_path(value, spans, &[])
    }

    /// Stubs from the map at `path` inside a document read with `spans`.
    pub(crate) fn at_path(
        value: &Value,
        spans: Option<&Spans>,
        path: &[usize],
    ) -> Result<Stubs, StubError> {
        let span_at = |p: &[usize]| spans.and_then(|s| s.span_at(p));
        let Value::Map(map) = value else {
            return Err(StubError {
                kind: StubErrorKind::NotAMap,
                key: None,
                message: format!(
                    "stubs are a map of node ids or node types to stubs, found {}",
                    value.type_with_article()
                ),
                span: span_at(path),
            });
        };
        let mut stubs = Stubs::new();
        for (i, (key, stub)) in map.iter().enumerate() {
            let mut value_path = path.to_vec();
            value_path.push(2 * i + 1);
            let stub = Stub::from_value(stub).map_err(|message| StubError {
                kind: StubErrorKind::BadStub,
                key: Some(key.clone()),
                message: format!("stub {}: {message}", key.abbreviated(40).0),
                span: span_at(&value_path),
            })?;
            let mut key_path = path.to_vec();
            key_path.push(2 * i);
            stubs.entries.push(Entry {
                key: key.clone(),
                stub: Arc::new(stub),
                span: span_at(&key_path),
            });
        }
        Ok(stubs)
    }

    /// Sets the run's tick (from 1), which picks each sequence's step.
    pub fn set_tick(&self, tick: u64) {
        self.tick.store(tick, Ordering::Relaxed);
    }

    /// `registry` with a placeholder for every node type that a stub names,
    /// `tree` uses and the registry does not know.
    pub fn registry_for(&self, tree: &Value, registry: &Registry) -> Registry {
        let keys: HashSet<&Value> = self.entries.iter().map(|e| &e.key).collect();
        let mut used = Vec::new();
        node_types_in(tree, &keys, &mut (HashSet::new(), &mut used), 0);
        let used: Vec<Value> = used.into_iter().map(Value::Keyword).collect();
        self.placeholders(registry, used.iter())
    }

    /// `registry` with a placeholder for each of `names` (keywords) that
    /// it does not know as a node type.
    fn placeholders<'v>(
        &self,
        registry: &Registry,
        names: impl Iterator<Item = &'v Value>,
    ) -> Registry {
        let mut registry = registry.clone();
        for name in names.filter_map(Value::as_keyword) {
            if registry.lookup_node_type(name).is_none() {
                let mut placeholder = NodeType::new(name.as_str()).children(Arity::Any);
                placeholder.open_options = true;
                placeholder.declared = true;
                registry.declare_node_type(placeholder);
            }
        }
        registry
    }

    /// Compiles `tree` (data) against `registry` and the stubs' placeholder
    /// types, then stubs its nodes.
    pub fn compile(&self, tree: &Value, registry: &Registry) -> Result<Tree, StubbedCompileError> {
        let registry = self.registry_for(tree, registry);
        let compiled = compile(tree, &registry).map_err(StubbedCompileError::Compile)?;
        self.apply(compiled).map_err(StubbedCompileError::Stub)
    }

    /// Like [`Stubs::compile`], for a tree read from text (diagnostics
    /// point into it). Given a `Document`, the tree takes its data over;
    /// given a `&Document`, it keeps a copy.
    pub fn compile_document<'a>(
        &self,
        doc: impl Into<std::borrow::Cow<'a, Document>>,
        registry: &Registry,
    ) -> Result<Tree, StubbedCompileError> {
        self.compile_document_with(doc, registry, &crate::compile::NoLoader)
    }

    /// Like [`Stubs::compile_document`], taking the files the tree's
    /// `:include`s name from `loader`.
    pub fn compile_document_with<'a>(
        &self,
        doc: impl Into<std::borrow::Cow<'a, Document>>,
        registry: &Registry,
        loader: &dyn crate::compile::Loader,
    ) -> Result<Tree, StubbedCompileError> {
        let doc = doc.into();
        let registry = self.registry_for(&doc.value, registry);
        // The nodes of included files are not in the document: every node
        // type a stub names gets its placeholder (a stub that names nothing
        // in the tree is still an error).
        let registry = if crate::compile::has_include(&doc.value) {
            self.placeholders(&registry, self.entries.iter().map(|e| &e.key))
        } else {
            registry
        };
        let compiled = crate::compile::compile_document_with(doc, &registry, loader)
            .map_err(StubbedCompileError::Compile)?;
        self.apply(compiled).map_err(StubbedCompileError::Stub)
    }

    /// Like [`Stubs::compile`], for a form inside a document read from
    /// `source` (a scenario's inline tree): diagnostics point into it.
    pub(crate) fn compile_form(
        &self,
        value: &Value,
        spans: crate::source::FormSpans<'_>,
        source: Arc<crate::source::Source>,
        registry: &Registry,
    ) -> Result<Tree, StubbedCompileError> {
        let registry = self.registry_for(value, registry);
        let compiled = crate::compile::compile_form(value, spans, source, &registry)
            .map_err(StubbedCompileError::Compile)?;
        self.apply(compiled).map_err(StubbedCompileError::Stub)
    }

    /// Replaces the behaviour of every stubbed node of a compiled tree. Ids
    /// are looked up first, then node types; a stub that names neither is
    /// an error.
    pub fn apply(&self, tree: Tree) -> Result<Tree, StubError> {
        let by_type = nodes_by_type(&tree);
        if let Some(entry) = self
            .entries
            .iter()
            .find(|e| targets(&tree, &by_type, &e.key).is_empty())
        {
            return Err(StubError {
                kind: StubErrorKind::NoMatch,
                key: Some(entry.key.clone()),
                message: format!(
                    "stub {} names no node of the tree, by id or by node type",
                    entry.key.abbreviated(40).0
                ),
                span: entry.span,
            });
        }
        Ok(self.apply_with(tree, &by_type))
    }

    /// Like [`Stubs::apply`], skipping stubs that name nothing in `tree`
    /// (a trim may have removed a stubbed node).
    pub fn apply_matching(&self, tree: Tree) -> Tree {
        if self.entries.is_empty() {
            return tree;
        }
        let by_type = nodes_by_type(&tree);
        self.apply_with(tree, &by_type)
    }

    /// Stubs the nodes each stub names, found through `by_type` (see
    /// [`nodes_by_type`]): the work grows with the stubs plus the nodes,
    /// not their product.
    fn apply_with(&self, mut tree: Tree, by_type: &HashMap<Keyword, Vec<usize>>) -> Tree {
        // Stubs by node type first, then by id: a node's own stub wins
        // whatever the order the map lists them in.
        let (by_id, by_type_only): (Vec<&Entry>, Vec<&Entry>) = self
            .entries
            .iter()
            .partition(|e| tree.find(&e.key).is_some());
        for entry in by_type_only.into_iter().chain(by_id) {
            let found = targets(&tree, by_type, &entry.key);
            // One node type for every node a stub names: they share a type.
            let mut stubbed: Option<Arc<NodeType>> = None;
            for i in found {
                let Some(node) = tree.nodes.get_mut(i) else {
                    continue;
                };
                let node_type = stubbed
                    .get_or_insert_with(|| Arc::new(self.node_type(node.type_name, &entry.stub)));
                node.kind = Kind::Custom {
                    node_type: Arc::clone(node_type),
                    options: crate::tree::CustomOptions::default(),
                };
            }
        }
        // A stub may run: the nodes above it leave the plain path.
        crate::nodes::mark_plain(&mut tree.nodes, &tree.child_ids);
        tree.closures.reset();
        let (writes_running, reads_memory) = crate::tick::reserved_reach(&tree.nodes);
        tree.writes_running = writes_running;
        // A reader among the dynamic options stays one.
        tree.reads_memory |= reads_memory;
        tree.identity.renew();
        tree
    }

    /// The node type a stubbed node gets: its name kept, the stub's behaviour.
    fn node_type(&self, name: Keyword, stub: &Arc<Stub>) -> NodeType {
        let stub = Arc::clone(stub);
        let tick = Arc::clone(&self.tick);
        NodeType::new(name.as_str())
            .children(Arity::Any)
            .tick(move |ctx| stub_tick(ctx, &stub, tick.load(Ordering::Relaxed)))
    }
}

/// The nodes of `tree` by node type, in tree order.
fn nodes_by_type(tree: &Tree) -> HashMap<Keyword, Vec<usize>> {
    let mut by_type: HashMap<Keyword, Vec<usize>> = HashMap::new();
    for (i, node) in tree.nodes.iter().enumerate() {
        by_type.entry(node.type_name).or_default().push(i);
    }
    by_type
}

/// The nodes a stub's key names: the node with that id, else every node of
/// that type (`by_type` is [`nodes_by_type`] of `tree`).
fn targets(tree: &Tree, by_type: &HashMap<Keyword, Vec<usize>>, key: &Value) -> Vec<usize> {
    match tree.find(key) {
        Some(node) => vec![node.index()],
        None => key
            .as_keyword()
            .and_then(|name| by_type.get(&name))
            .cloned()
            .unwrap_or_default(),
    }
}

/// A stubbed node's tick.
fn stub_tick(ctx: &mut NodeCtx<'_, '_>, stub: &Stub, tick: u64) -> Result<Status, NodeError> {
    let Some(step) = stub.step_at(tick) else {
        return Ok(Status::Success);
    };
    if step.after > 0 {
        let done = ctx
            .memory()
            .and_then(|m| m.get(&Value::keyword("ticks")))
            .and_then(Value::as_int)
            .unwrap_or(0);
        if (done as u64) < step.after {
            let memory = Value::map_from([(Value::keyword("ticks"), Value::Int(done + 1))]);
            ctx.set_memory(Some(memory))?;
            return Ok(Status::Running);
        }
        ctx.set_memory(None)?;
    }
    for (key, value) in &step.db {
        ctx.insert_db(key.clone(), value.clone());
    }
    match step.status {
        Status::Error => Err(NodeError(
            step.message
                .clone()
                .unwrap_or_else(|| "stubbed error".to_owned()),
        )),
        status => Ok(status),
    }
}

/// The node types of `value` that a stub names: by the type itself, or by
/// a node's explicit `:id`. (A node stubbed by its derived id must have a
/// known type.)
fn node_types_in(
    value: &Value,
    keys: &HashSet<&Value>,
    out: &mut (HashSet<Keyword>, &mut Vec<Keyword>),
    depth: usize,
) {
    if depth > crate::read::MAX_DEPTH {
        return;
    }
    if let Value::Vector(items) = value
        && let Some(Value::Keyword(head)) = items.first()
    {
        let id = items.get(1).and_then(|o| o.get(&Value::keyword("id")));
        let named = keys.contains(&Value::Keyword(*head)) || id.is_some_and(|id| keys.contains(id));
        if named && out.0.insert(*head) {
            out.1.push(*head);
        }
        for item in &items[1..] {
            node_types_in(item, keys, out, depth + 1);
        }
    }
}
