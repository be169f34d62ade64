//! The PE's state: its rank, its symmetric regions (GSAS pages of its node mapped into it),
//! its peers' regions, and the thread's GSAS handle. `shmem_init` builds it from the job
//! descriptor `oshrun` passed in `SHMEM_JOB`; every other call reads it.

use crate::heap::Heap;
use crate::job::{self, Layout, Slot};
use crate::{far, window};
use gsas::{Gsas, PAGE_SIZE};
use std::cell::RefCell;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Environment set by oshrun's agent for each PE.
pub const JOB_ENV: &str = "SHMEM_JOB";
pub const PE_ENV: &str = "SHMEM_PE";
/// The symmetric heap's size per PE (OpenSHMEM's name): bytes, or with a K, M or G suffix.
pub const HEAP_ENV: &str = "SHMEM_SYMMETRIC_SIZE";
/// The heap when `SHMEM_SYMMETRIC_SIZE` is not set and oshrun did not choose one
/// ([`default_heap`]); also the least oshrun chooses.
pub const DEFAULT_HEAP: u64 = 1 << 20;
/// The most oshrun gives each PE by default (Open MPI's OSHMEM gives 256 MiB too).
pub const MAX_DEFAULT_HEAP: u64 = 256 << 20;
/// The GSAS service's statistics (docs/GSAS.md), on the node that reads them.
pub const GSAS_SYSFS: &str = "/sys/kernel/unimem_gsas";

/// The heap oshrun gives each PE when `SHMEM_SYMMETRIC_SIZE` is not set: the largest power of
/// two, between [`DEFAULT_HEAP`] and [`MAX_DEFAULT_HEAP`], such that `pes_per_node` heaps, each
/// PE's sync page and static data (1 MiB allowed for them) and the job descriptor
/// (`descriptor` bytes) fit in what this user may hold of a node's GSAS pool of `pool` bytes:
/// `user_pct` percent of it (`unimem_gsas user_pages_pct`), or all of it for an administrator
/// (`None`). Every PE must have the same heap, and the pool's size is a module parameter of
/// every node (`pool_max_mib`, what it may grow to), so oshrun sizes it from its own node's.
pub fn default_heap(pool: u64, user_pct: Option<u64>, pes_per_node: u64, descriptor: u64) -> u64 {
    let usable = pool / 100 * user_pct.unwrap_or(100).min(100);
    let per_pe = usable.saturating_sub(descriptor) / pes_per_node.max(1);
    let heap = per_pe.saturating_sub(1 << 20);
    if heap < DEFAULT_HEAP {
        return DEFAULT_HEAP;
    }
    (1u64 << heap.ilog2()).min(MAX_DEFAULT_HEAP)
}

/// This node's GSAS pool, in bytes, from the service's statistics: what it holds, what it may
/// grow to as allocations need it (`unimem_gsas pool_max_mib`, if its lender has the memory),
/// and what is in use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LocalPool {
    pub now: u64,
    pub max: u64,
    pub used: u64,
}

/// [`LocalPool`] of this node; `None` without the GSAS service.
pub fn local_pool() -> Option<LocalPool> {
    let read = |name: &str| -> Option<u64> {
        std::fs::read_to_string(format!("{GSAS_SYSFS}/{name}"))
            .ok()?
            .trim()
            .parse()
            .ok()
    };
    let now = read("pool_pages")? * PAGE_SIZE;
    Some(LocalPool {
        now,
        // A service that does not grow its pool shows no maximum.
        max: read("pool_max_pages")
            .map_or(now, |p| p * PAGE_SIZE)
            .max(now),
        used: read("used_pages")? * PAGE_SIZE,
    })
}

