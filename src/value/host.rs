//! Host types as values: `to_value` and `from_value` over serde.

use std::fmt;

use serde::de::{self, DeserializeSeed, IntoDeserializer, Visitor};
use serde::ser::{self, Serialize};

use super::json::is_keyword_text;
use super::{Keyword, MAX_DEPTH, Map, ThinVec, Value};

/// Converts any `Serialize` value into a [`Value`]; [`from_value`] converts
/// back, so a game's own structs become dbs (or parts of them) and come back.
///
/// The mapping follows how JSON dbs are read (object keys become keywords),
/// with keywords wherever a name is meant:
///
/// | Rust (serde data model)                    | [`Value`]                                   |
/// |--------------------------------------------|---------------------------------------------|
/// | `()`, unit struct, `None`                  | `nil`                                       |
/// | `bool`, `char`                             | boolean, character                          |
/// | integers that fit in `i64`                 | integer (a larger `u64`/`i128` is an error) |
/// | `f32`, `f64`                               | float (NaN and infinities included)         |
/// | `String`, `&str`                           | string, always (never turned into a keyword)|
/// | bytes                                      | vector of integers                          |
/// | `Vec`, slices, tuples, tuple structs, sets | vector                                      |
/// | map, struct                                | map; struct field names are keywords        |
/// | map keys that are strings                  | keywords when they are keyword names (`"hp"` → `:hp`), else strings |
/// | unit enum variant `Mood::Calm`             | keyword `:Calm`                             |
/// | other enum variants                        | one-entry map `{:Variant content}`          |
///
/// Reading back ([`from_value`]) reverses it and accepts what a db written by
/// hand holds: a keyword where a string is wanted gives its name without the
/// colon (`:eat` → `"eat"`), a set or a list where a sequence is wanted, and
/// an integer where a float is wanted when the float holds it exactly.
/// What cannot convert is an error with its kind, a stable code and the key
/// path where it happened, never a silent change: an integer beyond 64 bits,
/// an integer that a float would round, a float where an integer is wanted,
/// a missing field, a tagged value (`#inst "..."`, which serde has no form
/// for), two keys that become equal.
///
/// ```
/// use aido::value::{from_value, to_value};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Serialize, Deserialize, PartialEq, Debug)]
/// enum Mood { Calm, Angry }
///
/// #[derive(Serialize, Deserialize, PartialEq, Debug)]
/// struct Npc { hunger: i64, mood: Mood, name: String }
///
/// let npc = Npc { hunger: 3, mood: Mood::Calm, name: "Ada".into() };
/// let db = to_value(&npc).unwrap();
/// assert_eq!(db.to_string(), r#"{:hunger 3, :mood :Calm, :name "Ada"}"#);
/// assert_eq!(from_value::<Npc>(&db).unwrap(), npc);
///
/// let wrong = aido::read_value(r#"{:hunger 1.5, :mood :Calm, :name "Ada"}"#).unwrap();
/// let error = from_value::<Npc>(&wrong).unwrap_err();
/// assert_eq!(error.code(), "V0001");
/// assert_eq!(error.path_text(), "[:hunger]");
/// ```
///
/// To copy a [`Value`] itself, clone it: `from_value::<Value>` goes through
/// serde's data model, which has no keywords, sets or characters.
pub fn to_value<T: Serialize + ?Sized>(value: &T) -> Result<Value, ValueError> {
    value.serialize(Ser {
        depth: 0,
        key: false,
    })
}

/// Converts a [`Value`] into any `Deserialize` type (see [`to_value`] for
/// the mapping); the error names the key path where it failed.
pub fn from_value<'de, T: de::Deserialize<'de>>(value: &'de Value) -> Result<T, ValueError> {
    T::deserialize(De { value, depth: 0 })
}

