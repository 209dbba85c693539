//! The plain path (subtrees that cannot run long, ticked by a leaner
//! interpreter) must give exactly what the general path gives, traced or
//! not. Every tree here is ticked three ways from the same db: on the plain
//! path untraced and traced, and with every node on the general path
//! (`tick::run_tick_general_path`), traced; the status, db (with
//! `:aido/error`), step count and error must agree, and so must the traces
//! of the plain and the general path, event for event.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use crate::common::{self, Gen};

#[path = "../../benches/common/mod.rs"]
mod workloads;

use aido::{
    Registry, Status, Tick, Tree, Value, compile_str, extend::NodeType, read_value,
    tick::TickOptions,
};

const KEYS: &[&str] = &[":a", ":b", ":c", "[:m :x]"];
const VALUES: &[&str] = &[
    "0", "1", "5", "-3", "\"s\"", ":k", "nil", "[1 2]", "2.5", ":success",
];

/// The built-ins and `:gen/above?`, a condition registered in Rust and
/// declared to finish in one visit, so the plain path takes it: Success if
/// the integer at its `:key` is above its `:min` (a constant, or read from
/// the db), Failure if the key holds nothing, an Error for another value.
fn registry() -> Registry {
    let mut registry = Registry::new();
    let mut above = NodeType::new("gen/above?").one_visit(true);
    let key = above.key_slot("key");
    let min = above.slot::<i64>("min");
    registry
        .node_type(above.tick(move |ctx| {
            let min = ctx.get(min)?;
            match ctx.db_at(key) {
                Some(Value::Int(n)) => Ok(Status::from_bool(*n > min)),
                None | Some(Value::Nil) => Ok(Status::Failure),
                Some(other) => Err(format!("`{other}` is not an integer").into()),
            }
        }))
        .unwrap();
    registry
}

/// A random leaf: conditions, actions (some of which fail with an Error on
/// the wrong type), a condition registered in Rust, and now and then a node
/// that can run (`:wait`).
fn leaf(g: &mut Gen) -> String {
    let key = g.pick(KEYS);
    let val = g.pick(VALUES);
    match g.below(13) {
        0 => "[:success]".into(),
        1 => "[:failure]".into(),
        2 => format!("[:present? {{:key {key}}}]"),
        3 => format!("[:greater-than? {{:key {key} :val {}}}]", g.below(6)),
        4 => format!("[:less-than? {{:key {key} :val {}}}]", g.below(6)),
        5 => format!("[:equal? {{:v1 [:aido/db {key}] :v2 {val}}}]"),
        6 => format!("[:define! {{:key {key} :val {val}}}]"),
        7 => format!("[:inc! {{:key {key}}}]"),
        8 => format!("[:dissoc! {{:key {key}}}]"),
        9 => format!("[:emit! {{:key {key} :val {val}}}]"),
        10 => "[:wait {:ticks 1}]".into(),
        11 => format!(
            "[:gen/above? {{:key {key} :min {}}}]",
            g.pick(&["0", "2", "[:aido/db :b]"])
        ),
        _ => format!(
            "[:test? {{:key {key} :oper {} :val {}}}]",
            g.pick(&["=", "<", ">=", "not="]),
            g.below(4)
        ),
    }
}

/// A random tree of at most `depth` levels of composites, now and then with
/// a node the plain path does not take (memory, a precondition, a
/// parallel with a policy).
fn tree(g: &mut Gen, depth: u32) -> String {
    if depth == 0 || g.below(4) == 0 {
        return leaf(g);
    }
    let kids = |g: &mut Gen, most: u64| {
        let n = 1 + g.below(most);
        (0..n)
            .map(|_| tree(g, depth - 1))
            .collect::<Vec<_>>()
            .join(" ")
    };
    match g.below(17) {
        0 | 1 => format!("[:selector {}]", kids(g, 4)),
        2 | 3 => format!("[:sequence {}]", kids(g, 4)),
        4 => format!("[:loop {{:count {}}} {}]", count(g, 4), kids(g, 1)),
        5 => format!(
            "[:loop-until-success {{:count {}}} {}]",
            count(g, 4),
            kids(g, 1)
        ),
        6 => format!("[:invert {}]", kids(g, 1)),
        7 => format!("[:always {}]", kids(g, 1)),
        8 => format!("[:never {}]", kids(g, 1)),
        9 => format!("[:sequence {{:memory true}} {}]", kids(g, 3)),
        10 => format!("[:selector {{:aido/skip-if [:aido/db :c]}} {}]", kids(g, 3)),
        11 => format!("[:parallel {{:policy :sequence}} {}]", kids(g, 3)),
        // The standard decorators: `:force` may be plain, the others never.
        13 => format!(
            "[:force {{:status {}}} {}]",
            g.pick(&[":success", ":failure"]),
            kids(g, 1)
        ),
        14 => format!("[:if {}]", kids(g, 1) + " " + &kids(g, 2)),
        15 => format!(
            "[{} {}]",
            g.pick(&[
                ":retry {:count 2}",
                ":repeat {:count 2}",
                ":cooldown {:ticks 1}",
                ":run-once",
                ":delay {:ticks 1}",
                ":throttle {:ticks 2}",
                ":timeout {:ticks 2}",
                ":keep-running-until-failure",
            ]),
            kids(g, 1)
        ),
        16 => format!(
            "[:switch {{:on [:aido/db :a] :cases [0 1]}} {} {}]",
            tree(g, depth - 1),
            kids(g, 2)
        ),
        _ => format!(
            "[:parallel {{:mode {} :how-many {}}} {}]",
            g.pick(&[":success", ":failure", "[:aido/db :b]"]),
            count(g, 2),
            [tree(g, depth - 1), kids(g, 2)].join(" ")
        ),
    }
}

/// A count option: a constant below `below`, or now and then read from the
/// db (where it may be no count at all, an Error on both paths).
fn count(g: &mut Gen, below: u64) -> String {
    if g.below(5) == 0 {
        "[:aido/db :a]".into()
    } else {
        g.below(below).to_string()
    }
}

