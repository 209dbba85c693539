//! A small cache of the keywords and symbols a read has interned.
//!
//! Interning a name takes the process-wide interner's lock and hashes the
//! name into its table. A tree's text repeats a few names (node types, option
//! keys, db keys) thousands of times, so each read remembers the names it
//! interned in a small table indexed by a hash of the text, where a name may
//! sit in one of two slots (the first, when it is free). A name seen before
//! costs a hash and a comparison or two of its first eight bytes (and of the
//! rest, for a longer name), and no lock.

/// How many names the cache holds; a power of two.
const N_SLOTS: usize = 128;

/// Names interned as `T` (a [`Keyword`](crate::value::Keyword) or a
/// [`Symbol`](crate::value::Symbol)).
pub(super) struct NameCache<T> {
    slots: [Option<Slot<T>>; N_SLOTS],
}

#[derive(Clone, Copy)]
struct Slot<T> {
    /// The name's first eight bytes, little-endian, zero-padded.
    head: u64,
    /// The name's interned text.
    text: &'static str,
    name: T,
}

impl<T: Copy> NameCache<T> {
    pub(super) fn new() -> NameCache<T> {
        NameCache {
            slots: [None; N_SLOTS],
        }
    }

    /// The interned name `text.get(from..to)`: from the cache, else from
    /// `intern`, which returns the interned name and its text.
    // Inlined into the reader's loop: most names are short and hits.
    #[inline(always)]
    pub(super) fn get(
        &mut self,
        text: &str,
        from: usize,
        to: usize,
        intern: impl FnOnce(&str) -> (T, &'static str),
    ) -> T {
        let len = to.saturating_sub(from);
        // A name of at most eight bytes with eight bytes of text from its
        // start: the word read from the text and masked is the whole name,
        // so its head and length alone tell it apart. (Eight takes in
        // `:sequence`, `:selector` and `:parallel`.)
        if let Some(word) = text.as_bytes().get(from..from + 8)
            && len <= 8
        {
            let mut buf = [0u8; 8];
            buf.copy_from_slice(word);
            let mask = if len < 8 {
                (1u64 << (8 * len)) - 1
            } else {
                u64::MAX
            };
            let head = u64::from_le_bytes(buf) & mask;
            let first = slot_of_short(head, len);
            let second = (first + 1) % N_SLOTS;
            for at in [first, second] {
                if let Some(Some(slot)) = self.slots.get(at)
                    && slot.head == head
                    && slot.text.len() == len
                {
                    return slot.name;
                }
            }
        }
        self.get_any(text, from, to, intern)
    }

    /// [`NameCache::get`] for any name: a longer one, one near the end of
    /// the text, or a short one the cache does not hold. Out of line, so
    /// that the short names' hits inlined into the reader save fewer
    /// registers.
    #[inline(never)]
    fn get_any(
        &mut self,
        text: &str,
        from: usize,
        to: usize,
        intern: impl FnOnce(&str) -> (T, &'static str),
    ) -> T {
        // The name's bytes: the text itself is sliced (its character
        // boundaries checked) only on a miss, to be interned.
        let bytes = text.as_bytes().get(from..to).unwrap_or_default();
        let head = head_of(bytes);
        let first = slot_of(head, bytes);
        let second = (first + 1) % N_SLOTS;
        for at in [first, second] {
            if let Some(Some(slot)) = self.slots.get(at)
                && slot.head == head
                && slot.text.len() == bytes.len()
                && (bytes.len() <= 8 || slot.text.as_bytes().get(8..) == bytes.get(8..))
            {
                return slot.name;
            }
        }
        // A miss: fill the first slot if it is free, else the second if
        // that is, else replace the first.
        self.insert(
            head,
            first,
            second,
            text.get(from..to).unwrap_or(""),
            intern,
        )
    }

    /// Interns `name`, a miss, and keeps it: out of line, so that the hits
    /// inlined into the reader save fewer registers.
    #[cold]
    #[inline(never)]
    fn insert(
        &mut self,
        head: u64,
        first: usize,
        second: usize,
        name: &str,
        intern: impl FnOnce(&str) -> (T, &'static str),
    ) -> T {
        let (name, text) = intern(name);
        // A name goes where the next look-up probes first: filling the
        // second slot while the first is free would make every hit of it
        // cost a miss first.
        let at = match (self.slots.get(first), self.slots.get(second)) {
            (Some(Some(_)), Some(None)) => second,
            _ => first,
        };
        if let Some(slot) = self.slots.get_mut(at) {
            *slot = Some(Slot { head, text, name });
        }
        name
    }
}

/// The first eight bytes of `bytes`, little-endian, zero-padded.
#[inline]
fn head_of(bytes: &[u8]) -> u64 {
    let mut buf = [0u8; 8];
    match bytes.get(..8) {
        Some(first) => buf.copy_from_slice(first),
        None => {
            for (b, &byte) in buf.iter_mut().zip(bytes) {
                *b = byte;
            }
        }
    }
    u64::from_le_bytes(buf)
}

/// [`slot_of`] for a name of `len` bytes, at most eight: its head is all
/// of it.
#[inline]
fn slot_of_short(head: u64, len: usize) -> usize {
    const K: u64 = 0x517c_c1b7_2722_0a95;
    let hash = (head ^ len as u64).wrapping_mul(K);
    (hash >> (64 - N_SLOTS.trailing_zeros())) as usize
}

/// The slot for a name: the top bits of a multiply-rotate hash of its
/// length, its `head` and its bytes past the eighth.
#[inline]
fn slot_of(head: u64, bytes: &[u8]) -> usize {
    const K: u64 = 0x517c_c1b7_2722_0a95;
    let mut hash = (head ^ bytes.len() as u64).wrapping_mul(K);
    for rest in bytes.get(8..).unwrap_or_default().chunks(8) {
        hash = (hash.rotate_left(5) ^ head_of(rest)).wrapping_mul(K);
    }
    (hash >> (64 - N_SLOTS.trailing_zeros())) as usize
}

#[cfg(test)]
mod tests {
    use super::NameCache;
    use crate::value::Keyword;

    fn intern(text: &str) -> (Keyword, &'static str) {
        let k = Keyword::new(text);
        (k, k.as_str())
    }

    #[test]
    fn cached_names_equal_interned_names() {
        let mut cache = NameCache::new();
        // More names than slots, each asked for twice: hits and evictions;
        // short and long names, some equal in their first eight bytes.
        let names: Vec<String> = (0..300)
            .map(|i| match i % 3 {
                0 => format!("n{i}"),
                1 => format!("greater-than-{i}?"),
                _ => format!("ab{}", "c".repeat(i % 20)),
            })
            .collect();
        for _ in 0..2 {
            for name in &names {
                // Alone, and inside a longer text.
                assert_eq!(cache.get(name, 0, name.len(), intern), Keyword::new(name));
                let text = format!(":{name} :more");
                let got = cache.get(&text, 1, 1 + name.len(), intern);
                assert_eq!(got, Keyword::new(name));
            }
        }
        // Names of several bytes a character (the text is sliced, at its
        // character boundaries, only on a miss): a miss, then a hit.
        for _ in 0..2 {
            for name in ["naïve", "ключ", "日本/語"] {
                let text = format!(":{name}]");
                assert_eq!(
                    cache.get(&text, 1, 1 + name.len(), intern),
                    Keyword::new(name)
                );
            }
        }
        assert_eq!(cache.get("", 0, 0, intern), Keyword::new(""));
        assert_eq!(cache.get("[:ab]", 2, 4, intern), Keyword::new("ab"));
    }

    #[test]
    fn a_short_name_has_one_slot_on_either_path() {
        // Short names are looked up inline by `slot_of_short`, and kept by
        // `get_any` (a miss, or a name at the end of the text) by
        // `slot_of`: the same slot, so that a name kept by one is a hit
        // for the other.
        for name in ["", "a", "key", "hunger", "oper<=!", "sequence"] {
            let head = super::head_of(name.as_bytes());
            assert_eq!(
                super::slot_of_short(head, name.len()),
                super::slot_of(head, name.as_bytes()),
                "{name}"
            );
        }
        // Kept at the end of a text (the slow path), found inside one (the
        // fast path), and the other way round.
        let mut cache = NameCache::new();
        let at_end = cache.get(":abc", 1, 4, intern);
        let inside = cache.get(":abc :more text", 1, 4, intern);
        assert_eq!((at_end, inside), (Keyword::new("abc"), Keyword::new("abc")));
        let inside = cache.get(":xyz :more text", 1, 4, intern);
        let at_end = cache.get(":xyz", 1, 4, intern);
        assert_eq!((at_end, inside), (Keyword::new("xyz"), Keyword::new("xyz")));
        // Eight bytes, the longest looked up inline: told apart from each
        // other and from a longer name with the same first eight.
        let at_end = cache.get(":selector", 1, 9, intern);
        let inside = cache.get(":selector :more", 1, 9, intern);
        assert_eq!(
            (at_end, inside),
            (Keyword::new("selector"), Keyword::new("selector"))
        );
        for _ in 0..2 {
            for name in ["sequence", "parallel", "selectors", "selector"] {
                let text = format!(":{name} :more text");
                let got = cache.get(&text, 1, 1 + name.len(), intern);
                assert_eq!(got, Keyword::new(name), "{name}");
            }
        }
    }

    #[test]
    fn a_name_lands_in_the_slot_probed_first_when_it_is_free() {
        let mut cache = NameCache::new();
        for name in ["selector", "key", "greater-than?", "hunger"] {
            cache.get(name, 0, name.len(), intern);
            let head = super::head_of(name.as_bytes());
            let first = super::slot_of(head, name.as_bytes());
            let slot = cache.slots.get(first).copied().flatten();
            assert_eq!(slot.map(|s| s.text), Some(name), "{name}");
        }
    }
}
