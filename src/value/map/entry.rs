//! `Map::entry`: a key's entry, to read, change or insert in one look-up.

use super::{Map, NIL, Value};

/// The entry of one key, from [`Map::entry`].
pub enum Entry<'a> {
    /// The key is in the map.
    Occupied(OccupiedEntry<'a>),
    /// The key is not in the map.
    Vacant(VacantEntry<'a>),
}

/// A key that is in the map, from [`Map::entry`].
pub struct OccupiedEntry<'a> {
    pub(super) map: &'a mut Map,
    pub(super) index: usize,
}

/// A key that is not in the map, from [`Map::entry`].
pub struct VacantEntry<'a> {
    pub(super) map: &'a mut Map,
    pub(super) key: Value,
}

impl<'a> Entry<'a> {
    /// The value, inserting `default` if the key is absent.
    pub fn or_insert(self, default: Value) -> &'a mut Value {
        match self {
            Entry::Occupied(e) => e.into_mut(),
            Entry::Vacant(e) => e.insert(default),
        }
    }

    /// The value, inserting what `default` makes if the key is absent.
    pub fn or_insert_with(self, default: impl FnOnce() -> Value) -> &'a mut Value {
        match self {
            Entry::Occupied(e) => e.into_mut(),
            Entry::Vacant(e) => e.insert(default()),
        }
    }

    /// The value, inserting nil if the key is absent.
    pub fn or_default(self) -> &'a mut Value {
        self.or_insert(Value::Nil)
    }

    /// Changes the value if the key is present.
    pub fn and_modify(mut self, f: impl FnOnce(&mut Value)) -> Entry<'a> {
        if let Entry::Occupied(e) = &mut self {
            f(e.get_mut());
        }
        self
    }

    /// The key (as stored, if present).
    pub fn key(&self) -> &Value {
        match self {
            Entry::Occupied(e) => e.key(),
            Entry::Vacant(e) => e.key(),
        }
    }

    /// The key's position (where it would go, if absent).
    pub fn index(&self) -> usize {
        match self {
            Entry::Occupied(e) => e.index,
            Entry::Vacant(e) => e.map.len(),
        }
    }
}

impl<'a> OccupiedEntry<'a> {
    /// The key as stored.
    pub fn key(&self) -> &Value {
        self.map.get_index(self.index).map_or(&NIL, |(k, _)| k)
    }

    /// The key's position.
    pub fn index(&self) -> usize {
        self.index
    }

    /// The value.
    pub fn get(&self) -> &Value {
        &self.map[self.index]
    }

    /// The value, mutably.
    pub fn get_mut(&mut self) -> &mut Value {
        &mut self.map[self.index]
    }

    /// The value, mutably, for as long as the map is borrowed.
    pub fn into_mut(self) -> &'a mut Value {
        &mut self.map[self.index]
    }

    /// Replaces the value; the old one.
    pub fn insert(&mut self, value: Value) -> Value {
        std::mem::replace(self.get_mut(), value)
    }

    /// Removes the entry, keeping the order of the others; its value.
    pub fn shift_remove(self) -> Value {
        self.map
            .shift_remove_index(self.index)
            .map_or(Value::Nil, |(_, v)| v)
    }
}

impl<'a> VacantEntry<'a> {
    /// The key.
    pub fn key(&self) -> &Value {
        &self.key
    }

    /// Where the key would go.
    pub fn index(&self) -> usize {
        self.map.len()
    }

    /// Inserts the key (last) with `value`.
    pub fn insert(self, value: Value) -> &'a mut Value {
        let at = self.map.push(self.key, value);
        &mut self.map[at]
    }
}
