//! `next_wake`: when an agent next needs a tick, read from its db and tree
//! without ticking, so that a store ticks only the agents that need it.

use crate::tree::{Kind, Opt, Period, Tree};
use crate::value::{Value, kw};

/// When an agent next needs a tick: the answer of [`next_wake`].
///
/// Ordered from the most to the least urgent, so the wake of an agent with
/// several running leaves is the smallest of theirs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Wake {
    /// Tick now: a completion waits in `:aido/results`, or a running node
    /// may change on any tick (a user node type, an option read from the db
    /// or computed).
    Now,
    /// Tick now, and the next change of outcome is `n` ticks away (a
    /// `:wait` with `n` ticks to go). A store that ticks on a clock ticks
    /// it each time; one that ticks per event may tick it `n` times.
    Ticks(u64),
    /// Tick when `:aido/now` reaches this time, in milliseconds (the
    /// seconds of `:aido/now` times 1,000, rounded up): a `:wait
    /// {:seconds s}`, or a `:timeout` or `:delay` measured in seconds, is
    /// running.
    At(i64),
    /// Tick when an event arrives: an input, or a deferred action's
    /// completion. Nothing is running but `:defer`s, or nothing runs at all
    /// (the root finished, or the agent was never ticked: its first input
    /// starts it).
    OnEvent,
    /// Never: the db is not a map, so a tick could only end in Error.
    Never,
}

/// When the agent whose db is `db` next needs a tick of `tree`.
///
/// What it knows, node by node, for the nodes in `:aido/running` (the
/// composites above them follow their leaves):
/// - `:wait` with a constant `:ticks`: [`Wake::Ticks`] with the ticks to go;
/// - `:defer`: [`Wake::OnEvent`], its completion is an event;
/// - `:wait {:seconds s}`, and a `:timeout` or `:delay` over `:seconds`,
///   with a constant period: [`Wake::At`] the time its period ends;
/// - a decorator that counts its own ticks (`:timeout`, `:delay` over
///   `:ticks`), a `:retry` or `:repeat` between attempts, a
///   `:keep-running-until-failure`: [`Wake::Now`];
/// - a user node type, or any running node whose options come from the db
///   or a function: [`Wake::Now`] (it may change on any tick);
/// - a db with completions waiting under `:aido/results`: [`Wake::Now`];
/// - a db last ticked with another tree (its `:aido/tree` fingerprint),
///   which the tick migrates first, or whose running set names nodes this
///   tree does not have: [`Wake::Now`].
///
/// A node type added later answers in the exhaustive match on its kind.
///
/// ```
/// use aido::tick::{Wake, next_wake};
/// let tree = aido::compile_str(
///     "t.edn",
///     "[:sequence [:wait {:ticks 3}] [:defer {:action :ask}]]",
///     &aido::Registry::new(),
/// )
/// .unwrap();
/// let db = aido::run_tick(aido::Value::map(), &tree).db;
/// assert_eq!(next_wake(&db, &tree), Wake::Ticks(2));
/// ```
pub fn next_wake(db: &Value, tree: &Tree) -> Wake {
    let Some(map) = db.as_map() else {
        return Wake::Never;
    };
    if let Some(results) = map.get(&Value::Keyword(kw::RESULTS))
        && results.as_map().is_none_or(|r| !r.is_empty())
    {
        return Wake::Now;
    }
    if let Some(recorded) = map.get(&Value::Keyword(kw::TREE))
        && *recorded != Value::Int(tree.fingerprint())
    {
        // The db is of another tree: the tick migrates it first.
        return Wake::Now;
    }
    let Some(running) = map.get(&Value::Keyword(kw::RUNNING)) else {
        return Wake::OnEvent;
    };
    let Some(ids) = running.as_seq() else {
        // A tick reports the malformed running set.
        return Wake::Now;
    };
    let memory = map.get(&Value::Keyword(kw::MEMORY));
    let mut wake = Wake::OnEvent;
    for id in ids {
        let Some(node) = tree.find(id) else {
            return Wake::Now;
        };
        let node = &tree.nodes[node.index()];
        let this = match &node.kind {
            Kind::Wait { ticks } => match ticks {
                Opt::Const(Value::Int(n)) => {
                    let done = memory
                        .and_then(|m| m.get(&node.id))
                        .and_then(|m| m.get(&Value::Keyword(kw::TICKS)))
                        .and_then(Value::as_int)
                        .unwrap_or(0);
                    Wake::Ticks(n.saturating_sub(done).max(1) as u64)
                }
                _ => Wake::Now,
            },
            Kind::Defer { .. } => Wake::OnEvent,
            Kind::Custom { .. } => Wake::Now,
            Kind::WaitSeconds { seconds } => ends_at(seconds, memory, &node.id),
            Kind::Timeout { period, .. } | Kind::Delay { period, .. } => match period {
                Period::Seconds(seconds) => ends_at(seconds, memory, &node.id),
                Period::Ticks(_) => Wake::Now,
            },
            Kind::Retry { .. } | Kind::Repeat { .. } | Kind::KeepRunningUntilFailure => Wake::Now,
            // Composites and decorators run only while a leaf below them
            // runs, and that leaf is in the running set too; the one-visit
            // leaves never run.
            Kind::Selector { .. }
            | Kind::Sequence { .. }
            | Kind::SelectorP { .. }
            | Kind::Loop { .. }
            | Kind::LoopUntilSuccess { .. }
            | Kind::Parallel(_)
            | Kind::Randomly { .. }
            | Kind::Choose
            | Kind::ChooseEach { .. }
            | Kind::WeightedChoice { .. }
            | Kind::Invert
            | Kind::Always
            | Kind::Never
            | Kind::Success
            | Kind::Failure
            | Kind::Present { .. }
            | Kind::Equal { .. }
            | Kind::Test { .. }
            | Kind::Define { .. }
            | Kind::Inc { .. }
            | Kind::Dissoc { .. }
            | Kind::Emit { .. }
            | Kind::Matches(_)
            | Kind::Typed(_)
            | Kind::Cooldown(_)
            | Kind::Throttle { .. }
            | Kind::RunOnce { .. }
            | Kind::Force { .. }
            | Kind::ParallelAll { .. }
            | Kind::If
            | Kind::Switch(_) => Wake::OnEvent,
        };
        wake = wake.min(this);
    }
    wake
}

