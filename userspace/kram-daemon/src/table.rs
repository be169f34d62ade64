//! The chunk table: the daemon's whole protocol logic, without I/O (seed 000 §2.5.5-2.5.8).
//!
//! A static array with one entry per 1 MiB chunk of the lendable part of this node's
//! partition. Each chunk is free, offered to a (node, instance) until a deadline, or lent to a
//! (node, instance). The chunks of one offer or loan (a [`Grant`]) are contiguous and carry
//! the same state; a (node, instance) holds at most one grant.
//!
//! [`Table::handle`] takes one received word and the node the mailbox says sent it, and
//! returns what happened ([`Outcome`]), including the OFFER to send back, if any. Nothing a
//! message says is trusted: a word that does not decode, whose node field is not the sender,
//! or that refers to a range not offered/lent to that (node, instance) is counted and changes
//! nothing.

use std::collections::VecDeque;
use std::fmt;
use std::time::{Duration, Instant};
use unimem_wire::kram::{
    to_daemon, to_driver, KramError, KramMsg, CHUNK_SIZE, MAX_CHUNKS, NUMA_INSTANCE,
};

/// How many expired offers are remembered for late confirmations.
const EXPIRED_MEMORY: usize = 64;

/// A contiguous range of chunks offered or lent to one swap instance of one node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Grant {
    /// The borrowing node.
    pub node: u8,
    /// Its swap instance.
    pub instance: u8,
    /// First chunk index.
    pub first: u32,
    /// Number of chunks (1..=255).
    pub chunks: u32,
}

impl Grant {
    /// The last chunk index (inclusive).
    pub fn last(&self) -> u32 {
        self.first + self.chunks - 1
    }

    fn owner(&self) -> (u8, u8) {
        (self.node, self.instance)
    }

    fn range(&self) -> std::ops::Range<usize> {
        self.first as usize..(self.first + self.chunks) as usize
    }

    fn from_msg(m: &KramMsg) -> Self {
        Grant {
            node: m.node,
            instance: m.instance,
            first: u32::from(m.first_chunk),
            chunks: u32::from(m.chunks),
        }
    }
}

impl fmt::Display for Grant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "chunks {}-{} ({} MiB) node {} instance {}{}",
            self.first,
            self.last(),
            self.chunks,
            self.node,
            self.instance,
            role(self.instance)
        )
    }
}

/// " (NUMA)" for the instance id of the NUMA driver, so logs and status say what the memory
/// is used for; "" for swap instances.
pub fn role(instance: u8) -> &'static str {
    if instance == NUMA_INSTANCE {
        " (NUMA)"
    } else {
        ""
    }
}

/// The state of one chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Chunk {
    Free,
    /// Reserved for `grant` until `deadline`, waiting for CONFIRM or DECLINE.
    Offered {
        grant: Grant,
        deadline: Instant,
    },
    /// In use by `grant`'s node and instance until it sends FREE.
    Lent {
        grant: Grant,
    },
}

impl Chunk {
    fn grant(&self) -> Option<&Grant> {
        match self {
            Chunk::Free => None,
            Chunk::Offered { grant, .. } | Chunk::Lent { grant } => Some(grant),
        }
    }
}

/// Why a word was dropped before looking at the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Malformed {
    /// `KramMsg::decode_for_daemon` refused it (reserved bits, opcode, range).
    Decode(KramError),
    /// The node field is not the node the mailbox reports as the sender.
    NodeMismatch { field: u8, sender: u32 },
    /// A REQUEST with a nonzero first-chunk field (requests name no chunk).
    RequestFirstChunk(u8),
}

impl fmt::Display for Malformed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Malformed::Decode(KramError::Reserved) => f.write_str("reserved bits 24..60 set"),
            Malformed::Decode(KramError::Opcode(op)) => write!(f, "unknown opcode {op:#x}"),
            Malformed::Decode(KramError::Range) => {
                f.write_str("empty range or range past chunk 255")
            }
            Malformed::NodeMismatch { field, sender } => {
                write!(f, "node field {field} but sent by node {sender}")
            }
            Malformed::RequestFirstChunk(c) => write!(f, "REQUEST with first-chunk field {c}"),
        }
    }
}

