//! The commands that read trees: `check`, `show`, `migrate`, `nodes`.

use std::ffi::OsString;

use super::TEMPLATE;

pub(crate) const CHECK_USAGE: &str = "aido check FILE... [--nodes MODEL] [--db EXAMPLE] [--deny-warnings] [--samples [--input-key K]]";
pub(crate) const SHOW_USAGE: &str = "aido show TREE [--format text|dot|mermaid] [--nodes MODEL]";
pub(crate) const MIGRATE_USAGE: &str =
    "aido migrate OLD NEW --db SAVE [--save OUT] [--nodes MODEL]";
pub(crate) const NODES_USAGE: &str = "aido nodes [--nodes MODEL] [--format text|edn]";

/// Compile each tree and report every problem (exit 1 if any)
#[derive(clap::Args, Debug)]
#[command(
    override_usage = CHECK_USAGE,
    help_template = TEMPLATE,
    long_about = "\
Compiles each tree file against the built-in node types and prints
`ok: FILE (N nodes)` for each that compiles. Problems (including malformed
EDN) are printed on stderr, rustc-style. Warnings are printed there too, and
the exit status stays 0 (unless --deny-warnings):
  - a node that keeps state in the db (a memory composite, a policy
    parallel, :choose-each, :wait, :defer) without an explicit :id: its
    state is stored under an id made from its position;
  - W0001, a db key read but never written (nor in the example db): with
    --db, every such key; without, only one that looks like a misspelling
    of a key the tree writes;
  - W0002, a literal vector that looks like a misspelt dynamic option
    (`[:db :x]` for `[:aido/db :x]`).
With --nodes MODEL, the node types and functions the model declares are
checked like the built-ins; a function the model declares under the name of
a standard function (`rand`, `+`, ...) replaces it, with a warning, since
trees then call the application's function, not the standard one.

With --samples, every node's sample inputs (`:aido/samples [\"hi there\"
\"hello\"]`, on any node) are tried, one tick each: the sample goes under
:input (or --input-key K) of the example db (--db, else an empty db), and
  - I0001, the node must succeed (not fail, run, or go unticked);
  - I0002, no :selector above it may take the sample in an earlier branch
    (the branch that took it is named);
  - I0003, the tick must not end in Error;
one line each, located at the node, then `samples: FILE: P of N passed`.
A failing sample makes the exit status 1; a tree without samples is the
warning I0004. With --db, the input key counts as written (no W0001).

At most 50 problems and 50 warnings are shown per file (then how many more
there were; AIDO_MAX_DIAGNOSTICS changes that), each with a window of its
source line;
files larger than AIDO_MAX_INPUT_BYTES (default 64 MiB) are refused.",
    after_help = "exit status: 0 all compile, 1 a tree has problems or a sample fails (or, with\n\
                  --deny-warnings, warnings), 2 a file cannot be read"
)]
pub(crate) struct CheckArgs {
    /// The tree files to check
    #[arg(value_name = "FILE")]
    pub(crate) paths: Vec<OsString>,
    /// A node model: the application's node types and functions
    #[arg(long, value_name = "MODEL")]
    pub(crate) nodes: Option<OsString>,
    /// A db as the host hands it over (EDN, or JSON if it ends in .json): its
    /// keys count as written, and it is checked against the models' schema
    #[arg(long, value_name = "EXAMPLE")]
    pub(crate) db: Option<OsString>,
    /// Exit with status 1 if there is any warning
    #[arg(long)]
    pub(crate) deny_warnings: bool,
    /// Try every node's sample inputs (`:aido/samples`): each must make its
    /// node succeed, and no earlier branch of a selector above it may take it
    #[arg(long)]
    pub(crate) samples: bool,
    /// The db key the samples go under (default :input)
    #[arg(long, value_name = "K", requires = "samples")]
    pub(crate) input_key: Option<OsString>,
}

