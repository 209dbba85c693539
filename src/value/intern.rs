//! Interned keywords and symbols.
//!
//! Keywords are compared and hashed on nearly every node visit, so a keyword is a
//! `u32` index into a process-wide table of names. Equality and hashing never
//! touch the text; only printing and `name()`/`namespace()` look it up. The
//! reserved `:aido/*` keywords and the option keys the interpreter reads are
//! interned first, at fixed indices, so the interpreter names them as
//! constants (`kw`). The table only grows (a keyword stays valid for the
//! whole process) and its map is SipHash with random keys, so names chosen to
//! collide cannot make interning slow; reads of text and JSON are bounded by
//! [`max_interned_names`], so names from outside cannot grow it without end.

use std::collections::HashMap;
use std::hash::RandomState;

use std::cell::Cell;
use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::{OnceLock, RwLock};

use super::Value;

/// The names table. Its map uses the standard library's SipHash with
/// random keys: names come from files and JSON dbs anyone can write, and a
/// set of names chosen to collide must not make interning quadratic.
struct Interner {
    ids: HashMap<&'static str, u32, RandomState>,
    names: Vec<&'static str>,
    /// How many indices were passed over (see [`TICK_READ_BITS`]): `names`
    /// holds an empty name at each, which no keyword or symbol has.
    skipped: usize,
}

/// The bits of a map's filter of keyword keys (bit `index % 32`, see
/// `value::map`) that the reserved keys a tick looks for in every db have
/// (`:aido/error`, `:aido/running`, `:aido/results`, `:aido/tree`; see
/// [`RESERVED`]). The interner passes over every later index with one of
/// these bits, so no other name ever has them: a db's filter then proves
/// all four absent with one test, whatever its keys, and a tick's fixed
/// cost does not depend on the db. `:aido/running` has a bit to itself,
/// so that a db stamped with its tree (which holds `:aido/tree`) is proved
/// to run nothing with one test too. (Three indices in 32 go unused.)
pub(crate) const TICK_READ_BITS: u32 = 1 << 16 | 1 << 17 | 1 << 18;

/// The bits of [`TICK_READ_BITS`] that one name alone has: `:aido/running`'s
/// (16) and `:aido/tree`'s (18). A map without its box (every key a keyword
/// coded by its index) that loses such a key loses its bit of the filter
/// with it, without a pass over the other keys to see whether one shares it
/// (`Map::remove_tail_keyword`).
pub(crate) const OWN_BITS: u32 = 1 << 16 | 1 << 18;

/// How many names the table holds (mirrors `names.len()` less the indices
/// passed over, read without the lock).
static N_NAMES: AtomicUsize = AtomicUsize::new(0);

/// The default of [`max_interned_names`].
pub const DEFAULT_MAX_INTERNED_NAMES: usize = 1_000_000;

static MAX_NAMES: AtomicUsize = AtomicUsize::new(DEFAULT_MAX_INTERNED_NAMES);

/// How many distinct keyword and symbol names the process has interned.
pub fn interned_names() -> usize {
    N_NAMES.load(Relaxed)
}

/// The bound on interned names that reading applies: once the table holds
/// this many, a read (EDN text or a JSON db) that would add a name fails
/// (`ReadErrorKind::TooManyNames`, `JsonErrorKind::TooManyNames`) and adds
/// nothing, so a stream of distinct keywords from outside cannot grow memory
/// without bound. Names are never reclaimed: a keyword is an index valid for
/// the whole process. `Keyword::new` called from Rust is not bounded.
pub fn max_interned_names() -> usize {
    MAX_NAMES.load(Relaxed)
}

/// Sets [`max_interned_names`].
pub fn set_max_interned_names(n: usize) {
    MAX_NAMES.store(n, Relaxed);
}

thread_local! {
    /// Whether interning on this thread is bounded (inside `bounded`).
    static BOUNDED: Cell<bool> = const { Cell::new(false) };
    /// Whether a bounded interning was refused.
    static REFUSED: Cell<bool> = const { Cell::new(false) };
}

/// The index a refused name gets: never a real name, and the read that
/// asked for it fails, so it never escapes.
const REFUSED_ID: u32 = u32::MAX;

