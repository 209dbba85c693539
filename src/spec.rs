//! The specs of node types and functions, below everything that uses them:
//! how many children or arguments ([`Arity`]), the options a node type takes
//! and their types ([`OptionType`], [`OptionSpec`]), and the comparison
//! operators of `:test?`. Plain data over [`Value`]s, used by the compiler
//! to check trees and by the interpreter to run them.

use std::fmt;
use std::sync::Arc;

use crate::value::{Keyword, Value};

/// The most keys a key path (`:key [..]`, `[:aido/db ..]`) may have: a
/// value written at the end of one still reads back within the reader's
/// nesting limit ([`crate::read::MAX_DEPTH`]), with room for the db and a line
/// around it.
pub const MAX_KEY_PATH: usize = crate::read::MAX_DEPTH - 8;

/// How many children a node type takes.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Arity {
    /// Exactly this many (`Exactly(0)`: a leaf).
    Exactly(usize),
    /// Any of these counts, like aido's `#{1 2}`.
    OneOf(Vec<usize>),
    /// At least this many (`AtLeast(1)`: aido's `:some`).
    AtLeast(usize),
    /// Any number, including none.
    Any,
}

impl Arity {
    /// Whether `n` children are allowed.
    pub fn allows(&self, n: usize) -> bool {
        match self {
            Arity::Exactly(k) => n == *k,
            Arity::OneOf(ks) => ks.contains(&n),
            Arity::AtLeast(k) => n >= *k,
            Arity::Any => true,
        }
    }
}

impl Arity {
    /// The arity in words, counting `one`s (singular) and `many` (plural):
    /// `arity.counted("argument", "arguments")` gives "exactly 2 arguments".
    pub(crate) fn counted(&self, one: &str, many: &str) -> String {
        match self {
            Arity::Exactly(0) => format!("no {many}"),
            Arity::Exactly(1) => format!("exactly 1 {one}"),
            Arity::Exactly(k) => format!("exactly {k} {many}"),
            Arity::OneOf(ks) => {
                let ks: Vec<String> = ks.iter().map(ToString::to_string).collect();
                format!("{} {many}", ks.join(" or "))
            }
            Arity::AtLeast(1) => format!("at least 1 {one}"),
            Arity::AtLeast(k) => format!("at least {k} {many}"),
            Arity::Any => format!("any number of {many}"),
        }
    }
}

/// The arity as a node's child count: "exactly 1 child", "at least 2 children".
impl fmt::Display for Arity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.counted("child", "children"))
    }
}

/// The type an option's value must have. Constant values are checked when the
/// tree is compiled; dynamic ones each time the node is ticked.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum OptionType {
    /// Any value.
    Any,
    /// `true` or `false`.
    Bool,
    /// An integer.
    Int,
    /// An integer ≥ 0.
    Count,
    /// An integer or a float.
    Number,
    /// A number from 0 to 1.
    Probability,
    /// A keyword.
    Keyword,
    /// A string.
    Str,
    /// One of these keywords (texts without the colon).
    OneOf(&'static [&'static str]),
    /// A db key (keyword, string or integer) or a vector of them: a key path.
    /// Always constant.
    Key,
    /// A vector of non-negative numbers.
    Weights,
    /// One of the symbols `= not= < > <= >=`. Always constant.
    Operator,
    /// `true` or `false`, always constant (it shapes the node, like `:memory`).
    Flag,
    /// A keyword, always constant (it names something, like `:action`).
    Name,
}

impl OptionType {
    /// Whether a dynamic option (`[:aido/fn ..]`, `[:aido/db ..]`) may supply the value.
    pub(crate) fn allows_dynamic(&self) -> bool {
        !matches!(
            self,
            OptionType::Key | OptionType::Operator | OptionType::Flag | OptionType::Name
        )
    }

