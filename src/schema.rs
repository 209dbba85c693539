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

use std::sync::Arc;

pub use crate::spec::DbType;
use crate::spec::describe;
use crate::value::{Keyword, Value};

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
