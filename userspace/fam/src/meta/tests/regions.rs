//! Regions: creation rules, lookup, permissions, resize, destroy.

use super::fake::FakeSpace;
use super::*;
use crate::meta::{InterleaveEnable, MemoryType, Redundancy, NAME_MAX};

#[test]
fn create_then_look_up_and_stat() {
    let mut s = store();
    let r = s
        .create_region(&ALICE, "data", 10 * PAGE + 1, 0o750, RegionAttrs::default())
        .unwrap();
    assert_eq!(r.id, RegionId(1));
    assert_eq!(r.size, 11 * PAGE, "rounded up to pages");
    assert_eq!((r.uid, r.gid, r.mode), (1000, 100, 0o750));
    assert_eq!(r.lenders, vec![1, 2, 3]);
    assert_eq!(r.interleave, Some(64 * KIB));
    assert_eq!(r.redundancy, Redundancy::None);
    assert_eq!(r.memory_type, MemoryType::Volatile);
    assert_eq!(r.used, 0);
    assert_eq!(s.lookup_region(&ALICE, "data").unwrap(), r);
    assert_eq!(s.stat_region(&BOB, r.id).unwrap(), r);
}

#[test]
fn region_names_are_unique() {
    let mut s = store();
    region(&mut s, "data", MIB);
    let again = s.create_region(&BOB, "data", MIB, 0o700, RegionAttrs::default());
    assert_eq!(code(again), 9, "ALREADYEXIST");
    assert_eq!(s.regions().count(), 1);
    region(&mut s, "data2", MIB);
}

#[test]
fn bad_sizes_names_and_modes_are_refused() {
    let mut s = store();
    let a = RegionAttrs::default();
    assert_eq!(
        code(s.create_region(&ALICE, "r", 0, 0o700, a)),
        4,
        "size 0: INVALID"
    );
    assert_eq!(
        code(s.create_region(&ALICE, "", 1, 0o700, a)),
        4,
        "no name: INVALID"
    );
    assert_eq!(
        code(s.create_region(&ALICE, "a\0b", 1, 0o700, a)),
        4,
        "NUL: INVALID"
    );
    assert_eq!(
        code(s.create_region(&ALICE, "r", 1, 0o4700, a)),
        4,
        "setuid: INVALID"
    );
    assert_eq!(
        code(s.create_region(&ALICE, "r", u64::MAX, 0o700, a)),
        13,
        "overflow: OUTOFRANGE"
    );
    let long = "x".repeat(NAME_MAX + 1);
    assert_eq!(
        code(s.create_region(&ALICE, &long, 1, 0o700, a)),
        23,
        "NAME_TOO_LONG"
    );
    let longest = "x".repeat(NAME_MAX);
    assert_eq!(code(s.create_region(&ALICE, &longest, 1, 0o700, a)), 0);
    assert_eq!(s.regions().count(), 1);
}

#[test]
fn attributes_unimem_lacks_are_refused() {
    let mut s = store();
    let raid = RegionAttrs {
        redundancy: Redundancy::Raid1,
        ..RegionAttrs::default()
    };
    assert_eq!(
        code(s.create_region(&ALICE, "r", MIB, 0o700, raid)),
        16,
        "UNIMPL"
    );
    let pmem = RegionAttrs {
        memory_type: MemoryType::Persistent,
        ..RegionAttrs::default()
    };
    assert_eq!(
        code(s.create_region(&ALICE, "r", MIB, 0o700, pmem)),
        7,
        "NOT_CREATED"
    );
    let flat = RegionAttrs {
        interleave: InterleaveEnable::Disable,
        memory_type: MemoryType::Volatile,
        redundancy: Redundancy::None,
    };
    let r = s.create_region(&ALICE, "r", MIB, 0o700, flat).unwrap();
    assert_eq!(r.interleave, None);
    assert_eq!(
        r.attrs(),
        RegionAttrs {
            interleave: InterleaveEnable::Disable,
            ..flat
        }
    );
}

