// SPDX-License-Identifier: GPL-2.0
//! Applying requests: decode, check, apply to the pool's memory under the service lock, answer
//! in the issuer's response slot.

use crate::claims::Claim;
use crate::{
    fabric_client::Access,
    gsas::{
        self, op, owner, status, Response, BULK_IN_PAGE, BULK_MAX, BULK_OUT_PAGE, PAGE_SIZE,
        USER_INTERFACES,
    },
    kmsg_api,
    mailbox::INTERFACES,
    packet::{Packet, MAX_24, PACKET_LEN},
    pool::Pool,
    stats::Counter,
    Inner, Service,
};
use core::sync::atomic::{AtomicU32, Ordering};
use kernel::{prelude::*, sync::Arc};

/// Who a request came from: interface `iface` of node `from`, in tree `tree`; for an ALLOC,
/// the issuing user.
struct Issued {
    from: u32,
    iface: u32,
    tree: u32,
    user: Option<owner::Creds>,
}

/// What applying a request left to do after the lock is released.
enum After {
    Nothing,
    /// Zero pages `first..first + n` of a freed allocation, then make them free.
    Zero(usize, usize),
    /// A large freed allocation waits for the zeroing work.
    Queued,
}

impl After {
    /// What a free of the allocation at `first` leaves: `start_free`'s page count and whether
    /// it queued them.
    fn freed(first: usize, (n, queued): (usize, bool)) -> Self {
        if queued {
            Self::Queued
        } else {
            Self::Zero(first, n)
        }
    }
}

/// Largest freed allocation zeroed at once, while its FREE is served (1 MiB, the most a KRAM
/// request copies): a larger one would hold up every other request of the mailbox's served
/// interfaces, so the zeroing work does it (`zero_queued`).
const INLINE_ZERO_PAGES: usize = (1 << 20) / PAGE_SIZE as usize;
/// Pages zeroed under one hold of the service lock.
const ZERO_PIECE_PAGES: usize = (256 << 10) / PAGE_SIZE as usize;
/// Pages the zeroing work takes at a time.
const ZERO_RUN_PAGES: usize = (16 << 20) / PAGE_SIZE as usize;

