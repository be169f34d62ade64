// SPDX-License-Identifier: GPL-2.0
//! One mailbox/packetizer interface pair: who owns it, what its packetizer stamps on packets,
//! and its counters.

use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use kernel::{
    new_poll_condvar, new_spinlock_irq,
    prelude::*,
    sync::{poll::PollCondVar, SpinLockIrq},
};

/// The packetizer's programming: only the driver sets it.
#[derive(Clone, Copy, Default)]
pub(crate) struct Owner {
    pub(crate) thread_id: i32,
    pub(crate) prot_id: u32,
}

#[pin_data]
pub(crate) struct Iface {
    /// `Some` while a thread holds the pair. Also the lock receivers sleep on, so the doorbell
    /// handler's wake-up cannot slip between a receiver's check and its sleep.
    #[pin]
    pub(crate) owner: SpinLockIrq<Option<Owner>>,
    #[pin]
    pub(crate) wait: PollCondVar,
    /// Mirrors `owner.is_some()` for the doorbell handler's quick scan.
    pub(crate) in_use: AtomicBool,
    /// Set while the holder sleeps in `WAIT_ANSWER` (`answer_wait.rs`): every doorbell wakes it.
    pub(crate) answer_wait: AtomicBool,
    /// Counts the allocations of this pair (from a random start): with the interface number it
    /// names one owner, so a lock left by a dead thread is not taken for a later owner's
    /// (`unimem_mbox_iface_state`).
    pub(crate) generation: AtomicU32,
    pub(crate) sent: AtomicU64,
    pub(crate) received: AtomicU64,
    /// Sends refused because the destination queue was full (the sender got `EAGAIN`).
    pub(crate) rejected: AtomicU64,
    /// Packets discarded: stale ones left by a previous owner, or malformed ones.
    pub(crate) dropped: AtomicU64,
    /// The owner-table publications of the current (or last) owner: the first in the high
    /// half, the latest in the low half; 0 until the first owner. A home's claim on this
    /// interface is one of its owners' only if its publication lies in that window, so bytes
    /// scribbled over a claim table cannot hold an interface back (`owners.rs`).
    pub(crate) published: AtomicU64,
}

impl Iface {
    pub(crate) fn new(generation: u32) -> impl PinInit<Self> {
        pin_init!(Self {
            owner <- new_spinlock_irq!(None, "unimem_mailbox::iface"),
            wait <- new_poll_condvar!("unimem_mailbox::iface_wait"),
            in_use: AtomicBool::new(false),
            answer_wait: AtomicBool::new(false),
            generation: AtomicU32::new(generation),
            sent: AtomicU64::new(0),
            received: AtomicU64::new(0),
            rejected: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            published: AtomicU64::new(0),
        })
    }

    pub(crate) fn count(c: &AtomicU64) {
        c.fetch_add(1, Ordering::Relaxed);
    }
}
