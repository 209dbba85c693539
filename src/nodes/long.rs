//! Long-running leaves: `:wait` and `:defer`.

use crate::tick::{DropReason, Engine, Request, Status, eval};
use crate::tree::{Node, Opt, Period, Target};
use crate::value::{Keyword, Map, Value, kw};

use super::lower::key_path;
use super::{LEAF, Row};
use crate::spec::OptionType;
use crate::tree::Kind;

/// The rows of the long-running leaves.
pub(super) fn rows() -> Vec<Row> {
    use OptionType as T;
    vec![
        Row::new(
            "wait",
            "Runs for :ticks ticks, or :seconds seconds of the db's time :aido/now, then succeeds.",
            LEAF,
            &[("ticks", T::Count, false), ("seconds", T::Number, false)],
            |l| match super::decorators::period(l, "wait")? {
                Period::Ticks(ticks) => Some(Kind::Wait { ticks }),
                Period::Seconds(seconds) => Some(Kind::WaitSeconds { seconds }),
            },
        ),
        Row {
            // Options beyond these are the action's own, passed on with it.
            open_options: true,
            ..Row::new(
                "defer",
                "Launches the deferred action :action, runs until its result arrives under :aido/results, stores it at :into.",
                LEAF,
                &[("action", T::Name, true), ("into", T::Key, false)],
                |l| {
                    let action = match l.take("action") {
                        Opt::Const(Value::Keyword(k)) => k,
                        _ => Keyword::new("aido/invalid"),
                    };
                    let into = l
                        .take_opt("into")
                        .map(|into| Box::new(Target::plain(key_path(into))));
                    Some(Kind::Defer {
                        action,
                        into,
                        options: l.opts.take_custom(),
                    })
                },
            )
        },
    ]
}

