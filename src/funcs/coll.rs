//! Collections: `count empty? get get-in contains? first last nth conj assoc
//! dissoc take-last keys vals`. Their argument types are checked before
//! they run; a value never changes in place (a function returns a new one,
//! which a node may write to the db).

use std::borrow::Cow;
use std::sync::Arc;

use crate::extend::{ArgError, FunctionFn};
use crate::tick::FnCtx;
use crate::value::{Map, Set, Value};

type Result = std::result::Result<Value, String>;

/// The elements of a string, collection or nil, in order: a map's entries
/// as `[k v]` vectors, a string's characters.
pub(super) fn elements(v: &Value) -> std::result::Result<Cow<'_, [Value]>, String> {
    Ok(match v {
        Value::Nil => Cow::Borrowed(&[]),
        Value::Vector(items) | Value::List(items) => Cow::Borrowed(items),
        Value::Set(set) => Cow::Owned(set.iter().cloned().collect()),
        Value::Map(map) => Cow::Owned(map.iter().map(entry).collect()),
        Value::Str(s) => Cow::Owned(s.chars().map(Value::Char).collect()),
        other => {
            return Err(format!(
                "expected a string, a collection or nil, found {}",
                other.type_with_article()
            ));
        }
    })
}

fn entry((k, v): (&Value, &Value)) -> Value {
    Value::vector([k.clone(), v.clone()])
}

fn arg(args: &[Value], i: usize) -> std::result::Result<&Value, String> {
    args.get(i)
        .ok_or_else(|| format!("expected at least {} arguments", i + 1))
}

/// How many elements a string (in characters), collection or nil has.
fn size(v: &Value) -> std::result::Result<usize, String> {
    Ok(match v {
        Value::Nil => 0,
        Value::Str(s) => s.chars().count(),
        Value::Vector(items) | Value::List(items) => items.len(),
        Value::Set(set) => set.len(),
        Value::Map(map) => map.len(),
        other => {
            return Err(format!(
                "cannot count {}: expected a string, a collection or nil",
                other.type_with_article()
            ));
        }
    })
}

pub(super) fn count(_: &mut FnCtx<'_>, args: &[Value]) -> Result {
    Ok(Value::Int(size(arg(args, 0)?)? as i64))
}

pub(super) fn is_empty(_: &mut FnCtx<'_>, args: &[Value]) -> Result {
    Ok(Value::Bool(size(arg(args, 0)?)? == 0))
}

/// An index into a sequence of `len` elements, if `key` is one.
fn index(key: &Value, len: usize) -> Option<usize> {
    match key {
        Value::Int(i) if *i >= 0 && (*i as u64) < len as u64 => Some(*i as usize),
        _ => None,
    }
}

/// One step of `get`: the value at `key` in `coll`, if there is one.
/// Anything that holds no keys holds nothing (as Clojure's `get` on a
/// number gives nil).
fn lookup(coll: &Value, key: &Value) -> Option<Value> {
    match coll {
        Value::Map(map) => map.get(key).cloned(),
        Value::Vector(items) => index(key, items.len()).map(|i| items[i].clone()),
        Value::Set(set) => set.get(key).cloned(),
        Value::Str(s) => match key {
            Value::Int(i) if *i >= 0 => s.chars().nth(*i as usize).map(Value::Char),
            _ => None,
        },
        _ => None,
    }
}

pub(super) fn get(_: &mut FnCtx<'_>, args: &[Value]) -> Result {
    let found = lookup(arg(args, 0)?, arg(args, 1)?);
    Ok(found.unwrap_or_else(|| args.get(2).cloned().unwrap_or_default()))
}

pub(super) fn get_in(_: &mut FnCtx<'_>, args: &[Value]) -> Result {
    let mut current = Cow::Borrowed(arg(args, 0)?);
    for key in elements(arg(args, 1)?)?.iter() {
        match lookup(&current, key) {
            Some(next) => current = Cow::Owned(next),
            None => return Ok(args.get(2).cloned().unwrap_or_default()),
        }
    }
    Ok(current.into_owned())
}

