//! A compact, versioned binary encoding of values, for dbs kept in a store.
//!
//! [`encode`] writes a version byte ([`BINARY_VERSION`]) and then one value;
//! [`decode`] reads it back, equal in every detail: vectors stay vectors and
//! lists lists, maps and sets keep their insertion order, floats keep their
//! bits (NaN, the infinities, `-0.0`), keywords, symbols, characters and tags
//! keep their text. Every later version of the encoding reads every earlier
//! one; a blob of a newer version than this build knows is an error, never a
//! guess.
//!
//! The layout of version 1, one tag byte per value:
//!
//! | tag | value | then |
//! |---|---|---|
//! | 0, 1, 2 | `nil`, `false`, `true` | nothing |
//! | 3 | integer | zigzag LEB128 varint |
//! | 4 | float | 8 bytes, the IEEE bits little-endian |
//! | 5 | string | varint byte length, UTF-8 |
//! | 6 | character | varint scalar value |
//! | 7, 8 | keyword, symbol (first use) | varint byte length, UTF-8 |
//! | 9 | a keyword or symbol used before | varint index into the names of this blob, in order of first use |
//! | 10, 11, 12 | vector, list, set | varint count, the elements |
//! | 13 | map | varint count, then key and value for each entry |
//! | 14 | tagged value | the tag (a symbol, tag 8 or 9), then the value |
//!
//! A db names the same few keywords many times (`:aido/running`, its own
//! keys), so each name is written once and then referred to by its index: a
//! chat agent with forty turns of history takes three quarters of its EDN
//! text (README, *Past one machine*, has the numbers).
//!
//! Decoding is bounded: nesting deeper than [`MAX_DEPTH`](super::MAX_DEPTH)
//! is an error, every length and count is checked against the bytes that
//! remain (each element takes at least one byte) before anything is
//! allocated, and new names count against the interner's bound. A duplicate
//! map key or set element, a bad UTF-8 text, a bad character, an unknown tag,
//! bytes after the value: each is a [`BinaryError`] with a stable code and
//! the byte offset where it was found.

use std::fmt;

use super::{ArcStr, FastBuildHasher, Keyword, MAX_DEPTH, Map, Set, Symbol, ThinVec, Value};

/// The version this build writes. It reads every version from 1 to this one.
pub const BINARY_VERSION: u8 = 1;

const NIL: u8 = 0;
const FALSE: u8 = 1;
const TRUE: u8 = 2;
const INT: u8 = 3;
const FLOAT: u8 = 4;
const STR: u8 = 5;
const CHAR: u8 = 6;
const KEYWORD: u8 = 7;
const SYMBOL: u8 = 8;
const NAME_REF: u8 = 9;
const VECTOR: u8 = 10;
const LIST: u8 = 11;
const SET: u8 = 12;
const MAP: u8 = 13;
const TAGGED: u8 = 14;

/// Why bytes could not be decoded, or a value encoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BinaryError {
    /// What went wrong.
    pub kind: BinaryErrorKind,
    /// The byte offset in the blob where it was found (0 when encoding).
    pub offset: usize,
}

/// The kinds of [`BinaryError`], each with a stable code (`B0001`...).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum BinaryErrorKind {
    /// The blob is empty: not even a version byte.
    Empty,
    /// A version this build does not know (newer than [`BINARY_VERSION`], or 0).
    UnsupportedVersion(u8),
    /// The blob ends inside a value.
    UnexpectedEnd,
    /// A tag byte that names no kind of value.
    UnknownTag(u8),
    /// A varint longer than 64 bits.
    BadVarint,
    /// A length or count larger than the bytes that remain could hold.
    LengthTooLarge(u64),
    /// Text that is not UTF-8.
    BadUtf8,
    /// A character code that is not a Unicode scalar value.
    BadChar(u64),
    /// A name reference to a name not yet given.
    BadNameRef(u64),
    /// A tagged value whose tag is not a symbol.
    BadTag,
    /// Values nest more than `MAX_DEPTH` deep.
    TooDeep,
    /// A map key given twice (by Clojure equality).
    DuplicateKey,
    /// A set element given twice.
    DuplicateElement,
    /// Bytes after the value.
    TrailingBytes(usize),
    /// The interner's bound on distinct names was reached.
    TooManyNames,
}

