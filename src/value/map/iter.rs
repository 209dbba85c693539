//! The iterators of a `Map`, over either form of its entries.

use std::{slice, vec};

use super::{Key, Keyword, Value};

/// An entry whose key is a keyword stored as its index.
type KeywordEntry = (Keyword, Value);
/// An entry whose key is any value.
type ValueEntry = (Value, Value);

/// An iterator over either form of entries.
#[derive(Clone)]
pub(super) enum Either<K, V> {
    Keywords(K),
    Values(V),
}

/// The entries of a [`Map`](super::Map) in order, from [`Map::iter`](super::Map::iter).
#[derive(Clone)]
pub struct Iter<'a>(pub(super) Either<slice::Iter<'a, KeywordEntry>, slice::Iter<'a, ValueEntry>>);

/// The entries of a [`Map`](super::Map) in order, values mutably, from [`Map::iter_mut`](super::Map::iter_mut).
pub struct IterMut<'a>(
    pub(super) Either<slice::IterMut<'a, KeywordEntry>, slice::IterMut<'a, ValueEntry>>,
);

/// The entries of a [`Map`](super::Map) in order, taken out, from its `into_iter`.
pub struct IntoIter(pub(super) Either<vec::IntoIter<KeywordEntry>, vec::IntoIter<ValueEntry>>);

/// `Iterator`, `DoubleEndedIterator` and the marker traits for an iterator
/// over either form, each form's item made by `$make`.
macro_rules! either_iterator {
    ($name:ty, $item:ty, |$x:ident| $make:expr) => {
        impl<'a> Iterator for $name {
            type Item = $item;
            #[inline]
            fn next(&mut self) -> Option<$item> {
                each_form!(&mut self.0, it => it.next().map(|$x| $make))
            }
            fn size_hint(&self) -> (usize, Option<usize>) {
                each_form!(&self.0, it => it.size_hint())
            }
        }

        impl<'a> DoubleEndedIterator for $name {
            fn next_back(&mut self) -> Option<$item> {
                each_form!(&mut self.0, it => it.next_back().map(|$x| $make))
            }
        }

        impl<'a> ExactSizeIterator for $name {}
        impl<'a> std::iter::FusedIterator for $name {}
    };
}

macro_rules! each_form {
    ($either:expr, $it:ident => $body:expr) => {
        match $either {
            Either::Keywords($it) => $body,
            Either::Values($it) => $body,
        }
    };
}

either_iterator!(Iter<'a>, (&'a Value, &'a Value), |x| (x.0.value(), &x.1));
either_iterator!(IterMut<'a>, (&'a Value, &'a mut Value), |x| (
    Key::value(&x.0),
    &mut x.1
));
either_iterator!(IntoIter, (Value, Value), |x| (x.0.into_value(), x.1));

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
