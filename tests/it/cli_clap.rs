//! The command line's definitions (clap) through the real binary: "did you
//! mean" for misspelt flags and commands, `--version`, generated help and
//! shell completions. The messages README documents are in tests/it/cli.rs.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::Command;

use crate::common::Run;

fn aido(args: &[&str]) -> Run {
    Run::of(Command::new(env!("CARGO_BIN_EXE_aido")).args(args))
}

#[test]
fn misspelt_flags_and_commands_get_a_suggestion_and_the_usage() {
    let run = aido(&["run", "tree.edn", "--tick", "3"]);
    assert_eq!(run.code, 2);
    assert_eq!(
        run.stderr.lines().take(3).collect::<Vec<_>>(),
        [
            "aido: unknown flag `--tick`",
            "  did you mean `--ticks`?",
            "usage: aido run TREE [--db DB] [--ticks N] [--seed S] [--dt D] [--inputs INPUTS] [--save OUT] [--format edn|json|pretty] [--trace]",
        ]
    );

    let run = aido(&["test", "--acept"]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.starts_with(
            "aido: unknown flag `--acept`\n  did you mean `--accept`?\nusage: aido test"
        ),
        "{}",
        run.stderr
    );

    let run = aido(&["shwo", "tree.edn"]);
    assert_eq!((run.code, run.stdout.as_str()), (2, ""));
    assert!(
        run.stderr
            .starts_with("aido: unknown command `shwo`\n  did you mean `show`?\n"),
        "{}",
        run.stderr
    );

    // Nothing close: no suggestion.
    let run = aido(&["bench", "tree.edn", "--xyzzy"]);
    assert_eq!(
        run.stderr.lines().nth(1),
        Some(
            "usage: aido bench TREE [--db DB] [--ticks N] [--agents M] [--threads T] [--seed S] [--format edn]"
        )
    );
}

#[test]
fn version_and_generated_help() {
    let run = aido(&["--version"]);
    assert_eq!(
        (run.code, run.stdout.as_str()),
        (0, concat!("aido ", env!("CARGO_PKG_VERSION"), "\n"))
    );
    assert_eq!(aido(&["-V"]), run);

    // Every flag of a command is in its help, with its documentation.
    let help = aido(&["help", "run"]).stdout;
    for flag in [
        "--db",
        "--ticks",
        "--seed",
        "--inputs",
        "--save",
        "--format",
        "--trace",
        "--aido-keys",
        "--timeline",
        "--trims",
        "--stubs",
        "--nodes",
        "--reload",
    ] {
        assert!(
            help.contains(&format!("  {flag} ")) || help.contains(&format!("  {flag}\n")),
            "{flag} in {help}"
        );
    }
    // Every command is in the overview.
    let overview = aido(&["--help"]).stdout;
    for command in [
        "check",
        "run",
        "migrate",
        "test",
        "nodes",
        "bench",
        "show",
        "completions",
    ] {
        assert!(
            overview.contains(&format!("\n  {command} ")),
            "{command} in {overview}"
        );
    }
}

#[test]
fn completions_are_generated_for_bash_zsh_and_fish() {
    for (shell, marker) in [
        ("bash", "complete -F"),
        ("zsh", "#compdef aido"),
        ("fish", "complete -c aido"),
    ] {
        let run = aido(&["completions", shell]);
        assert_eq!((run.code, run.stderr.as_str()), (0, ""), "{shell}");
        assert!(run.stdout.contains(marker), "{shell}: {}", run.stdout);
        // The script knows the commands and their flags.
        assert!(run.stdout.contains("migrate"), "{shell}");
        assert!(
            run.stdout.contains("--ticks") || run.stdout.contains("-l ticks"),
            "{shell}"
        );
    }
    // The bash script is valid bash.
    let script = aido(&["completions", "bash"]).stdout;
    let status = Command::new("bash").args(["-n", "-c", &script]).status();
    if let Ok(status) = status {
        assert!(status.success());
    }

    let run = aido(&["completions", "tcsh"]);
    assert_eq!(run.code, 2);
    assert!(run.stderr.starts_with("aido: "), "{}", run.stderr);
    assert!(
        run.stderr.contains("usage: aido completions bash|zsh|fish"),
        "{}",
        run.stderr
    );
}
