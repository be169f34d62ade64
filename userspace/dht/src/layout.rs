//! Where a table lives: its root page (the header every process reads to open the table), the
//! first-level array cut into one contiguous slice per node (seed 2.5.2), and the sizes.
//!
//! Root page, little-endian words: 0 magic, 1 format, 2 state (live / destroyed), 3 nodes, 4
//! entries per node, 5-6 the seeds of h1 and h2, 7 the capacity asked for, 8.. the address of
//! each node's slice (its node is the slice's, in the order of the first-level array).

use crate::entry::{CONTAINER_ENTRIES, ENTRY_BYTES};
use crate::error::{Error, Result};
use gsas::{node_of, offset_of, PAGE_SIZE};

pub const MAGIC: u64 = u64::from_le_bytes(*b"UNIMDHT1");
pub const FORMAT: u64 = 1;
pub const LIVE: u64 = 1;
pub const DESTROYED: u64 = 2;
/// Word of the state (destroy flips it with a CAS, so one destroyer wins).
pub const STATE_WORD: u64 = 2;
/// Most nodes a table spans (GSAS addresses name 16).
pub const MAX_NODES: usize = 16;
/// Header words read to open a table.
pub const HEADER_WORDS: usize = 8 + MAX_NODES;
/// First-level entries per key of capacity: a load of 1/4 keeps most keys in a direct entry
/// (one READ256 per get) and few containers (a page each) allocated.
pub const ENTRIES_PER_KEY: u64 = 4;
/// Largest slice, in pages (keeps a table's first level within a node's default pool).
pub const MAX_SLICE_PAGES: u64 = 2048;

/// What a table is, as read from its root (or made by create).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    pub root: u64,
    pub per_node: u64,
    pub seed1: u64,
    pub seed2: u64,
    pub capacity: u64,
    /// Slice addresses, one per node, in array order.
    pub slices: Vec<u64>,
}

impl Layout {
    /// First-level entries per node for `capacity` keys over `nodes` nodes: whole pages.
    pub fn per_node_for(capacity: u64, nodes: usize) -> Result<u64> {
        if capacity == 0 {
            return Err(Error::Argument(
                "the capacity must be at least 1 key".into(),
            ));
        }
        if nodes == 0 || nodes > MAX_NODES {
            return Err(Error::Argument(format!(
                "a table spans 1-{MAX_NODES} nodes, not {nodes}"
            )));
        }
        let want = capacity
            .saturating_mul(ENTRIES_PER_KEY)
            .div_ceil(nodes as u64);
        let per_node = want.div_ceil(CONTAINER_ENTRIES).max(1) * CONTAINER_ENTRIES;
        let pages = per_node / CONTAINER_ENTRIES;
        if pages > MAX_SLICE_PAGES {
            return Err(Error::Argument(format!(
                "a capacity of {capacity} keys over {nodes} nodes needs {pages} pages of first level per node (at most {MAX_SLICE_PAGES}): use more nodes or a smaller capacity"
            )));
        }
        Ok(per_node)
    }

    pub fn slice_pages(&self) -> u64 {
        self.per_node / CONTAINER_ENTRIES
    }

    /// Entries of the first level in all.
    pub fn size(&self) -> u64 {
        self.per_node * self.slices.len() as u64
    }

    /// The address of first-level entry `i` (< size).
    pub fn entry_addr(&self, i: u64) -> u64 {
        self.slices[(i / self.per_node) as usize] + (i % self.per_node) * ENTRY_BYTES
    }

