// SPDX-License-Identifier: GPL-2.0
//! Framing: fragment counts, malformed fragments, and every confused sequence a sender can
//! produce.

use super::*;

#[test]
fn fragment_counts_and_bounds() {
    assert_eq!(FRAGMENT_DATA, 21);
    assert_eq!(MAX_FRAGMENTS, 49);
    let msg: Vec<u8> = (0..MAX_MESSAGE).map(|i| (i * 7 + 1) as u8).collect();
    for len in [1, 20, 21, 22, 42, 43, 500, MAX_MESSAGE - 1, MAX_MESSAGE] {
        let f: Vec<_> = fragments(3, &msg[..len]).unwrap().collect();
        assert_eq!(f.len(), len.div_ceil(21), "{len}");
        assert_eq!(f[0][0] & flag::FIRST, flag::FIRST);
        assert!(f[1..].iter().all(|p| p[0] & flag::FIRST == 0));
        assert_eq!(f.last().unwrap()[0] & flag::LAST, flag::LAST);
        assert!(f[..f.len() - 1].iter().all(|p| p[0] & flag::LAST == 0));
        assert_eq!(f.last().unwrap()[3] as usize, len - (f.len() - 1) * 21);
        assert_eq!(carry(3, &msg[..len]), &msg[..len]);
    }
    assert!(matches!(fragments(0, &[]), Err(FrameError::Empty)));
    assert!(matches!(
        fragments(0, &[0; MAX_MESSAGE + 1]),
        Err(FrameError::TooLong)
    ));
    let it = fragments(0, &msg).unwrap();
    assert_eq!(it.len(), MAX_FRAGMENTS);
}

/// Payload of a hand-made fragment.
fn raw(flags: u8, id: u8, index: u8, data: &[u8]) -> [u8; PAYLOAD_LEN] {
    let mut p = [0u8; PAYLOAD_LEN];
    p[..4].copy_from_slice(&[flags, id, index, data.len() as u8]);
    p[4..4 + data.len()].copy_from_slice(data);
    p
}

/// Whether `r` still takes a whole new message after whatever happened to it.
fn still_works(r: &mut Reassembler) {
    let msg: Vec<u8> = (0..100u8).collect();
    let mut got = None;
    for p in fragments(77, &msg).unwrap() {
        let fed = r.feed(&p).unwrap();
        assert_eq!(fed.interrupted, None);
        got = fed.message.map(|m| m.to_vec());
    }
    assert_eq!(got.unwrap(), msg);
}

#[test]
fn malformed_fragments() {
    let full = [7u8; FRAGMENT_DATA];
    let cases: [([u8; PAYLOAD_LEN], FrameError); 9] = [
        (raw(0x04, 1, 0, &full), FrameError::Flags(0x04)),
        (
            raw(0x80 | flag::FIRST, 1, 0, &full),
            FrameError::Flags(0x81),
        ),
        (
            raw(flag::FIRST | flag::LAST, 1, 0, &[]),
            FrameError::DataLen(0),
        ),
        (raw(flag::FIRST, 1, 0, &full[..20]), FrameError::DataLen(20)),
        (
            {
                let mut p = raw(flag::FIRST | flag::LAST, 1, 0, &full);
                p[3] = 22;
                p
            },
            FrameError::DataLen(22),
        ),
        (
            {
                let mut p = raw(flag::LAST | flag::FIRST, 1, 0, &[1, 2]);
                p[24] = 1;
                p
            },
            FrameError::Padding,
        ),
        (
            raw(flag::FIRST, 1, 3, &full),
            FrameError::OutOfSequence {
                expected: 0,
                got: 3,
            },
        ),
        (raw(0, 1, 1, &full), FrameError::NoFirst { id: 1, index: 1 }),
        (
            raw(flag::LAST, 1, 0, &[1]),
            FrameError::NoFirst { id: 1, index: 0 },
        ),
    ];
    for (p, want) in cases {
        let mut r = Reassembler::new();
        assert_eq!(r.feed(&p).err(), Some(want));
        still_works(&mut r);
        // In the middle of a message: the error drops it too.
        let mut r = Reassembler::new();
        r.feed(&raw(flag::FIRST, 5, 0, &full)).unwrap();
        assert_eq!(r.in_progress(), Some(5));
        assert!(r.feed(&p).is_err());
        assert_eq!(r.in_progress(), None);
        assert_eq!(
            r.feed(&raw(flag::LAST, 5, 1, &[1])).err(),
            Some(FrameError::NoFirst { id: 5, index: 1 })
        );
        still_works(&mut r);
    }
    // A FIRST not at index 0 is malformed on its own, before any sequence.
    assert_eq!(
        Fragment::parse(&raw(flag::FIRST, 1, 3, &full)),
        Err(FrameError::OutOfSequence {
            expected: 0,
            got: 3
        })
    );
    let p = raw(flag::LAST, 1, 3, &full[..2]);
    let f = Fragment::parse(&p).unwrap();
    assert_eq!(
        (f.is_first(), f.is_last(), f.id, f.index),
        (false, true, 1, 3)
    );
    assert_eq!(f.data, [7, 7]);
    // Every data length: 1..=21 only, and only the last may be short.
    for len in 0..=255u8 {
        let mut p = raw(flag::FIRST | flag::LAST, 0, 0, &[]);
        p[3] = len;
        p[4..4 + usize::from(len).min(FRAGMENT_DATA)].fill(1);
        let ok = (1..=FRAGMENT_DATA as u8).contains(&len);
        assert_eq!(Fragment::parse(&p).is_ok(), ok, "{len}");
    }
    // Every flag byte.
    for flags in 0..=255u8 {
        let p = raw(flags, 0, 0, &full);
        assert_eq!(
            Fragment::parse(&p).is_ok(),
            flags & !flag::ALL == 0,
            "{flags:#x}"
        );
    }
}

