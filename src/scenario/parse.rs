//! Reading a scenario file and the files it names.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{
    Expectation, MAX_TICKS, Scenario, ScenarioError, ScenarioErrorKind as K, ScenarioOptions,
};
use crate::diag::did_you_mean;
use crate::read::{read, read_text};
use crate::registry::Registry;
use crate::source::{Source, Spans, excerpt};
use crate::stub::{StubbedCompileError, Stubs};
use crate::tick::Status;
use crate::trim::DataTask;
use crate::value::{JsonMapping, Map, Value};

const KEYS: &[&str] = &[
    "tree",
    "nodes",
    "db",
    "seed",
    "ticks",
    "inputs",
    "stubs",
    "trims",
    "expect",
    "doc",
    "dt",
    "conversation",
    "input-key",
    "reply-key",
    "max-ticks",
];

/// The scenario file's text, value and spans, to point at its parts.
struct File {
    source: Arc<Source>,
    value: Value,
    spans: Spans,
    dir: PathBuf,
    options: ScenarioOptions,
}

impl File {
    /// An error at the form at `path`.
    fn error(&self, kind: K, path: &[usize], message: String) -> ScenarioError {
        let place = match self.spans.span_at(path) {
            Some(span) => format!(
                "{}:{}",
                self.source.name(),
                self.source.line_col(span.start)
            ),
            None => self.source.name().to_owned(),
        };
        ScenarioError {
            kind,
            place,
            message,
            diagnostics: None,
        }
    }

