//! The timeline page's data, read back without a browser: the node states,
//! db changes, events and spans the page's script decodes are those of the
//! run record, and nothing in a run can break out of the page's script.
#![allow(clippy::panic, clippy::expect_used, clippy::unwrap_used)]

use std::collections::BTreeMap;

use aido::record::{NodeState, PageOptions, Recorder, RunRecord, page};
use aido::{Registry, Tree, Value, compile_str, read_value};
use serde_json::Value as Json;

fn tree(name: &str, text: &str) -> Tree {
    compile_str(name, text, &Registry::new()).unwrap()
}

fn record(tree: &Tree, db: &str, inputs: &[&str]) -> RunRecord {
    let mut db = read_value(db).unwrap();
    let mut recorder = Recorder::new(tree, &db);
    for input in inputs {
        if *input != "nil" {
            let input = read_value(input).unwrap().as_map().unwrap().clone();
            for (k, v) in &input {
                db.as_map_mut().unwrap().insert(k.clone(), v.clone());
            }
            recorder.input(&input);
        }
        db = recorder.tick(db, tree).db;
    }
    recorder.finish()
}

/// The JSON the page's script reads.
fn data(html: &str) -> Json {
    let open = "<script type=\"application/json\" id=\"run-data\">";
    let start = html.find(open).unwrap() + open.len();
    let end = start + html[start..].find("</script>").unwrap();
    serde_json::from_str(&html[start..end]).unwrap()
}

/// Decodes a tick's state text as the page's script does.
fn decode(text: &str, n_nodes: usize) -> Vec<String> {
    let mut states = vec!["none".to_owned(); n_nodes];
    let mut at: i64 = -1;
    let mut num: i64 = 0;
    for c in text.chars() {
        if let Some(d) = c.to_digit(10) {
            num = num * 10 + i64::from(d);
            continue;
        }
        at += if num == 0 { 1 } else { num };
        num = 0;
        let word = match c {
            's' => "success",
            'f' => "failure",
            'r' => "running",
            'e' => "error",
            'k' => "skipped",
            'h' => "halted",
            'i' => "idle",
            other => panic!("unknown state letter {other}"),
        };
        states[at as usize] = word.to_owned();
    }
    states
}

