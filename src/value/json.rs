//! serde support and the JSON mapping.
//!
//! Serialising a [`Value`] (to JSON or any serde format) maps it like this:
//!
//! | EDN                      | serde / JSON                               |
//! |--------------------------|--------------------------------------------|
//! | `nil`                    | unit / `null`                              |
//! | `true`, `1`, `1.5`       | bool, i64, f64                             |
//! | `"text"`                 | string `"text"`                            |
//! | `:ns/name` (value)       | string `":ns/name"`                        |
//! | `:ns/name` (map key)     | string `"ns/name"` (no colon)              |
//! | other map keys           | their EDN text, e.g. `1` → `"1"`           |
//! | `sym`, `\c`              | string `"sym"`, `"c"`                      |
//! | `[..]`, `(..)`, `#{..}`  | sequence / array                           |
//! | `{..}`                   | map / object, in insertion order           |
//! | `#tag v`                 | one-entry map `{"#tag": v}`                |
//!
//! NaN and infinities have no plain JSON form: [`Value::to_json_with`]
//! refuses them (the older [`Value::to_json`] writes `null`). For dbs that
//! carry user text, [`JsonMapping::Tagged`] is lossless.
//!
//! Deserialising reverses the common cases: an object key that is a valid
//! keyword name becomes a keyword, a string value that starts with `:` and is
//! a valid keyword becomes a keyword, integers stay integers and arrays become
//! vectors. So a db written as JSON reads back as the same db, as long as its
//! strings do not start with a colon and its map keys are keywords.

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};

use super::{Keyword, Map, ThinVec, Value};

thread_local! {
    /// How many collections serialising is inside, on this thread.
    static SERIALIZING: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

impl Serialize for Value {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        // A value built in Rust may nest without limit: refuse it rather
        // than overflow the stack.
        let depth = SERIALIZING.with(std::cell::Cell::get);
        if depth > crate::value::MAX_DEPTH {
            return Err(serde::ser::Error::custom(format!(
                "values nest more than {} deep",
                crate::value::MAX_DEPTH
            )));
        }
        SERIALIZING.with(|d| d.set(depth + 1));
        let result = self.serialize_inner(s);
        SERIALIZING.with(|d| d.set(depth));
        result
    }
}

impl Value {
    fn serialize_inner<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Value::Nil => s.serialize_unit(),
            Value::Bool(b) => s.serialize_bool(*b),
            Value::Int(i) => s.serialize_i64(*i),
            Value::Float(f) => s.serialize_f64(*f),
            Value::Str(t) => s.serialize_str(t),
            Value::Char(c) => s.serialize_char(*c),
            Value::Keyword(k) => s.serialize_str(&k.to_string()),
            Value::Symbol(sym) => s.serialize_str(sym.as_str()),
            Value::Vector(items) | Value::List(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(item)?;
                }
                seq.end()
            }
            Value::Set(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for item in items.iter() {
                    seq.serialize_element(item)?;
                }
                seq.end()
            }
            Value::Map(map) => {
                let mut out = s.serialize_map(Some(map.len()))?;
                for (k, v) in map.iter() {
                    out.serialize_entry(&key_text(k), v)?;
                }
                out.end()
            }
            Value::Tagged(tag, v) => {
                let mut out = s.serialize_map(Some(1))?;
                out.serialize_entry(&format!("#{tag}"), v.as_ref())?;
                out.end()
            }
        }
    }
}

fn key_text(key: &Value) -> String {
    match key {
        Value::Keyword(k) => k.as_str().to_owned(),
        Value::Str(s) => s.to_string(),
        Value::Symbol(s) => s.as_str().to_owned(),
        other => other.to_string(),
    }
}

/// Whether `text` (without a colon) would read back as a keyword.
pub(crate) fn is_keyword_text(text: &str) -> bool {
    let mut chars = text.chars();
    let Some(first) = chars.next() else {
        return false;
    };
    if first.is_ascii_digit() || first == ':' || first == '#' || text.ends_with('/') {
        return false;
    }
    text.chars()
        .all(|c| !c.is_whitespace() && !"()[]{}\"',;\\@^`~".contains(c))
}

