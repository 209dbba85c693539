//! Comparisons, logic and integer division: `< > <= >= not= and or mod rem
//! quot abs`. Their argument types are checked before they run (see
//! `Ty`), so a body meets only the types its signature names.

use std::cmp::Ordering;

use super::Num;
use crate::tick::FnCtx;
use crate::value::Value;

type Result = std::result::Result<Value, String>;

/// How two numbers compare: integers exactly, anything with a float as
/// floats; `None` when a NaN is involved (no order holds).
fn compare(a: Num, b: Num) -> Option<Ordering> {
    match (a, b) {
        (Num::I(x), Num::I(y)) => Some(x.cmp(&y)),
        (x, y) => x.f().partial_cmp(&y.f()),
    }
}

/// Whether every neighbouring pair of numbers is ordered as `holds` says.
fn chain(args: &[Value], holds: fn(Ordering) -> bool) -> Result {
    let mut prev: Option<Num> = None;
    let mut all = true;
    for arg in args {
        let n = Num::of(arg)?;
        if let Some(p) = prev {
            all &= compare(p, n).is_some_and(holds);
        }
        prev = Some(n);
    }
    Ok(Value::Bool(all))
}

pub(super) fn lt(_: &mut FnCtx<'_>, args: &[Value]) -> Result {
    chain(args, Ordering::is_lt)
}

pub(super) fn gt(_: &mut FnCtx<'_>, args: &[Value]) -> Result {
    chain(args, Ordering::is_gt)
}

pub(super) fn le(_: &mut FnCtx<'_>, args: &[Value]) -> Result {
    chain(args, Ordering::is_le)
}

pub(super) fn ge(_: &mut FnCtx<'_>, args: &[Value]) -> Result {
    chain(args, Ordering::is_ge)
}

pub(super) fn not_eq(_: &mut FnCtx<'_>, args: &[Value]) -> Result {
    Ok(Value::Bool(!args.windows(2).all(|w| w[0] == w[1])))
}

/// Clojure's `and` over values already evaluated: the first falsy one,
/// else the last, else true.
pub(super) fn and(_: &mut FnCtx<'_>, args: &[Value]) -> Result {
    Ok(args
        .iter()
        .find(|a| !a.is_truthy())
        .or(args.last())
        .map_or(Value::Bool(true), Value::clone))
}

/// Clojure's `or` over values already evaluated: the first truthy one,
/// else the last, else nil.
pub(super) fn or(_: &mut FnCtx<'_>, args: &[Value]) -> Result {
    Ok(args
        .iter()
        .find(|a| a.is_truthy())
        .or(args.last())
        .map_or(Value::Nil, Value::clone))
}

/// The two numbers of a division, refusing a zero divisor.
fn operands(args: &[Value]) -> std::result::Result<(Num, Num), String> {
    let (Some(a), Some(b)) = (args.first(), args.get(1)) else {
        return Err("expected 2 arguments".to_owned());
    };
    let (a, b) = (Num::of(a)?, Num::of(b)?);
    if b.f() == 0.0 {
        return Err("division by zero".to_owned());
    }
    Ok((a, b))
}

pub(super) fn quot(_: &mut FnCtx<'_>, args: &[Value]) -> Result {
    match operands(args)? {
        (Num::I(a), Num::I(b)) => a
            .checked_div(b)
            .map(Value::Int)
            .ok_or_else(|| "integer overflow".to_owned()),
        (a, b) => Ok(Value::Float((a.f() / b.f()).trunc())),
    }
}

pub(super) fn rem(_: &mut FnCtx<'_>, args: &[Value]) -> Result {
    Ok(match operands(args)? {
        // `i64::MIN rem -1` is 0, as in Clojure.
        (Num::I(a), Num::I(b)) => Value::Int(a.wrapping_rem(b)),
        (a, b) => Value::Float(a.f() % b.f()),
    })
}

/// Clojure's `mod`: the remainder moved to the divisor's sign.
pub(super) fn modulo(_: &mut FnCtx<'_>, args: &[Value]) -> Result {
    Ok(match operands(args)? {
        (Num::I(a), Num::I(b)) => {
            let m = a.wrapping_rem(b);
            // With signs apart, |m| < |b| keeps `m + b` in range.
            Value::Int(if m != 0 && (m < 0) != (b < 0) {
                m + b
            } else {
                m
            })
        }
        (a, b) => {
            let (a, b) = (a.f(), b.f());
            let m = a % b;
            Value::Float(if m != 0.0 && (m < 0.0) != (b < 0.0) {
                m + b
            } else {
                m
            })
        }
    })
}

pub(super) fn abs(_: &mut FnCtx<'_>, args: &[Value]) -> Result {
    match args.first().map(Num::of).transpose()? {
        Some(Num::I(i)) => i
            .checked_abs()
            .map(Value::Int)
            .ok_or_else(|| "integer overflow".to_owned()),
        Some(Num::F(f)) => Ok(Value::Float(f.abs())),
        None => Err("expected 1 argument".to_owned()),
    }
}
