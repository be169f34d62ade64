// SPDX-License-Identifier: GPL-2.0
//! Well-formed messages: round trips, exact bytes, the length limits reached.

use super::*;

#[test]
fn every_request_round_trips() {
    let all = requests();
    let mut ops: Vec<u8> = all.iter().map(|r| r.op()).collect();
    ops.sort_unstable();
    ops.dedup();
    assert_eq!(ops.len(), 18, "every opcode has a sample");
    for (i, req) in all.iter().enumerate() {
        let id = 0xdead_0000 + i as u32;
        let bytes = encode_request(req, id);
        assert!(bytes.len() <= MAX_REQUEST_LEN);
        let carried = carry(i as u8, &bytes);
        assert_eq!(carried, bytes);
        assert_eq!(Request::decode(&carried), Ok((id, *req)));
        assert_eq!(peek(&carried), Some((req.op(), id)));
    }
}

#[test]
fn every_response_round_trips() {
    for (i, resp) in responses().iter().enumerate() {
        let id = 0x5eed_0000 + i as u32;
        let bytes = encode_response(resp, id);
        assert!(bytes.len() <= MAX_RESPONSE_LEN);
        let carried = carry(200u8.wrapping_add(i as u8), &bytes);
        assert_eq!(Response::decode(&carried), Ok((id, *resp)), "{resp:?}");
    }
}

#[test]
fn exact_bytes() {
    let req = Request::ResizeRegion {
        region: 0x0102,
        size: 0x0a0b_0c0d,
    };
    let b = encode_request(&req, 0x1122_3344);
    // Opcode, request id, region, size.
    let want = [
        &[op::RESIZE_REGION][..],
        &[0x44, 0x33, 0x22, 0x11],
        &[0x02, 0x01, 0, 0, 0, 0, 0, 0],
        &[0x0d, 0x0c, 0x0b, 0x0a, 0, 0, 0, 0],
    ]
    .concat();
    assert_eq!(b, want);
    let b = encode_request(&Request::LookupRegion { name: "ab" }, 1);
    assert_eq!(b, [op::LOOKUP_REGION, 1, 0, 0, 0, 2, 0, b'a', b'b']);
    let b = encode_response(&Response::err(op::STAT_ITEM, 8, "no"), 5);
    assert_eq!(b, [op::STAT_ITEM, 5, 0, 0, 0, 8, 0, 0, 0, 2, b'n', b'o']);
    let b = encode_response(&Response::ok(op::DEALLOCATE, Reply::Done), 6);
    assert_eq!(b, [op::DEALLOCATE, 6, 0, 0, 0, 0, 0, 0, 0]);
    // And the fragment carrying a short message.
    let p: Vec<_> = fragments(9, &b).unwrap().collect();
    let mut want = [0u8; PAYLOAD_LEN];
    want[..4].copy_from_slice(&[flag::FIRST | flag::LAST, 9, 0, 9]);
    want[4..13].copy_from_slice(&b);
    assert_eq!(p, [want]);
}

#[test]
fn largest_messages_are_the_limits() {
    let req = Request::RestoreNew {
        name: long(b'a'),
        region: u64::MAX,
        item: long(b'b'),
        mode: 0o777,
    };
    assert_eq!(encode_request(&req, 0).len(), MAX_REQUEST_LEN);
    let resp = Response::ok(op::STAT_ITEM, Reply::Item(item(long(b'a'), 1000)));
    let b = encode_response(&resp, 0);
    assert_eq!(b.len(), MAX_RESPONSE_LEN);
    assert_eq!(MAX_RESPONSE_LEN, 891);
    let mut exact = std::vec![0u8; b.len()];
    assert_eq!(resp.encode(0, &mut exact), Ok(b.len()));
}

#[test]
fn short_output_buffer() {
    for req in requests() {
        let n = encode_request(&req, 1).len();
        let mut buf = std::vec![0u8; n - 1];
        assert_eq!(req.encode(1, &mut buf), Err(EncodeError::BufferTooSmall));
    }
    for resp in responses() {
        let n = encode_response(&resp, 1).len();
        let mut buf = std::vec![0u8; n - 1];
        assert_eq!(resp.encode(1, &mut buf), Err(EncodeError::BufferTooSmall));
    }
}

#[test]
fn peek_and_status() {
    assert_eq!(peek(&[op::HELLO, 1, 2, 3]), None);
    assert_eq!(peek(&[0x99, 1, 2, 3, 4]), Some((0x99, 0x0403_0201)));
    assert_eq!(DecodeError::Opcode(0x99).status(), status::UNIMPL);
    assert_eq!(DecodeError::Truncated.status(), status::INVALID);
    assert_eq!(DecodeError::Utf8.status(), status::INVALID);
    assert_eq!(
        Response::ok(op::HELLO, Reply::Hello { version: 1 }).status(),
        0
    );
}
