//! Unit tests of the client: GSAS behind a fake transport (a service applying requests to
//! per-node memory, as the home's kernel does), famd behind a fake [`Wire`].

pub(crate) mod fakes;

use std::time::{Duration, Instant};

use unimem_wire::fam::{self, Reply, Request, Response};
use unimem_wire::gsas::addr;

use super::*;
use crate::meta::{Extent, Item, ItemId, RegionId};
use fakes::{client, item_desc_reply, striped_item, FakeFamd, Gas};

#[test]
fn put_get_cross_stripes_and_extents() {
    let g = Gas::new(1);
    let it = striped_item();
    let c = client(&g, FakeFamd::new(|_, _| None));
    let data: Vec<u8> = (0..it.size).map(|i| (i * 7 % 251) as u8).collect();
    c.put(&it, 0, &data).unwrap();
    let mut back = vec![0u8; data.len()];
    c.get(&it, 0, &mut back).unwrap();
    assert_eq!(back, data);
    // Stripe i of 4 KiB on node 1, 2, 1, 2, 1: the fifth in node 1's second extent.
    let at = |node, off, len| g.peek(node, off, len);
    assert_eq!(at(1, 0x10000, 4096), data[0..4096]);
    assert_eq!(at(2, 0x10000, 4096), data[4096..8192]);
    assert_eq!(at(1, 0x11000, 4096), data[8192..12288]);
    assert_eq!(at(2, 0x11000, 4096), data[12288..16384]);
    assert_eq!(at(1, 0x40000, 20000 - 16384), data[16384..20000]);
    // A range crossing one boundary, in the middle of the item.
    let mut mid = vec![0u8; 100];
    c.get(&it, 8150, &mut mid).unwrap();
    assert_eq!(mid, data[8150..8250]);
    c.put(&it, 12280, &[9; 16]).unwrap();
    assert_eq!(at(1, 0x11ff8, 8), vec![9; 8]);
    assert_eq!(at(2, 0x11000, 8), vec![9; 8]);
}

#[test]
fn out_of_range_and_misaligned() {
    let g = Gas::new(1);
    let it = striped_item();
    let c = client(&g, FakeFamd::new(|_, _| None));
    let e = c.put(&it, it.size - 4, &[0; 8]).unwrap_err();
    assert_eq!(e.code(), crate::code::OUTOFRANGE, "{e}");
    let e = c.get(&it, u64::MAX, &mut [0; 2]).unwrap_err();
    assert_eq!(e.code(), crate::code::OUTOFRANGE);
    let e = c.atomic(&it, 4, AtomicOp::Add, 1u64).unwrap_err();
    assert_eq!(e.code(), crate::code::INVALID, "{e}");
    let e = c.atomic(&it, it.size, AtomicOp::Add, 1u32).unwrap_err();
    assert_eq!(e.code(), crate::code::OUTOFRANGE);
    let e = c.compare_swap_i128(&it, 8, 1, 2).unwrap_err();
    assert_eq!(e.code(), crate::code::INVALID, "{e}");
    assert_eq!(g.requests(), 0, "nothing reached GSAS");
}

