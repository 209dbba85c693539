//! The built-in node types: their specs, their lowering from options to a
//! typed [`Kind`], and the dispatch of a tick to each node's behaviour.

mod composite;
pub(crate) mod data;
mod long;
mod plain;
mod random;

pub(crate) use plain::mark_plain;

use crate::compile::Compiler;
use crate::diag::Code;
use crate::registry::{Arity, Imp, NodeType, OptionType};
use crate::source::Span;
use crate::tick::{Engine, NodeCtx, Status, eval};
use crate::tree::NodeIndex;
use crate::tree::{CountMode, KeyPath, Kind, Opt, Parallel};
use crate::value::Value;

use data::Operator;

/// Which built-in a node type is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Builtin {
    Selector,
    Sequence,
    SelectorP,
    Loop,
    LoopUntilSuccess,
    Parallel,
    Randomly,
    Choose,
    ChooseEach,
    WeightedChoice,
    Invert,
    Always,
    Never,
    Success,
    Failure,
    Present,
    Equal,
    Test,
    LessThan,
    GreaterThan,
    Define,
    Inc,
    Counter,
    Dissoc,
    Emit,
    Wait,
    Defer,
}

const KEY: (&str, OptionType, bool) = ("key", OptionType::Key, true);

/// The specs of every built-in node type.
pub(crate) fn builtin_types() -> Vec<NodeType> {
    use Builtin as B;
    use OptionType as T;
    let some = || Arity::AtLeast(1);
    let one = || Arity::Exactly(1);
    let leaf = || Arity::Exactly(0);
    let count = ("count", T::Count, true);
    let p = ("p", T::Probability, true);
    vec![
        NodeType::builtin(
            "selector",
            some(),
            &[("memory", T::Flag, false)],
            B::Selector,
        ),
        NodeType::builtin(
            "sequence",
            some(),
            &[("memory", T::Flag, false)],
            B::Sequence,
        ),
        NodeType::builtin("selector-p", some(), std::slice::from_ref(&p), B::SelectorP),
        NodeType::builtin("loop", one(), std::slice::from_ref(&count), B::Loop),
        NodeType::builtin("loop-until-success", one(), &[count], B::LoopUntilSuccess),
        NodeType::builtin(
            "parallel",
            some(),
            &[
                ("mode", T::OneOf(&["success", "failure"]), false),
                ("how-many", T::Count, false),
                ("policy", T::OneOf(&["sequence", "selector"]), false),
                ("success-threshold", T::Count, false),
                ("failure-threshold", T::Count, false),
            ],
            B::Parallel,
        ),
        NodeType::builtin("randomly", Arity::OneOf(vec![1, 2]), &[p], B::Randomly),
        NodeType::builtin("choose", some(), &[], B::Choose),
        NodeType::builtin(
            "choose-each",
            some(),
            &[("repeat", T::Bool, false)],
            B::ChooseEach,
        ),
        NodeType::builtin(
            "weighted-choice",
            some(),
            &[("weights", T::Weights, true)],
            B::WeightedChoice,
        ),
        NodeType::builtin("invert", one(), &[], B::Invert),
        NodeType::builtin("always", one(), &[], B::Always),
        NodeType::builtin("never", one(), &[], B::Never),
        NodeType::builtin("success", leaf(), &[], B::Success),
        NodeType::builtin("failure", leaf(), &[], B::Failure),
        NodeType::builtin("present?", leaf(), &[KEY], B::Present),
        NodeType::builtin(
            "equal?",
            leaf(),
            &[("v1", T::Any, true), ("v2", T::Any, true)],
            B::Equal,
        ),
        NodeType::builtin(
            "test?",
            leaf(),
            &[KEY, ("oper", T::Operator, true), ("val", T::Any, true)],
            B::Test,
        ),
        NodeType::builtin(
            "less-than?",
            leaf(),
            &[KEY, ("val", T::Number, true)],
            B::LessThan,
        ),
        NodeType::builtin(
            "greater-than?",
            leaf(),
            &[KEY, ("val", T::Number, true)],
            B::GreaterThan,
        ),
        NodeType::builtin("define!", leaf(), &[KEY, ("val", T::Any, true)], B::Define),
        NodeType::builtin("inc!", leaf(), &[KEY], B::Inc),
        NodeType::builtin("counter!", leaf(), &[KEY], B::Counter),
        NodeType::builtin("dissoc!", leaf(), &[KEY], B::Dissoc),
        NodeType::builtin("emit!", leaf(), &[KEY, ("val", T::Any, true)], B::Emit),
        NodeType::builtin("wait", leaf(), &[("ticks", T::Count, true)], B::Wait),
        NodeType::builtin(
            "defer",
            leaf(),
            &[("action", T::Name, true), ("into", T::Key, false)],
            B::Defer,
        )
        .with_open_options(),
    ]
}

