//! One control request: checked against the store with the caller's sealed identity, applied,
//! and answered. Pure over the store and the page allocator, so the unit tests drive it with a
//! fake allocator; `listen.rs` does the mailbox side.

use crate::backup::Backups;
use fam::meta::{Access, Creds, Item, ItemId, Region, RegionAttrs, RegionId, Space, Store};
use fam::FamError;
use unimem_wire::fam::{
    Extent as WireExtent, ExtentPage, Extents, ItemDesc, Lenders, RegionDesc, Reply, Request,
    Response, MAX_EXTENTS, MAX_TEXT, VERSION,
};

/// OpenFAM's `FAM_ERR_UNKNOWN`: for a failure of famd itself.
const FAM_ERR_UNKNOWN: i32 = 1;

/// What the handler needs besides the store: pages, grants on them, and their bytes (for
/// backups).
pub trait Pages: Space {
    /// Sets the grant of every extent of `item` to its owner, group and mode.
    fn grant(&mut self, item: &Item) -> fam::Result<()>;
    /// Reads `buf.len()` bytes at GSAS address `addr`.
    fn read(&mut self, addr: u64, buf: &mut [u8]) -> fam::Result<()>;
    /// Writes `data` at GSAS address `addr`.
    fn write(&mut self, addr: u64, data: &[u8]) -> fam::Result<()>;
}

/// Handles `req` from `creds` and writes the response, answering request `id`, to `out`;
/// returns its length.
pub fn handle(
    store: &mut Store,
    pages: &mut dyn Pages,
    backups: &Backups,
    creds: &Creds,
    id: u32,
    req: &Request<'_>,
    out: &mut [u8],
) -> usize {
    let opcode = req.op();
    let result = apply(store, pages, backups, creds, req);
    let encoded = match &result {
        Ok(Answer::Done) => Response::ok(opcode, Reply::Done).encode(id, out),
        Ok(Answer::Hello) => {
            Response::ok(opcode, Reply::Hello { version: VERSION }).encode(id, out)
        }
        Ok(Answer::Region(r)) => {
            Response::ok(opcode, Reply::Region(region_desc(r))).encode(id, out)
        }
        Ok(Answer::Item(i)) => Response::ok(opcode, Reply::Item(item_desc(i))).encode(id, out),
        Ok(Answer::Extents(p)) => Response::ok(opcode, Reply::Extents(**p)).encode(id, out),
        Ok(Answer::Text(t)) => Response::ok(opcode, Reply::Text(t)).encode(id, out),
        Err(e) => {
            let msg = e.to_string();
            Response::err(opcode, e.code(), &msg).encode(id, out)
        }
    };
    // Every reply fits MAX_RESPONSE_LEN by construction (names are NAME_MAX, extents
    // MAX_EXTENTS), so this is a bug of ours: answer it as one rather than not at all.
    encoded.unwrap_or_else(|e| {
        log::error!("famd: cannot encode the answer to {req:?}: {e:?}");
        Response::err(opcode, FAM_ERR_UNKNOWN, "famd could not encode its answer")
            .encode(id, out)
            .unwrap_or(0)
    })
}

enum Answer {
    Done,
    Hello,
    Region(Region),
    Item(Item),
    Extents(Box<ExtentPage>),
    Text(String),
}

