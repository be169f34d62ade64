// SPDX-License-Identifier: GPL-2.0
//! This node's kernel heartbeat in the fabric (`gas::HEARTBEAT_OFFSET`): a new value of its
//! word every `RENEW_PERIOD_MS` while the module is loaded, `heartbeat::STOPPED` once it
//! unloads.
//!
//! The fabric's node state says whether a node is connected, not whether its kernel runs. A
//! lender needs both to apply the lease rule (docs/KRAM-DAEMON.md): a borrower that is
//! connected but whose heartbeat stalled is frozen and may still use what it borrowed once it
//! runs again, so its lapsed leases are held; a borrower whose heartbeat moves and that does
//! not renew has dropped the lease, and it is reclaimed. Beating here, in the module every
//! other one depends on, rather than in each borrower, makes one heartbeat per node whichever
//! borrowers are loaded.

use crate::{
    fabric::Fabric,
    gas::{heartbeat, HEARTBEAT_END, HEARTBEAT_OFFSET},
    lease_ticker::{LeaseTicker, Tick},
};
use core::sync::atomic::{AtomicU64, Ordering};
use kernel::{prelude::*, sync::Arc};

/// What the ticker drives: this node's word.
pub(crate) struct Heartbeat {
    fabric: Arc<Fabric>,
}

impl Heartbeat {
    /// This node's heartbeat word, if the control area has the table and the device is live.
    fn word(&self) -> Option<&AtomicU64> {
        let f = &self.fabric;
        if f.desc.ctl_size < HEARTBEAT_END || !f.is_live() {
            return None;
        }
        f.window
            .word((HEARTBEAT_OFFSET + 8 * u64::from(f.node_id)) as usize)
    }

    /// Stores `new(old)` in this node's word (only this node writes it).
    fn update(&self, new: impl FnOnce(u64) -> u64) {
        if let Some(w) = self.word() {
            let old = u64::from_le(w.load(Ordering::Relaxed));
            w.store(new(old).to_le(), Ordering::Release);
        }
    }
}

impl Tick for Heartbeat {
    fn tick(this: &Arc<Self>) {
        this.update(heartbeat::next);
    }
}

/// Beats from creation (the first beat at once) until dropped; then marks the word stopped.
pub(crate) struct Beating {
    ticker: Arc<LeaseTicker<Heartbeat>>,
    heart: Arc<Heartbeat>,
}

impl Beating {
    pub(crate) fn start(fabric: Arc<Fabric>) -> Result<Self> {
        let heart = Arc::new(Heartbeat { fabric }, GFP_KERNEL)?;
        let ticker = LeaseTicker::new(heart.clone())?;
        LeaseTicker::start(&ticker);
        Ok(Self { ticker, heart })
    }
}

impl Drop for Beating {
    fn drop(&mut self) {
        LeaseTicker::stop(&self.ticker);
        self.heart.update(|old| old | heartbeat::STOPPED);
    }
}
