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

use crate::error::{Error, Request, Result};
use crate::handle::Gsas;
use crate::read_arena::Arena;
use crate::transport::Transport;
use nix::errno::Errno;
use std::collections::HashMap;
use std::num::NonZeroUsize;
use std::sync::atomic::{fence, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use unimem_wire::gas::MAX_NODES;
use unimem_wire::gsas::{self, op, status, PAGE_SIZE};
use unimem_wire::versions;

/// Copies tried while the home changes the page before the service is asked.
const TRIES: u32 = 64;
/// Reads of a page through the service before it is mapped (`GSAS_MAP_AFTER`, default 0:
/// the first read maps it, at the cost of one request as a read through the service would
/// have; a random reader of many pages, such as a DHT's gets, pays that once per page).
const MAP_AFTER: u32 = 0;
/// Pages mapped at once when they can be: the aligned run around the page read (one MAP
/// instead of 16 for a reader of many small allocations, such as a DHT's containers); a run
/// the home refuses (a page of it free or another tree's) falls back to the one page.
const RUN_PAGES: u64 = 16;
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
    map_after: u32,
    /// Runs whose mapping was tried (`map_run`).
    runs_tried: std::collections::HashSet<u64>,
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
        r.map_after = crate::handle::env_u64("GSAS_MAP_AFTER")
            .map_or(MAP_AFTER, |n| n.min(u64::from(u32::MAX)) as u32);
        r
    }

    /// Turns reads through mappings on or off for this handle (off: what it mapped goes).
    pub(crate) fn set_on(&mut self, on: bool) {
        if !on {
            self.forget_where(|_| true);
        }
        self.on = on;
    }

    /// Forgets every page of `home` (a free by this handle: which pages it frees is the
    /// home's to know).
    pub(crate) fn forget_home(&mut self, home: u16) {
        self.forget_where(|p| gsas::node_of(p) == home);
    }

    /// Forgets the `pages` pages at `addr` (a new allocation of them).
    pub(crate) fn forget_range(&mut self, addr: u64, pages: u64) {
        let end = addr.saturating_add(pages.saturating_mul(PAGE_SIZE));
        self.forget_where(|p| (addr..end).contains(&p));
    }

    /// Forgets every page `which` names (its mapping, if any, goes).
    fn forget_where(&mut self, which: impl Fn(u64) -> bool) {
        let gone: Vec<u64> = self.pages.keys().copied().filter(|&p| which(p)).collect();
        gone.into_iter().for_each(|p| self.forget(p));
    }

    fn forget(&mut self, page: u64) {
        if let Some(Page::At(i)) = self.pages.remove(&page) {
            if let Some(a) = Arena::get() {
                a.give_back(i);
            }
        }
    }
}

impl Drop for Reads {
    fn drop(&mut self) {
        self.forget_where(|_| true);
    }
}

