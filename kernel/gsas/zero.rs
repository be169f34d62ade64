// SPDX-License-Identifier: GPL-2.0
//! Zeroing freed allocations before their pages are free again: small ones while their FREE
//! is served, large ones by a work item, a piece at a time, so that no request waits long.

use crate::{gsas::PAGE_SIZE, service::Service, serving::zap_pages};
use kernel::{
    prelude::*,
    sync::Arc,
    workqueue::{impl_has_work, WorkItem},
};

/// Largest freed allocation zeroed at once, while its FREE is served (1 MiB, the most a KRAM
/// request copies): a larger one would hold up every other request of the mailbox's served
/// interfaces, so the zeroing work does it (`zero_queued`).
pub(crate) const INLINE_ZERO_PAGES: usize = (1 << 20) / PAGE_SIZE as usize;
/// Pages zeroed under one hold of the service lock.
const ZERO_PIECE_PAGES: usize = (256 << 10) / PAGE_SIZE as usize;
/// Pages the zeroing work takes at a time.
const ZERO_RUN_PAGES: usize = (16 << 20) / PAGE_SIZE as usize;

impl_has_work! {
    impl HasWork<Self, 1> for Service { self.zero }
}

impl WorkItem<1> for Service {
    type Pointer = Arc<Service>;

    fn run(this: Arc<Service>) {
        this.zero_queued();
    }
}

impl Service {
    /// Zeroes the freed pages `first..first + n` (`ZEROING`, this caller's), then frees them.
    /// Threads' mappings of them go first: nobody sees the zeroing, or the pages' next owner.
    /// Each piece is zeroed under the service lock, so the pool cannot go back to its lender
    /// in the middle of one (its memory may be someone else's then); between pieces the CPU is
    /// given up if wanted. Process context.
    pub(crate) fn zero_freed(&self, first: usize, n: usize) {
        let part_off = {
            let inner = self.inner.lock();
            let Some(pool) = inner.pool.as_ref() else {
                return;
            };
            pool.ranges.offset_of(first)
        };
        let mut ok = match zap_pages(part_off, n as u64 * PAGE_SIZE) {
            Ok(()) => true,
            Err(e) => {
                pr_err!("unmapping {} freed pages from user space failed ({:?}): they stay out of use\n", n, e);
                false
            }
        };
        let mut done = 0;
        while ok && done < n {
            let k = ZERO_PIECE_PAGES.min(n - done);
            let inner = self.inner.lock();
            // A pool that lapsed (dropped) or came back anew holds none of these pages now.
            let Some(pool) = inner
                .pool
                .as_ref()
                .filter(|p| p.pages.zeroing(first + done, k) && p.ranges.usable(self.epoch.now()))
            else {
                return;
            };
            // A run lies in one range (`Pool::take_queued`, allocations).
            let offset = self.part + pool.ranges.offset_of(first) + done as u64 * PAGE_SIZE;
            if let Err(e) = self.gas.wipe(offset, k as u64 * PAGE_SIZE) {
                pr_err!(
                    "zeroing {} freed pages failed ({:?}): they stay out of use\n",
                    n,
                    e
                );
                ok = false;
            }
            drop(inner);
            done += k;
            kernel::task::cond_resched();
        }
        let mut inner = self.inner.lock();
        if let Some(pool) = inner.pool.as_mut().filter(|p| p.pages.zeroing(first, n)) {
            if ok {
                pool.pages.finish_free(first, n);
            } else {
                pool.pages.stuck(first, n);
            }
        }
        self.release_module(&mut inner);
    }

    /// Zeroes the queued freed allocations (the zeroing work, process context).
    fn zero_queued(&self) {
        loop {
            let run = {
                let mut inner = self.inner.lock();
                inner
                    .pool
                    .as_mut()
                    .and_then(|p| p.pages.take_queued(ZERO_RUN_PAGES))
            };
            let Some((first, n)) = run else { return };
            self.zero_freed(first, n);
        }
    }
}
