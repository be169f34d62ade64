// SPDX-License-Identifier: GPL-2.0
//! Serving a request: decode, claim the issuer's interface, check, apply to the pool under the
//! service lock, answer in the issuer's response slot.

use crate::{
    claims::Claim,
    grow::Miss,
    gsas::{
        self,
        grant::{self, Grant},
        op, owner, status, Response, BULK_IN_PAGE, BULK_MAX, BULK_OUT_PAGE, PAGE_SIZE,
        USER_INTERFACES,
    },
    kmsg_api,
    mailbox::{DOORBELL_VECTOR, INTERFACES},
    memory::{apply_word, cas128},
    packet::{Packet, MAX_24, PACKET_LEN},
    pool::Freed,
    remote_maps::Zaps,
    service::{Inner, Service},
    serving,
    stats::Counter,
    versions_writer::Changing,
    zero::INLINE_ZERO_PAGES,
};
use core::sync::atomic::{AtomicU32, Ordering};
use kernel::prelude::*;

/// Who a request came from: the claim on its issuer's interface (node, interface, the issuing
/// user's credentials, and the window access the request is served in), in tree `tree`.
struct Issued<'a> {
    claim: &'a Claim<'a>,
    tree: u32,
}

/// What applying a request left to do after the lock is released.
enum After {
    Nothing,
    /// Zero pages `first..first + n` of a freed allocation, then make them free.
    Zero(usize, usize),
    /// A large freed allocation waits for the zeroing work.
    Queued,
    /// The grant of `len` bytes at partition offset `offset` took something away: every
    /// mapping of them goes (the device's mappings are one per node, not per tree: the owning
    /// tree's go too, and map again), so none made under the old grant outlives it; on other
    /// nodes too (`remote`: the ZAPs to send, `remote_maps.rs`).
    Narrowed {
        offset: u64,
        len: u64,
        remote: Option<Zaps>,
    },
    /// A freed allocation that other nodes map: held out of use until they acknowledge.
    Quarantined(Zaps),
    /// An ALLOC found no room: the pool grows (`grow.rs`).
    Grow,
}

/// The work a served request leaves for the caller to queue (outside the mailbox's served
/// section).
pub(crate) enum Queue {
    Nothing,
    /// A large freed allocation waits for the zeroing work.
    Zero,
    /// The pool grows (`grow.rs`).
    Grow,
}

impl After {
    /// What a free of the allocation at `first` leaves.
    fn freed(offset: u64, first: usize, freed: Freed) -> Self {
        match freed {
            Freed::Queued => Self::Queued,
            Freed::Zero(n) => Self::Zero(first, n),
            Freed::Mapped { n, nodes, seq } => Self::Quarantined(Zaps {
                offset,
                pages: n as u64,
                nodes,
                seq,
            }),
        }
    }
}

