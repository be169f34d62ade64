//! Atomic memory operations and the distributed locks. An atomic goes through the atomic
//! service of the target's node, which applies all operations on its node's memory under one
//! lock; under TCG a guest's atomic instructions are not atomic against another VM's
//! (docs/GSAS.md).
//!
//! The exception, on a node with one online CPU (the virtual cluster's nodes): a word mapped
//! here (this PE's, or a PE's of this node) takes this CPU's atomic instructions. Only this
//! node's CPU ever writes its GSAS memory (other nodes' requests are applied by this node's
//! service, in this node's kernel), and one CPU runs one instruction at a time: an atomic
//! instruction cannot interleave with the service's read-modify-write, which runs under a
//! spinlock with preemption off, nor with another process's. With a second CPU that no longer
//! holds (the service's update is not one instruction), so the path is then off.

use crate::coll::spin_until;
use crate::pe::{die, must, with_gsas, Job, Region};
use std::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

/// `SHMEM_LOCAL_ATOMICS=0` sends every atomic through the service (to compare).
const LOCAL_ENV: &str = "SHMEM_LOCAL_ATOMICS";

/// Whether atomics on words mapped here may use this CPU's instructions: one online CPU, and
/// not turned off by `SHMEM_LOCAL_ATOMICS=0`.
pub fn local_atomics_allowed() -> Result<bool, String> {
    let wanted = match std::env::var(LOCAL_ENV).as_deref() {
        Err(_) | Ok("1") => true,
        Ok("0") => false,
        Ok(v) => return Err(format!("{LOCAL_ENV}={v:?}: 0 or 1")),
    };
    let cpus = nix::unistd::sysconf(nix::unistd::SysconfVar::_NPROCESSORS_ONLN)
        .map_err(|e| format!("counting online CPUs: {e}"))?;
    Ok(wanted && cpus == Some(1))
}

/// The address of `(region, off)` of PE `pe` if an atomic on it may use this CPU's atomic
/// instructions (see the module's comment).
pub fn local_word(j: &Job, pe: usize, region: Region, off: u64) -> Option<usize> {
    j.va(pe, region, off).filter(|_| j.local_atomics)
}

/// `op` on the atomic word `$w` (an `AtomicU64` or `AtomicU32`) with operands of its type;
/// the old value (0 for SET).
macro_rules! apply_atomic {
    ($routine:expr, $w:expr, $op:expr, $a:expr, $b:expr) => {{
        let sc = Ordering::SeqCst;
        match $op {
            code::FETCH => $w.load(sc),
            code::SET => {
                $w.store($a, sc);
                0
            }
            code::CSWAP => $w
                .compare_exchange($a, $b, sc, sc)
                .unwrap_or_else(|old| old),
            code::SWAP => $w.swap($a, sc),
            code::FADD => $w.fetch_add($a, sc),
            code::FAND => $w.fetch_and($a, sc),
            code::FOR => $w.fetch_or($a, sc),
            code::FXOR => $w.fetch_xor($a, sc),
            _ => die(&format!("{}: unknown atomic operation {}", $routine, $op)),
        }
    }};
}

/// Applies `op` to the aligned `size`-byte word at `va` (mapped here) with this CPU's atomic
/// instructions; the old value.
fn apply_local(routine: &str, va: usize, size: usize, op: i32, a: u64, b: u64) -> u64 {
    if size == 8 {
        // SAFETY: `va` is an 8-byte aligned word of a region mapped for the job's life.
        let w = unsafe { AtomicU64::from_ptr(va as *mut u64) };
        apply_atomic!(routine, w, op, a, b)
    } else {
        // SAFETY: `va` is a 4-byte aligned word of a region mapped for the job's life.
        let w = unsafe { AtomicU32::from_ptr(va as *mut u32) };
        u64::from(apply_atomic!(routine, w, op, a as u32, b as u32))
    }
}

/// Operation codes of `unimem_shmem_amo` (`_SHMEM_AMO_*` in shmem.h).
pub mod code {
    pub const FETCH: i32 = 0;
    pub const SET: i32 = 1;
    pub const CSWAP: i32 = 2;
    pub const SWAP: i32 = 3;
    pub const FADD: i32 = 4;
    pub const FAND: i32 = 5;
    pub const FOR: i32 = 6;
    pub const FXOR: i32 = 7;
}

