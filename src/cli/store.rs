//! The store's commands: `aido store init URL`, `aido send --store URL
//! AGENT INPUT`, `aido agents --store URL [AGENT]`. They need the
//! `postgres` feature; without it each says so in one line.

use std::ffi::OsString;
use std::io::Write;

use super::Failure;
use super::args::{AGENTS_USAGE, AgentsArgs, SEND_USAGE, STORE_USAGE, SendArgs, StoreArgs};

/// The `--store URL` flag, required.
pub(super) fn store_url(store: Option<&OsString>, usage: &'static str) -> Result<String, Failure> {
    match store {
        Some(url) => url
            .to_str()
            .map(str::to_owned)
            .ok_or_else(|| Failure::input("--store", "a URL that is not UTF-8")),
        None => Err(Failure::usage("`--store URL` is required", usage)),
    }
}

/// Positional arguments as text.
fn texts(positional: &[OsString]) -> Result<Vec<&str>, Failure> {
    positional
        .iter()
        .map(|a| {
            a.to_str()
                .ok_or_else(|| Failure::input(a.to_string_lossy(), "an argument that is not UTF-8"))
        })
        .collect()
}

/// `aido store init URL`.
pub(crate) fn store_main(args: &StoreArgs, out: &mut dyn Write) -> Result<i32, Failure> {
    let positional = texts(&args.paths)?;
    let url = match positional.as_slice() {
        ["init", url] => *url,
        ["init"] => return Err(Failure::usage("no URL given", STORE_USAGE)),
        [] => return Err(Failure::usage("no store command given", STORE_USAGE)),
        [other, ..] if *other != "init" => {
            return Err(Failure::usage(
                format!("unknown store command `{other}`"),
                STORE_USAGE,
            ));
        }
        _ => return Err(Failure::usage("too many arguments", STORE_USAGE)),
    };
    backend::init(url, out)
}

/// `aido send --store URL AGENT INPUT`.
pub(crate) fn send_main(args: &SendArgs, out: &mut dyn Write) -> Result<i32, Failure> {
    let url = store_url(args.store.as_ref(), SEND_USAGE)?;
    let positional = texts(&args.paths)?;
    let [agent, input] = positional.as_slice() else {
        return Err(Failure::usage("expected an AGENT and an INPUT", SEND_USAGE));
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
pub(crate) fn agents_main(args: &AgentsArgs, out: &mut dyn Write) -> Result<i32, Failure> {
    let url = store_url(args.store.as_ref(), AGENTS_USAGE)?;
    let positional = texts(&args.paths)?;
    match positional.as_slice() {
        [] => backend::list(&url, None, out),
        [agent] => backend::list(&url, Some(agent), out),
        _ => Err(Failure::usage("expected at most one AGENT", AGENTS_USAGE)),
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
        let init = pg_init(url).map_err(failure)?;
        // The tables of shard-owned agents, with a version of their own.
        aido::store::pg_shard::init(url).map_err(failure)?;
        match init {
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

/// The refusal of every store command (`aido store`, `send`, `agents`,
/// `worker`, `shard`, `chat --store`) in a build without the `postgres`
/// feature.
#[cfg(not(feature = "postgres"))]
pub(crate) fn without_postgres() -> crate::cli::Failure {
    crate::cli::Failure::input(
        "store",
        "this aido was built without the `postgres` feature (cargo build --features postgres)",
    )
}

#[cfg(not(feature = "postgres"))]
mod backend {
    use std::io::Write;

    use super::without_postgres;
    use crate::cli::Failure;

    pub(super) fn init(_url: &str, _out: &mut dyn Write) -> Result<i32, Failure> {
        Err(without_postgres())
    }

    pub(super) fn send(
        _url: &str,
        _agent: &str,
        _input: aido::Value,
        _out: &mut dyn Write,
    ) -> Result<i32, Failure> {
        Err(without_postgres())
    }

    pub(super) fn list(
        _url: &str,
        _agent: Option<&str>,
        _out: &mut dyn Write,
    ) -> Result<i32, Failure> {
        Err(without_postgres())
    }
}
