// SPDX-License-Identifier: GPL-2.0
//! Who holds the node's user interfaces: allocation and release, protection trees made here,
//! and what keeps one owner's data and requests from the next (`wire::trees`).
//!
//! An interface changes owner only when no home still applies a request of the previous
//! owner (no claim holds its withdrawn entry word), and its area (responses, bulk-in, bulk-out,
//! submission slots) is wiped before the new owner's entry is published. A tree id is made
//! again only when nothing of it lives anywhere in the cluster. docs/SECURITY.md.

use crate::{
    fabric_client::Access,
    gsas::{
        area_page,
        owner::{self, Creds},
        prot, AREA_PAGES, PAGE_SIZE, USER_INTERFACES,
    },
    iface::Owner,
    packet::MAX_24,
    state::State,
    trees,
};
use core::sync::atomic::{fence, Ordering};
use kernel::prelude::*;

/// How many serials one `ALLOC` of a fresh tree looks at before it gives up with `EAGAIN`:
/// a run of live trees longer than this is skipped by the next call, which starts after it.
const FRESH_TRIES: u32 = 4096;

impl State {
    /// Gives the lowest free interface a thread may have to `thread_id`, in protection tree
    /// `tree` or, if `None`, a fresh one, with identity `creds`; returns the interface and the
    /// tree. `EAGAIN` when every free interface still has a previous owner's request being
    /// applied somewhere (or no fresh tree id was found), `EBUSY` when none is free.
    pub(crate) fn alloc(
        &self,
        thread_id: i32,
        tree: Option<u32>,
        creds: Creds,
    ) -> Result<(u32, u32)> {
        let mut next_serial = self.trees.lock();
        let prot_id = match tree {
            Some(t) => t,
            None => self.fresh_tree(&mut next_serial)?,
        };
        let mut quarantined = false;
        for (id, iface) in self
            .ifaces
            .iter()
            .enumerate()
            .take(USER_INTERFACES as usize)
        {
            let id = id as u32;
            let mut owner = iface.owner.lock();
            if owner.is_some() {
                continue;
            }
            let w = self.gas().access().ok_or(ENODEV)?;
            if self.claimed(&w, id, iface.published.load(Ordering::Relaxed)) {
                quarantined = true;
                continue;
            }
            *owner = Some(Owner { thread_id, prot_id });
            iface.in_use.store(true, Ordering::Release);
            iface.generation.fetch_add(1, Ordering::Relaxed);
            // Whatever a previous owner left unread is not for this thread.
            for sender in 0..self.nodes {
                let stale = self.packet_ring(&w, self.node, id, sender).discard();
                iface.dropped.fetch_add(u64::from(stale), Ordering::Relaxed);
            }
            self.wipe_area(&w, id);
            if let Some(p) = self.publish_owner(&w, id, Some((prot_id, creds))) {
                iface
                    .published
                    .store(u64::from(p) << 32 | u64::from(p), Ordering::Relaxed);
            }
            return Ok((id, prot_id));
        }
        if quarantined {
            self.counters.quarantined.fetch_add(1, Ordering::Relaxed);
        }
        Err(if quarantined { EAGAIN } else { EBUSY })
    }

    pub(crate) fn free(&self, id: u32) {
        if let Some(iface) = self.ifaces.get(id as usize) {
            let mut owner = iface.owner.lock();
            if let Some(w) = self.gas().access() {
                self.publish_owner(&w, id, None);
            }
            *owner = None;
            iface.in_use.store(false, Ordering::Release);
        }
    }

    /// Whether a home (one whose memory is not lost) still applies a request that interface
    /// `id` of this node sent under one of its previous owner's entry words (publications
    /// `published`: first and latest, see `Iface::published`).
    fn claimed(&self, w: &Access<'_>, id: u32, published: u64) -> bool {
        if published == 0 {
            // Never owned since this load.
            return false;
        }
        let (first, last) = ((published >> 32) as u32, published as u32);
        let ours = |claim: u64| {
            owner::tree(claim).is_some()
                && ((claim >> 24) as u32).wrapping_sub(first) <= last.wrapping_sub(first)
        };
        // Pairs with the fence after the entry's withdrawal and the homes' fence between their
        // claim and their second look at the entry (`wire::trees`).
        fence(Ordering::SeqCst);
        (0..self.nodes).any(|home| {
            Self::keeps_tables(w, home)
                && w.part_word(home, trees::claim(self.node, id))
                    .is_some_and(|c| ours(u64::from_le(c.load(Ordering::Acquire))))
        })
    }

    /// Zeroes interface `id`'s area in this node's partition: nothing a previous owner
    /// received, wrote or left in a slot reaches the next one.
    fn wipe_area(&self, w: &Access<'_>, id: u32) {
        let len = (AREA_PAGES * PAGE_SIZE) as usize;
        let p = self.part_ptr(w, self.node, area_page(id, 0) as usize);
        // SAFETY: the area of a user interface lies inside this node's partition, below the
        // owner table (`State::new` checked the partition holds it); `w` keeps the window
        // mapped. No home writes it now (no claim holds the previous entry) and the thread that
        // will map it has not got it yet.
        unsafe { core::ptr::write_bytes(p, 0, len) };
    }

