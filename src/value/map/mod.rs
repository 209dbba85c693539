//! [`Map`]: aido's insertion-ordered map of values, compact when small.
//!
//! A db is usually a handful of keyword keys, and so is nearly every map a
//! tree or a tick makes (node options, node memory). Such a map keeps only
//! its entries, in insertion order, and is searched by comparing keys one
//! after the other: a few interned keywords compare faster than one key
//! hashes, and no hash or index is stored. The map itself is 24 bytes: a
//! boxed slice of slots (its pointer and its room) and an optional box for
//! what only some maps need.
//!
//! A slot is 24 bytes: a key's code (4 bytes), 4 bytes that slot 0 uses
//! for the map's length and slot 1 for the map's filter of keyword keys
//! (below), and a 16-byte value. A keyword key (interned
//! before `KEYWORD_KEYS`) is coded as its interned index; room not in use
//! is a vacant code that no key has, so a keyword is looked for by
//! comparing codes over the whole slice, without reading the length. The
//! first key of another type gives the map a list of every key as a value
//! (in the box, beside the slots), once; its slots keep the keywords'
//! codes, so keyword look-ups stay the same. Only a map of more than 8
//! (`SCAN_LIMIT`) entries builds a hash index of positions (a
//! `hashbrown::HashTable<u32>`, 4 bytes a slot plus a control byte, in the
//! box), so a large map is searched in constant time, as an `IndexMap` is.
//!
//! The filter proves a keyword absent without a search: bit `c % 32` is
//! set for every key code `c` of a keyword key. A map without an index
//! keeps it exact (every mutation sets the bit of a key it adds; a
//! `shift_remove` clears the bit of the key it removes unless a key that
//! stays shares it; the other mutations that remove or move keys work it
//! out again from the keys); a map
//! with an index keeps a superset (a bit is set by each key added, and
//! cleared only when the filter is worked out again), as a false "maybe"
//! costs only the search a look-up makes anyway. A look-up of an absent
//! keyword (a tree's `[:present? {:key :enemy}]` over a db without it)
//! then costs a test of a bit. A map with room for one entry has no
//! slot 1 and compares its one key instead.
//!
//! The methods are `IndexMap`'s, with the same meanings: insertion order is
//! kept, a key inserted again keeps its position and takes the new value,
//! `shift_remove` keeps the order of the rest, equality ignores order. A
//! key is handed out as a `&Value`: for a keyword key stored as its index,
//! a reference into a process-wide table of keyword values (see
//! `intern::keyword_value`). A map holds at most `u32::MAX` entries (its
//! length is 32 bits; such a map would take 100 GB).

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

/// The code of a key that is not a keyword, kept as a value in
/// [`More::keys`]. (Keywords interned at this index and the next, after
/// more than four billion names, share the codes [`OTHER`] and [`VACANT`]
/// and are not found by look-ups of keywords; a read never interns them,
/// see `intern::max_interned_names`.)
const OTHER: u32 = u32::MAX - 1;

/// The code of a slot not in use.
const VACANT: u32 = u32::MAX;

/// The most entries a map holds (its length is kept in 32 bits).
const MAX_LEN: usize = u32::MAX as usize;

/// An insertion-ordered map of [`Value`]s to values (the db is one).
///
/// Its methods are those of `indexmap::IndexMap` that aido uses, with the
/// same meanings. A map is 24 bytes; one of up to 8 entries stores only its
/// entries (24 bytes each while every key is a keyword, stored as its
/// interned index) and finds a key by comparing it with each; a larger one
/// also keeps a hash index of positions. Two maps are equal when they hold
/// equal keys with equal values, in any order.
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
    /// The entries in order, then vacant room; slot 0 holds the length.
    slots: Box<[Slot]>,
    /// The keys as values and the index, for the maps that need them.
    more: Option<Box<More>>,
}

/// One entry, or room for one.
#[derive(Clone)]
struct Slot {
    /// The key's code: a keyword's interned index, [`OTHER`] for a key
    /// of another type (kept in [`More::keys`]), [`VACANT`] for room not in
    /// use. (A keyword interned at [`KEYWORD_KEYS`] or later is kept in
    /// [`More::keys`] too, and coded by its index.)
    key: u32,
    /// In slot 0, the map's length; in slot 1, the filter of its keyword
    /// keys (see [`filter_bit`]); 0 in every other slot.
    len: u32,
    /// The value (nil in a vacant slot).
    value: Value,
}

impl Slot {
    /// Room not in use.
    const fn vacant() -> Slot {
        Slot {
            key: VACANT,
            len: 0,
            value: Value::Nil,
        }
    }

    /// The keyword key, if the slot stores one as its index and the table
    /// of keyword values has it.
    #[inline(always)]
    fn keyword(&self) -> Option<Keyword> {
        (self.key < KEYWORD_KEYS).then_some(Keyword::from_index(self.key))
    }
}