/// What went wrong converting between a host type and a [`Value`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ValueErrorKind {
    /// The value is of the wrong type (`V0001`): found, expected.
    WrongType {
        /// What the value is.
        found: String,
        /// What the Rust type wanted.
        expected: String,
    },
    /// The value has the right type but is not accepted (`V0002`), such as
    /// `-1` for a `u8` or an unknown enum variant.
    InvalidValue {
        /// What the value is.
        found: String,
        /// What the Rust type wanted.
        expected: String,
    },
    /// A sequence or tuple of the wrong length (`V0003`).
    WrongLength {
        /// The length found.
        found: usize,
        /// What the Rust type wanted.
        expected: String,
    },
    /// A struct field is missing (`V0004`).
    MissingField(&'static str),
    /// A key that the struct does not have, when it denies unknown fields (`V0005`).
    UnknownField(String),
    /// A name that is not one of the enum's variants (`V0006`).
    UnknownVariant(String),
    /// A number that does not fit the other side (`V0007`): an integer
    /// beyond 64 signed bits, or an integer that a float would round.
    OutOfRange(String),
    /// Nested more deeply than [`MAX_DEPTH`] (`V0008`).
    TooDeep,
    /// A value that serde has no form for (`V0009`): a tagged value.
    NoSerdeForm(String),
    /// Two keys of a map became equal (`V0010`).
    DuplicateKey(String),
    /// The type's own error message (`V0011`).
    Custom(String),
}

/// A conversion error with the key path (keys and indices from the root)
/// where it happened.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ValueError {
    /// What went wrong.
    pub kind: ValueErrorKind,
    /// The keys and indices from the root to the value concerned.
    pub path: Vec<Value>,
}

impl ValueError {
    fn new(kind: ValueErrorKind) -> ValueError {
        ValueError {
            kind,
            path: Vec::new(),
        }
    }

    /// The error one step further from the root: `step` (a key or index) goes in front.
    fn within(mut self, step: Value) -> ValueError {
        self.path.insert(0, step);
        self
    }

    /// The stable code of the error's kind, `V0001` to `V0011`.
    pub fn code(&self) -> &'static str {
        match self.kind {
            ValueErrorKind::WrongType { .. } => "V0001",
            ValueErrorKind::InvalidValue { .. } => "V0002",
            ValueErrorKind::WrongLength { .. } => "V0003",
            ValueErrorKind::MissingField(_) => "V0004",
            ValueErrorKind::UnknownField(_) => "V0005",
            ValueErrorKind::UnknownVariant(_) => "V0006",
            ValueErrorKind::OutOfRange(_) => "V0007",
            ValueErrorKind::TooDeep => "V0008",
            ValueErrorKind::NoSerdeForm(_) => "V0009",
            ValueErrorKind::DuplicateKey(_) => "V0010",
            ValueErrorKind::Custom(_) => "V0011",
        }
    }

    /// The path as an EDN vector, `[:npcs 2 :mood]` (`[]` at the root).
    pub fn path_text(&self) -> String {
        super::check::ValuePath(self.path.clone()).to_string()
    }
}

impl fmt::Display for ValueError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            ValueErrorKind::WrongType { found, expected } => {
                write!(f, "found {found}, expected {expected}")?
            }
            ValueErrorKind::InvalidValue { found, expected } => {
                write!(f, "invalid value {found}, expected {expected}")?
            }
            ValueErrorKind::WrongLength { found, expected } => {
                write!(f, "{found} elements, expected {expected}")?
            }
            ValueErrorKind::MissingField(field) => write!(f, "missing field `{field}`")?,
            ValueErrorKind::UnknownField(field) => write!(f, "unknown field `{field}`")?,
            ValueErrorKind::UnknownVariant(name) => write!(f, "unknown variant `{name}`")?,
            ValueErrorKind::OutOfRange(what) => f.write_str(what)?,
            ValueErrorKind::TooDeep => write!(f, "values nest more than {MAX_DEPTH} deep")?,
            ValueErrorKind::NoSerdeForm(what) => write!(f, "{what} has no serde form")?,
            ValueErrorKind::DuplicateKey(key) => write!(f, "two keys become {key}")?,
            ValueErrorKind::Custom(message) => f.write_str(message)?,
        }
        write!(f, " (at {})", self.path_text())
    }
}

