//! Frame encoding, decoding and resynchronization.

use unimem_cluster_agent::decoder::{FrameDecoder, Interrupt};
use unimem_cluster_agent::frame::{
    decode_frame, encode_raw, Frame, FrameError, Request, HEADER_LEN, MAGIC, MAX_FRAME,
    MAX_PAYLOAD, TRAILER_LEN,
};

fn crc32(data: &[u8]) -> u32 {
    // Independent bitwise implementation, so the tests do not just trust
    // the crate's table.
    let mut c = !0u32;
    for &b in data {
        c ^= u32::from(b);
        for _ in 0..8 {
            c = if c & 1 != 0 {
                0xEDB8_8320 ^ (c >> 1)
            } else {
                c >> 1
            };
        }
    }
    !c
}

fn all_kinds() -> Vec<Frame> {
    vec![
        Frame::Request(Request {
            id: 0x0123_4567_89ab_cdef,
            timeout_ms: 1500,
            env: vec![
                ("A".into(), "1".into()),
                ("EMPTY".into(), String::new()),
                ("UNICODE".into(), "größe ✓".into()),
            ],
            command: "echo hi; exit 3".into(),
        }),
        Frame::Request(Request {
            id: 0,
            timeout_ms: 0,
            env: vec![],
            command: String::new(),
        }),
        Frame::Ping { id: 7 },
        Frame::Pong { id: u64::MAX },
        Frame::Stdout {
            id: 1,
            data: (0..=255).collect(),
        },
        Frame::Stderr {
            id: 2,
            data: vec![],
        },
        Frame::Exit { id: 3, status: 124 },
        Frame::Exit { id: 3, status: -1 },
    ]
}

fn decode_all(dec: &mut FrameDecoder) -> Vec<Frame> {
    std::iter::from_fn(|| dec.next_frame()).collect()
}

/// A Stdout frame header with a valid header checksum that promises `len`
/// payload bytes.
fn header_promising(id: u64, len: u32) -> Vec<u8> {
    let mut h = Vec::new();
    h.extend_from_slice(&MAGIC);
    h.extend_from_slice(&[1, 4, 0, 0]);
    h.extend_from_slice(&id.to_le_bytes());
    h.extend_from_slice(&len.to_le_bytes());
    let c = crc32(&h);
    h.extend_from_slice(&c.to_le_bytes());
    h
}

#[test]
fn every_kind_round_trips() {
    for frame in all_kinds() {
        let bytes = frame.encode().unwrap();
        let (back, used) = decode_frame(&bytes).unwrap();
        assert_eq!(back, frame);
        assert_eq!(used, bytes.len());
    }
}

#[test]
fn layout_matches_documentation() {
    let bytes = Frame::Exit {
        id: 0x1122_3344_5566_7788,
        status: 3,
    }
    .encode()
    .unwrap();
    assert_eq!(bytes.len(), HEADER_LEN + 4 + TRAILER_LEN);
    assert_eq!(&bytes[0..4], &MAGIC);
    assert_eq!(bytes[4], 1, "version");
    assert_eq!(bytes[5], 6, "Exit kind");
    assert_eq!(&bytes[6..8], &[0, 0]);
    assert_eq!(&bytes[8..16], &0x1122_3344_5566_7788u64.to_le_bytes());
    assert_eq!(&bytes[16..20], &4u32.to_le_bytes());
    assert_eq!(&bytes[20..24], &crc32(&bytes[..20]).to_le_bytes());
    assert_eq!(&bytes[24..28], &3i32.to_le_bytes());
    assert_eq!(&bytes[28..32], &crc32(&bytes[..28]).to_le_bytes());
}

#[test]
fn decoding_ignores_bytes_after_the_frame() {
    let mut bytes = Frame::Ping { id: 9 }.encode().unwrap();
    let len = bytes.len();
    bytes.extend_from_slice(b"next frame starts here");
    assert_eq!(decode_frame(&bytes).unwrap(), (Frame::Ping { id: 9 }, len));
}

#[test]
fn every_truncation_is_reported_as_truncated() {
    for frame in all_kinds() {
        let bytes = frame.encode().unwrap();
        for cut in 0..bytes.len() {
            match decode_frame(&bytes[..cut]) {
                Err(FrameError::Truncated { needed, have }) => {
                    assert_eq!(have, cut);
                    assert!(needed > cut && needed <= bytes.len());
                }
                other => panic!("cut at {cut} of {frame:?}: {other:?}"),
            }
        }
    }
}

#[test]
fn oversized_length_is_rejected_from_the_header_alone() {
    let h = header_promising(1, (MAX_PAYLOAD + 1) as u32);
    assert_eq!(
        decode_frame(&h),
        Err(FrameError::Oversized {
            len: MAX_PAYLOAD + 1,
            max: MAX_PAYLOAD
        })
    );
    let h = header_promising(1, u32::MAX);
    assert!(matches!(
        decode_frame(&h),
        Err(FrameError::Oversized { .. })
    ));

    // The streaming decoder must drop it rather than wait for 4 GiB.
    let mut dec = FrameDecoder::default();
    dec.push(&h);
    dec.push(&Frame::Ping { id: 5 }.encode().unwrap());
    assert_eq!(decode_all(&mut dec), vec![Frame::Ping { id: 5 }]);
    assert_eq!(dec.buffered(), 0);
    let skipped = dec.take_skipped().unwrap();
    assert_eq!(skipped.bytes, h.len() as u64);
}

