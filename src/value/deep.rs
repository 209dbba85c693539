//! Dropping, copying and debug-printing values of any depth.
//!
//! Values that were read, or written by a tick, nest at most
//! [`crate::read::MAX_DEPTH`] deep, but a value built in Rust may nest
//! without limit (a vector a million levels deep takes one loop to make).
//! Dropping, cloning and `{:?}` recurse like the derived versions while the
//! value is shallow, and change strategy past [`RECURSION_DEPTH`]
//! collections: dropping and cloning go on with an explicit stack, and
//! `{:?}` prints `..` for what lies deeper. Against the derived versions, a
//! collection costs them a thread-local counter, a scalar one comparison:
//! copying the data of a 9,680-node tree takes 4.5% more instructions.
//! Dropping walks a value once: a collection's elements are not scanned
//! for nested collections before they are dropped.

use std::cell::Cell;
use std::fmt;

use super::{Map, ThinVec, Value};

/// How many collections deep dropping and cloning recurse before they go on
/// with an explicit stack, and `{:?}` before it stops. Values read or built
/// by ticks nest at most `MAX_DEPTH` (256), so they never get there.
const RECURSION_DEPTH: usize = 2 * super::MAX_DEPTH;

thread_local! {
    /// How many collections dropping is inside, on this thread.
    static DROPPING: Cell<usize> = const { Cell::new(0) };
    /// How many collections cloning is inside, on this thread.
    static CLONING: Cell<usize> = const { Cell::new(0) };
    /// How many collections `{:?}` is inside, on this thread.
    static DEBUGGING: Cell<usize> = const { Cell::new(0) };
}

fn is_collection(v: &Value) -> bool {
    matches!(
        v,
        Value::Vector(_) | Value::List(_) | Value::Set(_) | Value::Map(_) | Value::Tagged(..)
    )
}

impl Drop for Value {
    #[inline]
    fn drop(&mut self) {
        // Scalars are left to the compiler's drop glue, as they would be
        // without this impl.
        if is_collection(self) {
            drop_collection(self);
        }
    }
}

/// Drops what the collection `v` holds: recursively while shallow, then
/// with a stack. One walk: the elements are looked at only by their own
/// drops, never scanned first.
#[inline(never)]
fn drop_collection(v: &mut Value) {
    let depth = DROPPING.with(Cell::get);
    if depth < RECURSION_DEPTH {
        DROPPING.with(|d| d.set(depth + 1));
        match v {
            Value::Vector(items) | Value::List(items) => drop(std::mem::take(items)),
            Value::Set(items) => drop(std::mem::take(&mut **items)),
            Value::Map(map) => map.drop_entries(),
            Value::Tagged(_, x) => drop(std::mem::take(&mut **x)),
            _ => {}
        }
        DROPPING.with(|d| d.set(depth));
    } else {
        // Each value taken from the stack gives its elements to the stack
        // before it is dropped, so dropping it does not recurse.
        let mut stack = Vec::new();
        move_contents(v, &mut stack);
        while let Some(mut next) = stack.pop() {
            move_contents(&mut next, &mut stack);
        }
    }
}

/// Moves the elements of `v` (a map's keys and values) onto `out`, leaving
/// `v` an empty collection.
fn move_contents(v: &mut Value, out: &mut Vec<Value>) {
    match v {
        Value::Vector(items) | Value::List(items) => out.extend(std::mem::take(items)),
        Value::Set(items) => out.extend(std::mem::take(&mut **items)),
        Value::Map(map) => out.extend(
            std::mem::take(&mut **map)
                .into_iter()
                .flat_map(|(k, x)| [k, x]),
        ),
        Value::Tagged(_, x) => out.push(std::mem::take(&mut **x)),
        _ => {}
    }
}

impl Clone for Value {
    #[inline]
    fn clone(&self) -> Value {
        match self {
            Value::Nil => Value::Nil,
            Value::Bool(b) => Value::Bool(*b),
            Value::Int(i) => Value::Int(*i),
            Value::Float(x) => Value::Float(*x),
            Value::Str(s) => Value::Str(s.clone()),
            Value::Char(c) => Value::Char(*c),
            Value::Keyword(k) => Value::Keyword(*k),
            Value::Symbol(s) => Value::Symbol(*s),
            Value::Vector(_)
            | Value::List(_)
            | Value::Set(_)
            | Value::Map(_)
            | Value::Tagged(..) => clone_collection(self),
        }
    }
}

