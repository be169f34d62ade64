// SPDX-License-Identifier: GPL-2.0
//! Keeping the leases: the ticker's RENEWs, the lenders' messages (OFFER, ACK, REVOKE), and
//! the rescue of ranges whose renewals go unacknowledged, which go offline before their lease
//! lapses and the lender may lend them to someone else.

use crate::{
    kram_borrow::Delivery, kram_client::LenderSink, lease_ticker::Tick, state::Numa, wire,
};
use core::sync::atomic::Ordering;
use kernel::{
    prelude::*,
    sync::{Arc, ArcBorrow},
    workqueue::{self, WorkItem},
};

/// A range with less validity than this left (no renewal acknowledged for half a borrower's
/// lease, 8 s) goes offline before its lease lapses: once it lapses, the lender may wipe it and
/// lend it to someone else while this node's kernel still uses it.
const RESCUE_NS: i64 = wire::kram::BORROWER_LEASE_MS as i64 * 1_000_000 / 2;

/// The lease ticker's period, in the epoch's nanoseconds.
const PERIOD_NS: i64 = wire::kram::RENEW_PERIOD_MS as i64 * 1_000_000;

impl Tick for Numa {
    fn tick(this: &Arc<Numa>) {
        if this.stopping.load(Ordering::Acquire) {
            return;
        }
        this.renew();
        let now = this.epoch.now();
        if !this.at_risk() {
            this.at_risk_since.store(0, Ordering::Relaxed);
            return;
        }
        // At two ticks in a row: after a freeze of this node every lease looks lapsed until the
        // renewal just sent is acknowledged (its lender held it: the fabric showed this node).
        let since =
            match this
                .at_risk_since
                .compare_exchange(0, now, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => now,
                Err(since) => since,
            };
        if now - since >= PERIOD_NS * 9 / 10 {
            // Offlining migrates pages and may take seconds: not in the renewing work.
            let _ = workqueue::system_percpu().enqueue::<Arc<Numa>, 2>(this.clone());
        }
    }
}

impl WorkItem<2> for Numa {
    type Pointer = Arc<Numa>;

    fn run(this: Arc<Numa>) {
        this.rescue();
    }
}

impl Numa {
    /// RENEW every lease that is not revoked.
    fn renew(&self) {
        if self.gas.is_revoked() {
            return;
        }
        for b in self.borrows.iter() {
            b.renew();
        }
    }

    /// Whether a range's lease is not being renewed (`RESCUE_NS`). Skipped while `add` or
    /// `remove` holds the ranges: the next tick looks again.
    fn at_risk(&self) -> bool {
        let now = self.epoch.now();
        self.regions.try_lock().is_some_and(|regions| {
            regions
                .iter()
                .any(|r| r.clock.is_revoked() || r.clock.left(now) < RESCUE_NS)
        })
    }

    /// Takes every range whose lease is not being renewed offline, migrating its pages, before
    /// the lease lapses. A range that cannot go offline is reported at a limited rate; it stays
    /// online, and once its lease lapses its lender may lend it again.
    fn rescue(&self) {
        let mut regions = self.regions.lock();
        for i in (0..regions.len()).rev() {
            let r = regions[i].clone();
            let now = self.epoch.now();
            if !r.clock.is_revoked() && r.clock.left(now) >= RESCUE_NS {
                continue;
            }
            // Tried again every tick while it fails: at a limited rate.
            if self.noisy.allow(now) {
                pr_warn!(
                "node {} has not acknowledged renewals of chunks {}+{} ({} MiB at {:#x}, {} ms of lease left): taking them offline before the lease lapses\n",
                r.lender, r.first_chunk, r.chunks, r.chunks, r.phys, r.clock.left(now).max(0) / 1_000_000
            );
            }
            match self.remove_region(r.clone()) {
                Ok(()) => {
                    let _ = regions.remove(i);
                }
                Err(e) => {
                    if self.noisy.allow(self.epoch.now()) {
                        pr_crit!(
                            "chunks {}+{} of node {} could not go offline ({:?}) and stay online on NUMA node {} while their lease lapses: node {} may lend them again; free memory and write `remove {}` to /proc/unimem_numa (rate-limited)\n",
                            r.first_chunk, r.chunks, r.lender, e, self.nid, r.lender, r.lender
                        );
                    }
                }
            }
        }
        self.untier(&regions);
    }

    /// A message from a lender's daemon: OFFER, ACK or REVOKE.
    fn message(&self, from: u32, word: u64) {
        let (delivery, lost) = match self.borrow(from) {
            Some(b) => b.deliver(from, word),
            // Not a node of this fabric: no lease of ours can be meant.
            None => (Delivery::Malformed, None),
        };
        self.tally.count(delivery);
        if delivery == Delivery::Malformed && self.noisy.allow(self.epoch.now()) {
            pr_warn!(
                "malformed message {:#018x} from node {} dropped\n",
                word,
                from
            );
        }
        if let Some((first, chunks)) = lost {
            pr_crit!(
                "node {} revoked chunks {}+{} (lease lapsed) while they are online on NUMA node {}: remove them now\n",
                from, first, chunks, self.nid
            );
        }
    }
}

impl LenderSink for Numa {
    fn message(this: ArcBorrow<'_, Self>, from: u32, word: u64) {
        this.message(from, word);
    }
}
