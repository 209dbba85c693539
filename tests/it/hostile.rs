//! The library against hostile trees, dbs and values: every case used to
//! crash the process, hang a tick, or give a wrong result. The tick cases are
//! data (`tests/data/hostile/ticks.edn`); the rest need Rust to build them.
#![allow(clippy::panic, clippy::expect_used, clippy::unwrap_used)]

use crate::common;

use std::time::Instant;

use aido::{
    Registry, Status, Value, compile, compile_str,
    diag::Code,
    extend::NodeType,
    read::MAX_DEPTH,
    read_value, run_tick,
    tick::{TickErrorKind, TickOptions, run_tick_with_options},
    tree::MAX_KEY_PATH,
    value::{JsonErrorKind, JsonMapping},
};

fn key(m: &Value, k: &str) -> Value {
    m.get(&Value::keyword(k)).cloned().unwrap_or_default()
}

#[test]
fn hostile_ticks_end_as_the_data_says() {
    let path = common::data_dir().join("hostile/ticks.edn");
    let cases = read_value(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let registry = Registry::new();
    for case in cases.as_seq().unwrap() {
        let name = key(case, "name");
        let tree = compile(key(case, "tree"), &registry)
            .unwrap_or_else(|d| panic!("{name}: {}", d.render()));
        let started = Instant::now();
        let tick = run_tick(key(case, "db"), &tree);
        let took = started.elapsed();
        assert!(took.as_secs() < 20, "{name}: the tick took {took:?}");
        assert_eq!(
            tick.status.to_value(),
            key(case, "status"),
            "{name}: {:?}",
            tick.error
        );
        if let Some(code) = key(case, "code").as_str() {
            let error = tick.error.as_ref().unwrap();
            assert_eq!(error.kind.code(), code, "{name}: {}", error.message);
            if error.kind != TickErrorKind::Other {
                assert_eq!(
                    key(&key(&tick.db, "aido/error"), "code"),
                    Value::string(code),
                    "{name}"
                );
            }
        }
        let expected = key(case, "db-after");
        if !expected.is_nil() {
            assert_eq!(common::without_aido_keys(&tick.db), expected, "{name}");
        }
    }
}

#[test]
fn copying_a_big_vector_on_every_visit_is_bounded_work() {
    let big = Value::Vector((0..100_000).map(Value::Int).collect());
    let db = Value::map_from([(Value::keyword("big"), big)]);
    let registry = Registry::new();
    for src in [
        "[:loop {:count 100000} [:define! {:key :copy :val [:aido/db :big]}]]",
        "[:loop {:count 100000} [:equal? {:v1 [:aido/db :big] :v2 [:aido/db :big]}]]",
        "[:loop {:count 100000} [:test? {:key :big :oper not= :val [1]}]]",
        "[:loop {:count 100000} [:define! {:key :n :val [:aido/fn = [:aido/db :big] 1]}]]",
    ] {
        let tree = compile_str("t.edn", src, &registry).unwrap();
        let started = Instant::now();
        let tick = run_tick(db.clone(), &tree);
        assert_eq!(tick.status, Status::Error, "{src}");
        assert_eq!(tick.error.unwrap().kind, TickErrorKind::WorkBudget, "{src}");
        assert!(
            started.elapsed().as_secs() < 10,
            "{src}: {:?}",
            started.elapsed()
        );
    }
    // The budget is an option: a larger one lets the same tick through.
    let tree = compile_str(
        "t.edn",
        "[:loop {:count 30} [:define! {:key :copy :val [:aido/db :big]}]]",
        &registry,
    )
    .unwrap();
    let options = TickOptions {
        work_budget: 10_000_000,
        ..TickOptions::default()
    };
    assert_eq!(
        run_tick_with_options(db.clone(), &tree, &options).status,
        Status::Success
    );
    assert_eq!(run_tick(db, &tree).status, Status::Error);
}

#[test]
fn a_key_path_of_100000_keys_is_a_compile_error_not_a_stack_overflow() {
    let keys: Vec<Value> = (0..100_000)
        .map(|i| Value::keyword(&format!("k{}", i % 7)))
        .collect();
    let node = |head: &str, key: Value| {
        Value::Vector(aido::value::thin_vec![
            Value::keyword(head),
            Value::map_from([
                (Value::keyword("key"), key),
                (Value::keyword("val"), Value::Int(1)),
            ]),
        ])
    };
    let registry = Registry::new();
    let diags = compile(
        node("define!", Value::Vector(keys.as_slice().into())),
        &registry,
    )
    .unwrap_err();
    assert_eq!(diags.items[0].code, Code::BadOptionValue);
    // As text too: the reader reads it (it is flat), the compiler refuses it.
    let text = format!(
        "[:define! {{:key [{}] :val 1}}]",
        keys.iter()
            .map(|k| k.to_string())
            .collect::<Vec<_>>()
            .join(" ")
    );
    let diags = compile_str("t.edn", &text, &registry).unwrap_err();
    assert_eq!(diags.items[0].code, Code::BadOptionValue);
    let mut db_path = vec![Value::keyword("aido/db")];
    db_path.extend(keys);
    let diags = compile(node("define!", Value::keyword("x")), &registry).map(|_| ());
    assert!(diags.is_ok());
    let tree = Value::Vector(aido::value::thin_vec![
        Value::keyword("define!"),
        Value::map_from([
            (Value::keyword("key"), Value::keyword("x")),
            (Value::keyword("val"), Value::Vector(db_path.into())),
        ]),
    ]);
    assert_eq!(
        compile(&tree, &registry).unwrap_err().items[0].code,
        Code::BadDynamic
    );
    // The longest path allowed works, and the db it builds reads back.
    let longest: Vec<Value> = (0..MAX_KEY_PATH).map(|_| Value::keyword("k")).collect();
    let tree = compile(node("define!", Value::Vector(longest.into())), &registry).unwrap();
    let tick = run_tick(Value::map(), &tree);
    assert_eq!(tick.status, Status::Success);
    assert_eq!(read_value(&tick.db.to_string()).unwrap(), tick.db);
}

/// Runs `f` on a thread with a 1 MiB stack: a value nested 100,000 deep is
/// built in a loop, and dropping it does not recurse either.
fn with_small_stack(f: impl FnOnce() + Send + 'static) {
    std::thread::Builder::new()
        .stack_size(1 << 20)
        .spawn(f)
        .unwrap()
        .join()
        .unwrap();
}

#[test]
fn compiling_data_built_in_rust_has_a_depth_limit() {
    with_small_stack(|| {
        let mut option = Value::Int(0);
        for _ in 0..100_000 {
            option = Value::Vector(aido::value::thin_vec![
                Value::keyword("aido/fn"),
                Value::symbol("inc"),
                option,
            ]);
        }
        let tree = Value::Vector(aido::value::thin_vec![
            Value::keyword("define!"),
            Value::map_from([
                (Value::keyword("key"), Value::keyword("x")),
                (Value::keyword("val"), option),
            ]),
        ]);
        let diags = compile(&tree, &Registry::new()).unwrap_err();
        assert_eq!(diags.items[0].code, Code::TooDeep);
        // Nor does printing or converting it overflow: both refuse or bound it.
        assert!(tree.depth_beyond(MAX_DEPTH).is_some());
        let text = tree.to_string();
        assert!(text.contains("#aido/too-deep nil"), "{}", &text[..100]);
        assert!(text.len() < 20 * 1024, "{} bytes", text.len());
        assert_eq!(tree.to_json(), serde_json::Value::Null);
        assert_eq!(
            tree.to_json_with(JsonMapping::Plain).unwrap_err().kind,
            JsonErrorKind::TooDeep
        );
    });
}

#[test]
fn weights_whose_sum_overflows_still_pick_by_proportion() {
    let tree = compile_str(
        "t.edn",
        "[:weighted-choice {:weights [1e308 1e308]} [:define! {:key :pick :val 0}] [:define! {:key :pick :val 1}]]",
        &Registry::new(),
    )
    .unwrap();
    let mut picks = [0; 2];
    for seed in 0..200 {
        let db = Value::map_from([(Value::keyword("aido/seed"), Value::Int(seed))]);
        let tick = run_tick(db, &tree);
        assert_eq!(tick.status, Status::Success);
        picks[key(&tick.db, "pick").as_int().unwrap() as usize] += 1;
    }
    assert!(picks[0] > 60 && picks[1] > 60, "{picks:?}");
}

#[test]
fn tick_child_checks_the_index_a_user_node_passes() {
    let mut registry = Registry::new();
    let mut pick = NodeType::new("t/pick").children(aido::extend::Arity::Exactly(1));
    let i = pick.slot::<i64>("i");
    registry
        .node_type(pick.tick(move |ctx| {
            let i = ctx.get(i)?;
            // A negative option cast to an index wraps to a huge one.
            Ok(ctx.tick_child(i as usize))
        }))
        .unwrap();
    let tree = compile_str(
        "t.edn",
        "[:sequence [:t/pick {:i -1} [:success]] [:define! {:key :sibling :val true}]]",
        &registry,
    )
    .unwrap();
    let tick = run_tick(Value::map(), &tree);
    assert_eq!(tick.status, Status::Error);
    assert_eq!(key(&tick.db, "sibling"), Value::Nil);
    let tree = compile_str(
        "t.edn",
        "[:t/pick {:i 0} [:define! {:key :child :val true}]]",
        &registry,
    )
    .unwrap();
    assert_eq!(run_tick(Value::map(), &tree).status, Status::Success);
}

/// A tree whose `:r` runs for ever (counting its halts), and the db changes
/// that steer it: `:skip` passes it by, `:boom` fails the tick beside it,
/// `:zero` fails the tick after it.
const STEERED: &str = "[:sequence
  [:selector [:present? {:key :skip}]
             [:parallel {:policy :sequence}
               [:t/run {:id :r}]
               [:selector [:sequence [:present? {:key :boom}] [:define! {:key :x :val [:aido/fn / 1 0]}]]
                          [:success]]]]
  [:sequence [:present? {:key :zero}] [:define! {:key :y :val [:aido/fn / 1 [:aido/db :zero]]}]]]";

