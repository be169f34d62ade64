// SPDX-License-Identifier: GPL-2.0
//! The KRAM protocol (seed 000 sections 2.5.6-2.5.8): 64-bit mailbox messages between the
//! borrowers (`unimem_kram`, service `KRAM_DRIVER`; `unimem_numa`, `NUMA_DRIVER`) and the
//! `kram-daemon` of each lender (service `KRAM_DAEMON`), with unimem's leases on top.
//!
//! The seed says both "the 4 most-significant bits" and "bits 0-3" for the opcode; unimem uses
//! the most-significant bits, which is also what the mailbox dispatches on. Two layouts, told
//! apart by the version field (bits 56..60, reserved and so zero in the seed's messages):
//!
//! ```text
//!              v1 (version 0, the seed's)     v2 (version 2, GiB-scale)
//! bits 60..64  opcode                         opcode
//! bits 56..60  0                              2
//! tag          24..28                         40..44
//! chunks       16..24 (1..=255)               24..40 (1..=65535)
//! first chunk   8..16                          8..24
//! instance      4..8                           4..8
//! node          0..4                           0..4
//! reserved     28..56, zero                   44..56, zero
//! ```
//! `node` is the requester (driver to daemon) or the lender (daemon to driver). The tag is the
//! REQUEST's alignment (log2 chunks), or the sequence number of a CONFIRM / RENEW and of the
//! ACK that answers it, or in a FREE whether the borrower wiped the range (0) or the lender must
//! ([`to_daemon::FREE_UNWIPED`]); zero in every other message. A v2 REQUEST's first-chunk field holds
//! the smallest number of chunks the borrower accepts (a partial grant, for an instance
//! striped over several lenders); a v1 REQUEST's is zero (exactly `chunks`).
//!
//! Leases: a borrower RENEWs each grant every [`RENEW_PERIOD_MS`]; the lender ACKs a grant it
//! has lent to that (node, instance) and REVOKEs anything else. A lent range not renewed for
//! [`LEASE_MS`] is wiped and free again. A borrower stops using a range [`BORROWER_LEASE_MS`]
//! after it sent the last RENEW the lender acknowledged, so it stops before the lender can
//! lend the range again. See docs/KRAM-DAEMON.md.
//!
//! A chunk is 1 MiB of the lender's partition, starting at [`LENDABLE_OFFSET`]. Swap instances
//! 0..[`MAX_INSTANCES`] belong to `unimem_kram`; instance [`NUMA_INSTANCE`] is `unimem_numa`'s,
//! which needs its range aligned to a memory block to hot-add it, and [`GSAS_INSTANCES`] are
//! the ranges of the GSAS atomic service's page pool, borrowed from its own node's daemon
//! ([`reply_service`]): [`GSAS_INSTANCE`] at load, the others as the pool grows (a lender holds
//! one grant per (node, instance), so each range of a growing pool needs an id of its own).
//! This file is included by the kernel modules with `#[path]`; `core` only.

/// Bytes per chunk ("sizes in MB").
pub const CHUNK_SIZE: u64 = 1 << 20;
/// Where chunk 0 starts in a lender's partition: after the mailbox rings, the interfaces' GSAS
/// areas, their owner table and the lease record (asserted in `gsas` and `lease_record`).
pub const LENDABLE_OFFSET: u64 = 3 * CHUNK_SIZE;
/// v1 chunk indices and counts are 8-bit: a v1 grant lies within the first 256 chunks.
pub const MAX_CHUNKS_V1: u32 = 256;
/// Largest v1 request: one message can ask for at most 255 chunks.
pub const MAX_REQUEST_CHUNKS: u32 = 255;
/// v2 indices and counts are 16-bit.
pub const MAX_CHUNKS: u32 = 1 << 16;
/// Largest v2 grant.
pub const MAX_REQUEST_CHUNKS_V2: u32 = MAX_CHUNKS - 1;
/// Swap instances per node (4-bit instance id; the ids above are [`GSAS_INSTANCES`] and
/// [`NUMA_INSTANCE`]).
pub const MAX_INSTANCES: u32 = 8;
/// The instance id of the first range of the GSAS atomic service's page pool
/// (`unimem_gsas.ko`), borrowed at load.
pub const GSAS_INSTANCE: u8 = 14;
/// The instance ids of the ranges of the GSAS page pool, in the order the pool takes them.
pub const GSAS_INSTANCES: [u8; 7] = [GSAS_INSTANCE, 13, 12, 11, 10, 9, 8];
/// The instance id of a node's NUMA driver: its OFFERs go to service `NUMA_DRIVER`.
pub const NUMA_INSTANCE: u8 = 15;

