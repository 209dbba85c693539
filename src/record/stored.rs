//! How a run record keeps its db changes: 24 bytes a change, with nothing
//! to drop.
//!
//! Most changes a tick makes set a top-level keyword key from one scalar
//! (nil, a boolean, a number, a character, a keyword, a symbol) to
//! another: such a change is kept as the key's interned code and the two
//! values' kinds and payloads, a plain `Copy` record. Every other change
//! (a key added or removed, a string or a collection, an append, an edit,
//! a key that is not a keyword) is kept whole in a second list, which the
//! packed record names by its place. [`DbChange`]s are made again when
//! the record is read ([`TickChanges`]).

use super::DbChange;
use crate::value::{Keyword, Symbol, Value};

/// Every tick's changes, one tick's after another's.
#[derive(Debug, Clone, Default)]
pub(super) struct Changes {
    packed: Vec<Packed>,
    /// The changes kept whole, in the order they were made.
    whole: Vec<DbChange>,
}

/// One change: a scalar change of a keyword key, or the place of a change
/// kept whole.
#[derive(Debug, Clone, Copy)]
struct Packed {
    key: Keyword,
    /// The kinds of the old value (high four bits) and the new one (low
    /// four), or [`WHOLE`].
    kinds: u8,
    /// The old value's payload, or the place in [`Changes::whole`].
    old: u64,
    new: u64,
}

const NIL: u8 = 0;
const BOOL: u8 = 1;
const INT: u8 = 2;
const FLOAT: u8 = 3;
const CHAR: u8 = 4;
const KEYWORD: u8 = 5;
const SYMBOL: u8 = 6;
/// The change is kept whole, at the place `old` names.
const WHOLE: u8 = 0xFF;

/// A scalar's kind and payload; `None` for a string or a collection.
#[inline]
fn pack(value: &Value) -> Option<(u8, u64)> {
    Some(match *value {
        Value::Nil => (NIL, 0),
        Value::Bool(b) => (BOOL, u64::from(b)),
        Value::Int(i) => (INT, i as u64),
        Value::Float(f) => (FLOAT, f.to_bits()),
        Value::Char(c) => (CHAR, u64::from(c)),
        Value::Keyword(k) => (KEYWORD, u64::from(k.index())),
        Value::Symbol(s) => (SYMBOL, u64::from(s.index())),
        Value::Str(_)
        | Value::Vector(_)
        | Value::List(_)
        | Value::Set(_)
        | Value::Map(_)
        | Value::Tagged(..) => return None,
    })
}

/// The scalar [`pack`] made `(kind, payload)` of.
fn unpack(kind: u8, payload: u64) -> Value {
    match kind {
        BOOL => Value::Bool(payload != 0),
        INT => Value::Int(payload as i64),
        FLOAT => Value::Float(f64::from_bits(payload)),
        CHAR => u32::try_from(payload)
            .ok()
            .and_then(char::from_u32)
            .map_or(Value::Nil, Value::Char),
        KEYWORD => {
            u32::try_from(payload).map_or(Value::Nil, |i| Value::Keyword(Keyword::from_index(i)))
        }
        SYMBOL => {
            u32::try_from(payload).map_or(Value::Nil, |i| Value::Symbol(Symbol::from_index(i)))
        }
        _ => Value::Nil,
    }
}

impl Changes {
    /// How many changes there are.
    #[inline]
    pub(super) fn len(&self) -> usize {
        self.packed.len()
    }

    /// Appends `change`.
    pub(super) fn push(&mut self, change: DbChange) {
        if let DbChange::Changed {
            key: Value::Keyword(key),
            old,
            new,
        } = &change
            && self.push_scalars(*key, old, new)
        {
            return;
        }
        self.packed.push(Packed {
            key: Keyword::from_index(0),
            kinds: WHOLE,
            old: self.whole.len() as u64,
            new: 0,
        });
        self.whole.push(change);
    }

