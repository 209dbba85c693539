//! The [`Recorder`]: ticks traced and recorded as they are run, built in
//! storage kept across ticks.
//!
//! What a tick costs the record is what it changed. The trace goes into a
//! buffer kept from tick to tick; a tick traced as a recent one was (the
//! usual case of a steady run) shares that tick's list of visits after one
//! comparison of the traces, and a tick whose trace has no halt and no skip
//! gives no events from it; the keys a tick wrote are put in the order of
//! their text once for each order they come in; the changes go to the end
//! of the run's one list of changes ([`RunRecord::changes`]), each tick's
//! record naming its range. A steady tick then allocates nothing but the
//! record's growth (its list of ticks and its list of changes, each doubling
//! now and then).

use std::sync::Arc;

use super::{
    DbChange, Event, Room, RunRecord, TickEntry, TickNotes, Ticks, TreeRecord, Visit, diff_into,
    diff_keys, push_change, sort_by_key_text,
};
use crate::tick::{
    DEFAULT_OPTIONS, Status, Tick, TickOptions, TraceEvent, Writes, leaf_path, run_tick_noting,
    run_tick_traced,
};
use crate::tree::{NodeIndex, Tree};
use crate::value::{Keyword, Map, Value};

/// Records ticks as they are run.
///
/// Tick through [`Recorder::tick`] (or tick with [`TickOptions::trace`] on
/// and hand each tick to [`Recorder::record`]); tell it about inputs with
/// [`Recorder::input`] and about trims, reloads and notes with
/// [`Recorder::event`] before the tick they precede.
///
/// What a tick costs the record is what it changed: the trace, the tick's
/// visits and the keys it wrote are handled in buffers kept across ticks, a
/// tick that visits the nodes a recent one did shares its list of visits,
/// the changes of every tick go into one list that grows at its end, and
/// the db is compared with a copy kept up to date by the changes alone (an
/// append or a small edit copies what was added or edited, never the whole
/// value).
///
/// By default every value of the db is compared with the copy at every
/// tick, so that a host may change the db between ticks as it likes. A
/// host that tells the recorder of every change between ticks makes it
/// [`Recorder::comparing_written_keys`]: then only the keys the tick wrote
/// and the keys of the inputs are compared, and a tick costs the record
/// what it wrote, whatever the size of the db.
#[derive(Debug)]
pub struct Recorder {
    run: RunRecord,
    /// The db as the last tick left it (or the starting db), kept equal to
    /// it by applying each tick's changes.
    last_db: Map,
    input: Option<Map>,
    events: Vec<Event>,
    /// Room for the changes of a db compared in full, before they go into
    /// the record's compact list (kept across ticks).
    compared: Vec<DbChange>,
    /// The trace of [`Recorder::tick`]'s ticks, cleared and filled each tick.
    trace: Vec<TraceEvent>,
    /// By node index, the node's place in `marks` this tick (`u32::MAX`
    /// when not visited); put back to `u32::MAX` after each tick.
    slots: Vec<u32>,
    /// A tick's visits, without their ids, built here when no recent tick
    /// was traced alike: a list of [`Visit`]s is made only when no recent
    /// tick's list is alike either.
    marks: Vec<Mark>,
    /// The traces of the last few ticks that were traced differently, with
    /// the lists of visits made of them, oldest first.
    recent: Vec<Recent>,
    /// Whether the host tells every change between ticks
    /// ([`Recorder::comparing_written_keys`]).
    told: bool,
    /// The top-level keys the tick run here wrote, noted by the engine
    /// (kept across ticks).
    writes: Writes,
    /// Whether `writes` holds the notes of the tick about to be recorded.
    noted: bool,
    /// The keys changed since the last tick recorded, as told (inputs), or
    /// that anything may have changed ([`Recorder::db_changed`]).
    between: Writes,
    /// Whether the tick run here ([`Recorder::run_tick`]) left its trace in the
    /// recorder's buffer rather than in the tick.
    buffered: bool,
    /// The keys a tick's changes are looked for at, in the order they
    /// were written (then told), built here each tick.
    order: Vec<Keyword>,
    /// The last few orders of keys met, with the keys sorted by their text,
    /// oldest first: each order is sorted once.
    orders: Vec<KeyOrder>,
    /// Room for keys' texts with their places, to sort a new order by.
    texts: Vec<(&'static str, u32)>,
    /// The places and keys of the db before, in the order of the keys'
    /// text, while `in_place_sorted` (see `Recorder::changes_in_place`).
    in_place: Vec<(usize, Keyword)>,
    /// Whether `in_place` holds the db before's keys: cleared whenever the
    /// db before may have gained or lost a key.
    in_place_sorted: bool,
    /// The fingerprint of the tree the last tick recorded ran (at first,
    /// the recorder's tree) and its index in [`RunRecord::trees`].
    last_tree: (i64, usize),
}

/// A visit as a recorder builds it: a [`Visit`] without what the node's
/// index gives (its id and depth).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Mark {
    node: NodeIndex,
    status: Status,
    count: u32,
    halted: bool,
}

