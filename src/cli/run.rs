//! `aido run TREE [options]`: tick a tree and print the db after every tick.

use std::ffi::OsString;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use aido::record::{Event, PageOptions, Recorder, TimelineOptions, page, timeline_block};
use aido::{
    Tick, Tree, Value,
    migrate::migrate,
    tick::{TickOptions, TraceEvent, run_tick_with_options},
    trim::{DataTask, Trimmer},
    value::Map,
};

use super::Failure;
use super::args::{self, Parsed, Spec};
use super::load::{EdnFile, a_type, compile_tree, name, read_db_or_empty, read_edn};
use super::save::{ClosableOut, check_target, save_db, write_atomically};

pub(crate) const USAGE: &str = "\
usage: aido run TREE [--db DB] [--ticks N] [--seed S] [--inputs INPUTS] [--save OUT] [--format edn|json|pretty] [--trace]
                [--aido-keys] [--timeline OUT.html] [--trims TRIMS] [--reload N=FILE]... [--save-tree OUT]

Ticks TREE N times, each tick starting from the db the previous one left,
and prints one line per tick: {:tick 1, :status :success, :db {...}}. A tick
that launches or cancels deferred actions (`:defer`) also has
:launch [{:node id, :request n, :action :name, :options {...}} ...] and/or
:cancel [...]; an outside system's completions can be scripted with --inputs as
{:aido/results {node-id {:request n, :status :success, :result x}}}. A
completion that answers no request in flight is not applied: the tick lists it
under :dropped [{:node id, :reason :not-in-flight, :completion {...}} ...].
A tick that noticed a likely mistake in the tree lists it under :warnings.

options:
  --db DB          the starting db: an EDN map, or a JSON object if DB ends in .json
                   (default: an empty map)
  --ticks N        how many ticks to run, a positive integer (default 1)
  --seed S         put the integer S under :aido/seed before the first tick, so
                   that random nodes draw a fresh, reproducible stream
  --inputs INPUTS  an EDN vector; element i (a map or nil) is merged into the db
                   before tick i+1; elements past the last tick are ignored
  --save OUT       write the final db to OUT atomically (JSON if OUT ends in .json,
                   else EDN)
  --save-tree OUT  write the tree as it stands after the last tick (after trims
                   and reloads) to OUT atomically, as EDN: the tree the saved db
                   was last ticked with, for `aido migrate`
  --format F       print each tick as `edn` (default), as a line of `json`, or as
                   a short `pretty` block: the status, the input merged, the db's
                   changes (`+ :key value` added, `~ :key old -> new` changed,
                   `- :key` removed; keys sorted) and the events (halts, skips,
                   launches, cancels, errors, trims, reloads)
  --trace          add :trace to each line: [node-id :status] for every node
                   ticked and [:halt node-id] for every node halted, in order
                   (and :change to each applied trim task); with --format pretty,
                   the nodes ticked as an indented tree: type, id, status
  --aido-keys      with --format pretty, show changes to the library's :aido/* keys too
  --timeline OUT   write the whole run to OUT as one self-contained HTML page (the
                   tree, a grid of node statuses per tick, the db with its changes,
                   the events, the source), saved atomically after the last tick
  --trims TRIMS    an EDN vector of trim tasks, queued before tick 1 and worked
                   through between ticks; each tick before which a task was looked
                   at gets :trim [{:task t, :outcome :applied|:deferred|:rejected,
                   :reason \"...\"} ...]
  --stubs STUBS    an EDN map of stubs, {node-id-or-type stub ...}, put in place of
                   nodes of TREE (see `aido help test`)
  --nodes MODEL    a node model: the application's node types and functions
  --reload N=FILE  switch to the tree in FILE before tick N, carrying the db over
                   (repeatable); tick N's line gets :reload {:file ..., :kept [...],
                   :dropped [...], :halted [...]}. Every FILE is read and compiled
                   before tick 1: one that does not, or an N past the last tick,
                   stops the run before it starts

A db that was last ticked with another tree (its :aido/tree fingerprint
differs) is carried over to TREE by node id first; that tick's line gets
:migrated {:kept [...], :dropped [...], :halted [...]}.

exit status: 0 every tick ran (whatever its status), 1 the tree (or a reload
file) has compile errors, 2 bad arguments or an unreadable or malformed file";

const SPEC: Spec = Spec {
    usage: "aido run TREE [--db DB] [--ticks N] [--seed S] [--inputs INPUTS] [--save OUT] [--format edn|json|pretty] [--trace]",
    value_flags: &[
        "--db",
        "--ticks",
        "--seed",
        "--inputs",
        "--save",
        "--save-tree",
        "--format",
        "--trims",
        "--stubs",
        "--nodes",
        "--timeline",
    ],
    switches: &["--trace", "--aido-keys"],
};

/// How each tick is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    Edn,
    Json,
    /// The text timeline, one block a tick.
    Pretty,
}

