//! Key paths: `get_in`, `assoc_in`, `update_in` and `dissoc_in`, as in Clojure.

use std::fmt;

use super::{Map, Value};

/// Why a key path could not be written.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum PathError {
    /// The path is empty.
    Empty,
    /// A value on the path is neither a map, a vector nor nil.
    NotAssociative {
        /// How many keys of the path were followed before the bad value.
        depth: usize,
        /// The type of the value found there.
        found: &'static str,
    },
    /// A vector was indexed by something other than an integer within `0..=len`.
    BadIndex {
        /// How many keys of the path were followed before the vector.
        depth: usize,
        /// The key used as an index.
        key: Value,
    },
}

impl fmt::Display for PathError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PathError::Empty => f.write_str("empty key path"),
            PathError::NotAssociative { depth, found } => {
                let article = if found.starts_with(['a', 'e', 'i', 'o', 'u']) {
                    "an"
                } else {
                    "a"
                };
                write!(
                    f,
                    "cannot write into {article} {found} at depth {depth} of the key path"
                )
            }
            PathError::BadIndex { depth, key } => {
                write!(
                    f,
                    "key {key} at depth {depth} is not a valid index into the vector there"
                )
            }
        }
    }
}

impl std::error::Error for PathError {}

impl Value {
    /// Follows `path` through maps (by key) and vectors (by integer index).
    pub fn get_in(&self, path: &[Value]) -> Option<&Value> {
        let mut here = self;
        for key in path {
            here = step(here, key)?;
        }
        Some(here)
    }

    /// Sets the value at `path`, creating maps for missing or nil levels.
    pub fn assoc_in(&mut self, path: &[Value], value: Value) -> Result<(), PathError> {
        let slot = slot_in(self, path)?;
        *slot = value;
        Ok(())
    }

    /// Replaces the value at `path` with `f(old)`, where `old` is nil if missing.
    pub fn update_in(
        &mut self,
        path: &[Value],
        f: impl FnOnce(Value) -> Value,
    ) -> Result<(), PathError> {
        let slot = slot_in(self, path)?;
        let old = std::mem::take(slot);
        *slot = f(old);
        Ok(())
    }

    /// Removes the entry at `path`; a missing path is left as it is. Removing
    /// from a vector is not allowed (it would shift the other elements).
    pub fn dissoc_in(&mut self, path: &[Value]) -> Result<Option<Value>, PathError> {
        let Some((last, parents)) = path.split_last() else {
            return Err(PathError::Empty);
        };
        let mut here = self;
        for (depth, key) in parents.iter().enumerate() {
            here = match here {
                Value::Map(m) => match m.get_mut(key) {
                    Some(next) => next,
                    None => return Ok(None),
                },
                Value::Vector(v) => match index(key, v.len()) {
                    Some(i) if i < v.len() => &mut v[i],
                    _ => return Ok(None),
                },
                Value::Nil => return Ok(None),
                other => {
                    return Err(PathError::NotAssociative {
                        depth,
                        found: other.type_name(),
                    });
                }
            };
        }
        match here {
            Value::Map(m) => Ok(m.shift_remove(last)),
            Value::Nil => Ok(None),
            other => Err(PathError::NotAssociative {
                depth: parents.len(),
                found: other.type_name(),
            }),
        }
    }
}

/// One step of a path: a map key, or an integer index into a vector.
#[inline]
pub(crate) fn step<'a>(here: &'a Value, key: &Value) -> Option<&'a Value> {
    match here {
        Value::Map(m) => map_get(m, key),
        Value::Vector(v) => index(key, v.len()).and_then(|i| v.get(i)),
        _ => None,
    }
}

fn index(key: &Value, len: usize) -> Option<usize> {
    match key {
        Value::Int(i) => usize::try_from(*i).ok().filter(|i| *i <= len),
        _ => None,
    }
}

/// The slot at `path`, created (as nil) if missing; intermediate nils become maps.
pub(crate) fn slot_in<'a>(root: &'a mut Value, path: &[Value]) -> Result<&'a mut Value, PathError> {
    if path.is_empty() {
        return Err(PathError::Empty);
    }
    let mut here = root;
    for (depth, key) in path.iter().enumerate() {
        if matches!(here, Value::Nil) {
            *here = Value::Map(Box::default());
        }
        here = match here {
            Value::Map(m) => map_slot(m, key),
            Value::Vector(v) => match index(key, v.len()) {
                Some(i) => {
                    if i == v.len() {
                        v.push(Value::Nil);
                    }
                    &mut v[i]
                }
                None => {
                    return Err(PathError::BadIndex {
                        depth,
                        key: key.clone(),
                    });
                }
            },
            other => {
                return Err(PathError::NotAssociative {
                    depth,
                    found: other.type_name(),
                });
            }
        };
    }
    Ok(here)
}

/// The index of `key` in `map`. A db is usually a handful of keyword keys,
/// and comparing a few interned keywords is cheaper than hashing and probing.
#[inline]
pub(crate) fn find(map: &Map, key: &Value) -> Option<usize> {
    if let Value::Keyword(k) = key {
        return find_kw(map, *k);
    }
    map.get_index_of(key)
}

/// The index of the keyword key `key` in `map` (see [`find`]), without
/// making a `Value` for it: a short scan of a small map, or in a larger one
/// a probe with the keyword's hash worked out in place (a few instructions:
/// no `Hash` or `PartialEq` call on values), so that looking up a key, or
/// proving a reserved `:aido/*` key absent, costs little in a db of any size.
#[inline(always)]
pub(crate) fn find_kw(map: &Map, key: super::Keyword) -> Option<usize> {
    map.keyword_position(key)
}

