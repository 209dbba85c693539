//! `aido show`: the outline, the Graphviz digraph and the Mermaid flowchart
//! of every shipped example tree, and `record::outline` on trees with
//! explicit ids, dynamic options and no source.
//!
//! The dot output is rendered with Graphviz's `dot -Tsvg` when it is
//! installed; on CI (`CI=true`) it must be.
#![allow(clippy::panic, clippy::expect_used, clippy::unwrap_used)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use aido::record::{dot, mermaid, node_options, outline};
use aido::{Registry, Tree, compile, compile_str, read_value};

use crate::common::Run;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Every shipped example tree (not the dbs, inputs and trim tasks beside them).
fn example_trees() -> Vec<PathBuf> {
    let mut trees = Vec::new();
    for dir in ["examples", "examples/long", "examples/trim"] {
        for entry in std::fs::read_dir(root().join(dir)).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            let data = ["inputs.edn", "db.edn", "trims.edn", ".test.edn"]
                .iter()
                .any(|end| name.ends_with(end));
            if name.ends_with(".edn") && !data {
                trees.push(path.strip_prefix(root()).unwrap().to_path_buf());
            }
        }
    }
    trees.sort();
    trees
}

/// Runs `aido args..` in the repository's root.
fn aido(args: &[&str]) -> Run {
    Run::of(
        Command::new(env!("CARGO_BIN_EXE_aido"))
            .args(args)
            .current_dir(root()),
    )
}

fn compiled(path: &Path) -> Tree {
    let text = std::fs::read_to_string(root().join(path)).unwrap();
    compile_str(&path.to_string_lossy(), &text, &Registry::new()).unwrap()
}

#[test]
fn the_examples_shown_as_outlines_and_graphs() {
    let trees = example_trees();
    assert!(trees.len() >= 9, "{trees:?}");
    insta::with_settings!({snapshot_path => "../../snapshots", prepend_module_to_snapshot => true}, {
        for path in &trees {
            let file = path.to_string_lossy().into_owned();
            let name = file.trim_start_matches("examples/").replace(['/', '.'], "_");
            let tree = compiled(path);
            let text = aido(&["show", &file]);
            assert_eq!(text.code, 0, "{}", text.stderr);
            assert_eq!(text.stdout, outline(&tree));
            assert_eq!(text.stdout, aido(&["show", &file, "--format", "text"]).stdout);
            assert_eq!(text.stdout.lines().count(), tree.len());
            insta::assert_snapshot!(format!("{name}_text"), text.stdout);

            let graph = aido(&["show", &file, "--format", "dot"]);
            assert_eq!(graph.code, 0);
            assert_eq!(graph.stdout, dot(&tree));
            // One edge per node but the root.
            assert_eq!(graph.stdout.matches(" -> ").count(), tree.len() - 1);
            let flow = aido(&["show", &file, "--format", "mermaid"]);
            assert_eq!(flow.code, 0);
            assert_eq!(flow.stdout, mermaid(&tree));
            assert_eq!(flow.stdout.matches(" --> ").count(), tree.len() - 1);
        }
        let npc = Path::new("examples/npc.edn");
        insta::assert_snapshot!("npc_dot", aido(&["show", "examples/npc.edn", "--format", "dot"]).stdout);
        insta::assert_snapshot!("npc_mermaid", mermaid(&compiled(npc)));
    });
}

/// Graphviz's `dot`, or `None` (after a notice) when it is missing and this is not CI.
fn graphviz() -> Option<PathBuf> {
    for path in ["/usr/bin/dot", "/usr/local/bin/dot"] {
        if Path::new(path).is_file() {
            return Some(PathBuf::from(path));
        }
    }
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!("the graph tests need Graphviz's `dot`: install Debian's `graphviz` package");
    }
    eprintln!("notice: Graphviz's dot not found: `aido show --format dot` was not rendered");
    None
}

