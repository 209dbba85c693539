//! Hostile input sizes: work that used to grow with the square of the input
//! (nodes on one line, changed siblings, unknown node types against a model,
//! growing values in a run record, warnings, stubs, rejected trims). Each
//! test takes an input large enough that the quadratic version would run for
//! minutes, or counts the work directly; none asserts on time.
#![allow(clippy::panic, clippy::expect_used, clippy::unwrap_used)]

use aido::{
    Registry, Value, compile_str,
    diag::Code,
    read_value,
    record::{DbChange, PageOptions, Recorder, TimelineOptions, TreeRecord, page, timeline},
    run_tick,
    source::LineCol,
};

/// A wait that keeps running, then `n` children that each define a key; or
/// the same children reversed, the wait last.
fn wait_then_defines(n: usize, reversed: bool, node_type: &str) -> String {
    let mut kids: Vec<String> = (0..n)
        .map(|i| match node_type {
            "define!" => format!("[:define! {{:key :k{i} :val {i}}}]"),
            _ => format!("[:{node_type} {{:key :k{i}}}]"),
        })
        .collect();
    kids.insert(0, "[:wait {:ticks 2}]".into());
    if reversed {
        kids.reverse();
    }
    format!("[:sequence {{:memory true}}\n{}]", kids.join("\n"))
}

#[test]
fn matching_many_moved_or_changed_siblings_is_linear() {
    // 20,000 children reversed (equal data, every one moved), and the same
    // children each changed to another node type (nothing to pair by type):
    // each used to scan every sibling, 12 s in a release build.
    let registry = Registry::new();
    let n = 20_000;
    let old = compile_str("old", &wait_then_defines(n, false, "define!"), &registry).unwrap();
    let db = run_tick(read_value("{}").unwrap(), &old).db;
    let wait_old = Value::from("0.0");
    let wait_new = Value::from(format!("0.{n}").as_str());
    assert!(db.to_string().contains("\"0.0\""));
    for changed in ["define!", "inc!"] {
        let new = compile_str("new", &wait_then_defines(n, true, changed), &registry).unwrap();
        let (db, report) = aido::migrate::migrate(db.clone(), &old, &new);
        // The running wait is found at its new place, last among its siblings.
        let wait = report.kept.iter().find(|k| k.id == wait_old);
        assert_eq!(
            wait.and_then(|k| k.new_id.clone()),
            Some(wait_new.clone()),
            "{changed}"
        );
        assert!(db.to_string().contains(&wait_new.to_string()));
    }
}

#[test]
fn recording_a_tree_of_many_nodes_on_one_line_is_linear() {
    // 30,000 nodes on one line of 12 MB after a non-ASCII character: each
    // node's line and column used to be counted from the line's start
    // (300,000 nodes: 14.5 s in a release build; this line, a minute).
    let n = 30_000;
    let kids = format!("[:success]{}", " ".repeat(400)).repeat(n);
    let text = format!("[:sequence {{:id \"é\"}} {kids}]");
    let tree = compile_str("one-line", &text, &Registry::new()).unwrap();
    let record = TreeRecord::of(&tree);
    assert_eq!(record.nodes.len(), n + 1);
    assert!(record.nodes.iter().all(|node| node.line == Some(1)));
    let source = tree.source().unwrap();
    let last = record.nodes.last().and_then(|node| node.span).unwrap();
    let column = text[..last.start as usize].chars().count() + 1;
    assert_eq!(source.line_col(last.start), LineCol { line: 1, column });
    // Every node's column, as a diagnostic or the page would ask for it.
    let columns: Vec<usize> = record
        .nodes
        .iter()
        .filter_map(|node| Some(source.line_col(node.span?.start).column))
        .collect();
    assert!(columns.windows(2).all(|w| w[0] < w[1]));
}

