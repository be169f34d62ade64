// SPDX-License-Identifier: GPL-2.0
//! Mappings of this node's pages by threads of other nodes (docs/GSAS.md, "Mapping another
//! node's pages"): MAP, which approves one for the issuer's kernel; the ZAPs that have the
//! mappers remove them when an allocation is freed or its grant narrowed, sent again at every
//! lease tick until acknowledged; the acknowledgements, after which freed pages held out of use
//! (quarantined) are zeroed and free again.

use crate::{
    claims::Claim,
    gas::MAX_NODES,
    gsas::{
        grant,
        remote_map::{self, Zap, ZAP, ZAP_ACK, ZAP_MAX_PAGES},
        status, PAGE_SIZE, USER_INTERFACES,
    },
    kmsg_api,
    lease::PoolState,
    mailbox::service,
    packet::Payload,
    service::Service,
    serving::zap_pages,
    stats::Counter,
};
use core::sync::atomic::Ordering;
use kernel::{
    ffi::c_void,
    prelude::*,
    sync::{Arc, ArcBorrow},
    workqueue,
};

/// ZAPs to send: for `pages` pages at partition offset `offset`, to `nodes`, numbered `seq`.
#[derive(Clone, Copy)]
pub(crate) struct Zaps {
    pub(crate) offset: u64,
    pub(crate) pages: u64,
    pub(crate) nodes: u16,
    pub(crate) seq: u32,
}

/// A round's ZAPs go again at each of its first ticks, then every `RESEND_EVERY` ticks.
const RESEND_FIRST: u32 = 4;
const RESEND_EVERY: u32 = 8;
/// Ticks (seconds) after which a round still waiting is logged, once, and counted.
const WARN_AFTER: u32 = 10;

/// Sends `z` (pieces of at most `ZAP_MAX_PAGES`) to each of its nodes; the nodes it could not
/// send to (a full ring: the tick sends again).
fn send(z: &Zaps) -> u16 {
    let mut failed = 0;
    let first = z.offset / PAGE_SIZE;
    for node in (0..MAX_NODES).filter(|n| z.nodes & 1 << n != 0) {
        let mut done = 0;
        while done < z.pages {
            let k = (z.pages - done).min(ZAP_MAX_PAGES);
            let Some(msg) = Zap::new(ZAP, z.seq as u16, first + done, k) else {
                // A partition beyond what a ZAP names: loading refused it.
                failed |= 1 << node;
                break;
            };
            // SAFETY: plain call into unimem_mailbox's exported seam, any context.
            if unsafe { kmsg_api::unimem_mbox_send(node, service::GSAS, msg.encode()) } != 0 {
                failed |= 1 << node;
                break;
            }
            done += k;
        }
    }
    failed
}

impl Service {
    /// MAP, under the service lock: `rel` is the address's offset in the pool. Every page is
    /// checked as for a bulk read (or write) by this issuer; then the issuer's node is a mapper
    /// of every allocation the pages touch, and the approval goes to the issuer's approval word
    /// before the answer.
    pub(crate) fn approve_map(
        &self,
        pool: &mut PoolState,
        claim: &Claim<'_>,
        tree: u32,
        req: &Payload,
        rel: u64,
        value: &mut [u8; 32],
    ) -> Result<(), u8> {
        let approval = remote_map::check(req.address, req.arg1, req.arg2)?;
        if claim.from == self.node {
            // This node's pages are mapped with `mailbox::MMAP_GSAS`, checked by `may_map`.
            return Err(status::INVALID);
        }
        let first = (rel / PAGE_SIZE) as usize;
        let last = first + approval.pages as usize - 1;
        match pool.pages.check(first, last, tree) {
            Err(status::DENIED) => {
                let creds = self.issuer_creds(claim);
                let need = grant::map_need(approval.write);
                if !pool.pages.granted(first, last, &creds, tree, need) {
                    return Err(status::DENIED);
                }
            }
            r => r?,
        }
        pool.pages.add_mapper(first, last, claim.from);
        self.approve(claim, &approval, value)
    }

