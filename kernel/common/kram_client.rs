// SPDX-License-Identifier: GPL-2.0
//! What both borrowers of the KRAM protocol (`unimem_kram`, `unimem_numa`) do through the
//! mailbox seam: send messages to a lender's kram-daemon, take the OFFERs, ACKs and REVOKEs of
//! their service, and keep the leases' clocks.
//!
//! Declared as `kram_client` by `borrower.rs`: names `crate::kmsg_api`, `crate::wire`,
//! `crate::gas` and `crate::mailbox`, which `client.rs` (under `borrower.rs`) provides.

use crate::{
    gas::MAX_NODES,
    kmsg_api,
    mailbox::service,
    wire::kram::{to_driver, KramMsg, BORROWER_LEASE_MS, LEASE_MS, SEQ_MOD},
};
use core::sync::atomic::{AtomicBool, AtomicI64, AtomicU8, Ordering};
use kernel::{
    ffi::c_void,
    prelude::*,
    sync::{Arc, ArcBorrow},
    time::{Instant, Monotonic},
};

#[path = "log_limit.rs"]
mod log_limit;
pub(crate) use log_limit::LogLimit;

/// Sends `msg` to the kram-daemon of `node`; a failure is logged and returned.
pub(crate) fn try_send(node: u32, msg: KramMsg) -> Result {
    // SAFETY: plain call into unimem_mailbox's exported seam.
    let ret = unsafe { kmsg_api::unimem_mbox_send(node, service::KRAM_DAEMON, msg.encode()) };
    // A lender that is down makes every renewal fail, once a second: one line when sending to
    // it starts failing and one when it works again, not a line per message.
    let failing = FAILING.get(node as usize);
    if ret != 0 {
        if failing.is_some_and(|f| !f.swap(true, Ordering::Relaxed)) {
            pr_warn!(
                "message {:#x} to node {} not sent: {}; not logging further failures to it until one goes through\n",
                msg.opcode,
                node,
                ret
            );
        }
        return Err(Error::from_errno(ret));
    }
    if failing.is_some_and(|f| f.swap(false, Ordering::Relaxed)) {
        pr_info!("messages to node {} go through again\n", node);
    }
    Ok(())
}

/// Nodes that sending to fails (for [`try_send`]'s log lines).
static FAILING: [AtomicBool; MAX_NODES as usize] =
    [const { AtomicBool::new(false) }; MAX_NODES as usize];

/// [`try_send`] where the caller has nothing better to do than the log line: the protocol
/// recovers (the daemon's offer expires, the driver asks again).
pub(crate) fn send(node: u32, msg: KramMsg) {
    let _ = try_send(node, msg);
}

