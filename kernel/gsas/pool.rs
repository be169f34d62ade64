// SPDX-License-Identifier: GPL-2.0
//! The bookkeeping of the service's page pool: for every page its owner (a protection tree,
//! 0 = free) and, at the first page of an allocation, its length. No memory is touched here.
//!
//! The pool is made of ranges (one borrowed at load, more as it grows: `grow.rs`), numbered
//! one after the other: pool page `i` of range `r` lies wherever that range lies in the
//! partition (`lease::Ranges`). Nothing spans two ranges: allocations, checked page spans and
//! zeroing runs all stop at a range's end, since the next range is elsewhere in memory.

use crate::{
    gsas::{grant::Grant, owner::Creds, status},
    keeps::Keeps,
    mappers::Mappers,
};
use kernel::{alloc::KVVec, prelude::*};

/// Owner of a free page.
pub(crate) const FREE: u32 = 0;
/// Owner of the pages of a freed allocation while they are being zeroed: neither usable nor
/// allocatable (not a 24-bit tree id, so no request can match it).
pub(crate) const ZEROING: u32 = u32::MAX;
/// Owner of the pages of a freed allocation waiting for the zeroing work (too large to zero
/// while the request that freed it is served). Like `ZEROING`, nobody's.
pub(crate) const QUEUED: u32 = u32::MAX - 1;
/// Owner of pages that could not be zeroed: never handed out again.
pub(crate) const STUCK: u32 = u32::MAX - 2;
/// Owner of the pages of a freed allocation that other nodes mapped, until every one of them
/// acknowledged that its mappings are gone (`mappers.rs`); then `QUEUED`.
pub(crate) const QUARANTINED: u32 = u32::MAX - 3;

/// Whether pages of owner `o` belong to no tree.
fn nobodys(o: u32) -> bool {
    o == FREE || o >= QUARANTINED
}

/// What freeing an allocation left to do with its pages.
pub(crate) enum Freed {
    /// Zero these many pages now (`ZEROING`).
    Zero(usize),
    /// Queued for the zeroing work.
    Queued,
    /// Mapped by other nodes: held out of use (`QUARANTINED`; `STUCK` if the round could not
    /// be recorded) until they acknowledge ZAP number `seq`.
    Mapped { n: usize, nodes: u16, seq: u32 },
}

/// The pool's per-page arrays, one element per pool page.
pub(crate) struct Pages {
    owner: KVVec<u32>,
    /// Pages of the allocation that starts at this page; 0 elsewhere.
    len: KVVec<u32>,
    /// The tag of the allocation that starts at this page (ALLOC's `arg2`); 0 elsewhere.
    tag: KVVec<u64>,
    /// The user who made the allocation that starts at this page (its quota is charged).
    user: KVVec<u32>,
    /// Who else may use the allocation that starts at this page (`op::GRANT`; mode 0: nobody).
    grant: KVVec<Grant>,
    /// The first page of the allocation this page is part of (valid while it is allocated).
    start: KVVec<u32>,
}

impl Pages {
    /// Empty arrays with room for `pages` pages.
    fn with_capacity(pages: usize) -> Result<Self> {
        Ok(Self {
            owner: KVVec::with_capacity(pages, GFP_KERNEL)?,
            len: KVVec::with_capacity(pages, GFP_KERNEL)?,
            tag: KVVec::with_capacity(pages, GFP_KERNEL)?,
            user: KVVec::with_capacity(pages, GFP_KERNEL)?,
            grant: KVVec::with_capacity(pages, GFP_KERNEL)?,
            start: KVVec::with_capacity(pages, GFP_KERNEL)?,
        })
    }

    /// Whether every array has room for `pages` pages.
    fn fits(&self, pages: usize) -> bool {
        self.owner
            .capacity()
            .min(self.len.capacity())
            .min(self.tag.capacity())
            >= pages
            && self
                .user
                .capacity()
                .min(self.grant.capacity())
                .min(self.start.capacity())
                >= pages
    }