/// Runs `f` (a read) with interning bounded by [`max_interned_names`];
/// returns its result and whether a new name was refused.
pub(crate) fn bounded<R>(f: impl FnOnce() -> R) -> (R, bool) {
    let was = BOUNDED.with(|b| b.replace(true));
    let refused_before = REFUSED.with(|r| r.replace(false));
    let result = f();
    let refused = REFUSED.with(|r| r.replace(refused_before));
    BOUNDED.with(|b| b.set(was));
    (result, refused)
}

/// What `keyword_value` gives for an index it has no room for (none:
/// every `u32` has a block).
static NO_KEYWORD: Value = Value::Nil;

/// `Value::Keyword(k)` for every keyword index, made a block at a time:
/// block `b` holds the indices `2^(b+6) - 64 .. 2^(b+7) - 64`.
static KEYWORD_VALUES: [OnceLock<Box<[Value]>>; 27] = [const { OnceLock::new() }; 27];

/// The keyword `k` as a `&'static Value`: how a map whose keys are stored
/// as keyword indices hands out a key by reference. The table holds a value
/// for each index up to the highest one asked for (at most
/// the bound maps put on keyword keys, 32 bytes each), and never changes
/// once made.
#[inline]
pub(crate) fn keyword_value(k: Keyword) -> &'static Value {
    let i = u64::from(k.index()) + 64;
    let block = (63 - i.leading_zeros()) - 6;
    let start = 1u64 << (block + 6);
    let Some(cell) = KEYWORD_VALUES.get(block as usize) else {
        return &NO_KEYWORD;
    };
    let values = cell.get_or_init(|| {
        (start..2 * start)
            .map(|j| Value::Keyword(Keyword((j - 64) as u32)))
            .collect()
    });
    values.get((i - start) as usize).unwrap_or(&NO_KEYWORD)
}

fn interner() -> &'static RwLock<Interner> {
    static TABLE: OnceLock<RwLock<Interner>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut table = Interner {
            ids: HashMap::with_hasher(RandomState::new()),
            names: Vec::new(),
            skipped: 0,
        };
        // The reserved keywords get fixed indices, so that the interpreter can
        // name them as constants without touching the table.
        // (An empty entry is an index passed over, as later ones are.)
        for (i, name) in RESERVED.iter().enumerate() {
            table.names.push(name);
            if name.is_empty() {
                table.skipped += 1;
            } else {
                table.ids.insert(name, i as u32);
            }
        }
        N_NAMES.store(table.names.len() - table.skipped, Relaxed);
        RwLock::new(table)
    })
}

/// Keywords the library itself uses, interned first, in this order (see [`kw`]).
///
/// The four a tick looks for in every db (`:aido/error`, `:aido/running`,
/// `:aido/results`, `:aido/tree`) sit at 49, 16, 17 and 18, so that their
/// bits in a map's filter of keyword keys are three ([`TICK_READ_BITS`]):
/// `:aido/running`'s (16) and `:aido/tree`'s (18) their own,
/// `:aido/error`'s and `:aido/results`'s (17) shared. No later name takes
/// them, and the empty entries (48, 50) are indices passed over, which no
/// name has (a test checks the layout).
const RESERVED: &[&str] = &[
    "aido/memory",
    "aido/seed",
    "aido/rng-pos",
    "aido/locals",
    "status-was",
    "aido/fn",
    "aido/db",
    "id",
    "pool",
    // Option keys of the built-in node types, looked up once per node by the compiler.
    "p",
    "count",
    "mode",
    "how-many",
    "repeat",
    "weights",
    "key",
    "aido/running",
    "aido/results",
    "aido/tree",
    "oper",
    "val",
    "v1",
    "launched",
    "memory",
    "policy",
    "success-threshold",
    "failure-threshold",
    "ticks",
    "action",
    "into",
    "index",
    "done",
    "aido/skip-if",
    "aido/success-if",
    "aido/failure-if",
    "attempt",
    // Node memory and deferred-action bookkeeping of long-running behaviours.
    "iteration",
    "running",
    "request",
    "aido/requests",
    "skipped",
    // The keys and values of a deferred action's completion.
    "status",
    "result",
    "success",
    "failure",
    // Time (`:aido/now`, which the host sets) and the memory of the
    // decorators that keep time or count.
    "aido/now",
    "seconds",
    "since",
    "",
    "aido/error",
    "",
    "v2",
];

