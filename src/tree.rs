//! The compiled tree: one flat, immutable table of nodes in pre-order.
//!
//! A [`Tree`] is the shape of a behaviour; it holds no per-agent state and is
//! `Send + Sync`, so any number of agents (dbs) can share one. Options are
//! already typed and key paths already interned, so the interpreter never
//! re-checks what the compiler proved.

use std::fmt::{self, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};

use crate::extend::{Function, NodeType};
use crate::source::{Source, Span};
use crate::spec::Operator;
use crate::value::{Keyword, Map, PathError, Value};

/// The index of a node in its [`Tree`]; the root is `NodeIndex(0)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeIndex(pub(crate) u32);

impl NodeIndex {
    /// The index as a `usize`.
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// Where a keyword key was last found in a db: an inline cache.
///
/// Agents that share a tree usually have dbs of the same shape, so a key
/// tends to sit at the same position in every db. Checking that position
/// first turns most look-ups into one comparison. The hint is only ever a
/// guess (relaxed atomics, so a tree stays `Sync`); a wrong one costs a search.
///
/// Agents on other threads store into the hint at any moment, so a look-up
/// loads it once ([`SlotHint::at`]) and uses the position it checked: a
/// second load may give another position, where the db holds another key.
#[derive(Debug, Default)]
pub(crate) struct SlotHint(AtomicU32);

impl Clone for SlotHint {
    fn clone(&self) -> SlotHint {
        SlotHint(AtomicU32::new(self.0.load(Relaxed)))
    }
}

/// Which compiled tree, as its nodes are: a number from a process-wide
/// counter, never 0 and never handed out twice. State a tick keeps on its
/// thread between ticks (the running set left filed, with its nodes' ids:
/// see `tick::Long::filed_ids`) is valid for the tree it was made with,
/// and while that tree's nodes are as they were: a tick of a tree with the
/// same identity may then trust what it proved about those nodes (which
/// node has which id, which are plain) without reading them again.
///
/// So every change to a compiled tree's nodes, or to anything that proof
/// reads, renews it. Where a `Tree`'s nodes are changed (audited by a
/// search for `nodes`, `&mut Tree` and `mut tree` outside `src/nodes`):
/// - `compile::Compiler::run` makes every `Tree` there is, with a fresh
///   identity (a compile from text, from data, an edit's or trim's compile
///   again, a hot reload: each is a new tree);
/// - `Stubs::apply_with` (`stub.rs`) changes node kinds and marks the
///   plain path again: it renews the identity ([`Identity::renew`]);
/// - `Tree::clone` copies the nodes, but a derived id's string is made
///   per tree on first use, so a clone's ids are other strings: a clone
///   gets a fresh identity (see the `Clone` impl);
/// - nothing else takes a `Tree`'s nodes mutably (its other fields that
///   a tick writes, the position hints and closures, are caches that
///   prove nothing about the nodes); tests that do never tick the tree
///   afterwards.
///
/// Tests: `tree::tests::identity_*` (each path renews it) and
/// `tests/it/long_path.rs` (a set a host edits in place is still seen).
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Identity(u64);

impl Identity {
    /// An identity no other tree has had.
    pub(crate) fn fresh() -> Identity {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        Identity(NEXT.fetch_add(1, Relaxed))
    }

    /// Gives the tree a new identity: its nodes changed.
    pub(crate) fn renew(&mut self) {
        *self = Identity::fresh();
    }

    /// The number (never 0).
    #[inline(always)]
    pub(crate) fn get(&self) -> u64 {
        self.0
    }
}

impl Clone for Identity {
    /// A fresh identity: a clone's nodes make their derived ids' strings
    /// anew (see [`Identity`]).
    fn clone(&self) -> Identity {
        Identity::fresh()
    }
}

/// Whether two node ids are equal, deciding the usual cases in place: an
/// id in the db is usually the tree's own keyword or a clone of its string
/// (the same allocation), so no call to the general comparison is made.
#[inline(always)]
pub(crate) fn same_id(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Keyword(x), Value::Keyword(y)) => x == y,
        (Value::Str(x), Value::Str(y)) if crate::value::ArcStr::ptr_eq(x, y) => true,
        _ => a == b,
    }
}

impl SlotHint {
    /// The position the hint remembers, as a `usize`: load it once per
    /// look-up, check it against the db, and use that same position.
    #[inline(always)]
    fn at(&self) -> usize {
        self.0.load(Relaxed) as usize
    }

    /// The position of keyword `key` in `db`, trying the remembered
    /// position first.
    #[inline(always)]
    pub(crate) fn find(&self, db: &Map, key: Keyword) -> Option<usize> {
        let hint = self.at();
        if db.keyword_at(hint, key) {
            return Some(hint);
        }
        self.search(db, key)
    }

    /// The position of keyword `key` in `db` if the hint remembers it
    /// there: a hit proves `key` is a key, and where, without a search.
    #[inline(always)]
    pub(crate) fn hit(&self, db: &Map, key: Keyword) -> Option<usize> {
        let at = self.at();
        db.keyword_at(at, key).then_some(at)
    }

    /// The value of keyword `key` in `map` where the hint says, if it is
    /// there: one bounds check and one comparison, no search (a miss is
    /// left to the caller's full look-up, which remembers the new place).
    #[inline(always)]
    pub(crate) fn hit_value_mut<'a>(
        &self,
        map: &'a mut Map,
        key: Keyword,
    ) -> Option<&'a mut Value> {
        map.keyword_value_at_mut(self.at(), key)
    }

    /// Finds keyword `key` in `db` where the hint did not, and remembers
    /// where: the hint's miss, kept out of the callers' code.
    #[cold]
    #[inline(never)]
    fn search(&self, db: &Map, key: Keyword) -> Option<usize> {
        // A key the filter proves absent (`:aido/memory` after the halt
        // that took it out, looked for as the wait starts again): no pass.
        if db.lacks_keyword(key) {
            return None;
        }
        self.search_inline(db, key)
    }

    /// [`SlotHint::search`]'s body.
    #[inline(always)]
    fn search_inline(&self, db: &Map, key: Keyword) -> Option<usize> {
        let found = crate::value::find_kw(db, key);
        self.remember(found);
        found
    }

    /// [`SlotHint::search`], and the value where the key was found.
    #[cold]
    #[inline(never)]
    fn search_value<'a>(&self, db: &'a Map, key: Keyword) -> Option<&'a Value> {
        self.search_inline(db, key).and_then(|i| db.value_at(i))
    }

    /// The position of `key` (of any type) in `map`, trying the remembered
    /// position first: one comparison in the usual case, instead of hashing
    /// the key (a node id that is a string hashes every byte).
    #[inline(always)]
    pub(crate) fn find_value(&self, map: &Map, key: &Value) -> Option<usize> {
        // A keyword id (the usual case) is compared by its interned index,
        // without making the stored key's `Value` (see `Map::keyword_at`).
        match key {
            Value::Keyword(k) => self.find(map, *k),
            _ => self.find_other(map, key),
        }
    }

    /// [`SlotHint::find_value`] for a key that is not a keyword.
    #[inline(never)]
    fn find_other(&self, map: &Map, key: &Value) -> Option<usize> {
        let hint = self.at();
        if let Some((k, _)) = map.get_index(hint)
            && same_id(k, key)
        {
            return Some(hint);
        }
        let found = crate::value::find(map, key);
        self.remember(found);
        found
    }

    /// Remembers where a key was found (or was just put: a key appended
    /// where a search proved it absent, so that the next look-up finds it
    /// at once).
    #[inline(always)]
    pub(crate) fn remember(&self, found: Option<usize>) {
        if let Some(i) = found {
            self.0.store(u32::try_from(i).unwrap_or(0), Relaxed);
        }
    }

    /// The entry at `removed` was just taken out of the map this hint
    /// looks in (shifting the later entries up by one): a hint past it
    /// follows its key, so that the next look-up does not miss.
    #[inline(always)]
    pub(crate) fn shift_past(&self, removed: usize) {
        let at = self.at();
        if at > removed {
            self.remember(Some(at - 1));
        }
    }
}

