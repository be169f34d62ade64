// SPDX-License-Identifier: GPL-2.0
//! Giving lent memory back to its lenders, wiped where this node may still write it: a lost
//! part of a mirror, a disk that could not be made, every part at unload.

use crate::instance::{Instance, InstanceState};
use crate::kram::Kram;
use crate::kram_client::send;
use crate::layout::Lease;
use crate::wire::kram::{to_daemon, KramMsg};
use kernel::prelude::*;

impl Kram {
    /// Gives a lease back: zeroed, so that the lender's next borrower cannot read this node's
    /// swapped-out pages, then FREE. One that lapsed on our clock (or could not be wiped) must
    /// not be written: FREE_UNWIPED, and its lender wipes it (the lender refuses a FREE of a
    /// range that is not ours, and holds a lapsed lease while this node is frozen). A
    /// revoked one, or one whose lender's memory went away, is not ours: left alone.
    pub(crate) fn give_back(&self, id: u32, l: &Lease) {
        if l.clock.is_revoked() || self.fabric.lost(l.node) {
            pr_warn!(
                "kram{}: chunks {}+{} of node {} not ours any more: not touched, not returned\n",
                id,
                l.first_chunk,
                l.chunks,
                l.node
            );
            return;
        }
        let wiped = l.clock.usable(self.epoch.now())
            && self
                .fabric
                .gas()
                .lent_range(l.node, l.first_chunk, l.chunks)
                .ok_or(EINVAL)
                .and_then(|(offset, len)| self.fabric.gas().wipe_long(offset, len))
                .inspect_err(|e| pr_warn!("kram{}: chunks {}+{} of node {} could not be wiped ({:?}): returned for the lender to wipe\n", id, l.first_chunk, l.chunks, l.node, e))
                .is_ok();
        let tag = if wiped { 0 } else { to_daemon::FREE_UNWIPED };
        send(
            l.node,
            KramMsg::new(
                to_daemon::FREE,
                self.me(),
                id as u8,
                l.first_chunk,
                l.chunks,
                tag,
            ),
        );
        pr_info!(
            "kram{}: returned chunks {}+{} to node {}{}\n",
            id,
            l.first_chunk,
            l.chunks,
            l.node,
            if wiped {
                ""
            } else {
                " unwiped (lease lapsed on our clock): the lender wipes them"
            }
        );
    }

    /// Empties the layout and gives every part back.
    pub(crate) fn give_back_all(&self, inst: &Instance, state: &InstanceState) {
        // Room first, outside the spinlock: a part that found none would never be given back.
        // Parts join the layout only under `state`, which the caller holds.
        let count = state.shared.layout.lock().parts().count();
        let mut parts = KVec::new();
        if parts.reserve(count, GFP_KERNEL).is_err() {
            pr_err!(
                "kram{}: no memory to give its parts back: the lenders reclaim them at expiry\n",
                inst.id
            );
            return;
        }
        {
            let mut l = state.shared.layout.lock();
            for copy in l.copies.iter_mut() {
                while let Some(p) = copy.pop() {
                    let _ = parts.push_within_capacity(p.lease);
                }
            }
        }
        for lease in parts.iter() {
            self.give_back(inst.id, lease);
        }
    }
}
