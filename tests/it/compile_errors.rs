//! Compile errors: every problem of a file at once, each with its code,
//! message, line and column; rendered diagnostics are snapshot-tested.
#![allow(clippy::panic, clippy::expect_used, clippy::unwrap_used)]

use aido::{Registry, compile, compile_str, diag::Code, read_value};

/// Compiles `src` and asserts the diagnostics: (code, line, column, part of the message).
fn check(src: &str, expected: &[(Code, usize, usize, &str)]) {
    let diags = match compile_str("t.edn", src, &Registry::new()) {
        Ok(_) => panic!("expected errors for {src}"),
        Err(d) => d,
    };
    let source = diags.source.clone().expect("read from text");
    let got: Vec<(Code, usize, usize, String)> = diags
        .items
        .iter()
        .map(|d| {
            let at = source.line_col(d.span.expect("every diagnostic has a span").start);
            (d.code, at.line, at.column, d.message.clone())
        })
        .collect();
    assert_eq!(got.len(), expected.len(), "diagnostics: {got:#?}");
    for (g, e) in got.iter().zip(expected) {
        assert_eq!((g.0, g.1, g.2), (e.0, e.1, e.2), "for {:?}", g.3);
        assert!(
            g.3.contains(e.3),
            "message {:?} should contain {:?}",
            g.3,
            e.3
        );
    }
}

#[test]
fn a_node_must_be_a_vector_headed_by_a_keyword() {
    check(
        "[:sequence 42]",
        &[(Code::NotANode, 1, 12, "found integer `42`")],
    );
    check(
        "[:sequence (:success)]",
        &[(Code::NotANode, 1, 12, "not a list")],
    );
    check(
        "[[:success]]",
        &[(Code::NotANode, 1, 2, "starts with its type keyword")],
    );
    check("[:sequence []]", &[(Code::NotANode, 1, 12, "empty vector")]);
}

#[test]
fn unknown_node_types_suggest_the_nearest_name() {
    let diags = compile_str("t.edn", "[:selecter [:success]]", &Registry::new()).unwrap_err();
    assert_eq!(diags.items[0].code, Code::UnknownNodeType);
    assert_eq!(
        diags.items[0].help.as_deref(),
        Some("did you mean `:selector`?")
    );
    check(
        "[:sequence\n  [:succes]]",
        &[(Code::UnknownNodeType, 2, 4, "unknown node type `:succes`")],
    );
}

#[test]
fn required_options_as_in_aido() {
    check(
        "[:loop [:success]]",
        &[(
            Code::MissingOption,
            1,
            2,
            "`:loop` needs the option `:count`",
        )],
    );
    check(
        "[:loop-until-success [:success]]",
        &[(Code::MissingOption, 1, 2, "needs the option `:count`")],
    );
    check(
        "[:parallel [:success]]",
        &[(
            Code::MissingOption,
            1,
            2,
            "`:parallel` needs `:mode` and `:how-many`, or `:policy`",
        )],
    );
    check(
        "[:parallel {:mode :success} [:success]]",
        &[(
            Code::MissingOption,
            1,
            2,
            "needs both: `:how-many` is missing",
        )],
    );
    check(
        "[:parallel {:policy :sequence :how-many 1} [:success]]",
        &[(Code::MissingOption, 1, 2, "takes one way of deciding")],
    );
    check(
        "[:randomly [:success]]",
        &[(Code::MissingOption, 1, 2, "needs the option `:p`")],
    );
    check(
        "[:selector-p [:success]]",
        &[(Code::MissingOption, 1, 2, "needs the option `:p`")],
    );
}

#[test]
fn unknown_option_keys_are_errors_with_a_suggestion() {
    let diags = compile_str(
        "t.edn",
        "[:loop {:cout 3 :count 1} [:success]]",
        &Registry::new(),
    )
    .unwrap_err();
    assert_eq!(diags.items.len(), 1);
    assert_eq!(diags.items[0].code, Code::UnknownOption);
    assert_eq!(
        diags.items[0].help.as_deref(),
        Some("did you mean `:count`?")
    );
    check(
        "[:success {:cnt 1}]",
        &[(Code::UnknownOption, 1, 12, "has no option `:cnt`")],
    );
}

