// SPDX-License-Identifier: GPL-2.0
//! GSAS, the global shared address space (seed 000 section 2; seed 001 for Gmem's extensions):
//! addresses, the requests a thread sends to a node's atomic service in a mailbox packet, and
//! the per-interface area where the service answers. See `docs/GSAS.md` for the protocol.
//!
//! This file is included by the kernel modules with `#[path]`; `core` only.

use crate::mailbox::{layout, INTERFACES};
use crate::packet::Payload;

/// Bits of an address above the node's offset: the node id (seed Figure 6).
pub const NODE_SHIFT: u32 = 48;
/// The offset part of an address: a byte offset inside the node's partition of the GAS.
pub const OFFSET_MASK: u64 = (1 << NODE_SHIFT) - 1;
/// GSAS pages are 4 KiB.
pub const PAGE_SIZE: u64 = 4096;

/// The address of byte `offset` of node `node`'s partition.
pub const fn addr(node: u16, offset: u64) -> u64 {
    (node as u64) << NODE_SHIFT | (offset & OFFSET_MASK)
}

/// The node an address lives on.
pub const fn node_of(addr: u64) -> u16 {
    (addr >> NODE_SHIFT) as u16
}

/// The byte offset of an address inside its node's partition.
pub const fn offset_of(addr: u64) -> u64 {
    addr & OFFSET_MASK
}

/// The mailbox interface of the atomic service on every node. `ALLOC` hands threads the
/// interfaces below it.
pub const SERVICE_IFACE: u32 = INTERFACES - 1;
/// Interfaces threads can allocate.
pub const USER_INTERFACES: u32 = SERVICE_IFACE;

/// Request opcodes (payload byte 0). `| WIDTH32` makes an operation act on 32 bits (the low
/// half of `arg1`/`arg2`, results zero-extended) where that is listed as allowed.
pub mod op {
    /// Nothing; answered with OK (the service's round trip).
    pub const NOP: u8 = 0x00;
    /// 64-bit (or `| WIDTH32`) read: value = the word.
    pub const READ: u8 = 0x01;
    /// 64-bit (or `| WIDTH32`) write of `arg1`.
    pub const WRITE: u8 = 0x02;
    /// Atomic 128-bit read (16-byte aligned): value bytes 0..16.
    pub const READ128: u8 = 0x03;
    /// Atomic 256-bit read (32-byte aligned): value bytes 0..32.
    pub const READ256: u8 = 0x04;
    /// Atomic 128-bit write (16-byte aligned): `arg1` low word, `arg2` high word.
    pub const WRITE128: u8 = 0x05;
    /// Fetch&Add of `arg1` (wrapping); value = the old word. `WIDTH32` allowed.
    pub const FETCH_ADD: u8 = 0x06;
    /// Compare-and-swap: if the word is `arg1`, write `arg2`; value = the old word either way.
    /// `WIDTH32` allowed.
    pub const CAS: u8 = 0x07;
    /// Swap in `arg1`; value = the old word. `WIDTH32` allowed.
    pub const SWAP: u8 = 0x08;
    /// Fetch-and of `arg1`; value = the old word. `WIDTH32` allowed.
    pub const FETCH_AND: u8 = 0x09;
    /// Fetch-or of `arg1`; value = the old word. `WIDTH32` allowed.
    pub const FETCH_OR: u8 = 0x0a;
    /// Fetch-xor of `arg1`; value = the old word. `WIDTH32` allowed.
    pub const FETCH_XOR: u8 = 0x0b;
    /// Fetch-min, signed: the word becomes the smaller of it and `arg1` as two's-complement
    /// integers; value = the old word. `WIDTH32` allowed (compared as `i32`).
    pub const FETCH_MIN: u8 = 0x0c;
    /// Fetch-max, signed, as [`FETCH_MIN`].
    pub const FETCH_MAX: u8 = 0x0d;
    /// Fetch-min, unsigned, as [`FETCH_MIN`].
    pub const FETCH_UMIN: u8 = 0x0e;
    /// Fetch-max, unsigned, as [`FETCH_MIN`].
    pub const FETCH_UMAX: u8 = 0x0f;
    /// Operand width flag.
    pub const WIDTH32: u8 = 0x10;
    /// Read `arg1` bytes (1..=`BULK_MAX`) at `address` into the issuer's bulk-in page.
    pub const BULK_READ: u8 = 0x20;
    /// Write `arg1` bytes (1..=`BULK_MAX`) from the issuer's bulk-out page to `address`.
    pub const BULK_WRITE: u8 = 0x21;
    /// 128-bit compare-and-swap (16-byte aligned): the operands do not fit a packet, so they
    /// are in the issuer's bulk-out page, the expected value in bytes 0..16 and the new one in
    /// 16..32 (little-endian); if the 16 bytes equal the expected value they become the new
    /// one. Value bytes 0..16 = the old 16 bytes either way (OpenFAM's
    /// `fam_compare_swap(int128)`).
    pub const CAS128: u8 = 0x22;
    /// Copy `arg2` bytes (1..=[`COPY_MAX`](super::COPY_MAX), any alignment, may overlap) from
    /// GSAS address `arg1` to `address`, both on the node the request is sent to: done by that
    /// node's service, the bytes never travel to the issuer (OpenFAM's memory-side
    /// `fam_copy`). The issuer needs write on every destination page and read on every source
    /// page, as for a BULK_WRITE and a BULK_READ. A source on another node is `FAULT`.
    pub const COPY: u8 = 0x23;
    /// A batch of indexed element operations applied by the home's service (OpenFAM seed's
    /// memory-side `fam_queue_operation`: `OP_ADD_INDEXED`, `OP_SCATTER`, `OP_GATHER`): `arg1`
    /// = [`indexed::Batch::arg1`] (count, element size 4 or 8, kind), the entries in the
    /// issuer's bulk-out page ([`indexed`]), `address` any address of the node the request is
    /// sent to (it selects the home). Every entry is checked before any is applied; a GATHER's
    /// results go to the issuer's bulk-in page, one u64 per entry. Value = the count.
    pub const INDEXED: u8 = 0x24;
    /// AllocSharedPage: `arg1` zeroed pages (1..=`MAX_ALLOC_PAGES`) on the node the request is
    /// sent to, owned by the issuer's protection tree; value = address of the first. `arg2` is
    /// a tag the allocation keeps (0: none), for [`FREE_TAG`].
    /// (0x40, not 0x30: bit 4 is [`WIDTH32`], and 0x30 would read as `BULK_READ | WIDTH32`.)
    pub const ALLOC: u8 = 0x40;
    /// Frees the allocation that starts at `address` (the issuer's tree must own it).
    pub const FREE: u8 = 0x41;
    /// Frees the first allocation of the issuer's tree on the node the request is sent to
    /// (`address`: that node's address 0) whose tag is `arg1` (not 0): value = its address, 0
    /// when there is none. One per request (the pool is scanned once); repeat until 0. What a
    /// tree allocated and lost track of (an ALLOC answered after its issuer gave up, a writer
    /// that died between ALLOC and linking the page) is found again by its tag.
    pub const FREE_TAG: u8 = 0x42;
    /// Lets users other than the owning tree's threads use the allocation that starts at
    /// `address`: `arg1` = [`grant::Grant::arg1`] (uid, gid), `arg2` = the mode
    /// ([`grant::Grant`]). Set by the owning tree, or by an issuer with `CAP_SYS_ADMIN` (a
    /// service that outlived the tree that made the allocation). Mode 0, as at ALLOC: the tree
    /// only. Mappings of the pages by others are removed when it changes.
    pub const GRANT: u8 = 0x43;
    /// Approves a mapping by the issuer's node of `arg1` bytes (whole pages,
    /// 1..=[`MAX_MAP_PAGES`](super::MAX_MAP_PAGES) of them) from `address` (page-aligned) of
    /// the node the request is sent to, read-only (`arg2` 0) or writable (`arg2` 1): every page
    /// is checked as for a bulk read (or write) by this issuer, the issuer's node is recorded
    /// as a mapper of the allocation, and the approval goes to the issuer's approval word
    /// ([`remote_map::approval_slot`](super::remote_map::approval_slot)); value =
    /// [`remote_map::map_value`](super::remote_map::map_value). The issuer's kernel then maps
    /// the pages once (`mailbox::MMAP_REMOTE`). See docs/GSAS.md, "Mapping another node's pages".
    pub const MAP: u8 = 0x44;
    /// Keeps, for the issuer's tree, what the grant of the allocation that starts at
    /// `address` lets the issuer do now (`arg1` 1), across later GRANTs that take it away,
    /// until the tree lets it go (`arg1` 0) or the allocation is freed: an open file's access
    /// after a `chmod`, which is what OpenFAM's descriptors keep. Value = the bits kept
    /// ([`grant::READ`] | [`grant::WRITE`]; both for the tree's own allocation, where nothing
    /// is recorded); `DENIED` if the grant gives the issuer nothing; `NO_MEMORY` if the home
    /// keeps [`MAX_KEEPS`](super::MAX_KEEPS) already (for trees that still hold interfaces);
    /// `INVALID` for another `arg1`. Letting go of what is not kept is not an error.
    pub const KEEP: u8 = 0x45;
    /// remoteFork: start a program on the node the request is sent to, in the issuer's
    /// protection tree. The issuer's bulk-out page holds `arg1` bytes (1..=`fork::BLOB_MAX`),
    /// the program's absolute path and its arguments, each ended by a NUL ([`fork::check`]).
    /// Answered when the node's daemon has started it (value = the child id, see
    /// [`fork::child_id`]) or failed to (`EXEC_FAILED`, value = errno; `NO_DAEMON`).
    /// `address` is echoed (the node's address 0 plus a nonce of the issuer's choosing).
    /// (0x60: 0x50 has the bit of [`WIDTH32`].)
    pub const FORK: u8 = 0x60;
    /// Wait for child `address` (a child id): value = its wait status (as `waitpid`'s) once
    /// it exited, and the child is forgotten; `RUNNING` while it runs; `NO_CHILD` if the node
    /// knows no such child; `DENIED` for a child of another tree.
    pub const WAIT: u8 = 0x61;
    /// Who holds interface `arg1` (`0..USER_INTERFACES`) of the node the request is sent to
    /// (`address`: that node's address 0): value = [`IFACE_HELD`] | the interface's allocation
    /// count (32 bits) while a thread of the issuer's protection tree holds it, else 0 (free,
    /// or another tree's: nothing about other trees is told). Lets a tree find out that the
    /// holder of one of its locks died (docs/DHT.md, "A dead lock holder").
    pub const IFACE_STATE: u8 = 0x62;
    /// Set in an [`IFACE_STATE`] answer when a thread of the issuer's tree holds the interface.
    pub const IFACE_HELD: u64 = 1 << 63;