pub use crate::spec::MAX_KEY_PATH;

/// A db key or key path, resolved at compile time.
#[derive(Debug, Clone)]
pub(crate) enum KeyPath {
    /// A single keyword key, the usual case.
    Kw(Keyword, SlotHint),
    /// A single key of another type.
    One(Value),
    /// A path of two or more keys.
    Path(Box<[Value]>),
}

impl KeyPath {
    pub(crate) fn from_value(v: &Value) -> KeyPath {
        match v {
            Value::Vector(path) if path.len() == 1 => KeyPath::from_value(&path[0]),
            Value::Vector(path) => KeyPath::Path(path.as_slice().into()),
            Value::Keyword(k) => KeyPath::Kw(*k, SlotHint::default()),
            other => KeyPath::One(other.clone()),
        }
    }

    /// The keys, from the db down.
    pub(crate) fn segments(&self) -> std::borrow::Cow<'_, [Value]> {
        match self {
            KeyPath::Kw(k, _) => std::borrow::Cow::Owned(vec![Value::Keyword(*k)]),
            KeyPath::One(k) => std::borrow::Cow::Borrowed(std::slice::from_ref(k)),
            KeyPath::Path(path) => std::borrow::Cow::Borrowed(path),
        }
    }

    /// The top key: the db key the path starts at.
    pub(crate) fn top(&self) -> Option<Value> {
        match self {
            KeyPath::Kw(k, _) => Some(Value::Keyword(*k)),
            KeyPath::One(k) => Some(k.clone()),
            KeyPath::Path(path) => path.first().cloned(),
        }
    }

    /// How many keys: the levels a value written here sits below the db.
    pub(crate) fn n_keys(&self) -> usize {
        match self {
            KeyPath::Path(path) => path.len(),
            _ => 1,
        }
    }

    /// The value at this path in `db`, if the path is one keyword key and
    /// its hint finds it at once: the look-up every leaf tries first (the
    /// hint's position loaded, checked against the room, one comparison of
    /// key codes). `None` says only "look further" ([`KeyPath::get`] or
    /// [`KeyPath::slot`] do), not that the key is absent.
    #[inline(always)]
    pub(crate) fn hit<'a>(&self, db: &'a Map) -> Option<&'a Value> {
        match self {
            KeyPath::Kw(k, hint) => db.keyword_value_at(hint.at(), *k),
            KeyPath::One(_) | KeyPath::Path(_) => None,
        }
    }

    /// [`KeyPath::hit`], the value to change.
    #[inline(always)]
    pub(crate) fn hit_mut<'a>(&self, db: &'a mut Map) -> Option<&'a mut Value> {
        match self {
            KeyPath::Kw(k, hint) => db.keyword_value_at_mut(hint.at(), *k),
            KeyPath::One(_) | KeyPath::Path(_) => None,
        }
    }

    /// The value at this path in `db`, if there is one.
    #[inline(always)]
    pub(crate) fn get<'a>(&self, db: &'a Map) -> Option<&'a Value> {
        match self.hit(db) {
            Some(v) => Some(v),
            None => self.get_slow(db),
        }
    }

    /// [`KeyPath::get`] where the hint did not find the key: a keyword the
    /// db's filter of keyword keys proves absent answered with a test of a
    /// bit (npc's `:enemy`: a hint cannot remember absence), else a search
    /// (and the hint remembers where it found the key), or a path's walk.
    /// Kept small, so that the test of the bit costs no saved registers.
    #[cold]
    #[inline(never)]
    pub(crate) fn get_slow<'a>(&self, db: &'a Map) -> Option<&'a Value> {
        match self {
            KeyPath::Kw(k, _) if db.lacks_keyword(*k) => None,
            KeyPath::Kw(k, hint) => hint.search_value(db, *k),
            KeyPath::One(_) | KeyPath::Path(_) => self.get_other(db),
        }
    }

    /// [`KeyPath::get_slow`] of a key that is not a keyword, or a path (a
    /// keyword key, which `get_slow` answers itself, is searched here too,
    /// so the match stays exhaustive without a wildcard).
    #[inline(never)]
    fn get_other<'a>(&self, db: &'a Map) -> Option<&'a Value> {
        match self {
            KeyPath::Kw(k, hint) => hint.search_value(db, *k),
            KeyPath::One(k) => crate::value::map_get(db, k),
            KeyPath::Path(path) => {
                let (first, rest) = path.split_first()?;
                let mut here = crate::value::map_get(db, first)?;
                for key in rest {
                    here = crate::value::path_step(here, key)?;
                }
                Some(here)
            }
        }
    }

    /// The slot at this path, inserted as nil if missing.
    ///
    /// The hint is loaded once: the position checked is the position
    /// written. (Loaded again, it may hold what another agent's tick on
    /// another thread stored in between, the place of another key in this
    /// db.)
    #[inline(always)]
    pub(crate) fn slot<'a>(&self, db: &'a mut Map) -> Result<&'a mut Value, PathError> {
        if let KeyPath::Kw(k, hint) = self {
            let at = hint.at();
            if db.keyword_at(at, *k) {
                return db.value_at_mut(at).ok_or(PathError::Empty);
            }
        }
        self.slot_slow(db)
    }

    /// [`KeyPath::slot`] where the hint did not find the key: a search (the
    /// hint remembers where it found it, or where the key was inserted), or
    /// a path's walk, making the maps on the way.
    #[cold]
    #[inline(never)]
    pub(crate) fn slot_slow<'a>(&self, db: &'a mut Map) -> Result<&'a mut Value, PathError> {
        match self {
            KeyPath::Kw(k, hint) => {
                let at = match hint.search(db, *k) {
                    Some(at) => at,
                    None => {
                        let at = db.push(Value::Keyword(*k), Value::Nil);
                        hint.remember(Some(at));
                        at
                    }
                };
                db.value_at_mut(at).ok_or(PathError::Empty)
            }
            KeyPath::One(k) => Ok(crate::value::map_slot(db, k)),
            KeyPath::Path(path) => {
                let (first, rest) = path.split_first().ok_or(PathError::Empty)?;
                let slot = crate::value::map_slot(db, first);
                if rest.is_empty() {
                    Ok(slot)
                } else {
                    crate::value::slot_in(slot, rest)
                }
            }
        }
    }

    pub(crate) fn remove(&self, db: &mut Map) -> Result<(), PathError> {
        match self {
            KeyPath::Kw(k, _) => {
                db.shift_remove(&Value::Keyword(*k));
                Ok(())
            }
            KeyPath::One(k) => {
                db.shift_remove(k);
                Ok(())
            }
            KeyPath::Path(path) => match path.split_first() {
                Some((first, [])) => {
                    db.shift_remove(first);
                    Ok(())
                }
                Some((first, rest)) => match db.get_mut(first) {
                    Some(v) => v.dissoc_in(rest).map(|_| ()),
                    None => Ok(()),
                },
                None => Err(PathError::Empty),
            },
        }
    }
}