fn db(g: &mut Gen) -> Value {
    let mut text = String::from("{");
    for key in [":a", ":b", ":c"] {
        if g.below(3) > 0 {
            text.push_str(&format!("{key} {} ", g.pick(VALUES)));
        }
    }
    if g.below(2) == 0 {
        text.push_str(&format!(":m {{:x {}}}", g.pick(VALUES)));
    }
    text.push('}');
    read_value(&text).unwrap()
}

fn compile(text: &str) -> Tree {
    compile_str("t.edn", text, &registry()).unwrap()
}

fn options(budget: u64, trace: bool) -> TickOptions {
    TickOptions {
        step_budget: budget,
        trace,
        ..TickOptions::default()
    }
}

/// A tick as hosts run it: plain subtrees on the plain path.
fn tick(tree: &Tree, db: Value, budget: u64, trace: bool) -> Tick {
    aido::tick::run_tick_with_options(db, tree, &options(budget, trace))
}

/// A tick with every node on the general path.
fn tick_general(tree: &Tree, db: Value, budget: u64, trace: bool) -> Tick {
    aido::tick::run_tick_general_path(db, tree, &options(budget, trace))
}

/// Ticks `tree` `ticks` times three ways (plain untraced, plain traced,
/// general traced) and asserts that every tick agrees, traces included.
fn assert_same_both_ways(what: &str, tree: &Tree, start: &Value, ticks: usize, budget: u64) {
    let (mut plain, mut traced, mut general) = (start.clone(), start.clone(), start.clone());
    for n in 0..ticks {
        let p = tick(tree, plain, budget, false);
        let t = tick(tree, traced, budget, true);
        let g = tick_general(tree, general, budget, true);
        assert_eq!(
            (p.status, p.steps, &p.db, p.error.as_deref()),
            (g.status, g.steps, &g.db, g.error.as_deref()),
            "{what}, tick {n}, from {start}: plain untraced vs general"
        );
        assert_eq!(
            (t.status, t.steps, &t.db, t.error.as_deref(), t.trace()),
            (g.status, g.steps, &g.db, g.error.as_deref(), g.trace()),
            "{what}, tick {n}, from {start}: plain traced vs general"
        );
        (plain, traced, general) = (p.db, t.db, g.db);
    }
}

#[test]
fn generated_trees_tick_the_same_on_the_plain_and_the_general_path() {
    let registry = registry();
    let mut g = Gen(42);
    let mut statuses = [0usize; 4];
    for i in 0..400 {
        let text = tree(&mut g, 4);
        let tree = compile_str("gen.edn", &text, &registry)
            .unwrap_or_else(|e| panic!("tree {i} does not compile: {e}\n{text}"));
        for _ in 0..3 {
            let start = db(&mut g);
            // A small budget now and then, so that running out is compared too.
            let budget = if g.below(5) == 0 { g.below(8) } else { 1_000 };
            assert_same_both_ways(&format!("tree {i}: {text}"), &tree, &start, 4, budget);
            let status = tick(&tree, start, budget, false).status;
            statuses[match status {
                Status::Success => 0,
                Status::Failure => 1,
                Status::Running => 2,
                _ => 3,
            }] += 1;
        }
    }
    // The generated cases reach every outcome, Error included.
    assert!(statuses.iter().all(|&n| n > 20), "{statuses:?}");
}

#[test]
fn the_conformance_suite_ticks_the_same_on_both_paths() {
    let registry = Registry::new();
    for case in common::conformance_cases() {
        let text = case.tree.to_string();
        let tree = compile_str("case.edn", &text, &registry)
            .unwrap_or_else(|d| panic!("{}: every case of the suite compiles: {d:?}", case.name));
        // Seeded, so that random nodes draw the same numbers on both paths.
        let mut db = case.db.clone();
        if let Value::Map(m) = &mut db {
            m.insert(Value::keyword("aido/seed"), Value::Int(7));
        }
        let ticks = usize::try_from(case.ticks).unwrap_or(1).max(1);
        assert_same_both_ways(&case.name, &tree, &db, ticks, 1_000_000);
    }
}

#[test]
fn options_read_from_the_db_tick_the_same_on_both_paths_errors_included() {
    // The loops' count and the counting parallel's mode and how-many are
    // resolved by the code both paths share; a value that is no count or
    // no mode is an Error at the node on both.
    let loops = compile(
        "[:sequence [:loop {:count [:aido/db :n]} [:inc! {:key :i}]]
                    [:loop-until-success {:count [:aido/db :n]} [:never [:inc! {:key :j}]]]]",
    );
    let parallel = compile(
        "[:parallel {:mode [:aido/db :mode] :how-many [:aido/db :n]}
                    [:success] [:failure] [:invert [:failure]]]",
    );
    for db in [
        "{:n 2, :mode :success}",
        "{:n 3, :mode :failure}",
        "{:n 0, :mode :success}",
        "{:n -1, :mode :success}",
        "{:n \"two\", :mode :success}",
        "{:n 1, :mode :sometimes}",
        "{}",
    ] {
        let start = read_value(db).unwrap();
        assert_same_both_ways(&format!("loops from {db}"), &loops, &start, 2, 1_000);
        assert_same_both_ways(&format!("parallel from {db}"), &parallel, &start, 2, 1_000);
    }
    let bad = tick(&loops, read_value("{:n \"two\"}").unwrap(), 1_000, false);
    assert_eq!(bad.status, Status::Error);
    let good = tick(
        &parallel,
        read_value("{:n 2, :mode :success}").unwrap(),
        1_000,
        false,
    );
    assert_eq!(good.status, Status::Success);
}

