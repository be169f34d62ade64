//! fam_map: an item's bytes in this process's address space, for loads and stores, wherever
//! they are: this node's GSAS pages, or other nodes' (each home approves the mapping of its
//! pages, and removes it when it frees them or narrows their grant: docs/GSAS.md, "Mapping
//! another node's pages").

use std::ffi::c_void;
use std::num::NonZeroUsize;
use std::ptr::NonNull;

use nix::sys::mman::{mmap_anonymous, munmap, MapFlags, ProtFlags};

use super::memory::{gsas_error, Memory};
use crate::meta::Item;
use crate::{FamError, Result};
use unimem_wire::gsas::PAGE_SIZE;

/// A mapping made by [`map`]: `len` bytes at `addr` (the item's first byte).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mapping {
    pub addr: usize,
    pub len: usize,
    /// Whether stores are allowed (the grant let this user write).
    pub writable: bool,
}

/// Maps the item: each run of it that is contiguous in GSAS (a stripe, or an extent) at its
/// place in one reserved range, so the item's bytes are in order whatever its layout and
/// wherever its memory is (this node's pages checked by this node's service, other nodes' pages
/// approved by theirs). Writable if the homes' grants allow it, else read-only (a user who may
/// only read the item).
pub fn map(m: &dyn Memory, item: &Item) -> Result<Mapping> {
    if item.extents.is_empty() || item.size == 0 {
        return Err(FamError::Invalid(
            "fam_map of an item without memory".into(),
        ));
    }
    match map_as(m, item, true) {
        Err(FamError::NoPerm(_)) => map_as(m, item, false),
        r => r,
    }
}

/// The item's runs: (offset in the item, GSAS address, length), the last one rounded up to
/// whole pages (stripes and extents are whole pages, so every run starts on a page).
fn runs(item: &Item) -> Result<Vec<(u64, u64, u64)>> {
    let mut out = Vec::new();
    let mut o = 0;
    while o < item.size {
        let (addr, run) = item.locate(o).ok_or_else(|| {
            FamError::Metadata(format!("item {} has no memory at offset {o}", item.id))
        })?;
        let end = o + run;
        let len = if end >= item.size {
            end.div_ceil(PAGE_SIZE) * PAGE_SIZE - o
        } else {
            run
        };
        out.push((o, addr, len));
        o = end;
    }
    Ok(out)
}

fn map_as(m: &dyn Memory, item: &Item, write: bool) -> Result<Mapping> {
    let runs = runs(item)?;
    let total: u64 = runs.iter().map(|r| r.2).sum();
    let len = usize::try_from(total)
        .ok()
        .and_then(NonZeroUsize::new)
        .ok_or_else(|| FamError::Invalid(format!("item of {total} bytes cannot be mapped")))?;
    if let [(_, addr, _)] = runs.as_slice() {
        let p = m
            .map(*addr, len.get(), None, write)
            .map_err(|e| gsas_error("fam_map", e))?;
        return Ok(Mapping {
            addr: p.as_ptr() as usize,
            len: len.get(),
            writable: write,
        });
    }
    // Several runs: reserve the whole range, then map each run over its part of it.
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
    for &(o, addr, n) in &runs {
        let fixed = NonZeroUsize::new(base.as_ptr() as usize + o as usize);
        if let Err(err) = m.map(addr, n as usize, fixed, write) {
            // SAFETY: the range reserved above, which nothing else uses.
            let _ = unsafe { munmap(base, len.get()) };
            return Err(gsas_error("fam_map", err));
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::meta::{Extent, ItemId, RegionId};
    use unimem_wire::gsas::addr;

    /// An item striped in pages over nodes 1 and 2, its last stripe partial.
    fn item(stripe: Option<u64>, size: u64) -> Item {
        Item {
            id: ItemId(1),
            region: RegionId(1),
            name: "x".into(),
            size,
            uid: 0,
            gid: 0,
            mode: 0o600,
            stripe,
            extents: vec![
                Extent {
                    node: 1,
                    addr: addr(1, 0x10000),
                    len: 2 * PAGE_SIZE,
                },
                Extent {
                    node: 2,
                    addr: addr(2, 0x20000),
                    len: 2 * PAGE_SIZE,
                },
            ],
        }
    }

    #[test]
    fn runs_follow_the_stripes_and_end_on_a_page() {
        let p = PAGE_SIZE;
        // Stripes of a page alternate nodes; the item's 3.5 pages end in node 2's second page.
        let r = runs(&item(Some(p), 3 * p + p / 2)).unwrap();
        assert_eq!(
            r,
            vec![
                (0, addr(1, 0x10000), p),
                (p, addr(2, 0x20000), p),
                (2 * p, addr(1, 0x10000 + p), p),
                (3 * p, addr(2, 0x20000 + p), p),
            ]
        );
        // Not striped: the extents in order, the last cut to the item's pages.
        let r = runs(&item(None, 3 * p - 10)).unwrap();
        assert_eq!(
            r,
            vec![(0, addr(1, 0x10000), 2 * p), (2 * p, addr(2, 0x20000), p)]
        );
        // A one-page item: one run.
        assert_eq!(
            runs(&item(None, 1)).unwrap(),
            vec![(0, addr(1, 0x10000), p)]
        );
    }
}
