//! The strict EDN reader: text to [`Value`] plus the [`Spans`] of every form.
//!
//! Parsing is done by `clojure-reader`'s span-carrying parser; this module
//! lowers its syntax tree into [`Value`], checking what that parser leaves to
//! its caller: duplicate map keys and set elements, valid tags, exactly one
//! form per text, and a nesting limit. Nothing malformed is ever repaired.

use std::fmt;
use std::sync::Arc;

use clojure_reader::error::{Code, Error as EdnError};
use clojure_reader::parse::{self, Node, NodeKind, SourceReader};

use crate::source::{Source, Span, Spans};
use crate::value::{Keyword, Map, Set, Symbol, Value};

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
    /// Valid EDN that this library does not support (ratios, namespaced maps).
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
pub fn read_text(text: &str) -> Result<(Value, Spans), ReadError> {
    let mut reader = SourceReader::new(text);
    let node = parse::parse(&mut reader).map_err(|e| syntax_error(text, &e))?;
    if is_no_form(text, &node) {
        return Err(ReadError {
            kind: ReadErrorKind::Empty,
            span: Span::new(0, text.len()),
        });
    }
    let rest_start = text.len() - reader.remaining().len();
    let mut rest = SourceReader::new(reader.remaining());
    match parse::parse(&mut rest) {
        Ok(extra) if is_no_form(reader.remaining(), &extra) => {}
        Ok(extra) => {
            return Err(ReadError {
                kind: ReadErrorKind::TrailingForm,
                span: Span::new(rest_start + extra.span.0.ptr, rest_start + extra.span.1.ptr),
            });
        }
        Err(_) => {
            let offset =
                rest_start + reader.remaining().len() - reader.remaining().trim_start().len();
            return Err(ReadError {
                kind: ReadErrorKind::TrailingForm,
                span: Span::new(offset, offset + 1),
            });
        }
    }
    lower(&node, 0)
}

/// Reads one value from `text`, discarding spans: handy for dbs and tests.
pub fn read_value(text: &str) -> Result<Value, ReadError> {
    read_text(text).map(|(v, _)| v)
}

/// The parser answers nil for a text with no form (only blanks, comments or
/// discarded forms); a real `nil` has the text `nil`.
fn is_no_form(text: &str, node: &Node<'_>) -> bool {
    matches!(node.kind, NodeKind::Nil)
        && text
            .get(node.span.0.ptr..node.span.1.ptr)
            .is_none_or(|s| !s.trim_end().ends_with("nil"))
}

fn span_of(node: &Node<'_>) -> Span {
    Span::new(node.span.0.ptr, node.span.1.ptr)
}

fn syntax_error(text: &str, e: &EdnError) -> ReadError {
    let at = e.ptr.unwrap_or(text.len()).min(text.len());
    let next = text.get(at..).and_then(|s| s.chars().next());
    let message = match &e.code {
        Code::InvalidChar => "invalid character literal".to_owned(),
        Code::InvalidEscape => r#"invalid escape in string (allowed: \t \r \n \\ \")"#.to_owned(),
        Code::InvalidKeyword => "invalid keyword".to_owned(),
        Code::InvalidNumber => {
            "invalid number (integers must fit in 64 bits; N and M suffixes are not supported)"
                .to_owned()
        }
        Code::InvalidRadix(_) => "invalid radix in number".to_owned(),
        Code::InvalidTag => "invalid tag".to_owned(),
        Code::UnexpectedEOF => match next {
            Some('}') => "a map needs a value for every key".to_owned(),
            Some(c) => format!("unexpected `{c}`"),
            None => "unexpected end of input: a form is not closed".to_owned(),
        },
        Code::UnmatchedDelimiter(c) => format!("unmatched delimiter `{c}`"),
        other => format!("malformed EDN ({other:?})"),
    };
    let end = at + next.map_or(0, char::len_utf8);
    ReadError {
        kind: ReadErrorKind::Syntax(message),
        span: Span::new(at, end),
    }
}

