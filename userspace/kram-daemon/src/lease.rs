//! The lease record in this node's partition (`unimem_wire::lease_record`) as the daemon uses
//! it: what the table's lent grants look like as a record, and what a record found at start
//! means (docs/KRAM-DAEMON.md, "Start modes"). No I/O: the daemon copies the record out of
//! (and into) its mapping of `/dev/eusrvmem`.

use crate::table::{Grant, GrantKind, Table};
use std::fmt;
use std::time::Instant;
use unimem_wire::lease_record::{self, Decoded, RecordedGrant, MAX_GRANTS};

/// How the daemon started: where it learnt what it had lent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StartMode {
    /// No state file, and the partition's record is all zero: nothing was ever lent here.
    Fresh,
    /// No state file; restored `grants` lent ranges from the record of this generation.
    Record { generation: u64, grants: usize },
    /// Restored `grants` offered / lent ranges from the state file.
    StateFile { grants: usize },
    /// No state file and no usable record (why): a grace period of one lease, in which
    /// borrowers claim their ranges back.
    Grace { why: String },
}

impl fmt::Display for StartMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StartMode::Fresh => f.write_str("fresh (the partition's lease record is empty)"),
            StartMode::Record { generation, grants } => {
                write!(f, "record generation {generation} ({grants} lent ranges)")
            }
            StartMode::StateFile { grants } => write!(f, "state file ({grants} ranges)"),
            StartMode::Grace { why } => write!(f, "grace (no usable lease record: {why})"),
        }
    }
}

impl StartMode {
    /// One word for the status's JSON: fresh, record, state_file, grace.
    pub fn name(&self) -> &'static str {
        match self {
            StartMode::Fresh => "fresh",
            StartMode::Record { .. } => "record",
            StartMode::StateFile { .. } => "state_file",
            StartMode::Grace { .. } => "grace",
        }
    }
}

/// What a record found at start says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordStart {
    /// All zero.
    Fresh,
    /// A valid record of this node whose grants fit the table: they are restored (lent, with
    /// a fresh lease).
    Restored { generation: u64, grants: Vec<Grant> },
    /// Anything else (why); the table is untouched. `generation`: the record's, if it
    /// decoded at all.
    Invalid {
        why: String,
        generation: Option<u64>,
    },
}

impl RecordStart {
    /// The record's generation, if it had one.
    pub fn generation(&self) -> Option<u64> {
        match self {
            RecordStart::Fresh => None,
            RecordStart::Restored { generation, .. } => Some(*generation),
            RecordStart::Invalid { generation, .. } => *generation,
        }
    }
}

/// The record of `table`'s lent grants, `generation`: the bytes to write at `RECORD_OFFSET`.
pub fn encode(table: &Table, generation: u64) -> Vec<u8> {
    let grants: Vec<RecordedGrant> = table
        .lent()
        .iter()
        .map(|g| RecordedGrant {
            node: g.node,
            instance: g.instance,
            first: g.first,
            chunks: g.chunks,
        })
        .collect();
    let mut out = vec![0u8; lease_record::encoded_len(grants.len())];
    // A (node, instance) holds at most one grant: at most 16 * 16 = MAX_GRANTS.
    lease_record::encode(table.node(), table.len(), generation, &grants, &mut out)
        .expect("at most MAX_GRANTS grants, buffer of encoded_len");
    out
}

/// Reads the record `bytes` (copied out of the partition) for `table`, which is empty. A
/// valid record of this node whose grants all fit the table (inside it, not overlapping)
/// restores them as lent with a lease from `now`; anything else leaves the table untouched.
pub fn restore(table: &mut Table, bytes: &[u8], now: Instant) -> RecordStart {
    let mut grants = [RecordedGrant::default(); MAX_GRANTS];
    match lease_record::decode(bytes, &mut grants) {
        Decoded::Fresh => RecordStart::Fresh,
        Decoded::Invalid(e) => RecordStart::Invalid {
            why: format!("{e:?}"),
            generation: None,
        },
        Decoded::Valid {
            node,
            chunks,
            generation,
            count,
        } => {
            let invalid = |why: String| RecordStart::Invalid {
                why,
                generation: Some(generation),
            };
            if node != table.node() {
                return invalid(format!(
                    "it is node {node}'s, this is node {}",
                    table.node()
                ));
            }
            let mut t = table.clone();
            let mut restored = Vec::new();
            for g in &grants[..count] {
                let g = Grant {
                    node: g.node,
                    instance: g.instance,
                    first: g.first,
                    chunks: g.chunks,
                };
                if let Err(e) = t.restore(g, GrantKind::Lent, now) {
                    return invalid(format!("{e} (the record was written for {chunks} chunks)"));
                }
                restored.push(g);
            }
            *table = t;
            RecordStart::Restored {
                generation,
                grants: restored,
            }
        }
    }
}