pub(super) fn contains(_: &mut FnCtx<'_>, args: &[Value]) -> Result {
    let (coll, key) = (arg(args, 0)?, arg(args, 1)?);
    Ok(Value::Bool(match coll {
        Value::Map(map) => map.contains_key(key),
        Value::Set(set) => set.contains(key),
        Value::Vector(items) => index(key, items.len()).is_some(),
        Value::Str(s) => index(key, s.chars().count()).is_some(),
        _ => false,
    }))
}

pub(super) fn first(_: &mut FnCtx<'_>, args: &[Value]) -> Result {
    Ok(match arg(args, 0)? {
        Value::Str(s) => s.chars().next().map(Value::Char).unwrap_or_default(),
        Value::Map(map) => map.first().map(entry).unwrap_or_default(),
        Value::Set(set) => set.first().cloned().unwrap_or_default(),
        other => elements(other)?.first().cloned().unwrap_or_default(),
    })
}

pub(super) fn last(_: &mut FnCtx<'_>, args: &[Value]) -> Result {
    Ok(match arg(args, 0)? {
        Value::Str(s) => s.chars().next_back().map(Value::Char).unwrap_or_default(),
        Value::Map(map) => map.last().map(entry).unwrap_or_default(),
        Value::Set(set) => set.last().cloned().unwrap_or_default(),
        other => elements(other)?.last().cloned().unwrap_or_default(),
    })
}

pub(super) fn nth(_: &mut FnCtx<'_>, args: &[Value]) -> Result {
    let coll = arg(args, 0)?;
    let i = arg(args, 1)?;
    if coll.is_nil() {
        return Ok(args.get(2).cloned().unwrap_or_default());
    }
    let found = match coll {
        Value::Str(s) => match i {
            Value::Int(i) if *i >= 0 => s.chars().nth(*i as usize).map(Value::Char),
            _ => None,
        },
        other => {
            let items = elements(other)?;
            index(i, items.len()).map(|i| items[i].clone())
        }
    };
    match (found, args.get(2)) {
        (Some(v), _) => Ok(v),
        (None, Some(default)) => Ok(default.clone()),
        (None, None) => Err(format!(
            "index {i} is out of range for {} of {} elements",
            coll.type_with_article(),
            size(coll)?
        )),
    }
}

/// Adds one entry to a map, as `conj` does: a `[k v]` vector or a map.
fn conj_entry(map: &mut Map, x: &Value) -> std::result::Result<(), String> {
    match x {
        Value::Vector(kv) if kv.len() == 2 => {
            map.insert(kv[0].clone(), kv[1].clone());
            Ok(())
        }
        Value::Map(other) => {
            for (k, v) in other.iter() {
                map.insert(k.clone(), v.clone());
            }
            Ok(())
        }
        Value::Nil => Ok(()),
        other => Err(format!(
            "a map takes [key value] vectors or maps, found {}",
            other.type_with_article()
        )),
    }
}

pub(super) fn conj(_: &mut FnCtx<'_>, args: &[Value]) -> Result {
    let (coll, xs) = match args.split_first() {
        Some((coll, xs)) => (coll, xs),
        None => return Ok(Value::Vector(crate::value::ThinVec::new())),
    };
    Ok(match coll {
        Value::Vector(items) => Value::Vector(items.iter().chain(xs).cloned().collect()),
        // A list (and nil, an empty one) grows at the front.
        Value::Nil | Value::List(_) => {
            let old = coll.as_seq().unwrap_or(&[]);
            Value::List(xs.iter().rev().chain(old).cloned().collect())
        }
        Value::Set(set) => {
            let mut set: Set = Set::clone(set);
            set.extend(xs.iter().cloned());
            Value::Set(Box::new(set))
        }
        Value::Map(map) => {
            let mut map: Map = Map::clone(map);
            for x in xs {
                conj_entry(&mut map, x)?;
            }
            Value::Map(Box::new(map))
        }
        other => {
            return Err(format!(
                "cannot add to {}: expected a collection or nil",
                other.type_with_article()
            ));
        }
    })
}

