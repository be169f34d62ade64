//! The C API (`include/gsas.h`, `libgsas.so`, `libgsas.a`): the seed's names over a
//! thread-local [`Gsas`] handle. Conventions (the header documents them):
//! * every call sets the calling thread's `gsas_errno()`: 0 on success, else a positive errno
//!   (`EINVAL` invalid or unaligned, `EFAULT` not an allocated page, `EACCES` another tree,
//!   `ENOMEM`, `ENOSPC` no pool, `ETIMEDOUT`, or the mailbox's errno);
//! * calls returning `int` return 0 or `-errno`; calls returning a value return 0 on error
//!   (check `gsas_errno()` when 0 is a possible value);
//! * the first call of a thread opens its handle (or `gsas_init` does, reporting errors);
//!   `gsas_finalize` (or thread exit) closes it.

#![allow(non_snake_case)]

use crate::{Error, Gsas};
use std::cell::{Cell, RefCell};
use std::ffi::{c_char, c_int, c_void, CString};
use std::time::Duration;

thread_local! {
    static HANDLE: RefCell<Option<Gsas>> = const { RefCell::new(None) };
    static ERRNO: Cell<c_int> = const { Cell::new(0) };
    static MESSAGE: RefCell<CString> = RefCell::new(CString::default());
    static TIMEOUT: Cell<Option<Duration>> = const { Cell::new(None) };
}

fn set_error(e: &Error) -> c_int {
    set_last_error(e.errno() as c_int, e)
}

/// Records the calling thread's error (what `gsas_errno`/`gsas_strerror` report): for C layers
/// built on this library (libdht). Returns `errno`.
pub fn set_last_error(errno: c_int, what: &dyn std::fmt::Display) -> c_int {
    ERRNO.with(|c| c.set(errno));
    let msg = CString::new(what.to_string().replace('\0', " ")).unwrap_or_default();
    MESSAGE.with(|m| *m.borrow_mut() = msg);
    errno
}

/// Records success for the calling thread.
pub fn ok() {
    ERRNO.with(|c| c.set(0));
}

/// Runs `f` with this thread's handle (opening it if needed). `Err` holds the positive errno.
fn with<T>(f: impl FnOnce(&Gsas) -> crate::Result<T>) -> Result<T, c_int> {
    let r = HANDLE.with(|h| {
        let mut h = h.borrow_mut();
        if h.is_none() {
            let g = Gsas::open()?;
            if let Some(t) = TIMEOUT.with(|t| t.get()) {
                g.set_timeout(t);
            }
            *h = Some(g);
        }
        f(h.as_ref().expect("opened above"))
    });
    match r {
        Ok(v) => {
            ok();
            Ok(v)
        }
        Err(e) => Err(set_error(&e)),
    }
}

fn status(r: Result<(), c_int>) -> c_int {
    match r {
        Ok(()) => 0,
        Err(e) => -e,
    }
}

fn value<T: Default>(r: Result<T, c_int>) -> T {
    r.unwrap_or_default()
}

/// Opens the calling thread's handle. 0 or -errno.
#[no_mangle]
pub extern "C" fn gsas_init() -> c_int {
    status(with(|_| Ok(())))
}

/// Closes the calling thread's handle (its mailbox interface).
#[no_mangle]
pub extern "C" fn gsas_finalize() {
    HANDLE.with(|h| h.borrow_mut().take());
    ok();
}

/// The error of the calling thread's last call: 0 if it succeeded.
#[no_mangle]
pub extern "C" fn gsas_errno() -> c_int {
    ERRNO.with(|c| c.get())
}

/// A message describing the calling thread's last error ("" if none); valid until the next
/// failing call of this thread.
#[no_mangle]
pub extern "C" fn gsas_strerror() -> *const c_char {
    if gsas_errno() == 0 {
        return c"".as_ptr();
    }
    MESSAGE.with(|m| m.borrow().as_ptr())
}

/// Sets the calling thread's timeout per operation in milliseconds (default 5000, or
/// GSAS_TIMEOUT_MS). 0 or -EINVAL.
#[no_mangle]
pub extern "C" fn gsas_set_timeout_ms(ms: u64) -> c_int {
    if ms == 0 {
        ERRNO.with(|c| c.set(libc_einval()));
        return -libc_einval();
    }
    let t = Duration::from_millis(ms);
    TIMEOUT.with(|c| c.set(Some(t)));
    HANDLE.with(|h| {
        if let Some(g) = h.borrow().as_ref() {
            g.set_timeout(t)
        }
    });
    ok();
    0
}

