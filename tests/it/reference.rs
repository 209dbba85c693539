//! A reference interpreter for the core built-ins, written from README's
//! node reference and *Long-running behaviours* and from the seed
//! documents (000: ReactiveSequence; 004: Clojure aido's README), not from
//! the engine's code, and the engine checked against it.
//!
//! The reference is a plain recursive walk over the tree as read (the
//! `Value`, never the compiled `Tree`), with its state (each node's
//! iteration, count, marks and whether it runs) in its own Rust data, not
//! in the db. A tick returns its status, writes the user keys of the db,
//! and lists the (node, status) pairs it visited, in the order nodes
//! return, each node by its pre-order index, as `--trace` lists them.
//!
//! Generated trees, and the fixed trees of examples/ and tests/data/ that
//! use only these kinds, are ticked by the engine untraced and traced and
//! by the reference; the status, the db without `:aido/*` keys and the
//! trace must agree at every tick. A run stops comparing after a tick that
//! ends in Error: what state a db keeps after an Error is not something
//! the reference states.

#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

use crate::common::{self, Gen};

use aido::{
    Registry, Status, Tick, Tree, Value, compile_str, read_value,
    tick::{TickOptions, TraceEvent},
};

/// How `:test?` compares.
#[derive(Clone, Copy, Debug)]
enum Oper {
    Eq,
    NotEq,
    Lt,
    Gt,
    Le,
    Ge,
}

/// A node type the reference knows, with its options.
#[derive(Debug)]
enum Kind {
    Selector {
        memory: bool,
    },
    Sequence {
        memory: bool,
    },
    /// aido's `:mode`/`:how-many` parallel.
    Counting {
        success_mode: bool,
        how_many: i64,
    },
    /// A parallel with a policy: it succeeds once `success_at` children
    /// succeeded and fails once `failure_at` failed (`None`: all of them).
    Policy {
        success_at: Option<usize>,
        failure_at: Option<usize>,
    },
    Loop(i64),
    LoopUntilSuccess(i64),
    Invert,
    Always,
    Never,
    Force(Status),
    Wait(i64),
    Success,
    Failure,
    Present(Vec<Value>),
    Test(Vec<Value>, Oper, Value),
    Inc(Vec<Value>),
    Define(Vec<Value>, Value),
    Dissoc(Vec<Value>),
}

#[derive(Debug)]
struct Node {
    kind: Kind,
    children: Vec<usize>,
    parent: Option<usize>,
    /// One past the last node of its subtree: a subtree is a range of
    /// pre-order indices.
    end: usize,
}

/// What a node remembers between visits; all of it is run state, which a
/// halt clears.
#[derive(Debug, Default, Clone)]
struct RunState {
    /// The node returned Running at its last visit and was not halted since.
    running: bool,
    /// A wait's ticks so far, a loop's iteration, a memory composite's child.
    count: i64,
    /// A reactive sequence's marks: the children that ran and finished
    /// with Success in its current round.
    done: Vec<bool>,
    /// A policy parallel's finished children in its current round.
    finished: Vec<Option<Status>>,
}

/// A tree the reference can tick, and its state.
struct Reference {
    nodes: Vec<Node>,
    state: Vec<RunState>,
    visited: Vec<bool>,
    visits: Vec<(usize, Status)>,
}

/// One tick of the reference.
#[derive(Debug)]
struct RefTick {
    status: Status,
    visits: Vec<(usize, Status)>,
}

fn key_path(v: &Value) -> Result<Vec<Value>, String> {
    match v {
        Value::Keyword(_) | Value::Str(_) | Value::Int(_) => Ok(vec![v.clone()]),
        Value::Vector(items) if !items.is_empty() => {
            if items.iter().any(|k| matches!(k, Value::Vector(_))) {
                Err(format!("a dynamic key {v}"))
            } else if items
                .first()
                .and_then(Value::as_keyword)
                .is_some_and(|k| k.namespace() == Some("aido"))
            {
                Err(format!("a key in the aido namespace {v}"))
            } else {
                Ok(items.to_vec())
            }
        }
        _ => Err(format!("not a key {v}")),
    }
}

