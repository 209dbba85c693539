//! `aido check FILE...`: compile each tree and report every problem.

use std::ffi::OsString;
use std::io::{self, Write};
use std::path::Path;

use aido::{compile_str, state_without_id};

use super::Failure;
use super::args::{self, Spec};
use super::load::{name, read_file};

pub(crate) const USAGE: &str = "\
usage: aido check FILE... [--nodes MODEL]

Compiles each tree file against the built-in node types and prints
`ok: FILE (N nodes)` for each that compiles. Problems (including malformed
EDN) are printed on stderr, rustc-style. A warning (on stderr; the exit
status stays 0) names each node that keeps state in the db (a memory
composite, a policy parallel, :choose-each, :wait, :defer) without an
explicit :id: its state is stored under an id made from its position.
With --nodes MODEL, the node types and functions the model declares are
checked like the built-ins.

exit status: 0 all compile, 1 a tree has problems, 2 a file cannot be read";

const SPEC: Spec = Spec {
    usage: "aido check FILE... [--nodes MODEL]",
    value_flags: &["--nodes"],
    switches: &[],
};

/// Checks every file, even after one fails, and exits with the worst outcome.
pub(crate) fn main(args: &[OsString], out: &mut dyn Write) -> Result<i32, Failure> {
    let parsed = args::parse(args, &SPEC)?;
    if parsed.help {
        writeln!(out, "{USAGE}")?;
        return Ok(0);
    }
    if parsed.positional.is_empty() {
        return Err(Failure::usage("no FILE given", SPEC.usage));
    }
    super::use_model(parsed.value("--nodes"))?;
    let registry = super::registry();
    let mut code = 0;
    for file in &parsed.positional {
        let path = Path::new(file);
        let text = match read_file(path) {
            Ok(text) => text,
            Err(Failure::Input { what, why }) => {
                let _ = writeln!(io::stderr(), "aido: {what}: {why}");
                code = 2;
                continue;
            }
            Err(other) => return Err(other),
        };
        match compile_str(&name(path), &text, &registry) {
            Ok(tree) => {
                let n = tree.len();
                writeln!(
                    out,
                    "ok: {} ({n} node{})",
                    name(path),
                    if n == 1 { "" } else { "s" }
                )?;
                out.flush()?;
                for node in state_without_id(&tree) {
                    let at = match (tree.span(node), tree.source()) {
                        (Some(span), Some(src)) => {
                            format!("{}:{}", name(path), src.line_col(span.start))
                        }
                        _ => name(path),
                    };
                    let _ = writeln!(
                        io::stderr(),
                        "warning: {at}: `{}` node {} keeps state but has no :id; its state is \
                         stored under an id made from its position, which an edit that moves \
                         it changes",
                        tree.node_type(node)
                            .map(|k| k.to_string())
                            .unwrap_or_default(),
                        tree.node_id(node).cloned().unwrap_or_default(),
                    );
                }
            }
            Err(diags) => {
                // Keep stdout and stderr in file order when both go to a terminal.
                out.flush()?;
                let _ = write!(io::stderr(), "{}", diags.render());
                code = code.max(1);
            }
        }
    }
    Ok(code)
}
