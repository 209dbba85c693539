//! [`Map`]: aido's insertion-ordered map of values, compact when small.
//!
//! A db is usually a handful of keyword keys, and so is nearly every map a
//! tree or a tick makes (node options, node memory). Such a map keeps only
//! its entries, in insertion order, and is searched by comparing keys one
//! after the other: a few interned keywords compare faster than one key
//! hashes, and no hash or index is stored. While every key is a keyword, a
//! key is stored as its interned index (4 bytes, an entry 24 bytes where a
//! pair of values is 32); the first key of another type turns the entries
//! into pairs of values, once. Only a map of more than 8 (`SCAN_LIMIT`)
//! entries builds a hash index of positions (a `hashbrown::HashTable<u32>`,
//! 4 bytes a slot plus a control byte), so a large map is searched in
//! constant time, as an `IndexMap` is.
//!
//! The methods are `IndexMap`'s, with the same meanings: insertion order is
//! kept, a key inserted again keeps its position and takes the new value,
//! `shift_remove` keeps the order of the rest, equality ignores order. A
//! key is handed out as a `&Value`: for a keyword key stored as its index,
//! a reference into a process-wide table of keyword values (see
//! `intern::keyword_value`).

use std::hash::BuildHasher;
use std::ops::{Index, IndexMut};

use hashbrown::HashTable;

use super::intern::keyword_value;
use super::{FastBuildHasher, Keyword, Value, keyword_hash};

mod entry;
mod iter;
#[cfg(test)]
mod tests;

pub use entry::{Entry, OccupiedEntry, VacantEntry};
use iter::Either;
pub use iter::{IntoIter, Iter, IterMut, Keys, Values, ValuesMut};

/// Maps of up to this many entries are searched by scanning their keys; a
/// larger one builds its hash index.
pub(crate) const SCAN_LIMIT: usize = 8;

/// A map that shrinks to this many entries drops its index. (Not at
/// [`SCAN_LIMIT`]: a map that goes back and forth across it, such as a db of
/// 8 keys that holds `:aido/locals` during each tick, would otherwise build
/// its index again on every tick.)
const DROP_INDEX_AT: usize = SCAN_LIMIT / 2;

/// Keywords interned at this index or later are stored as values, not as
/// their index, so the table of keyword values stays within 4 MB however
/// many names a process interns.
const KEYWORD_KEYS: u32 = 1 << 16;

/// An insertion-ordered map of [`Value`]s to values (the db is one).
///
/// Its methods are those of `indexmap::IndexMap` that aido uses, with the
/// same meanings. A map of up to 8 entries stores only its entries and
/// finds a key by comparing it with each; a larger one also keeps a hash
/// index of positions. While every key is a keyword, keys are stored as
/// interned indices (4 bytes each). Two maps are equal when they hold equal
/// keys with equal values, in any order.
///
/// ```
/// use aido::value::Map;
/// use aido::Value;
///
/// let mut map = Map::new();
/// map.insert(Value::keyword("hp"), Value::Int(10));
/// map.insert(Value::keyword("mp"), Value::Int(3));
/// map.insert(Value::keyword("hp"), Value::Int(9)); // keeps its place
/// assert_eq!(map.get_index(0), Some((&Value::keyword("hp"), &Value::Int(9))));
/// assert_eq!(map.shift_remove(&Value::keyword("hp")), Some(Value::Int(9)));
/// assert_eq!(Value::from(map).to_string(), "{:mp 3}");
/// ```
#[derive(Clone, Default)]
pub struct Map {
    entries: Entries,
    /// Positions of `entries` by the hash of their keys: present when the
    /// map holds more than [`SCAN_LIMIT`] entries, and kept until it holds
    /// [`DROP_INDEX_AT`] or fewer. Boxed, so that a small map is 40 bytes.
    index: Option<Box<KeyIndex>>,
}

