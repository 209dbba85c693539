//! Warnings about a compiled tree: mistakes that compile and run but never
//! do what was meant. `aido check` prints them (and fails on them with
//! `--deny-warnings`).
//!
//! - W0001: a db key is read but nothing in the tree writes it and the
//!   example db (`aido check --db EXAMPLE`) does not have it. Without an
//!   example db the keys a host writes are unknown, so the warning is given
//!   only when the key looks like a misspelling of one the tree writes
//!   (`:intruderr` read, `:intruder` written; names of four characters or
//!   more).
//! - W0002: a literal vector that looks like a misspelt dynamic option
//!   (`[:db :x]`, `[:aido-fn inc 1]`): it is used as the vector it is.
//!
//! ```
//! use aido::{Registry, compile_str, lint::lint};
//!
//! let tree = compile_str(
//!     "guard.edn",
//!     "[:sequence [:present? {:key :intruderr}] [:define! {:key :intruder :val [:db :pos]}]]",
//!     &Registry::new(),
//! )
//! .unwrap();
//! let warnings = lint(&tree, None);
//! let codes: Vec<&str> = warnings.items.iter().map(|d| d.code.as_str()).collect();
//! assert_eq!(codes, ["W0001", "W0002"]);
//! ```

use crate::diag::{Code, Diagnostic, Diagnostics, did_you_mean};
use crate::schema::{AtPath, DbSchema, DbType};
use crate::spec::OptionType;
use crate::tree::{CountMode, KeyPath, Kind, NodeIndex, Opt, Parallel, Pattern, Tree, WriteKind};
use crate::value::{Keyword, Value};

/// The warnings of `tree`, in tree order. `example_db`, when given, is a db
/// as a host would hand it over: its keys count as written.
pub fn lint(tree: &Tree, example_db: Option<&Value>) -> Diagnostics {
    lint_with_schema(tree, example_db, None)
}

