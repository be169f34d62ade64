//! The fabric's liveness word of every node (`gas::node_state`), kept in the GAS control area
//! for the guests to read.
//!
//! The server is the table's only writer and keeps its own copy of every word: what it writes
//! follows that copy, never what it finds in the region (any guest can write the control
//! area). A control area smaller than [`NODE_STATE_END`] has no table: the words are then kept
//! only here, and nothing is written to the region (those bytes belong to partition 0).

use anyhow::{Context, Result};
use unimem_wire::gas::{node_state, NODE_STATE_END, NODE_STATE_OFFSET, PAGE_SIZE};

use crate::shm::{PageMap, SharedRegion};

// The table lies in one page of the control area.
const _: () = assert!(NODE_STATE_OFFSET / PAGE_SIZE == (NODE_STATE_END - 1) / PAGE_SIZE);

pub struct NodeStates {
    words: Vec<u64>,
    /// The page holding the table, if the control area has one.
    table: Option<PageMap>,
}

impl NodeStates {
    /// Every node starts as [`node_state::NEVER`], which is what the fresh (zeroed) region
    /// already says: nothing is written.
    pub fn new(shm: &SharedRegion, nodes: u32, ctl_size: u64) -> Result<Self> {
        let table = if ctl_size >= NODE_STATE_END {
            let page = NODE_STATE_OFFSET / PAGE_SIZE * PAGE_SIZE;
            Some(shm.map_page(page).context("mapping the node state table")?)
        } else {
            None
        };
        Ok(Self {
            words: vec![node_state::encode(node_state::NEVER, 0); nodes as usize],
            table,
        })
    }

    /// Whether the region carries the table (guests can see the states).
    pub fn in_region(&self) -> bool {
        self.table.is_some()
    }

    pub fn word(&self, id: u32) -> u64 {
        self.words[id as usize]
    }

    /// Node `id` connected: up, one more connection (also after it was lost: its partition
    /// stays poisoned, but the node is back).
    pub fn connected(&mut self, id: u32) -> u64 {
        let connects = node_state::connects(self.word(id)) + 1;
        self.set(id, node_state::encode(node_state::UP, connects))
    }

    /// Node `id` disconnected: gone, unless its memory was already declared lost.
    pub fn disconnected(&mut self, id: u32) -> u64 {
        let word = self.word(id);
        if node_state::state(word) == node_state::LOST {
            return word;
        }
        self.set(
            id,
            node_state::encode(node_state::GONE, node_state::connects(word)),
        )
    }

    /// Node `id`'s memory went away. Written before the partition is poisoned, so that a
    /// borrower that checks the word after its copy never takes poison for data.
    pub fn lost(&mut self, id: u32) -> u64 {
        let connects = node_state::connects(self.word(id));
        self.set(id, node_state::encode(node_state::LOST, connects))
    }

    fn set(&mut self, id: u32, word: u64) -> u64 {
        self.words[id as usize] = word;
        if let Some(table) = &self.table {
            let index = (NODE_STATE_OFFSET % PAGE_SIZE) as usize / 8 + id as usize;
            table.write_u64(index, word.to_le());
        }
        word
    }
}

/// A state's name in `states` replies and logs.
pub fn state_name(word: u64) -> &'static str {
    match node_state::state(word) {
        node_state::NEVER => "never",
        node_state::UP => "up",
        node_state::GONE => "gone",
        node_state::LOST => "lost",
        _ => "invalid",
    }
}
