//! A steady-state tick of the npc workload makes no heap allocation, nor
//! does one while an action runs long: counted by a global allocator that
//! wraps the system one (a count, not a timing). The same allocator keeps
//! the bytes each thread has in use and their peak, which bound the memory
//! that reading and compiling a big tree costs per byte of its text.
#![allow(clippy::panic, clippy::expect_used, clippy::unwrap_used)]

mod common;
#[path = "../benches/common/mod.rs"]
mod workloads;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::Arc;

use aido::compile::compile_source;
use aido::read::read_text;
use aido::source::Source;
use aido::{Registry, Value, compile_str, read_value, run_tick};

/// Counts allocations made by the current thread only, so that other tests
/// running in parallel do not disturb the count.
struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
    /// Bytes this thread allocated less those it freed, and their peak.
    static IN_USE: Cell<i64> = const { Cell::new(0) };
    static PEAK: Cell<i64> = const { Cell::new(0) };
}

fn note_allocation(grown: i64) {
    // `try_with`: the thread-locals may already be gone while a thread exits.
    let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
    note_size(grown);
}

fn note_size(change: i64) {
    let _ = IN_USE.try_with(|in_use| {
        let now = in_use.get() + change;
        in_use.set(now);
        let _ = PEAK.try_with(|peak| peak.set(peak.get().max(now)));
    });
}

// The allocator only counts and forwards to `System`, which upholds the
// contract; this is the one place the tests need unsafe code.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note_allocation(layout.size() as i64);
        // SAFETY: the caller's contract for `alloc` is passed on as it is.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note_allocation(layout.size() as i64);
        // SAFETY: the caller's contract for `alloc_zeroed` is passed on as it is.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note_allocation(new_size as i64 - layout.size() as i64);
        // SAFETY: `ptr` and `layout` come from this allocator, which got them
        // from `System`; the rest of the contract is the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        note_size(-(layout.size() as i64));
        // SAFETY: `ptr` and `layout` come from this allocator, which got them from `System`.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations() -> u64 {
    ALLOCATIONS.with(Cell::get)
}

/// Runs `step` `warm` times, then `count` times more, and returns the
/// allocations of the last `count` runs: what a steady state allocates.
fn steady_allocations(warm: usize, count: usize, mut step: impl FnMut()) -> u64 {
    for _ in 0..warm {
        step();
    }
    let before = allocations();
    for _ in 0..count {
        step();
    }
    allocations() - before
}

/// Runs `f` on this thread; returns its result, the most bytes it had in
/// use at once beyond what was in use before, and the bytes it left in use.
fn peak_and_kept<R>(f: impl FnOnce() -> R) -> (R, i64, i64) {
    let before = IN_USE.with(Cell::get);
    PEAK.with(|p| p.set(before));
    let result = f();
    let peak = PEAK.with(Cell::get) - before;
    let kept = IN_USE.with(Cell::get) - before;
    (result, peak, kept)
}

fn npc() -> (aido::Tree, Value) {
    let dir = common::examples_dir();
    let tree = std::fs::read_to_string(dir.join("npc.edn")).unwrap();
    let db = std::fs::read_to_string(dir.join("npc-db.edn")).unwrap();
    (
        compile_str("npc.edn", &tree, &Registry::new()).unwrap(),
        read_value(&db).unwrap(),
    )
}

#[test]
fn a_steady_state_npc_tick_allocates_nothing() {
    let (tree, mut db) = npc();
    // The first ticks add :action to the db; after that its shape is fixed.
    let made = steady_allocations(20, 10_000, || {
        db = run_tick(std::mem::take(&mut db), &tree).db;
    });
    assert_eq!(made, 0, "{made} allocations in 10,000 npc ticks");
    assert!(db.get(&Value::keyword("steps")).is_some());
}