impl<T: Transport> Gsas<T> {
    /// The `N` bytes (4, 8, 16 or 32, aligned to `N`) at `addr` read through a mapping;
    /// `None`: the caller asks the service; an error: the home refused to map the page, which
    /// is the read's answer (it checks a MAP as it checks the read).
    pub(crate) fn mapped<const N: usize>(&self, addr: u64) -> Result<Option<[u8; N]>> {
        let mut reads = self.reads.borrow_mut();
        if !reads.on || !self.transport().maps() || addr % N as u64 != 0 {
            return Ok(None);
        }
        let home = gsas::node_of(addr);
        if u32::from(home) >= MAX_NODES {
            return Ok(None);
        }
        if TABLES[usize::from(home)].load(Ordering::Relaxed) == REFUSED {
            return Ok(None);
        }
        let Some(arena) = Arena::get() else {
            return Ok(None);
        };
        let read = Request {
            opcode: match N {
                4 => op::READ | op::WIDTH32,
                8 => op::READ,
                16 => op::READ128,
                _ => op::READ256,
            },
            addr,
        };
        let page = addr & !(PAGE_SIZE - 1);
        let at = match reads.pages.get(&page).copied() {
            Some(Page::At(i)) => i,
            Some(Page::Seen(n)) if n < reads.map_after => {
                reads.pages.insert(page, Page::Seen(n + 1));
                return Ok(None);
            }
            Some(Page::Refused(n)) => {
                let n = n.saturating_sub(1);
                if n == 0 {
                    reads.pages.remove(&page);
                } else {
                    reads.pages.insert(page, Page::Refused(n));
                }
                reads.fallbacks += 1;
                return Ok(None);
            }
            None if reads.map_after > 0 => {
                reads.pages.insert(page, Page::Seen(1));
                return Ok(None);
            }
            None | Some(Page::Seen(_)) => {
                if reads.pages.len() >= MAX_PAGES {
                    reads.forget_where(|_| true);
                }
                match self.map_page(arena, page) {
                    Ok(i) => {
                        reads.pages.insert(page, Page::At(i));
                        // The page's neighbours too, once per run: the first page gave the
                        // read's own answer, the run is only a saving.
                        let run = page - gsas::offset_of(page) % (RUN_PAGES * PAGE_SIZE);
                        if reads.runs_tried.insert(run) {
                            self.map_run(arena, &mut reads, run);
                        }
                        i
                    }
                    Err(refused) => {
                        reads.pages.insert(page, Page::Refused(RETRY_AFTER));
                        reads.fallbacks += 1;
                        return match refused {
                            Refusal::Status(st) => {
                                Err(Error::from_status(st, read).unwrap_or(Error::Fault(read)))
                            }
                            Refusal::Other => Ok(None),
                        };
                    }
                }
            }
        };
        let Some(table) = self.version_table(arena, home) else {
            return Ok(None);
        };
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
                    return Ok(None);
                }
                if before == after && !arena.stale(table) {
                    reads.mapped += 1;
                    return Ok(Some(out));
                }
            }
            reads.retries += 1;
            std::hint::spin_loop();
        }
        reads.fallbacks += 1;
        Ok(None)
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
        let ok = self
            .map_at(arena, gsas::addr(home, versions::OFFSET), versions::LEN, i)
            .is_ok();
        if !ok {
            // Pages of a failed run are not reused (a table is tried once per home).
            log::info!(
                "node {home}'s service has no version table to map: reads of its memory go to it"
            );
        }
        slot.store(if ok { i + 1 } else { REFUSED }, Ordering::Release);
        ok.then_some(i)
    }

    /// Maps the [`RUN_PAGES`] pages from `first` (aligned) at once, and caches each one not
    /// mapped yet; nothing if the home or driver refuses the run (a page of it free or another
    /// tree's: the home counts that refusal, once per run and handle).
    fn map_run(&self, arena: &Arena, reads: &mut Reads, first: u64) {
        let run = RUN_PAGES * PAGE_SIZE;
        if gsas::offset_of(first) == 0 || reads.pages.len() + RUN_PAGES as usize > MAX_PAGES {
            return;
        }
        let Some(i) = arena.take(RUN_PAGES as usize) else {
            return;
        };
        if let Err(e) = self.map_at(arena, first, run, i) {
            log::debug!("run of {RUN_PAGES} pages at {first:#x} not mapped: {e:?}");
            for k in 0..RUN_PAGES as usize {
                arena.give_back(i + k);
            }
            return;
        }
        for k in 0..RUN_PAGES {
            let p = first + k * PAGE_SIZE;
            let slot = i + k as usize;
            if matches!(reads.pages.get(&p), Some(Page::At(_))) {
                arena.give_back(slot);
            } else {
                reads.pages.insert(p, Page::At(slot));
            }
        }
    }

    /// Maps the page at `page` into a reservation page: its index, or why not (the page
    /// given back).
    fn map_page(&self, arena: &Arena, page: u64) -> std::result::Result<usize, Refusal> {
        let i = arena.take(1).ok_or(Refusal::Other)?;
        self.map_at(arena, page, PAGE_SIZE, i)
            .inspect_err(|_| arena.give_back(i))
            .map(|()| i)
    }

    /// Maps `len` bytes at `addr` read-only over reservation page `i` on: another node's after
    /// its service approved (MAP); this node's as the driver checks.
    fn map_at(
        &self,
        arena: &Arena,
        addr: u64,
        len: u64,
        i: usize,
    ) -> std::result::Result<(), Refusal> {
        let home = gsas::node_of(addr);
        if home != self.node() {
            match self.call_raw(op::MAP, addr, len, 0) {
                Ok(_) => {}
                Err(Error::Denied(_)) => return Err(Refusal::Status(status::DENIED)),
                Err(Error::Fault(_)) => return Err(Refusal::Status(status::FAULT)),
                Err(e) => {
                    log::debug!("MAP of {len:#x} bytes at {addr:#x} for reads: {e}");
                    return Err(Refusal::Other);
                }
            }
        }
        let at = NonZeroUsize::new(arena.addr(i)).ok_or(Refusal::Other)?;
        self.transport()
            .map_read_only_at(home, gsas::offset_of(addr), len as usize, at)
            .map_err(|e| match e {
                // As the driver's check of this node's pages answers (`may_map`).
                Errno::EACCES => Refusal::Status(status::DENIED),
                Errno::ENXIO => Refusal::Status(status::FAULT),
                e => {
                    log::debug!("mapping {len:#x} bytes at {addr:#x} for reads: {e}");
                    Refusal::Other
                }
            })
    }
}

/// Why a page was not mapped.
#[derive(Debug, Clone, Copy)]
enum Refusal {
    /// The home's answer, which a read would get too.
    Status(u8),
    /// Anything else (no room, a driver without the table): the read asks the service.
    Other,
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
