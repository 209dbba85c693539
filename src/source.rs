//! Source text, byte spans and their line/column form.

use std::fmt;

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

/// The spans of one form and, for a collection, of its elements: a vector's
/// elements in order, or a map's keys and values interleaved (`k0 v0 k1 v1 ..`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Spans {
    /// The span of the whole form.
    pub span: Span,
    /// The spans of the elements.
    pub children: Vec<Spans>,
}

impl Spans {
    /// The spans of element `i`, if known.
    pub fn child(&self, i: usize) -> Option<&Spans> {
        self.children.get(i)
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
    line_starts: Vec<usize>,
}

impl Source {
    /// A source called `name` (usually its path) holding `text`.
    pub fn new(name: impl Into<String>, text: impl Into<String>) -> Source {
        let text = text.into();
        let line_starts = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        Source {
            name: name.into(),
            text,
            line_starts,
        }
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
            .partition_point(|&s| s <= offset)
            .saturating_sub(1);
        let start = self.line_starts.get(line_idx).copied().unwrap_or(0);
        let column = self
            .text
            .get(start..offset)
            .map_or(offset - start, |s| s.chars().count())
            + 1;
        LineCol {
            line: line_idx + 1,
            column,
        }
    }

    /// The text of line `line` (from 1), without its line break.
    pub fn line_text(&self, line: usize) -> &str {
        let Some(&start) = self.line_starts.get(line.wrapping_sub(1)) else {
            return "";
        };
        let end = self
            .line_starts
            .get(line)
            .map_or(self.text.len(), |&next| next - 1);
        self.text
            .get(start..end)
            .unwrap_or("")
            .trim_end_matches('\r')
    }
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
}
