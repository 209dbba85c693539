//! Lowering: a built-in node type is one [`Row`] (name, documentation,
//! arity, options and the function that turns a node's checked options into
//! its typed [`Kind`]), and lowering reports what it finds wrong into a
//! [`Report`] sink, knowing nothing of the compiler around it.

use super::OptionRow;
use crate::diag::{Code, Report};
use crate::extend::{Imp, NodeType};
use crate::source::{FormSpans, Span};
use crate::spec::Arity;
use crate::tree::{KeyPath, Kind, Opt, Preconditions};
use crate::value::{Keyword, Map, Value, kw};

/// A built-in node type's lowering: `None` only when it reported a problem.
pub(crate) type LowerFn = fn(&mut Lowering<'_, '_>) -> Option<Kind>;

/// One built-in node type: everything the compiler needs to know of it.
/// Its behaviour is the tick of the [`Kind`] its lowering builds.
pub(crate) struct Row {
    pub(crate) name: &'static str,
    /// One or two sentences for the reference (`aido nodes`) and models.
    pub(crate) doc: &'static str,
    pub(crate) arity: Arity,
    pub(crate) options: &'static [OptionRow],
    /// Whether option keys beyond `options` are accepted (as `:defer` does).
    pub(crate) open_options: bool,
    pub(crate) lower: LowerFn,
}

impl Row {
    /// A row that accepts only the options it declares.
    pub(crate) fn new(
        name: &'static str,
        doc: &'static str,
        arity: Arity,
        options: &'static [OptionRow],
        lower: LowerFn,
    ) -> Row {
        Row {
            name,
            doc,
            arity,
            options,
            open_options: false,
            lower,
        }
    }

    pub(crate) fn node_type(self) -> NodeType {
        let mut nt = NodeType::new(self.name).doc(self.doc);
        for &(key, ref ty, required) in self.options {
            nt = if required {
                nt.required(key, ty.clone())
            } else {
                nt.option(key, ty.clone())
            };
        }
        nt.arity = self.arity;
        nt.open_options = self.open_options;
        nt.imp = Imp::Builtin(self.lower);
        nt
    }
}

/// What a row's lowering works with: the node's checked options, its child
/// count and span, and the sink for problems.
pub(crate) struct Lowering<'a, 'm> {
    pub(crate) opts: Options<'m>,
    pub(crate) n_children: usize,
    pub(crate) span: Option<Span>,
    pub(crate) report: &'a mut dyn Report,
}

impl Lowering<'_, '_> {
    /// Takes the option `key`; a missing one (already reported if required) is nil.
    pub(crate) fn take(&mut self, key: &str) -> Opt {
        self.opts.take(key)
    }

    /// Takes the option `key` if the node has it.
    pub(crate) fn take_opt(&mut self, key: &str) -> Option<Opt> {
        self.opts.take_opt(key)
    }

    /// Takes the key path `key` (a constant, checked by the compiler).
    pub(crate) fn key(&mut self, key: &str) -> KeyPath {
        key_path(self.opts.take(key))
    }

    /// Takes the flag `key`: true only if given as `true`.
    pub(crate) fn flag(&mut self, key: &str) -> bool {
        matches!(self.opts.take_opt(key), Some(Opt::Const(Value::Bool(true))))
    }

    /// Reports a problem at `span`, or at the node when it is `None`.
    pub(crate) fn error(&mut self, code: Code, message: String, span: Option<Span>) {
        self.report.report(code, message, span.or(self.span));
    }
}

pub(crate) fn key_path(opt: Opt) -> KeyPath {
    // A keyword, nearly every key: it owns nothing, so the option is
    // forgotten rather than dropped through a call.
    if let Opt::Const(Value::Keyword(k)) = &opt {
        let k = *k;
        std::mem::forget(opt);
        return KeyPath::Kw(k, crate::tree::SlotHint::default());
    }
    match opt {
        Opt::Const(v) => KeyPath::from_value(&v),
        _ => KeyPath::One(Value::Nil),
    }
}

/// A node's options, lowered: what the node type's own lowering takes apart.
pub(crate) struct Options<'m> {
    /// The options that lowered, in the map's order until one is taken
    /// (a taken option's place is filled by the last).
    pub(crate) entries: &'m mut Vec<(Keyword, Opt)>,
    pub(crate) pre: Option<Box<Preconditions>>,
    pub(crate) id: Option<(Value, Option<Span>)>,
    /// The options map as written, and its spans: what was given, valid or not.
    pub(crate) map: Option<&'m Map>,
    pub(crate) spans: Option<FormSpans<'m>>,
}

impl<'m> Options<'m> {
    /// Takes the option `key`; a missing one (already reported if required) is nil.
    pub(crate) fn take(&mut self, key: &str) -> Opt {
        let key = kw::option(key);
        match self.entries.iter().position(|(k, _)| *k == key) {
            // The last entry fills its place: no shift of the rest, whose
            // order no lowering reads once it takes options one by one.
            Some(i) => self.entries.swap_remove(i).1,
            None => Opt::Const(Value::Nil),
        }
    }

    /// Whether the node's options map has `key`, valid or not.
    pub(crate) fn given(&self, key: &str) -> bool {
        self.given_at(kw::option(key)).is_some()
    }

    /// Where the node-specific option `key` (not `:id` nor a precondition)
    /// is in the options map, if it is there.
    fn given_at(&self, key: Keyword) -> Option<usize> {
        if key == kw::ID || is_precondition(key) {
            return None;
        }
        // By the key's code: the map's filter of keyword keys answers for
        // an absent key, a small map compares codes, a large one probes
        // its index (no key is made into a value).
        self.map?.keyword_position(key)
    }

    /// The option `key`, if present, without taking it.
    pub(crate) fn peek(&self, key: &str) -> Option<&Opt> {
        let key = kw::option(key);
        self.entries.iter().find(|(k, _)| *k == key).map(|(_, o)| o)
    }

    /// Takes the option `key` if present.
    pub(crate) fn take_opt(&mut self, key: &str) -> Option<Opt> {
        let key = kw::option(key);
        self.entries
            .iter()
            .position(|(k, _)| *k == key)
            .map(|i| self.entries.swap_remove(i).1)
    }

    /// The span of option `key`'s value, if known.
    pub(crate) fn span_of(&self, key: &str) -> Option<Span> {
        let i = self.given_at(kw::option(key))?;
        self.spans?.child(2 * i + 1).map(FormSpans::span)
    }

    /// Takes the node's preconditions, if it has any.
    pub(crate) fn take_preconditions(&mut self) -> Option<Box<Preconditions>> {
        self.pre.take()
    }

    pub(crate) fn explicit_id(&self) -> Option<(&Value, Option<Span>)> {
        self.id.as_ref().map(|(v, s)| (v, *s))
    }

    pub(crate) fn take_custom(&mut self) -> Box<[(Keyword, Opt)]> {
        // The options left, in the order written again (a take moved the
        // last into the taken one's place): each keyword key's position in
        // the map, distinct, already in order unless an option was taken.
        if let Some(map) = self.map {
            self.entries
                .sort_unstable_by_key(|(k, _)| map.keyword_position(*k));
        }
        self.entries.drain(..).collect()
    }
}

/// Whether `key` names a precondition.
pub(crate) fn is_precondition(key: Keyword) -> bool {
    key == kw::SKIP_IF || key == kw::SUCCESS_IF || key == kw::FAILURE_IF
}
