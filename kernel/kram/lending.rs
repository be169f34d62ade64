// SPDX-License-Identifier: GPL-2.0
//! The borrower's side of the lending protocol: REQUEST and RENEW every tick, OFFER, ACK and
//! REVOKE from the lenders, replacement of a mirror's lost parts. Giving memory back:
//! `give_back.rs`.

use crate::instance::InstanceState;
use crate::kram::Kram;
use crate::kram_client::send;
use crate::layout::{Lease, Part};
use crate::wire::kram::{to_daemon, to_driver, KramMsg, CHUNK_SIZE, MAX_REQUEST_CHUNKS, V2};
use core::sync::atomic::Ordering;
use kernel::{prelude::*, sync::Arc, workqueue};

/// The smallest part of an instance a v2 REQUEST accepts from one lender.
const MIN_STRIPE_MIB: u32 = 64;

/// Where an accepted offer goes: copy `copy` at disk offset `offset`; `hole`: a replacement
/// of a lost part of a live disk (it must be synced from the other copy).
#[derive(Clone, Copy)]
struct Slot {
    copy: usize,
    offset: u64,
    chunks: u32,
    hole: bool,
}

impl InstanceState {
    /// The first place that lacks memory: the first gap of the first copy that has one (before
    /// the disk exists, usually its end, but a part revoked before use leaves a gap in the
    /// middle); once the disk exists, only a mirror's lost parts are replaced. A gap followed by
    /// a part is a hole, to be filled exactly (`chunks` is its size).
    fn wanted(&self, size_mib: u32) -> Option<Slot> {
        let l = self.shared.layout.lock();
        let size = u64::from(size_mib) * CHUNK_SIZE;
        if self.disk.is_some() && l.ncopies == 1 {
            return None;
        }
        (0..l.ncopies).find_map(|copy| {
            let (at, end) = l.first_gap(copy, size)?;
            Some(Slot {
                copy,
                offset: at,
                chunks: ((end - at) / CHUNK_SIZE) as u32,
                hole: self.disk.is_some() || end < size,
            })
        })
    }

    /// Whether `node` lends any part of this instance (a lender holds at most one grant per
    /// instance, and a mirror's copies must not share a lender).
    fn uses(&self, node: u32) -> bool {
        self.shared
            .layout
            .lock()
            .parts()
            .any(|p| p.lease.node == node)
    }

    /// The lease `m` from `node` names.
    fn lease(&self, node: u32, m: &KramMsg) -> Option<Arc<Lease>> {
        let l = self.shared.layout.lock();
        let found = l.parts().find(|p| {
            (p.lease.node, p.lease.first_chunk, p.lease.chunks) == (node, m.first_chunk, m.chunks)
        });
        found.map(|p| p.lease.clone())
    }

    /// Whether every copy is complete and every part acknowledged.
    pub(crate) fn complete(&self, size_mib: u32) -> bool {
        let l = self.shared.layout.lock();
        let size = u64::from(size_mib) * CHUNK_SIZE;
        // No gap: parts never overlap (each fills the gap `wanted` named), so this is also
        // "every byte held once".
        (0..l.ncopies).all(|c| l.first_gap(c, size).is_none())
            && l.parts().all(|p| p.lease.clock.acked())
    }

    /// Takes out of the layout every part that is lost for good; returns them.
    fn drop_lost(&self, kram: &Kram) -> KVec<Arc<Lease>> {
        let mut gone = KVec::new();
        let mut l = self.shared.layout.lock();
        for copy in l.copies.iter_mut() {
            copy.retain(|p| {
                let dead = p.lease.is_lost()
                    || p.lease.clock.is_revoked()
                    || kram.fabric.lost(p.lease.node);
                if dead {
                    let _ = gone.push(p.lease.clone(), GFP_ATOMIC);
                }
                !dead
            });
        }
        gone
    }
}