struct ValueVisitor;

impl<'de> Visitor<'de> for ValueVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON or EDN-like value")
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Nil)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Nil)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        Value::deserialize(d)
    }

    fn visit_bool<E>(self, b: bool) -> Result<Value, E> {
        Ok(Value::Bool(b))
    }

    fn visit_i64<E>(self, i: i64) -> Result<Value, E> {
        Ok(Value::Int(i))
    }

    fn visit_u64<E: de::Error>(self, u: u64) -> Result<Value, E> {
        i64::try_from(u)
            .map(Value::Int)
            .map_err(|_| E::custom(format!("integer {u} does not fit in 64 signed bits")))
    }

    fn visit_f64<E>(self, f: f64) -> Result<Value, E> {
        Ok(Value::Float(f))
    }

    fn visit_str<E>(self, s: &str) -> Result<Value, E> {
        Ok(match s.strip_prefix(':') {
            Some(rest) if is_keyword_text(rest) => Value::Keyword(Keyword::new(rest)),
            _ => Value::string(s),
        })
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = ThinVec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(item) = seq.next_element::<Value>()? {
            items.push(item);
        }
        Ok(Value::Vector(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Value, A::Error> {
        let mut map = Map::default();
        while let Some(key) = access.next_key::<String>()? {
            let text = key.strip_prefix(':').unwrap_or(&key);
            let key = if is_keyword_text(text) {
                Value::Keyword(Keyword::new(text))
            } else {
                Value::string(&key)
            };
            let value = access.next_value::<Value>()?;
            if map.insert(key.clone(), value).is_some() {
                return Err(de::Error::custom(format!("duplicate key {key}")));
            }
        }
        Ok(Value::Map(Box::new(map)))
    }
}

impl<'de> Deserialize<'de> for Value {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Value, D::Error> {
        d.deserialize_any(ValueVisitor)
    }
}

impl Value {
    /// Converts to JSON with the mapping described in this module.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }

    /// Converts from JSON with the mapping described in this module.
    pub fn from_json(json: serde_json::Value) -> Result<Value, serde_json::Error> {
        serde_json::from_value(json)
    }
}

/// Which JSON mapping to use (see the module docs of `value::json`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum JsonMapping {
    /// The plain mapping: keywords as `":name"` strings and as object keys,
    /// everything else as its nearest JSON form. Not every value survives it
    /// (a string that starts with `:` reads back as a keyword); saving checks
    /// and refuses what would change.
    Plain,
    /// The tagged mapping, lossless for every value: strings stay strings,
    /// and what JSON has no form for is a one-entry object whose key starts
    /// with `#`: `{"#kw": "ns/name"}`, `{"#sym": "s"}`, `{"#char": "c"}`,
    /// `{"#list": [..]}`, `{"#set": [..]}`, `{"#map": [[k, v], ..]}` (a map
    /// whose keys are not all keywords), `{"#tag": ["t", v]}`, and
    /// `{"#float": "NaN"}` (or `"Inf"`, `"-Inf"`). A map whose keys are all
    /// keywords is an object keyed by their text.
    Tagged,
}

impl JsonMapping {
    /// The mapping of a db file, by its name: `.tagged.json` is the
    /// lossless tagged mapping, any other `.json` (in any case) the plain
    /// one, and anything else `None` (EDN). Every reader and writer of db
    /// files (`aido run --db` and `--save`, `aido migrate`, scenarios)
    /// decides by this.
    ///
    /// ```
    /// use aido::value::JsonMapping;
    /// use std::path::Path;
    /// assert_eq!(JsonMapping::for_path(Path::new("a.tagged.json")), Some(JsonMapping::Tagged));
    /// assert_eq!(JsonMapping::for_path(Path::new("a.JSON")), Some(JsonMapping::Plain));
    /// assert_eq!(JsonMapping::for_path(Path::new("a.edn")), None);
    /// ```
    pub fn for_path(path: &std::path::Path) -> Option<JsonMapping> {
        let is_json = path
            .extension()
            .is_some_and(|ext| ext.eq_ignore_ascii_case("json"));
        if !is_json {
            return None;
        }
        let tagged = path
            .file_stem()
            .and_then(|s| s.to_str())
            .is_some_and(|s| s.to_ascii_lowercase().ends_with(".tagged"));
        Some(if tagged {
            JsonMapping::Tagged
        } else {
            JsonMapping::Plain
        })
    }
}

/// What went wrong converting between a [`Value`] and JSON.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum JsonErrorKind {
    /// A float that JSON cannot hold (NaN or an infinity), in the plain mapping.
    NotFinite,
    /// Nested more deeply than [`crate::value::MAX_DEPTH`].
    TooDeep,
    /// An integer literal beyond 64 signed bits.
    BigInteger(String),
    /// The text starts with a byte-order mark.
    ByteOrderMark,
    /// The text is not JSON, or a tagged form is malformed; the message says why.
    Syntax(String),
    /// The text has a keyword name the process does not know while it
    /// already holds [`crate::value::max_interned_names`] of them.
    TooManyNames,
}