#[test]
fn graphviz_renders_every_example() {
    let Some(dot_bin) = graphviz() else { return };
    for path in example_trees() {
        let tree = compiled(&path);
        // What `aido show --format dot` prints (the test above checks that
        // it prints this): one process less per example.
        let graph = dot(&tree);
        let mut child = Command::new(&dot_bin)
            .arg("-Tsvg")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(graph.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success() && stderr.is_empty(),
            "{}: {stderr}",
            path.display()
        );
        // Graphviz writes `-` as `&#45;` in text.
        let svg = String::from_utf8(out.stdout).unwrap().replace("&#45;", "-");
        assert!(svg.contains("<svg"));
        // Every tree node and every edge is drawn, labelled with its type.
        assert_eq!(
            svg.matches("class=\"node\"").count(),
            tree.len(),
            "{}",
            path.display()
        );
        assert_eq!(svg.matches("class=\"edge\"").count(), tree.len() - 1);
        for node in tree.iter() {
            let label = tree.node_type(node).unwrap().to_string();
            assert!(
                svg.contains(&format!(">{label}<")),
                "{label} in {}",
                path.display()
            );
        }
    }
}

#[test]
fn outlines_show_ids_options_as_written_and_lines() {
    let tree = compile_str(
        "t.edn",
        "[:selector {:id :bot :memory true}\n \
         [:loop {:count [:aido/fn rand-int 5]} [:inc! {:key :n}]]\n \
         [:test? {:id 7 :key :score :oper >= :val [:aido/db :settings :pass-mark]}]]",
        &Registry::new(),
    )
    .unwrap();
    assert_eq!(
        aido::record::outline(&tree),
        ":selector :bot {:memory true}  ; line 1\n  \
         :loop \"bot.0\" {:count [:aido/fn rand-int 5]}  ; line 2\n    \
         :inc! \"bot.0.0\" {:key :n}  ; line 2\n  \
         :test? 7 {:key :score, :oper >=, :val [:aido/db :settings :pass-mark]}  ; line 3\n"
    );
    let test = tree.find(&aido::Value::Int(7)).unwrap();
    assert_eq!(
        node_options(&tree, test).unwrap().len(),
        3,
        ":id is shown on its own, not among the options"
    );
    assert_eq!(node_options(&tree, tree.root()).unwrap().len(), 1);

    // A tree built from data has no lines.
    let data = read_value("[:sequence [:success] [:failure]]").unwrap();
    let tree = compile(&data, &Registry::new()).unwrap();
    assert_eq!(
        outline(&tree),
        ":sequence \"0\"\n  :success \"0.0\"\n  :failure \"0.1\"\n"
    );
    assert_eq!(node_options(&tree, tree.root()), None);
}

#[test]
fn labels_with_quotes_are_escaped_for_dot_and_mermaid() {
    let tree = compile_str(
        "t.edn",
        "[:sequence {:id \"say \\\"hi\\\" #1\"} [:success]]",
        &Registry::new(),
    )
    .unwrap();
    assert!(dot(&tree).contains("n0 [label=\":sequence\\n\\\"say \\\\\\\"hi\\\\\\\" #1\\\"\""));
    assert!(
        mermaid(&tree).contains("n0[\":sequence<br/>#quot;say \\#quot;hi\\#quot; #35;1#quot;\"]")
    );
}

#[test]
fn show_reports_bad_input() {
    let bad = aido(&["show", "examples/npc.edn", "--format", "svg"]);
    assert_eq!(bad.code, 2);
    assert_eq!(
        bad.stderr.lines().next(),
        Some("aido: --format: expected `text`, `dot` or `mermaid`, got `svg`")
    );
    assert_eq!(bad.stdout, "");
    let missing = aido(&["show", "no/such.edn"]);
    assert_eq!(missing.code, 2);
    assert_eq!(
        missing.stderr.lines().next(),
        Some("aido: no/such.edn: no such file or directory")
    );
    let none = aido(&["show"]);
    assert_eq!(none.code, 2);
    assert_eq!(none.stderr.lines().next(), Some("aido: no TREE given"));
    let two = aido(&["show", "examples/npc.edn", "examples/chatbot.edn"]);
    assert_eq!(two.code, 2);
    // A tree with compile errors: exit 1 and the rendered diagnostics.
    let dir = std::env::temp_dir().join(format!("aido-show-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("typo.edn");
    std::fs::write(&file, "[:sequnce [:success]]").unwrap();
    let typo = aido(&["show", file.to_str().unwrap()]);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(typo.code, 1);
    assert_eq!(typo.stdout, "");
    assert!(typo.stderr.starts_with("error[E0003]"), "{}", typo.stderr);
    let help = aido(&["help", "show"]);
    assert_eq!(help.code, 0);
    assert!(help.stdout.starts_with("usage: aido show TREE"));
}
