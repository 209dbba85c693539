//! Node models: the node types and functions of an application, declared as
//! data so that the tools know them without the application's Rust code.
//!
//! A model is an EDN map:
//!
//! ```clojure
//! {:nodes {:guard/sees? {:doc "Is the intruder within range?" :children 0
//!                        :options {:range {:type :int :required true} :mode {:type :keyword}}}
//!          :guard/patrol {:children :some}}
//!  :functions {dist {:arity 2 :doc "Grid distance"}}
//!  :db {:hunger {:type :int :default 0 :doc "0 to 10"} :replies {:type [:vector :string]}}}
//! ```
//!
//! - `:children` (default 0): a count `n`, the counts allowed `[n m ..]`,
//!   `:some` (one or more), `:any`, or `{:at-least n}`.
//! - an option is `{:type t :required bool :doc "..."}` or just its type
//!   `t`: `:int :number :bool :string :keyword :key :any`, and also
//!   `:count :probability :weights :operator :flag :name`, or
//!   `{:type :one-of :values [:a :b]}`.
//! - `:open-options true` lets a node take options beyond those listed.
//! - a function has `:arity` (same forms as `:children`, default `:any`)
//!   and `:doc`; its name is a symbol or a keyword. A function named like a
//!   standard one (`rand`) replaces it, as the application's own does
//!   (`aido check` warns).
//! - `:db` declares the db's keys: each a type or `{:type t :default v :doc
//!   ".."}`, the types those of options, `:map`, or `[:vector t]`, `[:set t]`,
//!   `[:map-of k v]` (see [`crate::schema`]).
//!
//! [`Registry::declare_model`] adds what a model declares (a declared node
//! type or function ticks into an Error saying it has no behaviour, until a
//! stub replaces it); [`Registry::model`] writes a registry's own node types
//! and functions in the same shape, and [`Registry::reference`] writes every
//! one, built-ins included, with their documentation.
//!
//! ```
//! use aido::{Registry, compile_str};
//!
//! let mut registry = Registry::new();
//! registry
//!     .declare_model_text("game.edn", "{:nodes {:guard/sees? {:options {:range {:type :int :required true}}}}}")
//!     .unwrap();
//! assert!(compile_str("t.edn", "[:guard/sees? {:range 3}]", &registry).is_ok());
//! // The same diagnostics as for built-ins: the missing option is reported.
//! assert!(compile_str("t.edn", "[:guard/sees?]", &registry).is_err());
//! ```

use std::fmt;
use std::sync::Arc;

use crate::diag::did_you_mean;
use crate::extend::{Function, Imp, NodeType};
use crate::registry::Registry;
use crate::schema::{DbKey, DbType};
use crate::source::{LineCol, Source, Span, Spans};
use crate::spec::{Arity, OptionSpec, OptionType};
use crate::tick::NodeCtx;
use crate::value::{Keyword, Map, Value, kw};

/// What is wrong with a node model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ModelErrorKind {
    /// The text is not valid EDN.
    Read,
    /// Something that must be a map is not.
    NotAMap,
    /// A key the model format does not know.
    UnknownKey,
    /// A node type or function name that is not a keyword (or symbol).
    BadName,
    /// A `:children` or `:arity` that is not one of the allowed forms.
    BadArity,
    /// An option's type is unknown or malformed.
    BadOptionType,
    /// A `:doc` that is not a string, a `:required` that is not a boolean, ...
    BadValue,
    /// The name is a built-in node type. (A function may take a standard
    /// function's name: it replaces it, as the application's does.)
    Builtin,
    /// An option named `:id` or `:aido/...`: every node takes those from
    /// the library, with their own meaning and type, so a model cannot
    /// declare them.
    ReservedOption,
}

/// One problem in a node model, with where it is.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ModelError {
    /// What kind of problem.
    pub kind: ModelErrorKind,
    /// What is wrong, in a sentence.
    pub message: String,
    /// Where, if the model was read from text.
    pub span: Option<Span>,
}

