//! Owned descriptions of regions and items, made from famd's replies (which borrow from the
//! message): [`RegionInfo`], and items as the store's own [`Item`] so that [`Item::locate`]
//! maps offsets for the data path exactly as the store laid them out.

use unimem_wire::fam::{ItemDesc, MemoryType, Redundancy, RegionDesc};

use crate::meta::{Extent, Item, ItemId, RegionId};

/// A region as famd describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RegionInfo {
    pub id: u64,
    pub name: String,
    pub size: u64,
    pub uid: u32,
    pub gid: u32,
    pub mode: u32,
    pub redundancy: Redundancy,
    pub memory_type: MemoryType,
    /// Interleave stripe in bytes; 0: not interleaved.
    pub stripe: u64,
    /// Bytes its items take.
    pub used: u64,
    pub lenders: Vec<u16>,
}

impl From<&RegionDesc<'_>> for RegionInfo {
    fn from(d: &RegionDesc<'_>) -> Self {
        RegionInfo {
            id: d.id,
            name: d.name.to_string(),
            size: d.size,
            uid: d.uid,
            gid: d.gid,
            mode: d.mode,
            redundancy: d.redundancy,
            memory_type: d.memory_type,
            stripe: d.stripe,
            used: d.used,
            lenders: d.lenders.to_vec(),
        }
    }
}

pub(crate) fn extent(e: &unimem_wire::fam::Extent) -> Extent {
    Extent {
        node: e.node,
        addr: e.addr,
        len: e.len,
    }
}

/// The item a description gives, with the extents it carries (the first
/// [`MAX_EXTENTS`](unimem_wire::fam::MAX_EXTENTS)), and how many it has in all.
pub fn item_from(d: &ItemDesc<'_>) -> (Item, u32) {
    let item = Item {
        id: ItemId(d.id),
        region: RegionId(d.region),
        name: d.name.to_string(),
        size: d.size,
        uid: d.uid,
        gid: d.gid,
        mode: d.mode,
        stripe: (d.stripe != 0).then_some(d.stripe),
        extents: d.extents.iter().map(extent).collect(),
    };
    (item, d.extent_count)
}
