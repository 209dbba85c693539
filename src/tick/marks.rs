//! Node memory's removals from a large map, marked and taken out together.
//!
//! Taking one entry out of `:aido/memory` moves every later entry
//! (`Map::shift_remove_index`), so a tick in which N waits end, or N halts
//! each take one entry out, moved N²/2 entries. In a tree where nothing but
//! the engine reads or writes node memory while a tick runs
//! (`Tree::reads_memory` unset: no user node type or function, no data node
//! or dynamic option whose key path can start at `:aido/memory`), a removal
//! from a map of [`MARK_FROM`] entries or more leaves `nil` in the entry's
//! place instead (its state recycled) and counts it on the long-running
//! state (`Long::memory_marked`). The engine takes a marked entry as absent
//! (`Engine::memory`, a halt's search node by node); a node whose memory is
//! written again takes its marked entry out and is pushed at the end, where
//! it went before; and the marked entries leave in one order-keeping pass:
//! at the end of the tick ([`Engine::settle_memory`], from the write-back),
//! or in the pass of a halt that goes over the whole map. The write-back
//! pays no test for it: the first mark of a tick raises the engine's
//! `results_maybe`, a test that only a tick whose db holds completions
//! passes, and whose work it then does (after the last halt). So the map a tick
//! leaves is the one that taking each entry out at once would have left,
//! in the same order, and nothing outside the engine sees a mark.
//!
//! A tree with such a reader takes each entry out at once, as the reader
//! must see: its removals from a large map stay quadratic in a tick.

use crate::tree::Kind;
use crate::value::{Map, Value, kw};

use super::Engine;
use super::halt::{NewMemory, recycle};

/// How many entries `:aido/memory` holds before a removal from it is
/// marked (see the module's documentation) instead of moving every later
/// entry: below it, the move is short.
pub(crate) const MARK_FROM: usize = 64;