/// Every problem found in a node model.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ModelErrors {
    /// The problems, in the order they were found.
    pub errors: Vec<ModelError>,
    /// The model's text, if it was read from text.
    pub source: Option<Arc<Source>>,
}

impl ModelErrors {
    /// Where problem `i` is, as `line:column`, if known.
    pub fn line_col(&self, error: &ModelError) -> Option<LineCol> {
        match (&self.source, error.span) {
            (Some(source), Some(span)) => Some(source.line_col(span.start)),
            _ => None,
        }
    }
}

impl fmt::Display for ModelErrors {
    /// One line a problem: `name:line:col: message`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, error) in self.errors.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            match (&self.source, self.line_col(error)) {
                (Some(source), Some(at)) => write!(f, "{}:{at}: ", source.name())?,
                (Some(source), None) => write!(f, "{}: ", source.name())?,
                _ => {}
            }
            f.write_str(&error.message)?;
        }
        Ok(())
    }
}

impl std::error::Error for ModelErrors {}

/// The reader of one model: collects problems with their spans.
struct Reader<'a> {
    spans: Option<&'a Spans>,
    path: Vec<usize>,
    errors: Vec<ModelError>,
}

impl Reader<'_> {
    fn error(&mut self, kind: ModelErrorKind, message: String) {
        let span = self.spans.and_then(|s| s.span_at(&self.path));
        self.errors.push(ModelError {
            kind,
            message,
            span,
        });
    }

    /// Runs `f` on the map entry `i`'s key (`value: false`) or value.
    fn at<T>(&mut self, i: usize, value: bool, f: impl FnOnce(&mut Self) -> T) -> T {
        self.path.push(2 * i + usize::from(value));
        let out = f(self);
        self.path.pop();
        out
    }

    /// The value as a map, or an error saying what it should have been.
    fn map<'v>(&mut self, value: &'v Value, what: &str) -> Option<&'v Map> {
        let map = value.as_map();
        if map.is_none() {
            self.error(
                ModelErrorKind::NotAMap,
                format!("{what} must be a map, found {}", value.type_with_article()),
            );
        }
        map
    }

    /// Reports every key of `map` that is not in `known`.
    fn known_keys(&mut self, map: &Map, known: &[&'static str], what: &str) {
        for (i, key) in map.keys().enumerate() {
            let text = key.as_keyword().map(|k| k.as_str());
            if text.is_some_and(|t| known.contains(&t)) {
                continue;
            }
            let help = text
                .and_then(|t| did_you_mean(t, known.iter().copied()))
                .map(|s| format!(" (did you mean `:{s}`?)"))
                .unwrap_or_default();
            let list: Vec<String> = known.iter().map(|k| format!(":{k}")).collect();
            self.at(i, false, |r| {
                r.error(
                    ModelErrorKind::UnknownKey,
                    format!(
                        "unknown key `{key}` in {what}{help}; it takes {}",
                        list.join(" ")
                    ),
                );
            });
        }
    }

    /// The entry `key` of `map` with its index, if present.
    fn entry<'v>(map: &'v Map, key: &str) -> Option<(usize, &'v Value)> {
        map.get_full(&Value::keyword(key)).map(|(i, _, v)| (i, v))
    }

    fn doc(&mut self, map: &Map) -> Option<Arc<str>> {
        let (i, value) = Self::entry(map, "doc")?;
        match value {
            Value::Str(s) => Some(Arc::from(s.as_str())),
            other => {
                self.at(i, true, |r| {
                    r.error(
                        ModelErrorKind::BadValue,
                        format!(
                            "`:doc` must be a string, found {}",
                            other.type_with_article()
                        ),
                    );
                });
                None
            }
        }
    }

    fn arity(&mut self, value: &Value, key: &str) -> Option<Arity> {
        let count = |v: &Value| v.as_int().and_then(|n| usize::try_from(n).ok());
        let arity = match value {
            Value::Int(_) => count(value).map(Arity::Exactly),
            Value::Keyword(k) if k.as_str() == "some" => Some(Arity::AtLeast(1)),
            Value::Keyword(k) if k.as_str() == "any" => Some(Arity::Any),
            Value::Vector(items) if !items.is_empty() => items
                .iter()
                .map(count)
                .collect::<Option<Vec<_>>>()
                .map(|mut ns| {
                    ns.sort_unstable();
                    ns.dedup();
                    Arity::OneOf(ns)
                }),
            Value::Map(m) if m.len() == 1 => m
                .get(&Value::keyword("at-least"))
                .and_then(count)
                .map(Arity::AtLeast),
            _ => None,
        };
        if arity.is_none() {
            self.error(
                ModelErrorKind::BadArity,
                format!(
                    "`:{key}` must be a count n, counts [n m ..], :some, :any or {{:at-least n}}, found `{}`",
                    value.abbreviated(40).0
                ),
            );
        }
        arity
    }

    fn option_type(
        &mut self,
        value: &Value,
        values: Option<(usize, &Value)>,
    ) -> Option<OptionType> {
        let name = value.as_keyword().map(|k| k.as_str());
        let ty = match name {
            Some("int") => OptionType::Int,
            Some("number") => OptionType::Number,
            Some("bool") => OptionType::Bool,
            Some("string") => OptionType::Str,
            Some("keyword") => OptionType::Keyword,
            Some("key") => OptionType::Key,
            Some("any") => OptionType::Any,
            Some("count") => OptionType::Count,
            Some("probability") => OptionType::Probability,
            Some("weights") => OptionType::Weights,
            Some("operator") => OptionType::Operator,
            Some("flag") => OptionType::Flag,
            Some("name") => OptionType::Name,
            Some("one-of") => {
                let names = values.and_then(|(_, v)| {
                    v.as_seq()?
                        .iter()
                        .map(|k| k.as_keyword().map(|k| k.as_str()))
                        .collect::<Option<Vec<&'static str>>>()
                });
                match names {
                    // Option types name their keywords statically; a model's
                    // list lives as long as the process (names are interned).
                    Some(names) if !names.is_empty() => {
                        OptionType::OneOf(Box::leak(names.into_boxed_slice()))
                    }
                    _ => {
                        self.error(
                            ModelErrorKind::BadOptionType,
                            "`:one-of` needs `:values`, a vector of keywords".to_owned(),
                        );
                        return None;
                    }
                }
            }
            _ => {
                let known = TYPE_NAMES.iter().copied();
                let help = name
                    .and_then(|n| did_you_mean(n, known))
                    .map(|s| format!(" (did you mean `:{s}`?)"))
                    .unwrap_or_default();
                self.error(
                    ModelErrorKind::BadOptionType,
                    format!(
                        "unknown option type `{}`{help}; the types are :{}",
                        value.abbreviated(40).0,
                        TYPE_NAMES.join(" :")
                    ),
                );
                return None;
            }
        };
        Some(ty)
    }

    /// A db key's type: an option type, `:map`, `[:vector t]`, `[:set t]` or
    /// `[:map-of k v]`.
    fn db_type(&mut self, value: &Value) -> Option<DbType> {
        match value {
            Value::Keyword(k) if k.as_str() == "map" => Some(DbType::Map),
            Value::Vector(items) => {
                let head = items
                    .first()
                    .and_then(Value::as_keyword)
                    .map(|k| k.as_str());
                match (head, items.get(1), items.get(2), items.len()) {
                    (Some("vector"), Some(t), None, 2) => {
                        Some(DbType::Vector(Box::new(self.db_type(t)?)))
                    }
                    (Some("set"), Some(t), None, 2) => {
                        Some(DbType::Set(Box::new(self.db_type(t)?)))
                    }
                    (Some("map-of"), Some(k), Some(v), 3) => Some(DbType::MapOf(
                        Box::new(self.db_type(k)?),
                        Box::new(self.db_type(v)?),
                    )),
                    _ => {
                        self.error(
                            ModelErrorKind::BadOptionType,
                            format!(
                                "a collection type is [:vector t], [:set t] or [:map-of k v], found `{}`",
                                value.abbreviated(40).0
                            ),
                        );
                        None
                    }
                }
            }
            other => self.option_type(other, None).map(DbType::Plain),
        }
    }

    /// One db key: a type, or `{:type t :default v :doc ".."}`.
    fn db_key(&mut self, key: Keyword, value: &Value) -> Option<DbKey> {
        let Value::Map(spec) = value else {
            let ty = self.db_type(value)?;
            return Some(DbKey {
                key,
                ty,
                default: None,
                doc: None,
            });
        };
        self.known_keys(spec, &["type", "default", "doc"], "a db key");
        let ty = match Self::entry(spec, "type") {
            Some((i, t)) => self.at(i, true, |r| r.db_type(t))?,
            None => {
                self.error(
                    ModelErrorKind::BadOptionType,
                    format!("db key `{key}` needs a `:type`"),
                );
                return None;
            }
        };
        let default = match Self::entry(spec, "default") {
            None => None,
            Some((i, v)) => match ty.check(v) {
                Ok(()) => Some(v.clone()),
                Err(e) => {
                    self.at(i, true, |r| {
                        r.error(
                            ModelErrorKind::BadValue,
                            format!("`:default` of `{key}`: {e}"),
                        );
                    });
                    None
                }
            },
        };
        let doc = self.doc(spec);
        Some(DbKey {
            key,
            ty,
            default,
            doc,
        })
    }

    /// One option: `t` or `{:type t :required bool :doc ".."}`.
    fn option(&mut self, key: Keyword, value: &Value) -> Option<OptionSpec> {
        let Value::Map(spec) = value else {
            let ty = self.option_type(value, None)?;
            return Some(OptionSpec::new(key, ty, false, None));
        };
        self.known_keys(spec, &["type", "required", "doc", "values"], "an option");
        let values = Self::entry(spec, "values");
        let ty = match Self::entry(spec, "type") {
            Some((i, t)) => self.at(i, true, |r| r.option_type(t, values))?,
            None => {
                self.error(
                    ModelErrorKind::BadOptionType,
                    format!("option `{key}` needs a `:type`"),
                );
                return None;
            }
        };
        let required = match Self::entry(spec, "required") {
            None => false,
            Some((_, Value::Bool(b))) => *b,
            Some((i, other)) => {
                self.at(i, true, |r| {
                    r.error(
                        ModelErrorKind::BadValue,
                        format!(
                            "`:required` must be true or false, found {}",
                            other.type_with_article()
                        ),
                    );
                });
                false
            }
        };
        let doc = self.doc(spec);
        Some(OptionSpec::new(key, ty, required, doc))
    }

    fn node_type(&mut self, name: Keyword, value: &Value) -> Option<NodeType> {
        let spec = self.map(value, &format!("node type `{name}`"))?;
        self.known_keys(
            spec,
            &["doc", "children", "options", "open-options"],
            "a node type",
        );
        let mut node_type = NodeType::new(name.as_str());
        node_type.declared = true;
        let shown = name;
        node_type = node_type.tick(move |_: &mut NodeCtx<'_, '_>| {
            Err(crate::extend::NodeError(format!(
                "`{shown}` is declared in a node model and has no behaviour here; stub it (a scenario's :stubs, aido run --stubs) or run it with the application's own binary"
            )))
        });
        node_type.doc = self.doc(spec);
        if let Some((i, children)) = Self::entry(spec, "children")
            && let Some(arity) = self.at(i, true, |r| r.arity(children, "children"))
        {
            node_type.arity = arity;
        }
        match Self::entry(spec, "open-options") {
            None => {}
            Some((_, Value::Bool(b))) => node_type.open_options = *b,
            Some((i, other)) => self.at(i, true, |r| {
                r.error(
                    ModelErrorKind::BadValue,
                    format!(
                        "`:open-options` must be true or false, found {}",
                        other.type_with_article()
                    ),
                );
            }),
        }
        if let Some((i, options)) = Self::entry(spec, "options") {
            self.at(i, true, |r| {
                let Some(options) = r.map(options, "`:options`") else {
                    return;
                };
                for (j, (key, value)) in options.iter().enumerate() {
                    let Some(key) = key.as_keyword() else {
                        r.at(j, false, |r| {
                            r.error(
                                ModelErrorKind::BadName,
                                format!(
                                    "an option's name must be a keyword, found {}",
                                    key.type_with_article()
                                ),
                            );
                        });
                        continue;
                    };
                    if key == kw::ID || key.as_str().starts_with("aido/") {
                        r.at(j, false, |r| {
                            r.error(
                                ModelErrorKind::ReservedOption,
                                format!(
                                    "option `{key}` is reserved: every node takes it, with the \
                                     meaning the library gives it"
                                ),
                            );
                        });
                        continue;
                    }
                    if let Some(option) = r.at(j, true, |r| r.option(key, value)) {
                        node_type.options.push(option);
                    }
                }
            });
        }
        Some(node_type)
    }

    fn function(&mut self, name: &'static str, value: &Value) -> Option<Function> {
        let spec = self.map(value, &format!("function `{name}`"))?;
        self.known_keys(spec, &["doc", "arity"], "a function");
        let doc = self.doc(spec);
        let arity = match Self::entry(spec, "arity") {
            Some((i, arity)) => self.at(i, true, |r| r.arity(arity, "arity"))?,
            None => Arity::Any,
        };
        Some(Function {
            name: Keyword::new(name),
            arity,
            f: Arc::new(move |_: &mut crate::tick::FnCtx<'_>, _: &[Value]| {
                Err(format!(
                    "`{name}` is declared in a node model and has no behaviour here"
                ))
            }),
            halt: None,
            compile: None,
            doc,
            declared: true,
            standard: false,
        })
    }
}

