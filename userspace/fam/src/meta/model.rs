//! What the store holds: regions, their attributes, and data items with the extents of lent
//! memory their bytes are in. Plain data (serde) so the daemon can save and send it.

use std::fmt;

use serde::{Deserialize, Serialize};
use unimem_wire::gsas;

use super::perm::Owned;

/// A region's id: unique in the store, never reused (the store's counter is saved with it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct RegionId(pub u64);

/// An item's id: unique in the store (not only in its region), never reused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ItemId(pub u64);

impl fmt::Display for RegionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl fmt::Display for ItemId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// OpenFAM's attribute enums, with its C numbers, defined once in the wire crate (the famd
/// protocol carries them). unimem keeps one copy and lends RAM: `Redundancy::Default` resolves
/// to `None` and the RAID levels are refused (`FAM_ERR_UNIMPL`); `MemoryType::Default`
/// resolves to `Volatile` and `Persistent` is refused (`FAM_ERR_NOT_CREATED`);
/// `InterleaveEnable::Default` resolves to the store's
/// [`StoreConfig::interleave_by_default`](super::StoreConfig::interleave_by_default).
pub use unimem_wire::fam::{Interleave as InterleaveEnable, MemoryType, Redundancy};

/// The attributes in the store's file: their C numbers (`attr_code` on each field).
mod attr_code {
    use serde::{de::Error, Deserialize, Deserializer, Serializer};

    use super::{InterleaveEnable, MemoryType, Redundancy};

    /// An attribute enum and its C number.
    pub trait Code: Copy + Sized {
        const WHAT: &'static str;
        fn code(self) -> u8;
        fn from_code(code: u8) -> Option<Self>;
    }

    impl Code for Redundancy {
        const WHAT: &'static str = "redundancy level";
        fn code(self) -> u8 {
            self as u8
        }
        fn from_code(code: u8) -> Option<Self> {
            Self::from_u8(code)
        }
    }

    impl Code for MemoryType {
        const WHAT: &'static str = "memory type";
        fn code(self) -> u8 {
            self as u8
        }
        fn from_code(code: u8) -> Option<Self> {
            Self::from_u8(code)
        }
    }

    impl Code for InterleaveEnable {
        const WHAT: &'static str = "interleave setting";
        fn code(self) -> u8 {
            self as u8
        }
        fn from_code(code: u8) -> Option<Self> {
            Self::from_u8(code)
        }
    }

    pub fn serialize<T: Code, S: Serializer>(v: &T, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u8(v.code())
    }

    pub fn deserialize<'de, T: Code, D: Deserializer<'de>>(d: D) -> Result<T, D::Error> {
        let code = u8::deserialize(d)?;
        T::from_code(code).ok_or_else(|| D::Error::custom(format!("no {} {code}", T::WHAT)))
    }
}

/// OpenFAM's `Fam_Region_Attributes` (less its permission level, which unimem does not
/// have: items always carry their own mode). `Default::default()` is all defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct RegionAttrs {
    #[serde(with = "attr_code")]
    pub redundancy: Redundancy,
    #[serde(with = "attr_code")]
    pub memory_type: MemoryType,
    #[serde(with = "attr_code")]
    pub interleave: InterleaveEnable,
}

/// A region: a name, a quota of bytes its items' memory may take, an owner and mode, and the
/// lender nodes its items are placed on. Creating it allocates nothing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Region {
    pub id: RegionId,
    pub name: String,
    /// Bytes, a multiple of the page size (the requested size rounded up).
    pub size: u64,
    pub uid: u32,
    pub gid: u32,
    pub mode: u32,
    /// Resolved: never `Default`.
    #[serde(with = "attr_code")]
    pub redundancy: Redundancy,
    /// Resolved: never `Default`.
    #[serde(with = "attr_code")]
    pub memory_type: MemoryType,
    /// The stripe in bytes when items larger than one stripe are interleaved over the
    /// lenders; `None`: each item on one lender.
    pub interleave: Option<u64>,
    /// The nodes lending memory to this region, distinct; the store's lenders when the region
    /// was made, so adding nodes later moves nothing.
    pub lenders: Vec<u16>,
    /// Bytes its items hold (the sizes they were allocated with), at most `size`.
    pub used: u64,
    /// Index in `lenders` of the lender the next item starts on (round-robin placement, see
    /// [`place`](super::place)).
    #[serde(default)]
    pub next_lender: usize,
}

impl Region {
    /// Bytes of the quota not used by items.
    pub fn free(&self) -> u64 {
        self.size.saturating_sub(self.used)
    }

