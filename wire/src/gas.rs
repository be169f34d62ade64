// SPDX-License-Identifier: GPL-2.0
//! The GAS descriptor: the first bytes of the shared global-address-space region.
//!
//! The fabric server writes it when it creates the region; every node's eusrvmem driver reads it
//! to learn the node count and the partition layout. Node `i`'s partition starts at
//! `ctl_size + i * partition_size`. The control area before partition 0 (descriptor first) is
//! reserved for fabric-wide structures. All fields are little-endian.
//!
//! This file is included by the kernel modules with `#[path]`; it must only use `core`.

/// Magic bytes at offset 0.
pub const MAGIC: [u8; 8] = *b"UNIMEMGS";
/// Current descriptor version.
pub const VERSION: u32 = 1;
/// Encoded descriptor length in bytes.
pub const DESCRIPTOR_LEN: usize = 64;
/// Largest supported cluster (node ids are 4 bits in the KRAM protocol).
pub const MAX_NODES: u32 = 16;
/// Alignment of the control area and of partitions.
pub const PAGE_SIZE: u64 = 4096;
/// Partitions of at least this size are rounded down to a multiple of it, so that KRAM's 1 MiB
/// chunks are 1 MiB-aligned in the GAS and a lender can find memory-block-aligned runs for
/// NUMA hot-add (the window itself is a naturally aligned PCI BAR).
pub const PARTITION_ALIGN: u64 = 1 << 20;

/// The fabric's liveness word of each node, in the control area: one little-endian `u64` per
/// node at `NODE_STATE_OFFSET + 8 * node`, written only by the fabric server (bits 0..8 a
/// [`node_state`] value, bits 8..64 how many times the node connected). A borrower checks it
/// around every copy from a lender's partition: a lender whose memory went away
/// ([`node_state::LOST`], the fabric poisoned the partition) must not be read. Any node can
/// write the control area, so a hostile peer can mark another node lost: that costs a
/// failover, never wrong data. Control areas smaller than [`NODE_STATE_END`] carry no states.
pub const NODE_STATE_OFFSET: u64 = PAGE_SIZE;
/// End of the node state table.
pub const NODE_STATE_END: u64 = NODE_STATE_OFFSET + 8 * MAX_NODES as u64;

/// Each node's kernel heartbeat, in the control area after the node states: one little-endian
/// `u64` per node at `HEARTBEAT_OFFSET + 8 * node`, written only by that node's
/// `unimem_eusrvmem` (a new [`heartbeat`] value every `kram::RENEW_PERIOD_MS` while it is
/// loaded). The fabric's node state says whether a node is connected; the heartbeat says
/// whether its kernel runs: a lender tells a frozen borrower (connected, heartbeat stalled),
/// which may still use what it borrowed, from a live one that dropped a lease without FREE.
/// Control areas smaller than [`HEARTBEAT_END`] carry no heartbeats.
pub const HEARTBEAT_OFFSET: u64 = NODE_STATE_END;
/// End of the heartbeat table.
pub const HEARTBEAT_END: u64 = HEARTBEAT_OFFSET + 8 * MAX_NODES as u64;

pub mod heartbeat {
    /// Set when the node's kernel stopped beating on purpose (`unimem_eusrvmem` unloaded): it
    /// is not frozen, and uses nothing it borrowed any more.
    pub const STOPPED: u64 = 1 << 63;

    /// The beat after `word` (the first after a load continues from what the word held, so
    /// that a reload shows as a change).
    pub const fn next(word: u64) -> u64 {
        word.wrapping_add(1) & !STOPPED
    }

    /// Whether `word` says the node's kernel stopped beating on purpose.
    pub const fn stopped(word: u64) -> bool {
        word & STOPPED != 0
    }
}

pub mod node_state {
    /// Never connected since the region was created.
    pub const NEVER: u64 = 0;
    /// Connected.
    pub const UP: u64 = 1;
    /// Disconnected; its memory is still there.
    pub const GONE: u64 = 2;
    /// Its memory went away: the partition was poisoned (all bytes 0xff, as reads from a dead
    /// link return).
    pub const LOST: u64 = 3;

    /// The word for `state` after `connects` connections.
    pub const fn encode(state: u64, connects: u64) -> u64 {
        connects << 8 | (state & 0xff)
    }

    pub const fn state(word: u64) -> u64 {
        word & 0xff
    }

    pub const fn connects(word: u64) -> u64 {
        word >> 8
    }
}

