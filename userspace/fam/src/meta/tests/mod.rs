//! The store's tests, over a fake [`Space`](super::Space) that records what it lent.

mod fake;
mod items;
mod layout;
mod persist;
mod regions;

use super::{Creds, RegionAttrs, RegionId, Store, StoreConfig};

/// Owner of most test objects.
const ALICE: Creds = Creds {
    uid: 1000,
    gid: 100,
    admin: false,
};
/// Same group as Alice.
const BOB: Creds = Creds {
    uid: 1001,
    gid: 100,
    admin: false,
};
/// Another group.
const EVE: Creds = Creds {
    uid: 2000,
    gid: 200,
    admin: false,
};
const ROOT: Creds = Creds {
    uid: 0,
    gid: 0,
    admin: true,
};

const PAGE: u64 = 4096;
const KIB: u64 = 1024;
const MIB: u64 = 1024 * KIB;

/// An in-memory store over lenders 1, 2, 3 with 64 KiB stripes.
/// A store whose regions may be as small as a page (the tests' sizes), not OpenFAM's 1 MiB.
fn store() -> Store {
    let mut config = StoreConfig::new(vec![1, 2, 3]);
    config.min_region_size = PAGE;
    match Store::new(config) {
        Ok(s) => s,
        Err(e) => panic!("store: {e}"),
    }
}

/// Alice's region `name` of `size` bytes, mode 0o755, default attributes.
fn region(s: &mut Store, name: &str, size: u64) -> RegionId {
    s.create_region(&ALICE, name, size, 0o755, RegionAttrs::default())
        .map(|r| r.id)
        .unwrap_or_else(|e| panic!("create_region {name}: {e}"))
}

/// The OpenFAM code of a result's error, or 0 if it succeeded.
fn code<T>(r: crate::Result<T>) -> i32 {
    r.err().map_or(0, |e| e.code())
}
