//! The data path: get/put, gather/scatter, copy, and the backup calls (served by famd),
//! map/unmap.

use std::ffi::{c_char, c_int, c_void};
use std::sync::atomic::{AtomicU64, Ordering};

use super::desc::{desc, Desc};
use super::errors::{call, call_ptr};
use super::handles::{client, handle};
use super::types::BackupOptions;
use super::{buf_mut, malloc_copy, out, str_arg};
use crate::client::{Elements, Mapping, QueueOp};
use crate::{FamError, Result};

/// A blocking put (`write`) or get: done, and its failure reported, in the call.
unsafe fn blocking(
    what: &str,
    fam_obj: *mut c_void,
    local: *mut c_void,
    d: *mut c_void,
    offset: u64,
    size: u64,
    write: bool,
) -> c_int {
    call(what, || {
        // SAFETY: contract (the unsafe calls here: ABI.md's pointers).
        let c = unsafe { client(fam_obj) }?;
        let item = unsafe { desc(d, "data item descriptor") }?.item(&c)?;
        let buf = unsafe { buf_mut(local, size, "local buffer") }?;
        if write {
            c.put(&item, offset, buf)
        } else {
            c.get(&item, offset, buf)
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn c_fam_put_blocking(
    fam_obj: *mut c_void,
    local_addr: *mut c_void,
    d: *mut c_void,
    offset: u64,
    size: u64,
) -> c_int {
    // SAFETY: contract.
    unsafe {
        blocking(
            "fam_put_blocking",
            fam_obj,
            local_addr,
            d,
            offset,
            size,
            true,
        )
    }
}

#[no_mangle]
pub unsafe extern "C" fn c_fam_get_blocking(
    fam_obj: *mut c_void,
    local_addr: *mut c_void,
    d: *mut c_void,
    offset: u64,
    size: u64,
) -> c_int {
    // SAFETY: contract.
    unsafe {
        blocking(
            "fam_get_blocking",
            fam_obj,
            local_addr,
            d,
            offset,
            size,
            false,
        )
    }
}

// The non-blocking forms complete before returning (see the module documentation of capi).
#[no_mangle]
pub unsafe extern "C" fn c_fam_put_nonblocking(
    fam_obj: *mut c_void,
    local_addr: *mut c_void,
    d: *mut c_void,
    offset: u64,
    size: u64,
) -> c_int {
    // SAFETY: contract.
    unsafe {
        nonblocking(
            "fam_put_nonblocking",
            fam_obj,
            local_addr,
            d,
            offset,
            size,
            true,
        )
    }
}

#[no_mangle]
pub unsafe extern "C" fn c_fam_get_nonblocking(
    fam_obj: *mut c_void,
    local_addr: *mut c_void,
    d: *mut c_void,
    offset: u64,
    size: u64,
) -> c_int {
    // SAFETY: contract.
    unsafe {
        nonblocking(
            "fam_get_nonblocking",
            fam_obj,
            local_addr,
            d,
            offset,
            size,
            false,
        )
    }
}

/// A non-blocking put (`write`) or get: done in the call. A missing buffer, descriptor or
/// handle and a size of 0 fail at once; the transfer's own failure (out of range, refused by
/// the home) is reported by the next `fam_quiet`, as OpenFAM does.
unsafe fn nonblocking(
    what: &'static str,
    fam_obj: *mut c_void,
    local: *mut c_void,
    d: *mut c_void,
    offset: u64,
    size: u64,
    write: bool,
) -> c_int {
    call(what, || {
        // SAFETY: contract.
        let h = unsafe { handle(fam_obj) }?;
        let c = h.client()?;
        let item = unsafe { desc(d, "data item descriptor") }?.item(&c)?;
        if size == 0 {
            return Err(FamError::Invalid(format!("{what} of 0 bytes")));
        }
        let buf = unsafe { buf_mut(local, size, "local buffer") }?;
        let done = if write {
            c.put(&item, offset, buf)
        } else {
            c.get(&item, offset, buf)
        };
        if let Err(e) = done {
            h.defer(what, e);
        }
        Ok(())
    })
}

/// Gather (`scatter` false) or scatter of `which` elements of `element_size` bytes.
unsafe fn gather_scatter(
    what: &str,
    scatter: bool,
    fam_obj: *mut c_void,
    local: *mut c_void,
    d: *mut c_void,
    which: Elements<'_>,
    element_size: u64,
) -> c_int {
    let n = which.count();
    let nonblocking = what.ends_with("_nonblocking");
    call(what, || {
        // SAFETY: contract.
        let c = unsafe { client(fam_obj) }?;
        let item = unsafe { desc(d, "data item descriptor") }?.item(&c)?;
        // Also for a non-blocking one: an argument error, not the transfer's.
        if n == 0 {
            return Err(FamError::Invalid(format!("{what} of no elements")));
        }
        let len = n
            .checked_mul(element_size)
            .ok_or_else(|| FamError::OutOfRange(format!("{n} elements of {element_size} bytes")))?;
        let buf = unsafe { buf_mut(local, len, "local buffer") }?;
        let done = if scatter {
            c.scatter(&item, which, element_size, buf)
        } else {
            c.gather(&item, which, element_size, buf)
        };
        match done {
            // A non-blocking one's failure is fam_quiet's to report, as for puts and gets.
            Err(e) if nonblocking => {
                unsafe { handle(fam_obj) }?.defer(what, e);
                Ok(())
            }
            r => r,
        }
    })
}

unsafe fn index<'a>(p: *const u64, n: u64) -> Result<&'a [u64]> {
    if n == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(FamError::NullPtr("element index is NULL".into()));
    }
    // SAFETY: `n` indices at `p` (contract).
    Ok(unsafe { std::slice::from_raw_parts(p, n as usize) })
}

/// `fam_queue_operation` (the OpenFAM paper's memory-side operations, our extension;
/// [`crate::client::queue`]): checked and queued in the call; a full batch is sent at once,
/// and its failure, like everything else queued, is reported by `c_fam_aggregate_flush`.
#[no_mangle]
pub unsafe extern "C" fn c_fam_queue_operation(
    fam_obj: *mut c_void,
    op: c_int,
    local: *mut c_void,
    d: *mut c_void,
    n_elements: u64,
    element_index: *mut u64,
    element_size: u64,
) -> c_int {
    call("fam_queue_operation", || {
        let op = QueueOp::from_c(op).ok_or_else(|| {
            FamError::Invalid(format!(
                "FAM_QUEUE_OP {op} (OP_ADD_INDEXED 0, OP_SCATTER 1, OP_GATHER 2)"
            ))
        })?;
        // SAFETY: contract (the unsafe calls here: ABI.md's pointers; `local` holds
        // `n_elements * element_size` bytes, for OP_GATHER until the flush).
        let c = unsafe { client(fam_obj) }?;
        let item = unsafe { desc(d, "data item descriptor") }?.item(&c)?;
        let ix = unsafe { index(element_index, n_elements) }?;
        unsafe { c.queue_operation(op, local.cast(), &item, ix, element_size) }
    })
}

/// `fam_aggregate_flush`: everything queued on the item, sent and waited for.
#[no_mangle]
pub unsafe extern "C" fn c_fam_aggregate_flush(fam_obj: *mut c_void, d: *mut c_void) -> c_int {
    call("fam_aggregate_flush", || {
        // SAFETY: contract.
        let c = unsafe { client(fam_obj) }?;
        let item = unsafe { desc(d, "data item descriptor") }?.item(&c)?;
        c.aggregate_flush(&item)
    })
}

macro_rules! stride_fn {
    ($name:ident, $what:literal, $scatter:expr) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            fam_obj: *mut c_void,
            local_addr: *mut c_void,
            d: *mut c_void,
            n_elements: u64,
            first_element: u64,
            stride: u64,
            element_size: u64,
        ) -> c_int {
            let which = Elements::Stride {
                n: n_elements,
                first: first_element,
                stride,
            };
            // SAFETY: contract.
            unsafe { gather_scatter($what, $scatter, fam_obj, local_addr, d, which, element_size) }
        }
    };
}

macro_rules! index_fn {
    ($name:ident, $what:literal, $scatter:expr) => {
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            fam_obj: *mut c_void,
            local_addr: *mut c_void,
            d: *mut c_void,
            n_elements: u64,
            element_index: *mut u64,
            element_size: u64,
        ) -> c_int {
            // SAFETY: contract.
            let ix = match unsafe { index(element_index, n_elements) } {
                Ok(ix) => ix,
                Err(e) => return super::errors::record($what, &e),
            };
            // SAFETY: contract.
            unsafe {
                gather_scatter(
                    $what,
                    $scatter,
                    fam_obj,
                    local_addr,
                    d,
                    Elements::Index(ix),
                    element_size,
                )
            }
        }
    };
}

