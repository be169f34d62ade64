//! The store: OpenFAM's control-path operations on regions and items, each checked against
//! the caller's credentials ([`perm`]), and saved before it is answered when the
//! store has a file.
//!
//! Nothing is left half-made:
//! - an operation that fails changes nothing: checks come first; memory got from the
//!   [`Space`] for an item that then cannot be recorded (the file cannot be saved) is freed;
//! - freeing (deallocate, destroy) saves the metadata *first* and frees the memory after: a
//!   crash or a failed free between the two leaks pages, which is safe, where the other order
//!   could leave the metadata naming pages already given to someone else. A failed free is
//!   logged and the operation still succeeds (the item is gone).
//!
//! Lookups answer [`FamError::NotFound`] for what does not exist and [`FamError::NoPerm`] for
//! what exists but the caller may not see, as OpenFAM does.

use std::path::{Path, PathBuf};

use unimem_wire::gsas;

use super::model::{
    InterleaveEnable, Item, ItemId, MemoryType, Redundancy, Region, RegionAttrs, RegionId,
};
use super::perm::{self, Access, Creds};
use super::persist;
use super::place::{self, Plan};
use super::space::{round_to_pages, Space};
use super::tables::Tables;
use super::NAME_MAX;
use crate::error::{FamError, Result};

/// The stripe of interleaved items unless configured: 64 KiB, 16 GSAS pages, so a stripe's
/// bulk transfers keep one lender busy for a while before the next stripe moves to another.
pub const DEFAULT_STRIPE: u64 = 64 << 10;

/// What the store is told about the cluster (not saved: regions keep their own copy).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreConfig {
    /// The nodes that lend memory, distinct. New regions are placed on all of them.
    pub lenders: Vec<u16>,
    /// Stripe of interleaved items, bytes: a power of two, at least one page.
    pub stripe: u64,
    /// Whether [`InterleaveEnable::Default`] means interleaved.
    pub interleave_by_default: bool,
    /// Smallest region size: smaller requests are raised to it, as OpenFAM raises them to
    /// its `MIN_REGION_SIZE` (1 MiB), and its programs rely on it (they make 8 KiB regions
    /// and put a dozen 1 KiB items in them).
    pub min_region_size: u64,
}

/// OpenFAM's smallest region (`MIN_REGION_SIZE` of its allocator).
pub const MIN_REGION_SIZE: u64 = 1 << 20;
/// OpenFAM's smallest item as its regions count it (`MIN_OBJ_SIZE`).
pub const MIN_ITEM_CHARGE: u64 = 128;

/// What an item of `size` bytes takes of its region's size (OpenFAM's heap gives no item less
/// than [`MIN_ITEM_CHARGE`] bytes). Its lent memory is whole pages: a grant protects pages.
pub fn charge(size: u64) -> u64 {
    size.max(MIN_ITEM_CHARGE)
}

impl StoreConfig {
    /// `lenders`, [`DEFAULT_STRIPE`], interleaving by default.
    pub fn new(lenders: Vec<u16>) -> StoreConfig {
        StoreConfig {
            lenders,
            stripe: DEFAULT_STRIPE,
            interleave_by_default: true,
            min_region_size: MIN_REGION_SIZE,
        }
    }

    fn check(&self) -> Result<()> {
        if !stripe_ok(self.stripe) {
            return Err(FamError::Invalid(format!(
                "stripe {} is not a power of two of at least {} bytes",
                self.stripe,
                gsas::PAGE_SIZE
            )));
        }
        for (i, l) in self.lenders.iter().enumerate() {
            if self.lenders[..i].contains(l) {
                return Err(FamError::Invalid(format!("lender {l} listed twice")));
            }
        }
        Ok(())
    }
}

/// Whether `stripe` is a usable stripe: a power of two, whole pages.
pub(crate) fn stripe_ok(stripe: u64) -> bool {
    stripe.is_power_of_two() && stripe >= gsas::PAGE_SIZE
}

/// The regions and items, and the file they are saved to (if any).
#[derive(Debug)]
pub struct Store {
    config: StoreConfig,
    path: Option<PathBuf>,
    t: Tables,
}

impl Store {
    /// An empty store that saves nothing (tests, tools).
    pub fn new(config: StoreConfig) -> Result<Store> {
        config.check()?;
        Ok(Store {
            config,
            path: None,
            t: Tables::new(),
        })
    }

