//! The behaviour of every node type, tick by tick, including how Running and
//! Error travel up the tree.
#![allow(clippy::panic, clippy::expect_used, clippy::unwrap_used)]

use aido::{
    Arity, NodeType, OptionType, Registry, Status, Tick, TickOptions, Tree, Value, compile_str,
    read_value, run_tick, run_tick_with, run_tick_with_options,
};

/// A registry with test node types: `:t/running` (always Running), `:t/error`
/// (a node error), `:t/panic` (panics) and `:t/say {:text s}` (emits s to :said).
fn registry() -> Registry {
    let mut r = Registry::new();
    r.node_type(NodeType::new("t/running").tick(|_| Ok(Status::Running)))
        .unwrap();
    r.node_type(NodeType::new("t/error").tick(|_| Err("the sensor is offline".into())))
        .unwrap();
    r.node_type(NodeType::new("t/panic").tick(|_| panic!("boom")))
        .unwrap();
    r.node_type(
        NodeType::new("t/say")
            .required("text", OptionType::Str)
            .tick(|ctx| {
                let text = ctx.option("text")?.unwrap_or_default();
                let said = ctx
                    .db_mut()
                    .entry(Value::keyword("said"))
                    .or_insert(Value::Vector(vec![]));
                if let Value::Vector(v) = said {
                    v.push(text);
                }
                Ok(Status::Success)
            }),
    )
    .unwrap();
    r.node_type(
        NodeType::new("t/swallow")
            .children(Arity::Exactly(1))
            .tick(|ctx| {
                ctx.tick_child(0);
                Ok(Status::Success)
            }),
    )
    .unwrap();
    r.function("t/boom", Arity::Any, |_, _| panic!("function boom"))
        .unwrap();
    r
}

fn tree(src: &str) -> Tree {
    compile_str("t.edn", src, &registry()).unwrap_or_else(|d| panic!("{}", d.render()))
}

fn db(src: &str) -> Value {
    read_value(src).unwrap()
}

fn tick(src: &str, start: &str) -> Tick {
    run_tick(db(start), &tree(src))
}

/// Status and printed db of one tick.
/// Status and printed db of one tick. The running set (`:aido/running`,
/// covered in tests/long_running.rs) and the tree's fingerprint
/// (`:aido/tree`, covered in tests/trim.rs) are left out of the comparison.
fn check(src: &str, start: &str, status: Status, end: &str) {
    let mut t = tick(src, start);
    if let Some(db) = t.db.as_map_mut() {
        db.shift_remove(&Value::keyword("aido/running"));
        db.shift_remove(&Value::keyword("aido/tree"));
    }
    assert_eq!(
        (t.status, t.db.to_string()),
        (status, end.to_owned()),
        "tree {src}"
    );
}

#[test]
fn selector_stops_at_the_first_child_that_does_not_fail() {
    check(
        "[:selector [:failure] [:inc! {:key :a}] [:inc! {:key :b}]]",
        "{}",
        Status::Success,
        "{:a 1}",
    );
    check(
        "[:selector [:failure] [:failure]]",
        "{}",
        Status::Failure,
        "{}",
    );
    check(
        "[:selector [:failure] [:t/running] [:inc! {:key :b}]]",
        "{}",
        Status::Running,
        "{}",
    );
}

#[test]
fn sequence_stops_at_the_first_child_that_does_not_succeed() {
    check(
        "[:sequence [:inc! {:key :a}] [:failure] [:inc! {:key :b}]]",
        "{}",
        Status::Failure,
        "{:a 1}",
    );
    check(
        "[:sequence [:inc! {:key :a}] [:inc! {:key :b}]]",
        "{}",
        Status::Success,
        "{:a 1, :b 1}",
    );
    check(
        "[:sequence [:inc! {:key :a}] [:t/running] [:inc! {:key :b}]]",
        "{}",
        Status::Running,
        "{:a 1}",
    );
}

