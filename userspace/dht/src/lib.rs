//! A distributed hash table on GSAS (seed 000 section 2.5): `dhtPut`, `dhtGet`, and beyond the
//! seed `dhtDelete`, over 256-bit entries (the seed's DHTNode) in two levels of hashing. The
//! first level is spread over the table's nodes in contiguous slices; a first-level entry that
//! two keys want becomes a pointer to a container, one 4 KiB page of 128 entries on the entry's
//! node. Gets are READ256s with the lock/version protocol; writers lock the first-level entry.
//! See `docs/DHT.md`.
//!
//! ```no_run
//! let g = gsas::Gsas::open()?;
//! let t = dht::Dht::create(g, &[0, 1, 2, 3], 10_000, 0)?;
//! t.put(7, 42)?;
//! assert_eq!(t.get(7)?, Some(42));
//! // another thread or process of the tree: dht::Dht::open(gsas::Gsas::open()?, t.root())
//! t.destroy()?;
//! # Ok::<(), dht::Error>(())
//! ```
//!
//! The C library (`include/dht.h`, `libdht.so`/`libdht.a`) is [`capi`].

pub mod capi;
pub mod check;
pub mod cli;
pub mod entry;
mod error;
pub mod hash;
pub mod layout;
mod table;

#[cfg(test)]
mod fake;
#[cfg(test)]
mod tests;

pub use error::{Error, Result};
pub use layout::Layout;
pub use table::{Config, Destroyed, Dht, OpStats, Scan, INVALID};
