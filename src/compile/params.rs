//! The parameters an included file declares: their types (a node model's
//! option types, `:key-path` and `:tree`) and the check of an argument.

use std::cell::Cell;

use crate::diag::Code;
use crate::source::{FormSpans, Span};
use crate::spec::OptionType;
use crate::value::{Keyword, Value};

/// What a parameter may hold.
#[derive(Clone)]
pub(super) enum ParamType {
    /// A value of an option type (a node model's types), with its name.
    Value(&'static str, OptionType),
    /// A db key or key path.
    KeyPath,
    /// A node, standing in child position.
    Tree,
}

/// The parameter types: a node model's option types, `:key-path` and `:tree`.
pub(super) const PARAM_TYPES: &[&str] = &[
    ":int",
    ":number",
    ":bool",
    ":string",
    ":keyword",
    ":key",
    ":any",
    ":count",
    ":probability",
    ":weights",
    ":key-path",
    ":tree",
];

pub(super) fn param_type(value: &Value) -> Option<ParamType> {
    let name = value.as_keyword()?.as_str();
    let value = |name: &'static str, ty: OptionType| Some(ParamType::Value(name, ty));
    match name {
        "int" => value("int", OptionType::Int),
        "number" => value("number", OptionType::Number),
        "bool" => value("bool", OptionType::Bool),
        "string" => value("string", OptionType::Str),
        "keyword" => value("keyword", OptionType::Keyword),
        "key" => value("key", OptionType::Key),
        "any" => value("any", OptionType::Any),
        "count" => value("count", OptionType::Count),
        "probability" => value("probability", OptionType::Probability),
        "weights" => value("weights", OptionType::Weights),
        "key-path" => Some(ParamType::KeyPath),
        "tree" => Some(ParamType::Tree),
        _ => None,
    }
}

pub(super) fn type_name(ty: &ParamType) -> String {
    match ty {
        ParamType::Value(name, _) if name.starts_with(['a', 'e', 'i', 'o', 'u']) => {
            format!("an :{name}")
        }
        ParamType::Value(name, _) => format!("a :{name}"),
        ParamType::KeyPath => "a :key-path".to_owned(),
        ParamType::Tree => "a :tree".to_owned(),
    }
}

/// Whether `value` may be given for a parameter of type `ty`; `[:aido/arg
/// ..]` (a parameter passed on) and, where an option may be dynamic,
/// `[:aido/fn ..]` and `[:aido/db ..]` are checked where they are used.
pub(super) fn check_arg(ty: &ParamType, value: &Value) -> Result<(), String> {
    let head = value
        .as_seq()
        .filter(|_| matches!(value, Value::Vector(_)))
        .and_then(|items| items.first())
        .and_then(Value::as_keyword)
        .map(|k| k.as_str());
    if head == Some("aido/arg") {
        return Ok(());
    }
    match ty {
        ParamType::Tree => match head {
            Some(_) => Ok(()),
            None => Err(format!(
                "expected a node `[:type {{options}}? children*]`, found {}",
                value.type_name()
            )),
        },
        ParamType::KeyPath => OptionType::Key.check(value),
        ParamType::Value(_, ty) => {
            if matches!(head, Some("aido/fn" | "aido/db")) && ty.allows_dynamic() {
                return Ok(());
            }
            ty.check(value)
        }
    }
}

/// One parameter an included file declares.
pub(super) struct Param<'a> {
    pub(super) name: Keyword,
    pub(super) ty: ParamType,
    pub(super) default: Option<(&'a Value, Option<FormSpans<'a>>)>,
    /// Where the parameter is declared (in the map's space).
    pub(super) span: Option<Span>,
    pub(super) used: Cell<bool>,
}

pub(super) fn kw(text: &str) -> Value {
    Value::Keyword(Keyword::new(text))
}

pub(super) fn shift(span: Span, base: u32) -> Span {
    Span {
        start: span.start.saturating_add(base),
        end: span.end.saturating_add(base),
    }
}

pub(super) fn span_of(spans: Option<FormSpans<'_>>, base: u32) -> Option<Span> {
    spans.map(|s| shift(s.span(), base))
}

/// Reads a file's `:aido/params` (in its root's options).
pub(super) fn root_params<'a>(
    report: &mut dyn FnMut(Code, String, Option<Span>),
    root: &'a Value,
    spans: Option<FormSpans<'a>>,
    base: u32,
) -> Vec<Param<'a>> {
    let Some(Value::Map(opts)) = root.as_seq().and_then(|items| items.get(1)) else {
        return Vec::new();
    };
    let opts_spans = spans.and_then(|s| s.child(1));
    let Some(i) = opts.get_index_of(&kw("aido/params")) else {
        return Vec::new();
    };
    let decl_spans = opts_spans.and_then(|s| s.child(2 * i + 1));
    let decl = &opts[i];
    let Some(decl) = decl.as_map() else {
        report(
            Code::BadInclude,
            "`:aido/params` is a map from parameter names to `{:type t :default v :doc \"..\"}`"
                .to_owned(),
            span_of(decl_spans, base),
        );
        return Vec::new();
    };
    let mut params = Vec::new();
    for (j, (name, spec)) in decl.iter().enumerate() {
        let name_spans = decl_spans.and_then(|s| s.child(2 * j));
        let spec_spans = decl_spans.and_then(|s| s.child(2 * j + 1));
        let Some(name) = name.as_keyword() else {
            report(
                Code::BadInclude,
                format!(
                    "a parameter is named by a keyword, found {}",
                    name.type_name()
                ),
                span_of(name_spans, base),
            );
            continue;
        };
        let Some(spec) = spec.as_map() else {
            report(
                Code::BadInclude,
                format!(
                    "parameter {} is declared by a map `{{:type t :default v :doc \"..\"}}`",
                    Value::Keyword(name)
                ),
                span_of(spec_spans, base),
            );
            continue;
        };
        let mut ty = None;
        let mut default = None;
        for (k, (key, val)) in spec.iter().enumerate() {
            let val_spans = spec_spans.and_then(|s| s.child(2 * k + 1));
            match key.as_keyword().map(|k| k.as_str()) {
                Some("type") => {
                    ty = param_type(val);
                    if ty.is_none() {
                        report(
                            Code::BadInclude,
                            format!(
                                "unknown parameter type `{}`; the types are {}",
                                super::short(val),
                                PARAM_TYPES.join(" ")
                            ),
                            span_of(val_spans, base),
                        );
                    }
                }
                Some("default") => default = Some((val, val_spans)),
                Some("doc") => {}
                _ => {
                    report(
                        Code::BadInclude,
                        format!(
                            "unknown key `{}` in a parameter's declaration \
                             (it takes :type, :default and :doc)",
                            super::short(key)
                        ),
                        span_of(spec_spans.and_then(|s| s.child(2 * k)), base),
                    );
                }
            }
        }
        let Some(ty) = ty else {
            if !spec.contains_key(&kw("type")) {
                report(
                    Code::BadInclude,
                    format!("parameter {} has no `:type`", Value::Keyword(name)),
                    span_of(spec_spans, base),
                );
            }
            continue;
        };
        if let Some((value, spans)) = default
            && let Err(why) = check_arg(&ty, value)
        {
            report(
                Code::BadInclude,
                format!(
                    "the default of parameter {} is not {}: {why}",
                    Value::Keyword(name),
                    type_name(&ty)
                ),
                span_of(spans, base),
            );
        }
        params.push(Param {
            name,
            ty,
            default,
            span: span_of(name_spans, base),
            used: Cell::new(false),
        });
    }
    params
}
