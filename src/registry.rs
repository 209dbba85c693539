//! The registry of node types and functions a tree is compiled against.
//!
//! [`Registry::new`] starts with every built-in node type and the standard
//! function library; applications add their own with [`Registry::node_type`]
//! and [`Registry::function`].

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use crate::tick::{FnCtx, NodeCtx, Status};
use crate::value::{FastBuildHasher, Keyword, Value};

/// How many children a node type takes.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Arity {
    /// Exactly this many (`Exactly(0)`: a leaf).
    Exactly(usize),
    /// Any of these counts, like aido's `#{1 2}`.
    OneOf(Vec<usize>),
    /// At least this many (`AtLeast(1)`: aido's `:some`).
    AtLeast(usize),
    /// Any number, including none.
    Any,
}

impl Arity {
    /// Whether `n` children are allowed.
    pub fn allows(&self, n: usize) -> bool {
        match self {
            Arity::Exactly(k) => n == *k,
            Arity::OneOf(ks) => ks.contains(&n),
            Arity::AtLeast(k) => n >= *k,
            Arity::Any => true,
        }
    }
}

impl Arity {
    /// The arity in words, counting `one`s (singular) and `many` (plural):
    /// `arity.counted("argument", "arguments")` gives "exactly 2 arguments".
    pub(crate) fn counted(&self, one: &str, many: &str) -> String {
        match self {
            Arity::Exactly(0) => format!("no {many}"),
            Arity::Exactly(1) => format!("exactly 1 {one}"),
            Arity::Exactly(k) => format!("exactly {k} {many}"),
            Arity::OneOf(ks) => {
                let ks: Vec<String> = ks.iter().map(ToString::to_string).collect();
                format!("{} {many}", ks.join(" or "))
            }
            Arity::AtLeast(1) => format!("at least 1 {one}"),
            Arity::AtLeast(k) => format!("at least {k} {many}"),
            Arity::Any => format!("any number of {many}"),
        }
    }
}

/// The arity as a node's child count: "exactly 1 child", "at least 2 children".
impl fmt::Display for Arity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.counted("child", "children"))
    }
}

/// The type an option's value must have. Constant values are checked when the
/// tree is compiled; dynamic ones each time the node is ticked.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum OptionType {
    /// Any value.
    Any,
    /// `true` or `false`.
    Bool,
    /// An integer.
    Int,
    /// An integer ≥ 0.
    Count,
    /// An integer or a float.
    Number,
    /// A number from 0 to 1.
    Probability,
    /// A keyword.
    Keyword,
    /// A string.
    Str,
    /// One of these keywords (texts without the colon).
    OneOf(&'static [&'static str]),
    /// A db key (keyword, string or integer) or a vector of them: a key path.
    /// Always constant.
    Key,
    /// A vector of non-negative numbers.
    Weights,
    /// One of the symbols `= not= < > <= >=`. Always constant.
    Operator,
    /// `true` or `false`, always constant (it shapes the node, like `:memory`).
    Flag,
    /// A keyword, always constant (it names something, like `:action`).
    Name,
}

impl OptionType {
    /// Whether a dynamic option (`[:aido/fn ..]`, `[:aido/db ..]`) may supply the value.
    pub(crate) fn allows_dynamic(&self) -> bool {
        !matches!(
            self,
            OptionType::Key | OptionType::Operator | OptionType::Flag | OptionType::Name
        )
    }

