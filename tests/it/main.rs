//! The integration tests, in one crate so that they link once: each module
//! is one area (the reader, the compiler, the tick, the CLI...), and
//! `common` holds the helpers they share. Tests that change process-wide
//! state run in binaries of their own (`tests/alloc.rs`, a counting global
//! allocator; `tests/process_wide.rs`, the panic hook and the interner's
//! bound).

#[path = "../common/mod.rs"]
mod common;

mod browser;
mod chat;
mod chatbot;
mod cli;
mod cli_authoring;
mod cli_bench;
mod cli_clap;
mod cli_hostile;
mod cli_long;
mod cli_messages;
mod cli_pretty;
mod cli_seed;
mod cli_test;
mod cli_trim;
mod compile_errors;
mod conformance;
mod convert;
mod deep_values;
mod encode;
#[cfg(feature = "edn-rs")]
mod from_edn_rs;
mod funcs;

mod fuzz;
mod fuzz_surfaces;
// Process groups and `/proc`.
#[cfg(target_os = "linux")]
mod handler;
mod hints;
mod hostile;
mod hostile_ticks;
mod include;
mod layers;
mod long_path;
mod long_running;
mod nodes;
mod page;
#[cfg(feature = "postgres")]
mod pg;
mod plain;
#[cfg(feature = "rand")]
mod rand_api;
mod read;
mod read_errors;
mod record;
mod reference;
mod reserved_keys;
mod runner;
mod samples;
mod scaling;
mod scenario;
mod seed;
mod seed_examples;
mod shard;
#[cfg(feature = "postgres")]
mod shard_faults;
mod show;
#[cfg(feature = "insta")]
mod snapshot;
mod store;
#[cfg(all(feature = "postgres", target_os = "linux"))]
mod store_faults;
#[cfg(target_os = "linux")]
mod store_worker;
mod tick;
mod time;
mod trim;
mod trim_seed;