impl fmt::Display for KeyPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyPath::Kw(k, _) => write!(f, "{k}"),
            KeyPath::One(k) => write!(f, "{k}"),
            KeyPath::Path(p) => {
                f.write_char('[')?;
                for (i, k) in p.iter().enumerate() {
                    if i > 0 {
                        f.write_char(' ')?;
                    }
                    write!(f, "{k}")?;
                }
                f.write_char(']')
            }
        }
    }
}

/// An option's value: a constant, or resolved each time the node is ticked.
#[derive(Debug, Clone)]
pub(crate) enum Opt {
    Const(Value),
    /// `[:aido/db k ..]`
    Db(KeyPath),
    /// `[:aido/fn f args..]`
    Call(Arc<Function>, Box<[Opt]>),
}

/// A user node's options, by the place its node type declares them (what
/// [`crate::extend::OptSlot`] and [`crate::extend::KeySlot`] read, resolved
/// once when the tree is compiled) and in the order they were written.
#[derive(Debug, Clone, Default)]
pub(crate) struct CustomOptions {
    /// One for each option the node type declares, in its order: a slot's
    /// index is its place here.
    slots: Box<[Slot]>,
    /// The options the node was given, in the order of its options map.
    written: Box<[(Keyword, Written)]>,
    /// The node type's tick, as its [`Imp::Custom`](crate::extend::Imp)
    /// holds it, kept in the node as well: the call then finds the closure
    /// in the node it has fetched, one dependent load nearer than through
    /// the node type. `None` in options built without their node type (a
    /// stub's), whose call goes through the node type.
    call: Option<crate::extend::SharedCall>,
}

/// A declared option of a user node: its key (a slot handed out for
/// another node type's option is told by it), the option the node was
/// given, and for a key-path option its path with the per-site look-up hint.
#[derive(Debug, Clone)]
pub(crate) struct Slot {
    /// The option's key (its index, in the low 32 bits) and what `bits`
    /// holds (a [`scalar`] code, in the high 32): a slot's read compares
    /// it with the word its own key and type make (`OptSlot::tagged`), so
    /// that one comparison tells the node type's option, given as a
    /// constant of the type the slot reads (or not given, for an optional
    /// one), and `bits` is read without a match on the option or the value.
    pub(crate) tagged: u64,
    /// A constant given for an option of a scalar type, as its slot reads
    /// it (`SlotValue::from_bits`); 0 otherwise.
    pub(crate) bits: u64,
    /// The option as given, if it was.
    pub(crate) opt: Option<Opt>,
    /// The key path of an option the node type declares as a key (always
    /// a constant, so resolved here once), if it was given.
    pub(crate) path: Option<KeyPath>,
}

impl Slot {
    /// The option's key.
    #[inline(always)]
    pub(crate) fn key(&self) -> Keyword {
        Keyword::from_index(self.tagged as u32)
    }
}

/// What a [`Slot`]'s `bits` hold: the codes in the high half of its
/// `tagged` word, one for each type a slot reads in bits
/// (`SlotValue::SCALAR_CODE`).
pub(crate) mod scalar {
    use crate::spec::OptionType;
    use crate::value::{Keyword, Value};

    /// Nothing to read in place: an option given as a value of another
    /// type (a string, a collection, a dynamic option), or a key path.
    pub(crate) const NONE: u32 = 0;
    /// An `i64` (`OptionType::Int`).
    pub(crate) const INT: u32 = 1;
    /// A `u64` (`OptionType::Count`).
    pub(crate) const COUNT: u32 = 2;
    /// An `f64`'s bits (`OptionType::Number`; an integer as a float).
    pub(crate) const NUMBER: u32 = 3;
    /// A `bool`, 0 or 1 (`OptionType::Bool`).
    pub(crate) const BOOL: u32 = 4;
    /// A keyword's index (`OptionType::Keyword`).
    pub(crate) const KEYWORD: u32 = 5;
    /// Not given: an optional slot reads `None`.
    pub(crate) const ABSENT: u32 = 6;

    /// The word a slot of `key` compares with the node's (see `Slot`).
    #[inline(always)]
    pub(crate) fn tagged(key: Keyword, code: u32) -> u64 {
        u64::from(key.index()) | u64::from(code) << 32
    }

    /// The code and bits of `value`, given as a constant for an option of
    /// declared type `ty` (checked against it when the tree was
    /// compiled), as its slot reads it; [`NONE`] for any other.
    pub(crate) fn of(ty: &OptionType, value: &Value) -> (u32, u64) {
        match (ty, value) {
            (OptionType::Int, Value::Int(i)) => (INT, *i as u64),
            (OptionType::Count, Value::Int(i)) if *i >= 0 => (COUNT, *i as u64),
            (OptionType::Number, Value::Int(i)) => (NUMBER, (*i as f64).to_bits()),
            (OptionType::Number, Value::Float(f)) => (NUMBER, f.to_bits()),
            (OptionType::Bool, Value::Bool(b)) => (BOOL, u64::from(*b)),
            (OptionType::Keyword, Value::Keyword(k)) => (KEYWORD, u64::from(k.index())),
            _ => (NONE, 0),
        }
    }
}

