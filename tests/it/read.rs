//! The reader: error kinds with their spans (the one-line malformed texts
//! are data, in tests/data/read-err/, see tests/it/read_errors.rs), every
//! kind of value read and printed back, spans of nested forms, and a differential test against
//! clojure-reader over a few hundred valid and invalid texts.
#![allow(clippy::panic, clippy::expect_used, clippy::unwrap_used)]

use aido::{
    ReadError, Value,
    read::{
        Delimiter, EscapeProblem, MAX_DEPTH, NameProblem, NumberProblem, ReadErrorKind,
        Unsupported, read_text,
    },
    read_value,
    source::{Span, Spans},
};

fn read_err(text: &str) -> ReadError {
    match read_text(text) {
        Ok((v, _)) => panic!("expected an error for {text:?}, read {v}"),
        Err(e) => e,
    }
}

/// Asserts that reading `text` fails with `kind` at bytes `start..end`.
fn check_err(text: &str, kind: ReadErrorKind, (start, end): (usize, usize)) {
    let e = read_err(text);
    assert_eq!(
        (&e.kind, e.span),
        (&kind, Span::new(start, end)),
        "for {text:?}: {e}"
    );
}

/// Asserts that `text` reads to a value that prints as `printed`.
fn check_ok(text: &str, printed: &str) {
    match read_value(text) {
        Ok(v) => assert_eq!(v.to_string(), printed, "for {text:?}"),
        Err(e) => panic!("{text:?} should read, but: {e} at {:?}", e.span),
    }
}

#[test]
fn map_keys_of_different_types_are_distinct() {
    // An integer and a float are never equal, nor are a string and a keyword.
    check_ok(
        "{1 :a 1.0 :b \"k\" :c :k :d}",
        r#"{1 :a, 1.0 :b, "k" :c, :k :d}"#,
    );
}

#[test]
fn numbers() {
    check_ok("[0 -0 +5 42 -7]", "[0 0 5 42 -7]");
    check_ok("9223372036854775807", "9223372036854775807");
    check_ok("-9223372036854775808", "-9223372036854775808");
    check_ok(
        "[1.5 -2e10 1. 1.e5 2E-3 +0.5 -0.0]",
        "[1.5 -20000000000.0 1.0 100000.0 0.002 0.5 -0.0]",
    );
    check_ok("[##Inf ##-Inf ##NaN]", "[##Inf ##-Inf ##NaN]");
    check_ok("1e400", "##Inf");
}

#[test]
fn keywords_and_symbols() {
    check_ok(
        "[:a :ns/name :a.b/c-d? :1 :é :a:b sym ns/sym / + - . <= a#b ->x é/ü nil true false]",
        "[:a :ns/name :a.b/c-d? :1 :é :a:b sym ns/sym / + - . <= a#b ->x é/ü nil true false]",
    );
    check_err(
        ":",
        ReadErrorKind::InvalidKeyword {
            name: "".into(),
            problem: NameProblem::MissingName,
        },
        (0, 1),
    );
    check_err(
        "[: 1]",
        ReadErrorKind::InvalidKeyword {
            name: "".into(),
            problem: NameProblem::MissingName,
        },
        (1, 2),
    );
    check_err(
        "::a",
        ReadErrorKind::InvalidKeyword {
            name: ":a".into(),
            problem: NameProblem::AutoResolved,
        },
        (0, 3),
    );
    check_err(
        ":a/",
        ReadErrorKind::InvalidKeyword {
            name: "a/".into(),
            problem: NameProblem::EmptyPart,
        },
        (0, 3),
    );
    check_err(
        ":/a",
        ReadErrorKind::InvalidKeyword {
            name: "/a".into(),
            problem: NameProblem::EmptyPart,
        },
        (0, 3),
    );
    // `:/` names the division function, as the symbol `/` does.
    assert_eq!(read_value(":/").unwrap(), Value::keyword("/"));
    check_err(
        ":a/b/c",
        ReadErrorKind::InvalidKeyword {
            name: "a/b/c".into(),
            problem: NameProblem::TooManySlashes,
        },
        (0, 6),
    );
    check_err(
        ":a@b",
        ReadErrorKind::InvalidKeyword {
            name: "a@b".into(),
            problem: NameProblem::BadCharacter('@'),
        },
        (0, 4),
    );
    check_err(
        "a/",
        ReadErrorKind::InvalidSymbol {
            token: "a/".into(),
            problem: NameProblem::EmptyPart,
        },
        (0, 2),
    );
    check_err(
        "/a",
        ReadErrorKind::InvalidSymbol {
            token: "/a".into(),
            problem: NameProblem::EmptyPart,
        },
        (0, 2),
    );
    check_err(
        "a/b/c",
        ReadErrorKind::InvalidSymbol {
            token: "a/b/c".into(),
            problem: NameProblem::TooManySlashes,
        },
        (0, 5),
    );
    check_err(
        "[a@b]",
        ReadErrorKind::InvalidSymbol {
            token: "a@b".into(),
            problem: NameProblem::BadCharacter('@'),
        },
        (1, 4),
    );
    check_err(
        "'a",
        ReadErrorKind::InvalidSymbol {
            token: "'a".into(),
            problem: NameProblem::BadCharacter('\''),
        },
        (0, 2),
    );
    check_err(
        "a\u{1}",
        ReadErrorKind::InvalidSymbol {
            token: "a\u{1}".into(),
            problem: NameProblem::BadCharacter('\u{1}'),
        },
        (0, 2),
    );
    check_err(
        "a\u{feff}b",
        ReadErrorKind::InvalidSymbol {
            token: "a\u{feff}b".into(),
            problem: NameProblem::BadCharacter('\u{feff}'),
        },
        (0, 5),
    );
    check_err(
        "a\\b",
        ReadErrorKind::InvalidSymbol {
            token: "a\\b".into(),
            problem: NameProblem::BadCharacter('\\'),
        },
        (0, 3),
    );
    check_err(
        ".5",
        ReadErrorKind::InvalidSymbol {
            token: ".5".into(),
            problem: NameProblem::SignAndDigit('.'),
        },
        (0, 2),
    );
    check_err(
        "a/-1",
        ReadErrorKind::InvalidSymbol {
            token: "a/-1".into(),
            problem: NameProblem::SignAndDigit('-'),
        },
        (0, 4),
    );
    check_err(
        "a/1",
        ReadErrorKind::InvalidSymbol {
            token: "a/1".into(),
            problem: NameProblem::StartsWithDigit,
        },
        (0, 3),
    );
    check_err(
        "a/:b",
        ReadErrorKind::InvalidSymbol {
            token: "a/:b".into(),
            problem: NameProblem::BadStart(':'),
        },
        (0, 4),
    );
}

