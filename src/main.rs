//! The `aido` command-line tool: the library's CLI (`aido::cli`) with the
//! built-in node types, and a counting allocator for `aido bench`.

mod alloc_count;

/// Counts bytes and allocation calls for `aido bench`; otherwise the system allocator.
#[global_allocator]
static ALLOCATOR: alloc_count::Counting = alloc_count::Counting;

fn main() {
    aido::cli::Cli::new(aido::Registry::new())
        .alloc_counter(aido::cli::AllocCounter {
            bytes_in_use: alloc_count::bytes_in_use,
            allocation_calls: alloc_count::allocation_calls,
        })
        .main()
}