/// An option as written: where it is kept.
#[derive(Debug, Clone)]
enum Written {
    /// In the slot at this index.
    Declared(u32),
    /// Here: an option the node type does not declare (it accepts any).
    Open(Opt),
}

impl CustomOptions {
    /// The options `entries` of a node of type `node_type`, laid out by the
    /// options it declares.
    pub(crate) fn new(node_type: &NodeType, entries: Box<[(Keyword, Opt)]>) -> CustomOptions {
        let mut slots: Box<[Slot]> = node_type
            .options
            .iter()
            .map(|spec| Slot {
                tagged: scalar::tagged(spec.key, scalar::ABSENT),
                bits: 0,
                opt: None,
                path: None,
            })
            .collect();
        let written = entries
            .into_vec()
            .into_iter()
            .map(|(key, opt)| {
                let Some(i) = slots.iter().position(|s| s.key() == key) else {
                    return (key, Written::Open(opt));
                };
                let ty = node_type.options.get(i).map(|o| &o.ty);
                let is_key = ty == Some(&crate::spec::OptionType::Key);
                if let Some(slot) = slots.get_mut(i) {
                    slot.path = match &opt {
                        Opt::Const(v) if is_key => Some(KeyPath::from_value(v)),
                        _ => None,
                    };
                    let (code, bits) = match (ty, &opt) {
                        (Some(ty), Opt::Const(v)) => scalar::of(ty, v),
                        _ => (scalar::NONE, 0),
                    };
                    slot.tagged = scalar::tagged(key, code);
                    slot.bits = bits;
                    slot.opt = Some(opt);
                }
                (key, Written::Declared(u32::try_from(i).unwrap_or(u32::MAX)))
            })
            .collect();
        let call = match &node_type.imp {
            crate::extend::Imp::Custom(f) => Some(crate::extend::SharedCall(Arc::clone(f))),
            crate::extend::Imp::Builtin(_) => None,
        };
        CustomOptions {
            slots,
            written,
            call,
        }
    }

    /// The options as written, in their order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (Keyword, &Opt)> {
        self.written
            .iter()
            .filter_map(|(key, written)| match written {
                Written::Declared(i) => {
                    let opt = self.slots.get(*i as usize).and_then(|s| s.opt.as_ref());
                    opt.map(|opt| (*key, opt))
                }
                Written::Open(opt) => Some((*key, opt)),
            })
    }

    /// The declared options, by the place the node type declares them.
    #[inline(always)]
    pub(crate) fn slots(&self) -> &[Slot] {
        &self.slots
    }

    /// The node type's tick kept in the node (see `CustomOptions::call`).
    #[inline(always)]
    pub(crate) fn call(&self) -> Option<&crate::extend::CallFn> {
        self.call.as_ref().map(|f| &**f.0)
    }
}

/// The generic precondition options of a node, checked before it is ticked.
#[derive(Debug, Clone, Default)]
pub(crate) struct Preconditions {
    pub(crate) failure_if: Option<Opt>,
    pub(crate) success_if: Option<Opt>,
    pub(crate) skip_if: Option<Opt>,
}

/// What a node does, with its options already typed.
#[derive(Debug, Clone)]
pub(crate) enum Kind {
    // The order is the dispatch's: the leaves that finish in one visit
    // (`one_visit_leaf!`) first, from tag 0, then the other kinds the
    // plain path takes (`nodes::closure`'s `build`), so that each match on a node's kind
    // indexes its jump table with the tag as it is (no subtraction) and
    // tells a leaf by one comparison.
    Present {
        key: KeyPath,
    },
    Equal {
        v1: Opt,
        v2: Opt,
    },
    Test {
        key: KeyPath,
        oper: Operator,
        val: Opt,
    },
    Define {
        key: KeyPath,
        val: Opt,
    },
    Inc {
        key: KeyPath,
    },
    Dissoc {
        key: KeyPath,
    },
    Emit {
        key: KeyPath,
        val: Opt,
        /// `:keep n`: the most elements the vector keeps (the oldest go).
        keep: Option<Box<Opt>>,
    },
    Matches(Box<Matches>),
    /// A `:define!`, `:emit!` or `:inc!` whose key the db schema declares:
    /// what it writes is checked against the declared type when it is ticked.
    Typed(Box<TypedWrite>),
    Success,
    Failure,
    /// `memory`: resume from the child that was running (else reactive).
    Selector {
        memory: bool,
    },
    Sequence {
        memory: bool,
    },
    Parallel(Parallel),
    Loop {
        count: Opt,
    },
    LoopUntilSuccess {
        count: Opt,
    },
    Invert,
    Always,
    Never,
    /// `:force`: a finished child's status becomes Success (`true`) or Failure.
    Force {
        success: bool,
    },
    Custom {
        node_type: Arc<NodeType>,
        options: CustomOptions,
    },
    SelectorP {
        p: Opt,
    },
    Randomly {
        p: Opt,
    },
    Choose,
    ChooseEach {
        repeat: Opt,
    },
    WeightedChoice {
        weights: Opt,
    },
    Wait {
        ticks: Opt,
    },
    Defer {
        action: Keyword,
        into: Option<Box<Target>>,
        options: Box<[(Keyword, Opt)]>,
    },
    /// `[:wait {:seconds s}]`: a wait measured on `:aido/now`.
    WaitSeconds {
        seconds: Opt,
    },
    // The standard decorators (nodes/decorators.rs).
    Timeout {
        period: Period,
        reset: Reset,
    },
    Cooldown(Box<Cooldown>),
    Retry {
        count: Opt,
        reset: Reset,
    },
    Repeat {
        count: Opt,
        reset: Reset,
    },
    RunOnce {
        then: Then,
    },
    Delay {
        period: Period,
        reset: Reset,
    },
    Throttle {
        period: Period,
        reset: Reset,
    },
    KeepRunningUntilFailure,
    ParallelAll {
        max_failures: Opt,
    },
    If,
    Switch(Box<Switch>),
}

/// A decorator's period: `:ticks n` (the node's own ticks) or `:seconds s`
/// (time on `:aido/now`).
#[derive(Debug, Clone)]
pub(crate) enum Period {
    Ticks(Opt),
    Seconds(Opt),
}

impl Period {
    /// The option that gives the period's length.
    pub(crate) fn opt(&self) -> &Opt {
        match self {
            Period::Ticks(opt) | Period::Seconds(opt) => opt,
        }
    }
}

/// When a stateful decorator's memory is cleared (its `:reset` option).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reset {
    /// Never by the tree: it survives finishing, halts, saves and edits of
    /// the tree around it (only the host, or `Runner::reset`, clears it).
    Never,
    /// When its subtree is halted; finishing keeps it.
    OnHalt,
    /// When it finishes (Success or Failure) and when it is halted.
    OnExit,
}

