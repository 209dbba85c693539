//! `aido chat TREE [options]`: talk to a tree, a line at a time.

use std::ffi::OsString;
use std::io::{self, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use aido::record::{Event, PageOptions, TimelineOptions, page, timeline_block};
use aido::scenario::{ConversationStep, ExpectedReply};
use aido::session::{Session, Turn, TurnOptions, Wake, seed_db};
use aido::tick::Status;
use aido::value::JsonMapping;
use aido::{Tree, Value};

use super::Failure;
use super::args::{self, CHAT_USAGE, ChatArgs};
use super::chat_input::{Heard, Lines};
use super::load::{
    compile_tree, io_reason, max_input_bytes, name, read_db, read_db_or_empty, read_file,
};
use super::save::{check_target, save_db, write_atomically};

/// The help the `:help` command prints.
const COMMANDS: &str = "\
:db [KEY|PATH]  :why  :trace on|off  :undo  :reset  :seed N
:save FILE  :load FILE  :timeline FILE  :inject {..}  :help";

/// The checked settings of one chat.
#[derive(Debug)]
struct Config {
    tree: PathBuf,
    db: Option<PathBuf>,
    save: Option<PathBuf>,
    turn: TurnOptions,
    seed: Option<i64>,
    record: Option<PathBuf>,
    jsonl: bool,
    watch: bool,
    /// `--idle`: the silence after which the tree is ticked with `:aido/idle true`.
    idle: Option<Duration>,
    /// `--history`: the file a terminal's line history is read from and saved to.
    history: Option<PathBuf>,
}

impl Config {
    fn from_args(parsed: &ChatArgs) -> Result<Config, Failure> {
        let tree = args::one_tree(&parsed.paths, "chat", CHAT_USAGE)?;
        let mut turn = TurnOptions::default();
        for (flag, value, slot) in [
            ("--input-key", &parsed.input_key, &mut turn.input_key),
            ("--reply-key", &parsed.reply_key, &mut turn.reply_key),
        ] {
            if let Some(key) = args::keyword(flag, value.as_deref())? {
                *slot = key;
            }
        }
        if let Some(n) = args::positive("--max-ticks", parsed.max_ticks.as_deref())? {
            turn.max_ticks = n;
        }
        let path = |value: &Option<OsString>| value.as_ref().map(PathBuf::from);
        Ok(Config {
            tree,
            db: path(&parsed.db),
            save: path(&parsed.save),
            turn,
            seed: args::integer("--seed", parsed.seed.as_deref())?,
            record: path(&parsed.record),
            jsonl: parsed.jsonl,
            watch: parsed.watch,
            idle: super::seconds("--idle", parsed.idle.as_deref())?,
            history: path(&parsed.history),
        })
    }
}

pub(crate) fn main(parsed: &ChatArgs, out: &mut dyn Write) -> Result<i32, Failure> {
    if parsed.store.is_some() {
        return super::worker::chat_main(parsed, out);
    }
    if parsed.user.is_some() {
        return Err(Failure::usage(
            "--user ID names an agent in a store: give --store URL too",
            CHAT_USAGE,
        ));
    }
    let config = Config::from_args(parsed)?;
    super::use_model(parsed.nodes.as_deref())?;
    let tree_text = read_file(&config.tree)?;
    let tree = compile_tree(&config.tree)?;
    let mut db = read_db_or_empty(config.db.as_deref())?;
    if let Some(seed) = config.seed {
        seed_db(&mut db, seed);
    }
    let mut inputs: Vec<&Path> = vec![&config.tree];
    inputs.extend(parsed.nodes.as_ref().map(Path::new));
    let golden = config.record.as_deref().map(aido::scenario::golden_path);
    for target in [&config.save, &config.record, &golden]
        .into_iter()
        .flatten()
    {
        check_target(target, &inputs)?;
    }
    let handlers = super::handler_programs(&parsed.handler, parsed.handler_timeout.as_deref())?;
    let watched = watched_files(&config.tree, tree_text, &tree);
    let mut chat = Chat::new(tree, db, config);
    chat.watched = watched;
    if let Some((handlers, actions)) = handlers {
        chat.session.set_handlers(Box::new(handlers));
        chat.handled = actions;
    }
    let limit = max_input_bytes()?;
    let terminal = io::stdin().is_terminal() && !chat.config.jsonl;
    let mut lines = Lines::start(terminal, limit, chat.config.history.clone())
        .map_err(|why| Failure::input("the terminal", why))?;
    chat.session.set_interrupt(lines.typed());
    lines.ask();
    let mut idle_due = chat.config.idle.map(|idle| Instant::now() + idle);
    loop {
        // An answer that came in while the chat waited for a line is taken
        // at once, and what the tree says to it is printed.
        if chat.session.answers_ready() {
            let mut said = Vec::new();
            chat.wake(Wake::Answer, &mut said)?;
            lines.print(&said, out)?;
            continue;
        }
        let now = Instant::now();
        let until_idle = idle_due.map(|due| due.saturating_duration_since(now));
        let timeout = if chat.session.handlers_busy() {
            Some(until_idle.map_or(ANSWER_POLL, |left| left.min(ANSWER_POLL)))
        } else {
            until_idle
        };
        match lines.wait(timeout) {
            Some(Heard::Line(line)) => {
                let mut said = Vec::new();
                if chat.config.jsonl {
                    chat.json_line(&line, &mut said)?;
                } else {
                    chat.line(&line, &mut said)?;
                }
                lines.print(&said, out)?;
                idle_due = chat.config.idle.map(|idle| Instant::now() + idle);
                lines.ask();
            }
            Some(Heard::Skipped(why)) => {
                chat.notice(&why);
                lines.ask();
            }
            Some(Heard::End) => break,
            None if idle_due.is_some_and(|due| Instant::now() >= due) => {
                // Once a silence: the next idle turn waits for a line first.
                idle_due = None;
                let mut said = Vec::new();
                chat.wake(Wake::Idle, &mut said)?;
                lines.print(&said, out)?;
            }
            None => {}
        }
    }
    lines.finish();
    chat.finish()?;
    Ok(0)
}

/// How often a chat waiting for a line looks for a handler's answer.
const ANSWER_POLL: Duration = Duration::from_millis(50);

/// A reply as a chat prints it: a string as its text, anything else as
/// EDN, control characters escaped.
pub(super) fn reply_text(reply: &Value) -> String {
    let text = match reply {
        Value::Str(s) => s.to_string(),
        other => other.to_string(),
    };
    super::escaped_lines(&text)
}

/// What `:undo` puts back.
struct Undo {
    db: Value,
    /// How many steps the recording had.
    steps: usize,
}

/// A chat: the session, what `:undo` and `:reset` go back to, the recording.
struct Chat {
    session: Session,
    config: Config,
    start_db: Value,
    undo: Vec<Undo>,
    /// The chat as a conversation, for `--record`.
    steps: Vec<ConversationStep>,
    /// The ticks before the last turn, and after it.
    last_turn: Option<(u64, u64)>,
    turns: u64,
    trace: bool,
    /// The tree file and the files it includes, each with its text as last
    /// read, for `--watch`.
    watched: Vec<(PathBuf, String)>,
    /// The actions a `--handler` program does.
    handled: Vec<aido::value::Keyword>,
}

impl Chat {
    fn new(tree: Tree, db: Value, config: Config) -> Chat {
        let start_db = db.clone();
        let mut session = Session::new(Arc::new(tree), db);
        session.record();
        Chat {
            session,
            config,
            start_db,
            undo: Vec::new(),
            steps: Vec::new(),
            last_turn: None,
            turns: 0,
            trace: false,
            watched: Vec::new(),
            handled: Vec::new(),
        }
    }

    /// One line of text: a command, or a line said to the tree.
    fn line(&mut self, line: &str, out: &mut dyn Write) -> Result<(), Failure> {
        if let Some(said) = line.strip_prefix("::") {
            let said = format!(":{said}");
            return self.say(&said, out);
        }
        if line.starts_with(':') && line[1..].starts_with(|c: char| c.is_ascii_alphabetic()) {
            let text = self.command(line)?;
            if !text.is_empty() {
                writeln!(out, "{}", super::escaped_lines(text.trim_end()))?;
            }
            return Ok(());
        }
        self.say(line, out)
    }

    /// One JSON line: `{"input": ..}` or `{"command": ..}`.
    fn json_line(&mut self, line: &str, out: &mut dyn Write) -> Result<(), Failure> {
        if line.trim().is_empty() {
            return Ok(());
        }
        let json: Result<serde_json::Value, _> = serde_json::from_str(line);
        let field = |name: &str| {
            json.as_ref()
                .ok()
                .and_then(|j| j.get(name))
                .and_then(serde_json::Value::as_str)
                .map(str::to_owned)
        };
        let reply = if let Some(input) = field("input") {
            let turn = self.turn(Some(&input), Wake::Answer)?;
            serde_json::Value::Object(self.json_turn(&turn))
        } else if let Some(command) = field("command") {
            let text = self.command(&command)?;
            serde_json::json!({ "output": text.trim_end() })
        } else {
            serde_json::json!({
                "error": "expected a JSON object {\"input\": \"...\"} or {\"command\": \":db\"}"
            })
        };
        writeln!(out, "{reply}")?;
        Ok(())
    }

    /// A turn as a JSON object: `{"replies": [..], "status": ..}`, with
    /// `"error"` for a tick that ended in one.
    fn json_turn(&self, turn: &Turn) -> serde_json::Map<String, serde_json::Value> {
        {
            let mut fields = serde_json::Map::new();
            let replies = turn
                .replies
                .iter()
                .map(|r| match r {
                    Value::Str(s) => serde_json::Value::String(s.to_string()),
                    other => other
                        .to_json_with(JsonMapping::Plain)
                        .unwrap_or_else(|_| serde_json::Value::String(other.to_string())),
                })
                .collect();
            fields.insert("replies".into(), serde_json::Value::Array(replies));
            fields.insert("status".into(), status_name(turn.status).into());
            if let Some(error) = &turn.last.error {
                fields.insert("error".into(), error.to_string().into());
            }
            fields
        }
    }

    /// Says `line` to the tree and prints the replies.
    fn say(&mut self, line: &str, out: &mut dyn Write) -> Result<(), Failure> {
        let turn = self.turn(Some(line), Wake::Answer)?;
        self.print_turn(&turn, out)
    }

    /// A turn no line started (an answer came, or the silence was long):
    /// what the tree says is printed as a line's replies are, or as one
    /// JSON line with `"wake"` saying why.
    fn wake(&mut self, why: Wake, out: &mut dyn Write) -> Result<(), Failure> {
        let turn = self.turn(None, why)?;
        if self.config.jsonl {
            let mut fields = self.json_turn(&turn);
            let why = if why == Wake::Idle { "idle" } else { "answer" };
            fields.insert("wake".into(), why.into());
            writeln!(out, "{}", serde_json::Value::Object(fields))?;
            return Ok(());
        }
        self.print_turn(&turn, out)
    }

    /// Prints a turn's replies, one a line, and its ticks under `:trace on`.
    fn print_turn(&self, turn: &Turn, out: &mut dyn Write) -> Result<(), Failure> {
        for reply in &turn.replies {
            writeln!(out, "{}", reply_text(reply))?;
        }
        if self.trace
            && let (Some(run), Some((from, to))) = (self.session.run_record(), self.last_turn)
        {
            let options = TimelineOptions {
                trace: true,
                ..TimelineOptions::default()
            };
            for i in from..to {
                let block = timeline_block(run, usize::try_from(i).unwrap_or(usize::MAX), &options);
                write!(out, "{}", super::escaped_lines(&block))?;
                if !block.ends_with('\n') {
                    writeln!(out)?;
                }
            }
        }
        Ok(())
    }

    /// Runs one turn, of `line` or (with none) woken by `why`, saves the
    /// db and notes the turn for `--record`.
    fn turn(&mut self, line: Option<&str>, why: Wake) -> Result<Turn, Failure> {
        if self.config.watch {
            self.reload();
        }
        self.undo.push(Undo {
            db: self.session.db().clone(),
            steps: self.steps.len(),
        });
        let from = self.session.ticks();
        let turn = match line {
            Some(line) => self.session.turn(line, &self.config.turn),
            None => self.session.wake(why, &self.config.turn),
        };
        self.turns += 1;
        self.last_turn = Some((from, self.session.ticks()));
        for launch in turn
            .launches
            .iter()
            .filter(|l| !self.handled.contains(&l.action))
        {
            self.notice(&format!(
                "turn {}: {} (request {}) was launched, and no handler does it: it stays in flight",
                self.turns, launch.action, launch.request
            ));
        }
        if let Some(error) = &turn.last.error {
            self.notice(&format!("turn {} ended in error: {error}", self.turns));
        } else if turn.interrupted {
            self.notice(&format!(
                "turn {} still waits for a handler; the line typed meanwhile goes on with it",
                self.turns
            ));
        } else if turn.status == Status::Running {
            self.notice(&format!(
                "turn {} is still running after {} ticks (--max-ticks); the next line goes on with it",
                self.turns, turn.ticks
            ));
        }
        let replies = if turn.replies.is_empty() {
            Vec::new()
        } else {
            turn.replies
                .iter()
                .cloned()
                .map(ExpectedReply::Exact)
                .collect()
        };
        self.steps.push(ConversationStep::Turn {
            line: line.unwrap_or_default().to_owned(),
            wake: if line.is_some() { None } else { Some(why) },
            answers: turn
                .completions
                .iter()
                .map(|c| aido::scenario::HandlerAnswer {
                    action: c.action,
                    answer: c.result.clone(),
                    status: c.status,
                })
                .collect(),
            replies: Some(replies),
        });
        self.save()?;
        Ok(turn)
    }

    /// A command line; gives what to print.
    fn command(&mut self, line: &str) -> Result<String, Failure> {
        let (word, rest) = match line.split_once(char::is_whitespace) {
            Some((word, rest)) => (word, rest.trim()),
            None => (line, ""),
        };
        let text = match (word, rest) {
            (":help", _) => COMMANDS.to_owned(),
            (":db", "") => self.session.db().to_string(),
            (":db", path) => match aido::read::read_value(path) {
                Ok(value) => match &value {
                    Value::Vector(path) => show(self.session.db().get_in(path)),
                    key => show(self.session.db().get(key)),
                },
                Err(e) => format!(":db: {path}: {e}"),
            },
            (":why", _) => self.why(),
            (":trace", "on") => {
                self.trace = true;
                "trace on".to_owned()
            }
            (":trace", "off") => {
                self.trace = false;
                "trace off".to_owned()
            }
            (":undo", "") => match self.undo.pop() {
                Some(undo) => {
                    *self.session.db_mut() = undo.db;
                    self.steps.truncate(undo.steps);
                    self.last_turn = None;
                    self.save()?;
                    "undone: the db is as it was before the last line".to_owned()
                }
                None => "nothing to undo".to_owned(),
            },
            (":reset", "") => {
                self.set_db(self.start_db.clone())?;
                "the db is as it was when the chat started".to_owned()
            }
            (":seed", n) => match n.parse::<i64>() {
                Ok(seed) => {
                    let mut db = self.session.db().clone();
                    seed_db(&mut db, seed);
                    self.set_db(db)?;
                    format!("seeded with {seed}")
                }
                Err(_) => format!(":seed takes an integer, got `{n}`"),
            },
            (":save", file) if !file.is_empty() => {
                match save_db(Path::new(file), self.session.db()) {
                    Ok(()) => format!("saved to {file}"),
                    Err(failure) => failure_line(failure),
                }
            }
            (":load", file) if !file.is_empty() => match read_db(Path::new(file)) {
                Ok(db) => {
                    self.set_db(db)?;
                    format!("loaded {file}")
                }
                Err(failure) => failure_line(failure),
            },
            (":timeline", file) if !file.is_empty() => match self.session.run_record() {
                Some(run) => {
                    let html = page(run, &PageOptions::titled(name(&self.config.tree)));
                    match write_atomically(Path::new(file), html.as_bytes()) {
                        Ok(()) => format!("wrote {file}"),
                        Err(e) => format!("{file}: cannot save: {}", io_reason(&e)),
                    }
                }
                None => "nothing recorded".to_owned(),
            },
            (":inject", map) => match aido::read::read_value(map) {
                Ok(value) => match value.as_map() {
                    Some(map) => {
                        let mut db = self.session.db().clone();
                        if let Some(db) = db.as_map_mut() {
                            db.extend(map.iter().map(|(k, v)| (k.clone(), v.clone())));
                        }
                        self.set_db(db)?;
                        "injected".to_owned()
                    }
                    None => format!(
                        ":inject takes a map {{..}}, found {}",
                        value.type_with_article()
                    ),
                },
                Err(e) => format!(":inject: {e}"),
            },
            _ => format!("unknown command or bad argument `{line}`: {COMMANDS}"),
        };
        Ok(text)
    }

    /// Takes the tree again if its file or a file it includes changed
    /// (`--watch`): a tree that compiles takes over with the db carried
    /// over; one that does not is refused with its diagnostics, and the old
    /// tree goes on (until a file changes again).
    fn reload(&mut self) {
        let mut changed = false;
        let mut unreadable = Vec::new();
        for (path, text) in &mut self.watched {
            match read_file(path) {
                Ok(new) if new == *text => {}
                Ok(new) => {
                    *text = new;
                    changed = true;
                }
                Err(failure) => unreadable.push(failure_line(failure)),
            }
        }
        if let Some(why) = unreadable.first() {
            self.notice(&format!(
                "cannot read the tree again ({why}); the old tree goes on"
            ));
            return;
        }
        if !changed {
            return;
        }
        match compile_tree(&self.config.tree) {
            Ok(tree) => {
                let top = self
                    .watched
                    .first()
                    .map(|(_, t)| t.clone())
                    .unwrap_or_default();
                self.watched = watched_files(&self.config.tree, top, &tree);
                let report = self.session.reload(Arc::new(tree), None);
                let note = report.to_value();
                self.session.note(Event::Reload(note.clone()));
                self.notice(&format!("the tree changed and was reloaded: {note}"));
            }
            Err(failure) => {
                self.notice(&format!(
                    "the tree changed but is refused, and the old tree goes on:\n{}",
                    failure_line(failure).trim_end()
                ));
            }
        }
    }

    /// The db becomes `db` (undoably), and so in the recording.
    fn set_db(&mut self, db: Value) -> Result<(), Failure> {
        self.undo.push(Undo {
            db: self.session.db().clone(),
            steps: self.steps.len(),
        });
        self.steps.push(ConversationStep::Db(db.clone()));
        *self.session.db_mut() = db;
        self.save()
    }

    /// The nodes that succeeded in the last turn's last tick, with no
    /// child that did: the leaves that decided it, and the db keys their
    /// options name.
    fn why(&self) -> String {
        let (Some(run), Some((_, to))) = (self.session.run_record(), self.last_turn) else {
            return "no turn yet".to_owned();
        };
        let Some(tick) = usize::try_from(to)
            .ok()
            .and_then(|t| t.checked_sub(1))
            .and_then(|i| run.tick(i))
        else {
            return "no turn yet".to_owned();
        };
        let Some(tree) = run.trees.get(tick.tree) else {
            return String::new();
        };
        let mut lines = Vec::new();
        for (i, visit) in tick.visits.iter().enumerate() {
            let leaf = tick
                .visits
                .get(i + 1)
                .is_none_or(|next| next.depth <= visit.depth);
            if !leaf || visit.status != Status::Success {
                continue;
            }
            let Some(node) = tree.nodes.get(visit.node.index()) else {
                continue;
            };
            let keys: Vec<String> = node
                .options
                .iter()
                .flatten()
                .filter(|(k, _)| k.as_keyword().is_some_and(|k| k.as_str().ends_with("key")))
                .map(|(_, v)| v.to_string())
                .collect();
            let mut line = format!(
                "{} {} {}",
                visit.id,
                node.node_type,
                status_name(visit.status)
            );
            if !keys.is_empty() {
                line.push_str(&format!(", key {}", keys.join(" ")));
            }
            lines.push(line);
        }
        if lines.is_empty() {
            "no node succeeded in the last tick".to_owned()
        } else {
            lines.join("\n")
        }
    }

    /// Saves the db to `--save`, if given.
    fn save(&self) -> Result<(), Failure> {
        match &self.config.save {
            Some(path) => save_db(path, self.session.db()),
            None => Ok(()),
        }
    }

    /// A line on standard error, `aido: TREE: what`.
    fn notice(&self, what: &str) {
        let line = format!("aido: {}: {what}", name(&self.config.tree));
        let _ = writeln!(io::stderr(), "{}", super::escaped_lines(&line));
    }

    /// Writes the recording, if asked for.
    fn finish(&self) -> Result<(), Failure> {
        let Some(path) = &self.config.record else {
            return Ok(());
        };
        let text = recording(
            &self.config.tree,
            path,
            self.session.tree(),
            &self.start_db,
            &self.config.turn,
            &self.steps,
        );
        // What aido writes, aido reads.
        if aido::read::read_value(&text).is_err() {
            return Err(Failure::input(
                name(path),
                "cannot save: the recording does not read back",
            ));
        }
        write_atomically(path, text.as_bytes())
            .map_err(|e| Failure::input(name(path), format!("cannot save: {}", io_reason(&e))))?;
        self.write_golden(path)
    }

    /// Writes the recording's golden timeline beside it (`NAME.timeline`),
    /// as `aido test --accept` writes one: the timeline of the recording's
    /// replay, so `aido test` checks every tick too. (The live chat's own
    /// ticks are not the golden: how many ticks a turn spent waiting for a
    /// program depends on how fast it answered, and the replay answers at
    /// once.)
    fn write_golden(&self, path: &Path) -> Result<(), Failure> {
        let options = aido::scenario::ScenarioOptions::default()
            .allow_outside(true)
            .max_file_bytes(max_input_bytes()?);
        let scenario = aido::scenario::Scenario::load_with(path, &super::registry(), &options)
            .map_err(|e| {
                Failure::input(name(path), format!("does not load back: {}", e.message))
            })?;
        let Some(golden) = &scenario.golden else {
            return Ok(());
        };
        let run = scenario.run();
        if let Some(why) = &run.stopped {
            self.notice(&format!("no golden timeline written: {why}"));
            return Ok(());
        }
        write_atomically(golden, run.timeline.as_bytes())
            .map_err(|e| Failure::input(name(golden), format!("cannot save: {}", io_reason(&e))))
    }
}

/// The files `--watch` looks at: the tree file (with `text`, as read) and
/// each file the compiled `tree` includes, with the text it was compiled
/// from.
fn watched_files(path: &Path, text: String, tree: &Tree) -> Vec<(PathBuf, String)> {
    let mut files = vec![(path.to_owned(), text)];
    if let Some(map) = tree.files() {
        files.extend(
            map.sources()
                .skip(1)
                .map(|source| (PathBuf::from(source.name()), source.text().to_owned())),
        );
    }
    files
}

/// The chat as a scenario file: the tree by its name relative to the
/// recording's folder when it lies in it, else inline.
fn recording(
    tree_file: &Path,
    record: &Path,
    tree: &Tree,
    start_db: &Value,
    options: &TurnOptions,
    steps: &[ConversationStep],
) -> String {
    let dir = record
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let relative = match (std::fs::canonicalize(tree_file), std::fs::canonicalize(dir)) {
        (Ok(file), Ok(dir)) => file
            .strip_prefix(&dir)
            .ok()
            .and_then(|p| p.to_str())
            .map(str::to_owned),
        _ => None,
    };
    let tree = match relative {
        Some(relative) => Value::string(&relative),
        None => tree.form().clone(),
    };
    let mut text = format!(
        ";; Recorded by `aido chat`: `aido test` replays it.\n{{:tree {tree}\n :db {start_db}\n"
    );
    let defaults = TurnOptions::default();
    if options.input_key != defaults.input_key {
        text.push_str(&format!(" :input-key {}\n", options.input_key));
    }
    if options.reply_key != defaults.reply_key {
        text.push_str(&format!(" :reply-key {}\n", options.reply_key));
    }
    if options.max_ticks != defaults.max_ticks {
        text.push_str(&format!(" :max-ticks {}\n", options.max_ticks));
    }
    text.push_str(" :conversation\n [");
    for (i, step) in steps.iter().enumerate() {
        if i > 0 {
            text.push_str("\n  ");
        }
        let value = match step {
            ConversationStep::Db(db) => Value::map_from([(Value::keyword("db"), db.clone())]),
            ConversationStep::Turn {
                line,
                wake,
                answers,
                replies,
            } => {
                let mut items = vec![match wake {
                    None => Value::string(line),
                    Some(Wake::Idle) => Value::keyword("aido/idle"),
                    Some(_) => Value::keyword("aido/answer"),
                }];
                items.extend(answers.iter().map(aido::scenario::HandlerAnswer::to_value));
                match replies {
                    Some(replies) if replies.is_empty() => items.push(Value::Nil),
                    Some(replies) => items.extend(replies.iter().map(ExpectedReply::to_value)),
                    None => {}
                }
                Value::Vector(items.into())
            }
        };
        text.push_str(&value.to_string());
    }
    text.push_str("]}\n");
    text
}

/// A value found, or that nothing is there.
fn show(value: Option<&Value>) -> String {
    value.map_or_else(|| "nil (nothing there)".to_owned(), ToString::to_string)
}

/// `success`, `failure`, ...
fn status_name(status: Status) -> String {
    status
        .to_value()
        .to_string()
        .trim_start_matches(':')
        .to_owned()
}

/// A failure as one line, for a command that goes on.
fn failure_line(failure: Failure) -> String {
    match failure {
        Failure::Input { what, why } => format!("{what}: {why}"),
        Failure::Usage { reason, .. } => reason,
        Failure::Compile(text) => text,
        Failure::Stdout(e) => e.to_string(),
    }
}