#[test]
fn encoding_refuses_oversized_payloads() {
    let big = Frame::Stdout {
        id: 1,
        data: vec![0; MAX_PAYLOAD + 1],
    };
    assert!(matches!(big.encode(), Err(FrameError::Oversized { .. })));
    let max = Frame::Stdout {
        id: 1,
        data: vec![0xAB; MAX_PAYLOAD],
    };
    let bytes = max.encode().unwrap();
    assert_eq!(bytes.len(), MAX_FRAME);
    assert_eq!(decode_frame(&bytes).unwrap().0, max);
}

#[test]
fn bad_magic_version_and_checksums_are_detected() {
    let good = Frame::Stdout {
        id: 4,
        data: b"payload".to_vec(),
    }
    .encode()
    .unwrap();

    let mut bad = good.clone();
    bad[0] ^= 0xff;
    assert_eq!(decode_frame(&bad), Err(FrameError::BadMagic));
    assert_eq!(decode_frame(b"x"), Err(FrameError::BadMagic));

    let mut bad = good.clone();
    bad[10] ^= 1; // id, covered by the header checksum
    assert_eq!(decode_frame(&bad), Err(FrameError::HeaderChecksum));

    let mut bad = good.clone();
    bad[HEADER_LEN] ^= 1; // payload
    assert_eq!(decode_frame(&bad), Err(FrameError::FrameChecksum));

    // A future version with a consistent header is recognized as such.
    let mut v2 = good.clone();
    v2[4] = 2;
    let c = crc32(&v2[..20]);
    v2[20..24].copy_from_slice(&c.to_le_bytes());
    assert_eq!(decode_frame(&v2), Err(FrameError::UnsupportedVersion(2)));
}

#[test]
fn malformed_payloads_are_errors_not_panics() {
    let unknown = encode_raw(99, 1, b"").unwrap();
    assert_eq!(decode_frame(&unknown), Err(FrameError::UnknownKind(99)));

    let exit_short = encode_raw(6, 1, &[1, 2]).unwrap();
    assert!(matches!(
        decode_frame(&exit_short),
        Err(FrameError::Malformed { .. })
    ));

    let ping_with_payload = encode_raw(2, 1, b"x").unwrap();
    assert!(matches!(
        decode_frame(&ping_with_payload),
        Err(FrameError::Malformed { .. })
    ));

    // Request claiming four billion env entries in a 16-byte payload.
    let mut p = Vec::new();
    p.extend_from_slice(&0u64.to_le_bytes());
    p.extend_from_slice(&u32::MAX.to_le_bytes());
    p.extend_from_slice(&0u32.to_le_bytes());
    let lying_count = encode_raw(1, 1, &p).unwrap();
    assert!(matches!(
        decode_frame(&lying_count),
        Err(FrameError::Malformed { .. })
    ));

    // Command length pointing past the payload.
    let mut p = Vec::new();
    p.extend_from_slice(&0u64.to_le_bytes());
    p.extend_from_slice(&0u32.to_le_bytes());
    p.extend_from_slice(&1000u32.to_le_bytes());
    p.extend_from_slice(b"ls");
    let long_cmd = encode_raw(1, 1, &p).unwrap();
    assert!(matches!(
        decode_frame(&long_cmd),
        Err(FrameError::Malformed { .. })
    ));

    // Invalid UTF-8 command.
    let mut p = Vec::new();
    p.extend_from_slice(&0u64.to_le_bytes());
    p.extend_from_slice(&0u32.to_le_bytes());
    p.extend_from_slice(&2u32.to_le_bytes());
    p.extend_from_slice(&[0xff, 0xfe]);
    let not_utf8 = encode_raw(1, 1, &p).unwrap();
    assert!(matches!(
        decode_frame(&not_utf8),
        Err(FrameError::Malformed { .. })
    ));

    // The stream decoder drops such frames whole and carries on.
    let mut dec = FrameDecoder::default();
    for bad in [&unknown, &exit_short, &lying_count, &long_cmd, &not_utf8] {
        dec.push(bad);
    }
    dec.push(&Frame::Pong { id: 8 }.encode().unwrap());
    assert_eq!(decode_all(&mut dec), vec![Frame::Pong { id: 8 }]);
}