/// The checked settings of one run.
#[derive(Debug)]
struct Config {
    tree: PathBuf,
    db: Option<PathBuf>,
    ticks: u64,
    seed: Option<i64>,
    inputs: Option<PathBuf>,
    save: Option<PathBuf>,
    /// Where to write the tree as it stands after the last tick.
    save_tree: Option<PathBuf>,
    format: Format,
    trace: bool,
    /// Show `:aido/*` keys in the pretty format.
    aido_keys: bool,
    /// Where to write the timeline page.
    timeline: Option<PathBuf>,
    trims: Option<PathBuf>,
    /// Tree files to switch to, by the tick before which to switch.
    reloads: Vec<(u64, PathBuf)>,
}

impl Config {
    fn from_args(parsed: &Parsed, reloads: Vec<(u64, PathBuf)>) -> Result<Config, Failure> {
        let tree = parsed.one_tree("run", SPEC.usage)?;
        let ticks = parsed.positive("--ticks")?.unwrap_or(1);
        let seed = parsed.integer("--seed")?;
        let format = match parsed.text("--format")? {
            None | Some("edn") => Format::Edn,
            Some("json") => Format::Json,
            Some("pretty") => Format::Pretty,
            Some(other) => {
                return Err(Failure::input(
                    "--format",
                    format!("expected `edn`, `json` or `pretty`, got `{other}`"),
                ));
            }
        };
        let aido_keys = parsed.switch("--aido-keys");
        if aido_keys && format != Format::Pretty {
            return Err(Failure::input(
                "--aido-keys",
                "shows :aido/* keys in `--format pretty` only; the edn and json lines always have them",
            ));
        }
        let path = |flag: &str| parsed.value(flag).map(PathBuf::from);
        // The page is written after the last tick: a path that cannot be a
        // file is refused before the first.
        if let Some(tree) = path("--save-tree")
            && super::load::is_json(&tree)
        {
            return Err(Failure::input(
                "--save-tree",
                format!("a tree is saved as EDN, not JSON: `{}`", tree.display()),
            ));
        }
        let timeline = path("--timeline");
        if let Some(page) = &timeline
            && (page.as_os_str().is_empty() || page.is_dir() || page.file_name().is_none())
        {
            return Err(Failure::input(
                "--timeline",
                format!(
                    "expected a file to write the page to, got `{}`",
                    page.display()
                ),
            ));
        }
        Ok(Config {
            tree,
            db: path("--db"),
            ticks,
            seed,
            inputs: path("--inputs"),
            save: path("--save"),
            save_tree: path("--save-tree"),
            format,
            trace: parsed.switch("--trace"),
            aido_keys,
            timeline,
            trims: path("--trims"),
            reloads,
        })
    }
}