/// The hash index of a large map.
#[derive(Clone, Default)]
struct KeyIndex {
    /// Positions of the entries, by the hash of their keys.
    positions: HashTable<u32>,
    /// Which of the keywords the library interns first (index below 64:
    /// `:aido/error`, `:aido/running`, ...) are keys, a bit each: exact, so
    /// a tick's look-ups of reserved keys that a db does not hold (most of
    /// them, every tick) cost a test of a bit instead of a probe.
    reserved: u64,
}

/// The bit of `k` in [`KeyIndex::reserved`], if it has one.
#[inline(always)]
fn reserved_bit(k: Option<Keyword>) -> u64 {
    match k {
        Some(k) if k.index() < 64 => 1 << k.index(),
        _ => 0,
    }
}

impl KeyIndex {
    /// Whether keyword `k` may be a key: false proves it absent.
    #[inline(always)]
    fn may_hold(&self, k: Keyword) -> bool {
        k.index() >= 64 || self.reserved & (1 << k.index()) != 0
    }
}

/// The entries, in insertion order.
#[derive(Clone)]
enum Entries {
    /// Every key a keyword (interned before [`KEYWORD_KEYS`]).
    Keywords(Vec<(Keyword, Value)>),
    /// Keys of any type.
    Values(Vec<(Value, Value)>),
}

impl Default for Entries {
    fn default() -> Entries {
        Entries::Keywords(Vec::new())
    }
}

/// Runs `$body` with `$e` bound to the entries, whichever their form.
macro_rules! each {
    ($entries:expr, $e:ident => $body:expr) => {
        match $entries {
            Entries::Keywords($e) => $body,
            Entries::Values($e) => $body,
        }
    };
}

/// A key as an entry stores it.
trait Key: Sized {
    /// The key as a value.
    fn value(&self) -> &Value;
    /// The key taken out as a value.
    fn into_value(self) -> Value;
    /// The hash the index files it under (equal for equal keys of either form).
    fn hash_key(&self) -> u64;
    /// The keyword, if the key is one.
    fn keyword(&self) -> Option<Keyword>;
}

impl Key for Keyword {
    #[inline(always)]
    fn value(&self) -> &Value {
        keyword_value(*self)
    }
    fn into_value(self) -> Value {
        Value::Keyword(self)
    }
    #[inline(always)]
    fn hash_key(&self) -> u64 {
        keyword_hash(*self)
    }
    #[inline(always)]
    fn keyword(&self) -> Option<Keyword> {
        Some(*self)
    }
}

impl Key for Value {
    #[inline(always)]
    fn value(&self) -> &Value {
        self
    }
    fn into_value(self) -> Value {
        self
    }
    fn hash_key(&self) -> u64 {
        hash(self)
    }
    #[inline(always)]
    fn keyword(&self) -> Option<Keyword> {
        match self {
            Value::Keyword(k) => Some(*k),
            _ => None,
        }
    }
}

/// What a key that is not there reads as (never returned for a live entry).
static NIL: Value = Value::Nil;

fn hash(key: &Value) -> u64 {
    FastBuildHasher::default().hash_one(key)
}

/// The hash of the key at position `at`, for the index's rehashing.
fn hash_at<K: Key>(entries: &[(K, Value)], at: u32) -> u64 {
    entries.get(at as usize).map_or(0, |(k, _)| k.hash_key())
}

/// The position of the key for which `is` holds: a scan, or with `index`
/// (for a large map) a probe with `key_hash`.
#[inline(always)]
fn position_in<K: Key>(
    entries: &[(K, Value)],
    index: Option<&KeyIndex>,
    key_hash: impl FnOnce() -> u64,
    is: impl Fn(&K) -> bool,
) -> Option<usize> {
    match index {
        Some(index) if entries.len() > SCAN_LIMIT => index
            .positions
            .find(key_hash(), |&at| {
                entries.get(at as usize).is_some_and(|(k, _)| is(k))
            })
            .map(|&at| at as usize),
        _ => entries.iter().position(|(k, _)| is(k)),
    }
}

