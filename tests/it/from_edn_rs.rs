//! Converting edn-rs values into aido values (cargo feature `edn-rs`).
#![cfg(feature = "edn-rs")]
#![allow(clippy::panic, clippy::expect_used, clippy::unwrap_used)]

use std::str::FromStr;

use aido::{Value, read_value};
use edn_rs::Edn;

fn convert(text: &str) -> Result<Value, aido::read::EdnRsError> {
    Value::try_from(Edn::from_str(text).expect("edn-rs reads it"))
}

#[test]
fn edn_rs_values_convert_to_the_values_the_reader_gives() {
    for text in [
        "{:hunger 0, :action :eat, :name \"Ann\", :xs [1 2.5 nil true \\c], :s #{:a}}",
        "[:selector [:sequence [:present? {:key :foo}] [:define! {:key :baz :val 42}]]]",
        "(sym ns/sym)",
        "{\"str\" 1, 2 :two}",
        "#inst \"2020-01-01\"",
    ] {
        assert_eq!(convert(text).unwrap(), read_value(text).unwrap(), "{text}");
    }
}

#[test]
fn what_has_no_counterpart_is_an_error() {
    assert!(convert("1/2").unwrap_err().0.contains("ratio"));
    assert!(Value::try_from(Edn::UInt(u64::MAX)).is_err());
    assert!(Value::try_from(Edn::Empty).is_err());
}

#[test]
fn a_converted_tree_compiles_and_ticks() {
    let tree = convert("[:sequence [:inc! {:key :n}] [:define! {:key :done :val true}]]").unwrap();
    let tree = aido::compile(&tree, &aido::Registry::new()).unwrap();
    assert_eq!(
        aido::run_tick(Value::map(), &tree).db.to_string(),
        "{:n 1, :done true}"
    );
}
