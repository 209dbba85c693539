//! The timeline page: a recorded run as one self-contained HTML file.
//!
//! The page is a template (`page.html`, `page.css`, `page.js`, compiled in)
//! with the run put in as JSON. The run is stored as it is recorded:
//! the starting db and each tick's changes, never a db per tick; each
//! tick's node states in a compact text (`ss2f`: for each node that has a
//! state, a letter, after its distance in tree order from the one before
//! when that is more than 1). A value is kept as its EDN text, or, once it
//! has been edited in a few places ([`DbChange::Edited`]), as its entries,
//! so that each later edit stores only the entries it changed.
//! The script rebuilds whatever the selected tick needs.
//!
//! What the page promises to tests and to anyone who scripts it: in the
//! tree pane every node's element carries `data-node-id` (its id as EDN
//! prints it) and `data-status` (its state at the selected tick, see
//! [`NodeState::as_str`]); every timeline cell carries `data-node-id`,
//! `data-tick` and `data-status` (that node's state at that tick).

use std::fmt::Write;

use super::{DbChange, Event, NodeState, RunRecord, TreeRecord, timeline::event_text};
use crate::tick::Status;
use crate::value::Value;

const TEMPLATE: &str = include_str!("page.html");
const STYLE: &str = include_str!("page.css");
const SCRIPT: &str = include_str!("page.js");

/// What the timeline page shows besides the run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct PageOptions {
    /// The page's title, e.g. the tree file's name.
    pub title: String,
}

impl PageOptions {
    /// Options with `title`.
    pub fn titled(title: impl Into<String>) -> PageOptions {
        PageOptions {
            title: title.into(),
        }
    }
}

/// The run as one self-contained HTML page (script and style inline, no
/// network access), to open from disk in a browser.
///
/// ```
/// use aido::record::{PageOptions, Recorder, page};
/// use aido::{Registry, Value, compile_str};
///
/// let tree = compile_str("t.edn", "[:sequence {:id :main} [:inc! {:key :n}]]", &Registry::new())
///     .unwrap();
/// let mut recorder = Recorder::new(&tree, &Value::map());
/// recorder.tick(Value::map(), &tree);
/// let html = page(&recorder.finish(), &PageOptions::titled("t.edn"));
/// assert!(html.starts_with("<!DOCTYPE html>"));
/// assert!(html.contains("<title>t.edn · aido timeline</title>"));
/// ```
pub fn page(run: &RunRecord, options: &PageOptions) -> String {
    let data = page_data(run, options);
    let mut out = String::with_capacity(TEMPLATE.len() + STYLE.len() + SCRIPT.len() + data.len());
    // The template's holes, in the order they come in it. Only the
    // template's text is searched, so nothing filled in is taken for a hole.
    let mut rest = TEMPLATE;
    for (hole, fill) in [
        ("{{title}}", html_escape(&options.title)),
        ("/*{{style}}*/", STYLE.to_owned()),
        ("{{data}}", data),
        ("/*{{script}}*/", SCRIPT.to_owned()),
    ] {
        if let Some(at) = rest.find(hole) {
            out.push_str(&rest[..at]);
            out.push_str(&fill);
            rest = &rest[at + hole.len()..];
        }
    }
    out.push_str(rest);
    out
}

