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
//!
//! `compile_cost N fingerprint` asks each tree for its fingerprint too, as
//! the first tick of a db that keeps state does: a tree compiled from text
//! then reads its text again for its data (see `Tree::form`).
//! `compile_cost N value` does the same for the tree compiled from the
//! read value (`read`, then `compile_document`), the way that keeps the
//! data from the start: the two side by side are what the lazy data costs
//! a tree that needs it.
//!
//! `memory` (with any of the above) gives the root selector `{:memory
//! true}`: the tree keeps state (its root is no plain node), so that a
//! compile from text makes its data from the reader's table rather than
//! leaving it to be read again (see `compile::compile_source_with`).

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use std::sync::Arc;

use aido::compile::compile_document;
use aido::source::Source;
use aido::{Registry, compile_str, read};

use common::{count_nodes, large_tree};

fn main() {
    // `cargo bench` passes `--bench`; a number is the count of compiles.
    let times = std::env::args()
        .skip(1)
        .find_map(|a| a.parse::<usize>().ok())
        .unwrap_or(1);
    let args: Vec<String> = std::env::args().collect();
    let fingerprint = args.iter().any(|a| a == "fingerprint");
    let value = args.iter().any(|a| a == "value");
    let memory = args.iter().any(|a| a == "memory");
    let registry = Registry::new();
    let mut text = large_tree(7, 4);
    if memory {
        text = text.replacen("[:selector", "[:selector {:memory true}", 1);
    }
    for _ in 0..times {
        let tree = if value {
            let doc = read(Arc::new(Source::new("large.edn", text.as_str())))
                .expect("the generated tree reads");
            compile_document(doc, &registry).expect("the generated tree compiles")
        } else {
            compile_str("large.edn", &text, &registry).expect("the generated tree compiles")
        };
        if fingerprint || value {
            std::hint::black_box(tree.fingerprint());
        }
        drop(std::hint::black_box(tree));
    }
    println!(
        "compile_cost: {times} compile(s) of {} nodes, {} bytes of text",
        count_nodes(&text),
        text.len()
    );
}