#[test]
fn strings() {
    check_ok(r#""""#, r#""""#);
    check_ok(r#""plain é 😀""#, r#""plain é 😀""#);
    check_ok(r#""a\tb\rc\nd\\e\"f""#, r#""a\tb\rc\nd\\e\"f""#);
    check_ok("\"two\nlines\"", r#""two\nlines""#);
    assert_eq!(
        read_value(r#""\b\f\u00e9\u0041\uD83D\uDE00""#).unwrap(),
        Value::string("\u{8}\u{c}éA😀")
    );
    check_err(
        r#"["ok" "a\x"]"#,
        ReadErrorKind::InvalidEscape {
            escape: "\\x".into(),
            problem: EscapeProblem::Unknown,
        },
        (8, 10),
    );
    check_err(
        r#""\é""#,
        ReadErrorKind::InvalidEscape {
            escape: "\\é".into(),
            problem: EscapeProblem::Unknown,
        },
        (1, 4),
    );
    check_err(
        r#""\u12""#,
        ReadErrorKind::InvalidEscape {
            escape: "\\u12".into(),
            problem: EscapeProblem::ShortUnicode,
        },
        (1, 5),
    );
    check_err(
        r#""\u+123""#,
        ReadErrorKind::InvalidEscape {
            escape: "\\u".into(),
            problem: EscapeProblem::ShortUnicode,
        },
        (1, 3),
    );
    check_err(
        r#""\uD83D""#,
        ReadErrorKind::InvalidEscape {
            escape: "\\uD83D".into(),
            problem: EscapeProblem::UnpairedSurrogate,
        },
        (1, 7),
    );
    check_err(
        r#""\uDE00\uD83D""#,
        ReadErrorKind::InvalidEscape {
            escape: "\\uDE00".into(),
            problem: EscapeProblem::UnpairedSurrogate,
        },
        (1, 7),
    );
    check_err("[\"abc", ReadErrorKind::UnclosedString, (1, 2));
    check_err("\"ab\\", ReadErrorKind::UnclosedString, (0, 1));
}

#[test]
fn characters() {
    check_ok(
        r#"[\a \é \( \" \\ \newline \space \tab \return \u0041]"#,
        r#"[\a \é \( \" \\ \newline \space \tab \return \A]"#,
    );
    assert_eq!(
        read_value(r"[\formfeed \backspace]").unwrap(),
        Value::Vector(aido::value::thin_vec![
            Value::Char('\u{c}'),
            Value::Char('\u{8}')
        ])
    );
    // A character ends where a token ends: at blanks, brackets, quotes or `;`.
    check_ok(r#"[\a"b" \c]"#, r#"[\a "b" \c]"#);
    check_err(
        r"\abc",
        ReadErrorKind::InvalidCharacter(r"abc".into()),
        (0, 4),
    );
    check_err(
        r"[\a\b]",
        ReadErrorKind::InvalidCharacter(r"a\b".into()),
        (1, 5),
    );
    check_err(
        r"\uD800",
        ReadErrorKind::InvalidCharacter(r"uD800".into()),
        (0, 6),
    );
    check_err(
        r"\o101",
        ReadErrorKind::InvalidCharacter(r"o101".into()),
        (0, 5),
    );
    check_err(r"[\ ]", ReadErrorKind::WhitespaceCharacter, (1, 3));
    check_err(r"\", ReadErrorKind::MissingCharacter, (0, 1));
}

#[test]
fn tags_and_dispatch() {
    check_ok(r#"#inst "2020-01-01""#, r#"#inst "2020-01-01""#);
    check_ok(
        r#"#uuid "f81d4fae-7dec-11d0-a765-00a0c91e6bf6""#,
        r#"#uuid "f81d4fae-7dec-11d0-a765-00a0c91e6bf6""#,
    );
    check_ok("#my/tag [1 #other {:a 1}]", "#my/tag [1 #other {:a 1}]");
    check_ok("#a #b 1", "#a #b 1");
    check_ok("#a ; comment\n #_ 1 2", "#a 2");
    check_err(
        "#:ns{:a 1}",
        ReadErrorKind::Unsupported(Unsupported::NamespacedMap),
        (0, 4),
    );
    check_err("#1 2", ReadErrorKind::InvalidTag("1".into()), (0, 2));
    check_err("#-a 2", ReadErrorKind::InvalidTag("-a".into()), (0, 3));
    check_err(
        "#a/b/c 2",
        ReadErrorKind::InvalidTag("a/b/c".into()),
        (0, 6),
    );
    check_err("#foo", ReadErrorKind::TagWithoutForm("#foo".into()), (0, 4));
    check_err(
        "[#foo ]",
        ReadErrorKind::TagWithoutForm("#foo".into()),
        (1, 5),
    );
    check_err(
        "#(+ 1)",
        ReadErrorKind::InvalidDispatch("#(".into()),
        (0, 2),
    );
    check_err(
        r#"#"re""#,
        ReadErrorKind::InvalidDispatch("#\"".into()),
        (0, 2),
    );
    check_err("# a", ReadErrorKind::InvalidDispatch("#".into()), (0, 1));
    check_err("#", ReadErrorKind::InvalidDispatch("#".into()), (0, 1));
}

#[test]
fn comments_commas_and_discards() {
    check_ok("; a tree\n[1, 2 ,3] ; done", "[1 2 3]");
    check_ok("[1 ;c\r2]", "[1 2]");
    check_ok("[1 #_ 2 3]", "[1 3]");
    check_ok("[1 #_ #_ 2 3 4]", "[1 4]");
    check_ok("[1 #_ [nested #_ x] 2]", "[1 2]");
    check_ok("{:a #_ :b 1}", "{:a 1}");
    check_ok("#_ 1 2", "2");
    check_ok("[:a] #_ [:b]", "[:a]");
    check_ok("[\u{a0}1\u{2003}2\u{3000}]", "[1 2]");
    check_err("#_", ReadErrorKind::DiscardWithoutForm, (0, 2));
    check_err("[1 #_]", ReadErrorKind::DiscardWithoutForm, (3, 5));
    check_err("[1 #_ #_ 2]", ReadErrorKind::DiscardWithoutForm, (6, 8));
    check_err(
        "[1] #_ [2",
        ReadErrorKind::Unclosed(Delimiter::Vector),
        (7, 8),
    );
    // A long run of discards is counted, not recursed into.
    let discards = format!("[{} 1]", "#_ ".repeat(100_000));
    check_err(
        &discards,
        ReadErrorKind::DiscardWithoutForm,
        (299_998, 300_000),
    );
}

#[test]
fn a_text_holds_exactly_one_form() {
    let empty = |text: &str| check_err(text, ReadErrorKind::Empty, (0, text.len()));
    empty("");
    empty("  \n\t, ");
    empty("  ; only a comment\n");
    empty("#_ [:a]");
    empty("#_ #_ 1 2 ; and a comment");
    check_err("[:a] [:b]", ReadErrorKind::TrailingForm, (5, 9));
    check_err("1 2", ReadErrorKind::TrailingForm, (2, 3));
    check_err("[:a] #_ 1 :b", ReadErrorKind::TrailingForm, (10, 12));
    // A malformed second form is still a second form.
    check_err("[:a] [:b", ReadErrorKind::TrailingForm, (5, 6));
    check_err("[:a] é", ReadErrorKind::TrailingForm, (5, 7));
    // A character that starts no form is junk after the form.
    check_err("[:a]\0", ReadErrorKind::UnexpectedAfterForm('\0'), (4, 5));
    check_err("\u{feff}[:a]", ReadErrorKind::ByteOrderMark, (0, 3));
}

#[test]
fn nesting_is_limited_not_a_crash() {
    let nested = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
    // The root is at depth 0, so MAX_DEPTH + 1 vectors fit.
    let (v, spans) = read_text(&nested(MAX_DEPTH + 1)).unwrap();
    assert_eq!(v.to_string(), nested(MAX_DEPTH + 1));
    assert_eq!(spans.span(), Span::new(0, 2 * (MAX_DEPTH + 1)));
    check_err(
        &nested(MAX_DEPTH + 2),
        ReadErrorKind::TooDeep,
        (MAX_DEPTH + 1, MAX_DEPTH + 2),
    );
    check_err(&nested(100_000), ReadErrorKind::TooDeep, (257, 258));
    // A leaf counts as a level too, and so does a tag.
    let leaf = format!(
        "{}1{}",
        "[".repeat(MAX_DEPTH + 1),
        "]".repeat(MAX_DEPTH + 1)
    );
    check_err(
        &leaf,
        ReadErrorKind::TooDeep,
        (MAX_DEPTH + 1, MAX_DEPTH + 2),
    );
    check_err(
        &format!("{}1", "#t ".repeat(100_000)),
        ReadErrorKind::TooDeep,
        (3 * (MAX_DEPTH + 1), 3 * (MAX_DEPTH + 1) + 1),
    );
    // Unclosed deep nesting is reported at its innermost opening bracket.
    check_err(
        &"[".repeat(MAX_DEPTH),
        ReadErrorKind::Unclosed(Delimiter::Vector),
        (MAX_DEPTH - 1, MAX_DEPTH),
    );
}

#[test]
fn the_deepest_text_reads_on_a_small_stack() {
    // Five levels a repetition: a vector, a map, a set, a list and a tag.
    let text = format!("{}1{}", "[{:a #{(#t ".repeat(60), ")}}]".repeat(60));
    let handle = std::thread::Builder::new()
        .stack_size(512 * 1024)
        .spawn(move || read_text(&text).map(|_| ()).map_err(|e| e.kind))
        .unwrap();
    assert_eq!(handle.join().unwrap(), Err(ReadErrorKind::TooDeep));
}

/// The spans of `value`, the form at `path` in `spans` as read from `text`:
/// each lies inside its parent, after its previous sibling, and reading its
/// text alone gives an equal value.
fn check_spans(text: &str, value: &Value, spans: &Spans, path: &mut Vec<usize>) {
    let Span { start, end } = spans.span_at(path).unwrap();
    let own = text
        .get(start as usize..end as usize)
        .unwrap_or_else(|| panic!("span {start}..{end} is not in {text:?}"));
    assert_eq!(
        read_value(own).as_ref(),
        Ok(value),
        "the text {own:?} of a span"
    );
    let children: Vec<&Value> = match value {
        Value::Vector(items) | Value::List(items) => items.iter().collect(),
        Value::Set(items) => items.iter().collect(),
        Value::Map(map) => map.iter().flat_map(|(k, v)| [k, v]).collect(),
        Value::Tagged(_, inner) => vec![&**inner],
        _ => Vec::new(),
    };
    let n_children = children.len();
    assert_eq!(
        Some(n_children),
        spans.n_children_at(path),
        "children of {own:?}"
    );
    let mut after = start;
    for (i, child) in children.into_iter().enumerate() {
        path.push(i);
        let child_span = spans.span_at(path).unwrap();
        assert!(
            after <= child_span.start && child_span.end <= end,
            "{child_span:?} out of place in {own:?}"
        );
        after = child_span.end;
        check_spans(text, child, spans, path);
        path.pop();
    }
    // And no element after the last.
    path.push(n_children);
    assert_eq!(spans.span_at(path), None, "one element too many in {own:?}");
    path.pop();
}

#[test]
fn spans_cover_each_form_in_bytes() {
    let text = "[:a {:k 1}]";
    let (v, spans) = read_text(text).unwrap();
    assert_eq!(spans.span(), Span::new(0, 11));
    assert_eq!(spans.span_at(&[]), Some(Span::new(0, 11)));
    assert_eq!(spans.span_at(&[0]), Some(Span::new(1, 3)));
    assert_eq!(spans.span_at(&[1]), Some(Span::new(4, 10)));
    assert_eq!(spans.span_at(&[1, 0]), Some(Span::new(5, 7)));
    assert_eq!(spans.span_at(&[1, 1]), Some(Span::new(8, 9)));
    assert_eq!(spans.span_at(&[1, 2]), None);
    assert_eq!(spans.span_at(&[0, 0]), None);
    assert_eq!(spans.n_children_at(&[0]), Some(0));
    assert_eq!(spans.n_children_at(&[2]), None);
    check_spans(text, &v, &spans, &mut Vec::new());

    // Offsets count bytes: `é` is two, `😀` four.
    let text = "; é\n[\"é😀\" #{:ü} #_ skipped (x) #t \\é]";
    let (v, spans) = read_text(text).unwrap();
    let at = |needle: &str| text.find(needle).unwrap();
    assert_eq!(spans.span(), Span::new(at("["), text.len()));
    assert_eq!(spans.n_children_at(&[]), Some(4));
    assert_eq!(spans.span_at(&[0]), Some(Span::new(6, 6 + 8)));
    assert_eq!(spans.span_at(&[1]), Some(Span::new(at("#{"), at("#{") + 6)));
    assert_eq!(
        spans.span_at(&[1, 0]),
        Some(Span::new(at(":ü"), at(":ü") + 3))
    );
    assert_eq!(
        spans.span_at(&[2]),
        Some(Span::new(at("(x)"), at("(x)") + 3))
    );
    assert_eq!(
        spans.span_at(&[3]),
        Some(Span::new(at("#t"), text.len() - 1))
    );
    assert_eq!(
        spans.span_at(&[3, 0]),
        Some(Span::new(at("\\é"), text.len() - 1))
    );
    check_spans(text, &v, &spans, &mut Vec::new());
}

/// Texts that read; each is printed and read back in the round-trip test.
const VALID: &[&str] = &[
    "nil",
    "true",
    "false",
    "0",
    "-9223372036854775808",
    "9223372036854775807",
    "1.5",
    "-0.0",
    "1e300",
    "1.5e-7",
    "123456789.125",
    "1e16",
    "##Inf",
    "##-Inf",
    "##NaN",
    r#""""#,
    r#""a \"quoted\" \\ string\n\twith\r escapes""#,
    r#""\u0000\u0007\b\f""#,
    r#""é 😀 \uD83D\uDE00""#,
    r"\a",
    r"\é",
    r"\newline",
    r"\space",
    r"\tab",
    r"\return",
    r"\formfeed",
    r"\backspace",
    r"\u0000",
    r#"\""#,
    r"\\",
    r"\(",
    ":kw",
    ":ns/kw",
    ":é",
    "sym",
    "ns/sym",
    "/",
    "+",
    "[]",
    "()",
    "{}",
    "#{}",
    "[1 [2 [3 []]] (4 (5)) {:a {:b {}}}]",
    "{:a 1, :b [2 3], [1 2] {:c #{4}}, nil 1, \"s\" 2, 1.5 3, \\c 4, sym 5}",
    "#{1 [1 2] {:a 1} #{} nil \"x\" :k}",
    r#"#inst "2020-01-01T00:00:00Z""#,
    "#my/tag #other [1 #t {:a #u 1}]",
    "[:selector [:sequence [:greater-than? {:key :hunger :val 8}] [:define! {:key :action :val :eat}]] [:inc! {:key :hunger}]]",
];

#[test]
fn every_value_prints_as_edn_that_reads_back_equal() {
    let mut values: Vec<Value> = VALID.iter().map(|t| read_value(t).unwrap()).collect();
    values.extend([
        Value::Float(f64::MIN_POSITIVE),
        Value::Float(f64::MAX),
        Value::Float(-1e-300),
        Value::Float(0.1 + 0.2),
        Value::Char('\u{7f}'),
        Value::Char('\u{1b}'),
        Value::string("\u{1}\u{1f}\u{7f}"),
        Value::Vector(aido::value::thin_vec![Value::Int(1), Value::Float(1.0)]),
    ]);
    for text in corpus().iter().filter(|t| read_value(t).is_ok()) {
        values.push(read_value(text).unwrap());
    }
    assert!(values.len() > 150, "only {} values", values.len());
    for value in values {
        let printed = value.to_string();
        let back = read_value(&printed)
            .unwrap_or_else(|e| panic!("{printed:?} does not read back: {e} at {:?}", e.span));
        assert_eq!(back, value, "printed as {printed}");
        assert_eq!(back.to_string(), printed);
    }
}

#[test]
fn every_kind_of_value() {
    let v = read_value(r#"[nil true 1 -2.5 "a\nb" \x :k :ns/k sym (1) #{1} {:a 1} #inst "2020"]"#)
        .unwrap();
    let Value::Vector(items) = &v else {
        panic!("{v}")
    };
    let kinds: Vec<&str> = items.iter().map(Value::type_name).collect();
    assert_eq!(
        kinds,
        [
            "nil",
            "boolean",
            "integer",
            "float",
            "string",
            "character",
            "keyword",
            "keyword",
            "symbol",
            "list",
            "set",
            "map",
            "tagged value"
        ]
    );
    assert_eq!(
        v.to_string(),
        r#"[nil true 1 -2.5 "a\nb" \x :k :ns/k sym (1) #{1} {:a 1} #inst "2020"]"#
    );
    // Maps keep their keys in the order written.
    assert_eq!(
        read_value("{:z 1 :a 2 :m 3}").unwrap().to_string(),
        "{:z 1, :a 2, :m 3}"
    );
}

// ---------------------------------------------------------------------------
// Differential test against clojure-reader.

mod oracle {
    use aido::{
        Value,
        value::{Map, Set, Symbol},
    };
    use clojure_reader::edn::{self, Edn};

    /// What clojure-reader made of a text.
    #[derive(Debug)]
    pub enum Outcome {
        Read(Value),
        /// It read a ratio, which `Value` cannot hold.
        Ratio,
        /// It read a map or set with two keys equal by Clojure's `=` but not
        /// by its own ordering (`[1]` and `(1)`).
        EqualKeys,
        Rejected(String),
    }

    pub fn read(text: &str) -> Outcome {
        let (edn, rest) = match edn::read(text) {
            Ok(read) => read,
            Err(e) => return Outcome::Rejected(format!("{:?}", e.code)),
        };
        // Exactly one form: what is left must hold none (an error without a position).
        match edn::read(rest) {
            Err(e) if e.ptr.is_none() => {}
            Ok(_) => return Outcome::Rejected("a second form".into()),
            Err(e) => return Outcome::Rejected(format!("after the form: {:?}", e.code)),
        }
        match convert(&edn) {
            Ok(v) => Outcome::Read(v),
            Err(outcome) => outcome,
        }
    }

    fn convert(edn: &Edn<'_>) -> Result<Value, Outcome> {
        let all = |items: &mut dyn Iterator<Item = &Edn<'_>>| -> Result<aido::value::ThinVec<Value>, Outcome> {
            items.map(convert).collect()
        };
        Ok(match edn {
            Edn::Nil => Value::Nil,
            Edn::Bool(b) => Value::Bool(*b),
            Edn::Int(i) => Value::Int(*i),
            Edn::Double(x) => Value::Float(x.into_inner()),
            Edn::Char(c) => Value::Char(*c),
            Edn::Str(s) => Value::string(s),
            Edn::Key(k) => Value::keyword(k),
            Edn::Symbol(s) => Value::symbol(s),
            Edn::Vector(items) => Value::Vector(all(&mut items.iter())?),
            Edn::List(items) => Value::List(all(&mut items.iter())?),
            Edn::Set(items) => {
                let mut set = Set::default();
                for item in all(&mut items.iter())? {
                    if !set.insert(item) {
                        return Err(Outcome::EqualKeys);
                    }
                }
                Value::Set(Box::new(set))
            }
            Edn::Map(entries) => {
                let mut map = Map::default();
                for (k, v) in entries {
                    if map.insert(convert(k)?, convert(v)?).is_some() {
                        return Err(Outcome::EqualKeys);
                    }
                }
                Value::Map(Box::new(map))
            }
            Edn::Tagged(tag, inner) => Value::Tagged(Symbol::new(tag), Box::new(convert(inner)?)),
            Edn::Rational(_) => return Err(Outcome::Ratio),
            other => return Err(Outcome::Rejected(format!("unexpected {other:?}"))),
        })
    }
}

use oracle::Outcome;

/// A place where this reader and clojure-reader disagree on purpose.
struct Difference {
    name: &'static str,
    why: &'static str,
    applies: fn(text: &str, ours: &Result<Value, ReadError>, theirs: &Outcome) -> bool,
}

fn kind(ours: &Result<Value, ReadError>) -> Option<&ReadErrorKind> {
    ours.as_ref().err().map(|e| &e.kind)
}

fn theirs_read(theirs: &Outcome) -> bool {
    !matches!(theirs, Outcome::Rejected(_))
}

fn rejected_as(theirs: &Outcome, code: &str) -> bool {
    matches!(theirs, Outcome::Rejected(c) if c == code)
}

const DIFFERENCES: &[Difference] = &[
    Difference {
        name: "clojure equality",
        why: "keys and set elements are compared with Clojure's `=` (Value's Eq), so `[1]` and `(1)` \
              are the same key; clojure-reader orders them apart",
        applies: |_, ours, theirs| {
            matches!(
                ours,
                Err(ReadError {
                    kind: ReadErrorKind::DuplicateKey(_) | ReadErrorKind::DuplicateElement(_),
                    ..
                })
            ) && matches!(theirs, Outcome::EqualKeys)
        },
    },
    Difference {
        name: "duplicates in discarded forms",
        why: "a discarded form is read as strictly as any other, as Clojure's reader does; \
              clojure-reader skips the duplicate check under `#_`",
        applies: |text, ours, theirs| {
            text.contains("#_")
                && theirs_read(theirs)
                && matches!(
                    ours,
                    Err(ReadError {
                        kind: ReadErrorKind::DuplicateKey(_) | ReadErrorKind::DuplicateElement(_),
                        ..
                    })
                )
        },
    },
    Difference {
        name: "ratios",
        why: "`Value` has no ratios, so `1/2` is unsupported rather than approximated",
        applies: |_, ours, theirs| {
            theirs_read(theirs)
                && kind(ours) == Some(&ReadErrorKind::Unsupported(Unsupported::Ratio))
        },
    },
    Difference {
        name: "non-decimal integers",
        why: "EDN integers are decimal without leading zeros; clojure-reader reads `0x1F`, `2r101` \
              and `012` (which Clojure would read as octal)",
        applies: |_, ours, theirs| {
            theirs_read(theirs)
                && matches!(
                    kind(ours),
                    Some(ReadErrorKind::InvalidNumber {
                        problem: NumberProblem::LeadingZero
                            | NumberProblem::Hexadecimal
                            | NumberProblem::Radix,
                        ..
                    })
                )
        },
    },
    Difference {
        name: "strict symbols and keywords",
        why: "symbols and keywords follow the EDN rules (constituent characters, one `/`, no `::`); \
              clojure-reader takes any token that is not a number as a symbol or keyword",
        applies: |_, ours, theirs| {
            theirs_read(theirs)
                && matches!(
                    kind(ours),
                    Some(
                        ReadErrorKind::InvalidSymbol { .. } | ReadErrorKind::InvalidKeyword { .. }
                    )
                )
        },
    },
    Difference {
        name: "string escapes",
        why: "`\\b`, `\\f` and `\\uXXXX` are valid escapes in EDN and Clojure; clojure-reader \
              knows only `\\t \\r \\n \\\\ \\\"`",
        applies: |_, ours, theirs| ours.is_ok() && rejected_as(theirs, "InvalidEscape"),
    },
    Difference {
        name: "character literals",
        why: "`\\formfeed`, `\\backspace` and `\\uXXXX` are valid characters, and a character \
              ends at a string quote as in Clojure (`\\a\"b\"`); clojure-reader rejects these",
        applies: |_, ours, theirs| ours.is_ok() && rejected_as(theirs, "InvalidChar"),
    },
    Difference {
        name: "backslash and whitespace",
        why: "EDN says a backslash cannot be followed by whitespace; clojure-reader reads `\\ ` \
              as a space",
        applies: |_, ours, theirs| {
            theirs_read(theirs) && kind(ours) == Some(&ReadErrorKind::WhitespaceCharacter)
        },
    },
    Difference {
        name: "symbolic values",
        why: "`##Inf`, `##-Inf` and `##NaN` are floats; clojure-reader has no symbolic values",
        applies: |text, ours, theirs| text.contains("##") && ours.is_ok() && !theirs_read(theirs),
    },
    Difference {
        name: "namespaced maps",
        why: "`#:ns{..}` is unsupported here; clojure-reader reads it as a tagged map",
        applies: |_, ours, theirs| {
            theirs_read(theirs)
                && kind(ours) == Some(&ReadErrorKind::Unsupported(Unsupported::NamespacedMap))
        },
    },
    Difference {
        name: "nesting limit",
        why: "forms nest at most MAX_DEPTH deep, so that no input can overflow the stack; \
              clojure-reader parses without recursion and has no limit",
        applies: |_, ours, theirs| {
            theirs_read(theirs)
                && matches!(
                    ours,
                    Err(ReadError {
                        kind: ReadErrorKind::TooDeep,
                        ..
                    })
                )
        },
    },
];

/// Hand-written texts, valid and not, covering each difference at least once.
const HAND_WRITTEN: &[&str] = &[
    "{[1] 1 (1) 2}",
    "#{[1] (1)}",
    "[#_ {:a 1 :a 2} 3]",
    "#_ #{1 1} 2",
    "1/2",
    "[-3/4]",
    "#_ 1/2 3",
    "0x1F",
    "-0X10",
    "2r101",
    "36rZZ",
    "012",
    "01.5",
    "a@b",
    "'a",
    "a'",
    ".5",
    "a/b/c",
    "a/",
    "/a",
    "a\\b",
    "::a",
    ":a/",
    ":/a",
    ":a@b",
    "a\u{1}",
    "\"\\b\\f\"",
    "\"\\u00e9\"",
    "\"\\uD83D\\uDE00\"",
    "\\formfeed",
    "\\backspace",
    "\\u0041",
    "[\\a\"b\"]",
    "\\ ",
    "[\\ ]",
    "##Inf",
    "[##-Inf ##NaN]",
    "##Foo",
    "##Inf 1",
    "#:ns{:a 1}",
    "#:ns [1]",
    "#:ns{:a 1 :a 2}",
    // Valid and invalid texts both readers agree on.
    "",
    "   ",
    "; comment only",
    "#_ 1",
    "#_",
    "#_ #_ 1 2",
    "[1 #_ #_ 2 3 4]",
    "{:a #_ :b 1}",
    "[1 ;c\r2]",
    "1 2",
    "[1] [2",
    "[1]]",
    ")",
    "[1 2",
    "[1 2}",
    "(1 2]",
    "{:k 1 :j}",
    "{:k 1 :k 2}",
    "#{1 1}",
    "99999999999999999999",
    "-9223372036854775808",
    "-9223372036854775809",
    "1N",
    "1.5M",
    "1.5.5",
    "1e",
    "1.",
    "1.e5",
    "-2e10",
    "+5",
    "-0",
    "+",
    "-",
    "-a",
    "+.5",
    "-1a",
    ":",
    ":a:b",
    ":1",
    "nil",
    "true",
    "false",
    "nil/x",
    "\"\\x\"",
    "\"abc",
    "\"ab\\",
    "\"two\nlines\"",
    "\\a",
    "\\newline",
    "\\space",
    "\\tab",
    "\\return",
    "\\abc",
    "\\",
    "\\(",
    "\\\\",
    "[\\a\\b]",
    "\\uD800",
    "#inst \"2020\"",
    "#uuid \"f81d4fae-7dec-11d0-a765-00a0c91e6bf6\"",
    "#my/tag [1]",
    "#a #b 1",
    "#foo",
    "[#foo]",
    "#1 2",
    "#(+ 1)",
    "#\"re\"",
    "# a",
    "#",
    "#a/b/c 1",
    "[\u{a0}1\u{2003}2]",
    "é",
    "[:é :ü/ö \"é\"]",
    "{:a 1, :b 2}",
    "(a b c)",
    "#{}",
    "{}",
    "#{1 [1 2] {:a 1}}",
];

/// A small deterministic random generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

/// Tokens, good and bad, for random soups.
#[rustfmt::skip]
const TOKENS: &[&str] = &[
    "1", "-2", "+3", "0", "012", "1.5", "-2e10", "1.", "1.5.5", "1e", "9223372036854775807",
    "99999999999999999999", "1N", "1.5M", "1/2", "0x1F", ":a", ":b/c", ":", "::a", ":a/", "sym",
    "ns/sym", "/", "a/b/c", "a@b", "'q", ".5", "-", "+", "nil", "true", "false", "\"s\"",
    "\"a\\nb\"", "\"\\b\"", "\"\\u00e9\"", "\"\\x\"", "\"open", "\\c", "\\newline", "\\space",
    "\\formfeed", "\\u0041", "\\abc", "\\", "[", "]", "(", ")", "{", "}", "#{", "#_", "#inst",
    "#my/tag", "#:ns", "##Inf", "##NaN", "##Bad", "#", "#(", "; comment\n", ",", "é", "\"é\"",
    "[]", "{}", "{:a 1}", "#{1}", "(1)",
];

fn soup(rng: &mut Rng) -> String {
    let n = 1 + rng.below(8);
    let mut text = String::new();
    for _ in 0..n {
        text.push_str(rng.pick(TOKENS));
        text.push_str(rng.pick(&[" ", " ", "\n", ",", ""]));
    }
    text
}

/// A valid form both readers should read alike, with blanks, commas,
/// comments and discards between the parts.
fn valid_form(rng: &mut Rng, depth: usize) -> String {
    let blank = |rng: &mut Rng| {
        rng.pick(&[
            " ",
            " ",
            " ",
            "\n  ",
            ", ",
            " ; note\n ",
            " #_ :gone ",
            " #_ [1 2] ",
        ])
        .to_owned()
    };
    let leaf = |rng: &mut Rng| -> String {
        match rng.below(9) {
            0 => format!("{}", rng.next() as i64 >> rng.below(64)),
            1 => rng
                .pick(&["1.5", "-0.25", "1e10", "2.5E-3", "+7.0", "1.", "0.0"])
                .to_owned(),
            2 => rng
                .pick(&[r#""""#, r#""text""#, r#""a\nb\t\"c\"\\""#, r#""é 😀""#])
                .to_owned(),
            3 => rng
                .pick(&[":a", ":b", ":ns/key", ":é", ":a-b?", ":x1", ":k.j/l!"])
                .to_owned(),
            4 => rng
                .pick(&["sym", "ns/sym", "+", "-", "a.b", "<=", "/", "->x", "é"])
                .to_owned(),
            5 => rng
                .pick(&[r"\a", r"\newline", r"\space", r"\tab", r"\é", r"\("])
                .to_owned(),
            6 => rng.pick(&["nil", "true", "false"]).to_owned(),
            7 => rng.pick(&[r#"#inst "2020""#, "#t 1"]).to_owned(),
            _ => "-9223372036854775808".to_owned(),
        }
    };
    if depth >= 4 || rng.below(3) == 0 {
        return leaf(rng);
    }
    let n = rng.below(5);
    match rng.below(5) {
        0 | 1 => {
            let (open, close) = if rng.below(2) == 0 {
                ("[", "]")
            } else {
                ("(", ")")
            };
            let items: Vec<String> = (0..n)
                .map(|_| format!("{}{}", blank(rng), valid_form(rng, depth + 1)))
                .collect();
            format!("{open}{}{}{close}", items.concat(), blank(rng))
        }
        2 => {
            let entries: Vec<String> = (0..n)
                .map(|i| {
                    format!(
                        "{}:k{i}{}{}",
                        blank(rng),
                        blank(rng),
                        valid_form(rng, depth + 1)
                    )
                })
                .collect();
            format!("{{{}}}", entries.concat())
        }
        3 => {
            let elements: Vec<String> = (0..n).map(|i| format!(" {i}")).collect();
            format!("#{{{}}}", elements.concat())
        }
        _ => format!("#my/tag{}{}", blank(rng), valid_form(rng, depth + 1)),
    }
}

/// Broken variants of a valid text: truncated, a delimiter swapped, a character dropped.
fn mutations(rng: &mut Rng, text: &str) -> Vec<String> {
    let boundaries: Vec<usize> = text.char_indices().map(|(i, _)| i).collect();
    let mut out = Vec::new();
    for _ in 0..2 {
        let cut = boundaries[rng.below(boundaries.len())];
        out.push(text[..cut].to_owned());
    }
    let delimiters: Vec<usize> = text
        .char_indices()
        .filter(|(_, c)| "[](){}".contains(*c))
        .map(|(i, _)| i)
        .collect();
    if !delimiters.is_empty() {
        let at = delimiters[rng.below(delimiters.len())];
        let swapped = rng.pick(&["[", "]", "(", ")", "{", "}"]);
        out.push(format!("{}{swapped}{}", &text[..at], &text[at + 1..]));
    }
    let drop_at = boundaries[rng.below(boundaries.len())];
    let dropped_len = text[drop_at..].chars().next().map_or(0, char::len_utf8);
    out.push(format!(
        "{}{}",
        &text[..drop_at],
        &text[drop_at + dropped_len..]
    ));
    out
}

fn corpus() -> Vec<String> {
    let mut rng = Rng(0x5eed_1234_abcd_0001);
    let mut texts: Vec<String> = HAND_WRITTEN.iter().map(|t| (*t).to_owned()).collect();
    texts.extend(VALID.iter().map(|t| (*t).to_owned()));
    texts.push(format!("{}{}", "[".repeat(300), "]".repeat(300)));
    for _ in 0..200 {
        texts.push(soup(&mut rng));
    }
    for _ in 0..120 {
        let text = valid_form(&mut rng, 0);
        texts.extend(mutations(&mut rng, &text));
        texts.push(text);
    }
    texts
}

#[test]
fn agrees_with_clojure_reader_but_for_documented_differences() {
    let mut n_both_read = 0;
    let mut n_both_rejected = 0;
    let mut seen = vec![0usize; DIFFERENCES.len()];
    let texts = corpus();
    assert!(texts.len() > 600, "{} texts", texts.len());
    for text in &texts {
        let ours = read_value(text);
        let theirs = oracle::read(text);
        match (&ours, &theirs) {
            (Ok(a), Outcome::Read(b)) => {
                assert_eq!(a, b, "both read {text:?}, differently");
                n_both_read += 1;
            }
            (Err(_), Outcome::Rejected(_)) => n_both_rejected += 1,
            _ => {
                let Some(i) = DIFFERENCES
                    .iter()
                    .position(|d| (d.applies)(text, &ours, &theirs))
                else {
                    panic!(
                        "undocumented difference on {text:?}: ours {ours:?}, clojure-reader {theirs:?}"
                    )
                };
                seen[i] += 1;
            }
        }
    }
    eprintln!(
        "{} texts: {n_both_read} read by both, {n_both_rejected} rejected by both",
        texts.len()
    );
    for (difference, n) in DIFFERENCES.iter().zip(&seen) {
        eprintln!("  {n:>3} × {}", difference.name);
        assert!(
            *n > 0,
            "the difference {:?} ({}) never showed: remove it?",
            difference.name,
            difference.why
        );
    }
    assert!(n_both_read > 200, "only {n_both_read} texts read by both");
    assert!(
        n_both_rejected > 200,
        "only {n_both_rejected} texts rejected by both"
    );
}

#[test]
fn every_accepted_corpus_text_has_consistent_spans() {
    for text in corpus() {
        if let Ok((value, spans)) = read_text(&text) {
            check_spans(&text, &value, &spans, &mut Vec::new());
        }
    }
}
