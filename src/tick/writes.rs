//! The top-level db keys a tick wrote, noted when its caller asks.
//!
//! A recorder compares the db a tick left with its copy of the db before,
//! to record what changed. Told which top-level keys the tick wrote, it
//! compares those alone instead of every value of the db. The engine notes
//! a key at each place it writes one: the data nodes and `:into` targets
//! (the top key of the path), a user node's `set_db_at`, node memory
//! (`:aido/memory`), the running set, request ids, completions, the
//! generator's position, the tree's fingerprint, the error and the locals.
//! Where it cannot say which keys changed (user code lent the whole db by
//! `NodeCtx::db_mut`, a db carried over to another tree, a key that is not a
//! keyword), it notes that anything may have changed, and the recorder
//! compares every value as it does without a note.
//!
//! A tick that is not asked pays one branch on a field at each write.
//!
//! The plain path's writing leaves (`:define!`, `:inc!`, `:dissoc!`, see
//! [`leaf_path`]) note nothing, so that a traced tick that is not asked
//! pays nothing for them either: a tick asked to note is traced, and its
//! trace names each of them it ticked. Their keys are noted from the trace
//! by the caller that asked (the recorder, once for each trace it keeps).
//! A tick asked to note without a trace takes the general path, whose
//! leaves note their writes themselves.

use crate::tree::{KeyPath, Kind};
use crate::value::{Keyword, Value};

use super::{Engine, Long, PlainPath};

/// The top-level keys of the db that a tick wrote: a buffer its caller
/// keeps across ticks, so that noting allocates nothing once warm.
///
/// A key noted may have been written with the value it had: the note says
/// where to look, never that something changed.
#[derive(Debug, Default)]
pub(crate) struct Writes {
    /// The keys written, each once, in the order first written.
    keys: Vec<Keyword>,
    /// By keyword index, a bit for each key in `keys`.
    seen: Vec<u64>,
    /// Whether something may have changed that `keys` does not name.
    all: bool,
}

impl Writes {
    /// Forgets every key noted, keeping the room.
    pub(crate) fn clear(&mut self) {
        for k in self.keys.drain(..) {
            let i = k.index() as usize;
            if let Some(word) = self.seen.get_mut(i / 64) {
                *word &= !(1 << (i % 64));
            }
        }
        self.all = false;
    }

    /// Notes that `key` was written.
    #[inline(always)]
    pub(crate) fn key(&mut self, key: Keyword) {
        let i = key.index() as usize;
        let bit = 1u64 << (i % 64);
        match self.seen.get_mut(i / 64) {
            Some(w) if *w & bit != 0 => {}
            Some(w) => {
                *w |= bit;
                self.keys.push(key);
            }
            None => self.key_past_the_bits(key),
        }
    }

    /// [`Writes::key`] for a keyword past the bits kept so far: they grow
    /// to hold it (once for each new keyword index range, so kept out of
    /// the inlined path).
    #[cold]
    #[inline(never)]
    fn key_past_the_bits(&mut self, key: Keyword) {
        let word = key.index() as usize / 64;
        self.seen.resize(word + 1, 0);
        self.key(key);
    }

    /// Notes that the top-level key `key` was written: anything may have
    /// changed if it is not a keyword.
    pub(crate) fn top(&mut self, key: &Value) {
        match key {
            Value::Keyword(k) => self.key(*k),
            _ => self.all = true,
        }
    }

    /// Notes a write at `path`: its top key. (Inlined at each write site:
    /// a keyword key, the usual one, costs a few instructions.)
    #[inline(always)]
    pub(crate) fn path(&mut self, path: &KeyPath) {
        match path {
            KeyPath::Kw(k, _) => self.key(*k),
            KeyPath::One(key) => self.top(key),
            KeyPath::Path(keys) => match keys.first() {
                Some(key) => self.top(key),
                None => self.all = true,
            },
        }
    }

    /// Notes that anything may have changed.
    pub(crate) fn everything(&mut self) {
        self.all = true;
    }

    /// The keys written, each once; `None` when anything may have changed.
    pub(crate) fn keys(&self) -> Option<&[Keyword]> {
        (!self.all).then_some(&self.keys[..])
    }

    /// Whether `key` was noted.
    pub(crate) fn contains(&self, key: Keyword) -> bool {
        let i = key.index() as usize;
        self.seen
            .get(i / 64)
            .is_some_and(|w| w & (1 << (i % 64)) != 0)
    }
}

/// The key path that `kind` writes when it is a leaf whose write the plain
/// path does not note (`:define!`, `:inc!`, `:dissoc!`: the leaves
/// `Engine::leaf` notes only on the general path): a tick that ticked such
/// a leaf, as its trace says, may have written that path's top key.
pub(crate) fn leaf_path(kind: &Kind) -> Option<&KeyPath> {
    match kind {
        Kind::Define { key, .. } | Kind::Inc { key } | Kind::Dissoc { key } => Some(key),
        // Every other kind notes its own writes on both paths, or writes
        // nothing.
        _ => None,
    }
}

impl Engine<'_> {
    /// Asks the tick to note the keys it writes into `writes` (empty, with
    /// room kept from earlier ticks), kept in the long-running state;
    /// [`Engine::finish_noted`] hands it back.
    pub(crate) fn note_writes(&mut self, writes: Writes) {
        self.long.get_or_insert_with(Long::fresh).writes = Some(writes);
        // Neither instance of the plain path notes its writing leaves'
        // writes: a traced tick's trace names them (see the module's
        // doc), and a tick without a trace takes the general path.
        if self.trace.is_none() {
            self.plain = PlainPath::Off;
        }
    }

    /// Where to note writes, if the tick is asked to: a check of the
    /// long-running state, absent from the ticks of most trees.
    #[inline(always)]
    pub(crate) fn writes(&mut self) -> Option<&mut Writes> {
        self.long.as_deref_mut().and_then(|l| l.writes.as_mut())
    }

    /// Notes that the top-level `key` was written, if the tick is asked to.
    #[inline(always)]
    pub(crate) fn wrote(&mut self, key: Keyword) {
        if let Some(writes) = self.writes() {
            writes.key(key);
        }
    }

    /// Notes a write at `path` (its top key), if the tick is asked to.
    #[inline(always)]
    pub(crate) fn wrote_at(&mut self, path: &KeyPath) {
        if let Some(writes) = self.writes() {
            writes.path(path);
        }
    }

    /// Notes that anything in the db may have changed, if the tick is asked to.
    #[inline(always)]
    pub(crate) fn wrote_anything(&mut self) {
        if let Some(writes) = self.writes() {
            writes.everything();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_noted_once_and_cleared_with_their_bits() {
        let (a, b) = (Keyword::new("writes-a"), Keyword::new("writes-b"));
        let mut w = Writes::default();
        w.key(a);
        w.key(b);
        w.key(a);
        assert_eq!(w.keys(), Some(&[a, b][..]));
        assert!(w.contains(a) && w.contains(b));
        w.clear();
        assert_eq!(w.keys(), Some(&[][..]));
        assert!(!w.contains(a));
        w.key(b);
        assert_eq!(w.keys(), Some(&[b][..]));
    }

    #[test]
    fn a_key_that_is_not_a_keyword_means_anything_may_have_changed() {
        let mut w = Writes::default();
        w.top(&Value::string("k"));
        assert_eq!(w.keys(), None);
        w.clear();
        assert_eq!(w.keys(), Some(&[][..]));
        w.path(&KeyPath::from_value(&Value::Vector(
            crate::value::thin_vec![Value::Int(1), Value::keyword("x"),],
        )));
        assert_eq!(w.keys(), None);
    }
}
