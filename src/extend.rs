//! Extending aido: node types and functions written in Rust, and what their
//! code sees of a tick.
//!
//! ```
//! use aido::extend::{Arity, NodeType};
//! use aido::value::Keyword;
//! use aido::{Registry, Status, Value, compile_str, run_tick};
//!
//! let mut registry = Registry::new();
//! let mut drink = NodeType::new("beverage/drink!");
//! let beverage = drink.slot::<Keyword>("beverage");
//! registry
//!     .node_type(drink.tick(move |ctx| {
//!         let beverage = ctx.get(beverage)?;
//!         ctx.db_mut().insert(Value::keyword("drank"), Value::Keyword(beverage));
//!         Ok(Status::Success)
//!     }))
//!     .unwrap();
//! registry
//!     .function("coin-toss", Arity::Exactly(0), |ctx, _args| Ok(Value::Bool(ctx.random() < 0.5)))
//!     .unwrap();
//! let tree = compile_str("tea.edn", "[:beverage/drink! {:beverage :tea}]", &registry).unwrap();
//! assert_eq!(run_tick(Value::map(), &tree).db.to_string(), "{:drank :tea}");
//! ```
//!
//! A [`NodeType`] or [`Function`] is part of the runtime: a compiled tree
//! holds the ones its nodes use, and the tick calls their code. The
//! [`Registry`](crate::Registry) above only finds them by name.

use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

#[cfg(feature = "rand")]
#[cfg_attr(docsrs, doc(cfg(feature = "rand")))]
pub use crate::rng::TickRng;
pub use crate::spec::{Arity, OptionSpec, OptionType};
pub use crate::tick::{FnCtx, NodeCtx};

use crate::tick::Status;
use crate::value::{Keyword, Value};

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
/// A function's compile step (see [`Registry::function_compile`](crate::Registry::function_compile)):
/// given the arguments of one call as written (`Some` for a constant, `None`
/// for a dynamic one), checks them and may return a body specialised to the
/// constants (a regular expression compiled once), used instead of the
/// function's own for that call.
pub type CompileFn =
    dyn Fn(&[Option<&Value>]) -> Result<Option<Arc<FunctionFn>>, ArgError> + Send + Sync;
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
    Builtin(crate::nodes::LowerFn),
    /// A node type's tick, boxed inside the shared pointer: the call finds
    /// the closure at the box's address, where an `Arc<TickFn>` would work
    /// out its place past the counts from the closure's alignment (five
    /// instructions a call, README *Performance*).
    Custom(Arc<Box<CallFn>>),
}

/// A node type's tick shared with the nodes of its type (see
/// `CustomOptions::call`): an [`Imp::Custom`]'s pointer, which prints as
/// a placeholder.
#[derive(Clone)]
pub(crate) struct SharedCall(pub(crate) Arc<Box<CallFn>>);

impl fmt::Debug for SharedCall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SharedCall")
    }
}

/// A node type's tick as the engine calls it, given the engine, the node,
/// its declared options and whether the node type is declared to finish in
/// one visit: the [`TickFn`] given to [`NodeType::tick`] inside a closure
/// of its own that makes the whole call (`Engine::user_tick`: the
/// [`NodeCtx`], the panic guard, the tests after it) and returns the
/// node's status, settled. The engine's call is then one indirect call
/// (or jump) with nothing of its own to keep across it.
pub(crate) type CallFn = dyn for<'e, 't> Fn(&'e mut crate::tick::Engine<'t>, u32, &'e [crate::tree::Slot]) -> Status
    + Send
    + Sync;

/// The [`Imp`] of a node type whose tick is `f`: the whole call made in
/// one closure, where `f` is inlined (see [`CallFn`]), so that the
/// engine's call is one indirect call with nothing to keep across it
/// (README *Performance*).
fn custom_imp(
    f: impl Fn(&mut NodeCtx<'_, '_>) -> Result<Status, NodeError> + Send + Sync + 'static,
) -> Imp {
    Imp::Custom(Arc::new(Box::new(
        move |engine: &mut crate::tick::Engine<'_>, node: u32, slots: &[crate::tree::Slot]| {
            engine.user_tick(node, slots, &f)
        },
    )))
}