/// A recent tick's trace and the list of visits made of it.
#[derive(Debug)]
struct Recent {
    /// The tree it ran: an index into [`RunRecord::trees`].
    tree: usize,
    /// Its trace, an event a word ([`trace_word`]), so that a tick's trace
    /// is compared with it decoding only its own events.
    trace: Vec<u64>,
    /// Whether the trace has no halt and no skip, so that it gives no
    /// events and no halts.
    quiet: bool,
    /// Its list of visits: an index into the record's lists.
    visits: u32,
    /// The writing leaves it ticked whose writes the plain path does not
    /// note (see [`leaf_path`]), each once: a tick traced alike wrote
    /// their keys.
    writers: Vec<u32>,
}

/// An order of keys, and their places in it in the order of their text.
#[derive(Debug)]
struct KeyOrder {
    written: Vec<Keyword>,
    sorted: Vec<u32>,
}

/// How many recent traces a recorder compares a tick's trace with, and how
/// many recent lists of visits it looks through for one to share: enough
/// for a tree that cycles through a few paths.
const RECENT_VISITS: usize = 8;

/// How many orders of keys a recorder keeps sorted.
const RECENT_ORDERS: usize = 4;

/// The most keys a db may have for a recorder comparing written keys to
/// compare it whole instead (in place, see `Recorder::changes_in_place`):
/// for a db this small that costs less than noting the tick's writes.
const WHOLE_LIMIT: usize = 8;

impl Recorder {
    /// A recorder for a run of `tree` that starts from `db`.
    pub fn new(tree: &Tree, db: &Value) -> Recorder {
        // The lists of a record dropped on this thread, if one was.
        let room = Room::take();
        let first = TreeRecord::of(tree);
        Recorder {
            last_tree: (first.fingerprint, 0),
            run: RunRecord {
                trees: vec![first],
                start_db: db.clone(),
                entries: room.entries,
                visit_lists: room.visit_lists,
                notes: room.notes,
                first_tick: 1,
                changes: room.changes,
            },
            last_db: db.as_map().cloned().unwrap_or_default(),
            input: None,
            events: Vec::new(),
            compared: Vec::new(),
            trace: Vec::new(),
            slots: Vec::new(),
            marks: Vec::new(),
            recent: Vec::new(),
            told: false,
            writes: Writes::default(),
            noted: false,
            between: Writes::default(),
            buffered: false,
            order: Vec::new(),
            orders: Vec::new(),
            texts: Vec::new(),
            in_place: Vec::new(),
            in_place_sorted: false,
        }
    }