#[test]
fn a_domain_node_reading_its_options_through_slots_allocates_nothing() {
    use aido::Status;
    use aido::extend::NodeType;
    // One constant option, one dynamic one and a key, read and written
    // through their slots, beside npc's own nodes.
    let mut count = NodeType::new("t/count!");
    let key = count.key_slot("key");
    let step = count.slot::<i64>("step");
    let limit = count.slot::<Option<i64>>("limit");
    let mut registry = Registry::new();
    registry
        .node_type(count.tick(move |ctx| {
            let (step, limit) = (ctx.get(step)?, ctx.get(limit)?.unwrap_or(i64::MAX));
            let n = ctx.db_at(key).and_then(Value::as_int).unwrap_or(0);
            ctx.set_db_at(key, Value::Int((n + step) % limit))?;
            Ok(Status::Success)
        }))
        .unwrap();
    let tree = compile_str(
        "count.edn",
        "[:sequence [:t/count! {:key :n :step 2}] [:t/count! {:key [:deep :m] :step [:aido/db :n] :limit 1000}]]",
        &registry,
    )
    .unwrap();
    let mut db = read_value("{:deep {}}").unwrap();
    let made = steady_allocations(20, 10_000, || {
        aido::tick::tick_in_place(&mut db, &tree);
    });
    assert_eq!(made, 0, "{made} allocations in 10,000 ticks of slot reads");
    assert_eq!(db.get(&Value::keyword("n")), Some(&Value::Int(20_040)));
}

#[test]
fn a_tree_of_one_declared_domain_node_allocates_nothing() {
    use aido::Status;
    use aido::extend::NodeType;
    // The root is called from the tick's own arm: its slots, its hint and
    // its call allocate nothing either.
    let mut above = NodeType::new("t/above?").one_visit(true);
    let key = above.key_slot("key");
    let min = above.slot::<i64>("min");
    let mut registry = Registry::new();
    registry
        .node_type(above.tick(move |ctx| {
            let min = ctx.get(min)?;
            Ok(Status::from_bool(
                ctx.db_at(key).and_then(Value::as_int) > Some(min),
            ))
        }))
        .unwrap();
    let tree = compile_str("above.edn", "[:t/above? {:key :n :min 3}]", &registry).unwrap();
    let mut db = read_value("{:n 7}").unwrap();
    let mut status = Status::Error;
    let made = steady_allocations(20, 10_000, || {
        status = aido::tick::tick_in_place(&mut db, &tree).status;
    });
    assert_eq!(
        made, 0,
        "{made} allocations in 10,000 ticks of a domain root"
    );
    assert_eq!(status, Status::Success);
}

#[test]
fn an_npc_tick_in_place_in_a_db_of_many_keys_allocates_nothing() {
    let (tree, mut db) = npc();
    // Above the size a short scan serves: reserved keys are probed by hash.
    if let Some(map) = db.as_map_mut() {
        for i in 0..20 {
            map.insert(Value::keyword(&format!("other-{i}")), Value::Int(i));
        }
    }
    let made = steady_allocations(20, 10_000, || {
        aido::tick::tick_in_place(&mut db, &tree);
    });
    assert_eq!(made, 0, "{made} allocations in 10,000 npc ticks in place");
    assert_eq!(db.get(&Value::keyword("steps")), Some(&Value::Int(9_018)));
}

#[test]
fn a_tick_while_an_action_runs_long_allocates_nothing_once_warm() {
    // The running set, the wait's memory and the engine's long-running
    // state are all reused from tick to tick.
    let tree = compile_str(
        "t.edn",
        "[:sequence [:inc! {:key :n}] [:wait {:id :walk :ticks 1000000}]]",
        &Registry::new(),
    )
    .unwrap();
    let mut db = Value::map();
    for _ in 0..3 {
        db = run_tick(db, &tree).db;
    }
    let before = allocations();
    for _ in 0..1_000 {
        let tick = run_tick(db, &tree);
        assert_eq!(tick.status, aido::Status::Running);
        db = tick.db;
    }
    let made = allocations() - before;
    assert_eq!(
        made, 0,
        "{made} allocations in 1,000 ticks of a running wait"
    );
    assert_eq!(
        db.to_string(),
        format!(
            "{{:n 1003, :aido/memory {{:walk {{:ticks 1003}}}}, :aido/running [\"0\" :walk], :aido/tree {}}}",
            tree.fingerprint()
        )
    );
}

