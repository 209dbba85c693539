//! How a run record keeps its db changes: 16 bytes a change, with nothing
//! to drop.
//!
//! Most changes a tick makes set a top-level keyword key from one scalar
//! (nil, a boolean, a number, a character, a keyword, a symbol) to
//! another: such a change is kept as the key's interned code and the two
//! values' kinds and 4-byte payloads, a plain `Copy` record. A scalar whose
//! payload needs 8 bytes (a float, an integer past 32 bits) has both
//! payloads in a second list, which the record names by its place. Every
//! other change (a key added or removed, a string or a collection, an
//! append, an edit, a key that is not a keyword) is kept whole in a third
//! list, named the same way. [`DbChange`]s are made again when the record
//! is read ([`TickChanges`]).

use super::DbChange;
use crate::value::{Keyword, Symbol, Value};

/// Every tick's changes, one tick's after another's.
#[derive(Debug, Clone, Default)]
pub(super) struct Changes {
    packed: Vec<Packed>,
    /// The payloads of scalar changes too wide for [`Packed`], old and new.
    wide: Vec<[u64; 2]>,
    /// The changes kept whole, in the order they were made.
    whole: Vec<DbChange>,
}

/// One change: a scalar change of a keyword key, or the place of a change
/// kept whole.
#[derive(Debug, Clone, Copy)]
struct Packed {
    key: Keyword,
    /// The old value's payload; with [`WIDE`] or as [`WHOLE`], the place
    /// in [`Changes::wide`] or [`Changes::whole`].
    old: u32,
    new: u32,
    /// The kinds of the old value (bits 4 to 6) and the new one (bits 0 to
    /// 2), with [`WIDE`] when the payloads are in [`Changes::wide`]; or
    /// [`WHOLE`].
    kinds: u8,
}

const NIL: u8 = 0;
const BOOL: u8 = 1;
const INT: u8 = 2;
const FLOAT: u8 = 3;
const CHAR: u8 = 4;
const KEYWORD: u8 = 5;
const SYMBOL: u8 = 6;
/// The payloads are in [`Changes::wide`], at the place `old` names.
const WIDE: u8 = 0x80;
/// The change is kept whole, at the place `old` names (kinds 7, which no
/// value has).
const WHOLE: u8 = 0x77;

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

/// A scalar's kind and 4-byte payload, if it has one: an integer within
/// 32 bits (kept as its low half, sign-extended back), or any scalar but a
/// float.
#[inline]
fn pack_narrow(value: &Value) -> Option<(u8, u32)> {
    Some(match *value {
        Value::Nil => (NIL, 0),
        Value::Bool(b) => (BOOL, u32::from(b)),
        Value::Int(i) => (INT, i32::try_from(i).ok()? as u32),
        Value::Char(c) => (CHAR, u32::from(c)),
        Value::Keyword(k) => (KEYWORD, k.index()),
        Value::Symbol(s) => (SYMBOL, s.index()),
        Value::Float(_)
        | Value::Str(_)
        | Value::Vector(_)
        | Value::List(_)
        | Value::Set(_)
        | Value::Map(_)
        | Value::Tagged(..) => return None,
    })
}

