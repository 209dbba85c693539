//! The tick's random generator, seeded from the db.
//!
//! SplitMix64 is a counter-based generator: the n-th number depends only on
//! the seed and n. So the db holds the seed (`:aido/seed`) and how many numbers
//! have been drawn (`:aido/rng-pos`); a tick that draws writes the new position
//! back, and the same db and tree always give the same run. Without a seed
//! each tick draws from fresh entropy and writes nothing.

use crate::tick::TickErrorKind;
use crate::value::{Map, Value, kw};

const GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;

/// A fresh random base for a tick without a seed. The standard library's
/// `RandomState` draws its keys from the operating system once per thread
/// and makes each new state differ, which is all an unseeded tick needs; a
/// seeded tick never comes here.
fn entropy() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    std::hash::RandomState::new().build_hasher().finish()
}

fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Not read from the db yet: most ticks never draw.
    Unloaded,
    Seeded {
        base: u64,
        pos: u64,
        /// Whether this tick drew from it (its position must be written back).
        drawn: bool,
    },
    Entropy {
        base: u64,
        pos: u64,
    },
}

/// A random generator for one tick. It also carries the tick's work meter:
/// the generator is what every resolution of an option already takes along
/// (`eval`, `FnCtx`), so the cost of the values copied and built there is
/// counted where it happens.
#[derive(Debug, Clone)]
pub(crate) struct Rng {
    state: State,
    /// Set when the db's seed or position is unusable.
    pub(crate) error: Option<String>,
    /// Work units left in this tick (see `TickOptions::work_budget`). A
    /// `u32`, so that the engine stays small enough to be moved in
    /// registers rather than copied (larger budgets are capped at
    /// `u32::MAX`).
    pub(crate) work_left: u32,
    /// The kind of the tick's error when it is not `Other`: the limit it
    /// hit, or a node type's broken one-visit declaration.
    pub(crate) error_kind: Option<TickErrorKind>,
}

impl Rng {
    #[cfg(test)]
    pub(crate) fn new() -> Rng {
        Rng::with_work_budget(u64::MAX)
    }

    /// A generator whose tick may do `budget` units of work.
    #[inline(always)]
    pub(crate) fn with_work_budget(budget: u64) -> Rng {
        Rng {
            state: State::Unloaded,
            error: None,
            work_left: u32::try_from(budget).unwrap_or(u32::MAX),
            error_kind: None,
        }
    }

    /// Counts `cost` units of work (elements copied, built or compared);
    /// an error once the tick's work budget is spent.
    pub(crate) fn charge(&mut self, cost: u64) -> Result<(), String> {
        match u32::try_from(cost)
            .ok()
            .and_then(|cost| self.work_left.checked_sub(cost))
        {
            Some(left) => {
                self.work_left = left;
                Ok(())
            }
            None => {
                self.work_left = 0;
                self.error_kind = Some(TickErrorKind::WorkBudget);
                Err(
                    "work budget exceeded (too many elements copied, built or compared in one tick)"
                        .to_owned(),
                )
            }
        }
    }

    /// Measures a value about to be copied or built: charges its weight,
    /// and refuses it if, stored at `base_depth`, it would nest deeper than
    /// the reader reads.
    pub(crate) fn charge_value(&mut self, v: &Value, base_depth: usize) -> Result<(), String> {
        let (weight, depth) = v.measure(u64::from(self.work_left));
        self.charge(weight)?;
        if base_depth + depth > crate::read::MAX_DEPTH {
            self.error_kind = Some(TickErrorKind::TooDeep);
            return Err(format!(
                "the value would nest {} deep in the db, more than {}",
                base_depth + depth,
                crate::read::MAX_DEPTH
            ));
        }
        Ok(())
    }

    fn load(&mut self, db: &Map) {
        let seed = db.get(&Value::Keyword(kw::SEED));
        let pos = db.get(&Value::Keyword(kw::RNG_POS));
        self.state = match (seed, pos) {
            (None | Some(Value::Nil), _) => State::Entropy {
                base: entropy(),
                pos: 0,
            },
            (Some(Value::Int(seed)), None | Some(Value::Nil)) => State::Seeded {
                base: mix(*seed as u64),
                pos: 0,
                drawn: false,
            },
            (Some(Value::Int(seed)), Some(Value::Int(pos))) if *pos >= 0 => State::Seeded {
                base: mix(*seed as u64),
                pos: *pos as u64,
                drawn: false,
            },
            (Some(Value::Int(_)), Some(other)) => {
                self.error = Some(format!(
                    "`:aido/rng-pos` must be a non-negative integer, found {other}"
                ));
                State::Entropy { base: 0, pos: 0 }
            }
            (Some(other), _) => {
                self.error = Some(format!("`:aido/seed` must be an integer, found {other}"));
                State::Entropy { base: 0, pos: 0 }
            }
        };
    }

    /// The next 64 random bits.
    pub(crate) fn next_u64(&mut self, db: &Map) -> u64 {
        if self.state == State::Unloaded {
            self.load(db);
        }
        match &mut self.state {
            State::Seeded { pos, .. } if *pos >= i64::MAX as u64 => {
                // The position could not be written back: the stream would
                // repeat its last number for ever.
                if self.error.is_none() {
                    self.error_kind = Some(TickErrorKind::RandomExhausted);
                    self.error = Some(format!(
                        "the random stream is exhausted (`:aido/rng-pos` reached {}); set a new `:aido/seed` and remove `:aido/rng-pos`",
                        i64::MAX
                    ));
                }
                0
            }
            State::Seeded {
                base, pos, drawn, ..
            } => {
                *drawn = true;
                *pos = pos.wrapping_add(1);
                mix(base.wrapping_add(pos.wrapping_mul(GAMMA)))
            }
            State::Entropy { base, pos } => {
                *pos = pos.wrapping_add(1);
                mix(base.wrapping_add(pos.wrapping_mul(GAMMA)))
            }
            State::Unloaded => 0,
        }
    }

