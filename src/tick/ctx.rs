//! What user node types and functions see of a tick in progress.

use std::borrow::Cow;

use crate::extend::{KeySlot, NodeError, OptSlot, SlotValue};
use crate::rng::Rng;
use crate::tree::scalar::tagged as scalar_tagged;
use crate::tree::{KeyPath, Kind, Opt, Slot};
use crate::value::{Keyword, Map, Value, kw};

use super::{Engine, Status, eval};

/// The error of asking a node type for an option it does not declare.
#[cold]
#[inline(never)]
fn undeclared_option(node_type: &crate::extend::NodeType, name: &str) -> NodeError {
    let declared: Vec<String> = node_type
        .options
        .iter()
        .map(|o| format!("`:{}`", o.name))
        .collect();
    let declared = if declared.is_empty() {
        "none".to_owned()
    } else {
        declared.join(", ")
    };
    NodeError(format!(
        "node type `{}` declares no option `:{name}` (it declares {declared})",
        node_type.name
    ))
}

/// The error of reading a slot that another node type declared.
#[cold]
#[inline(never)]
fn foreign_slot(node_type: &crate::extend::NodeType, key: Keyword) -> NodeError {
    NodeError(format!(
        "node type `{}` read the slot of option `{key}` that another node type declared",
        node_type.name
    ))
}

/// The error of a dynamic option whose value its slot cannot read.
#[cold]
#[inline(never)]
fn unreadable(key: Keyword, value: &Value, ty: &crate::spec::OptionType) -> NodeError {
    match ty.check(value) {
        Err(e) => NodeError(format!("option `{key}` {e}")),
        Ok(()) => NodeError(format!(
            "option `{key}` is {}, which its slot does not read",
            crate::spec::describe(value)
        )),
    }
}

/// [`NodeCtx::db_at`] of a key that is not a keyword, a path, or a slot
/// of another node type, in `db` for a node whose declared options are
/// `slots` (given apart, so that the context's address is not taken).
#[cold]
#[inline(never)]
fn db_at_other<'a>(db: &'a Map, slots: &'a [Slot], slot: KeySlot) -> Option<&'a Value> {
    match slots.get(slot.index as usize) {
        Some(
            found @ Slot {
                path: Some(path), ..
            },
        ) if found.key() == slot.key => path.get(db),
        _ => None,
    }
}

/// [`NodeCtx::get`] of any option, and its errors: node `node`'s
/// option in `slot`.
#[cold]
#[inline(never)]
fn get_any<T: SlotValue>(
    engine: &mut Engine<'_>,
    node: u32,
    slot: OptSlot<T>,
) -> Result<T, NodeError> {
    let tree = engine.tree;
    let Some(Kind::Custom { node_type, options }) = tree.nodes.get(node as usize).map(|n| &n.kind)
    else {
        return Err(NodeError("not a node of a registered node type".to_owned()));
    };
    let index = slot.index as usize;
    let (spec, found) = match (node_type.options.get(index), options.slots().get(index)) {
        (Some(spec), Some(found)) if spec.key == slot.key && found.key() == slot.key => {
            (spec, found)
        }
        _ => return Err(foreign_slot(node_type, slot.key)),
    };
    match &found.opt {
        // A constant was checked against its declared type when the tree
        // was compiled: read in place.
        Some(Opt::Const(v)) => {
            if v.is_heavy() {
                engine.rng.charge_value(v, 0).map_err(NodeError)?;
            }
            T::from_option(Some(v)).ok_or_else(|| unreadable(slot.key, v, &spec.ty))
        }
        Some(opt) => {
            let value = eval(opt, engine.db, &mut engine.rng).map_err(NodeError)?;
            if let Cow::Borrowed(v) = &value
                && v.is_heavy()
            {
                // Handing the node a copy of a collection or string is work.
                engine.rng.charge_value(v, 0).map_err(NodeError)?;
            }
            spec.ty
                .check(&value)
                .map_err(|e| NodeError(format!("option `{}` {e}", slot.key)))?;
            T::from_option(Some(&value)).ok_or_else(|| unreadable(slot.key, &value, &spec.ty))
        }
        None => T::from_option(None)
            .ok_or_else(|| NodeError(format!("the node has no option `{}`", slot.key))),
    }
}

/// The view a user node type's tick function has of the tick: the db, the
/// node's options and children, its memory and the random generator.
pub struct NodeCtx<'e, 't> {
    pub(crate) engine: &'e mut Engine<'t>,
    pub(crate) node: u32,
    /// The node's declared options, by their slots' indices (empty for a
    /// node that is not of a registered node type).
    pub(crate) slots: &'e [Slot],
    /// Whether the db was handed out to change ([`NodeCtx::db_mut`]): what
    /// was written is measured when the user code returns.
    pub(crate) db_lent: bool,
}

