// SPDX-License-Identifier: GPL-2.0
//! How a request reaches the lent memory: under the layout's lock and with the window usable,
//! read from the first copy that can serve, write to every copy, wait for a stalled lease;
//! the CPU's copying of a request, and the copying of a mirror into a replacement part.

use crate::disk::{Backing, Fabric, Work};
use crate::fabric_client::Access;
use crate::kram_client::Epoch;
use crate::layout::{Layout, Lease, Part, Shared};
use core::sync::atomic::Ordering;
use kernel::{
    block::mq::{Command, Segment},
    prelude::*,
};

/// Why a request was not served: an explicit "try again shortly", apart from the errors that
/// end it (which `ENOMEM` used to stand for as well).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NotServed {
    /// Nothing of it is to be trusted as done; serve it again shortly: a lease it needs is
    /// stalled (its lender may still acknowledge it), or there was no memory for a bounce
    /// buffer.
    Later,
    /// It failed.
    Failed(Error),
}

impl From<Error> for NotServed {
    fn from(e: Error) -> Self {
        Self::Failed(e)
    }
}

impl NotServed {
    /// The error a request reports when it ends now: `ENOMEM` for `Later` (blk-mq's and the
    /// block layer's "resource" status, which makes the submitter try again).
    pub(crate) fn error(self) -> Error {
        match self {
            Self::Later => ENOMEM,
            Self::Failed(e) => e,
        }
    }
}

// Here rather than with the lease (`layout.rs`): they judge it at the instant of a request's
// view of the layout.
impl Lease {
    /// Whether a request must wait for this lease rather than fail: it was ours, its lender
    /// is not lost and has not revoked it, but no ACK came in time (the lender's daemon or VM
    /// is restarting; the lender keeps the loan for `LEASE_MS` after our last RENEW and
    /// restores it from its record), for less than `max_stall_ns` (`stall_timeout`).
    fn stalled(&self, io: &Io<'_>, max_stall_ns: i64) -> bool {
        let lapsed = -self.clock.left(io.now);
        self.clock.acked()
            && !self.clock.is_revoked()
            && !self.is_lost()
            && !io.lost(self.node)
            && lapsed > 0
            && lapsed < max_stall_ns
    }

    /// Whether this node may touch the chunks now.
    fn ok(&self, io: &Io<'_>) -> bool {
        !self.is_lost() && self.clock.usable(io.now) && !io.lost(self.node)
    }
}

/// One request's view of the layout, with its lock held and the window usable.
pub(crate) struct Io<'a> {
    l: &'a Layout,
    shared: &'a Shared,
    now: i64,
    window: Access<'a>,
}

