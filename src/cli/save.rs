//! Saving a db atomically and safely: the file at the target path is either
//! the old one or the complete new one, never half-written, and only what
//! reads back equal is written.
//!
//! - The text is read back and compared with the db before anything is
//!   written: a db that would not survive the trip (a value nested deeper
//!   than the reader's limit, a JSON key that would not read back as the same
//!   key, NaN in JSON, ...) is refused with the path of the first value that
//!   would change.
//! - The temporary file is created exclusively (`create_new`, which never
//!   follows a link planted at its name) under an unpredictable name in the
//!   target's directory, with the target's permissions, then renamed over it.
//! - A symlink at the target is written through: the file it points to is
//!   replaced, the link stays.
//! - Temporary files left by a run that was killed (their process is gone)
//!   are removed the next time that target is saved.

use std::ffi::OsString;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use aido::{Value, value::JsonMapping};

use super::Failure;
use super::load::{io_reason, is_json, json_mapping, name};

/// The part of a temporary file's name after the target's name.
const TEMP_MARK: &str = ".aido-tmp-";

/// Writes `db` to `path`: pretty JSON if it ends in `.json` (the tagged,
/// lossless mapping for `.tagged.json`), else EDN.
pub(crate) fn save_db(path: &Path, db: &Value) -> Result<(), Failure> {
    let text = encode(path, db)?;
    let target = resolve_target(path)
        .map_err(|e| Failure::input(name(path), format!("cannot save: {}", io_reason(&e))))?;
    write_atomically(&target, text.as_bytes())
        .map_err(|e| Failure::input(name(path), format!("cannot save: {}", io_reason(&e))))
}

/// The text to write for `db` at `path`, checked to read back equal.
fn encode(path: &Path, db: &Value) -> Result<String, Failure> {
    let refuse = |why: String| Failure::input(name(path), format!("cannot save: {why}"));
    if let Some(depth) = db.depth_beyond(aido::read::MAX_DEPTH) {
        return Err(refuse(format!(
            "the db nests more than {} deep ({depth} levels or more), which no reader reads back",
            aido::read::MAX_DEPTH
        )));
    }
    let mut text = match json_mapping(path) {
        Some(mapping) => {
            let json = db
                .to_json_with(mapping)
                .map_err(|e| refuse(format!("{e}; save it as .edn, or as .tagged.json")))?;
            serde_json::to_string_pretty(&json)
                .map_err(|e| refuse(format!("cannot write the db as JSON: {e}")))?
        }
        None => db.to_string(),
    };
    // What aido writes, aido must read: check it before writing.
    let back = if is_json(path) {
        let mapping = json_mapping(path).unwrap_or(JsonMapping::Plain);
        Value::from_json_text(&text, mapping).map_err(|e| e.to_string())
    } else {
        aido::read_value(&text).map_err(|e| e.to_string())
    };
    match back {
        Ok(back) => {
            if let Some(at) = db.first_difference(&back) {
                return Err(refuse(format!(
                    "the value at {at} would not read back the same; save it as .edn{}",
                    if is_json(path) {
                        ", or as .tagged.json"
                    } else {
                        ""
                    }
                )));
            }
        }
        Err(e) => return Err(refuse(format!("the text would not read back: {e}"))),
    }
    text.push('\n');
    Ok(text)
}

/// Checks before the first tick that `path` can be saved to, so that a run
/// does not do all its work and then fail: its directory exists and takes a
/// new file, and it is none of the `inputs` (a tree, a db, ...), which a
/// save would overwrite.
pub(crate) fn check_target(path: &Path, inputs: &[&Path]) -> Result<(), Failure> {
    let fail = |why: String| Failure::input(name(path), format!("cannot save: {why}"));
    let target = resolve_target(path).map_err(|e| fail(io_reason(&e)))?;
    if let Ok(meta) = fs::metadata(&target)
        && meta.is_dir()
    {
        return Err(fail("is a directory".to_owned()));
    }
    for input in inputs {
        if same_file(&target, input) {
            return Err(fail(format!(
                "it is the input file {}: saving would overwrite it",
                name(input)
            )));
        }
    }
    check_writable(&target).map_err(|e| fail(io_reason(&e)))?;
    // Create and remove a temporary file: the one sure test of writability.
    let (file, tmp) = create_temp(&target).map_err(|e| fail(io_reason(&e)))?;
    drop(file);
    let _ = fs::remove_file(tmp);
    Ok(())
}