    /// Checks `value`, saying what was expected if it does not fit.
    pub fn check(&self, value: &Value) -> Result<(), String> {
        if let (OptionType::Key, Value::Vector(path)) = (self, value)
            && path.len() > crate::tree::MAX_KEY_PATH
        {
            return Err(format!(
                "a key path has at most {} keys, found {}",
                crate::tree::MAX_KEY_PATH,
                path.len()
            ));
        }
        let ok = match self {
            OptionType::Any => true,
            OptionType::Bool | OptionType::Flag => matches!(value, Value::Bool(_)),
            OptionType::Int => matches!(value, Value::Int(_)),
            OptionType::Count => matches!(value, Value::Int(i) if *i >= 0),
            OptionType::Number => matches!(value, Value::Int(_) | Value::Float(_)),
            OptionType::Probability => value.as_f64().is_some_and(|p| (0.0..=1.0).contains(&p)),
            OptionType::Keyword | OptionType::Name => matches!(value, Value::Keyword(_)),
            OptionType::Str => matches!(value, Value::Str(_)),
            OptionType::OneOf(names) => {
                matches!(value, Value::Keyword(k) if names.contains(&k.as_str()))
            }
            OptionType::Key => match value {
                Value::Vector(path) => !path.is_empty() && path.iter().all(is_key),
                other => is_key(other),
            },
            OptionType::Weights => match value {
                Value::Vector(ws) => ws
                    .iter()
                    .all(|w| w.as_f64().is_some_and(|w| w >= 0.0 && w.is_finite())),
                _ => false,
            },
            OptionType::Operator => matches!(value, Value::Symbol(s)
                if crate::nodes::data::Operator::parse(s.as_str()).is_some()),
        };
        if ok {
            Ok(())
        } else {
            Err(format!("expected {self}, found {}", describe(value)))
        }
    }
}

fn is_key(v: &Value) -> bool {
    matches!(v, Value::Keyword(_) | Value::Str(_) | Value::Int(_))
}

fn describe(value: &Value) -> String {
    match value.abbreviated(40) {
        (_, true) => value.type_with_article().to_owned(),
        (text, false) => format!("{} `{text}`", value.type_name()),
    }
}

impl fmt::Display for OptionType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OptionType::Any => f.write_str("any value"),
            OptionType::Bool | OptionType::Flag => f.write_str("true or false"),
            OptionType::Int => f.write_str("an integer"),
            OptionType::Count => f.write_str("a non-negative integer"),
            OptionType::Number => f.write_str("a number"),
            OptionType::Probability => f.write_str("a number from 0 to 1"),
            OptionType::Keyword | OptionType::Name => f.write_str("a keyword"),
            OptionType::Str => f.write_str("a string"),
            OptionType::OneOf(names) => {
                let names: Vec<String> = names.iter().map(|n| format!(":{n}")).collect();
                write!(f, "one of {}", names.join(" "))
            }
            OptionType::Key => {
                f.write_str("a key (keyword, string or integer) or a vector of keys")
            }
            OptionType::Weights => f.write_str("a vector of non-negative numbers"),
            OptionType::Operator => f.write_str("one of the symbols = not= < > <= >="),
        }
    }
}

/// One option a node type accepts.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct OptionSpec {
    /// The option's key.
    pub key: Keyword,
    /// The type of its value.
    pub ty: OptionType,
    /// Whether the node must have it.
    pub required: bool,
    /// What it means, for the reference (`aido nodes`) and models.
    pub doc: Option<Arc<str>>,
    /// The key's text, taken from the interner once, so that
    /// `NodeCtx::option` finds an option by name without its lock.
    pub(crate) name: &'static str,
}

impl OptionSpec {
    pub(crate) fn new(
        key: Keyword,
        ty: OptionType,
        required: bool,
        doc: Option<Arc<str>>,
    ) -> OptionSpec {
        OptionSpec {
            key,
            ty,
            required,
            doc,
            name: key.as_str(),
        }
    }
}

/// Why a node's tick failed: becomes the Error status with this message.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct NodeError(pub String);

impl fmt::Display for NodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for NodeError {}

impl From<String> for NodeError {
    fn from(s: String) -> NodeError {
        NodeError(s)
    }
}

impl From<&str> for NodeError {
    fn from(s: &str) -> NodeError {
        NodeError(s.to_owned())
    }
}