/// What `:run-once` returns once its child has finished (`:then`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Then {
    Skip,
    Success,
    Failure,
    /// The status the child finished with.
    Same,
}

/// `:cooldown`'s options.
#[derive(Debug, Clone)]
pub(crate) struct Cooldown {
    pub(crate) period: Period,
    pub(crate) reset: Reset,
    /// Failure starts the cooldown too, not only Success.
    pub(crate) trigger_on_failure: bool,
    /// Cooling from the first tick on.
    pub(crate) start_cooled: bool,
    /// Where the cooldown keeps its state instead of node memory.
    pub(crate) key: Option<KeyPath>,
}

/// `:switch`'s options.
#[derive(Debug, Clone)]
pub(crate) struct Switch {
    /// The value that picks a case.
    pub(crate) on: Opt,
    /// The cases, one per child (a child more is the default).
    pub(crate) cases: Box<[Value]>,
}

/// `:matches?`: the string at `key` searched with `regex`; the match
/// written to `into`.
#[derive(Debug, Clone)]
pub(crate) struct Matches {
    pub(crate) key: KeyPath,
    pub(crate) regex: Pattern,
    pub(crate) into: Option<Target>,
}

/// Where a node stores what it found or was given (`:into`), with what the
/// db schema says about that place.
#[derive(Debug, Clone)]
pub(crate) struct Target {
    pub(crate) path: KeyPath,
    /// Set when the schema declares the path's top key with a type that
    /// does not take everything.
    pub(crate) check: Option<SchemaCheck>,
}

impl Target {
    /// An unchecked target (a tree compiled without a schema).
    pub(crate) fn plain(path: KeyPath) -> Target {
        Target { path, check: None }
    }
}

/// How a write is held to the db schema when it is ticked.
#[derive(Debug, Clone)]
pub(crate) struct SchemaCheck {
    /// For a top-level key: the type the value written (for `:emit!`,
    /// appended) must have. For a nested path (`[:stats :hp]`): the top
    /// key's type, which its whole value must still have after the write.
    pub(crate) ty: crate::spec::DbType,
    /// Whether the path is nested: the top key's value is checked whole
    /// after the write, and put back as it was when it does not fit.
    pub(crate) whole: bool,
}

/// A write checked against the db schema (see [`Kind::Typed`]).
#[derive(Debug, Clone)]
pub(crate) struct TypedWrite {
    pub(crate) write: WriteKind,
    pub(crate) check: SchemaCheck,
}

/// The writes the db schema checks.
#[derive(Debug, Clone)]
pub(crate) enum WriteKind {
    Define {
        key: KeyPath,
        val: Opt,
    },
    Emit {
        key: KeyPath,
        val: Opt,
        keep: Option<Box<Opt>>,
    },
    Inc {
        key: KeyPath,
    },
}

impl WriteKind {
    /// The key path written.
    pub(crate) fn key(&self) -> &KeyPath {
        match self {
            WriteKind::Define { key, .. }
            | WriteKind::Emit { key, .. }
            | WriteKind::Inc { key } => key,
        }
    }
}

/// A regular expression option: compiled with the tree when constant.
#[derive(Debug, Clone)]
pub(crate) enum Pattern {
    Const(regex::Regex),
    /// Given by `[:aido/db ..]` or `[:aido/fn ..]`: compiled at each use.
    Dynamic(Opt),
}

/// What aido's parallel counts (`:mode`), resolved at compile time when constant.
#[derive(Debug, Clone)]
pub(crate) enum CountMode {
    /// `:success`
    Successes,
    /// `:failure`
    Failures,
    /// Given by `[:aido/db ..]` or `[:aido/fn ..]`.
    Dynamic(Opt),
}

/// How a `:parallel` decides.
#[derive(Debug, Clone)]
pub(crate) enum Parallel {
    /// aido's: count successes (Running included) or failures each tick.
    Count { mode: CountMode, how_many: Opt },
    /// Succeeds when every child has succeeded, fails at the first failure.
    Sequence,
    /// Succeeds at the first success, fails when every child has failed.
    Selector,
    /// Succeeds when `success` children succeeded (default: all), fails when
    /// `failure` failed (default: 1).
    Thresholds {
        success: Option<u64>,
        failure: Option<u64>,
    },
    /// Thresholds of which one or both are dynamic (`[:aido/db ..]`),
    /// resolved each time the parallel is ticked; one not given is the
    /// constant nil. (Boxed, so that the rare case leaves the layout of the
    /// node table as it is.)
    DynamicThresholds(Box<[Opt; 2]>),
}

/// The longest derived id text a [`NodeId`] keeps in place: ids of nodes
/// up to about eleven levels deep (`"0.3.1.2"` is seven bytes).
const INLINE_ID: usize = 22;

/// A node's stable id: a [`Value`] (through `Deref`), made only when it is
/// first asked for when the id is derived from the node's position.
///
/// An explicit `:id` is kept as the value given. A derived id
/// (`"0.3.1"`) short enough is kept as its text, in place: compiling a tree
/// then makes no string per node, and the string (a `Value::Str`, shared by
/// every clone of it, as node memory and the running set in a db hold) is
/// made on the first use of the id and kept. The tree's index of nodes by
/// id hashes and compares the text without making the string (see
/// [`NodeId::is`]), so a compile that is never ticked makes none.
///
/// `NodeId` is not `Clone`: `node.id.clone()` is the id's `Value`.
pub(crate) struct NodeId {
    /// The id as a value: set when the node was compiled for an explicit
    /// id or a derived one too long to keep in place, else on first use.
    value: std::sync::OnceLock<Value>,
    /// The length of the derived id's text in `text`; 0 when the id was
    /// given as a value (no derived id is empty).
    len: u8,
    text: [u8; INLINE_ID],
}

impl NodeId {
    /// The id `value`, as given.
    pub(crate) fn given(value: Value) -> NodeId {
        NodeId {
            value: std::sync::OnceLock::from(value),
            len: 0,
            text: [0; INLINE_ID],
        }
    }

    /// The derived id whose text is `text`: kept in place when short, else
    /// made into a string now.
    pub(crate) fn derived(text: &str) -> NodeId {
        let bytes = text.as_bytes();
        match u8::try_from(bytes.len()) {
            Ok(len) if (1..=INLINE_ID).contains(&bytes.len()) => {
                let mut inline = [0; INLINE_ID];
                if let Some(room) = inline.get_mut(..bytes.len()) {
                    room.copy_from_slice(bytes);
                }
                NodeId {
                    value: std::sync::OnceLock::new(),
                    len,
                    text: inline,
                }
            }
            _ => NodeId::given(Value::Str(crate::value::ArcStr::from(text))),
        }
    }