#[test]
fn error_goes_straight_to_the_root_and_keeps_the_db() {
    let t = tick(
        "[:selector [:sequence [:inc! {:key :a}] [:t/error]] [:inc! {:key :b}]]",
        "{:keep 1}",
    );
    assert_eq!(t.status, Status::Error);
    let err = t.error.clone().unwrap();
    assert_eq!(err.message, "the sensor is offline");
    assert_eq!(err.path, vec![0, 1]);
    assert_eq!(err.node, Value::string("0.0.1"));
    assert_eq!(err.location.map(|l| (l.line, l.column)), Some((1, 41)));
    // What the tree wrote before the error is kept; the error is recorded in the db.
    assert_eq!(
        t.db.to_string(),
        "{:keep 1, :a 1, :aido/error {:node \"0.0.1\", :type :t/error, :path [0 1], :line 1, :column 41, \
         :message \"the sensor is offline\"}}"
    );
    // No composite swallows it.
    for wrapper in [
        "[:invert X]",
        "[:always X]",
        "[:never X]",
        "[:loop-until-success {:count 3} X]",
        "[:parallel {:mode :success :how-many 1} [:success] X]",
        "[:t/swallow X]",
        "[:choose X]",
    ] {
        let src = wrapper.replace('X', "[:t/error]");
        assert_eq!(tick(&src, "{}").status, Status::Error, "{src}");
    }
}

#[test]
fn a_later_tick_clears_the_previous_error() {
    let t = tree("[:selector [:test? {:key :x :oper < :val 1}] [:success]]");
    let first = run_tick(db("{:x \"text\"}"), &t);
    assert_eq!(first.status, Status::Error);
    assert!(
        first
            .error
            .unwrap()
            .message
            .contains("cannot compare string")
    );
    let mut next = first.db;
    next.assoc_in(&[Value::keyword("x")], Value::Int(5))
        .unwrap();
    let second = run_tick(next, &t);
    assert_eq!(
        (second.status, second.db.to_string()),
        (Status::Success, "{:x 5}".to_owned())
    );
}

#[test]
fn panics_in_user_code_become_errors() {
    let t = tick("[:sequence [:inc! {:key :a}] [:t/panic]]", "{}");
    assert_eq!(t.status, Status::Error);
    assert_eq!(t.error.unwrap().message, "node panicked: boom");
    let t = tick("[:define! {:key :a :val [:aido/fn t/boom]}]", "{}");
    assert_eq!(t.status, Status::Error);
    assert_eq!(
        t.error.unwrap().message,
        "function `t/boom` panicked: function boom"
    );
}

#[test]
fn a_runaway_loop_ends_in_error_instead_of_hanging() {
    let t = tick(
        "[:loop {:count 9223372036854775807} [:inc! {:key :n}]]",
        "{}",
    );
    assert_eq!(t.status, Status::Error);
    assert!(t.error.unwrap().message.contains("step budget exceeded"));
    // The loop's work up to the budget is kept: one visit is the loop itself.
    assert_eq!(t.db.get(&Value::keyword("n")), Some(&Value::Int(999_999)));

    let options = TickOptions {
        step_budget: 10,
        ..TickOptions::default()
    };
    let t = run_tick_with_options(
        Value::map(),
        &tree("[:loop {:count 100} [:success]]"),
        &options,
    );
    assert_eq!((t.status, t.steps), (Status::Error, 11));
}

#[test]
fn loops() {
    check(
        "[:loop {:count 3} [:inc! {:key :n}]]",
        "{}",
        Status::Success,
        "{:n 3}",
    );
    check(
        "[:loop {:count 0} [:inc! {:key :n}]]",
        "{}",
        Status::Success,
        "{}",
    );
    check(
        "[:loop {:count 5} [:sequence [:inc! {:key :n}] [:less-than? {:key :n :val 2}]]]",
        "{}",
        Status::Failure,
        "{:n 2}",
    );
    check(
        "[:loop {:count 5} [:t/running]]",
        "{}",
        Status::Running,
        "{}",
    );
    check(
        "[:loop-until-success {:count 5} [:sequence [:inc! {:key :n}] [:greater-than? {:key :n :val 2}]]]",
        "{}",
        Status::Success,
        "{:n 3}",
    );
    check(
        "[:loop-until-success {:count 2} [:inc! {:key :n}]]",
        "{}",
        Status::Success,
        "{:n 1}",
    );
    check(
        "[:loop-until-success {:count 2} [:failure]]",
        "{}",
        Status::Failure,
        "{}",
    );
    check(
        "[:loop-until-success {:count 2} [:t/running]]",
        "{}",
        Status::Running,
        "{}",
    );
}

#[test]
fn parallel_ticks_every_child_and_counts() {
    let three = "[:inc! {:key :a}] [:failure] [:t/running]";
    // Running counts as succeeded: 2 succeeded, 1 failed.
    check(
        &format!("[:parallel {{:mode :success :how-many 2}} {three}]"),
        "{}",
        Status::Success,
        "{:a 1}",
    );
    check(
        &format!("[:parallel {{:mode :success :how-many 3}} {three}]"),
        "{}",
        Status::Failure,
        "{:a 1}",
    );
    check(
        &format!("[:parallel {{:mode :failure :how-many 1}} {three}]"),
        "{}",
        Status::Failure,
        "{:a 1}",
    );
    check(
        &format!("[:parallel {{:mode :failure :how-many 2}} {three}]"),
        "{}",
        Status::Success,
        "{:a 1}",
    );
}

