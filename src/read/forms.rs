//! A tree's nodes as the reader finds them, for a compile from text that
//! never builds the nodes' vectors and options maps as values.
//!
//! In this mode ([`super::read_tree`]) a vector in node position (the
//! root, and each element of a node after its head, but the options map
//! in its second place) is recorded as a node: its head and its children
//! in one flat table of items, its options map's entries as a [`Map`] of
//! their own, neither boxed nor in a vector of the node's. Every other
//! form (the head, option values, data, a child that is not a vector) is
//! read as the usual [`Value`], so every message that prints one is the
//! same. The spans are those of the usual read, form for form.

use crate::value::{Keyword, Map, Value};

/// One element of a node: a form read as a value, or a child node.
#[derive(Debug)]
pub(crate) enum Item {
    Value(Value),
    Node(u32),
}

/// One node vector: where its head and children are in the table of
/// items, and its options map if it has one.
#[derive(Debug)]
pub(crate) struct NodeEntry {
    /// Its head (if the vector is not empty) and then its children.
    pub(crate) items: (u32, u32),
    /// The options map in its second place, if it has one.
    pub(crate) options: Option<Map>,
}

/// The node vectors of a tree read from text, and its root.
#[derive(Debug, Default)]
pub(crate) struct NodeForms {
    pub(crate) nodes: Vec<NodeEntry>,
    pub(crate) items: Vec<Item>,
}

/// Heads are keywords and children nodes, which own nothing: they are
/// forgotten, the rest dropped, where dropping the table called the drop
/// of every value.
impl Drop for NodeForms {
    fn drop(&mut self) {
        while let Some(item) = self.items.pop() {
            match item {
                Item::Value(Value::Keyword(_)) | Item::Node(_) => std::mem::forget(item),
                other => drop(other),
            }
        }
    }
}

/// A node of [`NodeForms`]: its head, options and children.
#[derive(Clone, Copy)]
pub(crate) struct NodeView<'a> {
    /// Its head and children, the head first (none: an empty vector).
    pub(crate) items: &'a [Item],
    pub(crate) options: Option<&'a Map>,
}

impl NodeForms {
    /// The node at `index`; an index the reader did not give is an empty vector.
    pub(crate) fn node(&self, index: u32) -> NodeView<'_> {
        let entry = self.nodes.get(index as usize);
        let items = entry
            .and_then(|e| self.items.get(e.items.0 as usize..e.items.1 as usize))
            .unwrap_or_default();
        NodeView {
            items,
            options: entry.and_then(|e| e.options.as_ref()),
        }
    }

    /// How many nodes were read.
    pub(crate) fn len(&self) -> usize {
        self.nodes.len()
    }

    /// The root, the last node finished.
    pub(crate) fn root(&self) -> u32 {
        u32::try_from(self.nodes.len().saturating_sub(1)).unwrap_or(u32::MAX)
    }

    /// Whether the root's options map holds the keyword `key`.
    pub(crate) fn root_has_option(&self, key: Keyword) -> bool {
        self.node(self.root())
            .options
            .is_some_and(|m| m.contains_key(&Value::Keyword(key)))
    }
}

/// A tree read in node mode: its nodes, or, when the text's one form is
/// not a vector, that form as a value.
#[derive(Debug)]
pub(crate) enum TreeForm {
    Nodes(NodeForms),
    Value(Value),
}
