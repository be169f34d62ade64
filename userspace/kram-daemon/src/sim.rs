//! Drives a [`Table`] with arbitrary (sender, word, elapsed time) sequences and checks, after
//! every message, the table's invariants and that the outcome matches what changed. Shared by
//! the fuzz target (`fuzz/fuzz_targets/table.rs`) and the pseudo-random unit test.

use crate::table::{Chunk, Counters, Grant, GrantKind, Outcome, Table};
use std::time::{Duration, Instant};
use unimem_wire::kram::{to_daemon, KramMsg, MAX_CHUNKS};

/// Bytes per message record in [`run_bytes`].
pub const RECORD: usize = 12;

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

    /// Advances the clock by `dt`, delivers `word` from `sender`, and checks everything.
    pub fn step(&mut self, sender: u32, word: u64, dt: Duration) -> Result<Outcome, String> {
        self.elapsed += dt;
        let now = self.now();
        // Expire first so that "nothing changed" can be checked against the handled message.
        self.table.expire(now);
        let before_chunks = self.table.chunks().to_vec();
        let before = *self.table.counters();
        let out = self.table.handle(sender, word, now);
        let t = &self.table;
        t.check_invariants()
            .map_err(|e| format!("after {out:?}: {e}"))?;
        let after = t.counters();
        if after.received != before.received + 1 {
            return Err(format!("received not counted once: {out:?}"));
        }
        let holder = |g: &Grant| -> Option<GrantKind> {
            match t.chunks()[g.first as usize] {
                Chunk::Offered { grant, .. } if grant == *g => Some(GrantKind::Offered),
                Chunk::Lent { grant } if grant == *g => Some(GrantKind::Lent),
                _ => None,
            }
        };
        match out {
            Outcome::Offer { to, msg, grant, .. } => {
                if to != sender || u32::from(grant.node) != sender {
                    return Err(format!("offer to {to} for a message from {sender}"));
                }
                if u32::from(msg.node) != t.node()
                    || KramMsg::decode_for_driver(msg.encode()) != Ok(msg)
                {
                    return Err(format!("offer {msg:?} is not a valid OFFER from this node"));
                }
                if (
                    u32::from(msg.first_chunk),
                    u32::from(msg.chunks),
                    msg.instance,
                ) != (grant.first, grant.chunks, grant.instance)
                {
                    return Err(format!("offer {msg:?} does not say {grant}"));
                }
                if holder(&grant).is_none() {
                    return Err(format!("offered {grant} is not reserved"));
                }
            }
            Outcome::Unanswered { chunks, .. } => {
                let mut run = 0;
                let mut best = 0;
                for c in t.chunks() {
                    run = if *c == Chunk::Free { run + 1 } else { 0 };
                    best = best.max(run);
                }
                if best >= chunks {
                    return Err(format!(
                        "request for {chunks} unanswered with {best} free in a row"
                    ));
                }
            }
            Outcome::Confirmed { grant, .. } => {
                if holder(&grant) != Some(GrantKind::Lent) || u32::from(grant.node) != sender {
                    return Err(format!("confirmed {grant} is not lent to {sender}"));
                }
            }
            Outcome::Declined { grant, kept_lent } => {
                let expect = kept_lent.then_some(GrantKind::Lent);
                if holder(&grant) != expect {
                    return Err(format!("declined {grant}: state {:?}", holder(&grant)));
                }
                if !kept_lent && t.chunks()[grant.first as usize] != Chunk::Free {
                    return Err(format!("declined {grant} not free"));
                }
            }
            Outcome::Freed { grant } => {
                if t.chunks()[grant.first as usize..=grant.last() as usize]
                    .iter()
                    .any(|c| *c != Chunk::Free)
                {
                    return Err(format!("freed {grant} not free"));
                }
            }
            Outcome::Malformed { .. } | Outcome::Inconsistent { .. } => {
                if t.chunks() != before_chunks.as_slice() {
                    return Err(format!("dropped message changed the table: {out:?}"));
                }
            }
        }
        Ok(out)
    }
}

/// Feeds `data` to a fresh table and checks every step; returns the final counters. Byte 0 chooses the table size and
/// byte 1 the lender's node; then each [`RECORD`]-byte record is one message: sender, mode,
/// elapsed milliseconds (u16), and a word (u64). Mode bit 0 turns the word into a well-formed
/// driver message from the sender (opcode chosen from its low bits), bit 1 aims it at a range
/// the table holds (so CONFIRM/DECLINE/FREE also hit the accepting paths), bit 2 puts another
/// node in the node field.
pub fn run_bytes(data: &[u8]) -> Result<Counters, String> {
    let (Some(&size), Some(&node)) = (data.first(), data.get(1)) else {
        return Ok(Counters::default());
    };
    let chunks = u32::from(size) % MAX_CHUNKS + 1;
    let mut h = Harness::new(u32::from(node & 0xf), chunks, Duration::from_secs(10));
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
        to_daemon::CONFIRM,
        to_daemon::DECLINE,
        to_daemon::FREE,
    ][(raw & 3) as usize];
    let mut m = KramMsg {
        opcode,
        node: if mode & 4 != 0 {
            (raw >> 40) as u8 & 0xf
        } else {
            sender as u8 & 0xf
        },
        instance: (raw >> 2) as u8 & 0x3,
        first_chunk: (raw >> 8) as u8,
        // Mostly small sizes, so that tables fill up and fragment.
        chunks: ((raw >> 16) as u8 % 48).max(1),
        align: 0,
    };
    if opcode == to_daemon::REQUEST {
        m.first_chunk = 0;
    } else if mode & 2 != 0 {
        let mut grants = table.grants();
        if grants.iter().any(|(g, _)| u32::from(g.node) == sender) {
            grants.retain(|(g, _)| u32::from(g.node) == sender);
        }
        if !grants.is_empty() {
            let (g, _) = grants[(raw >> 24) as usize % grants.len()];
            m.instance = g.instance;
            m.first_chunk = g.first as u8;
            m.chunks = g.chunks as u8;
            if mode & 4 == 0 {
                m.node = g.node;
            }
        }
    }
    m.encode()
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
