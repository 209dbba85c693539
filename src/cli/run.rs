//! `aido run TREE [options]`: tick a tree and print the db after every tick.

use std::ffi::OsString;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use std::sync::Arc;

use aido::record::{Event, PageOptions, TimelineOptions, page, timeline_block};
use aido::session::{Session, seed_db};
use aido::{
    Tree, Value,
    tick::{AgentTick, TickOptions, TraceEvent},
    trim::DataTask,
    value::{JsonMapping, Map},
};

use super::Failure;
use super::args::{self, Parsed, Spec};
use super::load::{EdnFile, a_type, compile_tree, name, read_db_or_empty, read_edn};
use super::save::{ClosableOut, check_target, same_target, save_db, write_atomically};

pub(crate) const USAGE: &str = "\
usage: aido run TREE [--db DB] [--ticks N] [--seed S] [--dt D] [--inputs INPUTS] [--save OUT] [--format edn|json|pretty] [--trace]
                [--aido-keys] [--timeline OUT.html] [--trims TRIMS] [--reload N=FILE]...

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
  --dt D           move the db's clock :aido/now on by D seconds (a number, 0 or
                   more) before each tick, from 0.0 at the first tick of a db
                   without one; options in :seconds read it (no node reads a clock)
  --inputs INPUTS  an EDN vector; element i (a map or nil) is merged into the db
                   before tick i+1; elements past the last tick are ignored
  --save OUT       write the final db to OUT atomically (JSON if OUT ends in .json,
                   else EDN)
  --format F       print each tick as `edn` (default), as a line of `json`, or as
                   a short `pretty` block: the status, the input merged, the db's
                   changes (`+ :key value` added, `~ :key old -> new` changed,
                   `- :key` removed; keys sorted) and the events (halts, skips,
                   launches, cancels, errors, trims, reloads); a json line that
                   would hold NaN or an infinity stops the run (exit 2)
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
                   :reason \"...\"} ...] (an applied task that changed the db also
                   has :db {...} and :dissoc [...])
  --stubs STUBS    an EDN map of stubs, {node-id-or-type stub ...}, put in place of
                   nodes of TREE (see `aido help test`) and kept in place after
                   every trim and reload; a stub by id wins over one by type
  --nodes MODEL    a node model: the application's node types and functions
  --reload N=FILE  switch to the tree in FILE before tick N, carrying the db over
                   (repeatable); tick N's line gets :reload {:file ..., :kept [...],
                   :dropped [...], :halted [...]} (with :cancel [...], the cancel
                   requests of deferred actions halted because they are gone), or
                   {:file ..., :rejected \"...\"} if FILE does not compile (the run
                   goes on with the old tree); several reloads before one tick: a
                   vector of their reports, in order

A db that was last ticked with another tree (its :aido/tree fingerprint
differs) is carried over to TREE by node id first; that tick's line gets
:migrated {:kept [...], :dropped [...], :halted [...]}.

exit status: 0 every tick ran (whatever its status), 1 the tree has compile
errors, 2 bad arguments or an unreadable or malformed file";