    /// The store saved at `path`, or a new empty one saved there at once (so an unwritable
    /// place fails now, not at the first change). Its directory must exist.
    pub fn open(path: impl AsRef<Path>, config: StoreConfig) -> Result<Store> {
        config.check()?;
        let path = path.as_ref().to_path_buf();
        let t = match persist::load(&path)? {
            Some(t) => t,
            None => {
                let t = Tables::new();
                persist::save(&path, &t)?;
                t
            }
        };
        Ok(Store {
            config,
            path: Some(path),
            t,
        })
    }

    pub fn config(&self) -> &StoreConfig {
        &self.config
    }

    /// The file it is saved to.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    // ---- regions ----

    /// Creates region `name` of `size` bytes (rounded up to pages), owned by the caller.
    /// Nothing is allocated until items are. Anyone may create a region.
    pub fn create_region(
        &mut self,
        creds: &Creds,
        name: &str,
        size: u64,
        mode: u32,
        attrs: RegionAttrs,
    ) -> Result<Region> {
        check_name(name, "region")?;
        if name.is_empty() {
            return Err(FamError::Invalid("a region needs a name".into()));
        }
        let size = region_size(size, self.config.min_region_size)?;
        let mode = perm::check_mode(mode)?;
        let redundancy = match attrs.redundancy {
            Redundancy::Default | Redundancy::None => Redundancy::None,
            r => {
                return Err(FamError::Unimpl(format!(
                    "redundancy {r:?}: unimem keeps one copy"
                )))
            }
        };
        let memory_type = match attrs.memory_type {
            MemoryType::Default | MemoryType::Volatile => MemoryType::Volatile,
            MemoryType::Persistent => {
                return Err(FamError::NotCreated(
                    "persistent memory: unimem lends only RAM".into(),
                ))
            }
        };
        let interleave = match attrs.interleave {
            InterleaveEnable::Enable => true,
            InterleaveEnable::Disable => false,
            InterleaveEnable::Default => self.config.interleave_by_default,
        };
        if self.t.region_names.contains_key(name) {
            return Err(FamError::AlreadyExist(format!("region {name:?}")));
        }
        if self.config.lenders.is_empty() {
            return Err(FamError::Resource("no lender nodes configured".into()));
        }
        let id = RegionId(self.t.next_region);
        let region = Region {
            id,
            name: name.to_string(),
            size,
            uid: creds.uid,
            gid: creds.gid,
            mode,
            redundancy,
            memory_type,
            interleave: interleave.then_some(self.config.stripe),
            lenders: self.config.lenders.clone(),
            used: 0,
            next_lender: 0,
        };
        let before = self.t.clone();
        self.t.next_region += 1;
        self.t.region_names.insert(region.name.clone(), id);
        self.t.regions.insert(id, region.clone());
        self.commit(before)?;
        log::info!("created {}", perm::Owned::describe(&region));
        Ok(region)
    }

    /// Destroys a region and every item in it, whoever owns the items, and frees their
    /// memory. The region's owner, or a caller with write on it.
    pub fn destroy_region(
        &mut self,
        space: &mut dyn Space,
        creds: &Creds,
        region: RegionId,
    ) -> Result<()> {
        let r = self.region_checked(creds, region, Access::Manage)?;
        let name = r.name.clone();
        let before = self.t.clone();
        let mut extents = Vec::new();
        for id in self.t.items_of(region) {
            if let Some(item) = self.t.items.remove(&id) {
                self.t.item_names.remove(&(region, item.name));
                extents.extend(item.extents);
            }
        }
        self.t.regions.remove(&region);
        self.t.region_names.remove(&name);
        self.commit(before)?;
        place::release(space, &extents);
        log::info!("destroyed region {name:?} (id {region})");
        Ok(())
    }

    /// Sets a region's size (rounded up to pages); not below what its items take. The
    /// owner, or a caller with write on it.
    pub fn resize_region(&mut self, creds: &Creds, region: RegionId, size: u64) -> Result<()> {
        let r = self.region_checked(creds, region, Access::Manage)?;
        let size = region_size(size, self.config.min_region_size)?;
        if size < r.used {
            return Err(FamError::OutOfRange(format!(
                "{}: its items take {} bytes, more than {size}",
                perm::Owned::describe(r),
                r.used
            )));
        }
        let before = self.t.clone();
        if let Some(r) = self.t.regions.get_mut(&region) {
            r.size = size;
        }
        self.commit(before)
    }

