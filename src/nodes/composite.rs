//! Selector, sequence, loops and parallel.
//!
//! Selectors and sequences are reactive by default (BehaviorTree.CPP's
//! ReactiveFallback and ReactiveSequence): every tick starts again from the
//! first child, and when a child stops them (Running or Failure for a
//! sequence, Running or Success for a selector) every later child that is
//! still running from an earlier tick is halted. With `{:memory true}` they
//! resume from the child that was running (SequenceWithMemory), keeping its
//! index in node memory. Skipped children are passed over; a composite
//! whose children were all skipped is skipped. Error always goes straight up.

use crate::tick::{Engine, Status};
use crate::tree::{CountMode, Opt, Parallel};
use crate::value::{Map, Value, kw};

/// How a selector and a sequence differ: which status moves on to the next child.
#[derive(Clone, Copy)]
struct Flow {
    /// The status that moves on (Failure for a selector, Success for a sequence).
    next: Status,
}

impl Engine<'_> {
    pub(super) fn selector(&mut self, id: u32, memory: bool, kids: &[u32]) -> Status {
        let flow = Flow {
            next: Status::Failure,
        };
        if memory {
            self.flow::<true>(id, kids, flow)
        } else {
            self.flow::<false>(id, kids, flow)
        }
    }

    pub(super) fn sequence(&mut self, id: u32, memory: bool, kids: &[u32]) -> Status {
        let flow = Flow {
            next: Status::Success,
        };
        if memory {
            self.flow::<true>(id, kids, flow)
        } else {
            self.flow::<false>(id, kids, flow)
        }
    }

    /// The loop shared by selectors and sequences; `MEMORY` picks the
    /// resuming variant (a constant, so the reactive one carries no trace of it).
    #[inline(always)]
    fn flow<const MEMORY: bool>(&mut self, id: u32, kids: &[u32], flow: Flow) -> Status {
        let memory = MEMORY;
        let start = if memory {
            self.resume_index(id, kids.len())
        } else {
            Ok(0)
        };
        let start = match start {
            Ok(i) => i,
            Err(status) => return status,
        };
        let mut all_skipped = true;
        for (i, &child) in kids.iter().enumerate().skip(start) {
            let status = self.tick(child);
            if status == flow.next {
                all_skipped = false;
                continue;
            }
            match status {
                Status::Skipped => continue,
                Status::Error => return Status::Error,
                Status::Running => {
                    self.halt_children_after(kids, i);
                    if memory && let Err(e) = self.set_resume_index(id, i) {
                        return self.fail(id, e);
                    }
                    return Status::Running;
                }
                decided => {
                    self.halt_children_after(kids, i);
                    if memory && let Err(e) = self.set_memory(id, None) {
                        return self.fail(id, e);
                    }
                    return decided;
                }
            }
        }
        if memory
            && start > 0
            && let Err(e) = self.set_memory(id, None)
        {
            return self.fail(id, e);
        }
        if all_skipped && start == 0 {
            Status::Skipped
        } else {
            flow.next
        }
    }

    /// Where a memory composite resumes: the index in its memory, or 0.
    fn resume_index(&mut self, id: u32, n: usize) -> Result<usize, Status> {
        let Some(memory) = self.memory(id) else {
            return Ok(0);
        };
        match memory
            .get(&Value::Keyword(kw::INDEX))
            .and_then(Value::as_int)
        {
            Some(i) if i >= 0 && (i as usize) < n => Ok(i as usize),
            _ => {
                let msg = format!("node memory {memory} is not {{:index i}} with i below {n}");
                Err(self.fail(id, msg))
            }
        }
    }

    fn set_resume_index(&mut self, id: u32, i: usize) -> Result<(), String> {
        let state =
            (i > 0).then(|| Value::map_from([(Value::Keyword(kw::INDEX), Value::Int(i as i64))]));
        self.set_memory(id, state)
    }

    /// `:loop` (`keep_going` = Success: stops at the first status that is not
    /// Success) and `:loop-until-success` (`keep_going` = Failure).
    pub(super) fn repeat(
        &mut self,
        id: u32,
        count: &Opt,
        kids: &[u32],
        keep_going: Status,
    ) -> Status {
        let count = match self.count_opt(id, "count", count) {
            Ok(n) => n,
            Err(status) => return status,
        };
        for _ in 0..count {
            let status = self.tick(kids[0]);
            if status != keep_going {
                return status;
            }
        }
        keep_going
    }

    #[inline(never)]
    pub(super) fn parallel(&mut self, id: u32, how: &Parallel, kids: &[u32]) -> Status {
        match how {
            Parallel::Count { mode, how_many } => self.parallel_count(id, mode, how_many, kids),
            Parallel::Sequence => {
                let n = kids.len() as u64;
                self.parallel_policy(id, kids, n, 1)
            }
            Parallel::Selector => {
                let n = kids.len() as u64;
                self.parallel_policy(id, kids, 1, n)
            }
            Parallel::Thresholds { success, failure } => {
                let n = kids.len() as u64;
                self.parallel_policy(id, kids, success.unwrap_or(n), failure.unwrap_or(1))
            }
        }
    }

    /// aido's parallel: ticks every child; Running counts as succeeded. With
    /// `:mode :success` it succeeds when at least `:how-many` children
    /// succeeded, else fails; with `:mode :failure` it fails when at least
    /// `:how-many` failed, else succeeds. Skipped children count as neither.
    fn parallel_count(
        &mut self,
        id: u32,
        mode: &CountMode,
        how_many: &Opt,
        kids: &[u32],
    ) -> Status {
        let (count_failures, how_many) = match self.count_options(id, mode, how_many) {
            Ok(options) => options,
            Err(status) => return status,
        };
        let (mut succeeded, mut failed, mut skipped) = (0u64, 0u64, 0usize);
        for &child in kids {
            match self.tick(child) {
                Status::Success | Status::Running => succeeded += 1,
                Status::Failure => failed += 1,
                Status::Skipped => skipped += 1,
                other => return other,
            }
        }
        if skipped == kids.len() {
            Status::Skipped
        } else {
            count_decision(count_failures, how_many, succeeded, failed)
        }
    }

    /// The options of aido's parallel: whether it counts failures (`:mode
    /// :failure`) rather than successes, and `:how-many`.
    #[inline]
    pub(super) fn count_options(
        &mut self,
        id: u32,
        mode: &CountMode,
        how_many: &Opt,
    ) -> Result<(bool, u64), Status> {
        let count_failures = match mode {
            CountMode::Successes => false,
            CountMode::Failures => true,
            CountMode::Dynamic(mode) => self.opt_as(
                id,
                "mode",
                mode,
                |v| match v.as_keyword().map(|k| k.as_str()) {
                    Some("success") => Some(false),
                    Some("failure") => Some(true),
                    _ => None,
                },
                "one of :success :failure",
            )?,
        };
        let how_many = self.count_opt(id, "how-many", how_many)?;
        Ok((count_failures, how_many))
    }

    /// A parallel with a policy: children that finished keep their status
    /// (in node memory, `{:done [..]}`) and are not ticked again until the
    /// parallel reports; it succeeds once `need_success` children succeeded
    /// and fails once `need_failure` failed (or success is out of reach).
    /// When the outcome is decided, the children still running are halted
    /// before it reports, and the next tick starts a fresh round.
    fn parallel_policy(
        &mut self,
        id: u32,
        kids: &[u32],
        need_success: u64,
        need_failure: u64,
    ) -> Status {
        let n = kids.len();
        let mut done: Vec<Option<Status>> = match self.memory(id) {
            None => vec![None; n],
            Some(memory) => match read_done(memory, n) {
                Some(done) => done,
                None => {
                    let msg = format!(
                        "node memory {memory} is not {{:done [..]}} with one entry per child"
                    );
                    return self.fail(id, msg);
                }
            },
        };
        let mut decided = None;
        for (i, &child) in kids.iter().enumerate() {
            if done[i].is_some() {
                continue;
            }
            match self.tick(child) {
                Status::Running => {}
                Status::Error => return Status::Error,
                finished => done[i] = Some(finished),
            }
            let succeeded = done.iter().filter(|s| **s == Some(Status::Success)).count() as u64;
            let failed = done.iter().filter(|s| **s == Some(Status::Failure)).count() as u64;
            let skipped = done.iter().filter(|s| **s == Some(Status::Skipped)).count() as u64;
            let reachable = n as u64 - failed - skipped;
            if skipped == n as u64 {
                decided = Some(Status::Skipped);
            } else if succeeded >= need_success.min(n as u64 - skipped) && succeeded > 0 {
                decided = Some(Status::Success);
            } else if failed >= need_failure || reachable < need_success.min(n as u64 - skipped) {
                decided = Some(Status::Failure);
            }
            if decided.is_some() {
                break;
            }
        }
        match decided {
            Some(status) => {
                // Terminate what is still running, then report; the next tick starts afresh.
                for (i, &child) in kids.iter().enumerate() {
                    if done[i].is_none() {
                        self.halt_subtree(child);
                    }
                }
                if let Err(e) = self.set_memory(id, None) {
                    return self.fail(id, e);
                }
                status
            }
            None => {
                // Nothing finished yet is the default state: store nothing.
                let state = done.iter().any(Option::is_some).then(|| done_value(&done));
                if let Err(e) = self.set_memory(id, state) {
                    return self.fail(id, e);
                }
                Status::Running
            }
        }
    }
}

