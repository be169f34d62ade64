//! Items: allocation rules, names, permissions, quota, rollback.

use super::fake::FakeSpace;
use super::*;
use crate::meta::{Access, ItemId, NAME_MAX};
use crate::FamError;

#[test]
fn allocate_then_look_up_and_stat() {
    let mut s = store();
    let mut space = FakeSpace::new();
    let r = region(&mut s, "r", MIB);
    assert_eq!(
        code(s.allocate(&mut space, &BOB, r, Some("x"), 100, 0o640)),
        2,
        "0o755"
    );
    s.change_region_permissions(&ALICE, r, 0o775).unwrap();
    let i = s
        .allocate(&mut space, &BOB, r, Some("x"), 100, 0o640)
        .unwrap();
    assert_eq!(i.id, ItemId(1));
    assert_eq!(
        (i.region, i.size, i.uid, i.gid, i.mode),
        (r, 100, 1001, 100, 0o640)
    );
    assert_eq!(i.name, "x");
    assert_eq!(i.stripe, None, "one stripe or less: one lender");
    assert_eq!(i.extents.len(), 1);
    assert_eq!(i.extents[0].len, PAGE);
    assert_eq!(s.lookup(&BOB, "x", "r").unwrap(), i);
    assert_eq!(s.stat_item(&ALICE, i.id).unwrap(), i, "group read");
    assert_eq!(
        s.region(r).unwrap().used,
        128,
        "the quota counts bytes asked for, 128 at least (OpenFAM's MIN_OBJ_SIZE)"
    );
}

#[test]
fn item_names_are_unique_within_a_region() {
    let mut s = store();
    let mut space = FakeSpace::new();
    let r1 = region(&mut s, "r1", MIB);
    let r2 = region(&mut s, "r2", MIB);
    s.allocate(&mut space, &ALICE, r1, Some("x"), 10, 0o600)
        .unwrap();
    let clash = s.allocate(&mut space, &ALICE, r1, Some("x"), 10, 0o600);
    assert_eq!(code(clash), 9, "ALREADYEXIST");
    assert_eq!(space.calls.len(), 1, "refused before allocating");
    s.allocate(&mut space, &ALICE, r2, Some("x"), 10, 0o600)
        .unwrap();
    assert_ne!(
        s.lookup(&ALICE, "x", "r1").unwrap().id,
        s.lookup(&ALICE, "x", "r2").unwrap().id
    );
}

#[test]
fn anonymous_items_share_the_empty_name() {
    let mut s = store();
    let mut space = FakeSpace::new();
    let r = region(&mut s, "r", MIB);
    let a = s.allocate(&mut space, &ALICE, r, None, 10, 0o600).unwrap();
    let b = s
        .allocate(&mut space, &ALICE, r, Some(""), 10, 0o600)
        .unwrap();
    assert!(a.is_anonymous() && b.is_anonymous());
    assert_ne!(a.id, b.id);
    assert_eq!(code(s.lookup(&ALICE, "", "r")), 4, "INVALID");
    assert_eq!(s.stat_item(&ALICE, b.id).unwrap(), b);
    s.deallocate(&mut space, &ALICE, a.id).unwrap();
    assert_eq!(s.stat_item(&ALICE, b.id).unwrap(), b, "the other stays");
}

#[test]
fn bad_items_are_refused_before_allocating() {
    let mut s = store();
    let mut space = FakeSpace::new();
    let r = region(&mut s, "r", MIB);
    assert_eq!(
        code(s.allocate(&mut space, &ALICE, r, Some("x"), 0, 0o600)),
        4
    );
    assert_eq!(
        code(s.allocate(&mut space, &ALICE, r, Some("x"), 1, 0o1600)),
        4
    );
    let long = "y".repeat(NAME_MAX + 1);
    assert_eq!(
        code(s.allocate(&mut space, &ALICE, r, Some(&long), 1, 0o600)),
        23
    );
    assert_eq!(
        code(s.allocate(&mut space, &ALICE, RegionId(9), None, 1, 0o600)),
        8
    );
    assert!(space.calls.is_empty());
    assert_eq!(s.items().count(), 0);
}

#[test]
fn allocating_needs_owner_or_write_on_the_region() {
    let mut s = store();
    let mut space = FakeSpace::new();
    let r = s
        .create_region(&ALICE, "r", MIB, 0o570, RegionAttrs::default())
        .unwrap()
        .id;
    assert_eq!(
        code(s.allocate(&mut space, &ALICE, r, None, 1, 0o600)),
        0,
        "owner"
    );
    assert_eq!(
        code(s.allocate(&mut space, &BOB, r, None, 1, 0o600)),
        0,
        "group w"
    );
    assert_eq!(
        code(s.allocate(&mut space, &EVE, r, None, 1, 0o600)),
        2,
        "NOPERM"
    );
    assert_eq!(
        code(s.allocate(&mut space, &ROOT, r, None, 1, 0o600)),
        0,
        "admin"
    );
    assert_eq!(space.calls.len(), 3);
}