/// What some maps need beyond their slots.
#[derive(Clone, Default)]
struct More {
    /// Every key as a value, in order, once the map holds a key that is not
    /// a keyword interned before [`KEYWORD_KEYS`] (and until it is empty);
    /// empty while every key is such a keyword.
    keys: Vec<Value>,
    /// Present when the map holds more than [`SCAN_LIMIT`] entries, and kept
    /// until it holds [`DROP_INDEX_AT`] or fewer.
    index: Option<KeyIndex>,
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

/// The bit of key code `code` in a map's filter of keyword keys (kept in
/// slot 1's spare word): bit `code % 32` for a keyword's code, none for a
/// key kept as a value or for vacant room. Keywords are interned in the
/// order they are first read, so the few keys of one db usually have
/// codes close together and bits of their own.
#[inline(always)]
const fn filter_bit(code: u32) -> u32 {
    if code < OTHER { 1 << (code % 32) } else { 0 }
}

/// What a key that is not there reads as (never returned for a live entry).
static NIL: Value = Value::Nil;

fn hash(key: &Value) -> u64 {
    FastBuildHasher::default().hash_one(key)
}

/// The key at position `at` of `slots`, whose keys as values (if the map
/// keeps them) are `keys`.
#[inline(always)]
fn key_in<'a>(slots: &[Slot], keys: &'a [Value], at: usize) -> &'a Value {
    match slots.get(at).and_then(Slot::keyword) {
        Some(k) => keyword_value(k),
        None => keys.get(at).unwrap_or(&NIL),
    }
}

/// The hash of the key at position `at`, for the index (equal for equal
/// keys, whether stored as a code or as a value).
fn hash_at(slots: &[Slot], keys: &[Value], at: u32) -> u64 {
    match slots.get(at as usize).and_then(Slot::keyword) {
        Some(k) => keyword_hash(k),
        None => keys.get(at as usize).map_or(0, hash),
    }
}

/// The code a key is stored under.
fn code_of(key: &Value) -> u32 {
    match key {
        Value::Keyword(k) if k.index() < OTHER => k.index(),
        _ => OTHER,
    }
}

/// Whether a map that holds `key` keeps its keys as values: a key that is
/// not a keyword the table of keyword values has.
fn needs_value_keys(key: &Value) -> bool {
    !matches!(key, Value::Keyword(k) if k.index() < KEYWORD_KEYS)
}

impl Map {
    /// An empty map; it allocates nothing until an entry is inserted.
    pub fn new() -> Map {
        Map::default()
    }

    /// An empty map with room for `n` entries.
    pub fn with_capacity(n: usize) -> Map {
        let mut map = Map::new();
        map.set_capacity(n.min(MAX_LEN));
        map
    }

    /// A map of the `len` pairs of `pairs`, whose keys the caller has
    /// checked are distinct (the reader does, to report a duplicate where
    /// it is written): each pair goes straight into its slot, in one pass
    /// that also works out the filter, with no look-up, into room for
    /// exactly `len` entries. (Should `pairs` hold another number, the map
    /// holds what it holds.)
    pub(crate) fn from_distinct_keywords(
        len: usize,
        pairs: impl IntoIterator<Item = (Keyword, Value)>,
    ) -> Map {
        let mut slots = Vec::with_capacity(len.min(MAX_LEN));
        let mut filter = 0;
        let mut pairs = pairs.into_iter();
        while let Some((k, value)) = pairs.next() {
            if k.index() >= KEYWORD_KEYS || slots.len() == MAX_LEN {
                // A keyword interned too late to be coded by its index
                // alone (the map keeps its keys as values), or a map
                // beyond its limit: built by inserting, as any map.
                let taken = slots
                    .into_iter()
                    .map(|s: Slot| (Value::Keyword(Keyword::from_index(s.key)), s.value));
                let rest = std::iter::once((k, value)).chain(pairs);
                return taken
                    .chain(rest.map(|(k, v)| (Value::Keyword(k), v)))
                    .collect();
            }
            filter |= filter_bit(k.index());
            slots.push(Slot {
                key: k.index(),
                len: 0,
                value,
            });
        }
        let len = slots.len();
        let mut map = Map {
            slots: slots.into_boxed_slice(),
            more: None,
        };
        map.set_len(len);
        map.set_filter(filter);
        if len > SCAN_LIMIT {
            map.build_index();
        }
        map
    }

    /// How many entries.
    #[inline(always)]
    pub fn len(&self) -> usize {
        self.slots.first().map_or(0, |s| s.len as usize)
    }

    /// Sets the length kept in slot 0 (`len` is at most the room, itself
    /// at most [`MAX_LEN`]).
    #[inline(always)]
    fn set_len(&mut self, len: usize) {
        if let Some(first) = self.slots.first_mut() {
            first.len = len as u32;
        }
    }

    /// The length, taken out of slot 0 before the slots change places (put
    /// it back with [`Map::set_len`]).
    fn take_len(&mut self) -> usize {
        match self.slots.first_mut() {
            Some(first) => std::mem::take(&mut first.len) as usize,
            None => 0,
        }
    }

    /// The filter of keyword keys, taken out of slot 1 before the slots
    /// change places (put back with [`Map::refilter`] or
    /// [`Map::set_filter`]), so that no other slot keeps it.
    fn take_filter(&mut self) -> u32 {
        match self.slots.get_mut(1) {
            Some(second) => std::mem::take(&mut second.len),
            None => 0,
        }
    }

    /// Sets the filter of keyword keys kept in slot 1 (if the room has one).
    #[inline(always)]
    fn set_filter(&mut self, filter: u32) {
        if let Some(second) = self.slots.get_mut(1) {
            second.len = filter;
        }
    }

    /// Adds the bit of key code `code` to the filter: what an insertion
    /// does.
    #[inline(always)]
    fn add_to_filter(&mut self, code: u32) {
        if let Some(second) = self.slots.get_mut(1) {
            second.len |= filter_bit(code);
        }
    }

