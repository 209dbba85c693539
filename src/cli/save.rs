//! Saving a db atomically: the file at the target path is either the old one
//! or the complete new one, never half-written.

use std::ffi::OsString;
use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use aido::Value;

use super::Failure;
use super::load::{io_reason, is_json, name};

/// Writes `db` to `path`: pretty JSON if it ends in `.json`, else EDN.
pub(crate) fn save_db(path: &Path, db: &Value) -> Result<(), Failure> {
    let mut text = if is_json(path) {
        serde_json::to_string_pretty(db)
            .map_err(|e| Failure::input(name(path), format!("cannot write the db as JSON: {e}")))?
    } else {
        db.to_string()
    };
    text.push('\n');
    write_atomically(path, text.as_bytes())
        .map_err(|e| Failure::input(name(path), format!("cannot save: {}", io_reason(&e))))
}

/// Writes `bytes` to `OUT.tmp-<pid>` next to `path`, syncs it and renames it
/// over `path`. On failure the temporary file is removed.
pub(crate) fn write_atomically(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let tmp = temp_path(path)?;
    let result = write_synced(&tmp, bytes).and_then(|()| std::fs::rename(&tmp, path));
    match result {
        Ok(()) => {
            sync_parent(path);
            Ok(())
        }
        Err(e) => {
            // The file may never have been created; either way it must not stay.
            let _ = std::fs::remove_file(&tmp);
            Err(e)
        }
    }
}

fn temp_path(path: &Path) -> io::Result<PathBuf> {
    let Some(file_name) = path.file_name() else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a file name",
        ));
    };
    let mut tmp_name = OsString::from(file_name);
    tmp_name.push(format!(".tmp-{}", std::process::id()));
    Ok(path.with_file_name(tmp_name))
}

fn write_synced(tmp: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut file = File::create(tmp)?;
    file.write_all(bytes)?;
    file.flush()?;
    file.sync_all()
}

/// Makes the rename itself durable where the platform allows it; the save
/// has already succeeded, so a failure here is not reported.
fn sync_parent(path: &Path) {
    #[cfg(unix)]
    {
        let parent = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        if let Ok(dir) = File::open(parent) {
            let _ = dir.sync_all();
        }
    }
    #[cfg(not(unix))]
    let _ = path;
}
