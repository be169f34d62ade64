// SPDX-License-Identifier: GPL-2.0
//! The block device of one instance: requests copied to and from the lent memory in the GAS,
//! only while the leases are valid.

use crate::kram_client::{Epoch, LeaseClock};
use crate::wire::kram::CHUNK_SIZE;
use kernel::{
    block::mq::{self, Command, Operations, Request, Segment},
    prelude::*,
    sync::{aref::ARef, Arc},
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

/// One lender's part of an instance: its chunks `first_chunk..first_chunk + chunks`, mapped
/// at `base`, and the lease that says whether this node may use them.
///
/// # Invariants
///
/// `base` points to `chunks` MiB of the mapped GAS window, inside `node`'s partition.
pub(crate) struct Lease {
    pub(crate) node: u32,
    pub(crate) first_chunk: u32,
    pub(crate) chunks: u32,
    pub(crate) base: *mut u8,
    pub(crate) clock: LeaseClock,
}

// SAFETY: `base` is plain shared memory valid while the module is loaded (type invariant); the
// lease state is atomic.
unsafe impl Send for Lease {}
// SAFETY: see `Send`.
unsafe impl Sync for Lease {}

impl Lease {
    pub(crate) fn len(&self) -> u64 {
        u64::from(self.chunks) * CHUNK_SIZE
    }
}

/// The lent memory an instance's disk reads and writes: its leases one after the other
/// (striped over lenders, as Infiniswap spreads its slabs).
///
/// # Invariants
///
/// The parts' `(offset, lease)` are in order of `offset`, contiguous from 0, and add up to
/// `len`; the leases outlive the disk (it is deleted before they are freed).
pub(crate) struct Backing {
    pub(crate) parts: KVec<(u64, Arc<Lease>)>,
    pub(crate) len: u64,
    pub(crate) transfer: Transfer,
    pub(crate) epoch: Epoch,
}

pub(crate) struct KramDisk;

/// Where device bytes `[at, at + len)` lie, if one usable lease holds them all.
fn locate(b: &Backing, at: u64, len: usize, now: i64) -> Result<Option<*mut u8>> {
    let Some((offset, lease)) = b.parts.iter().rev().find(|(o, _)| *o <= at) else {
        return Err(EIO);
    };
    if !lease.clock.usable(now) {
        // Not renewed in time or revoked: the lender may have given it to someone else.
        return Err(EIO);
    }
    let within = at - offset;
    if within + len as u64 > lease.len() {
        return Ok(None);
    }
    // SAFETY: `within + len` is inside the lease's mapped chunks (checked above, invariant).
    Ok(Some(unsafe { lease.base.add(within as usize) }))
}

/// Copies `len` bytes between device offset `at` and `buf` one lease at a time: a segment of a
/// request whose buffer is not page aligned can straddle two leases.
fn copy_split(b: &Backing, mut at: u64, buf: &mut [u8], write: bool, now: i64) -> Result {
    let mut done = 0;
    while done < buf.len() {
        let (offset, lease) = b.parts.iter().rev().find(|(o, _)| *o <= at).ok_or(EIO)?;
        if !lease.clock.usable(now) {
            return Err(EIO);
        }
        let within = at - offset;
        let n = ((lease.len() - within) as usize).min(buf.len() - done);
        // SAFETY: `[within, within + n)` lies inside the lease's mapped chunks.
        let gas = unsafe { lease.base.add(within as usize) };
        // SAFETY: `gas` is valid for `n` bytes (above) and does not overlap the local buffer.
        unsafe {
            if write {
                core::ptr::copy_nonoverlapping(buf.as_ptr().add(done), gas, n)
            } else {
                core::ptr::copy_nonoverlapping(gas, buf.as_mut_ptr().add(done), n)
            }
        };
        done += n;
        at += n as u64;
    }
    Ok(())
}

impl Backing {
    fn segment(&self, seg: &Segment<'_>, at: u64, write: bool, now: i64) -> Result {
        match locate(self, at, seg.len(), now)? {
            // SAFETY: `gas` is valid for `seg.len()` bytes of the lease (`locate`), which is
            // not the segment's page.
            Some(gas) => unsafe {
                if write {
                    seg.copy_to(gas)
                } else {
                    seg.copy_from(gas)
                }
            },
            None => {
                // Rare (misaligned direct I/O across a lease boundary): bounce.
                let mut bounce = KVec::from_elem(0u8, seg.len(), GFP_ATOMIC)?;
                if write {
                    // SAFETY: `bounce` has `seg.len()` bytes.
                    unsafe { seg.copy_to(bounce.as_mut_ptr()) };
                    copy_split(self, at, &mut bounce, true, now)?;
                } else {
                    copy_split(self, at, &mut bounce, false, now)?;
                    // SAFETY: as above.
                    unsafe { seg.copy_from(bounce.as_ptr()) };
                }
            }
        }
        Ok(())
    }

    fn zero(&self, start: u64, end: u64, now: i64) -> Result {
        let mut at = start;
        while at < end {
            let (offset, lease) = self.parts.iter().rev().find(|(o, _)| *o <= at).ok_or(EIO)?;
            if !lease.clock.usable(now) {
                return Err(EIO);
            }
            let within = at - offset;
            let n = (lease.len() - within).min(end - at);
            // SAFETY: `[within, within + n)` lies inside the lease's mapped chunks.
            unsafe { core::ptr::write_bytes(lease.base.add(within as usize), 0, n as usize) };
            at += n;
        }
        Ok(())
    }

    fn serve(&self, rq: &Request<KramDisk>) -> Result {
        let start = rq.sector().checked_mul(512).ok_or(EIO)?;
        let end = start.checked_add(u64::from(rq.bytes())).ok_or(EIO)?;
        if end > self.len {
            return Err(EIO);
        }
        let now = self.epoch.now();
        let mut at = start;
        let mut each = |write| {
            rq.for_each_segment(|seg| {
                self.segment(seg, at, write, now)?;
                at += seg.len() as u64;
                Ok(())
            })
        };
        match rq.command() {
            Command::Read => each(false),
            Command::Write => each(true),
            // Lent memory has no volatile cache of ours to write back.
            Command::Flush => Ok(()),
            Command::Discard | Command::WriteZeroes => self.zero(start, end, now),
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