/// [`lint`], and with a db schema (a node model's `:db`, see
/// [`crate::schema`]) also the errors E0013 where a constant the tree
/// writes (`:define!`), appends (`:emit!`), increments (`:inc!`), searches
/// (`:matches?`), stores (`:into`) or compares (`:test?` and the like)
/// does not fit the type declared at its key path, or a path the schema
/// cannot hold is written (see [`DbSchema::at_path`]). Declared keys count as written, and, as with
/// an example db, every other key read and never written is W0001.
pub fn lint_with_schema(
    tree: &Tree,
    example_db: Option<&Value>,
    schema: Option<&DbSchema>,
) -> Diagnostics {
    let mut keys = Keys::default();
    let mut items = Vec::new();
    if let Some(schema) = schema {
        for (i, node) in tree.nodes.iter().enumerate() {
            if let Some(message) = schema_mismatch(schema, &node.kind) {
                items.push(Diagnostic::new(Code::SchemaMismatch, message).at(
                    tree.span(NodeIndex(i as u32)),
                    &tree.path(NodeIndex(i as u32)),
                ));
            }
        }
    }
    for (i, node) in tree.nodes.iter().enumerate() {
        let mut looks_dynamic = Vec::new();
        let mut visit = |opt: &Opt, keys: &mut Keys| {
            keys.opt(opt, i, &mut looks_dynamic);
        };
        if let Some(pre) = &node.pre {
            for opt in [&pre.failure_if, &pre.success_if, &pre.skip_if]
                .into_iter()
                .flatten()
            {
                visit(opt, &mut keys);
            }
        }
        match &node.kind {
            Kind::Selector { .. }
            | Kind::Sequence { .. }
            | Kind::Choose
            | Kind::Invert
            | Kind::Always
            | Kind::Never
            | Kind::Success
            | Kind::Failure => {}
            Kind::SelectorP { p } | Kind::Randomly { p } => visit(p, &mut keys),
            Kind::Loop { count } | Kind::LoopUntilSuccess { count } => visit(count, &mut keys),
            Kind::ChooseEach { repeat } => visit(repeat, &mut keys),
            Kind::WeightedChoice { weights } => visit(weights, &mut keys),
            Kind::Wait { ticks } => visit(ticks, &mut keys),
            Kind::Parallel(parallel) => match parallel {
                Parallel::Count { mode, how_many } => {
                    if let CountMode::Dynamic(mode) = mode {
                        visit(mode, &mut keys);
                    }
                    visit(how_many, &mut keys);
                }
                Parallel::Sequence | Parallel::Selector | Parallel::Thresholds { .. } => {}
                Parallel::DynamicThresholds(both) => {
                    for opt in both.iter() {
                        visit(opt, &mut keys);
                    }
                }
            },
            Kind::Present { key } => keys.read(key, i),
            Kind::Equal { v1, v2 } => {
                visit(v1, &mut keys);
                visit(v2, &mut keys);
            }
            Kind::Test { key, val, .. } => {
                keys.read(key, i);
                visit(val, &mut keys);
            }
            Kind::Define { key, val } => {
                keys.write(key);
                visit(val, &mut keys);
            }
            Kind::Inc { key } | Kind::Dissoc { key } => keys.write(key),
            Kind::Emit { key, val, keep } => {
                keys.write(key);
                visit(val, &mut keys);
                if let Some(keep) = keep {
                    visit(keep, &mut keys);
                }
            }
            Kind::Typed(t) => match &t.write {
                WriteKind::Define { key, val } => {
                    keys.write(key);
                    visit(val, &mut keys);
                }
                WriteKind::Emit { key, val, keep } => {
                    keys.write(key);
                    visit(val, &mut keys);
                    if let Some(keep) = keep {
                        visit(keep, &mut keys);
                    }
                }
                WriteKind::Inc { key } => keys.write(key),
            },
            Kind::Matches(m) => {
                keys.read(&m.key, i);
                if let Pattern::Dynamic(opt) = &m.regex {
                    visit(opt, &mut keys);
                }
                if let Some(into) = &m.into {
                    keys.write(&into.path);
                }
            }
            Kind::Custom { options, .. } => {
                for (_, opt) in options.iter() {
                    visit(opt, &mut keys);
                }
            }
            Kind::Defer { into, options, .. } => {
                if let Some(into) = into {
                    keys.write(&into.path);
                }
                for (_, opt) in options.iter() {
                    visit(opt, &mut keys);
                }
            }
            Kind::WaitSeconds { seconds } => visit(seconds, &mut keys),
            Kind::Timeout { period, .. }
            | Kind::Delay { period, .. }
            | Kind::Throttle { period, .. } => visit(period.opt(), &mut keys),
            Kind::Cooldown(cooldown) => {
                visit(cooldown.period.opt(), &mut keys);
                // A shared cooldown keeps its state at its key: it writes it.
                if let Some(key) = &cooldown.key {
                    keys.write(key);
                }
            }
            Kind::Retry { count, .. } | Kind::Repeat { count, .. } => visit(count, &mut keys),
            Kind::ParallelAll { max_failures } => visit(max_failures, &mut keys),
            Kind::Switch(switch) => visit(&switch.on, &mut keys),
            Kind::RunOnce { .. }
            | Kind::KeepRunningUntilFailure
            | Kind::Force { .. }
            | Kind::If => {}
        }
        for vector in looks_dynamic {
            items.push(looks_dynamic_warning(tree, i, &vector));
        }
    }
    let declared: Vec<Value> = schema
        .map(|s| s.keys.iter().map(|k| Value::Keyword(k.key)).collect())
        .unwrap_or_default();
    let mut example: Vec<&Value> = example_db
        .and_then(Value::as_map)
        .map(|m| m.keys().collect())
        .unwrap_or_default();
    example.extend(declared.iter());
    let everything_known = example_db.is_some() || schema.is_some();
    let mut warned: Vec<&Value> = Vec::new();
    for (key, node) in &keys.reads {
        if keys.writes.contains(key) || example.contains(&key) || warned.contains(&key) {
            continue;
        }
        let Value::Keyword(k) = key else {
            continue;
        };
        let known = keys
            .writes
            .iter()
            .chain(example.iter().copied())
            .filter_map(Value::as_keyword)
            .map(Keyword::as_str);
        let help = did_you_mean(k.as_str(), known);
        // Without an example db, a guess: a read key one edit from a written
        // one. Short names (`:a`, `:hp`) are too close to each other for a
        // misspelling to be told from another key.
        if !everything_known && (help.is_none() || k.as_str().chars().count() < 4) {
            continue;
        }
        warned.push(key);
        let where_else = match (example_db.is_some(), schema.is_some()) {
            (true, true) => ", and neither the example db nor the schema has it",
            (true, false) => ", and the example db does not have it",
            (false, true) => ", and the schema does not declare it",
            (false, false) => "",
        };
        let mut d = Diagnostic::new(
            Code::ReadNeverWritten,
            format!("`{key}` is read here but never written{where_else}"),
        )
        .at(
            tree.span(NodeIndex(*node as u32)),
            &tree.path(NodeIndex(*node as u32)),
        );
        d.help = help.map(|s| format!("did you mean `:{s}`?"));
        items.push(d);
    }
    items.sort_by_key(|d| d.span.map(|s| s.start));
    Diagnostics {
        items,
        source: tree.source().cloned(),
        files: tree.files().cloned(),
    }
}