/// The value of `key` in `map`.
#[inline]
pub(crate) fn map_get<'a>(map: &'a Map, key: &Value) -> Option<&'a Value> {
    find(map, key).and_then(|i| map.value_at(i))
}

/// The slot for `key` in `map`, inserted as nil if missing. Looks up before
/// inserting so that the common case (the key exists) clones nothing.
#[inline]
pub(crate) fn map_slot<'a>(map: &'a mut Map, key: &Value) -> &'a mut Value {
    let i = match find(map, key) {
        Some(i) => i,
        // Just searched for: appended without a second search.
        None => map.push(key.clone(), Value::Nil),
    };
    &mut map[i]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kw(s: &str) -> Value {
        Value::keyword(s)
    }

    #[test]
    fn find_kw_finds_keywords_in_a_large_map_by_their_precomputed_hash() {
        use std::hash::BuildHasher;
        let mut map = Map::default();
        for i in 0..100 {
            map.insert(kw(&format!("k-{i}")), Value::Int(i));
            map.insert(Value::Int(i), Value::Int(i));
        }
        for (i, key) in map.keys().enumerate() {
            if let Value::Keyword(k) = key {
                assert_eq!(
                    super::super::keyword_hash(*k),
                    super::super::FastBuildHasher::default().hash_one(key)
                );
                assert_eq!(find_kw(&map, *k), Some(i));
                assert_eq!(find(&map, key), Some(i));
            }
        }
        let absent = Value::keyword("not-there");
        assert_eq!(find(&map, &absent), None);
        assert_eq!(find_kw(&map, super::super::kw::ERROR), None);
    }

    #[test]
    fn reserved_keys_are_known_exactly_in_a_small_and_a_large_map() {
        use super::super::kw;
        let bit = |k: super::super::Keyword| 1u64 << k.index();
        let wanted = bit(kw::ERROR) | bit(kw::RUNNING) | bit(kw::RESULTS) | bit(kw::TREE);
        // Other keywords never pass for those wanted, whatever their index
        // (some user keywords are interned below 64 too) or their index
        // modulo 64, nor does a key that is no keyword.
        for n in [3, 200] {
            let mut map = Map::default();
            for i in 0..n {
                map.insert(kw(&format!("user-{i}")), Value::Int(i));
            }
            map.insert(Value::Keyword(kw::MEMORY), Value::Nil);
            map.insert(Value::Int(4), Value::Int(20));
            assert_eq!(map.reserved_keywords(wanted), 0, "{n} keys");
            assert_eq!(
                map.reserved_keywords(bit(kw::MEMORY)),
                bit(kw::MEMORY),
                "{n} keys"
            );
            map.insert(Value::Keyword(kw::RESULTS), Value::Nil);
            map.insert(Value::Keyword(kw::RUNNING), Value::Nil);
            map.insert(Value::Keyword(kw::ERROR), Value::Nil);
            assert_eq!(
                map.reserved_keywords(wanted),
                bit(kw::RESULTS) | bit(kw::RUNNING) | bit(kw::ERROR),
                "{n} keys"
            );
            map.shift_remove(&Value::Keyword(kw::RUNNING));
            assert_eq!(
                map.reserved_keywords(wanted),
                bit(kw::RESULTS) | bit(kw::ERROR),
                "{n} keys"
            );
        }
    }

    #[test]
    fn assoc_in_creates_maps_and_get_in_reads_them_back() {
        let mut db = Value::map();
        db.assoc_in(&[kw("a"), kw("b")], Value::Int(1)).ok();
        assert_eq!(db.get_in(&[kw("a"), kw("b")]), Some(&Value::Int(1)));
        assert_eq!(db.to_string(), "{:a {:b 1}}");
    }

    #[test]
    fn update_in_sees_nil_for_missing() {
        let mut db = Value::map();
        let r = db.update_in(&[kw("n")], |old| match old {
            Value::Int(i) => Value::Int(i + 1),
            _ => Value::Int(1),
        });
        assert!(r.is_ok());
        assert_eq!(db.get_in(&[kw("n")]), Some(&Value::Int(1)));
    }

    #[test]
    fn vectors_are_indexed_by_integers() {
        let mut v = Value::Vector(crate::value::thin_vec![Value::Int(0)]);
        assert!(v.assoc_in(&[Value::Int(1)], Value::Int(9)).is_ok());
        assert_eq!(v.to_string(), "[0 9]");
        assert_eq!(
            v.assoc_in(&[Value::Int(5)], Value::Nil),
            Err(PathError::BadIndex {
                depth: 0,
                key: Value::Int(5)
            })
        );
    }

    #[test]
    fn writing_through_a_scalar_is_an_error() {
        let mut db = Value::map_from([(kw("a"), Value::Int(1))]);
        assert_eq!(
            db.assoc_in(&[kw("a"), kw("b")], Value::Nil),
            Err(PathError::NotAssociative {
                depth: 1,
                found: "integer"
            })
        );
        assert_eq!(db.to_string(), "{:a 1}");
    }

    #[test]
    fn dissoc_in_removes_and_keeps_order() {
        let mut db = Value::map_from([
            (kw("a"), Value::Int(1)),
            (kw("b"), Value::Int(2)),
            (kw("c"), Value::Int(3)),
        ]);
        assert_eq!(db.dissoc_in(&[kw("b")]), Ok(Some(Value::Int(2))));
        assert_eq!(db.dissoc_in(&[kw("zz"), kw("q")]), Ok(None));
        assert_eq!(db.to_string(), "{:a 1, :c 3}");
    }
}