#[test]
fn atomics_and_cas_loops() {
    let g = Gas::new(1);
    let it = striped_item();
    let c = client(&g, FakeFamd::new(|_, _| None));
    // Integers: GSAS's own operations.
    c.atomic(&it, 4096, AtomicOp::Set, 10i64).unwrap();
    assert_eq!(c.atomic(&it, 4096, AtomicOp::Add, 5i64).unwrap(), 10);
    assert_eq!(c.atomic(&it, 4096, AtomicOp::Subtract, 20i64).unwrap(), 15);
    assert_eq!(c.atomic(&it, 4096, AtomicOp::Fetch, 0i64).unwrap(), -5);
    // The value is on node 2 (stripe 1), at its first extent.
    assert_eq!(g.peek(2, 0x10000, 8), (-5i64).to_le_bytes());
    // Signed min/max: the home's FETCH_MIN / FETCH_MAX.
    assert_eq!(c.atomic(&it, 4096, AtomicOp::Min, -7i64).unwrap(), -5);
    assert_eq!(c.atomic(&it, 4096, AtomicOp::Max, -9i64).unwrap(), -7);
    assert_eq!(c.atomic(&it, 4096, AtomicOp::Fetch, 0i64).unwrap(), -7);
    // Unsigned 32-bit: the same bits read as unsigned.
    c.atomic(&it, 8, AtomicOp::Set, 5u32).unwrap();
    assert_eq!(c.atomic(&it, 8, AtomicOp::Max, u32::MAX).unwrap(), 5);
    assert_eq!(c.atomic(&it, 8, AtomicOp::Min, 3u32).unwrap(), u32::MAX);
    assert_eq!(c.atomic(&it, 8, AtomicOp::Or, 0x10u32).unwrap(), 3);
    assert_eq!(c.atomic(&it, 8, AtomicOp::Xor, 0x1u32).unwrap(), 0x13);
    assert_eq!(c.atomic(&it, 8, AtomicOp::And, 0x10u32).unwrap(), 0x12);
    assert_eq!(c.atomic(&it, 8, AtomicOp::Swap, 1u32).unwrap(), 0x10);
    assert_eq!(c.compare_swap(&it, 8, 1u32, 2u32).unwrap(), 1);
    assert_eq!(c.compare_swap(&it, 8, 1u32, 3u32).unwrap(), 2);
    // 32-bit neighbours are untouched.
    assert_eq!(c.atomic(&it, 12, AtomicOp::Fetch, 0u32).unwrap(), 0);
    // Floats and doubles.
    c.atomic(&it, 16, AtomicOp::Set, 1.5f32).unwrap();
    assert_eq!(c.atomic(&it, 16, AtomicOp::Add, 2.25f32).unwrap(), 1.5);
    assert_eq!(
        c.atomic(&it, 16, AtomicOp::Subtract, 0.75f32).unwrap(),
        3.75
    );
    assert_eq!(c.atomic(&it, 16, AtomicOp::Min, -1.0f32).unwrap(), 3.0);
    assert_eq!(c.atomic(&it, 16, AtomicOp::Fetch, 0f32).unwrap(), -1.0);
    c.atomic(&it, 24, AtomicOp::Set, 2.0f64).unwrap();
    assert_eq!(c.atomic(&it, 24, AtomicOp::Max, 8.5f64).unwrap(), 2.0);
    assert_eq!(c.atomic(&it, 24, AtomicOp::Add, 0.5f64).unwrap(), 8.5);
    assert_eq!(c.atomic(&it, 24, AtomicOp::Fetch, 0f64).unwrap(), 9.0);
    assert!(c.atomic(&it, 24, AtomicOp::And, 1.0f64).is_err());
    // 128-bit set, fetch and compare-and-swap (the home's CAS128).
    c.set_i128(&it, 32, -3).unwrap();
    assert_eq!(c.fetch_i128(&it, 32).unwrap(), -3);
    assert_eq!(
        c.compare_swap_i128(&it, 32, -4, 9).unwrap(),
        -3,
        "failed CAS"
    );
    assert_eq!(c.compare_swap_i128(&it, 32, -3, i128::MIN).unwrap(), -3);
    assert_eq!(c.fetch_i128(&it, 32).unwrap(), i128::MIN);
}

#[test]
fn cas_loop_retries_when_another_writer_wins() {
    let g = Gas::new(1);
    let it = striped_item();
    let c = client(&g, FakeFamd::new(|_, _| None));
    // Double arithmetic is the CAS loop (integers are the home's own operations).
    c.atomic(&it, 0, AtomicOp::Set, 100f64).unwrap();
    // Another node changes the word between the loop's read and its first CAS.
    g.interfere_once(1, 0x10000, 50f64.to_bits());
    assert_eq!(c.atomic(&it, 0, AtomicOp::Add, 1f64).unwrap(), 50.0);
    assert_eq!(c.atomic(&it, 0, AtomicOp::Fetch, 0f64).unwrap(), 51.0);
}

