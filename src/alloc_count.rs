//! A counting global allocator for the binary, so that `aido bench` can
//! measure (not estimate) the memory an agent's db holds and the allocations
//! a tick makes. It wraps [`System`] and keeps two relaxed counters; the
//! library knows nothing of it.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// Bytes currently allocated through the global allocator.
static BYTES_IN_USE: AtomicUsize = AtomicUsize::new(0);

/// Calls to `alloc`, `alloc_zeroed` and `realloc` so far.
static ALLOCATION_CALLS: AtomicU64 = AtomicU64::new(0);

/// The system allocator, counting what passes through it.
pub(crate) struct Counting;

/// Bytes currently allocated by the whole process through the global allocator.
pub(crate) fn bytes_in_use() -> usize {
    BYTES_IN_USE.load(Ordering::Relaxed)
}

/// How many allocation calls (including reallocations) the process has made.
pub(crate) fn allocation_calls() -> u64 {
    ALLOCATION_CALLS.load(Ordering::Relaxed)
}

fn allocated(bytes: usize) {
    BYTES_IN_USE.fetch_add(bytes, Ordering::Relaxed);
    ALLOCATION_CALLS.fetch_add(1, Ordering::Relaxed);
}

// A global allocator can only be written as an `unsafe impl` of `GlobalAlloc`:
// the crate denies unsafe code, and this is the one place that needs it. Every
// method hands its arguments unchanged to `System`, so the caller's guarantees
// carry over, and only counts what `System` returned.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract for `alloc` is passed on as it is.
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            allocated(layout.size());
        }
        ptr
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract for `alloc_zeroed` is passed on as it is.
        let ptr = unsafe { System.alloc_zeroed(layout) };
        if !ptr.is_null() {
            allocated(layout.size());
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` and `layout` come from this allocator, which got them from `System`.
        unsafe { System.dealloc(ptr, layout) };
        BYTES_IN_USE.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` and `layout` come from this allocator, which got them
        // from `System`; the caller vouches for `new_size`.
        let new_ptr = unsafe { System.realloc(ptr, layout, new_size) };
        // On failure the old block is untouched and still counted.
        if !new_ptr.is_null() {
            let old_size = layout.size();
            if new_size >= old_size {
                allocated(new_size - old_size);
            } else {
                BYTES_IN_USE.fetch_sub(old_size - new_size, Ordering::Relaxed);
                ALLOCATION_CALLS.fetch_add(1, Ordering::Relaxed);
            }
        }
        new_ptr
    }
}
