//! Compile benchmarks: a generated tree of about 10,000 nodes, from text
//! (read + compile, `10k_nodes`), read alone (`read_10k_nodes`) and compiled
//! from an already read value (`10k_nodes_value`); and the npc tree.

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use aido::{Registry, compile_str, read_value};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

use common::{NPC, count_nodes, large_tree};

fn compile(c: &mut Criterion) {
    let registry = Registry::new();
    // Generated once, outside the timed part.
    let text = large_tree(7, 4);
    let nodes = count_nodes(&text);
    eprintln!(
        "compile/10k_nodes: {nodes} nodes, {} bytes of text",
        text.len()
    );
    compile_str("large.edn", &text, &registry).expect("the generated tree compiles");

    let mut group = c.benchmark_group("compile");
    group.throughput(Throughput::Elements(nodes as u64));
    group.bench_function("10k_nodes", |b| {
        b.iter(|| compile_str("large.edn", &text, &registry).unwrap())
    });
    group.bench_function("read_10k_nodes", |b| b.iter(|| read_value(&text).unwrap()));
    let value = read_value(&text).unwrap();
    group.bench_function("10k_nodes_value", |b| {
        b.iter(|| aido::compile(&value, &registry).unwrap())
    });
    group.throughput(Throughput::Elements(count_nodes(NPC) as u64));
    group.bench_function("npc", |b| {
        b.iter(|| compile_str("npc.edn", NPC, &registry).unwrap())
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = common::config();
    targets = compile
}
criterion_main!(benches);
