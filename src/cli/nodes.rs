//! `aido nodes [--nodes MODEL] [--format text|edn]`: the reference of every
//! node type and function the tool knows.

use std::ffi::OsString;
use std::io::Write;

use aido::{Value, extend::Arity};

use super::Failure;
use super::args::{self, Spec};

pub(crate) const USAGE: &str = "\
usage: aido nodes [--nodes MODEL] [--format text|edn]

Prints every node type (its children, options and documentation) and every
function (its arity and documentation) that trees are checked against: the
built-ins, the program's own, and those a node model declares. With
--format edn the reference is printed as a node model (the format --nodes
reads), one node type or function a line.

exit status: 0 printed, 2 bad arguments or an unreadable or malformed model";

const SPEC: Spec = Spec {
    usage: "aido nodes [--nodes MODEL] [--format text|edn]",
    value_flags: &["--nodes", "--format"],
    switches: &[],
};

pub(crate) fn main(args: &[OsString], out: &mut dyn Write) -> Result<i32, Failure> {
    let Some(parsed) = args::parse_or_help(args, &SPEC, USAGE, out)? else {
        return Ok(0);
    };
    if let Some(extra) = parsed.positional.first() {
        return Err(Failure::usage(
            format!("unexpected argument `{}`", extra.to_string_lossy()),
            SPEC.usage,
        ));
    }
    let edn = match parsed.text("--format")? {
        None | Some("text") => false,
        Some("edn") => true,
        Some(other) => {
            return Err(Failure::input(
                "--format",
                format!("expected `text` or `edn`, got `{other}`"),
            ));
        }
    };
    super::use_model(parsed.value("--nodes"))?;
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
