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
        Some(Value::Vector(replies)) => replies.clone(),
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
