//! Data items: allocate, lookup, deallocate, close, stat, change permissions.

use std::ffi::{c_char, c_int, c_void};

use super::desc::{attr, desc, Desc};
use super::errors::{call, call_ptr};
use super::handles::client;
use super::types::FamStat;
use super::{out, str_arg};
use crate::client::Client;
use crate::{FamError, Result};

/// The region to allocate in: the descriptor's, or the default region's.
unsafe fn region_of(c: &Client, region_desc: *mut c_void) -> Result<u64> {
    if region_desc.is_null() {
        return Ok(c.lookup_region(c.options().default_region())?.id);
    }
    // SAFETY: contract.
    unsafe { desc(region_desc, "region descriptor") }?.region_id()
}

#[no_mangle]
pub unsafe extern "C" fn c_fam_allocate(
    fam_obj: *mut c_void,
    size: u64,
    perm: u32,
    region_desc: *mut c_void,
) -> *mut c_void {
    call_ptr("fam_allocate", || {
        // SAFETY: contract.
        let c = unsafe { client(fam_obj) }?;
        let r = unsafe { region_of(&c, region_desc) }?;
        Ok(Desc::of_item(c.allocate(r, "", size, perm)?))
    })
}

#[no_mangle]
pub unsafe extern "C" fn c_fam_allocate_named(
    fam_obj: *mut c_void,
    name: *const c_char,
    size: u64,
    perm: u32,
    region_desc: *mut c_void,
) -> *mut c_void {
    call_ptr("fam_allocate", || {
        // SAFETY: contract.
        let c = unsafe { client(fam_obj) }?;
        let name = unsafe { str_arg(name, "data item name") }?;
        let r = unsafe { region_of(&c, region_desc) }?;
        Ok(Desc::of_item(c.allocate(r, name, size, perm)?))
    })
}

#[no_mangle]
pub unsafe extern "C" fn c_fam_lookup(
    fam_obj: *mut c_void,
    name: *const c_char,
    region_name: *const c_char,
) -> *mut c_void {
    call_ptr("fam_lookup", || {
        // SAFETY: contract.
        let c = unsafe { client(fam_obj) }?;
        let name = unsafe { str_arg(name, "data item name") }?;
        let region = unsafe { str_arg(region_name, "region name") }?;
        Ok(Desc::of_item(c.lookup(name, region)?))
    })
}

#[no_mangle]
pub unsafe extern "C" fn c_fam_deallocate(fam_obj: *mut c_void, d: *mut c_void) -> c_int {
    call("fam_deallocate", || {
        // SAFETY: contract.
        let c = unsafe { client(fam_obj) }?;
        let d = unsafe { desc(d, "data item descriptor") }?;
        let item = d.item(&c)?;
        c.deallocate(item.id.0)?;
        d.invalidate();
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn c_fam_close(fam_obj: *mut c_void, d: *mut c_void) -> c_int {
    call("fam_close", || {
        // SAFETY: contract.
        let c = unsafe { client(fam_obj) }?;
        let d = unsafe { desc(d, "data item descriptor") }?;
        if d.kind != super::desc::KIND_ITEM {
            return Err(FamError::Invalid("fam_close of a region descriptor".into()));
        }
        let item = d.lock().item.clone();
        d.close()?;
        // What its lookup kept, let go (the item's allocations stay).
        if let Some(item) = item {
            c.keep(&item, false);
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn c_fam_stat_data(
    fam_obj: *mut c_void,
    d: *mut c_void,
    stat: *mut FamStat,
) -> c_int {
    call("fam_stat", || {
        // SAFETY: contract.
        let c = unsafe { client(fam_obj) }?;
        let d = unsafe { desc(d, "data item descriptor") }?;
        let st = unsafe { out(stat, "stat") }?;
        let id = d.item(&c)?.id.0;
        // Fresh from famd: the mode may have changed.
        let item = c.stat_item(id)?;
        let nodes = item.nodes();
        let mut s = d.lock();
        s.set_item(item.clone());
        st.size = item.size;
        st.perm = item.mode;
        st.name = s
            .name
            .as_ref()
            .map_or(std::ptr::null_mut(), |n| n.as_ptr() as *mut c_char);
        st.uid = item.uid;
        st.gid = item.gid;
        st.region_attributes = Default::default();
        st.num_memservers = nodes.len() as u64;
        st.interleave_size = item.stripe.unwrap_or(0);
        st.memory_servers = [0; 256];
        for (m, &n) in st.memory_servers.iter_mut().zip(&nodes) {
            *m = u64::from(n);
        }
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn c_fam_change_permissions_data(
    fam_obj: *mut c_void,
    d: *mut c_void,
    perm: u32,
) -> c_int {
    call("fam_change_permissions", || {
        // SAFETY: contract.
        let c = unsafe { client(fam_obj) }?;
        let d = unsafe { desc(d, "data item descriptor") }?;
        let id = d.item(&c)?.id.0;
        c.change_item_permissions(id, perm)?;
        d.lock().attrs[attr::PERM as usize] = u64::from(perm);
        Ok(())
    })
}
