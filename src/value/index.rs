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
    hasher: IndexHasher,
}

/// How a [`ValueIndex`] hashes values: strings under the random seed of
/// the index.
#[derive(Debug, Clone, Default)]
pub(crate) struct IndexHasher {
    strings: foldhash::fast::RandomState,
}

impl IndexHasher {
    /// The hash of `v`.
    pub(crate) fn hash_value(&self, v: &Value) -> u64 {
        hash(&self.strings, v)
    }

    /// The hash of the string whose text is `bytes` (equal to
    /// [`IndexHasher::hash_value`] of that string): a value kept as its
    /// text is indexed without being made.
    pub(crate) fn hash_text(&self, bytes: &[u8]) -> u64 {
        hash_bytes(&self.strings, bytes)
    }
}

/// The hash of `v` in an index whose strings are hashed under `strings`.
fn hash(strings: &foldhash::fast::RandomState, v: &Value) -> u64 {
    match v {
        Value::Str(s) => hash_bytes(strings, s.as_bytes()),
        other => FastBuildHasher::default().hash_one(other),
    }
}

/// The hash of a string's bytes under `strings`.
fn hash_bytes(strings: &foldhash::fast::RandomState, bytes: &[u8]) -> u64 {
    let mut h = strings.build_hasher();
    h.write(bytes);
    h.finish()
}

impl ValueIndex {
    /// An index with room for `n` positions.
    pub(crate) fn with_capacity(n: usize) -> ValueIndex {
        ValueIndex {
            positions: hashbrown::HashTable::with_capacity(n),
            hasher: IndexHasher::default(),
        }
    }

    /// How this index hashes values.
    pub(crate) fn hasher(&self) -> &IndexHasher {
        &self.hasher
    }

    /// The position whose value has the hash `hash` and for which `is_key`
    /// holds.
    pub(crate) fn get(&self, hash: u64, is_key: impl Fn(u32) -> bool) -> Option<u32> {
        self.positions.find(hash, |&at| is_key(at)).copied()
    }

    /// Adds `position`, whose value has the hash `hash`, unless a position
    /// already indexed holds an equal value (`is_key`): then that position,
    /// and nothing is added. `hash_at` gives the hash of the value at a
    /// position already indexed (when the table grows), by this index's
    /// hasher.
    pub(crate) fn insert(
        &mut self,
        hash: u64,
        position: u32,
        is_key: impl Fn(u32) -> bool,
        hash_at: impl Fn(&IndexHasher, u32) -> u64,
    ) -> Option<u32> {
        let hasher = &self.hasher;
        let entry = self
            .positions
            .entry(hash, |&at| is_key(at), |&at| hash_at(hasher, at));
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

    /// Indexes `v` at `position` of `table`.
    fn insert(index: &mut ValueIndex, table: &[Value], v: &Value, position: u32) -> Option<u32> {
        let hash = index.hasher().hash_value(v);
        index.insert(
            hash,
            position,
            |at| table.get(at as usize) == Some(v),
            |hasher, at| table.get(at as usize).map_or(0, |v| hasher.hash_value(v)),
        )
    }

    /// The position of `v` in `table`.
    fn get(index: &ValueIndex, table: &[Value], v: &Value) -> Option<u32> {
        index.get(index.hasher().hash_value(v), |at| {
            table.get(at as usize) == Some(v)
        })
    }

    #[test]
    fn finds_positions_by_the_values_of_the_table() {
        let table: Vec<Value> = (0..1000)
            .map(|i| Value::string(&format!("0.{i}")))
            .collect();
        let mut index = ValueIndex::with_capacity(4);
        for (i, v) in table.iter().enumerate() {
            assert_eq!(insert(&mut index, &table, v, i as u32), None);
        }
        assert_eq!(
            insert(&mut index, &table, &Value::string("0.7"), 5000),
            Some(7)
        );
        assert_eq!(get(&index, &table, &Value::string("0.999")), Some(999));
        assert_eq!(get(&index, &table, &Value::string("0.1000")), None);
        assert_eq!(get(&index, &table, &Value::Int(3)), None);
        // A string's text hashes as the string does.
        let hasher = index.hasher();
        assert_eq!(
            hasher.hash_text(b"0.3"),
            hasher.hash_value(&Value::string("0.3"))
        );
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
        let mut index = ValueIndex::with_capacity(table.len());
        for (i, v) in table.iter().enumerate() {
            let is_key = |at: u32| {
                comparisons.set(comparisons.get() + 1);
                table.get(at as usize) == Some(v)
            };
            let hash = index.hasher().hash_value(v);
            let hash_at = |hasher: &IndexHasher, at: u32| {
                table.get(at as usize).map_or(0, |v| hasher.hash_value(v))
            };
            assert_eq!(index.insert(hash, i as u32, is_key, hash_at), None);
        }
        assert!(comparisons.get() < 2 * table.len(), "{}", comparisons.get());
    }
}
