//! The cost of recording npc ticks as a session records them (a
//! [`Recorder`] comparing the keys each tick wrote), for instruction and
//! allocation counts: `record_cost N` records N ticks into one record and
//! drops it. Run it under callgrind with 20000 and 40000 and divide the
//! difference by 20,000: what one recorded tick costs, its share of
//! growing and dropping the record included, without the program's start.
//! `record_cost N plain` ticks the same way without recording,
//! `record_cost N traced` traces into a kept buffer, for the ratios, and
//! `record_cost N full` records with a recorder comparing every value.
//! With `wide` as well, the db holds 20 more keys that no node reads or
//! writes: more than a recorder compares whole, so that the engine notes
//! the keys each tick writes.
//!
//! ```sh
//! cargo bench --bench record_cost --no-run
//! valgrind --tool=callgrind target/release/deps/record_cost-HASH 20000
//! valgrind --tool=callgrind target/release/deps/record_cost-HASH 40000
//! ```
//!
//! Run by `cargo bench`, it records once and prints the count.

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use aido::record::Recorder;
use aido::tick::{TickOptions, run_tick_traced};
use aido::{Registry, compile_str, read_value, run_tick};

use common::{NPC, NPC_DB};

fn main() {
    // `cargo bench` passes `--bench`; a number is the count of ticks.
    let ticks = std::env::args()
        .skip(1)
        .find_map(|a| a.parse::<usize>().ok())
        .unwrap_or(1);
    let mode = if std::env::args().any(|a| a == "plain") {
        "plain"
    } else if std::env::args().any(|a| a == "traced") {
        "traced"
    } else if std::env::args().any(|a| a == "full") {
        "full"
    } else {
        "recorded"
    };
    let tree = compile_str("npc.edn", NPC, &Registry::new()).expect("npc compiles");
    let mut db = read_value(NPC_DB).expect("the npc db reads");
    if std::env::args().any(|a| a == "wide")
        && let Some(map) = db.as_map_mut()
    {
        for i in 0..20 {
            map.insert(
                aido::Value::keyword(&format!("other-{i}")),
                aido::Value::Int(i),
            );
        }
    }
    if mode == "plain" {
        for _ in 0..ticks {
            db = run_tick(db, &tree).db;
        }
    } else if mode == "traced" {
        let (options, mut trace) = (TickOptions::default(), Vec::new());
        for _ in 0..ticks {
            db = run_tick_traced(db, &tree, &options, &mut trace).db;
        }
    } else {
        let recorder = Recorder::new(&tree, &db);
        let mut recorder = if mode == "full" {
            recorder
        } else {
            recorder.comparing_written_keys()
        };
        for _ in 0..ticks {
            db = recorder.tick(db, &tree).db;
        }
        drop(std::hint::black_box(recorder.finish()));
    }
    println!("record_cost: {ticks} npc ticks {mode}");
}