/// A user node type's tick: reads options and the db, ticks children, returns a status.
pub type TickFn = dyn Fn(&mut NodeCtx<'_, '_>) -> Result<Status, NodeError> + Send + Sync;
/// A registered function: called with its evaluated arguments.
pub type FunctionFn = dyn Fn(&mut FnCtx<'_>, &[Value]) -> Result<Value, String> + Send + Sync;
/// A node type's halt hook: runs when a running node of that type is halted,
/// before its run state is cleared.
pub type HaltFn = dyn Fn(&mut NodeCtx<'_, '_>) + Send + Sync;
/// A node type's lifecycle hook (see [`Lifecycle`]).
pub type LifecycleFn = dyn Fn(&mut NodeCtx<'_, '_>, Lifecycle) + Send + Sync;
/// A function's halt hook: runs when a running node whose options call the
/// function is halted; gets the node's id.
pub type FnHaltFn = dyn Fn(&mut FnCtx<'_>, &Value) + Send + Sync;

/// The tree operations a [`Runner`](crate::runner::Runner) passes to lifecycle hooks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Lifecycle {
    /// The tree was loaded.
    Construct,
    /// The tree was destroyed.
    Destruct,
    /// The tree was paused.
    Pause,
    /// The tree was stopped.
    Stop,
    /// The tree was reset.
    Reset,
}

#[derive(Clone)]
pub(crate) enum Imp {
    Builtin(crate::nodes::Builtin),
    Custom(Arc<TickFn>),
}

/// A node type: its name, options, arity and behaviour.
#[derive(Clone)]
pub struct NodeType {
    pub(crate) name: Keyword,
    pub(crate) options: Vec<OptionSpec>,
    /// Whether option keys beyond `options` are accepted (as `:defer` does).
    pub(crate) open_options: bool,
    pub(crate) arity: Arity,
    pub(crate) imp: Imp,
    pub(crate) halt: Option<Arc<HaltFn>>,
    pub(crate) lifecycle: Option<Arc<LifecycleFn>>,
    /// What the node type does, for the reference (`aido nodes`) and models.
    pub(crate) doc: Option<Arc<str>>,
    /// Declared in a node model: known to the compiler, without behaviour.
    pub(crate) declared: bool,
    /// Whether the node's memory is persistent state, kept when it is halted
    /// (else run state, cleared by a halt).
    pub(crate) persistent: bool,
}

impl fmt::Debug for NodeType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NodeType")
            .field("name", &self.name)
            .field("options", &self.options)
            .field("arity", &self.arity)
            .finish_non_exhaustive()
    }
}

impl NodeType {
    /// A leaf node type called `name` (e.g. `"beverage/drink!"`) with no options.
    /// Its tick function is set with [`NodeType::tick`].
    pub fn new(name: &str) -> NodeType {
        NodeType {
            name: Keyword::new(name.trim_start_matches(':')),
            options: Vec::new(),
            open_options: false,
            arity: Arity::Exactly(0),
            imp: Imp::Custom(Arc::new(|_: &mut NodeCtx<'_, '_>| Ok(Status::Success))),
            halt: None,
            lifecycle: None,
            doc: None,
            declared: false,
            persistent: false,
        }
    }

    pub(crate) fn builtin(
        name: &str,
        arity: Arity,
        options: &[(&str, OptionType, bool)],
        builtin: crate::nodes::Builtin,
    ) -> NodeType {
        NodeType {
            name: Keyword::new(name),
            options: options
                .iter()
                .map(|(key, ty, required)| {
                    OptionSpec::new(Keyword::new(key), ty.clone(), *required, None)
                })
                .collect(),
            open_options: false,
            arity,
            imp: Imp::Builtin(builtin),
            halt: None,
            lifecycle: None,
            doc: None,
            declared: false,
            persistent: false,
        }
    }

    /// Accepts option keys beyond the declared ones (built-ins only).
    pub(crate) fn with_open_options(mut self) -> NodeType {
        self.open_options = true;
        self
    }

    /// Adds an optional option.
    pub fn option(mut self, key: &str, ty: OptionType) -> NodeType {
        self.push_option(key, ty, false);
        self
    }