/// A node type: its name, options, arity and behaviour.
///
/// ```
/// use aido::extend::{Arity, NodeType};
/// use aido::{Registry, Status, Value, compile_str, run_tick};
///
/// // A decorator that ticks its child until it succeeds, at most `:tries` times a tick.
/// let mut retry = NodeType::new("game/retry")
///     .children(Arity::Exactly(1))
///     .doc("Ticks its child until it succeeds, at most `:tries` times.");
/// let tries = retry.slot::<u64>("tries");
/// let retry = retry.tick(move |ctx| {
///     let tries = ctx.get(tries)?;
///     for _ in 0..tries {
///         if ctx.tick_child(0) == Status::Success {
///             return Ok(Status::Success);
///         }
///     }
///     Ok(Status::Failure)
/// });
/// let mut registry = Registry::new();
/// registry.node_type(retry).unwrap();
///
/// let tree = compile_str(
///     "retry.edn",
///     "[:game/retry {:tries 3} [:sequence [:inc! {:key :n}] [:greater-than? {:key :n :val 1}]]]",
///     &registry,
/// )
/// .unwrap();
/// let tick = run_tick(Value::map(), &tree);
/// assert_eq!((tick.status, tick.db.to_string()), (Status::Success, "{:n 2}".to_owned()));
/// ```
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
    /// Declared to finish in the tick it is visited ([`NodeType::one_visit`]):
    /// a leaf the plain path takes, as it takes the built-in leaves.
    pub(crate) one_visit: bool,
    /// Options [`NodeType::option_doc`] named that the node type does not
    /// declare: a typo, refused when the node type is registered.
    pub(crate) undeclared_docs: Vec<Keyword>,
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
            imp: custom_imp(|_: &mut NodeCtx<'_, '_>| Ok(Status::Success)),
            halt: None,
            lifecycle: None,
            doc: None,
            declared: false,
            persistent: false,
            one_visit: false,
            undeclared_docs: Vec::new(),
        }
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

    /// Declares an option; one declared again keeps its place (a slot
    /// handed out for it stays valid) and takes the new type.
    fn push_option(&mut self, key: &str, ty: OptionType, required: bool) -> u32 {
        let key = Keyword::new(key.trim_start_matches(':'));
        let spec = OptionSpec::new(key, ty, required, None);
        let index = match self.options.iter().position(|o| o.key == key) {
            Some(i) => {
                self.options[i] = spec;
                i
            }
            None => {
                self.options.push(spec);
                self.options.len() - 1
            }
        };
        u32::try_from(index).unwrap_or(u32::MAX)
    }

    /// Declares the option `key` and returns the slot the tick reads it
    /// through with [`NodeCtx::get`]: the way to read options. The option's
    /// type comes from `T` (see [`SlotValue`]); it is required unless `T` is
    /// an `Option`. The name is written once, here: a tick that reads the
    /// slot cannot misspell it.
    ///
    /// ```
    /// use aido::extend::{KeySlot, NodeType, OptSlot};
    /// use aido::{Registry, Status, Value, compile_str, run_tick};
    ///
    /// let mut hungry = NodeType::new("npc/hungry?");
    /// let key: KeySlot = hungry.key_slot("key");
    /// let min: OptSlot<i64> = hungry.slot("min");
    /// let hungry = hungry.tick(move |ctx| {
    ///     let min = ctx.get(min)?;
    ///     Ok(Status::from_bool(matches!(ctx.db_at(key), Some(Value::Int(h)) if *h > min)))
    /// });
    /// let mut registry = Registry::new();
    /// registry.node_type(hungry).unwrap();
    /// let tree = compile_str("t.edn", "[:npc/hungry? {:key :hunger :min 8}]", &registry).unwrap();
    /// let db = aido::read_value("{:hunger 9}").unwrap();
    /// assert_eq!(run_tick(db, &tree).status, Status::Success);
    /// ```
    pub fn slot<T: SlotValue>(&mut self, key: &str) -> OptSlot<T> {
        let index = self.push_option(key, T::option_type(), T::REQUIRED);
        let key = self.options[index as usize].key;
        OptSlot {
            key,
            index,
            tagged: crate::tree::scalar::tagged(key, T::SCALAR_CODE),
            value: PhantomData,
        }
    }

    /// Declares the required option `key`, a db key or key path (always a
    /// constant), and returns the slot the tick reads and writes the db
    /// through with [`NodeCtx::db_at`] and [`NodeCtx::set_db_at`]: a keyword
    /// key gets the per-site look-up hint the built-in nodes have.
    pub fn key_slot(&mut self, key: &str) -> KeySlot {
        let index = self.push_option(key, OptionType::Key, true);
        KeySlot {
            key: self.options[index as usize].key,
            index,
        }
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
        self.imp = custom_imp(f);
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

    /// Declares that a node of this type finishes in the tick it is
    /// visited: it never returns Running and has no children (a condition,
    /// an instant action). The engine then treats it as it treats the
    /// built-in conditions and actions: the composites above it may take
    /// the plain path, which calls the node's tick with less bookkeeping
    /// around it, so a one-visit node costs about what a built-in leaf
    /// costs (README, *Performance*). Its options, slots, memory, panic
    /// guard and errors are as any node type's.
    ///
    /// The declaration is a contract: a node that returns Running anyway
    /// ends the tick in Error at that node
    /// ([`TickErrorKind::OneVisitRunning`](crate::tick::TickErrorKind::OneVisitRunning),
    /// code `T0005`), whichever path ticked it. A node type declared so
    /// that takes children is refused when it is registered
    /// ([`RegistryError::OneVisitWithChildren`]). Its halt hook, if it has
    /// one, never runs: a node that never runs is never halted.
    ///
    /// ```
    /// use aido::extend::{KeySlot, NodeType, OptSlot};
    /// use aido::{Registry, Status, compile_str, read_value, run_tick};
    ///
    /// let mut hungry = NodeType::new("npc/hungry?").one_visit(true);
    /// let key: KeySlot = hungry.key_slot("key");
    /// let min: OptSlot<i64> = hungry.slot("min");
    /// let hungry = hungry.tick(move |ctx| {
    ///     let min = ctx.get(min)?;
    ///     Ok(Status::from_bool(ctx.db_at(key).and_then(|h| h.as_int()) > Some(min)))
    /// });
    /// assert!(hungry.is_one_visit());
    /// let mut registry = Registry::new();
    /// registry.node_type(hungry).unwrap();
    /// let tree = compile_str(
    ///     "t.edn",
    ///     "[:selector [:sequence [:npc/hungry? {:key :hunger :min 8}] [:define! {:key :action :val :eat}]] \
    ///                 [:define! {:key :action :val :wander}]]",
    ///     &registry,
    /// )
    /// .unwrap();
    /// let tick = run_tick(read_value("{:hunger 9}").unwrap(), &tree);
    /// assert_eq!(tick.db.to_string(), "{:hunger 9, :action :eat}");
    /// ```
    pub fn one_visit(mut self, one_visit: bool) -> NodeType {
        self.one_visit = one_visit;
        self
    }

    /// Whether a node of this type finishes in the tick it is visited
    /// ([`NodeType::one_visit`]).
    pub fn is_one_visit(&self) -> bool {
        self.one_visit
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
    /// [`NodeType::slot`], [`NodeType::option`] or [`NodeType::required`]).
    /// A key the node type does not declare is a typo:
    /// [`Registry::node_type`](crate::Registry::node_type) refuses the node
    /// type ([`RegistryError::UndeclaredOption`]).
    pub fn option_doc(mut self, key: &str, text: &str) -> NodeType {
        let key = Keyword::new(key.trim_start_matches(':'));
        match self.options.iter_mut().find(|o| o.key == key) {
            Some(option) => option.doc = Some(Arc::from(text)),
            None => self.undeclared_docs.push(key),
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

/// An option a node type declared with [`NodeType::slot`], read by its tick
/// with [`NodeCtx::get`] as a `T`. A copyable handle: move it into the tick
/// closure.
pub struct OptSlot<T> {
    pub(crate) key: Keyword,
    pub(crate) index: u32,
    /// The word a node's slot holds when it has a constant this slot reads
    /// in place (`Slot::tagged`): the key and `T`'s scalar code.
    pub(crate) tagged: u64,
    value: PhantomData<fn() -> T>,
}

impl<T> Clone for OptSlot<T> {
    fn clone(&self) -> OptSlot<T> {
        *self
    }
}

impl<T> Copy for OptSlot<T> {}

impl<T> fmt::Debug for OptSlot<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "OptSlot({}, {})", self.key, std::any::type_name::<T>())
    }
}

impl<T> OptSlot<T> {
    /// The option's key.
    pub fn key(&self) -> Keyword {
        self.key
    }
}

/// A key-path option a node type declared with [`NodeType::key_slot`]: the
/// tick reads and writes the db at it with [`NodeCtx::db_at`] and
/// [`NodeCtx::set_db_at`].
#[derive(Debug, Clone, Copy)]
pub struct KeySlot {
    pub(crate) key: Keyword,
    pub(crate) index: u32,
}

impl KeySlot {
    /// The option's key.
    pub fn key(&self) -> Keyword {
        self.key
    }
}

mod sealed {
    pub trait Sealed {}
}

/// A type an option slot reads ([`NodeType::slot`]): it gives the option's
/// declared type, and whether it is required (every type but `Option<T>`).
///
/// | `T` | option type |
/// |---|---|
/// | `i64` | [`OptionType::Int`] |
/// | `u64` | [`OptionType::Count`] |
/// | `f64` | [`OptionType::Number`] (an integer is read as a float) |
/// | `bool` | [`OptionType::Bool`] |
/// | [`Keyword`] | [`OptionType::Keyword`] |
/// | [`ArcStr`](crate::value::ArcStr) | [`OptionType::Str`] (the text is shared, not copied) |
/// | [`Value`] | [`OptionType::Any`] |
/// | `Option<T>` of these | the same, optional: `None` when not given |
pub trait SlotValue: sealed::Sealed + Sized {
    /// Whether the node must have the option.
    const REQUIRED: bool;
    /// The code of the scalar this type reads from a slot's bits
    /// (`crate::tree::scalar`: a value that is no work to copy, given as
    /// a constant, is read without a match), or `NONE` for a type that is
    /// not read so.
    #[doc(hidden)]
    const SCALAR_CODE: u32;
    /// The option's declared type.
    fn option_type() -> OptionType;
    /// The value read from a slot's bits, for a type with a
    /// [`SlotValue::SCALAR_CODE`]; `None` for any other.
    #[doc(hidden)]
    fn from_bits(bits: u64) -> Option<Self>;
    /// The value read from the option, `None` when absent; `None` again when
    /// it cannot be read (a value of the wrong type, which the declared type
    /// refuses at compile time or at the tick).
    fn from_option(value: Option<&Value>) -> Option<Self>;
}

macro_rules! slot_value {
    ($t:ty, $ty:expr, $code:expr, |$b:ident| $from_bits:expr, |$v:ident| $read:expr) => {
        impl sealed::Sealed for $t {}
        impl SlotValue for $t {
            const REQUIRED: bool = true;
            const SCALAR_CODE: u32 = $code;
            fn option_type() -> OptionType {
                $ty
            }
            #[inline(always)]
            fn from_bits($b: u64) -> Option<$t> {
                $from_bits
            }
            #[inline(always)]
            fn from_option(value: Option<&Value>) -> Option<$t> {
                let $v = value?;
                $read
            }
        }
        impl sealed::Sealed for Option<$t> {}
        impl SlotValue for Option<$t> {
            const REQUIRED: bool = false;
            const SCALAR_CODE: u32 = $code;
            fn option_type() -> OptionType {
                $ty
            }
            #[inline(always)]
            fn from_bits(bits: u64) -> Option<Option<$t>> {
                <$t as SlotValue>::from_bits(bits).map(Some)
            }
            #[inline(always)]
            fn from_option(value: Option<&Value>) -> Option<Option<$t>> {
                match value {
                    None => Some(None),
                    Some(v) => <$t>::from_option(Some(v)).map(Some),
                }
            }
        }
    };
}

use crate::tree::scalar;

slot_value!(i64, OptionType::Int, scalar::INT, |b| Some(b as i64), |v| v
    .as_int());
slot_value!(u64, OptionType::Count, scalar::COUNT, |b| Some(b), |v| v
    .as_int()
    .and_then(|i| u64::try_from(i).ok()));
slot_value!(
    f64,
    OptionType::Number,
    scalar::NUMBER,
    |b| Some(f64::from_bits(b)),
    |v| v.as_f64()
);
slot_value!(
    bool,
    OptionType::Bool,
    scalar::BOOL,
    |b| Some(b != 0),
    |v| {
        match v {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }
);
slot_value!(
    Keyword,
    OptionType::Keyword,
    scalar::KEYWORD,
    |b| u32::try_from(b).ok().map(Keyword::from_index),
    |v| match v {
        Value::Keyword(k) => Some(*k),
        _ => None,
    }
);
slot_value!(
    crate::value::ArcStr,
    OptionType::Str,
    scalar::NONE,
    |_b| None,
    |v| match v {
        Value::Str(s) => Some(s.clone()),
        _ => None,
    }
);
slot_value!(Value, OptionType::Any, scalar::NONE, |_b| None, |v| Some(
    v.clone()
));

/// A function callable from `[:aido/fn name args..]`.
#[derive(Clone)]
pub struct Function {
    pub(crate) name: Keyword,
    pub(crate) arity: Arity,
    pub(crate) f: Arc<FunctionFn>,
    pub(crate) halt: Option<Arc<FnHaltFn>>,
    /// Its compile step, run once for each call in a tree.
    pub(crate) compile: Option<Arc<CompileFn>>,
    /// What the function does, for the reference and models.
    pub(crate) doc: Option<Arc<str>>,
    /// Declared in a node model: known to the compiler, without behaviour.
    pub(crate) declared: bool,
    /// One of the library's standard functions (not a host's replacement).
    pub(crate) standard: bool,
}

impl Function {
    /// Whether this is the library's own standard function of its name (a
    /// host or a node model may register another under that name).
    pub fn is_standard(&self) -> bool {
        self.standard
    }

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

/// Why a function's compile step refused a call: becomes a compile error
/// (E0012) at the argument it names, else at the call.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ArgError {
    /// The argument at fault, counted from 0, if one is.
    pub arg: Option<usize>,
    /// What is wrong, in one sentence.
    pub message: String,
}

impl ArgError {
    /// A problem with the call as a whole.
    pub fn new(message: impl Into<String>) -> ArgError {
        ArgError {
            arg: None,
            message: message.into(),
        }
    }

    /// A problem with argument `arg` (counted from 0).
    pub fn at(arg: usize, message: impl Into<String>) -> ArgError {
        ArgError {
            arg: Some(arg),
            message: message.into(),
        }
    }
}

impl fmt::Display for ArgError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.arg {
            Some(i) => write!(f, "argument {}: {}", i + 1, self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for ArgError {}

/// Why a registration was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RegistryError {
    /// A built-in node type or function already has this name.
    Builtin(String),
    /// No function of this name is registered.
    UnknownFunction(String),
    /// The node type documents an option it does not declare (a typo in
    /// [`NodeType::option_doc`]).
    UndeclaredOption {
        /// The node type's name.
        node_type: String,
        /// The option named.
        option: String,
        /// The options it declares.
        declared: Vec<String>,
    },
    /// The node type is declared to finish in one visit
    /// ([`NodeType::one_visit`]) but takes children.
    OneVisitWithChildren {
        /// The node type's name.
        node_type: String,
        /// The children it takes, in words ("exactly 1 child").
        arity: String,
    },
}

impl RegistryError {
    /// A stable code: `G0001` (a built-in name), `G0002` (no such
    /// function), `G0003` (an option documented but not declared), `G0004`
    /// (a node type declared to finish in one visit that takes children).
    pub fn code(&self) -> &'static str {
        match self {
            RegistryError::Builtin(_) => "G0001",
            RegistryError::UnknownFunction(_) => "G0002",
            RegistryError::UndeclaredOption { .. } => "G0003",
            RegistryError::OneVisitWithChildren { .. } => "G0004",
        }
    }
}

impl fmt::Display for RegistryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RegistryError::Builtin(name) => {
                write!(f, "`{name}` is built in and cannot be replaced")
            }
            RegistryError::UnknownFunction(name) => write!(f, "no function `{name}` is registered"),
            RegistryError::UndeclaredOption {
                node_type,
                option,
                declared,
            } => {
                write!(
                    f,
                    "node type `{node_type}` documents option `{option}`, which it does not declare"
                )?;
                match declared.as_slice() {
                    [] => f.write_str(" (it declares none)"),
                    names => {
                        let names: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
                        write!(f, " (it declares {})", names.join(", "))
                    }
                }
            }
            RegistryError::OneVisitWithChildren { node_type, arity } => write!(
                f,
                "node type `{node_type}` is declared to finish in one visit but takes {arity}: \
                 such a node type is a leaf"
            ),
        }
    }
}