/// A borrower: receives the lenders' OFFER, ACK and REVOKE messages of its service.
pub(crate) trait LenderSink: Send + Sync + Sized {
    /// Called in process context for every such message, with the node the mailbox says sent
    /// it (the word is undecoded: it comes from another node).
    fn message(this: ArcBorrow<'_, Self>, from: u32, word: u64);
}

/// # Safety
///
/// Called by unimem_mailbox in process context with the `T` registered as `ctx` by
/// [`set_handler`], which stays alive until the handler is removed.
unsafe extern "C" fn on_message<T: LenderSink>(ctx: *mut c_void, from_node: u32, word: u64) {
    // SAFETY: see above.
    let sink = unsafe { ArcBorrow::<T>::from_raw(ctx.cast::<T>()) };
    T::message(sink, from_node, word);
}

const OPCODES: [u8; 3] = [to_driver::OFFER, to_driver::ACK, to_driver::REVOKE];

fn register(
    service: u32,
    opcode: u8,
    handler: Option<kmsg_api::KmsgHandler>,
    ctx: *mut c_void,
) -> Result {
    // SAFETY: `on_message` runs in process context with `ctx` alive until removal (see
    // `set_handler`); removal passes no handler.
    let ret = unsafe { kmsg_api::unimem_mbox_register(service, u32::from(opcode), handler, ctx) };
    if ret != 0 {
        return Err(Error::from_errno(ret));
    }
    Ok(())
}

/// Routes the lender messages of `service` to `sink`; `None` removes the routes and waits for
/// running calls. The caller keeps `sink` alive until it has removed them. All or nothing.
pub(crate) fn set_handler<T: LenderSink>(service: u32, sink: Option<&Arc<T>>) -> Result {
    let Some(s) = sink else {
        for op in OPCODES {
            let _ = register(service, op, None, core::ptr::null_mut());
        }
        return Ok(());
    };
    let ctx = Arc::as_ptr(s).cast_mut().cast::<c_void>();
    for (i, op) in OPCODES.iter().enumerate() {
        if let Err(e) = register(service, *op, Some(on_message::<T>), ctx) {
            for done in &OPCODES[..i] {
                let _ = register(service, *done, None, core::ptr::null_mut());
            }
            return Err(e);
        }
    }
    Ok(())
}

/// A borrower's side of one lease (docs/KRAM-DAEMON.md): CONFIRM and every RENEW carry a
/// sequence number; an ACK of number `s` proves the lender held the range for us when the
/// message sent at `sent[s]` reached it, so the range is ours until `sent[s]` plus
/// `BORROWER_LEASE_MS`. Times are nanoseconds of an [`Epoch`]; 0 means never.
pub(crate) struct LeaseClock {
    sent: [AtomicI64; SEQ_MOD as usize],
    next: AtomicU8,
    valid_until: AtomicI64,
    revoked: AtomicBool,
}

impl LeaseClock {
    pub(crate) fn new() -> Self {
        Self {
            sent: [const { AtomicI64::new(0) }; SEQ_MOD as usize],
            next: AtomicU8::new(0),
            valid_until: AtomicI64::new(0),
            revoked: AtomicBool::new(false),
        }
    }

    /// The tag of a CONFIRM or RENEW about to be sent at `now`.
    pub(crate) fn stamp(&self, now: i64) -> u8 {
        let seq = self.next.fetch_add(1, Ordering::Relaxed) % SEQ_MOD;
        self.sent[usize::from(seq)].store(now, Ordering::Release);
        seq
    }

    /// An ACK with `tag` arrived at `now`; false if it answers nothing we sent lately.
    pub(crate) fn ack(&self, tag: u8, now: i64) -> bool {
        let Some(slot) = self.sent.get(usize::from(tag)) else {
            return false;
        };
        let sent = slot.load(Ordering::Acquire);
        // Older than a lease: the slot may since have been reused; ignore rather than guess.
        if sent == 0 || sent > now || now - sent > LEASE_NS || self.is_revoked() {
            return false;
        }
        self.valid_until
            .fetch_max(sent + BORROWER_LEASE_NS, Ordering::AcqRel);
        true
    }

    pub(crate) fn revoke(&self) {
        self.revoked.store(true, Ordering::Release);
    }

    pub(crate) fn is_revoked(&self) -> bool {
        self.revoked.load(Ordering::Acquire)
    }

    /// Whether an ACK ever made the range ours.
    #[allow(dead_code)] // `unimem_kram`'s only.
    pub(crate) fn acked(&self) -> bool {
        self.valid_until.load(Ordering::Acquire) != 0
    }

    /// Whether the range may be read or written at `now`.
    pub(crate) fn usable(&self, now: i64) -> bool {
        !self.is_revoked() && now < self.valid_until.load(Ordering::Acquire)
    }

    /// Nanoseconds of validity left at `now` (negative: expired).
    pub(crate) fn left(&self, now: i64) -> i64 {
        self.valid_until.load(Ordering::Acquire) - now
    }
}

const LEASE_NS: i64 = LEASE_MS as i64 * 1_000_000;
const BORROWER_LEASE_NS: i64 = BORROWER_LEASE_MS as i64 * 1_000_000;

/// The clock of a module's leases: nanoseconds since it loaded, plus one so that 0 is never a
/// time.
#[derive(Clone, Copy)]
pub(crate) struct Epoch(Instant<Monotonic>);

impl Epoch {
    pub(crate) fn new() -> Self {
        Self(Instant::now())
    }

    pub(crate) fn now(&self) -> i64 {
        self.0.elapsed().as_nanos() + 1
    }
}