    /// Makes the recorder compare, at each tick, only the top-level keys the
    /// tick wrote (the engine notes them) and the keys of the inputs told
    /// with [`Recorder::input`], instead of every value of the db: a tick
    /// then costs the record what it wrote, not what the db holds, and the
    /// record is the same.
    ///
    /// The host promises that, between ticks, the db changes only as it
    /// tells the recorder: through inputs noted with [`Recorder::input`], or
    /// in any other way (a trim, a reload, an edit, a new db) followed by
    /// [`Recorder::db_changed`]. A tick whose user code was handed the whole
    /// db (`NodeCtx::db_mut`), that carried the db over to another tree, or
    /// that wrote a key that is not a keyword is compared in full, as are
    /// the ticks handed to [`Recorder::record`]. A db of at most 8 keys
    /// is compared whole, each value with the one at its place, which costs
    /// less than noting the writes (an edit that was not told is then
    /// recorded too). A session ([`crate::session::Session`]) records this
    /// way.
    ///
    /// ```
    /// use aido::record::{Recorder, TimelineOptions, timeline};
    /// use aido::{Registry, Value, compile_str, read_value};
    ///
    /// let tree = compile_str("t.edn", "[:inc! {:key :n}]", &Registry::new()).unwrap();
    /// let mut db = read_value("{:big [1 2 3 4 5 6 7 8 9 10]}").unwrap();
    /// let mut recorder = Recorder::new(&tree, &db).comparing_written_keys();
    /// db = recorder.tick(db, &tree).db;
    /// // A change between ticks: told, so that it is recorded.
    /// db.as_map_mut().unwrap().insert(Value::keyword("big"), Value::Int(0));
    /// recorder.db_changed();
    /// db = recorder.tick(db, &tree).db;
    /// let run = recorder.finish();
    /// assert_eq!(
    ///     timeline(&run, &TimelineOptions::default()),
    ///     "tick 1: success\n  + :n 1\n\n\
    ///      tick 2: success\n  ~ :big [1 2 3 4 5 6 7 8 9 10] -> 0\n  ~ :n 1 -> 2\n"
    /// );
    /// assert_eq!(run.db_after(2), db);
    /// ```
    #[must_use]
    pub fn comparing_written_keys(mut self) -> Recorder {
        self.told = true;
        self
    }

    /// Tells the recorder that the db was changed between ticks other than
    /// by the inputs it was told of: the next tick's db is compared with
    /// the one before in full. Needed only by a recorder
    /// [`comparing_written_keys`](Recorder::comparing_written_keys).
    pub fn db_changed(&mut self) {
        self.between.everything();
    }

    /// Numbers the recorded ticks from `first` instead of 1 (a run resumed
    /// from a save goes on from the tick the save left off at):
    /// [`TickRecord::tick`](super::TickRecord::tick) and the text timeline
    /// show these numbers. The ticks already recorded are numbered so too:
    /// a run's numbers always follow one another.
    #[must_use]
    pub fn numbered_from(mut self, first: u64) -> Recorder {
        self.run.first_tick = first.max(1);
        self
    }

    /// Notes an input merged into the db before the next tick.
    pub fn input(&mut self, input: &Map) {
        if self.told {
            for key in input.keys() {
                self.between.top(key);
            }
        }
        match &mut self.input {
            Some(merged) => merged.extend(input.iter().map(|(k, v)| (k.clone(), v.clone()))),
            None => self.input = Some(input.clone()),
        }
    }

    /// Notes an event that happened before the next tick: a trim, a reload,
    /// a note. (A trim, a reload or a carrying over may have changed the
    /// db: the next tick is compared in full.)
    pub fn event(&mut self, event: Event) {
        if matches!(
            event,
            Event::Trim(_) | Event::Reload(_) | Event::Migrated(_)
        ) {
            self.between.everything();
        }
        self.events.push(event);
    }

    /// Runs one traced tick and records it.
    pub fn tick(&mut self, db: Value, tree: &Tree) -> Tick {
        let tick = if self.notes_writes(&db) {
            // The default options as the constant `run_tick` reads: the
            // traced tick inlined here folds its reads of the budgets and
            // its tests for locals away.
            self.run_buffered(db, tree, &DEFAULT_OPTIONS, true)
        } else {
            // A tick that notes no writes is `run_tick_traced`'s, called:
            // the walk is the one a traced tick runs, not a copy of it laid
            // out anew here, with tests for the notes that fold away there.
            self.buffered = true;
            self.noted = false;
            run_tick_traced(db, tree, &DEFAULT_OPTIONS, &mut self.trace)
        };
        // The trace is in the recorder's buffer, read where it is.
        self.record_with(tree, &tick, None);
        tick
    }

    /// Whether a tick of `db` run here notes the keys it writes: when the
    /// recorder compares only those and the db is more than it compares
    /// whole (a small db is compared whole, in place, see
    /// `Recorder::changes_in_place`: cheaper than noting the writes).
    #[inline(always)]
    fn notes_writes(&self, db: &Value) -> bool {
        self.told && db.as_map().is_some_and(|m| m.len() > WHOLE_LIMIT)
    }

    /// Runs one tick with `options`, traced whatever they say, and records
    /// it. The trace goes into a buffer the recorder keeps, not into the
    /// returned tick.
    pub fn tick_with_options(&mut self, db: Value, tree: &Tree, options: &TickOptions) -> Tick {
        let tick = self.run_buffered(db, tree, options, true);
        self.record_run(tree, &tick);
        tick
    }

