//! The text timeline: a recorded run as short blocks, one a tick.
//!
//! ```text
//! tick 3: running
//!   input {:input "And a selector?"}
//!   + :input "And a selector?"
//!   ~ :replies ["A"] -> ["A" "B"]
//!   - :reply
//!   launch :ask :llm/ask {:prompt "And a selector?"}
//!   nodes:
//!     :selector :bot running
//!       :sequence :stop failure
//! ```
//!
//! Lines, in this order: the tick's number and status; the input merged
//! before it; the db's changes (`+` added, `~` changed, `-` removed; keys in
//! the order of their EDN text, and so are the entries of maps and sets
//! inside values; `:aido/*` keys only on request); the events
//! in the order they happened; with `trace`, every node ticked, indented by
//! depth, in tree order, with its status (`x3` when ticked three times,
//! `halted` when halted after its last visit).

use std::fmt::Write;

use crate::value::Value;

use super::{DbChange, Event, RunRecord, TickRecord};

/// What the text timeline shows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TimelineOptions {
    /// Show changes to the library's own `:aido/*` keys.
    pub aido_keys: bool,
    /// Show the nodes ticked, as an indented tree.
    pub trace: bool,
}

/// The run as text, one block a tick, blocks apart by a blank line.
pub fn timeline(run: &RunRecord, options: &TimelineOptions) -> String {
    let mut out = String::new();
    for (i, tick) in run.ticks().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        write_tick(&mut out, run, &tick, options);
    }
    out
}

/// The block of one tick (`run.tick(index)`), as [`timeline`] prints it,
/// for printing a run tick by tick as it is recorded. Empty if there is no
/// such tick.
pub fn timeline_block(run: &RunRecord, index: usize, options: &TimelineOptions) -> String {
    let mut out = String::new();
    if let Some(tick) = run.tick(index) {
        write_tick(&mut out, run, &tick, options);
    }
    out
}

/// One line per change; a change inside an edited value names its key
/// path, as `[:big 500]`.
fn write_change(out: &mut String, path: &[&Value], change: &DbChange) {
    let key = match path {
        [] => change.key().to_string(),
        _ => {
            let mut text = String::from("[");
            for segment in path {
                let _ = write!(text, "{segment} ");
            }
            let _ = write!(text, "{}]", change.key());
            text
        }
    };
    let _ = match change {
        DbChange::Added { value, .. } => writeln!(out, "  + {key} {}", sorted(value)),
        DbChange::Changed { old, new, .. } => {
            writeln!(out, "  ~ {key} {} -> {}", sorted(old), sorted(new))
        }
        DbChange::Removed { .. } => writeln!(out, "  - {key}"),
        DbChange::Appended { items, .. } => writeln!(
            out,
            "  ~ {key} ++ {}",
            sorted(&Value::Vector(items.as_slice().into()))
        ),
        DbChange::Edited { key, changes } => {
            let mut inner = path.to_vec();
            inner.push(key);
            for change in changes {
                write_change(out, &inner, change);
            }
            Ok(())
        }
    };
}

/// One tick's block.
fn write_tick(out: &mut String, run: &RunRecord, tick: &TickRecord, options: &TimelineOptions) {
    let _ = writeln!(out, "tick {}: {}", tick.tick, tick.status);
    if let Some(input) = tick.input() {
        let _ = writeln!(
            out,
            "  input {}",
            sorted(&Value::Map(Box::new(input.clone())))
        );
    }
    for change in run.changes(tick) {
        if change.is_aido_key() && !options.aido_keys {
            continue;
        }
        write_change(out, &[], &change);
    }
    for event in tick.events() {
        let _ = writeln!(out, "  {}", event_text(event));
    }
    if options.trace && !tick.visits.is_empty() {
        let nodes = run.trees.get(tick.tree).map_or(&[][..], |t| &t.nodes[..]);
        out.push_str("  nodes:\n");
        for visit in tick.visits.iter() {
            let node_type = nodes
                .get(visit.node.index())
                .map(|n| n.node_type.to_string())
                .unwrap_or_default();
            let _ = write!(
                out,
                "    {}{node_type} {} {}",
                "  ".repeat(visit.depth as usize),
                visit.id,
                visit.status
            );
            if visit.count > 1 {
                let _ = write!(out, " x{}", visit.count);
            }
            if visit.halted {
                out.push_str(", halted");
            }
            out.push('\n');
        }
    }
}

/// `value` with the entries of every map and set in it sorted by their EDN
/// text, so that a timeline does not change when a refactor writes the same
/// keys in another order (user data: the db, inputs, requests' options,
/// completions, notes; the library's own reports keep their fixed order). Values nested deeper than the reader reads are
/// left as they are below that depth.
pub(crate) fn sorted(value: &Value) -> Value {
    sorted_to(value, crate::read::MAX_DEPTH)
}

fn sorted_to(value: &Value, depth: usize) -> Value {
    if depth == 0 {
        return value.clone();
    }
    let by_text = |v: &Value| v.to_string();
    match value {
        Value::Map(map) => {
            let mut entries: Vec<(String, Value, Value)> = map
                .iter()
                .map(|(k, v)| (by_text(k), sorted_to(k, depth - 1), sorted_to(v, depth - 1)))
                .collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Map(Box::new(
                entries.into_iter().map(|(_, k, v)| (k, v)).collect(),
            ))
        }
        Value::Set(set) => {
            let mut items: Vec<(String, Value)> = set
                .iter()
                .map(|v| (by_text(v), sorted_to(v, depth - 1)))
                .collect();
            items.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Set(Box::new(items.into_iter().map(|(_, v)| v).collect()))
        }
        Value::Vector(items) => {
            Value::Vector(items.iter().map(|v| sorted_to(v, depth - 1)).collect())
        }
        Value::List(items) => Value::List(items.iter().map(|v| sorted_to(v, depth - 1)).collect()),
        Value::Tagged(tag, inner) => Value::Tagged(*tag, Box::new(sorted_to(inner, depth - 1))),
        other => other.clone(),
    }
}

/// An event as one line of text, without indentation.
pub(crate) fn event_text(event: &Event) -> String {
    match event {
        Event::Halted { node } => format!("halt {node}"),
        Event::Skipped { node } => format!("skip {node}"),
        Event::Launched(r) => format!(
            "launch {} {} {}",
            r.node,
            r.action,
            sorted(&Value::Map(Box::new(r.options.clone())))
        ),
        Event::Cancelled(r) => format!(
            "cancel {} {} {}",
            r.node,
            r.action,
            sorted(&Value::Map(Box::new(r.options.clone())))
        ),
        Event::Dropped(d) => {
            let mut d = d.clone();
            d.completion = sorted(&d.completion);
            format!("dropped {}", d.to_value())
        }
        Event::Warning(w) => format!("warning {}", w.to_value()),
        // The message may be user text (a node type's error): shown inert.
        Event::Error(e) => format!(
            "error {}",
            crate::source::excerpt(&e.to_string(), usize::MAX)
        ),
        // Reports are the library's own maps, in a fixed order.
        Event::Trim(report) => format!("trim {report}"),
        Event::Reload(report) => format!("reload {report}"),
        Event::Migrated(report) => format!("migrated {report}"),
        Event::Note { kind, data } => format!("{kind} {}", sorted(data)),
    }
}