impl std::error::Error for RegistryError {}

#[cfg(test)]
mod tests {
    use super::NodeType;
    use crate::{Registry, Status, compile_str};

    /// The plain flags of a tree's nodes, in pre-order, with `:t/ok?` a node
    /// type declared to finish in one visit and `:t/ok` one that is not.
    fn plain(text: &str) -> Vec<bool> {
        let mut registry = Registry::new();
        for (name, one_visit) in [("t/ok?", true), ("t/ok", false)] {
            let node_type = NodeType::new(name)
                .one_visit(one_visit)
                .tick(|_| Ok(Status::Success));
            if registry.node_type(node_type).is_err() {
                return Vec::new();
            }
        }
        match compile_str("t.edn", text, &registry) {
            Ok(tree) => tree.nodes.iter().map(|n| n.plain).collect(),
            Err(_) => Vec::new(),
        }
    }

    #[test]
    fn a_one_visit_node_is_a_plain_leaf_and_its_composites_stay_plain() {
        assert_eq!(
            plain("[:selector [:sequence [:t/ok?] [:inc! {:key :a}]] [:invert [:t/ok?]]]"),
            vec![true; 6]
        );
        // Undeclared, it may run: it and every node above it are general.
        assert_eq!(
            plain("[:selector [:sequence [:t/ok] [:inc! {:key :a}]] [:invert [:t/ok?]]]"),
            vec![false, false, false, true, true, true]
        );
        // A precondition keeps a one-visit node general, as it does a built-in leaf.
        assert_eq!(
            plain("[:sequence [:t/ok? {:aido/skip-if false}] [:success]]"),
            vec![false, false, true]
        );
    }