/// Applies atomic `op` to the `size`-byte (4 or 8) word at symmetric `target` on `pe`; the
/// old value (zero-extended). `a` is the operand (the condition for CSWAP, whose new value
/// is `b`).
pub fn amo(
    j: &Job,
    routine: &str,
    target: usize,
    size: usize,
    op: i32,
    ab: (u64, u64),
    pe: i32,
) -> u64 {
    let (a, b) = ab;
    let pe = j.check_pe(routine, pe);
    if size != 4 && size != 8 {
        die(&format!(
            "{routine}: atomics on {size}-byte objects are not supported"
        ));
    }
    if target % size != 0 {
        die(&format!(
            "{routine}: target {target:#x} is not aligned to its {size} bytes"
        ));
    }
    let (r, off) = j.symmetric(routine, "target", target, size);
    if let Some(va) = local_word(j, pe, r, off) {
        return apply_local(routine, va, size, op, a, b);
    }
    let addr = j.addr(pe, r, off);
    fence(Ordering::SeqCst);
    let (a32, b32) = (a as u32, b as u32);
    let v = with_gsas(|g| {
        let r = if size == 8 {
            match op {
                code::FETCH => g.read(addr),
                code::SET => g.write(addr, a).map(|()| 0),
                code::CSWAP => g.cas(addr, a, b),
                code::SWAP => g.swap(addr, a),
                code::FADD => g.fetch_add(addr, a),
                code::FAND => g.fetch_and(addr, a),
                code::FOR => g.fetch_or(addr, a),
                code::FXOR => g.fetch_xor(addr, a),
                _ => die(&format!("{routine}: unknown atomic operation {op}")),
            }
        } else {
            match op {
                code::FETCH => g.read32(addr),
                code::SET => g.write32(addr, a32).map(|()| 0),
                code::CSWAP => g.cas32(addr, a32, b32),
                code::SWAP => g.swap32(addr, a32),
                code::FADD => g.fetch_add32(addr, a32),
                code::FAND => g.fetch_and32(addr, a32),
                code::FOR => g.fetch_or32(addr, a32),
                code::FXOR => g.fetch_xor32(addr, a32),
                _ => die(&format!("{routine}: unknown atomic operation {op}")),
            }
            .map(u64::from)
        };
        must(routine, r)
    });
    fence(Ordering::SeqCst);
    v
}

/// The lock word: a ticket lock on PE 0's copy (seed 001: FIFO and fair). Low 32 bits: the
/// ticket being served; high 32 bits: the next ticket.
fn lock_addr(j: &Job, routine: &str, lock: usize) -> (u64, Option<usize>) {
    if lock % 8 != 0 {
        die(&format!("{routine}: lock {lock:#x} is not 8-byte aligned"));
    }
    let (r, off) = j.symmetric(routine, "lock", lock, 8);
    (j.addr(0, r, off), j.va(0, r, off))
}

pub fn set_lock(j: &Job, lock: usize) {
    let routine = "shmem_set_lock";
    let (addr, va) = lock_addr(j, routine, lock);
    let ticket = with_gsas(|g| must(routine, g.fetch_add32(addr + 4, 1)));
    let serving = |v: u64| v as u32 == ticket;
    match va {
        // SAFETY: PE 0's lock word is mapped here; read with a volatile load.
        Some(va) => spin_until(j, || serving(unsafe { (va as *const u64).read_volatile() })),
        None => {
            let mut pause = Duration::from_micros(50);
            spin_until(j, || {
                let v = with_gsas(|g| must(routine, g.read(addr)));
                if !serving(v) {
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_millis(2));
                }
                serving(v)
            });
        }
    }
    fence(Ordering::SeqCst);
}

pub fn clear_lock(j: &Job, lock: usize) {
    let routine = "shmem_clear_lock";
    let (addr, _) = lock_addr(j, routine, lock);
    fence(Ordering::SeqCst);
    with_gsas(|g| must(routine, g.fetch_add32(addr, 1)));
}

/// 0 if the lock was free and is now this PE's, 1 if it is held.
pub fn test_lock(j: &Job, lock: usize) -> i32 {
    let routine = "shmem_test_lock";
    let (addr, _) = lock_addr(j, routine, lock);
    let got = with_gsas(|g| {
        let v = must(routine, g.read(addr));
        (v as u32 == (v >> 32) as u32)
            && must(routine, g.cas(addr, v, v.wrapping_add(1 << 32))) == v
    });
    fence(Ordering::SeqCst);
    i32::from(!got)
}

#[cfg(test)]
mod tests {
    use super::{apply_local, code};

    #[test]
    fn local_atomics_return_the_old_value_and_apply_the_operation() {
        let mut w: u64 = 40;
        let va = &raw mut w as usize;
        let r = "test";
        assert_eq!(apply_local(r, va, 8, code::FADD, 2, 0), 40);
        assert_eq!(apply_local(r, va, 8, code::CSWAP, 7, 9), 42, "failed CAS");
        assert_eq!(apply_local(r, va, 8, code::CSWAP, 42, 9), 42);
        assert_eq!(apply_local(r, va, 8, code::SWAP, 0xf0, 0), 9);
        assert_eq!(apply_local(r, va, 8, code::FAND, 0x3c, 0), 0xf0);
        assert_eq!(apply_local(r, va, 8, code::FOR, 0x1, 0), 0x30);
        assert_eq!(apply_local(r, va, 8, code::FXOR, 0xff, 0), 0x31);
        assert_eq!(apply_local(r, va, 8, code::SET, u64::MAX, 0), 0);
        assert_eq!(apply_local(r, va, 8, code::FETCH, 0, 0), u64::MAX);
        let mut n: [u32; 2] = [u32::MAX, 5];
        let va = n.as_mut_ptr() as usize;
        assert_eq!(apply_local(r, va, 4, code::FADD, 1, 0), u64::from(u32::MAX));
        assert_eq!(n, [0, 5], "a 32-bit add wraps and leaves the next word");
        assert_eq!(apply_local(r, va + 4, 4, code::CSWAP, 5, 6), 5);
        assert_eq!(n[1], 6);
    }
}