/// Why a well-formed message does not fit the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Inconsistent {
    /// A REQUEST from a (node, instance) that already has `held` lent with another size.
    RequestWhileLent { held: Grant },
    /// A CONFIRM of a range that is not offered (or lent) to that (node, instance).
    ConfirmNotOffered,
    /// A CONFIRM of an offer that expired and whose chunks were given to someone else since:
    /// the driver believes it has memory it has not. Logged as an error.
    LateConfirmTaken,
    /// A DECLINE of a range that is not offered (or lent) to that (node, instance).
    DeclineNotOffered,
    /// A FREE of a range that is not lent to that (node, instance).
    FreeNotLent,
}

impl fmt::Display for Inconsistent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Inconsistent::RequestWhileLent { held } => {
                write!(f, "REQUEST of another size while {held} is lent")
            }
            Inconsistent::ConfirmNotOffered => f.write_str("CONFIRM of a range not offered"),
            Inconsistent::LateConfirmTaken => f.write_str(
                "late CONFIRM of an expired offer whose chunks are no longer free: \
                 the driver now uses memory it does not own",
            ),
            Inconsistent::DeclineNotOffered => f.write_str("DECLINE of a range not offered"),
            Inconsistent::FreeNotLent => f.write_str("FREE of a range not lent"),
        }
    }
}

/// What one received word did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Send `msg` (an OFFER) to node `to`, service `kram::reply_service(msg.instance)`. `repeat`: the same range
    /// was offered (or lent) to that (node, instance) already. `superseded`: an offer of
    /// another size to the same (node, instance) was released first.
    Offer {
        to: u32,
        msg: KramMsg,
        grant: Grant,
        repeat: bool,
        superseded: Option<Grant>,
    },
    /// A valid REQUEST that cannot be met: no `chunks` contiguous free chunks. Stay silent.
    Unanswered {
        node: u8,
        instance: u8,
        chunks: u32,
        superseded: Option<Grant>,
    },
    /// Offered → lent. `duplicate`: it was lent to that (node, instance) already;
    /// `late`: the offer had expired but its chunks were still free.
    Confirmed {
        grant: Grant,
        duplicate: bool,
        late: bool,
    },
    /// Offered → free; `kept_lent`: the range is lent to that (node, instance) (a repeated
    /// offer crossed the CONFIRM), so nothing changes.
    Declined { grant: Grant, kept_lent: bool },
    /// Lent → free.
    Freed { grant: Grant },
    /// Dropped: not a valid message from its sender.
    Malformed {
        word: u64,
        sender: u32,
        why: Malformed,
    },
    /// Dropped: valid, but does not fit the table.
    Inconsistent {
        msg: KramMsg,
        sender: u32,
        why: Inconsistent,
    },
}

/// Event counters, shown by `kram-daemon --status`.
///
/// Every received word is counted in `received` and in exactly one of `requests`,
/// `confirms`, `declines`, `frees`, `malformed`, `inconsistent`; every request in exactly one
/// of `offers` and `unanswered`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    pub received: u64,
    pub requests: u64,
    /// OFFERs sent (including repeats).
    pub offers: u64,
    /// OFFERs that repeated a range already offered/lent to the same (node, instance).
    pub repeats: u64,
    /// Requests left unanswered (no room).
    pub unanswered: u64,
    pub confirms: u64,
    /// Confirms honoured after the offer had expired (its chunks were still free).
    pub late_confirms: u64,
    pub declines: u64,
    pub frees: u64,
    /// Offers released because nobody confirmed them in time.
    pub timeouts: u64,
    pub malformed: u64,
    pub inconsistent: u64,
    /// OFFERs the mailbox refused (the event loop counts these).
    pub send_errors: u64,
}

impl Counters {
    /// `name value` pairs in display order.
    pub fn pairs(&self) -> [(&'static str, u64); 13] {
        [
            ("received", self.received),
            ("requests", self.requests),
            ("offers", self.offers),
            ("repeats", self.repeats),
            ("unanswered", self.unanswered),
            ("confirms", self.confirms),
            ("late_confirms", self.late_confirms),
            ("declines", self.declines),
            ("frees", self.frees),
            ("timeouts", self.timeouts),
            ("malformed", self.malformed),
            ("inconsistent", self.inconsistent),
            ("send_errors", self.send_errors),
        ]
    }
}

/// What a run of chunks is doing, for the status output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunState {
    Free,
    Offered { grant: Grant, deadline: Instant },
    Lent { grant: Grant },
}