    /// The filter worked out from the keys in use: exact.
    fn exact_filter(&self) -> u32 {
        self.live().iter().fold(0, |f, s| f | filter_bit(s.key))
    }

    /// Works the filter out again from the keys in use, after keys were
    /// removed or moved or the room grew (a cost of the order of the
    /// change's own).
    fn refilter(&mut self) {
        let filter = self.exact_filter();
        self.set_filter(filter);
    }

    /// Whether keyword `key` is proved not to be a key, without a search:
    /// its bit is clear in the filter, or (a map with room for at most
    /// one entry) the one slot holds another key. False says only "maybe":
    /// a search answers. (What a hinted look-up tries when its hint
    /// misses, before it searches: see `tree::KeyPath::get`.)
    #[inline(always)]
    pub(crate) fn lacks_keyword(&self, key: Keyword) -> bool {
        match self.slots.get(1) {
            // (A keyword's code is its index: no test for `OTHER`, which no
            // keyword a read interns reaches.)
            Some(second) => second.len & (1 << (key.index() % 32)) == 0,
            None => self.slots.first().is_none_or(|s| s.key != key.index()),
        }
    }

    /// [`Map::lacks_keyword`] after a look-up of `key` at slot `at` found
    /// another key there: whether the filter proves `key` absent, asked
    /// only when `at` is past slot 0 and in the map, so that the filter's
    /// slot (1) is known to exist without a test of its own; false
    /// ("maybe") for any other `at`.
    #[inline(always)]
    pub(crate) fn lacks_keyword_past(&self, at: usize, key: Keyword) -> bool {
        at != 0 && at < self.slots.len() && self.lacks_keyword(key)
    }

    /// Whether the map has no entry.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How many entries the map holds without allocating.
    pub fn capacity(&self) -> usize {
        self.slots.len()
    }

    /// The slots in use.
    #[inline(always)]
    fn live(&self) -> &[Slot] {
        self.slots.get(..self.len()).unwrap_or_default()
    }

    /// The keys as values, if the map keeps them (else empty).
    #[inline(always)]
    fn value_keys(&self) -> &[Value] {
        self.more.as_deref().map_or(&[], |m| &m.keys)
    }

    /// Whether the map keeps its keys as values (it holds a key that is
    /// not a keyword coded by its index).
    #[inline(always)]
    fn keeps_keys(&self) -> bool {
        !self.value_keys().is_empty()
    }

    /// The index, if the map has one.
    #[inline(always)]
    fn index(&self) -> Option<&KeyIndex> {
        self.more.as_deref().and_then(|m| m.index.as_ref())
    }

    /// The box of what some maps need, made if absent.
    fn more_mut(&mut self) -> &mut More {
        self.more.get_or_insert_with(Box::default)
    }

    /// Drops the index, and the box with it when it holds nothing else.
    fn drop_index(&mut self) {
        if let Some(more) = &mut self.more {
            more.index = None;
            if more.keys.capacity() == 0 {
                self.more = None;
            }
        }
    }

    /// Changes the room to `cap` slots (at least the length), keeping the
    /// entries.
    fn set_capacity(&mut self, cap: usize) {
        let len = self.take_len();
        let mut slots = std::mem::take(&mut self.slots).into_vec();
        if cap > slots.len() {
            slots.reserve_exact(cap - slots.len());
            slots.resize_with(cap, Slot::vacant);
        }
        self.slots = slots.into_boxed_slice();
        self.set_len(len);
        // A map that had room for one entry gains slot 1, and its filter.
        self.refilter();
        if self.keeps_keys() {
            let more = self.more_mut();
            more.keys.reserve_exact(cap.saturating_sub(more.keys.len()));
        }
    }

    /// Makes room for one more entry: small maps grow one entry at a time,
    /// so a db of five keys holds five; larger ones double.
    fn grow(&mut self) {
        let len = self.len();
        if len == self.capacity() {
            let cap = if len < SCAN_LIMIT { len + 1 } else { len * 2 };
            self.set_capacity(cap.min(MAX_LEN));
        }
    }

    /// Drops the entries and their room, leaving an empty map: what
    /// dropping a map's value does before its box goes. The box of what
    /// some maps need is dropped only if there is one (a test in place
    /// where dropping the field is a call).
    #[inline]
    pub(crate) fn drop_entries(&mut self) {
        drop(std::mem::take(&mut self.slots));
        if self.more.is_some() {
            self.more = None;
        }
    }

    /// Removes every entry, keeping the allocated room.
    pub fn clear(&mut self) {
        // The length and the filter go with the slots: 0, exact.
        self.slots.fill_with(Slot::vacant);
        if let Some(more) = &mut self.more {
            more.keys.clear();
            if let Some(index) = &mut more.index {
                index.positions.clear();
                index.reserved = 0;
            }
        }
    }

    /// Makes room for `additional` more entries.
    pub fn reserve(&mut self, additional: usize) {
        let want = self.len().saturating_add(additional).min(MAX_LEN);
        if want > self.capacity() {
            self.set_capacity(want.max(self.capacity().saturating_mul(2).min(MAX_LEN)));
        }
    }

    /// The position of `key`.
    #[inline]
    pub fn get_index_of(&self, key: &Value) -> Option<usize> {
        match key {
            Value::Keyword(k) => self.keyword_position(*k),
            _ => self.value_key_position(key),
        }
    }