fn steered() -> (aido::Tree, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let halts = std::sync::Arc::new(AtomicUsize::new(0));
    let counted = halts.clone();
    let mut registry = Registry::new();
    registry
        .node_type(
            NodeType::new("t/run")
                .tick(|_| Ok(Status::Running))
                .on_halt(move |_| {
                    counted.fetch_add(1, Ordering::SeqCst);
                }),
        )
        .unwrap();
    (compile_str("t.edn", STEERED, &registry).unwrap(), halts)
}

fn with(db: Value, set: &str, remove: &[&str]) -> Value {
    let mut db = db;
    let map = db.as_map_mut().unwrap();
    for k in remove {
        map.shift_remove(&Value::keyword(k));
    }
    for (k, v) in read_value(set).unwrap().as_map().unwrap() {
        map.insert(k.clone(), v.clone());
    }
    db
}

#[test]
fn a_node_that_starts_running_in_an_error_tick_is_halted_later() {
    use std::sync::atomic::Ordering;
    let (tree, halts) = steered();
    let tick = run_tick(read_value("{:boom true}").unwrap(), &tree);
    assert_eq!(tick.status, Status::Error);
    assert!(
        key(&tick.db, "aido/running")
            .as_seq()
            .unwrap()
            .contains(&Value::keyword("r")),
        "{}",
        tick.db
    );
    let tick = run_tick(with(tick.db, "{:skip true}", &["boom"]), &tree);
    assert_eq!(tick.status, Status::Failure, "{:?}", tick.error);
    assert_eq!(halts.load(Ordering::SeqCst), 1);
    assert_eq!(key(&tick.db, "aido/running"), Value::Nil);
}

