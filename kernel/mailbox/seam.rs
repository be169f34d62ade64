// SPDX-License-Identifier: GPL-2.0
//! The C ABI for kernel clients (declared in `kernel/common/unimem_mailbox.rs`).

use crate::kmsg_api::{KmsgHandler, MapCheck, PacketHandler, IFACE_HELD};
use kernel::{
    error::from_result,
    ffi::{c_int, c_void},
    prelude::*,
};

/// Installs or removes a kernel callback for (`service`, `opcode`). May sleep.
///
/// # Safety
///
/// `handler`, if any, must be callable in process context with `ctx` until removed with `None`
/// (which waits for a running call), and be removed before the caller's module unloads.
#[no_mangle]
pub unsafe extern "C" fn unimem_mbox_register(
    service: u32,
    opcode: u32,
    handler: Option<KmsgHandler>,
    ctx: *mut c_void,
) -> c_int {
    from_result(|| {
        let state = crate::current_state().ok_or(ENODEV)?;
        state.services.register(service, opcode, handler, ctx)?;
        Ok(0)
    })
}

/// Sends a 64-bit message to `service` on `node`. Any context.
#[no_mangle]
pub extern "C" fn unimem_mbox_send(node: u32, service: u32, word: u64) -> c_int {
    from_result(|| {
        crate::current_state()
            .ok_or(ENODEV)?
            .ksend(node, service, word)?;
        Ok(0)
    })
}

/// Installs or removes the kernel service of a kernel interface. May sleep.
///
/// # Safety
///
/// `handler`, if any, must be callable in process context with `ctx` until removed with `None`
/// (which waits for a running call), and be removed before the caller's module unloads.
#[no_mangle]
pub unsafe extern "C" fn unimem_mbox_serve(
    iface: u32,
    handler: Option<PacketHandler>,
    ctx: *mut c_void,
) -> c_int {
    from_result(|| {
        let state = crate::current_state().ok_or(ENODEV)?;
        state
            .served
            .serve(&state.window, &state.owners, iface, handler, ctx)?;
        if handler.is_some() {
            // Packets may have arrived between the discard and now.
            state.kick();
        }
        Ok(0)
    })
}

/// Installs or removes the check of user mappings of this node's partition. May sleep.
///
/// # Safety
///
/// `check`, if any, must be callable in process context with `ctx` until removed with `None`
/// (which waits for a running call), and be removed before the caller's module unloads.
#[no_mangle]
pub unsafe extern "C" fn unimem_mbox_map_check(check: Option<MapCheck>, ctx: *mut c_void) -> c_int {
    from_result(|| {
        crate::current_state()
            .ok_or(ENODEV)?
            .maps
            .set_map_check(check, ctx)?;
        Ok(0)
    })
}

/// Zaps user mappings of a range of this node's partition. May sleep.
#[no_mangle]
pub extern "C" fn unimem_mbox_zap_pages(offset: u64, len: u64) -> c_int {
    from_result(|| {
        crate::current_state()
            .ok_or(ENODEV)?
            .maps
            .zap_pages(offset, len)?;
        Ok(0)
    })
}

/// Who holds local interface `iface`: 0 if nobody (or no such interface, or the device is
/// gone), else `IFACE_HELD | generation << 24 | tree`. Any context but hard IRQ.
#[no_mangle]
pub extern "C" fn unimem_mbox_iface_state(iface: u32) -> u64 {
    crate::current_state()
        .and_then(|s| s.owners.iface_state(iface))
        .map_or(0, |(tree, generation)| {
            IFACE_HELD | u64::from(generation) << 24 | u64::from(tree)
        })
}