impl BinaryErrorKind {
    /// The stable code of the kind, `B0001` (empty) to `B0015`, never reused.
    pub fn code(&self) -> &'static str {
        match self {
            BinaryErrorKind::Empty => "B0001",
            BinaryErrorKind::UnsupportedVersion(_) => "B0002",
            BinaryErrorKind::UnexpectedEnd => "B0003",
            BinaryErrorKind::UnknownTag(_) => "B0004",
            BinaryErrorKind::BadVarint => "B0005",
            BinaryErrorKind::LengthTooLarge(_) => "B0006",
            BinaryErrorKind::BadUtf8 => "B0007",
            BinaryErrorKind::BadChar(_) => "B0008",
            BinaryErrorKind::BadNameRef(_) => "B0009",
            BinaryErrorKind::BadTag => "B0010",
            BinaryErrorKind::TooDeep => "B0011",
            BinaryErrorKind::DuplicateKey => "B0012",
            BinaryErrorKind::DuplicateElement => "B0013",
            BinaryErrorKind::TrailingBytes(_) => "B0014",
            BinaryErrorKind::TooManyNames => "B0015",
        }
    }
}

impl BinaryError {
    /// The stable code of the error's kind.
    pub fn code(&self) -> &'static str {
        self.kind.code()
    }
}

impl fmt::Display for BinaryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            BinaryErrorKind::Empty => f.write_str("an empty blob: no version byte")?,
            BinaryErrorKind::UnsupportedVersion(v) => write!(
                f,
                "binary encoding version {v} is not one this build reads (1 to {BINARY_VERSION})"
            )?,
            BinaryErrorKind::UnexpectedEnd => f.write_str("the blob ends inside a value")?,
            BinaryErrorKind::UnknownTag(t) => write!(f, "unknown value tag {t}")?,
            BinaryErrorKind::BadVarint => f.write_str("a varint longer than 64 bits")?,
            BinaryErrorKind::LengthTooLarge(n) => {
                write!(f, "a length of {n} is more than the bytes that remain")?
            }
            BinaryErrorKind::BadUtf8 => f.write_str("text that is not UTF-8")?,
            BinaryErrorKind::BadChar(c) => write!(f, "{c:#x} is not a Unicode scalar value")?,
            BinaryErrorKind::BadNameRef(i) => write!(f, "name reference {i} names no name yet")?,
            BinaryErrorKind::BadTag => f.write_str("a tagged value whose tag is not a symbol")?,
            BinaryErrorKind::TooDeep => write!(f, "values nest more than {MAX_DEPTH} deep")?,
            BinaryErrorKind::DuplicateKey => f.write_str("a map key given twice")?,
            BinaryErrorKind::DuplicateElement => f.write_str("a set element given twice")?,
            BinaryErrorKind::TrailingBytes(n) => write!(f, "{n} bytes after the value")?,
            BinaryErrorKind::TooManyNames => {
                f.write_str("too many distinct keywords and symbols (the interner's bound)")?
            }
        }
        write!(f, " (at byte {}) [{}]", self.offset, self.code())
    }
}

impl std::error::Error for BinaryError {}

/// Encodes `value` as a version byte and its bytes. Fails only on a value
/// (built in Rust) nesting more than `MAX_DEPTH` deep, which the reader and
/// the tick never make.
///
/// ```
/// use aido::value::{decode, encode};
/// let db = aido::read_value("{:n 1, :seen #{\"a\"}, :at ##NaN}").unwrap();
/// let bytes = encode(&db).unwrap();
/// assert_eq!(aido::value::decode(&bytes).unwrap().to_string(), db.to_string());
/// ```
pub fn encode(value: &Value) -> Result<Vec<u8>, BinaryError> {
    let mut out = Vec::with_capacity(64);
    out.push(BINARY_VERSION);
    let mut enc = Encoder {
        out,
        names: std::collections::HashMap::new(),
    };
    enc.value(value, 0)?;
    Ok(enc.out)
}

struct Encoder {
    out: Vec<u8>,
    /// Names written so far: (is a symbol, interned index) → position.
    names: std::collections::HashMap<(bool, u32), u64>,
}

impl Encoder {
    fn varint(&mut self, mut n: u64) {
        while n >= 0x80 {
            self.out.push((n as u8) | 0x80);
            n >>= 7;
        }
        self.out.push(n as u8);
    }

    fn text(&mut self, text: &str) {
        self.varint(text.len() as u64);
        self.out.extend_from_slice(text.as_bytes());
    }

    fn name(&mut self, symbol: bool, index: u32, text: &str) {
        let next = self.names.len() as u64;
        match self.names.entry((symbol, index)) {
            std::collections::hash_map::Entry::Occupied(at) => {
                let at = *at.get();
                self.out.push(NAME_REF);
                self.varint(at);
            }
            std::collections::hash_map::Entry::Vacant(slot) => {
                slot.insert(next);
                self.out.push(if symbol { SYMBOL } else { KEYWORD });
                self.text(text);
            }
        }
    }