impl std::error::Error for ValueError {}

impl ser::Error for ValueError {
    fn custom<T: fmt::Display>(msg: T) -> ValueError {
        ValueError::new(ValueErrorKind::Custom(msg.to_string()))
    }
}

impl de::Error for ValueError {
    fn custom<T: fmt::Display>(msg: T) -> ValueError {
        ValueError::new(ValueErrorKind::Custom(msg.to_string()))
    }

    fn invalid_type(found: de::Unexpected<'_>, expected: &dyn de::Expected) -> ValueError {
        ValueError::new(ValueErrorKind::WrongType {
            found: found.to_string(),
            expected: expected.to_string(),
        })
    }

    fn invalid_value(found: de::Unexpected<'_>, expected: &dyn de::Expected) -> ValueError {
        ValueError::new(ValueErrorKind::InvalidValue {
            found: found.to_string(),
            expected: expected.to_string(),
        })
    }

    fn invalid_length(found: usize, expected: &dyn de::Expected) -> ValueError {
        ValueError::new(ValueErrorKind::WrongLength {
            found,
            expected: expected.to_string(),
        })
    }

    fn unknown_variant(variant: &str, _expected: &'static [&'static str]) -> ValueError {
        ValueError::new(ValueErrorKind::UnknownVariant(variant.to_owned()))
    }

    fn unknown_field(field: &str, _expected: &'static [&'static str]) -> ValueError {
        ValueError::new(ValueErrorKind::UnknownField(field.to_owned()))
    }

    fn missing_field(field: &'static str) -> ValueError {
        ValueError::new(ValueErrorKind::MissingField(field))
    }

    fn duplicate_field(field: &'static str) -> ValueError {
        ValueError::new(ValueErrorKind::DuplicateKey(format!(":{field}")))
    }
}

/// A name (field, variant, key) as a keyword when it reads back as one,
/// else as a string.
fn name_value(name: &str) -> Value {
    if is_keyword_text(name) {
        Value::Keyword(Keyword::new(name))
    } else {
        Value::string(name)
    }
}

fn out_of_range(what: impl fmt::Display) -> ValueError {
    ValueError::new(ValueErrorKind::OutOfRange(format!(
        "integer {what} does not fit in 64 signed bits"
    )))
}

/// Serialises into a [`Value`]; `key` is set for map keys, whose strings
/// become keywords when they are keyword names.
#[derive(Clone, Copy)]
struct Ser {
    depth: usize,
    key: bool,
}

impl Ser {
    /// The serialiser for the elements of a collection at this depth.
    fn nested(self) -> Result<Ser, ValueError> {
        if self.depth >= MAX_DEPTH {
            return Err(ValueError::new(ValueErrorKind::TooDeep));
        }
        Ok(Ser {
            depth: self.depth + 1,
            key: false,
        })
    }
}

fn int<T: TryInto<i64> + fmt::Display + Copy>(v: T) -> Result<Value, ValueError> {
    v.try_into().map(Value::Int).map_err(|_| out_of_range(v))
}

impl ser::Serializer for Ser {
    type Ok = Value;
    type Error = ValueError;
    type SerializeSeq = SeqSer;
    type SerializeTuple = SeqSer;
    type SerializeTupleStruct = SeqSer;
    type SerializeTupleVariant = VariantSer<SeqSer>;
    type SerializeMap = MapSer;
    type SerializeStruct = MapSer;
    type SerializeStructVariant = VariantSer<MapSer>;

