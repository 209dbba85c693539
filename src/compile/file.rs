//! Compiling a tree straight from its file.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::diag::Diagnostics;
use crate::registry::Registry;
use crate::source::{FileError, Source};
use crate::tree::Tree;

/// Why [`compile_file`] failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum CompileFileError {
    /// The file cannot be read (or is not UTF-8).
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        error: io::Error,
    },
    /// The text is malformed or the tree has problems; the diagnostics
    /// point into the file.
    Compile(Diagnostics),
}

impl fmt::Display for CompileFileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CompileFileError::Io { path, error } => write!(f, "{}: {error}", path.display()),
            CompileFileError::Compile(d) => f.write_str(&d.render()),
        }
    }
}

impl std::error::Error for CompileFileError {}

/// Reads the tree file at `path` (at most
/// [`crate::source::DEFAULT_MAX_FILE_BYTES`]) and compiles it against
/// `registry`; the tree keeps its source, so that errors in ticks point
/// into the file. The files its `:include`s name are read relative to it
/// ([`FsLoader`]).
///
/// [`FsLoader`]: super::FsLoader
///
/// ```
/// use aido::{Registry, compile_file};
///
/// let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/npc.edn");
/// let tree = compile_file(&path, &Registry::new()).unwrap();
/// assert!(tree.len() > 1);
/// ```
pub fn compile_file(path: impl AsRef<Path>, registry: &Registry) -> Result<Tree, CompileFileError> {
    let path = path.as_ref();
    // The one limited reader: a device or a huge file is refused at the limit.
    let text =
        crate::source::read_file(path, crate::source::DEFAULT_MAX_FILE_BYTES).map_err(|e| {
            let error = match e {
                FileError::Io(error) => error,
                FileError::IsADirectory => io::Error::new(io::ErrorKind::IsADirectory, e),
                FileError::TooLarge { .. } => io::Error::new(io::ErrorKind::FileTooLarge, e),
                other => io::Error::new(io::ErrorKind::InvalidData, other),
            };
            CompileFileError::Io {
                path: path.to_path_buf(),
                error,
            }
        })?;
    let source = Arc::new(Source::new(path.display().to_string(), text));
    // A read error is a diagnostic too, as with `compile_source_with`.
    let loader = super::FsLoader::for_file(path);
    super::compile_source_with(source, registry, &loader).map_err(CompileFileError::Compile)
}
