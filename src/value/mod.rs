//! The one data model for trees and databases.
//!
//! [`Value`] is EDN: nil, booleans, 64-bit integers, floats, strings,
//! characters, keywords, symbols, vectors, lists, sets, insertion-ordered maps
//! and tagged values. Keywords and symbols are interned (see [`Keyword`]), so
//! the db look-ups done on every node visit hash and compare one integer.
//!
//! # Conversions
//!
//! Into a value: booleans, integers that fit in 64 signed bits (`u64`,
//! `usize` and `i128` through `TryFrom`, an error beyond), floats,
//! characters, strings in every form, keywords and symbols, `Option` (`None`
//! is `nil`), vectors, slices and arrays (a vector), `HashSet` and
//! `BTreeSet` (a set), `IndexMap` with any hasher, `HashMap` and `BTreeMap`
//! (a map, in the source's iteration order), and any iterator of key/value
//! pairs through `collect` (a map). Keys and elements convert the same way.
//!
//! Out of a value: `TryFrom<&Value>` for the scalar types above and
//! `String`, an error of [`ValueError`] when the value is of another type
//! or does not fit (no float is truncated into an integer, no integer
//! rounded into a float); anything else, a struct of a host type included,
//! comes out with [`from_value`].
//!
//! An aido [`Map`] converts with `Value::from` by moving it (as
//! `Value::Map(Box::new(map))` does).
//!
//! Host types that implement serde's traits convert whole with
//! [`to_value`] and [`from_value`] (struct fields and enum tags as
//! keywords); JSON with [`Value::to_json_with`] and
//! [`Value::from_json_text`]; `edn_rs::Edn` both ways with the `edn-rs`
//! feature.
//!
//! ```
//! use std::collections::{BTreeMap, HashMap};
//! use aido::Value;
//!
//! let stats: BTreeMap<&str, i64> = [("hp", 10), ("mp", 3)].into();
//! assert_eq!(Value::from(stats).to_string(), r#"{"hp" 10, "mp" 3}"#);
//! let pairs: Value = [(Value::keyword("hp"), 10)].into_iter().collect();
//! assert_eq!(pairs.to_string(), "{:hp 10}");
//! assert_eq!(i64::try_from(&Value::Int(7)).unwrap(), 7);
//! assert!(i64::try_from(&Value::Float(7.5)).is_err()); // never truncated
//! assert!(Value::try_from(u64::MAX).is_err()); // beyond 64 signed bits
//! # let _: HashMap<String, Value> = HashMap::new();
//! ```

mod binary;
mod check;
mod convert;
mod deep;
mod hash;
mod host;
mod index;
mod intern;
mod json;
pub mod map;
mod path;
mod print;

/// How deeply values may nest: the reader refuses deeper text, and
/// conversions and the tick refuse to build deeper values, rather than
/// overflow the stack.
pub const MAX_DEPTH: usize = 256;

use std::hash::{Hash, Hasher};

/// The shared string of [`Value::Str`] (the `arcstr` crate's): one pointer,
/// with the length and reference count in its allocation; cloning is a
/// count increment, `&str` access one pointer hop.
pub use arcstr::ArcStr;
/// The vector of [`Value::Vector`] and [`Value::List`] (the `thin-vec`
/// crate's): `Vec`'s API behind one pointer, with the length and capacity
/// in its allocation; it derefs to a slice.
pub use thin_vec::{ThinVec, thin_vec};

pub use binary::{BINARY_VERSION, BinaryError, BinaryErrorKind, decode, encode};
pub use hash::{FastBuildHasher, FastHasher};
pub use host::{ValueError, ValueErrorKind, from_value, to_value};
pub(crate) use index::{IndexHasher, ValueIndex};
pub(crate) use intern::bounded as intern_bounded;
pub(crate) use intern::kw;
pub use intern::{
    DEFAULT_MAX_INTERNED_NAMES, Keyword, Symbol, interned_names, max_interned_names,
    set_max_interned_names,
};
pub use json::{JsonError, JsonErrorKind, JsonMapping};
pub use path::PathError;
pub(crate) use path::{find, find_kw, map_get, map_slot, slot_in, step as path_step};

pub use map::{Entry, Map, OccupiedEntry, VacantEntry};
/// An insertion-ordered set of values.
pub type Set = indexmap::IndexSet<Value, FastBuildHasher>;

