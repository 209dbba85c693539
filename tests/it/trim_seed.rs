//! Trimming after seed 002, round 2: a change to a running composite's
//! children waits (an insertion, a new order, a removal of a child), a
//! task hands over the node types and functions its change needs, and a
//! task changes the db with its change.
#![allow(clippy::panic, clippy::expect_used, clippy::unwrap_used)]

use std::sync::Arc;

use aido::{
    Registry, Status, Tree, Value, compile_str,
    extend::{Arity, NodeType},
    read_value, run_tick,
    runner::{PlayMode, Runner},
    trim::{
        DataTask, DbPatch, TreeSnapshot, TrimChange, TrimOutcome, TrimRequest, TrimTask, Trimmer,
    },
};

use TrimOutcome::{Applied, Deferred, Rejected};

fn tree(src: &str, registry: &Registry) -> Tree {
    compile_str("t.edn", src, registry).unwrap_or_else(|d| panic!("{}", d.render()))
}

fn db(src: &str) -> Value {
    read_value(src).unwrap()
}

fn data_task(src: &str) -> Box<dyn TrimTask> {
    Box::new(DataTask::from_value(&db(src)).unwrap())
}

/// The db without the fingerprint.
fn shown(db: &Value) -> String {
    let mut db = db.clone();
    if let Some(m) = db.as_map_mut() {
        m.shift_remove(&Value::keyword("aido/tree"));
    }
    db.to_string()
}

/// A sequence that runs for two ticks (its wait), then succeeds.
const ERRAND: &str = "[:sequence {:id :errand}
  [:inc! {:id :go :key :a}]
  [:wait {:id :walk :ticks 2}]
  [:inc! {:id :back :key :b}]]";

/// Ticks `tree` from `{}` with `task` queued, a gap before each tick;
/// returns each gap's (outcome, reason) and the last db.
fn gaps(task: Box<dyn TrimTask>, ticks: usize) -> (Vec<(TrimOutcome, String)>, Value) {
    let registry = Registry::new();
    let mut tree = tree(ERRAND, &registry);
    let mut trimmer = Trimmer::new();
    trimmer.push(task);
    let mut db = Value::map();
    let mut seen = Vec::new();
    for n in 0..ticks {
        let gap = trimmer.between_ticks(n as u64, db, &tree, &registry);
        db = gap.db;
        if let Some(t) = gap.tree {
            tree = t;
        }
        seen.extend(
            gap.reports
                .into_iter()
                .map(|r| (r.outcome, r.reason.unwrap_or_default())),
        );
        db = run_tick(db, &tree).db;
    }
    (seen, db)
}

#[test]
fn a_change_to_a_running_composites_children_waits_until_it_stops() {
    let running = (Deferred, "node :errand is running".to_owned());
    let applied = (Applied, String::new());
    // Inserting into the running sequence, reordering it, removing one of
    // its finished children: each waits for the two ticks the sequence
    // runs (it ends the 3rd in Success), then is applied.
    for task in [
        "{:task :t, :target :errand, :not-before 1, :insert [:inc! {:key :x}], :at 0}",
        "{:task :t, :target :errand, :not-before 1, :reorder [2 0 1]}",
        "{:task :t, :target :go, :not-before 1, :remove true}",
    ] {
        let (seen, _) = gaps(data_task(task), 5);
        assert_eq!(seen.len(), 4, "{task}: {seen:?}");
        assert_eq!(
            seen[1..],
            [running.clone(), running.clone(), applied.clone()],
            "{task}"
        );
    }
    // Replacing a finished child of the running sequence changes only that
    // child, which runs nothing: applied at once, as before.
    let (seen, db) = gaps(
        data_task("{:task :t, :target :back, :not-before 1, :replace [:inc! {:key :c}]}"),
        3,
    );
    assert_eq!(seen[1..], [applied]);
    assert_eq!(shown(&db), "{:a 3, :c 1}");
}

/// A task that brings its own node type and function.
struct Arm;

impl TrimTask for Arm {
    fn name(&self) -> Value {
        Value::keyword("arm")
    }

    fn process(&mut self, _: &TreeSnapshot<'_>) -> TrimRequest {
        TrimRequest::Attempt(TrimChange::Replace {
            target: Value::keyword("back"),
            with: db("[:arm/fire! {:power [:aido/fn arm/power 3]}]"),
        })
    }

    fn extend_registry(&self, registry: &mut Registry) -> Result<(), aido::extend::RegistryError> {
        let mut fire = NodeType::new("arm/fire!");
        // A dynamic option (`[:aido/fn arm/power 3]`), evaluated through its slot.
        let power = fire.slot::<i64>("power");
        registry.node_type(fire.tick(move |ctx| {
            let power = ctx.get(power)?;
            ctx.db_mut()
                .insert(Value::keyword("fired"), Value::Int(power));
            Ok(Status::Success)
        }))?;
        registry.function("arm/power", Arity::Exactly(1), |_, args| {
            Ok(Value::Int(args[0].as_int().unwrap_or(0) * 10))
        })?;
        Ok(())
    }