    #[test]
    fn a_one_visit_node_cannot_run_long_and_keeps_its_memory_kind() {
        let one_visit = NodeType::new("t/ok?")
            .one_visit(true)
            .persistent_memory(true);
        let kind = crate::tree::Kind::Custom {
            node_type: std::sync::Arc::new(one_visit),
            options: crate::tree::CustomOptions::default(),
        };
        let traits = kind.traits();
        assert_eq!(traits.plain, Some(crate::nodes::Shape::Leaf));
        assert!(!traits.runs_long);
        assert_eq!(
            traits.memory,
            crate::nodes::Memory::User { persistent: true }
        );
    }

    #[test]
    fn a_user_node_keeps_its_node_types_tick_and_a_stubbed_one_its_stubs() {
        // The call finds the closure in the node: it is the node type's
        // own, shared; options built without it (a stub's) leave the call
        // to the node type.
        let mut registry = Registry::new();
        registry
            .node_type(NodeType::new("t/ok?").tick(|_| Ok(Status::Success)))
            .unwrap();
        let tree = compile_str("t.edn", "[:sequence [:t/ok?] [:t/ok?]]", &registry).unwrap();
        for node in &tree.nodes[1..] {
            let crate::tree::Kind::Custom { node_type, options } = &node.kind else {
                panic!("{:?}", node.kind);
            };
            let super::Imp::Custom(own) = &node_type.imp else {
                panic!("a built-in imp");
            };
            let address = |f: &super::CallFn| (f as *const super::CallFn).cast::<()>();
            assert_eq!(options.call().map(address), Some(address(&***own)));
        }
        let stubbed = crate::tree::CustomOptions::default();
        assert!(stubbed.call().is_none());
    }