/// The option type names a model may use.
const TYPE_NAMES: &[&str] = &[
    "int",
    "number",
    "bool",
    "string",
    "keyword",
    "key",
    "any",
    "count",
    "probability",
    "weights",
    "operator",
    "flag",
    "name",
    "one-of",
];

impl Registry {
    /// Declares the node types and functions of a model (see [the module](crate::model)).
    /// Declared names that the registry already has keep their registered
    /// behaviour; a built-in name is an error. Every problem is reported.
    pub fn declare_model(&mut self, model: &Value) -> Result<&mut Registry, ModelErrors> {
        self.declare_model_with_spans(model, None, None)
    }

    /// Reads a model from `text` (`name` is its file's name, for messages)
    /// and declares it; problems point into the text.
    pub fn declare_model_text(
        &mut self,
        name: &str,
        text: &str,
    ) -> Result<&mut Registry, ModelErrors> {
        let source = Arc::new(Source::new(name, text));
        match crate::read::read_text(text) {
            Ok((value, spans)) => self.declare_model_with_spans(&value, Some(&spans), Some(source)),
            Err(e) => Err(ModelErrors {
                errors: vec![ModelError {
                    kind: ModelErrorKind::Read,
                    message: e.to_string(),
                    span: Some(e.span),
                }],
                source: Some(source),
            }),
        }
    }

