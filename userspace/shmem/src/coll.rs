//! Barriers and collectives. A barrier (seed 001, 2.3.5.1): the first PE of the set is the
//! leader; the others Fetch&Add an arrival counter on the leader and wait on a release word
//! of their own, which lives in their own node's memory and is mapped here, so waiting costs
//! no requests. The leader watches its counter the same way, resets it and writes every
//! release word. Both words are back to 0 when the barrier returns (the spec's pSync rule).
//! `barrier_all` uses the PEs' sync pages, the active-set collectives `pSync[0]` and
//! `pSync[1]`; collect also keeps each PE's contribution length in `pSync[2]`.
//!
//! The other collectives are "barrier, fetch what you need from the others, barrier" (as Gmem
//! did for alltoall: GSAS gets are cheaper than puts), so a PE's source is never read after
//! it left the collective.

use crate::pe::{die, must, with_gsas, Job, Region};
use crate::reduce::{self, Op, Ty};
use crate::rma::{get_at, Strided};
use std::sync::atomic::{fence, AtomicU64, Ordering, Ordering::SeqCst};
use std::time::{Duration, Instant};

/// Sync page words.
const ALL_ARRIVE: u64 = 0;
const ALL_RELEASE: u64 = 8;
/// pSync words.
const PS_ARRIVE: u64 = 0;
const PS_RELEASE: u64 = 8;
const PS_LEN: u64 = 16;
/// Longs of pSync the collectives use (shmem.h's *_SYNC_SIZE are at least this).
pub const PSYNC_LONGS: usize = 3;

thread_local! {
    /// When this thread last looked at the job's abort flag while waiting.
    static ABORT_CHECKED: std::cell::Cell<Option<Instant>> = const { std::cell::Cell::new(None) };
}

/// Waits until `cond` holds, yielding the CPU between looks (the node's service needs it to
/// answer anyone), and leaves the job if it was aborted meanwhile (looked at once a second of
/// waiting, across calls: `unimem_shmem_poll` waits one look per call).
pub fn spin_until(j: &Job, mut cond: impl FnMut() -> bool) {
    while !cond() {
        let _ = nix::sched::sched_yield();
        let now = Instant::now();
        let last = ABORT_CHECKED.with(|c| match c.get() {
            Some(t) => t,
            None => {
                c.set(Some(now));
                now
            }
        });
        if now.duration_since(last) > Duration::from_secs(1) {
            ABORT_CHECKED.with(|c| c.set(Some(now)));
            if with_gsas(|g| j.layout.aborted(g)) {
                // A PE's shmem_global_exit: leave with its status, quietly.
                if let Some((_, status)) = with_gsas(|g| j.layout.global_exit_status(g)) {
                    std::process::exit(status);
                }
                eprintln!("shmem: PE {}: the job was aborted", j.me);
                std::process::exit(1);
            }
        }
    }
}

fn load(va: usize) -> u64 {
    // SAFETY: va is a word of a mapped symmetric region (checked by the callers' locate).
    unsafe { (va as *const u64).read_volatile() }
}

/// Writes a barrier (or collect length) word of PE `pe`: a plain store where it is mapped
/// here (this node's memory: no atomic is needed, nobody else writes the word meanwhile),
/// through the home service otherwise.
fn store(j: &Job, routine: &str, pe: usize, region: Region, off: u64, v: u64) {
    match j.va(pe, region, off) {
        // SAFETY: a word of a mapped symmetric region.
        Some(va) => unsafe { (va as *mut u64).write_volatile(v) },
        None => with_gsas(|g| must(routine, g.write(j.addr(pe, region, off), v))),
    }
}

/// Reads a word of PE `pe` (only its owner writes it): a load where it is mapped here, through
/// the home service otherwise.
fn fetch(j: &Job, routine: &str, pe: usize, region: Region, off: u64) -> u64 {
    match j.va(pe, region, off) {
        Some(va) => load(va),
        None => with_gsas(|g| must(routine, g.read(j.addr(pe, region, off)))),
    }
}

