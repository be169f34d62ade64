// SPDX-License-Identifier: GPL-2.0
//! KEEP: the access a grant gave a tree, kept across later GRANTs that take it away, as a
//! `chmod` leaves an open file its access. OpenFAM's descriptors keep what their lookup found
//! (its tests change a data item's mode under an open descriptor and go on using it); the
//! library keeps each item's allocations when it opens a descriptor and lets go when it closes
//! it. Only the tree that kept an allocation uses what it kept: tree ids cannot be forged, and
//! a tree id is not made again while this node's live map names it, which it does while the
//! tree keeps something here. Keeps go with their allocation; a tree that holds no interface
//! any more can issue nothing, so its keeps make room when the table is full.

use crate::{
    claims::Claim,
    fabric_client::Access,
    gsas::{grant, owner, prot, status, MAX_KEEPS, USER_INTERFACES},
    lease::PoolState,
    service::Service,
};
use core::sync::atomic::Ordering;
use kernel::prelude::*;

#[derive(Clone, Copy)]
struct Keep {
    /// The allocation's first page.
    start: usize,
    tree: u32,
    /// `grant::READ` | `grant::WRITE`.
    bits: u32,
}

/// The keeps of one pool: at most `MAX_KEEPS`, and the trees whose last keep here went since
/// the service last looked (their live bits are refreshed after the request).
pub(crate) struct Keeps {
    list: KVec<Keep>,
    gone: KVec<u32>,
}

impl Keeps {
    pub(crate) fn new() -> Result<Self> {
        Ok(Self {
            list: KVec::with_capacity(MAX_KEEPS, GFP_KERNEL)?,
            gone: KVec::with_capacity(MAX_KEEPS, GFP_KERNEL)?,
        })
    }

    /// Whether `tree` kept at least `need` of the allocation that starts at `start`.
    pub(crate) fn allows(&self, start: usize, tree: u32, need: u32) -> bool {
        need != 0
            && self
                .list
                .iter()
                .any(|k| k.start == start && k.tree == tree && k.bits & need == need)
    }

    /// Whether `tree` keeps anything here.
    pub(crate) fn holds(&self, tree: u32) -> bool {
        self.list.iter().any(|k| k.tree == tree)
    }

    /// Records that `tree` keeps `bits` of the allocation at `start` (with what it kept
    /// before: an older descriptor may still be open). When the table is full, keeps of trees
    /// that `alive` says are gone make room first; `NO_MEMORY` if none is.
    fn keep(
        &mut self,
        start: usize,
        tree: u32,
        bits: u32,
        alive: impl Fn(u32) -> bool,
    ) -> Result<(), u8> {
        if let Some(k) = self
            .list
            .iter_mut()
            .find(|k| k.start == start && k.tree == tree)
        {
            k.bits |= bits;
            return Ok(());
        }
        if self.list.len() >= MAX_KEEPS {
            self.remove_where(|k| !alive(k.tree));
        }
        if self.list.len() >= MAX_KEEPS {
            return Err(status::NO_MEMORY);
        }
        // Room was reserved for `MAX_KEEPS` (and this is under a spinlock: no allocation).
        self.list
            .push_within_capacity(Keep { start, tree, bits })
            .map_err(|_| status::NO_MEMORY)
    }

    /// `tree` lets go of the allocation at `start` (nothing if it kept nothing of it).
    fn release(&mut self, start: usize, tree: u32) {
        self.remove_where(|k| k.start == start && k.tree == tree);
    }

    /// The allocation at `start` is freed: every keep of it goes.
    pub(crate) fn drop_allocation(&mut self, start: usize) {
        self.remove_where(|k| k.start == start);
    }

    /// A tree whose keeps went since the last call (its live bit may have to be cleared).
    pub(crate) fn take_gone(&mut self) -> Option<u32> {
        self.gone.pop()
    }

    /// Removes the keeps `pred` picks; their trees are noted for [`Keeps::take_gone`].
    fn remove_where(&mut self, pred: impl Fn(&Keep) -> bool) {
        let gone = &mut self.gone;
        self.list.retain(|k| {
            if !pred(k) {
                return true;
            }
            if !gone.contains(&k.tree) {
                // At most `MAX_KEEPS` distinct trees, and room was reserved for them.
                let _ = gone.push_within_capacity(k.tree);
            }
            false
        });
    }
}

/// Whether tree `tree` still holds an interface of the node that made it: one that holds none
/// can issue no request, so what it kept can go.
fn holds_interface(w: &Access<'_>, tree: u32) -> bool {
    (0..USER_INTERFACES).any(|iface| {
        w.part_word(prot::node(tree), owner::entry(iface))
            .and_then(|word| owner::tree(u64::from_le(word.load(Ordering::Acquire))))
            == Some(tree)
    })
}

impl Service {
    /// KEEP (`on`) or let go of the allocation that page `page` is part of, for `tree`: value =
    /// the bits kept. `FAULT` if the page is not allocated, `DENIED` if the grant gives the
    /// issuer nothing.
    pub(crate) fn keep(
        &self,
        pool: &mut PoolState,
        claim: &Claim<'_>,
        tree: u32,
        page: usize,
        on: bool,
        value: &mut [u8; 32],
    ) -> Result<(), u8> {
        let (start, granted) = pool.pages.grant_of(page, tree).ok_or(status::FAULT)?;
        if !on {
            pool.pages.keeps.release(start, tree);
            return Ok(());
        }
        let rw = grant::READ | grant::WRITE;
        let bits = match granted {
            // The tree's own allocation: it needs no keep.
            None => rw,
            Some(g) => {
                let bits = g.bits_for(&self.issuer_creds(claim)) & rw;
                if bits == 0 {
                    return Err(status::DENIED);
                }
                pool.pages
                    .keeps
                    .keep(start, tree, bits, |t| holds_interface(claim.w, t))?;
                bits
            }
        };
        value[..8].copy_from_slice(&u64::from(bits).to_le_bytes());
        Ok(())
    }
}