impl Service {
    /// A packet for `SERVICE_IFACE` from node `from` (the mailbox checked the header's node),
    /// with `kmsg_api::FROM_SENDER` when it runs in the local sender's `SEND`; which work the
    /// caller queues.
    pub(crate) fn handle(&self, from: u32, raw: &[u8; PACKET_LEN]) -> Queue {
        let in_sender = from & kmsg_api::FROM_SENDER != 0;
        let from = from & !kmsg_api::FROM_SENDER;
        let p = match Packet::decode(raw) {
            Ok(p)
                if u32::from(p.header.node) == from
                    && u32::from(p.header.iface) < USER_INTERFACES =>
            {
                p
            }
            // Only another node's kernel could send from its own kernel interfaces; nobody
            // reads a kernel interface's response slots.
            _ => {
                self.stats.bump(Counter::Malformed);
                return Queue::Nothing;
            }
        };
        let iface = u32::from(p.header.iface);
        let req = p.payload;
        self.stats.request(req.opcode);
        let tree = p.header.prot_id;
        if matches!(req.opcode, op::FORK | op::WAIT) {
            // remoteFork (`fork.rs`): answered later (FORK) or with no memory touched (WAIT).
            self.fork_or_wait(in_sender, from, iface, tree, &req);
            return Queue::Nothing;
        }
        // One access for claim, apply, answer and release.
        let Some(w) = self.gas.access() else {
            self.stats.bump(Counter::Unanswered);
            return Queue::Nothing;
        };
        // Only while the interface is still owned in the packet's tree, and until answered.
        let Some(claim) = self.claim_request(&w, in_sender, from, iface, tree) else {
            return Queue::Nothing;
        };
        let mut resp = Response {
            seq: 0,
            status: status::OK,
            opcode: req.opcode,
            address: req.address,
            value: [0; 32],
        };
        let mut after = After::Nothing;
        let base = req.opcode & !op::WIDTH32;
        {
            let mut inner = self.inner.lock();
            let result = match gsas::check(&req) {
                Err(e) => Err(e.status()),
                Ok(()) => self.apply(
                    &mut inner,
                    Issued {
                        claim: &claim,
                        tree,
                    },
                    &req,
                    &mut resp.value,
                    &mut after,
                ),
            };
            if result.is_ok() {
                // Before the answer and the claim's release: the issuer's node must see the
                // tree live from then on (`claims.rs`). A free looks for what is left.
                match base {
                    op::ALLOC => self.set_live(tree, true),
                    op::KEEP if req.arg1 == 1 => self.set_live(tree, true),
                    op::FREE | op::FREE_TAG => self.refresh_live(&inner, tree),
                    _ => {}
                }
            }
            // Trees whose keeps went with a freed allocation, a release or to make room.
            while let Some(t) = inner.pool.as_mut().and_then(|p| p.pages.keeps.take_gone()) {
                self.refresh_live(&inner, t);
            }
            resp.status = result.err().unwrap_or(status::OK);
            self.stats.status(resp.status);
            // Under the lock: responses are written in the order the requests were applied.
            self.respond(&mut inner, &claim, &mut resp);
        }
        drop(claim);
        drop(w);
        match after {
            After::Zero(first, n) => self.zero_freed(first, n),
            After::Queued => {
                self.stats.bump(Counter::ZeroedLater);
                return Queue::Zero;
            }
            After::Narrowed {
                offset,
                len,
                remote,
            } => {
                if let Err(e) = serving::zap_pages(offset, len) {
                    // Cannot happen while the mailbox is loaded; logged, at a limited rate.
                    if self.noisy.allow(self.epoch.now()) {
                        pr_warn!("cannot remove mappings of regranted pages: {:?}\n", e);
                    }
                }
                if let Some(z) = remote {
                    self.send_zaps(&z);
                }
            }
            After::Quarantined(z) => self.quarantined(&z),
            After::Grow => return Queue::Grow,
            After::Nothing => {}
        }
        Queue::Nothing
    }

