//! The standard data nodes: conditions on the db (`:present?`, `:equal?`,
//! `:test?`, `:less-than?`, `:greater-than?`) and actions that change it
//! (`:define!`, `:inc!`/`:counter!`, `:dissoc!`, `:emit!`).

use crate::spec::Operator;
use crate::tick::{Engine, Status, eval};
use crate::tree::{KeyPath, Opt};
use crate::value::Value;

use super::lower::{self, Lowering};
use super::{LEAF, OptionRow, Row};
use crate::diag::Code;
use crate::spec::OptionType;
use crate::tree::Kind;
use crate::tree::{Matches, Pattern, SchemaCheck, Target, TypedWrite, WriteKind};

/// The rows of the data node types: conditions and actions.
pub(super) fn rows() -> Vec<Row> {
    use OptionType as T;
    const KEY: OptionRow = ("key", T::Key, true);
    const VAL: OptionRow = ("val", T::Any, true);
    const NUMBER: OptionRow = ("val", T::Number, true);
    vec![
        Row::new("success", "Succeeds.", LEAF, &[], |_| Some(Kind::Success)),
        Row::new("failure", "Fails.", LEAF, &[], |_| Some(Kind::Failure)),
        Row::new(
            "present?",
            "Succeeds if :key is in the db.",
            LEAF,
            &[KEY],
            |l| Some(Kind::Present { key: l.key("key") }),
        ),
        Row::new(
            "equal?",
            "Succeeds if :v1 equals :v2.",
            LEAF,
            &[("v1", T::Any, true), ("v2", T::Any, true)],
            |l| {
                Some(Kind::Equal {
                    v1: l.take("v1"),
                    v2: l.take("v2"),
                })
            },
        ),
        Row::new(
            "test?",
            "Succeeds if the value at :key compares with :val by :oper.",
            LEAF,
            &[KEY, ("oper", T::Operator, true), VAL],
            |l| {
                let oper = match l.take("oper") {
                    Opt::Const(Value::Symbol(s)) => {
                        Operator::parse(s.as_str()).unwrap_or(Operator::Eq)
                    }
                    _ => Operator::Eq,
                };
                Some(Kind::Test {
                    key: l.key("key"),
                    oper,
                    val: l.take("val"),
                })
            },
        ),
        Row::new(
            "less-than?",
            "Succeeds if the number at :key is less than :val.",
            LEAF,
            &[KEY, NUMBER],
            |l| {
                Some(Kind::Test {
                    key: l.key("key"),
                    oper: Operator::Lt,
                    val: l.take("val"),
                })
            },
        ),
        Row::new(
            "greater-than?",
            "Succeeds if the number at :key is greater than :val.",
            LEAF,
            &[KEY, NUMBER],
            |l| {
                Some(Kind::Test {
                    key: l.key("key"),
                    oper: Operator::Gt,
                    val: l.take("val"),
                })
            },
        ),
        Row::new("define!", "Sets :key to :val.", LEAF, &[KEY, VAL], |l| {
            Some(Kind::Define {
                key: l.key("key"),
                val: l.take("val"),
            })
        }),
        Row::new(
            "inc!",
            "Adds 1 to the number at :key (0 when absent).",
            LEAF,
            &[KEY],
            |l| Some(Kind::Inc { key: l.key("key") }),
        ),
        Row::new(
            "counter!",
            "Adds 1 to the number at :key (0 when absent), as :inc! does.",
            LEAF,
            &[KEY],
            |l| Some(Kind::Inc { key: l.key("key") }),
        ),
        Row::new("dissoc!", "Removes :key from the db.", LEAF, &[KEY], |l| {
            Some(Kind::Dissoc { key: l.key("key") })
        }),
        Row::new(
            "emit!",
            "Appends :val to the vector at :key; with :keep n, the oldest elements go so \
             that at most n stay.",
            LEAF,
            &[KEY, VAL, ("keep", T::Count, false)],
            |l| {
                Some(Kind::Emit {
                    key: l.key("key"),
                    val: l.take("val"),
                    keep: l.take_opt("keep").map(Box::new),
                })
            },
        ),
        Row::new(
            "matches?",
            "Succeeds if the string at :key contains a match of the regular expression \
             :regex; with :into, writes the match there (its text, or a vector of the match \
             and its groups when the pattern has groups). Fails when :key is absent or nil, \
             or nothing matches, writing nothing.",
            LEAF,
            &[KEY, ("regex", T::Str, true), ("into", T::Key, false)],
            lower_matches,
        ),
    ]
}

