//! The C API (`include/dht.h`, `libdht.so`, `libdht.a`): the seed's `dhtPut`/`dhtGet` and the
//! rest over a `DHT *` descriptor (the table's layout). Each thread uses a table through a
//! handle of its own (a GSAS handle, one mailbox interface), opened at its first call on that
//! table and closed when the thread exits or calls `dht_thread_exit`. Every call sets the
//! thread's `dht_errno()` (0, or a positive errno) and `dht_strerror()`.

#![allow(non_snake_case)]

use crate::{Dht, Error, Layout, INVALID};
use gsas::capi::{gsas_errno, gsas_strerror, ok, set_last_error};
use gsas::Gsas;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::ffi::{c_char, c_int};

thread_local! {
    static TABLES: RefCell<BTreeMap<u64, Dht>> = const { RefCell::new(BTreeMap::new()) };
}

/// What C holds: the layout of a table.
pub struct DHT {
    layout: Layout,
}

fn done<T>(r: crate::Result<T>) -> Result<T, c_int> {
    match r {
        Ok(v) => {
            ok();
            Ok(v)
        }
        Err(e) => Err(set_last_error(e.errno() as c_int, &e)),
    }
}

fn null_table() -> Error {
    Error::Argument("a NULL table".into())
}

/// Runs `f` with this thread's handle on table `d` (opened if needed).
fn with<T>(d: *const DHT, f: impl FnOnce(&Dht) -> crate::Result<T>) -> Result<T, c_int> {
    // SAFETY: the caller passes a descriptor from dhtCreate/dhtOpen not yet closed, or NULL.
    let Some(d) = (unsafe { d.as_ref() }) else {
        return done(Err(null_table()));
    };
    done(TABLES.with(|t| {
        let mut t = t.borrow_mut();
        let h = match t.entry(d.layout.root) {
            std::collections::btree_map::Entry::Occupied(h) => h.into_mut(),
            std::collections::btree_map::Entry::Vacant(v) => {
                v.insert(Dht::attach(Gsas::open()?, d.layout.clone()))
            }
        };
        f(h)
    }))
}

fn descriptor(r: crate::Result<Dht>) -> *mut DHT {
    match done(r) {
        Ok(h) => {
            let layout = h.layout().clone();
            TABLES.with(|t| t.borrow_mut().insert(layout.root, h));
            Box::into_raw(Box::new(DHT { layout }))
        }
        Err(_) => std::ptr::null_mut(),
    }
}

/// dhtCreate: a table for about `capacity` keys over the `n_nodes` nodes listed (its root
/// page on the first). NULL on error (dht_errno).
///
/// # Safety
/// `nodes` points to `n_nodes` node ids.
#[no_mangle]
pub unsafe extern "C" fn dhtCreate(nodes: *const u16, n_nodes: usize, capacity: u64) -> *mut DHT {
    if nodes.is_null() || n_nodes == 0 {
        return descriptor(Err(Error::Argument("no nodes given".into())));
    }
    // SAFETY: the caller's promise.
    let nodes = unsafe { std::slice::from_raw_parts(nodes, n_nodes) };
    descriptor(
        Gsas::open()
            .map_err(Error::from)
            .and_then(|g| Dht::create(g, nodes, capacity, nodes[0])),
    )
}

/// Opens the table whose root is at `root` (dhtRoot of its creator). NULL on error.
#[no_mangle]
pub extern "C" fn dhtOpen(root: u64) -> *mut DHT {
    descriptor(
        Gsas::open()
            .map_err(Error::from)
            .and_then(|g| Dht::open(g, root)),
    )
}

/// The table's root address (what dhtOpen takes in another process of the tree).
///
/// # Safety
/// `d` is a descriptor from dhtCreate/dhtOpen, or NULL (0).
#[no_mangle]
pub unsafe extern "C" fn dhtRoot(d: *const DHT) -> u64 {
    // SAFETY: the caller's promise.
    unsafe { d.as_ref() }.map_or(0, |d| d.layout.root)
}

/// dhtPut: 0, or an error code (a positive errno; dht_strerror says more).
///
/// # Safety
/// `d` is a descriptor from dhtCreate/dhtOpen, or NULL.
#[no_mangle]
pub unsafe extern "C" fn dhtPut(d: *mut DHT, key: u64, value: u128) -> u64 {
    match with(d, |t| t.put(key, value)) {
        Ok(()) => 0,
        Err(e) => e as u64,
    }
}

