//! Source text, byte spans and their line/column form.

use std::fmt;
use std::sync::Arc;

/// A byte range in a [`Source`]; line and column are worked out only when rendering.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Span {
    /// First byte.
    pub start: u32,
    /// One past the last byte.
    pub end: u32,
}

impl Span {
    /// A span from byte offsets (saturating at `u32::MAX`).
    pub fn new(start: usize, end: usize) -> Span {
        let clamp = |x: usize| u32::try_from(x).unwrap_or(u32::MAX);
        Span {
            start: clamp(start),
            end: clamp(end.max(start)),
        }
    }
}

/// The spans of a form and of every form inside it, kept in one table.
///
/// A form's elements are a vector's, list's or set's elements in order, a
/// map's keys and values interleaved (`k0 v0 k1 v1 ..`), or a tagged value's
/// one value. A form inside the whole form is named by its path: the index of
/// the element at each level, so `[]` is the whole form and `[1, 0]` is the
/// first element of its second element.
///
/// ```
/// use aido::{source::Span, read::read_text};
///
/// let (_, spans) = read_text("[:a {:k 1}]").unwrap();
/// assert_eq!(spans.span(), Span::new(0, 11));
/// // The map is the second element; its elements are its key and value.
/// assert_eq!(spans.span_at(&[1]), Some(Span::new(4, 10)));
/// assert_eq!(spans.n_children_at(&[1]), Some(2));
/// assert_eq!(spans.span_at(&[1, 1]), Some(Span::new(8, 9)));
/// assert_eq!(spans.span_at(&[2]), None);
/// ```
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Spans {
    /// One entry per form. The elements of a collection are consecutive
    /// entries, placed before the collection's own; the whole form comes last.
    pub(crate) entries: Vec<SpanEntry>,
    /// How many vectors headed by a keyword the reader kept outside maps
    /// (node-shaped forms: at least the nodes of a tree, a few more in a
    /// text with such vectors in lists or sets), so that the compiler sizes
    /// its tables without a walk of its own; 0 where unknown.
    pub(crate) node_forms: usize,
}

/// One form in [`Spans`]: its span and where its elements' entries are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SpanEntry {
    pub(crate) span: Span,
    /// The index of the first element's entry.
    pub(crate) first_child: u32,
    /// How many elements the form has.
    pub(crate) n_children: u32,
}

impl SpanEntry {
    /// A form without elements.
    #[inline(always)]
    pub(crate) fn leaf(span: Span) -> SpanEntry {
        SpanEntry {
            span,
            first_child: 0,
            n_children: 0,
        }
    }
}

impl Spans {
    /// The span of the whole form (empty if there is none).
    pub fn span(&self) -> Span {
        self.root().span()
    }

    /// The span of the form at `path` (see [`Spans`]), if there is one.
    pub fn span_at(&self, path: &[usize]) -> Option<Span> {
        self.form_at(path).map(FormSpans::span)
    }

    /// How many elements the form at `path` has (none for a form that is
    /// not a collection), if there is a form at `path`.
    pub fn n_children_at(&self, path: &[usize]) -> Option<usize> {
        self.form_at(path).map(FormSpans::n_children)
    }

    /// A view of the whole form.
    pub(crate) fn root(&self) -> FormSpans<'_> {
        FormSpans {
            spans: self,
            at: self.entries.len().wrapping_sub(1),
        }
    }

    fn form_at(&self, path: &[usize]) -> Option<FormSpans<'_>> {
        let root = self.root();
        root.entry()?;
        path.iter().try_fold(root, |form, &i| form.child(i))
    }
}

impl fmt::Debug for Spans {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.root().fmt(f)
    }
}

/// The spans of one form in [`Spans`] and of its elements: a borrowed view,
/// cheap to copy, which the compiler carries down the tree.
#[derive(Clone, Copy)]
pub(crate) struct FormSpans<'a> {
    spans: &'a Spans,
    /// The form's entry.
    at: usize,
}