/// The reserved keywords as constants.
pub(crate) mod kw {
    use super::Keyword;

    /// `:aido/memory`: node memory, a map from node id to state.
    pub(crate) const MEMORY: Keyword = Keyword(0);
    /// `:aido/seed`: the integer seed of the tick's random generator.
    pub(crate) const SEED: Keyword = Keyword(1);
    /// `:aido/rng-pos`: how many numbers the seeded generator has drawn.
    pub(crate) const RNG_POS: Keyword = Keyword(2);
    /// `:aido/locals`: working memory, present during one tick only.
    pub(crate) const LOCALS: Keyword = Keyword(3);
    /// `:aido/error`: the error of the last tick, if it ended in Error.
    pub(crate) const ERROR: Keyword = Keyword(49);
    /// `:id`, the option every node accepts.
    pub(crate) const ID: Keyword = Keyword(7);
    /// `:pool`, in `:choose-each`'s node memory.
    pub(crate) const POOL: Keyword = Keyword(8);
    /// `:aido/running`: the ids of the nodes that ended the last tick Running.
    pub(crate) const RUNNING: Keyword = Keyword(16);
    /// `:aido/results`: completions of deferred actions, by node id.
    pub(crate) const RESULTS: Keyword = Keyword(17);
    /// `:launched`, in a deferred action's node memory.
    pub(crate) const LAUNCHED: Keyword = Keyword(22);
    /// `:ticks`, in a `:wait` node's memory.
    pub(crate) const TICKS: Keyword = Keyword(27);
    /// `:index`, in a memory composite's node memory.
    pub(crate) const INDEX: Keyword = Keyword(30);
    /// `:done`, in a policy parallel's node memory.
    pub(crate) const DONE: Keyword = Keyword(31);
    /// `:aido/skip-if`, the precondition that skips a node.
    pub(crate) const SKIP_IF: Keyword = Keyword(32);
    /// `:aido/success-if`, the precondition that makes a node succeed.
    pub(crate) const SUCCESS_IF: Keyword = Keyword(33);
    /// `:aido/failure-if`, the precondition that makes a node fail.
    pub(crate) const FAILURE_IF: Keyword = Keyword(34);
    /// `:aido/tree`: the fingerprint of the tree the db was last ticked with.
    pub(crate) const TREE: Keyword = Keyword(18);
    /// `:iteration`, in a loop's node memory: iterations finished.
    pub(crate) const ITERATION: Keyword = Keyword(36);
    /// `:running`, in a random decider's node memory: the child it picked.
    pub(crate) const RUNNING_CHILD: Keyword = Keyword(37);
    /// `:request`, a deferred action's request id.
    pub(crate) const REQUEST: Keyword = Keyword(38);
    /// `:aido/requests`: how many deferred-action requests the db handed out.
    pub(crate) const REQUESTS: Keyword = Keyword(39);
    /// `:skipped`, in a memory sequence's node memory.
    pub(crate) const SKIPPED: Keyword = Keyword(40);
    /// `:status`, in a deferred action's completion.
    pub(crate) const STATUS: Keyword = Keyword(41);
    /// `:result`, in a deferred action's completion.
    pub(crate) const RESULT: Keyword = Keyword(42);
    /// `:success`, a status as a keyword.
    pub(crate) const SUCCESS: Keyword = Keyword(43);
    /// `:failure`, a status as a keyword.
    pub(crate) const FAILURE: Keyword = Keyword(44);
    /// `:aido/now`: the time in seconds, set by the host before each tick.
    pub(crate) const NOW: Keyword = Keyword(45);
    /// `:since`: when a decorator's period began (a time, or a count of ticks).
    pub(crate) const SINCE: Keyword = Keyword(47);
    /// `:attempt`: the attempts (or rounds) a decorator has finished.
    pub(crate) const ATTEMPT: Keyword = Keyword(35);
    /// `:status-was`: the status a decorator keeps (`:run-once`, `:throttle`).
    pub(crate) const STATUS_WAS: Keyword = Keyword(4);

