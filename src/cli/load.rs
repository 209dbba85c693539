//! Reading the files a command names: trees, dbs and inputs. Every problem
//! becomes a [`Failure::Input`] naming the file (and the line and column,
//! when the text is malformed).

use std::io;
use std::path::Path;
use std::sync::Arc;

use aido::{
    Tree, Value,
    compile::{FsLoader, compile_document_with},
    read::Document,
    source::{FileError, Source, Span, Spans},
    value::JsonMapping,
};

use super::Failure;

/// An EDN file read with the spans of its forms.
pub(crate) struct EdnFile {
    /// The form the file holds.
    pub(crate) value: Value,
    /// The spans of that form and its parts.
    pub(crate) spans: Spans,
    /// The file's path and text, to turn spans into lines and columns.
    pub(crate) source: Source,
}

impl EdnFile {
    /// `path:line:column` of the start of `span`.
    pub(crate) fn place(&self, span: Span) -> String {
        format!(
            "{}:{}",
            self.source.name(),
            self.source.line_col(span.start)
        )
    }
}

/// The path as shown in messages.
pub(crate) fn name(path: &Path) -> String {
    path.display().to_string()
}

/// The default of the largest input file read, in bytes (64 MiB).
pub(crate) const DEFAULT_MAX_INPUT_BYTES: u64 = 64 << 20;

/// The largest input file read, in bytes: `AIDO_MAX_INPUT_BYTES` if set to
/// a positive integer, else [`DEFAULT_MAX_INPUT_BYTES`].
pub(crate) fn max_input_bytes() -> Result<u64, Failure> {
    match std::env::var("AIDO_MAX_INPUT_BYTES") {
        Err(_) => Ok(DEFAULT_MAX_INPUT_BYTES),
        Ok(text) => text
            .trim()
            .parse::<u64>()
            .ok()
            .filter(|&n| n > 0)
            .ok_or_else(|| {
                Failure::input(
                    "AIDO_MAX_INPUT_BYTES",
                    format!("expected a positive integer, got `{text}`"),
                )
            }),
    }
}

/// Reads `path` as UTF-8 text, refusing a file larger than
/// [`max_input_bytes`] (a device such as `/dev/zero` included) as soon as
/// that many bytes were read: the library's one file reader.
pub(crate) fn read_file(path: &Path) -> Result<String, Failure> {
    let limit = max_input_bytes()?;
    aido::source::read_file(path, limit).map_err(|e| file_failure(path, &e))
}

/// A file that cannot be read, as a failure naming it.
pub(crate) fn file_failure(path: &Path, e: &FileError) -> Failure {
    let why = match e {
        FileError::TooLarge { .. } => {
            format!("{e} (set AIDO_MAX_INPUT_BYTES to raise it)")
        }
        _ => e.to_string(),
    };
    Failure::input(name(path), why)
}

/// An I/O error as a short lower-case reason, without the OS error number.
pub(crate) fn io_reason(e: &io::Error) -> String {
    aido::source::io_reason(e)
}

/// Reads the single EDN form in the file at `path`.
pub(crate) fn read_edn(path: &Path) -> Result<EdnFile, Failure> {
    let text = read_file(path)?;
    match aido::read::read_text(&text) {
        Ok((value, spans)) => Ok(EdnFile {
            value,
            spans,
            source: Source::new(name(path), text),
        }),
        Err(e) => {
            let at = Source::new(name(path), text).line_col(e.span.start);
            Err(Failure::input(
                format!("{}:{at}", name(path)),
                e.to_string(),
            ))
        }
    }
}

/// Reads the tree file at `path` into a document that keeps its source, so
/// that compile errors and tick errors can point into it.
pub(crate) fn read_tree(path: &Path) -> Result<Document, Failure> {
    let text = read_file(path)?;
    let source = Arc::new(Source::new(name(path), text));
    aido::read(source.clone()).map_err(|e| {
        let at = source.line_col(e.span.start);
        Failure::input(format!("{}:{at}", name(path)), e.to_string())
    })
}

/// Reads and compiles the tree file at `path` against the command's registry.
pub(crate) fn compile_tree(path: &Path) -> Result<Tree, Failure> {
    let doc = read_tree(path)?;
    compile_document_with(doc, &super::registry(), &loader(path)?)
        .map_err(|diags| Failure::Compile(diags.render()))
}

/// The loader of the files the tree file at `path` includes: relative to
/// it, with the input limit.
pub(crate) fn loader(path: &Path) -> Result<FsLoader, Failure> {
    Ok(FsLoader::for_file(path).with_max_bytes(max_input_bytes()?))
}

/// The db file at `path` if one is given (see [`read_db`]), else an empty map.
pub(crate) fn read_db_or_empty(path: Option<&Path>) -> Result<Value, Failure> {
    match path {
        Some(path) => read_db(path),
        None => Ok(Value::map()),
    }
}

/// Reads a db: JSON if `path` ends in `.json`, EDN otherwise. It must be a map.
pub(crate) fn read_db(path: &Path) -> Result<Value, Failure> {
    let db = if is_json(path) {
        read_json(path)?
    } else {
        read_edn(path)?.value
    };
    if db.as_map().is_none() {
        return Err(Failure::input(
            name(path),
            format!("the db must be a map, found {}", a_type(&db)),
        ));
    }
    Ok(db)
}

/// Whether `path` names a JSON file, by its extension.
pub(crate) fn is_json(path: &Path) -> bool {
    json_mapping(path).is_some()
}

/// The JSON mapping of a db file, by its name ([`JsonMapping::for_path`]).
pub(crate) fn json_mapping(path: &Path) -> Option<JsonMapping> {
    JsonMapping::for_path(path)
}

/// Reads the JSON file at `path` with the library's JSON mapping (see
/// [`json_mapping`]); a duplicate key, an integer beyond 64 bits and a
/// byte-order mark are reported with their position.
pub(crate) fn read_json(path: &Path) -> Result<Value, Failure> {
    let text = read_file(path)?;
    let mapping = json_mapping(path).unwrap_or(JsonMapping::Plain);
    Value::from_json_text(&text, mapping).map_err(|e| {
        let what = match e.location {
            Some((line, column)) => format!("{}:{line}:{column}", name(path)),
            None => name(path),
        };
        Failure::input(what, e.to_string())
    })
}

/// The value's type with an article: `a map`, `an integer`, `nil`.
pub(crate) fn a_type(value: &Value) -> &'static str {
    value.type_with_article()
}
