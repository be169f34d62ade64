// SPDX-License-Identifier: GPL-2.0
//! The pool's lease: the pool is borrowed from this node's own kram-daemon at load, kept while
//! its lease is renewed (or stalled, after a freeze), lost when the lease is revoked, lapses
//! or the fabric device goes, and wiped and given back at unload.

use crate::{
    fabric_client::OnRevoke,
    gsas,
    kram_borrow::Delivery,
    kram_client::{LeaseClock, LenderSink},
    lease_ticker::Tick,
    pool::Pool,
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

/// The pool as the service sees it: bookkeeping, where it lies, its lease.
pub(crate) struct PoolState {
    pub(crate) pages: Pool,
    /// Partition offset of page 0.
    pub(crate) offset: u64,
    pub(crate) clock: Arc<LeaseClock>,
    /// When a tick first found the lease lapsed on this node's clock (`check_lease`).
    pub(crate) stalled_since: Option<i64>,
}

impl Tick for Service {
    fn tick(this: &Arc<Service>) {
        if !this.stopping.load(Ordering::Acquire) && !this.gas.is_revoked() {
            this.borrow.renew();
            this.check_lease();
            this.resend_zaps();
        }
    }
}

impl LenderSink for Service {
    fn message(this: ArcBorrow<'_, Self>, from: u32, word: u64) {
        match this.borrow.message(from, word) {
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
        if pool.clock.usable(now) {
            if let Some(since) = pool.stalled_since.take() {
                pr_info!(
                    "node {}: page pool's lease acknowledged again after a stall of {} ms: back in use\n",
                    self.node,
                    (now - since) / 1_000_000
                );
            }
            return;
        }
        if !pool.clock.is_revoked() {
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
        let mut lost = None;
        if let Some(pool) = inner.pool.take() {
            lost = Some((
                pool.offset,
                pool.pages.pages() as u64,
                pool.pages.remote.everyone(),
            ));
            pr_crit!(
                "page pool lost (lease {}): {} allocations ({} pages) are gone; requests are answered NO_POOL until unimem_gsas is reloaded\n",
                if pool.clock.is_revoked() { "revoked" } else { "not acknowledged in time: is kram-daemon running?" },
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
        if let Some((offset, pages, nodes)) = lost {
            self.zap_lost_pool(offset, pages, nodes);
        }
        // No longer used here: back to the daemon, which wipes it (a revoked pool is not ours:
        // nothing is sent).
        self.borrow.give_back(false);
    }

    /// Borrows the pool, wipes it (lent memory is not trusted to be zero) and installs it.
    pub(crate) fn take_pool(&self, mib: u32, timeout_ms: u32) -> Result {
        let (first, clock) = self.borrow.lease(self.node, mib, 0, timeout_ms).inspect_err(|e| {
            pr_err!(
                "no page pool: node {}'s kram-daemon did not lend {} MiB within {} ms ({:?}); is kram-daemon running on this node, with that much contiguous free memory? (pool_mib= sets the size)\n",
                self.node, mib, timeout_ms, e
            );
        })?;
        let installed = (|| {
            let (offset, len) = self.gas.lent_range(self.node, first, mib).ok_or(EINVAL)?;
            self.gas.wipe_long(offset, len)?;
            let pages = Pool::new((len / gsas::PAGE_SIZE) as usize)?;
            self.inner.lock().pool = Some(PoolState {
                pages,
                offset: offset - self.part,
                clock,
                stalled_since: None,
            });
            pr_info!("node {}: page pool of {} MiB (chunks {}+{}, partition offset {:#x}) lent by this node's kram-daemon\n", self.node, mib, first, mib, offset - self.part);
            Ok(())
        })();
        if installed.is_err() {
            // Only zeroes were written to it.
            self.borrow.give_back(true);
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
        let len = pool.pages.pages() as u64 * gsas::PAGE_SIZE;
        let wiped = pool.clock.usable(self.epoch.now())
            && self.gas.wipe_long(self.part + pool.offset, len).is_ok();
        if self.borrow.give_back(wiped) {
            if wiped {
                pr_info!(
                    "node {}: page pool wiped and returned to this node's kram-daemon\n",
                    self.node
                );
            } else {
                pr_warn!("node {}: page pool returned unwiped (its lease lapsed on this node's clock): the daemon wipes it\n", self.node);
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