#[test]
fn constant_counts_read_from_the_node_tick_as_their_options_say_at_the_edges() {
    // A loop's constant `:count` and a counting parallel's constant `:mode`
    // and `:how-many` are worked out when the tree is compiled
    // (`Node::count`) and read from the node on the plain path; a loop's
    // count too large for it (2^32 - 1 and over) is resolved at the tick, as
    // a count from the db is. (A constant `:how-many` is at most the
    // number of children, which the compiler checks.)
    for (text, status) in [
        ("[:loop {:count 0} [:failure]]", Status::Success),
        (
            "[:loop-until-success {:count 0} [:success]]",
            Status::Failure,
        ),
        ("[:loop {:count 3} [:inc! {:key :n}]]", Status::Success),
        ("[:loop {:count 4294967294} [:failure]]", Status::Failure),
        ("[:loop {:count 4294967295} [:failure]]", Status::Failure),
        (
            "[:loop-until-success {:count 4294967296} [:success]]",
            Status::Success,
        ),
        (
            "[:parallel {:mode :success :how-many 2} [:success] [:failure] [:success]]",
            Status::Success,
        ),
        (
            "[:parallel {:mode :success :how-many 3} [:success] [:failure] [:success]]",
            Status::Failure,
        ),
        (
            "[:parallel {:mode :failure :how-many 1} [:success] [:failure]]",
            Status::Failure,
        ),
        (
            "[:parallel {:mode :failure :how-many 2} [:success] [:failure]]",
            Status::Success,
        ),
        (
            "[:parallel {:mode :failure :how-many 0} [:success]]",
            Status::Failure,
        ),
        (
            "[:parallel {:mode :success :how-many 0} [:failure]]",
            Status::Success,
        ),
    ] {
        let tree = compile(text);
        // Under a plain parent, and under a general one (a plain subtree's
        // root, entered through `tick_plain` when traced).
        let under = compile(&format!("[:sequence [:success] {text}]"));
        let general = compile(&format!("[:sequence {{:memory true}} [:success] {text}]"));
        for tree in [&tree, &under, &general] {
            assert_same_both_ways(text, tree, &Value::map(), 2, 1_000);
            assert_eq!(
                tick(tree, Value::map(), 1_000, false).status,
                status,
                "{text}"
            );
            assert_eq!(
                tick(tree, Value::map(), 1_000, true).status,
                status,
                "{text}"
            );
        }
    }
}

#[test]
fn a_counting_parallel_counts_its_failures_against_a_limit_for_every_mode_and_mix() {
    // A counting parallel counts only its children's failures, against a
    // limit worked out from `:mode`, `:how-many` and the children counted:
    // when compiled for constant options (plain path, `Node::count`), from
    // the child table for options read from the db (plain path), and from
    // the children not skipped on the general path. Every mix of children
    // that succeed (S), fail (F), run (R: the parallel is then general) or
    // are skipped (K: general too), with every `:how-many` up to their
    // number, against the count the options describe.
    let child = |c: char| match c {
        'S' => "[:success]",
        'F' => "[:failure]",
        'R' => "[:wait {:ticks 5}]",
        _ => "[:success {:aido/skip-if true}]",
    };
    let mut mixes: Vec<String> = Vec::new();
    for len in 1..=3u32 {
        for n in 0..4usize.pow(len) {
            let mix = (0..len).map(|i| ['S', 'F', 'R', 'K'][n / 4usize.pow(i) % 4]);
            mixes.push(mix.collect());
        }
    }
    mixes.extend((0..16usize).map(|n| (0..4).map(|i| ['S', 'F'][n >> i & 1]).collect()));
    for mix in &mixes {
        let children: Vec<&str> = mix.chars().map(child).collect();
        let counted = mix.chars().filter(|c| *c != 'K').count();
        let failures = mix.chars().filter(|c| *c == 'F').count();
        for how_many in 0..=mix.len() {
            for mode in ["success", "failure"] {
                let expected = if counted == 0 {
                    Status::Skipped
                } else if mode == "success" {
                    Status::from_bool(counted - failures >= how_many)
                } else {
                    Status::from_bool(failures < how_many)
                };
                let constant = format!(
                    "[:parallel {{:mode :{mode} :how-many {how_many}}} {}]",
                    children.join(" ")
                );
                let dynamic = format!(
                    "[:parallel {{:mode [:aido/db :mode] :how-many [:aido/db :n]}} {}]",
                    children.join(" ")
                );
                let db = read_value(&format!("{{:mode :{mode}, :n {how_many}}}")).unwrap();
                for text in [&constant, &dynamic] {
                    let tree = compile(text);
                    // As the root, and under a plain and a general parent
                    // (a Skipped parallel is passed over).
                    let under = compile(&format!("[:sequence [:success] {text}]"));
                    let general =
                        compile(&format!("[:sequence {{:memory true}} [:success] {text}]"));
                    for tree in [&tree, &under, &general] {
                        assert_same_both_ways(text, tree, &db, 2, 1_000);
                    }
                    for trace in [false, true] {
                        let root = tick(&tree, db.clone(), 1_000, trace);
                        assert_eq!(root.status, expected, "{text} from {db}");
                        // (A sequence whose skipped child is its last is
                        // Skipped too.)
                        let parallel = tick(&under, db.clone(), 1_000, trace);
                        assert_eq!(parallel.status, expected, "{text} under a sequence");
                    }
                }
            }
        }
    }
}