/// Where the symmetric heap starts in the address space: a multiple of this, which follows
/// from its length alone and so is the same on every PE. Offsets aligned to it or less (the
/// heap allocator's) are then addresses aligned as much: `shmem_align` up to it is aligned in
/// the address space; beyond it, `shmem_align` returns NULL.
pub fn heap_va_align(heap_len: u64) -> u64 {
    heap_len.next_power_of_two().clamp(2 << 20, 1 << 30)
}

/// Which symmetric region an address is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Region {
    Static,
    Heap,
    Sync,
}

#[derive(Debug, Clone, Copy)]
pub struct Peer {
    pub slot: Slot,
    /// The peer's regions mapped into this process (this PE, and PEs of this node).
    pub static_va: Option<usize>,
    pub heap_va: Option<usize>,
    pub sync_va: Option<usize>,
    /// A PE of another node: its static data and heap mapped here for puts and gets only
    /// ([`Job::data_va`]; `far.rs`).
    pub far: Option<far::Far>,
}

pub struct Job {
    pub layout: Layout,
    pub me: usize,
    pub npes: usize,
    pub node: u16,
    pub static_va: usize,
    pub static_len: u64,
    pub heap_va: usize,
    pub heap_len: u64,
    /// `heap_va` is a multiple of it ([`heap_va_align`]).
    pub heap_va_align: u64,
    pub sync_va: usize,
    pub peers: Vec<Peer>,
    pub heap: Mutex<Heap>,
    /// Atomics on words mapped here use this CPU's atomic instructions (`amo::local_word`).
    pub local_atomics: bool,
}

static JOB: Mutex<Option<Arc<Job>>> = Mutex::new(None);

thread_local! {
    static HANDLE: RefCell<Option<Gsas>> = const { RefCell::new(None) };
}

/// The running job; a fatal error if `shmem_init` has not run.
pub fn job() -> Arc<Job> {
    match JOB.lock().unwrap_or_else(|p| p.into_inner()).as_ref() {
        Some(j) => j.clone(),
        None => die("an OpenSHMEM routine was called before shmem_init (or after shmem_finalize)"),
    }
}

pub fn try_job() -> Option<Arc<Job>> {
    JOB.lock().unwrap_or_else(|p| p.into_inner()).clone()
}

/// Runs `f` with this thread's GSAS handle (opened on first use).
pub fn with_gsas<R>(f: impl FnOnce(&Gsas) -> R) -> R {
    HANDLE.with(|h| {
        let mut h = h.borrow_mut();
        if h.is_none() {
            match Gsas::open() {
                Ok(g) => *h = Some(g),
                Err(e) => {
                    drop(h);
                    die(&format!("cannot open a GSAS handle: {e}"))
                }
            }
        }
        f(h.as_ref().expect("opened above"))
    })
}

/// Reports a program or system error, marks the job aborted (oshrun then stops every PE) and
/// exits with status 1.
pub fn die(msg: &str) -> ! {
    let who = match (try_job(), std::env::var(PE_ENV)) {
        (Some(j), _) => format!(" PE {}:", j.me),
        (None, Ok(pe)) => format!(" PE {}:", pe.trim()),
        (None, Err(_)) => String::new(),
    };
    eprintln!("shmem:{who} {msg}");
    // The agent stops every PE with SIGTERM once the job is aborted: this one must still exit
    // with its own status, which tells oshrun whose failure it was.
    let mut term = nix::sys::signal::SigSet::empty();
    term.add(nix::sys::signal::SIGTERM);
    let _ = term.thread_block();
    if let Some(j) = try_job() {
        // Inside with_gsas the thread's handle is borrowed: a second one then.
        let done = HANDLE.with(|h| match h.try_borrow() {
            Ok(h) => h.as_ref().map(|g| j.layout.abort(g)).is_some(),
            Err(_) => false,
        });
        if !done {
            if let Ok(g) = Gsas::open() {
                j.layout.abort(&g);
            }
        }
    }
    std::process::exit(1)
}