    /// The first `pages` pages only (the storage stays).
    fn truncate(&mut self, pages: usize) {
        self.owner.truncate(pages);
        self.len.truncate(pages);
        self.tag.truncate(pages);
        self.user.truncate(pages);
        self.grant.truncate(pages);
        self.start.truncate(pages);
    }

    /// These pages and `n` free ones after them, in `into`'s storage (which `fits`); the old
    /// storage.
    fn regrow(&mut self, into: Pages, n: usize) -> Pages {
        Pages {
            owner: regrow(&mut self.owner, into.owner, n, FREE),
            len: regrow(&mut self.len, into.len, n, 0),
            tag: regrow(&mut self.tag, into.tag, n, 0),
            user: regrow(&mut self.user, into.user, n, 0),
            grant: regrow(&mut self.grant, into.grant, n, Grant::default()),
            start: regrow(&mut self.start, into.start, n, 0),
        }
    }
}

/// Per-page storage for a pool grown to a given size, allocated before the service lock is
/// taken (nothing may sleep under it): [`Pool::grow`] copies into it, and gives back the old
/// storage to be dropped after the lock.
pub(crate) struct Spare {
    pages: Pages,
    nodes: KVVec<u16>,
}

impl Spare {
    pub(crate) fn new(pages: usize) -> Result<Self> {
        Ok(Self {
            pages: Pages::with_capacity(pages)?,
            nodes: KVVec::with_capacity(pages, GFP_KERNEL)?,
        })
    }
}

/// `v` followed by `n` times `x`, in `spare`'s storage, which must hold that many (then
/// nothing is allocated); `v`'s old storage is returned.
fn regrow<T: Copy>(v: &mut KVVec<T>, mut spare: KVVec<T>, n: usize, x: T) -> KVVec<T> {
    spare.clear();
    // Within the capacity checked by `Pool::grow`: neither call allocates.
    let copied = spare.extend_from_slice(v, GFP_NOWAIT).is_ok();
    if copied && spare.extend_with(n, x, GFP_NOWAIT).is_ok() {
        core::mem::replace(v, spare)
    } else {
        spare
    }
}

/// Ranges a pool may have (`wire::kram::GSAS_INSTANCES`).
pub(crate) const MAX_RANGES: usize = crate::wire::kram::GSAS_INSTANCES.len();

pub(crate) struct Pool {
    t: Pages,
    /// Other nodes that map allocations, and the rounds that remove their mappings.
    pub(crate) remote: Mappers,
    /// What trees kept of other trees' allocations (`op::KEEP`).
    pub(crate) keeps: Keeps,
    /// Pages not free (allocated or being zeroed).
    pub(crate) used: usize,
    /// Allocations not freed yet.
    pub(crate) allocations: usize,
    /// Pages freed and not zeroed yet (queued or being zeroed).
    pub(crate) unzeroed: usize,
    /// The first pool page of each range, in order (the first is 0).
    bounds: KVec<usize>,
}

impl Pool {
    pub(crate) fn new(pages: usize) -> Result<Self> {
        // `pages` free pages, as a growth of an empty pool.
        let mut t = Pages::with_capacity(0)?;
        drop(t.regrow(Pages::with_capacity(pages)?, pages));
        let mut bounds = KVec::with_capacity(MAX_RANGES, GFP_KERNEL)?;
        bounds.push(0, GFP_KERNEL)?;
        Ok(Self {
            t,
            remote: Mappers::new(pages)?,
            keeps: Keeps::new()?,
            used: 0,
            allocations: 0,
            unzeroed: 0,
            bounds,
        })
    }

    pub(crate) fn pages(&self) -> usize {
        self.t.owner.len()
    }

    /// How many ranges the pool has.
    pub(crate) fn ranges(&self) -> usize {
        self.bounds.len()
    }

