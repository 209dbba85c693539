//! Printing values as EDN text that the reader reads back to an equal value.

use std::fmt::{self, Write};

use super::Value;

/// How deeply printing follows collections. The reader reads at most
/// `MAX_DEPTH`, and saving refuses deeper values before printing them; a
/// deeper value built in Rust prints `#aido/too-deep nil` in place of what
/// lies beyond, rather than overflowing the stack.
pub(crate) const PRINT_DEPTH: usize = 2 * crate::value::MAX_DEPTH;

thread_local! {
    /// How many collections the printer is inside, on this thread.
    static PRINTING: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Runs `body` one collection deeper, or writes the too-deep marker.
fn nested(
    f: &mut fmt::Formatter<'_>,
    body: impl FnOnce(&mut fmt::Formatter<'_>) -> fmt::Result,
) -> fmt::Result {
    let depth = PRINTING.with(std::cell::Cell::get);
    if depth >= PRINT_DEPTH {
        return f.write_str("#aido/too-deep nil");
    }
    PRINTING.with(|d| d.set(depth + 1));
    let result = body(f);
    PRINTING.with(|d| d.set(depth));
    result
}

/// Formatting flags (a width, a fill) are ignored, at every depth: the text
/// is always the value's EDN. Elements are written straight into the
/// formatter, without a `write!` of their own, which none of the parts
/// below reads flags from either (a keyword, a symbol, a string, a map's
/// key, each nested collection).
impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Vector(_)
            | Value::List(_)
            | Value::Set(_)
            | Value::Map(_)
            | Value::Tagged(..) => nested(f, |f| self.fmt_collection(f)),
            _ => self.fmt_collection(f),
        }
    }
}

impl Value {
    fn fmt_collection(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Nil => f.write_str("nil"),
            Value::Bool(b) => f.write_str(if *b { "true" } else { "false" }),
            Value::Int(i) => write!(f, "{i}"),
            Value::Float(x) => write_float(f, *x),
            Value::Str(s) => write_string(f, s),
            Value::Char(c) => write_char(f, *c),
            Value::Keyword(k) => fmt::Display::fmt(k, f),
            Value::Symbol(s) => fmt::Display::fmt(s, f),
            Value::Vector(items) => write_seq(f, "[", items.iter(), "]"),
            Value::List(items) => write_seq(f, "(", items.iter(), ")"),
            Value::Set(items) => write_seq(f, "#{", items.iter(), "}"),
            Value::Map(map) => {
                f.write_char('{')?;
                for (i, (k, v)) in map.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    fmt::Display::fmt(k, f)?;
                    f.write_char(' ')?;
                    fmt::Display::fmt(v, f)?;
                }
                f.write_char('}')
            }
            Value::Tagged(tag, v) => write!(f, "#{tag} {v}"),
        }
    }
}

impl Value {
    /// The value's EDN text if it has at most `max_chars` characters, else
    /// its first `max_chars - 3` characters and `...`, with whether it was
    /// cut. Printing stops as soon as the limit is passed, so a huge value
    /// costs no more than a small one.
    pub(crate) fn abbreviated(&self, max_chars: usize) -> (String, bool) {
        let mut out = Bounded {
            text: String::new(),
            chars: 0,
            max_chars,
            cut: false,
        };
        // The only error is the one `Bounded` returns when it is full.
        let _ = write!(out, "{self}");
        if out.cut {
            let keep = max_chars.saturating_sub(3);
            let end = out
                .text
                .char_indices()
                .nth(keep)
                .map_or(out.text.len(), |(i, _)| i);
            out.text.truncate(end);
            out.text.push_str("...");
        }
        (out.text, out.cut)
    }
}

/// A writer that takes at most `max_chars` characters, then fails.
struct Bounded {
    text: String,
    chars: usize,
    max_chars: usize,
    cut: bool,
}

impl Write for Bounded {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        for c in s.chars() {
            if self.chars == self.max_chars {
                self.cut = true;
                return Err(fmt::Error);
            }
            self.text.push(c);
            self.chars += 1;
        }
        Ok(())
    }
}

fn write_seq<'a>(
    f: &mut fmt::Formatter<'_>,
    open: &str,
    items: impl Iterator<Item = &'a Value>,
    close: &str,
) -> fmt::Result {
    f.write_str(open)?;
    for (i, item) in items.enumerate() {
        if i > 0 {
            f.write_char(' ')?;
        }
        fmt::Display::fmt(item, f)?;
    }
    f.write_str(close)
}