    /// The interned keyword of a built-in option key, without taking the
    /// interner's lock; other names are interned as usual. A reserved name
    /// is found with one hash and one comparison (the compiler asks for a
    /// few per node).
    pub(crate) fn option(name: &str) -> Keyword {
        let slot = super::OPTION_SLOTS
            .get(super::option_slot(name.as_bytes()))
            .copied()
            .unwrap_or(0);
        match super::RESERVED.get(usize::from(slot)) {
            Some(&reserved) if slot > 0 && reserved == name => Keyword(u32::from(slot)),
            // Another name, or a reserved one whose slot an earlier one took
            // (never an index passed over, whose entry is empty).
            _ => match super::RESERVED[9..]
                .iter()
                .position(|n| *n == name && !n.is_empty())
            {
                Some(i) => Keyword(9 + i as u32),
                None => Keyword::new(name),
            },
        }
    }
}

/// How many slots [`OPTION_SLOTS`] has; a power of two.
const N_OPTION_SLOTS: usize = 256;

/// The slot of a name in [`OPTION_SLOTS`]: a hash of its length and its
/// first, middle and last bytes, which gives each reserved option key a
/// slot of its own (a test checks it).
const fn option_slot(name: &[u8]) -> usize {
    let n = name.len();
    if n == 0 {
        return 0;
    }
    let (first, middle, last) = (name[0] as usize, name[n / 2] as usize, name[n - 1] as usize);
    (n.wrapping_mul(3) ^ first.wrapping_mul(3) ^ middle.wrapping_mul(5) ^ last) % N_OPTION_SLOTS
}

/// The reserved names from the option keys on (index 9), by
/// [`option_slot`]: each slot holds its name's index in [`RESERVED`], or 0
/// (no name, as index 0 is no option key; an index passed over has no
/// slot). Of two names with one slot the first keeps it; the other is
/// found by a scan.
static OPTION_SLOTS: [u8; N_OPTION_SLOTS] = {
    let mut slots = [0u8; N_OPTION_SLOTS];
    let mut i = 9;
    while i < RESERVED.len() && i < 256 {
        let slot = option_slot(RESERVED[i].as_bytes());
        if slots[slot] == 0 && !RESERVED[i].is_empty() {
            slots[slot] = i as u8;
        }
        i += 1;
    }
    slots
};

fn intern(text: &str) -> u32 {
    // A poisoned lock only means another thread panicked while holding it; the
    // table itself is append-only and always consistent, so keep using it.
    {
        let table = interner().read().unwrap_or_else(|e| e.into_inner());
        if let Some(&id) = table.ids.get(text) {
            return id;
        }
    }
    let mut table = interner().write().unwrap_or_else(|e| e.into_inner());
    if let Some(&id) = table.ids.get(text) {
        return id;
    }
    // Past the configured bound a read is refused; past the last index an
    // id can hold, every interning is (a read fails with an error; a name
    // made in Rust gets the refused id, which names nothing), so two new
    // names can never share an index.
    let bounded = BOUNDED.with(Cell::get);
    let in_use = table.names.len() - table.skipped;
    if bounded && in_use >= max_interned_names() {
        REFUSED.with(|r| r.set(true));
        return REFUSED_ID;
    }
    // No name after the reserved ones takes a filter bit of the keys a
    // tick reads (see `TICK_READ_BITS`).
    while (1u32 << (table.names.len() % 32)) & TICK_READ_BITS != 0 {
        table.names.push("");
        table.skipped += 1;
    }
    let Ok(id) = u32::try_from(table.names.len()) else {
        REFUSED.with(|r| r.set(true));
        return REFUSED_ID;
    };
    if id == REFUSED_ID {
        REFUSED.with(|r| r.set(true));
        return REFUSED_ID;
    }
    let leaked: &'static str = Box::leak(text.to_owned().into_boxed_str());
    table.names.push(leaked);
    table.ids.insert(leaked, id);
    N_NAMES.store(table.names.len() - table.skipped, Relaxed);
    id
}

fn lookup(id: u32) -> &'static str {
    let table = interner().read().unwrap_or_else(|e| e.into_inner());
    table.names.get(id as usize).copied().unwrap_or("")
}

