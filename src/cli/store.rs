//! The store's commands: `aido store init URL`, `aido send --store URL
//! AGENT INPUT`, `aido agents --store URL [AGENT]`. They need the
//! `postgres` feature; without it each says so in one line.

use std::ffi::OsString;
use std::io::Write;

use super::Failure;
use super::args::{self, Spec};

pub(crate) const STORE_USAGE: &str = "\
usage: aido store init URL

Creates aido's tables (the schema `aido`: agents, inbox, outbox) in the
PostgreSQL database at URL (postgres://user:password@host:port/db, or
`host=... user=... dbname=...`), or checks that they are there at this
version. A schema of another version is an error and is left as it is.

exit status: 0 created or already current, 2 bad arguments, a bad URL, a
server that cannot be reached, or a schema of another version";

pub(crate) const SEND_USAGE: &str = "\
usage: aido send --store URL AGENT INPUT

Appends INPUT, an EDN map such as '{:input \"hi\"}', to the inbox of AGENT
in the store at URL. A worker merges it into the agent's db before a tick,
in the order inputs were sent.

exit status: 0 sent, 2 bad arguments, an INPUT that is not an EDN map, or a
store that cannot be used";

pub(crate) const AGENTS_USAGE: &str = "\
usage: aido agents --store URL [AGENT]

Without AGENT, lists the agents in the store at URL, one a line: key,
version, tree fingerprint, next wake. With AGENT, prints it as one EDN map:
{:agent, :version, :tree, :wake, :db, :inbox [...], :outbox [...]}.

exit status: 0 listed, 2 bad arguments, an unknown AGENT, or a store that
cannot be used";

const STORE_SPEC: Spec = Spec {
    usage: "aido store init URL",
    value_flags: &[],
    switches: &[],
};

const SEND_SPEC: Spec = Spec {
    usage: "aido send --store URL AGENT INPUT",
    value_flags: &["--store"],
    switches: &[],
};

const AGENTS_SPEC: Spec = Spec {
    usage: "aido agents --store URL [AGENT]",
    value_flags: &["--store"],
    switches: &[],
};

/// The `--store URL` flag, required.
fn store_url(parsed: &args::Parsed, usage: &'static str) -> Result<String, Failure> {
    match parsed.text("--store")? {
        Some(url) => Ok(url.to_owned()),
        None => Err(Failure::usage("`--store URL` is required", usage)),
    }
}

/// Positional arguments as text.
fn texts(parsed: &args::Parsed) -> Result<Vec<&str>, Failure> {
    parsed
        .positional
        .iter()
        .map(|a| {
            a.to_str()
                .ok_or_else(|| Failure::input(a.to_string_lossy(), "an argument that is not UTF-8"))
        })
        .collect()
}

/// `aido store init URL`.
pub(crate) fn store_main(args: &[OsString], out: &mut dyn Write) -> Result<i32, Failure> {
    let Some(parsed) = args::parse_or_help(args, &STORE_SPEC, STORE_USAGE, out)? else {
        return Ok(0);
    };
    let positional = texts(&parsed)?;
    let url = match positional.as_slice() {
        ["init", url] => *url,
        ["init"] => return Err(Failure::usage("no URL given", STORE_SPEC.usage)),
        [] => return Err(Failure::usage("no store command given", STORE_SPEC.usage)),
        [other, ..] if *other != "init" => {
            return Err(Failure::usage(
                format!("unknown store command `{other}`"),
                STORE_SPEC.usage,
            ));
        }
        _ => return Err(Failure::usage("too many arguments", STORE_SPEC.usage)),
    };
    backend::init(url, out)
}

/// `aido send --store URL AGENT INPUT`.
pub(crate) fn send_main(args: &[OsString], out: &mut dyn Write) -> Result<i32, Failure> {
    let Some(parsed) = args::parse_or_help(args, &SEND_SPEC, SEND_USAGE, out)? else {
        return Ok(0);
    };
    let url = store_url(&parsed, SEND_SPEC.usage)?;
    let positional = texts(&parsed)?;
    let [agent, input] = positional.as_slice() else {
        return Err(Failure::usage(
            "expected an AGENT and an INPUT",
            SEND_SPEC.usage,
        ));
    };
    let input = aido::read_value(input).map_err(|e| Failure::input("INPUT", e.to_string()))?;
    if !matches!(input, aido::Value::Map(_)) {
        return Err(Failure::input(
            "INPUT",
            format!(
                "an input is an EDN map, such as {{:input \"hi\"}}, not {}",
                input.type_with_article()
            ),
        ));
    }
    backend::send(&url, agent, input, out)
}

