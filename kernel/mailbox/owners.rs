// SPDX-License-Identifier: GPL-2.0
//! Who holds the node's user interfaces: allocation and release, protection trees made here,
//! and what keeps one owner's data and requests from the next (`wire::trees`).
//!
//! An interface changes owner only when no home still applies a request of the previous
//! owner (no claim holds its withdrawn entry word), and its area (responses, bulk-in, bulk-out,
//! submission slots) is wiped before the new owner's entry is published. A tree id is made
//! again only when nothing of it lives anywhere in the cluster. docs/SECURITY.md.
//!
//! The owner table that tells the homes who holds each interface: `owner_table.rs`.

use crate::{
    counters::Counters,
    fabric_client::Access,
    gsas::{
        area_page,
        owner::{self, Creds},
        prot, AREA_PAGES, PAGE_SIZE, USER_INTERFACES,
    },
    iface::{Iface, Owner},
    mailbox::{well_known, INTERFACES},
    packet::MAX_24,
    trees,
    window::Window,
};
use core::sync::atomic::{fence, AtomicU32, Ordering};
use kernel::{bindings, new_mutex, prelude::*, sync::Mutex};

/// How many serials one `ALLOC` of a fresh tree looks at before it gives up with `EAGAIN`:
/// a run of live trees longer than this is skipped by the next call, which starts after it.
const FRESH_TRIES: u32 = 4096;

/// The node's interfaces and who holds them.
#[pin_data]
pub(crate) struct Owners {
    pub(crate) ifaces: KVec<Pin<KBox<Iface>>>,
    /// The next serial to try for a protection tree made on this node. Also serializes `alloc`.
    #[pin]
    trees: Mutex<u16>,
    /// Numbers the owner-table publications of this load (`owner_table.rs`), from a random
    /// start.
    pub(crate) publications: AtomicU32,
}

/// The interfaces, each with a random first generation.
fn ifaces() -> Result<KVec<Pin<KBox<Iface>>>> {
    let mut ifaces = KVec::with_capacity(INTERFACES as usize, GFP_KERNEL)?;
    for _ in 0..INTERFACES {
        // SAFETY: `get_random_u32` has no preconditions. A random start keeps owners of a
        // previous load from matching this load's.
        let generation = unsafe { bindings::get_random_u32() };
        ifaces.push(
            KBox::pin_init(Iface::new(generation), GFP_KERNEL)?,
            GFP_KERNEL,
        )?;
    }
    Ok(ifaces)
}

impl Owners {
    pub(crate) fn new() -> impl PinInit<Self, Error> {
        try_pin_init!(Owners {
            ifaces: ifaces()?,
            // SAFETY: `get_random_u32` has no preconditions. A random start keeps a peer's
            // memory of this node's previous load from matching a new owner.
            publications: AtomicU32::new(unsafe { bindings::get_random_u32() }),
            // SAFETY: `get_random_u32` has no preconditions. A random start makes it less
            // likely that a tree id of a previous load (whose GSAS pages may still exist)
            // is handed out again soon.
            trees <- new_mutex!((unsafe { bindings::get_random_u32() } as u16).max(1), "unimem_mailbox::trees"),
        }? Error)
    }

    /// Gives interface `want` (a well-known one, checked by the caller) or, if `None`, the
    /// lowest free interface that is not well-known, to `thread_id`, in protection tree `tree`
    /// or, if `None`, a fresh one, with identity `creds`; returns the interface and the tree.
    /// `EAGAIN` when every candidate still has a previous owner's request being applied
    /// somewhere (or no fresh tree id was found), `EBUSY` when none is free.
    pub(crate) fn alloc(
        &self,
        win: &Window,
        counters: &Counters,
        thread_id: i32,
        tree: Option<u32>,
        creds: Creds,
        want: Option<u32>,
    ) -> Result<(u32, u32)> {
        let candidates = match want {
            Some(id) => id..id + 1,
            None => 0..well_known::FIRST,
        };
        let mut next_serial = self.trees.lock();
        let prot_id = match tree {
            Some(t) => t,
            None => self.fresh_tree(win, counters, &mut next_serial)?,
        };
        let mut quarantined = false;
        for id in candidates {
            let Some(iface) = self.ifaces.get(id as usize) else {
                return Err(EINVAL);
            };
            let mut owner = iface.owner.lock();
            if owner.is_some() {
                continue;
            }
            let w = win.gas().access().ok_or(ENODEV)?;
            if self.claimed(win, &w, id, iface.published.load(Ordering::Relaxed)) {
                quarantined = true;
                continue;
            }
            *owner = Some(Owner { thread_id, prot_id });
            iface.in_use.store(true, Ordering::Release);
            iface.generation.fetch_add(1, Ordering::Relaxed);
            // Whatever a previous owner left unread is not for this thread.
            for sender in 0..win.nodes {
                let stale = win.packet_ring(&w, win.node, id, sender).discard();
                iface.dropped.fetch_add(u64::from(stale), Ordering::Relaxed);
            }
            Self::wipe_area(win, &w, id);
            if let Some(p) = self.publish_owner(win, &w, id, Some((prot_id, creds))) {
                iface
                    .published
                    .store(u64::from(p) << 32 | u64::from(p), Ordering::Relaxed);
            }
            return Ok((id, prot_id));
        }
        if quarantined {
            counters.quarantined.fetch_add(1, Ordering::Relaxed);
        }
        Err(if quarantined { EAGAIN } else { EBUSY })
    }

