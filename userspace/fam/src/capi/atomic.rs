//! The atomics: one C function per OpenFAM operation and type, all over
//! [`Client::atomic`](crate::client::Client::atomic) and friends (see
//! [`crate::client::atomic`] for how GSAS carries out each one).

use std::ffi::{c_int, c_void};

use super::desc::desc;
use super::errors::call;
use super::handles::{client, handle};
use super::out;
use crate::client::{AtomicOp, Value};
use crate::meta::Item;
use crate::{FamError, Result};
use std::sync::Arc;

/// The client and item of a call.
unsafe fn target(
    fam_obj: *mut c_void,
    d: *mut c_void,
) -> Result<(Arc<crate::client::Client>, Arc<Item>)> {
    // SAFETY: contract (ABI.md's handles).
    let c = unsafe { client(fam_obj) }?;
    let item = unsafe { desc(d, "data item descriptor") }?.item(&c)?;
    Ok((c, item))
}

unsafe fn apply<T: Value>(
    fam_obj: *mut c_void,
    d: *mut c_void,
    offset: u64,
    op: AtomicOp,
    v: T,
) -> Result<T> {
    // SAFETY: contract.
    let (c, item) = unsafe { target(fam_obj, d) }?;
    c.atomic(&item, offset, op, v)
}

/// A non-fetching operation: done in the call, its failure (but a bad handle or descriptor)
/// reported by the next `fam_quiet`, as OpenFAM does.
macro_rules! nonfetch {
    ($name:ident, $t:ty, $op:ident, $what:literal) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            fam_obj: *mut c_void,
            d: *mut c_void,
            offset: u64,
            value: $t,
        ) -> c_int {
            // SAFETY: contract.
            call($what, || {
                let h = unsafe { handle(fam_obj) }?;
                let (c, item) = unsafe { target(fam_obj, d) }?;
                // A misaligned offset (or one straddling two stripes) fails here, as in
                // OpenFAM; an offset past the end and what the home refuses are reported at
                // fam_quiet, as there.
                if let Err(e @ FamError::Invalid(_)) =
                    crate::client::atomic::address(&item, offset, <$t as Value>::SIZE)
                {
                    return Err(e);
                }
                if let Err(e) = c.atomic(&item, offset, AtomicOp::$op, value) {
                    h.defer($what, e);
                }
                Ok(())
            })
        }
    };
}

/// An atomic read into `*value`.
macro_rules! fetch {
    ($name:ident, $t:ty, $what:literal) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            fam_obj: *mut c_void,
            d: *mut c_void,
            offset: u64,
            value: *mut $t,
        ) -> c_int {
            call($what, || {
                // SAFETY: contract.
                let r = unsafe { out(value, "value") }?;
                *r = unsafe { apply::<$t>(fam_obj, d, offset, AtomicOp::Fetch, <$t>::default()) }?;
                Ok(())
            })
        }
    };
}

/// A fetching operation: the old value in `*ret_val`.
macro_rules! fetching {
    ($name:ident, $t:ty, $op:ident, $what:literal) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            fam_obj: *mut c_void,
            d: *mut c_void,
            offset: u64,
            value: $t,
            ret_val: *mut $t,
        ) -> c_int {
            call($what, || {
                // SAFETY: contract.
                let r = unsafe { out(ret_val, "ret_val") }?;
                *r = unsafe { apply::<$t>(fam_obj, d, offset, AtomicOp::$op, value) }?;
                Ok(())
            })
        }
    };
}

/// Compare-and-swap: the value found in `*ret_val`.
macro_rules! cas {
    ($name:ident, $t:ty) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            fam_obj: *mut c_void,
            d: *mut c_void,
            offset: u64,
            old_val: $t,
            new_val: $t,
            ret_val: *mut $t,
        ) -> c_int {
            call("fam_compare_swap", || {
                // SAFETY: contract.
                let r = unsafe { out(ret_val, "ret_val") }?;
                let (c, item) = unsafe { target(fam_obj, d) }?;
                *r = c.compare_swap(&item, offset, old_val, new_val)?;
                Ok(())
            })
        }
    };
}

