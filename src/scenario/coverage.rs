//! Coverage over many runs: per tree, the nodes never ticked, and per node,
//! the statuses it can return but never did.

use std::fmt::Write;

use crate::record::RunRecord;
use crate::tick::Status;
use crate::value::{Keyword, Value};

/// What a set of runs covered, tree by tree.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Coverage {
    /// Every tree seen, in the order first seen.
    pub trees: Vec<TreeCoverage>,
}

/// What the runs of one tree covered.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct TreeCoverage {
    /// The tree's file (or scenario) name.
    pub name: String,
    /// Its fingerprint: scenarios of the same tree add up.
    pub fingerprint: i64,
    /// Every node, in tree order.
    pub nodes: Vec<NodeCoverage>,
}

/// What the runs did with one node.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct NodeCoverage {
    /// Its id.
    pub id: Value,
    /// Its node type.
    pub node_type: Keyword,
    /// Its source line, if known.
    pub line: Option<usize>,
    /// Whether it was ticked at all.
    pub ticked: bool,
    /// The statuses it returned (the last of each tick's visits).
    pub seen: Vec<Status>,
}

impl NodeCoverage {
    /// The statuses a node of this type can return in a well-formed run
    /// (Error aside): a condition succeeds or fails, an action like
    /// `:define!` only succeeds, `:wait` runs then succeeds.
    pub fn possible(&self) -> &'static [Status] {
        use Status::{Failure, Running, Success};
        match self.node_type.as_str() {
            "success" | "define!" | "inc!" | "counter!" | "dissoc!" | "emit!" | "always" => {
                &[Success]
            }
            "failure" | "never" => &[Failure],
            "wait" => &[Running, Success],
            "defer" => &[Running, Success, Failure],
            _ => &[Success, Failure],
        }
    }

    /// The possible statuses never seen.
    pub fn missing(&self) -> Vec<Status> {
        self.possible()
            .iter()
            .copied()
            .filter(|s| !self.seen.contains(s))
            .collect()
    }
}

impl Coverage {
    /// Nothing covered yet.
    pub fn new() -> Coverage {
        Coverage::default()
    }

    /// Adds a run; `tree_name` names its (first) tree.
    pub fn add(&mut self, tree_name: &str, run: &RunRecord) {
        let mut slots = Vec::with_capacity(run.trees.len());
        for (i, tree) in run.trees.iter().enumerate() {
            let slot = match self
                .trees
                .iter()
                .position(|t| t.fingerprint == tree.fingerprint)
            {
                Some(slot) => slot,
                None => {
                    let name = match i {
                        0 => tree_name.to_owned(),
                        _ => format!("{tree_name} (version {})", i + 1),
                    };
                    self.trees.push(TreeCoverage {
                        name,
                        fingerprint: tree.fingerprint,
                        nodes: tree
                            .nodes
                            .iter()
                            .map(|n| NodeCoverage {
                                id: n.id.clone(),
                                node_type: n.node_type,
                                line: n.line,
                                ticked: false,
                                seen: Vec::new(),
                            })
                            .collect(),
                    });
                    self.trees.len() - 1
                }
            };
            slots.push(slot);
        }
        for tick in &run.ticks {
            let Some(tree) = slots.get(tick.tree).and_then(|&s| self.trees.get_mut(s)) else {
                continue;
            };
            for visit in tick.visits.iter() {
                if let Some(node) = tree.nodes.get_mut(visit.node.index()) {
                    node.ticked = true;
                    if !node.seen.contains(&visit.status) {
                        node.seen.push(visit.status);
                    }
                }
            }
        }
    }

    /// The report: per tree, how many nodes were ticked, then one line per
    /// node never ticked or with statuses never seen.
    pub fn report(&self) -> String {
        let mut out = String::new();
        for tree in &self.trees {
            let ticked = tree.nodes.iter().filter(|n| n.ticked).count();
            let _ = writeln!(
                out,
                "coverage: {}: {ticked} of {} nodes ticked",
                tree.name,
                tree.nodes.len()
            );
            for node in &tree.nodes {
                let line = node
                    .line
                    .map(|l| format!(" (line {l})"))
                    .unwrap_or_default();
                let what = if !node.ticked {
                    "never ticked".to_owned()
                } else {
                    let missing = node.missing();
                    if missing.is_empty() {
                        continue;
                    }
                    let words: Vec<&str> = missing.iter().map(|s| s.as_str()).collect();
                    format!("never returned {}", words.join(" or "))
                };
                let _ = writeln!(out, "  {} {}{line}: {what}", node.node_type, node.id);
            }
        }
        out
    }
}