#[test]
fn a_long_action_halted_and_started_again_allocates_nothing_once_warm() {
    // npc whose wandering ends in a long wait: nine ticks in ten continue
    // it, the tenth (eating) halts it, and the next starts it again. The
    // running set and the node memory that a halt takes out of the db are
    // kept emptied and reused when the wait starts again.
    let dir = common::examples_dir();
    let npc_text = std::fs::read_to_string(dir.join("npc.edn")).unwrap();
    let text = npc_text.replace(
        "[:define! {:key :action :val :wander}]",
        "[:define! {:key :action :val :wander}] [:wait {:id :walk :ticks 1000000000}]",
    );
    assert_ne!(text, npc_text);
    let tree = compile_str("npc-running.edn", &text, &Registry::new()).unwrap();
    let (_, mut db) = npc();
    let (mut halts, mut starts) = (0, 0);
    let mut was_running = false;
    let tick = |db: Value| {
        let tick = run_tick(db, &tree);
        assert_ne!(tick.status, aido::Status::Error);
        tick.db
    };
    for _ in 0..100 {
        db = tick(db);
    }
    let before = allocations();
    for _ in 0..1_000 {
        db = tick(db);
        let running = db.get(&Value::keyword("aido/running")).is_some();
        match (was_running, running) {
            (true, false) => halts += 1,
            (false, true) => starts += 1,
            _ => {}
        }
        was_running = running;
    }
    let made = allocations() - before;
    assert!(
        halts >= 90 && starts >= 90,
        "{halts} halts, {starts} starts"
    );
    assert_eq!(
        made, 0,
        "{made} allocations in 1,000 ticks with {halts} halts and {starts} starts"
    );
}

#[test]
fn a_traced_tick_into_a_kept_buffer_allocates_nothing_once_warm() {
    let (tree, mut db) = npc();
    let options = aido::tick::TickOptions::default();
    let mut trace = Vec::new();
    let made = steady_allocations(20, 10_000, || {
        db = aido::tick::run_tick_traced(std::mem::take(&mut db), &tree, &options, &mut trace).db;
        assert!(!trace.is_empty());
    });
    assert_eq!(made, 0, "{made} allocations in 10,000 traced npc ticks");
}

#[test]
fn recording_npc_ticks_allocates_only_as_the_record_grows() {
    // A tick's changes go to the end of the run's one list of changes, its
    // record to the end of the list of ticks; its visits are shared with a
    // recent tick traced alike, and the trace, the keys' order and the copy
    // of the db are kept up to date in place. So 10,000 recorded ticks
    // allocate only when one of the two lists doubles (about 14 times
    // each), far below one allocation a tick. Both ways: comparing every
    // value, and only the keys each tick wrote (as a session records).
    for keyed in [false, true] {
        let (tree, mut db) = npc();
        for _ in 0..20 {
            db = run_tick(db, &tree).db;
        }
        let mut recorder = aido::record::Recorder::new(&tree, &db);
        if keyed {
            recorder = recorder.comparing_written_keys();
        }
        // Warm: the trace buffer, the recent traces and key orders, the
        // lists of visits of the paths npc takes.
        for _ in 0..20 {
            db = recorder.tick(db, &tree).db;
        }
        let made = steady_allocations(0, 10_000, || {
            db = recorder.tick(std::mem::take(&mut db), &tree).db;
        });
        let run = recorder.finish();
        assert!(
            made <= 40,
            "{made} allocations in 10,000 recorded npc ticks (keyed: {keyed})"
        );
        assert_eq!(run.n_ticks(), 10_020);
        assert_eq!(run.db_after(run.n_ticks()), db);
    }
}

/// Records 20 ticks of `tree` from `db`, then 10,000 more: the run, and
/// the bytes the 10,000 left in use (`db` ends as the last tick's).
fn record_20_then_10000(tree: &aido::Tree, db: &mut Value) -> (aido::record::RunRecord, i64) {
    let mut recorder = aido::record::Recorder::new(tree, db).comparing_written_keys();
    for _ in 0..20 {
        *db = recorder.tick(std::mem::take(db), tree).db;
    }
    let ((), _, kept) = peak_and_kept(|| {
        for _ in 0..10_000 {
            *db = recorder.tick(std::mem::take(db), tree).db;
        }
    });
    (recorder.finish(), kept)
}

#[test]
fn a_recorded_npc_tick_keeps_its_entry_in_32_bytes_and_a_change_in_16() {
    // A tick's entry is 32 bytes: its status, steps, tree and list of
    // visits (an index into the run's shared lists) and where its changes
    // end; its number follows from its place, and its input, halts and
    // events (rare) sit in a side list found by the tick. Each change of a
    // keyword key from one scalar to another that fits in 32 bits is kept
    // in 16 (the key's code, the two values' kinds and payloads). npc
    // changes three or four keys a tick, so its record grows by about 90
    // bytes a tick, and by at most twice that while a list's room doubles.
    // (With a 64-byte entry holding its own list of visits and its number,
    // a tick took about 120 bytes.)
    let (tree, mut db) = npc();
    let (run, kept) = record_20_then_10000(&tree, &mut db);
    let changes: usize = run.ticks().map(|t| run.changes(&t).len()).sum();
    assert!(changes >= 30_000, "{changes} changes in 10,020 npc ticks");
    assert!(
        kept <= 2 * (32 + 4 * 16) * 10_000,
        "{kept} bytes kept by 10,000 recorded npc ticks"
    );
    assert_eq!(run.db_after(run.n_ticks()), db);
}

