//! `aido test [PATH...]`: run every `*.test.edn` scenario, compare with
//! expectations and golden timelines, report coverage.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use aido::{
    Registry, Tree,
    scenario::{Coverage, Scenario, ScenarioErrorKind, ScenarioOptions, golden_diff},
    source::FileError,
    stub::Stubs,
};

use super::Failure;
use super::args::TestArgs;
use super::load::{io_reason, name, read_edn, read_file, read_tree};

/// How one scenario went.
enum Outcome {
    Passed,
    Failed,
    /// Unreadable or malformed.
    Broken,
}

pub(crate) fn main(args: &TestArgs, out: &mut dyn Write) -> Result<i32, Failure> {
    super::use_model(args.nodes.as_deref())?;
    let registry = super::registry();
    let accept = args.accept;
    let options = ScenarioOptions::default()
        .allow_outside(args.allow_outside)
        .max_file_bytes(super::load::max_input_bytes()?);
    let roots: Vec<PathBuf> = if args.paths.is_empty() {
        vec![PathBuf::from(".")]
    } else {
        args.paths.iter().map(PathBuf::from).collect()
    };
    let mut files = Vec::new();
    for root in &roots {
        find_scenarios(root, &mut files)?;
    }
    if files.is_empty() {
        let roots: Vec<String> = roots.iter().map(|r| name(r)).collect();
        return Err(Failure::input(
            roots.join(" "),
            "no scenario files (*.test.edn) found",
        ));
    }

    let mut coverage = Coverage::new();
    let (mut passed, mut failed, mut broken) = (0, 0, 0);
    for file in &files {
        match run_one(file, &registry, &options, accept, &mut coverage, out)? {
            Outcome::Passed => passed += 1,
            Outcome::Failed => failed += 1,
            Outcome::Broken => broken += 1,
        }
    }
    writeln!(out, "{passed} passed, {} failed", failed + broken)?;
    if args.coverage {
        write!(out, "{}", coverage.report())?;
    }
    Ok(if broken > 0 {
        2
    } else if failed > 0 {
        1
    } else {
        0
    })
}

/// Runs one scenario and prints its line (and reasons).
fn run_one(
    file: &Path,
    registry: &Registry,
    options: &ScenarioOptions,
    accept: bool,
    coverage: &mut Coverage,
    out: &mut dyn Write,
) -> Result<Outcome, Failure> {
    let shown = name(file);
    let scenario = match Scenario::load_with(file, registry, options) {
        Ok(scenario) => scenario,
        Err(e) if e.kind == ScenarioErrorKind::Compile => {
            writeln!(out, "FAILED {shown}")?;
            writeln!(out, "  {e}:")?;
            if let Some(d) = &e.diagnostics {
                for line in d.render().lines() {
                    writeln!(out, "    {line}")?;
                }
            }
            return Ok(Outcome::Failed);
        }
        Err(e) => {
            writeln!(out, "FAILED {shown}")?;
            out.flush()?;
            let line = format!("aido: {}: {}", e.place, e.message);
            let _ = writeln!(io::stderr(), "{}", super::escaped_lines(&line));
            return Ok(Outcome::Broken);
        }
    };
    let run = scenario.run();
    if let Some(why) = &run.stopped {
        writeln!(out, "FAILED {shown}")?;
        out.flush()?;
        let line = format!("aido: {shown}: {why}");
        let _ = writeln!(io::stderr(), "{}", super::escaped_lines(&line));
        return Ok(Outcome::Broken);
    }
    coverage.add(&scenario.tree_name, &run.record);

    let mut mismatches = run.check(&scenario.expect);
    let mut notes = Vec::new();
    // `--accept` writes a conversation's replies as they came.
    if accept && run.turn_mismatch.is_some() {
        let text = aido::source::read_file(file, options.max_file_bytes)
            .map_err(|e| Failure::input(shown.clone(), e.to_string()))?;
        if let Some(new) = aido::scenario::accept_replies(&text, &run.replies) {
            write_file(file, &new)?;
            notes.push(format!("updated the replies in {shown}"));
            mismatches.retain(|m| !matches!(m, aido::scenario::Mismatch::Turn(_)));
        }
    }
    let mut reasons: Vec<String> = mismatches.iter().map(ToString::to_string).collect();
    if let Some(golden) = &scenario.golden {
        // What a killed `--accept` left is removed whether or not this run writes.
        super::save::remove_stale_temps(golden);
        // A golden file checked out with CRLF line ends compares as LF.
        match aido::source::read_file(golden, options.max_file_bytes)
            .map(|t| t.replace("\r\n", "\n"))
        {
            Ok(text) if text == run.timeline => {}
            Ok(_) if accept => {
                write_file(golden, &run.timeline)?;
                notes.push(format!("updated {}", name(golden)));
            }
            Ok(text) => {
                if let Some(diff) = golden_diff(&text, &run.timeline) {
                    reasons.push(format!("{}: {}", name(golden), diff.to_string().trim_end()));
                }
            }
            Err(FileError::Io(e)) if e.kind() == io::ErrorKind::NotFound => {
                if accept {
                    write_file(golden, &run.timeline)?;
                    notes.push(format!("wrote {}", name(golden)));
                } else if !scenario.checks_something() {
                    reasons.push(format!(
                        "no :expect and no golden timeline {}: this scenario cannot fail; add \
                         :expect, or write the golden file with `aido test --accept`",
                        name(golden)
                    ));
                }
            }
            Err(e) => {
                writeln!(out, "FAILED {shown}")?;
                out.flush()?;
                let line = format!("aido: {}: {e}", name(golden));
                let _ = writeln!(io::stderr(), "{}", super::escaped_lines(&line));
                return Ok(Outcome::Broken);
            }
        }
    } else if !scenario.checks_something() {
        reasons.push("no :expect and no golden timeline: this scenario cannot fail".to_owned());
    }

    let passed = reasons.is_empty();
    writeln!(out, "{} {shown}", if passed { "ok" } else { "FAILED" })?;
    for reason in reasons {
        for (i, line) in reason.lines().enumerate() {
            let indent = if i == 0 { "  " } else { "    " };
            writeln!(out, "{indent}{line}")?;
        }
    }
    for note in notes {
        writeln!(out, "  {note}")?;
    }
    Ok(if passed {
        Outcome::Passed
    } else {
        Outcome::Failed
    })
}

