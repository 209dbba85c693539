//! Resolving options at tick time.

use std::borrow::Cow;
use std::cell::Cell;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Once;

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
                let value = eval(arg, db, rng)?;
                // Copying a collection or a string into the arguments is work.
                if value.is_heavy() {
                    rng.charge_value(&value, 0)?;
                }
                values.push(value.into_owned());
            }
            let mut ctx = FnCtx { db, rng };
            let result = catch_quietly(|| (function.f)(&mut ctx, &values));
            if let Some(e) = rng.error.take() {
                return Err(e);
            }
            match result {
                Ok(Ok(v)) => {
                    // So is building one (`str` of a string with itself).
                    if v.is_heavy() {
                        rng.charge_value(&v, 0)?;
                    }
                    Ok(Cow::Owned(v))
                }
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

thread_local! {
    /// How many calls into user code this thread is inside (see `catch_quietly`).
    static IN_USER_CODE: Cell<u32> = const { Cell::new(0) };
}

/// Whether the quiet panic hook is installed (see `catch_quietly`).
static QUIET_HOOK: Once = Once::new();

/// Installs the quiet panic hook (see `catch_quietly`), once a process.
#[cold]
#[inline(never)]
fn install_quiet_hook() {
    QUIET_HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if IN_USER_CODE.with(Cell::get) == 0 {
                previous(info);
            }
        }));
    });
}

/// Runs user code (a node type, a function, a hook), catching a panic. A
/// caught panic becomes a tick Error, so it is not also printed: the first
/// call installs a panic hook that stays silent for panics inside this scope
/// and hands every other panic to the hook that was there before. (A hook
/// the host installs later replaces it.) Inlined, so that a node type's
/// tick is one indirect call from the engine.
#[inline(always)]
pub(crate) fn catch_quietly<R>(f: impl FnOnce() -> R) -> std::thread::Result<R> {
    // Once installed, the test is a load and a comparison in place:
    // `Once::call_once` itself was a call on every user call.
    if !QUIET_HOOK.is_completed() {
        install_quiet_hook();
    }
    IN_USER_CODE.with(|n| n.set(n.get().wrapping_add(1)));
    let result = catch_unwind(AssertUnwindSafe(f));
    // Counted up above, so at least one here (a call inside the code
    // counts up and down in between): no test for zero.
    IN_USER_CODE.with(|n| n.set(n.get().wrapping_sub(1)));
    result
}

#[cfg(test)]
mod tests {
    use super::{IN_USER_CODE, QUIET_HOOK, catch_quietly};
    use std::cell::Cell;

    #[test]
    fn user_code_is_guarded_from_the_first_call_on_and_counted_while_it_runs() {
        // The first call installs the quiet hook (the fast path then tests
        // only that it is installed), and the count the hook reads is one
        // more inside the code, nested calls included, and as before after.
        let before = IN_USER_CODE.with(Cell::get);
        let inside = catch_quietly(|| {
            let nested = catch_quietly(|| IN_USER_CODE.with(Cell::get));
            (IN_USER_CODE.with(Cell::get), nested)
        });
        assert!(QUIET_HOOK.is_completed());
        let counts = inside.ok().map(|(outer, nested)| (outer, nested.ok()));
        assert_eq!(counts, Some((before + 1, Some(before + 2))));
        let caught = catch_quietly(|| -> u32 { std::panic::panic_any("caught") });
        assert!(caught.is_err());
        assert_eq!(IN_USER_CODE.with(Cell::get), before);
    }
}