#[test]
fn attribute_numbers_are_openfams() {
    assert_eq!(Redundancy::from_u8(2), Some(Redundancy::Raid1));
    assert_eq!(Redundancy::from_u8(4), None);
    assert_eq!(MemoryType::from_u8(2), Some(MemoryType::Persistent));
    assert_eq!(InterleaveEnable::from_u8(1), Some(InterleaveEnable::Enable));
    assert_eq!(InterleaveEnable::Disable as u32, 2);
}

#[test]
fn no_lenders_no_region() {
    let mut s = Store::new(StoreConfig::new(vec![])).unwrap();
    let r = s.create_region(&ALICE, "r", MIB, 0o700, RegionAttrs::default());
    assert_eq!(code(r), 17, "RESOURCE");
}

#[test]
fn bad_configs_are_refused() {
    let mut c = StoreConfig::new(vec![1, 2, 1]);
    assert_eq!(code(Store::new(c.clone())), 4, "lender twice");
    c.lenders = vec![1, 2];
    c.stripe = 3 * PAGE;
    assert_eq!(code(Store::new(c.clone())), 4, "not a power of two");
    c.stripe = 2048;
    assert_eq!(code(Store::new(c.clone())), 4, "below a page");
    c.stripe = 8 * PAGE;
    assert_eq!(code(Store::new(c)), 0);
}

#[test]
fn lookup_needs_owner_or_read() {
    let mut s = store();
    let id = s
        .create_region(&ALICE, "private", MIB, 0o700, RegionAttrs::default())
        .unwrap()
        .id;
    assert_eq!(code(s.lookup_region(&ALICE, "private")), 0);
    assert_eq!(code(s.lookup_region(&BOB, "private")), 2, "NOPERM");
    assert_eq!(code(s.lookup_region(&EVE, "private")), 2, "NOPERM");
    assert_eq!(code(s.stat_region(&EVE, id)), 2, "NOPERM");
    assert_eq!(code(s.lookup_region(&ROOT, "private")), 0, "admin");
    assert_eq!(code(s.lookup_region(&ALICE, "nothing")), 8, "NOTFOUND");
    assert_eq!(code(s.stat_region(&ALICE, RegionId(99))), 8, "NOTFOUND");
    s.change_region_permissions(&ALICE, id, 0o740).unwrap();
    assert_eq!(code(s.lookup_region(&BOB, "private")), 0, "group read");
    assert_eq!(code(s.lookup_region(&EVE, "private")), 2);
}

#[test]
fn only_the_owner_changes_region_permissions() {
    let mut s = store();
    let id = region(&mut s, "r", MIB);
    s.change_region_permissions(&ALICE, id, 0o777).unwrap();
    assert_eq!(code(s.change_region_permissions(&BOB, id, 0o700)), 2);
    assert_eq!(code(s.change_region_permissions(&EVE, id, 0o700)), 2);
    assert_eq!(code(s.change_region_permissions(&ALICE, id, 0o1777)), 4);
    assert_eq!(s.region(id).unwrap().mode, 0o777);
    s.change_region_permissions(&ROOT, id, 0o600).unwrap();
    assert_eq!(s.region(id).unwrap().mode, 0o600);
}

#[test]
fn resize_respects_use_and_permissions() {
    let mut s = store();
    let mut space = FakeSpace::new();
    let id = region(&mut s, "r", 10 * PAGE);
    s.allocate(&mut space, &ALICE, id, Some("a"), 4 * PAGE, 0o600)
        .unwrap();
    assert_eq!(s.region(id).unwrap().used, 4 * PAGE);
    assert_eq!(
        code(s.resize_region(&ALICE, id, 3 * PAGE)),
        13,
        "below use: OUTOFRANGE"
    );
    assert_eq!(code(s.resize_region(&ALICE, id, 0)), 4, "INVALID");
    assert_eq!(
        code(s.resize_region(&EVE, id, 20 * PAGE)),
        2,
        "mode 0o755: NOPERM"
    );
    assert_eq!(s.region(id).unwrap().size, 10 * PAGE);
    s.resize_region(&ALICE, id, 4 * PAGE - 100).unwrap();
    assert_eq!(
        s.region(id).unwrap().size,
        4 * PAGE,
        "down to exactly what is used"
    );
    assert_eq!(
        code(s.allocate(&mut space, &ALICE, id, None, 1, 0o600)),
        14,
        "full: NO_SPACE"
    );
    s.change_region_permissions(&ALICE, id, 0o757).unwrap();
    s.resize_region(&EVE, id, 8 * PAGE).unwrap();
    assert_eq!(s.region(id).unwrap().size, 8 * PAGE);
}

