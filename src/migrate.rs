//! Carrying a db over to another version of its tree.
//!
//! State follows the node, not its position. The two trees are matched
//! node by node (see `NodeMap`); every node that still exists with the
//! same node type keeps its memory and running state under its new id, the
//! state of nodes that are gone or changed type is dropped, and running
//! nodes that are gone are halted on the old tree (halt hooks, cancel
//! requests). Memory that names children by position (a memory composite's
//! `{:index i}`, a policy parallel's or a running reactive composite's
//! `{:done [..]}`, `:choose-each`'s `{:pool [..]}`, a random decider's
//! `{:running i}`) is rewritten to name the same children in the new tree
//! (a running memory composite that stores no index is at its first child,
//! which is followed the same way). Completions waiting under
//! `:aido/results` move to their node's new id.

use std::collections::{HashMap, VecDeque};

use crate::nodes::{Memory, When};
use crate::tick::{DropReason, DroppedResult, Request, halt_running};
use crate::tree::Tree;
use crate::value::{Keyword, Map, Value, kw};

/// One node whose state a migration kept, dropped or halted.
#[derive(Debug, Clone, PartialEq)]
pub struct MigratedNode {
    /// The node's id in the old tree.
    pub id: Value,
    /// Its id in the new tree, if it is there.
    pub new_id: Option<Value>,
    /// Its node type, e.g. `:sequence` (in the old tree).
    pub node_type: Keyword,
}

/// What [`migrate`] did with a db's state.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Migration {
    /// Nodes whose memory or running state was carried over.
    pub kept: Vec<MigratedNode>,
    /// Nodes whose memory was dropped: gone, changed type, or memory that
    /// named a child that is gone.
    pub dropped: Vec<MigratedNode>,
    /// Running nodes that are gone, halted on the old tree.
    pub halted: Vec<MigratedNode>,
    /// Cancel requests of deferred actions halted with them.
    pub cancels: Vec<Request>,
    /// Completions under `:aido/results` that could not be carried over:
    /// written for a node that is gone, under an id that a completion for
    /// a node still there now takes. (Completions follow their node to its
    /// new id; one for a node that is gone stays under its id, and the next
    /// tick drops and reports it.)
    pub dropped_results: Vec<DroppedResult>,
}

impl Migration {
    /// Whether nothing was kept, dropped or halted.
    pub fn is_empty(&self) -> bool {
        self.kept.is_empty() && self.dropped.is_empty() && self.halted.is_empty()
    }

    /// The report as a map: `{:kept [..], :dropped [..], :halted [..]}`, each
    /// a vector of node ids (a kept node whose id changed as `[old new]`),
    /// `:cancel [..]` when a halted deferred action was cancelled (its
    /// cancel requests, as a tick lists them, so that the system running the
    /// action is told), and `:dropped-results [..]` (see
    /// [`DroppedResult::to_value`]) when a completion could not be carried
    /// over.
    pub fn to_value(&self) -> Value {
        let ids = |nodes: &[MigratedNode]| {
            Value::Vector(
                nodes
                    .iter()
                    .map(|n| match &n.new_id {
                        Some(new) if *new != n.id => Value::vector([n.id.clone(), new.clone()]),
                        _ => n.id.clone(),
                    })
                    .collect(),
            )
        };
        let mut report = Map::default();
        report.insert(Value::keyword("kept"), ids(&self.kept));
        report.insert(Value::keyword("dropped"), ids(&self.dropped));
        report.insert(Value::keyword("halted"), ids(&self.halted));
        if !self.cancels.is_empty() {
            let cancels = self.cancels.iter().map(Request::to_value).collect();
            report.insert(Value::keyword("cancel"), Value::Vector(cancels));
        }
        if !self.dropped_results.is_empty() {
            let dropped = self.dropped_results.iter().map(DroppedResult::to_value);
            report.insert(
                Value::keyword("dropped-results"),
                Value::Vector(dropped.collect()),
            );
        }
        Value::Map(Box::new(report))
    }
}