/// The barrier over `set` (PE numbers, leader first) on words `arrive`, `release` of
/// `region`, at the same offsets on every PE. The arrival counter takes Fetch&Adds from
/// several PEs at once, so it goes through the service (or this CPU's atomics where they are
/// correct, `amo::local_word`); the leader resets it only when every other PE has arrived and
/// none can add to it before being released.
fn barrier_on(j: &Job, routine: &str, set: &[usize], region: Region, arrive: u64, release: u64) {
    fence(Ordering::SeqCst);
    let leader = set[0];
    if set.len() > 1 {
        if j.me == leader {
            let va = j.va(j.me, region, arrive).expect("own region mapped");
            let others = set.len() as u64 - 1;
            spin_until(j, || load(va) >= others);
            store(j, routine, j.me, region, arrive, 0);
            fence(Ordering::SeqCst);
            for &pe in &set[1..] {
                store(j, routine, pe, region, release, 1);
            }
        } else {
            match crate::amo::local_word(j, leader, region, arrive) {
                // SAFETY: an aligned word of a region mapped for the job's life.
                Some(va) => unsafe { AtomicU64::from_ptr(va as *mut u64) }.fetch_add(1, SeqCst),
                None => {
                    with_gsas(|g| must(routine, g.fetch_add(j.addr(leader, region, arrive), 1)))
                }
            };
            let va = j.va(j.me, region, release).expect("own region mapped");
            spin_until(j, || load(va) != 0);
            store(j, routine, j.me, region, release, 0);
        }
    }
    fence(Ordering::SeqCst);
}

pub fn barrier_all() {
    let j = crate::pe::job();
    let all: Vec<usize> = (0..j.npes).collect();
    barrier_on(
        &j,
        "shmem_barrier_all",
        &all,
        Region::Sync,
        ALL_ARRIVE,
        ALL_RELEASE,
    );
}

/// An active set (start, log2 stride, size) checked against the job, with this PE's index.
#[derive(Debug)]
pub struct Set {
    pub pes: Vec<usize>,
    pub me: usize,
}

pub fn active_set(j: &Job, routine: &str, start: i32, log_stride: i32, size: i32) -> Set {
    members(j.npes, j.me, start, log_stride, size).unwrap_or_else(|why| {
        die(&format!(
            "{routine}: bad active set (PE_start {start}, logPE_stride {log_stride}, PE_size {size}): {why}"
        ))
    })
}

/// The active set's PEs in a job of `npes`, with `me`'s index; why not, if it is not one.
pub fn members(
    npes: usize,
    me: usize,
    start: i32,
    log_stride: i32,
    size: i32,
) -> Result<Set, String> {
    if start < 0 || size < 1 || !(0..31).contains(&log_stride) {
        return Err("PE_start must be >= 0, PE_size >= 1, logPE_stride 0..30".into());
    }
    let stride = 1u64 << log_stride;
    let last = start as u64 + (size as u64 - 1) * stride;
    if last >= npes as u64 {
        return Err(format!("it reaches PE {last}, this job has {npes} PEs"));
    }
    let pes: Vec<usize> = (0..size as usize)
        .map(|i| start as usize + i * stride as usize)
        .collect();
    let me = pes
        .iter()
        .position(|&p| p == me)
        .ok_or(format!("PE {me} is not in it"))?;
    Ok(Set { pes, me })
}

/// pSync's region and offset, checked.
fn psync(j: &Job, routine: &str, p: usize) -> (Region, u64) {
    if p % 8 != 0 {
        die(&format!("{routine}: pSync {p:#x} is not 8-byte aligned"));
    }
    j.symmetric(routine, "pSync", p, PSYNC_LONGS * 8)
}

fn set_barrier(j: &Job, routine: &str, set: &Set, p: (Region, u64)) {
    barrier_on(j, routine, &set.pes, p.0, p.1 + PS_ARRIVE, p.1 + PS_RELEASE);
}

pub fn barrier(j: &Job, routine: &str, set: &Set, ps: usize) {
    let p = psync(j, routine, ps);
    set_barrier(j, routine, set, p);
}

/// Bytes at a local pointer, for the collectives' own buffers (none for `len` 0: the
/// pointer may then be NULL, which no slice may be made of).
fn local<'a>(ptr: usize, len: usize) -> &'a mut [u8] {
    if len == 0 {
        return &mut [];
    }
    // SAFETY: the caller's destination array holds len bytes (the C contract).
    unsafe { std::slice::from_raw_parts_mut(ptr as *mut u8, len) }
}

/// A collective's buffer of `len` bytes, checked symmetric. An empty one is not looked at:
/// the spec lets a zero-element collective pass any pointer, NULL included (it still
/// synchronizes its PEs, so the callers keep their barriers).
fn buffer(j: &Job, routine: &str, what: &str, ptr: usize, len: usize) -> Option<(Region, u64)> {
    (len > 0).then(|| j.symmetric(routine, what, ptr, len))
}

