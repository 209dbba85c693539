//! Tokens: numbers, keywords, symbols, characters and strings.
//!
//! Each reader takes the whole text and the byte offset where its token
//! starts, and returns the value with the offset just past the token. Offsets
//! are always on character boundaries: the scans step over ASCII bytes one at
//! a time and over anything else a whole character at a time.

use super::names::NameCache;
use super::{EscapeProblem, NameProblem, NumberProblem, ReadError, ReadErrorKind, Unsupported};
use crate::value::{Keyword, Symbol, Value};

/// Whether an ASCII byte ends a token: whitespace, commas, brackets, a string
/// quote or a comment.
const BOUNDARY: [bool; 128] = {
    let mut table = [false; 128];
    let ends = b" \t\n\r\x0b\x0c,()[]{}\";";
    let mut i = 0;
    while i < ends.len() {
        table[ends[i] as usize] = true;
        i += 1;
    }
    table
};

/// Where the token that runs through `from` ends: at the first blank,
/// bracket, string quote or `;` from `from` on, or at the end of the text.
pub(super) fn token_end(text: &str, from: usize) -> usize {
    let bytes = text.as_bytes();
    let mut i = from;
    while let Some(&b) = bytes.get(i) {
        if let Some(&ends) = BOUNDARY.get(usize::from(b)) {
            if ends {
                break;
            }
            i += 1;
        } else {
            // Non-ASCII: Unicode whitespace ends a token too.
            match char_at(text, i) {
                Some(c) if !c.is_whitespace() => i += c.len_utf8(),
                _ => break,
            }
        }
    }
    i
}

/// The character at byte offset `at`, if there is one.
pub(super) fn char_at(text: &str, at: usize) -> Option<char> {
    text.get(at..).and_then(|s| s.chars().next())
}

fn slice(text: &str, start: usize, end: usize) -> &str {
    text.get(start..end).unwrap_or("")
}

type Token = Result<(Value, usize), ReadError>;

/// A symbol, or `nil`, `true` or `false`.
pub(super) fn symbol(text: &str, start: usize, names: &mut NameCache<Symbol>) -> Token {
    let end = token_end(text, start);
    let token = slice(text, start, end);
    let value = match token {
        "nil" => Value::Nil,
        "true" => Value::Bool(true),
        "false" => Value::Bool(false),
        _ => {
            if !is_plain_symbol(token.as_bytes())
                && let Err(problem) = check_symbol(token)
            {
                return Err(ReadError::new(
                    ReadErrorKind::InvalidSymbol {
                        token: token.to_owned(),
                        problem,
                    },
                    start,
                    end,
                ));
            }
            Value::Symbol(names.get(text, start, end, |t| {
                let s = Symbol::new(t);
                (s, s.as_str())
            }))
        }
    };
    Ok((value, end))
}

/// Classes of bytes in keywords and symbols: a token's end, a name
/// character, the namespace slash, or anything else (not allowed; a byte
/// past ASCII is anything else here, and its name is checked slowly).
const END: u8 = 1;
const NAME: u8 = 0;
const SLASH: u8 = 2;
const OTHER: u8 = 3;
const CLASS: [u8; 256] = {
    let mut table = [OTHER; 256];
    let mut b = 0;
    while b < 128 {
        if BOUNDARY[b] {
            table[b] = END;
        } else if (b as u8).is_ascii_alphanumeric() {
            table[b] = NAME;
        }
        b += 1;
    }
    let punctuation = b".*+!-_?$%&=<>:#";
    let mut i = 0;
    while i < punctuation.len() {
        table[punctuation[i] as usize] = NAME;
        i += 1;
    }
    table[b'/' as usize] = SLASH;
    table
};

/// The interned keyword `text`, with its interned text.
fn intern_keyword(text: &str) -> (Keyword, &'static str) {
    let k = Keyword::new(text);
    (k, k.as_str())
}

