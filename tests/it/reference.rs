//! A reference interpreter for the core built-ins, written from README's
//! node reference and *Long-running behaviours* and from the seed
//! documents (000: ReactiveSequence; 004: Clojure aido's README), not from
//! the engine's code, and the engine checked against it. It knows
//! `:selector` and `:sequence` (reactive and with memory), the counting
//! and the policy `:parallel`, `:loop`, `:loop-until-success`, `:invert`,
//! `:always`, `:never`, `:force`, `:wait {:ticks n}`, and the data nodes
//! `:success`, `:failure`, `:present?`, `:test?`, `:greater-than?`,
//! `:less-than?`, `:inc!` (`:counter!`), `:define!` and `:dissoc!`, with
//! constant options.
//!
//! The reference is a plain recursive walk over the tree as read (the
//! `Value`, never the compiled `Tree`), with its state (each node's
//! iteration, count, marks and whether it runs) in its own Rust data, not
//! in the db. A tick returns its status, writes the user keys of the db,
//! and lists what it did as `--trace` lists it: each node's status as the
//! node returns, and each halt as it happens, nodes by pre-order index.
//!
//! Generated trees, and the fixed trees of examples/ and tests/data/ that
//! use only these kinds, are ticked by the engine untraced and traced and
//! by the reference; the status, the db without `:aido/*` keys and the
//! trace must agree at every tick. A run stops comparing after a tick that
//! ends in Error: what state a db keeps after an Error is not something
//! the reference states. The step budget stays out of it (the default,
//! far above what these trees visit).

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
    trace: Vec<Event>,
}

/// What a tick did, as `--trace` shows it: each node's status as it
/// returned, each halt as it happened, nodes by pre-order index.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Event {
    Ticked(usize, Status),
    Halted(usize),
}

