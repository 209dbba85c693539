//! The standard function library for `[:aido/fn f args..]`, after Clojure's
//! functions of the same names:
//!
//! - numbers and logic (this file and `num.rs`): `rand`, `rand-int` (from
//!   the tick's seeded generator), `+ - * / min max inc dec` (integers stay
//!   integers, any float makes the result a float, integer overflow is an
//!   error), `< > <= >= = not= not and or mod rem quot abs`;
//! - text (`text.rs`): `str lower-case upper-case trim includes?
//!   starts-with? ends-with? re-find re-matches re-seq split join subs`;
//! - collections (`coll.rs`): `count empty? get get-in contains? first last
//!   nth conj assoc dissoc take-last keys vals`.
//!
//! Each function declares the type of each argument ([`Ty`]). Its compile
//! step checks the arguments written as constants, so `[:aido/fn
//! lower-case 5]` is a compile error (E0012) at the `5`; at tick time the
//! same check runs on the evaluated arguments, so a wrong type from the db
//! ends the tick in Error naming the function and the argument. A constant
//! regular expression is compiled once, by the compile step.

mod coll;
mod num;
mod text;

use crate::extend::{ArgError, Function, FunctionFn};
use crate::spec::{Arity, describe};
use crate::tick::FnCtx;
use crate::value::{Keyword, Value};
use std::sync::Arc;

type Body = fn(&mut FnCtx<'_>, &[Value]) -> Result<Value, String>;
/// The type of argument `i` of a call with `n` arguments.
type Sig = fn(n: usize, i: usize) -> Ty;
/// A function's own work at compile time, after the types of its constant
/// arguments were checked: a body specialised to them, or a refusal.
type Prepare = fn(&[Option<&Value>]) -> Result<Option<Arc<FunctionFn>>, ArgError>;

/// A standard function.
struct Std {
    name: &'static str,
    arity: fn() -> Arity,
    sig: Sig,
    /// Whether the body relies on the argument types being checked before it
    /// runs (the functions written before the checks check for themselves).
    checked: bool,
    body: Body,
    prepare: Option<Prepare>,
    doc: &'static str,
}

/// The type an argument of a standard function must have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ty {
    Any,
    /// An integer or a float.
    Num,
    Int,
    Str,
    /// A regular expression, written as a string.
    Pattern,
    /// What `first`, `count` and `join` walk: nil, a string or a collection.
    Seqable,
    /// What `get` and `contains?` look into: nil, a map, a vector, a set or a string.
    Lookup,
    /// What `nth` indexes: nil, a vector, a list or a string.
    Indexed,
    /// What `conj` adds to: nil or a collection.
    Coll,
    /// What `assoc` sets a key of: nil, a map or a vector.
    Assoc,
    /// nil or a map.
    Map,
    /// A key path: nil, a vector or a list.
    Path,
}

impl Ty {
    fn accepts(self, v: &Value) -> bool {
        use Value as V;
        match self {
            Ty::Any => true,
            Ty::Num => matches!(v, V::Int(_) | V::Float(_)),
            Ty::Int => matches!(v, V::Int(_)),
            Ty::Str | Ty::Pattern => matches!(v, V::Str(_)),
            Ty::Seqable => matches!(
                v,
                V::Nil | V::Str(_) | V::Vector(_) | V::List(_) | V::Set(_) | V::Map(_)
            ),
            Ty::Lookup => matches!(v, V::Nil | V::Str(_) | V::Vector(_) | V::Set(_) | V::Map(_)),
            Ty::Indexed => matches!(v, V::Nil | V::Str(_) | V::Vector(_) | V::List(_)),
            Ty::Coll => matches!(
                v,
                V::Nil | V::Vector(_) | V::List(_) | V::Set(_) | V::Map(_)
            ),
            Ty::Assoc => matches!(v, V::Nil | V::Vector(_) | V::Map(_)),
            Ty::Map => matches!(v, V::Nil | V::Map(_)),
            Ty::Path => matches!(v, V::Nil | V::Vector(_) | V::List(_)),
        }
    }

