//! `aido test`.

use std::ffi::OsString;

use super::TEMPLATE;

pub(crate) const TEST_USAGE: &str =
    "aido test [PATH...] [--accept] [--coverage] [--nodes MODEL] [--allow-outside]";

/// Run the scenarios (*.test.edn): expectations, golden timelines, coverage
#[derive(clap::Args, Debug)]
#[command(
    override_usage = TEST_USAGE,
    help_template = TEMPLATE,
    long_about = "\
Runs every scenario file (NAME.test.edn) under the PATHs (files, or folders
searched recursively, skipping hidden folders and `target`; default: the
current folder) and prints `ok NAME` or `FAILED NAME` for each, the reasons
under a failure, then `N passed, M failed`.

A scenario is an EDN map:
  {:tree \"guard.edn\"            ; relative to the scenario, or an inline tree
   :nodes \"game-nodes.edn\"      ; a node model (optional)
   :db {:pos 0}                 ; or a db file's name
   :seed 7
   :ticks 12                    ; default: the last tick :expect names
   :inputs [nil {:intruder 3}]  ; merged before each tick (nil removes a key), or a file's name
   :stubs {:guard/sees? [:failure :failure :success]   ; by node type or id
           :patrol {:status :running}}
   :trims [{:task :t :target :patrol :not-before 5 :remove true}]  ; or a file's name
   :expect [{:tick 3 :status :running :db {:action :chase}}]}

A chat-shaped scenario has :conversation in place of :ticks and :inputs, and
runs turn by turn as `aido chat` does (:input-key, :reply-key and :max-ticks
as its flags):
  {:tree \"bot.edn\" :seed 1
   :conversation [[\"hi\" #{\"Hello!\" \"Hi there!\"}]    ; a set: one of
                  [\"time?\" {:handler :svc/time :answer \"12:00\"} \"It is 12:00.\"]
                  {:db {:topic :time}}                  ; the db becomes this
                  [\"stop\" nil]]}                        ; nil: no reply
Each deferred action launched is answered by the next {:handler ...} given
for it. The first turn whose replies differ fails the scenario, with the
db's changes in that turn; `aido chat --record` writes such files.

When NAME.timeline sits beside NAME.test.edn, the run's text timeline (as
`aido run --format pretty --trace` prints it) must equal it; a difference is
shown from the first tick that differs. A scenario with neither :expect nor a
golden timeline fails: it could never fail otherwise.

The files a scenario names stay in its folder: an absolute path, a `..` or a
link that leads out is refused (--allow-outside allows them), so running the
scenarios of an untrusted folder reads nothing else. Each file is read with
the input limit (AIDO_MAX_INPUT_BYTES, default 64 MiB); a scenario runs at
most 100000 ticks.",
    after_help = "exit status: 0 all passed, 1 a scenario failed, 2 bad arguments or an\n\
                  unreadable or malformed scenario"
)]
pub(crate) struct TestArgs {
    /// Scenario files, or folders searched recursively (default: the current folder)
    #[arg(value_name = "PATH")]
    pub(crate) paths: Vec<OsString>,
    /// Write or update the golden timelines (NAME.timeline), and a
    /// conversation's replies where they differ, saying which
    #[arg(long)]
    pub(crate) accept: bool,
    /// After the results, per tree: nodes never ticked, and statuses a node
    /// can return that no scenario saw
    #[arg(long)]
    pub(crate) coverage: bool,
    /// A node model every scenario's tree is checked against
    #[arg(long, value_name = "MODEL")]
    pub(crate) nodes: Option<OsString>,
    /// Let scenarios name files outside their own folder
    #[arg(long)]
    pub(crate) allow_outside: bool,
}
