//! The chunk table: the daemon's whole protocol logic, without I/O (seed 000 §2.5.5-2.5.8,
//! plus unimem's v2 layout and leases, docs/KRAM-DAEMON.md).
//!
//! The table covers the lendable part of this node's partition, 1 MiB chunks (at most
//! [`MAX_CHUNKS`]). A chunk is free, offered to a (node, instance) until a deadline, lent to a
//! (node, instance) until its lease expires, or being wiped. The chunks of one offer or loan
//! (a [`Grant`]) are contiguous; a (node, instance) holds at most one grant. The table keeps
//! its ranges in a map ordered by first chunk, so a message costs O(grants), not O(chunks).
//!
//! [`Table::handle`] takes one received word and the node the mailbox says sent it, and
//! returns what happened ([`Outcome`]), including the reply to send (OFFER, ACK or REVOKE), if
//! any. Nothing a message says is trusted: a word that does not decode, or whose node field is
//! not the sender, gets no reply and changes nothing; a CONFIRM or RENEW of a range that is
//! not offered / lent to that (node, instance) gets a REVOKE and changes nothing.
//!
//! Time is passed in. [`Table::expire`] releases offers whose deadline passed, turns lent
//! grants whose lease passed into *wiping* ranges, and ends the grace period (every free chunk
//! is then wiped too); the caller wipes each range of [`Table::wiping`] and then calls
//! [`Table::wiped`], which makes it free.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::fmt;
use std::time::{Duration, Instant};
use unimem_wire::kram::{
    is_gsas, to_daemon, to_driver, KramError, KramMsg, CHUNK_SIZE, LEASE_MS, MAX_CHUNKS,
    MAX_CHUNKS_V1, NUMA_INSTANCE, V1, V2,
};

/// How many expired offers are remembered for late confirmations.
const EXPIRED_MEMORY: usize = 64;

/// The default lease: [`LEASE_MS`].
pub const LEASE: Duration = Duration::from_millis(LEASE_MS);

/// A contiguous range of chunks offered or lent to one instance of one node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Grant {
    /// The borrowing node.
    pub node: u8,
    /// Its instance (swap instances 0..8, the GSAS pool's ranges 8..15, the NUMA driver 15).
    pub instance: u8,
    /// First chunk index.
    pub first: u32,
    /// Number of chunks (at least 1).
    pub chunks: u32,
}

impl Grant {
    /// The last chunk index (inclusive).
    pub fn last(&self) -> u32 {
        self.first + self.chunks - 1
    }

    /// One past the last chunk.
    pub fn end(&self) -> u32 {
        self.first + self.chunks
    }

    fn owner(&self) -> (u8, u8) {
        (self.node, self.instance)
    }

    fn from_msg(m: &KramMsg) -> Self {
        Grant {
            node: m.node,
            instance: m.instance,
            first: m.first_chunk,
            chunks: m.chunks,
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

/// " (NUMA)" for the instance id of the NUMA driver and " (GSAS)" for the GSAS service's page
/// pool, so logs and status say what the memory is used for; "" for swap instances.
pub fn role(instance: u8) -> &'static str {
    match instance {
        NUMA_INSTANCE => " (NUMA)",
        i if is_gsas(i) => " (GSAS)",
        _ => "",
    }
}

/// One range of the table that is not free.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Entry {
    /// Reserved for `grant` until `deadline`, waiting for CONFIRM or DECLINE.
    Offered { grant: Grant, deadline: Instant },
    /// In use by `grant`'s node and instance; wiped and freed at `expiry` unless renewed.
    Lent { grant: Grant, expiry: Instant },
    /// Contents to be wiped before the chunks are free: a lease expired, or the grace period
    /// ended with chunks of unknown contents.
    Wiping { first: u32, chunks: u32 },
}

impl Entry {
    pub fn first(&self) -> u32 {
        match self {
            Entry::Offered { grant, .. } | Entry::Lent { grant, .. } => grant.first,
            Entry::Wiping { first, .. } => *first,
        }
    }

    pub fn chunks(&self) -> u32 {
        match self {
            Entry::Offered { grant, .. } | Entry::Lent { grant, .. } => grant.chunks,
            Entry::Wiping { chunks, .. } => *chunks,
        }
    }

    pub fn end(&self) -> u32 {
        self.first() + self.chunks()
    }

    pub fn grant(&self) -> Option<&Grant> {
        match self {
            Entry::Offered { grant, .. } | Entry::Lent { grant, .. } => Some(grant),
            Entry::Wiping { .. } => None,
        }
    }
}

/// The state of one chunk (for tests and the simulation; the table stores ranges).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Chunk {
    Free,
    Offered { grant: Grant, deadline: Instant },
    Lent { grant: Grant, expiry: Instant },
    Wiping,
}

/// Why a word was dropped before looking at the table (no reply).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Malformed {
    /// `KramMsg::decode_for_daemon` refused it (version, reserved bits, opcode, range).
    Decode(KramError),
    /// The node field is not the node the mailbox reports as the sender.
    NodeMismatch { field: u8, sender: u32 },
}