    /// Runs one tick to be recorded next by [`Recorder::record_run`] (the
    /// caller may look at it first): traced into the recorder's buffer, or
    /// into the tick when `options` ask for a trace, with the keys it writes
    /// noted when the recorder compares only those.
    pub(crate) fn run_tick(&mut self, db: Value, tree: &Tree, options: &TickOptions) -> Tick {
        self.run_buffered(db, tree, options, !options.trace)
    }

    #[inline(always)]
    fn run_buffered(
        &mut self,
        db: Value,
        tree: &Tree,
        options: &TickOptions,
        buffered: bool,
    ) -> Tick {
        let note = self.notes_writes(&db);
        let writes = note.then_some(&mut self.writes);
        let trace = buffered.then_some(&mut self.trace);
        let tick = run_tick_noting(db, tree, options, trace, writes);
        self.buffered = buffered;
        self.noted = note;
        tick
    }

    /// Records the tick [`Recorder::run_tick`] ran.
    pub(crate) fn record_run(&mut self, tree: &Tree, tick: &Tick) {
        // The recorder's own buffer is read where it is (`None`), not
        // taken out and put back.
        let given = (!self.buffered).then(|| tick.trace());
        self.record_with(tree, tick, given);
    }

    /// Records a tick that has been run with [`TickOptions::trace`] on
    /// (without it, the record has no visits or halts).
    pub fn record(&mut self, tree: &Tree, tick: &Tick) {
        self.record_traced(tree, tick, tick.trace());
    }

    /// Records a tick whose trace is `trace` (see
    /// [`run_tick_traced`](crate::tick::run_tick_traced)). Its db is compared
    /// with the one before in full.
    pub fn record_traced(&mut self, tree: &Tree, tick: &Tick, trace: &[TraceEvent]) {
        self.noted = false;
        self.record_with(tree, tick, Some(trace));
    }

    /// Records `tick`, whose trace is `given`, else the recorder's buffer;
    /// `self.noted` says whether the engine noted the keys it wrote into
    /// `self.writes`.
    fn record_with(&mut self, tree: &Tree, tick: &Tick, given: Option<&[TraceEvent]>) {
        let tree_index = self.tree_index(tree);
        let (visits, quiet) = self.visits(tree, tree_index, given);
        // Most ticks have no notes (input, events, halts): looked at
        // without a call, and gathered in one when there are some.
        let notes = if quiet
            && self.input.is_none()
            && self.events.is_empty()
            && tick.migration().is_none()
            && tick.launches().is_empty()
            && tick.cancels().is_empty()
            && tick.dropped().is_empty()
            && tick.warnings().is_empty()
            && tick.error.is_none()
        {
            None
        } else {
            self.tick_notes(tree, tick, given, quiet)
        };

        // The changes go to the end of the run's list.
        let noted = std::mem::take(&mut self.noted);
        let new = tick.db.as_map();
        let noted = if noted {
            self.writes.keys().zip(self.between.keys())
        } else {
            None
        };
        if let (Some(new), Some((written, told))) = (new, noted) {
            // Looked at in the order of their text, so that the changes
            // come out sorted.
            self.order.clear();
            self.order.extend_from_slice(written);
            let writes = &self.writes;
            self.order
                .extend(told.iter().copied().filter(|k| !writes.contains(*k)));
            let order = sorted_keys(&mut self.orders, &mut self.texts, &self.order);
            let keys = order
                .sorted
                .iter()
                .filter_map(|&i| order.written.get(i as usize).copied());
            diff_keys(&mut self.last_db, new, keys, &mut self.run.changes);
            self.in_place_sorted = false;
        } else if !new.is_some_and(|new| self.changes_in_place(new)) {
            self.in_place_sorted = false;
            diff_into(
                &mut self.last_db,
                new.unwrap_or(&Map::default()),
                &mut self.compared,
            );
            for change in self.compared.drain(..) {
                self.run.changes.push(change);
            }
        }
        self.between.clear();
        let index = self.run.entries.len();
        let noted = notes.is_some();
        if let Some(notes) = notes {
            self.run.notes.push((index, notes));
        }
        self.run.entries.push(TickEntry {
            steps: tick.steps,
            changes_end: self.run.changes.len(),
            visits,
            tree: u32::try_from(tree_index).unwrap_or(u32::MAX),
            status: tick.status,
            noted,
        });
    }

