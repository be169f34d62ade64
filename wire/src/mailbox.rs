// SPDX-License-Identifier: GPL-2.0
//! The virtualized mailbox and packetizer: `/dev/unimem_mailbox` ABI, kernel messages and the
//! layout of the receive rings in shared memory.
//!
//! Every ioctl argument is a `#[repr(C)]` struct of fixed-width integers (identical on every
//! architecture); ioctl numbers are `_IOR`/`_IOW('M', nr, T)`.
//! This file is included by the kernel modules with `#[path]`; `core` only.

use crate::packet::{PACKET_LEN, PAYLOAD_LEN};

/// Name of the character device (`/dev/unimem_mailbox`) and the debugfs directory.
pub const DEVICE_NAME: &str = "unimem_mailbox";
/// Mailbox (and packetizer) interfaces per node.
pub const INTERFACES: u32 = 64;
/// Doorbell vector the mailbox uses (see docs/ARCHITECTURE.md).
pub const DOORBELL_VECTOR: u32 = 1;
/// ioctl type byte.
pub const IOCTL_TYPE: u32 = b'M' as u32;

/// `_IOR(ALLOC)`: allocate a mailbox/packetizer pair for the calling thread.
pub const NR_ALLOC: u32 = 1;
/// `_IOW(SEND)`: send a payload to (node, interface).
pub const NR_SEND: u32 = 2;
/// `_IOR(RECV)`: receive one packet (blocks unless `O_NONBLOCK`).
pub const NR_RECV: u32 = 3;
/// `_IOW(SET_PROT)`: set the protection id of an interface (`CAP_SYS_ADMIN`).
pub const NR_SET_PROT: u32 = 4;
/// `_IOW(KBIND)`: receive the 64-bit messages of a service on this file.
pub const NR_KBIND: u32 = 5;
/// `_IOW(KSEND)`: send a 64-bit message to a service on a node.
pub const NR_KSEND: u32 = 6;
/// `_IOR(KRECV)`: receive one 64-bit message (blocks unless `O_NONBLOCK`).
pub const NR_KRECV: u32 = 7;
/// `_IOW(INHERIT, u32 fd)`: before `ALLOC`, join the protection tree of another mailbox file
/// the caller holds (which must have allocated). Threads of one process, or a process and the
/// children it forked, share a tree this way (docs/GSAS.md).
pub const NR_INHERIT: u32 = 8;
/// `_IOW(SET_TREE, u32 prot_id)`: before `ALLOC`, put this file in tree `prot_id`
/// (`CAP_SYS_ADMIN`; remoteFork gives a child its issuer's tree this way).
pub const NR_SET_TREE: u32 = 9;
/// `KICK` (`u32` node): ring node's doorbell, for a request left in a submission slot
/// (`gsas::submit_slot`) while that node's service may not be polling.
pub const NR_KICK: u32 = 10;
/// `_IOW(SET_OWNER, OwnerArgs)`: before `ALLOC`, the identity the interface will carry
/// (`CAP_SYS_ADMIN`). Without it, `ALLOC` seals the opener's effective uid and gid, and
/// `ADMIN` if the allocating thread has `CAP_SYS_ADMIN`. remoteFork's daemon gives a child's
/// file the issuer's identity this way, not its own.
pub const NR_SET_OWNER: u32 = 11;
/// `_IOR(RECV_CREDS, RecvCredsArgs)`: as `RECV`, with who sent the packet as the sender's node
/// sealed it (a service that serves users, such as OpenFAM's metadata service, checks it).
pub const NR_RECV_CREDS: u32 = 12;
/// `_IOWR(ALLOC_AT, AllocInfo)`: as `ALLOC`, of the interface named in the argument's `iface`,
/// one of the [`well_known`] interfaces (`CAP_SYS_ADMIN`; `EBUSY` if it is held, `EINVAL` for
/// any other interface). A system service takes its well-known interface this way, so that
/// clients on every node know where to send without asking anyone.
pub const NR_ALLOC_AT: u32 = 13;
/// `_IOW(WAIT_ANSWER, WaitAnswerArgs)`: sleeps until the response slot that node `home`'s
/// service writes for this file's interface no longer holds `seq`, for at most `timeout_us`
/// (`ETIMEDOUT`; `EINTR` on a signal). Meanwhile the interface's wake word
/// (`gsas::wake_word`) says [`gsas::WAKE_ASLEEP`](crate::gsas::WAKE_ASLEEP), so the home rings
/// this node when it answers: the thread's CPU is free for others while it waits.
pub const NR_WAIT_ANSWER: u32 = 14;