fn lower(node: &Node<'_>, depth: usize) -> Result<(Value, Spans), ReadError> {
    let span = span_of(node);
    if depth > MAX_DEPTH {
        return Err(ReadError {
            kind: ReadErrorKind::TooDeep,
            span,
        });
    }
    let leaf = |value: Value| {
        Ok((
            value,
            Spans {
                span,
                children: Vec::new(),
            },
        ))
    };
    match &node.kind {
        NodeKind::Nil => leaf(Value::Nil),
        NodeKind::Bool(b) => leaf(Value::Bool(*b)),
        NodeKind::Int(i) => leaf(Value::Int(*i)),
        NodeKind::Double(d) => leaf(Value::Float(d.into_inner())),
        NodeKind::Char(c) => leaf(Value::Char(*c)),
        NodeKind::Key(k) => leaf(Value::Keyword(Keyword::new(k))),
        NodeKind::Symbol(s) => leaf(Value::Symbol(Symbol::new(s))),
        NodeKind::Str(raw) => leaf(Value::Str(Arc::from(decode_string(raw, span)?.as_str()))),
        NodeKind::Rational(_) => Err(ReadError {
            kind: ReadErrorKind::Unsupported("ratios are".to_owned()),
            span,
        }),
        NodeKind::Vector(items, _) | NodeKind::List(items, _) => {
            let mut values = Vec::with_capacity(items.len());
            let mut children = Vec::with_capacity(items.len());
            for item in items {
                let (v, s) = lower(item, depth + 1)?;
                values.push(v);
                children.push(s);
            }
            let value = if matches!(node.kind, NodeKind::Vector(..)) {
                Value::Vector(values)
            } else {
                Value::List(values)
            };
            Ok((value, Spans { span, children }))
        }
        NodeKind::Set(items, _) => {
            let mut set = Set::default();
            let mut children = Vec::with_capacity(items.len());
            for item in items {
                let (v, s) = lower(item, depth + 1)?;
                if set.contains(&v) {
                    return Err(ReadError {
                        kind: ReadErrorKind::DuplicateElement(v.to_string()),
                        span: s.span,
                    });
                }
                set.insert(v);
                children.push(s);
            }
            Ok((Value::Set(Box::new(set)), Spans { span, children }))
        }
        NodeKind::Map(entries, _) => {
            let mut map = Map::default();
            let mut children = Vec::with_capacity(entries.len() * 2);
            for (k, v) in entries {
                let (key, key_spans) = lower(k, depth + 1)?;
                if map.contains_key(&key) {
                    return Err(ReadError {
                        kind: ReadErrorKind::DuplicateKey(key.to_string()),
                        span: key_spans.span,
                    });
                }
                let (value, value_spans) = lower(v, depth + 1)?;
                map.insert(key, value);
                children.push(key_spans);
                children.push(value_spans);
            }
            Ok((Value::Map(Box::new(map)), Spans { span, children }))
        }
        NodeKind::Tagged(tag, tag_span, inner) => {
            let tag_span = Span::new(tag_span.0.ptr, tag_span.1.ptr);
            if tag.starts_with(':') {
                return Err(ReadError {
                    kind: ReadErrorKind::Unsupported(
                        "namespaced map literals (`#:ns{..}`) are".to_owned(),
                    ),
                    span: tag_span,
                });
            }
            if !tag.chars().next().is_some_and(char::is_alphabetic) || tag.ends_with('/') {
                return Err(ReadError {
                    kind: ReadErrorKind::Syntax(format!(
                        "invalid tag `#{tag}`: a tag starts with a letter"
                    )),
                    span: tag_span,
                });
            }
            let (value, inner_spans) = lower(inner, depth + 1)?;
            Ok((
                Value::Tagged(Symbol::new(tag), Box::new(value)),
                Spans {
                    span,
                    children: vec![inner_spans],
                },
            ))
        }
        _ => Err(ReadError {
            kind: ReadErrorKind::Unsupported("this kind of number is".to_owned()),
            span,
        }),
    }
}

fn decode_string(raw: &str, span: Span) -> Result<String, ReadError> {
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some('\\') => out.push('\\'),
            Some('"') => out.push('"'),
            other => {
                return Err(ReadError {
                    kind: ReadErrorKind::Syntax(format!(
                        "invalid escape `\\{}` in string",
                        other.map(String::from).unwrap_or_default()
                    )),
                    span,
                });
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> ReadError {
        match read_text(text) {
            Ok((v, _)) => panic!("expected an error for {text:?}, read {v}"),
            Err(e) => e,
        }
    }

    #[test]
    fn reads_every_kind_of_value() {
        let v =
            read_value(r#"[nil true 1 -2.5 "a\nb" \x :k :ns/k sym (1) #{1} {:a 1} #inst "2020"]"#);
        assert_eq!(
            v.map(|v| v.to_string()).ok(),
            Some(
                r#"[nil true 1 -2.5 "a\nb" \x :k :ns/k sym (1) #{1} {:a 1} #inst "2020"]"#
                    .to_owned()
            )
        );
    }

    #[test]
    fn rejects_what_a_lax_reader_would_repair() {
        assert!(matches!(err("{:k 1 :j}").kind, ReadErrorKind::Syntax(_)));
        assert_eq!(
            err("{:k 1 :k 2}").kind,
            ReadErrorKind::DuplicateKey(":k".into())
        );
        assert_eq!(err("{:k 1 :k 2}").span, Span::new(6, 8));
        assert!(matches!(
            err("99999999999999999999").kind,
            ReadErrorKind::Syntax(_)
        ));
        assert!(matches!(err(":").kind, ReadErrorKind::Syntax(_)));
        assert_eq!(
            err("#{1 1}").kind,
            ReadErrorKind::DuplicateElement("1".into())
        );
    }

    #[test]
    fn a_text_holds_exactly_one_form() {
        assert_eq!(err("").kind, ReadErrorKind::Empty);
        assert_eq!(err("  ; only a comment\n").kind, ReadErrorKind::Empty);
        let e = err("[:a] [:b]");
        assert_eq!(
            (e.kind, e.span),
            (ReadErrorKind::TrailingForm, Span::new(5, 9))
        );
    }

    #[test]
    fn spans_cover_each_form() {
        let (_, spans) = read_text("[:a {:k 1}]").unwrap_or_default();
        assert_eq!(spans.span, Span::new(0, 11));
        assert_eq!(spans.children[1].span, Span::new(4, 10));
        assert_eq!(spans.children[1].children[1].span, Span::new(8, 9));
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        let text = format!("{}{}", "[".repeat(MAX_DEPTH + 5), "]".repeat(MAX_DEPTH + 5));
        assert_eq!(err(&text).kind, ReadErrorKind::TooDeep);
    }
}
