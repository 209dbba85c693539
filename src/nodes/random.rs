//! The random nodes: `:selector-p`, `:randomly`, `:choose`, `:choose-each`
//! and `:weighted-choice`. All draw from the tick's seeded generator.

use crate::tick::{Engine, Status};
use crate::tree::Opt;
use crate::value::{Map, Value, kw};

use super::{Lowering, OptionRow, Row, SOME};
use crate::diag::Code;
use crate::spec::{Arity, OptionType};
use crate::tree::Kind;

/// The rows of the random node types.
pub(super) fn rows() -> Vec<Row> {
    use OptionType as T;
    const P: &[OptionRow] = &[("p", T::Probability, true)];
    vec![
        Row::new(
            "selector-p",
            "A selector that tries each child with probability :p.",
            SOME,
            P,
            |l| Some(Kind::SelectorP { p: l.take("p") }),
        ),
        Row::new(
            "randomly",
            "With probability :p ticks its first child, otherwise its second (or fails).",
            Arity::OneOf(vec![1, 2]),
            P,
            |l| Some(Kind::Randomly { p: l.take("p") }),
        ),
        Row::new(
            "choose",
            "Ticks one child picked at random.",
            SOME,
            &[],
            |_| Some(Kind::Choose),
        ),
        Row::new(
            "choose-each",
            "Ticks a random child not picked before, remembering the pool in the db; :repeat true starts over when all were picked.",
            SOME,
            &[("repeat", T::Bool, false)],
            |l| {
                Some(Kind::ChooseEach {
                    repeat: l
                        .take_opt("repeat")
                        .unwrap_or(Opt::Const(Value::Bool(false))),
                })
            },
        ),
        Row::new(
            "weighted-choice",
            "Ticks one child picked at random by :weights.",
            SOME,
            &[("weights", T::Weights, true)],
            lower_weighted_choice,
        ),
    ]
}

/// `:weighted-choice`: one weight per child, when the weights are constant.
fn lower_weighted_choice(l: &mut Lowering<'_, '_>) -> Option<Kind> {
    let at = l.opts.span_of("weights");
    let weights = l.take("weights");
    let n_children = l.n_children;
    if let Opt::Const(Value::Vector(ws)) = &weights
        && ws.len() != n_children
    {
        l.error(
            Code::BadOptionValue,
            format!(
                "`:weights` has {} weight{} but the node has {n_children} children: give one per child",
                ws.len(),
                if ws.len() == 1 { "" } else { "s" }
            ),
            at,
        );
    }
    Some(Kind::WeightedChoice { weights })
}

use super::as_probability;
use super::composite::as_bool;