#[test]
fn constant_options_are_checked_for_type_and_range() {
    check(
        "[:loop {:count -1} [:success]]",
        &[(
            Code::BadOptionValue,
            1,
            16,
            "expected a non-negative integer, found integer `-1`",
        )],
    );
    check(
        "[:loop {:count \"3\"} [:success]]",
        &[(Code::BadOptionValue, 1, 16, "found string `\"3\"`")],
    );
    check(
        "[:randomly {:p 1.5} [:success]]",
        &[(Code::BadOptionValue, 1, 16, "expected a number from 0 to 1")],
    );
    check(
        "[:weighted-choice {:weights [1 2]} [:success] [:failure] [:success]]",
        &[(
            Code::BadOptionValue,
            1,
            29,
            "has 2 weights but the node has 3 children",
        )],
    );
    check(
        "[:weighted-choice {:weights [1 -2]} [:success] [:failure]]",
        &[(Code::BadOptionValue, 1, 29, "non-negative numbers")],
    );
    check(
        "[:parallel {:mode :success :how-many 3} [:success] [:success]]",
        &[(
            Code::BadOptionValue,
            1,
            38,
            "`:how-many` is 3 but the node has only 2 children",
        )],
    );
    check(
        "[:test? {:key :a :oper =< :val 1}]",
        &[(Code::BadOptionValue, 1, 24, "one of the symbols")],
    );
}

#[test]
fn child_counts_are_checked_against_the_arity() {
    check(
        "[:invert]",
        &[(Code::Arity, 1, 2, "takes exactly 1 child, found 0")],
    );
    check(
        "[:success [:failure]]",
        &[(Code::Arity, 1, 2, "takes no children, found 1")],
    );
    check(
        "[:randomly {:p 0.5} [:success] [:failure] [:success]]",
        &[(Code::Arity, 1, 2, "takes 1 or 2 children, found 3")],
    );
    check(
        "[:selector]",
        &[(Code::Arity, 1, 2, "takes at least 1 child, found 0")],
    );
}

#[test]
fn dynamic_options_and_ids_are_checked() {
    check(
        "[:loop {:count [:aido/fn rnad 5]} [:success]]",
        &[(Code::UnknownFunction, 1, 26, "unknown function `rnad`")],
    );
    check(
        "[:loop {:count [:aido/db]} [:success]]",
        &[(Code::BadDynamic, 1, 16, "needs a key path")],
    );
    check(
        "[:loop {:count [:aido/fn rand-int]} [:success]]",
        &[(Code::BadDynamic, 1, 16, "takes exactly 1 argument, given 0")],
    );
    check(
        "[:selector [:success {:id :a}]\n [:failure {:id :a}]]",
        &[(
            Code::DuplicateId,
            2,
            17,
            "duplicate node id :a (first used at 1:27)",
        )],
    );
    check(
        "[:present? {:key [:aido/db :k]}]",
        &[(Code::BadOptionValue, 1, 18, "must be a constant")],
    );
}

#[test]
fn reading_errors_are_diagnostics_too() {
    check(
        "[:selector\n [:sequence {:k 1 :j}]",
        &[(Code::Read, 2, 21, "a map needs a value for every key")],
    );
    check(
        "[:success]\n[:failure]",
        &[(Code::Read, 2, 1, "more than one form")],
    );
    check(
        "[:define! {:key :a :key :b}]",
        &[(Code::Read, 1, 20, "duplicate map key :key")],
    );
}

#[test]
fn trees_without_text_report_paths_instead_of_spans() {
    let tree = read_value("[:sequence [:success] [:selector [:loop [:success]]]]").unwrap();
    let diags = compile(&tree, &Registry::new()).unwrap_err();
    assert_eq!(diags.items.len(), 1);
    assert_eq!(diags.items[0].span, None);
    assert_eq!(diags.items[0].path, vec![1, 0]);
    assert!(diags.render().contains("= node: root > 1 > 0"));
}

#[test]
fn rendered_diagnostics() {
    insta::with_settings!({snapshot_path => "../../snapshots", prepend_module_to_snapshot => true}, {
        insta::glob!("../data/err", "*.edn", |path| {
            let text = std::fs::read_to_string(path).unwrap();
            let name = format!("tests/data/err/{}", path.file_name().unwrap().to_string_lossy());
            let diags = compile_str(&name, &text, &Registry::new()).expect_err("the file has mistakes");
            insta::assert_snapshot!(diags.render());
        });
    });
}
