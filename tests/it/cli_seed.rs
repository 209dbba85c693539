//! The seed rules of round 2 through the binary: a reload's cancel request
//! on the tick line, a trim that waits for its running target and changes
//! the db with a node type from a model, and a model that replaces a
//! standard function (tests/data/trim/).
#![allow(clippy::panic, clippy::expect_used, clippy::unwrap_used)]

use crate::common;

use std::path::Path;
use std::process::Command;

use aido::{Value, read_value};
use common::Run;

fn aido(args: &[&str]) -> Run {
    Run::of(
        Command::new(env!("CARGO_BIN_EXE_aido"))
            .args(args)
            .current_dir(Path::new(env!("CARGO_MANIFEST_DIR"))),
    )
}

fn lines(run: &Run) -> Vec<Value> {
    assert_eq!(run.code, 0, "{run:?}");
    run.stdout.lines().map(|l| read_value(l).unwrap()).collect()
}

fn key(m: &Value, k: &str) -> Value {
    m.get(&Value::keyword(k)).cloned().unwrap_or_default()
}

fn edn(text: &str) -> Value {
    read_value(text).unwrap()
}

#[test]
fn a_reload_that_removes_a_running_defer_puts_its_cancel_on_the_line() {
    let run = aido(&[
        "run",
        "tests/data/trim/ask.edn",
        "--ticks",
        "2",
        "--reload",
        "2=tests/data/trim/ask-v2.edn",
    ]);
    let lines = lines(&run);
    let launched = key(&lines[0], "launch");
    let reload = key(&lines[1], "reload");
    assert_eq!(key(&reload, "halted"), edn("[:ask]"));
    // The request launched in tick 1 is the one cancelled, as aido migrate
    // prints it.
    assert_eq!(key(&reload, "cancel"), launched);
    assert_eq!(
        key(&reload, "cancel"),
        edn("[{:node :ask, :request 1, :action :llm/ask, :options {:prompt \"hi\"}}]")
    );
    // The pretty format shows it too.
    let pretty = aido(&[
        "run",
        "tests/data/trim/ask.edn",
        "--ticks",
        "2",
        "--reload",
        "2=tests/data/trim/ask-v2.edn",
        "--format",
        "pretty",
    ]);
    assert_eq!(pretty.code, 0, "{pretty:?}");
    assert!(
        pretty.stdout.contains(":cancel [{:node :ask"),
        "{}",
        pretty.stdout
    );
}

#[test]
fn a_trim_waits_for_its_running_target_and_brings_its_data() {
    let run = aido(&[
        "run",
        "tests/data/trim/errand.edn",
        "--trims",
        "tests/data/trim/errand.trims.edn",
        "--nodes",
        "tests/data/trim/errand.model.edn",
        "--ticks",
        "4",
    ]);
    let out = lines(&run);
    let trim = |n: usize| key(&out[n], "trim").as_seq().unwrap()[0].clone();
    for n in [1, 2] {
        assert_eq!(key(&trim(n), "outcome"), Value::keyword("deferred"));
        assert_eq!(
            key(&trim(n), "reason"),
            Value::string("node :errand is running")
        );
    }
    assert_eq!(key(&out[2], "status"), Value::keyword("success"));
    let applied = trim(3);
    assert_eq!(key(&applied, "outcome"), Value::keyword("applied"));
    assert_eq!(key(&applied, "db"), edn("{:bag []}"));
    assert_eq!(key(&applied, "dissoc"), edn("[:a]"));
    // :a was removed before tick 4, which counted it from nothing.
    let db = key(&out[3], "db");
    assert_eq!(key(&db, "a"), Value::Int(1));
    assert_eq!(key(&db, "bag"), edn("[]"));
    // Without the model the inserted node type is unknown: the task is
    // rejected with the compiler's diagnostics, and the db is unchanged.
    let run = aido(&[
        "run",
        "tests/data/trim/errand.edn",
        "--trims",
        "tests/data/trim/errand.trims.edn",
        "--ticks",
        "4",
    ]);
    let plain = lines(&run);
    let rejected = key(&plain[3], "trim").as_seq().unwrap()[0].clone();
    assert_eq!(key(&rejected, "outcome"), Value::keyword("rejected"));
    assert_eq!(key(&key(&plain[3], "db"), "bag"), Value::Nil);
}

#[test]
fn a_model_may_replace_a_standard_function_and_check_warns() {
    let run = aido(&[
        "check",
        "--nodes",
        "tests/data/trim/rand.model.edn",
        "tests/data/trim/rand.edn",
    ]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout, "ok: tests/data/trim/rand.edn (2 nodes)\n");
    assert_eq!(
        run.stderr,
        "warning: tests/data/trim/rand.model.edn: function `rand` replaces the standard \
         function of that name; [:aido/fn rand ..] calls the application's function\n"
    );
    // Without the model, rand is the standard one and nothing is said.
    let run = aido(&["check", "tests/data/trim/rand.edn"]);
    assert_eq!((run.code, run.stderr.as_str()), (0, ""));
    // With the model, the tree calls the application's rand (which has no
    // behaviour in the plain binary), not the standard one.
    let run = aido(&[
        "run",
        "tests/data/trim/rand.edn",
        "--nodes",
        "tests/data/trim/rand.model.edn",
    ]);
    let line = &lines(&run)[0];
    assert_eq!(key(line, "status"), Value::keyword("error"));
    assert_eq!(
        key(&key(&key(line, "db"), "aido/error"), "message"),
        Value::string(
            "function `rand`: `rand` is declared in a node model and has no behaviour here"
        )
    );
}
