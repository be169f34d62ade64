//! The C ABI of libunimem_fam (`include/ABI.md`: 137 `c_fam_*` functions of `fam_c.h`, two of
//! them the OpenFAM paper's queued memory-side operations, and 17 `unimem_fam_*` of
//! `fam_abi.h`) over [`crate::client`]. The safety contract of every
//! function is ABI.md's (valid handles, pointers to as many bytes as the call says), which is
//! why the functions carry no `# Safety` sections of their own.
//!
//! - [`errors`]: the per-thread last error, and the guard every function runs in (0 or minus
//!   the `Fam_Error` code; a panic becomes `FAM_ERR_UNKNOWN`, never an unwind into C).
//! - [`handles`]: instances and contexts; [`desc`]: reference-counted descriptors.
//! - [`types`]: the `#[repr(C)]` structures of `fam_types.h`.
//! - [`init`], [`region`], [`item`], [`data`], [`atomic`]: the functions, by ABI.md's sections.
//!
//! Non-blocking puts, gets, gathers, scatters and the non-fetching atomics complete before
//! they return and report their errors at once: `c_fam_quiet` has nothing left to wait for
//! and `c_fam_progress` reports 0 outstanding operations (ABI.md allows both: "may complete
//! after returning").
#![allow(clippy::missing_safety_doc)]
#![deny(unsafe_op_in_unsafe_fn)]

pub mod atomic;
pub mod data;
pub mod desc;
pub mod errors;
pub mod handles;
pub mod init;
pub mod item;
pub mod region;
pub mod types;

#[cfg(test)]
mod tests;

use std::ffi::{c_char, c_void, CStr};

use crate::{FamError, Result};

/// The string at `p`, which must not be NULL and must be UTF-8 (names are).
pub(crate) unsafe fn str_arg<'a>(p: *const c_char, what: &str) -> Result<&'a str> {
    if p.is_null() {
        return Err(FamError::NullPtr(format!("{what} is NULL")));
    }
    // SAFETY: a NUL-terminated string (the caller's contract).
    unsafe { CStr::from_ptr(p) }
        .to_str()
        .map_err(|_| FamError::Invalid(format!("{what} is not UTF-8")))
}

/// The string at `p`, `None` for NULL.
pub(crate) unsafe fn opt_str(p: *const c_char) -> Option<String> {
    if p.is_null() {
        return None;
    }
    // SAFETY: a NUL-terminated string (the caller's contract).
    Some(unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
}

/// `bytes` in a block of the C library's `malloc`, which the caller `free`s.
pub(crate) fn malloc_copy(bytes: &[u8]) -> Result<*mut c_void> {
    // SAFETY: malloc of at least one byte; the copy stays inside the block.
    unsafe {
        let p = libc::malloc(bytes.len().max(1));
        if p.is_null() {
            return Err(FamError::Resource("out of memory".into()));
        }
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), p.cast::<u8>(), bytes.len());
        Ok(p)
    }
}

/// A local buffer argument: `len` bytes at `p` (NULL allowed only when `len` is 0).
pub(crate) unsafe fn buf_mut<'a>(p: *mut c_void, len: u64, what: &str) -> Result<&'a mut [u8]> {
    let n = usize::try_from(len).map_err(|_| FamError::OutOfRange(format!("{len} bytes")))?;
    if n == 0 {
        return Ok(&mut []);
    }
    if p.is_null() {
        return Err(FamError::NullPtr(format!("{what} is NULL")));
    }
    // SAFETY: the caller's buffer of `len` bytes (its contract).
    Ok(unsafe { std::slice::from_raw_parts_mut(p.cast::<u8>(), n) })
}

/// A value out-parameter: NULL is `FAM_ERR_NULLPTR`.
pub(crate) unsafe fn out<'a, T>(p: *mut T, what: &str) -> Result<&'a mut T> {
    // SAFETY: a pointer to a T or NULL (the caller's contract).
    unsafe { p.as_mut() }.ok_or_else(|| FamError::NullPtr(format!("{what} is NULL")))
}
