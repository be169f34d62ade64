// SPDX-License-Identifier: GPL-2.0
//! The C ABI other unimem modules call (declared in `kernel/include/unimem_fabric.rs`,
//! exported by `exports.c`).

use crate::{
    fabric,
    fabric_api::{DoorbellHandler, FabricInfo},
};
use kernel::{
    error::from_result,
    ffi::{c_int, c_void},
    prelude::*,
};

/// Fills `*info` with this node's view of the fabric.
///
/// # Safety
///
/// `info` must be valid for writing a `FabricInfo`.
#[no_mangle]
pub unsafe extern "C" fn unimem_fabric_info(info: *mut FabricInfo) -> c_int {
    if info.is_null() {
        return EINVAL.to_errno();
    }
    from_result(|| {
        // SAFETY: the caller guarantees `info` is writable.
        fabric::with_current(|f| unsafe { info.write(f.info()) }).ok_or(ENODEV)?;
        Ok(0)
    })
}

/// Raises doorbell `vector` on node `node`. Callable from any context.
#[no_mangle]
pub extern "C" fn unimem_fabric_ring(node: u32, vector: u32) -> c_int {
    from_result(|| {
        fabric::with_current(|f| f.ring(node, vector)).ok_or(ENODEV)??;
        Ok(0)
    })
}

/// Installs or removes the doorbell handler of `vector`. May sleep.
///
/// # Safety
///
/// `handler`, if any, must be callable in hard-IRQ context with `ctx` until it is removed with
/// `None` (which waits for running calls), and removed before the caller's module unloads.
#[no_mangle]
pub unsafe extern "C" fn unimem_fabric_set_handler(
    vector: u32,
    handler: Option<DoorbellHandler>,
    ctx: *mut c_void,
) -> c_int {
    from_result(|| {
        let fabric = fabric::current().ok_or(ENODEV)?;
        fabric.doorbells.get(vector as usize).ok_or(EINVAL)?.set_handler(handler, ctx)?;
        Ok(0)
    })
}
