//! This node's partition as the daemon touches it, through its own mapping of
//! `/dev/eusrvmem`: the lease record at `RECORD_OFFSET` and the chunks after it, which it wipes
//! when a lease expires or a grace period ends (their contents are then unknown).

use anyhow::{ensure, Context, Result};
use unimem_gas::device::{Device, Mapping};
use unimem_wire::gas::{HEARTBEAT_END, HEARTBEAT_OFFSET, NODE_STATE_END, NODE_STATE_OFFSET};
use unimem_wire::kram::{lent_range, CHUNK_SIZE, LENDABLE_OFFSET};
use unimem_wire::lease_record::{RECORD_OFFSET, RECORD_SIZE};

pub struct Partition {
    /// From the record's first byte to the table's last chunk.
    map: Mapping,
    chunks: u32,
}

impl Partition {
    /// Maps the record and the `chunks` chunks of node `node`'s partition, for the GAS layout
    /// `ctl_size` + `partition_size` (eusrvmem's sysfs).
    pub fn open(ctl_size: u64, partition_size: u64, node: u32, chunks: u32) -> Result<Self> {
        let (chunk0, len) = lent_range(ctl_size, partition_size, node, 0, chunks)
            .context("the chunk table does not fit this node's partition")?;
        let part = ctl_size + u64::from(node) * partition_size;
        ensure!(
            chunk0 == part + LENDABLE_OFFSET
                && RECORD_OFFSET + RECORD_SIZE as u64 == LENDABLE_OFFSET,
            "unexpected partition layout"
        );
        let device = Device::open()?;
        let map = device
            .map(part + RECORD_OFFSET, RECORD_SIZE + usize::try_from(len)?)
            .with_context(|| {
                format!(
                    "mapping this node's lease record and {chunks} chunks (GAS offset {:#x})",
                    part + RECORD_OFFSET
                )
            })?;
        Ok(Partition { map, chunks })
    }

    /// A copy of the record area (a peer could write it meanwhile: decode only the copy).
    pub fn read_record(&mut self) -> Vec<u8> {
        self.map.as_mut_slice()[..RECORD_SIZE].to_vec()
    }

    /// Writes `bytes` (an encoded record) at the start of the record area.
    pub fn write_record(&mut self, bytes: &[u8]) {
        assert!(bytes.len() <= RECORD_SIZE);
        self.map.as_mut_slice()[..bytes.len()].copy_from_slice(bytes);
    }

    /// Zeroes chunks `first..first + chunks`.
    pub fn wipe(&mut self, first: u32, chunks: u32) {
        assert!(first + chunks <= self.chunks);
        let start = RECORD_SIZE + first as usize * CHUNK_SIZE as usize;
        let len = chunks as usize * CHUNK_SIZE as usize;
        self.map.as_mut_slice()[start..start + len].fill(0);
    }
}

/// The fabric's liveness words of every node (`gas::NODE_STATE_OFFSET`, written by the fabric
/// server) and the nodes' kernel heartbeats after them (`gas::HEARTBEAT_OFFSET`, each written by
/// that node's kernel), read to tell a frozen borrower (still connected, heartbeat stalled) from
/// a gone or a live one.
pub struct NodeStates {
    map: Option<Mapping>,
    /// Whether the control area has the heartbeat table (it follows the states).
    heartbeats: bool,
}

impl NodeStates {
    /// Maps the words if the control area has them (a fabric without them: no node is known
    /// to be connected, and no lapsed lease is held).
    pub fn open(ctl_size: u64) -> Result<Self> {
        if ctl_size < NODE_STATE_END {
            return Ok(NodeStates {
                map: None,
                heartbeats: false,
            });
        }
        let heartbeats = ctl_size >= HEARTBEAT_END;
        let end = if heartbeats {
            HEARTBEAT_END
        } else {
            NODE_STATE_END
        };
        let map = Device::open()?
            .map(NODE_STATE_OFFSET, (end - NODE_STATE_OFFSET) as usize)
            .context("mapping the fabric's node states")?;
        Ok(NodeStates {
            map: Some(map),
            heartbeats,
        })
    }

    /// The word at `offset` of the control area (one aligned volatile load: its writer writes
    /// it concurrently).
    fn load(&mut self, offset: u64) -> Option<u64> {
        let map = self.map.as_mut()?;
        let at = usize::try_from(offset.checked_sub(NODE_STATE_OFFSET)?).ok()?;
        let bytes = map.as_mut_slice().get(at..at + 8)?;
        let p = bytes.as_ptr().cast::<u64>();
        // SAFETY: `p` points at 8 mapped bytes, 8-byte aligned (the mapping is page-aligned and
        // the offsets are multiples of 8).
        Some(u64::from_le(unsafe { p.read_volatile() }))
    }

    /// Node `node`'s word (state and connection count), if known.
    pub fn word(&mut self, node: u32) -> Option<u64> {
        self.load(NODE_STATE_OFFSET + 8 * u64::from(node))
    }

    /// Node `node`'s kernel heartbeat word, if the control area has the table.
    pub fn heartbeat(&mut self, node: u32) -> Option<u64> {
        if !self.heartbeats {
            return None;
        }
        self.load(HEARTBEAT_OFFSET + 8 * u64::from(node))
    }
}
