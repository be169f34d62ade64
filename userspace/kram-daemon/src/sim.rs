//! Drives a [`Table`] with arbitrary (sender, word, elapsed time) sequences and checks, after
//! every message, the table's invariants and that the outcome matches what changed. Shared by
//! the fuzz target (`fuzz/fuzz_targets/table.rs`) and the pseudo-random unit test.
//!
//! Time advances with every message, so offers time out, leases expire unless renewed (the
//! harness wipes expired ranges at once, as the daemon does) and the grace period ends.

use crate::table::{Chunk, Counters, Entry, Grant, Outcome, Table};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use unimem_wire::kram::{to_daemon, to_driver, KramMsg, MAX_CHUNKS_V1, MAX_REQUEST_CHUNKS, V1, V2};

/// Bytes per message record in [`run_bytes`].
pub const RECORD: usize = 12;
/// The simulation's offer timeout and lease: short against its steps (up to 1.5 s in the
/// unit test), so that all of them happen.
pub const SIM_OFFER_TIMEOUT: Duration = Duration::from_secs(3);
pub const SIM_LEASE: Duration = Duration::from_secs(6);

/// A table plus a simulated clock.
pub struct Harness {
    pub table: Table,
    base: Instant,
    elapsed: Duration,
}

impl Harness {
    pub fn new(node: u32, chunks: u32, offer_timeout: Duration) -> Self {
        Harness {
            table: Table::new(node, chunks, offer_timeout).expect("valid table"),
            base: Instant::now(),
            elapsed: Duration::ZERO,
        }
    }

    pub fn now(&self) -> Instant {
        self.base + self.elapsed
    }

    /// Advances the clock by `dt` without a message: expires what is due and wipes it.
    pub fn advance(&mut self, dt: Duration) {
        self.elapsed += dt;
        let now = self.now();
        self.table.expire(now);
        self.wipe();
    }

    /// Wipes (instantly) every range waiting for it, as the daemon does after `expire`.
    pub fn wipe(&mut self) {
        for (first, _) in self.table.wiping() {
            assert!(self.table.wiped(first));
        }
    }

