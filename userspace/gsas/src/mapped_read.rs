//! Reads through mappings (docs/GSAS.md, "Reads through mappings"): a READ, READ32, READ128 or
//! READ256 of a page this handle may read is two loads of the home's version word and a copy
//! from a read-only mapping of the page, with no request, so it costs the same whether the home
//! polls, sleeps, or is busy with other nodes.
//!
//! The first read of a page maps it (another node's: after a MAP request that the home checks
//! as a read by this handle; this node's: checked by the driver), and each home's version table
//! once per process (`unimem_wire::versions`). A copy is kept only if the page's version word
//! was even and unchanged around it (no change by the home's service overlapped it); after a
//! few tries, or when the page cannot be mapped, the read goes to the service as before. A
//! page freed or no longer granted loses its mapping (`read_arena.rs`): the read then goes to
//! the service, which answers with the error. `GSAS_MAPPED_READS=0` turns this off.

use crate::handle::Gsas;
use crate::read_arena::Arena;
use crate::transport::Transport;
use std::collections::HashMap;
use std::num::NonZeroUsize;
use std::sync::atomic::{fence, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use unimem_wire::gas::MAX_NODES;
use unimem_wire::gsas::{self, op, PAGE_SIZE};
use unimem_wire::versions;

/// Copies tried while the home changes the page before the service is asked.
const TRIES: u32 = 64;
/// Reads of a page through the service before it is mapped: a page read once or twice (a
/// command-line read, a lookup) costs no mapping, and its home records no mapper to tell when
/// it is freed.
const MAP_AFTER: u32 = 2;
/// Reads through the service before a page that could not be mapped is tried again.
const RETRY_AFTER: u32 = 4096;
/// Pages one handle keeps mapped (beyond, all go and are mapped again as they are read).
const MAX_PAGES: usize = 1 << 14;

/// Per home: the reservation page index + 1 of its version table (0: not mapped), or
/// `REFUSED` (its service has no table, or refused the mapping: reads go to it).
static TABLES: [AtomicUsize; MAX_NODES as usize] =
    [const { AtomicUsize::new(0) }; MAX_NODES as usize];
const REFUSED: usize = usize::MAX;
/// One handle at a time maps a table.
static TABLE_LOCK: Mutex<()> = Mutex::new(());

/// A handle's mapped pages.
#[derive(Debug, Default)]
pub(crate) struct Reads {
    on: bool,
    pages: HashMap<u64, Page>,
    /// Counts, for `Stats`.
    pub(crate) mapped: u64,
    pub(crate) retries: u64,
    pub(crate) fallbacks: u64,
}

#[derive(Debug, Clone, Copy)]
enum Page {
    /// Read this many times through the service so far.
    Seen(u32),
    /// Mapped at this reservation page.
    At(usize),
    /// Not mappable; tried again after this many reads.
    Refused(u32),
}

impl Reads {
    /// On unless `GSAS_MAPPED_READS=0`.
    pub(crate) fn from_env() -> Self {
        let mut r = Reads::default();
        r.on = std::env::var("GSAS_MAPPED_READS").map_or(true, |v| v.trim() != "0");
        r
    }

    /// Forgets every page of `home` (a free by this handle: which pages it frees is the
    /// home's to know).
    pub(crate) fn forget_home(&mut self, home: u16) {
        let pages: Vec<u64> = self
            .pages
            .keys()
            .copied()
            .filter(|p| gsas::node_of(*p) == home)
            .collect();
        pages.into_iter().for_each(|p| self.forget(p));
    }

    /// Forgets the `pages` pages at `addr` (a new allocation of them).
    pub(crate) fn forget_range(&mut self, addr: u64, pages: u64) {
        let end = addr.saturating_add(pages.saturating_mul(PAGE_SIZE));
        let gone: Vec<u64> = self
            .pages
            .keys()
            .copied()
            .filter(|p| (addr..end).contains(p))
            .collect();
        gone.into_iter().for_each(|p| self.forget(p));
    }

    fn forget(&mut self, page: u64) {
        if let (Some(Page::At(i)), Some(a)) = (self.pages.remove(&page), Arena::get()) {
            a.give_back(i);
        }
    }
}

impl Drop for Reads {
    fn drop(&mut self) {
        let Some(a) = Arena::get().filter(|_| !self.pages.is_empty()) else {
            return;
        };
        for (_, p) in self.pages.drain() {
            if let Page::At(i) = p {
                a.give_back(i);
            }
        }
    }
}

impl<T: Transport> Gsas<T> {
    /// The `N` bytes (4, 8, 16 or 32, aligned to `N`) at `addr` read through a mapping, or
    /// `None`: the caller asks the service.
    pub(crate) fn mapped<const N: usize>(&self, addr: u64) -> Option<[u8; N]> {
        let mut reads = self.reads.borrow_mut();
        if !reads.on || !self.transport().maps() || addr % N as u64 != 0 {
            return None;
        }
        let home = gsas::node_of(addr);
        if u32::from(home) >= MAX_NODES {
            return None;
        }
        if TABLES[usize::from(home)].load(Ordering::Relaxed) == REFUSED {
            return None;
        }
        let arena = Arena::get()?;
        let page = addr & !(PAGE_SIZE - 1);
        let at = match reads.pages.get(&page).copied() {
            Some(Page::At(i)) => i,
            Some(Page::Seen(n)) if n < MAP_AFTER => {
                reads.pages.insert(page, Page::Seen(n + 1));
                return None;
            }
            Some(Page::Refused(n)) => {
                let n = n.saturating_sub(1);
                if n == 0 {
                    reads.pages.remove(&page);
                } else {
                    reads.pages.insert(page, Page::Refused(n));
                }
                reads.fallbacks += 1;
                return None;
            }
            None if MAP_AFTER > 0 => {
                reads.pages.insert(page, Page::Seen(1));
                return None;
            }
            None | Some(Page::Seen(_)) => {
                if reads.pages.len() >= MAX_PAGES {
                    let all: Vec<u64> = reads.pages.keys().copied().collect();
                    all.into_iter().for_each(|p| reads.forget(p));
                }
                match self.map_page(arena, page) {
                    Some(i) => {
                        reads.pages.insert(page, Page::At(i));
                        i
                    }
                    None => {
                        reads.pages.insert(page, Page::Refused(RETRY_AFTER));
                        reads.fallbacks += 1;
                        return None;
                    }
                }
            }
        };
        let table = self.version_table(arena, home)?;
        let offset = gsas::offset_of(addr);
        let data = arena.addr(at) + (offset % PAGE_SIZE) as usize;
        let word = arena.addr(table) + (versions::word_of(offset) - versions::OFFSET) as usize;
        // SAFETY: `word` is an aligned u64 of the version table's mapping, which stays in the
        // reservation for the process's life (a withdrawn mapping reads as zeros, see
        // `read_arena.rs`).
        let version = unsafe { &*(word as *const AtomicU64) };
        for _ in 0..TRIES {
            let before = version.load(Ordering::Acquire);
            if before & 1 == 0 {
                let mut out = [0u8; N];
                copy::<N>(data, &mut out);
                fence(Ordering::Acquire);
                let after = version.load(Ordering::Relaxed);
                if arena.stale(at) {
                    // Freed or no longer granted: the service says why.
                    reads.forget(page);
                    reads.fallbacks += 1;
                    return None;
                }
                if before == after && !arena.stale(table) {
                    reads.mapped += 1;
                    return Some(out);
                }
            }
            reads.retries += 1;
            std::hint::spin_loop();
        }
        reads.fallbacks += 1;
        None
    }

    /// `r`, a read's answer from the service: a page it refused is not mapped (the home would
    /// refuse that too, and count it) until [`RETRY_AFTER`] more reads.
    pub(crate) fn refused<R>(&self, addr: u64, r: crate::Result<R>) -> crate::Result<R> {
        if r.is_err() {
            let mut reads = self.reads.borrow_mut();
            if reads.on {
                let page = addr & !(PAGE_SIZE - 1);
                reads.forget(page);
                reads.pages.insert(page, Page::Refused(RETRY_AFTER));
            }
        }
        r
    }

    /// The reservation page of `home`'s version table, mapped on first use.
    fn version_table(&self, arena: &Arena, home: u16) -> Option<usize> {
        let slot = &TABLES[usize::from(home)];
        match slot.load(Ordering::Acquire) {
            0 => {}
            REFUSED => return None,
            i => return Some(i - 1),
        }
        let _one = TABLE_LOCK.lock().ok()?;
        match slot.load(Ordering::Acquire) {
            0 => {}
            REFUSED => return None,
            i => return Some(i - 1),
        }
        let pages = (versions::LEN / PAGE_SIZE) as usize;
        let i = arena.take(pages)?;
        let ok = self.map_at(arena, gsas::addr(home, versions::OFFSET), versions::LEN, i);
        if !ok {
            // Pages of a failed run are not reused (a table is tried once per home).
            log::info!(
                "node {home}'s service has no version table to map: reads of its memory go to it"
            );
        }
        slot.store(if ok { i + 1 } else { REFUSED }, Ordering::Release);
        ok.then_some(i)
    }

    /// Maps the page at `page` into a reservation page: its index, or `None` (given back).
    fn map_page(&self, arena: &Arena, page: u64) -> Option<usize> {
        let i = arena.take(1)?;
        if self.map_at(arena, page, PAGE_SIZE, i) {
            Some(i)
        } else {
            arena.give_back(i);
            None
        }
    }

    /// Maps `len` bytes at `addr` read-only over reservation page `i` on: another node's after
    /// its service approved (MAP); this node's as the driver checks.
    fn map_at(&self, arena: &Arena, addr: u64, len: u64, i: usize) -> bool {
        let home = gsas::node_of(addr);
        if home != self.node() && self.call_raw(op::MAP, addr, len, 0).is_err() {
            return false;
        }
        let Some(at) = NonZeroUsize::new(arena.addr(i)) else {
            return false;
        };
        self.transport()
            .map_read_only_at(home, gsas::offset_of(addr), len as usize, at)
            .map_err(|e| log::debug!("mapping {len:#x} bytes at {addr:#x} for reads: {e}"))
            .is_ok()
    }
}

/// Copies `N` bytes from `src` (aligned to `N`, in a live mapping) with loads of the widest
/// aligned size: each word is what the home stored, never half of it.
fn copy<const N: usize>(src: usize, out: &mut [u8; N]) {
    if N == 4 {
        // SAFETY: an aligned u32 of the mapping (the caller's contract).
        let v = unsafe { &*(src as *const AtomicU32) }.load(Ordering::Relaxed);
        out.copy_from_slice(&v.to_ne_bytes()[..N]);
        return;
    }
    for (k, chunk) in out.chunks_exact_mut(8).enumerate() {
        // SAFETY: an aligned u64 of the mapping, `k * 8 < N` (the caller's contract).
        let v = unsafe { &*((src + k * 8) as *const AtomicU64) }.load(Ordering::Relaxed);
        chunk.copy_from_slice(&v.to_ne_bytes());
    }
}
