//! Forms: collections, tags, discards and the one-form-per-text rule.
//!
//! A recursive descent over the bytes, bounded by [`MAX_DEPTH`]. Every form
//! read is pushed onto one stack of values (and one of span entries) shared
//! by all collections; at its closing delimiter a collection moves its
//! elements' values off the stack into a vector of exactly the right size,
//! appends their span entries to the document's one table of spans, then
//! pushes itself. That is one allocation per vector (a map's value needs
//! three), none per leaf and none for spans beyond the table's growth, and
//! no large results passed back up the recursion.

use crate::value::Entry;

use super::atom::{self, char_at, token_end};
use super::forms::{Item, NodeEntry, NodeForms, NodeOptions, TreeForm};
use super::names::NameCache;
use super::{Delimiter, MAX_DEPTH, ReadError, ReadErrorKind, Unsupported};
use crate::source::{Span, SpanEntry, Spans};
use crate::value::{FastBuildHasher, Keyword, Map, Set, Symbol, Value};

/// How many keys a map may have for the reader to check them for
/// duplicates by comparing each with those before it; a larger map is
/// checked by looking each key up as it is inserted.
const SCAN_KEYS: usize = 16;

/// Unused span entries (16 bytes each) a read may leave in its table.
const SPANS_SLACK: usize = 4096;

/// Reads the one form in `text`.
pub(super) fn read_one(text: &str) -> Result<(Value, Spans), ReadError> {
    let (form, spans) = read_whole(text, false)?;
    match form {
        TreeForm::Value(value) => Ok((value, spans)),
        // (Not met: the nodes' mode is off.)
        TreeForm::Nodes(_) => Err(ReadError::new(ReadErrorKind::Empty, 0, text.len())),
    }
}

/// Reads the one form in `text` as a tree (see [`NodeForms`]): its node
/// vectors recorded as nodes, every other form read as a value.
pub(super) fn read_nodes(text: &str) -> Result<(TreeForm, Spans), ReadError> {
    read_whole(text, true)
}

/// Reads the one form in `text`, its node vectors as nodes if `nodes`.
#[inline(always)]
fn read_whole(text: &str, nodes: bool) -> Result<(TreeForm, Spans), ReadError> {
    let mut reader = Reader {
        text,
        bytes: text.as_bytes(),
        pos: 0,
        values: Vec::new(),
        pending: Vec::new(),
        // Trees have a form every 4 to 9 bytes (a generated one every 4.3,
        // the examples every 5.5 to 9): room for one every 4 saves the table
        // its regrowth, a copy of the whole table at twice its size; what is
        // left over is given back at the end.
        table: Vec::with_capacity(text.len() / 4),
        keywords: NameCache::new(),
        symbols: NameCache::new(),
        in_maps: 0,
        node_forms: 0,
        node_items: Vec::new(),
        options: Vec::new(),
        forms: NodeForms::default(),
    };
    if nodes {
        // A node takes 28 bytes of the generated tree's text and more of
        // the examples': room for one every 24 bytes, for two items (its
        // head and its place among its parent's children) and two option
        // pairs, saves the tables their regrowth.
        reader.forms.nodes.reserve(text.len() / 24);
        reader.forms.items.reserve(text.len() / 12);
        reader.forms.pairs.reserve(text.len() / 12);
    }
    if text.starts_with('\u{feff}') {
        return Err(ReadError::new(ReadErrorKind::ByteOrderMark, 0, 3));
    }
    reader.skip_ignored(0).map_err(|e| *e)?;
    match reader.peek() {
        None => {
            return Err(ReadError {
                kind: ReadErrorKind::Empty,
                span: Span::new(0, text.len()),
            });
        }
        Some(b @ (b')' | b']' | b'}')) => return Err(reader.unmatched(b)),
        Some(_) => {}
    }
    let form = if nodes && reader.peek() == Some(b'[') {
        reader.read_node(0).map_err(|e| *e)?;
        reader.values.pop();
        reader
            .node_items
            .pop()
            .map(|_| TreeForm::Nodes(NodeForms::default()))
    } else {
        reader.read_form(0).map_err(|e| *e)?;
        reader.values.pop().map(TreeForm::Value)
    };
    let (Some(mut form), Some(root)) = (form, reader.pending.pop()) else {
        return Err(ReadError::new(ReadErrorKind::Empty, 0, text.len()));
    };
    // Discarded forms may follow the form, but nothing else.
    reader.skip_ignored(0).map_err(|e| *e)?;
    match reader.peek() {
        None => {
            let mut entries = reader.table;
            entries.push(root);
            // The table grew by doubling: give a big document's slack back.
            if entries.capacity() - entries.len() > SPANS_SLACK {
                entries.shrink_to_fit();
            }
            if let TreeForm::Nodes(forms) = &mut form {
                *forms = std::mem::take(&mut reader.forms);
            }
            Ok((
                form,
                Spans {
                    entries,
                    node_forms: reader.node_forms,
                },
            ))
        }
        Some(b @ (b')' | b']' | b'}')) => Err(reader.unmatched(b)),
        Some(_) => {
            let start = reader.pos;
            // A control character cannot start any form: it is junk after
            // the form, not a second one.
            if let Some(c) = text[start..].chars().next().filter(|c| c.is_control()) {
                return Err(ReadError::new(
                    ReadErrorKind::UnexpectedAfterForm(c),
                    start,
                    start + c.len_utf8(),
                ));
            }
            let end = match reader.read_form(0) {
                Ok(_) => reader.pos,
                Err(_) => start + reader.char_len(start),
            };
            Err(ReadError {
                kind: ReadErrorKind::TrailingForm,
                span: Span::new(start, end),
            })
        }
    }
}

