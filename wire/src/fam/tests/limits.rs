// SPDX-License-Identifier: GPL-2.0
//! The bounds on names, lists and error messages, and extent counts that must agree.

use super::*;

/// `enc` with the first NAME_MAX-long run of `c` turned into one of NAME_MAX + 1.
fn lengthen_name(enc: &[u8], c: u8) -> Vec<u8> {
    let at = enc
        .windows(NAME_MAX)
        .position(|w| w.iter().all(|&b| b == c))
        .unwrap();
    let mut b = enc.to_vec();
    assert_eq!(&b[at - 2..at], &(NAME_MAX as u16).to_le_bytes());
    b[at - 2..at].copy_from_slice(&(NAME_MAX as u16 + 1).to_le_bytes());
    b.insert(at, c);
    b
}

#[test]
fn names_of_256_bytes() {
    let buf = [b'n'; NAME_MAX + 1];
    let n256 = core::str::from_utf8(&buf).unwrap();
    let too_long = [
        Request::LookupRegion { name: n256 },
        Request::Lookup {
            item: "i",
            region: n256,
        },
        Request::Allocate {
            region: 1,
            name: n256,
            size: 1,
            mode: 0,
        },
    ];
    for r in too_long {
        assert_eq!(
            r.encode(0, &mut [0; MAX_MESSAGE]),
            Err(EncodeError::NameTooLong(256))
        );
    }
    let r = Response::ok(op::STAT_REGION, Reply::Region(region(n256, 1)));
    assert_eq!(
        r.encode(0, &mut [0; MAX_MESSAGE]),
        Err(EncodeError::NameTooLong(256))
    );

    let mut checked = 0;
    for req in requests() {
        let enc = encode_request(&req, 1);
        for c in [b'a', b'b'] {
            if enc.windows(NAME_MAX).any(|w| w.iter().all(|&b| b == c)) {
                let b = lengthen_name(&enc, c);
                assert_eq!(Request::decode(&b), Err(DecodeError::NameTooLong(256)));
                assert_eq!(DecodeError::NameTooLong(256).status(), 23);
                checked += 1;
            }
        }
    }
    assert_eq!(
        checked, 7,
        "create, lookup region, lookup's two names, restore, restore-new's two names"
    );
    let mut checked = 0;
    for resp in responses() {
        let enc = encode_response(&resp, 1);
        if resp.result.is_ok() && enc.windows(NAME_MAX).any(|w| w.iter().all(|&b| b == b'a')) {
            let b = lengthen_name(&enc, b'a');
            assert_eq!(Response::decode(&b), Err(DecodeError::NameTooLong(256)));
            checked += 1;
        }
    }
    assert_eq!(checked, 4, "region and item descriptions");
    // Longest the length field can say.
    let mut b = std::vec![op::LOOKUP_REGION, 0, 0, 0, 0, 0xff, 0xff];
    b.resize(7 + 0xffff, b'n');
    assert_eq!(Request::decode(&b), Err(DecodeError::NameTooLong(0xffff)));
}

#[test]
fn too_many_extents_and_lenders() {
    // An item description with no extents ends with the extent count byte.
    let d = encode_response(&Response::ok(op::STAT_ITEM, Reply::Item(item("i", 0))), 1);
    for n in [MAX_EXTENTS + 1, 255] {
        let mut x = d.clone();
        *x.last_mut().unwrap() = n as u8;
        x.resize(x.len() + n * EXTENT_LEN, 0);
        assert_eq!(Response::decode(&x), Err(DecodeError::TooManyExtents(n)));
    }
    // An extent page: total, first, count.
    let page = Response::ok(
        op::ITEM_EXTENTS,
        Reply::Extents(ExtentPage {
            total: 1000,
            first: 0,
            extents: extents(MAX_EXTENTS),
        }),
    );
    let mut x = encode_response(&page, 1);
    x[RESPONSE_HEAD_LEN + 8] = MAX_EXTENTS as u8 + 1;
    x.resize(x.len() + EXTENT_LEN, 0);
    assert_eq!(
        Response::decode(&x),
        Err(DecodeError::TooManyExtents(MAX_EXTENTS + 1))
    );
    // A region description with no lenders ends with the lender count byte.
    let d = encode_response(
        &Response::ok(op::STAT_REGION, Reply::Region(region("r", 0))),
        1,
    );
    let mut x = d.clone();
    *x.last_mut().unwrap() = MAX_LENDERS as u8 + 1;
    x.resize(x.len() + 2 * (MAX_LENDERS + 1), 0);
    assert_eq!(
        Response::decode(&x),
        Err(DecodeError::TooManyLenders(MAX_LENDERS + 1))
    );
    // The lists themselves refuse more than they hold.
    assert!(Extents::from_slice(&[Extent::default(); MAX_EXTENTS + 1]).is_none());
    assert_eq!(Extents::prefix(&[extent(1); 40]).len(), MAX_EXTENTS);
    let mut l = lenders(MAX_LENDERS);
    assert!(!l.push(99));
    assert_eq!(l.len(), MAX_LENDERS);
}