/// Unwraps a GSAS result or dies naming the routine.
pub fn must<T>(what: &str, r: gsas::Result<T>) -> T {
    r.unwrap_or_else(|e| die(&format!("{what}: {e}")))
}

impl Job {
    pub fn check_pe(&self, routine: &str, pe: i32) -> usize {
        if pe < 0 || pe as usize >= self.npes {
            die(&format!(
                "{routine}: PE {pe} out of range: this job has {} PEs (0..{})",
                self.npes,
                self.npes - 1
            ));
        }
        pe as usize
    }

    /// The region and offset of `[ptr, ptr + len)`, if it is symmetric.
    pub fn locate(&self, ptr: usize, len: usize) -> Option<(Region, u64)> {
        let inside =
            |va: usize, rlen: u64| ptr >= va && (ptr - va) as u64 + len as u64 <= rlen && va != 0;
        if inside(self.heap_va, self.heap_len) {
            Some((Region::Heap, (ptr - self.heap_va) as u64))
        } else if inside(self.static_va, self.static_len) {
            Some((Region::Static, (ptr - self.static_va) as u64))
        } else if inside(self.sync_va, PAGE_SIZE) {
            Some((Region::Sync, (ptr - self.sync_va) as u64))
        } else {
            None
        }
    }

    /// As [`locate`](Self::locate), or a fatal error naming the routine.
    pub fn symmetric(&self, routine: &str, what: &str, ptr: usize, len: usize) -> (Region, u64) {
        self.locate(ptr, len).unwrap_or_else(|| {
            die(&format!(
                "{routine}: {what} {ptr:#x} (+{len} bytes) is not symmetric: not in the symmetric heap ({:#x}+{:#x}) nor in the static data ({:#x}+{:#x})",
                self.heap_va, self.heap_len, self.static_va, self.static_len
            ))
        })
    }

    /// PE `pe`'s GSAS address of `(region, off)`.
    pub fn addr(&self, pe: usize, region: Region, off: u64) -> u64 {
        let s = &self.peers[pe].slot;
        match region {
            Region::Static => s.static_addr + off,
            Region::Heap => s.heap_addr + off,
            Region::Sync => s.sync_addr + off,
        }
    }

    /// Where `(region, off)` of PE `pe` is mapped in this process for puts and gets: as
    /// [`va`](Self::va), or in another node's memory ([`Peer::far`]). Not for atomics, waits or
    /// `shmem_ptr`: those need the PE's own node.
    pub fn data_va(&self, pe: usize, region: Region, off: u64) -> Option<usize> {
        self.va(pe, region, off).or_else(|| {
            let f = self.peers[pe].far?;
            let base = match region {
                Region::Static => f.static_va,
                Region::Heap => Some(f.heap_va),
                Region::Sync => None,
            }?;
            Some(base + off as usize)
        })
    }

    /// Where `(region, off)` of PE `pe` is mapped in this process, if it is.
    pub fn va(&self, pe: usize, region: Region, off: u64) -> Option<usize> {
        let p = &self.peers[pe];
        let base = match region {
            Region::Static => p.static_va,
            Region::Heap => p.heap_va,
            Region::Sync => p.sync_va,
        }?;
        Some(base + off as usize)
    }
}

/// Parses a size: bytes, or with a K, M or G suffix.
pub fn parse_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let (num, mult) = match s.char_indices().last()? {
        (i, 'k' | 'K') => (&s[..i], 1u64 << 10),
        (i, 'm' | 'M') => (&s[..i], 1 << 20),
        (i, 'g' | 'G') => (&s[..i], 1 << 30),
        _ => (s, 1),
    };
    num.trim().parse::<u64>().ok()?.checked_mul(mult)
}

fn env_u64(name: &str, hex: bool) -> Result<u64, String> {
    let v = std::env::var(name).map_err(|_| {
        format!("{name} is not set: start OpenSHMEM programs with oshrun -np N PROGRAM")
    })?;
    let t = v.trim();
    let r = if hex {
        u64::from_str_radix(t.trim_start_matches("0x"), 16)
    } else {
        t.parse()
    };
    r.map_err(|_| format!("{name}={v:?} is not a number"))
}