/// Which node of the new tree each node of the old tree became.
///
/// Nodes with an explicit `:id` are matched by id (and node type) wherever
/// they moved. The rest are matched top-down: the roots, if of one type;
/// then, under each matched pair of parents, children whose data is equal
/// (wherever they moved among their siblings), then the remaining children
/// in order, each with the next remaining child of the same node type. So a derived id,
/// which names a position, does not decide: a child inserted before a
/// running one shifts it, and the running one is still found.
#[derive(Debug, Clone)]
pub(crate) struct NodeMap {
    /// By old node index: the new node index.
    pub(crate) to_new: Vec<Option<u32>>,
}

impl NodeMap {
    pub(crate) fn between(old: &Tree, new: &Tree) -> NodeMap {
        let mut to_new = vec![None; old.nodes.len()];
        let mut taken = vec![false; new.nodes.len()];
        let old_forms = node_forms(old);
        let new_forms = node_forms(new);
        // Explicit ids first.
        for (o, node) in old.nodes.iter().enumerate() {
            if has_explicit_id(old_forms.get(o).copied())
                && let Some(n) = new.find(&node.id)
                && has_explicit_id(new_forms.get(n.index()).copied())
            {
                pair(old, new, o, n.index(), &mut to_new, &mut taken);
            }
        }
        if !old.nodes.is_empty() && !new.nodes.is_empty() {
            pair(old, new, 0, 0, &mut to_new, &mut taken);
        }
        // Pre-order: a parent is matched before its children are looked at.
        for o in 0..old.nodes.len() {
            let Some(n) = to_new[o] else { continue };
            let old_kids: Vec<u32> = old
                .children_of(&old.nodes[o])
                .iter()
                .copied()
                .filter(|&c| to_new[c as usize].is_none())
                .collect();
            let mut new_kids: Vec<u32> = new.children_of(&new.nodes[n as usize]).to_vec();
            new_kids.retain(|&c| !taken[c as usize]);
            match_children(
                old,
                new,
                &old_kids,
                &new_kids,
                (&old_forms, &new_forms),
                (&mut to_new, &mut taken),
            );
        }
        NodeMap { to_new }
    }

    pub(crate) fn get(&self, old: u32) -> Option<u32> {
        self.to_new.get(old as usize).copied().flatten()
    }
}

/// Matches the free children `old_kids` of an old node with the free
/// children `new_kids` of its new counterpart: first children whose data is
/// equal (each old child, in order, with the first equal new one), then the
/// rest in order, each with the next free new child of its type.
///
/// Both passes look children up instead of scanning siblings, so matching
/// is linear in the number of children, however many changed or moved
/// (30,000 reversed children match in milliseconds, not seconds).
fn match_children(
    old: &Tree,
    new: &Tree,
    old_kids: &[u32],
    new_kids: &[u32],
    (old_forms, new_forms): (&[&Value], &[&Value]),
    (to_new, taken): (&mut [Option<u32>], &mut [bool]),
) {
    // Equal data, wherever it moved: the new children by form, in order.
    let mut by_form: HashMap<&Value, VecDeque<usize>> = HashMap::new();
    for (at, &nc) in new_kids.iter().enumerate() {
        if let Some(&form) = new_forms.get(nc as usize) {
            by_form.entry(form).or_default().push_back(at);
        }
    }
    let mut used = vec![false; new_kids.len()];
    let mut rest_old = Vec::new();
    for &oc in old_kids {
        let first = old_forms
            .get(oc as usize)
            .and_then(|form| by_form.get_mut(form))
            .and_then(|queue| queue.front().copied());
        match first {
            Some(at) if pair(old, new, oc as usize, new_kids[at] as usize, to_new, taken) => {
                used[at] = true;
                if let Some(queue) = old_forms.get(oc as usize).and_then(|f| by_form.get_mut(f)) {
                    queue.pop_front();
                }
            }
            _ => rest_old.push(oc),
        }
    }
    // The rest in order: each with the next free child of its type after
    // the last one matched. Each type keeps a cursor into its own list of
    // positions, which only moves forward.
    let mut by_type: HashMap<Keyword, (Vec<usize>, usize)> = HashMap::new();
    for (at, &nc) in new_kids.iter().enumerate() {
        if !used[at] {
            by_type
                .entry(new.nodes[nc as usize].type_name)
                .or_default()
                .0
                .push(at);
        }
    }
    let mut from = 0;
    for oc in rest_old {
        let Some((positions, cursor)) = by_type.get_mut(&old.nodes[oc as usize].type_name) else {
            continue;
        };
        while positions.get(*cursor).is_some_and(|&at| at < from) {
            *cursor += 1;
        }
        if let Some(&at) = positions.get(*cursor)
            && pair(old, new, oc as usize, new_kids[at] as usize, to_new, taken)
        {
            *cursor += 1;
            from = at + 1;
        }
    }
}