    /// Advances the clock by `dt`, delivers `word` from `sender`, and checks everything.
    pub fn step(&mut self, sender: u32, word: u64, dt: Duration) -> Result<Outcome, String> {
        // Expire first so that "nothing changed" can be checked against the handled message.
        self.advance(dt);
        let now = self.now();
        let before: BTreeMap<u32, Entry> = self.table.entries().clone();
        let before_counters = *self.table.counters();
        let in_grace = self.table.grace_until().is_some();
        let out = self.table.handle(sender, word, now);
        let t = &self.table;
        t.check_invariants()
            .map_err(|e| format!("after {out:?}: {e}"))?;
        // Only an unwiped FREE leaves a range to wipe (the daemon wipes it in the same loop).
        let unwiped_free = matches!(out, Outcome::Freed { wipe: true, .. });
        if t.wiping().is_empty() == unwiped_free {
            return Err(format!("{out:?}: ranges to wipe {:?}", t.wiping()));
        }
        let after = t.counters();
        if after.received != before_counters.received + 1 {
            return Err(format!("received not counted once: {out:?}"));
        }
        let unchanged = t.entries() == &before;
        let entry = |g: &Grant| t.entries().get(&g.first).copied();
        let asked = KramMsg::decode_for_daemon(word, t.max_version());
        // Replies: to the sender, for its instance, decodable by a driver, in the layout of
        // the message they answer.
        if let Some((to, msg)) = out.reply() {
            let asked = asked.map_err(|e| format!("reply {msg:?} to an undecodable word {e:?}"))?;
            if to != sender || u32::from(msg.node) != t.node() || msg.instance != asked.instance {
                return Err(format!("reply {msg:?} to {to} for {asked:?} from {sender}"));
            }
            if KramMsg::decode_for_driver(msg.encode()) != Ok(msg) || msg.version != asked.version {
                return Err(format!("reply {msg:?} is not a valid reply to {asked:?}"));
            }
        }
        match out {
            Outcome::Offer { msg, grant, .. } => {
                let asked = asked.expect("checked above");
                if msg.opcode != to_driver::OFFER
                    || (msg.first_chunk, msg.chunks) != (grant.first, grant.chunks)
                {
                    return Err(format!("offer {msg:?} does not say {grant}"));
                }
                if !matches!(entry(&grant), Some(Entry::Offered { grant: g, .. } | Entry::Lent { grant: g, .. }) if g == grant)
                {
                    return Err(format!("offered {grant} is not reserved"));
                }
                if grant.chunks < asked.min_chunks() || grant.chunks > asked.chunks {
                    return Err(format!("offered {grant} for {asked:?}"));
                }
                if asked.version == V1 && grant.end() > MAX_CHUNKS_V1 {
                    return Err(format!("v1 offer {grant} past chunk 255"));
                }
                if grant.first % (1 << asked.tag) != 0 {
                    return Err(format!("offer {grant} not aligned as {asked:?} asked"));
                }
            }
            Outcome::Unanswered { min, .. } => {
                let asked = asked.expect("valid request");
                let best = best_aligned_run(t, asked);
                if best >= min {
                    return Err(format!(
                        "request {asked:?} unanswered with {best} free in a row"
                    ));
                }
            }
            Outcome::Deferred { .. } => {
                if !in_grace || !unchanged {
                    return Err("deferred outside grace, or the table changed".into());
                }
            }
            Outcome::Ack { msg, grant, .. } => {
                let asked = asked.expect("checked above");
                let lent = matches!(entry(&grant), Some(Entry::Lent { grant: g, expiry }) if g == grant && expiry == now + t.lease());
                if !lent || u32::from(grant.node) != sender {
                    return Err(format!("ACKed {grant} is not lent to {sender} for a lease"));
                }
                if msg.opcode != to_driver::ACK
                    || msg.tag != asked.tag
                    || (msg.first_chunk, msg.chunks) != (asked.first_chunk, asked.chunks)
                    || (grant.first, grant.chunks) != (asked.first_chunk, asked.chunks)
                {
                    return Err(format!("ACK {msg:?} does not answer {asked:?}"));
                }
            }
            Outcome::Revoke { msg, .. } => {
                let asked = asked.expect("checked above");
                if !unchanged {
                    return Err(format!("REVOKE changed the table: {out:?}"));
                }
                if msg.opcode != to_driver::REVOKE
                    || msg.tag != 0
                    || (msg.first_chunk, msg.chunks) != (asked.first_chunk, asked.chunks)
                {
                    return Err(format!("REVOKE {msg:?} does not name {asked:?}"));
                }
            }
            Outcome::Declined { grant, kept_lent } => {
                let now_lent =
                    matches!(entry(&grant), Some(Entry::Lent { grant: g, .. }) if g == grant);
                if kept_lent != now_lent || (kept_lent && !unchanged) {
                    return Err(format!("declined {grant}: now {:?}", entry(&grant)));
                }
                if !kept_lent && entry(&grant).is_some() {
                    return Err(format!("declined {grant} not free"));
                }
            }
            Outcome::Freed { grant, wipe } => {
                let now_wiping = matches!(entry(&grant), Some(Entry::Wiping { first, chunks }) if first == grant.first && chunks == grant.chunks);
                if (wipe && !now_wiping) || (!wipe && entry(&grant).is_some()) {
                    return Err(format!(
                        "freed {grant} (wipe: {wipe}): now {:?}",
                        entry(&grant)
                    ));
                }
            }
            Outcome::Malformed { .. } | Outcome::Inconsistent { .. } => {
                if !unchanged {
                    return Err(format!("dropped message changed the table: {out:?}"));
                }
            }
        }
        self.wipe();
        Ok(out)
    }
}

/// The longest free run a REQUEST could get: aligned as it asks, below chunk 256 for v1.
fn best_aligned_run(t: &Table, asked: KramMsg) -> u32 {
    let step = 1usize << asked.tag;
    let limit = if asked.version == V1 {
        (t.len() as usize).min(MAX_CHUNKS_V1 as usize)
    } else {
        t.len() as usize
    };
    let chunks = t.chunks();
    let mut best = 0;
    for start in (0..limit).step_by(step) {
        let n = chunks[start..limit]
            .iter()
            .take_while(|c| **c == Chunk::Free)
            .count();
        best = best.max(n as u32);
    }
    best
}