impl Service {
    /// A packet for `SERVICE_IFACE` from node `from` (the mailbox checked the header's node),
    /// with `kmsg_api::FROM_SENDER` when it runs in the local sender's `SEND`. True if a freed
    /// allocation waits for the zeroing work (the caller queues it).
    pub(crate) fn handle(&self, from: u32, raw: &[u8; PACKET_LEN]) -> bool {
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
                return false;
            }
        };
        let iface = u32::from(p.header.iface);
        let req = p.payload;
        self.stats.request(req.opcode);
        let tree = p.header.prot_id;
        // Only while the interface is still owned in the packet's tree, and until answered.
        let claim = if in_sender {
            self.sender_claim(from, iface, tree)
        } else {
            self.claim(from, iface, tree)
        };
        let Some(claim) = claim else {
            return false;
        };
        if matches!(req.opcode, op::FORK | op::WAIT) {
            // remoteFork (`fork.rs`): answered later (FORK) or with no memory touched (WAIT).
            self.fork_or_wait(tree, &req, &claim);
            return false;
        }
        let mut resp = Response {
            seq: 0,
            status: status::OK,
            opcode: req.opcode,
            address: req.address,
            value: [0; 32],
        };
        let mut after = After::Nothing;
        let base = req.opcode & !op::WIDTH32;
        // Who is charged for an allocation, as the issuer's node sealed it.
        let user = (base == op::ALLOC).then(|| self.issuer_creds(&claim));
        {
            let mut inner = self.inner.lock();
            let result = match gsas::check(&req) {
                Err(e) => Err(e.status()),
                Ok(()) => self.apply(
                    &mut inner,
                    Issued {
                        from,
                        iface,
                        tree,
                        user,
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
                    op::FREE | op::FREE_TAG => self.refresh_live(&inner, tree),
                    _ => {}
                }
            }
            resp.status = result.err().unwrap_or(status::OK);
            self.stats.status(resp.status);
            // Under the lock: responses are written in the order the requests were applied.
            self.respond(&mut inner, &claim, &mut resp);
        }
        drop(claim);
        match after {
            After::Zero(first, n) => self.zero_freed(first, n),
            After::Queued => {
                self.stats.bump(Counter::ZeroedLater);
                return true;
            }
            After::Nothing => {}
        }
        false
    }

    /// Applies `req`; the value goes to `value`. Called under the service lock.
    fn apply(
        &self,
        inner: &mut Inner,
        issued: Issued,
        req: &crate::packet::Payload,
        value: &mut [u8; 32],
        after: &mut After,
    ) -> Result<(), u8> {
        let Issued {
            from,
            iface,
            tree,
            user,
        } = issued;
        let base = req.opcode & !op::WIDTH32;
        if base == op::NOP {
            return Ok(());
        }
        if base == op::IFACE_STATE {
            return self.iface_state(tree, req, value);
        }
        let pool = inner.pool.as_mut().ok_or(status::NO_POOL)?;
        if !pool.clock.usable(self.epoch.now()) {
            // Kept while its renewal may still be acknowledged (`check_lease`).
            return Err(if pool.clock.is_revoked() {
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
            let uid = user.map_or(0, |c| c.uid);
            if user.is_some_and(|c| c.flags & owner::ADMIN == 0) {
                let limit = pool.pages.pages() * self.quota.pages_pct as usize / 100;
                if pool.pages.used_by(uid) + n as usize > limit {
                    return Err(status::QUOTA);
                }
            }
            let first = pool
                .pages
                .alloc(n as usize, tree, req.arg2, uid)
                .ok_or(status::NO_MEMORY)?;
            let addr = gsas::addr(self.node as u16, pool.offset + first as u64 * PAGE_SIZE);
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
                let addr = gsas::addr(self.node as u16, pool.offset + first as u64 * PAGE_SIZE);
                value[..8].copy_from_slice(&addr.to_le_bytes());
                *after = After::freed(first, freed);
            }
            return Ok(());
        }
        // Every other operation names an address of this node's pool.
        if gsas::node_of(req.address) != self.node as u16 {
            return Err(status::FAULT);
        }
        let off = gsas::offset_of(req.address);
        let rel = off.checked_sub(pool.offset).ok_or(status::FAULT)?;
        let page = (rel / PAGE_SIZE) as usize;
        if base == op::FREE {
            if rel % PAGE_SIZE != 0 {
                return Err(status::UNALIGNED);
            }
            *after = After::freed(page, pool.pages.start_free(page, tree, INLINE_ZERO_PAGES)?);
            return Ok(());
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
        let last = ((rel + len - 1) / PAGE_SIZE) as usize;
        pool.pages.check(page, last, tree)?;
        let w = self.gas.access().ok_or(status::NO_POOL)?;
        let at = self.part + off;
        match base {
            op::BULK_READ => self.copy(&w, self.area(from, iface, BULK_IN_PAGE), at, len),
            op::BULK_WRITE => self.copy(&w, at, self.area(from, iface, BULK_OUT_PAGE), len),
            _ => apply_word(&w, at, req, value),
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

    /// Copies `len` bytes inside the window (from an area or the pool to the other).
    fn copy(&self, w: &Access<'_>, to: u64, from: u64, len: u64) -> Result<(), u8> {
        let (Some(dst), Some(src)) = (w.ptr(to, len), w.ptr(from, len)) else {
            return Err(status::FAULT);
        };
        // SAFETY: both ranges are inside the window (`ptr`), usable while `w` lives, and do not
        // overlap (one is in an interface area, before `AREA_END`, the other in the pool, after
        // `LENDABLE_OFFSET`). Other nodes may write the source meanwhile: its bytes are data,
        // never interpreted.
        unsafe { core::ptr::copy_nonoverlapping(src, dst, len as usize) };
        Ok(())
    }

    /// Writes `resp` into the response slot of the claimed interface for this node: everything
    /// but `seq`, then `seq` with release ordering. Called under the service lock.
    pub(crate) fn respond(&self, inner: &mut Inner, claim: &Claim<'_>, resp: &mut Response) {
        let (from, iface) = (claim.from, claim.iface);
        let slot = self.info.ctl_size
            + u64::from(from) * self.info.partition_size
            + gsas::response_slot(iface, self.node);
        let Some(w) = self.gas.access() else {
            return self.stats.bump(Counter::Unanswered);
        };
        let Some(p) = w.ptr(slot, gsas::RESPONSE_LEN as u64) else {
            return self.stats.bump(Counter::Unanswered);
        };
        let idx = (from * INTERFACES + iface) as usize;
        // SAFETY: `p` is the 64-byte, 64-byte aligned slot inside the window (`ptr`), usable
        // while `w` lives; `seq` is its first word.
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
        for (i, b) in bytes.iter().enumerate().skip(4) {
            // SAFETY: inside the slot (see above).
            unsafe { p.add(i).write_volatile(*b) };
        }
        seq_word.store(resp.seq.to_le(), Ordering::Release);
    }

    /// Whether threads of `tree` may map `len` bytes at partition offset `offset`: every page
    /// allocated to `tree` (`EACCES`: another tree's, `ENXIO`: not allocated, no pool).
    pub(crate) fn may_map(&self, tree: u32, offset: u64, len: u64) -> Result {
        let checked = (|| {
            let inner = self.inner.lock();
            let pool = inner.pool.as_ref().ok_or(ENXIO)?;
            if !pool.clock.usable(self.epoch.now()) {
                return Err(ENXIO);
            }
            let rel = offset.checked_sub(pool.offset).ok_or(ENXIO)?;
            if rel % PAGE_SIZE != 0 || len == 0 || len % PAGE_SIZE != 0 {
                return Err(EINVAL);
            }
            let first = (rel / PAGE_SIZE) as usize;
            let last = first + (len / PAGE_SIZE) as usize - 1;
            pool.pages.check(first, last, tree).map_err(|s| match s {
                status::DENIED => EACCES,
                _ => ENXIO,
            })
        })();
        self.stats.bump(match checked {
            Ok(()) => Counter::Maps,
            Err(e) if e == EACCES => Counter::MapDenied,
            Err(_) => Counter::MapFaults,
        });
        checked
    }

    /// Zeroes the freed pages `first..first + n` (`ZEROING`, this caller's), then frees them.
    /// Threads' mappings of them go first: nobody sees the zeroing, or the pages' next owner.
    /// Each piece is zeroed under the service lock, so the pool cannot go back to its lender
    /// in the middle of one (its memory may be someone else's then); between pieces the CPU is
    /// given up if wanted. Process context.
    pub(crate) fn zero_freed(&self, first: usize, n: usize) {
        let part_off = {
            let inner = self.inner.lock();
            let Some(pool) = inner.pool.as_ref() else {
                return;
            };
            pool.offset + first as u64 * PAGE_SIZE
        };
        let mut ok = match crate::zap_pages(part_off, n as u64 * PAGE_SIZE) {
            Ok(()) => true,
            Err(e) => {
                pr_err!("unmapping {} freed pages from user space failed ({:?}): they stay out of use\n", n, e);
                false
            }
        };
        let mut done = 0;
        while ok && done < n {
            let k = ZERO_PIECE_PAGES.min(n - done);
            let inner = self.inner.lock();
            // A pool that lapsed (dropped) or came back anew holds none of these pages now.
            let Some(pool) = inner
                .pool
                .as_ref()
                .filter(|p| p.pages.zeroing(first + done, k) && p.clock.usable(self.epoch.now()))
            else {
                return;
            };
            let offset = self.part + pool.offset + (first + done) as u64 * PAGE_SIZE;
            if let Err(e) = self.gas.wipe(offset, k as u64 * PAGE_SIZE) {
                pr_err!(
                    "zeroing {} freed pages failed ({:?}): they stay out of use\n",
                    n,
                    e
                );
                ok = false;
            }
            drop(inner);
            done += k;
            kernel::task::cond_resched();
        }
        let mut inner = self.inner.lock();
        if let Some(pool) = inner.pool.as_mut().filter(|p| p.pages.zeroing(first, n)) {
            if ok {
                pool.pages.finish_free(first, n);
            } else {
                pool.pages.stuck(first, n);
            }
        }
        self.release_module(&mut inner);
    }

    /// Zeroes the queued freed allocations (the zeroing work, process context).
    pub(crate) fn zero_queued(&self) {
        loop {
            let run = {
                let mut inner = self.inner.lock();
                inner
                    .pool
                    .as_mut()
                    .and_then(|p| p.pages.take_queued(ZERO_RUN_PAGES))
            };
            let Some((first, n)) = run else { return };
            self.zero_freed(first, n);
        }
    }
}

/// # Safety
///
/// `p` must be an 8-byte aligned address of the window, inside an access that lives across the
/// call.
unsafe fn read64(p: *mut u8) -> u64 {
    // SAFETY: guaranteed by the caller.
    u64::from_le(unsafe { p.cast::<u64>().read_volatile() })
}

/// # Safety
///
/// As for [`read64`].
unsafe fn write64(p: *mut u8, v: u64) {
    // SAFETY: guaranteed by the caller.
    unsafe { p.cast::<u64>().write_volatile(v.to_le()) }
}

/// READ, WRITE, the 128/256-bit operations and the atomics, on the aligned word(s) at window
/// offset `at` (checked: allocated to the issuer's tree, aligned by `gsas::check`).
fn apply_word(
    w: &Access<'_>,
    at: u64,
    req: &crate::packet::Payload,
    value: &mut [u8; 32],
) -> Result<(), u8> {
    let base = req.opcode & !op::WIDTH32;
    let narrow = req.opcode & op::WIDTH32 != 0;
    let size = op::size(req.opcode).ok_or(status::INVALID)?;
    let p = w.ptr(at, size).ok_or(status::FAULT)?;
    match base {
        op::READ128 | op::READ256 => {
            for k in 0..(size / 8) as usize {
                // SAFETY: `k * 8 < size`: an aligned word inside the range `ptr` returned for
                // `w`, which lives across the call.
                let word = unsafe { read64(p.add(k * 8)) };
                value[k * 8..k * 8 + 8].copy_from_slice(&word.to_le_bytes());
            }
            return Ok(());
        }
        op::WRITE128 => {
            // SAFETY: the two aligned words of the 16-byte range `ptr` returned for `w`.
            unsafe {
                write64(p, req.arg1);
                write64(p.add(8), req.arg2);
            }
            return Ok(());
        }
        _ => {}
    }
    let (mask, old) = if narrow {
        // SAFETY: a 4-byte aligned word inside the range.
        (
            u64::from(u32::MAX),
            u64::from(u32::from_le(unsafe { p.cast::<u32>().read_volatile() })),
        )
    } else {
        // SAFETY: the aligned word `ptr` returned for `w`.
        (u64::MAX, unsafe { read64(p) })
    };
    let (a, b) = (req.arg1 & mask, req.arg2 & mask);
    let new = match base {
        op::READ => None,
        op::WRITE => Some(a),
        op::FETCH_ADD => Some(old.wrapping_add(a) & mask),
        op::CAS => (old == a).then_some(b),
        op::SWAP => Some(a),
        op::FETCH_AND => Some(old & a),
        op::FETCH_OR => Some(old | a),
        op::FETCH_XOR => Some(old ^ a),
        _ => return Err(status::INVALID),
    };
    if let Some(new) = new {
        if narrow {
            // SAFETY: as the read above.
            unsafe { p.cast::<u32>().write_volatile((new as u32).to_le()) };
        } else {
            // SAFETY: as the read above.
            unsafe { write64(p, new) };
        }
    }
    if base != op::WRITE {
        value[..8].copy_from_slice(&old.to_le_bytes());
    }
    Ok(())
}

/// The pool as the service sees it: bookkeeping, where it lies, its lease.
pub(crate) struct PoolState {
    pub(crate) pages: Pool,
    /// Partition offset of page 0.
    pub(crate) offset: u64,
    pub(crate) clock: Arc<crate::kram_client::LeaseClock>,
    /// When a tick first found the lease lapsed on this node's clock (`check_lease`).
    pub(crate) stalled_since: Option<i64>,
}