    /// Applies `req`; the value goes to `value`. Called under the service lock.
    fn apply(
        &self,
        inner: &mut Inner,
        issued: Issued<'_>,
        req: &crate::packet::Payload,
        value: &mut [u8; 32],
        after: &mut After,
    ) -> Result<(), u8> {
        let Issued { claim, tree } = issued;
        let (from, iface) = (claim.from, claim.iface);
        let base = req.opcode & !op::WIDTH32;
        if base == op::NOP {
            return Ok(());
        }
        if base == op::IFACE_STATE {
            return self.iface_state(tree, req, value);
        }
        let pool = inner.pool.as_mut().ok_or(status::NO_POOL)?;
        if !pool.ranges.usable(self.epoch.now()) {
            // Kept while its renewal may still be acknowledged (`check_lease`).
            return Err(if pool.ranges.is_revoked() {
                status::NO_POOL
            } else {
                status::STALLED
            });
        }
        if base == op::ALLOC {
            let n = req.arg1;
            if n == 0 || n > gsas::MAX_ALLOC_PAGES {
                return Err(status::INVALID);
            }
            if tree == 0 {
                return Err(status::DENIED);
            }
            // Who is charged for it, as the issuer's node sealed it.
            let user = self.issuer_creds(claim);
            let uid = user.uid;
            if user.flags & owner::ADMIN == 0 {
                // A share of what the pool may grow to, not of what it holds now.
                let limit = self.max_pages * self.quota.pages_pct as usize / 100;
                if pool.pages.used_by(uid) + n as usize > limit {
                    return Err(status::QUOTA);
                }
            }
            let Some(first) = pool.pages.alloc(n as usize, tree, req.arg2, uid) else {
                // Unused ranges at the end go back before the pool grows (`grow.rs`).
                let (tail_ranges, tail_pages) = pool.pages.free_tail();
                let pages = pool.pages.pages() - tail_pages;
                let ranges = pool.pages.ranges() - tail_ranges;
                let now = self.epoch.now();
                return match pool
                    .growth
                    .miss(n as usize, pages, ranges, self.max_pages, now)
                {
                    Miss::Grow(queue) => {
                        if queue {
                            *after = After::Grow;
                        }
                        Err(status::STALLED)
                    }
                    Miss::Full => Err(status::NO_MEMORY),
                };
            };
            let addr = gsas::addr(self.node as u16, pool.ranges.offset_of(first));
            value[..8].copy_from_slice(&addr.to_le_bytes());
            self.hold_module(inner);
            return Ok(());
        }
        if base == op::FREE_TAG {
            if gsas::node_of(req.address) != self.node as u16 {
                return Err(status::FAULT);
            }
            if req.arg1 == 0 {
                return Err(status::INVALID);
            }
            if let Some(first) = pool.pages.find_tagged(tree, req.arg1) {
                let freed = pool.pages.start_free(first, tree, INLINE_ZERO_PAGES)?;
                let offset = pool.ranges.offset_of(first);
                let addr = gsas::addr(self.node as u16, offset);
                value[..8].copy_from_slice(&addr.to_le_bytes());
                *after = After::freed(offset, first, freed);
            }
            return Ok(());
        }
        if base == op::INDEXED {
            // The address only selects the home; the entries name the elements.
            if gsas::node_of(req.address) != self.node as u16 {
                return Err(status::FAULT);
            }
            return self.indexed(pool, claim, tree, req.arg1, &mut inner.operands, value);
        }
        // Every other operation names an address of this node's pool.
        if gsas::node_of(req.address) != self.node as u16 {
            return Err(status::FAULT);
        }
        let off = gsas::offset_of(req.address);
        if base == op::MAP && Self::versions_mappable(off, req.arg1, req.arg2 == 1) {
            return self.approve_versions_map(claim, req, value);
        }
        let rel = pool.ranges.rel(off).ok_or(status::FAULT)?;
        let page = (rel / PAGE_SIZE) as usize;
        if base == op::FREE {
            if rel % PAGE_SIZE != 0 {
                return Err(status::UNALIGNED);
            }
            let freed = pool.pages.start_free(page, tree, INLINE_ZERO_PAGES)?;
            *after = After::freed(off, page, freed);
            return Ok(());
        }
        if base == op::MAP {
            return self.approve_map(pool, claim, tree, req, rel, value);
        }
        if base == op::GRANT {
            if rel % PAGE_SIZE != 0 {
                return Err(status::UNALIGNED);
            }
            let g = Grant::from_args(req.arg1, req.arg2).ok_or(status::INVALID)?;
            let admin = self.issuer_creds(claim).flags & owner::ADMIN != 0;
            let (n, narrowed) = pool.pages.set_grant(page, tree, admin, g)?;
            if narrowed {
                *after = After::Narrowed {
                    offset: off,
                    len: n as u64 * PAGE_SIZE,
                    remote: pool.pages.narrowed(page, n).map(|(nodes, seq)| Zaps {
                        offset: off,
                        pages: n as u64,
                        nodes,
                        seq,
                    }),
                };
            }
            return Ok(());
        }
        if base == op::KEEP {
            return self.keep(pool, claim, tree, page, req.arg1 == 1, value);
        }
        if base == op::COPY {
            return self.copy_in_pool(pool, claim, tree, off, req.arg1, req.arg2);
        }
        let len = match op::size(req.opcode) {
            Some(n) => n,
            None => {
                // Bulk: 1..=BULK_MAX bytes, any alignment, every page touched checked.
                if req.arg1 == 0 || req.arg1 > BULK_MAX {
                    return Err(status::INVALID);
                }
                req.arg1
            }
        };
        // Another tree's pages: only by their allocation's grant, for the issuing user.
        self.check_range(pool, claim, tree, off, len, grant::need(req.opcode))?;
        let at = self.part + off;
        let w = claim.w;
        // Readers through mappings see the change as one (`versions_writer.rs`).
        let _changing = (grant::need(req.opcode) & grant::WRITE != 0)
            .then(|| Changing::begin(w, self.node, off, len));
        match base {
            op::BULK_READ => self.copy(w, self.area(from, iface, BULK_IN_PAGE), at, len),
            op::BULK_WRITE => self.copy(w, at, self.area(from, iface, BULK_OUT_PAGE), len),
            op::CAS128 => cas128(w, at, self.area(from, iface, BULK_OUT_PAGE), value),
            _ => apply_word(w, at, req, value),
        }
    }

    /// IFACE_STATE: who holds interface `arg1` of this node, told only to its own tree.
    fn iface_state(
        &self,
        tree: u32,
        req: &crate::packet::Payload,
        value: &mut [u8; 32],
    ) -> Result<(), u8> {
        if gsas::node_of(req.address) != self.node as u16 {
            return Err(status::FAULT);
        }
        let iface = u32::try_from(req.arg1)
            .ok()
            .filter(|&i| i < USER_INTERFACES)
            .ok_or(status::INVALID)?;
        // SAFETY: `unimem_mbox_iface_state` may be called in any context but hard IRQ.
        let held = unsafe { kmsg_api::unimem_mbox_iface_state(iface) };
        let answer =
            if held & kmsg_api::IFACE_HELD != 0 && tree != 0 && held as u32 & MAX_24 == tree {
                op::IFACE_HELD | (held >> 24) & u64::from(u32::MAX)
            } else {
                0
            };
        value[..8].copy_from_slice(&answer.to_le_bytes());
        Ok(())
    }

