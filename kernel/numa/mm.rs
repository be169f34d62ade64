// SPDX-License-Identifier: GPL-2.0
//! Memory hotplug and node queries: safe wrappers over the kernel's hotplug API and the C
//! queries of `mm_shim.c`.

use kernel::{bindings, ffi::c_int, prelude::*};

extern "C" {
    fn unimem_numa_free_node() -> c_int;
    fn unimem_numa_node_ids() -> c_int;
    fn unimem_numa_node_possible(nid: c_int) -> bool;
    fn unimem_numa_node_has_cpus(nid: c_int) -> bool;
    fn unimem_numa_distance(from: c_int, to: c_int) -> c_int;
    fn unimem_numa_block_size() -> usize;
    fn unimem_numa_node_pages(nid: c_int, managed: *mut usize, free: *mut usize);
    fn unimem_numa_free_elsewhere(nid: c_int) -> usize;
}

/// The first possible node without memory and CPUs, if any.
pub(crate) fn free_node() -> Option<i32> {
    // SAFETY: reads node state masks only.
    let nid = unsafe { unimem_numa_free_node() };
    (nid >= 0).then_some(nid)
}

/// Every possible node id, in order.
pub(crate) fn possible_nodes() -> impl Iterator<Item = i32> {
    // SAFETY: reads a variable fixed at boot.
    let ids = unsafe { unimem_numa_node_ids() };
    (0..ids).filter(|&nid| node_possible(nid))
}

pub(crate) fn node_possible(nid: i32) -> bool {
    // SAFETY: the shim checks the range before testing the mask.
    unsafe { unimem_numa_node_possible(nid) }
}

pub(crate) fn node_has_cpus(nid: i32) -> bool {
    // SAFETY: only called with possible nodes, which are inside the node masks.
    unsafe { unimem_numa_node_has_cpus(nid) }
}

/// SLIT/device-tree distance between two possible nodes.
pub(crate) fn distance(from: i32, to: i32) -> i32 {
    // SAFETY: reads the distance table, which covers every possible node.
    unsafe { unimem_numa_distance(from, to) }
}

/// Bytes per memory block: the unit of hot-add and of alignment.
pub(crate) fn block_size() -> u64 {
    // SAFETY: no preconditions.
    unsafe { unimem_numa_block_size() as u64 }
}

/// (managed, free) pages of a possible node.
pub(crate) fn node_pages(nid: i32) -> (usize, usize) {
    let (mut managed, mut free) = (0, 0);
    // SAFETY: `nid` is possible; both pointers are writable locals.
    unsafe { unimem_numa_node_pages(nid, &mut managed, &mut free) };
    (managed, free)
}

/// Free pages above the high watermarks of every other node with memory.
pub(crate) fn free_elsewhere(nid: i32) -> usize {
    // SAFETY: reads zone counters of online nodes.
    unsafe { unimem_numa_free_elsewhere(nid) }
}

/// Hot-adds `[phys, phys + size)` to node `nid` as driver-managed System RAM, onlined to
/// ZONE_MOVABLE so that it can be offlined (its pages migrated away) again.
pub(crate) fn add_movable(nid: i32, phys: u64, size: u64) -> Result {
    // SAFETY: the range is memory-block aligned memory of the fabric window that no one else
    // claims (the fabric driver maps it without requesting the region); the name is static.
    let ret = unsafe {
        bindings::__add_memory_driver_managed(
            nid,
            phys,
            size,
            c"System RAM (unimem)".as_char_ptr(),
            0,
            bindings::mmop_MMOP_ONLINE_MOVABLE,
        )
    };
    kernel::error::to_result(ret)
}

/// Offlines `[phys, phys + size)` (migrating its pages to other memory) and removes it.
/// Fails with the range left online; `EINTR` when the caller got a fatal signal.
pub(crate) fn offline_and_remove(phys: u64, size: u64) -> Result {
    // SAFETY: the range was added by `add_movable` and is removed at most once.
    kernel::error::to_result(unsafe { bindings::offline_and_remove_memory(phys, size) })
}