/// Collects the scenario files under `root`, in name order.
fn find_scenarios(root: &Path, files: &mut Vec<PathBuf>) -> Result<(), Failure> {
    let meta = std::fs::metadata(root).map_err(|e| Failure::input(name(root), io_reason(&e)))?;
    if meta.is_file() {
        files.push(root.to_path_buf());
        return Ok(());
    }
    let entries = std::fs::read_dir(root).map_err(|e| Failure::input(name(root), io_reason(&e)))?;
    let mut paths: Vec<PathBuf> = entries.filter_map(Result::ok).map(|e| e.path()).collect();
    paths.sort();
    for path in paths {
        let file_name = path
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default();
        // Links to folders are not followed: a loop of them would never end.
        let is_dir = std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir());
        if is_dir {
            if !file_name.starts_with('.') && file_name != "target" {
                find_scenarios(&path, files)?;
            }
        } else if file_name.ends_with(".test.edn") {
            // A path under "." prints without its "./".
            files.push(
                path.strip_prefix(".")
                    .map(Path::to_path_buf)
                    .unwrap_or(path),
            );
        }
    }
    Ok(())
}

/// Writes a golden file through the one atomic, exclusive writer of saves
/// and pages (an unpredictable temporary name created exclusively, stale
/// temporary files of killed runs removed, a read-only file refused).
fn write_file(path: &Path, text: &str) -> Result<(), Failure> {
    super::save::write_atomically(path, text.as_bytes())
        .map_err(|e| Failure::input(name(path), format!("cannot save: {}", io_reason(&e))))
}

/// Stubs read from a file for `aido run --stubs`, with the file's text to
/// point into.
pub(crate) struct StubsFile {
    /// The stubs.
    pub(crate) stubs: Stubs,
    file: super::load::EdnFile,
}

/// Reads a stubs file for `aido run --stubs`.
pub(crate) fn read_stubs(path: &Path) -> Result<StubsFile, Failure> {
    let file = read_edn(path)?;
    let stubs = Stubs::from_value_with_spans(&file.value, Some(&file.spans)).map_err(|e| {
        let place = e.span.map_or_else(|| name(path), |s| file.place(s));
        Failure::input(place, e.message)
    })?;
    Ok(StubsFile { stubs, file })
}

/// Reads and compiles the tree at `path` with the stubs in place.
pub(crate) fn compile_stubbed(path: &Path, stubs: &StubsFile) -> Result<Tree, Failure> {
    let doc = read_tree(path)?;
    stubs
        .stubs
        .compile_document_with(doc, &super::registry(), &super::load::loader(path)?)
        .map_err(|e| match e {
            aido::stub::StubbedCompileError::Compile(d) => Failure::Compile(d.render()),
            aido::stub::StubbedCompileError::Stub(e) => {
                let place = e.span.map_or_else(
                    || stubs.file.source.name().to_owned(),
                    |s| stubs.file.place(s),
                );
                Failure::input(place, e.message)
            }
            _ => Failure::input(name(path), e.to_string()),
        })
}

/// Reads and compiles the tree at `path` (a reload) with the stubs that
/// name something in it in place.
pub(crate) fn compile_restubbed(path: &Path, stubs: &StubsFile) -> Result<Tree, Failure> {
    let doc = read_tree(path)?;
    let registry = stubs.stubs.registry_for(&doc.value, &super::registry());
    let tree = aido::compile::compile_document(doc, &registry)
        .map_err(|d| Failure::Compile(d.render()))?;
    Ok(stubs.stubs.apply_matching(tree))
}

/// Reads a node model file and declares it in `registry`.
pub(crate) fn declare_model(registry: &mut Registry, path: &Path) -> Result<(), Failure> {
    let text = read_file(path)?;
    registry
        .declare_model_text(&name(path), &text)
        .map_err(|errors| {
            let first = errors.errors.first();
            let place = match first.and_then(|e| errors.line_col(e)) {
                Some(at) => format!("{}:{at}", name(path)),
                None => name(path),
            };
            // One line a problem: the first is the failure, the others follow it.
            let why: Vec<String> = errors
                .errors
                .iter()
                .enumerate()
                .map(|(i, e)| match (i, errors.line_col(e)) {
                    (0, _) => e.message.clone(),
                    (_, Some(at)) => format!("\naido: {}:{at}: {}", name(path), e.message),
                    (_, None) => format!("\naido: {}: {}", name(path), e.message),
                })
                .collect();
            Failure::input(place, why.concat())
        })?;
    Ok(())
}
