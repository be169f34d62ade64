//! Placement: shares, stripes, round-robin, splitting, and finding bytes again.

use std::collections::BTreeSet;

use unimem_wire::gsas;

use super::fake::FakeSpace;
use super::*;
use crate::meta::place::Plan;
use crate::meta::{Extent, InterleaveEnable, Item, ItemId};

const STRIPE: u64 = 64 * KIB;

#[test]
fn plan_on_one_lender_rounds_to_pages() {
    let p = Plan::new(1, None, 3).unwrap();
    assert_eq!((p.stripe, p.shares), (None, vec![PAGE]));
    let p = Plan::new(STRIPE, Some(STRIPE), 3).unwrap();
    assert_eq!(
        (p.stripe, p.shares),
        (None, vec![STRIPE]),
        "one stripe: not interleaved"
    );
    let p = Plan::new(5 * STRIPE, Some(STRIPE), 1).unwrap();
    assert_eq!((p.stripe, p.shares), (None, vec![5 * STRIPE]), "one lender");
    assert_eq!(Plan::new(u64::MAX, None, 1), None);
    assert_eq!(Plan::new(10, Some(0), 3), None, "a stripe of 0 is no plan");
}

#[test]
fn plan_deals_stripes_round_robin() {
    // 200 KiB: stripes of 64, 64, 64 and 8 KiB; the fourth goes back to the first lender.
    let p = Plan::new(200 * KIB, Some(STRIPE), 3).unwrap();
    assert_eq!(p.stripe, Some(STRIPE));
    assert_eq!(p.shares, vec![72 * KIB, 64 * KIB, 64 * KIB]);
    assert_eq!(p.total(), Some(200 * KIB));
    // Two stripes, three lenders: two shares.
    let p = Plan::new(STRIPE + 1, Some(STRIPE), 3).unwrap();
    assert_eq!(p.shares, vec![STRIPE, PAGE]);
    // Seven stripes, the last partial (100 bytes): shares of 3, 2, 2 stripes, the last
    // share's last stripe one page.
    let p = Plan::new(6 * STRIPE + 100, Some(STRIPE), 3).unwrap();
    assert_eq!(p.shares, vec![2 * STRIPE + PAGE, 2 * STRIPE, 2 * STRIPE]);
}

#[test]
fn interleaved_item_over_three_lenders() {
    let mut s = store();
    let mut space = FakeSpace::new();
    let r = region(&mut s, "r", 4 * MIB);
    let i = s
        .allocate(&mut space, &ALICE, r, Some("x"), 200 * KIB, 0o600)
        .unwrap();
    assert_eq!(i.stripe, Some(STRIPE));
    let shape: Vec<(u16, u64)> = i.extents.iter().map(|e| (e.node, e.len)).collect();
    assert_eq!(shape, vec![(1, 72 * KIB), (2, 64 * KIB), (3, 64 * KIB)]);
    assert_eq!(space.calls, vec![(1, 18), (2, 16), (3, 16)]);
    assert_eq!(
        [space.pages_on(1), space.pages_on(2), space.pages_on(3)],
        [18, 16, 16]
    );
    assert_eq!(s.region(r).unwrap().used, 200 * KIB);
    for e in &i.extents {
        assert_eq!(gsas::node_of(e.addr), e.node);
    }
    let base = |n: usize| i.extents[n].addr;
    // Stripe 0 on node 1, 1 on node 2, 2 on node 3, 3 back on node 1 after stripe 0.
    assert_eq!(i.locate(0), Some((base(0), STRIPE)));
    assert_eq!(i.locate(10), Some((base(0) + 10, STRIPE - 10)));
    assert_eq!(i.locate(STRIPE), Some((base(1), STRIPE)));
    assert_eq!(i.locate(2 * STRIPE + 5), Some((base(2) + 5, STRIPE - 5)));
    assert_eq!(i.locate(3 * STRIPE), Some((base(0) + STRIPE, 8 * KIB)));
    assert_eq!(i.locate(200 * KIB - 1), Some((base(0) + 72 * KIB - 1, 1)));
    assert_eq!(i.locate(200 * KIB), None);
}

#[test]
fn consecutive_items_start_on_consecutive_lenders() {
    let mut s = store();
    let mut space = FakeSpace::new();
    let r = region(&mut s, "r", 4 * MIB);
    let first = |i: &Item| i.extents[0].node;
    let a = s
        .allocate(&mut space, &ALICE, r, None, 200 * KIB, 0o600)
        .unwrap();
    let b = s
        .allocate(&mut space, &ALICE, r, None, 200 * KIB, 0o600)
        .unwrap();
    let c = s.allocate(&mut space, &ALICE, r, None, 10, 0o600).unwrap();
    let d = s.allocate(&mut space, &ALICE, r, None, 10, 0o600).unwrap();
    assert_eq!([first(&a), first(&b), first(&c), first(&d)], [1, 2, 3, 1]);
    assert_eq!(b.nodes(), vec![2, 3, 1]);
    // b's fourth stripe is on its first node, 2.
    assert_eq!(b.locate(3 * STRIPE).map(|(a, _)| gsas::node_of(a)), Some(2));
}

