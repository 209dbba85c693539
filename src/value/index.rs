//! An index from values to the positions of a table that already holds
//! them (a compiled tree's nodes by id): it stores only the positions, four
//! bytes a slot, and finds a value's position by hashing it and comparing
//! it with the table's value at each candidate position. A map from values
//! to positions would hold a second copy of every value (32 bytes a slot,
//! plus what the values point to).

use std::hash::BuildHasher;

use super::{FastBuildHasher, Value};

/// Positions of a table, found by the value at each position.
#[derive(Debug, Clone, Default)]
pub(crate) struct ValueIndex {
    positions: hashbrown::HashTable<u32>,
}

fn hash(v: &Value) -> u64 {
    FastBuildHasher::default().hash_one(v)
}

impl ValueIndex {
    /// An index with room for `n` positions.
    pub(crate) fn with_capacity(n: usize) -> ValueIndex {
        ValueIndex {
            positions: hashbrown::HashTable::with_capacity(n),
        }
    }

    /// The position whose value (by `value_at`) equals `key`.
    pub(crate) fn get<'t>(
        &self,
        key: &Value,
        value_at: impl Fn(u32) -> Option<&'t Value>,
    ) -> Option<u32> {
        self.positions
            .find(hash(key), |&at| value_at(at) == Some(key))
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
        let entry = self.positions.entry(
            hash(key),
            |&at| value_at(at) == Some(key),
            |&at| value_at(at).map_or(0, hash),
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
}
