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
//!
//! A key path (`[:stats :hp]`) is followed through the declared types
//! ([`DbSchema::at_path`]): into a `[:map-of k v]` by a key of type `k`, to a
//! value of type `v`; into a `[:vector t]` by an index, to an element of
//! type `t`. A path that goes on inside `:map`, `:any` or an undeclared top
//! key is free: nothing is declared there, so anything may be written. A
//! path into a set, into a scalar type, or by a key or index the type does
//! not take is refused.

use std::sync::Arc;

pub use crate::spec::DbType;
use crate::spec::{OptionType, describe};
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

    /// What the schema declares at a key path (the keys from the db down).
    pub fn at_path(&self, path: &[Value]) -> AtPath<'_> {
        let Some((top, rest)) = path.split_first() else {
            return AtPath::Free;
        };
        let Some(declared) = self.get(top) else {
            return AtPath::Free;
        };
        let mut ty = &declared.ty;
        for (depth, key) in rest.iter().enumerate() {
            let at = path_text(&path[..=depth]);
            let inside = |what: &str| {
                AtPath::Refused(format!(
                    "`{at}` is declared as {ty}, which {what} (the path goes on with `{key}`)"
                ))
            };
            ty = match ty {
                DbType::Plain(OptionType::Any) | DbType::Map => return AtPath::Free,
                DbType::MapOf(k, v) => {
                    if let Err(e) = k.check(key) {
                        return AtPath::Refused(format!(
                            "`{at}` is declared as {ty}: key `{key}`: {e}"
                        ));
                    }
                    v
                }
                DbType::Vector(elem) => {
                    if !matches!(key, Value::Int(i) if *i >= 0) {
                        return inside("is indexed by integers 0 or more");
                    }
                    elem
                }
                DbType::Set(_) => return inside("has no keys to write at"),
                DbType::Plain(_) => return inside("holds nothing inside"),
            };
        }
        AtPath::Type(ty)
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

/// A key path as written: `:hunger`, or `[:stats :hp]`.
fn path_text(path: &[Value]) -> String {
    match path {
        [one] => one.to_string(),
        _ => Value::Vector(path.into()).to_string(),
    }
}

/// What a db schema declares at a key path ([`DbSchema::at_path`]).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum AtPath<'s> {
    /// Nothing is declared there: anything may be written.
    Free,
    /// The type the value at the path must have.
    Type(&'s DbType),
    /// The path leads nowhere the schema allows: why.
    Refused(String),
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::read_value;

    fn schema() -> DbSchema {
        let ty = |t: DbType| DbKey {
            key: Keyword::new("x"),
            ty: t,
            default: None,
            doc: None,
        };
        let int = || Box::new(DbType::Plain(OptionType::Int));
        let mut stats = ty(DbType::MapOf(
            Box::new(DbType::Plain(OptionType::Keyword)),
            int(),
        ));
        stats.key = Keyword::new("stats");
        let mut log = ty(DbType::Vector(int()));
        log.key = Keyword::new("log");
        let mut hunger = ty(DbType::Plain(OptionType::Int));
        hunger.key = Keyword::new("hunger");
        let mut bag = ty(DbType::Map);
        bag.key = Keyword::new("bag");
        DbSchema {
            keys: vec![stats, log, hunger, bag],
        }
    }

    fn at(path: &str) -> String {
        let path = read_value(path).unwrap_or_default();
        match schema().at_path(path.as_seq().unwrap_or(&[])) {
            AtPath::Free => "free".into(),
            AtPath::Type(ty) => ty.to_string(),
            AtPath::Refused(why) => format!("refused: {why}"),
        }
    }

    #[test]
    fn a_path_follows_the_declared_types_down() {
        assert_eq!(at("[:stats :hp]"), "an integer");
        assert_eq!(at("[:log 0]"), "an integer");
        assert_eq!(at("[:bag :anything :deep]"), "free");
        assert_eq!(at("[:other :x]"), "free");
        assert_eq!(
            at("[:stats \"hp\"]"),
            "refused: `:stats` is declared as a map (each key a keyword, each value an integer): key `\"hp\"`: expected a keyword, found string `\"hp\"`"
        );
        assert_eq!(
            at("[:log :first]"),
            "refused: `:log` is declared as a vector (each element an integer), which is indexed by integers 0 or more (the path goes on with `:first`)"
        );
        assert_eq!(
            at("[:hunger :level]"),
            "refused: `:hunger` is declared as an integer, which holds nothing inside (the path goes on with `:level`)"
        );
        assert_eq!(
            at("[:stats :hp :x]"),
            "refused: `[:stats :hp]` is declared as an integer, which holds nothing inside (the path goes on with `:x`)"
        );
    }
}