    /// The notes of `tick`, whose trace is `given`, else the recorder's
    /// buffer, and which `quiet` says has no halt and no skip: the input
    /// and events told before it, then a carrying over, the trace's halts
    /// and skips (in the order they came), launches, cancels, dropped
    /// results, warnings and the error. Out of line: most ticks have none.
    #[inline(never)]
    fn tick_notes(
        &mut self,
        tree: &Tree,
        tick: &Tick,
        given: Option<&[TraceEvent]>,
        quiet: bool,
    ) -> Option<Arc<TickNotes>> {
        let mut halts: Vec<NodeIndex> = Vec::new();
        let mut events = std::mem::take(&mut self.events);
        if let Some(m) = tick.migration() {
            events.push(Event::Migrated(m.to_value()));
        }
        if !quiet {
            let trace = given.unwrap_or(&self.trace[..]);
            trace_events(tree, trace, &mut halts, &mut events);
        }
        events.extend(tick.launches().iter().cloned().map(Event::Launched));
        events.extend(tick.cancels().iter().cloned().map(Event::Cancelled));
        events.extend(tick.dropped().iter().cloned().map(Event::Dropped));
        events.extend(tick.warnings().iter().cloned().map(Event::Warning));
        if let Some(error) = &tick.error {
            events.push(Event::Error(error.clone()));
        }
        TickNotes::of(self.input.take(), halts, events)
    }

    /// Appends to the run's changes how `new` differs from the db before,
    /// when `new` has at most [`WHOLE_LIMIT`] keys, all keywords, at the
    /// places the db before has them (the usual small db, whose ticks
    /// change values, not keys): each value is compared with the one at
    /// its place, in the order of the keys' text, and the changes are those
    /// [`diff_into`] gives. Returns false, having done nothing, when `new`
    /// has another number of keys, or the db before's keys are not known
    /// to be in place and are not. Always inlined into
    /// [`Recorder::record_with`], its one caller, as `push_change` is: the
    /// compiler's own choice there can move with changes elsewhere in the
    /// crate.
    #[inline(always)]
    fn changes_in_place(&mut self, new: &Map) -> bool {
        if self.in_place_sorted {
            // `in_place` holds the db before's keys, all keywords, and
            // their places: each is looked for at its place in `new` as
            // its value is read (see `Recorder::in_place_missed`).
            if new.len() != self.in_place.len() {
                return false;
            }
        } else {
            let last = &self.last_db;
            if new.len() > WHOLE_LIMIT || new.len() != last.len() {
                return false;
            }
            let (mut aligned, mut keywords) = (true, 0);
            new.for_each_keyword(|at, k| {
                aligned &= last.keyword_at(at, k);
                keywords += 1;
            });
            if !aligned || keywords != new.len() {
                return false;
            }
            // The keys are the db before's, at the same places: their
            // order by text is sorted once for as long as the db before
            // keeps them.
            let in_place = &mut self.in_place;
            in_place.clear();
            new.for_each_keyword(|at, k| in_place.push((at, k)));
            in_place.sort_unstable_by(|(_, a), (_, b)| a.as_str().cmp(b.as_str()));
            self.in_place_sorted = true;
        }
        // `new` has as many keys as the db before: if each of the db
        // before's is at its place in `new` (room past the entries has a
        // code no keyword has), they are the same keys at the same places.
        // Each key is checked as its value is read, with one comparison,
        // and each look-up tested on its own (a pair of tests made
        // together costs more).
        let start = self.run.changes.len();
        let mut missed = false;
        for &(at, k) in &self.in_place {
            let Some(now) = new.keyword_value_at(at, k) else {
                missed = true;
                break;
            };
            if let Some(before) = self.last_db.value_at_mut(at) {
                push_change(k, before, now, &mut self.run.changes);
            }
        }
        if missed {
            self.in_place_missed(new, start);
        }
        true
    }

    /// The rest of `Recorder::changes_in_place` when a key of the db before
    /// is not at its place in `new` (a host moved or replaced one between
    /// ticks), the changes of the keys before it in the order of their
    /// text appended from `start` on, and their values in the db before
    /// made equal to `new`'s: those changes are taken back, `new` is
    /// compared with the db before in full (which gives no change for
    /// those keys any more), and all of them go back in the order of their
    /// keys' text, as [`diff_into`] alone gives them.
    #[cold]
    #[inline(never)]
    fn in_place_missed(&mut self, new: &Map, start: usize) {
        self.in_place_sorted = false;
        let compared = &mut self.compared;
        compared.clear();
        self.run.changes.take_from(start, compared);
        diff_into(&mut self.last_db, new, compared);
        sort_by_key_text(compared, DbChange::key);
        for change in compared.drain(..) {
            self.run.changes.push(change);
        }
    }

