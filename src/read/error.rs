//! What can be wrong with a text: [`ReadErrorKind`], each kind with a stable
//! code (`R0001`..) and a message made from its data when it is shown.

use std::fmt;

use crate::source::Span;

use super::MAX_DEPTH;

/// What was wrong with the text. Each kind has a stable [code](ReadErrorKind::code).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ReadErrorKind {
    /// The text holds no form at all.
    Empty,
    /// The text holds more than one form.
    TrailingForm,
    /// A character that cannot start a form (a control character) after the form.
    UnexpectedAfterForm(char),
    /// The text starts with a byte-order mark.
    ByteOrderMark,
    /// The text ends where a form should start.
    UnexpectedEnd,
    /// Forms nest more deeply than [`MAX_DEPTH`].
    TooDeep,
    /// The text has a keyword or symbol name the process does not know
    /// while it already holds [`crate::value::max_interned_names`] of them.
    TooManyNames,
    /// A collection that is never closed.
    Unclosed(Delimiter),
    /// A collection closed by the wrong delimiter (`found`).
    Mismatched {
        /// The collection.
        open: Delimiter,
        /// The closing delimiter found instead of the collection's own.
        found: char,
    },
    /// A closing delimiter that closes nothing.
    Unmatched(char),
    /// A map with a key but no value.
    MissingMapValue,
    /// A map has the same key twice (the key as printed).
    DuplicateKey(String),
    /// A set has the same element twice (the element as printed).
    DuplicateElement(String),
    /// A string that is never closed.
    UnclosedString,
    /// An invalid escape in a string (the escape as written).
    InvalidEscape {
        /// The escape as written, from its backslash.
        escape: String,
        /// What is wrong with it.
        problem: EscapeProblem,
    },
    /// A `\` with nothing after it.
    MissingCharacter,
    /// A `\` followed by whitespace.
    WhitespaceCharacter,
    /// A character literal that names no character (the text after the `\`).
    InvalidCharacter(String),
    /// A malformed number (the token as written).
    InvalidNumber {
        /// The token.
        token: String,
        /// What is wrong with it.
        problem: NumberProblem,
    },
    /// An integer that does not fit in 64 bits (the token as written).
    IntegerOverflow(String),
    /// An invalid keyword (the name after its colon).
    InvalidKeyword {
        /// The name after the colon.
        name: String,
        /// What is wrong with it.
        problem: NameProblem,
    },
    /// An invalid symbol (the token as written).
    InvalidSymbol {
        /// The token.
        token: String,
        /// What is wrong with it.
        problem: NameProblem,
    },
    /// `##` followed by something other than `Inf`, `-Inf` or `NaN` (the token as written).
    InvalidSymbolicValue(String),
    /// `#` followed by something that starts no EDN form (`#(`, `#"`, `#` alone),
    /// as written.
    InvalidDispatch(String),
    /// A tag that is not a symbol starting with a letter (the tag without its `#`).
    InvalidTag(String),
    /// A tag with no form after it (the tag as written, with its `#`).
    TagWithoutForm(String),
    /// `#_` with no form after it.
    DiscardWithoutForm,
    /// Valid EDN that this library does not support.
    Unsupported(Unsupported),
}

/// The delimiters that open collections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Delimiter {
    /// `(` .. `)`.
    List,
    /// `[` .. `]`.
    Vector,
    /// `{` .. `}`.
    Map,
    /// `#{` .. `}`.
    Set,
}

impl Delimiter {
    /// The opening delimiter as written.
    pub fn opener(self) -> &'static str {
        match self {
            Delimiter::List => "(",
            Delimiter::Vector => "[",
            Delimiter::Map => "{",
            Delimiter::Set => "#{",
        }
    }

    /// The closing delimiter.
    pub fn closer(self) -> char {
        match self {
            Delimiter::List => ')',
            Delimiter::Vector => ']',
            Delimiter::Map | Delimiter::Set => '}',
        }
    }
}

/// Valid EDN that this library does not read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Unsupported {
    /// Ratios such as `1/2`.
    Ratio,
    /// Integers with the `N` suffix.
    BigInt,
    /// Decimals with the `M` suffix.
    BigDecimal,
    /// Namespaced map literals, `#:ns{..}`.
    NamespacedMap,
}