    /// Whether `opcode` names an operation (with an allowed width flag).
    pub const fn valid(opcode: u8) -> bool {
        match opcode & !WIDTH32 {
            READ | WRITE | FETCH_ADD | CAS | SWAP | FETCH_AND | FETCH_OR | FETCH_XOR
            | FETCH_MIN | FETCH_MAX | FETCH_UMIN | FETCH_UMAX => true,
            NOP | READ128 | READ256 | WRITE128 | CAS128 | BULK_READ | BULK_WRITE | COPY
            | INDEXED | ALLOC | FREE | FORK | WAIT | IFACE_STATE | FREE_TAG | GRANT | MAP
            | KEEP => opcode & WIDTH32 == 0,
            _ => false,
        }
    }

    /// Bytes an operation touches at its address (and must be aligned to), if fixed.
    pub const fn size(opcode: u8) -> Option<u64> {
        match opcode & !WIDTH32 {
            READ | WRITE | FETCH_ADD | CAS | SWAP | FETCH_AND | FETCH_OR | FETCH_XOR
            | FETCH_MIN | FETCH_MAX | FETCH_UMIN | FETCH_UMAX => {
                Some(if opcode & WIDTH32 != 0 { 4 } else { 8 })
            }
            READ128 | WRITE128 | CAS128 => Some(16),
            READ256 => Some(32),
            _ => None,
        }
    }
}

/// Largest bulk transfer per request (one page of the interface area).
pub const BULK_MAX: u64 = PAGE_SIZE;
/// Largest COPY per request: 16 pages, so that one copy holds the home's service for a
/// bounded time.
pub const COPY_MAX: u64 = 16 * PAGE_SIZE;
/// Largest allocation per request, in pages.
pub const MAX_ALLOC_PAGES: u64 = 1 << 16;
/// Most [`op::KEEP`]s a home records (a tree's keep of one allocation is one).
pub const MAX_KEEPS: usize = 256;
/// Largest mapping one [`op::MAP`] approves, in pages (an allocation's largest size).
pub const MAX_MAP_PAGES: u64 = MAX_ALLOC_PAGES;

/// Result of a request (response byte 4). Stable numbers, mapped to errno by the libraries.
pub mod status {
    pub const OK: u8 = 0;
    /// Unknown opcode, bad length or count (`EINVAL`).
    pub const INVALID: u8 = 1;
    /// Address not aligned to the operation's size (`EINVAL`).
    pub const UNALIGNED: u8 = 2;
    /// Not an allocated GSAS page of this node, or not this node's address (`EFAULT`).
    pub const FAULT: u8 = 3;
    /// The page belongs to another protection tree (`EACCES`); memory unchanged.
    pub const DENIED: u8 = 4;
    /// No free pages (`ENOMEM`).
    pub const NO_MEMORY: u8 = 5;
    /// The service has no memory pool (its lender did not answer, or the lease lapsed).
    pub const NO_POOL: u8 = 6;
    /// FORK: no daemon (`gsasd`) serves remoteFork on that node, or it went away before it
    /// started the program.
    pub const NO_DAEMON: u8 = 7;
    /// FORK: the program could not be started; value = the errno of `execve` (or of the setup
    /// before it), e.g. `ENOENT` for a path that does not exist.
    pub const EXEC_FAILED: u8 = 8;
    /// WAIT: the child has not exited yet (ask again).
    pub const RUNNING: u8 = 9;
    /// WAIT: that node knows no such child (never started, already waited for, or forgotten).
    pub const NO_CHILD: u8 = 10;
    /// FORK: the node's table of children is full of running ones.
    pub const BUSY: u8 = 11;
    /// ALLOC or FORK: the issuing user already has as many pages, or children, on that node
    /// as the node allows one user (`EDQUOT`; `unimem_gsas` `user_pages=`, `user_forks=`).
    pub const QUOTA: u8 = 12;
    /// The pool's lease lapsed on the home's clock (the home was frozen past it, or its lender
    /// is slow to answer) and is being renewed, or an ALLOC found no room and the pool is
    /// borrowing more: nothing was done; ask again (the client library does, until its
    /// timeout; then `EAGAIN`).
    pub const STALLED: u8 = 13;
}

/// remoteFork's request blob and child ids.
pub mod fork {
    use super::PAGE_SIZE;

    /// Largest blob (path and arguments, NULs included): the bulk-out page.
    pub const BLOB_MAX: usize = PAGE_SIZE as usize;
    /// Most strings in a blob (the path, then at most `MAX_ARGS - 1` arguments).
    pub const MAX_ARGS: usize = 256;
    /// Children a node keeps (running, or exited and not waited for yet).
    pub const MAX_CHILDREN: usize = 64;

    /// Why a blob is not a program to start.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum BlobError {
        /// Empty, or longer than [`BLOB_MAX`].
        Length,
        /// The last byte is not a NUL.
        Unterminated,
        /// A string (the path or an argument) is empty.
        Empty,
        /// The path does not start with `/`.
        Relative,
        /// More than [`MAX_ARGS`] strings.
        TooMany,
    }

    /// Checks a blob: `path\0arg1\0...argN\0`, at most [`BLOB_MAX`] bytes and [`MAX_ARGS`]
    /// strings, none empty, the path absolute. Returns the number of strings. Bounded by the
    /// blob's length.
    pub fn check(blob: &[u8]) -> Result<usize, BlobError> {
        if blob.is_empty() || blob.len() > BLOB_MAX {
            return Err(BlobError::Length);
        }
        if blob[blob.len() - 1] != 0 {
            return Err(BlobError::Unterminated);
        }
        if blob[0] != b'/' {
            return Err(if blob[0] == 0 {
                BlobError::Empty
            } else {
                BlobError::Relative
            });
        }
        let mut n = 0;
        for s in blob[..blob.len() - 1].split(|&b| b == 0) {
            if s.is_empty() {
                return Err(BlobError::Empty);
            }
            n += 1;
            if n > MAX_ARGS {
                return Err(BlobError::TooMany);
            }
        }
        Ok(n)
    }

    /// Writes the blob of `path` and `args` into `out`; its length. Checked as [`check`].
    pub fn encode(
        path: &[u8],
        args: &[&[u8]],
        out: &mut [u8; BLOB_MAX],
    ) -> Result<usize, BlobError> {
        let mut len = 0;
        for s in core::iter::once(&path).chain(args.iter()) {
            if s.contains(&0) {
                return Err(BlobError::Unterminated);
            }
            let end = len + s.len() + 1;
            if end > BLOB_MAX {
                return Err(BlobError::Length);
            }
            out[len..end - 1].copy_from_slice(s);
            out[end - 1] = 0;
            len = end;
        }
        check(&out[..len]).map(|_| len)
    }

    /// The id of child `serial` of node `node`: shaped as a GSAS address, so that a WAIT goes
    /// to the node that runs the child.
    pub const fn child_id(node: u16, serial: u32) -> u64 {
        super::addr(node, serial as u64)
    }

    /// The serial of a child id (its node is `node_of`).
    pub const fn serial(id: u64) -> u32 {
        super::offset_of(id) as u32
    }
}

/// The interface between the service and its node's remoteFork daemon (`/dev/unimem_gsas`,
/// `CAP_SYS_ADMIN`, one daemon at a time).
pub mod daemon {
    use super::fork::BLOB_MAX;

    /// ioctl type of `/dev/unimem_gsas`.
    pub const IOCTL_TYPE: u32 = b'G' as u32;
    /// `_IOR(IOCTL_TYPE, NR_JOB, Job)`: blocks until a FORK is queued (or a signal: `EINTR`;
    /// `O_NONBLOCK`: `EAGAIN`), then hands it over.
    pub const NR_JOB: u32 = 1;
    /// `_IOW(IOCTL_TYPE, NR_POST, Post)`: what became of a child.
    pub const NR_POST: u32 = 2;

    /// A program to start: child `serial` for tree `tree` (issued from `node`) as user `uid`,
    /// group `gid`. The identity is the issuer's, as its node's mailbox driver sealed it when the
    /// issuing thread's interface was allocated (the credentials of the opener of
    /// `/dev/unimem_mailbox`): never anything the issuer wrote.
    #[repr(C)]
    #[derive(Debug, Clone, Copy)]
    pub struct Job {
        pub serial: u32,
        pub tree: u32,
        pub node: u32,
        /// Bytes of `blob` used (checked with `fork::check` by the service).
        pub len: u32,
        pub uid: u32,
        pub gid: u32,
        /// [`JOB_ADMIN`] and nothing else yet.
        pub flags: u32,
        pub _reserved: u32,
        pub blob: [u8; BLOB_MAX],
    }

    const _: () = assert!(core::mem::size_of::<Job>() == 32 + BLOB_MAX);

    /// `Job::flags`: the issuer had `CAP_SYS_ADMIN` on its node. Only then may the child run as
    /// root (uid 0); a job with uid 0 without it is refused.
    pub const JOB_ADMIN: u32 = 1;

    /// `Post::kind`: the child runs (`value` = its pid).
    pub const STARTED: u32 = 1;
    /// `Post::kind`: it could not be started (`value` = errno).
    pub const FAILED: u32 = 2;
    /// `Post::kind`: it exited (`value` = its wait status).
    pub const EXITED: u32 = 3;

