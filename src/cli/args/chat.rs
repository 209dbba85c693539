//! `aido chat`.

use std::ffi::OsString;

use super::TEMPLATE;

pub(crate) const CHAT_USAGE: &str =
    "aido chat TREE [--db DB] [--save FILE] [--input-key K] [--reply-key K] [--max-ticks N]
                 [--seed S] [--record FILE.test.edn] [--jsonl] [--watch] [--nodes MODEL]
                 [--handler ACTION=COMMAND]... [--handler-timeout S] [--idle S]
                 [--history FILE]
       aido chat TREE --store URL --user ID [--input-key K] [--reply-key K] [--max-ticks N]
                 [--handler ACTION=COMMAND]... [--handler-timeout S] [--nodes MODEL]
                 [--history FILE]";

/// Talk to a tree a line at a time: replies, :undo, --record
#[derive(clap::Args, Debug)]
#[command(
    override_usage = CHAT_USAGE,
    help_template = TEMPLATE,
    long_about = "\
Talks to TREE a line at a time. Each line read from standard input goes
into the db, as a string, under :input; the tree is then ticked until it is
no longer Running (at most N ticks a line), and each value it appends to
:replies during the turn is printed, one per line (a string as its text,
anything else as EDN). From a terminal there is a prompt; from a pipe there
is none. End of input ends the chat (exit status 0); at a terminal, lines
are edited with the arrow keys, the up arrow recalls earlier lines, Ctrl-C
drops the line being typed and Ctrl-D ends the chat, and a line typed while
a turn waits for a handler program ends the wait. A handler's answer
that arrives while the chat waits for a line is taken at once: the tree is
ticked, with no line, and what it says is printed.

A turn that ends in Error prints the located error on standard error, and
the chat goes on with the db as the tick left it. A line that starts with
`:` and a letter is a command (below); start it with `::` to say it to the
tree with one `:` taken off.",
    after_help = "\
commands (none changes the tree):
  :db [KEY|PATH]   print the db, or the value under a key or a path [:a 0 :b]
  :why             the nodes that decided the last turn, and the db keys they name
  :trace on|off    print each turn's ticks: status, db changes, the nodes ticked
  :undo            put the db back as it was before the last line (again and again)
  :reset           put the db back as it was when the chat started
  :seed N          put N under :aido/seed (a fresh, reproducible random stream)
  :save FILE       write the db to FILE (JSON if it ends in .json)
  :load FILE       the db becomes the map in FILE
  :timeline FILE   write the chat so far as the timeline page
  :inject {..}     merge the map into the db
  :help            this list

exit status: 0 the input ended, 1 the tree has compile errors, 2 bad arguments,
an unreadable or malformed file, or a --save that cannot be written"
)]
pub(crate) struct ChatArgs {
    /// The tree file
    #[arg(value_name = "TREE")]
    pub(crate) paths: Vec<OsString>,
    /// The starting db: an EDN map, or a JSON object if DB ends in .json
    #[arg(long, value_name = "DB")]
    pub(crate) db: Option<OsString>,
    /// Write the db to FILE atomically after every turn and every command
    /// that changes it (JSON if FILE ends in .json, else EDN)
    #[arg(long, value_name = "FILE")]
    pub(crate) save: Option<OsString>,
    /// The db key the line goes under (default :input)
    #[arg(long, value_name = "K")]
    pub(crate) input_key: Option<OsString>,
    /// The db key whose vector the tree appends replies to (default :replies)
    #[arg(long, value_name = "K")]
    pub(crate) reply_key: Option<OsString>,
    /// The most ticks a line takes (default 100)
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub(crate) max_ticks: Option<OsString>,
    /// Put the integer S under :aido/seed before the first line
    #[arg(long, value_name = "S", allow_negative_numbers = true)]
    pub(crate) seed: Option<OsString>,
    /// At the end, write the chat as a scenario (`aido test` replays it): the
    /// starting db, each line with its replies, and the db that :undo,
    /// :reset, :seed, :load and :inject left
    #[arg(long, value_name = "FILE")]
    pub(crate) record: Option<OsString>,
    /// Read JSON lines, {"input": "..."} or {"command": ":db"}, and write one
    /// JSON line a turn: {"replies": [...], "status": "success"} ({"error":
    /// "..."} added for a tick that ended in error), or {"output": "..."} for
    /// a command
    #[arg(long)]
    pub(crate) jsonl: bool,
    /// Before each line, read TREE again: a changed tree that compiles takes
    /// over, its db carried over by node id (a notice says what was kept and
    /// dropped); one that does not compile is refused with its diagnostics,
    /// and the old tree goes on
    #[arg(long)]
    pub(crate) watch: bool,
    /// A node model: the application's node types and functions
    #[arg(long, value_name = "MODEL")]
    pub(crate) nodes: Option<OsString>,
    /// Run COMMAND (a program, taken whole: no shell, no arguments) for
    /// each launch of the deferred action ACTION (repeatable): the launch's
    /// options and request id go in as one JSON object on standard input,
    /// what it prints (JSON) is the completion's :result, exit status 0 is
    /// :success and anything else :failure; a cancel stops it
    #[arg(long = "handler", value_name = "ACTION=COMMAND")]
    pub(crate) handler: Vec<OsString>,
    /// Seconds a handler program may take before it is stopped and its
    /// request fails (default: no limit)
    #[arg(long, value_name = "S")]
    pub(crate) handler_timeout: Option<OsString>,
    /// After S seconds without a line, tick the tree once with :aido/idle
    /// true (the key is gone after that turn), and print what it says: a
    /// bot may speak first. Once a silence: the next idle turn waits for a
    /// line first
    #[arg(long, value_name = "S")]
    pub(crate) idle: Option<OsString>,
    /// At a terminal, read the line history from FILE and save it there at
    /// the end (default: the history lasts as long as the chat)
    #[arg(long, value_name = "FILE")]
    pub(crate) history: Option<OsString>,
    /// Keep the chat's state in the store at URL (feature postgres): each
    /// line goes to the inbox of the agent --user ID and its turn is
    /// committed there; replies are read back from the committed db
    #[arg(long, value_name = "URL")]
    pub(crate) store: Option<OsString>,
    /// The agent a --store chat talks to
    #[arg(long, value_name = "ID")]
    pub(crate) user: Option<OsString>,
}
