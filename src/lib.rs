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
//! use aido::extend::{Arity, NodeType};
//! use aido::value::Keyword;
//! use aido::{Registry, Status, Value, compile_str, run_tick};
//!
//! let mut registry = Registry::new();
//! let mut drink = NodeType::new("beverage/drink!");
//! // A required keyword option; the tick reads it through its slot.
//! let beverage = drink.slot::<Keyword>("beverage");
//! registry
//!     .node_type(drink.tick(move |ctx| {
//!         let beverage = ctx.get(beverage)?;
//!         ctx.db_mut().insert(Value::keyword("drank"), Value::Keyword(beverage));
//!         Ok(Status::Success)
//!     }))
//!     .expect("not a built-in name");
//! registry
//!     .function("coin-toss", Arity::Exactly(0), |ctx, _args| Ok(Value::Bool(ctx.random() < 0.5)))
//!     .expect("not a built-in name");
//!
//! let tree = compile_str("tea.edn", "[:beverage/drink! {:beverage :tea}]", &registry).unwrap();
//! assert_eq!(run_tick(Value::map(), &tree).db.to_string(), "{:drank :tea}");
//! ```

//! Trees are tested as data: a [`Scenario`](scenario::Scenario) runs a tree tick by tick from a
//! db with scripted inputs and [`Stubs`](stub::Stubs) in place of domain nodes, and
//! gives the recorded run and its text timeline for a snapshot; a node
//! model ([`Registry::declare_model`]) makes an application's node types
//! known to the tools, and `aido::cli` (feature `cli`, on by default) is the
//! `aido` tool itself, to ship with an application's own registry.

#![forbid(unsafe_code)]
// docs.rs builds with `--cfg docsrs` on nightly, which marks feature-gated items.
#![cfg_attr(docsrs, feature(doc_cfg))]

// The CLI (`aido::cli`) is written against the public face, as `aido::` paths.
extern crate self as aido;

#[cfg(feature = "rayon")]
pub mod batch;
#[cfg(feature = "cli")]
#[cfg_attr(docsrs, doc(cfg(feature = "cli")))]
pub mod cli;
pub mod compile;
pub mod diag;
pub mod extend;
pub mod forest;
mod funcs;
pub mod handler;
pub mod lint;
pub mod migrate;
pub mod model;
mod nodes;
mod pattern;
pub mod read;
pub mod record;
mod registry;
mod rng;
pub mod runner;
pub mod samples;
pub mod scenario;
pub mod schema;
pub mod session;
#[cfg(feature = "insta")]
#[cfg_attr(docsrs, doc(cfg(feature = "insta")))]
pub mod snapshot;
pub mod source;
mod spec;
pub mod store;
pub mod stub;
pub mod tick;
pub mod tree;
pub mod trim;
pub mod value;

// The dozen items most programs need; everything else is in the modules above.
pub use compile::compile_file;
pub use compile::{compile, compile_str};
pub use diag::Diagnostics;
pub use read::{ReadError, read, read_value};
pub use registry::Registry;
pub use tick::{Status, Tick, run_tick};
pub use tree::Tree;
pub use value::Value;

/// The `rand_core` that [`extend::TickRng`] implements (cargo feature
/// `rand`), so that a program's `rand` and aido's agree on the version.
#[cfg(feature = "rand")]
#[cfg_attr(docsrs, doc(cfg(feature = "rand")))]
pub use rand_core;