    #[repr(C)]
    #[derive(Debug, Clone, Copy, Default)]
    pub struct Post {
        pub serial: u32,
        pub kind: u32,
        pub value: u32,
        pub _reserved: u32,
    }

    const _: () = assert!(core::mem::size_of::<Post>() == 16);
}

/// The per-interface area in each node's own partition, after the mailbox rings and before the
/// KRAM lease record: [`AREA_PAGES`] pages for each of the node's interfaces.
/// Page 0: one [`RESPONSE_LEN`]-byte response slot per home node (written by that node's
/// service, read-only to the thread); page 1: bulk-in (data of `BULK_READ`, read-only to the
/// thread); page 2: bulk-out (data for `BULK_WRITE`, written by the thread, untrusted); page 3:
/// one [`SUBMIT_LEN`]-byte submission slot per home node (requests without a system call,
/// written by the thread, untrusted).
pub const AREA_OFFSET: u64 = (layout::RESERVED as u64).div_ceil(PAGE_SIZE) * PAGE_SIZE;
/// Pages per interface.
pub const AREA_PAGES: u64 = 4;
/// Page index of the response slots.
pub const RESPONSES_PAGE: u64 = 0;
/// Page index of bulk-in.
pub const BULK_IN_PAGE: u64 = 1;
/// Page index of bulk-out.
pub const BULK_OUT_PAGE: u64 = 2;
/// Page index of the submission slots.
pub const SUBMIT_PAGE: u64 = 3;
/// End of the areas of all interfaces.
pub const AREA_END: u64 = AREA_OFFSET + INTERFACES as u64 * AREA_PAGES * PAGE_SIZE;
/// Bytes of one response slot.
pub const RESPONSE_LEN: usize = 64;

const _: () = assert!(owner::TABLE_END <= crate::lease_record::RECORD_OFFSET);
const _: () = assert!(crate::gas::MAX_NODES as usize * RESPONSE_LEN <= PAGE_SIZE as usize);
const _: () = assert!(crate::gas::MAX_NODES as usize * SUBMIT_LEN <= PAGE_SIZE as usize);

/// Partition offset of page `page` of interface `iface`'s area.
pub const fn area_page(iface: u32, page: u64) -> u64 {
    AREA_OFFSET + (iface as u64 * AREA_PAGES + page) * PAGE_SIZE
}

/// Partition offset of the response slot that node `home`'s service writes for `iface`.
pub const fn response_slot(iface: u32, home: u32) -> u64 {
    area_page(iface, RESPONSES_PAGE) + home as u64 * RESPONSE_LEN as u64
}

/// Byte offset, in an interface's response page, of its wake word (a little-endian `u32`):
/// the issuer node's mailbox driver sets it to [`WAKE_ASLEEP`] while the interface's thread
/// sleeps in `WAIT_ANSWER` (`mailbox::NR_WAIT_ANSWER`) and clears it when it wakes. A home's
/// service that has written an answer for the interface rings the issuer node's doorbell if it
/// reads [`WAKE_ASLEEP`] there. Only the issuer's driver writes it (the thread maps the page
/// read-only); to the home it is a hint: a wrong one costs a doorbell or a later look.
/// After the response slots and the MAP approval words (`remote_map::APPROVALS`).
pub const WAKE_OFFSET: usize = remote_map::APPROVALS as usize + crate::gas::MAX_NODES as usize * 8;
/// The wake word of a thread asleep for an answer.
pub const WAKE_ASLEEP: u32 = 0x5741_4b45;

const _: () = assert!(WAKE_OFFSET + 4 <= PAGE_SIZE as usize);
const _: () = assert!(WAKE_OFFSET % 4 == 0);

/// Partition offset of interface `iface`'s wake word ([`WAKE_OFFSET`]).
pub const fn wake_word(iface: u32) -> u64 {
    area_page(iface, RESPONSES_PAGE) + WAKE_OFFSET as u64
}

/// Bytes of one submission slot.
pub const SUBMIT_LEN: usize = 64;
/// Byte offset of a submission slot's `seq` (little-endian u32, written last, with release
/// ordering) and of its request (the 25 payload bytes of a packet).
pub const SUBMIT_SEQ_OFFSET: usize = 0;
pub const SUBMIT_PAYLOAD_OFFSET: usize = 8;

/// Partition offset of the slot in which `iface` leaves requests for node `home`'s service.
/// The home's mailbox finds a request there by `seq` changing, while it polls (or when
/// rung: `mailbox::NR_KICK`), and seals it with the header of the slot's place: this node,
/// `iface`, and the tree the [`owner`] table names. The thread cannot choose the header.
pub const fn submit_slot(iface: u32, home: u32) -> u64 {
    area_page(iface, SUBMIT_PAGE) + home as u64 * SUBMIT_LEN as u64
}

/// The owner table: one page after the areas, written only by the node's own mailbox driver
/// (no thread can map it), read by the homes that take requests from the submission slots.
/// Word 0 (u64): bit `i` set while interface `i` has an owner. Entry `i` at
/// `ENTRIES + i * ENTRY_LEN`: a u64 [`owner::word`] (valid bit, publication number, tree), then
/// the u32 `base`: the slot `seq`s when the entry was published. A home takes a slot's request
/// only if `seq` is neither `base` (a request of a previous owner, or of the same owner under
/// its previous tree) nor the last value it took, and the entry word is the same before and
/// after it copied the request (so it belongs to the owner the word names).
pub mod owner {
    use super::{AREA_END, PAGE_SIZE};

    /// Partition offset of the table.
    pub const TABLE_OFFSET: u64 = AREA_END;
    /// End of the table.
    pub const TABLE_END: u64 = TABLE_OFFSET + PAGE_SIZE;
    /// Offset of entry 0 in the table.
    pub const ENTRIES: u64 = 64;
    /// Bytes per entry.
    pub const ENTRY_LEN: u64 = 16;
    /// Offset of `base` in an entry.
    pub const BASE_OFFSET: u64 = 8;
    /// Bit 63 of an entry word: the interface has an owner.
    pub const VALID: u64 = 1 << 63;

    const _: () = assert!(ENTRIES + super::INTERFACES as u64 * ENTRY_LEN <= CREDS);

    /// Offset of credentials 0 in the table: per interface, the [`Creds`] of its owner,
    /// written before the entry word is published (so a home that read a valid word under a
    /// claim reads the credentials of the owner that word names).
    pub const CREDS: u64 = 2048;
    /// Bytes per credentials.
    pub const CREDS_LEN: u64 = 16;

    const _: () = assert!(CREDS + super::INTERFACES as u64 * CREDS_LEN <= PAGE_SIZE);

    /// Partition offset of the credentials of interface `iface`'s owner.
    pub const fn creds(iface: u32) -> u64 {
        TABLE_OFFSET + CREDS + iface as u64 * CREDS_LEN
    }

    /// [`Creds::flags`]: the owner had `CAP_SYS_ADMIN` when it allocated the interface.
    pub const ADMIN: u32 = 1;

    /// Who owns an interface, as its node's driver saw the allocating thread: effective user
    /// and group id, and [`ADMIN`]. Ids are those of the issuing node; the cluster is assumed
    /// to share one user database (docs/SECURITY.md).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct Creds {
        pub uid: u32,
        pub gid: u32,
        pub flags: u32,
    }

    impl Creds {
        /// Little-endian uid, gid, flags, then 4 zero bytes.
        pub fn encode(&self) -> [u8; CREDS_LEN as usize] {
            let mut b = [0u8; CREDS_LEN as usize];
            b[0..4].copy_from_slice(&self.uid.to_le_bytes());
            b[4..8].copy_from_slice(&self.gid.to_le_bytes());
            b[8..12].copy_from_slice(&self.flags.to_le_bytes());
            b
        }

        /// Any bytes decode (the table is written only by a trusted driver); unknown flags are
        /// dropped, so a garbled table never grants more than [`ADMIN`].
        pub fn decode(b: &[u8; CREDS_LEN as usize]) -> Self {
            let word = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
            Self {
                uid: word(0),
                gid: word(4),
                flags: word(8) & ADMIN,
            }
        }
    }

    /// Partition offset of entry `iface`.
    pub const fn entry(iface: u32) -> u64 {
        TABLE_OFFSET + ENTRIES + iface as u64 * ENTRY_LEN
    }

    /// The entry word of an interface owned by `tree`, published as number `publication`.
    pub const fn word(publication: u32, tree: u32) -> u64 {
        VALID | (publication as u64) << 24 | (tree & 0xff_ffff) as u64
    }

    /// The tree a word names, if it is valid (tree 0 is nobody's: not valid).
    pub const fn tree(word: u64) -> Option<u32> {
        let tree = (word & 0xff_ffff) as u32;
        if word & VALID == 0 || tree == 0 {
            None
        } else {
            Some(tree)
        }
    }
}

/// A request as the thread writes it (the packet's payload).
pub fn request(opcode: u8, address: u64, arg1: u64, arg2: u64) -> Payload {
    Payload {
        opcode,
        address,
        arg1,
        arg2,
    }
}

/// Why a payload is not a request the service can apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestError {
    /// Unknown opcode or width.
    Opcode(u8),
    /// Not aligned to the operation's size.
    Unaligned,
}

impl RequestError {
    /// The status the service answers with.
    pub const fn status(self) -> u8 {
        match self {
            RequestError::Opcode(_) => status::INVALID,
            RequestError::Unaligned => status::UNALIGNED,
        }
    }
}

/// Checks the parts of a request that need no memory state: opcode and alignment.
pub fn check(p: &Payload) -> Result<(), RequestError> {
    if !op::valid(p.opcode) || (p.opcode == op::KEEP && p.arg1 > 1) {
        return Err(RequestError::Opcode(p.opcode));
    }
    match op::size(p.opcode) {
        Some(n) if p.address % n != 0 => Err(RequestError::Unaligned),
        _ => Ok(()),
    }
}

