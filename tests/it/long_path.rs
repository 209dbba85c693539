//! The long path (reactive flows whose one child that can run is a
//! `:wait` or another such flow, ticked untraced as the plain path ticks a
//! flow, see `nodes::long_path`) must give exactly what the general path
//! gives: every tree here is ticked untraced as hosts tick it, and with
//! every node on the general path (`tick::run_tick_general_path`), from
//! the same db, with the db edited between ticks so that conditions in
//! front of a running wait change their minds and halt it. The status,
//! steps, error, requests, warnings and the db as printed (its keys'
//! order included, which halts and starts move) must agree at every tick.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use crate::common::Gen;

use aido::{Registry, Tick, Tree, Value, compile_str, read_value, tick::TickOptions};

/// A tick as hosts run it.
fn tick(tree: &Tree, db: Value, budget: u64) -> Tick {
    let options = TickOptions {
        step_budget: budget,
        ..TickOptions::default()
    };
    aido::tick::run_tick_with_options(db, tree, &options)
}

/// A tick with every node on the general path.
fn tick_general(tree: &Tree, db: Value, budget: u64) -> Tick {
    let options = TickOptions {
        step_budget: budget,
        ..TickOptions::default()
    };
    aido::tick::run_tick_general_path(db, tree, &options)
}

/// What a tick produced that a host sees, the db printed (in its order).
fn seen(t: &Tick) -> String {
    format!(
        "{:?} steps {} db {} error {:?} launches {:?} cancels {:?} warnings {:?} dropped {:?}",
        t.status,
        t.steps,
        t.db,
        t.error.as_deref().map(|e| (&e.message, &e.node)),
        t.launches(),
        t.cancels(),
        t.warnings(),
        t.dropped()
    )
}

/// Ticks `tree` `ticks` times both ways from `start`, `edit` changing
/// both dbs alike before each tick, and asserts that every tick agrees.
fn assert_same(
    what: &str,
    tree: &Tree,
    start: &Value,
    ticks: usize,
    budget: u64,
    mut edit: impl FnMut(usize, &mut Value),
) {
    let (mut long, mut general) = (start.clone(), start.clone());
    for n in 0..ticks {
        edit(n, &mut long);
        edit(n, &mut general);
        let l = tick(tree, long, budget);
        let g = tick_general(tree, general, budget);
        assert_eq!(
            seen(&l),
            seen(&g),
            "{what}, tick {n}, from {start}: untraced vs general"
        );
        (long, general) = (l.db, g.db);
    }
}

const CONDITION_KEYS: &[&str] = &[":a", ":b", ":c"];

/// A random leaf that finishes in one visit: conditions on the keys the
/// edits flip, and writes (some of them to keys the conditions read, or
/// of the wrong type for a later `:inc!`, an Error).
fn plain_leaf(g: &mut Gen) -> String {
    let key = g.pick(CONDITION_KEYS);
    match g.below(9) {
        0 => "[:success]".into(),
        1 => "[:failure]".into(),
        2 | 3 => format!("[:present? {{:key {key}}}]"),
        4 => format!("[:greater-than? {{:key {key} :val {}}}]", g.below(3)),
        5 => format!("[:define! {{:key :out :val {}}}]", g.below(3)),
        6 => "[:inc! {:key :n}]".into(),
        7 => format!("[:dissoc! {{:key {}}}]", g.pick(&[":out", ":n", ":x"])),
        _ => format!(
            "[:define! {{:key :x :val {}}}]",
            g.pick(&["1", ":k", "[1]"])
        ),
    }
}

/// A `:wait` of a few ticks, its count now and then read from the db, its
/// id a keyword now and then.
fn wait(g: &mut Gen, n: &mut u32) -> String {
    *n += 1;
    let ticks = match g.below(6) {
        0 => "[:aido/db :t]".to_string(),
        k => (k - 1).to_string(),
    };
    if g.below(2) == 0 {
        format!("[:wait {{:id :w{n} :ticks {ticks}}}]")
    } else {
        format!("[:wait {{:ticks {ticks}}}]")
    }
}

/// A random reactive flow with, usually, one child that can run: a wait
/// or another such flow, among plain children; now and then a second
/// child that can run, a precondition, memory, or a decorator, which keep
/// it (or the flows above it) on the general path.
fn flow(g: &mut Gen, depth: u32, waits: &mut u32) -> String {
    let n = 1 + g.below(4) as usize;
    let long_at = g.below(n as u64) as usize;
    let mut kids = Vec::new();
    for i in 0..n {
        let kid = if i == long_at {
            if depth == 0 || g.below(3) == 0 {
                wait(g, waits)
            } else {
                flow(g, depth - 1, waits)
            }
        } else if g.below(12) == 0 {
            wait(g, waits)
        } else if depth > 0 && g.below(4) == 0 {
            // A plain flow.
            let leaves: Vec<String> = (0..1 + g.below(3)).map(|_| plain_leaf(g)).collect();
            format!(
                "[{} {}]",
                g.pick(&[":selector", ":sequence"]),
                leaves.join(" ")
            )
        } else {
            plain_leaf(g)
        };
        kids.push(kid);
    }
    let kids = kids.join(" ");
    match g.below(14) {
        0 => format!("[:sequence {{:memory true}} {kids}]"),
        1 => format!("[:selector {{:aido/skip-if [:aido/db :s]}} {kids}]"),
        2 => format!("[:always [:sequence {kids}]]"),
        3 => format!("[:parallel {{:policy :selector}} {kids}]"),
        4..=8 => format!("[:sequence {kids}]"),
        _ => format!("[:selector {kids}]"),
    }
}

/// `db` with `key` (EDN text) set to `value`.
fn set(db: &mut Value, key: &str, value: Value) {
    db.assoc_in(&[read_value(key).unwrap()], value).unwrap();
}

/// `db` without `key` (EDN text).
fn unset(db: &mut Value, key: &str) {
    db.dissoc_in(&[read_value(key).unwrap()]).unwrap();
}

/// Flips the conditions' keys, now and then the wait's count, the skip key
/// and the tree's fingerprint, as a host changes the world between ticks.
fn edit(g: &mut Gen, db: &mut Value) {
    for key in CONDITION_KEYS {
        match g.below(4) {
            0 => unset(db, key),
            1 => set(db, key, Value::Int(g.below(4) as i64)),
            _ => {}
        }
    }
    if g.below(5) == 0 {
        set(db, ":t", Value::Int(g.below(4) as i64));
    }
    if g.below(6) == 0 {
        set(db, ":s", Value::Bool(g.below(2) == 0));
    }
    // A host that drops the tree's fingerprint: the tick that next writes
    // state stamps it again (a flow that marks a finished wait does).
    if g.below(6) == 0 {
        unset(db, ":aido/tree");
    }
}

