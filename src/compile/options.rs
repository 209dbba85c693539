//! Lowering a node's options map: checking keys and constant values against
//! the node type's spec, and turning `[:aido/fn ..]` / `[:aido/db ..]` into
//! dynamic options.

use crate::diag::{Code, did_you_mean};
use std::sync::Arc;

use crate::extend::{ArgError, CompileFn, Function, NodeType};
use crate::nodes::{Options, is_precondition};
use crate::source::{FormSpans, Span};
use crate::spec::{Operator, OptionType};
use crate::tick::{catch_quietly, panic_message};
use crate::tree::{KeyPath, Opt, Preconditions};
use crate::value::{Keyword, Map, Symbol, Value, kw};

use super::{Compiler, short};

/// Option keys every node accepts.
pub(crate) const GENERIC_KEYS: &[&str] = &[
    "id",
    "doc",
    "aido/samples",
    "aido/skip-if",
    "aido/success-if",
    "aido/failure-if",
];

/// The keywords `:doc` and `:aido/samples`, interned once per compile
/// (kept by the [`Compiler`]): comparing keywords is one integer compare,
/// where reading a keyword's text takes the interner's lock.
pub(super) fn doc_and_samples() -> (Keyword, Keyword) {
    (Keyword::new("doc"), Keyword::new("aido/samples"))
}

/// Checks a node's options map against its node type's spec and lowers
/// each value: what the node type's own lowering then takes apart.
///
/// A node written without an options map (a fifth of the nodes of the
/// generated 9,680-node tree) has nothing to lower and, unless its node
/// type requires an option, nothing to report: its empty options are
/// made inline, without the call.
#[inline(always)]
pub(crate) fn lower_options<'m>(
    c: &mut Compiler<'_>,
    node_type: Option<&NodeType>,
    map: Option<&'m Map>,
    spans: Option<FormSpans<'m>>,
    node_span: Option<Span>,
    entries: &'m mut Vec<(Keyword, Opt)>,
) -> Options<'m> {
    if map.is_none() && !node_type.is_some_and(|nt| nt.options.iter().any(|o| o.required)) {
        entries.clear();
        return Options {
            entries,
            pre: None,
            id: None,
            map: None,
            spans: None,
        };
    }
    lower_options_map(c, node_type, map, spans, node_span, entries)
}

/// [`lower_options`] for a node with an options map, or one whose node
/// type requires an option.
#[inline(never)]
fn lower_options_map<'m>(
    c: &mut Compiler<'_>,
    node_type: Option<&NodeType>,
    map: Option<&'m Map>,
    spans: Option<FormSpans<'m>>,
    node_span: Option<Span>,
    entries: &'m mut Vec<(Keyword, Opt)>,
) -> Options<'m> {
    entries.clear();
    let mut out = Options {
        entries,
        pre: None,
        id: None,
        map,
        spans,
    };
    if let Some(m) = map {
        // Keyword keys, all an options map normally has, come as their
        // codes (no key value looked up); a key of another type, stored
        // apart, is taken by its position, so that the keys are still
        // lowered, and their errors reported, in the order written.
        let mut next = 0;
        m.for_each_keyword(|i, key| {
            for j in next..i {
                if let Some((key, value)) = m.get_index(j) {
                    lower_entry(c, &mut out, node_type, j, key, value);
                }
            }
            if let Some(value) = m.value_at(i) {
                lower_option(c, &mut out, node_type, i, key, value);
            }
            next = i + 1;
        });
        for j in next..m.len() {
            if let Some((key, value)) = m.get_index(j) {
                lower_entry(c, &mut out, node_type, j, key, value);
            }
        }
    }
    if let Some(nt) = node_type {
        for spec in nt.options.iter().filter(|o| o.required) {
            if !out.entries.iter().any(|(k, _)| *k == spec.key)
                && !map.is_some_and(|m| m.contains_key(&Value::Keyword(spec.key)))
            {
                c.error(
                    Code::MissingOption,
                    format!(
                        "`{}` needs the option `{}` ({})",
                        nt.name, spec.key, spec.ty
                    ),
                    node_span,
                );
            }
        }
    }
    out
}

/// Lowers the option at position `i` of a node's options map whose key is
/// not stored as a keyword's code: a keyword past the codes a map keeps
/// is lowered as any other, anything else is an error. Out of line: an
/// options map read from text has keyword keys alone.
#[cold]
#[inline(never)]
fn lower_entry<'m>(
    c: &mut Compiler<'_>,
    out: &mut Options<'m>,
    node_type: Option<&NodeType>,
    i: usize,
    key: &'m Value,
    value: &'m Value,
) {
    let Value::Keyword(key) = key else {
        let key_span = out.spans.and_then(|s| s.child(2 * i)).map(FormSpans::span);
        c.error(
            Code::UnknownOption,
            format!(
                "option keys are keywords, found {} `{}`",
                key.type_name(),
                short(key)
            ),
            key_span,
        );
        return;
    };
    lower_option(c, out, node_type, i, *key, value);
}