/// A keyword; `start` is at its colon.
#[inline]
pub(super) fn keyword(text: &str, start: usize, names: &mut NameCache<Keyword>) -> Token {
    // The fast path: plain ASCII with at most one inner slash, as nearly all
    // keywords are; anything else is checked again slowly, to say why.
    let bytes = text.as_bytes();
    let from = start + 1;
    let mut i = from;
    let mut n_slashes = 0;
    let mut slash_at = 0;
    let mut plain = true;
    // A slice iterator and a table of every byte: no bounds check a byte.
    for &b in bytes.get(from..).unwrap_or_default() {
        match CLASS[usize::from(b)] {
            NAME => i += 1,
            SLASH => {
                n_slashes += 1;
                slash_at = i;
                i += 1;
            }
            END => break,
            _ => {
                plain = false;
                break;
            }
        }
    }
    let valid = plain
        && i > from
        && bytes.get(from) != Some(&b':')
        && (n_slashes == 0 || (n_slashes == 1 && slash_at > from && slash_at + 1 < i));
    if valid {
        let name = names.get(text, from, i, intern_keyword);
        return Ok((Value::Keyword(name), i));
    }
    keyword_slowly(text, start, names)
}

/// [`keyword`] for a keyword that is not plain ASCII with at most one inner
/// slash, or not a keyword: kept out of line, so that the fast path saves
/// fewer registers.
#[cold]
#[inline(never)]
fn keyword_slowly(text: &str, start: usize, names: &mut NameCache<Keyword>) -> Token {
    let from = start + 1;
    let end = token_end(text, from);
    let name = slice(text, from, end);
    if let Err(problem) = check_keyword(name) {
        return Err(ReadError::new(
            ReadErrorKind::InvalidKeyword {
                name: name.to_owned(),
                problem,
            },
            start,
            end,
        ));
    }
    Ok((
        Value::Keyword(names.get(text, from, end, intern_keyword)),
        end,
    ))
}

/// Whether `token` is a symbol by [`check_symbol`]'s rules for certain,
/// decided from its bytes alone: ASCII name characters without a slash, not
/// starting with a digit, `:` or `#`, nor with `-`, `+` or `.` and a digit
/// (a symbol such as `<=` in a tree). Anything else is checked by
/// [`check_symbol`], which says why it is not one.
fn is_plain_symbol(token: &[u8]) -> bool {
    let starts_well = match token {
        [b'-' | b'+' | b'.', second, ..] => !second.is_ascii_digit(),
        [first, ..] => !first.is_ascii_digit() && *first != b':' && *first != b'#',
        [] => false,
    };
    starts_well && token.iter().all(|&b| CLASS[usize::from(b)] == NAME)
}

/// Characters allowed in symbols and keywords, besides the one `/`.
fn is_constituent(c: char) -> bool {
    match u8::try_from(c) {
        Ok(b) if b.is_ascii() => CLASS[usize::from(b)] == NAME,
        _ => c.is_alphanumeric(),
    }
}

/// Splits `ns/name` at its one slash, saying why if there is not exactly one
/// non-empty part on each side.
fn split_name(text: &str) -> Result<(Option<&str>, &str), NameProblem> {
    match text.split_once('/') {
        None => Ok((None, text)),
        Some((_, name)) if name.contains('/') => Err(NameProblem::TooManySlashes),
        Some((ns, name)) if ns.is_empty() || name.is_empty() => Err(NameProblem::EmptyPart),
        Some((ns, name)) => Ok((Some(ns), name)),
    }
}

fn check_chars(part: &str) -> Result<(), NameProblem> {
    match part.chars().find(|&c| !is_constituent(c)) {
        Some(c) => Err(NameProblem::BadCharacter(c)),
        None => Ok(()),
    }
}

/// The EDN rules for a symbol: `/` alone, or a name with an optional
/// namespace, each starting with a non-digit other than `:` and `#`, and not
/// with `-`, `+` or `.` followed by a digit (that would read as a number).
pub(super) fn check_symbol(token: &str) -> Result<(), NameProblem> {
    if token == "/" {
        return Ok(());
    }
    let (ns, name) = split_name(token)?;
    for part in ns.into_iter().chain([name]) {
        check_chars(part)?;
        let mut chars = part.chars();
        let first = chars.next();
        let second = chars.next();
        match first {
            Some(c) if c.is_numeric() => return Err(NameProblem::StartsWithDigit),
            Some(c @ (':' | '#')) => return Err(NameProblem::BadStart(c)),
            Some(c @ ('-' | '+' | '.')) if second.is_some_and(|d| d.is_ascii_digit()) => {
                return Err(NameProblem::SignAndDigit(c));
            }
            _ => {}
        }
    }
    Ok(())
}

