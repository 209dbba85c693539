//! `aido check FILE...`: compile each tree and report every problem.

use std::collections::HashSet;
use std::io::{self, Write};
use std::path::Path;

use std::sync::Arc;

use aido::Value;
use aido::compile::{Loader, compile_document_with, compile_source_with};
use aido::diag::Diagnostics;
use aido::samples::{SampleOptions, check_samples};
use aido::source::Source;
use aido::{Registry, Tree};
use aido::{diag::RenderLimits, lint::lint_with_schema, migrate::state_without_id};

use super::Failure;
use super::args::{CHECK_USAGE, CheckArgs, keyword};
use super::load::{name, read_db_or_empty, read_file};
use super::save::ClosableOut;

/// Compiles the tree in `source` keeping the data read: the check always
/// asks for it (which nodes that keep state have no `:id`), and a tree
/// compiled from the reader's record of its nodes ([`compile_source_with`])
/// would read the text a second time for it. A text that does not read is
/// reported as the compile from text reports it, as one diagnostic.
fn compile_with_form(
    source: Arc<Source>,
    registry: &Registry,
    loader: &dyn Loader,
) -> Result<Tree, Diagnostics> {
    match aido::read(source.clone()) {
        Ok(doc) => compile_document_with(doc, registry, loader),
        Err(_) => compile_source_with(source, registry, loader),
    }
}

