// SPDX-License-Identifier: GPL-2.0
//! Rate limit for log lines a peer can cause (malformed messages, damaged rings): a peer must
//! not be able to flood the console. Declared by `kram_client.rs` (as its `log_limit`) and, at
//! its crate root, by `unimem_mailbox`; needs nothing of its includer.

use core::sync::atomic::{AtomicI64, AtomicU32, Ordering};

/// Limits log lines a peer can cause: at most [`LogLimit::BURST`] per
/// [`LogLimit::WINDOW_NS`]; the counters of the caller count everything.
pub(crate) struct LogLimit {
    window: AtomicI64,
    used: AtomicU32,
}

impl LogLimit {
    const BURST: u32 = 10;
    const WINDOW_NS: i64 = 5_000_000_000;

    pub(crate) const fn new() -> Self {
        Self {
            window: AtomicI64::new(0),
            used: AtomicU32::new(0),
        }
    }

    /// Whether a line may be printed at `now` (nanoseconds from a fixed origin, as
    /// `kram_client::Epoch` gives).
    pub(crate) fn allow(&self, now: i64) -> bool {
        let start = self.window.load(Ordering::Relaxed);
        if now - start >= Self::WINDOW_NS
            && self
                .window
                .compare_exchange(start, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            self.used.store(0, Ordering::Relaxed);
        }
        // Saturates, so a flood cannot wrap the count back into the burst.
        self.used
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |used| {
                (used < Self::BURST).then_some(used + 1)
            })
            .is_ok()
    }
}