    fn serialize_bool(self, v: bool) -> Result<Value, ValueError> {
        Ok(Value::Bool(v))
    }
    fn serialize_i8(self, v: i8) -> Result<Value, ValueError> {
        Ok(Value::Int(v.into()))
    }
    fn serialize_i16(self, v: i16) -> Result<Value, ValueError> {
        Ok(Value::Int(v.into()))
    }
    fn serialize_i32(self, v: i32) -> Result<Value, ValueError> {
        Ok(Value::Int(v.into()))
    }
    fn serialize_i64(self, v: i64) -> Result<Value, ValueError> {
        Ok(Value::Int(v))
    }
    fn serialize_i128(self, v: i128) -> Result<Value, ValueError> {
        int(v)
    }
    fn serialize_u8(self, v: u8) -> Result<Value, ValueError> {
        Ok(Value::Int(v.into()))
    }
    fn serialize_u16(self, v: u16) -> Result<Value, ValueError> {
        Ok(Value::Int(v.into()))
    }
    fn serialize_u32(self, v: u32) -> Result<Value, ValueError> {
        Ok(Value::Int(v.into()))
    }
    fn serialize_u64(self, v: u64) -> Result<Value, ValueError> {
        int(v)
    }
    fn serialize_u128(self, v: u128) -> Result<Value, ValueError> {
        int(v)
    }
    fn serialize_f32(self, v: f32) -> Result<Value, ValueError> {
        Ok(Value::Float(v.into()))
    }
    fn serialize_f64(self, v: f64) -> Result<Value, ValueError> {
        Ok(Value::Float(v))
    }
    fn serialize_char(self, v: char) -> Result<Value, ValueError> {
        Ok(Value::Char(v))
    }
    fn serialize_str(self, v: &str) -> Result<Value, ValueError> {
        Ok(if self.key {
            name_value(v)
        } else {
            Value::string(v)
        })
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<Value, ValueError> {
        Ok(Value::Vector(
            v.iter().map(|&b| Value::Int(b.into())).collect(),
        ))
    }
    fn serialize_none(self) -> Result<Value, ValueError> {
        Ok(Value::Nil)
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<Value, ValueError> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<Value, ValueError> {
        Ok(Value::Nil)
    }
    fn serialize_unit_struct(self, _name: &'static str) -> Result<Value, ValueError> {
        Ok(Value::Nil)
    }
    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<Value, ValueError> {
        Ok(name_value(variant))
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<Value, ValueError> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<Value, ValueError> {
        let tag = name_value(variant);
        let content = value
            .serialize(self.nested()?)
            .map_err(|e| e.within(tag.clone()))?;
        Ok(Value::map_from([(tag, content)]))
    }
    fn serialize_seq(self, len: Option<usize>) -> Result<SeqSer, ValueError> {
        Ok(SeqSer {
            ser: self.nested()?,
            items: ThinVec::with_capacity(len.unwrap_or(0).min(4096)),
        })
    }
    fn serialize_tuple(self, len: usize) -> Result<SeqSer, ValueError> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_struct(self, _name: &'static str, len: usize) -> Result<SeqSer, ValueError> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<VariantSer<SeqSer>, ValueError> {
        let tag = name_value(variant);
        let inner = self.nested()?.serialize_seq(Some(len))?;
        Ok(VariantSer { tag, inner })
    }
    fn serialize_map(self, _len: Option<usize>) -> Result<MapSer, ValueError> {
        Ok(MapSer {
            ser: self.nested()?,
            map: Map::default(),
            key: None,
        })
    }
    fn serialize_struct(self, _name: &'static str, len: usize) -> Result<MapSer, ValueError> {
        self.serialize_map(Some(len))
    }
    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<VariantSer<MapSer>, ValueError> {
        let tag = name_value(variant);
        let inner = self.nested()?.serialize_map(Some(len))?;
        Ok(VariantSer { tag, inner })
    }
}

/// Builds a vector, element by element.
struct SeqSer {
    ser: Ser,
    items: ThinVec<Value>,
}

impl SeqSer {
    fn push<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), ValueError> {
        let index = self.items.len();
        let item = value
            .serialize(self.ser)
            .map_err(|e| e.within(Value::Int(index as i64)))?;
        self.items.push(item);
        Ok(())
    }
}

impl ser::SerializeSeq for SeqSer {
    type Ok = Value;
    type Error = ValueError;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), ValueError> {
        self.push(value)
    }
    fn end(self) -> Result<Value, ValueError> {
        Ok(Value::Vector(self.items))
    }
}

impl ser::SerializeTuple for SeqSer {
    type Ok = Value;
    type Error = ValueError;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), ValueError> {
        self.push(value)
    }
    fn end(self) -> Result<Value, ValueError> {
        Ok(Value::Vector(self.items))
    }
}

