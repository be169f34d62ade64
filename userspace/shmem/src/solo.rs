//! Unit tests' job: one PE whose symmetric heap and sync page are buffers of the test, so
//! the collectives run for real without GSAS (a set of one PE needs no barrier traffic and
//! every "remote" access is a copy within this process).

use crate::heap::Heap;
use crate::job::{Layout, Slot};
use crate::pe::{Job, Peer};
use gsas::PAGE_SIZE;
use std::sync::Mutex;

/// A job's memory: the heap and the sync page, 8-byte aligned.
pub struct Solo {
    pub heap: Vec<u64>,
    pub sync: Vec<u64>,
}

impl Solo {
    pub fn new(heap_words: usize) -> Solo {
        Solo {
            heap: vec![0; heap_words],
            sync: vec![0; PAGE_SIZE as usize / 8],
        }
    }

    /// The job of PE 0 of 1 over these buffers (which must outlive it).
    pub fn job(&mut self) -> Job {
        let heap_va = self.heap.as_mut_ptr() as usize;
        let sync_va = self.sync.as_mut_ptr() as usize;
        let heap_len = self.heap.len() as u64 * 8;
        Job {
            layout: Layout { base: 0, npes: 1 },
            me: 0,
            npes: 1,
            node: 0,
            static_va: 0,
            static_len: 0,
            heap_va,
            heap_len,
            heap_va_align: 8,
            sync_va,
            peers: vec![Peer {
                slot: Slot::default(),
                static_va: None,
                heap_va: Some(heap_va),
                sync_va: Some(sync_va),
                far: None,
            }],
            heap: Mutex::new(Heap::new(heap_len)),
            local_atomics: false,
        }
    }

    /// The address of heap word `i`.
    pub fn at(&mut self, i: usize) -> usize {
        self.heap.as_mut_ptr() as usize + i * 8
    }
}