impl Engine<'_> {
    fn draw(&mut self, id: u32) -> Result<f64, Status> {
        self.random().map_err(|e| self.fail(id, e))
    }

    fn draw_below(&mut self, id: u32, n: usize) -> Result<usize, Status> {
        self.random_below(n as u64)
            .map(|i| i as usize)
            .map_err(|e| self.fail(id, e))
    }

    /// The child a random decider picked in an earlier tick and that was
    /// still running after the last one (node memory `{:running i}`, run
    /// state): it is ticked again instead of drawing.
    fn running_pick(&mut self, id: u32, n: usize) -> Result<Option<usize>, Status> {
        if !self.was_running(id) {
            return Ok(None);
        }
        let Some(memory) = self.memory(id) else {
            return Ok(None);
        };
        match memory.get(&Value::Keyword(kw::RUNNING_CHILD)) {
            None => Ok(None),
            Some(Value::Int(i)) if *i >= 0 && (*i as usize) < n => Ok(Some(*i as usize)),
            Some(_) => {
                let msg = format!("node memory {memory} is not {{:running i}} with i below {n}");
                Err(self.fail(id, msg))
            }
        }
    }

    /// Ticks child `i` of random decider `id`, remembering it while it runs.
    fn tick_pick(&mut self, id: u32, kids: &[u32], i: usize) -> Status {
        let status = self.tick(kids[i]);
        let pick = (status == Status::Running).then_some(i);
        // Only a decider that was running can have a pick to forget.
        if status != Status::Error
            && (pick.is_some() || self.was_running(id))
            && let Err(e) = self.set_running_child(id, pick)
        {
            return self.fail(id, e);
        }
        status
    }

    /// Sets (or clears) `:running` in node `id`'s memory, keeping the rest.
    fn set_running_child(&mut self, id: u32, pick: Option<usize>) -> Result<(), String> {
        let key = Value::Keyword(kw::RUNNING_CHILD);
        let current = self.memory(id);
        let now = current.and_then(|m| m.get(&key));
        if now.and_then(Value::as_int) == pick.map(|i| i as i64) {
            return Ok(());
        }
        let mut m = current.and_then(Value::as_map).cloned().unwrap_or_default();
        match pick {
            Some(i) => {
                m.insert(key, Value::Int(i as i64));
            }
            None => {
                m.shift_remove(&key);
            }
        }
        self.set_memory(id, (!m.is_empty()).then(|| Value::Map(Box::new(m))))
    }

    /// Like a selector, but each child is tried only if a draw is below p.
    /// A child left running goes on without a draw; if it then fails, the
    /// children after it are tried as usual.
    #[inline(never)]
    pub(super) fn selector_p(&mut self, id: u32, p: &Opt, kids: &[u32]) -> Status {
        let p = match self.opt_as(id, "p", p, as_probability, "a number from 0 to 1") {
            Ok(p) => p,
            Err(status) => return status,
        };
        let (start, resumed) = match self.running_pick(id, kids.len()) {
            Ok(Some(i)) => (i, true),
            Ok(None) => (0, false),
            Err(status) => return status,
        };
        for i in start..kids.len() {
            let chosen = if resumed && i == start {
                true
            } else {
                match self.draw(id) {
                    Ok(x) => x < p,
                    Err(status) => return status,
                }
            };
            if chosen {
                match self.tick_pick(id, kids, i) {
                    Status::Failure => {}
                    other => return other,
                }
            }
        }
        Status::Failure
    }

    /// One child: tick it with probability p, else fail. Two children: the
    /// first with probability p, else the second.
    #[inline(never)]
    pub(super) fn randomly(&mut self, id: u32, p: &Opt, kids: &[u32]) -> Status {
        let p = match self.opt_as(id, "p", p, as_probability, "a number from 0 to 1") {
            Ok(p) => p,
            Err(status) => return status,
        };
        match self.running_pick(id, kids.len()) {
            Ok(Some(i)) => return self.tick_pick(id, kids, i),
            Ok(None) => {}
            Err(status) => return status,
        }
        match self.draw(id) {
            Ok(x) if x < p => self.tick_pick(id, kids, 0),
            Ok(_) if kids.len() > 1 => self.tick_pick(id, kids, 1),
            Ok(_) => Status::Failure,
            Err(status) => status,
        }
    }

    #[inline(never)]
    pub(super) fn choose(&mut self, id: u32, kids: &[u32]) -> Status {
        match self.running_pick(id, kids.len()) {
            Ok(Some(i)) => return self.tick_pick(id, kids, i),
            Ok(None) => {}
            Err(status) => return status,
        }
        match self.draw_below(id, kids.len()) {
            Ok(i) => self.tick_pick(id, kids, i),
            Err(status) => status,
        }
    }

    /// Every child once per round, in random order. The children not yet
    /// chosen this round are kept in node memory as `{:pool [i ..]}` (child
    /// indices, persistent state: a halt keeps it); a node with no pool is at
    /// the start of a round. A picked child that runs is ticked again on
    /// the next tick, without a draw.
    #[inline(never)]
    pub(super) fn choose_each(&mut self, id: u32, repeat: &Opt, kids: &[u32]) -> Status {
        let repeat = match self.opt_as(id, "repeat", repeat, as_bool, "true or false") {
            Ok(r) => r,
            Err(status) => return status,
        };
        match self.running_pick(id, kids.len()) {
            Ok(Some(i)) => return self.tick_pick(id, kids, i),
            Ok(None) => {}
            Err(status) => return status,
        }
        let memory = self.memory(id);
        let mut pool = match memory.map(|m| (m, m.get(&Value::Keyword(kw::POOL)))) {
            None | Some((_, None)) => (0..kids.len()).collect(),
            Some((memory, Some(_))) => match read_pool(memory, kids.len()) {
                Some(pool) => pool,
                None => {
                    let msg = format!(
                        "node memory {memory} is not a pool of child indices below {}",
                        kids.len()
                    );
                    return self.fail(id, msg);
                }
            },
        };
        if pool.is_empty() {
            if !repeat {
                return Status::Failure;
            }
            pool = (0..kids.len()).collect();
        }
        let pick = match self.draw_below(id, pool.len()) {
            Ok(i) => pool.remove(i),
            Err(status) => return status,
        };
        // A finished round with :repeat is the default state again: store nothing.
        let state = if pool.is_empty() && repeat {
            None
        } else {
            Some(pool_value(&pool))
        };
        if let Err(e) = self.set_memory(id, state) {
            return self.fail(id, e);
        }
        self.tick_pick(id, kids, pick)
    }

    /// A child picked with probability proportional to its weight; a picked
    /// child that runs is ticked again on the next tick, without a draw.
    #[inline(never)]
    pub(super) fn weighted_choice(&mut self, id: u32, weights: &Opt, kids: &[u32]) -> Status {
        let n = kids.len();
        match self.running_pick(id, n) {
            Ok(Some(i)) => return self.tick_pick(id, kids, i),
            Ok(None) => {}
            Err(status) => return status,
        }
        let weights = match self.opt_as(
            id,
            "weights",
            weights,
            |v| read_weights(v, n),
            format_args!("a vector of {n} non-negative numbers"),
        ) {
            Ok(ws) => ws,
            Err(status) => return status,
        };
        let mut weights = weights;
        let mut total: f64 = weights.iter().sum();
        if !total.is_finite() {
            // Each weight is finite but their sum overflows: scale them all
            // down by the largest, which keeps their proportions.
            let largest = weights.iter().copied().fold(0.0, f64::max);
            weights.iter_mut().for_each(|w| *w /= largest);
            total = weights.iter().sum();
        }
        if total <= 0.0 {
            return Status::Failure;
        }
        let mut target = match self.draw(id) {
            Ok(x) => x * total,
            Err(status) => return status,
        };
        for (i, w) in weights.iter().enumerate() {
            if target < *w {
                return self.tick_pick(id, kids, i);
            }
            target -= w;
        }
        // Rounding can leave the target just past the last positive weight.
        match weights.iter().rposition(|w| *w > 0.0) {
            Some(i) => self.tick_pick(id, kids, i),
            None => Status::Failure,
        }
    }
}

fn read_pool(memory: &Value, n: usize) -> Option<Vec<usize>> {
    let pool = memory.get(&Value::Keyword(kw::POOL))?.as_seq()?;
    pool.iter()
        .map(|v| {
            v.as_int()
                .and_then(|i| usize::try_from(i).ok())
                .filter(|i| *i < n)
        })
        .collect()
}

fn pool_value(pool: &[usize]) -> Value {
    let mut m = Map::default();
    m.insert(
        Value::Keyword(kw::POOL),
        Value::Vector(pool.iter().map(|&i| Value::Int(i as i64)).collect()),
    );
    Value::Map(Box::new(m))
}

fn read_weights(v: &Value, n: usize) -> Option<Vec<f64>> {
    let ws = v.as_seq()?;
    if ws.len() != n {
        return None;
    }
    ws.iter()
        .map(|w| w.as_f64().filter(|w| *w >= 0.0 && w.is_finite()))
        .collect()
}