    /// The registry of `t/copy?` (declared to finish in one visit) and
    /// `t/copy` (not): each reads a slot of every type and writes what it
    /// read, in their order, as a vector at its `:out` (a key slot);
    /// `t/foreign?` reads `t/copy?`'s `:int` slot (declared there as an
    /// `i64`, here as a keyword, at the same place).
    fn copy_registry() -> Registry {
        use crate::value::{ArcStr, Keyword, Value};
        let mut registry = Registry::new();
        let mut foreign_int = None;
        for (name, one_visit) in [("t/copy?", true), ("t/copy", false)] {
            let mut copy = NodeType::new(name).one_visit(one_visit);
            let int = copy.slot::<i64>("int");
            let count = copy.slot::<u64>("count");
            let num = copy.slot::<f64>("num");
            let flag = copy.slot::<bool>("flag");
            let kw = copy.slot::<Keyword>("kw");
            let maybe = copy.slot::<Option<i64>>("maybe");
            let text = copy.slot::<ArcStr>("text");
            let any = copy.slot::<Value>("any");
            let out = copy.key_slot("out");
            foreign_int.get_or_insert(int);
            let copy = copy.tick(move |ctx| {
                let read = vec![
                    Value::Int(ctx.get(int)?),
                    Value::Int(i64::try_from(ctx.get(count)?).unwrap_or(-1)),
                    Value::Float(ctx.get(num)?),
                    Value::Bool(ctx.get(flag)?),
                    Value::Keyword(ctx.get(kw)?),
                    ctx.get(maybe)?.map_or(Value::Nil, Value::Int),
                    Value::Str(ctx.get(text)?),
                    ctx.get(any)?,
                ];
                ctx.set_db_at(out, Value::Vector(read.into()))?;
                Ok(Status::Success)
            });
            assert!(registry.node_type(copy).is_ok());
        }
        let mut foreign = NodeType::new("t/foreign?").one_visit(true);
        let _own = foreign.slot::<Keyword>("int");
        let int = foreign_int;
        let foreign = foreign.tick(move |ctx| match int {
            Some(int) => Ok(Status::from_bool(ctx.get(int)? > 0)),
            None => Ok(Status::Failure),
        });
        assert!(registry.node_type(foreign).is_ok());
        registry
    }

