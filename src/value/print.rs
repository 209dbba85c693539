//! Printing values as EDN text that the reader reads back to an equal value.

use std::fmt::{self, Write};

use super::Value;

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Nil => f.write_str("nil"),
            Value::Bool(b) => write!(f, "{b}"),
            Value::Int(i) => write!(f, "{i}"),
            Value::Float(x) => write_float(f, *x),
            Value::Str(s) => write_string(f, s),
            Value::Char(c) => write_char(f, *c),
            Value::Keyword(k) => write!(f, "{k}"),
            Value::Symbol(s) => write!(f, "{s}"),
            Value::Vector(items) => write_seq(f, "[", items.iter(), "]"),
            Value::List(items) => write_seq(f, "(", items.iter(), ")"),
            Value::Set(items) => write_seq(f, "#{", items.iter(), "}"),
            Value::Map(map) => {
                f.write_char('{')?;
                for (i, (k, v)) in map.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{k} {v}")?;
                }
                f.write_char('}')
            }
            Value::Tagged(tag, v) => write!(f, "#{tag} {v}"),
        }
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
        write!(f, "{item}")?;
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
                Value::Vector(vec![
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
    fn unnamed_whitespace_characters_print_as_codes_and_read_back() {
        let v = Value::Char('\u{a0}');
        assert_eq!(v.to_string(), "\\u00a0");
        assert_eq!(crate::read_value(&v.to_string()).ok(), Some(v));
    }
}