nonfetch!(c_fam_set_int32, i32, Set, "fam_set");
fetch!(c_fam_fetch_int32, i32, "fam_fetch_int32");
nonfetch!(c_fam_add_int32, i32, Add, "fam_add");
nonfetch!(c_fam_subtract_int32, i32, Subtract, "fam_subtract");
nonfetch!(c_fam_min_int32, i32, Min, "fam_min");
nonfetch!(c_fam_max_int32, i32, Max, "fam_max");
fetching!(c_fam_swap_int32, i32, Swap, "fam_swap");
fetching!(c_fam_fetch_add_int32, i32, Add, "fam_fetch_add");
fetching!(
    c_fam_fetch_subtract_int32,
    i32,
    Subtract,
    "fam_fetch_subtract"
);
fetching!(c_fam_fetch_min_int32, i32, Min, "fam_fetch_min");
fetching!(c_fam_fetch_max_int32, i32, Max, "fam_fetch_max");
cas!(c_fam_compare_swap_int32, i32);
nonfetch!(c_fam_set_int64, i64, Set, "fam_set");
fetch!(c_fam_fetch_int64, i64, "fam_fetch_int64");
nonfetch!(c_fam_add_int64, i64, Add, "fam_add");
nonfetch!(c_fam_subtract_int64, i64, Subtract, "fam_subtract");
nonfetch!(c_fam_min_int64, i64, Min, "fam_min");
nonfetch!(c_fam_max_int64, i64, Max, "fam_max");
fetching!(c_fam_swap_int64, i64, Swap, "fam_swap");
fetching!(c_fam_fetch_add_int64, i64, Add, "fam_fetch_add");
fetching!(
    c_fam_fetch_subtract_int64,
    i64,
    Subtract,
    "fam_fetch_subtract"
);
fetching!(c_fam_fetch_min_int64, i64, Min, "fam_fetch_min");
fetching!(c_fam_fetch_max_int64, i64, Max, "fam_fetch_max");
cas!(c_fam_compare_swap_int64, i64);
nonfetch!(c_fam_set_uint32, u32, Set, "fam_set");
fetch!(c_fam_fetch_uint32, u32, "fam_fetch_uint32");
nonfetch!(c_fam_add_uint32, u32, Add, "fam_add");
nonfetch!(c_fam_subtract_uint32, u32, Subtract, "fam_subtract");
nonfetch!(c_fam_min_uint32, u32, Min, "fam_min");
nonfetch!(c_fam_max_uint32, u32, Max, "fam_max");
fetching!(c_fam_swap_uint32, u32, Swap, "fam_swap");
fetching!(c_fam_fetch_add_uint32, u32, Add, "fam_fetch_add");
fetching!(
    c_fam_fetch_subtract_uint32,
    u32,
    Subtract,
    "fam_fetch_subtract"
);
fetching!(c_fam_fetch_min_uint32, u32, Min, "fam_fetch_min");
fetching!(c_fam_fetch_max_uint32, u32, Max, "fam_fetch_max");
cas!(c_fam_compare_swap_uint32, u32);
nonfetch!(c_fam_and_uint32, u32, And, "fam_and");
fetching!(c_fam_fetch_and_uint32, u32, And, "fam_fetch_and");
nonfetch!(c_fam_or_uint32, u32, Or, "fam_or");
fetching!(c_fam_fetch_or_uint32, u32, Or, "fam_fetch_or");
nonfetch!(c_fam_xor_uint32, u32, Xor, "fam_xor");
fetching!(c_fam_fetch_xor_uint32, u32, Xor, "fam_fetch_xor");
nonfetch!(c_fam_set_uint64, u64, Set, "fam_set");
fetch!(c_fam_fetch_uint64, u64, "fam_fetch_uint64");
nonfetch!(c_fam_add_uint64, u64, Add, "fam_add");
nonfetch!(c_fam_subtract_uint64, u64, Subtract, "fam_subtract");
nonfetch!(c_fam_min_uint64, u64, Min, "fam_min");
nonfetch!(c_fam_max_uint64, u64, Max, "fam_max");
fetching!(c_fam_swap_uint64, u64, Swap, "fam_swap");
fetching!(c_fam_fetch_add_uint64, u64, Add, "fam_fetch_add");
fetching!(
    c_fam_fetch_subtract_uint64,
    u64,
    Subtract,
    "fam_fetch_subtract"
);
fetching!(c_fam_fetch_min_uint64, u64, Min, "fam_fetch_min");
fetching!(c_fam_fetch_max_uint64, u64, Max, "fam_fetch_max");
cas!(c_fam_compare_swap_uint64, u64);
nonfetch!(c_fam_and_uint64, u64, And, "fam_and");
fetching!(c_fam_fetch_and_uint64, u64, And, "fam_fetch_and");
nonfetch!(c_fam_or_uint64, u64, Or, "fam_or");
fetching!(c_fam_fetch_or_uint64, u64, Or, "fam_fetch_or");
nonfetch!(c_fam_xor_uint64, u64, Xor, "fam_xor");
fetching!(c_fam_fetch_xor_uint64, u64, Xor, "fam_fetch_xor");
nonfetch!(c_fam_set_float, f32, Set, "fam_set");
fetch!(c_fam_fetch_float, f32, "fam_fetch_float");
nonfetch!(c_fam_add_float, f32, Add, "fam_add");
nonfetch!(c_fam_subtract_float, f32, Subtract, "fam_subtract");
nonfetch!(c_fam_min_float, f32, Min, "fam_min");
nonfetch!(c_fam_max_float, f32, Max, "fam_max");
fetching!(c_fam_swap_float, f32, Swap, "fam_swap");
fetching!(c_fam_fetch_add_float, f32, Add, "fam_fetch_add");
fetching!(
    c_fam_fetch_subtract_float,
    f32,
    Subtract,
    "fam_fetch_subtract"
);
fetching!(c_fam_fetch_min_float, f32, Min, "fam_fetch_min");
fetching!(c_fam_fetch_max_float, f32, Max, "fam_fetch_max");
nonfetch!(c_fam_set_double, f64, Set, "fam_set");
fetch!(c_fam_fetch_double, f64, "fam_fetch_double");
nonfetch!(c_fam_add_double, f64, Add, "fam_add");
nonfetch!(c_fam_subtract_double, f64, Subtract, "fam_subtract");
nonfetch!(c_fam_min_double, f64, Min, "fam_min");
nonfetch!(c_fam_max_double, f64, Max, "fam_max");
fetching!(c_fam_swap_double, f64, Swap, "fam_swap");
fetching!(c_fam_fetch_add_double, f64, Add, "fam_fetch_add");
fetching!(
    c_fam_fetch_subtract_double,
    f64,
    Subtract,
    "fam_fetch_subtract"
);
fetching!(c_fam_fetch_min_double, f64, Min, "fam_fetch_min");
fetching!(c_fam_fetch_max_double, f64, Max, "fam_fetch_max");