/// Lowers the option `key` at position `i` of a node's options map into
/// `out`: its id, a precondition, or an option of the node type. Inlined
/// into the loop over keyword keys, where it saves a call an option.
#[inline(always)]
fn lower_option<'m>(
    c: &mut Compiler<'_>,
    out: &mut Options<'m>,
    node_type: Option<&NodeType>,
    i: usize,
    key: Keyword,
    value: &'m Value,
) {
    let spans = out.spans;
    let id_key = kw::ID;
    let (doc_key, samples_key) = c.doc_and_samples;
    // Where the key is written is wanted only for an error.
    let key_span = || spans.and_then(|s| s.child(2 * i)).map(FormSpans::span);
    // Where the value is written, likewise wanted only off the fast path.
    let value_spans = || spans.and_then(|s| s.child(2 * i + 1));
    let value_span = || value_spans().map(FormSpans::span);
    if key == id_key {
        match value {
            Value::Keyword(_) | Value::Str(_) | Value::Int(_) => {
                out.id = Some((value.clone(), value_span()));
            }
            other => {
                c.error(
                    Code::BadOptionValue,
                    format!(
                        "`:id` expected a keyword, string or integer, found {} `{}`",
                        other.type_name(),
                        short(other)
                    ),
                    value_span(),
                );
            }
        }
        return;
    }
    // `:doc` documents any node (shown by `aido show` and the page); it
    // does nothing when ticked. A node type that declares a `:doc` of its
    // own gets it instead.
    if key == doc_key && !node_type.is_some_and(|nt| nt.options.iter().any(|o| o.key == key)) {
        if !matches!(value, Value::Str(_)) {
            c.error(
                Code::BadOptionValue,
                format!(
                    "`:doc` expected a string, found {} `{}`",
                    value.type_name(),
                    short(value)
                ),
                value_span(),
            );
        }
        return;
    }
    // `:aido/samples` are inputs the node should accept, for `aido check
    // --samples`; like `:doc`, they do nothing when ticked.
    if key == samples_key {
        if !matches!(value, Value::Vector(_) | Value::List(_)) {
            c.error(
                Code::BadOptionValue,
                format!(
                    "`:aido/samples` expected a vector of sample inputs, found {} `{}`",
                    value.type_name(),
                    short(value)
                ),
                value_span(),
            );
        }
        return;
    }
    // (The test inline, as nearly no option is a precondition; the slot
    // found by a call.)
    if is_precondition(key)
        && let Some(slot) = precondition_slot(&mut out.pre, key)
    {
        // A precondition is any value, constant or dynamic; only its truthiness counts.
        if let Some(opt) = lower_value(c, key, value, value_spans(), Some(&OptionType::Any)) {
            *slot = Some(opt);
        }
        return;
    }
    let spec = match node_type {
        Some(nt) => match nt.options.iter().find(|o| o.key == key) {
            Some(spec) => Some(&spec.ty),
            None if nt.open_options => Some(&OptionType::Any),
            None => {
                let known = nt
                    .options
                    .iter()
                    .map(|o| o.key.as_str())
                    .chain(GENERIC_KEYS.iter().copied());
                let help =
                    did_you_mean(key.as_str(), known).map(|s| format!("did you mean `:{s}`?"));
                let accepted = accepted_keys(nt);
                c.error(
                    Code::UnknownOption,
                    format!(
                        "`{}` has no option `{key}` (it accepts {accepted})",
                        nt.name
                    ),
                    key_span(),
                )
                .help = help;
                None
            }
        },
        None => None,
    };
    // A scalar is a constant (a dynamic option is a vector) and nearly
    // always of its type: kept here, without the call that also handles
    // dynamic options and reports errors.
    if !matches!(value, Value::Vector(_))
        && spec.is_none_or(|ty| surely_fits(ty, value) || checks(c, ty, value))
    {
        out.entries.push((key, Opt::Const(value.clone())));
    } else if let Some(opt) = lower_value(c, key, value, value_spans(), spec) {
        out.entries.push((key, opt));
    }
}