/// How often a borrower renews each lease.
pub const RENEW_PERIOD_MS: u64 = 1000;
/// A lent range that has not been renewed for this long is wiped and free again; a lender that
/// starts without a record of its grants answers no REQUEST for this long, so that every
/// borrower still holding memory can claim it back by renewing.
pub const LEASE_MS: u64 = 20_000;
/// How long after sending an acknowledged RENEW a borrower may use the range: shorter than
/// [`LEASE_MS`] by a margin for message delay and clock drift between nodes.
pub const BORROWER_LEASE_MS: u64 = LEASE_MS - 4_000;
/// A connected node whose kernel heartbeat (`gas::HEARTBEAT_OFFSET`, one beat every
/// [`RENEW_PERIOD_MS`]) has not moved for this long is taken as frozen: a lender holds its lapsed
/// leases.
pub const FROZEN_AFTER_MS: u64 = 5 * RENEW_PERIOD_MS;
/// After a frozen node's heartbeat moves again, its lapsed leases are still held for this long:
/// time for its first renewals to arrive.
pub const THAW_GRACE_MS: u64 = 5 * RENEW_PERIOD_MS;
/// Sequence numbers of CONFIRM / RENEW / ACK count modulo this.
pub const SEQ_MOD: u8 = 16;

// A borrower stops before its lender reclaims, with room for a missed renewal; the NUMA
// driver's instance id is not a swap instance.
const _: () = assert!(BORROWER_LEASE_MS + 2 * RENEW_PERIOD_MS < LEASE_MS);
const _: () = {
    assert!(NUMA_INSTANCE as u32 >= MAX_INSTANCES);
    let mut i = 0;
    while i < GSAS_INSTANCES.len() {
        assert!(GSAS_INSTANCES[i] as u32 >= MAX_INSTANCES && GSAS_INSTANCES[i] != NUMA_INSTANCE);
        i += 1;
    }
};

/// Whether `instance` is one of the GSAS page pool's ranges.
pub const fn is_gsas(instance: u8) -> bool {
    instance as u32 >= MAX_INSTANCES && instance != NUMA_INSTANCE
}

/// Layout versions (the version field).
pub const V1: u8 = 0;
pub const V2: u8 = 2;

/// Where `chunks` chunks from `first` of node `lender`'s partition lie in the GAS, as
/// (offset, length), for the layout `ctl_size` + `partition_size` (see `gas`); `None` when
/// they run past the partition.
pub fn lent_range(
    ctl_size: u64,
    partition_size: u64,
    lender: u32,
    first: u32,
    chunks: u32,
) -> Option<(u64, u64)> {
    let part = u64::from(lender)
        .checked_mul(partition_size)?
        .checked_add(ctl_size)?;
    let offset = part.checked_add(LENDABLE_OFFSET + u64::from(first) * CHUNK_SIZE)?;
    let len = u64::from(chunks) * CHUNK_SIZE;
    (offset.checked_add(len)? <= part.checked_add(partition_size)?).then_some((offset, len))
}

/// The mailbox service a daemon sends an OFFER, ACK or REVOKE for `instance` to.
pub const fn reply_service(instance: u8) -> u32 {
    match instance {
        NUMA_INSTANCE => crate::mailbox::service::NUMA_DRIVER,
        i if is_gsas(i) => crate::mailbox::service::GSAS,
        _ => crate::mailbox::service::KRAM_DRIVER,
    }
}