#[test]
fn a_loop_over_a_test_ticks_it_in_a_loop_of_its_own_as_a_visit_would() {
    // A plain loop whose child is a `:test?` (`:less-than?`,
    // `:greater-than?`) ticks it in a loop of its own (`Engine::repeat_over`):
    // a key its hint finds, a key the db lacks, a key at another place, a
    // value of another type, a bound from the db, an operator on strings,
    // and comparisons that cannot be made (an Error at the test), each on
    // both paths, traced and not, at every step budget.
    let loops = [
        "[:loop {:count 3} [:test? {:key :n :oper < :val 5}]]",
        "[:loop-until-success {:count 3} [:less-than? {:key :n :val 1}]]",
        "[:loop {:count 2} [:greater-than? {:key :absent :val 1}]]",
        "[:loop-until-success {:count 2} [:greater-than? {:key :absent :val 1}]]",
        "[:loop {:count 3} [:test? {:key :n :oper <= :val [:aido/db :m]}]]",
        "[:loop {:count 2} [:test? {:key :s :oper = :val \"x\"}]]",
        "[:loop {:count 2} [:less-than? {:key :s :val 1}]]",
        "[:loop {:count 2} [:test? {:key [:p :q] :oper > :val 0}]]",
    ];
    let dbs = [
        "{:n 2, :m 4, :s \"x\", :p {:q 1}}",
        "{:s \"y\", :m 0, :n 0, :p {:q 0}}",
        "{:n 2.5, :m 2}",
        "{}",
    ];
    for text in loops {
        for shape in [
            "X",
            "[:sequence [:success] X]",
            "[:sequence {:memory true} [:success] X]",
        ] {
            let tree = compile(&shape.replace('X', text));
            for db in dbs {
                let start = read_value(db).unwrap();
                for budget in 1..8 {
                    assert_same_both_ways(&format!("{text} from {db}"), &tree, &start, 2, budget);
                }
            }
        }
    }
    let tree = compile(loops[0]);
    let three = tick(&tree, read_value("{:n 2}").unwrap(), 1_000, false);
    assert_eq!((three.status, three.steps), (Status::Success, 4));
    let bad = tick(
        &compile(loops[6]),
        read_value("{:s \"x\"}").unwrap(),
        1_000,
        false,
    );
    assert_eq!(bad.status, Status::Error);
}

#[test]
fn the_composite_bench_workloads_tick_the_same_on_both_paths_and_alike() {
    // The two workloads differ only in the preconditions that keep the
    // second one off the plain path.
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/data");
    let mut last = Vec::new();
    for name in ["plain-composites.edn", "general-composites.edn"] {
        let text = std::fs::read_to_string(dir.join(name)).unwrap();
        let tree = compile(&text);
        assert_same_both_ways(name, &tree, &Value::map(), 3, 1_000);
        let mut db = Value::map();
        let mut statuses = Vec::new();
        for _ in 0..3 {
            let t = tick(&tree, db, 1_000, false);
            statuses.push(t.status);
            db = t.db;
        }
        assert_eq!(statuses, [Status::Success; 3], "{name}");
        last.push(db.to_string());
    }
    assert_eq!(last[0], "{:n 3, :m 9, :done true}");
    assert_eq!(last[0], last[1]);
}

#[test]
fn a_step_budget_spent_inside_a_plain_subtree_counts_every_visit() {
    let tree = compile("[:sequence [:inc! {:key :n}] [:loop {:count 5} [:inc! {:key :n}]]]");
    let t = tick(&tree, Value::map(), 4, false);
    assert_eq!((t.status, t.steps), (Status::Error, 5));
    assert_eq!(t.db.get(&Value::keyword("n")), Some(&Value::Int(2)));
    let message = &t.error.as_ref().unwrap().message;
    assert!(message.contains("step budget exceeded (4"), "{message}");
}

#[test]
fn a_plain_root_of_each_shape_is_entered_as_the_general_path_enters_it_at_any_budget() {
    // The plain root is entered as a composite visits a plain child (a leaf
    // ticked in place, anything else called by its own function): its
    // step, and a budget spent at the root or below it, as the general
    // path counts them.
    let roots = [
        "[:inc! {:key :n}]",
        "[:failure]",
        "[:gen/above? {:key :n :min 0}]",
        "[:sequence [:inc! {:key :n}] [:success]]",
        "[:selector [:failure] [:inc! {:key :n}]]",
        "[:invert [:failure]]",
        "[:loop {:count 2} [:inc! {:key :n}]]",
    ];
    for root in roots {
        let tree = compile(root);
        for budget in [0, 1, 2, 1_000] {
            assert_same_both_ways(root, &tree, &Value::map(), 2, budget);
        }
    }
    // At a budget of 0 the root's own visit is over it: an Error at the
    // root, one step, the db as it was but for the error.
    let t = tick(&compile("[:inc! {:key :n}]"), Value::map(), 0, false);
    assert_eq!((t.status, t.steps), (Status::Error, 1));
    assert_eq!(t.db.get(&Value::keyword("n")), None);
    let error = t.error.as_deref().map(|e| (e.kind, e.node_type));
    assert_eq!(
        error,
        Some((
            aido::tick::TickErrorKind::StepBudget,
            aido::value::Keyword::new("inc!")
        ))
    );
}

#[test]
fn a_db_that_says_a_plain_node_is_running_is_ticked_as_the_general_path_would() {
    // Plain nodes cannot run; a db from elsewhere may still say one does,
    // with memory for it. The general path visits it (so it is not halted
    // and its memory stays); the plain path must not do otherwise.
    let tree = compile("[:sequence [:success {:id :s}] [:wait {:id :w :ticks 2}]]");
    let start = read_value("{:aido/running [:s :w], :aido/memory {:s 1, :w {:ticks 1}}}").unwrap();
    assert_same_both_ways("a plain node said to run", &tree, &start, 3, 1_000);
}

#[test]
fn plain_subtrees_beside_a_running_node_tick_the_same_as_on_the_general_path() {
    let tree = compile(
        "[:selector [:sequence [:inc! {:key :n}] [:failure]]
                    [:sequence [:wait {:ticks 3}] [:loop {:count 2} [:inc! {:key :m}]]]
                    [:define! {:key :never :val true}]]",
    );
    assert_same_both_ways(
        "a wait beside plain subtrees",
        &tree,
        &Value::map(),
        6,
        1_000,
    );
    let mut db = Value::map();
    for _ in 0..4 {
        db = tick(&tree, db, 1_000, false).db;
    }
    // The db ran the wait, so it records the tree it belongs to.
    let recorded = db
        .as_map_mut()
        .unwrap()
        .shift_remove(&Value::keyword("aido/tree"));
    assert_eq!(recorded, Some(Value::Int(tree.fingerprint())));
    assert_eq!(db.to_string(), "{:n 4, :m 2}");
}

