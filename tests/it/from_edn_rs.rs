//! Converting between edn-rs values and aido values, both ways (cargo
//! feature `edn-rs`).
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

#[test]
fn values_convert_to_edn_rs_and_back_losing_only_the_order_of_maps_and_sets() {
    for text in [
        "{:hunger 0, :action :eat, :name \"Ann\", :xs [1 2.5 nil true \\c], :s #{:a :b}}",
        "[:selector [:sequence [:present? {:key :foo}] [:define! {:key :baz :val 42}]]]",
        "(sym ns/sym :ns/kw)",
        "{\"str\" 1, 2 :two, [1 2] #{3}, nil false}",
        "#inst \"2020-01-01\"",
        "[-9223372036854775808 9223372036854775807 1.0E300 -0.5 \\newline \"a\\nb\"]",
    ] {
        let value = read_value(text).unwrap();
        let edn = Edn::try_from(&value).unwrap();
        // Back into a value: equal (maps and sets compare regardless of order).
        let back = Value::try_from(edn.clone()).unwrap();
        assert_eq!(back, value, "{text}");
        // Lists stay lists, vectors vectors.
        assert_eq!(
            back.to_string().starts_with('('),
            value.to_string().starts_with('(')
        );
        // edn-rs's own text of it reads back equal with this crate's reader,
        // except a large float, which edn-rs prints as an integer (its
        // printer's loss, not the conversion's).
        if !text.contains("E300") {
            assert_eq!(read_value(&edn.to_string()).unwrap(), value, "{text}");
        }
    }
    // A list is not turned into a vector.
    assert!(matches!(
        Edn::try_from(&read_value("(1)").unwrap()).unwrap(),
        Edn::List(_)
    ));
    // NaN is kept.
    let nan = Value::try_from(Edn::try_from(&Value::Float(f64::NAN)).unwrap()).unwrap();
    assert!(nan.as_f64().is_some_and(f64::is_nan));
}

#[test]
fn insertion_order_is_what_edn_rs_loses() {
    let value = read_value("{:z 1, :a 2}").unwrap();
    let back = Value::try_from(Edn::try_from(&value).unwrap()).unwrap();
    assert_eq!(back, value);
    assert_eq!(back.to_string(), "{:a 2, :z 1}");
}

#[test]
fn a_value_too_deep_for_edn_rs_is_an_error() {
    let mut deep = Value::Nil;
    for _ in 0..1000 {
        deep = Value::Vector(aido::value::thin_vec![deep]);
    }
    assert!(Edn::try_from(&deep).unwrap_err().0.contains("nest"));
}