#[test]
fn out_of_order() {
    let msg = [9u8; 100];
    let f: Vec<_> = fragments(4, &msg).unwrap().collect();
    let mut r = Reassembler::new();
    r.feed(&f[0]).unwrap();
    assert_eq!(
        r.feed(&f[2]).err(),
        Some(FrameError::OutOfSequence {
            expected: 1,
            got: 2
        })
    );
    // The rest of that message is refused, fragment by fragment.
    for p in &f[3..] {
        assert!(matches!(r.feed(p), Err(FrameError::NoFirst { .. })));
    }
    still_works(&mut r);
    // Backwards.
    let mut r = Reassembler::new();
    r.feed(&f[0]).unwrap();
    r.feed(&f[1]).unwrap();
    r.feed(&f[2]).unwrap();
    assert_eq!(
        r.feed(&f[1]).err(),
        Some(FrameError::OutOfSequence {
            expected: 3,
            got: 1
        })
    );
    still_works(&mut r);
}

#[test]
fn duplicated_fragment() {
    let msg = [1u8; 50];
    let f: Vec<_> = fragments(4, &msg).unwrap().collect();
    let mut r = Reassembler::new();
    r.feed(&f[0]).unwrap();
    r.feed(&f[1]).unwrap();
    assert_eq!(
        r.feed(&f[1]).err(),
        Some(FrameError::OutOfSequence {
            expected: 2,
            got: 1
        })
    );
    assert!(
        r.feed(&f[2]).is_err(),
        "no message spliced from a duplicate"
    );
    // A repeated FIRST restarts: the message still arrives, once.
    let mut r = Reassembler::new();
    r.feed(&f[0]).unwrap();
    let fed = r.feed(&f[0]).unwrap();
    assert_eq!(
        fed.interrupted,
        Some(Interrupted {
            id: 4,
            received: 21
        })
    );
    r.feed(&f[1]).unwrap();
    assert_eq!(r.feed(&f[2]).unwrap().message, Some(&msg[..]));
    // A repeated LAST after completion has no message to belong to.
    assert_eq!(
        r.feed(&f[2]).err(),
        Some(FrameError::NoFirst { id: 4, index: 2 })
    );
}

#[test]
fn interleaved_ids() {
    let a = [0xaau8; 60];
    let b = [0xbbu8; 60];
    let fa: Vec<_> = fragments(1, &a).unwrap().collect();
    let fb: Vec<_> = fragments(2, &b).unwrap().collect();
    let mut r = Reassembler::new();
    r.feed(&fa[0]).unwrap();
    // Another message's FIRST drops the first one and starts anew.
    let fed = r.feed(&fb[0]).unwrap();
    assert_eq!(
        fed.interrupted,
        Some(Interrupted {
            id: 1,
            received: 21
        })
    );
    assert_eq!(
        r.feed(&fa[1]).err(),
        Some(FrameError::MessageId {
            expected: 2,
            got: 1
        })
    );
    // That error dropped message 2 as well: its next fragment has no FIRST.
    assert_eq!(
        r.feed(&fb[1]).err(),
        Some(FrameError::NoFirst { id: 2, index: 1 })
    );
    // Same index, other id, mid-message.
    let mut r = Reassembler::new();
    r.feed(&fa[0]).unwrap();
    r.feed(&fa[1]).unwrap();
    assert_eq!(
        r.feed(&fb[2]).err(),
        Some(FrameError::MessageId {
            expected: 1,
            got: 2
        })
    );
    still_works(&mut r);
}