#[test]
fn loops_and_parallels_nested_deep_in_a_plain_subtree_tick_the_same_on_both_paths() {
    // The flat interpreter keeps a count for every loop and counting
    // parallel it is inside: nest them forty deep, alternating, with flows
    // and decorators between, and compare with the general path, budget
    // spent midway included.
    let mut text = String::from("[:inc! {:key :n}]");
    for depth in 0..40 {
        text = match depth % 4 {
            0 => format!("[:loop {{:count 2}} {text}]"),
            1 => format!(
                "[:parallel {{:mode :success :how-many 1}} [:failure] {text} [:inc! {{:key :p}}]]"
            ),
            2 => format!("[:sequence [:present? {{:key :n}}] {text}]"),
            _ => format!("[:loop-until-success {{:count 2}} [:invert {text}]]"),
        };
    }
    // On a thread with the stack `tick_all`'s workers have: the general
    // path recurses once per level, and a debug build's frames are large.
    std::thread::Builder::new()
        .stack_size(64 << 20)
        .spawn(move || {
            let tree = compile(&text);
            let start = read_value("{:n 0}").unwrap();
            for budget in [1_000_000, 700, 31] {
                assert_same_both_ways("nested loops", &tree, &start, 3, budget);
            }
            let t = tick(&tree, start, 1_000_000, false);
            assert!(t.error.is_none(), "{:?}", t.error);
            assert!(t.steps > 1_000, "{}", t.steps);
        })
        .unwrap()
        .join()
        .unwrap();
}

#[test]
fn a_budget_spent_at_each_visit_of_constant_loops_and_counting_parallels_ends_alike() {
    // The plain instances read a constant count and `:how-many` in place
    // and run the loop as a count; spend the budget at every visit in
    // turn, so that each iteration and each counted child is where the
    // tick runs out once, and compare with the general path.
    let tree = compile(
        "[:sequence [:loop {:count 3} [:inc! {:key :n}]]
                    [:parallel {:mode :failure :how-many 3}
                       [:inc! {:key :p}] [:failure]
                       [:loop-until-success {:count 2} [:failure]] [:invert [:failure]]]
                    [:parallel {:mode :success :how-many 1} [:failure] [:inc! {:key :q}]]
                    [:loop {:count 0} [:inc! {:key :never}]]]",
    );
    let full = tick(&tree, Value::map(), 1_000, false);
    assert_eq!((full.status, full.steps), (Status::Success, 17));
    for budget in 0..=full.steps {
        assert_same_both_ways(
            "constant loops and parallels",
            &tree,
            &Value::map(),
            2,
            budget,
        );
    }
}

#[test]
fn every_plain_kind_as_the_child_of_every_plain_kind_ticks_alike_on_both_paths() {
    // The plain path calls each composite and decorator by a function of
    // its own, picked by the kind of the child being visited, and hands a
    // plain child of a general node to that same choice: put each plain
    // kind under each plain kind, under a plain root and under a general
    // one (a flow with memory), and spend the budget at every visit.
    let parents: &[fn(&str) -> String] = &[
        |c| format!("[:selector [:failure] {c} [:inc! {{:key :after}}]]"),
        |c| format!("[:sequence [:success] {c} [:inc! {{:key :after}}]]"),
        |c| format!("[:parallel {{:mode :success :how-many 2}} {c} [:inc! {{:key :p}}]]"),
        |c| format!("[:loop {{:count 2}} {c}]"),
        |c| format!("[:loop-until-success {{:count 2}} {c}]"),
        |c| format!("[:invert {c}]"),
        |c| format!("[:always {c}]"),
        |c| format!("[:never {c}]"),
        |c| format!("[:force {{:status :failure}} {c}]"),
    ];
    let children = [
        "[:selector [:greater-than? {:key :n :val 1}] [:inc! {:key :n}]]",
        "[:sequence [:inc! {:key :n}] [:less-than? {:key :n :val 3}]]",
        "[:parallel {:mode :failure :how-many 1} [:inc! {:key :n}] [:present? {:key :q}]]",
        "[:loop {:count 2} [:inc! {:key :n}]]",
        "[:loop-until-success {:count 3} [:greater-than? {:key :n :val 2}]]",
        "[:invert [:present? {:key :n}]]",
        "[:always [:failure]]",
        "[:never [:inc! {:key :n}]]",
        "[:force {:status :success} [:failure]]",
        "[:gen/above? {:key :n :min 1}]",
        "[:define! {:key :d :val 1}]",
    ];
    let start = read_value("{:n 0}").unwrap();
    for parent in parents {
        for child in children {
            let plain = parent(child);
            for text in [
                plain.clone(),
                format!("[:sequence {{:memory true}} {plain}]"),
            ] {
                let tree = compile(&text);
                let full = tick(&tree, start.clone(), 1_000, false);
                assert!(full.error.is_none(), "{text}: {:?}", full.error);
                for budget in 0..=full.steps {
                    assert_same_both_ways(&text, &tree, &start, 3, budget);
                }
            }
        }
    }
}

