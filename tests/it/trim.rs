//! Changing a tree while it runs: trimming between ticks, migrating a db to
//! another version of its tree, and the fingerprint that makes a tick carry
//! a db over by itself.
#![allow(clippy::panic, clippy::expect_used, clippy::unwrap_used)]

use std::sync::Arc;

#[cfg(feature = "rayon")]
use aido::batch::tick_all;
use aido::{
    Registry, Status, Tree, Value, compile_str,
    diag::Code,
    migrate::migrate,
    read_value, run_tick,
    runner::{PlayMode, Runner},
    trim::{DataTask, TreeSnapshot, TrimOutcome, TrimRequest, TrimTask, Trimmer},
};

fn tree(src: &str) -> Tree {
    compile_str("t.edn", src, &Registry::new()).unwrap_or_else(|d| panic!("{}", d.render()))
}

fn db(src: &str) -> Value {
    read_value(src).unwrap()
}

fn task(src: &str) -> Box<dyn TrimTask> {
    Box::new(DataTask::from_value(&db(src)).unwrap())
}

/// The db printed without its `:aido/tree` fingerprint.
fn shown(db: &Value) -> String {
    let mut db = db.clone();
    if let Some(m) = db.as_map_mut() {
        m.shift_remove(&Value::keyword("aido/tree"));
    }
    db.to_string()
}

/// Ticks, then works through the trimmer, `ticks` times; returns the
/// outcomes of each gap (as `[task outcome]` pairs) and the final state.
struct Run {
    tree: Tree,
    db: Value,
    trimmer: Trimmer,
    ticks: u64,
}

impl Run {
    fn new(src: &str, start: &str) -> Run {
        Run {
            tree: tree(src),
            db: db(start),
            trimmer: Trimmer::new(),
            ticks: 0,
        }
    }

    fn tick(&mut self) -> Status {
        let t = run_tick(std::mem::take(&mut self.db), &self.tree);
        assert!(t.error.is_none(), "{:?}", t.error);
        self.db = t.db;
        self.ticks += 1;
        t.status
    }

    /// One gap: the outcome of each task looked at, with its reason.
    fn gap(&mut self) -> Vec<(String, TrimOutcome, Option<String>)> {
        let gap = self.trimmer.between_ticks(
            self.ticks,
            std::mem::take(&mut self.db),
            &self.tree,
            &Registry::new(),
        );
        self.db = gap.db;
        if let Some(t) = gap.tree {
            self.tree = t;
        }
        gap.reports
            .into_iter()
            .map(|r| (r.task.to_string(), r.outcome, r.reason))
            .collect()
    }

    fn outcomes(&mut self) -> Vec<(String, TrimOutcome)> {
        self.gap().into_iter().map(|(t, o, _)| (t, o)).collect()
    }
}

use TrimOutcome::{Applied, Deferred, Rejected};

fn o(task: &str, outcome: TrimOutcome) -> (String, TrimOutcome) {
    (task.to_owned(), outcome)
}

#[test]
fn a_change_to_a_running_node_is_deferred_and_applied_in_the_first_gap_after_it_stops() {
    let mut run = Run::new(
        "[:sequence [:wait {:id :walk :ticks 2}] [:inc! {:id :arrive :key :n}]]",
        "{}",
    );
    run.trimmer.push(task(
        "{:task :run, :target :walk, :replace [:inc! {:key :ran}]}",
    ));
    assert_eq!(run.tick(), Status::Running);
    let gap = run.gap();
    assert_eq!(gap.len(), 1);
    assert_eq!(gap[0].1, Deferred);
    assert_eq!(gap[0].2.as_deref(), Some("node :walk is running"));
    assert_eq!(run.tick(), Status::Running);
    assert_eq!(run.outcomes(), vec![o(":run", Deferred)]);
    // The wait finishes in the third tick; the next gap applies the change.
    assert_eq!(run.tick(), Status::Success);
    assert_eq!(run.outcomes(), vec![o(":run", Applied)]);
    assert_eq!(run.tick(), Status::Success);
    assert_eq!(shown(&run.db), "{:n 2, :ran 1}");
    assert!(run.trimmer.is_empty());
}

#[test]
fn the_root_cannot_be_replaced_or_removed() {
    let mut run = Run::new("[:sequence {:id :top} [:success]]", "{}");
    run.trimmer
        .push(task("{:task :a, :target :top, :replace [:failure]}"));
    run.trimmer
        .push(task("{:task :b, :target :top, :remove true}"));
    run.tick();
    let gap = run.gap();
    assert_eq!(
        gap.iter().map(|g| g.1).collect::<Vec<_>>(),
        vec![Rejected, Rejected]
    );
    assert_eq!(gap[0].2.as_deref(), Some("a trim cannot replace the root"));
    assert_eq!(gap[1].2.as_deref(), Some("a trim cannot remove the root"));
    assert!(run.trimmer.is_empty());
}

