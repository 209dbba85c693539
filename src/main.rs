//! The `aido` command-line tool: a thin layer that parses flags, calls the
//! library and renders results.

mod cli;

fn main() {
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    std::process::exit(cli::run(&args));
}