/// A constant option (a vector would be dynamic, `[:aido/db ..]`).
fn constant(v: &Value) -> Result<Value, String> {
    match v {
        Value::Vector(_) | Value::List(_) | Value::Map(_) | Value::Set(_) => {
            Err(format!("not a constant option {v}"))
        }
        _ => Ok(v.clone()),
    }
}

fn count_option(v: Option<&Value>) -> Result<i64, String> {
    v.and_then(Value::as_int)
        .filter(|n| *n >= 0)
        .ok_or_else(|| format!("not a constant count {v:?}"))
}

impl Reference {
    /// The reference of a tree as read, or why it uses something the
    /// reference does not know.
    fn new(tree: &Value) -> Result<Reference, String> {
        let mut nodes = Vec::new();
        Self::read_node(tree, None, &mut nodes)?;
        let n = nodes.len();
        Ok(Reference {
            nodes,
            state: vec![RunState::default(); n],
            visited: vec![false; n],
            visits: Vec::new(),
        })
    }

    fn read_node(v: &Value, parent: Option<usize>, nodes: &mut Vec<Node>) -> Result<usize, String> {
        let items = match v {
            Value::Vector(items) => items,
            _ => return Err(format!("not a node {v}")),
        };
        let name = items
            .first()
            .and_then(Value::as_keyword)
            .ok_or_else(|| format!("no node type in {v}"))?;
        if name.namespace().is_some() {
            return Err(format!("an unknown node type {name}"));
        }
        let (options, kids) = match items.get(1) {
            Some(Value::Map(m)) => (Some(&**m), &items[2..]),
            _ => (None, &items[1..]),
        };
        let opt = |k: &str| options.and_then(|m| m.get(&Value::keyword(k)));
        let allowed: &[&str] = match name.name() {
            "selector" | "sequence" => &["memory"],
            "parallel" => &[
                "mode",
                "how-many",
                "policy",
                "success-threshold",
                "failure-threshold",
            ],
            "loop" | "loop-until-success" => &["count"],
            "force" => &["status"],
            "wait" => &["ticks"],
            "present?" | "inc!" | "counter!" | "dissoc!" => &["key"],
            "test?" => &["key", "oper", "val"],
            "greater-than?" | "less-than?" | "define!" => &["key", "val"],
            _ => &[],
        };
        if let Some(m) = options {
            for (k, _) in m.iter() {
                let k = k.as_keyword().ok_or("an option that is not a keyword")?;
                let known = k.namespace().is_none()
                    && (allowed.contains(&k.name()) || ["id", "doc"].contains(&k.name()));
                if !known {
                    return Err(format!("the option {k} of {name}"));
                }
            }
        }
        let key = || key_path(opt("key").unwrap_or(&Value::Nil));
        let val = || constant(opt("val").unwrap_or(&Value::Nil));
        let number = || match opt("val") {
            Some(v @ (Value::Int(_) | Value::Float(_))) => Ok(v.clone()),
            other => Err(format!("not a constant number {other:?}")),
        };
        let kind = match name.name() {
            "selector" | "sequence" => {
                let memory = match opt("memory") {
                    None => false,
                    Some(Value::Bool(b)) => *b,
                    Some(other) => return Err(format!("memory {other}")),
                };
                if name.name() == "selector" {
                    Kind::Selector { memory }
                } else {
                    Kind::Sequence { memory }
                }
            }
            "parallel" => {
                if let Some(mode) = opt("mode") {
                    let success_mode = match mode.as_keyword().map(|k| k.name()) {
                        Some("success") => true,
                        Some("failure") => false,
                        _ => return Err(format!("mode {mode}")),
                    };
                    Kind::Counting {
                        success_mode,
                        how_many: count_option(opt("how-many"))?,
                    }
                } else if let Some(policy) = opt("policy") {
                    match policy.as_keyword().map(|k| k.name()) {
                        Some("sequence") => Kind::Policy {
                            success_at: None,
                            failure_at: Some(1),
                        },
                        Some("selector") => Kind::Policy {
                            success_at: Some(1),
                            failure_at: None,
                        },
                        _ => return Err(format!("policy {policy}")),
                    }
                } else {
                    let threshold = |k: &str| -> Result<Option<usize>, String> {
                        opt(k)
                            .map(|v| count_option(Some(v)).map(|n| n as usize))
                            .transpose()
                    };
                    Kind::Policy {
                        success_at: threshold("success-threshold")?,
                        failure_at: Some(threshold("failure-threshold")?.unwrap_or(1)),
                    }
                }
            }
            "loop" => Kind::Loop(count_option(opt("count"))?),
            "loop-until-success" => Kind::LoopUntilSuccess(count_option(opt("count"))?),
            "invert" => Kind::Invert,
            "always" => Kind::Always,
            "never" => Kind::Never,
            "force" => match opt("status").and_then(Value::as_keyword).map(|k| k.name()) {
                Some("success") => Kind::Force(Status::Success),
                Some("failure") => Kind::Force(Status::Failure),
                other => return Err(format!("force status {other:?}")),
            },
            "wait" => Kind::Wait(count_option(opt("ticks"))?),
            "success" => Kind::Success,
            "failure" => Kind::Failure,
            "present?" => Kind::Present(key()?),
            "test?" => {
                let oper = match opt("oper") {
                    Some(Value::Symbol(s)) => s.to_string(),
                    Some(Value::Keyword(k)) => k.name().to_string(),
                    other => return Err(format!("oper {other:?}")),
                };
                let oper = match oper.as_str() {
                    "=" => Oper::Eq,
                    "not=" => Oper::NotEq,
                    "<" => Oper::Lt,
                    ">" => Oper::Gt,
                    "<=" => Oper::Le,
                    ">=" => Oper::Ge,
                    other => return Err(format!("oper {other}")),
                };
                Kind::Test(key()?, oper, val()?)
            }
            "greater-than?" => Kind::Test(key()?, Oper::Gt, number()?),
            "less-than?" => Kind::Test(key()?, Oper::Lt, number()?),
            "inc!" | "counter!" => Kind::Inc(key()?),
            "define!" => Kind::Define(key()?, val()?),
            "dissoc!" => Kind::Dissoc(key()?),
            other => return Err(format!("the node type :{other}")),
        };
        let arity_ok = match kind {
            Kind::Selector { .. }
            | Kind::Sequence { .. }
            | Kind::Counting { .. }
            | Kind::Policy { .. } => !kids.is_empty(),
            Kind::Loop(_)
            | Kind::LoopUntilSuccess(_)
            | Kind::Invert
            | Kind::Always
            | Kind::Never
            | Kind::Force(_) => kids.len() == 1,
            _ => kids.is_empty(),
        };
        if !arity_ok {
            return Err(format!("children of {v}"));
        }
        let at = nodes.len();
        nodes.push(Node {
            kind,
            children: Vec::new(),
            parent,
            end: 0,
        });
        let mut children = Vec::new();
        for kid in kids {
            children.push(Self::read_node(kid, Some(at), nodes)?);
        }
        nodes[at].children = children;
        nodes[at].end = nodes.len();
        Ok(at)
    }