    /// Appends the change of the keyword `key` from `old` to `new` if both
    /// are scalars, and says whether it did.
    #[inline]
    pub(super) fn push_scalars(&mut self, key: Keyword, old: &Value, new: &Value) -> bool {
        let (Some((old_kind, old)), Some((new_kind, new))) = (pack(old), pack(new)) else {
            return false;
        };
        self.packed.push(Packed {
            key,
            kinds: old_kind << 4 | new_kind,
            old,
            new,
        });
        true
    }

    /// The changes at `at`, made again.
    pub(super) fn get(&self, at: std::ops::Range<usize>) -> TickChanges<'_> {
        TickChanges {
            changes: self,
            packed: self.packed.get(at).unwrap_or_default().iter(),
        }
    }
}

/// A tick's db changes, as [`RunRecord::changes`](super::RunRecord::changes)
/// gives them: each made again from the record's compact form (a scalar
/// change costs no allocation; a change kept whole is cloned).
#[derive(Debug, Clone)]
pub struct TickChanges<'a> {
    changes: &'a Changes,
    packed: std::slice::Iter<'a, Packed>,
}

impl TickChanges<'_> {
    fn make(&self, packed: &Packed) -> DbChange {
        if packed.kinds == WHOLE {
            let whole = usize::try_from(packed.old)
                .ok()
                .and_then(|at| self.changes.whole.get(at));
            // Always there: a packed change names a change it pushed.
            return whole.cloned().unwrap_or(DbChange::Removed {
                key: Value::Nil,
                old: Value::Nil,
            });
        }
        DbChange::Changed {
            key: Value::Keyword(packed.key),
            old: unpack(packed.kinds >> 4, packed.old),
            new: unpack(packed.kinds & 0xF, packed.new),
        }
    }
}

impl Iterator for TickChanges<'_> {
    type Item = DbChange;

    fn next(&mut self) -> Option<DbChange> {
        let packed = self.packed.next()?;
        Some(self.make(packed))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.packed.size_hint()
    }
}

impl DoubleEndedIterator for TickChanges<'_> {
    fn next_back(&mut self) -> Option<DbChange> {
        let packed = self.packed.next_back()?;
        Some(self.make(packed))
    }
}

impl ExactSizeIterator for TickChanges<'_> {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stored_change_is_three_words() {
        assert_eq!(std::mem::size_of::<Packed>(), 24);
    }

    #[test]
    fn every_scalar_comes_back_as_it_went_in() {
        let scalars = [
            Value::Nil,
            Value::Bool(true),
            Value::Bool(false),
            Value::Int(-1),
            Value::Int(i64::MIN),
            Value::Float(-0.0),
            Value::Float(f64::NAN),
            Value::Char('é'),
            Value::keyword("a/b"),
            Value::symbol("s"),
        ];
        let mut changes = Changes::default();
        for (old, new) in scalars.iter().zip(scalars.iter().rev()) {
            changes.push(DbChange::Changed {
                key: Value::keyword("k"),
                old: old.clone(),
                new: new.clone(),
            });
        }
        changes.push(DbChange::Changed {
            key: Value::string("k"),
            old: Value::Int(1),
            new: Value::Int(2),
        });
        assert_eq!(changes.whole.len(), 1);
        let back: Vec<DbChange> = changes.get(0..changes.len()).collect();
        assert_eq!(back.len(), scalars.len() + 1);
        for (change, (old, new)) in back.iter().zip(scalars.iter().zip(scalars.iter().rev())) {
            let DbChange::Changed {
                key,
                old: o,
                new: n,
            } = change
            else {
                panic!("a scalar change comes back as Changed: {change:?}");
            };
            assert_eq!(key, &Value::keyword("k"));
            // Compared by their text: NaN is not equal to itself.
            assert_eq!(
                (o.to_string(), n.to_string()),
                (old.to_string(), new.to_string())
            );
            assert_eq!(
                (std::mem::discriminant(o), std::mem::discriminant(n)),
                (std::mem::discriminant(old), std::mem::discriminant(new))
            );
        }
        assert_eq!(back.last().map(DbChange::key), Some(&Value::string("k")));
    }
}
