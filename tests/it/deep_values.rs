//! Values built in Rust may nest without limit: dropping, cloning,
//! comparing, hashing, printing and converting them never overflow the
//! stack. Each test runs on a thread with a 1 MiB stack: recursion over a
//! hundred thousand levels would need about a hundred times that, so
//! passing proves that past the first few hundred levels (which a debug
//! build's comparison takes about 1 KiB each to recurse through) the work
//! goes on with an explicit stack.

#![allow(clippy::unwrap_used)]

use std::hash::{Hash, Hasher};

use aido::Value;
use aido::value::{FastHasher, JsonErrorKind, JsonMapping};

const DEPTH: usize = 100_000;
const STACK: usize = 1 << 20;

/// Runs `f` on a thread with a small stack and waits for it.
fn on_small_stack(f: impl FnOnce() + Send + 'static) {
    let thread = std::thread::Builder::new()
        .stack_size(STACK)
        .spawn(f)
        .unwrap();
    thread.join().unwrap();
}

/// `levels` collections around `innermost`, each of the next kind in
/// turn: vector, map value, list, tagged value; and every 1,000th level a
/// set or a map key (whose every insertion hashes the value, down to the
/// depth where hashing stops).
fn nested(levels: usize, innermost: Value) -> Value {
    let mut v = innermost;
    for i in (0..levels).rev() {
        v = match (i % 1000, i % 4) {
            (500, _) => Value::Set(Box::new([v].into_iter().collect())),
            (501, _) => Value::map_from([(v, Value::Nil)]),
            (_, 0) => Value::Vector(aido::value::thin_vec![v]),
            (_, 1) => Value::map_from([(Value::keyword("k"), v)]),
            (_, 2) => Value::List(aido::value::thin_vec![Value::Int(1), v]),
            _ => Value::Tagged(aido::value::Symbol::new("t"), Box::new(v)),
        };
    }
    v
}

fn hash(v: &Value) -> u64 {
    let mut h = FastHasher::default();
    v.hash(&mut h);
    h.finish()
}

#[test]
fn a_vector_a_hundred_thousand_deep_built_in_a_loop_drops() {
    on_small_stack(|| {
        let mut v = Value::Nil;
        for _ in 0..DEPTH {
            v = Value::Vector(aido::value::thin_vec![v]);
        }
        assert_eq!(v.depth_beyond(DEPTH - 1), Some(DEPTH));
        drop(v);
    });
}

#[test]
fn deep_values_of_every_kind_clone_compare_hash_and_drop() {
    on_small_stack(|| {
        let a = nested(DEPTH, Value::Int(1));
        let b = a.clone();
        assert_eq!(b.depth_beyond(DEPTH - 1), Some(DEPTH));
        assert!(a == b);
        assert_eq!(hash(&a), hash(&b));
        assert!(a.first_difference(&b).is_none());
        let c = nested(DEPTH, Value::Int(2));
        assert!(a != c);
        assert!(a.first_difference(&c).is_some());
        // Shallow copies of the same deep value in sets compare too.
        let set_a = Value::Set(Box::new([a.clone(), Value::Int(0)].into_iter().collect()));
        let set_b = Value::Set(Box::new([Value::Int(0), b].into_iter().collect()));
        assert!(set_a == set_b);
        drop((a, c, set_a, set_b));
    });
}

#[test]
fn deep_values_print_and_convert_to_json_with_a_limit() {
    on_small_stack(|| {
        let v = nested(DEPTH, Value::Int(1));
        let text = v.to_string();
        assert!(text.starts_with("[{:k ("));
        assert!(text.contains("#aido/too-deep nil"));
        assert!(text.len() < 10_000);
        let debug = format!("{v:?}");
        assert!(debug.starts_with("Vector([Map({Keyword("));
        assert!(debug.contains(".."));
        let error = v.to_json_with(JsonMapping::Plain).unwrap_err();
        assert_eq!(error.kind, JsonErrorKind::TooDeep);
        assert_eq!(v.to_json(), serde_json::Value::Null);
    });
}

#[test]
fn shallow_values_print_their_debug_form_as_derived() {
    let v = aido::read_value(r#"[nil true 1 2.5 "s" \c :k s (1) #{2} {:a 1} #t 3]"#).unwrap();
    assert_eq!(
        format!("{v:?}"),
        "Vector([Nil, Bool(true), Int(1), Float(2.5), Str(\"s\"), Char('c'), \
         Keyword(:k), Symbol(s), List([Int(1)]), Set({Int(2)}), \
         Map({Keyword(:a): Int(1)}), Tagged(t, Int(3))])"
    );
}
