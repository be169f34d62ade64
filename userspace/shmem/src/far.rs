//! The static data and heap of PEs on other nodes, mapped into this process for puts and gets.
//!
//! Why: a put or get through the target's atomic service moves a page per round trip (and on a
//! one-vCPU node the home must be scheduled for each); Unimem's remote memory is reachable by
//! loads and stores, so once the home approved a mapping (`Gsas::map`: a MAP request, checked
//! as a bulk read and write by this PE's tree, the job's), a put or get is a copy. Atomics,
//! waits and `shmem_ptr` stay with the PE's node: CPU atomics on another node's memory are not
//! atomic with the home's service (and not between virtual machines under TCG).
//!
//! A home that refuses, or a node whose driver cannot map, leaves the PE on the service path;
//! `SHMEM_REMOTE_MAP=0` never maps (to compare the two). When the target frees its regions (its
//! `shmem_finalize`) before this PE unmapped them, the home's ZAP removes the mapping first.

use crate::job::Slot;
use gsas::Gsas;

/// Another node's PE's regions as mapped here (its heap; its static data, if it has any).
#[derive(Debug, Clone, Copy)]
pub struct Far {
    pub heap_va: usize,
    pub static_va: Option<usize>,
}

/// Whether puts and gets may use mappings of other nodes' memory (`SHMEM_REMOTE_MAP`, default
/// on).
pub fn enabled() -> bool {
    std::env::var("SHMEM_REMOTE_MAP").map_or(true, |v| v != "0")
}

/// Maps PE `pe`'s heap (`heap_len` bytes) and static data (`static_len`) from its slot `s`,
/// read-write; `None` (logged) if the home or the driver refuses either, or mapping is off.
pub fn map(g: &Gsas, pe: usize, s: &Slot, heap_len: u64, static_len: u64) -> Option<Far> {
    if !enabled() || heap_len == 0 {
        return None;
    }
    let one = |addr: u64, len: u64| match g.map(addr, len as usize, true) {
        Ok(p) => Some(p.as_ptr() as usize),
        Err(e) => {
            log::debug!("PE {pe}'s memory at {addr:#x}+{len:#x} is not mapped here ({e}): its puts and gets go through its node's service");
            None
        }
    };
    let heap_va = one(s.heap_addr, heap_len)?;
    let static_va = if static_len > 0 {
        match one(s.static_addr, static_len) {
            Some(va) => Some(va),
            None => {
                crate::window::unmap(heap_va, heap_len as usize);
                return None;
            }
        }
    } else {
        None
    };
    Some(Far { heap_va, static_va })
}