/// Print a tree as an outline, a Graphviz or a Mermaid graph
#[derive(clap::Args, Debug)]
#[command(
    override_usage = SHOW_USAGE,
    help_template = TEMPLATE,
    long_about = "\
Compiles TREE and prints it:
  text     (default) an indented outline, one line per node: node type, id
           (explicit, or derived from the node's position), the options as
           written (`:doc` among them) and `; line N`, the node's line in TREE
  dot      a Graphviz digraph (render it with `dot -Tsvg`); each node's label
           has its type, id, options and `:doc`
  mermaid  a Mermaid `flowchart TD`, labelled as the digraph",
    after_help = "exit status: 0 shown, 1 the tree has compile errors, 2 bad arguments or an\n\
                  unreadable or malformed file"
)]
pub(crate) struct ShowArgs {
    /// The tree file
    #[arg(value_name = "TREE")]
    pub(crate) paths: Vec<OsString>,
    /// `text` (default), `dot` or `mermaid`
    #[arg(long, value_name = "F")]
    pub(crate) format: Option<OsString>,
    /// A node model: the application's node types and functions
    #[arg(long, value_name = "MODEL")]
    pub(crate) nodes: Option<OsString>,
}

/// Carry a saved db over to a new version of its tree
#[derive(clap::Args, Debug)]
#[command(
    override_usage = MIGRATE_USAGE,
    help_template = TEMPLATE,
    long_about = "\
Carries the db in SAVE, last ticked with the tree in OLD, over to the tree in
NEW: every node that is in both (matched by :id, else by place and node type)
keeps its memory and running state under its new id; the state of nodes that
are gone or changed type is dropped; running nodes that are gone are halted.
Prints {:kept [...], :dropped [...], :halted [...]} (a node whose id changed
as [old new]; cancel requests of halted deferred actions as :cancel [...]),
with the migrated db as :db unless --save is given.",
    after_help = "exit status: 0 migrated, 1 a tree has compile errors, 2 bad arguments, an\n\
                  unreadable file, a SAVE that was last ticked with another tree than OLD, or\n\
                  one whose :aido/running is not a vector of node ids"
)]
pub(crate) struct MigrateArgs {
    /// The old tree file and the new one
    #[arg(value_name = "OLD NEW")]
    pub(crate) paths: Vec<OsString>,
    /// The saved db (EDN, or JSON if SAVE ends in .json)
    #[arg(long, value_name = "SAVE")]
    pub(crate) db: Option<OsString>,
    /// Write the migrated db to OUT atomically (JSON if OUT ends in .json,
    /// else EDN); OUT may be SAVE
    #[arg(long, value_name = "OUT")]
    pub(crate) save: Option<OsString>,
    /// A node model: the application's node types and functions, for trees
    /// that use them
    #[arg(long, value_name = "MODEL")]
    pub(crate) nodes: Option<OsString>,
}

/// Print every node type and function: options, arity, documentation
#[derive(clap::Args, Debug)]
#[command(
    override_usage = NODES_USAGE,
    help_template = TEMPLATE,
    long_about = "\
Prints every node type (its children, options and documentation) and every
function (its arity and documentation) that trees are checked against: the
built-ins, the program's own, and those a node model declares. With
--format edn the reference is printed as a node model (the format --nodes
reads), one node type or function a line.",
    after_help = "exit status: 0 printed, 2 bad arguments or an unreadable or malformed model"
)]
pub(crate) struct NodesArgs {
    /// (none: `aido nodes` takes no arguments)
    #[arg(value_name = "ARG", hide = true)]
    pub(crate) paths: Vec<OsString>,
    /// A node model: the application's node types and functions
    #[arg(long, value_name = "MODEL")]
    pub(crate) nodes: Option<OsString>,
    /// `text` (default) or `edn` (a node model)
    #[arg(long, value_name = "F")]
    pub(crate) format: Option<OsString>,
}