#[test]
fn a_change_that_does_not_compile_is_rejected_with_its_diagnostics() {
    let t = tree("[:sequence [:success {:id :a}] [:success {:id :b}]]");
    let registry = Registry::new();
    for (change, code) in [
        (
            "{:task :x, :target :a, :replace [:no-such-node]}",
            Code::UnknownNodeType,
        ),
        ("{:task :x, :target :a, :replace [:invert]}", Code::Arity),
        (
            "{:task :x, :target :a, :replace [:failure {:id :b}]}",
            Code::DuplicateId,
        ),
    ] {
        let mut trimmer = Trimmer::new();
        trimmer.push(task(change));
        let gap = trimmer.between_ticks(1, Value::map(), &t, &registry);
        assert!(gap.tree.is_none());
        let report = &gap.reports[0];
        assert_eq!(report.outcome, Rejected, "{change}");
        let diags = report.diagnostics.as_ref().expect("diagnostics");
        assert_eq!(diags.items[0].code, code, "{change}");
        assert!(report.reason.as_deref().is_some_and(|r| !r.is_empty()));
    }
}

#[test]
fn a_target_that_does_not_exist_is_rejected() {
    let mut run = Run::new("[:sequence [:success]]", "{}");
    run.trimmer
        .push(task("{:task :x, :target :nope, :remove true}"));
    run.tick();
    assert_eq!(run.outcomes(), vec![o(":x", Rejected)]);
}

#[test]
fn at_most_one_task_is_applied_per_gap_and_the_rest_keep_their_order() {
    let mut run = Run::new("[:sequence {:id :s} [:inc! {:key :a}]]", "{}");
    for name in ["one", "two", "three"] {
        run.trimmer.push(task(&format!(
            "{{:task :{name}, :target :s, :insert [:inc! {{:key :{name}}}], :at 1}}"
        )));
    }
    run.tick();
    assert_eq!(run.outcomes(), vec![o(":one", Applied)]);
    assert_eq!(run.trimmer.len(), 2);
    run.tick();
    assert_eq!(run.outcomes(), vec![o(":two", Applied)]);
    run.tick();
    assert_eq!(run.outcomes(), vec![o(":three", Applied)]);
    run.tick();
    // Each insert went in at 1, so the last one runs first.
    assert_eq!(shown(&run.db), "{:a 4, :one 3, :two 2, :three 1}");
}

#[test]
fn deferred_and_rejected_tasks_let_the_next_one_be_looked_at_in_the_same_gap() {
    let mut run = Run::new("[:sequence {:id :s} [:inc! {:key :a}]]", "{}");
    run.trimmer.push(task(
        "{:task :later, :target :s, :not-before 9, :remove true}",
    ));
    run.trimmer
        .push(task("{:task :bad, :target :missing, :remove true}"));
    run.trimmer.push(task(
        "{:task :good, :target :s, :insert [:inc! {:key :b}], :at 0}",
    ));
    run.trimmer.push(task(
        "{:task :next, :target :s, :insert [:inc! {:key :c}], :at 0}",
    ));
    run.tick();
    assert_eq!(
        run.outcomes(),
        vec![
            o(":later", Deferred),
            o(":bad", Rejected),
            o(":good", Applied)
        ]
    );
    // `next` was not reached and stays ahead of the deferred `later`.
    run.tick();
    assert_eq!(run.outcomes(), vec![o(":next", Applied)]);
    run.tick();
    // Each task is looked at at most once per gap.
    assert_eq!(run.outcomes(), vec![o(":later", Deferred)]);
}

#[test]
fn not_before_waits_until_that_many_ticks_have_run() {
    let mut run = Run::new("[:sequence {:id :s} [:inc! {:key :a}]]", "{}");
    run.trimmer.push(task(
        "{:task :t, :target :s, :not-before 3, :insert [:inc! {:key :b}], :at 0}",
    ));
    for _ in 0..2 {
        run.tick();
        let gap = run.gap();
        assert_eq!(gap[0].1, Deferred);
        assert!(
            gap[0]
                .2
                .as_deref()
                .unwrap()
                .starts_with("waits until 3 ticks")
        );
    }
    run.tick();
    assert_eq!(run.outcomes(), vec![o(":t", Applied)]);
}