/// dhtGet: the value, or DHT_INVALID when the key is absent or on error (dht_errno != 0).
///
/// # Safety
/// `d` is a descriptor from dhtCreate/dhtOpen, or NULL.
#[no_mangle]
pub unsafe extern "C" fn dhtGet(d: *mut DHT, key: u64) -> u128 {
    with(d, |t| t.get(key)).ok().flatten().unwrap_or(INVALID)
}

/// dhtDelete: 1 if the key was there, 0 if not, or -errno.
///
/// # Safety
/// `d` is a descriptor from dhtCreate/dhtOpen, or NULL.
#[no_mangle]
pub unsafe extern "C" fn dhtDelete(d: *mut DHT, key: u64) -> c_int {
    match with(d, |t| t.delete(key)) {
        Ok(b) => c_int::from(b),
        Err(e) => -e,
    }
}

/// dhtDestroy: frees the table's memory (when no other process uses it) and the descriptor.
/// 0 or -errno (the descriptor is freed either way).
///
/// # Safety
/// `d` is a descriptor from dhtCreate/dhtOpen (not used after), or NULL.
#[no_mangle]
pub unsafe extern "C" fn dhtDestroy(d: *mut DHT) -> c_int {
    if d.is_null() {
        return -done::<()>(Err(null_table())).unwrap_err();
    }
    // SAFETY: the caller gives up the descriptor.
    let d = unsafe { Box::from_raw(d) };
    let root = d.layout.root;
    let h = TABLES.with(|t| t.borrow_mut().remove(&root));
    let h = match h {
        Some(h) => Ok(h),
        None => Gsas::open()
            .map(|g| Dht::attach(g, d.layout.clone()))
            .map_err(Error::from),
    };
    match done(h.and_then(|h| h.destroy())) {
        Ok(_) => 0,
        Err(e) => -e,
    }
}

/// Frees the descriptor and this thread's handle on the table (the table stays).
///
/// # Safety
/// `d` is a descriptor from dhtCreate/dhtOpen (not used after), or NULL.
#[no_mangle]
pub unsafe extern "C" fn dhtClose(d: *mut DHT) {
    if !d.is_null() {
        // SAFETY: the caller gives up the descriptor.
        let d = unsafe { Box::from_raw(d) };
        TABLES.with(|t| t.borrow_mut().remove(&d.layout.root));
    }
}

/// Closes the calling thread's handles on every table (thread exit does it too).
#[no_mangle]
pub extern "C" fn dht_thread_exit() {
    TABLES.with(|t| t.borrow_mut().clear());
}

/// The error of the calling thread's last call: 0 if it succeeded (`gsas_errno`).
#[no_mangle]
pub extern "C" fn dht_errno() -> c_int {
    gsas_errno()
}

/// The last error of this thread in words ("" if the last call succeeded; `gsas_strerror`).
#[no_mangle]
pub extern "C" fn dht_strerror() -> *const c_char {
    gsas_strerror()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_the_device_calls_fail_with_errno_and_message() {
        let nodes = [0u16, 1];
        // SAFETY: two node ids.
        let d = unsafe { dhtCreate(nodes.as_ptr(), 2, 100) };
        assert!(d.is_null());
        assert_ne!(dht_errno(), 0);
        assert!(dhtOpen(0x1000).is_null());
        // SAFETY: NULL is allowed.
        unsafe {
            assert_eq!(dhtGet(std::ptr::null_mut(), 1), INVALID);
            assert_eq!(dht_errno(), nix::errno::Errno::EINVAL as c_int);
            assert_eq!(
                dhtPut(std::ptr::null_mut(), 1, 2),
                nix::errno::Errno::EINVAL as u64
            );
            assert_eq!(
                dhtDelete(std::ptr::null_mut(), 1),
                -(nix::errno::Errno::EINVAL as c_int)
            );
            assert!(dhtDestroy(std::ptr::null_mut()) < 0);
            assert_eq!(dhtRoot(std::ptr::null()), 0);
        }
        // SAFETY: a valid C string is returned.
        let msg = unsafe { std::ffi::CStr::from_ptr(dht_strerror()) };
        assert!(msg.to_string_lossy().contains("NULL table"));
    }
}