/// Whether the scalar `value` is of type `ty` for certain, told by its
/// variant alone: the common cases, without the call to
/// [`OptionType::check`], which decides every other (a `false` here is
/// no verdict).
#[inline(always)]
fn surely_fits(ty: &OptionType, value: &Value) -> bool {
    matches!(
        (ty, value),
        (OptionType::Any, _)
            | (OptionType::Keyword | OptionType::Name, Value::Keyword(_))
            | (OptionType::Int | OptionType::Number, Value::Int(_))
            | (OptionType::Count, Value::Int(0..))
            | (OptionType::Bool | OptionType::Flag, Value::Bool(_))
            | (OptionType::Str, Value::Str(_))
            | (
                OptionType::Key,
                Value::Keyword(_) | Value::Str(_) | Value::Int(_)
            )
    )
}

/// How many keywords a name list accepted are remembered in a compile:
/// the lists of built-in node types hold a few names each.
const MAX_ACCEPTED_NAMES: usize = 32;

/// Whether the constant `value` is of type `ty`, by [`OptionType::check`].
/// A keyword a name list (`OneOf`) accepted is remembered with the list,
/// so that the next option with that list and keyword (every `:mode
/// :success`) is accepted by comparing codes, where the check reads the
/// keyword's text from the interner (under its lock) and compares it with
/// each name. An operator's symbol (`:oper <=`) the check accepted is
/// remembered likewise, where the check reads its text and parses it. A
/// call of its own: inlined, the type check's every arm would crowd the
/// loop over options.
#[inline(never)]
fn checks(c: &mut Compiler<'_>, ty: &OptionType, value: &Value) -> bool {
    if let (OptionType::Operator, Value::Symbol(s)) = (ty, value) {
        return checks_operator(c, ty, value, *s);
    }
    let (OptionType::OneOf(names), Value::Keyword(k)) = (ty, value) else {
        return ty.check(value).is_ok();
    };
    // A list is a static slice: the same address and length, the same names.
    let known = |&(list, code): &(&[&str], Keyword)| std::ptr::eq(list, *names) && code == *k;
    if c.accepted_names.iter().any(known) {
        return true;
    }
    let ok = ty.check(value).is_ok();
    if ok && c.accepted_names.len() < MAX_ACCEPTED_NAMES {
        c.accepted_names.push((names, *k));
    }
    ok
}

/// Whether the symbol `s` (the option `value`) is an operator, its
/// symbol remembered once the check has accepted it (see [`checks`]).
fn checks_operator(c: &mut Compiler<'_>, ty: &OptionType, value: &Value, s: Symbol) -> bool {
    if c.accepted_operators.contains(&s) {
        return true;
    }
    let ok = ty.check(value).is_ok();
    if ok && c.accepted_operators.len() < MAX_ACCEPTED_NAMES {
        c.accepted_operators.push(s);
    }
    ok
}

/// Where the precondition named by `key` goes, if `key` names one.
fn precondition_slot(
    pre: &mut Option<Box<Preconditions>>,
    key: Keyword,
) -> Option<&mut Option<Opt>> {
    if !is_precondition(key) {
        return None;
    }
    let pre = pre.get_or_insert_with(Box::default);
    Some(if key == kw::SKIP_IF {
        &mut pre.skip_if
    } else if key == kw::SUCCESS_IF {
        &mut pre.success_if
    } else {
        &mut pre.failure_if
    })
}

fn accepted_keys(nt: &NodeType) -> String {
    let keys: Vec<String> = nt
        .options
        .iter()
        .map(|o| o.key.to_string())
        .chain([":id".to_owned(), ":doc".to_owned()])
        .collect();
    keys.join(" ")
}

/// The head keyword of a dynamic form, if `value` is one (`[:aido/.. ..]`).
fn dynamic_head(value: &Value) -> Option<Keyword> {
    match value {
        Value::Vector(items) => match items.first() {
            Some(Value::Keyword(k)) if k.namespace() == Some("aido") => Some(*k),
            _ => None,
        },
        _ => None,
    }
}