#[test]
fn gather_scatter_strided_and_indexed() {
    let g = Gas::new(1);
    let it = striped_item();
    let c = client(&g, FakeFamd::new(|_, _| None));
    let data: Vec<u8> = (0..it.size).map(|i| i as u8).collect();
    c.put(&it, 0, &data).unwrap();
    let mut out = vec![0u8; 3 * 8];
    c.gather(
        &it,
        Elements::Stride {
            n: 3,
            first: 1,
            stride: 600,
        },
        8,
        &mut out,
    )
    .unwrap();
    for (i, idx) in [1u64, 601, 1201].iter().enumerate() {
        assert_eq!(
            out[i * 8..i * 8 + 8],
            data[(idx * 8) as usize..(idx * 8 + 8) as usize]
        );
    }
    c.scatter(&it, Elements::Index(&[2, 0]), 4, &[1, 1, 1, 1, 2, 2, 2, 2])
        .unwrap();
    let mut head = [0u8; 12];
    c.get(&it, 0, &mut head).unwrap();
    assert_eq!(head, [2, 2, 2, 2, 4, 5, 6, 7, 1, 1, 1, 1]);
    let e = c
        .gather(&it, Elements::Index(&[0, 5000]), 4, &mut [0; 8])
        .unwrap_err();
    assert_eq!(e.code(), crate::code::OUTOFRANGE);
    // Checked before anything moved.
    let e = c
        .scatter(&it, Elements::Index(&[1, 99999]), 4, &[7; 8])
        .unwrap_err();
    assert_eq!(e.code(), crate::code::OUTOFRANGE);
    c.get(&it, 4, &mut head[..4]).unwrap();
    assert_eq!(head[..4], [4, 5, 6, 7]);
    // No elements: an error, as in OpenFAM.
    let e = c.scatter(&it, Elements::Index(&[]), 4, &[]).unwrap_err();
    assert_eq!(e.code(), crate::code::INVALID);
    let none = Elements::Stride {
        n: 0,
        first: 0,
        stride: 1,
    };
    let e = c.gather(&it, none, 4, &mut []).unwrap_err();
    assert_eq!(e.code(), crate::code::INVALID);
}

#[test]
fn copy_between_items() {
    let g = Gas::new(1);
    let it = striped_item();
    let c = client(&g, FakeFamd::new(|_, _| None));
    let data: Vec<u8> = (0..10000u32).map(|i| (i % 13) as u8).collect();
    c.put(&it, 0, &data).unwrap();
    c.copy(&it, 0, &it, 10000, 10000).unwrap();
    let mut back = vec![0u8; 10000];
    c.get(&it, 10000, &mut back).unwrap();
    assert_eq!(back, data);
    // Runs whose both ends are on one node were the home's COPY, the others came through here.
    assert!(g.copies() > 0, "no memory-side copy");
    // Overlapping, destination after the source: as memmove.
    c.copy(&it, 0, &it, 100, 10000).unwrap();
    c.get(&it, 100, &mut back).unwrap();
    assert_eq!(back, data);
}

#[test]
fn denied_gsas_access_is_noperm() {
    let g = Gas::new(1);
    let it = striped_item();
    let c = client(&g, FakeFamd::new(|_, _| None));
    g.deny(2);
    let e = c.get(&it, 4096, &mut [0; 8]).unwrap_err();
    assert_eq!(e.code(), crate::code::NOPERM, "{e}");
    let e = c.atomic(&it, 4096, AtomicOp::Add, 1u64).unwrap_err();
    assert_eq!(e.code(), crate::code::NOPERM, "{e}");
    // Node 1's stripes are still fine.
    c.get(&it, 0, &mut [0; 8]).unwrap();
}

#[test]
fn famd_failures_pass_through_with_their_code() {
    let famd = FakeFamd::new(|op, _| {
        (op == fam::op::LOOKUP_REGION).then(|| Response::err(op, 8, "region \"r\" not found"))
    });
    let c = client(&Gas::new(1), famd);
    let e = c.lookup_region("r").unwrap_err();
    assert_eq!(e.code(), 8);
    assert_eq!(e.to_string(), "region \"r\" not found");
}

#[test]
fn link_skips_stale_answers_and_times_out() {
    // Every answer preceded by a stale one (another request id) and a garbage message.
    let mut famd = FakeFamd::new(|op, _| Some(Response::ok(op, Reply::Done)));
    famd.stale = true;
    let link = Link::new(Box::new(famd), Duration::from_millis(200));
    link.done(&Request::DestroyRegion { region: 3 }).unwrap();
    // No answer at all: a timeout, not a hang.
    let silent = FakeFamd::new(|_, _| None);
    let link = Link::new(Box::new(silent), Duration::from_millis(50));
    let t = Instant::now();
    let e = link
        .done(&Request::DestroyRegion { region: 3 })
        .unwrap_err();
    assert_eq!(e.code(), crate::code::TIMEOUT, "{e}");
    assert!(t.elapsed() < Duration::from_secs(5));
}