/// Whether `a` and `b` name the same existing file.
fn same_file(a: &Path, b: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        match (fs::metadata(a), fs::metadata(b)) {
            (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
            _ => false,
        }
    }
    #[cfg(not(unix))]
    match (fs::canonicalize(a), fs::canonicalize(b)) {
        (Ok(x), Ok(y)) => x == y,
        _ => false,
    }
}

/// The file a save replaces: the target itself, or, if it is a symlink, the
/// file the link points to (followed to the end), so that the link stays.
fn resolve_target(path: &Path) -> io::Result<PathBuf> {
    let mut target = path.to_path_buf();
    for _ in 0..40 {
        match fs::symlink_metadata(&target) {
            Ok(meta) if meta.file_type().is_symlink() => {
                let link = fs::read_link(&target)?;
                target = match target.parent() {
                    Some(dir) => dir.join(link),
                    None => link,
                };
            }
            _ => return Ok(target),
        }
    }
    Err(io::Error::other("too many levels of symbolic links"))
}

/// Whether `a` and `b` name the same file to write, existing or not (links
/// followed, folders compared by their canonical paths).
pub(crate) fn same_target(a: &Path, b: &Path) -> bool {
    let place = |path: &Path| -> Option<(PathBuf, OsString)> {
        let target = resolve_target(path).ok()?;
        let dir = match target.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        Some((fs::canonicalize(dir).ok()?, target.file_name()?.to_owned()))
    };
    match (place(a), place(b)) {
        (Some(x), Some(y)) => x == y,
        _ => false,
    }
}

/// Refuses to replace a file the user may not write, as `cp` does: one
/// without any write permission bit (even for a user who could override
/// it), or one this process cannot open for writing.
fn check_writable(path: &Path) -> io::Result<()> {
    let Ok(meta) = fs::metadata(path) else {
        return Ok(());
    };
    if meta.permissions().readonly() {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            "the file is read-only",
        ));
    }
    // Opened without truncating: nothing in it changes.
    OpenOptions::new().write(true).open(path).map(drop)
}

/// Writes `bytes` to a new temporary file next to `path`, syncs it and
/// renames it over `path`. On failure the temporary file is removed. A
/// file at `path` the user may not write is refused ([`check_writable`]).
/// Every file the CLI writes (saves, pages, golden timelines) goes through
/// here.
pub(crate) fn write_atomically(path: &Path, bytes: &[u8]) -> io::Result<()> {
    check_writable(path)?;
    remove_stale_temps(path);
    let (mut file, tmp) = create_temp(path)?;
    let result = (|| {
        // Keep the permissions of the file being replaced (a private 0600
        // save stays private); a new file gets the usual ones. The file was
        // created 0600 and nothing is written before this, so no one else
        // can have opened it to read what follows.
        match fs::metadata(path) {
            Ok(meta) => file.set_permissions(meta.permissions())?,
            Err(_) => set_default_permissions(&file)?,
        }
        file.write_all(bytes)?;
        file.flush()?;
        file.sync_all()?;
        drop(file);
        fs::rename(&tmp, path)
    })();
    match result {
        Ok(()) => {
            sync_parent(path);
            Ok(())
        }
        Err(e) => {
            let _ = fs::remove_file(&tmp);
            Err(e)
        }
    }
}

