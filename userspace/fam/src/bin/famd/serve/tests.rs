//! The handler against a fake allocator: answers decode to what the store says, grants follow
//! items, and failures undo what they started.

use super::*;
use fam::meta::StoreConfig;
use unimem_wire::fam::ItemDesc;
use unimem_wire::fam::{Interleave, MemoryType, Redundancy, MAX_MESSAGE};
use unimem_wire::gsas;

/// Pages from a counter; grants recorded; `fail_grant` makes the next grant fail.
#[derive(Default)]
struct Fake {
    mem: std::collections::HashMap<u64, u8>,
    next: u64,
    freed: Vec<u64>,
    grants: Vec<(u64, u32)>,
    fail_grant: bool,
}

impl Space for Fake {
    fn alloc(&mut self, node: u16, pages: u64) -> fam::Result<u64> {
        let a = gsas::addr(node, 0x10_0000 + self.next);
        self.next += pages * gsas::PAGE_SIZE;
        Ok(a)
    }
    fn free(&mut self, addr: u64) -> fam::Result<()> {
        self.freed.push(addr);
        Ok(())
    }
}

impl Pages for Fake {
    fn grant(&mut self, item: &Item) -> fam::Result<()> {
        if std::mem::take(&mut self.fail_grant) {
            return Err(FamError::Allocator("grant refused".into()));
        }
        for e in &item.extents {
            self.grants.push((e.addr, item.mode));
        }
        Ok(())
    }
    fn read(&mut self, addr: u64, buf: &mut [u8]) -> fam::Result<()> {
        for (i, b) in buf.iter_mut().enumerate() {
            *b = self.mem.get(&(addr + i as u64)).copied().unwrap_or(0);
        }
        Ok(())
    }
    fn write(&mut self, addr: u64, data: &[u8]) -> fam::Result<()> {
        for (i, &b) in data.iter().enumerate() {
            self.mem.insert(addr + i as u64, b);
        }
        Ok(())
    }
}

