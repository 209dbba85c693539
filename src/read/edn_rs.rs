//! Converting `edn_rs::Edn` values into [`Value`] (cargo feature `edn-rs`).
//!
//! For code that already holds edn-rs values. Reading text should go through
//! this crate's reader, which is strict where edn-rs is lax.

use std::fmt;

use edn_rs::Edn;

use crate::value::{Keyword, Map, Set, Symbol, Value};

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

fn convert_all(items: Vec<Edn>) -> Result<Vec<Value>, EdnRsError> {
    items.into_iter().map(Value::try_from).collect()
}