/// Interfaces that plain `ALLOC` never hands out: each belongs to one system service, which
/// takes it with `ALLOC_AT`. A user cannot squat on them, so a client that sends to one reaches
/// the service or nobody (its identity in the packet's sealed header says which).
pub mod well_known {
    /// OpenFAM's metadata service, `famd` (docs/FAM.md).
    pub const FAMD: u32 = 62;
    /// The first well-known interface: `ALLOC` takes `0..FIRST`.
    pub const FIRST: u32 = 62;
    /// Whether `iface` is a well-known interface (the last interface, `gsas::SERVICE_IFACE`,
    /// is the GSAS service's, in the kernel; this file is included alone, hence no path to it).
    pub const fn contains(iface: u32) -> bool {
        iface >= FIRST && iface < super::INTERFACES - 1
    }
}

/// `mmap` offsets on a mailbox file that has allocated an interface: its GSAS area
/// (`gsas::AREA_*`) in this node's partition. Responses and bulk-in: 2 pages from offset
/// [`MMAP_RESPONSES`], read-only; bulk-out and the submission slots: 2 pages from
/// [`MMAP_BULK_OUT`], read-write.
pub const MMAP_RESPONSES: u64 = 0;
/// See [`MMAP_RESPONSES`].
pub const MMAP_BULK_OUT: u64 = 2 * 4096;
/// `mmap` offset of this node's partition on a mailbox file that has allocated an interface:
/// `MMAP_GSAS + o` maps the page at partition offset `o`, shared and read-write, only if the
/// node's GSAS service has allocated every page of the range to the file's protection tree
/// (`EACCES` for another tree's pages, `ENXIO` for pages not allocated). The mapping goes when
/// the pages are freed (a later access gets `SIGBUS`). Partition offsets are below 2^48, so
/// the two ranges never meet.
pub const MMAP_GSAS: u64 = 1 << 48;
/// `mmap` offset of other nodes' partitions on a mailbox file that has allocated an interface:
/// [`mmap_remote`]`(node, o)` = `MMAP_REMOTE | node << 48 | o` maps the pages at partition
/// offset `o` of node `node` (not this node: `EINVAL`, use [`MMAP_GSAS`]), once, as approved
/// by that node's GSAS service in this interface's approval word (`gsas::op::MAP`,
/// `gsas::remote_map`): the offset must be the approved first page, the length at most the
/// approved one, and a writable mapping needs a writable approval (`EACCES` otherwise, and
/// without an approval). The approval is consumed. The mapping goes when the home frees the
/// pages or narrows their grant (a later access gets `SIGBUS`).
pub const MMAP_REMOTE: u64 = 1 << 56;
/// Bits of a [`MMAP_REMOTE`] offset that hold the node.
pub const MMAP_NODE_SHIFT: u32 = 48;

/// The `mmap` offset of partition offset `offset` (below 2^48) of node `node`'s partition.
pub const fn mmap_remote(node: u32, offset: u64) -> u64 {
    MMAP_REMOTE
        | ((node as u64) & 0xff) << MMAP_NODE_SHIFT
        | (offset & ((1 << MMAP_NODE_SHIFT) - 1))
}

