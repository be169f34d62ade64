// SPDX-License-Identifier: GPL-2.0
//! The node's totals, counted by every part of the state and shown in
//! `/sys/kernel/unimem_mailbox/` (`sysfs.rs`) and debugfs (`stats.rs`).

use core::sync::atomic::AtomicU64;

/// Node-wide counters, shown in `/sys/kernel/unimem_mailbox/`.
#[derive(Default)]
pub(crate) struct Counters {
    /// Polling windows entered, and packets served while polling (`poll.rs`).
    pub(crate) busy_polls: AtomicU64,
    pub(crate) busy_poll_packets: AtomicU64,
    /// Doorbells this node did not ring because the destination polled the ring.
    pub(crate) doorbells_skipped: AtomicU64,
    /// `KICK`s and full-ring `SEND`s whose doorbell waited for `doorbell_rate`.
    pub(crate) doorbells_throttled: AtomicU64,
    /// Ring entries rejected on receipt (bad header, wrong sender).
    pub(crate) malformed: AtomicU64,
    /// Receive rings found with impossible indices (more than a ring's worth queued) and reset.
    pub(crate) resynced: AtomicU64,
    /// Requests taken from submission slots, and `KICK`s this node's threads asked for.
    pub(crate) submitted: AtomicU64,
    pub(crate) kicks: AtomicU64,
    /// Sleeps of this node's threads for a GSAS answer (`WAIT_ANSWER`).
    pub(crate) answer_sleeps: AtomicU64,
    /// `ALLOC`s refused because every free interface still had a previous owner's request
    /// applied somewhere, and because no fresh tree id was found (`owners.rs`).
    pub(crate) quarantined: AtomicU64,
    pub(crate) trees_exhausted: AtomicU64,
}
