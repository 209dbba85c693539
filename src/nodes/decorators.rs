//! The standard decorators, after BehaviorTree.CPP, py_trees and LimboAI:
//! `:timeout`, `:cooldown`, `:retry`, `:repeat`, `:run-once`, `:delay`,
//! `:throttle`, `:keep-running-until-failure`, `:force`, `:parallel-all`,
//! `:if` and `:switch`, and `[:wait {:seconds s}]`'s tick.
//!
//! Every stateful one keeps its state in node memory and says when that
//! state is cleared (its `:reset` option, [`Reset`]): `:on-exit` when it
//! finishes or is halted, `:on-halt` only when its subtree is halted,
//! `:never` not by the tree at all (it survives halts, saves and edits of
//! the tree around it). Only running nodes are halted (ARCHITECTURE.md,
//! *Long-running state*): a decorator that is not running when its branch
//! is left keeps its state whatever its rule.
//!
//! Periods are `{:ticks n}`, counted in the ticks the node is ticked, or
//! `{:seconds s}`, measured on the db's clock `:aido/now` (see
//! `tick/time.rs`): a timestamp compared with the time, so time passes
//! while the node is not ticked. Attempts are one a tick: a `:retry` or
//! `:repeat` never ticks its child twice in one tick, so the conditions
//! above it are checked between attempts.

use super::{Lowering, ONE, OptionRow, Row, SOME};
use crate::diag::Code;
use crate::spec::{Arity, OptionType};
use crate::tick::{Engine, Fate, Status, eval};
use crate::tree::{Cooldown, Kind, Opt, Period, Reset, Switch, Then};
use crate::value::{Keyword, Map, Value, kw};

/// The `:reset` values.
const RESETS: &[&str] = &["never", "on-halt", "on-exit"];
/// The `:reset` values of a node that keeps its state when it finishes.
const KEPT: &[&str] = &["never", "on-halt"];