/// A JSON conversion error, with where it happened: the value's path for
/// values, the line and column for text.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct JsonError {
    /// What went wrong.
    pub kind: JsonErrorKind,
    /// The path (keys and indices, as an EDN vector) of the value concerned.
    pub path: Option<String>,
    /// The line and column (from 1) in the text, when reading text.
    pub location: Option<(usize, usize)>,
}

impl fmt::Display for JsonError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            JsonErrorKind::NotFinite => {
                f.write_str("NaN and infinities have no plain JSON form")?
            }
            JsonErrorKind::TooDeep => {
                write!(f, "values nest more than {} deep", crate::value::MAX_DEPTH)?
            }
            JsonErrorKind::BigInteger(text) => {
                write!(f, "integer {text} does not fit in 64 signed bits")?
            }
            JsonErrorKind::ByteOrderMark => f.write_str(
                "the text starts with a byte-order mark (U+FEFF): save it as UTF-8 without one",
            )?,
            JsonErrorKind::Syntax(message) => f.write_str(message)?,
            JsonErrorKind::TooManyNames => write!(
                f,
                "too many distinct keywords: the process holds more than {}",
                crate::value::max_interned_names()
            )?,
        }
        if let Some(path) = &self.path {
            write!(f, " (at {path})")?;
        }
        Ok(())
    }
}

impl std::error::Error for JsonError {}

impl JsonError {
    fn at(kind: JsonErrorKind, path: &[Value]) -> JsonError {
        JsonError {
            kind,
            path: Some(super::check::ValuePath(path.to_vec()).to_string()),
            location: None,
        }
    }
}

/// The first non-finite float in `v`, with its path.
fn find_non_finite(v: &Value) -> Option<Vec<Value>> {
    let mut stack: Vec<(&Value, usize, Option<Value>)> = vec![(v, 0, None)];
    let mut path = Vec::new();
    while let Some((v, depth, step)) = stack.pop() {
        path.truncate(depth.saturating_sub(1));
        path.extend(step);
        match v {
            Value::Float(f) if !f.is_finite() => return Some(path),
            Value::Vector(items) | Value::List(items) => {
                for (i, x) in items.iter().enumerate().rev() {
                    stack.push((x, depth + 1, Some(Value::Int(i as i64))));
                }
            }
            Value::Set(items) => {
                for x in items.iter() {
                    stack.push((x, depth + 1, Some(x.clone())));
                }
            }
            Value::Map(map) => {
                for (k, x) in map.iter().rev() {
                    stack.push((x, depth + 1, Some(k.clone())));
                    stack.push((k, depth + 1, Some(k.clone())));
                }
            }
            Value::Tagged(t, x) => stack.push((x, depth + 1, Some(Value::Symbol(*t)))),
            _ => {}
        }
    }
    None
}