    /// Adds a required option.
    pub fn required(mut self, key: &str, ty: OptionType) -> NodeType {
        self.push_option(key, ty, true);
        self
    }

    fn push_option(&mut self, key: &str, ty: OptionType, required: bool) {
        let key = Keyword::new(key.trim_start_matches(':'));
        self.options.retain(|o| o.key != key);
        self.options.push(OptionSpec::new(key, ty, required, None));
    }

    /// Sets how many children the node takes (default: none).
    pub fn children(mut self, arity: Arity) -> NodeType {
        self.arity = arity;
        self
    }

    /// Sets the tick function.
    pub fn tick(
        mut self,
        f: impl Fn(&mut NodeCtx<'_, '_>) -> Result<Status, NodeError> + Send + Sync + 'static,
    ) -> NodeType {
        self.imp = Imp::Custom(Arc::new(f));
        self
    }

    /// Sets the halt hook: it runs when a node of this type that returned
    /// Running is halted (no longer reached, a precondition fired, or the
    /// runner was reset or destroyed), before the node's memory is cleared
    /// (unless it is persistent: see [`NodeType::persistent_memory`]). It may
    /// change the db; it cannot tick children.
    pub fn on_halt(mut self, f: impl Fn(&mut NodeCtx<'_, '_>) + Send + Sync + 'static) -> NodeType {
        self.halt = Some(Arc::new(f));
        self
    }

    /// Sets the lifecycle hook, called for every node of this type when a
    /// [`Runner`](crate::runner::Runner) loads, destroys, pauses, stops or resets the tree.
    pub fn on_lifecycle(
        mut self,
        f: impl Fn(&mut NodeCtx<'_, '_>, Lifecycle) + Send + Sync + 'static,
    ) -> NodeType {
        self.lifecycle = Some(Arc::new(f));
        self
    }

    /// Declares what kind of state the node's memory is. Run state (the
    /// default: a step in progress, a running child) is cleared when the
    /// node is halted, so that it starts afresh when reached again;
    /// persistent state (`true`: a cooldown, a run-once mark, choices
    /// already made) survives a halt. [`Runner::reset`](crate::runner::Runner::reset)
    /// clears both.
    ///
    /// ```
    /// use aido::{Status, Value, extend::NodeType};
    /// // Counts its visits across halts.
    /// let visits = NodeType::new("visits!").persistent_memory(true).tick(|ctx| {
    ///     let n = ctx.memory().and_then(|m| m.as_int()).unwrap_or(0);
    ///     ctx.set_memory(Some(Value::Int(n + 1)))?;
    ///     Ok(Status::Running)
    /// });
    /// assert_eq!(visits.name().as_str(), "visits!");
    /// ```
    pub fn persistent_memory(mut self, persistent: bool) -> NodeType {
        self.persistent = persistent;
        self
    }

    /// The node type's name.
    pub fn name(&self) -> Keyword {
        self.name
    }

    /// Sets the documentation: one or a few sentences saying what the node
    /// does, shown by `aido nodes` and written into the registry's model.
    pub fn doc(mut self, text: &str) -> NodeType {
        self.doc = Some(Arc::from(text));
        self
    }

    /// Documents the option `key` (declared before with
    /// [`NodeType::option`] or [`NodeType::required`]).
    pub fn option_doc(mut self, key: &str, text: &str) -> NodeType {
        let key = Keyword::new(key.trim_start_matches(':'));
        if let Some(option) = self.options.iter_mut().find(|o| o.key == key) {
            option.doc = Some(Arc::from(text));
        }
        self
    }

    /// The options it accepts.
    pub fn options(&self) -> &[OptionSpec] {
        &self.options
    }

    /// How many children it takes.
    pub fn arity(&self) -> &Arity {
        &self.arity
    }

    /// Whether it accepts options beyond [`NodeType::options`].
    pub fn open_options(&self) -> bool {
        self.open_options
    }