/// Whether a byte starts a form for certain: not blank, not a comment, not
/// `#` (which may start a discard), not a closing delimiter and ASCII.
const STARTS_FORM: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 128 {
        table[b] = !matches!(
            b as u8,
            b' ' | b'\n'
                | b'\t'
                | b'\r'
                | b','
                | b'\x0b'
                | b'\x0c'
                | b';'
                | b'#'
                | b')'
                | b']'
                | b'}'
        );
        b += 1;
    }
    table
};

/// Whether a byte starts a collection, a tagged form or a discard: what
/// [`Reader::read_form`] reads rather than [`Reader::read_leaf`].
const STARTS_COLLECTION: [bool; 256] = {
    let mut table = [false; 256];
    table[b'[' as usize] = true;
    table[b'(' as usize] = true;
    table[b'{' as usize] = true;
    table[b'#' as usize] = true;
    table
};

struct Reader<'t> {
    text: &'t str,
    bytes: &'t [u8],
    /// The offset of the next byte to read, always on a character boundary.
    pos: usize,
    /// The forms read and not yet placed in their collection, innermost last.
    values: Vec<Value>,
    /// Their span entries, in step with `values`.
    pending: Vec<SpanEntry>,
    /// The span entries of the elements of the collections read so far.
    table: Vec<SpanEntry>,
    /// The keywords and symbols read so far, to intern each name once.
    keywords: NameCache<Keyword>,
    symbols: NameCache<Symbol>,
    /// How many maps the form being read is inside.
    in_maps: u32,
    /// How many vectors headed by a keyword were kept outside maps (see
    /// [`Spans`]' `node_forms`).
    node_forms: usize,
    /// In the nodes' mode: the elements of the nodes being read and not
    /// yet placed in the table, innermost last (in step with their span
    /// entries in `pending`, but for an options map's).
    node_items: Vec<Item>,
    /// The options maps of the nodes being read, innermost last.
    options: Vec<NodeOptions>,
    /// The nodes finished so far.
    forms: NodeForms,
}

/// Cuts `values` to `len` without dropping what is cut: nils left by
/// taking each value out, which own nothing (a `truncate` would call
/// `Value`'s drop on each).
#[inline(always)]
fn forget_tail(values: &mut Vec<Value>, len: usize) {
    while values.len() > len {
        std::mem::forget(values.pop());
    }
}

/// What the reader's steps return: nothing, or an error in a box, so that
/// the result fits in a register and testing it is one comparison (a
/// `ReadError` returned whole goes through memory).
type Step = Result<(), Box<ReadError>>;

/// A step's error, boxed out of line: errors are off the path.
#[cold]
#[inline(never)]
fn fail<T>(error: ReadError) -> Result<T, Box<ReadError>> {
    Err(Box::new(error))
}

#[inline(always)]
fn leaf(start: usize, end: usize) -> SpanEntry {
    SpanEntry::leaf(Span::new(start, end))
}

