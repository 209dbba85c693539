//! The timeline page (`aido run --timeline`) in a real browser: headless
//! Chromium opens it from disk, and the tests read the page's data
//! attributes (`data-node-id`, `data-status`, `data-tick`) against the
//! recorded run.
//!
//! Chromium is Debian's `chromium` (`/usr/bin/chromium`, or the path in
//! `AIDO_CHROMIUM`). Without it these tests fail with a clear message when
//! `CI=true` (CI installs it), and print a notice and pass otherwise.
//!
//! One browser serves the whole module (one test, its parts in turn), and
//! each page is loaded once: the ticks to check are then reached through
//! the address's fragment, as a reader following a link would. Each
//! question to the browser costs up to 0.1 s in the driver's connection, so
//! the checks ask in few round trips: one script steps through the ticks
//! of a page and returns everything the assertions need ([`Chromium::run`]).
//! Mouse clicks and the keys Space, Home, End and the arrows still go
//! through the browser's own input. A load is waited for in the page itself (the page marks itself ready), for up to
//! [`LOAD_TIMEOUT`], so that a busy machine makes the tests slower, never
//! wrong; nothing is asserted about time. A part whose browser goes away,
//! or whose driver gets an error instead of an answer, runs again in a new
//! browser (up to three times in all, with a notice): a page is judged only
//! from its answers.
#![allow(clippy::panic, clippy::expect_used, clippy::unwrap_used)]

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a page may take to load and run its script: far more than it
/// ever needs, so that only a page that never loads fails.
const LOAD_TIMEOUT: Duration = Duration::from_secs(300);

/// What the checks ask of a page, in JavaScript ([`Chromium::run`]):
/// - `pane()`: the tree pane's nodes as `[id, status]`, the nodes of the
///   selected tick's tree (rows of nodes that only other versions of the
///   tree have are marked `absent`);
/// - `view()`: `pane()`, every timeline cell as `[tick, id, status]`, and
///   the tick's status line;
/// - `tick(n)`: selects tick `n` through the address (`#tick=n`), as
///   following a link does, and waits for the page's own `hashchange`
///   listener (registered first) to have redrawn it;
/// - `key(k)`: the key `k` pressed on the focused element, as the keydown
///   event the browser would dispatch (each key a check steps with here,
///   Space, Home, End and the left and right arrows, is also pressed
///   through the browser's own input at least once);
/// - `rowOf(id)`: the row (its `data-row`) whose node has the id `id` now;
/// - `dbValue(k)`: the text of key `k`'s value in the db pane;
/// - `marks(n)`: the class names of the marks above tick `n`.
const HELPERS: &str = "\
const pane = () => Array.from(document.querySelectorAll('.row:not(.absent) .node[data-node-id]'))\
  .map(e => [e.dataset.nodeId, e.dataset.status]);
const view = () => [pane(), Array.from(document.querySelectorAll('.cell[data-tick]'))\
  .map(e => [+e.dataset.tick, e.dataset.nodeId, e.dataset.status]),\
  document.getElementById('tickstatus').textContent];
const tick = n => new Promise(done => { const want = '#tick=' + n;\
  if (location.hash === want) { done(); return; }\
  addEventListener('hashchange', () => done(), { once: true }); location.hash = want; });
const key = k => (document.activeElement || document.body).dispatchEvent(\
  new KeyboardEvent('keydown', { key: k, bubbles: true, cancelable: true }));
const rowOf = id => +Array.from(document.querySelectorAll('.node[data-node-id]'))\
  .find(e => e.dataset.nodeId === id).closest('.row').dataset.row;
const dbValue = k => Array.from(document.querySelectorAll('#db .kv'))\
  .find(kv => kv.querySelector('.k').textContent === k).querySelector('.v').lastChild.textContent;
const marks = n => Array.from(document.querySelectorAll('.th[data-tick=\"' + n + '\"] .mk')).map(m => m.className);
";

use aido::record::{NodeState, PageOptions, Recorder, RunRecord, page};
use aido::{Registry, Tree, Value, compile_str, read_value};
use headless_chrome::browser::tab::point::Point;
use headless_chrome::protocol::cdp::types::Event;
use headless_chrome::protocol::cdp::{Network, Page as CdpPage};
use headless_chrome::{Browser, LaunchOptions, Tab};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The Chromium to drive, or `None` (after a notice) when there is none
/// and this is not CI.
fn chromium() -> Option<PathBuf> {
    let candidates = std::env::var_os("AIDO_CHROMIUM")
        .map(PathBuf::from)
        .into_iter()
        .chain(["/usr/bin/chromium", "/usr/bin/chromium-browser"].map(PathBuf::from));
    for path in candidates {
        if path.is_file() {
            return Some(path);
        }
    }
    if std::env::var("CI").as_deref() == Ok("true") {
        panic!(
            "the browser tests need Chromium: install Debian's `chromium` package \
             (apt-get install chromium), or set AIDO_CHROMIUM to its path"
        );
    }
    eprintln!(
        "notice: Chromium not found (/usr/bin/chromium or AIDO_CHROMIUM): \
         the timeline page was not tested in a browser"
    );
    None
}