/// Driver to daemon.
pub mod to_daemon {
    pub const REQUEST: u8 = 0x1;
    pub const CONFIRM: u8 = 0x2;
    /// Keeps a lent range (or claims it back from a lender that restarted without a record).
    pub const RENEW: u8 = 0x3;
    pub const DECLINE: u8 = 0x4;
    /// Gives a lent range back. Tag 0: the borrower wiped it; [`FREE_UNWIPED`]: it could not
    /// (its lease lapsed on its own clock, so it must not write the range), the lender wipes it
    /// before the chunks are free.
    pub const FREE: u8 = 0x8;
    /// The tag of a FREE whose range the lender must wipe.
    pub const FREE_UNWIPED: u8 = 1;
}
/// Daemon to driver.
pub mod to_driver {
    pub const OFFER: u8 = 0x1;
    /// The CONFIRM or RENEW with this tag is accepted: the range is the borrower's.
    pub const ACK: u8 = 0x2;
    /// The range named is not (or no longer) lent to this borrower: stop using it, do not
    /// touch or FREE it.
    pub const REVOKE: u8 = 0x4;
}

/// A decoded KRAM message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KramMsg {
    pub opcode: u8,
    /// [`V1`] or [`V2`].
    pub version: u8,
    pub node: u8,
    pub instance: u8,
    /// First chunk; in a v2 REQUEST the smallest acceptable number of chunks.
    pub first_chunk: u32,
    pub chunks: u32,
    /// REQUEST: the first chunk's GAS offset must be a multiple of `2^tag` chunks;
    /// CONFIRM / RENEW / ACK: sequence number modulo [`SEQ_MOD`]; otherwise zero.
    pub tag: u8,
}

/// Why a word is not a KRAM message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KramError {
    /// Reserved bits are not zero, or a tag in a message that has none.
    Reserved,
    /// A version other than v1 and v2, or v2 to a peer that speaks only v1.
    Version(u8),
    /// Unknown opcode for this direction.
    Opcode(u8),
    /// A range that is empty or runs past the layout's table, or a v2 REQUEST whose minimum is
    /// 0 or above its size.
    Range,
}

struct Layout {
    first_shift: u32,
    count_shift: u32,
    field_mask: u64,
    tag_shift: u32,
    reserved: u64,
    table: u32,
}

const fn layout(version: u8) -> Layout {
    if version == V2 {
        Layout {
            first_shift: 8,
            count_shift: 24,
            field_mask: 0xffff,
            tag_shift: 40,
            reserved: 0x00ff_f000_0000_0000,
            table: MAX_CHUNKS,
        }
    } else {
        Layout {
            first_shift: 8,
            count_shift: 16,
            field_mask: 0xff,
            tag_shift: 24,
            reserved: 0x00ff_ffff_f000_0000,
            table: MAX_CHUNKS_V1,
        }
    }
}

impl KramMsg {
    /// The message with this opcode, for this (node, instance, range), in the smallest layout
    /// that holds it.
    pub fn new(opcode: u8, node: u8, instance: u8, first_chunk: u32, chunks: u32, tag: u8) -> Self {
        let version = if Self::fits_v1(first_chunk, chunks) {
            V1
        } else {
            V2
        };
        KramMsg {
            opcode,
            version,
            node,
            instance,
            first_chunk,
            chunks,
            tag,
        }
    }

    /// A REQUEST for `chunks` chunks, accepting no fewer than `min`, with the first chunk's GAS
    /// offset a multiple of `2^align` chunks: the seed's layout when it can say it (exact size,
    /// at most 255), v2 otherwise.
    pub fn request(node: u8, instance: u8, chunks: u32, min: u32, align: u8) -> Self {
        let m = Self::new(to_daemon::REQUEST, node, instance, 0, chunks, align);
        if min == chunks && m.version == V1 {
            m
        } else {
            KramMsg {
                version: V2,
                first_chunk: min,
                ..m
            }
        }
    }

    /// Whether a range can be said in the seed's 8-bit layout.
    pub const fn fits_v1(first_chunk: u32, chunks: u32) -> bool {
        chunks <= MAX_REQUEST_CHUNKS && first_chunk + chunks <= MAX_CHUNKS_V1
    }

