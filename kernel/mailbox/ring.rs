// SPDX-License-Identifier: GPL-2.0
//! Single-producer single-consumer rings in the GAS (layout: `unimem-wire` `mailbox::layout`).
//!
//! Producer and consumer run on different nodes (different VMs), so the only shared state is
//! two 32-bit indices and the consumer's polling flag, each written by one side: no
//! read-modify-write across nodes is needed.

use crate::mailbox::layout::{
    HEAD_OFFSET, POLLING, POLLING_OFFSET, RING_HEADER, SLOTS, SLOT_LEN, TAIL_OFFSET,
};
use core::{
    marker::PhantomData,
    sync::atomic::{AtomicU32, Ordering},
};

/// A ring at a fixed place in the GAS window, usable for the window access `'a` it was made in.
///
/// # Invariants
///
/// `base` points to `RING_STRIDE` bytes of the mapped GAS window, 4-byte aligned, and the
/// fabric device stays bound for `'a` (an `Access` of `fabric_client`).
#[derive(Clone, Copy)]
pub(crate) struct Ring<'a> {
    base: *mut u8,
    _access: PhantomData<&'a ()>,
}

/// The entries one receive pass may take: those published when it started (both indices read
/// once), so at most one ring's worth, however fast a peer rewrites the tail.
pub(crate) struct Pass<'a> {
    ring: Ring<'a>,
    head: u32,
    tail: u32,
}

/// A ring whose indices were more than [`SLOTS`] apart: not trusted, resynced to empty.
pub(crate) struct Resynced;

impl Pass<'_> {
    /// Copies the next entry of the pass into `out` and frees its slot; `false` when the pass
    /// has taken everything it saw. The slot may have been rewritten since: callers validate.
    pub(crate) fn next(&mut self, out: &mut [u8; SLOT_LEN]) -> bool {
        if self.head == self.tail {
            return false;
        }
        // SAFETY: `slot` is inside the ring, and the entry was published (tail read with Acquire).
        unsafe {
            core::ptr::copy_nonoverlapping(self.ring.slot(self.head), out.as_mut_ptr(), SLOT_LEN)
        };
        self.head = self.head.wrapping_add(1);
        // Our own copy of `head`, not the shared word a peer may have rewritten meanwhile.
        self.ring
            .index(HEAD_OFFSET)
            .store(self.head, Ordering::Release);
        true
    }
}

impl<'a> Ring<'a> {
    /// # Safety
    ///
    /// `base` must satisfy the type invariant for `'a`.
    pub(crate) unsafe fn new(base: *mut u8) -> Self {
        Self {
            base,
            _access: PhantomData,
        }
    }

    fn index(&self, offset: usize) -> &AtomicU32 {
        // SAFETY: `offset` is one of the three aligned header words inside the ring (invariant).
        unsafe { AtomicU32::from_ptr(self.base.add(offset).cast()) }
    }

    fn slot(&self, seq: u32) -> *mut u8 {
        // SAFETY: `seq % SLOTS` selects a slot inside the ring (invariant).
        unsafe {
            self.base
                .add(RING_HEADER + (seq % SLOTS) as usize * SLOT_LEN)
        }
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
        self.index(TAIL_OFFSET)
            .store(tail.wrapping_add(1), Ordering::Release);
        true
    }

    /// Starts a receive pass (only the receiving node calls this, serialized). Indices that
    /// cannot be right (more than [`SLOTS`] entries) are not trusted: the ring is resynced to
    /// empty at the tail just read.
    pub(crate) fn pass(&self) -> Result<Pass<'a>, Resynced> {
        let head = self.index(HEAD_OFFSET).load(Ordering::Relaxed);
        let tail = self.index(TAIL_OFFSET).load(Ordering::Acquire);
        if tail.wrapping_sub(head) > SLOTS {
            self.index(HEAD_OFFSET).store(tail, Ordering::Release);
            return Err(Resynced);
        }
        Ok(Pass {
            ring: *self,
            head,
            tail,
        })
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.index(HEAD_OFFSET).load(Ordering::Relaxed)
            == self.index(TAIL_OFFSET).load(Ordering::Acquire)
    }

    /// Forgets whatever the ring held before this receiver existed (consumer side, at load).
    /// A producer racing with this leaves impossible indices, which [`Ring::pass`] resyncs.
    pub(crate) fn reset(&self) {
        self.index(POLLING_OFFSET).store(0, Ordering::Relaxed);
        self.index(TAIL_OFFSET).store(0, Ordering::Relaxed);
        self.index(HEAD_OFFSET).store(0, Ordering::Release);
    }

    /// Consumer side: says whether the consumer busy-polls the ring.
    pub(crate) fn set_polling(&self, on: bool) {
        self.index(POLLING_OFFSET)
            .store(if on { POLLING } else { 0 }, Ordering::Release);
    }

    /// Producer side, after a push: whether the consumer said it polls the ring (then no
    /// doorbell is needed). Orders the push before the read of the flag, which pairs with the
    /// consumer's clearing of the flag and its last look at the ring (`poll.rs`).
    pub(crate) fn consumer_polling(&self) -> bool {
        core::sync::atomic::fence(Ordering::SeqCst);
        self.index(POLLING_OFFSET).load(Ordering::Relaxed) == POLLING
    }

    /// Drops every queued entry (consumer side) and returns how many there were (at most
    /// [`SLOTS`], whatever the indices say).
    pub(crate) fn discard(&self) -> u32 {
        let tail = self.index(TAIL_OFFSET).load(Ordering::Acquire);
        let head = self.index(HEAD_OFFSET).swap(tail, Ordering::AcqRel);
        tail.wrapping_sub(head).min(SLOTS)
    }
}