/// The rules for a keyword's text after its colon: symbol characters, an
/// optional namespace, no second colon in front (`::a` is Clojure code).
fn check_keyword(name: &str) -> Result<(), NameProblem> {
    if name.is_empty() {
        return Err(NameProblem::MissingName);
    }
    if name.starts_with(':') {
        return Err(NameProblem::AutoResolved);
    }
    // `:/` names the division function, as the symbol `/` does.
    if name == "/" {
        return Ok(());
    }
    let (ns, name) = split_name(name)?;
    for part in ns.into_iter().chain([name]) {
        check_chars(part)?;
    }
    Ok(())
}

/// A number; `start` is at a digit, or at a sign followed by a digit.
pub(super) fn number(text: &str, start: usize) -> Token {
    // A digit alone, as most option values are: the token ends after it.
    if let Some(&[d @ b'0'..=b'9', after]) = text.as_bytes().get(start..start + 2)
        && BOUNDARY.get(usize::from(after)) == Some(&true)
    {
        return Ok((Value::Int(i64::from(d - b'0')), start + 1));
    }
    let end = token_end(text, start);
    let token = slice(text, start, end);
    let invalid = |problem: NumberProblem| {
        Err(ReadError::new(
            ReadErrorKind::InvalidNumber {
                token: token.to_owned(),
                problem,
            },
            start,
            end,
        ))
    };
    let unsupported =
        |what: Unsupported| Err(ReadError::new(ReadErrorKind::Unsupported(what), start, end));
    let bytes = token.as_bytes();
    let (negative, digits_from) = match bytes.first() {
        Some(b'-') => (true, 1),
        Some(b'+') => (false, 1),
        _ => (false, 0),
    };
    let mut i = digits_from;
    let mut int = Some(0i64);
    while let Some(&d) = bytes.get(i).filter(|d| d.is_ascii_digit()) {
        let d = i64::from(d - b'0');
        // Accumulating negative numbers downwards reaches i64::MIN too.
        int = int.and_then(|n| n.checked_mul(10)).and_then(|n| {
            if negative {
                n.checked_sub(d)
            } else {
                n.checked_add(d)
            }
        });
        i += 1;
    }
    let n_digits = i - digits_from;
    let leading_zero = n_digits > 1 && bytes.get(digits_from) == Some(&b'0');
    let rest = bytes.get(i..).unwrap_or_default();
    match rest {
        [] if leading_zero => invalid(NumberProblem::LeadingZero),
        [] => match int {
            Some(n) => Ok((Value::Int(n), end)),
            None => Err(ReadError::new(
                ReadErrorKind::IntegerOverflow(token.to_owned()),
                start,
                end,
            )),
        },
        [b'N'] => unsupported(Unsupported::BigInt),
        [b'.' | b'e' | b'E', ..] => {
            let Some(after) = float_end(bytes, i) else {
                return invalid(NumberProblem::Malformed);
            };
            match bytes.get(after..).unwrap_or_default() {
                [] if leading_zero => invalid(NumberProblem::LeadingZero),
                [] => match token.parse::<f64>() {
                    Ok(x) => Ok((Value::Float(x), end)),
                    Err(_) => invalid(NumberProblem::Malformed),
                },
                [b'M'] => unsupported(Unsupported::BigDecimal),
                _ => invalid(NumberProblem::Malformed),
            }
        }
        [b'M'] => unsupported(Unsupported::BigDecimal),
        [b'/', denominator @ ..]
            if !denominator.is_empty() && denominator.iter().all(u8::is_ascii_digit) =>
        {
            unsupported(Unsupported::Ratio)
        }
        [b'x' | b'X', ..] if n_digits == 1 && bytes.get(digits_from) == Some(&b'0') => {
            invalid(NumberProblem::Hexadecimal)
        }
        [b'r' | b'R', ..] => invalid(NumberProblem::Radix),
        _ => invalid(NumberProblem::Malformed),
    }
}