#[test]
fn a_node_halted_in_an_error_tick_is_not_halted_again() {
    use std::sync::atomic::Ordering;
    let (tree, halts) = steered();
    let tick = run_tick(Value::map(), &tree);
    assert_eq!(tick.status, Status::Running);
    let tick = run_tick(with(tick.db, "{:skip true, :zero 0}", &[]), &tree);
    assert_eq!(tick.status, Status::Error);
    assert_eq!(halts.load(Ordering::SeqCst), 1);
    let tick = run_tick(with(tick.db, "{}", &["zero"]), &tree);
    assert_eq!(tick.status, Status::Failure, "{:?}", tick.error);
    assert_eq!(halts.load(Ordering::SeqCst), 1, "halted once, not twice");
}

#[test]
fn a_defer_launched_in_an_error_tick_is_cancelled_when_passed_by() {
    let tree = compile_str(
        "t.edn",
        "[:selector
           [:sequence [:present? {:key :go}] [:parallel {:policy :sequence}
              [:defer {:id :ask :action :llm/ask}]
              [:define! {:key :x :val [:aido/fn / 1 [:aido/db :zero]]}]]]
           [:success]]",
        &Registry::new(),
    )
    .unwrap();
    let tick = run_tick(read_value("{:go true, :zero 0}").unwrap(), &tree);
    assert_eq!(tick.status, Status::Error);
    assert_eq!(tick.launches().len(), 1);
    assert_eq!(key(&tick.db, "aido/running"), read_value("[:ask]").unwrap());
    // The next tick passes it by: it is halted, and its launch cancelled.
    let mut db = tick.db;
    db.as_map_mut().unwrap().shift_remove(&Value::keyword("go"));
    let tick = run_tick(db, &tree);
    assert_eq!(tick.status, Status::Success);
    assert_eq!(tick.cancels().len(), 1);
    assert_eq!(key(&tick.db, "aido/memory"), Value::Nil);
    assert_eq!(key(&tick.db, "aido/running"), Value::Nil);
}