    /// Ticks `text` from `db` on both paths, traced and not: the status,
    /// the db and the trace are the same each way; returns them, and the
    /// error's kind and node type.
    fn tick_both_ways(text: &str, db: &str) -> (Status, String, String, Option<String>) {
        use crate::tick::{TickOptions, run_tick_general_path, run_tick_traced};
        let registry = copy_registry();
        let tree = compile_str("t.edn", text, &registry).unwrap();
        let db = crate::read_value(db).unwrap();
        let mut seen = Vec::new();
        for general in [false, true] {
            let mut trace = Vec::new();
            let options = TickOptions::default();
            let traced = if general {
                let options = TickOptions {
                    trace: true,
                    ..TickOptions::default()
                };
                let tick = run_tick_general_path(db.clone(), &tree, &options);
                trace = tick.trace().to_vec();
                tick
            } else {
                run_tick_traced(db.clone(), &tree, &options, &mut trace)
            };
            let plain = if general {
                run_tick_general_path(db.clone(), &tree, &options)
            } else {
                crate::run_tick(db.clone(), &tree)
            };
            for tick in [&traced, &plain] {
                let error = tick
                    .error
                    .as_deref()
                    .map(|e| format!("{:?} {}", e.kind, e.node_type));
                seen.push((
                    tick.status,
                    tick.db.to_string(),
                    format!("{trace:?}"),
                    error,
                ));
            }
        }
        for other in &seen[1..] {
            assert_eq!(other, &seen[0], "{text}");
        }
        seen.swap_remove(0)
    }