#[test]
fn generated_flows_over_waits_tick_the_same_on_the_long_and_the_general_path() {
    let registry = Registry::new();
    let mut g = Gen(19);
    for case in 0..400 {
        let mut waits = 0;
        let text = flow(&mut g, 3, &mut waits);
        let tree = compile_str("t.edn", &text, &registry).unwrap();
        let mut edits = Gen(case);
        let mut edits_general = Gen(case);
        let (mut long, mut general) = (Value::map(), Value::map());
        for n in 0..24 {
            edit(&mut edits, &mut long);
            edit(&mut edits_general, &mut general);
            assert_eq!(long.to_string(), general.to_string());
            let l = tick(&tree, long, 1_000_000);
            let gt = tick_general(&tree, general, 1_000_000);
            assert_eq!(seen(&l), seen(&gt), "case {case}, tick {n}: {text}");
            (long, general) = (l.db, gt.db);
        }
    }
}

#[test]
fn plain_children_after_a_long_child_and_a_long_child_far_from_its_flow_tick_alike() {
    // The long path's loop stops at the long child and visits the plain
    // children after it once the long child moves on: a wait that ends
    // (then the sequence goes on to its last children, the selector to
    // none), one that fails the condition in front of it, with every
    // budget.
    let text = "[:selector \
        [:sequence [:inc! {:key :n}] [:wait {:id :w :ticks 2}] [:inc! {:key :after}] \
         [:selector [:present? {:key :x}] [:inc! {:key :y}]] [:counter! {:key :z}]] \
        [:inc! {:key :fallback}]]";
    let tree = compile_str("t.edn", text, &Registry::new()).unwrap();
    let start = read_value("{:n 0}").unwrap();
    for budget in [3, 5, 7, 9, 1_000] {
        assert_same(
            "a wait in the middle",
            &tree,
            &start,
            10,
            budget,
            |n, db| {
                if n % 4 == 3 {
                    set(db, ":x", Value::Int(1));
                } else {
                    unset(db, ":x");
                }
            },
        );
    }
    // A wait after 300 plain nodes: its flow stays general (the distance
    // does not fit the mark), and ticks as the general path does.
    let far = format!(
        "[:selector [:sequence {} [:wait {{:ticks 3}}] [:inc! {{:key :after}}]] [:success]]",
        "[:inc! {:key :n}] ".repeat(300)
    );
    let tree = compile_str("t.edn", &far, &Registry::new()).unwrap();
    assert_same("a far wait", &tree, &start, 8, 1_000_000, |_, _| {});
}

#[test]
fn a_step_budget_spent_anywhere_on_the_long_path_ends_alike() {
    // npc's wandering ending in a walk: the root and the last sequence on
    // the long path. Every budget from 1 to past a tick's visits.
    let text = "[:selector \
        [:sequence [:greater-than? {:key :hunger :val 3}] [:define! {:key :hunger :val 0}]] \
        [:sequence [:inc! {:key :hunger}] [:loop {:count 2} [:inc! {:key :w}]] \
         [:selector [:present? {:key :x}] [:wait {:id :walk :ticks 5}]]]]";
    let tree = compile_str("t.edn", text, &Registry::new()).unwrap();
    let start = read_value("{:hunger 0}").unwrap();
    for budget in 1..12 {
        assert_same("npc's walk", &tree, &start, 12, budget, |_, _| {});
    }
}

#[test]
fn a_running_wait_halted_by_an_earlier_child_or_a_sibling_is_halted_alike() {
    // A wait below two long-path flows, halted when the condition in
    // front of it fails (its sequence decides), when a higher-priority
    // branch of the root succeeds (the root decides), and a second wait
    // started by a later branch after the first is halted, which moves
    // `:aido/memory` and `:aido/running` in the db.
    let text = "[:selector {:id :root} \
        [:sequence {:id :eat} [:present? {:key :hungry}] [:define! {:key :did :val :eat}]] \
        [:sequence {:id :walk} [:present? {:key :go}] [:selector [:present? {:key :there}] \
          [:wait {:id :w1 :ticks 4}]]] \
        [:wait {:id :w2 :ticks 3}]]";
    let tree = compile_str("t.edn", text, &Registry::new()).unwrap();
    let start = read_value("{:go true}").unwrap();
    let script = |n: usize, db: &mut Value| match n {
        2 => set(db, ":hungry", Value::Bool(true)),
        3 => unset(db, ":hungry"),
        5 => unset(db, ":go"),
        7 => set(db, ":go", Value::Bool(true)),
        9 => set(db, ":there", Value::Bool(true)),
        10 => unset(db, ":there"),
        _ => {}
    };
    assert_same("a halted walk", &tree, &start, 16, 1_000_000, script);
}

#[test]
fn a_long_path_flow_ticked_again_within_a_tick_while_its_wait_runs_ticks_alike() {
    // A loop over aido's counting parallel (which counts Running as
    // succeeded) ticks the long-path sequence below it again within one
    // tick: its first visit notes the run above the running wait running
    // again, and its later visits find that run noted already (the top's
    // fate set), and take the general bookkeeping. Conditions in front of
    // the wait then halt it, in the loop and above it.
    let text = "[:selector {:id :root} [:present? {:key :stop}] \
        [:loop {:id :loop :count 3} [:parallel {:id :par :mode :success :how-many 1} \
          [:sequence {:id :seq} [:inc! {:key :n}] \
            [:selector {:id :sel} [:present? {:key :x}] [:wait {:id :w :ticks 7}]]]]]]";
    let tree = compile_str("t.edn", text, &Registry::new()).unwrap();
    let script = |n: usize, db: &mut Value| match n {
        4 => set(db, ":x", Value::Bool(true)),
        5 => unset(db, ":x"),
        8 => set(db, ":stop", Value::Bool(true)),
        9 => unset(db, ":stop"),
        _ => {}
    };
    assert_same("ticked again", &tree, &Value::map(), 14, 1_000_000, script);
}

