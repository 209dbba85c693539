//! Behaviour that depends on process-wide state (the panic hook, the keyword
//! interner's bound), in a test binary of its own so that no other test
//! changes that state under it. The tests take one lock and run in turn.
#![allow(clippy::panic, clippy::expect_used, clippy::unwrap_used)]
#![cfg_attr(not(feature = "rayon"), allow(unused))]

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

#[cfg(feature = "rayon")]
use aido::batch::tick_all;
use aido::{
    Registry, Status, Value, compile_str,
    extend::NodeType,
    read::ReadErrorKind,
    read_value, run_tick,
    value::{JsonErrorKind, JsonMapping, interned_names, set_max_interned_names},
};

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
static HOOK_CALLS: AtomicUsize = AtomicUsize::new(0);

#[test]
#[cfg(feature = "rayon")]
fn caught_panics_in_user_code_do_not_reach_the_panic_hook() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    // The host's hook, installed before the library first catches a panic.
    std::panic::set_hook(Box::new(|_| {
        HOOK_CALLS.fetch_add(1, Ordering::SeqCst);
    }));
    let mut registry = Registry::new();
    registry
        .node_type(NodeType::new("t/flaky").tick(|ctx| {
            if ctx.db().contains_key(&Value::keyword("boom")) {
                panic!("the sensor exploded");
            }
            Ok(Status::Success)
        }))
        .unwrap();
    let tree = compile_str("t.edn", "[:t/flaky]", &registry).unwrap();
    let mut dbs: Vec<Value> = (0..1_000)
        .map(|i| {
            if i % 7 == 0 {
                read_value("{:boom true}").unwrap()
            } else {
                Value::map()
            }
        })
        .collect();
    let statuses = tick_all(&tree, &mut dbs);
    assert_eq!(
        statuses
            .iter()
            .filter(|s| s.status == Status::Error)
            .count(),
        143
    );
    assert_eq!(HOOK_CALLS.load(Ordering::SeqCst), 0);
    // A panic outside user code still reaches the host's hook.
    let _ = std::panic::catch_unwind(|| panic!("a bug of the host"));
    assert_eq!(HOOK_CALLS.load(Ordering::SeqCst), 1);
    let _ = std::panic::take_hook();
}

#[test]
fn reading_stops_adding_names_past_the_bound() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let known = read_value("[:known/a :known/b sym]").unwrap();
    set_max_interned_names(interned_names());
    // Names already known still read; a stream of new ones does not.
    assert_eq!(read_value("[:known/a :known/b sym]").unwrap(), known);
    let err = read_value("[:fresh/name-1]").unwrap_err();
    assert_eq!(err.kind, ReadErrorKind::TooManyNames);
    let err = Value::from_json_text("{\"fresh-json-key\": 1}", JsonMapping::Plain).unwrap_err();
    assert_eq!(err.kind, JsonErrorKind::TooManyNames);
    let before = interned_names();
    for i in 0..100 {
        let _ = read_value(&format!(":stream/k{i}"));
    }
    // A refused read adds nothing: the table stays at its bound.
    assert_eq!(interned_names(), before);
    set_max_interned_names(aido::value::DEFAULT_MAX_INTERNED_NAMES);
    assert!(read_value("[:fresh/name-2]").is_ok());
    let tree = compile_str("t.edn", "[:inc! {:key :n}]", &Registry::new()).unwrap();
    assert_eq!(run_tick(Value::map(), &tree).status, Status::Success);
}