    /// The derived id's text kept in place, if it is one.
    #[inline]
    fn text(&self) -> Option<&[u8]> {
        match self.len {
            0 => None,
            n => self.text.get(..usize::from(n)),
        }
    }

    /// The id as a value, made from its text on first use.
    #[inline]
    pub(crate) fn value(&self) -> &Value {
        self.value.get_or_init(|| {
            let text = self.text().unwrap_or_default();
            Value::Str(crate::value::ArcStr::from(
                std::str::from_utf8(text).unwrap_or_default(),
            ))
        })
    }

    /// Whether this id is `id`, as `Value`'s equality says, without making
    /// a derived id's string.
    #[inline]
    pub(crate) fn is(&self, id: &Value) -> bool {
        match (self.value.get(), self.text()) {
            (Some(mine), _) => mine == id,
            (None, Some(text)) => matches!(id, Value::Str(s) if s.as_bytes() == text),
            (None, None) => false,
        }
    }

    /// Whether two ids are equal, without making derived ids' strings.
    pub(crate) fn same_as(&self, other: &NodeId) -> bool {
        match (self.text(), other.text()) {
            (Some(a), Some(b)) => a == b,
            (Some(_), None) => other.value.get().is_some_and(|v| self.is(v)),
            (None, _) => self.value.get().is_some_and(|v| other.is(v)),
        }
    }

    /// The id's hash by `hasher` (equal for equal ids, made or not).
    pub(crate) fn index_hash(&self, hasher: &crate::value::IndexHasher) -> u64 {
        match (self.text(), self.value.get()) {
            (Some(text), _) => hasher.hash_text(text),
            (None, Some(value)) => hasher.hash_value(value),
            (None, None) => 0,
        }
    }

    /// A copy of the id (what `Clone` would be, were `clone` not the
    /// value's).
    pub(crate) fn duplicate(&self) -> NodeId {
        NodeId {
            value: self.value.clone(),
            len: self.len,
            text: self.text,
        }
    }
}

impl std::ops::Deref for NodeId {
    type Target = Value;

    #[inline]
    fn deref(&self) -> &Value {
        self.value()
    }
}

impl fmt::Debug for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.value(), f)
    }
}

impl fmt::Display for NodeId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self.value(), f)
    }
}

impl PartialEq<Value> for NodeId {
    fn eq(&self, other: &Value) -> bool {
        self.is(other)
    }
}

impl PartialEq<NodeId> for Value {
    fn eq(&self, other: &NodeId) -> bool {
        other.is(self)
    }
}

/// One node of a compiled tree.
#[derive(Debug)]
pub(crate) struct Node {
    pub(crate) kind: Kind,
    /// The node type's keyword, e.g. `:selector`.
    pub(crate) type_name: Keyword,
    /// The stable id under which node memory is stored (a [`Value`]
    /// through `Deref`; see [`NodeId`]).
    pub(crate) id: NodeId,
    /// Range of this node's children in `Tree::child_ids`.
    pub(crate) children: (u32, u32),
    /// The parent, or `u32::MAX` for the root.
    pub(crate) parent: u32,
    /// Position among the parent's children.
    pub(crate) index_in_parent: u32,
    /// One past the last node of this node's subtree: the subtree is the
    /// index range `self..subtree_end` (pre-order).
    pub(crate) subtree_end: u32,
    /// Preconditions (`:aido/skip-if`, `:aido/success-if`, `:aido/failure-if`).
    pub(crate) pre: Option<Box<Preconditions>>,
    /// Neither this node nor any below it can run, be skipped or has
    /// preconditions: a tick takes the plain path through it
    /// (see `nodes::mark_plain`).
    pub(crate) plain: bool,
    /// A plain `:loop` or `:loop-until-success` whose child is an `:inc!`
    /// or `:define!`: the plain path, traced or not, ticks that action in a
    /// loop of its own (`Engine::repeat_action`). Decided once, by
    /// `nodes::mark_plain`, so that other loops test nothing of their
    /// child's kind on a tick.
    pub(crate) repeats_action: bool,
    /// For a flow that an untraced tick visits on the long path (see
    /// [`Node::long_path`]): how far after it its one child that is not
    /// plain lies (its children before that one are plain, and the long
    /// path's loop over them stops there, with no test of each); 0 for
    /// any node off the long path. A flow whose long child lies further
    /// than this holds stays general. Set by `nodes::mark_plain_node`.
    pub(crate) long_child_at: u8,
    /// A loop's constant `:count`, or a counting parallel's limit worked
    /// out from its constant `:mode` and `:how-many` (it succeeds when
    /// fewer of its children fail, see `nodes::composite::Count::limit`),
    /// when it fits; [`Node::NO_COUNT`] otherwise.
    /// Worked out once by `nodes::mark_plain_node`, so that the plain path
    /// reads a number from the node it has fetched rather than matching
    /// the options on every visit. (It sits in the node's padding: a node
    /// stays 176 bytes.)
    pub(crate) count: u32,
    pub(crate) span: Option<Span>,
    /// Where this node's entry in `:aido/memory` was last found (see
    /// [`SlotHint`]): node memory is looked up by id without hashing it.
    pub(crate) memory_hint: SlotHint,
    /// For a `:wait` whose parent is on the long path: the number of nodes
    /// from the topmost flow of the run of long-path flows above it to the
    /// wait, both counted (the climb a wait that runs on would make on
    /// every tick, worked out once by `nodes::mark_plain_node`); 0
    /// elsewhere, and for a run longer than 255. (It sits in the node's
    /// padding: a node stays 176 bytes.)
    pub(crate) long_run: u8,
}

impl Node {
    /// [`Node::count`] of a node whose count is not a constant that fits.
    pub(crate) const NO_COUNT: u32 = u32::MAX;

    /// A reactive `:selector` or `:sequence` without preconditions whose
    /// one child that is not plain is a `:wait` or a flow marked so too:
    /// an untraced tick visits it on the long path (`nodes::long_path`),
    /// its plain children as the plain path does, and only the `:wait`
    /// keeps the running set. Marked by `nodes::mark_plain_node`.
    #[inline(always)]
    pub(crate) fn long_path(&self) -> bool {
        self.long_child_at != 0
    }
}

impl Clone for Node {
    fn clone(&self) -> Node {
        let Node {
            kind,
            type_name,
            id,
            children,
            parent,
            index_in_parent,
            subtree_end,
            pre,
            plain,
            repeats_action,
            long_child_at,
            count,
            span,
            memory_hint,
            long_run,
        } = self;
        Node {
            kind: kind.clone(),
            type_name: *type_name,
            id: id.duplicate(),
            children: *children,
            parent: *parent,
            index_in_parent: *index_in_parent,
            subtree_end: *subtree_end,
            pre: pre.clone(),
            plain: *plain,
            repeats_action: *repeats_action,
            long_child_at: *long_child_at,
            count: *count,
            span: *span,
            memory_hint: memory_hint.clone(),
            long_run: *long_run,
        }
    }
}