impl fmt::Display for Malformed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Malformed::Decode(KramError::Reserved) => {
                f.write_str("reserved bits set (or a tag in a message that has none)")
            }
            Malformed::Decode(KramError::Version(v)) => {
                write!(f, "layout version {v} is not spoken here")
            }
            Malformed::Decode(KramError::Opcode(op)) => write!(f, "unknown opcode {op:#x}"),
            Malformed::Decode(KramError::Range) => f.write_str(
                "empty range, range past the layout's table, or a REQUEST with a bad minimum",
            ),
            Malformed::NodeMismatch { field, sender } => {
                write!(f, "node field {field} but sent by node {sender}")
            }
        }
    }
}

/// Why a well-formed REQUEST, DECLINE or FREE does not fit the table (no reply).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Inconsistent {
    /// A REQUEST from a (node, instance) that already has `held` lent, of a size the request
    /// does not accept (or, for a v1 REQUEST, beyond chunk 255).
    RequestWhileLent { held: Grant },
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
            Inconsistent::DeclineNotOffered => f.write_str("DECLINE of a range not offered"),
            Inconsistent::FreeNotLent => f.write_str("FREE of a range not lent"),
        }
    }
}

/// Why a CONFIRM or RENEW is answered with REVOKE.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Revoke {
    /// A CONFIRM of a range that is not offered to that (node, instance).
    NotOffered,
    /// A RENEW of a range that is not lent to that (node, instance).
    NotLent,
    /// A (late) CONFIRM of an offer that expired and whose chunks were given to someone else
    /// since: the driver must not use them. Logged as an error.
    LateConfirmTaken,
    /// The (node, instance) holds `held`, another range.
    OwnerHoldsOther { held: Grant },
    /// During grace: a claim of chunks that are not all free (claimed by someone else).
    ClaimTaken,
    /// The range runs past this table.
    OutsideTable,
}

impl fmt::Display for Revoke {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Revoke::NotOffered => f.write_str("CONFIRM of a range not offered to it"),
            Revoke::NotLent => f.write_str("RENEW of a range not lent to it"),
            Revoke::LateConfirmTaken => {
                f.write_str("late CONFIRM of an expired offer whose chunks are no longer free")
            }
            Revoke::OwnerHoldsOther { held } => write!(f, "it holds {held}"),
            Revoke::ClaimTaken => f.write_str("claim of chunks that are not free"),
            Revoke::OutsideTable => f.write_str("range past the end of the table"),
        }
    }
}

/// What an ACK answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AckKind {
    /// A CONFIRM of the current offer: offered → lent.
    Confirmed,
    /// A CONFIRM of a range already lent to that (node, instance): lease refreshed.
    Reconfirmed,
    /// A CONFIRM of an offer that had expired, whose chunks were still free: lent.
    LateConfirmed,
    /// A RENEW of the range lent to that (node, instance): lease refreshed.
    Renewed,
    /// During grace: a CONFIRM or RENEW of free chunks: lent (claimed back).
    Claimed,
}

/// What one received word did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Send `msg` (an OFFER, in the REQUEST's layout) to node `to`, service
    /// `kram::reply_service(msg.instance)`. `repeat`: the range was offered (or lent) to that
    /// (node, instance) already. `superseded`: an offer of another size to the same (node,
    /// instance) was released first.
    Offer {
        to: u32,
        msg: KramMsg,
        grant: Grant,
        repeat: bool,
        superseded: Option<Grant>,
    },
    /// A valid REQUEST that cannot be met: no free run of at least `min` chunks (with the
    /// alignment asked). Stay silent.
    Unanswered {
        node: u8,
        instance: u8,
        chunks: u32,
        min: u32,
        superseded: Option<Grant>,
    },
    /// A valid REQUEST during the grace period: not answered.
    Deferred { node: u8, instance: u8, chunks: u32 },
    /// Send `msg` (an ACK with the CONFIRM's / RENEW's tag) to `to`; `grant` is lent to it.
    Ack {
        to: u32,
        msg: KramMsg,
        grant: Grant,
        kind: AckKind,
    },
    /// Send `msg` (a REVOKE naming the range `asked` named) to `to`; nothing changed.
    Revoke {
        to: u32,
        msg: KramMsg,
        asked: KramMsg,
        why: Revoke,
    },
    /// Offered → free; `kept_lent`: the range is lent to that (node, instance) (a repeated
    /// offer crossed the CONFIRM), so nothing changes.
    Declined { grant: Grant, kept_lent: bool },
    /// Lent → free (the borrower wiped it), or, `wipe`, lent → wiping (FREE_UNWIPED: the
    /// borrower could not; free once wiped).
    Freed { grant: Grant, wipe: bool },
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

impl Outcome {
    /// The message to send back, if any: (node, message). The service is
    /// `kram::reply_service(msg.instance)`.
    pub fn reply(&self) -> Option<(u32, KramMsg)> {
        match *self {
            Outcome::Offer { to, msg, .. }
            | Outcome::Ack { to, msg, .. }
            | Outcome::Revoke { to, msg, .. } => Some((to, msg)),
            _ => None,
        }
    }
}

