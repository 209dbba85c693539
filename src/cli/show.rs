//! `aido show TREE [--format text|dot|mermaid]`: print a tree as an outline
//! or a graph.

use std::ffi::OsString;
use std::io::Write;

use super::Failure;
use super::args::{self, Spec};
use super::load::compile_tree;

pub(crate) const USAGE: &str = "\
usage: aido show TREE [--format text|dot|mermaid] [--nodes MODEL]

Compiles TREE and prints it:
  text     (default) an indented outline, one line per node: node type, id
           (explicit, or derived from the node's position), the options as
           written (`:doc` among them) and `; line N`, the node's line in TREE
  dot      a Graphviz digraph (render it with `dot -Tsvg`); each node's label
           has its type, id, options and `:doc`
  mermaid  a Mermaid `flowchart TD`, labelled as the digraph

options:
  --nodes MODEL    a node model: the application's node types and functions

exit status: 0 shown, 1 the tree has compile errors, 2 bad arguments or an
unreadable or malformed file";

const SPEC: Spec = Spec {
    usage: "aido show TREE [--format text|dot|mermaid] [--nodes MODEL]",
    value_flags: &["--format", "--nodes"],
    switches: &[],
};

pub(crate) fn main(args: &[OsString], out: &mut dyn Write) -> Result<i32, Failure> {
    let Some(parsed) = args::parse_or_help(args, &SPEC, USAGE, out)? else {
        return Ok(0);
    };
    let path = parsed.one_tree("show", SPEC.usage)?;
    let render = match parsed.text("--format")? {
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
    super::use_model(parsed.value("--nodes"))?;
    let tree = compile_tree(&path)?;
    write!(out, "{}", render(&tree))?;
    Ok(0)
}
