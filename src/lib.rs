//! Behaviour trees written as EDN data.
//!
//! A tree is Hiccup-style data, `[:ns/keyword {options}? children*]`. It is
//! [read](read()) strictly, [compiled](compile_str) against a [`Registry`] of
//! node types and functions (every problem reported at once, with its line
//! and column), and ticked with [`run_tick`], which takes a db and returns
//! the new db and a [`Status`]. All per-agent state lives in the db, so one
//! compiled [`Tree`] serves any number of agents.
//!
//! ```
//! use aido::{Registry, Status, Value, compile_str, read_value, run_tick};
//!
//! let tree = compile_str(
//!     "hungry.edn",
//!     "[:selector
//!        [:sequence [:greater-than? {:key :hunger :val 8}] [:define! {:key :action :val :eat}]]
//!        [:inc! {:key :hunger}]]",
//!     &Registry::new(),
//! )
//! .expect("the tree compiles");
//!
//! let db = read_value("{:hunger 9}").expect("the db reads");
//! let tick = run_tick(db, &tree);
//! assert_eq!(tick.status, Status::Success);
//! assert_eq!(tick.db.to_string(), "{:hunger 9, :action :eat}");
//! ```
//!
//! Register domain node types and functions in Rust:
//!
//! ```
//! use aido::{Arity, NodeType, OptionType, Registry, Status, Value, compile_str, run_tick};
//!
//! let mut registry = Registry::new();
//! registry
//!     .node_type(
//!         NodeType::new("beverage/drink!")
//!             .required("beverage", OptionType::Keyword)
//!             .tick(|ctx| {
//!                 let beverage = ctx.option("beverage")?.unwrap_or_default();
//!                 ctx.db_mut().insert(Value::keyword("drank"), beverage);
//!                 Ok(Status::Success)
//!             }),
//!     )
//!     .expect("not a built-in name");
//! registry
//!     .function("coin-toss", Arity::Exactly(0), |ctx, _args| Ok(Value::Bool(ctx.random() < 0.5)))
//!     .expect("not a built-in name");
//!
//! let tree = compile_str("tea.edn", "[:beverage/drink! {:beverage :tea}]", &registry).unwrap();
//! assert_eq!(run_tick(Value::map(), &tree).db.to_string(), "{:drank :tea}");
//! ```

//! Trees are tested as data: a [`Scenario`] runs a tree tick by tick from a
//! db with scripted inputs and [`Stubs`] in place of domain nodes, and
//! gives the recorded run and its text timeline for a snapshot; a node
//! model ([`Registry::declare_model`]) makes an application's node types
//! known to the tools, and [`cli`] is the `aido` tool itself, to ship with
//! an application's own registry.

#![forbid(unsafe_code)]

// The CLI (`aido::cli`) is written against the public face, as `aido::` paths.
extern crate self as aido;

#[cfg(feature = "rayon")]
mod batch;
pub mod cli;
mod compile;
mod diag;
mod file;
mod funcs;
mod migrate;
pub mod model;
mod nodes;
mod read;
pub mod record;
mod registry;
mod rng;
mod runner;
pub mod scenario;
mod source;
pub mod stub;
mod tick;
mod tree;
mod trim;
mod value;

#[cfg(feature = "rayon")]
pub use batch::{tick_all, tick_all_into};
pub use compile::{compile, compile_document, compile_str};
pub use diag::{Code, Diagnostic, Diagnostics, path_text};
pub use migrate::{MigratedNode, Migration, migrate, state_without_id};
pub use read::{
    Delimiter, Document, EscapeProblem, MAX_DEPTH, NameProblem, NumberProblem, ReadError,
    ReadErrorKind, Unsupported, read, read_text, read_value,
};
pub use registry::{
    Arity, Lifecycle, NodeError, NodeType, OptionSpec, OptionType, Registry, RegistryError,
};
pub use runner::{NodeProperties, PlayMode, Properties, Runner, RunnerError, TreeStatus};
pub use source::{LineCol, Source, Span, Spans};
pub use tick::{AgentTick, DropReason, DroppedResult, TickWarning};
pub use tick::{
    DEFAULT_STEP_BUDGET, FnCtx, NodeCtx, Request, Status, Tick, TickError, TickOptions, TraceEvent,
    interrupt, run_tick, run_tick_with, run_tick_with_options,
};
pub use tree::{NodeId, Tree};
pub use trim::{
    AppliedChange, DataTask, Gap, TreeSnapshot, TrimChange, TrimOutcome, TrimReport, TrimRequest,
    TrimTask, TrimTaskError, Trimmer,
};
#[cfg(feature = "edn-rs")]
pub use value::EdnRsError;
// Testing trees as data: node models, stubs, scenarios.
pub use file::{CompileFileError, compile_file};
pub use model::{ModelError, ModelErrorKind, ModelErrors};
pub use registry::Function;
pub use scenario::{
    Coverage, Expectation, GoldenDiff, Mismatch, Scenario, ScenarioError, ScenarioErrorKind,
    ScenarioRun, golden_diff,
};
pub use stub::{Stub, StubError, StubErrorKind, StubStep, StubbedCompileError, Stubs};
pub use value::{FastBuildHasher, FastHasher, Keyword, Map, PathError, Set, Symbol, Value};

// Hostile input: the JSON mappings and their errors.
pub use diag::RenderLimits;
pub use tick::{DEFAULT_WORK_BUDGET, TickErrorKind};
pub use tree::MAX_KEY_PATH;
pub use value::{
    DEFAULT_MAX_INTERNED_NAMES, interned_names, max_interned_names, set_max_interned_names,
};
pub use value::{JsonError, JsonErrorKind, JsonMapping};
