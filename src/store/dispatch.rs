//! The dispatcher: the deferred actions of stored agents, done by the same
//! handler programs as `aido chat --handler` ([`crate::handler`]).
//!
//! Each step it finishes what its programs answered, then claims free
//! outbox entries with a lease ([`Store::claim`]: entries another
//! dispatcher holds are skipped):
//! - a launch starts its action's program, which gets the idempotency key
//!   `agent/request`; when the program answers, the completion goes into
//!   the agent's inbox and the launch is deleted, in one step
//!   ([`Store::finish`]), so each completion is written once;
//! - a cancel stops the program of its request if it runs here, and is
//!   finished with its launch deleted, so no dispatcher starts it later;
//! - a launch whose action this dispatcher has no program for is left to
//!   its lease, for a dispatcher that has one.
//!
//! A dispatcher that dies (or loses the server) while a program runs, or
//! after it answered and before its completion was written, loses nothing
//! that was committed: its lease ends, another dispatcher claims the launch
//! and runs the program again. That is why external effects are at least
//! once, and why the program is given the key to recognise a repeat. A
//! completion written by a claim that is no longer held is refused
//! ([`StoreErrorKind::ClaimLost`]) and dropped, so the db still changes once.

use std::collections::HashMap;
use std::time::Duration;

use super::{Claim, OutboxKind, Store, StoreError, StoreErrorKind};
use crate::handler::{HandlerOptions, Handlers, Program};
use crate::tick::Request;
use crate::value::{Keyword, Value};

/// How a dispatcher runs.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct DispatchOptions {
    /// The handler programs' limits (timeout, output).
    pub handler: HandlerOptions,
    /// How long a claim holds its entry, in milliseconds (default 60 s):
    /// longer than a program takes (its timeout and grace), or another
    /// dispatcher runs it again meanwhile.
    pub lease_ms: i64,
    /// The most launches running at once (default 64).
    pub max_in_flight: usize,
}

impl Default for DispatchOptions {
    fn default() -> DispatchOptions {
        DispatchOptions {
            handler: HandlerOptions::default(),
            lease_ms: 60_000,
            max_in_flight: 64,
        }
    }
}

/// The point of a dispatch a probe is told of ([`Dispatcher::set_probe`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DispatchPoint {
    /// A program answered; its completion is not written yet.
    AfterHandler,
}

impl DispatchPoint {
    /// `"after-handler"`.
    pub fn as_str(self) -> &'static str {
        match self {
            DispatchPoint::AfterHandler => "after-handler",
        }
    }
}

/// What one [`Dispatcher::step`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct DispatchStep {
    /// Programs started.
    pub started: usize,
    /// Cancels finished (and their programs stopped, if they ran here).
    pub cancelled: usize,
    /// Completions written to an inbox.
    pub finished: usize,
    /// Completions dropped because their claim was lost (the lease ended,
    /// or the request was cancelled).
    pub dropped: usize,
    /// Launches claimed whose action has no program here: left to expire.
    pub unhandled: usize,
}

impl DispatchStep {
    /// Whether the step did anything.
    pub fn is_empty(&self) -> bool {
        *self == DispatchStep::default()
    }
}

/// A probe told of each [`DispatchPoint`], with the claim.
pub type DispatchProbe = Box<dyn FnMut(DispatchPoint, &Claim) + Send>;

/// Claims outbox entries and runs their programs. See [the
/// module](crate::store::dispatch).
pub struct Dispatcher {
    programs: Vec<(Keyword, Program)>,
    options: DispatchOptions,
    /// The programs running, per agent (request ids are unique per agent).
    agents: HashMap<String, Handlers>,
    /// The claims of the launches running here, by (agent, request).
    claims: HashMap<(String, i64), Claim>,
    /// Answers not yet written (the store failed): retried next step.
    pending: Vec<(Claim, Value)>,
    probe: Option<DispatchProbe>,
}

impl std::fmt::Debug for Dispatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dispatcher")
            .field("options", &self.options)
            .field("running", &self.claims.len())
            .field("pending", &self.pending.len())
            .finish_non_exhaustive()
    }
}

impl Dispatcher {
    /// A dispatcher without programs yet.
    pub fn new(options: DispatchOptions) -> Dispatcher {
        Dispatcher {
            programs: Vec::new(),
            options,
            agents: HashMap::new(),
            claims: HashMap::new(),
            pending: Vec::new(),
            probe: None,
        }
    }

    /// Handles `action` with `program` (replacing any earlier one).
    pub fn insert(&mut self, action: Keyword, program: Program) -> &mut Dispatcher {
        self.programs.retain(|(a, _)| *a != action);
        self.programs.push((action, program));
        self
    }

    /// Tells `probe` of each [`DispatchPoint`].
    pub fn set_probe(&mut self, probe: DispatchProbe) {
        self.probe = Some(probe);
    }