/// A response slot. The service writes everything else, then `seq` (little-endian, release);
/// the thread waits for `seq` to move past the value it read before sending, then checks the
/// echoed opcode and address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Response {
    /// Responses this service has written to this slot (wrapping).
    pub seq: u32,
    pub status: u8,
    /// Echo of the request's opcode and address.
    pub opcode: u8,
    pub address: u64,
    /// Result bytes: a word in bytes 0..8 (little-endian), READ128 in 0..16, READ256 in 0..32.
    pub value: [u8; 32],
}

/// Byte offset of `seq` in a slot.
pub const SEQ_OFFSET: usize = 0;

impl Response {
    pub fn encode(&self) -> [u8; RESPONSE_LEN] {
        let mut b = [0u8; RESPONSE_LEN];
        b[0..4].copy_from_slice(&self.seq.to_le_bytes());
        b[4] = self.status;
        b[5] = self.opcode;
        b[8..16].copy_from_slice(&self.address.to_le_bytes());
        b[16..48].copy_from_slice(&self.value);
        b
    }

    /// Decodes a slot; every bit pattern is a response (the reader checks the echo).
    pub fn decode(b: &[u8; RESPONSE_LEN]) -> Self {
        let mut value = [0u8; 32];
        value.copy_from_slice(&b[16..48]);
        let mut a = [0u8; 8];
        a.copy_from_slice(&b[8..16]);
        Response {
            seq: u32::from_le_bytes([b[0], b[1], b[2], b[3]]),
            status: b[4],
            opcode: b[5],
            address: u64::from_le_bytes(a),
            value,
        }
    }

    /// The first word of the value.
    pub fn word(&self) -> u64 {
        let mut a = [0u8; 8];
        a.copy_from_slice(&self.value[..8]);
        u64::from_le_bytes(a)
    }
}

/// Who besides its tree may use an allocation ([`op::GRANT`]): like a file's owner, group and
/// mode, checked against the issuer's credentials as its node's driver sealed them
/// ([`owner::Creds`]; the group is the effective gid, not supplementary groups).
pub mod grant {
    use super::{op, owner::Creds};

    /// Mode bit: reads (READ, READ128, READ256, BULK_READ).
    pub const READ: u32 = 4;
    /// Mode bit: writes (WRITE, WRITE128, BULK_WRITE); atomics need READ and WRITE.
    pub const WRITE: u32 = 2;
    /// The mode bits that mean something: `rw-` for owner, group and others (`x` is ignored).
    pub const MODE_MASK: u32 = 0o777;

    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub struct Grant {
        pub uid: u32,
        pub gid: u32,
        /// POSIX permission bits (0o640: owner reads and writes, group reads).
        pub mode: u32,
    }

    impl Grant {
        /// From a GRANT request's `arg1` and `arg2`; `None` for mode bits outside
        /// [`MODE_MASK`].
        pub const fn from_args(arg1: u64, arg2: u64) -> Option<Self> {
            if arg2 & !(MODE_MASK as u64) != 0 {
                return None;
            }
            Some(Self {
                uid: (arg1 >> 32) as u32,
                gid: arg1 as u32,
                mode: arg2 as u32,
            })
        }

        /// A GRANT request's `arg1`.
        pub const fn arg1(&self) -> u64 {
            (self.uid as u64) << 32 | self.gid as u64
        }

        /// Whether `c` may do what `need` ([`READ`] | [`WRITE`]) says: the owner's bits if its
        /// uid is `uid`, else the group's if its gid is `gid`, else the others' (as a file's
        /// mode: an owner denied is not let in by the group bits). Nothing for `need` 0.
        pub const fn allows(&self, c: &Creds, need: u32) -> bool {
            let bits = self.bits_for(c);
            need != 0 && bits & need == need
        }

        /// The mode bits that apply to `c` ([`READ`] | [`WRITE`] | 1, as a file's `rwx`).
        pub const fn bits_for(&self, c: &Creds) -> u32 {
            let shift = if c.uid == self.uid {
                6
            } else if c.gid == self.gid {
                3
            } else {
                0
            };
            (self.mode >> shift) & 7
        }

        /// Whether this grant lets everybody do at least what `old` let them: then a change
        /// from `old` to it need not remove mappings made under `old`. Users fall in nine
        /// classes by whether their uid and gid are either grant's; one of each decides.
        pub const fn covers(&self, old: &Grant) -> bool {
            let uids = [self.uid, old.uid, other_than(self.uid, old.uid)];
            let gids = [self.gid, old.gid, other_than(self.gid, old.gid)];
            let mut i = 0;
            while i < 9 {
                let c = Creds {
                    uid: uids[i / 3],
                    gid: gids[i % 3],
                    flags: 0,
                };
                let mut need = 1;
                while need < 8 {
                    if old.allows(&c, need) && !self.allows(&c, need) {
                        return false;
                    }
                    need += 1;
                }
                i += 1;
            }
            true
        }
    }

    /// What a mapping needs of a granted allocation: [`READ`], and [`WRITE`] if writable (a
    /// MAP request's `arg2`, as a thread's mapping of its own node's pages).
    pub const fn map_need(write: bool) -> u32 {
        if write {
            READ | WRITE
        } else {
            READ
        }
    }

    /// An id that is neither `a` nor `b`.
    const fn other_than(a: u32, b: u32) -> u32 {
        let mut x = 0;
        while x == a || x == b {
            x += 1;
        }
        x
    }

    /// What an operation needs of a granted allocation; 0 for operations a grant never allows
    /// (FREE, FREE_TAG, GRANT, ALLOC and the rest stay the tree's). For [`op::MAP`] this is
    /// the read-only mapping's need; a writable one needs [`map_need`]`(true)`. For
    /// [`op::INDEXED`] it depends on the batch's kind: [`indexed::Batch::need`](super::indexed::Batch::need).
    pub const fn need(opcode: u8) -> u32 {
        match opcode & !op::WIDTH32 {
            op::READ | op::READ128 | op::READ256 | op::BULK_READ | op::MAP => READ,
            // COPY: what its destination needs; the source is checked for READ apart.
            op::WRITE | op::WRITE128 | op::BULK_WRITE | op::COPY => WRITE,
            op::FETCH_ADD
            | op::CAS
            | op::SWAP
            | op::FETCH_AND
            | op::FETCH_OR
            | op::FETCH_XOR
            | op::FETCH_MIN
            | op::FETCH_MAX
            | op::FETCH_UMIN
            | op::FETCH_UMAX
            | op::CAS128 => READ | WRITE,
            _ => 0,
        }
    }
}

/// [`op::INDEXED`]: a batch of element operations of one kind on addresses of the node the
/// request is sent to, applied by its service (the OpenFAM seed's memory-side operations,
/// `fam_queue_operation` / `fam_aggregate_flush`; docs/GSAS.md, "Indexed batches").
///
/// The request: `arg1` = `count | elem_size << 32 | kind << 40` (every other bit 0), `address`
/// any address of the home (it selects the node; its offset is ignored), `arg2` 0. The entries,
/// in the issuer's bulk-out page from offset 0, little-endian:
/// - [`ADD`] and [`SCATTER`]: `count` × (u64 GSAS address, u64 value), 16 bytes each, at most
///   [`MAX_PAIRS`]; ADD adds the value (its low 32 bits for 4-byte elements) to the element,
///   wrapping; SCATTER stores it.
/// - [`GATHER`]: `count` × u64 GSAS address, at most [`MAX_ADDRS`]; the elements are written
///   to the issuer's bulk-in page from offset 0, one u64 each (zero-extended for 4-byte
///   elements), as a BULK_READ returns data.
///
/// - [`SCATTER_IF`]: as SCATTER, but entry 0 is a guard (GSAS address, expected value): the
///   other entries are stored only if the guard's element equals the expected value (its low
///   32 bits for 4-byte elements), else nothing is. A multi-word compare-and-swap on one home,
///   so that a writer publishes a change whose words all depend on one without locking it
///   first (one request instead of a CAS, the stores and an unlock; docs/DHT.md).
///
/// Every entry is checked before any is applied: its address on the home (`FAULT`), in the
/// pool and allocated (`FAULT`), aligned to the element size (`UNALIGNED`), and the issuer may
/// act on it ([`Batch::need`]: its tree's pages or a grant allowing it; `DENIED`). A failed
/// batch changes nothing. Entries are applied in order (an ADD to one element twice adds
/// twice; the last SCATTER to an element wins), all under one hold of the service lock.
///
/// The answer's value: bytes 0..8 the entries applied (the count; for SCATTER_IF 0 when the
/// guard did not match, and the count when it did), bytes 8..16 for SCATTER_IF the guard's
/// element as found ([`guard_found`]).
pub mod indexed {
    use super::{grant, node_of, offset_of, status, BULK_MAX};

    /// Kind: add each value to its element (integer, wrapping).
    pub const ADD: u8 = 0;
    /// Kind: store each value in its element.
    pub const SCATTER: u8 = 1;
    /// Kind: read each element.
    pub const GATHER: u8 = 2;
    /// Kind: store entries 1.. if entry 0's element holds entry 0's value.
    pub const SCATTER_IF: u8 = 3;
    /// Bytes of an ADD or SCATTER entry: address, value.
    pub const PAIR_LEN: usize = 16;
    /// Bytes of a GATHER entry: address.
    pub const ADDR_LEN: usize = 8;
    /// Most ADD or SCATTER entries per request (one bulk-out page).
    pub const MAX_PAIRS: u32 = (BULK_MAX as usize / PAIR_LEN) as u32;
    /// Most GATHER entries per request (one bulk-out page, and one bulk-in page of results).
    pub const MAX_ADDRS: u32 = (BULK_MAX as usize / ADDR_LEN) as u32;
    /// Bytes of a GATHER result per entry.
    pub const RESULT_LEN: usize = 8;