#[test]
fn destroy_frees_every_item_and_the_name() {
    let mut s = store();
    let mut space = FakeSpace::new();
    let id = region(&mut s, "r", 4 * MIB);
    s.change_region_permissions(&ALICE, id, 0o777).unwrap();
    s.allocate(&mut space, &ALICE, id, Some("a"), MIB, 0o600)
        .unwrap();
    s.allocate(&mut space, &BOB, id, Some("b"), 10, 0o600)
        .unwrap();
    s.allocate(&mut space, &EVE, id, None, 100 * KIB, 0o600)
        .unwrap();
    let other = region(&mut s, "other", MIB);
    let kept = s
        .allocate(&mut space, &ALICE, other, Some("a"), 10, 0o600)
        .unwrap();
    assert_eq!(space.live.len(), 3 + 1 + 2 + 1);

    s.change_region_permissions(&ALICE, id, 0o755).unwrap();
    assert_eq!(code(s.destroy_region(&mut space, &EVE, id)), 2, "NOPERM");
    assert_eq!(space.live.len(), 7, "nothing freed on refusal");
    s.destroy_region(&mut space, &ALICE, id).unwrap();

    assert_eq!(space.live.len(), 1, "only the other region's item is left");
    assert!(space.live.contains_key(&kept.extents[0].addr));
    assert_eq!(s.items().count(), 1);
    assert_eq!(code(s.lookup_region(&ALICE, "r")), 8);
    assert_eq!(code(s.lookup(&ALICE, "a", "r")), 8);
    assert_eq!(code(s.destroy_region(&mut space, &ALICE, id)), 8, "gone");
    let again = region(&mut s, "r", MIB);
    assert!(again > other, "ids are not reused: {again} after {other}");
    assert_eq!(code(s.lookup(&ALICE, "a", "r")), 8, "new region is empty");
}

#[test]
fn a_writer_may_destroy_anothers_region() {
    let mut s = store();
    let mut space = FakeSpace::new();
    let id = s
        .create_region(&ALICE, "shared", MIB, 0o770, RegionAttrs::default())
        .unwrap()
        .id;
    s.allocate(&mut space, &ALICE, id, Some("x"), 10, 0o600)
        .unwrap();
    assert_eq!(code(s.destroy_region(&mut space, &EVE, id)), 2);
    s.destroy_region(&mut space, &BOB, id).unwrap();
    assert!(space.live.is_empty());
}

#[test]
fn small_regions_are_raised_to_openfams_minimum() {
    // The default configuration, as famd runs: OpenFAM's MIN_REGION_SIZE and MIN_OBJ_SIZE.
    let mut s = Store::new(StoreConfig::new(vec![1])).unwrap();
    let mut space = FakeSpace::new();
    let r = s
        .create_region(&ALICE, "small", 8192, 0o700, RegionAttrs::default())
        .unwrap();
    assert_eq!(r.size, crate::meta::MIN_REGION_SIZE);
    // OpenFAM programs put more than 8 KiB of items in such a region.
    for k in 0..12 {
        s.allocate(&mut space, &ALICE, r.id, None, 1024, 0o600)
            .unwrap_or_else(|e| panic!("item {k}: {e}"));
    }
    s.allocate(&mut space, &ALICE, r.id, None, 1, 0o600)
        .unwrap();
    assert_eq!(s.region(r.id).unwrap().used, 12 * 1024 + 128);
    assert_eq!(
        code(s.allocate(&mut space, &ALICE, r.id, None, MIB, 0o600)),
        14,
        "past the raised size: NO_SPACE"
    );
}