    /// Whether a program runs, or an answer waits to be written.
    pub fn busy(&self) -> bool {
        !self.claims.is_empty() || !self.pending.is_empty()
    }

    /// Blocks until a program has answered or `timeout` has passed.
    pub fn wait(&mut self, timeout: Duration) {
        let running: Vec<&mut Handlers> = self.agents.values_mut().filter(|h| h.busy()).collect();
        let share = timeout / u32::try_from(running.len().max(1)).unwrap_or(u32::MAX);
        for handlers in running {
            if handlers.wait_until_ready(share) {
                return;
            }
        }
    }

    /// One step at `now` (milliseconds, the clock leases are measured on):
    /// answers written, then new entries claimed and started or cancelled.
    /// On an error, answers not yet written are kept for the next step.
    pub fn step(&mut self, store: &mut dyn Store, now: i64) -> Result<DispatchStep, StoreError> {
        let mut step = DispatchStep::default();
        self.collect();
        self.write_answers(store, &mut step)?;
        self.agents
            .retain(|agent, handlers| handlers.busy() || has_claims(&self.claims, agent));
        let room = self
            .options
            .max_in_flight
            .saturating_sub(self.claims.len() + self.pending.len());
        if room == 0 {
            return Ok(step);
        }
        for claim in store.claim(now, self.options.lease_ms, room)? {
            match claim.entry.kind {
                OutboxKind::Launch => self.start(store, claim, &mut step)?,
                OutboxKind::Cancel => self.cancel(store, &claim, &mut step)?,
            }
        }
        Ok(step)
    }

    /// Moves what the programs answered to the answers to write.
    fn collect(&mut self) {
        for (agent, handlers) in &mut self.agents {
            for done in handlers.poll() {
                let Some(claim) = self.claims.remove(&(agent.clone(), done.request)) else {
                    continue;
                };
                let mut value = done.to_value();
                if let Some(map) = value.as_map_mut() {
                    map.insert(Value::keyword("node"), done.node.clone());
                }
                self.pending.push((claim, value));
            }
        }
    }

    fn write_answers(
        &mut self,
        store: &mut dyn Store,
        step: &mut DispatchStep,
    ) -> Result<(), StoreError> {
        while let Some((claim, value)) = self.pending.first().cloned() {
            if let Some(probe) = self.probe.as_mut() {
                probe(DispatchPoint::AfterHandler, &claim);
            }
            match store.finish(&claim, Some(value)) {
                Ok(()) => step.finished += 1,
                Err(e) if lost(&e) => step.dropped += 1,
                Err(e) => return Err(e),
            }
            self.pending.remove(0);
        }
        Ok(())
    }

    fn start(
        &mut self,
        store: &mut dyn Store,
        claim: Claim,
        step: &mut DispatchStep,
    ) -> Result<(), StoreError> {
        let Some(request) = Request::from_value(&claim.entry.value) else {
            // Not a request this build wrote: nothing can answer it.
            return match store.finish(&claim, None) {
                Err(e) if !lost(&e) => Err(e),
                _ => Ok(()),
            };
        };
        if !self.programs.iter().any(|(a, _)| *a == request.action) {
            step.unhandled += 1;
            return Ok(());
        }
        let handlers = self.agents.entry(claim.agent.clone()).or_insert_with(|| {
            let mut handlers = Handlers::new(self.options.handler.clone());
            for (action, program) in &self.programs {
                handlers.insert(*action, program.clone());
            }
            handlers.agent(claim.agent.clone());
            handlers
        });
        if handlers.launch(&request).is_ok() {
            step.started += 1;
            self.claims
                .insert((claim.agent.clone(), request.request), claim);
        }
        Ok(())
    }

    fn cancel(
        &mut self,
        store: &mut dyn Store,
        claim: &Claim,
        step: &mut DispatchStep,
    ) -> Result<(), StoreError> {
        let key = (claim.agent.clone(), claim.entry.request);
        if self.claims.remove(&key).is_some()
            && let (Some(handlers), Some(request)) = (
                self.agents.get_mut(&claim.agent),
                Request::from_value(&claim.entry.value),
            )
        {
            handlers.cancel(&request);
        }
        match store.finish(claim, None) {
            Ok(()) => step.cancelled += 1,
            Err(e) if lost(&e) => {}
            Err(e) => return Err(e),
        }
        Ok(())
    }
}

fn has_claims(claims: &HashMap<(String, i64), Claim>, agent: &str) -> bool {
    claims.keys().any(|(a, _)| a == agent)
}

/// A claim lost, or a completion already waiting: the answer is not
/// written, and another claim's answer is (or will be) the one applied.
fn lost(e: &StoreError) -> bool {
    matches!(
        e.kind,
        StoreErrorKind::ClaimLost { .. } | StoreErrorKind::DuplicateCompletion { .. }
    )
}
