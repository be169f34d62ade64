// SPDX-License-Identifier: GPL-2.0
//! The home's side of `wire::trees`: a request is applied only under a claim on its issuer's
//! interface, so a previous owner's request is never applied with the next owner's pages or
//! answered into its slots; and the live-tree map that tells every node which of its trees
//! still have pages or children here, so that no tree id is made again while they exist.
//!
//! The claim and the map words are in this node's partition; only this module writes them.

use crate::{
    fabric_client::Access,
    gas::MAX_NODES,
    gsas::{owner, prot, USER_INTERFACES},
    service::{Inner, Service},
    stats::Counter,
    trees,
};
use core::sync::atomic::{fence, Ordering};
use kernel::{new_spinlock, prelude::*, sync::SpinLock};

/// Slots of the claim table (`wire::trees::claim`): one per (issuer node, interface).
const SLOTS: usize = MAX_NODES as usize * 64;

/// How many requests of each (issuer, interface) are being applied: the claim word is set by
/// the first and cleared by the last (a thread's requests can overlap: several threads may
/// share one mailbox file, and local requests run in the sender's context).
#[pin_data]
pub(crate) struct Claims {
    #[pin]
    held: SpinLock<[u16; SLOTS]>,
}

impl Claims {
    pub(crate) fn new() -> impl PinInit<Self> {
        pin_init!(Self {
            held <- new_spinlock!([0; SLOTS], "unimem_gsas::claims"),
        })
    }
}

/// A claim on (issuer node, interface) under the entry word `entry`: released when dropped.
pub(crate) struct Claim<'a> {
    service: &'a Service,
    /// The window access the request is served in: the claim is released in it too.
    pub(crate) w: &'a Access<'a>,
    /// Whether the claim table holds it (not for a local sender's own call).
    held: bool,
    pub(crate) from: u32,
    pub(crate) iface: u32,
    pub(crate) entry: u64,
}

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        if !self.held {
            return;
        }
        let s = self.service;
        let slot = slot(self.from, self.iface);
        let mut held = s.claims.held.lock();
        held[slot] -= 1;
        if held[slot] == 0 {
            // Release: what was written under the claim (answer, live bits) is visible to a
            // node that reads the claim cleared.
            if let Some(c) = self
                .w
                .part_word(s.node, trees::claim(self.from, self.iface))
            {
                c.store(0, Ordering::Release);
            }
        }
    }
}

impl Service {
    /// Zeroes the claim table and the live maps (at load: nothing is claimed, and a previous
    /// load's pool, with everything in it, is gone), then marks them kept.
    pub(crate) fn reset_tree_tables(&self) -> Result {
        let (start, end) = (trees::TABLES.start, trees::TABLES.end);
        self.gas.wipe_long(self.part + start, end - start)?;
        self.set_header(trees::MAGIC);
        Ok(())
    }

    /// Marks the tables no longer kept (unload: no request is applied any more).
    pub(crate) fn retire_tree_tables(&self) {
        self.set_header(0);
    }

    fn set_header(&self, value: u64) {
        if let Some(w) = self.gas.access() {
            if let Some(h) = w.part_word(self.node, trees::HEADER_OFFSET) {
                h.store(value.to_le(), Ordering::Release);
            }
        }
    }