/// Makes room for one more entry: small maps grow one entry at a time, so
/// a db of five keys holds five; larger ones double.
fn grow<T>(entries: &mut Vec<T>) {
    if entries.len() == entries.capacity() {
        if entries.len() < SCAN_LIMIT {
            entries.reserve_exact(1);
        } else {
            entries.reserve(1);
        }
    }
}

impl Map {
    /// An empty map; it allocates nothing until an entry is inserted.
    pub fn new() -> Map {
        Map::default()
    }

    /// An empty map with room for `n` entries.
    pub fn with_capacity(n: usize) -> Map {
        Map {
            entries: Entries::Keywords(Vec::with_capacity(n)),
            index: None,
        }
    }

    /// A map of `entries`, whose keys the caller has checked are distinct
    /// (the reader does, to report a duplicate where it is written): taken
    /// over as they are, with no look-up per entry.
    pub(crate) fn from_distinct_keywords(entries: Vec<(Keyword, Value)>) -> Map {
        let mut map = if entries.iter().all(|(k, _)| k.index() < KEYWORD_KEYS) {
            Map {
                entries: Entries::Keywords(entries),
                index: None,
            }
        } else {
            Map {
                entries: Entries::Values(
                    entries
                        .into_iter()
                        .map(|(k, v)| (Value::Keyword(k), v))
                        .collect(),
                ),
                index: None,
            }
        };
        if map.len() > SCAN_LIMIT {
            map.build_index();
        }
        map
    }

    /// How many entries.
    #[inline]
    pub fn len(&self) -> usize {
        each!(&self.entries, e => e.len())
    }

    /// Whether the map has no entry.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How many entries the map holds without allocating.
    pub fn capacity(&self) -> usize {
        each!(&self.entries, e => e.capacity())
    }

    /// Removes every entry, keeping the allocated room.
    pub fn clear(&mut self) {
        each!(&mut self.entries, e => e.clear());
        if let Some(index) = &mut self.index {
            index.positions.clear();
            index.reserved = 0;
        }
    }

    /// Makes room for `additional` more entries.
    pub fn reserve(&mut self, additional: usize) {
        each!(&mut self.entries, e => e.reserve(additional));
    }

    /// The position of `key`.
    #[inline]
    pub fn get_index_of(&self, key: &Value) -> Option<usize> {
        match (&self.entries, key) {
            (_, Value::Keyword(k)) => self.keyword_position(*k),
            // Only a keyword equals a keyword.
            (Entries::Keywords(_), _) => None,
            (Entries::Values(e), _) => {
                position_in(e, self.index.as_deref(), || hash(key), |x| x == key)
            }
        }
    }

    /// The position of the keyword key `key`, found without making a
    /// `Value` for it: a scan of a small map, else one probe of the index
    /// with the keyword's hash worked out in place. With
    /// [`Map::keyword_at`], the way for a host to find a db key it reads
    /// often: remember the position, check it, look again only when the
    /// key moved.
    ///
    /// ```
    /// use aido::value::{Keyword, Value};
    ///
    /// let db = aido::read_value("{:hunger 3 :courage 7}").unwrap();
    /// let db = db.as_map().unwrap();
    /// let courage = Keyword::new("courage");
    /// let at = db.keyword_position(courage).unwrap();
    /// assert!(db.keyword_at(at, courage));
    /// assert_eq!(db[at], Value::Int(7));
    /// ```
    #[inline(always)]
    pub fn keyword_position(&self, key: Keyword) -> Option<usize> {
        match &self.index {
            // One probe; the entries' form is looked at only for a candidate.
            Some(index) if self.len() > SCAN_LIMIT => {
                if !index.may_hold(key) {
                    return None;
                }
                index
                    .positions
                    .find(keyword_hash(key), |&at| self.keyword_at(at as usize, key))
                    .map(|&at| at as usize)
            }
            _ => each!(&self.entries, e => e.iter().position(|(k, _)| k.keyword() == Some(key))),
        }
    }