fn libc_einval() -> c_int {
    nix::errno::Errno::EINVAL as c_int
}

/// This node's id, or -errno.
#[no_mangle]
pub extern "C" fn gsas_node_id() -> c_int {
    match with(|g| Ok(g.node())) {
        Ok(n) => c_int::from(n),
        Err(e) => -e,
    }
}

/// The protection tree of the calling thread, or -errno.
#[no_mangle]
pub extern "C" fn gsas_tree_id() -> c_int {
    match with(|g| Ok(g.prot_id())) {
        Ok(n) => n as c_int,
        Err(e) => -e,
    }
}

/// System calls made by the calling thread's operations so far (SENDs, yields, sleeps).
#[no_mangle]
pub extern "C" fn gsas_syscalls() -> u64 {
    HANDLE.with(|h| h.borrow().as_ref().map_or(0, |g| g.stats().syscalls()))
}

/// Requests answered so far on the calling thread.
#[no_mangle]
pub extern "C" fn gsas_requests() -> u64 {
    HANDLE.with(|h| h.borrow().as_ref().map_or(0, |g| g.stats().requests))
}

/// A round trip to `node`'s service. 0 or -errno.
#[no_mangle]
pub extern "C" fn gsas_nop(node: u16) -> c_int {
    status(with(|g| g.nop(node)))
}

/// `n` zeroed pages on `node`; the address of the first, or 0 on error.
#[no_mangle]
pub extern "C" fn AllocSharedPage(node: u16, n: u64) -> u64 {
    value(with(|g| g.alloc_shared_page(node, n)))
}

/// Frees the allocation at `addr`. 0 or -errno.
#[no_mangle]
pub extern "C" fn FreeSharedPage(addr: u64) -> c_int {
    status(with(|g| g.free(addr)))
}

#[no_mangle]
pub extern "C" fn READ(addr: u64) -> u64 {
    value(with(|g| g.read(addr)))
}

#[no_mangle]
pub extern "C" fn WRITE(addr: u64, v: u64) -> c_int {
    status(with(|g| g.write(addr, v)))
}

#[no_mangle]
pub extern "C" fn gsas_read32(addr: u64) -> u32 {
    value(with(|g| g.read32(addr)))
}

#[no_mangle]
pub extern "C" fn gsas_write32(addr: u64, v: u32) -> c_int {
    status(with(|g| g.write32(addr, v)))
}

#[no_mangle]
pub extern "C" fn READ128(addr: u64) -> u128 {
    value(with(|g| g.read128(addr)))
}

/// Stores the 32 bytes at `addr` (32-byte aligned) into `buffer`. 0 or -errno.
///
/// # Safety
/// `buffer` must be valid for writing 32 bytes.
#[no_mangle]
pub unsafe extern "C" fn READ256(addr: u64, buffer: *mut c_void) -> c_int {
    if buffer.is_null() {
        return -set_error(&Error::Argument("READ256: buffer is NULL".into()));
    }
    status(with(|g| {
        let w = g.read256(addr)?;
        let mut b = [0u8; 32];
        for (i, x) in w.iter().enumerate() {
            b[i * 8..i * 8 + 8].copy_from_slice(&x.to_le_bytes());
        }
        // SAFETY: the caller gives 32 writable bytes.
        unsafe { std::ptr::copy_nonoverlapping(b.as_ptr(), buffer.cast::<u8>(), 32) };
        Ok(())
    }))
}

/// Writes `val[0]` (lower address) and `val[1]` atomically. 0 or -errno.
///
/// # Safety
/// `val` must point to two readable `uint64_t`.
#[no_mangle]
pub unsafe extern "C" fn WRITE128(addr: u64, val: *const u64) -> c_int {
    if val.is_null() {
        return -set_error(&Error::Argument("WRITE128: val is NULL".into()));
    }
    // SAFETY: the caller gives two readable words.
    let (lo, hi) = unsafe { (val.read_unaligned(), val.add(1).read_unaligned()) };
    status(with(|g| {
        g.write128(addr, u128::from(lo) | u128::from(hi) << 64)
    }))
}

