//! Text: `lower-case upper-case trim includes? starts-with? ends-with?
//! re-find re-matches re-seq split join subs`. Their argument types are
//! checked before they run; the functions taking a regular expression
//! compile a constant one once, in their compile step (a bad one is a
//! compile error at the pattern), and one computed at tick time at each call.

use std::sync::Arc;

use regex::Regex;

use super::{Ty, push_text};
use crate::extend::{ArgError, FunctionFn};
use crate::pattern;
use crate::tick::FnCtx;
use crate::value::Value;

type Result = std::result::Result<Value, String>;

/// Argument `i`, a string (the signature checked it).
fn text(args: &[Value], i: usize) -> std::result::Result<&str, String> {
    args.get(i)
        .and_then(Value::as_str)
        .ok_or_else(|| format!("argument {}: expected a string", i + 1))
}

/// Argument `i`, an integer (the signature checked it).
fn int(args: &[Value], i: usize) -> std::result::Result<i64, String> {
    args.get(i)
        .and_then(Value::as_int)
        .ok_or_else(|| format!("argument {}: expected an integer", i + 1))
}

pub(super) fn lower_case(_: &mut FnCtx<'_>, args: &[Value]) -> Result {
    Ok(Value::string(&text(args, 0)?.to_lowercase()))
}

pub(super) fn upper_case(_: &mut FnCtx<'_>, args: &[Value]) -> Result {
    Ok(Value::string(&text(args, 0)?.to_uppercase()))
}

pub(super) fn trim(_: &mut FnCtx<'_>, args: &[Value]) -> Result {
    Ok(Value::string(text(args, 0)?.trim()))
}

pub(super) fn includes(_: &mut FnCtx<'_>, args: &[Value]) -> Result {
    Ok(Value::Bool(text(args, 0)?.contains(text(args, 1)?)))
}

pub(super) fn starts_with(_: &mut FnCtx<'_>, args: &[Value]) -> Result {
    Ok(Value::Bool(text(args, 0)?.starts_with(text(args, 1)?)))
}

pub(super) fn ends_with(_: &mut FnCtx<'_>, args: &[Value]) -> Result {
    Ok(Value::Bool(text(args, 0)?.ends_with(text(args, 1)?)))
}

/// `re-find`, `re-matches`, `re-seq`: a pattern, then a string.
pub(super) fn pattern_then_str(_: usize, i: usize) -> Ty {
    if i == 0 { Ty::Pattern } else { Ty::Str }
}

/// `split`: a string, a pattern, a limit.
pub(super) fn split_sig(_: usize, i: usize) -> Ty {
    match i {
        0 => Ty::Str,
        1 => Ty::Pattern,
        _ => Ty::Int,
    }
}

/// `join`: a collection, or a separator (any value, as text) and a collection.
pub(super) fn join_sig(n: usize, i: usize) -> Ty {
    if n == 2 && i == 0 {
        Ty::Any
    } else {
        Ty::Seqable
    }
}

/// `subs`: a string and one or two indices.
pub(super) fn subs_sig(_: usize, i: usize) -> Ty {
    if i == 0 { Ty::Str } else { Ty::Int }
}

/// The pattern `re-matches` uses: `pattern` anchored at both ends (checked
/// on its own first, so that `a)(b` is not accepted as `\A(?:a)(b)\z`).
fn compile_whole(pattern: &str) -> std::result::Result<Regex, String> {
    pattern::compile(pattern)?;
    pattern::compile(&format!(r"\A(?:{pattern})\z"))
}

/// The regular expression at argument `i`, compiled now (a pattern that
/// was not a constant).
fn regex_at(
    args: &[Value],
    i: usize,
    compile: fn(&str) -> std::result::Result<Regex, String>,
) -> std::result::Result<Regex, String> {
    compile(text(args, i)?).map_err(|e| format!("argument {}: {e}", i + 1))
}

/// A compile step for a function whose pattern is argument `i`: compiles a
/// constant pattern once and returns the body that uses it.
fn prepare_with(
    args: &[Option<&Value>],
    i: usize,
    compile: fn(&str) -> std::result::Result<Regex, String>,
    run: fn(&Regex, &[Value]) -> Result,
) -> std::result::Result<Option<Arc<FunctionFn>>, ArgError> {
    let Some(Some(Value::Str(p))) = args.get(i) else {
        return Ok(None);
    };
    let regex = compile(p).map_err(|e| ArgError::at(i, e))?;
    Ok(Some(Arc::new(move |_: &mut FnCtx<'_>, args: &[Value]| {
        run(&regex, args)
    })))
}