#[test]
fn decorators() {
    check("[:invert [:success]]", "{}", Status::Failure, "{}");
    check("[:invert [:failure]]", "{}", Status::Success, "{}");
    check("[:invert [:t/running]]", "{}", Status::Running, "{}");
    check("[:always [:failure]]", "{}", Status::Success, "{}");
    check("[:always [:t/running]]", "{}", Status::Running, "{}");
    check(
        "[:never [:inc! {:key :n}]]",
        "{}",
        Status::Failure,
        "{:n 1}",
    );
    check("[:never [:t/running]]", "{}", Status::Running, "{}");
    check("[:success]", "{}", Status::Success, "{}");
    check("[:failure]", "{}", Status::Failure, "{}");
}

#[test]
fn data_conditions() {
    check(
        "[:present? {:key :a}]",
        "{:a nil}",
        Status::Success,
        "{:a nil}",
    );
    check(
        "[:present? {:key [:a :b]}]",
        "{:a {:b 1}}",
        Status::Success,
        "{:a {:b 1}}",
    );
    check(
        "[:present? {:key [:a :c]}]",
        "{:a {:b 1}}",
        Status::Failure,
        "{:a {:b 1}}",
    );
    check(
        "[:equal? {:v1 [:aido/db :a] :v2 [1 2]}]",
        "{:a (1 2)}",
        Status::Success,
        "{:a (1 2)}",
    );
    for (oper, val, status) in [
        ("=", "3", Status::Success),
        ("not=", "3", Status::Failure),
        ("<", "4", Status::Success),
        (">", "4", Status::Failure),
        ("<=", "3", Status::Success),
        (">=", "3.5", Status::Failure),
    ] {
        check(
            &format!("[:test? {{:key :n :oper {oper} :val {val}}}]"),
            "{:n 3}",
            status,
            "{:n 3}",
        );
    }
    // A missing key fails: the condition does not hold.
    check(
        "[:test? {:key :n :oper not= :val 3}]",
        "{}",
        Status::Failure,
        "{}",
    );
    check(
        "[:less-than? {:key :n :val 3}]",
        "{}",
        Status::Failure,
        "{}",
    );
    check(
        "[:greater-than? {:key :n :val 3}]",
        "{:n 3.5}",
        Status::Success,
        "{:n 3.5}",
    );
    // The wrong type is an Error.
    let t = tick("[:greater-than? {:key :n :val 3}]", "{:n :lots}");
    assert_eq!(t.status, Status::Error);
    assert_eq!(
        t.error.unwrap().message,
        "cannot compare keyword `:lots` > integer `3`: both must be numbers"
    );
}

#[test]
fn data_actions() {
    check(
        "[:define! {:key [:pos :x] :val 3}]",
        "{}",
        Status::Success,
        "{:pos {:x 3}}",
    );
    check("[:inc! {:key :n}]", "{:n 1.5}", Status::Success, "{:n 2.5}");
    check("[:counter! {:key :n}]", "{}", Status::Success, "{:n 1}");
    check(
        "[:dissoc! {:key :a}]",
        "{:a 1, :b 2}",
        Status::Success,
        "{:b 2}",
    );
    check(
        "[:dissoc! {:key [:a :x]}]",
        "{:a {:x 1 :y 2}}",
        Status::Success,
        "{:a {:y 2}}",
    );
    check(
        "[:sequence [:emit! {:key :out :val \"hi\"}] [:emit! {:key :out :val :bye}]]",
        "{}",
        Status::Success,
        "{:out [\"hi\" :bye]}",
    );
    let t = tick("[:inc! {:key :n}]", "{:n \"x\"}");
    assert_eq!(
        t.error.unwrap().message,
        "cannot increment :n: it holds string `\"x\"`"
    );
    let t = tick("[:emit! {:key :n :val 1}]", "{:n 4}");
    assert_eq!(
        t.error.unwrap().message,
        "cannot append to :n: it holds integer `4`"
    );
    let t = tick("[:define! {:key [:n :x] :val 1}]", "{:n 4}");
    assert_eq!(t.status, Status::Error);
    let t = tick("[:inc! {:key :n}]", "{:n 9223372036854775807}");
    assert_eq!(t.error.unwrap().message, "integer overflow incrementing :n");
}