/// Matches old node `o` with new node `n` if both are free and of one type.
fn pair(
    old: &Tree,
    new: &Tree,
    o: usize,
    n: usize,
    to_new: &mut [Option<u32>],
    taken: &mut [bool],
) -> bool {
    let free = to_new.get(o).is_some_and(Option::is_none) && taken.get(n) == Some(&false);
    if free && old.nodes[o].type_name == new.nodes[n].type_name {
        to_new[o] = Some(n as u32);
        taken[n] = true;
        true
    } else {
        false
    }
}

/// Each node's data, by node index (the tree's pre-order).
fn node_forms(tree: &Tree) -> Vec<&Value> {
    fn walk<'a>(form: &'a Value, out: &mut Vec<&'a Value>) {
        out.push(form);
        if let Value::Vector(items) = form {
            let skip = if matches!(items.get(1), Some(Value::Map(_))) {
                2
            } else {
                1
            };
            for child in items.iter().skip(skip) {
                walk(child, out);
            }
        }
    }
    let mut out = Vec::with_capacity(tree.nodes.len());
    walk(tree.form(), &mut out);
    if out.len() != tree.nodes.len() {
        out.clear();
    }
    out
}

fn has_explicit_id(form: Option<&Value>) -> bool {
    matches!(form, Some(Value::Vector(items))
        if matches!(items.get(1), Some(Value::Map(m)) if m.contains_key(&Value::Keyword(kw::ID))))
}

/// Carries `db` over from `old` to `new` (see the module documentation):
/// returns the new db and what was kept, dropped and halted. A db with
/// state records `new`'s fingerprint (see [`Tree::fingerprint`]). A db that is not a map is returned as
/// it is.
///
/// ```
/// use aido::{Registry, compile_str, read_value, run_tick, migrate::migrate};
///
/// let registry = Registry::new();
/// let old = compile_str("v1", "[:sequence {:memory true} [:success] [:wait {:ticks 2}]]", &registry).unwrap();
/// let new = compile_str("v2", "[:sequence {:memory true} [:inc! {:key :n}] [:success] [:wait {:ticks 2}]]", &registry).unwrap();
/// let db = run_tick(read_value("{}").unwrap(), &old).db; // the wait runs
/// let (db, report) = migrate(db, &old, &new);
/// assert_eq!(report.dropped, vec![]);
/// // The memory sequence resumes at the wait, now its third child.
/// let tick = run_tick(db, &new);
/// assert_eq!(tick.db.get(&aido::Value::keyword("n")), None);
/// ```
pub fn migrate(db: Value, old: &Tree, new: &Tree) -> (Value, Migration) {
    let map = NodeMap::between(old, new);
    migrate_with(db, old, new, &map)
}