impl Io<'_> {
    fn lost(&self, node: u32) -> bool {
        self.window.node_lost(node)
    }

    /// The kernel address of the `k` bytes of part `p` from disk byte `pos`, valid while this
    /// request's window access lives (`None` outside the window: not for a lent range).
    pub(crate) fn ptr(&self, p: &Part, pos: u64, k: usize) -> Option<*mut u8> {
        self.window.ptr(p.window_offset(pos), k as u64)
    }

    fn readable(&self, p: &Part) -> bool {
        !p.syncing && p.lease.ok(self)
    }

    /// Reads `n` bytes at disk offset `at` from the first copy that can serve them, one part at
    /// a time: `put(src, done, k)` takes the `k` bytes at `src` (GAS memory) for bytes
    /// `done..done + k`. A copy whose lender is found lost after the copy does not count (the
    /// bytes may be poison): its part is marked lost and the next copy is tried.
    pub(crate) fn read(
        &self,
        at: u64,
        n: usize,
        mut put: impl FnMut(*const u8, usize, usize),
    ) -> Result {
        let mut done = 0usize;
        while done < n {
            let pos = at + done as u64;
            let mut served = false;
            for c in 0..self.l.ncopies {
                let Some(p) = self.l.part(c, pos).filter(|p| self.readable(p)) else {
                    continue;
                };
                let k = ((p.end() - pos) as usize).min(n - done);
                // `p` holds `[pos, pos + k)` (`part`, `end`).
                let Some(src) = self.ptr(p, pos, k) else {
                    continue;
                };
                put(src, done, k);
                if self.lost(p.lease.node) {
                    p.lease.lose();
                    continue;
                }
                if c > 0 {
                    self.shared.failovers.fetch_add(1, Ordering::Relaxed);
                }
                done += k;
                served = true;
                break;
            }
            if !served {
                return Err(EIO);
            }
        }
        Ok(())
    }

    /// Writes `n` bytes at disk offset `at` in every copy, one piece at a time:
    /// `get(dst, done, k)` fills the `k` bytes at `dst` (GAS memory) with bytes `done..done + k`.
    /// Each byte must reach at least one intact part. A part that was usable once and misses
    /// the write is stale: it is marked lost (the driver replaces it from the mirror).
    pub(crate) fn write(
        &self,
        at: u64,
        n: usize,
        mut get: impl FnMut(*mut u8, usize, usize),
    ) -> Result {
        let mut done = 0usize;
        while done < n {
            let pos = at + done as u64;
            // The piece ends where the first part of any copy ends.
            let mut k = n - done;
            for c in 0..self.l.ncopies {
                if let Some(p) = self.l.part(c, pos) {
                    k = k.min((p.end() - pos) as usize);
                }
            }
            let mut stored = false;
            for c in 0..self.l.ncopies {
                let Some(p) = self.l.part(c, pos) else {
                    continue;
                };
                if p.lease.ok(self) {
                    // `p` holds `[pos, pos + k)`.
                    if let Some(dst) = self.ptr(p, pos, k) {
                        get(dst, done, k);
                        stored |= !p.syncing;
                    }
                } else if self.l.ncopies > 1 && p.lease.clock.acked() {
                    p.lease.lose();
                }
            }
            if !stored {
                return Err(EIO);
            }
            done += k;
        }
        Ok(())
    }

    /// Whether the request over `[start, end)` must be retried later: some piece of it has no
    /// usable copy but one whose lease is only stalled (for less than `max_stall_ns`). Checked
    /// before anything is copied.
    fn stalled(&self, start: u64, end: u64, max_stall_ns: i64) -> bool {
        let mut pos = start;
        while pos < end {
            let (mut ok, mut stalled, mut next) = (false, false, end);
            for c in 0..self.l.ncopies {
                if let Some(p) = self.l.part(c, pos) {
                    if !ok {
                        ok = p.lease.ok(self);
                        // Only a piece no copy can take waits for a stalled lease.
                        stalled |= !ok && p.lease.stalled(self, max_stall_ns);
                    }
                    next = next.min(p.end());
                }
            }
            if !ok && stalled {
                return true;
            }
            if next <= pos {
                break;
            }
            pos = next;
        }
        false
    }

    /// Zeroes `[start, end)` in every copy.
    fn zero(&self, start: u64, end: u64) -> Result {
        self.write(start, (end - start) as usize, |dst, _, k| {
            // SAFETY: `write` hands out `k` bytes of a part it holds.
            unsafe { core::ptr::write_bytes(dst, 0, k) }
        })
    }

    /// The lenders (a bit per node) whose parts hold disk byte `at`, in any copy.
    pub(crate) fn nodes_at(&self, at: u64) -> u64 {
        (0..self.l.ncopies)
            .filter_map(|c| self.l.part(c, at))
            .fold(0, |m, p| m | 1u64.checked_shl(p.lease.node).unwrap_or(0))
    }

    /// Whether no copy has a part boundary inside `[at, at + n)`.
    pub(crate) fn within_parts(&self, at: u64, n: usize) -> bool {
        (0..self.l.ncopies).all(|c| self.l.part(c, at).is_none_or(|p| at + n as u64 <= p.end()))
    }

    /// One segment. A segment inside one part of each copy (the common case: whole pages) is
    /// copied straight between its page and the GAS; one that straddles parts goes through a
    /// bounce buffer, since a segment is copied whole.
    fn segment(&self, seg: &Segment<'_>, at: u64, write: bool) -> Result<(), NotServed> {
        let n = seg.len();
        if self.within_parts(at, n) {
            // No part boundary inside: `read` and `write` hand out all `n` bytes at once.
            return Ok(if write {
                self.write(at, n, |dst, _, _| {
                    // SAFETY: `dst` has the segment's `n` bytes of one part, not its page.
                    unsafe { seg.copy_to(dst) }
                })
            } else {
                self.read(at, n, |src, _, _| {
                    // SAFETY: as above, from the part into the page.
                    unsafe { seg.copy_from(src) }
                })
            }?);
        }
        let mut bounce = KVec::from_elem(0u8, n, GFP_ATOMIC).map_err(|_| NotServed::Later)?;
        let b = bounce.as_mut_ptr();
        if write {
            // SAFETY: `bounce` has `n` bytes.
            unsafe { seg.copy_to(b) };
            Ok(self.write(at, n, |dst, done, k| {
                // SAFETY: `bounce` has `n >= done + k` bytes; `dst` has `k` bytes of a part.
                unsafe { core::ptr::copy_nonoverlapping(b.add(done), dst, k) }
            })?)
        } else {
            self.read(at, n, |src, done, k| {
                // SAFETY: as above, from the part into the bounce buffer.
                unsafe { core::ptr::copy_nonoverlapping(src, b.add(done), k) }
            })?;
            // SAFETY: `bounce` has `n` bytes.
            unsafe { seg.copy_from(b) };
            Ok(())
        }
    }
}