/// The node and partition offset of a [`MMAP_REMOTE`] offset; `None` for any other offset.
pub const fn remote_of(mmap_offset: u64) -> Option<(u32, u64)> {
    if mmap_offset & !((1 << 56) - 1) != MMAP_REMOTE {
        return None;
    }
    Some((
        (mmap_offset >> MMAP_NODE_SHIFT) as u32 & 0xff,
        mmap_offset & ((1 << MMAP_NODE_SHIFT) - 1),
    ))
}

/// Result of `ALLOC`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AllocInfo {
    /// Interface id (the same index for the mailbox and the packetizer interface).
    pub iface: u32,
    /// This node's id.
    pub node: u32,
    /// Thread id the interface belongs to.
    pub thread_id: u32,
    /// Protection id of the interface's tree (`gsas::prot`: unique across the cluster).
    pub prot_id: u32,
}

/// Argument of `SEND`. There is no header here: the driver writes it.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SendArgs {
    pub node: u32,
    pub iface: u32,
    pub payload: [u8; PAYLOAD_LEN],
    pub reserved: [u8; 7],
}

/// Argument of `RECV`: the packet, header included.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecvArgs {
    pub packet: [u8; PACKET_LEN],
}

/// Argument of `RECV_CREDS`: the packet, and the credentials (`gsas::owner::Creds`) the
/// sender's node published for the sending interface, read when the packet was received.
/// `valid` is 1 only if that interface was then still owned in the packet's tree (a tree is one
/// user's); 0 for a packet of a kernel interface or one whose sender has gone: refuse it.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecvCredsArgs {
    pub packet: [u8; PACKET_LEN],
    pub uid: u32,
    pub gid: u32,
    pub flags: u32,
    pub valid: u32,
}

/// Argument of `SET_PROT`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SetProtArgs {
    pub iface: u32,
    pub prot_id: u32,
}

/// Argument of `SET_OWNER`: `flags` is `gsas::owner::ADMIN` or 0.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OwnerArgs {
    pub uid: u32,
    pub gid: u32,
    pub flags: u32,
}

/// Argument of `WAIT_ANSWER`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WaitAnswerArgs {
    /// The node whose answer is awaited.
    pub home: u32,
    /// The slot's `seq` before the request was sent.
    pub seq: u32,
    /// The longest sleep, in microseconds (at least one tick is slept through if no answer
    /// comes; 0 only checks).
    pub timeout_us: u32,
    /// Zero.
    pub reserved: u32,
}

/// Argument of `KSEND` (node = destination) and `KRECV` (node = sender).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KmsgArgs {
    pub node: u32,
    pub service: u32,
    pub word: u64,
}

// The ioctl arguments have no padding: the kernel copies them to and from user memory as
// plain bytes (`FromBytes`/`AsBytes`), so every byte must belong to a field.
const _: () = {
    use core::mem::size_of;
    assert!(size_of::<AllocInfo>() == 4 * 4);
    assert!(size_of::<SendArgs>() == 4 + 4 + PAYLOAD_LEN + 7);
    assert!(size_of::<RecvArgs>() == PACKET_LEN);
    assert!(size_of::<RecvCredsArgs>() == PACKET_LEN + 4 * 4);
    assert!(size_of::<SetProtArgs>() == 4 + 4);
    assert!(size_of::<OwnerArgs>() == 3 * 4);
    assert!(size_of::<KmsgArgs>() == 4 + 4 + 8);
    assert!(size_of::<WaitAnswerArgs>() == 4 * 4);
};