pub(crate) fn main(args: &[OsString], out: &mut dyn Write) -> Result<i32, Failure> {
    let (args, reloads) = take_reloads(args)?;
    let Some(parsed) = args::parse_or_help(&args, &SPEC, USAGE, out)? else {
        return Ok(0);
    };
    let config = Config::from_args(&parsed, reloads)?;

    // Every file is read and checked before the first tick, so a bad one prints nothing.
    super::use_model(parsed.value("--nodes"))?;
    let stubs = parsed
        .value("--stubs")
        .map(|p| super::test::read_stubs(Path::new(p)))
        .transpose()?;
    let mut tree = match &stubs {
        Some(stubs) => super::test::compile_stubbed(&config.tree, stubs)?,
        None => compile_tree(&config.tree)?,
    };
    let registry = super::registry();
    let mut trimmer = Trimmer::new();
    if let Some(path) = &config.trims {
        let tasks = read_edn(path)?;
        let tasks = DataTask::many(&tasks.value).map_err(|e| {
            let place = tasks
                .spans
                .span_at(&e.path)
                .map_or_else(|| name(path), |span| tasks.place(span));
            Failure::input(place, format!("error[{}]: {}", e.kind.code(), e.message))
        })?;
        for task in tasks {
            trimmer.push(Box::new(task));
        }
    }
    // A reload file is compiled now, not at its tick: a broken one, or one
    // for a tick the run never reaches, stops the run before it starts.
    let mut reload_trees = Vec::with_capacity(config.reloads.len());
    for (at, file) in &config.reloads {
        if *at > config.ticks {
            return Err(Failure::input(
                "--reload",
                format!(
                    "{at}={}: the run has {} tick{}, so tick {at} never comes",
                    file.display(),
                    config.ticks,
                    if config.ticks == 1 { "" } else { "s" }
                ),
            ));
        }
        reload_trees.push((*at, file.as_path(), Some(compile_tree(file)?)));
    }
    let mut db = read_db_or_empty(config.db.as_deref())?;
    let inputs = match &config.inputs {
        Some(path) => read_inputs(path, config.ticks)?,
        None => Vec::new(),
    };
    if let Some(seed) = config.seed {
        seed_db(&mut db, seed);
    }
    // Saving over the db read is how a save game goes on; over any other
    // input file it is a mistake. The page is never written over an input.
    let mut input_files: Vec<&Path> = vec![&config.tree];
    input_files.extend(config.inputs.as_deref());
    input_files.extend(config.trims.as_deref());
    input_files.extend(config.reloads.iter().map(|(_, file)| file.as_path()));
    input_files.extend(parsed.value("--stubs").map(Path::new));
    input_files.extend(parsed.value("--nodes").map(Path::new));
    if let Some(path) = &config.save {
        check_target(path, &input_files)?;
    }
    if let Some(path) = &config.save_tree {
        input_files.extend(config.db.as_deref());
        input_files.extend(config.save.as_deref());
        check_target(path, &input_files)?;
        input_files.push(path);
    }
    if let Some(path) = &config.timeline {
        input_files.extend(config.db.as_deref());
        check_target(path, &input_files)?;
    }
    // With a file to write at the end, a closed stdout must not stop the run
    // before it.
    let mut out = ClosableOut::new(out, config.save.is_some() || config.timeline.is_some());
    let out = &mut out;
    // The pretty format and the timeline page are made from a run record.
    let mut recorder = (config.format == Format::Pretty || config.timeline.is_some())
        .then(|| Recorder::new(&tree, &db));
    let pretty = TimelineOptions {
        aido_keys: config.aido_keys,
        trace: config.trace,
    };

    for n in 1..=config.ticks {
        if let Some(stubs) = &stubs {
            stubs.stubs.set_tick(n);
        }
        let input = usize::try_from(n - 1).ok().and_then(|i| inputs.get(i));
        if let Some(Some(input)) = input {
            merge(&mut db, input);
            if let Some(recorder) = &mut recorder {
                recorder.input(input);
            }
        }
        let options = TickOptions {
            trace: config.trace || recorder.is_some(),
            ..TickOptions::default()
        };
        let mut notes = Vec::new();
        for (_, file, new_tree) in reload_trees.iter_mut().filter(|(at, ..)| *at == n) {
            let Some(new_tree) = new_tree.take() else {
                continue;
            };
            let (new_db, note) = reload(db, &tree, file, &new_tree);
            db = new_db;
            tree = new_tree;
            if let Some(recorder) = &mut recorder {
                recorder.event(Event::Reload(note.clone()));
            }
            notes.push((Value::keyword("reload"), note));
        }
        if !trimmer.is_empty() {
            let gap = trimmer.between_ticks(n - 1, db, &tree, &registry);
            db = gap.db;
            if let Some(new_tree) = gap.tree {
                tree = new_tree;
            }
            let reports: Vec<Value> = gap
                .reports
                .iter()
                .map(|r| r.to_value(config.trace))
                .collect();
            if let Some(recorder) = &mut recorder {
                for report in &reports {
                    recorder.event(Event::Trim(report.clone()));
                }
            }
            notes.push((Value::keyword("trim"), Value::Vector(reports)));
        }
        let tick = run_tick_with_options(db, &tree, &options);
        if let Some(m) = tick.migration() {
            notes.push((Value::keyword("migrated"), m.to_value()));
        }
        if let Some(error) = &tick.error {
            out.flush()?;
            let _ = writeln!(
                io::stderr(),
                "aido: {}: tick {n} ended in error: {error}",
                name(&config.tree)
            );
        }
        if let Some(recorder) = &mut recorder {
            recorder.record(&tree, &tick);
        }
        let line = LineFormat {
            json: config.format == Format::Json,
            trace: config.trace,
        };
        db = match &recorder {
            // The pretty format is the recorder's text timeline, a block a tick.
            Some(recorder) if config.format == Format::Pretty => {
                if n > 1 {
                    writeln!(out)?;
                }
                let index = recorder.ticks().len().saturating_sub(1);
                write!(out, "{}", timeline_block(recorder.run(), index, &pretty))?;
                tick.db
            }
            _ => print_tick(out, n, tick, &tree, notes, line)?,
        };
    }

    if let Some(path) = &config.save {
        save_db(path, &db)?;
    }
    // The tree the save was last ticked with: after trims, the only copy.
    if let Some(path) = &config.save_tree {
        save_db(path, tree.form())?;
    }
    if let (Some(path), Some(recorder)) = (&config.timeline, recorder) {
        let html = page(&recorder.finish(), &PageOptions::titled(name(&config.tree)));
        write_atomically(path, html.as_bytes()).map_err(|e| {
            Failure::input(
                name(path),
                format!("cannot save: {}", super::load::io_reason(&e)),
            )
        })?;
    }
    Ok(0)
}