pub struct Coll {
    pub dest: usize,
    pub src: usize,
    pub psync: usize,
}

/// `shmem_broadcast32/64`: `len` bytes of `src` on the set's PE `root` (index in the set) to
/// `dest` on the others.
pub fn broadcast(j: &Job, routine: &str, c: &Coll, len: usize, root: i32, set: &Set) {
    if root < 0 || root as usize >= set.pes.len() {
        die(&format!(
            "{routine}: PE_root {root} is not an index of the active set (size {})",
            set.pes.len()
        ));
    }
    let p = psync(j, routine, c.psync);
    let s = buffer(j, routine, "source", c.src, len);
    buffer(j, routine, "dest", c.dest, len);
    set_barrier(j, routine, set, p);
    if let Some((sr, soff)) = s.filter(|_| set.me != root as usize) {
        get_at(
            j,
            routine,
            set.pes[root as usize],
            sr,
            soff,
            local(c.dest, len),
        );
    }
    set_barrier(j, routine, set, p);
}

/// `shmem_collect` (`fixed` false: each PE's `len` may differ) and `shmem_fcollect`: the
/// sources of the set's PEs, in set order, concatenated into every PE's `dest`.
pub fn collect(j: &Job, routine: &str, c: &Coll, len: usize, set: &Set, fixed: bool) {
    let p = psync(j, routine, c.psync);
    buffer(j, routine, "source", c.src, len);
    let me_pe = set.pes[set.me];
    if !fixed {
        // Published as len + 1, so a PE that has not written it yet cannot pass for 0.
        store(j, routine, me_pe, p.0, p.1 + PS_LEN, len as u64 + 1);
    }
    set_barrier(j, routine, set, p);
    let lens: Vec<usize> = if fixed {
        vec![len; set.pes.len()]
    } else {
        set.pes
            .iter()
            .map(|&pe| {
                let v = fetch(j, routine, pe, p.0, p.1 + PS_LEN);
                if v == 0 || v - 1 > j.heap_len.max(j.static_len) {
                    die(&format!(
                        "{routine}: PE {pe} published a bad length {v} (pSync reused too early?)"
                    ));
                }
                (v - 1) as usize
            })
            .collect()
    };
    let total: usize = lens.iter().sum();
    buffer(j, routine, "dest", c.dest, total);
    let mut at = c.dest;
    for (k, &pe) in set.pes.iter().enumerate() {
        // The source is the same symmetric object on every PE: located with each PE's length,
        // as this PE's own may be 0 (and its pointer anything) while others send data.
        if let Some((sr, soff)) = buffer(j, routine, "source", c.src, lens[k]) {
            get_at(j, routine, pe, sr, soff, local(at, lens[k]));
        }
        at += lens[k];
    }
    set_barrier(j, routine, set, p);
    if !fixed {
        store(j, routine, me_pe, p.0, p.1 + PS_LEN, 0);
    }
}

/// The `*_to_all` reductions: `n` elements of `src` on every PE of the set, combined with
/// `op`, into `dest` on each (dest may be src).
pub fn reduce(j: &Job, routine: &str, c: &Coll, n: usize, ty: Ty, op: Op, set: &Set) {
    if !reduce::valid(ty, op) {
        die(&format!("{routine}: {op:?} does not apply to {ty:?}"));
    }
    let len = n * ty.size();
    let p = psync(j, routine, c.psync);
    let s = buffer(j, routine, "source", c.src, len);
    buffer(j, routine, "dest", c.dest, len);
    set_barrier(j, routine, set, p);
    let mut acc = vec![0u8; len];
    let mut x = vec![0u8; len];
    if let Some((sr, soff)) = s {
        for (k, &pe) in set.pes.iter().enumerate() {
            let buf = if k == 0 { &mut acc } else { &mut x };
            get_at(j, routine, pe, sr, soff, buf);
            if k > 0 {
                reduce::combine(ty, op, &mut acc, &x);
            }
        }
    }
    set_barrier(j, routine, set, p);
    local(c.dest, len).copy_from_slice(&acc);
}