    /// The same message with another opcode and tag, in the same layout (a reply naming the
    /// same range).
    pub const fn reply(&self, opcode: u8, node: u8, tag: u8) -> Self {
        KramMsg {
            opcode,
            node,
            tag,
            ..*self
        }
    }

    pub fn encode(&self) -> u64 {
        let l = layout(self.version);
        u64::from(self.opcode & 0xf) << 60
            | u64::from(self.version & 0xf) << 56
            | u64::from(self.tag & 0xf) << l.tag_shift
            | (u64::from(self.chunks) & l.field_mask) << l.count_shift
            | (u64::from(self.first_chunk) & l.field_mask) << l.first_shift
            | u64::from(self.instance & 0xf) << 4
            | u64::from(self.node & 0xf)
    }

    fn decode_raw(word: u64, max_version: u8) -> Result<Self, KramError> {
        let version = ((word >> 56) & 0xf) as u8;
        if version != V1 && version != V2 || version > max_version {
            return Err(KramError::Version(version));
        }
        let l = layout(version);
        if word & l.reserved != 0 {
            return Err(KramError::Reserved);
        }
        Ok(KramMsg {
            opcode: (word >> 60) as u8,
            version,
            node: (word & 0xf) as u8,
            instance: ((word >> 4) & 0xf) as u8,
            first_chunk: ((word >> l.first_shift) & l.field_mask) as u32,
            chunks: ((word >> l.count_shift) & l.field_mask) as u32,
            tag: ((word >> l.tag_shift) & 0xf) as u8,
        })
    }

    /// A message that names a range: it is not empty and fits the layout's table.
    fn check_range(&self) -> Result<(), KramError> {
        if self.chunks == 0 || self.first_chunk + self.chunks > layout(self.version).table {
            return Err(KramError::Range);
        }
        Ok(())
    }

    fn check_no_tag(&self) -> Result<(), KramError> {
        if self.tag != 0 {
            return Err(KramError::Reserved);
        }
        Ok(())
    }

    /// Decodes a message a daemon received from a driver; `max_version` is the newest layout
    /// the daemon speaks ([`V2`], or [`V1`] for a peer that keeps to the seed's protocol).
    pub fn decode_for_daemon(word: u64, max_version: u8) -> Result<Self, KramError> {
        let m = Self::decode_raw(word, max_version)?;
        match m.opcode {
            to_daemon::REQUEST => {
                let min_ok = match m.version {
                    V2 => m.first_chunk >= 1 && m.first_chunk <= m.chunks,
                    _ => m.first_chunk == 0,
                };
                if m.chunks == 0 || !min_ok {
                    return Err(KramError::Range);
                }
            }
            to_daemon::CONFIRM | to_daemon::RENEW => m.check_range()?,
            to_daemon::DECLINE => {
                m.check_no_tag()?;
                m.check_range()?
            }
            to_daemon::FREE => {
                if m.tag > to_daemon::FREE_UNWIPED {
                    return Err(KramError::Reserved);
                }
                m.check_range()?
            }
            op => return Err(KramError::Opcode(op)),
        }
        Ok(m)
    }

    /// Decodes a message a driver received from a daemon.
    pub fn decode_for_driver(word: u64) -> Result<Self, KramError> {
        let m = Self::decode_raw(word, V2)?;
        match m.opcode {
            to_driver::OFFER | to_driver::REVOKE => m.check_no_tag()?,
            to_driver::ACK => {}
            op => return Err(KramError::Opcode(op)),
        }
        m.check_range()?;
        Ok(m)
    }

    /// The smallest number of chunks a REQUEST accepts.
    pub const fn min_chunks(&self) -> u32 {
        if self.version == V2 {
            self.first_chunk
        } else {
            self.chunks
        }
    }
}

#[cfg(test)]
// An explicit path: the kernel modules include this file through #[path], and rustfmt then
// resolves an implicit one from the including file.
#[path = "kram/tests.rs"]
mod tests;
