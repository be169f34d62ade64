// SPDX-License-Identifier: GPL-2.0
//! Growing the page pool on demand: an ALLOC that finds no room is answered `STALLED` (the
//! library asks again) while a work item borrows another range from this node's kram-daemon
//! (the next of `wire::kram::GSAS_INSTANCES`), wipes it and adds it to the pool; if the daemon
//! has nothing to lend, or the pool is at `pool_max_mib`, the ALLOC gets `NO_MEMORY`.
//!
//! Each range asks for as much as the pool holds already (so it doubles), but takes as little
//! as the allocation needs when the daemon has no more (a partial grant). Borrowing waits for
//! the daemon, so it never runs while a request is served: the mailbox serves every request
//! of the node's interfaces in turn.
//!
//! The pool shrinks from its end: before it grows, the ranges at its end with no page in use
//! are wiped and given back (their pages did not fit the allocation, and their memory may make
//! the daemon's run that does), and so is a last range unused for [`IDLE_TICKS`] lease ticks.
//! Only the end: pages are numbered across ranges, and a range in the middle would renumber
//! the ones after it. The first range stays until unload.

use crate::{
    gsas::PAGE_SIZE,
    lease::Range,
    pool::{Spare, MAX_RANGES},
    service::Service,
    serving::zap_pages,
    stats::Counter,
    wire::kram::CHUNK_SIZE,
};
use kernel::{
    prelude::*,
    sync::Arc,
    workqueue::{self, impl_has_work, WorkItem},
};

/// How long the growth work waits for each of the daemon's answers. The daemon is this node's
/// own and answers at once when it has the memory; when it has none it does not answer at all.
const GROW_TIMEOUT_MS: u32 = 2000;
/// After the pool could not grow by some pages, ALLOCs of as many pages or more get
/// `NO_MEMORY` at once for this long, rather than each waiting for the daemon again.
const RETRY_AFTER_NS: i64 = 10_000_000_000;
/// Pages per chunk.
const CHUNK_PAGES: usize = (CHUNK_SIZE / PAGE_SIZE) as usize;
/// Lease ticks (seconds) the pool's last range stays unused before it goes back.
const IDLE_TICKS: u32 = 60;

/// Where growing the pool stands (under the service lock).
#[derive(Default)]
pub(crate) struct Growth {
    /// The most pages an ALLOC found no room for since the work last looked.
    wanted: usize,
    /// The work is queued or running.
    busy: bool,
    /// When the pool last failed to grow, and by how many pages.
    failed: Option<(i64, usize)>,
    /// Lease ticks since the last range was last in use.
    idle: u32,
}

/// What an ALLOC that found no room answers.
pub(crate) enum Miss {
    /// `STALLED`: the pool grows; `true` if the caller queues the work ([`Service::grow_later`]).
    Grow(bool),
    /// `NO_MEMORY`.
    Full,
}

impl Growth {
    /// An ALLOC of `n` pages found no room in a pool of `pages` pages in `ranges` ranges (not
    /// counting unused ones at its end, which go back first), at most `max` pages, at time
    /// `now`.
    pub(crate) fn miss(
        &mut self,
        n: usize,
        pages: usize,
        ranges: usize,
        max: usize,
        now: i64,
    ) -> Miss {
        if ranges >= MAX_RANGES || pages + n > max {
            return Miss::Full;
        }
        if let Some((when, need)) = self.failed {
            if now - when < RETRY_AFTER_NS && n >= need {
                return Miss::Full;
            }
        }
        self.wanted = self.wanted.max(n);
        let queue = !self.busy;
        self.busy = true;
        Miss::Grow(queue)
    }
}

impl_has_work! {
    impl HasWork<Self, 2> for Service { self.grow }
}

impl WorkItem<2> for Service {
    type Pointer = Arc<Service>;

    fn run(this: Arc<Service>) {
        this.grow_pool();
    }
}

impl Service {
    /// Queues the growth work (after the lock; the ALLOC that asked was answered `STALLED`).
    /// Unloading flushes it: it holds no module reference.
    pub(crate) fn grow_later(this: &Arc<Service>) {
        let _ = workqueue::system_dfl().enqueue::<Arc<Service>, 2>(this.clone());
    }

    /// Each lease tick: counts how long the pool's last range has been unused, and has the
    /// work give it back after [`IDLE_TICKS`] (with nothing to grow by).
    pub(crate) fn idle_tick(this: &Arc<Service>) {
        let queue = {
            let mut inner = this.inner.lock();
            let Some(pool) = inner.pool.as_mut() else {
                return;
            };
            let g = &mut pool.growth;
            g.idle = if pool.pages.last_range_free() {
                g.idle.saturating_add(1)
            } else {
                0
            };
            let due = g.idle >= IDLE_TICKS && !g.busy;
            if due {
                g.busy = true;
                g.idle = 0;
            }
            due
        };
        if queue {
            Service::grow_later(this);
        }
    }