/// What is wrong, if the node writes, appends, increments, searches,
/// stores (`:into`) or compares a constant that does not fit the declared
/// type at its key path (followed into declared collections: see
/// [`DbSchema::at_path`]), or writes at a path the schema refuses.
fn schema_mismatch(schema: &DbSchema, kind: &Kind) -> Option<String> {
    let at = |path: &KeyPath| schema.at_path(&path.segments());
    let refused = |path: &KeyPath, why: String| Some(format!("`{path}` cannot be written: {why}"));
    let constant = |opt: &Opt| match opt {
        Opt::Const(v) => Some(v.clone()),
        Opt::Db(_) | Opt::Call(..) => None,
    };
    let writes = |key: &KeyPath, val: &Opt| match at(key) {
        AtPath::Free => None,
        AtPath::Refused(why) => refused(key, why),
        AtPath::Type(ty) => {
            let v = constant(val)?;
            let e = ty.check(&v).err()?;
            Some(format!(
                "`{key}` is declared as {ty}, but this writes {}: {e}",
                v.abbreviated(40).0
            ))
        }
    };
    let appends = |key: &KeyPath, val: &Opt| match at(key) {
        AtPath::Free | AtPath::Type(DbType::Plain(OptionType::Any)) => None,
        AtPath::Refused(why) => refused(key, why),
        AtPath::Type(ty @ DbType::Vector(elem)) => {
            let v = constant(val)?;
            let e = elem.check(&v).err()?;
            Some(format!(
                "`{key}` is declared as {ty}, but this appends {}: {e}",
                v.abbreviated(40).0
            ))
        }
        AtPath::Type(other) => Some(format!(
            "`{key}` is declared as {other}, but this appends to it as to a vector"
        )),
    };
    let increments = |key: &KeyPath| match at(key) {
        AtPath::Free
        | AtPath::Type(DbType::Plain(
            OptionType::Int | OptionType::Count | OptionType::Number | OptionType::Any,
        )) => None,
        AtPath::Refused(why) => refused(key, why),
        AtPath::Type(other) => Some(format!(
            "`{key}` is declared as {other}, but this adds 1 to it"
        )),
    };
    match kind {
        Kind::Define { key, val } => writes(key, val),
        Kind::Emit { key, val, .. } => appends(key, val),
        Kind::Inc { key } => increments(key),
        Kind::Typed(t) => match &t.write {
            WriteKind::Define { key, val } => writes(key, val),
            WriteKind::Emit { key, val, .. } => appends(key, val),
            WriteKind::Inc { key } => increments(key),
        },
        Kind::Matches(m) => {
            if let AtPath::Type(ty) = at(&m.key)
                && !matches!(ty, DbType::Plain(OptionType::Str | OptionType::Any))
            {
                return Some(format!(
                    "`{}` is declared as {ty}, but this searches it as a string",
                    m.key
                ));
            }
            let into = &m.into.as_ref()?.path;
            // What a match stores: its text, or with groups a vector of
            // the match and its groups (a group that took no part is nil).
            let text = Value::string("match");
            let groups = Value::vector([text.clone(), text.clone()]);
            let stored = match &m.regex {
                Pattern::Const(regex) if regex.captures_len() > 1 => vec![groups],
                Pattern::Const(_) => vec![text],
                Pattern::Dynamic(_) => vec![text, groups],
            };
            match at(into) {
                AtPath::Free => None,
                AtPath::Refused(why) => refused(into, why),
                AtPath::Type(ty) => {
                    if stored.iter().any(|v| ty.check(v).is_ok()) {
                        return None;
                    }
                    let what = match stored.as_slice() {
                        [Value::Str(_)] => "a string (the text matched)",
                        [_] => "a vector of strings (the match and its groups)",
                        _ => "a string, or a vector of strings when the pattern has groups",
                    };
                    Some(format!(
                        "`{into}` is declared as {ty}, but this stores a match there: {what}"
                    ))
                }
            }
        }
        Kind::Defer { into, .. } => match at(&into.as_ref()?.path) {
            AtPath::Refused(why) => refused(&into.as_ref()?.path, why),
            // A result comes from outside: it is checked when it arrives.
            AtPath::Free | AtPath::Type(_) => None,
        },
        Kind::Test { key, oper, val } => match at(key) {
            AtPath::Type(ty) => {
                let v = constant(val)?;
                let e = ty.check(&v).err()?;
                Some(format!(
                    "`{key}` is declared as {ty}, but this compares it ({}) with {}: {e}",
                    oper.as_str(),
                    v.abbreviated(40).0
                ))
            }
            AtPath::Free | AtPath::Refused(_) => None,
        },
        Kind::Selector { .. }
        | Kind::Sequence { .. }
        | Kind::SelectorP { .. }
        | Kind::Loop { .. }
        | Kind::LoopUntilSuccess { .. }
        | Kind::Parallel(_)
        | Kind::Randomly { .. }
        | Kind::Choose
        | Kind::ChooseEach { .. }
        | Kind::WeightedChoice { .. }
        | Kind::Invert
        | Kind::Always
        | Kind::Never
        | Kind::Success
        | Kind::Failure
        | Kind::Present { .. }
        | Kind::Equal { .. }
        | Kind::Dissoc { .. }
        | Kind::Custom { .. }
        | Kind::Wait { .. }
        | Kind::WaitSeconds { .. }
        | Kind::Timeout { .. }
        | Kind::Cooldown(_)
        | Kind::Retry { .. }
        | Kind::Repeat { .. }
        | Kind::RunOnce { .. }
        | Kind::Delay { .. }
        | Kind::Throttle { .. }
        | Kind::KeepRunningUntilFailure
        | Kind::Force { .. }
        | Kind::ParallelAll { .. }
        | Kind::If
        | Kind::Switch(_) => None,
    }
}

