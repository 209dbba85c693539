//! Selector, sequence, loops and parallel.
//!
//! As in aido, a selector stops at the first child that does not fail and a
//! sequence at the first child that does not succeed, returning that child's
//! status (so Running and Error pass up). Error always goes straight up.

use crate::tick::{Engine, Status};
use crate::tree::Opt;
use crate::value::Value;

use super::as_count;

impl Engine<'_> {
    pub(super) fn selector(&mut self, kids: &[u32]) -> Status {
        for &child in kids {
            match self.tick(child) {
                Status::Failure => {}
                other => return other,
            }
        }
        Status::Failure
    }

    pub(super) fn sequence(&mut self, kids: &[u32]) -> Status {
        for &child in kids {
            match self.tick(child) {
                Status::Success => {}
                other => return other,
            }
        }
        Status::Success
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
        let count = match self.opt_as(id, "count", count, as_count, "a non-negative integer") {
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

    /// Ticks every child; Running counts as succeeded. With `:mode :success`
    /// it succeeds when at least `:how-many` children succeeded, else fails;
    /// with `:mode :failure` it fails when at least `:how-many` failed, else succeeds.
    #[inline(never)]
    pub(super) fn parallel(&mut self, id: u32, mode: &Opt, how_many: &Opt, kids: &[u32]) -> Status {
        let count_failures = match self.opt_as(
            id,
            "mode",
            mode,
            |v| match v.as_keyword().map(|k| k.as_str()) {
                Some("success") => Some(false),
                Some("failure") => Some(true),
                _ => None,
            },
            "one of :success :failure",
        ) {
            Ok(m) => m,
            Err(status) => return status,
        };
        let how_many =
            match self.opt_as(id, "how-many", how_many, as_count, "a non-negative integer") {
                Ok(n) => n,
                Err(status) => return status,
            };
        let (mut succeeded, mut failed) = (0u64, 0u64);
        for &child in kids {
            match self.tick(child) {
                Status::Success | Status::Running => succeeded += 1,
                Status::Failure => failed += 1,
                other => return other,
            }
        }
        if count_failures {
            Status::from_bool(failed < how_many)
        } else {
            Status::from_bool(succeeded >= how_many)
        }
    }
}

/// The truthiness of a resolved option, used by `:repeat`.
pub(super) fn as_bool(v: &Value) -> Option<bool> {
    match v {
        Value::Bool(b) => Some(*b),
        _ => None,
    }
}
