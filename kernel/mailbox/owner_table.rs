// SPDX-License-Identifier: GPL-2.0
//! This node's owner table (`gsas::owner`): who holds each user interface, in which tree and
//! with which identity, for the homes that seal the requests of its submission slots
//! (`submit.rs`) and that claim its interfaces (`wire::trees`). Only this driver writes it.

use crate::{
    fabric_client::Access,
    gsas::{
        owner::{self, Creds},
        submit_slot, SUBMIT_SEQ_OFFSET, USER_INTERFACES,
    },
    owners::Owners,
    packet::Header,
    window::Window,
};
use core::sync::atomic::{fence, Ordering};

impl Owners {
    /// Empties this node's owner table (at load: no interface has an owner yet), credentials
    /// included.
    pub(crate) fn reset_owner_table(win: &Window, w: &Access<'_>) {
        let p = win.part_ptr(w, win.node, owner::TABLE_OFFSET as usize);
        // SAFETY: the table is one page of this node's partition below `TABLE_END`
        // (`part_ptr`); no interface has an owner yet, so nobody else writes it.
        unsafe { core::ptr::write_bytes(p, 0, (owner::TABLE_END - owner::TABLE_OFFSET) as usize) };
    }

    /// Publishes in this node's owner table that local interface `id` belongs to `owner`'s
    /// tree, with its credentials (`None`: to nobody); returns the publication's number. The
    /// interface's owner lock is held, so publications of one interface do not interleave.
    pub(crate) fn publish_owner(
        &self,
        win: &Window,
        w: &Access<'_>,
        id: u32,
        owner: Option<(u32, Creds)>,
    ) -> Option<u32> {
        if id >= USER_INTERFACES {
            return None;
        }
        let entry = win.word64(w, win.node, owner::entry(id));
        let bitmap = win.word64(w, win.node, owner::TABLE_OFFSET);
        // Withdrawn first: a home copying a request now sees the word change and drops it, and
        // a home about to claim the interface sees it too (the fence pairs with theirs:
        // `wire::trees`).
        entry.store(0, Ordering::Release);
        fence(Ordering::SeqCst);
        bitmap.fetch_and(!(1u64 << id), Ordering::AcqRel);
        let (tree, creds) = owner?;
        for home in 0..win.nodes {
            win.word32(
                w,
                win.node,
                submit_slot(id, home) + SUBMIT_SEQ_OFFSET as u64,
            )
            .store(0, Ordering::Release);
        }
        let dst: *mut u8 = win.part_word(w, win.node, owner::creds(id));
        for (i, b) in creds.encode().iter().enumerate() {
            // SAFETY: the credentials of a user interface lie inside the owner table page
            // (`part_word`); only this driver writes them, under the owner lock.
            unsafe { dst.add(i).write_volatile(*b) };
        }
        let publication = self.publications.fetch_add(1, Ordering::Relaxed);
        // Release: a home that reads this word reads the credentials above.
        entry.store(owner::word(publication, tree), Ordering::Release);
        bitmap.fetch_or(1u64 << id, Ordering::AcqRel);
        Some(publication)
    }

    /// The credentials node `header.node` published for its interface `header.iface`, if that
    /// interface is a user's and still owned in `header.prot_id`'s tree (read between two
    /// reads of its entry word that agree: the credentials are written before the word).
    pub(crate) fn sender_creds(w: &Access<'_>, header: &Header) -> Option<Creds> {
        let (node, iface) = (u32::from(header.node), u32::from(header.iface));
        if iface >= USER_INTERFACES {
            return None;
        }
        let entry = w.part_word(node, owner::entry(iface))?;
        let before = entry.load(Ordering::Acquire);
        if owner::tree(before) != Some(header.prot_id) {
            return None;
        }
        let mut b = [0u8; owner::CREDS_LEN as usize];
        if !w.read_part(node, owner::creds(iface), &mut b) {
            return None;
        }
        fence(Ordering::Acquire);
        (entry.load(Ordering::Acquire) == before).then(|| Creds::decode(&b))
    }

    /// The credentials published for local interface `id` (its owner's, while it has one).
    pub(crate) fn published_creds(win: &Window, w: &Access<'_>, id: u32) -> Creds {
        let mut b = [0u8; owner::CREDS_LEN as usize];
        w.read_part(win.node, owner::creds(id), &mut b);
        Creds::decode(&b)
    }
}