const ASK: &str = "[:selector {:id :bot}
 [:sequence {:id :stop} [:test? {:key :input :oper = :val \"stop\"}] [:dissoc! {:key :input}]]
 [:sequence {:id :answer}
  [:present? {:key :input}]
  [:defer {:id :ask :action :llm/ask :prompt [:aido/db :input] :into :reply}]
  [:dissoc! {:key :input}]]]";

#[test]
fn node_states_decode_to_the_recorded_ones() {
    let t = tree("ask.edn", ASK);
    let run = record(
        &t,
        "{}",
        &[
            "{:input \"hi\"}",
            "nil",
            "{:input \"stop\"}",
            "{:input \"again\"}",
            "{:aido/results {:ask {:status :success :result 1}}}",
        ],
    );
    let d = data(&page(&run, &PageOptions::titled("ask.edn")));
    let ticks = d["ticks"].as_array().unwrap();
    assert_eq!(ticks.len(), run.n_ticks());
    let mut seen_halted = false;
    for (tick, json) in run.ticks().zip(ticks) {
        let want: Vec<String> = tick
            .node_states(t.len())
            .iter()
            .map(|s| s.as_str().to_owned())
            .collect();
        seen_halted |= tick.node_states(t.len()).contains(&NodeState::Halted);
        assert_eq!(
            decode(json[3].as_str().unwrap(), t.len()),
            want,
            "tick {}",
            tick.tick
        );
        assert_eq!(json[1], tick.status.as_str());
        assert_eq!(json[2], tick.steps);
    }
    assert!(seen_halted);
    // The third tick: the input, the halts (their text left out: it is
    // kind and node), the cancel with its text and line.
    let third = &ticks[2];
    assert_eq!(third[4], "{:input \"stop\"}");
    let events = third[5].as_array().unwrap();
    assert!(
        events.contains(&serde_json::json!(["halt", ":ask", null, 5])),
        "{events:?}"
    );
    assert!(events.iter().any(|e| e[0] == "cancel"
        && e[2].as_str().unwrap().starts_with("cancel :ask :llm/ask")
        && e[3] == 5));
}

#[test]
fn changes_rebuild_the_db_at_every_tick() {
    let t = tree(
        "t.edn",
        "[:sequence [:inc! {:key :n}] [:choose [:define! {:key :a :val \"x\"}] [:dissoc! {:key :a}] [:define! {:key :a :val 1.0}]]]",
    );
    let mut db = read_value("{:aido/seed 3, :keep [1 2]}").unwrap();
    let mut recorder = Recorder::new(&t, &db);
    for _ in 0..30 {
        db = recorder.tick(db, &t).db;
    }
    let run = recorder.finish();
    let d = data(&page(&run, &PageOptions::default()));
    let mut now: BTreeMap<String, String> = d["start"]
        .as_array()
        .unwrap()
        .iter()
        .map(|kv| {
            (
                kv[0].as_str().unwrap().to_owned(),
                kv[1].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    for (n, tick) in d["ticks"].as_array().unwrap().iter().enumerate() {
        for change in tick[6].as_array().unwrap() {
            let key = change[1].as_str().unwrap().to_owned();
            match change[0].as_str().unwrap() {
                "-" => {
                    assert!(now.remove(&key).is_some());
                }
                _ => {
                    now.insert(key, change[2].as_str().unwrap().to_owned());
                }
            }
        }
        let want: BTreeMap<String, String> = run
            .db_after(n + 1)
            .as_map()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        assert_eq!(now, want, "after tick {}", n + 1);
    }
}

#[test]
fn nothing_in_a_run_escapes_the_page_script() {
    let evil = "</script><script>alert(1)</script><!--";
    let t = tree(
        "evil.edn",
        &format!(";; {evil}\n[:define! {{:id :x :key :say :val \"{evil}\"}}]"),
    );
    let run = record(&t, &format!("{{:note \"{evil}\"}}"), &["nil"]);
    let html = page(&run, &PageOptions::titled(format!("<b>{evil}</b>")));
    // The template's own two scripts (the data and the code), and no other.
    assert_eq!(html.matches("<script").count(), 2, "{html}");
    assert_eq!(html.matches("</script>").count(), 2);
    assert!(!html.contains("alert(1)</script>"));
    assert!(html.contains("<title>&lt;b&gt;&lt;/script&gt;"));
    // The data still reads back as it was.
    let d = data(&html);
    assert_eq!(d["title"], format!("<b>{evil}</b>"));
    assert!(
        d["trees"][0]["source"]
            .as_str()
            .unwrap()
            .starts_with(&format!(";; {evil}"))
    );
    assert_eq!(d["start"][0][1], format!("\"{evil}\""));
    // Nothing points off the page.
    for needle in ["http:", "https:", "src=", "href=\"http", "@import", "url("] {
        assert!(!html.contains(needle), "{needle}");
    }
}

#[test]
fn spans_are_in_utf16_units() {
    let text =
        ";; caf\u{e9} \u{2603} \u{1d11e}\n[:sequence {:id :main} [:inc! {:id :n\u{e9} :key :n}]]";
    let t = tree("u.edn", text);
    let run = record(&t, "{}", &["nil"]);
    let d = data(&page(&run, &PageOptions::default()));
    let units: Vec<u16> = text.encode_utf16().collect();
    let nodes = d["trees"][0]["nodes"].as_array().unwrap();
    let span = |i: usize| {
        let (from, to) = (
            nodes[i][6].as_u64().unwrap() as usize,
            nodes[i][7].as_u64().unwrap() as usize,
        );
        String::from_utf16(&units[from..to]).unwrap()
    };
    assert_eq!(
        span(0),
        "[:sequence {:id :main} [:inc! {:id :n\u{e9} :key :n}]]"
    );
    assert_eq!(span(1), "[:inc! {:id :n\u{e9} :key :n}]");
    assert_eq!(nodes[1][0], ":n\u{e9}");
    assert_eq!(nodes[1][1], ":inc!");
    assert_eq!(nodes[1][2], 1);
    assert_eq!(nodes[1][3], 0);
    assert_eq!(nodes[1][4], 2);
    assert_eq!(nodes[1][5], "{:key :n}");
    assert_eq!(nodes[0][3], -1);
}

#[test]
fn a_tree_built_from_data_and_a_run_without_ticks_still_make_a_page() {
    let t = aido::compile(read_value("[:success]").unwrap(), &Registry::new()).unwrap();
    let run = Recorder::new(&t, &Value::map()).finish();
    let d = data(&page(&run, &PageOptions::default()));
    assert_eq!(d["ticks"], serde_json::json!([]));
    assert_eq!(d["trees"][0]["source"], Json::Null);
    assert_eq!(
        d["trees"][0]["nodes"][0],
        serde_json::json!(["\"0\"", ":success", 0, -1, null, null, null, null])
    );
}
