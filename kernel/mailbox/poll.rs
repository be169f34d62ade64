// SPDX-License-Identifier: GPL-2.0
//! Busy polling of the served interfaces' rings (`poll_us`).
//!
//! A request from a peer normally costs a doorbell interrupt and the wake-up of the dispatch
//! work on this node; under TCG a halted vCPU's wake-up alone is tens of microseconds, several
//! times the polled mailbox round trip (docs/GSAS.md). After a run that served packets, the
//! work keeps looking at the served rings for `poll_us` more, as KVM's halt polling does for a
//! vCPU: back-to-back requests (the common case for a thread doing GSAS operations) are then
//! found without either. It stops at once when another task wants this CPU, so a local issuer
//! (or anything else) never waits for it, and it never spins longer than `POLL_RUN_NS` in one
//! run: kernel messages and other work items get their turn in between.

use crate::state::State;
use core::sync::atomic::Ordering;
use kernel::{
    processor::cpu_relax,
    task,
    time::{Instant, Monotonic},
};

/// The longest one run of the dispatch work spins (it queues itself again if still busy).
const POLL_RUN_NS: i64 = 2_000_000;

impl State {
    /// Polls the served rings for up to `poll_ns` after the last packet, serving what arrives;
    /// `true` if the work should run again (kernel messages arrived, or it stopped while
    /// packets kept coming).
    pub(crate) fn busy_poll(&self) -> bool {
        let window = i64::try_from(self.poll_ns).unwrap_or(i64::MAX);
        if window == 0 {
            return false;
        }
        self.busy_polls.fetch_add(1, Ordering::Relaxed);
        let run = Instant::<Monotonic>::now();
        let mut last = run;
        loop {
            if self.stopping.load(Ordering::Acquire)
                || !task::single_task_running()
                || task::need_resched()
            {
                return false;
            }
            let (served, kmsgs) = self.dispatch_pending();
            if kmsgs {
                return true;
            }
            if served {
                let (handed, more) = self.drain_served();
                self.busy_poll_packets
                    .fetch_add(handed as u64, Ordering::Relaxed);
                if more || run.elapsed().as_nanos() > POLL_RUN_NS {
                    return true;
                }
                last = Instant::now();
                continue;
            }
            if last.elapsed().as_nanos() > window {
                return false;
            }
            cpu_relax();
        }
    }
}