/// The rows of the decorators, `:if` and `:switch`.
pub(super) fn rows() -> Vec<Row> {
    use OptionType as T;
    const TIMED: &[OptionRow] = &[
        ("ticks", T::Count, false),
        ("seconds", T::Number, false),
        ("reset", T::OneOf(RESETS), false),
    ];
    const COUNTED: &[OptionRow] = &[
        ("count", T::Count, true),
        ("reset", T::OneOf(RESETS), false),
    ];
    vec![
        Row::new(
            "timeout",
            "Ticks its child; a child still running when :ticks ticks or :seconds seconds have passed is halted and the node fails. Resets :on-exit by default.",
            ONE,
            TIMED,
            |l| {
                let period = period(l, "timeout")?;
                let reset = reset(l, "timeout", Reset::OnExit, RESETS)?;
                Some(Kind::Timeout { period, reset })
            },
        ),
        Row::new(
            "cooldown",
            "After its child succeeds (or, with :trigger-on-failure, finishes), fails without ticking it for :ticks of its ticks or :seconds seconds. :start-cooled starts cooling; :key keeps the state at a db path. Resets :never by default.",
            ONE,
            &[
                ("ticks", T::Count, false),
                ("seconds", T::Number, false),
                ("reset", T::OneOf(KEPT), false),
                ("trigger-on-failure", T::Flag, false),
                ("start-cooled", T::Flag, false),
                ("key", T::Key, false),
            ],
            |l| {
                let period = period(l, "cooldown")?;
                let reset = reset(l, "cooldown", Reset::Never, KEPT)?;
                let key = l.take_opt("key").map(super::lower::key_path);
                Some(Kind::Cooldown(Box::new(Cooldown {
                    period,
                    reset,
                    trigger_on_failure: l.flag("trigger-on-failure"),
                    start_cooled: l.flag("start-cooled"),
                    key,
                })))
            },
        ),
        Row::new(
            "retry",
            "Ticks its child once a tick until it succeeds, at most :count attempts; a failed attempt with attempts left is running. Resets :on-exit by default.",
            ONE,
            COUNTED,
            |l| {
                let reset = reset(l, "retry", Reset::OnExit, RESETS)?;
                Some(Kind::Retry {
                    count: l.take("count"),
                    reset,
                })
            },
        ),
        Row::new(
            "repeat",
            "Ticks its child once a tick until it has succeeded :count times (then succeeds) or fails; a success with rounds left is running. Resets :on-exit by default.",
            ONE,
            COUNTED,
            |l| {
                let reset = reset(l, "repeat", Reset::OnExit, RESETS)?;
                Some(Kind::Repeat {
                    count: l.take("count"),
                    reset,
                })
            },
        ),
        Row::new(
            "run-once",
            "Ticks its child until it finishes once; after that returns :then (:skip, the default, :success, :failure, or :same: the child's status) without ticking it. Never resets.",
            ONE,
            &[(
                "then",
                T::OneOf(&["skip", "success", "failure", "same"]),
                false,
            )],
            |l| {
                let at = l.opts.span_of("then");
                let then = match l.take_opt("then") {
                    None => Then::Skip,
                    Some(Opt::Const(Value::Keyword(k))) => match k.as_str() {
                        "success" => Then::Success,
                        "failure" => Then::Failure,
                        "same" => Then::Same,
                        _ => Then::Skip,
                    },
                    Some(_) => {
                        constant_only(l, "run-once", "then", at);
                        return None;
                    }
                };
                Some(Kind::RunOnce { then })
            },
        ),
        Row::new(
            "delay",
            "Runs for :ticks ticks or :seconds seconds before it ticks its child for the first time, then ticks the child until it finishes. Resets :on-exit by default.",
            ONE,
            TIMED,
            |l| {
                let period = period(l, "delay")?;
                let reset = reset(l, "delay", Reset::OnExit, RESETS)?;
                Some(Kind::Delay { period, reset })
            },
        ),
        Row::new(
            "throttle",
            "Ticks its child at most once every :ticks of its ticks or :seconds seconds; in between it returns the child's last status (a running child is kept running, not ticked). Resets :on-halt by default.",
            ONE,
            &[
                ("ticks", T::Count, false),
                ("seconds", T::Number, false),
                ("reset", T::OneOf(KEPT), false),
            ],
            |l| {
                let period = period(l, "throttle")?;
                let reset = reset(l, "throttle", Reset::OnHalt, KEPT)?;
                Some(Kind::Throttle { period, reset })
            },
        ),
        Row::new(
            "keep-running-until-failure",
            "Ticks its child every tick; its success is running, its failure is failure.",
            ONE,
            &[],
            |_| Some(Kind::KeepRunningUntilFailure),
        ),
        Row::new(
            "force",
            "Ticks its child; once it finishes, returns :status (:success or :failure) whatever the child returned.",
            ONE,
            &[("status", T::OneOf(&["success", "failure"]), true)],
            |l| {
                let at = l.opts.span_of("status");
                match l.take("status") {
                    Opt::Const(Value::Keyword(k)) => Some(Kind::Force {
                        success: k == kw::SUCCESS,
                    }),
                    Opt::Const(Value::Nil) => None,
                    _ => {
                        constant_only(l, "force", "status", at);
                        None
                    }
                }
            },
        ),
        Row::new(
            "parallel-all",
            "Ticks every child not yet finished, each tick, until all have finished; then fails if at least :max-failures (default 1) failed, else succeeds.",
            SOME,
            &[("max-failures", T::Count, false)],
            |l| {
                let n = l.n_children;
                let at = l.opts.span_of("max-failures");
                if let Some(Opt::Const(Value::Int(k))) = l.opts.peek("max-failures") {
                    let k = *k;
                    if k == 0 || k as usize > n {
                        l.error(
                            Code::BadOptionValue,
                            format!("`:max-failures` is {k} but must be from 1 to the number of children ({n})"),
                            at,
                        );
                    }
                }
                let max_failures = l
                    .take_opt("max-failures")
                    .unwrap_or(Opt::Const(Value::Int(1)));
                Some(Kind::ParallelAll { max_failures })
            },
        ),
        Row::new(
            "if",
            "[:if cond then else?]: ticks cond every tick; its success ticks then, its failure else (or fails); a change halts the branch that was running.",
            Arity::OneOf(vec![2, 3]),
            &[],
            |_| Some(Kind::If),
        ),
        Row::new(
            "switch",
            "Ticks the child whose case in :cases equals :on, halting the others; a child after the cases is the default, else no match fails.",
            SOME,
            &[("on", T::Any, true), ("cases", T::Any, true)],
            |l| {
                let at = l.opts.span_of("cases");
                let n = l.n_children;
                let cases = match l.take("cases") {
                    Opt::Const(v @ Value::Vector(_)) => v.into_seq().unwrap_or_default(),
                    Opt::Const(Value::Nil) => return None,
                    _ => {
                        l.error(
                            Code::BadOptionValue,
                            "`:switch` takes its `:cases` as a constant vector of values"
                                .to_owned(),
                            at,
                        );
                        return None;
                    }
                };
                if n != cases.len() && n != cases.len() + 1 {
                    l.error(
                        Code::Arity,
                        format!(
                            "`:switch` has {} case{} and so takes {} children (or one more, the default), found {n}",
                            cases.len(),
                            if cases.len() == 1 { "" } else { "s" },
                            cases.len()
                        ),
                        None,
                    );
                    return None;
                }
                Some(Kind::Switch(Box::new(Switch {
                    on: l.take("on"),
                    cases: cases.into(),
                })))
            },
        ),
    ]
}