#[no_mangle]
pub extern "C" fn FetchAndAdd(addr: u64, v: u64) -> u64 {
    value(with(|g| g.fetch_add(addr, v)))
}

/// If the word is `expected`, writes `desired`. Returns the old word either way.
#[no_mangle]
pub extern "C" fn CAS(addr: u64, expected: u64, desired: u64) -> u64 {
    value(with(|g| g.cas(addr, expected, desired)))
}

#[no_mangle]
pub extern "C" fn SWAP(addr: u64, v: u64) -> u64 {
    value(with(|g| g.swap(addr, v)))
}

#[no_mangle]
pub extern "C" fn gsas_fetch_add32(addr: u64, v: u32) -> u32 {
    value(with(|g| g.fetch_add32(addr, v)))
}

#[no_mangle]
pub extern "C" fn gsas_cas32(addr: u64, expected: u32, desired: u32) -> u32 {
    value(with(|g| g.cas32(addr, expected, desired)))
}

#[no_mangle]
pub extern "C" fn gsas_swap32(addr: u64, v: u32) -> u32 {
    value(with(|g| g.swap32(addr, v)))
}

#[no_mangle]
pub extern "C" fn gsas_fetch_and64(addr: u64, v: u64) -> u64 {
    value(with(|g| g.fetch_and(addr, v)))
}

#[no_mangle]
pub extern "C" fn gsas_fetch_or64(addr: u64, v: u64) -> u64 {
    value(with(|g| g.fetch_or(addr, v)))
}

#[no_mangle]
pub extern "C" fn gsas_fetch_xor64(addr: u64, v: u64) -> u64 {
    value(with(|g| g.fetch_xor(addr, v)))
}

#[no_mangle]
pub extern "C" fn gsas_fetch_and32(addr: u64, v: u32) -> u32 {
    value(with(|g| g.fetch_and32(addr, v)))
}

#[no_mangle]
pub extern "C" fn gsas_fetch_or32(addr: u64, v: u32) -> u32 {
    value(with(|g| g.fetch_or32(addr, v)))
}

#[no_mangle]
pub extern "C" fn gsas_fetch_xor32(addr: u64, v: u32) -> u32 {
    value(with(|g| g.fetch_xor32(addr, v)))
}

/// Reads `len` bytes at `addr` into `dst` (any length; atomic per page). 0 or -errno.
///
/// # Safety
/// `dst` must be valid for writing `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn gsas_bulk_read(dst: *mut c_void, addr: u64, len: usize) -> c_int {
    if len == 0 {
        ok();
        return 0;
    }
    if dst.is_null() {
        return -set_error(&Error::Argument("gsas_bulk_read: dst is NULL".into()));
    }
    // SAFETY: the caller gives `len` writable bytes.
    let buf = unsafe { std::slice::from_raw_parts_mut(dst.cast::<u8>(), len) };
    status(with(|g| g.bulk_read(addr, buf)))
}

/// Writes `len` bytes from `src` at `addr` (any length; atomic per page). 0 or -errno.
///
/// # Safety
/// `src` must be valid for reading `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn gsas_bulk_write(addr: u64, src: *const c_void, len: usize) -> c_int {
    if len == 0 {
        ok();
        return 0;
    }
    if src.is_null() {
        return -set_error(&Error::Argument("gsas_bulk_write: src is NULL".into()));
    }
    // SAFETY: the caller gives `len` readable bytes.
    let buf = unsafe { std::slice::from_raw_parts(src.cast::<u8>(), len) };
    status(with(|g| g.bulk_write(addr, buf)))
}

/// Maps `len` bytes of this node's GSAS memory at `addr` (see gsas.h); NULL on error.
#[no_mangle]
pub extern "C" fn gsas_map_local(addr: u64, len: usize) -> *mut c_void {
    with(|g| g.map_local(addr, len, None))
        .map(|p| p.as_ptr())
        .unwrap_or(std::ptr::null_mut())
}

/// Maps `len` bytes of GSAS memory at `addr` on any node (see gsas.h); NULL on error.
#[no_mangle]
pub extern "C" fn gsas_map(addr: u64, len: usize, write: c_int) -> *mut c_void {
    with(|g| g.map(addr, len, write != 0))
        .map(|p| p.as_ptr())
        .unwrap_or(std::ptr::null_mut())
}

