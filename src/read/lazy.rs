//! The data a tree was compiled from, kept as the value or made again
//! from the text on first use.

use std::sync::{Arc, OnceLock};

use crate::source::Source;
use crate::value::Value;

/// The data a tree was compiled from ([`crate::Tree::form`]).
///
/// A tree compiled from text without includes or parameters, whose ticks
/// keep no state, keeps only its text: the compile reads the nodes
/// without building their value, and the value is read again from the
/// text the first time it is asked for (a trim, `aido show`, a
/// scenario's stubs, the fingerprint if a db records another tree's).
/// Such a tree whose ticks may keep state, and so record its
/// fingerprint, has its value made from the reader's table by the
/// compile; every other tree keeps the value it was compiled from.
/// A copy shares the value if it is made; a copy made before reads the
/// text itself when asked.
#[derive(Clone)]
pub(crate) struct LazyForm {
    value: OnceLock<Arc<Value>>,
    /// The text to read the value from, if it is not made yet.
    source: Option<Arc<Source>>,
}

impl LazyForm {
    /// The value itself.
    pub(crate) fn ready(value: Value) -> LazyForm {
        LazyForm {
            value: OnceLock::from(Arc::new(value)),
            source: None,
        }
    }

    /// The value read from `source` when first asked for.
    pub(crate) fn from_source(source: Arc<Source>) -> LazyForm {
        LazyForm {
            value: OnceLock::new(),
            source: Some(source),
        }
    }

    /// The value. A text that no longer reads (it cannot happen: the
    /// text was read once, and a `Source` never changes) gives nil, the
    /// value of a form never given, rather than a panic.
    pub(crate) fn get(&self) -> &Value {
        self.value.get_or_init(|| {
            let read = self
                .source
                .as_ref()
                .and_then(|s| super::read_text(s.text()).ok());
            Arc::new(read.map_or(Value::Nil, |(value, _)| value))
        })
    }
}

#[cfg(test)]
impl LazyForm {
    /// Whether the value is made (kept, or read again already).
    pub(crate) fn is_made(&self) -> bool {
        self.value.get().is_some()
    }
}

/// Shown as the value, made if it was not: the same as a tree that kept
/// its value.
impl std::fmt::Debug for LazyForm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.get().fmt(f)
    }
}