#[test]
fn a_completion_that_cannot_be_stored_is_kept() {
    let tree = compile_str(
        "t.edn",
        "[:defer {:id :ask :action :llm/ask :into [:reply :text]}]",
        &Registry::new(),
    )
    .unwrap();
    let tick = run_tick(Value::map(), &tree);
    assert_eq!(tick.status, Status::Running);
    let request = tick.launches()[0].request;
    // The completion arrives while `:reply` holds a number: `[:reply :text]`
    // cannot be written.
    let mut db = tick.db;
    let map = db.as_map_mut().unwrap();
    map.insert(Value::keyword("reply"), Value::Int(3));
    map.insert(
        Value::keyword("aido/results"),
        read_value(&format!(
            "{{:ask {{:request {request} :status :success :result \"hi\"}}}}"
        ))
        .unwrap(),
    );
    let tick = run_tick(db, &tree);
    assert_eq!(tick.status, Status::Error);
    assert!(
        !key(&tick.db, "aido/results").is_nil(),
        "the completion is kept: {}",
        tick.db
    );
    assert!(
        !key(&tick.db, "aido/memory").is_nil(),
        "the node still waits: {}",
        tick.db
    );
    // Once the host fixes the db, the completion is used, not launched again.
    let mut db = tick.db;
    db.as_map_mut()
        .unwrap()
        .shift_remove(&Value::keyword("reply"));
    let tick = run_tick(db, &tree);
    assert_eq!(tick.status, Status::Success);
    assert!(tick.launches().is_empty());
    assert_eq!(key(&key(&tick.db, "reply"), "text"), Value::string("hi"));
}