    /// The visits of a tick of `tree` (whose shape the record keeps at
    /// `tree_index`) whose trace is `given`, else the recorder's buffer, as
    /// a list to keep, and whether the trace has no halt and no skip (then
    /// it gives no events: see `Recorder::tick_notes`). When the engine noted the keys the tick
    /// wrote (`self.noted`), the keys of the writing leaves it did not note
    /// are added from the trace ([`Recent::writers`]).
    fn visits(
        &mut self,
        tree: &Tree,
        tree_index: usize,
        given: Option<&[TraceEvent]>,
    ) -> (u32, bool) {
        let trace = given.unwrap_or(&self.trace[..]);
        // A tick traced as a recent one was (the usual case of a steady
        // run) visits alike: one comparison of the traces.
        if let Some(recent) = self
            .recent
            .iter()
            .rev()
            .find(|r| r.tree == tree_index && same_trace(&r.trace, trace))
        {
            if self.noted {
                note_writers(tree, &recent.writers, &mut self.writes);
            }
            return (recent.visits, recent.quiet);
        }

        // Each node once, with its last status.
        let shape = self
            .run
            .trees
            .get(tree_index)
            .map_or(&[][..], |t| &t.nodes[..]);
        if self.slots.len() < shape.len() {
            self.slots.resize(shape.len(), u32::MAX);
        }
        let at = &mut self.slots;
        let marks = &mut self.marks;
        marks.clear();
        let mut quiet = true;
        for event in trace {
            match *event {
                TraceEvent::Ticked { node, status } => {
                    let Some(slot) = at.get_mut(node.index()) else {
                        continue;
                    };
                    if let Some(mark) = marks.get_mut(*slot as usize) {
                        mark.status = status;
                        mark.count += 1;
                        mark.halted = false;
                    } else {
                        *slot = marks.len() as u32;
                        marks.push(Mark {
                            node,
                            status,
                            count: 1,
                            halted: false,
                        });
                    }
                    quiet &= status != Status::Skipped;
                }
                TraceEvent::Halted { node } => {
                    if let Some(mark) = at
                        .get(node.index())
                        .and_then(|&slot| marks.get_mut(slot as usize))
                    {
                        mark.halted = true;
                    }
                    quiet = false;
                }
            }
        }
        for mark in marks.iter() {
            if let Some(slot) = at.get_mut(mark.node.index()) {
                *slot = u32::MAX;
            }
        }
        marks.sort_unstable_by_key(|m| m.node.index());
        let visits = self.shared_visits(tree_index);

        // Kept with its trace, in the room of the oldest when there are
        // enough.
        let trace = given.unwrap_or(&self.trace[..]);
        let (mut room, mut writers) = if self.recent.len() == RECENT_VISITS {
            let oldest = self.recent.remove(0);
            (oldest.trace, oldest.writers)
        } else {
            (Vec::new(), Vec::new())
        };
        room.clear();
        room.extend(trace.iter().map(trace_word));
        writers.clear();
        writers.extend(
            self.marks
                .iter()
                .filter(|m| {
                    tree.nodes
                        .get(m.node.index())
                        .is_some_and(|n| leaf_path(&n.kind).is_some())
                })
                .map(|m| m.node.0),
        );
        if self.noted {
            note_writers(tree, &writers, &mut self.writes);
        }
        self.recent.push(Recent {
            tree: tree_index,
            trace: room,
            quiet,
            visits,
            writers,
        });
        (visits, quiet)
    }

