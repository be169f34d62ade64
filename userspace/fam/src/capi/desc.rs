//! Descriptors (`c_fam_region_desc *`, `c_fam_desc *`): `Arc<Desc>` raw pointers, so
//! `unimem_fam_desc_retain` / `_release` are the Arc's count. A descriptor caches what the
//! library knows of its region or item; one made from a global descriptor is validated on
//! first use (a `StatItem` / `StatRegion` to famd, under the descriptor's lock, so threads
//! sharing it validate it once).

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use super::errors::{call, quiet};
use super::types::{status, GlobalDescriptor};
use crate::client::{Client, RegionInfo};
use crate::meta::Item;
use crate::{FamError, Result};

pub const KIND_ITEM: c_int = 0;
pub const KIND_REGION: c_int = 1;
/// A region's global descriptor's offset (OpenFAM's "invalid offset").
pub const REGION_MARKER: u64 = u64::MAX;

const DESC_MAGIC: u64 = 0x4641_4d5f_4445_5343; // "FAM_DESC"

pub mod attr {
    pub const KIND: i32 = 0;
    pub const STATUS: i32 = 1;
    pub const SIZE: i32 = 2;
    pub const PERM: i32 = 3;
    pub const UID: i32 = 4;
    pub const GID: i32 = 5;
    pub const PERMISSION_LEVEL: i32 = 6;
    pub const INTERLEAVE_SIZE: i32 = 7;
    pub const USED_MEMSRV_CNT: i32 = 8;
    pub const FIRST_MEMSERVER_ID: i32 = 9;
    pub const REDUNDANCY_LEVEL: i32 = 10;
    pub const MEMORY_TYPE: i32 = 11;
    pub const INTERLEAVE_ENABLE: i32 = 12;
    pub const ALLOCATION_POLICY: i32 = 13;
    pub const MEMSERVER_ID: i32 = 14;
    /// Attributes 0..COUNT.
    pub const COUNT: usize = 15;
}

/// What a descriptor holds.
#[derive(Debug, Default)]
pub struct State {
    /// Scalar attributes by number ([`attr`]).
    pub attrs: [u64; attr::COUNT],
    /// Bound to a region or item (from a call, or a global descriptor not {0, 0}).
    pub bound: bool,
    pub global: GlobalDescriptor,
    pub name: Option<CString>,
    pub arrays: [Option<Vec<u64>>; 3],
    pub context: usize,
    /// The item, once known (validated).
    pub item: Option<Arc<Item>>,
    pub region: Option<RegionInfo>,
    /// `fam_close`d: no data path call may use it any more (OpenFAM's rule), though it still
    /// names its item.
    pub closed: bool,
}

#[derive(Debug)]
pub struct Desc {
    magic: AtomicU64,
    pub kind: c_int,
    pub state: Mutex<State>,
}

impl Drop for Desc {
    fn drop(&mut self) {
        self.magic.store(0, Ordering::Relaxed);
    }
}

impl Desc {
    pub fn new(kind: c_int) -> Desc {
        let mut st = State::default();
        st.attrs[attr::KIND as usize] = kind as u64;
        st.attrs[attr::STATUS as usize] = status::DESC_UNINITIALIZED;
        Desc {
            magic: AtomicU64::new(DESC_MAGIC),
            kind,
            state: Mutex::new(st),
        }
    }

    pub fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A new descriptor of an item, one reference for the caller.
    pub fn of_item(item: Item) -> *mut c_void {
        let d = Desc::new(KIND_ITEM);
        d.lock().set_item(item);
        Arc::into_raw(Arc::new(d)) as *mut c_void
    }

    /// A new descriptor of a region, one reference for the caller.
    pub fn of_region(r: RegionInfo) -> *mut c_void {
        let d = Desc::new(KIND_REGION);
        d.lock().set_region(r);
        Arc::into_raw(Arc::new(d)) as *mut c_void
    }

    /// Marks it `DESC_INVALID` (its region was destroyed or item deallocated).
    pub fn invalidate(&self) {
        let mut st = self.lock();
        st.attrs[attr::STATUS as usize] = status::DESC_INVALID;
        st.item = None;
    }

