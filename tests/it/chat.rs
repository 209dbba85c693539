//! The session loop from every entry point, and `aido chat` through the
//! binary: piped lines, saved dbs, `:undo`, `--jsonl`, `--record` replayed
//! by `aido test`, conversation scenarios, a kill between turns, and the
//! terminal prompt under tmux.
#![allow(clippy::panic, clippy::expect_used, clippy::unwrap_used)]

use crate::common;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;

use aido::handler::Completion;
use aido::runner::{PlayMode, Runner};
use aido::scenario::Scenario;
use aido::session::{Handlers, Session, TurnOptions};
use aido::tick::{Request, Status};
use aido::trim::DataTask;
use aido::{Registry, Value, compile_str, read_value};

use common::Run;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_aido"))
}

fn data(name: &str) -> PathBuf {
    common::data_dir().join(name)
}

fn greet() -> String {
    data("chat/greet.edn").display().to_string()
}

/// A fresh folder for one test.
fn folder(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("chat")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn chat(args: &[&str], input: &str) -> Run {
    Run::with_input(bin().arg("chat").arg(greet()).args(args), input)
}

macro_rules! snapshot {
    ($value:expr) => {
        insta::with_settings!({snapshot_path => "../../snapshots", prepend_module_to_snapshot => true}, {
            insta::assert_snapshot!($value);
        });
    };
}

/// Each tick's status and db, as `aido run` prints them.
fn run_lines(stdout: &str) -> Vec<(Value, Value)> {
    stdout
        .lines()
        .map(|line| {
            let line = read_value(line).unwrap();
            (
                line.get(&Value::keyword("status")).unwrap().clone(),
                line.get(&Value::keyword("db")).unwrap().clone(),
            )
        })
        .collect()
}

#[test]
fn one_scenario_gives_one_record_through_run_test_and_runner() {
    let dir = data("session");
    // `aido test`'s engine.
    let scenario = Scenario::load(&dir.join("count.test.edn"), &Registry::new()).unwrap();
    let record = scenario.run().record;
    let from_test: Vec<(Value, Value)> = record
        .ticks()
        .map(|t| (t.status.to_value(), record.db_after(t.tick as usize)))
        .collect();

    // `aido run`, with the same tree, seed, inputs and trims.
    let run = Run::of(bin().current_dir(&dir).args([
        "run",
        "count.edn",
        "--seed",
        "3",
        "--ticks",
        "6",
        "--inputs",
        "count.inputs.edn",
        "--trims",
        "count.trims.edn",
    ]));
    assert_eq!((run.code, run.stderr.as_str()), (0, ""));
    let from_run = run_lines(&run.stdout);

    // A `Runner`, given the inputs between its updates.
    let text = std::fs::read_to_string(dir.join("count.edn")).unwrap();
    let tree = compile_str("count.edn", &text, &Registry::new()).unwrap();
    let mut runner = Runner::load(Arc::new(tree), read_value("{:aido/seed 3}").unwrap());
    let trims = read_value(&std::fs::read_to_string(dir.join("count.trims.edn")).unwrap()).unwrap();
    for task in DataTask::many(&trims).unwrap() {
        runner.trim(Box::new(task));
    }
    runner.record_run();
    runner.play(PlayMode::StopByExecuteLoopCount, 6).unwrap();
    let inputs =
        read_value(&std::fs::read_to_string(dir.join("count.inputs.edn")).unwrap()).unwrap();
    let mut from_runner = Vec::new();
    for input in inputs.as_seq().unwrap() {
        if let (Some(input), Some(db)) = (input.as_map(), runner.db_mut().as_map_mut()) {
            db.extend(input.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        let tick = runner.update().unwrap().unwrap();
        from_runner.push((tick.status.to_value(), runner.db().clone()));
    }
    let runner_record = runner.run_record().unwrap();

    assert_eq!(from_test.len(), 6);
    assert_eq!(from_run, from_test);
    assert_eq!(from_runner, from_test);
    // The records agree tick by tick: statuses, changes, visits, trims.
    for (a, b) in record.ticks().zip(runner_record.ticks()) {
        assert_eq!(
            (a.status, record.changes(&a).collect::<Vec<_>>(), &a.visits),
            (
                b.status,
                runner_record.changes(&b).collect::<Vec<_>>(),
                &b.visits
            )
        );
    }
    // The trim was applied before tick 4 everywhere.
    assert!(
        run.stdout
            .lines()
            .nth(3)
            .unwrap()
            .contains(":outcome :applied")
    );
}

#[test]
fn piped_lines_get_their_replies_one_per_line() {
    let run = chat(&["--seed", "1"], "hi\nwhat?\nstop\n::colon\n");
    assert_eq!((run.code, run.stderr.as_str()), (0, ""));
    let lines: Vec<&str> = run.stdout.lines().collect();
    // A pipe gets no prompt: one greeting, a fallback, nothing for stop,
    // and a line that starts with `::` said with one colon.
    assert_eq!(lines.len(), 3, "{}", run.stdout);
    assert!(["Hello!", "Hi there!", "Hey!"].contains(&lines[0]));
    assert_eq!(&lines[1..], ["Sorry?", "Sorry?"]);
}

#[test]
fn a_saved_db_never_repeats_a_greeting_before_the_pool_is_used_up() {
    let dir = folder("pool");
    let db = dir.join("db.edn");
    let db = db.to_str().unwrap();
    let first = chat(&["--seed", "7", "--save", db], "hi\nhi\n");
    let second = chat(&["--db", db, "--save", db], "hi\nhi\nhi\nhi\n");
    assert_eq!(
        (first.code, second.code),
        (0, 0),
        "{}{}",
        first.stderr,
        second.stderr
    );
    let said: Vec<&str> = first.stdout.lines().chain(second.stdout.lines()).collect();
    assert_eq!(said.len(), 6);
    let mut round: Vec<&str> = said[..3].to_vec();
    round.sort_unstable();
    assert_eq!(round, ["Hello!", "Hey!", "Hi there!"], "{said:?}");
    let mut next: Vec<&str> = said[3..].to_vec();
    next.sort_unstable();
    assert_eq!(next, ["Hello!", "Hey!", "Hi there!"], "{said:?}");
}

#[test]
fn undo_over_a_hundred_turns_gives_back_each_db_exactly() {
    // Print the db before each of 100 turns, then undo them one by one,
    // printing the db after each undo.
    let mut input = String::new();
    for i in 0..100 {
        input.push_str("{\"command\": \":db\"}\n");
        let line = ["hi", "what", "stop"][i % 3];
        input.push_str(&format!("{{\"input\": \"{line}\"}}\n"));
    }
    for _ in 0..100 {
        input.push_str("{\"command\": \":undo\"}\n{\"command\": \":db\"}\n");
    }
    input.push_str("{\"command\": \":undo\"}\n");
    let run = chat(&["--seed", "5", "--jsonl"], &input);
    assert_eq!((run.code, run.stderr.as_str()), (0, ""));
    let lines: Vec<serde_json::Value> = run
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let output = |l: &serde_json::Value| l["output"].as_str().map(str::to_owned);
    let before: Vec<String> = lines[..200].iter().filter_map(output).collect();
    let undone: Vec<String> = lines[200..400]
        .iter()
        .filter_map(output)
        .filter(|o| !o.starts_with("undone"))
        .collect();
    assert_eq!(before.len(), 100);
    let mut expected = before.clone();
    expected.reverse();
    assert_eq!(undone, expected);
    // Every turn answered with its replies and status.
    assert_eq!(lines[1]["status"], "success");
    assert!(lines[1]["replies"].as_array().unwrap().len() == 1);
    // Nothing left to undo.
    assert_eq!(lines[400]["output"], "nothing to undo");
}

#[test]
fn a_recorded_chat_passes_aido_test_unedited() {
    let dir = folder("record");
    std::fs::copy(data("chat/greet.edn"), dir.join("greet.edn")).unwrap();
    let input = "hi\nwhat\n:undo\nhi\n:inject {:topic :weather}\nstop\n:seed 9\nhi\nhi\n";
    let run = Run::with_input(
        bin().current_dir(&dir).args([
            "chat",
            "greet.edn",
            "--seed",
            "2",
            "--record",
            "greet.test.edn",
        ]),
        input,
    );
    assert_eq!((run.code, run.stderr.as_str()), (0, ""));
    let recorded = std::fs::read_to_string(dir.join("greet.test.edn")).unwrap();
    // The tree by its name, the undone line left out, the db steps kept.
    assert!(recorded.contains(":tree \"greet.edn\""), "{recorded}");
    assert!(!recorded.contains("\"what\""), "{recorded}");
    assert!(recorded.contains("[\"stop\" nil]"), "{recorded}");
    let test = Run::of(bin().current_dir(&dir).args(["test", "greet.test.edn"]));
    assert_eq!(
        (test.code, test.stderr.as_str()),
        (0, ""),
        "{}",
        test.stdout
    );
    assert!(
        test.stdout.starts_with("ok greet.test.edn"),
        "{}",
        test.stdout
    );
    // The golden timeline is written beside it, and `aido test` checks it:
    // a tick changed in it fails the test.
    let golden = dir.join("greet.timeline");
    let timeline = std::fs::read_to_string(&golden).unwrap();
    assert!(
        timeline.starts_with("tick 1: success\n  input {:input \"hi\"}\n"),
        "{timeline}"
    );
    std::fs::write(
        &golden,
        timeline.replacen("tick 1: success", "tick 1: failure", 1),
    )
    .unwrap();
    let test = Run::of(bin().current_dir(&dir).args(["test", "greet.test.edn"]));
    assert_eq!(test.code, 1, "{}", test.stdout);
    assert!(
        test.stdout.contains("greet.timeline: the timeline differs"),
        "{}",
        test.stdout
    );

    // A reply changed by hand fails, naming the turn.
    let edited = recorded.replacen("[\"stop\" nil]", "[\"stop\" \"Bye!\"]", 1);
    std::fs::write(dir.join("edited.test.edn"), edited).unwrap();
    let test = Run::of(bin().current_dir(&dir).args(["test", "edited.test.edn"]));
    assert_eq!(test.code, 1, "{}", test.stdout);
    assert!(
        test.stdout
            .contains("turn 3 \"stop\": expected \"Bye!\", got no reply"),
        "{}",
        test.stdout
    );
}

#[test]
fn a_conversation_scenario_fails_at_its_first_differing_turn() {
    let dir = folder("conversation");
    std::fs::copy(data("chat/greet.edn"), dir.join("greet.edn")).unwrap();
    std::fs::write(
        dir.join("talk.test.edn"),
        r#"{:tree "greet.edn" :seed 1
 :conversation [["hi" #{"Hello!" "Hi there!" "Hey!"}]
                ["time?" {:handler :svc/time :answer "12:00"} "12:00"]
                ["what" "Pardon?"]
                ["stop" "Bye"]]}"#,
    )
    .unwrap();
    let test = Run::of(bin().current_dir(&dir).args(["test", "talk.test.edn"]));
    assert_eq!(test.code, 1);
    snapshot!(test.stdout);

    // `--accept` writes the replies that came where they differ, and keeps
    // the rest of the file as it was.
    let test = Run::of(
        bin()
            .current_dir(&dir)
            .args(["test", "--accept", "talk.test.edn"]),
    );
    assert_eq!(
        (test.code, test.stderr.as_str()),
        (0, ""),
        "{}",
        test.stdout
    );
    assert!(test.stdout.contains("updated the replies in talk.test.edn"));
    let accepted = std::fs::read_to_string(dir.join("talk.test.edn")).unwrap();
    assert_eq!(
        accepted,
        r#"{:tree "greet.edn" :seed 1
 :conversation [["hi" #{"Hello!" "Hi there!" "Hey!"}]
                ["time?" {:handler :svc/time :answer "12:00"} "12:00"]
                ["what" "Sorry?"]
                ["stop" nil]]}"#
    );
    let test = Run::of(bin().current_dir(&dir).args(["test", "talk.test.edn"]));
    assert_eq!(test.code, 0, "{}", test.stdout);
}

#[test]
fn conversation_scenarios_with_mistakes_say_where() {
    let dir = folder("conversation-errors");
    std::fs::copy(data("chat/greet.edn"), dir.join("greet.edn")).unwrap();
    let cases = [
        ("not-a-vector", r#"{:tree "greet.edn" :conversation {}}"#),
        (
            "no-line",
            r#"{:tree "greet.edn" :conversation [[:hi "x"]]}"#,
        ),
        (
            "bad-answer",
            r#"{:tree "greet.edn" :conversation [["hi" {:handler "x"}]]}"#,
        ),
        (
            "ticks",
            r#"{:tree "greet.edn" :ticks 3 :conversation [["hi"]]}"#,
        ),
        ("reply-key", r#"{:tree "greet.edn" :reply-key :out}"#),
    ];
    let mut report = String::new();
    for (name, text) in cases {
        let file = format!("{name}.test.edn");
        std::fs::write(dir.join(&file), text).unwrap();
        let test = Run::of(bin().current_dir(&dir).args(["test", &file]));
        assert_eq!(test.code, 2, "{name}");
        report.push_str(&test.stderr);
    }
    snapshot!(report);
}

/// Answers every launch at once with the time, as a handler program would.
struct Clock(Vec<Completion>);

impl Handlers for Clock {
    fn launch(&mut self, request: &Request) {
        self.0.push(Completion::new(
            request,
            Status::Success,
            Some(Value::string("12:00")),
        ));
    }
    fn cancel(&mut self, _request: &Request) {}
    fn completions(&mut self) -> Vec<Completion> {
        std::mem::take(&mut self.0)
    }
    fn busy(&self) -> bool {
        !self.0.is_empty()
    }
}

#[test]
fn a_turn_waits_for_its_handler_and_records_the_completion_as_input() {
    let text = std::fs::read_to_string(data("chat/greet.edn")).unwrap();
    let tree = compile_str("greet.edn", &text, &Registry::new()).unwrap();
    let mut session = Session::new(Arc::new(tree), Value::map());
    session.set_handlers(Box::new(Clock(Vec::new())));
    session.record();
    let turn = session.turn("time?", &TurnOptions::default());
    assert_eq!(turn.status, Status::Success);
    assert_eq!(turn.replies, [Value::string("12:00")]);
    assert_eq!(
        (turn.ticks, turn.launches.len(), turn.completions.len()),
        (2, 1, 1)
    );
    // The completion is the second tick's input, so a replay needs no handler.
    let record = session.run_record().unwrap();
    let second = record.tick(1).unwrap();
    let input = second.input().unwrap();
    assert!(input.contains_key(&Value::keyword("aido/results")));
}

#[test]
fn kill_between_turns_leaves_the_saved_db_whole() {
    let dir = folder("kill");
    let db = dir.join("db.edn");
    let mut child = bin()
        .args(["chat", &greet(), "--save", db.to_str().unwrap()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut seen = Vec::new();
    for line in ["hi", "what", "hi"] {
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
        // The reply is printed after the db was saved.
        let mut reply = String::new();
        stdout.read_line(&mut reply).unwrap();
        seen.push(reply.trim_end().to_owned());
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let saved = read_value(&std::fs::read_to_string(&db).unwrap()).unwrap();
    let replies: Vec<String> = saved
        .get(&Value::keyword("replies"))
        .unwrap()
        .as_seq()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect();
    assert_eq!(replies, seen);
    // No temporary file is left beside it.
    let files: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
    assert_eq!(files.len(), 1);
}

/// A tmux server of a test's own (`tmux -L NAME`), killed when the test
/// ends, also when it fails, with the chat it runs.
struct TmuxServer(String);

impl Drop for TmuxServer {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.0, "kill-server"])
            .status();
    }
}

#[test]
fn a_terminal_edits_lines_and_recalls_the_last_one_with_the_up_arrow() {
    // tmux gives the chat a terminal; keys typed before it reads wait in
    // the terminal's buffer (rustyline drains, never flushes, it), and
    // `wait-for` says when the chat has ended. What was said is read back
    // from the recording and the exit status from a file.
    let dir = folder("terminal");
    let (record, code, history) = (
        dir.join("talk.test.edn"),
        dir.join("code.txt"),
        dir.join("history.txt"),
    );
    let socket = format!("aido-chat-test-{}", std::process::id());
    let _server = TmuxServer(socket.clone());
    let command = format!(
        "{} chat {} --record {} --history {}; echo $? > {}; tmux -L {socket} wait-for -S chat-done",
        env!("CARGO_BIN_EXE_aido"),
        greet(),
        record.display(),
        history.display(),
        code.display()
    );
    let tmux = |args: &[&str]| {
        let status = Command::new("tmux")
            .args(["-L", &socket])
            .args(args)
            .status()
            .expect("tmux runs (installed by .ci/run)");
        assert!(status.success(), "tmux {args:?}");
    };
    // An idle session keeps the server up after the chat's has ended.
    tmux(&["new-session", "-d", "-s", "keep", "cat"]);
    tmux(&["new-session", "-d", "-s", "chat", &command]);
    // Keys are sent once the prompt is on the screen: rustyline reads them
    // raw then, and the terminal's own line editing does not touch them.
    let prompts = |n: usize| {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
        loop {
            let screen = Command::new("tmux")
                .args(["-L", &socket, "capture-pane", "-p", "-t", "chat"])
                .output()
                .unwrap();
            let screen = String::from_utf8_lossy(&screen.stdout).into_owned();
            if screen.lines().filter(|l| l.starts_with('>')).count() >= n {
                return;
            }
            assert!(std::time::Instant::now() < deadline, "{screen}");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    };
    // "hi", then a line edited with the arrows ("stoxp" with the x taken
    // out again: Left, Backspace), then the up arrow recalls it; Ctrl-D ends.
    prompts(1);
    tmux(&["send-keys", "-t", "chat", "hi", "Enter"]);
    prompts(2);
    tmux(&[
        "send-keys",
        "-t",
        "chat",
        "stoxp",
        "Left",
        "BSpace",
        "Enter",
    ]);
    prompts(3);
    tmux(&["send-keys", "-t", "chat", "Up", "Enter"]);
    prompts(4);
    tmux(&["send-keys", "-t", "chat", "C-d"]);
    tmux(&["wait-for", "chat-done"]);
    assert_eq!(std::fs::read_to_string(&code).unwrap().trim(), "0");
    let recorded = read_value(&std::fs::read_to_string(&record).unwrap()).unwrap();
    let lines: Vec<Value> = match recorded.get(&Value::keyword("conversation")) {
        Some(Value::Vector(turns)) => turns
            .iter()
            .map(|turn| turn.as_seq().unwrap()[0].clone())
            .collect(),
        other => panic!("{other:?}"),
    };
    assert_eq!(lines, ["hi", "stop", "stop"].map(Value::string));
    // `--history` keeps the lines for the next chat.
    let kept = std::fs::read_to_string(&history).unwrap();
    assert!(kept.lines().any(|l| l == "stop"), "{kept:?}");
}

#[test]
fn watch_takes_an_edited_tree_and_refuses_a_broken_one() {
    let dir = folder("watch");
    let tree = dir.join("bot.edn");
    let bot = std::fs::read_to_string(data("chat/greet.edn")).unwrap();
    std::fs::write(&tree, &bot).unwrap();
    let mut child = bin()
        .args(["chat", tree.to_str().unwrap(), "--watch"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut say = |line: &str| {
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
        let mut reply = String::new();
        stdout.read_line(&mut reply).unwrap();
        reply.trim_end().to_owned()
    };
    assert_eq!(say("what"), "Sorry?");
    std::fs::write(&tree, bot.replace("\"Sorry?\"", "\"Pardon?\"")).unwrap();
    assert_eq!(say("what"), "Pardon?");
    std::fs::write(&tree, "[:sequence [:no-such-node]]").unwrap();
    assert_eq!(say("what"), "Pardon?");
    drop(stdin);
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(0));
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(
        stderr.contains("the tree changed and was reloaded"),
        "{stderr}"
    );
    assert!(
        stderr.contains("the tree changed but is refused"),
        "{stderr}"
    );
    assert!(
        stderr.contains("unknown node type `:no-such-node`"),
        "{stderr}"
    );
}

/// A tree that asks the `svc/echo` action for each line and says its answer
/// (or, when it fails, the failure's reason).
const ASKING: &str = "[:sequence {:id :turn}
  [:present? {:key :input}]
  [:selector {:id :answer}
   [:sequence {:id :asked}
    [:defer {:id :ask :action :svc/echo :into [:answer]}]
    [:emit! {:key :replies :val [:aido/db :answer]}]]
   [:emit! {:key :replies :val \"the service failed\"}]]
  [:dissoc! {:key :input}]]";

/// Writes `name` into `dir` as an executable shell script with `body`.
fn script(dir: &Path, name: &str, body: &str) -> String {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.display().to_string()
}

#[test]
fn handler_programs_answer_a_chat_and_their_failures_are_failures() {
    let dir = folder("handlers");
    let tree = dir.join("asking.edn");
    std::fs::write(&tree, ASKING).unwrap();
    // The program reads the launch (JSON with the request id) and answers
    // with a JSON string; the turn waits for it between ticks.
    let echo = script(
        &dir,
        "echo.sh",
        "read -r launch; case \"$launch\" in *'\"request\"'*) echo '\"pong\"' ;; *) exit 3 ;; esac",
    );
    let handler = format!("svc/echo={echo}");
    let run = Run::with_input(
        bin().arg("chat").arg(&tree).args(["--handler", &handler]),
        "ping\nping again\n",
    );
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout, "pong\npong\n", "{run:?}");
    assert!(!run.stderr.contains("no handler does it"), "{run:?}");

    // A program that exits non-zero is a failure; one that takes too long
    // is stopped and fails too.
    let failing = script(&dir, "fail.sh", "cat >/dev/null; echo broken >&2; exit 1");
    let handler = format!("svc/echo={failing}");
    let run = Run::with_input(
        bin().arg("chat").arg(&tree).args(["--handler", &handler]),
        "ping\n",
    );
    assert_eq!(
        (run.code, run.stdout.as_str()),
        (0, "the service failed\n"),
        "{run:?}"
    );
    let slow = script(&dir, "slow.sh", "cat >/dev/null; exec sleep 30");
    let handler = format!("svc/echo={slow}");
    let run = Run::with_input(
        bin()
            .arg("chat")
            .arg(&tree)
            .args(["--handler", &handler, "--handler-timeout", "0.2"]),
        "ping\n",
    );
    assert_eq!(
        (run.code, run.stdout.as_str()),
        (0, "the service failed\n"),
        "{run:?}"
    );

    // Without a handler for the action the launch stays in flight, said.
    let run = Run::with_input(bin().arg("chat").arg(&tree), "ping\n");
    assert!(run.stderr.contains("no handler does it"), "{run:?}");
    // A malformed flag is a usage error naming it.
    let run = Run::with_input(
        bin().arg("chat").arg(&tree).args(["--handler", "svc/echo"]),
        "",
    );
    assert_eq!(run.code, 2, "{run:?}");
    assert!(run.stderr.contains("--handler"), "{run:?}");
}

/// A chat whose standard input stays open: lines are written when the test
/// says, and each line printed is waited for (at most a minute, never a
/// sleep).
struct Live {
    child: std::process::Child,
    stdin: Option<std::process::ChildStdin>,
    printed: std::sync::mpsc::Receiver<String>,
}

impl Live {
    fn start(command: &mut Command) -> Live {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let (tell, printed) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in stdout.lines() {
                let Ok(line) = line else { break };
                if tell.send(line).is_err() {
                    break;
                }
            }
        });
        Live {
            child,
            stdin,
            printed,
        }
    }

    fn say(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
    }

    fn next(&self) -> String {
        self.printed
            .recv_timeout(std::time::Duration::from_secs(60))
            .expect("the chat printed a line")
    }

    fn end(mut self) -> Run {
        drop(self.stdin.take());
        let output = self.child.wait_with_output().unwrap();
        let rest: Vec<String> = self.printed.try_iter().collect();
        Run {
            code: output.status.code().unwrap_or(-1),
            stdout: rest.join("\n"),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }
}

#[test]
fn an_answer_that_comes_between_lines_is_said_at_once_and_replays() {
    let dir = folder("between-lines");
    let tree = dir.join("asking.edn");
    std::fs::write(&tree, ASKING).unwrap();
    // The program answers once the test lets it: after the turn is over.
    let go = dir.join("go");
    let late = script(
        &dir,
        "late.sh",
        &format!(
            "cat >/dev/null; while [ ! -e {} ]; do sleep 0.05; done; echo '\"late\"'",
            go.display()
        ),
    );
    let handler = format!("svc/echo={late}");
    let record = dir.join("late.test.edn");
    let mut chat = Live::start(bin().arg("chat").arg(&tree).args([
        "--handler",
        &handler,
        "--max-ticks",
        "1",
        "--record",
        record.to_str().unwrap(),
    ]));
    // One tick a line: the turn ends with the question in flight.
    chat.say("ping");
    chat.say(":db :aido/requests");
    assert_eq!(chat.next(), "1");
    std::fs::write(&go, "").unwrap();
    // No further line: the answer is taken and what the tree says printed.
    assert_eq!(chat.next(), "late");
    let run = chat.end();
    assert_eq!((run.code, run.stdout.as_str()), (0, ""), "{run:?}");
    // The recording gives the answer to the turn it came in, and replays.
    let text = std::fs::read_to_string(&record).unwrap();
    assert!(
        text.contains(r#"[:aido/answer {:handler :svc/echo, :answer "late"} "late"]"#),
        "{text}"
    );
    let test = Run::of(bin().current_dir(&dir).args(["test", "late.test.edn"]));
    assert_eq!(test.code, 0, "{test:?}");
}

const IDLE: &str = "[:selector
  [:sequence [:present? {:key :aido/idle}] [:emit! {:key :replies :val \"Anyone there?\"}]]
  [:sequence [:present? {:key :input}] [:emit! {:key :replies :val \"Hi\"}] [:dissoc! {:key :input}]]]";

#[test]
fn idle_ticks_the_tree_once_a_silence_and_the_bot_speaks_first() {
    let dir = folder("idle");
    let tree = dir.join("idle.edn");
    std::fs::write(&tree, IDLE).unwrap();
    let record = dir.join("idle.test.edn");
    let mut chat = Live::start(bin().arg("chat").arg(&tree).args([
        "--idle",
        "0.1",
        "--record",
        record.to_str().unwrap(),
    ]));
    // Nothing said: the bot speaks first.
    assert_eq!(chat.next(), "Anyone there?");
    // Once a silence: a line comes before the next idle turn, and the key
    // is gone after its turn.
    chat.say(":db :aido/idle");
    assert_eq!(chat.next(), "nil (nothing there)");
    chat.say("hello");
    // The silence before that line is a new one: on a machine loaded
    // enough that the line comes more than 0.1 s after the answer, one
    // idle turn (one only) speaks before the line is answered.
    let mut next = chat.next();
    if next == "Anyone there?" {
        next = chat.next();
    }
    assert_eq!(next, "Hi");
    assert_eq!(chat.next(), "Anyone there?");
    let run = chat.end();
    assert_eq!((run.code, run.stdout.as_str()), (0, ""), "{run:?}");
    let text = std::fs::read_to_string(&record).unwrap();
    assert!(text.contains(r#"[[:aido/idle "Anyone there?"]"#), "{text}");
    let test = Run::of(bin().current_dir(&dir).args(["test", "idle.test.edn"]));
    assert_eq!(test.code, 0, "{test:?}");
    // A silence of no length is refused.
    let run = Run::with_input(bin().arg("chat").arg(&tree).args(["--idle", "0"]), "");
    assert_eq!(run.code, 2, "{run:?}");
    assert!(run.stderr.contains("--idle"), "{run:?}");
}

#[test]
fn watch_takes_an_edited_included_file_and_refuses_a_broken_one() {
    let dir = folder("watch-include");
    let tree = dir.join("bot.edn");
    std::fs::write(
        &tree,
        "[:sequence [:present? {:key :input}] [:include {:file \"reply.edn\"}] [:dissoc! {:key :input}]]",
    )
    .unwrap();
    let reply = dir.join("reply.edn");
    std::fs::write(&reply, "[:emit! {:key :replies :val \"Sorry?\"}]").unwrap();
    let mut chat = Live::start(bin().arg("chat").arg(&tree).arg("--watch"));
    chat.say("what");
    assert_eq!(chat.next(), "Sorry?");
    // Only the included file changes: the tree is taken again.
    std::fs::write(&reply, "[:emit! {:key :replies :val \"Pardon?\"}]").unwrap();
    chat.say("what");
    assert_eq!(chat.next(), "Pardon?");
    // A broken included file is refused, and the old tree goes on.
    std::fs::write(&reply, "[:emit! {:key :replies :val").unwrap();
    chat.say("what");
    assert_eq!(chat.next(), "Pardon?");
    let run = chat.end();
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stderr.contains("the tree changed and was reloaded"),
        "{run:?}"
    );
    // The diagnostics name the included file.
    assert!(
        run.stderr.contains("the tree changed but is refused") && run.stderr.contains("reply.edn"),
        "{run:?}"
    );
}

/// Waits until the tmux pane `target` on `socket` shows what `wanted`
/// accepts (at most two minutes), and gives the screen.
fn screen(socket: &str, target: &str, wanted: impl Fn(&str) -> bool) -> String {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        let out = Command::new("tmux")
            .args(["-L", socket, "capture-pane", "-p", "-t", target])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        if wanted(&text) {
            return text;
        }
        assert!(std::time::Instant::now() < deadline, "{text}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[test]
fn stop_typed_at_the_terminal_while_the_bot_waits_cancels_its_question() {
    let dir = folder("terminal-stop");
    let (db, code) = (dir.join("db.edn"), dir.join("code.txt"));
    let socket = format!("aido-chat-stop-{}", std::process::id());
    let _server = TmuxServer(socket.clone());
    // The clock would take ten minutes, and a turn may tick for ever: only
    // the line typed meanwhile ends the wait.
    let command = format!(
        "cd {} && CLOCK_DELAY=600 {} chat examples/chatbot/bot.edn --seed 7 --max-ticks 1000000 \
         --handler svc/time=examples/chatbot/clock.sh --save {}; echo $? > {}; \
         tmux -L {socket} wait-for -S chat-done",
        env!("CARGO_MANIFEST_DIR"),
        env!("CARGO_BIN_EXE_aido"),
        db.display(),
        code.display()
    );
    let tmux = |args: &[&str]| {
        let status = Command::new("tmux")
            .args(["-L", &socket])
            .args(args)
            .status()
            .expect("tmux runs (installed by .ci/run)");
        assert!(status.success(), "tmux {args:?}");
    };
    tmux(&["new-session", "-d", "-s", "keep", "cat"]);
    tmux(&["new-session", "-d", "-x", "200", "-s", "chat", &command]);
    screen(&socket, "chat", |s| s.starts_with('>'));
    tmux(&[
        "send-keys",
        "-t",
        "chat",
        "what time is it in Lisbon?",
        "Enter",
    ]);
    screen(&socket, "chat", |s| s.contains("what is your name?"));
    tmux(&["send-keys", "-t", "chat", "I am Ann", "Enter"]);
    // The prompt is back at once, while the turn waits for the clock (its
    // replies are printed when the turn ends).
    screen(&socket, "chat", |s| {
        s.lines().filter(|l| l.starts_with('>')).count() >= 3
    });
    tmux(&["send-keys", "-t", "chat", "stop", "Enter"]);
    screen(&socket, "chat", |s| s.contains("OK, I stopped."));
    tmux(&["send-keys", "-t", "chat", "C-d"]);
    tmux(&["wait-for", "chat-done"]);
    assert_eq!(std::fs::read_to_string(&code).unwrap().trim(), "0");
    let db = read_value(&std::fs::read_to_string(&db).unwrap()).unwrap();
    assert_eq!(
        db.get(&Value::keyword("replies")).unwrap().to_string(),
        r#"["Happy to. First, what is your name?" "Nice to meet you, Ann." "One moment, I am asking the clock in Lisbon." "OK, I stopped."]"#
    );
    assert_eq!(db.get(&Value::keyword("waiting")), None);
}