fn flag(opt: Option<Opt>) -> bool {
    matches!(opt, Some(Opt::Const(Value::Bool(true))))
}

/// Checks that a `:parallel` uses exactly one way of deciding, and builds it.
fn lower_parallel(
    c: &mut Compiler<'_>,
    opts: &mut crate::compile::Options,
    n_children: usize,
    span: Option<Span>,
) -> Parallel {
    let constant_count = |opts: &crate::compile::Options, key: &str| match opts.peek(key) {
        Some(Opt::Const(Value::Int(n))) => Some((*n).max(0) as u64),
        _ => None,
    };
    // Given at all, valid or not: a bad value was reported already.
    let has = |opts: &crate::compile::Options, key: &str| opts.given(key);
    let count = has(opts, "mode") || has(opts, "how-many");
    let policy = has(opts, "policy");
    let thresholds = has(opts, "success-threshold") || has(opts, "failure-threshold");
    let forms = usize::from(count) + usize::from(policy) + usize::from(thresholds);
    if forms != 1 {
        c.error(
            Code::MissingOption,
            if forms == 0 {
                "`:parallel` needs `:mode` and `:how-many`, or `:policy`, or `:success-threshold`/`:failure-threshold`".to_owned()
            } else {
                "`:parallel` takes one way of deciding: `:mode` and `:how-many`, or `:policy`, or thresholds, not several".to_owned()
            },
            span,
        );
    }
    for key in ["how-many", "success-threshold", "failure-threshold"] {
        if let Some(n) = constant_count(opts, key)
            && n as usize > n_children
        {
            let at = opts.span_of(key).or(span);
            c.error(
                Code::BadOptionValue,
                format!("`:{key}` is {n} but the node has only {n_children} children"),
                at,
            );
        }
    }
    if policy {
        return match opts.take("policy") {
            Opt::Const(Value::Keyword(k)) if k.as_str() == "selector" => Parallel::Selector,
            _ => Parallel::Sequence,
        };
    }
    if thresholds {
        let success = opts.take("success-threshold");
        let failure = opts.take("failure-threshold");
        let constant = |opt: &Opt| match opt {
            Opt::Const(Value::Int(n)) => Some(Some((*n).max(0) as u64)),
            Opt::Const(Value::Nil) => Some(None),
            _ => None,
        };
        return match (constant(&success), constant(&failure)) {
            (Some(success), Some(failure)) => Parallel::Thresholds { success, failure },
            _ => Parallel::DynamicThresholds(Box::new([success, failure])),
        };
    }
    if count && !(has(opts, "mode") && has(opts, "how-many")) {
        let missing = if has(opts, "mode") {
            ":how-many"
        } else {
            ":mode"
        };
        c.error(
            Code::MissingOption,
            format!("`:parallel` with `:mode`/`:how-many` needs both: `{missing}` is missing"),
            span,
        );
    }
    let mode = match opts.take("mode") {
        Opt::Const(Value::Keyword(k)) if k.as_str() == "failure" => CountMode::Failures,
        Opt::Const(Value::Keyword(k)) if k.as_str() == "success" => CountMode::Successes,
        other => CountMode::Dynamic(other),
    };
    Parallel::Count {
        mode,
        how_many: opts.take("how-many"),
    }
}

fn key_path(opt: Opt) -> KeyPath {
    match opt {
        Opt::Const(v) => KeyPath::from_value(&v),
        _ => KeyPath::One(Value::Nil),
    }
}