    fn expected(self) -> &'static str {
        match self {
            Ty::Any => "any value",
            Ty::Num => "a number",
            Ty::Int => "an integer",
            Ty::Str => "a string",
            Ty::Pattern => "a regular expression (a string)",
            Ty::Seqable => "a string, a collection or nil",
            Ty::Lookup => "a map, a vector, a set, a string or nil",
            Ty::Indexed => "a vector, a list, a string or nil",
            Ty::Coll => "a collection or nil",
            Ty::Assoc => "a map, a vector or nil",
            Ty::Map => "a map or nil",
            Ty::Path => "a vector of keys, a list or nil",
        }
    }
}

/// The first argument among `args` (`Some` where known) that `sig` refuses.
fn first_mistyped<'v>(
    sig: Sig,
    args: impl ExactSizeIterator<Item = Option<&'v Value>>,
) -> Option<ArgError> {
    let n = args.len();
    args.enumerate().find_map(|(i, arg)| {
        let ty = sig(n, i);
        let arg = arg?;
        (!ty.accepts(arg)).then(|| {
            ArgError::at(
                i,
                format!("expected {}, found {}", ty.expected(), describe(arg)),
            )
        })
    })
}

/// Every argument of type `ty`.
const fn all(ty: Ty) -> Sig {
    match ty {
        Ty::Num => |_, _| Ty::Num,
        Ty::Str => |_, _| Ty::Str,
        _ => |_, _| Ty::Any,
    }
}

/// Builds a standard function whose argument types are checked before its
/// body runs.
const fn typed(
    name: &'static str,
    arity: fn() -> Arity,
    sig: Sig,
    body: Body,
    doc: &'static str,
) -> Std {
    Std {
        name,
        arity,
        sig,
        checked: true,
        body,
        prepare: None,
        doc,
    }
}