/// Gives a new file the permissions `File::create` would have: 0666 less
/// the process's umask (read from `/proc/self/status` on Linux; 022 where
/// it cannot be read).
fn set_default_permissions(file: &File) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let umask = fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|status| {
                let line = status.lines().find(|l| l.starts_with("Umask:"))?;
                u32::from_str_radix(line.split_whitespace().nth(1)?, 8).ok()
            })
            .unwrap_or(0o022);
        file.set_permissions(fs::Permissions::from_mode(0o666 & !umask))
    }
    #[cfg(not(unix))]
    {
        let _ = file;
        Ok(())
    }
}

/// Creates `<target>.aido-tmp-<pid>-<random>` exclusively: `create_new`
/// fails rather than open anything already at that name, a symlink included.
fn create_temp(path: &Path) -> io::Result<(File, PathBuf)> {
    let Some(file_name) = path.file_name() else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a file name",
        ));
    };
    let mut last = None;
    for _ in 0..16 {
        let mut tmp_name = OsString::from(file_name);
        tmp_name.push(format!(
            "{TEMP_MARK}{}-{:016x}",
            std::process::id(),
            unpredictable()
        ));
        let tmp = path.with_file_name(tmp_name);
        let mut options = OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        match options.open(&tmp) {
            Ok(file) => return Ok((file, tmp)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| io::Error::other("no free temporary name")))
}

/// 64 bits that another user cannot guess: the standard library's hasher
/// keys, drawn from the operating system's entropy.
fn unpredictable() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    std::hash::RandomState::new().build_hasher().finish()
}

/// Removes temporary files of `path` whose process no longer runs (a save
/// that was killed). Only files this tool names so, owned by this user, are
/// touched.
pub(crate) fn remove_stale_temps(path: &Path) {
    let (Some(file_name), Some(dir)) = (path.file_name(), path.parent()) else {
        return;
    };
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    let Some(prefix) = file_name.to_str().map(|f| format!("{f}{TEMP_MARK}")) else {
        return;
    };
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let entry_name = entry.file_name();
        let Some(rest) = entry_name.to_str().and_then(|n| n.strip_prefix(&prefix)) else {
            continue;
        };
        let Some(pid) = rest.split('-').next().and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        if pid != std::process::id() && !process_alive(pid) && owned_regular_file(&entry.path()) {
            let _ = fs::remove_file(entry.path());
        }
    }
}

#[cfg(target_os = "linux")]
fn process_alive(pid: u32) -> bool {
    Path::new("/proc").join(pid.to_string()).exists()
}

#[cfg(not(target_os = "linux"))]
fn process_alive(_pid: u32) -> bool {
    // Without a cheap way to tell, assume it runs: never remove its file.
    true
}

/// A regular file (not a link) owned by this process's user.
fn owned_regular_file(path: &Path) -> bool {
    let Ok(meta) = fs::symlink_metadata(path) else {
        return false;
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let me = fs::metadata("/proc/self").map(|m| m.uid()).ok();
        meta.file_type().is_file() && me == Some(meta.uid())
    }
    #[cfg(not(unix))]
    meta.file_type().is_file()
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

/// Standard output that may close early (`aido run ... | head -1`). With a
/// save pending, the run must go on to save: a closed pipe then swallows the
/// rest of the output instead of stopping the command.
pub(crate) struct ClosableOut<'a> {
    inner: &'a mut dyn Write,
    keep_going: bool,
    closed: bool,
}

impl<'a> ClosableOut<'a> {
    /// Wraps `inner`; with `keep_going`, a broken pipe is absorbed.
    pub(crate) fn new(inner: &'a mut dyn Write, keep_going: bool) -> ClosableOut<'a> {
        ClosableOut {
            inner,
            keep_going,
            closed: false,
        }
    }

    fn absorb(&mut self, result: io::Result<()>) -> io::Result<()> {
        match result {
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe && self.keep_going => {
                self.closed = true;
                Ok(())
            }
            other => other,
        }
    }
}

impl Write for ClosableOut<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.closed {
            return Ok(buf.len());
        }
        let result = self.inner.write_all(buf);
        self.absorb(result).map(|()| buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        if self.closed {
            return Ok(());
        }
        let result = self.inner.flush();
        self.absorb(result)
    }
}