    #[test]
    fn a_constant_of_a_scalar_slot_is_laid_out_for_its_read_when_compiled() {
        // Each slot's word is its key with the code of what its bits hold,
        // as the slot that reads it makes it (`OptSlot::tagged`): equal
        // for a constant of the slot's type, the absent code for an option
        // not given, none for anything else.
        use crate::tree::{Kind, scalar};
        use crate::value::Keyword;
        let registry = copy_registry();
        let text = "[:t/copy? {:out :o :int -3 :count 4 :num 2 :flag true :kw :k \
                    :text \"s\" :any [:aido/db :i]}]";
        let tree = compile_str("t.edn", text, &registry).unwrap();
        let Some(Kind::Custom { options, .. }) = tree.nodes.first().map(|n| &n.kind) else {
            panic!("not a user node");
        };
        let laid_out: Vec<(String, u32, u64)> = options
            .slots()
            .iter()
            .map(|s| (s.key().to_string(), (s.tagged >> 32) as u32, s.bits))
            .collect();
        let expected = [
            (":int", scalar::INT, -3i64 as u64),
            (":count", scalar::COUNT, 4),
            (":num", scalar::NUMBER, 2f64.to_bits()),
            (":flag", scalar::BOOL, 1),
            (":kw", scalar::KEYWORD, u64::from(Keyword::new("k").index())),
            (":maybe", scalar::ABSENT, 0),
            (":text", scalar::NONE, 0),
            (":any", scalar::NONE, 0),
            (":out", scalar::NONE, 0),
        ]
        .map(|(k, code, bits)| (k.to_owned(), code, bits));
        assert_eq!(laid_out, expected);
        let mut copy = NodeType::new("t/copy?");
        assert_eq!(
            copy.slot::<i64>("int").tagged,
            options.slots()[0].tagged,
            "the slot's word"
        );
        assert_eq!(
            copy.slot::<Option<i64>>("maybe").tagged >> 32,
            u64::from(scalar::INT)
        );
    }

