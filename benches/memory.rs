//! Memory of big inputs: the peak bytes (counted by a global allocator) and
//! the time of reading, compiling and checking a generated tree of about
//! 850,000 nodes (20 MB of text), per byte of input text.
//!
//! `cargo bench --bench memory` prints the figures; `cargo bench --bench
//! memory -- --write FILE` also writes the tree's text to FILE (for
//! measuring `aido check FILE` with `/usr/bin/time -v`). Set
//! `AIDO_BENCH_DEPTH` to change the tree's depth (default 11, width 4).

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use aido::Registry;
use aido::compile::compile_source;
use aido::read::read_text;
use aido::source::Source;

use common::{count_nodes, large_tree};

static IN_USE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

/// The system allocator, keeping the bytes in use and their peak.
struct Counting;

fn grew(bytes: usize) {
    let now = IN_USE.fetch_add(bytes, Ordering::Relaxed) + bytes;
    PEAK.fetch_max(now, Ordering::Relaxed);
}

// Counts and forwards to `System`, which upholds the contract.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract for `alloc` is passed on as it is.
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            grew(layout.size());
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` and `layout` come from this allocator, which got them from `System`.
        unsafe { System.dealloc(ptr, layout) };
        IN_USE.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` and `layout` come from this allocator; the caller vouches for `new_size`.
        let new_ptr = unsafe { System.realloc(ptr, layout, new_size) };
        if !new_ptr.is_null() {
            if new_size >= layout.size() {
                grew(new_size - layout.size());
            } else {
                IN_USE.fetch_sub(layout.size() - new_size, Ordering::Relaxed);
            }
        }
        new_ptr
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Runs `f`, printing the peak bytes it added over what was in use before,
/// what it left in use, and its time; returns its result.
fn stage<R>(name: &str, input_bytes: usize, f: impl FnOnce() -> R) -> R {
    let before = IN_USE.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    let start = Instant::now();
    let result = f();
    let elapsed = start.elapsed();
    let peak = PEAK.load(Ordering::Relaxed) - before;
    let kept = IN_USE.load(Ordering::Relaxed).saturating_sub(before);
    println!(
        "{name:<28} peak {:>7.1} MB ({:>5.1} B/B)  kept {:>7.1} MB ({:>5.1} B/B)  {:>7.0} ms",
        peak as f64 / 1e6,
        peak as f64 / input_bytes as f64,
        kept as f64 / 1e6,
        kept as f64 / input_bytes as f64,
        elapsed.as_secs_f64() * 1e3,
    );
    result
}

fn main() {
    let depth = std::env::var("AIDO_BENCH_DEPTH")
        .ok()
        .and_then(|d| d.parse().ok())
        .unwrap_or(11);
    let text = large_tree(depth, 4);
    let n = text.len();
    println!(
        "memory/big_tree: {} nodes, {:.1} MB of text",
        count_nodes(&text),
        n as f64 / 1e6
    );
    let args: Vec<String> = std::env::args().collect();
    if let Some(at) = args.iter().position(|a| a == "--write") {
        let path = args.get(at + 1).expect("--write FILE");
        std::fs::write(path, &text).unwrap();
        println!("wrote {path}");
    }
    let registry = Registry::new();
    let (value, spans) = stage("read (Value + Spans)", n, || read_text(&text).unwrap());
    drop(spans);
    let tree = stage("compile(&Value): a copy", n, || {
        aido::compile(&value, &registry).unwrap()
    });
    drop(tree);
    let tree = stage("compile(Value): moved in", n, || {
        aido::compile(value, &registry).unwrap()
    });
    drop(tree);
    // What `aido check` does: the file's text moves into the source.
    let owned = text.clone();
    let tree = stage("compile_source (check)", n, || {
        compile_source(Arc::new(Source::new("big.edn", owned)), &registry).unwrap()
    });
    stage("drop the tree", n, || drop(tree));
}
