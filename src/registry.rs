//! The registry of node types and functions a tree is compiled against.
//!
//! [`Registry::new`] starts with every built-in node type and the standard
//! function library; applications add their own with [`Registry::node_type`]
//! and [`Registry::function`].

use std::collections::HashMap;
use std::sync::Arc;

use crate::extend::{ArgError, FnCtx, Function, FunctionFn, Imp, NodeType, RegistryError};
use crate::schema::{DbKey, DbSchema};
use crate::spec::Arity;
use crate::value::{FastBuildHasher, Keyword, Value};

/// Node types and functions, by name. Cheap to clone.
///
/// ```
/// use aido::extend::{Arity, NodeType};
/// use aido::{Registry, Status, Value, compile_str, read_value, run_tick};
///
/// let mut registry = Registry::new(); // the built-ins and standard functions
/// registry.node_type(NodeType::new("door/open!").tick(|ctx| {
///     ctx.db_mut().insert(Value::keyword("door"), Value::keyword("open"));
///     Ok(Status::Success)
/// }))?;
/// registry.function("twice", Arity::Exactly(1), |_, args| {
///     args[0].as_int().map(|n| Value::Int(2 * n)).ok_or_else(|| "an integer".to_owned())
/// })?;
/// // Built-in node types stay the built-ins'; a standard function may be
/// // replaced (as `(compile tree {:rand rand-int})` does in Clojure aido).
/// assert!(registry.node_type(NodeType::new("sequence")).is_err());
/// registry.function("rand", Arity::Exactly(1), |_, _| Ok(Value::Int(4)))?;
/// assert_eq!(registry.replaced_standard_functions().len(), 1);
///
/// let tree = compile_str(
///     "door.edn",
///     "[:sequence [:door/open!] [:define! {:key :n :val [:aido/fn twice 21]}]]",
///     &registry,
/// )
/// .map_err(|d| d.render())?;
/// let tick = run_tick(read_value("{}")?, &tree);
/// assert_eq!(tick.db.to_string(), "{:door :open, :n 42}");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct Registry {
    // Keys are interned keywords (numbers the process hands out), so the
    // fast hasher is safe here.
    node_types: HashMap<Keyword, Arc<NodeType>, FastBuildHasher>,
    functions: HashMap<Keyword, Arc<Function>, FastBuildHasher>,
    /// The db keys node models declared (`:db`), if any did.
    db_schema: Option<Arc<DbSchema>>,
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
            db_schema: None,
        };
        for nt in crate::nodes::builtin_types() {
            reg.node_types.insert(nt.name, Arc::new(nt));
        }
        for f in crate::funcs::standard_functions() {
            reg.functions.insert(f.name, Arc::new(f));
        }
        reg
    }

    /// The db schema declared by the node models this registry read (see
    /// [`crate::schema`]), if any declared one.
    pub fn db_schema(&self) -> Option<&DbSchema> {
        self.db_schema.as_deref()
    }

    /// Adds declared db keys to the schema; a key declared again takes its
    /// new declaration.
    pub(crate) fn declare_db(&mut self, keys: Vec<DbKey>) {
        let mut schema = self.db_schema.as_deref().cloned().unwrap_or_default();
        for key in keys {
            schema.keys.retain(|k| k.key != key.key);
            schema.keys.push(key);
        }
        self.db_schema = Some(Arc::new(schema));
    }

    /// Registers a node type; a later registration of the same name replaces
    /// an earlier one, but a built-in cannot be replaced. A node type that
    /// documents an option it does not declare (a typo in
    /// [`NodeType::option_doc`]) is refused, and so is one declared to finish
    /// in one visit ([`NodeType::one_visit`]) that takes children.
    pub fn node_type(&mut self, node_type: NodeType) -> Result<&mut Registry, RegistryError> {
        if let Some(old) = self.node_types.get(&node_type.name)
            && matches!(old.imp, Imp::Builtin(_))
        {
            return Err(RegistryError::Builtin(node_type.name.to_string()));
        }
        if let Some(option) = node_type.undeclared_docs.first() {
            return Err(RegistryError::UndeclaredOption {
                node_type: node_type.name.to_string(),
                option: option.to_string(),
                declared: node_type
                    .options
                    .iter()
                    .map(|o| o.key.to_string())
                    .collect(),
            });
        }
        let leaf = match &node_type.arity {
            Arity::Exactly(n) => *n == 0,
            Arity::OneOf(ns) => ns.iter().all(|&n| n == 0),
            Arity::AtLeast(_) | Arity::Any => false,
        };
        if node_type.one_visit && !leaf {
            return Err(RegistryError::OneVisitWithChildren {
                node_type: node_type.name.to_string(),
                arity: node_type.arity.to_string(),
            });
        }
        self.node_types.insert(node_type.name, Arc::new(node_type));
        Ok(self)
    }

    /// Registers a function under `name` (used as `[:aido/fn name ..]` or
    /// `[:aido/fn :name ..]`), taking `arity` arguments. A later
    /// registration of the same name replaces an earlier one, a standard
    /// function's included: as in Clojure aido, where
    /// `(compile tree {:rand rand-int})` makes `[:aido/fn rand 5]` call
    /// `rand-int`, a host's `rand` is the `rand` its trees call
    /// ([`Registry::replaced_standard_functions`] lists such names;
    /// `aido check` warns about them).
    pub fn function(
        &mut self,
        name: &str,
        arity: Arity,
        f: impl Fn(&mut FnCtx<'_>, &[Value]) -> Result<Value, String> + Send + Sync + 'static,
    ) -> Result<&mut Registry, RegistryError> {
        let name = Keyword::new(name.trim_start_matches(':'));
        self.functions.insert(
            name,
            Arc::new(Function {
                name,
                arity,
                f: Arc::new(f),
                halt: None,
                compile: None,
                doc: None,
                declared: false,
                standard: false,
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
            Some(function) if !function.standard => {
                let mut updated = Function::clone(function);
                updated.halt = Some(Arc::new(hook));
                *function = Arc::new(updated);
                Ok(self)
            }
            Some(_) => Err(RegistryError::Builtin(name.to_owned())),
            None => Err(RegistryError::UnknownFunction(name.to_owned())),
        }
    }

    /// Gives the registered function `name` a compile step: it runs once
    /// for each call of the function in a tree being compiled, with the
    /// call's arguments (`Some(value)` for a constant, `None` for a dynamic
    /// one). It may refuse the call (a located compile error, E0012) or
    /// return a body for that call that does work once, up front.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use aido::extend::{ArgError, Arity, FunctionFn};
    /// use aido::{Registry, Value, compile_str};
    ///
    /// let mut registry = Registry::new();
    /// registry.function("shout", Arity::Exactly(1), |_, args| {
    ///     Ok(Value::string(&args[0].to_string().to_uppercase()))
    /// })?;
    /// registry.function_compile("shout", |args| match args {
    ///     [Some(Value::Str(s))] => {
    ///         let loud = Value::string(&s.to_uppercase());
    ///         let body: Arc<FunctionFn> = Arc::new(move |_, _| Ok(loud.clone()));
    ///         Ok(Some(body))
    ///     }
    ///     [Some(other)] => Err(ArgError::at(0, format!("expected a string, found `{other}`"))),
    ///     _ => Ok(None),
    /// })?;
    /// let err = compile_str("t.edn", "[:define! {:key :k :val [:aido/fn shout 1]}]", &registry);
    /// assert_eq!(err.unwrap_err().items[0].code.as_str(), "E0012");
    /// # Ok::<(), aido::extend::RegistryError>(())
    /// ```
    pub fn function_compile(
        &mut self,
        name: &str,
        step: impl Fn(&[Option<&Value>]) -> Result<Option<Arc<FunctionFn>>, ArgError>
        + Send
        + Sync
        + 'static,
    ) -> Result<&mut Registry, RegistryError> {
        let key = Keyword::new(name.trim_start_matches(':'));
        match self.functions.get_mut(&key) {
            Some(function) if !function.standard => {
                let mut updated = Function::clone(function);
                updated.compile = Some(Arc::new(step));
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

    /// The standard functions that a host's or a node model's function of
    /// the same name replaces, sorted by name.
    pub fn replaced_standard_functions(&self) -> Vec<&Function> {
        let mut replaced: Vec<&Function> = self
            .functions
            .values()
            .filter(|f| !f.standard && crate::funcs::is_standard(f.name))
            .map(|f| &**f)
            .collect();
        replaced.sort_by_key(|f| f.name.as_str());
        replaced
    }

    /// Adds a function only if none of that name is registered, or only the
    /// standard one (a model's declaration replaces a standard function, as
    /// the application it describes does, and never a host's behaviour).
    pub(crate) fn declare_function(&mut self, function: Function) -> bool {
        if self
            .functions
            .get(&function.name)
            .is_some_and(|f| !f.standard)
        {
            return false;
        }
        self.functions.insert(function.name, Arc::new(function));
        true
    }
}
