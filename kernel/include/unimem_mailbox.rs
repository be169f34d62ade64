// SPDX-License-Identifier: GPL-2.0
//! Seam of `unimem_mailbox.ko` for kernel clients: 64-bit messages with per-opcode callbacks
//! (the KRAM protocol). Same scheme as `unimem_fabric.rs`: `#[no_mangle] extern "C"` functions
//! exported by the provider's `exports.c`; provider and clients include this file.

use kernel::ffi::{c_int, c_void};

/// Called in process context (a workqueue) for every message of the registered service and
/// opcode, with the sending node. May sleep; must not call `unimem_mbox_register`.
pub type KmsgHandler = unsafe extern "C" fn(ctx: *mut c_void, from_node: u32, word: u64);

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
}
