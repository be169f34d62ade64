//! Unit tests of the chunk table (v1/v2, leases, grace), the lease record, the status text
//! and the state file. Time is passed in: expiry and grace are tested without sleeping.

use crate::lease::{self, RecordStart, StartMode};
use crate::sim::{run_bytes, Harness, XorShift, RECORD};
use crate::table::*;
use std::time::{Duration, Instant};
use unimem_wire::kram::{
    reply_service, to_daemon, to_driver, KramError, KramMsg, GSAS_INSTANCE, GSAS_INSTANCES,
    MAX_CHUNKS, NUMA_INSTANCE, V1, V2,
};
use unimem_wire::lease_record::{self, RecordedGrant, RECORD_SIZE};

const TIMEOUT: Duration = Duration::from_secs(10);
const ME: u32 = 1;
const SEC: Duration = Duration::from_secs(1);

/// A driver message in the smallest layout that holds it (v1 if the range ends by chunk 256).
fn msg(opcode: u8, node: u8, instance: u8, first: u32, chunks: u32, tag: u8) -> u64 {
    KramMsg::new(opcode, node, instance, first, chunks, tag).encode()
}
/// The same in the v2 layout.
fn msg2(opcode: u8, node: u8, instance: u8, first: u32, chunks: u32, tag: u8) -> u64 {
    KramMsg {
        opcode,
        version: V2,
        node,
        instance,
        first_chunk: first,
        chunks,
        tag,
    }
    .encode()
}
/// A v1 REQUEST (exactly `chunks`) when it fits v1, else a v2 one with minimum `chunks`.
fn request(node: u8, instance: u8, chunks: u32) -> u64 {
    if chunks <= 255 {
        msg(to_daemon::REQUEST, node, instance, 0, chunks, 0)
    } else {
        request_v2(node, instance, chunks, chunks)
    }
}
/// A v2 REQUEST of `chunks`, accepting `min`.
fn request_v2(node: u8, instance: u8, chunks: u32, min: u32) -> u64 {
    msg2(to_daemon::REQUEST, node, instance, min, chunks, 0)
}
fn confirm(node: u8, instance: u8, first: u32, chunks: u32) -> u64 {
    msg(to_daemon::CONFIRM, node, instance, first, chunks, 1)
}
fn renew(node: u8, instance: u8, first: u32, chunks: u32) -> u64 {
    msg(to_daemon::RENEW, node, instance, first, chunks, 2)
}
fn decline(node: u8, instance: u8, first: u32, chunks: u32) -> u64 {
    msg(to_daemon::DECLINE, node, instance, first, chunks, 0)
}
fn free(node: u8, instance: u8, first: u32, chunks: u32) -> u64 {
    msg(to_daemon::FREE, node, instance, first, chunks, 0)
}

/// A harness whose every step is checked (invariants, outcome vs. table).
fn harness(chunks: u32) -> Harness {
    Harness::new(ME, chunks, TIMEOUT)
}

#[track_caller]
fn step(h: &mut Harness, sender: u32, word: u64) -> Outcome {
    h.step(sender, word, Duration::ZERO).unwrap()
}

#[track_caller]
fn later(h: &mut Harness, dt: Duration, sender: u32, word: u64) -> Outcome {
    h.step(sender, word, dt).unwrap()
}

/// The (first, chunks) of an outcome that must be an OFFER to `to`.
#[track_caller]
fn offered(out: Outcome, to: u32, instance: u8) -> (u32, u32) {
    match out {
        Outcome::Offer { to: t, msg, .. } => {
            assert_eq!(t, to);
            assert_eq!(msg.opcode, to_driver::OFFER);
            assert_eq!(u32::from(msg.node), ME);
            assert_eq!(msg.instance, instance);
            assert_eq!(msg.tag, 0);
            (msg.first_chunk, msg.chunks)
        }
        other => panic!("expected an offer, got {other:?}"),
    }
}

/// Requests and confirms; returns the first chunk.
#[track_caller]
fn lend(h: &mut Harness, node: u8, instance: u8, chunks: u32) -> u32 {
    let (f, n) = offered(
        step(h, node.into(), request(node, instance, chunks)),
        node.into(),
        instance,
    );
    assert_eq!(n, chunks);
    acked(step(h, node.into(), confirm(node, instance, f, n)));
    f
}

/// The ACK of an outcome that must be one; returns its kind.
#[track_caller]
fn acked(out: Outcome) -> AckKind {
    match out {
        Outcome::Ack { msg, kind, .. } => {
            assert_eq!(msg.opcode, to_driver::ACK);
            kind
        }
        other => panic!("expected an ACK, got {other:?}"),
    }
}

#[track_caller]
fn revoked(out: Outcome) -> Revoke {
    match out {
        Outcome::Revoke { msg, why, .. } => {
            assert_eq!(msg.opcode, to_driver::REVOKE);
            why
        }
        other => panic!("expected a REVOKE, got {other:?}"),
    }
}

#[track_caller]
fn inconsistent(out: Outcome) -> Inconsistent {
    match out {
        Outcome::Inconsistent { why, .. } => why,
        other => panic!("expected inconsistent, got {other:?}"),
    }
}

#[track_caller]
fn malformed(out: Outcome) -> Malformed {
    assert_eq!(out.reply(), None, "a malformed word gets no reply");
    match out {
        Outcome::Malformed { why, .. } => why,
        other => panic!("expected malformed, got {other:?}"),
    }
}

fn totals(h: &Harness) -> (u32, u32, u32) {
    let t = h.table.totals();
    (t.free, t.offered, t.lent)
}

#[test]
fn request_offer_confirm_ack_free() {
    let mut h = harness(64);
    let (f, n) = offered(step(&mut h, 0, request(0, 0, 32)), 0, 0);
    assert_eq!((f, n), (0, 32));
    assert_eq!(totals(&h), (32, 32, 0));
    // CONFIRM → lent, and an ACK naming the range with the CONFIRM's tag.
    let word = msg(to_daemon::CONFIRM, 0, 0, 0, 32, 9);
    match step(&mut h, 0, word) {
        Outcome::Ack {
            to,
            msg,
            grant,
            kind: AckKind::Confirmed,
        } => {
            assert_eq!(to, 0);
            assert_eq!(msg, KramMsg::decode_for_driver(msg.encode()).unwrap());
            assert_eq!(
                (
                    msg.opcode,
                    msg.version,
                    msg.tag,
                    msg.first_chunk,
                    msg.chunks
                ),
                (to_driver::ACK, V1, 9, 0, 32)
            );
            assert_eq!(u32::from(msg.node), ME);
            assert_eq!((grant.first, grant.chunks), (0, 32));
        }
        other => panic!("expected an ACK, got {other:?}"),
    }
    assert_eq!(totals(&h), (32, 0, 32));
    assert!(matches!(
        step(&mut h, 0, free(0, 0, 0, 32)),
        Outcome::Freed { .. }
    ));
    let c = h.table.counters();
    assert_eq!(
        (c.received, c.requests, c.offers, c.confirms, c.acks, c.frees),
        (3, 1, 1, 1, 1, 1)
    );
    // The borrower wiped before FREE: the daemon does not.
    assert_eq!(c.wiped_chunks, 0);
    assert_eq!(totals(&h), (64, 0, 0));
}