    /// `fam_close`: later data path calls through this descriptor fail. One whose item was
    /// deallocated (which closed it) is an error, as in OpenFAM.
    pub fn close(&self) -> Result<()> {
        let mut st = self.lock();
        self.check_valid(&st)?;
        st.closed = true;
        Ok(())
    }

    fn check_valid(&self, st: &State) -> Result<()> {
        if st.attrs[attr::STATUS as usize] == status::DESC_INVALID {
            let what = if self.kind == KIND_ITEM {
                "its data item was deallocated"
            } else {
                "its region was destroyed"
            };
            // What famd would answer for the id: it names nothing any more.
            return Err(FamError::NotFound(format!("descriptor is invalid: {what}")));
        }
        if !st.bound {
            return Err(FamError::Invalid(
                "descriptor is not bound to a region or data item".into(),
            ));
        }
        Ok(())
    }

    /// The item, validated with famd on first use.
    pub fn item(&self, client: &Client) -> Result<Arc<Item>> {
        if self.kind != KIND_ITEM {
            return Err(FamError::Invalid(
                "a region descriptor where a data item's is needed".into(),
            ));
        }
        let mut st = self.lock();
        self.check_valid(&st)?;
        if st.closed {
            return Err(FamError::InvalidOp(
                "descriptor was closed by fam_close; look the item up again".into(),
            ));
        }
        if let Some(i) = &st.item {
            return Ok(i.clone());
        }
        let item = client.stat_item(st.global.offset)?;
        if item.region.0 != st.global.region_id {
            return Err(FamError::NotFound(format!(
                "data item {} is not in region {}",
                st.global.offset, st.global.region_id
            )));
        }
        st.set_item(item);
        st.item
            .clone()
            .ok_or_else(|| FamError::Unknown("descriptor lost its item".into()))
    }

    /// The region's id (famd checks it on use).
    pub fn region_id(&self) -> Result<u64> {
        if self.kind != KIND_REGION {
            return Err(FamError::Invalid(
                "a data item descriptor where a region's is needed".into(),
            ));
        }
        let st = self.lock();
        self.check_valid(&st)?;
        Ok(st.global.region_id)
    }
}

impl State {
    pub fn set_name(&mut self, name: &str) {
        self.name = CString::new(name.replace('\0', "")).ok();
    }

    /// Fills the attributes from famd's description of the item.
    pub fn set_item(&mut self, item: Item) {
        let nodes = item.nodes();
        let a = &mut self.attrs;
        a[attr::STATUS as usize] = status::DESC_INIT_DONE;
        a[attr::SIZE as usize] = item.size;
        a[attr::PERM as usize] = u64::from(item.mode);
        a[attr::UID as usize] = u64::from(item.uid);
        a[attr::GID as usize] = u64::from(item.gid);
        a[attr::PERMISSION_LEVEL as usize] = 2; // DATAITEM: unimem's items have their own mode
        a[attr::INTERLEAVE_SIZE as usize] = item.stripe.unwrap_or(0);
        a[attr::USED_MEMSRV_CNT as usize] = nodes.len() as u64;
        a[attr::FIRST_MEMSERVER_ID as usize] = nodes.first().map_or(0, |&n| u64::from(n));
        let base: Vec<u64> = nodes
            .iter()
            .filter_map(|n| item.extents.iter().find(|e| e.node == *n).map(|e| e.addr))
            .collect();
        self.arrays[1] = Some(base);
        self.arrays[2] = Some(nodes.iter().map(|&n| u64::from(n)).collect());
        self.bound = true;
        self.global = GlobalDescriptor {
            region_id: item.region.0,
            offset: item.id.0,
        };
        let name = item.name.clone();
        self.set_name(&name);
        self.item = Some(Arc::new(item));
    }

