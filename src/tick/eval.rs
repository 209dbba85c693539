//! Resolving options at tick time.

use std::borrow::Cow;
use std::panic::{AssertUnwindSafe, catch_unwind};

use crate::rng::Rng;
use crate::tree::Opt;
use crate::value::{Map, Value};

use super::FnCtx;

/// Resolves `opt` against the db as it is now. Constants and db reads borrow;
/// only function calls produce new values.
pub(crate) fn eval<'a>(opt: &'a Opt, db: &'a Map, rng: &mut Rng) -> Result<Cow<'a, Value>, String> {
    match opt {
        Opt::Const(v) => Ok(Cow::Borrowed(v)),
        Opt::Db(path) => Ok(path.get(db).map_or(Cow::Owned(Value::Nil), Cow::Borrowed)),
        Opt::Call(function, args) => {
            let mut values = Vec::with_capacity(args.len());
            for arg in args.iter() {
                values.push(eval(arg, db, rng)?.into_owned());
            }
            let mut ctx = FnCtx { db, rng };
            let result = catch_unwind(AssertUnwindSafe(|| (function.f)(&mut ctx, &values)));
            if let Some(e) = rng.error.take() {
                return Err(e);
            }
            match result {
                Ok(Ok(v)) => Ok(Cow::Owned(v)),
                Ok(Err(msg)) => Err(format!("function `{}`: {msg}", function.name.as_str())),
                Err(panic) => Err(format!(
                    "function `{}` panicked: {}",
                    function.name.as_str(),
                    panic_message(panic.as_ref())
                )),
            }
        }
    }
}

/// The text of a caught panic's payload.
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "(no message)".to_owned()
    }
}