    const COUNT_MASK: u64 = 0xffff_ffff;
    const SIZE_SHIFT: u32 = 32;
    const KIND_SHIFT: u32 = 40;
    const RESERVED: u64 = !(COUNT_MASK | 0xff << SIZE_SHIFT | 0xff << KIND_SHIFT);

    /// What an INDEXED request does: `count` entries of kind `kind` on elements of
    /// `elem_size` bytes.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct Batch {
        pub kind: u8,
        pub elem_size: u8,
        pub count: u32,
    }

    /// The most entries of kind `kind` per request (0 for no kind).
    pub const fn max(kind: u8) -> u32 {
        match kind {
            ADD | SCATTER | SCATTER_IF => MAX_PAIRS,
            GATHER => MAX_ADDRS,
            _ => 0,
        }
    }

    /// From an INDEXED answer's value: (entries applied, the guard's element as found); the
    /// second is meaningful for [`SCATTER_IF`] only.
    pub fn guard_found(value: &[u8; 32]) -> (u64, u64) {
        let word = |o: usize| {
            let mut a = [0u8; 8];
            a.copy_from_slice(&value[o..o + 8]);
            u64::from_le_bytes(a)
        };
        (word(0), word(8))
    }

    /// Whether the guard's element `found` equals `expected` on elements of `elem_size`
    /// bytes (the low 32 bits of both for 4).
    pub const fn guard_holds(elem_size: u8, found: u64, expected: u64) -> bool {
        if elem_size == 4 {
            found as u32 == expected as u32
        } else {
            found == expected
        }
    }

    impl Batch {
        /// A batch, if it is one the service applies: a known kind, elements of 4 or 8 bytes,
        /// 1..=[`max`]`(kind)` entries.
        pub const fn new(kind: u8, elem_size: u8, count: u32) -> Option<Self> {
            if !matches!(elem_size, 4 | 8) || count == 0 || count > max(kind) {
                return None;
            }
            Some(Self {
                kind,
                elem_size,
                count,
            })
        }

        /// The request's `arg1`.
        pub const fn arg1(&self) -> u64 {
            self.count as u64
                | (self.elem_size as u64) << SIZE_SHIFT
                | (self.kind as u64) << KIND_SHIFT
        }

        /// From a request's `arg1`: `INVALID` for reserved bits set, an unknown kind, an
        /// element size other than 4 or 8, or a count outside 1..=[`max`]`(kind)`.
        pub const fn from_arg1(arg1: u64) -> Result<Self, u8> {
            if arg1 & RESERVED != 0 {
                return Err(status::INVALID);
            }
            match Self::new(
                (arg1 >> KIND_SHIFT) as u8,
                (arg1 >> SIZE_SHIFT) as u8,
                (arg1 & COUNT_MASK) as u32,
            ) {
                Some(b) => Ok(b),
                None => Err(status::INVALID),
            }
        }

        /// Bytes of one entry in the bulk-out page.
        pub const fn entry_len(&self) -> usize {
            if self.kind == GATHER {
                ADDR_LEN
            } else {
                PAIR_LEN
            }
        }

        /// Bytes of the bulk-out page the entries take (at most `BULK_MAX`).
        pub const fn operands_len(&self) -> usize {
            self.count as usize * self.entry_len()
        }

        /// Bytes of the bulk-in page a GATHER's results take (0 for the other kinds).
        pub const fn results_len(&self) -> usize {
            if self.kind == GATHER {
                self.count as usize * RESULT_LEN
            } else {
                0
            }
        }

        /// SCATTER_IF's verdict on its guard: `found` (the guard's element) against `expected`
        /// (entry 0's value), written into the answer's `value` as the service answers (bytes
        /// 8..16 the guard as found; bytes 0..8 the count, or 0 when it does not hold).
        /// Whether the other entries are to be stored.
        pub fn judge_guard(&self, found: u64, expected: u64, value: &mut [u8; 32]) -> bool {
            let holds = guard_holds(self.elem_size, found, expected);
            let applied = if holds { u64::from(self.count) } else { 0 };
            value[..8].copy_from_slice(&applied.to_le_bytes());
            value[8..16].copy_from_slice(&found.to_le_bytes());
            holds
        }

        /// What the issuer needs of a granted allocation (`grant::READ` / `grant::WRITE`):
        /// GATHER reads; ADD and SCATTER write (ADD returns nothing, so it needs no read);
        /// SCATTER_IF reads (its answer shows the guard) and writes.
        pub const fn need(&self) -> u32 {
            match self.kind {
                GATHER => grant::READ,
                SCATTER_IF => grant::READ | grant::WRITE,
                _ => grant::WRITE,
            }
        }

        /// Entry `i` (address, value; value 0 for GATHER) of `operands`, the bulk-out bytes;
        /// `None` past the count or past the bytes given.
        pub fn entry(&self, operands: &[u8], i: usize) -> Option<(u64, u64)> {
            if i >= self.count as usize {
                return None;
            }
            let at = i * self.entry_len();
            let word = |o: usize| -> Option<u64> {
                let b = operands.get(o..o + 8)?;
                let mut a = [0u8; 8];
                a.copy_from_slice(b);
                Some(u64::from_le_bytes(a))
            };
            let addr = word(at)?;
            let value = if self.kind == GATHER {
                0
            } else {
                word(at + 8)?
            };
            Some((addr, value))
        }

        /// Writes entry `i` into `operands` (a bulk-out page); false if it does not fit.
        pub fn put_entry(&self, operands: &mut [u8], i: usize, addr: u64, value: u64) -> bool {
            let len = self.entry_len();
            match operands.get_mut(i * len..(i + 1) * len) {
                Some(e) if i < self.count as usize => {
                    e[..8].copy_from_slice(&addr.to_le_bytes());
                    if len == PAIR_LEN {
                        e[8..].copy_from_slice(&value.to_le_bytes());
                    }
                    true
                }
                _ => false,
            }
        }

        /// The partition offset of an entry's address, if it is `node`'s (`FAULT`) and aligned
        /// to the element size (`UNALIGNED`). The pool and the pages are the service's checks.
        pub const fn check_address(&self, node: u16, addr: u64) -> Result<u64, u8> {
            if node_of(addr) != node {
                return Err(status::FAULT);
            }
            if addr % self.elem_size as u64 != 0 {
                return Err(status::UNALIGNED);
            }
            Ok(offset_of(addr))
        }

        /// The element after ADD of `value` to `old` (both masked to the element size).
        pub const fn add(&self, old: u64, value: u64) -> u64 {
            let sum = old.wrapping_add(value);
            if self.elem_size == 4 {
                sum & 0xffff_ffff
            } else {
                sum
            }
        }
    }
}

/// Mapping another node's GSAS pages ([`op::MAP`], `mailbox::MMAP_REMOTE`; docs/GSAS.md,
/// "Mapping another node's pages"): the approval the home writes for the issuer's kernel, and
/// the 64-bit kernel messages (service `mailbox::service::GSAS`) by which a home has the
/// mappers of an allocation it frees or narrows remove their mappings.
pub mod remote_map {
    use super::{area_page, status, MAX_MAP_PAGES, PAGE_SIZE, RESPONSES_PAGE, RESPONSE_LEN};
    use crate::gas::MAX_NODES;

    /// Byte offset, in an interface's responses page, of its approval words: one u64 per home
    /// node, after the response slots. Only the homes' kernels write them; the thread maps the
    /// page read-only. One aligned 64-bit word, so a reader never sees half of two approvals
    /// (a response slot is written word by word, and a thread can have the home write it while
    /// its kernel reads it).
    pub const APPROVALS: u64 = 1024;

    const _: () = assert!(MAX_NODES as u64 * RESPONSE_LEN as u64 <= APPROVALS);
    const _: () = assert!(APPROVALS + MAX_NODES as u64 * 8 <= PAGE_SIZE);

    /// Partition offset (in the issuer's partition) of the approval word that node `home`
    /// writes for `iface`.
    pub const fn approval_slot(iface: u32, home: u32) -> u64 {
        area_page(iface, RESPONSES_PAGE) + APPROVALS + home as u64 * 8
    }

    /// Bit 63 of an approval word: it approves something (0: nothing, or consumed).
    pub const VALID: u64 = 1 << 63;
    /// Bit 62: the mapping may be writable.
    pub const WRITE: u64 = 1 << 62;
    const PAGES_SHIFT: u32 = 36;
    /// Bits 0..36: the partition page index of the first page (partition offsets are 48 bits).
    const PAGE_MASK: u64 = (1 << PAGES_SHIFT) - 1;
    /// Bits 36..53: the page count (1..=`MAX_MAP_PAGES`).
    const COUNT_MASK: u64 = (1 << 17) - 1;
    const RESERVED: u64 = !(VALID | WRITE | PAGE_MASK | COUNT_MASK << PAGES_SHIFT);

