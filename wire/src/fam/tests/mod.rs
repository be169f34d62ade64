// SPDX-License-Identifier: GPL-2.0
//! The protocol's tests: round trips through framing and messages, and every way bytes from a
//! peer can be wrong. The samples they share are here, the tests by subject in the submodules.

extern crate std;

use super::*;
use std::vec::Vec;

mod frame;
mod limits;
mod malformed;
mod messages;

const LONG_A: [u8; NAME_MAX] = [b'a'; NAME_MAX];
/// A text of exactly MAX_TEXT bytes.
const LONG_TEXT: &str = match core::str::from_utf8(&[b't'; MAX_TEXT]) {
    Ok(s) => s,
    Err(_) => "",
};
const LONG_B: [u8; NAME_MAX] = [b'b'; NAME_MAX];

/// A name of NAME_MAX bytes, `a`s or `b`s (distinct, to find them in encodings).
fn long(which: u8) -> &'static str {
    let bytes: &'static [u8; NAME_MAX] = if which == b'a' { &LONG_A } else { &LONG_B };
    core::str::from_utf8(bytes).unwrap()
}

fn extent(i: usize) -> Extent {
    let node = (i % 16) as u16;
    Extent {
        node,
        addr: crate::gsas::addr(node, 0x10_0000 + i as u64 * 4096),
        len: 4096 * (i as u64 + 1),
    }
}

fn extents(n: usize) -> Extents {
    let mut e = Extents::new();
    for i in 0..n {
        assert!(e.push(extent(i)));
    }
    e
}

fn lenders(n: usize) -> Lenders {
    let all: Vec<u16> = (0..n as u16).map(|i| 15 - i).collect();
    Lenders::from_slice(&all).unwrap()
}

fn requests() -> Vec<Request<'static>> {
    std::vec![
        Request::Hello { version: VERSION },
        Request::CreateRegion {
            name: "région",
            size: 1 << 30,
            mode: 0o640,
            redundancy: Redundancy::None,
            memory_type: MemoryType::Volatile,
            interleave: Interleave::Enable,
        },
        Request::CreateRegion {
            name: long(b'a'),
            size: u64::MAX,
            mode: u32::MAX,
            redundancy: Redundancy::Raid5,
            memory_type: MemoryType::Persistent,
            interleave: Interleave::Disable,
        },
        Request::CreateRegion {
            name: "",
            size: 0,
            mode: 0,
            redundancy: Redundancy::Default,
            memory_type: MemoryType::Default,
            interleave: Interleave::Default,
        },
        Request::DestroyRegion { region: 7 },
        Request::ResizeRegion {
            region: u64::MAX,
            size: 0x1234_5678_9abc_def0,
        },
        Request::LookupRegion { name: "r" },
        Request::LookupRegion { name: long(b'a') },
        Request::ChangeRegionPermissions {
            region: 3,
            mode: 0o777,
        },
        Request::StatRegion { region: 1 },
        Request::Allocate {
            region: 2,
            name: "item",
            size: 5000,
            mode: 0o600,
        },
        Request::Allocate {
            region: 2,
            name: "",
            size: 1,
            mode: 0,
        },
        Request::Deallocate { item: 9 },
        Request::Lookup {
            item: "i",
            region: "r",
        },
        Request::Lookup {
            item: long(b'a'),
            region: long(b'b'),
        },
        Request::Lookup {
            item: "",
            region: "",
        },
        Request::ChangeItemPermissions {
            item: 4,
            mode: 0o444,
        },
        Request::StatItem { item: 5 },
        Request::ItemExtents { item: 5, first: 32 },
        Request::Backup {
            item: 5,
            name: "b1",
        },
        Request::Restore {
            name: long(b'a'),
            item: 6,
        },
        Request::RestoreNew {
            name: long(b'a'),
            region: 2,
            item: long(b'b'),
            mode: 0o640,
        },
        Request::RestoreNew {
            name: "b",
            region: 2,
            item: "",
            mode: 0,
        },
        Request::DeleteBackup { name: "b1" },
        Request::ListBackup { name: "" },
    ]
}