/// Pages for `len` bytes.
fn pages(len: u64) -> u64 {
    len.div_ceil(PAGE_SIZE)
}

/// What shmem_init allocated, freed in reverse at finalize (and by oshrun if the PE dies).
struct Mine {
    static_addr: u64,
    heap_addr: u64,
    sync_addr: u64,
}

/// `shmem_init`: joins the job, maps the symmetric regions, waits for every PE.
pub fn init() {
    if try_job().is_some() {
        return;
    }
    let r = init_inner();
    match r {
        Ok(j) => *JOB.lock().unwrap_or_else(|p| p.into_inner()) = Some(Arc::new(j)),
        Err(e) => die(&format!("shmem_init: {e}")),
    }
}

fn init_inner() -> Result<Job, String> {
    let desc = env_u64(JOB_ENV, true)?;
    let me = env_u64(PE_ENV, false)? as usize;
    let heap_len = match std::env::var(HEAP_ENV) {
        Ok(v) => parse_size(&v).filter(|&n| n > 0).ok_or(format!(
            "{HEAP_ENV}={v:?} is not a size (bytes, or with K, M or G)"
        ))?,
        Err(_) => DEFAULT_HEAP,
    };
    let heap_len = pages(heap_len) * PAGE_SIZE;
    with_gsas(|g| {
        let layout = Layout::open(g, desc)?;
        if me >= layout.npes {
            return Err(format!("{PE_ENV}={me} but the job has {} PEs", layout.npes));
        }
        let node = g.node();
        let (seg_start, seg_end) = window::data_segment().unwrap_or((0, 0));
        let static_len = (seg_end - seg_start) as u64;
        let alloc = |what: &str, len: u64| {
            g.alloc_shared_page(node, pages(len)).map_err(|e| {
                format!(
                    "allocating {len} bytes of {what} on node {node}: {e}: {}",
                    pool_advice(node, heap_len)
                )
            })
        };
        let sync_addr = alloc("sync page", PAGE_SIZE)?;
        let mut mine = Mine {
            static_addr: 0,
            heap_addr: 0,
            sync_addr,
        };
        // Recorded at once, so that oshrun frees them if this PE dies.
        let record = |m: &Mine| {
            let s = Slot {
                node,
                static_addr: m.static_addr,
                static_len: if m.static_addr != 0 { static_len } else { 0 },
                heap_addr: m.heap_addr,
                heap_len: if m.heap_addr != 0 { heap_len } else { 0 },
                sync_addr: m.sync_addr,
            };
            record_slot(g, &layout, me, &s)
        };
        record(&mine)?;
        mine.heap_addr = alloc("symmetric heap", heap_len)?;
        record(&mine)?;
        if static_len > 0 {
            mine.static_addr = alloc("static data", static_len)?;
            record(&mine)?;
        }
        let sync_va = window::map(g, sync_addr, PAGE_SIZE as usize, None)?;
        let heap_va = window::map_aligned(
            g,
            mine.heap_addr,
            heap_len as usize,
            heap_va_align(heap_len) as usize,
        )?;
        if static_len > 0 {
            let tmp = window::map(g, mine.static_addr, static_len as usize, None)?;
            // SAFETY: both ranges are mapped and static_len long; they do not overlap.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    seg_start as *const u8,
                    tmp as *mut u8,
                    static_len as usize,
                )
            };
            window::map(g, mine.static_addr, static_len as usize, Some(seg_start))?;
            window::unmap(tmp, static_len as usize);
        }
        let slot = Slot {
            node,
            static_addr: mine.static_addr,
            static_len,
            heap_addr: mine.heap_addr,
            heap_len,
            sync_addr,
        };
        let program = job::program_word(
            std::env::consts::ARCH,
            window::data_segment_offset() as u64,
            static_len,
        );
        layout
            .publish(g, me, &slot, program)
            .map_err(|e| format!("publishing PE {me}'s regions: {e}"))?;
        g.fetch_add(layout.word(job::hdr::READY), 1)
            .map_err(|e| format!("joining the job: {e}"))?;
        wait_ready(g, &layout)?;
        let mut peers = Vec::with_capacity(layout.npes);
        for pe in 0..layout.npes {
            let s = layout
                .read_slot(g, pe)?
                .ok_or(format!("PE {pe} counted itself ready but has no slot"))?;
            if let Some(m) = job::program_mismatch(pe, layout.program(g, pe)?, program) {
                return Err(m);
            }
            if s.heap_len != heap_len || s.static_len != static_len {
                return Err(format!(
                    "PE {pe} has a heap of {} and static data of {} bytes, this PE {heap_len} and {static_len}: every PE must run the same program with the same {HEAP_ENV}",
                    s.heap_len, s.static_len
                ));
            }
            let mut p = Peer {
                slot: s,
                static_va: None,
                heap_va: None,
                sync_va: None,
                far: None,
            };
            if pe == me {
                p.static_va = (static_len > 0).then_some(seg_start);
                p.heap_va = Some(heap_va);
                p.sync_va = Some(sync_va);
            } else if s.node == node {
                p.heap_va = Some(window::map(g, s.heap_addr, heap_len as usize, None)?);
                p.sync_va = Some(window::map(g, s.sync_addr, PAGE_SIZE as usize, None)?);
                if static_len > 0 {
                    p.static_va = Some(window::map(g, s.static_addr, static_len as usize, None)?);
                }
            } else {
                p.far = far::map(g, pe, &s, heap_len, static_len);
            }
            peers.push(p);
        }
        log::debug!("PE {me} of {} on node {node}", layout.npes);
        Ok(Job {
            layout,
            me,
            npes: layout.npes,
            node,
            static_va: if static_len > 0 { seg_start } else { 0 },
            static_len,
            heap_va,
            heap_len,
            heap_va_align: heap_va_align(heap_len),
            sync_va,
            peers,
            heap: Mutex::new(Heap::new(heap_len)),
            local_atomics: crate::amo::local_atomics_allowed()?,
        })
    })
}