#[test]
fn unknown_node_types_against_a_large_model_are_suggested_within_a_bound() {
    // A model of 1,000 node types and a tree of 3,000 misspelt ones: every
    // misspelling used to be compared with every declared name (3,000 by
    // 3,000: 9 s in a release build). The first 64 different names get
    // their "did you mean"; a name met again gets the same help; the rest
    // get none.
    let n = 3_000;
    let mut model = String::from("{:nodes {");
    for i in 0..1_000 {
        model.push_str(&format!(":m/node-{i:04} {{:children 0}}\n"));
    }
    model.push_str("}}");
    let mut registry = Registry::new();
    registry
        .declare_model_text("big.nodes.edn", &model)
        .unwrap();
    let kids: String = (0..n).map(|i| format!("[:m/nodf-{i:04}]\n")).collect();
    let tree = format!("[:sequence\n{kids}[:m/nodf-0000]]");
    let diags = compile_str("typos", &tree, &registry).unwrap_err();
    assert_eq!(diags.items.len(), n + 1);
    assert!(diags.items.iter().all(|d| d.code == Code::UnknownNodeType));
    let helps: Vec<Option<&str>> = diags.items.iter().map(|d| d.help.as_deref()).collect();
    assert_eq!(helps[0], Some("did you mean `:m/node-0000`?"));
    assert_eq!(helps[63], Some("did you mean `:m/node-0063`?"));
    assert_eq!(helps[64], None);
    assert_eq!(helps[n], helps[0]);
}

