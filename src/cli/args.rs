//! A small hand-written flag parser: positional arguments and `--flag VALUE`
//! (or `--flag=VALUE`) pairs, in any order, with `--` ending the flags.

use std::ffi::{OsStr, OsString};
use std::path::PathBuf;

use super::Failure;

/// What one subcommand accepts.
pub(crate) struct Spec {
    /// The subcommand's usage line, shown after a command-line mistake.
    pub(crate) usage: &'static str,
    /// The flags that take a value, e.g. `"--ticks"`.
    pub(crate) value_flags: &'static [&'static str],
    /// The flags that take no value, e.g. `"--trace"`.
    pub(crate) switches: &'static [&'static str],
}

/// A parsed command line.
#[derive(Debug, Default)]
pub(crate) struct Parsed {
    /// The arguments that are not flags, in order.
    pub(crate) positional: Vec<OsString>,
    /// Each flag given with its value, in order.
    values: Vec<(&'static str, OsString)>,
    /// Whether `--help` or `-h` was given.
    pub(crate) help: bool,
    /// The switches given.
    switches: Vec<&'static str>,
}

impl Parsed {
    /// Whether the switch `flag` was given.
    pub(crate) fn switch(&self, flag: &str) -> bool {
        self.switches.contains(&flag)
    }

    /// The value given for `flag`, if it was given.
    pub(crate) fn value(&self, flag: &str) -> Option<&OsStr> {
        self.values
            .iter()
            .find(|(f, _)| *f == flag)
            .map(|(_, v)| v.as_os_str())
    }

    /// The one positional argument, TREE, of a command that ticks a tree.
    pub(crate) fn one_tree(&self, command: &str, usage: &'static str) -> Result<PathBuf, Failure> {
        match self.positional.as_slice() {
            [tree] => Ok(PathBuf::from(tree)),
            [] => Err(Failure::usage("no TREE given", usage)),
            [_, extra, ..] => Err(Failure::usage(
                format!(
                    "unexpected argument `{}`: {command} takes one TREE",
                    extra.to_string_lossy()
                ),
                usage,
            )),
        }
    }

    /// The value of `flag` as a positive integer, if given.
    pub(crate) fn positive(&self, flag: &str) -> Result<Option<u64>, Failure> {
        match self.text(flag)? {
            None => Ok(None),
            Some(text) => match text.parse::<u64>() {
                Ok(n) if n > 0 => Ok(Some(n)),
                Err(e) if *e.kind() == std::num::IntErrorKind::PosOverflow => Err(Failure::input(
                    flag,
                    format!("`{text}` is too large (at most {})", u64::MAX),
                )),
                _ => Err(Failure::input(
                    flag,
                    format!("expected a positive integer, got `{text}`"),
                )),
            },
        }
    }

    /// The value of `flag` as an integer, if given.
    pub(crate) fn integer(&self, flag: &str) -> Result<Option<i64>, Failure> {
        match self.text(flag)? {
            None => Ok(None),
            Some(text) => text.parse::<i64>().map(Some).map_err(|e| match e.kind() {
                std::num::IntErrorKind::PosOverflow | std::num::IntErrorKind::NegOverflow => {
                    Failure::input(
                        flag,
                        format!("`{text}` is out of range ({} to {})", i64::MIN, i64::MAX),
                    )
                }
                _ => Failure::input(flag, format!("expected an integer, got `{text}`")),
            }),
        }
    }