    /// Whether the key at position `at` is the keyword `key`: one
    /// comparison, for look-ups that remember where a key was (see
    /// [`Map::keyword_position`]).
    #[inline(always)]
    pub fn keyword_at(&self, at: usize, key: Keyword) -> bool {
        each!(&self.entries, e => e.get(at).is_some_and(|(k, _)| k.keyword() == Some(key)))
    }

    /// Calls `f` with the position and keyword of every keyword key.
    #[inline]
    pub(crate) fn for_each_keyword(&self, mut f: impl FnMut(usize, Keyword)) {
        each!(&self.entries, e => {
            for (i, (k, _)) in e.iter().enumerate() {
                if let Some(k) = k.keyword() {
                    f(i, k);
                }
            }
        });
    }

    /// Whether `key` is a key.
    pub fn contains_key(&self, key: &Value) -> bool {
        self.get_index_of(key).is_some()
    }

    /// The value of `key`.
    #[inline]
    pub fn get(&self, key: &Value) -> Option<&Value> {
        self.get_index_of(key).and_then(|i| self.value_at(i))
    }

    /// The value of `key`, mutably.
    pub fn get_mut(&mut self, key: &Value) -> Option<&mut Value> {
        let i = self.get_index_of(key)?;
        self.value_at_mut(i)
    }

    /// The key as stored and the value of `key`.
    pub fn get_key_value(&self, key: &Value) -> Option<(&Value, &Value)> {
        self.get_index_of(key).and_then(|i| self.get_index(i))
    }

    /// The position, the key as stored and the value of `key`.
    pub fn get_full(&self, key: &Value) -> Option<(usize, &Value, &Value)> {
        let i = self.get_index_of(key)?;
        self.get_index(i).map(|(k, v)| (i, k, v))
    }

    /// The position, the key as stored and the value of `key`, mutably.
    pub fn get_full_mut(&mut self, key: &Value) -> Option<(usize, &Value, &mut Value)> {
        let i = self.get_index_of(key)?;
        self.get_index_mut(i).map(|(k, v)| (i, k, v))
    }

    /// The entry at position `i`.
    #[inline]
    pub fn get_index(&self, i: usize) -> Option<(&Value, &Value)> {
        each!(&self.entries, e => e.get(i).map(|(k, v)| (k.value(), v)))
    }

    /// The entry at position `i`, its value mutably.
    #[inline]
    pub fn get_index_mut(&mut self, i: usize) -> Option<(&Value, &mut Value)> {
        each!(&mut self.entries, e => e.get_mut(i).map(|(k, v)| (Key::value(&*k), v)))
    }

    /// The value at position `i`.
    #[inline(always)]
    pub(crate) fn value_at(&self, i: usize) -> Option<&Value> {
        each!(&self.entries, e => e.get(i).map(|(_, v)| v))
    }

    /// The value at position `i`, mutably.
    #[inline(always)]
    pub(crate) fn value_at_mut(&mut self, i: usize) -> Option<&mut Value> {
        each!(&mut self.entries, e => e.get_mut(i).map(|(_, v)| v))
    }

    /// The first entry.
    pub fn first(&self) -> Option<(&Value, &Value)> {
        self.get_index(0)
    }

    /// The last entry.
    pub fn last(&self) -> Option<(&Value, &Value)> {
        self.get_index(self.len().checked_sub(1)?)
    }

    /// Inserts `key` with `value`: an existing key keeps its position (and
    /// the key as first stored) and its old value is returned; a new key
    /// goes last.
    pub fn insert(&mut self, key: Value, value: Value) -> Option<Value> {
        self.insert_full(key, value).1
    }

    /// [`Map::insert`], also saying the key's position.
    pub fn insert_full(&mut self, key: Value, value: Value) -> (usize, Option<Value>) {
        match self.get_index_of(&key) {
            Some(i) => match self.value_at_mut(i) {
                Some(old) => (i, Some(std::mem::replace(old, value))),
                None => (self.push(key, value), None),
            },
            None => (self.push(key, value), None),
        }
    }