/// How many values a change holds, counting every element of every
/// collection in it.
fn values_in(change: &DbChange) -> usize {
    fn count(v: &Value) -> usize {
        1 + match v {
            Value::Vector(items) | Value::List(items) => items.iter().map(count).sum(),
            Value::Map(m) => m.iter().map(|(k, v)| count(k) + count(v)).sum(),
            _ => 0,
        }
    }
    match change {
        DbChange::Added { value, .. } => count(value),
        DbChange::Changed { old, new, .. } => count(old) + count(new),
        DbChange::Removed { old, .. } => count(old),
        DbChange::Appended { items, .. } => items.iter().map(count).sum(),
        DbChange::Edited { changes, .. } => changes.iter().map(values_in).sum(),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_big_map_edited_in_one_key_every_tick_is_recorded_by_that_key() {
    // The record used to hold the whole map, old and new, at every tick.
    let tree = compile_str("map", "[:inc! {:key [:big 500]}]", &Registry::new()).unwrap();
    let big = (0..1000)
        .map(|i| format!("{i} 0"))
        .collect::<Vec<_>>()
        .join(", ");
    let mut db = read_value(&format!("{{:big {{{big}}}, :log [0 1 2 3 4 5 6 7 8 9]}}")).unwrap();
    let ticks = 2_000;
    let mut recorder = Recorder::new(&tree, &db);
    for _ in 0..ticks {
        db = recorder.tick(db, &tree).db;
    }
    let run = recorder.finish();
    let held: usize = run
        .ticks()
        .flat_map(|t| run.changes(&t))
        .map(|c| values_in(&c))
        .sum();
    // Per tick: the one entry, old and new.
    assert!(held <= 2 * ticks, "{held} values held for {ticks} ticks");
    assert!(matches!(
        &run.changes(&run.tick(ticks - 1).unwrap()).collect::<Vec<_>>()[..],
        [DbChange::Edited { changes, .. }] if matches!(&changes[..], [DbChange::Changed { .. }])
    ));
    assert_eq!(run.db_after(ticks), db);
    assert_eq!(run.db_after(0), run.start_db);
    let text = timeline(&run, &TimelineOptions::default());
    assert!(
        text.ends_with("tick 2000: success\n  ~ [:big 500] 1999 -> 2000\n"),
        "{}",
        &text[text.len() - 200..]
    );
    // The page stores the map's entries once, then each tick's edited entry
    // (it held the whole map, 8 KB, every tick: 16 MB).
    let html = page(&run, &PageOptions::default());
    assert!(
        html.len() < 200_000 + 100 * ticks,
        "{} bytes of page",
        html.len()
    );
}

#[test]
fn a_long_vector_changed_in_one_element_is_recorded_by_that_element() {
    let tree = compile_str("vec", "[:inc! {:key [:v 3]}]", &Registry::new()).unwrap();
    let mut db = read_value("{:v [0 0 0 0 0 0 0 0 0 0], :short [0 0]}").unwrap();
    let mut recorder = Recorder::new(&tree, &db);
    for _ in 0..3 {
        db = recorder.tick(db, &tree).db;
    }
    let run = recorder.finish();
    assert_eq!(
        timeline(&run, &TimelineOptions::default()),
        "tick 1: success\n  ~ [:v 3] 0 -> 1\n\n\
         tick 2: success\n  ~ [:v 3] 1 -> 2\n\n\
         tick 3: success\n  ~ [:v 3] 2 -> 3\n"
    );
    assert_eq!(
        run.db_after(2),
        read_value("{:v [0 0 0 2 0 0 0 0 0 0], :short [0 0]}").unwrap()
    );
}

#[test]
fn a_log_that_grows_every_tick_is_recorded_by_what_it_gained() {
    // `:emit!` appends to a vector every tick: the record used to hold the
    // whole vector, old and new, at every tick (3,000 ticks: 813 MB).
    let tree = compile_str(
        "log",
        "[:sequence [:inc! {:key :n}] [:emit! {:key :log :val [:aido/db :n]}]]",
        &Registry::new(),
    )
    .unwrap();
    let ticks = 2_000;
    let mut db = read_value("{}").unwrap();
    let mut recorder = Recorder::new(&tree, &db);
    for _ in 0..ticks {
        db = recorder.tick(db, &tree).db;
    }
    let run = recorder.finish();
    let held: usize = run
        .ticks()
        .flat_map(|t| run.changes(&t))
        .map(|c| values_in(&c))
        .sum();
    // Per tick: :n changed (old and new) and one element appended, plus the
    // first few ticks shown whole.
    assert!(held < 4 * ticks, "{held} values held for {ticks} ticks");
    let appended = run
        .changes(&run.tick(ticks - 1).unwrap())
        .collect::<Vec<_>>();
    assert!(
        appended
            .iter()
            .any(|c| matches!(c, DbChange::Appended { items, .. } if items.len() == 1))
    );
    // Nothing is lost: the db is rebuilt from the changes.
    assert_eq!(run.db_after(ticks), db);
    assert_eq!(
        run.db_after(9),
        read_value(&format!("{{:n 9, :log [{}]}}", "1 2 3 4 5 6 7 8 9")).unwrap()
    );
    // The text timeline and the page grow with the ticks, not their square.
    let text = timeline(&run, &TimelineOptions::default());
    assert!(text.len() < 60 * ticks, "{} bytes of timeline", text.len());
    assert!(
        text.contains("  ~ :log ++ [2000]\n"),
        "{}",
        &text[text.len() - 200..]
    );
    let html = page(&run, &PageOptions::default());
    assert!(
        html.len() < 200_000 + 100 * ticks,
        "{} bytes of page",
        html.len()
    );
}

/// A file `name` holding `text` in a fresh folder of its own for `test`.
fn scratch_file(test: &str, name: &str, text: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("aido-scaling-{}-{test}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// Runs the `aido` binary with `args`.
fn aido(args: &[&std::ffi::OsStr]) -> crate::common::Run {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_aido"));
    command.args(args).env_remove("AIDO_MAX_DIAGNOSTICS");
    crate::common::Run::of(&mut command)
}

#[test]
fn check_shows_at_most_fifty_warnings_and_counts_the_rest() {
    // 5,000 waits without an :id: 5,000 warnings used to be printed.
    let kids = "[:wait {:ticks 2}]\n".repeat(5_000);
    let tree = scratch_file("warnings", "waits.edn", &format!("[:sequence\n{kids}]"));
    let run = aido(&["check".as_ref(), tree.as_os_str()]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(lines.len(), 51, "{:?}", &lines[..3]);
    assert!(
        lines[..50]
            .iter()
            .all(|l| l.contains("keeps state but has no :id"))
    );
    let last = lines[50];
    assert!(
        last.ends_with(
            "4951 more nodes keep state without an :id (AIDO_MAX_DIAGNOSTICS shows more)"
        ),
        "{last}"
    );
    let _ = std::fs::remove_dir_all(tree.parent().unwrap());
}

#[test]
fn many_stubs_are_applied_in_linear_time() {
    // 20,000 node types, each stubbed by its type, and 20,000 ids stubbed
    // by id: each stub used to look at every node, and every node at every
    // stub's key.
    let n = 20_000;
    let kids: String = (0..n)
        .map(|i| format!("[:x/t{i} {{:id :n{i}}}]\n"))
        .collect();
    let tree = read_value(&format!("[:sequence\n{kids}]")).unwrap();
    let mut stubs = String::from("{");
    for i in 0..n {
        stubs.push_str(&format!(":x/t{i} :failure :n{i} :success\n"));
    }
    stubs.push('}');
    let stubs = aido::stub::Stubs::from_value(&read_value(&stubs).unwrap()).unwrap();
    let tree = stubs.compile(&tree, &Registry::new()).unwrap();
    let tick = run_tick(read_value("{}").unwrap(), &tree);
    assert_eq!(tick.status, aido::Status::Success);
    assert_eq!(tick.steps, n as u64 + 1);
}

#[test]
fn trims_whose_new_node_is_wrong_are_rejected_without_compiling_the_tree_again() {
    // 400 tasks, each inserting or putting a node of an unknown type into
    // a tree of 20,000 nodes: each used to compile the whole changed tree.
    use aido::trim::{DataTask, TrimOutcome, Trimmer};
    let registry = Registry::new();
    let kids = "[:inc! {:key :n}]\n".repeat(20_000);
    let tree = compile_str(
        "big",
        &format!("[:sequence {{:id :top}}\n{kids}]"),
        &registry,
    )
    .unwrap();
    let mut trimmer = Trimmer::new();
    let tasks = 400;
    for i in 0..tasks {
        let task = if i % 2 == 0 {
            format!("{{:task :t{i}, :target :top, :insert [:no/such-node], :at 1}}")
        } else {
            format!("{{:task :t{i}, :target \"top.5\", :replace [:inc! {{:kee :n}}]}}")
        };
        trimmer.push(Box::new(
            DataTask::from_value(&read_value(&task).unwrap()).unwrap(),
        ));
    }
    let gap = trimmer.between_ticks(0, read_value("{}").unwrap(), &tree, &registry);
    assert!(gap.tree.is_none());
    assert_eq!(gap.reports.len(), tasks);
    for (i, report) in gap.reports.iter().enumerate() {
        assert_eq!(report.outcome, TrimOutcome::Rejected);
        let diagnostic = &report.diagnostics.as_ref().unwrap().items[0];
        // The problem is placed where the node would have been.
        if i % 2 == 0 {
            assert_eq!(
                (diagnostic.code, &diagnostic.path[..]),
                (Code::UnknownNodeType, &[1][..])
            );
        } else {
            assert_eq!(
                (diagnostic.code, &diagnostic.path[..]),
                (Code::UnknownOption, &[5][..])
            );
        }
    }
}

#[test]
fn a_map_of_200000_keys_is_built_searched_compared_and_emptied_in_linear_time() {
    // The compact map scans up to 8 keys and indexes a larger map: every
    // step below is linear, where a scan of a large map (or rewriting the
    // whole index on each removal near the end) would take minutes.
    use aido::value::Map;
    let n = 200_000i64;
    let key = |i: i64| match i % 3 {
        0 => Value::keyword(&format!("k{i}")),
        1 => Value::Int(i),
        _ => Value::from(format!("s{i}").as_str()),
    };
    let mut map = Map::new();
    for i in 0..n {
        assert_eq!(map.insert(key(i), Value::Int(i)), None);
    }
    for i in 0..n {
        assert_eq!(map.get_index_of(&key(i)), Some(i as usize));
    }
    let reversed: Map = (0..n).rev().map(|i| (key(i), Value::Int(i))).collect();
    assert_eq!(map, reversed);
    // Removing the last key but one, again and again, keeps the order.
    while map.len() > 1 {
        let at = map.len() - 2;
        let k = map.get_index(at).map(|(k, _)| k.clone()).unwrap();
        assert_eq!(map.shift_remove(&k), Some(Value::Int(at as i64)));
    }
    assert_eq!(map.get_index(0), Some((&key(n - 1), &Value::Int(n - 1))));
}