    /// This tick's visits (of tree `tree`), as `self.marks` holds them in
    /// tree order, as a list the record keeps (its index in the record's
    /// lists): a recent tick's equal list if there is one, else a new one.
    fn shared_visits(&mut self, tree: usize) -> u32 {
        // Within one tree a node's index gives its id and depth.
        let alike = |a: &Visit, b: &Mark| {
            (a.node, a.status, a.count, a.halted) == (b.node, b.status, b.count, b.halted)
        };
        let marks = &self.marks;
        let lists = &self.run.visit_lists;
        if let Some(recent) = self.recent.iter().rev().find(|r| {
            r.tree == tree
                && lists.get(r.visits as usize).is_some_and(|visits| {
                    visits.len() == marks.len()
                        && visits.iter().zip(marks.iter()).all(|(a, b)| alike(a, b))
                })
        }) {
            return recent.visits;
        }
        let nodes = self.run.trees.get(tree).map_or(&[][..], |t| &t.nodes[..]);
        let visits: Arc<[Visit]> = marks
            .iter()
            .map(|m| {
                let (id, depth) = nodes
                    .get(m.node.index())
                    .map_or((Value::Nil, 0), |n| (n.id.clone(), n.depth));
                Visit {
                    node: m.node,
                    id,
                    depth,
                    status: m.status,
                    count: m.count,
                    halted: m.halted,
                }
            })
            .collect();
        self.run.visit_lists.push(visits);
        u32::try_from(self.run.visit_lists.len() - 1).unwrap_or(u32::MAX)
    }

    /// The index of `tree`'s shape in the record, adding it if it is new.
    fn tree_index(&mut self, tree: &Tree) -> usize {
        let fingerprint = tree.fingerprint();
        // The usual tick runs the tree the last one did: one comparison.
        if self.last_tree.0 == fingerprint {
            return self.last_tree.1;
        }
        let at = match self
            .run
            .trees
            .iter()
            .position(|t| t.fingerprint == fingerprint)
        {
            Some(at) => at,
            None => {
                self.run.trees.push(TreeRecord::of(tree));
                self.run.trees.len() - 1
            }
        };
        self.last_tree = (fingerprint, at);
        at
    }

    /// The ticks recorded so far (see [`RunRecord::ticks`]).
    pub fn ticks(&self) -> Ticks<'_> {
        self.run.ticks()
    }

    /// The run recorded so far.
    pub fn run(&self) -> &RunRecord {
        &self.run
    }

    /// The record of the run.
    pub fn finish(self) -> RunRecord {
        self.run
    }
}

/// Notes into `writes` the keys that `writers`, writing leaves of `tree`
/// that a tick ticked, may have written (see [`leaf_path`]): the writes the
/// engine does not note, since the tick's trace names them. (Out of line:
/// a small db is compared whole, without notes.)
#[inline(never)]
fn note_writers(tree: &Tree, writers: &[u32], writes: &mut Writes) {
    for &node in writers {
        if let Some(path) = tree
            .nodes
            .get(node as usize)
            .and_then(|n| leaf_path(&n.kind))
        {
            writes.path(path);
        }
    }
}

/// Whether a recent trace, kept as `words` ([`trace_word`]), is `trace`:
/// compared as one word an event, which takes fewer instructions than the
/// events' own comparison, and only `trace`'s events decoded, two events
/// a step. Always inlined, as [`Recorder::changes_in_place`] is.
#[inline(always)]
fn same_trace(words: &[u64], trace: &[TraceEvent]) -> bool {
    if words.len() != trace.len() {
        return false;
    }
    // Two events a step, with one test for both: the loop's own tests
    // are halved.
    let (mut w, mut t) = (words.chunks_exact(2), trace.chunks_exact(2));
    for (w, t) in (&mut w).zip(&mut t) {
        if let ([w0, w1], [t0, t1]) = (w, t)
            && (w0 ^ trace_word(t0)) | (w1 ^ trace_word(t1)) != 0
        {
            return false;
        }
    }
    w.remainder()
        .iter()
        .zip(t.remainder())
        .all(|(w, e)| *w == trace_word(e))
}

/// A trace event as one word: equal words, equal events.
#[inline(always)]
fn trace_word(event: &TraceEvent) -> u64 {
    match *event {
        TraceEvent::Ticked { node, status } => u64::from(node.0) << 8 | status as u64,
        TraceEvent::Halted { node } => u64::from(node.0) << 8 | 0xFF,
    }
}