/// How a tick's line is printed.
#[derive(Debug, Clone, Copy)]
struct LineFormat {
    /// A line of JSON, else of EDN.
    json: bool,
    /// Whether the line has `:trace` (a tick may be traced for a recorder
    /// without it).
    trace: bool,
}

/// Prints one tick's line and hands back its db.
fn print_tick(
    out: &mut dyn Write,
    n: u64,
    tick: Tick,
    tree: &Tree,
    notes: Vec<(Value, Value)>,
    line_format: LineFormat,
) -> Result<Value, Failure> {
    let launches = tick.launches().to_vec();
    let cancels = tick.cancels().to_vec();
    let dropped: Vec<Value> = tick.dropped().iter().map(|d| d.to_value()).collect();
    let warnings: Vec<Value> = tick.warnings().iter().map(|w| w.to_value()).collect();
    let trace = if line_format.trace {
        trace_value(tree, tick.trace())
    } else {
        None
    };
    let Tick { db, status, .. } = tick;
    let db_key = Value::keyword("db");
    let mut line = Map::default();
    line.insert(
        Value::keyword("tick"),
        Value::Int(i64::try_from(n).unwrap_or(i64::MAX)),
    );
    line.insert(Value::keyword("status"), status.to_value());
    // Changes to the tree before the tick: reloads, trims, a carried-over db.
    for (key, note) in notes {
        line.insert(key, note);
    }
    // Deferred actions to start or abandon, only on the ticks that have any.
    for (key, requests) in [("launch", launches), ("cancel", cancels)] {
        if !requests.is_empty() {
            let requests = requests.iter().map(aido::tick::Request::to_value).collect();
            line.insert(Value::keyword(key), Value::Vector(requests));
        }
    }
    // Completions that answered no request in flight.
    if !dropped.is_empty() {
        line.insert(Value::keyword("dropped"), Value::Vector(dropped));
    }
    // What may be a mistake in the tree (a reactive selector's children taking turns).
    if !warnings.is_empty() {
        line.insert(Value::keyword("warnings"), Value::Vector(warnings));
    }
    if let Some(trace) = trace {
        line.insert(Value::keyword("trace"), trace);
    }
    line.insert(db_key.clone(), db);
    let line = Value::Map(Box::new(line));
    if line_format.json {
        writeln!(out, "{}", line.to_json())?;
    } else {
        writeln!(out, "{line}")?;
    }
    let Ok(mut line) = line.into_map() else {
        return Ok(Value::map());
    };
    Ok(line.shift_remove(&db_key).unwrap_or_else(Value::map))
}

