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
use super::args::{self, RUN_USAGE, RunArgs};
use super::load::{a_type, compile_tree, is_json, name, read_db_or_empty, read_edn, read_json};
use super::save::{ClosableOut, check_target, same_target, save_db, write_atomically};

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
    /// `--ticks`, if given (else the inputs' length, else 1).
    ticks: Option<u64>,
    seed: Option<i64>,
    /// Seconds `:aido/now` moves on before each tick.
    dt: Option<f64>,
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
    /// Exit 1 if a tick ended in Error.
    strict: bool,
}

impl Config {
    fn from_args(parsed: &RunArgs, reloads: Vec<(u64, PathBuf)>) -> Result<Config, Failure> {
        let tree = args::one_tree(&parsed.paths, "run", RUN_USAGE)?;
        let ticks = args::positive("--ticks", parsed.ticks.as_deref())?;
        let seed = args::integer("--seed", parsed.seed.as_deref())?;
        let dt = match args::text("--dt", parsed.dt.as_deref())? {
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
        let format = match args::text("--format", parsed.format.as_deref())? {
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
        let aido_keys = parsed.aido_keys;
        if aido_keys && format != Format::Pretty {
            return Err(Failure::input(
                "--aido-keys",
                "shows :aido/* keys in `--format pretty` only; the edn and json lines always have them",
            ));
        }
        let path = |value: &Option<OsString>| value.as_ref().map(PathBuf::from);
        // The page is written after the last tick: a path that cannot be a
        // file is refused before the first.
        if let Some(tree) = path(&parsed.save_tree)
            && super::load::is_json(&tree)
        {
            return Err(Failure::input(
                "--save-tree",
                format!("a tree is saved as EDN, not JSON: `{}`", tree.display()),
            ));
        }
        let timeline = path(&parsed.timeline);
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
            db: path(&parsed.db),
            ticks,
            seed,
            dt,
            inputs: path(&parsed.inputs),
            save: path(&parsed.save),
            save_tree: path(&parsed.save_tree),
            format,
            trace: parsed.trace,
            aido_keys,
            timeline,
            trims: path(&parsed.trims),
            reloads,
            strict: parsed.strict,
        })
    }
}

pub(crate) fn main(parsed: &RunArgs, out: &mut dyn Write) -> Result<i32, Failure> {
    let reloads = reloads(&parsed.reload)?;
    let config = Config::from_args(parsed, reloads)?;

    // Every file is read and checked before the first tick, so a bad one prints nothing.
    super::use_model(parsed.nodes.as_deref())?;
    let stubs = parsed
        .stubs
        .as_ref()
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
        tasks = DataTask::many(&file.value).map_err(|e| {
            let place = file
                .spans
                .span_at(&e.path)
                .map_or_else(|| name(path), |span| file.place(span));
            Failure::input(place, format!("error[{}]: {}", e.kind.code(), e.message))
        })?;
    }
    let mut db = read_db_or_empty(config.db.as_deref())?;
    // A save made by `aido run` says how many ticks it has had: this run
    // goes on from there.
    let before = match &config.db {
        Some(path) => ticks_saved(&mut db, path)?,
        None => 0,
    };
    let inputs = match &config.inputs {
        Some(path) => read_inputs(path, config.ticks)?,
        None => Vec::new(),
    };
    let ticks = config.ticks.unwrap_or_else(|| (inputs.len() as u64).max(1));
    // A reload file is compiled now, not at its tick: a broken one, or one
    // for a tick the run never reaches, stops the run before it starts.
    let mut reload_trees = Vec::with_capacity(config.reloads.len());
    let last = before.saturating_add(ticks);
    for (at, file) in &config.reloads {
        if *at > last {
            return Err(Failure::input(
                "--reload",
                if before == 0 {
                    format!(
                        "{at}={}: the run has {ticks} tick{}, so tick {at} never comes",
                        file.display(),
                        if ticks == 1 { "" } else { "s" }
                    )
                } else {
                    format!(
                        "{at}={}: the run goes on from the save to tick {last}, so tick {at} never comes",
                        file.display(),
                    )
                },
            ));
        }
        if *at <= before {
            return Err(Failure::input(
                "--reload",
                format!(
                    "{at}={}: the run goes on from the save after tick {before}, so tick {at} has passed",
                    file.display(),
                ),
            ));
        }
        let new_tree = match &stubs {
            // The stubs that name nothing in the new tree are left out, as after a trim.
            Some(stubs) => super::test::compile_restubbed(file, stubs)?,
            None => compile_tree(file)?,
        };
        reload_trees.push((*at, file.as_path(), Some(new_tree)));
    }
    let mut errors = 0u64;
    if let Some(seed) = config.seed {
        seed_db(&mut db, seed);
    }
    // Saving over the db read is how a save game goes on; over any other
    // input file it is a mistake. The page is never written over an input.
    let mut input_files: Vec<&Path> = vec![&config.tree];
    input_files.extend(config.inputs.as_deref());
    input_files.extend(config.trims.as_deref());
    input_files.extend(config.reloads.iter().map(|(_, file)| file.as_path()));
    input_files.extend(parsed.stubs.as_ref().map(Path::new));
    input_files.extend(parsed.nodes.as_ref().map(Path::new));
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
    let handlers = super::handler_programs(&parsed.handler, parsed.handler_timeout.as_deref())?;
    let mut session = Session::new(Arc::new(tree), db);
    session.set_registry(registry);
    if let Some((handlers, _)) = handlers {
        session.set_handlers(Box::new(handlers));
    }
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
        session.record_numbered_from(before + 1);
    }
    let pretty = TimelineOptions {
        aido_keys: config.aido_keys,
        trace: config.trace,
    };

    for i in 1..=ticks {
        // Ticks are numbered on from the save's; the inputs are this run's.
        let n = before.saturating_add(i);
        // The time, then the input, are merged before the tick, and
        // recorded as its input.
        if let Some(dt) = config.dt {
            session
                .advance_time(dt)
                .map_err(|e| Failure::input("--dt", format!("before tick {n}: {e}")))?;
        }
        let input = usize::try_from(i - 1).ok().and_then(|i| inputs.get(i));
        if let Some(Some(input)) = input {
            session.input(input);
        }
        let mut notes = Vec::new();
        let mut reloaded = Vec::new();
        for (_, file, new_tree) in reload_trees.iter_mut().filter(|(at, ..)| *at == n) {
            let Some(new_tree) = new_tree.take() else {
                continue;
            };
            let registry = stubs.is_some().then(|| registry_for(&new_tree));
            let report = session.reload(Arc::new(new_tree), registry);
            let mut note = report.to_value();
            if let Some(m) = note.as_map_mut() {
                m.shift_insert(0, Value::keyword("file"), Value::string(&name(file)));
            }
            session.note(Event::Reload(note.clone()));
            reloaded.push(note);
        }
        // One reload: its report; several before one tick: all of them, in order.
        match reloaded.len() {
            0 => {}
            1 => notes.extend(reloaded.pop().map(|note| (Value::keyword("reload"), note))),
            _ => notes.push((Value::keyword("reload"), Value::Vector(reloaded.into()))),
        }
        let gap = session.between_ticks();
        if gap.trimmed {
            let reports: Vec<Value> = gap.trims.iter().map(|r| r.to_value(config.trace)).collect();
            notes.push((Value::keyword("trim"), Value::Vector(reports.into())));
        }
        let tick = session.tick();
        if let Some(m) = tick.migration() {
            notes.push((Value::keyword("migrated"), m.to_value()));
        }
        if let Some(error) = &tick.error {
            out.flush()?;
            errors += 1;
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
                if i > 1 {
                    writeln!(out)?;
                }
                let index = run.n_ticks().saturating_sub(1);
                write!(out, "{}", timeline_block(run, index, &pretty))?;
            }
            _ => print_tick(out, n, &tick, session.db(), session.tree(), notes, line)?,
        }
    }

    let final_tree = Arc::clone(session.tree());
    let (record, mut db) = session.finish();
    if let Some(path) = &config.save {
        if let Some(map) = db.as_map_mut() {
            let done = i64::try_from(last).unwrap_or(i64::MAX);
            map.insert(Value::keyword(TICKS_SAVED), Value::Int(done));
        }
        save_db(path, &db)?;
    }
    // The tree the save was last ticked with: after trims, the only copy.
    if let Some(path) = &config.save_tree {
        save_db(path, final_tree.form())?;
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
    Ok(if config.strict && errors > 0 { 1 } else { 0 })
}

