//! The store's state: regions and items by id, the name indexes, and the id counters. Cheap
//! enough to clone that an operation snapshots it and puts it back if saving fails.

use std::collections::{BTreeMap, HashMap};

use super::model::{extent_ok, Item, ItemId, Region, RegionId};
use super::place::Plan;
use super::NAME_MAX;

#[derive(Debug, Clone, Default)]
pub(crate) struct Tables {
    pub regions: BTreeMap<RegionId, Region>,
    pub items: BTreeMap<ItemId, Item>,
    pub region_names: HashMap<String, RegionId>,
    /// Named items only.
    pub item_names: HashMap<(RegionId, String), ItemId>,
    /// The next ids to give: above every id ever given, so never reused.
    pub next_region: u64,
    pub next_item: u64,
}

impl Tables {
    pub fn new() -> Tables {
        Tables {
            next_region: 1,
            next_item: 1,
            ..Tables::default()
        }
    }

    /// Tables from saved parts, checked for everything the store's operations keep true: a
    /// file edited or damaged into something the store could not have made is refused, not
    /// served. The error says what is wrong.
    pub fn from_parts(
        next_region: u64,
        next_item: u64,
        regions: Vec<Region>,
        items: Vec<Item>,
    ) -> Result<Tables, String> {
        let mut t = Tables {
            next_region,
            next_item,
            ..Tables::default()
        };
        for r in regions {
            check_region(&r)?;
            if r.id.0 == 0 || r.id.0 >= next_region {
                return Err(format!(
                    "region id {} not below next id {next_region}",
                    r.id
                ));
            }
            if t.region_names.insert(r.name.clone(), r.id).is_some() {
                return Err(format!("region name {:?} twice", r.name));
            }
            let id = r.id;
            if t.regions.insert(id, Region { used: 0, ..r }).is_some() {
                return Err(format!("region id {id} twice"));
            }
        }
        let mut used: HashMap<RegionId, u64> = HashMap::new();
        for i in items {
            if i.id.0 == 0 || i.id.0 >= next_item {
                return Err(format!("item id {} not below next id {next_item}", i.id));
            }
            let region = t
                .regions
                .get(&i.region)
                .ok_or_else(|| format!("item {} in missing region {}", i.id, i.region))?;
            check_item(&i, region)?;
            if !i.is_anonymous()
                && t.item_names
                    .insert((i.region, i.name.clone()), i.id)
                    .is_some()
            {
                return Err(format!(
                    "item name {:?} twice in region {}",
                    i.name, i.region
                ));
            }
            *used.entry(i.region).or_default() += super::store::charge(i.size);
            let id = i.id;
            if t.items.insert(id, i).is_some() {
                return Err(format!("item id {id} twice"));
            }
        }
        t.with_used(&used)
    }

    /// Sets each region's `used` from its items, refusing a region they overfill.
    fn with_used(mut self, used: &HashMap<RegionId, u64>) -> Result<Tables, String> {
        for (id, r) in self.regions.iter_mut() {
            r.used = used.get(id).copied().unwrap_or(0);
            if r.used > r.size {
                return Err(format!(
                    "region {id}: items take {} bytes of {}",
                    r.used, r.size
                ));
            }
        }
        Ok(self)
    }

    /// The ids of a region's items.
    pub fn items_of(&self, region: RegionId) -> Vec<ItemId> {
        self.items
            .values()
            .filter(|i| i.region == region)
            .map(|i| i.id)
            .collect()
    }
}

fn check_region(r: &Region) -> Result<(), String> {
    let what = format!("region {}", r.id);
    if r.name.is_empty() || r.name.len() > NAME_MAX || r.name.contains('\0') {
        return Err(format!("{what}: bad name {:?}", r.name));
    }
    if r.size == 0 || r.size % unimem_wire::gsas::PAGE_SIZE != 0 {
        return Err(format!(
            "{what}: size {} not a positive number of pages",
            r.size
        ));
    }
    if r.mode & !super::perm::MODE_MASK != 0 {
        return Err(format!("{what}: mode {:#o}", r.mode));
    }
    if r.lenders.is_empty() {
        return Err(format!("{what}: no lenders"));
    }
    for (i, l) in r.lenders.iter().enumerate() {
        if r.lenders[..i].contains(l) {
            return Err(format!("{what}: lender {l} twice"));
        }
    }
    if r.next_lender >= r.lenders.len() {
        return Err(format!(
            "{what}: lender cursor {} out of range",
            r.next_lender
        ));
    }
    if let Some(s) = r.interleave {
        if !super::store::stripe_ok(s) {
            return Err(format!("{what}: stripe {s}"));
        }
    }
    Ok(())
}

fn check_item(i: &Item, region: &Region) -> Result<(), String> {
    let what = format!("item {}", i.id);
    if i.name.len() > NAME_MAX || i.name.contains('\0') {
        return Err(format!("{what}: bad name {:?}", i.name));
    }
    if i.mode & !super::perm::MODE_MASK != 0 {
        return Err(format!("{what}: mode {:#o}", i.mode));
    }
    if i.size == 0 || i.extents.is_empty() {
        return Err(format!("{what}: empty"));
    }
    for e in &i.extents {
        if !extent_ok(e) || !region.lenders.contains(&e.node) {
            return Err(format!("{what}: bad extent {e:?}"));
        }
    }
    if let Some(s) = i.stripe {
        if !super::store::stripe_ok(s) {
            return Err(format!("{what}: stripe {s}"));
        }
    }
    // Every byte must be somewhere: each stripe node holds at least its share.
    let held = match i.stripe {
        None => i.allocated() >= i.size,
        Some(s) => {
            let nodes = i.nodes();
            match Plan::new(i.size, Some(s), nodes.len()) {
                Some(plan) if plan.stripe == Some(s) && plan.shares.len() == nodes.len() => {
                    nodes.iter().zip(&plan.shares).all(|(node, share)| {
                        let on: u64 = i
                            .extents
                            .iter()
                            .filter(|e| e.node == *node)
                            .map(|e| e.len)
                            .sum();
                        on >= *share
                    })
                }
                _ => false,
            }
        }
    };
    if !held {
        return Err(format!("{what}: extents do not hold its {} bytes", i.size));
    }
    Ok(())
}