/// Event counters, shown by `kram-daemon --status`.
///
/// Every received word is counted in `received` and in exactly one of `requests`,
/// `deferred`, `confirms`, `renews`, `revokes`, `declines`, `frees`, `malformed`,
/// `inconsistent`. Every counted request in exactly one of `offers` and `unanswered`; `acks` =
/// `confirms` + `renews`; `claims` ⊂ those, `late_confirms` ⊂ `confirms`, `repeats` ⊂
/// `offers`, `version_refused` ⊂ `malformed`.
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
    /// Requests not answered because of the grace period.
    pub deferred: u64,
    /// CONFIRMs accepted (ACKed).
    pub confirms: u64,
    /// Confirms honoured after the offer had expired (its chunks were still free).
    pub late_confirms: u64,
    /// RENEWs accepted (ACKed).
    pub renews: u64,
    /// ACKs sent: confirms + renews.
    pub acks: u64,
    /// CONFIRMs and RENEWs that claimed free chunks during the grace period.
    pub claims: u64,
    /// CONFIRMs and RENEWs answered with REVOKE.
    pub revokes: u64,
    pub declines: u64,
    pub frees: u64,
    /// Offers released because nobody confirmed them in time.
    pub timeouts: u64,
    /// Lent grants whose lease passed without RENEW (wiped, then free).
    pub lease_expiries: u64,
    /// Lapsed leases held for another lease time because their borrower is connected and
    /// frozen (`Table::set_present`): never reclaimed from under a node.
    pub leases_held: u64,
    /// FREEs of ranges the borrower could not wipe (FREE_UNWIPED): wiped here, then free.
    pub frees_unwiped: u64,
    /// Chunks the daemon wiped (expired leases, unwiped FREEs, free chunks at the end of grace).
    pub wiped_chunks: u64,
    pub malformed: u64,
    /// Malformed words in a layout version this daemon does not speak (v2 with
    /// `--max-version 1`, or an unknown version).
    pub version_refused: u64,
    pub inconsistent: u64,
    /// Replies the mailbox refused (the event loop counts these).
    pub send_errors: u64,
}

impl Counters {
    /// `name value` pairs in display order.
    pub fn pairs(&self) -> [(&'static str, u64); 23] {
        [
            ("received", self.received),
            ("requests", self.requests),
            ("offers", self.offers),
            ("repeats", self.repeats),
            ("unanswered", self.unanswered),
            ("deferred", self.deferred),
            ("confirms", self.confirms),
            ("late_confirms", self.late_confirms),
            ("renews", self.renews),
            ("acks", self.acks),
            ("claims", self.claims),
            ("revokes", self.revokes),
            ("declines", self.declines),
            ("frees", self.frees),
            ("timeouts", self.timeouts),
            ("lease_expiries", self.lease_expiries),
            ("leases_held", self.leases_held),
            ("frees_unwiped", self.frees_unwiped),
            ("wiped_chunks", self.wiped_chunks),
            ("malformed", self.malformed),
            ("version_refused", self.version_refused),
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
    Lent { grant: Grant, expiry: Instant },
    Wiping,
}

/// Consecutive chunks in the same state (free, one grant, or one range being wiped).
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
    pub wiping: u32,
}

/// Whether a grant is still an offer or already a loan (state file, restore).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GrantKind {
    Offered,
    Lent,
}

/// What [`Table::expire`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Expired {
    /// Offers released (free again).
    pub offers: Vec<Grant>,
    /// Lent grants whose lease passed: now wiping.
    pub leases: Vec<Grant>,
    /// Lent grants whose lease passed while their borrower is connected and frozen: held.
    pub held: Vec<Grant>,
    /// The grace period ended: these (first, chunks) free runs are now wiping.
    pub grace_ended: Option<Vec<(u32, u32)>>,
}

impl Expired {
    pub fn is_empty(&self) -> bool {
        self.offers.is_empty()
            && self.leases.is_empty()
            && self.held.is_empty()
            && self.grace_ended.is_none()
    }
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
    len: u32,
    /// Every range that is not free, by first chunk; they do not overlap.
    entries: BTreeMap<u32, Entry>,
    /// The first chunk of the grant of each (node, instance).
    owners: HashMap<(u8, u8), u32>,
    offer_timeout: Duration,
    lease: Duration,
    max_version: u8,
    /// While `Some`, REQUESTs are deferred and CONFIRM / RENEW of free chunks claim them.
    grace_until: Option<Instant>,
    counters: Counters,
    /// Recently expired offers and their deadlines: a CONFIRM that crossed the expiry (within
    /// one more timeout) is honoured if the chunks are still free.
    expired: VecDeque<(Grant, Instant)>,
    /// GAS offset of chunk 0 in chunks, or `None` when it is not chunk-aligned (then no
    /// aligned REQUEST can be met).
    base_chunk: Option<u64>,
    /// Grants (node, instance) the fabric shows connected without a reconnection since their
    /// borrower took them ([`Table::set_present`]).
    present: BTreeSet<(u8, u8)>,
}

impl Table {
    /// A table of `chunks` free chunks for lender `node`; offers expire after `offer_timeout`,
    /// leases after [`LEASE`]; speaks v1 and v2.
    pub fn new(node: u32, chunks: u32, offer_timeout: Duration) -> Result<Self, TableError> {
        if chunks == 0 || chunks > MAX_CHUNKS {
            return Err(TableError::Size(chunks));
        }
        if node > 0xf {
            return Err(TableError::Node(node));
        }
        Ok(Table {
            node: node as u8,
            len: chunks,
            entries: BTreeMap::new(),
            owners: HashMap::new(),
            offer_timeout,
            lease: LEASE,
            max_version: V2,
            grace_until: None,
            counters: Counters::default(),
            expired: VecDeque::new(),
            base_chunk: Some(0),
            present: BTreeSet::new(),
        })
    }

