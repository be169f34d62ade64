//! Atomic memory operations and the distributed locks. Every atomic goes through the atomic
//! service of the target's node, even to this PE's own memory: under TCG a guest's atomic
//! instructions are not atomic against the service (docs/GSAS.md), and the service applies
//! all operations on its node's memory under one lock.

use crate::coll::spin_until;
use crate::pe::{die, must, with_gsas, Job};
use std::sync::atomic::{fence, Ordering};
use std::time::Duration;

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