/// What is wrong with a number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum NumberProblem {
    /// Not a number EDN knows.
    Malformed,
    /// A leading zero (EDN has no octal numbers).
    LeadingZero,
    /// `0x..` (EDN has no hexadecimal numbers).
    Hexadecimal,
    /// `NrDDD` (EDN has no radix numbers).
    Radix,
}

/// What is wrong with a keyword's or a symbol's name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum NameProblem {
    /// `:` with no name after it.
    MissingName,
    /// `::name`, an auto-resolved keyword (Clojure code, not EDN).
    AutoResolved,
    /// More than one `/`.
    TooManySlashes,
    /// A `/` with an empty namespace or name beside it.
    EmptyPart,
    /// A character that names may not hold.
    BadCharacter(char),
    /// A name part that starts with a digit.
    StartsWithDigit,
    /// A name part that starts with `:` or `#`.
    BadStart(char),
    /// A name part that starts with `-`, `+` or `.` and a digit (it would read as a number).
    SignAndDigit(char),
}

/// What is wrong with an escape in a string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum EscapeProblem {
    /// Not one of the escapes EDN has.
    Unknown,
    /// `\u` without four hexadecimal digits.
    ShortUnicode,
    /// A UTF-16 surrogate without its pair.
    UnpairedSurrogate,
    /// A surrogate pair that makes no character.
    Invalid,
}

/// A reading error with the span it concerns.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ReadError {
    /// What was wrong.
    pub kind: ReadErrorKind,
    /// Where.
    pub span: Span,
}

impl ReadError {
    /// An error of `kind` at bytes `start..end`.
    pub(crate) fn new(kind: ReadErrorKind, start: usize, end: usize) -> ReadError {
        ReadError {
            kind,
            span: Span::new(start, end),
        }
    }

    /// The stable code of the error's kind, e.g. `R0008`.
    pub fn code(&self) -> &'static str {
        self.kind.code()
    }
}

impl ReadErrorKind {
    /// A stable code for the kind: `R0001` (empty) to `R0028` (unsupported),
    /// never reused for another kind.
    pub fn code(&self) -> &'static str {
        match self {
            ReadErrorKind::Empty => "R0001",
            ReadErrorKind::TrailingForm => "R0002",
            ReadErrorKind::UnexpectedAfterForm(_) => "R0003",
            ReadErrorKind::ByteOrderMark => "R0004",
            ReadErrorKind::UnexpectedEnd => "R0005",
            ReadErrorKind::TooDeep => "R0006",
            ReadErrorKind::TooManyNames => "R0007",
            ReadErrorKind::Unclosed(_) => "R0008",
            ReadErrorKind::Mismatched { .. } => "R0009",
            ReadErrorKind::Unmatched(_) => "R0010",
            ReadErrorKind::MissingMapValue => "R0011",
            ReadErrorKind::DuplicateKey(_) => "R0012",
            ReadErrorKind::DuplicateElement(_) => "R0013",
            ReadErrorKind::UnclosedString => "R0014",
            ReadErrorKind::InvalidEscape { .. } => "R0015",
            ReadErrorKind::MissingCharacter => "R0016",
            ReadErrorKind::WhitespaceCharacter => "R0017",
            ReadErrorKind::InvalidCharacter(_) => "R0018",
            ReadErrorKind::InvalidNumber { .. } => "R0019",
            ReadErrorKind::IntegerOverflow(_) => "R0020",
            ReadErrorKind::InvalidKeyword { .. } => "R0021",
            ReadErrorKind::InvalidSymbol { .. } => "R0022",
            ReadErrorKind::InvalidSymbolicValue(_) => "R0023",
            ReadErrorKind::InvalidDispatch(_) => "R0024",
            ReadErrorKind::InvalidTag(_) => "R0025",
            ReadErrorKind::TagWithoutForm(_) => "R0026",
            ReadErrorKind::DiscardWithoutForm => "R0027",
            ReadErrorKind::Unsupported(_) => "R0028",
        }
    }
}

/// Text from the input as a message quotes it: a short excerpt with
/// control characters escaped, so that no file's content is echoed whole.
fn shown(text: &str) -> String {
    crate::source::excerpt(text, 60)
}

/// Writes `c` as shown in messages: invisible characters escaped, quotes as they are.
fn shown_char(f: &mut fmt::Formatter<'_>, c: char) -> fmt::Result {
    match c {
        '\'' | '"' | '\\' => write!(f, "{c}"),
        _ => write!(f, "{}", c.escape_debug()),
    }
}