    /// Takes the unused ranges at the pool's end out of it, wipes them and gives them back to
    /// the daemon.
    fn shrink_pool(&self) {
        let mut gone: [Option<(usize, Range)>; MAX_RANGES] = [const { None }; MAX_RANGES];
        if let Some(pool) = self.inner.lock().pool.as_mut() {
            for slot in gone.iter_mut() {
                if !pool.pages.shrink() {
                    break;
                }
                *slot = pool.ranges.pop();
            }
        }
        for (i, r) in gone.into_iter().flatten() {
            let len = r.pages as u64 * PAGE_SIZE;
            // Free pages are mapped nowhere and zero; made sure of, as for any returned range.
            let wiped = zap_pages(r.offset, len).is_ok()
                && r.clock.usable(self.epoch.now())
                && self.gas.wipe_long(self.part + r.offset, len).is_ok();
            if let Some(b) = self.borrow(i) {
                b.give_back(wiped);
            }
            self.stats.bump(Counter::PoolShrunk);
            pr_info!(
                "node {}: page pool range of {} MiB unused: {} returned to this node's kram-daemon\n",
                self.node,
                len >> 20,
                if wiped { "wiped and" } else { "not wiped (the daemon wipes it)," }
            );
        }
    }

    /// The growth work: gives back the unused ranges at the pool's end, then borrows the next
    /// range and adds it to the pool, or records that it could not (the waiting ALLOCs then
    /// get `NO_MEMORY`); only the first when queued by [`idle_tick`](Self::idle_tick).
    fn grow_pool(&self) {
        self.shrink_pool();
        let Some((wanted, pages, ranges)) = self
            .inner
            .lock()
            .pool
            .as_ref()
            .map(|p| (p.growth.wanted, p.pages.pages(), p.pages.ranges()))
        else {
            return;
        };
        if wanted == 0 {
            if let Some(pool) = self.inner.lock().pool.as_mut() {
                pool.growth.busy = false;
            }
            return;
        }
        let grown = self.borrow_range(wanted, pages, ranges);
        let mut inner = self.inner.lock();
        let Some(pool) = inner.pool.as_mut() else {
            drop(inner);
            // The pool was lost meanwhile: nothing of the new range was used.
            if grown.is_ok() {
                if let Some(b) = self.borrow(ranges) {
                    b.give_back(true);
                }
            }
            return;
        };
        let now = self.epoch.now();
        let old = match grown {
            Ok((range, spare)) => {
                let (added, old) = pool.pages.grow(spare, range.pages);
                // Both hold `ranges` ranges since the work started (only it adds one), so both
                // take it or neither.
                if added && pool.ranges.push(range) {
                    pool.growth.failed = None;
                    self.stats.bump(Counter::PoolGrown);
                } else {
                    pool.growth.failed = Some((now, wanted));
                }
                Some(old)
            }
            Err(e) => {
                self.stats.bump(Counter::PoolGrowFailed);
                if self.noisy.allow(now) {
                    pr_warn!(
                        "node {}: the page pool ({} MiB in {} ranges) could not grow by {} pages ({:?}): ALLOCs that do not fit get NO_MEMORY\n",
                        self.node,
                        (pages * PAGE_SIZE as usize) >> 20,
                        ranges,
                        wanted,
                        e
                    );
                }
                pool.growth.failed = Some((now, wanted));
                None
            }
        };
        pool.growth.wanted = 0;
        pool.growth.busy = false;
        drop(inner);
        // The replaced storage is freed after the lock (freeing may sleep).
        drop(old);
    }

    /// Borrows range number `ranges` for an ALLOC of `wanted` pages in a pool of `pages`
    /// pages, wipes it and makes the bookkeeping's storage for the grown pool; given back if
    /// that fails.
    fn borrow_range(&self, wanted: usize, pages: usize, ranges: usize) -> Result<(Range, Spare)> {
        let borrow = self.borrow(ranges).ok_or(ENOSPC)?;
        let have = (pages / CHUNK_PAGES) as u32;
        let room = (self.max_pages / CHUNK_PAGES) as u32 - have;
        let need = wanted.div_ceil(CHUNK_PAGES) as u32;
        if need == 0 || need > room {
            return Err(ENOSPC);
        }
        let ask = have.clamp(need, room);
        let (first, chunks, clock) = borrow.lease_partial(self.node, need, ask, GROW_TIMEOUT_MS)?;
        let made = (|| {
            let (offset, len) = self
                .gas
                .lent_range(self.node, first, chunks)
                .ok_or(EINVAL)?;
            self.gas.wipe_long(offset, len)?;
            let n = (len / PAGE_SIZE) as usize;
            let spare = Spare::new(pages + n)?;
            pr_info!(
                "node {}: page pool grows by {} MiB (chunks {}+{}, partition offset {:#x}) to {} MiB\n",
                self.node,
                chunks,
                first,
                chunks,
                offset - self.part,
                ((pages + n) * PAGE_SIZE as usize) >> 20
            );
            Ok((
                Range {
                    first: pages,
                    pages: n,
                    offset: offset - self.part,
                    clock,
                },
                spare,
            ))
        })();
        if made.is_err() {
            // Only zeroes were written to it.
            borrow.give_back(true);
        }
        made
    }
}
