//! The compile from text, which reads the nodes without building their
//! value (`read::NodeForms`), against the compile of the read value: the
//! same trees, the same errors, the same spans.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{FsLoader, compile_document_with, compile_source_with};
use crate::diag::Diagnostics;
use crate::read::{TreeForm, read, read_text, read_tree};
use crate::registry::Registry;
use crate::source::Source;

/// Every `.edn` file under `dir`, in order.
fn edn_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| Some(e.ok()?.path())).collect();
    paths.sort();
    for path in paths {
        if path.is_dir() {
            edn_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "edn") {
            out.push(path);
        }
    }
}

fn all_files() -> Vec<PathBuf> {
    let mut files = Vec::new();
    for dir in ["examples", "benches/data", "tests/data"] {
        edn_files(Path::new(dir), &mut files);
    }
    files
}

/// The compile of the whole read value, as before the reader's nodes.
fn compile_value(source: &Arc<Source>, loader: &FsLoader) -> Result<crate::Tree, Diagnostics> {
    match read(source.clone()) {
        Ok(doc) => compile_document_with(doc, &Registry::new(), loader),
        Err(e) => Err(Diagnostics::from_read_error(&e, source.clone())),
    }
}

/// What a tree is, to compare: its `Debug` but for the index by id, whose
/// hasher is seeded at random, which is compared by finding every id.
fn shape(tree: &crate::Tree) -> String {
    let found: Vec<Option<usize>> = tree
        .iter()
        .map(|n| {
            let id = tree.node_id(n)?;
            tree.find(id).map(|i| i.index())
        })
        .collect();
    format!(
        "{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{}\n{found:?}",
        tree.nodes,
        tree.child_ids,
        tree.source,
        tree.files,
        tree.warnings,
        tree.form(),
        tree.writes_running,
        tree.len(),
    )
}

/// Whether `text` goes the way of the reader's nodes (if it compiles):
/// a vector without `:aido/params` at its root.
fn nodes_way(text: &str) -> bool {
    matches!(read_tree(text), Ok((TreeForm::Nodes(forms), _))
        if !forms.root_has_option(crate::value::Keyword::new("aido/params")))
}

/// Both ways give the same tree (its `Debug`: nodes, kinds, ids, spans,
/// children, its data) or the same errors, on every tree of the
/// examples, the benches' data and the tests' data; the trees that
/// compile went the way of the reader's nodes, their data made from the
/// reader's table if their ticks may keep state, else not made.
#[test]
fn the_compile_from_text_equals_the_compile_of_the_read_value() {
    let files = all_files();
    assert!(files.len() > 100, "{} files", files.len());
    let (mut n_lazy, mut n_from_table, mut n_errors) = (0, 0, 0);
    for path in &files {
        let text = std::fs::read_to_string(path).unwrap();
        let name = path.to_string_lossy().into_owned();
        let source = Arc::new(Source::new(&name, text));
        let loader = FsLoader::for_file(&name);
        let from_text = compile_source_with(source.clone(), &Registry::new(), &loader);
        let from_value = compile_value(&source, &loader);
        // `compile_file` goes the way of the text.
        match (super::compile_file(path, &Registry::new()), &from_value) {
            (Ok(a), Ok(b)) => assert!(shape(&a) == shape(b), "{name}"),
            (Err(super::CompileFileError::Compile(a)), Err(b)) => {
                assert!(format!("{a:?}") == format!("{b:?}"), "{name}");
            }
            (a, _) => panic!("{name}: compile_file gave {:?}", a.is_ok()),
        }
        match (&from_text, &from_value) {
            (Ok(a), Ok(b)) => {
                if a.files.is_none() && nodes_way(source.text()) {
                    let keeps_state = super::may_keep_state(&a.nodes);
                    assert_eq!(a.form.is_made(), keeps_state, "{name}");
                    if keeps_state {
                        n_from_table += 1;
                    } else {
                        n_lazy += 1;
                    }
                }
                assert!(shape(a) == shape(b), "{name}");
                assert_eq!(a.fingerprint(), b.fingerprint(), "{name}");
            }
            (Err(a), Err(b)) => {
                n_errors += 1;
                assert!(format!("{a:?}") == format!("{b:?}"), "{name}");
                assert_eq!(a.render(), b.render(), "{name}");
            }
            _ => panic!(
                "{name}: {:?} against {:?}",
                from_text.is_ok(),
                from_value.is_ok()
            ),
        }
    }
    assert!(
        n_lazy > 8 && n_from_table > 30,
        "{n_lazy} trees compiled from the reader's nodes without their data, \
         {n_from_table} with it"
    );
    assert!(n_errors > 20, "{n_errors} files with errors");
}