#[test]
fn a_recorded_tick_that_changes_nothing_keeps_under_64_bytes_even_while_its_list_doubles() {
    // Only the tick's entry grows the record: 32 bytes, so 10,000 ticks
    // keep at most 16,384 entries' room (524,288 bytes) even just after
    // the list doubled. A 64-byte entry kept twice that, over the bound.
    let tree = compile_str(
        "t.edn",
        "[:selector [:less-than? {:key :n :val 0}] [:less-than? {:key :n :val 5}]]",
        &Registry::new(),
    )
    .unwrap();
    let mut db = read_value("{:n 1}").unwrap();
    let (run, kept) = record_20_then_10000(&tree, &mut db);
    assert_eq!(run.n_ticks(), 10_020);
    assert!(run.ticks().all(|t| run.changes(&t).len() == 0));
    assert!(
        kept <= 64 * 10_000,
        "{kept} bytes kept by 10,000 recorded ticks that change nothing"
    );
}

#[test]
fn the_counter_counts() {
    // Guard against a vacuous pass: an allocating tick is seen.
    let tree = compile_str("t.edn", "[:emit! {:key :log :val 1}]", &Registry::new()).unwrap();
    let mut db = Value::map();
    let before = allocations();
    for _ in 0..100 {
        db = run_tick(db, &tree).db;
    }
    assert!(allocations() - before > 0);
}

#[test]
fn a_hundred_thousand_npc_ticks_end_in_the_reference_db() {
    let (tree, mut db) = npc();
    for _ in 0..100_000 {
        db = run_tick(db, &tree).db;
    }
    let expected =
        read_value("{:hunger 0, :courage 7, :steps 90000, :wander 270000, :action :eat}").unwrap();
    assert_eq!(common::without_aido_keys(&db), expected);
}

#[test]
#[cfg(feature = "rayon")]
fn tick_all_gives_the_same_dbs_as_ticking_agents_one_by_one() {
    let tree = compile_str(
        "t.edn",
        "[:selector-p {:p 0.7}
           [:choose-each {:repeat true} [:inc! {:key :a}] [:inc! {:key :b}] [:inc! {:key :c}]]
           [:define! {:key :r :val [:aido/fn rand-int 1000]}]]",
        &Registry::new(),
    )
    .unwrap();
    let start: Vec<Value> = (0..2000)
        .map(|i| read_value(&format!("{{:aido/seed {i}}}")).unwrap())
        .collect();
    let mut batch = start.clone();
    let mut one_by_one = start;
    for _ in 0..5 {
        let statuses = aido::batch::tick_all(&tree, &mut batch);
        for (db, status) in one_by_one.iter_mut().zip(&statuses) {
            let tick = run_tick(std::mem::take(db), &tree);
            assert_eq!(tick.status, status.status);
            *db = tick.db;
        }
    }
    assert_eq!(batch, one_by_one);
    // And with one thread.
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    let mut single: Vec<Value> = (0..2000)
        .map(|i| read_value(&format!("{{:aido/seed {i}}}")).unwrap())
        .collect();
    pool.install(|| {
        for _ in 0..5 {
            aido::batch::tick_all(&tree, &mut single);
        }
    });
    assert_eq!(single, batch);
}

/// The generated tree the memory bounds are measured on: about 60,000
/// nodes and 1.7 MB of text, of the shape `benches/memory.rs` measures.
fn big_tree_text() -> String {
    workloads::large_tree(8, 4)
}

// Allocated bytes are deterministic for a given text, so these bounds are
// measurements with room to spare, not timings. Measured on this tree:
// reading peaks at 14.0 bytes per byte of text (the value alone is 10.0);
// reading and compiling as `aido check` does at 21.4, keeping 17.7 (about
// 25 and 21 while the text was copied into the source and the tree's index
// of nodes by id held a copy of every id); compiling a value the tree takes
// over at 8.1 (20.1 when the value is borrowed and so copied).