#[test]
fn undo_restores_what_a_task_replaced() {
    let mut run = Run::new("[:sequence [:inc! {:id :pick :key :picks}]]", "{}");
    run.trimmer.push(task(
        "{:task :split, :target :pick,
          :replace [:sequence {:id :complex} [:inc! {:key :checks}] [:inc! {:key :picks}]]}",
    ));
    run.trimmer.push(task("{:task :back, :undo :split}"));
    run.tick();
    assert_eq!(run.outcomes(), vec![o(":split", Applied)]);
    run.tick();
    assert_eq!(run.outcomes(), vec![o(":back", Applied)]);
    run.tick();
    assert_eq!(shown(&run.db), "{:picks 3, :checks 1}");
    assert_eq!(
        run.tree.form().to_string(),
        "[:sequence [:inc! {:id :pick, :key :picks}]]"
    );
    run.trimmer
        .push(task("{:task :again, :undo :nothing-like-it}"));
    assert_eq!(run.outcomes(), vec![o(":again", Rejected)]);
}

#[test]
fn memory_that_names_children_by_position_follows_reordered_children() {
    // :choose-each remembers which children are left this round, by position.
    let mut run = Run::new(
        "[:choose-each {:id :pick-one}
           [:define! {:key :said :val :a}] [:define! {:key :said :val :b}] [:define! {:key :said :val :c}]]",
        "{:aido/seed 7}",
    );
    run.tick();
    let said = run.db.get(&Value::keyword("said")).unwrap().clone();
    let memory = |db: &Value| {
        db.get(&Value::keyword("aido/memory"))
            .and_then(|m| m.get(&Value::keyword("pick-one")))
            .cloned()
            .unwrap()
    };
    let before = memory(&run.db);
    run.trimmer
        .push(task("{:task :rev, :target :pick-one, :reorder [2 1 0]}"));
    assert_eq!(run.outcomes(), vec![o(":rev", Applied)]);
    // The pool names the same children at their new positions.
    let moved: Vec<i64> = before
        .get(&Value::keyword("pool"))
        .unwrap()
        .as_seq()
        .unwrap()
        .iter()
        .map(|i| 2 - i.as_int().unwrap())
        .collect();
    let after = memory(&run.db);
    let pool: Vec<i64> = after
        .get(&Value::keyword("pool"))
        .unwrap()
        .as_seq()
        .unwrap()
        .iter()
        .map(|i| i.as_int().unwrap())
        .collect();
    assert_eq!(pool, moved);
    // The two ticks left in the round say the two others.
    let mut all = vec![said];
    for _ in 0..2 {
        run.tick();
        all.push(run.db.get(&Value::keyword("said")).unwrap().clone());
    }
    all.sort_by_key(Value::to_string);
    assert_eq!(Value::Vector(all.into()).to_string(), "[:a :b :c]");
}

#[test]
fn a_memory_sequence_resumes_at_its_running_child_after_a_reorder_by_reload() {
    let old =
        tree("[:sequence {:memory true} [:inc! {:key :a}] [:inc! {:key :b}] [:wait {:ticks 2}]]");
    let new =
        tree("[:sequence {:memory true} [:wait {:ticks 2}] [:inc! {:key :a}] [:inc! {:key :b}]]");
    let t = run_tick(Value::map(), &old);
    assert_eq!(t.status, Status::Running);
    let (db, report) = migrate(t.db, &old, &new);
    assert!(report.dropped.is_empty(), "{report:?}");
    assert_eq!(
        shown(&db),
        "{:a 1, :b 1, :aido/memory {\"0.0\" {:ticks 1}}, :aido/running [\"0\" \"0.0\"]}"
    );
    let t = run_tick(db, &new);
    assert_eq!(t.status, Status::Running);
    let t = run_tick(t.db, &new);
    // The wait finished, then a and b ran again: the sequence went on from
    // the wait, not from its old position.
    assert_eq!(t.status, Status::Success);
    assert_eq!(shown(&t.db), "{:a 2, :b 2}");
}

#[test]
fn a_memory_sequence_resumes_at_the_right_child_after_an_insertion() {
    let src =
        "[:sequence {:id :s :memory true} [:inc! {:key :a}] [:wait {:ticks 2}] [:inc! {:key :b}]]";
    // By a trim, the insertion waits until the sequence no longer runs
    // (seed 002: a change to a node's children replaces the node).
    let mut run = Run::new(src, "{}");
    assert_eq!(run.tick(), Status::Running);
    run.trimmer.push(task(
        "{:task :x, :target :s, :insert [:inc! {:key :x}], :at 0}",
    ));
    assert_eq!(run.outcomes(), vec![o(":x", Deferred)]);
    assert_eq!(run.tick(), Status::Running);
    assert_eq!(run.outcomes(), vec![o(":x", Deferred)]);
    assert_eq!(run.tick(), Status::Success);
    assert_eq!(run.outcomes(), vec![o(":x", Applied)]);
    // A fresh round runs the inserted node first, then waits at its third child.
    assert_eq!(run.tick(), Status::Running);
    assert_eq!(
        shown(&run.db),
        "{:a 2, :b 1, :x 1, :aido/memory {\"s.2\" {:ticks 1}, :s {:index 2}}, :aido/running [:s \"s.2\"]}"
    );

    // By a new version of the tree (derived ids all shift by one).
    let old = tree(src);
    let new = tree(
        "[:sequence {:id :s :memory true} [:inc! {:key :x}] [:inc! {:key :a}] [:wait {:ticks 2}] [:inc! {:key :b}]]",
    );
    let t = run_tick(Value::map(), &old);
    let (db, _) = migrate(t.db, &old, &new);
    let t = run_tick(run_tick(db, &new).db, &new);
    assert_eq!(t.status, Status::Success);
    assert_eq!(shown(&t.db), "{:a 1, :b 1}");
}

