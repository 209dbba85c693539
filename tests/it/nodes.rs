//! The behaviour of every node type, tick by tick, including how Running and
//! Error travel up the tree, where a case needs the API (user node types,
//! tick options, locals, comparing runs); the cases that need only a tree
//! and a db are data, in tests/data/tick/ (tests/it/tick.rs).
#![allow(clippy::panic, clippy::expect_used, clippy::unwrap_used)]

use aido::{
    Registry, Status, Tick, Tree, Value, compile_str,
    extend::{Arity, NodeType, OptionType},
    read_value, run_tick,
    tick::{TickOptions, run_tick_with, run_tick_with_options},
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

/// The built-in cases are data (tests/data/tick/); a user node type's
/// option type is checked too when the value is dynamic.
#[test]
fn user_option_types_are_checked_when_the_value_is_dynamic() {
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

#[test]
fn asking_for_an_option_the_node_type_does_not_declare_is_an_error() {
    let mut r = Registry::new();
    r.node_type(
        NodeType::new("t/scan")
            .required("range", OptionType::Int)
            .tick(|ctx| {
                // A typo: the node type declares `:range`.
                let range = ctx.option("rnage")?;
                Ok(Status::from_bool(range.is_some()))
            }),
    )
    .unwrap();
    r.node_type(
        NodeType::new("t/scan-right")
            .required("range", OptionType::Int)
            .tick(|ctx| Ok(Status::from_bool(ctx.option(":range")?.is_some()))),
    )
    .unwrap();
    let typo = compile_str("t.edn", "[:t/scan {:range 3}]", &r).unwrap();
    let tick = run_tick(Value::map(), &typo);
    assert_eq!(tick.status, Status::Error);
    let error = tick.error.unwrap();
    assert_eq!(error.node_type.as_str(), "t/scan");
    assert_eq!(
        error.message,
        "node type `:t/scan` declares no option `:rnage` (it declares `:range`)"
    );
    let right = compile_str("t.edn", "[:t/scan-right {:range 3}]", &r).unwrap();
    assert_eq!(run_tick(Value::map(), &right).status, Status::Success);
}