#[test]
fn a_wait_that_finishes_under_nested_long_path_sequences_marks_nothing_that_outlives_the_tick() {
    // The wait finishes while every flow above it ran: the general path
    // marks it done in its sequence, keeps that sequence's marks (its
    // parent keeps it) and clears them all as the root sequence ends; the
    // db after is the same, and so is the next start of the wait.
    let text = "[:sequence {:id :top} [:sequence {:id :mid} [:sequence {:id :low} \
        [:inc! {:key :n}] [:wait {:id :w :ticks 2}]] [:inc! {:key :m}]] [:success]]";
    let tree = compile_str("t.edn", text, &Registry::new()).unwrap();
    assert_same("nested", &tree, &Value::map(), 9, 1_000_000, |_, _| {});
}

#[test]
fn a_reactive_sequence_kept_by_a_general_one_keeps_its_marks() {
    // `:keep` is a reactive sequence over a wait, under a general reactive
    // sequence (its second wait makes it general): it finishes and is
    // kept as finished while the second wait runs, and ticked again (its
    // conditions are guards) it must not start its wait over. Ticked on
    // the general path, as the long path would forget its marks.
    let text = "[:sequence {:id :outer} [:sequence {:id :keep} [:present? {:key :ok}] \
        [:wait {:id :w1 :ticks 2}]] [:wait {:id :w2 :ticks 3}]]";
    let tree = compile_str("t.edn", text, &Registry::new()).unwrap();
    let start = read_value("{:ok true}").unwrap();
    assert_same("kept", &tree, &start, 8, 1_000_000, |_, _| {});
    // And the wait is not started over: w1 runs two ticks, then w2
    // three while `:keep`, ticked again, keeps w1 done.
    let mut db = start;
    let mut running = Vec::new();
    for _ in 0..6 {
        let t = tick(&tree, db, 1_000_000);
        running.push(
            t.db.get(&Value::keyword("aido/running"))
                .map(|r| r.to_string())
                .unwrap_or_default(),
        );
        db = t.db;
    }
    assert_eq!(
        running,
        [
            "[:outer :keep :w1]",
            "[:outer :keep :w1]",
            "[:outer :w2]",
            "[:outer :w2]",
            "[:outer :w2]",
            ""
        ]
    );
}

#[test]
fn a_long_child_halted_by_an_earlier_child_is_halted_as_the_general_path_halts_it() {
    // The halt of a long child that ran (`Engine::halt_long_child`): its
    // entries in the running set halted, the wait's memory taken out
    // whole, against the general path's `halt_subtree`, with the db as the
    // halt finds it edited by a host: other memory beside the wait's (the
    // memory is then cleared entry by entry), the set without the long
    // child's own entry or with an entry of another branch (the general
    // halt then finds what runs), a derived id (a string) for the wait,
    // and an Error after the halt (the db keeps the halt's state). And the
    // ticks after: a db stamped with this tree and running nothing
    // (`Engine::take_stamped_idle`), or stamped with another tree, and a
    // set moved to the front of the db.
    for wait_id in [":id :w", ""] {
        let text = format!(
            "[:sequence {{:id :top}} \
               [:selector {{:id :sel}} [:present? {{:key :stop}}] \
                 [:sequence {{:id :walk}} [:inc! {{:key :n}}] [:wait {{{wait_id} :ticks 6}}]]] \
               [:inc! {{:key :s}}]]"
        );
        let tree = compile_str("t.edn", &text, &Registry::new()).unwrap();
        let start = read_value("{:s 0}").unwrap();
        let halts = [3, 7, 11, 15, 19];
        let script = |n: usize, db: &mut Value| {
            // Each halt tick's own edit, undone the tick after.
            match n {
                // After a halt, a fingerprint of another tree: the db is
                // carried over (no set to load).
                8 => set(db, ":aido/tree", Value::Int(1)),
                11 => set(db, ":aido/running", read_value("[:top]").unwrap()),
                // The set moved to the front by the host: found by a
                // search, not where the hint says.
                13 => {
                    let running = db.get(&Value::keyword("aido/running")).cloned().unwrap();
                    let mut moved = Value::map();
                    set(&mut moved, ":aido/running", running);
                    for (k, v) in db.as_map().unwrap().iter() {
                        if k != &Value::keyword("aido/running") {
                            moved.assoc_in(std::slice::from_ref(k), v.clone()).unwrap();
                        }
                    }
                    *db = moved;
                }
                15 => set(db, ":s", Value::string("not a number")),
                16 => set(db, ":s", Value::Int(0)),
                _ => {}
            }
            if n == 7 {
                // The wait's entry kept, another node's added after it.
                let mut memory = db.get(&Value::keyword("aido/memory")).cloned().unwrap();
                memory
                    .assoc_in(&[Value::keyword("top")], read_value("{:x 1}").unwrap())
                    .unwrap();
                set(db, ":aido/memory", memory);
            }
            if halts.contains(&n) {
                set(db, ":stop", Value::Bool(true));
            } else {
                unset(db, ":stop");
            }
        };
        assert_same("a long child halted", &tree, &start, 22, 1_000_000, script);
    }
}