    pub(crate) fn free(&self, win: &Window, id: u32) {
        if let Some(iface) = self.ifaces.get(id as usize) {
            let mut owner = iface.owner.lock();
            if let Some(w) = win.gas().access() {
                self.publish_owner(win, &w, id, None);
            }
            *owner = None;
            iface.in_use.store(false, Ordering::Release);
        }
    }

    /// Whether a home (one whose memory is not lost) still applies a request that interface
    /// `id` of this node sent under one of its previous owner's entry words (publications
    /// `published`: first and latest, see `Iface::published`).
    fn claimed(&self, win: &Window, w: &Access<'_>, id: u32, published: u64) -> bool {
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
        (0..win.nodes).any(|home| {
            Self::keeps_tables(w, home)
                && w.part_word(home, trees::claim(win.node, id))
                    .is_some_and(|c| ours(u64::from_le(c.load(Ordering::Acquire))))
        })
    }

    /// Zeroes interface `id`'s area in this node's partition: nothing a previous owner
    /// received, wrote or left in a slot reaches the next one.
    fn wipe_area(win: &Window, w: &Access<'_>, id: u32) {
        let len = (AREA_PAGES * PAGE_SIZE) as usize;
        let p = win.part_ptr(w, win.node, area_page(id, 0) as usize);
        // SAFETY: the area of a user interface lies inside this node's partition, below the
        // owner table (`Window::new` checked the partition holds it); `w` keeps the window
        // mapped. No home writes it now (no claim holds the previous entry) and the thread that
        // will map it has not got it yet.
        unsafe { core::ptr::write_bytes(p, 0, len) };
    }

    /// A protection tree id made here that nothing holds anywhere in the cluster:
    /// `prot::new(node, serial)`, serials counting up from a random start, never 0. Called
    /// under `trees`.
    fn fresh_tree(&self, win: &Window, counters: &Counters, next: &mut u16) -> Result<u32> {
        for _ in 0..FRESH_TRIES {
            let serial = (*next).max(1);
            *next = serial.wrapping_add(1);
            let id = prot::new(win.node, serial);
            let held_here = self
                .ifaces
                .iter()
                .any(|i| i.owner.lock().is_some_and(|o| o.prot_id == id));
            if held_here {
                continue;
            }
            let w = win.gas().access().ok_or(ENODEV)?;
            if !Self::tree_lives(win, &w, id, serial) {
                return Ok(id);
            }
        }
        counters.trees_exhausted.fetch_add(1, Ordering::Relaxed);
        Err(EAGAIN)
    }

    /// Whether tree `id` (serial `serial` of this node) has anything anywhere: pages or
    /// remoteFork children on a home (its live map), an interface of any node (owner tables),
    /// or a request being applied (claims). Homes whose memory is lost hold nothing.
    fn tree_lives(win: &Window, w: &Access<'_>, id: u32, serial: u16) -> bool {
        let (offset, mask) = trees::live_bit(win.node, serial);
        let homes = || (0..win.nodes).filter(|&n| Self::keeps_tables(w, n));
        let nodes = || (0..win.nodes).filter(|&n| !w.node_lost(n));
        let word = |node: u32, offset: u64| {
            w.part_word(node, offset)
                .map_or(0, |x| u64::from_le(x.load(Ordering::Acquire)))
        };
        // Claims first: a home releases its claim only after it set the live bit (release
        // ordering), so a released claim read here means the bit is visible below.
        let claimed = homes().any(|home| {
            (0..win.nodes).any(|issuer| {
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
    pub(crate) fn set_prot(&self, win: &Window, id: u32, prot_id: u32) -> Result {
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
                if let Some(w) = win.gas().access() {
                    let creds = Self::published_creds(win, &w, id);
                    if let Some(p) = self.publish_owner(win, &w, id, Some((prot_id, creds))) {
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

    /// Wakes every sleeping receiver, so that it looks again (and finds the fabric gone).
    pub(crate) fn wake_all(&self) {
        for iface in self.ifaces.iter() {
            let _owner = iface.owner.lock();
            iface.wait.notify_all();
        }
    }

    /// Wakes the receivers of held interfaces whose rings have packets, and the threads asleep
    /// for a GSAS answer (the doorbell: a home that answered one of them rang it).
    pub(crate) fn wake_queued(&self, win: &Window, w: &Access<'_>) {
        for (id, iface) in self.ifaces.iter().enumerate() {
            if !iface.in_use.load(Ordering::Acquire) {
                continue;
            }
            // Taking the receivers' lock orders this wake-up after any check they made.
            let _owner = iface.owner.lock();
            if iface.answer_wait.load(Ordering::Acquire) || win.queued(w, id as u32) {
                iface.wait.notify_all();
            }
        }
    }
}