/// `aido agents --store URL [AGENT]`.
pub(crate) fn agents_main(args: &[OsString], out: &mut dyn Write) -> Result<i32, Failure> {
    let Some(parsed) = args::parse_or_help(args, &AGENTS_SPEC, AGENTS_USAGE, out)? else {
        return Ok(0);
    };
    let url = store_url(&parsed, AGENTS_SPEC.usage)?;
    let positional = texts(&parsed)?;
    match positional.as_slice() {
        [] => backend::list(&url, None, out),
        [agent] => backend::list(&url, Some(agent), out),
        _ => Err(Failure::usage(
            "expected at most one AGENT",
            AGENTS_SPEC.usage,
        )),
    }
}

#[cfg(feature = "postgres")]
mod backend {
    use std::io::Write;

    use aido::Value;
    use aido::store::postgres::{Init, PgStore, init as pg_init};
    use aido::store::{InboxItem, Store, StoreError};

    use crate::cli::Failure;

    fn failure(e: StoreError) -> Failure {
        Failure::input("store", e.to_string())
    }

    pub(super) fn init(url: &str, out: &mut dyn Write) -> Result<i32, Failure> {
        match pg_init(url).map_err(failure)? {
            Init::Created => writeln!(
                out,
                "created the aido tables, schema version {}",
                aido::store::postgres::SCHEMA_VERSION
            )?,
            Init::AlreadyCurrent => writeln!(
                out,
                "the aido tables are there already, schema version {}",
                aido::store::postgres::SCHEMA_VERSION
            )?,
        }
        Ok(0)
    }

    pub(super) fn send(
        url: &str,
        agent: &str,
        input: Value,
        out: &mut dyn Write,
    ) -> Result<i32, Failure> {
        let mut store = PgStore::open(url).map_err(failure)?;
        let seq = store
            .append(agent, InboxItem::Input(input))
            .map_err(failure)?;
        writeln!(out, "sent to {agent:?} (inbox entry {seq})")?;
        Ok(0)
    }

    pub(super) fn list(
        url: &str,
        agent: Option<&str>,
        out: &mut dyn Write,
    ) -> Result<i32, Failure> {
        let mut store = PgStore::open(url).map_err(failure)?;
        let Some(agent) = agent else {
            for a in store.agents().map_err(failure)? {
                writeln!(
                    out,
                    "{:?} version {} tree {} wake {}",
                    a.key,
                    a.version,
                    a.tree,
                    a.wake.to_value()
                )?;
            }
            return Ok(0);
        };
        let loaded = store.load(agent).map_err(failure)?;
        let inbox = store.inbox(agent).map_err(failure)?;
        let outbox = store.outbox(agent).map_err(failure)?;
        if loaded.is_none() && inbox.is_empty() {
            return Err(Failure::input(
                format!("agent {agent:?}"),
                "no such agent in the store",
            ));
        }
        let kw = Value::keyword;
        let inbox = inbox
            .into_iter()
            .map(|e| match e.item {
                InboxItem::Input(input) => {
                    Value::map_from([(kw("seq"), Value::Int(e.seq)), (kw("input"), input)])
                }
                InboxItem::Completion { request, value } => Value::map_from([
                    (kw("seq"), Value::Int(e.seq)),
                    (kw("request"), Value::Int(request)),
                    (kw("completion"), value),
                ]),
            })
            .collect();
        let outbox = outbox
            .into_iter()
            .map(|e| {
                Value::map_from([
                    (kw("request"), Value::Int(e.request)),
                    (kw("kind"), kw(e.kind.as_str())),
                    (kw("value"), e.value),
                ])
            })
            .collect();
        let (version, tree, wake, db) = match loaded {
            Some(l) => (
                Value::Int(i64::try_from(l.version).unwrap_or(i64::MAX)),
                Value::Int(l.tree),
                l.wake.to_value(),
                l.db,
            ),
            None => (Value::Int(0), Value::Nil, Value::Nil, Value::Nil),
        };
        let shown = Value::map_from([
            (kw("agent"), Value::string(agent)),
            (kw("version"), version),
            (kw("tree"), tree),
            (kw("wake"), wake),
            (kw("db"), db),
            (kw("inbox"), Value::Vector(inbox)),
            (kw("outbox"), Value::Vector(outbox)),
        ]);
        writeln!(out, "{shown}")?;
        Ok(0)
    }
}

#[cfg(not(feature = "postgres"))]
mod backend {
    use std::io::Write;

    use crate::cli::Failure;

    fn unavailable() -> Failure {
        Failure::input(
            "store",
            "this aido was built without the `postgres` feature (cargo build --features postgres)",
        )
    }

    pub(super) fn init(_url: &str, _out: &mut dyn Write) -> Result<i32, Failure> {
        Err(unavailable())
    }

    pub(super) fn send(
        _url: &str,
        _agent: &str,
        _input: aido::Value,
        _out: &mut dyn Write,
    ) -> Result<i32, Failure> {
        Err(unavailable())
    }

    pub(super) fn list(
        _url: &str,
        _agent: Option<&str>,
        _out: &mut dyn Write,
    ) -> Result<i32, Failure> {
        Err(unavailable())
    }
}