impl Reader<'_> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn char_len(&self, at: usize) -> usize {
        char_at(self.text, at).map_or(0, char::len_utf8)
    }

    /// An error at the closing delimiter `b` at `pos` that closes nothing.
    fn unmatched(&self, b: u8) -> ReadError {
        ReadError::new(
            ReadErrorKind::Unmatched(char::from(b)),
            self.pos,
            self.pos + 1,
        )
    }

    /// Skips whitespace, commas and comments.
    #[inline]
    fn skip_blank(&mut self) {
        // Spaces and newlines are nearly all there is between forms.
        while let Some(b) = self.peek() {
            match b {
                b' ' | b'\n' => self.pos += 1,
                b'\t' | b'\r' | b',' | b'\x0b' | b'\x0c' | b';' | 0x80.. => {
                    return self.skip_blank_slowly();
                }
                _ => return,
            }
        }
    }

    fn skip_blank_slowly(&mut self) {
        while let Some(b) = self.peek() {
            match b {
                b' ' | b'\n' | b'\t' | b'\r' | b',' | b'\x0b' | b'\x0c' => self.pos += 1,
                // A comment ends at a line break, `\r` included, as in Clojure.
                b';' => {
                    self.pos = self
                        .bytes
                        .get(self.pos..)
                        .and_then(|rest| rest.iter().position(|&b| b == b'\n' || b == b'\r'))
                        .map_or(self.bytes.len(), |n| self.pos + n);
                }
                0x80.. => match char_at(self.text, self.pos) {
                    Some(c) if c.is_whitespace() => self.pos += c.len_utf8(),
                    _ => return,
                },
                _ => return,
            }
        }
    }

    fn at_discard(&self) -> bool {
        self.peek() == Some(b'#') && self.bytes.get(self.pos + 1) == Some(&b'_')
    }

    /// Skips blanks and discarded forms (`#_ form`), leaving `pos` at the
    /// next form, at a closing delimiter or at the end.
    #[inline]
    fn skip_ignored(&mut self, depth: usize) -> Step {
        self.skip_blank();
        if self.at_discard() {
            self.skip_discards(depth)
        } else {
            Ok(())
        }
    }

    fn skip_discards(&mut self, depth: usize) -> Step {
        // `#_ #_ a b` discards both `a` and `b`: count the discards waiting
        // for a form rather than recursing, so a long run of them is no risk.
        let mut n_pending = 0usize;
        let mut last_discard = 0;
        loop {
            self.skip_blank();
            match self.peek() {
                Some(b'#') if self.at_discard() => {
                    n_pending += 1;
                    last_discard = self.pos;
                    self.pos += 2;
                }
                _ if n_pending == 0 => return Ok(()),
                None | Some(b')' | b']' | b'}') => {
                    return fail(ReadError::new(
                        ReadErrorKind::DiscardWithoutForm,
                        last_discard,
                        last_discard + 2,
                    ));
                }
                Some(_) => {
                    // The discarded form's elements leave the table too,
                    // and its node-shaped forms the count.
                    let table_len = self.table.len();
                    let node_forms = self.node_forms;
                    self.read_form(depth)?;
                    self.values.pop();
                    self.pending.pop();
                    self.table.truncate(table_len);
                    self.node_forms = node_forms;
                    n_pending -= 1;
                }
            }
        }
    }

    #[inline(always)]
    fn push(&mut self, value: Value, entry: SpanEntry) {
        self.values.push(value);
        self.pending.push(entry);
    }

    /// Moves the span entries of the collection's elements, from `mark` on,
    /// into the table and returns the collection's own entry.
    #[inline]
    fn place_elements(&mut self, start: usize, mark: usize) -> SpanEntry {
        let first_child = self.table.len();
        // Span entries are plain data: copied over, then cut off.
        self.table
            .extend_from_slice(self.pending.get(mark..).unwrap_or_default());
        self.pending.truncate(mark);
        SpanEntry {
            span: Span::new(start, self.pos),
            first_child: u32::try_from(first_child).unwrap_or(u32::MAX),
            n_children: u32::try_from(self.table.len() - first_child).unwrap_or(u32::MAX),
        }
    }

    // The functions that recurse (read_form, read_elements, read_seq,
    // read_map, read_set, read_dispatch, read_tagged, skip_discards) keep
    // their frames small, leaving leaves, errors and the building of
    // collections to functions outside the recursion: 256 levels then fit in
    // a small stack even in a debug build.

    /// Reads the form at `pos`, which is neither blank, a discard, a closing
    /// delimiter nor the end, and pushes it.
    fn read_form(&mut self, depth: usize) -> Step {
        if depth > MAX_DEPTH {
            return fail(self.too_deep());
        }
        match self.peek() {
            Some(b'[') => self.read_seq(depth, b']'),
            Some(b'(') => self.read_seq(depth, b')'),
            Some(b'{') => self.read_map(depth),
            Some(b'#') => self.read_dispatch(depth),
            _ => self.read_leaf(),
        }
    }

    #[cold]
    fn too_deep(&self) -> ReadError {
        ReadError {
            kind: ReadErrorKind::TooDeep,
            span: Span::new(self.pos, self.pos + self.char_len(self.pos)),
        }
    }

    /// Reads and pushes a form that holds no other form: a keyword, the
    /// most common, without the others' dispatch.
    #[inline]
    fn read_leaf(&mut self) -> Step {
        if self.peek() == Some(b':') {
            self.read_keyword()
        } else {
            self.read_other_leaf()
        }
    }

    /// [`Reader::read_leaf`] for a form that may not be a keyword.
    #[inline(never)]
    fn read_other_leaf(&mut self) -> Step {
        let start = self.pos;
        let (value, end) = match self.peek() {
            Some(b':') => return self.read_keyword(),
            Some(b'"') => atom::string(self.text, start)?,
            Some(b'\\') => atom::character(self.text, start)?,
            Some(b'0'..=b'9') => atom::number(self.text, start)?,
            Some(b'+' | b'-')
                if self
                    .bytes
                    .get(start + 1)
                    .is_some_and(|b| b.is_ascii_digit()) =>
            {
                atom::number(self.text, start)?
            }
            Some(b @ (b')' | b']' | b'}')) => return fail(self.unmatched(b)),
            None => {
                return fail(ReadError::new(ReadErrorKind::UnexpectedEnd, start, start));
            }
            Some(_) => atom::symbol(self.text, start, &mut self.symbols)?,
        };
        self.pos = end;
        self.push(value, leaf(start, end));
        Ok(())
    }

    /// Reads and pushes a keyword.
    #[inline(never)]
    fn read_keyword(&mut self) -> Step {
        let start = self.pos;
        let (value, end) = atom::keyword(self.text, start, &mut self.keywords)?;
        self.pos = end;
        self.push(value, leaf(start, end));
        Ok(())
    }

    /// Reads and pushes the elements of the collection opened at `open` (by
    /// `open_len` bytes), through its closing delimiter `close`.
    ///
    /// With `NODE`, the collection is a node vector: its elements go to
    /// `node_items`, a vector after its head is read as a node and a map
    /// in its second place as its options (see [`NodeForms`]).
    fn read_elements<const NODE: bool>(
        &mut self,
        open: usize,
        open_len: usize,
        depth: usize,
        close: u8,
    ) -> Step {
        self.pos = open + open_len;
        let mark = self.pending.len();
        loop {
            // Elements are nearly always apart by one space or none: then
            // the next byte starts a form or closes the collection.
            if self.peek() == Some(b' ') {
                self.pos += 1;
            }
            match self.peek() {
                Some(b) if b == close => {
                    self.pos += 1;
                    return Ok(());
                }
                // Most elements are leaves: read at once, without the
                // collections' dispatch (inside the nesting limit).
                Some(b) if STARTS_FORM[usize::from(b)] => {
                    if NODE {
                        self.read_node_element(b, depth, mark)?;
                    } else if depth < MAX_DEPTH && !STARTS_COLLECTION[usize::from(b)] {
                        self.read_leaf()?;
                    } else {
                        self.read_form(depth + 1)?;
                    }
                }
                _ => {
                    self.skip_ignored(depth + 1)?;
                    match self.peek() {
                        Some(b) if b == close => {
                            self.pos += 1;
                            return Ok(());
                        }
                        Some(b')' | b']' | b'}') | None => {
                            return fail(self.not_closed(open, open_len, close));
                        }
                        Some(b) if NODE => self.read_node_element(b, depth, mark)?,
                        Some(_) => self.read_form(depth + 1)?,
                    }
                }
            }
        }
    }

    /// The error for a collection that ends at a wrong closing delimiter, or
    /// at the end of the text.
    #[cold]
    fn not_closed(&self, open: usize, open_len: usize, close: u8) -> ReadError {
        let delimiter = match (open_len, close) {
            (2, _) => Delimiter::Set,
            (_, b')') => Delimiter::List,
            (_, b']') => Delimiter::Vector,
            _ => Delimiter::Map,
        };
        match self.peek() {
            Some(found) => ReadError::new(
                ReadErrorKind::Mismatched {
                    open: delimiter,
                    found: char::from(found),
                },
                self.pos,
                self.pos + 1,
            ),
            None => ReadError::new(ReadErrorKind::Unclosed(delimiter), open, open + open_len),
        }
    }

    /// A vector or a list.
    fn read_seq(&mut self, depth: usize, close: u8) -> Step {
        let start = self.pos;
        let mark = self.values.len();
        self.read_elements::<false>(start, 1, depth, close)?;
        self.finish_seq(start, mark, close);
        Ok(())
    }

    fn finish_seq(&mut self, start: usize, mark: usize, close: u8) {
        // Taken off the stack in order, each leaving a nil behind, then the
        // nils forgotten: they own nothing, so cutting the stack is setting
        // its length, where draining reserves room a second time and has a
        // drop of its own, and popping then reversing moves each twice.
        let mut items = crate::value::ThinVec::with_capacity(self.values.len() - mark);
        for item in self.values.get_mut(mark..).unwrap_or_default() {
            items.push(std::mem::take(item));
        }
        forget_tail(&mut self.values, mark);
        let value = if close == b']' {
            if self.in_maps == 0 && matches!(items.first(), Some(Value::Keyword(_))) {
                self.node_forms += 1;
            }
            Value::Vector(items)
        } else {
            Value::List(items)
        };
        let entry = self.place_elements(start, mark);
        self.push(value, entry);
    }

    fn read_map(&mut self, depth: usize) -> Step {
        let start = self.pos;
        let mark = self.open_map();
        self.read_elements::<false>(start, 1, depth, b'}')?;
        self.finish_map(start, mark)
    }

    fn finish_map(&mut self, start: usize, mark: usize) -> Step {
        let (map, entry) = self.close_map(start, mark)?;
        self.push(Value::Map(Box::new(map)), entry);
        Ok(())
    }

    /// A node vector, in the nodes' mode: its elements read (a vector
    /// after its head as a node, a map in its second place as its
    /// options, anything else as a value), then the node placed in the
    /// table and pushed as an element of its parent.
    fn read_node(&mut self, depth: usize) -> Step {
        if depth > MAX_DEPTH {
            return fail(self.too_deep());
        }
        let start = self.pos;
        let mark = self.pending.len();
        let items_mark = self.node_items.len();
        let options_mark = self.options.len();
        self.read_elements::<true>(start, 1, depth, b']')?;
        self.finish_node(start, mark, items_mark, options_mark);
        Ok(())
    }

    /// Reads element `mark..` of a node vector at depth `depth`, which
    /// starts with the byte `b`: a child node, the options, or a value.
    #[inline(always)]
    fn read_node_element(&mut self, b: u8, depth: usize, mark: usize) -> Step {
        let n = self.pending.len() - mark;
        match b {
            b'[' if n >= 1 => return self.read_node(depth + 1),
            b'{' if n == 1 => return self.read_options(depth + 1),
            _ => {}
        }
        if depth < MAX_DEPTH && !STARTS_COLLECTION[usize::from(b)] {
            self.read_leaf()?;
        } else {
            self.read_form(depth + 1)?;
        }
        // Taken, leaving a nil on the stack: `values` stays in step with
        // `pending`, by which the collections around find their forms.
        if let Some(value) = self.values.last_mut() {
            self.node_items.push(Item::Value(std::mem::take(value)));
        }
        Ok(())
    }

    /// A node's options map, in the nodes' mode: read and checked as any
    /// map, kept without a box.
    fn read_options(&mut self, depth: usize) -> Step {
        if depth > MAX_DEPTH {
            return fail(self.too_deep());
        }
        let start = self.pos;
        let mark = self.open_map();
        self.read_elements::<false>(start, 1, depth, b'}')?;
        let forms = self.values.get(mark..).unwrap_or_default();
        let (options, entry) = if forms.len() % 2 == 0
            && forms.len() / 2 <= SCAN_KEYS
            && forms
                .iter()
                .step_by(2)
                .all(|k| matches!(k, Value::Keyword(_)))
        {
            // Keyword keys, checked as a map's, and their values moved
            // into the table of pairs: the map is made by the compiler
            // while it lowers the node, and gone after.
            self.in_maps -= 1;
            self.check_distinct_keywords(mark)?;
            let Reader { values, forms, .. } = self;
            let from = forms.pairs.len();
            for pair in values
                .get_mut(mark..)
                .unwrap_or_default()
                .chunks_exact_mut(2)
            {
                if let [Value::Keyword(k), value] = pair {
                    forms.pairs.push((*k, std::mem::take(value)));
                }
            }
            let to = forms.pairs.len();
            forget_tail(&mut self.values, mark);
            let range = (
                u32::try_from(from).unwrap_or(u32::MAX),
                u32::try_from(to).unwrap_or(u32::MAX),
            );
            (NodeOptions::Pairs(range), self.place_elements(start, mark))
        } else {
            let (map, entry) = self.close_map(start, mark)?;
            (NodeOptions::Map(map), entry)
        };
        self.options.push(options);
        self.push(Value::Nil, entry);
        Ok(())
    }

    /// Places the node whose elements are `node_items[items_mark..]`
    /// (and its options, if `options` grew past `options_mark`) in the
    /// table, and pushes it as an element of its parent.
    fn finish_node(&mut self, start: usize, mark: usize, items_mark: usize, options_mark: usize) {
        if matches!(
            self.node_items.get(items_mark),
            Some(Item::Value(Value::Keyword(_)))
        ) {
            self.node_forms += 1;
        }
        let from = self.forms.items.len();
        // Moved in order, each leaving a node index behind, which owns
        // nothing: the stack is then cut without a drop.
        for item in self.node_items.get_mut(items_mark..).unwrap_or_default() {
            self.forms
                .items
                .push(std::mem::replace(item, Item::Node(0)));
        }
        while self.node_items.len() > items_mark {
            std::mem::forget(self.node_items.pop());
        }
        let options = if self.options.len() > options_mark {
            self.options.pop()
        } else {
            None
        };
        let to = self.forms.items.len();
        let index = u32::try_from(self.forms.nodes.len()).unwrap_or(u32::MAX);
        self.forms.nodes.push(NodeEntry {
            items: (
                u32::try_from(from).unwrap_or(u32::MAX),
                u32::try_from(to).unwrap_or(u32::MAX),
            ),
            options,
        });
        forget_tail(&mut self.values, mark);
        let entry = self.place_elements(start, mark);
        self.node_items.push(Item::Node(index));
        self.push(Value::Nil, entry);
    }

    /// Counts one more map the forms being read are inside (until
    /// `finish_map`; a read that fails stops counting) and returns where
    /// its forms start on the stack. Out of line, so that `read_map`'s
    /// frame in the recursion stays as small as it was.
    #[inline(never)]
    fn open_map(&mut self) -> usize {
        self.in_maps += 1;
        self.values.len()
    }

    /// The map whose forms are `values[mark..]`, checked, and its span
    /// entry (its elements' entries placed in the table).
    #[inline(always)]
    fn close_map(&mut self, start: usize, mark: usize) -> Result<(Map, SpanEntry), Box<ReadError>> {
        self.in_maps -= 1;
        let n_forms = self.values.len() - mark;
        if n_forms % 2 == 1 {
            return fail(ReadError::new(
                ReadErrorKind::MissingMapValue,
                self.pos - 1,
                self.pos,
            ));
        }
        let forms = self.values.get(mark..).unwrap_or_default();
        let n_keys = n_forms / 2;
        if n_keys <= SCAN_KEYS
            && forms
                .iter()
                .step_by(2)
                .all(|k| matches!(k, Value::Keyword(_)))
        {
            return self.close_keyword_map(start, mark);
        }
        let mut map = Map::with_capacity(n_keys);
        let mut forms = self.values.drain(mark..);
        let mut key_idx = mark;
        // The forms come in pairs (counted above).
        while let Some(key) = forms.next() {
            let Some(value) = forms.next() else { break };
            match map.entry(key) {
                Entry::Vacant(slot) => {
                    slot.insert(value);
                }
                // The key in the map equals the duplicate by Clojure's `=`
                // (`[1]` and `(1)` are equal); the span shows the duplicate.
                Entry::Occupied(first) => {
                    return fail(ReadError {
                        kind: ReadErrorKind::DuplicateKey(first.key().to_string()),
                        span: self
                            .pending
                            .get(key_idx)
                            .map(|e| e.span)
                            .unwrap_or_default(),
                    });
                }
            }
            key_idx += 2;
        }
        drop(forms);
        let entry = self.place_elements(start, mark);
        Ok((map, entry))
    }

    /// Checks that the keyword keys of the map whose forms are
    /// `values[mark..]` are distinct, comparing each with those before it.
    #[inline(always)]
    fn check_distinct_keywords(&self, mark: usize) -> Step {
        let forms = self.values.get(mark..).unwrap_or_default();
        let keyword_at = |i: usize| match forms.get(i) {
            Some(Value::Keyword(k)) => Some(*k),
            _ => None,
        };
        for later in (2..forms.len()).step_by(2) {
            let key = keyword_at(later);
            if let Some(earlier) = (0..later).step_by(2).find(|&i| keyword_at(i) == key) {
                // The span shows the duplicate, the message the key first written.
                return fail(ReadError {
                    kind: ReadErrorKind::DuplicateKey(
                        forms.get(earlier).map(Value::to_string).unwrap_or_default(),
                    ),
                    span: self
                        .pending
                        .get(mark + later)
                        .map(|e| e.span)
                        .unwrap_or_default(),
                });
            }
        }
        Ok(())
    }

    /// A map whose keys are all keywords, few enough that comparing each
    /// with those before it is cheaper than looking each up: its entries
    /// are made at their size straight from the stack.
    fn close_keyword_map(
        &mut self,
        start: usize,
        mark: usize,
    ) -> Result<(Map, SpanEntry), Box<ReadError>> {
        self.check_distinct_keywords(mark)?;
        let forms = self.values.get(mark..).unwrap_or_default();
        // Taken off the stack in order, a pair at a time (they come in
        // pairs, counted above), straight into the map's slots.
        let n_keys = forms.len() / 2;
        // Each value leaves a nil behind and each key stays, a keyword:
        // neither owns anything, so the stack is then cut without a drop.
        let pairs = self
            .values
            .get_mut(mark..)
            .unwrap_or_default()
            .chunks_exact_mut(2)
            .filter_map(|pair| match pair {
                [Value::Keyword(k), value] => Some((*k, std::mem::take(value))),
                // (Not met: every key was found a keyword above.)
                _ => {
                    pair.iter_mut().for_each(|v| drop(std::mem::take(v)));
                    None
                }
            });
        let map = Map::from_distinct_keywords(n_keys, pairs);
        forget_tail(&mut self.values, mark);
        let entry = self.place_elements(start, mark);
        Ok((map, entry))
    }

    fn read_set(&mut self, depth: usize) -> Step {
        let start = self.pos;
        let mark = self.values.len();
        self.read_elements::<false>(start, 2, depth, b'}')?;
        self.finish_set(start, mark)
    }

    fn finish_set(&mut self, start: usize, mark: usize) -> Step {
        let mut set =
            Set::with_capacity_and_hasher(self.values.len() - mark, FastBuildHasher::default());
        for (i, element) in self.values.drain(mark..).enumerate() {
            let (first_idx, is_new) = set.insert_full(element);
            if !is_new {
                // As for map keys: the element shown is the first of the two.
                let first = set.get_index(first_idx).map(Value::to_string);
                return fail(ReadError {
                    kind: ReadErrorKind::DuplicateElement(first.unwrap_or_default()),
                    span: self
                        .pending
                        .get(mark + i)
                        .map(|e| e.span)
                        .unwrap_or_default(),
                });
            }
        }
        let entry = self.place_elements(start, mark);
        self.push(Value::Set(Box::new(set)), entry);
        Ok(())
    }

    /// A form that starts with `#`: a set, a symbolic value or a tagged value.
    fn read_dispatch(&mut self, depth: usize) -> Step {
        match self.bytes.get(self.pos + 1) {
            Some(b'{') => self.read_set(depth),
            Some(b'#') => self.read_symbolic(),
            Some(b':') => fail(ReadError::new(
                ReadErrorKind::Unsupported(Unsupported::NamespacedMap),
                self.pos,
                token_end(self.text, self.pos + 1),
            )),
            Some(b'_') => fail(ReadError::new(
                ReadErrorKind::DiscardWithoutForm,
                self.pos,
                self.pos + 2,
            )),
            _ => self.read_tagged(depth),
        }
    }

    /// `##Inf`, `##-Inf` or `##NaN`.
    fn read_symbolic(&mut self) -> Step {
        let start = self.pos;
        let end = token_end(self.text, start + 2);
        let value = match self.text.get(start + 2..end) {
            Some("Inf") => f64::INFINITY,
            Some("-Inf") => f64::NEG_INFINITY,
            Some("NaN") => f64::NAN,
            _ => {
                let end = end.max(start + 2);
                return fail(ReadError::new(
                    ReadErrorKind::InvalidSymbolicValue(
                        self.text.get(start..end).unwrap_or("##").to_owned(),
                    ),
                    start,
                    end,
                ));
            }
        };
        self.pos = end;
        self.push(Value::Float(value), leaf(start, end));
        Ok(())
    }

    /// `#tag form`.
    fn read_tagged(&mut self, depth: usize) -> Step {
        let start = self.pos;
        let tag_end = self.tag_end()?;
        self.pos = tag_end;
        self.skip_ignored(depth + 1)?;
        if matches!(self.peek(), None | Some(b')' | b']' | b'}')) {
            return fail(self.tag_without_form(start, tag_end));
        }
        self.read_form(depth + 1)?;
        self.finish_tagged(start, tag_end)
    }

    /// The end of the tag at `pos`, a symbol that starts with a letter.
    fn tag_end(&self) -> Result<usize, Box<ReadError>> {
        let start = self.pos;
        let end = token_end(self.text, start + 1);
        let tag = self.text.get(start + 1..end).unwrap_or("");
        if tag.is_empty() {
            // `#(`, `#"` and `#'` are Clojure code; a `#` alone is nothing.
            let next = char_at(self.text, start + 1).filter(|c| !c.is_whitespace());
            let shown = next.map_or_else(|| "#".to_owned(), |c| format!("#{c}"));
            let end = start + shown.len();
            return fail(ReadError::new(
                ReadErrorKind::InvalidDispatch(shown),
                start,
                end,
            ));
        }
        let starts_with_letter = tag.chars().next().is_some_and(char::is_alphabetic);
        if !starts_with_letter || atom::check_symbol(tag).is_err() {
            return fail(ReadError::new(
                ReadErrorKind::InvalidTag(tag.to_owned()),
                start,
                end,
            ));
        }
        Ok(end)
    }

    #[cold]
    fn tag_without_form(&self, start: usize, tag_end: usize) -> ReadError {
        let tag = self.text.get(start..tag_end).unwrap_or("#");
        ReadError::new(
            ReadErrorKind::TagWithoutForm(tag.to_owned()),
            start,
            tag_end,
        )
    }

    fn finish_tagged(&mut self, start: usize, tag_end: usize) -> Step {
        let Some(value) = self.values.pop() else {
            return fail(ReadError::new(
                ReadErrorKind::TagWithoutForm(
                    self.text.get(start..tag_end).unwrap_or("#").to_owned(),
                ),
                start,
                tag_end,
            ));
        };
        let tag = Symbol::new(self.text.get(start + 1..tag_end).unwrap_or(""));
        let entry = self.place_elements(start, self.values.len());
        self.push(Value::Tagged(tag, Box::new(value)), entry);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::read_one;

    /// How many entries the span table of `text` has.
    fn n_entries(text: &str) -> usize {
        read_one(text)
            .map(|(_, spans)| spans.entries.len())
            .unwrap_or(0)
    }

    #[test]
    fn the_span_table_has_one_entry_per_form_kept() {
        assert_eq!(n_entries("[:a {:k 1} #{x} #t (y)]"), 10);
        // Discarded forms, and everything inside them, leave no entries.
        assert_eq!(n_entries("[#_ [1 [2 3]] :a #_ #_ {:k 1} #{x}]"), 2);
        assert_eq!(n_entries("#_ [1 2] :a #_ (3)"), 1);
    }
}