/// Checks every file, even after one fails, and exits with the worst outcome.
pub(crate) fn main(args: &CheckArgs, out: &mut dyn Write) -> Result<i32, Failure> {
    if args.paths.is_empty() {
        return Err(Failure::usage("no FILE given", CHECK_USAGE));
    }
    super::use_model(args.nodes.as_deref())?;
    let example_db = match &args.db {
        Some(path) => Some(read_db_or_empty(Some(Path::new(path)))?),
        None => None,
    };
    let deny_warnings = args.deny_warnings;
    let samples = match args.samples {
        true => {
            let options = SampleOptions::default();
            Some(match keyword("--input-key", args.input_key.as_deref())? {
                Some(key) => options.input_key(key),
                None => options,
            })
        }
        false => None,
    };
    let registry = super::registry();
    for function in registry.replaced_standard_functions() {
        let by = args
            .nodes
            .as_ref()
            .map_or_else(|| "the application".to_owned(), |m| name(Path::new(m)));
        let _ = writeln!(
            io::stderr(),
            "warning: {by}: function `{}` replaces the standard function of that name; \
             [:aido/fn {} ..] calls the application's function",
            function.name().as_str(),
            function.name().as_str(),
        );
    }
    let mut code = 0;
    // The example db against the models' schema, once for every file.
    if let (Some(db), Some(schema), Some(path)) =
        (&example_db, registry.db_schema(), args.db.as_deref())
    {
        for (key, problem) in schema.check_db(db) {
            let _ = writeln!(
                io::stderr(),
                "error[E0013]: {}: `{key}` does not fit the schema: {problem}",
                name(Path::new(path))
            );
            code = 1;
        }
    }
    // The samples go under the input key: with --samples it counts as written.
    let lint_db = match (&example_db, &samples) {
        (Some(db), Some(options)) => {
            let mut db = db.clone();
            if let Some(map) = db.as_map_mut() {
                map.entry(options.input_key.clone()).or_insert(Value::Nil);
            }
            Some(db)
        }
        _ => example_db.clone(),
    };
    let limits = RenderLimits::default().with_max_diagnostics(max_diagnostics()?);
    // Included files whose problems were shown: a part used by several
    // trees has its own problems reported once.
    let mut shown_includes: HashSet<String> = HashSet::new();
    // A reader that goes away (`| head`) does not hide a later file's errors:
    // every file is still checked and the worst status kept.
    let mut out = ClosableOut::new(out, true);
    let out = &mut out;
    for file in &args.paths {
        let path = Path::new(file);
        let text = match read_file(path) {
            Ok(text) => text,
            Err(Failure::Input { what, why }) => {
                let _ = writeln!(
                    io::stderr(),
                    "aido: {}: {}",
                    super::escaped_lines(&what),
                    super::escaped_lines(&why)
                );
                code = 2;
                continue;
            }
            Err(other) => return Err(other),
        };
        // The text moves into the tree's source: a big file is not held twice.
        let source = Arc::new(Source::new(name(path), text));
        let loader = super::load::loader(path)?;
        match compile_with_form(source, &registry, &loader) {
            Ok(tree) => {
                let n = tree.len();
                writeln!(
                    out,
                    "ok: {} ({n} node{})",
                    name(path),
                    if n == 1 { "" } else { "s" }
                )?;
                out.flush()?;
                // Warnings share the diagnostics' limit: a generated tree
                // of 100,000 such nodes gets 50 lines and a count, not 17 MB.
                let mut warnings = tree.warnings().len();
                if let Some(files) = tree.files().filter(|_| !tree.warnings().is_empty()) {
                    let found = Diagnostics::new(tree.warnings().to_vec(), files.clone());
                    let _ = write!(io::stderr(), "{}", found.render_with(&limits));
                }
                let unnamed = state_without_id(&tree);
                warnings += unnamed.len();
                for &node in unnamed.iter().take(limits.max_diagnostics) {
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
                if let Some(more) = unnamed.len().checked_sub(limits.max_diagnostics)
                    && more > 0
                {
                    let _ = writeln!(
                        io::stderr(),
                        "warning: {}: {more} more node{} keep{} state without an :id \
                         (AIDO_MAX_DIAGNOSTICS shows more)",
                        name(path),
                        if more == 1 { "" } else { "s" },
                        if more == 1 { "s" } else { "" },
                    );
                }
                let lints = lint_with_schema(&tree, lint_db.as_ref(), registry.db_schema());
                if !lints.is_empty() {
                    let errors = lints.items.iter().filter(|d| !d.code.is_warning()).count();
                    warnings += lints.len() - errors;
                    if errors > 0 {
                        code = code.max(1);
                    }
                    let _ = write!(io::stderr(), "{}", lints.render_with(&limits));
                }
                if let Some(options) = &samples {
                    let db = example_db.clone().unwrap_or_else(Value::map);
                    let report = check_samples(&tree, &db, options);
                    out.flush()?;
                    let errors = report.has_errors();
                    warnings += report
                        .problems
                        .iter()
                        .filter(|p| p.kind.is_warning())
                        .count();
                    for problem in report.problems.iter().take(limits.max_diagnostics) {
                        let line = super::escaped_lines(&problem.to_string());
                        let _ = writeln!(io::stderr(), "{line}");
                    }
                    if let Some(more) = report.problems.len().checked_sub(limits.max_diagnostics)
                        && more > 0
                    {
                        let _ = writeln!(
                            io::stderr(),
                            "error: {}: {more} more sample problem{} (AIDO_MAX_DIAGNOSTICS \
                             shows more)",
                            name(path),
                            if more == 1 { "" } else { "s" },
                        );
                    }
                    writeln!(
                        out,
                        "samples: {}: {} of {} passed",
                        name(path),
                        report.passed,
                        report.checked
                    )?;
                    if errors {
                        code = code.max(1);
                    }
                }
                if deny_warnings && warnings > 0 {
                    code = code.max(1);
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

#[cfg(test)]
mod tests {
    use super::*;

    fn source(text: &str) -> Arc<Source> {
        Arc::new(Source::new("t.edn", text))
    }

    #[test]
    fn a_checked_tree_is_compiled_with_its_data() {
        let (registry, loader) = (Registry::new(), aido::compile::FsLoader::for_file("t.edn"));
        let text = "[:sequence {:id :main} [:wait {:ticks 1}] [:inc! {:key :n}]]";
        let tree = compile_with_form(source(text), &registry, &loader).unwrap();
        // Made by the compile, not read again when the check asks for it.
        assert!(tree.form.is_made());
        assert_eq!(state_without_id(&tree).len(), 1);
        // A text that does not read: the compile from text's one diagnostic.
        let text = "[:sequence [:inc! {:key :n}]";
        let failed = compile_with_form(source(text), &registry, &loader).unwrap_err();
        let from_text = compile_source_with(source(text), &registry, &loader).unwrap_err();
        assert_eq!(failed.render(), from_text.render());
        assert_eq!(failed.items.len(), 1);
        assert_eq!(failed.items[0].code, aido::diag::Code::Read);
    }
}
