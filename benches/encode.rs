//! The binary encoding of a db against EDN text, per agent: the size of
//! each (printed once, before the timings) and the time to encode, decode,
//! print and read. Two agents: the npc example's db after ten ticks of its
//! tree (with its `:aido/*` state), and a chat agent with forty turns of
//! history.

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use std::hint::black_box;

use aido::value::{decode, encode};
use aido::{Registry, Value, compile_str, read_value, run_tick};
use criterion::{Criterion, criterion_group, criterion_main};

use common::{NPC, NPC_DB};

fn npc_db() -> Value {
    let tree = compile_str("npc.edn", NPC, &Registry::new()).unwrap();
    let mut db = read_value(NPC_DB).unwrap();
    db.as_map_mut()
        .unwrap()
        .insert(Value::keyword("aido/seed"), Value::Int(7));
    for _ in 0..10 {
        db = run_tick(db, &tree).db;
    }
    db
}

fn chat_db() -> Value {
    let mut text = String::from("{:user \"u-1042\", :turn 40, :history [");
    for i in 0..40 {
        let role = if i % 2 == 0 { ":user" } else { ":assistant" };
        text.push_str(&format!(
            "{{:role {role}, :text \"message number {i}, of a conversation about trees\", :at {}}} ",
            1_764_000_000 + i * 17
        ));
    }
    text.push_str("], :aido/memory {\"root/0\" {:index 2}}, :aido/running [\"root/0\" \"root/0/2\"], :aido/requests 40}");
    read_value(&text).unwrap()
}

fn encoding(c: &mut Criterion) {
    let agents = [("npc", npc_db()), ("chat", chat_db())];
    for (name, db) in &agents {
        let text = db.to_string();
        let bytes = encode(db).unwrap();
        eprintln!(
            "encode/{name}: EDN {} bytes, binary {} bytes ({:.0}%)",
            text.len(),
            bytes.len(),
            100.0 * bytes.len() as f64 / text.len() as f64
        );
    }
    let mut group = c.benchmark_group("encode");
    for (name, db) in &agents {
        let text = db.to_string();
        let bytes = encode(db).unwrap();
        group.bench_function(format!("{name}/binary_encode"), |b| {
            b.iter(|| encode(black_box(db)).unwrap())
        });
        group.bench_function(format!("{name}/binary_decode"), |b| {
            b.iter(|| decode(black_box(&bytes)).unwrap())
        });
        group.bench_function(format!("{name}/edn_print"), |b| {
            b.iter(|| black_box(db).to_string())
        });
        group.bench_function(format!("{name}/edn_read"), |b| {
            b.iter(|| read_value(black_box(&text)).unwrap())
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = common::config();
    targets = encoding
}
criterion_main!(benches);
