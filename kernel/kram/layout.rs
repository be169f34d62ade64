// SPDX-License-Identifier: GPL-2.0
//! Where an instance's bytes are: the lenders' leases, placed as parts of one copy or, with
//! `mirror=1`, of two; shared by the driver, which adds and replaces parts, and the disk, which
//! reads and writes through them (`io.rs`).

use crate::kram_client::LeaseClock;
use crate::wire::kram::CHUNK_SIZE;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use kernel::{
    new_spinlock,
    prelude::*,
    sync::{Arc, SpinLock},
};

/// One lender's part of an instance: its chunks `first_chunk..first_chunk + chunks`, at
/// window offset `offset` (inside `node`'s partition: `lent_range` checked it), and the lease
/// that says whether this node may use them. An offset, not an address: an address into the
/// window is made only under a window access (`Io`), which the window cannot be revoked under.
pub(crate) struct Lease {
    pub(crate) node: u32,
    pub(crate) first_chunk: u32,
    pub(crate) chunks: u32,
    pub(crate) offset: u64,
    pub(crate) clock: LeaseClock,
    /// Missed a write its mirror took, or its lender's memory went away: never read again.
    lost: AtomicBool,
}

impl Lease {
    pub(crate) fn new(node: u32, first_chunk: u32, chunks: u32, offset: u64) -> Self {
        Self {
            node,
            first_chunk,
            chunks,
            offset,
            clock: LeaseClock::new(),
            lost: AtomicBool::new(false),
        }
    }

    pub(crate) fn len(&self) -> u64 {
        u64::from(self.chunks) * CHUNK_SIZE
    }

    pub(crate) fn lose(&self) {
        self.lost.store(true, Ordering::Release);
    }

    pub(crate) fn is_lost(&self) -> bool {
        self.lost.load(Ordering::Acquire)
    }
}

/// A lease placed at `offset` of the disk in one copy. A `syncing` part (a replacement for a
/// lost one) takes writes but serves no read until the mirror has been copied into it.
pub(crate) struct Part {
    pub(crate) offset: u64,
    pub(crate) lease: Arc<Lease>,
    pub(crate) syncing: bool,
}

impl Part {
    pub(crate) fn end(&self) -> u64 {
        self.offset + self.lease.len()
    }

    pub(crate) fn holds(&self, at: u64) -> bool {
        self.offset <= at && at < self.end()
    }

    /// The window offset of disk byte `at`, which the part holds.
    pub(crate) fn window_offset(&self, at: u64) -> u64 {
        self.lease.offset + (at - self.offset)
    }
}

/// Where an instance's bytes are: one copy, or two with `mirror=1`; each copy its parts in
/// disk order, with holes where a part was lost and not replaced yet.
pub(crate) struct Layout {
    pub(crate) copies: [KVec<Part>; 2],
    pub(crate) ncopies: usize,
}

impl Layout {
    pub(crate) fn part(&self, copy: usize, at: u64) -> Option<&Part> {
        self.copies[copy].iter().find(|p| p.holds(at))
    }

    /// Every part of every copy.
    pub(crate) fn parts(&self) -> impl Iterator<Item = &Part> {
        self.copies.iter().flat_map(|c| c.iter())
    }

    /// Bytes of copy `c` that have a part.
    pub(crate) fn covered(&self, c: usize) -> u64 {
        self.copies[c].iter().map(|p| p.lease.len()).sum()
    }

    /// The first bytes below `size` that no part of copy `c` holds, as `(start, end)`.
    pub(crate) fn first_gap(&self, c: usize, size: u64) -> Option<(u64, u64)> {
        let mut at = 0;
        for p in self.copies[c].iter() {
            if p.offset > at {
                return Some((at, p.offset.min(size)));
            }
            at = at.max(p.offset + p.lease.len());
        }
        (at < size).then_some((at, size))
    }

    /// Inserts `part` into copy `c` in disk order.
    pub(crate) fn insert(&mut self, c: usize, part: Part) -> Result {
        let at = self.copies[c]
            .iter()
            .position(|p| p.offset > part.offset)
            .unwrap_or(self.copies[c].len());
        // Under the layout's spinlock: no sleeping allocation.
        self.copies[c].reserve(1, GFP_ATOMIC)?;
        self.copies[c]
            .insert_within_capacity(at, part)
            .map_err(|_| EINVAL)
    }
}

/// The layout shared by the driver (which replaces lost parts) and the disk (which reads and
/// writes through it); the lock also orders writes against the copying of a mirror.
#[pin_data]
pub(crate) struct Shared {
    #[pin]
    pub(crate) layout: SpinLock<Layout>,
    /// Reads served by the second copy because the first could not serve them.
    pub(crate) failovers: AtomicU64,
}

impl Shared {
    pub(crate) fn new(ncopies: usize) -> Result<Arc<Self>> {
        Arc::pin_init(
            pin_init!(Shared {
                layout <- new_spinlock!(Layout { copies: [KVec::new(), KVec::new()], ncopies }, "unimem_kram::layout"),
                failovers: AtomicU64::new(0),
            }),
            GFP_KERNEL,
        )
    }
}