/// Copies a collection: recursively while shallow, then with a stack.
fn clone_collection(v: &Value) -> Value {
    let depth = CLONING.with(Cell::get);
    if depth >= RECURSION_DEPTH {
        return clone_with_stack(v);
    }
    CLONING.with(|d| d.set(depth + 1));
    let copy = match v {
        Value::Vector(items) => Value::Vector(items.clone()),
        Value::List(items) => Value::List(items.clone()),
        Value::Set(items) => Value::Set(items.clone()),
        Value::Map(map) => Value::Map(map.clone()),
        Value::Tagged(tag, x) => Value::Tagged(*tag, x.clone()),
        scalar => scalar.clone(),
    };
    CLONING.with(|d| d.set(depth));
    copy
}

/// Copies `root` without recursion: its parts are visited depth-first and
/// each collection is built once its elements' copies are done.
#[cold]
fn clone_with_stack(root: &Value) -> Value {
    enum Step<'a> {
        Visit(&'a Value),
        Build(&'a Value),
    }
    let mut todo = vec![Step::Visit(root)];
    let mut done: Vec<Value> = Vec::new();
    while let Some(step) = todo.pop() {
        match step {
            Step::Visit(v) if is_collection(v) => {
                todo.push(Step::Build(v));
                // Pushed last first, so that the copies are done in order.
                match v {
                    Value::Vector(items) | Value::List(items) => {
                        todo.extend(items.iter().rev().map(Step::Visit));
                    }
                    Value::Set(items) => todo.extend(items.iter().rev().map(Step::Visit)),
                    Value::Map(map) => {
                        for (k, x) in map.iter().rev() {
                            todo.push(Step::Visit(x));
                            todo.push(Step::Visit(k));
                        }
                    }
                    Value::Tagged(_, x) => todo.push(Step::Visit(x)),
                    _ => {}
                }
            }
            Step::Visit(scalar) => done.push(scalar.clone()),
            Step::Build(v) => {
                let n = match v {
                    Value::Vector(items) | Value::List(items) => items.len(),
                    Value::Set(items) => items.len(),
                    Value::Map(map) => 2 * map.len(),
                    Value::Tagged(..) => 1,
                    _ => 0,
                };
                let parts: ThinVec<Value> = done.drain(done.len().saturating_sub(n)..).collect();
                let built = match v {
                    Value::Vector(_) => Value::Vector(parts),
                    Value::List(_) => Value::List(parts),
                    Value::Set(_) => Value::Set(Box::new(parts.into_iter().collect())),
                    Value::Map(_) => {
                        let mut map = Map::with_capacity(n / 2);
                        let mut parts = parts.into_iter();
                        while let (Some(k), Some(x)) = (parts.next(), parts.next()) {
                            map.insert(k, x);
                        }
                        Value::Map(Box::new(map))
                    }
                    Value::Tagged(tag, _) => {
                        Value::Tagged(*tag, Box::new(parts.into_iter().next().unwrap_or_default()))
                    }
                    scalar => scalar.clone(),
                };
                done.push(built);
            }
        }
    }
    done.pop().unwrap_or_default()
}

impl fmt::Debug for Value {
    /// As `#[derive(Debug)]` would print it, with `..` in place of what
    /// nests more than 512 collections deep.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Nil => f.write_str("Nil"),
            Value::Bool(b) => f.debug_tuple("Bool").field(b).finish(),
            Value::Int(i) => f.debug_tuple("Int").field(i).finish(),
            Value::Float(x) => f.debug_tuple("Float").field(x).finish(),
            Value::Str(s) => f.debug_tuple("Str").field(s).finish(),
            Value::Char(c) => f.debug_tuple("Char").field(c).finish(),
            Value::Keyword(k) => f.debug_tuple("Keyword").field(k).finish(),
            Value::Symbol(s) => f.debug_tuple("Symbol").field(s).finish(),
            collection => {
                let depth = DEBUGGING.with(Cell::get);
                if depth >= RECURSION_DEPTH {
                    return f.write_str("..");
                }
                DEBUGGING.with(|d| d.set(depth + 1));
                let result = match collection {
                    Value::Vector(items) => f.debug_tuple("Vector").field(items).finish(),
                    Value::List(items) => f.debug_tuple("List").field(items).finish(),
                    Value::Set(items) => f.debug_tuple("Set").field(items).finish(),
                    Value::Map(map) => f.debug_tuple("Map").field(map).finish(),
                    Value::Tagged(tag, x) => f.debug_tuple("Tagged").field(tag).field(x).finish(),
                    _ => Ok(()),
                };
                DEBUGGING.with(|d| d.set(depth));
                result
            }
        }
    }
}