    /// The attributes it was made with, as resolved.
    pub fn attrs(&self) -> RegionAttrs {
        RegionAttrs {
            redundancy: self.redundancy,
            memory_type: self.memory_type,
            interleave: if self.interleave.is_some() {
                InterleaveEnable::Enable
            } else {
                InterleaveEnable::Disable
            },
        }
    }
}

/// Pages lent by one node: `len` bytes from GSAS address `addr` (page-aligned, on `node`),
/// one allocation of the [`Space`](super::Space).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Extent {
    pub node: u16,
    pub addr: u64,
    /// Bytes, a whole number of pages.
    pub len: u64,
}

/// A data item: `size` bytes of a region, in extents on the region's lenders.
///
/// Layout ([`Item::locate`] reads it):
/// - `stripe: None`: the item's bytes are the extents' bytes in order (one lender; several
///   extents when it is larger than one allocation may be).
/// - `stripe: Some(s)`: stripe *i* (bytes `i*s .. (i+1)*s`) is on the *(i mod n)*-th of the
///   *n* distinct nodes of `extents`, in their order of first appearance; a node's extents, in
///   order, hold its stripes back to back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Item {
    pub id: ItemId,
    pub region: RegionId,
    /// Empty for an anonymous item.
    pub name: String,
    /// Bytes asked for.
    pub size: u64,
    pub uid: u32,
    pub gid: u32,
    pub mode: u32,
    pub stripe: Option<u64>,
    pub extents: Vec<Extent>,
}

impl Item {
    /// Whether it has no name (found only by id).
    pub fn is_anonymous(&self) -> bool {
        self.name.is_empty()
    }

    /// Bytes of lent memory it holds (what it counts against its region).
    pub fn allocated(&self) -> u64 {
        self.extents.iter().map(|e| e.len).sum()
    }

    /// The distinct nodes of its extents, in order of first appearance: its stripes' nodes.
    pub fn nodes(&self) -> Vec<u16> {
        let mut nodes = Vec::new();
        for e in &self.extents {
            if !nodes.contains(&e.node) {
                nodes.push(e.node);
            }
        }
        nodes
    }

    /// Where byte `offset` of the item is: its GSAS address, and how many of the item's bytes
    /// follow it there contiguously (to the end of its stripe, extent or item). `None` past
    /// the end, or if the extents do not fit the layout (a broken item).
    pub fn locate(&self, offset: u64) -> Option<(u64, u64)> {
        if offset >= self.size {
            return None;
        }
        let left = self.size - offset;
        let Some(stripe) = self.stripe else {
            let (addr, run) = walk(self.extents.iter(), offset)?;
            return Some((addr, run.min(left)));
        };
        let nodes = self.nodes();
        let n = nodes.len() as u64;
        if n == 0 || stripe == 0 {
            return None;
        }
        let index = offset / stripe;
        let within = offset % stripe;
        let node = nodes[(index % n) as usize];
        let at = (index / n) * stripe + within;
        let (addr, run) = walk(self.extents.iter().filter(|e| e.node == node), at)?;
        Some((addr, run.min(stripe - within).min(left)))
    }
}

/// Byte `at` of the concatenation of `extents`: its address and the bytes left in its extent.
fn walk<'a>(extents: impl Iterator<Item = &'a Extent>, mut at: u64) -> Option<(u64, u64)> {
    for e in extents {
        if at < e.len {
            return Some((e.addr + at, e.len - at));
        }
        at -= e.len;
    }
    None
}

impl Owned for Region {
    fn owner(&self) -> (u32, u32) {
        (self.uid, self.gid)
    }

    fn mode(&self) -> u32 {
        self.mode
    }

    fn describe(&self) -> String {
        format!("region {:?} (id {})", self.name, self.id)
    }
}

impl Owned for Item {
    fn owner(&self) -> (u32, u32) {
        (self.uid, self.gid)
    }

    fn mode(&self) -> u32 {
        self.mode
    }

    fn describe(&self) -> String {
        if self.is_anonymous() {
            format!("anonymous item (id {}) of region {}", self.id, self.region)
        } else {
            format!(
                "item {:?} (id {}) of region {}",
                self.name, self.id, self.region
            )
        }
    }
}

/// Whether an extent is sound: a positive whole number of pages at a page-aligned address of
/// its node.
pub(crate) fn extent_ok(e: &Extent) -> bool {
    e.len > 0
        && e.len % gsas::PAGE_SIZE == 0
        && gsas::node_of(e.addr) == e.node
        && gsas::offset_of(e.addr) % gsas::PAGE_SIZE == 0
}
