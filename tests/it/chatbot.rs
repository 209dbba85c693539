//! The example bot (examples/chatbot/) through the binary: its pools never
//! repeat a reply before every one was said, across runs with a saved db.

#![allow(clippy::panic, clippy::expect_used, clippy::unwrap_used)]

use std::path::PathBuf;
use std::process::Command;

use aido::{Value, read_value};

struct Scratch(PathBuf);

impl Scratch {
    fn new(test: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("aido-chatbot-{test}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    fn write(&self, name: &str, text: &str) -> String {
        let path = self.0.join(name);
        std::fs::write(&path, text).unwrap();
        path.to_string_lossy().into_owned()
    }

    fn path(&self, name: &str) -> String {
        self.0.join(name).to_string_lossy().into_owned()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs the bot over `lines`, from `db` if given, saving to `save`.
fn talk(dir: &Scratch, run: &str, lines: &[&str], db: Option<&str>, save: &str) {
    let inputs: Vec<String> = lines
        .iter()
        .map(|line| format!("{{:input {}}}", Value::string(line)))
        .collect();
    let inputs = dir.write(
        &format!("{run}.inputs.edn"),
        &format!("[{}]", inputs.join(" ")),
    );
    let root = env!("CARGO_MANIFEST_DIR");
    let mut command = Command::new(env!("CARGO_BIN_EXE_aido"));
    command
        .current_dir(root)
        .args(["run", "examples/chatbot/bot.edn", "--inputs", &inputs])
        .args(["--ticks", &lines.len().to_string(), "--save", save]);
    match db {
        Some(db) => command.args(["--db", db]),
        None => command.args(["--seed", "5"]),
    };
    let out = command.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn replies(path: &str) -> Vec<Value> {
    let db = read_value(&std::fs::read_to_string(path).unwrap()).unwrap();
    match db.get(&Value::keyword("replies")) {
        Some(Value::Vector(replies)) => replies.to_vec(),
        other => panic!("{other:?}"),
    }
}

#[test]
fn greetings_never_repeat_across_runs_until_all_were_said() {
    let dir = Scratch::new("pools");
    let (one, two, three) = (dir.path("1.edn"), dir.path("2.edn"), dir.path("3.edn"));
    talk(&dir, "first", &["hi"], None, &one);
    talk(&dir, "second", &["Hello!", "hey there"], Some(&one), &two);
    let said = replies(&two);
    let mut pool = said.clone();
    pool.sort_by_key(Value::to_string);
    pool.dedup();
    assert_eq!(
        pool,
        ["Hello there!", "Hey, welcome back.", "Hi! Nice to see you."].map(Value::string),
        "three greetings over two runs, none twice: {said:?}"
    );
    // All said: the fourth starts a new round, from the whole pool.
    talk(&dir, "third", &["hi"], Some(&two), &three);
    let said = replies(&three);
    assert_eq!(said.len(), 4);
    assert!(pool.contains(&said[3]), "{said:?}");
}

#[test]
fn the_service_is_asked_on_the_turn_the_slots_are_full_and_its_answer_said_then() {
    let root = env!("CARGO_MANIFEST_DIR");
    let run = common_run(
        Command::new(env!("CARGO_BIN_EXE_aido"))
            .current_dir(root)
            .env("CLOCK_DELAY", "0")
            .args(["chat", "examples/chatbot/bot.edn", "--seed", "7"])
            .args(["--handler", "svc/time=examples/chatbot/clock.sh"]),
        "what time is it?\nAnn\nin Lisbon\ntell me more\n",
    );
    let lines: Vec<&str> = run.lines().collect();
    assert_eq!(lines.len(), 6, "{run}");
    assert_eq!(
        lines[..4],
        [
            "Happy to. First, what is your name?",
            "Nice to meet you, Ann.",
            "And which city are you in?",
            "One moment, I am asking the clock in Lisbon.",
        ]
    );
    // The answer, in the turn of "in Lisbon", before the next line's reply.
    assert!(
        lines[4].starts_with("It is ") && lines[4].ends_with(" UTC in Lisbon, Ann."),
        "{run}"
    );
    assert!(
        [
            "A small service tells me the time; I wait for it without blocking.",
            "Type stop while I wait and I stop asking."
        ]
        .contains(&lines[5]),
        "{run}"
    );
}

/// Runs `command` with `input` on standard input; its standard output.
fn common_run(command: &mut Command, input: &str) -> String {
    use std::io::Write;
    let mut child = command
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}