/// Seed 003: the edit stage adapts stored states, and a memory sequence at
/// its first child stores none (index 0 is the default): that child is
/// followed all the same, so a node inserted before it is not run.
#[test]
fn a_memory_sequence_at_its_first_child_resumes_there_after_an_insertion() {
    let old = tree("[:sequence {:id :s :memory true} [:wait {:ticks 2}] [:inc! {:key :b}]]");
    let new = tree(
        "[:sequence {:id :s :memory true} [:inc! {:key :x}] [:wait {:ticks 2}] [:inc! {:key :b}]]",
    );
    let t = run_tick(Value::map(), &old);
    assert_eq!(t.status, Status::Running);
    assert_eq!(
        shown(&t.db),
        "{:aido/memory {\"s.0\" {:ticks 1}}, :aido/running [:s \"s.0\"]}"
    );
    let (db, report) = migrate(t.db, &old, &new);
    assert!(report.dropped.is_empty(), "{report:?}");
    assert_eq!(
        shown(&db),
        "{:aido/memory {\"s.1\" {:ticks 1}, :s {:index 1}}, :aido/running [:s \"s.1\"]}"
    );
    let t = run_tick(db, &new);
    assert_eq!(t.status, Status::Running);
    let t = run_tick(t.db, &new);
    assert_eq!(t.status, Status::Success);
    // The wait went on and finished, then :b ran; :x never did.
    assert_eq!(shown(&t.db), "{:b 1}");
}

/// Seed 003: completions are collected first, then the edit stage adapts
/// the stored states. A completion written under a `:defer`'s old id
/// follows the node to its new id and is taken by the next tick.
#[test]
fn a_completion_written_before_an_edit_follows_its_node() {
    let old = tree("[:sequence {:id :s} [:defer {:action :x/go}] [:inc! {:key :after}]]");
    let new =
        tree("[:sequence {:id :s} [:success] [:defer {:action :x/go}] [:inc! {:key :after}]]");
    let t = run_tick(Value::map(), &old);
    assert_eq!(t.status, Status::Running);
    assert_eq!(t.launches()[0].node, Value::string("s.0"));
    let mut db = t.db;
    db.as_map_mut().unwrap().insert(
        Value::keyword("aido/results"),
        read_value("{\"s.0\" {:request 1, :status :success}}").unwrap(),
    );
    let (db, report) = migrate(db, &old, &new);
    assert!(report.dropped_results.is_empty(), "{report:?}");
    assert_eq!(
        db.get(&Value::keyword("aido/results")),
        Some(&read_value("{\"s.1\" {:request 1, :status :success}}").unwrap())
    );
    let t = run_tick(db, &new);
    assert!(t.dropped().is_empty(), "{:?}", t.dropped());
    assert_eq!(t.status, Status::Success);
    assert_eq!(shown(&t.db), "{:aido/requests 1, :after 1}");
}

/// A completion for a node that is gone stays under its id for the next
/// tick to drop and report; if a completion that moved now takes that id,
/// the migration reports it dropped instead of losing it.
#[test]
fn a_completion_for_a_node_that_is_gone_is_reported_not_lost() {
    let old = tree(
        "[:parallel {:id :p :policy :sequence} [:defer {:action :x/a}] [:defer {:action :x/b}]]",
    );
    let new = tree("[:parallel {:id :p :policy :sequence} [:defer {:action :x/b}]]");
    let t = run_tick(Value::map(), &old);
    assert_eq!(t.launches().len(), 2);
    let mut db = t.db;
    db.as_map_mut().unwrap().insert(
        Value::keyword("aido/results"),
        read_value(
            "{\"p.0\" {:request 1, :status :success}, \"p.1\" {:request 2, :status :success}}",
        )
        .unwrap(),
    );
    let (db, report) = migrate(db, &old, &new);
    // :x/a's node is gone (halted, cancelled); :x/b's moved from p.1 to p.0.
    assert_eq!(report.cancels.len(), 1);
    assert_eq!(
        db.get(&Value::keyword("aido/results")),
        Some(&read_value("{\"p.0\" {:request 2, :status :success}}").unwrap())
    );
    assert_eq!(report.dropped_results.len(), 1);
    assert_eq!(report.dropped_results[0].node, Value::string("p.0"));
    assert_eq!(
        report.dropped_results[0].completion,
        read_value("{:request 1, :status :success}").unwrap()
    );
    assert_eq!(
        report.to_value().get(&Value::keyword("dropped-results")),
        Some(&read_value("[{:node \"p.0\", :reason :not-in-flight, :completion {:request 1, :status :success}}]").unwrap())
    );
    assert_eq!(run_tick(db, &new).status, Status::Success);
}

