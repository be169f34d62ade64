// SPDX-License-Identifier: GPL-2.0
//! Adaptive busy polling of the served interfaces' rings (`poll_us`).
//!
//! A request from a peer normally costs a doorbell interrupt and the wake-up of the dispatch
//! work on this node; under TCG a halted vCPU's wake-up alone is tens of microseconds, several
//! times the polled mailbox round trip (docs/GSAS.md). After a run that served packets, the
//! work keeps looking at the served rings for a while, as KVM's halt polling does for a vCPU:
//! back-to-back requests (a thread doing GSAS operations on this node's memory) are then found
//! without either.
//!
//! The window adapts as KVM's `halt_poll_ns` does: it grows (doubling from `POLL_START_NS`, up
//! to `poll_us`) when a request came after the window had closed but within `poll_us`, and it
//! halves (to 0 below the start) when a window passed without any. So a node that gets requests
//! now and then stops spinning: on the virtual cluster, where four one-vCPU nodes share two host
//! cores, idle spinning takes host time from the nodes that issue the requests.
//!
//! While a window is open the rings' polling flags (`layout::POLLING_OFFSET`) are set, and
//! senders skip the doorbell; after clearing them the work looks at the rings once more for
//! `POLL_GRACE_NS`, for a sender that read a flag just before it was cleared.
//!
//! Polling stops at once when another task wants this CPU, so a local issuer (or anything else)
//! never waits for it, and one run never spins longer than `POLL_RUN_NS`: kernel messages and
//! other work items get their turn in between.

use crate::{counters::Counters, owners::Owners, served::Served, window::Window};
use core::sync::atomic::{fence, AtomicBool, Ordering};
use kernel::task;

/// The longest one run of the dispatch work spins (it queues itself again if still busy).
const POLL_RUN_NS: u64 = 2_000_000;
/// The first window after none (KVM's `halt_poll_ns_grow_start`).
const POLL_START_NS: u64 = 10_000;
/// How long the work still looks at the rings after clearing their polling flags. Far longer
/// than a store takes to become visible to another CPU.
const POLL_GRACE_NS: u64 = 5_000;

/// What polling uses of the other parts of the state: where the rings are, whose interfaces
/// they serve, the counters, and whether the module is stopping.
#[derive(Clone, Copy)]
pub(crate) struct PollWith<'a> {
    pub(crate) win: &'a Window,
    pub(crate) owners: &'a Owners,
    pub(crate) counters: &'a Counters,
    pub(crate) stopping: &'a AtomicBool,
}

impl Served {
    /// After a run (begun at `started`) that served packets: polls the served rings for the
    /// current window after the last packet, serving what arrives, and adapts the window.
    /// `true` if the work should run again (kernel messages arrived, or it stopped while
    /// packets kept coming).
    pub(crate) fn busy_poll(&self, with: &PollWith<'_>, started: u64) -> bool {
        let win = with.win;
        let max = self.poll_ns;
        if max == 0 {
            return false;
        }
        let mut window = self.poll_window.load(Ordering::Relaxed);
        let gap = started.saturating_sub(self.poll_idle_at.load(Ordering::Relaxed));
        if gap > window && gap <= max {
            // Not `clamp`: `poll_us` may be below the start (then the window is `poll_us`).
            window = window.saturating_mul(2).max(POLL_START_NS).min(max);
        }
        let (again, served) = if window == 0 {
            (false, 0)
        } else {
            self.open_window(with, window)
        };
        if served == 0 {
            window /= 2;
            if window < POLL_START_NS {
                window = 0;
            }
        }
        self.poll_window.store(window, Ordering::Relaxed);
        self.poll_idle_at.store(win.now_ns(), Ordering::Relaxed);
        again
    }

    /// Polls for up to `window` ns after the last packet, with the rings' polling flags set
    /// (senders skip the doorbell meanwhile): whether to run again, and how many packets were
    /// served.
    fn open_window(&self, with: &PollWith<'_>, window: u64) -> (bool, u64) {
        let win = with.win;
        self.set_polling(win, true);
        let (again, served) = self.poll_loop(with, window);
        self.set_polling(win, false);
        // A sender that read the flag still set did not ring, and its packet may become visible
        // here only now (its store and our clearing can pass each other in store buffers, and
        // under TCG a one-vCPU guest's fences are not emitted): look again for a while, and
        // leave it to the next run if anything came.
        fence(Ordering::SeqCst);
        let cleared = win.now_ns();
        loop {
            if self.dispatch_pending(win) != (false, false) {
                return (true, served);
            }
            if win.now_ns().saturating_sub(cleared) > POLL_GRACE_NS {
                return (again, served);
            }
        }
    }

    fn poll_loop(&self, with: &PollWith<'_>, window: u64) -> (bool, u64) {
        let PollWith {
            win,
            owners,
            counters,
            stopping,
        } = *with;
        counters.busy_polls.fetch_add(1, Ordering::Relaxed);
        let run = win.now_ns();
        let mut last = run;
        let mut served = 0u64;
        let again = loop {
            if stopping.load(Ordering::Acquire)
                || !task::single_task_running()
                || task::need_resched()
            {
                break false;
            }
            let (packets, kmsgs) = self.dispatch_pending(win);
            if kmsgs {
                break true;
            }
            let now = win.now_ns();
            if packets {
                let (handed, more) = self.drain(win, owners, counters);
                served += handed as u64;
                if more || now.saturating_sub(run) > POLL_RUN_NS {
                    break true;
                }
                last = win.now_ns();
                continue;
            }
            if now.saturating_sub(last) > window {
                break false;
            }
            // No `cpu_relax()`: under TCG a PAUSE leaves translated code, which made each look
            // cost microseconds (remote Fetch&Add 6-8 us with it, 5 without); a look is not a
            // tight spin anyway (the clock, the scheduler's state and the rings in the window).
        };
        counters
            .busy_poll_packets
            .fetch_add(served, Ordering::Relaxed);
        (again, served)
    }
}