/// A compiled behaviour tree. Immutable, `Send + Sync`, cheap to share.
#[derive(Debug, Clone)]
pub struct Tree {
    pub(crate) nodes: Vec<Node>,
    pub(crate) child_ids: Vec<u32>,
    pub(crate) source: Option<Arc<Source>>,
    /// The files of a tree with includes (spans are then in the map's
    /// space); `None` for a tree of one file or none.
    pub(crate) files: Option<Arc<crate::source::SourceMap>>,
    /// Warnings found while compiling (an unused parameter).
    pub(crate) warnings: Vec<crate::diag::Diagnostic>,
    /// Node index by stable id: node memory and the running set name nodes by id.
    pub(crate) index_by_id: crate::value::ValueIndex,
    /// The tree data it was compiled from: edits (trims) change this data
    /// and compile it again. A plain tree compiled from text reads it
    /// again from the text on first use (see `read::LazyForm`).
    pub(crate) form: crate::read::LazyForm,
    /// The fingerprint a db records under `:aido/tree` (see
    /// [`Tree::fingerprint`]); worked out on first use.
    pub(crate) fingerprint: std::sync::OnceLock<i64>,
    /// Where `:aido/tree` sat in the last db looked at.
    pub(crate) fingerprint_hint: SlotHint,
    /// Where `:aido/memory` was last found in a db.
    pub(crate) memory_key_hint: SlotHint,
    /// Where `:aido/running` was last found in a db.
    pub(crate) running_key_hint: SlotHint,
    /// The plain nodes' closures, which an untraced tick visits them by
    /// (see `nodes::closure`): built on the first untraced tick.
    pub(crate) closures: crate::nodes::closure::Closures,
    /// Whether a node of the tree writes under `:aido/running` (a data
    /// node whose key path starts there): a tick then compares the set it
    /// ends with against the db's, id by id (see `tick::halt::reserved_reach`).
    pub(crate) writes_running: bool,
    /// Whether anything in the tree but the engine can read or write
    /// `:aido/memory` while a tick runs: a user node type or function
    /// (handed the db), or a data node or dynamic option whose key path
    /// can start there. A tick of a tree without such a reader may leave
    /// the entries it removes from a large node memory map marked, and
    /// take them out together at its end (see `tick::halt::mark_removed`).
    pub(crate) reads_memory: bool,
    /// Which tree this is, as its nodes are (see [`Identity`]).
    pub(crate) identity: Identity,
}

impl Tree {
    /// The child indices of `node`.
    #[inline]
    pub(crate) fn children_of(&self, node: &Node) -> &[u32] {
        self.child_ids
            .get(node.children.0 as usize..node.children.1 as usize)
            .unwrap_or(&[])
    }

    /// How many nodes the tree has.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether the tree has no nodes (never true for a compiled tree).
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The source the tree was compiled from, if it was read from text.
    pub fn source(&self) -> Option<&Arc<Source>> {
        self.source.as_ref()
    }

    /// The files the tree was compiled from when it includes others: the
    /// spans of its nodes are in the map's space ([`SourceMap::locate`]).
    ///
    /// [`SourceMap::locate`]: crate::source::SourceMap::locate
    pub fn files(&self) -> Option<&Arc<crate::source::SourceMap>> {
        self.files.as_ref()
    }

    /// The file a span of this tree is in and the span in that file's text
    /// (a tree of one file: its source and the span itself).
    pub fn locate(&self, span: Span) -> Option<(&Arc<Source>, Span)> {
        match &self.files {
            Some(files) => {
                let at = files.locate(span)?;
                Some((files.source(at.file)?, at.span))
            }
            None => Some((self.source.as_ref()?, span)),
        }
    }

    /// The warnings found while compiling the tree (a parameter an included
    /// file never uses), with codes like the errors'.
    pub fn warnings(&self) -> &[crate::diag::Diagnostic] {
        &self.warnings
    }

    /// The node whose stable id is `id`.
    pub fn find(&self, id: &Value) -> Option<NodeIndex> {
        let hash = self.index_by_id.hasher().hash_value(id);
        self.index_by_id
            .get(hash, |i| {
                self.nodes.get(i as usize).is_some_and(|n| n.id.is(id))
            })
            .map(NodeIndex)
    }

    /// The root node.
    pub fn root(&self) -> NodeIndex {
        NodeIndex(0)
    }