const STANDARD: &[Std] = &[
    Std {
        name: "rand",
        arity: || Arity::OneOf(vec![0, 1]),
        sig: |_, _| Ty::Num,
        checked: false,
        body: rand,
        prepare: None,
        doc: "A random float in [0, 1), or in [0, n) with one argument.",
    },
    Std {
        name: "rand-int",
        arity: || Arity::Exactly(1),
        sig: |_, _| Ty::Int,
        checked: false,
        body: rand_int,
        prepare: None,
        doc: "A random integer in [0, n).",
    },
    unchecked(
        "+",
        || Arity::Any,
        all(Ty::Num),
        add,
        "The sum of the arguments.",
    ),
    unchecked(
        "-",
        || Arity::AtLeast(1),
        all(Ty::Num),
        sub,
        "The first argument minus the others, or its negation alone.",
    ),
    unchecked(
        "*",
        || Arity::Any,
        all(Ty::Num),
        mul,
        "The product of the arguments.",
    ),
    unchecked(
        "/",
        || Arity::AtLeast(1),
        all(Ty::Num),
        div,
        "The first argument divided by the others.",
    ),
    unchecked(
        "min",
        || Arity::AtLeast(1),
        all(Ty::Num),
        min,
        "The smallest argument.",
    ),
    unchecked(
        "max",
        || Arity::AtLeast(1),
        all(Ty::Num),
        max,
        "The largest argument.",
    ),
    unchecked(
        "inc",
        || Arity::Exactly(1),
        all(Ty::Num),
        inc,
        "The argument plus 1.",
    ),
    unchecked(
        "dec",
        || Arity::Exactly(1),
        all(Ty::Num),
        dec,
        "The argument minus 1.",
    ),
    unchecked(
        "str",
        || Arity::Any,
        all(Ty::Any),
        str,
        "The arguments' texts joined (nil is empty, a string is its text).",
    ),
    unchecked(
        "not",
        || Arity::Exactly(1),
        all(Ty::Any),
        not,
        "true for nil and false, else false.",
    ),
    unchecked(
        "=",
        || Arity::AtLeast(1),
        all(Ty::Any),
        eq,
        "Whether all the arguments are equal.",
    ),
    typed(
        "not=",
        || Arity::AtLeast(1),
        all(Ty::Any),
        num::not_eq,
        "Whether some two arguments differ.",
    ),
    typed(
        "<",
        || Arity::AtLeast(1),
        all(Ty::Num),
        num::lt,
        "Whether the numbers increase strictly.",
    ),
    typed(
        ">",
        || Arity::AtLeast(1),
        all(Ty::Num),
        num::gt,
        "Whether the numbers decrease strictly.",
    ),
    typed(
        "<=",
        || Arity::AtLeast(1),
        all(Ty::Num),
        num::le,
        "Whether the numbers never decrease.",
    ),
    typed(
        ">=",
        || Arity::AtLeast(1),
        all(Ty::Num),
        num::ge,
        "Whether the numbers never increase.",
    ),
    typed(
        "and",
        || Arity::Any,
        all(Ty::Any),
        num::and,
        "The first falsy argument, else the last (true with none). The arguments are \
         all evaluated before the call: nothing is skipped.",
    ),
    typed(
        "or",
        || Arity::Any,
        all(Ty::Any),
        num::or,
        "The first truthy argument, else the last (nil with none). The arguments are \
         all evaluated before the call: nothing is skipped.",
    ),
    typed(
        "mod",
        || Arity::Exactly(2),
        all(Ty::Num),
        num::modulo,
        "The modulus of the first by the second, with the sign of the second.",
    ),
    typed(
        "rem",
        || Arity::Exactly(2),
        all(Ty::Num),
        num::rem,
        "The remainder of dividing the first by the second, with the sign of the first.",
    ),
    typed(
        "quot",
        || Arity::Exactly(2),
        all(Ty::Num),
        num::quot,
        "The quotient of the first by the second, rounded towards zero.",
    ),
    typed(
        "abs",
        || Arity::Exactly(1),
        all(Ty::Num),
        num::abs,
        "The absolute value.",
    ),
    typed(
        "lower-case",
        || Arity::Exactly(1),
        all(Ty::Str),
        text::lower_case,
        "The string in lower case.",
    ),
    typed(
        "upper-case",
        || Arity::Exactly(1),
        all(Ty::Str),
        text::upper_case,
        "The string in upper case.",
    ),
    typed(
        "trim",
        || Arity::Exactly(1),
        all(Ty::Str),
        text::trim,
        "The string without whitespace at either end.",
    ),
    typed(
        "includes?",
        || Arity::Exactly(2),
        all(Ty::Str),
        text::includes,
        "Whether the first string contains the second.",
    ),
    typed(
        "starts-with?",
        || Arity::Exactly(2),
        all(Ty::Str),
        text::starts_with,
        "Whether the first string starts with the second.",
    ),
    typed(
        "ends-with?",
        || Arity::Exactly(2),
        all(Ty::Str),
        text::ends_with,
        "Whether the first string ends with the second.",
    ),
    Std {
        prepare: Some(text::prepare_re_find),
        ..typed(
            "re-find",
            || Arity::Exactly(2),
            text::pattern_then_str,
            text::re_find,
            "The first match of the pattern in the string: its text, or a vector of the \
             match and its groups when the pattern has groups; nil when none.",
        )
    },
    Std {
        prepare: Some(text::prepare_re_matches),
        ..typed(
            "re-matches",
            || Arity::Exactly(2),
            text::pattern_then_str,
            text::re_matches,
            "The match of the pattern against the whole string (as re-find gives it), \
             or nil.",
        )
    },
    Std {
        prepare: Some(text::prepare_re_seq),
        ..typed(
            "re-seq",
            || Arity::Exactly(2),
            text::pattern_then_str,
            text::re_seq,
            "Every match of the pattern in the string, as a list (each as re-find gives \
             it); nil when none.",
        )
    },
    Std {
        prepare: Some(text::prepare_split),
        ..typed(
            "split",
            || Arity::OneOf(vec![2, 3]),
            text::split_sig,
            text::split,
            "The string split at each match of the pattern, as a vector; trailing empty \
             strings dropped unless a limit is given (at most that many parts).",
        )
    },
    typed(
        "join",
        || Arity::OneOf(vec![1, 2]),
        text::join_sig,
        text::join,
        "The texts of the collection's elements joined, with the separator between \
         them when one is given first.",
    ),
    typed(
        "subs",
        || Arity::OneOf(vec![2, 3]),
        text::subs_sig,
        text::subs,
        "The characters of the string from start (inclusive) to end (exclusive, default \
         the end); counted in Unicode characters.",
    ),
    typed(
        "count",
        || Arity::Exactly(1),
        |_, _| Ty::Seqable,
        coll::count,
        "The number of elements (characters of a string; 0 for nil).",
    ),
    typed(
        "empty?",
        || Arity::Exactly(1),
        |_, _| Ty::Seqable,
        coll::is_empty,
        "Whether the collection or string has no elements (true for nil).",
    ),
    typed(
        "get",
        || Arity::OneOf(vec![2, 3]),
        |_, i| if i == 0 { Ty::Lookup } else { Ty::Any },
        coll::get,
        "The value at the key (a map's key, a vector's or string's index, a set's \
         element), else the default or nil.",
    ),
    typed(
        "get-in",
        || Arity::OneOf(vec![2, 3]),
        |_, i| match i {
            0 => Ty::Lookup,
            1 => Ty::Path,
            _ => Ty::Any,
        },
        coll::get_in,
        "The value at the key path, else the default or nil.",
    ),
    typed(
        "contains?",
        || Arity::Exactly(2),
        |_, i| if i == 0 { Ty::Lookup } else { Ty::Any },
        coll::contains,
        "Whether the key is present: a map's key, a set's element, an index within a \
         vector or string.",
    ),
    typed(
        "first",
        || Arity::Exactly(1),
        |_, _| Ty::Seqable,
        coll::first,
        "The first element (a map's first entry as [k v]), or nil.",
    ),
    typed(
        "last",
        || Arity::Exactly(1),
        |_, _| Ty::Seqable,
        coll::last,
        "The last element, or nil.",
    ),
    typed(
        "nth",
        || Arity::OneOf(vec![2, 3]),
        |_, i| match i {
            0 => Ty::Indexed,
            1 => Ty::Int,
            _ => Ty::Any,
        },
        coll::nth,
        "The element at the index; out of range, the default, or an error without one.",
    ),
    typed(
        "conj",
        || Arity::AtLeast(1),
        |_, i| if i == 0 { Ty::Coll } else { Ty::Any },
        coll::conj,
        "The collection with the values added: at the end of a vector, the front of a \
         list (nil is an empty list), into a set, or a map's entries ([k v] or a map).",
    ),
    Std {
        prepare: Some(coll::prepare_assoc),
        ..typed(
            "assoc",
            || Arity::AtLeast(3),
            |_, i| if i == 0 { Ty::Assoc } else { Ty::Any },
            coll::assoc,
            "The map (nil: a new one) with each key set to its value, or the vector with \
             each index (up to its length) set.",
        )
    },
    typed(
        "dissoc",
        || Arity::AtLeast(1),
        |_, i| if i == 0 { Ty::Map } else { Ty::Any },
        coll::dissoc,
        "The map without the keys.",
    ),
    typed(
        "take-last",
        || Arity::Exactly(2),
        |_, i| if i == 0 { Ty::Int } else { Ty::Seqable },
        coll::take_last,
        "The last n elements as a list, or nil when there are none.",
    ),
    typed(
        "keys",
        || Arity::Exactly(1),
        |_, _| Ty::Map,
        coll::keys,
        "The map's keys as a list, or nil when it has none.",
    ),
    typed(
        "vals",
        || Arity::Exactly(1),
        |_, _| Ty::Map,
        coll::vals,
        "The map's values as a list, or nil when it has none.",
    ),
];

