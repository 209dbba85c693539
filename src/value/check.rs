//! Checks over whole values that must never overflow the stack: how deeply a
//! value nests, and where two values first differ. Both walk with an explicit
//! stack, so any value, however deep, is safe to give them.

use super::Value;

/// A path of keys and indices from the root, printed as an EDN vector.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct ValuePath(pub(crate) Vec<Value>);

impl std::fmt::Display for ValuePath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("[")?;
        for (i, step) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            f.write_str(&step.abbreviated(40).0)?;
        }
        f.write_str("]")
    }
}

/// The elements of a collection (a map's keys and values), in order.
fn elements(v: &Value) -> Box<dyn Iterator<Item = &Value> + '_> {
    match v {
        Value::Vector(items) | Value::List(items) => Box::new(items.iter()),
        Value::Set(items) => Box::new(items.iter()),
        Value::Map(map) => Box::new(map.iter().flat_map(|(k, x)| [k, x])),
        Value::Tagged(_, x) => Box::new(std::iter::once(x.as_ref())),
        _ => Box::new(std::iter::empty()),
    }
}

fn is_collection(v: &Value) -> bool {
    matches!(
        v,
        Value::Vector(_) | Value::List(_) | Value::Set(_) | Value::Map(_) | Value::Tagged(..)
    )
}

impl Value {
    /// `Some(depth)` if this value nests more than `limit` collections deep
    /// (the depth found, at most `limit + 1`); `None` if it does not. A
    /// scalar has depth 0, `[1]` depth 1. Costs at most one visit per
    /// element, and stops at the first element past the limit.
    ///
    /// ```
    /// let v = aido::read_value("[[1] {:a [2]}]").unwrap();
    /// assert_eq!(v.depth_beyond(2), Some(3));
    /// assert_eq!(v.depth_beyond(3), None);
    /// ```
    pub fn depth_beyond(&self, limit: usize) -> Option<usize> {
        if !is_collection(self) {
            // A scalar nests no deeper: no stack to allocate.
            return None;
        }
        let mut stack = vec![(self, 0usize)];
        while let Some((v, depth)) = stack.pop() {
            if !is_collection(v) {
                continue;
            }
            let inner = depth + 1;
            if inner > limit {
                return Some(inner);
            }
            stack.extend(
                elements(v)
                    .filter(|child| is_collection(child))
                    .map(|child| (child, inner)),
            );
        }
        None
    }

    /// What copying this value costs and how deeply it nests: the number of
    /// elements it holds, itself included, counting a string as one element
    /// per 64 bytes, and its depth (a scalar 0, `[1]` 1). Stops past
    /// `weight_limit` elements, returning `weight_limit + 1` and the depth
    /// seen so far, so the cost of measuring is bounded too.
    pub(crate) fn measure(&self, weight_limit: u64) -> (u64, usize) {
        let mut total = 0u64;
        let mut deepest = 0usize;
        let mut stack = vec![(self, 0usize)];
        while let Some((v, depth)) = stack.pop() {
            total += 1;
            deepest = deepest.max(depth);
            match v {
                Value::Str(s) => total += (s.len() / 64) as u64,
                Value::Vector(items) | Value::List(items) => {
                    deepest = deepest.max(depth + 1);
                    stack.extend(items.iter().map(|x| (x, depth + 1)));
                }
                Value::Set(items) => {
                    deepest = deepest.max(depth + 1);
                    stack.extend(items.iter().map(|x| (x, depth + 1)));
                }
                Value::Map(map) => {
                    deepest = deepest.max(depth + 1);
                    for (k, x) in map.iter() {
                        stack.push((k, depth + 1));
                        stack.push((x, depth + 1));
                    }
                }
                Value::Tagged(_, x) => {
                    deepest = deepest.max(depth + 1);
                    stack.push((x, depth + 1));
                }
                _ => {}
            }
            if total > weight_limit {
                return (weight_limit + 1, deepest);
            }
        }
        (total, deepest)
    }

    /// Whether copying this value allocates (a string or a collection):
    /// only those are measured against the tick's work budget.
    #[inline(always)]
    pub(crate) fn is_heavy(&self) -> bool {
        matches!(
            self,
            Value::Str(_)
                | Value::Vector(_)
                | Value::List(_)
                | Value::Set(_)
                | Value::Map(_)
                | Value::Tagged(..)
        )
    }