#[test]
fn extent_counts_must_agree() {
    // An item description carries min(count, MAX_EXTENTS) extents, no fewer, no more.
    for (count, carried) in [(5, 4), (5, 6), (100, 31), (0, 1), (1, 0)] {
        let mut d = item("i", 0);
        d.extent_count = count;
        d.extents = extents(carried);
        let r = Response::ok(op::STAT_ITEM, Reply::Item(d));
        assert_eq!(
            r.encode(0, &mut [0; MAX_MESSAGE]),
            Err(EncodeError::ExtentCount),
            "{count} {carried}"
        );
        // The same bytes crafted by hand are refused by the decoder.
        let good = encode_response(
            &Response::ok(op::STAT_ITEM, Reply::Item(item("i", carried as u32))),
            0,
        );
        let mut x = good.clone();
        let at = good.len() - 1 - carried * EXTENT_LEN - 4;
        x[at..at + 4].copy_from_slice(&count.to_le_bytes());
        assert_eq!(Response::decode(&x), Err(DecodeError::ExtentCount));
    }
    // Pages: not empty, inside the list, full unless last.
    for (total, first, carried) in [
        (10, 0, 0),
        (10, 10, 0),
        (10, 8, 3),
        (100, 0, 31),
        (10, 10, 1),
    ] {
        let p = ExtentPage {
            total,
            first,
            extents: extents(carried),
        };
        let r = Response::ok(op::ITEM_EXTENTS, Reply::Extents(p));
        assert_eq!(
            r.encode(0, &mut [0; MAX_MESSAGE]),
            Err(EncodeError::ExtentCount)
        );
        let mut x = std::vec![op::ITEM_EXTENTS, 0, 0, 0, 0, 0, 0, 0, 0];
        x.extend_from_slice(&total.to_le_bytes());
        x.extend_from_slice(&first.to_le_bytes());
        x.push(carried as u8);
        x.resize(x.len() + carried * EXTENT_LEN, 0);
        assert_eq!(Response::decode(&x), Err(DecodeError::ExtentCount));
    }
    // first + count past u32 does not wrap into a valid page.
    let mut x = std::vec![op::ITEM_EXTENTS, 0, 0, 0, 0, 0, 0, 0, 0];
    x.extend_from_slice(&u32::MAX.to_le_bytes());
    x.extend_from_slice(&(u32::MAX - 1).to_le_bytes());
    x.push(2);
    x.resize(x.len() + 2 * EXTENT_LEN, 0);
    assert_eq!(Response::decode(&x), Err(DecodeError::ExtentCount));
}

#[test]
fn error_messages_are_bounded() {
    // 159 ASCII bytes and a 2-byte character: cut before the character.
    let mut s = std::string::String::new();
    for _ in 0..MAX_ERROR_MESSAGE - 1 {
        s.push('m');
    }
    s.push('é');
    s.push_str(" and more");
    assert_eq!(truncate(&s, MAX_ERROR_MESSAGE).len(), MAX_ERROR_MESSAGE - 1);
    assert_eq!(truncate("abc", 3), "abc");
    assert_eq!(truncate("€", 2), "");
    let r = Response {
        op: op::LOOKUP,
        result: Err(Failure {
            code: 8,
            message: &s,
        }),
    };
    let b = encode_response(&r, 4);
    assert_eq!(b.len(), RESPONSE_HEAD_LEN + 1 + MAX_ERROR_MESSAGE - 1);
    let (_, back) = Response::decode(&b).unwrap();
    assert_eq!(back, Response::err(op::LOOKUP, 8, &s));
    assert_eq!(back.status(), 8);
    assert_eq!(
        back.result.unwrap_err().message,
        &s[..MAX_ERROR_MESSAGE - 1]
    );
    // A peer's longer message is refused, not cut.
    let mut x = std::vec![
        op::LOOKUP,
        0,
        0,
        0,
        0,
        8,
        0,
        0,
        0,
        MAX_ERROR_MESSAGE as u8 + 1
    ];
    x.resize(x.len() + MAX_ERROR_MESSAGE + 1, b'm');
    assert_eq!(
        Response::decode(&x),
        Err(DecodeError::MessageTooLong(MAX_ERROR_MESSAGE + 1))
    );
}

#[test]
fn texts_longer_than_max_text() {
    let long = std::string::String::from_utf8(std::vec![b'x'; MAX_TEXT + 1]).unwrap();
    let r = Response::ok(op::LIST_BACKUP, Reply::Text(&long));
    assert_eq!(
        r.encode(0, &mut [0; MAX_MESSAGE]),
        Err(EncodeError::TextTooLong)
    );
    // Hand-made: opcode, id, status 0, length MAX_TEXT + 1, the bytes.
    let mut b = std::vec![op::LIST_BACKUP, 0, 0, 0, 0, 0, 0, 0, 0];
    b.extend_from_slice(&((MAX_TEXT + 1) as u16).to_le_bytes());
    b.extend_from_slice(long.as_bytes());
    assert_eq!(
        Response::decode(&b),
        Err(DecodeError::TextTooLong(MAX_TEXT + 1))
    );
    // A text reply to an opcode that calls for another shape is refused both ways.
    let wrong = Response::ok(op::BACKUP, Reply::Text("x"));
    assert_eq!(
        wrong.encode(0, &mut [0; MAX_MESSAGE]),
        Err(EncodeError::Reply { op: op::BACKUP })
    );
}