const SPEC: Spec = Spec {
    usage: "aido run TREE [--db DB] [--ticks N] [--seed S] [--dt D] [--inputs INPUTS] [--save OUT] [--format edn|json|pretty] [--trace]",
    value_flags: &[
        "--db",
        "--ticks",
        "--seed",
        "--dt",
        "--inputs",
        "--save",
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
    /// Seconds `:aido/now` moves on before each tick.
    dt: Option<f64>,
    inputs: Option<PathBuf>,
    save: Option<PathBuf>,
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
        let dt = match parsed.text("--dt")? {
            None => None,
            Some(text) => match text.parse::<f64>() {
                Ok(dt) if dt.is_finite() && dt >= 0.0 => Some(dt),
                _ => {
                    return Err(Failure::input(
                        "--dt",
                        format!("expected a number of seconds, 0 or more, got `{text}`"),
                    ));
                }
            },
        };
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
            dt,
            inputs: path("--inputs"),
            save: path("--save"),
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
    let tree = match &stubs {
        Some(stubs) => super::test::compile_stubbed(&config.tree, stubs)?,
        None => compile_tree(&config.tree)?,
    };
    // Trims compile against the same registry as the tree, stub
    // placeholders included; stubs are put back in place after a change.
    let registry_for = |tree: &Tree| match &stubs {
        Some(stubs) => stubs.stubs.registry_for(tree.form(), &super::registry()),
        None => super::registry(),
    };
    let registry = registry_for(&tree);
    let mut tasks = Vec::new();
    if let Some(path) = &config.trims {
        let file = read_edn(path)?;
        tasks = DataTask::many(&file.value).map_err(|e| Failure::input(name(path), e.message))?;
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
    if let Some(path) = &config.timeline {
        input_files.extend(config.db.as_deref());
        check_target(path, &input_files)?;
        if let Some(save) = &config.save
            && same_target(path, save)
        {
            return Err(Failure::input(
                name(path),
                "cannot save: it is also the --save file: the page would overwrite the save",
            ));
        }
    }
    // With a file to write at the end, a closed stdout must not stop the run
    // before it.
    let mut out = ClosableOut::new(out, config.save.is_some() || config.timeline.is_some());
    let out = &mut out;
    let mut session = Session::new(Arc::new(tree), db);
    session.set_registry(registry);
    if let Some(stubs) = &stubs {
        session.set_stubs(stubs.stubs.clone());
    }
    for task in tasks {
        session.trim(Box::new(task));
    }
    session.set_tick_options(TickOptions {
        trace: config.trace,
        ..TickOptions::default()
    });
    session.set_trim_changes(config.trace);
    // The pretty format and the timeline page are made from a run record.
    if config.format == Format::Pretty || config.timeline.is_some() {
        session.record();
    }
    let pretty = TimelineOptions {
        aido_keys: config.aido_keys,
        trace: config.trace,
    };

    for n in 1..=config.ticks {
        // The time, then the input, are merged before the tick, and
        // recorded as its input.
        if let Some(dt) = config.dt {
            session
                .advance_time(dt)
                .map_err(|e| Failure::input("--dt", format!("before tick {n}: {e}")))?;
        }
        let input = usize::try_from(n - 1).ok().and_then(|i| inputs.get(i));
        if let Some(Some(input)) = input {
            session.input(input);
        }
        let mut notes = Vec::new();
        let mut reloaded = Vec::new();
        for (_, file) in config.reloads.iter().filter(|(at, _)| *at == n) {
            let note = reload(&mut session, file, stubs.as_ref(), &registry_for);
            session.note(Event::Reload(note.clone()));
            reloaded.push(note);
        }
        // One reload: its report; several before one tick: all of them, in order.
        match reloaded.len() {
            0 => {}
            1 => notes.extend(reloaded.pop().map(|note| (Value::keyword("reload"), note))),
            _ => notes.push((Value::keyword("reload"), Value::Vector(reloaded))),
        }
        let gap = session.between_ticks();
        if gap.trimmed {
            let reports: Vec<Value> = gap.trims.iter().map(|r| r.to_value(config.trace)).collect();
            notes.push((Value::keyword("trim"), Value::Vector(reports)));
        }
        let tick = session.tick();
        if let Some(m) = tick.migration() {
            notes.push((Value::keyword("migrated"), m.to_value()));
        }
        if let Some(error) = &tick.error {
            out.flush()?;
            let line = format!(
                "aido: {}: tick {n} ended in error: {error}",
                name(&config.tree)
            );
            let _ = writeln!(io::stderr(), "{}", super::escaped_lines(&line));
        }
        let line = LineFormat {
            json: config.format == Format::Json,
            trace: config.trace,
        };
        match session.run_record() {
            // The pretty format is the recorder's text timeline, a block a tick.
            Some(run) if config.format == Format::Pretty => {
                if n > 1 {
                    writeln!(out)?;
                }
                let index = run.ticks.len().saturating_sub(1);
                write!(out, "{}", timeline_block(run, index, &pretty))?;
            }
            _ => print_tick(out, n, &tick, session.db(), session.tree(), notes, line)?,
        }
    }

    let (record, db) = session.finish();
    if let Some(path) = &config.save {
        save_db(path, &db)?;
    }
    if let (Some(path), Some(record)) = (&config.timeline, record) {
        let html = page(&record, &PageOptions::titled(name(&config.tree)));
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

/// Prints one tick's line.
fn print_tick(
    out: &mut dyn Write,
    n: u64,
    tick: &AgentTick,
    db: &Value,
    tree: &Tree,
    notes: Vec<(Value, Value)>,
    line_format: LineFormat,
) -> Result<(), Failure> {
    let mut line = Map::default();
    line.insert(
        Value::keyword("tick"),
        Value::Int(i64::try_from(n).unwrap_or(i64::MAX)),
    );
    line.insert(Value::keyword("status"), tick.status.to_value());
    // Changes to the tree before the tick: reloads, trims, a carried-over db.
    for (key, note) in notes {
        line.insert(key, note);
    }
    // Deferred actions to start or abandon, only on the ticks that have any.
    for (key, requests) in [("launch", tick.launches()), ("cancel", tick.cancels())] {
        if !requests.is_empty() {
            let requests = requests.iter().map(aido::tick::Request::to_value).collect();
            line.insert(Value::keyword(key), Value::Vector(requests));
        }
    }
    // Completions that answered no request in flight.
    if !tick.dropped().is_empty() {
        let dropped = tick.dropped().iter().map(|d| d.to_value()).collect();
        line.insert(Value::keyword("dropped"), Value::Vector(dropped));
    }
    // What may be a mistake in the tree (a reactive selector's children taking turns).
    if !tick.warnings().is_empty() {
        let warnings = tick.warnings().iter().map(|w| w.to_value()).collect();
        line.insert(Value::keyword("warnings"), Value::Vector(warnings));
    }
    if line_format.trace
        && let Some(trace) = trace_value(tree, tick.trace())
    {
        line.insert(Value::keyword("trace"), trace);
    }
    line.insert(Value::keyword("db"), db.clone());
    let line = Value::Map(Box::new(line));
    if line_format.json {
        // NaN and infinities have no plain JSON form: the run stops there
        // rather than print them as null, as a JSON save refuses them.
        let json = line.to_json_with(JsonMapping::Plain).map_err(|e| {
            Failure::input(
                "--format json",
                format!("tick {n}: {e}; print the run with --format edn"),
            )
        })?;
        writeln!(out, "{json}")?;
    } else {
        writeln!(out, "{line}")?;
    }
    Ok(())
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

/// Switches the session to the tree in `file`, carrying the db over, and
/// gives the reload's report; a file that does not read or compile is
/// refused, with the reason, and the old tree goes on.
fn reload(
    session: &mut Session,
    file: &Path,
    stubs: Option<&super::test::StubsFile>,
    registry_for: &dyn Fn(&Tree) -> aido::Registry,
) -> Value {
    let file_value = Value::string(&name(file));
    let compiled = match stubs {
        // The stubs that name nothing in the new tree are left out, as after a trim.
        Some(stubs) => super::test::compile_restubbed(file, stubs),
        None => compile_tree(file),
    };
    match compiled {
        Ok(new_tree) => {
            let registry = stubs.is_some().then(|| registry_for(&new_tree));
            let report = session.reload(Arc::new(new_tree), registry);
            let mut note = report.to_value();
            if let Some(m) = note.as_map_mut() {
                m.shift_insert(0, Value::keyword("file"), file_value);
            }
            note
        }
        Err(failure) => {
            let reason = match failure {
                Failure::Compile(text) => text.trim_end().to_owned(),
                Failure::Input { what, why } => format!("{what}: {why}"),
                Failure::Usage { reason, .. } => reason,
                Failure::Stdout(e) => e.to_string(),
            };
            Value::map_from([
                (Value::keyword("file"), file_value),
                (Value::keyword("rejected"), Value::string(&reason)),
            ])
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