impl<'a> FormSpans<'a> {
    fn entry(self) -> Option<&'a SpanEntry> {
        self.spans.entries.get(self.at)
    }

    /// The span of the form.
    pub(crate) fn span(self) -> Span {
        self.entry().map(|e| e.span).unwrap_or_default()
    }

    /// How many node-shaped forms the reader counted (see
    /// [`Spans::node_forms`]) if this is the whole form it read and it
    /// counted them.
    pub(crate) fn node_forms(self) -> Option<usize> {
        let whole = self.at.wrapping_add(1) == self.spans.entries.len();
        (whole && self.spans.node_forms > 0).then_some(self.spans.node_forms)
    }

    /// How many elements the form has.
    pub(crate) fn n_children(self) -> usize {
        self.entry().map_or(0, |e| e.n_children as usize)
    }

    /// The spans of element `i`, if the form has one.
    #[inline]
    pub(crate) fn child(self, i: usize) -> Option<FormSpans<'a>> {
        let entry = self.entry()?;
        (i < entry.n_children as usize).then_some(FormSpans {
            spans: self.spans,
            at: entry.first_child as usize + i,
        })
    }
}

impl fmt::Debug for FormSpans<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = f.debug_struct("Spans");
        out.field("span", &self.span());
        if self.n_children() > 0 {
            out.field("children", &Elements(*self));
        }
        out.finish()
    }
}

/// A form's elements, printed as a list.
struct Elements<'a>(FormSpans<'a>);

impl fmt::Debug for Elements<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let form = self.0;
        f.debug_list()
            .entries((0..form.n_children()).filter_map(|i| form.child(i)))
            .finish()
    }
}

/// A line and a column, both counted from 1; the column counts characters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineCol {
    /// Line, from 1.
    pub line: usize,
    /// Column in characters, from 1.
    pub column: usize,
}

impl fmt::Display for LineCol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.column)
    }
}

/// A named text, such as a tree file, with its line starts indexed.
#[derive(Debug, Clone)]
pub struct Source {
    name: String,
    text: String,
    /// Where each line starts (a span's offsets are `u32`s too).
    line_starts: Vec<u32>,
    /// How many characters start before each multiple of [`CHUNK`] bytes;
    /// empty for a text that is all ASCII, where a character is a byte.
    chars_before_chunk: Vec<u32>,
}

/// The stride of [`Source`]'s character index: a column is counted from
/// the nearest multiple of it, not from the line's start, so working out
/// the columns of every node on one long line is linear, not quadratic.
const CHUNK: usize = 1024;

/// How many characters start in `bytes` (UTF-8 bytes that are not
/// continuation bytes), whether or not `bytes` begins or ends at a
/// character's boundary.
fn chars_starting_in(bytes: &[u8]) -> usize {
    bytes.iter().filter(|&&b| (b as i8) >= -0x40).count()
}

impl Source {
    /// A source called `name` (usually its path) holding `text`.
    pub fn new(name: impl Into<String>, text: impl Into<String>) -> Source {
        let text = text.into();
        // `memchr` finds the line breaks many bytes at a time (SIMD).
        let line_starts = std::iter::once(0)
            .chain(
                memchr::memchr_iter(b'\n', text.as_bytes())
                    .map(|i| u32::try_from(i + 1).unwrap_or(u32::MAX)),
            )
            .collect();
        let chars_before_chunk = if text.is_ascii() {
            Vec::new()
        } else {
            let mut before = 0;
            text.as_bytes()
                .chunks(CHUNK)
                .map(|chunk| {
                    let at = u32::try_from(before).unwrap_or(u32::MAX);
                    before += chars_starting_in(chunk);
                    at
                })
                .collect()
        };
        Source {
            name: name.into(),
            text,
            line_starts,
            chars_before_chunk,
        }
    }

