// SPDX-License-Identifier: GPL-2.0
//! The pool's leases: the pool's first range is borrowed from this node's own kram-daemon at
//! load (more as it grows, `grow.rs`), kept while every range's lease is renewed (or stalled,
//! after a freeze), lost with every allocation when one is revoked, lapses or the fabric device
//! goes, and wiped and given back at unload.

use crate::{
    fabric_client::OnRevoke,
    grow::Growth,
    gsas::PAGE_SIZE,
    kram_borrow::Borrow,
    kram_borrow::Delivery,
    kram_client::{LeaseClock, LenderSink},
    lease_ticker::Tick,
    pool::{Pool, MAX_RANGES},
    service::Service,
    serving::zap_pages,
    wire::kram::{BORROWER_LEASE_MS, LEASE_MS},
};
use core::sync::atomic::Ordering;
use kernel::{
    prelude::*,
    sync::{Arc, ArcBorrow},
};

/// How long a pool whose lease lapsed on this node's clock waits for a renewal to be
/// acknowledged before it is given up. A node that was not frozen must stop using the pool
/// before its lender's lease ends: that lease counts `LEASE_MS` from the last RENEW the lender
/// received, ours ends `LEASE_MS - BORROWER_LEASE_MS` earlier and a tick sees it within a renewal
/// period, so the stall may take half that margin.
const STALL_NS: i64 = ((LEASE_MS - BORROWER_LEASE_MS) / 2 * 1_000_000) as i64;

/// One range of the pool: which pool pages it holds, where they lie, its lease.
pub(crate) struct Range {
    /// Its first pool page, and how many.
    pub(crate) first: usize,
    pub(crate) pages: usize,
    /// Partition offset of its first page.
    pub(crate) offset: u64,
    pub(crate) clock: Arc<LeaseClock>,
}

/// The pool's ranges, in the order of their pool pages (`pool.rs`).
pub(crate) struct Ranges(KVec<Range>);

impl Ranges {
    fn new(first: Range) -> Result<Self> {
        let mut v = KVec::with_capacity(MAX_RANGES, GFP_KERNEL)?;
        v.push(first, GFP_KERNEL)?;
        Ok(Self(v))
    }

    /// Adds the next range (the pool's bookkeeping grew by it first); not past `MAX_RANGES`.
    pub(crate) fn push(&mut self, r: Range) -> bool {
        self.0.push_within_capacity(r).is_ok()
    }