    /// A new range of `n` pages after the last, its per-page storage copied into `spare`
    /// (made for at least `pages() + n` pages); whether it was added (not if `spare` is too
    /// small or the pool has `MAX_RANGES`), and the storage not used now (the old one, or
    /// `spare`), to be dropped after the service lock.
    pub(crate) fn grow(&mut self, spare: Spare, n: usize) -> (bool, Spare) {
        let total = self.pages() + n;
        if !spare.pages.fits(total)
            || spare.nodes.capacity() < total
            || self.bounds.len() >= MAX_RANGES
        {
            return (false, spare);
        }
        let first = self.pages();
        let old = Spare {
            pages: self.t.regrow(spare.pages, n),
            nodes: self.remote.regrow(|v| regrow(v, spare.nodes, n, 0)),
        };
        // Within the capacity `new` reserved (fewer than `MAX_RANGES` so far).
        let _ = self.bounds.push_within_capacity(first);
        (true, old)
    }

    /// Whether every page of `first..end` is `FREE` (allocated never, or freed and zeroed).
    fn all_free(&self, first: usize, end: usize) -> bool {
        self.t.owner[first..end].iter().all(|&o| o == FREE)
    }

    /// Whether the pool has more than one range and none of the last one's pages is in use.
    pub(crate) fn last_range_free(&self) -> bool {
        match self.bounds.last() {
            Some(&first) if self.bounds.len() > 1 => self.all_free(first, self.pages()),
            _ => false,
        }
    }

    /// The ranges at the pool's end (never the first) of which no page is in use, and their
    /// pages: what [`shrink`](Self::shrink) can give back.
    pub(crate) fn free_tail(&self) -> (usize, usize) {
        let (mut n, mut end) = (0, self.pages());
        for &first in self.bounds.iter().skip(1).rev() {
            if !self.all_free(first, end) {
                break;
            }
            n += 1;
            end = first;
        }
        (n, self.pages() - end)
    }

    /// Takes the last range out of the bookkeeping if [`last_range_free`](Self::last_range_free)
    /// (no later page is numbered after it, so nothing else changes); whether it did.
    pub(crate) fn shrink(&mut self) -> bool {
        if !self.last_range_free() {
            return false;
        }
        let Some(first) = self.bounds.pop() else {
            return false;
        };
        self.t.truncate(first);
        self.remote.truncate(first);
        true
    }

    /// Whether pages `first..=last` lie in one range.
    fn one_range(&self, first: usize, last: usize) -> bool {
        !self.bounds.iter().any(|&b| first < b && b <= last)
    }

    /// The first page after the range that page `page` is in.
    fn range_end(&self, page: usize) -> usize {
        self.bounds
            .iter()
            .copied()
            .find(|&b| b > page)
            .unwrap_or(self.pages())
    }

    /// First fit: `n` contiguous free pages of one range, now owned by `tree` with `tag`,
    /// charged to user `uid`; the first page's index.
    pub(crate) fn alloc(&mut self, n: usize, tree: u32, tag: u64, uid: u32) -> Option<usize> {
        let mut run = 0;
        for i in 0..self.pages() {
            if self.bounds.contains(&i) {
                run = 0;
            }
            run = if self.t.owner[i] == FREE { run + 1 } else { 0 };
            if run == n {
                let first = i + 1 - n;
                self.t.owner[first..=i].fill(tree);
                self.t.start[first..=i].fill(first as u32);
                self.t.len[first] = n as u32;
                self.t.tag[first] = tag;
                self.t.user[first] = uid;
                self.t.grant[first] = Grant::default();
                self.remote.reset(first);
                self.used += n;
                self.allocations += 1;
                return Some(first);
            }
        }
        None
    }

    /// Whether pages `first..=last` may be used by `tree`: `FAULT` if one is not allocated
    /// (or past the pool), `DENIED` if one belongs to another tree.
    pub(crate) fn check(&self, first: usize, last: usize, tree: u32) -> Result<(), u8> {
        let owners = self.t.owner.get(first..=last).ok_or(status::FAULT)?;
        // The pages after a range's last are not the next range's first in memory.
        if !self.one_range(first, last) {
            return Err(status::FAULT);
        }
        if owners.iter().any(|&o| nobodys(o)) {
            return Err(status::FAULT);
        }
        if owners.iter().any(|&o| o != tree) {
            return Err(status::DENIED);
        }
        Ok(())
    }