    /// The region named `name`. Its owner, or a caller with read on it.
    pub fn lookup_region(&self, creds: &Creds, name: &str) -> Result<Region> {
        let id = self
            .t
            .region_names
            .get(name)
            .ok_or_else(|| FamError::NotFound(format!("region {name:?}")))?;
        self.region_checked(creds, *id, Access::Lookup).cloned()
    }

    /// Sets a region's mode. Its owner only.
    pub fn change_region_permissions(
        &mut self,
        creds: &Creds,
        region: RegionId,
        mode: u32,
    ) -> Result<()> {
        let mode = perm::check_mode(mode)?;
        self.region_checked(creds, region, Access::ChangePerms)?;
        let before = self.t.clone();
        if let Some(r) = self.t.regions.get_mut(&region) {
            r.mode = mode;
        }
        self.commit(before)
    }

    /// A region by id (OpenFAM's `fam_stat` on a region descriptor). Its owner, or a caller
    /// with read on it.
    pub fn stat_region(&self, creds: &Creds, region: RegionId) -> Result<Region> {
        self.region_checked(creds, region, Access::Lookup).cloned()
    }

    // ---- items ----

    /// Allocates `size` bytes in `region` as item `name` (`None` or empty: anonymous), owned
    /// by the caller with `mode`. The region's owner, or a caller with write on it. The item's
    /// page-rounded memory must fit the region's free bytes; it is placed as
    /// [`place`] says.
    pub fn allocate(
        &mut self,
        space: &mut dyn Space,
        creds: &Creds,
        region: RegionId,
        name: Option<&str>,
        size: u64,
        mode: u32,
    ) -> Result<Item> {
        let name = name.unwrap_or("");
        check_name(name, "item")?;
        let r = self.region_checked(creds, region, Access::Manage)?;
        if size == 0 {
            return Err(FamError::Invalid("an item of 0 bytes".into()));
        }
        let mode = perm::check_mode(mode)?;
        if !name.is_empty() && self.t.item_names.contains_key(&(region, name.to_string())) {
            return Err(FamError::AlreadyExist(format!(
                "item {name:?} in {}",
                perm::Owned::describe(r)
            )));
        }
        let k = r.lenders.len();
        if k == 0 {
            return Err(FamError::Resource(format!(
                "{} has no lenders",
                perm::Owned::describe(r)
            )));
        }
        // The region's quota counts the bytes items ask for (at least MIN_ITEM_CHARGE), as
        // OpenFAM's regions do (its allocator packs small items), though each item takes
        // whole pages of lent memory here (a page is what a grant protects).
        let plan = Plan::new(size, r.interleave, k).filter(|p| p.total().is_some());
        let plan = match plan {
            Some(p) if charge(size) <= r.free() => p,
            _ => {
                return Err(FamError::NoSpace(format!(
                    "{size} bytes in {}: {} of {} bytes free",
                    perm::Owned::describe(r),
                    r.free(),
                    r.size
                )))
            }
        };
        let start = r.next_lender % k;
        let order: Vec<u16> = (0..k).map(|j| r.lenders[(start + j) % k]).collect();
        let (extents, first) = place::allocate(space, &plan, &order)?;
        let item = Item {
            id: ItemId(self.t.next_item),
            region,
            name: name.to_string(),
            size,
            uid: creds.uid,
            gid: creds.gid,
            mode,
            stripe: plan.stripe,
            extents,
        };
        let before = self.t.clone();
        self.t.next_item += 1;
        if let Some(r) = self.t.regions.get_mut(&region) {
            r.used += charge(size);
            r.next_lender = (start + first + 1) % k;
        }
        if !item.is_anonymous() {
            self.t
                .item_names
                .insert((region, item.name.clone()), item.id);
        }
        self.t.items.insert(item.id, item.clone());
        if let Err(e) = self.commit(before) {
            place::release(space, &item.extents);
            return Err(e);
        }
        log::debug!("allocated {}", perm::Owned::describe(&item));
        Ok(item)
    }

    /// Deallocates an item and frees its memory. Its owner, or a caller with write on it.
    pub fn deallocate(&mut self, space: &mut dyn Space, creds: &Creds, item: ItemId) -> Result<()> {
        let i = self.item_checked(creds, item, Access::Manage)?;
        let (region, name, size) = (i.region, i.name.clone(), i.size);
        let before = self.t.clone();
        let Some(gone) = self.t.items.remove(&item) else {
            return Err(FamError::NotFound(format!("item id {item}")));
        };
        self.t.item_names.remove(&(region, name));
        if let Some(r) = self.t.regions.get_mut(&region) {
            r.used = r.used.saturating_sub(charge(size));
        }
        self.commit(before)?;
        place::release(space, &gone.extents);
        Ok(())
    }

