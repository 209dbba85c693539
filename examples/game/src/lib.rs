//! A small game's domain: a guard who sees intruders within range, and a
//! grid distance function. They live in one [`registry`], which the game's
//! own `game` binary (the aido tool with these nodes) and its tests share;
//! `game-nodes.edn` is its model, for designers who use the plain `aido`.

use aido::{
    Registry, Status, Value,
    extend::{Arity, NodeType},
};

/// The built-in node types and functions plus the game's own.
pub fn registry() -> Registry {
    let mut registry = Registry::new();
    // A condition: it finishes in the tick it is visited, so it says so
    // and is ticked as cheaply as the built-in conditions.
    let mut sees = NodeType::new("guard/sees?")
        .one_visit(true)
        .doc("Succeeds when the intruder (at :intruder in the db) is within :range of the guard (at :pos).");
    let range = sees.slot::<i64>("range");
    registry
        .node_type(
            sees.option_doc("range", "How far the guard sees, in grid steps.")
                .tick(move |ctx| {
                    let range = ctx.get(range)?;
                    let at = |key: &str| ctx.db().get(&Value::keyword(key)).and_then(Value::as_int);
                    Ok(match (at("pos"), at("intruder")) {
                        (Some(pos), Some(intruder)) => {
                            Status::from_bool((pos - intruder).abs() <= range)
                        }
                        _ => Status::Failure,
                    })
                }),
        )
        .expect("guard/sees? is not a built-in name");
    registry
        .function("dist", Arity::Exactly(2), |_, args| match args {
            [Value::Int(a), Value::Int(b)] => Ok(Value::Int((a - b).abs())),
            _ => Err("dist takes two integers".to_owned()),
        })
        .expect("dist is not a standard function");
    registry
        .function_doc("dist", "The grid distance between two positions.")
        .expect("dist was just registered");
    registry
}