#[test]
fn second_instance_and_second_node_get_the_next_free_chunks() {
    let mut h = harness(64);
    lend(&mut h, 0, 0, 32);
    assert_eq!(offered(step(&mut h, 0, request(0, 1, 16)), 0, 1), (32, 16));
    assert_eq!(offered(step(&mut h, 2, request(2, 0, 16)), 2, 0), (48, 16));
    let runs = h.table.runs();
    assert_eq!(runs.len(), 3);
    assert!(
        matches!(runs[0].state, RunState::Lent { grant, .. } if grant.node == 0 && grant.instance == 0)
    );
    assert!(matches!(runs[2].state, RunState::Offered { grant, .. } if grant.node == 2));
}

#[test]
fn decline_releases_the_offer() {
    let mut h = harness(64);
    offered(step(&mut h, 0, request(0, 0, 32)), 0, 0);
    let out = step(&mut h, 0, decline(0, 0, 0, 32));
    assert!(
        matches!(
            out,
            Outcome::Declined {
                kept_lent: false,
                ..
            }
        ),
        "{out:?}"
    );
    assert_eq!(totals(&h), (64, 0, 0));
    assert_eq!(h.table.counters().declines, 1);
    // A second DECLINE has nothing to release.
    assert_eq!(
        inconsistent(step(&mut h, 0, decline(0, 0, 0, 32))),
        Inconsistent::DeclineNotOffered
    );
}

#[test]
fn unconfirmed_offers_time_out() {
    let mut h = harness(64);
    offered(step(&mut h, 0, request(0, 0, 32)), 0, 0);
    let start = h.now();
    assert_eq!(h.table.next_deadline(), Some(start + TIMEOUT));
    // Just before the deadline nothing happens.
    assert!(h
        .table
        .expire(start + TIMEOUT - Duration::from_millis(1))
        .is_empty());
    let gone = h.table.expire(start + TIMEOUT);
    assert_eq!(gone.offers.len(), 1);
    assert!(gone.leases.is_empty());
    assert_eq!((gone.offers[0].first, gone.offers[0].chunks), (0, 32));
    // An offer was never written to: free at once, nothing to wipe.
    assert!(h.table.wiping().is_empty());
    assert_eq!(totals(&h), (64, 0, 0));
    assert_eq!(h.table.counters().timeouts, 1);
    assert_eq!(h.table.next_deadline(), None);
}

#[test]
fn repeated_requests_refresh_the_deadline() {
    let mut h = harness(64);
    let first = offered(step(&mut h, 0, request(0, 0, 8)), 0, 0);
    for _ in 0..20 {
        // The driver asks every second while incomplete: same range, never more chunks.
        let again = offered(later(&mut h, SEC, 0, request(0, 0, 8)), 0, 0);
        assert_eq!(again, first);
    }
    assert_eq!(totals(&h), (56, 8, 0));
    let c = h.table.counters();
    assert_eq!(
        (c.requests, c.offers, c.repeats, c.timeouts),
        (21, 21, 20, 0)
    );
}

#[test]
fn duplicate_request_while_lent_repeats_the_range() {
    let mut h = harness(64);
    lend(&mut h, 0, 0, 8);
    // A restarted driver asks again for the same instance and size: same range.
    let out = step(&mut h, 0, request(0, 0, 8));
    assert!(matches!(out, Outcome::Offer { repeat: true, .. }));
    assert_eq!(offered(out, 0, 0), (0, 8));
    // ...and may confirm it again: ACK, lease refreshed.
    let out = later(&mut h, 5 * SEC, 0, confirm(0, 0, 0, 8));
    assert_eq!(acked(out), AckKind::Reconfirmed);
    assert!(
        matches!(h.table.runs()[0].state, RunState::Lent { expiry, .. } if expiry == h.now() + LEASE)
    );
    // A complete driver declines the repeat: the chunks stay lent, it still uses them.
    let out = step(&mut h, 0, decline(0, 0, 0, 8));
    assert!(
        matches!(
            out,
            Outcome::Declined {
                kept_lent: true,
                ..
            }
        ),
        "{out:?}"
    );
    assert_eq!(totals(&h), (56, 0, 8));
    // Another size for a lent instance is inconsistent.
    assert!(matches!(
        inconsistent(step(&mut h, 0, request(0, 0, 9))),
        Inconsistent::RequestWhileLent { .. }
    ));
    // A v2 REQUEST whose [min, chunks] holds the lent size repeats it.
    let out = step(&mut h, 0, request_v2(0, 0, 100, 4));
    assert!(matches!(out, Outcome::Offer { repeat: true, msg, .. } if msg.version == V2));
    assert_eq!(offered(out, 0, 0), (0, 8));
    assert!(matches!(
        inconsistent(step(&mut h, 0, request_v2(0, 0, 100, 9))),
        Inconsistent::RequestWhileLent { .. }
    ));
    assert_eq!(totals(&h), (56, 0, 8));
}

#[test]
fn request_of_another_size_supersedes_a_pending_offer() {
    let mut h = harness(64);
    offered(step(&mut h, 0, request(0, 0, 8)), 0, 0);
    let out = step(&mut h, 0, request(0, 0, 16));
    assert!(
        matches!(out, Outcome::Offer { superseded: Some(g), .. } if g.chunks == 8),
        "{out:?}"
    );
    assert_eq!(offered(out, 0, 0), (0, 16));
    assert_eq!(totals(&h), (48, 16, 0));
    // Too big: the old offer is gone and nothing replaces it.
    let out = step(&mut h, 0, request(0, 0, 65));
    assert!(
        matches!(
            out,
            Outcome::Unanswered {
                superseded: Some(_),
                ..
            }
        ),
        "{out:?}"
    );
    assert_eq!(totals(&h), (64, 0, 0));
}

#[test]
fn exhaustion_is_silence() {
    let mut h = harness(64);
    offered(step(&mut h, 0, request(0, 0, 64)), 0, 0);
    let out = step(&mut h, 2, request(2, 0, 1));
    assert!(
        matches!(
            out,
            Outcome::Unanswered {
                node: 2,
                chunks: 1,
                ..
            }
        ),
        "{out:?}"
    );
    assert_eq!(out.reply(), None);
    // More than the table can ever hold.
    let out = step(&mut h, 2, request(2, 1, 255));
    assert!(matches!(out, Outcome::Unanswered { .. }));
    let c = h.table.counters();
    assert_eq!((c.requests, c.offers, c.unanswered), (3, 1, 2));
    // Once the offer expires, node 2 gets room.
    let out = later(&mut h, TIMEOUT, 2, request(2, 0, 1));
    assert_eq!(offered(out, 2, 0), (0, 1));
}