/// Takes `{:ticks n}` or `{:seconds s}`: exactly one.
pub(super) fn period(l: &mut Lowering<'_, '_>, name: &str) -> Option<Period> {
    match (l.opts.given("ticks"), l.opts.given("seconds")) {
        (true, false) => Some(Period::Ticks(l.take("ticks"))),
        (false, true) => {
            let at = l.opts.span_of("seconds");
            let seconds = l.take("seconds");
            if let Opt::Const(v) = &seconds
                && !v.as_f64().is_some_and(|s| s.is_finite() && s >= 0.0)
            {
                if !v.is_nil() {
                    l.error(
                        Code::BadOptionValue,
                        format!("`:seconds` must be a number, 0 or more, found `{v}`"),
                        at,
                    );
                }
                return None;
            }
            Some(Period::Seconds(seconds))
        }
        (false, false) => {
            l.error(
                Code::MissingOption,
                format!("`:{name}` needs `:ticks` or `:seconds`"),
                None,
            );
            None
        }
        (true, true) => {
            let at = l.opts.span_of("seconds");
            l.error(
                Code::BadOptionValue,
                format!("`:{name}` takes `:ticks` or `:seconds`, not both"),
                at,
            );
            None
        }
    }
}

/// Takes `:reset`, a constant among `allowed`, else `default`.
fn reset(l: &mut Lowering<'_, '_>, name: &str, default: Reset, allowed: &[&str]) -> Option<Reset> {
    let at = l.opts.span_of("reset");
    match l.take_opt("reset") {
        None => Some(default),
        Some(Opt::Const(Value::Keyword(k))) if allowed.contains(&k.as_str()) => {
            Some(match k.as_str() {
                "never" => Reset::Never,
                "on-halt" => Reset::OnHalt,
                _ => Reset::OnExit,
            })
        }
        Some(Opt::Const(Value::Keyword(k))) => {
            let allowed: Vec<String> = allowed.iter().map(|a| format!(":{a}")).collect();
            l.error(
                Code::BadOptionValue,
                format!(
                    "`:{name}` takes `:reset` {}, not :{}",
                    allowed.join(" or "),
                    k.as_str()
                ),
                at,
            );
            None
        }
        // A constant of another kind was reported by the option check.
        Some(Opt::Const(_)) => None,
        Some(_) => {
            constant_only(l, name, "reset", at);
            None
        }
    }
}

/// Reports an option given dynamically that shapes the node.
fn constant_only(l: &mut Lowering<'_, '_>, name: &str, key: &str, at: Option<crate::source::Span>) {
    l.error(
        Code::BadDynamic,
        format!("`:{name}`'s `:{key}` shapes the node: it must be a constant, not `[:aido/db ..]` or `[:aido/fn ..]`"),
        at,
    );
}

