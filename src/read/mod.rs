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
#[cfg(feature = "edn-rs")]
mod edn_rs;
mod error;
mod forms;
mod lazy;
mod names;
mod parse;

#[cfg(feature = "edn-rs")]
pub use edn_rs::EdnRsError;
pub use error::{
    Delimiter, EscapeProblem, NameProblem, NumberProblem, ReadError, ReadErrorKind, Unsupported,
};

use std::sync::Arc;

pub(crate) use forms::{Item, NodeForms, NodeOptions, TreeForm};
pub(crate) use lazy::LazyForm;

use crate::source::{Source, Span, Spans};
use crate::value::Value;

/// How deeply forms may nest; deeper input is an error rather than a stack overflow.
pub use crate::value::MAX_DEPTH;

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

/// A document given whole, for functions that keep its value (such as
/// [`crate::compile::compile_document`]).
impl From<Document> for std::borrow::Cow<'_, Document> {
    fn from(doc: Document) -> Self {
        std::borrow::Cow::Owned(doc)
    }
}

/// A borrowed document, whose value a function that keeps it copies.
impl<'a> From<&'a Document> for std::borrow::Cow<'a, Document> {
    fn from(doc: &'a Document) -> Self {
        std::borrow::Cow::Borrowed(doc)
    }
}

/// Reads the single form in `source`.
///
/// ```
/// use std::sync::Arc;
/// use aido::read::ReadErrorKind;
/// use aido::source::Source;
///
/// let doc = aido::read(Arc::new(Source::new("db.edn", "{:hunger 3}"))).unwrap();
/// assert_eq!(doc.value.to_string(), "{:hunger 3}");
///
/// let error = aido::read(Arc::new(Source::new("db.edn", "{:hunger 3"))).unwrap_err();
/// assert!(matches!(error.kind, ReadErrorKind::Unclosed(_)));
/// assert_eq!((error.code(), error.span.start), ("R0008", 0));
/// ```
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
/// use aido::{Value, source::Span, read::read_text};
///
/// let (value, spans) = read_text("[:a {:k 1}]").unwrap();
/// assert_eq!(value.to_string(), "[:a {:k 1}]");
/// // The map is the second element; its elements are its key and value.
/// assert_eq!(spans.span_at(&[1]), Some(Span::new(4, 10)));
/// assert_eq!(spans.span_at(&[1, 1]), Some(Span::new(8, 9)));
/// ```
pub fn read_text(text: &str) -> Result<(Value, Spans), ReadError> {
    within_name_bound(text, parse::read_one)
}

/// `read` of `text`, within the bound of new names one read may intern
/// (`value::intern_bounded`): past it, the whole text is the error.
fn within_name_bound<T>(
    text: &str,
    read: impl FnOnce(&str) -> Result<T, ReadError>,
) -> Result<T, ReadError> {
    let (read, refused) = crate::value::intern_bounded(|| read(text));
    if refused {
        return Err(ReadError {
            kind: ReadErrorKind::TooManyNames,
            span: Span::new(0, text.len()),
        });
    }
    read
}

/// Reads the single form in `text` as a tree to compile: its node vectors
/// recorded as nodes without their vectors and boxed options maps (see
/// [`NodeForms`]), every other form as a value, with the same spans and
/// the same errors as [`read_text`].
pub(crate) fn read_tree(text: &str) -> Result<(TreeForm, Spans), ReadError> {
    within_name_bound(text, parse::read_nodes)
}

/// Reads one value from `text`, discarding spans: handy for dbs and tests.
pub fn read_value(text: &str) -> Result<Value, ReadError> {
    read_text(text).map(|(v, _)| v)
}