/// Consecutive chunks in the same state (free, or one grant).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Run {
    pub first: u32,
    pub last: u32,
    pub state: RunState,
}

/// Chunk totals by state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Totals {
    pub free: u32,
    pub offered: u32,
    pub lent: u32,
}

/// Whether a grant is still an offer or already a loan (state file, restore).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GrantKind {
    Offered,
    Lent,
}

/// Errors of [`Table::new`] and [`Table::restore`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TableError {
    #[error("a table has 1..={MAX_CHUNKS} chunks, not {0}")]
    Size(u32),
    #[error("node id {0} does not fit the 4-bit node field")]
    Node(u32),
    #[error("{0} is outside the table of {1} chunks or not a valid range")]
    OutOfRange(Grant, u32),
    #[error("{0} overlaps chunks that are already in use")]
    Overlap(Grant),
    #[error("node {} instance {} already holds a grant", .0.node, .0.instance)]
    DuplicateOwner(Grant),
}

/// The chunk table of one lending node.
#[derive(Debug, Clone)]
pub struct Table {
    node: u8,
    chunks: Vec<Chunk>,
    offer_timeout: Duration,
    counters: Counters,
    /// Recently expired offers and their deadlines: a CONFIRM that crossed the expiry (within
    /// one more timeout) is honoured if the chunks are still free.
    expired: VecDeque<(Grant, Instant)>,
    /// GAS offset of chunk 0 in chunks, or `None` when it is not chunk-aligned (then no
    /// aligned REQUEST can be met).
    base_chunk: Option<u64>,
}

impl Table {
    /// A table of `chunks` free chunks for lender `node`; offers expire after `offer_timeout`.
    pub fn new(node: u32, chunks: u32, offer_timeout: Duration) -> Result<Self, TableError> {
        if chunks == 0 || chunks > MAX_CHUNKS {
            return Err(TableError::Size(chunks));
        }
        if node > 0xf {
            return Err(TableError::Node(node));
        }
        Ok(Table {
            node: node as u8,
            chunks: vec![Chunk::Free; chunks as usize],
            offer_timeout,
            counters: Counters::default(),
            expired: VecDeque::new(),
            base_chunk: Some(0),
        })
    }

    /// Tells the table where chunk 0 lies in the GAS, so that a REQUEST with an alignment
    /// (the NUMA driver's: hot-added memory must be memory-block aligned) gets a range whose
    /// GAS offset, and so physical address, is aligned.
    pub fn set_gas_offset(&mut self, offset: u64) {
        self.base_chunk = (offset % CHUNK_SIZE == 0).then_some(offset / CHUNK_SIZE);
    }

    /// This lender's node id.
    pub fn node(&self) -> u32 {
        u32::from(self.node)
    }

    /// Number of chunks in the table.
    pub fn len(&self) -> u32 {
        self.chunks.len() as u32
    }

    /// Always false: a table has at least one chunk.
    pub fn is_empty(&self) -> bool {
        self.chunks.is_empty()
    }

    pub fn offer_timeout(&self) -> Duration {
        self.offer_timeout
    }

    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    /// Counts an OFFER the mailbox refused (the reservation stays; a repeated REQUEST gets it
    /// again).
    pub fn count_send_error(&mut self) {
        self.counters.send_errors += 1;
    }

    /// The per-chunk states.
    pub fn chunks(&self) -> &[Chunk] {
        &self.chunks
    }

    /// Handles one word received from node `sender` (as reported by the mailbox) at `now`.
    /// Expired offers are released first.
    pub fn handle(&mut self, sender: u32, word: u64, now: Instant) -> Outcome {
        self.expire(now);
        self.counters.received += 1;
        let msg = match self.validate(sender, word) {
            Ok(m) => m,
            Err(why) => {
                self.counters.malformed += 1;
                return Outcome::Malformed { word, sender, why };
            }
        };
        let result = match msg.opcode {
            to_daemon::REQUEST => self.request(&msg, now),
            to_daemon::CONFIRM => self.confirm(&msg, now),
            to_daemon::DECLINE => self.decline(&msg),
            to_daemon::FREE => self.free(&msg),
            _ => unreachable!("decode_for_daemon accepts only the four driver opcodes"),
        };
        result.unwrap_or_else(|why| {
            self.counters.inconsistent += 1;
            Outcome::Inconsistent { msg, sender, why }
        })
    }

