//! The store's page allocator over GSAS: famd's own protection tree allocates every item's
//! pages on the lenders (`ALLOC` on the lender's atomic service) and grants them to the item's
//! owner, group and mode (`GRANT`, docs/GSAS.md "Grants"), so that users reach an item's bytes
//! straight from their own trees, checked by the home's kernel, and never through famd.

use fam::meta::{Item, Space};
use fam::FamError;
use gsas::{Error as GsasError, Gsas};

/// [`Space`] on a GSAS handle of famd's tree.
pub struct GsasSpace<'a> {
    pub gsas: &'a Gsas,
}

impl Space for GsasSpace<'_> {
    fn alloc(&mut self, node: u16, pages: u64) -> fam::Result<u64> {
        self.gsas
            .alloc_shared_page(node, pages)
            .map_err(|e| space_error(&e, &format!("{pages} pages on node {node}")))
    }

    fn free(&mut self, addr: u64) -> fam::Result<()> {
        self.gsas
            .free(addr)
            .map_err(|e| space_error(&e, &format!("freeing {addr:#x}")))
    }
}

/// OpenFAM's error for a failed GSAS allocation or free: lack of memory is `NO_SPACE` (the
/// store then tries another lender), anything else the allocator's fault.
fn space_error(e: &GsasError, what: &str) -> FamError {
    match e {
        GsasError::NoMemory(_) | GsasError::NoPool(_) | GsasError::Quota(_) => {
            FamError::NoSpace(format!("{what}: {e}"))
        }
        _ => FamError::Allocator(format!("{what}: {e}")),
    }
}

/// Grants every extent of `item` to its owner, group and mode: what the homes check users'
/// requests and mappings against. A failure leaves some extents granted the new way and some
/// the old: the caller undoes the change that needed it.
pub fn grant_item(gsas: &Gsas, item: &Item) -> fam::Result<()> {
    for e in &item.extents {
        gsas.grant(e.addr, item.uid, item.gid, item.mode)
            .map_err(|err| {
                FamError::Allocator(format!(
                    "granting item {} ({:#x} on node {}) to uid {} gid {} mode {:04o}: {err}",
                    item.id, e.addr, e.node, item.uid, item.gid, item.mode
                ))
            })?;
    }
    Ok(())
}