#[test]
fn fragmentation_first_fit() {
    let mut h = harness(32);
    // Eight instances of 4 chunks: 0-3, 4-7, ..., 28-31, all lent.
    for i in 0..8u8 {
        assert_eq!(lend(&mut h, i / 4, i % 4, 4), u32::from(i) * 4);
    }
    // Free 4-7 and 12-15 (node 0 instances 1 and 3): 8 chunks free, but no 8 in a row.
    step(&mut h, 0, free(0, 1, 4, 4));
    step(&mut h, 0, free(0, 3, 12, 4));
    assert_eq!(h.table.totals().free, 8);
    assert!(matches!(
        step(&mut h, 3, request(3, 0, 8)),
        Outcome::Unanswered { .. }
    ));
    // First fit: 3 chunks go to the first hole (4-6), 2 do not fit in what is left of it (7)
    // and go to the second (12-13), 1 fills chunk 7.
    assert_eq!(offered(step(&mut h, 3, request(3, 0, 3)), 3, 0), (4, 3));
    assert_eq!(offered(step(&mut h, 3, request(3, 1, 2)), 3, 1), (12, 2));
    assert_eq!(offered(step(&mut h, 3, request(3, 2, 1)), 3, 2), (7, 1));
    // Freeing node 0 instance 2 (8-11) joins 7, 8-11 into a 5-chunk hole.
    step(&mut h, 0, free(0, 2, 8, 4));
    step(&mut h, 3, decline(3, 2, 7, 1));
    assert_eq!(offered(step(&mut h, 3, request(3, 3, 5)), 3, 3), (7, 5));
}

#[test]
fn v2_requests_reach_past_chunk_255_and_replies_keep_the_layout() {
    let mut h = harness(1000);
    // 300 chunks: only v2 can say it.
    let out = step(&mut h, 0, request(0, 0, 300));
    assert!(matches!(out, Outcome::Offer { msg, .. } if msg.version == V2));
    assert_eq!(offered(out, 0, 0), (0, 300));
    // A small v2 request is answered in v2 too, even though v1 could say the range.
    let out = step(&mut h, 0, request_v2(0, 1, 8, 8));
    assert!(matches!(out, Outcome::Offer { msg, .. } if msg.version == V2));
    assert_eq!(offered(out, 0, 1), (300, 8));
    // A v1 REQUEST can only be met below chunk 256: with 0-307 taken, none can be.
    let out = step(&mut h, 2, request(2, 0, 8));
    assert!(matches!(out, Outcome::Unanswered { .. }), "{out:?}");
    // The same as v2 gets chunks 308-315.
    assert_eq!(
        offered(step(&mut h, 2, request_v2(2, 0, 8, 8)), 2, 0),
        (308, 8)
    );
    // CONFIRM and ACK in v2; RENEW of the range too.
    let w = msg2(to_daemon::CONFIRM, 0, 0, 0, 300, 3);
    match step(&mut h, 0, w) {
        Outcome::Ack { msg, .. } => assert_eq!((msg.version, msg.tag, msg.chunks), (V2, 3, 300)),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        acked(later(
            &mut h,
            SEC,
            0,
            msg2(to_daemon::RENEW, 0, 0, 0, 300, 4)
        )),
        AckKind::Renewed
    );
    // A v1 table end: 256 chunks lend their last chunk in v1.
    let mut h = harness(256);
    offered(step(&mut h, 0, request(0, 0, 1)), 0, 0);
    let out = step(&mut h, 0, request(0, 1, 255));
    assert_eq!(offered(out, 0, 1), (1, 255));
}

#[test]
fn v2_minimum_gives_the_largest_run() {
    let mut h = harness(100);
    // Lend 0-9, 30-39 (and 10-29 offered then declined): free runs 10-29 (20), 40-99 (60).
    lend(&mut h, 0, 0, 10);
    offered(step(&mut h, 0, request(0, 1, 20)), 0, 1);
    lend(&mut h, 0, 2, 10);
    step(&mut h, 0, decline(0, 1, 10, 20));
    // 80 wanted, 30 accepted: the largest run, 40-99, capped at what is there (60).
    assert_eq!(
        offered(step(&mut h, 2, request_v2(2, 0, 80, 30)), 2, 0),
        (40, 60)
    );
    // 50 wanted, 10 accepted: the first fit fails, the largest free run is 10-29 (20).
    assert_eq!(
        offered(step(&mut h, 2, request_v2(2, 1, 50, 10)), 2, 1),
        (10, 20)
    );
    // Nothing left: silence.
    let out = step(&mut h, 2, request_v2(2, 2, 50, 1));
    assert!(matches!(out, Outcome::Unanswered { min: 1, .. }), "{out:?}");
    // An offer of another size than a new request accepts is released, then as new.
    let out = step(&mut h, 2, request_v2(2, 1, 5, 5));
    assert!(matches!(out, Outcome::Offer { superseded: Some(g), .. } if g.chunks == 20));
    // ...and one whose size the new request accepts is repeated.
    let out = step(&mut h, 2, request_v2(2, 1, 6, 4));
    assert!(matches!(out, Outcome::Offer { repeat: true, grant, .. } if grant.chunks == 5));
}

#[test]
fn a_v1_only_daemon_refuses_every_v2_word() {
    let mut h = harness(64);
    h.table.set_max_version(V1);
    let before = h.table.entries().clone();
    for w in [
        request_v2(0, 0, 8, 8),
        msg2(to_daemon::CONFIRM, 0, 0, 0, 8, 1),
        msg2(to_daemon::RENEW, 0, 0, 0, 8, 1),
        msg2(to_daemon::FREE, 0, 0, 0, 8, 0),
    ] {
        assert_eq!(
            malformed(step(&mut h, 0, w)),
            Malformed::Decode(KramError::Version(V2))
        );
    }
    assert_eq!(h.table.entries(), &before);
    let c = *h.table.counters();
    assert_eq!((c.received, c.malformed, c.version_refused), (4, 4, 4));
    // v1 is served as ever.
    lend(&mut h, 0, 0, 8);
    assert_eq!(
        acked(later(&mut h, SEC, 0, renew(0, 0, 0, 8))),
        AckKind::Renewed
    );
}

#[test]
fn a_lapsed_lease_of_a_connected_borrower_is_held_until_it_goes_for_every_instance() {
    let mut h = harness(96);
    let numa = lend(&mut h, 1, NUMA_INSTANCE, 16);
    let swap = lend(&mut h, 1, 0, 16);
    let pool = lend(&mut h, 1, GSAS_INSTANCE, 16);
    let other = lend(&mut h, 2, 0, 16);
    // Node 1 frozen: connected on the fabric, silent for a lease and more. Node 2 is gone.
    h.table
        .set_present([(1, NUMA_INSTANCE), (1, 0), (1, GSAS_INSTANCE)]);
    let t = h.now() + LEASE;
    let out = h.table.expire(t);
    let mut held: Vec<u32> = out.held.iter().map(|g| g.first).collect();
    held.sort();
    assert_eq!(held, vec![numa, swap, pool], "{out:?}");
    assert_eq!(out.leases.len(), 1);
    assert_eq!(out.leases[0].first, other);
    assert_eq!(h.table.counters().leases_held, 3);
    // Held: neither wiping nor free, and RENEWs after the thaw are ACKed.
    assert_eq!(h.table.wiping(), vec![(other, 16)]);
    assert!(h.table.wiped(other));
    for (instance, first) in [(NUMA_INSTANCE, numa), (0, swap), (GSAS_INSTANCE, pool)] {
        assert_eq!(
            acked(h.table.handle(1, renew(1, instance, first, 16), t + SEC)),
            AckKind::Renewed
        );
    }
    // Reconnected (rebooted) for the swap instance's grant: its next lapse reclaims it.
    h.table
        .set_present([(1, NUMA_INSTANCE), (1, GSAS_INSTANCE)]);
    let out = h.table.expire(t + SEC + LEASE);
    assert_eq!(out.held.len(), 2);
    assert_eq!(out.leases.len(), 1);
    assert_eq!(out.leases[0].first, swap);
    // Gone on the fabric: the rest too.
    h.table.set_present([]);
    let out = h.table.expire(t + 2 * SEC + 3 * LEASE);
    assert!(out.held.is_empty());
    assert_eq!(out.leases.len(), 2);
}