    /// The path (keys and indices from this value) of the first place where
    /// `other` differs from it, or `None` if the two are equal. Used to say
    /// where a value would change on its way through a file format.
    ///
    /// ```
    /// let a = aido::read_value("{:a [1 2], :b 3}").unwrap();
    /// let b = aido::read_value("{:a [1 5], :b 3}").unwrap();
    /// assert_eq!(a.first_difference(&b).map(|p| p.to_string()), Some("[:a 1]".to_owned()));
    /// assert!(a.first_difference(&a.clone()).is_none());
    /// ```
    pub fn first_difference(&self, other: &Value) -> Option<impl std::fmt::Display + use<>> {
        // Depth-first with an explicit stack; an entry's path is its
        // parent's (still the first `depth - 1` steps when it is popped)
        // and its own step.
        let mut stack: Vec<(&Value, &Value, usize, Option<Value>)> = vec![(self, other, 0, None)];
        let mut path: Vec<Value> = Vec::new();
        while let Some((a, b, depth, step)) = stack.pop() {
            path.truncate(depth.saturating_sub(1));
            path.extend(step);
            let differs_here = match (a, b) {
                (Value::Vector(x) | Value::List(x), Value::Vector(y) | Value::List(y))
                    if std::mem::discriminant(a) == std::mem::discriminant(b) =>
                {
                    let same_len = x.len() == y.len();
                    if same_len {
                        for (i, (p, q)) in x.iter().zip(y.iter()).enumerate().rev() {
                            stack.push((p, q, depth + 1, Some(Value::Int(i as i64))));
                        }
                    }
                    !same_len
                }
                (Value::Map(x), Value::Map(y)) => {
                    let same_keys = x.len() == y.len() && x.keys().all(|k| y.contains_key(k));
                    if same_keys {
                        for (k, p) in x.iter().rev() {
                            if let Some(q) = y.get(k) {
                                stack.push((p, q, depth + 1, Some(k.clone())));
                            }
                        }
                    }
                    !same_keys
                }
                (Value::Tagged(t, x), Value::Tagged(u, y)) if t == u => {
                    stack.push((x, y, depth + 1, Some(Value::Symbol(*t))));
                    false
                }
                // Sets, scalars and values of different kinds compare whole:
                // a list read back as a vector is a change here, although
                // Clojure's `=` calls them equal.
                _ => std::mem::discriminant(a) != std::mem::discriminant(b) || a != b,
            };
            if differs_here {
                return Some(ValuePath(path));
            }
        }
        None
    }
}

/// How many set or map look-ups [`eq_without_recursion`] may be inside on
/// one thread: a look-up compares the key it seeks with `==`, which comes
/// back here for a deep key, so sets of sets nested this deep (within a
/// value already nested deeper than `==` recurses) compare beyond it in
/// insertion order instead, without recursing.
const LOOKUP_DEPTH: usize = 16;

thread_local! {
    static LOOKUPS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Runs `f` one look-up deeper, or `None` once [`LOOKUP_DEPTH`] is reached.
fn lookup<R>(f: impl FnOnce() -> R) -> Option<R> {
    let depth = LOOKUPS.with(std::cell::Cell::get);
    if depth >= LOOKUP_DEPTH {
        return None;
    }
    LOOKUPS.with(|d| d.set(depth + 1));
    let result = f();
    LOOKUPS.with(|d| d.set(depth));
    Some(result)
}

/// Clojure equality (`Value`'s `==`) with an explicit stack instead of
/// recursion, for values nested deeper than recursion is safe.
pub(crate) fn eq_without_recursion(a: &Value, b: &Value) -> bool {
    let mut stack = vec![(a, b)];
    while let Some((a, b)) = stack.pop() {
        let same = match (a, b) {
            (Value::Vector(x) | Value::List(x), Value::Vector(y) | Value::List(y)) => {
                if x.len() != y.len() {
                    return false;
                }
                stack.extend(x.iter().zip(y.iter()));
                true
            }
            (Value::Map(x), Value::Map(y)) => {
                if x.len() != y.len() {
                    return false;
                }
                let found = lookup(|| {
                    for (k, v) in x.iter() {
                        match y.get(k) {
                            Some(w) => stack.push((v, w)),
                            None => return false,
                        }
                    }
                    true
                });
                match found {
                    Some(found) => found,
                    None => {
                        for ((k, v), (l, w)) in x.iter().zip(y.iter()) {
                            stack.push((k, l));
                            stack.push((v, w));
                        }
                        true
                    }
                }
            }
            (Value::Set(x), Value::Set(y)) => {
                x.len() == y.len()
                    && lookup(|| x.iter().all(|e| y.contains(e))).unwrap_or_else(|| {
                        stack.extend(x.iter().zip(y.iter()));
                        true
                    })
            }
            (Value::Tagged(t, x), Value::Tagged(u, y)) => {
                stack.push((x, y));
                t == u
            }
            _ if is_collection(a) || is_collection(b) => false,
            // Scalars compare without recursion.
            _ => a == b,
        };
        if !same {
            return false;
        }
    }
    true
}