    fn declare_model_with_spans(
        &mut self,
        model: &Value,
        spans: Option<&Spans>,
        source: Option<Arc<Source>>,
    ) -> Result<&mut Registry, ModelErrors> {
        let mut r = Reader {
            spans,
            path: Vec::new(),
            errors: Vec::new(),
        };
        let mut node_types = Vec::new();
        let mut functions = Vec::new();
        let mut db_keys = Vec::new();
        if let Some(top) = r.map(model, "a node model") {
            r.known_keys(top, &["nodes", "functions", "db"], "a node model");
            if let Some((i, db)) = Reader::entry(top, "db") {
                r.at(i, true, |r| {
                    let Some(db) = r.map(db, "`:db`") else {
                        return;
                    };
                    for (j, (key, spec)) in db.iter().enumerate() {
                        let Some(key) = key.as_keyword() else {
                            r.at(j, false, |r| {
                                r.error(
                                    ModelErrorKind::BadName,
                                    format!(
                                        "a db key in `:db` must be a keyword, found {}",
                                        key.type_with_article()
                                    ),
                                );
                            });
                            continue;
                        };
                        if let Some(declared) = r.at(j, true, |r| r.db_key(key, spec)) {
                            db_keys.push(declared);
                        }
                    }
                });
            }
            if let Some((i, nodes)) = Reader::entry(top, "nodes") {
                r.at(i, true, |r| {
                    let Some(nodes) = r.map(nodes, "`:nodes`") else {
                        return;
                    };
                    for (j, (name, spec)) in nodes.iter().enumerate() {
                        let Some(name) = name.as_keyword() else {
                            r.at(j, false, |r| {
                                r.error(
                                    ModelErrorKind::BadName,
                                    format!(
                                        "a node type's name must be a keyword, found {}",
                                        name.type_with_article()
                                    ),
                                );
                            });
                            continue;
                        };
                        if self
                            .lookup_node_type(name)
                            .is_some_and(|nt| matches!(nt.imp, Imp::Builtin(_)))
                        {
                            r.at(j, false, |r| {
                                r.error(
                                    ModelErrorKind::Builtin,
                                    format!("`{name}` is a built-in node type"),
                                );
                            });
                            continue;
                        }
                        if let Some(nt) = r.at(j, true, |r| r.node_type(name, spec)) {
                            node_types.push(nt);
                        }
                    }
                });
            }
            if let Some((i, fns)) = Reader::entry(top, "functions") {
                r.at(i, true, |r| {
                    let Some(fns) = r.map(fns, "`:functions`") else {
                        return;
                    };
                    for (j, (name, spec)) in fns.iter().enumerate() {
                        let name = match name {
                            Value::Symbol(s) => s.as_str(),
                            Value::Keyword(k) => k.as_str(),
                            other => {
                                r.at(j, false, |r| {
                                    r.error(
                                        ModelErrorKind::BadName,
                                        format!("a function's name must be a symbol or a keyword, found {}", other.type_with_article()),
                                    );
                                });
                                continue;
                            }
                        };
                        if let Some(f) = r.at(j, true, |r| r.function(name, spec)) {
                            functions.push(f);
                        }
                    }
                });
            }
        }
        if !r.errors.is_empty() {
            return Err(ModelErrors {
                errors: r.errors,
                source,
            });
        }
        for nt in node_types {
            self.declare_node_type(nt);
        }
        for f in functions {
            self.declare_function(f);
        }
        if !db_keys.is_empty() {
            self.declare_db(db_keys);
        }
        Ok(self)
    }

