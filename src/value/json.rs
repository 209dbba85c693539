//! serde support and the JSON mapping.
//!
//! Serialising a [`Value`] (to JSON or any serde format) maps it like this:
//!
//! | EDN                      | serde / JSON                               |
//! |--------------------------|--------------------------------------------|
//! | `nil`                    | unit / `null`                              |
//! | `true`, `1`, `1.5`       | bool, i64, f64                             |
//! | `"text"`                 | string `"text"`                            |
//! | `:ns/name` (value)       | string `":ns/name"`                        |
//! | `:ns/name` (map key)     | string `"ns/name"` (no colon)              |
//! | other map keys           | their EDN text, e.g. `1` → `"1"`           |
//! | `sym`, `\c`              | string `"sym"`, `"c"`                      |
//! | `[..]`, `(..)`, `#{..}`  | sequence / array                           |
//! | `{..}`                   | map / object, in insertion order           |
//! | `#tag v`                 | one-entry map `{"#tag": v}`                |
//!
//! Deserialising reverses the common cases: an object key that is a valid
//! keyword name becomes a keyword, a string value that starts with `:` and is
//! a valid keyword becomes a keyword, integers stay integers and arrays become
//! vectors. So a db written as JSON reads back as the same db, as long as its
//! strings do not start with a colon and its map keys are keywords.

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};

use super::{Keyword, Map, Value};

impl Serialize for Value {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Value::Nil => s.serialize_unit(),
            Value::Bool(b) => s.serialize_bool(*b),
            Value::Int(i) => s.serialize_i64(*i),
            Value::Float(f) => s.serialize_f64(*f),
            Value::Str(t) => s.serialize_str(t),
            Value::Char(c) => s.serialize_char(*c),
            Value::Keyword(k) => s.serialize_str(&k.to_string()),
            Value::Symbol(sym) => s.serialize_str(sym.as_str()),
            Value::Vector(items) | Value::List(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(item)?;
                }
                seq.end()
            }
            Value::Set(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for item in items.iter() {
                    seq.serialize_element(item)?;
                }
                seq.end()
            }
            Value::Map(map) => {
                let mut out = s.serialize_map(Some(map.len()))?;
                for (k, v) in map.iter() {
                    out.serialize_entry(&key_text(k), v)?;
                }
                out.end()
            }
            Value::Tagged(tag, v) => {
                let mut out = s.serialize_map(Some(1))?;
                out.serialize_entry(&format!("#{tag}"), v.as_ref())?;
                out.end()
            }
        }
    }
}

fn key_text(key: &Value) -> String {
    match key {
        Value::Keyword(k) => k.as_str().to_owned(),
        Value::Str(s) => s.to_string(),
        Value::Symbol(s) => s.as_str().to_owned(),
        other => other.to_string(),
    }
}

/// Whether `text` (without a colon) would read back as a keyword.
pub(crate) fn is_keyword_text(text: &str) -> bool {
    let mut chars = text.chars();
    let Some(first) = chars.next() else {
        return false;
    };
    if first.is_ascii_digit() || first == ':' || first == '#' || text.ends_with('/') {
        return false;
    }
    text.chars()
        .all(|c| !c.is_whitespace() && !"()[]{}\"',;\\@^`~".contains(c))
}

struct ValueVisitor;

impl<'de> Visitor<'de> for ValueVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON or EDN-like value")
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Nil)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Nil)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        Value::deserialize(d)
    }

    fn visit_bool<E>(self, b: bool) -> Result<Value, E> {
        Ok(Value::Bool(b))
    }

    fn visit_i64<E>(self, i: i64) -> Result<Value, E> {
        Ok(Value::Int(i))
    }

    fn visit_u64<E: de::Error>(self, u: u64) -> Result<Value, E> {
        i64::try_from(u)
            .map(Value::Int)
            .map_err(|_| E::custom(format!("integer {u} does not fit in 64 signed bits")))
    }

    fn visit_f64<E>(self, f: f64) -> Result<Value, E> {
        Ok(Value::Float(f))
    }

    fn visit_str<E>(self, s: &str) -> Result<Value, E> {
        Ok(match s.strip_prefix(':') {
            Some(rest) if is_keyword_text(rest) => Value::Keyword(Keyword::new(rest)),
            _ => Value::string(s),
        })
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(item) = seq.next_element::<Value>()? {
            items.push(item);
        }
        Ok(Value::Vector(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Value, A::Error> {
        let mut map = Map::default();
        while let Some(key) = access.next_key::<String>()? {
            let text = key.strip_prefix(':').unwrap_or(&key);
            let key = if is_keyword_text(text) {
                Value::Keyword(Keyword::new(text))
            } else {
                Value::string(&key)
            };
            let value = access.next_value::<Value>()?;
            if map.insert(key.clone(), value).is_some() {
                return Err(de::Error::custom(format!("duplicate key {key}")));
            }
        }
        Ok(Value::Map(Box::new(map)))
    }
}

impl<'de> Deserialize<'de> for Value {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Value, D::Error> {
        d.deserialize_any(ValueVisitor)
    }
}

impl Value {
    /// Converts to JSON with the mapping described in this module.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }

    /// Converts from JSON with the mapping described in this module.
    pub fn from_json(json: serde_json::Value) -> Result<Value, serde_json::Error> {
        serde_json::from_value(json)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn db_round_trips_through_json() {
        let db = Value::map_from([
            (Value::keyword("hunger"), Value::Int(0)),
            (Value::keyword("action"), Value::keyword("eat")),
            (Value::keyword("name"), Value::string("Ann")),
            (
                Value::keyword("xs"),
                Value::Vector(vec![Value::Float(1.5), Value::Nil]),
            ),
        ]);
        let json = db.to_json();
        assert_eq!(
            json.to_string(),
            r#"{"hunger":0,"action":":eat","name":"Ann","xs":[1.5,null]}"#
        );
        assert_eq!(Value::from_json(json).ok(), Some(db));
    }

    #[test]
    fn keys_that_are_not_keyword_names_stay_strings() {
        let v = Value::from_json(serde_json::json!({"two words": 1})).ok();
        assert_eq!(
            v.map(|v| v.to_string()),
            Some(r#"{"two words" 1}"#.to_owned())
        );
    }
}
