// SPDX-License-Identifier: GPL-2.0
//! What both borrowers of the KRAM protocol (`unimem_kram`, `unimem_numa`) do through the
//! mailbox seam: send messages to a lender's kram-daemon and take the OFFERs of their service.
//!
//! Included with `#[path]` as `kram_client`, next to `unimem_mailbox.rs` (as `kmsg_api`) and
//! `wire.rs` (whose `mailbox` the crate root re-exports).

use crate::{kmsg_api, mailbox::service, wire::kram::{to_driver, KramMsg}};
use kernel::{
    ffi::c_void,
    prelude::*,
    sync::{Arc, ArcBorrow},
};

/// Sends `msg` to the kram-daemon of `node`; a failure is logged and returned.
pub(crate) fn try_send(node: u32, msg: KramMsg) -> Result {
    // SAFETY: plain call into unimem_mailbox's exported seam.
    let ret = unsafe { kmsg_api::unimem_mbox_send(node, service::KRAM_DAEMON, msg.encode()) };
    if ret != 0 {
        pr_warn!("message {:#x} to node {} not sent: {}\n", msg.opcode, node, ret);
        return Err(Error::from_errno(ret));
    }
    Ok(())
}

/// [`try_send`] where the caller has nothing better to do than the log line: the protocol
/// recovers (the daemon's offer expires, the driver asks again).
pub(crate) fn send(node: u32, msg: KramMsg) {
    let _ = try_send(node, msg);
}

/// A driver that receives OFFERs.
pub(crate) trait OfferSink: Send + Sync + Sized {
    /// Called in process context for every OFFER, with the node the mailbox says sent it.
    fn offer(this: ArcBorrow<'_, Self>, from: u32, word: u64);
}

/// # Safety
///
/// Called by unimem_mailbox in process context with the `T` registered as `ctx` by
/// [`set_offer_handler`], which stays alive until the handler is removed.
unsafe extern "C" fn on_offer<T: OfferSink>(ctx: *mut c_void, from_node: u32, word: u64) {
    // SAFETY: see above.
    let sink = unsafe { ArcBorrow::<T>::from_raw(ctx.cast::<T>()) };
    T::offer(sink, from_node, word);
}

/// Routes the OFFERs of `service` to `sink`; `None` removes the route and waits for a running
/// call. The caller keeps `sink` alive until it has removed the route.
pub(crate) fn set_offer_handler<T: OfferSink>(service: u32, sink: Option<&Arc<T>>) -> Result {
    let (handler, ctx) = match sink {
        Some(s) => (Some(on_offer::<T> as kmsg_api::KmsgHandler), Arc::as_ptr(s).cast_mut().cast::<c_void>()),
        None => (None, core::ptr::null_mut()),
    };
    // SAFETY: `on_offer` runs in process context with `ctx` alive until removal (see above).
    let ret = unsafe { kmsg_api::unimem_mbox_register(service, u32::from(to_driver::OFFER), handler, ctx) };
    if ret != 0 {
        return Err(Error::from_errno(ret));
    }
    Ok(())
}