/// The 8-byte payload of a kind's 4-byte one (see [`pack_narrow`]).
fn widen(kind: u8, payload: u32) -> u64 {
    match kind {
        INT => i64::from(payload as i32) as u64,
        _ => u64::from(payload),
    }
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

/// A place in one of the side lists, in 4 bytes. A run would need more
/// than 4 billion changes kept whole or wide (hundreds of gigabytes) for
/// this to saturate.
fn place(len: usize) -> u32 {
    u32::try_from(len).unwrap_or(u32::MAX)
}

impl Changes {
    /// Drops every change, keeping the lists' room.
    pub(super) fn clear(&mut self) {
        self.packed.clear();
        self.wide.clear();
        self.whole.clear();
    }

    /// The bytes of the lists' room.
    pub(super) fn room_bytes(&self) -> usize {
        use std::mem::size_of;
        self.packed.capacity() * size_of::<Packed>()
            + self.wide.capacity() * size_of::<[u64; 2]>()
            + self.whole.capacity() * size_of::<DbChange>()
    }

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
            old: place(self.whole.len()),
            new: 0,
            kinds: WHOLE,
        });
        self.whole.push(change);
    }

    /// Appends the change of the keyword `key` from the integer `old` to
    /// the integer `new` if both are within 32 bits (as
    /// [`Changes::push_scalars`] would), and says whether it did.
    #[inline(always)]
    pub(super) fn push_ints(&mut self, key: Keyword, old: i64, new: i64) -> bool {
        // Within 32 bits when the low 32 bits, widened, give it back: one
        // sign extension and one comparison each.
        let (narrow_old, narrow_new) = (old as i32, new as i32);
        if i64::from(narrow_old) != old || i64::from(narrow_new) != new {
            return false;
        }
        self.packed.push(Packed {
            key,
            old: narrow_old as u32,
            new: narrow_new as u32,
            kinds: INT << 4 | INT,
        });
        true
    }

    /// Appends the change of the keyword `key` from `old` to `new` if both
    /// are scalars, and says whether it did.
    #[inline(always)]
    pub(super) fn push_scalars(&mut self, key: Keyword, old: &Value, new: &Value) -> bool {
        if let (Some((old_kind, old)), Some((new_kind, new))) = (pack_narrow(old), pack_narrow(new))
        {
            self.packed.push(Packed {
                key,
                old,
                new,
                kinds: old_kind << 4 | new_kind,
            });
            return true;
        }
        let (Some((old_kind, old)), Some((new_kind, new))) = (pack(old), pack(new)) else {
            return false;
        };
        self.wide.push([old, new]);
        let packed = Packed {
            key,
            old: place(self.wide.len() - 1),
            new: 0,
            kinds: old_kind << 4 | new_kind | WIDE,
        };
        self.packed.push(packed);
        true
    }

    /// Takes the changes from `start` on out of the lists, made again,
    /// onto the end of `out`: the lists are as they were before the first
    /// of them was appended.
    pub(super) fn take_from(&mut self, start: usize, out: &mut Vec<DbChange>) {
        let Some(taken) = self.packed.get(start..) else {
            return;
        };
        out.extend(self.get(start..self.packed.len()));
        // The side lists grow in the order the changes come: the first
        // taken change kept in one names where that list is cut.
        let first = |wanted: fn(u8) -> bool| {
            taken
                .iter()
                .find(|p| wanted(p.kinds))
                .map(|p| p.old as usize)
        };
        let wide = first(|kinds| kinds != WHOLE && kinds & WIDE != 0);
        let whole = first(|kinds| kinds == WHOLE);
        if let Some(wide) = wide {
            self.wide.truncate(wide);
        }
        if let Some(whole) = whole {
            self.whole.truncate(whole);
        }
        self.packed.truncate(start);
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
            let whole = self.changes.whole.get(packed.old as usize);
            // Always there: a packed change names a change it pushed.
            return whole.cloned().unwrap_or(DbChange::Removed {
                key: Value::Nil,
                old: Value::Nil,
            });
        }
        let (old_kind, new_kind) = ((packed.kinds >> 4) & 0x7, packed.kinds & 0x7);
        let [old, new] = if packed.kinds & WIDE != 0 {
            let wide = self.changes.wide.get(packed.old as usize);
            wide.copied().unwrap_or_default()
        } else {
            [widen(old_kind, packed.old), widen(new_kind, packed.new)]
        };
        DbChange::Changed {
            key: Value::Keyword(packed.key),
            old: unpack(old_kind, old),
            new: unpack(new_kind, new),
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
    fn changes_taken_from_a_place_come_back_and_leave_the_lists_as_before() {
        let changed = |k: &str, old: Value, new: Value| DbChange::Changed {
            key: Value::keyword(k),
            old,
            new,
        };
        let mut changes = Changes::default();
        let before = [
            changed("a", Value::Int(1), Value::Int(2)),
            changed("b", Value::Int(1), Value::Int(i64::MAX)),
            changed("c", Value::Int(1), Value::string("x")),
        ];
        let after = [
            changed("d", Value::Float(0.5), Value::Float(1.5)),
            changed("e", Value::Int(3), Value::Int(4)),
            DbChange::Removed {
                key: Value::keyword("f"),
                old: Value::vector(vec![Value::Int(1)]),
            },
        ];
        for change in before.iter().chain(&after) {
            changes.push(change.clone());
        }
        let (wide, whole) = (changes.wide.len(), changes.whole.len());
        let mut out = vec![changed("z", Value::Nil, Value::Nil)];
        changes.take_from(3, &mut out);
        assert_eq!(out[1..], after);
        assert_eq!(changes.get(0..changes.len()).collect::<Vec<_>>(), before);
        assert_eq!(
            (changes.wide.len(), changes.whole.len()),
            (wide - 1, whole - 1)
        );
        // Past the end, nothing is taken.
        changes.take_from(4, &mut out);
        assert_eq!(out.len(), 4);
        assert_eq!(changes.len(), 3);
    }

    #[test]
    fn a_stored_change_is_two_words() {
        assert_eq!(std::mem::size_of::<Packed>(), 16);
    }

    #[test]
    fn an_integer_change_comes_back_narrow_or_wide() {
        let ints = [
            0,
            -1,
            7,
            i64::from(i32::MAX),
            i64::from(i32::MIN),
            i64::from(i32::MAX) + 1,
            i64::from(i32::MIN) - 1,
            i64::MIN,
            // Its low 32 bits are those of 0.
            1 << 32,
        ];
        let key = Keyword::new("k");
        let (mut changes, mut expected) = (Changes::default(), Vec::new());
        for &old in &ints {
            for &new in &ints {
                let mut before = Value::Int(old);
                super::super::push_change(key, &mut before, &Value::Int(new), &mut changes);
                assert_eq!(before, Value::Int(new));
                if old != new {
                    expected.push(DbChange::Changed {
                        key: Value::Keyword(key),
                        old: Value::Int(old),
                        new: Value::Int(new),
                    });
                }
            }
        }
        assert!(changes.whole.is_empty());
        // Those with an integer past 32 bits (4 of the 9) on either side:
        // 9 * 9 pairs less the 5 * 5 narrow ones, less 4 unchanged.
        assert_eq!(changes.wide.len(), 9 * 9 - 5 * 5 - 4);
        let back: Vec<DbChange> = changes.get(0..changes.len()).collect();
        assert_eq!(back, expected);
    }

    #[test]
    fn every_scalar_comes_back_as_it_went_in() {
        let scalars = [
            Value::Nil,
            Value::Bool(true),
            Value::Bool(false),
            Value::Int(-1),
            Value::Int(i64::MIN),
            Value::Int(i64::from(i32::MAX)),
            Value::Int(i64::from(i32::MIN)),
            Value::Int(i64::from(i32::MAX) + 1),
            Value::Int(i64::from(u32::MAX)),
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
        // Those with a float or an integer past 32 bits on either side.
        assert_eq!(changes.wide.len(), 8);
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