    /// Item `item_name` of region `region_name`. The item's owner, or a caller with read on
    /// the item (the region's mode is not consulted, as in OpenFAM).
    pub fn lookup(&self, creds: &Creds, item_name: &str, region_name: &str) -> Result<Item> {
        if item_name.is_empty() {
            return Err(FamError::Invalid(
                "an anonymous item cannot be looked up by name".into(),
            ));
        }
        let region = self
            .t
            .region_names
            .get(region_name)
            .ok_or_else(|| FamError::NotFound(format!("region {region_name:?}")))?;
        let id = self
            .t
            .item_names
            .get(&(*region, item_name.to_string()))
            .ok_or_else(|| {
                FamError::NotFound(format!("item {item_name:?} in region {region_name:?}"))
            })?;
        self.item_checked(creds, *id, Access::Lookup).cloned()
    }

    /// Sets an item's mode. Its owner only.
    pub fn change_item_permissions(
        &mut self,
        creds: &Creds,
        item: ItemId,
        mode: u32,
    ) -> Result<()> {
        let mode = perm::check_mode(mode)?;
        self.item_checked(creds, item, Access::ChangePerms)?;
        let before = self.t.clone();
        if let Some(i) = self.t.items.get_mut(&item) {
            i.mode = mode;
        }
        self.commit(before)
    }

    /// An item by id (OpenFAM's `fam_stat` on an item descriptor). Its owner, or a caller with
    /// read on it.
    pub fn stat_item(&self, creds: &Creds, item: ItemId) -> Result<Item> {
        self.item_checked(creds, item, Access::Lookup).cloned()
    }

    /// An item, if `creds` may `access` it: the data path's check before reading
    /// ([`Access::Read`]) or writing ([`Access::Write`]) its bytes.
    pub fn check_item(&self, creds: &Creds, item: ItemId, access: Access) -> Result<&Item> {
        self.item_checked(creds, item, access)
    }

    // ---- unchecked views, for the daemon itself ----

    /// Every region, by id. No permission check.
    pub fn regions(&self) -> impl Iterator<Item = &Region> {
        self.t.regions.values()
    }

    /// Every item, by id. No permission check.
    pub fn items(&self) -> impl Iterator<Item = &Item> {
        self.t.items.values()
    }

    /// A region by id. No permission check.
    pub fn region(&self, id: RegionId) -> Option<&Region> {
        self.t.regions.get(&id)
    }

    /// An item by id. No permission check.
    pub fn item(&self, id: ItemId) -> Option<&Item> {
        self.t.items.get(&id)
    }

    // ---- internals ----

    fn region_checked(&self, creds: &Creds, id: RegionId, access: Access) -> Result<&Region> {
        let r = self
            .t
            .regions
            .get(&id)
            .ok_or_else(|| FamError::NotFound(format!("region id {id}")))?;
        perm::check(creds, r, access)?;
        Ok(r)
    }

    fn item_checked(&self, creds: &Creds, id: ItemId, access: Access) -> Result<&Item> {
        let i = self
            .t
            .items
            .get(&id)
            .ok_or_else(|| FamError::NotFound(format!("item id {id}")))?;
        perm::check(creds, i, access)?;
        Ok(i)
    }

    /// Saves the changed tables; if that fails, puts `before` back and fails.
    fn commit(&mut self, before: Tables) -> Result<()> {
        let Some(path) = &self.path else {
            return Ok(());
        };
        if let Err(e) = persist::save(path, &self.t) {
            self.t = before;
            return Err(e);
        }
        Ok(())
    }
}

/// A name's length and bytes ([`NAME_MAX`], no NUL: the C API passes C strings).
fn check_name(name: &str, what: &str) -> Result<()> {
    if name.len() > NAME_MAX {
        return Err(FamError::NameTooLong(format!(
            "{what} name of {} bytes (at most {NAME_MAX})",
            name.len()
        )));
    }
    if name.contains('\0') {
        return Err(FamError::Invalid(format!(
            "{what} name {name:?} holds a NUL"
        )));
    }
    Ok(())
}

/// A region size, checked and rounded up to pages.
fn region_size(size: u64, min: u64) -> Result<u64> {
    if size == 0 {
        return Err(FamError::Invalid("a region of 0 bytes".into()));
    }
    round_to_pages(size.max(min))
        .ok_or_else(|| FamError::OutOfRange(format!("region size {size} overflows in pages")))
}
