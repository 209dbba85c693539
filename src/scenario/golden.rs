//! Comparing a run's text timeline with a golden one: where they first part.

use std::fmt;

/// How a timeline differs from its golden copy: from the first tick that
/// differs, naming that tick, the first node and the first db key whose
/// lines differ in it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct GoldenDiff {
    /// The first tick that differs (the tick's number as the timelines
    /// write it; 0 if one timeline is empty).
    pub tick: u64,
    /// The first node line that differs in that tick, as `type id`.
    pub node: Option<String>,
    /// The first db key whose change differs in that tick.
    pub key: Option<String>,
    /// That tick's lines: `-` golden only, `+` this run only, ` ` both.
    pub lines: Vec<String>,
    /// How many ticks after it differ too.
    pub later: usize,
}

impl fmt::Display for GoldenDiff {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the timeline differs from the golden file at tick {}",
            self.tick
        )?;
        let mut what = Vec::new();
        if let Some(node) = &self.node {
            what.push(format!("node {node}"));
        }
        if let Some(key) = &self.key {
            what.push(format!("db key {key}"));
        }
        if !what.is_empty() {
            write!(f, " ({})", what.join(", "))?;
        }
        writeln!(f, "; - golden, + this run:")?;
        for line in &self.lines {
            writeln!(f, "{line}")?;
        }
        if self.later > 0 {
            writeln!(
                f,
                "({} later tick{} differ{} too)",
                self.later,
                if self.later == 1 { "" } else { "s" },
                if self.later == 1 { "s" } else { "" }
            )?;
        }
        Ok(())
    }
}

/// A timeline cut into its tick blocks (each starts with `tick N:`).
fn blocks(text: &str) -> Vec<Vec<&str>> {
    let mut out: Vec<Vec<&str>> = Vec::new();
    for line in text.lines() {
        if line.starts_with("tick ") || out.is_empty() {
            out.push(Vec::new());
        }
        if let Some(block) = out.last_mut()
            && !line.is_empty()
        {
            block.push(line);
        }
    }
    out
}

fn tick_number(block: &[&str]) -> Option<u64> {
    let first = block.first()?;
    let rest = first.strip_prefix("tick ")?;
    rest.split(':').next()?.trim().parse().ok()
}

/// `None` if `actual` equals `golden`, else where and how they differ.
pub fn golden_diff(golden: &str, actual: &str) -> Option<GoldenDiff> {
    if golden == actual {
        return None;
    }
    let expected = blocks(golden);
    let got = blocks(actual);
    let n = expected.len().max(got.len());
    let empty: Vec<&str> = Vec::new();
    let first = (0..n).find(|&i| expected.get(i) != got.get(i))?;
    let e = expected.get(first).unwrap_or(&empty);
    let a = got.get(first).unwrap_or(&empty);
    let later = (first + 1..n)
        .filter(|&i| expected.get(i) != got.get(i))
        .count();
    let lines = line_diff(e, a);
    let changed = lines
        .iter()
        .filter(|l| !l.starts_with(' '))
        .map(|l| &l[1..]);
    let mut node = None;
    let mut key = None;
    for line in changed {
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        let words: Vec<&str> = trimmed.split_whitespace().collect();
        if indent >= 4 && node.is_none() && words.len() >= 2 {
            node = Some(format!("{} {}", words[0], words[1]));
        } else if indent == 2
            && key.is_none()
            && matches!(words.first(), Some(&("+" | "~" | "-")))
            && let Some(k) = words.get(1)
        {
            key = Some((*k).to_owned());
        }
    }
    Some(GoldenDiff {
        tick: tick_number(a).or_else(|| tick_number(e)).unwrap_or(0),
        node,
        key,
        lines,
        later,
    })
}

/// A line diff of two short blocks (longest common subsequence).
fn line_diff(old: &[&str], new: &[&str]) -> Vec<String> {
    let (n, m) = (old.len(), new.len());
    let mut lcs = vec![vec![0u32; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i][j] = if old[i] == new[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let (mut i, mut j) = (0, 0);
    let mut out = Vec::new();
    while i < n || j < m {
        if i < n && j < m && old[i] == new[j] {
            out.push(format!(" {}", old[i]));
            i += 1;
            j += 1;
        } else if i < n && (j == m || lcs[i + 1][j] >= lcs[i][j + 1]) {
            out.push(format!("-{}", old[i]));
            i += 1;
        } else {
            out.push(format!("+{}", new[j]));
            j += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_the_first_tick_node_and_key_that_differ() {
        let golden = "tick 1: success\n  + :a 1\n\ntick 2: running\n  + :b 2\n  nodes:\n    :selector \"0\" running\n      :x? :look failure\n";
        let actual = "tick 1: success\n  + :a 1\n\ntick 2: running\n  + :b 3\n  nodes:\n    :selector \"0\" running\n      :x? :look success\n";
        let diff = golden_diff(golden, actual).unwrap();
        assert_eq!(diff.tick, 2);
        assert_eq!(diff.node.as_deref(), Some(":x? :look"));
        assert_eq!(diff.key.as_deref(), Some(":b"));
        assert_eq!(diff.later, 0);
        assert!(golden_diff(golden, golden).is_none());
    }
}
