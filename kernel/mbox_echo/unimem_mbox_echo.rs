// SPDX-License-Identifier: GPL-2.0
//! A minimal kernel client of the mailbox's 64-bit messages (for tests and as an example of
//! the seam KRAM uses): per-opcode callbacks on the ECHO service, answers to the sender's TEST
//! service. Opcode 1 echoes the word, opcode 2 increments its payload (low 60 bits).

use kernel::{ffi::c_void, prelude::*};

// The shared layer (kernel/README.md): the wire formats and the mailbox seam's declarations.
#[path = "../common/kmsg_client.rs"]
mod common;
use common::*;

use mailbox::service;

const PAYLOAD_MASK: u64 = (1 << 60) - 1;

fn reply(from_node: u32, word: u64) {
    // SAFETY: plain call into unimem_mailbox's exported seam.
    let ret = unsafe { kmsg_api::unimem_mbox_send(from_node, service::TEST, word) };
    if ret != 0 {
        pr_warn!("reply to node {} failed: {}\n", from_node, ret);
    }
}

/// # Safety
///
/// Called by unimem_mailbox in process context for ECHO messages with opcode 1.
unsafe extern "C" fn echo(_ctx: *mut c_void, from_node: u32, word: u64) {
    reply(from_node, word);
}

/// # Safety
///
/// Called by unimem_mailbox in process context for ECHO messages with opcode 2.
unsafe extern "C" fn increment(_ctx: *mut c_void, from_node: u32, word: u64) {
    reply(
        from_node,
        (word & !PAYLOAD_MASK) | (word.wrapping_add(1) & PAYLOAD_MASK),
    );
}

struct EchoModule;

fn set(opcode: u32, handler: Option<kmsg_api::KmsgHandler>) -> Result {
    // SAFETY: the handlers only call the seam and are removed in `Drop` (which waits for a
    // running call) before this module's code goes away.
    let ret = unsafe {
        kmsg_api::unimem_mbox_register(service::ECHO, opcode, handler, core::ptr::null_mut())
    };
    if ret != 0 {
        pr_err!(
            "cannot register opcode {} on service {}: {}\n",
            opcode,
            service::ECHO,
            ret
        );
        return Err(Error::from_errno(ret));
    }
    Ok(())
}

impl kernel::Module for EchoModule {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        set(1, Some(echo))?;
        if let Err(e) = set(2, Some(increment)) {
            let _ = set(1, None);
            return Err(e);
        }
        pr_info!(
            "echoing service {} opcodes 1 (echo) and 2 (increment)\n",
            service::ECHO
        );
        Ok(EchoModule)
    }
}

impl Drop for EchoModule {
    fn drop(&mut self) {
        let _ = set(1, None);
        let _ = set(2, None);
    }
}

module! {
    type: EchoModule,
    name: "unimem_mbox_echo",
    authors: ["unimem developers"],
    description: "unimem mailbox test client: echoes 64-bit messages via per-opcode callbacks",
    license: "GPL v2",
}