#[test]
fn a_running_set_edited_around_the_run_above_a_wait_is_noted_as_the_general_path_notes_it() {
    // A wait that runs on takes its run of long-path flows as the set's
    // entries before its own, as many as the tree says (`Node::long_run`),
    // the first of them checked to be a long-path flow above it. Each
    // edit here leaves the wait's own entry in place and changes what
    // comes before it: the run's top missing, the top replaced by a
    // long-path flow that is not above the wait (`:a`, halted by `:s1`),
    // by a general flow above it (`:root`), or by a plain node, one id
    // too many before the run, and long-path flows that come after the
    // wait in the tree (`:c`, `:d`) named as its run.
    let text = "[:sequence {:id :root} \
                  [:selector {:id :s1} [:success] [:sequence {:id :a} [:success] [:wait {:id :wa :ticks 9}]]] \
                  [:sequence {:id :b} [:inc! {:key :n}] [:wait {:id :wb :ticks 9}]] \
                  [:selector {:id :s2} [:present? {:key :stop}] [:sequence {:id :c} [:success] [:sequence {:id :d} [:success] [:wait {:id :wc :ticks 9}]]]]]";
    let tree = compile_str("t.edn", text, &Registry::new()).unwrap();
    let start = read_value("{:n 0}").unwrap();
    let edits: [&str; 11] = [
        "",
        "[:c :wb]",
        "[:d :wb]",
        "[:b :wb]",
        "[:wb]",
        "[:a :wb]",
        "[:root :wb]",
        "[:s1 :b :wb]",
        "[:root :b :wb]",
        "[:c :d :wc]",
        "[:b :wb :c :d :wc]",
    ];
    let script = |n: usize, db: &mut Value| {
        if let Some(ids) = edits.get(n % edits.len())
            && !ids.is_empty()
        {
            set(db, ":aido/running", read_value(ids).unwrap());
        }
    };
    assert_same(
        "an edited run",
        &tree,
        &start,
        2 * edits.len(),
        1_000_000,
        script,
    );
    // A sequence with memory skips its first child once it succeeded: a
    // long-path flow there, named before the run by the host, is still
    // pending when the wait runs on (its own node is not above the wait).
    let text = "[:sequence {:id :root :memory true} \
                  [:sequence {:id :a} [:success] [:wait {:id :wa :ticks 2}]] \
                  [:sequence {:id :b} [:inc! {:key :n}] [:wait {:id :wb :ticks 30}]]]";
    let tree = compile_str("t.edn", text, &Registry::new()).unwrap();
    let edits: [&str; 6] = ["", "[:a :wb]", "[:root :wb]", "[:wb]", "[:a :b :wb]", ""];
    let script = |n: usize, db: &mut Value| {
        if let Some(ids) = n.checked_sub(3).and_then(|n| edits.get(n % edits.len()))
            && !ids.is_empty()
        {
            set(db, ":aido/running", read_value(ids).unwrap());
        }
    };
    assert_same("an edited run", &tree, &start, 20, 1_000_000, script);
}

/// `f` on a thread of its own: no running set is left filed there by an
/// earlier tick, so the db's set is loaded from its ids alone.
fn on_fresh_thread(f: impl FnOnce() -> Tick + Send) -> Tick {
    std::thread::scope(|s| s.spawn(f).join().unwrap())
}

#[test]
fn a_wait_halted_and_started_again_ticks_in_a_row_on_one_thread_as_on_a_fresh_one() {
    // A wait halted (`:stop` present) and started again (`:stop` gone)
    // writes its set where the db had none; the next tick on this thread
    // reads it with whatever this thread kept of its last ticks (a set
    // left filed, the last set as a hint, a parked set). Every tick here,
    // in a row on this thread, must give what a thread that kept nothing
    // gives, and what the general path gives there: with the set left as
    // written, edited by the host (ids replaced by equal strings of its
    // own, reordered, another node's id, one id more, not a vector,
    // taken out), the db printed and read again, another tree ticked in
    // between, and a start in a tick that ends in Error.
    let text = "[:sequence [:selector [:present? {:key :stop}] \
                  [:sequence [:inc! {:key :n}] [:wait {:ticks 40}]]] [:inc! {:key :s}]]";
    let named_text = "[:selector [:present? {:key :stop}] \
                  [:sequence {:id :go} [:inc! {:key :n}] [:wait {:id :walk :ticks 40}]]]";
    let failing_text = "[:parallel {:success-threshold 2} \
                  [:selector [:present? {:key :stop}] [:wait {:id :walk :ticks 40}]] [:inc! {:key :s}]]";
    let a = compile_str("a.edn", text, &Registry::new()).unwrap();
    let other = compile_str("o.edn", text, &Registry::new()).unwrap();
    let named = compile_str("n.edn", named_text, &Registry::new()).unwrap();
    let failing = compile_str("f.edn", failing_text, &Registry::new()).unwrap();
    let id = |s: &str| Value::string(s);
    let ids = |db: &mut Value, ids: Vec<Value>| set(db, ":aido/running", Value::vector(ids));
    let halt = |db: &mut Value| set(db, ":stop", Value::Bool(true));
    let start = |db: &mut Value| unset(db, ":stop");
    type Edit<'a> = Box<dyn Fn(&mut Value) + 'a>;
    let nothing = || -> Edit { Box::new(|_| {}) };
    let mut steps: Vec<(&Tree, Edit)> = vec![(&a, nothing()), (&a, nothing())];
    let edits: Vec<Edit> = vec![
        nothing(),
        Box::new(move |db| ids(db, vec![id("0"), id("0.0"), id("0.0.1"), id("0.0.1.1")])),
        Box::new(move |db| ids(db, vec![id("0.0"), id("0"), id("0.0.1"), id("0.0.1.1")])),
        Box::new(move |db| ids(db, vec![id("0"), id("0.0"), id("0.0.1"), id("0.1")])),
        Box::new(move |db| {
            ids(
                db,
                vec![id("0"), id("0.0"), id("0.0.1"), id("0.0.1.1"), id("0.1")],
            )
        }),
        Box::new(|db| set(db, ":aido/running", Value::Int(3))),
        Box::new(|db| unset(db, ":aido/running")),
        Box::new(|db| *db = read_value(&db.to_string()).unwrap()),
    ];
    for edit in edits {
        // Halted, started again, then the next tick with the edit.
        steps.push((&a, Box::new(halt)));
        steps.push((&a, Box::new(start)));
        steps.push((&a, edit));
        steps.push((&a, nothing()));
    }
    // Another tree of the same text ticks the db between the start and
    // the next tick; then one whose ids are keywords, halted and started.
    steps.extend([
        (&a, Box::new(halt) as Edit),
        (&a, Box::new(start)),
        (&other, nothing()),
        (&a, nothing()),
        (
            &named,
            Box::new(|db: &mut Value| *db = read_value("{:n 0}").unwrap()),
        ),
        (&named, nothing()),
        (&named, Box::new(halt)),
        (&named, Box::new(start)),
        (&named, nothing()),
        (&named, Box::new(halt)),
        (&named, Box::new(start)),
        (
            &named,
            Box::new(move |db| ids(db, vec![id("0.1"), id("walk")])),
        ),
        (&named, nothing()),
        // A wait that starts in a tick that ends in Error (`:s` a string
        // for `:inc!`): the set is written all the same, and taken over.
        (
            &failing,
            Box::new(|db: &mut Value| *db = read_value("{:s 0}").unwrap()),
        ),
        (&failing, Box::new(halt)),
        (
            &failing,
            Box::new(|db: &mut Value| {
                unset(db, ":stop");
                set(db, ":s", Value::string("x"));
            }),
        ),
        (
            &failing,
            Box::new(|db: &mut Value| set(db, ":s", Value::Int(0))),
        ),
        (&failing, nothing()),
    ]);
    let mut db = read_value("{:s 0}").unwrap();
    for (n, (tree, edit)) in steps.iter().enumerate() {
        edit(&mut db);
        let here = tick(tree, db.clone(), 1000);
        let fresh = on_fresh_thread(|| tick(tree, db.clone(), 1000));
        let general = on_fresh_thread(|| tick_general(tree, db.clone(), 1000));
        assert_eq!(seen(&here), seen(&fresh), "tick {n}, from {db}");
        assert_eq!(
            seen(&here),
            seen(&general),
            "tick {n}, from {db}: against the general path"
        );
        db = here.db;
    }
}