/// `shmem_alltoall32/64` (`s` strides 1) and `shmem_alltoalls32/64`: block `me` of every
/// PE's source into block `k` (the PE's index in the set) of this PE's dest.
pub fn alltoall(j: &Job, routine: &str, c: &Coll, s: &Strided, set: &Set) {
    if s.dst < 1 || s.sst < 1 {
        die(&format!(
            "{routine}: strides must be at least 1 (dst {}, sst {})",
            s.dst, s.sst
        ));
    }
    let p = psync(j, routine, c.psync);
    let n = set.pes.len();
    // Bytes from the first element to the end of the last one (none for no elements).
    let span = |stride: isize| match n * s.nelems {
        0 => 0,
        all => (all - 1) * stride as usize * s.size + s.size,
    };
    let src = buffer(j, routine, "source", c.src, span(s.sst));
    buffer(j, routine, "dest", c.dest, span(s.dst));
    set_barrier(j, routine, set, p);
    let Some((sr, soff)) = src else {
        set_barrier(j, routine, set, p);
        return;
    };
    for (k, &pe) in set.pes.iter().enumerate() {
        for i in 0..s.nelems {
            let from = ((set.me * s.nelems + i) * s.sst as usize * s.size) as u64;
            let to = c.dest + (k * s.nelems + i) * s.dst as usize * s.size;
            if s.sst == 1 && s.dst == 1 {
                get_at(
                    j,
                    routine,
                    pe,
                    sr,
                    soff + from,
                    local(to, s.nelems * s.size),
                );
                break;
            }
            get_at(j, routine, pe, sr, soff + from, local(to, s.size));
        }
    }
    set_barrier(j, routine, set, p);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::solo::Solo;

    /// The active set of the one-PE job.
    fn solo_set() -> Set {
        Set {
            pes: vec![0],
            me: 0,
        }
    }

    #[test]
    fn zero_elements_take_null_buffers() {
        let mut m = Solo::new(64);
        let psync = m.at(0);
        let j = m.job();
        let set = solo_set();
        let c = Coll {
            dest: 0,
            src: 0,
            psync,
        };
        broadcast(&j, "shmem_broadcast64", &c, 0, 0, &set);
        collect(&j, "shmem_collect64", &c, 0, &set, false);
        collect(&j, "shmem_fcollect64", &c, 0, &set, true);
        reduce(&j, "shmem_int_sum_to_all", &c, 0, Ty::I32, Op::Sum, &set);
        for (dst, sst) in [(1, 1), (3, 2)] {
            let st = Strided {
                dst,
                sst,
                nelems: 0,
                size: 8,
            };
            alltoall(&j, "shmem_alltoalls64", &c, &st, &set);
        }
        // The pSync is back to its initial value, the collect length word included.
        assert!(m.heap[..PSYNC_LONGS].iter().all(|&w| w == 0));
    }

    #[test]
    fn one_pe_collectives_move_data() {
        let mut m = Solo::new(64);
        let (psync, src, dest) = (m.at(0), m.at(8), m.at(16));
        m.heap[8..12].copy_from_slice(&[1, 2, 3, 4]);
        let j = m.job();
        let set = solo_set();
        let c = Coll { dest, src, psync };
        collect(&j, "shmem_collect64", &c, 3 * 8, &set, false);
        alltoall(
            &j,
            "shmem_alltoalls64",
            &Coll {
                dest: m.at(24),
                ..c
            },
            &Strided {
                dst: 2,
                sst: 1,
                nelems: 2,
                size: 8,
            },
            &set,
        );
        assert_eq!(m.heap[16..20], [1, 2, 3, 0]);
        assert_eq!(m.heap[24..27], [1, 0, 2]);
        assert!(m.heap[..PSYNC_LONGS].iter().all(|&w| w == 0));
    }

    #[test]
    fn active_sets() {
        let s = members(8, 4, 0, 1, 4).unwrap();
        assert_eq!(s.pes, [0, 2, 4, 6]);
        assert_eq!(s.me, 2);
        assert_eq!(members(8, 3, 1, 1, 4).unwrap().pes, [1, 3, 5, 7]);
        assert!(members(8, 3, 0, 1, 4)
            .unwrap_err()
            .contains("PE 3 is not in it"));
        assert!(members(8, 0, 0, 1, 5).unwrap_err().contains("reaches PE 8"));
        assert!(members(8, 0, -1, 0, 2).is_err());
        assert!(members(8, 0, 0, 31, 2).is_err());
        assert!(members(8, 0, 0, 0, 0).is_err());
        assert!(members(4, 0, 0, 30, i32::MAX).is_err());
    }
}