    /// Ticks the tree once over `db` (user keys only).
    fn tick(&mut self, db: &mut Value) -> RefTick {
        let was_running: Vec<bool> = self.state.iter().map(|s| s.running).collect();
        self.visited.fill(false);
        self.visits.clear();
        let status = self.visit(0, db);
        // A node that ran and was not reached this tick is halted.
        for (n, was) in was_running.into_iter().enumerate() {
            if was && !self.visited[n] && self.state[n].running {
                self.halt(n);
            }
        }
        RefTick {
            status,
            visits: std::mem::take(&mut self.visits),
        }
    }

    fn is_reactive_sequence(&self, n: usize) -> bool {
        matches!(self.nodes[n].kind, Kind::Sequence { memory: false })
    }

    /// Clears the run state of `n`'s whole subtree.
    fn halt(&mut self, n: usize) {
        for m in n..self.nodes[n].end {
            self.state[m] = RunState::default();
        }
    }

    /// Halts the children of `n` after the `i`th that still run.
    fn halt_running_after(&mut self, n: usize, i: usize) {
        let later: Vec<usize> = self.nodes[n].children[i + 1..].to_vec();
        for c in later {
            if self.state[c].running {
                self.halt(c);
            }
        }
    }

    /// Ends a reactive sequence's round: its marks go, and so do those of
    /// the reactive sequences it kept.
    fn end_round(&mut self, n: usize) {
        self.state[n].done.clear();
        let kids = self.nodes[n].children.clone();
        for c in kids {
            if self.is_reactive_sequence(c) {
                self.end_round(c);
            }
        }
    }