    pub fn nodes(&self) -> Vec<u16> {
        self.slices.iter().map(|&s| node_of(s)).collect()
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut w = vec![
            MAGIC,
            FORMAT,
            LIVE,
            self.slices.len() as u64,
            self.per_node,
            self.seed1,
            self.seed2,
            self.capacity,
        ];
        w.extend(&self.slices);
        w.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    /// Checks a root page's header, which any node of the tree may have written: every field
    /// within what create makes, or [`Error::Corrupt`] naming the first that is not.
    pub fn decode(root: u64, b: &[u8]) -> Result<Layout> {
        let bad = |what: String| Err(Error::Corrupt(format!("table root {root:#x}: {what}")));
        if b.len() < HEADER_WORDS * 8 {
            return bad(format!("header of {} bytes", b.len()));
        }
        let w = |i: usize| u64::from_le_bytes(b[i * 8..i * 8 + 8].try_into().expect("8 bytes"));
        if w(0) != MAGIC {
            return bad(format!("no table here (magic {:#x})", w(0)));
        }
        if w(1) != FORMAT {
            return bad(format!("format {} (this library reads {FORMAT})", w(1)));
        }
        match w(2) {
            LIVE => {}
            DESTROYED => return bad("the table has been destroyed".into()),
            s => return bad(format!("state {s}")),
        }
        let n = w(3);
        if n == 0 || n > MAX_NODES as u64 {
            return bad(format!("{n} nodes"));
        }
        let per_node = w(4);
        if per_node == 0
            || per_node % CONTAINER_ENTRIES != 0
            || per_node > MAX_SLICE_PAGES * PAGE_SIZE / ENTRY_BYTES
        {
            return bad(format!("{per_node} entries per node"));
        }
        let slices: Vec<u64> = (0..n as usize).map(|i| w(8 + i)).collect();
        let mut seen = 0u32;
        for &s in &slices {
            let node = node_of(s);
            if offset_of(s) % PAGE_SIZE != 0 || offset_of(s) == 0 || usize::from(node) >= MAX_NODES
            {
                return bad(format!("slice address {s:#x}"));
            }
            if seen & 1 << node != 0 {
                return bad(format!("two slices on node {node}"));
            }
            seen |= 1 << node;
        }
        Ok(Layout {
            root,
            per_node,
            seed1: w(5),
            seed2: w(6),
            capacity: w(7),
            slices,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layout() -> Layout {
        Layout {
            root: gsas::addr(0, 0x1000),
            per_node: 256,
            seed1: 1,
            seed2: 2,
            capacity: 100,
            slices: vec![gsas::addr(0, 0x2000), gsas::addr(1, 0x4000)],
        }
    }

    #[test]
    fn a_header_reads_back_and_places_entries_in_node_slices() {
        let l = layout();
        let mut b = l.encode();
        b.resize(HEADER_WORDS * 8, 0);
        assert_eq!(Layout::decode(l.root, &b).unwrap(), l);
        assert_eq!(l.size(), 512);
        assert_eq!(l.entry_addr(0), gsas::addr(0, 0x2000));
        assert_eq!(l.entry_addr(255), gsas::addr(0, 0x2000 + 255 * 32));
        assert_eq!(l.entry_addr(256), gsas::addr(1, 0x4000));
    }

    #[test]
    fn sizes() {
        assert_eq!(Layout::per_node_for(100, 4).unwrap(), 128);
        assert_eq!(Layout::per_node_for(1000, 4).unwrap(), 1024);
        assert!(Layout::per_node_for(0, 4).is_err());
        assert!(Layout::per_node_for(10, 0).is_err());
        assert!(Layout::per_node_for(10, 17).is_err());
        assert!(Layout::per_node_for(u64::MAX, 4).is_err());
    }

    #[test]
    fn every_malformed_header_field_is_a_clear_error() {
        let l = layout();
        let good = {
            let mut b = l.encode();
            b.resize(HEADER_WORDS * 8, 0);
            b
        };
        let cases: &[(usize, u64, &str)] = &[
            (0, 7, "no table here"),
            (1, 9, "format 9"),
            (2, DESTROYED, "destroyed"),
            (2, 0, "state 0"),
            (3, 0, "0 nodes"),
            (3, 17, "17 nodes"),
            (3, u64::MAX, "nodes"),
            (4, 0, "0 entries per node"),
            (4, 100, "100 entries per node"),
            (4, u64::MAX - 127, "entries per node"),
            (8, gsas::addr(0, 0x2001), "slice address"),
            (8, gsas::addr(40, 0x2000), "slice address"),
            (9, gsas::addr(0xffff, 0x2000), "slice address"),
            (9, gsas::addr(0, 0x8000), "two slices on node 0"),
        ];
        for &(word, v, msg) in cases {
            let mut b = good.clone();
            b[word * 8..word * 8 + 8].copy_from_slice(&v.to_le_bytes());
            let e = Layout::decode(l.root, &b).unwrap_err().to_string();
            assert!(e.contains(msg), "word {word} = {v:#x}: {e}");
        }
        assert!(Layout::decode(l.root, &good[..16]).is_err());
    }
}