    fn db_patch(&self) -> DbPatch {
        let mut patch = DbPatch::default();
        patch.set.insert(Value::keyword("ammo"), Value::Int(5));
        patch.remove.push(Value::keyword("unarmed"));
        patch
    }
}

#[test]
fn a_rust_task_brings_node_types_and_functions_that_the_runner_keeps() {
    let registry = Registry::new();
    let mut r = Runner::load(Arc::new(tree(ERRAND, &registry)), db("{:unarmed true}"));
    r.set_registry(registry);
    r.trim(Box::new(Arm));
    r.play(PlayMode::StopByExecuteLoopCount, 3).unwrap();
    r.update().unwrap();
    assert_eq!(r.trims()[0].outcome, Applied);
    // The change, its node type and function, and its db changes came together.
    assert!(r.registry().get_node_type("arm/fire!").is_some());
    assert!(r.registry().get_function("arm/power").is_some());
    let report = r.trims()[0].to_value(false);
    assert_eq!(report.get(&Value::keyword("db")), Some(&db("{:ammo 5}")));
    assert_eq!(
        report.get(&Value::keyword("dissoc")),
        Some(&db("[:unarmed]"))
    );
    while r.update().unwrap().is_some() {}
    assert_eq!(r.db().get(&Value::keyword("fired")), Some(&Value::Int(30)));
    assert_eq!(r.db().get(&Value::keyword("ammo")), Some(&Value::Int(5)));
    assert_eq!(r.db().get(&Value::keyword("unarmed")), None);
    // Later tasks are compiled against the registry with the new node type.
    r.trim(data_task(
        "{:task :again, :target :walk, :replace [:arm/fire! {:power 1}]}",
    ));
    r.play(PlayMode::StopByExecuteLoopCount, 1).unwrap();
    r.update().unwrap();
    assert_eq!(r.trims()[0].outcome, Applied);
}

/// A task whose node type cannot be added (a built-in's name), and one
/// whose db patch writes the library's keys: both rejected, nothing changed.
struct Bad(u8);

impl TrimTask for Bad {
    fn name(&self) -> Value {
        Value::Int(i64::from(self.0))
    }

    fn process(&mut self, _: &TreeSnapshot<'_>) -> TrimRequest {
        TrimRequest::Attempt(TrimChange::Remove {
            target: Value::keyword("back"),
        })
    }

    fn extend_registry(&self, registry: &mut Registry) -> Result<(), aido::extend::RegistryError> {
        if self.0 == 0 {
            registry.node_type(NodeType::new("sequence").tick(|_| Ok(Status::Success)))?;
        }
        Ok(())
    }

    fn db_patch(&self) -> DbPatch {
        let mut patch = DbPatch::default();
        if self.0 == 1 {
            patch.remove.push(Value::keyword("aido/running"));
        }
        patch
    }
}

#[test]
fn a_task_whose_node_types_or_db_changes_cannot_be_made_is_rejected() {
    let registry = Registry::new();
    let tree = tree(ERRAND, &registry);
    let mut trimmer = Trimmer::new();
    trimmer.push(Box::new(Bad(0)));
    trimmer.push(Box::new(Bad(1)));
    let gap = trimmer.between_ticks(0, db("{:k 1}"), &tree, &registry);
    let outcomes: Vec<(TrimOutcome, String)> = gap
        .reports
        .iter()
        .map(|r| (r.outcome, r.reason.clone().unwrap_or_default()))
        .collect();
    assert_eq!(
        outcomes,
        [
            (
                Rejected,
                "its node types and functions: `:sequence` is built in and cannot be replaced"
                    .to_owned()
            ),
            (
                Rejected,
                "its db patch changes :aido/running: the :aido/* keys are the library's own"
                    .to_owned()
            ),
        ]
    );
    assert!(gap.tree.is_none() && gap.registry.is_none());
    assert_eq!(gap.db, db("{:k 1}"));
}

#[test]
fn a_data_task_changes_the_db_with_its_change() {
    let (seen, end) = gaps(
        data_task(
            "{:task :t, :target :errand, :insert [:inc! {:key :x}], :at 0, :db {:x 10, :mood :calm}, :dissoc [:a]}",
        ),
        1,
    );
    assert_eq!(seen, [(Applied, String::new())]);
    // Set, then the tick: :x counted on from 10; :a removed before the tick.
    assert_eq!(
        shown(&end),
        "{:x 11, :mood :calm, :a 1, :aido/memory {:walk {:ticks 1}}, :aido/running [:errand :walk]}"
    );
    // What a data task may not say.
    for (bad, why) in [
        (
            "{:task :t, :target :go, :remove true, :db [:x 1]}",
            ":db must be a map",
        ),
        (
            "{:task :t, :target :go, :remove true, :dissoc :x}",
            ":dissoc must be a vector",
        ),
        (
            "{:task :t, :target :go, :remove true, :db {:aido/seed 1}}",
            "the :aido/* keys are the library's own",
        ),
        (
            "{:task :t, :target :go, :remove true, :dissoc [:aido/memory]}",
            "the :aido/* keys are the library's own",
        ),
    ] {
        let err = DataTask::from_value(&db(bad)).unwrap_err();
        assert!(err.message.contains(why), "{bad}: {}", err.message);
    }
}