    /// MAP of the version table (`versions_writer.rs`), read-only: any issuer may read it, and it
    /// never goes (it is not pool memory), so no mapper is recorded.
    pub(crate) fn approve_versions_map(
        &self,
        claim: &Claim<'_>,
        req: &Payload,
        value: &mut [u8; 32],
    ) -> Result<(), u8> {
        let approval = remote_map::check(req.address, req.arg1, req.arg2)?;
        if claim.from == self.node || approval.write {
            return Err(status::INVALID);
        }
        self.approve(claim, &approval, value)
    }

    /// Writes `approval` into the issuer's approval word (before the answer).
    fn approve(
        &self,
        claim: &Claim<'_>,
        approval: &remote_map::Approval,
        value: &mut [u8; 32],
    ) -> Result<(), u8> {
        let slot = remote_map::approval_slot(claim.iface, self.node);
        let word = claim.w.part_word(claim.from, slot).ok_or(status::FAULT)?;
        word.store(approval.encode().to_le(), Ordering::Release);
        let v = remote_map::map_value(approval.pages * PAGE_SIZE, approval.write);
        value[..8].copy_from_slice(&v.to_le_bytes());
        self.stats.bump(Counter::RemoteMaps);
        Ok(())
    }

    /// Sends the first ZAPs of a round (a narrowed grant's, or a freed allocation's); the
    /// lease tick sends again to whoever has not acknowledged.
    pub(crate) fn send_zaps(&self, z: &Zaps) {
        self.stats.bump(Counter::ZapRounds);
        if send(z) != 0 && self.noisy.allow(self.epoch.now()) {
            pr_warn!(
                "ZAP of {} pages at {:#x} not sent to every mapper yet: sending again\n",
                z.pages,
                z.offset
            );
        }
    }

    /// A freed allocation that other nodes map: this node's mappings go now, the other nodes'
    /// when they take the ZAPs; its pages stay out of use until they all acknowledged.
    pub(crate) fn quarantined(&self, z: &Zaps) {
        self.stats.bump(Counter::Quarantines);
        if let Err(e) = zap_pages(z.offset, z.pages * PAGE_SIZE) {
            pr_err!(
                "unmapping {} freed pages from user space failed ({:?})\n",
                z.pages,
                e
            );
        }
        self.send_zaps(z);
    }

    /// The lease tick: ZAPs of rounds not acknowledged yet go again (with a new number, so
    /// that only an acknowledgement of one sent from now on ends the round), and a round
    /// waiting for too long is logged once. Nothing else happens to its pages: they stay out of
    /// use while a node may still map them.
    pub(crate) fn resend_zaps(&self) {
        let mut inner = self.inner.lock();
        let Some(pool) = inner.pool.as_mut() else {
            return;
        };
        let ranges = &pool.ranges;
        let remote = &mut pool.pages.remote;
        if remote.rounds.is_empty() {
            return;
        }
        // One number for every round sent again at this tick.
        let seq = remote.next_seq();
        for r in remote.rounds.iter_mut() {
            r.waited = r.waited.saturating_add(1);
            if r.waited == WARN_AFTER {
                self.stats.bump(Counter::ZapsUnacked);
                pr_warn!(
                    "nodes {:#06x} have not acknowledged the removal of their mappings of {} pages at {:#x} for {} s: {}\n",
                    r.pending,
                    r.n,
                    ranges.offset_of(r.first),
                    WARN_AFTER,
                    if r.holds { "the pages stay out of use until they do" } else { "sending again" }
                );
            }
            if r.waited <= RESEND_FIRST || r.waited % RESEND_EVERY == 0 {
                r.need = seq;
                send(&Zaps {
                    offset: ranges.offset_of(r.first),
                    pages: r.n as u64,
                    nodes: r.pending,
                    seq,
                });
            }
        }
    }