    fn visit(&mut self, n: usize, db: &mut Value) -> Status {
        self.visited[n] = true;
        let status = self.visit_kind(n, db);
        self.state[n].running = status == Status::Running;
        self.visits.push((n, status));
        status
    }

    fn visit_kind(&mut self, n: usize, db: &mut Value) -> Status {
        use Status::*;
        let kids = self.nodes[n].children.clone();
        match self.nodes[n].kind {
            Kind::Selector { memory: false } => {
                for (i, &c) in kids.iter().enumerate() {
                    match self.visit(c, db) {
                        Failure => {}
                        Error => return Error,
                        other => {
                            self.halt_running_after(n, i);
                            return other;
                        }
                    }
                }
                Failure
            }
            Kind::Selector { memory: true } => {
                let start = self.state[n].count as usize;
                for (i, &c) in kids.iter().enumerate().skip(start) {
                    match self.visit(c, db) {
                        Failure => {}
                        Running => {
                            self.state[n].count = i as i64;
                            return Running;
                        }
                        other => {
                            self.state[n].count = 0;
                            return other;
                        }
                    }
                }
                self.state[n].count = 0;
                Failure
            }
            Kind::Sequence { memory: false } => {
                let kept_by_parent = self.nodes[n]
                    .parent
                    .is_some_and(|p| self.is_reactive_sequence(p));
                self.state[n].done.resize(kids.len(), false);
                for (i, &c) in kids.iter().enumerate() {
                    // A child that ran and finished keeps its Success for
                    // the round; a reactive sequence is checked again.
                    if self.state[n].done[i] && !self.is_reactive_sequence(c) {
                        continue;
                    }
                    let was_running = self.state[c].running;
                    match self.visit(c, db) {
                        Success => {
                            if was_running {
                                self.state[n].done[i] = true;
                            }
                        }
                        Running => {
                            self.halt_running_after(n, i);
                            return Running;
                        }
                        Failure => {
                            self.halt_running_after(n, i);
                            self.end_round(n);
                            return Failure;
                        }
                        other => return other,
                    }
                }
                // A parent that is a reactive sequence keeps this one's
                // marks while it runs, and ends them with its own round.
                if !kept_by_parent {
                    self.end_round(n);
                }
                Success
            }
            Kind::Sequence { memory: true } => {
                let start = self.state[n].count as usize;
                for (i, &c) in kids.iter().enumerate().skip(start) {
                    match self.visit(c, db) {
                        Success => {}
                        Running => {
                            self.state[n].count = i as i64;
                            return Running;
                        }
                        other => {
                            self.state[n].count = 0;
                            return other;
                        }
                    }
                }
                self.state[n].count = 0;
                Success
            }
            Kind::Counting {
                success_mode,
                how_many,
            } => {
                let (mut succeeded, mut failed) = (0, 0);
                for &c in &kids {
                    match self.visit(c, db) {
                        // Running counts as succeeded.
                        Success | Running => succeeded += 1,
                        Failure => failed += 1,
                        other => return other,
                    }
                }
                // Nothing is halted: a running child is ticked again next
                // tick (the rollback of a failing parallel is the policy
                // parallel's; this one is "unchanged").
                if success_mode {
                    Status::from_bool(succeeded >= how_many)
                } else {
                    Status::from_bool(failed < how_many)
                }
            }
            Kind::Policy {
                success_at,
                failure_at,
            } => {
                self.state[n].finished.resize(kids.len(), None);
                for (i, &c) in kids.iter().enumerate() {
                    if self.state[n].finished[i].is_some() {
                        continue;
                    }
                    match self.visit(c, db) {
                        s @ (Success | Failure) => self.state[n].finished[i] = Some(s),
                        Running => {}
                        other => return other,
                    }
                }
                let finished = &self.state[n].finished;
                let succeeded = finished.iter().filter(|s| **s == Some(Success)).count();
                let failed = finished.iter().filter(|s| **s == Some(Failure)).count();
                let status = if failed >= failure_at.unwrap_or(kids.len()) {
                    Failure
                } else if succeeded >= success_at.unwrap_or(kids.len()) {
                    Success
                } else {
                    Running
                };
                // Decided, it halts the children still running; a Failure
                // rolls back the whole parallel, every node running below
                // it halted, below finished children too.
                if status != Running {
                    for &c in &kids {
                        if status == Failure || self.state[c].running {
                            self.halt(c);
                        }
                    }
                    self.state[n].finished.clear();
                }
                status
            }
            Kind::Loop(times) => {
                let mut i = self.state[n].count;
                while i < times {
                    match self.visit(kids[0], db) {
                        Success => i += 1,
                        Running => {
                            self.state[n].count = i;
                            return Running;
                        }
                        other => {
                            self.state[n].count = 0;
                            return other;
                        }
                    }
                }
                self.state[n].count = 0;
                Success
            }
            Kind::LoopUntilSuccess(times) => {
                let mut i = self.state[n].count;
                while i < times {
                    match self.visit(kids[0], db) {
                        Failure => i += 1,
                        Running => {
                            self.state[n].count = i;
                            return Running;
                        }
                        other => {
                            self.state[n].count = 0;
                            return other;
                        }
                    }
                }
                self.state[n].count = 0;
                Failure
            }
            Kind::Invert => match self.visit(kids[0], db) {
                Success => Failure,
                Failure => Success,
                other => other,
            },
            Kind::Always => match self.visit(kids[0], db) {
                Success | Failure => Success,
                other => other,
            },
            Kind::Never => match self.visit(kids[0], db) {
                Success | Failure => Failure,
                other => other,
            },
            Kind::Force(forced) => match self.visit(kids[0], db) {
                Success | Failure => forced,
                other => other,
            },
            Kind::Wait(ticks) => {
                let state = &mut self.state[n];
                if state.count < ticks {
                    state.count += 1;
                    Running
                } else {
                    state.count = 0;
                    Success
                }
            }
            Kind::Success => Success,
            Kind::Failure => Failure,
            Kind::Present(ref path) => Status::from_bool(db.get_in(path).is_some()),
            // A missing key fails; a nil is a value, of the wrong type
            // for an order (README, *Node types*).
            Kind::Test(ref path, oper, ref val) => match db.get_in(path) {
                None => Failure,
                Some(v) => compare(v, oper, val),
            },
            Kind::Inc(ref path) => {
                let next = match db.get_in(path) {
                    // The README says a missing key counts as 0 and is
                    // silent on nil: taken as missing, as Clojure's
                    // `(fnil inc 0)` takes it.
                    None | Some(Value::Nil) => Some(1),
                    Some(Value::Int(i)) => i.checked_add(1),
                    Some(_) => None,
                };
                match next {
                    Some(next) if db.assoc_in(path, Value::Int(next)).is_ok() => Success,
                    _ => Error,
                }
            }
            Kind::Define(ref path, ref val) => {
                let path = path.clone();
                match db.assoc_in(&path, val.clone()) {
                    Ok(()) => Success,
                    Err(_) => Error,
                }
            }
            Kind::Dissoc(ref path) => {
                let path = path.clone();
                match db.dissoc_in(&path) {
                    Ok(_) => Success,
                    Err(_) => Error,
                }
            }
        }
    }
}