    /// The position of a key that the slots do not code: a scan of the keys
    /// as values, or a probe of the index.
    fn value_key_position(&self, key: &Value) -> Option<usize> {
        let keys = self.value_keys();
        if keys.is_empty() {
            return None;
        }
        match self.index() {
            Some(index) => index
                .positions
                .find(hash(key), |&at| keys.get(at as usize) == Some(key))
                .map(|&at| at as usize),
            None => keys.iter().position(|k| k == key),
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
        match self.index() {
            // One probe; the slot is looked at only for a candidate.
            Some(index) => {
                if !index.may_hold(key) {
                    return None;
                }
                index
                    .positions
                    .find(keyword_hash(key), |&at| self.keyword_at(at as usize, key))
                    .map(|&at| at as usize)
            }
            // Vacant room has a code no keyword has: no length needed.
            None if self.lacks_keyword(key) => None,
            None => self.slots.iter().position(|s| s.key == key.index()),
        }
    }

    /// Whether the key at position `at` is the keyword `key`: one
    /// comparison, for look-ups that remember where a key was (see
    /// [`Map::keyword_position`]).
    #[inline(always)]
    pub fn keyword_at(&self, at: usize, key: Keyword) -> bool {
        self.slots.get(at).is_some_and(|s| s.key == key.index())
    }

    /// Which of the keywords in `wanted` are keys: `wanted` and the result
    /// hold a bit for each keyword the library interns first (index below
    /// 64: `:aido/error`, `:aido/running`, ... see `intern::RESERVED`), bit
    /// `i` for the keyword of index `i`. Exact: a clear bit proves the key
    /// absent, so a tick learns which reserved keys a db holds without a
    /// look-up of each. A large map keeps the bits in its index; a small
    /// one finds them in one pass over its room (vacant room has a code no
    /// keyword has, so the length is not read), a comparison a key in the
    /// usual case.
    #[inline(always)]
    pub(crate) fn reserved_keywords(&self, wanted: u64) -> u64 {
        // The filter of keyword keys answers first: bit `i % 32` of each
        // wanted keyword clear proves them all absent with one test (the
        // usual db, which holds none), in a map of any size; a "maybe"
        // (one is there, or a user keyword shares its bit) asks exactly.
        let wanted_bits = (wanted as u32) | ((wanted >> 32) as u32);
        if let Some(second) = self.slots.get(1)
            && second.len & wanted_bits == 0
        {
            return 0;
        }
        self.reserved_keywords_exactly(wanted)
    }

    /// [`Map::reserved_keywords`] past the filter: the index's bits, or a
    /// pass over a small map's room.
    #[inline(always)]
    fn reserved_keywords_exactly(&self, wanted: u64) -> u64 {
        if let Some(index) = self.index() {
            return index.reserved & wanted;
        }
        let mut found = 0u64;
        for slot in self.slots.iter() {
            found |= 1u64.checked_shl(slot.key).unwrap_or(0);
        }
        found & wanted
    }

    /// Calls `f` with the position and keyword of every keyword key.
    #[inline]
    pub(crate) fn for_each_keyword(&self, mut f: impl FnMut(usize, Keyword)) {
        // Every code but two (another key's, vacant room's) is a keyword's
        // index: the whole room is passed over, without reading the length.
        for (i, slot) in self.slots.iter().enumerate() {
            if slot.key < OTHER {
                f(i, Keyword::from_index(slot.key));
            }
        }
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
        let slot = self.live().get(i)?;
        Some((key_in(&self.slots, self.value_keys(), i), &slot.value))
    }

    /// The entry at position `i`, its value mutably.
    #[inline]
    pub fn get_index_mut(&mut self, i: usize) -> Option<(&Value, &mut Value)> {
        let len = self.len();
        let Map { slots, more } = self;
        let keys = more.as_deref().map_or(&[][..], |m| &m.keys);
        let key = key_in(slots, keys, i);
        slots
            .get_mut(..len)
            .and_then(|s| s.get_mut(i))
            .map(|s| (key, &mut s.value))
    }

    /// The value at position `i`, a position a look-up found: read
    /// without the length, so a position in the room past the entries
    /// reads as nil (a vacant slot's value), and one past the room as none.
    #[inline(always)]
    pub(crate) fn value_at(&self, i: usize) -> Option<&Value> {
        self.slots.get(i).map(|s| &s.value)
    }

    /// The value at position `i`, mutably: as [`Map::value_at`], for a
    /// position a look-up found.
    #[inline(always)]
    pub(crate) fn value_at_mut(&mut self, i: usize) -> Option<&mut Value> {
        self.slots.get_mut(i).map(|s| &mut s.value)
    }

    /// The value of keyword `key` if it is the key at position `at`: a
    /// hinted look-up's hit (see `tree::SlotHint`), one bounds check and one
    /// comparison of key codes. A position past the entries holds vacant
    /// room, whose code no keyword has.
    #[inline(always)]
    pub(crate) fn keyword_value_at(&self, at: usize, key: Keyword) -> Option<&Value> {
        match self.slots.get(at) {
            Some(slot) if slot.key == key.index() => Some(&slot.value),
            _ => None,
        }
    }

    /// [`Map::keyword_value_at`], the value to change.
    #[inline(always)]
    pub(crate) fn keyword_value_at_mut(&mut self, at: usize, key: Keyword) -> Option<&mut Value> {
        match self.slots.get_mut(at) {
            Some(slot) if slot.key == key.index() => Some(&mut slot.value),
            _ => None,
        }
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

    /// Appends an entry whose key is known to be absent; its position. (A
    /// map of [`MAX_LEN`] entries takes no more: the position returned is
    /// then its length, where no entry is.)
    ///
    /// What a caller that has just searched uses instead of
    /// [`Map::insert_full`], which would search again. The usual case, a
    /// keyword key coded by its index in a small map that keeps no keys as
    /// values, is a store and a length; the rest goes to
    /// [`Map::push_other`].
    #[inline]
    pub(crate) fn push(&mut self, key: Value, value: Value) -> usize {
        let at = self.len();
        if let Value::Keyword(k) = &key
            && k.index() < KEYWORD_KEYS
            && self.more.is_none()
            && at < SCAN_LIMIT
        {
            let code = k.index();
            // A keyword owns nothing: no call to drop it.
            std::mem::forget(key);
            self.grow();
            if let Some(slot) = self.slots.get_mut(at) {
                slot.key = code;
                // The room held nil: nothing to drop.
                std::mem::forget(std::mem::replace(&mut slot.value, value));
                self.set_len(at + 1);
                self.add_to_filter(code);
            }
            return at;
        }
        self.push_other(key, value)
    }

    /// [`Map::push`] of the keyword `key`, in line: into a map without its
    /// box that has room for it (a slot left vacant, as by a removal of
    /// the last entry, [`Map::remove_tail_keyword`]), a store, a length and
    /// a bit of the filter; anything else goes to [`Map::push`]. The start
    /// after a halt puts `:aido/memory` back so, when its new state is not
    /// a count written in place ([`Map::push_keyword_swap`]).
    #[inline(always)]
    pub(crate) fn push_keyword(&mut self, key: Keyword, value: Value) -> usize {
        let code = key.index();
        if let Some((at, room)) = self.keyword_room(code) {
            // The room held nil: nothing to drop.
            std::mem::forget(std::mem::replace(room, value));
            self.filled_room(at, code);
            return at;
        }
        self.push(Value::Keyword(key), value)
    }

    /// [`Map::push_keyword`] of the value in `value`, moved into the map
    /// by a swap with the room's nil, which `value` is left holding: the
    /// value goes from place to place, never through the stack. The usual
    /// start after a halt puts the parked `:aido/running`, and
    /// `:aido/memory` with its count written in place, back so.
    #[inline(always)]
    pub(crate) fn push_keyword_swap(&mut self, key: Keyword, value: &mut Value) -> usize {
        let code = key.index();
        if let Some((at, room)) = self.keyword_room(code) {
            // The room held nil, which `value` takes.
            std::mem::swap(room, value);
            self.filled_room(at, code);
            return at;
        }
        self.push(Value::Keyword(key), std::mem::take(value))
    }

    /// The in-line case of [`Map::push_keyword`] and
    /// [`Map::push_keyword_swap`]: in a map without its box, the room a
    /// slot left vacant at the end gives the keyword coded `code`, with its
    /// position; the caller puts the value in and [`Map::filled_room`]
    /// files it. `None` when there is no such room.
    #[inline(always)]
    fn keyword_room(&mut self, code: u32) -> Option<(usize, &mut Value)> {
        let at = self.len();
        if code >= KEYWORD_KEYS || self.more.is_some() || at >= SCAN_LIMIT {
            return None;
        }
        let slot = self.slots.get_mut(at)?;
        slot.key = code;
        Some((at, &mut slot.value))
    }

    /// Files the entry just put in [`Map::keyword_room`]'s room at `at`:
    /// the map's length and the key's bit of the filter.
    #[inline(always)]
    fn filled_room(&mut self, at: usize, code: u32) {
        self.set_len(at + 1);
        self.add_to_filter(code);
    }

    /// [`Map::push`] of a key kept as a value, or into a map that keeps its
    /// keys as values or has (or is about to have) an index.
    #[inline(never)]
    fn push_other(&mut self, key: Value, value: Value) -> usize {
        let at = self.len();
        let code = code_of(&key);
        let value_key = needs_value_keys(&key);
        if value_key && !self.keeps_keys() && at < MAX_LEN {
            // The first key of another type: every key kept as a value too.
            let keys: Vec<Value> = (0..at)
                .map(|i| key_in(&self.slots, &[], i).clone())
                .collect();
            let more = self.more_mut();
            more.keys = keys;
            more.keys.reserve_exact(1);
        }
        self.grow();
        let Some(slot) = self.slots.get_mut(at) else {
            return at;
        };
        slot.key = code;
        // The room held nil: nothing to drop.
        std::mem::forget(std::mem::replace(&mut slot.value, value));
        self.set_len(at + 1);
        self.add_to_filter(code);
        if let Some(more) = &mut self.more
            && (value_key || !more.keys.is_empty())
        {
            more.keys.push(key);
        }
        self.index_last();
        at
    }

    /// Files the entry just pushed in the index, or builds the index when
    /// the map has just grown past [`SCAN_LIMIT`].
    fn index_last(&mut self) {
        let len = self.len();
        let Map { slots, more } = self;
        match more.as_deref_mut() {
            Some(More {
                keys,
                index: Some(index),
            }) => {
                let pos = (len - 1) as u32;
                index
                    .positions
                    .insert_unique(hash_at(slots, keys, pos), pos, |&p| hash_at(slots, keys, p));
                index.reserved |= reserved_bit(Self::keyword_in(slots, keys, pos as usize));
            }
            _ if len > SCAN_LIMIT => self.build_index(),
            _ => {}
        }
    }

    /// The keyword key at `at`, whether coded or kept as a value.
    fn keyword_in(slots: &[Slot], keys: &[Value], at: usize) -> Option<Keyword> {
        key_in(slots, keys, at).as_keyword()
    }

    /// Builds the index of every entry.
    fn build_index(&mut self) {
        let len = self.len();
        let Map { slots, more } = self;
        let more = more.get_or_insert_with(Box::default);
        let keys = &more.keys;
        let mut index = KeyIndex {
            positions: HashTable::with_capacity(slots.len()),
            reserved: 0,
        };
        for at in 0..len as u32 {
            index
                .positions
                .insert_unique(hash_at(slots, keys, at), at, |&p| hash_at(slots, keys, p));
            index.reserved |= reserved_bit(Self::keyword_in(slots, keys, at as usize));
        }
        more.index = Some(index);
    }

    /// After the entries changed places wholesale (a retain, a sort): the
    /// index built again, or dropped if the map is small.
    fn reindex(&mut self) {
        self.drop_index();
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
        if i < last && last < self.len() {
            let len = self.take_len();
            let filter = self.take_filter();
            if let Some(moved) = self.slots.get_mut(i..=last) {
                moved.rotate_right(1);
            }
            self.set_len(len);
            // The same keys: the same filter.
            self.set_filter(filter);
            if let Some(moved) = self.more.as_mut().and_then(|m| m.keys.get_mut(i..=last)) {
                moved.rotate_right(1);
            }
            if self.index().is_some() {
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

    /// Takes the key at position `i` out (its slot is left to the caller).
    fn take_key(&mut self, i: usize) -> Value {
        match &mut self.more {
            Some(more) if !more.keys.is_empty() => {
                if i < more.keys.len() {
                    more.keys.remove(i)
                } else {
                    Value::Nil
                }
            }
            _ => key_in(&self.slots, &[], i).clone(),
        }
    }

    /// Removes the entry at position `i`, keeping the order of the others.
    pub fn shift_remove_index(&mut self, i: usize) -> Option<(Value, Value)> {
        let len = self.len();
        if i >= len {
            return None;
        }
        if self.more.is_none() {
            return Some(self.shift_remove_small(i, len));
        }
        Some(self.shift_remove_boxed(i, len))
    }

    /// [`Map::shift_remove_index`] of a map with its box (keys kept as
    /// values, or an index), `i` below its length `len`: kept out of line,
    /// so that a small map's removal saves and restores few registers.
    #[inline(never)]
    fn shift_remove_boxed(&mut self, i: usize, len: usize) -> (Value, Value) {
        let Map { slots, more } = self;
        if let Some(More {
            keys,
            index: Some(index),
        }) = more.as_deref_mut()
        {
            unindex(index, slots, keys, i);
            let after = len - i - 1;
            if after <= SCAN_LIMIT {
                // A few entries after it: each found by its hash.
                for p in i + 1..len {
                    if let Some(slot) = index
                        .positions
                        .find_mut(hash_at(slots, keys, p as u32), |&q| q as usize == p)
                    {
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
        let key = self.take_key(i);
        self.take_len();
        let filter = self.take_filter();
        // The entries after it move up by one (a `memmove`, as a `Vec`'s
        // `remove` does), and the room gains a vacant slot at the end; the
        // box's allocation stays as it is.
        let mut slots = std::mem::take(&mut self.slots).into_vec();
        let removed = slots.remove(i);
        slots.push(Slot::vacant());
        self.slots = slots.into_boxed_slice();
        let value = removed.value;
        self.set_len(len - 1);
        if len - 1 <= DROP_INDEX_AT {
            self.drop_index();
        }
        if self.index().is_some() {
            // A large map keeps the old filter, a superset: working it out
            // again would pass over every key, so removing near the end
            // again and again would cost the square of the length.
            self.set_filter(filter);
        } else {
            // Without the key's bit: a pass over a small map's few keys
            // (a map of more than `SCAN_LIMIT` keys has an index).
            self.refilter();
        }
        (key, value)
    }

    /// [`Map::shift_remove_index`] of a map without its box (every key a
    /// keyword coded by its index, no index, so at most [`SCAN_LIMIT`]
    /// entries), `i` below its length `len`: the slots from `i` on move up
    /// by one in place, and the exact filter loses the removed key's bit
    /// unless a key that stays shares it (one pass over the codes, no
    /// allocation).
    #[inline(always)]
    fn shift_remove_small(&mut self, i: usize, len: usize) -> (Value, Value) {
        if i + 1 == len && i >= 2 {
            return self.pop_small(i);
        }
        if i + 2 == len && i >= 2 {
            return self.remove_second_to_last_small(i);
        }
        self.take_len();
        let filter = self.take_filter();
        let (Some(before), Some(moved)) = (self.slots.get(..i), self.slots.get(i..len)) else {
            return (Value::Nil, Value::Nil);
        };
        let code = moved.first().map_or(VACANT, |s| s.key);
        // Whether a key that stays has the removed key's bit (codes below
        // `OTHER`, as every code of a map without its box is, share a bit
        // when they agree in their low five bits).
        let shares = |s: &Slot| (s.key ^ code) & 31 == 0;
        let shared = before.iter().any(shares) || moved.iter().skip(1).any(shares);
        // The entries after it move up by one, the last slot becomes
        // vacant, and the removed entry comes out of slot `i`: one pass.
        let mut carry = Slot::vacant();
        if let Some(moved) = self.slots.get_mut(i..len) {
            for slot in moved.iter_mut().rev() {
                carry = std::mem::replace(slot, carry);
            }
        }
        self.set_len(len - 1);
        let bit = filter_bit(code);
        self.set_filter(if shared { filter } else { filter & !bit });
        (Value::Keyword(Keyword::from_index(carry.key)), carry.value)
    }

    /// [`Map::shift_remove_small`] of the last entry, `i`, past the two
    /// slots that keep the length and the filter: nothing moves, the slot
    /// becomes vacant, and the filter loses the key's bit unless a key
    /// before it shares it (a pass over their codes without an early exit,
    /// as a small map's keys are few).
    #[inline(always)]
    fn pop_small(&mut self, i: usize) -> (Value, Value) {
        let Some((slot, before)) = self.slots.get_mut(..=i).and_then(|s| s.split_last_mut()) else {
            return (Value::Nil, Value::Nil);
        };
        let code = std::mem::replace(&mut slot.key, VACANT);
        let value = std::mem::take(&mut slot.value);
        let shared = before
            .iter()
            .fold(false, |shared, s| shared | ((s.key ^ code) & 31 == 0));
        if !shared && let Some(second) = self.slots.get_mut(1) {
            second.len &= !filter_bit(code);
        }
        self.set_len(i);
        (Value::Keyword(Keyword::from_index(code)), value)
    }

    /// Takes out the value of the entry at `i`, one of the last two, when
    /// its key is the keyword `key`, in a map without its box and past the
    /// two slots that keep the length and the filter: the last entry moves
    /// into its slot if it was not the last, and the last slot becomes
    /// vacant. A key whose bit of the filter no other name has
    /// (`intern::OWN_BITS`: `:aido/running`, `:aido/tree`) takes its bit
    /// with it without a pass over the other keys; any other keeps it if a
    /// key that stays shares it (one pass over their codes). `None`, with
    /// nothing done, for anything else. (The tick takes them out with
    /// [`Map::swap_out_tail_keyword`]; this is its test's face.)
    #[cfg(test)]
    pub(crate) fn remove_tail_keyword(&mut self, i: usize, key: Keyword) -> Option<Value> {
        let mut value = Value::Nil;
        self.swap_out_tail_keyword(i, key, &mut value)
            .then_some(value)
    }

    /// [`Map::remove_tail_keyword`], the removed value swapped into `dest`
    /// (which must hold nil: anything else is `false`, nothing done) rather
    /// than returned: the value goes from the map to where it is kept in
    /// one whole copy. (Handed back, it is moved through the stack piece
    /// by piece, tag and payload apart, and the loads that read it back
    /// whole wait for those stores; the halt of a long action did so
    /// twice.) Whether it was removed. Inlined where it is called: the
    /// tick that halts a long action takes `:aido/memory`, then
    /// `:aido/running`, out of the db's tail this way.
    #[inline(always)]
    pub(crate) fn swap_out_tail_keyword(
        &mut self,
        i: usize,
        key: Keyword,
        dest: &mut Value,
    ) -> bool {
        let code = key.index();
        let len = self.len();
        if self.more.is_some() || i < 2 || i >= len || len - i > 2 || !dest.is_nil() {
            return false;
        }
        let Some(slots) = self.slots.get_mut(..len) else {
            return false;
        };
        let (before, tail) = slots.split_at_mut(i);
        // The code of the last key if it moved. The slot takes `dest`'s
        // nil: nothing is dropped, and no call is made to drop it.
        let moved = match tail {
            [slot] if slot.key == code => {
                slot.key = VACANT;
                std::mem::swap(&mut slot.value, dest);
                None
            }
            [slot, last] if slot.key == code => {
                std::mem::swap(&mut slot.value, dest);
                std::mem::forget(std::mem::replace(
                    slot,
                    std::mem::replace(last, Slot::vacant()),
                ));
                Some(slot.key)
            }
            _ => return false,
        };
        let bit = filter_bit(code);
        let shares = |other: u32| (other ^ code) & 31 == 0;
        let shared = bit & super::intern::OWN_BITS == 0
            && before.iter().fold(moved.is_some_and(shares), |shared, s| {
                shared | shares(s.key)
            });
        if !shared && let Some(second) = self.slots.get_mut(1) {
            second.len &= !bit;
        }
        self.set_len(len - 1);
        true
    }

    /// [`Map::shift_remove_small`] of the entry before the last, `i`, past
    /// the two slots that keep the length and the filter (the halt cycle's
    /// `:aido/memory`, before `:aido/running`): the last entry moves into
    /// its slot, and the filter loses the key's bit unless a key that
    /// stays shares it (one pass over their codes without an early exit).
    #[inline(always)]
    fn remove_second_to_last_small(&mut self, i: usize) -> (Value, Value) {
        let Some((before, pair)) = self.slots.get_mut(..i + 2).map(|s| s.split_at_mut(i)) else {
            return (Value::Nil, Value::Nil);
        };
        let [slot, last] = pair else {
            return (Value::Nil, Value::Nil);
        };
        let removed = std::mem::replace(slot, std::mem::replace(last, Slot::vacant()));
        let code = removed.key;
        let shared = before
            .iter()
            .fold((slot.key ^ code) & 31 == 0, |shared, s| {
                shared | ((s.key ^ code) & 31 == 0)
            });
        if !shared && let Some(second) = self.slots.get_mut(1) {
            second.len &= !filter_bit(code);
        }
        self.set_len(i + 1);
        (Value::Keyword(Keyword::from_index(code)), removed.value)
    }

    /// Removes `key` by moving the last entry into its place (the order of
    /// the others changes); its value.
    pub fn swap_remove(&mut self, key: &Value) -> Option<Value> {
        let i = self.get_index_of(key)?;
        let last = self.len() - 1;
        if i == last {
            return self.shift_remove_index(i).map(|(_, v)| v);
        }
        let Map { slots, more } = self;
        if let Some(More {
            keys,
            index: Some(index),
        }) = more.as_deref_mut()
        {
            unindex(index, slots, keys, i);
            if let Some(slot) = index
                .positions
                .find_mut(hash_at(slots, keys, last as u32), |&p| p as usize == last)
            {
                *slot = i as u32;
            }
        }
        if let Some(more) = &mut self.more
            && i < more.keys.len()
        {
            more.keys.swap_remove(i);
        }
        let len = self.take_len();
        let filter = self.take_filter();
        self.slots.swap(i, last);
        let removed = self
            .slots
            .get_mut(last)
            .map(|s| std::mem::replace(s, Slot::vacant()));
        self.set_len(len - 1);
        if last <= DROP_INDEX_AT {
            self.drop_index();
        }
        if self.index().is_some() {
            // Constant time, as the rest of a large map's swap_remove: the
            // old filter, a superset.
            self.set_filter(filter);
        } else {
            self.refilter();
        }
        removed.map(|s| s.value)
    }

    /// Keeps only the entries for which `keep` says yes, in their order.
    pub fn retain(&mut self, keep: impl FnMut(&Value, &mut Value) -> bool) {
        self.retain_from(0, keep);
    }

    /// [`Map::retain`] of the entries from position `from` on: those
    /// before it stay without being looked at, and each later entry kept
    /// moves once, so taking several entries out costs one pass over the
    /// entries from the first of them (and the index built again), not a
    /// shift of the rest for each.
    pub(crate) fn retain_from(
        &mut self,
        from: usize,
        mut keep: impl FnMut(&Value, &mut Value) -> bool,
    ) {
        let len = self.take_len();
        let filter = self.take_filter();
        let Map { slots, more } = self;
        let mut keys = more.as_deref_mut().map(|m| &mut m.keys);
        let from = from.min(len);
        let mut kept = from;
        for i in from..len {
            let key = key_in(slots, keys.as_deref().map_or(&[], |k| k), i);
            let Some(slot) = slots.get_mut(i) else { break };
            if keep(key, &mut slot.value) {
                slots.swap(kept, i);
                if let Some(keys) = keys.as_deref_mut()
                    && i < keys.len()
                {
                    keys.swap(kept, i);
                }
                kept += 1;
            } else if let Some(slot) = slots.get_mut(i) {
                *slot = Slot::vacant();
            }
        }
        if let Some(keys) = keys {
            keys.truncate(kept);
        }
        self.set_len(kept);
        if kept != len {
            self.reindex();
            self.refilter();
        } else {
            self.set_filter(filter);
        }
    }

    /// Sorts the entries by `compare` of (key, value, key, value).
    pub fn sort_by(
        &mut self,
        mut compare: impl FnMut(&Value, &Value, &Value, &Value) -> std::cmp::Ordering,
    ) {
        let capacity = self.capacity();
        let mut entries: Vec<(Value, Value)> = std::mem::take(self).into_iter().collect();
        entries.sort_by(|(k1, v1), (k2, v2)| compare(k1, v1, k2, v2));
        self.set_capacity(capacity);
        for (k, v) in entries {
            self.push(k, v);
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
        Iter::new(self.live(), self.value_keys())
    }

    /// The entries in order, their values mutably.
    pub fn iter_mut(&mut self) -> IterMut<'_> {
        let len = self.len();
        let Map { slots, more } = self;
        let keys = more.as_deref().map_or(&[][..], |m| &m.keys);
        IterMut::new(slots.get_mut(..len).unwrap_or_default(), keys)
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
fn unindex(index: &mut KeyIndex, slots: &[Slot], keys: &[Value], i: usize) {
    if let Ok(slot) = index
        .positions
        .find_entry(hash_at(slots, keys, i as u32), |&p| p as usize == i)
    {
        slot.remove();
    }
    index.reserved &= !reserved_bit(Map::keyword_in(slots, keys, i));
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
        if !self.keeps_keys() && !other.keeps_keys() {
            return self
                .live()
                .iter()
                .zip(0..)
                .all(|(s, i)| match other.slots.get(i) {
                    Some(o) if o.key == s.key => o.value == s.value,
                    _ => {
                        s.keyword()
                            .and_then(|k| other.keyword_position(k))
                            .and_then(|j| other.value_at(j))
                            == Some(&s.value)
                    }
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
        &self.live()[i].value
    }
}

/// The value at position `i`, mutably; panics if there is none.
impl IndexMut<usize> for Map {
    fn index_mut(&mut self, i: usize) -> &mut Value {
        let len = self.len();
        &mut self.slots[..len][i].value
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
    fn into_iter(mut self) -> IntoIter {
        let len = self.take_len();
        let mut slots = std::mem::take(&mut self.slots).into_vec();
        slots.truncate(len);
        let keys = self.more.take().map(|m| m.keys).filter(|k| !k.is_empty());
        IntoIter::new(slots, keys)
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
