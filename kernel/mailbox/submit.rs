// SPDX-License-Identifier: GPL-2.0
//! Requests without a system call: the submission slots of the interfaces' GSAS areas
//! (`gsas::submit_slot`), which this node's GSAS service takes from its peers, reading their
//! owner tables (`gsas::owner`; this node's is written by `owner_table.rs`).
//!
//! A `SEND` costs a system call because only a driver may write a packet's header. A
//! submission slot needs none: the thread writes the request into the slot for the home node in
//! its own (mapped) area, and the home's mailbox, while it busy-polls its service's rings
//! (`poll.rs`) or when rung (`KICK`), seals it with the header of the slot's place: the issuer
//! node from the partition, the interface from the slot, the tree from the issuer's owner
//! table, which only the issuer's driver writes and no thread can map. This is how RDMA
//! doorbell pages and io_uring's polled submission avoid the call; the trust is the sealed
//! headers' own (a peer's kernel can forge either).
//!
//! Publication (`owner_table.rs`): before an owner's entry is published, its slots' `seq`s are
//! set to 0, so what a previous owner left is never taken for the new one. A home takes a
//! slot's request when its `seq` is not 0 and differs from the last it took under the same
//! entry word, and only if the word read before and after copying the request is the same:
//! then the request was written while that owner held the interface.

use crate::{
    counters::Counters,
    fabric_client::Access,
    gsas::{owner, submit_slot, SUBMIT_PAYLOAD_OFFSET, SUBMIT_SEQ_OFFSET, USER_INTERFACES},
    packet::{Header, Packet, PACKET_LEN, PAYLOAD_LEN},
    served::Served,
    window::Window,
};
use core::sync::atomic::{fence, AtomicU64, Ordering};

/// The bits of the table's bitmap that can name a user interface.
const USER_MASK: u64 = (1 << USER_INTERFACES) - 1;

/// What a home remembers of a slot: the entry word's publication and the `seq` it last took.
fn taken(publication: u32, seq: u32) -> u64 {
    u64::from(publication) << 32 | u64::from(seq)
}

impl Served {
    /// The request in `sender`'s slot of interface `id` for this node, if it is new: what to
    /// remember as taken, the owner's tree and the payload. The entry word, `seq` and the
    /// payload are read in that order, then `seq` and the word again.
    /// `None` also when the slot changed hands meanwhile (looked at again next time).
    fn new_submission(
        &self,
        win: &Window,
        w: &Access<'_>,
        sender: u32,
        id: u32,
    ) -> Option<(u64, u32, [u8; PAYLOAD_LEN])> {
        let entry = win.word64(w, sender, owner::entry(id));
        let before = entry.load(Ordering::Acquire);
        let tree = owner::tree(before)?;
        let slot = submit_slot(id, win.node);
        let seq = Self::slot_seq(win, w, sender, id);
        let key = taken((before >> 24) as u32, seq);
        if seq == 0 || self.last_taken(sender, id)?.load(Ordering::Relaxed) == key {
            return None;
        }
        let mut payload = [0u8; PAYLOAD_LEN];
        let src: *const u8 = win.part_word(w, sender, slot + SUBMIT_PAYLOAD_OFFSET as u64);
        for (i, b) in payload.iter_mut().enumerate() {
            // SAFETY: the slot's payload bytes lie inside the mapped window (`part_word`);
            // another node may write them meanwhile, hence the volatile byte reads.
            *b = unsafe { src.add(i).read_volatile() };
        }
        fence(Ordering::Acquire);
        let again = Self::slot_seq(win, w, sender, id);
        (again == seq && entry.load(Ordering::Acquire) == before).then_some((key, tree, payload))
    }

    fn last_taken(&self, sender: u32, id: u32) -> Option<&AtomicU64> {
        self.last_taken
            .get(sender as usize * USER_INTERFACES as usize + id as usize)
    }

    fn owned_ifaces(win: &Window, w: &Access<'_>, sender: u32) -> impl Iterator<Item = u32> {
        // A peer's bitmap is untrusted: at most the 63 user interfaces are looked at.
        let mut bits = win
            .word64(w, sender, owner::TABLE_OFFSET)
            .load(Ordering::Acquire)
            & USER_MASK;
        core::iter::from_fn(move || {
            let id = bits.trailing_zeros();
            (bits != 0).then(|| {
                bits &= bits - 1;
                id
            })
        })
    }

    /// Seals the new requests of `sender`'s submission slots for this node into `out` (at
    /// most its length): how many. One consumer at a time (the caller holds `handlers`).
    pub(crate) fn take_submissions(
        &self,
        win: &Window,
        w: &Access<'_>,
        counters: &Counters,
        sender: u32,
        out: &mut [[u8; PACKET_LEN]],
    ) -> usize {
        if sender == win.node || sender >= win.nodes {
            // Local threads `SEND`: that applies their request at once.
            return 0;
        }
        let mut n = 0;
        for id in Self::owned_ifaces(win, w, sender) {
            let Some(slot) = out.get_mut(n) else { break };
            let Some((key, tree, payload)) = self.new_submission(win, w, sender, id) else {
                continue;
            };
            if let Some(last) = self.last_taken(sender, id) {
                last.store(key, Ordering::Relaxed);
            }
            let header = Header {
                node: sender as u8,
                iface: id as u16,
                prot_id: tree,
            };
            *slot = Packet::seal(header, &payload);
            n += 1;
        }
        counters.submitted.fetch_add(n as u64, Ordering::Relaxed);
        n
    }

    /// Whether a peer's submission slot holds a request for this node not taken yet.
    pub(crate) fn submissions_pending(&self, win: &Window, w: &Access<'_>) -> bool {
        (0..win.nodes)
            .filter(|&s| s != win.node)
            .any(|s| Self::owned_ifaces(win, w, s).any(|id| self.slot_is_new(win, w, s, id)))
    }

    fn slot_is_new(&self, win: &Window, w: &Access<'_>, sender: u32, id: u32) -> bool {
        let (seq, key) = Self::slot_now(win, w, sender, id);
        seq != 0
            && self
                .last_taken(sender, id)
                .is_some_and(|l| l.load(Ordering::Relaxed) != key)
    }

    /// The `seq` of `sender`'s slot of interface `id` for this node.
    fn slot_seq(win: &Window, w: &Access<'_>, sender: u32, id: u32) -> u32 {
        win.word32(
            w,
            sender,
            submit_slot(id, win.node) + SUBMIT_SEQ_OFFSET as u64,
        )
        .load(Ordering::Acquire)
    }

    /// The slot's `seq`, and what remembering it as taken under the current entry word stores.
    fn slot_now(win: &Window, w: &Access<'_>, sender: u32, id: u32) -> (u32, u64) {
        let word = win
            .word64(w, sender, owner::entry(id))
            .load(Ordering::Acquire);
        let seq = Self::slot_seq(win, w, sender, id);
        (seq, taken((word >> 24) as u32, seq))
    }

    /// Marks every request now in the slots as taken: left while nobody served them, they are
    /// not for the service starting now (as `serve` discards the rings).
    pub(crate) fn skip_submissions(&self, win: &Window, w: &Access<'_>) {
        for sender in (0..win.nodes).filter(|&s| s != win.node) {
            for id in 0..USER_INTERFACES {
                let (_, key) = Self::slot_now(win, w, sender, id);
                if let Some(last) = self.last_taken(sender, id) {
                    last.store(key, Ordering::Relaxed);
                }
            }
        }
    }
}