    /// Checks `value`, saying what was expected if it does not fit.
    pub fn check(&self, value: &Value) -> Result<(), String> {
        if let (OptionType::Key, Value::Vector(path)) = (self, value)
            && path.len() > MAX_KEY_PATH
        {
            return Err(format!(
                "a key path has at most {} keys, found {}",
                MAX_KEY_PATH,
                path.len()
            ));
        }
        let ok = match self {
            OptionType::Any => true,
            OptionType::Bool | OptionType::Flag => matches!(value, Value::Bool(_)),
            OptionType::Int => matches!(value, Value::Int(_)),
            OptionType::Count => matches!(value, Value::Int(i) if *i >= 0),
            OptionType::Number => matches!(value, Value::Int(_) | Value::Float(_)),
            OptionType::Probability => value.as_f64().is_some_and(|p| (0.0..=1.0).contains(&p)),
            OptionType::Keyword | OptionType::Name => matches!(value, Value::Keyword(_)),
            OptionType::Str => matches!(value, Value::Str(_)),
            OptionType::OneOf(names) => {
                matches!(value, Value::Keyword(k) if names.contains(&k.as_str()))
            }
            OptionType::Key => match value {
                Value::Vector(path) => !path.is_empty() && path.iter().all(is_key),
                other => is_key(other),
            },
            OptionType::Weights => match value {
                Value::Vector(ws) => ws
                    .iter()
                    .all(|w| w.as_f64().is_some_and(|w| w >= 0.0 && w.is_finite())),
                _ => false,
            },
            OptionType::Operator => matches!(value, Value::Symbol(s)
                if Operator::parse(s.as_str()).is_some()),
        };
        if ok {
            Ok(())
        } else {
            Err(format!("expected {self}, found {}", describe(value)))
        }
    }
}

fn is_key(v: &Value) -> bool {
    matches!(v, Value::Keyword(_) | Value::Str(_) | Value::Int(_))
}

/// A value in a message: its type and its text (`integer `5``), or only
/// its type when the text is long.
pub(crate) fn describe(value: &Value) -> String {
    match value.abbreviated(40) {
        (_, true) => value.type_with_article().to_owned(),
        (text, false) => format!("{} `{text}`", value.type_name()),
    }
}

impl fmt::Display for OptionType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OptionType::Any => f.write_str("any value"),
            OptionType::Bool | OptionType::Flag => f.write_str("true or false"),
            OptionType::Int => f.write_str("an integer"),
            OptionType::Count => f.write_str("a non-negative integer"),
            OptionType::Number => f.write_str("a number"),
            OptionType::Probability => f.write_str("a number from 0 to 1"),
            OptionType::Keyword | OptionType::Name => f.write_str("a keyword"),
            OptionType::Str => f.write_str("a string"),
            OptionType::OneOf(names) => {
                let names: Vec<String> = names.iter().map(|n| format!(":{n}")).collect();
                write!(f, "one of {}", names.join(" "))
            }
            OptionType::Key => {
                f.write_str("a key (keyword, string or integer) or a vector of keys")
            }
            OptionType::Weights => f.write_str("a vector of non-negative numbers"),
            OptionType::Operator => f.write_str("one of the symbols = not= < > <= >="),
        }
    }
}

/// One option a node type accepts.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct OptionSpec {
    /// The option's key.
    pub key: Keyword,
    /// The type of its value.
    pub ty: OptionType,
    /// Whether the node must have it.
    pub required: bool,
    /// What it means, for the reference (`aido nodes`) and models.
    pub doc: Option<Arc<str>>,
    /// The key's text, taken from the interner once, so that
    /// `NodeCtx::option` finds an option by name without its lock.
    pub(crate) name: &'static str,
}

impl OptionSpec {
    pub(crate) fn new(
        key: Keyword,
        ty: OptionType,
        required: bool,
        doc: Option<Arc<str>>,
    ) -> OptionSpec {
        OptionSpec {
            key,
            ty,
            required,
            doc,
            name: key.as_str(),
        }
    }
}

/// A comparison operator of `:test?`. Each is numbered by the orderings
/// of `a` and `b` for which `a OP b` holds, a bit each (`a < b`, `a = b`,
/// `a > b`), so that two integers are compared without a branch on the
/// operator ([`Operator::ints`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Operator {
    Lt = 0b001,
    Eq = 0b010,
    Le = 0b011,
    Gt = 0b100,
    NotEq = 0b101,
    Ge = 0b110,
}

impl Operator {
    pub(crate) fn parse(symbol: &str) -> Option<Operator> {
        Some(match symbol {
            "=" => Operator::Eq,
            "not=" => Operator::NotEq,
            "<" => Operator::Lt,
            ">" => Operator::Gt,
            "<=" => Operator::Le,
            ">=" => Operator::Ge,
            _ => return None,
        })
    }

