//! Includes with typed parameters: expansion, arguments of every type, tree
//! arguments, independent uses, nesting, cycles, missing files, errors
//! inside included files (rendered with their "included from" note), the
//! bounds on hostile includes, the file loader's paths, and state that
//! follows a node inside an included file that changed.

#![allow(clippy::panic, clippy::expect_used, clippy::unwrap_used)]

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use aido::compile::{LoadError, Loader, compile_source_with};
use aido::diag::{Code, Diagnostics};
use aido::source::Source;
use aido::{Registry, Status, Tree, Value, compile_file, read_value, run_tick};

/// Trees kept in memory, as a host might keep them in an asset pack.
struct Files(HashMap<String, String>);

impl Files {
    fn new(files: &[(&str, &str)]) -> Files {
        Files(
            files
                .iter()
                .map(|(n, t)| (n.to_string(), t.to_string()))
                .collect(),
        )
    }
}

impl Loader for Files {
    fn resolve(&self, _from: &str, path: &str) -> Result<String, LoadError> {
        Ok(path.to_owned())
    }
    fn load(&self, name: &str) -> Result<String, LoadError> {
        self.0.get(name).cloned().ok_or(LoadError::NotFound)
    }
}

fn compile_mem(main: &str, files: &Files) -> Result<Tree, Diagnostics> {
    compile_source_with(
        Arc::new(Source::new("main.edn", main)),
        &Registry::new(),
        files,
    )
}

fn errors(main: &str, files: &Files) -> Diagnostics {
    match compile_mem(main, files) {
        Ok(_) => panic!("expected compile errors"),
        Err(d) => d,
    }
}

/// Snapshots `text` in the top-level snapshots/ folder, named for the test.
#[track_caller]
fn snap(text: impl AsRef<str>) {
    let name = std::thread::current()
        .name()
        .and_then(|n| n.rsplit("::").next())
        .unwrap_or("include")
        .to_owned();
    insta::with_settings!({snapshot_path => "../../snapshots", prepend_module_to_snapshot => true}, {
        insta::assert_snapshot!(name, text.as_ref());
    });
}

fn codes(d: &Diagnostics) -> Vec<Code> {
    d.items.iter().map(|d| d.code).collect()
}

/// Ticks `tree` `n` times from an empty db: the statuses and the last db.
fn ticks(tree: &Tree, n: usize) -> (Vec<Status>, Value) {
    let mut db = Value::map();
    let mut statuses = Vec::new();
    for _ in 0..n {
        let tick = run_tick(db, tree);
        statuses.push(tick.status);
        db = tick.db;
    }
    (statuses, db)
}

fn without_aido(db: &Value) -> String {
    let map = db.as_map().expect("a map");
    Value::map_from(
        map.iter()
            .filter(|(k, _)| {
                !k.as_keyword()
                    .is_some_and(|k| k.as_str().starts_with("aido/"))
            })
            .map(|(k, v)| (k.clone(), v.clone())),
    )
    .to_string()
}

const EVERY_TYPE: &str = r#"
[:sequence {:aido/params {:i {:type :int} :n {:type :number} :b {:type :bool}
                          :s {:type :string} :k {:type :keyword} :key {:type :key}
                          :a {:type :any} :c {:type :count} :p {:type :probability}
                          :w {:type :weights} :path {:type :key-path} :body {:type :tree}}}
 [:define! {:key [:out :i] :val [:aido/arg :i]}]
 [:define! {:key [:out :n] :val [:aido/arg :n]}]
 [:define! {:key [:out :b] :val [:aido/arg :b]}]
 [:define! {:key [:out :s] :val [:aido/arg :s]}]
 [:define! {:key [:out :k] :val [:aido/arg :k]}]
 [:define! {:key [:aido/arg :key] :val [:aido/arg :a]}]
 [:loop {:count [:aido/arg :c]} [:inc! {:key [:out :loops]}]]
 [:weighted-choice {:weights [:aido/arg :w]} [:selector-p {:p [:aido/arg :p]} [:define! {:key [:out :chance] :val [:aido/arg :p]}]]]
 [:inc! {:key [:aido/arg :path]}]
 [:aido/arg :body]]
"#;