/// `assoc` takes keys and values in pairs: a compile error when written
/// with one missing.
pub(super) fn prepare_assoc(
    args: &[Option<&Value>],
) -> std::result::Result<Option<Arc<FunctionFn>>, ArgError> {
    if args.len().is_multiple_of(2) {
        return Err(ArgError::new(format!(
            "it takes a collection and keys with their values, in pairs; the key `{}` \
             has no value",
            args.last()
                .copied()
                .flatten()
                .map_or_else(|| "(dynamic)".to_owned(), Value::to_string)
        )));
    }
    Ok(None)
}

pub(super) fn assoc(_: &mut FnCtx<'_>, args: &[Value]) -> Result {
    let (coll, pairs) = match args.split_first() {
        Some((coll, pairs)) if pairs.len().is_multiple_of(2) => (coll, pairs),
        _ => return Err("expected a collection and keys with their values, in pairs".to_owned()),
    };
    match coll {
        Value::Nil | Value::Map(_) => {
            let mut map = coll.as_map().cloned().unwrap_or_default();
            for kv in pairs.chunks_exact(2) {
                map.insert(kv[0].clone(), kv[1].clone());
            }
            Ok(Value::Map(Box::new(map)))
        }
        Value::Vector(items) => {
            let mut items = items.clone();
            for kv in pairs.chunks_exact(2) {
                match &kv[0] {
                    Value::Int(i) if *i >= 0 && (*i as u64) < items.len() as u64 => {
                        items[*i as usize] = kv[1].clone();
                    }
                    Value::Int(i) if *i as u64 == items.len() as u64 => items.push(kv[1].clone()),
                    other => {
                        return Err(format!(
                            "index {other} is out of range for a vector of {} elements",
                            items.len()
                        ));
                    }
                }
            }
            Ok(Value::Vector(items))
        }
        other => Err(format!(
            "cannot assoc into {}: expected a map, a vector or nil",
            other.type_with_article()
        )),
    }
}

pub(super) fn dissoc(_: &mut FnCtx<'_>, args: &[Value]) -> Result {
    let (coll, ks) = args.split_first().ok_or("expected a map")?;
    match coll {
        Value::Nil => Ok(Value::Nil),
        Value::Map(map) => {
            let mut map = Map::clone(map);
            for k in ks {
                map.shift_remove(k);
            }
            Ok(Value::Map(Box::new(map)))
        }
        other => Err(format!(
            "cannot dissoc from {}: expected a map or nil",
            other.type_with_article()
        )),
    }
}

/// A list of `items`, or nil when there are none (as Clojure's seqs).
fn list_or_nil(items: crate::value::ThinVec<Value>) -> Value {
    if items.is_empty() {
        Value::Nil
    } else {
        Value::List(items)
    }
}

pub(super) fn take_last(_: &mut FnCtx<'_>, args: &[Value]) -> Result {
    let n = arg(args, 0)?
        .as_int()
        .ok_or("argument 1: expected an integer")?;
    let items = elements(arg(args, 1)?)?;
    let n = usize::try_from(n.max(0))
        .unwrap_or(usize::MAX)
        .min(items.len());
    Ok(list_or_nil(items[items.len() - n..].into()))
}

pub(super) fn keys(_: &mut FnCtx<'_>, args: &[Value]) -> Result {
    let map = arg(args, 0)?.as_map();
    Ok(list_or_nil(
        map.into_iter().flat_map(|m| m.keys()).cloned().collect(),
    ))
}

pub(super) fn vals(_: &mut FnCtx<'_>, args: &[Value]) -> Result {
    let map = arg(args, 0)?.as_map();
    Ok(list_or_nil(
        map.into_iter().flat_map(|m| m.values()).cloned().collect(),
    ))
}
