// SPDX-License-Identifier: GPL-2.0
//! The seam between unimem kernel modules: a narrow C ABI exported by `unimem_eusrvmem.ko`.
//!
//! Out-of-tree Rust modules cannot share Rust items (Rust-for-Linux #1086: no stable ABI, and
//! `TypeId`s differ between separately built crates), so other modules reach the fabric through
//! `#[no_mangle] extern "C"` functions that `exports.c` marks `EXPORT_SYMBOL_GPL`, with the
//! `#[repr(C)]` types below. Provider and clients include this one file with `#[path]`, so the
//! signatures cannot drift. Module dependencies (and thus load/unload order) follow from symbol
//! use: a client pins `unimem_eusrvmem` while it is loaded.

use kernel::ffi::{c_int, c_void};

/// What a client needs to know about this node's view of the GAS.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct FabricInfo {
    /// This node's id (the ivshmem peer id, 0-based).
    pub node_id: u32,
    /// Nodes in the cluster.
    pub node_count: u32,
    /// Doorbell vectors per node.
    pub vectors: u32,
    /// Reserved, zero.
    pub reserved: u32,
    /// Physical address of the GAS window (the fabric device's memory BAR).
    pub gas_phys: u64,
    /// Size of the GAS window in bytes.
    pub gas_size: u64,
    /// Bytes before partition 0 (descriptor and fabric control structures).
    pub ctl_size: u64,
    /// Size of each node's partition in bytes.
    pub partition_size: u64,
    /// Kernel virtual address of the whole window (write-back mapping), valid while the client
    /// holds the module reference that symbol use implies and the device stays bound.
    pub gas_virt: *mut u8,
}

/// A doorbell handler: called in hard-IRQ context with the registered context pointer and the
/// vector that fired. It must not sleep.
pub type DoorbellHandler = unsafe extern "C" fn(ctx: *mut c_void, vector: u32);

extern "C" {
    /// Fills `*info`; returns 0, or `-ENODEV` when no fabric device is bound.
    pub fn unimem_fabric_info(info: *mut FabricInfo) -> c_int;
    /// Raises doorbell `vector` on node `node`; `-EINVAL` for a bad node or vector.
    pub fn unimem_fabric_ring(node: u32, vector: u32) -> c_int;
    /// Installs `handler` for `vector` (`-EBUSY` if one is installed); `None` removes it and
    /// waits until no call of the old handler is still running.
    pub fn unimem_fabric_set_handler(
        vector: u32,
        handler: Option<DoorbellHandler>,
        ctx: *mut c_void,
    ) -> c_int;
}
