use super::*;

fn msg(opcode: u8, node: u8, instance: u8, first: u32, chunks: u32, tag: u8) -> KramMsg {
    KramMsg::new(opcode, node, instance, first, chunks, tag)
}

#[test]
fn round_trip_v1() {
    let m = msg(to_daemon::FREE, 15, 3, 200, 56, 0);
    assert_eq!(m.version, V1);
    let w = m.encode();
    assert_eq!(w >> 60, 0x8);
    assert_eq!(
        w & 0x0fff_ffff_ff00_0000,
        0,
        "a v1 word uses the seed's bits only"
    );
    assert_eq!(KramMsg::decode_for_daemon(w, V2), Ok(m));
    assert_eq!(KramMsg::decode_for_daemon(w, V1), Ok(m));
    let offer = msg(to_driver::OFFER, 2, 1, 0, 255, 0);
    assert_eq!(KramMsg::decode_for_driver(offer.encode()), Ok(offer));
    // The seed's word for "REQUEST 32 chunks, node 0, instance 1", bit for bit.
    assert_eq!(
        msg(to_daemon::REQUEST, 0, 1, 0, 32, 0).encode(),
        0x1000_0000_0020_0010
    );
    assert_eq!(LENDABLE_OFFSET, 3 << 20);
}

#[test]
fn round_trip_v2() {
    let m = msg(to_daemon::CONFIRM, 1, 2, 300, 1024, 9);
    assert_eq!(m.version, V2);
    let w = m.encode();
    assert_eq!((w >> 56) & 0xf, 2);
    assert_eq!(KramMsg::decode_for_daemon(w, V2), Ok(m));
    let big = msg(to_driver::ACK, 2, 0, 65535 - 40000, 40000, 15);
    assert_eq!(KramMsg::decode_for_driver(big.encode()), Ok(big));
    assert_eq!(KramMsg::request(0, 1, 32, 32, 0).version, V1);
    assert_eq!(KramMsg::request(0, 1, 32, 16, 0).version, V2);
    let r = KramMsg::request(0, 1, 300, 300, 7);
    assert_eq!((r.version, r.min_chunks(), r.tag), (V2, 300, 7));
    assert_eq!(KramMsg::decode_for_daemon(r.encode(), V2), Ok(r));
    // A v2 REQUEST carries its minimum in the first-chunk field.
    let req = KramMsg {
        first_chunk: 100,
        ..msg(to_daemon::REQUEST, 0, 1, 0, 2048, 0)
    };
    let back = KramMsg::decode_for_daemon(req.encode(), V2).unwrap();
    assert_eq!(back.min_chunks(), 100);
    assert_eq!(msg(to_daemon::REQUEST, 0, 1, 0, 32, 0).min_chunks(), 32);
    // A reply keeps the layout and the range.
    let ack = m.reply(to_driver::ACK, 5, m.tag);
    assert_eq!(
        (ack.version, ack.first_chunk, ack.chunks, ack.node),
        (V2, 300, 1024, 5)
    );
}

#[test]
fn v2_to_a_v1_peer_is_refused() {
    let w = msg(to_daemon::REQUEST, 0, 0, 0, 1024, 0);
    let w = KramMsg {
        first_chunk: 1024,
        ..w
    }
    .encode();
    assert_eq!(
        KramMsg::decode_for_daemon(w, V1),
        Err(KramError::Version(V2))
    );
    for version in [1u64, 3, 15] {
        let bad = (w & !(0xf << 56)) | version << 56;
        assert_eq!(
            KramMsg::decode_for_daemon(bad, V2),
            Err(KramError::Version(version as u8))
        );
        assert_eq!(
            KramMsg::decode_for_driver(bad),
            Err(KramError::Version(version as u8))
        );
    }
}

#[test]
fn rejects_malformed() {
    let req = msg(to_daemon::REQUEST, 0, 0, 0, 32, 0);
    assert_eq!(
        KramMsg::decode_for_daemon(req.encode() | 1 << 30, V2),
        Err(KramError::Reserved)
    );
    assert_eq!(
        KramMsg::decode_for_daemon(req.encode() & !(0xff << 16), V2),
        Err(KramError::Range)
    );
    // A v1 REQUEST names no first chunk; a v2 one a minimum within 1..=chunks.
    assert_eq!(
        KramMsg::decode_for_daemon(req.encode() | 1 << 8, V2),
        Err(KramError::Range)
    );
    let v2req = KramMsg {
        version: V2,
        first_chunk: 0,
        chunks: 1000,
        ..req
    };
    assert_eq!(
        KramMsg::decode_for_daemon(v2req.encode(), V2),
        Err(KramError::Range)
    );
    let v2req = KramMsg {
        first_chunk: 1001,
        ..v2req
    };
    assert_eq!(
        KramMsg::decode_for_daemon(v2req.encode(), V2),
        Err(KramError::Range)
    );
    let v2req = KramMsg {
        first_chunk: 1,
        ..v2req
    };
    assert_eq!(
        KramMsg::decode_for_daemon(v2req.encode() | 1 << 50, V2),
        Err(KramError::Reserved)
    );
    let bad = KramMsg { opcode: 0x5, ..req };
    assert_eq!(
        KramMsg::decode_for_daemon(bad.encode(), V2),
        Err(KramError::Opcode(5))
    );
    // An offer is not something a daemon accepts, nor a request something a driver accepts.
    assert_eq!(
        KramMsg::decode_for_driver(KramMsg { opcode: 0x3, ..req }.encode()),
        Err(KramError::Opcode(3))
    );
    let past_end = KramMsg {
        version: V1,
        ..msg(to_driver::OFFER, 1, 0, 250, 10, 0)
    };
    assert_eq!(
        KramMsg::decode_for_driver(past_end.encode()),
        Err(KramError::Range)
    );
    let free_past_end = KramMsg {
        opcode: to_daemon::FREE,
        ..past_end
    };
    assert_eq!(
        KramMsg::decode_for_daemon(free_past_end.encode(), V2),
        Err(KramError::Range)
    );
    let v2_past_end = KramMsg {
        version: V2,
        first_chunk: 65000,
        chunks: 1000,
        ..past_end
    };
    assert_eq!(
        KramMsg::decode_for_driver(v2_past_end.encode()),
        Err(KramError::Range)
    );
}