/// When a period of `seconds` (a constant) that began at the node's
/// `{:since t}` ends, as [`Wake::At`]; [`Wake::Now`] when either is not known.
fn ends_at(seconds: &Opt, memory: Option<&Value>, id: &Value) -> Wake {
    let Opt::Const(seconds) = seconds else {
        return Wake::Now;
    };
    let since = memory
        .and_then(|m| m.get(id))
        .and_then(|m| m.get(&Value::Keyword(kw::SINCE)));
    let number = |v: &Value| match v {
        Value::Int(i) => Some(*i as f64),
        Value::Float(f) => Some(*f),
        _ => None,
    };
    match (number(seconds), since.and_then(number)) {
        (Some(seconds), Some(since)) if (since + seconds).is_finite() => {
            let ms = ((since + seconds) * 1000.0).ceil();
            // Saturating: a time past i64's range is as good as never.
            Wake::At(ms as i64)
        }
        _ => Wake::Now,
    }
}

impl Wake {
    /// The wake as EDN: `:now`, `[:ticks n]`, `[:at t]`, `:event`, `:never`.
    pub fn to_value(self) -> Value {
        match self {
            Wake::Now => Value::keyword("now"),
            Wake::Ticks(n) => Value::Vector(crate::value::thin_vec![
                Value::keyword("ticks"),
                Value::Int(i64::try_from(n).unwrap_or(i64::MAX)),
            ]),
            Wake::At(t) => Value::vector([Value::keyword("at"), Value::Int(t)]),
            Wake::OnEvent => Value::keyword("event"),
            Wake::Never => Value::keyword("never"),
        }
    }
}