    /// A ZAP_ACK from node `from`: rounds it ends are done; true if freed pages now wait for
    /// the zeroing work (the caller queues it).
    fn zap_acked(&self, from: u32, word: u64) -> bool {
        let ack = match Zap::decode(word) {
            Ok(z) if z.opcode == ZAP_ACK => z,
            _ => {
                self.stats.bump(Counter::Malformed);
                return false;
            }
        };
        self.stats.bump(Counter::ZapAcks);
        let mut inner = self.inner.lock();
        let Some(pool) = inner.pool.as_mut() else {
            return false;
        };
        pool.pages.remote.ack(from, ack.seq);
        let mut freed = false;
        while let Some(r) = pool.pages.remote.take_done() {
            if r.holds {
                pool.pages.unquarantine(r.first, r.n);
                freed = true;
            }
        }
        freed
    }

    /// Withdraws every approval this node's service ever wrote, in every node's partition: at
    /// load (a previous load's pool may have been lost with approvals its ZAPs never reached)
    /// and when the pool is lost. A node's kernel may be taking one at the same time: then it
    /// maps, and the ZAPs remove that mapping.
    pub(crate) fn clear_approvals(&self) {
        let Some(w) = self.gas.access() else {
            return;
        };
        for node in 0..self.info.node_count {
            for iface in 0..USER_INTERFACES {
                if let Some(word) = w.part_word(node, remote_map::approval_slot(iface, self.node)) {
                    word.store(0, Ordering::Release);
                }
            }
        }
    }

    /// The pool is lost (its memory may be someone else's now): every node that may map any of
    /// it removes its mappings, and no approval of it is left. Nobody waits for the
    /// acknowledgements: the pages are not this node's to hold any more.
    pub(crate) fn zap_lost_pool(&self, offset: u64, pages: u64, nodes: u16) {
        self.clear_approvals();
        if nodes != 0
            && send(&Zaps {
                offset,
                pages,
                nodes,
                seq: 0,
            }) != 0
        {
            pr_crit!(
                "nodes {:#06x} may still map the lost pool: ZAPs not sent\n",
                nodes
            );
        }
    }
}

/// # Safety
///
/// Called by unimem_mailbox in process context with the `ctx` given by [`AckRoute::start`]: a
/// `Service` kept alive by the module until the route is removed.
unsafe extern "C" fn on_ack(ctx: *mut c_void, from_node: u32, word: u64) {
    // SAFETY: see above; `ctx` is `Arc::as_ptr` of that service.
    let service = unsafe { ArcBorrow::<Service>::from_raw(ctx.cast::<Service>()) };
    if service.zap_acked(from_node, word) {
        // Its module reference (held while pages are unzeroed) keeps this code loaded.
        let _ = workqueue::system_percpu().enqueue::<Arc<Service>, 1>(service.into());
    }
}

/// The ZAP_ACKs of service GSAS routed to the service while alive.
pub(crate) struct AckRoute;

impl AckRoute {
    /// The caller keeps `service` alive until the route is dropped.
    pub(crate) fn start(service: &Arc<Service>) -> Result<Self> {
        let ctx = Arc::as_ptr(service).cast_mut().cast::<c_void>();
        // SAFETY: `on_ack` runs in process context with `ctx` alive until `Drop` removes it
        // (which waits for a running call).
        let ret = unsafe {
            kmsg_api::unimem_mbox_register(service::GSAS, u32::from(ZAP_ACK), Some(on_ack), ctx)
        };
        kernel::error::to_result(ret)?;
        Ok(Self)
    }
}

impl Drop for AckRoute {
    fn drop(&mut self) {
        // SAFETY: removal passes no handler and waits for a running call.
        unsafe {
            kmsg_api::unimem_mbox_register(
                service::GSAS,
                u32::from(ZAP_ACK),
                None,
                core::ptr::null_mut(),
            )
        };
    }
}