pub(crate) fn migrate_with(db: Value, old: &Tree, new: &Tree, map: &NodeMap) -> (Value, Migration) {
    let mut report = Migration::default();
    let mut db = match db.into_map() {
        Ok(db) => db,
        Err(db) => return (db, report),
    };
    let info = |tree: &Tree, id: &Value, new_id: Option<Value>| MigratedNode {
        id: id.clone(),
        new_id,
        node_type: tree
            .find(id)
            .and_then(|n| tree.node_type(n))
            .unwrap_or_else(|| Keyword::new("aido/unknown")),
    };
    // Running nodes that are gone are halted on the old tree first.
    let running: Vec<Value> = db
        .get(&Value::Keyword(kw::RUNNING))
        .and_then(Value::as_seq)
        .map(<[Value]>::to_vec)
        .unwrap_or_default();
    let gone: Vec<Value> = running
        .iter()
        .filter(|id| old.find(id).and_then(|n| map.get(n.0)).is_none())
        .cloned()
        .collect();
    if !gone.is_empty() {
        db.insert(
            Value::Keyword(kw::RUNNING),
            Value::Vector(gone.as_slice().into()),
        );
        let tick = halt_running(Value::Map(Box::new(db)), old);
        report.cancels = tick.cancels().to_vec();
        db = tick.db.into_map().unwrap_or_default();
        db.shift_remove(&Value::Keyword(kw::ERROR));
        report.halted = gone.iter().map(|id| info(old, id, None)).collect();
    }
    // The running nodes that stay, under their new ids.
    let staying: Vec<Value> = running
        .iter()
        .filter_map(|id| {
            let n = map.get(old.find(id)?.0)?;
            Some(new.nodes[n as usize].id.clone())
        })
        .collect();
    if db
        .get(&Value::Keyword(kw::RUNNING))
        .is_some_and(|r| r.as_seq().is_none())
    {
        // A running set that is not a vector of ids is not this function's
        // to drop: it stays as it was, for the caller to see.
    } else if staying.is_empty() {
        db.shift_remove(&Value::Keyword(kw::RUNNING));
    } else {
        db.insert(Value::Keyword(kw::RUNNING), Value::Vector(staying.into()));
    }
    // Node memory, by new id.
    let memory_key = Value::Keyword(kw::MEMORY);
    let mut moved = Map::default();
    let mut had_memory = false;
    if let Some(Value::Map(memory)) = db.get(&memory_key) {
        had_memory = true;
        for (id, state) in memory.iter() {
            let Some(o) = old.find(id) else {
                // Not a node of the old tree: kept only if the new one has it.
                if new.find(id).is_some() {
                    moved.insert(id.clone(), state.clone());
                } else {
                    report.dropped.push(info(old, id, None));
                }
                continue;
            };
            let carried = map
                .get(o.0)
                .and_then(|n| Some((n, follow(state, old, o.0, new, n, map)?)));
            match carried {
                Some((n, state)) => {
                    let new_id = new.nodes[n as usize].id.clone();
                    report.kept.push(info(old, id, Some(new_id.clone())));
                    if !state.is_nil() {
                        moved.insert(new_id, state);
                    }
                }
                None => report.dropped.push(info(old, id, None)),
            }
        }
    }
    // A running memory composite at its first child stores nothing (index
    // 0, the default): that child is followed like any stored index, so a
    // node inserted before it is not run.
    for id in &running {
        let Some(o) = old.find(id) else { continue };
        let at_first = old.nodes[o.index()].kind.traits().memory == Memory::Index
            && db.get(&memory_key).and_then(|m| m.get(id)).is_none();
        let Some(n) = map.get(o.0).filter(|_| at_first) else {
            continue;
        };
        let first = Value::map_from([(Value::Keyword(kw::INDEX), Value::Int(0))]);
        if let Some(state) = follow(&first, old, o.0, new, n, map)
            && !state.is_nil()
        {
            moved.insert(new.nodes[n as usize].id.clone(), state);
        }
    }
    if moved.is_empty() {
        if had_memory {
            db.shift_remove(&memory_key);
        }
    } else {
        db.insert(memory_key, Value::Map(Box::new(moved)));
    }
    // Completions not yet taken follow their node (seed 003: completions
    // are collected first, then an edit adapts the stored states).
    rekey_results(&mut db, old, new, map, &mut report);
    // Running nodes without memory are kept too.
    // A node whose memory was dropped is reported dropped, not also kept.
    for id in &running {
        if gone.contains(id)
            || report.kept.iter().any(|k| k.id == *id)
            || report.dropped.iter().any(|k| k.id == *id)
        {
            continue;
        }
        let new_id = old
            .find(id)
            .and_then(|o| map.get(o.0))
            .map(|n| new.nodes[n as usize].id.clone());
        report.kept.push(info(old, id, new_id));
    }
    // Like a tick, only a db with state records its tree.
    let has = |k| db.contains_key(&Value::Keyword(k));
    if has(kw::MEMORY) || has(kw::RUNNING) || has(kw::TREE) {
        stamp(&mut db, new);
    }
    (Value::Map(Box::new(db)), report)
}