/// What aido's parallel reports once its children are counted.
#[inline]
pub(super) fn count_decision(
    count_failures: bool,
    how_many: u64,
    succeeded: u64,
    failed: u64,
) -> Status {
    if count_failures {
        Status::from_bool(failed < how_many)
    } else {
        Status::from_bool(succeeded >= how_many)
    }
}

fn read_done(memory: &Value, n: usize) -> Option<Vec<Option<Status>>> {
    let done = memory.get(&Value::Keyword(kw::DONE))?.as_seq()?;
    if done.len() != n {
        return None;
    }
    done.iter()
        .map(|v| match v {
            Value::Nil => Some(None),
            Value::Keyword(k) => match k.as_str() {
                "success" => Some(Some(Status::Success)),
                "failure" => Some(Some(Status::Failure)),
                "skipped" => Some(Some(Status::Skipped)),
                _ => None,
            },
            _ => None,
        })
        .collect()
}

fn done_value(done: &[Option<Status>]) -> Value {
    let mut m = Map::default();
    m.insert(
        Value::Keyword(kw::DONE),
        Value::Vector(
            done.iter()
                .map(|s| s.map_or(Value::Nil, Status::to_value))
                .collect(),
        ),
    );
    Value::Map(Box::new(m))
}

/// The truthiness of a resolved option, used by `:repeat`.
pub(super) fn as_bool(v: &Value) -> Option<bool> {
    match v {
        Value::Bool(b) => Some(*b),
        _ => None,
    }
}
