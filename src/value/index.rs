//! An index from values to the positions of a table that already holds
//! them (a compiled tree's nodes by id): it stores only the positions, four
//! bytes a slot, and finds a value's position by hashing it and comparing
//! it with the table's value at each candidate position. A map from values
//! to positions would hold a second copy of every value (32 bytes a slot,
//! plus what the values point to).
//!
//! Strings (a tree's derived ids, `"0.3.1"`) are hashed once each with
//! foldhash under a seed drawn for each index, so that ids chosen to collide
//! (by whoever writes the tree) cannot make the index quadratic; other
//! values hash as in a [`Map`](super::Map), which keys what can be chosen.

use std::hash::{BuildHasher, Hasher};

use super::{FastBuildHasher, Value};

/// Positions of a table, found by the value at each position.
#[derive(Debug, Clone, Default)]
pub(crate) struct ValueIndex {
    positions: hashbrown::HashTable<u32>,
    /// The random seed of this index's string hashes.
    strings: foldhash::fast::RandomState,
}

/// The hash of `v` in an index whose strings are hashed under `strings`.
fn hash(strings: &foldhash::fast::RandomState, v: &Value) -> u64 {
    match v {
        Value::Str(s) => {
            let mut h = strings.build_hasher();
            h.write(s.as_bytes());
            h.finish()
        }
        other => FastBuildHasher::default().hash_one(other),
    }
}

impl ValueIndex {
    /// An index with room for `n` positions.
    pub(crate) fn with_capacity(n: usize) -> ValueIndex {
        ValueIndex {
            positions: hashbrown::HashTable::with_capacity(n),
            strings: foldhash::fast::RandomState::default(),
        }
    }

    /// The position whose value (by `value_at`) equals `key`.
    pub(crate) fn get<'t>(
        &self,
        key: &Value,
        value_at: impl Fn(u32) -> Option<&'t Value>,
    ) -> Option<u32> {
        self.positions
            .find(hash(&self.strings, key), |&at| value_at(at) == Some(key))
            .copied()
    }

    /// Adds `position` for `key`, unless a position already indexed has a
    /// value equal to `key`: then that position, and nothing is added.
    /// `value_at` need only know the positions already indexed.
    pub(crate) fn insert<'t>(
        &mut self,
        key: &Value,
        position: u32,
        value_at: impl Fn(u32) -> Option<&'t Value>,
    ) -> Option<u32> {
        let strings = &self.strings;
        let entry = self.positions.entry(
            hash(strings, key),
            |&at| value_at(at) == Some(key),
            |&at| value_at(at).map_or(0, |v| hash(strings, v)),
        );
        match entry {
            hashbrown::hash_table::Entry::Occupied(first) => Some(*first.get()),
            hashbrown::hash_table::Entry::Vacant(slot) => {
                slot.insert(position);
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_positions_by_the_values_of_the_table() {
        let table: Vec<Value> = (0..1000)
            .map(|i| Value::string(&format!("0.{i}")))
            .collect();
        let at = |i: u32| table.get(i as usize);
        let mut index = ValueIndex::with_capacity(4);
        for (i, v) in table.iter().enumerate() {
            assert_eq!(index.insert(v, i as u32, at), None);
        }
        assert_eq!(index.insert(&Value::string("0.7"), 5000, at), Some(7));
        assert_eq!(index.get(&Value::string("0.999"), at), Some(999));
        assert_eq!(index.get(&Value::string("0.1000"), at), None);
        assert_eq!(index.get(&Value::Int(3), at), None);
    }

    #[test]
    fn ids_that_share_all_but_their_last_bytes_spread_over_the_table() {
        // Strings a weak hash would pile into one run of slots (equal but
        // for the high bits of their last word): with a keyed hash each
        // insertion compares with about one other id, not with all before it.
        let table: Vec<Value> = (0..20_000u32)
            .map(|i| {
                Value::string(&format!(
                    "0.0.0.0.{:0>8}{}",
                    0,
                    char::from_u32(0x4e00 + i).unwrap()
                ))
            })
            .collect();
        let comparisons = std::cell::Cell::new(0usize);
        let at = |i: u32| {
            comparisons.set(comparisons.get() + 1);
            table.get(i as usize)
        };
        let mut index = ValueIndex::with_capacity(table.len());
        for (i, v) in table.iter().enumerate() {
            assert_eq!(index.insert(v, i as u32, at), None);
        }
        assert!(comparisons.get() < 2 * table.len(), "{}", comparisons.get());
    }
}