/// Feeds `data` to a fresh table and checks every step; returns the final counters. Byte 0
/// chooses the table size (1..=200, or 272..=1152: past v1's 256), byte 1 the lender's node
/// (bits 0-3), a start in the grace period (bit 4) and a v1-only daemon (bit 5); then each
/// [`RECORD`]-byte record is one message: sender, mode, elapsed milliseconds (u16), and a word
/// (u64). Mode bit 0 turns the word into a well-formed driver message from the sender
/// (opcode chosen from its low bits), bit 1 aims it at a range the table holds (so CONFIRM,
/// RENEW, DECLINE and FREE also hit the accepting paths), bit 2 puts another node in the node
/// field.
pub fn run_bytes(data: &[u8]) -> Result<Counters, String> {
    let (Some(&size), Some(&flags)) = (data.first(), data.get(1)) else {
        return Ok(Counters::default());
    };
    let chunks = match size {
        0..=199 => u32::from(size) + 1,
        s => 256 + (u32::from(s) - 199) * 16,
    };
    let mut h = Harness::new(u32::from(flags & 0xf), chunks, SIM_OFFER_TIMEOUT);
    h.table.set_lease(SIM_LEASE);
    if flags & 0x20 != 0 {
        h.table.set_max_version(V1);
    }
    if flags & 0x10 != 0 {
        let now = h.now();
        h.table.start_grace(now);
    }
    for rec in data[2..].chunks_exact(RECORD) {
        let sender = u32::from(rec[0] % 20);
        let mode = rec[1];
        let dt = Duration::from_millis(u64::from(u16::from_le_bytes([rec[2], rec[3]])));
        let raw = u64::from_le_bytes(rec[4..12].try_into().unwrap());
        let word = if mode & 1 != 0 {
            shape(&h.table, sender, mode, raw)
        } else {
            raw
        };
        h.step(sender, word, dt)
            .map_err(|e| format!("message from {sender} word {word:#018x}: {e}"))?;
    }
    Ok(*h.table.counters())
}

/// A plausible driver message from `sender`, drawn from `raw`.
fn shape(table: &Table, sender: u32, mode: u8, raw: u64) -> u64 {
    let opcode = [
        to_daemon::REQUEST,
        to_daemon::REQUEST,
        to_daemon::CONFIRM,
        to_daemon::RENEW,
        to_daemon::RENEW,
        to_daemon::DECLINE,
        to_daemon::FREE,
        to_daemon::RENEW,
    ][(raw & 7) as usize];
    let node = if mode & 4 != 0 {
        (raw >> 40) as u8 & 0xf
    } else {
        sender as u8 & 0xf
    };
    let instance = (raw >> 3) as u8 & 0x3;
    let len = table.len();
    // Mostly small sizes, so that tables fill up and fragment; sometimes large ones.
    let mut chunks = if raw >> 63 != 0 {
        ((raw >> 16) as u32 % len.max(2)).max(1)
    } else {
        ((raw >> 16) as u32 % 48).max(1)
    };
    let mut first = (raw >> 32) as u32 % (len + 8);
    let force_v2 = (raw >> 62) & 1 != 0;
    let mut tag = (raw >> 56) as u8 & 0xf;
    if opcode == to_daemon::REQUEST {
        // v2: a minimum in the first-chunk field; an alignment now and then.
        first = if force_v2 || chunks > MAX_REQUEST_CHUNKS {
            1 + (raw >> 5) as u32 % chunks
        } else {
            0
        };
        tag = if (raw >> 60) & 3 == 0 { tag & 3 } else { 0 };
    } else if mode & 2 != 0 {
        let mut grants = table.grants();
        if grants.iter().any(|(g, _)| u32::from(g.node) == sender) {
            grants.retain(|(g, _)| u32::from(g.node) == sender);
        }
        if !grants.is_empty() {
            let (g, _) = grants[(raw >> 24) as usize % grants.len()];
            first = g.first;
            chunks = g.chunks;
            return KramMsg {
                opcode,
                version: pick(force_v2, first, chunks),
                node: if mode & 4 == 0 { g.node } else { node },
                instance: g.instance,
                first_chunk: first,
                chunks,
                tag: match opcode {
                    to_daemon::DECLINE => 0,
                    // Now and then the borrower could not wipe it.
                    to_daemon::FREE => tag & to_daemon::FREE_UNWIPED,
                    _ => tag,
                },
            }
            .encode();
        }
    }
    match opcode {
        to_daemon::DECLINE => tag = 0,
        to_daemon::FREE => tag &= to_daemon::FREE_UNWIPED,
        _ => {}
    }
    let version = if opcode == to_daemon::REQUEST {
        if first != 0 {
            V2
        } else {
            V1
        }
    } else {
        pick(force_v2, first, chunks)
    };
    KramMsg {
        opcode,
        version,
        node,
        instance,
        first_chunk: first,
        chunks,
        tag,
    }
    .encode()
}

/// v1 when the range can be said in it (and v2 is not forced), else v2.
fn pick(force_v2: bool, first: u32, chunks: u32) -> u8 {
    if !force_v2 && first + chunks <= MAX_CHUNKS_V1 && chunks <= MAX_REQUEST_CHUNKS {
        V1
    } else {
        V2
    }
}

/// A small deterministic generator (xorshift64*) for tests.
pub struct XorShift(pub u64);

impl XorShift {
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    pub fn fill(&mut self, buf: &mut [u8]) {
        for chunk in buf.chunks_mut(8) {
            let v = self.next_u64().to_le_bytes();
            chunk.copy_from_slice(&v[..chunk.len()]);
        }
    }
}