#[cfg(test)]
thread_local! {
    /// The node memory entries that the engine's removals moved (or went
    /// over) on this thread: the tests' measure of their work.
    pub(crate) static MOVED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Counts `n` node memory entries moved or gone over by a removal (in
/// tests only).
#[inline(always)]
pub(crate) fn count_moved(n: usize) {
    #[cfg(test)]
    MOVED.with(|moved| moved.set(moved.get() + n));
    let _ = n;
}

/// Whether a node of `nodes` can read or write `:aido/memory` while a tick
/// runs, the engine aside: a user node type (handed the db, and its halt
/// hook too), or a data node whose key path (or `:into`) starts there. The
/// dynamic options (`[:aido/db ..]`, `[:aido/fn ..]`) are told by the
/// compiler as it lowers them (`Compiler::dynamic_reads_memory`).
pub(crate) fn reads_memory(nodes: &[crate::tree::Node]) -> bool {
    reserved_reach(nodes).1
}

/// Whether a node of `nodes` writes under `:aido/running` (see
/// `tick::halt::writes_running`), and whether one reads or writes
/// `:aido/memory` ([`reads_memory`]): one pass for both, which the compiler
/// makes over every tree.
pub(crate) fn reserved_reach(nodes: &[crate::tree::Node]) -> (bool, bool) {
    use crate::tree::KeyPath;
    // A key path's top key, compared in place with both.
    let top = |key: &KeyPath| {
        let k = match key {
            KeyPath::Kw(k, _) => Some(*k),
            KeyPath::One(Value::Keyword(k)) => Some(*k),
            KeyPath::Path(path) => match path.first() {
                Some(Value::Keyword(k)) => Some(*k),
                _ => None,
            },
            KeyPath::One(_) => None,
        };
        (k == Some(kw::RUNNING), k == Some(kw::MEMORY))
    };
    let none = (false, false);
    let either = |a: (bool, bool), b: (bool, bool)| (a.0 | b.0, a.1 | b.1);
    let (mut running, mut memory) = none;
    for node in nodes {
        let (r, m) = match &node.kind {
            Kind::Define { key, .. }
            | Kind::Inc { key }
            | Kind::Dissoc { key }
            | Kind::Emit { key, .. } => top(key),
            Kind::Typed(t) => top(t.write.key()),
            Kind::Matches(m) => {
                let into = m.into.as_ref().map_or(none, |t| top(&t.path));
                (into.0, into.1 | top(&m.key).1)
            }
            Kind::Defer { into, .. } => into.as_ref().map_or(none, |t| top(&t.path)),
            // Reads.
            Kind::Present { key } | Kind::Test { key, .. } => (false, top(key).1),
            Kind::Cooldown(c) => (false, c.key.as_ref().is_some_and(|k| top(k).1)),
            // Handed the db: caught when it returns for the running set
            // (`Engine::check_lent_db`).
            Kind::Custom { .. } => (false, true),
            // Options only (told by the compiler), or none.
            Kind::Success
            | Kind::Failure
            | Kind::Equal { .. }
            | Kind::Selector { .. }
            | Kind::Sequence { .. }
            | Kind::SelectorP { .. }
            | Kind::Loop { .. }
            | Kind::LoopUntilSuccess { .. }
            | Kind::Parallel(_)
            | Kind::Randomly { .. }
            | Kind::Choose
            | Kind::ChooseEach { .. }
            | Kind::WeightedChoice { .. }
            | Kind::Invert
            | Kind::Always
            | Kind::Never
            | Kind::Wait { .. }
            | Kind::WaitSeconds { .. }
            | Kind::Timeout { .. }
            | Kind::Retry { .. }
            | Kind::Repeat { .. }
            | Kind::RunOnce { .. }
            | Kind::Delay { .. }
            | Kind::Throttle { .. }
            | Kind::KeepRunningUntilFailure
            | Kind::Force { .. }
            | Kind::ParallelAll { .. }
            | Kind::If
            | Kind::Switch(_) => none,
        };
        (running, memory) = either((running, memory), (r, m));
    }
    (running, memory)
}

/// Whether key path `key` starts at `:aido/memory` (compared in place;
/// the compiler asks it of every `[:aido/db ..]`; out of line, so that
/// the compiler's lowering keeps its shape).
#[inline(never)]
pub(crate) fn starts_at_memory(key: &crate::tree::KeyPath) -> bool {
    use crate::tree::KeyPath;
    let memory = |v: &Value| matches!(v, Value::Keyword(k) if *k == kw::MEMORY);
    match key {
        KeyPath::Kw(k, _) => *k == kw::MEMORY,
        KeyPath::One(v) => memory(v),
        KeyPath::Path(path) => path.first().is_some_and(memory),
    }
}

/// Marks entry `i` of node memory `memory` removed: its state recycled and
/// `nil` left in its place, so that no later entry moves, and counted in
/// `marked`. An entry marked already is left as it is. Whether every entry
/// is now marked: the count is then zero again, and the caller takes the
/// map out.
pub(crate) fn mark_removed(marked: &mut u32, memory: &mut Map, i: usize) -> bool {
    let Some(state) = memory.value_at_mut(i) else {
        return false;
    };
    if !(state.is_nil() && *marked > 0) {
        recycle(std::mem::take(state));
        *marked += 1;
    }
    if (*marked as usize) < memory.len() {
        return false;
    }
    // The count is checked before the map goes: an entry taken out
    // otherwise (a reactive sequence's marks) may have left it high.
    count_moved(memory.len());
    let nils = memory.values().filter(|v| v.is_nil()).count();
    if nils == memory.len() {
        *marked = 0;
        return true;
    }
    *marked = nils as u32;
    false
}

impl Engine<'_> {
    /// Whether entries of `:aido/memory` are marked removed in this tick.
    #[inline(always)]
    pub(crate) fn memory_marked(&self) -> bool {
        self.long.as_deref().is_some_and(|l| l.memory_marked > 0)
    }

    /// Whether this tick may mark removals from node memory: the tree has
    /// no reader of it but the engine, the tick has its long-running state
    /// (where the marks are counted), and its end writes back.
    #[inline(always)]
    pub(crate) fn may_mark_memory(&self) -> bool {
        !self.tree.reads_memory && !self.keep_running && self.long.is_some()
    }

    /// Takes entry `i` out of node memory, a map of [`MARK_FROM`] entries or
    /// more at position `at` of the db: marked when the tick may mark,
    /// else shifted out.
    #[cold]
    #[inline(never)]
    pub(crate) fn remove_large_memory(&mut self, at: usize, i: usize) {
        let may_mark = self.may_mark_memory();
        let Some((_, Value::Map(memory))) = self.db.get_index_mut(at) else {
            return;
        };
        let gone = match self.long.as_deref_mut() {
            Some(long) if may_mark => {
                if !self.results_maybe {
                    self.results_maybe = true;
                    long.marks_raised_results = true;
                }
                mark_removed(&mut long.memory_marked, memory, i)
            }
            _ => {
                count_moved(memory.len().saturating_sub(i + 1));
                if let Some((_, old)) = memory.shift_remove_index(i) {
                    recycle(old);
                }
                memory.is_empty()
            }
        };
        if gone {
            self.remove_long_key(at);
        }
    }

    /// Writes `state` as the memory of `node`, whose entry is `i` in node
    /// memory, a map of [`MARK_FROM`] entries or more at position `at` of
    /// the db: over the old state, or, when the entry is marked removed,
    /// as a new entry at the end (where taking it out at once and writing
    /// it again puts it), the marked one taken out alone.
    #[cold]
    #[inline(never)]
    pub(crate) fn write_large_memory(&mut self, at: usize, i: usize, node: u32, state: NewMemory) {
        let tree = self.tree;
        let n = &tree.nodes[node as usize];
        let Value::Map(memory) = &mut self.db[at] else {
            return;
        };
        match self.long.as_deref_mut() {
            Some(long) if long.memory_marked > 0 && memory[i].is_nil() => {
                count_moved(memory.len().saturating_sub(i + 1));
                memory.shift_remove_index(i);
                long.memory_marked -= 1;
                let pushed = memory.push(n.id.clone(), state.into_value());
                n.memory_hint.remember(Some(pushed));
            }
            _ => state.write_over(&mut memory[i], drop),
        }
    }

    /// Takes the entries of `:aido/memory` marked removed in this tick out,
    /// in one order-keeping pass: at the end of the tick, from the
    /// write-back's test of `results_maybe` (after the last halt), which
    /// the first mark raised if the db had no completions. Whether it did:
    /// then the write-back has no completions to deal with.
    #[inline(always)]
    pub(crate) fn settle_memory(&mut self) -> bool {
        match self.long.as_deref() {
            Some(long) if long.marks_raised_results || long.memory_marked != 0 => {
                self.settle_marks()
            }
            _ => false,
        }
    }

    /// [`Engine::settle_memory`] when the tick marked entries.
    #[cold]
    #[inline(never)]
    fn settle_marks(&mut self) -> bool {
        let Some(long) = self.long.as_deref_mut() else {
            return false;
        };
        let raised = std::mem::take(&mut long.marks_raised_results);
        let marked = std::mem::take(&mut long.memory_marked) != 0;
        let tree = self.tree;
        if marked
            && let Some(at) = tree.memory_key_hint.find(self.db, kw::MEMORY)
            && let Some((_, Value::Map(memory))) = self.db.get_index_mut(at)
        {
            count_moved(memory.len());
            memory.retain(|_, state| !state.is_nil());
            if memory.is_empty() {
                self.remove_long_key(at);
            }
        }
        raised
    }
}

#[cfg(test)]
mod tests {
    use super::MOVED;
    use crate::extend::{Arity, NodeType};
    use crate::record::{Recorder, TimelineOptions, timeline};
    use crate::tick::{Status, TickOptions, run_tick_traced};
    use crate::{Registry, Tree, Value, compile_str};

    /// The node memory entries that the engine's removals moved (or went
    /// over) while `f` ran on this thread.
    fn moved_by(f: impl FnOnce()) -> usize {
        let before = MOVED.with(std::cell::Cell::get);
        f();
        MOVED.with(std::cell::Cell::get) - before
    }

    fn reads(text: &str, registry: &Registry) -> bool {
        compile_str("t", text, registry).unwrap().reads_memory
    }

    #[test]
    fn a_tree_reads_node_memory_by_user_code_or_a_key_path_that_starts_there() {
        let plain = Registry::new();
        // Nothing but the engine: the waits' memory, other keys, the
        // standard functions.
        assert!(!reads(
            "[:parallel {:policy :sequence} [:wait {:ticks 1}] [:present? {:key [:m :aido/memory]}]
              [:define! {:key :x :val [:aido/fn + 1 [:aido/db :y]]}]
              [:define! {:key :x :val [:aido/db :m [:aido/db :k]]}]]",
            &plain
        ));
        // A user node type, handed the db.
        let mut with_node = Registry::new();
        with_node
            .node_type(NodeType::new("t/n").tick(|_| Ok(Status::Success)))
            .unwrap();
        assert!(reads("[:sequence [:wait {:ticks 1}] [:t/n]]", &with_node));
        // A user function, handed the db.
        let mut with_fn = Registry::new();
        with_fn
            .function("t/f", Arity::Exactly(0), |_, _| Ok(Value::Nil))
            .unwrap();
        assert!(reads(
            "[:sequence [:wait {:ticks 1}] [:define! {:key :x :val [:aido/fn t/f]}]]",
            &with_fn
        ));
        // A data node whose key path starts at `:aido/memory`, reading or
        // writing.
        assert!(reads("[:present? {:key :aido/memory}]", &plain));
        assert!(reads("[:dissoc! {:key :aido/memory}]", &plain));
        assert!(reads("[:define! {:key :aido/memory :val {}}]", &plain));
        // A dynamic option reading it: the whole map, under it, through a
        // function's arguments, or by a top key worked out when ticked.
        for val in [
            "[:aido/db :aido/memory]",
            "[:aido/db :aido/memory \"0\" :ticks]",
            "[:aido/db :aido/memory [:aido/db :k]]",
            "[:aido/db [:aido/db :k]]",
            "[:aido/fn count [:aido/db :aido/memory]]",
        ] {
            let text = format!("[:define! {{:key :x :val {val}}}]");
            assert!(reads(&text, &plain), "{val}");
        }
        assert!(reads(
            "[:wait {:ticks [:aido/db :aido/memory \"0\" :ticks]}]",
            &plain
        ));
    }

    /// `body` with `PROBE` made a leaf that copies an absent key, in a tree
    /// that marks removals, and in its twin, whose probe reads under
    /// `:aido/memory` (the same nil): the twin takes each entry out at
    /// once.
    fn twins(body: &str) -> (Tree, Tree) {
        let registry = Registry::new();
        let plain = body.replace(
            "PROBE",
            "[:define! {:key :seen :val [:aido/db :m :absent]}]",
        );
        let reader = body.replace(
            "PROBE",
            "[:define! {:key :seen :val [:aido/db :aido/memory :absent]}]",
        );
        let plain = compile_str("t", &plain, &registry).unwrap();
        let reader = compile_str("t", &reader, &registry).unwrap();
        assert!(!plain.reads_memory && reader.reads_memory);
        (plain, reader)
    }

    /// `n` copies of `child`, one a line.
    fn times(n: usize, child: &str) -> String {
        vec![child; n].join("\n")
    }

    /// Each tick of `tree` (`:stop` set from the second on), traced and
    /// recorded: the dbs as printed, the traces, the timeline, and the
    /// entries moved.
    fn run(tree: &Tree, ticks: usize) -> (Vec<String>, Vec<String>, String, usize) {
        let mut db = Value::map();
        let mut recorded = Value::map();
        let mut recorder = Recorder::new(tree, &db);
        let (mut dbs, mut traces) = (Vec::new(), Vec::new());
        let mut moved = 0;
        for tick in 0..ticks {
            if tick == 1 {
                for db in [&mut db, &mut recorded] {
                    if let Value::Map(m) = db {
                        m.insert(Value::keyword("stop"), Value::Bool(true));
                    }
                }
            }
            let mut trace = Vec::new();
            moved += moved_by(|| {
                db = run_tick_traced(db.clone(), tree, &TickOptions::default(), &mut trace).db;
            });
            // No mark is left in the db.
            if let Some(Value::Map(memory)) = db.get(&Value::keyword("aido/memory")) {
                assert!(memory.values().all(|v| !v.is_nil()), "{db}");
            }
            // The twins' fingerprints differ: left out.
            let mut shown = db.clone();
            if let Value::Map(m) = &mut shown {
                m.shift_remove(&Value::keyword("aido/tree"));
            }
            dbs.push(shown.to_string());
            traces.push(format!("{trace:?}"));
            recorded = recorder.tick(recorded, tree).db;
            assert_eq!(recorded.to_string(), db.to_string());
        }
        let run = recorder.finish();
        (
            dbs,
            traces,
            timeline(&run, &TimelineOptions::default()),
            moved,
        )
    }

    /// Ticks the twins of `body` and checks that they leave the same dbs
    /// (node memory in the same order), traces and timelines; the entries
    /// each moved.
    fn same_as_taken_out_at_once(body: &str, ticks: usize) -> (usize, usize) {
        let (plain, reader) = twins(body);
        let (dbs, traces, timeline, marked) = run(&plain, ticks);
        let (dbs_at_once, traces_at_once, timeline_at_once, at_once) = run(&reader, ticks);
        assert_eq!(dbs, dbs_at_once);
        assert_eq!(traces, traces_at_once);
        assert_eq!(timeline, timeline_at_once);
        (marked, at_once)
    }

    #[test]
    fn marked_removals_leave_the_memory_that_taking_each_out_at_once_leaves() {
        // Waits ending beside waits running on; waits ending and written
        // again in the same tick (a loop starts them anew), beside others;
        // selectors each halting its own wait; a halt of a subtree smaller
        // than the map after marks (found node by node), and of one larger
        // than it (a pass over the whole map), each traced and recorded.
        let bodies = [
            format!(
                "[:parallel {{:policy :sequence}} {} PROBE]",
                times(70, "[:wait {:ticks 1}] [:wait {:ticks 3}]")
            ),
            format!(
                "[:parallel {{:policy :sequence}} {} {} PROBE]",
                times(70, "[:loop {:count 2} [:wait {:ticks 1}]]"),
                times(5, "[:wait {:ticks 9}]")
            ),
            format!(
                "[:parallel {{:policy :sequence}} {} {} PROBE]",
                times(
                    70,
                    "[:selector [:present? {:key :stop}] [:wait {:ticks 5}]]"
                ),
                times(5, "[:wait {:ticks 9}]")
            ),
            format!(
                "[:parallel {{:policy :sequence}} {} [:selector [:present? {{:key :stop}}] [:parallel {{:policy :sequence}} {}]] [:wait {{:ticks 9}}] PROBE]",
                times(70, "[:wait {:ticks 1}]"),
                times(
                    20,
                    "[:wait {:ticks 5}] [:delay {:ticks 3} [:wait {:ticks 4}]]"
                )
            ),
            format!(
                "[:parallel {{:policy :sequence}} {} [:selector [:present? {{:key :stop}}] [:parallel {{:policy :sequence}} {}]] [:wait {{:ticks 9}}] PROBE]",
                times(70, "[:wait {:ticks 1}]"),
                times(100, "[:wait {:ticks 5}]")
            ),
        ];
        for body in &bodies {
            let (marked, at_once) = same_as_taken_out_at_once(body, 5);
            assert!(marked <= at_once, "{marked} > {at_once}");
        }
    }

    #[test]
    fn waits_ending_or_halted_one_by_one_move_each_memory_entry_at_most_once_a_tick() {
        // Each wait's entry is the first of `:aido/memory` when it goes:
        // taken out at once, each moved every later entry (n²/2 a tick);
        // marked, they leave together, in one pass (or with the map).
        for n in [1_000, 2_000] {
            for (child, ticks) in [
                ("[:wait {:ticks 1}] [:wait {:ticks 3}]", 3),
                ("[:selector [:present? {:key :stop}] [:wait {:ticks 5}]]", 2),
            ] {
                let body = format!(
                    "[:parallel {{:policy :sequence}} {} [:wait {{:ticks 9}}] PROBE]",
                    times(n, child)
                );
                let (plain, reader) = twins(&body);
                let (_, _, _, marked) = run(&plain, ticks);
                let (_, _, _, at_once) = run(&reader, ticks);
                assert!(marked <= 4 * n, "{n}: {marked}");
                assert!(at_once >= n * n / 4, "{n}: {at_once}");
            }
        }
    }
}