    /// Takes the last range out (`Pool::shrink` took its pages), and its number.
    pub(crate) fn pop(&mut self) -> Option<(usize, Range)> {
        let r = self.0.pop()?;
        Some((self.0.len(), r))
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = &Range> {
        self.0.iter()
    }

    /// The range that pool page `page` is in.
    fn of(&self, page: usize) -> Option<&Range> {
        self.0.iter().rev().find(|r| r.first <= page)
    }

    /// Partition offset of pool page `page` (one of the pool's).
    pub(crate) fn offset_of(&self, page: usize) -> u64 {
        self.of(page)
            .map_or(0, |r| r.offset + (page - r.first) as u64 * PAGE_SIZE)
    }

    /// Where partition offset `off` lies in the pool's pages, as pool page × `PAGE_SIZE` plus
    /// the offset in the page; `None` outside every range. A span from there is in one range
    /// only if `Pool::check` says so.
    pub(crate) fn rel(&self, off: u64) -> Option<u64> {
        self.0.iter().find_map(|r| {
            let d = off.checked_sub(r.offset)?;
            (d < r.pages as u64 * PAGE_SIZE).then(|| r.first as u64 * PAGE_SIZE + d)
        })
    }

    /// Whether every range may be used now.
    pub(crate) fn usable(&self, now: i64) -> bool {
        self.0.iter().all(|r| r.clock.usable(now))
    }

    /// Whether a range's lease was revoked.
    pub(crate) fn is_revoked(&self) -> bool {
        self.0.iter().any(|r| r.clock.is_revoked())
    }

    /// The shortest time left on a range's lease.
    pub(crate) fn left(&self, now: i64) -> i64 {
        self.0.iter().map(|r| r.clock.left(now)).min().unwrap_or(0)
    }
}

/// The pool as the service sees it: bookkeeping, where its ranges lie, their leases.
pub(crate) struct PoolState {
    pub(crate) pages: Pool,
    pub(crate) ranges: Ranges,
    /// When a tick first found a lease lapsed on this node's clock (`check_lease`).
    pub(crate) stalled_since: Option<i64>,
    pub(crate) growth: Growth,
}

impl Tick for Service {
    fn tick(this: &Arc<Service>) {
        if !this.stopping.load(Ordering::Acquire) && !this.gas.is_revoked() {
            for b in this.borrows.iter() {
                b.renew();
            }
            this.check_lease();
            this.resend_zaps();
            Service::idle_tick(this);
        }
    }
}

impl LenderSink for Service {
    fn message(this: ArcBorrow<'_, Self>, from: u32, word: u64) {
        // Each range's borrow takes only its own instance's messages.
        let delivery = this
            .borrows
            .iter()
            .map(|b| b.message(from, word))
            .find(|d| *d != Delivery::Malformed)
            .unwrap_or(Delivery::Malformed);
        match delivery {
            Delivery::Revoke => pr_crit!("node {}'s kram-daemon revoked the page pool: every request is answered NO_POOL until unimem_gsas is reloaded\n", from),
            Delivery::Malformed | Delivery::Stray => {
                if this.noisy.allow(this.epoch.now()) {
                    pr_warn!("message {:#018x} from node {} is not about this pool: dropped (rate-limited)\n", word, from);
                }
            }
            _ => {}
        }
    }
}

impl Service {
    /// Drops a pool whose lease was revoked, or lapsed on this node's clock and was not
    /// acknowledged again within [`STALL_NS`]: its memory may be lent to someone else by now,
    /// so every allocation in it is lost; requests get `NO_POOL` from now on, and the module
    /// can be unloaded (nothing left to keep).
    ///
    /// A lapse alone is first a stall: a node frozen past its lease finds it lapsed when it
    /// runs again, while its lender held it (the lease rule: the node is connected and its
    /// heartbeat stalled). The tick's RENEW is then acknowledged and the pool is back; until
    /// then requests are answered `STALLED` (the library asks again). The stall counts from
    /// the first tick that saw it, so a freeze does not use it up.
    fn check_lease(&self) {
        let mut inner = self.inner.lock();
        let now = self.epoch.now();
        let Some(pool) = inner.pool.as_mut() else {
            return;
        };
        if pool.ranges.usable(now) {
            if let Some(since) = pool.stalled_since.take() {
                pr_info!(
                    "node {}: page pool's lease acknowledged again after a stall of {} ms: back in use\n",
                    self.node,
                    (now - since) / 1_000_000
                );
            }
            return;
        }
        if !pool.ranges.is_revoked() {
            let since = *pool.stalled_since.get_or_insert(now);
            if since == now {
                pr_warn!(
                    "node {}: page pool's lease lapsed on this node's clock (was it frozen?): renewing; requests are answered STALLED meanwhile\n",
                    self.node
                );
            }
            if now - since < STALL_NS {
                return;
            }
        }
        let lost = inner.pool.take();
        if let Some(pool) = &lost {
            pr_crit!(
                "page pool lost (lease {}): {} allocations ({} pages) are gone; requests are answered NO_POOL until unimem_gsas is reloaded\n",
                if pool.ranges.is_revoked() { "revoked" } else { "not acknowledged in time: is kram-daemon running?" },
                pool.pages.allocations,
                pool.pages.used
            );
        }
        self.release_module(&mut inner);
        drop(inner);
        // The memory may be someone else's now: no thread keeps a mapping of it.
        if let Err(e) = zap_pages(0, 0) {
            pr_crit!("unmapping the lost pool from user space failed: {:?}\n", e);
            return;
        }
        if let Some(pool) = lost {
            let nodes = pool.pages.remote.everyone();
            for r in pool.ranges.iter() {
                self.zap_lost_pool(r.offset, r.pages as u64, nodes);
            }
        }
        // No longer used here: back to the daemon, which wipes it (a revoked range is not
        // ours: nothing is sent).
        for b in self.borrows.iter() {
            b.give_back(false);
        }
    }