fn apply(
    store: &mut Store,
    pages: &mut dyn Pages,
    backups: &Backups,
    creds: &Creds,
    req: &Request<'_>,
) -> fam::Result<Answer> {
    Ok(match *req {
        Request::Hello { version } => {
            if version != VERSION {
                return Err(FamError::Invalid(format!(
                    "protocol version {version}; famd speaks {VERSION} (library and daemon of different builds?)"
                )));
            }
            Answer::Hello
        }
        Request::CreateRegion {
            name,
            size,
            mode,
            redundancy,
            memory_type,
            interleave,
        } => {
            let attrs = RegionAttrs {
                redundancy,
                memory_type,
                interleave,
            };
            Answer::Region(store.create_region(creds, name, size, mode, attrs)?)
        }
        Request::DestroyRegion { region } => {
            store.destroy_region(pages, creds, RegionId(region))?;
            Answer::Done
        }
        Request::ResizeRegion { region, size } => {
            store.resize_region(creds, RegionId(region), size)?;
            Answer::Done
        }
        Request::LookupRegion { name } => Answer::Region(store.lookup_region(creds, name)?),
        Request::ChangeRegionPermissions { region, mode } => {
            store.change_region_permissions(creds, RegionId(region), mode)?;
            Answer::Done
        }
        Request::StatRegion { region } => {
            Answer::Region(store.stat_region(creds, RegionId(region))?)
        }
        Request::Allocate {
            region,
            name,
            size,
            mode,
        } => {
            let name = (!name.is_empty()).then_some(name);
            let item = store.allocate(pages, creds, RegionId(region), name, size, mode)?;
            if let Err(e) = pages.grant(&item) {
                // Nobody could use the item: undo it (as its owner, who may always).
                if let Err(undo) = store.deallocate(pages, creds, item.id) {
                    log::error!(
                        "famd: item {} could not be granted nor undone: {undo}",
                        item.id
                    );
                }
                return Err(e);
            }
            Answer::Item(item)
        }
        Request::Deallocate { item } => {
            store.deallocate(pages, creds, ItemId(item))?;
            Answer::Done
        }
        Request::Lookup { item, region } => Answer::Item(store.lookup(creds, item, region)?),
        Request::ChangeItemPermissions { item, mode } => {
            let id = ItemId(item);
            let old = store.stat_item(creds, id)?.mode;
            store.change_item_permissions(creds, id, mode)?;
            let changed = store.stat_item(creds, id).or_else(|_| {
                // The new mode may deny the owner a lookup (0077): read it as admin.
                store.stat_item(&Creds::admin(creds.uid, creds.gid), id)
            })?;
            if let Err(e) = pages.grant(&changed) {
                // The homes still check the old mode: keep the store saying so.
                let admin = Creds::admin(creds.uid, creds.gid);
                if let Err(undo) = store.change_item_permissions(&admin, id, old) {
                    log::error!("famd: item {id}: mode change half done, undo failed: {undo}");
                }
                return Err(e);
            }
            Answer::Done
        }
        Request::StatItem { item } => Answer::Item(store.stat_item(creds, ItemId(item))?),
        Request::Backup { item, name } => {
            let i = store.stat_item(creds, ItemId(item))?;
            let region = store
                .region(i.region)
                .map(|r| r.name.clone())
                .unwrap_or_default();
            backups.create(pages, creds, &i, &region, name)?;
            Answer::Done
        }
        Request::Restore { name, item } => {
            let i = store
                .check_item(creds, ItemId(item), Access::Write)?
                .clone();
            backups.restore(pages, creds, name, &i)?;
            Answer::Done
        }
        Request::RestoreNew {
            name,
            region,
            item,
            mode,
        } => {
            let size = backups.meta(creds, name)?.size;
            let item_name = (!item.is_empty()).then_some(item);
            let new = store.allocate(pages, creds, RegionId(region), item_name, size, mode)?;
            let filled = pages
                .grant(&new)
                .and_then(|_| backups.restore(pages, creds, name, &new));
            if let Err(e) = filled {
                if let Err(undo) = store.deallocate(pages, creds, new.id) {
                    log::error!("famd: restored item {} could not be undone: {undo}", new.id);
                }
                return Err(e);
            }
            Answer::Item(new)
        }
        Request::DeleteBackup { name } => {
            backups.delete(creds, name)?;
            Answer::Done
        }
        Request::ListBackup { name } => Answer::Text(backups.list(creds, name, MAX_TEXT)?),
        Request::ItemExtents { item, first } => {
            let i = store.stat_item(creds, ItemId(item))?;
            let total = i.extents.len();
            let first_ix = first as usize;
            if first_ix >= total {
                return Err(FamError::OutOfRange(format!(
                    "item {item} has {total} extents, none from {first}"
                )));
            }
            Answer::Extents(Box::new(ExtentPage {
                total: total as u32,
                first,
                extents: wire_extents(&i.extents[first_ix..]),
            }))
        }
    })
}

/// Up to [`MAX_EXTENTS`] extents from the front of `extents`.
fn wire_extents(extents: &[fam::meta::Extent]) -> Extents {
    let mut out = Extents::new();
    for e in extents.iter().take(MAX_EXTENTS) {
        out.push(WireExtent {
            node: e.node,
            addr: e.addr,
            len: e.len,
        });
    }
    out
}

fn region_desc(r: &Region) -> RegionDesc<'_> {
    RegionDesc {
        id: r.id.0,
        name: &r.name,
        size: r.size,
        uid: r.uid,
        gid: r.gid,
        mode: r.mode,
        redundancy: r.redundancy,
        memory_type: r.memory_type,
        stripe: r.interleave.unwrap_or(0),
        used: r.used,
        lenders: Lenders::prefix(&r.lenders),
    }
}

fn item_desc(i: &Item) -> ItemDesc<'_> {
    ItemDesc {
        id: i.id.0,
        region: i.region.0,
        name: &i.name,
        size: i.size,
        uid: i.uid,
        gid: i.gid,
        mode: i.mode,
        stripe: i.stripe.unwrap_or(0),
        extent_count: i.extents.len() as u32,
        extents: wire_extents(&i.extents),
    }
}

#[cfg(test)]
mod tests;