impl Kram {
    /// Every tick: RENEW every lease; for a mirror, retire lost parts; REQUEST what each
    /// instance lacks from every other node that lends it nothing yet.
    pub(crate) fn tick(&self) {
        if self.fabric.gas().is_revoked() {
            return;
        }
        let now = self.epoch.now();
        let Ok(mut out) = KVec::<(u32, KramMsg)>::with_capacity(16, GFP_KERNEL) else {
            return;
        };
        for inst in self.instances.iter() {
            let state = inst.state.lock();
            if state.disk.is_some() && self.mirror {
                for lease in state.drop_lost(self).iter() {
                    pr_warn!(
                        "kram{}: part on node {} (chunks {}+{}) lost: mirroring it again\n",
                        inst.id,
                        lease.node,
                        lease.first_chunk,
                        lease.chunks
                    );
                    self.give_back(inst.id, lease);
                }
            }
            // Room first, outside the layout's spinlock (no sleeping allocation under it).
            // Parts join the layout only under `state`, held here: the count stays true.
            let parts = state.shared.layout.lock().parts().count();
            if out.reserve(parts, GFP_KERNEL).is_err() {
                pr_warn!("kram{}: no memory to renew its leases this tick\n", inst.id);
            }
            for p in state
                .shared
                .layout
                .lock()
                .parts()
                .filter(|p| !p.lease.clock.is_revoked())
            {
                let tag = p.lease.clock.stamp(now);
                let m = KramMsg::new(
                    to_daemon::RENEW,
                    self.me(),
                    inst.id as u8,
                    p.lease.first_chunk,
                    p.lease.chunks,
                    tag,
                );
                let _ = out.push_within_capacity((p.lease.node, m));
            }
            if self.stopping.load(Ordering::Acquire) {
                continue;
            }
            let Some(slot) = state.wanted(inst.size_mib) else {
                continue;
            };
            // The seed's message (exactly `size` MiB from one lender) while it can say it; a
            // hole must be filled exactly.
            let first = !state.uses_any();
            let min = if slot.hole || (first && slot.chunks <= MAX_REQUEST_CHUNKS) {
                slot.chunks
            } else {
                slot.chunks.min(MIN_STRIPE_MIB)
            };
            let request = KramMsg::request(self.me(), inst.id as u8, slot.chunks, min, 0);
            for node in (0..self.info.node_count).filter(|&n| n != self.info.node_id) {
                if !state.uses(node) && !self.fabric.lost(node) {
                    let _ = out.push((node, request), GFP_KERNEL);
                }
            }
        }
        for (node, m) in out.iter() {
            send(*node, *m);
        }
    }

    /// A message from a lender's daemon: OFFER, ACK or REVOKE.
    pub(crate) fn message(self: &Arc<Self>, from: u32, word: u64) {
        let m = match KramMsg::decode_for_driver(word) {
            Ok(m) if u32::from(m.node) == from => m,
            _ => {
                self.malformed.fetch_add(1, Ordering::Relaxed);
                if self.noisy.allow(self.epoch.now()) {
                    pr_warn!(
                        "malformed message {:#018x} from node {} dropped\n",
                        word,
                        from
                    );
                }
                return;
            }
        };
        match m.opcode {
            to_driver::OFFER => self.offer(from, m),
            to_driver::ACK => self.ack(from, m),
            _ => self.revoke(from, m),
        }
    }

    fn ack(self: &Arc<Self>, from: u32, m: KramMsg) {
        let now = self.epoch.now();
        let (mut attach, mut sync) = (false, false);
        let found = self
            .instances
            .get(usize::from(m.instance))
            .and_then(|inst| {
                let state = inst.state.lock();
                let lease = state.lease(from, &m)?;
                if !lease.clock.acked() && lease.clock.ack(m.tag, now) {
                    pr_info!(
                        "kram{}: node {} confirmed chunks {}+{}\n",
                        inst.id,
                        from,
                        m.first_chunk,
                        m.chunks
                    );
                    attach = state.disk.is_none() && state.complete(inst.size_mib);
                    sync = state.disk.is_some();
                } else {
                    lease.clock.ack(m.tag, now);
                }
                Some(())
            });
        let counter = if found.is_some() {
            &self.acks
        } else {
            &self.stray
        };
        counter.fetch_add(1, Ordering::Relaxed);
        if attach {
            let _ = workqueue::system_percpu().enqueue::<Arc<Kram>, 2>(self.clone());
        }
        if sync {
            let _ = workqueue::system_percpu().enqueue::<Arc<Kram>, 3>(self.clone());
        }
    }

