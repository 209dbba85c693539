//! Includes: `[:include {:file "flee.edn" :as :flee :args {..}}]`, expanded
//! at compile time into the tree of that file, its `[:aido/arg ..]` forms
//! replaced by the arguments (or the defaults its `:aido/params` declares).
//!
//! Expansion works on the data and its spans before the compiler's walk: it
//! builds one value and one span table in the space of a [`SourceMap`], so
//! the compiler, which knows nothing of includes, points each diagnostic
//! into the file its form came from. Ids stay apart: the included root takes
//! the include's id (its `:as`, its `:id`, else the id of its position) and
//! every explicit `:id` inside becomes `"INCLUDE-ID/ID"`; derived ids extend
//! the root's, so two uses of one file never share memory.

use std::collections::HashMap;
use std::fmt::Write;
use std::rc::Rc;
use std::sync::Arc;

use super::loader::Loader;
use super::params::{Param, ParamType, check_arg, kw, root_params, shift, span_of, type_name};
use crate::diag::{Code, Diagnostic, did_you_mean};
use crate::read::Document;
use crate::source::{FileId, FormSpans, Source, SourceMap, Span, SpanEntry, Spans};
use crate::value::{Keyword, Map, Value};

/// How deep includes may nest (a file that includes a file ... ).
pub const MAX_INCLUDE_DEPTH: usize = 16;

/// How many bytes of included text a tree may expand, each file's text
/// counted once per use (256 MiB).
pub const MAX_EXPANDED_TEXT: usize = 256 << 20;

/// How many nodes a tree may have once its includes are expanded: an
/// include bomb (each file including the next twice) is refused, not
/// expanded exponentially.
pub const MAX_EXPANDED_NODES: usize = 100_000;

/// The result of expanding a tree's includes.
pub(crate) struct Expanded {
    pub(crate) value: Value,
    pub(crate) spans: Spans,
    pub(crate) files: SourceMap,
    /// Problems found, warnings included.
    pub(crate) diags: Vec<Diagnostic>,
}

/// Whether the tree `value`'s root declares parameters (`:aido/params`).
pub(crate) fn declares_params(value: &Value) -> bool {
    value
        .as_seq()
        .and_then(|items| items.get(1))
        .and_then(Value::as_map)
        .is_some_and(|m| m.contains_key(&kw("aido/params")))
}

/// Whether the tree `value` has an `:include` node.
pub(crate) fn has_include(value: &Value) -> bool {
    fn walk(value: &Value, include: Keyword, depth: usize) -> bool {
        match value {
            Value::Vector(items) if depth <= crate::read::MAX_DEPTH => match items.first() {
                Some(Value::Keyword(k)) if *k == include => true,
                Some(Value::Keyword(_)) => items
                    .iter()
                    .skip(1)
                    .any(|c| matches!(c, Value::Vector(_)) && walk(c, include, depth + 1)),
                _ => false,
            },
            _ => false,
        }
    }
    walk(value, Keyword::new("include"), 0)
}

/// Expands the includes of the tree `value` read from `source`.
pub(crate) fn expand(
    value: &Value,
    spans: Option<FormSpans<'_>>,
    source: Arc<Source>,
    loader: &dyn Loader,
) -> Expanded {
    let mut ex = Expander {
        loader,
        files: SourceMap::single(source.clone()),
        entries: Vec::new(),
        diags: Vec::new(),
        nodes: 0,
        chain: vec![source.name().to_owned()],
        too_big: false,
        docs: HashMap::new(),
        text_used: 0,
        path: Vec::new(),
    };
    // The compiled file may declare parameters too; it then gets their defaults.
    let root_params = root_params(&mut |c, m, at| ex.error(c, m, at), value, spans, 0);
    let frame = Frame {
        base: 0,
        params: root_params,
        args: Vec::new(),
        include_span: None,
    };
    for p in &frame.params {
        if p.default.is_none() {
            ex.error(
                Code::IncludeArgument,
                format!(
                    "parameter {} has no default, and this file is compiled on its own: \
                     include it with `:args`",
                    Value::Keyword(p.name)
                ),
                p.span,
            );
        }
    }
    let ctx = Ctx {
        base: 0,
        subst: Some(&frame),
        prefix: None,
    };
    let (value, entry) = ex.node(value, spans, ctx, "0", RootOf::File(None));
    ex.unused(&frame);
    ex.entries.push(entry);
    Expanded {
        value,
        spans: Spans {
            entries: ex.entries,
            node_forms: 0,
        },
        files: ex.files,
        diags: ex.diags,
    }
}