    /// Its documentation, if it has some.
    pub fn documentation(&self) -> Option<&str> {
        self.doc.as_deref()
    }

    /// Whether it is one of the built-in node types.
    pub fn is_builtin(&self) -> bool {
        matches!(self.imp, Imp::Builtin(_))
    }

    /// Whether it was declared by a node model (it has no behaviour).
    pub fn is_declared(&self) -> bool {
        self.declared
    }
}

/// A function callable from `[:aido/fn name args..]`.
#[derive(Clone)]
pub struct Function {
    pub(crate) name: Keyword,
    pub(crate) arity: Arity,
    pub(crate) f: Arc<FunctionFn>,
    pub(crate) halt: Option<Arc<FnHaltFn>>,
    /// What the function does, for the reference and models.
    pub(crate) doc: Option<Arc<str>>,
    /// Declared in a node model: known to the compiler, without behaviour.
    pub(crate) declared: bool,
}

impl Function {
    /// The function's name.
    pub fn name(&self) -> Keyword {
        self.name
    }

    /// How many arguments it takes.
    pub fn arity(&self) -> &Arity {
        &self.arity
    }

    /// Its documentation, if it has some.
    pub fn documentation(&self) -> Option<&str> {
        self.doc.as_deref()
    }

    /// Whether it was declared by a node model (it has no behaviour).
    pub fn is_declared(&self) -> bool {
        self.declared
    }
}

impl fmt::Debug for Function {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Function")
            .field("name", &self.name)
            .field("arity", &self.arity)
            .finish_non_exhaustive()
    }
}

/// Why a registration was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RegistryError {
    /// A built-in node type or function already has this name.
    Builtin(String),
    /// No function of this name is registered.
    UnknownFunction(String),
}

impl fmt::Display for RegistryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RegistryError::Builtin(name) => {
                write!(f, "`{name}` is built in and cannot be replaced")
            }
            RegistryError::UnknownFunction(name) => write!(f, "no function `{name}` is registered"),
        }
    }
}

impl std::error::Error for RegistryError {}

/// Node types and functions, by name. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Registry {
    // Keys are interned keywords (numbers the process hands out), so the
    // fast hasher is safe here.
    node_types: HashMap<Keyword, Arc<NodeType>, FastBuildHasher>,
    functions: HashMap<Keyword, Arc<Function>, FastBuildHasher>,
}

impl Default for Registry {
    fn default() -> Registry {
        Registry::new()
    }
}

impl Registry {
    /// A registry holding the built-in node types and the standard functions.
    pub fn new() -> Registry {
        let mut reg = Registry {
            node_types: HashMap::default(),
            functions: HashMap::default(),
        };
        for nt in crate::nodes::builtin_types() {
            reg.node_types.insert(nt.name, Arc::new(nt));
        }
        for f in crate::funcs::standard_functions() {
            reg.functions.insert(f.name, Arc::new(f));
        }
        reg
    }

    /// Registers a node type; a later registration of the same name replaces
    /// an earlier one, but a built-in cannot be replaced.
    pub fn node_type(&mut self, node_type: NodeType) -> Result<&mut Registry, RegistryError> {
        if let Some(old) = self.node_types.get(&node_type.name)
            && matches!(old.imp, Imp::Builtin(_))
        {
            return Err(RegistryError::Builtin(node_type.name.to_string()));
        }
        self.node_types.insert(node_type.name, Arc::new(node_type));
        Ok(self)
    }