/// Where the fraction and exponent of a float that starts them at `i` end,
/// or `None` if the exponent has no digits.
fn float_end(bytes: &[u8], mut i: usize) -> Option<usize> {
    let digits = |mut i: usize| {
        while bytes.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        i
    };
    if bytes.get(i) == Some(&b'.') {
        i = digits(i + 1);
    }
    if matches!(bytes.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(bytes.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        let exponent_from = i;
        i = digits(i);
        if i == exponent_from {
            return None;
        }
    }
    Some(i)
}

/// A character literal; `start` is at its backslash.
pub(super) fn character(text: &str, start: usize) -> Token {
    let Some(first) = char_at(text, start + 1) else {
        return Err(ReadError::new(
            ReadErrorKind::MissingCharacter,
            start,
            start + 1,
        ));
    };
    if first.is_whitespace() {
        return Err(ReadError::new(
            ReadErrorKind::WhitespaceCharacter,
            start,
            start + 1 + first.len_utf8(),
        ));
    }
    // The first character is taken whatever it is, so `\(` and `\"` work.
    let end = token_end(text, start + 1 + first.len_utf8());
    let name = slice(text, start + 1, end);
    let c = if name.len() == first.len_utf8() {
        Some(first)
    } else {
        match name {
            "newline" => Some('\n'),
            "space" => Some(' '),
            "tab" => Some('\t'),
            "return" => Some('\r'),
            "formfeed" => Some('\x0c'),
            "backspace" => Some('\x08'),
            _ => name
                .strip_prefix('u')
                .and_then(hex4)
                .and_then(char::from_u32),
        }
    };
    match c {
        Some(c) => Ok((Value::Char(c), end)),
        None => Err(ReadError::new(
            ReadErrorKind::InvalidCharacter(name.to_owned()),
            start,
            end,
        )),
    }
}

/// Exactly four hexadecimal digits.
fn hex4(digits: &str) -> Option<u32> {
    if digits.len() == 4 && digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        u32::from_str_radix(digits, 16).ok()
    } else {
        None
    }
}

/// A string; `start` is at its opening quote.
pub(super) fn string(text: &str, start: usize) -> Token {
    let bytes = text.as_bytes();
    let from = start + 1;
    let unclosed = || ReadError::new(ReadErrorKind::UnclosedString, start, from);
    // Most strings have no escapes: find the closing quote and copy once.
    let mut i = from;
    loop {
        match bytes.get(i) {
            None => return Err(unclosed()),
            Some(b'"') => {
                return Ok((
                    Value::Str(crate::value::ArcStr::from(slice(text, from, i))),
                    i + 1,
                ));
            }
            Some(b'\\') => break,
            Some(_) => i += 1,
        }
    }
    let mut out = String::with_capacity(i - from + 16);
    out.push_str(slice(text, from, i));
    loop {
        match bytes.get(i) {
            None => return Err(unclosed()),
            Some(b'"') => return Ok((Value::Str(crate::value::ArcStr::from(out)), i + 1)),
            Some(b'\\') => {
                if i + 1 >= bytes.len() {
                    return Err(unclosed());
                }
                let (c, next) = escape(text, i)?;
                out.push(c);
                i = next;
            }
            Some(_) => {
                let run = bytes
                    .get(i..)
                    .and_then(|rest| rest.iter().position(|&b| b == b'"' || b == b'\\'))
                    .map_or(bytes.len(), |n| i + n);
                out.push_str(slice(text, i, run));
                i = run;
            }
        }
    }
}

/// The escape sequence at `at` (a backslash inside a string) and the offset past it.
fn escape(text: &str, at: usize) -> Result<(char, usize), ReadError> {
    let bytes = text.as_bytes();
    let simple = match bytes.get(at + 1) {
        Some(b't') => Some('\t'),
        Some(b'r') => Some('\r'),
        Some(b'n') => Some('\n'),
        Some(b'b') => Some('\x08'),
        Some(b'f') => Some('\x0c'),
        Some(b'\\') => Some('\\'),
        Some(b'"') => Some('"'),
        _ => None,
    };
    if let Some(c) = simple {
        return Ok((c, at + 2));
    }
    if bytes.get(at + 1) == Some(&b'u') {
        return unicode_escape(text, at);
    }
    let len = char_at(text, at + 1).map_or(0, char::len_utf8);
    Err(ReadError::new(
        ReadErrorKind::InvalidEscape {
            escape: slice(text, at, at + 1 + len).to_owned(),
            problem: EscapeProblem::Unknown,
        },
        at,
        at + 1 + len,
    ))
}

