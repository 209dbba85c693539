//! Read errors as data: each file of `tests/data/read-err/` is one
//! malformed text, byte for byte (no comment, no final line break, so that
//! the text is exactly the case). Its snapshot holds the error's kind, its
//! line, column and byte span, its message, and the diagnostic that
//! `compile_str` renders for the same text: a change of any of them
//! changes the snapshot.
#![allow(clippy::panic, clippy::expect_used, clippy::unwrap_used)]

use aido::{Registry, compile_str, read::read_text, source::Source};

#[test]
fn read_errors() {
    insta::with_settings!({snapshot_path => "../../snapshots", prepend_module_to_snapshot => true}, {
        insta::glob!("../data/read-err", "*.edn", |path| {
            let text = std::fs::read_to_string(path).unwrap();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            let e = match read_text(&text) {
                Ok((v, _)) => panic!("{name}: expected an error, read {v}"),
                Err(e) => e,
            };
            let at = Source::new(name.as_str(), text.as_str()).line_col(e.span.start);
            let rendered = match compile_str(&name, &text, &Registry::new()) {
                Ok(_) => panic!("{name}: compiled"),
                Err(d) => d.render(),
            };
            insta::assert_snapshot!(format!(
                "text: {text:?}\nkind: {:?}\nat: line {}, column {} (bytes {}..{})\nmessage: {e}\n\n{rendered}",
                e.kind, at.line, at.column, e.span.start, e.span.end
            ));
        });
    });
}
