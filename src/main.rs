//! The `aido` command-line tool: a thin layer that parses flags, calls the
//! library and renders results.

mod alloc_count;
mod cli;

/// Counts bytes and allocation calls for `aido bench`; otherwise the system allocator.
#[global_allocator]
static ALLOCATOR: alloc_count::Counting = alloc_count::Counting;

fn main() {
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    std::process::exit(cli::run(&args));
}