#[test]
fn arguments_of_every_type_are_put_in_place() {
    let files = Files::new(&[("all.edn", EVERY_TYPE)]);
    let tree = compile_mem(
        r#"[:include {:file "all.edn"
                      :args {:i 7 :n 2.5 :b true :s "hi" :k :kw :key :slot :a [1 "x"]
                             :c 2 :p 1.0 :w [1] :path [:npc :hits]
                             :body [:define! {:key [:out :body] :val :ran}]}}]"#,
        &files,
    )
    .unwrap();
    assert!(tree.warnings().is_empty());
    let (statuses, db) = ticks(&tree, 1);
    assert_eq!(statuses, [Status::Success]);
    assert_eq!(
        without_aido(&db),
        r#"{:out {:i 7, :n 2.5, :b true, :s "hi", :k :kw, :loops 2, :chance 1.0, :body :ran}, :slot [1 "x"], :npc {:hits 1}}"#
    );
    // The tree keeps its data with the include expanded.
    snap(tree.form().to_string());
}

#[test]
fn two_uses_of_one_file_keep_their_memory_apart() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/include/main.edn");
    let tree = compile_file(&path, &Registry::new()).unwrap();
    let ids: Vec<String> = tree
        .iter()
        .map(|n| tree.node_id(n).unwrap().to_string())
        .collect();
    assert_eq!(
        ids,
        [
            "\"0\"",
            ":left",
            "\"left.0\"",
            "\"left.1\"",
            "\"left.2\"",
            ":right",
            "\"right.0\"",
            "\"right.1\"",
            "\"right.2\""
        ]
    );
    // :left waits 2 ticks, :right 1: their waits never share a counter.
    let (statuses, db) = ticks(&tree, 4);
    assert_eq!(
        statuses,
        [
            Status::Running,
            Status::Running,
            Status::Running,
            Status::Success
        ]
    );
    assert_eq!(
        without_aido(&db),
        "{:left-steps 2, :done true, :npc {:right 1}, :right-done true}"
    );
    // Every node knows its file.
    let files: Vec<String> = tree
        .iter()
        .map(|n| {
            let (src, _) = tree.locate(tree.span(n).unwrap()).unwrap();
            Path::new(src.name())
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    assert_eq!(
        files,
        [
            "main.edn", "step.edn", "step.edn", "step.edn", "step.edn", "step.edn", "step.edn",
            "step.edn", "step.edn"
        ]
    );
}

#[test]
fn includes_nest_and_pass_arguments_on() {
    let files = Files::new(&[
        (
            "outer.edn",
            r#"[:sequence {:aido/params {:slot {:type :key-path} :then {:type :tree}}}
                [:include {:file "inner.edn" :as :in :args {:slot [:aido/arg :slot] :body [:aido/arg :then]}}]]"#,
        ),
        (
            "inner.edn",
            r#"[:sequence {:aido/params {:slot {:type :key-path} :body {:type :tree}
                                      :name {:type :keyword :default :count}}}
                [:inc! {:id [:aido/arg :name] :key [:aido/arg :slot]}] [:aido/arg :body]]"#,
        ),
    ]);
    let tree = compile_mem(
        r#"[:include {:file "outer.edn" :as :out :args {:slot [:a :b] :then [:inc! {:key :then}]}}]"#,
        &files,
    )
    .unwrap();
    let (_, db) = ticks(&tree, 2);
    assert_eq!(without_aido(&db), "{:a {:b 2}, :then 2}");
    // An explicit id inside an include (here an argument) is put under the
    // include's id.
    assert!(tree.find(&Value::string("out/in/count")).is_some());
}

#[test]
fn argument_mistakes_are_located_at_the_include() {
    let files = Files::new(&[(
        "step.edn",
        r#"[:sequence {:aido/params {:slot {:type :key-path} :n {:type :int :default 1} :extra {:type :bool :default true}}}
            [:inc! {:key [:aido/arg :slot]}] [:wait {:ticks [:aido/arg :n]}]]"#,
    )]);
    let d = errors(
        r#"[:sequence
 [:include {:file "step.edn" :args {:n "two" :sloot :x}}]]"#,
        &files,
    );
    assert_eq!(
        codes(&d),
        [
            Code::IncludeArgument,
            Code::IncludeArgument,
            Code::IncludeArgument,
            Code::UnusedParam
        ]
    );
    snap(d.render());
}

