//! The OpenFAM API over unimem: named **regions** of fabric-attached memory, holding named or
//! anonymous **data items**, whose bytes live in GSAS pages lent by the cluster's nodes
//! (docs/GSAS.md).
//!
//! - [`client`]: the client library, a [`client::Client`] per initialised instance: control
//!   calls as requests to the metadata service `famd`, the data path straight to GSAS.
//! - [`capi`]: the C ABI of `include/ABI.md` over the client (`libunimem_fam.so` is built
//!   from it by the `unimem-fam` crate in `capi/`).
//! - [`meta`]: the metadata store famd keeps (regions, items, where each item's bytes are,
//!   who may do what); it does no I/O to the cluster: the page allocator is the
//!   [`meta::Space`] trait, which the daemon implements over GSAS.
//! - [`FamError`]: the errors, with OpenFAM's `Fam_Error` numbers.
//!
//! ```
//! use fam::meta::{Creds, RegionAttrs, Space, Store, StoreConfig};
//! # struct Pages(u64);
//! # impl Space for Pages {
//! #     fn alloc(&mut self, node: u16, pages: u64) -> Result<u64, fam::FamError> {
//! #         self.0 += pages * 4096;
//! #         Ok(unimem_wire::gsas::addr(node, self.0))
//! #     }
//! #     fn free(&mut self, _addr: u64) -> Result<(), fam::FamError> { Ok(()) }
//! # }
//! # let mut space = Pages(0);
//! let mut store = Store::new(StoreConfig::new(vec![1, 2, 3]))?;
//! let alice = Creds::user(1000, 1000);
//! let r = store.create_region(&alice, "data", 1 << 20, 0o750, RegionAttrs::default())?;
//! let item = store.allocate(&mut space, &alice, r.id, Some("table"), 200 << 10, 0o640)?;
//! assert_eq!(item.extents.len(), 3); // striped over the three lenders
//! assert_eq!(store.lookup(&alice, "table", "data")?.id, item.id);
//! # Ok::<(), fam::FamError>(())
//! ```

pub mod capi;
pub mod client;
mod error;
pub mod meta;

pub use error::{code, FamError, Result};
