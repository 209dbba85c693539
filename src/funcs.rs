//! The standard function library for `[:aido/fn f args..]`.
//!
//! `rand`, `rand-int` (from the tick's seeded generator), `+ - * / min max inc
//! dec` (integers stay integers, any float makes the result a float, integer
//! overflow is an error), `str`, `not` and `=`.

use crate::extend::Function;
use crate::spec::Arity;
use crate::tick::FnCtx;
use crate::value::{Keyword, Value};
use std::sync::Arc;

type Body = fn(&mut FnCtx<'_>, &[Value]) -> Result<Value, String>;
/// A standard function: its name, its arity, its body and its documentation.
type Entry = (&'static str, fn() -> Arity, Body, &'static str);

const STANDARD: &[Entry] = &[
    (
        "rand",
        || Arity::OneOf(vec![0, 1]),
        rand,
        "A random float in [0, 1), or in [0, n) with one argument.",
    ),
    (
        "rand-int",
        || Arity::Exactly(1),
        rand_int,
        "A random integer in [0, n).",
    ),
    ("+", || Arity::Any, add, "The sum of the arguments."),
    (
        "-",
        || Arity::AtLeast(1),
        sub,
        "The first argument minus the others, or its negation alone.",
    ),
    ("*", || Arity::Any, mul, "The product of the arguments."),
    (
        "/",
        || Arity::AtLeast(1),
        div,
        "The first argument divided by the others.",
    ),
    ("min", || Arity::AtLeast(1), min, "The smallest argument."),
    ("max", || Arity::AtLeast(1), max, "The largest argument."),
    ("inc", || Arity::Exactly(1), inc, "The argument plus 1."),
    ("dec", || Arity::Exactly(1), dec, "The argument minus 1."),
    ("str", || Arity::Any, str, "The arguments' texts joined."),
    (
        "not",
        || Arity::Exactly(1),
        not,
        "true for nil and false, else false.",
    ),
    (
        "=",
        || Arity::AtLeast(1),
        eq,
        "Whether all the arguments are equal.",
    ),
];

pub(crate) fn standard_functions() -> Vec<Function> {
    STANDARD
        .iter()
        .map(|(name, arity, body, doc)| {
            let body = *body;
            Function {
                name: Keyword::new(name),
                arity: arity(),
                f: Arc::new(body),
                halt: None,
                doc: Some(Arc::from(*doc)),
                declared: false,
                standard: true,
            }
        })
        .collect()
}

pub(crate) fn is_standard(name: Keyword) -> bool {
    STANDARD.iter().any(|(n, _, _, _)| *n == name.as_str())
}

#[derive(Clone, Copy)]
enum Num {
    I(i64),
    F(f64),
}

impl Num {
    fn of(v: &Value) -> Result<Num, String> {
        match v {
            Value::Int(i) => Ok(Num::I(*i)),
            Value::Float(f) => Ok(Num::F(*f)),
            other => Err(format!(
                "expected a number, found {} `{other}`",
                other.type_name()
            )),
        }
    }

    fn f(self) -> f64 {
        match self {
            Num::I(i) => i as f64,
            Num::F(f) => f,
        }
    }

    fn value(self) -> Value {
        match self {
            Num::I(i) => Value::Int(i),
            Num::F(f) => Value::Float(f),
        }
    }
}

fn fold(
    args: &[Value],
    init: Num,
    int_op: fn(i64, i64) -> Option<i64>,
    float_op: fn(f64, f64) -> f64,
) -> Result<Value, String> {
    let mut acc = init;
    for arg in args {
        acc = step(acc, Num::of(arg)?, int_op, float_op)?;
    }
    Ok(acc.value())
}

fn step(
    a: Num,
    b: Num,
    int_op: fn(i64, i64) -> Option<i64>,
    float_op: fn(f64, f64) -> f64,
) -> Result<Num, String> {
    match (a, b) {
        (Num::I(x), Num::I(y)) => int_op(x, y)
            .map(Num::I)
            .ok_or_else(|| "integer overflow".to_owned()),
        (x, y) => Ok(Num::F(float_op(x.f(), y.f()))),
    }
}

fn rand(ctx: &mut FnCtx<'_>, args: &[Value]) -> Result<Value, String> {
    let scale = match args.first() {
        Some(n) => Num::of(n)?.f(),
        None => 1.0,
    };
    Ok(Value::Float(ctx.random() * scale))
}

fn rand_int(ctx: &mut FnCtx<'_>, args: &[Value]) -> Result<Value, String> {
    match args.first() {
        Some(Value::Int(n)) if *n >= 0 => Ok(Value::Int(ctx.random_below(*n as u64) as i64)),
        Some(other) => Err(format!("expected a non-negative integer, found `{other}`")),
        None => Err("expected one argument".to_owned()),
    }
}

fn add(_: &mut FnCtx<'_>, args: &[Value]) -> Result<Value, String> {
    fold(args, Num::I(0), i64::checked_add, |a, b| a + b)
}

fn mul(_: &mut FnCtx<'_>, args: &[Value]) -> Result<Value, String> {
    fold(args, Num::I(1), i64::checked_mul, |a, b| a * b)
}

fn sub(_: &mut FnCtx<'_>, args: &[Value]) -> Result<Value, String> {
    match args {
        [only] => step(Num::I(0), Num::of(only)?, i64::checked_sub, |a, b| a - b).map(Num::value),
        [first, rest @ ..] => fold(rest, Num::of(first)?, i64::checked_sub, |a, b| a - b),
        [] => Err("expected at least one argument".to_owned()),
    }
}

fn div(_: &mut FnCtx<'_>, args: &[Value]) -> Result<Value, String> {
    let (first, rest) = match args {
        [only] => (Num::I(1), std::slice::from_ref(only)),
        [first, rest @ ..] => (Num::of(first)?, rest),
        [] => return Err("expected at least one argument".to_owned()),
    };
    let mut acc = first;
    for arg in rest {
        acc = match (acc, Num::of(arg)?) {
            (Num::I(_), Num::I(0)) => return Err("division by zero".to_owned()),
            // `i64::MIN / -1` has no remainder but overflows: an error, not
            // a float.
            (Num::I(x), Num::I(y)) => match x.checked_rem(y) {
                Some(0) => Num::I(x.checked_div(y).ok_or("integer overflow")?),
                Some(_) => Num::F(x as f64 / y as f64),
                None => return Err("integer overflow".to_owned()),
            },
            (x, y) => Num::F(x.f() / y.f()),
        };
    }
    Ok(acc.value())
}

fn extreme(args: &[Value], pick_second: fn(f64, f64) -> bool) -> Result<Value, String> {
    let mut best: Option<(Num, &Value)> = None;
    for arg in args {
        let n = Num::of(arg)?;
        // NaN is not ordered: any NaN makes the result NaN, whatever the
        // order of the arguments.
        if n.f().is_nan() {
            for rest in args {
                Num::of(rest)?;
            }
            return Ok(Value::Float(f64::NAN));
        }
        best = match best {
            Some((b, v)) if !pick_second(b.f(), n.f()) => Some((b, v)),
            _ => Some((n, arg)),
        };
    }
    best.map(|(_, v)| v.clone())
        .ok_or_else(|| "expected at least one argument".to_owned())
}

fn min(_: &mut FnCtx<'_>, args: &[Value]) -> Result<Value, String> {
    extreme(args, |best, x| x < best)
}

fn max(_: &mut FnCtx<'_>, args: &[Value]) -> Result<Value, String> {
    extreme(args, |best, x| x > best)
}

fn inc(_: &mut FnCtx<'_>, args: &[Value]) -> Result<Value, String> {
    fold(args, Num::I(1), i64::checked_add, |a, b| a + b)
}

fn dec(_: &mut FnCtx<'_>, args: &[Value]) -> Result<Value, String> {
    let x = Num::of(args.first().unwrap_or(&Value::Nil))?;
    step(x, Num::I(1), i64::checked_sub, |a, b| a - b).map(Num::value)
}

fn str(_: &mut FnCtx<'_>, args: &[Value]) -> Result<Value, String> {
    let mut out = String::new();
    for arg in args {
        match arg {
            Value::Nil => {}
            Value::Str(s) => out.push_str(s),
            Value::Char(c) => out.push(*c),
            other => out.push_str(&other.to_string()),
        }
    }
    Ok(Value::string(&out))
}

fn not(_: &mut FnCtx<'_>, args: &[Value]) -> Result<Value, String> {
    Ok(Value::Bool(!args.first().is_some_and(Value::is_truthy)))
}

fn eq(_: &mut FnCtx<'_>, args: &[Value]) -> Result<Value, String> {
    Ok(Value::Bool(args.windows(2).all(|w| w[0] == w[1])))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;
    use crate::value::Map;

    fn call(name: &str, args: &[Value]) -> Result<Value, String> {
        let db = Map::default();
        let mut rng = Rng::new();
        let mut ctx = FnCtx {
            db: &db,
            rng: &mut rng,
        };
        let body = STANDARD
            .iter()
            .find(|(n, _, _, _)| *n == name)
            .map(|(_, _, b, _)| *b);
        body.map_or_else(|| Err("missing".to_owned()), |b| b(&mut ctx, args))
    }

    #[test]
    fn arithmetic_keeps_integers_and_spreads_floats() {
        let i = Value::Int;
        assert_eq!(call("+", &[i(5), i(6), i(2)]), Ok(i(13)));
        assert_eq!(call("+", &[i(1), Value::Float(0.5)]), Ok(Value::Float(1.5)));
        assert_eq!(call("-", &[i(3)]), Ok(i(-3)));
        assert_eq!(call("/", &[i(6), i(3)]), Ok(i(2)));
        assert_eq!(call("/", &[i(1), i(2)]), Ok(Value::Float(0.5)));
        assert_eq!(call("/", &[i(1), i(0)]), Err("division by zero".to_owned()));
        assert_eq!(
            call("+", &[i(i64::MAX), i(1)]),
            Err("integer overflow".to_owned())
        );
        assert_eq!(
            call("max", &[i(1), Value::Float(2.5), i(2)]),
            Ok(Value::Float(2.5))
        );
        assert_eq!(call("dec", &[i(0)]), Ok(i(-1)));
    }

    #[test]
    fn str_not_and_equality() {
        assert_eq!(
            call(
                "str",
                &[
                    Value::string("a"),
                    Value::keyword("b"),
                    Value::Nil,
                    Value::Int(1)
                ]
            ),
            Ok(Value::string("a:b1"))
        );
        assert_eq!(call("not", &[Value::Nil]), Ok(Value::Bool(true)));
        assert_eq!(
            call("=", &[Value::Int(1), Value::Int(1)]),
            Ok(Value::Bool(true))
        );
        assert!(call("+", &[Value::string("x")]).is_err());
    }
}
