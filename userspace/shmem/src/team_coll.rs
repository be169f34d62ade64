//! The team collectives of OpenSHMEM 1.5 (`shmem_broadcastmem`, `shmem_TYPENAME_collect`,
//! `shmem_TYPENAME_sum_reduce`, ...): the active-set collectives of [`crate::coll`] over the
//! team's PE list, with the team's sync words ([`crate::team`]) as their pSync, so no pSync
//! or pWrk is asked of the program.
//!
//! A reduction's arithmetic is the C header's: each typed routine passes a combining
//! function of its type and operation (`acc[i] = acc[i] OP x[i]`), so every type of the
//! spec's tables (long double and the complex types included) reduces with C's semantics.

use crate::coll::{self, Coll};
use crate::pe::{die, Job};
use crate::rma::{get_at, Strided};
use crate::team::Team;

/// `combine(acc, x, n)`: `acc[i] = acc[i] OP x[i]` for `n` elements (from shmem/teams.h).
pub type Combine = unsafe extern "C" fn(*mut u8, *const u8, usize);

/// What a collective does (the `kind` of `unimem_shmem_team_coll`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Broadcast,
    Collect,
    Fcollect,
    Alltoall,
    Alltoalls,
}

impl Kind {
    pub fn from_code(c: i32) -> Option<Kind> {
        Some(match c {
            0 => Kind::Broadcast,
            1 => Kind::Collect,
            2 => Kind::Fcollect,
            3 => Kind::Alltoall,
            4 => Kind::Alltoalls,
            _ => return None,
        })
    }

    pub fn routine(self) -> &'static str {
        match self {
            Kind::Broadcast => "shmem_broadcast",
            Kind::Collect => "shmem_collect",
            Kind::Fcollect => "shmem_fcollect",
            Kind::Alltoall => "shmem_alltoall",
            Kind::Alltoalls => "shmem_alltoalls",
        }
    }
}

/// The arguments of a data collective: `nelems` elements of `width` bytes; `root` (team
/// index) for a broadcast, strides for alltoalls.
pub struct Args {
    pub dest: usize,
    pub src: usize,
    pub nelems: usize,
    pub width: usize,
    pub root: i32,
    pub dst: isize,
    pub sst: isize,
}

/// One data collective over team `t`.
pub fn run(j: &Job, t: &Team, kind: Kind, a: &Args) {
    let routine = kind.routine();
    let set = t.set();
    let c = Coll {
        dest: a.dest,
        src: a.src,
        psync: t.words(j),
    };
    // Zero elements (any pointers, NULL included) are the collectives' of coll.rs to pass:
    // they still synchronize the team.
    let len = a.nelems * a.width;
    match kind {
        Kind::Broadcast => {
            check_root(routine, a.root, t);
            coll::broadcast(j, routine, &c, len, a.root, &set);
            // 1.5: the root's dest receives the data too.
            if t.me == a.root as usize && a.dest != a.src && len > 0 {
                // SAFETY: the caller's arrays of len bytes (the C contract); they may overlap.
                unsafe { std::ptr::copy(a.src as *const u8, a.dest as *mut u8, len) };
            }
        }
        Kind::Collect | Kind::Fcollect => {
            coll::collect(j, routine, &c, len, &set, kind == Kind::Fcollect)
        }
        Kind::Alltoall | Kind::Alltoalls => {
            let (dst, sst) = if kind == Kind::Alltoall {
                (1, 1)
            } else {
                (a.dst, a.sst)
            };
            let st = Strided {
                dst,
                sst,
                nelems: a.nelems,
                size: a.width,
            };
            coll::alltoall(j, routine, &c, &st, &set);
        }
    }
}

fn check_root(routine: &str, root: i32, t: &Team) {
    if root < 0 || root as usize >= t.pes.len() {
        die(&format!(
            "{routine}: PE_root {root} is not a PE of the team (size {})",
            t.pes.len()
        ));
    }
}

/// A buffer of `len` bytes aligned for any C type (long double, complex double).
fn aligned(len: usize) -> Vec<u128> {
    vec![0u128; len.div_ceil(16)]
}