#[test]
fn lent_ranges() {
    const MIB: u64 = 1 << 20;
    // 3 nodes in 1 GiB: partitions of 340 MiB after 2 MiB of control area.
    let r = |lender, first, chunks| lent_range(2 * MIB, 340 * MIB, lender, first, chunks);
    assert_eq!(r(0, 0, 1), Some((5 * MIB, MIB)));
    assert_eq!(r(1, 39, 128), Some((384 * MIB, 128 * MIB)));
    // The last chunk that fits node 1's partition, and one past it.
    assert_eq!(r(1, 336, 1), Some((681 * MIB, MIB)));
    assert_eq!(r(1, 337, 1), None);
    assert_eq!(lent_range(u64::MAX, 1, 1, 0, 0), None);
}

#[test]
fn tags() {
    let req = msg(to_daemon::REQUEST, 2, NUMA_INSTANCE, 0, 128, 7);
    let w = req.encode();
    assert_eq!((w >> 24) & 0xf, 7);
    assert_eq!(KramMsg::decode_for_daemon(w, V2), Ok(req));
    // Sequence numbers in CONFIRM, RENEW and ACK; FREE says who wipes (0 or FREE_UNWIPED, in
    // both layouts); no tag in DECLINE, OFFER, REVOKE.
    for op in [to_daemon::CONFIRM, to_daemon::RENEW] {
        let m = msg(op, 2, 1, 1, 128, 11);
        assert_eq!(KramMsg::decode_for_daemon(m.encode(), V2), Ok(m));
    }
    for (first, chunks) in [(1, 128), (250, 10)] {
        for tag in [0, to_daemon::FREE_UNWIPED] {
            let m = msg(to_daemon::FREE, 2, 1, first, chunks, tag);
            assert_eq!(KramMsg::decode_for_daemon(m.encode(), V2), Ok(m));
        }
    }
    for (op, tag) in [
        (to_daemon::FREE, 2),
        (to_daemon::FREE, 11),
        (to_daemon::DECLINE, 1),
    ] {
        let m = msg(op, 2, 1, 1, 128, tag);
        assert_eq!(
            KramMsg::decode_for_daemon(m.encode(), V2),
            Err(KramError::Reserved)
        );
    }
    for op in [to_driver::OFFER, to_driver::REVOKE] {
        let m = msg(op, 2, 1, 1, 128, 11);
        assert_eq!(
            KramMsg::decode_for_driver(m.encode()),
            Err(KramError::Reserved)
        );
    }
    let ack = msg(to_driver::ACK, 2, 1, 1, 128, 11);
    assert_eq!(KramMsg::decode_for_driver(ack.encode()), Ok(ack));
    assert_eq!(
        reply_service(NUMA_INSTANCE),
        crate::mailbox::service::NUMA_DRIVER
    );
    assert_eq!(reply_service(0), crate::mailbox::service::KRAM_DRIVER);
    // Every range of the GSAS pool answers to the GSAS service; the last swap instance does not.
    for i in GSAS_INSTANCES {
        assert_eq!(
            reply_service(i),
            crate::mailbox::service::GSAS,
            "instance {i}"
        );
        assert!(is_gsas(i));
    }
    let last_swap = (MAX_INSTANCES - 1) as u8;
    assert_eq!(
        reply_service(last_swap),
        crate::mailbox::service::KRAM_DRIVER
    );
    assert!(!is_gsas(last_swap) && !is_gsas(NUMA_INSTANCE));
    // A range that ends past chunk 256 needs v2, wherever it starts.
    assert!(KramMsg::fits_v1(250, 6) && !KramMsg::fits_v1(250, 10));
    let m = msg(to_driver::OFFER, 1, 0, 250, 10, 0);
    assert_eq!(m.version, V2);
    assert_eq!(KramMsg::decode_for_driver(m.encode()), Ok(m));
}

#[test]
fn every_word_decodes_or_errs() {
    // A cheap sweep over structured garbage: no panics, and accepted words round-trip.
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for _ in 0..200_000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        for w in [x, x & 0xf000_0000_0fff_ffff, x & 0xf200_0fff_ffff_ffff] {
            for v in [V1, V2] {
                if let Ok(m) = KramMsg::decode_for_daemon(w, v) {
                    assert_eq!(m.encode(), w);
                    assert!(m.version <= v);
                }
            }
            if let Ok(m) = KramMsg::decode_for_driver(w) {
                assert_eq!(m.encode(), w);
            }
        }
    }
}