/// Builds a standard function that checks its own arguments: its
/// signature serves only the compile-time check.
const fn unchecked(
    name: &'static str,
    arity: fn() -> Arity,
    sig: Sig,
    body: Body,
    doc: &'static str,
) -> Std {
    Std {
        name,
        arity,
        sig,
        checked: false,
        body,
        prepare: None,
        doc,
    }
}

/// `body` behind the tick-time check of its arguments against `sig`.
fn checked_body(sig: Sig, body: Body) -> Arc<FunctionFn> {
    Arc::new(move |ctx: &mut FnCtx<'_>, args: &[Value]| {
        if let Some(e) = first_mistyped(sig, args.iter().map(Some)) {
            return Err(e.to_string());
        }
        body(ctx, args)
    })
}

pub(crate) fn standard_functions() -> Vec<Function> {
    STANDARD
        .iter()
        .map(|std| {
            let (sig, prepare) = (std.sig, std.prepare);
            let f: Arc<FunctionFn> = if std.checked {
                checked_body(sig, std.body)
            } else {
                Arc::new(std.body)
            };
            Function {
                name: Keyword::new(std.name),
                arity: (std.arity)(),
                f,
                halt: None,
                compile: Some(Arc::new(move |args: &[Option<&Value>]| {
                    if let Some(e) = first_mistyped(sig, args.iter().copied()) {
                        return Err(e);
                    }
                    match prepare {
                        Some(prepare) => prepare(args).map(|body| {
                            // A prepared body still checks the arguments that
                            // were not constants.
                            body.map(|body| -> Arc<FunctionFn> {
                                Arc::new(move |ctx: &mut FnCtx<'_>, args: &[Value]| {
                                    if let Some(e) = first_mistyped(sig, args.iter().map(Some)) {
                                        return Err(e.to_string());
                                    }
                                    body(ctx, args)
                                })
                            })
                        }),
                        None => Ok(None),
                    }
                })),
                doc: Some(Arc::from(std.doc)),
                declared: false,
                standard: true,
            }
        })
        .collect()
}