/// The top-level db keys a tree reads (with the first node that reads each)
/// and writes. Keys under `:aido/` are the library's, left out.
#[derive(Default)]
struct Keys {
    reads: Vec<(Value, usize)>,
    writes: Vec<Value>,
}

impl Keys {
    fn read(&mut self, path: &KeyPath, node: usize) {
        if let Some(key) = top_key(path)
            && !self.reads.iter().any(|(k, _)| *k == key)
        {
            self.reads.push((key, node));
        }
    }

    fn write(&mut self, path: &KeyPath) {
        if let Some(key) = top_key(path)
            && !self.writes.contains(&key)
        {
            self.writes.push(key);
        }
    }

    /// The keys an option reads, and its literal vectors that look dynamic.
    fn opt(&mut self, opt: &Opt, node: usize, looks_dynamic: &mut Vec<Value>) {
        match opt {
            Opt::Const(value) => {
                if looks_like_dynamic(value) {
                    looks_dynamic.push(value.clone());
                }
            }
            Opt::Db(path) => self.read(path, node),
            Opt::Call(function, args) => {
                // `[:aido/db k [:aido/db ..]]` is a call whose first
                // argument is the top key, when it is a constant.
                if function.name.as_str() == "aido/db"
                    && let Some(Opt::Const(key)) = args.first()
                {
                    self.read(&KeyPath::One(key.clone()), node);
                }
                for arg in args.iter() {
                    self.opt(arg, node, looks_dynamic);
                }
            }
        }
    }
}

/// The first key of a path, unless it is one of the library's.
fn top_key(path: &KeyPath) -> Option<Value> {
    let key = match path {
        KeyPath::Kw(k, _) => Value::Keyword(*k),
        KeyPath::One(v) => v.clone(),
        KeyPath::Path(keys) => keys.first()?.clone(),
    };
    match &key {
        Value::Keyword(k) if k.namespace() == Some("aido") => None,
        _ => Some(key),
    }
}

/// Whether `value` is a vector headed by a keyword that reads like
/// `:aido/db` or `:aido/fn` misspelt (`:db`, `:fn`, `:aido-db`, `:adio/fn`).
/// A head in the `aido` namespace is no literal: the compiler took it as a
/// dynamic option, or refused it.
fn looks_like_dynamic(value: &Value) -> bool {
    let Some(Value::Keyword(head)) = value.as_seq().and_then(|items| items.first()) else {
        return false;
    };
    if head.namespace() == Some("aido") {
        return false;
    }
    let text = head.as_str();
    matches!(text, "db" | "fn") || did_you_mean(text, ["aido/db", "aido/fn"]).is_some()
}

fn looks_dynamic_warning(tree: &Tree, node: usize, vector: &Value) -> Diagnostic {
    let items = vector.as_seq().unwrap_or(&[]);
    let head = items.first().and_then(Value::as_keyword);
    let meant = match head.map(|k| k.name()) {
        Some(name) if name.ends_with("fn") => "aido/fn",
        _ => "aido/db",
    };
    let (text, _) = vector.abbreviated(60);
    let mut d = Diagnostic::new(
        Code::LooksDynamic,
        format!("`{text}` is a literal vector, used as it is, never worked out"),
    )
    .at(
        tree.span(NodeIndex(node as u32)),
        &tree.path(NodeIndex(node as u32)),
    );
    d.help = Some(format!("did you mean the dynamic option `[:{meant} ..]`?"));
    d
}