impl ser::SerializeTupleStruct for SeqSer {
    type Ok = Value;
    type Error = ValueError;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), ValueError> {
        self.push(value)
    }
    fn end(self) -> Result<Value, ValueError> {
        Ok(Value::Vector(self.items))
    }
}

/// Builds a map, entry by entry; a key that equals an earlier one is an
/// error rather than a lost entry.
struct MapSer {
    ser: Ser,
    map: Map,
    key: Option<Value>,
}

impl MapSer {
    fn entry<T: Serialize + ?Sized>(&mut self, key: Value, value: &T) -> Result<(), ValueError> {
        let value = value
            .serialize(self.ser)
            .map_err(|e| e.within(key.clone()))?;
        if self.map.contains_key(&key) {
            return Err(ValueError::new(ValueErrorKind::DuplicateKey(
                key.to_string(),
            )));
        }
        self.map.insert(key, value);
        Ok(())
    }
}

impl ser::SerializeMap for MapSer {
    type Ok = Value;
    type Error = ValueError;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), ValueError> {
        self.key = Some(key.serialize(Ser {
            depth: self.ser.depth,
            key: true,
        })?);
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), ValueError> {
        let key = self.key.take().unwrap_or_default();
        self.entry(key, value)
    }
    fn end(self) -> Result<Value, ValueError> {
        Ok(Value::Map(Box::new(self.map)))
    }
}

impl ser::SerializeStruct for MapSer {
    type Ok = Value;
    type Error = ValueError;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        field: &'static str,
        value: &T,
    ) -> Result<(), ValueError> {
        self.entry(name_value(field), value)
    }
    fn end(self) -> Result<Value, ValueError> {
        Ok(Value::Map(Box::new(self.map)))
    }
}

/// An enum variant with content: `{:Variant content}`.
struct VariantSer<S> {
    tag: Value,
    inner: S,
}

impl ser::SerializeTupleVariant for VariantSer<SeqSer> {
    type Ok = Value;
    type Error = ValueError;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), ValueError> {
        let tag = self.tag.clone();
        self.inner.push(value).map_err(|e| e.within(tag))
    }
    fn end(self) -> Result<Value, ValueError> {
        Ok(Value::map_from([(
            self.tag,
            Value::Vector(self.inner.items),
        )]))
    }
}

impl ser::SerializeStructVariant for VariantSer<MapSer> {
    type Ok = Value;
    type Error = ValueError;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        field: &'static str,
        value: &T,
    ) -> Result<(), ValueError> {
        let tag = self.tag.clone();
        self.inner
            .entry(name_value(field), value)
            .map_err(|e| e.within(tag))
    }
    fn end(self) -> Result<Value, ValueError> {
        Ok(Value::map_from([(
            self.tag,
            Value::Map(Box::new(self.inner.map)),
        )]))
    }
}

/// Deserialises from a borrowed [`Value`].
#[derive(Clone, Copy)]
struct De<'de> {
    value: &'de Value,
    depth: usize,
}