impl Builtin {
    /// Builds the typed node from checked options, adding the checks that
    /// need the child count. `None` only when a diagnostic was reported.
    pub(crate) fn lower(
        self,
        c: &mut Compiler<'_>,
        mut opts: crate::compile::Options,
        n_children: usize,
        span: Option<Span>,
    ) -> Option<Kind> {
        use Builtin as B;
        Some(match self {
            B::Selector => Kind::Selector {
                memory: flag(opts.take_opt("memory")),
            },
            B::Sequence => Kind::Sequence {
                memory: flag(opts.take_opt("memory")),
            },
            B::SelectorP => Kind::SelectorP { p: opts.take("p") },
            B::Loop => Kind::Loop {
                count: opts.take("count"),
            },
            B::LoopUntilSuccess => Kind::LoopUntilSuccess {
                count: opts.take("count"),
            },
            B::Parallel => Kind::Parallel(lower_parallel(c, &mut opts, n_children, span)),
            B::Randomly => Kind::Randomly { p: opts.take("p") },
            B::Choose => Kind::Choose,
            B::ChooseEach => Kind::ChooseEach {
                repeat: opts
                    .take_opt("repeat")
                    .unwrap_or(Opt::Const(Value::Bool(false))),
            },
            B::WeightedChoice => {
                let at = opts.span_of("weights").or(span);
                let weights = opts.take("weights");
                if let Opt::Const(Value::Vector(ws)) = &weights
                    && ws.len() != n_children
                {
                    c.error(
                        Code::BadOptionValue,
                        format!(
                            "`:weights` has {} weight{} but the node has {n_children} children: give one per child",
                            ws.len(),
                            if ws.len() == 1 { "" } else { "s" }
                        ),
                        at,
                    );
                }
                Kind::WeightedChoice { weights }
            }
            B::Invert => Kind::Invert,
            B::Always => Kind::Always,
            B::Never => Kind::Never,
            B::Success => Kind::Success,
            B::Failure => Kind::Failure,
            B::Present => Kind::Present {
                key: key_path(opts.take("key")),
            },
            B::Equal => Kind::Equal {
                v1: opts.take("v1"),
                v2: opts.take("v2"),
            },
            B::Test => {
                let oper = match opts.take("oper") {
                    Opt::Const(Value::Symbol(s)) => {
                        Operator::parse(s.as_str()).unwrap_or(Operator::Eq)
                    }
                    _ => Operator::Eq,
                };
                Kind::Test {
                    key: key_path(opts.take("key")),
                    oper,
                    val: opts.take("val"),
                }
            }
            B::LessThan => Kind::Test {
                key: key_path(opts.take("key")),
                oper: Operator::Lt,
                val: opts.take("val"),
            },
            B::GreaterThan => Kind::Test {
                key: key_path(opts.take("key")),
                oper: Operator::Gt,
                val: opts.take("val"),
            },
            B::Define => Kind::Define {
                key: key_path(opts.take("key")),
                val: opts.take("val"),
            },
            B::Inc | B::Counter => Kind::Inc {
                key: key_path(opts.take("key")),
            },
            B::Dissoc => Kind::Dissoc {
                key: key_path(opts.take("key")),
            },
            B::Wait => Kind::Wait {
                ticks: opts.take("ticks"),
            },
            B::Defer => {
                let action = match opts.take("action") {
                    Opt::Const(Value::Keyword(k)) => k,
                    _ => crate::value::Keyword::new("aido/invalid"),
                };
                let into = opts.take_opt("into").map(key_path);
                Kind::Defer {
                    action,
                    into,
                    options: opts.into_custom(),
                }
            }
            B::Emit => Kind::Emit {
                key: key_path(opts.take("key")),
                val: opts.take("val"),
            },
        })
    }
}