/// What to do when this node's GSAS pool cannot hold a PE's regions.
fn pool_advice(node: u16, heap_len: u64) -> String {
    let pool = match local_pool() {
        Some(p) => format!(
            "node {node}'s GSAS pool has {} MiB and may grow to {} MiB if its kram-daemon has the memory free ({} MiB in use); a user who is not an administrator may hold only unimem_gsas's user_pages_pct= (default 50%) of that",
            p.now >> 20,
            p.max >> 20,
            p.used >> 20
        ),
        None => format!("node {node}'s GSAS pool cannot supply it"),
    };
    format!(
        "{pool}; every PE of the node needs a symmetric heap of {heap_len} bytes ({HEAP_ENV}) and a little more: set {HEAP_ENV} smaller, place fewer PEs per node, or give the node's pool more room (unimem_gsas pool_max_mib=, and its kram-daemon lending at least that many MiB that no other borrower holds, --chunks)"
    )
}

fn record_slot(g: &Gsas, layout: &Layout, me: usize, s: &Slot) -> Result<(), String> {
    layout
        .record(g, me, s)
        .map_err(|e| format!("recording PE {me}'s allocations: {e}"))
}

/// Waits until every PE has joined, or the job is aborted (bounded by `SHMEM_INIT_TIMEOUT`
/// seconds, default 120: a PE that never starts must not leave the others waiting forever).
fn wait_ready(g: &Gsas, layout: &Layout) -> Result<(), String> {
    let limit = std::env::var("SHMEM_INIT_TIMEOUT")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(120u64);
    let start = Instant::now();
    let mut pause = Duration::from_micros(200);
    loop {
        let n = g
            .read(layout.word(job::hdr::READY))
            .map_err(|e| format!("waiting for the other PEs: {e}"))?;
        if n >= layout.npes as u64 {
            return Ok(());
        }
        if layout.aborted(g) {
            return Err("the job was aborted while starting".into());
        }
        if start.elapsed() > Duration::from_secs(limit) {
            return Err(format!(
                "only {n} of {} PEs joined within {limit} s",
                layout.npes
            ));
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(20));
    }
}

