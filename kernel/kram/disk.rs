// SPDX-License-Identifier: GPL-2.0
//! The block device of one instance: requests copied to and from the lent memory in the GAS,
//! only while the leases are valid; with `mirror=1` every write goes to both copies and a read
//! is served by whichever copy is intact.

use crate::dma::{Dma, Submitted};
use crate::fabric_client::{Access, Gas};
use crate::kram_client::{Epoch, LeaseClock};
use crate::wire::kram::CHUNK_SIZE;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use kernel::{
    block::{
        bio::{self, Bio},
        mq::{Command, Operations, Request, Segment},
    },
    new_spinlock,
    prelude::*,
    sync::{aref::ARef, Arc, SpinLock},
    time::{delay::fsleep, Delta},
};

/// How data moves between bio pages and the GAS (`transfermode`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Transfer {
    /// The CPU copies in `submit_bio` and ends the bio there: a bio-based disk, as brd and zram
    /// are, since blk-mq's per-request work costs more than a copy ([`KramBio`]).
    Memcpy,
    /// A DMA engine's channels copy, and the last copy's completion ends the request (`dma.rs`).
    Cdma,
}

/// The fabric as the disk sees it: the window (while the device is bound) and the liveness
/// words the fabric server keeps in its control area (`gas::node_state`).
#[derive(Clone)]
pub(crate) struct Fabric {
    gas: Arc<Gas>,
}

impl Fabric {
    pub(crate) fn new(gas: Arc<Gas>) -> Self {
        Self { gas }
    }

    pub(crate) fn gas(&self) -> &Arc<Gas> {
        &self.gas
    }

    /// Whether `node`'s memory went away: the fabric poisoned its partition, or the fabric
    /// device itself is gone.
    pub(crate) fn lost(&self, node: u32) -> bool {
        self.gas.access().is_none_or(|w| w.node_lost(node))
    }
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
    /// Missed a write its mirror took, or its lender's memory went away: never read again.
    lost: AtomicBool,
}

// SAFETY: `base` is plain shared memory, mapped while the module is attached to the fabric and
// dereferenced only under a window access (`Io`, `give_back`); the lease state is atomic.
unsafe impl Send for Lease {}
// SAFETY: see `Send`.
unsafe impl Sync for Lease {}