stride_fn!(c_fam_gather_blocking_stride, "fam_gather_blocking", false);
stride_fn!(
    c_fam_gather_nonblocking_stride,
    "fam_gather_nonblocking",
    false
);
stride_fn!(c_fam_scatter_blocking_stride, "fam_scatter_blocking", true);
stride_fn!(
    c_fam_scatter_nonblocking_stride,
    "fam_scatter_nonblocking",
    true
);
index_fn!(c_fam_gather_blocking_index, "fam_gather_blocking", false);
index_fn!(
    c_fam_gather_nonblocking_index,
    "fam_gather_nonblocking",
    false
);
index_fn!(c_fam_scatter_blocking_index, "fam_scatter_blocking", true);
index_fn!(
    c_fam_scatter_nonblocking_index,
    "fam_scatter_nonblocking",
    true
);

// ---- copy, backup ----

const WAIT_MAGIC: u64 = 0x4641_4d5f_5741_4954; // "FAM_WAIT"

/// A wait object: the outcome of the operation, done in the call that made it.
struct Wait {
    magic: AtomicU64,
    result: Result<()>,
}

fn wait_object(result: Result<()>) -> *mut c_void {
    Box::into_raw(Box::new(Wait {
        magic: AtomicU64::new(WAIT_MAGIC),
        result,
    })) as *mut c_void
}