/// `shmem_finalize`: after a barrier, gives the static data back to private memory, unmaps
/// and frees the regions and clears their record.
pub fn finalize() {
    let Some(j) = try_job() else { return };
    crate::coll::barrier_all();
    with_gsas(|g| {
        for (pe, p) in j.peers.iter().enumerate() {
            if pe == j.me {
                continue;
            }
            for (va, len) in [
                (p.heap_va, j.heap_len),
                (p.sync_va, PAGE_SIZE),
                (p.static_va, j.static_len),
                (p.far.map(|f| f.heap_va), j.heap_len),
                (p.far.and_then(|f| f.static_va), j.static_len),
            ] {
                if let Some(va) = va {
                    window::unmap(va, len as usize);
                }
            }
        }
        if j.static_len > 0 {
            if let Err(e) = window::privatize(j.static_va, j.static_len as usize) {
                die(&format!("shmem_finalize: {e}"));
            }
        }
        window::unmap(j.heap_va, j.heap_len as usize);
        window::unmap(j.sync_va, PAGE_SIZE as usize);
        let s = j.peers[j.me].slot;
        let _ = g.write(j.layout.slot(j.me, job::slot::FINALIZED), 1);
        let _ = record_slot(g, &j.layout, j.me, &Slot::default());
        for a in [s.static_addr, s.heap_addr, s.sync_addr] {
            if a != 0 {
                if let Err(e) = g.free(a) {
                    eprintln!("shmem: PE {}: shmem_finalize: freeing {a:#x}: {e}", j.me);
                }
            }
        }
    });
    crate::team::reset();
    *JOB.lock().unwrap_or_else(|p| p.into_inner()) = None;
}

#[cfg(test)]
mod tests {
    use super::parse_size;

    #[test]
    fn default_heaps() {
        use super::{default_heap, DEFAULT_HEAP, MAX_DEFAULT_HEAP};
        const M: u64 = 1 << 20;
        // The module's default pool (16 MiB), 2 PEs a node: 4 MiB as root, 2 MiB as a user.
        assert_eq!(default_heap(16 * M, None, 2, 12 * 4096), 4 * M);
        assert_eq!(default_heap(16 * M, Some(50), 2, 12 * 4096), 2 * M);
        // The shmem test's pools (320 MiB): 128 MiB as root, 64 MiB as a user.
        assert_eq!(default_heap(320 * M, None, 2, 12 * 4096), 128 * M);
        assert_eq!(default_heap(320 * M, Some(50), 2, 12 * 4096), 64 * M);
        // Never below the old default (the PEs then say what is missing), never above the cap.
        assert_eq!(default_heap(M, Some(50), 8, 0), DEFAULT_HEAP);
        assert_eq!(default_heap(0, None, 0, 0), DEFAULT_HEAP);
        assert_eq!(default_heap(4096 * M, None, 1, 0), MAX_DEFAULT_HEAP);
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("4096"), Some(4096));
        assert_eq!(parse_size("2M"), Some(2 << 20));
        assert_eq!(parse_size(" 16k "), Some(16 << 10));
        assert_eq!(parse_size("1G"), Some(1 << 30));
        assert_eq!(parse_size("M"), None);
        assert_eq!(parse_size("-1"), None);
        assert_eq!(parse_size("99999999999G"), None);
    }
}
