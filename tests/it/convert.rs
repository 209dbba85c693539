//! `Value` from and into Rust types: the std conversions, `IndexMap` with
//! any hasher, and serde's `to_value`/`from_value` for host types, both ways,
//! with what cannot convert as an error of its kind at its key path.
#![allow(clippy::panic, clippy::expect_used, clippy::unwrap_used)]

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::hash::BuildHasherDefault;

use aido::value::{ValueErrorKind, from_value, to_value};
use aido::{Value, read_value};
use serde::{Deserialize, Serialize};

fn edn(text: &str) -> Value {
    read_value(text).unwrap()
}

#[test]
fn std_scalars_and_strings_convert_in() {
    assert_eq!(Value::from(3u8), Value::Int(3));
    assert_eq!(Value::from(-3i32), Value::Int(-3));
    assert_eq!(Value::from(u32::MAX), Value::Int(i64::from(u32::MAX)));
    assert_eq!(Value::from(1.5f32), Value::Float(1.5));
    assert_eq!(Value::from('x'), Value::Char('x'));
    assert_eq!(Value::from(String::from("hi")), Value::string("hi"));
    assert_eq!(Value::from(&String::from("hi")), Value::string("hi"));
    assert_eq!(
        Value::from(std::borrow::Cow::Borrowed("hi")),
        Value::string("hi")
    );
    assert_eq!(Value::from(Some(2i64)), Value::Int(2));
    assert_eq!(Value::from(None::<i64>), Value::Nil);
    assert_eq!(Value::from(vec![1i64, 2]), edn("[1 2]"));
    assert_eq!(Value::from([true, false]), edn("[true false]"));
    assert_eq!(Value::from(&["a", "b"][..]), edn(r#"["a" "b"]"#));
    assert_eq!(Value::try_from(7u64).unwrap(), Value::Int(7));
    assert_eq!(Value::try_from(7usize).unwrap(), Value::Int(7));
}

#[test]
fn integers_beyond_64_signed_bits_are_errors_not_floats() {
    let error = Value::try_from(u64::MAX).unwrap_err();
    assert!(matches!(error.kind, ValueErrorKind::OutOfRange(_)));
    assert_eq!(error.code(), "V0007");
    assert!(Value::try_from(i128::MIN).is_err());
    assert_eq!(Value::try_from(-5i128).unwrap(), Value::Int(-5));
}

#[test]
fn maps_and_sets_of_any_hasher_convert_in_keeping_their_order() {
    type Fnv = BuildHasherDefault<std::collections::hash_map::DefaultHasher>;
    let mut ordered: indexmap::IndexMap<&str, i64, Fnv> = indexmap::IndexMap::default();
    ordered.insert("z", 1);
    ordered.insert("a", 2);
    let value = Value::from(ordered);
    assert_eq!(value.to_string(), r#"{"z" 1, "a" 2}"#);

    let std_ordered: indexmap::IndexMap<String, Vec<i64>> =
        [("xs".to_owned(), vec![1, 2])].into_iter().collect();
    assert_eq!(Value::from(std_ordered), edn(r#"{"xs" [1 2]}"#));

    let hashed: HashMap<i64, bool> = [(1, true), (2, false)].into_iter().collect();
    assert_eq!(Value::from(hashed), edn("{1 true, 2 false}"));

    let sorted: BTreeMap<&str, &str> = [("b", "x"), ("a", "y")].into_iter().collect();
    assert_eq!(Value::from(sorted).to_string(), r#"{"a" "y", "b" "x"}"#);

    let set: HashSet<i64> = [1, 2].into_iter().collect();
    assert_eq!(Value::from(set), edn("#{1 2}"));
    let set: BTreeSet<char> = ['b', 'a'].into_iter().collect();
    assert_eq!(Value::from(set), edn(r"#{\a \b}"));

    let pairs: Value = [(Value::keyword("hp"), 3i64), (Value::keyword("mp"), 1)]
        .into_iter()
        .collect();
    assert_eq!(pairs, edn("{:hp 3, :mp 1}"));
}

#[test]
fn scalars_convert_out_only_when_they_are_of_that_type_and_fit() {
    assert_eq!(i64::try_from(&Value::Int(-4)).unwrap(), -4);
    assert_eq!(u8::try_from(&Value::Int(200)).unwrap(), 200);
    assert_eq!(String::try_from(&Value::string("hi")).unwrap(), "hi");
    assert_eq!(String::try_from(&Value::keyword("eat")).unwrap(), "eat");
    assert_eq!(f64::try_from(&Value::Int(3)).unwrap(), 3.0);
    assert!(bool::try_from(&Value::Bool(true)).unwrap());
    assert_eq!(char::try_from(&Value::Char('c')).unwrap(), 'c');

    // A float is never truncated into an integer...
    let error = i64::try_from(&Value::Float(1.5)).unwrap_err();
    assert!(
        matches!(error.kind, ValueErrorKind::WrongType { .. }),
        "{error}"
    );
    // ...an integer never wrapped or rounded...
    let error = u8::try_from(&Value::Int(300)).unwrap_err();
    assert!(
        matches!(error.kind, ValueErrorKind::InvalidValue { .. }),
        "{error}"
    );
    assert!(u64::try_from(&Value::Int(-1)).is_err());
    let error = f64::try_from(&Value::Int((1 << 53) + 1)).unwrap_err();
    assert!(
        matches!(error.kind, ValueErrorKind::OutOfRange(_)),
        "{error}"
    );
    // ...and a string is not a number.
    assert!(i64::try_from(&Value::string("1")).is_err());
}

#[derive(Serialize, Deserialize, Debug, PartialEq, Clone)]
#[serde(rename_all = "kebab-case")]
enum Mood {
    Calm,
    Angry,
    Scared { of: String },
    Hurt(u8),
    At(i32, i32),
}

#[derive(Serialize, Deserialize, Debug, PartialEq, Clone)]
#[serde(rename_all = "kebab-case")]
struct Npc {
    name: String,
    hunger: i64,
    speed: f64,
    mood: Mood,
    moods: Vec<Mood>,
    inventory: BTreeMap<String, u32>,
    target: Option<(i32, i32)>,
    home: Option<String>,
    tag: char,
    seen: BTreeSet<String>,
    by_id: BTreeMap<u16, String>,
    is_boss: bool,
    unit: (),
}

fn ada() -> Npc {
    Npc {
        name: ":not-a-keyword".to_owned(),
        hunger: 3,
        speed: 1.5,
        mood: Mood::Calm,
        moods: vec![
            Mood::Angry,
            Mood::Scared {
                of: "dark".to_owned(),
            },
            Mood::Hurt(2),
            Mood::At(1, -1),
        ],
        inventory: [("apple".to_owned(), 2), ("two words".to_owned(), 1)]
            .into_iter()
            .collect(),
        target: Some((4, 5)),
        home: None,
        tag: 'a',
        seen: ["bob".to_owned()].into_iter().collect(),
        by_id: [(7, "seven".to_owned())].into_iter().collect(),
        is_boss: false,
        unit: (),
    }
}

#[test]
fn a_host_struct_becomes_a_db_with_keywords_for_names_and_comes_back() {
    let npc = ada();
    let db = to_value(&npc).unwrap();
    assert_eq!(
        db.to_string(),
        concat!(
            r#"{:name ":not-a-keyword", :hunger 3, :speed 1.5, :mood :calm, "#,
            r#":moods [:angry {:scared {:of "dark"}} {:hurt 2} {:at [1 -1]}], "#,
            r#":inventory {:apple 2, "two words" 1}, :target [4 5], :home nil, :tag \a, "#,
            r#":seen ["bob"], :by-id {7 "seven"}, :is-boss false, :unit nil}"#
        )
    );
    assert_eq!(from_value::<Npc>(&db).unwrap(), npc);

    // The db is an ordinary db: a tree reads it, and the struct comes back
    // from what the tick left.
    let tree = aido::compile_str(
        "npc.edn",
        "[:sequence [:test? {:key :mood :oper = :val :calm}] [:inc! {:key :hunger}]]",
        &aido::Registry::new(),
    )
    .unwrap();
    let tick = aido::run_tick(db, &tree);
    assert_eq!(tick.status, aido::Status::Success);
    assert_eq!(from_value::<Npc>(&tick.db).unwrap().hunger, 4);
}

#[test]
fn a_db_written_by_hand_reads_into_a_host_struct() {
    let db = edn(
        r#"{:name "Bo", :hunger 0, :speed 2, :mood {:scared {:of "rats"}}, :moods (:calm),
            :inventory {}, :target nil, :home "inn", :tag \b, :seen #{"x"}, :by-id {},
            :is-boss true, :unit nil}"#,
    );
    let npc: Npc = from_value(&db).unwrap();
    assert_eq!(npc.speed, 2.0);
    assert_eq!(
        npc.mood,
        Mood::Scared {
            of: "rats".to_owned()
        }
    );
    assert_eq!(npc.moods, [Mood::Calm]);
    assert_eq!(npc.home.as_deref(), Some("inn"));
}

fn error_of(text: &str) -> (ValueErrorKind, String, &'static str) {
    let mut db = to_value(&ada()).unwrap();
    let patch = edn(text);
    for (k, v) in patch.as_map().unwrap() {
        db.as_map_mut().unwrap().insert(k.clone(), v.clone());
    }
    let error = from_value::<Npc>(&db).unwrap_err();
    (error.kind.clone(), error.path_text(), error.code())
}

#[test]
fn what_does_not_convert_out_is_an_error_naming_its_key_path() {
    let (kind, path, code) = error_of("{:hunger 1.5}");
    assert!(matches!(kind, ValueErrorKind::WrongType { .. }));
    assert_eq!((path.as_str(), code), ("[:hunger]", "V0001"));

    let (kind, path, _) = error_of("{:moods [:calm {:hurt 300}]}");
    assert!(matches!(kind, ValueErrorKind::InvalidValue { .. }));
    assert_eq!(path, "[:moods 1 :hurt]");

    let (kind, path, _) = error_of("{:moods [:bored]}");
    assert_eq!(kind, ValueErrorKind::UnknownVariant("bored".to_owned()));
    assert_eq!(path, "[:moods 0]");

    let (kind, path, _) = error_of(r#"{:inventory {:apple "two"}}"#);
    assert!(matches!(kind, ValueErrorKind::WrongType { .. }));
    assert_eq!(path, "[:inventory :apple]");

    let (kind, path, _) = error_of("{:target [1 2 3]}");
    assert!(
        matches!(kind, ValueErrorKind::WrongLength { found: 3, .. }),
        "{kind:?}"
    );
    assert_eq!(path, "[:target]");

    let (kind, _, _) = error_of(r#"{:home #inst "2020-01-01"}"#);
    assert!(matches!(kind, ValueErrorKind::NoSerdeForm(_)));

    let mut db = to_value(&ada()).unwrap();
    db.as_map_mut()
        .unwrap()
        .shift_remove(&Value::keyword("speed"));
    let error = from_value::<Npc>(&db).unwrap_err();
    assert_eq!(error.kind, ValueErrorKind::MissingField("speed"));
    assert_eq!(error.to_string(), "missing field `speed` (at [])");
}

#[test]
fn what_does_not_convert_in_is_an_error_naming_its_key_path() {
    #[derive(Serialize)]
    struct Big {
        counts: Vec<u64>,
    }
    let error = to_value(&Big {
        counts: vec![1, u64::MAX],
    })
    .unwrap_err();
    assert!(matches!(error.kind, ValueErrorKind::OutOfRange(_)));
    assert_eq!(error.path_text(), "[:counts 1]");

    // Two keys that become equal values (0.0 and -0.0 are one EDN key):
    // an error, not a lost entry.
    #[derive(PartialEq, Eq, PartialOrd, Ord)]
    struct Zero(bool);
    impl Serialize for Zero {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            s.serialize_f64(if self.0 { -0.0 } else { 0.0 })
        }
    }
    let keys: BTreeMap<Zero, i32> = [(Zero(false), 1), (Zero(true), 2)].into_iter().collect();
    let error = to_value(&keys).unwrap_err();
    assert!(
        matches!(error.kind, ValueErrorKind::DuplicateKey(_)),
        "{error}"
    );
    assert_eq!(error.code(), "V0010");
}

#[test]
fn deep_host_values_are_refused_not_overflowed() {
    #[derive(Serialize, Deserialize)]
    struct Chain {
        next: Option<Box<Chain>>,
    }
    let mut chain = Chain { next: None };
    for _ in 0..1000 {
        chain = Chain {
            next: Some(Box::new(chain)),
        };
    }
    let error = to_value(&chain).unwrap_err();
    assert_eq!(error.kind, ValueErrorKind::TooDeep);
    // Dropping the chain recurses; keep it shallow enough for the test thread.
    std::mem::forget(chain);

    let mut deep = Value::Nil;
    for _ in 0..1000 {
        deep = Value::map_from([(Value::keyword("next"), deep)]);
    }
    assert_eq!(
        from_value::<Chain>(&deep).err().map(|e| e.kind),
        Some(ValueErrorKind::TooDeep)
    );
}