impl Lease {
    /// # Safety
    ///
    /// `base` points to `chunks` MiB of the mapped GAS window, inside `node`'s partition.
    pub(crate) unsafe fn new(node: u32, first_chunk: u32, chunks: u32, base: *mut u8) -> Self {
        Self {
            node,
            first_chunk,
            chunks,
            base,
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

/// A lease placed at `offset` of the disk in one copy. A `syncing` part (a replacement for a
/// lost one) takes writes but serves no read until the mirror has been copied into it.
pub(crate) struct Part {
    pub(crate) offset: u64,
    pub(crate) lease: Arc<Lease>,
    pub(crate) syncing: bool,
}

impl Part {
    fn end(&self) -> u64 {
        self.offset + self.lease.len()
    }

    fn holds(&self, at: u64) -> bool {
        self.offset <= at && at < self.end()
    }

    /// The GAS address of disk byte `at`, which the part holds.
    fn ptr(&self, at: u64) -> *mut u8 {
        // SAFETY: `at - offset` is inside the lease's mapped chunks (`holds`).
        unsafe { self.lease.base.add((at - self.offset) as usize) }
    }
}

/// Where an instance's bytes are: one copy, or two with `mirror=1`; each copy its parts in
/// disk order, with holes where a part was lost and not replaced yet.
pub(crate) struct Layout {
    pub(crate) copies: [KVec<Part>; 2],
    pub(crate) ncopies: usize,
}

impl Layout {
    fn part(&self, copy: usize, at: u64) -> Option<&Part> {
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

/// What the disk's requests need.
pub(crate) struct Backing {
    pub(crate) shared: Arc<Shared>,
    pub(crate) len: u64,
    /// The engine's channels, with `transfermode=1`.
    pub(crate) dma: Option<Arc<Dma>>,
    pub(crate) epoch: Epoch,
    pub(crate) fabric: Fabric,
    /// How long I/O waits for a lapsed lease to be acknowledged again before it fails.
    pub(crate) max_stall_ns: i64,
}

/// The blk-mq disk of `transfermode=1`: its tags bound the copies in flight, and the engine's
/// completions end requests.
pub(crate) struct KramDisk;

/// The bio-based disk of `transfermode=0`.
pub(crate) struct KramBio;

/// What the disk is asked to do: a blk-mq request or a bio.
pub(crate) trait Work {
    fn command(&self) -> Command;
    fn sector(&self) -> u64;
    fn bytes(&self) -> u32;
    fn for_each_segment(&self, f: impl FnMut(&Segment<'_>) -> Result) -> Result;
}

/// Both have the same methods under the same names.
macro_rules! impl_work {
    ($t:ty) => {
        impl Work for $t {
            fn command(&self) -> Command {
                <$t>::command(self)
            }
            fn sector(&self) -> u64 {
                <$t>::sector(self)
            }
            fn bytes(&self) -> u32 {
                <$t>::bytes(self)
            }
            fn for_each_segment(&self, f: impl FnMut(&Segment<'_>) -> Result) -> Result {
                <$t>::for_each_segment(self, f)
            }
        }
    };
}
impl_work!(Request<KramDisk>);
impl_work!(Bio);

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
                put(p.ptr(pos), done, k);
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
                    get(p.ptr(pos), done, k);
                    stored |= !p.syncing;
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
    fn segment(&self, seg: &Segment<'_>, at: u64, write: bool) -> Result {
        let n = seg.len();
        if self.within_parts(at, n) {
            // No part boundary inside: `read` and `write` hand out all `n` bytes at once.
            return if write {
                self.write(at, n, |dst, _, _| {
                    // SAFETY: `dst` has the segment's `n` bytes of one part, not its page.
                    unsafe { seg.copy_to(dst) }
                })
            } else {
                self.read(at, n, |src, _, _| {
                    // SAFETY: as above, from the part into the page.
                    unsafe { seg.copy_from(src) }
                })
            };
        }
        let mut bounce = KVec::from_elem(0u8, n, GFP_ATOMIC)?;
        let b = bounce.as_mut_ptr();
        if write {
            // SAFETY: `bounce` has `n` bytes.
            unsafe { seg.copy_to(b) };
            self.write(at, n, |dst, done, k| {
                // SAFETY: `bounce` has `n >= done + k` bytes; `dst` has `k` bytes of a part.
                unsafe { core::ptr::copy_nonoverlapping(b.add(done), dst, k) }
            })
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
    /// `ENOMEM` if it must wait for a stalled lease; then `f` does not run.
    pub(crate) fn with_io<R>(
        &self,
        rq: &impl Work,
        f: impl FnOnce(&Io<'_>, u64) -> Result<R>,
    ) -> Result<R> {
        let start = rq.sector().checked_mul(512).ok_or(EIO)?;
        let end = start.checked_add(u64::from(rq.bytes())).ok_or(EIO)?;
        if end > self.len {
            return Err(EIO);
        }
        // Once the fabric device is gone, requests fail (the data is out of reach).
        let window = self.fabric.gas.access().ok_or(EIO)?;
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
            return Err(ENOMEM);
        }
        f(&io, start)
    }

    /// Whether any lender of `nodes` (a bit per node) is lost.
    pub(crate) fn any_lost(&self, nodes: u64) -> bool {
        (0..64).any(|n| nodes & (1 << n) != 0 && self.fabric.lost(n))
    }

    /// Copies the request's data with the CPU.
    pub(crate) fn serve(&self, rq: &impl Work) -> Result {
        self.with_io(rq, |io, start| {
            let end = start + u64::from(rq.bytes());
            let mut at = start;
            let mut each = |write| {
                rq.for_each_segment(|seg| {
                    io.segment(seg, at, write)?;
                    at += seg.len() as u64;
                    Ok(())
                })
            };
            match rq.command() {
                Command::Read => each(false),
                Command::Write => each(true),
                // Lent memory has no volatile cache of ours to write back.
                Command::Flush => Ok(()),
                Command::Discard | Command::WriteZeroes => io.zero(start, end),
                Command::Other(_) => Err(EOPNOTSUPP),
            }
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
        let Some(window) = fabric.gas.access() else {
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
        let dst = p.ptr(at);
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

pub(crate) fn finish(rq: ARef<Request<KramDisk>>, result: Result) {
    if Request::end(rq, result).is_err() {
        // Only possible if someone kept an extra reference; the request cannot be ended twice.
        pr_err!("request still referenced, not completed\n");
    }
}

#[vtable]
impl Operations for KramDisk {
    type QueueData = KBox<Backing>;

    fn queue_rq(backing: &Backing, rq: ARef<Request<Self>>, is_last: bool) -> Result {
        let rq = match &backing.dma {
            // Moved, not cloned: the copies' completion ends it, maybe before this returns.
            Some(d) => {
                let s = d.submit(backing, rq, is_last);
                if is_last && !matches!(s, Submitted::Engine) {
                    // Earlier requests of the batch may wait on the engine.
                    d.issue_all();
                }
                match s {
                    Submitted::Engine => return Ok(()),
                    Submitted::Requeue => return Err(ENOMEM),
                    Submitted::Cpu(rq) => rq,
                }
            }
            None => rq,
        };
        let result = backing.serve(&*rq);
        if matches!(result, Err(e) if e == ENOMEM) {
            // A stalled lease or no memory for a bounce buffer: not ended, blk-mq requeues it
            // (BLK_STS_RESOURCE) and runs the queue again after a short delay.
            return Err(ENOMEM);
        }
        finish(rq, result);
        Ok(())
    }

    fn commit_rqs(backing: &Backing) {
        // blk-mq ended a batch early (its last request was not marked last).
        if let Some(d) = &backing.dma {
            d.issue_all();
        }
    }

    fn complete(rq: ARef<Request<Self>>) {
        finish(rq, Ok(()));
    }
}

/// A bio waits for a stalled lease or for memory in steps of `RETRY_MS` (as blk-mq requeues a
/// request after `BLK_MQ_RESOURCE_DELAY`), at most `stall_timeout` and 1000 steps more (a
/// stall ends within `stall_timeout`), before it fails.
const RETRY_MS: i64 = 3;
const EXTRA_RETRIES: i64 = 1000;

impl Backing {
    /// How many times a bio of this disk sleeps `RETRY_MS` before it fails; worked out only
    /// once a bio waits.
    fn max_retries(&self) -> i64 {
        self.max_stall_ns / (RETRY_MS * 1_000_000) + EXTRA_RETRIES
    }
}

#[vtable]
impl bio::Operations for KramBio {
    type Data = KBox<Backing>;

    fn submit_bio(backing: &Backing, bio: Bio) {
        let mut tries = 0;
        loop {
            match backing.serve(&bio) {
                // The bio-based disk does not take REQ_NOWAIT bios, so it may sleep here.
                Err(e) if e == ENOMEM && tries < backing.max_retries() => {
                    tries += 1;
                    fsleep(Delta::from_millis(RETRY_MS));
                }
                r => return bio.end(r),
            }
        }
    }
}
