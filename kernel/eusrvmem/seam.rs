// SPDX-License-Identifier: GPL-2.0
//! The C ABI other unimem modules call (declared in `kernel/common/unimem_fabric.rs`,
//! exported by `exports.c`). A handle is a `KBox<Handle>` in raw form: a counted reference to
//! the fabric the client attached to, so every call reaches that device even after another
//! one was bound, and its window stays mapped until the client detaches.

use crate::{
    clients::Handle,
    fabric,
    fabric_api::{DoorbellHandler, FabricInfo, RevokeHook},
};
use kernel::{
    error::from_result,
    ffi::{c_int, c_void},
    prelude::*,
};

/// # Safety
///
/// `handle` must come from `unimem_fabric_attach` and not be detached yet.
unsafe fn handle<'a>(handle: *mut c_void) -> &'a Handle {
    // SAFETY: the caller guarantees `handle` is a live `KBox<Handle>` in raw form.
    unsafe { &*handle.cast::<Handle>() }
}

/// Attaches a client to the bound fabric device.
///
/// # Safety
///
/// `info` and `out` must be valid for writes.
#[no_mangle]
pub unsafe extern "C" fn unimem_fabric_attach(
    info: *mut FabricInfo,
    out: *mut *mut c_void,
) -> c_int {
    if info.is_null() || out.is_null() {
        return EINVAL.to_errno();
    }
    from_result(|| {
        let fabric = fabric::current().ok_or(ENODEV)?;
        let fi = fabric.info();
        let h = fabric.attach()?;
        // SAFETY: the caller guarantees both pointers are writable.
        unsafe {
            info.write(fi);
            out.write(KBox::into_raw(h).cast());
        }
        Ok(0)
    })
}

/// Ends an attachment.
///
/// # Safety
///
/// `handle` must come from `unimem_fabric_attach`; it is invalid afterwards.
#[no_mangle]
pub unsafe extern "C" fn unimem_fabric_detach(handle: *mut c_void) {
    if handle.is_null() {
        return;
    }
    // SAFETY: the caller gives up a live handle, which `attach` made with `KBox::into_raw`.
    let h = unsafe { KBox::from_raw(handle.cast::<Handle>()) };
    h.fabric.detach(&h);
}

/// 1 while the attachment may use the window.
///
/// # Safety
///
/// `handle` must be a live handle.
#[no_mangle]
pub unsafe extern "C" fn unimem_fabric_live(h: *mut c_void) -> c_int {
    // SAFETY: the caller guarantees a live handle.
    c_int::from(unsafe { handle(h) }.fabric.is_live())
}

/// Installs or removes the revocation hook of an attachment. May sleep.
///
/// # Safety
///
/// `h` must be a live handle; `hook`, if any, must be callable in process context with `ctx`
/// until it is removed with `None` (which waits for a running call).
#[no_mangle]
pub unsafe extern "C" fn unimem_fabric_on_revoke(
    h: *mut c_void,
    hook: Option<RevokeHook>,
    ctx: *mut c_void,
) -> c_int {
    // SAFETY: the caller guarantees a live handle.
    let h = unsafe { handle(h) };
    from_result(|| {
        h.fabric.set_hook(h, hook.map(|f| (f, ctx as usize)))?;
        Ok(0)
    })
}

/// Raises doorbell `vector` on node `node`. Callable from any context.
///
/// # Safety
///
/// `h` must be a live handle.
#[no_mangle]
pub unsafe extern "C" fn unimem_fabric_ring(h: *mut c_void, node: u32, vector: u32) -> c_int {
    // SAFETY: the caller guarantees a live handle.
    let h = unsafe { handle(h) };
    from_result(|| {
        h.fabric.ring(node, vector)?;
        Ok(0)
    })
}

/// Installs or removes the doorbell handler of `vector`. May sleep.
///
/// # Safety
///
/// `h` must be a live handle; `handler`, if any, must be callable in hard-IRQ context with
/// `ctx` until it is removed with `None` (which waits for running calls) or the attachment is
/// revoked, and removed before the caller's module unloads.
#[no_mangle]
pub unsafe extern "C" fn unimem_fabric_set_handler(
    h: *mut c_void,
    vector: u32,
    handler: Option<DoorbellHandler>,
    ctx: *mut c_void,
) -> c_int {
    // SAFETY: the caller guarantees a live handle.
    let h = unsafe { handle(h) };
    from_result(|| {
        if handler.is_some() && !h.fabric.is_live() {
            return Err(ENODEV);
        }
        h.fabric
            .doorbells
            .get(vector as usize)
            .ok_or(EINVAL)?
            .set_handler(handler, ctx)?;
        Ok(0)
    })
}

/// Reserves (`reserve != 0`) or releases window bytes `[offset, offset + len)`: while reserved,
/// user space cannot map them through `/dev/eusrvmem` and existing mappings are zapped. May
/// sleep.
///
/// # Safety
///
/// `h` must be a live handle.
#[no_mangle]
pub unsafe extern "C" fn unimem_fabric_reserve(
    h: *mut c_void,
    offset: u64,
    len: u64,
    reserve: c_int,
) -> c_int {
    // SAFETY: the caller guarantees a live handle.
    let h = unsafe { handle(h) };
    from_result(|| {
        h.fabric.reserve(h, offset, len, reserve != 0)?;
        Ok(0)
    })
}
