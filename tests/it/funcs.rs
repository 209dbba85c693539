//! The standard functions, from the cases of `tests/data/funcs/cases.edn`:
//! each call is compiled and ticked with its arguments written as constants
//! and again with each one read from the db, so the compile step (types of
//! constants, regular expressions compiled once) and the tick-time checks
//! are both exercised, and must agree.
#![allow(clippy::panic, clippy::expect_used, clippy::unwrap_used)]

use std::collections::BTreeSet;

use aido::{Registry, Status, Value, compile, read_value, run_tick};

fn cases() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/funcs/cases.edn");
    read_value(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn section<'a>(cases: &'a Value, name: &str) -> &'a [Value] {
    cases.get(&Value::keyword(name)).unwrap().as_seq().unwrap()
}

/// `(f a b)` as its name and arguments.
fn split_call(call: &Value) -> (String, Vec<Value>) {
    let items = call.as_seq().unwrap();
    let Value::Symbol(name) = &items[0] else {
        panic!("{call}: a call starts with a symbol");
    };
    (name.as_str().to_owned(), items[1..].to_vec())
}

/// The tree that writes the call's result to `:out`, with constant
/// arguments or with each read from the db; and the db to tick it with.
fn tree_and_db(name: &str, args: &[Value], dynamic: bool) -> (Value, Value) {
    let mut call = vec![Value::keyword("aido/fn"), Value::symbol(name)];
    let mut db = Value::map();
    for (i, arg) in args.iter().enumerate() {
        if dynamic {
            let key = Value::keyword(&format!("a{i}"));
            call.push(Value::Vector(aido::value::thin_vec![
                Value::keyword("aido/db"),
                key.clone()
            ]));
            db.as_map_mut().unwrap().insert(key, arg.clone());
        } else {
            call.push(arg.clone());
        }
    }
    let options = Value::map_from([
        (Value::keyword("key"), Value::keyword("out")),
        (Value::keyword("val"), Value::Vector(call.into())),
    ]);
    (
        Value::Vector(aido::value::thin_vec![Value::keyword("define!"), options]),
        db,
    )
}

#[test]
fn every_call_gives_its_result_from_constants_and_from_the_db() {
    let cases = cases();
    let registry = Registry::new();
    for case in section(&cases, "ok") {
        let [call, expected] = case.as_seq().unwrap() else {
            panic!("{case}: an :ok case is [call result]");
        };
        let (name, args) = split_call(call);
        for dynamic in [false, true] {
            let (tree, db) = tree_and_db(&name, &args, dynamic);
            let tree = compile(&tree, &registry)
                .unwrap_or_else(|e| panic!("{call} (dynamic: {dynamic}): {}", e.render()));
            let tick = run_tick(db, &tree);
            assert_eq!(tick.status, Status::Success, "{call}: {:?}", tick.error);
            let out = tick
                .db
                .get(&Value::keyword("out"))
                .cloned()
                .unwrap_or_default();
            assert_eq!(
                out.to_string(),
                expected.to_string(),
                "{call} (dynamic: {dynamic})"
            );
        }
    }
}

#[test]
fn a_constant_of_the_wrong_type_is_a_compile_error_at_it_and_from_the_db_a_tick_error() {
    let cases = cases();
    let registry = Registry::new();
    for call in section(&cases, "bad-types") {
        let (name, args) = split_call(call);
        let (tree, _) = tree_and_db(&name, &args, false);
        let text = format!("{tree}");
        let diags = aido::compile_str("call.edn", &text, &registry)
            .err()
            .unwrap_or_else(|| panic!("{call}: compiled"));
        assert_eq!(diags.len(), 1, "{call}: {}", diags.render());
        let d = &diags.items[0];
        assert_eq!(d.code.as_str(), "E0012", "{call}: {}", diags.render());
        // Located at one of the arguments, not at the whole call.
        let span = d.span.unwrap();
        let at = &text[span.start as usize..span.end as usize];
        assert!(
            args.iter().any(|a| a.to_string() == at),
            "{call}: points at `{at}`"
        );

        let (tree, db) = tree_and_db(&name, &args, true);
        let tree = compile(&tree, &registry).unwrap();
        let tick = run_tick(db, &tree);
        assert_eq!(tick.status, Status::Error, "{call}");
        let error = tick.error.unwrap();
        assert!(
            error.message.starts_with(&format!("function `{name}`: ")),
            "{call}: {}",
            error.message
        );
        assert_eq!(error.node_type.as_str(), "define!");
    }
}

#[test]
fn a_well_typed_call_without_a_result_ends_the_tick_in_error_both_ways() {
    let cases = cases();
    let registry = Registry::new();
    for call in section(&cases, "errors") {
        let (name, args) = split_call(call);
        for dynamic in [false, true] {
            let (tree, db) = tree_and_db(&name, &args, dynamic);
            let tree =
                compile(&tree, &registry).unwrap_or_else(|e| panic!("{call}: {}", e.render()));
            let tick = run_tick(db, &tree);
            assert_eq!(tick.status, Status::Error, "{call} (dynamic: {dynamic})");
            // Nothing is lost: the db is as it stood.
            assert_eq!(tick.db.get(&Value::keyword("out")), None, "{call}");
        }
    }
}

#[test]
fn every_standard_function_has_good_and_bad_cases() {
    let cases = cases();
    let names = |section_name: &str| -> BTreeSet<String> {
        section(&cases, section_name)
            .iter()
            .map(|c| match c {
                Value::Vector(pair) => split_call(&pair[0]).0,
                Value::List(_) => split_call(c).0,
                Value::Symbol(s) => s.as_str().to_owned(),
                other => panic!("{other}"),
            })
            .collect()
    };
    let standard: BTreeSet<String> = Registry::new()
        .functions()
        .iter()
        .map(|f| f.name().as_str().to_owned())
        .collect();
    let ok = names("ok");
    let mut bad = names("bad-types");
    bad.extend(names("any-types"));
    assert_eq!(
        standard.difference(&ok).collect::<Vec<_>>(),
        [] as [&String; 0]
    );
    assert_eq!(
        standard.difference(&bad).collect::<Vec<_>>(),
        [] as [&String; 0]
    );
}
