//! The file: round trip, ids across restarts, atomic replacement, corrupt and inconsistent
//! files, failed saves.

use std::fs;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};

use super::fake::FakeSpace;
use super::*;
use crate::meta::persist::temp_path;
use crate::meta::ItemId;

/// A fresh directory under the system's temporary directory, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        static N: AtomicU32 = AtomicU32::new(0);
        let dir = std::env::temp_dir().join(format!(
            "fam-meta-{}-{tag}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    fn file(&self) -> PathBuf {
        self.0.join("meta.json")
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn config() -> StoreConfig {
    StoreConfig::new(vec![1, 2, 3])
}

#[test]
fn open_creates_the_file() {
    let dir = TempDir::new("create");
    let s = Store::open(dir.file(), config()).unwrap();
    assert_eq!(s.path(), Some(dir.file().as_path()));
    let text = fs::read_to_string(dir.file()).unwrap();
    assert!(text.contains("\"version\": 1"), "{text}");
    assert!(!temp_path(&dir.file()).exists());
}

#[test]
fn round_trip_keeps_everything() {
    let dir = TempDir::new("trip");
    let mut space = FakeSpace::new();
    let (regions, items) = {
        let mut s = Store::open(dir.file(), config()).unwrap();
        let r = region(&mut s, "r", 4 * MIB);
        let flat = RegionAttrs {
            interleave: crate::meta::InterleaveEnable::Disable,
            ..RegionAttrs::default()
        };
        let f = s.create_region(&BOB, "flat", MIB, 0o640, flat).unwrap().id;
        s.allocate(&mut space, &ALICE, r, Some("x"), 200 * KIB, 0o640)
            .unwrap();
        s.allocate(&mut space, &ALICE, r, None, 10, 0o600).unwrap();
        s.allocate(&mut space, &BOB, f, Some("y"), 100, 0o644)
            .unwrap();
        let gone = s
            .allocate(&mut space, &ALICE, r, Some("gone"), 10, 0o600)
            .unwrap();
        s.deallocate(&mut space, &ALICE, gone.id).unwrap();
        s.change_item_permissions(&ALICE, ItemId(1), 0o600).unwrap();
        s.resize_region(&ALICE, r, 5 * MIB).unwrap();
        let regions: Vec<_> = s.regions().cloned().collect();
        let items: Vec<_> = s.items().cloned().collect();
        (regions, items)
    };
    let mut s = Store::open(dir.file(), config()).unwrap();
    assert_eq!(s.regions().cloned().collect::<Vec<_>>(), regions);
    assert_eq!(s.items().cloned().collect::<Vec<_>>(), items);
    let r = s.lookup_region(&ALICE, "r").unwrap();
    // Three items started on lenders 0, 1, 2: the fourth starts on 0 again.
    assert_eq!(
        (r.size, r.used, r.next_lender),
        (5 * MIB, 200 * KIB + 128, 0)
    );
    assert_eq!(s.lookup(&ALICE, "x", "r").unwrap().mode, 0o600);
    assert_eq!(code(s.lookup(&ALICE, "gone", "r")), 8);
    assert_eq!(code(s.lookup(&EVE, "y", "flat")), 0, "mode 0o644 kept");
    // Names are taken, ids go on past the old ones (the deallocated item's id 4 included).
    assert_eq!(
        code(s.create_region(&ALICE, "r", MIB, 0o700, RegionAttrs::default())),
        9
    );
    let n = region(&mut s, "new", MIB);
    assert_eq!(n, RegionId(3));
    let i = s.allocate(&mut space, &ALICE, n, None, 1, 0o600).unwrap();
    assert_eq!(i.id, ItemId(5));
    // The next items of "r" start where the cursor was saved.
    let j = s
        .allocate(&mut space, &ALICE, r.id, None, 1, 0o600)
        .unwrap();
    let k = s
        .allocate(&mut space, &ALICE, r.id, None, 1, 0o600)
        .unwrap();
    assert_eq!((j.extents[0].node, k.extents[0].node), (1, 2));
}

#[test]
fn destroyed_regions_stay_destroyed() {
    let dir = TempDir::new("destroy");
    let mut space = FakeSpace::new();
    {
        let mut s = Store::open(dir.file(), config()).unwrap();
        let r = region(&mut s, "r", MIB);
        s.allocate(&mut space, &ALICE, r, Some("x"), 10, 0o600)
            .unwrap();
        s.destroy_region(&mut space, &ALICE, r).unwrap();
    }
    let s = Store::open(dir.file(), config()).unwrap();
    assert_eq!(s.regions().count(), 0);
    assert_eq!(s.items().count(), 0);
    assert!(space.live.is_empty());
}

#[test]
fn every_change_is_on_disk_at_once() {
    let dir = TempDir::new("each");
    let mut space = FakeSpace::new();
    let mut s = Store::open(dir.file(), config()).unwrap();
    let r = region(&mut s, "r", MIB);
    let on_disk = || Store::open(dir.file(), config()).unwrap();
    assert_eq!(on_disk().regions().count(), 1);
    let i = s
        .allocate(&mut space, &ALICE, r, Some("x"), 10, 0o600)
        .unwrap();
    assert_eq!(on_disk().item(i.id), Some(&i));
    s.change_region_permissions(&ALICE, r, 0o700).unwrap();
    assert_eq!(on_disk().region(r).unwrap().mode, 0o700);
    s.deallocate(&mut space, &ALICE, i.id).unwrap();
    assert_eq!(on_disk().items().count(), 0);
    assert!(!temp_path(&dir.file()).exists(), "no temporary file left");
}

#[test]
fn a_corrupt_file_is_a_metadata_error() {
    let dir = TempDir::new("corrupt");
    for bad in [
        "",
        "not json",
        "{\"version\": 1, \"next_region\": 1",
        "[1, 2, 3]",
    ] {
        fs::write(dir.file(), bad).unwrap();
        let e = Store::open(dir.file(), config()).unwrap_err();
        assert_eq!(e.code(), 21, "{bad:?}: {e}");
        let msg = e.to_string();
        assert!(
            msg.contains("meta.json") && msg.contains("corrupt"),
            "{msg}"
        );
    }
    assert_eq!(
        fs::read_to_string(dir.file()).unwrap(),
        "[1, 2, 3]",
        "left as it was"
    );
}

#[test]
fn another_version_is_refused() {
    let dir = TempDir::new("version");
    drop(Store::open(dir.file(), config()).unwrap());
    let text = fs::read_to_string(dir.file()).unwrap();
    fs::write(dir.file(), text.replace("\"version\": 1", "\"version\": 2")).unwrap();
    let e = Store::open(dir.file(), config()).unwrap_err();
    assert_eq!(e.code(), 21);
    assert!(e.to_string().contains("version 2"), "{e}");
}

/// An edit of a saved store's JSON.
type Edit = fn(&mut serde_json::Value);

/// A saved store with one region and one item, its JSON edited by `edit`, opened again.
fn reopen_edited(tag: &str, edit: impl Fn(&mut serde_json::Value)) -> crate::Result<Store> {
    let dir = TempDir::new(tag);
    let mut space = FakeSpace::new();
    {
        let mut s = Store::open(dir.file(), config()).unwrap();
        let r = region(&mut s, "r", MIB);
        s.allocate(&mut space, &ALICE, r, Some("x"), 200 * KIB, 0o600)
            .unwrap();
    }
    let mut v: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(dir.file()).unwrap()).unwrap();
    edit(&mut v);
    fs::write(dir.file(), serde_json::to_vec(&v).unwrap()).unwrap();
    Store::open(dir.file(), config())
}

#[test]
fn an_unedited_file_reopens() {
    assert_eq!(code(reopen_edited("same", |_| {})), 0);
}

#[test]
fn inconsistent_files_are_refused() {
    let cases: [(&str, Edit, &str); 7] = [
        (
            "orphan",
            |v| v["items"][0]["region"] = 9.into(),
            "missing region",
        ),
        ("reused", |v| v["next_item"] = 1.into(), "not below next id"),
        (
            "overfull",
            |v| v["regions"][0]["size"] = 4096.into(),
            "items take",
        ),
        (
            "shortitem",
            |v| v["items"][0]["size"] = (300 * 1024).into(),
            "do not hold",
        ),
        (
            "lender",
            |v| v["items"][0]["extents"][0]["node"] = 7.into(),
            "bad extent",
        ),
        ("dupname", dup_region, "twice"),
        (
            "badmode",
            |v| v["regions"][0]["mode"] = 0o4777.into(),
            "mode",
        ),
    ];
    for (tag, edit, says) in cases {
        let e = reopen_edited(tag, edit).unwrap_err();
        assert_eq!(e.code(), 21, "{tag}: {e}");
        assert!(e.to_string().contains(says), "{tag}: {e}");
    }
}

#[test]
fn attributes_are_saved_as_openfams_numbers() {
    assert_eq!(
        code(reopen_edited("attrnum", |v| {
            let r = &v["regions"][0];
            assert_eq!(
                (r["redundancy"].clone(), r["memory_type"].clone()),
                (1.into(), 1.into())
            );
        })),
        0
    );
    let e = reopen_edited("attrbad", |v| v["regions"][0]["memory_type"] = 9.into()).unwrap_err();
    assert_eq!(e.code(), 21, "{e}");
    assert!(e.to_string().contains("no memory type 9"), "{e}");
}

fn dup_region(v: &mut serde_json::Value) {
    let mut r = v["regions"][0].clone();
    r["id"] = 2.into();
    v["next_region"] = 3.into();
    if let Some(a) = v["regions"].as_array_mut() {
        a.push(r);
    }
}

#[test]
fn a_failed_save_changes_nothing() {
    let dir = TempDir::new("nosave");
    let mut space = FakeSpace::new();
    let mut s = Store::open(dir.file(), config()).unwrap();
    let r = region(&mut s, "r", MIB);
    let kept = s
        .allocate(&mut space, &ALICE, r, Some("kept"), 10, 0o600)
        .unwrap();
    // The directory goes away: nothing can be saved any more.
    fs::remove_dir_all(&dir.0).unwrap();

    let e = s.allocate(&mut space, &ALICE, r, Some("x"), 200 * KIB, 0o600);
    assert_eq!(code(e), 21, "METADATA");
    assert_eq!(space.live.len(), 1, "the new item's memory was given back");
    assert_eq!(s.items().count(), 1);
    assert_eq!(s.region(r).unwrap().used, 128, "10 bytes charged as 128");
    assert_eq!(s.region(r).unwrap().next_lender, 1);

    assert_eq!(code(s.deallocate(&mut space, &ALICE, kept.id)), 21);
    assert_eq!(s.item(kept.id), Some(&kept), "still recorded");
    assert_eq!(space.live.len(), 1, "and not freed");

    assert_eq!(code(s.destroy_region(&mut space, &ALICE, r)), 21);
    assert_eq!(code(s.resize_region(&ALICE, r, 2 * MIB)), 21);
    assert_eq!(code(s.change_region_permissions(&ALICE, r, 0o700)), 21);
    assert_eq!(code(s.change_item_permissions(&ALICE, kept.id, 0o644)), 21);
    assert_eq!(
        code(s.create_region(&ALICE, "r2", MIB, 0o700, RegionAttrs::default())),
        21
    );
    let now = s.region(r).unwrap();
    assert_eq!((now.size, now.mode), (MIB, 0o755));
    assert_eq!(s.item(kept.id).unwrap().mode, 0o600);
    assert_eq!(code(s.lookup_region(&ALICE, "r2")), 8);
    assert_eq!(space.live.len(), 1);
}

#[test]
fn a_missing_directory_fails_open() {
    let dir = TempDir::new("nodir");
    let e = Store::open(dir.0.join("no/such/meta.json"), config()).unwrap_err();
    assert_eq!(e.code(), 21);
}