    /// Every node, in pre-order (the root first).
    pub fn iter(&self) -> impl Iterator<Item = NodeIndex> + '_ {
        (0..self.nodes.len()).map(|i| NodeIndex(i as u32))
    }

    /// The children of `node`.
    pub fn children(&self, node: NodeIndex) -> impl Iterator<Item = NodeIndex> + '_ {
        let (start, end) = self.nodes.get(node.index()).map_or((0, 0), |n| n.children);
        self.child_ids[start as usize..end as usize]
            .iter()
            .map(|&i| NodeIndex(i))
    }

    /// The node type of `node`, e.g. `:selector`.
    pub fn node_type(&self, node: NodeIndex) -> Option<Keyword> {
        self.nodes.get(node.index()).map(|n| n.type_name)
    }

    /// The stable id of `node`: its `:id` option, or one derived from its position.
    pub fn node_id(&self, node: NodeIndex) -> Option<&Value> {
        self.nodes.get(node.index()).map(|n| n.id.value())
    }

    /// The node's span in the source, if the tree was read from text.
    pub fn span(&self, node: NodeIndex) -> Option<Span> {
        self.nodes.get(node.index()).and_then(|n| n.span)
    }

    /// The node's path: child indices from the root.
    pub fn path(&self, node: NodeIndex) -> Vec<usize> {
        let mut path = Vec::new();
        let mut at = node.0;
        while let Some(n) = self.nodes.get(at as usize) {
            if n.parent == u32::MAX {
                break;
            }
            path.push(n.index_in_parent as usize);
            at = n.parent;
        }
        path.reverse();
        path
    }

    /// The tree data it was compiled from. A tree compiled from text
    /// (without includes or parameters) whose ticks keep no state keeps
    /// only its text and reads the data from it on the first call.
    pub fn form(&self) -> &Value {
        self.form.get()
    }

    /// A fingerprint of the tree's data, the same in every process: a db
    /// records the fingerprint of the tree it was last ticked with under
    /// `:aido/tree`, and a tick with another tree carries the db over first
    /// (see [`crate::migrate::migrate`]).
    pub fn fingerprint(&self) -> i64 {
        *self.fingerprint.get_or_init(|| {
            use std::hash::Hasher;
            let mut h = crate::value::FastHasher::default();
            h.write(self.form().to_string().as_bytes());
            // Non-negative, so that it prints without a sign.
            (h.finish() >> 1) as i64
        })
    }

    /// The `:aido/memory` map of `db` (whatever its type), found by this
    /// tree's position hint.
    #[inline(always)]
    pub(crate) fn memory_of<'a>(&self, db: &'a Map) -> Option<&'a Value> {
        self.memory_key_hint
            .find(db, crate::value::kw::MEMORY)
            .and_then(|i| db.value_at(i))
    }

    /// The `:aido/memory` map of `db`, to change in place.
    #[inline(always)]
    pub(crate) fn memory_of_mut<'a>(&self, db: &'a mut Map) -> Option<&'a mut Value> {
        self.memory_key_hint
            .find(db, crate::value::kw::MEMORY)
            .and_then(|i| db.value_at_mut(i))
    }

    /// The `:aido/tree` entry of `db`, found by this tree's position hint.
    #[inline(always)]
    pub(crate) fn recorded_fingerprint<'a>(&self, db: &'a Map) -> Option<&'a Value> {
        self.fingerprint_hint
            .find(db, crate::value::kw::TREE)
            .and_then(|i| db.value_at(i))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Registry, compile_str};

    /// Whether node `i`'s id has been made into a value.
    fn made(tree: &Tree, i: usize) -> bool {
        tree.nodes[i].id.value.get().is_some()
    }

    #[test]
    fn identity_is_new_for_each_compile_and_each_clone() {
        let text = "[:sequence [:inc! {:key :n}] [:wait {:ticks 3}]]";
        let a = compile_str("a.edn", text, &Registry::new()).unwrap();
        let b = compile_str("b.edn", text, &Registry::new()).unwrap();
        assert_ne!(a.identity, b.identity);
        assert_ne!(a.identity.get(), 0);
        // A clone's derived ids are made apart from the original's.
        let c = a.clone();
        assert_ne!(c.identity, a.identity);
        assert_ne!(c.identity, b.identity);
    }

    #[test]
    fn identity_is_renewed_by_stubs() {
        use crate::stub::{Stub, Stubs};
        let text = "[:sequence [:present? {:id :p :key :a}] [:wait {:id :w :ticks 3}]]";
        let tree = compile_str("t.edn", text, &Registry::new()).unwrap();
        let before = tree.identity.get();
        let mut stubs = Stubs::new();
        let stub = crate::read::read_value(":running").unwrap();
        stubs.insert(Value::keyword("p"), Stub::from_value(&stub).unwrap());
        let stubbed = stubs.apply_matching(tree);
        assert_ne!(stubbed.identity.get(), before);
        // No stub: the tree is handed back as it was.
        let same = Stubs::new().apply_matching(stubbed);
        assert_ne!(same.identity.get(), 0);
    }

    #[test]
    fn a_hint_past_a_removed_entry_follows_its_key_and_no_other_moves() {
        let hint = SlotHint::default();
        hint.remember(Some(7));
        // An entry before the hinted one: the key moved up by one.
        hint.shift_past(5);
        assert_eq!(hint.at(), 6);
        // The hinted entry itself, or one after it: the hint stays.
        hint.shift_past(6);
        assert_eq!(hint.at(), 6);
        hint.shift_past(9);
        assert_eq!(hint.at(), 6);
        let first = SlotHint::default();
        first.shift_past(0);
        assert_eq!(first.at(), 0);
    }

    #[test]
    fn derived_ids_are_found_and_compared_by_their_text_and_made_on_first_use() {
        let long = "[:sequence ".repeat(12) + "[:success]" + &"]".repeat(12);
        let text = format!(r#"[:selector {{:id "a"}} [:success] [:success {{:id :b}}] {long}]"#);
        let tree = compile_str("t.edn", &text, &Registry::new()).unwrap();
        // Found by id without making a derived id's string.
        assert_eq!(tree.find(&Value::string("a.0")), Some(NodeIndex(1)));
        assert_eq!(tree.find(&Value::keyword("b")), Some(NodeIndex(2)));
        assert_eq!(tree.find(&Value::string("b")), None);
        assert_eq!(tree.find(&Value::keyword("a.0")), None);
        assert!(!made(&tree, 1));
        assert!(tree.nodes[1].id.is(&Value::string("a.0")));
        assert!(!tree.nodes[1].id.is(&Value::string("a.1")));
        // Given ids are values from the start; made ids are strings, made
        // once and shared by their clones.
        assert!(made(&tree, 0) && made(&tree, 2));
        let id = tree.node_id(NodeIndex(1)).cloned().unwrap();
        assert!(made(&tree, 1));
        assert_eq!(id, Value::string("a.0"));
        match (&id, &*tree.nodes[1].id) {
            (Value::Str(a), Value::Str(b)) => assert!(crate::value::ArcStr::ptr_eq(a, b)),
            other => panic!("{other:?}"),
        }
        // An id too long to keep in place (the deepest node's is 27 bytes)
        // is a string from the start, and found like the others.
        let deepest = tree.len() - 1;
        assert!(made(&tree, deepest));
        let deep_id = format!("a.2{}", ".0".repeat(12));
        assert_eq!(
            tree.find(&Value::string(&deep_id)),
            Some(NodeIndex(deepest as u32))
        );
        assert_eq!(tree.nodes[deepest].id, Value::string(&deep_id));
        // A copy of the tree keeps the ids as they are.
        let copy = tree.clone();
        assert_eq!(
            copy.find(&Value::string("a.2.0")),
            tree.find(&Value::string("a.2.0"))
        );
        assert_eq!(copy.nodes[3].id.to_string(), r#""a.2""#);
    }

    #[test]
    fn a_derived_id_equal_to_a_given_one_is_a_duplicate() {
        let errors = compile_str(
            "t.edn",
            r#"[:sequence [:success {:id "0.1"}] [:success]]"#,
            &Registry::new(),
        )
        .unwrap_err();
        let codes: Vec<_> = errors.items.iter().map(|d| d.code).collect();
        assert_eq!(codes, [crate::diag::Code::DuplicateId]);
        // Two parents whose ids have the same text (a keyword and a string)
        // give their children equal derived ids.
        let errors = compile_str(
            "t.edn",
            r#"[:sequence [:sequence {:id :p} [:success]] [:sequence {:id "p"} [:success]]]"#,
            &Registry::new(),
        )
        .unwrap_err();
        let codes: Vec<_> = errors.items.iter().map(|d| d.code).collect();
        assert_eq!(codes, [crate::diag::Code::DuplicateId]);
    }
}