#[test]
fn dynamic_options_are_resolved_each_tick_against_the_db_as_it_is_then() {
    // The earlier sibling's write is seen by the later sibling's [:aido/db].
    check(
        "[:sequence [:define! {:key :n :val 2}] [:loop {:count [:aido/db :n]} [:emit! {:key :out :val [:aido/db :n]}]]]",
        "{}",
        Status::Success,
        "{:n 2, :out [2 2]}",
    );
    // Functions, nested args and db reads inside function args.
    check(
        "[:define! {:key :sum :val [:aido/fn + 1 [:aido/db :a] [:aido/fn * 2 [:aido/db :b :c]]]}]",
        "{:a 10, :b {:c 3}}",
        Status::Success,
        "{:a 10, :b {:c 3}, :sum 17}",
    );
    check(
        "[:test? {:key :foo :val [:aido/fn :+ 5 6 2] :oper =}]",
        "{:foo 13}",
        Status::Success,
        "{:foo 13}",
    );
    // A dynamic value of the wrong type is an Error at tick time, not a panic.
    let t = tick(
        "[:loop {:count [:aido/db :n]} [:success]]",
        "{:n \"three\"}",
    );
    assert_eq!(t.status, Status::Error);
    assert_eq!(
        t.error.unwrap().message,
        "`:count` expected a non-negative integer, found string `\"three\"`"
    );
    let t = tick("[:define! {:key :x :val [:aido/fn / 1 0]}]", "{}");
    assert_eq!(t.error.unwrap().message, "function `/`: division by zero");
    // User option types are checked too when the value is dynamic.
    let t = tick("[:t/say {:text [:aido/db :name]}]", "{:name 7}");
    assert_eq!(
        t.error.unwrap().message,
        "option `:text` expected a string, found integer `7`"
    );
    check(
        "[:t/say {:text [:aido/db :name]}]",
        "{:name \"Ann\"}",
        Status::Success,
        "{:name \"Ann\", :said [\"Ann\"]}",
    );
}

#[test]
fn locals_are_visible_during_the_tick_only() {
    let t = run_tick_with(
        db("{}"),
        &tree("[:define! {:key :greeting :val [:aido/db :aido/locals :name]}]"),
        db("{:name \"Bo\"}"),
    );
    assert_eq!(t.db.to_string(), "{:greeting \"Bo\"}");
}

#[test]
fn randomly_with_certain_probabilities() {
    check(
        "[:randomly {:p 1.0} [:inc! {:key :a}] [:inc! {:key :b}]]",
        "{:aido/seed 1}",
        Status::Success,
        "{:aido/seed 1, :a 1, :aido/rng-pos 1}",
    );
    check(
        "[:randomly {:p 0} [:inc! {:key :a}] [:inc! {:key :b}]]",
        "{:aido/seed 1}",
        Status::Success,
        "{:aido/seed 1, :b 1, :aido/rng-pos 1}",
    );
    check(
        "[:randomly {:p 0} [:inc! {:key :a}]]",
        "{:aido/seed 1}",
        Status::Failure,
        "{:aido/seed 1, :aido/rng-pos 1}",
    );
    check(
        "[:selector-p {:p 0} [:inc! {:key :a}]]",
        "{:aido/seed 1}",
        Status::Failure,
        "{:aido/seed 1, :aido/rng-pos 1}",
    );
    check(
        "[:selector-p {:p 1} [:failure] [:inc! {:key :a}]]",
        "{:aido/seed 1}",
        Status::Success,
        "{:aido/seed 1, :a 1, :aido/rng-pos 2}",
    );
}

/// Runs `n` ticks from `start`, returning each tick's printed db.
fn run(src: &str, start: &str, n: usize) -> Vec<String> {
    let t = tree(src);
    let mut d = db(start);
    (0..n)
        .map(|_| {
            let tick = run_tick(d.clone(), &t);
            d = tick.db;
            format!("{} {}", tick.status, d)
        })
        .collect()
}

const RANDOM_TREE: &str = "[:selector-p {:p 0.5}
  [:choose [:inc! {:key :a}] [:inc! {:key :b}] [:inc! {:key :c}]]
  [:weighted-choice {:weights [1 0 3]} [:inc! {:key :x}] [:inc! {:key :never}] [:inc! {:key :z}]]
  [:define! {:key :r :val [:aido/fn rand-int 100]}]]";