    /// A home's approval of a mapping of `pages` pages from partition page `first_page` of its
    /// partition, by the interface whose approval word holds it.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct Approval {
        pub first_page: u64,
        pub pages: u64,
        pub write: bool,
    }

    impl Approval {
        /// The approval word.
        pub const fn encode(&self) -> u64 {
            VALID
                | if self.write { WRITE } else { 0 }
                | (self.pages & COUNT_MASK) << PAGES_SHIFT
                | (self.first_page & PAGE_MASK)
        }

        /// An approval word: `None` for 0 (nothing approved, or consumed), reserved bits set,
        /// or a count of 0 or above [`MAX_MAP_PAGES`].
        pub const fn decode(word: u64) -> Option<Self> {
            let pages = word >> PAGES_SHIFT & COUNT_MASK;
            if word & VALID == 0 || word & RESERVED != 0 || pages == 0 || pages > MAX_MAP_PAGES {
                return None;
            }
            Some(Self {
                first_page: word & PAGE_MASK,
                pages,
                write: word & WRITE != 0,
            })
        }

        /// Whether it approves mapping `len` bytes from partition offset `offset`
        /// (page-aligned), writable if `write`: the same first page, no more pages.
        pub const fn allows(&self, offset: u64, len: u64, write: bool) -> bool {
            offset % PAGE_SIZE == 0
                && offset / PAGE_SIZE == self.first_page
                && len != 0
                && len.div_ceil(PAGE_SIZE) <= self.pages
                && (self.write || !write)
        }

        /// Whether it names any of `pages` pages from partition page `first_page`.
        pub const fn overlaps(&self, first_page: u64, pages: u64) -> bool {
            self.first_page < first_page.saturating_add(pages)
                && first_page < self.first_page + self.pages
        }
    }

    /// Checks a MAP request's address, length and mode as the home does before it looks at its
    /// pages: the approval it would write (`UNALIGNED` for an address not page-aligned,
    /// `INVALID` for a length of no whole pages or more than [`MAX_MAP_PAGES`], or `arg2` not
    /// 0 or 1).
    pub const fn check(address: u64, arg1: u64, arg2: u64) -> Result<Approval, u8> {
        let offset = super::offset_of(address);
        if offset % PAGE_SIZE != 0 {
            return Err(status::UNALIGNED);
        }
        if arg1 == 0 || arg1 % PAGE_SIZE != 0 || arg1 / PAGE_SIZE > MAX_MAP_PAGES || arg2 > 1 {
            return Err(status::INVALID);
        }
        Ok(Approval {
            first_page: offset / PAGE_SIZE,
            pages: arg1 / PAGE_SIZE,
            write: arg2 == 1,
        })
    }

    /// The value of a MAP answer: the length, and bit 63 if writable.
    pub const fn map_value(len: u64, write: bool) -> u64 {
        len | if write { 1 << 63 } else { 0 }
    }

    /// Kernel message opcodes of service `mailbox::service::GSAS` (the 4 most significant
    /// bits; 1, 2 and 4 are the KRAM lender's OFFER, ACK and REVOKE for the pool).
    /// Home to mapper: remove every mapping of the range and every unconsumed approval of it,
    /// then answer [`ZAP_ACK`] with the same `seq`.
    pub const ZAP: u8 = 0xa;
    /// Mapper to home: every ZAP this node sent before the one numbered `seq` (the mapper
    /// takes a sender's messages in order) has been done too. The range is the ZAP's, echoed.
    pub const ZAP_ACK: u8 = 0xb;

    const ZAP_PAGE_BITS: u32 = 28;
    const ZAP_COUNT_SHIFT: u32 = 28;
    const ZAP_SEQ_SHIFT: u32 = 44;
    /// Most pages one ZAP names (an allocation's largest size).
    pub const ZAP_MAX_PAGES: u64 = 1 << 16;
    /// Partition pages a ZAP can name: partitions of up to 1 TiB.
    pub const ZAP_PAGE_LIMIT: u64 = 1 << ZAP_PAGE_BITS;

    /// A ZAP or ZAP_ACK: `pages` pages from partition page `first_page` of the home's
    /// partition (the home is the sender of a ZAP, the receiver of its ACK), and the home's
    /// number for the ZAP (wrapping; the home keeps more bits).
    /// `opcode` in bits 60..64, `seq` in 44..60, `pages - 1` in 28..44, `first_page` in 0..28.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct Zap {
        pub opcode: u8,
        pub seq: u16,
        pub first_page: u64,
        pub pages: u64,
    }

    /// Why a word is not a ZAP or ZAP_ACK.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum ZapError {
        Opcode(u8),
    }

    impl Zap {
        /// `None` if `first_page` or `pages` do not fit, or `pages` is 0.
        pub const fn new(opcode: u8, seq: u16, first_page: u64, pages: u64) -> Option<Self> {
            if first_page >= ZAP_PAGE_LIMIT || pages == 0 || pages > ZAP_MAX_PAGES {
                return None;
            }
            Some(Self {
                opcode,
                seq,
                first_page,
                pages,
            })
        }

        pub const fn encode(&self) -> u64 {
            (self.opcode as u64 & 0xf) << 60
                | (self.seq as u64) << ZAP_SEQ_SHIFT
                | ((self.pages - 1) & (ZAP_MAX_PAGES - 1)) << ZAP_COUNT_SHIFT
                | self.first_page & (ZAP_PAGE_LIMIT - 1)
        }

        /// Every word with a ZAP or ZAP_ACK opcode decodes (every field's bits are meaningful).
        pub const fn decode(word: u64) -> Result<Self, ZapError> {
            let opcode = (word >> 60) as u8;
            if opcode != ZAP && opcode != ZAP_ACK {
                return Err(ZapError::Opcode(opcode));
            }
            Ok(Self {
                opcode,
                seq: (word >> ZAP_SEQ_SHIFT) as u16,
                first_page: word & (ZAP_PAGE_LIMIT - 1),
                pages: (word >> ZAP_COUNT_SHIFT & (ZAP_MAX_PAGES - 1)) + 1,
            })
        }

        /// The ACK that answers this ZAP.
        pub const fn ack(&self) -> Self {
            Self {
                opcode: ZAP_ACK,
                ..*self
            }
        }
    }
}

/// Protection ids: unique across the cluster (seed 2.2.2 used thread ids, which repeat on
/// every node). 24 bits: the node that created the tree in bits 16..24, a per-node serial
/// number (never 0) in bits 0..16.
pub mod prot {
    /// The id of the `serial`-th tree made on `node`.
    pub const fn new(node: u32, serial: u16) -> u32 {
        (node & 0xff) << 16 | serial as u32
    }