    /// The registry's own node types and functions (not the built-ins) as a
    /// node model, sorted by name: the file an application's build writes
    /// for the tools its designers use.
    pub fn model(&self) -> Value {
        self.model_value(false)
    }

    /// Every node type and function, built-ins included, in the model's
    /// shape, each with its documentation: the reference `aido nodes` prints.
    pub fn reference(&self) -> Value {
        self.model_value(true)
    }

    fn model_value(&self, builtins: bool) -> Value {
        let nodes = self
            .node_types()
            .into_iter()
            .filter(|nt| builtins || !nt.is_builtin())
            .map(|nt| (Value::Keyword(nt.name()), node_type_value(nt)));
        let functions = self
            .functions()
            .into_iter()
            .filter(|f| builtins || !f.is_standard())
            .map(|f| {
                let mut spec = Map::default();
                if let Some(doc) = f.documentation() {
                    spec.insert(Value::keyword("doc"), Value::string(doc));
                }
                spec.insert(Value::keyword("arity"), arity_value(f.arity()));
                (Value::symbol(f.name().as_str()), Value::Map(Box::new(spec)))
            });
        Value::map_from([
            (Value::keyword("nodes"), Value::map_from(nodes)),
            (Value::keyword("functions"), Value::map_from(functions)),
        ])
    }
}