/// The reader's nodes' mode gives the spans (every entry, and the count
/// of node forms) and the errors of the usual read, on every file.
#[test]
fn the_readers_nodes_have_the_spans_and_errors_of_the_read_value() {
    for path in all_files() {
        let text = std::fs::read_to_string(&path).unwrap();
        let name = path.display();
        match (read_tree(&text), read_text(&text)) {
            (Ok((form, a)), Ok((value, b))) => {
                assert_eq!(a.entries, b.entries, "{name}");
                assert_eq!(a.node_forms, b.node_forms, "{name}");
                match form {
                    TreeForm::Value(v) => assert_eq!(v, value, "{name}"),
                    TreeForm::Nodes(forms) => {
                        assert!(matches!(value, crate::Value::Vector(_)), "{name}");
                        assert!(forms.len() >= 1, "{name}");
                    }
                }
            }
            (Err(a), Err(b)) => assert_eq!(a, b, "{name}"),
            (a, b) => panic!("{name}: {:?} against {:?}", a.is_ok(), b.is_ok()),
        }
    }
}

/// Nodes' mode on the shapes that are not plain nodes: a map after the
/// second place, a list, a set, a tagged form and a discarded node as
/// children; a vector as head; an empty vector; nesting to the limit.
#[test]
fn odd_shapes_compile_alike_both_ways() {
    // More keys than the reader compares: an options map kept whole.
    let many_keys = format!(
        "[:sequence {{{}}} [:success]]",
        (0..17)
            .map(|i| format!(":k{i} {i}"))
            .collect::<Vec<_>>()
            .join(" ")
    );
    let deep_ok = format!("{}[:success]{}", "[:invert ".repeat(200), "]".repeat(200));
    let too_deep = format!("{}[:success]{}", "[:invert ".repeat(300), "]".repeat(300));
    let texts = [
        "[:sequence {:id :s} {:a 1} [:success]]",
        "[:sequence (:success) #{[:success]} #t [:success]]",
        "[:sequence #_ [:jump!] [:success] #_#_ [:a] [:b]]",
        "[[:success] [:success]]",
        "[:sequence [] [1 2] [\"x\" {:k 1}]]",
        "[:sequence [:success {:id :a}] [:success {:id :a}]]",
        "[:inc! {:key [:a :b]} [:success]]",
        "[:define! {:key :k :val [:aido/fn inc [:aido/db :n]]}]",
        "[:sequence {:aido/params {:n :int}} [:success]]",
        "[:sequence {1 2 :id :x} [:success]]",
        "[:sequence [:include {:file \"x.edn\"}]]",
        "[:sequence\n ;; a comment\n [:success] , [:failure]\t]",
        ":success",
        "[:sequence [:success]",
        "[:sequence {:id :a :id :b} [:success]]",
        "[:sequence {:id} [:success]]",
        "[:define! {:key :k :val \"a string\" :doc \"d\"}]",
        "[:sequence {:id \"s\" :doc 5 :aido/skip-if [:aido/db :x]} [:success]]",
        &many_keys,
        &deep_ok,
        &too_deep,
    ];
    // Each also under a root that keeps state, whose data is made from
    // the reader's table.
    let texts = texts
        .iter()
        .flat_map(|t| [t.to_string(), format!("[:sequence {{:memory true}} {t}]")]);
    for text in texts {
        let text = text.as_str();
        let source = Arc::new(Source::new("t.edn", text));
        let loader = FsLoader::for_file("t.edn");
        let from_text = compile_source_with(source.clone(), &Registry::new(), &loader);
        let from_value = compile_value(&source, &loader);
        match (&from_text, &from_value) {
            (Ok(a), Ok(b)) => assert_eq!(shape(a), shape(b), "{text}"),
            (Err(a), Err(b)) => assert_eq!(format!("{a:?}"), format!("{b:?}"), "{text}"),
            _ => panic!(
                "{text}: {:?} against {:?}",
                from_text.is_ok(),
                from_value.is_ok()
            ),
        }
    }
}

/// A tree compiled from text keeps only its text: its data is read again
/// on first use, equal to the read value, and its fingerprint is the
/// same as that of the tree compiled from the value.
#[test]
fn a_tree_compiled_from_text_reads_its_data_again_when_asked() {
    let text = "[:sequence {:id :s} [:inc! {:key [:a :b]}] #_ [:x] [:success {:doc \"d\"}]]";
    let tree = crate::compile_str("t.edn", text, &Registry::new()).unwrap();
    assert!(!tree.form.is_made());
    let copy = tree.clone();
    let (value, _) = read_text(text).unwrap();
    let from_value = crate::compile(&value, &Registry::new()).unwrap();
    assert_eq!(tree.fingerprint(), from_value.fingerprint());
    assert!(tree.form.is_made());
    assert_eq!(tree.form(), &value);
    // A copy made before reads the text itself.
    assert!(!copy.form.is_made());
    assert_eq!(copy.form(), &value);
    // A tree given its value keeps it.
    assert!(from_value.form.is_made());
}