/// The `*_reduce` routines: `n` elements of `size` bytes of `src` on every member of `t`,
/// combined in team order with `combine`, into `dest` on each (dest may be src).
pub fn reduce(j: &Job, t: &Team, dest: usize, src: usize, n: usize, size: usize, combine: Combine) {
    let routine = "shmem_*_reduce";
    let set = t.set();
    let words = t.words(j);
    let len = n * size;
    // Zero elements: nothing to combine and any pointers (NULL included), as the spec
    // allows; the team still synchronizes.
    if len == 0 {
        coll::barrier(j, routine, &set, words);
        return;
    }
    let (sr, soff) = j.symmetric(routine, "source", src, len);
    j.symmetric(routine, "dest", dest, len);
    coll::barrier(j, routine, &set, words);
    let mut acc = aligned(len);
    let mut x = aligned(len);
    for (k, &pe) in t.pes.iter().enumerate() {
        let buf = if k == 0 { &mut acc } else { &mut x };
        // SAFETY: the u128 buffer holds at least len bytes.
        let bytes = unsafe { std::slice::from_raw_parts_mut(buf.as_mut_ptr().cast::<u8>(), len) };
        get_at(j, routine, pe, sr, soff, bytes);
        if k > 0 {
            // SAFETY: both buffers hold n aligned elements of the function's type.
            unsafe { combine(acc.as_mut_ptr().cast(), x.as_ptr().cast(), n) };
        }
    }
    coll::barrier(j, routine, &set, words);
    // SAFETY: the caller's dest holds len bytes (the C contract); acc is private.
    unsafe { std::ptr::copy_nonoverlapping(acc.as_ptr().cast::<u8>(), dest as *mut u8, len) };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::solo::Solo;
    use crate::team_ctx::Contexts;

    #[test]
    fn zero_elements_take_null_buffers() {
        let mut m = Solo::new(8);
        let j = m.job();
        let world = Team {
            pes: vec![0],
            me: 0,
            slot: crate::team::WORLD,
            contexts: Contexts::default(),
        };
        for code in 0..5 {
            let kind = Kind::from_code(code).expect("a kind");
            let a = Args {
                dest: 0,
                src: 0,
                nelems: 0,
                width: 4,
                root: 0,
                dst: 1,
                sst: 1,
            };
            run(&j, &world, kind, &a);
        }
        reduce(&j, &world, 0, 0, 0, 4, sum_i32);
        // The team's words (its pSync) are back to 0, the collect length included.
        assert!(m.sync.iter().all(|&w| w == 0));
    }

    unsafe extern "C" fn sum_i32(acc: *mut u8, x: *const u8, n: usize) {
        let (a, b) = unsafe {
            (
                std::slice::from_raw_parts_mut(acc.cast::<i32>(), n),
                std::slice::from_raw_parts(x.cast::<i32>(), n),
            )
        };
        for (a, b) in a.iter_mut().zip(b) {
            *a = a.wrapping_add(*b);
        }
    }

    #[test]
    fn kinds_and_buffers() {
        assert_eq!(Kind::from_code(4), Some(Kind::Alltoalls));
        assert_eq!(Kind::from_code(5), None);
        assert_eq!(Kind::Fcollect.routine(), "shmem_fcollect");
        let b = aligned(17);
        assert_eq!(b.len(), 2);
        assert_eq!(b.as_ptr() as usize % 16, 0);
        // The combining function sees aligned elements of its own type.
        let mut acc = aligned(12);
        let mut x = aligned(12);
        // SAFETY: 12 bytes of each buffer, 3 i32.
        unsafe {
            let a = std::slice::from_raw_parts_mut(acc.as_mut_ptr().cast::<i32>(), 3);
            a.copy_from_slice(&[1, 2, i32::MAX]);
            let y = std::slice::from_raw_parts_mut(x.as_mut_ptr().cast::<i32>(), 3);
            y.copy_from_slice(&[10, -2, 1]);
            sum_i32(acc.as_mut_ptr().cast(), x.as_ptr().cast(), 3);
            assert_eq!(
                std::slice::from_raw_parts(acc.as_ptr().cast::<i32>(), 3),
                [11, 0, i32::MIN]
            );
        }
    }
}