#[test]
fn free_unwiped_is_wiped_before_the_chunks_are_free() {
    let mut h = harness(64);
    let a = lend(&mut h, 1, 0, 16);
    let b = lend(&mut h, 1, 1, 8);
    let free_unwiped = msg(to_daemon::FREE, 1, 0, a, 16, to_daemon::FREE_UNWIPED);
    // Not through `step`: the harness wipes at once, as the daemon's loop does.
    match h.table.handle(1, free_unwiped, h.now()) {
        Outcome::Freed { grant, wipe } => assert!(wipe && grant.first == a, "{grant}"),
        out => panic!("{out:?}"),
    }
    // Neither lent nor free: a REQUEST cannot get it before it is wiped.
    assert_eq!(h.table.wiping(), vec![(a, 16)]);
    assert_eq!(h.table.counters().frees_unwiped, 1);
    assert!(h.table.wiped(a));
    assert!(h.table.wiping().is_empty());
    // A FREE with tag 0: the borrower wiped, free at once.
    match step(&mut h, 1, free(1, 1, b, 8)) {
        Outcome::Freed { wipe, .. } => assert!(!wipe),
        out => panic!("{out:?}"),
    }
    assert!(h.table.wiping().is_empty());
    assert_eq!(h.table.counters().frees, 2);
    // Another borrower's range is not freed by an unwiped FREE either.
    let c = lend(&mut h, 2, 0, 16);
    let forged = msg(to_daemon::FREE, 1, 0, c, 16, to_daemon::FREE_UNWIPED);
    inconsistent(step(&mut h, 1, forged));
    assert!(h.table.wiping().is_empty());
}