    fn validate(&self, sender: u32, word: u64) -> Result<KramMsg, Malformed> {
        let m = KramMsg::decode_for_daemon(word).map_err(Malformed::Decode)?;
        if u32::from(m.node) != sender {
            return Err(Malformed::NodeMismatch {
                field: m.node,
                sender,
            });
        }
        if m.opcode == to_daemon::REQUEST && m.first_chunk != 0 {
            return Err(Malformed::RequestFirstChunk(m.first_chunk));
        }
        Ok(m)
    }

    fn request(&mut self, m: &KramMsg, now: Instant) -> Result<Outcome, Inconsistent> {
        let wanted = u32::from(m.chunks);
        let mut superseded = None;
        if let Some((held, kind)) = self.grant_of(m.node, m.instance) {
            if held.chunks == wanted {
                // Idempotent: the driver asks again (lost offer, restarted driver, timer
                // fired before our answer arrived). Same range, fresh deadline.
                if kind == GrantKind::Offered {
                    self.set(&held, self.offered(held, now));
                }
                self.counters.requests += 1;
                return Ok(self.offer(held, true, None));
            }
            if kind == GrantKind::Lent {
                return Err(Inconsistent::RequestWhileLent { held });
            }
            // The instance changed size (driver reloaded with other parameters): the old
            // offer will never be confirmed.
            self.set(&held, Chunk::Free);
            superseded = Some(held);
        }
        self.counters.requests += 1;
        match self.first_fit(wanted, m.align) {
            Some(first) => {
                let grant = Grant {
                    node: m.node,
                    instance: m.instance,
                    first,
                    chunks: wanted,
                };
                self.set(&grant, self.offered(grant, now));
                Ok(self.offer(grant, false, superseded))
            }
            None => {
                self.counters.unanswered += 1;
                Ok(Outcome::Unanswered {
                    node: m.node,
                    instance: m.instance,
                    chunks: wanted,
                    superseded,
                })
            }
        }
    }

    fn offer(&mut self, grant: Grant, repeat: bool, superseded: Option<Grant>) -> Outcome {
        self.counters.offers += 1;
        if repeat {
            self.counters.repeats += 1;
        }
        Outcome::Offer {
            to: u32::from(grant.node),
            msg: KramMsg {
                opcode: to_driver::OFFER,
                node: self.node,
                instance: grant.instance,
                first_chunk: grant.first as u8,
                chunks: grant.chunks as u8,
                align: 0,
            },
            grant,
            repeat,
            superseded,
        }
    }

    fn confirm(&mut self, m: &KramMsg, now: Instant) -> Result<Outcome, Inconsistent> {
        let asked = Grant::from_msg(m);
        match self.grant_of(m.node, m.instance) {
            Some((held, kind)) if held == asked => {
                self.set(&held, Chunk::Lent { grant: held });
                self.counters.confirms += 1;
                return Ok(Outcome::Confirmed {
                    grant: held,
                    duplicate: kind == GrantKind::Lent,
                    late: false,
                });
            }
            Some((_, GrantKind::Lent)) => return Err(Inconsistent::ConfirmNotOffered),
            _ => {}
        }
        // Not the current offer: maybe one that expired while the CONFIRM was on its way.
        let grace = self.offer_timeout;
        let Some(pos) = self
            .expired
            .iter()
            .position(|(g, at)| *g == asked && now.saturating_duration_since(*at) <= grace)
        else {
            return Err(Inconsistent::ConfirmNotOffered);
        };
        self.expired.remove(pos);
        // The driver now counts on `asked`; a newer offer to the same instance is moot.
        let newer = match self.grant_of(m.node, m.instance) {
            Some((g, GrantKind::Offered)) => Some(g),
            _ => None,
        };
        if !self.chunks[asked.range()]
            .iter()
            .all(|c| *c == Chunk::Free || c.grant() == newer.as_ref())
        {
            return Err(Inconsistent::LateConfirmTaken);
        }
        if let Some(newer) = newer {
            self.set(&newer, Chunk::Free);
        }
        self.set(&asked, Chunk::Lent { grant: asked });
        self.counters.confirms += 1;
        self.counters.late_confirms += 1;
        Ok(Outcome::Confirmed {
            grant: asked,
            duplicate: false,
            late: true,
        })
    }