/// A fresh, empty folder under the system's temporary folder.
fn fresh_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("aido-browser-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A headless Chromium with one tab that collects console errors,
/// exceptions and requests for anything but the page itself.
struct Chromium {
    /// Taken and closed before the folder is removed (see `Drop`).
    browser: Option<Browser>,
    tab: Arc<Tab>,
    errors: Arc<Mutex<Vec<String>>>,
    requests: Arc<Mutex<Vec<String>>>,
    dir: PathBuf,
    /// How many pages were loaded: each load's address is unique.
    loads: AtomicUsize,
}

/// How a failure of the browser's driver begins (a question the browser
/// did not answer, not a check that failed): see [`driven`].
const DRIVER_FAILED: &str = "the browser's driver failed";

/// `result`'s value, or a panic that says the driver failed while doing
/// `what` (the part is then tried again in a new browser: see
/// [`the_timeline_page_in_a_browser`]).
fn driven<T, E: std::fmt::Display>(result: Result<T, E>, what: &str) -> T {
    result.unwrap_or_else(|e| panic!("{DRIVER_FAILED} {what}: {e:#}"))
}

impl Chromium {
    fn launch(path: PathBuf, name: &str) -> Chromium {
        let dir = fresh_dir(name);
        // Chromium makes a folder for its singleton socket in the
        // temporary folder and leaves it when the driver ends the process:
        // pointed into this browser's own folder, it goes with the folder.
        let tmp = dir.join("tmp");
        std::fs::create_dir_all(&tmp).unwrap();
        let options = LaunchOptions {
            headless: true,
            sandbox: false,
            path: Some(path),
            user_data_dir: Some(dir.join("profile")),
            window_size: Some((1440, 900)),
            idle_browser_timeout: Duration::from_secs(600),
            args: [
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--hide-scrollbars",
            ]
            .iter()
            .map(OsStr::new)
            .collect(),
            process_envs: Some(
                [("TMPDIR".to_owned(), tmp.to_string_lossy().into_owned())]
                    .into_iter()
                    .collect(),
            ),
            ..LaunchOptions::default()
        };
        // Starting waits at most 30 s for Chromium to open its port (a
        // limit of the driver): a machine busy enough to miss it gets two
        // more tries.
        // Opening the first tab belongs to the start: on a loaded machine
        // either can fail, and both are tried again together.
        let start = || -> Result<(Browser, Arc<Tab>), String> {
            let browser = Browser::new(options.clone()).map_err(|e| format!("{e:#}"))?;
            browser.set_default_timeout(LOAD_TIMEOUT);
            let tab = browser
                .new_tab()
                .map_err(|e| format!("opening a tab: {e:#}"))?;
            tab.set_default_timeout(LOAD_TIMEOUT);
            tab.enable_runtime()
                .and_then(|_| tab.enable_log())
                .and_then(|_| {
                    tab.call_method(
                        serde_json::from_value::<Network::Enable>(serde_json::json!({})).unwrap(),
                    )
                })
                .map_err(|e| format!("enabling the tab's events: {e:#}"))?;
            Ok((browser, tab))
        };
        let mut tries = 0;
        let (browser, tab) = loop {
            tries += 1;
            match start() {
                Ok(started) => break started,
                Err(e) if tries < 3 => eprintln!("Chromium did not start ({e}); trying again"),
                Err(e) => panic!("Chromium does not start: {e}"),
            }
        };
        let errors = Arc::new(Mutex::new(Vec::new()));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let (e, r) = (errors.clone(), requests.clone());
        tab.add_event_listener(Arc::new(move |event: &Event| match event {
            Event::RuntimeConsoleAPICalled(call) => {
                let kind = format!("{:?}", call.params.Type);
                if kind == "Error" || kind == "Warning" || kind == "Assert" {
                    e.lock()
                        .unwrap()
                        .push(format!("console {kind}: {:?}", call.params.args));
                }
            }
            Event::RuntimeExceptionThrown(thrown) => {
                e.lock()
                    .unwrap()
                    .push(format!("exception: {:?}", thrown.params.exception_details));
            }
            Event::LogEntryAdded(entry) => {
                let level = format!("{:?}", entry.params.entry.level);
                if level == "Error" || level == "Warning" {
                    e.lock()
                        .unwrap()
                        .push(format!("log {level}: {}", entry.params.entry.text));
                }
            }
            Event::NetworkRequestWillBeSent(sent) => {
                r.lock().unwrap().push(sent.params.request.url.clone());
            }
            _ => {}
        }))
        .unwrap();
        Chromium {
            browser: Some(browser),
            tab,
            errors,
            requests,
            dir,
            loads: AtomicUsize::new(0),
        }
    }

    /// Opens `file` at `fragment` (e.g. `tick=3`), a full load each time.
    ///
    /// The load is not waited for through the browser's navigation events
    /// (a page from disk can finish loading before the navigation is
    /// marked as started, and the wait then never ends): the page is asked
    /// until it is the one asked for, by its unique address, and has
    /// marked itself ready.
    fn open(&self, file: &Path, fragment: &str) {
        let load = self.loads.fetch_add(1, Ordering::Relaxed);
        let url = format!("file://{}?load={load}#{fragment}", file.display());
        driven(self.tab.navigate_to(&url), &format!("navigating to {url}"));
        let ready = format!(
            "new Promise(done => {{ const check = () => location.search === '?load={load}' && \
             document.body && document.body.dataset.ready === 'true' ? done('ready') : \
             requestAnimationFrame(check); check(); }})"
        );
        let deadline = Instant::now() + LOAD_TIMEOUT;
        loop {
            // While the old page is replaced, its context goes away under
            // the question: ask the new one.
            if let Ok(answer) = self.tab.evaluate(&ready, true)
                && answer.value == Some(serde_json::json!("ready"))
            {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{url} did not load within {LOAD_TIMEOUT:?}"
            );
        }
    }

    /// Runs `body`, the body of an async JavaScript function, in the page
    /// and returns its result (JSON). The body may use the helpers of
    /// [`HELPERS`]: several steps and the checks of what they show go in
    /// one round trip (each question to the browser waits on the driver's
    /// connection, up to 0.1 s).
    fn run(&self, body: &str) -> serde_json::Value {
        let js = format!("(async () => {{ {HELPERS}\n{body} }})().then(v => JSON.stringify(v))");
        let answer = driven(
            self.tab.evaluate(&js, true),
            &format!("running `{body}` in the page"),
        );
        let text = answer
            .value
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_else(|| panic!("`{body}` gave no value: {:?}", answer.description));
        serde_json::from_str(&text).unwrap()
    }

    /// Clicks the middle of the element `selector` with the mouse, as a
    /// person does, after scrolling it into view.
    fn click(&self, selector: &str) {
        let at = self.run(&format!(
            "const e = document.querySelector({}); e.scrollIntoView({{block: 'center', inline: 'center'}}); \
             const r = e.getBoundingClientRect(); return [r.left + r.width / 2, r.top + r.height / 2];",
            serde_json::to_string(selector).unwrap()
        ));
        driven(
            self.tab.click_point(Point {
                x: at[0].as_f64().unwrap(),
                y: at[1].as_f64().unwrap(),
            }),
            &format!("clicking {selector}"),
        );
    }

    /// Presses `key` through the browser's own input, as a person does.
    fn press(&self, key: &str) {
        driven(self.tab.press_key(key), &format!("pressing {key}"));
    }

    fn assert_quiet(&self) {
        let errors = self.errors.lock().unwrap().clone();
        assert!(errors.is_empty(), "console errors: {errors:#?}");
        let outside: Vec<String> = self
            .requests
            .lock()
            .unwrap()
            .iter()
            .filter(|url| !url.starts_with("file://"))
            .cloned()
            .collect();
        assert!(outside.is_empty(), "requests off the disk: {outside:#?}");
        let resources =
            self.run("return performance.getEntriesByType('resource').map(e => e.name);");
        assert_eq!(
            resources,
            serde_json::json!([]),
            "the page loaded resources"
        );
    }
}

impl Drop for Chromium {
    fn drop(&mut self) {
        // Chromium writes its profile until it exits: close it first, or
        // the folder is made again behind the removal and left behind.
        // Its helper processes can outlive it for a moment and write there
        // still: the removal waits until no process names the folder (for
        // at most ten seconds) and is tried again while it meets one; a
        // folder left after that is named.
        drop(self.browser.take());
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let used = folder_in_use(&self.dir);
            if !used && (std::fs::remove_dir_all(&self.dir).is_ok() || !self.dir.exists()) {
                break;
            }
            if Instant::now() >= deadline {
                let _ = std::fs::remove_dir_all(&self.dir);
                if self.dir.exists() {
                    eprintln!("notice: {} could not be removed", self.dir.display());
                }
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// Whether a running process names `dir` on its command line (Chromium's
/// processes carry their `--user-data-dir`); false where `/proc` cannot
/// be read.
fn folder_in_use(dir: &Path) -> bool {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return false;
    };
    let needle = dir.as_os_str().as_encoded_bytes();
    entries.flatten().any(|entry| {
        entry
            .file_name()
            .to_string_lossy()
            .bytes()
            .all(|b| b.is_ascii_digit())
            && std::fs::read(entry.path().join("cmdline"))
                .is_ok_and(|line| line.windows(needle.len()).any(|w| w == needle))
    })
}

/// Timeline cells as `[tick, id, status]`.
fn cells(value: &serde_json::Value) -> Vec<(u64, String, String)> {
    value
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c[0].as_u64().unwrap(),
                c[1].as_str().unwrap().to_owned(),
                c[2].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn pairs(value: serde_json::Value) -> Vec<(String, String)> {
    value
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p[0].as_str().unwrap().to_owned(),
                p[1].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// Runs `tree_file` as `aido run` does (inputs merged before their tick)
/// and records it.
fn record(tree: &Tree, db: Value, inputs: &[Option<aido::value::Map>], ticks: usize) -> RunRecord {
    let mut db = db;
    let mut recorder = Recorder::new(tree, &db);
    for n in 0..ticks {
        if let Some(Some(input)) = inputs.get(n) {
            for (k, v) in input {
                db.as_map_mut().unwrap().insert(k.clone(), v.clone());
            }
            recorder.input(input);
        }
        db = recorder.tick(db, tree).db;
    }
    recorder.finish()
}

/// The states the page must show at tick `n` (from 1), in tree order.
fn expected(run: &RunRecord, n: usize) -> Vec<(String, String)> {
    let tick = &run.tick(n - 1).unwrap();
    let tree = &run.trees[tick.tree];
    tree.nodes
        .iter()
        .zip(tick.node_states(tree.nodes.len()))
        .map(|(node, state)| (node.id.to_string(), state.as_str().to_owned()))
        .collect()
}

/// A run to look at in the browser: the page the binary wrote, and the
/// run recorded by the library.
struct Scenario {
    html: PathBuf,
    run: RunRecord,
    ticks_to_check: Vec<usize>,
}

/// `aido run TREE [--db DB] [--inputs INPUTS] --ticks N --timeline OUT`, and
/// the same run recorded through the library; the two pages must be equal.
fn scenario(
    dir: &Path,
    tree: &str,
    db: Option<&str>,
    inputs: Option<&str>,
    ticks: usize,
) -> Scenario {
    let html = dir.join(format!("{}.html", tree.replace(['/', '.'], "_")));
    let mut command = Command::new(env!("CARGO_BIN_EXE_aido"));
    command
        .current_dir(root())
        .args(["run", tree, "--ticks", &ticks.to_string()]);
    if let Some(db) = db {
        command.args(["--db", db]);
    }
    if let Some(inputs) = inputs {
        command.args(["--inputs", inputs]);
    }
    let out = command.arg("--timeline").arg(&html).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let text = std::fs::read_to_string(root().join(tree)).unwrap();
    let compiled = compile_str(tree, &text, &Registry::new()).unwrap();
    let db = match db {
        Some(db) => read_value(&std::fs::read_to_string(root().join(db)).unwrap()).unwrap(),
        None => Value::map(),
    };
    let inputs: Vec<Option<aido::value::Map>> = match inputs {
        Some(inputs) => read_value(&std::fs::read_to_string(root().join(inputs)).unwrap())
            .unwrap()
            .as_seq()
            .unwrap()
            .iter()
            .map(|v| v.as_map().cloned())
            .collect(),
        None => Vec::new(),
    };
    let run = record(&compiled, db, &inputs, ticks);
    let written = std::fs::read_to_string(&html).unwrap();
    assert!(
        written == page(&run, &PageOptions::titled(tree)),
        "the page of `aido run --timeline` is the library's page of the same run"
    );
    Scenario {
        html,
        run,
        ticks_to_check: Vec::new(),
    }
}

/// A part of the browser test: its name, and what it checks.
type Part = (&'static str, fn(&Chromium));

/// The timeline page in one browser: each part below in turn.
#[test]
fn the_timeline_page_in_a_browser() {
    let Some(path) = chromium() else { return };
    let mut chrome = Chromium::launch(path.clone(), "page");
    let parts: [Part; 6] = [
        (
            "statuses",
            node_statuses_at_each_tick_match_the_recorded_run,
        ),
        (
            "select",
            a_node_in_the_address_is_selected_and_its_source_highlighted,
        ),
        (
            "long",
            a_long_run_of_a_big_tree_opens_at_the_asked_tick_and_steps,
        ),
        ("reload", a_reloaded_tree_keeps_a_renamed_node_on_its_row),
        ("log", a_log_recorded_as_appends_shows_whole_in_the_db_pane),
        ("edits", values_recorded_as_edits_show_whole_in_the_db_pane),
    ];
    for (name, part) in parts {
        let mut tries = 1;
        loop {
            let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| part(&chrome)));
            let Err(failure) = outcome else { break };
            // A check that failed with the browser still answering failed
            // on the page: that is the test's verdict. A part whose browser
            // went away (on a machine starved of memory or time, Chromium
            // may be lost, and a new one soon after it), or whose driver
            // got an error instead of an answer to a question, runs again
            // in a new browser, up to three times in all: what a page shows
            // is only ever judged from an answer.
            let message = failure
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| failure.downcast_ref::<&str>().copied())
                .unwrap_or("");
            let driver = message.starts_with(DRIVER_FAILED);
            let gone = chrome.tab.evaluate("1", false).is_err();
            if tries == 3 || !(driver || gone) {
                std::panic::resume_unwind(failure);
            }
            if gone {
                eprintln!("notice: Chromium went away during the `{name}` part; trying it again");
            } else {
                eprintln!("notice: during the `{name}` part, {message}; trying it again");
            }
            let errors = chrome.errors.lock().unwrap().clone();
            assert!(errors.is_empty(), "console errors: {errors:#?}");
            chrome = Chromium::launch(path.clone(), &format!("{name}-{tries}"));
            tries += 1;
        }
    }
    chrome.assert_quiet();
}

fn node_statuses_at_each_tick_match_the_recorded_run(chrome: &Chromium) {
    let dir = chrome.dir.clone();

    // A tree whose third tick ends in Error (a string compared with a number).
    std::fs::write(
        dir.join("error.edn"),
        "[:sequence {:id :main}\n [:inc! {:id :count :key :n}]\n [:selector\n  [:less-than? {:key :n :val 3}]\n  [:less-than? {:id :bad :key :name :val 3}]]]\n",
    )
    .unwrap();
    std::fs::write(dir.join("error-db.edn"), "{:name \"x\"}").unwrap();
    let error_tree = dir.join("error.edn");
    let error_db = dir.join("error-db.edn");

    let mut scenarios = [
        scenario(
            &dir,
            "examples/npc.edn",
            Some("examples/npc-db.edn"),
            None,
            12,
        ),
        scenario(
            &dir,
            "examples/long/ask.edn",
            None,
            Some("examples/long/ask.inputs.edn"),
            7,
        ),
        scenario(
            &dir,
            "examples/long/race.edn",
            None,
            Some("examples/long/race.inputs.edn"),
            6,
        ),
        scenario(
            &dir,
            error_tree.to_str().unwrap(),
            Some(error_db.to_str().unwrap()),
            None,
            4,
        ),
    ];
    scenarios[0].ticks_to_check = vec![1, 5, 9, 12];
    scenarios[1].ticks_to_check = vec![1, 2, 3, 5, 7];
    scenarios[2].ticks_to_check = vec![1, 3, 6];
    scenarios[3].ticks_to_check = vec![3, 2, 4];

    // The runs have what the page must show: halts, launches, an error.
    let kinds = |s: &Scenario| -> Vec<String> {
        s.run
            .ticks()
            .flat_map(|t| t.events().iter().map(|e| e.kind()).collect::<Vec<_>>())
            .collect()
    };
    assert!(kinds(&scenarios[1]).contains(&"launch".to_owned()));
    assert!(kinds(&scenarios[1]).contains(&"halt".to_owned()));
    assert!(kinds(&scenarios[3]).contains(&"error".to_owned()));
    let halted_somewhere = scenarios.iter().any(|s| {
        s.run.ticks().any(|t| {
            t.node_states(s.run.trees[t.tree].nodes.len())
                .contains(&NodeState::Halted)
        })
    });
    assert!(halted_somewhere, "some page shows a halted node");

    for (i, s) in scenarios.iter().enumerate() {
        // One load a page, at its first tick to check; the others through
        // the address; then a step forward and back with the arrow keys.
        // Everything the page shows, asked in one round trip.
        let first = s.ticks_to_check[0];
        chrome.open(&s.html, &format!("tick={first}"));
        let seen = chrome.run(&format!(
            "const events = Array.from(document.querySelectorAll('#events li')).map(li => li.textContent); \
             const views = []; for (const n of {ticks:?}) {{ await tick(n); views.push(view()); }} \
             await tick({first}); key('ArrowRight'); const right = [pane(), location.hash]; \
             key('ArrowLeft'); return [events, marks({first}), views, right, pane()];",
            ticks = s.ticks_to_check
        ));
        if i == 3 {
            // The error run's third tick lists the error with its line,
            // and its column is marked.
            let items: Vec<&str> = seen[0]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_str().unwrap())
                .collect();
            assert!(
                items.iter().any(
                    |li| li.starts_with("errorcannot compare string") && li.ends_with("line 5")
                ),
                "{items:?}"
            );
            assert_eq!(seen[1], serde_json::json!(["mk error"]));
        }
        for (&n, view) in s.ticks_to_check.iter().zip(seen[2].as_array().unwrap()) {
            assert_eq!(
                pairs(view[0].clone()),
                expected(&s.run, n),
                "{} at tick {n}",
                s.html.display()
            );
            // Every cell shown carries its own tick's state.
            let cells = cells(&view[1]);
            assert!(
                cells.iter().any(|c| c.0 == n as u64),
                "tick {n}'s column is shown"
            );
            for (tick, id, status) in cells {
                let want = expected(&s.run, tick as usize);
                let (_, state) = want.iter().find(|(i, _)| *i == id).unwrap();
                assert_eq!(&status, state, "cell of {id} at tick {tick}");
            }
            assert_eq!(view[2], s.run.tick(n - 1).unwrap().status.as_str());
        }
        // A key press steps to the next tick, and the address follows.
        assert_eq!(pairs(seen[3][0].clone()), expected(&s.run, first + 1));
        assert_eq!(seen[3][1], format!("#tick={}", first + 1));
        assert_eq!(pairs(seen[4].clone()), expected(&s.run, first));
    }
}

fn a_node_in_the_address_is_selected_and_its_source_highlighted(chrome: &Chromium) {
    let dir = chrome.dir.clone();
    let s = scenario(
        &dir,
        "examples/long/ask.edn",
        None,
        Some("examples/long/ask.inputs.edn"),
        7,
    );
    chrome.open(&s.html, "tick=3&node=%3Aask");
    let selected = chrome.run(
        "return [document.querySelector('.row.sel .node').dataset.nodeId, \
          document.querySelector('#source mark').textContent, \
          document.querySelectorAll('#db .kv').length, \
          document.querySelectorAll('#events li').length];",
    );
    assert_eq!(selected[0], ":ask");
    assert!(
        selected[1]
            .as_str()
            .unwrap()
            .starts_with("[:defer {:id :ask")
    );
    assert!(selected[2].as_u64().unwrap() > 0, "the db pane lists keys");
    assert!(
        selected[3].as_u64().unwrap() > 0,
        "the events pane lists the input"
    );
    // Clicking a cell selects its tick and its node.
    chrome.click(".cell[data-tick=\"5\"][data-node-id=\"\\\"answer.0\\\"\"]");
    let clicked = chrome.run(
        "const after = [pane(), location.hash]; await tick(5); \
         return [after, document.body.dataset.playing];",
    );
    assert_eq!(clicked[0][1], "#tick=5&node=%22answer.0%22");
    assert_eq!(pairs(clicked[0][0].clone()), expected(&s.run, 5));

    // A screenshot that is not blank: a PNG with many distinct colours.
    let png = driven(
        chrome.tab.capture_screenshot(
            CdpPage::CaptureScreenshotFormatOption::Png,
            None,
            None,
            true,
        ),
        "taking a screenshot",
    );
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    assert!(
        png.len() > 20_000,
        "a screenshot of {} bytes is blank",
        png.len()
    );
    if let Some(out) = std::env::var_os("AIDO_SCREENSHOT") {
        std::fs::write(out, &png).unwrap();
    }
    // Space plays the run and stops it; a step by hand stops it too. The
    // keys go through the browser's input, as a person's do.
    let playing = || chrome.run("return document.body.dataset.playing;");
    assert_eq!(clicked[1], "false");
    chrome.press(" ");
    assert_eq!(playing(), "true");
    chrome.press(" ");
    assert_eq!(playing(), "false");
    chrome.press(" ");
    chrome.press("Home");
    let home = chrome.run("return [document.body.dataset.playing, pane()];");
    assert_eq!(home[0], "false");
    assert_eq!(pairs(home[1].clone()), expected(&s.run, 1));

    // A run without ticks (the library can record one) still opens quietly.
    let tree = compile_str("one.edn", "[:success]", &Registry::new()).unwrap();
    let empty = chrome.dir.join("empty.html");
    let run = Recorder::new(&tree, &Value::map()).finish();
    std::fs::write(&empty, page(&run, &PageOptions::titled("one.edn"))).unwrap();
    chrome.open(&empty, "tick=3");
    let text = chrome.run(
        "for (const k of ['ArrowRight', 'ArrowDown', 'End', ' ']) { key(k); } \
         return document.getElementById('grid').textContent;",
    );
    assert_eq!(text, "the run has no ticks");
}

/// A generated tree of about 500 nodes that keeps many nodes running.
fn big_tree() -> Tree {
    let mut text = String::from("[:parallel {:id :root :mode :success :how-many 1}\n");
    for i in 0..83 {
        text.push_str(&format!(
            " [:selector {{:id :s{i}}} [:randomly {{:p 0.3}} [:wait {{:id :w{i} :ticks 2}}]] \
             [:sequence [:inc! {{:key :n}}] [:success]]]\n"
        ));
    }
    text.push(']');
    compile_str("big.edn", &text, &Registry::new()).unwrap()
}

/// How many ticks the long run has: 400, many times the ticks the page
/// shows at once (a debug build records this tree's ticks at a few
/// milliseconds each), or `AIDO_STRESS_TICKS` (README's figures are for
/// 10,000).
fn stress_ticks() -> usize {
    std::env::var("AIDO_STRESS_TICKS")
        .ok()
        .and_then(|t| t.parse().ok())
        .filter(|&t| t >= 10)
        .unwrap_or(400)
}

fn a_long_run_of_a_big_tree_opens_at_the_asked_tick_and_steps(chrome: &Chromium) {
    let tree = big_tree();
    assert_eq!(tree.len(), 499);
    let ticks = stress_ticks();
    let run = record(&tree, read_value("{:aido/seed 7}").unwrap(), &[], ticks);
    let html = chrome.dir.join("long.html");
    let text = page(&run, &PageOptions::titled("big.edn"));
    std::fs::write(&html, &text).unwrap();

    // Measured, never asserted: the figures go to README by hand.
    let started = Instant::now();
    let at = ticks * 9 / 10;
    chrome.open(&html, &format!("tick={at}"));
    let opened = started.elapsed();
    let opened_view = chrome.run("return [+document.body.dataset.readyMs, pane()];");
    let ready_ms = &opened_view[0];
    eprintln!(
        "{ticks} ticks of a {}-node tree: page {:.1} MB, opened in {} ms (script done {} ms after navigation)",
        tree.len(),
        text.len() as f64 / 1e6,
        opened.as_millis(),
        ready_ms
    );
    assert_eq!(pairs(opened_view[1].clone()), expected(&run, at));
    let step = "return [pane(), +document.body.dataset.stepMs];";
    chrome.press("End");
    let jumped = chrome.run(step);
    assert_eq!(pairs(jumped[0].clone()), expected(&run, ticks));
    let jump_ms = &jumped[1];
    chrome.press("ArrowLeft");
    let stepped = chrome.run(step);
    assert_eq!(pairs(stepped[0].clone()), expected(&run, ticks - 1));
    let step_ms = &stepped[1];
    eprintln!("in the page: a jump to the last tick {jump_ms} ms, a step back {step_ms} ms");
}

fn a_reloaded_tree_keeps_a_renamed_node_on_its_row(chrome: &Chromium) {
    let html = chrome.dir.join("patrol.html");
    let out = Command::new(env!("CARGO_BIN_EXE_aido"))
        .current_dir(root())
        .args(["run", "examples/trim/patrol.edn", "--ticks", "5"])
        .args(["--reload", "3=examples/trim/patrol-v2.edn", "--timeline"])
        .arg(&html)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // The same run through the library: the reload carries the db over
    // and is told to the recorder before tick 3.
    let compile = |file: &str| {
        let text = std::fs::read_to_string(root().join(file)).unwrap();
        compile_str(file, &text, &Registry::new()).unwrap()
    };
    let mut tree = compile("examples/trim/patrol.edn");
    let mut db = Value::map();
    let mut recorder = Recorder::new(&tree, &db);
    for n in 1..=5 {
        if n == 3 {
            let new_tree = compile("examples/trim/patrol-v2.edn");
            let (carried, report) = aido::migrate::migrate(db, &tree, &new_tree);
            let mut note = report.to_value();
            note.as_map_mut().unwrap().shift_insert(
                0,
                Value::keyword("file"),
                Value::string("examples/trim/patrol-v2.edn"),
            );
            recorder.event(aido::record::Event::Reload(note));
            db = carried;
            tree = new_tree;
        }
        db = recorder.tick(db, &tree).db;
    }
    let run = recorder.finish();
    assert_eq!(run.trees.len(), 2);
    assert!(
        std::fs::read_to_string(&html).unwrap()
            == page(&run, &PageOptions::titled("examples/trim/patrol.edn")),
        "the page of `aido run --reload --timeline` is the library's page of the same run"
    );

    chrome.open(&html, "tick=2");
    let before = chrome.run("return [pane(), rowOf(':walk')];");
    assert_eq!(pairs(before[0].clone()), expected(&run, 2));
    chrome.press("ArrowRight");
    chrome.press("ArrowRight");
    let after = chrome.run("return [pane(), rowOf(':stroll'), marks(3)];");
    assert_eq!(pairs(after[0].clone()), expected(&run, 4));
    assert_eq!(after[1], before[1], ":walk, renamed :stroll, keeps its row");
    // The reload is marked above tick 3.
    assert_eq!(after[2], serde_json::json!(["mk reload"]));
}

fn values_recorded_as_edits_show_whole_in_the_db_pane(chrome: &Chromium) {
    // A big map and a long vector edited in a few places are recorded as
    // those edits; the page keeps them as entries and shows them whole.
    let tree = compile_str(
        "edits.edn",
        "[:sequence [:inc! {:key [:big 5]}] [:inc! {:key [:big :new]}] [:inc! {:key [:v 3]}]]",
        &Registry::new(),
    )
    .unwrap();
    let big = (0..200)
        .map(|i| format!("{i} 0"))
        .collect::<Vec<_>>()
        .join(", ");
    let db = read_value(&format!("{{:big {{{big}}}, :v [0 0 0 0 0 0 0 0 0 0]}}")).unwrap();
    let run = record(&tree, db, &[], 300);
    assert!(
        run.changes(&run.tick(299).unwrap())
            .collect::<Vec<_>>()
            .iter()
            .all(|c| matches!(c, aido::record::DbChange::Edited { .. }))
    );
    let html = chrome.dir.join("edits.html");
    std::fs::write(&html, page(&run, &PageOptions::titled("edits.edn"))).unwrap();
    chrome.open(&html, "tick=300");
    let ticks = [300, 1, 2, 9, 256, 257];
    let shown = chrome.run(&format!(
        "const seen = []; for (const n of {ticks:?}) {{ await tick(n); seen.push([dbValue(':big'), dbValue(':v')]); }} \
         return seen;"
    ));
    for (n, values) in ticks.into_iter().zip(shown.as_array().unwrap()) {
        let whole = run.db_after(n);
        for (i, key) in ["big", "v"].into_iter().enumerate() {
            let want = whole.get(&Value::keyword(key)).unwrap().to_string();
            assert_eq!(values[i], want, ":{key} at tick {n}");
        }
    }
}

fn a_log_recorded_as_appends_shows_whole_in_the_db_pane(chrome: &Chromium) {
    // A vector that grows at its end is recorded as what it gained; the
    // page rebuilds the whole value, at every tick.
    let tree = compile_str(
        "log.edn",
        "[:sequence [:inc! {:key :n}] [:emit! {:key :log :val [:aido/db :n]}]]",
        &Registry::new(),
    )
    .unwrap();
    let run = record(&tree, Value::map(), &[], 300);
    let mut appended = run.changes(&run.tick(299).unwrap());
    assert!(appended.any(|c| matches!(c, aido::record::DbChange::Appended { .. })));
    let html = chrome.dir.join("log.html");
    std::fs::write(&html, page(&run, &PageOptions::titled("log.edn"))).unwrap();
    chrome.open(&html, "tick=300");
    let ticks = [300, 9, 12, 257, 1];
    let shown = chrome.run(&format!(
        "const seen = []; for (const n of {ticks:?}) {{ await tick(n); seen.push(dbValue(':log')); }} \
         return seen;"
    ));
    for (n, shown) in ticks.into_iter().zip(shown.as_array().unwrap()) {
        let whole = run.db_after(n);
        let log = whole.get(&Value::keyword("log")).unwrap().to_string();
        assert_eq!(shown, &log, "the log at tick {n}");
    }
}