#[test]
fn garbage_before_a_valid_frame_is_skipped() {
    let frame = Frame::Stdout {
        id: 11,
        data: b"hello".to_vec(),
    };
    // Garbage that includes partial and complete magic sequences.
    let mut garbage = b"leftover text from an old client\n".to_vec();
    garbage.extend_from_slice(&MAGIC[..2]);
    garbage.extend_from_slice(&MAGIC);
    garbage.extend_from_slice(&[0u8; 40]);
    garbage.extend_from_slice(&MAGIC[..3]);

    let mut stream = garbage.clone();
    stream.extend_from_slice(&frame.encode().unwrap());
    let mut dec = FrameDecoder::default();
    dec.push(&stream);
    assert_eq!(decode_all(&mut dec), vec![frame.clone()]);
    assert_eq!(dec.take_skipped().unwrap().bytes, garbage.len() as u64);
    assert_eq!(dec.take_skipped(), None);
    assert_eq!(dec.buffered(), 0);

    // Same stream, one byte at a time.
    let mut dec = FrameDecoder::default();
    let mut got = Vec::new();
    for b in &stream {
        dec.push(std::slice::from_ref(b));
        got.extend(decode_all(&mut dec));
    }
    assert_eq!(got, vec![frame]);
}

#[test]
fn a_suffix_of_a_frame_is_garbage_and_the_next_frame_survives() {
    // What a client sees when the agent's previous writes went partly to a
    // client that has since disconnected.
    let old = Frame::Stdout {
        id: 1,
        data: vec![b'x'; 1000],
    }
    .encode()
    .unwrap();
    let new = Frame::Exit { id: 2, status: 0 };
    let mut dec = FrameDecoder::new(Interrupt::Id(2));
    dec.push(&old[100..]);
    dec.push(&new.encode().unwrap());
    assert_eq!(decode_all(&mut dec), vec![new]);
}

#[test]
fn stale_header_with_long_payload_is_interrupted_by_a_new_header() {
    // A client died after sending the header of a big frame. Without
    // interruption the decoder would swallow the next client's request.
    let stale = header_promising(1, 100_000);
    let req = Frame::Request(Request {
        id: 2,
        timeout_ms: 0,
        env: vec![],
        command: "true".into(),
    });

    let mut waiting = FrameDecoder::new(Interrupt::Never);
    waiting.push(&stale);
    waiting.push(&req.encode().unwrap());
    assert_eq!(decode_all(&mut waiting), vec![]);

    let mut agent = FrameDecoder::new(Interrupt::AnyHeader);
    agent.push(&stale);
    agent.push(&req.encode().unwrap());
    assert_eq!(decode_all(&mut agent), vec![req.clone()]);

    // A client only lets its own id interrupt.
    let mut client = FrameDecoder::new(Interrupt::Id(3));
    client.push(&stale);
    client.push(&req.encode().unwrap());
    assert_eq!(decode_all(&mut client), vec![]);
    let mine = Frame::Exit { id: 3, status: 0 };
    client.push(&mine.encode().unwrap());
    assert_eq!(decode_all(&mut client), vec![mine]);
}

#[test]
fn payload_that_embeds_a_frame_is_not_cut_when_complete() {
    // Output that happens to contain a whole frame (someone cat-ing a
    // capture) must arrive intact, even with interruption enabled.
    let inner = Frame::Exit { id: 3, status: 0 }.encode().unwrap();
    let outer = Frame::Stdout {
        id: 3,
        data: inner.clone(),
    };
    let mut dec = FrameDecoder::new(Interrupt::Id(3));
    dec.push(&outer.encode().unwrap());
    assert_eq!(decode_all(&mut dec), vec![outer]);
}

#[test]
fn reset_discards_a_partial_frame() {
    let bytes = Frame::Ping { id: 1 }.encode().unwrap();
    let mut dec = FrameDecoder::default();
    dec.push(&bytes[..10]);
    assert_eq!(dec.next_frame(), None);
    dec.reset();
    assert_eq!(dec.buffered(), 0);
    dec.push(&bytes);
    assert_eq!(dec.next_frame(), Some(Frame::Ping { id: 1 }));
}

#[test]
fn random_garbage_never_panics_and_stays_bounded() {
    // Deterministic xorshift so a failure is reproducible.
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let valid = Frame::Pong { id: 42 }.encode().unwrap();
    for interrupt in [Interrupt::Never, Interrupt::AnyHeader, Interrupt::Id(42)] {
        let mut dec = FrameDecoder::new(interrupt);
        let mut found = 0;
        for round in 0..2000 {
            let len = (next() % 300) as usize;
            let mut chunk: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            // Sprinkle magic so the header paths get exercised too.
            if round % 3 == 0 && len > 8 {
                let at = (next() as usize) % (len - 4);
                chunk[at..at + 4].copy_from_slice(&MAGIC);
            }
            dec.push(&chunk);
            while let Some(f) = dec.next_frame() {
                assert_eq!(f, Frame::Pong { id: 42 });
                found += 1;
            }
            assert!(
                dec.buffered() <= MAX_FRAME,
                "buffer grew to {}",
                dec.buffered()
            );
            if round % 100 == 99 {
                // A valid frame after garbage is found once the garbage is
                // ruled out (random bytes never form a checksummed header).
                dec.push(&valid);
                while let Some(f) = dec.next_frame() {
                    assert_eq!(f, Frame::Pong { id: 42 });
                    found += 1;
                }
            }
        }
        assert_eq!(found, 20, "{interrupt:?}");
    }
}