    /// The borrow of the pool's range number `i` (`wire::kram::GSAS_INSTANCES`).
    pub(crate) fn borrow(&self, i: usize) -> Option<&Borrow> {
        self.borrows.get(i).map(|b| &**b)
    }

    /// Borrows the pool, wipes it (lent memory is not trusted to be zero) and installs it.
    pub(crate) fn take_pool(&self, mib: u32, timeout_ms: u32) -> Result {
        let borrow = self.borrow(0).ok_or(EINVAL)?;
        let (first, clock) = borrow.lease(self.node, mib, 0, timeout_ms).inspect_err(|e| {
            pr_err!(
                "no page pool: node {}'s kram-daemon did not lend {} MiB within {} ms ({:?}); is kram-daemon running on this node, with that much contiguous free memory? (pool_mib= sets the size)\n",
                self.node, mib, timeout_ms, e
            );
        })?;
        let installed = (|| {
            let (offset, len) = self.gas.lent_range(self.node, first, mib).ok_or(EINVAL)?;
            self.gas.wipe_long(offset, len)?;
            let n = (len / PAGE_SIZE) as usize;
            let pages = Pool::new(n)?;
            let ranges = Ranges::new(Range {
                first: 0,
                pages: n,
                offset: offset - self.part,
                clock,
            })?;
            self.inner.lock().pool = Some(PoolState {
                pages,
                ranges,
                stalled_since: None,
                growth: Growth::default(),
            });
            pr_info!("node {}: page pool of {} MiB (chunks {}+{}, partition offset {:#x}) lent by this node's kram-daemon\n", self.node, mib, first, mib, offset - self.part);
            Ok(())
        })();
        if installed.is_err() {
            // Only zeroes were written to it.
            borrow.give_back(true);
        }
        installed
    }

    /// Wipes the pool and gives it back to the daemon (unload).
    pub(crate) fn return_pool(&self) {
        let Some(pool) = self.inner.lock().pool.take() else {
            return;
        };
        // Nothing is allocated (unload waits for that), so nothing is mapped; make sure.
        if let Err(e) = zap_pages(0, 0) {
            pr_warn!(
                "node {}: unmapping the pool from user space failed ({:?}): not returned\n",
                self.node,
                e
            );
            return;
        }
        for (r, b) in pool.ranges.iter().zip(self.borrows.iter()) {
            let len = r.pages as u64 * PAGE_SIZE;
            let wiped = r.clock.usable(self.epoch.now())
                && self.gas.wipe_long(self.part + r.offset, len).is_ok();
            if b.give_back(wiped) {
                if wiped {
                    pr_info!(
                        "node {}: page pool range of {} MiB wiped and returned to this node's kram-daemon\n",
                        self.node,
                        len >> 20
                    );
                } else {
                    pr_warn!("node {}: page pool range of {} MiB returned unwiped (its lease lapsed on this node's clock): the daemon wipes it\n", self.node, len >> 20);
                }
            }
        }
    }
}

impl OnRevoke for Service {
    /// The fabric device goes: no request is applied or answered again; the pool (and every
    /// allocation in it) is lost, since its lease can no longer be renewed.
    fn revoke(&self) {
        self.gas.revoke();
        let mut inner = self.inner.lock();
        if let Some(pool) = inner.pool.take() {
            if pool.pages.allocations > 0 {
                pr_crit!(
                    "fabric device going: {} GSAS allocations ({} pages) are lost\n",
                    pool.pages.allocations,
                    pool.pages.used
                );
            }
        }
        self.release_module(&mut inner);
        drop(inner);
        pr_warn!("fabric device gone: GSAS requests are no longer served until unimem_gsas is reloaded\n");
    }
}
