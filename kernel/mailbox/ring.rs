// SPDX-License-Identifier: GPL-2.0
//! Single-producer single-consumer rings in the GAS (layout: `unimem-wire` `mailbox::layout`).
//!
//! Producer and consumer run on different nodes (different VMs), so the only shared state is
//! two 32-bit indices, each written by one side: no read-modify-write across nodes is needed.

use crate::mailbox::layout::{HEAD_OFFSET, RING_HEADER, SLOTS, SLOT_LEN, TAIL_OFFSET};
use core::sync::atomic::{AtomicU32, Ordering};

/// A ring at a fixed place in the GAS window.
///
/// # Invariants
///
/// `base` points to `RING_STRIDE` bytes of the mapped GAS window, valid while the fabric device
/// is bound (guaranteed by the module's dependency on `unimem_eusrvmem`) and 4-byte aligned.
#[derive(Clone, Copy)]
pub(crate) struct Ring {
    base: *mut u8,
}

/// Outcome of [`Ring::pop`].
pub(crate) enum Pop {
    Empty,
    Item,
    /// The indices were inconsistent (corrupted memory); the ring was reset and this many
    /// entries were discarded.
    Corrupt(u32),
}

impl Ring {
    /// # Safety
    ///
    /// `base` must satisfy the type invariant.
    pub(crate) unsafe fn new(base: *mut u8) -> Self {
        Self { base }
    }

    fn index(&self, offset: usize) -> &AtomicU32 {
        // SAFETY: `offset` is one of the two aligned index words inside the ring (invariant).
        unsafe { AtomicU32::from_ptr(self.base.add(offset).cast()) }
    }

    fn slot(&self, seq: u32) -> *mut u8 {
        // SAFETY: `seq % SLOTS` selects a slot inside the ring (invariant).
        unsafe { self.base.add(RING_HEADER + (seq % SLOTS) as usize * SLOT_LEN) }
    }

    /// Appends `item` (at most `SLOT_LEN` bytes); `false` when the ring is full.
    /// Callers on one node serialize (one producer per ring).
    pub(crate) fn push(&self, item: &[u8]) -> bool {
        let tail = self.index(TAIL_OFFSET).load(Ordering::Relaxed);
        let head = self.index(HEAD_OFFSET).load(Ordering::Acquire);
        if tail.wrapping_sub(head) >= SLOTS {
            return false;
        }
        let len = item.len().min(SLOT_LEN);
        // SAFETY: the slot is free (the consumer has moved past it) and inside the ring.
        unsafe { core::ptr::copy_nonoverlapping(item.as_ptr(), self.slot(tail), len) };
        self.index(TAIL_OFFSET).store(tail.wrapping_add(1), Ordering::Release);
        true
    }

    /// Takes the oldest entry into `out`. Only the receiving node calls this, serialized.
    pub(crate) fn pop(&self, out: &mut [u8; SLOT_LEN]) -> Pop {
        let head = self.index(HEAD_OFFSET).load(Ordering::Relaxed);
        let tail = self.index(TAIL_OFFSET).load(Ordering::Acquire);
        let used = tail.wrapping_sub(head);
        if used == 0 {
            return Pop::Empty;
        }
        if used > SLOTS {
            self.index(HEAD_OFFSET).store(tail, Ordering::Release);
            return Pop::Corrupt(used);
        }
        // SAFETY: the slot holds a published entry (tail was loaded with Acquire).
        unsafe { core::ptr::copy_nonoverlapping(self.slot(head), out.as_mut_ptr(), SLOT_LEN) };
        self.index(HEAD_OFFSET).store(head.wrapping_add(1), Ordering::Release);
        Pop::Item
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.index(HEAD_OFFSET).load(Ordering::Relaxed) == self.index(TAIL_OFFSET).load(Ordering::Acquire)
    }

    /// Forgets whatever the ring held before this receiver existed (consumer side, at load).
    /// A producer racing with this leaves impossible indices, which `pop` repairs.
    pub(crate) fn reset(&self) {
        self.index(TAIL_OFFSET).store(0, Ordering::Relaxed);
        self.index(HEAD_OFFSET).store(0, Ordering::Release);
    }

    /// Drops every queued entry (consumer side) and returns how many there were.
    pub(crate) fn discard(&self) -> u32 {
        let tail = self.index(TAIL_OFFSET).load(Ordering::Acquire);
        let head = self.index(HEAD_OFFSET).swap(tail, Ordering::AcqRel);
        tail.wrapping_sub(head).min(SLOTS)
    }
}