fn tag(name: &str, v: serde_json::Value) -> serde_json::Value {
    let mut m = serde_json::Map::new();
    m.insert(name.to_owned(), v);
    serde_json::Value::Object(m)
}

/// The tagged form of `v` (depth already checked).
fn to_tagged(v: &Value) -> serde_json::Value {
    use serde_json::Value as J;
    let seq = |items: &mut dyn Iterator<Item = &Value>| J::Array(items.map(to_tagged).collect());
    match v {
        Value::Nil => J::Null,
        Value::Bool(b) => J::Bool(*b),
        Value::Int(i) => J::from(*i),
        Value::Float(f) => match serde_json::Number::from_f64(*f) {
            Some(n) => J::Number(n),
            None => tag(
                "#float",
                J::from(if f.is_nan() {
                    "NaN"
                } else if *f > 0.0 {
                    "Inf"
                } else {
                    "-Inf"
                }),
            ),
        },
        Value::Str(s) => J::from(s.as_str()),
        Value::Char(c) => tag("#char", J::from(c.to_string())),
        Value::Keyword(k) => tag("#kw", J::from(k.as_str())),
        Value::Symbol(s) => tag("#sym", J::from(s.as_str())),
        Value::Vector(items) => seq(&mut items.iter()),
        Value::List(items) => tag("#list", seq(&mut items.iter())),
        Value::Set(items) => tag("#set", seq(&mut items.iter())),
        Value::Map(map) => {
            let plain_keys = map.keys().all(|k| matches!(k, Value::Keyword(_)))
                && !(map.len() == 1
                    && map
                        .keys()
                        .any(|k| k.as_keyword().is_some_and(|k| k.as_str().starts_with('#'))));
            if plain_keys {
                J::Object(
                    map.iter()
                        .filter_map(|(k, x)| {
                            Some((k.as_keyword()?.as_str().to_owned(), to_tagged(x)))
                        })
                        .collect(),
                )
            } else {
                tag(
                    "#map",
                    J::Array(
                        map.iter()
                            .map(|(k, x)| J::Array(vec![to_tagged(k), to_tagged(x)]))
                            .collect(),
                    ),
                )
            }
        }
        Value::Tagged(t, x) => tag("#tag", J::Array(vec![J::from(t.as_str()), to_tagged(x)])),
    }
}

/// A value read in the tagged mapping.
struct TaggedValue(Value);

struct TaggedVisitor;

