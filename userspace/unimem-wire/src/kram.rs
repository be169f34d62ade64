// SPDX-License-Identifier: GPL-2.0
//! The KRAM protocol (seed 000 sections 2.5.6-2.5.8): 64-bit mailbox messages between the
//! `unimem_kram` block driver (service `KRAM_DRIVER`) and the `kram-daemon` of each lender
//! (service `KRAM_DAEMON`).
//!
//! The seed says both "the 4 most-significant bits" and "bits 0-3" for the opcode; unimem uses
//! the most-significant bits, which is also what the mailbox dispatches on:
//!
//! ```text
//! bits 60..64  opcode
//! bits 28..60  reserved, zero
//! bits 24..28  REQUEST only: log2 of the alignment (in chunks) the first chunk's GAS address
//!              needs; zero in every other message
//! bits 16..24  number of chunks
//! bits  8..16  first chunk index
//! bits  4..8   swap instance id
//! bits  0..4   node id: the requester (driver to daemon) or the lender (daemon to driver)
//! ```
//! A chunk is 1 MiB of the lender's partition, starting at [`LENDABLE_OFFSET`]. Swap instances
//! 0..[`MAX_INSTANCES`] belong to `unimem_kram`; instance [`NUMA_INSTANCE`] is `unimem_numa`'s,
//! which needs its range aligned to a memory block to hot-add it ([`reply_service`]).
//! This file is included by the kernel modules with `#[path]`; `core` only.

use crate::mailbox::layout::RESERVED;

/// Bytes per chunk ("sizes in MB").
pub const CHUNK_SIZE: u64 = 1 << 20;
/// Where chunk 0 starts in a lender's partition: after the mailbox rings, chunk-aligned.
pub const LENDABLE_OFFSET: u64 = (RESERVED as u64).div_ceil(CHUNK_SIZE) * CHUNK_SIZE;
/// Chunk indices and counts are 8-bit.
pub const MAX_CHUNKS: u32 = 256;
/// Largest request: one message can ask for at most 255 chunks.
pub const MAX_REQUEST_CHUNKS: u32 = 255;
/// Swap instances per node (4-bit instance id; the last id is [`NUMA_INSTANCE`]).
pub const MAX_INSTANCES: u32 = 15;
/// The instance id of a node's NUMA driver: its OFFERs go to service `NUMA_DRIVER`.
pub const NUMA_INSTANCE: u8 = 15;

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

/// The mailbox service a daemon sends an OFFER for `instance` to.
pub const fn reply_service(instance: u8) -> u32 {
    if instance == NUMA_INSTANCE {
        crate::mailbox::service::NUMA_DRIVER
    } else {
        crate::mailbox::service::KRAM_DRIVER
    }
}

/// Driver to daemon.
pub mod to_daemon {
    pub const REQUEST: u8 = 0x1;
    pub const CONFIRM: u8 = 0x2;
    pub const DECLINE: u8 = 0x4;
    pub const FREE: u8 = 0x8;
}
/// Daemon to driver.
pub mod to_driver {
    pub const OFFER: u8 = 0x1;
}

/// A decoded KRAM message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KramMsg {
    pub opcode: u8,
    pub node: u8,
    pub instance: u8,
    pub first_chunk: u8,
    pub chunks: u8,
    /// REQUEST: the first chunk's GAS offset must be a multiple of `2^align` chunks.
    pub align: u8,
}

/// Why a word is not a KRAM message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KramError {
    /// Reserved bits 28..60 are not zero, or an alignment outside a REQUEST.
    Reserved,
    /// Unknown opcode for this direction.
    Opcode(u8),
    /// A range that is empty or runs past the 256-chunk table.
    Range,
}

impl KramMsg {
    pub fn encode(&self) -> u64 {
        u64::from(self.opcode & 0xf) << 60
            | u64::from(self.align & 0xf) << 24
            | u64::from(self.chunks) << 16
            | u64::from(self.first_chunk) << 8
            | u64::from(self.instance & 0xf) << 4
            | u64::from(self.node & 0xf)
    }

    fn decode_raw(word: u64) -> Result<Self, KramError> {
        if word & 0x0fff_ffff_f000_0000 != 0 {
            return Err(KramError::Reserved);
        }
        Ok(KramMsg {
            opcode: (word >> 60) as u8,
            node: (word & 0xf) as u8,
            instance: ((word >> 4) & 0xf) as u8,
            first_chunk: (word >> 8) as u8,
            chunks: (word >> 16) as u8,
            align: ((word >> 24) & 0xf) as u8,
        })
    }

    /// A message that names a range (all but REQUEST): the range fits the table, and the
    /// alignment field, which only a REQUEST uses, is zero.
    fn check_range(&self) -> Result<(), KramError> {
        if self.align != 0 {
            return Err(KramError::Reserved);
        }
        if self.chunks == 0 || u32::from(self.first_chunk) + u32::from(self.chunks) > MAX_CHUNKS {
            return Err(KramError::Range);
        }
        Ok(())
    }