    /// The allocation that page `page` is part of: its first page and length.
    fn allocation_of(&self, page: usize) -> Option<(usize, usize)> {
        if nobodys(*self.t.owner.get(page)?) {
            return None;
        }
        let first = self.t.start[page] as usize;
        let n = *self.t.len.get(first)? as usize;
        (n != 0 && page < first + n).then_some((first, n))
    }

    /// Node `node` may map pages `first..=last` (allocated, `check`ed): recorded on every
    /// allocation they touch, so that freeing any of them reaches it.
    pub(crate) fn add_mapper(&mut self, first: usize, last: usize, node: u32) {
        let mut page = first;
        while page <= last {
            let Some((start, n)) = self.allocation_of(page) else {
                return;
            };
            self.remote.add(start, node);
            page = start + n;
        }
    }

    /// Whether pages `first..=last`, which `check` found to be another tree's, lie in one
    /// allocation whose grant lets `creds` do `need` (`grant::need`), or of which `tree` kept
    /// that much (`op::KEEP`).
    pub(crate) fn granted(
        &self,
        first: usize,
        last: usize,
        creds: &Creds,
        tree: u32,
        need: u32,
    ) -> bool {
        self.allocation_of(first).is_some_and(|(start, n)| {
            last < start + n
                && (self.t.grant[start].allows(creds, need) || self.keeps.allows(start, tree, need))
        })
    }

    /// The first page of the allocation page `page` is part of, and its grant if it is not
    /// `tree`'s own; `None` if the page is not allocated.
    pub(crate) fn grant_of(&self, page: usize, tree: u32) -> Option<(usize, Option<Grant>)> {
        let (start, _) = self.allocation_of(page)?;
        Some((
            start,
            (self.t.owner[start] != tree).then(|| self.t.grant[start]),
        ))
    }

    /// The length of the allocation that starts at `first`, if `tree` (or an `admin`) may act
    /// on it: `FAULT` if no allocation starts there, `DENIED` if it is another tree's.
    fn allocation_at(&self, first: usize, tree: u32, admin: bool) -> Result<usize, u8> {
        let n = *self.t.len.get(first).ok_or(status::FAULT)? as usize;
        if n == 0 {
            return Err(status::FAULT);
        }
        if self.t.owner[first] != tree && !admin {
            return Err(status::DENIED);
        }
        Ok(n)
    }

    /// Sets the grant of the allocation that starts at `first`, for `tree` (or an `admin`):
    /// its length and whether the new grant takes anything away (then mappings of it made
    /// under the old one must go). `FAULT` if no allocation starts there, `DENIED` if it is
    /// another tree's.
    pub(crate) fn set_grant(
        &mut self,
        first: usize,
        tree: u32,
        admin: bool,
        grant: Grant,
    ) -> Result<(usize, bool), u8> {
        let n = self.allocation_at(first, tree, admin)?;
        let narrowed = !grant.covers(&self.t.grant[first]);
        self.t.grant[first] = grant;
        Ok((n, narrowed))
    }

    /// Starts freeing the allocation that begins at `first` on behalf of `tree`: its pages
    /// become `ZEROING` (the caller zeroes them), or `QUEUED` for the zeroing work if there are
    /// more than `inline_max`, or `QUARANTINED` if other nodes may map them. `FAULT` if no
    /// allocation starts there, `DENIED` if it is another tree's.
    pub(crate) fn start_free(
        &mut self,
        first: usize,
        tree: u32,
        inline_max: usize,
    ) -> Result<Freed, u8> {
        let n = self.allocation_at(first, tree, false)?;
        let nodes = self.remote.of(first);
        self.remote.reset(first);
        let (owner, freed) = if nodes != 0 {
            let seq = self.remote.next_seq();
            let owner = match self.remote.start(first, n, true, nodes, seq) {
                Ok(()) => QUARANTINED,
                // No room to remember whom to wait for: never used again.
                Err(_) => STUCK,
            };
            (owner, Freed::Mapped { n, nodes, seq })
        } else if n > inline_max {
            (QUEUED, Freed::Queued)
        } else {
            (ZEROING, Freed::Zero(n))
        };
        self.t.owner[first..first + n].fill(owner);
        self.t.len[first] = 0;
        self.t.tag[first] = 0;
        self.t.grant[first] = Grant::default();
        self.keeps.drop_allocation(first);
        self.allocations -= 1;
        // Also when `STUCK`: never counted down, so the module stays loaded and the pool is
        // never given back while a node may still map these pages.
        self.unzeroed += n;
        Ok(freed)
    }

