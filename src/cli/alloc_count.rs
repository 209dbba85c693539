//! The allocation counter `aido bench` reads: handed over by the binary
//! (whose global allocator counts), absent otherwise. The library cannot
//! install a counting allocator itself: it forbids unsafe code, and the
//! choice of global allocator belongs to the program.

use std::cell::Cell;

/// A binary's allocation counter: two functions that read its global
/// allocator's counts. See [`Cli::alloc_counter`](super::Cli::alloc_counter).
#[derive(Debug, Clone, Copy)]
pub struct AllocCounter {
    /// Bytes currently allocated by the whole process.
    pub bytes_in_use: fn() -> usize,
    /// Allocation calls (reallocations included) made so far.
    pub allocation_calls: fn() -> u64,
}

thread_local! {
    static COUNTER: Cell<Option<AllocCounter>> = const { Cell::new(None) };
}

/// Installs `counter` for the commands run on this thread.
pub(crate) fn install(counter: Option<AllocCounter>) -> Option<AllocCounter> {
    COUNTER.with(|c| c.replace(counter))
}

/// Whether a counter was handed over (else the counts read as 0).
pub(crate) fn counting() -> bool {
    COUNTER.with(|c| c.get().is_some())
}

/// Bytes currently allocated, or 0 without a counter.
pub(crate) fn bytes_in_use() -> usize {
    COUNTER.with(|c| c.get().map_or(0, |c| (c.bytes_in_use)()))
}

/// Allocation calls so far, or 0 without a counter.
pub(crate) fn allocation_calls() -> u64 {
    COUNTER.with(|c| c.get().map_or(0, |c| (c.allocation_calls)()))
}