fn split(full: &'static str) -> (Option<&'static str>, &'static str) {
    // "/" alone is a valid symbol; "ns/name" splits at the first slash.
    match full.find('/') {
        Some(i) if i > 0 && i + 1 < full.len() => (Some(&full[..i]), &full[i + 1..]),
        _ => (None, full),
    }
}

macro_rules! interned {
    ($(#[$doc:meta])* $name:ident, $prefix:literal) => {
        $(#[$doc])*
        #[derive(Clone, Copy, PartialEq, Eq, Hash)]
        pub struct $name(u32);

        impl $name {
            /// Interns `text` (`"name"` or `"ns/name"`, without any leading colon).
            pub fn new(text: &str) -> Self {
                Self(intern(text))
            }

            /// The name interned at `index` (an index this type's
            /// `index` returned: how a map that stores keys as indices
            /// gives them back).
            #[allow(dead_code)]
            #[inline(always)]
            pub(crate) const fn from_index(index: u32) -> Self {
                Self(index)
            }

            /// The interned `text` if some value already interned it; interns nothing.
            #[allow(dead_code)]
            pub(crate) fn existing(text: &str) -> Option<Self> {
                let table = interner().read().unwrap_or_else(|e| e.into_inner());
                table.ids.get(text).map(|&id| Self(id))
            }

            /// The full text, `ns/name` or `name`.
            pub fn as_str(self) -> &'static str {
                lookup(self.0)
            }

            /// The namespace, if the text has one.
            pub fn namespace(self) -> Option<&'static str> {
                split(self.as_str()).0
            }

            /// The name without its namespace.
            pub fn name(self) -> &'static str {
                split(self.as_str()).1
            }

            /// The interned index: equal texts have equal indices within a process.
            pub fn index(self) -> u32 {
                self.0
            }
        }

        /// Its text with its prefix, whatever the formatter's flags.
        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str($prefix)?;
                f.write_str(self.as_str())
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}{}", $prefix, self.as_str())
            }
        }
    };
}

interned!(
    /// An EDN keyword such as `:hunger` or `:beverage/drink!`.
    Keyword,
    ":"
);
interned!(
    /// An EDN symbol such as `rand` or `=`.
    Symbol,
    ""
);

#[cfg(test)]
mod tests {
    #[test]
    fn every_keyword_index_has_its_value() {
        for i in [0, 1, 63, 64, 191, 192, 1000, 65_535, 100_000] {
            let k = Keyword(i);
            assert!(
                matches!(keyword_value(k), Value::Keyword(x) if *x == k),
                "{i}"
            );
        }
        assert_eq!(keyword_value(Keyword::new("hp")), &Value::keyword("hp"));
    }

    use super::*;

    #[test]
    fn equal_texts_intern_to_equal_keywords() {
        assert_eq!(Keyword::new("a/b"), Keyword::new("a/b"));
        assert_ne!(Keyword::new("a/b"), Keyword::new("a/c"));
    }

    #[test]
    fn option_keys_are_found_by_their_slot_and_others_interned() {
        // Every reserved option key has a slot of its own: found with one
        // comparison, not the scan.
        // (`:aido/error`, no option key, shares `:aido/tree`'s slot: both
        // sit among or past the option keys for their filter bits, see
        // `RESERVED`; found by the scan. The empty entries are indices
        // passed over: no slot, and the empty name is interned as usual.)
        let mut taken = std::collections::HashSet::new();
        for (i, name) in RESERVED.iter().enumerate().skip(9) {
            if name.is_empty() {
                continue;
            }
            assert!(
                taken.insert(option_slot(name.as_bytes())) || *name == "aido/error",
                "`{name}` shares a slot"
            );
            assert_eq!(kw::option(name), Keyword(i as u32), "{name}");
        }
        // Names that are no reserved key, or are one before the option keys,
        // or share a slot with one: interned as usual.
        for name in [
            "then", "reset", "", "id", "aido/fn", "kez", "yek", "weightz",
        ] {
            assert_eq!(kw::option(name), Keyword::new(name), "{name}");
        }
    }