    /// The value given for `flag` as text; a value that is not UTF-8 is an error.
    pub(crate) fn text(&self, flag: &str) -> Result<Option<&str>, Failure> {
        match self.value(flag) {
            None => Ok(None),
            Some(v) => v.to_str().map(Some).ok_or_else(|| {
                Failure::input(
                    flag,
                    format!("`{}` is not valid UTF-8", v.to_string_lossy()),
                )
            }),
        }
    }
}

/// Parses a subcommand's arguments, or prints its `usage` for `--help` and
/// gives `None` (the command is then done, with exit status 0).
pub(crate) fn parse_or_help(
    args: &[OsString],
    spec: &Spec,
    usage: &str,
    out: &mut dyn std::io::Write,
) -> Result<Option<Parsed>, Failure> {
    let parsed = parse(args, spec)?;
    if parsed.help {
        writeln!(out, "{usage}")?;
        return Ok(None);
    }
    Ok(Some(parsed))
}

/// Parses `args` against `spec`. Unknown flags, a flag without a value and a
/// flag given twice are errors.
pub(crate) fn parse(args: &[OsString], spec: &Spec) -> Result<Parsed, Failure> {
    let mut parsed = Parsed::default();
    let mut iter = args.iter();
    let mut flags_done = false;
    while let Some(arg) = iter.next() {
        let text = arg.to_str().unwrap_or("");
        if flags_done || !text.starts_with('-') || text == "-" {
            parsed.positional.push(arg.clone());
            continue;
        }
        if text == "--" {
            flags_done = true;
            continue;
        }
        if text == "--help" || text == "-h" {
            parsed.help = true;
            continue;
        }
        let (name, inline) = match text.split_once('=') {
            Some((name, value)) => (name, Some(OsString::from(value))),
            None => (text, None),
        };
        if let Some(&switch) = spec.switches.iter().find(|f| **f == name) {
            if inline.is_some() {
                return Err(Failure::usage(
                    format!("`{switch}` takes no value"),
                    spec.usage,
                ));
            }
            if parsed.switch(switch) {
                return Err(Failure::usage(
                    format!("`{switch}` given more than once"),
                    spec.usage,
                ));
            }
            parsed.switches.push(switch);
            continue;
        }
        let Some(&flag) = spec.value_flags.iter().find(|f| **f == name) else {
            return Err(Failure::usage(format!("unknown flag `{name}`"), spec.usage));
        };
        let value = match inline {
            Some(value) => value,
            // A following flag is not taken as the value: `--db --ticks 3` is a mistake.
            None => match iter.next() {
                Some(next) if !next.to_str().is_some_and(|s| s.starts_with("--")) => next.clone(),
                _ => {
                    return Err(Failure::usage(
                        format!("`{flag}` needs a value"),
                        spec.usage,
                    ));
                }
            },
        };
        if parsed.value(flag).is_some() {
            return Err(Failure::usage(
                format!("`{flag}` given more than once"),
                spec.usage,
            ));
        }
        parsed.values.push((flag, value));
    }
    Ok(parsed)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPEC: Spec = Spec {
        usage: "t [--n N] [--x] ARG",
        value_flags: &["--n"],
        switches: &["--x"],
    };

    #[test]
    fn switches_take_no_value() {
        let p = parse(&args(&["--x", "a"]), &SPEC).unwrap();
        assert!(p.switch("--x"));
        assert_eq!(p.positional, args(&["a"]));
        assert_eq!(
            reason(parse(&args(&["--x=1"]), &SPEC)),
            "`--x` takes no value"
        );
        assert_eq!(
            reason(parse(&args(&["--x", "--x"]), &SPEC)),
            "`--x` given more than once"
        );
    }

    fn args(words: &[&str]) -> Vec<OsString> {
        words.iter().map(OsString::from).collect()
    }

    fn reason(result: Result<Parsed, Failure>) -> String {
        match result {
            Err(Failure::Usage { reason, .. }) => reason,
            other => panic!("expected a usage error, got {other:?}"),
        }
    }

    #[test]
    fn flags_and_positionals_mix_in_any_order() {
        let p = parse(&args(&["a", "--n", "3", "b", "--", "--n"]), &SPEC).unwrap();
        assert_eq!(p.positional, args(&["a", "b", "--n"]));
        assert_eq!(p.text("--n").unwrap(), Some("3"));
        let p = parse(&args(&["--n=-4", "-"]), &SPEC).unwrap();
        assert_eq!(p.text("--n").unwrap(), Some("-4"));
        assert_eq!(p.positional, args(&["-"]));
    }

    #[test]
    fn mistakes_are_reported() {
        assert_eq!(reason(parse(&args(&["--y"]), &SPEC)), "unknown flag `--y`");
        assert_eq!(reason(parse(&args(&["--n"]), &SPEC)), "`--n` needs a value");
        assert_eq!(
            reason(parse(&args(&["--n", "--help"]), &SPEC)),
            "`--n` needs a value"
        );
        assert_eq!(
            reason(parse(&args(&["--n", "1", "--n=2"]), &SPEC)),
            "`--n` given more than once"
        );
    }
}