#[test]
fn an_error_inside_an_included_file_points_into_it_with_a_note() {
    let files = Files::new(&[(
        "lib/flee.edn",
        "[:sequence {:aido/params {:speed {:type :number :default 1}}}\n [:run-away {:speed [:aido/arg :speed]}]]\n",
    )]);
    // Used twice, the file's own problem is reported once.
    let d = errors(
        r#"[:selector
 [:include {:file "lib/flee.edn" :as :a}]
 [:include {:file "lib/flee.edn" :as :b :args {:speed 3}}]]"#,
        &files,
    );
    assert_eq!(codes(&d), [Code::UnknownNodeType]);
    let (src, _) = d.locate(&d.items[0]).unwrap();
    assert_eq!(src.name(), "lib/flee.edn");
    snap(d.render());
}

#[test]
fn a_cycle_is_an_error_showing_the_chain() {
    let files = Files::new(&[
        ("a.edn", r#"[:sequence [:include {:file "b.edn"}]]"#),
        ("b.edn", r#"[:sequence [:include {:file "a.edn"}]]"#),
    ]);
    let d = errors(r#"[:include {:file "a.edn"}]"#, &files);
    assert_eq!(codes(&d), [Code::IncludeCycle]);
    snap(d.render());
}

#[test]
fn a_missing_file_is_a_located_error() {
    let d = errors(
        "[:sequence\n [:success]\n [:include {:file \"nowhere.edn\"}]]",
        &Files::new(&[]),
    );
    assert_eq!(codes(&d), [Code::IncludeFile]);
    snap(d.render());
}

#[test]
fn text_compiled_without_a_loader_refuses_includes() {
    let d =
        aido::compile_str("t.edn", r#"[:include {:file "x.edn"}]"#, &Registry::new()).unwrap_err();
    assert_eq!(codes(&d), [Code::IncludeFile]);
}

#[test]
fn an_include_bomb_is_refused_not_expanded() {
    // Each file includes the next twice: 2^15 copies of the last one.
    let mut owned = Vec::new();
    for i in 0..15 {
        owned.push((
            format!("f{i}.edn"),
            format!(
                r#"[:sequence [:success] [:success] [:include {{:file "f{n}.edn"}}] [:include {{:file "f{n}.edn"}}]]"#,
                n = i + 1
            ),
        ));
    }
    owned.push(("f15.edn".to_owned(), "[:success]".to_owned()));
    let files = Files(owned.into_iter().collect());
    let d = errors(r#"[:include {:file "f0.edn"}]"#, &files);
    assert_eq!(codes(&d), [Code::IncludeLimit]);
    // A chain deeper than the limit is refused too.
    let mut owned = Vec::new();
    for i in 0..40 {
        owned.push((
            format!("g{i}.edn"),
            format!(r#"[:sequence [:include {{:file "g{}.edn"}}]]"#, i + 1),
        ));
    }
    let d = errors(
        r#"[:include {:file "g0.edn"}]"#,
        &Files(owned.into_iter().collect()),
    );
    assert_eq!(codes(&d), [Code::IncludeLimit]);
}

#[test]
fn a_file_compiled_alone_uses_its_defaults() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/include/lib/defaults.edn");
    let tree = compile_file(&path, &Registry::new()).unwrap();
    let (_, db) = ticks(&tree, 1);
    assert_eq!(without_aido(&db), "{:n 1}");
    // A parameter without a default needs an include.
    let step = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/include/lib/step.edn");
    let Err(aido::compile::CompileFileError::Compile(d)) = compile_file(&step, &Registry::new())
    else {
        panic!("expected compile errors");
    };
    assert_eq!(codes(&d), [Code::IncludeArgument]);
}

#[test]
fn the_file_loader_stays_in_the_trees_directory() {
    let dir = std::env::temp_dir().join(format!("aido-include-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("trees")).unwrap();
    std::fs::write(dir.join("secret.edn"), "[:success]").unwrap();
    std::fs::write(
        dir.join("trees/up.edn"),
        r#"[:include {:file "../secret.edn"}]"#,
    )
    .unwrap();
    std::fs::write(
        dir.join("trees/abs.edn"),
        r#"[:include {:file "/etc/hosts"}]"#,
    )
    .unwrap();
    for name in ["up.edn", "abs.edn"] {
        let Err(aido::compile::CompileFileError::Compile(d)) =
            compile_file(dir.join("trees").join(name), &Registry::new())
        else {
            panic!("expected the include to be refused");
        };
        assert_eq!(codes(&d), [Code::IncludeFile], "{name}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn state_follows_a_node_inside_an_included_file_that_changed() {
    let v1 = Files::new(&[(
        "lib.edn",
        "[:sequence [:wait {:ticks 3}] [:inc! {:key :done}]]",
    )]);
    let v2 = Files::new(&[(
        "lib.edn",
        "[:sequence [:inc! {:key :before}] [:wait {:ticks 3}] [:inc! {:key :done}]]",
    )]);
    let main = r#"[:sequence [:include {:file "lib.edn" :as :lib}]]"#;
    let old = compile_mem(main, &v1).unwrap();
    let new = compile_mem(main, &v2).unwrap();
    let mut db = Value::map();
    for _ in 0..3 {
        let tick = run_tick(db, &old);
        assert_eq!(tick.status, Status::Running);
        db = tick.db;
    }
    // The wait has run 3 ticks of 3: in the changed file it goes on.
    let (db, _) = aido::migrate::migrate(db, &old, &new);
    let tick = run_tick(db, &new);
    assert_eq!(tick.status, Status::Success);
    assert_eq!(without_aido(&tick.db), "{:before 1, :done 1}");
}

#[test]
fn a_reload_carries_state_into_an_included_file_that_changed() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/include/reload");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_aido"))
        .arg("run")
        .arg(dir.join("v1.edn"))
        .args(["--ticks", "4", "--reload"])
        .arg(format!("4={}", dir.join("v2.edn").display()))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    let last = read_value(stdout.lines().last().unwrap()).unwrap();
    let get = |v: &Value, k: &str| {
        v.as_map()
            .unwrap()
            .get(&Value::keyword(k))
            .cloned()
            .unwrap()
    };
    // The wait ran 3 ticks in v1's part; in the changed part it moved to
    // second place, kept its count and finishes on tick 4.
    assert_eq!(get(&last, "status"), Value::keyword("success"));
    assert_eq!(
        get(&get(&last, "reload"), "kept").to_string(),
        r#"[["errand.0" "errand.1"] "0" :errand]"#
    );
    assert_eq!(without_aido(&get(&last, "db")), "{:before 1, :done 1}");
}

#[test]
fn a_trim_reaches_a_node_inside_an_include_and_keeps_its_state() {
    let files = Files::new(&[(
        "patrol.edn",
        "[:sequence {:aido/params {:post {:type :keyword}}}
          [:wait {:id :pause :ticks 3}]
          [:define! {:id :arrive :key :at :val [:aido/arg :post]}]]",
    )]);
    let registry = Registry::new();
    let mut tree = compile_mem(
        r#"[:sequence {:memory true}
            [:include {:file "patrol.edn" :as :gate :args {:post :gate}}]
            [:include {:file "patrol.edn" :as :wall :args {:post :wall}}]]"#,
        &files,
    )
    .unwrap();
    let mut db = Value::map();
    for _ in 0..2 {
        db = run_tick(db, &tree).db;
    }
    // Replace what the gate's use does on arrival; its wait keeps counting.
    let task = read_value(
        r#"{:task :louder, :target "gate/arrive", :replace [:define! {:key :at :val :gate-loudly}]}"#,
    )
    .unwrap();
    let mut trimmer = aido::trim::Trimmer::new();
    trimmer.push(Box::new(aido::trim::DataTask::from_value(&task).unwrap()));
    let gap = trimmer.between_ticks(2, db, &tree, &registry);
    assert_eq!(gap.reports[0].outcome, aido::trim::TrimOutcome::Applied);
    tree = gap.tree.unwrap();
    let tick = run_tick(gap.db, &tree);
    assert_eq!(tick.status, Status::Running);
    let tick = run_tick(tick.db, &tree);
    // The gate's wait finished on its fourth tick: the trim kept its count.
    assert_eq!(without_aido(&tick.db), "{:at :gate-loudly}");
}

#[test]
fn aido_check_reports_an_included_files_problems_once() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_aido"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args([
            "check",
            "tests/data/include/check/a.edn",
            "tests/data/include/check/b.edn",
            "tests/data/include/check/warned.edn",
        ])
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = format!(
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        text.matches("unknown node type `:jump!`").count(),
        1,
        "{text}"
    );
    snap(text);
}

#[test]
fn a_stub_reaches_a_node_type_used_only_inside_an_included_file() {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/include/stubbed/watch.test.edn");
    let scenario = aido::scenario::Scenario::load(&path, &Registry::new()).unwrap();
    let run = scenario.run();
    assert_eq!(run.check(&scenario.expect), []);
    assert!(!scenario.expect.is_empty());
}

#[test]
fn the_run_record_and_the_page_know_each_nodes_file() {
    use aido::record::{PageOptions, Recorder, page};
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/guard/guard.edn");
    let tree = compile_file(&path, &Registry::new()).unwrap();
    let mut recorder = Recorder::new(&tree, &Value::map());
    let _ = recorder.tick(Value::map(), &tree);
    let run = recorder.finish();
    let shape = &run.trees[0];
    let names: Vec<String> = shape
        .files
        .iter()
        .map(|f| f.name().rsplit('/').next().unwrap().to_owned())
        .collect();
    assert_eq!(names, ["guard.edn", "flee.edn", "when.edn", "patrol.edn"]);
    let pause = shape.find(&Value::string("gate/pause")).unwrap();
    let node = &shape.nodes[pause];
    assert_eq!((node.file, node.line), (3, Some(7)));
    // The page carries every file's text and each node's file, and the
    // node's span indexes its own file's text.
    let html = page(&run, &PageOptions::default());
    let open = "<script type=\"application/json\" id=\"run-data\">";
    let start = html.find(open).unwrap() + open.len();
    let end = start + html[start..].find("</script>").unwrap();
    let data: serde_json::Value = serde_json::from_str(&html[start..end]).unwrap();
    let tree_data = &data["trees"][0];
    let files = tree_data["files"].as_array().unwrap();
    assert_eq!(files.len(), 4);
    let n = &tree_data["nodes"][pause];
    assert_eq!(n[8], 3);
    let text: Vec<u16> = files[3][1].as_str().unwrap().encode_utf16().collect();
    let (from, to) = (
        n[6].as_u64().unwrap() as usize,
        n[7].as_u64().unwrap() as usize,
    );
    assert_eq!(
        String::from_utf16(&text[from..to]).unwrap(),
        "[:wait {:id :pause :ticks [:aido/arg :pause]}]"
    );
}

#[test]
fn a_tick_error_inside_an_included_file_names_it() {
    let files = Files::new(&[(
        "part.edn",
        "[:sequence\n [:loop {:count [:aido/db :n]} [:success]]]",
    )]);
    let tree = compile_mem(r#"[:selector [:include {:file "part.edn"}]]"#, &files).unwrap();
    let tick = run_tick(read_value(r#"{:n "many"}"#).unwrap(), &tree);
    assert_eq!(tick.status, Status::Error);
    let error = tick.error.unwrap();
    assert_eq!(error.file.as_deref(), Some("part.edn"));
    assert_eq!(error.location.map(|at| (at.line, at.column)), Some((2, 2)));
    assert!(error.to_string().contains("at part.edn:2:2"), "{error}");
}

#[test]
fn the_outline_names_the_file_of_included_nodes() {
    let files = Files::new(&[("part.edn", "[:sequence\n [:success]]")]);
    let tree = compile_mem(
        "[:selector\n [:include {:file \"part.edn\" :as :p}]]",
        &files,
    )
    .unwrap();
    assert_eq!(
        aido::record::outline(&tree),
        ":selector \"0\"  ; line 1\n  :sequence :p  ; part.edn line 1\n    :success \"p.0\"  ; part.edn line 2\n"
    );
}