/// Services of 64-bit kernel messages (the addressee on the destination node).
pub mod service {
    /// KRAM block driver (kernel).
    pub const KRAM_DRIVER: u32 = 1;
    /// kram-daemon (user space).
    pub const KRAM_DAEMON: u32 = 2;
    /// NUMA registration driver (`unimem_numa.ko`): OFFERs for `kram::NUMA_INSTANCE`.
    pub const NUMA_DRIVER: u32 = 3;
    /// GSAS atomic service (`unimem_gsas.ko`): OFFERs for `kram::GSAS_INSTANCE`.
    pub const GSAS: u32 = 4;
    /// The in-kernel echo client (`unimem_mbox_echo.ko`), for tests.
    pub const ECHO: u32 = 14;
    /// Free for tests and tools.
    pub const TEST: u32 = 15;
    /// Services are 0..COUNT; 0 is never used.
    pub const COUNT: u32 = 16;
}

/// The opcode of a 64-bit message: its 4 most significant bits (seed 000, 2.5.6).
pub const fn kmsg_opcode(word: u64) -> u32 {
    (word >> 60) as u32
}

/// Shared-memory layout of one node's receive rings, at the start of its partition.
///
/// For every (interface, sending node) there is one single-producer single-consumer packet
/// ring, and for every sending node one kernel-message ring: only the sending node's driver
/// writes `tail` and the slots, only the receiving driver writes `head`, so no atomic
/// read-modify-write is needed across nodes.
pub mod layout {
    use super::INTERFACES;
    use crate::gas::MAX_NODES;

    /// Slots per ring (a power of two).
    pub const SLOTS: u32 = 32;
    /// Bytes per slot (one packet, or one 16-byte kernel message).
    pub const SLOT_LEN: usize = 32;
    /// Ring header: `head` at 0 and `tail` at 64 (separate cache lines), little-endian u32.
    pub const HEAD_OFFSET: usize = 0;
    pub const TAIL_OFFSET: usize = 64;
    /// Little-endian u32 beside `head`, written by the receiving driver only: [`POLLING`] while
    /// it busy-polls the ring of a kernel service, so that the sender may skip the doorbell
    /// (`unimem_mailbox` `poll_us`), else 0. A sender that reads it just as the receiver stops
    /// polling is covered by the receiver's last look after clearing it. Senders to a user
    /// interface always ring.
    pub const POLLING_OFFSET: usize = 8;
    /// The polling flag's value while the receiver polls: anything else (a peer's scribbles
    /// included) means "ring".
    pub const POLLING: u32 = 0x4c4c_4f50;
    pub const RING_HEADER: usize = 128;
    /// Bytes from one ring to the next (a multiple of 128: the header's cache lines stay
    /// aligned).
    pub const RING_STRIDE: usize = 1536;
    /// Bytes of a partition the mailbox reserves (the rest can be lent).
    pub const RESERVED: usize = (INTERFACES as usize + 1) * MAX_NODES as usize * RING_STRIDE;

    /// Offset in the receiving partition of the packet ring of `iface` fed by `sender`.
    pub const fn packet_ring(iface: u32, sender: u32) -> usize {
        (iface as usize * MAX_NODES as usize + sender as usize) * RING_STRIDE
    }

    /// Offset in the receiving partition of the kernel-message ring fed by `sender`.
    pub const fn kmsg_ring(sender: u32) -> usize {
        packet_ring(INTERFACES, sender)
    }

    const _: () = assert!(RING_HEADER + SLOTS as usize * SLOT_LEN <= RING_STRIDE);
    const _: () = assert!(RING_STRIDE % 128 == 0);
    const _: () = assert!(POLLING_OFFSET >= HEAD_OFFSET + 4 && POLLING_OFFSET + 4 <= TAIL_OFFSET);
}

/// A kernel message as stored in a ring slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Kmsg {
    pub service: u32,
    pub sender: u32,
    pub word: u64,
}

/// Why a ring slot does not hold a valid kernel message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KmsgError {
    Truncated,
    BadMagic,
    BadService(u32),
}

const KMSG_MAGIC: u16 = 0x4b4d; // "MK"

