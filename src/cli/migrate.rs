//! `aido migrate OLD NEW --db SAVE [--save OUT] [--nodes MODEL]`: carry a saved db over to
//! a new version of its tree.

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;

use aido::{Value, migrate::migrate};

use super::Failure;
use super::args::{self, Spec};
use super::load::{compile_tree, name, read_db};
use super::save::{ClosableOut, check_target, save_db};

pub(crate) const USAGE: &str = "\
usage: aido migrate OLD NEW --db SAVE [--save OUT] [--nodes MODEL]

Carries the db in SAVE, last ticked with the tree in OLD, over to the tree in
NEW: every node that is in both (matched by :id, else by place and node type)
keeps its memory and running state under its new id; the state of nodes that
are gone or changed type is dropped; running nodes that are gone are halted.
Prints {:kept [...], :dropped [...], :halted [...]} (a node whose id changed
as [old new]; cancel requests of halted deferred actions as :cancel [...]),
with the migrated db as :db unless --save is given.

options:
  --db SAVE      the saved db (EDN, or JSON if SAVE ends in .json)
  --save OUT     write the migrated db to OUT atomically (JSON if OUT ends in
                 .json, else EDN); OUT may be SAVE
  --nodes MODEL  a node model: the application's node types and functions, for
                 trees that use them

exit status: 0 migrated, 1 a tree has compile errors, 2 bad arguments, an
unreadable file, or a SAVE that was last ticked with another tree than OLD";

const SPEC: Spec = Spec {
    usage: "aido migrate OLD NEW --db SAVE [--save OUT] [--nodes MODEL]",
    value_flags: &["--db", "--save", "--nodes"],
    switches: &[],
};

pub(crate) fn main(args: &[OsString], out: &mut dyn Write) -> Result<i32, Failure> {
    let Some(parsed) = args::parse_or_help(args, &SPEC, USAGE, out)? else {
        return Ok(0);
    };
    let [old, new] = parsed.positional.as_slice() else {
        return Err(Failure::usage(
            "expected two tree files, OLD and NEW",
            SPEC.usage,
        ));
    };
    let Some(save) = parsed.value("--db").map(PathBuf::from) else {
        return Err(Failure::usage("`--db SAVE` is required", SPEC.usage));
    };
    let (old, new) = (PathBuf::from(old), PathBuf::from(new));
    let model = parsed.value("--nodes");
    super::use_model(model)?;
    let old_tree = compile_tree(&old)?;
    let new_tree = compile_tree(&new)?;
    let db = read_db(&save)?;
    let recorded = db.get(&Value::keyword("aido/tree"));
    if let Some(fingerprint) = recorded
        && *fingerprint != Value::Int(old_tree.fingerprint())
    {
        let why = if *fingerprint == Value::Int(new_tree.fingerprint()) {
            format!("it was last ticked with {} already", name(&new))
        } else {
            format!("it was last ticked with another tree than {}", name(&old))
        };
        return Err(Failure::input(name(&save), why));
    }
    let save_to = parsed.value("--save").map(PathBuf::from);
    if let Some(path) = &save_to {
        // Saving over SAVE itself is the usual use; over a tree, a mistake.
        let mut inputs = vec![old.as_path(), new.as_path()];
        inputs.extend(model.map(std::path::Path::new));
        check_target(path, &inputs)?;
    }
    let mut out = ClosableOut::new(out, save_to.is_some());
    let (db, report) = migrate(db, &old_tree, &new_tree);
    let mut line = report.to_value();
    if let Some(map) = line.as_map_mut() {
        if !report.cancels.is_empty() {
            let cancels = report
                .cancels
                .iter()
                .map(aido::tick::Request::to_value)
                .collect();
            map.insert(Value::keyword("cancel"), Value::Vector(cancels));
        }
        if parsed.value("--save").is_none() {
            map.insert(Value::keyword("db"), db.clone());
        }
    }
    writeln!(out, "{line}")?;
    if let Some(path) = save_to {
        save_db(&path, &db)?;
    }
    Ok(0)
}
