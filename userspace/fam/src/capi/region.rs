//! Regions: create, lookup, destroy, resize, stat, change permissions.

use std::ffi::{c_char, c_int, c_void};

use unimem_wire::fam::{Interleave, MemoryType, Redundancy};

use super::desc::{desc, Desc};
use super::errors::{call, call_ptr};
use super::handles::client;
use super::types::{FamStat, RegionAttributes};
use super::{out, str_arg};
use crate::client::RegionInfo;
use crate::{FamError, Result};

fn enum_u8(what: &str, v: c_int) -> Result<u8> {
    u8::try_from(v).map_err(|_| FamError::Invalid(format!("{what} {v}")))
}

/// The wire's attributes from C's. Permission level and allocation policy have no wire field
/// (unimem's items always have their own mode; placement is the region's lenders).
pub(crate) fn attributes(a: Option<&RegionAttributes>) -> Result<crate::client::RegionAttributes> {
    let Some(a) = a else {
        return Ok(Default::default());
    };
    let bad = |what: &str, v: c_int| FamError::Invalid(format!("{what} {v}"));
    Ok(crate::client::RegionAttributes {
        redundancy: Redundancy::from_u8(enum_u8("redundancy level", a.redundancy_level)?)
            .ok_or_else(|| bad("redundancy level", a.redundancy_level))?,
        memory_type: MemoryType::from_u8(enum_u8("memory type", a.memory_type)?)
            .ok_or_else(|| bad("memory type", a.memory_type))?,
        interleave: Interleave::from_u8(enum_u8("interleave setting", a.interleave_enable)?)
            .ok_or_else(|| bad("interleave setting", a.interleave_enable))?,
    })
}

#[no_mangle]
pub unsafe extern "C" fn c_fam_create_region(
    fam_obj: *mut c_void,
    region_name: *const c_char,
    size: u64,
    perm: u32,
    reg_att: *mut RegionAttributes,
) -> *mut c_void {
    call_ptr("fam_create_region", || {
        // SAFETY: contract (all the unsafe calls below: ABI.md's pointers).
        let c = unsafe { client(fam_obj) }?;
        let name = unsafe { str_arg(region_name, "region name") }?;
        let attrs = attributes(unsafe { reg_att.as_ref() })?;
        let r = c.create_region(name, size, perm, attrs)?;
        Ok(Desc::of_region(r))
    })
}

#[no_mangle]
pub unsafe extern "C" fn c_fam_lookup_region(
    fam_obj: *mut c_void,
    name: *const c_char,
) -> *mut c_void {
    call_ptr("fam_lookup_region", || {
        // SAFETY: contract.
        let c = unsafe { client(fam_obj) }?;
        let name = unsafe { str_arg(name, "region name") }?;
        Ok(Desc::of_region(c.lookup_region(name)?))
    })
}

#[no_mangle]
pub unsafe extern "C" fn c_fam_destroy_region(
    fam_obj: *mut c_void,
    region_desc: *mut c_void,
) -> c_int {
    call("fam_destroy_region", || {
        // SAFETY: contract.
        let c = unsafe { client(fam_obj) }?;
        let d = unsafe { desc(region_desc, "region descriptor") }?;
        c.destroy_region(d.region_id()?)?;
        d.invalidate();
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn c_fam_resize_region(
    fam_obj: *mut c_void,
    region_desc: *mut c_void,
    size: u64,
) -> c_int {
    call("fam_resize_region", || {
        // SAFETY: contract.
        let c = unsafe { client(fam_obj) }?;
        let d = unsafe { desc(region_desc, "region descriptor") }?;
        c.resize_region(d.region_id()?, size)?;
        // The new size as famd rounded it.
        let r = c.stat_region(d.region_id()?)?;
        d.lock().set_region(r);
        Ok(())
    })
}

/// Fills a Fam_Stat of a region.
pub(crate) fn stat_of_region(st: &mut FamStat, r: &RegionInfo, name: *mut c_char) {
    st.size = r.size;
    st.perm = r.mode;
    st.name = name;
    st.uid = r.uid;
    st.gid = r.gid;
    st.region_attributes = RegionAttributes {
        redundancy_level: r.redundancy as c_int,
        memory_type: r.memory_type as c_int,
        interleave_enable: if r.stripe > 0 { 1 } else { 2 },
        permission_level: 2,
        allocation_policy: 0,
        hosting_node: 0,
    };
    st.num_memservers = r.lenders.len() as u64;
    st.interleave_size = r.stripe;
    st.memory_servers = [0; 256];
    for (s, &l) in st.memory_servers.iter_mut().zip(&r.lenders) {
        *s = u64::from(l);
    }
}

#[no_mangle]
pub unsafe extern "C" fn c_fam_stat_region(
    fam_obj: *mut c_void,
    region_desc: *mut c_void,
    stat: *mut FamStat,
) -> c_int {
    call("fam_stat_region", || {
        // SAFETY: contract.
        let c = unsafe { client(fam_obj) }?;
        let d = unsafe { desc(region_desc, "region descriptor") }?;
        let st = unsafe { out(stat, "stat") }?;
        let r = c.stat_region(d.region_id()?)?;
        let mut s = d.lock();
        s.set_region(r.clone());
        let name = s
            .name
            .as_ref()
            .map_or(std::ptr::null_mut(), |n| n.as_ptr() as *mut c_char);
        stat_of_region(st, &r, name);
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn c_fam_change_permissions_region(
    fam_obj: *mut c_void,
    region_desc: *mut c_void,
    perm: u32,
) -> c_int {
    call("fam_change_permissions", || {
        // SAFETY: contract.
        let c = unsafe { client(fam_obj) }?;
        let d = unsafe { desc(region_desc, "region descriptor") }?;
        c.change_region_permissions(d.region_id()?, perm)?;
        d.lock().attrs[super::desc::attr::PERM as usize] = u64::from(perm);
        Ok(())
    })
}