/// The halts of a tick of `tree` whose trace is `trace`, in the order they
/// came, into `halts`, and the events its trace gives (halts and skips, in
/// the order they came) into `events`.
fn trace_events(
    tree: &Tree,
    trace: &[TraceEvent],
    halts: &mut Vec<NodeIndex>,
    events: &mut Vec<Event>,
) {
    let id = |node: NodeIndex| tree.node_id(node).cloned().unwrap_or_default();
    for event in trace {
        match *event {
            TraceEvent::Ticked { node, status } => {
                if status == Status::Skipped {
                    events.push(Event::Skipped { node: id(node) });
                }
            }
            TraceEvent::Halted { node } => {
                halts.push(node);
                events.push(Event::Halted { node: id(node) });
            }
        }
    }
}

/// `written` (keys, each once) and their places in the order of their
/// text: a recent order's when `orders` has `written`, else sorted now
/// (each key's text read once, into `texts`) and kept in `orders`, in the
/// room of the oldest when there are enough.
fn sorted_keys<'a>(
    orders: &'a mut Vec<KeyOrder>,
    texts: &mut Vec<(&'static str, u32)>,
    written: &[Keyword],
) -> &'a KeyOrder {
    let at = match orders.iter().rposition(|o| o.written == written) {
        Some(at) => at,
        None => {
            let (mut kept, mut sorted) = if orders.len() == RECENT_ORDERS {
                let oldest = orders.remove(0);
                (oldest.written, oldest.sorted)
            } else {
                (Vec::new(), Vec::new())
            };
            texts.clear();
            texts.extend(
                written
                    .iter()
                    .enumerate()
                    .map(|(i, &k)| (k.as_str(), i as u32)),
            );
            texts.sort_unstable_by_key(|(text, _)| *text);
            kept.clear();
            kept.extend_from_slice(written);
            sorted.clear();
            sorted.extend(texts.iter().map(|&(_, i)| i));
            orders.push(KeyOrder {
                written: kept,
                sorted,
            });
            orders.len() - 1
        }
    };
    &orders[at]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_writing_leafs_key_is_compared_from_the_trace() {
        // More keys than a db compared whole, so that the engine notes the
        // keys a tick writes; the plain path's writing leaves note nothing,
        // and their keys come from the trace, on a new trace and on one
        // alike a recent one.
        let tree = crate::compile_str(
            "t.edn",
            "[:sequence [:inc! {:key :n}] [:define! {:key :m :val :x}] [:dissoc! {:key :gone}]]",
            &crate::Registry::new(),
        )
        .unwrap();
        let mut db =
            crate::read_value("{:k0 0 :k1 1 :k2 2 :k3 3 :k4 4 :k5 5 :k6 6 :k7 7 :m :y :gone 1}")
                .unwrap();
        let mut recorder = Recorder::new(&tree, &db).comparing_written_keys();
        for _ in 0..3 {
            db = recorder.tick(db, &tree).db;
            // Edits the host does not tell of are not compared: only what
            // the ticks wrote is recorded.
            if let Some(map) = db.as_map_mut() {
                map.insert(Value::keyword("k0"), Value::Int(-1));
            }
        }
        let run = recorder.finish();
        assert_eq!(
            super::super::timeline(&run, &super::super::TimelineOptions::default()),
            "tick 1: success\n  - :gone\n  ~ :m :y -> :x\n  + :n 1\n\n\
             tick 2: success\n  ~ :n 1 -> 2\n\n\
             tick 3: success\n  ~ :n 2 -> 3\n"
        );
    }

    #[test]
    fn a_kept_trace_equals_only_the_same_events() {
        let ticked = |node, status| TraceEvent::Ticked {
            node: NodeIndex(node),
            status,
        };
        let trace = [
            ticked(1, Status::Failure),
            TraceEvent::Halted { node: NodeIndex(2) },
            ticked(0, Status::Running),
        ];
        let words: Vec<u64> = trace.iter().map(trace_word).collect();
        assert!(same_trace(&words, &trace));
        assert!(!same_trace(&words, &trace[..2]));
        assert!(!same_trace(&words[..2], &trace));
        let others = [
            [ticked(1, Status::Success), trace[1], trace[2]],
            [ticked(2, Status::Failure), trace[1], trace[2]],
            [trace[0], ticked(2, Status::Success), trace[2]],
            [trace[0], ticked(2, Status::Skipped), trace[2]],
            [
                trace[0],
                TraceEvent::Halted { node: NodeIndex(3) },
                trace[2],
            ],
            [
                trace[0],
                trace[1],
                TraceEvent::Halted { node: NodeIndex(0) },
            ],
        ];
        for other in others {
            assert!(!same_trace(&words, &other), "{other:?}");
        }
    }
}
