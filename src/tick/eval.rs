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

/// A thread's count before its first call into user code: the one value
/// that counting up makes zero, so that the count's own increment tells
/// the first call on a thread (see `catch_quietly`).
const UNCHECKED: u32 = u32::MAX;

thread_local! {
    /// How many calls into user code this thread is inside (see
    /// `catch_quietly`); [`UNCHECKED`] before the thread's first one.
    static IN_USER_CODE: Cell<u32> = const { Cell::new(UNCHECKED) };
}

/// How many calls into user code this thread is inside.
fn user_code_depth() -> u32 {
    match IN_USER_CODE.with(Cell::get) {
        UNCHECKED => 0,
        n => n,
    }
}

/// Whether the quiet panic hook is installed (see `catch_quietly`).
static QUIET_HOOK: Once = Once::new();

/// The first call into user code on this thread, whose count up made the
/// count zero: installs the quiet panic hook (see `catch_quietly`) if no
/// thread has yet, and counts the call.
#[cold]
#[inline(never)]
fn first_call_on_thread() {
    QUIET_HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if user_code_depth() == 0 {
                previous(info);
            }
        }));
    });
    IN_USER_CODE.with(|n| n.set(1));
}

/// Runs user code (a node type, a function, a hook), catching a panic. A
/// caught panic becomes a tick Error, so it is not also printed: the first
/// call installs a panic hook that stays silent for panics inside this scope
/// and hands every other panic to the hook that was there before. (A hook
/// the host installs later replaces it.) Inlined, so that a node type's
/// tick is one indirect call from the engine.
#[inline(always)]
pub(crate) fn catch_quietly<R>(f: impl FnOnce() -> R) -> std::thread::Result<R> {
    // The count up also tells a thread's first call (the count was
    // `UNCHECKED`), which makes sure the hook is installed: the test of
    // the increment's result, where testing the hook's `Once` in place was
    // a load and a test more on every call.
    let up = IN_USER_CODE.with(|n| {
        let up = n.get().wrapping_add(1);
        n.set(up);
        up
    });
    if up == 0 {
        first_call_on_thread();
    }
    let result = catch_unwind(AssertUnwindSafe(f));
    // Counted up above, so at least one here (a call inside the code
    // counts up and down in between): no test for zero.
    IN_USER_CODE.with(|n| n.set(n.get().wrapping_sub(1)));
    result
}

#[cfg(test)]
mod tests {
    use super::{IN_USER_CODE, QUIET_HOOK, UNCHECKED, catch_quietly, user_code_depth};
    use std::cell::Cell;

    #[test]
    fn user_code_is_guarded_from_the_first_call_on_and_counted_while_it_runs() {
        // The first call installs the quiet hook, and the count the hook
        // reads is one more inside the code, nested calls included, and as
        // before after.
        let before = user_code_depth();
        let inside = catch_quietly(|| {
            let nested = catch_quietly(user_code_depth);
            (user_code_depth(), nested)
        });
        assert!(QUIET_HOOK.is_completed());
        let counts = inside.ok().map(|(outer, nested)| (outer, nested.ok()));
        assert_eq!(counts, Some((before + 1, Some(before + 2))));
        let caught = catch_quietly(|| -> u32 { std::panic::panic_any("caught") });
        assert!(caught.is_err());
        assert_eq!(user_code_depth(), before);
    }

    #[test]
    fn a_threads_first_call_into_user_code_is_counted_as_any_other() {
        // A new thread's count starts unchecked: its first call is told by
        // the count up, makes sure the hook is installed and counts one;
        // the calls after it count from the checked zero.
        let counts = std::thread::spawn(|| {
            let before = (user_code_depth(), IN_USER_CODE.with(Cell::get));
            let first = catch_quietly(user_code_depth).ok();
            let after = IN_USER_CODE.with(Cell::get);
            let second = catch_quietly(|| catch_quietly(user_code_depth).ok()).ok();
            (before, first, after, second, user_code_depth())
        })
        .join()
        .ok();
        assert!(QUIET_HOOK.is_completed());
        assert_eq!(counts, Some(((0, UNCHECKED), Some(1), 0, Some(Some(2)), 0)));
    }
}