    /// A protection tree id made here that nothing holds anywhere in the cluster:
    /// `prot::new(node, serial)`, serials counting up from a random start, never 0. Called
    /// under `trees`.
    fn fresh_tree(&self, next: &mut u16) -> Result<u32> {
        for _ in 0..FRESH_TRIES {
            let serial = (*next).max(1);
            *next = serial.wrapping_add(1);
            let id = prot::new(self.node, serial);
            let held_here = self
                .ifaces
                .iter()
                .any(|i| i.owner.lock().is_some_and(|o| o.prot_id == id));
            if held_here {
                continue;
            }
            let w = self.gas().access().ok_or(ENODEV)?;
            if !self.tree_lives(&w, id, serial) {
                return Ok(id);
            }
        }
        self.counters
            .trees_exhausted
            .fetch_add(1, Ordering::Relaxed);
        Err(EAGAIN)
    }

    /// Whether tree `id` (serial `serial` of this node) has anything anywhere: pages or
    /// remoteFork children on a home (its live map), an interface of any node (owner tables),
    /// or a request being applied (claims). Homes whose memory is lost hold nothing.
    fn tree_lives(&self, w: &Access<'_>, id: u32, serial: u16) -> bool {
        let (offset, mask) = trees::live_bit(self.node, serial);
        let homes = || (0..self.nodes).filter(|&n| Self::keeps_tables(w, n));
        let nodes = || (0..self.nodes).filter(|&n| !w.node_lost(n));
        let word = |node: u32, offset: u64| {
            w.part_word(node, offset)
                .map_or(0, |x| u64::from_le(x.load(Ordering::Acquire)))
        };
        // Claims first: a home releases its claim only after it set the live bit (release
        // ordering), so a released claim read here means the bit is visible below.
        let claimed = homes().any(|home| {
            (0..self.nodes).any(|issuer| {
                (0..USER_INTERFACES)
                    .any(|i| trees::claims_tree(word(home, trees::claim(issuer, i)), id))
            })
        });
        claimed
            || homes().any(|home| word(home, offset) & mask != 0)
            || nodes().any(|node| {
                (0..USER_INTERFACES).any(|i| owner::tree(word(node, owner::entry(i))) == Some(id))
            })
    }

    /// Whether node `home`'s service keeps its claim table and live map (`wire::trees`): its
    /// memory is not lost and its header says so.
    fn keeps_tables(w: &Access<'_>, home: u32) -> bool {
        !w.node_lost(home)
            && w.part_word(home, trees::HEADER_OFFSET)
                .is_some_and(|h| u64::from_le(h.load(Ordering::Acquire)) == trees::MAGIC)
    }

    /// Local interface `id`'s tree and generation while a thread holds it.
    pub(crate) fn iface_state(&self, id: u32) -> Option<(u32, u32)> {
        let iface = self.ifaces.get(id as usize)?;
        let owner = iface.owner.lock();
        // Read under the owner lock, which `alloc` holds while it bumps the generation.
        Some((
            owner.as_ref()?.prot_id,
            iface.generation.load(Ordering::Relaxed),
        ))
    }

    /// The protection tree of local interface `id`, if allocated.
    pub(crate) fn tree_of(&self, id: u32) -> Option<u32> {
        Some(self.ifaces.get(id as usize)?.owner.lock().as_ref()?.prot_id)
    }

    /// Whether `prot_id` can name a protection tree: 24 bits, not 0 (the GSAS service's "free").
    pub(crate) fn valid_tree(prot_id: u32) -> bool {
        prot_id != 0 && prot_id <= MAX_24
    }

    /// Moves held interface `id` to tree `prot_id` (`SET_PROT`, the administrator's). The
    /// identity it carries stays.
    pub(crate) fn set_prot(&self, id: u32, prot_id: u32) -> Result {
        if id >= USER_INTERFACES || !Self::valid_tree(prot_id) {
            return Err(EINVAL);
        }
        let iface = self.ifaces.get(id as usize).ok_or(EINVAL)?;
        let mut owner = iface.owner.lock();
        match &mut *owner {
            Some(owner) => {
                owner.prot_id = prot_id;
                // A request already in a submission slot is dropped rather than run in the new
                // tree (docs/GSAS.md).
                if let Some(w) = self.gas().access() {
                    let creds = self.published_creds(&w, id);
                    if let Some(p) = self.publish_owner(&w, id, Some((prot_id, creds))) {
                        // Same owner: its window of publications grows.
                        let first = iface.published.load(Ordering::Relaxed) >> 32;
                        iface
                            .published
                            .store(first << 32 | u64::from(p), Ordering::Relaxed);
                    }
                }
                Ok(())
            }
            None => Err(ENOENT),
        }
    }
}
