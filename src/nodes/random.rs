//! The random nodes: `:selector-p`, `:randomly`, `:choose`, `:choose-each`
//! and `:weighted-choice`. All draw from the tick's seeded generator.

use crate::tick::{Engine, Status};
use crate::tree::Opt;
use crate::value::{Map, Value, kw};

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

    #[inline(never)]
    pub(super) fn selector_p(&mut self, id: u32, p: &Opt, kids: &[u32]) -> Status {
        let p = match self.opt_as(id, "p", p, as_probability, "a number from 0 to 1") {
            Ok(p) => p,
            Err(status) => return status,
        };
        for &child in kids {
            match self.draw(id) {
                Ok(x) if x < p => match self.tick(child) {
                    Status::Failure => {}
                    other => return other,
                },
                Ok(_) => {}
                Err(status) => return status,
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
        match self.draw(id) {
            Ok(x) if x < p => self.tick(kids[0]),
            Ok(_) => match kids.get(1) {
                Some(&second) => self.tick(second),
                None => Status::Failure,
            },
            Err(status) => status,
        }
    }

    #[inline(never)]
    pub(super) fn choose(&mut self, id: u32, kids: &[u32]) -> Status {
        match self.draw_below(id, kids.len()) {
            Ok(i) => self.tick(kids[i]),
            Err(status) => status,
        }
    }

    /// Every child once per round, in random order. The children not yet
    /// chosen this round are kept in node memory as `{:pool [i ..]}` (child
    /// indices); a node with no memory is at the start of a round.
    #[inline(never)]
    pub(super) fn choose_each(&mut self, id: u32, repeat: &Opt, kids: &[u32]) -> Status {
        let repeat = match self.opt_as(id, "repeat", repeat, as_bool, "true or false") {
            Ok(r) => r,
            Err(status) => return status,
        };
        let mut pool = match self.memory(id) {
            None => (0..kids.len()).collect(),
            Some(memory) => match read_pool(memory, kids.len()) {
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
        self.tick(kids[pick])
    }

    #[inline(never)]
    pub(super) fn weighted_choice(&mut self, id: u32, weights: &Opt, kids: &[u32]) -> Status {
        let n = kids.len();
        let expected = format!("a vector of {n} non-negative numbers");
        let weights = match self.opt_as(id, "weights", weights, |v| read_weights(v, n), &expected) {
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
                return self.tick(kids[i]);
            }
            target -= w;
        }
        // Rounding can leave the target just past the last positive weight.
        match weights.iter().rposition(|w| *w > 0.0) {
            Some(i) => self.tick(kids[i]),
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