fn region(name: &str, n: usize) -> RegionDesc<'_> {
    RegionDesc {
        id: 11,
        name,
        size: 1 << 40,
        uid: 1000,
        gid: 100,
        mode: 0o750,
        redundancy: Redundancy::None,
        memory_type: MemoryType::Volatile,
        stripe: 64 << 10,
        used: 12288,
        lenders: lenders(n),
    }
}

fn item(name: &str, total: u32) -> ItemDesc<'_> {
    ItemDesc {
        id: 42,
        region: 11,
        name,
        size: 123_456_789,
        uid: 1000,
        gid: 100,
        mode: 0o640,
        stripe: 0,
        extent_count: total,
        extents: extents((total as usize).min(MAX_EXTENTS)),
    }
}

fn responses() -> Vec<Response<'static>> {
    let mut v = std::vec![
        Response::ok(op::HELLO, Reply::Hello { version: VERSION }),
        Response::ok(op::CREATE_REGION, Reply::Region(region("r", 3))),
        Response::ok(op::LOOKUP_REGION, Reply::Region(region(long(b'a'), 0))),
        Response::ok(
            op::STAT_REGION,
            Reply::Region(region(long(b'a'), MAX_LENDERS))
        ),
        Response::ok(op::ALLOCATE, Reply::Item(item("", 1))),
        Response::ok(op::LOOKUP, Reply::Item(item("ïtem", 5))),
        Response::ok(op::STAT_ITEM, Reply::Item(item(long(b'a'), 32))),
        Response::ok(op::STAT_ITEM, Reply::Item(item(long(b'a'), 100))),
        Response::ok(op::STAT_ITEM, Reply::Item(item("none", 0))),
        Response::ok(op::RESTORE_NEW, Reply::Item(item("restored", 2))),
        Response::ok(op::LIST_BACKUP, Reply::Text("")),
        Response::ok(op::LIST_BACKUP, Reply::Text(LONG_TEXT)),
        Response::ok(
            op::ITEM_EXTENTS,
            Reply::Extents(ExtentPage {
                total: 100,
                first: 32,
                extents: extents(MAX_EXTENTS),
            }),
        ),
        Response::ok(
            op::ITEM_EXTENTS,
            Reply::Extents(ExtentPage {
                total: 100,
                first: 96,
                extents: extents(4),
            }),
        ),
        Response::err(op::LOOKUP_REGION, 8, "not found: region \"r\""),
        Response::err(op::ALLOCATE, 14, ""),
        Response::err(op::CREATE_REGION, -1, "négatif"),
        Response::err(0xee, status::UNIMPL, "unknown opcode"),
        Response::err(op::STAT_ITEM, 21, long(b'b')),
    ];
    for opcode in [
        op::DESTROY_REGION,
        op::RESIZE_REGION,
        op::CHANGE_REGION_PERMISSIONS,
        op::DEALLOCATE,
        op::CHANGE_ITEM_PERMISSIONS,
        op::BACKUP,
        op::RESTORE,
        op::DELETE_BACKUP,
    ] {
        v.push(Response::ok(opcode, Reply::Done));
    }
    v
}

fn encode_request(r: &Request, id: u32) -> Vec<u8> {
    let mut buf = [0u8; MAX_MESSAGE];
    let n = r.encode(id, &mut buf).unwrap();
    buf[..n].to_vec()
}

fn encode_response(r: &Response, id: u32) -> Vec<u8> {
    let mut buf = [0u8; MAX_MESSAGE];
    let n = r.encode(id, &mut buf).unwrap();
    buf[..n].to_vec()
}

/// Sends `msg` through fragments and a fresh reassembler, checking that only the last
/// fragment completes it; returns what came out.
fn carry(id: u8, msg: &[u8]) -> Vec<u8> {
    let mut r = Reassembler::new();
    let frags: Vec<_> = fragments(id, msg).unwrap().collect();
    assert_eq!(frags.len(), fragment_count(msg.len()));
    let mut out = None;
    for (i, f) in frags.iter().enumerate() {
        let fed = r.feed(f).unwrap();
        assert_eq!(fed.interrupted, None);
        assert_eq!(fed.message.is_some(), i + 1 == frags.len(), "fragment {i}");
        out = fed.message.map(|m| m.to_vec());
    }
    assert_eq!(r.in_progress(), None);
    out.unwrap()
}