/// A traced tick's events as `[[node-id :status] ... [:halt node-id] ...]`.
fn trace_value(tree: &Tree, trace: &[TraceEvent]) -> Option<Value> {
    if trace.is_empty() {
        return None;
    }
    let id = |node| tree.node_id(node).cloned().unwrap_or_default();
    let events = trace
        .iter()
        .filter_map(|event| match *event {
            TraceEvent::Ticked { node, status } => {
                Some(Value::Vector(vec![id(node), status.to_value()]))
            }
            TraceEvent::Halted { node } => {
                Some(Value::Vector(vec![Value::keyword("halt"), id(node)]))
            }
            _ => None,
        })
        .collect();
    Some(Value::Vector(events))
}

/// Tree files to switch to, each with the tick before which to switch.
type Reloads = Vec<(u64, PathBuf)>;

/// Takes every `--reload N=FILE` out of the arguments.
fn take_reloads(args: &[OsString]) -> Result<(Vec<OsString>, Reloads), Failure> {
    let mut rest = Vec::new();
    let mut reloads = Vec::new();
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        let value = match arg.to_str() {
            Some("--") => {
                rest.push(arg.clone());
                rest.extend(iter.by_ref().cloned());
                break;
            }
            Some("--reload") => match iter.next() {
                Some(v) => v.to_string_lossy().into_owned(),
                None => return Err(Failure::usage("`--reload` needs a value", SPEC.usage)),
            },
            Some(text) if text.starts_with("--reload=") => text["--reload=".len()..].to_owned(),
            _ => {
                rest.push(arg.clone());
                continue;
            }
        };
        let parsed = value
            .split_once('=')
            .and_then(|(n, file)| Some((n.parse::<u64>().ok().filter(|&n| n > 0)?, file)));
        match parsed {
            Some((n, file)) if !file.is_empty() => reloads.push((n, PathBuf::from(file))),
            _ => {
                return Err(Failure::input(
                    "--reload",
                    format!("expected N=FILE with N a tick number from 1, got `{value}`"),
                ));
            }
        }
    }
    Ok((rest, reloads))
}

/// Switches to `new_tree` (compiled from `file` before the first tick),
/// carrying the db over: the db and the report.
fn reload(db: Value, tree: &Tree, file: &Path, new_tree: &Tree) -> (Value, Value) {
    let (db, report) = migrate(db, tree, new_tree);
    let mut note = report.to_value();
    if let Some(m) = note.as_map_mut() {
        m.shift_insert(0, Value::keyword("file"), Value::string(&name(file)));
    }
    (db, note)
}

/// Seeds the random generator: a new seed starts a fresh stream, so any
/// position saved from an earlier seed is dropped.
fn seed_db(db: &mut Value, seed: i64) {
    if let Some(map) = db.as_map_mut() {
        map.insert(Value::keyword("aido/seed"), Value::Int(seed));
        map.shift_remove(&Value::keyword("aido/rng-pos"));
    }
}

/// Merges an input into the db, key by key.
fn merge(db: &mut Value, input: &Map) {
    if let Some(map) = db.as_map_mut() {
        for (key, value) in input {
            map.insert(key.clone(), value.clone());
        }
    }
}

/// Reads the inputs file: a vector whose elements (maps or nils) are merged
/// into the db before each tick. Elements past the last tick are not checked.
fn read_inputs(path: &Path, ticks: u64) -> Result<Vec<Option<Map>>, Failure> {
    let file = read_edn(path)?;
    let EdnFile { value, spans, .. } = &file;
    let Value::Vector(items) = value else {
        return Err(Failure::input(
            name(path),
            format!(
                "the inputs must be a vector of maps or nils, found {}",
                a_type(value)
            ),
        ));
    };
    let used = usize::try_from(ticks).unwrap_or(usize::MAX);
    items
        .iter()
        .take(used)
        .enumerate()
        .map(|(i, item)| match item {
            Value::Nil => Ok(None),
            Value::Map(map) => Ok(Some(map.as_ref().clone())),
            other => {
                let place = spans
                    .span_at(&[i])
                    .map_or_else(|| name(path), |s| file.place(s));
                Err(Failure::input(
                    place,
                    format!(
                        "input {i} (merged before tick {}) must be a map or nil, found {}",
                        i + 1,
                        a_type(other)
                    ),
                ))
            }
        })
        .collect()
}