    #[test]
    fn a_slot_of_each_type_reads_a_constant_in_place_and_anything_else_as_before() {
        // A constant of the declared type (an integer given for a number
        // is read as a float), an optional option given or not, a string
        // and a collection; a dynamic option resolved at the tick; declared
        // to finish in one visit or not, at the root or in a sequence.
        let all = ":int -3 :count 4 :num 2 :flag true :kw :k :text \"s\" :any [1 2]";
        let copied = "[-3 4 2.0 true :k nil \"s\" [1 2]]";
        for (name, path) in [("t/copy?", "plain"), ("t/copy", "general")] {
            for (options, db, out) in [
                (all.to_owned(), "{}", copied.to_owned()),
                (
                    format!(
                        "{} :maybe 5 :num 2.5 :flag false",
                        all.replace(":num 2 :flag true ", "")
                    ),
                    "{}",
                    "[-3 4 2.5 false :k 5 \"s\" [1 2]]".to_owned(),
                ),
                (
                    ":int [:aido/db :i] :count [:aido/db :i] :num [:aido/db :i] \
                     :flag [:aido/db :b] :kw [:aido/db :w] :maybe [:aido/db :i] \
                     :text [:aido/db :s] :any [:aido/db :i]"
                        .to_owned(),
                    "{:i 7 :b true :w :v :s \"t\"}",
                    "[7 7 7.0 true :v 7 \"t\" 7]".to_owned(),
                ),
            ] {
                let alone = format!("[:{name} {{:out :o {options}}}]");
                let (status, after, _, error) = tick_both_ways(&alone, db);
                assert_eq!((status, error), (Status::Success, None), "{path} {alone}");
                assert!(after.ends_with(&format!(":o {out}}}")), "{path} {after}");
                let within = format!("[:sequence [:inc! {{:key :n}}] {alone} [:inc! {{:key :n}}]]");
                let (status, after, trace, _) = tick_both_ways(&within, db);
                assert_eq!(status, Status::Success, "{path} {within}");
                assert!(after.contains(&format!(":n 2, :o {out}")), "{path} {after}");
                let visits =
                    ["1", "2", "3", "0"].map(|n| format!("node: NodeIndex({n}), status: Success"));
                assert_eq!(trace.matches("Ticked").count(), 4, "{trace}");
                assert!(visits.iter().all(|v| trace.contains(v.as_str())), "{trace}");
            }
            // A dynamic option of another type than the slot's is the
            // node's error, the db as it was and the sequence stopped.
            let wrong = format!(
                "[:sequence [:{name} {{:out :o {} :int [:aido/db :w]}}] [:inc! {{:key :n}}]]",
                all.replace(":int -3 ", "")
            );
            let (status, after, trace, error) = tick_both_ways(&wrong, "{:w :v}");
            assert_eq!(
                (status, error),
                (Status::Error, Some(format!("Other :{name}"))),
                "{path}"
            );
            assert!(after.starts_with("{:w :v, :aido/error {"), "{after}");
            assert!(
                !after.contains(":n ") && !trace.contains("NodeIndex(2)"),
                "{trace}"
            );
        }
        // A slot of another node type, of the same key at the same place
        // but of another type: read through the general read, as before.
        for (int, status) in [(":x", Status::Error), ("[:aido/db :w]", Status::Error)] {
            let text = format!("[:t/foreign? {{:int {int}}}]");
            let (got, _, _, error) = tick_both_ways(&text, "{:w :v}");
            assert_eq!((got, error), (status, Some("Other :t/foreign?".to_owned())));
        }
    }

    #[test]
    fn a_db_left_too_deep_by_a_node_is_its_error_on_every_path() {
        // The closure checks a db it handed out before it returns (see
        // `CallFn`): the node is the tick's Error there, and its sequence
        // stops at it, declared or not, at the root or below, traced or not.
        use crate::tick::{TickErrorKind, TickOptions, run_tick_with_options};
        use crate::value::Value;
        let mut registry = Registry::new();
        for (name, one_visit) in [("t/deep?", true), ("t/deep", false)] {
            let node_type = NodeType::new(name).one_visit(one_visit).tick(|ctx| {
                let mut value = Value::Int(0);
                for _ in 0..crate::read::MAX_DEPTH {
                    value = Value::Vector(crate::value::thin_vec![value]);
                }
                ctx.db_mut().insert(Value::keyword("deep"), value);
                Ok(Status::Success)
            });
            assert!(registry.node_type(node_type).is_ok());
        }
        for (text, steps) in [
            ("[:t/deep?]", 1),
            ("[:t/deep]", 1),
            ("[:sequence [:t/deep?] [:inc! {:key :n}]]", 2),
            ("[:sequence [:t/deep] [:inc! {:key :n}]]", 2),
        ] {
            let tree = compile_str("t.edn", text, &registry).unwrap();
            for trace in [false, true] {
                let options = TickOptions {
                    trace,
                    ..TickOptions::default()
                };
                let tick = run_tick_with_options(Value::map(), &tree, &options);
                let kind = tick.error.as_deref().map(|e| e.kind);
                assert_eq!(
                    (tick.status, kind, tick.steps),
                    (Status::Error, Some(TickErrorKind::TooDeep), steps),
                    "{text}, traced {trace}"
                );
            }
        }
    }
}