/// An EDN value.
///
/// Equality follows Clojure's `=`: vectors and lists with equal elements are
/// equal, maps and sets ignore order, an integer never equals a float, and
/// floats compare by value (with `NaN` equal to itself so that any value can
/// be a map key).
///
/// Dropping, cloning, comparing, hashing and printing never overflow the
/// stack, however deeply a value nests: past a few hundred levels they go
/// on with an explicit stack, or (hashing, printing, `{:?}`) stop at a
/// marker.
#[derive(Default)]
pub enum Value {
    /// `nil`
    #[default]
    Nil,
    /// `true` / `false`
    Bool(bool),
    /// A 64-bit signed integer.
    Int(i64),
    /// A 64-bit float.
    Float(f64),
    /// A string; cloning shares the text. Made with [`Value::string`] or
    /// `Value::from(text)`.
    Str(ArcStr),
    /// A character such as `\a`.
    Char(char),
    /// A keyword such as `:ns/name`.
    Keyword(Keyword),
    /// A symbol such as `rand`.
    Symbol(Symbol),
    /// `[a b c]`; made with [`Value::vector`], [`thin_vec!`] or
    /// `Value::from(a_vec)`.
    Vector(ThinVec<Value>),
    /// `(a b c)`; made with [`Value::list`] or [`thin_vec!`].
    List(ThinVec<Value>),
    /// `#{a b c}`
    Set(Box<Set>),
    /// `{k v, ...}`, in insertion order.
    Map(Box<Map>),
    /// `#tag value`
    Tagged(Symbol, Box<Value>),
}

impl Value {
    /// A keyword value from its text (`"ns/name"`, no colon).
    pub fn keyword(text: &str) -> Value {
        Value::Keyword(Keyword::new(text))
    }

    /// A symbol value from its text.
    pub fn symbol(text: &str) -> Value {
        Value::Symbol(Symbol::new(text))
    }

    /// A string value.
    pub fn string(text: &str) -> Value {
        Value::Str(ArcStr::from(text))
    }

    /// A vector of the items, in order.
    ///
    /// ```
    /// use aido::Value;
    /// use aido::value::thin_vec;
    ///
    /// let v = Value::vector([Value::Int(1), Value::keyword("a")]);
    /// assert_eq!(v, Value::Vector(thin_vec![Value::Int(1), Value::keyword("a")]));
    /// assert_eq!(v.to_string(), "[1 :a]");
    /// ```
    pub fn vector(items: impl IntoIterator<Item = Value>) -> Value {
        Value::Vector(items.into_iter().collect())
    }

    /// A list of the items, in order.
    pub fn list(items: impl IntoIterator<Item = Value>) -> Value {
        Value::List(items.into_iter().collect())
    }

    /// An empty map.
    pub fn map() -> Value {
        Value::Map(Box::default())
    }

    /// A map from key/value pairs.
    pub fn map_from(entries: impl IntoIterator<Item = (Value, Value)>) -> Value {
        Value::Map(Box::new(entries.into_iter().collect()))
    }

    /// Whether this is `nil`.
    pub fn is_nil(&self) -> bool {
        matches!(self, Value::Nil)
    }

    /// Clojure truthiness: everything but `nil` and `false` is true.
    pub fn is_truthy(&self) -> bool {
        !matches!(self, Value::Nil | Value::Bool(false))
    }

    /// The map inside, if this is a map.
    pub fn as_map(&self) -> Option<&Map> {
        match self {
            Value::Map(m) => Some(m),
            _ => None,
        }
    }

    /// The map inside, mutably, if this is a map.
    pub fn as_map_mut(&mut self) -> Option<&mut Map> {
        match self {
            Value::Map(m) => Some(m),
            _ => None,
        }
    }

    /// The keyword inside, if this is a keyword.
    pub fn as_keyword(&self) -> Option<Keyword> {
        match self {
            Value::Keyword(k) => Some(*k),
            _ => None,
        }
    }

    /// The integer inside, if this is an integer.
    pub fn as_int(&self) -> Option<i64> {
        match self {
            Value::Int(i) => Some(*i),
            _ => None,
        }
    }