/// The run as the JSON the page's script reads (with `<` written as
/// `\u003c`, so that it can sit inside a `<script>` element).
fn page_data(run: &RunRecord, options: &PageOptions) -> String {
    let mut out = String::new();
    out.push_str("{\"title\":");
    json_str(&mut out, &options.title);
    out.push_str(",\"trees\":[");
    let renamed = renames(run);
    for (i, tree) in run.trees.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_tree(&mut out, tree, renamed.get(i).map_or(&[][..], |r| &r[..]));
    }
    out.push_str("],\"start\":[");
    if let Some(map) = run.start_db.as_map() {
        for (i, (key, value)) in map.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push('[');
            json_str(&mut out, &key.to_string());
            out.push(',');
            json_str(&mut out, &value.to_string());
            out.push(']');
        }
    }
    out.push_str("],\"ticks\":[");
    // The db after each tick, for the text of edited entries; the keys the
    // script keeps as entries (see `write_entries`) rather than as text.
    let mut db = run.start_db.clone();
    let mut entries: std::collections::HashSet<Value> = std::collections::HashSet::new();
    let nil = Value::Nil;
    for (i, tick) in run.ticks().enumerate() {
        super::apply(&mut db, run.changes(&tick));
        if i > 0 {
            out.push(',');
        }
        let tree = run.trees.get(tick.tree);
        let n_nodes = tree.map_or(0, |t| t.nodes.len());
        let _ = write!(out, "[{},", tick.tree);
        json_str(&mut out, tick.status.as_str());
        let _ = write!(out, ",{},\"", tick.steps);
        let mut last: i64 = -1;
        for (index, state) in tick.node_states(n_nodes).into_iter().enumerate() {
            if state != NodeState::None {
                let step = index as i64 - last;
                if step > 1 {
                    let _ = write!(out, "{step}");
                }
                out.push(state_letter(state));
                last = index as i64;
            }
        }
        out.push_str("\",");
        match tick.input() {
            Some(input) => json_str(&mut out, &Value::Map(Box::new(input.clone())).to_string()),
            None => out.push_str("null"),
        }
        out.push_str(",[");
        for (j, event) in tick.events().iter().enumerate() {
            if j > 0 {
                out.push(',');
            }
            write_event(&mut out, event, tree);
        }
        out.push_str("],[");
        for (j, change) in run.changes(&tick).enumerate() {
            let change = &change;
            if j > 0 {
                out.push(',');
            }
            out.push('[');
            if !matches!(change, DbChange::Edited { .. }) {
                entries.remove(change.key());
            }
            match change {
                DbChange::Added { key, value } => {
                    out.push_str("\"+\",");
                    json_str(&mut out, &key.to_string());
                    out.push(',');
                    json_str(&mut out, &value.to_string());
                }
                DbChange::Changed { key, new, .. } => {
                    out.push_str("\"~\",");
                    json_str(&mut out, &key.to_string());
                    out.push(',');
                    json_str(&mut out, &new.to_string());
                }
                DbChange::Removed { key, .. } => {
                    out.push_str("\"-\",");
                    json_str(&mut out, &key.to_string());
                }
                DbChange::Edited { key, changes } => {
                    let value = db.get(key).unwrap_or(&nil);
                    if entries.contains(key) {
                        write_edits(&mut out, key, value, changes);
                    } else {
                        write_entries(&mut out, key, value);
                        entries.insert(key.clone());
                    }
                }
                DbChange::Appended { key, items } => {
                    // The elements' text, as the whole value would print
                    // them, to go before its closing bracket.
                    out.push_str("\"++\",");
                    json_str(&mut out, &key.to_string());
                    out.push(',');
                    let text: Vec<String> = items.iter().map(Value::to_string).collect();
                    json_str(&mut out, &text.join(" "));
                }
            }
            out.push(']');
        }
        out.push_str("]]");
    }
    out.push_str("]}");
    out
}

/// For each tree of the run, the ids renamed on the way to it, `(new,
/// old)`, as the reload or carry-over before its first tick reported them
/// (`:kept [[:old :new] ...]`), so that the page shows a renamed node on
/// one row.
fn renames(run: &RunRecord) -> Vec<Vec<(String, String)>> {
    let mut renamed = vec![Vec::new(); run.trees.len()];
    let mut seen = vec![false; run.trees.len()];
    let kept = Value::keyword("kept");
    for tick in run.ticks() {
        let Some(first) = seen.get_mut(tick.tree).filter(|s| !**s) else {
            continue;
        };
        *first = true;
        for event in tick.events() {
            let (Event::Reload(report) | Event::Migrated(report)) = event else {
                continue;
            };
            let Some(Value::Vector(entries)) = report.get(&kept) else {
                continue;
            };
            for entry in entries {
                if let Value::Vector(pair) = entry
                    && let [old, new] = &pair[..]
                    && let Some(list) = renamed.get_mut(tick.tree)
                {
                    list.push((new.to_string(), old.to_string()));
                }
            }
        }
    }
    renamed
}

/// `{"source": text|null, "name": name|null, "renamed": [[new id, old id]],
/// "nodes": [[id, type, depth, parent (-1 for the root), line|null,
/// options|null, from|null, to|null]]}`, where `from` and `to` are the
/// node's span in UTF-16 units, as the page's script indexes text. A tree
/// that includes other files also has `"files": [[name, text]]` (its own
/// file first) and a ninth element on each node: the index of its file.
fn write_tree(out: &mut String, tree: &TreeRecord, renamed: &[(String, String)]) {
    let text = tree.source.as_ref().map(|s| s.text());
    out.push_str("{\"source\":");
    match text {
        Some(text) => json_str(out, text),
        None => out.push_str("null"),
    }
    out.push_str(",\"name\":");
    match &tree.source {
        Some(source) => json_str(out, source.name()),
        None => out.push_str("null"),
    }
    out.push_str(",\"renamed\":[");
    for (i, (new, old)) in renamed.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push('[');
        json_str(out, new);
        out.push(',');
        json_str(out, old);
        out.push(']');
    }
    out.push(']');
    let several = tree.files.len() > 1;
    if several {
        out.push_str(",\"files\":[");
        for (i, file) in tree.files.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push('[');
            json_str(out, file.name());
            out.push(',');
            json_str(out, file.text());
            out.push(']');
        }
        out.push(']');
    }
    // Byte offset to UTF-16 offset, for the spans, in each file.
    let utf16_of = |text: &str| {
        let mut at = vec![0u32; text.len() + 1];
        let mut units = 0u32;
        for (i, c) in text.char_indices() {
            at[i] = units;
            units += c.len_utf16() as u32;
        }
        at[text.len()] = units;
        at
    };
    let utf16: Vec<Vec<u32>> = if several {
        tree.files.iter().map(|f| utf16_of(f.text())).collect()
    } else {
        text.map(utf16_of).into_iter().collect()
    };
    out.push_str(",\"nodes\":[");
    for (i, node) in tree.nodes.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push('[');
        json_str(out, &node.id.to_string());
        out.push(',');
        json_str(out, &node.node_type.to_string());
        let parent = node.parent.map_or(-1, i64::from);
        let _ = write!(out, ",{},{parent},", node.depth);
        match node.line {
            Some(line) => {
                let _ = write!(out, "{line}");
            }
            None => out.push_str("null"),
        }
        out.push(',');
        match &node.options {
            Some(options) => json_str(out, &Value::Map(Box::new(options.clone())).to_string()),
            None => out.push_str("null"),
        }
        let units = utf16.get(if several { node.file } else { 0 });
        let span = node.span.zip(units).and_then(|(s, units)| {
            Some((*units.get(s.start as usize)?, *units.get(s.end as usize)?))
        });
        match span {
            Some((from, to)) => {
                let _ = write!(out, ",{from},{to}");
            }
            None => out.push_str(",null,null"),
        }
        if several {
            let _ = write!(out, ",{}", node.file);
        }
        out.push(']');
    }
    out.push_str("]}");
}