    /// Window offset of node `node`'s partition.
    pub(crate) fn part_offset(&self, node: u32) -> u64 {
        self.info.ctl_size + u64::from(node) * self.info.partition_size
    }

    /// Window offset of page `page` of the area of `iface` of node `node`.
    pub(crate) fn area(&self, node: u32, iface: u32, page: u64) -> u64 {
        self.part_offset(node) + gsas::area_page(iface, page)
    }

    /// Writes `resp` into the response slot of the claimed interface for this node: everything
    /// but `seq`, then `seq` with release ordering. Called under the service lock.
    pub(crate) fn respond(&self, inner: &mut Inner, claim: &Claim<'_>, resp: &mut Response) {
        let (from, iface) = (claim.from, claim.iface);
        let slot = self.info.ctl_size
            + u64::from(from) * self.info.partition_size
            + gsas::response_slot(iface, self.node);
        let Some(p) = claim.w.ptr(slot, gsas::RESPONSE_LEN as u64) else {
            return self.stats.bump(Counter::Unanswered);
        };
        let idx = (from * INTERFACES + iface) as usize;
        // SAFETY: `p` is the 64-byte, 64-byte aligned slot inside the window (`ptr`), usable
        // while the claim's access lives; `seq` is its first word.
        let seq_word = unsafe { AtomicU32::from_ptr(p.cast::<u32>()) };
        let Some(seq) = inner.seqs.get_mut(idx) else {
            return self.stats.bump(Counter::Unanswered);
        };
        // The first answer to an owner (since load, or since the interface changed hands and
        // its area was wiped) continues from what the slot holds: the value its thread read
        // before sending.
        let last = match *seq {
            (entry, last) if entry == claim.entry => last,
            _ => u32::from_le(seq_word.load(Ordering::Relaxed)),
        };
        resp.seq = last.wrapping_add(1);
        *seq = (claim.entry, resp.seq);
        let bytes = resp.encode();
        let (words, _) = bytes.as_chunks::<8>();
        let Some(&[_, _, _, _, status, opcode, pad0, pad1]) = words.first() else {
            return self.stats.bump(Counter::Unanswered);
        };
        // Word by word, not byte by byte (that was a quarter of a local request's
        // instructions): `seq` stays as it is until every other word is written.
        // SAFETY: inside the slot (see above); offset 4 is 4-byte aligned, and the rest of
        // the slot is 8-byte words at 8-byte aligned offsets.
        unsafe {
            p.add(4)
                .cast::<u32>()
                .write_volatile(u32::from_ne_bytes([status, opcode, pad0, pad1]))
        };
        for (i, w) in words.iter().enumerate().skip(1) {
            // SAFETY: see above.
            unsafe {
                p.add(i * 8)
                    .cast::<u64>()
                    .write_volatile(u64::from_ne_bytes(*w))
            };
        }
        seq_word.store(resp.seq.to_le(), Ordering::Release);
        if from != self.node {
            self.wake_issuer(claim);
        }
    }

    /// Rings the issuer's node if the claimed interface's thread sleeps for this answer (its
    /// wake word, `gsas::wake_word`, which only that node's driver writes; a wrong word costs a
    /// doorbell, or the thread's timeout). After the answer's `seq`, which the sleeper looks at
    /// after publishing the word (`kernel/mailbox/answer_wait.rs`).
    fn wake_issuer(&self, claim: &Claim<'_>) {
        core::sync::atomic::fence(Ordering::SeqCst);
        let word = self.part_offset(claim.from) + gsas::wake_word(claim.iface);
        let Some(p) = claim.w.ptr(word, 4) else {
            return;
        };
        // SAFETY: a 4-byte aligned word inside the window (`ptr`), usable while the claim's
        // access lives; other nodes access it only with aligned loads and stores.
        let asleep = unsafe { AtomicU32::from_ptr(p.cast::<u32>()) }.load(Ordering::Relaxed);
        if u32::from_le(asleep) == gsas::WAKE_ASLEEP
            && self.gas.ring(claim.from, DOORBELL_VECTOR).is_ok()
        {
            self.stats.bump(Counter::AnswerDoorbells);
        }
    }
}