fn node_type_value(nt: &NodeType) -> Value {
    let mut spec = Map::default();
    if let Some(doc) = nt.documentation() {
        spec.insert(Value::keyword("doc"), Value::string(doc));
    }
    spec.insert(Value::keyword("children"), arity_value(nt.arity()));
    if !nt.options().is_empty() {
        let options = nt.options().iter().map(|o| {
            let mut option = Map::default();
            option.insert(Value::keyword("type"), Value::keyword(type_name(&o.ty)));
            if let OptionType::OneOf(names) = &o.ty {
                option.insert(
                    Value::keyword("values"),
                    Value::Vector(names.iter().map(|n| Value::keyword(n)).collect()),
                );
            }
            if o.required {
                option.insert(Value::keyword("required"), Value::Bool(true));
            }
            if let Some(doc) = &o.doc {
                option.insert(Value::keyword("doc"), Value::string(doc));
            }
            (Value::Keyword(o.key), Value::Map(Box::new(option)))
        });
        spec.insert(Value::keyword("options"), Value::map_from(options));
    }
    if nt.open_options() {
        spec.insert(Value::keyword("open-options"), Value::Bool(true));
    }
    Value::Map(Box::new(spec))
}

/// An arity as the model writes it.
pub(crate) fn arity_value(arity: &Arity) -> Value {
    let count = |n: usize| Value::Int(i64::try_from(n).unwrap_or(i64::MAX));
    match arity {
        Arity::Exactly(n) => count(*n),
        Arity::OneOf(ns) => Value::Vector(ns.iter().map(|&n| count(n)).collect()),
        Arity::AtLeast(1) => Value::keyword("some"),
        Arity::AtLeast(n) => Value::map_from([(Value::keyword("at-least"), count(*n))]),
        Arity::Any => Value::keyword("any"),
    }
}

