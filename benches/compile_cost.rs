//! The cost of reading, compiling and dropping the generated tree of
//! `cargo bench --bench compile` (9,680 nodes), for instruction counts:
//! `compile_cost N` does it N times. Run it under callgrind once with 1 and
//! once with 3 and halve the difference: what one compile costs, without
//! the program's start and the generation of the text.
//!
//! ```sh
//! cargo bench --bench compile_cost --no-run
//! valgrind --tool=callgrind target/release/deps/compile_cost-HASH 1
//! valgrind --tool=callgrind target/release/deps/compile_cost-HASH 3
//! ```
//!
//! (Under memcheck the same difference, halved, is the allocations of one
//! compile.) Run by `cargo bench`, it compiles once and prints the size.

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use aido::{Registry, compile_str};

use common::{count_nodes, large_tree};

fn main() {
    // `cargo bench` passes `--bench`; a number is the count of compiles.
    let times = std::env::args()
        .skip(1)
        .find_map(|a| a.parse::<usize>().ok())
        .unwrap_or(1);
    let registry = Registry::new();
    let text = large_tree(7, 4);
    for _ in 0..times {
        let tree = compile_str("large.edn", &text, &registry).expect("the generated tree compiles");
        drop(std::hint::black_box(tree));
    }
    println!(
        "compile_cost: {times} compile(s) of {} nodes, {} bytes of text",
        count_nodes(&text),
        text.len()
    );
}