#[test]
fn a_set_taken_over_by_its_kept_ids_still_sees_a_host_edit_in_place() {
    // Once a set is taken over on this thread, the next ticks of the same
    // tree compare the db's ids with clones kept of its nodes' ids, without
    // reading the nodes (`Long::filed_ids`). A host that edits the vector
    // in place (same vector, ids replaced) must still be seen: another
    // node's id, two ids swapped, an equal string of its own, a keyword,
    // an id taken out; each against a thread that kept nothing and the
    // general path. Another tree of the same text in between must not take
    // this tree's kept ids as its own.
    let text = "[:sequence [:selector [:present? {:key :stop}] \
                  [:sequence [:inc! {:key :n}] [:wait {:ticks 40}]]] [:inc! {:key :s}]]";
    let a = compile_str("a.edn", text, &Registry::new()).unwrap();
    let other = compile_str("o.edn", text, &Registry::new()).unwrap();
    let in_place = |f: fn(&mut Vec<Value>)| {
        move |db: &mut Value| {
            let running = Value::keyword("aido/running");
            if let Some(Value::Vector(ids)) = db.as_map_mut().unwrap().get_mut(&running) {
                let mut items: Vec<Value> = ids.iter().cloned().collect();
                f(&mut items);
                ids.clear();
                ids.extend(items);
            }
        }
    };
    type Edit<'a> = Box<dyn Fn(&mut Value) + 'a>;
    let nothing = || -> Edit { Box::new(|_| {}) };
    let halt: fn(&mut Value) = |db| set(db, ":stop", Value::Bool(true));
    let start: fn(&mut Value) = |db| unset(db, ":stop");
    let edits: Vec<Edit> = vec![
        Box::new(in_place(|ids| ids[3] = Value::string("0.1"))),
        Box::new(in_place(|ids| ids.swap(1, 2))),
        Box::new(in_place(|ids| ids[2] = Value::string("0.0.1"))),
        Box::new(in_place(|ids| ids[0] = Value::keyword("x"))),
        Box::new(in_place(|ids| {
            ids.pop();
        })),
    ];
    let mut steps: Vec<(&Tree, Edit)> = vec![(&a, nothing())];
    for edit in edits {
        // Started, three ticks of the set taken over, then the edit.
        steps.push((&a, Box::new(halt)));
        steps.push((&a, Box::new(start)));
        steps.push((&a, nothing()));
        steps.push((&a, nothing()));
        steps.push((&a, edit));
        steps.push((&a, nothing()));
    }
    steps.extend([
        (&a, Box::new(halt) as Edit),
        (&a, Box::new(start)),
        (&a, nothing()),
        (&other, nothing()),
        (&a, nothing()),
        (&other, nothing()),
    ]);
    tick_in_place_against_fresh_and_general(&steps);
}

#[test]
fn a_steady_set_still_sees_every_host_edit_of_the_keys_its_load_reads() {
    // The steady tick's load takes the set the last tick on this thread
    // left filed over without a call (`Engine::take_usual_leaf`): each
    // id the same keyword or the same string object as the one kept, the
    // db stamped with this tree's fingerprint, no `:aido/error` or
    // `:aido/results`. A host that changes any of these between two
    // steady ticks must be seen: keyword ids swapped, replaced by another
    // node's or by an equal keyword, a string for a keyword; the stamp
    // changed; an error or completions added. Each against a thread that
    // kept nothing and the general path, for keyword and string ids.
    let named = "[:sequence {:id :top} [:selector {:id :sel} [:present? {:key :stop}] \
                   [:sequence {:id :go} [:inc! {:key :n}] [:wait {:id :walk :ticks 40}]]] \
                   [:inc! {:key :s}]]";
    let plain = "[:sequence [:selector [:present? {:key :stop}] \
                   [:sequence [:inc! {:key :n}] [:wait {:ticks 40}]]] [:inc! {:key :s}]]";
    let in_place = |f: fn(&mut Vec<Value>)| {
        move |db: &mut Value| {
            let running = Value::keyword("aido/running");
            if let Some(Value::Vector(ids)) = db.as_map_mut().unwrap().get_mut(&running) {
                let mut items: Vec<Value> = ids.iter().cloned().collect();
                f(&mut items);
                ids.clear();
                ids.extend(items);
            }
        }
    };
    type Edit<'a> = Box<dyn Fn(&mut Value) + 'a>;
    for text in [named, plain] {
        let tree = compile_str("t.edn", text, &Registry::new()).unwrap();
        let nothing = || -> Edit { Box::new(|_| {}) };
        let halt: fn(&mut Value) = |db| set(db, ":stop", Value::Bool(true));
        let start: fn(&mut Value) = |db| unset(db, ":stop");
        let edits: Vec<Edit> = vec![
            Box::new(in_place(|ids| ids.swap(2, 3))),
            Box::new(in_place(|ids| ids[3] = ids[1].clone())),
            Box::new(in_place(|ids| ids[1] = Value::keyword("sel"))),
            Box::new(in_place(|ids| ids[3] = Value::string("walk"))),
            Box::new(in_place(|ids| ids[3] = Value::keyword("walk"))),
            Box::new(|db| set(db, ":aido/tree", Value::Int(1))),
            Box::new(|db| set(db, ":aido/tree", Value::string("t"))),
            Box::new(|db| set(db, ":aido/results", read_value("{:x 1}").unwrap())),
            Box::new(|db| set(db, ":aido/error", Value::string("old"))),
        ];
        let mut steps: Vec<(&Tree, Edit)> = vec![(&tree, nothing())];
        for edit in edits {
            // Started, two ticks of the set taken over, then the edit.
            steps.push((&tree, Box::new(halt)));
            steps.push((&tree, Box::new(start)));
            steps.push((&tree, nothing()));
            steps.push((&tree, nothing()));
            steps.push((&tree, edit));
            steps.push((&tree, nothing()));
        }
        tick_in_place_against_fresh_and_general(&steps);
    }
}