#[test]
fn first_interrupting_is_kept_whole() {
    let mut r = Reassembler::new();
    r.feed(&raw(flag::FIRST, 8, 0, &[5; FRAGMENT_DATA]))
        .unwrap();
    r.feed(&raw(0, 8, 1, &[5; FRAGMENT_DATA])).unwrap();
    // A one-fragment message cuts it short, and is delivered.
    let fed = r
        .feed(&raw(flag::FIRST | flag::LAST, 9, 0, b"hello"))
        .unwrap();
    assert_eq!(fed.message, Some(&b"hello"[..]));
    assert_eq!(
        fed.interrupted,
        Some(Interrupted {
            id: 8,
            received: 42
        })
    );
    assert_eq!(r.in_progress(), None);
}

#[test]
fn flood_of_firsts() {
    let mut r = Reassembler::new();
    let mut interrupted = 0;
    for i in 0..10_000u32 {
        let fed = r
            .feed(&raw(flag::FIRST, i as u8, 0, &[i as u8; FRAGMENT_DATA]))
            .unwrap();
        assert_eq!(fed.message, None);
        if let Some(x) = fed.interrupted {
            assert_eq!(x.received, FRAGMENT_DATA, "nothing accumulates");
            assert_eq!(x.id, (i - 1) as u8);
            interrupted += 1;
        }
    }
    assert_eq!(interrupted, 9_999);
    // The last FIRST is the message in progress, and it completes.
    let fed = r.feed(&raw(flag::LAST, 15, 1, &[1, 2, 3])).unwrap();
    assert_eq!(fed.message.unwrap().len(), FRAGMENT_DATA + 3);
    assert_eq!(&fed.message.unwrap()[FRAGMENT_DATA..], [1, 2, 3]);
}

#[test]
fn oversize() {
    let full = [3u8; FRAGMENT_DATA];
    let mut r = Reassembler::new();
    r.feed(&raw(flag::FIRST, 6, 0, &full)).unwrap();
    // 48 full fragments hold 1008 bytes; a 49th full one would make 1029 > 1024.
    for i in 1..MAX_FRAGMENTS as u8 - 1 {
        assert_eq!(r.feed(&raw(0, 6, i, &full)).unwrap().message, None);
    }
    assert_eq!(
        r.feed(&raw(0, 6, MAX_FRAGMENTS as u8 - 1, &full)).err(),
        Some(FrameError::TooLong)
    );
    assert_eq!(r.in_progress(), None);
    // Ending at exactly MAX_MESSAGE is fine; as a LAST one byte more is not.
    for (extra, ok) in [(16usize, true), (17, false)] {
        let mut r = Reassembler::new();
        r.feed(&raw(flag::FIRST, 6, 0, &full)).unwrap();
        for i in 1..MAX_FRAGMENTS as u8 - 1 {
            r.feed(&raw(0, 6, i, &full)).unwrap();
        }
        let last = r.feed(&raw(flag::LAST, 6, MAX_FRAGMENTS as u8 - 1, &full[..extra]));
        match last {
            Ok(fed) => {
                assert!(ok);
                assert_eq!(fed.message.unwrap().len(), MAX_MESSAGE);
            }
            Err(e) => {
                assert!(!ok);
                assert_eq!(e, FrameError::TooLong);
            }
        }
    }
    // An endless message never grows past the buffer: every fragment after is refused.
    let mut r = Reassembler::new();
    r.feed(&raw(flag::FIRST, 6, 0, &full)).unwrap();
    let mut errors = 0;
    for i in 1..=255u8 {
        if r.feed(&raw(0, 6, i, &full)).is_err() {
            errors += 1;
        }
    }
    assert_eq!(errors, 255 - (MAX_FRAGMENTS - 2));
    still_works(&mut r);
}

#[test]
fn message_id_wraps() {
    // Ids are the sender's counter modulo 256: any value works, consecutive ones too.
    let mut r = Reassembler::new();
    for id in 0..=600u32 {
        let msg = [id as u8; 30];
        let mut got = None;
        for p in fragments(id as u8, &msg).unwrap() {
            got = r.feed(&p).unwrap().message.map(|m| m.to_vec());
        }
        assert_eq!(got.unwrap(), msg);
    }
}