    /// Registers a function under `name` (used as `[:aido/fn name ..]` or
    /// `[:aido/fn :name ..]`), taking `arity` arguments.
    pub fn function(
        &mut self,
        name: &str,
        arity: Arity,
        f: impl Fn(&mut FnCtx<'_>, &[Value]) -> Result<Value, String> + Send + Sync + 'static,
    ) -> Result<&mut Registry, RegistryError> {
        let name = Keyword::new(name.trim_start_matches(':'));
        if crate::funcs::is_standard(name) {
            return Err(RegistryError::Builtin(name.as_str().to_owned()));
        }
        self.functions.insert(
            name,
            Arc::new(Function {
                name,
                arity,
                f: Arc::new(f),
                halt: None,
                doc: None,
                declared: false,
            }),
        );
        Ok(self)
    }

    /// Gives the registered function `name` a halt hook: it runs when a
    /// running node whose options call the function is halted, with that
    /// node's id (for instance to release what the function reserved).
    pub fn function_halt(
        &mut self,
        name: &str,
        hook: impl Fn(&mut FnCtx<'_>, &Value) + Send + Sync + 'static,
    ) -> Result<&mut Registry, RegistryError> {
        let key = Keyword::new(name.trim_start_matches(':'));
        match self.functions.get_mut(&key) {
            Some(function) if !crate::funcs::is_standard(key) => {
                let mut updated = Function::clone(function);
                updated.halt = Some(Arc::new(hook));
                *function = Arc::new(updated);
                Ok(self)
            }
            Some(_) => Err(RegistryError::Builtin(name.to_owned())),
            None => Err(RegistryError::UnknownFunction(name.to_owned())),
        }
    }

    pub(crate) fn lookup_node_type(&self, name: Keyword) -> Option<&Arc<NodeType>> {
        self.node_types.get(&name)
    }

    pub(crate) fn lookup_function(&self, name: Keyword) -> Option<&Arc<Function>> {
        self.functions.get(&name)
    }

    pub(crate) fn node_type_names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.node_types.keys().map(|k| k.as_str())
    }

    pub(crate) fn function_names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.functions.keys().map(|k| k.as_str())
    }

    /// Gives the registered function `name` its documentation (shown by
    /// `aido nodes` and written into the registry's model).
    pub fn function_doc(&mut self, name: &str, doc: &str) -> Result<&mut Registry, RegistryError> {
        let key = Keyword::new(name.trim_start_matches(':'));
        match self.functions.get_mut(&key) {
            Some(function) => {
                let mut updated = Function::clone(function);
                updated.doc = Some(Arc::from(doc));
                *function = Arc::new(updated);
                Ok(self)
            }
            None => Err(RegistryError::UnknownFunction(name.to_owned())),
        }
    }

    /// The node type called `name` (`"selector"`, `"guard/sees?"`), if registered.
    pub fn get_node_type(&self, name: &str) -> Option<&NodeType> {
        self.node_types
            .get(&Keyword::new(name.trim_start_matches(':')))
            .map(|nt| &**nt)
    }

    /// The function called `name`, if registered.
    pub fn get_function(&self, name: &str) -> Option<&Function> {
        self.functions
            .get(&Keyword::new(name.trim_start_matches(':')))
            .map(|f| &**f)
    }

    /// Every node type, sorted by name.
    pub fn node_types(&self) -> Vec<&NodeType> {
        let mut all: Vec<&NodeType> = self.node_types.values().map(|nt| &**nt).collect();
        all.sort_by_key(|nt| nt.name.as_str());
        all
    }

    /// Every function, sorted by name.
    pub fn functions(&self) -> Vec<&Function> {
        let mut all: Vec<&Function> = self.functions.values().map(|f| &**f).collect();
        all.sort_by_key(|f| f.name.as_str());
        all
    }

    /// Adds a node type only if no node type of that name is registered
    /// (a model's declaration never replaces real behaviour).
    pub(crate) fn declare_node_type(&mut self, node_type: NodeType) -> bool {
        if self.node_types.contains_key(&node_type.name) {
            return false;
        }
        self.node_types.insert(node_type.name, Arc::new(node_type));
        true
    }

    /// Adds a function only if none of that name is registered.
    pub(crate) fn declare_function(&mut self, function: Function) -> bool {
        if self.functions.contains_key(&function.name) {
            return false;
        }
        self.functions.insert(function.name, Arc::new(function));
        true
    }
}