    #[test]
    fn reserved_keywords_have_their_names() {
        assert_eq!(kw::ID.as_str(), "id");
        assert_eq!(kw::DONE.as_str(), "done");
        assert_eq!(kw::TICKS.as_str(), "ticks");
        assert_eq!(kw::SKIP_IF.as_str(), "aido/skip-if");
        assert_eq!(kw::SUCCESS_IF.as_str(), "aido/success-if");
        assert_eq!(kw::FAILURE_IF.as_str(), "aido/failure-if");
        assert_eq!(Keyword::new("aido/failure-if"), kw::FAILURE_IF);
        assert_eq!(kw::SKIPPED.as_str(), "skipped");
        assert_eq!(kw::STATUS.as_str(), "status");
        assert_eq!(kw::RESULT.as_str(), "result");
        assert_eq!(kw::SUCCESS.as_str(), "success");
        assert_eq!(kw::FAILURE.as_str(), "failure");
        assert_eq!(Keyword::existing("failure"), Some(kw::FAILURE));
        assert_eq!(Keyword::existing("never-interned-anywhere-else"), None);
    }

    #[test]
    fn no_name_but_the_reserved_keys_a_tick_reads_has_their_filter_bits() {
        // (`value::map`'s filter: bit `index % 32`.)
        let bit = |i: u32| 1u32 << (i % 32);
        let read = [kw::ERROR, kw::RUNNING, kw::RESULTS, kw::TREE];
        assert_eq!(
            read.iter().fold(0, |b, k| b | bit(k.index())),
            TICK_READ_BITS
        );
        // `:aido/running`'s bit is its own (one test proves a db stamped
        // with its tree runs nothing), and `:aido/error` and
        // `:aido/results` share theirs (one test proves both absent).
        for k in [kw::ERROR, kw::RESULTS, kw::TREE] {
            assert_ne!(bit(k.index()), bit(kw::RUNNING.index()), "{k}");
        }
        assert_eq!(bit(kw::ERROR.index()), bit(kw::RESULTS.index()));
        // The bits one name alone has: no other reserved name has them.
        assert_eq!(OWN_BITS, bit(kw::RUNNING.index()) | bit(kw::TREE.index()));
        assert_eq!(OWN_BITS & !TICK_READ_BITS, 0);
        for (i, name) in RESERVED.iter().enumerate() {
            let k = Keyword(i as u32);
            if name.is_empty() {
                // An index passed over: no name has it.
                assert_ne!(Keyword::new(""), k, "{i}");
                assert_eq!(Keyword::existing(""), Some(Keyword::new("")));
                continue;
            }
            assert_eq!(k.as_str(), *name, "{i}");
            assert_eq!(
                bit(k.index()) & TICK_READ_BITS != 0,
                read.contains(&k),
                "{i}"
            );
            assert_eq!(
                bit(k.index()) & OWN_BITS != 0,
                k == kw::RUNNING || k == kw::TREE,
                "{i}"
            );
        }
        // Names interned later (by this test or any other) pass over the
        // three bits, and each is found again by its name.
        for i in 0..70 {
            let k = Keyword::new(&format!("tick-read-bits-{i}"));
            assert_eq!(bit(k.index()) & TICK_READ_BITS, 0, "{k}");
            assert_eq!(k.as_str(), format!("tick-read-bits-{i}"));
            let s = Symbol::new(&format!("tick-read-bits-sym-{i}"));
            assert_eq!(bit(s.index()) & TICK_READ_BITS, 0, "{i}");
        }
        let before = interned_names();
        for i in 0..40 {
            Keyword::new(&format!("tick-read-bits-count-{i}"));
        }
        // (Other tests intern at the same time: at least the 40 new names.)
        assert!(interned_names() >= before + 40);
    }

    #[test]
    fn namespace_and_name_split_at_the_slash() {
        let k = Keyword::new("beverage/drink!");
        assert_eq!(k.namespace(), Some("beverage"));
        assert_eq!(k.name(), "drink!");
        assert_eq!(Keyword::new("plain").namespace(), None);
        assert_eq!(Symbol::new("/").name(), "/");
        assert_eq!(k.to_string(), ":beverage/drink!");
    }
}