    /// Which lent grants, as (node, instance), their borrower may still be using although
    /// their lease lapsed, as of now: the fabric shows the borrower connected without a
    /// reconnection since it took them, and its kernel's heartbeat stalled (frozen) or just
    /// moved again after a stall (`heartbeat::Heartbeats`). Such a borrower cannot know its
    /// lease lapsed; once it runs it renews. So a lapsed lease of a present grant is held, not
    /// reclaimed, the same rule for every instance (KRAM disks, NUMA ranges, GSAS pools); it
    /// goes when the borrower frees it (FREE, or FREE_UNWIPED when its own clock ran out), or
    /// when the fabric marks it gone, lost or reconnected, or when its heartbeat runs without
    /// renewals (a live borrower stops using a lapsed lease on its own clock).
    pub fn set_present(&mut self, present: impl IntoIterator<Item = (u8, u8)>) {
        self.present = present.into_iter().collect();
    }

    fn held_for(&self, grant: &Grant) -> bool {
        self.present.contains(&(grant.node, grant.instance))
    }

    /// Another lease length (tests; the daemon uses [`LEASE`], the borrowers' contract).
    pub fn set_lease(&mut self, lease: Duration) {
        self.lease = lease;
    }

    /// The newest layout accepted: [`V2`], or [`V1`] to behave like a seed-protocol peer
    /// (every v2 word is malformed).
    pub fn set_max_version(&mut self, version: u8) {
        self.max_version = version;
    }

    pub fn max_version(&self) -> u8 {
        self.max_version
    }

    /// Tells the table where chunk 0 lies in the GAS, so that a REQUEST with an alignment
    /// (the NUMA driver's: hot-added memory must be memory-block aligned) gets a range whose
    /// GAS offset, and so physical address, is aligned.
    pub fn set_gas_offset(&mut self, offset: u64) {
        self.base_chunk = (offset % CHUNK_SIZE == 0).then_some(offset / CHUNK_SIZE);
    }

    /// Starts the grace period of a lender that does not know what it lent: for one lease,
    /// REQUESTs are deferred and CONFIRM / RENEW of free chunks claim them.
    pub fn start_grace(&mut self, now: Instant) {
        self.grace_until = Some(now + self.lease);
    }

    /// When the grace period ends, if one is running.
    pub fn grace_until(&self) -> Option<Instant> {
        self.grace_until
    }

    /// This lender's node id.
    pub fn node(&self) -> u32 {
        u32::from(self.node)
    }

    /// Number of chunks in the table.
    pub fn len(&self) -> u32 {
        self.len
    }

