// SPDX-License-Identifier: GPL-2.0
//! The block device of one instance: requests copied to and from the lent memory in the GAS.

use kernel::{
    block::mq::{self, Command, Operations, Request},
    prelude::*,
    sync::aref::ARef,
};

/// How data moves between bio pages and the GAS (`transfermode`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Transfer {
    /// Copy in `queue_rq` and end the request there.
    Memcpy,
    /// The emulated CDMA engine: the copy is done and the request is completed through blk-mq's
    /// asynchronous completion path (softirq or IPI), the way an engine's completion interrupt
    /// would. No x86 QEMU machine offers a dmaengine `DMA_MEMCPY` channel to use instead.
    Cdma,
}

/// The lent memory an instance's disk reads and writes.
///
/// # Invariants
///
/// `base` points to `len` bytes of the mapped GAS window lent to this node; the lease outlives
/// the disk (the disk is deleted before the lease is freed).
pub(crate) struct Backing {
    pub(crate) base: *mut u8,
    pub(crate) len: u64,
    pub(crate) transfer: Transfer,
}

// SAFETY: `base` is plain shared memory valid for the disk's life (type invariant); blk-mq
// serializes nothing for us, but requests to overlapping sectors are the block layer's to order.
unsafe impl Send for Backing {}
// SAFETY: see `Send`.
unsafe impl Sync for Backing {}

pub(crate) struct KramDisk;

impl Backing {
    fn serve(&self, rq: &Request<KramDisk>) -> Result {
        let start = rq.sector().checked_mul(512).ok_or(EIO)?;
        let end = start.checked_add(u64::from(rq.bytes())).ok_or(EIO)?;
        if end > self.len {
            return Err(EIO);
        }
        // SAFETY: `[start, end)` lies within the backing memory (checked above, invariant).
        let mut at = unsafe { self.base.add(start as usize) };
        match rq.command() {
            Command::Read => rq.for_each_segment(|seg| {
                // SAFETY: `at` has `seg.len()` bytes left inside `[start, end)`: the segments
                // of a request add up to its byte count.
                unsafe { seg.copy_from(at) };
                // SAFETY: stays within or one past the end of `[start, end)`.
                at = unsafe { at.add(seg.len()) };
                Ok(())
            }),
            Command::Write => rq.for_each_segment(|seg| {
                // SAFETY: as for reads.
                unsafe { seg.copy_to(at) };
                // SAFETY: as for reads.
                at = unsafe { at.add(seg.len()) };
                Ok(())
            }),
            // Lent memory has no volatile cache of ours to write back.
            Command::Flush => Ok(()),
            Command::Discard | Command::WriteZeroes => {
                // SAFETY: `[start, end)` is inside the backing memory.
                unsafe { core::ptr::write_bytes(at, 0, (end - start) as usize) };
                Ok(())
            }
            Command::Other(_) => Err(EOPNOTSUPP),
        }
    }
}

fn finish(rq: ARef<Request<KramDisk>>, result: Result) {
    if Request::end(rq, result).is_err() {
        // Only possible if someone kept an extra reference; the request cannot be ended twice.
        pr_err!("request still referenced, not completed\n");
    }
}

#[vtable]
impl Operations for KramDisk {
    type QueueData = KBox<Backing>;

    fn queue_rq(backing: &Backing, rq: ARef<Request<Self>>, _is_last: bool) -> Result {
        let result = backing.serve(&rq);
        match (backing.transfer, result) {
            (Transfer::Cdma, Ok(())) => mq::Request::complete(rq),
            (_, result) => finish(rq, result),
        }
        Ok(())
    }

    fn commit_rqs(_backing: &Backing) {}

    fn complete(rq: ARef<Request<Self>>) {
        finish(rq, Ok(()));
    }
}