#[test]
fn item_extents_are_paged_in() {
    // An item with 40 extents: 32 in the description, 8 in an ItemExtents page.
    let extents: Vec<fam::Extent> = (0..40u64)
        .map(|i| fam::Extent {
            node: 1,
            addr: addr(1, 0x100000 + i * 0x1000),
            len: 0x1000,
        })
        .collect();
    let all = extents.clone();
    let famd = FakeFamd::new(move |op, req| match req {
        Request::Lookup { .. } => Some(item_desc_reply(op, 9, 40 * 4096, &all)),
        Request::ItemExtents { item: 9, first: 32 } => Some(Response::ok(
            op,
            Reply::Extents(fam::ExtentPage {
                total: 40,
                first: 32,
                extents: fam::Extents::from_slice(&all[32..]).unwrap(),
            }),
        )),
        _ => None,
    });
    let c = client(&Gas::new(1), famd);
    let it = c.lookup("x", "r").unwrap();
    assert_eq!(it.extents.len(), 40);
    assert_eq!(it.extents[39].addr, extents[39].addr);
}

#[test]
fn options_lookup() {
    let o = Options {
        grpc_port: Some("9000".into()),
        ..Default::default()
    };
    let pe = Pe {
        id: 2,
        count: 4,
        job: None,
    };
    assert_eq!(o.value("PE_ID", &pe, 5).unwrap(), OptionValue::Int(2));
    assert_eq!(o.value("PE_COUNT", &pe, 5).unwrap(), OptionValue::Int(4));
    assert_eq!(
        o.value("CIS_SERVER", &pe, 5).unwrap(),
        OptionValue::Str("5".into())
    );
    assert_eq!(
        o.value("GRPC_PORT", &pe, 5).unwrap(),
        OptionValue::Str("9000".into())
    );
    assert_eq!(
        o.value("DEFAULT_REGION_NAME", &pe, 5).unwrap(),
        OptionValue::Str("Default".into())
    );
    assert_eq!(
        o.value("LOC_BUF_SIZE", &pe, 5).unwrap(),
        OptionValue::U64(0)
    );
    for n in options::NAMES {
        o.value(n, &pe, 5).unwrap();
    }
    assert_eq!(
        o.value("NO_SUCH", &pe, 5).unwrap_err().code(),
        crate::code::INVALID
    );
    for (field, bad) in [("runtime", "SLURM"), ("thread", "FAM_THREAD_X")] {
        let mut o = Options::default();
        match field {
            "runtime" => o.runtime = Some(bad.into()),
            _ => o.fam_thread_model = Some(bad.into()),
        }
        assert_eq!(o.check().unwrap_err().code(), crate::code::INVALID);
    }
    for (model, ok) in [("shared_memory", true), ("SHM", true), ("shm", false)] {
        let o = Options {
            openfam_model: Some(model.into()),
            ..Default::default()
        };
        assert_eq!(o.check().is_ok(), ok, "{model}");
    }
    for r in ["NONE", "PMIX", "PMI2", "pmix"] {
        let o = Options {
            runtime: Some(r.into()),
            ..Default::default()
        };
        o.check().unwrap();
    }
}

#[test]
fn famd_node_lookup_order() {
    use config::{resolve_famd_node as r, Source};
    let file = "# unimem FAM\n  famd_node = 3  # the metadata node\nother = 1\n";
    assert_eq!(r(Some("7"), Some(file), Some("9")), Ok((7, Source::Env)));
    assert_eq!(r(None, Some(file), Some("9")), Ok((3, Source::File)));
    assert_eq!(
        r(None, Some("x = 1"), Some("9")),
        Ok((9, Source::CisServer))
    );
    assert_eq!(r(None, None, Some("127.0.0.1")), Ok((0, Source::Default)));
    assert_eq!(r(None, None, None), Ok((0, Source::Default)));
    assert!(r(Some("seven"), None, None).is_err());
    assert!(r(None, Some("famd_node = x"), None).is_err());
    assert_eq!(
        config::timeout_from(Some("250")),
        Duration::from_millis(250)
    );
    assert_eq!(config::timeout_from(None), config::DEFAULT_TIMEOUT);
}

#[test]
fn job_environment() {
    assert_eq!(pe::job_env(None, Some("1")).unwrap(), None);
    assert_eq!(
        pe::job_env(Some("0x1000"), Some("3")).unwrap(),
        Some((0x1000, 3))
    );
    assert!(pe::job_env(Some("zz"), Some("3")).is_err());
    let g = Gas::new(1);
    let single = g.with(|m| pe::join(m, None)).unwrap();
    assert_eq!(single, Pe::SINGLE);
    g.with(|m| pe::barrier(m, &single)).unwrap();
}

