//! Chat-shaped scenarios: a conversation of turns, each a line of input
//! and the replies expected, run turn by turn on the session loop
//! ([`crate::session::Session::turn`]), as `aido chat` runs them.
//!
//! ```clojure
//! {:tree "bot.edn" :seed 1
//!  :conversation [["hi" #{"Hello!" "Hi there!"}]          ; a set: one of
//!                 ["what's the time?" {:handler :svc/time :answer "12:00"} "It is 12:00."]
//!                 {:db {:topic :time}}                     ; the db becomes this map
//!                 ["stop" nil]]}                            ; nil: no reply
//! ```

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use crate::handler::Completion;
use crate::session::{Handlers, TurnOptions, Wake};
use crate::tick::{Request, Status};
use crate::value::{Keyword, Map, Value};

/// One reply expected: this value, or one of a set.
#[derive(Debug, Clone, PartialEq)]
pub enum ExpectedReply {
    /// Exactly this value.
    Exact(Value),
    /// Any one of these values (written as a set).
    OneOf(Vec<Value>),
}

impl ExpectedReply {
    /// Whether `reply` is what was expected.
    pub fn matches(&self, reply: &Value) -> bool {
        match self {
            ExpectedReply::Exact(value) => value == reply,
            ExpectedReply::OneOf(values) => values.contains(reply),
        }
    }

    /// The expectation as written: the value, or the set.
    pub fn to_value(&self) -> Value {
        match self {
            ExpectedReply::Exact(value) => value.clone(),
            ExpectedReply::OneOf(values) => Value::Set(Box::new(values.iter().cloned().collect())),
        }
    }
}

/// A deferred action's answer, given in the turn it came in
/// (`{:handler :svc/time :answer "12:00"}`, with `:status :failure` for a
/// failed one): the next launch of that action is answered with it, so
/// the scenario needs no handler program.
#[derive(Debug, Clone, PartialEq)]
pub struct HandlerAnswer {
    /// The action's name (a launch's [`Request::action`]).
    pub action: Keyword,
    /// The completion's `:result` (`None`: no `:result`, as from a
    /// program that printed nothing).
    pub answer: Option<Value>,
    /// Success (the default) or Failure.
    pub status: Status,
}

impl HandlerAnswer {
    /// `{:handler :name :answer x}`, with `:status :failure` for a failure.
    pub fn to_value(&self) -> Value {
        let mut map = Map::default();
        map.insert(Value::keyword("handler"), Value::Keyword(self.action));
        if let Some(answer) = &self.answer {
            map.insert(Value::keyword("answer"), answer.clone());
        }
        if self.status != Status::Success {
            map.insert(Value::keyword("status"), self.status.to_value());
        }
        Value::Map(Box::new(map))
    }
}

/// One step of a conversation.
#[derive(Debug, Clone, PartialEq)]
pub enum ConversationStep {
    /// A line of input and what must come of it.
    Turn {
        /// The line (empty for a turn no line started).
        line: String,
        /// `Some`: a turn no line started ([`crate::session::Session::wake`]),
        /// written `[:aido/idle reply...]` or `[:aido/answer {:handler ..} reply...]`.
        wake: Option<Wake>,
        /// The answers the turn's deferred actions get.
        answers: Vec<HandlerAnswer>,
        /// The replies expected, in order (`Some(vec![])`: none, written
        /// `nil`); `None`: not checked.
        replies: Option<Vec<ExpectedReply>>,
    },
    /// The db becomes this map (what `:undo`, `:reset`, `:load`, `:seed`
    /// and `:inject` in a chat did): `{:db {...}}`.
    Db(Value),
}

/// A conversation: its steps and where the turns put their lines.
#[derive(Debug, Clone, PartialEq)]
pub struct Conversation {
    /// The steps, in order.
    pub steps: Vec<ConversationStep>,
    /// The input and reply keys and the most ticks a turn.
    pub options: TurnOptions,
}

/// One turn whose replies were not the ones expected.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnMismatch {
    /// The turn, from 1.
    pub turn: usize,
    /// Its line.
    pub line: String,
    /// What was expected, as written.
    pub expected: Vec<Value>,
    /// The replies made.
    pub actual: Vec<Value>,
    /// The turn's ticks: status and db changes, as the text timeline shows them.
    pub changes: String,
}

impl fmt::Display for TurnMismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let list = |values: &[Value]| match values {
            [] => "no reply".to_owned(),
            _ => values
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(" "),
        };
        write!(
            f,
            "turn {} {}: expected {}, got {}",
            self.turn,
            Value::string(&self.line),
            list(&self.expected),
            list(&self.actual)
        )?;
        if !self.changes.is_empty() {
            write!(f, "\n{}", self.changes.trim_end())?;
        }
        Ok(())
    }
}

