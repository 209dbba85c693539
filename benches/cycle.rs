//! Where the time of a long action's halt-and-restart cycle goes:
//! `benches/data/npc-running.edn` (npc with a long `:wait`, halted every
//! tenth tick by the eating branch and started again on the next) ticked
//! in place, each tick timed on its own and filed by its place in the
//! cycle (the db's `:hunger` as the tick begins: 9 is the tick that halts
//! the wait, 0 the tick that starts it again, 1 to 8 the ticks that
//! continue it). Prints, for each place, the fastest of 30 rounds' mean
//! (each round 20,000 ticks, so every place is timed 2,000 times a round),
//! less the clock's own cost measured the same way, and the same for npc
//! without the wait, whose ninth tick eats.
//!
//! Instructions do not tell these ticks apart: callgrind counts about 540
//! more instructions in each ten-tick cycle than in ten ticks that never
//! halt, whatever the cycle's length (`aido bench` on the tree halted
//! every 10, 40 or 100 ticks), so the time a cycle adds over its
//! instructions is read here.
//!
//! ```sh
//! cargo bench --bench cycle
//! ```

#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::hint::black_box;
use std::time::{Duration, Instant};

use aido::tick::tick_in_place;
use aido::{Registry, Tree, Value, compile_str, read_value};

const NPC: &str = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/npc.edn"));
const NPC_DB: &str = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/npc-db.edn"));
const RUNNING: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/benches/data/npc-running.edn"
));

/// Rounds; the fastest round's mean of each place is kept.
const ROUNDS: usize = 30;
/// Ticks a round.
const TICKS: usize = 20_000;
/// Places in the cycle (`:hunger` 0 to 9 as a tick begins).
const PLACES: usize = 10;

/// The mean time of a tick at each place of the cycle in the fastest
/// round for that place, in nanoseconds, the clock's cost not taken off.
fn by_place(tree: &Tree) -> [f64; PLACES] {
    let mut db = read_value(NPC_DB).unwrap();
    let hunger = Value::keyword("hunger");
    let mut best = [f64::MAX; PLACES];
    for _ in 0..ROUNDS {
        let mut total = [Duration::ZERO; PLACES];
        let mut count = [0_u32; PLACES];
        for _ in 0..TICKS {
            let place = match db.as_map().and_then(|m| m.get(&hunger)) {
                Some(Value::Int(h)) => usize::try_from(*h).unwrap_or(0).min(PLACES - 1),
                _ => 0,
            };
            let start = Instant::now();
            black_box(tick_in_place(&mut db, tree));
            total[place] += start.elapsed();
            count[place] += 1;
        }
        for place in 0..PLACES {
            if count[place] > 0 {
                let mean = total[place].as_secs_f64() * 1e9 / f64::from(count[place]);
                best[place] = best[place].min(mean);
            }
        }
    }
    best
}

/// The clock's own cost, measured as a tick is: the fastest round's mean.
fn clock_cost() -> f64 {
    let mut best = f64::MAX;
    for _ in 0..ROUNDS {
        let mut total = Duration::ZERO;
        for _ in 0..TICKS {
            let start = Instant::now();
            black_box(&start);
            total += start.elapsed();
        }
        best = best.min(total.as_secs_f64() * 1e9 / TICKS as f64);
    }
    best
}

fn main() {
    let registry = Registry::new();
    let running = compile_str("npc-running.edn", RUNNING, &registry).expect("npc-running compiles");
    let npc = compile_str("npc.edn", NPC, &registry).expect("npc compiles");
    let clock = clock_cost();
    let (running_ns, npc_ns) = (by_place(&running), by_place(&npc));
    eprintln!(
        "cycle (fastest of {ROUNDS} rounds of {TICKS} ticks; the clock's {clock:.1} ns taken off):"
    );
    eprintln!("  :hunger  npc-running  npc");
    for place in 0..PLACES {
        eprintln!(
            "  {place:7}  {:8.1} ns  {:5.1} ns",
            running_ns[place] - clock,
            npc_ns[place] - clock
        );
    }
    let mean = |ns: &[f64; PLACES]| ns.iter().sum::<f64>() / PLACES as f64 - clock;
    eprintln!(
        "  mean     {:8.1} ns  {:5.1} ns: {:.2}x",
        mean(&running_ns),
        mean(&npc_ns),
        mean(&running_ns) / mean(&npc_ns)
    );
}