/// An option type's name in a model.
pub(crate) fn type_name(ty: &OptionType) -> &'static str {
    match ty {
        OptionType::Any => "any",
        OptionType::Bool => "bool",
        OptionType::Int => "int",
        OptionType::Count => "count",
        OptionType::Number => "number",
        OptionType::Probability => "probability",
        OptionType::Keyword => "keyword",
        OptionType::Str => "string",
        OptionType::OneOf(_) => "one-of",
        OptionType::Key => "key",
        OptionType::Weights => "weights",
        OptionType::Operator => "operator",
        OptionType::Flag => "flag",
        OptionType::Name => "name",
    }
}

/// A model as text, one node type or function a line, so that it reads and
/// diffs well (what `aido nodes --format edn` prints). It reads back as the
/// same model.
///
/// ```
/// use aido::{Registry, extend::NodeType};
///
/// let mut registry = Registry::new();
/// registry.node_type(NodeType::new("guard/patrol").doc("Walks the beat.")).unwrap();
/// assert_eq!(
///     aido::model::model_text(&registry.model()),
///     "{:nodes\n {:guard/patrol {:doc \"Walks the beat.\", :children 0}}\n :functions\n {}}\n"
/// );
/// ```
pub fn model_text(model: &Value) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let Some(map) = model.as_map() else {
        let _ = writeln!(out, "{model}");
        return out;
    };
    let n = map.len();
    for (i, (section, entries)) in map.iter().enumerate() {
        let open = if i == 0 { "{" } else { " " };
        let _ = writeln!(out, "{open}{section}");
        let end = if i + 1 == n { "}" } else { "" };
        match entries.as_map() {
            Some(entries) if !entries.is_empty() => {
                let m = entries.len();
                for (j, (name, spec)) in entries.iter().enumerate() {
                    let open = if j == 0 { " {" } else { "  " };
                    let close = if j + 1 == m { "}" } else { "" };
                    let end = if j + 1 == m { end } else { "" };
                    let _ = writeln!(out, "{open}{name} {spec}{close}{end}");
                }
            }
            _ => {
                let _ = writeln!(out, " {{}}{end}");
            }
        }
    }
    out
}