/// Consumes a wait object: its operation's result.
unsafe fn wait(fam_obj: *mut c_void, w: *mut c_void) -> Result<()> {
    // SAFETY: contract.
    unsafe { handle(fam_obj) }?;
    if w.is_null() {
        return Err(FamError::NullPtr("wait object is NULL".into()));
    }
    // SAFETY: a wait object of this library, not yet waited for (contract).
    let r = unsafe { &*(w as *const Wait) };
    if r.magic.swap(0, Ordering::Relaxed) != WAIT_MAGIC {
        return Err(FamError::Invalid(
            "not a wait object (or one already waited for)".into(),
        ));
    }
    // SAFETY: the Box `wait_object` made, used no more.
    unsafe { Box::from_raw(w as *mut Wait) }.result
}

#[no_mangle]
pub unsafe extern "C" fn c_fam_copy(
    fam_obj: *mut c_void,
    src_desc: *mut c_void,
    src_offset: u64,
    dest_desc: *mut c_void,
    dest_offset: u64,
    size: u64,
) -> *mut c_void {
    call_ptr("fam_copy", || {
        // SAFETY: contract.
        let c = unsafe { client(fam_obj) }?;
        let src = unsafe { desc(src_desc, "source descriptor") }?.item(&c)?;
        let dst = unsafe { desc(dest_desc, "destination descriptor") }?.item(&c)?;
        // Done now, through this process; famd will do it later. Arguments are checked
        // here (an error now), the copy's own failure is the wait's.
        crate::client::data::check_range(&src, src_offset, size)?;
        crate::client::data::check_range(&dst, dest_offset, size)?;
        Ok(wait_object(c.copy(
            &src,
            src_offset,
            &dst,
            dest_offset,
            size,
        )))
    })
}

#[no_mangle]
pub unsafe extern "C" fn c_fam_copy_wait(fam_obj: *mut c_void, wait_obj: *mut c_void) -> c_int {
    // SAFETY: contract.
    call("fam_copy_wait", || unsafe { wait(fam_obj, wait_obj) })
}

#[no_mangle]
pub unsafe extern "C" fn c_fam_backup(
    fam_obj: *mut c_void,
    src_desc: *mut c_void,
    backup_name: *const c_char,
    _backup_options: *mut BackupOptions,
) -> *mut c_void {
    call_ptr("fam_backup", || {
        // SAFETY: contract.
        let c = unsafe { client(fam_obj) }?;
        let item = unsafe { desc(src_desc, "data item descriptor") }?.item(&c)?;
        let name = unsafe { str_arg(backup_name, "backup name") }?;
        // famd copies it on its node before answering: the wait has only the result.
        Ok(wait_object(c.backup(item.id.0, name)))
    })
}

#[no_mangle]
pub unsafe extern "C" fn c_fam_backup_wait(fam_obj: *mut c_void, wait_obj: *mut c_void) -> c_int {
    // SAFETY: contract.
    call("fam_backup_wait", || unsafe { wait(fam_obj, wait_obj) })
}

#[no_mangle]
pub unsafe extern "C" fn c_fam_restore(
    fam_obj: *mut c_void,
    backup_name: *const c_char,
    dest_desc: *mut c_void,
) -> *mut c_void {
    call_ptr("fam_restore", || {
        // SAFETY: contract.
        let c = unsafe { client(fam_obj) }?;
        let name = unsafe { str_arg(backup_name, "backup name") }?;
        let item = unsafe { desc(dest_desc, "data item descriptor") }?.item(&c)?;
        Ok(wait_object(c.restore(name, item.id.0)))
    })
}