/// One tick of the reference.
#[derive(Debug)]
struct RefTick {
    status: Status,
    trace: Vec<Event>,
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
            trace: Vec::new(),
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
        self.trace.clear();
        let status = self.visit(0, db);
        // A node that ran and was not reached this tick is halted at its
        // end, deepest first; a tick that ends in Error ends there (its
        // db as it stood).
        for n in (0..self.nodes.len()).rev() {
            if status == Status::Error {
                break;
            }
            if was_running[n] && !self.visited[n] && self.state[n].running {
                self.halt(n);
            }
        }
        RefTick {
            status,
            trace: std::mem::take(&mut self.trace),
        }
    }

    /// Whether one tick can visit a node again after it returned
    /// Running: a loop over a counting parallel (which turns Running into
    /// a count, so the loop goes on) over something that can run (see
    /// `a_sequence_ticked_again_in_the_same_tick_keeps_its_finished_children`
    /// and `a_node_that_finishes_later_in_the_same_tick_is_not_running`).
    fn ticks_a_running_node_again_within_a_tick(&self) -> bool {
        let within = |n: usize, m: usize| n < m && m < self.nodes[n].end;
        let of = |f: &dyn Fn(&Kind) -> bool| -> Vec<usize> {
            (0..self.nodes.len())
                .filter(|&n| f(&self.nodes[n].kind))
                .collect()
        };
        let loops = of(&|k| matches!(k, Kind::Loop(_) | Kind::LoopUntilSuccess(_)));
        let counting = of(&|k| matches!(k, Kind::Counting { .. }));
        let waits = of(&|k| matches!(k, Kind::Wait(_)));
        loops.iter().any(|&l| {
            counting
                .iter()
                .any(|&c| within(l, c) && waits.iter().any(|&w| within(c, w)))
        })
    }

    fn is_reactive_sequence(&self, n: usize) -> bool {
        matches!(self.nodes[n].kind, Kind::Sequence { memory: false })
    }

    /// Halts `n`: the nodes running in its subtree are halted, deepest
    /// first, and the run state of the whole subtree is cleared.
    fn halt(&mut self, n: usize) {
        for m in (n..self.nodes[n].end).rev() {
            if self.state[m].running {
                self.trace.push(Event::Halted(m));
            }
            self.state[m] = RunState::default();
        }
    }

    /// Halts what still runs below the children of `n` after the `i`th:
    /// seed 000's `haltChildrenAfter` halts every later child that is not
    /// idle, and a halt reaches the running nodes of its subtree (a
    /// counting parallel that finished with a running child is not idle).
    fn halt_running_after(&mut self, n: usize, i: usize) {
        let later: Vec<usize> = self.nodes[n].children[i + 1..].to_vec();
        for c in later {
            for m in (c..self.nodes[c].end).rev() {
                if self.state[m].running {
                    self.halt(m);
                }
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
        self.trace.push(Event::Ticked(n, status));
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
            Kind::Selector { memory: true } | Kind::Sequence { memory: true } => {
                // A memory flow goes on from the child it stopped at, past
                // the children that give `on` (Failure for a selector,
                // Success for a sequence).
                let on = match self.nodes[n].kind {
                    Kind::Selector { .. } => Failure,
                    _ => Success,
                };
                let start = self.state[n].count as usize;
                for (i, &c) in kids.iter().enumerate().skip(start) {
                    match self.visit(c, db) {
                        status if status == on => {}
                        Error => return Error,
                        other => {
                            // As BehaviorTree.CPP's Fallback and Sequence,
                            // which they are, it halts its children when it
                            // stops.
                            self.halt_running_after(n, i);
                            self.state[n].count = if other == Running { i as i64 } else { 0 };
                            return other;
                        }
                    }
                }
                self.state[n].count = 0;
                on
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
            Kind::Loop(times) | Kind::LoopUntilSuccess(times) => {
                // A loop ticks its child again while it gives `on` (Success
                // for `:loop`, Failure for `:loop-until-success`), `times`
                // times in all, counting on from where it ran.
                let on = match self.nodes[n].kind {
                    Kind::Loop(_) => Success,
                    _ => Failure,
                };
                let mut i = self.state[n].count;
                while i < times {
                    match self.visit(kids[0], db) {
                        status if status == on => i += 1,
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
                on
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
                    None | Some(Value::Nil) => Some(Value::Int(1)),
                    // Integers stay integers (past the largest: Error), a
                    // float stays a float, as `+` has it.
                    Some(Value::Int(i)) => i.checked_add(1).map(Value::Int),
                    Some(Value::Float(f)) => Some(Value::Float(f + 1.0)),
                    Some(_) => None,
                };
                match next.map(|next| db.assoc_in(path, next)) {
                    Some(Ok(())) => Success,
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

/// A traced tick's trace as the reference writes it.
fn events(trace: &[TraceEvent]) -> Vec<Event> {
    trace
        .iter()
        .map(|e| match e {
            TraceEvent::Ticked { node, status } => Event::Ticked(node.index(), *status),
            TraceEvent::Halted { node } => Event::Halted(node.index()),
            other => panic!("an event the reference does not know: {other:?}"),
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
        if let Some(input) = inputs.get(n) {
            merge(&mut engine_db, input);
            merge(&mut ref_db, input);
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
            events(traced.trace()),
        );
        assert_eq!(
            engine,
            (expected.status, ref_db.clone(), expected.trace),
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
            let val = if g.below(5) == 0 {
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
            // Removed (a nil input), or now and then a string where
            // numbers are compared or counted, an Error.
            1 if g.below(4) == 0 => input
                .assoc_in(&[read_value(key).unwrap()], Value::Nil)
                .unwrap(),
            2 if g.below(8) == 0 => input
                .assoc_in(&[read_value(key).unwrap()], Value::string("s"))
                .unwrap(),
            _ => {}
        }
    }
    input
}

#[test]
fn generated_trees_tick_as_the_reference_says() {
    // More trees, or others, on demand: AIDO_REFERENCE_TREES=20000
    // AIDO_REFERENCE_SEED=7 (400 trees from seed 2026 by default).
    let number =
        |name: &str, default: u64| std::env::var(name).map_or(default, |s| s.parse().unwrap());
    let mut g = Gen(number("AIDO_REFERENCE_SEED", 2026));
    let mut total = Tally::default();
    let mut reentering = 0;
    for i in 0..number("AIDO_REFERENCE_TREES", 400) {
        let text = tree(&mut g, 4);
        let start = edit(&mut g);
        let inputs: Vec<Value> = (0..8).map(|_| edit(&mut g)).collect();
        let reference = Reference::new(&read_value(&text).unwrap()).unwrap();
        if reference.ticks_a_running_node_again_within_a_tick() {
            reentering += 1;
        }
        let tally = assert_agrees(&format!("tree {i}"), &text, &start, &inputs, 8);
        total.runs += tally.runs;
        total.ticks += tally.ticks;
        for (t, n) in total.statuses.iter_mut().zip(tally.statuses) {
            *t += n;
        }
    }
    eprintln!("{total:?}, {reentering} trees tick a running node again within a tick");
    // The generated cases reach every outcome, Error included, and tick
    // nodes again in the tick in which they ran.
    assert!(total.statuses.iter().all(|&n| n > 20), "{total:?}");
    assert!(reentering > 0, "{reentering} of {total:?}");
}

// ---- Fixed trees ----

/// A tree to tick, from a file: its text, its first db, the inputs merged
/// before each tick, and how many ticks.
struct Fixed {
    name: String,
    text: String,
    db: Value,
    inputs: Vec<Value>,
    ticks: usize,
}

fn edn_files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            edn_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "edn") {
            out.push(path);
        }
    }
}

/// A value given inline or as the name of a file beside `file`.
fn inline_or_file(file: &std::path::Path, v: &Value) -> Option<Value> {
    match v {
        Value::Str(name) => {
            let text = std::fs::read_to_string(file.parent()?.join(name.as_str())).ok()?;
            read_value(&text).ok()
        }
        other => Some(other.clone()),
    }
}

/// The trees of examples/ and tests/data/: tree files (with the inputs
/// file beside them, if any), scenarios (`{:tree .. :db .. :inputs ..
/// :ticks ..}`) and the cases of aido's suite.
fn fixed_trees() -> Vec<Fixed> {
    let mut files = Vec::new();
    edn_files(&common::examples_dir(), &mut files);
    edn_files(&common::data_dir(), &mut files);
    let mut fixed = Vec::new();
    for file in files {
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        let Ok(value) = read_value(&text) else {
            continue;
        };
        let name = file
            .strip_prefix(env!("CARGO_MANIFEST_DIR"))
            .unwrap()
            .display()
            .to_string();
        let seq = |v: Option<Value>| -> Vec<Value> {
            v.and_then(|v| v.as_seq().map(<[Value]>::to_vec))
                .unwrap_or_default()
        };
        let scenario = |m: &Value, name: String| -> Option<Fixed> {
            let get = |k: &str| m.get(&Value::keyword(k));
            let tree = inline_or_file(&file, get("tree")?)?;
            let db = get("db")
                .and_then(|d| inline_or_file(&file, d))
                .unwrap_or_else(Value::map);
            let inputs = seq(get("inputs").and_then(|i| inline_or_file(&file, i)));
            let ticks = get("ticks").and_then(Value::as_int).unwrap_or(1) as usize;
            Some(Fixed {
                name,
                text: tree.to_string(),
                db,
                ticks: ticks.max(inputs.len()),
                inputs,
            })
        };
        match &value {
            Value::Vector(items) if items.first().is_some_and(|i| i.as_keyword().is_some()) => {
                let stem = file.file_stem().unwrap().to_str().unwrap();
                let inputs_file = file.with_file_name(format!("{stem}.inputs.edn"));
                let inputs = seq(std::fs::read_to_string(inputs_file)
                    .ok()
                    .and_then(|t| read_value(&t).ok()));
                fixed.push(Fixed {
                    name,
                    text,
                    db: Value::map(),
                    ticks: inputs.len().max(6),
                    inputs,
                });
            }
            Value::Map(_) => fixed.extend(scenario(&value, name)),
            Value::Vector(cases) => {
                for case in cases.iter().filter(|c| c.as_map().is_some()) {
                    let case_name = case
                        .get(&Value::keyword("name"))
                        .map_or_else(String::new, Value::to_string);
                    fixed.extend(scenario(case, format!("{name} {case_name}")));
                }
            }
            _ => {}
        }
    }
    fixed
}

#[test]
fn the_fixed_trees_of_only_these_kinds_tick_as_the_reference_says() {
    let mut checked = Vec::new();
    let mut ticks = 0;
    for case in fixed_trees() {
        let Ok(value) = read_value(&case.text) else {
            continue;
        };
        let plain_db = case.db.as_map().is_some() && common::without_aido_keys(&case.db) == case.db;
        let compiles = compile_str("ref.edn", &case.text, &Registry::new()).is_ok();
        // Small counts only: the reference has no step budget.
        let small = Reference::new(&value).is_ok_and(|r| {
            r.nodes.iter().all(|n| match n.kind {
                Kind::Loop(c) | Kind::LoopUntilSuccess(c) | Kind::Wait(c) => c <= 100,
                _ => true,
            })
        });
        if !small || !plain_db || !compiles || case.ticks > 1_000 {
            continue;
        }
        ticks += assert_agrees(&case.name, &case.text, &case.db, &case.inputs, case.ticks).ticks;
        checked.push(case.name);
    }
    eprintln!("{} fixed trees, {ticks} ticks: {checked:?}", checked.len());
    assert!(checked.len() >= 20, "{checked:?}");
}

/// Inputs from EDN text, one per tick.
fn inputs(text: &str) -> Vec<Value> {
    read_value(text).unwrap().as_seq().unwrap().to_vec()
}

/// `db` with `input` merged, as a scenario merges it: a nil removes the key.
fn merge(db: &mut Value, input: &Value) {
    if let Value::Map(input) = input {
        for (k, v) in input.iter() {
            let path = std::slice::from_ref(k);
            if v.is_nil() {
                db.dissoc_in(path).unwrap();
            } else {
                db.assoc_in(path, v.clone()).unwrap();
            }
        }
    }
}

#[test]
fn the_seed_scenarios_of_only_these_kinds_hold_for_the_reference_alone() {
    // The rules of tests/data/seed/ (each a tree, inputs and the ticks the
    // rule expects: status, the nodes ticked by id, db keys), checked on
    // the reference without the engine: it states what the documents
    // state.
    let dir = common::data_dir().join("seed");
    let mut checked = Vec::new();
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| {
            n.ends_with(".edn") && !n.ends_with(".expect.edn") && !n.ends_with(".inputs.edn")
        })
        .collect();
    names.sort();
    for file in names {
        let stem = file.trim_end_matches(".edn");
        let read = |name: String| {
            std::fs::read_to_string(dir.join(name))
                .ok()
                .map(|t| read_value(&t).unwrap())
        };
        let tree = read(file.clone()).unwrap();
        let Ok(mut reference) = Reference::new(&tree) else {
            continue;
        };
        let Some(expect) = read(format!("{stem}.expect.edn")) else {
            continue;
        };
        let inputs = read(format!("{stem}.inputs.edn"))
            .map(|i| i.as_seq().unwrap().to_vec())
            .unwrap_or_default();
        // Each node's id, by pre-order index.
        let mut ids = Vec::new();
        let mut stack = vec![&tree];
        while let Some(node) = stack.pop() {
            let items = node.as_seq().unwrap();
            ids.push(
                items
                    .get(1)
                    .and_then(|o| o.get(&Value::keyword("id")))
                    .cloned(),
            );
            stack.extend(items.iter().skip(1).filter(|c| c.as_seq().is_some()).rev());
        }
        let mut db = Value::map();
        for (n, want) in expect.as_seq().unwrap().iter().enumerate() {
            merge(&mut db, inputs.get(n).unwrap_or(&Value::Nil));
            let got = reference.tick(&mut db);
            let field = |k: &str| want.get(&Value::keyword(k));
            let what = format!("{file}, tick {}", n + 1);
            assert_eq!(
                Some(&Value::keyword(got.status.as_str())),
                field("status"),
                "{what}"
            );
            let id = |i: usize| {
                ids[i]
                    .clone()
                    .unwrap_or_else(|| panic!("{what}: node {i} has no id"))
            };
            if let Some(ticked) = field("ticked") {
                let got: Vec<Value> = got
                    .trace
                    .iter()
                    .filter_map(|e| match e {
                        Event::Ticked(i, _) => Some(id(*i)),
                        Event::Halted(_) => None,
                    })
                    .collect();
                assert_eq!(got.as_slice(), ticked.as_seq().unwrap(), "{what}");
            }
            let halted: Vec<Value> = got
                .trace
                .iter()
                .filter_map(|e| match e {
                    Event::Halted(i) => Some(id(*i)),
                    Event::Ticked(..) => None,
                })
                .collect();
            let halts = field("halts").map_or(&[][..], |h| h.as_seq().unwrap());
            assert_eq!(halted.as_slice(), halts, "{what}: halts");
            for (k, v) in field("db")
                .and_then(Value::as_map)
                .into_iter()
                .flat_map(|m| m.iter())
            {
                if common::without_aido_keys(&Value::map_from([(k.clone(), v.clone())]))
                    .as_map()
                    .unwrap()
                    .len()
                    == 1
                {
                    assert_eq!(db.get(k), Some(v), "{what}: {k}");
                }
            }
        }
        checked.push(stem.to_string());
    }
    eprintln!("{} seed scenarios: {checked:?}", checked.len());
    assert!(checked.len() >= 8, "{checked:?}");
}

/// The statuses of `ticks` ticks of the reference alone.
fn reference_statuses(text: &str, db: &str, script: &str, ticks: usize) -> Vec<Status> {
    let mut reference = Reference::new(&read_value(text).unwrap()).unwrap();
    let mut db = read_value(db).unwrap();
    let script = inputs(script);
    (0..ticks)
        .map(|n| {
            merge(&mut db, script.get(n).unwrap_or(&Value::Nil));
            reference.tick(&mut db).status
        })
        .collect()
}

#[test]
fn the_documented_examples_tick_as_documented_on_the_reference_and_the_engine() {
    use Status::{Failure as F, Running as R, Success as S};
    // (tree, db, inputs, the statuses the document gives)
    let cases: &[(&str, &str, &str, &[Status])] = &[
        // README, *Reactive and memory composites*: succeeds on tick 4.
        (
            "[:sequence [:success] [:wait {:ticks 1}] [:wait {:ticks 2}]]",
            "{}",
            "[]",
            &[R, R, R, S],
        ),
        // README: the inner sequence's guard halts the second wait.
        (
            "[:sequence [:sequence [:test? {:key :ok :oper = :val true}] [:wait {:ticks 1}]] [:wait {:ticks 5}]]",
            "{:ok true}",
            "[nil nil {:ok false}]",
            &[R, R, F],
        ),
        // README, *Loops*: Running, Running, Success.
        (
            "[:loop {:count 2} [:wait {:ticks 1}]]",
            "{}",
            "[]",
            &[R, R, S],
        ),
        // README, `:wait`: starts over after a Success.
        ("[:wait {:ticks 1}]", "{}", "[]", &[R, S, R, S]),
        // README, `:force`.
        ("[:force {:status :success} [:failure]]", "{}", "[]", &[S]),
        // README, `:parallel`: Running counts as succeeded.
        (
            "[:parallel {:mode :success :how-many 2} [:failure] [:wait {:ticks 1}] [:success]]",
            "{}",
            "[]",
            &[S, S],
        ),
        // Seed 000, 5.3: a failing condition halts the action after it,
        // which starts over (three more ticks, not two).
        (
            "[:sequence [:present? {:key :a}] [:present? {:key :b}] [:wait {:ticks 2}]]",
            "{:a 1 :b 1}",
            "[nil {:a nil} {:a 1}]",
            &[R, F, R, R, S],
        ),
        // Seed 000, 5.4: the running child moves on to the next action.
        (
            "[:sequence [:present? {:key :a}] [:wait {:ticks 1}] [:wait {:ticks 1}]]",
            "{:a 1}",
            "[]",
            &[R, R, S],
        ),
        // README: a later child that ran and finished keeps its Success
        // while an earlier child runs (it is not halted, not started over).
        (
            "[:sequence [:selector [:present? {:key :a}] [:wait {:ticks 1}]] [:wait {:ticks 1}] [:wait {:ticks 2}]]",
            "{:a 1}",
            "[nil nil {:a nil} {:a 1}]",
            &[R, R, R, R, R, S],
        ),
        // README: with memory, a sequence resumes at the running child.
        (
            "[:sequence {:memory true} [:present? {:key :a}] [:wait {:ticks 1}]]",
            "{:a 1}",
            "[nil {:a nil}]",
            &[R, S, F],
        ),
    ];
    for (text, db, script, statuses) in cases {
        let got = reference_statuses(text, db, script, statuses.len());
        assert_eq!(got.as_slice(), *statuses, "the reference on {text}");
        let start = read_value(db).unwrap();
        assert_agrees(text, text, &start, &inputs(script), statuses.len() + 2);
    }
}

#[test]
fn a_sequence_ticked_again_in_the_same_tick_keeps_its_finished_children() {
    // README: "a child that was running and has finished with Success
    // keeps that Success while the sequence still runs: it is not ticked,
    // and so not started over, until the sequence finishes or is halted".
    // Tick 1: iteration 1 starts the first wait (0 is the loop, 1 the
    // parallel, 2 the sequence, 3 and 4 the waits); iteration 2 finishes
    // it and starts the second; iteration 3 must go on with the second.
    let text = "[:loop {:count 3} [:parallel {:mode :success :how-many 1} \
                [:sequence [:wait {:ticks 1}] [:wait {:ticks 2}]]]]";
    use Status::{Running as R, Success as S};
    let mut reference = Reference::new(&read_value(text).unwrap()).unwrap();
    let first = reference.tick(&mut Value::map());
    let ticked = [
        (3, R),
        (2, R),
        (1, S),
        (3, S),
        (4, R),
        (2, R),
        (1, S),
        (4, R),
        (2, R),
        (1, S),
        (0, S),
    ];
    assert_eq!(first.trace, ticked.map(|(n, s)| Event::Ticked(n, s)));
    assert_agrees("a sequence ticked again", text, &Value::map(), &[], 3);
}

#[test]
fn a_node_that_finishes_later_in_the_same_tick_is_not_running() {
    // README: "The ids of the nodes that ended a tick Running are kept in
    // the db under `:aido/running`"; "Halts reach only running nodes".
    // Tick 1: the wait (node 4) runs in the loop's first iteration and
    // succeeds in its second, so nothing runs at the end of the tick; tick
    // 2: `:stop` ends the tick at the first child, and nothing is halted.
    let text = "[:selector [:present? {:key :stop}] \
                [:loop {:count 2} [:parallel {:mode :success :how-many 1} [:wait {:ticks 1}]]]]";
    let tree = compile_str("ref.edn", text, &Registry::new()).unwrap();
    let first = tick_engine(&tree, Value::map(), false);
    assert_eq!(
        first.db.get(&Value::keyword("aido/running")),
        None,
        "{}",
        first.db
    );
    assert_agrees(
        "a node that finished",
        text,
        &Value::map(),
        &inputs("[nil {:stop true}]"),
        2,
    );
}