#[test]
fn a_renamed_id_keeps_its_state_and_never_ends_in_error() {
    let old = tree("[:sequence [:inc! {:key :n}] [:wait {:id :walk :ticks 3}]]");
    let new = tree("[:sequence [:inc! {:key :n}] [:wait {:id :stroll :ticks 3}]]");
    let saved = run_tick(Value::map(), &old).db;
    // Knowing both trees: the wait is matched by place and keeps its count.
    let (db, report) = migrate(saved.clone(), &old, &new);
    assert!(
        report
            .kept
            .iter()
            .any(|k| k.id == Value::keyword("walk") && k.new_id == Some(Value::keyword("stroll")))
    );
    assert_eq!(
        shown(&db),
        "{:n 1, :aido/memory {:stroll {:ticks 1}}, :aido/running [\"0\" :stroll]}"
    );
    // Knowing only the new tree: the tick sees another fingerprint, carries
    // the db over by id first and says so; the gone node's state is dropped.
    let t = run_tick(saved, &new);
    assert_ne!(t.status, Status::Error);
    let m = t.migration().expect("the tick carried the db over");
    assert_eq!(m.halted[0].id, Value::keyword("walk"));
    assert_eq!(m.dropped[0].id, Value::keyword("walk"));
    assert_eq!(
        t.db.get(&Value::keyword("aido/tree")),
        Some(&Value::Int(new.fingerprint()))
    );
    // And the next tick has nothing to carry over.
    assert!(run_tick(t.db, &new).migration().is_none());
}

#[test]
fn a_db_records_the_fingerprint_of_the_tree_it_keeps_state_for() {
    let t = tree("[:wait {:ticks 2}]");
    let db = run_tick(Value::map(), &t).db;
    assert_eq!(
        db.get(&Value::keyword("aido/tree")),
        Some(&Value::Int(t.fingerprint()))
    );
    // A stateless tree leaves the db as it was.
    let plain = tree("[:inc! {:key :n}]");
    assert_eq!(run_tick(Value::map(), &plain).db.to_string(), "{:n 1}");
    // The fingerprint is of the tree's data: the same text, the same print.
    assert_eq!(tree("[:wait {:ticks 2}]").fingerprint(), t.fingerprint());
    assert_ne!(tree("[:wait {:ticks 3}]").fingerprint(), t.fingerprint());
}

#[test]
fn a_rust_task_sees_a_snapshot_and_may_skip_reject_or_attempt() {
    struct Breaker;
    impl TrimTask for Breaker {
        fn name(&self) -> Value {
            Value::keyword("breaker")
        }
        fn process(&mut self, snapshot: &TreeSnapshot<'_>) -> TrimRequest {
            if snapshot.tick < 2 {
                return TrimRequest::Skip("still measuring".to_owned());
            }
            match snapshot.tree.find(&Value::keyword("pick")) {
                Some(_) if snapshot.running.is_empty() => {
                    TrimRequest::Attempt(aido::trim::TrimChange::Replace {
                        target: Value::keyword("pick"),
                        with: read_value(
                            "[:sequence [:inc! {:key :checked}] [:inc! {:key :picked}]]",
                        )
                        .unwrap(),
                    })
                }
                Some(_) => TrimRequest::Skip("busy".to_owned()),
                None => TrimRequest::Reject("no pick".to_owned()),
            }
        }
    }
    let mut runner = Runner::load(
        Arc::new(tree("[:sequence [:inc! {:id :pick :key :picked}]]")),
        Value::map(),
    );
    runner.trim(Box::new(Breaker));
    runner.play(PlayMode::StopByExecuteLoopCount, 4).unwrap();
    let mut seen = Vec::new();
    while runner.update().unwrap().is_some() {
        seen.push(runner.trims().iter().map(|r| r.outcome).collect::<Vec<_>>());
    }
    assert_eq!(
        seen,
        vec![vec![Deferred], vec![Deferred], vec![Applied], vec![]]
    );
    assert_eq!(shown(runner.db()), "{:picked 4, :checked 2}");
}

