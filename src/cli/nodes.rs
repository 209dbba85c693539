//! `aido nodes [--nodes MODEL] [--format text|edn]`: the reference of every
//! node type and function the tool knows.

use std::io::Write;

use aido::{Value, extend::Arity};

use super::Failure;
use super::args::{self, NODES_USAGE, NodesArgs};

pub(crate) fn main(args: &NodesArgs, out: &mut dyn Write) -> Result<i32, Failure> {
    if let Some(extra) = args.paths.first() {
        return Err(Failure::usage(
            format!("unexpected argument `{}`", extra.to_string_lossy()),
            NODES_USAGE,
        ));
    }
    let edn = match args::text("--format", args.format.as_deref())? {
        None | Some("text") => false,
        Some("edn") => true,
        Some(other) => {
            return Err(Failure::input(
                "--format",
                format!("expected `text` or `edn`, got `{other}`"),
            ));
        }
    };
    super::use_model(args.nodes.as_deref())?;
    let registry = super::registry();
    if edn {
        write!(out, "{}", aido::model::model_text(&registry.reference()))?;
        return Ok(0);
    }
    writeln!(out, "node types")?;
    for nt in registry.node_types() {
        let origin = if nt.is_declared() {
            "  (declared in a model)"
        } else {
            ""
        };
        writeln!(
            out,
            "\n  {}  {}{origin}",
            Value::Keyword(nt.name()),
            nt.arity()
        )?;
        let doc = nt.documentation();
        if let Some(doc) = doc {
            writeln!(out, "    {doc}")?;
        }
        let width = nt
            .options()
            .iter()
            .map(|o| o.key.as_str().len() + 1)
            .max()
            .unwrap_or(0);
        for option in nt.options() {
            let key = format!(":{}", option.key.as_str());
            let required = if option.required { ", required" } else { "" };
            writeln!(out, "    {key:<width$}  {}{required}", option.ty)?;
            if let Some(doc) = &option.doc {
                writeln!(out, "    {:width$}  {doc}", "")?;
            }
        }
        if nt.open_options() {
            writeln!(out, "    (takes other options too)")?;
        }
    }
    writeln!(out, "\nfunctions")?;
    for f in registry.functions() {
        let origin = if f.is_declared() {
            "  (declared in a model)"
        } else {
            ""
        };
        writeln!(
            out,
            "\n  {}  {}{origin}",
            f.name().as_str(),
            arguments(f.arity())
        )?;
        let doc = f.documentation();
        if let Some(doc) = doc {
            writeln!(out, "    {doc}")?;
        }
    }
    Ok(0)
}

/// A function's arity in words.
fn arguments(arity: &Arity) -> String {
    match arity {
        Arity::Exactly(0) => "no arguments".to_owned(),
        Arity::Exactly(1) => "1 argument".to_owned(),
        Arity::Exactly(n) => format!("{n} arguments"),
        Arity::OneOf(ns) => {
            let ns: Vec<String> = ns.iter().map(ToString::to_string).collect();
            format!("{} arguments", ns.join(" or "))
        }
        Arity::AtLeast(1) => "at least 1 argument".to_owned(),
        Arity::AtLeast(n) => format!("at least {n} arguments"),
        Arity::Any => "any number of arguments".to_owned(),
    }
}