/// Why a descriptor was rejected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DescriptorError {
    /// Fewer than [`DESCRIPTOR_LEN`] bytes.
    Truncated,
    /// Magic bytes do not match (region not initialised by a fabric server).
    BadMagic,
    /// Unknown descriptor version.
    BadVersion(u32),
    /// Checksum mismatch (torn or corrupted write).
    BadChecksum,
    /// Node count is 0 or above [`MAX_NODES`].
    BadNodeCount(u32),
    /// Sizes are unaligned, zero, or the partitions do not fit in the region.
    BadLayout,
}

/// Layout of the shared region.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GasDescriptor {
    /// Number of nodes (partitions) in the cluster.
    pub node_count: u32,
    /// Doorbell vectors per node.
    pub vectors: u32,
    /// Total size of the region in bytes.
    pub region_size: u64,
    /// Bytes reserved at the start of the region (descriptor included).
    pub ctl_size: u64,
    /// Size of every node partition in bytes.
    pub partition_size: u64,
    /// Changes every time a fabric server creates a region.
    pub generation: u64,
}

fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

fn u32_at(b: &[u8], off: usize) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[off..off + 4]);
    u32::from_le_bytes(a)
}

fn u64_at(b: &[u8], off: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[off..off + 8]);
    u64::from_le_bytes(a)
}

impl GasDescriptor {
    /// Lays out `node_count` equal partitions after a control area of `ctl_size` bytes.
    /// Partitions are page-aligned, and [`PARTITION_ALIGN`]-aligned when at least that large;
    /// any remainder at the end of the region is left unused.
    pub fn layout(
        node_count: u32,
        vectors: u32,
        region_size: u64,
        ctl_size: u64,
        generation: u64,
    ) -> Result<Self, DescriptorError> {
        if node_count == 0 || node_count > MAX_NODES {
            return Err(DescriptorError::BadNodeCount(node_count));
        }
        let usable = region_size
            .checked_sub(ctl_size)
            .ok_or(DescriptorError::BadLayout)?;
        let share = usable / u64::from(node_count);
        let align = if share >= PARTITION_ALIGN {
            PARTITION_ALIGN
        } else {
            PAGE_SIZE
        };
        let partition_size = share / align * align;
        let d = GasDescriptor {
            node_count,
            vectors,
            region_size,
            ctl_size,
            partition_size,
            generation,
        };
        d.validate()?;
        Ok(d)
    }

    /// Checks the invariants every reader relies on.
    pub fn validate(&self) -> Result<(), DescriptorError> {
        if self.node_count == 0 || self.node_count > MAX_NODES {
            return Err(DescriptorError::BadNodeCount(self.node_count));
        }
        let aligned = |v: u64| v != 0 && v % PAGE_SIZE == 0;
        if !aligned(self.ctl_size)
            || !aligned(self.partition_size)
            || (DESCRIPTOR_LEN as u64) > self.ctl_size
        {
            return Err(DescriptorError::BadLayout);
        }
        let end = self
            .partition_size
            .checked_mul(u64::from(self.node_count))
            .and_then(|p| p.checked_add(self.ctl_size))
            .ok_or(DescriptorError::BadLayout)?;
        if end > self.region_size {
            return Err(DescriptorError::BadLayout);
        }
        Ok(())
    }

    /// Byte offset of `node`'s partition inside the region, if the node exists.
    pub fn partition_offset(&self, node: u32) -> Option<u64> {
        (node < self.node_count).then(|| self.ctl_size + u64::from(node) * self.partition_size)
    }

    /// Encodes the descriptor (checksum included).
    pub fn encode(&self) -> [u8; DESCRIPTOR_LEN] {
        let mut b = [0u8; DESCRIPTOR_LEN];
        b[0..8].copy_from_slice(&MAGIC);
        b[8..12].copy_from_slice(&VERSION.to_le_bytes());
        b[12..16].copy_from_slice(&self.node_count.to_le_bytes());
        b[16..20].copy_from_slice(&self.vectors.to_le_bytes());
        b[24..32].copy_from_slice(&self.region_size.to_le_bytes());
        b[32..40].copy_from_slice(&self.ctl_size.to_le_bytes());
        b[40..48].copy_from_slice(&self.partition_size.to_le_bytes());
        b[48..56].copy_from_slice(&self.generation.to_le_bytes());
        let sum = fnv1a(&b[..56]);
        b[56..64].copy_from_slice(&sum.to_le_bytes());
        b
    }

