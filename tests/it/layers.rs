//! The layering of the library's modules, as ARCHITECTURE.md's `layers`
//! table states it, holds in the code: no module uses one above it or
//! beside it (except within the interpreter's unit).

#![allow(clippy::expect_used, clippy::panic)]

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};

use regex::Regex;

/// The table: module name → (layer, whether its layer is one unit).
/// Layers are numbered from the bottom.
fn layers(architecture: &str) -> HashMap<String, (usize, bool)> {
    let start = architecture
        .find("```layers\n")
        .expect("ARCHITECTURE.md has a ```layers block")
        + "```layers\n".len();
    let end = start
        + architecture[start..]
            .find("```")
            .expect("the layers block is closed");
    let lines: Vec<&str> = architecture[start..end]
        .lines()
        .filter(|l| !l.trim().is_empty())
        .collect();
    let mut table = HashMap::new();
    for (rank, line) in lines.iter().rev().enumerate() {
        let (unit, names) = match line.strip_prefix("unit:") {
            Some(rest) => (true, rest),
            None => (false, *line),
        };
        for name in names.split_whitespace() {
            let old = table.insert(name.to_owned(), (rank, unit));
            assert!(old.is_none(), "`{name}` is in the layers table twice");
        }
    }
    table
}

/// The text with comments, string and character literals blanked out
/// (newlines kept, so line numbers stay right).
fn code_only(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = b.to_vec();
    let mut i = 0;
    let blank = |out: &mut Vec<u8>, from: usize, to: usize| {
        for c in &mut out[from..to] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    };
    while i < b.len() {
        let rest = &b[i..];
        if rest.starts_with(b"//") {
            let end = rest
                .iter()
                .position(|&c| c == b'\n')
                .map_or(b.len(), |n| i + n);
            blank(&mut out, i, end);
            i = end;
        } else if rest.starts_with(b"/*") {
            let (mut depth, mut j) = (1, i + 2);
            while j < b.len() && depth > 0 {
                if b[j..].starts_with(b"/*") {
                    depth += 1;
                    j += 2;
                } else if b[j..].starts_with(b"*/") {
                    depth -= 1;
                    j += 2;
                } else {
                    j += 1;
                }
            }
            blank(&mut out, i, j);
            i = j;
        } else if rest.starts_with(b"r#") || rest.starts_with(b"r\"") {
            let hashes = rest[1..].iter().take_while(|&&c| c == b'#').count();
            if rest.get(1 + hashes) != Some(&b'"') {
                i += 1;
                continue;
            }
            let close: Vec<u8> = std::iter::once(b'"')
                .chain(std::iter::repeat_n(b'#', hashes))
                .collect();
            let body = i + 2 + hashes;
            let end = b[body..]
                .windows(close.len())
                .position(|w| w == close.as_slice())
                .map_or(b.len(), |n| body + n + close.len());
            blank(&mut out, i, end);
            i = end;
        } else if rest[0] == b'"' {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            blank(&mut out, i, (j + 1).min(b.len()));
            i = j + 1;
        } else if rest[0] == b'\'' {
            // A character literal ('x', '\n', '\u{..}'), not a lifetime.
            if rest.get(1) == Some(&b'\\') {
                let end = rest[2..]
                    .iter()
                    .position(|&c| c == b'\'')
                    .map_or(b.len(), |n| i + 2 + n + 1);
                blank(&mut out, i, end);
                i = end;
            } else if let Some(n) = std::str::from_utf8(&rest[1..rest.len().min(6)])
                .ok()
                .or_else(|| std::str::from_utf8(&rest[1..rest.len().min(5)]).ok())
                .and_then(|s| s.chars().next())
                .map(char::len_utf8)
                && rest.get(1 + n) == Some(&b'\'')
            {
                blank(&mut out, i, i + n + 2);
                i += n + 2;
            } else {
                i += 1;
            }
        } else {
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The code with every `#[cfg(test)]` item blanked out.
fn without_tests(code: &str) -> String {
    let mut out = code.as_bytes().to_vec();
    let mut from = 0;
    while let Some(at) = code[from..].find("#[cfg(test)]").map(|n| from + n) {
        let rest = &code[at..];
        let brace = rest.find('{');
        let semi = rest.find(';');
        let end = match (brace, semi) {
            (Some(b), Some(s)) if s < b => at + s + 1,
            (Some(b), _) => {
                let mut depth = 0;
                let mut end = code.len();
                for (k, c) in code[at + b..].char_indices() {
                    match c {
                        '{' => depth += 1,
                        '}' => {
                            depth -= 1;
                            if depth == 0 {
                                end = at + b + k + 1;
                                break;
                            }
                        }
                        _ => {}
                    }
                }
                end
            }
            (None, Some(s)) => at + s + 1,
            (None, None) => code.len(),
        };
        for c in &mut out[at..end] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
        from = end;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).expect("src/ reads") {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The modules `lib.rs` declares, and the module each root re-export
/// (`crate::Registry`, `crate::read_value`) comes from.
fn root(lib: &str) -> (Vec<String>, HashMap<String, String>) {
    let code = code_only(lib);
    let modules = Regex::new(r"(?m)^\s*(?:pub(?:\(crate\))? )?mod ([a-z_]+);")
        .expect("a valid regex")
        .captures_iter(&code)
        .map(|c| c[1].to_owned())
        .collect();
    let mut reexports = HashMap::new();
    let uses = Regex::new(r"(?m)^\s*pub use ([a-z_]+)::(?:\{([^}]*)\}|([A-Za-z_]+));")
        .expect("a valid regex");
    for c in uses.captures_iter(&code) {
        let names = c.get(2).or(c.get(3)).map_or("", |m| m.as_str());
        for name in names.split(',') {
            let name = name.trim().rsplit("::").next().unwrap_or("").trim();
            if !name.is_empty() {
                reexports.insert(name.to_owned(), c[1].to_owned());
            }
        }
    }
    (modules, reexports)
}

/// The first names of the paths a `crate::` (or `aido::`) reference names:
/// one, or several for a group (`crate::{a, b::C}`).
fn first_names(group_or_name: &str) -> Vec<String> {
    match group_or_name.strip_prefix('{') {
        Some(group) => {
            let mut names = Vec::new();
            let mut depth = 0;
            let mut item = String::new();
            for c in group
                .trim_end_matches('}')
                .chars()
                .chain(std::iter::once(','))
            {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        let first = item.trim().split("::").next().unwrap_or("").trim();
                        if !first.is_empty() {
                            names.push(first.to_owned());
                        }
                        item.clear();
                        continue;
                    }
                    _ => {}
                }
                item.push(c);
            }
            names
        }
        None => vec![group_or_name.to_owned()],
    }
}

/// Breaches of the layering in the library's code, as `file:line: text`.
fn breaches(src: &Path, table: &HashMap<String, (usize, bool)>) -> Vec<String> {
    let lib = fs::read_to_string(src.join("lib.rs")).expect("src/lib.rs reads");
    let (modules, reexports) = root(&lib);
    let mut found = Vec::new();
    for m in &modules {
        if !table.contains_key(m) {
            found.push(format!(
                "module `{m}` is not in ARCHITECTURE.md's layers table"
            ));
        }
    }
    let reference =
        Regex::new(r"\b(?:crate|aido)::(\{[^;]*?\}|[A-Za-z_]+)").expect("a valid regex");
    let mut files = Vec::new();
    rust_files(src, &mut files);
    files.sort();
    for file in files {
        let rel = file.strip_prefix(src).expect("under src/");
        let top = rel
            .components()
            .next()
            .and_then(|c| c.as_os_str().to_str())
            .unwrap_or("")
            .trim_end_matches(".rs")
            .to_owned();
        // The root gathers everything; the binary and its allocator sit on top.
        if !modules.contains(&top) {
            continue;
        }
        let Some(&(rank, unit)) = table.get(&top) else {
            continue;
        };
        let text = fs::read_to_string(&file).expect("a source file reads");
        let code = code_only(&text);
        // A file of tests alone (`#![cfg(test)]`) may use any layer, as a
        // `#[cfg(test)]` module inside a file may.
        if code.contains("#![cfg(test)]") {
            continue;
        }
        let code = without_tests(&code);
        for c in reference.captures_iter(&code) {
            let at = c.get(0).map_or(0, |m| m.start());
            let line = code[..at].matches('\n').count() + 1;
            for name in first_names(&c[1]) {
                let target = if modules.contains(&name) {
                    name.clone()
                } else if let Some(m) = reexports.get(&name) {
                    m.clone()
                } else {
                    continue;
                };
                if target == top {
                    continue;
                }
                let Some(&(target_rank, _)) = table.get(&target) else {
                    continue;
                };
                let allowed = target_rank < rank || (target_rank == rank && unit);
                if !allowed {
                    let how = if target_rank == rank {
                        "beside it"
                    } else {
                        "above it"
                    };
                    found.push(format!(
                        "src/{}:{line}: `{top}` uses `{target}` (`{name}`), a layer {how}",
                        rel.display()
                    ));
                }
            }
        }
    }
    found
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn no_module_uses_one_above_or_beside_it() {
    let architecture =
        fs::read_to_string(repo().join("ARCHITECTURE.md")).expect("ARCHITECTURE.md reads");
    let table = layers(&architecture);
    let found = breaches(&repo().join("src"), &table);
    assert!(
        found.is_empty(),
        "the layering in ARCHITECTURE.md is broken:\n{}",
        found.join("\n")
    );
}

/// The check itself finds what it must, and only that.
#[test]
fn the_check_sees_paths_in_code_and_nothing_else() {
    let dir = std::env::temp_dir().join(format!("aido-layers-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(dir.join("low")).expect("a scratch folder");
    fs::write(
        dir.join("lib.rs"),
        "mod low;\nmod high;\nmod side;\npub use high::{Big, make};\n",
    )
    .expect("written");
    fs::write(
        dir.join("low/mod.rs"),
        "// crate::high in a comment\n/// [`crate::high`] in a doc\nconst S: &str = \"crate::high\";\n\
         const C: char = '{';\nuse crate::side::X;\nfn f() -> crate::Big { crate::{make}() }\n\
         #[cfg(test)]\nmod tests { use crate::high; }\n",
    )
    .expect("written");
    fs::write(dir.join("high.rs"), "use crate::{low::Y, side};\n").expect("written");
    fs::write(dir.join("side.rs"), "use crate::low;\n").expect("written");
    fs::write(
        dir.join("low/checks.rs"),
        "//! Tests.\n#![cfg(test)]\nuse crate::high;\n",
    )
    .expect("written");
    fs::write(
        dir.join("low/other.rs"),
        "// #![cfg(test)]\nuse crate::high;\n",
    )
    .expect("written");
    let table = layers("```layers\nhigh\nlow side\n```\n");
    let found = breaches(&dir, &table);
    let _ = fs::remove_dir_all(&dir);
    assert_eq!(
        found,
        vec![
            "src/low/mod.rs:5: `low` uses `side` (`side`), a layer beside it".to_owned(),
            "src/low/mod.rs:6: `low` uses `high` (`Big`), a layer above it".to_owned(),
            "src/low/mod.rs:6: `low` uses `high` (`make`), a layer above it".to_owned(),
            "src/low/other.rs:2: `low` uses `high` (`high`), a layer above it".to_owned(),
            "src/side.rs:1: `side` uses `low` (`low`), a layer beside it".to_owned(),
        ]
    );
    // On one unit's line, neighbours may use each other.
    let unit = layers("```layers\nhigh\nunit: low side\n```\n");
    assert_eq!(unit.get("low"), Some(&(0, true)));
}