/// `v OP val`: equality for any values, order for numbers only (another
/// type is an Error).
fn compare(v: &Value, oper: Oper, val: &Value) -> Status {
    let order = match (v, val) {
        (Value::Int(a), Value::Int(b)) => Some(a.cmp(b)),
        (Value::Int(_) | Value::Float(_), Value::Int(_) | Value::Float(_)) => {
            v.as_f64().unwrap().partial_cmp(&val.as_f64().unwrap())
        }
        _ => None,
    };
    use std::cmp::Ordering::*;
    let holds = match oper {
        Oper::Eq => return Status::from_bool(v == val),
        Oper::NotEq => return Status::from_bool(v != val),
        Oper::Lt => order.map(|o| o == Less),
        Oper::Gt => order.map(|o| o == Greater),
        Oper::Le => order.map(|o| o != Greater),
        Oper::Ge => order.map(|o| o != Less),
    };
    holds.map_or(Status::Error, Status::from_bool)
}

// ---- The comparison ----

fn tick_engine(tree: &Tree, db: Value, trace: bool) -> Tick {
    let options = TickOptions {
        trace,
        ..TickOptions::default()
    };
    aido::tick::run_tick_with_options(db, tree, &options)
}

/// The statuses of a traced tick, in the order the nodes returned.
fn ticked(trace: &[TraceEvent]) -> Vec<(usize, Status)> {
    trace
        .iter()
        .filter_map(|e| match e {
            TraceEvent::Ticked { node, status } => Some((node.index(), *status)),
            _ => None,
        })
        .collect()
}