    fn decline(&mut self, m: &KramMsg) -> Result<Outcome, Inconsistent> {
        let asked = Grant::from_msg(m);
        match self.grant_of(m.node, m.instance) {
            Some((held, kind)) if held == asked => {
                // A DECLINE of a lent range: a repeated offer crossed the CONFIRM and the
                // driver, already complete, declined the repeat. It still uses the chunks.
                if kind == GrantKind::Offered {
                    self.set(&held, Chunk::Free);
                }
                self.counters.declines += 1;
                Ok(Outcome::Declined {
                    grant: held,
                    kept_lent: kind == GrantKind::Lent,
                })
            }
            _ => Err(Inconsistent::DeclineNotOffered),
        }
    }

    fn free(&mut self, m: &KramMsg) -> Result<Outcome, Inconsistent> {
        let asked = Grant::from_msg(m);
        match self.grant_of(m.node, m.instance) {
            Some((held, GrantKind::Lent)) if held == asked => {
                self.set(&held, Chunk::Free);
                self.counters.frees += 1;
                Ok(Outcome::Freed { grant: held })
            }
            _ => Err(Inconsistent::FreeNotLent),
        }
    }

    /// Releases every offer whose deadline is `<= now`; returns them.
    pub fn expire(&mut self, now: Instant) -> Vec<Grant> {
        let grace = self.offer_timeout;
        while self
            .expired
            .front()
            .is_some_and(|(_, at)| now.saturating_duration_since(*at) > grace)
        {
            self.expired.pop_front();
        }
        let mut released = Vec::new();
        let mut i = 0;
        while i < self.chunks.len() {
            if let Chunk::Offered { grant, deadline } = self.chunks[i] {
                if deadline <= now {
                    self.set(&grant, Chunk::Free);
                    self.counters.timeouts += 1;
                    if self.expired.len() == EXPIRED_MEMORY {
                        self.expired.pop_front();
                    }
                    // Remembered from its deadline, however late this runs.
                    self.expired.push_back((grant, deadline));
                    released.push(grant);
                }
                i = grant.range().end;
            } else {
                i += 1;
            }
        }
        released
    }