#[test]
fn json_refuses_what_it_cannot_hold_and_the_tagged_mapping_keeps_everything() {
    let db = read_value(r#"{:x ##NaN}"#).unwrap();
    let err = db.to_json_with(JsonMapping::Plain).unwrap_err();
    assert_eq!(err.kind, JsonErrorKind::NotFinite);
    assert_eq!(err.path.as_deref(), Some("[:x]"));
    let err =
        Value::from_json_text("{\"a\": 18446744073709551616}", JsonMapping::Plain).unwrap_err();
    assert_eq!(
        err.kind,
        JsonErrorKind::BigInteger("18446744073709551616".to_owned())
    );
    assert_eq!(err.location, Some((1, 7)));
    let err = Value::from_json_text("\u{feff}{}", JsonMapping::Plain).unwrap_err();
    assert_eq!(err.kind, JsonErrorKind::ByteOrderMark);
    // Floats in exponent form and negative numbers are not big integers.
    assert!(
        Value::from_json_text(
            "[1e300, -5, 2.5, \"99999999999999999999\"]",
            JsonMapping::Plain
        )
        .is_ok()
    );

    let tricky = read_value(
        r#"{:s ":hello", "a" 1, :a 2, 7 [1 (2 3) #{4}], :f [##NaN ##Inf ##-Inf -0.0], :c \x,
           :sym foo, :t #inst "2020", :k {[1] 2}, :e {}, :one {:#kw 1}}"#,
    );
    let tricky = match tricky {
        Ok(v) => v,
        // `:#kw` is not a keyword the reader takes; build it in Rust.
        Err(_) => read_value(
            r#"{:s ":hello", "a" 1, :a 2, 7 [1 (2 3) #{4}], :f [##NaN ##Inf ##-Inf -0.0], :c \x,
               :sym foo, :t #inst "2020", :k {[1] 2}, :e {}}"#,
        )
        .unwrap(),
    };
    let text = tricky
        .to_json_with(JsonMapping::Tagged)
        .unwrap()
        .to_string();
    let back = Value::from_json_text(&text, JsonMapping::Tagged).unwrap();
    assert_eq!(back, tricky);
    assert!(tricky.first_difference(&back).is_none());
}

#[test]
fn dbs_with_colliding_keys_load_in_linear_time() {
    // 20,000 keys that share their first bytes and differ only at the end;
    // whatever the keys, interning and the db map use keyed hashes.
    let mut text = String::from("{");
    for i in 0..20_000u32 {
        text.push_str(&format!("\"collide-{:0>40}\": {i},", i.reverse_bits()));
    }
    text.pop();
    text.push('}');
    let started = Instant::now();
    let db = Value::from_json_text(&text, JsonMapping::Plain).unwrap();
    assert_eq!(db.as_map().unwrap().len(), 20_000);
    assert!(started.elapsed().as_secs() < 5, "{:?}", started.elapsed());
    // Integer keys chosen to collide in the multiply-rotate hasher (they
    // differ only in their top bits) no longer do.
    let mut map = aido::value::Map::default();
    let started = Instant::now();
    for i in 0..20_000i64 {
        map.insert(Value::Int(i << 44), Value::Nil);
    }
    assert_eq!(map.len(), 20_000);
    assert!(started.elapsed().as_secs() < 5, "{:?}", started.elapsed());
}

#[test]
#[cfg(feature = "rayon")]
fn tick_all_takes_trees_as_deep_as_the_reader_reads() {
    // Sequences nested to the reader's limit, ending in a counter, ticked on
    // the batch's worker threads (a debug build needs the most stack).
    let depth = MAX_DEPTH - 2;
    let text = format!(
        "{}[:inc! {{:key :n}}]{}",
        "[:sequence ".repeat(depth),
        "]".repeat(depth)
    );
    let tree = compile_str("deep.edn", &text, &Registry::new()).unwrap();
    let mut dbs = vec![Value::map(); 8];
    let statuses = aido::batch::tick_all(&tree, &mut dbs);
    assert!(statuses.iter().all(|s| s.status == Status::Success));
    assert_eq!(key(&dbs[7], "n"), Value::Int(1));
    // On the general path, which needs more stack (traced, as the
    // timeline's ticks are).
    let options = TickOptions {
        trace: true,
        ..TickOptions::default()
    };
    std::thread::Builder::new()
        .stack_size(64 << 20)
        .spawn(move || {
            assert_eq!(
                aido::tick::run_tick_general_path(Value::map(), &tree, &options).status,
                Status::Success
            )
        })
        .unwrap()
        .join()
        .unwrap();
}

#[test]
fn deep_values_built_in_rust_compare_hash_and_print_on_a_small_stack() {
    with_small_stack(|| {
        let deep = |leaf: i64| {
            let mut v = Value::Int(leaf);
            for i in 0..100_000 {
                v = if i % 3 == 0 {
                    Value::map_from([(Value::keyword("k"), v)])
                } else {
                    Value::Vector(aido::value::thin_vec![v])
                };
            }
            v
        };
        let (a, b, c) = (deep(1), deep(1), deep(2));
        std::thread::scope(|scope| {
            std::thread::Builder::new()
                .stack_size(1 << 20)
                .spawn_scoped(scope, || {
                    use std::hash::BuildHasher;
                    assert!(a == b);
                    assert!(a != c);
                    let hash = |v: &Value| aido::value::FastBuildHasher::default().hash_one(v);
                    assert_eq!(hash(&a), hash(&b));
                    assert!(a.to_string().len() < 20 * 1024);
                })
                .unwrap()
                .join()
                .unwrap();
        });
    });
}

#[test]
fn an_error_tick_records_its_tree_so_a_renamed_id_is_carried_over() {
    let registry = Registry::new();
    let old = compile_str(
        "t.edn",
        "[:parallel {:policy :sequence} [:wait {:id :walk :ticks 3}] [:define! {:key :x :val [:aido/fn / 1 [:aido/db :zero]]}]]",
        &registry,
    )
    .unwrap();
    let new = compile_str(
        "t.edn",
        "[:parallel {:policy :sequence} [:wait {:id :stroll :ticks 3}] [:define! {:key :x :val [:aido/fn / 1 [:aido/db :zero]]}]]",
        &registry,
    )
    .unwrap();
    let tick = run_tick(read_value("{:zero 0}").unwrap(), &old);
    assert_eq!(tick.status, Status::Error);
    assert!(
        key(&tick.db, "aido/running").as_seq().is_some(),
        "{}",
        tick.db
    );
    assert_eq!(key(&tick.db, "aido/tree"), Value::Int(old.fingerprint()));
    // The save goes on with the new tree: carried over, not an Error for ever.
    let db = with(tick.db, "{:zero 1}", &[]);
    let tick = run_tick(db, &new);
    assert_eq!(tick.status, Status::Running, "{:?}", tick.error);
    assert!(tick.migration().is_some());
    assert_eq!(run_tick(tick.db, &new).status, Status::Running);
}

#[test]
fn a_user_node_type_cannot_leave_a_value_deeper_than_the_reader_reads() {
    let mut registry = Registry::new();
    registry
        .node_type(NodeType::new("t/nest").tick(|ctx| {
            let mut v = Value::Int(0);
            for _ in 0..MAX_DEPTH {
                v = Value::Vector(aido::value::thin_vec![v]);
            }
            ctx.db_mut().insert(Value::keyword("deep"), v);
            Ok(Status::Success)
        }))
        .unwrap();
    registry
        .node_type(NodeType::new("t/deep-memory").tick(|ctx| {
            let mut v = Value::Int(0);
            for _ in 0..MAX_DEPTH {
                v = Value::Vector(aido::value::thin_vec![v]);
            }
            ctx.set_memory(Some(v))?;
            Ok(Status::Success)
        }))
        .unwrap();
    registry
        .node_type(NodeType::new("t/shallow").tick(|ctx| {
            let mut v = Value::Int(0);
            // The db map holds it: one level less than the limit fits.
            for _ in 0..MAX_DEPTH - 1 {
                v = Value::Vector(aido::value::thin_vec![v]);
            }
            ctx.db_mut().insert(Value::keyword("deep"), v);
            Ok(Status::Success)
        }))
        .unwrap();
    for (tree, status) in [
        ("[:t/nest]", Status::Error),
        ("[:t/deep-memory]", Status::Error),
        ("[:t/shallow]", Status::Success),
    ] {
        let tree = compile_str("t.edn", tree, &registry).unwrap();
        let tick = run_tick(Value::map(), &tree);
        assert_eq!(tick.status, status, "{tree:?}");
        if status == Status::Success {
            // What the tick left reads back.
            assert_eq!(read_value(&tick.db.to_string()).unwrap(), tick.db);
        }
    }
    let tree = compile_str("t.edn", "[:t/nest]", &registry).unwrap();
    let tick = run_tick(Value::map(), &tree);
    assert_eq!(tick.error.map(|e| e.kind), Some(TickErrorKind::TooDeep));
}

#[cfg(target_os = "linux")]
#[test]
fn compile_file_reads_with_the_input_limit() {
    // /dev/zero never ends: it is refused at the limit, not read until memory runs out.
    match aido::compile_file("/dev/zero", &Registry::new()) {
        Err(aido::compile::CompileFileError::Io { error, .. }) => {
            assert_eq!(error.kind(), std::io::ErrorKind::FileTooLarge, "{error}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn agents_whose_keys_sit_at_different_places_never_write_each_others_keys() {
    // One tree ticked on two threads at once, each over a db whose key
    // `:a` sits at another position: the key's position hint, shared by
    // both, flips on every tick. A write must land where the db holds
    // `:a` now, never at the position another agent's tick just left in
    // the hint (once a string written over `:x`). A string is written
    // through the key's slot on every tick, as every write that is not a
    // scalar over a scalar is.
    let tree = compile_str("t.edn", "[:define! {:key :a :val \"a\"}]", &Registry::new()).unwrap();
    let layouts = ["{:a 0 :x 0}", "{:x 0 :a 0}"];
    std::thread::scope(|scope| {
        for layout in layouts {
            let tree = &tree;
            scope.spawn(move || {
                let mut db = read_value(layout).unwrap();
                for n in 0..500_000 {
                    let tick = aido::tick::tick_in_place(&mut db, tree);
                    assert_eq!(tick.status, Status::Success);
                    assert_eq!(key(&db, "x"), Value::Int(0), "{layout}, tick {n}: {db}");
                    assert_eq!(key(&db, "a"), Value::from("a"), "{layout}, tick {n}");
                }
            });
        }
    });
}

#[test]
fn a_halt_hook_whose_random_draw_fails_ends_the_tick_in_error_at_its_node() {
    // The draw's error is the hook's own: the tick ends in Error at the
    // halted node, and no later node (a random decider here) takes it as
    // its own or loses it.
    let mut registry = Registry::new();
    registry
        .node_type(
            NodeType::new("t/draw")
                .tick(|_| Ok(Status::Running))
                .on_halt(|ctx| {
                    let x = ctx.random();
                    ctx.db_mut()
                        .insert(Value::keyword("drawn"), Value::Float(x));
                }),
        )
        .unwrap();
    let tree = compile_str(
        "t.edn",
        "[:selector [:sequence [:present? {:key :go}] [:t/draw {:id :d}]] [:success]]",
        &registry,
    )
    .unwrap();
    let tick = run_tick(read_value("{:go true}").unwrap(), &tree);
    assert_eq!(tick.status, Status::Running);
    let exhausted = format!("{{:aido/seed 1, :aido/rng-pos {}}}", i64::MAX);
    let tick = run_tick(with(tick.db, &exhausted, &["go"]), &tree);
    assert_eq!(tick.status, Status::Error, "{}", tick.db);
    let error = tick.error.expect("the tick's error");
    assert_eq!(error.kind, TickErrorKind::RandomExhausted, "{error:?}");
    assert_eq!(error.node, Value::keyword("d"), "{error:?}");
}