    /// What aido calls an operator or function written as another language
    /// spells it: `==` is `=`, `!=` is `not=`, `&&` is `and`.
    pub(crate) fn aido_spelling(symbol: &str) -> Option<&'static str> {
        Some(match symbol {
            "==" | "===" | "eq" => "=",
            "!=" | "<>" | "~=" | "/=" | "!==" | "ne" => "not=",
            "=<" => "<=",
            "=>" => ">=",
            "&&" | "&" => "and",
            "||" | "|" => "or",
            "!" => "not",
            "%" => "mod",
            _ => return None,
        })
    }

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Operator::Eq => "=",
            Operator::NotEq => "not=",
            Operator::Lt => "<",
            Operator::Gt => ">",
            Operator::Le => "<=",
            Operator::Ge => ">=",
        }
    }

    /// `a OP b` for two integers.
    #[inline(always)]
    pub(crate) fn ints(self, a: i64, b: i64) -> bool {
        // The ordering's bit: 0 for `a < b`, 1 for `a = b`, 2 for `a > b`.
        let bit = u32::from(a > b) + u32::from(a >= b);
        (self as u8 >> bit) & 1 != 0
    }

    /// `a OP b` for two floats: NaN is neither smaller, larger nor equal.
    pub(crate) fn floats(self, a: f64, b: f64) -> bool {
        match self {
            Operator::Eq => a == b,
            Operator::NotEq => a != b,
            Operator::Lt => a < b,
            Operator::Gt => a > b,
            Operator::Le => a <= b,
            Operator::Ge => a >= b,
        }
    }

    /// `lhs OP rhs`; ordering operators need two numbers.
    pub(crate) fn apply(self, lhs: &Value, rhs: &Value) -> Result<bool, String> {
        if let (Value::Int(a), Value::Int(b)) = (lhs, rhs) {
            return Ok(self.ints(*a, *b));
        }
        match self {
            Operator::Eq => return Ok(lhs == rhs),
            Operator::NotEq => return Ok(lhs != rhs),
            Operator::Lt | Operator::Gt | Operator::Le | Operator::Ge => {}
        }
        match (lhs.as_f64(), rhs.as_f64()) {
            (Some(a), Some(b)) => Ok(self.floats(a, b)),
            _ => Err(format!(
                "cannot compare {} `{lhs}` {} {} `{rhs}`: both must be numbers",
                lhs.type_name(),
                self.as_str(),
                rhs.type_name()
            )),
        }
    }
}

/// The type of a db key's value.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum DbType {
    /// One of the option types of node models.
    Plain(OptionType),
    /// A vector whose elements all have this type.
    Vector(Box<DbType>),
    /// A set whose elements all have this type.
    Set(Box<DbType>),
    /// A map whose keys and values have these types.
    MapOf(Box<DbType>, Box<DbType>),
    /// Any map.
    Map,
}

impl DbType {
    /// Checks `value`, saying where inside it and what was expected if it
    /// does not fit (`element 2: expected a string, found integer `5``).
    pub fn check(&self, value: &Value) -> Result<(), String> {
        match (self, value) {
            (DbType::Plain(ty), v) => ty.check(v),
            (DbType::Vector(ty), Value::Vector(items)) => check_all(ty, items.iter(), "element"),
            (DbType::Set(ty), Value::Set(items)) => check_all(ty, items.iter(), "element"),
            (DbType::Map, Value::Map(_)) => Ok(()),
            (DbType::MapOf(k, v), Value::Map(map)) => {
                for (key, val) in map.iter() {
                    k.check(key)
                        .map_err(|e| format!("key {}: {e}", describe(key)))?;
                    v.check(val).map_err(|e| format!("at key {key}: {e}"))?;
                }
                Ok(())
            }
            (ty, other) => Err(format!("expected {ty}, found {}", describe(other))),
        }
    }
}

fn check_all<'v>(
    ty: &DbType,
    items: impl Iterator<Item = &'v Value>,
    what: &str,
) -> Result<(), String> {
    for (i, item) in items.enumerate() {
        ty.check(item).map_err(|e| format!("{what} {i}: {e}"))?;
    }
    Ok(())
}

impl fmt::Display for DbType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DbType::Plain(ty) => write!(f, "{ty}"),
            DbType::Vector(ty) => write!(f, "a vector (each element {ty})"),
            DbType::Set(ty) => write!(f, "a set (each element {ty})"),
            DbType::MapOf(k, v) => write!(f, "a map (each key {k}, each value {v})"),
            DbType::Map => f.write_str("a map"),
        }
    }
}
