//! The metadata store: the regions and data items the metadata service daemon holds, the
//! rules OpenFAM's control path enforces on them, and their file.
//!
//! - [`perm`]: who may do what ([`Creds`], [`Access`], POSIX-like modes).
//! - [`model`]: [`Region`], [`Item`], [`Extent`] and OpenFAM's region attributes.
//! - [`space`]: the page allocator the store places items with ([`Space`]).
//! - [`place`]: how an item's bytes are spread over a region's lenders.
//! - [`store`]: the operations ([`Store`]).
//! - `tables`, `persist`: the in-memory indexes and the file they are saved to.
//!
//! Names (regions' and items') are at most [`NAME_MAX`] bytes, without NUL; an item's name
//! may be empty (an anonymous item, found only by id).

pub mod model;
pub mod perm;
mod persist;
pub mod place;
pub mod space;
pub mod store;
mod tables;

#[cfg(test)]
mod tests;

pub use model::{
    Extent, InterleaveEnable, Item, ItemId, MemoryType, Redundancy, Region, RegionAttrs, RegionId,
};
pub use perm::{Access, Creds};
pub use space::{pages_for, round_to_pages, Space};
pub use store::{charge, Store, StoreConfig, DEFAULT_STRIPE, MIN_ITEM_CHARGE, MIN_REGION_SIZE};

/// Longest region or item name, in bytes: POSIX's `NAME_MAX`, so a name fits a file name
/// should a tool export items as files. OpenFAM's own limit is its radix tree's key length.
pub const NAME_MAX: usize = 255;
