//! Regular expressions, for the text functions (`re-find`, `re-matches`,
//! `re-seq`, `split`) and the `:matches?` node: one way to compile a
//! pattern, bounded for patterns from hostile files, and one shape for what
//! a match gives back.
//!
//! Patterns use the syntax of the `regex` crate (a search takes time linear
//! in the text; no look-around, no back-references). A constant pattern is
//! compiled once, when the tree is compiled, and a bad one is a located
//! compile error; a pattern computed at tick time is compiled at each use,
//! within the same limits, and a bad one ends the tick in Error.

use regex::{Captures, Regex, RegexBuilder};

use crate::value::Value;

/// The longest pattern accepted, in bytes.
pub(crate) const MAX_PATTERN_LEN: usize = 4096;
/// The most memory a compiled pattern may take (the `regex` crate's
/// `size_limit`), in bytes: `a{1000}{1000}` is refused, not built.
const SIZE_LIMIT: usize = 1 << 20;
/// The lazy DFA's cache limit, in bytes.
const DFA_SIZE_LIMIT: usize = 1 << 20;
/// How deeply groups and repetitions may nest.
const NEST_LIMIT: u32 = 64;

/// Compiles `pattern` within the limits above, or says in one line why it
/// cannot.
pub(crate) fn compile(pattern: &str) -> Result<Regex, String> {
    if pattern.len() > MAX_PATTERN_LEN {
        return Err(format!(
            "a regular expression has at most {MAX_PATTERN_LEN} bytes, found {}",
            pattern.len()
        ));
    }
    RegexBuilder::new(pattern)
        .size_limit(SIZE_LIMIT)
        .dfa_size_limit(DFA_SIZE_LIMIT)
        .nest_limit(NEST_LIMIT)
        .build()
        .map_err(|e| describe(&e))
}

/// The regex crate's message in one line: a syntax error's text repeats the
/// pattern with a caret over several lines; its last line says what is wrong.
fn describe(e: &regex::Error) -> String {
    match e {
        regex::Error::Syntax(text) => {
            let what = text
                .lines()
                .rev()
                .find_map(|l| l.trim().strip_prefix("error:"))
                .unwrap_or(text.as_str())
                .trim();
            format!("invalid regular expression: {what}")
        }
        regex::Error::CompiledTooBig(limit) => {
            format!("the regular expression is too large once compiled (limit {limit} bytes)")
        }
        other => format!("invalid regular expression: {other}"),
    }
}

/// What one match gives, as Clojure's `re-find` does: the matched text when
/// the pattern has no groups, else a vector of the match and each group's
/// text (`nil` for a group that took no part).
pub(crate) fn match_value(caps: &Captures<'_>) -> Value {
    if caps.len() == 1 {
        return caps
            .get(0)
            .map_or(Value::Nil, |m| Value::string(m.as_str()));
    }
    Value::Vector(
        caps.iter()
            .map(|g| g.map_or(Value::Nil, |m| Value::string(m.as_str())))
            .collect(),
    )
}

/// The first match of `regex` in `text`, shaped by [`match_value`].
pub(crate) fn find(regex: &Regex, text: &str) -> Option<Value> {
    regex.captures(text).map(|caps| match_value(&caps))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_and_huge_patterns_are_refused_in_one_line() {
        let err = compile("(a").unwrap_err();
        assert!(err.starts_with("invalid regular expression"), "{err}");
        assert!(!err.contains('\n'), "{err}");
        assert!(compile("a{1000}{1000}").is_err());
        assert!(compile(&"a".repeat(MAX_PATTERN_LEN + 1)).is_err());
        assert!(compile(&"(".repeat(100)).is_err());
    }

    #[test]
    fn a_match_is_its_text_or_its_groups() {
        let re = compile("h(i)|(x)").unwrap();
        assert_eq!(
            find(&re, "oh hi").map(|v| v.to_string()),
            Some("[\"hi\" \"i\" nil]".to_owned())
        );
        let plain = compile("hi").unwrap();
        assert_eq!(find(&plain, "oh hi"), Some(Value::string("hi")));
        assert_eq!(find(&plain, "no"), None);
    }
}
