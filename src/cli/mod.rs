//! Subcommands of the `aido` tool.

pub(crate) fn run(_args: &[std::ffi::OsString]) -> i32 {
    0
}
