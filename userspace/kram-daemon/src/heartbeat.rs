//! Which connected borrowers may still be using a lapsed lease: the lender's half of the lease
//! rule (docs/KRAM-DAEMON.md).
//!
//! Every node's kernel bumps its heartbeat word in the fabric once per renewal period
//! (`gas::HEARTBEAT_OFFSET`, `unimem_eusrvmem`). A borrower that is connected but whose
//! heartbeat has not moved for [`FROZEN_AFTER`] is frozen (a stopped VM, a debugger, a live
//! migration): once it runs again it renews, and until then it may not know its lease lapsed,
//! so the lender holds the lease. A borrower whose heartbeat moves but that does not renew is
//! alive and dropped the lease (or lost touch with this daemon): its borrowers stop using a
//! lapsed lease on their own clock, so it is reclaimed. After a stall the heartbeat may move
//! a moment before the first renewal arrives: the lease is held [`THAW_GRACE`] longer.

use std::{collections::HashMap, time::Duration, time::Instant};
use unimem_wire::{
    gas::heartbeat,
    kram::{FROZEN_AFTER_MS, RENEW_PERIOD_MS, THAW_GRACE_MS},
};

/// How often a node's kernel beats (its lease ticker's period).
pub const PERIOD: Duration = Duration::from_millis(RENEW_PERIOD_MS);
/// How long a heartbeat must stand still for its node to count as frozen.
pub const FROZEN_AFTER: Duration = Duration::from_millis(FROZEN_AFTER_MS);
/// How long a node counts as thawing after its heartbeat moved again.
pub const THAW_GRACE: Duration = Duration::from_millis(THAW_GRACE_MS);

/// What was last seen of one node's heartbeat.
#[derive(Debug, Clone, Copy)]
struct Seen {
    word: u64,
    /// When `word` was first read.
    since: Instant,
    /// Whether the word ever changed while watched: a node whose kernel was never seen beating
    /// (an older module, a fabric without the table, frozen since before this daemon started)
    /// is not taken as frozen.
    moved: bool,
    /// When the word moved after standing still for [`FROZEN_AFTER`] or more.
    thawed: Option<Instant>,
}

/// The heartbeats of the nodes this lender watches.
#[derive(Debug, Default)]
pub struct Heartbeats {
    nodes: HashMap<u8, Seen>,
}

impl Heartbeats {
    pub fn new() -> Self {
        Self::default()
    }

    /// Records `node`'s heartbeat word as read at `now`. When the word moved since the last
    /// read, the beats it counted tell how long the node ran meanwhile (one per
    /// [`PERIOD`]): if it missed [`FROZEN_AFTER`] of them, it was frozen and is thawing now.
    /// So a watcher that was itself stopped, or frozen with the node (a pool lent by the
    /// node's own daemon), still tells a node that ran from one that did not.
    pub fn observe(&mut self, node: u8, word: u64, now: Instant) {
        let seen = self.nodes.entry(node).or_insert(Seen {
            word,
            since: now,
            moved: false,
            thawed: None,
        });
        if seen.word != word {
            let beats = (word & !heartbeat::STOPPED).wrapping_sub(seen.word & !heartbeat::STOPPED);
            let ran = PERIOD.saturating_mul(u32::try_from(beats).unwrap_or(u32::MAX));
            let gap = now.saturating_duration_since(seen.since);
            if gap.saturating_sub(ran) >= FROZEN_AFTER {
                seen.thawed = Some(now);
            }
            seen.word = word;
            seen.since = now;
            seen.moved = true;
        }
    }

    /// Whether `node`'s kernel is frozen or thawing at `now`: a connected borrower there may
    /// still use a lease that lapsed. Never for a node whose kernel stopped beating on purpose
    /// (`heartbeat::STOPPED`: its modules unloaded) or was never seen beating.
    pub fn frozen(&self, node: u8, now: Instant) -> bool {
        let Some(s) = self.nodes.get(&node) else {
            return false;
        };
        if !s.moved || heartbeat::stopped(s.word) {
            return false;
        }
        now.saturating_duration_since(s.since) >= FROZEN_AFTER
            || s.thawed
                .is_some_and(|t| now.saturating_duration_since(t) < THAW_GRACE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEC: Duration = Duration::from_secs(1);

    /// Beats once a second from `t` for `secs` seconds, starting at `word`.
    fn beat(h: &mut Heartbeats, node: u8, t: Instant, word: u64, secs: u32) -> (Instant, u64) {
        let (mut t, mut w) = (t, word);
        for _ in 0..secs {
            h.observe(node, w, t);
            t += SEC;
            w = heartbeat::next(w);
        }
        (t, w)
    }

    #[test]
    fn a_beating_node_is_not_frozen() {
        let mut h = Heartbeats::new();
        let (t, _) = beat(&mut h, 1, Instant::now(), 5, 30);
        assert!(!h.frozen(1, t));
        assert!(!h.frozen(2, t), "a node never seen");
    }

    #[test]
    fn a_stalled_node_is_frozen_and_thaws_after_a_grace() {
        let mut h = Heartbeats::new();
        let (t, w) = beat(&mut h, 1, Instant::now(), 5, 3);
        h.observe(1, w, t);
        assert!(!h.frozen(1, t + FROZEN_AFTER - SEC), "a short stall");
        let thaw = t + 30 * SEC;
        h.observe(1, w, t + FROZEN_AFTER);
        assert!(h.frozen(1, t + FROZEN_AFTER));
        assert!(h.frozen(1, thaw));
        // Beating again: still held for the grace, then not.
        h.observe(1, heartbeat::next(w), thaw);
        assert!(h.frozen(1, thaw + THAW_GRACE - SEC));
        beat(
            &mut h,
            1,
            thaw + SEC,
            heartbeat::next(heartbeat::next(w)),
            10,
        );
        assert!(!h.frozen(1, thaw + THAW_GRACE + SEC));
    }

    #[test]
    fn a_watcher_that_was_stopped_counts_the_beats_it_missed() {
        let mut h = Heartbeats::new();
        let (t, w) = beat(&mut h, 1, Instant::now(), 5, 3);
        let (_, w2) = beat(&mut h, 2, Instant::now(), 9, 3);
        // Not read for 30 s (this daemon was stopped). Node 1 kept beating: not frozen.
        let later = t + 30 * SEC;
        h.observe(1, w + 30, later);
        assert!(!h.frozen(1, later), "it ran all along");
        // Node 2 was frozen with this daemon (its own node) and beat once since it thawed.
        h.observe(2, heartbeat::next(w2), later);
        assert!(h.frozen(2, later), "it missed 29 beats");
        let (t, _) = beat(&mut h, 2, later + SEC, w2 + 2, 6);
        assert!(!h.frozen(2, t), "the grace is over");
    }

    #[test]
    fn never_beating_or_stopped_is_not_frozen() {
        let mut h = Heartbeats::new();
        let t = Instant::now();
        h.observe(1, 0, t);
        h.observe(1, 0, t + 60 * SEC);
        assert!(!h.frozen(1, t + 60 * SEC), "never seen beating");
        let (t, w) = beat(&mut h, 2, t, 9, 3);
        h.observe(2, w | heartbeat::STOPPED, t);
        assert!(!h.frozen(2, t + 60 * SEC), "stopped on purpose");
    }
}