impl Kmsg {
    /// Encodes the 16 bytes of a slot.
    pub fn encode(&self) -> [u8; 16] {
        let mut b = [0u8; 16];
        b[0..2].copy_from_slice(&KMSG_MAGIC.to_le_bytes());
        b[2] = self.service as u8;
        b[3] = self.sender as u8;
        b[8..16].copy_from_slice(&self.word.to_le_bytes());
        b
    }

    /// Decodes a slot, rejecting anything the sending driver could not have written.
    pub fn decode(b: &[u8]) -> Result<Self, KmsgError> {
        if b.len() < 16 {
            return Err(KmsgError::Truncated);
        }
        if u16::from_le_bytes([b[0], b[1]]) != KMSG_MAGIC || b[4..8] != [0; 4] {
            return Err(KmsgError::BadMagic);
        }
        let service = u32::from(b[2]);
        if service == 0 || service >= service::COUNT {
            return Err(KmsgError::BadService(service));
        }
        let mut w = [0u8; 8];
        w.copy_from_slice(&b[8..16]);
        Ok(Kmsg {
            service,
            sender: u32::from(b[3]),
            word: u64::from_le_bytes(w),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remote_mmap_offsets() {
        let o = mmap_remote(3, 0x40_2000);
        assert_eq!(o, 1 << 56 | 3 << 48 | 0x40_2000);
        assert_eq!(remote_of(o), Some((3, 0x40_2000)));
        assert_eq!(remote_of(o + 4096), Some((3, 0x40_3000)));
        assert_eq!(remote_of(MMAP_GSAS + 0x1000), None);
        assert_eq!(remote_of(0), None);
        assert_eq!(remote_of(1 << 57 | o), None);
        const { assert!(MMAP_REMOTE > MMAP_GSAS + (1 << 48)) };
        // File offsets stay positive as `loff_t`s.
        assert!(mmap_remote(0xff, u64::MAX) < 1 << 63);
    }

    #[test]
    fn kmsg_round_trip() {
        let m = Kmsg {
            service: service::KRAM_DAEMON,
            sender: 3,
            word: 0x8123_4567_89ab_cdef,
        };
        assert_eq!(Kmsg::decode(&m.encode()), Ok(m));
        assert_eq!(kmsg_opcode(m.word), 8);
    }

    #[test]
    fn kmsg_rejects_malformed() {
        let good = Kmsg {
            service: 1,
            sender: 0,
            word: 1,
        }
        .encode();
        assert_eq!(Kmsg::decode(&good[..15]), Err(KmsgError::Truncated));
        let mut b = good;
        b[0] ^= 1;
        assert_eq!(Kmsg::decode(&b), Err(KmsgError::BadMagic));
        let mut b = good;
        b[5] = 1;
        assert_eq!(Kmsg::decode(&b), Err(KmsgError::BadMagic));
        for s in [0u8, 16, 255] {
            let mut b = good;
            b[2] = s;
            assert_eq!(Kmsg::decode(&b), Err(KmsgError::BadService(u32::from(s))));
        }
        assert_eq!(Kmsg::decode(&[0u8; 16]), Err(KmsgError::BadMagic));
    }

    #[test]
    fn layout_fits() {
        assert_eq!(layout::packet_ring(0, 0), 0);
        assert_eq!(layout::packet_ring(1, 0), 16 * layout::RING_STRIDE);
        assert_eq!(
            layout::kmsg_ring(15) + layout::RING_STRIDE,
            layout::RESERVED
        );
        assert_eq!(layout::RESERVED, 65 * 16 * 1536);
    }

    #[test]
    fn abi_sizes_are_fixed() {
        assert_eq!(core::mem::size_of::<AllocInfo>(), 16);
        assert_eq!(core::mem::size_of::<SendArgs>(), 40);
        assert_eq!(core::mem::size_of::<RecvArgs>(), 32);
        assert_eq!(core::mem::size_of::<SetProtArgs>(), 8);
        assert_eq!(core::mem::size_of::<KmsgArgs>(), 16);
    }
}