#[test]
fn runner_reload_swaps_the_tree_between_ticks() {
    let old = Arc::new(tree(
        "[:sequence {:memory true} [:inc! {:key :a}] [:wait {:id :w :ticks 3}]]",
    ));
    let new = Arc::new(tree(
        "[:sequence {:memory true} [:inc! {:key :z}] [:inc! {:key :a}] [:wait {:id :w :ticks 3}]]",
    ));
    let mut runner = Runner::load(old, Value::map());
    runner.play(PlayMode::StopByExecuteLoopCount, 10).unwrap();
    runner.update().unwrap();
    let report = runner.reload(new);
    assert!(report.dropped.is_empty());
    assert!(report.kept.iter().any(|k| k.id == Value::keyword("w")));
    runner.update().unwrap();
    runner.update().unwrap();
    assert_eq!(runner.db().get(&Value::keyword("z")), None);
    assert_eq!(runner.db().get(&Value::keyword("a")), Some(&Value::Int(1)));
}

#[test]
#[cfg(feature = "rayon")]
fn every_agent_is_carried_over_when_first_ticked_with_a_new_tree() {
    let old = tree("[:sequence [:inc! {:key :n}] [:wait {:id :walk :ticks 5}]]");
    let new = tree("[:sequence [:inc! {:key :n}] [:wait {:id :stroll :ticks 5}]]");
    let mut dbs = vec![Value::map(); 200];
    tick_all(&old, &mut dbs);
    // Agents that keep the old tree are not disturbed.
    let mut old_ones = dbs[..100].to_vec();
    let statuses = tick_all(&old, &mut old_ones);
    assert!(statuses.iter().all(|s| s.status == Status::Running));
    assert!(
        old_ones
            .iter()
            .all(|db| shown(db).contains(":walk {:ticks 2}"))
    );
    // The others move to the new tree: each db is carried over once.
    let mut new_ones = dbs[100..].to_vec();
    let statuses = tick_all(&new, &mut new_ones);
    assert!(statuses.iter().all(|s| s.status == Status::Running));
    for db in &new_ones {
        assert_eq!(
            db.get(&Value::keyword("aido/tree")),
            Some(&Value::Int(new.fingerprint()))
        );
        assert_eq!(
            shown(db),
            "{:n 2, :aido/running [\"0\" :stroll], :aido/memory {:stroll {:ticks 1}}}"
        );
    }
}

/// The Rust example of the README's "Changing trees at run time" is the
/// module example of `aido::trim`, which `cargo test` runs as a doc test.
#[test]
fn the_readme_shows_the_doc_tested_trimming_example() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let source = std::fs::read_to_string(root.join("src/trim.rs")).unwrap();
    let doc: Vec<&str> = source
        .lines()
        .take_while(|l| l.starts_with("//!"))
        .map(|l| {
            l.strip_prefix("//! ")
                .unwrap_or(l.trim_start_matches("//!"))
        })
        .skip_while(|l| !l.starts_with("```"))
        .skip(1)
        .take_while(|l| !l.starts_with("```"))
        .filter(|l| !l.starts_with("# "))
        .collect();
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let section = readme
        .split("## Changing trees at run time")
        .nth(1)
        .expect("the README has the section");
    let block: Vec<&str> = section
        .lines()
        .skip_while(|l| *l != "```rust")
        .skip(1)
        .take_while(|l| *l != "```")
        .collect();
    assert!(!doc.is_empty());
    assert_eq!(block, doc);
}

#[test]
fn a_running_node_that_is_gone_is_halted_with_its_cancel_request() {
    let old = tree(
        "[:sequence {:id :answer} [:defer {:id :ask :action :llm/ask :prompt \"hi\"}] [:inc! {:key :n}]]",
    );
    let new = tree("[:sequence {:id :answer} [:inc! {:key :n}]]");
    let t = run_tick(Value::map(), &old);
    assert_eq!(t.status, Status::Running);
    assert_eq!(t.launches().len(), 1);
    let (db, report) = migrate(t.db, &old, &new);
    assert_eq!(report.halted.len(), 1);
    assert_eq!(report.halted[0].id, Value::keyword("ask"));
    assert_eq!(
        report.halted[0].node_type,
        aido::value::Keyword::new("defer")
    );
    assert_eq!(report.cancels.len(), 1);
    assert_eq!(report.cancels[0].node, Value::keyword("ask"));
    // Nothing of the halted node is left (the request counter stays, so ids
    // are not handed out twice); the sequence is still running.
    assert_eq!(shown(&db), "{:aido/requests 1, :aido/running [:answer]}");
    let t = run_tick(db, &new);
    assert_eq!(t.status, Status::Success);
    assert_eq!(shown(&t.db), "{:aido/requests 1, :n 1}");
}