    /// Appends an entry whose key is known to be absent; its position.
    fn push(&mut self, key: Value, value: Value) -> usize {
        let at = self.len();
        if let Entries::Keywords(e) = &mut self.entries {
            match key {
                Value::Keyword(k) if k.index() < KEYWORD_KEYS => {
                    grow(e);
                    e.push((k, value));
                    self.index_last();
                    return at;
                }
                // The first key of another type: the keys become values.
                _ => {
                    let mut pairs = Vec::with_capacity(e.capacity().max(at + 1));
                    pairs.extend(
                        std::mem::take(e)
                            .into_iter()
                            .map(|(k, v)| (Value::Keyword(k), v)),
                    );
                    self.entries = Entries::Values(pairs);
                }
            }
        }
        if let Entries::Values(e) = &mut self.entries {
            grow(e);
            e.push((key, value));
        }
        self.index_last();
        at
    }

    /// Files the entry just pushed in the index, or builds the index when
    /// the map has just grown past [`SCAN_LIMIT`].
    fn index_last(&mut self) {
        let len = self.len();
        let Map { entries, index } = self;
        match (index, u32::try_from(len - 1)) {
            (Some(index), Ok(pos)) => each!(entries, e => {
                let e: &[(_, Value)] = e;
                index.positions.insert_unique(hash_at(e, pos), pos, |&p| hash_at(e, p));
                index.reserved |= reserved_bit(e.get(pos as usize).and_then(|(k, _)| k.keyword()));
            }),
            // Positions are 32 bits: a map of more than 4 billion entries
            // (which no memory holds) would go on without an index.
            (Some(_), Err(_)) => self.index = None,
            (None, _) if len > SCAN_LIMIT => self.build_index(),
            (None, _) => {}
        }
    }

    /// Builds the index of every entry.
    fn build_index(&mut self) {
        if u32::try_from(self.len()).is_err() {
            return;
        }
        let index = each!(&self.entries, e => {
            let mut index = KeyIndex {
                positions: HashTable::with_capacity(e.capacity()),
                reserved: 0,
            };
            for (at, (k, _)) in (0u32..).zip(e.iter()) {
                index.positions.insert_unique(k.hash_key(), at, |&p| hash_at(e, p));
                index.reserved |= reserved_bit(k.keyword());
            }
            index
        });
        self.index = Some(Box::new(index));
    }

    /// After the entries changed places wholesale (a retain, a sort): the
    /// index built again, or dropped if the map is small.
    fn reindex(&mut self) {
        self.index = None;
        if self.len() > DROP_INDEX_AT {
            self.build_index();
        }
    }

    /// Inserts `key` with `value` at position `i` (or last, if `i` is
    /// beyond the end), shifting the entries from there on; a key already
    /// present moves there (the key as first stored) and its old value is
    /// returned.
    pub fn shift_insert(&mut self, i: usize, key: Value, value: Value) -> Option<Value> {
        let (key, old) = match self.shift_remove_full(&key) {
            // The key as first stored stays (as `insert` keeps it).
            Some((_, stored, old)) => (stored, Some(old)),
            None => (key, None),
        };
        let last = self.push(key, value);
        if i < last {
            each!(&mut self.entries, e => if let Some(moved) = e.get_mut(i..) {
                moved.rotate_right(1);
            });
            if self.index.is_some() {
                self.reindex();
            }
        }
        old
    }

    /// Removes `key`, keeping the order of the other entries (which is why
    /// it costs up to the map's length); its value.
    pub fn shift_remove(&mut self, key: &Value) -> Option<Value> {
        self.shift_remove_full(key).map(|(_, _, v)| v)
    }

