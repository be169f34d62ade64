//! fam_map: an item's bytes in this process's address space, for loads and stores. Works when
//! every extent of the item is on this node (the mailbox driver maps only its own node's
//! GSAS pages); an item with memory elsewhere is `FAM_ERR_UNIMPL` for now.

use std::ffi::c_void;
use std::num::NonZeroUsize;
use std::ptr::NonNull;

use nix::sys::mman::{mmap_anonymous, munmap, MapFlags, ProtFlags};

use super::memory::{gsas_error, Memory};
use crate::meta::Item;
use crate::{FamError, Result};

/// A mapping made by [`map`]: `len` bytes at `addr` (the item's first byte).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mapping {
    pub addr: usize,
    pub len: usize,
    /// Whether stores are allowed (the grant let this user write).
    pub writable: bool,
}

/// Maps the item: each extent in order, which is the item's byte order when all extents are
/// on one node (one node holds every stripe, back to back). Writable if the home's grant
/// allows it, else read-only (a user who may only read the item).
pub fn map(m: &dyn Memory, item: &Item) -> Result<Mapping> {
    let me = m.node();
    if let Some(e) = item.extents.iter().find(|e| e.node != me) {
        return Err(FamError::Unimpl(format!(
            "fam_map of an item with memory on node {} (only items all on this node, {me}, can be mapped)",
            e.node
        )));
    }
    if item.extents.is_empty() {
        return Err(FamError::Invalid(
            "fam_map of an item without memory".into(),
        ));
    }
    match map_as(m, item, true) {
        Err(FamError::NoPerm(_)) => map_as(m, item, false),
        r => r,
    }
}

fn map_as(m: &dyn Memory, item: &Item, write: bool) -> Result<Mapping> {
    let total: u64 = item.extents.iter().map(|e| e.len).sum();
    let len = usize::try_from(total)
        .ok()
        .and_then(NonZeroUsize::new)
        .ok_or_else(|| FamError::Invalid(format!("item of {total} bytes cannot be mapped")))?;
    if let [e] = item.extents.as_slice() {
        let p = m
            .map_local(e.addr, len.get(), None, write)
            .map_err(|e| gsas_error("fam_map", e))?;
        return Ok(Mapping {
            addr: p.as_ptr() as usize,
            len: len.get(),
            writable: write,
        });
    }
    // Several extents: reserve the whole range, then map each extent over its part of it.
    // SAFETY: a new private anonymous mapping at an address the kernel picks.
    let base = unsafe {
        mmap_anonymous(
            None,
            len,
            ProtFlags::PROT_NONE,
            MapFlags::MAP_PRIVATE | MapFlags::MAP_NORESERVE,
        )
    }
    .map_err(|e| FamError::Resource(format!("reserving {len} bytes of address space: {e}")))?;
    let mut at = base.as_ptr() as usize;
    for e in &item.extents {
        let fixed = NonZeroUsize::new(at);
        if let Err(err) = m.map_local(e.addr, e.len as usize, fixed, write) {
            // SAFETY: the range reserved above, which nothing else uses.
            let _ = unsafe { munmap(base, len.get()) };
            return Err(gsas_error("fam_map", err));
        }
        at += e.len as usize;
    }
    Ok(Mapping {
        addr: base.as_ptr() as usize,
        len: len.get(),
        writable: write,
    })
}

/// Removes a mapping [`map`] made.
pub fn unmap(mapping: &Mapping) -> Result<()> {
    let p = NonNull::new(mapping.addr as *mut c_void)
        .ok_or_else(|| FamError::NullPtr("fam_unmap of NULL".into()))?;
    // SAFETY: a mapping `map` made and the caller no longer uses (its contract).
    unsafe { munmap(p, mapping.len) }
        .map_err(|e| FamError::Invalid(format!("munmap of {:#x}: {e}", mapping.addr)))
}
