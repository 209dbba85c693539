//! Copying and dropping ordinary values (`clone_and_drop_*` times both, `drop_*`
//! dropping alone): the npc's db, and the data of a
//! generated tree of about 10,000 nodes (a few levels of maps and vectors).

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use std::hint::black_box;

use aido::read_value;
use criterion::{BatchSize, Criterion, criterion_group, criterion_main};

use common::{NPC_DB, large_tree};

fn value(c: &mut Criterion) {
    let db = read_value(NPC_DB).unwrap();
    let form = read_value(&large_tree(7, 4)).unwrap();
    let mut group = c.benchmark_group("value");
    group.bench_function("clone_and_drop_npc_db", |b| {
        b.iter(|| black_box(&db).clone())
    });
    group.bench_function("drop_npc_db", |b| {
        b.iter_batched(|| db.clone(), drop, BatchSize::SmallInput)
    });
    group.bench_function("clone_and_drop_10k_nodes", |b| {
        b.iter(|| black_box(&form).clone())
    });
    group.bench_function("drop_10k_nodes", |b| {
        b.iter_batched(|| form.clone(), drop, BatchSize::LargeInput)
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = common::config();
    targets = value
}
criterion_main!(benches);