// ---- int128 ----

unsafe fn read_i128(p: *const i128, what: &str) -> Result<i128> {
    if p.is_null() {
        return Err(crate::FamError::NullPtr(format!("{what} is NULL")));
    }
    // SAFETY: a 16-byte value (contract); read unaligned, as C may pass any int128_t *.
    Ok(unsafe { p.read_unaligned() })
}

#[no_mangle]
pub unsafe extern "C" fn unimem_fam_set_int128p(
    fam_obj: *mut c_void,
    d: *mut c_void,
    offset: u64,
    value: *const i128,
) -> c_int {
    call("fam_set", || {
        // SAFETY: contract.
        let v = unsafe { read_i128(value, "value") }?;
        let (c, item) = unsafe { target(fam_obj, d) }?;
        c.set_i128(&item, offset, v)
    })
}

#[no_mangle]
pub unsafe extern "C" fn unimem_fam_compare_swap_int128p(
    fam_obj: *mut c_void,
    d: *mut c_void,
    offset: u64,
    old_val: *const i128,
    new_val: *const i128,
    ret_val: *mut i128,
) -> c_int {
    call("fam_compare_swap", || {
        // SAFETY: contract.
        let old = unsafe { read_i128(old_val, "old value") }?;
        let new = unsafe { read_i128(new_val, "new value") }?;
        if ret_val.is_null() {
            return Err(crate::FamError::NullPtr("ret_val is NULL".into()));
        }
        let (c, item) = unsafe { target(fam_obj, d) }?;
        let found = c.compare_swap_i128(&item, offset, old, new)?;
        // SAFETY: checked not NULL above.
        unsafe { ret_val.write_unaligned(found) };
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn c_fam_fetch_int128(
    fam_obj: *mut c_void,
    d: *mut c_void,
    offset: u64,
    value: *mut i128,
) -> c_int {
    call("fam_fetch_int128", || {
        if value.is_null() {
            return Err(crate::FamError::NullPtr("value is NULL".into()));
        }
        // SAFETY: contract.
        let (c, item) = unsafe { target(fam_obj, d) }?;
        let v = c.fetch_i128(&item, offset)?;
        // SAFETY: checked not NULL above.
        unsafe { value.write_unaligned(v) };
        Ok(())
    })
}

// By value: i128 has __int128's size and alignment on x86-64 and aarch64 since Rust 1.77;
// the lint predates that.
#[allow(improper_ctypes_definitions)]
#[no_mangle]
pub unsafe extern "C" fn c_fam_set_int128(
    fam_obj: *mut c_void,
    d: *mut c_void,
    offset: u64,
    value: i128,
) -> c_int {
    // SAFETY: contract; the value is on this stack.
    unsafe { unimem_fam_set_int128p(fam_obj, d, offset, &value) }
}

#[allow(improper_ctypes_definitions)]
#[no_mangle]
pub unsafe extern "C" fn c_fam_compare_swap_int128(
    fam_obj: *mut c_void,
    d: *mut c_void,
    offset: u64,
    old_val: i128,
    new_val: i128,
    ret_val: *mut i128,
) -> c_int {
    // SAFETY: contract; the values are on this stack.
    unsafe { unimem_fam_compare_swap_int128p(fam_obj, d, offset, &old_val, &new_val, ret_val) }
}