#[test]
fn the_memory_of_a_node_that_changed_type_is_dropped() {
    let old = tree("[:sequence [:success] [:wait {:ticks 3}]]");
    let new = tree("[:sequence [:success] [:inc! {:key :n}]]");
    let t = run_tick(Value::map(), &old);
    let (db, report) = migrate(t.db, &old, &new);
    // The wait was running: it is halted (which clears its memory).
    assert_eq!(report.halted.len(), 1);
    assert_eq!(report.halted[0].id, Value::string("0.1"));
    assert_eq!(
        report.halted[0].node_type,
        aido::value::Keyword::new("wait")
    );
    assert_eq!(shown(&db), "{:aido/running [\"0\"]}");
    let t = run_tick(db, &new);
    assert_eq!(
        (t.status, shown(&t.db)),
        (Status::Success, "{:n 1}".to_owned())
    );
    // Memory of a node that is not running is dropped.
    let old = tree("[:sequence [:choose-each [:success] [:success]] [:wait {:ticks 3}]]");
    let new = tree("[:sequence [:choose [:success] [:success]] [:wait {:ticks 3}]]");
    let t = run_tick(read_value("{:aido/seed 1}").unwrap(), &old);
    assert!(shown(&t.db).contains("\"0.0\" {:pool"));
    let (db, report) = migrate(t.db, &old, &new);
    assert_eq!(report.dropped.len(), 1);
    assert_eq!(report.dropped[0].id, Value::string("0.0"));
    assert_eq!(
        report.dropped[0].node_type,
        aido::value::Keyword::new("choose-each")
    );
    assert!(!shown(&db).contains(":pool"));
    // The wait kept its count.
    assert!(shown(&db).contains("\"0.1\" {:ticks 1}"));
}

#[test]
fn a_tick_with_another_tree_keeps_memory_only_where_it_fits_the_node_now_there() {
    let old = tree("[:sequence [:wait {:ticks 3}] [:success]]");
    let new = tree("[:sequence [:defer {:action :x}] [:success]]");
    let saved = run_tick(Value::map(), &old).db;
    // "0.0" was a wait and is a deferred action now: the wait's count is no
    // state of a deferred action, so it is dropped, not misread.
    let t = run_tick(saved, &new);
    assert_eq!(t.status, Status::Running, "{:?}", t.error);
    let m = t.migration().unwrap();
    assert_eq!(m.dropped[0].id, Value::string("0.0"));
    assert_eq!(t.launches().len(), 1);
}

/// `aido check` warns about nodes that keep state without an explicit `:id`:
/// a loop, a reactive sequence or a random decider keeps memory only over a
/// child that can run long, so only then is it listed.
#[test]
fn state_without_id_lists_composites_that_remember_a_running_child() {
    let t = tree(
        "[:selector {:id :root}
           [:sequence [:inc! {:key :a}] [:wait {:id :w :ticks 1}]]
           [:sequence [:inc! {:key :b}] [:inc! {:key :c}]]
           [:loop {:count 2} [:wait {:id :w2 :ticks 1}]]
           [:loop {:count 2} [:inc! {:key :d}]]
           [:choose [:wait {:id :w3 :ticks 1}] [:success]]
           [:choose [:success] [:failure]]]",
    );
    let listed: Vec<String> = aido::migrate::state_without_id(&t)
        .into_iter()
        .map(|n| t.node_id(n).unwrap().to_string())
        .collect();
    assert_eq!(listed, ["\"root.0\"", "\"root.2\"", "\"root.4\""]);
}

#[test]
fn a_task_that_panics_is_rejected_and_the_db_and_queue_stay() {
    struct Bomb;
    impl TrimTask for Bomb {
        fn name(&self) -> Value {
            Value::keyword("bomb")
        }
        fn process(&mut self, _: &TreeSnapshot<'_>) -> TrimRequest {
            panic!("out of cheese")
        }
    }
    let mut runner = Runner::load(
        Arc::new(tree("[:sequence [:inc! {:id :pick :key :picked}]]")),
        Value::map(),
    );
    runner.trim(Box::new(Bomb));
    runner.trim(task(
        "{:task :later, :target :pick, :not-before 5, :remove true}",
    ));
    runner.play(PlayMode::StopByExecuteLoopCount, 2).unwrap();
    runner.update().unwrap();
    let reports: Vec<_> = runner.trims().to_vec();
    assert_eq!(reports.len(), 2, "{reports:?}");
    assert_eq!(reports[0].outcome, Rejected);
    assert!(
        reports[0]
            .reason
            .as_deref()
            .unwrap()
            .contains("out of cheese"),
        "{reports:?}"
    );
    assert_eq!(reports[1].outcome, Deferred);
    assert_eq!(shown(runner.db()), "{:picked 1}");
    runner.update().unwrap();
    assert_eq!(shown(runner.db()), "{:picked 2}");
}