fn run_re_find(regex: &Regex, args: &[Value]) -> Result {
    Ok(pattern::find(regex, text(args, 1)?).unwrap_or(Value::Nil))
}

fn run_re_seq(regex: &Regex, args: &[Value]) -> Result {
    let found: crate::value::ThinVec<Value> = regex
        .captures_iter(text(args, 1)?)
        .map(|caps| pattern::match_value(&caps))
        .collect();
    Ok(if found.is_empty() {
        Value::Nil
    } else {
        Value::List(found)
    })
}

/// Java's `String.split(regex, limit)`, which Clojure's `split` is: at most
/// `limit` parts when it is positive; trailing empty parts dropped when
/// there is no limit; a match of nothing at the very start makes no empty
/// first part; no match at all gives the string itself.
fn run_split(regex: &Regex, args: &[Value]) -> Result {
    let s = text(args, 0)?;
    let limit = match args.get(2) {
        Some(_) => Some(int(args, 2)?),
        None => None,
    };
    let mut parts: Vec<&str> = Vec::new();
    let mut last = 0;
    for m in regex.find_iter(s) {
        if limit.is_some_and(|l| l > 0 && parts.len() as i64 >= l - 1) {
            break;
        }
        if m.end() == 0 {
            continue;
        }
        parts.push(&s[last..m.start()]);
        last = m.end();
    }
    if parts.is_empty() {
        return Ok(Value::vector([Value::string(s)]));
    }
    parts.push(&s[last..]);
    if limit.is_none() || limit == Some(0) {
        while parts.last().is_some_and(|p| p.is_empty()) {
            parts.pop();
        }
    }
    Ok(Value::Vector(
        parts.into_iter().map(Value::string).collect(),
    ))
}

pub(super) fn re_find(_: &mut FnCtx<'_>, args: &[Value]) -> Result {
    run_re_find(&regex_at(args, 0, pattern::compile)?, args)
}

pub(super) fn re_matches(_: &mut FnCtx<'_>, args: &[Value]) -> Result {
    run_re_find(&regex_at(args, 0, compile_whole)?, args)
}

pub(super) fn re_seq(_: &mut FnCtx<'_>, args: &[Value]) -> Result {
    run_re_seq(&regex_at(args, 0, pattern::compile)?, args)
}

pub(super) fn split(_: &mut FnCtx<'_>, args: &[Value]) -> Result {
    run_split(&regex_at(args, 1, pattern::compile)?, args)
}

pub(super) fn prepare_re_find(
    args: &[Option<&Value>],
) -> std::result::Result<Option<Arc<FunctionFn>>, ArgError> {
    prepare_with(args, 0, pattern::compile, run_re_find)
}

pub(super) fn prepare_re_matches(
    args: &[Option<&Value>],
) -> std::result::Result<Option<Arc<FunctionFn>>, ArgError> {
    prepare_with(args, 0, compile_whole, run_re_find)
}

pub(super) fn prepare_re_seq(
    args: &[Option<&Value>],
) -> std::result::Result<Option<Arc<FunctionFn>>, ArgError> {
    prepare_with(args, 0, pattern::compile, run_re_seq)
}

pub(super) fn prepare_split(
    args: &[Option<&Value>],
) -> std::result::Result<Option<Arc<FunctionFn>>, ArgError> {
    prepare_with(args, 1, pattern::compile, run_split)
}

pub(super) fn join(_: &mut FnCtx<'_>, args: &[Value]) -> Result {
    let (sep, coll) = match args {
        [coll] => (None, coll),
        [sep, coll] => (Some(sep), coll),
        _ => return Err("expected 1 or 2 arguments".to_owned()),
    };
    let mut sep_text = String::new();
    if let Some(sep) = sep {
        push_text(&mut sep_text, sep);
    }
    let mut out = String::new();
    for (i, item) in super::coll::elements(coll)?.iter().enumerate() {
        if i > 0 {
            out.push_str(&sep_text);
        }
        push_text(&mut out, item);
    }
    Ok(Value::string(&out))
}

pub(super) fn subs(_: &mut FnCtx<'_>, args: &[Value]) -> Result {
    let s = text(args, 0)?;
    let n_chars = s.chars().count();
    let start = int(args, 1)?;
    let end = match args.get(2) {
        Some(_) => int(args, 2)?,
        None => n_chars as i64,
    };
    if start < 0 || end < start || end > n_chars as i64 {
        return Err(format!(
            "indices {start}..{end} are out of range for a string of {n_chars} characters"
        ));
    }
    Ok(Value::string(
        &s.chars()
            .skip(start as usize)
            .take((end - start) as usize)
            .collect::<String>(),
    ))
}