    /// The number inside as a float, if this is an integer or a float.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Int(i) => Some(*i as f64),
            Value::Float(f) => Some(*f),
            _ => None,
        }
    }

    /// The string inside, if this is a string.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The elements, if this is a vector or a list.
    pub fn as_seq(&self) -> Option<&[Value]> {
        match self {
            Value::Vector(v) | Value::List(v) => Some(v),
            _ => None,
        }
    }

    /// The map inside, taken out, if this is a map; else the value itself.
    /// (`Value` implements `Drop`, so a pattern cannot move a field out of
    /// it: this and [`Value::into_seq`] do it instead.)
    ///
    /// ```
    /// let db = aido::read_value("{:a 1}").unwrap();
    /// let map = db.into_map().unwrap();
    /// assert_eq!(map.len(), 1);
    /// assert!(aido::Value::Int(1).into_map().is_err());
    /// ```
    pub fn into_map(mut self) -> Result<Map, Value> {
        match &mut self {
            Value::Map(m) => Ok(std::mem::take(&mut **m)),
            _ => Err(self),
        }
    }

    /// The elements taken out, if this is a vector or a list; else the
    /// value itself.
    pub fn into_seq(mut self) -> Result<ThinVec<Value>, Value> {
        match &mut self {
            Value::Vector(items) | Value::List(items) => Ok(std::mem::take(items)),
            _ => Err(self),
        }
    }

    /// Looks up `key` in a map; `None` for a missing key or a non-map.
    pub fn get(&self, key: &Value) -> Option<&Value> {
        self.as_map().and_then(|m| map_get(m, key))
    }

    /// A short name for the value's type, for error messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Nil => "nil",
            Value::Bool(_) => "boolean",
            Value::Int(_) => "integer",
            Value::Float(_) => "float",
            Value::Str(_) => "string",
            Value::Char(_) => "character",
            Value::Keyword(_) => "keyword",
            Value::Symbol(_) => "symbol",
            Value::Vector(_) => "vector",
            Value::List(_) => "list",
            Value::Set(_) => "set",
            Value::Map(_) => "map",
            Value::Tagged(..) => "tagged value",
        }
    }

    /// The type's name with its article, for messages: `"nil"`, `"an
    /// integer"`, `"a map"`.
    pub fn type_with_article(&self) -> &'static str {
        match self {
            Value::Nil => "nil",
            Value::Bool(_) => "a boolean",
            Value::Int(_) => "an integer",
            Value::Float(_) => "a float",
            Value::Str(_) => "a string",
            Value::Char(_) => "a character",
            Value::Keyword(_) => "a keyword",
            Value::Symbol(_) => "a symbol",
            Value::Vector(_) => "a vector",
            Value::List(_) => "a list",
            Value::Set(_) => "a set",
            Value::Map(_) => "a map",
            Value::Tagged(..) => "a tagged value",
        }
    }
}

fn float_eq(a: f64, b: f64) -> bool {
    a == b || (a.is_nan() && b.is_nan())
}

impl PartialEq for Value {
    // Inlined: most comparisons are of scalars (node ids, keys), which then
    // cost a compare or two; collections go through a call.
    #[inline]
    fn eq(&self, other: &Value) -> bool {
        use Value::*;
        match (self, other) {
            (Keyword(a), Keyword(b)) => a == b,
            (Int(a), Int(b)) => a == b,
            (Nil, Nil) => true,
            (Bool(a), Bool(b)) => a == b,
            (Float(a), Float(b)) => float_eq(*a, *b),
            // A node id in the db is usually a clone of the tree's: the
            // same string, found equal without reading it.
            (Str(a), Str(b)) => ArcStr::ptr_eq(a, b) || a == b,
            (Char(a), Char(b)) => a == b,
            (Symbol(a), Symbol(b)) => a == b,
            (Vector(_) | List(_) | Set(_) | Map(_) | Tagged(..), _) => collection_eq(self, other),
            _ => false,
        }
    }
}

/// `a == b` where `a` is a collection.
#[inline(never)]
fn collection_eq(a: &Value, b: &Value) -> bool {
    // Collections nest: deep ones are compared without recursion.
    match collection_depth_guard(&COMPARING, || collections_eq(a, b)) {
        Some(same) => same,
        None => check::eq_without_recursion(a, b),
    }
}

impl Eq for Value {}

/// The collection comparison, one level: recursion goes through `eq`.
fn collections_eq(a: &Value, b: &Value) -> bool {
    use Value::*;
    match (a, b) {
        (Vector(a) | List(a), Vector(b) | List(b)) => a == b,
        (Set(a), Set(b)) => a == b,
        (Map(a), Map(b)) => a == b,
        (Tagged(ta, a), Tagged(tb, b)) => ta == tb && a == b,
        _ => false,
    }
}