impl<'de> De<'de> {
    fn at(&self, value: &'de Value) -> Result<De<'de>, ValueError> {
        if self.depth >= MAX_DEPTH {
            return Err(ValueError::new(ValueErrorKind::TooDeep));
        }
        Ok(De {
            value,
            depth: self.depth + 1,
        })
    }

    fn unexpected(&self) -> de::Unexpected<'de> {
        match self.value {
            Value::Nil => de::Unexpected::Unit,
            Value::Bool(b) => de::Unexpected::Bool(*b),
            Value::Int(i) => de::Unexpected::Signed(*i),
            Value::Float(f) => de::Unexpected::Float(*f),
            Value::Str(s) => de::Unexpected::Str(s),
            Value::Char(c) => de::Unexpected::Char(*c),
            Value::Keyword(_) => de::Unexpected::Other("a keyword"),
            Value::Symbol(_) => de::Unexpected::Other("a symbol"),
            Value::Vector(_) | Value::List(_) | Value::Set(_) => de::Unexpected::Seq,
            Value::Map(_) => de::Unexpected::Map,
            Value::Tagged(..) => de::Unexpected::Other("a tagged value"),
        }
    }
}

impl<'de> de::Deserializer<'de> for De<'de> {
    type Error = ValueError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ValueError> {
        match self.value {
            Value::Nil => visitor.visit_unit(),
            Value::Bool(b) => visitor.visit_bool(*b),
            Value::Int(i) => visitor.visit_i64(*i),
            Value::Float(f) => visitor.visit_f64(*f),
            Value::Str(s) => visitor.visit_borrowed_str(s),
            Value::Char(c) => visitor.visit_char(*c),
            Value::Keyword(k) => visitor.visit_borrowed_str(k.as_str()),
            Value::Symbol(s) => visitor.visit_borrowed_str(s.as_str()),
            Value::Vector(items) | Value::List(items) => {
                let mut seq = Seq {
                    de: self,
                    items: items.iter(),
                    index: 0,
                };
                let out = visitor.visit_seq(&mut seq)?;
                seq.finish(out)
            }
            Value::Set(items) => {
                let mut seq = Seq {
                    de: self,
                    items: items.iter(),
                    index: 0,
                };
                let out = visitor.visit_seq(&mut seq)?;
                seq.finish(out)
            }
            Value::Map(map) => visitor.visit_map(Entries {
                de: self,
                entries: map.iter(),
                entry: None,
            }),
            Value::Tagged(tag, _) => Err(ValueError::new(ValueErrorKind::NoSerdeForm(format!(
                "the tagged value #{tag}"
            )))),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ValueError> {
        match self.value {
            Value::Nil => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ValueError> {
        match self.value {
            // An integer is taken where a float is wanted only when the float holds it exactly.
            Value::Int(i) => {
                const EXACT: i64 = 1 << 53;
                if (-EXACT..=EXACT).contains(i) {
                    visitor.visit_f64(*i as f64)
                } else {
                    Err(ValueError::new(ValueErrorKind::OutOfRange(format!(
                        "integer {i} would be rounded as a float"
                    ))))
                }
            }
            _ => self.deserialize_any(visitor),
        }
    }

    fn deserialize_f32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ValueError> {
        self.deserialize_f64(visitor)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, ValueError> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, ValueError> {
        let (tag, content) = match self.value {
            Value::Keyword(_) | Value::Str(_) => (self.value, None),
            Value::Map(map) if map.len() == 1 => match map.iter().next() {
                Some((tag @ (Value::Keyword(_) | Value::Str(_)), content)) => {
                    (tag, Some(self.at(content)?))
                }
                _ => return Err(de::Error::invalid_type(self.unexpected(), &visitor)),
            },
            _ => return Err(de::Error::invalid_type(self.unexpected(), &visitor)),
        };
        visitor.visit_enum(Variant {
            tag,
            content,
            unit: self,
        })
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ValueError> {
        visitor.visit_unit()
    }

    fn is_human_readable(&self) -> bool {
        true
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 char str string
        bytes byte_buf unit unit_struct seq tuple tuple_struct map struct identifier
    }
}

/// The elements of a vector, list or set.
struct Seq<'de, I> {
    de: De<'de>,
    items: I,
    index: usize,
}

impl<'de, I: ExactSizeIterator<Item = &'de Value>> Seq<'de, I> {
    /// A sequence whose visitor stopped early had more elements than the type takes.
    fn finish<T>(self, out: T) -> Result<T, ValueError> {
        match self.items.len() {
            0 => Ok(out),
            rest => Err(de::Error::invalid_length(
                self.index + rest,
                &format!("{} elements", self.index).as_str(),
            )),
        }
    }
}

impl<'de, I: Iterator<Item = &'de Value>> de::SeqAccess<'de> for &mut Seq<'de, I> {
    type Error = ValueError;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, ValueError> {
        let Some(item) = self.items.next() else {
            return Ok(None);
        };
        let index = self.index;
        self.index += 1;
        seed.deserialize(self.de.at(item)?)
            .map(Some)
            .map_err(|e| e.within(Value::Int(index as i64)))
    }

    fn size_hint(&self) -> Option<usize> {
        self.items.size_hint().1
    }
}

/// The entries of a map.
struct Entries<'de> {
    de: De<'de>,
    entries: super::map::Iter<'de>,
    /// The entry whose key was just given, waiting for its value.
    entry: Option<(&'de Value, &'de Value)>,
}

impl<'de> de::MapAccess<'de> for Entries<'de> {
    type Error = ValueError;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, ValueError> {
        let Some((key, value)) = self.entries.next() else {
            return Ok(None);
        };
        self.entry = Some((key, value));
        seed.deserialize(self.de.at(key)?).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, ValueError> {
        let Some((key, value)) = self.entry.take() else {
            return Err(de::Error::custom(
                "a map value was asked for before its key",
            ));
        };
        seed.deserialize(self.de.at(value)?)
            .map_err(|e| e.within(key.clone()))
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.entries.len())
    }
}

/// The content of a newtype variant written as a bare tag.
static NIL: Value = Value::Nil;

/// An enum's variant: its tag, and its content unless it is a unit variant.
struct Variant<'de> {
    tag: &'de Value,
    content: Option<De<'de>>,
    unit: De<'de>,
}