    /// How many characters start before byte `offset` (at most the text's
    /// length): at most [`CHUNK`] bytes are looked at.
    fn chars_before(&self, offset: usize) -> usize {
        if self.chars_before_chunk.is_empty() {
            return offset;
        }
        let chunk = offset / CHUNK;
        let before = self
            .chars_before_chunk
            .get(chunk)
            .map_or(0, |&c| c as usize);
        let from = chunk * CHUNK;
        before
            + self
                .text
                .as_bytes()
                .get(from..offset)
                .map_or(0, chars_starting_in)
    }

    /// The name given at construction.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The whole text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The line and column of byte `offset`.
    pub fn line_col(&self, offset: u32) -> LineCol {
        let offset = (offset as usize).min(self.text.len());
        let line_idx = self
            .line_starts
            .partition_point(|&s| s as usize <= offset)
            .saturating_sub(1);
        let start = self.line_starts.get(line_idx).map_or(0, |&s| s as usize);
        let column = self.chars_before(offset) - self.chars_before(start) + 1;
        LineCol {
            line: line_idx + 1,
            column,
        }
    }

    /// The text of line `line` (from 1), without its line break.
    pub fn line_text(&self, line: usize) -> &str {
        let Some(start) = self
            .line_starts
            .get(line.wrapping_sub(1))
            .map(|&s| s as usize)
        else {
            return "";
        };
        let end = self
            .line_starts
            .get(line)
            .map_or(self.text.len(), |&next| next as usize - 1);
        self.text
            .get(start..end)
            .unwrap_or("")
            .trim_end_matches('\r')
    }
}

/// Which file of a [`SourceMap`] a form came from: an index into the map,
/// `FileId(0)` being the file that was compiled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FileId(pub u32);

/// A span in one file of a [`SourceMap`]: the file and the byte range in
/// that file's own text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileSpan {
    /// The file.
    pub file: FileId,
    /// The bytes, counted from the start of that file's text.
    pub span: Span,
}

/// The files a tree was compiled from: the file compiled and every file it
/// includes, directly or not.
///
/// The spans of a tree compiled from several files live in one space of
/// offsets: each file occupies its own range, starting at its base (the
/// compiled file at 0, so a tree of one file has spans that are plain byte
/// offsets into its text). [`SourceMap::locate`] turns such a span back into
/// a file and a span in that file's text.
#[derive(Debug, Clone, Default)]
pub struct SourceMap {
    files: Vec<MappedFile>,
}

#[derive(Debug, Clone)]
struct MappedFile {
    base: u32,
    source: Arc<Source>,
    /// The span (in the map's space) of the `:include` that first brought
    /// this file in; `None` for the compiled file.
    included_from: Option<Span>,
}

impl SourceMap {
    /// A map of one file, at base 0.
    pub fn single(source: Arc<Source>) -> SourceMap {
        SourceMap {
            files: vec![MappedFile {
                base: 0,
                source,
                included_from: None,
            }],
        }
    }

    /// Adds `source`, included at `included_from`, after the files already
    /// there; its id, or `None` if the space of `u32` offsets is used up.
    pub(crate) fn add(
        &mut self,
        source: Arc<Source>,
        included_from: Option<Span>,
    ) -> Option<FileId> {
        let base = match self.files.last() {
            // One byte of gap: a span at the end of one file is not the
            // start of the next.
            Some(last) => {
                let len = u32::try_from(last.source.text().len()).ok()?;
                last.base.checked_add(len)?.checked_add(1)?
            }
            None => 0,
        };
        u32::try_from(source.text().len()).ok()?.checked_add(base)?;
        let id = FileId(u32::try_from(self.files.len()).ok()?);
        self.files.push(MappedFile {
            base,
            source,
            included_from,
        });
        Some(id)
    }

    /// The id of the file named `name`, if the map has it.
    pub fn find(&self, name: &str) -> Option<FileId> {
        self.files
            .iter()
            .position(|f| f.source.name() == name)
            .and_then(|i| u32::try_from(i).ok())
            .map(FileId)
    }