impl Engine<'_> {
    /// `[:wait {:ticks n}]`: Running the first n times it is ticked, then
    /// Success; it starts over after a Success or a halt. Its count so far
    /// is its node memory (`{:ticks k}`). Inlined where a wait is visited
    /// (the general path's dispatch, and a general flow's visit of a wait
    /// child): a wait under way is one look-up and an increment, and a
    /// call around them cost more than the wait's own work. Anything else
    /// (a start, the end, a bad count or memory) is out of line.
    #[inline(always)]
    pub(super) fn wait(&mut self, id: u32, ticks: &Opt) -> Status {
        match self.count_opt(id, "ticks", ticks) {
            Ok(n) => self.wait_for(id, n),
            Err(status) => status,
        }
    }

    /// A `:wait` under way with a keyword id, counted where the position
    /// hints of `:aido/memory` in the db and of `node`'s entry in it say,
    /// one bounds check and one comparison each (the general look-up
    /// checks the places again and handles ids of any kind): whether it
    /// was (its memory `{:ticks k}` with 0 < k < `n`, now k + 1). Anything
    /// else, including a hint that misses, is left to [`Engine::wait_for`].
    /// Called where a general flow visits a `:wait` child in place
    /// (`Engine::tick_wait`).
    #[inline(always)]
    pub(super) fn wait_counted(&mut self, node: &Node, n: u64) -> bool {
        self.wait_counted_noting::<true>(node, n)
    }

    /// [`Engine::wait_counted`], the write noted only with `NOTE`: a tick
    /// on the long path, which is untraced, notes no writes (a tick asked
    /// to note them is traced, or takes the general path:
    /// `Engine::note_writes`).
    #[inline(always)]
    pub(super) fn wait_counted_noting<const NOTE: bool>(&mut self, node: &Node, n: u64) -> bool {
        // A wait of 0 or 1 ticks is never under way at a tick's start.
        if n < 2 {
            return false;
        }
        let Value::Keyword(key) = node.id.value() else {
            return false;
        };
        if NOTE {
            self.wrote(kw::MEMORY);
        }
        let tree = self.tree;
        if let Some(Value::Map(memory)) = tree.memory_key_hint.hit_value_mut(self.db, kw::MEMORY)
            && let Some(Value::Map(state)) = node.memory_hint.hit_value_mut(memory, *key)
        {
            return count_under_way(state, n);
        }
        false
    }

    /// [`Engine::wait`] of `n` ticks (its count resolved).
    #[inline(always)]
    pub(super) fn wait_for(&mut self, id: u32, n: u64) -> Status {
        // A wait under way, the usual case: its memory is `{:ticks k}` with
        // 0 < k < n, counted in place (one look-up, no new memory map).
        let has_memory = match self.memory_mut(id) {
            None => false,
            Some(Value::Map(memory)) => {
                if count_under_way(memory, n) {
                    return Status::Running;
                }
                true
            }
            Some(_) => true,
        };
        // Not started, and nothing to wait for: nothing to store or clear.
        if !has_memory && n == 0 {
            return Status::Success;
        }
        self.wait_otherwise(id, n, has_memory)
    }

    /// [`Engine::wait`] past its usual cases: a wait of `n` ticks that
    /// starts, ends, or finds memory it does not expect (`has_memory`:
    /// whether it has any).
    #[inline(never)]
    fn wait_otherwise(&mut self, id: u32, n: u64, has_memory: bool) -> Status {
        // `:ticks` is found by its interned index: no key value is made.
        let ticks_in = |memory: &Value| match memory {
            Value::Map(m) => crate::value::find_kw(m, kw::TICKS),
            _ => None,
        };
        let done = match if has_memory { self.memory(id) } else { None } {
            None => 0,
            Some(memory) => match ticks_in(memory)
                .and_then(|i| memory.as_map()?.value_at(i))
                .and_then(Value::as_int)
            {
                Some(k) if k >= 0 => k as u64,
                _ => {
                    let msg = format!("node memory {memory} is not {{:ticks k}}");
                    return self.fail(id, msg);
                }
            },
        };
        // `{:ticks k}`, written over the wait's old count in place where
        // there is one (a wait started again after its halt).
        // The count goes on in a register, never as a value (whose drop
        // would be a call).
        let (status, set) = if done < n {
            let set = self.put_count(id, kw::TICKS, done as i64 + 1);
            (Status::Running, set)
        } else {
            (Status::Success, self.set_memory(id, None))
        };
        match set {
            Ok(()) => status,
            Err(e) => self.fail(id, e),
        }
    }

    /// `[:defer {:action :name ...}]`: a deferred action, done by an outside
    /// system. When first ticked it takes the next request id from the db
    /// (`:aido/requests` counts the requests handed out), emits a launch
    /// request (with that id and its other options resolved) and returns
    /// Running. The outside system reports completion under `:aido/results
    /// {node-id {:request n, :status :success|:failure, :result x}}`; the next
    /// tick takes that entry out of the db, stores `:result` at `:into` if
    /// the node has that option, and returns the status. A completion that
    /// names another request (a late answer to a cancelled one) is dropped
    /// and reported, never applied. Halted before completion, it emits a
    /// cancel request.
    ///
    /// Its options are worked out once, at launch: the request hands them
    /// to the outside system, which works on what it was given, and the
    /// cancel names the same ones (`:launched`). A tick in flight reads only
    /// the request id and calls no function.
    #[inline(never)]
    pub(super) fn defer(
        &mut self,
        id: u32,
        action: Keyword,
        into: Option<&Target>,
        options: &[(Keyword, Opt)],
    ) -> Status {
        let node_id = self.tree.nodes[id as usize].id.clone();
        if let Some(memory) = self.memory(id) {
            // Only the request id is read while the action runs; the memory
            // is copied only when a completion is applied (to put it back if
            // the completion cannot be stored).
            let in_flight = memory.get(&Value::Keyword(kw::REQUEST)).cloned();
            let Some(result) = self.take_result(&node_id) else {
                return Status::Running;
            };
            let named = result.get(&Value::Keyword(kw::REQUEST)).cloned();
            match (&named, &in_flight) {
                (Some(named), Some(in_flight)) if named == in_flight => {}
                _ => {
                    let reason = if named.is_none() {
                        DropReason::NoRequest
                    } else {
                        DropReason::NotInFlight
                    };
                    self.drop_result(node_id, reason, result);
                    return Status::Running;
                }
            }
            let memory = self.memory(id).cloned().unwrap_or_default();
            if let Err(e) = self.set_memory(id, None) {
                return self.fail(id, e);
            }
            let status = self.complete(id, result.clone(), into);
            if status == Status::Error {
                // The completion could not be used (a bad `:status`, an
                // `:into` that cannot be written): it is not lost. The node
                // keeps waiting with its completion where it was, for the
                // host to see with the error and fix the db.
                self.restore_completion(id, node_id, memory, result);
            }
            return status;
        }
        // A completion waiting when nothing is in flight answers nothing.
        if let Some(result) = self.take_result(&node_id) {
            let reason = if result.get(&Value::Keyword(kw::REQUEST)).is_none() {
                DropReason::NoRequest
            } else {
                DropReason::NotInFlight
            };
            self.drop_result(node_id.clone(), reason, result);
        }
        let mut resolved = Map::default();
        for (key, opt) in options {
            match eval(opt, self.db, &mut self.rng) {
                Ok(v) => {
                    resolved.insert(Value::Keyword(*key), v.into_owned());
                }
                Err(e) => return self.fail(id, e),
            }
        }
        let request = match self.next_request_id() {
            Ok(n) => n,
            Err(e) => return self.fail(id, e),
        };
        let state = Value::map_from([
            (
                Value::Keyword(kw::LAUNCHED),
                Value::Map(Box::new(resolved.clone())),
            ),
            (Value::Keyword(kw::REQUEST), Value::Int(request)),
        ]);
        if let Err(e) = self.set_memory(id, Some(state)) {
            return self.fail(id, e);
        }
        self.long_state().launches.push(Request {
            node: node_id,
            request,
            action,
            options: resolved,
        });
        Status::Running
    }

    /// Hands out the next request id: one more than `:aido/requests`, which
    /// it then becomes, so ids are unique within the db.
    fn next_request_id(&mut self) -> Result<i64, String> {
        self.wrote(kw::REQUESTS);
        let slot = crate::value::map_slot(self.db, &Value::Keyword(kw::REQUESTS));
        let last = match slot {
            Value::Nil => 0,
            Value::Int(n) if *n >= 0 => *n,
            other => {
                return Err(format!(
                    "`:aido/requests` must be a non-negative integer, found {}",
                    other.type_with_article()
                ));
            }
        };
        let next = last
            .checked_add(1)
            .ok_or("`:aido/requests` is at its limit")?;
        *slot = Value::Int(next);
        Ok(next)
    }

    #[cold]
    fn restore_completion(&mut self, id: u32, node_id: Value, memory: Value, result: Value) {
        let _ = self.set_memory(id, Some(memory));
        let slot = crate::value::map_slot(self.db, &Value::Keyword(kw::RESULTS));
        if slot.is_nil() {
            *slot = Value::map();
        }
        if let Some(results) = slot.as_map_mut() {
            results.insert(node_id, result);
        }
        self.note_running(id);
    }

    /// Removes and returns the completion reported for `node_id`, if any.
    /// A `:aido/results` that is not a map is dropped and reported.
    fn take_result(&mut self, node_id: &Value) -> Option<Value> {
        let key = Value::Keyword(kw::RESULTS);
        let results = self.db.get_mut(&key)?;
        let Some(results) = results.as_map_mut() else {
            self.drop_results_not_a_map();
            return None;
        };
        let result = results.shift_remove(node_id)?;
        if results.is_empty() {
            self.db.shift_remove(&key);
        }
        Some(result)
    }

    fn complete(&mut self, id: u32, result: Value, into: Option<&Target>) -> Status {
        let status = match result
            .get(&Value::Keyword(kw::STATUS))
            .and_then(Value::as_keyword)
        {
            Some(kw::SUCCESS) => Status::Success,
            Some(kw::FAILURE) => Status::Failure,
            _ => {
                let msg = format!(
                    "the completion {result} under `:aido/results` needs `:status` :success or :failure"
                );
                return self.fail(id, msg);
            }
        };
        if let (Some(into), Some(value)) = (into, result.get(&Value::Keyword(kw::RESULT)))
            && self.store(id, into, value.clone()) == Status::Error
        {
            return Status::Error;
        }
        status
    }
}

/// Counts a wait of `n` ticks under way in place: when its memory `state`
/// is `{:ticks k}` with 0 < k < `n`, k becomes k + 1 and the answer is
/// true; anything else is left as it is for the wait's other cases.
#[inline(always)]
fn count_under_way(state: &mut Map, n: u64) -> bool {
    if state.len() == 1
        && state.keyword_at(0, kw::TICKS)
        && let Some(Value::Int(k)) = state.value_at_mut(0)
        && *k > 0
        && (*k as u64) < n
    {
        *k += 1;
        return true;
    }
    false
}
