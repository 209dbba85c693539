//! Converting between `edn_rs::Edn` and [`Value`], both ways (cargo feature
//! `edn-rs`).
//!
//! For code that already holds edn-rs values. Reading text should go through
//! this crate's reader, which is strict where edn-rs is lax.
//!
//! What is lost or refused:
//!
//! - `Edn` → `Value` (`Value::try_from(edn)`): nothing is lost that `Value`
//!   can hold. Ratios, unsigned integers beyond `i64::MAX`, `Edn::Empty`
//!   and a map key that this crate's reader refuses are errors. edn-rs keeps
//!   maps and sets sorted, so the order of a converted map is edn-rs's.
//! - `Value` → `Edn` (`Edn::try_from(&value)`): the insertion order of maps
//!   and sets (edn-rs sorts map keys by their EDN text and set elements by
//!   its own order); everything else is kept: keywords, symbols, characters,
//!   lists and vectors apart, tagged values, floats (NaN included). A value
//!   nested deeper than [`MAX_DEPTH`](crate::value::MAX_DEPTH) is an error
//!   rather than a stack overflow.
//!
//! ```
//! use aido::{Value, read_value};
//! use edn_rs::Edn;
//!
//! let value = read_value("{:hunger 3, :tags #{:a}, :path (:x \\y)}").unwrap();
//! let edn = Edn::try_from(&value).unwrap();
//! assert_eq!(Value::try_from(edn).unwrap(), value);
//! ```

use std::fmt;

use edn_rs::Edn;

use crate::value::{Keyword, MAX_DEPTH, Map, Set, Symbol, Value};

/// An `Edn` value with no exact counterpart in [`Value`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct EdnRsError(pub String);

impl fmt::Display for EdnRsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for EdnRsError {}

impl TryFrom<Edn> for Value {
    type Error = EdnRsError;

    /// Converts an edn-rs value. Map keys, which edn-rs keeps as EDN text,
    /// are read back with this crate's reader. Ratios, unsigned integers
    /// beyond `i64::MAX` and `Edn::Empty` are errors rather than guesses.
    fn try_from(edn: Edn) -> Result<Value, EdnRsError> {
        Ok(match edn {
            Edn::Nil => Value::Nil,
            Edn::Bool(b) => Value::Bool(b),
            Edn::Int(i) => Value::Int(i),
            Edn::UInt(u) => {
                Value::Int(i64::try_from(u).map_err(|_| {
                    EdnRsError(format!("integer {u} does not fit in 64 signed bits"))
                })?)
            }
            Edn::Double(_) => Value::Float(
                edn.to_float()
                    .ok_or_else(|| EdnRsError("unreadable float".to_owned()))?,
            ),
            Edn::Rational(r) => return Err(EdnRsError(format!("ratio {r} is not supported"))),
            Edn::Str(s) => Value::string(&s),
            Edn::Char(c) => Value::Char(c),
            Edn::Key(k) => Value::Keyword(Keyword::new(k.strip_prefix(':').unwrap_or(&k))),
            Edn::Symbol(s) => Value::Symbol(Symbol::new(&s)),
            Edn::Vector(v) => Value::Vector(convert_all(v.to_vec())?),
            Edn::List(l) => Value::List(convert_all(l.to_vec())?),
            Edn::Set(s) => {
                let mut set = Set::default();
                for item in s.to_set() {
                    set.insert(Value::try_from(item)?);
                }
                Value::Set(Box::new(set))
            }
            Edn::Map(m) => {
                let mut map = Map::default();
                for (key, value) in m.to_map() {
                    let key = super::read_value(&key)
                        .map_err(|e| EdnRsError(format!("map key `{key}`: {e}")))?;
                    map.insert(key, Value::try_from(value)?);
                }
                Value::Map(Box::new(map))
            }
            Edn::Tagged(tag, inner) => {
                Value::Tagged(Symbol::new(&tag), Box::new(Value::try_from(*inner)?))
            }
            Edn::Empty => {
                return Err(EdnRsError(
                    "an empty edn-rs value has no counterpart".to_owned(),
                ));
            }
            // `Edn` is non-exhaustive: a variant added later is refused, not guessed at.
            other => return Err(EdnRsError(format!("unsupported edn-rs value {other:?}"))),
        })
    }
}

fn convert_all(items: Vec<Edn>) -> Result<crate::value::ThinVec<Value>, EdnRsError> {
    items.into_iter().map(Value::try_from).collect()
}

impl TryFrom<&Value> for Edn {
    type Error = EdnRsError;

    /// Converts a value into edn-rs's; see the module docs for what is lost.
    fn try_from(value: &Value) -> Result<Edn, EdnRsError> {
        to_edn(value, 0)
    }
}

fn to_edn(value: &Value, depth: usize) -> Result<Edn, EdnRsError> {
    if depth > MAX_DEPTH {
        return Err(EdnRsError(format!(
            "values nest more than {MAX_DEPTH} deep"
        )));
    }
    let all = |items: &[Value]| -> Result<Vec<Edn>, EdnRsError> {
        items.iter().map(|item| to_edn(item, depth + 1)).collect()
    };
    Ok(match value {
        Value::Nil => Edn::Nil,
        Value::Bool(b) => Edn::Bool(*b),
        Value::Int(i) => Edn::Int(*i),
        Value::Float(f) => Edn::Double((*f).into()),
        Value::Str(s) => Edn::Str(s.to_string()),
        Value::Char(c) => Edn::Char(*c),
        Value::Keyword(k) => Edn::Key(format!(":{}", k.as_str())),
        Value::Symbol(s) => Edn::Symbol(s.as_str().to_owned()),
        Value::Vector(items) => Edn::Vector(edn_rs::Vector::new(all(items)?)),
        Value::List(items) => Edn::List(edn_rs::List::new(all(items)?)),
        Value::Set(items) => {
            let mut set = std::collections::BTreeSet::new();
            for item in items.iter() {
                if !set.insert(to_edn(item, depth + 1)?) {
                    return Err(EdnRsError(format!(
                        "two elements of a set become one edn-rs value: {item}"
                    )));
                }
            }
            Edn::Set(edn_rs::Set::new(set))
        }
        Value::Map(map) => {
            let mut out = std::collections::BTreeMap::new();
            for (key, item) in map.iter() {
                // edn-rs keeps a map's keys as their EDN text.
                if out
                    .insert(key.to_string(), to_edn(item, depth + 1)?)
                    .is_some()
                {
                    return Err(EdnRsError(format!("two keys of a map print alike: {key}")));
                }
            }
            Edn::Map(edn_rs::Map::new(out))
        }
        Value::Tagged(tag, inner) => {
            Edn::Tagged(tag.as_str().to_owned(), Box::new(to_edn(inner, depth + 1)?))
        }
    })
}