#[test]
fn another_users_item_is_theirs() {
    let mut s = store();
    let mut space = FakeSpace::new();
    let r = s
        .create_region(&ALICE, "r", MIB, 0o777, RegionAttrs::default())
        .unwrap()
        .id;
    let mine = s
        .allocate(&mut space, &ALICE, r, Some("mine"), 10, 0o600)
        .unwrap();
    assert_eq!(code(s.lookup(&EVE, "mine", "r")), 2, "NOPERM");
    assert_eq!(code(s.lookup(&BOB, "mine", "r")), 2, "NOPERM");
    assert_eq!(code(s.stat_item(&EVE, mine.id)), 2);
    assert_eq!(code(s.check_item(&EVE, mine.id, Access::Read)), 2);
    assert_eq!(code(s.deallocate(&mut space, &EVE, mine.id)), 2);
    assert_eq!(code(s.change_item_permissions(&EVE, mine.id, 0o666)), 2);
    assert_eq!(space.live.len(), 1, "still there");

    s.change_item_permissions(&ALICE, mine.id, 0o644).unwrap();
    assert_eq!(s.lookup(&EVE, "mine", "r").unwrap().mode, 0o644);
    assert_eq!(code(s.check_item(&EVE, mine.id, Access::Read)), 0);
    assert_eq!(code(s.check_item(&EVE, mine.id, Access::Write)), 2);
    assert_eq!(code(s.deallocate(&mut space, &EVE, mine.id)), 2, "no write");
    assert_eq!(
        code(s.change_item_permissions(&EVE, mine.id, 0o666)),
        2,
        "not owner"
    );

    s.change_item_permissions(&ALICE, mine.id, 0o666).unwrap();
    assert_eq!(code(s.check_item(&EVE, mine.id, Access::Write)), 0);
    s.deallocate(&mut space, &EVE, mine.id).unwrap();
    assert!(space.live.is_empty());
    assert_eq!(code(s.lookup(&ALICE, "mine", "r")), 8);
}

#[test]
fn region_fills_by_bytes_asked_for() {
    let mut s = store();
    let mut space = FakeSpace::new();
    let r = region(&mut s, "r", 2 * PAGE);
    // As in OpenFAM, small items share the quota by their sizes (each still takes a page of
    // lent memory: a grant protects pages).
    for k in 0..64 {
        s.allocate(&mut space, &ALICE, r, None, 128, 0o600)
            .unwrap_or_else(|e| panic!("item {k}: {e}"));
    }
    assert_eq!(s.region(r).unwrap().free(), 0);
    assert_eq!(space.calls.len(), 64, "a page each");
    let more = s.allocate(&mut space, &ALICE, r, Some("more"), 1, 0o600);
    assert_eq!(code(more), 14, "NO_SPACE");
    assert_eq!(space.calls.len(), 64, "refused before allocating");
    let one = s.items().next().unwrap().id;
    s.deallocate(&mut space, &ALICE, one).unwrap();
    assert_eq!(s.region(r).unwrap().used, 2 * PAGE - 128);
    s.allocate(&mut space, &ALICE, r, Some("again"), 128, 0o600)
        .unwrap();
}

#[test]
fn items_larger_than_the_region_are_refused() {
    let mut s = store();
    let mut space = FakeSpace::new();
    let r = region(&mut s, "r", MIB);
    assert_eq!(
        code(s.allocate(&mut space, &ALICE, r, None, MIB + 1, 0o600)),
        14
    );
    assert_eq!(
        code(s.allocate(&mut space, &ALICE, r, None, u64::MAX, 0o600)),
        14
    );
    assert!(space.calls.is_empty());
    s.allocate(&mut space, &ALICE, r, None, MIB, 0o600).unwrap();
    assert_eq!(s.region(r).unwrap().free(), 0);
}