#[test]
fn the_same_seed_gives_the_same_run_and_different_seeds_differ() {
    let a = run(RANDOM_TREE, "{:aido/seed 42}", 100);
    assert_eq!(a, run(RANDOM_TREE, "{:aido/seed 42}", 100));
    assert_ne!(a, run(RANDOM_TREE, "{:aido/seed 43}", 100));
    // A zero weight is never chosen.
    assert!(a.iter().all(|line| !line.contains(":never")));
    // Without a seed nothing about the generator is written into the db.
    let free = run("[:choose [:success] [:failure]]", "{}", 5);
    assert!(free.iter().all(|line| line.ends_with(" {}")));
}

#[test]
fn choose_each_ticks_every_child_once_per_round() {
    let src = "[:choose-each [:emit! {:key :seen :val 0}] [:emit! {:key :seen :val 1}] [:emit! {:key :seen :val 2}]]";
    let t = tree(src);
    let mut d = db("{:aido/seed 5}");
    for _ in 0..3 {
        let tick = run_tick(d, &t);
        assert_eq!(tick.status, Status::Success);
        d = tick.db;
    }
    let mut seen: Vec<i64> = d
        .get(&Value::keyword("seen"))
        .unwrap()
        .as_seq()
        .unwrap()
        .iter()
        .map(|v| v.as_int().unwrap())
        .collect();
    seen.sort();
    assert_eq!(seen, vec![0, 1, 2]);
    assert_eq!(
        d.get_in(&[Value::keyword("aido/memory"), Value::string("0")]),
        Some(&db("{:pool []}"))
    );
    // Without :repeat the exhausted node fails from then on.
    let tick = run_tick(d, &t);
    assert_eq!(tick.status, Status::Failure);

    // With :repeat, a finished round stores nothing (the default state) and refills.
    let src = "[:choose-each {:repeat true} [:inc! {:key :a}] [:inc! {:key :b}]]";
    let lines = run(src, "{:aido/seed 9}", 6);
    assert!(
        lines[1].contains(":a 1") && lines[1].contains(":b 1"),
        "{}",
        lines[1]
    );
    assert!(!lines[1].contains("aido/memory"));
    assert!(
        lines[5].contains(":a 3") && lines[5].contains(":b 3"),
        "{}",
        lines[5]
    );
}

#[test]
fn node_memory_is_checked_when_read() {
    let t = tick(
        "[:choose-each [:success] [:success]]",
        "{:aido/seed 1, :aido/memory {\"0\" {:pool [0 7]}}}",
    );
    assert_eq!(t.status, Status::Error);
    assert!(
        t.error
            .unwrap()
            .message
            .contains("is not a pool of child indices below 2")
    );
}

#[test]
fn a_bad_seed_is_an_error() {
    let t = tick("[:choose [:success] [:failure]]", "{:aido/seed \"x\"}");
    assert_eq!(t.status, Status::Error);
    assert_eq!(
        t.error.unwrap().message,
        "`:aido/seed` must be an integer, found \"x\""
    );
}

#[test]
fn node_ids_are_explicit_or_derived_from_the_position() {
    let t = tree(
        "[:selector {:id :main} [:choose-each [:success]] [:sequence [:choose-each {:id \"greet\"} [:success]]]]",
    );
    let ids: Vec<String> = t
        .iter()
        .map(|n| t.node_id(n).unwrap().to_string())
        .collect();
    assert_eq!(
        ids,
        vec![
            ":main",
            "\"main.0\"",
            "\"main.0.0\"",
            "\"main.1\"",
            "\"greet\"",
            "\"greet.0\""
        ]
    );
}

#[test]
fn the_db_must_be_a_map() {
    let t = run_tick(Value::Int(3), &tree("[:success]"));
    assert_eq!((t.status, t.db), (Status::Error, Value::Int(3)));
    assert_eq!(
        t.error.unwrap().message,
        "the db must be a map, found an integer"
    );
    // nil is the empty db.
    assert_eq!(
        run_tick(Value::Nil, &tree("[:inc! {:key :n}]"))
            .db
            .to_string(),
        "{:n 1}"
    );
}

#[test]
fn trees_are_shareable_between_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Tree>();
    let t = std::sync::Arc::new(tree("[:inc! {:key :n}]"));
    let handles: Vec<_> = (0..2)
        .map(|_| {
            let t = t.clone();
            std::thread::spawn(move || run_tick(Value::map(), &t).db.to_string())
        })
        .collect();
    for h in handles {
        assert_eq!(h.join().unwrap(), "{:n 1}");
    }
}