    /// The node that made tree `id`.
    pub const fn node(id: u32) -> u32 {
        (id >> 16) & 0xff
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::{Header, Packet};

    #[test]
    fn grants_read_like_a_files_mode() {
        use grant::{Grant, READ, WRITE};
        let g = Grant::from_args(
            Grant {
                uid: 1000,
                gid: 100,
                mode: 0,
            }
            .arg1(),
            0o640,
        )
        .unwrap();
        assert_eq!((g.uid, g.gid, g.mode), (1000, 100, 0o640));
        let user = |uid, gid| owner::Creds { uid, gid, flags: 0 };
        assert!(g.allows(&user(1000, 5), READ | WRITE));
        assert!(g.allows(&user(1001, 100), READ));
        assert!(!g.allows(&user(1001, 100), WRITE));
        assert!(!g.allows(&user(1001, 101), READ));
        // The owner's bits decide for the owner, as with files.
        let g = Grant {
            uid: 1000,
            gid: 100,
            mode: 0o064,
        };
        assert!(!g.allows(&user(1000, 100), READ));
        assert!(g.allows(&user(1002, 7), READ));
        // Admin is nobody special, and no operation needs nothing.
        let admin = owner::Creds {
            uid: 0,
            gid: 0,
            flags: owner::ADMIN,
        };
        assert!(!g.allows(&admin, WRITE));
        assert!(!g.allows(&user(1000, 100), 0));
    }

    #[test]
    fn a_grant_covers_another_only_when_nobody_loses() {
        use grant::Grant;
        let g = |uid, gid, mode| Grant { uid, gid, mode };
        assert!(g(1, 2, 0o640).covers(&g(1, 2, 0o640)));
        assert!(g(1, 2, 0o644).covers(&g(1, 2, 0o640)));
        assert!(g(1, 2, 0o666).covers(&g(1, 2, 0o400)));
        assert!(g(5, 6, 0o640).covers(&Grant::default()));
        assert!(!g(1, 2, 0o600).covers(&g(1, 2, 0o640)));
        assert!(!g(1, 2, 0o440).covers(&g(1, 2, 0o640)));
        assert!(!Grant::default().covers(&g(1, 2, 0o400)));
        // Another owner: the old one falls back to the group's or others' bits.
        assert!(!g(3, 2, 0o640).covers(&g(1, 2, 0o600)));
        assert!(g(3, 2, 0o666).covers(&g(1, 2, 0o600)));
        // The owner's own bits can be narrower than the group's: moving to others loses.
        assert!(!g(1, 2, 0o004).covers(&g(1, 2, 0o040)));
    }

    #[test]
    fn grant_requests_are_checked() {
        assert!(op::valid(op::GRANT));
        assert!(!op::valid(op::GRANT | op::WIDTH32));
        assert_eq!(grant::Grant::from_args(0, 0o1000), None);
        assert_eq!(
            grant::Grant::from_args(u64::MAX, 0o777).map(|g| g.mode),
            Some(0o777)
        );
        assert_eq!(grant::need(op::READ | op::WIDTH32), grant::READ);
        assert_eq!(grant::need(op::BULK_WRITE), grant::WRITE);
        assert_eq!(grant::need(op::CAS), grant::READ | grant::WRITE);
        for o in [
            op::FREE,
            op::FREE_TAG,
            op::GRANT,
            op::KEEP,
            op::ALLOC,
            op::FORK,
            op::NOP,
        ] {
            assert_eq!(grant::need(o), 0, "opcode {o:#x}");
        }
    }

    #[test]
    fn keep_requests_are_checked() {
        assert_eq!(check(&request(op::KEEP, 0, 1, 0)), Ok(()));
        assert_eq!(check(&request(op::KEEP, 0, 0, 0)), Ok(()));
        for bad in [
            request(op::KEEP, 0, 2, 0),
            request(op::KEEP, 0, u64::MAX, 0),
            request(op::KEEP | op::WIDTH32, 0, 1, 0),
        ] {
            assert_eq!(
                check(&bad).map_err(RequestError::status),
                Err(status::INVALID),
                "{bad:?}"
            );
        }
        // What is kept is the bits that apply to the issuer, as `allows` reads them.
        let g = grant::Grant {
            uid: 1000,
            gid: 100,
            mode: 0o640,
        };
        let user = |uid, gid| owner::Creds { uid, gid, flags: 0 };
        assert_eq!(g.bits_for(&user(1000, 1)), grant::READ | grant::WRITE);
        assert_eq!(g.bits_for(&user(7, 100)), grant::READ);
        assert_eq!(g.bits_for(&user(7, 7)), 0);
    }

    #[test]
    fn owner_credentials_round_trip_and_fit_the_table() {
        let c = owner::Creds {
            uid: 1000,
            gid: 900,
            flags: owner::ADMIN,
        };
        assert_eq!(owner::Creds::decode(&c.encode()), c);
        let garbled = owner::Creds::decode(&[0xff; owner::CREDS_LEN as usize]);
        assert_eq!(garbled.flags, owner::ADMIN, "unknown flags are dropped");
        assert!(owner::entry(USER_INTERFACES) + owner::ENTRY_LEN <= owner::creds(0));
        assert!(owner::creds(INTERFACES - 1) + owner::CREDS_LEN <= owner::TABLE_END);
    }

    #[test]
    fn addresses() {
        let a = addr(2, 0x1001);
        assert_eq!(a, 0x0002_0000_0000_1001);
        assert_eq!((node_of(a), offset_of(a)), (2, 0x1001));
        assert_eq!(offset_of(addr(1, u64::MAX)), OFFSET_MASK);
    }

    #[test]
    fn request_round_trip_through_a_packet() {
        let p = request(op::CAS | op::WIDTH32, addr(3, 0x4000), 7, 9);
        let sealed = Packet::seal(
            Header {
                node: 1,
                iface: 5,
                prot_id: prot::new(1, 42),
            },
            &p.encode(),
        );
        let back = Packet::decode(&sealed).unwrap();
        assert_eq!(back.payload, p);
        assert_eq!(prot::node(back.header.prot_id), 1);
        assert_eq!(check(&back.payload), Ok(()));
    }

    #[test]
    fn malformed_requests() {
        assert_eq!(
            check(&request(0x7f, 0, 0, 0)),
            Err(RequestError::Opcode(0x7f))
        );
        assert_eq!(
            check(&request(op::READ256 | op::WIDTH32, 0, 0, 0)),
            Err(RequestError::Opcode(0x14))
        );
        assert_eq!(
            check(&request(op::ALLOC | op::WIDTH32, 0, 1, 0)),
            Err(RequestError::Opcode(0x40 | 0x10))
        );
        assert_eq!(
            check(&request(op::READ, 4, 0, 0)),
            Err(RequestError::Unaligned)
        );
        assert_eq!(check(&request(op::READ | op::WIDTH32, 4, 0, 0)), Ok(()));
        assert_eq!(
            check(&request(op::READ256, 16, 0, 0)),
            Err(RequestError::Unaligned)
        );
        assert_eq!(check(&request(op::WRITE128, 16, 0, 0)), Ok(()));
        assert_eq!(RequestError::Unaligned.status(), status::UNALIGNED);
        // Every opcode byte is either valid or rejected, never a panic.
        for o in 0..=u8::MAX {
            let _ = check(&request(o, u64::MAX, u64::MAX, u64::MAX));
        }
    }

    /// Every operation is valid without the width flag, none of their codes has the flag's
    /// bit, and no two of them share a base code (0x30 for ALLOC was `BULK_READ | WIDTH32`).
    #[test]
    fn opcodes_are_distinct_from_the_width_flag() {
        let all = [
            op::NOP,
            op::READ,
            op::WRITE,
            op::READ128,
            op::READ256,
            op::WRITE128,
            op::FETCH_ADD,
            op::CAS,
            op::SWAP,
            op::FETCH_AND,
            op::FETCH_OR,
            op::FETCH_XOR,
            op::FETCH_MIN,
            op::FETCH_MAX,
            op::FETCH_UMIN,
            op::FETCH_UMAX,
            op::BULK_READ,
            op::BULK_WRITE,
            op::CAS128,
            op::COPY,
            op::INDEXED,
            op::ALLOC,
            op::FREE,
            op::FORK,
            op::WAIT,
            op::IFACE_STATE,
            op::FREE_TAG,
            op::GRANT,
            op::MAP,
            op::KEEP,
        ];
        for (i, &o) in all.iter().enumerate() {
            assert_eq!(o & op::WIDTH32, 0, "{o:#x} has the width bit");
            assert!(op::valid(o), "{o:#x} is not valid");
            assert!(all[i + 1..].iter().all(|&p| p != o), "{o:#x} twice");
        }
        assert_eq!(check(&request(op::ALLOC, 0, 1, 0)), Ok(()));
        assert_eq!(check(&request(op::FREE, 0x1000, 0, 0)), Ok(()));
        assert_eq!(check(&request(op::IFACE_STATE, 0, 5, 0)), Ok(()));
        assert_eq!(check(&request(op::FREE_TAG, 0, 7, 0)), Ok(()));
        assert!(!op::valid(op::FREE_TAG | op::WIDTH32));
        assert!(!op::valid(op::IFACE_STATE | op::WIDTH32));
        assert_eq!(op::size(op::IFACE_STATE), None);
    }

    #[test]
    fn indexed_batches_round_trip() {
        use indexed::*;
        assert!(op::valid(op::INDEXED));
        assert!(!op::valid(op::INDEXED | op::WIDTH32));
        assert_eq!(op::size(op::INDEXED), None);
        for (kind, size, count) in [
            (ADD, 4, 1),
            (ADD, 8, MAX_PAIRS),
            (SCATTER, 4, 17),
            (GATHER, 8, MAX_ADDRS),
            (GATHER, 4, 1),
            (SCATTER_IF, 8, 4),
            (SCATTER_IF, 4, MAX_PAIRS),
        ] {
            let b = Batch::new(kind, size, count).unwrap();
            assert_eq!(Batch::from_arg1(b.arg1()), Ok(b));
            assert!(b.operands_len() <= BULK_MAX as usize);
            assert!(b.results_len() <= BULK_MAX as usize);
        }
        assert_eq!(
            Batch::new(ADD, 8, 3).unwrap().arg1(),
            3 | 8 << 32,
            "the layout docs/GSAS.md gives"
        );
        assert_eq!(
            Batch::new(GATHER, 4, 2).unwrap().arg1(),
            2 | 4 << 32 | 2 << 40
        );
        // Entries written and read back, at the ends of the page too.
        let mut page = [0u8; BULK_MAX as usize];
        let b = Batch::new(SCATTER, 8, MAX_PAIRS).unwrap();
        assert!(b.put_entry(&mut page, 0, addr(1, 0x1000), 7));
        assert!(b.put_entry(&mut page, 255, addr(1, 0x2008), u64::MAX));
        assert!(!b.put_entry(&mut page, 256, 0, 0));
        assert_eq!(b.entry(&page, 0), Some((addr(1, 0x1000), 7)));
        assert_eq!(b.entry(&page, 255), Some((addr(1, 0x2008), u64::MAX)));
        assert_eq!(b.entry(&page, 256), None);
        assert_eq!(b.entry(&page[..100], 10), None, "short operands");
        let g = Batch::new(GATHER, 4, 2).unwrap();
        assert!(g.put_entry(&mut page, 1, addr(2, 12), 99));
        assert_eq!(g.entry(&page, 1), Some((addr(2, 12), 0)));
        assert_eq!(g.need(), grant::READ);
        assert_eq!(b.need(), grant::WRITE);
        assert_eq!(Batch::new(ADD, 8, 1).unwrap().need(), grant::WRITE);
        let c = Batch::new(SCATTER_IF, 8, 2).unwrap();
        assert_eq!(c.need(), grant::READ | grant::WRITE);
        assert_eq!(c.entry_len(), PAIR_LEN);
        assert_eq!(c.results_len(), 0);
        // The answer's value: entries applied, then the guard as found.
        let mut v = [0u8; 32];
        assert!(c.judge_guard(0xdead_beef, 0xdead_beef, &mut v));
        assert_eq!(guard_found(&v), (2, 0xdead_beef));
        assert!(!c.judge_guard(7, 0xdead_beef, &mut v));
        assert_eq!(guard_found(&v), (0, 7));
        assert!(guard_holds(4, 0x1_0000_0005, 5));
        assert!(!guard_holds(8, 0x1_0000_0005, 5));
        assert!(guard_holds(8, 5, 5));
        // Address checks: the home's, aligned to the element.
        assert_eq!(g.check_address(2, addr(2, 12)), Ok(12));
        assert_eq!(g.check_address(2, addr(2, 10)), Err(status::UNALIGNED));
        assert_eq!(b.check_address(2, addr(2, 12)), Err(status::UNALIGNED));
        assert_eq!(b.check_address(1, addr(2, 16)), Err(status::FAULT));
        // Wrapping adds of the element's width.
        let a4 = Batch::new(ADD, 4, 1).unwrap();
        assert_eq!(a4.add(0xffff_fffe, 3), 1);
        assert_eq!(Batch::new(ADD, 8, 1).unwrap().add(u64::MAX, 2), 1);
    }

    #[test]
    fn malformed_indexed_batches_are_invalid() {
        use indexed::*;
        let arg1 = |kind: u64, size: u64, count: u64| count | size << 32 | kind << 40;
        for bad in [
            arg1(ADD as u64, 8, 0),
            arg1(ADD as u64, 8, MAX_PAIRS as u64 + 1),
            arg1(SCATTER as u64, 8, MAX_PAIRS as u64 + 1),
            arg1(GATHER as u64, 8, MAX_ADDRS as u64 + 1),
            arg1(ADD as u64, 2, 1),
            arg1(ADD as u64, 16, 1),
            arg1(ADD as u64, 0, 1),
            arg1(SCATTER_IF as u64, 8, MAX_PAIRS as u64 + 1),
            arg1(4, 8, 1),
            arg1(0xff, 8, 1),
            arg1(ADD as u64, 8, 1) | 1 << 48,
            u64::MAX,
        ] {
            assert_eq!(Batch::from_arg1(bad), Err(status::INVALID), "{bad:#x}");
        }
        assert_eq!(Batch::new(ADD, 8, 0), None);
        assert_eq!(max(7), 0);
        // Every kind and size byte decodes or is refused, never a panic.
        for k in 0..=u8::MAX {
            for s in [0u8, 1, 4, 8, 255] {
                let r = Batch::from_arg1(arg1(u64::from(k), u64::from(s), 1));
                assert_eq!(r.is_ok(), k <= SCATTER_IF && (s == 4 || s == 8));
            }
        }
    }

    #[test]
    fn fork_blobs() {
        use fork::*;
        let mut b = [0u8; BLOB_MAX];
        let n = encode(b"/bin/prog", &[b"a", b"bc"], &mut b).unwrap();
        assert_eq!(&b[..n], b"/bin/prog\0a\0bc\0");
        assert_eq!(check(&b[..n]), Ok(3));
        assert_eq!(encode(b"prog", &[], &mut b), Err(BlobError::Relative));
        assert_eq!(encode(b"/p", &[b""], &mut b), Err(BlobError::Empty));
        assert_eq!(
            encode(b"/p", &[b"a\0b"], &mut b),
            Err(BlobError::Unterminated)
        );
        let long = [b'x'; BLOB_MAX];
        assert_eq!(encode(b"/p", &[&long], &mut b), Err(BlobError::Length));
        let many = [b"a" as &[u8]; MAX_ARGS];
        assert_eq!(encode(b"/p", &many, &mut b), Err(BlobError::TooMany));
        assert_eq!(check(b""), Err(BlobError::Length));
        assert_eq!(check(b"/p"), Err(BlobError::Unterminated));
        assert_eq!(check(b"\0"), Err(BlobError::Empty));
        assert_eq!(check(b"/p\0\0a\0"), Err(BlobError::Empty));
        let id = child_id(3, 77);
        assert_eq!((node_of(id), serial(id)), (3, 77));
        // Every short byte string is checked without a panic.
        for x in 0..=u8::MAX {
            let _ = check(&[b'/', x, 0, x]);
        }
    }

    #[test]
    fn response_round_trip() {
        let r = Response {
            seq: 0xdead_beef,
            status: status::DENIED,
            opcode: op::SWAP,
            address: addr(1, 8),
            value: [7; 32],
        };
        assert_eq!(Response::decode(&r.encode()), r);
        let mut w = Response::default();
        w.value[..8].copy_from_slice(&0x0102_0304_0506_0708u64.to_le_bytes());
        assert_eq!(w.word(), 0x0102_0304_0506_0708);
        // Garbage decodes to something the reader can reject (no panic, fields as written).
        let g = Response::decode(&[0xff; RESPONSE_LEN]);
        assert_eq!((g.seq, g.status), (u32::MAX, 0xff));
    }

    #[test]
    fn submission_slots_and_owner_words() {
        assert_eq!(
            submit_slot(2, 3),
            area_page(2, SUBMIT_PAGE) + 3 * SUBMIT_LEN as u64
        );
        assert!(
            submit_slot(SERVICE_IFACE, 15) + (SUBMIT_LEN as u64) <= area_page(SERVICE_IFACE + 1, 0)
        );
        let w = owner::word(0xdead_beef, prot::new(3, 9));
        assert_eq!(owner::tree(w), Some(prot::new(3, 9)));
        assert_ne!(
            w,
            owner::word(0xdead_bef0, prot::new(3, 9)),
            "publications differ"
        );
        // Malformed words name nobody: not valid, or tree 0.
        assert_eq!(owner::tree(w & !owner::VALID), None);
        assert_eq!(owner::tree(owner::VALID), None);
        assert_eq!(owner::tree(0), None);
        assert_eq!(owner::tree(u64::MAX), Some(0xff_ffff));
        assert!(owner::entry(INTERFACES - 1) + owner::ENTRY_LEN <= owner::TABLE_END);
        const { assert!(owner::TABLE_END <= crate::lease_record::RECORD_OFFSET) };
    }

    #[test]
    fn layout_fits_between_rings_and_lease_record() {
        const { assert!(AREA_OFFSET >= layout::RESERVED as u64 && AREA_OFFSET % PAGE_SIZE == 0) };
        assert_eq!(area_page(1, 0) - area_page(0, 0), AREA_PAGES * PAGE_SIZE);
        assert_eq!(
            response_slot(SERVICE_IFACE, 15) + RESPONSE_LEN as u64,
            area_page(SERVICE_IFACE, 0) + 16 * 64
        );
    }

    #[test]
    fn map_requests_and_approvals() {
        use remote_map::*;
        assert!(op::valid(op::MAP));
        assert!(!op::valid(op::MAP | op::WIDTH32));
        assert_eq!(op::size(op::MAP), None);
        assert_eq!(op::MAP & op::WIDTH32, 0);
        assert_eq!(grant::need(op::MAP), grant::READ);
        assert_eq!(grant::map_need(true), grant::READ | grant::WRITE);
        let a = addr(2, 0x40_3000);
        let ap = check(a, 2 * PAGE_SIZE, 1).unwrap();
        assert_eq!(
            ap,
            Approval {
                first_page: 0x403,
                pages: 2,
                write: true
            }
        );
        assert_eq!(check(a + 8, PAGE_SIZE, 0), Err(status::UNALIGNED));
        assert_eq!(check(a, 0, 0), Err(status::INVALID));
        assert_eq!(check(a, 100, 0), Err(status::INVALID));
        assert_eq!(check(a, PAGE_SIZE, 2), Err(status::INVALID));
        assert_eq!(
            check(a, (MAX_MAP_PAGES + 1) * PAGE_SIZE, 0),
            Err(status::INVALID)
        );
        assert!(check(0, MAX_MAP_PAGES * PAGE_SIZE, 0).is_ok());
        // Round trip, at the limits too.
        for ap in [
            ap,
            Approval {
                first_page: OFFSET_MASK / PAGE_SIZE,
                pages: MAX_MAP_PAGES,
                write: false,
            },
        ] {
            assert_eq!(Approval::decode(ap.encode()), Some(ap));
        }
        // Nothing, consumed, or garbage approves nothing.
        assert_eq!(Approval::decode(0), None);
        assert_eq!(Approval::decode(ap.encode() & !VALID), None);
        assert_eq!(Approval::decode(u64::MAX), None);
        assert_eq!(Approval::decode(VALID | 5), None, "no pages");
        // What it allows: the same first page, no more pages, no write from read-only.
        assert!(ap.allows(0x40_3000, 2 * PAGE_SIZE, true));
        assert!(ap.allows(0x40_3000, PAGE_SIZE, false));
        assert!(!ap.allows(0x40_4000, PAGE_SIZE, false));
        assert!(!ap.allows(0x40_3000, 3 * PAGE_SIZE, false));
        assert!(!ap.allows(0x40_3000, 0, false));
        let ro = Approval { write: false, ..ap };
        assert!(!ro.allows(0x40_3000, PAGE_SIZE, true));
        assert!(ap.overlaps(0x404, 10) && ap.overlaps(0x400, 4) && !ap.overlaps(0x405, 1));
        assert!(!ap.overlaps(0x400, 3) && ap.overlaps(0, u64::MAX));
        assert_eq!(map_value(8192, true), 8192 | 1 << 63);
        // The approval words sit after the response slots, inside the responses page.
        assert_eq!(approval_slot(3, 0), response_slot(3, 0) + APPROVALS);
        assert!(
            approval_slot(3, crate::gas::MAX_NODES - 1) + 8
                <= area_page(3, RESPONSES_PAGE) + PAGE_SIZE
        );
    }

    #[test]
    fn the_wake_word_shares_its_page_with_nothing() {
        use remote_map::approval_slot;
        let last = crate::gas::MAX_NODES - 1;
        for iface in [0, 3, SERVICE_IFACE] {
            let w = wake_word(iface);
            assert!(w >= response_slot(iface, last) + RESPONSE_LEN as u64);
            assert!(w >= approval_slot(iface, last) + 8);
            assert!(w + 4 <= area_page(iface, RESPONSES_PAGE) + PAGE_SIZE);
            assert_eq!(w % 4, 0);
        }
    }

    #[test]
    fn zap_messages_round_trip_and_reject_garbage() {
        use remote_map::*;
        let z = Zap::new(ZAP, 0xbeef, 0x123, 16).unwrap();
        assert_eq!(Zap::decode(z.encode()), Ok(z));
        assert_eq!(crate::mailbox::kmsg_opcode(z.encode()), u32::from(ZAP));
        let a = z.ack();
        assert_eq!(
            (a.opcode, a.seq, a.first_page, a.pages),
            (ZAP_ACK, 0xbeef, 0x123, 16)
        );
        assert_eq!(Zap::decode(a.encode()), Ok(a));
        let big = Zap::new(ZAP_ACK, u16::MAX, ZAP_PAGE_LIMIT - 1, ZAP_MAX_PAGES).unwrap();
        assert_eq!(Zap::decode(big.encode()), Ok(big));
        let one = Zap::new(ZAP, 0, 0, 1).unwrap();
        assert_eq!(one.encode(), u64::from(ZAP) << 60);
        assert_eq!(Zap::decode(one.encode()), Ok(one));
        assert_eq!(Zap::new(ZAP, 0, ZAP_PAGE_LIMIT, 1), None);
        assert_eq!(Zap::new(ZAP, 0, 0, 0), None);
        assert_eq!(Zap::new(ZAP, 0, 0, ZAP_MAX_PAGES + 1), None);
        // A whole allocation fits.
        assert!(Zap::new(ZAP, 0, 0, MAX_ALLOC_PAGES).is_some());
        assert_eq!(Zap::decode(0), Err(ZapError::Opcode(0)));
        assert_eq!(Zap::decode(0x2 << 60 | 1 << 36), Err(ZapError::Opcode(2)));
        // Every opcode nibble decodes or is refused, never a panic.
        for o in 0..16u64 {
            let r = Zap::decode(o << 60 | u64::MAX >> 4);
            assert_eq!(r.is_ok(), o == u64::from(ZAP) || o == u64::from(ZAP_ACK));
        }
    }
}