/// remoteFork (see gsas.h): the child id, or 0 on error.
///
/// # Safety
/// `path` must be a NUL-terminated string; `argv` NULL or an array of NUL-terminated strings
/// ended by a NULL pointer.
#[no_mangle]
pub unsafe extern "C" fn remoteFork(
    node: u16,
    path: *const c_char,
    argv: *const *const c_char,
) -> u64 {
    if path.is_null() {
        set_error(&Error::Argument("remoteFork: path is NULL".into()));
        return 0;
    }
    // SAFETY: the caller gives a NUL-terminated string.
    let path = unsafe { std::ffi::CStr::from_ptr(path) }
        .to_string_lossy()
        .into_owned();
    let mut args = Vec::new();
    if !argv.is_null() {
        // argv[0] is the program's name: the path is used instead. At most MAX_ARGS strings
        // are read (one more than allowed makes the request fail).
        for i in 1..=crate::fork::MAX_ARGS + 1 {
            // SAFETY: the caller's array ends with a NULL, and we stop there.
            let p = unsafe { *argv.add(i - 1) };
            if p.is_null() {
                break;
            }
            if i == 1 {
                continue;
            }
            // SAFETY: a NUL-terminated string of the caller's array.
            args.push(
                unsafe { std::ffi::CStr::from_ptr(p) }
                    .to_string_lossy()
                    .into_owned(),
            );
        }
    }
    value(with(|g| g.remote_fork(node, &path, &args).map(|c| c.0)))
}

/// Waits for a remoteForked child (see gsas.h). 0 or -errno.
///
/// # Safety
/// `status` must be NULL or valid for writing an `int`.
#[no_mangle]
pub unsafe extern "C" fn gsas_wait(child: u64, status_out: *mut c_int, nohang: c_int) -> c_int {
    let r = with(|g| {
        let c = crate::ChildId(child);
        if nohang != 0 {
            g.try_wait(c)
        } else {
            g.wait(c).map(Some)
        }
    });
    match r {
        Ok(Some(st)) => {
            if !status_out.is_null() {
                // SAFETY: the caller gives a writable `int`.
                unsafe { *status_out = st.0 };
            }
            0
        }
        Ok(None) => -(nix::errno::Errno::EAGAIN as c_int),
        Err(errno) => -errno,
    }
}

/// The node of a GSAS address.
#[no_mangle]
pub extern "C" fn gsas_node_of(addr: u64) -> u16 {
    crate::node_of(addr)
}

/// The address of byte `offset` of node `node`'s partition.
#[no_mangle]
pub extern "C" fn gsas_addr(node: u16, offset: u64) -> u64 {
    crate::addr(node, offset)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CStr;

    /// Without the device, every call fails cleanly with the open error and its message.
    #[test]
    fn without_the_device_calls_fail_with_errno_and_message() {
        std::thread::spawn(|| {
            if std::path::Path::new(unimem_mailbox::DEVICE_PATH).exists() {
                return;
            }
            assert_eq!(gsas_init(), -(nix::errno::Errno::ENOENT as c_int));
            assert_eq!(READ(gsas_addr(1, 4096)), 0);
            assert_eq!(gsas_errno(), nix::errno::Errno::ENOENT as c_int);
            // SAFETY: gsas_strerror returns a NUL-terminated string.
            let msg = unsafe { CStr::from_ptr(gsas_strerror()) }.to_string_lossy();
            assert!(msg.contains("loaded"), "{msg}");
            assert_eq!(gsas_set_timeout_ms(0), -libc_einval());
            assert_eq!(gsas_set_timeout_ms(100), 0);
            assert_eq!(gsas_errno(), 0);
            assert_eq!(gsas_strerror(), c"".as_ptr());
            // SAFETY: a NULL buffer is refused before use.
            assert_eq!(unsafe { READ256(0, std::ptr::null_mut()) }, -libc_einval());
            // SAFETY: zero bytes: nothing touched.
            assert_eq!(unsafe { gsas_bulk_read(std::ptr::null_mut(), 0, 0) }, 0);
            gsas_finalize();
            assert_eq!(gsas_node_of(gsas_addr(3, 5)), 3);
        })
        .join()
        .unwrap();
    }
}