#[test]
fn descriptors_keep_their_items_allocations_until_the_last_closes() {
    let g = Gas::new(0);
    let ext = [
        fam::Extent {
            node: 1,
            addr: addr(1, 0x3000),
            len: 0x1000,
        },
        fam::Extent {
            node: 2,
            addr: addr(2, 0x5000),
            len: 0x1000,
        },
    ];
    let c = client(
        &g,
        FakeFamd::new(move |op, _| {
            Some(if op == fam::op::DEALLOCATE {
                Response::ok(op, Reply::Done)
            } else {
                item_desc_reply(op, 4, 100, &ext)
            })
        }),
    );
    let a = c.lookup("x", "r").unwrap();
    let kept = vec![(addr(1, 0x3000), true), (addr(2, 0x5000), true)];
    assert_eq!(
        g.keeps(),
        kept,
        "the first descriptor keeps every allocation"
    );
    let b = c.lookup("x", "r").unwrap();
    c.keep(&a, false);
    assert_eq!(g.keeps(), kept, "a second descriptor is still open");
    c.keep(&b, false);
    let mut all = kept.clone();
    all.extend([(addr(1, 0x3000), false), (addr(2, 0x5000), false)]);
    assert_eq!(g.keeps(), all, "the last close lets go");
    // A close too many sends nothing; a deallocated item's count is forgotten.
    c.keep(&b, false);
    let _ = c.lookup("x", "r").unwrap();
    c.deallocate(4).unwrap();
    let _ = c.lookup("x", "r").unwrap();
    assert_eq!(g.keeps().iter().filter(|k| k.1).count(), 6);
}

#[test]
fn owned_item_from_description() {
    let ext = [fam::Extent {
        node: 2,
        addr: addr(2, 0x3000),
        len: 0x2000,
    }];
    let Reply::Item(d) = item_desc_reply(fam::op::STAT_ITEM, 4, 100, &ext)
        .result
        .unwrap()
    else {
        panic!()
    };
    let (it, n) = item::item_from(&d);
    assert_eq!(n, 1);
    assert_eq!(
        it,
        Item {
            id: ItemId(4),
            region: RegionId(1),
            name: "x".into(),
            size: 100,
            uid: 1000,
            gid: 1000,
            mode: 0o640,
            stripe: None,
            extents: vec![Extent {
                node: 2,
                addr: addr(2, 0x3000),
                len: 0x2000
            }],
        }
    );
}

#[test]
fn queued_operations_go_to_each_home_at_the_flush() {
    let g = Gas::new(1);
    let it = striped_item();
    let c = client(&g, FakeFamd::new(|_, _| None));
    // 8-byte elements 0, 512 (node 2), 1024 (node 1's second stripe), 2400 (third extent),
    // element 0 twice: both adds count.
    let idx = [0u64, 512, 1024, 2400, 0];
    let mut add = [5i64, -3, 7, 1 << 40, 10];
    // SAFETY: `add` lives across the call (ADD reads it when queued).
    unsafe { c.queue_operation(QueueOp::AddIndexed, add.as_mut_ptr().cast(), &it, &idx, 8) }
        .unwrap();
    assert_eq!(
        (g.indexed(), c.queued(it.id.0)),
        (0, 5),
        "queued, nothing sent"
    );
    // The values were taken when queued: the buffer may change now.
    add.fill(0);
    assert_eq!(add, [0; 5]);
    c.aggregate_flush(&it).unwrap();
    assert_eq!(g.indexed(), 2, "one request per home");
    assert_eq!(c.queued(it.id.0), 0);
    assert_eq!(g.peek(1, 0x10000, 8), 15i64.to_le_bytes());
    assert_eq!(g.peek(2, 0x10000, 8), (-3i64).to_le_bytes());
    assert_eq!(g.peek(1, 0x11000, 8), 7i64.to_le_bytes());
    assert_eq!(
        g.peek(1, 0x40000 + 2400 * 8 - 16384, 8),
        (1i64 << 40).to_le_bytes()
    );
    // 4-byte scatter and gather: index i at 4i.
    let mut vals = [0xdead_beefu32, 0x1234, u32::MAX];
    let idx4 = [1u64, 1030, 4999];
    // SAFETY: as above.
    unsafe { c.queue_operation(QueueOp::Scatter, vals.as_mut_ptr().cast(), &it, &idx4, 4) }
        .unwrap();
    let mut back = [0u32; 4];
    let gidx = [1u64, 1030, 4999, 0];
    // SAFETY: `back` lives until after the flush below, untouched meanwhile.
    unsafe { c.queue_operation(QueueOp::Gather, back.as_mut_ptr().cast(), &it, &gidx, 4) }.unwrap();
    c.aggregate_flush(&it).unwrap();
    assert_eq!(
        back,
        [0xdead_beef, 0x1234, u32::MAX, 15],
        "scatters applied first"
    );
    let mut mid = [0u8; 4];
    c.get(&it, 1030 * 4, &mut mid).unwrap();
    assert_eq!(u32::from_ne_bytes(mid), 0x1234);
    // A flush with nothing queued sends nothing.
    let before = g.indexed();
    c.aggregate_flush(&it).unwrap();
    assert_eq!(g.indexed(), before);
}