/// Lowers `:matches?`: a constant `:regex` is compiled here, and a bad one
/// is reported at the pattern.
fn lower_matches(l: &mut Lowering<'_, '_>) -> Option<Kind> {
    let key = l.key("key");
    let into = l
        .take_opt("into")
        .map(|into| Target::plain(lower::key_path(into)));
    let regex = match l.take("regex") {
        Opt::Const(Value::Str(ref p)) => match crate::pattern::compile(p) {
            Ok(regex) => Pattern::Const(regex),
            Err(e) => {
                let span = l.opts.span_of("regex");
                l.error(Code::BadOptionValue, format!("`:regex` {e}"), span);
                return None;
            }
        },
        other => Pattern::Dynamic(other),
    };
    Some(Kind::Matches(Box::new(Matches { key, regex, into })))
}

/// Whether dropping `v` frees nothing (a scalar).
#[inline(always)]
pub(super) fn holds_no_heap(v: &Value) -> bool {
    matches!(
        v,
        Value::Nil
            | Value::Bool(_)
            | Value::Int(_)
            | Value::Float(_)
            | Value::Char(_)
            | Value::Keyword(_)
            | Value::Symbol(_)
    )
}

impl Engine<'_> {
    #[inline(never)]
    pub(super) fn equal(&mut self, id: u32, v1: &Opt, v2: &Opt) -> Status {
        let rng = &mut self.rng;
        let result = eval(v1, self.db, rng).and_then(|a| {
            let b = eval(v2, self.db, rng)?;
            // Comparing collections is work, as copying them is.
            if a.is_heavy() {
                rng.charge_value(&a, 0)?;
            }
            Ok(a == b)
        });
        match result {
            Ok(same) => Status::from_bool(same),
            Err(e) => self.fail(id, e),
        }
    }

    /// `db[key] OP val`. A missing key fails: the condition does not hold.
    #[inline(always)]
    pub(super) fn test(&mut self, id: u32, key: &KeyPath, oper: &Operator, val: &Opt) -> Status {
        // The usual case, an integer the key's hint finds against a constant
        // integer, is decided here; a key the hint does not find by
        // `test_unhinted`, everything else by `test_any`. The operator is
        // taken by reference and read only where it is used: read by
        // value, the loops a test is inlined into zero-extended it once
        // more on the hit's way (`test-10` cost 1 instruction a test more).
        match key.hit(self.db) {
            None => return self.test_unhinted(id),
            Some(Value::Int(a)) => {
                if let Opt::Const(Value::Int(b)) = val {
                    return Status::from_bool(oper.ints(*a, *b));
                }
            }
            Some(_) => {}
        }
        self.test_any(id, key, *oper, val)
    }

    /// [`Engine::test`] in a plain loop's own loop (a loop over a `:test?`,
    /// chosen by the child's kind at the loop's entry):
    /// the same usual case decided in place, and anything else by
    /// [`Engine::test_unhinted`], which tries the hint again. Written apart
    /// from `Engine::test`, so that inlining it into the loop leaves the
    /// code of the flows' tests as it was (inlined there as well, `test`
    /// cost a `:sequence` of ten tests one jump a test more).
    #[inline(always)]
    pub(super) fn test_repeated(
        &mut self,
        id: u32,
        key: &KeyPath,
        oper: &Operator,
        val: &Opt,
    ) -> Status {
        match (key.hit(self.db), val) {
            (Some(Value::Int(a)), Opt::Const(Value::Int(b))) => {
                Status::from_bool(oper.ints(*a, *b))
            }
            _ => self.test_unhinted(id),
        }
    }

    /// [`Engine::test`] of node `id`, whose key its hint does not find: a
    /// keyword key the db's filter proves absent fails here, in a call
    /// that saves no registers (the usual miss: a key the db never
    /// holds); anything else goes on to [`Engine::test_any`], which tries
    /// the hint again. It reads its node's options from the tree itself,
    /// so that the call site, in every loop a test is inlined into, passes
    /// only the id: with the options (or the key alone) passed, the loops
    /// made them ready on the hit's way too (`test-10` cost 1 to 2
    /// instructions a test more).
    #[inline(never)]
    fn test_unhinted(&mut self, id: u32) -> Status {
        let tree = self.tree;
        let Some(Kind::Test { key, oper, val }) = tree.nodes.get(id as usize).map(|n| &n.kind)
        else {
            return self.fail(id, "not a test node");
        };
        self.test_missed(id, key, *oper, val)
    }

    /// [`Engine::test_unhinted`] of a test whose options are given: a
    /// keyword key the db's filter proves absent fails, anything else goes
    /// on to [`Engine::test_any`].
    #[inline(never)]
    pub(super) fn test_missed(
        &mut self,
        id: u32,
        key: &KeyPath,
        oper: Operator,
        val: &Opt,
    ) -> Status {
        if let KeyPath::Kw(k, _) = key
            && self.db.lacks_keyword(*k)
        {
            return Status::Failure;
        }
        self.test_any(id, key, oper, val)
    }

    /// [`Engine::test`] of any value at any key path.
    #[inline(never)]
    fn test_any(&mut self, id: u32, key: &KeyPath, oper: Operator, val: &Opt) -> Status {
        // The hint tried again, so that a key it finds pays nothing more;
        // then a keyword key the db's filter proves absent fails without
        // `KeyPath::get_slow`'s call.
        let lhs = match key.hit(self.db) {
            Some(lhs) => lhs,
            None => {
                if let KeyPath::Kw(k, _) = key
                    && self.db.lacks_keyword(*k)
                {
                    return Status::Failure;
                }
                let Some(lhs) = key.get_slow(self.db) else {
                    return Status::Failure;
                };
                lhs
            }
        };
        let result = match (val, lhs) {
            (Opt::Const(Value::Int(b)), Value::Int(a)) => Ok(oper.ints(*a, *b)),
            (Opt::Const(rhs), _) if !lhs.is_heavy() => oper.apply(lhs, rhs),
            _ => {
                // Comparing a collection is work, as copying it is.
                let charged = if lhs.is_heavy() {
                    self.rng.charge_value(lhs, 0)
                } else {
                    Ok(())
                };
                match (charged, val) {
                    (Err(e), _) => Err(e),
                    (Ok(()), Opt::Const(rhs)) => oper.apply(lhs, rhs),
                    (Ok(()), _) => match eval(val, self.db, &mut self.rng) {
                        Ok(rhs) => oper.apply(lhs, &rhs),
                        Err(e) => Err(e),
                    },
                }
            }
        };
        match result {
            Ok(holds) => Status::from_bool(holds),
            Err(e) => self.fail(id, e),
        }
    }

    /// `:define!`: sets `key` to `val`.
    #[inline(always)]
    pub(super) fn define<const NOTE: bool>(&mut self, id: u32, key: &KeyPath, val: &Opt) -> Status {
        if NOTE {
            self.wrote_at(key);
        }
        // The usual case, a constant scalar written over a scalar in the
        // slot the key's hint finds, is written here (nothing to drop:
        // measured, dropping the old value anyway costs a steady npc tick
        // about 10 instructions); everything else by `define_any`.
        if let Opt::Const(v) = val
            && let Some(slot) = key.hit_mut(self.db)
            && holds_no_heap(slot)
        {
            // Each arm writes the slot itself: the value goes from the
            // tree to the db without a copy through the stack.
            let old = match v {
                Value::Keyword(k) => std::mem::replace(slot, Value::Keyword(*k)),
                Value::Int(i) => std::mem::replace(slot, Value::Int(*i)),
                Value::Bool(b) => std::mem::replace(slot, Value::Bool(*b)),
                Value::Nil => std::mem::replace(slot, Value::Nil),
                _ => return self.define_any(id, key, val),
            };
            std::mem::forget(old);
            return Status::Success;
        }
        self.define_any(id, key, val)
    }

    /// [`Engine::define`] of any value at any key path (the write already
    /// noted): a value that is work to copy (a collection, a string) is
    /// resolved and measured.
    #[inline(never)]
    fn define_any(&mut self, id: u32, key: &KeyPath, val: &Opt) -> Status {
        let value = match val {
            Opt::Const(v) if !v.is_heavy() => v.clone(),
            _ => match self.resolve_written(val, key.n_keys() + 1) {
                Ok(v) => v,
                Err(e) => return self.fail(id, e),
            },
        };
        self.write(id, key, value)
    }

    /// Writes `value` at `key` (a write already noted), wherever the key is.
    #[inline(never)]
    fn write(&mut self, id: u32, key: &KeyPath, value: Value) -> Status {
        match key.slot(self.db) {
            Ok(slot) => {
                *slot = value;
                Status::Success
            }
            Err(e) => self.fail(id, format!("cannot write {key}: {e}")),
        }
    }

    /// `:dissoc!`: removes `key` (the last key of a path, from the map it
    /// names).
    #[inline(always)]
    pub(super) fn dissoc<const NOTE: bool>(&mut self, id: u32, key: &KeyPath) -> Status {
        if NOTE {
            self.wrote_at(key);
        }
        match key.remove(self.db) {
            Ok(()) => Status::Success,
            Err(e) => self.fail(id, format!("cannot remove {key}: {e}")),
        }
    }

    /// Resolves a value to be written `depth` levels below the db's root:
    /// its copy is counted against the work budget, and a value that would
    /// nest deeper than the reader reads is refused.
    #[inline(never)]
    fn resolve_written(&mut self, val: &Opt, depth: usize) -> Result<Value, String> {
        let value = eval(val, self.db, &mut self.rng)?;
        if value.is_heavy() {
            self.rng.charge_value(&value, depth)?;
        }
        Ok(value.into_owned())
    }

    /// Adds one to the number at `key`; a missing key counts as 0.
    #[inline(always)]
    pub(super) fn inc<const NOTE: bool>(&mut self, id: u32, key: &KeyPath) -> Status {
        if NOTE {
            self.wrote_at(key);
        }
        // The usual case, an integer the key's hint finds, is counted in
        // place; everything else (as this case too) by `inc_any`.
        if let Some(Value::Int(i)) = key.hit_mut(self.db)
            && let Some(next) = i.checked_add(1)
        {
            *i = next;
            return Status::Success;
        }
        self.inc_any(id, key)
    }

    /// [`Engine::inc`] of any value at any key path (the write already noted).
    #[inline(never)]
    fn inc_any(&mut self, id: u32, key: &KeyPath) -> Status {
        let problem = match key.slot(self.db) {
            Ok(slot) => match slot {
                Value::Int(i) => match i.checked_add(1) {
                    Some(next) => {
                        *i = next;
                        return Status::Success;
                    }
                    None => format!("integer overflow incrementing {key}"),
                },
                Value::Float(f) => {
                    *f += 1.0;
                    return Status::Success;
                }
                Value::Nil => {
                    *slot = Value::Int(1);
                    return Status::Success;
                }
                other => format!(
                    "cannot increment {key}: it holds {} `{other}`",
                    other.type_name()
                ),
            },
            Err(e) => format!("cannot write {key}: {e}"),
        };
        self.fail(id, problem)
    }

    /// Appends `val` to the vector at `key`, creating it; with `keep`, drops
    /// the oldest elements beyond that many.
    #[inline(never)]
    pub(super) fn emit(
        &mut self,
        id: u32,
        key: &KeyPath,
        val: &Opt,
        keep: &Option<Box<Opt>>,
    ) -> Status {
        let value = match self.resolve_written(val, key.n_keys() + 2) {
            Ok(v) => v,
            Err(e) => return self.fail(id, e),
        };
        let keep = match keep.as_deref().map(|k| eval(k, self.db, &mut self.rng)) {
            None => None,
            Some(Ok(n)) => match &*n {
                Value::Int(n) if *n >= 0 => Some(usize::try_from(*n).unwrap_or(usize::MAX)),
                other => {
                    let problem = format!(
                        "`:keep` expected a non-negative integer, found {}",
                        crate::spec::describe(other)
                    );
                    return self.fail(id, problem);
                }
            },
            Some(Err(e)) => return self.fail(id, e),
        };
        self.wrote_at(key);
        let problem = match key.slot(self.db) {
            Ok(slot) => match slot {
                Value::Vector(items) => {
                    items.push(value);
                    if let Some(keep) = keep
                        && items.len() > keep
                    {
                        items.drain(..items.len() - keep);
                    }
                    return Status::Success;
                }
                Value::Nil => {
                    *slot = Value::Vector(if keep == Some(0) {
                        crate::value::ThinVec::new()
                    } else {
                        crate::value::thin_vec![value]
                    });
                    return Status::Success;
                }
                other => format!(
                    "cannot append to {key}: it holds {} `{other}`",
                    other.type_name()
                ),
            },
            Err(e) => format!("cannot write {key}: {e}"),
        };
        self.fail(id, problem)
    }

    /// A `:define!`, `:emit!` or `:inc!` whose key the db schema declares.
    /// At a top-level key, the value is resolved and checked against the
    /// declared type before it is written (for `:inc!`, the number it would
    /// write); at a nested path, the top key's whole value is checked after
    /// the write and put back when it does not fit. A value that does not
    /// fit ends the tick in Error naming the key path, and nothing is
    /// written.
    #[inline(never)]
    pub(super) fn typed_write(&mut self, id: u32, t: &TypedWrite) -> Status {
        if t.check.whole {
            return self.whole_checked(id, t.write.key(), &t.check, |e| match &t.write {
                WriteKind::Define { key, val } => e.define::<true>(id, key, val),
                WriteKind::Emit { key, val, keep } => e.emit(id, key, val, keep),
                WriteKind::Inc { key } => e.inc::<true>(id, key),
            });
        }
        let (key, val, appended) = match &t.write {
            WriteKind::Define { key, val } => (key, val, false),
            WriteKind::Emit { key, val, .. } => (key, val, true),
            WriteKind::Inc { key } => {
                // What `:inc!` would write; anything else it refuses itself.
                let next = match key.get(self.db) {
                    None | Some(Value::Nil) => Some(Value::Int(1)),
                    Some(Value::Int(i)) => i.checked_add(1).map(Value::Int),
                    Some(Value::Float(f)) => Some(Value::Float(f + 1.0)),
                    Some(_) => None,
                };
                if let Some(next) = next
                    && let Err(e) = t.check.ty.check(&next)
                {
                    let ty = &t.check.ty;
                    return self.fail(
                        id,
                        format!("cannot increment {key}: the db schema declares {ty}: {e}"),
                    );
                }
                return self.inc::<true>(id, key);
            }
        };
        let depth = key.n_keys() + if appended { 2 } else { 1 };
        let value = match self.resolve_written(val, depth) {
            Ok(v) => v,
            Err(e) => return self.fail(id, e),
        };
        if let Err(e) = t.check.ty.check(&value) {
            let what = if appended { "append to" } else { "write" };
            return self.fail(
                id,
                format!(
                    "cannot {what} {key}: the db schema declares {}: {e}",
                    t.check.ty
                ),
            );
        }
        let value = Opt::Const(value);
        match &t.write {
            WriteKind::Define { key, .. } => self.define::<true>(id, key, &value),
            WriteKind::Emit { key, keep, .. } => self.emit(id, key, &value, keep),
            WriteKind::Inc { key } => self.inc::<true>(id, key),
        }
    }

    /// Runs `write`, a write at `key` (a nested path, or an append to a
    /// key not declared as a vector), then checks the top key's whole value
    /// against `check`'s type: when it no longer fits, the value is put
    /// back as it was and the tick ends in Error naming the key path.
    fn whole_checked(
        &mut self,
        id: u32,
        key: &KeyPath,
        check: &SchemaCheck,
        write: impl FnOnce(&mut Self) -> Status,
    ) -> Status {
        let Some(top) = key.top() else {
            return write(self);
        };
        let before = self.db.get(&top).cloned();
        self.wrote_at(key);
        let status = write(self);
        if status == Status::Error {
            return status;
        }
        let problem = match self.db.get(&top) {
            Some(now) => check.ty.check(now).err(),
            None => None,
        };
        let Some(e) = problem else {
            return status;
        };
        match before {
            Some(value) => {
                self.db.insert(top.clone(), value);
            }
            None => {
                self.db.shift_remove(&top);
            }
        }
        self.fail(
            id,
            format!(
                "cannot write {key}: the db schema declares {top} as {}: {e}",
                check.ty
            ),
        )
    }

    /// Stores `value` at `target` (an `:into`), held to the db schema
    /// when the target has a check: Success, or Error naming the key path.
    pub(super) fn store(&mut self, id: u32, target: &Target, value: Value) -> Status {
        let path = &target.path;
        match &target.check {
            Some(check) if check.whole => {
                self.whole_checked(id, path, check, |e| e.put(id, path, value))
            }
            Some(check) => match check.ty.check(&value) {
                Ok(()) => self.put(id, path, value),
                Err(e) => self.fail(
                    id,
                    format!(
                        "cannot write {path}: the db schema declares {}: {e}",
                        check.ty
                    ),
                ),
            },
            None => self.put(id, path, value),
        }
    }

    /// Writes `value` at `path`, noting the write.
    fn put(&mut self, id: u32, path: &KeyPath, value: Value) -> Status {
        self.wrote_at(path);
        self.write(id, path, value)
    }

    /// `:matches?`: searches the string at the node's `:key`; a match
    /// succeeds and is written to `:into`.
    #[inline(never)]
    pub(super) fn matches(&mut self, id: u32, m: &Matches) -> Status {
        let text = match m.key.get(self.db) {
            None | Some(Value::Nil) => return Status::Failure,
            Some(Value::Str(s)) => s.clone(),
            Some(other) => {
                let problem = format!(
                    "`:matches?` searches a string, but {} holds {}",
                    m.key,
                    crate::spec::describe(other)
                );
                return self.fail(id, problem);
            }
        };
        let found = match &m.regex {
            Pattern::Const(regex) => crate::pattern::find(regex, &text),
            Pattern::Dynamic(opt) => {
                let compiled = match eval(opt, self.db, &mut self.rng) {
                    Ok(p) => match &*p {
                        Value::Str(p) => crate::pattern::compile(p),
                        other => Err(format!(
                            "expected a regular expression (a string), found {}",
                            crate::spec::describe(other)
                        )),
                    },
                    Err(e) => Err(e),
                };
                match compiled {
                    Ok(regex) => crate::pattern::find(&regex, &text),
                    Err(e) => return self.fail(id, format!("`:regex` {e}")),
                }
            }
        };
        let Some(found) = found else {
            return Status::Failure;
        };
        if let Some(into) = &m.into {
            // The match is built from the text: count it as work.
            if let Err(e) = self.rng.charge_value(&found, into.path.n_keys() + 1) {
                return self.fail(id, e);
            }
            return self.store(id, into, found);
        }
        Status::Success
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A `:test?` whose key's hint does not find it (`Engine::test_unhinted`):
    /// a key the db lacks fails, whether the db's filter proves it absent
    /// (a small db) or not (a db of 40 keys, whose filter has every bit
    /// set), a key found elsewhere than its hint says is compared, and so
    /// is a key path; each tree is ticked twice, its hints learnt in the
    /// first tick, over the db it was compiled for and over dbs of other
    /// shapes.
    #[test]
    fn a_test_of_a_key_its_hint_does_not_find_reads_what_the_db_holds() {
        let db = |text: &str| crate::read_value(text).unwrap();
        let mut wide = String::from("{");
        for i in 0..40 {
            wide.push_str(&format!(":other-{i} {i} "));
        }
        let large = db(&format!("{wide}:n 5}}"));
        let large_without = db(&format!("{wide}}}"));
        let cases = [
            (
                "[:test? {:key :n :oper >= :val 3}]",
                db("{:a 1}"),
                Status::Failure,
            ),
            (
                "[:test? {:key :n :oper >= :val 3}]",
                db("{}"),
                Status::Failure,
            ),
            (
                "[:test? {:key :n :oper >= :val 3}]",
                large_without,
                Status::Failure,
            ),
            ("[:test? {:key :n :oper >= :val 3}]", large, Status::Success),
            (
                "[:test? {:key :n :oper >= :val 3}]",
                db("{:a 1 :n 4}"),
                Status::Success,
            ),
            (
                "[:test? {:key :n :oper < :val 3}]",
                db("{:a 1 :b 2 :n 4}"),
                Status::Failure,
            ),
            (
                "[:less-than? {:key :n :val 3}]",
                db("{:b 2 :n 2.5}"),
                Status::Success,
            ),
            (
                "[:test? {:key [:m :x] :oper = :val 1}]",
                db("{:m {:x 1}}"),
                Status::Success,
            ),
            (
                "[:test? {:key [:m :x] :oper = :val 1}]",
                db("{:m {:y 1}}"),
                Status::Failure,
            ),
        ];
        for (text, start, expected) in cases {
            let tree = crate::compile_str("t.edn", text, &crate::Registry::new()).unwrap();
            // The hint learnt on a db of another shape first, then this one twice.
            let other = crate::tick::run_tick(db("{:z 0 :y 1 :n 9}"), &tree);
            assert_ne!(other.status, Status::Error, "{text}");
            for _ in 0..2 {
                let tick = crate::tick::run_tick(start.clone(), &tree);
                assert_eq!(tick.status, expected, "{text} over {start}");
            }
        }
    }

    #[test]
    fn integer_comparisons_agree_with_rusts_operators() {
        type Compare = fn(&i64, &i64) -> bool;
        let ops: [(Operator, Compare); 6] = [
            (Operator::Eq, i64::eq),
            (Operator::NotEq, i64::ne),
            (Operator::Lt, i64::lt),
            (Operator::Gt, i64::gt),
            (Operator::Le, i64::le),
            (Operator::Ge, i64::ge),
        ];
        for (op, expected) in ops {
            for (a, b) in [(1, 2), (2, 2), (3, 2), (i64::MIN, i64::MAX), (-1, -1)] {
                assert_eq!(op.ints(a, b), expected(&a, &b), "{a} {} {b}", op.as_str());
            }
        }
    }

    #[test]
    fn operators_compare_numbers_across_int_and_float() {
        assert_eq!(
            Operator::Lt.apply(&Value::Int(1), &Value::Float(1.5)),
            Ok(true)
        );
        assert_eq!(Operator::Ge.apply(&Value::Int(2), &Value::Int(2)), Ok(true));
        assert_eq!(
            Operator::Gt.apply(&Value::Float(f64::NAN), &Value::Int(0)),
            Ok(false)
        );
        assert!(
            Operator::Lt
                .apply(&Value::string("a"), &Value::Int(1))
                .is_err()
        );
        assert_eq!(
            Operator::NotEq.apply(&Value::string("a"), &Value::Int(1)),
            Ok(true)
        );
    }
}