    /// The earliest offer deadline, if any offer is pending.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.chunks
            .iter()
            .filter_map(|c| match c {
                Chunk::Offered { deadline, .. } => Some(*deadline),
                _ => None,
            })
            .min()
    }

    /// Puts back a grant from the state file of a previous run. Offers get a fresh deadline.
    pub fn restore(
        &mut self,
        grant: Grant,
        kind: GrantKind,
        now: Instant,
    ) -> Result<(), TableError> {
        if grant.chunks == 0
            || grant.chunks > 255
            || grant.node > 0xf
            || grant.instance > 0xf
            || grant.first + grant.chunks > self.len()
        {
            return Err(TableError::OutOfRange(grant, self.len()));
        }
        if self.grant_of(grant.node, grant.instance).is_some() {
            return Err(TableError::DuplicateOwner(grant));
        }
        if self.chunks[grant.range()].iter().any(|c| *c != Chunk::Free) {
            return Err(TableError::Overlap(grant));
        }
        let state = match kind {
            GrantKind::Offered => self.offered(grant, now),
            GrantKind::Lent => Chunk::Lent { grant },
        };
        self.set(&grant, state);
        Ok(())
    }

    /// Every grant, in chunk order.
    pub fn grants(&self) -> Vec<(Grant, GrantKind)> {
        self.runs()
            .into_iter()
            .filter_map(|r| match r.state {
                RunState::Free => None,
                RunState::Offered { grant, .. } => Some((grant, GrantKind::Offered)),
                RunState::Lent { grant } => Some((grant, GrantKind::Lent)),
            })
            .collect()
    }

    /// The table as runs: free chunks merged, one run per grant.
    pub fn runs(&self) -> Vec<Run> {
        let mut runs: Vec<Run> = Vec::new();
        for (i, c) in self.chunks.iter().enumerate() {
            let i = i as u32;
            let state = match *c {
                Chunk::Free => RunState::Free,
                Chunk::Offered { grant, deadline } => RunState::Offered { grant, deadline },
                Chunk::Lent { grant } => RunState::Lent { grant },
            };
            match runs.last_mut() {
                Some(r) if r.state == state => r.last = i,
                _ => runs.push(Run {
                    first: i,
                    last: i,
                    state,
                }),
            }
        }
        runs
    }

    pub fn totals(&self) -> Totals {
        let mut t = Totals::default();
        for c in &self.chunks {
            match c {
                Chunk::Free => t.free += 1,
                Chunk::Offered { .. } => t.offered += 1,
                Chunk::Lent { .. } => t.lent += 1,
            }
        }
        t
    }

    /// Checks the table's invariants; `Err` describes the first violation.
    ///
    /// Every non-free chunk belongs to a grant that covers it, lies inside the table, and all
    /// of whose chunks are in the same state with the same grant (and deadline); a (node,
    /// instance) holds at most one grant; totals add up to the table size; the counters
    /// partition the received words as documented on [`Counters`].
    pub fn check_invariants(&self) -> Result<(), String> {
        let n = self.chunks.len();
        let mut owners = std::collections::HashSet::new();
        let mut i = 0;
        while i < n {
            let c = self.chunks[i];
            let Some(g) = c.grant() else {
                i += 1;
                continue;
            };
            if g.first as usize != i {
                return Err(format!("chunk {i}: {c:?} does not start at its grant"));
            }
            if g.chunks == 0 || g.chunks > 255 || g.range().end > n {
                return Err(format!("chunk {i}: grant {g} out of range"));
            }
            if g.node > 0xf || g.instance > 0xf {
                return Err(format!("chunk {i}: grant {g} has a bad owner"));
            }
            for j in g.range() {
                if self.chunks[j] != c {
                    return Err(format!(
                        "chunk {j}: {:?} differs from its grant's first chunk {c:?}",
                        self.chunks[j]
                    ));
                }
            }
            if !owners.insert(g.owner()) {
                return Err(format!(
                    "node {} instance {} holds two grants",
                    g.node, g.instance
                ));
            }
            i = g.range().end;
        }
        let t = self.totals();
        if (t.free + t.offered + t.lent) as usize != n {
            return Err(format!("totals {t:?} do not add up to {n}"));
        }
        let k = &self.counters;
        let classified =
            k.requests + k.confirms + k.declines + k.frees + k.malformed + k.inconsistent;
        if k.received != classified {
            return Err(format!(
                "received {} != sum of outcomes {classified}: {k:?}",
                k.received
            ));
        }
        if k.requests != k.offers + k.unanswered {
            return Err(format!("requests != offers + unanswered: {k:?}"));
        }
        if k.repeats > k.offers || k.late_confirms > k.confirms {
            return Err(format!("sub-counter larger than its counter: {k:?}"));
        }
        Ok(())
    }

    fn offered(&self, grant: Grant, now: Instant) -> Chunk {
        Chunk::Offered {
            grant,
            deadline: now + self.offer_timeout,
        }
    }

    fn set(&mut self, grant: &Grant, state: Chunk) {
        for c in &mut self.chunks[grant.range()] {
            *c = state;
        }
    }

    /// The grant of (node, instance), if any.
    fn grant_of(&self, node: u8, instance: u8) -> Option<(Grant, GrantKind)> {
        self.chunks.iter().find_map(|c| match c {
            Chunk::Offered { grant, .. } if grant.owner() == (node, instance) => {
                Some((*grant, GrantKind::Offered))
            }
            Chunk::Lent { grant } if grant.owner() == (node, instance) => {
                Some((*grant, GrantKind::Lent))
            }
            _ => None,
        })
    }

    /// The lowest index starting `wanted` contiguous free chunks whose GAS offset is a
    /// multiple of `2^align` chunks.
    fn first_fit(&self, wanted: u32, align: u8) -> Option<u32> {
        let wanted = wanted as usize;
        let step = 1u64 << align;
        let base = match self.base_chunk {
            Some(b) => b,
            None if align == 0 => 0,
            None => return None,
        };
        // First index whose absolute chunk number is a multiple of `step`.
        let mut start = ((step - base % step) % step) as usize;
        while start + wanted <= self.chunks.len() {
            match self.chunks[start..start + wanted]
                .iter()
                .rposition(|c| *c != Chunk::Free)
            {
                None => return Some(start as u32),
                // Skip past the busy chunk, to the next aligned index.
                Some(busy) => {
                    let next = (base + (start + busy + 1) as u64).div_ceil(step) * step;
                    start = (next - base) as usize;
                }
            }
        }
        None
    }
}