#[test]
fn sequences_inlined_into_a_selectors_loop_tick_alike_on_both_paths_at_every_budget() {
    // A plain selector runs a plain sequence child's loop inside its own
    // (the usual shape of a reactive tree), and the inlined sequence visits
    // its own children as any flow does: a sequence that fails at its
    // first, second or last child, one that succeeds, one holding a
    // selector of sequences again, a loop and a decorator; under a plain
    // root, a general one and a decorator, each visit the budget's last
    // in turn. With a `:wait` the selector is general, and visits its
    // plain sequences through the same inlined loop.
    let selector = "[:selector
        [:sequence [:greater-than? {:key :n :val 5}] [:inc! {:key :a}]]
        [:sequence [:inc! {:key :b}] [:present? {:key :none}] [:inc! {:key :never}]]
        [:sequence [:inc! {:key :c}]
                   [:selector [:sequence [:less-than? {:key :n :val 2}] [:inc! {:key :d}]]
                              [:sequence [:inc! {:key :e}] [:failure]]]
                   [:loop {:count 2} [:inc! {:key :n}]]
                   [:invert [:present? {:key :n}]]]
        [:sequence [:define! {:key :last :val 1}]]]";
    let start = read_value("{:n 0}").unwrap();
    let waiting = selector.replace(
        "[:sequence [:define! {:key :last :val 1}]]]",
        "[:wait {:ticks 2}]]",
    );
    assert_ne!(waiting, selector);
    for text in [
        selector.to_string(),
        waiting,
        format!("[:sequence {{:memory true}} {selector}]"),
        format!("[:invert {selector}]"),
        format!("[:selector [:failure] {selector}]"),
    ] {
        let tree = compile(&text);
        for ticks in 1..=4 {
            let mut db = start.clone();
            for _ in 1..ticks {
                db = tick(&tree, db, 1_000, false).db;
            }
            let full = tick(&tree, db.clone(), 1_000, false);
            assert!(full.error.is_none(), "{text}: {:?}", full.error);
            for budget in 0..=full.steps {
                assert_same_both_ways(&text, &tree, &db, 1, budget);
            }
        }
    }
}

#[test]
fn a_plain_loop_over_an_action_ticks_alike_on_both_paths_at_every_budget() {
    // A plain `:loop` or `:loop-until-success` over `:inc!` or `:define!`
    // runs a loop of its own with the action's kind matched once: each
    // iteration's step, status and trace, an action's error in a later
    // iteration (an integer past its maximum, a key that holds no
    // integer) and an action that stops the loop, under a plain root, a
    // general one and a decorator, each visit the budget's last in turn.
    let loops = [
        "[:loop {:count 3} [:inc! {:key :n}]]",
        "[:loop {:count 1} [:inc! {:key [:m :x]}]]",
        "[:loop {:count 0} [:inc! {:key :n}]]",
        "[:loop {:count 3} [:inc! {:key :big}]]",
        "[:loop {:count 2} [:inc! {:key :s}]]",
        "[:loop {:count 3} [:define! {:key :d :val [:aido/db :n]}]]",
        "[:loop {:count 2} [:define! {:key [:m :y] :val \"v\"}]]",
        "[:loop-until-success {:count 3} [:inc! {:key :n}]]",
        "[:loop-until-success {:count 2} [:define! {:key :d :val 1}]]",
        "[:loop {:count [:aido/db :k]} [:inc! {:key :n}]]",
    ];
    let start = read_value(&format!("{{:n 0 :k 2 :s \"s\" :big {}}}", i64::MAX - 1)).unwrap();
    for action_loop in loops {
        let plain = format!("[:sequence {action_loop} [:inc! {{:key :after}}]]");
        for text in [
            plain.clone(),
            action_loop.to_string(),
            format!("[:sequence {{:memory true}} {plain}]"),
            format!("[:invert {plain}]"),
        ] {
            let tree = compile(&text);
            let full = tick(&tree, start.clone(), 1_000, false);
            for budget in 0..=full.steps + 1 {
                assert_same_both_ways(&text, &tree, &start, 3, budget);
            }
        }
    }
}

#[test]
fn a_plain_loop_over_a_flow_or_parallel_runs_its_loop_alike_on_both_paths_at_every_budget() {
    // A plain `:loop` or `:loop-until-success` over a plain `:sequence`,
    // `:selector` or counting `:parallel` runs the child's loop inside its
    // own, the child's kind matched once: every round's steps, statuses
    // and trace, a round that stops the loop, a child's error in a later
    // round, counts constant and from the db, under a plain root, a
    // general one and a decorator, each visit the budget's last in turn.
    let children = [
        "[:sequence [:inc! {:key :n}] [:less-than? {:key :n :val 3}]]",
        "[:sequence [:inc! {:key :n}] [:inc! {:key :s}]]",
        "[:selector [:greater-than? {:key :n :val 1}] [:inc! {:key :n}]]",
        "[:selector [:failure] [:invert [:inc! {:key :n}]]]",
        "[:parallel {:mode :success :how-many 2} [:inc! {:key :n}] [:less-than? {:key :n :val 3}] [:success]]",
        "[:parallel {:mode :failure :how-many 1} [:inc! {:key :n}] [:greater-than? {:key :n :val 2}]]",
        "[:parallel {:mode [:aido/db :mode] :how-many 1} [:inc! {:key :n}] [:failure]]",
        "[:selector [:sequence [:inc! {:key :n}] [:failure]] [:loop {:count 2} [:inc! {:key :m}]]]",
    ];
    let start = read_value("{:n 0 :k 2 :mode :success}").unwrap();
    let with_text = read_value("{:n 0 :k 2 :s \"s\" :mode :failure}").unwrap();
    for child in children {
        for repeat in [
            "[:loop {:count 3} CHILD]",
            "[:loop {:count 0} CHILD]",
            "[:loop-until-success {:count 3} CHILD]",
            "[:loop {:count [:aido/db :k]} CHILD]",
        ] {
            let looped = repeat.replace("CHILD", child);
            let plain = format!("[:sequence {looped} [:inc! {{:key :after}}]]");
            for text in [
                plain.clone(),
                looped.clone(),
                format!("[:sequence {{:memory true}} {plain}]"),
                format!("[:invert {plain}]"),
            ] {
                let tree = compile(&text);
                for db in [&start, &with_text] {
                    let full = tick(&tree, db.clone(), 1_000, false);
                    for budget in 0..=full.steps + 1 {
                        assert_same_both_ways(&text, &tree, db, 3, budget);
                    }
                }
            }
        }
    }
}

