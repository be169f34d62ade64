// SPDX-License-Identifier: GPL-2.0
//! Messages that are not: cut short, too long, unknown opcodes, replies that do not fit the
//! request, bad UTF-8, enum bytes out of range.

use super::*;

#[test]
fn truncated_anywhere() {
    for req in requests() {
        let b = encode_request(&req, 77);
        for n in 0..b.len() {
            assert_eq!(
                Request::decode(&b[..n]),
                Err(DecodeError::Truncated),
                "{req:?} cut at {n}"
            );
        }
    }
    for resp in responses() {
        let b = encode_response(&resp, 77);
        for n in 0..b.len() {
            assert_eq!(
                Response::decode(&b[..n]),
                Err(DecodeError::Truncated),
                "{resp:?} cut at {n}"
            );
        }
    }
}

#[test]
fn trailing_bytes() {
    for req in requests() {
        let mut b = encode_request(&req, 1);
        b.push(0);
        assert_eq!(Request::decode(&b), Err(DecodeError::Trailing(1)));
        b.extend_from_slice(&[1, 2]);
        assert_eq!(Request::decode(&b), Err(DecodeError::Trailing(3)));
    }
    for resp in responses() {
        let mut b = encode_response(&resp, 1);
        b.push(0);
        assert_eq!(Response::decode(&b), Err(DecodeError::Trailing(1)));
    }
}

#[test]
fn unknown_opcodes() {
    let known: Vec<u8> = requests().iter().map(|r| r.op()).collect();
    for opcode in 0..=255u8 {
        let mut b = [opcode, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        if known.contains(&opcode) {
            assert_ne!(Request::decode(&b), Err(DecodeError::Opcode(opcode)));
            continue;
        }
        assert_eq!(Request::decode(&b), Err(DecodeError::Opcode(opcode)));
        assert_eq!(peek(&b), Some((opcode, 1)));
        // A success for it is neither encoded nor decoded...
        b[5..9].fill(0);
        assert_eq!(Response::decode(&b[..9]), Err(DecodeError::Opcode(opcode)));
        let done = Response::ok(opcode, Reply::Done);
        assert_eq!(
            done.encode(1, &mut [0; MAX_MESSAGE]),
            Err(EncodeError::Reply { op: opcode })
        );
        // ...but a failure is: the daemon can refuse what it does not know.
        let no = Response::err(opcode, status::UNIMPL, "?");
        let enc = encode_response(&no, 3);
        assert_eq!(Response::decode(&enc), Ok((3, no)));
    }
}

#[test]
fn reply_must_fit_the_opcode() {
    let cases = [
        Response::ok(op::DESTROY_REGION, Reply::Region(region("r", 1))),
        Response::ok(op::STAT_REGION, Reply::Item(item("i", 1))),
        Response::ok(op::STAT_ITEM, Reply::Done),
        Response::ok(op::HELLO, Reply::Done),
        Response::ok(op::LOOKUP, Reply::Hello { version: 1 }),
    ];
    for c in cases {
        assert_eq!(
            c.encode(0, &mut [0; MAX_MESSAGE]),
            Err(EncodeError::Reply { op: c.op })
        );
    }
    // A failure must say why: code 0 is success.
    let zero = Response {
        op: op::STAT_ITEM,
        result: Err(Failure {
            code: 0,
            message: "x",
        }),
    };
    assert_eq!(
        zero.encode(0, &mut [0; MAX_MESSAGE]),
        Err(EncodeError::Status)
    );
}

#[test]
fn bad_utf8() {
    // Every name and message, made invalid where the sample had "~~".
    let reqs = [
        Request::CreateRegion {
            name: "~~",
            size: 1,
            mode: 0,
            redundancy: Redundancy::Default,
            memory_type: MemoryType::Default,
            interleave: Interleave::Default,
        },
        Request::LookupRegion { name: "~~" },
        Request::Allocate {
            region: 1,
            name: "~~",
            size: 1,
            mode: 0,
        },
        Request::Lookup {
            item: "~~",
            region: "r",
        },
        Request::Lookup {
            item: "i",
            region: "~~",
        },
    ];
    let spoil = |mut b: Vec<u8>, bad: [u8; 2]| {
        let at = b.windows(2).position(|w| w == b"~~").unwrap();
        b[at..at + 2].copy_from_slice(&bad);
        b
    };
    // A lone continuation byte, a truncated sequence, and a surrogate's first bytes.
    for bad in [[0x80, b'x'], [b'x', 0xc3], [0xed, 0xa0]] {
        for r in reqs {
            let b = spoil(encode_request(&r, 1), bad);
            assert_eq!(Request::decode(&b), Err(DecodeError::Utf8), "{r:?}");
        }
        let resps = [
            Response::ok(op::STAT_REGION, Reply::Region(region("~~", 1))),
            Response::ok(op::STAT_ITEM, Reply::Item(item("~~", 1))),
            Response::err(op::STAT_ITEM, 8, "~~"),
        ];
        for r in resps {
            let b = spoil(encode_response(&r, 1), bad);
            assert_eq!(Response::decode(&b), Err(DecodeError::Utf8), "{r:?}");
        }
    }
}

#[test]
fn enum_bytes_out_of_range() {
    let create = Request::CreateRegion {
        name: "r",
        size: 1,
        mode: 0,
        redundancy: Redundancy::Default,
        memory_type: MemoryType::Default,
        interleave: Interleave::Default,
    };
    let b = encode_request(&create, 1);
    let n = b.len();
    for v in 0..=255u8 {
        let mut x = b.clone();
        x[n - 3] = v;
        let want = Redundancy::from_u8(v).map_or(Err(DecodeError::Redundancy(v)), |_| Ok(()));
        assert_eq!(Request::decode(&x).map(|_| ()), want);
        let mut x = b.clone();
        x[n - 2] = v;
        let want = MemoryType::from_u8(v).map_or(Err(DecodeError::MemoryType(v)), |_| Ok(()));
        assert_eq!(Request::decode(&x).map(|_| ()), want);
        let mut x = b.clone();
        x[n - 1] = v;
        let want = Interleave::from_u8(v).map_or(Err(DecodeError::Interleave(v)), |_| Ok(()));
        assert_eq!(Request::decode(&x).map(|_| ()), want);
    }
    assert_eq!(Redundancy::from_u8(3), Some(Redundancy::Raid5));
    assert_eq!(Redundancy::from_u8(4), None);
    assert_eq!(MemoryType::from_u8(3), None);
    assert_eq!(Interleave::from_u8(3), None);
    // In a region description: after id, name "r", size, uid, gid, mode.
    let d = encode_response(
        &Response::ok(op::STAT_REGION, Reply::Region(region("r", 0))),
        1,
    );
    let at = RESPONSE_HEAD_LEN + 8 + 3 + 8 + 12;
    let mut x = d.clone();
    x[at] = 4;
    assert_eq!(Response::decode(&x), Err(DecodeError::Redundancy(4)));
    let mut x = d.clone();
    x[at + 1] = 3;
    assert_eq!(Response::decode(&x), Err(DecodeError::MemoryType(3)));
}