    /// Decodes a message a daemon received from a driver.
    pub fn decode_for_daemon(word: u64) -> Result<Self, KramError> {
        let m = Self::decode_raw(word)?;
        match m.opcode {
            to_daemon::REQUEST => {
                if m.chunks == 0 {
                    return Err(KramError::Range);
                }
            }
            to_daemon::CONFIRM | to_daemon::DECLINE | to_daemon::FREE => m.check_range()?,
            op => return Err(KramError::Opcode(op)),
        }
        Ok(m)
    }

    /// Decodes a message a driver received from a daemon.
    pub fn decode_for_driver(word: u64) -> Result<Self, KramError> {
        let m = Self::decode_raw(word)?;
        if m.opcode != to_driver::OFFER {
            return Err(KramError::Opcode(m.opcode));
        }
        m.check_range()?;
        Ok(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let m = KramMsg {
            opcode: to_daemon::FREE,
            node: 15,
            instance: 3,
            first_chunk: 200,
            chunks: 56,
            align: 0,
        };
        let w = m.encode();
        assert_eq!(w >> 60, 0x8);
        assert_eq!(KramMsg::decode_for_daemon(w), Ok(m));
        let offer = KramMsg {
            opcode: to_driver::OFFER,
            node: 2,
            instance: 1,
            first_chunk: 0,
            chunks: 255,
            align: 0,
        };
        assert_eq!(KramMsg::decode_for_driver(offer.encode()), Ok(offer));
        assert_eq!(LENDABLE_OFFSET, 3 << 20);
    }

    #[test]
    fn rejects_malformed() {
        let req = KramMsg {
            opcode: to_daemon::REQUEST,
            node: 0,
            instance: 0,
            first_chunk: 0,
            chunks: 32,
            align: 0,
        };
        assert_eq!(
            KramMsg::decode_for_daemon(req.encode() | 1 << 30),
            Err(KramError::Reserved)
        );
        assert_eq!(
            KramMsg::decode_for_daemon(req.encode() & !(0xff << 16)),
            Err(KramError::Range)
        );
        let mut bad = req;
        bad.opcode = 0x3;
        assert_eq!(
            KramMsg::decode_for_daemon(bad.encode()),
            Err(KramError::Opcode(3))
        );
        // An offer is not something a daemon accepts, nor a request something a driver accepts.
        assert_eq!(
            KramMsg::decode_for_driver(KramMsg { opcode: 0x2, ..req }.encode()),
            Err(KramError::Opcode(2))
        );
        let past_end = KramMsg {
            opcode: to_driver::OFFER,
            node: 1,
            instance: 0,
            first_chunk: 250,
            chunks: 10,
            align: 0,
        };
        assert_eq!(
            KramMsg::decode_for_driver(past_end.encode()),
            Err(KramError::Range)
        );
        let free_past_end = KramMsg {
            opcode: to_daemon::FREE,
            ..past_end
        };
        assert_eq!(
            KramMsg::decode_for_daemon(free_past_end.encode()),
            Err(KramError::Range)
        );
    }

    #[test]
    fn lent_ranges() {
        const MIB: u64 = 1 << 20;
        // 3 nodes in 1 GiB: partitions of 340 MiB after 2 MiB of control area.
        let r = |lender, first, chunks| lent_range(2 * MIB, 340 * MIB, lender, first, chunks);
        assert_eq!(r(0, 0, 1), Some((5 * MIB, MIB)));
        assert_eq!(r(1, 39, 128), Some((384 * MIB, 128 * MIB)));
        // The last chunk that fits node 1's partition, and one past it.
        assert_eq!(r(1, 336, 1), Some((681 * MIB, MIB)));
        assert_eq!(r(1, 337, 1), None);
        assert_eq!(lent_range(u64::MAX, 1, 1, 0, 0), None);
    }

    #[test]
    fn alignment_only_in_requests() {
        let req = KramMsg {
            opcode: to_daemon::REQUEST,
            node: 2,
            instance: NUMA_INSTANCE,
            first_chunk: 0,
            chunks: 128,
            align: 7,
        };
        let w = req.encode();
        assert_eq!((w >> 24) & 0xf, 7);
        assert_eq!(KramMsg::decode_for_daemon(w), Ok(req));
        let free = KramMsg {
            opcode: to_daemon::FREE,
            first_chunk: 1,
            ..req
        };
        assert_eq!(
            KramMsg::decode_for_daemon(free.encode()),
            Err(KramError::Reserved)
        );
        let offer = KramMsg {
            opcode: to_driver::OFFER,
            ..free
        };
        assert_eq!(
            KramMsg::decode_for_driver(offer.encode()),
            Err(KramError::Reserved)
        );
        assert_eq!(
            reply_service(NUMA_INSTANCE),
            crate::mailbox::service::NUMA_DRIVER
        );
        assert_eq!(reply_service(0), crate::mailbox::service::KRAM_DRIVER);
        assert!(u32::from(NUMA_INSTANCE) >= MAX_INSTANCES);
    }

    #[test]
    fn every_word_decodes_or_errs() {
        // A cheap sweep over structured garbage: no panics, and accepted words round-trip.
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..100_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            for w in [x, x & 0xf000_0000_00ff_ffff] {
                if let Ok(m) = KramMsg::decode_for_daemon(w) {
                    assert_eq!(m.encode(), w);
                }
                if let Ok(m) = KramMsg::decode_for_driver(w) {
                    assert_eq!(m.encode(), w);
                }
            }
        }
    }
}
