// SPDX-License-Identifier: GPL-2.0
//! Requests without a system call: the submission slots of the interfaces' GSAS areas
//! (`gsas::submit_slot`) and this node's owner table (`gsas::owner`).
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
//! Publication: before an owner's entry is published, its slots' `seq`s are set to 0, so what a
//! previous owner left is never taken for the new one. A home takes a slot's request when its
//! `seq` is not 0 and differs from the last it took under the same entry word, and only if the
//! word read before and after copying the request is the same: then the request was written
//! while that owner held the interface.

use crate::{
    fabric_client::Access,
    gsas::{
        owner::{self, Creds},
        submit_slot, SUBMIT_PAYLOAD_OFFSET, SUBMIT_SEQ_OFFSET, USER_INTERFACES,
    },
    packet::{Header, Packet, PACKET_LEN, PAYLOAD_LEN},
    state::State,
};
use core::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};

/// The bits of the table's bitmap that can name a user interface.
const USER_MASK: u64 = (1 << USER_INTERFACES) - 1;

/// What a home remembers of a slot: the entry word's publication and the `seq` it last took.
fn taken(publication: u32, seq: u32) -> u64 {
    u64::from(publication) << 32 | u64::from(seq)
}

impl State {
    /// The word at partition offset `offset` of node `node`: every caller passes `node < nodes`
    /// and an aligned offset below `owner::TABLE_END` (`State::part_ptr`).
    fn part_word<T>(&self, w: &Access<'_>, node: u32, offset: u64) -> *mut T {
        self.part_ptr(w, node, offset as usize).cast()
    }

    fn word64<'a>(&self, w: &'a Access<'_>, node: u32, offset: u64) -> &'a AtomicU64 {
        // SAFETY: an 8-byte aligned word of the mapped window (`part_word`), valid while `w`
        // lives; other nodes access it only with aligned loads and stores too.
        unsafe { AtomicU64::from_ptr(self.part_word(w, node, offset)) }
    }

    fn word32<'a>(&self, w: &'a Access<'_>, node: u32, offset: u64) -> &'a AtomicU32 {
        // SAFETY: as in `word64`, 4-byte aligned.
        unsafe { AtomicU32::from_ptr(self.part_word(w, node, offset)) }
    }

    /// Empties this node's owner table (at load: no interface has an owner yet), credentials
    /// included.
    pub(crate) fn reset_owner_table(&self, w: &Access<'_>) {
        let p = self.part_ptr(w, self.node, owner::TABLE_OFFSET as usize);
        // SAFETY: the table is one page of this node's partition below `TABLE_END`
        // (`part_ptr`); no interface has an owner yet, so nobody else writes it.
        unsafe { core::ptr::write_bytes(p, 0, (owner::TABLE_END - owner::TABLE_OFFSET) as usize) };
    }

