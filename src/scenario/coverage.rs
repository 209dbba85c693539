//! Coverage over many runs: per tree, the nodes never ticked, and per node,
//! the statuses it can return but never did; and the same facts in chat
//! terms ([`ChatCoverage`]): patterns never matched, pool members never
//! said, deferred actions never answered with success, or with failure.
//!
//! Everything is read from the runs' records (each visit's status), which
//! a scenario always keeps: the session counts nothing for coverage, so a
//! tick that is not recorded pays nothing for it.

use std::fmt::Write;

use crate::record::{NodeRecord, RunRecord, TreeRecord};
use crate::tick::Status;
use crate::value::{Keyword, Map, Value};

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
    /// Where it is written, `file:line:col`, if known.
    pub place: Option<String>,
    /// Its parent's index in [`TreeCoverage::nodes`], `None` for the root.
    pub parent: Option<u32>,
    /// Its options as written (a `:matches?` node's `:regex`, a `:defer`
    /// node's `:action`), if known.
    pub options: Option<Map>,
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
                                place: place(tree, n),
                                parent: n.parent,
                                options: n.options.clone(),
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
        for tick in run.ticks() {
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
            let chat = tree.chat();
            if !chat.is_empty() {
                let _ = write!(out, "{}", chat.report(tree));
            }
        }
        out
    }
}

/// Where `node` is written, `file:line:col`, if the tree was read from text.
fn place(tree: &TreeRecord, node: &NodeRecord) -> Option<String> {
    let span = node.span?;
    let file = tree.files.get(node.file)?;
    Some(format!("{}:{}", file.name(), file.line_col(span.start)))
}

/// What a set of runs left out, in chat terms: see [`TreeCoverage::chat`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ChatCoverage {
    /// `:matches?` nodes, and how many of them matched (succeeded) at least once.
    pub patterns: (usize, usize),
    /// Members of `:choose-each` pools (its children), and how many of them
    /// were said (succeeded) at least once.
    pub members: (usize, usize),
    /// `:defer` nodes, and how many were answered with success at least once.
    pub answered_success: (usize, usize),
    /// `:defer` nodes, and how many were answered with failure at least
    /// once (a failing handler program, or one that timed out: both arrive
    /// as a failure).
    pub answered_failure: (usize, usize),
    /// Each fact not covered, in tree order.
    pub gaps: Vec<ChatGap>,
}

/// One fact in chat terms that no run covered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ChatGap {
    /// The node, an index into [`TreeCoverage::nodes`].
    pub node: usize,
    /// What it never did.
    pub kind: ChatGapKind,
}

/// What a node never did, in chat terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ChatGapKind {
    /// A `:matches?` pattern never matched.
    NeverMatched,
    /// A member of a `:choose-each` pool was never picked.
    NeverPicked,
    /// A member of a `:choose-each` pool was picked but never succeeded.
    NeverSaid,
    /// A `:defer` node was never answered with success.
    NeverSucceeded,
    /// A `:defer` node was never answered with failure (nor timed out).
    NeverFailed,
}

impl ChatCoverage {
    /// Whether the tree has no node that chat coverage counts.
    pub fn is_empty(&self) -> bool {
        self.patterns.1 == 0 && self.members.1 == 0 && self.answered_success.1 == 0
    }

    /// The report of `tree`'s chat coverage: a summary line, then one line
    /// per gap, located (`file:line:col`, node type and id).
    pub fn report(&self, tree: &TreeCoverage) -> String {
        let mut out = String::new();
        let (matched, patterns) = self.patterns;
        let (said, members) = self.members;
        let (succeeded, deferred) = self.answered_success;
        let (failed, _) = self.answered_failure;
        let plural = |n: usize| if n == 1 { "" } else { "s" };
        let _ = writeln!(
            out,
            "chat coverage: {}: {matched} of {patterns} pattern{} matched, {said} of {members} \
             pool member{} said, {succeeded} of {deferred} deferred action{} answered with \
             success, {failed} of {deferred} with failure or timeout",
            tree.name,
            plural(patterns),
            plural(members),
            plural(deferred),
        );
        for gap in &self.gaps {
            let Some(node) = tree.nodes.get(gap.node) else {
                continue;
            };
            let place = node.place.as_deref().unwrap_or(&tree.name);
            let option = |key: &str| {
                node.options
                    .as_ref()
                    .and_then(|o| o.get(&Value::keyword(key)))
                    .map_or_else(String::new, |v| format!(" {v}"))
            };
            let member = |how: &str| {
                let n = tree.nodes[..gap.node]
                    .iter()
                    .filter(|n| n.parent == node.parent)
                    .count()
                    + 1;
                match node.parent.and_then(|p| tree.nodes.get(p as usize)) {
                    Some(p) => {
                        format!("never said (member {n} of {} {}, {how})", p.node_type, p.id)
                    }
                    None => format!("never said ({how})"),
                }
            };
            let what = match gap.kind {
                ChatGapKind::NeverMatched => format!("pattern{} never matched", option("regex")),
                ChatGapKind::NeverPicked => member("never picked"),
                ChatGapKind::NeverSaid => member("picked, never succeeded"),
                ChatGapKind::NeverSucceeded => {
                    format!("action{} never answered with success", option("action"))
                }
                ChatGapKind::NeverFailed => {
                    format!(
                        "action{} never answered with failure or timeout",
                        option("action")
                    )
                }
            };
            let _ = writeln!(out, "  {place}: {} {}: {what}", node.node_type, node.id);
        }
        out
    }
}

impl TreeCoverage {
    /// The tree's coverage in chat terms: each `:matches?` pattern that
    /// never matched, each `:choose-each` member never said, each `:defer`
    /// never answered with success, or with failure or timeout.
    pub fn chat(&self) -> ChatCoverage {
        let mut chat = ChatCoverage::default();
        let succeeded = |node: &NodeCoverage| node.seen.contains(&Status::Success);
        let count = |(done, all): &mut (usize, usize), yes: bool| {
            *all += 1;
            *done += usize::from(yes);
        };
        for (i, node) in self.nodes.iter().enumerate() {
            let mut gap = |kind| chat.gaps.push(ChatGap { node: i, kind });
            let in_pool = node
                .parent
                .and_then(|p| self.nodes.get(p as usize))
                .is_some_and(|p| p.node_type.as_str() == "choose-each");
            if in_pool {
                if !node.ticked {
                    gap(ChatGapKind::NeverPicked);
                } else if !succeeded(node) {
                    gap(ChatGapKind::NeverSaid);
                }
                count(&mut chat.members, succeeded(node));
            }
            match node.node_type.as_str() {
                "matches?" => {
                    if !succeeded(node) {
                        chat.gaps.push(ChatGap {
                            node: i,
                            kind: ChatGapKind::NeverMatched,
                        });
                    }
                    count(&mut chat.patterns, succeeded(node));
                }
                "defer" => {
                    let failed = node.seen.contains(&Status::Failure);
                    if !succeeded(node) {
                        chat.gaps.push(ChatGap {
                            node: i,
                            kind: ChatGapKind::NeverSucceeded,
                        });
                    }
                    if !failed {
                        chat.gaps.push(ChatGap {
                            node: i,
                            kind: ChatGapKind::NeverFailed,
                        });
                    }
                    count(&mut chat.answered_success, succeeded(node));
                    count(&mut chat.answered_failure, failed);
                }
                _ => {}
            }
        }
        chat
    }
}
