//! The strict EDN reader: text to [`Value`] plus the [`Spans`] of every form.
//!
//! One pass over the bytes builds the value and its spans directly, with no
//! intermediate syntax tree (`parse.rs` reads forms and collections, `atom.rs`
//! the tokens inside them). The reader checks what a lax reader would let
//! through or repair: unclosed and mismatched delimiters, maps with an odd
//! number of forms, duplicate map keys and set elements (by Clojure's `=`),
//! integers beyond 64 bits, invalid keywords, symbols, characters and
//! escapes, exactly one form per text, and a nesting limit. Nothing
//! malformed is ever repaired: every mistake is an error with a byte span.

mod atom;
mod names;
mod parse;

use std::fmt;
use std::sync::Arc;

use crate::source::{Source, Span, Spans};
use crate::value::Value;

/// How deeply forms may nest; deeper input is an error rather than a stack overflow.
pub const MAX_DEPTH: usize = 256;

/// What was wrong with the text.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ReadErrorKind {
    /// The text is not valid EDN; the message says why.
    Syntax(String),
    /// A map has the same key twice.
    DuplicateKey(String),
    /// A set has the same element twice.
    DuplicateElement(String),
    /// The text holds no form at all.
    Empty,
    /// The text holds more than one form.
    TrailingForm,
    /// Forms nest more deeply than [`MAX_DEPTH`].
    TooDeep,
    /// The text has a keyword or symbol name the process does not know
    /// while it already holds [`crate::max_interned_names`] of them.
    TooManyNames,
    /// Valid EDN that this library does not support (ratios, namespaced maps,
    /// arbitrary-precision numbers).
    Unsupported(String),
}

/// A reading error with the span it concerns.
#[derive(Debug, Clone, PartialEq)]
pub struct ReadError {
    /// What was wrong.
    pub kind: ReadErrorKind,
    /// Where.
    pub span: Span,
}

impl ReadError {
    pub(crate) fn syntax(message: impl Into<String>, start: usize, end: usize) -> ReadError {
        ReadError {
            kind: ReadErrorKind::Syntax(message.into()),
            span: Span::new(start, end),
        }
    }

    pub(crate) fn unsupported(what: &str, start: usize, end: usize) -> ReadError {
        ReadError {
            kind: ReadErrorKind::Unsupported(what.to_owned()),
            span: Span::new(start, end),
        }
    }
}

impl fmt::Display for ReadErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadErrorKind::Syntax(msg) => f.write_str(msg),
            ReadErrorKind::DuplicateKey(k) => write!(f, "duplicate map key {k}"),
            ReadErrorKind::DuplicateElement(k) => write!(f, "duplicate set element {k}"),
            ReadErrorKind::Empty => f.write_str("no form: the text is empty or only comments"),
            ReadErrorKind::TrailingForm => {
                f.write_str("more than one form: a file holds exactly one form")
            }
            ReadErrorKind::TooDeep => write!(f, "forms nest more than {MAX_DEPTH} deep"),
            ReadErrorKind::TooManyNames => write!(
                f,
                "too many distinct keywords and symbols: the process holds more than {}",
                crate::max_interned_names()
            ),
            ReadErrorKind::Unsupported(what) => write!(f, "{what} not supported"),
        }
    }
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.kind.fmt(f)
    }
}

impl std::error::Error for ReadError {}

/// A read form with the spans of every sub-form and the source it came from.
#[derive(Debug, Clone)]
pub struct Document {
    /// The value read.
    pub value: Value,
    /// Spans of the value and its parts.
    pub spans: Spans,
    /// The text it was read from.
    pub source: Arc<Source>,
}

/// Reads the single form in `source`.
pub fn read(source: Arc<Source>) -> Result<Document, ReadError> {
    let (value, spans) = read_text(source.text())?;
    Ok(Document {
        value,
        spans,
        source,
    })
}

/// Reads the single form in `text`, returning its value and spans.
///
/// ```
/// use aido::{Span, Value, read_text};
///
/// let (value, spans) = read_text("[:a {:k 1}]").unwrap();
/// assert_eq!(value.to_string(), "[:a {:k 1}]");
/// // The map is the second element; its elements are its key and value.
/// assert_eq!(spans.span_at(&[1]), Some(Span::new(4, 10)));
/// assert_eq!(spans.span_at(&[1, 1]), Some(Span::new(8, 9)));
/// ```
pub fn read_text(text: &str) -> Result<(Value, Spans), ReadError> {
    let (read, refused) = crate::value::intern_bounded(|| parse::read_one(text));
    if refused {
        return Err(ReadError {
            kind: ReadErrorKind::TooManyNames,
            span: Span::new(0, text.len()),
        });
    }
    read
}

/// Reads one value from `text`, discarding spans: handy for dbs and tests.
pub fn read_value(text: &str) -> Result<Value, ReadError> {
    read_text(text).map(|(v, _)| v)
}
