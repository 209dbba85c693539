//! Time without a clock: `:aido/now` in the db.
//!
//! No node reads a clock. The host puts the time (a number of seconds, from
//! any origin) under `:aido/now` before each tick, and the options written
//! in seconds (`[:wait {:seconds 1}]`, `:timeout`, `:cooldown`, `:delay`,
//! `:throttle`) compare it with the time they stored in their memory. So a
//! tick stays a pure function of (db, tree), a run replays exactly, and a
//! saved db carries its timers with it. [`advance_time`] is the one way the
//! CLI (`aido run --dt D`) and scenarios (`:dt`) move it on.

use std::fmt;

use super::{Engine, Status};
use crate::value::{Value, kw};

/// Why [`advance_time`] could not move `:aido/now` on.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum TimeError {
    /// The step is not a finite number of seconds, zero or more.
    BadStep(f64),
    /// The db is not a map.
    NotAMap,
    /// `:aido/now` holds something that is not a finite number.
    NotANumber(Value),
}

impl fmt::Display for TimeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TimeError::BadStep(dt) => write!(
                f,
                "the time step must be a finite number of seconds, 0 or more, found {dt}"
            ),
            TimeError::NotAMap => f.write_str("the db must be a map"),
            TimeError::NotANumber(v) => write!(
                f,
                "`:aido/now` must be a number of seconds, found {} `{}`",
                v.type_name(),
                v.abbreviated(40).0
            ),
        }
    }
}

impl std::error::Error for TimeError {}

/// Moves the db's clock on before a tick: `:aido/now` becomes itself plus
/// `dt` seconds, or 0.0 when the db has none yet (so the first tick of a
/// fresh db happens at time 0, and tick n at (n − 1) · dt). Returns the new
/// time. A db whose `:aido/now` is not a number is left as it is.
///
/// ```
/// use aido::{read_value, tick::advance_time};
/// let mut db = read_value("{}").unwrap();
/// assert_eq!(advance_time(&mut db, 0.5), Ok(0.0));
/// assert_eq!(advance_time(&mut db, 0.5), Ok(0.5));
/// assert_eq!(db.to_string(), "{:aido/now 0.5}");
/// ```
pub fn advance_time(db: &mut Value, dt: f64) -> Result<f64, TimeError> {
    if !(dt.is_finite() && dt >= 0.0) {
        return Err(TimeError::BadStep(dt));
    }
    let map = db.as_map_mut().ok_or(TimeError::NotAMap)?;
    let slot = crate::value::map_slot(map, &Value::Keyword(kw::NOW));
    let now = match &*slot {
        Value::Nil => 0.0,
        other => match other.as_f64().filter(|t| t.is_finite()) {
            Some(t) => t + dt,
            None => return Err(TimeError::NotANumber(other.clone())),
        },
    };
    *slot = Value::Float(now);
    Ok(now)
}

impl Engine<'_> {
    /// The time of this tick, `:aido/now`, for node `id`'s option in
    /// seconds; an Error at `id` when the db has no time or not a number.
    #[cold]
    pub(crate) fn now(&mut self, id: u32) -> Result<f64, Status> {
        match crate::value::map_get(self.db, &Value::Keyword(kw::NOW)) {
            Some(v) if v.as_f64().is_some_and(f64::is_finite) => Ok(v.as_f64().unwrap_or(0.0)),
            Some(v) => {
                let msg = format!(
                    "`:aido/now` must be a number of seconds, found {} `{}`",
                    v.type_name(),
                    v.abbreviated(40).0
                );
                Err(self.fail(id, msg))
            }
            None => Err(self.fail(
                id,
                "an option in `:seconds` needs the time: the host sets `:aido/now` (seconds) before each tick (`aido run --dt D`, a scenario's `:dt`)",
            )),
        }
    }
}
