//! The C ABI of the OpenSHMEM 1.5 point-to-point routines (`include/shmem/p2p15.h`): signals
//! ([`signal`]), the waits and tests on several variables ([`wait`]), and
//! `shmem_malloc_with_hints`. The header's typed families reach these through
//! `unimem_shmem_put_signal` and `unimem_shmem_wait15`; the non-blocking atomics are header
//! code over `unimem_shmem_amo` (they complete at once, as every atomic here does).

use crate::capi::name;
use crate::capi::shmem_malloc;
use crate::coll;
use crate::pe::{die, job};
use crate::signal::{self, PutSignal};
use crate::wait::{self, Kind, Set, Ty, Values};
use std::ffi::{c_char, c_int, c_long, c_void};

/// The put-with-signal routines: `n` bytes, then the signal (`sig_op` 0 SET, 1 ADD).
#[no_mangle]
pub extern "C" fn unimem_shmem_put_signal(
    routine: *const c_char,
    dest: *mut c_void,
    src: *const c_void,
    n: usize,
    sig_addr: *mut u64,
    signal: u64,
    sig_op: c_int,
    pe: c_int,
) {
    let a = PutSignal {
        dest: dest as usize,
        src: src as usize,
        len: n,
        sig_addr: sig_addr as usize,
        signal,
        sig_op,
    };
    signal::put_signal(&job(), &name(routine), &a, pe);
}

#[no_mangle]
pub extern "C" fn shmem_signal_fetch(sig_addr: *const u64) -> u64 {
    signal::signal_fetch(&job(), sig_addr as usize)
}

/// # Safety
/// `sig_addr` is this PE's aligned `uint64_t` signal word.
#[no_mangle]
pub unsafe extern "C" fn shmem_signal_wait_until(
    sig_addr: *mut u64,
    cmp: c_int,
    cmp_value: u64,
) -> u64 {
    let routine = "shmem_signal_wait_until";
    let j = job();
    if wait::compare(0, cmp, 0).is_none() {
        die(&format!("{routine}: unknown comparison operator {cmp}"));
    }
    if sig_addr.is_null() || sig_addr as usize % 8 != 0 {
        die(&format!(
            "{routine}: sig_addr {:#x} is NULL or not aligned to its 8 bytes",
            sig_addr as usize
        ));
    }
    // SAFETY: checked aligned and not NULL; the caller's word.
    unsafe { wait::signal_wait_until(sig_addr as usize, cmp, cmp_value, || poll(&j)) }
}

/// One look's pause of a wait: yields the CPU, leaves an aborted job.
fn poll(j: &crate::pe::Job) {
    let mut once = false;
    coll::spin_until(j, || std::mem::replace(&mut once, true));
}

/// The `wait_until_{all,any,some}[_vector]` (`test` 0) and `test_*` (`test` 1) families:
/// `kind` 0 all, 1 any, 2 some; `ty` the element type (`_SHMEM_WAIT_TY`); `values` the
/// address of `cmp_value`, or `cmp_values` when `vector` is 1. all: 1 (satisfied) or 0; any:
/// an index or SIZE_MAX; some: the number of indices written to `indices`.
/// # Safety
/// The pointers are as shmem/p2p15.h describes them (arrays of `nelems`, `status` may be NULL).
#[no_mangle]
pub unsafe extern "C" fn unimem_shmem_wait15(
    routine: *const c_char,
    kind: c_int,
    test: c_int,
    ty: c_int,
    ivars: *mut c_void,
    nelems: usize,
    indices: *mut usize,
    status: *const c_int,
    cmp: c_int,
    values: *const c_void,
    vector: c_int,
) -> usize {
    let routine = name(routine);
    let j = job();
    let (Some(kind), Some(ty)) = (Kind::from_code(kind), Ty::from_code(ty)) else {
        die(&format!("{routine}: unknown kind {kind} or type {ty}"));
    };
    let set = Set {
        ty,
        ivars: ivars as usize,
        nelems,
        status: status as usize,
        cmp,
        values: if vector != 0 {
            Values::Each(values as usize)
        } else {
            Values::One(values as usize)
        },
    };
    if let Err(e) = set.check() {
        die(&format!("{routine}: {e}"));
    }
    if kind == Kind::Some && indices.is_null() && nelems > 0 {
        die(&format!("{routine}: indices is NULL"));
    }
    // SAFETY: the arrays are the caller's (checked where possible).
    unsafe {
        if test != 0 {
            set.test(kind, indices)
        } else {
            set.wait(kind, indices, || poll(&j))
        }
    }
}

/// `shmem_malloc_with_hints`: hints only say how the memory will be used (atomics, signals);
/// every block here is GSAS memory reached the same way, so they change nothing, and unknown
/// bits are ignored as the spec asks (the behaviour is then that of `shmem_malloc`).
#[no_mangle]
pub extern "C" fn shmem_malloc_with_hints(size: usize, hints: c_long) -> *mut c_void {
    let _ = hints;
    shmem_malloc(size)
}