/// `[kind, node id|null, text|null, line|null]`, the text null when it is
/// the kind and the node id.
fn write_event(out: &mut String, event: &Event, tree: Option<&TreeRecord>) {
    out.push('[');
    json_str(out, &event.kind());
    out.push(',');
    let node = event.node();
    match node {
        Some(id) => json_str(out, &id.to_string()),
        None => out.push_str("null"),
    }
    out.push(',');
    // Most events are just their kind and node (`halt :ask`): no need to
    // store that text.
    let text = event_text(event);
    match node {
        Some(id) if text == format!("{} {id}", event.kind()) => out.push_str("null"),
        _ => json_str(out, &text),
    }
    out.push(',');
    let line = match event {
        Event::Error(e) => e.location.map(|l| l.line),
        _ => None,
    }
    .or_else(|| {
        let tree = tree?;
        tree.nodes.get(tree.find(node?)?)?.line
    });
    match line {
        Some(line) => {
            let _ = write!(out, "{line}");
        }
        None => out.push_str("null"),
    }
    out.push(']');
}

/// The one-letter code of a state in the page's data.
fn state_letter(state: NodeState) -> char {
    match state {
        NodeState::Ticked(Status::Success) => 's',
        NodeState::Ticked(Status::Failure) => 'f',
        NodeState::Ticked(Status::Running) => 'r',
        NodeState::Ticked(Status::Error) => 'e',
        NodeState::Ticked(Status::Skipped) => 'k',
        NodeState::Halted => 'h',
        NodeState::None => 'n',
    }
}

/// Appends `text` as a JSON string, with `<`, `>` and `&` escaped too.
/// The first edit of a value: the value as its entries, `["E", key, "{",
/// [[k, v], ...]]` for a map or `["E", key, "[" or "(", [v, ...]]` for a
/// vector or list (each as EDN text), which the script keeps as entries, so
/// that later edits (`write_edits`) name only what they change.
fn write_entries(out: &mut String, key: &Value, value: &Value) {
    out.push_str("\"E\",");
    json_str(out, &key.to_string());
    match value {
        Value::Map(map) => {
            out.push_str(",\"{\",[");
            for (i, (k, v)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push('[');
                json_str(out, &k.to_string());
                out.push(',');
                json_str(out, &v.to_string());
                out.push(']');
            }
        }
        Value::Vector(items) | Value::List(items) => {
            let open = if matches!(value, Value::List(_)) {
                "("
            } else {
                "["
            };
            let _ = write!(out, ",\"{open}\",[");
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                json_str(out, &v.to_string());
            }
        }
        // An edit is only ever recorded inside a map, a vector or a list.
        _ => out.push_str(",\"[\",["),
    }
    out.push(']');
}

/// A later edit of a value the script keeps as entries: `["e", key, [[k,
/// text or null], ...]]`, each entry edited with its text after the tick
/// (null: removed); a vector's entries are keyed by their index.
fn write_edits(out: &mut String, key: &Value, value: &Value, changes: &[DbChange]) {
    out.push_str("\"e\",");
    json_str(out, &key.to_string());
    out.push_str(",[");
    for (i, change) in changes.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push('[');
        let entry = match (value, change.key()) {
            (Value::Map(map), k) => {
                json_str(out, &k.to_string());
                map.get(k)
            }
            (Value::Vector(items) | Value::List(items), k) => {
                json_str(out, &k.to_string());
                k.as_int()
                    .and_then(|i| usize::try_from(i).ok())
                    .and_then(|i| items.get(i))
            }
            (_, k) => {
                json_str(out, &k.to_string());
                None
            }
        };
        out.push(',');
        match entry {
            Some(v) => json_str(out, &v.to_string()),
            None => out.push_str("null"),
        }
        out.push(']');
    }
    out.push(']');
}

fn json_str(out: &mut String, text: &str) {
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            c if (c as u32) < 0x20 || c == '\u{2028}' || c == '\u{2029}' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

fn html_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            c => out.push(c),
        }
    }
    out
}
