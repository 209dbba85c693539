//! The iterators of a `Map`, over its slots and, for a map that keeps
//! them, its keys as values.

use std::iter::Enumerate;
use std::{slice, vec};

use super::{Slot, Value, key_in};

/// The entries of a [`Map`](super::Map) in order, from [`Map::iter`](super::Map::iter).
#[derive(Clone)]
pub struct Iter<'a> {
    slots: Enumerate<slice::Iter<'a, Slot>>,
    all: &'a [Slot],
    keys: &'a [Value],
}

impl<'a> Iter<'a> {
    /// The entries of `slots` (those in use), with the map's keys as
    /// values if it keeps them.
    pub(super) fn new(slots: &'a [Slot], keys: &'a [Value]) -> Iter<'a> {
        Iter {
            slots: slots.iter().enumerate(),
            all: slots,
            keys,
        }
    }
}

/// The entries of a [`Map`](super::Map) in order, values mutably, from [`Map::iter_mut`](super::Map::iter_mut).
pub struct IterMut<'a> {
    slots: Enumerate<slice::IterMut<'a, Slot>>,
    keys: &'a [Value],
}

impl<'a> IterMut<'a> {
    /// The entries of `slots` (those in use), with the map's keys as
    /// values if it keeps them.
    pub(super) fn new(slots: &'a mut [Slot], keys: &'a [Value]) -> IterMut<'a> {
        IterMut {
            slots: slots.iter_mut().enumerate(),
            keys,
        }
    }
}

/// The entries of a [`Map`](super::Map) in order, taken out, from its `into_iter`.
pub struct IntoIter {
    slots: vec::IntoIter<Slot>,
    keys: Option<vec::IntoIter<Value>>,
}

impl IntoIter {
    /// The entries of `slots` (those in use), with the map's keys as
    /// values if it kept them.
    pub(super) fn new(slots: Vec<Slot>, keys: Option<Vec<Value>>) -> IntoIter {
        IntoIter {
            slots: slots.into_iter(),
            keys: keys.map(Vec::into_iter),
        }
    }

    /// An entry out of its slot and, if kept, its key.
    fn entry(slot: Slot, key: Option<Value>) -> (Value, Value) {
        let key = match slot.keyword() {
            Some(k) => Value::Keyword(k),
            None => key.unwrap_or(Value::Nil),
        };
        (key, slot.value)
    }
}

impl<'a> Iterator for Iter<'a> {
    type Item = (&'a Value, &'a Value);
    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        let (i, s) = self.slots.next()?;
        Some((key_in(self.all, self.keys, i), &s.value))
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.slots.size_hint()
    }
}

impl DoubleEndedIterator for Iter<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        let (i, s) = self.slots.next_back()?;
        Some((key_in(self.all, self.keys, i), &s.value))
    }
}

impl<'a> Iterator for IterMut<'a> {
    type Item = (&'a Value, &'a mut Value);
    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        let (i, s) = self.slots.next()?;
        Some(entry_mut(self.keys, i, s))
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.slots.size_hint()
    }
}

/// The entry of slot `s` at position `i`: its key (a keyword's from the
/// interner, any other from the map's `keys`) and its value to change.
#[inline]
fn entry_mut<'a>(keys: &'a [Value], i: usize, s: &'a mut Slot) -> (&'a Value, &'a mut Value) {
    let key = key_in(std::slice::from_ref(s), &[], 0);
    let key = if s.keyword().is_some() {
        key
    } else {
        keys.get(i).unwrap_or(key)
    };
    (key, &mut s.value)
}

impl DoubleEndedIterator for IterMut<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        let (i, s) = self.slots.next_back()?;
        Some(entry_mut(self.keys, i, s))
    }
}

impl Iterator for IntoIter {
    type Item = (Value, Value);
    #[inline]
    fn next(&mut self) -> Option<(Value, Value)> {
        let slot = self.slots.next()?;
        let key = self.keys.as_mut().and_then(Iterator::next);
        Some(IntoIter::entry(slot, key))
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.slots.size_hint()
    }
}

impl DoubleEndedIterator for IntoIter {
    fn next_back(&mut self) -> Option<(Value, Value)> {
        let slot = self.slots.next_back()?;
        let key = self.keys.as_mut().and_then(DoubleEndedIterator::next_back);
        Some(IntoIter::entry(slot, key))
    }
}

impl ExactSizeIterator for Iter<'_> {}
impl std::iter::FusedIterator for Iter<'_> {}
impl ExactSizeIterator for IterMut<'_> {}
impl std::iter::FusedIterator for IterMut<'_> {}
impl ExactSizeIterator for IntoIter {}
impl std::iter::FusedIterator for IntoIter {}

/// The keys of a [`Map`](super::Map) in order, from [`Map::keys`](super::Map::keys).
#[derive(Clone)]
pub struct Keys<'a>(pub(super) Iter<'a>);

/// The values of a [`Map`](super::Map) in order, from [`Map::values`](super::Map::values).
#[derive(Clone)]
pub struct Values<'a>(pub(super) Iter<'a>);

/// The values of a [`Map`](super::Map) in order, mutably, from [`Map::values_mut`](super::Map::values_mut).
pub struct ValuesMut<'a>(pub(super) IterMut<'a>);

/// Delegates to the entries' iterator, keeping one half of each entry.
macro_rules! half_iterator {
    ($name:ty, $item:ty, $half:tt) => {
        impl<'a> Iterator for $name {
            type Item = $item;
            #[inline]
            fn next(&mut self) -> Option<$item> {
                self.0.next().map(|x| x.$half)
            }
            fn size_hint(&self) -> (usize, Option<usize>) {
                self.0.size_hint()
            }
        }

        impl<'a> DoubleEndedIterator for $name {
            fn next_back(&mut self) -> Option<$item> {
                self.0.next_back().map(|x| x.$half)
            }
        }

        impl<'a> ExactSizeIterator for $name {}
        impl<'a> std::iter::FusedIterator for $name {}
    };
}

half_iterator!(Keys<'a>, &'a Value, 0);
half_iterator!(Values<'a>, &'a Value, 1);
half_iterator!(ValuesMut<'a>, &'a mut Value, 1);