    /// Always false: a table has at least one chunk.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn offer_timeout(&self) -> Duration {
        self.offer_timeout
    }

    pub fn lease(&self) -> Duration {
        self.lease
    }

    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    /// Counts a reply the mailbox refused (the table stays as it is: the driver repeats its
    /// REQUEST, CONFIRM or RENEW).
    pub fn count_send_error(&mut self) {
        self.counters.send_errors += 1;
    }

    /// The ranges that are not free, by first chunk.
    pub fn entries(&self) -> &BTreeMap<u32, Entry> {
        &self.entries
    }

    /// The per-chunk states (O(chunks): for tests and the simulation).
    pub fn chunks(&self) -> Vec<Chunk> {
        let mut v = vec![Chunk::Free; self.len as usize];
        for e in self.entries.values() {
            let c = match *e {
                Entry::Offered { grant, deadline } => Chunk::Offered { grant, deadline },
                Entry::Lent { grant, expiry } => Chunk::Lent { grant, expiry },
                Entry::Wiping { .. } => Chunk::Wiping,
            };
            v[e.first() as usize..e.end() as usize].fill(c);
        }
        v
    }

    /// Handles one word received from node `sender` (as reported by the mailbox) at `now`.
    /// Expired offers and leases are dealt with first (see [`Table::expire`]).
    pub fn handle(&mut self, sender: u32, word: u64, now: Instant) -> Outcome {
        self.expire(now);
        self.counters.received += 1;
        let msg = match self.validate(sender, word) {
            Ok(m) => m,
            Err(why) => {
                self.counters.malformed += 1;
                if matches!(why, Malformed::Decode(KramError::Version(_))) {
                    self.counters.version_refused += 1;
                }
                return Outcome::Malformed { word, sender, why };
            }
        };
        let result = match msg.opcode {
            to_daemon::REQUEST => self.request(&msg, now),
            to_daemon::CONFIRM => Ok(self.confirm(&msg, now)),
            to_daemon::RENEW => Ok(self.renew(&msg, now)),
            to_daemon::DECLINE => self.decline(&msg),
            to_daemon::FREE => self.free(&msg),
            _ => unreachable!("decode_for_daemon accepts only the five driver opcodes"),
        };
        let out = result.unwrap_or_else(|why| Outcome::Inconsistent { msg, sender, why });
        let k = &mut self.counters;
        match out {
            Outcome::Ack { kind, .. } => {
                k.acks += 1;
                match kind {
                    AckKind::Renewed => k.renews += 1,
                    AckKind::Claimed if msg.opcode == to_daemon::RENEW => {
                        k.renews += 1;
                        k.claims += 1;
                    }
                    AckKind::Claimed => {
                        k.confirms += 1;
                        k.claims += 1;
                    }
                    AckKind::LateConfirmed => {
                        k.confirms += 1;
                        k.late_confirms += 1;
                    }
                    AckKind::Confirmed | AckKind::Reconfirmed => k.confirms += 1,
                }
            }
            Outcome::Revoke { .. } => k.revokes += 1,
            Outcome::Inconsistent { .. } => k.inconsistent += 1,
            _ => {}
        }
        out
    }

    fn validate(&self, sender: u32, word: u64) -> Result<KramMsg, Malformed> {
        let m = KramMsg::decode_for_daemon(word, self.max_version).map_err(Malformed::Decode)?;
        if u32::from(m.node) != sender {
            return Err(Malformed::NodeMismatch {
                field: m.node,
                sender,
            });
        }
        Ok(m)
    }

    fn in_grace(&self, now: Instant) -> bool {
        self.grace_until.is_some_and(|t| now < t)
    }

    fn request(&mut self, m: &KramMsg, now: Instant) -> Result<Outcome, Inconsistent> {
        if self.in_grace(now) {
            self.counters.deferred += 1;
            return Ok(Outcome::Deferred {
                node: m.node,
                instance: m.instance,
                chunks: m.chunks,
            });
        }
        let (wanted, min) = (m.chunks, m.min_chunks());
        let v1 = m.version == V1;
        let mut superseded = None;
        if let Some(entry) = self.entry_of(m.node, m.instance) {
            let held = *entry.grant().expect("owners index grants");
            let sayable = !v1 || held.end() <= MAX_CHUNKS_V1;
            if (min..=wanted).contains(&held.chunks) && sayable {
                // Idempotent: the driver asks again (lost offer, restarted driver, timer
                // fired before our answer arrived). Same range, fresh deadline.
                if let Entry::Offered { .. } = entry {
                    self.insert(Entry::Offered {
                        grant: held,
                        deadline: now + self.offer_timeout,
                    });
                }
                self.counters.requests += 1;
                return Ok(self.offer(m, held, true, None));
            }
            if let Entry::Lent { .. } = entry {
                return Err(Inconsistent::RequestWhileLent { held });
            }
            // The instance changed size (driver reloaded with other parameters): the old
            // offer will never be confirmed.
            self.remove(held.first);
            superseded = Some(held);
        }
        self.counters.requests += 1;
        let limit = if v1 {
            self.len.min(MAX_CHUNKS_V1)
        } else {
            self.len
        };
        match self.find(wanted, min, m.tag, limit) {
            Some((first, chunks)) => {
                let grant = Grant {
                    node: m.node,
                    instance: m.instance,
                    first,
                    chunks,
                };
                self.insert(Entry::Offered {
                    grant,
                    deadline: now + self.offer_timeout,
                });
                Ok(self.offer(m, grant, false, superseded))
            }
            None => {
                self.counters.unanswered += 1;
                Ok(Outcome::Unanswered {
                    node: m.node,
                    instance: m.instance,
                    chunks: wanted,
                    min,
                    superseded,
                })
            }
        }
    }

    fn offer(
        &mut self,
        m: &KramMsg,
        grant: Grant,
        repeat: bool,
        superseded: Option<Grant>,
    ) -> Outcome {
        self.counters.offers += 1;
        if repeat {
            self.counters.repeats += 1;
        }
        Outcome::Offer {
            to: u32::from(grant.node),
            msg: KramMsg {
                first_chunk: grant.first,
                chunks: grant.chunks,
                ..m.reply(to_driver::OFFER, self.node, 0)
            },
            grant,
            repeat,
            superseded,
        }
    }

    fn ack(&mut self, m: &KramMsg, grant: Grant, kind: AckKind) -> Outcome {
        Outcome::Ack {
            to: u32::from(m.node),
            msg: m.reply(to_driver::ACK, self.node, m.tag),
            grant,
            kind,
        }
    }

    fn revoke(&self, m: &KramMsg, why: Revoke) -> Outcome {
        Outcome::Revoke {
            to: u32::from(m.node),
            msg: m.reply(to_driver::REVOKE, self.node, 0),
            asked: *m,
            why,
        }
    }

    /// Lends `grant` until now + lease.
    fn lend(&mut self, grant: Grant, now: Instant) {
        self.insert(Entry::Lent {
            grant,
            expiry: now + self.lease,
        });
    }

    fn confirm(&mut self, m: &KramMsg, now: Instant) -> Outcome {
        let asked = Grant::from_msg(m);
        match self.entry_of(m.node, m.instance) {
            Some(Entry::Offered { grant, .. }) if grant == asked => {
                self.lend(asked, now);
                return self.ack(m, asked, AckKind::Confirmed);
            }
            Some(Entry::Lent { grant, .. }) if grant == asked => {
                self.lend(asked, now);
                return self.ack(m, asked, AckKind::Reconfirmed);
            }
            Some(Entry::Lent { grant, .. }) => {
                return self.revoke(m, Revoke::OwnerHoldsOther { held: grant })
            }
            _ => {}
        }
        if self.in_grace(now) {
            return self.claim(m, asked, now);
        }
        // Not the current offer: maybe one that expired while the CONFIRM was on its way.
        let grace = self.offer_timeout;
        let Some(pos) = self
            .expired
            .iter()
            .position(|(g, at)| *g == asked && now.saturating_duration_since(*at) <= grace)
        else {
            return self.revoke(m, Revoke::NotOffered);
        };
        // The driver now counts on `asked`; a newer offer to the same instance is moot.
        let newer = match self.entry_of(m.node, m.instance) {
            Some(Entry::Offered { grant, .. }) => Some(grant),
            _ => None,
        };
        let taken = self
            .overlapping(asked.first, asked.end())
            .any(|e| e.grant() != newer.as_ref() || e.grant().is_none());
        if taken {
            return self.revoke(m, Revoke::LateConfirmTaken);
        }
        self.expired.remove(pos);
        if let Some(newer) = newer {
            self.remove(newer.first);
        }
        self.lend(asked, now);
        self.ack(m, asked, AckKind::LateConfirmed)
    }

    fn renew(&mut self, m: &KramMsg, now: Instant) -> Outcome {
        let asked = Grant::from_msg(m);
        match self.entry_of(m.node, m.instance) {
            Some(Entry::Lent { grant, .. }) if grant == asked => {
                self.lend(asked, now);
                self.ack(m, asked, AckKind::Renewed)
            }
            Some(Entry::Lent { grant, .. }) => {
                self.revoke(m, Revoke::OwnerHoldsOther { held: grant })
            }
            None if self.in_grace(now) => self.claim(m, asked, now),
            _ => self.revoke(m, Revoke::NotLent),
        }
    }

    /// During grace: a CONFIRM or RENEW of chunks that are all free makes them the sender's.
    fn claim(&mut self, m: &KramMsg, asked: Grant, now: Instant) -> Outcome {
        if let Some(e) = self.entry_of(m.node, m.instance) {
            let held = *e.grant().expect("owners index grants");
            return self.revoke(m, Revoke::OwnerHoldsOther { held });
        }
        if asked.end() > self.len {
            return self.revoke(m, Revoke::OutsideTable);
        }
        if self.overlapping(asked.first, asked.end()).next().is_some() {
            return self.revoke(m, Revoke::ClaimTaken);
        }
        self.lend(asked, now);
        self.ack(m, asked, AckKind::Claimed)
    }

    fn decline(&mut self, m: &KramMsg) -> Result<Outcome, Inconsistent> {
        let asked = Grant::from_msg(m);
        match self.entry_of(m.node, m.instance) {
            Some(Entry::Offered { grant, .. }) if grant == asked => {
                self.remove(asked.first);
                self.counters.declines += 1;
                Ok(Outcome::Declined {
                    grant,
                    kept_lent: false,
                })
            }
            // A DECLINE of a lent range: a repeated offer crossed the CONFIRM and the
            // driver, already complete, declined the repeat. It still uses the chunks.
            Some(Entry::Lent { grant, .. }) if grant == asked => {
                self.counters.declines += 1;
                Ok(Outcome::Declined {
                    grant,
                    kept_lent: true,
                })
            }
            _ => Err(Inconsistent::DeclineNotOffered),
        }
    }

    fn free(&mut self, m: &KramMsg) -> Result<Outcome, Inconsistent> {
        let asked = Grant::from_msg(m);
        match self.entry_of(m.node, m.instance) {
            Some(Entry::Lent { grant, .. }) if grant == asked => {
                self.remove(asked.first);
                self.counters.frees += 1;
                let wipe = m.tag == to_daemon::FREE_UNWIPED;
                if wipe {
                    self.counters.frees_unwiped += 1;
                    self.insert(Entry::Wiping {
                        first: grant.first,
                        chunks: grant.chunks,
                    });
                }
                Ok(Outcome::Freed { grant, wipe })
            }
            _ => Err(Inconsistent::FreeNotLent),
        }
    }

    /// Releases every offer whose deadline is `<= now`, turns every lent grant whose lease
    /// expired (`<= now`) into a wiping range, and ends the grace period if it is over (every
    /// free run becomes a wiping range: its contents are unknown). Returns what it did; the
    /// caller wipes [`Table::wiping`] and calls [`Table::wiped`].
    pub fn expire(&mut self, now: Instant) -> Expired {
        let grace = self.offer_timeout;
        while self
            .expired
            .front()
            .is_some_and(|(_, at)| now.saturating_duration_since(*at) > grace)
        {
            self.expired.pop_front();
        }
        let mut out = Expired::default();
        let due: Vec<Entry> = self
            .entries
            .values()
            .filter(|e| match e {
                Entry::Offered { deadline, .. } => *deadline <= now,
                Entry::Lent { expiry, .. } => *expiry <= now,
                Entry::Wiping { .. } => false,
            })
            .copied()
            .collect();
        for e in due {
            match e {
                Entry::Offered { grant, deadline } => {
                    self.remove(grant.first);
                    self.counters.timeouts += 1;
                    if self.expired.len() == EXPIRED_MEMORY {
                        self.expired.pop_front();
                    }
                    // Remembered from its deadline, however late this runs.
                    self.expired.push_back((grant, deadline));
                    out.offers.push(grant);
                }
                Entry::Lent { grant, .. } if self.held_for(&grant) => {
                    self.remove(grant.first);
                    self.insert(Entry::Lent {
                        grant,
                        expiry: now + self.lease,
                    });
                    self.counters.leases_held += 1;
                    out.held.push(grant);
                }
                Entry::Lent { grant, .. } => {
                    self.remove(grant.first);
                    self.insert(Entry::Wiping {
                        first: grant.first,
                        chunks: grant.chunks,
                    });
                    self.counters.lease_expiries += 1;
                    out.leases.push(grant);
                }
                Entry::Wiping { .. } => {}
            }
        }
        if self.grace_until.is_some_and(|t| t <= now) {
            self.grace_until = None;
            let free: Vec<(u32, u32)> = self
                .runs()
                .iter()
                .filter(|r| r.state == RunState::Free)
                .map(|r| (r.first, r.last - r.first + 1))
                .collect();
            for &(first, chunks) in &free {
                self.insert(Entry::Wiping { first, chunks });
            }
            out.grace_ended = Some(free);
        }
        out
    }

    /// The ranges waiting to be wiped, as (first, chunks).
    pub fn wiping(&self) -> Vec<(u32, u32)> {
        self.entries
            .values()
            .filter_map(|e| match e {
                Entry::Wiping { first, chunks } => Some((*first, *chunks)),
                _ => None,
            })
            .collect()
    }

    /// The range starting at `first` has been wiped: free. Returns whether there was one.
    pub fn wiped(&mut self, first: u32) -> bool {
        match self.entries.get(&first) {
            Some(Entry::Wiping { chunks, .. }) => {
                self.counters.wiped_chunks += u64::from(*chunks);
                self.entries.remove(&first);
                true
            }
            _ => false,
        }
    }

    /// The earliest time something expires: an offer's deadline, a lease, the grace period.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.entries
            .values()
            .filter_map(|e| match e {
                Entry::Offered { deadline, .. } => Some(*deadline),
                Entry::Lent { expiry, .. } => Some(*expiry),
                Entry::Wiping { .. } => None,
            })
            .chain(self.grace_until)
            .min()
    }

    /// Puts back a grant of a previous run (state file or lease record). Offers get a fresh
    /// deadline, loans a fresh lease (a borrower that died meanwhile is reclaimed).
    pub fn restore(
        &mut self,
        grant: Grant,
        kind: GrantKind,
        now: Instant,
    ) -> Result<(), TableError> {
        if grant.chunks == 0
            || grant.node > 0xf
            || grant.instance > 0xf
            || grant
                .first
                .checked_add(grant.chunks)
                .is_none_or(|e| e > self.len)
        {
            return Err(TableError::OutOfRange(grant, self.len));
        }
        if self.owners.contains_key(&grant.owner()) {
            return Err(TableError::DuplicateOwner(grant));
        }
        if self.overlapping(grant.first, grant.end()).next().is_some() {
            return Err(TableError::Overlap(grant));
        }
        match kind {
            GrantKind::Offered => self.insert(Entry::Offered {
                grant,
                deadline: now + self.offer_timeout,
            }),
            GrantKind::Lent => self.lend(grant, now),
        }
        Ok(())
    }

    /// Every grant, in chunk order.
    pub fn grants(&self) -> Vec<(Grant, GrantKind)> {
        self.entries
            .values()
            .filter_map(|e| match e {
                Entry::Offered { grant, .. } => Some((*grant, GrantKind::Offered)),
                Entry::Lent { grant, .. } => Some((*grant, GrantKind::Lent)),
                Entry::Wiping { .. } => None,
            })
            .collect()
    }

    /// The lent grants, in chunk order (what the lease record holds).
    pub fn lent(&self) -> Vec<Grant> {
        self.entries
            .values()
            .filter_map(|e| match e {
                Entry::Lent { grant, .. } => Some(*grant),
                _ => None,
            })
            .collect()
    }

    /// The table as runs: free chunks merged, one run per entry.
    pub fn runs(&self) -> Vec<Run> {
        let mut runs = Vec::new();
        let mut at = 0;
        for e in self.entries.values() {
            if e.first() > at {
                runs.push(Run {
                    first: at,
                    last: e.first() - 1,
                    state: RunState::Free,
                });
            }
            let state = match *e {
                Entry::Offered { grant, deadline } => RunState::Offered { grant, deadline },
                Entry::Lent { grant, expiry } => RunState::Lent { grant, expiry },
                Entry::Wiping { .. } => RunState::Wiping,
            };
            runs.push(Run {
                first: e.first(),
                last: e.end() - 1,
                state,
            });
            at = e.end();
        }
        if at < self.len {
            runs.push(Run {
                first: at,
                last: self.len - 1,
                state: RunState::Free,
            });
        }
        runs
    }

    pub fn totals(&self) -> Totals {
        let mut t = Totals {
            free: self.len,
            ..Totals::default()
        };
        for e in self.entries.values() {
            t.free -= e.chunks();
            match e {
                Entry::Offered { .. } => t.offered += e.chunks(),
                Entry::Lent { .. } => t.lent += e.chunks(),
                Entry::Wiping { .. } => t.wiping += e.chunks(),
            }
        }
        t
    }

    /// Checks the table's invariants; `Err` describes the first violation.
    ///
    /// Every range lies inside the table, is not empty and does not overlap the next; every
    /// grant has a valid owner, a (node, instance) holds at most one grant and the owner
    /// index agrees; no offer exists during grace; the counters partition the received words
    /// as documented on [`Counters`].
    pub fn check_invariants(&self) -> Result<(), String> {
        let mut at = 0;
        let mut grants = 0;
        for (&first, e) in &self.entries {
            if first != e.first() {
                return Err(format!("entry {e:?} filed under chunk {first}"));
            }
            if e.chunks() == 0 || e.end() > self.len {
                return Err(format!("entry {e:?} out of range (table {})", self.len));
            }
            if first < at {
                return Err(format!("entry {e:?} overlaps the previous one (ends {at})"));
            }
            at = e.end();
            if let Some(g) = e.grant() {
                grants += 1;
                if g.node > 0xf || g.instance > 0xf {
                    return Err(format!("grant {g} has a bad owner"));
                }
                if self.owners.get(&g.owner()) != Some(&first) {
                    return Err(format!("owner index does not point at {g}"));
                }
            }
            if self.grace_until.is_some() && matches!(e, Entry::Offered { .. }) {
                return Err(format!("offer {e:?} during grace"));
            }
        }
        if self.owners.len() != grants {
            return Err(format!(
                "{} owners indexed for {grants} grants",
                self.owners.len()
            ));
        }
        let t = self.totals();
        if t.free + t.offered + t.lent + t.wiping != self.len {
            return Err(format!("totals {t:?} do not add up to {}", self.len));
        }
        let k = &self.counters;
        let classified = k.requests
            + k.deferred
            + k.confirms
            + k.renews
            + k.revokes
            + k.declines
            + k.frees
            + k.malformed
            + k.inconsistent;
        if k.received != classified {
            return Err(format!(
                "received {} != sum of outcomes {classified}: {k:?}",
                k.received
            ));
        }
        if k.requests != k.offers + k.unanswered {
            return Err(format!("requests != offers + unanswered: {k:?}"));
        }
        if k.acks != k.confirms + k.renews {
            return Err(format!("acks != confirms + renews: {k:?}"));
        }
        if k.repeats > k.offers
            || k.late_confirms > k.confirms
            || k.claims > k.acks
            || k.version_refused > k.malformed
        {
            return Err(format!("sub-counter larger than its counter: {k:?}"));
        }
        Ok(())
    }

    fn insert(&mut self, e: Entry) {
        if let Some(g) = e.grant() {
            self.owners.insert(g.owner(), g.first);
        }
        self.entries.insert(e.first(), e);
    }

    fn remove(&mut self, first: u32) {
        if let Some(e) = self.entries.remove(&first) {
            if let Some(g) = e.grant() {
                self.owners.remove(&g.owner());
            }
        }
    }

    /// The entry of (node, instance)'s grant, if any.
    fn entry_of(&self, node: u8, instance: u8) -> Option<Entry> {
        let first = self.owners.get(&(node, instance))?;
        self.entries.get(first).copied()
    }

    /// The entries that overlap chunks `start..end`.
    fn overlapping(&self, start: u32, end: u32) -> impl Iterator<Item = &Entry> {
        // The entry starting before `start` may reach into the range.
        let before = self
            .entries
            .range(..start)
            .next_back()
            .map(|(_, e)| e)
            .filter(move |e| e.end() > start);
        before
            .into_iter()
            .chain(self.entries.range(start..end.max(start)).map(|(_, e)| e))
    }

    /// Where to offer: `wanted` contiguous free chunks below `limit` (first fit) starting at a
    /// GAS offset that is a multiple of `2^align` chunks; else the largest such free run if it
    /// has at least `min` chunks (the first of equal ones). Returns (first, chunks).
    fn find(&self, wanted: u32, min: u32, align: u8, limit: u32) -> Option<(u32, u32)> {
        let step = 1u64 << align;
        let base = match self.base_chunk {
            Some(b) => b,
            None if align == 0 => 0,
            None => return None,
        };
        let aligned = |s: u32| -> u64 { (base + u64::from(s)).div_ceil(step) * step - base };
        let mut best: Option<(u32, u32)> = None;
        let mut consider = |s: u32, e: u32| -> Option<(u32, u32)> {
            let e = e.min(limit);
            let a = aligned(s);
            if a >= u64::from(e) {
                return None;
            }
            let a = a as u32;
            let avail = e - a;
            if avail >= wanted {
                return Some((a, wanted));
            }
            if best.is_none_or(|(_, n)| avail > n) {
                best = Some((a, avail));
            }
            None
        };
        let mut at = 0;
        for e in self.entries.values() {
            if at >= limit {
                break;
            }
            if e.first() > at {
                if let Some(hit) = consider(at, e.first()) {
                    return Some(hit);
                }
            }
            at = e.end();
        }
        if at < limit {
            if let Some(hit) = consider(at, self.len) {
                return Some(hit);
            }
        }
        best.filter(|&(_, n)| n >= min)
    }
}
