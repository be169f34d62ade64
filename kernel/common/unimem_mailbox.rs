// SPDX-License-Identifier: GPL-2.0
//! Seam of `unimem_mailbox.ko` for kernel clients: 64-bit messages with per-opcode callbacks
//! (the KRAM protocol), and packet services on the interfaces reserved for the kernel (GSAS's
//! atomic service on `gsas::SERVICE_IFACE`). Same scheme as `unimem_fabric.rs`:
//! `#[no_mangle] extern "C"` functions exported by the provider's `exports.c`; provider and
//! clients include this file.
//!
//! Declared as `kmsg_api` by `client.rs` (`unimem_mailbox`, whose `seam.rs` defines the
//! functions, and the borrowers) and `kmsg_client.rs` (`unimem_mbox_echo`); needs nothing of
//! its includer. Each client calls only part of the seam and the exporter none of it, and the
//! declarations are `pub` as a C ABI's are.
#![allow(dead_code, unreachable_pub)]

use kernel::ffi::{c_int, c_void};

/// Called in process context (a workqueue) for every message of the registered service and
/// opcode, with the sending node. May sleep; must not call `unimem_mbox_register`.
pub type KmsgHandler = unsafe extern "C" fn(ctx: *mut c_void, from_node: u32, word: u64);

/// Called in process context (the mailbox's dispatch work, or for a packet from this node the
/// sending thread's `SEND`) for every packet that reached the served interface: `packet` points to the 32 bytes as the sending node's driver sealed them
/// (`packet::Packet`), copied out of the ring, valid for the call only. The mailbox has checked
/// that the header's node is the node whose ring the packet came from and that the reserved
/// byte is zero; everything else (the sender's interface, the payload) is the handler's to
/// check. May sleep (briefly: it delays every other packet and kernel message of this node);
/// must not call `unimem_mbox_serve`.
pub type PacketHandler = unsafe extern "C" fn(ctx: *mut c_void, from_node: u32, packet: *const u8);

/// Set in a [`PacketHandler`]'s `from_node` (this node's id) when it runs in the sending thread's
/// `SEND`: that thread holds its interface for the whole call, so the interface cannot change
/// owner meanwhile (the file is released only after the ioctl returns).
pub const FROM_SENDER: u32 = 1 << 31;

/// A thread's mapping of `len` bytes at `offset` of this node's partition through its mailbox
/// file (`mailbox::MMAP_GSAS`), as its driver sealed it: the file's protection tree and its
/// owner's credentials (`gsas::owner::Creds`), and whether the mapping may be written.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct MapRequest {
    pub tree: u32,
    pub uid: u32,
    pub gid: u32,
    /// `gsas::owner::ADMIN` or 0.
    pub flags: u32,
    /// 1 if the mapping may be written (`VM_MAYWRITE`).
    pub write: u32,
    pub offset: u64,
    pub len: u64,
}

/// Called (process context, with the mailbox's mapping lock held) for each [`MapRequest`]: 0 to
/// allow it, a negative errno to refuse it. Must not call `unimem_mbox_zap_pages` or
/// `unimem_mbox_map_check`, nor sleep for long.
pub type MapCheck = unsafe extern "C" fn(ctx: *mut c_void, req: *const MapRequest) -> c_int;

/// Set in `unimem_mbox_iface_state`'s answer when a thread holds the interface.
pub const IFACE_HELD: u64 = 1 << 63;

extern "C" {
    /// Installs `handler` for messages of `service` whose opcode (4 most significant bits of
    /// the word) is `opcode`: `-EINVAL` for a bad service or opcode, `-EBUSY` if taken (also
    /// when user space has bound the service). `None` removes it and waits for running calls.
    pub fn unimem_mbox_register(
        service: u32,
        opcode: u32,
        handler: Option<KmsgHandler>,
        ctx: *mut c_void,
    ) -> c_int;
    /// Sends `word` to `service` on `node` (this node included). `-EAGAIN` when the
    /// destination's ring for this node is full, `-EINVAL` for a bad node or service.
    /// Callable from any context.
    pub fn unimem_mbox_send(node: u32, service: u32, word: u64) -> c_int;
    /// Serves the packets of interface `iface` of this node with `handler`: `iface` must be one
    /// threads cannot allocate (`gsas::USER_INTERFACES..INTERFACES`), else `-EINVAL`; `-EBUSY`
    /// if served already, `-ENODEV` once the fabric device is gone. Packets queued before are
    /// discarded (counted as dropped): they were sent to a service that was not there. At most
    /// one ring's worth per sending node is handled per pass of the dispatch work, which queues
    /// itself again for more. `None` removes the handler and waits for a running call.
    pub fn unimem_mbox_serve(iface: u32, handler: Option<PacketHandler>, ctx: *mut c_void)
        -> c_int;
    /// Makes pages of this node's partition mappable by threads, as `check` allows (the GSAS
    /// service: pages allocated to the thread's tree). `-EBUSY` if a check is installed,
    /// `-ENODEV` once the fabric device is gone. `None` removes it and waits for a running call.
    pub fn unimem_mbox_map_check(check: Option<MapCheck>, ctx: *mut c_void) -> c_int;
    /// Zaps every thread's mapping of the partition range `[offset, offset + len)` (`len` 0: to
    /// the end of the partition): pages freed or lost. Waits for a mapping being made. May
    /// sleep; must not be called with a lock that `check` takes.
    pub fn unimem_mbox_zap_pages(offset: u64, len: u64) -> c_int;
    /// Who holds local interface `iface` (`0..INTERFACES`): 0 if nobody, else [`IFACE_HELD`] |
    /// the pair's allocation count (32 bits, from a random start) `<< 24` | the holder's
    /// protection tree (24 bits). The answer may be stale at once. Any context but hard IRQ.
    pub fn unimem_mbox_iface_state(iface: u32) -> u64;
}