impl<'e, 't> NodeCtx<'e, 't> {
    /// The view of node `node` for its user code.
    pub(crate) fn new(engine: &'e mut Engine<'t>, node: u32) -> NodeCtx<'e, 't> {
        let tree: &'t crate::tree::Tree = engine.tree;
        let slots = match tree.nodes.get(node as usize).map(|n| &n.kind) {
            Some(Kind::Custom { options, .. }) => options.slots(),
            _ => &[],
        };
        NodeCtx {
            engine,
            node,
            slots,
            db_lent: false,
        }
    }
}

impl<'e> NodeCtx<'e, '_> {
    /// The db as it is now.
    pub fn db(&self) -> &Map {
        self.engine.db
    }

    /// The db, to change. A value left nesting deeper than the reader reads
    /// ([`crate::read::MAX_DEPTH`], the db map counted) ends the tick in
    /// Error ([`super::TickErrorKind::TooDeep`]) when the node returns.
    pub fn db_mut(&mut self) -> &mut Map {
        self.db_lent = true;
        // The tick cannot say which keys the node changes.
        self.engine.wrote_anything();
        self.engine.db
    }

    /// Sets the top-level `key` of the db to `value`, as
    /// `ctx.db_mut().insert(key, value)` does, but noting only that key as
    /// written (see `writes.rs`). The value is measured when the node
    /// returns, as after [`NodeCtx::db_mut`].
    pub(crate) fn insert_db(&mut self, key: Value, value: Value) {
        self.db_lent = true;
        if let Some(writes) = self.engine.writes() {
            writes.top(&key);
        }
        self.engine.db.insert(key, value);
    }

    /// The working memory passed to `run_tick_with`, if any.
    pub fn locals(&self) -> Option<&Value> {
        self.engine.db.get(&Value::Keyword(kw::LOCALS))
    }

    /// This node's stable id.
    pub fn node_id(&self) -> &Value {
        &self.engine.tree.nodes[self.node as usize].id
    }

    /// The node's option in `slot` (declared with
    /// [`NodeType::slot`](crate::extend::NodeType::slot)): a constant is read
    /// in place, a dynamic option (`[:aido/db ..]`, `[:aido/fn ..]`) is
    /// resolved now and checked against the declared type. A slot of another
    /// node type is an error.
    #[inline]
    pub fn get<T: SlotValue>(&mut self, slot: OptSlot<T>) -> Result<T, NodeError> {
        // The usual case, a constant of a scalar type (checked against its
        // declared type when the tree was compiled: see `Slot::tagged`), or
        // an optional one not given, is read here by one comparison; so is
        // a constant of another type that is not work to copy, or an
        // option not given; everything else (as these too) by `get_any`.
        if let Some(found) = self.slots.get(slot.index as usize) {
            if T::SCALAR_CODE != crate::tree::scalar::NONE {
                if found.tagged == slot.tagged
                    && let Some(value) = T::from_bits(found.bits)
                {
                    return Ok(value);
                }
                if !T::REQUIRED
                    && found.tagged == scalar_tagged(slot.key, crate::tree::scalar::ABSENT)
                    && let Some(value) = T::from_option(None)
                {
                    return Ok(value);
                }
            } else if found.key() == slot.key {
                match &found.opt {
                    Some(Opt::Const(v)) if !v.is_heavy() => {
                        if let Some(value) = T::from_option(Some(v)) {
                            return Ok(value);
                        }
                    }
                    None => {
                        if let Some(value) = T::from_option(None) {
                            return Ok(value);
                        }
                    }
                    Some(_) => {}
                }
            }
        }
        // The context's fields given apart, so that its address is not
        // taken and they stay in registers on the usual path.
        get_any(&mut *self.engine, self.node, slot)
    }

    /// The db's value at the key path in `slot` (declared with
    /// [`NodeType::key_slot`](crate::extend::NodeType::key_slot)), if there is
    /// one: a keyword key is found through the node's look-up hint, as the
    /// built-in nodes find theirs. `None` too for a slot of another node type.
    #[inline]
    pub fn db_at(&self, slot: KeySlot) -> Option<&Value> {
        // A keyword key, the usual case, is told by one test of the path's
        // kind and found through its hint (`KeyPath::get`); anything else
        // by `db_at_other`.
        if let Some(
            found @ Slot {
                path: Some(path @ KeyPath::Kw(..)),
                ..
            },
        ) = self.slots.get(slot.index as usize)
            && found.key() == slot.key
        {
            return path.get(self.engine.db);
        }
        db_at_other(self.engine.db, self.slots, slot)
    }

    /// Sets the db's value at the key path in `slot`; the maps on the way
    /// are made as needed. A path through a value that is not a map, a value
    /// nesting deeper than the reader reads, and a slot of another node type
    /// are errors. Only the value written is measured (a string or a
    /// collection counts against the work budget, as `:define!`'s do), not
    /// the whole db as after [`NodeCtx::db_mut`].
    pub fn set_db_at(&mut self, slot: KeySlot, value: Value) -> Result<(), NodeError> {
        let path = self.key_path(slot)?;
        if value.is_heavy() {
            self.engine
                .rng
                .charge_value(&value, path.n_keys() + 1)
                .map_err(NodeError)?;
        }
        self.engine.wrote_at(path);
        let place = path
            .slot(self.engine.db)
            .map_err(|e| NodeError(format!("cannot write at `{path}`: {e}")))?;
        *place = value;
        Ok(())
    }

    /// The key path in `slot` for this node.
    #[inline(always)]
    fn key_path(&self, slot: KeySlot) -> Result<&'e KeyPath, NodeError> {
        match self.slots.get(slot.index as usize) {
            Some(
                found @ Slot {
                    path: Some(path), ..
                },
            ) if found.key() == slot.key => Ok(path),
            _ => Err(self.not_its_slot(slot.key)),
        }
    }

    /// What the node's call comes to when its tick returned `status`: the
    /// usual return (the db not handed out, not Running, no error
    /// anywhere) is one test; anything else is `Engine::custom_result`,
    /// out of line, which checks the db, settles the errors and tells a
    /// Running node that is declared to finish in one visit from one
    /// that may run.
    #[inline(always)]
    pub(crate) fn returned(&mut self, status: Status) -> Status {
        let engine = &mut *self.engine;
        // The four tests combined without a branch each (`&`, not `&&`).
        if !self.db_lent
            & engine.error.is_none()
            & (status != Status::Running)
            & engine.rng.error.is_none()
        {
            status
        } else {
            engine.custom_result(self.node, status, self.db_lent)
        }
    }

    /// The error of reading the slot of option `key`, which this node's
    /// type does not declare where the slot says.
    #[cold]
    #[inline(never)]
    fn not_its_slot(&self, key: Keyword) -> NodeError {
        match self
            .engine
            .tree
            .nodes
            .get(self.node as usize)
            .map(|n| &n.kind)
        {
            Some(Kind::Custom { node_type, .. }) => foreign_slot(node_type, key),
            _ => NodeError("not a node of a registered node type".to_owned()),
        }
    }

    /// The option `key` (e.g. `"beverage"`), resolved now if it is dynamic;
    /// `None` if the node does not have it.
    ///
    /// The name is matched against the node type's declared options by
    /// text, without the keyword interner's lock; only a node type with open
    /// options looks an undeclared name up in the interner. A name the node
    /// type does not declare (and whose options are not open) is a typo in
    /// the code: an error, which ends the tick in Error naming the node, never
    /// a silent `None`; but it is found only at the first tick that asks.
    /// Declare the option with
    /// [`NodeType::slot`](crate::extend::NodeType::slot) and read it with
    /// [`NodeCtx::get`] instead: the name is then written once, when the node
    /// type is built, and the slot reads a constant without a look-up.
    #[deprecated(
        since = "0.1.0",
        note = "declare the option with `NodeType::slot` and read it with `NodeCtx::get`"
    )]
    pub fn option(&mut self, key: &str) -> Result<Option<Value>, NodeError> {
        let name = key.trim_start_matches(':');
        let tree = self.engine.tree;
        let Kind::Custom { options, node_type } = &tree.nodes[self.node as usize].kind else {
            return Ok(None);
        };
        let spec = node_type.options.iter().find(|o| o.name == name);
        let key = match spec {
            Some(spec) => spec.key,
            None if node_type.open_options => match Keyword::existing(name) {
                Some(k) => k,
                None => return Ok(None),
            },
            None => return Err(undeclared_option(node_type, name)),
        };
        let Some((_, opt)) = options.iter().find(|(k, _)| *k == key) else {
            return Ok(None);
        };
        let engine = &mut *self.engine;
        if let Opt::Const(v) = opt {
            // A constant was checked against its declared type when the tree
            // was compiled: handed over without resolving or checking it again.
            if v.is_heavy() {
                engine.rng.charge_value(v, 0).map_err(NodeError)?;
            }
            return Ok(Some(v.clone()));
        }
        let value = eval(opt, engine.db, &mut engine.rng).map_err(NodeError)?;
        if let Cow::Borrowed(v) = &value
            && v.is_heavy()
        {
            // Handing the node a copy of a collection or string is work.
            engine.rng.charge_value(v, 0).map_err(NodeError)?;
        }
        if let Some(spec) = spec {
            spec.ty
                .check(&value)
                .map_err(|e| NodeError(format!("option `{key}` {e}")))?;
        }
        Ok(Some(match value {
            Cow::Borrowed(v) => v.clone(),
            Cow::Owned(v) => v,
        }))
    }

    /// How many children the node has.
    pub fn n_children(&self) -> usize {
        let (start, end) = self.engine.tree.nodes[self.node as usize].children;
        (end - start) as usize
    }

    /// Ticks child `i`. An Error from the child makes the whole tick end in
    /// Error, whatever this node returns.
    pub fn tick_child(&mut self, i: usize) -> Status {
        if self.engine.in_hook {
            return self
                .engine
                .fail(self.node, "a halt or lifecycle hook cannot tick children");
        }
        let (start, end) = self.engine.tree.nodes[self.node as usize].children;
        // `i` comes from user code: check it against the number of children
        // before adding, so that a huge `i` cannot wrap into another subtree.
        let child = (i < (end - start) as usize)
            .then(|| self.engine.tree.child_ids.get(start as usize + i))
            .flatten();
        match child {
            Some(&child) => self.engine.tick(child),
            None => self.engine.fail(self.node, format!("no child {i}")),
        }
    }

    /// This node's memory (kept in the db between ticks), if it has any.
    pub fn memory(&self) -> Option<&Value> {
        self.engine.memory(self.node)
    }

    /// Sets this node's memory; `None` clears it (the default state is not
    /// stored). Memory nesting deeper than the reader reads, where it is
    /// stored (`{:aido/memory {id state}}` in the db), is refused.
    pub fn set_memory(&mut self, state: Option<Value>) -> Result<(), NodeError> {
        let limit = crate::read::MAX_DEPTH - 3;
        if let Some(depth) = state.as_ref().and_then(|s| s.depth_beyond(limit)) {
            return Err(NodeError(format!(
                "the memory would nest {} deep in the db, more than {}",
                depth + 3,
                crate::read::MAX_DEPTH
            )));
        }
        self.engine.set_memory(self.node, state).map_err(NodeError)
    }

    /// A random float in `[0, 1)` from the tick's (seeded) generator.
    pub fn random(&mut self) -> f64 {
        self.engine.rng.next_f64(self.engine.db)
    }

    /// A random integer in `[0, n)`; 0 when `n` is 0.
    pub fn random_below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.engine.rng.below(self.engine.db, n)
        }
    }

    /// The tick's generator as a `rand_core::Rng`, for `rand`'s API
    /// (cargo feature `rand`): the same seeded stream as [`NodeCtx::random`].
    #[cfg(feature = "rand")]
    #[cfg_attr(docsrs, doc(cfg(feature = "rand")))]
    pub fn rng(&mut self) -> crate::rng::TickRng<'_> {
        crate::rng::TickRng {
            rng: &mut self.engine.rng,
            db: &*self.engine.db,
        }
    }
}

/// The view a registered function has of the tick: the db (read-only) and
/// the random generator.
pub struct FnCtx<'a> {
    pub(crate) db: &'a Map,
    pub(crate) rng: &'a mut Rng,
}

impl FnCtx<'_> {
    /// The db as it is now.
    pub fn db(&self) -> &Map {
        self.db
    }

    /// A random float in `[0, 1)` from the tick's (seeded) generator.
    pub fn random(&mut self) -> f64 {
        self.rng.next_f64(self.db)
    }

    /// A random integer in `[0, n)`; 0 when `n` is 0.
    pub fn random_below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.rng.below(self.db, n)
        }
    }

    /// The tick's generator as a `rand_core::Rng`, for `rand`'s API
    /// (cargo feature `rand`): the same seeded stream as [`FnCtx::random`].
    #[cfg(feature = "rand")]
    #[cfg_attr(docsrs, doc(cfg(feature = "rand")))]
    pub fn rng(&mut self) -> crate::rng::TickRng<'_> {
        crate::rng::TickRng {
            rng: &mut *self.rng,
            db: self.db,
        }
    }
}