/// How deeply comparing and hashing recurse before they change strategy:
/// values read or built by ticks never nest this deep (`MAX_DEPTH`), so
/// only values built in Rust get there.
const RECURSION_DEPTH: usize = 2 * MAX_DEPTH;

thread_local! {
    /// How many collections `eq` is inside, on this thread.
    static COMPARING: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    /// How many collections `hash` is inside, on this thread. A counter of
    /// its own: a value's hash must not depend on whether it is worked out
    /// inside a comparison (a set look-up within `eq`) or not.
    static HASHING: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

type Nesting = std::thread::LocalKey<std::cell::Cell<usize>>;

/// Runs `f` one collection deeper by `nesting`; `None` (without running
/// it) once [`RECURSION_DEPTH`] is reached.
fn collection_depth_guard<R>(nesting: &'static Nesting, f: impl FnOnce() -> R) -> Option<R> {
    let depth = nesting.with(std::cell::Cell::get);
    if depth >= RECURSION_DEPTH {
        return None;
    }
    nesting.with(|d| d.set(depth + 1));
    let result = f();
    nesting.with(|d| d.set(depth));
    Some(result)
}

fn unordered_hash<'a, I: Iterator<Item = (&'a Value, Option<&'a Value>)>>(items: I) -> u64 {
    // Maps and sets compare regardless of order, so their hash must not depend on it.
    items.fold(0u64, |acc, (k, v)| {
        let mut h = FastHasher::default();
        k.hash(&mut h);
        if let Some(v) = v {
            v.hash(&mut h);
        }
        acc.wrapping_add(h.finish())
    })
}

/// SipHash with random keys, for strings.
fn string_hasher() -> &'static std::hash::RandomState {
    static STATE: std::sync::OnceLock<std::hash::RandomState> = std::sync::OnceLock::new();
    STATE.get_or_init(std::hash::RandomState::new)
}

/// `x` mixed with the process's random key (the splitmix64 finaliser, a
/// bijection whose every output bit depends on every input bit).
#[inline]
fn keyed(x: u64) -> u64 {
    static KEY: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    let key = *KEY.get_or_init(|| {
        use std::hash::{BuildHasher, Hasher};
        string_hasher().build_hasher().finish()
    });
    let mut z = x ^ key;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The word a keyword key hashes as (see `Hash for Value`).
#[inline(always)]
fn keyword_word(k: Keyword) -> u64 {
    0x4b00_0000_0000 | u64::from(k.index())
}

/// The hash a [`Map`] gives the key `Value::Keyword(k)`, worked out without
/// making the `Value`: a keyword key is looked up in a large map with it.
#[inline(always)]
pub(crate) fn keyword_hash(k: Keyword) -> u64 {
    let mut state = FastHasher::default();
    state.write_u64(keyword_word(k));
    state.finish()
}

impl Hash for Value {
    #[inline]
    fn hash<H: Hasher>(&self, state: &mut H) {
        use Value::*;
        match self {
            Keyword(k) => state.write_u64(keyword_word(*k)),
            // Numbers, characters and strings can be chosen by whoever writes
            // a db: they are mixed with a per-process random key first, so
            // that keys chosen to collide in the fast hasher do not.
            Int(i) => state.write_u64(keyed(*i as u64 ^ 0x1000_0000_0000_0000)),
            Nil => state.write_u8(0),
            Bool(b) => state.write_u8(2 + u8::from(*b)),
            Float(f) => {
                let bits = if *f == 0.0 {
                    0
                } else if f.is_nan() {
                    u64::MAX
                } else {
                    f.to_bits()
                };
                state.write_u64(keyed(bits ^ 0x2000_0000_0000_0000));
            }
            Str(s) => {
                state.write_u8(5);
                state.write_u64(std::hash::BuildHasher::hash_one(
                    string_hasher(),
                    s.as_ref() as &str,
                ));
            }
            Char(c) => state.write_u64(keyed(u64::from(*c) ^ 0x3000_0000_0000_0000)),
            Symbol(s) => state.write_u64(0x5300_0000_0000 | u64::from(s.index())),
            Vector(v) | List(v) => {
                state.write_u8(9);
                state.write_usize(v.len());
                // Beyond the recursion depth only the shape so far is
                // hashed: equal values still hash alike.
                let _ = collection_depth_guard(&HASHING, || {
                    for x in v {
                        x.hash(state);
                    }
                });
            }
            Set(s) => {
                state.write_u8(10);
                state.write_usize(s.len());
                if let Some(h) =
                    collection_depth_guard(&HASHING, || unordered_hash(s.iter().map(|k| (k, None))))
                {
                    state.write_u64(h);
                }
            }
            Map(m) => {
                state.write_u8(11);
                state.write_usize(m.len());
                if let Some(h) = collection_depth_guard(&HASHING, || {
                    unordered_hash(m.iter().map(|(k, v)| (k, Some(v))))
                }) {
                    state.write_u64(h);
                }
            }
            Tagged(t, v) => {
                state.write_u64(0x7400_0000_0000 | u64::from(t.index()));
                let _ = collection_depth_guard(&HASHING, || v.hash(state));
            }
        }
    }
}

/// A value given whole, for functions that keep it and would otherwise copy
/// it (such as [`crate::compile()`]).
impl From<Value> for std::borrow::Cow<'_, Value> {
    fn from(v: Value) -> Self {
        std::borrow::Cow::Owned(v)
    }
}

