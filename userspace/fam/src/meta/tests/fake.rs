//! A [`Space`] that lends from per-node bump pointers and remembers every live allocation,
//! and can be told to fail.

use std::collections::BTreeMap;

use unimem_wire::gsas;

use crate::error::{FamError, Result};
use crate::meta::Space;

/// Where each node's fake pool starts (above KRAM's lendable offset, like real pages).
const BASE: u64 = 3 << 20;

#[derive(Debug, Default)]
pub struct FakeSpace {
    /// Next free offset per node.
    bump: BTreeMap<u16, u64>,
    /// Live allocations: address -> (node, pages).
    pub live: BTreeMap<u64, (u16, u64)>,
    /// Every alloc call, in order: (node, pages).
    pub calls: Vec<(u16, u64)>,
    /// Fails the Nth alloc call (1-based, counting every call) with `fail_with`.
    pub fail_at: Option<usize>,
    pub fail_with: Option<FamError>,
    /// Pages each node may still lend (absent: unlimited); past it, NoSpace.
    pub room: BTreeMap<u16, u64>,
    /// Free fails (the allocation stays live).
    pub free_fails: bool,
    /// Largest allocation per call.
    pub max: Option<u64>,
    /// Answers this address instead of a good one.
    pub bad_addr: Option<u64>,
}

impl FakeSpace {
    pub fn new() -> FakeSpace {
        FakeSpace::default()
    }

    /// Live pages on `node`.
    pub fn pages_on(&self, node: u16) -> u64 {
        self.live
            .values()
            .filter(|(n, _)| *n == node)
            .map(|(_, p)| p)
            .sum()
    }
}

impl Space for FakeSpace {
    fn alloc(&mut self, node: u16, pages: u64) -> Result<u64> {
        self.calls.push((node, pages));
        if self.fail_at == Some(self.calls.len()) {
            return Err(self
                .fail_with
                .clone()
                .unwrap_or_else(|| FamError::Allocator("told to fail".into())));
        }
        assert!(
            pages >= 1 && pages <= self.max_pages(),
            "asked {pages} pages"
        );
        if let Some(room) = self.room.get_mut(&node) {
            if *room < pages {
                return Err(FamError::NoSpace(format!("node {node} full")));
            }
            *room -= pages;
        }
        let next = self.bump.entry(node).or_insert(BASE);
        let addr = gsas::addr(node, *next);
        *next += pages * gsas::PAGE_SIZE;
        let addr = self.bad_addr.unwrap_or(addr);
        self.live.insert(addr, (node, pages));
        Ok(addr)
    }

    fn free(&mut self, addr: u64) -> Result<()> {
        if self.free_fails {
            return Err(FamError::Allocator("told to fail free".into()));
        }
        let (node, pages) = self
            .live
            .remove(&addr)
            .ok_or_else(|| FamError::Allocator(format!("free of unknown {addr:#x}")))?;
        if let Some(room) = self.room.get_mut(&node) {
            *room += pages;
        }
        Ok(())
    }

    fn max_pages(&self) -> u64 {
        self.max.unwrap_or(gsas::MAX_ALLOC_PAGES)
    }
}