    /// A file named relative to the scenario's folder.
    fn relative(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// Reads the file that the value at `path` (of the key `key`) names:
    /// one in the scenario's folder, unless the options allow others.
    fn named(&self, key: &str, path: &[usize], name: &str) -> Result<Arc<Source>, ScenarioError> {
        let file = self.relative(name);
        if !self.options.allow_outside && !inside(&self.dir, Path::new(name), &file) {
            return Err(self.error(
                K::Outside,
                path,
                format!(
                    "`:{key}` names a file outside the scenario's folder: {}; a scenario reads \
                     only files in its folder (`aido test --allow-outside` allows others)",
                    excerpt(name, 80)
                ),
            ));
        }
        read_source(&file, self.options.max_file_bytes).map_err(|e| {
            self.error(
                K::Io,
                path,
                format!(
                    "`:{key}` names a file that cannot be read: {name}: {}",
                    e.message
                ),
            )
        })
    }
}

/// Whether the file `name`, at `file` (`dir` joined with it), lies in the
/// folder `dir`: `name` is relative without `..`, and where the file
/// exists, its real path (links followed) is under the folder's.
fn inside(dir: &Path, name: &Path, file: &Path) -> bool {
    use std::path::Component;
    let plain = name
        .components()
        .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    if !plain {
        return false;
    }
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    match (std::fs::canonicalize(file), std::fs::canonicalize(dir)) {
        (Ok(file), Ok(dir)) => file.starts_with(dir),
        // Not there: reading it fails with its own reason.
        _ => true,
    }
}

/// Reads a file with the one limited reader ([`crate::source::read_file`]).
fn read_source(path: &Path, max_bytes: u64) -> Result<Arc<Source>, ScenarioError> {
    let text = crate::source::read_file(path, max_bytes).map_err(|e| ScenarioError {
        kind: K::Io,
        place: excerpt(&path.display().to_string(), 200),
        message: e.to_string(),
        diagnostics: None,
    })?;
    Ok(Arc::new(Source::new(path.display().to_string(), text)))
}

fn read_error(source: &Source, e: &crate::ReadError) -> ScenarioError {
    ScenarioError {
        kind: K::Read,
        place: format!("{}:{}", source.name(), source.line_col(e.span.start)),
        message: e.to_string(),
        diagnostics: None,
    }
}

/// Reads an EDN file (or JSON in `json`'s mapping, with the reader of
/// `aido run --db`) that the value at `at` (of the key `key`) names.
fn read_data(
    file: &File,
    key: &str,
    at: &[usize],
    name: &str,
    json: Option<JsonMapping>,
) -> Result<Value, ScenarioError> {
    let source = file.named(key, at, name)?;
    if let Some(mapping) = json {
        return Value::from_json_text(source.text(), mapping).map_err(|e| ScenarioError {
            kind: K::Read,
            place: match e.location {
                Some((line, column)) => format!("{}:{line}:{column}", source.name()),
                None => source.name().to_owned(),
            },
            message: e.to_string(),
            diagnostics: None,
        });
    }
    read_text(source.text())
        .map(|(value, _)| value)
        .map_err(|e| read_error(&source, &e))
}

pub(super) fn load(
    path: &Path,
    registry: &Registry,
    options: &ScenarioOptions,
) -> Result<Scenario, ScenarioError> {
    let source = read_source(path, options.max_file_bytes)?;
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let mut scenario = parse_source(source, dir, registry, options)?;
    scenario.golden = Some(golden_path(path));
    Ok(scenario)
}

/// The golden timeline of the scenario file `path`: `NAME.timeline`
/// beside `NAME.test.edn` (or beside any other name).
///
/// ```
/// use std::path::Path;
/// let golden = aido::scenario::golden_path(Path::new("bots/greet.test.edn"));
/// assert_eq!(golden, Path::new("bots/greet.timeline"));
/// ```
pub fn golden_path(path: &Path) -> PathBuf {
    let file = path
        .file_name()
        .map(|f| f.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem = file
        .strip_suffix(".test.edn")
        .or_else(|| file.strip_suffix(".edn"))
        .unwrap_or(&file);
    path.with_file_name(format!("{stem}.timeline"))
}

pub(super) fn parse(
    name: &str,
    text: &str,
    dir: &Path,
    registry: &Registry,
    options: &ScenarioOptions,
) -> Result<Scenario, ScenarioError> {
    parse_source(
        Arc::new(Source::new(name, text)),
        dir.to_path_buf(),
        registry,
        options,
    )
}

fn parse_source(
    source: Arc<Source>,
    dir: PathBuf,
    registry: &Registry,
    options: &ScenarioOptions,
) -> Result<Scenario, ScenarioError> {
    let (value, spans) = read_text(source.text()).map_err(|e| read_error(&source, &e))?;
    let file = File {
        source,
        value,
        spans,
        dir,
        options: *options,
    };
    let Some(map) = file.value.as_map() else {
        return Err(file.error(
            K::BadValue,
            &[],
            format!(
                "a scenario is a map {{:tree .. :ticks .. :expect [..]}}, found {}",
                file.value.type_with_article()
            ),
        ));
    };
    for (i, key) in map.keys().enumerate() {
        let name = key.as_keyword().map(|k| k.as_str());
        if name.is_some_and(|n| KEYS.contains(&n)) {
            continue;
        }
        let help = name
            .and_then(|n| did_you_mean(n, KEYS.iter().copied()))
            .map(|s| format!(" (did you mean `:{s}`?)"))
            .unwrap_or_default();
        return Err(file.error(
            K::UnknownKey,
            &[2 * i],
            format!(
                "unknown key `{}` in a scenario{help}; it takes :{}",
                key.abbreviated(40).0,
                KEYS.join(" :")
            ),
        ));
    }
    let entry = |key: &str| {
        map.get_full(&Value::keyword(key))
            .map(|(i, _, v)| (vec![2 * i + 1], v))
    };

    // The node model, then the stubs, then the tree compiled with both.
    let mut registry = registry.clone();
    if let Some((path, value)) = entry("nodes") {
        let Value::Str(name) = value else {
            return Err(file.error(
                K::BadValue,
                &path,
                format!(
                    "`:nodes` names a node model file, found {}",
                    value.type_with_article()
                ),
            ));
        };
        let model = file.named("nodes", &path, name)?;
        if let Err(errors) = registry.declare_model_text(model.name(), model.text()) {
            let first = errors.errors.first();
            let place = match first.and_then(|e| errors.line_col(e)) {
                Some(at) => format!("{}:{at}", model.name()),
                None => model.name().to_owned(),
            };
            let message = errors
                .errors
                .iter()
                .enumerate()
                .map(|(i, e)| match (i, errors.line_col(e)) {
                    (0, _) | (_, None) => e.message.clone(),
                    (_, Some(at)) => format!("{at}: {}", e.message),
                })
                .collect::<Vec<_>>()
                .join("; and at ");
            return Err(ScenarioError {
                kind: K::Model,
                place,
                message,
                diagnostics: None,
            });
        }
    }
    let stubs = match entry("stubs") {
        None => Stubs::new(),
        Some((path, Value::Str(name))) => {
            let stub_source = file.named("stubs", &path, name)?;
            let (value, spans) =
                read_text(stub_source.text()).map_err(|e| read_error(&stub_source, &e))?;
            Stubs::from_value_with_spans(&value, Some(&spans)).map_err(|e| ScenarioError {
                kind: K::Stub,
                place: match e.span {
                    Some(s) => format!("{}:{}", stub_source.name(), stub_source.line_col(s.start)),
                    None => stub_source.name().to_owned(),
                },
                message: e.message,
                diagnostics: None,
            })?
        }
        Some((path, value)) => Stubs::at_path(value, Some(&file.spans), &path)
            .map_err(|e| stub_error(&file, &path, e))?,
    };
    let stubs_path = entry("stubs").map(|(p, _)| p).unwrap_or_default();

    let (tree, tree_name) = match entry("tree") {
        None => {
            return Err(file.error(
                K::BadValue,
                &[],
                "a scenario needs `:tree`: a tree file's name or an inline tree".to_owned(),
            ));
        }
        Some((path, Value::Str(name))) => {
            let tree_source = file.named("tree", &path, name)?;
            let doc = read(tree_source.clone()).map_err(|e| read_error(&tree_source, &e))?;
            let loader = crate::compile::FsLoader::for_file(tree_source.name());
            let tree = stubs
                .compile_document_with(doc, &registry, &loader)
                .map_err(|e| compiled_error(&file, &stubs_path, tree_source.name(), e))?;
            (tree, tree_source.name().to_owned())
        }
        Some((path, value @ Value::Vector(_))) => {
            let spans = path.iter().try_fold(file.spans.root(), |s, &i| s.child(i));
            let compiled = match spans {
                Some(spans) => stubs.compile_form(value, spans, file.source.clone(), &registry),
                None => stubs.compile(value, &registry),
            };
            let tree =
                compiled.map_err(|e| compiled_error(&file, &stubs_path, file.source.name(), e))?;
            (tree, file.source.name().to_owned())
        }
        Some((path, other)) => {
            return Err(file.error(
                K::BadValue,
                &path,
                format!(
                    "`:tree` is a tree file's name or an inline tree, found {}",
                    other.type_with_article()
                ),
            ));
        }
    };

    // Trims compile against the same registry, stub placeholders included.
    let registry = stubs.registry_for(tree.form(), &registry);
    let db = match entry("db") {
        None => Value::map(),
        Some((path, Value::Str(name))) => {
            let db_path = file.relative(name);
            let json = JsonMapping::for_path(&db_path);
            let db = read_data(&file, "db", &path, name, json)?;
            if db.as_map().is_none() {
                return Err(ScenarioError {
                    kind: K::BadValue,
                    place: db_path.display().to_string(),
                    message: format!("the db must be a map, found {}", db.type_with_article()),
                    diagnostics: None,
                });
            }
            db
        }
        Some((_, db @ Value::Map(_))) => db.clone(),
        Some((path, other)) => {
            return Err(file.error(
                K::BadValue,
                &path,
                format!(
                    "`:db` is a map or a db file's name, found {}",
                    other.type_with_article()
                ),
            ));
        }
    };
    let seed = match entry("seed") {
        None => None,
        Some((_, Value::Int(s))) => Some(*s),
        Some((path, other)) => {
            return Err(file.error(
                K::BadValue,
                &path,
                format!("`:seed` is an integer, found {}", other.type_with_article()),
            ));
        }
    };
    let dt = match entry("dt") {
        None => None,
        Some((_, v)) if v.as_f64().is_some_and(|dt| dt.is_finite() && dt >= 0.0) => v.as_f64(),
        Some((path, other)) => {
            return Err(file.error(
                K::BadValue,
                &path,
                format!(
                    "`:dt` is a number of seconds, 0 or more, found `{}`",
                    other.abbreviated(40).0
                ),
            ));
        }
    };
    let inputs = match entry("inputs") {
        None => Vec::new(),
        Some((path, value)) => inputs(&file, &path, value)?,
    };
    let trims = match entry("trims") {
        None => Vec::new(),
        Some((path, value)) => {
            let tasks = match value {
                Value::Str(name) => read_data(&file, "trims", &path, name, None)?,
                other => other.clone(),
            };
            // Inline tasks are placed exactly; tasks from a file at `:trims`.
            let inline = !matches!(value, Value::Str(_));
            DataTask::many(&tasks).map_err(|e| {
                let mut at = path.clone();
                if inline {
                    at.extend(&e.path);
                }
                let message = format!("`:trims`: error[{}]: {}", e.kind.code(), e.message);
                file.error(K::BadValue, &at, message)
            })?
        }
    };
    let expect = match entry("expect") {
        None => Vec::new(),
        Some((path, value)) => expectations(&file, &path, value)?,
    };
    let last_expected = expect.iter().map(|e| e.tick).max().unwrap_or(1);
    if let (Some((path, _)), Some(i)) = (
        entry("expect"),
        expect.iter().position(|e| e.tick > MAX_TICKS),
    ) {
        let mut at = path.clone();
        at.push(i);
        return Err(file.error(
            K::BadValue,
            &at,
            format!(
                "expects tick {}: a scenario runs at most {MAX_TICKS} ticks",
                expect[i].tick
            ),
        ));
    }
    let ticks = match entry("ticks") {
        None => last_expected,
        Some((path, Value::Int(n))) if *n > 0 && *n as u64 > MAX_TICKS => {
            return Err(file.error(
                K::BadValue,
                &path,
                format!("`:ticks` is {n}: a scenario runs at most {MAX_TICKS} ticks"),
            ));
        }
        Some((_, Value::Int(n))) if *n > 0 => *n as u64,
        Some((path, other)) => {
            return Err(file.error(
                K::BadValue,
                &path,
                format!(
                    "`:ticks` is a positive integer, found `{}`",
                    other.abbreviated(40).0
                ),
            ));
        }
    };
    if let Some((path, _)) = entry("expect")
        && let Some(i) = expect.iter().position(|e| e.tick > ticks)
    {
        let mut at = path.clone();
        at.push(i);
        return Err(file.error(
            K::BadValue,
            &at,
            format!(
                "expects tick {} but the scenario runs {ticks} tick{}",
                expect[i].tick,
                if ticks == 1 { "" } else { "s" }
            ),
        ));
    }

    let conversation = match entry("conversation") {
        None => {
            for key in ["input-key", "reply-key", "max-ticks"] {
                if let Some((path, _)) = entry(key) {
                    return Err(file.error(
                        K::BadValue,
                        &path,
                        format!("`:{key}` goes with `:conversation`, which this scenario lacks"),
                    ));
                }
            }
            None
        }
        Some((path, value)) => {
            for key in ["ticks", "inputs"] {
                if let Some((at, _)) = entry(key) {
                    return Err(file.error(
                        K::BadValue,
                        &at,
                        format!(
                            "a scenario with `:conversation` ticks turn by turn: `:{key}` \
                             has no place in it"
                        ),
                    ));
                }
            }
            let mut options = crate::session::TurnOptions::default();
            if let Some((at, key)) = entry("input-key") {
                options.input_key = key.clone();
                if key.as_keyword().is_none() {
                    return Err(file.error(K::BadValue, &at, "`:input-key` is a keyword".into()));
                }
            }
            if let Some((at, key)) = entry("reply-key") {
                options.reply_key = key.clone();
                if key.as_keyword().is_none() {
                    return Err(file.error(K::BadValue, &at, "`:reply-key` is a keyword".into()));
                }
            }
            if let Some((at, n)) = entry("max-ticks") {
                match n {
                    Value::Int(n) if *n > 0 && (*n as u64) <= MAX_TICKS => {
                        options.max_ticks = *n as u64;
                    }
                    other => {
                        return Err(file.error(
                            K::BadValue,
                            &at,
                            format!(
                                "`:max-ticks` is a positive integer up to {MAX_TICKS}, found `{}`",
                                other.abbreviated(40).0
                            ),
                        ));
                    }
                }
            }
            Some(super::Conversation {
                steps: conversation(&file, &path, value)?,
                options,
            })
        }
    };

    let mut scenario = Scenario::new(file.source.name().to_owned(), tree);
    scenario.conversation = conversation;
    scenario.tree_name = tree_name;
    scenario.db = db;
    scenario.seed = seed;
    scenario.dt = dt;
    scenario.ticks = ticks;
    scenario.inputs = inputs
        .into_iter()
        .zip(1u64..)
        .filter_map(|(input, tick)| Some((tick, input?)))
        .collect();
    scenario.trims = trims;
    scenario.registry = registry;
    scenario.stubs = stubs;
    scenario.expect = expect;
    Ok(scenario)
}

/// Reads `:conversation`: a vector of turns `[line expectation...]` and
/// db steps `{:db {...}}`.
fn conversation(
    file: &File,
    path: &[usize],
    value: &Value,
) -> Result<Vec<super::ConversationStep>, ScenarioError> {
    use super::{ConversationStep, ExpectedReply, HandlerAnswer};
    let Value::Vector(steps) = value else {
        return Err(file.error(
            K::BadValue,
            path,
            format!(
                "`:conversation` is a vector of turns [\"line\" reply...], found {}",
                value.type_with_article()
            ),
        ));
    };
    let mut out = Vec::with_capacity(steps.len());
    for (i, step) in steps.iter().enumerate() {
        let mut at = path.to_vec();
        at.push(i);
        let turn = |message: String| file.error(K::BadValue, &at, message);
        match step {
            Value::Map(map) => match map.get(&Value::keyword("db")) {
                Some(db @ Value::Map(_)) if map.len() == 1 => {
                    out.push(ConversationStep::Db(db.clone()));
                }
                _ => {
                    return Err(turn(format!(
                        "step {} of `:conversation` is a map: it must be {{:db {{...}}}}, the db \
                         the conversation goes on with",
                        i + 1
                    )));
                }
            },
            Value::Vector(items) => {
                let (line, wake) = match items.first() {
                    Some(Value::Str(line)) => (line.to_string(), None),
                    Some(Value::Keyword(k)) if k.as_str() == "aido/idle" => {
                        (String::new(), Some(crate::session::Wake::Idle))
                    }
                    Some(Value::Keyword(k)) if k.as_str() == "aido/answer" => {
                        (String::new(), Some(crate::session::Wake::Answer))
                    }
                    _ => {
                        return Err(turn(format!(
                            "turn {} of `:conversation` starts with the line typed, a string \
                             (or :aido/idle, :aido/answer for a turn no line started)",
                            i + 1
                        )));
                    }
                };
                let mut answers = Vec::new();
                let mut replies: Option<Vec<ExpectedReply>> = None;
                for (j, item) in items.iter().enumerate().skip(1) {
                    let mut item_at = at.clone();
                    item_at.push(j);
                    match item {
                        Value::Nil => {
                            replies.get_or_insert_with(Vec::new);
                        }
                        Value::Set(set) => replies
                            .get_or_insert_with(Vec::new)
                            .push(ExpectedReply::OneOf(set.iter().cloned().collect())),
                        Value::Map(map) => {
                            let action = map
                                .get(&Value::keyword("handler"))
                                .and_then(Value::as_keyword);
                            let status = match map
                                .get(&Value::keyword("status"))
                                .and_then(Value::as_keyword)
                                .map(|k| k.as_str())
                            {
                                None | Some("success") => Some(Status::Success),
                                Some("failure") => Some(Status::Failure),
                                Some(_) => None,
                            };
                            let known = map.keys().all(|k| {
                                ["handler", "answer", "status"]
                                    .iter()
                                    .any(|name| *k == Value::keyword(name))
                            });
                            match (action, status, known) {
                                (Some(action), Some(status), true) => {
                                    answers.push(HandlerAnswer {
                                        action,
                                        answer: map.get(&Value::keyword("answer")).cloned(),
                                        status,
                                    });
                                }
                                _ => {
                                    return Err(file.error(
                                        K::BadValue,
                                        &item_at,
                                        "a deferred action's answer is {:handler :action-name \
                                         :answer x}, with :status :failure for a failed one"
                                            .to_owned(),
                                    ));
                                }
                            }
                        }
                        other => replies
                            .get_or_insert_with(Vec::new)
                            .push(ExpectedReply::Exact(other.clone())),
                    }
                }
                out.push(ConversationStep::Turn {
                    line,
                    wake,
                    answers,
                    replies,
                });
            }
            other => {
                return Err(turn(format!(
                    "step {} of `:conversation` is a turn [\"line\" reply...] or {{:db {{...}}}}, \
                     found {}",
                    i + 1,
                    other.type_with_article()
                )));
            }
        }
    }
    Ok(out)
}

fn stub_error(file: &File, path: &[usize], e: crate::stub::StubError) -> ScenarioError {
    let place = match e.span {
        Some(span) => format!(
            "{}:{}",
            file.source.name(),
            file.source.line_col(span.start)
        ),
        None => match file.spans.span_at(path) {
            Some(span) => format!(
                "{}:{}",
                file.source.name(),
                file.source.line_col(span.start)
            ),
            None => file.source.name().to_owned(),
        },
    };
    ScenarioError {
        kind: K::Stub,
        place,
        message: e.message,
        diagnostics: None,
    }
}

fn compiled_error(
    file: &File,
    stubs_path: &[usize],
    tree_name: &str,
    e: StubbedCompileError,
) -> ScenarioError {
    match e {
        StubbedCompileError::Compile(diagnostics) => ScenarioError {
            kind: K::Compile,
            place: tree_name.to_owned(),
            message: format!(
                "the tree has {} compile error{}",
                diagnostics.items.len(),
                if diagnostics.items.len() == 1 {
                    ""
                } else {
                    "s"
                }
            ),
            diagnostics: Some(diagnostics),
        },
        StubbedCompileError::Stub(e) => stub_error(file, stubs_path, e),
    }
}

fn inputs(file: &File, path: &[usize], value: &Value) -> Result<Vec<Option<Map>>, ScenarioError> {
    let (items, from_file) = match value {
        Value::Str(name) => {
            let input_path = file.relative(name);
            (
                read_data(file, "inputs", path, name, None)?,
                Some(input_path),
            )
        }
        other => (other.clone(), None),
    };
    let error = |at: &[usize], message: String| match &from_file {
        Some(p) => ScenarioError {
            kind: K::BadValue,
            place: p.display().to_string(),
            message,
            diagnostics: None,
        },
        None => file.error(K::BadValue, at, message),
    };
    let Value::Vector(items) = &items else {
        return Err(error(
            path,
            format!(
                "`:inputs` is a vector of maps or nils (or its file's name), found {}",
                items.type_with_article()
            ),
        ));
    };
    items
        .iter()
        .enumerate()
        .map(|(i, item)| match item {
            Value::Nil => Ok(None),
            Value::Map(m) => Ok(Some(m.as_ref().clone())),
            other => {
                let mut at = path.to_vec();
                at.push(i);
                Err(error(
                    &at,
                    format!(
                        "input {i} (merged before tick {}) must be a map or nil, found {}",
                        i + 1,
                        other.type_with_article()
                    ),
                ))
            }
        })
        .collect()
}

fn expectations(
    file: &File,
    path: &[usize],
    value: &Value,
) -> Result<Vec<Expectation>, ScenarioError> {
    let Value::Vector(items) = value else {
        return Err(file.error(
            K::BadValue,
            path,
            format!(
                "`:expect` is a vector of {{:tick n :status s :db {{..}}}}, found {}",
                value.type_with_article()
            ),
        ));
    };
    let mut out = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let mut at = path.to_vec();
        at.push(i);
        let Value::Map(map) = item else {
            return Err(file.error(
                K::BadValue,
                &at,
                format!(
                    "an expectation is a map {{:tick n :status s :db {{..}}}}, found {}",
                    item.type_with_article()
                ),
            ));
        };
        for (j, key) in map.keys().enumerate() {
            let known = key
                .as_keyword()
                .is_some_and(|k| matches!(k.as_str(), "tick" | "status" | "db"));
            if !known {
                let mut key_at = at.clone();
                key_at.push(2 * j);
                return Err(file.error(
                    K::UnknownKey,
                    &key_at,
                    format!(
                        "unknown key `{}` in an expectation; it takes :tick :status :db",
                        key.abbreviated(40).0
                    ),
                ));
            }
        }
        let field = |name: &str| {
            map.get_full(&Value::keyword(name)).map(|(j, _, v)| {
                let mut p = at.clone();
                p.push(2 * j + 1);
                (p, v)
            })
        };
        let tick = match field("tick") {
            Some((_, Value::Int(n))) if *n > 0 => *n as u64,
            Some((p, other)) => {
                return Err(file.error(
                    K::BadValue,
                    &p,
                    format!(
                        "`:tick` is a tick number from 1, found `{}`",
                        other.abbreviated(40).0
                    ),
                ));
            }
            None => {
                return Err(file.error(
                    K::BadValue,
                    &at,
                    "an expectation needs `:tick`".to_owned(),
                ));
            }
        };
        let status = match field("status") {
            None => None,
            Some((p, v)) => Some(status(v).ok_or_else(|| {
                file.error(
                    K::BadValue,
                    &p,
                    format!(
                        "`:status` is :success, :failure, :running, :error or :skipped, found `{}`",
                        v.abbreviated(40).0
                    ),
                )
            })?),
        };
        let db = match field("db") {
            None => Map::default(),
            Some((_, Value::Map(m))) => m.as_ref().clone(),
            Some((p, other)) => {
                return Err(file.error(
                    K::BadValue,
                    &p,
                    format!(
                        "`:db` is a map of the keys to compare, found {}",
                        other.type_with_article()
                    ),
                ));
            }
        };
        out.push(Expectation { tick, status, db });
    }
    Ok(out)
}

fn status(value: &Value) -> Option<Status> {
    Status::from_value(value)
}