/// A borrowed value, which a function that keeps it copies.
impl<'a> From<&'a Value> for std::borrow::Cow<'a, Value> {
    fn from(v: &'a Value) -> Self {
        std::borrow::Cow::Borrowed(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_is_two_words_and_an_absent_one_costs_nothing_more() {
        // A db is mostly values: every entry holds one, every agent one.
        assert_eq!(std::mem::size_of::<Value>(), 16);
        assert_eq!(std::mem::size_of::<Option<Value>>(), 16);
    }

    #[test]
    fn a_string_clone_shares_its_text_and_a_vector_converts_without_copying() {
        let s = Value::string("id");
        let Value::Str(a) = &s else { unreachable!() };
        let copy = s.clone();
        let Value::Str(b) = &copy else { unreachable!() };
        assert!(ArcStr::ptr_eq(a, b));
        let items: ThinVec<Value> = thin_vec![Value::Int(1), Value::Nil];
        let at = items.as_ptr();
        let v = Value::from(items);
        assert_eq!(v.as_seq().map(<[Value]>::as_ptr), Some(at));
        assert_eq!(Value::vector([Value::Int(1), Value::Nil]), v);
        assert_eq!(
            Value::list([Value::Int(1), Value::Nil]).to_string(),
            "(1 nil)"
        );
        assert_eq!(v.into_seq().map(|s| s.as_ptr()), Ok(at));
    }

    #[test]
    fn vectors_and_lists_with_equal_elements_are_equal_and_hash_alike() {
        let v = Value::Vector(crate::value::thin_vec![Value::Int(1), Value::keyword("a")]);
        let l = Value::List(crate::value::thin_vec![Value::Int(1), Value::keyword("a")]);
        assert_eq!(v, l);
        let hash = |x: &Value| {
            let mut h = FastHasher::default();
            x.hash(&mut h);
            h.finish()
        };
        assert_eq!(hash(&v), hash(&l));
    }

    #[test]
    fn integers_never_equal_floats() {
        assert_ne!(Value::Int(1), Value::Float(1.0));
        assert_eq!(Value::Float(0.0), Value::Float(-0.0));
        assert_eq!(Value::Float(f64::NAN), Value::Float(f64::NAN));
    }

    #[test]
    fn maps_compare_regardless_of_order() {
        let a = Value::map_from([
            (Value::keyword("a"), 1.into()),
            (Value::keyword("b"), 2.into()),
        ]);
        let b = Value::map_from([
            (Value::keyword("b"), 2.into()),
            (Value::keyword("a"), 1.into()),
        ]);
        assert_eq!(a, b);
        let hash = |x: &Value| {
            let mut h = FastHasher::default();
            x.hash(&mut h);
            h.finish()
        };
        assert_eq!(hash(&a), hash(&b));
    }

    #[test]
    fn truthiness_is_clojures() {
        assert!(!Value::Nil.is_truthy());
        assert!(!Value::Bool(false).is_truthy());
        assert!(Value::Int(0).is_truthy());
        assert!(Value::string("").is_truthy());
    }
}