    fn value(&mut self, value: &Value, depth: usize) -> Result<(), BinaryError> {
        match value {
            Value::Nil => self.out.push(NIL),
            Value::Bool(false) => self.out.push(FALSE),
            Value::Bool(true) => self.out.push(TRUE),
            Value::Int(i) => {
                self.out.push(INT);
                self.varint(((*i << 1) ^ (*i >> 63)) as u64);
            }
            Value::Float(f) => {
                self.out.push(FLOAT);
                self.out.extend_from_slice(&f.to_bits().to_le_bytes());
            }
            Value::Str(s) => {
                self.out.push(STR);
                self.text(s);
            }
            Value::Char(c) => {
                self.out.push(CHAR);
                self.varint(u64::from(u32::from(*c)));
            }
            Value::Keyword(k) => self.name(false, k.index(), k.as_str()),
            Value::Symbol(s) => self.name(true, s.index(), s.as_str()),
            Value::Vector(items) | Value::List(items) => {
                self.deeper(depth)?;
                self.out.push(if matches!(value, Value::Vector(_)) {
                    VECTOR
                } else {
                    LIST
                });
                self.varint(items.len() as u64);
                for item in items {
                    self.value(item, depth + 1)?;
                }
            }
            Value::Set(items) => {
                self.deeper(depth)?;
                self.out.push(SET);
                self.varint(items.len() as u64);
                for item in items.iter() {
                    self.value(item, depth + 1)?;
                }
            }
            Value::Map(map) => {
                self.deeper(depth)?;
                self.out.push(MAP);
                self.varint(map.len() as u64);
                for (k, v) in map.iter() {
                    self.value(k, depth + 1)?;
                    self.value(v, depth + 1)?;
                }
            }
            Value::Tagged(tag, inner) => {
                self.deeper(depth)?;
                self.out.push(TAGGED);
                self.name(true, tag.index(), tag.as_str());
                self.value(inner, depth + 1)?;
            }
        }
        Ok(())
    }

    fn deeper(&self, depth: usize) -> Result<(), BinaryError> {
        if depth >= MAX_DEPTH {
            return Err(BinaryError {
                kind: BinaryErrorKind::TooDeep,
                offset: 0,
            });
        }
        Ok(())
    }
}

/// Decodes a blob written by [`encode`] (of this or any earlier version).
pub fn decode(bytes: &[u8]) -> Result<Value, BinaryError> {
    let Some(&version) = bytes.first() else {
        return Err(BinaryError {
            kind: BinaryErrorKind::Empty,
            offset: 0,
        });
    };
    if version == 0 || version > BINARY_VERSION {
        return Err(BinaryError {
            kind: BinaryErrorKind::UnsupportedVersion(version),
            offset: 0,
        });
    }
    let mut dec = Decoder {
        bytes,
        pos: 1,
        names: Vec::new(),
    };
    let (result, refused) = super::intern_bounded(|| dec.value(0));
    let value = result?;
    if refused {
        return Err(BinaryError {
            kind: BinaryErrorKind::TooManyNames,
            offset: dec.pos,
        });
    }
    if dec.pos < bytes.len() {
        return Err(dec.error(BinaryErrorKind::TrailingBytes(bytes.len() - dec.pos)));
    }
    Ok(value)
}

enum Name {
    Keyword(Keyword),
    Symbol(Symbol),
}

struct Decoder<'a> {
    bytes: &'a [u8],
    pos: usize,
    names: Vec<Name>,
}