#[test]
fn a_full_batch_goes_at_once_and_its_failure_waits_for_the_flush() {
    use unimem_wire::gsas::indexed::MAX_PAIRS;
    let g = Gas::new(1);
    let it = striped_item();
    let c = client(&g, FakeFamd::new(|_, _| None));
    // 300 adds of 1 to element 3 (node 1): one full batch of 256 goes, 44 wait.
    let idx = vec![3u64; 300];
    let mut ones = vec![1u64; 300];
    // SAFETY: `ones` lives across the call.
    unsafe { c.queue_operation(QueueOp::AddIndexed, ones.as_mut_ptr().cast(), &it, &idx, 8) }
        .unwrap();
    assert_eq!(g.indexed(), 1);
    assert_eq!(c.queued(it.id.0), 300 - MAX_PAIRS as usize);
    assert_eq!(g.peek(1, 0x10018, 8), 256u64.to_le_bytes());
    c.aggregate_flush(&it).unwrap();
    assert_eq!(g.peek(1, 0x10018, 8), 300u64.to_le_bytes());
    // Node 2 refuses: the automatic send fails quietly, the flush reports it (once).
    g.deny(2);
    let idx = vec![600u64; 260];
    // SAFETY: as above.
    unsafe { c.queue_operation(QueueOp::AddIndexed, ones.as_mut_ptr().cast(), &it, &idx, 8) }
        .unwrap();
    let e = c.aggregate_flush(&it).unwrap_err();
    assert_eq!(e.code(), crate::code::NOPERM, "{e}");
    c.aggregate_flush(&it).unwrap();
    assert_eq!(
        g.peek(2, 0x10000 + 88 * 8, 8),
        [0; 8],
        "nothing added on node 2"
    );
}

#[test]
fn queue_operation_checks_everything_first() {
    let g = Gas::new(1);
    let it = striped_item();
    let c = client(&g, FakeFamd::new(|_, _| None));
    let mut v = [1u64; 3];
    let p = v.as_mut_ptr().cast();
    // SAFETY (each call): `v` lives across it.
    let e = unsafe { c.queue_operation(QueueOp::Scatter, p, &it, &[0, 1, 2500], 8) }.unwrap_err();
    assert_eq!(e.code(), crate::code::OUTOFRANGE, "{e}");
    let e = unsafe { c.queue_operation(QueueOp::Scatter, p, &it, &[u64::MAX], 8) }.unwrap_err();
    assert_eq!(e.code(), crate::code::OUTOFRANGE, "{e}");
    for size in [0, 1, 2, 16] {
        let e = unsafe { c.queue_operation(QueueOp::Gather, p, &it, &[0], size) }.unwrap_err();
        assert_eq!(e.code(), crate::code::INVALID, "size {size}: {e}");
    }
    let e = unsafe { c.queue_operation(QueueOp::Scatter, std::ptr::null_mut(), &it, &[0], 8) }
        .unwrap_err();
    assert_eq!(e.code(), crate::code::NULLPTR, "{e}");
    assert_eq!(c.queued(it.id.0), 0, "nothing queued");
    c.aggregate_flush(&it).unwrap();
    assert_eq!(g.requests(), 0, "nothing reached GSAS");
    assert_eq!(QueueOp::from_c(2), Some(QueueOp::Gather));
    assert_eq!(QueueOp::from_c(3), None);
}
