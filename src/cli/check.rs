//! `aido check FILE...`: compile each tree and report every problem.

use std::collections::HashSet;
use std::ffi::OsString;
use std::io::{self, Write};
use std::path::Path;

use std::sync::Arc;

use aido::compile::compile_source_with;
use aido::diag::Diagnostics;
use aido::source::Source;
use aido::{diag::RenderLimits, migrate::state_without_id};

use super::Failure;
use super::args::{self, Spec};
use super::load::{name, read_file};
use super::save::ClosableOut;

pub(crate) const USAGE: &str = "\
usage: aido check FILE... [--nodes MODEL]

Compiles each tree file against the built-in node types and prints
`ok: FILE (N nodes)` for each that compiles. Problems (including malformed
EDN) are printed on stderr, rustc-style. A warning (on stderr; the exit
status stays 0) names each node that keeps state in the db (a memory
composite, a policy parallel, :choose-each, :wait, :defer) without an
explicit :id: its state is stored under an id made from its position.
With --nodes MODEL, the node types and functions the model declares are
checked like the built-ins; a function the model declares under the name of
a standard function (`rand`, `+`, ...) replaces it, with a warning, since
trees then call the application's function, not the standard one.

At most 50 problems are shown per file (then how many more there were;
AIDO_MAX_DIAGNOSTICS changes that), each with a window of its source line;
files larger than AIDO_MAX_INPUT_BYTES (default 64 MiB) are refused.

exit status: 0 all compile, 1 a tree has problems, 2 a file cannot be read";

const SPEC: Spec = Spec {
    usage: "aido check FILE... [--nodes MODEL]",
    value_flags: &["--nodes"],
    switches: &[],
};

/// Checks every file, even after one fails, and exits with the worst outcome.
pub(crate) fn main(args: &[OsString], out: &mut dyn Write) -> Result<i32, Failure> {
    let Some(parsed) = args::parse_or_help(args, &SPEC, USAGE, out)? else {
        return Ok(0);
    };
    if parsed.positional.is_empty() {
        return Err(Failure::usage("no FILE given", SPEC.usage));
    }
    super::use_model(parsed.value("--nodes"))?;
    let registry = super::registry();
    for function in registry.replaced_standard_functions() {
        let by = parsed
            .value("--nodes")
            .map_or_else(|| "the application".to_owned(), |m| name(Path::new(m)));
        let _ = writeln!(
            io::stderr(),
            "warning: {by}: function `{}` replaces the standard function of that name; \
             [:aido/fn {} ..] calls the application's function",
            function.name().as_str(),
            function.name().as_str(),
        );
    }
    let limits = RenderLimits::default().with_max_diagnostics(max_diagnostics()?);
    let mut code = 0;
    // Included files whose problems were shown: a part used by several
    // trees has its own problems reported once.
    let mut shown_includes: HashSet<String> = HashSet::new();
    // A reader that goes away (`| head`) does not hide a later file's errors:
    // every file is still checked and the worst status kept.
    let mut out = ClosableOut::new(out, true);
    let out = &mut out;
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
        // The text moves into the tree's source: a big file is not held twice.
        let loader = super::load::loader(path)?;
        match compile_source_with(Arc::new(Source::new(name(path), text)), &registry, &loader) {
            Ok(tree) => {
                let n = tree.len();
                writeln!(
                    out,
                    "ok: {} ({n} node{})",
                    name(path),
                    if n == 1 { "" } else { "s" }
                )?;
                out.flush()?;
                if let Some(files) = tree.files().filter(|_| !tree.warnings().is_empty()) {
                    let warnings = Diagnostics::new(tree.warnings().to_vec(), files.clone());
                    let _ = write!(io::stderr(), "{}", warnings.render_with(&limits));
                }
                for node in state_without_id(&tree) {
                    let at = match tree.span(node).and_then(|span| tree.locate(span)) {
                        Some((src, span)) => format!("{}:{}", src.name(), src.line_col(span.start)),
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
            Err(mut diags) => {
                // Keep stdout and stderr in file order when both go to a terminal.
                out.flush()?;
                let own = name(path);
                let file_of = |d: &aido::diag::Diagnostic| {
                    diags.locate(d).map(|(src, _)| src.name().to_owned())
                };
                let files: Vec<Option<String>> = diags.items.iter().map(file_of).collect();
                let mut keep = files.iter().map(|file| match file {
                    Some(file) if *file != own => !shown_includes.contains(file),
                    _ => true,
                });
                diags.items.retain(|_| keep.next().unwrap_or(true));
                shown_includes.extend(files.into_iter().flatten().filter(|f| *f != own));
                if diags.items.iter().any(|d| !d.code.is_warning()) {
                    let _ = write!(io::stderr(), "{}", diags.render_with(&limits));
                } else {
                    let _ = writeln!(
                        io::stderr(),
                        "error: {own}: includes files whose problems are shown above"
                    );
                }
                code = code.max(1);
            }
        }
    }
    Ok(code)
}

/// How many diagnostics to show per file: `AIDO_MAX_DIAGNOSTICS` if set to
/// a positive integer, else the default of [`RenderLimits`].
fn max_diagnostics() -> Result<usize, Failure> {
    match std::env::var("AIDO_MAX_DIAGNOSTICS") {
        Err(_) => Ok(RenderLimits::default().max_diagnostics),
        Ok(text) => text
            .trim()
            .parse::<usize>()
            .ok()
            .filter(|&n| n > 0)
            .ok_or_else(|| {
                Failure::input(
                    "AIDO_MAX_DIAGNOSTICS",
                    format!("expected a positive integer, got `{text}`"),
                )
            }),
    }
}