#[no_mangle]
pub unsafe extern "C" fn c_fam_restore_region(
    fam_obj: *mut c_void,
    backup_name: *const c_char,
    dest_reg_desc: *mut c_void,
    dataitem_name: *const c_char,
    perm: u32,
    dest_desc: *mut *mut c_void,
) -> *mut c_void {
    call_ptr("fam_restore", || {
        // SAFETY: NULL or a pointer to store the descriptor in (contract).
        let out = unsafe { dest_desc.as_mut() };
        let out = out.ok_or_else(|| FamError::NullPtr("descriptor out-pointer is NULL".into()))?;
        *out = std::ptr::null_mut();
        // SAFETY: contract.
        let c = unsafe { client(fam_obj) }?;
        let name = unsafe { str_arg(backup_name, "backup name") }?;
        let region = unsafe { desc(dest_reg_desc, "region descriptor") }?.region_id()?;
        let item_name = if dataitem_name.is_null() {
            ""
        } else {
            unsafe { str_arg(dataitem_name, "data item name") }?
        };
        let item = c.restore_new(name, region, item_name, perm)?;
        *out = Desc::of_item(item);
        Ok(wait_object(Ok(())))
    })
}

#[no_mangle]
pub unsafe extern "C" fn c_fam_restore_wait(fam_obj: *mut c_void, wait_obj: *mut c_void) -> c_int {
    // SAFETY: contract.
    call("fam_restore_wait", || unsafe { wait(fam_obj, wait_obj) })
}

#[no_mangle]
pub unsafe extern "C" fn c_fam_delete_backup(
    fam_obj: *mut c_void,
    backup_name: *const c_char,
) -> *mut c_void {
    call_ptr("fam_delete_backup", || {
        // SAFETY: contract.
        let c = unsafe { client(fam_obj) }?;
        let name = unsafe { str_arg(backup_name, "backup name") }?;
        Ok(wait_object(c.delete_backup(name)))
    })
}

#[no_mangle]
pub unsafe extern "C" fn c_fam_delete_backup_wait(
    fam_obj: *mut c_void,
    wait_obj: *mut c_void,
) -> c_int {
    // SAFETY: contract.
    call("fam_delete_backup_wait", || unsafe {
        wait(fam_obj, wait_obj)
    })
}

#[no_mangle]
pub unsafe extern "C" fn unimem_fam_list_backup(
    fam_obj: *mut c_void,
    backup_name: *const c_char,
    out_text: *mut *mut c_char,
) -> c_int {
    call("fam_list_backup", || {
        // SAFETY: contract.
        let c = unsafe { client(fam_obj) }?;
        let o = unsafe { out(out_text, "out") }?;
        *o = std::ptr::null_mut();
        // NULL is an error, as in OpenFAM; "*" lists every backup the caller may read.
        let name = unsafe { str_arg(backup_name, "backup name") }?;
        let mut text = c.list_backup(name)?.into_bytes();
        text.push(0);
        *o = malloc_copy(&text)?.cast();
        Ok(())
    })
}

// ---- map ----

#[no_mangle]
pub unsafe extern "C" fn c_fam_map(fam_obj: *mut c_void, d: *mut c_void) -> *mut c_void {
    call_ptr("fam_map", || {
        // SAFETY: contract.
        let h = unsafe { handle(fam_obj) }?;
        let c = h.client()?;
        let item = unsafe { desc(d, "data item descriptor") }?.item(&c)?;
        let m = c.map(&item)?;
        h.shared
            .maps
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(m.addr, m);
        Ok(m.addr as *mut c_void)
    })
}

#[no_mangle]
pub unsafe extern "C" fn c_fam_unmap(
    fam_obj: *mut c_void,
    local_ptr: *mut c_void,
    d: *mut c_void,
) -> c_int {
    call("fam_unmap", || {
        // SAFETY: contract.
        let h = unsafe { handle(fam_obj) }?;
        let c = h.client()?;
        unsafe { desc(d, "data item descriptor") }?;
        if local_ptr.is_null() {
            return Err(FamError::NullPtr("local pointer is NULL".into()));
        }
        let m: Mapping = h
            .shared
            .maps
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&(local_ptr as usize))
            .ok_or_else(|| FamError::Invalid("not a mapping fam_map returned".into()))?;
        c.unmap(&m)
    })
}