/// An argument: its data, where it was written and the parameters it may
/// itself use (those of the file it was written in).
struct Arg<'a> {
    value: &'a Value,
    spans: Option<FormSpans<'a>>,
    base: u32,
    subst: Option<&'a Frame<'a>>,
}

/// One use of a file: its parameters and the arguments given.
struct Frame<'a> {
    base: u32,
    params: Vec<Param<'a>>,
    /// By parameter: the argument given, if any.
    args: Vec<Option<Arg<'a>>>,
    /// The include that made this use (in the map's space).
    include_span: Option<Span>,
}

/// Where data is being expanded: the base of its file, the parameters it
/// may use, the id text explicit ids are put under.
#[derive(Clone, Copy)]
struct Ctx<'a> {
    base: u32,
    subst: Option<&'a Frame<'a>>,
    prefix: Option<&'a str>,
}

/// Whether a node is the root of a file (whose `:aido/params` is dropped),
/// and the id an include gives it.
#[derive(Clone, Copy)]
enum RootOf<'v> {
    No,
    File(Option<&'v Value>),
}

struct Expander<'l> {
    loader: &'l dyn Loader,
    files: SourceMap,
    entries: Vec<SpanEntry>,
    diags: Vec<Diagnostic>,
    nodes: usize,
    /// The files being expanded, outermost first.
    chain: Vec<String>,
    too_big: bool,
    /// The included files read, by id.
    docs: HashMap<FileId, Rc<Document>>,
    /// The bytes of included text expanded so far, a file's once per use.
    text_used: usize,
    /// The node being expanded: child indices from the root of the
    /// expanded tree, as the compiler's diagnostics give them.
    path: Vec<usize>,
}

/// `[:aido/arg :name]`'s name, or `Err` for a malformed one, or `None` if
/// `items` is no such form.
fn arg_ref(items: &[Value]) -> Option<Result<Keyword, ()>> {
    match items.first() {
        Some(Value::Keyword(k)) if k.as_str() == "aido/arg" => Some(match items {
            [_, Value::Keyword(name)] => Ok(*name),
            _ => Err(()),
        }),
        _ => None,
    }
}

/// Whether `item` is `[:aido/arg :p]` for a `:key-path` parameter of the
/// file being expanded.
fn is_key_path_arg(item: &Value, ctx: Ctx<'_>) -> bool {
    let Value::Vector(items) = item else {
        return false;
    };
    let Some(Ok(name)) = arg_ref(items) else {
        return false;
    };
    ctx.subst.is_some_and(|frame| {
        frame
            .params
            .iter()
            .any(|p| p.name == name && matches!(p.ty, ParamType::KeyPath))
    })
}

/// The id text of an explicit id, as the compiler builds children's ids.
fn id_text(id: &Value) -> String {
    let mut s = String::new();
    super::push_id_text(&mut s, id);
    s
}

impl<'l> Expander<'l> {
    fn error(&mut self, code: Code, message: String, span: Option<Span>) {
        self.diags
            .push(Diagnostic::new(code, message).at(span, &self.path));
    }

    /// Copies the spans of `spans` (an unchanged form) into the table.
    fn copy(&mut self, spans: Option<FormSpans<'_>>, base: u32) -> SpanEntry {
        let Some(spans) = spans else {
            return SpanEntry::leaf(Span::default());
        };
        let n = spans.n_children();
        let kids: Vec<SpanEntry> = (0..n).map(|i| self.copy(spans.child(i), base)).collect();
        self.close(shift(spans.span(), base), kids)
    }