/// The untraced tick visits plain nodes through their closures
/// (`nodes::closure`): the 361-node tree README's instructions a visit are
/// measured on (26 leaves and 17 composites a tick: loops over leaves,
/// decorators over leaves and flows, counting parallels) and npc, each
/// over 1,000 ticks, reach the general path's status, steps and db at
/// every tick; and at every budget up to a tick's visits, the error at the
/// same node after the same steps.
#[test]
fn the_closures_tick_the_361_node_tree_and_npc_as_the_general_path_for_1000_ticks() {
    let wide = workloads::large_tree(4, 5);
    let npc = (workloads::NPC, read_value(workloads::NPC_DB).unwrap());
    for (what, text, start) in [("361", wide.as_str(), Value::map()), ("npc", npc.0, npc.1)] {
        let tree = compile(text);
        let (mut closures, mut general) = (start.clone(), start.clone());
        let mut most = 0;
        for n in 0..1000 {
            let c = tick(&tree, closures, 1_000_000, false);
            let g = tick_general(&tree, general, 1_000_000, false);
            assert_eq!(
                (c.status, c.steps, &c.db),
                (g.status, g.steps, &g.db),
                "{what}, tick {n}"
            );
            assert_ne!(c.status, Status::Error, "{what}, tick {n}");
            most = most.max(c.steps);
            (closures, general) = (c.db, g.db);
        }
        if what == "361" {
            assert_eq!(tree.len(), 361);
        }
        for budget in 1..=most {
            assert_same_both_ways(what, &tree, &start, 2, budget);
        }
    }
}

/// A tree's closures are built from its nodes as they are when first
/// ticked: a tree stubbed after a tick (`Stubs::apply`) ticks its stubs,
/// not the closures of the nodes it had, and a clone ticks as the tree.
#[test]
fn a_tree_stubbed_after_its_first_tick_ticks_its_stubs() {
    let tree = compile(
        "[:sequence [:inc! {:key :n}] [:invert [:present? {:key :gone}]] [:inc! {:key :m}]]",
    );
    let first = tick(&tree, Value::map(), 100, false);
    assert_eq!(first.status, Status::Success);
    let clone = tree.clone();
    let stubs =
        aido::stub::Stubs::from_value(&read_value("{:present? [:success]}").unwrap()).unwrap();
    let stubbed = stubs.apply(tree).unwrap();
    let t = tick(&stubbed, Value::map(), 100, false);
    let g = tick_general(&stubbed, Value::map(), 100, false);
    assert_eq!((t.status, &t.db), (Status::Failure, &g.db));
    assert_eq!(g.status, Status::Failure);
    let c = tick(&clone, Value::map(), 100, false);
    assert_eq!((c.status, &c.db), (first.status, &first.db));
}

/// A plain subtree entered from outside a closure whose most steps are
/// known is ticked, when the steps left hold them, by closures that do
/// not test the budget (`nodes::closure`'s `Guarded` and `Counted`), and
/// otherwise by those that do: at every budget from none to past a
/// tick's steps, below, at and above each subtree's most (a subtree that
/// takes all of them, one that stops short, a root that is the subtree,
/// parallels and decorators, a loop whose count comes from the db and so
/// has no bound), the tick ends as the general path's, traced or not.
#[test]
fn a_subtree_whose_most_steps_fit_ends_its_budget_alike_below_at_and_above_them() {
    let trees = [
        // All 10 of the loop's steps taken.
        "[:selector [:failure] [:loop {:count 3} [:sequence [:inc! {:key :n}] [:success]]]]",
        // 7 of its 10 taken: the selector stops at its first child.
        "[:selector [:failure] [:loop {:count 3} [:selector [:inc! {:key :n}] [:failure]]]]",
        // The root is the subtree.
        "[:sequence [:inc! {:key :n}] [:loop {:count 2} [:invert [:failure]]] [:success]]",
        "[:parallel {:mode :success :how-many 2} [:invert [:inc! {:key :n}]] \
          [:loop {:count 2} [:loop {:count 2} [:test? {:key :n :oper > :val 0}]]] \
          [:always [:sequence [:present? {:key :n}] [:define! {:key :m :val 3}]]]]",
        "[:selector [:failure] [:sequence [:failure]] \
          [:loop {:count [:aido/db :k]} [:sequence [:inc! {:key :n}] [:success]]]]",
    ];
    let start = read_value("{:k 3}").unwrap();
    for text in trees {
        let tree = compile(text);
        let steps = tick(&tree, start.clone(), 1_000, false).steps;
        for budget in 0..=steps + 2 {
            assert_same_both_ways(text, &tree, &start, 2, budget);
        }
        assert_same_both_ways(text, &tree, &start, 3, u64::MAX);
    }
}

/// A `:test?` or `:present?` closure whose key's hint misses answers
/// Failure for a key the db's filter says it lacks, and reads the db the
/// slow way otherwise: with dbs of no key, one key (no filter), several
/// keys (the filter) and the key itself of another type or value, at the
/// root's walk and below a guarded subtree, traced or not, the tick ends
/// as the general path's.
#[test]
fn a_test_or_present_of_a_key_the_db_lacks_fails_as_on_the_general_path() {
    let tests = "[:test? {:key :k :oper > :val 1}] [:present? {:key :k}] \
                 [:test? {:key :j :oper <= :val 1}] [:present? {:key :j}]";
    let trees = [
        format!("[:selector [:failure] [:sequence {tests}] [:invert [:sequence {tests}]]]"),
        format!("[:loop {{:count 3}} [:selector [:sequence {tests}] [:inc! {{:key :n}}]]]"),
        format!("[:parallel {{:mode :success :how-many 4}} {tests} [:invert [:sequence {tests}]]]"),
    ];
    let dbs = [
        "{}",
        "{:n 1}",
        "{:k 2}",
        "{:j 1}",
        "{:a 1, :b 2, :c 3}",
        "{:a 1, :k 2, :c 3, :j 0}",
        "{:a 1, :k \"two\", :c 3, :j nil}",
        "{:k 1.5, :j :one}",
    ];
    for text in &trees {
        let tree = compile(text);
        for db in dbs {
            let start = read_value(db).unwrap();
            assert_same_both_ways(&format!("{text} from {db}"), &tree, &start, 3, 1_000);
        }
    }
    let t = tick(&compile(&trees[0]), Value::map(), 1_000, false);
    assert_eq!((t.status, t.steps), (Status::Success, 7));
}

