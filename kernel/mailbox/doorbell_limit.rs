// SPDX-License-Identifier: GPL-2.0
//! A bound on the doorbells a user can make this node ring: `KICK`s, and `SEND`s that found the
//! destination's ring full (both ring although they queue nothing new). Each doorbell is an
//! interrupt and a dispatch run on its destination; a loop of either would otherwise keep a
//! peer busy at whatever rate the loop reaches.
//!
//! One generic cell rate (GCRA, a token bucket without a refill timer) per destination node:
//! `doorbell_rate` per millisecond, after a burst of [`BURST`]. A thread over the rate is not
//! refused and its doorbell is not dropped (a dropped `KICK` could leave a request unseen): it
//! sleeps until its doorbell is due. Doorbells that carry a new packet are not limited: the
//! ring's capacity and its receiver bound those.

use core::sync::atomic::{AtomicU64, Ordering};
use kernel::{
    prelude::*,
    time::{delay::fsleep, Delta},
};

/// Doorbells to one destination that may go at once before the rate applies.
pub(crate) const BURST: u64 = 64;

pub(crate) struct DoorbellLimit {
    /// Nanoseconds between two doorbells to one destination (0: no limit).
    interval_ns: u64,
    /// Per destination: the theoretical arrival time of its next doorbell (module epoch, ns).
    due: KVec<AtomicU64>,
}

impl DoorbellLimit {
    /// `per_ms` doorbells per millisecond to each of `nodes` destinations (0: no limit).
    pub(crate) fn new(nodes: u32, per_ms: u32) -> Result<Self> {
        let mut due = KVec::with_capacity(nodes as usize, GFP_KERNEL)?;
        for _ in 0..nodes {
            due.push(AtomicU64::new(0), GFP_KERNEL)?;
        }
        Ok(Self {
            interval_ns: if per_ms == 0 {
                0
            } else {
                1_000_000 / u64::from(per_ms)
            },
            due,
        })
    }

    /// The rate: doorbells per millisecond to each node (0: no limit).
    pub(crate) fn per_ms(&self) -> u64 {
        1_000_000u64.checked_div(self.interval_ns).unwrap_or(0)
    }

    /// How long a doorbell to `node` at `now` (ns) must wait: 0 within the rate.
    pub(crate) fn delay(&self, node: u32, now: u64) -> u64 {
        let Some(due) = self
            .due
            .get(node as usize)
            .filter(|_| self.interval_ns != 0)
        else {
            return 0;
        };
        let tolerance = BURST * self.interval_ns;
        let mut current = due.load(Ordering::Relaxed);
        loop {
            let next = current.max(now) + self.interval_ns;
            match due.compare_exchange_weak(current, next, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => return next.saturating_sub(now + tolerance),
                Err(seen) => current = seen,
            }
        }
    }

    /// Waits until a doorbell to `node` is due; true if it had to. Process context.
    pub(crate) fn wait(&self, node: u32, now: u64) -> bool {
        let wait = self.delay(node, now);
        if wait == 0 {
            return false;
        }
        fsleep(Delta::from_nanos(wait.min(i64::MAX as u64) as i64));
        true
    }
}