    /// The entry of a form whose elements' entries are `kids`.
    fn close(&mut self, span: Span, kids: Vec<SpanEntry>) -> SpanEntry {
        let first_child = u32::try_from(self.entries.len()).unwrap_or(u32::MAX);
        let n_children = u32::try_from(kids.len()).unwrap_or(u32::MAX);
        self.entries.extend(kids);
        SpanEntry {
            span,
            first_child,
            n_children,
        }
    }

    /// Expands data (an option value): `[:aido/arg ..]` in vectors and maps
    /// is replaced; anything else is copied.
    fn data(
        &mut self,
        v: &Value,
        spans: Option<FormSpans<'_>>,
        ctx: Ctx<'_>,
    ) -> (Value, SpanEntry) {
        let span = span_of(spans, ctx.base).unwrap_or_default();
        match v {
            Value::Vector(items) => {
                if let Some(name) = arg_ref(items) {
                    return self.substitute(name, span, ctx, None);
                }
                let mut out = Vec::with_capacity(items.len());
                let mut kids = Vec::with_capacity(items.len());
                // In `[:aido/db k ..]`, a key path argument is spliced in:
                // its keys continue the path.
                let db_path = matches!(
                    items.first(),
                    Some(Value::Keyword(k)) if k.as_str() == "aido/db"
                );
                for (i, item) in items.iter().enumerate() {
                    let splice = i > 0 && db_path && is_key_path_arg(item, ctx);
                    let (v, e) = self.data(item, spans.and_then(|s| s.child(i)), ctx);
                    match &v {
                        Value::Vector(keys) if splice => {
                            let from = e.first_child as usize;
                            let n = e.n_children as usize;
                            let entries: Vec<SpanEntry> = self
                                .entries
                                .get(from..from + n)
                                .map(<[SpanEntry]>::to_vec)
                                .unwrap_or_default();
                            for (k, entry) in keys.iter().zip(entries) {
                                out.push(k.clone());
                                kids.push(entry);
                            }
                        }
                        _ => {
                            out.push(v);
                            kids.push(e);
                        }
                    }
                }
                let entry = self.close(span, kids);
                (Value::Vector(out.into()), entry)
            }
            Value::Map(map) => self.map(map, spans, ctx, span, |_, _| None),
            other => (other.clone(), self.copy(spans, ctx.base)),
        }
    }

    /// Expands a map, letting `replace` give an entry's new value (or
    /// `Some(None)` to drop it).
    fn map(
        &mut self,
        map: &Map,
        spans: Option<FormSpans<'_>>,
        ctx: Ctx<'_>,
        span: Span,
        mut replace: impl FnMut(&Value, &Value) -> Option<Option<Value>>,
    ) -> (Value, SpanEntry) {
        let mut out = Map::default();
        let mut kids = Vec::with_capacity(2 * map.len());
        for (i, (k, v)) in map.iter().enumerate() {
            let k_spans = spans.and_then(|s| s.child(2 * i));
            let v_spans = spans.and_then(|s| s.child(2 * i + 1));
            let (key, key_entry) = self.data(k, k_spans, ctx);
            let (value, value_entry) = match replace(k, v) {
                Some(None) => continue,
                Some(Some(new)) => (new, self.copy(v_spans, ctx.base)),
                None => self.data(v, v_spans, ctx),
            };
            if out.contains_key(&key) {
                self.error(
                    Code::IncludeArgument,
                    format!(
                        "the map has the key {} twice once arguments are put in",
                        super::short(&key)
                    ),
                    Some(key_entry.span),
                );
                continue;
            }
            out.insert(key, value);
            kids.push(key_entry);
            kids.push(value_entry);
        }
        let entry = self.close(span, kids);
        (Value::Map(Box::new(out)), entry)
    }