fn lower_value(
    c: &mut Compiler<'_>,
    key: Keyword,
    value: &Value,
    spans: Option<FormSpans<'_>>,
    ty: Option<&OptionType>,
) -> Option<Opt> {
    let span = spans.map(FormSpans::span);
    if dynamic_head(value).is_some() {
        if let Some(ty) = ty
            && !ty.allows_dynamic()
        {
            c.error(
                Code::BadOptionValue,
                format!(
                    "`{key}` must be a constant ({ty}), not a dynamic option: it shapes the \
                     node when the tree is compiled (so do `:id`, `:doc`, `:key`, `:into`, \
                     `:oper`, `:memory` and `:action`)"
                ),
                span,
            );
            return None;
        }
        return lower_dynamic(c, value, spans);
    }
    if let Some(ty) = ty
        && let Err(msg) = ty.check(value)
    {
        let help = match (ty, value) {
            (OptionType::Operator, Value::Symbol(s)) => Operator::aido_spelling(s.as_str())
                .filter(|op| Operator::parse(op).is_some())
                .or_else(|| did_you_mean(s.as_str(), ["=", "not=", "<", ">", "<=", ">="]))
                .map(|op| format!("did you mean `{op}`?")),
            _ => None,
        };
        c.error(Code::BadOptionValue, format!("`{key}` {msg}"), span)
            .help = help;
        return None;
    }
    Some(Opt::Const(value.clone()))
}

/// Runs a function's compile step over one call's arguments: `None` when it
/// refused them (reported at the argument it names), else the function the
/// call keeps (with the body the step prepared, if it made one).
fn compile_step(
    c: &mut Compiler<'_>,
    function: &Arc<Function>,
    step: &CompileFn,
    args: &[Opt],
    spans: Option<FormSpans<'_>>,
) -> Option<Arc<Function>> {
    let constants: Vec<Option<&Value>> = args
        .iter()
        .map(|a| match a {
            Opt::Const(v) => Some(v),
            _ => None,
        })
        .collect();
    let result = catch_quietly(|| step(&constants)).unwrap_or_else(|panic| {
        Err(ArgError::new(format!(
            "its compile step panicked: {}",
            panic_message(panic.as_ref())
        )))
    });
    match result {
        Ok(None) => Some(Arc::clone(function)),
        Ok(Some(body)) => {
            let mut specialised = Function::clone(function);
            specialised.f = body;
            Some(Arc::new(specialised))
        }
        Err(e) => {
            let at = e
                .arg
                .and_then(|i| spans.and_then(|s| s.child(i + 2)))
                .or(spans)
                .map(FormSpans::span);
            c.error(
                Code::BadArgument,
                format!("function `{}`: {e}", function.name.as_str()),
                at,
            );
            None
        }
    }
}

/// Whether `key`, the top key of a db read, is `:aido/memory`.
fn is_memory_key(key: &Value) -> bool {
    matches!(key, Value::Keyword(k) if *k == crate::value::kw::MEMORY)
}