    /// How many files.
    pub fn len(&self) -> usize {
        self.files.len()
    }

    /// Whether the map has no file.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// The files, the compiled one first, then in the order they were
    /// first included.
    pub fn sources(&self) -> impl Iterator<Item = &Arc<Source>> {
        self.files.iter().map(|f| &f.source)
    }

    /// The file `id`.
    pub fn source(&self, id: FileId) -> Option<&Arc<Source>> {
        self.files.get(id.0 as usize).map(|f| &f.source)
    }

    /// Where the file `id` was first included (a span in the map's space).
    pub fn included_from(&self, id: FileId) -> Option<Span> {
        self.files.get(id.0 as usize)?.included_from
    }

    /// Where file `id` starts in the map's space.
    pub(crate) fn base(&self, id: FileId) -> u32 {
        self.files.get(id.0 as usize).map_or(0, |f| f.base)
    }

    /// The file a span of the map's space is in, and the span in that file.
    pub fn locate(&self, span: Span) -> Option<FileSpan> {
        let i = self
            .files
            .partition_point(|f| f.base <= span.start)
            .checked_sub(1)?;
        let base = self.files.get(i)?.base;
        Some(FileSpan {
            file: FileId(u32::try_from(i).ok()?),
            span: Span {
                start: span.start - base,
                end: span.end.saturating_sub(base).max(span.start - base),
            },
        })
    }

    /// `FILE:LINE:COLUMN` of the start of `span` (a span of the map's space).
    pub fn place(&self, span: Span) -> Option<String> {
        let at = self.locate(span)?;
        let source = self.source(at.file)?;
        Some(format!(
            "{}:{}",
            source.name(),
            source.line_col(at.span.start)
        ))
    }

    /// The chain of includes that brought in the file of `span`, innermost
    /// first: `FILE:LINE:COLUMN` of each `:include`.
    pub fn include_chain(&self, span: Span) -> Vec<String> {
        let mut chain = Vec::new();
        let mut at = self.locate(span).map(|s| s.file);
        while let Some(file) = at {
            // Each file was included from one added before it, so this ends.
            let Some(from) = self.included_from(file) else {
                break;
            };
            chain.extend(self.place(from));
            at = self.locate(from).map(|s| s.file).filter(|f| f.0 < file.0);
        }
        chain
    }
}

/// `text` as shown to a person: control characters (a terminal's escape
/// sequences, a NUL) escaped as `\u{1b}`, tabs kept, and cut after
/// `max_chars` characters (ending in `...` when cut). Every message that
/// quotes user text goes through here, so no file's raw content reaches a
/// terminal or a log beyond a short, inert excerpt.
///
/// ```
/// assert_eq!(aido::source::excerpt("a\u{1b}c", 10), "a\\u{1b}c");
/// assert_eq!(aido::source::excerpt("abcdef", 3), "abc...");
/// ```
pub fn excerpt(text: &str, max_chars: usize) -> String {
    let mut out = String::new();
    for (n, c) in text.chars().enumerate() {
        if n >= max_chars {
            out.push_str("...");
            break;
        }
        push_escaped(&mut out, c);
    }
    out
}

/// Pushes `c`, or its escape if it is a control character (a tab is
/// kept); returns how many characters were pushed.
pub(crate) fn push_escaped(out: &mut String, c: char) -> usize {
    if c.is_control() && c != '\t' {
        let escaped = format!("\\u{{{:x}}}", c as u32);
        out.push_str(&escaped);
        escaped.chars().count()
    } else {
        out.push(c);
        1
    }
}

/// The largest file [`read_file`] reads by default, in bytes (64 MiB).
pub const DEFAULT_MAX_FILE_BYTES: u64 = 64 << 20;