/// The key under which a save says how many ticks it has had. Only saves
/// carry it: a run that reads it takes it out of the db before the first
/// tick, so no tick sees it and no printed db shows it.
const TICKS_SAVED: &str = "aido/tick";

/// Takes the count of ticks a save has had (`:aido/tick`) out of `db`,
/// read from `path`: 0 for a db without it.
fn ticks_saved(db: &mut Value, path: &Path) -> Result<u64, Failure> {
    let Some(map) = db.as_map_mut() else {
        return Ok(0);
    };
    match map.shift_remove(&Value::keyword(TICKS_SAVED)) {
        None => Ok(0),
        Some(Value::Int(n)) if n >= 0 => Ok(n.unsigned_abs()),
        Some(other) => Err(Failure::input(
            name(path),
            format!(
                "`:{TICKS_SAVED}` is how many ticks the save has had, a whole number 0 or more; found {} `{}`",
                a_type(&other),
                aido::source::excerpt(&other.to_string(), 40)
            ),
        )),
    }
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
                Some(Value::vector([id(node), status.to_value()]))
            }
            TraceEvent::Halted { node } => Some(Value::vector([Value::keyword("halt"), id(node)])),
            _ => None,
        })
        .collect();
    Some(Value::Vector(events))
}

/// Tree files to switch to, each with the tick before which to switch.
type Reloads = Vec<(u64, PathBuf)>;

/// Reads every `--reload N=FILE`.
fn reloads(values: &[OsString]) -> Result<Reloads, Failure> {
    let mut reloads = Vec::new();
    for value in values {
        let value = value.to_string_lossy();
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
    Ok(reloads)
}

/// Reads the inputs file (EDN, or JSON if its name ends in `.json`): a
/// vector whose elements (maps or nils) are merged into the db before each
/// tick. With `ticks` given, elements past the last tick are not checked.
fn read_inputs(path: &Path, ticks: Option<u64>) -> Result<Vec<Option<Map>>, Failure> {
    let (value, file) = if is_json(path) {
        (read_json(path)?, None)
    } else {
        let file = read_edn(path)?;
        (file.value.clone(), Some(file))
    };
    let Value::Vector(items) = &value else {
        return Err(Failure::input(
            name(path),
            format!(
                "the inputs must be a vector of maps or nils, found {}",
                a_type(&value)
            ),
        ));
    };
    let used = ticks.map_or(usize::MAX, |t| usize::try_from(t).unwrap_or(usize::MAX));
    items
        .iter()
        .take(used)
        .enumerate()
        .map(|(i, item)| match item {
            Value::Nil => Ok(None),
            Value::Map(map) => Ok(Some(map.as_ref().clone())),
            other => {
                let place = file
                    .as_ref()
                    .and_then(|f| f.spans.span_at(&[i]).map(|s| f.place(s)))
                    .unwrap_or_else(|| name(path));
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
