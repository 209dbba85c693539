//! Where `aido chat` gets its lines: a thread that reads one line each
//! time the chat asks for one, so the chat can wait for a line, a
//! handler's answer and the idle time all at once. From a terminal the
//! line is edited with rustyline (arrows, history, Ctrl-D to end); from a
//! pipe it is read plainly, with no prompt.
//!
//! From a pipe a line is read only when asked for: a piped conversation is
//! read one line per turn, never ahead, so what a turn does never depends
//! on how fast the lines came. At a terminal the prompt is always there: a
//! line typed while a turn waits for a handler program sets the flag
//! ([`Lines::typed`]) that ends the wait, so "stop" can cancel a slow
//! question.

use std::io::{self, BufRead, Read, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use rustyline::error::ReadlineError;
use rustyline::history::FileHistory;
use rustyline::{Config, Editor, ExternalPrinter};

use super::load::io_reason;

/// What the reader heard.
#[derive(Debug)]
pub(crate) enum Heard {
    /// A line, without its end.
    Line(String),
    /// A line that could not be taken (too long, not UTF-8), and why.
    Skipped(String),
    /// The end of the input (Ctrl-D at a terminal).
    End,
}

/// The reader thread and the channels to it.
pub(crate) struct Lines {
    ask: Option<Sender<()>>,
    heard: Receiver<Heard>,
    thread: Option<JoinHandle<()>>,
    /// At a terminal: prints above the prompt while a line is being edited.
    printer: Option<Box<dyn ExternalPrinter>>,
    /// The lines typed at the terminal and not yet taken.
    typed: Arc<Typed>,
}

/// The lines typed at the terminal and not yet taken, and the flag a turn
/// waiting for a handler looks at, set exactly while there are some. A
/// count, not a flag alone: a line typed before the chat took the one
/// before it (the prompt is back at once) still ends the next turn's wait.
#[derive(Debug, Default)]
struct Typed {
    waiting: Mutex<usize>,
    flag: Arc<AtomicBool>,
}

impl Typed {
    /// The reader heard a line (before it is sent).
    fn heard(&self) {
        let mut waiting = self.waiting.lock().unwrap_or_else(PoisonError::into_inner);
        *waiting += 1;
        self.flag.store(true, Ordering::SeqCst);
    }

    /// The chat took a line the reader counted.
    fn taken(&self) {
        let mut waiting = self.waiting.lock().unwrap_or_else(PoisonError::into_inner);
        *waiting = waiting.saturating_sub(1);
        self.flag.store(*waiting > 0, Ordering::SeqCst);
    }
}

impl Lines {
    /// Starts reading standard input: with rustyline when `terminal`
    /// (history from and to `history`, if given), else plainly, each line
    /// at most `limit` bytes.
    pub(crate) fn start(
        terminal: bool,
        limit: u64,
        history: Option<PathBuf>,
    ) -> Result<Lines, String> {
        let (ask, asked) = channel::<()>();
        let (tell, heard) = channel::<Heard>();
        let typed = Arc::new(Typed::default());
        let (thread, printer) = if terminal {
            let config = Config::builder().auto_add_history(false).build();
            let mut editor: Editor<(), FileHistory> =
                Editor::with_config(config).map_err(|e| e.to_string())?;
            if let Some(path) = &history
                && path.exists()
            {
                editor
                    .load_history(path)
                    .map_err(|e| format!("{}: {e}", path.display()))?;
            }
            let printer = editor
                .create_external_printer()
                .map_err(|e| e.to_string())?;
            let flag = typed.clone();
            let thread = std::thread::spawn(move || edit(editor, &tell, &flag, history));
            (thread, Some(Box::new(printer) as Box<dyn ExternalPrinter>))
        } else {
            let thread = std::thread::spawn(move || plain(&asked, &tell, limit));
            (thread, None)
        };
        Ok(Lines {
            ask: Some(ask),
            heard,
            thread: Some(thread),
            printer,
            typed,
        })
    }

    /// The flag that is set while a line typed at the terminal waits to be
    /// taken (never set from a pipe): a turn waiting for a handler ends
    /// when it is set ([`aido::session::Session::set_interrupt`]).
    pub(crate) fn typed(&self) -> Arc<AtomicBool> {
        self.typed.flag.clone()
    }

    /// Asks for the next line.
    pub(crate) fn ask(&self) {
        if let Some(ask) = &self.ask {
            let _ = ask.send(());
        }
    }

    /// Waits for what was asked for, at most `timeout` (`None`: as long as
    /// it takes); `None` when the time ran out.
    pub(crate) fn wait(&self, timeout: Option<Duration>) -> Option<Heard> {
        let heard = match timeout {
            None => Some(self.heard.recv().unwrap_or(Heard::End)),
            Some(timeout) => match self.heard.recv_timeout(timeout) {
                Ok(heard) => Some(heard),
                Err(RecvTimeoutError::Timeout) => None,
                Err(RecvTimeoutError::Disconnected) => Some(Heard::End),
            },
        };
        if matches!(heard, Some(Heard::Line(_))) {
            self.typed.taken();
        }
        heard
    }

    /// Writes `text` to standard output: at a terminal above the line
    /// being edited, so the prompt and what was typed stay whole.
    pub(crate) fn print(&mut self, text: &[u8], out: &mut dyn Write) -> io::Result<()> {
        if text.is_empty() {
            return Ok(());
        }
        match &mut self.printer {
            Some(printer) => printer
                .print(String::from_utf8_lossy(text).into_owned())
                .map_err(io::Error::other),
            None => {
                out.write_all(text)?;
                out.flush()
            }
        }
    }

    /// Stops the reader and waits for it (a terminal's history is saved
    /// by then).
    pub(crate) fn finish(mut self) {
        self.ask = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The terminal reader: a prompt and an edited line, again and again (the
/// prompt stays while a turn runs, what the chat prints goes above it);
/// the history saved at the end when a file was given.
fn edit(
    mut editor: Editor<(), FileHistory>,
    tell: &Sender<Heard>,
    typed: &Typed,
    history: Option<PathBuf>,
) {
    loop {
        let heard = match editor.readline("> ") {
            Ok(line) => {
                if !line.trim().is_empty() {
                    let _ = editor.add_history_entry(line.as_str());
                }
                Heard::Line(line)
            }
            // Ctrl-C drops the line being typed, as in a shell.
            Err(ReadlineError::Interrupted) => continue,
            Err(ReadlineError::Eof) => Heard::End,
            Err(e) => {
                let _ = tell.send(Heard::Skipped(format!("the terminal: {e}")));
                Heard::End
            }
        };
        let end = matches!(heard, Heard::End);
        if !end {
            typed.heard();
        }
        if tell.send(heard).is_err() || end {
            break;
        }
    }
    if let Some(path) = history
        && let Err(e) = editor.save_history(&path)
    {
        let line = format!("aido: {}: cannot save the history: {e}", path.display());
        let _ = writeln!(io::stderr(), "{}", super::escaped_lines(&line));
    }
}

/// The pipe reader: one line each time one is asked for.
fn plain(asked: &Receiver<()>, tell: &Sender<Heard>, limit: u64) {
    let stdin = io::stdin();
    let mut input = stdin.lock();
    while asked.recv().is_ok() {
        let heard = match read_line(&mut input, limit) {
            Ok(Some(line)) => Heard::Line(line),
            Ok(None) => Heard::End,
            Err(why) => Heard::Skipped(format!("standard input: {why}")),
        };
        let end = matches!(heard, Heard::End);
        if tell.send(heard).is_err() || end {
            break;
        }
    }
}

/// Reads one line without its end, at most `limit` bytes; `None` at the end
/// of the input.
fn read_line(input: &mut dyn BufRead, limit: u64) -> Result<Option<String>, String> {
    let mut bytes = Vec::new();
    let n = input
        .take(limit.saturating_add(1))
        .read_until(b'\n', &mut bytes)
        .map_err(|e| io_reason(&e))?;
    if n == 0 {
        return Ok(None);
    }
    if bytes.last() != Some(&b'\n') && n as u64 > limit {
        // Skip the rest of the line before saying so.
        let mut rest = Vec::new();
        let _ = input.read_until(b'\n', &mut rest);
        return Err(format!(
            "a line longer than {limit} bytes (AIDO_MAX_INPUT_BYTES) was skipped"
        ));
    }
    while bytes.last().is_some_and(|b| *b == b'\n' || *b == b'\r') {
        bytes.pop();
    }
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|_| "a line that is not valid UTF-8 was skipped".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines as the terminal reader makes them, fed by the test instead.
    fn fed() -> (Lines, Sender<Heard>) {
        let (tell, heard) = channel();
        let lines = Lines {
            ask: None,
            heard,
            thread: None,
            printer: None,
            typed: Arc::new(Typed::default()),
        };
        (lines, tell)
    }

    fn type_line(lines: &Lines, tell: &Sender<Heard>, line: &str) {
        lines.typed.heard();
        tell.send(Heard::Line(line.to_owned())).unwrap();
    }

    fn wait_ends(lines: &Lines) -> bool {
        lines.typed().load(Ordering::SeqCst)
    }

    #[test]
    fn a_line_typed_before_the_chat_took_the_one_before_it_still_ends_the_next_wait() {
        let (lines, tell) = fed();
        // The prompt is back as soon as a line is read: "stop" can be typed
        // before the chat takes "I am Ann" and starts its turn.
        type_line(&lines, &tell, "I am Ann");
        type_line(&lines, &tell, "stop");
        assert!(matches!(lines.wait(None), Some(Heard::Line(l)) if l == "I am Ann"));
        assert!(
            wait_ends(&lines),
            "the turn of \"I am Ann\" must not wait past \"stop\""
        );
        assert!(matches!(lines.wait(None), Some(Heard::Line(l)) if l == "stop"));
        assert!(!wait_ends(&lines), "no line is left to take");
    }

    #[test]
    fn the_end_of_the_input_and_a_pipes_lines_never_end_a_wait() {
        let (lines, tell) = fed();
        // A pipe's reader counts nothing: taking its line leaves the flag down.
        tell.send(Heard::Line("hi".to_owned())).unwrap();
        assert!(matches!(lines.wait(None), Some(Heard::Line(_))));
        assert!(!wait_ends(&lines));
        tell.send(Heard::End).unwrap();
        assert!(matches!(lines.wait(None), Some(Heard::End)));
        assert!(!wait_ends(&lines));
    }
}