    /// A float in `[0, 1)`.
    pub(crate) fn next_f64(&mut self, db: &Map) -> f64 {
        (self.next_u64(db) >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// An integer in `[0, n)`; `n` must be positive.
    pub(crate) fn below(&mut self, db: &Map, n: u64) -> u64 {
        // Multiply-shift: the bias is at most n / 2^64.
        ((u128::from(self.next_u64(db)) * u128::from(n)) >> 64) as u64
    }

    /// Whether this tick drew from a seeded generator, whose position
    /// [`Rng::store`] then writes back.
    #[inline(always)]
    pub(crate) fn drew(&self) -> bool {
        matches!(self.state, State::Seeded { drawn: true, .. })
    }

    /// Writes the position back if this tick drew from a seeded generator,
    /// saying whether it did.
    #[inline]
    pub(crate) fn store(&self, db: &mut Map) -> bool {
        if let State::Seeded { pos, drawn, .. } = self.state
            && drawn
        {
            let pos = i64::try_from(pos).unwrap_or(i64::MAX);
            *crate::value::map_slot(db, &Value::Keyword(kw::RNG_POS)) = Value::Int(pos);
            return true;
        }
        false
    }
}

/// The tick's generator as a [`rand_core::Rng`], so that `rand`'s
/// distributions, ranges and `SliceRandom` draw from it (cargo feature
/// `rand`). Got from [`FnCtx::rng`](crate::extend::FnCtx::rng) or
/// [`NodeCtx::rng`](crate::extend::NodeCtx::rng) during a tick.
///
/// It is the same stream as `random()` and `random_below()`: with
/// `:aido/seed` in the db it is seeded and replayable (a saved db goes on
/// with the same numbers), and each `next_u32` or `next_u64` takes one
/// position of `:aido/rng-pos` (`fill_bytes` one per 8 bytes). Without a
/// seed it draws from fresh entropy.
///
/// ```
/// use aido::extend::Arity;
/// use aido::{Registry, Value, compile_str, read_value, run_tick};
/// use rand::RngExt;
///
/// let mut registry = Registry::new();
/// registry
///     .function("d6", Arity::Exactly(0), |ctx, _| Ok(Value::Int(ctx.rng().random_range(1..=6))))
///     .unwrap();
/// let tree = compile_str("roll.edn", "[:define! {:key :roll :val [:aido/fn d6]}]", &registry).unwrap();
/// let roll = |db: &str| run_tick(read_value(db).unwrap(), &tree).db.get(&Value::keyword("roll")).cloned();
/// assert_eq!(roll("{:aido/seed 7}"), roll("{:aido/seed 7}"));
/// ```
#[cfg(feature = "rand")]
#[cfg_attr(docsrs, doc(cfg(feature = "rand")))]
pub struct TickRng<'a> {
    pub(crate) rng: &'a mut Rng,
    pub(crate) db: &'a Map,
}

#[cfg(feature = "rand")]
impl std::fmt::Debug for TickRng<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TickRng").finish_non_exhaustive()
    }
}

#[cfg(feature = "rand")]
impl rand_core::TryRng for TickRng<'_> {
    type Error = std::convert::Infallible;

    fn try_next_u32(&mut self) -> Result<u32, Self::Error> {
        Ok((self.rng.next_u64(self.db) >> 32) as u32)
    }

    fn try_next_u64(&mut self) -> Result<u64, Self::Error> {
        Ok(self.rng.next_u64(self.db))
    }

    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Self::Error> {
        for chunk in dst.chunks_mut(8) {
            let bytes = self.rng.next_u64(self.db).to_le_bytes();
            chunk.copy_from_slice(&bytes[..chunk.len()]);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seeded(seed: i64) -> Map {
        let mut db = Map::default();
        db.insert(Value::Keyword(kw::SEED), Value::Int(seed));
        db
    }

    #[test]
    fn the_same_seed_gives_the_same_numbers_and_position_continues_the_stream() {
        let db = seeded(7);
        let mut a = Rng::new();
        let first: Vec<u64> = (0..4).map(|_| a.next_u64(&db)).collect();
        let mut b = Rng::new();
        assert_eq!(first[0], b.next_u64(&db));

        // A generator resumed at position 2 draws the third number next.
        let mut db2 = db.clone();
        a.store(&mut db2);
        assert_eq!(db2.get(&Value::Keyword(kw::RNG_POS)), Some(&Value::Int(4)));
        db2.insert(Value::Keyword(kw::RNG_POS), Value::Int(2));
        let mut c = Rng::new();
        assert_eq!(c.next_u64(&db2), first[2]);
    }

    #[test]
    fn floats_are_in_the_unit_interval_and_below_stays_below() {
        let db = seeded(1);
        let mut r = Rng::new();
        for _ in 0..1000 {
            let x = r.next_f64(&db);
            assert!((0.0..1.0).contains(&x));
            assert!(r.below(&db, 3) < 3);
        }
    }

    #[test]
    fn unseeded_generators_draw_different_streams() {
        let db = Map::default();
        let firsts: std::collections::HashSet<u64> =
            (0..100).map(|_| Rng::new().next_u64(&db)).collect();
        assert_eq!(firsts.len(), 100);
    }

    #[test]
    fn a_bad_seed_is_reported() {
        let mut db = Map::default();
        db.insert(Value::Keyword(kw::SEED), Value::string("x"));
        let mut r = Rng::new();
        r.next_u64(&db);
        assert!(r.error.is_some());
    }
}