#[test]
fn allocator_failure_midway_frees_what_was_got() {
    let mut s = store();
    let mut space = FakeSpace::new();
    let r = region(&mut s, "r", 4 * MIB);
    space.fail_at = Some(3);
    space.fail_with = Some(FamError::Allocator("node 3 broke".into()));
    // 200 KiB over three lenders: the third share fails.
    let e = s
        .allocate(&mut space, &ALICE, r, Some("x"), 200 * KIB, 0o600)
        .unwrap_err();
    assert_eq!(
        e,
        FamError::Allocator("node 3 broke".into()),
        "the Space's error"
    );
    assert_eq!(space.calls.len(), 3);
    assert!(space.live.is_empty(), "the two shares got were freed");
    assert_eq!(s.region(r).unwrap().used, 0);
    assert_eq!(s.region(r).unwrap().next_lender, 0, "cursor unmoved");
    assert_eq!(s.items().count(), 0);
    assert_eq!(code(s.lookup(&ALICE, "x", "r")), 8);
    space.fail_at = None;
    let i = s
        .allocate(&mut space, &ALICE, r, Some("x"), 200 * KIB, 0o600)
        .unwrap();
    assert_eq!(i.id, ItemId(1), "the failed one used no id");
}

#[test]
fn allocator_failure_inside_a_split_share_frees_it() {
    let mut s = store();
    let mut space = FakeSpace::new();
    space.max = Some(2);
    let r = region(&mut s, "r", MIB);
    space.fail_at = Some(10);
    // 3 stripes of 16 pages, each share split in 8 allocations of 2 pages: call 10 is the
    // second of share 1.
    let e = s.allocate(&mut space, &ALICE, r, None, 192 * KIB, 0o600);
    assert_eq!(code(e), 10, "ALLOCATOR");
    assert_eq!(space.calls.len(), 10);
    assert_eq!(space.calls[8], (2, 2));
    assert!(space.live.is_empty());
    assert_eq!(s.region(r).unwrap().used, 0);
}

#[test]
fn a_full_lender_is_skipped_for_single_lender_items() {
    let mut s = store();
    let mut space = FakeSpace::new();
    space.room.insert(1, 0);
    let r = region(&mut s, "r", MIB);
    let i = s
        .allocate(&mut space, &ALICE, r, Some("x"), 10, 0o600)
        .unwrap();
    assert_eq!(i.extents[0].node, 2, "node 1 full, node 2 next");
    assert_eq!(space.calls, vec![(1, 1), (2, 1)]);
    assert_eq!(
        s.region(r).unwrap().next_lender,
        2,
        "next starts after the one used"
    );
    space.room.insert(2, 0);
    space.room.insert(3, 0);
    let full = s.allocate(&mut space, &ALICE, r, Some("y"), 10, 0o600);
    assert_eq!(code(full), 14, "every lender full: NO_SPACE");
    assert_eq!(s.items().count(), 1);
}

#[test]
fn a_full_lender_fails_an_interleaved_item() {
    let mut s = store();
    let mut space = FakeSpace::new();
    space.room.insert(2, 0);
    let r = region(&mut s, "r", MIB);
    let e = s.allocate(&mut space, &ALICE, r, None, 200 * KIB, 0o600);
    assert_eq!(code(e), 14);
    assert!(space.live.is_empty(), "node 1's share freed");
    assert_eq!(space.calls.len(), 2);
}

#[test]
fn nonsense_from_the_allocator_is_refused_and_freed() {
    let mut s = store();
    let mut space = FakeSpace::new();
    let r = region(&mut s, "r", MIB);
    space.bad_addr = Some(unimem_wire::gsas::addr(7, 0x10_0000));
    let e = s.allocate(&mut space, &ALICE, r, None, 10, 0o600);
    assert_eq!(code(e), 10, "ALLOCATOR: an address on the wrong node");
    assert!(space.live.is_empty());
    assert_eq!(s.items().count(), 0);
}

#[test]
fn a_failed_free_leaks_but_the_item_is_gone() {
    let mut s = store();
    let mut space = FakeSpace::new();
    let r = region(&mut s, "r", MIB);
    let i = s
        .allocate(&mut space, &ALICE, r, Some("x"), 10, 0o600)
        .unwrap();
    space.free_fails = true;
    s.deallocate(&mut space, &ALICE, i.id).unwrap();
    assert_eq!(space.live.len(), 1, "leaked");
    assert_eq!(code(s.stat_item(&ALICE, i.id)), 8);
    assert_eq!(s.region(r).unwrap().used, 0);
}

#[test]
fn ids_grow_and_are_never_reused() {
    let mut s = store();
    let mut space = FakeSpace::new();
    let r = region(&mut s, "r", MIB);
    let a = s
        .allocate(&mut space, &ALICE, r, None, 1, 0o600)
        .unwrap()
        .id;
    s.deallocate(&mut space, &ALICE, a).unwrap();
    let b = s
        .allocate(&mut space, &ALICE, r, None, 1, 0o600)
        .unwrap()
        .id;
    assert_eq!((a, b), (ItemId(1), ItemId(2)));
}
