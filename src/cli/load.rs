//! Reading the files a command names: trees, dbs and inputs. Every problem
//! becomes a [`Failure::Input`] naming the file (and the line and column,
//! when the text is malformed).

use std::io;
use std::path::Path;
use std::sync::Arc;

use aido::{Document, Source, Span, Spans, Tree, Value, compile_document};

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

/// Reads `path` as UTF-8 text.
pub(crate) fn read_file(path: &Path) -> Result<String, Failure> {
    std::fs::read_to_string(path).map_err(|e| Failure::input(name(path), io_reason(&e)))
}

/// An I/O error as a short lower-case reason, without the OS error number.
pub(crate) fn io_reason(e: &io::Error) -> String {
    match e.kind() {
        io::ErrorKind::NotFound => "no such file or directory".to_owned(),
        io::ErrorKind::PermissionDenied => "permission denied".to_owned(),
        io::ErrorKind::IsADirectory => "is a directory".to_owned(),
        io::ErrorKind::NotADirectory => "a parent of it is not a directory".to_owned(),
        io::ErrorKind::InvalidData => "not valid UTF-8 text".to_owned(),
        io::ErrorKind::StorageFull => "no space left on the device".to_owned(),
        _ => {
            let text = e.to_string();
            match text.rfind(" (os error ") {
                Some(at) => text[..at].to_owned(),
                None => text,
            }
        }
    }
}

/// Reads the single EDN form in the file at `path`.
pub(crate) fn read_edn(path: &Path) -> Result<EdnFile, Failure> {
    let text = read_file(path)?;
    match aido::read_text(&text) {
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
    compile_document(&doc, &super::registry()).map_err(|diags| Failure::Compile(diags.render()))
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
    path.extension()
        .is_some_and(|ext| ext.eq_ignore_ascii_case("json"))
}

/// Reads the JSON file at `path` with the library's JSON mapping. It is
/// deserialised straight into a [`Value`] (the same mapping as
/// [`Value::from_json`]) so that a duplicate key is reported with its position.
fn read_json(path: &Path) -> Result<Value, Failure> {
    let text = read_file(path)?;
    serde_json::from_str::<Value>(&text).map_err(|e| {
        let message = e.to_string();
        let suffix = format!(" at line {} column {}", e.line(), e.column());
        let message = message.strip_suffix(&suffix).unwrap_or(&message);
        Failure::input(
            format!("{}:{}:{}", name(path), e.line(), e.column().max(1)),
            message,
        )
    })
}

/// The value's type with an article: `a map`, `an integer`, `nil`.
pub(crate) fn a_type(value: &Value) -> &'static str {
    value.type_with_article()
}