/// How many ticks a comparison ran, and how they ended.
#[derive(Debug, Default)]
struct Tally {
    runs: usize,
    ticks: usize,
    statuses: [usize; 4],
}

/// Ticks `text` (a tree as EDN) from `start`, merging `inputs[i]` into
/// the db before tick `i` (both the engine's and the reference's), for
/// `ticks` ticks, on the engine untraced and traced and on the reference,
/// and asserts that they agree; stops after a tick that ends in Error.
fn assert_agrees(what: &str, text: &str, start: &Value, inputs: &[Value], ticks: usize) -> Tally {
    let value = read_value(text).unwrap_or_else(|e| panic!("{what}: {e}\n{text}"));
    let mut reference =
        Reference::new(&value).unwrap_or_else(|why| panic!("{what}: the reference refuses {why}"));
    let tree = compile_str("ref.edn", text, &Registry::new())
        .unwrap_or_else(|e| panic!("{what}: does not compile: {e}\n{text}"));
    assert_eq!(reference.nodes.len(), tree.len(), "{what}: node count");
    let mut tally = Tally {
        runs: 1,
        ..Tally::default()
    };
    let (mut engine_db, mut ref_db) = (start.clone(), common::without_aido_keys(start));
    for n in 0..ticks {
        if let Some(Value::Map(input)) = inputs.get(n) {
            for (k, v) in input.iter() {
                engine_db.assoc_in(std::slice::from_ref(k), v.clone()).unwrap();
                ref_db.assoc_in(std::slice::from_ref(k), v.clone()).unwrap();
            }
        }
        let before = ref_db.clone();
        let plain = tick_engine(&tree, engine_db.clone(), false);
        let traced = tick_engine(&tree, engine_db, true);
        assert_eq!(
            (plain.status, plain.steps, &plain.db, plain.error.as_deref()),
            (
                traced.status,
                traced.steps,
                &traced.db,
                traced.error.as_deref()
            ),
            "{what}, tick {n}: untraced vs traced\n{text}"
        );
        let expected = reference.tick(&mut ref_db);
        let engine = (
            traced.status,
            common::without_aido_keys(&traced.db),
            ticked(traced.trace()),
        );
        assert_eq!(
            engine,
            (expected.status, ref_db.clone(), expected.visits),
            "{what}, tick {n} from {before} (engine db {}): engine vs reference\n{text}",
            traced.db
        );
        tally.ticks += 1;
        tally.statuses[match traced.status {
            Status::Success => 0,
            Status::Failure => 1,
            Status::Running => 2,
            _ => 3,
        }] += 1;
        if traced.status == Status::Error {
            break;
        }
        engine_db = traced.db;
    }
    tally
}

// ---- Generated trees ----

const CONDITION_KEYS: &[&str] = &[":a", ":b", ":c"];

/// A random leaf: conditions on the keys the edits flip, writes, and now
/// and then a wait or a write of a string where `:inc!` and the order
/// comparisons expect a number (an Error).
fn leaf(g: &mut Gen) -> String {
    let key = g.pick(CONDITION_KEYS);
    match g.below(14) {
        0 => "[:success]".into(),
        1 => "[:failure]".into(),
        2 => format!("[:present? {{:key {key}}}]"),
        3 => format!("[:greater-than? {{:key {key} :val {}}}]", g.below(3)),
        4 => format!("[:less-than? {{:key {key} :val {}}}]", g.below(3)),
        5 | 6 => format!(
            "[:test? {{:key {key} :oper {} :val {}}}]",
            g.pick(&["=", "not=", "<", ">="]),
            g.below(3)
        ),
        7 => format!("[:inc! {{:key {}}}]", g.pick(&[":n", ":n", ":a"])),
        8 => {
            let val = if g.below(12) == 0 {
                "\"s\"".to_string()
            } else {
                g.below(3).to_string()
            };
            format!("[:define! {{:key {key} :val {val}}}]")
        }
        9 => format!("[:dissoc! {{:key {}}}]", g.pick(&[":a", ":b", ":c", ":n"])),
        _ => wait(g),
    }
}