/// Moves each completion under `:aido/results` to its node's new id. One
/// for a node that is gone stays under its id (the next tick drops and
/// reports it), unless a moved completion now takes that id: then the
/// migration reports it dropped. A `:aido/results` that is not a map is
/// left for the tick to report.
fn rekey_results(db: &mut Map, old: &Tree, new: &Tree, map: &NodeMap, report: &mut Migration) {
    let key = Value::Keyword(kw::RESULTS);
    if !matches!(db.get(&key), Some(Value::Map(_))) {
        return;
    }
    let Some(Ok(results)) = db.shift_remove(&key).map(Value::into_map) else {
        return;
    };
    let mut moved = Map::default();
    let mut stayed = Vec::new();
    for (id, completion) in results {
        match old.find(&id).and_then(|o| map.get(o.0)) {
            Some(n) => {
                moved.insert(new.nodes[n as usize].id.clone(), completion);
            }
            None => stayed.push((id, completion)),
        }
    }
    for (id, completion) in stayed {
        if moved.contains_key(&id) {
            report.dropped_results.push(DroppedResult {
                node: id,
                reason: DropReason::NotInFlight,
                completion,
            });
        } else {
            moved.insert(id, completion);
        }
    }
    if !moved.is_empty() {
        db.insert(key, Value::Map(Box::new(moved)));
    }
}

/// Records `tree`'s fingerprint in the db.
pub(crate) fn stamp(db: &mut Map, tree: &Tree) {
    db.insert(Value::Keyword(kw::TREE), Value::Int(tree.fingerprint()));
}

/// The memory `state` of old node `o`, rewritten for new node `n`: child
/// positions follow their children; `None` if a child it names is gone,
/// nil if the state became the default (which is not stored).
fn follow(state: &Value, old: &Tree, o: u32, new: &Tree, n: u32, map: &NodeMap) -> Option<Value> {
    let old_kids = old.children_of(&old.nodes[o as usize]);
    let new_kids = new.children_of(&new.nodes[n as usize]);
    // The new position of the old child at `i`.
    let position = |i: usize| -> Option<usize> {
        let c = map.get(*old_kids.get(i)?)?;
        new_kids.iter().position(|&k| k == c)
    };
    match old.nodes[o as usize].kind.traits().memory {
        Memory::Index => {
            let i = state.get(&Value::Keyword(kw::INDEX))?.as_int()?;
            let j = position(usize::try_from(i).ok()?)?;
            if j == 0 {
                // At the first child: the default, which is not stored.
                return Some(Value::Nil);
            }
            let mut m = state.as_map()?.clone();
            m.insert(Value::Keyword(kw::INDEX), Value::Int(j as i64));
            Some(Value::Map(Box::new(m)))
        }
        Memory::Done => match state.get(&Value::Keyword(kw::DONE)) {
            Some(Value::Vector(done)) => {
                let mut out = vec![Value::Nil; new_kids.len()];
                for (i, d) in done.iter().enumerate() {
                    if let Some(j) = position(i) {
                        out[j] = d.clone();
                    }
                }
                let mut m = state.as_map()?.clone();
                m.insert(Value::Keyword(kw::DONE), Value::Vector(out.into()));
                Some(Value::Map(Box::new(m)))
            }
            _ => Some(state.clone()),
        },
        Memory::Pool => {
            let state = follow_running_child(state, position)?;
            match state.get(&Value::Keyword(kw::POOL)) {
                Some(Value::Vector(pool)) => {
                    let moved = pool
                        .iter()
                        .filter_map(|i| position(usize::try_from(i.as_int()?).ok()?))
                        .map(|j| Value::Int(j as i64))
                        .collect();
                    let mut m = state.as_map()?.clone();
                    m.insert(Value::Keyword(kw::POOL), Value::Vector(moved));
                    Some(Value::Map(Box::new(m)))
                }
                _ => Some(state),
            }
        }
        Memory::RunningPick => follow_running_child(state, position),
        // Memory that names no child by position.
        Memory::Nothing
        | Memory::Iteration
        | Memory::Ticks
        | Memory::Launched
        | Memory::Decorator(_)
        | Memory::User { .. } => Some(state.clone()),
    }
}