/// A backup directory of its own under the system's temporary directory.
fn backups(tag: &str) -> Backups {
    let dir = std::env::temp_dir().join(format!("famd-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    Backups::new(dir)
}

fn call(store: &mut Store, fake: &mut Fake, who: &Creds, req: Request<'_>) -> Vec<u8> {
    let mut out = [0u8; MAX_MESSAGE];
    let b = Backups::new(std::env::temp_dir().join("famd-none"));
    let n = handle(store, fake, &b, who, 7, &req, &mut out);
    out[..n].to_vec()
}

fn status(bytes: &[u8]) -> i32 {
    let (id, r) = Response::decode(bytes).expect("answer decodes");
    assert_eq!(id, 7);
    r.status()
}

fn region(store: &mut Store, fake: &mut Fake, who: &Creds, name: &str) -> u64 {
    let a = call(
        store,
        fake,
        who,
        Request::CreateRegion {
            name,
            size: 1 << 20,
            mode: 0o755,
            redundancy: Redundancy::Default,
            memory_type: MemoryType::Default,
            interleave: Interleave::Enable,
        },
    );
    match Response::decode(&a).unwrap().1.result {
        Ok(Reply::Region(r)) => r.id,
        other => panic!("create region: {other:?}"),
    }
}

#[test]
fn allocate_grants_every_extent_and_answers_the_layout() {
    let mut store = Store::new(StoreConfig::new(vec![1, 2, 3])).unwrap();
    let mut fake = Fake::default();
    let alice = Creds::user(1000, 1000);
    let r = region(&mut store, &mut fake, &alice, "r");
    let a = call(
        &mut store,
        &mut fake,
        &alice,
        Request::Allocate {
            region: r,
            name: "x",
            size: 300 << 10,
            mode: 0o640,
        },
    );
    let Ok(Reply::Item(item)) = Response::decode(&a).unwrap().1.result else {
        panic!("allocate failed: {:?}", Response::decode(&a));
    };
    assert_eq!(item.extent_count, 3);
    assert_eq!(item.stripe, fam::meta::DEFAULT_STRIPE);
    assert_eq!(fake.grants.len(), 3);
    assert!(fake.grants.iter().all(|&(_, m)| m == 0o640));
    let granted: Vec<u64> = fake.grants.iter().map(|g| g.0).collect();
    let listed: Vec<u64> = item.extents.as_slice().iter().map(|e| e.addr).collect();
    assert_eq!(granted, listed);
}

#[test]
fn a_failed_grant_undoes_the_allocation() {
    let mut store = Store::new(StoreConfig::new(vec![1, 2])).unwrap();
    let mut fake = Fake::default();
    let alice = Creds::user(1000, 1000);
    let r = region(&mut store, &mut fake, &alice, "r");
    fake.fail_grant = true;
    let req = Request::Allocate {
        region: r,
        name: "x",
        size: 4096,
        mode: 0o600,
    };
    assert_eq!(
        status(&call(&mut store, &mut fake, &alice, req)),
        fam::code::ALLOCATOR
    );
    assert_eq!(store.items().count(), 0, "the item is gone");
    assert_eq!(fake.freed.len(), 1, "its page is freed");
    // The name is free again.
    assert_eq!(status(&call(&mut store, &mut fake, &alice, req)), 0);
}

#[test]
fn permission_changes_regrant_and_a_failed_regrant_keeps_the_old_mode() {
    let mut store = Store::new(StoreConfig::new(vec![1])).unwrap();
    let mut fake = Fake::default();
    let alice = Creds::user(1000, 1000);
    let r = region(&mut store, &mut fake, &alice, "r");
    let a = call(
        &mut store,
        &mut fake,
        &alice,
        Request::Allocate {
            region: r,
            name: "x",
            size: 4096,
            mode: 0o600,
        },
    );
    let Ok(Reply::Item(item)) = Response::decode(&a).unwrap().1.result else {
        panic!()
    };
    let id = item.id;
    let change = |mode| Request::ChangeItemPermissions { item: id, mode };
    assert_eq!(
        status(&call(&mut store, &mut fake, &alice, change(0o644))),
        0
    );
    assert_eq!(fake.grants.last().unwrap().1, 0o644);
    fake.fail_grant = true;
    assert_ne!(
        status(&call(&mut store, &mut fake, &alice, change(0o666))),
        0
    );
    assert_eq!(store.item(fam::meta::ItemId(id)).unwrap().mode, 0o644);
    // A mode that locks the owner out is still granted (the owner may change it back).
    assert_eq!(
        status(&call(&mut store, &mut fake, &alice, change(0o077))),
        0
    );
    assert_eq!(fake.grants.last().unwrap().1, 0o077);
}

#[test]
fn other_users_get_openfams_errors() {
    let mut store = Store::new(StoreConfig::new(vec![1])).unwrap();
    let mut fake = Fake::default();
    let alice = Creds::user(1000, 1000);
    let bob = Creds::user(1001, 1001);
    let r = region(&mut store, &mut fake, &alice, "r");
    let alloc = Request::Allocate {
        region: r,
        name: "x",
        size: 4096,
        mode: 0o600,
    };
    assert_eq!(status(&call(&mut store, &mut fake, &alice, alloc)), 0);
    let lookup = Request::Lookup {
        item: "x",
        region: "r",
    };
    assert_eq!(
        status(&call(&mut store, &mut fake, &bob, lookup)),
        fam::code::NOPERM
    );
    assert_eq!(
        status(&call(&mut store, &mut fake, &bob, alloc)),
        fam::code::NOPERM
    );
    let missing = Request::Lookup {
        item: "y",
        region: "r",
    };
    assert_eq!(
        status(&call(&mut store, &mut fake, &alice, missing)),
        fam::code::NOTFOUND
    );
    let old = Request::Hello {
        version: VERSION + 1,
    };
    assert_eq!(
        status(&call(&mut store, &mut fake, &alice, old)),
        fam::code::INVALID
    );
}

#[test]
fn extents_page_past_the_first_thirty_two() {
    let mut config = StoreConfig::new(vec![1, 2, 3, 4]);
    config.stripe = gsas::PAGE_SIZE;
    let mut store = Store::new(config).unwrap();
    let mut fake = Fake::default();
    let alice = Creds::user(1000, 1000);
    let r = region(&mut store, &mut fake, &alice, "r");
    // Four lenders hold one extent each, however many stripes: page through all the same.
    let a = call(
        &mut store,
        &mut fake,
        &alice,
        Request::Allocate {
            region: r,
            name: "x",
            size: 64 * gsas::PAGE_SIZE,
            mode: 0o600,
        },
    );
    let Ok(Reply::Item(item)) = Response::decode(&a).unwrap().1.result else {
        panic!()
    };
    let total = item.extent_count;
    let page = call(
        &mut store,
        &mut fake,
        &alice,
        Request::ItemExtents {
            item: item.id,
            first: 0,
        },
    );
    match Response::decode(&page).unwrap().1.result {
        Ok(Reply::Extents(p)) => assert_eq!(p.total, total),
        other => panic!("{other:?}"),
    }
    let past = Request::ItemExtents {
        item: item.id,
        first: total,
    };
    assert_eq!(
        status(&call(&mut store, &mut fake, &alice, past)),
        fam::code::OUTOFRANGE
    );
}

fn call_b(
    store: &mut Store,
    fake: &mut Fake,
    b: &Backups,
    who: &Creds,
    req: Request<'_>,
) -> Vec<u8> {
    let mut out = [0u8; MAX_MESSAGE];
    let n = handle(store, fake, b, who, 7, &req, &mut out);
    out[..n].to_vec()
}

fn item_of(bytes: &[u8]) -> ItemDesc<'_> {
    match Response::decode(bytes).unwrap().1.result {
        Ok(Reply::Item(i)) => i,
        other => panic!("not an item: {other:?}"),
    }
}

/// The item's bytes through its layout (as the client reads them).
fn contents(store: &Store, fake: &mut Fake, id: u64) -> Vec<u8> {
    let item = store.item(fam::meta::ItemId(id)).unwrap().clone();
    let mut out = vec![0u8; item.size as usize];
    let mut off = 0u64;
    while off < item.size {
        let (addr, run) = item.locate(off).unwrap();
        let n = run.min(item.size - off) as usize;
        fake.read(addr, &mut out[off as usize..off as usize + n])
            .unwrap();
        off += n as u64;
    }
    out
}

#[test]
fn backups_round_trip_and_check_rights() {
    let mut config = StoreConfig::new(vec![1, 2, 3]);
    config.stripe = gsas::PAGE_SIZE;
    let mut store = Store::new(config).unwrap();
    let mut fake = Fake::default();
    let b = backups("roundtrip");
    let alice = Creds::user(1000, 1000);
    let bob = Creds::user(1001, 1001);
    let r = region(&mut store, &mut fake, &alice, "r");
    let alloc = |name, size, mode| Request::Allocate {
        region: r,
        name,
        size,
        mode,
    };
    let src = item_of(&call(
        &mut store,
        &mut fake,
        &alice,
        alloc("src", 5 * 4096 + 17, 0o640),
    ))
    .id;
    // A pattern across the stripes of three lenders.
    let item = store.item(fam::meta::ItemId(src)).unwrap().clone();
    let pattern: Vec<u8> = (0..item.size).map(|i| (i * 7 % 251) as u8).collect();
    let mut off = 0;
    while off < item.size {
        let (addr, run) = item.locate(off).unwrap();
        let n = run.min(item.size - off) as usize;
        fake.write(addr, &pattern[off as usize..off as usize + n])
            .unwrap();
        off += n as u64;
    }
    let backup = Request::Backup {
        item: src,
        name: "b1",
    };
    assert_eq!(
        status(&call_b(&mut store, &mut fake, &b, &bob, backup)),
        fam::code::NOPERM
    );
    assert_eq!(
        status(&call_b(&mut store, &mut fake, &b, &alice, backup)),
        0
    );
    // The same name again: replaced by its maker (OpenFAM's programs do that), not by
    // another reader of the item, and the old bytes' file goes.
    let carol = Creds::user(1002, 1000);
    assert_eq!(
        status(&call_b(&mut store, &mut fake, &b, &carol, backup)),
        fam::code::NOPERM,
        "replacing someone else's backup"
    );
    let first = item.locate(0).unwrap().0;
    fake.write(first, &[0xee]).unwrap();
    assert_eq!(
        status(&call_b(&mut store, &mut fake, &b, &alice, backup)),
        0,
        "a second backup of the same name"
    );
    let data_files = || {
        std::fs::read_dir(b.dir())
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| n.ends_with(".data"))
            .count()
    };
    assert_eq!(data_files(), 1);
    let mut pattern = pattern;
    pattern[0] = 0xee;
    // Into an existing item of the same size, then a new one.
    let dst = item_of(&call(
        &mut store,
        &mut fake,
        &alice,
        alloc("dst", item.size, 0o600),
    ))
    .id;
    let restore = Request::Restore {
        name: "b1",
        item: dst,
    };
    assert_eq!(
        status(&call_b(&mut store, &mut fake, &b, &bob, restore)),
        fam::code::NOPERM
    );
    assert_eq!(
        status(&call_b(&mut store, &mut fake, &b, &alice, restore)),
        0
    );
    assert_eq!(contents(&store, &mut fake, dst), pattern);
    let small = item_of(&call(
        &mut store,
        &mut fake,
        &alice,
        alloc("small", 4096, 0o600),
    ))
    .id;
    let too_small = Request::Restore {
        name: "b1",
        item: small,
    };
    assert_eq!(
        status(&call_b(&mut store, &mut fake, &b, &alice, too_small)),
        fam::code::OUTOFRANGE
    );
    let new = Request::RestoreNew {
        name: "b1",
        region: r,
        item: "copy",
        mode: 0o600,
    };
    let copy = item_of(&call_b(&mut store, &mut fake, &b, &alice, new)).id;
    assert_eq!(contents(&store, &mut fake, copy), pattern);
    // Listing: alice sees it, bob (mode 0640, another group) does not.
    let list = |who: &Creds, store: &mut Store, fake: &mut Fake| {
        let a = call_b(store, fake, &b, who, Request::ListBackup { name: "" });
        match Response::decode(&a).unwrap().1.result {
            Ok(Reply::Text(t)) => t.to_string(),
            other => panic!("{other:?}"),
        }
    };
    assert!(list(&alice, &mut store, &mut fake).starts_with("b1 size=20497 item=src region=r"));
    assert_eq!(list(&bob, &mut store, &mut fake), "");
    let missing = Request::Restore {
        name: "nope",
        item: dst,
    };
    assert_eq!(
        status(&call_b(&mut store, &mut fake, &b, &alice, missing)),
        fam::code::BACKUP_NOTFOUND
    );
    for bad in ["", "../x", ".hidden", "a/b"] {
        let req = Request::Backup {
            item: src,
            name: bad,
        };
        assert_eq!(
            status(&call_b(&mut store, &mut fake, &b, &alice, req)),
            fam::code::INVALID,
            "{bad:?}"
        );
    }
    let delete = Request::DeleteBackup { name: "b1" };
    assert_eq!(
        status(&call_b(&mut store, &mut fake, &b, &bob, delete)),
        fam::code::NOPERM
    );
    assert_eq!(
        status(&call_b(&mut store, &mut fake, &b, &alice, delete)),
        0
    );
    assert_eq!(
        status(&call_b(&mut store, &mut fake, &b, &alice, delete)),
        fam::code::BACKUP_NOTFOUND
    );
    let _ = std::fs::remove_dir_all(b.dir());
}