    /// What `[:aido/arg name]` (at `span`) stands for: data, or, given the
    /// id text of its place, a node.
    fn substitute(
        &mut self,
        name: Result<Keyword, ()>,
        span: Span,
        ctx: Ctx<'_>,
        place_id: Option<&str>,
    ) -> (Value, SpanEntry) {
        let nothing = (Value::Nil, SpanEntry::leaf(span));
        let Ok(name) = name else {
            self.error(
                Code::IncludeArgument,
                "`[:aido/arg :name]` takes one keyword, the parameter's name".to_owned(),
                Some(span),
            );
            return nothing;
        };
        let frame = match ctx.subst {
            Some(frame) => frame,
            None => {
                self.error(
                    Code::IncludeArgument,
                    format!(
                        "{} is used in a parameter's default, where no parameter can be",
                        Value::Keyword(name)
                    ),
                    Some(span),
                );
                return nothing;
            }
        };
        let Some(i) = frame.params.iter().position(|p| p.name == name) else {
            let help = did_you_mean(name.as_str(), frame.params.iter().map(|p| p.name.as_str()))
                .map(|s| format!(" (did you mean `:{s}`?)"))
                .unwrap_or_default();
            self.error(
                Code::IncludeArgument,
                format!(
                    "no parameter {} is declared in this file's `:aido/params`{help}",
                    Value::Keyword(name)
                ),
                Some(span),
            );
            return nothing;
        };
        let param = &frame.params[i];
        param.used.set(true);
        match (&param.ty, place_id) {
            (ParamType::Tree, None) => {
                self.error(
                    Code::IncludeArgument,
                    format!(
                        "parameter {} is a :tree: it stands only where a child node may",
                        Value::Keyword(name)
                    ),
                    Some(span),
                );
                return nothing;
            }
            (ty @ (ParamType::Value(..) | ParamType::KeyPath), Some(_)) => {
                self.error(
                    Code::IncludeArgument,
                    format!(
                        "parameter {} is {}, not a :tree: it cannot stand as a child node",
                        Value::Keyword(name),
                        type_name(ty)
                    ),
                    Some(span),
                );
                return nothing;
            }
            _ => {}
        }
        match (frame.args.get(i).and_then(Option::as_ref), param.default) {
            (Some(arg), _) => {
                let at = Ctx {
                    base: arg.base,
                    subst: arg.subst,
                    prefix: ctx.prefix,
                };
                match place_id {
                    Some(id) => self.node(arg.value, arg.spans, at, id, RootOf::No),
                    None => self.data(arg.value, arg.spans, at),
                }
            }
            (None, Some((value, spans))) => {
                let at = Ctx {
                    base: frame.base,
                    subst: None,
                    prefix: ctx.prefix,
                };
                match place_id {
                    Some(id) => self.node(value, spans, at, id, RootOf::No),
                    None => self.data(value, spans, at),
                }
            }
            // Missing: reported at the include.
            (None, None) => nothing,
        }
    }