/// What `[:aido/db k ..]` with a dynamic segment
/// (`[:aido/db :waypoints [:aido/db :wp]]`) lowers to: a call whose
/// arguments are the segments, resolved when the node is ticked, and whose
/// body reads that key path from the db as it is then (nil when it is not
/// there). It is not registered: no tree can name it.
pub(crate) fn db_path() -> Function {
    Function {
        name: Keyword::new("aido/db"),
        arity: Arity::AtLeast(1),
        f: Arc::new(|ctx: &mut FnCtx<'_>, path: &[Value]| {
            let Some((first, rest)) = path.split_first() else {
                return Ok(Value::Nil);
            };
            let mut here = crate::value::map_get(ctx.db, first);
            for key in rest {
                here = here.and_then(|v| crate::value::path_step(v, key));
            }
            Ok(here.cloned().unwrap_or_default())
        }),
        halt: None,
        compile: None,
        doc: Some(Arc::from(
            "Reads a key path with dynamic segments from the db.",
        )),
        declared: false,
        standard: true,
    }
}

pub(crate) fn is_standard(name: Keyword) -> bool {
    STANDARD.iter().any(|std| std.name == name.as_str())
}

#[derive(Clone, Copy)]
pub(super) enum Num {
    I(i64),
    F(f64),
}

impl Num {
    pub(super) fn of(v: &Value) -> Result<Num, String> {
        match v {
            Value::Int(i) => Ok(Num::I(*i)),
            Value::Float(f) => Ok(Num::F(*f)),
            other => Err(format!(
                "expected a number, found {} `{other}`",
                other.type_name()
            )),
        }
    }

    pub(super) fn f(self) -> f64 {
        match self {
            Num::I(i) => i as f64,
            Num::F(f) => f,
        }
    }

    pub(super) fn value(self) -> Value {
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
        push_text(&mut out, arg);
    }
    Ok(Value::string(&out))
}

/// Appends the text of `v` as `str` makes it: nothing for nil, a string's
/// or character's own text, else the value printed.
pub(super) fn push_text(out: &mut String, v: &Value) {
    match v {
        Value::Nil => {}
        Value::Str(s) => out.push_str(s),
        Value::Char(c) => out.push(*c),
        other => out.push_str(&other.to_string()),
    }
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
        let function = standard_functions()
            .into_iter()
            .find(|f| f.name.as_str() == name);
        function.map_or_else(|| Err("missing".to_owned()), |f| (f.f)(&mut ctx, args))
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