/// A tree whose ticks keep state (a `:wait`, a memory flow, a node type
/// registered in Rust, which may write memory) compiled from text gets
/// its data from the compile, made from the reader's table: its first
/// tick, which records the fingerprint, reads no text. The data is the
/// read value, options of every kind of value among it.
#[test]
fn a_tree_that_keeps_state_compiled_from_text_has_its_data_from_the_compile() {
    use crate::Value;
    let mut registry = Registry::new();
    let noted = crate::extend::NodeType::new("t/note!")
        .one_visit(true)
        .tick(|ctx| {
            ctx.set_memory(Some(Value::Int(1)))?;
            Ok(crate::Status::Success)
        });
    registry.node_type(noted).unwrap();
    // Each text, and whether its first tick keeps state (a memory flow
    // keeps none until a child runs).
    let texts = [
        (
            "[:sequence {:id :s} [:wait {:ticks 2}] [:inc! {:key [:a :b]}]]",
            true,
        ),
        (
            "[:selector {:memory true} #_ [:x] [:define! {:key :k :val 1.5 :doc \"d\"}] \
         [:define! {:key :k :val [:aido/fn inc [:aido/db :n]]}] [:define! {:key :j :val nil}]]",
            false,
        ),
        (
            "[:sequence [:t/note!] [:test? {:key :k :oper <= :val 3}]]",
            true,
        ),
    ];
    for (text, keeps_state) in texts {
        let tree = crate::compile_str("t.edn", text, &registry).unwrap();
        // Made by the compile, before anything asked for it.
        assert!(tree.form.is_made(), "{text}");
        let (value, _) = read_text(text).unwrap();
        assert_eq!(tree.form(), &value, "{text}");
        assert_eq!(tree.form().to_string(), value.to_string(), "{text}");
        let from_value = crate::compile(&value, &registry).unwrap();
        assert_eq!(tree.fingerprint(), from_value.fingerprint(), "{text}");
        // A first tick that keeps state records the fingerprint.
        let db = crate::tick::run_tick(Value::Map(Box::default()), &tree).db;
        let Value::Map(db) = &db else {
            panic!("{text}: a db that is no map")
        };
        let recorded = db.get(&Value::Keyword(crate::value::Keyword::new("aido/tree")));
        let fingerprint = Value::Int(tree.fingerprint());
        assert_eq!(recorded, keeps_state.then_some(&fingerprint), "{text}");
    }
}

/// A tree whose ticks keep no state (all its nodes plain, none a node
/// type registered in Rust) compiled from text does not make its data:
/// it is read from the text if ever asked for.
#[test]
fn a_plain_tree_compiled_from_text_does_not_make_its_data() {
    let text = "[:selector [:sequence [:present? {:key :a}] [:inc! {:key :n}]] \
                [:loop {:count 2} [:define! {:key :k :val \"s\"}]]]";
    let tree = crate::compile_str("t.edn", text, &Registry::new()).unwrap();
    assert!(tree.nodes.iter().all(|n| n.plain));
    assert!(!tree.form.is_made());
    // Its ticks keep no state: no fingerprint asked for, none recorded.
    let tick = crate::tick::run_tick(crate::Value::Map(Box::default()), &tree);
    assert!(!tree.form.is_made());
    assert!(!tick.db.to_string().contains("aido/tree"));
    assert_eq!(tree.form(), &read_text(text).unwrap().0);
}

/// A text that no longer reads (it cannot happen to a tree's own text)
/// gives nil, not a panic.
#[test]
fn a_form_whose_text_does_not_read_is_nil() {
    let form = crate::read::LazyForm::from_source(Arc::new(Source::new("t.edn", "[:a")));
    assert_eq!(form.get(), &crate::Value::Nil);
}

/// The nodes' mode keeps the reader's nesting limit on a small stack:
/// node vectors (with options maps and vectors in them) nested to the
/// limit read, one level more is too deep, and neither overflows 512 KiB
/// of stack in a debug build.
#[test]
fn the_deepest_tree_reads_as_nodes_on_a_small_stack() {
    use crate::read::{MAX_DEPTH, ReadErrorKind};
    // Each level a node vector; the innermost holds a map and a vector.
    let nested = |levels: usize| {
        format!(
            "{}[:inc! {{:key [:a :b]}}]{}",
            "[:invert ".repeat(levels - 1),
            "]".repeat(levels - 1)
        )
    };
    // The innermost key path's keywords are the deepest forms the value
    // reader takes (the limit counts forms, not nodes).
    let levels = MAX_DEPTH - 2;
    let (deepest, too_deep) = (nested(levels), nested(levels + 1));
    let handle = std::thread::Builder::new()
        .stack_size(512 * 1024)
        .spawn(move || {
            let ok = read_tree(&deepest).map(|(form, _)| match form {
                TreeForm::Nodes(forms) => forms.len(),
                TreeForm::Value(_) => 0,
            });
            let err = read_tree(&too_deep).map(|_| ()).map_err(|e| e.kind);
            let as_values = (
                read_text(&deepest).is_ok(),
                read_text(&too_deep).map(|_| ()).map_err(|e| e.kind),
            );
            (ok.map_err(|e| e.kind), err, as_values)
        })
        .unwrap();
    let (ok, err, as_values) = handle.join().unwrap();
    assert_eq!(ok, Ok(levels));
    assert_eq!(err, Err(ReadErrorKind::TooDeep));
    assert_eq!(as_values, (true, Err(ReadErrorKind::TooDeep)));
}