impl NameProblem {
    fn write(self, f: &mut fmt::Formatter<'_>, what: &str) -> fmt::Result {
        match self {
            NameProblem::MissingName => f.write_str("a keyword needs a name after `:`"),
            NameProblem::AutoResolved => {
                f.write_str("auto-resolved keywords (`::`) are Clojure code, not EDN")
            }
            NameProblem::TooManySlashes => write!(f, "a {what} has at most one `/`"),
            NameProblem::EmptyPart => {
                f.write_str("`/` must separate a namespace and a name, both non-empty")
            }
            NameProblem::BadCharacter(c) => {
                f.write_str("`")?;
                shown_char(f, c)?;
                write!(f, "` is not allowed in a {what}")
            }
            NameProblem::StartsWithDigit => write!(f, "a {what} cannot start with a digit"),
            NameProblem::BadStart(c) => write!(f, "a {what} cannot start with `{c}`"),
            NameProblem::SignAndDigit(c) => {
                write!(f, "a {what} cannot start with `{c}` and a digit")
            }
        }
    }
}

impl fmt::Display for ReadErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadErrorKind::Empty => f.write_str("no form: the text is empty or only comments"),
            ReadErrorKind::TrailingForm => {
                f.write_str("more than one form: a file holds exactly one form")
            }
            ReadErrorKind::UnexpectedAfterForm(c) => write!(
                f,
                "unexpected character `{}` after the form",
                c.escape_debug()
            ),
            ReadErrorKind::ByteOrderMark => f.write_str(
                "the text starts with a byte-order mark (U+FEFF): save it as UTF-8 without one",
            ),
            ReadErrorKind::UnexpectedEnd => f.write_str("unexpected end of input"),
            ReadErrorKind::TooDeep => write!(f, "forms nest more than {MAX_DEPTH} deep"),
            ReadErrorKind::TooManyNames => write!(
                f,
                "too many distinct keywords and symbols: the process holds more than {}",
                crate::value::max_interned_names()
            ),
            ReadErrorKind::Unclosed(open) => {
                write!(f, "`{}` opened here is never closed", open.opener())
            }
            ReadErrorKind::Mismatched { open, found } => write!(
                f,
                "`{found}` cannot close `{}`: expected `{}`",
                open.opener(),
                open.closer()
            ),
            ReadErrorKind::Unmatched(c) => write!(f, "unmatched delimiter `{c}`"),
            ReadErrorKind::MissingMapValue => f.write_str("a map needs a value for every key"),
            ReadErrorKind::DuplicateKey(k) => write!(f, "duplicate map key {}", shown(k)),
            ReadErrorKind::DuplicateElement(k) => write!(f, "duplicate set element {}", shown(k)),
            ReadErrorKind::UnclosedString => f.write_str("string opened here is never closed"),
            ReadErrorKind::InvalidEscape { escape, problem } => {
                write!(f, "invalid escape `{}` in string", shown(escape))?;
                match problem {
                    EscapeProblem::Unknown => {
                        f.write_str(r#" (allowed: \t \r \n \b \f \\ \" \uXXXX)"#)
                    }
                    EscapeProblem::ShortUnicode => {
                        f.write_str(": `\\u` needs four hexadecimal digits")
                    }
                    EscapeProblem::UnpairedSurrogate => {
                        f.write_str(": an unpaired UTF-16 surrogate")
                    }
                    EscapeProblem::Invalid => Ok(()),
                }
            }
            ReadErrorKind::MissingCharacter => {
                f.write_str("a character literal needs a character after `\\`")
            }
            ReadErrorKind::WhitespaceCharacter => f.write_str(
                "`\\` followed by whitespace is not a character: write \\space, \\tab or \\newline",
            ),
            ReadErrorKind::InvalidCharacter(name) => {
                write!(f, "invalid character literal `\\{}`", shown(name))
            }
            ReadErrorKind::InvalidNumber { token, problem } => {
                write!(f, "invalid number `{}`", shown(token))?;
                match problem {
                    NumberProblem::Malformed => Ok(()),
                    NumberProblem::LeadingZero => {
                        f.write_str(": a number cannot start with 0 (EDN has no octal numbers)")
                    }
                    NumberProblem::Hexadecimal => f.write_str(": EDN has no hexadecimal numbers"),
                    NumberProblem::Radix => f.write_str(": EDN has no radix numbers"),
                }
            }
            ReadErrorKind::IntegerOverflow(token) => {
                write!(f, "integer `{}` does not fit in 64 bits", shown(token))
            }
            ReadErrorKind::InvalidKeyword { name, problem } => {
                write!(f, "invalid keyword `:{}`: ", shown(name))?;
                problem.write(f, "keyword")
            }
            ReadErrorKind::InvalidSymbol { token, problem } => {
                write!(f, "invalid symbol `{}`: ", shown(token))?;
                problem.write(f, "symbol")
            }
            ReadErrorKind::InvalidSymbolicValue(token) => write!(
                f,
                "invalid symbolic value `{}`: expected ##Inf, ##-Inf or ##NaN",
                shown(token)
            ),
            ReadErrorKind::InvalidDispatch(text) => write!(
                f,
                "`{}` is not EDN: `#` starts a set `#{{`, a discard `#_`, `##Inf` or a tag",
                shown(text)
            ),
            ReadErrorKind::InvalidTag(tag) => write!(
                f,
                "invalid tag `#{}`: a tag is a symbol that starts with a letter",
                shown(tag)
            ),
            ReadErrorKind::TagWithoutForm(tag) => {
                write!(f, "the tag `{}` needs a form after it", shown(tag))
            }
            ReadErrorKind::DiscardWithoutForm => {
                f.write_str("`#_` needs a form after it to discard")
            }
            ReadErrorKind::Unsupported(what) => f.write_str(match what {
                Unsupported::Ratio => "ratios are not supported",
                Unsupported::BigInt => {
                    "arbitrary-precision integers (the `N` suffix) are not supported"
                }
                Unsupported::BigDecimal => {
                    "arbitrary-precision decimals (the `M` suffix) are not supported"
                }
                Unsupported::NamespacedMap => {
                    "namespaced map literals (`#:ns{..}`) are not supported"
                }
            }),
        }
    }
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.kind.fmt(f)
    }
}