    /// Publishes in this node's owner table that local interface `id` belongs to `owner`'s
    /// tree, with its credentials (`None`: to nobody); returns the publication's number. The
    /// interface's owner lock is held, so publications of one interface do not interleave.
    pub(crate) fn publish_owner(
        &self,
        w: &Access<'_>,
        id: u32,
        owner: Option<(u32, Creds)>,
    ) -> Option<u32> {
        if id >= USER_INTERFACES {
            return None;
        }
        let entry = self.word64(w, self.node, owner::entry(id));
        let bitmap = self.word64(w, self.node, owner::TABLE_OFFSET);
        // Withdrawn first: a home copying a request now sees the word change and drops it, and
        // a home about to claim the interface sees it too (the fence pairs with theirs:
        // `wire::trees`).
        entry.store(0, Ordering::Release);
        fence(Ordering::SeqCst);
        bitmap.fetch_and(!(1u64 << id), Ordering::AcqRel);
        let (tree, creds) = owner?;
        for home in 0..self.nodes {
            self.word32(
                w,
                self.node,
                submit_slot(id, home) + SUBMIT_SEQ_OFFSET as u64,
            )
            .store(0, Ordering::Release);
        }
        let dst: *mut u8 = self.part_word(w, self.node, owner::creds(id));
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

    /// The credentials published for local interface `id` (its owner's, while it has one).
    pub(crate) fn published_creds(&self, w: &Access<'_>, id: u32) -> Creds {
        let mut b = [0u8; owner::CREDS_LEN as usize];
        w.read_part(self.node, owner::creds(id), &mut b);
        Creds::decode(&b)
    }

    /// The request in `sender`'s slot of interface `id` for this node, if it is new: what to
    /// remember as taken, the owner's tree and the payload. The entry word, `seq` and the
    /// payload are read in that order, then `seq` and the word again.
    /// `None` also when the slot changed hands meanwhile (looked at again next time).
    fn new_submission(
        &self,
        w: &Access<'_>,
        sender: u32,
        id: u32,
    ) -> Option<(u64, u32, [u8; PAYLOAD_LEN])> {
        let entry = self.word64(w, sender, owner::entry(id));
        let before = entry.load(Ordering::Acquire);
        let tree = owner::tree(before)?;
        let slot = submit_slot(id, self.node);
        let seq = self.slot_seq(w, sender, id);
        let key = taken((before >> 24) as u32, seq);
        if seq == 0 || self.last_taken(sender, id)?.load(Ordering::Relaxed) == key {
            return None;
        }
        let mut payload = [0u8; PAYLOAD_LEN];
        let src: *const u8 = self.part_word(w, sender, slot + SUBMIT_PAYLOAD_OFFSET as u64);
        for (i, b) in payload.iter_mut().enumerate() {
            // SAFETY: the slot's payload bytes lie inside the mapped window (`part_word`);
            // another node may write them meanwhile, hence the volatile byte reads.
            *b = unsafe { src.add(i).read_volatile() };
        }
        fence(Ordering::Acquire);
        let again = self.slot_seq(w, sender, id);
        (again == seq && entry.load(Ordering::Acquire) == before).then_some((key, tree, payload))
    }

    fn last_taken(&self, sender: u32, id: u32) -> Option<&AtomicU64> {
        self.last_taken
            .get(sender as usize * USER_INTERFACES as usize + id as usize)
    }

    fn owned_ifaces(&self, w: &Access<'_>, sender: u32) -> impl Iterator<Item = u32> {
        // A peer's bitmap is untrusted: at most the 63 user interfaces are looked at.
        let mut bits = self
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
    /// most its length): how many. One consumer at a time (the caller holds `served`).
    pub(crate) fn take_submissions(
        &self,
        w: &Access<'_>,
        sender: u32,
        out: &mut [[u8; PACKET_LEN]],
    ) -> usize {
        if sender == self.node || sender >= self.nodes {
            // Local threads `SEND`: that applies their request at once.
            return 0;
        }
        let mut n = 0;
        for id in self.owned_ifaces(w, sender) {
            let Some(slot) = out.get_mut(n) else { break };
            let Some((key, tree, payload)) = self.new_submission(w, sender, id) else {
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
        self.counters
            .submitted
            .fetch_add(n as u64, Ordering::Relaxed);
        n
    }

    /// Whether a peer's submission slot holds a request for this node not taken yet.
    pub(crate) fn submissions_pending(&self, w: &Access<'_>) -> bool {
        (0..self.nodes)
            .filter(|&s| s != self.node)
            .any(|s| self.owned_ifaces(w, s).any(|id| self.slot_is_new(w, s, id)))
    }

    fn slot_is_new(&self, w: &Access<'_>, sender: u32, id: u32) -> bool {
        let (seq, key) = self.slot_now(w, sender, id);
        seq != 0
            && self
                .last_taken(sender, id)
                .is_some_and(|l| l.load(Ordering::Relaxed) != key)
    }

    /// The `seq` of `sender`'s slot of interface `id` for this node.
    fn slot_seq(&self, w: &Access<'_>, sender: u32, id: u32) -> u32 {
        self.word32(
            w,
            sender,
            submit_slot(id, self.node) + SUBMIT_SEQ_OFFSET as u64,
        )
        .load(Ordering::Acquire)
    }

    /// The slot's `seq`, and what remembering it as taken under the current entry word stores.
    fn slot_now(&self, w: &Access<'_>, sender: u32, id: u32) -> (u32, u64) {
        let word = self
            .word64(w, sender, owner::entry(id))
            .load(Ordering::Acquire);
        let seq = self.slot_seq(w, sender, id);
        (seq, taken((word >> 24) as u32, seq))
    }

    /// Marks every request now in the slots as taken: left while nobody served them, they are
    /// not for the service starting now (as `serve` discards the rings).
    pub(crate) fn skip_submissions(&self, w: &Access<'_>) {
        for sender in (0..self.nodes).filter(|&s| s != self.node) {
            for id in 0..USER_INTERFACES {
                let (_, key) = self.slot_now(w, sender, id);
                if let Some(last) = self.last_taken(sender, id) {
                    last.store(key, Ordering::Relaxed);
                }
            }
        }
    }
}
