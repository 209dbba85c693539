//! `aido show TREE [--format text|dot|mermaid] [--nodes MODEL]`: print a tree as an outline
//! or a graph.

use std::io::Write;

use super::Failure;
use super::args::{self, SHOW_USAGE, ShowArgs};
use super::load::compile_tree;

pub(crate) fn main(args: &ShowArgs, out: &mut dyn Write) -> Result<i32, Failure> {
    let path = args::one_tree(&args.paths, "show", SHOW_USAGE)?;
    let render = match args::text("--format", args.format.as_deref())? {
        None | Some("text") => aido::record::outline,
        Some("dot") => aido::record::dot,
        Some("mermaid") => aido::record::mermaid,
        Some(other) => {
            return Err(Failure::input(
                "--format",
                format!("expected `text`, `dot` or `mermaid`, got `{other}`"),
            ));
        }
    };
    super::use_model(args.nodes.as_deref())?;
    let tree = compile_tree(&path)?;
    write!(out, "{}", render(&tree))?;
    Ok(0)
}