/// A `:test?` or `:present?` closure that found its key absent looks at
/// slot 1 next, where a miss asks the db's filter without a bounds test:
/// the key then added during the tick (by `:inc!`, by `:define!`, by a
/// node type registered in Rust, at slot 0, at slot 1 itself or further
/// on), removed again (`:dissoc!`), or present from the start with an
/// integer or another value, is read as the general path reads it, on
/// each round of a loop and tick after tick, traced or not.
#[test]
fn a_key_found_absent_then_added_or_removed_in_the_tick_is_read_as_on_the_general_path() {
    let mut registry = registry();
    let mut put = NodeType::new("gen/put-k!").one_visit(true);
    let by = put.slot::<i64>("by");
    registry
        .node_type(put.tick(move |ctx| {
            let by = ctx.get(by)?;
            ctx.db_mut().insert(Value::keyword("k"), Value::Int(by));
            Ok(Status::Success)
        }))
        .unwrap();
    let adds = [
        "[:inc! {:key :k}]",
        "[:define! {:key :k :val 2}]",
        "[:gen/put-k! {:by 3}]",
        "[:dissoc! {:key :k}]",
    ];
    let reads = [
        "[:test? {:key :k :oper > :val 0}]",
        "[:test? {:key :k :oper <= :val 2}]",
        "[:present? {:key :k}]",
    ];
    let dbs = [
        "{}",
        "{:a 1}",
        "{:a 1, :b 2, :c 3}",
        "{:a 1, :b 2, :k \"x\"}",
        "{:k 5, :a 1}",
        "{:a 1, :k nil, :b 2}",
    ];
    for add in adds {
        for read in reads {
            let trees = [
                format!("[:loop {{:count 3}} [:sequence [:invert {read}] {add}]]"),
                format!("[:loop {{:count 4}} [:selector {read} [:sequence {add} [:failure]]]]"),
                format!(
                    "[:selector [:sequence [:invert {read}] {add} {read}] \
                     [:parallel {{:mode :success :how-many 1}} {read} {add} {read} {read}]]"
                ),
            ];
            for text in &trees {
                let tree = compile_str("t.edn", text, &registry).unwrap();
                for db in dbs {
                    let start = read_value(db).unwrap();
                    assert_same_both_ways(&format!("{text} from {db}"), &tree, &start, 3, 1_000);
                }
            }
        }
    }
    // Absent, then added by the node type: the second round reads 3.
    let text = "[:loop {:count 2} [:sequence [:invert [:test? {:key :k :oper > :val 2}]] \
                [:gen/put-k! {:by 3}]]]";
    let tree = compile_str("t.edn", text, &registry).unwrap();
    let t = tick(&tree, read_value("{:a 1, :b 2}").unwrap(), 1_000, false);
    assert_eq!((t.status, t.steps), (Status::Failure, 8));
}

/// A plain loop over a leaf runs its rounds in line while the leaf's work
/// is, and from the first round whose work goes the slow way (a key the
/// hint misses, a value that cannot be counted up or written over in
/// place, a leaf that is all slow way: `:equal?`, a node type registered
/// in Rust) runs the rounds left out of line: at the first, a middle and
/// the last round, inside a guarded subtree and not, at every step
/// budget, traced or not, the tick ends as the general path's.
#[test]
fn a_loop_over_a_leaf_whose_work_goes_the_slow_way_at_any_round_ticks_alike() {
    let loops = [
        (
            "[:loop {:count 3} [:inc! {:key :k}]]",
            "{:k 9223372036854775806}",
        ),
        ("[:loop {:count 3} [:inc! {:key :k}]]", "{:a 1, :b 2}"),
        ("[:loop {:count 3} [:inc! {:key :k}]]", "{:k 2.5}"),
        (
            "[:loop {:count 3} [:define! {:key :k :val 4}]]",
            "{:a 1, :k \"s\"}",
        ),
        ("[:loop {:count 3} [:define! {:key :k :val 4}]]", "{}"),
        (
            "[:loop-until-success {:count 3} [:present? {:key :k}]]",
            "{}",
        ),
        (
            "[:loop-until-success {:count 3} [:present? {:key :k}]]",
            "{:a 1, :b 2, :c 3}",
        ),
        (
            "[:loop-until-success {:count 3} [:test? {:key :k :oper > :val 1}]]",
            "{:a 1, :k 0}",
        ),
        (
            "[:loop {:count 3} [:test? {:key :k :oper < :val 1}]]",
            "{:a 1, :k \"x\"}",
        ),
        (
            "[:loop {:count 3} [:test? {:key :k :oper < :val 1}]]",
            "{:b 2}",
        ),
        (
            "[:loop {:count 3} [:equal? {:v1 [:aido/db :k] :v2 1}]]",
            "{:k 1}",
        ),
        (
            "[:loop {:count 3} [:gen/above? {:key :k :min 0}]]",
            "{:k 1}",
        ),
        (
            "[:loop-until-success {:count 3} [:gen/above? {:key :k :min 0}]]",
            "{:k 0}",
        ),
    ];
    for (text, db) in loops {
        for shape in [
            "X",
            "[:sequence [:success] X]",
            "[:sequence [:success] [:success] [:success] [:success] [:success] X]",
            "[:selector [:failure] [:invert X] X]",
        ] {
            let tree = compile(&shape.replace('X', text));
            let start = read_value(db).unwrap();
            for budget in 1..14 {
                assert_same_both_ways(
                    &format!("{shape} {text} from {db}"),
                    &tree,
                    &start,
                    2,
                    budget,
                );
            }
            assert_same_both_ways(
                &format!("{shape} {text} from {db}"),
                &tree,
                &start,
                3,
                u64::MAX,
            );
        }
    }
    // The last round's `:inc!` overflows: an Error after two rounds.
    let tree = compile(loops[0].0);
    let t = tick(&tree, read_value(loops[0].1).unwrap(), 1_000, false);
    assert_eq!((t.status, t.steps), (Status::Error, 3));
}