#[test]
fn checking_a_big_tree_costs_a_bounded_memory_per_byte_of_text() {
    let text = big_tree_text();
    let n = text.len() as f64;
    let registry = Registry::new();
    // What `aido check` does: the text moves into the tree's source.
    let owned = text.clone();
    let (tree, peak, kept) = peak_and_kept(|| {
        compile_source(Arc::new(Source::new("big.edn", owned)), &registry).unwrap()
    });
    assert_eq!(tree.len(), workloads::count_nodes(&text));
    let (peak, kept) = (peak as f64 / n, kept as f64 / n);
    assert!(
        peak < 24.0,
        "compiling peaked at {peak:.1} bytes per byte of text"
    );
    assert!(
        kept < 20.0,
        "the tree keeps {kept:.1} bytes per byte of text"
    );
}

#[test]
fn a_tree_compiled_from_a_value_it_owns_takes_the_value_over() {
    let text = big_tree_text();
    let n = text.len() as f64;
    let registry = Registry::new();
    let (value, _) = read_text(&text).unwrap();
    let (_, read_peak, value_size) = peak_and_kept(|| read_value(&text).unwrap());
    assert!(
        read_peak as f64 / n < 16.0,
        "reading peaked at {:.1} B/B",
        read_peak as f64 / n
    );
    let (copied, copy_peak, _) = peak_and_kept(|| aido::compile(&value, &registry).unwrap());
    drop(copied);
    let (moved, move_peak, _) = peak_and_kept(|| aido::compile(value, &registry).unwrap());
    assert_eq!(moved.len(), workloads::count_nodes(&text));
    // Compiling a borrowed value copies it; an owned one is moved in. (The
    // copy shares the value's strings, a tenth of its bytes: 2.67 of 2.94
    // MB are copied.)
    assert!(copy_peak - move_peak >= value_size * 8 / 10);
    let per_byte = move_peak as f64 / n;
    assert!(
        per_byte < 9.5,
        "compiling peaked at {per_byte:.1} bytes per byte of text"
    );
}

/// The reader moves each collection's elements off its stack and cuts the
/// stack without dropping what is left there (nils, and keywords of
/// keyword maps): the value holds every element in order, and dropping it
/// gives back every byte the read took.
#[test]
fn a_read_value_holds_its_elements_in_order_and_gives_back_every_byte() {
    let text = "[:a [1 \"s\" [:b {:k [1 2], :m {:n \"x\"}}]] (3 #{4}) {\"key\" [5]} \
                {:k2 #{[6]}, :k3 \"t\", :k4 [:c (7 [8])]} [[[:d]]]]";
    // Once first, so that the names are interned.
    let (first, _) = read_text(text).unwrap();
    assert_eq!(first.to_string(), text);
    let ((), _, kept) = peak_and_kept(|| {
        let (value, spans) = read_text(text).unwrap();
        assert_eq!(value, first);
        drop((value, spans));
    });
    assert_eq!(kept, 0, "bytes left in use after reading and dropping");
}

/// A compile from text reads the nodes without their value and drops what
/// it read (keyword heads and child nodes forgotten, any other form
/// dropped): compiling and dropping a tree, or failing on one whose heads
/// and children are strings, vectors, lists and maps, gives back every
/// byte.
#[test]
fn a_compile_from_text_gives_back_every_byte() {
    let ok = "[:sequence {:id \"a long explicit identifier\"} \
              [:emit! {:key [:log :lines] :val \"a string long enough to be on the heap\"}] \
              [:define! {:key :k :val [:aido/fn str \"x\" [:aido/db :n]]}] #_ [:success \"gone\"]]";
    let bad = "[:sequence [\"a string head\" 1] \"a string child\" [[:a] :b] \
               (:c \"in a list\") {:k [1 2]} [] [:success {\"key\" 1}] \
               [:jump! {:doc \"an unknown node type, so the text is read again\"}]]";
    let registry = Registry::new();
    // Once first, so that the names are interned.
    drop(compile_str("ok.edn", ok, &registry).unwrap());
    drop(compile_str("bad.edn", bad, &registry).unwrap_err());
    let ((), _, kept) = peak_and_kept(|| {
        let tree = compile_str("ok.edn", ok, &registry).unwrap();
        assert!(tree.len() == 3);
        drop(tree);
        let errors = compile_str("bad.edn", bad, &registry).unwrap_err();
        assert!(errors.items.len() >= 5, "{errors:?}");
        drop(errors);
    });
    assert_eq!(kept, 0, "bytes left in use after compiling and dropping");
}