#[test]
fn renew_keeps_the_lease_and_silence_expires_it_and_wipes() {
    let mut h = harness(64);
    let f = lend(&mut h, 0, 0, 32);
    let lent_at = h.now();
    assert_eq!(h.table.next_deadline(), Some(lent_at + LEASE));
    // RENEW every second for a minute: never expires.
    for i in 0..60u8 {
        let w = msg(to_daemon::RENEW, 0, 0, f, 32, i % 16);
        match later(&mut h, SEC, 0, w) {
            Outcome::Ack {
                msg,
                kind: AckKind::Renewed,
                ..
            } => assert_eq!(msg.tag, i % 16),
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(totals(&h), (32, 0, 32));
    assert_eq!(h.table.counters().renews, 60);
    // Silence: one lease after the last RENEW the grant expires, is wiped, then free.
    let last = h.now();
    assert!(h
        .table
        .expire(last + LEASE - Duration::from_millis(1))
        .is_empty());
    let gone = h.table.expire(last + LEASE);
    assert_eq!(gone.leases.len(), 1);
    assert_eq!((gone.leases[0].first, gone.leases[0].chunks), (0, 32));
    // Not free before the wipe: a REQUEST cannot get these chunks now.
    assert_eq!(h.table.totals().wiping, 32);
    assert_eq!(h.table.wiping(), vec![(0, 32)]);
    assert!(matches!(h.table.runs()[0].state, RunState::Wiping));
    let out = h.table.handle(2, request(2, 0, 64), last + LEASE);
    assert!(matches!(out, Outcome::Unanswered { .. }), "{out:?}");
    assert!(h.table.wiped(0));
    assert!(!h.table.wiped(0));
    let c = *h.table.counters();
    assert_eq!((c.lease_expiries, c.wiped_chunks), (1, 32));
    assert_eq!(h.table.totals().free, 64);
    // The expired borrower's RENEW now gets REVOKE.
    assert_eq!(
        revoked(later(&mut h, SEC, 0, renew(0, 0, f, 32))),
        Revoke::NotLent
    );
}

#[test]
fn revoke_what_is_not_the_senders_and_change_nothing() {
    let mut h = harness(64);
    lend(&mut h, 0, 0, 8); // 0-7 lent to node 0 instance 0
    offered(step(&mut h, 2, request(2, 0, 8)), 2, 0); // 8-15 offered to node 2
    lend(&mut h, 2, 1, 8); // 16-23 lent to node 2 instance 1
    let before = h.table.entries().clone();
    let cases = [
        // RENEW: never lent, another node's grant, part of a grant, another instance, an
        // offer not yet confirmed, past the table.
        (0u32, renew(0, 3, 40, 4), Revoke::NotLent),
        (0, renew(0, 1, 16, 8), Revoke::NotLent),
        (
            0,
            renew(0, 0, 0, 4),
            Revoke::OwnerHoldsOther {
                held: Grant {
                    node: 0,
                    instance: 0,
                    first: 0,
                    chunks: 8,
                },
            },
        ),
        (2, renew(2, 0, 8, 8), Revoke::NotLent),
        (2, renew(2, 2, 100, 8), Revoke::NotLent),
        // CONFIRM: never offered, another instance's offer, another node's loan.
        (0, confirm(0, 5, 30, 2), Revoke::NotOffered),
        (0, confirm(0, 1, 8, 8), Revoke::NotOffered),
        (0, confirm(0, 4, 16, 8), Revoke::NotOffered),
        (
            2,
            confirm(2, 1, 17, 7),
            Revoke::OwnerHoldsOther {
                held: Grant {
                    node: 2,
                    instance: 1,
                    first: 16,
                    chunks: 8,
                },
            },
        ),
    ];
    for (sender, word, why) in cases {
        let out = step(&mut h, sender, word);
        let asked = KramMsg::decode_for_daemon(word, V2).unwrap();
        match out {
            Outcome::Revoke { to, msg, .. } => {
                assert_eq!(to, sender);
                assert_eq!(
                    (msg.first_chunk, msg.chunks, msg.instance, msg.tag),
                    (asked.first_chunk, asked.chunks, asked.instance, 0)
                );
                assert_eq!(KramMsg::decode_for_driver(msg.encode()), Ok(msg));
            }
            ref other => panic!("{word:#x}: {other:?}"),
        }
        assert_eq!(revoked(out), why, "{word:#x}");
    }
    assert_eq!(h.table.entries(), &before);
    let c = *h.table.counters();
    assert_eq!((c.revokes, c.inconsistent), (cases.len() as u64, 0));
    // A REVOKE for the NUMA instance goes to the NUMA driver's service.
    let out = step(&mut h, 0, renew(0, NUMA_INSTANCE, 0, 8));
    let (to, m) = out.reply().unwrap();
    assert_eq!(
        (to, reply_service(m.instance)),
        (0, reply_service(NUMA_INSTANCE))
    );
    // DECLINE and FREE of what is not the sender's: inconsistent, no reply.
    for (sender, word, why) in [
        (0u32, decline(0, 0, 8, 8), Inconsistent::DeclineNotOffered),
        (0, free(0, 0, 0, 4), Inconsistent::FreeNotLent),
        (2, free(2, 0, 8, 8), Inconsistent::FreeNotLent),
        (0, free(0, 1, 16, 8), Inconsistent::FreeNotLent),
    ] {
        let out = step(&mut h, sender, word);
        assert_eq!(out.reply(), None);
        assert_eq!(inconsistent(out), why);
    }
    assert_eq!(h.table.entries(), &before);
}

#[test]
fn malformed_words_are_counted_and_dropped_without_reply() {
    let mut h = harness(64);
    offered(step(&mut h, 0, request(0, 0, 8)), 0, 0);
    let before = h.table.entries().clone();
    // Reserved bits, unknown opcodes, an empty range, a range past chunk 255 (v1).
    assert_eq!(
        malformed(step(&mut h, 0, request(0, 1, 8) | 1 << 40)),
        Malformed::Decode(KramError::Reserved)
    );
    for op in [0u8, 5, 6, 0xf] {
        assert_eq!(
            malformed(step(&mut h, 0, msg(op, 0, 0, 0, 8, 0))),
            Malformed::Decode(KramError::Opcode(op))
        );
    }
    assert_eq!(
        malformed(step(&mut h, 0, request(0, 1, 0))),
        Malformed::Decode(KramError::Range)
    );
    let past = KramMsg {
        opcode: to_daemon::FREE,
        version: V1,
        node: 0,
        instance: 0,
        first_chunk: 250,
        chunks: 10,
        tag: 0,
    };
    assert_eq!(
        malformed(step(&mut h, 0, past.encode())),
        Malformed::Decode(KramError::Range)
    );
    // What unimem-mbox-test kping sends: opcode 0, a tag and a sequence number (whose bits 56-59
    // are a version 10 no one speaks).
    assert!(matches!(
        malformed(step(&mut h, 0, (0x0abc_def0 << 32) | 7)),
        Malformed::Decode(_)
    ));
    // Unknown layout versions.
    assert_eq!(
        malformed(step(&mut h, 0, request(0, 1, 8) | 1 << 56)),
        Malformed::Decode(KramError::Version(1))
    );
    // The node field must be the sender the mailbox reports: node 2 cannot confirm, renew
    // or free on node 0's behalf, nor request as node 0.
    assert_eq!(
        malformed(step(&mut h, 2, confirm(0, 0, 0, 8))),
        Malformed::NodeMismatch {
            field: 0,
            sender: 2
        }
    );
    assert!(matches!(
        malformed(step(&mut h, 2, renew(0, 0, 0, 8))),
        Malformed::NodeMismatch { .. }
    ));
    assert!(matches!(
        malformed(step(&mut h, 2, request(0, 3, 1))),
        Malformed::NodeMismatch { .. }
    ));
    assert!(matches!(
        malformed(step(&mut h, 16, request(0, 3, 1))),
        Malformed::NodeMismatch { sender: 16, .. }
    ));
    // A v1 request names no first chunk; a v2 one a minimum in 1..=chunks.
    assert_eq!(
        malformed(step(&mut h, 0, msg(to_daemon::REQUEST, 0, 1, 5, 8, 0))),
        Malformed::Decode(KramError::Range)
    );
    assert_eq!(
        malformed(step(&mut h, 0, request_v2(0, 1, 8, 9))),
        Malformed::Decode(KramError::Range)
    );
    // No tag in FREE / DECLINE.
    assert_eq!(
        malformed(step(&mut h, 0, msg(to_daemon::FREE, 0, 0, 0, 4, 3))),
        Malformed::Decode(KramError::Reserved)
    );
    assert_eq!(h.table.entries(), &before);
    let c = h.table.counters();
    assert_eq!(
        (c.received, c.malformed, c.version_refused, c.inconsistent),
        (17, 16, 2, 0)
    );
}

#[test]
fn late_confirm_is_honoured_only_while_the_chunks_are_free() {
    let mut h = harness(16);
    offered(step(&mut h, 0, request(0, 0, 8)), 0, 0);
    // The offer expires; the CONFIRM was on its way. Chunks still free: lend them, ACK.
    let out = later(
        &mut h,
        TIMEOUT + Duration::from_millis(5),
        0,
        confirm(0, 0, 0, 8),
    );
    assert_eq!(acked(out), AckKind::LateConfirmed);
    assert_eq!(totals(&h), (8, 0, 8));
    let c = *h.table.counters();
    assert_eq!((c.timeouts, c.confirms, c.late_confirms), (1, 1, 1));

    // Same again, but node 2 got the chunks in between: REVOKE.
    offered(step(&mut h, 0, request(0, 1, 8)), 0, 1);
    let out = later(&mut h, TIMEOUT, 2, request(2, 0, 8));
    assert_eq!(offered(out, 2, 0), (8, 8));
    assert_eq!(
        revoked(step(&mut h, 0, confirm(0, 1, 8, 8))),
        Revoke::LateConfirmTaken
    );
    assert_eq!(totals(&h), (0, 8, 8));

    // Too late: past twice the timeout, the expired offer is forgotten.
    let mut h = harness(16);
    offered(step(&mut h, 0, request(0, 0, 8)), 0, 0);
    let out = later(&mut h, TIMEOUT * 2 + SEC, 0, confirm(0, 0, 0, 8));
    assert_eq!(revoked(out), Revoke::NotOffered);
}

#[test]
fn late_confirm_replaces_a_newer_offer_to_the_same_instance() {
    let mut h = harness(16);
    offered_any(step(&mut h, 2, request(2, 0, 4))); // 0-3 to node 2
    assert_eq!(offered(step(&mut h, 0, request(0, 0, 4)), 0, 0), (4, 4));
    acked(step(&mut h, 2, confirm(2, 0, 0, 4)));
    // Node 0's offer 4-7 expires (a malformed word moves the clock) and node 2 is offered
    // 4-7, so node 0's repeated request gets 8-11.
    later(&mut h, TIMEOUT, 0, 0);
    assert_eq!(offered(step(&mut h, 2, request(2, 1, 4)), 2, 1), (4, 4));
    assert_eq!(offered(step(&mut h, 0, request(0, 0, 4)), 0, 0), (8, 4));
    // Node 2 declines 4-7; then node 0's CONFIRM of its first (expired) offer 4-7 arrives:
    // honoured, and the newer 8-11 offer to the same instance is released.
    step(&mut h, 2, decline(2, 1, 4, 4));
    let out = step(&mut h, 0, confirm(0, 0, 4, 4));
    assert!(
        matches!(out, Outcome::Ack { kind: AckKind::LateConfirmed, grant, .. } if grant.first == 4)
    );
    assert_eq!(totals(&h), (8, 0, 8));
}

#[track_caller]
fn offered_any(out: Outcome) {
    assert!(matches!(out, Outcome::Offer { .. }), "{out:?}");
}

#[test]
fn grace_defers_requests_and_lets_borrowers_claim_free_chunks() {
    let mut h = harness(64);
    let start = h.now();
    h.table.start_grace(start);
    assert_eq!(h.table.next_deadline(), Some(start + LEASE));
    // No REQUEST is answered.
    let out = step(&mut h, 2, request(2, 0, 8));
    assert!(matches!(
        out,
        Outcome::Deferred {
            node: 2,
            chunks: 8,
            ..
        }
    ));
    assert_eq!(out.reply(), None);
    // A RENEW of free chunks claims them (lent, ACK); so does a late CONFIRM.
    assert_eq!(
        acked(later(&mut h, SEC, 0, renew(0, 0, 10, 20))),
        AckKind::Claimed
    );
    assert_eq!(
        acked(step(&mut h, 2, confirm(2, 3, 40, 4))),
        AckKind::Claimed
    );
    // Claimed ranges are then renewed as usual.
    assert_eq!(
        acked(later(&mut h, SEC, 0, renew(0, 0, 10, 20))),
        AckKind::Renewed
    );
    let before = h.table.entries().clone();
    // Overlapping claims, a second range for the same owner, past the table: REVOKE.
    assert_eq!(
        revoked(step(&mut h, 2, renew(2, 0, 25, 10))),
        Revoke::ClaimTaken
    );
    assert!(matches!(
        revoked(step(&mut h, 0, renew(0, 0, 50, 2))),
        Revoke::OwnerHoldsOther { .. }
    ));
    assert!(matches!(
        revoked(step(&mut h, 2, renew(2, 3, 50, 2))),
        Revoke::OwnerHoldsOther { .. }
    ));
    assert_eq!(
        revoked(step(&mut h, 2, renew(2, 1, 60, 8))),
        Revoke::OutsideTable
    );
    assert_eq!(h.table.entries(), &before);
    let c = *h.table.counters();
    assert_eq!(
        (c.deferred, c.claims, c.renews, c.confirms, c.revokes),
        (1, 2, 2, 1, 4)
    );
    // The grace period ends one lease after the start: every free chunk (contents unknown)
    // is wiped before anything is offered; the claims stay lent.
    h.table.check_invariants().unwrap();
    let end = start + LEASE;
    assert!(h.table.expire(end - Duration::from_millis(1)).is_empty());
    let done = h.table.expire(end);
    assert_eq!(done.grace_ended, Some(vec![(0, 10), (30, 10), (44, 20)]));
    assert_eq!(h.table.totals().wiping, 40);
    assert!(matches!(
        h.table.handle(2, request(2, 0, 8), end),
        Outcome::Unanswered { .. }
    ));
    for (first, _) in h.table.wiping() {
        assert!(h.table.wiped(first));
    }
    assert_eq!(h.table.counters().wiped_chunks, 40);
    assert_eq!(h.table.grace_until(), None);
    assert_eq!(totals(&h), (40, 0, 24));
    // Now REQUESTs are served, and RENEW of free chunks is no claim.
    offered_any(h.table.handle(2, request(2, 0, 8), end));
    let out = h.table.handle(2, renew(2, 5, 50, 2), end);
    assert_eq!(revoked(out), Revoke::NotLent);
    h.table.check_invariants().unwrap();
}

#[test]
fn restored_grants_get_a_fresh_lease_and_expire_without_renew() {
    let mut h = harness(64);
    let now = h.now();
    let g = |node, instance, first, chunks| Grant {
        node,
        instance,
        first,
        chunks,
    };
    h.table
        .restore(g(0, 0, 0, 32), GrantKind::Lent, now)
        .unwrap();
    h.table
        .restore(g(2, 1, 40, 8), GrantKind::Offered, now)
        .unwrap();
    assert_eq!(
        h.table.restore(g(3, 0, 60, 8), GrantKind::Lent, now),
        Err(TableError::OutOfRange(g(3, 0, 60, 8), 64))
    );
    assert!(matches!(
        h.table.restore(g(3, 0, 31, 2), GrantKind::Lent, now),
        Err(TableError::Overlap(_))
    ));
    assert!(matches!(
        h.table.restore(g(0, 0, 50, 2), GrantKind::Lent, now),
        Err(TableError::DuplicateOwner(_))
    ));
    h.table.check_invariants().unwrap();
    assert_eq!(h.table.next_deadline(), Some(now + TIMEOUT));
    // The borrower died while the daemon was down: one lease later the range is reclaimed.
    h.advance(LEASE);
    assert_eq!(h.table.counters().lease_expiries, 1);
    assert_eq!(h.table.counters().wiped_chunks, 32);
    assert_eq!(totals(&h), (64, 0, 0));

    // Round trip through the state file.
    let mut t = Table::new(ME, 64, TIMEOUT).unwrap();
    t.restore(g(0, 0, 0, 32), GrantKind::Lent, now).unwrap();
    t.restore(g(2, 1, 300 - 260, 8), GrantKind::Offered, now)
        .unwrap();
    let text = crate::state::render(&t);
    let saved = crate::state::parse(&text).unwrap();
    assert_eq!((saved.node, saved.chunks), (ME, 64));
    assert_eq!(saved.grants, t.grants());
    let mut u = Table::new(ME, 64, TIMEOUT).unwrap();
    for (g, k) in saved.grants {
        u.restore(g, k, now).unwrap();
    }
    assert_eq!(u.entries(), t.entries());
}

#[test]
fn lease_record_round_trip_and_start_modes() {
    let now = Instant::now();
    let mut t = Table::new(ME, 400, TIMEOUT).unwrap();
    let mut h = Harness::new(ME, 400, TIMEOUT);
    lend(&mut h, 0, 0, 300);
    // Past chunk 255: v2.
    let (f, n) = offered(
        step(&mut h, 2, request_v2(2, NUMA_INSTANCE, 64, 64)),
        2,
        NUMA_INSTANCE,
    );
    acked(step(
        &mut h,
        2,
        msg2(to_daemon::CONFIRM, 2, NUMA_INSTANCE, f, n, 1),
    ));
    offered(step(&mut h, 2, request_v2(2, 1, 8, 8)), 2, 1);
    // Only lent ranges are recorded.
    let rec = lease::encode(&h.table, 7);
    let mut buf = vec![0u8; RECORD_SIZE];
    buf[..rec.len()].copy_from_slice(&rec);
    match lease::restore(&mut t, &buf, now) {
        RecordStart::Restored { generation, grants } => {
            assert_eq!(generation, 7);
            assert_eq!(grants, h.table.lent());
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(t.lent(), h.table.lent());
    assert_eq!(t.totals().offered, 0);
    assert_eq!(t.next_deadline(), Some(now + LEASE));

    // All zero: fresh.
    let mut t = Table::new(ME, 400, TIMEOUT).unwrap();
    assert_eq!(
        lease::restore(&mut t, &vec![0u8; RECORD_SIZE], now),
        RecordStart::Fresh
    );
    // Garbage, another node's record, grants past this table or overlapping: invalid, and
    // the table stays empty.
    let mut garbage = vec![0u8; RECORD_SIZE];
    XorShift(5).fill(&mut garbage[..4096]);
    let overlapping = {
        let g = |instance, first| RecordedGrant {
            node: 0,
            instance,
            first,
            chunks: 10,
        };
        let mut b = vec![0u8; RECORD_SIZE];
        lease_record::encode(ME, 400, 3, &[g(0, 0), g(1, 5)], &mut b).unwrap();
        b
    };
    let other_node = {
        let mut b = vec![0u8; RECORD_SIZE];
        lease_record::encode(ME + 1, 400, 3, &[], &mut b).unwrap();
        b
    };
    let mut small = Table::new(ME, 100, TIMEOUT).unwrap();
    assert!(matches!(
        lease::restore(&mut small, &buf, now),
        RecordStart::Invalid {
            generation: Some(7),
            ..
        }
    ));
    assert!(small.entries().is_empty());
    for bytes in [&garbage, &overlapping, &other_node] {
        let r = lease::restore(&mut t, bytes, now);
        assert!(matches!(r, RecordStart::Invalid { .. }), "{r:?}");
        assert!(t.entries().is_empty());
    }
    // The start modes as the status says them.
    assert_eq!(StartMode::Fresh.name(), "fresh");
    let g = StartMode::Grace {
        why: "Checksum".into(),
    };
    assert!(g.to_string().contains("grace") && g.to_string().contains("Checksum"));
}

#[test]
fn table_sizes_and_node_ids() {
    assert_eq!(Table::new(0, 0, TIMEOUT).unwrap_err(), TableError::Size(0));
    assert_eq!(
        Table::new(0, MAX_CHUNKS + 1, TIMEOUT).unwrap_err(),
        TableError::Size(MAX_CHUNKS + 1)
    );
    assert_eq!(
        Table::new(16, 8, TIMEOUT).unwrap_err(),
        TableError::Node(16)
    );
    // A full 65536-chunk table serves the largest v2 request at the very end, and a message
    // costs no more than with a small table (no per-chunk scan).
    let mut t = Table::new(15, MAX_CHUNKS, TIMEOUT).unwrap();
    let now = Instant::now();
    offered_any(t.handle(0, request(0, 0, 1), now));
    let out = t.handle(0, request(0, 1, MAX_CHUNKS - 1), now);
    assert!(
        matches!(out, Outcome::Offer { grant, .. } if grant.first == 1 && grant.last() == MAX_CHUNKS - 1)
    );
    let w = msg2(to_daemon::CONFIRM, 0, 1, 1, MAX_CHUNKS - 1, 0);
    acked(t.handle(0, w, now));
    for _ in 0..10_000 {
        let w = msg2(to_daemon::RENEW, 0, 1, 1, MAX_CHUNKS - 1, 1);
        acked(t.handle(0, w, now));
    }
    assert!(matches!(
        t.handle(0, msg2(to_daemon::FREE, 0, 1, 1, MAX_CHUNKS - 1, 0), now),
        Outcome::Freed { .. }
    ));
    t.check_invariants().unwrap();
}

fn info(start: &StartMode) -> crate::status::Info<'_> {
    crate::status::Info {
        pid: 42,
        uptime: Duration::from_secs(7),
        start,
        generation: Some(3),
    }
}

#[test]
fn status_text_and_json() {
    let mut h = harness(64);
    lend(&mut h, 0, 0, 32);
    offered(step(&mut h, 2, request(2, 3, 8)), 2, 3);
    step(&mut h, 2, 0xdead);
    let mode = StartMode::Record {
        generation: 2,
        grants: 1,
    };
    let s = crate::status::render(&h.table, h.now(), &info(&mode));
    let lines: Vec<&str> = s.lines().collect();
    assert!(
        lines[0].starts_with("kram-daemon node 1 pid 42 up 7s: 64 chunks"),
        "{s}"
    );
    assert!(
        lines[0].ends_with("leases after 20s, protocol v1+v2"),
        "{s}"
    );
    assert_eq!(lines[1], "free 24, offered 8, lent 32");
    assert_eq!(
        lines[2],
        "start: record generation 2 (1 lent ranges); lease record generation 3"
    );
    assert_eq!(
        lines[3],
        "chunks 0-31 lent to node 0 instance 0 (lease expires in 20.0s)"
    );
    assert_eq!(
        lines[4],
        "chunks 32-39 offered to node 2 instance 3 (expires in 10.0s)"
    );
    assert_eq!(lines[5], "chunks 40-63 free");
    assert!(
        lines[6].starts_with("counters: received 4, requests 2, offers 2,"),
        "{s}"
    );
    assert!(lines[6].contains(", malformed 1,"), "{s}");
    assert!(lines[6].contains(", acks 1, claims 0, revokes 0,"), "{s}");
    assert_eq!(lines.len(), 7);

    // Grace: a line says how long; the JSON says it too.
    let mut g = harness(16);
    let now = g.now();
    g.table.start_grace(now);
    let mode = StartMode::Grace {
        why: "Checksum".into(),
    };
    let s = crate::status::render(&g.table, now + 5 * SEC, &info(&mode));
    assert!(
        s.contains("\nstart: grace (no usable lease record: Checksum)"),
        "{s}"
    );
    assert!(s.contains("\ngrace: 15.0s left (REQUESTs deferred"), "{s}");
    let sock = crate::status::socket_text(&g.table, now + 5 * SEC, &info(&mode));
    let (text, json) = crate::status::split(&sock);
    assert_eq!(text, s);
    let json = json.unwrap();
    for key in [
        "\"node\":1,",
        "\"grace_remaining_s\":15,",
        "\"start\":{\"mode\":\"grace\",",
        "\"totals\":{\"free\":16,\"offered\":0,\"lent\":0,\"wiping\":0}",
        "\"runs\":[{\"first\":0,\"last\":15,\"state\":\"free\"}]",
        "\"counters\":{\"received\":0,",
        "\"record_generation\":3,",
    ] {
        assert!(json.contains(key), "{key} in {json}");
    }
    assert_eq!(json.matches('{').count(), json.matches('}').count());
}

#[test]
fn state_file_syntax_errors() {
    assert_eq!(
        crate::state::parse("# nothing\n"),
        Err(crate::state::StateError::NoHeader)
    );
    assert!(crate::state::parse("node 1 chunks 64\nlent node 0 instance 0 first 0\n").is_err());
    assert!(
        crate::state::parse("node 1 chunks 64\nlent node 300 instance 0 first 0 chunks 1\n")
            .is_err()
    );
    assert!(crate::state::parse("node 1 chunks 64\nnode 1 chunks 64\n").is_err());
}

/// The same checks as the fuzz target, on a few hundred thousand pseudo-random messages over
/// tables of several sizes, some starting in grace, some v1-only.
#[test]
fn random_messages_keep_the_invariants() {
    let mut rng = XorShift(0x853c_49e6_748f_ea9b);
    let mut total = 0;
    let mut seen = Counters::default();
    for round in 0..60 {
        let records = 5000;
        let mut data = vec![0u8; 2 + records * RECORD];
        rng.fill(&mut data);
        // Mostly small tables, which fill up and fragment; sometimes 256, 272 and 1152.
        data[0] = [7u8, 15, 31, 63, 255, 200, 31, 63][round % 8];
        // Every third round starts in grace, every fifth is v1-only.
        data[1] = (data[1] & 0xf)
            | if round % 3 == 0 { 0x10 } else { 0 }
            | if round % 5 == 4 { 0x20 } else { 0 };
        for rec in data[2..].chunks_exact_mut(RECORD) {
            // Few senders and mostly short steps (ms) so that offers get confirmed or expire
            // and leases get renewed or expire; mostly shaped words, so the accepting paths
            // are exercised, but raw words too.
            rec[0] %= 4;
            rec[1] = if rec[1] < 16 { rec[1] & !1 } else { rec[1] | 1 };
            let dt = u16::from_le_bytes([rec[2], rec[3]]) % 1500;
            rec[2..4].copy_from_slice(&dt.to_le_bytes());
        }
        let c = run_bytes(&data).unwrap_or_else(|e| panic!("round {round}: {e}"));
        let pairs = c.pairs();
        let mut sum = seen.pairs();
        for (s, (_, v)) in sum.iter_mut().zip(pairs) {
            s.1 += v;
        }
        seen = counters_from(&sum);
        total += records;
    }
    assert!(total >= 300_000);
    // Every path was taken many times.
    // Not `leases_held`: the simulation has no fabric, so no borrower is known connected
    // (`a_lapsed_lease_of_a_connected_borrower_is_held_until_it_goes_for_every_instance` takes
    // that path).
    for (name, n) in seen.pairs() {
        if name != "send_errors" && name != "leases_held" {
            assert!(n >= 10, "{name} only {n} times: {seen:?}");
        }
    }
}

fn counters_from(p: &[(&'static str, u64); 23]) -> Counters {
    let v = |name: &str| p.iter().find(|(k, _)| *k == name).unwrap().1;
    Counters {
        received: v("received"),
        requests: v("requests"),
        offers: v("offers"),
        repeats: v("repeats"),
        unanswered: v("unanswered"),
        deferred: v("deferred"),
        confirms: v("confirms"),
        late_confirms: v("late_confirms"),
        renews: v("renews"),
        acks: v("acks"),
        claims: v("claims"),
        revokes: v("revokes"),
        declines: v("declines"),
        frees: v("frees"),
        timeouts: v("timeouts"),
        lease_expiries: v("lease_expiries"),
        leases_held: v("leases_held"),
        frees_unwiped: v("frees_unwiped"),
        wiped_chunks: v("wiped_chunks"),
        malformed: v("malformed"),
        version_refused: v("version_refused"),
        inconsistent: v("inconsistent"),
        send_errors: v("send_errors"),
    }
}

#[test]
fn aligned_request_gets_an_aligned_range() {
    // Chunk 0 sits 5 chunks past a 128-chunk boundary: the first aligned index is 123.
    let mut t = Table::new(ME, 256, TIMEOUT).unwrap();
    t.set_gas_offset((128 * 3 + 5) << 20);
    let now = Instant::now();
    let numa = |chunks: u32, align: u8| msg(to_daemon::REQUEST, 0, NUMA_INSTANCE, 0, chunks, align);
    // A swap instance takes chunks 0-129, so the aligned run must skip to 251... which does
    // not fit 128 chunks: the request stays unanswered until the swap range is freed.
    offered_any(t.handle(0, request(0, 0, 130), now));
    assert!(matches!(
        t.handle(0, numa(128, 7), now),
        Outcome::Unanswered { .. }
    ));
    assert!(matches!(
        t.handle(0, decline(0, 0, 0, 130), now),
        Outcome::Declined { .. }
    ));
    match t.handle(0, numa(128, 7), now) {
        Outcome::Offer { msg, to, .. } => {
            assert_eq!((to, msg.first_chunk, msg.chunks), (0, 123, 128));
            assert_eq!(msg.tag, 0, "an OFFER carries no alignment");
        }
        other => panic!("expected an aligned offer, got {other:?}"),
    }
    // A v2 partial grant honours the alignment too: the largest aligned run.
    let mut t = Table::new(ME, 600, TIMEOUT).unwrap();
    t.set_gas_offset(5 << 20);
    let w = msg2(to_daemon::REQUEST, 0, NUMA_INSTANCE, 100, 1024, 7);
    match t.handle(0, w, now) {
        // Aligned starts at 123 and 251, ...: from 123 to the end, 477 chunks.
        Outcome::Offer { grant, .. } => assert_eq!((grant.first, grant.chunks), (123, 477)),
        other => panic!("{other:?}"),
    }
    // An unaligned table can still serve unaligned requests, never aligned ones.
    let mut odd = Table::new(ME, 256, TIMEOUT).unwrap();
    odd.set_gas_offset(0x1000);
    assert!(matches!(
        odd.handle(0, numa(1, 1), now),
        Outcome::Unanswered { .. }
    ));
    offered_any(odd.handle(0, request(0, 0, 4), now));
}

/// The GSAS service borrows its page pool from its own node's daemon: a request from the
/// daemon's own node is served like any other, the replies go to the GSAS service, and the
/// status names the instance.
#[test]
fn own_node_lends_the_gsas_pool() {
    let mut h = harness(64);
    let me = ME as u8;
    let (first, n) = offered(
        step(&mut h, ME, request(me, GSAS_INSTANCE, 16)),
        ME,
        GSAS_INSTANCE,
    );
    assert_eq!(n, 16);
    let out = step(&mut h, ME, confirm(me, GSAS_INSTANCE, first, n));
    let (to, m) = out.reply().unwrap();
    assert_eq!((to, m.opcode), (ME, to_driver::ACK));
    assert_eq!(
        reply_service(m.instance),
        unimem_wire::mailbox::service::GSAS
    );
    assert_eq!(role(GSAS_INSTANCE), " (GSAS)");
    let g = Grant {
        node: me,
        instance: GSAS_INSTANCE,
        first,
        chunks: n,
    };
    assert!(g.to_string().ends_with("instance 14 (GSAS)"), "{g}");
    step(&mut h, ME, free(me, GSAS_INSTANCE, first, n));
    assert!(h.table.entries().is_empty());
}

#[test]
fn a_growing_gsas_pool_holds_one_grant_per_range_and_takes_a_partial_one_last() {
    let mut h = harness(40);
    // The pool at load, then its first growth (as much again): two grants of one node.
    let first = lend(&mut h, 1, GSAS_INSTANCES[0], 16);
    let second = lend(&mut h, 1, GSAS_INSTANCES[1], 16);
    assert_ne!(first, second);
    assert_eq!(role(GSAS_INSTANCES[1]), " (GSAS)");
    // The next asks for 32 and accepts 4: the daemon has 8 left and offers them.
    let out = step(&mut h, 1, request_v2(1, GSAS_INSTANCES[2], 32, 4));
    let (f, n) = offered(out, 1, GSAS_INSTANCES[2]);
    assert_eq!(n, 8);
    acked(step(&mut h, 1, confirm(1, GSAS_INSTANCES[2], f, n)));
    // Each range is renewed on its own instance; one instance cannot renew another's range.
    for (instance, first, n) in [
        (GSAS_INSTANCES[0], first, 16),
        (GSAS_INSTANCES[1], second, 16),
        (GSAS_INSTANCES[2], f, 8),
    ] {
        assert_eq!(
            acked(later(&mut h, SEC, 1, renew(1, instance, first, n))),
            AckKind::Renewed
        );
    }
    assert!(matches!(
        step(&mut h, 1, renew(1, GSAS_INSTANCES[0], second, 16)),
        Outcome::Revoke { .. }
    ));
}