    /// Fills the attributes from famd's description of the region.
    pub fn set_region(&mut self, r: RegionInfo) {
        let a = &mut self.attrs;
        a[attr::STATUS as usize] = status::DESC_INIT_DONE;
        a[attr::SIZE as usize] = r.size;
        a[attr::PERM as usize] = u64::from(r.mode);
        a[attr::UID as usize] = u64::from(r.uid);
        a[attr::GID as usize] = u64::from(r.gid);
        a[attr::PERMISSION_LEVEL as usize] = 2;
        a[attr::REDUNDANCY_LEVEL as usize] = r.redundancy as u64;
        a[attr::MEMORY_TYPE as usize] = r.memory_type as u64;
        a[attr::INTERLEAVE_ENABLE as usize] = if r.stripe > 0 { 1 } else { 2 };
        a[attr::MEMSERVER_ID as usize] = r.lenders.first().map_or(0, |&n| u64::from(n));
        self.bound = true;
        self.global = GlobalDescriptor {
            region_id: r.id,
            offset: REGION_MARKER,
        };
        self.set_name(&r.name);
        self.region = Some(r);
    }
}

/// The descriptor at `p` (not NULL), borrowed.
pub unsafe fn desc<'a>(p: *const c_void, what: &str) -> Result<&'a Desc> {
    // SAFETY: a descriptor pointer this library returned, with a reference alive (contract).
    unsafe { desc_opt(p) }.ok_or_else(|| FamError::NullPtr(format!("{what} is NULL")))
}

unsafe fn desc_opt<'a>(p: *const c_void) -> Option<&'a Desc> {
    if p.is_null() {
        return None;
    }
    // SAFETY: as `desc`.
    let d = unsafe { &*(p as *const Desc) };
    (d.magic.load(Ordering::Relaxed) == DESC_MAGIC).then_some(d)
}

#[no_mangle]
pub unsafe extern "C" fn unimem_fam_desc_new(
    kind: c_int,
    gdesc: *const GlobalDescriptor,
    size: u64,
    out: *mut *mut c_void,
) -> c_int {
    call("unimem_fam_desc_new", || {
        if kind != KIND_ITEM && kind != KIND_REGION {
            return Err(FamError::Invalid(format!("descriptor kind {kind}")));
        }
        // SAFETY: out-parameter (contract).
        let out = unsafe { super::out(out, "out") }?;
        let d = Desc::new(kind);
        {
            let mut st = d.lock();
            st.attrs[attr::SIZE as usize] = size;
            // SAFETY: NULL or a Fam_Global_Descriptor (contract).
            if let Some(g) = unsafe { gdesc.as_ref() } {
                st.global = *g;
                st.bound = *g != GlobalDescriptor::default();
            }
        }
        *out = Arc::into_raw(Arc::new(d)) as *mut c_void;
        Ok(())
    })
}