#[test]
fn remove_and_replace_take_only_their_meaning() {
    for text in [
        "{:task :t, :target :pick, :remove false}",
        "{:task :t, :target :pick, :remove nil}",
        "{:task :t, :target :pick, :remove :yes}",
        "{:task :t, :target :pick, :replace nil}",
    ] {
        let e = DataTask::from_value(&db(text)).expect_err(text);
        assert!(
            e.message.contains(":remove") || e.message.contains(":replace"),
            "{text}: {e:?}"
        );
    }
    assert!(DataTask::from_value(&db("{:task :t, :target :pick, :remove true}")).is_ok());
    // A Rust task asking to replace with nil is rejected, not a removal.
    let mut run = Run::new("[:sequence [:inc! {:id :pick :key :picks}]]", "{}");
    struct Nil;
    impl TrimTask for Nil {
        fn name(&self) -> Value {
            Value::keyword("nil")
        }
        fn process(&mut self, _: &TreeSnapshot<'_>) -> TrimRequest {
            TrimRequest::Attempt(aido::trim::TrimChange::Replace {
                target: Value::keyword("pick"),
                with: Value::Nil,
            })
        }
    }
    run.trimmer.push(Box::new(Nil));
    assert_eq!(run.outcomes(), vec![o(":nil", Rejected)]);
    assert_eq!(
        run.tree.form().to_string(),
        "[:sequence [:inc! {:id :pick, :key :picks}]]"
    );
}

#[test]
fn undo_restores_the_node_its_task_changed_wherever_it_moved() {
    let mut run = Run::new(
        "[:sequence [:inc! {:key :a}] [:inc! {:key :b}] [:inc! {:key :c}]]",
        "{}",
    );
    // Replace the second child (derived id "0.1"), then insert in front of it.
    run.trimmer.push(task(
        "{:task :swap, :target \"0.1\", :replace [:inc! {:key :bb}]}",
    ));
    run.trimmer.push(task(
        "{:task :first, :target \"0\", :insert [:inc! {:key :z}], :at 0}",
    ));
    run.trimmer.push(task("{:task :back, :undo :swap}"));
    assert_eq!(run.outcomes(), vec![o(":swap", Applied)]);
    assert_eq!(run.outcomes(), vec![o(":first", Applied)]);
    assert_eq!(run.outcomes(), vec![o(":back", Applied)]);
    assert_eq!(
        run.tree.form().to_string(),
        "[:sequence [:inc! {:key :z}] [:inc! {:key :a}] [:inc! {:key :b}] [:inc! {:key :c}]]"
    );
    // An undo of a removal puts the node back among its siblings.
    let mut run = Run::new(
        "[:sequence [:inc! {:key :a}] [:inc! {:id :gone :key :b}] [:inc! {:key :c}]]",
        "{}",
    );
    run.trimmer
        .push(task("{:task :cut, :target :gone, :remove true}"));
    run.trimmer.push(task("{:task :back, :undo :cut}"));
    assert_eq!(run.outcomes(), vec![o(":cut", Applied)]);
    assert_eq!(run.outcomes(), vec![o(":back", Applied)]);
    assert_eq!(
        run.tree.form().to_string(),
        "[:sequence [:inc! {:key :a}] [:inc! {:id :gone, :key :b}] [:inc! {:key :c}]]"
    );
    // The node a task changed is gone: its undo is rejected.
    let mut run = Run::new(
        "[:sequence [:inc! {:key :a}] [:sequence {:id :box} [:inc! {:id :in :key :b}]]]",
        "{}",
    );
    run.trimmer.push(task(
        "{:task :swap, :target :in, :replace [:inc! {:id :in :key :bb}]}",
    ));
    run.trimmer
        .push(task("{:task :cut, :target :box, :remove true}"));
    run.trimmer.push(task("{:task :back, :undo :swap}"));
    assert_eq!(run.outcomes(), vec![o(":swap", Applied)]);
    assert_eq!(run.outcomes(), vec![o(":cut", Applied)]);
    assert_eq!(run.outcomes(), vec![o(":back", Rejected)]);
}

#[test]
fn a_migration_reports_a_node_kept_or_dropped_never_both() {
    let old = tree("[:sequence {:id :s :memory true} [:inc! {:key :a}] [:wait {:id :w :ticks 3}]]");
    let new = tree("[:sequence {:id :s :memory true} [:inc! {:key :a}]]");
    let saved = run_tick(Value::map(), &old).db;
    let (_, report) = migrate(saved, &old, &new);
    let ids = |nodes: &[aido::migrate::MigratedNode]| {
        nodes.iter().map(|n| n.id.to_string()).collect::<Vec<_>>()
    };
    let (kept, dropped) = (ids(&report.kept), ids(&report.dropped));
    assert!(dropped.contains(&":s".to_owned()), "{report:?}");
    assert!(kept.iter().all(|k| !dropped.contains(k)), "{report:?}");
    // A malformed running set is not dropped in silence: it stays.
    let db = read_value("{:aido/running 5, :n 1}").unwrap();
    let (db, _) = migrate(db, &old, &new);
    assert_eq!(
        db.get(&Value::keyword("aido/running")),
        Some(&Value::Int(5))
    );
}
