//! `aido migrate OLD NEW --db SAVE [--save OUT] [--nodes MODEL]`: carry a saved db over to
//! a new version of its tree.

use std::io::Write;
use std::path::PathBuf;

use aido::{Value, migrate::migrate};

use super::Failure;
use super::args::{MIGRATE_USAGE, MigrateArgs};
use super::load::{compile_tree, name, read_db};
use super::save::{ClosableOut, check_target, save_db};

pub(crate) fn main(args: &MigrateArgs, out: &mut dyn Write) -> Result<i32, Failure> {
    let [old, new] = args.paths.as_slice() else {
        return Err(Failure::usage(
            "expected two tree files, OLD and NEW",
            MIGRATE_USAGE,
        ));
    };
    let Some(save) = args.db.as_ref().map(PathBuf::from) else {
        return Err(Failure::usage("`--db SAVE` is required", MIGRATE_USAGE));
    };
    let (old, new) = (PathBuf::from(old), PathBuf::from(new));
    let model = args.nodes.as_deref();
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
    // A malformed running set cannot be carried over: say so rather than
    // drop it (the tick would end in Error on it too).
    if let Some(running) = db.get(&Value::keyword("aido/running"))
        && running.as_seq().is_none()
    {
        return Err(Failure::input(
            name(&save),
            format!(
                "`:aido/running` must be a vector of node ids, found {}; the save cannot be carried over",
                running.type_with_article()
            ),
        ));
    }
    let save_to = args.save.as_ref().map(PathBuf::from);
    if let Some(path) = &save_to {
        // Saving over SAVE itself is the usual use; over a tree, a mistake.
        let mut inputs = vec![old.as_path(), new.as_path()];
        inputs.extend(model.map(std::path::Path::new));
        check_target(path, &inputs)?;
    }
    let mut out = ClosableOut::new(out, save_to.is_some());
    let (db, report) = migrate(db, &old_tree, &new_tree);
    let mut line = report.to_value();
    if let Some(map) = line.as_map_mut()
        && args.save.is_none()
    {
        map.insert(Value::keyword("db"), db.clone());
    }
    writeln!(out, "{line}")?;
    if let Some(path) = save_to {
        save_db(&path, &db)?;
    }
    Ok(0)
}