fn wait(g: &mut Gen) -> String {
    format!("[:wait {{:ticks {}}}]", g.below(4))
}

/// A random tree of at most `depth` levels of composites and decorators
/// over the leaves above.
fn tree(g: &mut Gen, depth: u32) -> String {
    if depth == 0 || g.below(5) == 0 {
        return leaf(g);
    }
    let kids = |g: &mut Gen, most: u64| {
        let n = 1 + g.below(most);
        (0..n)
            .map(|_| tree(g, depth - 1))
            .collect::<Vec<_>>()
            .join(" ")
    };
    match g.below(20) {
        0..=2 => format!("[:selector {}]", kids(g, 4)),
        3..=5 => format!("[:sequence {}]", kids(g, 4)),
        6 => format!("[:sequence {{:memory true}} {}]", kids(g, 3)),
        7 => format!("[:selector {{:memory true}} {}]", kids(g, 3)),
        8 => format!("[:loop {{:count {}}} {}]", g.below(4), kids(g, 1)),
        9 => format!(
            "[:loop-until-success {{:count {}}} {}]",
            g.below(4),
            kids(g, 1)
        ),
        10 => format!("[:invert {}]", kids(g, 1)),
        11 => format!("[:always {}]", kids(g, 1)),
        12 => format!("[:never {}]", kids(g, 1)),
        13 => format!(
            "[:force {{:status {}}} {}]",
            g.pick(&[":success", ":failure"]),
            kids(g, 1)
        ),
        14 | 15 => {
            // `:how-many` is at most the number of children.
            let n = 1 + g.below(3);
            let children = (0..n)
                .map(|_| tree(g, depth - 1))
                .collect::<Vec<_>>()
                .join(" ");
            format!(
                "[:parallel {{:mode {} :how-many {}}} {children}]",
                g.pick(&[":success", ":failure"]),
                g.below(n + 1)
            )
        }
        16 => format!(
            "[:parallel {{:policy {}}} {}]",
            g.pick(&[":sequence", ":selector"]),
            kids(g, 3)
        ),
        17 => {
            // Thresholds that cannot both hold once every child finished.
            let n = 1 + g.below(3);
            let success = 1 + g.below(n);
            let failure = n + 1 - success;
            let children = (0..n)
                .map(|_| tree(g, depth - 1))
                .collect::<Vec<_>>()
                .join(" ");
            format!(
                "[:parallel {{:success-threshold {success} :failure-threshold {failure}}} {children}]"
            )
        }
        // A guarded wait, the usual shape of a reactive tree.
        _ => format!(
            "[{} {} {}]",
            g.pick(&[
                ":sequence",
                ":sequence",
                ":selector",
                ":sequence {:memory true}"
            ]),
            leaf(g),
            if g.below(2) == 0 {
                wait(g)
            } else {
                tree(g, depth - 1)
            }
        ),
    }
}

/// Flips the conditions' keys between ticks, as a host changes the world.
fn edit(g: &mut Gen) -> Value {
    let mut input = Value::map();
    for key in CONDITION_KEYS {
        match g.below(5) {
            0 => input
                .assoc_in(&[read_value(key).unwrap()], Value::Int(g.below(3) as i64))
                .unwrap(),
            1 if g.below(4) == 0 => input
                .assoc_in(&[read_value(key).unwrap()], Value::Nil)
                .unwrap(),
            _ => {}
        }
    }
    input
}

#[test]
fn generated_trees_tick_as_the_reference_says() {
    let mut g = Gen(2026);
    let mut total = Tally::default();
    for i in 0..400 {
        let text = tree(&mut g, 4);
        let start = edit(&mut g);
        let inputs: Vec<Value> = (0..8).map(|_| edit(&mut g)).collect();
        let tally = assert_agrees(&format!("tree {i}"), &text, &start, &inputs, 8);
        total.runs += tally.runs;
        total.ticks += tally.ticks;
        for (t, n) in total.statuses.iter_mut().zip(tally.statuses) {
            *t += n;
        }
    }
    // The generated cases reach every outcome, Error included.
    assert!(total.statuses.iter().all(|&n| n > 20), "{total:?}");
}
