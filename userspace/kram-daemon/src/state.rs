//! The state file: the grants of the table, rewritten (atomically) whenever they change, so
//! that a restarted daemon (`Restart=on-failure`) does not lend out chunks a borrower still
//! uses. It lives in `/run` (tmpfs): a reboot of the lender starts from an empty table.
//!
//! ```text
//! # kram-daemon state, rewritten on every change
//! node 1 chunks 64
//! lent node 0 instance 0 first 0 chunks 32
//! offered node 2 instance 1 first 32 chunks 16
//! ```

use crate::table::{Grant, GrantKind, Table};
use std::fmt::Write;

/// A parsed state file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Saved {
    pub node: u32,
    pub chunks: u32,
    pub grants: Vec<(Grant, GrantKind)>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StateError {
    #[error("line {0}: {1}")]
    Syntax(usize, String),
    #[error("no 'node N chunks N' line")]
    NoHeader,
}

/// The state file text for `table`.
pub fn render(table: &Table) -> String {
    let mut s = String::from("# kram-daemon state, rewritten on every change\n");
    let _ = writeln!(s, "node {} chunks {}", table.node(), table.len());
    for (g, kind) in table.grants() {
        let kind = match kind {
            GrantKind::Offered => "offered",
            GrantKind::Lent => "lent",
        };
        let _ = writeln!(
            s,
            "{kind} node {} instance {} first {} chunks {}",
            g.node, g.instance, g.first, g.chunks
        );
    }
    s
}

/// Parses a state file (ranges are checked later, by `Table::restore`).
pub fn parse(text: &str) -> Result<Saved, StateError> {
    let mut header = None;
    let mut grants = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        let bad = || StateError::Syntax(i + 1, line.to_string());
        let num = |w: &str| w.parse::<u32>().map_err(|_| bad());
        match words.as_slice() {
            ["node", n, "chunks", c] if header.is_none() => header = Some((num(n)?, num(c)?)),
            [kind @ ("lent" | "offered"), "node", n, "instance", i, "first", f, "chunks", c] => {
                let small = |w: &str| -> Result<u8, StateError> {
                    u8::try_from(num(w)?).map_err(|_| bad())
                };
                grants.push((
                    Grant {
                        node: small(n)?,
                        instance: small(i)?,
                        first: num(f)?,
                        chunks: num(c)?,
                    },
                    if *kind == "lent" {
                        GrantKind::Lent
                    } else {
                        GrantKind::Offered
                    },
                ));
            }
            _ => return Err(bad()),
        }
    }
    let (node, chunks) = header.ok_or(StateError::NoHeader)?;
    Ok(Saved {
        node,
        chunks,
        grants,
    })
}