#[no_mangle]
pub unsafe extern "C" fn unimem_fam_desc_retain(d: *mut c_void) {
    quiet((), || {
        // SAFETY: NULL or a live descriptor (contract).
        if unsafe { desc_opt(d) }.is_some() {
            // SAFETY: the pointer came from Arc::into_raw and has a reference.
            unsafe { Arc::increment_strong_count(d as *const Desc) }
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn unimem_fam_desc_release(d: *mut c_void) {
    quiet((), || {
        // SAFETY: NULL or a live descriptor (contract).
        if unsafe { desc_opt(d) }.is_some() {
            // SAFETY: the pointer came from Arc::into_raw; this drops the caller's reference.
            unsafe { Arc::decrement_strong_count(d as *const Desc) }
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn unimem_fam_desc_global(d: *const c_void) -> GlobalDescriptor {
    quiet(GlobalDescriptor::default(), || {
        // SAFETY: NULL or a live descriptor (contract).
        unsafe { desc_opt(d) }.map_or(GlobalDescriptor::default(), |d| {
            let st = d.lock();
            if st.bound {
                st.global
            } else {
                GlobalDescriptor::default()
            }
        })
    })
}

/// Which attributes a kind has (the others read 0 and ignore writes).
fn applies(kind: c_int, a: c_int) -> bool {
    match a {
        0..=6 => true,
        7..=9 => kind == KIND_ITEM,
        10..=14 => kind == KIND_REGION,
        _ => false,
    }
}

#[no_mangle]
pub unsafe extern "C" fn unimem_fam_desc_get(d: *const c_void, a: c_int) -> u64 {
    quiet(0, || {
        // SAFETY: NULL or a live descriptor (contract).
        match unsafe { desc_opt(d) } {
            Some(d) if applies(d.kind, a) => d.lock().attrs[a as usize],
            _ => 0,
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn unimem_fam_desc_set(d: *mut c_void, a: c_int, value: u64) {
    quiet((), || {
        // SAFETY: NULL or a live descriptor (contract).
        let Some(d) = (unsafe { desc_opt(d) }) else {
            return;
        };
        let read_only = [attr::KIND, attr::FIRST_MEMSERVER_ID, attr::MEMSERVER_ID];
        if applies(d.kind, a) && !read_only.contains(&a) {
            d.lock().attrs[a as usize] = value;
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn unimem_fam_desc_name(d: *const c_void) -> *mut c_char {
    quiet(std::ptr::null_mut(), || {
        // SAFETY: NULL or a live descriptor (contract).
        unsafe { desc_opt(d) }
            .and_then(|d| d.lock().name.as_ref().map(|n| n.as_ptr() as *mut c_char))
            .unwrap_or(std::ptr::null_mut())
    })
}

#[no_mangle]
pub unsafe extern "C" fn unimem_fam_desc_set_name(d: *mut c_void, name: *const c_char) {
    quiet((), || {
        // SAFETY: NULL or a live descriptor (contract).
        if let Some(d) = unsafe { desc_opt(d) } {
            d.lock().name = if name.is_null() {
                None
            } else {
                // SAFETY: a NUL-terminated string (contract).
                Some(unsafe { CStr::from_ptr(name) }.to_owned())
            };
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn unimem_fam_desc_context(d: *const c_void) -> *mut c_void {
    quiet(std::ptr::null_mut(), || {
        // SAFETY: NULL or a live descriptor (contract).
        unsafe { desc_opt(d) }.map_or(std::ptr::null_mut(), |d| d.lock().context as *mut c_void)
    })
}

#[no_mangle]
pub unsafe extern "C" fn unimem_fam_desc_set_context(d: *mut c_void, context: *mut c_void) {
    quiet((), || {
        // SAFETY: NULL or a live descriptor (contract).
        if let Some(d) = unsafe { desc_opt(d) } {
            d.lock().context = context as usize;
        }
    })
}

#[no_mangle]
pub unsafe extern "C" fn unimem_fam_desc_array(
    d: *const c_void,
    which: c_int,
    count: *mut u64,
) -> *mut u64 {
    quiet(std::ptr::null_mut(), || {
        // SAFETY: NULL or a live descriptor (contract).
        let found = unsafe { desc_opt(d) }.and_then(|d| {
            let st = d.lock();
            let a = st.arrays.get(usize::try_from(which).ok()?)?.as_ref()?;
            Some((a.as_ptr() as *mut u64, a.len() as u64))
        });
        let (p, n) = found.unwrap_or((std::ptr::null_mut(), 0));
        // SAFETY: NULL or a u64 to write (contract).
        if let Some(c) = unsafe { count.as_mut() } {
            *c = n;
        }
        p
    })
}

#[no_mangle]
pub unsafe extern "C" fn unimem_fam_desc_set_array(
    d: *mut c_void,
    which: c_int,
    values: *const u64,
    count: u64,
) {
    quiet((), || {
        // SAFETY: NULL or a live descriptor (contract).
        let Some(d) = (unsafe { desc_opt(d) }) else {
            return;
        };
        let Some(slot) = usize::try_from(which).ok().filter(|&w| w < 3) else {
            return;
        };
        let v = if count == 0 || values.is_null() {
            None
        } else {
            // SAFETY: `count` values at `values` (contract).
            Some(unsafe { std::slice::from_raw_parts(values, count as usize) }.to_vec())
        };
        d.lock().arrays[slot] = v;
    })
}