/// A tree to tick and the host's edit of the db before the tick.
type Step<'a> = (&'a Tree, Box<dyn Fn(&mut Value) + 'a>);

/// Ticks each step's tree in place on this thread after its edit, as a
/// host that keeps its dbs ticks them (an edited vector is the one the last
/// tick left), and asserts that each tick gives what a thread that kept
/// nothing gives, and what the general path gives.
fn tick_in_place_against_fresh_and_general(steps: &[Step<'_>]) {
    let mut db = read_value("{:s 0}").unwrap();
    for (n, (tree, edit)) in steps.iter().enumerate() {
        edit(&mut db);
        let before = db.clone();
        let here = aido::tick::tick_in_place(&mut db, tree);
        let here = format!(
            "{:?} steps {} db {} error {:?}",
            here.status,
            here.steps,
            db,
            here.error.as_deref().map(|e| (&e.message, &e.node))
        );
        let brief = |t: &Tick| {
            format!(
                "{:?} steps {} db {} error {:?}",
                t.status,
                t.steps,
                t.db,
                t.error.as_deref().map(|e| (&e.message, &e.node))
            )
        };
        let fresh = on_fresh_thread(|| tick(tree, before.clone(), 1_000_000));
        let general = on_fresh_thread(|| tick_general(tree, before.clone(), 1_000_000));
        assert_eq!(here, brief(&fresh), "tick {n}, from {before}");
        assert_eq!(
            here,
            brief(&general),
            "tick {n}, from {before}: against the general path"
        );
    }
}

#[test]
fn ids_kept_for_one_run_are_not_taken_for_another_runs_after_a_start() {
    // Two runs under one selector, the waits `:wa` and `:wb`: ids are
    // kept for the run that ran (`Long::filed_ids`), and a start of the
    // other run must not take them as its own, nor a set parked by the
    // other's halt. The host then writes the first run's ids over the
    // second's in place, which a thread that kept nothing reads as they are.
    let text = "[:selector [:present? {:key :stop}] [:selector {:id :pick} \
                  [:sequence {:id :sb} [:present? {:key :b}] [:wait {:id :wb :ticks 40}]] \
                  [:sequence {:id :sa} [:inc! {:key :n}] [:wait {:id :wa :ticks 40}]]]]";
    let tree = compile_str("t.edn", text, &Registry::new()).unwrap();
    type Edit<'a> = Box<dyn Fn(&mut Value) + 'a>;
    let nothing = || -> Edit { Box::new(|_| {}) };
    let to_a: fn(&mut Value) = |db| {
        let running = Value::keyword("aido/running");
        if let Some(Value::Vector(ids)) = db.as_map_mut().unwrap().get_mut(&running)
            && ids.len() == 4
        {
            ids[2] = Value::keyword("sa");
            ids[3] = Value::keyword("wa");
        }
    };
    let mut steps: Vec<(&Tree, Edit)> = Vec::new();
    for _ in 0..2 {
        steps.extend([
            (&tree, nothing()),
            (&tree, nothing()),
            (
                &tree,
                Box::new(|db: &mut Value| set(db, ":stop", Value::Bool(true))) as Edit,
            ),
            (
                &tree,
                Box::new(|db: &mut Value| {
                    unset(db, ":stop");
                    set(db, ":b", Value::Bool(true));
                }),
            ),
            (&tree, Box::new(to_a)),
            (&tree, nothing()),
            (
                &tree,
                Box::new(|db: &mut Value| set(db, ":stop", Value::Bool(true))),
            ),
            (&tree, Box::new(|db: &mut Value| unset(db, ":stop"))),
            (&tree, nothing()),
            (
                &tree,
                Box::new(|db: &mut Value| set(db, ":stop", Value::Bool(true))),
            ),
            (
                &tree,
                Box::new(|db: &mut Value| {
                    unset(db, ":stop");
                    unset(db, ":b");
                }),
            ),
            (&tree, nothing()),
        ]);
    }
    tick_in_place_against_fresh_and_general(&steps);
}

#[test]
fn a_halt_or_a_start_below_a_general_root_leaves_the_running_set_to_the_ticks_end() {
    // At the root, a long-path flow ends the tick: a halt of all that ran
    // takes the set out there (`Engine::end_run_at_root`), and a start
    // after a halt puts the parked set back there (`Engine::start_parked`).
    // Below a general root (a parallel, a sequence with memory) the tick goes on, and the set is
    // the end's to write: here the parallel's other child writes a key
    // new to the db after the start, or starts a wait of its own after
    // the halt, and the db's order must be the general path's. The sets
    // that reach these flows without the root come from a tick that ended
    // in Error after the wait started (`:s` a string for `:inc!`) and
    // from the host.
    let late = "[:parallel {:success-threshold 2} \
                  [:selector {:id :a} [:present? {:key :stop}] [:wait {:id :walk :ticks 40}]] \
                  [:selector [:sequence [:present? {:key :stop}] [:dissoc! {:key :late}]] \
                   [:sequence [:inc! {:key :s}] [:define! {:key :late :val 1}]]]]";
    let both = "[:sequence {:memory true} \
                  [:selector {:id :a} [:present? {:key :stop}] [:wait {:id :walk :ticks 40}]] \
                  [:sequence {:id :b} [:present? {:key :stop}] [:wait {:id :rest :ticks 40}]]]";
    let late = compile_str("l.edn", late, &Registry::new()).unwrap();
    let both = compile_str("b.edn", both, &Registry::new()).unwrap();
    type Edit<'a> = Box<dyn Fn(&mut Value) + 'a>;
    let steps: Vec<(&Tree, Edit)> = vec![
        (&late, Box::new(|db| set(db, ":s", Value::string("x")))),
        (
            &late,
            Box::new(|db| {
                set(db, ":stop", Value::Bool(true));
                set(db, ":s", Value::Int(0));
            }),
        ),
        (&late, Box::new(|db| unset(db, ":stop"))),
        (&late, Box::new(|_| {})),
        (
            &both,
            Box::new(|db| *db = read_value("{:aido/running [:a :walk] :stop true :s 0}").unwrap()),
        ),
        (&both, Box::new(|_| {})),
    ];
    tick_in_place_against_fresh_and_general(&steps);
}

#[test]
fn a_start_where_the_db_had_no_running_set_finds_one_that_user_code_or_a_data_node_added() {
    // The tick's set-up proves `:aido/running` absent, so a wait that
    // starts appends the set without looking for the key again; but user
    // code handed the db (`t/put`) or a data node of the tree may add the
    // key before the start, and the set must then take its place, once.
    // Each tree is ticked as hosts tick it, on a fresh thread and on the
    // general path, untraced and traced, through a halt and a start again.
    use aido::Status;
    use aido::extend::NodeType;
    let mut registry = Registry::new();
    registry
        .node_type(NodeType::new("t/put").tick(|ctx| {
            ctx.db_mut().insert(
                Value::keyword("aido/running"),
                read_value("[\"elsewhere\" 7]").unwrap(),
            );
            Ok(Status::Success)
        }))
        .unwrap();
    let texts = [
        "[:selector [:present? {:key :stop}] [:sequence [:t/put] [:wait {:ticks 9}]]]",
        "[:selector [:present? {:key :stop}] \
           [:sequence [:define! {:key :aido/running :val [\"elsewhere\" 7]}] [:wait {:ticks 9}]]]",
        "[:selector [:present? {:key :stop}] \
           [:parallel {:policy :sequence} [:wait {:ticks 9}] [:t/put]]]",
    ];
    for text in texts {
        let tree = compile_str("t.edn", text, &registry).unwrap();
        let traced = TickOptions {
            trace: true,
            ..TickOptions::default()
        };
        let mut db = read_value("{:n 0}").unwrap();
        for n in 0..6 {
            if n == 2 {
                set(&mut db, ":stop", Value::Bool(true));
            } else {
                unset(&mut db, ":stop");
            }
            let here = tick(&tree, db.clone(), 1000);
            let fresh = on_fresh_thread(|| tick(&tree, db.clone(), 1000));
            let general = on_fresh_thread(|| tick_general(&tree, db.clone(), 1000));
            let with_trace = aido::tick::run_tick_with_options(db.clone(), &tree, &traced);
            assert_eq!(seen(&here), seen(&fresh), "{text}: tick {n}, from {db}");
            assert_eq!(seen(&here), seen(&general), "{text}: tick {n}, from {db}");
            assert_eq!(
                seen(&here),
                seen(&with_trace),
                "{text}: tick {n}, from {db}"
            );
            let printed = here.db.to_string();
            assert!(
                printed.matches(":aido/running").count() <= 1,
                "{text}: tick {n}: {printed}"
            );
            if here.status == Status::Running {
                let running = here.db.get(&Value::keyword("aido/running")).unwrap();
                assert!(
                    !running.to_string().contains("elsewhere"),
                    "{text}: tick {n}: {printed}"
                );
            }
            db = here.db;
        }
    }
}

#[test]
fn the_tick_after_a_halt_takes_the_db_as_its_trees_by_the_stamp_whatever_proves_no_set() {
    // After a halt the db holds no `:aido/running`, which the key's own bit
    // of the filter proves with one test in a small db (exact) and a
    // search in a large one (more than eight keys: its filter keeps the
    // removed key's bit; `Engine::take_usual_running`). Either way the db
    // is the tree's only if stamped with its fingerprint: one stamped with
    // another tree's is carried over and stamped anew, and one whose stamp
    // the host took out is stamped again by the start (which, in a db
    // found stamped, leaves nothing to stamp: `Engine::start_parked`).
    // Every tick agrees with the general path.
    let tree = compile_str(
        "t.edn",
        "[:sequence {:id :top} \
           [:selector {:id :sel} [:present? {:key :stop}] \
             [:sequence {:id :walk} [:inc! {:key :n}] [:wait {:id :w :ticks 6}]]] \
           [:inc! {:key :s}]]",
        &Registry::new(),
    )
    .unwrap();
    let running = Value::keyword("aido/running");
    let stamp_key = Value::keyword("aido/tree");
    for extra in [0, 12] {
        let mut db = read_value("{:s 0}").unwrap();
        for i in 0..extra {
            set(&mut db, &format!(":k{i}"), Value::Int(i));
        }
        let ran = tick(&tree, db, 1_000_000).db;
        assert!(ran.get(&running).is_some(), "{extra}");
        // The stamp as it is, another tree's, taken out; each after a halt
        // on this thread, which parks the set the start puts back.
        for stamp_edit in 0..3 {
            let mut halted = ran.clone();
            set(&mut halted, ":stop", Value::Bool(true));
            let halted = tick(&tree, halted, 1_000_000).db;
            assert!(halted.get(&running).is_none(), "{extra}");
            let stamp = halted.get(&stamp_key).cloned().unwrap();
            let mut db = halted.clone();
            unset(&mut db, ":stop");
            match stamp_edit {
                1 => set(&mut db, ":aido/tree", Value::Int(1)),
                2 => unset(&mut db, ":aido/tree"),
                _ => {}
            }
            let (l, g) = (
                tick(&tree, db.clone(), 1_000_000),
                tick_general(&tree, db, 1_000_000),
            );
            assert_eq!(seen(&l), seen(&g), "{extra} keys more, {stamp_edit}");
            assert_eq!(l.db.get(&stamp_key), Some(&stamp), "{extra}, {stamp_edit}");
            assert!(l.db.get(&running).is_some(), "{extra}, {stamp_edit}");
        }
    }
}

#[test]
fn a_stub_that_can_run_takes_the_flows_above_it_off_the_long_path() {
    // Stubs are put into a compiled tree and its marks worked out again
    // (`Stubs::apply`): a flow over a wait whose plain leaf, or which
    // itself, is stubbed to run can no longer take the long path, nor can
    // the flows above it, and each tick runs as on the general path.
    use aido::stub::{Stub, Stubs};
    let text = "[:selector [:sequence {:id :s} [:present? {:id :p :key :a}] [:wait {:id :w :ticks 5}]] \
                  [:inc! {:key :n}]]";
    let data = read_value(text).unwrap();
    for (stubbed, stub) in [
        ("p", ":running"),
        ("p", "[:running :success :failure]"),
        ("s", ":running"),
        ("s", "[:running :failure]"),
    ] {
        let mut stubs = Stubs::new();
        stubs.insert(
            Value::keyword(stubbed),
            Stub::from_value(&read_value(stub).unwrap()).unwrap(),
        );
        let tree = stubs.compile(&data, &Registry::new()).unwrap();
        let start = read_value("{:n 0}").unwrap();
        assert_same(stub, &tree, &start, 6, 1_000_000, |_, _| {});
    }
}

#[test]
fn a_wait_started_again_below_a_general_root_counts_in_the_parked_memory_as_a_fresh_thread() {
    // A wait started again after its halt writes its count over the one
    // in the node memory the halt parked, and puts that map back in the db
    // (`Engine::put_count`). Below a general root the start does not put
    // the set back at once (`Engine::start_parked`): the tick's end writes
    // it, after the count. The host takes the tree's stamp out between a
    // halt and the start, which stamps the db again. Keyword and string
    // ids; a thread that kept nothing (no parked memory) and the general
    // path must agree.
    let named = "[:sequence {:memory true} \
                  [:selector {:id :a} [:present? {:key :stop}] [:wait {:id :walk :ticks 40}]] \
                  [:inc! {:key :s}]]";
    let unnamed = "[:sequence {:memory true} \
                  [:selector [:present? {:key :stop}] [:wait {:ticks 40}]] [:inc! {:key :s}]]";
    let named = compile_str("n.edn", named, &Registry::new()).unwrap();
    let unnamed = compile_str("u.edn", unnamed, &Registry::new()).unwrap();
    type Edit<'a> = Box<dyn Fn(&mut Value) + 'a>;
    let mut steps: Vec<(&Tree, Edit)> = Vec::new();
    for tree in [&named, &unnamed] {
        steps.push((tree, Box::new(|db| *db = read_value("{:s 0}").unwrap())));
        for unstamp in [false, true] {
            steps.extend([
                (tree, Box::new(|_: &mut Value| {}) as Edit),
                (tree, Box::new(|db| set(db, ":stop", Value::Bool(true)))),
                (
                    tree,
                    Box::new(move |db| {
                        unset(db, ":stop");
                        if unstamp {
                            unset(db, ":aido/tree");
                        }
                    }),
                ),
                (tree, Box::new(|_| {})),
            ]);
        }
    }
    tick_in_place_against_fresh_and_general(&steps);
}

#[test]
fn a_run_proven_to_be_the_whole_set_is_proven_again_for_another_tree() {
    // A wait that runs on at the end of the whole running set's run, the
    // root's, notes that the set is its run (`Long::filed_run_wait`), so
    // that its next ticks mark the set running again without climbing
    // the run. Another tree whose nodes have the same ids at the same
    // places, its root a general flow (a selector with memory), takes
    // that set over on the same thread: there the wait's run is shorter
    // than the set, and what was proven for the first tree is not so (a
    // debug build checks the set against the run each time it is taken
    // as proven).
    let long = "[:selector [:present? {:key :stop}] \
                 [:sequence [:inc! {:key :n}] [:wait {:id :walk :ticks 40}]]]";
    let general = "[:selector {:memory true} [:present? {:key :stop}] \
                    [:sequence [:inc! {:key :n}] [:wait {:id :walk :ticks 40}]]]";
    let a = compile_str("a.edn", long, &Registry::new()).unwrap();
    let b = compile_str("b.edn", general, &Registry::new()).unwrap();
    type Edit<'a> = Box<dyn Fn(&mut Value) + 'a>;
    let nothing = || -> Edit { Box::new(|_| {}) };
    let mut steps: Vec<(&Tree, Edit)> = Vec::new();
    for _ in 0..2 {
        steps.extend([
            (&a, nothing()),
            (&a, nothing()),
            (&a, nothing()),
            (&b, nothing()),
            (&b, nothing()),
            (&a, nothing()),
            (&a, nothing()),
        ]);
    }
    tick_in_place_against_fresh_and_general(&steps);
}

#[test]
fn a_set_counted_as_run_again_whole_is_marked_so_where_the_ticks_end_reads_it() {
    // While a wait at the end of the root's run runs on, the tick counts
    // the set as run again whole and leaves each node's fate as loaded
    // (`Long::mark_run_again`): the usual end reads the count alone, but
    // an end that cannot take the set as the db's reads the fates, and
    // must find each node running again, as a tick on a thread that kept
    // nothing and the general path find it. Here a domain node in front
    // of the wait is handed the db (which it may have edited), or the
    // tick is given locals, or ends in Error.
    let mut registry = Registry::new();
    registry
        .node_type(
            aido::extend::NodeType::new("t/touch")
                .one_visit(true)
                .tick(|ctx| {
                    // Handed the db only on the ticks that ask for it.
                    if ctx.db().contains_key(&Value::keyword("touch")) {
                        let _ = ctx.db_mut();
                    }
                    Ok(aido::Status::Success)
                }),
        )
        .unwrap();
    let plain = "[:selector [:present? {:key :stop}] \
                 [:sequence [:inc! {:key :n}] [:wait {:id :walk :ticks 40}]]]";
    let touched = "[:selector [:present? {:key :stop}] \
                   [:sequence [:inc! {:key :n}] [:t/touch] [:wait {:id :walk :ticks 40}]]]";
    let with_locals = TickOptions {
        locals: Some(read_value("{:x 1}").unwrap()),
        ..TickOptions::default()
    };
    for text in [plain, touched] {
        let tree = compile_str("t.edn", text, &registry).unwrap();
        let mut db = read_value("{:n 0}").unwrap();
        for n in 0..12 {
            let options = if n % 4 == 3 {
                with_locals.clone()
            } else {
                TickOptions::default()
            };
            if n == 6 {
                // An `:inc!` of a string: the tick ends in Error.
                set(&mut db, ":n", Value::string("x"));
            } else if n == 7 {
                set(&mut db, ":n", Value::Int(0));
            }
            if n % 4 == 1 {
                set(&mut db, ":touch", Value::Bool(true));
            } else {
                unset(&mut db, ":touch");
            }
            let before = db.clone();
            let here = aido::tick::run_tick_with_options(db, &tree, &options);
            let fresh = on_fresh_thread(|| {
                aido::tick::run_tick_with_options(before.clone(), &tree, &options)
            });
            let general = on_fresh_thread(|| {
                aido::tick::run_tick_general_path(before.clone(), &tree, &options)
            });
            assert_eq!(
                seen(&here),
                seen(&fresh),
                "tick {n} of {text}, from {before}"
            );
            assert_eq!(
                seen(&here),
                seen(&general),
                "tick {n} of {text}, from {before}: against the general path"
            );
            db = here.db;
        }
    }
}