fn write_float(f: &mut fmt::Formatter<'_>, x: f64) -> fmt::Result {
    if x.is_nan() {
        f.write_str("##NaN")
    } else if x.is_infinite() {
        f.write_str(if x > 0.0 { "##Inf" } else { "##-Inf" })
    } else if x.fract() == 0.0 && x.abs() < 1e16 {
        // Keep a decimal point so that the value reads back as a float.
        write!(f, "{x:.1}")
    } else {
        write!(f, "{x:?}")
    }
}

fn write_string(f: &mut fmt::Formatter<'_>, s: &str) -> fmt::Result {
    f.write_char('"')?;
    for c in s.chars() {
        match c {
            '"' => f.write_str("\\\"")?,
            '\\' => f.write_str("\\\\")?,
            '\n' => f.write_str("\\n")?,
            '\t' => f.write_str("\\t")?,
            '\r' => f.write_str("\\r")?,
            // Other control characters (a terminal's escape sequences, a
            // NUL) as `\uXXXX`, which reads back the same: printed EDN is
            // inert wherever it is shown.
            c if c.is_control() => write!(f, "\\u{:04x}", u32::from(c))?,
            c => f.write_char(c)?,
        }
    }
    f.write_char('"')
}

fn write_char(f: &mut fmt::Formatter<'_>, c: char) -> fmt::Result {
    match c {
        '\n' => f.write_str("\\newline"),
        ' ' => f.write_str("\\space"),
        '\t' => f.write_str("\\tab"),
        '\r' => f.write_str("\\return"),
        // Other whitespace and control characters have no name: print the code.
        c if c.is_control() || c.is_whitespace() => write!(f, "\\u{:04x}", u32::from(c)),
        c => write!(f, "\\{c}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prints_clojure_style_edn() {
        let v = Value::map_from([
            (Value::keyword("tick"), Value::Int(1)),
            (Value::keyword("status"), Value::keyword("success")),
            (
                Value::keyword("xs"),
                Value::Vector(crate::value::thin_vec![
                    Value::Float(1.0),
                    Value::string("a\"b"),
                    Value::Char(' '),
                ]),
            ),
        ]);
        assert_eq!(
            v.to_string(),
            r#"{:tick 1, :status :success, :xs [1.0 "a\"b" \space]}"#
        );
    }

    #[test]
    fn formatting_flags_change_no_part_of_the_text() {
        let v = Value::map_from([
            (Value::keyword("n"), Value::Int(7)),
            (
                Value::keyword("xs"),
                Value::Vector(crate::value::thin_vec![
                    Value::Bool(true),
                    Value::Int(-3),
                    Value::keyword("a/b"),
                    Value::Symbol(crate::value::Symbol::new("<=")),
                    Value::string("s"),
                    Value::Nil,
                ]),
            ),
        ]);
        let plain = r#"{:n 7, :xs [true -3 :a/b <= "s" nil]}"#;
        assert_eq!(v.to_string(), plain);
        for text in [
            format!("{v:>60}"),
            format!("{v:*<60}"),
            format!("{v:+}"),
            format!("{v:08}"),
        ] {
            assert_eq!(text, plain);
        }
        assert_eq!(format!("{:>9}", Value::keyword("k")), ":k");
        assert_eq!(format!("{:>9}", Value::Int(5)), "5");
    }

    #[test]
    fn abbreviated_text_is_cut_at_the_limit_and_says_so() {
        let short = Value::Vector(crate::value::thin_vec![Value::Int(1), Value::Int(2)]);
        assert_eq!(short.abbreviated(5), ("[1 2]".to_owned(), false));
        assert_eq!(short.abbreviated(4), ("[...".to_owned(), true));
        // A value of a million elements is cut without printing it all.
        let long = Value::Vector(crate::value::thin_vec![Value::string("é"); 1_000_000]);
        let (text, cut) = long.abbreviated(10);
        assert!(cut);
        assert_eq!(text, "[\"é\" \"é...");
        assert_eq!(text.chars().count(), 10);
    }

    #[test]
    fn unnamed_whitespace_characters_print_as_codes_and_read_back() {
        let v = Value::Char('\u{a0}');
        assert_eq!(v.to_string(), "\\u00a0");
        assert_eq!(crate::read_value(&v.to_string()).ok(), Some(v));
    }
}
