//! Where included files come from: the `Loader` seam, the file system's
//! loader (relative paths that never leave the compiled file's directory)
//! and the refusal of includes where there is no loader.

use std::path::{Component, Path, PathBuf};

/// Where included files come from: the file system ([`FsLoader`]) or
/// anything a host keeps trees in (a database, an asset pack).
///
/// ```
/// use std::collections::HashMap;
/// use aido::compile::{LoadError, Loader, compile_source_with};
/// use aido::{Registry, source::Source};
///
/// struct Pack(HashMap<&'static str, &'static str>);
/// impl Loader for Pack {
///     fn resolve(&self, _from: &str, path: &str) -> Result<String, LoadError> {
///         Ok(path.to_owned())
///     }
///     fn load(&self, name: &str) -> Result<String, LoadError> {
///         self.0.get(name).map(|t| t.to_string()).ok_or(LoadError::NotFound)
///     }
/// }
/// let pack = Pack(HashMap::from([(
///     "inc.edn",
///     "[:inc! {:aido/params {:k {:type :key-path}} :key [:aido/arg :k]}]",
/// )]));
/// let main = Source::new("main.edn", r#"[:include {:file "inc.edn" :args {:k :n}}]"#);
/// let tree = compile_source_with(std::sync::Arc::new(main), &Registry::new(), &pack).unwrap();
/// assert_eq!(tree.len(), 1);
/// ```
pub trait Loader {
    /// The name of the file that `path`, as written in an `:include` of
    /// the file named `from`, refers to. Names tell files apart (a cycle,
    /// one report per file) and are what diagnostics show.
    fn resolve(&self, from: &str, path: &str) -> Result<String, LoadError>;

    /// The text of the file `name` (a name [`Loader::resolve`] returned).
    fn load(&self, name: &str) -> Result<String, LoadError>;
}

/// Why a [`Loader`] could not give a file.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum LoadError {
    /// There is no such file.
    NotFound,
    /// The path is refused (see [`FsLoader`]), for the reason given.
    Refused(&'static str),
    /// The file is larger than the loader's limit, in bytes.
    TooLarge(u64),
    /// The file cannot be read; the reason.
    Unreadable(String),
    /// Compiling from text or data does no I/O: there is no loader.
    NoLoader,
}

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LoadError::NotFound => f.write_str("no such file"),
            LoadError::Refused(why) => f.write_str(why),
            LoadError::TooLarge(limit) => write!(f, "larger than the input limit of {limit} bytes"),
            LoadError::Unreadable(why) => f.write_str(why),
            LoadError::NoLoader => f.write_str(
                "a tree compiled from text or data has no loader for includes \
                 (use compile_file, or a *_with function and a Loader)",
            ),
        }
    }
}

/// The loader of trees compiled from text or data: it refuses every include.
pub(crate) struct NoLoader;

impl Loader for NoLoader {
    fn resolve(&self, _from: &str, _path: &str) -> Result<String, LoadError> {
        Err(LoadError::NoLoader)
    }
    fn load(&self, _name: &str) -> Result<String, LoadError> {
        Err(LoadError::NoLoader)
    }
}

/// Loads included files from the file system, relative to the including
/// file, and never outside the directory of the file compiled: an absolute
/// path is refused, and so is a path whose `..` leaves that directory
/// (`..` that stays inside it is fine). Paths are resolved by their text,
/// not by following links. Each file is read with the input limit.
#[derive(Debug, Clone)]
pub struct FsLoader {
    root: PathBuf,
    max_bytes: u64,
}

impl FsLoader {
    /// The default input limit: 64 MiB, as the command line's.
    pub const DEFAULT_MAX_BYTES: u64 = 64 << 20;

    /// A loader for the includes of the tree file at `path`.
    pub fn for_file(path: impl AsRef<Path>) -> FsLoader {
        let root = normalise(path.as_ref().parent().unwrap_or(Path::new("")));
        FsLoader {
            root,
            max_bytes: FsLoader::DEFAULT_MAX_BYTES,
        }
    }

    /// The same loader with another input limit, in bytes.
    pub fn with_max_bytes(mut self, max_bytes: u64) -> FsLoader {
        self.max_bytes = max_bytes;
        self
    }
}

impl Loader for FsLoader {
    fn resolve(&self, from: &str, path: &str) -> Result<String, LoadError> {
        let written = Path::new(path);
        if path.is_empty() {
            return Err(LoadError::Refused("the path is empty"));
        }
        if written.has_root()
            || written
                .components()
                .any(|c| matches!(c, Component::Prefix(_) | Component::RootDir))
        {
            return Err(LoadError::Refused(
                "an absolute path is refused: write the path relative to the including file",
            ));
        }
        let dir = Path::new(from).parent().unwrap_or(Path::new(""));
        let full = normalise(&dir.join(written));
        if !full.starts_with(&self.root) || escapes(&full) {
            return Err(LoadError::Refused(
                "the path leaves the directory of the tree being compiled",
            ));
        }
        Ok(full.display().to_string())
    }

    fn load(&self, name: &str) -> Result<String, LoadError> {
        use crate::source::FileError;
        crate::source::read_file(Path::new(name), self.max_bytes).map_err(|e| match e {
            FileError::Io(e) if e.kind() == std::io::ErrorKind::NotFound => LoadError::NotFound,
            FileError::TooLarge { limit } => LoadError::TooLarge(limit),
            other => LoadError::Unreadable(other.to_string()),
        })
    }
}

/// `path` with `.` dropped and `..` taking back a name where it can (by the
/// text alone); a `..` left over stays at the start.
fn normalise(path: &Path) -> PathBuf {
    let mut out: Vec<Component<'_>> = Vec::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => match out.last() {
                Some(Component::Normal(_)) => {
                    out.pop();
                }
                _ => out.push(c),
            },
            other => out.push(other),
        }
    }
    out.iter().collect()
}

/// Whether a normalised path still climbs out with `..`.
fn escapes(path: &Path) -> bool {
    path.components().any(|c| c == Component::ParentDir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_stay_inside_the_compiled_files_directory() {
        let loader = FsLoader::for_file("trees/main.edn");
        assert_eq!(
            loader.resolve("trees/main.edn", "flee.edn").as_deref(),
            Ok("trees/flee.edn")
        );
        assert_eq!(
            loader.resolve("trees/sub/a.edn", "../b.edn").as_deref(),
            Ok("trees/b.edn")
        );
        for path in ["../x.edn", "/etc/passwd", "", "a/../../x.edn"] {
            assert!(
                matches!(
                    loader.resolve("trees/main.edn", path),
                    Err(LoadError::Refused(_))
                ),
                "{path}"
            );
        }
    }
}
