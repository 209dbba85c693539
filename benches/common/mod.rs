//! Workloads shared by the benches: the reference npc tree and db, and a
//! generator of large mixed trees.

#![allow(dead_code, clippy::expect_used, clippy::unwrap_used)]

pub mod hand;

use std::fmt::Write;
use std::time::{Duration, Instant};

use criterion::Criterion;

/// The settings every bench group runs with: short warm-up and measurement,
/// 30 samples (the machines are shared: compare ratios from one run).
pub fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .sample_size(30)
}

/// Runs each workload `samples` times, taking turns, and returns the
/// fastest sample of each: the one least disturbed by other work.
pub fn interleaved(samples: usize, workloads: &mut [&mut dyn FnMut()]) -> Vec<Duration> {
    let mut fastest = vec![Duration::MAX; workloads.len()];
    for _ in 0..samples {
        for (run, best) in workloads.iter_mut().zip(fastest.iter_mut()) {
            let start = Instant::now();
            run();
            *best = (*best).min(start.elapsed());
        }
    }
    fastest
}

/// The reference npc tree: an agent's needs-driven loop.
pub const NPC: &str = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/npc.edn"));

/// The npc's starting db.
pub const NPC_DB: &str = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/npc-db.edn"));

/// The keywords the generated trees read and write.
const KEYS: [&str; 10] = [
    "hunger", "thirst", "fear", "anger", "gold", "wood", "stone", "health", "mana", "steps",
];

/// A deterministic tree text: composites `depth` levels deep, each
/// `:selector`, `:sequence` or `:parallel` with `width` children (or a
/// `:loop {:count 2}` or `:invert` over one child), over data nodes that
/// test and write ten integer keys. The same arguments give the same text.
pub fn large_tree(depth: u32, width: usize) -> String {
    let mut generator = Generator {
        text: String::new(),
        state: 0x9E37_79B9_7F4A_7C15,
    };
    generator.node(depth, width, true);
    generator.text
}

/// The number of nodes in a tree text: one per `[:`.
pub fn count_nodes(text: &str) -> usize {
    text.matches("[:").count()
}

struct Generator {
    text: String,
    state: u64,
}

impl Generator {
    /// The next number of a xorshift64 sequence, below `n`.
    fn below(&mut self, n: u64) -> u64 {
        self.state ^= self.state << 13;
        self.state ^= self.state >> 7;
        self.state ^= self.state << 17;
        self.state % n
    }

    fn key(&mut self) -> &'static str {
        KEYS[self.below(KEYS.len() as u64) as usize]
    }

    fn node(&mut self, depth: u32, width: usize, root: bool) {
        if depth == 0 {
            self.leaf();
            return;
        }
        // Wide composites are likelier than single-child decorators, so the
        // tree keeps its size; the root always branches.
        let kind = if root { 0 } else { self.below(8) };
        let (head, n_children) = match kind {
            0 | 1 => ("[:selector".to_owned(), width),
            2 | 3 => ("[:sequence".to_owned(), width),
            4 | 5 => (
                format!("[:parallel {{:mode :success :how-many {}}}", width / 2),
                width,
            ),
            6 => ("[:loop {:count 2}".to_owned(), 1),
            _ => ("[:invert".to_owned(), 1),
        };
        self.text.push_str(&head);
        for _ in 0..n_children {
            self.text.push(' ');
            self.node(depth - 1, width, false);
        }
        self.text.push(']');
    }

    fn leaf(&mut self) {
        let kind = self.below(6);
        let key = self.key();
        let val = self.below(10);
        let text = &mut self.text;
        // Writing to a String cannot fail.
        let _ = match kind {
            0 => write!(text, "[:greater-than? {{:key :{key} :val {val}}}]"),
            1 => write!(text, "[:less-than? {{:key :{key} :val {val}}}]"),
            2 => write!(text, "[:present? {{:key :{key}}}]"),
            3 => write!(text, "[:test? {{:key :{key} :oper <= :val {val}}}]"),
            4 => write!(text, "[:define! {{:key :{key} :val {val}}}]"),
            _ => write!(text, "[:inc! {{:key :{key}}}]"),
        };
    }
}

/// `npc/hungry?`, a node type registered in Rust that reads one option
/// (`:min`) and one db key (`:key`), both through slots: Success if the
/// integer at the key is above the minimum. `[:test? {:key K :oper > :val
/// MIN}]` is the same node built in. It is declared to finish in one visit
/// (`NodeType::one_visit`), as a condition is, so the plain path takes it.
pub fn hungry() -> aido::extend::NodeType {
    hungry_named("npc/hungry?", true)
}

/// `npc/hungry-undeclared?`: [`hungry`] without the one-visit declaration,
/// so the engine takes it as a node that may run long (the general path).
pub fn hungry_undeclared() -> aido::extend::NodeType {
    hungry_named("npc/hungry-undeclared?", false)
}

fn hungry_named(name: &str, one_visit: bool) -> aido::extend::NodeType {
    use aido::{Status, Value};
    let mut hungry = aido::extend::NodeType::new(name).one_visit(one_visit);
    let key = hungry.key_slot("key");
    let min = hungry.slot::<i64>("min");
    hungry.tick(move |ctx| {
        let min = ctx.get(min)?;
        let above = matches!(ctx.db_at(key), Some(Value::Int(h)) if *h > min);
        Ok(Status::from_bool(above))
    })
}