    /// Decodes and validates a descriptor; never trusts a field it has not checked.
    pub fn decode(b: &[u8]) -> Result<Self, DescriptorError> {
        if b.len() < DESCRIPTOR_LEN {
            return Err(DescriptorError::Truncated);
        }
        if b[0..8] != MAGIC {
            return Err(DescriptorError::BadMagic);
        }
        let version = u32_at(b, 8);
        if version != VERSION {
            return Err(DescriptorError::BadVersion(version));
        }
        if fnv1a(&b[..56]) != u64_at(b, 56) {
            return Err(DescriptorError::BadChecksum);
        }
        let d = GasDescriptor {
            node_count: u32_at(b, 12),
            vectors: u32_at(b, 16),
            region_size: u64_at(b, 24),
            ctl_size: u64_at(b, 32),
            partition_size: u64_at(b, 40),
            generation: u64_at(b, 48),
        };
        d.validate()?;
        Ok(d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;

    #[test]
    fn round_trip() {
        let d = GasDescriptor::layout(3, 4, 1024 * MIB, 2 * MIB, 42).unwrap();
        assert_eq!(d.partition_size, 340 * MIB);
        assert_eq!(GasDescriptor::decode(&d.encode()), Ok(d));
        assert_eq!(d.partition_offset(0), Some(2 * MIB));
        assert_eq!(d.partition_offset(2), Some(2 * MIB + 2 * d.partition_size));
        assert_eq!(d.partition_offset(3), None);
    }

    #[test]
    fn rejects_malformed() {
        let good = GasDescriptor::layout(3, 4, 1024 * MIB, 2 * MIB, 1)
            .unwrap()
            .encode();
        assert_eq!(
            GasDescriptor::decode(&good[..63]),
            Err(DescriptorError::Truncated)
        );
        let mut b = good;
        b[0] = b'X';
        assert_eq!(GasDescriptor::decode(&b), Err(DescriptorError::BadMagic));
        let mut b = good;
        b[8] = 9;
        assert_eq!(
            GasDescriptor::decode(&b),
            Err(DescriptorError::BadVersion(9))
        );
        let mut b = good;
        b[40] ^= 1;
        assert_eq!(GasDescriptor::decode(&b), Err(DescriptorError::BadChecksum));
        // A consistent checksum over inconsistent fields is still rejected.
        let mut d = GasDescriptor::decode(&good).unwrap();
        d.partition_size = 512 * MIB;
        assert_eq!(
            GasDescriptor::decode(&d.encode()),
            Err(DescriptorError::BadLayout)
        );
        d.node_count = 17;
        assert_eq!(
            GasDescriptor::decode(&d.encode()),
            Err(DescriptorError::BadNodeCount(17))
        );
    }

    #[test]
    fn node_states() {
        use node_state::*;
        let w = encode(LOST, 3);
        assert_eq!((state(w), connects(w)), (LOST, 3));
        assert_eq!(state(encode(UP, u64::MAX >> 8)), UP);
        const { assert!(HEARTBEAT_END <= 2 << 20, "fits the default control area") };
        const { assert!(NODE_STATE_OFFSET >= DESCRIPTOR_LEN as u64) };
    }

    #[test]
    fn heartbeats() {
        use heartbeat::*;
        assert_eq!(next(0), 1);
        assert_ne!(next(7), 7);
        // A reload after a stop beats again, with a value the stopped word never had.
        let was = 41 | STOPPED;
        assert!(stopped(was) && !stopped(next(was)));
        assert_ne!(next(was), was);
        assert!(!stopped(next(u64::MAX >> 1)));
        const { assert!(HEARTBEAT_OFFSET >= NODE_STATE_END) };
    }

    #[test]
    fn layout_limits() {
        assert!(GasDescriptor::layout(0, 4, 1024 * MIB, 2 * MIB, 0).is_err());
        assert!(GasDescriptor::layout(16, 4, 1024 * MIB, 2 * MIB, 0).is_ok());
        assert!(GasDescriptor::layout(2, 4, MIB, 2 * MIB, 0).is_err());
        assert!(GasDescriptor::layout(1, 4, 64 * MIB, 1000, 0).is_err());
        // Small partitions stay page-aligned rather than rounding to nothing.
        let small = GasDescriptor::layout(16, 4, 10 * MIB, 2 * MIB, 0).unwrap();
        assert_eq!(small.partition_size, MIB / 2);
    }
}