impl<'de> de::EnumAccess<'de> for Variant<'de> {
    type Error = ValueError;
    type Variant = Variant<'de>;

    fn variant_seed<T: DeserializeSeed<'de>>(
        self,
        seed: T,
    ) -> Result<(T::Value, Variant<'de>), ValueError> {
        let name = match self.tag {
            Value::Keyword(k) => k.as_str(),
            Value::Str(s) => s,
            _ => "",
        };
        let variant = seed.deserialize(IntoDeserializer::<ValueError>::into_deserializer(name))?;
        Ok((variant, self))
    }
}

impl<'de> de::VariantAccess<'de> for Variant<'de> {
    type Error = ValueError;

    fn unit_variant(self) -> Result<(), ValueError> {
        match self.content {
            None => Ok(()),
            Some(content) if content.value.is_nil() => Ok(()),
            Some(content) => Err(de::Error::invalid_type(
                content.unexpected(),
                &"a unit variant",
            ))
            .map_err(|e: ValueError| e.within(self.tag.clone())),
        }
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(
        self,
        seed: T,
    ) -> Result<T::Value, ValueError> {
        let content = self.content.unwrap_or(De {
            value: &NIL,
            depth: self.unit.depth,
        });
        seed.deserialize(content)
            .map_err(|e| e.within(self.tag.clone()))
    }

    fn tuple_variant<V: Visitor<'de>>(
        self,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, ValueError> {
        let tag = self.tag.clone();
        match self.content {
            Some(content) => de::Deserializer::deserialize_seq(content, visitor),
            None => Err(de::Error::invalid_type(self.unit.unexpected(), &visitor)),
        }
        .map_err(|e| e.within(tag))
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, ValueError> {
        let tag = self.tag.clone();
        match self.content {
            Some(content) => de::Deserializer::deserialize_map(content, visitor),
            None => Err(de::Error::invalid_type(self.unit.unexpected(), &visitor)),
        }
        .map_err(|e| e.within(tag))
    }
}