    /// The grant of the allocation of `n` pages at `first` took something away: if other nodes
    /// may map it, a round that removes their mappings, and its ZAP number (sent again until
    /// acknowledged; not at all if the round cannot be recorded, then the first ZAPs only).
    pub(crate) fn narrowed(&mut self, first: usize, n: usize) -> Option<(u16, u32)> {
        let nodes = self.remote.of(first);
        if nodes == 0 {
            return None;
        }
        let seq = self.remote.next_seq();
        let _ = self.remote.start(first, n, false, nodes, seq);
        Some((nodes, seq))
    }

    /// The quarantined pages `first..first + n`, which no node maps any more, wait for the
    /// zeroing work (`QUEUED`).
    pub(crate) fn unquarantine(&mut self, first: usize, n: usize) {
        if let Some(pages) = self.t.owner.get_mut(first..first + n) {
            if pages.iter().all(|&o| o == QUARANTINED) {
                pages.fill(QUEUED);
            }
        }
    }

    /// The first run of `QUEUED` pages, at most `max` of them, now `ZEROING` (the caller's).
    pub(crate) fn take_queued(&mut self, max: usize) -> Option<(usize, usize)> {
        let first = self.t.owner.iter().position(|&o| o == QUEUED)?;
        let n = self.t.owner[first..self.range_end(first)]
            .iter()
            .take(max)
            .take_while(|&&o| o == QUEUED)
            .count();
        self.t.owner[first..first + n].fill(ZEROING);
        Some((first, n))
    }

    /// Whether pages `first..first + n` are all `ZEROING` (still the zeroing caller's).
    pub(crate) fn zeroing(&self, first: usize, n: usize) -> bool {
        self.t
            .owner
            .get(first..first + n)
            .is_some_and(|p| p.iter().all(|&o| o == ZEROING))
    }

    /// Pages `first..first + n`, which could not be zeroed, are never handed out again.
    pub(crate) fn stuck(&mut self, first: usize, n: usize) {
        if let Some(pages) = self.t.owner.get_mut(first..first + n) {
            pages.fill(STUCK);
            self.unzeroed -= n;
        }
    }

    /// The first page of the first allocation of `tree` tagged `tag`.
    pub(crate) fn find_tagged(&self, tree: u32, tag: u64) -> Option<usize> {
        (0..self.pages())
            .find(|&i| self.t.len[i] != 0 && self.t.tag[i] == tag && self.t.owner[i] == tree)
    }

    /// Pages of the allocations user `uid` made.
    pub(crate) fn used_by(&self, uid: u32) -> usize {
        (0..self.pages())
            .filter(|&i| self.t.len[i] != 0 && self.t.user[i] == uid)
            .map(|i| self.t.len[i] as usize)
            .sum()
    }

    /// Whether an allocation of `tree` exists (pages being zeroed are nobody's), or a keep.
    pub(crate) fn holds(&self, tree: u32) -> bool {
        self.keeps.holds(tree)
            || (0..self.pages()).any(|i| self.t.len[i] != 0 && self.t.owner[i] == tree)
    }

    /// The zeroed pages of a freed allocation are free again.
    pub(crate) fn finish_free(&mut self, first: usize, n: usize) {
        if let Some(pages) = self.t.owner.get_mut(first..first + n) {
            pages.fill(FREE);
            self.used -= n;
            self.unzeroed -= n;
        }
    }
}
