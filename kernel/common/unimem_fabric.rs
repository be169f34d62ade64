// SPDX-License-Identifier: GPL-2.0
//! The seam between unimem kernel modules: a narrow C ABI exported by `unimem_eusrvmem.ko`.
//!
//! Out-of-tree Rust modules cannot share Rust items (Rust-for-Linux #1086: no stable ABI, and
//! `TypeId`s differ between separately built crates), so other modules reach the fabric through
//! `#[no_mangle] extern "C"` functions that `exports.c` marks `EXPORT_SYMBOL_GPL`, with the
//! `#[repr(C)]` types below. Provider and clients include this one file with `#[path]`, so the
//! signatures cannot drift. Module dependencies (and thus load/unload order) follow from symbol
//! use: a client pins `unimem_eusrvmem` while it is loaded. The device, though, can be unbound
//! or unplugged at any time: a client attaches (a counted reference) and is told through its
//! revocation hook to stop using the window; `fabric_client.rs` wraps this for Rust clients.
//!
//! Declared as `fabric_api` by `exporter.rs` (`unimem_eusrvmem`, whose `seam.rs` defines the
//! functions) and `client.rs` (the modules that call them); needs nothing of its includer.
//! Each client calls only part of the seam and the exporter none of it, and the declarations
//! are `pub` as a C ABI's are.
#![allow(dead_code, unreachable_pub)]

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
    /// Kernel virtual address of the whole window (write-back mapping), mapped until the client
    /// detaches; to be used only while the attachment is live (`unimem_fabric_live`).
    pub gas_virt: *mut u8,
}

/// A doorbell handler: called in hard-IRQ context with the registered context pointer and the
/// vector that fired. It must not sleep.
pub type DoorbellHandler = unsafe extern "C" fn(ctx: *mut c_void, vector: u32);

/// A client's revocation hook: called in process context (it may sleep) when the fabric device
/// is being unbound or unplugged, while the window is still mapped. When every hook has
/// returned the attachment is dead: `unimem_fabric_live` says 0, doorbells fail with `-ENODEV`
/// and the client must not touch the window again (it stays mapped until the client detaches,
/// so a late access cannot fault, but the device behind it may be gone). The hook must not call
/// `unimem_fabric_on_revoke` or `unimem_fabric_detach` (they wait for it).
pub type RevokeHook = unsafe extern "C" fn(ctx: *mut c_void);

extern "C" {
    /// Attaches a client to the bound fabric device: fills `*info` and `*handle`, a counted
    /// reference that keeps `info.gas_virt` mapped until `unimem_fabric_detach`. `-ENODEV`
    /// when no device is bound or it is being removed.
    pub fn unimem_fabric_attach(info: *mut FabricInfo, handle: *mut *mut c_void) -> c_int;
    /// Ends an attachment (waits for a running revocation hook); `handle` is invalid after.
    pub fn unimem_fabric_detach(handle: *mut c_void);
    /// 1 while the attachment's device is bound, 0 once it has been revoked. A client checks it
    /// inside an RCU read-side section around each use of the window: revocation waits for
    /// such sections to end before the device goes.
    pub fn unimem_fabric_live(handle: *mut c_void) -> c_int;
    /// Installs (`Some`) or removes (`None`) the revocation hook of an attachment.
    /// `-ENODEV` when installing on a revoked attachment; removing waits for a running hook.
    pub fn unimem_fabric_on_revoke(
        handle: *mut c_void,
        hook: Option<RevokeHook>,
        ctx: *mut c_void,
    ) -> c_int;
    /// Raises doorbell `vector` on node `node`; `-EINVAL` for a bad node or vector, `-ENODEV`
    /// once revoked. Any context.
    pub fn unimem_fabric_ring(handle: *mut c_void, node: u32, vector: u32) -> c_int;
    /// Installs `handler` for `vector` (`-EBUSY` if one is installed, `-ENODEV` once revoked);
    /// `None` removes it and waits until no call of the old handler is still running.
    /// Revocation removes every handler of the device.
    pub fn unimem_fabric_set_handler(
        handle: *mut c_void,
        vector: u32,
        handler: Option<DoorbellHandler>,
        ctx: *mut c_void,
    ) -> c_int;
    /// Reserves (`reserve != 0`) or releases window bytes `[offset, offset + len)` for this
    /// client: user space cannot map reserved bytes through `/dev/eusrvmem`, and its existing
    /// mappings of them are zapped (memory that becomes this node's RAM). Detaching releases
    /// the client's reservations. `-EINVAL` outside the window.
    pub fn unimem_fabric_reserve(
        handle: *mut c_void,
        offset: u64,
        len: u64,
        reserve: c_int,
    ) -> c_int;
}