/// A random decider's memory with its running child (`{:running i}`) moved
/// to where that child is now; `None` if the child is gone.
fn follow_running_child(state: &Value, position: impl Fn(usize) -> Option<usize>) -> Option<Value> {
    let key = Value::Keyword(kw::RUNNING_CHILD);
    let Some(i) = state.get(&key) else {
        return Some(state.clone());
    };
    let j = position(usize::try_from(i.as_int()?).ok()?)?;
    let mut m = state.as_map()?.clone();
    m.insert(key, Value::Int(j as i64));
    Some(Value::Map(Box::new(m)))
}

/// Carries `db` over to `tree` when the tree it was last ticked with is not
/// known: state is kept by node id where `tree` has that id and the memory
/// has the shape that node keeps (the node type it had cannot be checked);
/// memory that names children by position is dropped (its composite starts
/// afresh rather than resume at the wrong child); running nodes that are
/// gone are dropped from the running set (reported as halted; without the
/// old tree no hook can run).
pub(crate) fn migrate_by_id(db: &mut Map, tree: &Tree) -> Migration {
    let mut report = Migration::default();
    let node = |id: &Value, new_id: Option<Value>| MigratedNode {
        id: id.clone(),
        new_id,
        node_type: tree
            .find(id)
            .and_then(|n| tree.node_type(n))
            .unwrap_or_else(|| Keyword::new("aido/unknown")),
    };
    if let Some(Value::Vector(running)) = db.get_mut(&Value::Keyword(kw::RUNNING)) {
        running.retain(|id| {
            let here = tree.find(id).is_some();
            if !here {
                report.halted.push(node(id, None));
            }
            here
        });
        if running.is_empty() {
            db.shift_remove(&Value::Keyword(kw::RUNNING));
        }
    }
    if let Some(Value::Map(memory)) = db.get_mut(&Value::Keyword(kw::MEMORY)) {
        memory.retain(|id, state| {
            // The node under this id may be another one now: its memory is
            // kept only if it has the shape this node keeps. Memory that names
            // children by position cannot be trusted at all.
            let has = |k| state.get(&Value::Keyword(k)).is_some();
            let keep =
                tree.find(id)
                    .is_some_and(|n| match tree.nodes[n.index()].kind.traits().memory {
                        Memory::Ticks => has(kw::TICKS),
                        Memory::Launched => has(kw::LAUNCHED),
                        Memory::Iteration => has(kw::ITERATION),
                        Memory::User { .. } => true,
                        Memory::Decorator(_) => state.as_map().is_some(),
                        Memory::Nothing
                        | Memory::Index
                        | Memory::Done
                        | Memory::RunningPick
                        | Memory::Pool => false,
                    });
            if keep {
                report.kept.push(node(id, Some(id.clone())));
            } else {
                report.dropped.push(node(id, None));
            }
            keep
        });
        if memory.is_empty() {
            db.shift_remove(&Value::Keyword(kw::MEMORY));
        }
    }
    // A running composite whose memory was dropped starts afresh: its
    // running children are halted when they are not reached again.
    stamp(db, tree);
    report
}

/// Whether a node below node `i` can return Running (a `:wait`, a `:defer`,
/// a node type of the application's): only then does a reactive sequence,
/// a loop or a random decider above it keep memory.
fn runs_long_below(tree: &Tree, i: usize) -> bool {
    let end = tree.nodes[i].subtree_end as usize;
    tree.nodes
        .get(i + 1..end)
        .is_some_and(|below| below.iter().any(|n| n.kind.traits().runs_long))
}

/// The nodes of `tree` that keep state in the db (memory composites, policy
/// parallels, `:choose-each`, `:wait`, `:defer`, and, over children that can
/// run long, reactive sequences, loops and random deciders, which remember a
/// finished child, an iteration or a running pick) and have no explicit
/// `:id`: their id is derived from their position, so their state follows
/// them through an edit only as far as the nodes can be matched by place.
pub fn state_without_id(tree: &Tree) -> Vec<crate::tree::NodeIndex> {
    let forms = node_forms(tree);
    tree.nodes
        .iter()
        .enumerate()
        .filter(|(i, node)| {
            let stateful = match node.kind.traits().state {
                When::Always => true,
                When::IfLongBelow => runs_long_below(tree, *i),
                When::Never => false,
            };
            stateful && !has_explicit_id(forms.get(*i).copied())
        })
        .map(|(i, _)| crate::tree::NodeIndex(i as u32))
        .collect()
}
