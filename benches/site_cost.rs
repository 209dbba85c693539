//! The cost of a leaf's visit, for instruction counts: `site_cost N TREE`
//! ticks one of the small trees below N times in place, starting from the
//! npc db. Run it under callgrind with 20000 and 40000 and divide the
//! difference by 20,000: what one tick costs, without the program's start.
//!
//! The trees: `domain` is a node type registered in Rust that reads one
//! option slot and one key slot (`npc/hungry?`, declared to finish in one
//! visit, as `cargo bench --bench tick` measures it; `domain-undeclared` the
//! same without the declaration), `test` the built-in `:test?` doing the same; the
//! others are a `:sequence` of ten of one leaf (`domain-10`, `test-10`,
//! `present-10`, `inc-10`, `define-10`, `success-10`), so that a leaf's
//! cost is read off against ten `:success` leaves. `absent-10` is a
//! `:selector` of ten `:present?` of a key the db does not hold (`:enemy`,
//! as npc reads it: a selector, so that each of the ten fails and the next
//! is visited); `miss-10` is `present-10` ticked on two dbs in turn that
//! hold the npc's keys in opposite orders, so that every look-up misses
//! its hint and searches. `domain-dynamic` and `test-dynamic` are `domain`
//! and `test` with the bound read from the db (`[:aido/db :hunger]`), a
//! dynamic option evaluated on every tick. `npc` is examples/npc.edn ticked in place, as
//! `cargo bench --bench tick` times it against its hand-written reference,
//! and `npc-hand` that reference (`common::hand`), so that what a tick
//! pays besides the logic can be read per instruction.
//!
//! ```sh
//! cargo bench --bench site_cost --no-run
//! valgrind --tool=callgrind target/release/deps/site_cost-HASH 20000 domain
//! valgrind --tool=callgrind target/release/deps/site_cost-HASH 40000 domain
//! ```
//!
//! Run by `cargo bench`, it ticks each tree once and prints their statuses.
//! `site_cost wide` prints the text of the generated 361-node tree
//! (`large_tree(4, 5)`) that README's instructions a visit are measured on,
//! for `aido bench` to tick.

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use aido::tick::tick_in_place;
use aido::{Registry, Status, compile_str, read_value};

use common::hand::HandNpc;
use common::{NPC, NPC_DB};

/// The trees by name: one node, or a sequence (a selector for
/// `absent-10`) of ten of one leaf.
const TREES: [(&str, &str); 15] = [
    ("domain", "[:npc/hungry? {:key :courage :min 3}]"),
    ("test", "[:test? {:key :courage :oper > :val 3}]"),
    ("domain-10", "[:npc/hungry? {:key :courage :min 3}]"),
    ("test-10", "[:test? {:key :courage :oper > :val 3}]"),
    ("present-10", "[:present? {:key :courage}]"),
    ("absent-10", "[:present? {:key :enemy}]"),
    ("miss-10", "[:present? {:key :courage}]"),
    ("inc-10", "[:inc! {:key :steps}]"),
    ("define-10", "[:define! {:key :wander :val 3}]"),
    ("success-10", "[:success]"),
    (
        "domain-undeclared",
        "[:npc/hungry-undeclared? {:key :courage :min 3}]",
    ),
    (
        "domain-undeclared-10",
        "[:npc/hungry-undeclared? {:key :courage :min 3}]",
    ),
    (
        "domain-dynamic",
        "[:npc/hungry? {:key :courage :min [:aido/db :hunger]}]",
    ),
    (
        "test-dynamic",
        "[:test? {:key :courage :oper > :val [:aido/db :hunger]}]",
    ),
    ("npc", NPC),
];

/// The registry with the domain node type: succeeds if the integer at its
/// `:key` is above its `:min`.
fn registry() -> Registry {
    let mut registry = Registry::new();
    registry.node_type(common::hungry()).unwrap();
    registry.node_type(common::hungry_undeclared()).unwrap();
    registry
}

/// The npc's db with its keys in the opposite order, for `miss-10`.
const NPC_DB_REVERSED: &str = "{:wander 0 :steps 0 :courage 7 :hunger 0}";

/// The text of tree `name`.
fn text(name: &str, leaf: &str) -> String {
    if name == "absent-10" {
        format!("[:selector {}]", [leaf; 10].join(" "))
    } else if name.ends_with("-10") {
        format!("[:sequence {}]", [leaf; 10].join(" "))
    } else {
        leaf.to_owned()
    }
}

fn main() {
    if std::env::args().nth(1).as_deref() == Some("wide") {
        println!("{}", common::large_tree(4, 5));
        return;
    }
    // `cargo bench` passes `--bench`; a number is the count of ticks, a
    // name the tree (all of them, once each, by default).
    let ticks = std::env::args()
        .skip(1)
        .find_map(|a| a.parse::<usize>().ok())
        .unwrap_or(1);
    let chosen: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| TREES.iter().any(|(name, _)| name == a))
        .collect();
    if std::env::args().skip(1).any(|a| a == "npc-hand") {
        let hand = HandNpc::new();
        let mut db = read_value(NPC_DB).expect("the db reads");
        let map = db.as_map_mut().expect("the db is a map");
        let mut status = Status::Error;
        for _ in 0..ticks {
            status = std::hint::black_box(hand.tick(map));
        }
        println!("site_cost: {ticks} ticks of npc-hand: {status:?}");
        return;
    }
    let registry = registry();
    for (name, leaf) in TREES {
        if !chosen.is_empty() && !chosen.iter().any(|c| c == name) {
            continue;
        }
        let tree = compile_str(name, &text(name, leaf), &registry).expect("the tree compiles");
        let mut dbs = [NPC_DB, NPC_DB_REVERSED].map(|db| read_value(db).expect("the db reads"));
        // One db, or (for `miss-10`) two of different shapes in turn.
        let n_dbs = if name == "miss-10" { 2 } else { 1 };
        let mut status = Status::Error;
        for i in 0..ticks {
            let db = &mut dbs[i % n_dbs];
            status = std::hint::black_box(tick_in_place(db, &tree)).status;
        }
        let expected = if name == "absent-10" {
            Status::Failure
        } else {
            Status::Success
        };
        assert_eq!(status, expected, "{name}");
        println!("site_cost: {ticks} ticks of {name}: {status:?}");
    }
}