    /// Expands a node: its options, its children, and an include in its place.
    fn node(
        &mut self,
        v: &Value,
        spans: Option<FormSpans<'_>>,
        ctx: Ctx<'_>,
        place_id: &str,
        root: RootOf<'_>,
    ) -> (Value, SpanEntry) {
        let span = span_of(spans, ctx.base).unwrap_or_default();
        self.nodes += 1;
        if self.nodes > MAX_EXPANDED_NODES {
            if !self.too_big {
                self.too_big = true;
                self.error(
                    Code::IncludeLimit,
                    format!(
                        "the tree has more than {MAX_EXPANDED_NODES} nodes once its includes \
                         are expanded"
                    ),
                    Some(span),
                );
            }
            return (Value::Nil, SpanEntry::leaf(span));
        }
        let Value::Vector(items) = v else {
            return self.data(v, spans, ctx);
        };
        if let Some(name) = arg_ref(items) {
            return self.substitute(name, span, ctx, Some(place_id));
        }
        let Some(Value::Keyword(head)) = items.first() else {
            return self.data(v, spans, ctx);
        };
        if head.as_str() == "include" {
            return self.include(items, spans, ctx, place_id, span);
        }
        let has_options = matches!(items.get(1), Some(Value::Map(_)));
        let first_child = if has_options { 2 } else { 1 };
        let mut out = Vec::with_capacity(items.len() + 1);
        let mut kids = Vec::with_capacity(items.len() + 1);
        out.push(Value::Keyword(*head));
        kids.push(self.copy(spans.and_then(|s| s.child(0)), ctx.base));
        // The id this node will have: an include's, its own (put under the
        // include's), else its place's.
        let given = match root {
            RootOf::File(given) => given.cloned(),
            RootOf::No => None,
        };
        let id_key = kw("id");
        let params_key = kw("aido/params");
        let is_root = matches!(root, RootOf::File(_));
        let mut own_id = given.clone();
        match items.get(1) {
            Some(Value::Map(m)) => {
                let opt_spans = spans.and_then(|s| s.child(1));
                let opt_span = span_of(opt_spans, ctx.base).unwrap_or(span);
                let (mut opts, mut entry) = self.map(m, opt_spans, ctx, opt_span, |k, _| {
                    (is_root && *k == params_key).then_some(None)
                });
                if let Some(map) = opts.as_map_mut() {
                    // An explicit id (arguments put in) goes under the include's.
                    if own_id.is_none() {
                        own_id = map.get(&id_key).map(|id| match ctx.prefix {
                            Some(prefix) => Value::Str(crate::value::ArcStr::from(format!(
                                "{prefix}/{}",
                                id_text(id)
                            ))),
                            None => id.clone(),
                        });
                    }
                    match (map.get_mut(&id_key), &own_id) {
                        (Some(slot), Some(id)) => *slot = id.clone(),
                        (None, Some(id)) => {
                            map.insert(id_key.clone(), id.clone());
                            // The new entry's spans: the include's.
                            let mut es: Vec<SpanEntry> = self
                                .entries
                                .get(entry.first_child as usize..)
                                .map(|s| {
                                    s.iter().take(entry.n_children as usize).copied().collect()
                                })
                                .unwrap_or_default();
                            es.push(SpanEntry::leaf(span));
                            es.push(SpanEntry::leaf(span));
                            entry = self.close(entry.span, es);
                        }
                        _ => {}
                    }
                }
                out.push(opts);
                kids.push(entry);
            }
            _ => {
                if let Some(id) = &given {
                    out.push(Value::map_from([(id_key.clone(), id.clone())]));
                    let es = vec![SpanEntry::leaf(span), SpanEntry::leaf(span)];
                    let entry = self.close(span, es);
                    kids.push(entry);
                }
            }
        }
        let own_text = match &own_id {
            Some(id) => id_text(id),
            None => place_id.to_owned(),
        };
        for (i, child) in items.iter().enumerate().skip(first_child) {
            let mut child_id = own_text.clone();
            let _ = write!(child_id, ".{}", i - first_child);
            self.path.push(i - first_child);
            let (v, e) = self.node(
                child,
                spans.and_then(|s| s.child(i)),
                ctx,
                &child_id,
                RootOf::No,
            );
            self.path.pop();
            out.push(v);
            kids.push(e);
        }
        let entry = self.close(span, kids);
        (Value::Vector(out.into()), entry)
    }