/// Lowers `[:aido/db k ..]` or `[:aido/fn f args..]`.
pub(crate) fn lower_dynamic(
    c: &mut Compiler<'_>,
    value: &Value,
    spans: Option<FormSpans<'_>>,
) -> Option<Opt> {
    let span = spans.map(FormSpans::span);
    let head = dynamic_head(value)?;
    let items = value.as_seq().unwrap_or(&[]);
    match head.name() {
        "db" => {
            if items.len() < 2 {
                c.error(
                    Code::BadDynamic,
                    "`[:aido/db ..]` needs a key path: `[:aido/db :key ..]`".to_owned(),
                    span,
                );
                return None;
            }
            if items.len() - 1 > crate::tree::MAX_KEY_PATH {
                c.error(
                    Code::BadDynamic,
                    format!(
                        "`[:aido/db ..]` has a key path of {} keys, more than the limit of {}",
                        items.len() - 1,
                        crate::tree::MAX_KEY_PATH
                    ),
                    span,
                );
                return None;
            }
            if items[1..].iter().any(|k| dynamic_head(k).is_some()) {
                // A segment worked out when the node is ticked: the path is
                // read then, by a call whose arguments are the segments.
                let mut segments = Vec::with_capacity(items.len() - 1);
                let mut ok = true;
                for (i, key) in items[1..].iter().enumerate() {
                    let key_spans = spans.and_then(|s| s.child(i + 1));
                    if dynamic_head(key).is_some() {
                        match lower_dynamic(c, key, key_spans) {
                            Some(opt) => segments.push(opt),
                            None => ok = false,
                        }
                    } else {
                        segments.push(Opt::Const(key.clone()));
                    }
                }
                // The top key is worked out when the node is ticked
                // unless it is a constant: then it is known.
                if !matches!(segments.first(), Some(Opt::Const(top)) if !is_memory_key(top)) {
                    c.dynamic_reads_memory = true;
                }
                return ok.then(|| {
                    Opt::Call(
                        Arc::new(crate::funcs::db_path()),
                        segments.into_boxed_slice(),
                    )
                });
            }
            let path = KeyPath::from_value(&Value::Vector(items[1..].into()));
            if crate::tick::starts_at_memory(&path) {
                c.dynamic_reads_memory = true;
            }
            Some(Opt::Db(path))
        }
        "fn" => {
            let name_span = spans.and_then(|s| s.child(1)).map(FormSpans::span);
            let name = match items.get(1) {
                Some(Value::Keyword(k)) => Keyword::new(k.as_str()),
                Some(Value::Symbol(s)) => Keyword::new(s.as_str()),
                Some(other) => {
                    c.error(
                        Code::BadDynamic,
                        format!(
                            "`[:aido/fn ..]` names its function with a symbol or keyword, found {} `{}`",
                            other.type_name(),
                            short(other)
                        ),
                        name_span,
                    );
                    return None;
                }
                None => {
                    c.error(
                        Code::BadDynamic,
                        "`[:aido/fn ..]` needs a function name: `[:aido/fn f args..]`".to_owned(),
                        span,
                    );
                    return None;
                }
            };
            let Some(function) = c.registry.lookup_function(name).cloned() else {
                let help = Operator::aido_spelling(name.as_str())
                    .map(|s| format!("did you mean `{s}`?"))
                    .or_else(|| {
                        c.suggestions
                            .help(name, true, c.registry.function_names(), |s| {
                                format!("did you mean `{s}`?")
                            })
                    });
                c.error(
                    Code::UnknownFunction,
                    format!("unknown function `{}`", name.as_str()),
                    name_span,
                )
                .help = help;
                return None;
            };
            let arg_values = &items[2..];
            let arity_ok = function.arity.allows(arg_values.len());
            if !arity_ok {
                let arity = function.arity.counted("argument", "arguments");
                c.error(
                    Code::BadDynamic,
                    format!(
                        "function `{}` takes {arity}, given {}",
                        name.as_str(),
                        arg_values.len()
                    ),
                    span,
                );
            }
            let mut args = Vec::with_capacity(arg_values.len());
            let mut ok = true;
            for (i, arg) in arg_values.iter().enumerate() {
                let arg_spans = spans.and_then(|s| s.child(i + 2));
                if dynamic_head(arg).is_some() {
                    match lower_dynamic(c, arg, arg_spans) {
                        Some(opt) => args.push(opt),
                        None => ok = false,
                    }
                } else {
                    args.push(Opt::Const(arg.clone()));
                }
            }
            if !ok {
                return None;
            }
            // A host's function is handed the db (and may have a halt
            // hook that is too); the standard ones read only their
            // arguments.
            if !function.standard {
                c.dynamic_reads_memory = true;
            }
            let function = match &function.compile {
                // A call with the wrong number of arguments is reported once.
                Some(step) if arity_ok => compile_step(c, &function, &**step, &args, spans)?,
                _ => function,
            };
            Some(Opt::Call(function, args.into_boxed_slice()))
        }
        _ => {
            let help = did_you_mean(head.as_str(), ["aido/fn", "aido/db"])
                .map(|s| format!("did you mean `:{s}`?"));
            c.error(
                Code::BadDynamic,
                format!("unknown dynamic option `{head}`: use `[:aido/fn f args..]` or `[:aido/db key ..]`"),
                spans.and_then(|s| s.child(0)).map(FormSpans::span).or(span),
            )
            .help = help;
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::surely_fits;
    use crate::spec::OptionType;
    use crate::value::Value;

    /// The fast test never accepts what `OptionType::check` refuses, and
    /// accepts the common scalars of each type.
    #[test]
    fn surely_fits_agrees_with_the_type_check() {
        let types = [
            OptionType::Any,
            OptionType::Bool,
            OptionType::Int,
            OptionType::Count,
            OptionType::Number,
            OptionType::Probability,
            OptionType::Keyword,
            OptionType::Str,
            OptionType::OneOf(&["success", "failure"]),
            OptionType::Key,
            OptionType::Weights,
            OptionType::Operator,
            OptionType::Flag,
            OptionType::Name,
        ];
        let values = [
            Value::Nil,
            Value::Bool(true),
            Value::Int(-1),
            Value::Int(0),
            Value::Int(3),
            Value::Float(0.5),
            Value::Float(2.0),
            Value::string("text"),
            Value::keyword("success"),
            Value::keyword("k"),
            Value::symbol("<="),
            Value::Char('c'),
        ];
        let mut n_fast = 0;
        for ty in &types {
            for value in &values {
                if surely_fits(ty, value) {
                    n_fast += 1;
                    assert!(ty.check(value).is_ok(), "{ty} accepted {value}");
                }
            }
        }
        // Any takes all 12; keyword and name 2 each; int 3; number 3;
        // count 2; bool and flag 1 each; str 1; key 6.
        assert_eq!(n_fast, 33);
    }
}
