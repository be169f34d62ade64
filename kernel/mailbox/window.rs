// SPDX-License-Identifier: GPL-2.0
//! Where the mailbox's shared memory lies in the GAS window: this node and its peers'
//! partitions, the rings in each partition's reserved start (`mailbox::layout`), and single
//! words of the partitions (owner tables, submission slots). Also the module's clock and the
//! limit on warnings that peers cause by what they write there.
//!
//! Every other part of the state reaches the window through this one, by reference.

use crate::{
    fabric_client::{Access, Gas},
    gsas::owner,
    log_limit::LogLimit,
    mailbox::{layout, DOORBELL_VECTOR, INTERFACES},
    ring::Ring,
};
use core::sync::atomic::{AtomicU32, AtomicU64};
use kernel::{
    prelude::*,
    sync::Arc,
    time::{Instant, Monotonic},
};

pub(crate) struct Window {
    pub(crate) node: u32,
    pub(crate) nodes: u32,
    gas: Arc<Gas>,
    ctl_size: usize,
    partition_size: usize,
    /// Peer-caused warnings; the counters count everything.
    noisy: LogLimit,
    epoch: Instant<Monotonic>,
}

impl Window {
    /// The window of `gas`, if its partitions hold the rings and the owner table and it has
    /// the doorbell vector.
    pub(crate) fn new(gas: Arc<Gas>) -> Result<Self> {
        let info = *gas.info();
        // The rings, then the interfaces' GSAS areas (mapped into their threads).
        let reserved = (layout::RESERVED as u64).max(owner::TABLE_END);
        let partitions_end = u64::from(info.node_count)
            .checked_mul(info.partition_size)
            .and_then(|p| p.checked_add(info.ctl_size));
        if info.partition_size < reserved
            || partitions_end.is_none_or(|end| end > info.gas_size)
            || info.node_count == 0
            || info.node_count > crate::gas::MAX_NODES
            || info.vectors <= DOORBELL_VECTOR
        {
            pr_err!(
                "fabric unusable: partitions of {} bytes (need {}), {} doorbell vectors (need {}), {} nodes (1 to {})\n",
                info.partition_size,
                reserved,
                info.vectors,
                DOORBELL_VECTOR + 1,
                info.node_count,
                crate::gas::MAX_NODES
            );
            return Err(EINVAL);
        }
        Ok(Self {
            node: info.node_id,
            nodes: info.node_count,
            gas,
            ctl_size: info.ctl_size as usize,
            partition_size: info.partition_size as usize,
            noisy: LogLimit::new(),
            epoch: Instant::now(),
        })
    }

    pub(crate) fn gas(&self) -> &Arc<Gas> {
        &self.gas
    }

    /// Whether the fabric device is gone (every ioctl then fails with `ENODEV`).
    pub(crate) fn gone(&self) -> bool {
        self.gas.access().is_none()
    }

    /// Nanoseconds since the module's epoch.
    pub(crate) fn now_ns(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(0)
    }

    /// Whether a warning a peer caused may be logged now (at a limited rate).
    pub(crate) fn warn_peer(&self) -> bool {
        self.noisy.allow(self.epoch.elapsed().as_nanos())
    }

    /// The kernel address of byte `offset` of node `node`'s partition, for callers that pass
    /// `node < nodes` and an offset inside the reserved start of a partition (`RESERVED` and
    /// the owner table end below `partition_size`, and the partitions lie inside the window:
    /// checked in `new`); usable while `w` lives.
    pub(crate) fn part_ptr(&self, w: &Access<'_>, node: u32, offset: usize) -> *mut u8 {
        let part = self.ctl_size + node as usize * self.partition_size;
        // Computing the address is safe; whoever dereferences it relies on the bounds above.
        w.base().wrapping_add(part + offset)
    }

    /// The word at partition offset `offset` of node `node`: every caller passes `node < nodes`
    /// and an aligned offset below `owner::TABLE_END` (`part_ptr`).
    pub(crate) fn part_word<T>(&self, w: &Access<'_>, node: u32, offset: u64) -> *mut T {
        self.part_ptr(w, node, offset as usize).cast()
    }

    pub(crate) fn word64<'a>(&self, w: &'a Access<'_>, node: u32, offset: u64) -> &'a AtomicU64 {
        // SAFETY: an 8-byte aligned word of the mapped window (`part_word`), valid while `w`
        // lives; other nodes access it only with aligned loads and stores too.
        unsafe { AtomicU64::from_ptr(self.part_word(w, node, offset)) }
    }

    pub(crate) fn word32<'a>(&self, w: &'a Access<'_>, node: u32, offset: u64) -> &'a AtomicU32 {
        // SAFETY: as in `word64`, 4-byte aligned.
        unsafe { AtomicU32::from_ptr(self.part_word(w, node, offset)) }
    }

    fn ring_at<'a>(&self, w: &'a Access<'_>, node: u32, offset: usize) -> Ring<'a> {
        // SAFETY: `node < nodes` at every caller and `offset + RING_STRIDE <= RESERVED`, so the
        // ring lies inside the partition (`part_ptr`), which `w` keeps usable.
        unsafe { Ring::new(self.part_ptr(w, node, offset)) }
    }

    /// Ring of `iface` on node `dest` that this node's `sender` feeds.
    pub(crate) fn packet_ring<'a>(
        &self,
        w: &'a Access<'_>,
        dest: u32,
        iface: u32,
        sender: u32,
    ) -> Ring<'a> {
        self.ring_at(w, dest, layout::packet_ring(iface, sender))
    }

    pub(crate) fn kmsg_ring<'a>(&self, w: &'a Access<'_>, dest: u32, sender: u32) -> Ring<'a> {
        self.ring_at(w, dest, layout::kmsg_ring(sender))
    }

    /// Empties every ring of this node's partition. Rings there may hold anything: a previous
    /// run's entries, or bytes a privileged tool wrote there.
    pub(crate) fn reset_rings(&self, w: &Access<'_>) {
        for sender in 0..self.nodes {
            for iface in 0..INTERFACES {
                self.packet_ring(w, self.node, iface, sender).reset();
            }
            self.kmsg_ring(w, self.node, sender).reset();
        }
    }

    /// Whether packets wait in any ring of local interface `id`.
    pub(crate) fn queued(&self, w: &Access<'_>, id: u32) -> bool {
        (0..self.nodes).any(|s| !self.packet_ring(w, self.node, id, s).is_empty())
    }

    /// Whether kernel messages wait in any of this node's kernel-message rings.
    pub(crate) fn kmsgs_queued(&self, w: &Access<'_>) -> bool {
        (0..self.nodes).any(|s| !self.kmsg_ring(w, self.node, s).is_empty())
    }
}