    /// The lender says a range is not ours: never touch it again, nor FREE it.
    fn revoke(&self, from: u32, m: KramMsg) {
        let found = self.instances.get(usize::from(m.instance)).and_then(|inst| {
            let mut state = inst.state.lock();
            let lease = state.lease(from, &m)?;
            lease.clock.revoke();
            if state.disk.is_none() {
                // Not in use yet: forget it, ask again.
                pr_warn!("kram{}: node {} revoked chunks {}+{} before use; asking again\n", inst.id, from, m.first_chunk, m.chunks);
                drop(state.drop_lost(self));
            } else if !self.mirror {
                state.lost = true;
                pr_crit!(
                    "kram{}: node {} revoked chunks {}+{} (lease lapsed): what /dev/kram{} kept there is lost, its I/O fails\n",
                    inst.id, from, m.first_chunk, m.chunks, inst.id
                );
            }
            Some(())
        });
        let counter = if found.is_some() {
            &self.revokes
        } else {
            &self.stray
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// OFFER: taken if it fits the first place the instance lacks memory and the lender lends
    /// it nothing yet.
    fn offer(&self, from: u32, m: KramMsg) {
        let decline = || {
            self.declined.fetch_add(1, Ordering::Relaxed);
            send(from, m.reply(to_daemon::DECLINE, self.me(), 0));
        };
        let Some(inst) = self.instances.get(usize::from(m.instance)) else {
            if self.noisy.allow(self.epoch.now()) {
                pr_warn!(
                    "offer from node {} for unknown instance {}\n",
                    from,
                    m.instance
                );
            }
            return decline();
        };
        let Ok(offset) = self.lease_offset(from, m.first_chunk, m.chunks) else {
            self.malformed.fetch_add(1, Ordering::Relaxed);
            if self.noisy.allow(self.epoch.now()) {
                pr_warn!(
                    "offer from node {} of chunks {}+{} lies outside its partition\n",
                    from,
                    m.first_chunk,
                    m.chunks
                );
            }
            return;
        };
        let tag = {
            let state = inst.state.lock();
            let Some(slot) = state.wanted(inst.size_mib) else {
                drop(state);
                return decline();
            };
            let exact = slot.hole || (m.version != V2 && !state.uses_any());
            if self.stopping.load(Ordering::Acquire)
                || m.chunks > slot.chunks
                || (exact && m.chunks != slot.chunks)
                || state.uses(from)
                || self.fabric.lost(from)
            {
                drop(state);
                return decline();
            }
            let lease = Lease::new(from, m.first_chunk, m.chunks, offset);
            let tag = lease.clock.stamp(self.epoch.now());
            let Ok(lease) = Arc::new(lease, GFP_KERNEL) else {
                drop(state);
                return decline();
            };
            // A replacement in a live mirror copies the intact copy first; before the disk
            // exists there is nothing to copy.
            let part = Part {
                offset: slot.offset,
                lease,
                syncing: slot.hole && state.disk.is_some(),
            };
            if state.shared.layout.lock().insert(slot.copy, part).is_err() {
                drop(state);
                return decline();
            }
            tag
        };
        self.confirmed.fetch_add(1, Ordering::Relaxed);
        send(from, m.reply(to_daemon::CONFIRM, self.me(), tag));
        pr_info!(
            "kram{}: node {} offers chunks {}+{}; confirmed\n",
            inst.id,
            from,
            m.first_chunk,
            m.chunks
        );
    }

    /// Window offset of a lender's chunks, checked to lie in its partition.
    fn lease_offset(&self, node: u32, first: u32, chunks: u32) -> Result<u64> {
        let (offset, _) = self
            .fabric
            .gas()
            .lent_range(node, first, chunks)
            .ok_or(EINVAL)?;
        if node == self.info.node_id {
            return Err(EINVAL);
        }
        Ok(offset)
    }
}