    /// [`Map::shift_remove`], also saying where the key was and the key as
    /// stored.
    pub fn shift_remove_full(&mut self, key: &Value) -> Option<(usize, Value, Value)> {
        let i = self.get_index_of(key)?;
        self.shift_remove_index(i).map(|(k, v)| (i, k, v))
    }

    /// Removes the entry at position `i`, keeping the order of the others.
    pub fn shift_remove_index(&mut self, i: usize) -> Option<(Value, Value)> {
        let len = self.len();
        if i >= len {
            return None;
        }
        let Map { entries, index } = self;
        let removed = each!(entries, e => {
            if let Some(index) = index {
                unindex(index, e, i);
                let after = len - i - 1;
                if after <= SCAN_LIMIT {
                    // A few entries after it: each found by its hash.
                    for p in i + 1..len {
                        if let Some(slot) = index.positions.find_mut(hash_at(e, p as u32), |&q| q as usize == p) {
                            *slot -= 1;
                        }
                    }
                } else {
                    for slot in index.positions.iter_mut() {
                        if *slot as usize > i {
                            *slot -= 1;
                        }
                    }
                }
            }
            let (k, v) = e.remove(i);
            (k.into_value(), v)
        });
        if len - 1 <= DROP_INDEX_AT {
            self.index = None;
        }
        Some(removed)
    }

    /// Removes `key` by moving the last entry into its place (the order of
    /// the others changes); its value.
    pub fn swap_remove(&mut self, key: &Value) -> Option<Value> {
        let i = self.get_index_of(key)?;
        let last = self.len() - 1;
        if i == last {
            return self.shift_remove_index(i).map(|(_, v)| v);
        }
        let Map { entries, index } = self;
        let v = each!(entries, e => {
            if let Some(index) = index {
                unindex(index, e, i);
                if let Some(slot) = index.positions.find_mut(hash_at(e, last as u32), |&p| p as usize == last) {
                    *slot = i as u32;
                }
            }
            e.swap_remove(i).1
        });
        if last <= DROP_INDEX_AT {
            self.index = None;
        }
        Some(v)
    }

    /// Keeps only the entries for which `keep` says yes, in their order.
    pub fn retain(&mut self, mut keep: impl FnMut(&Value, &mut Value) -> bool) {
        let before = self.len();
        each!(&mut self.entries, e => e.retain_mut(|(k, v)| keep(Key::value(&*k), v)));
        if self.len() != before {
            self.reindex();
        }
    }

    /// Sorts the entries by `compare` of (key, value, key, value).
    pub fn sort_by(
        &mut self,
        mut compare: impl FnMut(&Value, &Value, &Value, &Value) -> std::cmp::Ordering,
    ) {
        each!(&mut self.entries, e => e.sort_by(|(k1, v1), (k2, v2)| compare(k1.value(), v1, k2.value(), v2)));
        if self.index.is_some() {
            self.reindex();
        }
    }

    /// The entry of `key`, to read, change or insert in one look-up.
    pub fn entry(&mut self, key: Value) -> Entry<'_> {
        match self.get_index_of(&key) {
            Some(index) => Entry::Occupied(OccupiedEntry { map: self, index }),
            None => Entry::Vacant(VacantEntry { map: self, key }),
        }
    }

    /// The entries in order.
    pub fn iter(&self) -> Iter<'_> {
        Iter(match &self.entries {
            Entries::Keywords(e) => Either::Keywords(e.iter()),
            Entries::Values(e) => Either::Values(e.iter()),
        })
    }

    /// The entries in order, their values mutably.
    pub fn iter_mut(&mut self) -> IterMut<'_> {
        IterMut(match &mut self.entries {
            Entries::Keywords(e) => Either::Keywords(e.iter_mut()),
            Entries::Values(e) => Either::Values(e.iter_mut()),
        })
    }

    /// The keys in order.
    pub fn keys(&self) -> Keys<'_> {
        Keys(self.iter())
    }

    /// The values in order.
    pub fn values(&self) -> Values<'_> {
        Values(self.iter())
    }

    /// The values in order, mutably.
    pub fn values_mut(&mut self) -> ValuesMut<'_> {
        ValuesMut(self.iter_mut())
    }

    /// The keys in order, taken out.
    pub fn into_keys(self) -> impl Iterator<Item = Value> {
        self.into_iter().map(|(k, _)| k)
    }

    /// The values in order, taken out.
    pub fn into_values(self) -> impl Iterator<Item = Value> {
        self.into_iter().map(|(_, v)| v)
    }
}