impl<'de> Visitor<'de> for TaggedVisitor {
    type Value = TaggedValue;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a value in the tagged JSON mapping")
    }

    fn visit_unit<E>(self) -> Result<TaggedValue, E> {
        Ok(TaggedValue(Value::Nil))
    }

    fn visit_bool<E>(self, b: bool) -> Result<TaggedValue, E> {
        Ok(TaggedValue(Value::Bool(b)))
    }

    fn visit_i64<E>(self, i: i64) -> Result<TaggedValue, E> {
        Ok(TaggedValue(Value::Int(i)))
    }

    fn visit_u64<E: de::Error>(self, u: u64) -> Result<TaggedValue, E> {
        ValueVisitor.visit_u64(u).map(TaggedValue)
    }

    fn visit_f64<E>(self, f: f64) -> Result<TaggedValue, E> {
        Ok(TaggedValue(Value::Float(f)))
    }

    fn visit_str<E>(self, s: &str) -> Result<TaggedValue, E> {
        Ok(TaggedValue(Value::string(s)))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<TaggedValue, A::Error> {
        let mut items = ThinVec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(TaggedValue(item)) = seq.next_element::<TaggedValue>()? {
            items.push(item);
        }
        Ok(TaggedValue(Value::Vector(items)))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<TaggedValue, A::Error> {
        let mut entries: Vec<(String, Value)> = Vec::new();
        while let Some(key) = access.next_key::<String>()? {
            let TaggedValue(value) = access.next_value::<TaggedValue>()?;
            entries.push((key, value));
        }
        if let [(key, inner)] = entries.as_slice()
            && key.starts_with('#')
        {
            return untag(key, inner.clone())
                .map(TaggedValue)
                .map_err(de::Error::custom);
        }
        let mut map = Map::default();
        for (key, value) in entries {
            let key = Value::Keyword(Keyword::new(&key));
            if map.insert(key.clone(), value).is_some() {
                return Err(de::Error::custom(format!("duplicate key {key}")));
            }
        }
        Ok(TaggedValue(Value::Map(Box::new(map))))
    }
}

fn untag(tag: &str, inner: Value) -> Result<Value, String> {
    let bad = || format!("malformed tagged form `{tag}`");
    if let Value::Str(s) = &inner {
        return Ok(match tag {
            "#kw" if !s.is_empty() => Value::Keyword(Keyword::new(s)),
            "#sym" if !s.is_empty() => Value::Symbol(super::Symbol::new(s)),
            "#char" => {
                let mut chars = s.chars();
                match (chars.next(), chars.next()) {
                    (Some(c), None) => Value::Char(c),
                    _ => return Err(bad()),
                }
            }
            "#float" => Value::Float(match s.as_ref() {
                "NaN" => f64::NAN,
                "Inf" => f64::INFINITY,
                "-Inf" => f64::NEG_INFINITY,
                _ => return Err(bad()),
            }),
            _ => return Err(bad()),
        });
    }
    if !matches!(inner, Value::Vector(_)) {
        return Err(bad());
    }
    let items = inner.into_seq().map_err(|_| bad())?;
    Ok(match tag {
        "#list" => Value::List(items),
        "#set" => {
            let mut set = super::Set::default();
            for item in items {
                if !set.insert(item) {
                    return Err("duplicate set element".to_owned());
                }
            }
            Value::Set(Box::new(set))
        }
        "#map" => {
            let mut map = Map::default();
            for pair in items {
                if !matches!(pair, Value::Vector(_)) {
                    return Err(bad());
                }
                let mut kv = pair.into_seq().map_err(|_| bad())?;
                let (Some(v), Some(k), true) = (kv.pop(), kv.pop(), kv.is_empty()) else {
                    return Err(bad());
                };
                if map.insert(k.clone(), v).is_some() {
                    return Err(format!("duplicate key {k}"));
                }
            }
            Value::Map(Box::new(map))
        }
        "#tag" if items.len() == 2 => {
            let mut parts = items;
            let v = parts.pop().unwrap_or_default();
            match parts.pop().as_ref().and_then(Value::as_str) {
                Some(t) if !t.is_empty() => Value::Tagged(super::Symbol::new(t), Box::new(v)),
                _ => return Err(bad()),
            }
        }
        _ => return Err(bad()),
    })
}

impl<'de> Deserialize<'de> for TaggedValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<TaggedValue, D::Error> {
        d.deserialize_any(TaggedVisitor)
    }
}

/// The first integer literal of a JSON text that does not fit in 64 signed
/// bits, with its byte offset: serde_json would read it as a float.
fn big_integer(text: &str) -> Option<(usize, &str)> {
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    i += if bytes[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
            }
            b'-' | b'0'..=b'9' => {
                let start = i;
                i += 1;
                while i < bytes.len()
                    && matches!(bytes[i], b'0'..=b'9' | b'.' | b'e' | b'E' | b'+' | b'-')
                {
                    i += 1;
                }
                let literal = &text[start..i];
                let integral = !literal.contains(['.', 'e', 'E']);
                if integral && literal.parse::<i64>().is_err() && literal.len() > 1 {
                    return Some((start, literal));
                }
            }
            _ => i += 1,
        }
    }
    None
}

fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before
        .rfind('\n')
        .map_or(before.len(), |nl| before.len() - nl - 1)
        + 1;
    (line, column)
}

