//! The db schema a node model may declare under `:db` (see
//! [`crate::model`]): each key's type, default and documentation. `aido
//! check` checks a tree's constant writes and comparisons, and an example
//! db, against it ([`crate::lint`]).
//!
//! ```clojure
//! {:db {:hunger {:type :int :default 0 :doc "How hungry, 0 to 10."}
//!       :replies {:type [:vector :string]}
//!       :target :keyword}}
//! ```
//!
//! A type is one of a node model's option types (`:int :number :bool
//! :string :keyword :key :any ..`), or `[:vector t]`, `[:set t]`,
//! `[:map-of k v]` for collections whose elements have type `t`, or `:map`.

use std::fmt;
use std::sync::Arc;

use crate::spec::{OptionType, describe};
use crate::value::{Keyword, Value};

/// The type of a db key's value.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum DbType {
    /// One of the option types of node models.
    Plain(OptionType),
    /// A vector whose elements all have this type.
    Vector(Box<DbType>),
    /// A set whose elements all have this type.
    Set(Box<DbType>),
    /// A map whose keys and values have these types.
    MapOf(Box<DbType>, Box<DbType>),
    /// Any map.
    Map,
}

impl DbType {
    /// Checks `value`, saying where inside it and what was expected if it
    /// does not fit (`element 2: expected a string, found integer `5``).
    pub fn check(&self, value: &Value) -> Result<(), String> {
        match (self, value) {
            (DbType::Plain(ty), v) => ty.check(v),
            (DbType::Vector(ty), Value::Vector(items)) => check_all(ty, items.iter(), "element"),
            (DbType::Set(ty), Value::Set(items)) => check_all(ty, items.iter(), "element"),
            (DbType::Map, Value::Map(_)) => Ok(()),
            (DbType::MapOf(k, v), Value::Map(map)) => {
                for (key, val) in map.iter() {
                    k.check(key)
                        .map_err(|e| format!("key {}: {e}", describe(key)))?;
                    v.check(val).map_err(|e| format!("at key {key}: {e}"))?;
                }
                Ok(())
            }
            (ty, other) => Err(format!("expected {ty}, found {}", describe(other))),
        }
    }
}

fn check_all<'v>(
    ty: &DbType,
    items: impl Iterator<Item = &'v Value>,
    what: &str,
) -> Result<(), String> {
    for (i, item) in items.enumerate() {
        ty.check(item).map_err(|e| format!("{what} {i}: {e}"))?;
    }
    Ok(())
}

impl fmt::Display for DbType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DbType::Plain(ty) => write!(f, "{ty}"),
            DbType::Vector(ty) => write!(f, "a vector (each element {ty})"),
            DbType::Set(ty) => write!(f, "a set (each element {ty})"),
            DbType::MapOf(k, v) => write!(f, "a map (each key {k}, each value {v})"),
            DbType::Map => f.write_str("a map"),
        }
    }
}

/// One declared db key.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct DbKey {
    /// The key.
    pub key: Keyword,
    /// The type of its value.
    pub ty: DbType,
    /// Its value when the host sets none, if declared.
    pub default: Option<Value>,
    /// What it holds.
    pub doc: Option<Arc<str>>,
}

/// The declared db: what `:db` in a node model says.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct DbSchema {
    /// The declared keys, in the model's order.
    pub keys: Vec<DbKey>,
}

impl DbSchema {
    /// The declaration of `key`, if it has one.
    pub fn get(&self, key: &Value) -> Option<&DbKey> {
        let Value::Keyword(k) = key else {
            return None;
        };
        self.keys.iter().find(|d| d.key == *k)
    }

    /// Checks every declared key an example db holds; each problem as
    /// `(key, what is wrong)`.
    pub fn check_db(&self, db: &Value) -> Vec<(Value, String)> {
        let Some(map) = db.as_map() else {
            return vec![(Value::Nil, format!("a db is a map, found {}", describe(db)))];
        };
        map.iter()
            .filter_map(|(key, value)| {
                let declared = self.get(key)?;
                declared.ty.check(value).err().map(|e| (key.clone(), e))
            })
            .collect()
    }
}
