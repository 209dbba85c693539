//! Handlers: the programs that answer deferred actions. Each test writes
//! small shell scripts into a folder of its own and runs them through
//! `/bin/sh` (so no freshly written file is executed); waits are for
//! events (a file a script writes), bounded by generous limits, and no test
//! asserts on time. Every test ends with no program of its own left
//! running, checked in `/proc` by process group.

#![allow(clippy::panic, clippy::expect_used, clippy::unwrap_used)]

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use aido::handler::{
    Completion, HandlerFailure, HandlerNotice, HandlerOptions, Handlers, Program, deliver,
};
use aido::tick::Request;
use aido::value::Keyword;
use aido::{Registry, Status, Tree, Value, compile_str, read_value, run_tick};

/// Long enough for any slow machine; a test waits this long only when it
/// is about to fail.
const PATIENCE: Duration = Duration::from_secs(60);

struct Scratch(PathBuf);

impl Scratch {
    fn new(test: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("aido-handler-{test}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }

    /// A handler running `script` with `/bin/sh`, in this folder.
    fn script(&self, name: &str, script: &str) -> Program {
        let path = self.path(name);
        fs::write(&path, script).unwrap();
        Program::new("/bin/sh").arg(path)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// Whether the file at `path` holds a whole line: a script's `echo $$ >
/// FILE` creates the file before it writes, so its existence alone does
/// not say the line is there.
fn line_written(path: &Path) -> bool {
    fs::read_to_string(path).is_ok_and(|text| text.ends_with('\n'))
}

/// Polls `done` every 10 ms until it holds, failing after [`PATIENCE`].
fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let step = Duration::from_millis(10);
    for _ in 0..(PATIENCE.as_millis() / step.as_millis()) {
        if done() {
            return;
        }
        std::thread::sleep(step);
    }
    panic!("gave up waiting for {what}");
}

/// The live processes of group `pgid` (a handler and what it started).
///
/// A zombie has ended and is left out: an orphan's zombie waits for the
/// system's init to reap it, which some inits (a container's or a VM's)
/// do only every few seconds.
fn group_members(pgid: u32) -> Vec<u32> {
    let mut members = Vec::new();
    for entry in fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses.
        let Some(after) = stat.rfind(')').map(|at| &stat[at + 1..]) else {
            continue;
        };
        let fields: Vec<&str> = after.split_whitespace().collect();
        if fields.first() == Some(&"Z") {
            continue;
        }
        if fields.get(2).and_then(|g| g.parse::<u32>().ok()) == Some(pgid) {
            members.push(pid);
        }
    }
    members
}

/// Asserts that the handler `pid` was reaped (a zombie would still be in
/// `/proc`) and waits for what it started, signalled with it, to end (to
/// be gone or a zombie: the handler's children are reaped by init).
fn assert_gone(pid: u32) {
    assert!(
        !Path::new(&format!("/proc/{pid}")).exists(),
        "process {pid} is still there"
    );
    wait_for("its process group to end", || group_members(pid).is_empty());
}

fn action(name: &str) -> Keyword {
    Keyword::new(name)
}

fn request(n: i64, action_name: &str) -> Request {
    Request {
        node: Value::keyword("ask"),
        request: n,
        action: action(action_name),
        options: aido::value::Map::default(),
    }
}

fn handlers(options: HandlerOptions) -> Handlers {
    Handlers::new(options)
}

/// Launches one request and waits for its completion.
fn answer(handlers: &mut Handlers, request: &Request) -> Completion {
    assert_eq!(handlers.submit(std::slice::from_ref(request), &[]), vec![]);
    let mut got = Vec::new();
    wait_for("a completion", || {
        got.extend(handlers.wait(Duration::from_millis(200)));
        !got.is_empty()
    });
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(handlers.settle(PATIENCE));
    got.remove(0)
}

fn failure(completion: &Completion) -> &HandlerFailure {
    assert_eq!(completion.status, Status::Failure, "{completion:?}");
    completion.failure.as_ref().expect("a failure says why")
}

const ASK_TREE: &str = "[:sequence {:id :bot}
  [:test? {:key :asking :oper = :val true}]
  [:defer {:id :ask :action :llm/ask :prompt [:aido/db :prompt] :into :reply}]]";

fn ask_tree() -> Tree {
    compile_str("ask.edn", ASK_TREE, &Registry::new()).unwrap()
}

#[test]
fn a_slow_handler_is_answered_while_the_tree_keeps_ticking() {
    let dir = Scratch::new("slow");
    let go = dir.path("go");
    let program = dir.script(
        "ask.sh",
        &format!(
            r#"cat > "{dir}/request.json"
echo $$ > "{dir}/started"
while [ ! -e "{go}" ]; do sleep 0.01; done
printf '{{"text": "A tree of decisions.", "tokens": 4}}'
"#,
            dir = dir.0.display(),
            go = go.display()
        ),
    );
    let tree = ask_tree();
    let mut handlers = handlers(HandlerOptions::default());
    handlers.insert(action("llm/ask"), program).agent("bot-1");

    let mut db = read_value(r#"{:asking true, :prompt "What is a tree?"}"#).unwrap();
    let tick = run_tick(db, &tree);
    assert_eq!(tick.status, Status::Running);
    assert_eq!(handlers.submit(tick.launches(), tick.cancels()), vec![]);
    assert!(handlers.busy());
    db = tick.db;
    wait_for("the handler to start", || {
        line_written(&dir.path("started"))
    });
    // The program works; the tree goes on ticking, Running, and nothing is
    // delivered until the program answers.
    for _ in 0..3 {
        assert_eq!(handlers.poll(), vec![]);
        let tick = run_tick(db, &tree);
        assert_eq!(tick.status, Status::Running);
        db = tick.db;
    }
    let input = fs::read_to_string(dir.path("request.json")).unwrap();
    assert_eq!(
        input.trim_end(),
        r#"{"request":1,"action":":llm/ask","node":":ask","options":{"prompt":"What is a tree?"},"idempotency-key":"bot-1/1"}"#
    );

    fs::write(&go, "").unwrap();
    wait_for("the answer", || {
        handlers.wait_until_ready(Duration::from_millis(200))
    });
    assert!(!handlers.busy());
    let completions = handlers.poll();
    assert_eq!(
        completions[0].to_value(),
        read_value(
            r#"{:request 1, :status :success, :result {:text "A tree of decisions.", :tokens 4}}"#
        )
        .unwrap()
    );
    assert_eq!(deliver(&mut db, completions), vec![]);
    let tick = run_tick(db, &tree);
    assert_eq!(tick.status, Status::Success);
    assert_eq!(tick.dropped(), &[]);
    assert_eq!(
        tick.db.get(&Value::keyword("reply")),
        Some(&read_value(r#"{:text "A tree of decisions.", :tokens 4}"#).unwrap())
    );
    assert!(handlers.settle(PATIENCE));
    let pid: u32 = fs::read_to_string(dir.path("started"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert_gone(pid);
}

#[test]
fn a_cancelled_handler_is_stopped_and_its_late_answer_never_delivered() {
    let dir = Scratch::new("cancel");
    // The first request traps SIGTERM and answers then, exit 0: an answer
    // that arrives after the cancel. Later requests answer at once.
    let program = dir.script(
        "ask.sh",
        &format!(
            r#"if [ -e "{dir}/first" ]; then printf '"fresh"'; exit 0; fi
: > "{dir}/first"
trap 'printf "\"late\""; exit 0' TERM
echo $$ > "{dir}/started"
while :; do sleep 1; done
"#,
            dir = dir.0.display()
        ),
    );
    let tree = ask_tree();
    let mut handlers = handlers(HandlerOptions::default());
    handlers.insert(action("llm/ask"), program);

    let tick = run_tick(
        read_value(r#"{:asking true, :prompt "one"}"#).unwrap(),
        &tree,
    );
    assert_eq!(handlers.submit(tick.launches(), tick.cancels()), vec![]);
    wait_for("the handler to start", || {
        line_written(&dir.path("started"))
    });
    let pid = handlers.pid(1).expect("request 1 runs");
    assert_eq!(
        fs::read_to_string(dir.path("started")).unwrap().trim(),
        pid.to_string()
    );

    // The guard turns false: the :defer is halted with a cancel request.
    let mut db = tick.db;
    db.as_map_mut()
        .unwrap()
        .insert(Value::keyword("asking"), Value::Bool(false));
    let tick = run_tick(db, &tree);
    assert_eq!(tick.status, Status::Failure);
    assert_eq!(tick.cancels().len(), 1);
    assert_eq!(handlers.submit(tick.launches(), tick.cancels()), vec![]);
    assert!(
        !handlers.busy(),
        "a cancelled program's answer is not awaited"
    );
    assert!(handlers.settle(PATIENCE), "the cancelled program is reaped");
    assert_gone(pid);
    assert_eq!(handlers.poll(), vec![], "the late answer is thrown away");
    assert_eq!(handlers.thrown_away(), 1);

    // Asked again: request 2 gets its own answer, never the late one.
    let mut db = tick.db;
    db.as_map_mut()
        .unwrap()
        .insert(Value::keyword("asking"), Value::Bool(true));
    let tick = run_tick(db, &tree);
    assert_eq!(tick.launches()[0].request, 2);
    let completion = answer(&mut handlers, &tick.launches()[0]);
    assert_eq!(completion.request, 2);
    assert_eq!(completion.result, Some(Value::string("fresh")));
    let mut db = tick.db;
    deliver(&mut db, vec![completion]);
    let tick = run_tick(db, &tree);
    assert_eq!(tick.status, Status::Success);
    assert_eq!(
        tick.db.get(&Value::keyword("reply")),
        Some(&Value::string("fresh"))
    );
}

#[test]
fn a_failing_handler_fails_with_its_standard_error_escaped() {
    let dir = Scratch::new("fail");
    let program = dir.script(
        "ask.sh",
        "printf 'partial' ; printf '\\033[31mthe model is down\\n' >&2; exit 3\n",
    );
    let mut handlers = handlers(HandlerOptions::default());
    handlers.insert(action("llm/ask"), program);
    let completion = answer(&mut handlers, &request(7, "llm/ask"));
    assert_eq!(
        failure(&completion),
        &HandlerFailure::Exit {
            code: Some(3),
            signal: None,
            stderr: "\\u{1b}[31mthe model is down".to_owned(),
        }
    );
    assert_eq!(failure(&completion).code(), "H0002");
    assert_eq!(
        completion.to_value(),
        read_value(
            r#"{:request 7, :status :failure, :result {:reason :exit, :code "H0002",
                :message "the handler exited with status 3: \\u{1b}[31mthe model is down"}}"#
        )
        .unwrap()
    );
}

#[test]
fn a_failure_is_taken_by_its_defer_as_failure() {
    let dir = Scratch::new("fail-tick");
    let program = dir.script("ask.sh", "echo 'no answer' >&2; exit 1\n");
    let tree = ask_tree();
    let mut handlers = handlers(HandlerOptions::default());
    handlers.insert(action("llm/ask"), program);
    let tick = run_tick(read_value("{:asking true}").unwrap(), &tree);
    let completion = answer(&mut handlers, &tick.launches()[0]);
    let mut db = tick.db;
    assert_eq!(deliver(&mut db, vec![completion]), vec![]);
    let tick = run_tick(db, &tree);
    assert_eq!(tick.error, None);
    assert_eq!(tick.status, Status::Failure);
    assert_eq!(tick.dropped(), &[]);
    // The failure's reason is the `:result`, so `:into` can tell why.
    let reply = tick.db.get(&Value::keyword("reply")).unwrap();
    assert_eq!(
        reply.get(&Value::keyword("code")),
        Some(&Value::string("H0002"))
    );
}

#[test]
fn a_request_json_cannot_hold_fails_without_starting_the_program() {
    let dir = Scratch::new("bad-request");
    let program = dir.script("ask.sh", &format!(": > \"{}/started\"\n", dir.0.display()));
    let mut handlers = handlers(HandlerOptions::default());
    handlers.insert(action("llm/ask"), program);
    let mut nan = request(1, "llm/ask");
    nan.options
        .insert(Value::keyword("temperature"), Value::Float(f64::NAN));
    handlers.submit(&[nan], &[]);
    let completions = handlers.poll();
    assert_eq!(completions.len(), 1);
    assert_eq!(failure(&completions[0]).code(), "H0006");
    assert_eq!(handlers.running(), Vec::<i64>::new());
    assert!(!dir.path("started").exists());
}

#[test]
fn a_handler_that_takes_too_long_is_stopped_and_fails() {
    let dir = Scratch::new("timeout");
    let program = dir.script(
        "ask.sh",
        &format!(
            "echo $$ > \"{}/started\"\nwhile :; do sleep 1; done\n",
            dir.0.display()
        ),
    );
    let mut options = HandlerOptions::default();
    options.timeout = Some(Duration::from_millis(100));
    let mut handlers = handlers(options);
    handlers.insert(action("llm/ask"), program);
    let completion = answer(&mut handlers, &request(1, "llm/ask"));
    assert_eq!(
        failure(&completion),
        &HandlerFailure::Timeout { limit_ms: 100 }
    );
    assert_eq!(failure(&completion).code(), "H0003");
    // Stopped before it could say who it was, it left nothing to check.
    // (A shell stopped between creating the file and writing to it left
    // it empty.)
    let started = fs::read_to_string(dir.path("started")).unwrap_or_default();
    if let Ok(pid) = started.trim().parse::<u32>() {
        assert_gone(pid);
    }
}

#[test]
fn output_that_is_not_json_fails_with_where_it_goes_wrong() {
    let dir = Scratch::new("bad-json");
    let program = dir.script("ask.sh", "echo '{\"text\": oops}'\n");
    let mut handlers = handlers(HandlerOptions::default());
    handlers.insert(action("llm/ask"), program);
    let completion = answer(&mut handlers, &request(1, "llm/ask"));
    let why = failure(&completion);
    assert_eq!(why.code(), "H0005");
    let HandlerFailure::BadOutput { reason } = why else {
        panic!("{why:?}");
    };
    // The reader's own error, with its place.
    let json_error =
        Value::from_json_text("{\"text\": oops}\n", aido::value::JsonMapping::Plain).unwrap_err();
    assert_eq!(reason, &json_error.to_string());
    assert_eq!(json_error.location, Some((1, 10)));

    let program = dir.script("latin1.sh", "printf '\"caf\\351\"'\n");
    handlers.insert(action("llm/ask"), program);
    let completion = answer(&mut handlers, &request(2, "llm/ask"));
    assert_eq!(
        failure(&completion),
        &HandlerFailure::BadOutput {
            reason: "not valid UTF-8 text (at byte 4)".to_owned()
        }
    );
}

#[test]
fn output_and_standard_error_are_bounded() {
    let dir = Scratch::new("bounded");
    // Megabytes on standard output, without end: stopped at the limit.
    let program = dir.script(
        "loud.sh",
        &format!(
            "echo $$ > \"{}/started\"\nwhile :; do echo '\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"'; done\n",
            dir.0.display()
        ),
    );
    let mut handlers = handlers(HandlerOptions::default());
    handlers.insert(action("llm/ask"), program);
    let completion = answer(&mut handlers, &request(1, "llm/ask"));
    assert_eq!(
        failure(&completion),
        &HandlerFailure::TooMuchOutput { limit: 1 << 20 }
    );
    let pid: u32 = fs::read_to_string(dir.path("started"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert_gone(pid);

    // Five megabytes on standard error: read away, the message short.
    let program = dir.script(
        "chatty.sh",
        "head -c 5000000 /dev/zero | tr '\\0' e >&2\nexit 1\n",
    );
    handlers.insert(action("llm/ask"), program);
    let completion = answer(&mut handlers, &request(2, "llm/ask"));
    let HandlerFailure::Exit { code, stderr, .. } = failure(&completion) else {
        panic!("{completion:?}");
    };
    assert_eq!(*code, Some(1));
    assert_eq!(stderr, &format!("{}...", "e".repeat(500)));
}

#[test]
fn what_a_handler_leaves_running_is_stopped_with_it() {
    let dir = Scratch::new("leftover");
    // The background sleep holds standard output and error open: without
    // the group stopped, the answer would wait for it.
    let program = dir.script(
        "ask.sh",
        &format!(
            "echo $$ > \"{}/started\"\nsleep 600 &\nprintf '\"done\"'\n",
            dir.0.display()
        ),
    );
    let mut handlers = handlers(HandlerOptions::default());
    handlers.insert(action("llm/ask"), program);
    let completion = answer(&mut handlers, &request(1, "llm/ask"));
    assert_eq!(completion.status, Status::Success);
    assert_eq!(completion.result, Some(Value::string("done")));
    let pid: u32 = fs::read_to_string(dir.path("started"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert_gone(pid);
}

#[test]
fn a_missing_program_is_a_clear_failure() {
    let mut handlers = handlers(HandlerOptions::default());
    handlers.insert(
        action("llm/ask"),
        Program::new("/no/such/folder/ask \u{1b}[31m.sh"),
    );
    assert_eq!(handlers.submit(&[request(4, "llm/ask")], &[]), vec![]);
    let completions = handlers.poll();
    assert_eq!(completions.len(), 1);
    assert_eq!(completions[0].request, 4);
    assert_eq!(
        failure(&completions[0]),
        &HandlerFailure::Spawn {
            program: "/no/such/folder/ask \\u{1b}[31m.sh".to_owned(),
            reason: "no such file or directory".to_owned(),
        }
    );
    assert_eq!(failure(&completions[0]).code(), "H0001");

    // Cancelled before it was polled, its failure is never delivered.
    handlers.submit(&[request(5, "llm/ask")], &[]);
    handlers.submit(&[], &[request(5, "llm/ask")]);
    assert_eq!(handlers.poll(), vec![]);
    assert_eq!(handlers.thrown_away(), 1);
}

#[test]
fn handlers_can_move_to_another_thread() {
    fn send<T: Send>(_: &T) {}
    send(&Handlers::new(HandlerOptions::default()));
}

#[test]
fn a_launch_without_a_handler_is_a_notice_and_stays_in_flight() {
    let tree = compile_str(
        "other.edn",
        "[:defer {:id :ask :action :svc/time :into :time}]",
        &Registry::new(),
    )
    .unwrap();
    let mut handlers = handlers(HandlerOptions::default());
    handlers.insert(action("llm/ask"), Program::new("/bin/true"));
    let tick = run_tick(Value::map(), &tree);
    let notices = handlers.submit(tick.launches(), tick.cancels());
    assert_eq!(
        notices,
        vec![HandlerNotice::NoHandler {
            request: tick.launches()[0].clone()
        }]
    );
    assert_eq!(
        notices[0].to_string(),
        "no handler for :svc/time (request 1 of node :ask): it stays in flight"
    );
    assert_eq!(handlers.running(), Vec::<i64>::new());
    assert_eq!(handlers.wait(PATIENCE), vec![], "nothing runs: no waiting");
    let tick = run_tick(tick.db, &tree);
    assert_eq!(tick.status, Status::Running);
    assert_eq!(tick.launches(), &[]);
}

#[test]
fn programs_run_concurrently() {
    let dir = Scratch::new("concurrent");
    // Each waits until both have started: one at a time, neither would.
    let program = dir.script(
        "ask.sh",
        &format!(
            r#"n=$(cat | sed 's/.*"request":\([0-9]*\).*/\1/')
: > "{dir}/started-$n"
while [ ! -e "{dir}/started-1" ] || [ ! -e "{dir}/started-2" ]; do sleep 0.01; done
echo "$n"
"#,
            dir = dir.0.display()
        ),
    );
    let mut handlers = handlers(HandlerOptions::default());
    handlers.insert(action("llm/ask"), program);
    let mut first = request(1, "llm/ask");
    first.node = Value::keyword("one");
    let mut second = request(2, "llm/ask");
    second.node = Value::keyword("two");
    assert_eq!(handlers.submit(&[first, second], &[]), vec![]);
    let mut got = Vec::new();
    wait_for("both answers", || {
        got.extend(handlers.wait(Duration::from_millis(200)));
        got.len() == 2
    });
    got.sort_by_key(|c| c.request);
    assert_eq!(
        got.iter().map(|c| c.result.clone()).collect::<Vec<_>>(),
        vec![Some(Value::Int(1)), Some(Value::Int(2))]
    );

    // Two completions for one node: the second waits for the next tick.
    let mut db = Value::map();
    let mut again = got.clone();
    again[1].node = again[0].node.clone();
    let later = deliver(&mut db, again);
    assert_eq!(later.len(), 1);
    assert_eq!(later[0].request, 2);
}

#[test]
fn dropping_the_handlers_stops_and_reaps_every_program() {
    let dir = Scratch::new("drop");
    let program = dir.script(
        "ask.sh",
        &format!(
            "echo $$ > \"{}/started-$$\"\nwhile :; do sleep 1; done\n",
            dir.0.display()
        ),
    );
    let mut handlers = handlers(HandlerOptions::default());
    handlers.insert(action("llm/ask"), program);
    let mut second = request(2, "llm/ask");
    second.node = Value::keyword("other");
    handlers.submit(&[request(1, "llm/ask"), second], &[]);
    let mut pids = Vec::new();
    wait_for("both handlers to start", || {
        pids = [1, 2].iter().filter_map(|&r| handlers.pid(r)).collect();
        pids.len() == 2
            && pids
                .iter()
                .all(|pid| line_written(&dir.path(&format!("started-{pid}"))))
    });
    drop(handlers);
    for pid in pids {
        assert_gone(pid);
    }
}

#[test]
fn the_handler_flag_takes_the_command_whole() {
    let (action, program) = Program::parse_flag(":llm/ask=./my handler.sh").unwrap();
    assert_eq!(action.as_str(), "llm/ask");
    assert_eq!(program, Program::new("./my handler.sh"));
    for bad in ["llm/ask", "=x.sh", "two words=x.sh", "llm/ask="] {
        assert!(Program::parse_flag(bad).is_err(), "{bad}");
    }
}

/// The example bot with its real service, `examples/chatbot/clock.sh`, as
/// its handler: asked the time, it is answered; asked again and stopped,
/// the script is stopped and its answer never arrives.
#[test]
fn the_example_bot_asks_its_clock_through_a_handler() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let tree = aido::compile_file(root.join("examples/chatbot/bot.edn"), &Registry::new()).unwrap();
    let clock = Program::new("/bin/sh")
        .arg(root.join("examples/chatbot/clock.sh"))
        .env("CLOCK_DELAY", "0.1");
    let mut handlers = handlers(HandlerOptions::default());
    handlers.insert(action("svc/time"), clock);
    let mut db = read_value(r#"{:aido/seed 1, :name "Ann", :city "Lisbon"}"#).unwrap();

    // One line, then ticks until the tree is no longer Running, handing
    // launches and cancels to the handlers and completions back.
    let turn = |db: Value, line: &str, handlers: &mut Handlers| -> Value {
        let mut db = db;
        db.as_map_mut()
            .unwrap()
            .insert(Value::keyword("input"), Value::string(line));
        let mut ticks = 0;
        loop {
            let tick = run_tick(db, &tree);
            assert!(tick.error.is_none(), "{:?}", tick.error);
            assert_eq!(handlers.submit(tick.launches(), tick.cancels()), vec![]);
            db = tick.db;
            let waiting = db.get(&Value::keyword("waiting")).is_some();
            if tick.status != Status::Running && !waiting {
                return db;
            }
            ticks += 1;
            assert!(ticks < 10_000, "the turn never ended");
            let completions = handlers.wait(Duration::from_millis(200));
            assert_eq!(deliver(&mut db, completions), vec![]);
        }
    };
    db = turn(db, "what time is it?", &mut handlers);
    let Some(Value::Vector(replies)) = db.get(&Value::keyword("replies")) else {
        panic!("{db}")
    };
    let [asking, answer] = &replies[..] else {
        panic!("{replies:?}")
    };
    assert_eq!(
        asking,
        &Value::string("One moment, I am asking the clock in Lisbon.")
    );
    let answer = answer.as_str().unwrap().to_owned();
    assert!(
        answer.starts_with("It is ") && answer.ends_with(" UTC in Lisbon, Ann."),
        "{answer}"
    );
    assert!(handlers.settle(PATIENCE));

    // Asked again, then stopped while the clock works.
    // The service is asked on the tick of the question.
    let tick = {
        db.as_map_mut()
            .unwrap()
            .insert(Value::keyword("input"), Value::string("what time is it?"));
        run_tick(db, &tree)
    };
    assert_eq!(tick.status, Status::Running);
    assert_eq!(handlers.submit(tick.launches(), tick.cancels()), vec![]);
    let pid = handlers.pid(2).expect("the clock runs");
    let mut db = tick.db;
    db = turn(db, "stop", &mut handlers);
    assert!(handlers.settle(PATIENCE));
    assert_gone(pid);
    assert_eq!(handlers.poll(), vec![]);
    assert_eq!(handlers.thrown_away(), 1);
    assert_eq!(
        db.get(&Value::keyword("replies"))
            .map(|r| r.to_string())
            .unwrap(),
        format!(
            "[\"One moment, I am asking the clock in Lisbon.\" \"{answer}\" \"One moment, I am asking the clock in Lisbon.\" \"OK, I stopped.\"]"
        )
    );
}

/// A request id launched again (two dbs sharing one `Handlers`, which they
/// should not) stops the older program, whose outcome is never taken for
/// the newer one's.
#[test]
fn a_program_replaced_under_its_request_id_never_answers_for_the_new_one() {
    let dir = Scratch::new("replaced");
    let slow = dir.script(
        "slow.sh",
        &format!(
            "echo $$ > \"{}/started\"\nwhile :; do sleep 1; done\n",
            dir.0.display()
        ),
    );
    let quick = dir.script("quick.sh", "printf '\"quick\"'\n");
    let mut handlers = handlers(HandlerOptions::default());
    handlers.insert(action("svc/slow"), slow);
    handlers.insert(action("svc/quick"), quick);
    let mut first = request(1, "svc/slow");
    first.node = Value::keyword("a");
    handlers.submit(&[first], &[]);
    wait_for("the first program to start", || {
        line_written(&dir.path("started"))
    });
    let mut second = request(1, "svc/quick");
    second.node = Value::keyword("b");
    let completion = answer(&mut handlers, &second);
    assert_eq!(completion.node, Value::keyword("b"));
    assert_eq!(completion.result, Some(Value::string("quick")));
    assert_eq!(handlers.poll(), vec![]);
    let pid: u32 = fs::read_to_string(dir.path("started"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert_gone(pid);
}