/// Takes position `i` out of `index`.
fn unindex<K: Key>(index: &mut KeyIndex, entries: &[(K, Value)], i: usize) {
    if let Ok(slot) = index
        .positions
        .find_entry(hash_at(entries, i as u32), |&p| p as usize == i)
    {
        slot.remove();
    }
    index.reserved &= !reserved_bit(entries.get(i).and_then(|(k, _)| k.keyword()));
}

/// Equal when both hold equal keys with equal values, in any order (as
/// `IndexMap`'s equality).
impl PartialEq for Map {
    fn eq(&self, other: &Map) -> bool {
        if self.len() != other.len() {
            return false;
        }
        // Maps of one shape usually have their keys in one order: the same
        // position first.
        if let (Entries::Keywords(a), Entries::Keywords(b)) = (&self.entries, &other.entries) {
            return a.iter().zip(0..).all(|((k, v), i)| match b.get(i) {
                Some((k2, v2)) if k2 == k => v2 == v,
                _ => other.keyword_position(*k).and_then(|j| other.value_at(j)) == Some(v),
            });
        }
        self.iter()
            .zip(0..)
            .all(|((k, v), i)| match other.get_index(i) {
                Some((k2, v2)) if k2 == k => v2 == v,
                _ => other.get(k) == Some(v),
            })
    }
}

impl Eq for Map {}

impl std::fmt::Debug for Map {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

/// The value at position `i`; panics if there is none (as a slice does).
impl Index<usize> for Map {
    type Output = Value;
    fn index(&self, i: usize) -> &Value {
        each!(&self.entries, e => &e[i].1)
    }
}

/// The value at position `i`, mutably; panics if there is none.
impl IndexMut<usize> for Map {
    fn index_mut(&mut self, i: usize) -> &mut Value {
        each!(&mut self.entries, e => &mut e[i].1)
    }
}

/// A map of the pairs in order; a later pair with an equal key replaces the
/// value of the earlier one, which keeps its position.
impl FromIterator<(Value, Value)> for Map {
    fn from_iter<I: IntoIterator<Item = (Value, Value)>>(iter: I) -> Map {
        let iter = iter.into_iter();
        let mut map = Map::with_capacity(iter.size_hint().0);
        map.extend(iter);
        map
    }
}

impl Extend<(Value, Value)> for Map {
    fn extend<I: IntoIterator<Item = (Value, Value)>>(&mut self, iter: I) {
        for (k, v) in iter {
            self.insert(k, v);
        }
    }
}

impl From<Map> for Value {
    /// The map as a value, moved (not rebuilt).
    fn from(map: Map) -> Value {
        Value::Map(Box::new(map))
    }
}

impl IntoIterator for Map {
    type Item = (Value, Value);
    type IntoIter = IntoIter;
    fn into_iter(self) -> IntoIter {
        IntoIter(match self.entries {
            Entries::Keywords(e) => Either::Keywords(e.into_iter()),
            Entries::Values(e) => Either::Values(e.into_iter()),
        })
    }
}

impl<'a> IntoIterator for &'a Map {
    type Item = (&'a Value, &'a Value);
    type IntoIter = Iter<'a>;
    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

impl<'a> IntoIterator for &'a mut Map {
    type Item = (&'a Value, &'a mut Value);
    type IntoIter = IterMut<'a>;
    fn into_iter(self) -> IterMut<'a> {
        self.iter_mut()
    }
}