impl Engine<'_> {
    /// Ticks node `id` and returns its status.
    pub(crate) fn tick(&mut self, id: u32) -> Status {
        let tree = self.tree;
        let node = &tree.nodes[id as usize];
        if node.plain && self.plain_ok {
            return self.tick_plain(id);
        }
        self.fuel -= 1;
        if self.fuel == 0 {
            return self.out_of_steps(id);
        }
        if let Some(pre) = &node.pre
            && let Some(status) = self.preconditions(id, pre)
        {
            return status;
        }
        // Only composites look at their children: leaves skip the slicing.
        let kids = || tree.children_of(node);
        let status = match &node.kind {
            Kind::Selector { memory } => self.selector::<false>(id, node, *memory, kids()),
            Kind::Sequence { memory } => self.sequence::<false>(id, node, *memory, kids()),
            Kind::SelectorP { p } => self.selector_p(id, p, kids()),
            Kind::Loop { count } => self.repeat::<false>(id, count, kids(), Status::Success),
            Kind::LoopUntilSuccess { count } => {
                self.repeat::<false>(id, count, kids(), Status::Failure)
            }
            Kind::Parallel(how) => self.parallel(id, node, how, kids()),
            Kind::Randomly { p } => self.randomly(id, p, kids()),
            Kind::Choose => self.choose(id, kids()),
            Kind::ChooseEach { repeat } => self.choose_each(id, repeat, kids()),
            Kind::WeightedChoice { weights } => self.weighted_choice(id, weights, kids()),
            Kind::Invert => composite::invert(self.tick(kids()[0])),
            Kind::Always => composite::always(self.tick(kids()[0])),
            Kind::Never => composite::never(self.tick(kids()[0])),
            Kind::Wait { ticks } => self.wait(id, ticks),
            Kind::Defer {
                action,
                into,
                options,
            } => self.defer(id, *action, into.as_ref(), options),
            Kind::Custom { node_type, .. } => self.custom(id, &node_type.imp),
            kind => self.leaf(id, kind),
        };
        if status == Status::Running {
            self.note_running(id);
        }
        // Watched: something ran after the last tick, or the tick is traced.
        // (Noting the visit on the way out is as good as on the way in: the
        // node cannot be halted while it is being ticked.)
        if self.watch {
            self.mark_visited(id);
            self.note_trace(crate::tick::TraceEvent::Ticked {
                node: NodeIndex(id),
                status,
            });
        }
        status
    }

    /// Ticks a leaf that finishes in one visit: shared by the general and
    /// the plain path.
    #[inline(always)]
    pub(super) fn leaf(&mut self, id: u32, kind: &Kind) -> Status {
        match kind {
            Kind::Success => Status::Success,
            Kind::Failure => Status::Failure,
            Kind::Present { key } => Status::from_bool(key.get(self.db).is_some()),
            Kind::Equal { v1, v2 } => self.equal(id, v1, v2),
            Kind::Test { key, oper, val } => self.test(id, key, *oper, val),
            Kind::Define { key, val } => self.define(id, key, val),
            Kind::Inc { key } => self.inc(id, key),
            Kind::Dissoc { key } => match key.remove(self.db) {
                Ok(()) => Status::Success,
                Err(e) => self.fail(id, format!("cannot remove {key}: {e}")),
            },
            Kind::Emit { key, val } => self.emit(id, key, val),
            _ => self.fail(id, "not a leaf node"),
        }
    }

    #[inline(never)]
    fn custom(&mut self, id: u32, imp: &Imp) -> Status {
        let Imp::Custom(f) = imp else {
            return self.fail(id, "built-in node type lowered as custom");
        };
        let result = {
            let mut ctx = NodeCtx {
                engine: self,
                node: id,
            };
            crate::tick::catch_quietly(|| f(&mut ctx))
        };
        if let Some(e) = self.rng.error.take() {
            return self.fail(id, e);
        }
        match result {
            // An Error below this node is not the node's to swallow.
            Ok(Ok(_)) if self.error.is_some() => Status::Error,
            Ok(Ok(status)) => status,
            Ok(Err(e)) => self.fail(id, e.0),
            Err(panic) => {
                let msg = crate::tick::panic_message(panic.as_ref());
                self.fail(id, format!("node panicked: {msg}"))
            }
        }
    }

    /// Resolves a non-negative integer option (a count); a constant, the
    /// usual case, is read in place without the general conversion.
    #[inline(always)]
    pub(crate) fn count_opt(&mut self, id: u32, name: &str, opt: &Opt) -> Result<u64, Status> {
        match opt {
            Opt::Const(Value::Int(n)) if *n >= 0 => Ok(*n as u64),
            _ => self.opt_as(id, name, opt, as_count, "a non-negative integer"),
        }
    }

    /// Resolves `opt`, converting its value with `convert`; any problem is an Error at `id`.
    #[inline]
    pub(crate) fn opt_as<T>(
        &mut self,
        id: u32,
        name: &str,
        opt: &Opt,
        convert: impl Fn(&Value) -> Option<T>,
        // Shown only in an error: formatted only then.
        expected: impl std::fmt::Display,
    ) -> Result<T, Status> {
        // Constants were checked by the compiler: convert them without a detour.
        if let Opt::Const(v) = opt
            && let Some(x) = convert(v)
        {
            return Ok(x);
        }
        let value = match eval(opt, self.db, &mut self.rng) {
            Ok(v) => v,
            Err(e) => {
                let e = self.rng.error.take().unwrap_or(e);
                return Err(self.fail(id, e));
            }
        };
        match convert(&value) {
            Some(x) => Ok(x),
            None => {
                let msg = format!(
                    "`:{name}` expected {expected}, found {} `{}`",
                    value.type_name(),
                    value
                );
                Err(self.fail(id, msg))
            }
        }
    }
}

/// A non-negative integer.
pub(crate) fn as_count(v: &Value) -> Option<u64> {
    match v {
        Value::Int(i) if *i >= 0 => Some(*i as u64),
        _ => None,
    }
}

/// A number from 0 to 1.
pub(crate) fn as_probability(v: &Value) -> Option<f64> {
    v.as_f64().filter(|p| (0.0..=1.0).contains(p))
}