#[test]
fn without_interleave_items_go_whole_round_robin() {
    let mut s = store();
    let mut space = FakeSpace::new();
    let attrs = RegionAttrs {
        interleave: InterleaveEnable::Disable,
        ..RegionAttrs::default()
    };
    let r = s
        .create_region(&ALICE, "flat", 4 * MIB, 0o700, attrs)
        .unwrap()
        .id;
    let nodes: Vec<u16> = (0..4)
        .map(|_| {
            let i = s
                .allocate(&mut space, &ALICE, r, None, 200 * KIB, 0o600)
                .unwrap();
            assert_eq!((i.stripe, i.extents.len()), (None, 1));
            assert_eq!(i.extents[0].len, 200 * KIB);
            i.extents[0].node
        })
        .collect();
    assert_eq!(nodes, vec![1, 2, 3, 1]);
}

#[test]
fn interleave_off_by_default_when_configured() {
    let mut c = StoreConfig::new(vec![4, 5]);
    c.interleave_by_default = false;
    c.stripe = 8 * PAGE;
    let mut s = Store::new(c).unwrap();
    let mut space = FakeSpace::new();
    let r = region(&mut s, "r", MIB);
    assert_eq!(s.region(r).unwrap().interleave, None);
    let i = s
        .allocate(&mut space, &ALICE, r, None, 100 * KIB, 0o600)
        .unwrap();
    assert_eq!(i.nodes(), vec![4]);
    let on = RegionAttrs {
        interleave: InterleaveEnable::Enable,
        ..RegionAttrs::default()
    };
    let r2 = s.create_region(&ALICE, "r2", MIB, 0o700, on).unwrap();
    assert_eq!(r2.interleave, Some(8 * PAGE));
}

#[test]
fn shares_larger_than_one_allocation_are_split() {
    let mut s = store();
    let mut space = FakeSpace::new();
    space.max = Some(4);
    let attrs = RegionAttrs {
        interleave: InterleaveEnable::Disable,
        ..RegionAttrs::default()
    };
    let r = s.create_region(&ALICE, "r", MIB, 0o700, attrs).unwrap().id;
    let i = s
        .allocate(&mut space, &ALICE, r, None, 10 * PAGE - 1, 0o600)
        .unwrap();
    let lens: Vec<u64> = i.extents.iter().map(|e| e.len).collect();
    assert_eq!(lens, vec![4 * PAGE, 4 * PAGE, 2 * PAGE]);
    assert_eq!(i.nodes(), vec![1]);
    assert_eq!(
        i.locate(4 * PAGE + 3),
        Some((i.extents[1].addr + 3, 4 * PAGE - 3))
    );
    assert_eq!(
        i.locate(9 * PAGE),
        Some((i.extents[2].addr + PAGE, PAGE - 1))
    );
}

#[test]
fn split_shares_of_an_interleaved_item_are_found() {
    let mut s = store();
    let mut space = FakeSpace::new();
    space.max = Some(16);
    let r = region(&mut s, "r", 4 * MIB);
    // 7 stripes over 3 lenders: node 1 holds stripes 0, 3, 6 (48 pages, three extents).
    let i = s
        .allocate(&mut space, &ALICE, r, None, 7 * STRIPE, 0o600)
        .unwrap();
    let on1: Vec<&Extent> = i.extents.iter().filter(|e| e.node == 1).collect();
    assert_eq!(on1.len(), 3);
    assert_eq!(
        i.locate(6 * STRIPE + 7),
        Some((on1[2].addr + 7, STRIPE - 7))
    );
    assert_eq!(i.locate(3 * STRIPE), Some((on1[1].addr, STRIPE)));
    // Every byte lands in a distinct place: walk the item stripe by stripe.
    let mut seen = BTreeSet::new();
    let mut off = 0;
    while let Some((addr, run)) = i.locate(off) {
        assert!(run > 0);
        assert!(seen.insert(addr), "{addr:#x} twice");
        off += run;
    }
    assert_eq!(off, 7 * STRIPE);
}

#[test]
fn locate_refuses_short_extents() {
    let i = Item {
        id: ItemId(1),
        region: RegionId(1),
        name: String::new(),
        size: 2 * PAGE,
        uid: 0,
        gid: 0,
        mode: 0,
        stripe: None,
        extents: vec![Extent {
            node: 1,
            addr: gsas::addr(1, 0),
            len: PAGE,
        }],
    };
    assert_eq!(i.locate(PAGE - 1), Some((gsas::addr(1, PAGE - 1), 1)));
    assert_eq!(i.locate(PAGE), None);
    let striped = Item {
        stripe: Some(0),
        ..i.clone()
    };
    assert_eq!(striped.locate(0), None, "stripe 0: broken, no panic");
    let empty = Item {
        stripe: Some(PAGE),
        extents: vec![],
        ..i
    };
    assert_eq!(empty.locate(0), None, "no extents: broken, no panic");
}