impl Backing {
    /// Runs `f` on the request's view of the layout (lock held, window usable) with the
    /// request's first byte. `EIO` if the request is out of range or the fabric device is gone,
    /// `Later` if it must wait for a stalled lease; then `f` does not run.
    pub(crate) fn with_io<R>(
        &self,
        rq: &impl Work,
        f: impl FnOnce(&Io<'_>, u64) -> Result<R, NotServed>,
    ) -> Result<R, NotServed> {
        let start = rq.sector().checked_mul(512).ok_or(EIO)?;
        let end = start.checked_add(u64::from(rq.bytes())).ok_or(EIO)?;
        if end > self.len {
            return Err(EIO.into());
        }
        // Once the fabric device is gone, requests fail (the data is out of reach).
        let window = self.fabric.gas().access().ok_or(EIO)?;
        let layout = self.shared.layout.lock();
        let io = Io {
            l: &layout,
            shared: &self.shared,
            now: self.epoch.now(),
            window,
        };
        if io.stalled(start, end, self.max_stall_ns) {
            // Tried again shortly: blk-mq requeues the request (BLK_STS_RESOURCE), the bio-based
            // disk sleeps in `submit_bio`.
            return Err(NotServed::Later);
        }
        f(&io, start)
    }

    /// Whether any lender of `nodes` (a bit per node) is lost.
    pub(crate) fn any_lost(&self, nodes: u64) -> bool {
        (0..64).any(|n| nodes & (1 << n) != 0 && self.fabric.lost(n))
    }

    /// Copies the request's data with the CPU.
    pub(crate) fn serve(&self, rq: &impl Work) -> Result<(), NotServed> {
        self.with_io(rq, |io, start| {
            let end = start + u64::from(rq.bytes());
            let mut at = start;
            // The segment walk speaks the kernel's `Result`: a segment to serve later stops it
            // and is told apart here.
            let mut later = false;
            let mut each = |write| {
                rq.for_each_segment(|seg| {
                    match io.segment(seg, at, write) {
                        Ok(()) => {}
                        Err(NotServed::Later) => {
                            later = true;
                            return Err(EAGAIN);
                        }
                        Err(NotServed::Failed(e)) => return Err(e),
                    }
                    at += seg.len() as u64;
                    Ok(())
                })
            };
            let done = match rq.command() {
                Command::Read => each(false),
                Command::Write => each(true),
                // Lent memory has no volatile cache of ours to write back.
                Command::Flush => Ok(()),
                Command::Discard | Command::WriteZeroes => io.zero(start, end),
                Command::Other(_) => Err(EOPNOTSUPP),
            };
            if later {
                return Err(NotServed::Later);
            }
            Ok(done?)
        })
    }
}

/// Copies the intact copy into the part of copy `copy` at `offset` (a replacement, still
/// `syncing`) a block at a time under the layout lock, so that writes and the copy never
/// interleave within a block; then the part serves reads. Returns false if the part went away
/// or no copy could serve a block.
pub(crate) fn resync(
    shared: &Shared,
    fabric: &Fabric,
    epoch: &Epoch,
    copy: usize,
    offset: u64,
) -> bool {
    const BLOCK: u64 = 256 << 10;
    let mut at = offset;
    loop {
        let mut layout = shared.layout.lock();
        let Some(i) = layout.copies[copy]
            .iter()
            .position(|p| p.offset == offset && p.syncing)
        else {
            return false;
        };
        let p = &layout.copies[copy][i];
        if at >= p.end() {
            layout.copies[copy][i].syncing = false;
            return true;
        }
        let Some(window) = fabric.gas().access() else {
            return false;
        };
        let io = Io {
            l: &layout,
            shared,
            now: epoch.now(),
            window,
        };
        if !p.lease.ok(&io) {
            return false;
        }
        let n = (p.end() - at).min(BLOCK) as usize;
        // `read` skips syncing parts, so the bytes come from the other copy.
        let Some(dst) = io.ptr(p, at, n) else {
            return false;
        };
        let copied = io.read(at, n, |src, done, k| {
            // SAFETY: `dst` has `n` bytes of the replacement part; the source is another copy's.
            unsafe { core::ptr::copy_nonoverlapping(src, dst.add(done), k) }
        });
        if copied.is_err() {
            return false;
        }
        at += n as u64;
    }
}