/// Why [`read_file`] could not read a file as text.
#[derive(Debug)]
#[non_exhaustive]
pub enum FileError {
    /// The file cannot be opened or read.
    Io(std::io::Error),
    /// The path names a folder.
    IsADirectory,
    /// The file holds more than the limit (a device such as `/dev/zero`
    /// included: it is noticed once that many bytes were read).
    TooLarge {
        /// The limit, in bytes.
        limit: u64,
    },
    /// The file is not UTF-8 text.
    NotUtf8 {
        /// The byte offset of the first invalid byte.
        at: usize,
    },
}

impl fmt::Display for FileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FileError::Io(e) => f.write_str(&io_reason(e)),
            FileError::IsADirectory => f.write_str("is a directory"),
            FileError::TooLarge { limit } => {
                write!(f, "larger than the input limit of {limit} bytes")
            }
            FileError::NotUtf8 { at } => write!(f, "not valid UTF-8 text (at byte {at})"),
        }
    }
}

impl std::error::Error for FileError {}

/// An I/O error as a short lower-case reason, without the OS error number.
pub fn io_reason(e: &std::io::Error) -> String {
    use std::io::ErrorKind as E;
    match e.kind() {
        E::NotFound => "no such file or directory".to_owned(),
        E::PermissionDenied if e.get_ref().is_some() => e.to_string(),
        E::PermissionDenied => "permission denied".to_owned(),
        E::IsADirectory => "is a directory".to_owned(),
        E::NotADirectory => "a parent of it is not a directory".to_owned(),
        E::InvalidData => "not valid UTF-8 text".to_owned(),
        E::StorageFull => "no space left on the device".to_owned(),
        _ => {
            let text = e.to_string();
            match text.rfind(" (os error ") {
                Some(at) => text[..at].to_owned(),
                None => text,
            }
        }
    }
}

/// Reads the file at `path` as UTF-8 text, refusing one larger than
/// `max_bytes` as soon as that many bytes were read: the one file reader
/// of the library and the command-line tool (scenarios and every file they
/// name, trees, dbs, models, stubs, trims, golden timelines).
pub fn read_file(path: &std::path::Path, max_bytes: u64) -> Result<String, FileError> {
    use std::io::Read;
    let file = std::fs::File::open(path).map_err(FileError::Io)?;
    let meta = file.metadata().map_err(FileError::Io)?;
    if meta.is_dir() {
        return Err(FileError::IsADirectory);
    }
    if meta.len() > max_bytes {
        return Err(FileError::TooLarge { limit: max_bytes });
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    file.take(max_bytes.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(FileError::Io)?;
    if bytes.len() as u64 > max_bytes {
        return Err(FileError::TooLarge { limit: max_bytes });
    }
    String::from_utf8(bytes).map_err(|e| FileError::NotUtf8 {
        at: e.utf8_error().valid_up_to(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_and_column_count_from_one_in_characters() {
        let src = Source::new("t.edn", "[:a\n  :ä :b]");
        assert_eq!(src.line_col(0), LineCol { line: 1, column: 1 });
        assert_eq!(src.line_col(6), LineCol { line: 2, column: 3 });
        // ':b' starts after the two-byte 'ä'.
        assert_eq!(src.line_col(10), LineCol { line: 2, column: 6 });
        assert_eq!(src.line_text(2), "  :ä :b]");
        assert_eq!(src.line_text(9), "");
    }

    #[test]
    fn columns_on_a_long_line_count_characters_across_chunks() {
        // Two-byte and three-byte characters straddle the chunk boundaries.
        let line: String = (0..3000).map(|i| ['a', 'é', '€'][i % 3]).collect();
        let text = format!("x\n{line}\n");
        let src = Source::new("t", text.clone());
        for (chars, (offset, _)) in text[2..].char_indices().enumerate().step_by(97) {
            let at = src.line_col((offset + 2) as u32);
            assert_eq!(
                at,
                LineCol {
                    line: 2,
                    column: chars + 1
                }
            );
        }
        let end = src.line_col(text.len() as u32 - 1);
        assert_eq!(
            end,
            LineCol {
                line: 2,
                column: 3001
            }
        );
    }
}