    /// Expands `[:include {:file .. :as .. :id .. :args {..}}]`.
    fn include(
        &mut self,
        items: &[Value],
        spans: Option<FormSpans<'_>>,
        ctx: Ctx<'_>,
        place_id: &str,
        span: Span,
    ) -> (Value, SpanEntry) {
        let nothing = (Value::Nil, SpanEntry::leaf(span));
        let head_span = span_of(spans.and_then(|s| s.child(0)), ctx.base).or(Some(span));
        let (Some(Value::Map(opts)), 2) = (items.get(1), items.len()) else {
            self.error(
                Code::BadInclude,
                "an include is `[:include {:file \"f.edn\" :as :name :args {..}}]`, without \
                 children (pass a tree as an argument of type :tree)"
                    .to_owned(),
                head_span,
            );
            return nothing;
        };
        let opt_spans = spans.and_then(|s| s.child(1));
        let mut file = None;
        let mut own_id = None;
        let mut args: Option<(&Map, Option<FormSpans<'_>>)> = None;
        for (i, (k, v)) in opts.iter().enumerate() {
            let v_spans = opt_spans.and_then(|s| s.child(2 * i + 1));
            let v_span = span_of(v_spans, ctx.base);
            match k.as_keyword().map(|k| k.as_str()) {
                Some("file") => match v.as_str() {
                    Some(path) => file = Some((path, v_span)),
                    None => self.error(
                        Code::BadInclude,
                        format!(
                            "`:file` is a string, the path of the file, found {}",
                            v.type_name()
                        ),
                        v_span,
                    ),
                },
                Some("as" | "id") => own_id = Some(v),
                Some("args") => match v.as_map() {
                    Some(m) => args = Some((m, v_spans)),
                    None => self.error(
                        Code::BadInclude,
                        format!(
                            "`:args` is a map from parameter names to values, found {}",
                            v.type_name()
                        ),
                        v_span,
                    ),
                },
                Some("doc") => {}
                _ => self.error(
                    Code::BadInclude,
                    format!(
                        "an include takes :file, :as, :id, :args and :doc, not `{}`",
                        super::short(k)
                    ),
                    span_of(opt_spans.and_then(|s| s.child(2 * i)), ctx.base),
                ),
            }
        }
        let Some((path, file_span)) = file else {
            if !opts.contains_key(&kw("file")) {
                self.error(
                    Code::BadInclude,
                    "an include needs `:file`, the path of the file".to_owned(),
                    head_span,
                );
            }
            return nothing;
        };
        // The include's id: the root of the included tree takes it.
        let id = match own_id {
            Some(id) => match ctx.prefix {
                Some(prefix) => Value::Str(crate::value::ArcStr::from(format!(
                    "{prefix}/{}",
                    id_text(id)
                ))),
                None => id.clone(),
            },
            None => Value::Str(crate::value::ArcStr::from(place_id)),
        };
        let id_prefix = id_text(&id);
        // The file: resolved against the file the include is written in.
        let from = self
            .files
            .locate(Span::new(ctx.base as usize, ctx.base as usize))
            .and_then(|at| self.files.source(at.file))
            .map(|s| s.name().to_owned())
            .unwrap_or_default();
        let name = match self.loader.resolve(&from, path) {
            Ok(name) => name,
            Err(e) => {
                self.error(
                    Code::IncludeFile,
                    format!("cannot include \"{path}\": {e}"),
                    file_span,
                );
                return nothing;
            }
        };
        if let Some(at) = self.chain.iter().position(|f| *f == name) {
            let mut shown: Vec<&str> = self.chain[at..].iter().map(String::as_str).collect();
            shown.push(&name);
            self.error(
                Code::IncludeCycle,
                format!("the include makes a cycle: {}", shown.join(" -> ")),
                file_span,
            );
            return nothing;
        }
        if self.chain.len() > MAX_INCLUDE_DEPTH {
            self.error(
                Code::IncludeLimit,
                format!("includes nest more than {MAX_INCLUDE_DEPTH} files deep"),
                file_span,
            );
            return nothing;
        }
        let file_id = match self.files.find(&name) {
            Some(id) => id,
            None => {
                let text = match self.loader.load(&name) {
                    Ok(text) => text,
                    Err(e) => {
                        let shown = if name == path {
                            String::new()
                        } else {
                            format!(" ({name})")
                        };
                        self.error(
                            Code::IncludeFile,
                            format!("cannot include \"{path}\"{shown}: {e}"),
                            file_span,
                        );
                        return nothing;
                    }
                };
                match self
                    .files
                    .add(Arc::new(Source::new(name.clone(), text)), Some(span))
                {
                    Some(id) => id,
                    None => {
                        self.error(
                            Code::IncludeLimit,
                            "the included files are too large together".to_owned(),
                            file_span,
                        );
                        return nothing;
                    }
                }
            }
        };
        let Some(source) = self.files.source(file_id).cloned() else {
            return nothing;
        };
        let base = self.files.base(file_id);
        // Every use counts its file's text: many uses of a large file are
        // refused as an include bomb is.
        self.text_used = self.text_used.saturating_add(source.text().len());
        if self.text_used > MAX_EXPANDED_TEXT {
            if !self.too_big {
                self.too_big = true;
                self.error(
                    Code::IncludeLimit,
                    format!(
                        "the included files' texts come to more than {MAX_EXPANDED_TEXT} bytes \
                         over all their uses"
                    ),
                    file_span,
                );
            }
            return nothing;
        }
        // A file is read once, however often it is used.
        let doc = match self.docs.get(&file_id) {
            Some(doc) => Rc::clone(doc),
            None => match crate::read::read(source) {
                Ok(doc) => {
                    let doc = Rc::new(doc);
                    self.docs.insert(file_id, Rc::clone(&doc));
                    doc
                }
                Err(e) => {
                    self.error(Code::Read, e.kind.to_string(), Some(shift(e.span, base)));
                    return nothing;
                }
            },
        };
        let root_spans = Some(doc.spans.root());
        let params = root_params(
            &mut |c, m, at| self.error(c, m, at),
            &doc.value,
            root_spans,
            base,
        );
        let mut given: Vec<Option<Arg<'_>>> = params.iter().map(|_| None).collect();
        if let Some((args, args_spans)) = args {
            for (i, (k, v)) in args.iter().enumerate() {
                let k_span = span_of(args_spans.and_then(|s| s.child(2 * i)), ctx.base);
                let v_spans = args_spans.and_then(|s| s.child(2 * i + 1));
                let found = k
                    .as_keyword()
                    .and_then(|k| params.iter().position(|p| p.name == k));
                let Some(j) = found else {
                    let help = k
                        .as_keyword()
                        .and_then(|k| {
                            did_you_mean(k.as_str(), params.iter().map(|p| p.name.as_str()))
                        })
                        .map(|s| format!(" (did you mean `:{s}`?)"))
                        .unwrap_or_default();
                    let declared: Vec<String> = params
                        .iter()
                        .map(|p| Value::Keyword(p.name).to_string())
                        .collect();
                    self.error(
                        Code::IncludeArgument,
                        format!(
                            "{name} has no parameter {}{help}; it declares {}",
                            super::short(k),
                            if declared.is_empty() {
                                "none".to_owned()
                            } else {
                                declared.join(" ")
                            }
                        ),
                        k_span,
                    );
                    continue;
                };
                let param = &params[j];
                if let Err(why) = check_arg(&param.ty, v) {
                    self.error(
                        Code::IncludeArgument,
                        format!(
                            "argument {} must be {}: {why}",
                            Value::Keyword(param.name),
                            type_name(&param.ty)
                        ),
                        span_of(v_spans, ctx.base),
                    );
                    continue;
                }
                given[j] = Some(Arg {
                    value: v,
                    spans: v_spans,
                    base: ctx.base,
                    subst: ctx.subst,
                });
            }
        }
        for (p, g) in params.iter().zip(&given) {
            if g.is_none() && p.default.is_none() {
                self.error(
                    Code::IncludeArgument,
                    format!(
                        "missing argument {} ({}) for {name}",
                        Value::Keyword(p.name),
                        type_name(&p.ty)
                    ),
                    head_span,
                );
            }
        }
        let frame = Frame {
            base,
            params,
            args: given,
            include_span: Some(span),
        };
        let inner = Ctx {
            base,
            subst: Some(&frame),
            prefix: Some(&id_prefix),
        };
        self.chain.push(name);
        let out = self.node(
            &doc.value,
            root_spans,
            inner,
            place_id,
            RootOf::File(Some(&id)),
        );
        self.chain.pop();
        self.unused(&frame);
        out
    }

    /// Warns of the parameters a use of a file never used.
    fn unused(&mut self, frame: &Frame<'_>) {
        if self.too_big {
            return;
        }
        for p in &frame.params {
            if !p.used.get() {
                self.diags.push(
                    Diagnostic::new(
                        Code::UnusedParam,
                        format!(
                            "parameter {} is declared but never used (`[:aido/arg {}]`)",
                            Value::Keyword(p.name),
                            Value::Keyword(p.name)
                        ),
                    )
                    .at(p.span.or(frame.include_span), &self.path),
                );
            }
        }
    }
}