impl Value {
    /// Converts to JSON in `mapping`, refusing what JSON cannot hold: in the
    /// plain mapping NaN and infinities (which would become `null`); in both,
    /// values nested more than [`crate::value::MAX_DEPTH`] deep.
    ///
    /// ```
    /// use aido::{Value, read_value, value::JsonMapping};
    /// let db = read_value(r#"{:greeting ":hello", :mood :calm}"#).unwrap();
    /// let json = db.to_json_with(JsonMapping::Tagged).unwrap();
    /// assert_eq!(json.to_string(), r##"{"greeting":":hello","mood":{"#kw":"calm"}}"##);
    /// let back = Value::from_json_text(&json.to_string(), JsonMapping::Tagged).unwrap();
    /// assert_eq!(back, db);
    /// ```
    pub fn to_json_with(&self, mapping: JsonMapping) -> Result<serde_json::Value, JsonError> {
        if self.depth_beyond(crate::value::MAX_DEPTH).is_some() {
            return Err(JsonError {
                kind: JsonErrorKind::TooDeep,
                path: None,
                location: None,
            });
        }
        match mapping {
            JsonMapping::Plain => {
                if let Some(path) = find_non_finite(self) {
                    return Err(JsonError::at(JsonErrorKind::NotFinite, &path));
                }
                serde_json::to_value(self).map_err(|e| JsonError {
                    kind: JsonErrorKind::Syntax(e.to_string()),
                    path: None,
                    location: None,
                })
            }
            JsonMapping::Tagged => Ok(to_tagged(self)),
        }
    }

    /// Reads JSON text in `mapping`. Refuses a byte-order mark, an integer
    /// beyond 64 bits (which would otherwise become a float) and duplicate
    /// keys, each with its line and column.
    pub fn from_json_text(text: &str, mapping: JsonMapping) -> Result<Value, JsonError> {
        if text.starts_with('\u{feff}') {
            return Err(JsonError {
                kind: JsonErrorKind::ByteOrderMark,
                path: None,
                location: Some((1, 1)),
            });
        }
        if let Some((at, literal)) = big_integer(text) {
            return Err(JsonError {
                kind: JsonErrorKind::BigInteger(literal.to_owned()),
                path: None,
                location: Some(line_col(text, at)),
            });
        }
        let (result, refused) = super::intern_bounded(|| match mapping {
            JsonMapping::Plain => serde_json::from_str::<Value>(text),
            JsonMapping::Tagged => serde_json::from_str::<TaggedValue>(text).map(|t| t.0),
        });
        if refused {
            return Err(JsonError {
                kind: JsonErrorKind::TooManyNames,
                path: None,
                location: None,
            });
        }
        result.map_err(|e| {
            let message = e.to_string();
            let suffix = format!(" at line {} column {}", e.line(), e.column());
            let message = message.strip_suffix(&suffix).unwrap_or(&message).to_owned();
            JsonError {
                kind: JsonErrorKind::Syntax(message),
                path: None,
                location: Some((e.line(), e.column().max(1))),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn db_round_trips_through_json() {
        let db = Value::map_from([
            (Value::keyword("hunger"), Value::Int(0)),
            (Value::keyword("action"), Value::keyword("eat")),
            (Value::keyword("name"), Value::string("Ann")),
            (
                Value::keyword("xs"),
                Value::Vector(crate::value::thin_vec![Value::Float(1.5), Value::Nil]),
            ),
        ]);
        let json = db.to_json();
        assert_eq!(
            json.to_string(),
            r#"{"hunger":0,"action":":eat","name":"Ann","xs":[1.5,null]}"#
        );
        assert_eq!(Value::from_json(json).ok(), Some(db));
    }

    #[test]
    fn keys_that_are_not_keyword_names_stay_strings() {
        let v = Value::from_json(serde_json::json!({"two words": 1})).ok();
        assert_eq!(
            v.map(|v| v.to_string()),
            Some(r#"{"two words" 1}"#.to_owned())
        );
    }
}
