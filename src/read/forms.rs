//! A tree's nodes as the reader finds them, for a compile from text that
//! never builds the nodes' vectors and options maps as values.
//!
//! In this mode ([`super::read_tree`]) a vector in node position (the
//! root, and each element of a node after its head, but the options map
//! in its second place) is recorded as a node: its head and its children
//! in one flat table of items, without a vector of the node's. Its
//! options map, checked as any map, is kept as its pairs in a table of
//! their own when its keys are keywords few enough to compare (the
//! compiler makes the node's [`Map`] from them when it lowers the node,
//! and drops it after), or else whole, without a box. Every other form
//! (the head, option values, data, a child that is not a vector) is read
//! as the usual [`Value`], so every message that prints one is the same.
//! The spans are those of the usual read, form for form.

use crate::value::{Keyword, Map, ThinVec, Value};

/// One element of a node: a form read as a value, or a child node.
#[derive(Debug)]
pub(crate) enum Item {
    Value(Value),
    Node(u32),
}

/// A node's options map as read: its entries in the table of pairs (a
/// map of distinct keyword keys, few enough to check by comparing, as
/// nearly every options map is), or, for any other, the map itself.
#[derive(Debug)]
pub(crate) enum NodeOptions {
    Pairs((u32, u32)),
    Map(Map),
}

/// One node vector: where its head and children are in the table of
/// items, and its options map if it has one.
#[derive(Debug)]
pub(crate) struct NodeEntry {
    /// Its head (if the vector is not empty) and then its children.
    pub(crate) items: (u32, u32),
    /// The options map in its second place, if it has one.
    pub(crate) options: Option<NodeOptions>,
}

/// The node vectors of a tree read from text, and its root.
#[derive(Default)]
pub(crate) struct NodeForms {
    pub(crate) nodes: Vec<NodeEntry>,
    pub(crate) items: Vec<Item>,
    /// The entries of the options maps kept as pairs, each map's in a
    /// run; copied into its node's map when the node is compiled, moved
    /// into the tree's data if that is made from the table.
    pub(crate) pairs: Vec<(Keyword, Value)>,
}

/// Shown with its nodes and items, and how many option pairs it keeps.
impl std::fmt::Debug for NodeForms {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodeForms")
            .field("nodes", &self.nodes)
            .field("items", &self.items)
            .field("pairs", &self.pairs.len())
            .finish()
    }
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
        // The options' values are nearly all keywords and integers (nils
        // once moved into the tree's data): likewise.
        while let Some((_, value)) = self.pairs.pop() {
            match value {
                value @ (Value::Nil | Value::Keyword(_) | Value::Int(_)) => std::mem::forget(value),
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
    pub(crate) options: Option<&'a NodeOptions>,
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

    /// The pairs of the options kept as the run `range`.
    fn pairs(&self, (from, to): (u32, u32)) -> &[(Keyword, Value)] {
        self.pairs
            .get(from as usize..to as usize)
            .unwrap_or_default()
    }

    /// The options map kept as the run `range`, made with copies of their
    /// values (nearly all scalars, whose copy is a copy of their bits):
    /// the table keeps them, for the tree's data if it is made from the
    /// table ([`NodeForms::into_value`]).
    pub(crate) fn clone_map(&self, range: (u32, u32)) -> Map {
        let pairs = self.pairs(range);
        Map::from_distinct_keywords(pairs.len(), pairs.iter().map(|(k, v)| (*k, v.clone())))
    }

    /// The tree's data, the value [`super::read_text`] reads from the same
    /// text, made from the table, whose values move into it (the options
    /// maps are made again from their pairs). The nodes were recorded
    /// children first, so each node's vector is made from values already
    /// made, without recursion; the root, the last, is the value.
    pub(crate) fn into_value(mut self) -> Value {
        let mut made: Vec<Value> = Vec::with_capacity(self.nodes.len());
        for index in 0..self.nodes.len() {
            let Some(entry) = self.nodes.get_mut(index) else {
                break;
            };
            let (from, to) = (entry.items.0 as usize, entry.items.1 as usize);
            let mut options = match entry.options.take() {
                Some(NodeOptions::Pairs((from, to))) => {
                    let pairs = self
                        .pairs
                        .get_mut(from as usize..to as usize)
                        .unwrap_or_default();
                    Some(Map::from_distinct_keywords(
                        pairs.len(),
                        pairs.iter_mut().map(|(k, v)| (*k, std::mem::take(v))),
                    ))
                }
                Some(NodeOptions::Map(map)) => Some(map),
                None => None,
            };
            let mut vector = ThinVec::with_capacity(to - from + usize::from(options.is_some()));
            let items = self.items.get_mut(from..to).unwrap_or_default();
            for item in items {
                // Each item moved out leaves a node index, which owns nothing.
                vector.push(match std::mem::replace(item, Item::Node(0)) {
                    Item::Value(value) => value,
                    Item::Node(child) => made
                        .get_mut(child as usize)
                        .map_or(Value::Nil, std::mem::take),
                });
                // The options map is the second element, after the head.
                if let Some(map) = options.take() {
                    vector.push(Value::Map(Box::new(map)));
                }
            }
            made.push(Value::Vector(vector));
        }
        made.pop().unwrap_or(Value::Nil)
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
        match self.node(self.root()).options {
            Some(NodeOptions::Pairs(range)) => self.pairs(*range).iter().any(|(k, _)| *k == key),
            Some(NodeOptions::Map(m)) => m.contains_key(&Value::Keyword(key)),
            None => false,
        }
    }
}

/// A tree read in node mode: its nodes, or, when the text's one form is
/// not a vector, that form as a value.
#[derive(Debug)]
pub(crate) enum TreeForm {
    Nodes(NodeForms),
    Value(Value),
}