impl Decoder<'_> {
    fn error(&self, kind: BinaryErrorKind) -> BinaryError {
        BinaryError {
            kind,
            offset: self.pos,
        }
    }

    fn byte(&mut self) -> Result<u8, BinaryError> {
        let b = *self
            .bytes
            .get(self.pos)
            .ok_or_else(|| self.error(BinaryErrorKind::UnexpectedEnd))?;
        self.pos += 1;
        Ok(b)
    }

    fn varint(&mut self) -> Result<u64, BinaryError> {
        let start = self.pos;
        let mut n: u64 = 0;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            let bits = u64::from(b & 0x7f);
            if shift == 63 && bits > 1 {
                self.pos = start;
                return Err(self.error(BinaryErrorKind::BadVarint));
            }
            n |= bits << shift;
            if b & 0x80 == 0 {
                return Ok(n);
            }
        }
        self.pos = start;
        Err(self.error(BinaryErrorKind::BadVarint))
    }

    /// A length or count, each unit taking at least one of the bytes left.
    fn length(&mut self) -> Result<usize, BinaryError> {
        let at = self.pos;
        let n = self.varint()?;
        let left = self.bytes.len() - self.pos;
        match usize::try_from(n) {
            Ok(n) if n <= left => Ok(n),
            _ => {
                self.pos = at;
                Err(self.error(BinaryErrorKind::LengthTooLarge(n)))
            }
        }
    }

    fn text(&mut self) -> Result<&str, BinaryError> {
        let n = self.length()?;
        let start = self.pos;
        let slice = &self.bytes[start..start + n];
        let text = std::str::from_utf8(slice).map_err(|_| BinaryError {
            kind: BinaryErrorKind::BadUtf8,
            offset: start,
        })?;
        self.pos += n;
        Ok(text)
    }

    fn value(&mut self, depth: usize) -> Result<Value, BinaryError> {
        let at = self.pos;
        let tag = self.byte()?;
        Ok(match tag {
            NIL => Value::Nil,
            FALSE => Value::Bool(false),
            TRUE => Value::Bool(true),
            INT => {
                let z = self.varint()?;
                Value::Int(((z >> 1) as i64) ^ -((z & 1) as i64))
            }
            FLOAT => {
                let end = self.pos + 8;
                let Some(bits) = self.bytes.get(self.pos..end) else {
                    return Err(self.error(BinaryErrorKind::UnexpectedEnd));
                };
                let mut raw = [0u8; 8];
                raw.copy_from_slice(bits);
                self.pos = end;
                Value::Float(f64::from_bits(u64::from_le_bytes(raw)))
            }
            STR => Value::Str(ArcStr::from(self.text()?)),
            CHAR => {
                let code_at = self.pos;
                let code = self.varint()?;
                match u32::try_from(code).ok().and_then(char::from_u32) {
                    Some(c) => Value::Char(c),
                    None => {
                        return Err(BinaryError {
                            kind: BinaryErrorKind::BadChar(code),
                            offset: code_at,
                        });
                    }
                }
            }
            KEYWORD => {
                let k = Keyword::new(self.text()?);
                self.names.push(Name::Keyword(k));
                Value::Keyword(k)
            }
            SYMBOL => {
                let s = Symbol::new(self.text()?);
                self.names.push(Name::Symbol(s));
                Value::Symbol(s)
            }
            NAME_REF => {
                let i = self.varint()?;
                match usize::try_from(i).ok().and_then(|i| self.names.get(i)) {
                    Some(Name::Keyword(k)) => Value::Keyword(*k),
                    Some(Name::Symbol(s)) => Value::Symbol(*s),
                    None => {
                        self.pos = at;
                        return Err(self.error(BinaryErrorKind::BadNameRef(i)));
                    }
                }
            }
            VECTOR | LIST | SET | MAP | TAGGED => {
                if depth >= MAX_DEPTH {
                    self.pos = at;
                    return Err(self.error(BinaryErrorKind::TooDeep));
                }
                self.collection(tag, depth + 1)?
            }
            other => {
                self.pos = at;
                return Err(self.error(BinaryErrorKind::UnknownTag(other)));
            }
        })
    }

    fn collection(&mut self, tag: u8, depth: usize) -> Result<Value, BinaryError> {
        if tag == TAGGED {
            let tag_at = self.pos;
            let Value::Symbol(symbol) = self.value(depth)? else {
                self.pos = tag_at;
                return Err(self.error(BinaryErrorKind::BadTag));
            };
            return Ok(Value::Tagged(symbol, Box::new(self.value(depth)?)));
        }
        let n = self.length()?;
        match tag {
            VECTOR | LIST => {
                let mut items = ThinVec::with_capacity(n);
                for _ in 0..n {
                    items.push(self.value(depth)?);
                }
                Ok(if tag == VECTOR {
                    Value::Vector(items)
                } else {
                    Value::List(items)
                })
            }
            SET => {
                let mut set = Set::with_capacity_and_hasher(n, FastBuildHasher::default());
                for _ in 0..n {
                    let at = self.pos;
                    if !set.insert(self.value(depth)?) {
                        self.pos = at;
                        return Err(self.error(BinaryErrorKind::DuplicateElement));
                    }
                }
                Ok(Value::Set(Box::new(set)))
            }
            _ => {
                // A map entry takes at least two bytes.
                let mut map = Map::with_capacity(n / 2);
                for _ in 0..n {
                    let at = self.pos;
                    let key = self.value(depth)?;
                    let value = self.value(depth)?;
                    if map.insert(key, value).is_some() {
                        self.pos = at;
                        return Err(self.error(BinaryErrorKind::DuplicateKey));
                    }
                }
                Ok(Value::Map(Box::new(map)))
            }
        }
    }
}