/// Whether `replies` are what `expected` asks for.
pub fn replies_match(expected: &[ExpectedReply], replies: &[Value]) -> bool {
    expected.len() == replies.len() && expected.iter().zip(replies).all(|(e, r)| e.matches(r))
}

/// The answers a conversation scenario gives its deferred actions: each
/// launch of an action takes the first answer not yet taken for that
/// action, and the completion is handed back before the next tick.
#[derive(Debug, Clone, Default)]
pub(crate) struct ScriptedAnswers(Arc<Mutex<Script>>);

#[derive(Debug, Default)]
struct Script {
    /// Answers given, not yet taken by a launch.
    waiting: Vec<HandlerAnswer>,
    /// Completions ready for the next tick.
    ready: Vec<Completion>,
    /// Launches no answer was given for yet, in order.
    in_flight: Vec<Request>,
}

impl ScriptedAnswers {
    /// Adds a turn's answers: one for an action launched earlier and still
    /// unanswered answers that launch (an answer that came between lines);
    /// the others wait for the next launch of their action.
    pub(crate) fn give(&self, answers: &[HandlerAnswer]) {
        let mut script = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        for answer in answers {
            match script
                .in_flight
                .iter()
                .position(|r| r.action == answer.action)
            {
                Some(i) => {
                    let request = script.in_flight.remove(i);
                    let done = Completion::new(&request, answer.status, answer.answer.clone());
                    script.ready.push(done);
                }
                None => script.waiting.push(answer.clone()),
            }
        }
    }
}

impl Handlers for ScriptedAnswers {
    fn launch(&mut self, request: &Request) {
        let mut script = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(i) = script
            .waiting
            .iter()
            .position(|a| a.action == request.action)
        {
            let answer = script.waiting.remove(i);
            script
                .ready
                .push(Completion::new(request, answer.status, answer.answer));
        } else {
            script.in_flight.push(request.clone());
        }
    }

    fn cancel(&mut self, request: &Request) {
        let mut script = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        script.in_flight.retain(|r| r.request != request.request);
    }

    fn completions(&mut self) -> Vec<Completion> {
        let mut script = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        std::mem::take(&mut script.ready)
    }

    fn busy(&self) -> bool {
        false
    }
}

/// The scenario `text` with each turn's replies written as `replies` (one
/// list a turn, in order) where what is written does not match them: the
/// other turns, the handler answers, the comments and the layout are kept.
/// `None` if the text has no conversation or nothing to change.
pub fn accept_replies(text: &str, replies: &[Vec<Value>]) -> Option<String> {
    let (value, spans) = crate::read::read_text(text).ok()?;
    let index = value
        .as_map()?
        .get_index_of(&Value::keyword("conversation"))?;
    let at = [2 * index + 1];
    let steps = value
        .as_map()?
        .get(&Value::keyword("conversation"))?
        .as_seq()?;
    let mut edits: Vec<(usize, usize, String)> = Vec::new();
    let turns = steps.iter().enumerate().filter_map(|(i, s)| match s {
        Value::Vector(items) => Some((i, items)),
        _ => None,
    });
    for ((i, items), actual) in turns.zip(replies) {
        let written: Vec<usize> = (1..items.len())
            .filter(|&j| !matches!(items[j], Value::Map(_)))
            .collect();
        let expected: Vec<ExpectedReply> = written
            .iter()
            .filter_map(|&j| match &items[j] {
                Value::Nil => None,
                Value::Set(set) => Some(ExpectedReply::OneOf(set.iter().cloned().collect())),
                other => Some(ExpectedReply::Exact(other.clone())),
            })
            .collect();
        if !written.is_empty() && replies_match(&expected, actual) {
            continue;
        }
        let new = match actual.as_slice() {
            [] => "nil".to_owned(),
            _ => actual
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(" "),
        };
        let span = |j: usize| spans.span_at(&[at[0], i, j]);
        match written.split_first() {
            Some((&first, rest)) => {
                let first = span(first)?;
                edits.push((first.start as usize, first.end as usize, new));
                for &j in rest {
                    let s = span(j)?;
                    edits.push((s.start as usize, s.end as usize, String::new()));
                }
            }
            None => {
                let last = span(items.len() - 1)?;
                edits.push((last.end as usize, last.end as usize, format!(" {new}")));
            }
        }
    }
    if edits.is_empty() {
        return None;
    }
    edits.sort_by_key(|e| std::cmp::Reverse(e.0));
    let mut out = text.to_owned();
    for (start, end, new) in edits {
        out.get(start..end)?;
        out.replace_range(start..end, &new);
    }
    Some(out)
}