/// The allocations of reading and compiling the generated tree of
/// `benches/compile_cost.rs` (9,680 nodes), a count for a given text: the
/// entries of each options map (7,789 of them, each freed once its node
/// is lowered) and a few tables per compile; reading the value makes
/// besides a vector per node and a box per options map, which the compile
/// from text does without. Compiling makes no allocation per node: a
/// derived node id is kept as its text until it is first used.
#[test]
fn compiling_a_generated_tree_allocates_a_bounded_number_a_node() {
    let text = workloads::large_tree(7, 4);
    let n_nodes = workloads::count_nodes(&text) as u64;
    let registry = Registry::new();
    // Once first, so that the names are interned (by this thread or another).
    drop(compile_str("large.edn", &text, &registry).unwrap());
    let before = allocations();
    let (value, spans) = read_text(&text).unwrap();
    let read = allocations() - before;
    drop((value, spans));
    let before = allocations();
    let tree = compile_str("large.edn", &text, &registry).unwrap();
    let compiled = allocations() - before;
    assert_eq!(tree.len() as u64, n_nodes);
    // Measured: 25,270 to read the value (2.61 a node); to compile the
    // text, which reads the nodes without their value, 7,836 in all (0.81 a
    // node: the options maps' entries, each made while its node is
    // compiled and freed after; 25,297, 2.61, while the compile read the
    // value, and 34,981, 3.61, while each node's id was a string of its
    // own).
    assert!(
        read <= n_nodes * 262 / 100,
        "{read} allocations to read {n_nodes} nodes"
    );
    assert!(
        compiled <= n_nodes * 82 / 100,
        "{compiled} allocations to read and compile {n_nodes} nodes, {read} to read the value"
    );
    // The tree's data is read again when first asked for, as the value.
    let before = allocations();
    assert_eq!(tree.form(), &read_value(&text).unwrap());
    assert!(allocations() - before >= read);
    // Asking for an id makes it, once; a clone shares it.
    let last = tree.iter().last().unwrap();
    let before = allocations();
    let id = tree.node_id(last).unwrap().clone();
    assert_eq!(allocations() - before, 1);
    assert_eq!(tree.node_id(last), Some(&id));
    assert_eq!(allocations() - before, 1);
}

#[test]
fn a_record_started_after_one_was_dropped_on_its_thread_writes_into_that_ones_room() {
    // The first record's lists double as they grow; dropped, they are
    // kept (emptied) for the next record on the thread, which then grows
    // into memory it already has: no allocation in its 10,000 ticks.
    let (tree, start) = npc();
    let record = |db: &mut Value| {
        let mut recorder = aido::record::Recorder::new(&tree, db).comparing_written_keys();
        for _ in 0..20 {
            *db = recorder.tick(std::mem::take(db), &tree).db;
        }
        let made = steady_allocations(0, 10_000, || {
            *db = recorder.tick(std::mem::take(db), &tree).db;
        });
        let run = recorder.finish();
        assert_eq!(run.n_ticks(), 10_020);
        assert_eq!(run.db_after(run.n_ticks()), *db);
        made
    };
    let mut db = start.clone();
    let first = record(&mut db);
    assert!(first >= 10, "{first} allocations growing a new record");
    let mut db = start;
    let second = record(&mut db);
    assert_eq!(
        second, 0,
        "allocations in a record reusing a dropped one's room"
    );
}

#[test]
fn a_dropped_record_too_big_to_keep_gives_its_memory_back() {
    // 200,000 npc ticks take more than the 4 MiB of room a thread keeps
    // (32-byte entries alone take 8 MiB): dropped, the record frees it all.
    let (tree, mut db) = npc();
    let ((), _, kept) = peak_and_kept(|| {
        let mut recorder = aido::record::Recorder::new(&tree, &db).comparing_written_keys();
        for _ in 0..200_000 {
            db = recorder.tick(std::mem::take(&mut db), &tree).db;
        }
        drop(recorder.finish());
    });
    assert!(
        kept < 64 << 10,
        "{kept} bytes kept after a big record was dropped"
    );
    // A small one is kept for the next record (the room, not its changes).
    let ((), _, kept) = peak_and_kept(|| {
        let mut recorder = aido::record::Recorder::new(&tree, &db).comparing_written_keys();
        for _ in 0..1_000 {
            db = recorder.tick(std::mem::take(&mut db), &tree).db;
        }
        drop(recorder.finish());
    });
    assert!(
        (1_000 * 32..4 << 20).contains(&kept),
        "{kept} bytes kept after a small record was dropped"
    );
}
