//! `Value` from and into Rust's common types (documented in `value`'s module docs).

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::hash::BuildHasher;
use std::sync::Arc;

use super::{Keyword, Set, Symbol, Value, ValueError, from_value};

macro_rules! from_exact {
    ($($t:ty => $variant:ident),* $(,)?) => {$(
        impl From<$t> for Value {
            fn from(v: $t) -> Value {
                Value::$variant(v.into())
            }
        }
    )*};
}

from_exact! {
    bool => Bool, i8 => Int, i16 => Int, i32 => Int, i64 => Int,
    u8 => Int, u16 => Int, u32 => Int, f32 => Float, f64 => Float, char => Char,
    &str => Str, String => Str, Box<str> => Str, Arc<str> => Str, super::ArcStr => Str,
    Keyword => Keyword, Symbol => Symbol,
}

impl From<&String> for Value {
    fn from(v: &String) -> Value {
        Value::string(v)
    }
}

impl From<Cow<'_, str>> for Value {
    fn from(v: Cow<'_, str>) -> Value {
        Value::string(&v)
    }
}

macro_rules! try_from_int {
    ($($t:ty),*) => {$(
        /// An error ([`ValueErrorKind::OutOfRange`](super::ValueErrorKind)) beyond 64 signed bits.
        impl TryFrom<$t> for Value {
            type Error = ValueError;
            fn try_from(v: $t) -> Result<Value, ValueError> {
                super::to_value(&v)
            }
        }
    )*};
}

try_from_int!(u64, usize, isize, i128, u128);

impl<T: Into<Value>> From<Option<T>> for Value {
    fn from(v: Option<T>) -> Value {
        v.map_or(Value::Nil, Into::into)
    }
}

impl<T: Into<Value>> From<Vec<T>> for Value {
    fn from(v: Vec<T>) -> Value {
        Value::Vector(v.into_iter().map(Into::into).collect())
    }
}

/// The vector itself, moved (as `Value::Vector(items)` does).
impl From<super::ThinVec<Value>> for Value {
    fn from(items: super::ThinVec<Value>) -> Value {
        Value::Vector(items)
    }
}

impl<T: Into<Value> + Clone> From<&[T]> for Value {
    fn from(v: &[T]) -> Value {
        Value::Vector(v.iter().cloned().map(Into::into).collect())
    }
}

impl<T: Into<Value>, const N: usize> From<[T; N]> for Value {
    fn from(v: [T; N]) -> Value {
        Value::Vector(v.into_iter().map(Into::into).collect())
    }
}

impl<T: Into<Value>, S: BuildHasher> From<HashSet<T, S>> for Value {
    fn from(v: HashSet<T, S>) -> Value {
        set_of(v)
    }
}

impl<T: Into<Value>> From<BTreeSet<T>> for Value {
    fn from(v: BTreeSet<T>) -> Value {
        set_of(v)
    }
}

impl<T: Into<Value>, S> From<indexmap::IndexSet<T, S>> for Value {
    fn from(v: indexmap::IndexSet<T, S>) -> Value {
        set_of(v)
    }
}

impl<K: Into<Value>, V: Into<Value>, S> From<indexmap::IndexMap<K, V, S>> for Value {
    fn from(v: indexmap::IndexMap<K, V, S>) -> Value {
        Value::map_from(v.into_iter().map(|(k, v)| (k.into(), v.into())))
    }
}

impl<K: Into<Value>, V: Into<Value>, S: BuildHasher> From<HashMap<K, V, S>> for Value {
    fn from(v: HashMap<K, V, S>) -> Value {
        Value::map_from(v.into_iter().map(|(k, v)| (k.into(), v.into())))
    }
}

impl<K: Into<Value>, V: Into<Value>> From<BTreeMap<K, V>> for Value {
    fn from(v: BTreeMap<K, V>) -> Value {
        Value::map_from(v.into_iter().map(|(k, v)| (k.into(), v.into())))
    }
}

/// A map from an iterator of key/value pairs whose keys and values convert
/// (a later pair replaces an earlier one with an equal key, as in any map).
impl<K: Into<Value>, V: Into<Value>> FromIterator<(K, V)> for Value {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Value {
        Value::map_from(iter.into_iter().map(|(k, v)| (k.into(), v.into())))
    }
}

fn set_of<T: Into<Value>>(items: impl IntoIterator<Item = T>) -> Value {
    Value::Set(Box::new(items.into_iter().map(Into::into).collect::<Set>()))
}

macro_rules! try_into_scalar {
    ($($t:ty),*) => {$(
        /// The value as this type, if it is one and fits (see the module docs).
        impl TryFrom<&Value> for $t {
            type Error = ValueError;
            fn try_from(v: &Value) -> Result<$t, ValueError> {
                from_value(v)
            }
        }
    )*};
}

try_into_scalar!(
    bool, i8, i16, i32, i64, i128, u8, u16, u32, u64, u128, usize, isize, f32, f64, char, String
);