impl std::error::Error for ReadError {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::read::read_text;

    fn kind_of(text: &str) -> ReadErrorKind {
        match read_text(text) {
            Ok(_) => ReadErrorKind::Empty,
            Err(e) => e.kind,
        }
    }

    #[test]
    fn each_kind_has_its_own_stable_code() {
        let samples = [
            ("", "R0001"),
            ("1 2", "R0002"),
            ("[1]\0", "R0003"),
            ("\u{feff}1", "R0004"),
            ("[1", "R0008"),
            ("[1}", "R0009"),
            (")", "R0010"),
            ("{:a}", "R0011"),
            ("{:a 1 :a 2}", "R0012"),
            ("#{1 1}", "R0013"),
            ("\"a", "R0014"),
            ("\"\\x\"", "R0015"),
            ("\\", "R0016"),
            ("\\ ", "R0017"),
            ("\\abc", "R0018"),
            ("012", "R0019"),
            ("99999999999999999999", "R0020"),
            (":a/b/c", "R0021"),
            ("a/b/c", "R0022"),
            ("##Foo", "R0023"),
            ("#(", "R0024"),
            ("#1 2", "R0025"),
            ("#foo", "R0026"),
            ("#_", "R0027"),
            ("1/2", "R0028"),
        ];
        let mut seen = std::collections::HashSet::new();
        for (text, code) in samples {
            let kind = kind_of(text);
            assert_eq!(kind.code(), code, "{text:?} read as {kind:?}");
            assert!(seen.insert(code), "{code} twice");
        }
        assert_eq!(ReadErrorKind::TooDeep.code(), "R0006");
        assert_eq!(ReadErrorKind::TooManyNames.code(), "R0007");
        assert_eq!(ReadErrorKind::UnexpectedEnd.code(), "R0005");
    }

    #[test]
    fn messages_are_made_from_the_data() {
        let kind = ReadErrorKind::InvalidKeyword {
            name: "a/b/c".into(),
            problem: NameProblem::TooManySlashes,
        };
        assert_eq!(
            kind.to_string(),
            "invalid keyword `:a/b/c`: a keyword has at most one `/`"
        );
        assert_eq!(
            ReadErrorKind::Unsupported(Unsupported::Ratio).to_string(),
            "ratios are not supported"
        );
    }
}