/// `:force`: a finished child's status becomes the forced one; anything
/// else goes up as it is.
#[inline(always)]
pub(super) fn force(child: Status, success: bool) -> Status {
    match child {
        Status::Success | Status::Failure => Status::from_bool(success),
        other => other,
    }
}

/// A period resolved for this tick.
#[derive(Clone, Copy)]
enum Span {
    /// So many of the node's ticks.
    Ticks(u64),
    /// So many seconds, and the time now.
    Seconds { seconds: f64, now: f64 },
}

impl Span {
    /// The memory key the node keeps its progress under: a count of ticks
    /// (`:ticks`) or the time its period began (`:since`).
    fn key(self) -> Keyword {
        match self {
            Span::Ticks(_) => kw::TICKS,
            Span::Seconds { .. } => kw::SINCE,
        }
    }

    /// Whether the period that began at `since` (a time, or ticks counted
    /// so far) is over.
    fn over(self, since: f64) -> bool {
        match self {
            Span::Ticks(n) => since >= n as f64,
            Span::Seconds { seconds, now } => now - since >= seconds,
        }
    }
}

impl Engine<'_> {
    /// Resolves a period for node `id`.
    fn span(&mut self, id: u32, period: &Period) -> Result<Span, Status> {
        match period {
            Period::Ticks(ticks) => self.count_opt(id, "ticks", ticks).map(Span::Ticks),
            Period::Seconds(seconds) => self.seconds(id, seconds),
        }
    }

    /// Resolves a period in seconds for node `id`, with the time now.
    fn seconds(&mut self, id: u32, seconds: &Opt) -> Result<Span, Status> {
        let seconds = self.opt_as(
            id,
            "seconds",
            seconds,
            |v| v.as_f64().filter(|s| s.is_finite() && *s >= 0.0),
            "a number of seconds, 0 or more",
        )?;
        let now = self.now(id)?;
        Ok(Span::Seconds { seconds, now })
    }

    /// The number node `id` keeps under `key` in its memory, if any; a
    /// memory of another shape is an Error.
    fn kept(&mut self, id: u32, key: Keyword) -> Result<Option<f64>, Status> {
        let Some(memory) = self.memory(id) else {
            return Ok(None);
        };
        match memory.as_map().map(|m| m.get(&Value::Keyword(key))) {
            Some(None) => Ok(None),
            Some(Some(v)) if v.as_f64().is_some_and(f64::is_finite) => Ok(v.as_f64()),
            _ => {
                let msg = format!("node memory {memory} is not {{{key} n}}");
                Err(self.fail(id, msg))
            }
        }
    }

    /// The status node `id` keeps (`:status-was`), if any.
    fn kept_status_was(&mut self, id: u32) -> Result<Option<Status>, Status> {
        let Some(memory) = self.memory(id) else {
            return Ok(None);
        };
        match memory.get(&Value::Keyword(kw::STATUS_WAS)) {
            None => Ok(None),
            // Error is never kept: a db that says so was written elsewhere.
            Some(v) => match Status::from_value(v).filter(|s| *s != Status::Error) {
                Some(status) => Ok(Some(status)),
                None => {
                    let msg = format!(
                        "node memory {memory} has no status under :status-was (:success, :failure, :running or :skipped)"
                    );
                    Err(self.fail(id, msg))
                }
            },
        }
    }

    /// Stores `entries` as node `id`'s memory (none: clears it).
    fn keep(&mut self, id: u32, entries: &[(Keyword, Value)]) -> Result<(), Status> {
        let state = (!entries.is_empty()).then(|| {
            let mut m = Map::default();
            for (k, v) in entries {
                m.insert(Value::Keyword(*k), v.clone());
            }
            Value::Map(Box::new(m))
        });
        self.set_memory(id, state).map_err(|e| self.fail(id, e))
    }

    /// A decorator finished with `status`: its memory becomes `entries`,
    /// or is cleared if it resets on exit.
    fn exit_with(
        &mut self,
        id: u32,
        reset: Reset,
        entries: &[(Keyword, Value)],
        status: Status,
    ) -> Status {
        let entries = if reset == Reset::OnExit {
            &[][..]
        } else {
            entries
        };
        match self.keep(id, entries) {
            Ok(()) => status,
            Err(error) => error,
        }
    }

    /// Keeps every node of `child`'s subtree that was running after the
    /// last tick running, without ticking it (a throttle between its
    /// child's ticks): the end-of-tick sweep then leaves them be.
    fn keep_running(&mut self, child: u32) {
        let end = self.tree.nodes[child as usize].subtree_end;
        if let Some(long) = self.long.as_mut() {
            let range = child..end;
            for i in 0..long.prev_running.len() {
                let n = match long.prev_running.get_mut(i) {
                    Some((n, fate)) if *fate == Fate::Pending && range.contains(n) => {
                        *fate = Fate::Visited;
                        *n
                    }
                    _ => continue,
                };
                long.note_now(n);
            }
        }
    }

    /// `[:wait {:seconds s}]`: Running until `s` seconds have passed on
    /// `:aido/now` since its first tick (`{:since t}`, run state), then
    /// Success; it starts over after a Success or a halt.
    #[inline(never)]
    pub(super) fn wait_seconds(&mut self, id: u32, seconds: &Opt) -> Status {
        let span = match self.seconds(id, seconds) {
            Ok(span) => span,
            Err(status) => return status,
        };
        let Span::Seconds { now, .. } = span else {
            return Status::Error;
        };
        let since = match self.kept(id, kw::SINCE) {
            Ok(since) => since,
            Err(status) => return status,
        };
        let start = since.unwrap_or(now);
        if span.over(start) {
            return self.exit_with(id, Reset::OnExit, &[], Status::Success);
        }
        if since.is_none()
            && let Err(status) = self.keep(id, &[(kw::SINCE, Value::Float(start))])
        {
            return status;
        }
        Status::Running
    }

    /// `:timeout`: ticks its child; a child still Running once the period
    /// is over (ticks: the child's ticks under it; seconds: since its first
    /// tick) is halted and the node fails.
    #[inline(never)]
    pub(super) fn timeout(&mut self, id: u32, period: &Period, reset: Reset, child: u32) -> Status {
        let span = match self.span(id, period) {
            Ok(span) => span,
            Err(status) => return status,
        };
        let key = span.key();
        let kept = match self.kept(id, key) {
            Ok(kept) => kept,
            Err(status) => return status,
        };
        let progress = match span {
            Span::Ticks(_) => kept.unwrap_or(0.0) + 1.0,
            Span::Seconds { now, .. } => kept.unwrap_or(now),
        };
        let state = [(key, number(span, progress))];
        match self.tick(child) {
            Status::Running if span.over(progress) => {
                self.halt_subtree(child);
                self.exit_with(id, reset, &state, Status::Failure)
            }
            Status::Running => match self.keep(id, &state) {
                Ok(()) => Status::Running,
                Err(error) => error,
            },
            status @ (Status::Success | Status::Failure) => {
                self.exit_with(id, reset, &state, status)
            }
            other => other,
        }
    }

    /// `:cooldown`: see its row. Its state is a number: in ticks, the
    /// ticks of cooling still to go; in seconds, when the cooling began.
    #[inline(never)]
    pub(super) fn cooldown(&mut self, id: u32, c: &Cooldown, child: u32) -> Status {
        let span = match self.span(id, &c.period) {
            Ok(span) => span,
            Err(status) => return status,
        };
        let key = span.key();
        let state = match &c.key {
            None => self.kept(id, key),
            Some(path) => match path.get(self.db) {
                None | Some(Value::Nil) => Ok(None),
                Some(v) if v.as_f64().is_some_and(f64::is_finite) => Ok(v.as_f64()),
                Some(v) => {
                    let msg = format!(
                        "the cooldown's `:key` {path} must hold a number, found {} `{}`",
                        v.type_name(),
                        v.abbreviated(40).0
                    );
                    Err(self.fail(id, msg))
                }
            },
        };
        let state = match state {
            Ok(state) => state,
            Err(status) => return status,
        };
        // When the cooling starts now: its state.
        let started = match span {
            Span::Ticks(n) => n as f64,
            Span::Seconds { now, .. } => now,
        };
        let stored = state;
        let state = match state {
            None if c.start_cooled => Some(started),
            other => other,
        };
        // Still cooling: fail, counting a tick down.
        let cooling = match (span, state) {
            (_, None) => None,
            (Span::Ticks(_), Some(left)) => (left > 0.0).then_some(left - 1.0),
            (Span::Seconds { seconds, now }, Some(since)) => {
                (now - since < seconds).then_some(since)
            }
        };
        if let Some(next) = cooling {
            // The last tick of cooling drops a count of ticks (unless it
            // started cooled: its state then says it has begun).
            let next = match span {
                Span::Ticks(_) if next <= 0.0 && !c.start_cooled => None,
                _ => Some(next),
            };
            if next != stored
                && let Err(error) = self.store_cooldown(id, c, key, span, next)
            {
                return error;
            }
            return Status::Failure;
        }
        let status = self.tick(child);
        let triggered = match status {
            Status::Success => true,
            Status::Failure => c.trigger_on_failure,
            _ => false,
        };
        let next = if triggered {
            Some(started)
        } else {
            // Cooled: a tick count that reached 0 is dropped, unless the
            // cooldown started cooled (then its state says it has begun).
            state.filter(|_| matches!(span, Span::Seconds { .. }) || c.start_cooled)
        };
        if next != stored
            && let Err(error) = self.store_cooldown(id, c, key, span, next)
        {
            return error;
        }
        status
    }

    /// Writes a cooldown's state to its `:key` or its memory.
    fn store_cooldown(
        &mut self,
        id: u32,
        c: &Cooldown,
        key: Keyword,
        span: Span,
        state: Option<f64>,
    ) -> Result<(), Status> {
        let value = state.map(|s| number(span, s));
        if let Some(path) = &c.key {
            self.wrote_at(path);
        }
        match (&c.key, value) {
            (None, value) => {
                let entries: Vec<(Keyword, Value)> = value.map(|v| (key, v)).into_iter().collect();
                self.keep(id, &entries)
            }
            (Some(path), Some(value)) => match path.slot(self.db) {
                Ok(slot) => {
                    *slot = value;
                    Ok(())
                }
                Err(e) => Err(self.fail(id, format!("cannot write {path}: {e}"))),
            },
            (Some(path), None) => path
                .remove(self.db)
                .map_err(|e| self.fail(id, format!("cannot remove {path}: {e}"))),
        }
    }

    /// `:retry` (`until` Success) and `:repeat` (`until` Failure, inverted:
    /// it repeats while the child succeeds): one attempt a tick; a finished
    /// attempt that does not end it, with attempts left, is Running. The
    /// attempts finished are its memory (`{:attempt k}`); with attempts
    /// spent and kept (`:reset :never`), it fails (`:retry`) or succeeds
    /// (`:repeat`) without ticking its child.
    #[inline(never)]
    pub(super) fn attempts(
        &mut self,
        id: u32,
        count: &Opt,
        reset: Reset,
        child: u32,
        retry: bool,
    ) -> Status {
        let n = match self.count_opt(id, "count", count) {
            Ok(n) => n,
            Err(status) => return status,
        };
        let done = match self.kept(id, kw::ATTEMPT) {
            Ok(done) => done.map_or(0, |k| k.max(0.0) as u64),
            Err(status) => return status,
        };
        // What ends it for good, and what counts an attempt.
        let (stop, again) = if retry {
            (Status::Success, Status::Failure)
        } else {
            (Status::Failure, Status::Success)
        };
        if done >= n {
            return again;
        }
        let status = self.tick(child);
        let attempt = |k: u64| [(kw::ATTEMPT, Value::Int(k as i64))];
        if status == stop {
            return self.exit_with(id, reset, &attempt(done), status);
        }
        if status != again {
            return status;
        }
        let done = done + 1;
        if done >= n {
            return self.exit_with(id, reset, &attempt(done), again);
        }
        match self.keep(id, &attempt(done)) {
            Ok(()) => Status::Running,
            Err(error) => error,
        }
    }

    /// `:run-once`: ticks its child until it finishes once (its status
    /// kept as `{:status-was s}`, never reset), then returns `then`.
    #[inline(never)]
    pub(super) fn run_once(&mut self, id: u32, then: crate::tree::Then, child: u32) -> Status {
        match self.kept_status_was(id) {
            Err(status) => status,
            Ok(Some(was)) => match then {
                Then::Skip => Status::Skipped,
                Then::Success => Status::Success,
                Then::Failure => Status::Failure,
                Then::Same => was,
            },
            Ok(None) => {
                let status = self.tick(child);
                if matches!(status, Status::Success | Status::Failure)
                    && let Err(error) = self.keep(id, &[(kw::STATUS_WAS, status.to_value())])
                {
                    return error;
                }
                status
            }
        }
    }

    /// `:delay`: Running for the period (ticks: its own ticks; seconds:
    /// since its first tick), then ticks its child until it finishes.
    #[inline(never)]
    pub(super) fn delay(&mut self, id: u32, period: &Period, reset: Reset, child: u32) -> Status {
        let span = match self.span(id, period) {
            Ok(span) => span,
            Err(status) => return status,
        };
        let key = span.key();
        let kept = match self.kept(id, key) {
            Ok(kept) => kept,
            Err(status) => return status,
        };
        let since = match span {
            Span::Ticks(_) => kept.unwrap_or(0.0),
            Span::Seconds { now, .. } => kept.unwrap_or(now),
        };
        let state = [(key, number(span, since))];
        if !span.over(since) {
            let waited = match span {
                Span::Ticks(_) => Some([(key, number(span, since + 1.0))]),
                // The start is stored once.
                Span::Seconds { .. } => kept.is_none().then(|| state.clone()),
            };
            if let Some(waited) = waited
                && let Err(error) = self.keep(id, &waited)
            {
                return error;
            }
            return Status::Running;
        }
        if kept.is_none()
            && let Err(error) = self.keep(id, &state)
        {
            return error;
        }
        match self.tick(child) {
            status @ (Status::Success | Status::Failure) => {
                self.exit_with(id, reset, &state, status)
            }
            other => other,
        }
    }

    /// `:throttle`: ticks its child at most once a period; in between it
    /// returns the status the child last returned (`{:status-was s}`, with
    /// `:ticks` ticks since, or `:since` the time), keeping a running child
    /// running without ticking it.
    #[inline(never)]
    pub(super) fn throttle(&mut self, id: u32, period: &Period, child: u32) -> Status {
        let span = match self.span(id, period) {
            Ok(span) => span,
            Err(status) => return status,
        };
        let key = span.key();
        let (kept, was) = match (self.kept(id, key), self.kept_status_was(id)) {
            (Ok(kept), Ok(was)) => (kept, was),
            (Err(status), _) | (_, Err(status)) => return status,
        };
        if let (Some(since), Some(was)) = (kept, was) {
            let waiting = match span {
                // Ticks since the child's: this one is one more.
                Span::Ticks(_) => (!span.over(since + 1.0)).then_some(since + 1.0),
                Span::Seconds { .. } => (!span.over(since)).then_some(since),
            };
            if let Some(since) = waiting {
                if matches!(span, Span::Ticks(_))
                    && let Err(error) = self.keep(
                        id,
                        &[(key, number(span, since)), (kw::STATUS_WAS, was.to_value())],
                    )
                {
                    return error;
                }
                if was == Status::Running {
                    self.keep_running(child);
                }
                return was;
            }
        }
        let status = self.tick(child);
        if status == Status::Error {
            return status;
        }
        let since = match span {
            Span::Ticks(_) => 0.0,
            Span::Seconds { now, .. } => now,
        };
        match self.keep(
            id,
            &[
                (key, number(span, since)),
                (kw::STATUS_WAS, status.to_value()),
            ],
        ) {
            Ok(()) => status,
            Err(error) => error,
        }
    }

    /// `:keep-running-until-failure`: the child's Success is Running.
    #[inline(never)]
    pub(super) fn keep_running_until_failure(&mut self, child: u32) -> Status {
        match self.tick(child) {
            Status::Success => Status::Running,
            other => other,
        }
    }

    /// `:parallel-all`: ticks every child not finished in this round;
    /// finished ones are kept (`{:done [..]}`, run state) until all have
    /// finished, then it decides and starts afresh.
    #[inline(never)]
    pub(super) fn parallel_all(&mut self, id: u32, max_failures: &Opt, kids: &[u32]) -> Status {
        let max_failures = match self.count_opt(id, "max-failures", max_failures) {
            Ok(k) => k,
            Err(status) => return status,
        };
        let n = kids.len();
        let mut done: Vec<Option<Status>> = match self.memory(id) {
            None => vec![None; n],
            Some(memory) => match super::composite::read_done(memory, n) {
                Some(done) => done,
                None => {
                    let msg = format!(
                        "node memory {memory} is not {{:done [..]}} with one entry per child"
                    );
                    return self.fail(id, msg);
                }
            },
        };
        for (i, &child) in kids.iter().enumerate() {
            if done[i].is_some() {
                continue;
            }
            match self.tick(child) {
                Status::Running => {}
                Status::Error => return Status::Error,
                finished => done[i] = Some(finished),
            }
        }
        if done.iter().any(Option::is_none) {
            let state = done
                .iter()
                .any(Option::is_some)
                .then(|| super::composite::done_value(&done));
            return match self.set_memory(id, state) {
                Ok(()) => Status::Running,
                Err(e) => self.fail(id, e),
            };
        }
        if let Err(e) = self.set_memory(id, None) {
            return self.fail(id, e);
        }
        let failed = done.iter().filter(|d| **d == Some(Status::Failure)).count() as u64;
        if done.iter().all(|d| *d == Some(Status::Skipped)) {
            Status::Skipped
        } else {
            Status::from_bool(failed < max_failures)
        }
    }

    /// `[:if cond then else?]`: cond every tick; the branch not taken is
    /// halted (if it was running) before the other is ticked.
    #[inline(never)]
    pub(super) fn if_then_else(&mut self, kids: &[u32]) -> Status {
        let (Some(&cond), Some(&then)) = (kids.first(), kids.get(1)) else {
            return Status::Failure;
        };
        let otherwise = kids.get(2).copied();
        match self.tick(cond) {
            Status::Success => {
                if let Some(e) = otherwise {
                    self.halt_subtree(e);
                }
                self.tick(then)
            }
            Status::Failure => {
                self.halt_subtree(then);
                match otherwise {
                    Some(e) => self.tick(e),
                    None => Status::Failure,
                }
            }
            Status::Skipped => {
                self.halt_subtree(then);
                if let Some(e) = otherwise {
                    self.halt_subtree(e);
                }
                Status::Skipped
            }
            other => other,
        }
    }

    /// `:switch`: the child of the first case equal to `:on` (or the
    /// default), the others halted first; no case and no default: Failure.
    #[inline(never)]
    pub(super) fn switch(&mut self, id: u32, s: &Switch, kids: &[u32]) -> Status {
        let pick = match eval(&s.on, self.db, &mut self.rng) {
            Ok(on) => s.cases.iter().position(|case| *case == *on),
            Err(e) => {
                let e = self.rng.error.take().unwrap_or(e);
                return self.fail(id, e);
            }
        };
        let pick = pick.or((kids.len() > s.cases.len()).then_some(s.cases.len()));
        for (i, &child) in kids.iter().enumerate() {
            if Some(i) != pick {
                self.halt_subtree(child);
            }
        }
        match pick.and_then(|i| kids.get(i)) {
            Some(&child) => self.tick(child),
            None => Status::Failure,
        }
    }
}

/// A period's state as a value: a count of ticks is an integer, a time a float.
fn number(span: Span, x: f64) -> Value {
    match span {
        Span::Ticks(_) => Value::Int(x as i64),
        Span::Seconds { .. } => Value::Float(x),
    }
}

#[cfg(test)]
mod tests {
    use super::force;
    use crate::tick::Status;

    #[test]
    fn force_maps_finished_statuses_and_passes_the_rest_up() {
        use Status::*;
        let all = [Success, Failure, Running, Error, Skipped];
        assert_eq!(
            all.map(|s| force(s, true)),
            [Success, Success, Running, Error, Skipped]
        );
        assert_eq!(
            all.map(|s| force(s, false)),
            [Failure, Failure, Running, Error, Skipped]
        );
    }
}