    /// Claims interface `iface` of node `from` for a request of tree `tree`, if that interface
    /// is still owned in that tree: `None` (the request is to be dropped) otherwise.
    pub(crate) fn claim<'a>(
        &'a self,
        w: &'a Access<'a>,
        from: u32,
        iface: u32,
        tree: u32,
    ) -> Option<Claim<'a>> {
        self.claim_if(w, from, iface, |entry| owner::tree(entry) == Some(tree))
    }

    /// The claim of a request from `from`'s interface `iface` in tree `tree`: made in its
    /// local sender's `SEND` (`in_sender`) or not.
    pub(crate) fn claim_request<'a>(
        &'a self,
        w: &'a Access<'a>,
        in_sender: bool,
        from: u32,
        iface: u32,
        tree: u32,
    ) -> Option<Claim<'a>> {
        if in_sender {
            self.sender_claim(w, from, iface, tree)
        } else {
            self.claim(w, from, iface, tree)
        }
    }

    /// The claim of a request applied in its local sender's `SEND` (`kmsg_api::FROM_SENDER`):
    /// the sender holds the interface for the whole call, so nothing is stored; only its entry
    /// word is read (for the tree and the answer's `seq`).
    fn sender_claim<'a>(
        &'a self,
        w: &'a Access<'a>,
        from: u32,
        iface: u32,
        tree: u32,
    ) -> Option<Claim<'a>> {
        if from != self.node || iface >= USER_INTERFACES {
            return None;
        }
        let entry = u64::from_le(
            w.part_word(from, owner::entry(iface))?
                .load(Ordering::Acquire),
        );
        if owner::tree(entry) != Some(tree) {
            return self.stale();
        }
        Some(Claim {
            service: self,
            w,
            held: false,
            from,
            iface,
            entry,
        })
    }

    /// Claims (`from`, `iface`) again under the entry word a previous claim had, to answer
    /// later (remoteFork): `None` if the interface changed owner (or tree) since.
    pub(crate) fn reclaim<'a>(
        &'a self,
        w: &'a Access<'a>,
        from: u32,
        iface: u32,
        entry: u64,
    ) -> Option<Claim<'a>> {
        self.claim_if(w, from, iface, |e| e == entry)
    }

    fn claim_if<'a>(
        &'a self,
        w: &'a Access<'a>,
        from: u32,
        iface: u32,
        ok: impl Fn(u64) -> bool,
    ) -> Option<Claim<'a>> {
        if from >= MAX_NODES || iface >= USER_INTERFACES {
            return None;
        }
        let slot = slot(from, iface);
        let mut held = self.claims.held.lock();
        let entry_word = w.part_word(from, owner::entry(iface))?;
        let mine = w.part_word(self.node, trees::claim(from, iface))?;
        let entry = u64::from_le(entry_word.load(Ordering::Acquire));
        if !ok(entry) {
            return self.stale();
        }
        if held[slot] != 0 {
            // Already claimed under some word: the same one, or the first claim's holder will
            // still be applying a request of a withdrawn owner, which the issuer waits for.
            if u64::from_le(mine.load(Ordering::Relaxed)) != entry {
                return self.stale();
            }
        } else {
            mine.store(entry.to_le(), Ordering::Relaxed);
        }
        // Pairs with the issuer's fence after it withdraws an entry (`wire::trees`).
        fence(Ordering::SeqCst);
        if u64::from_le(entry_word.load(Ordering::Acquire)) != entry {
            if held[slot] == 0 {
                mine.store(0, Ordering::Release);
            }
            return self.stale();
        }
        held[slot] += 1;
        Some(Claim {
            service: self,
            w,
            held: true,
            from,
            iface,
            entry,
        })
    }

    /// A request refused: its interface changed owner (or tree).
    fn stale<'a>(&self) -> Option<Claim<'a>> {
        self.stats.bump(Counter::Stale);
        None
    }

    /// The credentials the issuer's node published for the claimed interface: written before
    /// the entry word the claim holds, so they are that owner's.
    pub(crate) fn issuer_creds(&self, claim: &Claim<'_>) -> owner::Creds {
        let mut b = [0u8; owner::CREDS_LEN as usize];
        claim
            .w
            .read_part(claim.from, owner::creds(claim.iface), &mut b);
        owner::Creds::decode(&b)
    }

    /// Sets or clears tree `tree`'s bit in this node's live map as it holds pages or children
    /// of it now. Under the service lock (the only writer of the map).
    pub(crate) fn refresh_live(&self, inner: &Inner, tree: u32) {
        let holds =
            inner.pool.as_ref().is_some_and(|p| p.pages.holds(tree)) || inner.children.holds(tree);
        self.set_live(tree, holds);
    }

    /// Sets (`on`: something of `tree` is here now) or clears its bit in this node's live map.
    /// Under the service lock.
    pub(crate) fn set_live(&self, tree: u32, on: bool) {
        if tree == 0 || prot::node(tree) >= MAX_NODES {
            return;
        }
        if let Some(w) = self.gas.access() {
            set_bit(&w, self.node, tree, on);
        }
    }
}

/// The index of (issuer `from`, interface `iface`) in [`Claims::held`] (`from < MAX_NODES`,
/// `iface < USER_INTERFACES`, checked by the claimers).
fn slot(from: u32, iface: u32) -> usize {
    (from * 64 + iface) as usize
}

/// Sets (`on`) or clears `tree`'s bit in `node`'s live map.
fn set_bit(w: &Access<'_>, node: u32, tree: u32, on: bool) {
    let (offset, mask) = trees::live_bit(prot::node(tree), tree as u16);
    if let Some(word) = w.part_word(node, offset) {
        let old = u64::from_le(word.load(Ordering::Relaxed));
        let new = if on { old | mask } else { old & !mask };
        if new != old {
            word.store(new.to_le(), Ordering::Release);
        }
    }
}