/// `\uXXXX`, or a surrogate pair `\uD83D\uDE00` for a character beyond the BMP.
fn unicode_escape(text: &str, at: usize) -> Result<(char, usize), ReadError> {
    let code = |at: usize| {
        text.get(at + 2..at + 6)
            .filter(|_| text.get(at..at + 2) == Some("\\u"))
            .and_then(hex4)
    };
    let invalid = |end: usize, problem: EscapeProblem| {
        let end = end.min(text.len());
        let shown = text.get(at..end).unwrap_or("\\u");
        Err(ReadError::new(
            ReadErrorKind::InvalidEscape {
                escape: shown.to_owned(),
                problem,
            },
            at,
            end,
        ))
    };
    let Some(high) = code(at) else {
        let n_hex = text.get(at + 2..).map_or(0, |rest| {
            rest.bytes()
                .take(4)
                .take_while(u8::is_ascii_hexdigit)
                .count()
        });
        return invalid(at + 2 + n_hex, EscapeProblem::ShortUnicode);
    };
    if let Some(c) = char::from_u32(high) {
        return Ok((c, at + 6));
    }
    // A UTF-16 surrogate: only a high one followed by a low one makes a character.
    let low = code(at + 6).filter(|low| (0xDC00..0xE000).contains(low));
    match low {
        Some(low) if (0xD800..0xDC00).contains(&high) => {
            let c = 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00);
            match char::from_u32(c) {
                Some(c) => Ok((c, at + 12)),
                None => invalid(at + 12, EscapeProblem::Invalid),
            }
        }
        _ => invalid(at + 6, EscapeProblem::UnpairedSurrogate),
    }
}

#[cfg(test)]
mod tests {
    use super::{BOUNDARY, check_symbol, is_plain_symbol, number};
    use crate::value::Value;

    #[test]
    fn a_plain_symbol_is_one_check_symbol_accepts() {
        // Every token of up to three bytes from a set that covers each
        // class and each rule of the check.
        let alphabet = b"a<=-+.0:#/_?!*\xc3";
        let mut tokens: Vec<Vec<u8>> = vec![Vec::new()];
        for len in 1..=3 {
            let shorter: Vec<Vec<u8>> = tokens
                .iter()
                .filter(|t| t.len() == len - 1)
                .cloned()
                .collect();
            for t in shorter {
                for &b in alphabet {
                    let mut longer = t.clone();
                    longer.push(b);
                    tokens.push(longer);
                }
            }
        }
        let mut n_plain = 0;
        for token in &tokens {
            if is_plain_symbol(token) {
                n_plain += 1;
                let text = std::str::from_utf8(token).unwrap_or("");
                assert_eq!(check_symbol(text), Ok(()), "{text:?}");
            }
        }
        assert!(n_plain > 100, "{n_plain}");
        assert!(is_plain_symbol(b"<="));
    }

    #[test]
    fn a_lone_digit_reads_as_the_number_scan_reads_it() {
        for d in b'0'..=b'9' {
            let digit = char::from(d);
            // At the end of the text the scan reads it.
            let alone = number(&digit.to_string(), 0).map_err(|e| e.kind);
            assert_eq!(alone, Ok((Value::Int(i64::from(d - b'0')), 1)));
            for after in 0..128u8 {
                let text = format!("{digit}{}x", char::from(after));
                let read = number(&text, 0).map_err(|e| e.kind);
                if BOUNDARY[usize::from(after)] {
                    assert_eq!(read, alone, "{text:?}");
                } else {
                    // Anything else is part of the token: `12`, `1.5`,
                    // `1N`, `0x`, `1a`, read (or refused) by the scan.
                    assert_ne!(read, alone, "{text:?}");
                }
            }
        }
    }
}
