// SPDX-License-Identifier: GPL-2.0
//! OpenFAM's control protocol: what clients and the metadata service `famd` say to each other
//! in mailbox packets (docs/FAM.md). Defined once here for the daemon and the client library.
//!
//! Two layers.
//!
//! **Framing.** A message of 1..=[`MAX_MESSAGE`] bytes travels as fragments, one per packet
//! payload ([`PAYLOAD_LEN`] = 25 bytes):
//! ```text
//! byte 0   flags: FIRST 0x01, LAST 0x02 (both: a one-fragment message); other bits zero
//! byte 1   message id, the sender's choice, the same in every fragment of one message
//! byte 2   fragment index: 0 with FIRST, then 1, 2, ...
//! byte 3   data length: 1..=FRAGMENT_DATA (21), exactly FRAGMENT_DATA unless LAST
//! 4..      the data, then zeros to the end of the payload
//! ```
//! Packets from one sender to one receiver arrive in order (a ring per sender), so there is
//! no reordering to do: the receiver keeps one [`Reassembler`] per sender (node, interface,
//! tree; the sealed header tells it), and any fragment that is not exactly the next one
//! drops the message. The id and the index cost two bytes and turn a confused sender (a
//! fragment it failed to send, one it sent twice, two messages mixed) into an error rather
//! than a message spliced from two. Every fragment has exactly one encoding (full fragments
//! until the last, zero padding), so a hostile sender has nothing ambiguous to play with.
//!
//! **Messages.** Little-endian, every length checked, nothing after the last field:
//! ```text
//! request:   u8 opcode, u32 request id (the client's choice), the opcode's fields
//! response:  u8 opcode and u32 request id (the request's, echoed), i32 status, then
//!              status != 0: u8 length + UTF-8 message (at most MAX_ERROR_MESSAGE bytes)
//!              status == 0: the reply the opcode calls for (see `op`)
//! name:      u16 length (at most NAME_MAX) + UTF-8 bytes
//! extent:    u16 node, u64 GSAS address, u64 length
//! ```
//! Status is OpenFAM's `Fam_Error` number (`fam::error::code`), so the client raises what
//! OpenFAM programs test for. The wire checks form (lengths, UTF-8, enum values), not meaning:
//! an empty region name, a NUL in a name or mode bits beyond 0o777 decode fine and are
//! refused by the store with the error OpenFAM gives for them.
//!
//! Decoding borrows names and messages from the input; lists are copied into fixed-capacity
//! [`Bounded`] arrays. Nothing allocates: the kernel modules include this crate too.

use core::ops::Deref;

use crate::gas::MAX_NODES;
use crate::packet::PAYLOAD_LEN;

// ---------------------------------------------------------------------------------------------
// Limits
// ---------------------------------------------------------------------------------------------

/// Protocol version, exchanged by [`Request::Hello`]. Changes with any format change (the
/// limits below included: both sides size their buffers from them).
pub const VERSION: u16 = 1;

/// Longest message. It holds the largest request ([`MAX_REQUEST_LEN`], a lookup by two
/// 255-byte names) and the largest response ([`MAX_RESPONSE_LEN`], an item description with
/// [`MAX_EXTENTS`] extents), checked at compile time. 1 KiB keeps a [`Reassembler`] small
/// enough for `famd` to hold one for every interface of every node (about 1 MiB at most).
pub const MAX_MESSAGE: usize = 1024;
/// Bytes of a fragment's header.
pub const FRAGMENT_HEADER: usize = 4;
/// Message bytes a fragment carries.
pub const FRAGMENT_DATA: usize = PAYLOAD_LEN - FRAGMENT_HEADER;
/// Fragments of the longest message.
pub const MAX_FRAGMENTS: usize = MAX_MESSAGE.div_ceil(FRAGMENT_DATA);
// The fragment index is a byte.
const _: () = assert!(MAX_FRAGMENTS <= 255);

/// Longest region or item name in bytes: the store's `NAME_MAX` (POSIX's).
pub const NAME_MAX: usize = 255;
/// Longest error message in bytes: a sentence naming the object is enough, and it keeps an
/// error answer to 9 fragments. Longer messages are cut at a character boundary
/// ([`truncate`]).
pub const MAX_ERROR_MESSAGE: usize = 160;
/// Most lenders a region description lists: every node of the largest cluster (a region's
/// lenders are distinct nodes).
pub const MAX_LENDERS: usize = MAX_NODES as usize;
/// Most extents one reply carries. Items on at most [`MAX_LENDERS`] nodes have one extent per
/// lender unless a lender's share exceeds one GSAS allocation (256 MiB), so 32 covers all
/// but very large items in the item description itself. Larger items are paged: the
/// description says how many extents there are ([`ItemDesc::extent_count`]) and carries
/// the first 32, and [`Request::ItemExtents`] fetches the rest, 32 at a time. 32 is the
/// largest power of two whose item description fits [`MAX_MESSAGE`] (40 would not).
pub const MAX_EXTENTS: usize = 32;

/// Encoded length of a name of `n` bytes.
const fn name_len(n: usize) -> usize {
    2 + n
}
/// Encoded length of an extent.
const EXTENT_LEN: usize = 2 + 8 + 8;
/// Opcode and request id.
const HEAD_LEN: usize = 1 + 4;
/// Opcode, request id and status.
const RESPONSE_HEAD_LEN: usize = HEAD_LEN + 4;
const REGION_MAX: usize = 8 + name_len(NAME_MAX) + 8 + 4 * 3 + 1 + 1 + 8 + 8 + 1 + 2 * MAX_LENDERS;
const ITEM_MAX: usize =
    8 + 8 + name_len(NAME_MAX) + 8 + 4 * 3 + 8 + 4 + 1 + EXTENT_LEN * MAX_EXTENTS;
const PAGE_MAX: usize = 4 + 4 + 1 + EXTENT_LEN * MAX_EXTENTS;
const FAILURE_MAX: usize = 1 + MAX_ERROR_MESSAGE;

const fn max(a: usize, b: usize) -> usize {
    if a > b {
        a
    } else {
        b
    }
}

/// Longest encoded request: [`Request::Lookup`] with two names of [`NAME_MAX`] bytes.
pub const MAX_REQUEST_LEN: usize = HEAD_LEN + 2 * name_len(NAME_MAX);
/// Longest encoded response: an item description with [`MAX_EXTENTS`] extents and a name of
/// [`NAME_MAX`] bytes.
pub const MAX_RESPONSE_LEN: usize =
    RESPONSE_HEAD_LEN + max(max(REGION_MAX, ITEM_MAX), max(PAGE_MAX, FAILURE_MAX));
const _: () = assert!(MAX_REQUEST_LEN <= MAX_MESSAGE && MAX_RESPONSE_LEN <= MAX_MESSAGE);
// MAX_EXTENTS is the largest power of two that fits: 40 would not.
const _: () = assert!(RESPONSE_HEAD_LEN + ITEM_MAX + 8 * EXTENT_LEN > MAX_MESSAGE);
// Lengths on the wire are bytes.
const _: () = assert!(MAX_ERROR_MESSAGE <= 255 && MAX_EXTENTS <= 255 && MAX_LENDERS <= 255);

// ---------------------------------------------------------------------------------------------
// Framing
// ---------------------------------------------------------------------------------------------

/// Fragment flags (byte 0).
pub mod flag {
    /// The message's first fragment (index 0); it starts a new message.
    pub const FIRST: u8 = 0x01;
    /// The message's last fragment.
    pub const LAST: u8 = 0x02;
    /// Every defined bit: the others must be zero.
    pub const ALL: u8 = FIRST | LAST;
}

/// Why a message cannot be cut into fragments, or a fragment was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameError {
    /// A message of no bytes (fragments carry at least one).
    Empty,
    /// A message longer than [`MAX_MESSAGE`], or fragments adding up to more.
    TooLong,
    /// Flag bits other than [`flag::ALL`].
    Flags(u8),
    /// A data length of 0, more than [`FRAGMENT_DATA`], or less than that without LAST.
    DataLen(u8),
    /// A byte after the data is not zero.
    Padding,
    /// A fragment without FIRST while no message is in progress.
    NoFirst { id: u8, index: u8 },
    /// A fragment of another message than the one in progress.
    MessageId { expected: u8, got: u8 },
    /// Not the next fragment (missing, repeated, or a FIRST whose index is not 0).
    OutOfSequence { expected: u8, got: u8 },
}

/// One fragment, parsed from a payload. Its data borrows from the payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fragment<'a> {
    pub flags: u8,
    pub id: u8,
    pub index: u8,
    pub data: &'a [u8],
}

impl<'a> Fragment<'a> {
    /// Whether it starts a message.
    pub const fn is_first(&self) -> bool {
        self.flags & flag::FIRST != 0
    }

    /// Whether it ends a message.
    pub const fn is_last(&self) -> bool {
        self.flags & flag::LAST != 0
    }

    /// Parses and checks a payload on its own (the [`Reassembler`] checks the sequence).
    pub fn parse(p: &'a [u8; PAYLOAD_LEN]) -> Result<Fragment<'a>, FrameError> {
        let (flags, id, index, len) = (p[0], p[1], p[2], p[3]);
        if flags & !flag::ALL != 0 {
            return Err(FrameError::Flags(flags));
        }
        let n = usize::from(len);
        let last = flags & flag::LAST != 0;
        // Only the last fragment may be short: then a fragment's index alone says where its
        // data goes, and a message has one fragmentation.
        if n == 0 || n > FRAGMENT_DATA || (!last && n != FRAGMENT_DATA) {
            return Err(FrameError::DataLen(len));
        }
        let (data, pad) = p[FRAGMENT_HEADER..].split_at(n);
        if pad.iter().any(|&b| b != 0) {
            return Err(FrameError::Padding);
        }
        if flags & flag::FIRST != 0 && index != 0 {
            return Err(FrameError::OutOfSequence {
                expected: 0,
                got: index,
            });
        }
        Ok(Fragment {
            flags,
            id,
            index,
            data,
        })
    }

    /// The payload carrying it. `data` must hold 1..=[`FRAGMENT_DATA`] bytes (more are cut).
    fn encode(&self) -> [u8; PAYLOAD_LEN] {
        let n = self.data.len().min(FRAGMENT_DATA);
        let mut p = [0u8; PAYLOAD_LEN];
        p[0] = self.flags;
        p[1] = self.id;
        p[2] = self.index;
        p[3] = n as u8;
        p[FRAGMENT_HEADER..FRAGMENT_HEADER + n].copy_from_slice(&self.data[..n]);
        p
    }
}

/// Fragments needed for a message of `len` bytes (1..=[`MAX_MESSAGE`]).
pub const fn fragment_count(len: usize) -> usize {
    len.div_ceil(FRAGMENT_DATA)
}

/// The payloads carrying message `msg`, tagged `id`, in the order to send them.
/// The id only has to differ from the previous message's for errors to be caught early; a
/// counter does.
pub fn fragments(id: u8, msg: &[u8]) -> Result<Fragments<'_>, FrameError> {
    if msg.is_empty() {
        return Err(FrameError::Empty);
    }
    if msg.len() > MAX_MESSAGE {
        return Err(FrameError::TooLong);
    }
    Ok(Fragments { id, msg, index: 0 })
}

/// Iterator of [`fragments`].
#[derive(Debug, Clone)]
pub struct Fragments<'a> {
    id: u8,
    msg: &'a [u8],
    index: usize,
}

impl Iterator for Fragments<'_> {
    type Item = [u8; PAYLOAD_LEN];

    fn next(&mut self) -> Option<[u8; PAYLOAD_LEN]> {
        let start = self.index * FRAGMENT_DATA;
        if start >= self.msg.len() {
            return None;
        }
        let end = (start + FRAGMENT_DATA).min(self.msg.len());
        let mut flags = 0;
        if self.index == 0 {
            flags |= flag::FIRST;
        }
        if end == self.msg.len() {
            flags |= flag::LAST;
        }
        let p = Fragment {
            flags,
            id: self.id,
            // At most MAX_FRAGMENTS (checked to fit a byte) for a message `fragments` took.
            index: self.index as u8,
            data: &self.msg[start..end],
        }
        .encode();
        self.index += 1;
        Some(p)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = fragment_count(self.msg.len()).saturating_sub(self.index);
        (n, Some(n))
    }
}

impl ExactSizeIterator for Fragments<'_> {}

/// A message cut short by a FIRST of the same sender: the sender gave up on it (a failed
/// send, a restarted client) and the new message starts cleanly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Interrupted {
    /// The dropped message's id.
    pub id: u8,
    /// Its bytes received so far.
    pub received: usize,
}

/// What a fragment [`Reassembler::feed`] accepted did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fed<'a> {
    /// The message this fragment completed, valid until the next `feed`.
    pub message: Option<&'a [u8]>,
    /// The message in progress this fragment's FIRST dropped. Not an `Err`: the fragment
    /// itself is good and is kept (it may even be a whole message), only the old message is
    /// lost; the receiver may log it.
    pub interrupted: Option<Interrupted>,
}

/// Puts the fragments of ONE sender back together. Fixed size (one [`MAX_MESSAGE`] buffer),
/// never panics; after any error it has dropped the message in progress and waits for a
/// FIRST. Keep one per sender: fragments of two senders fed to one reassembler are errors.
#[derive(Debug, Clone)]
pub struct Reassembler {
    buf: [u8; MAX_MESSAGE],
    len: usize,
    /// The message in progress: its id and the index expected next.
    current: Option<(u8, u8)>,
}

impl Default for Reassembler {
    fn default() -> Self {
        Self::new()
    }
}

impl Reassembler {
    /// One waiting for a FIRST.
    pub const fn new() -> Reassembler {
        Reassembler {
            buf: [0; MAX_MESSAGE],
            len: 0,
            current: None,
        }
    }

    /// The id of the message in progress, if any.
    pub fn in_progress(&self) -> Option<u8> {
        self.current.map(|(id, _)| id)
    }

    /// Drops the message in progress (e.g. when its sender went away).
    pub fn reset(&mut self) {
        self.current = None;
        self.len = 0;
    }

    /// Takes one packet payload of this sender.
    pub fn feed(&mut self, payload: &[u8; PAYLOAD_LEN]) -> Result<Fed<'_>, FrameError> {
        match self.accept(payload) {
            Ok((complete, interrupted)) => Ok(Fed {
                message: complete.then_some(&self.buf[..self.len]),
                interrupted,
            }),
            Err(e) => {
                // Whatever was in progress cannot be trusted to continue.
                self.reset();
                Err(e)
            }
        }
    }

    /// Checks and stores a fragment: whether it completed the message, and what it dropped.
    fn accept(
        &mut self,
        payload: &[u8; PAYLOAD_LEN],
    ) -> Result<(bool, Option<Interrupted>), FrameError> {
        let f = Fragment::parse(payload)?;
        let mut interrupted = None;
        if f.is_first() {
            if let Some((id, _)) = self.current {
                interrupted = Some(Interrupted {
                    id,
                    received: self.len,
                });
            }
            self.current = Some((f.id, 0));
            self.len = 0;
        }
        let Some((id, next)) = self.current else {
            return Err(FrameError::NoFirst {
                id: f.id,
                index: f.index,
            });
        };
        if f.id != id {
            return Err(FrameError::MessageId {
                expected: id,
                got: f.id,
            });
        }
        if f.index != next {
            return Err(FrameError::OutOfSequence {
                expected: next,
                got: f.index,
            });
        }
        let end = self.len + f.data.len();
        if end > MAX_MESSAGE {
            return Err(FrameError::TooLong);
        }
        self.buf[self.len..end].copy_from_slice(f.data);
        self.len = end;
        if f.is_last() {
            self.current = None;
            return Ok((true, interrupted));
        }
        // No overflow: TooLong comes first, after MAX_FRAGMENTS (< 255) fragments.
        self.current = Some((id, next.wrapping_add(1)));
        Ok((false, interrupted))
    }
}

// ---------------------------------------------------------------------------------------------
// Messages
// ---------------------------------------------------------------------------------------------

/// Request opcodes (byte 0 of a request, echoed in byte 0 of its response), the request's
/// fields after the request id, and the reply a success carries.
pub mod op {
    /// `u16 version` ([`VERSION`](super::VERSION)) -> `u16 version`: the daemon's. A daemon
    /// that does not speak the client's version answers `FAM_ERR_UNIMPL`.
    pub const HELLO: u8 = 0x01;
    /// `name, u64 size, u32 mode, u8 redundancy, u8 memory type, u8 interleave` -> region.
    pub const CREATE_REGION: u8 = 0x02;
    /// `u64 region` -> nothing.
    pub const DESTROY_REGION: u8 = 0x03;
    /// `u64 region, u64 size` -> nothing.
    pub const RESIZE_REGION: u8 = 0x04;
    /// `name` -> region.
    pub const LOOKUP_REGION: u8 = 0x05;
    /// `u64 region, u32 mode` -> nothing.
    pub const CHANGE_REGION_PERMISSIONS: u8 = 0x06;
    /// `u64 region` -> region.
    pub const STAT_REGION: u8 = 0x07;
    /// `u64 region, name (empty: anonymous), u64 size, u32 mode` -> item.
    pub const ALLOCATE: u8 = 0x08;
    /// `u64 item` -> nothing.
    pub const DEALLOCATE: u8 = 0x09;
    /// `item name, region name` -> item.
    pub const LOOKUP: u8 = 0x0a;
    /// `u64 item, u32 mode` -> nothing.
    pub const CHANGE_ITEM_PERMISSIONS: u8 = 0x0b;
    /// `u64 item` -> item.
    pub const STAT_ITEM: u8 = 0x0c;
    /// `u64 item, u32 first` -> extent page: the item's extents from index `first`
    /// (`FAM_ERR_OUTOFRANGE` when `first` is not below their count).
    pub const ITEM_EXTENTS: u8 = 0x0d;
}

/// The `Fam_Error` numbers the wire itself gives reasons for (the same as `fam::error::code`,
/// whose tests check it); the daemon's other answers come from the store's errors.
pub mod status {
    /// Success (`FAM_NO_ERROR`).
    pub const OK: i32 = 0;
    /// `FAM_ERR_INVALID`: a request that does not decode.
    pub const INVALID: i32 = 4;
    /// `FAM_ERR_UNIMPL`: an opcode or version the daemon does not know.
    pub const UNIMPL: i32 = 16;
    /// `FAM_ERR_NAME_TOO_LONG`: a name longer than [`NAME_MAX`](super::NAME_MAX).
    pub const NAME_TOO_LONG: i32 = 23;
}

/// OpenFAM's `Fam_Redundancy_Level`, with its C numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[repr(u8)]
pub enum Redundancy {
    #[default]
    Default = 0,
    None = 1,
    Raid1 = 2,
    Raid5 = 3,
}

/// OpenFAM's `Fam_Memory_Type`, with its C numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[repr(u8)]
pub enum MemoryType {
    #[default]
    Default = 0,
    Volatile = 1,
    Persistent = 2,
}

/// OpenFAM's `Fam_Interleave_Enable`, with its C numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[repr(u8)]
pub enum Interleave {
    #[default]
    Default = 0,
    Enable = 1,
    Disable = 2,
}

impl Redundancy {
    pub const fn from_u8(v: u8) -> Option<Redundancy> {
        Some(match v {
            0 => Redundancy::Default,
            1 => Redundancy::None,
            2 => Redundancy::Raid1,
            3 => Redundancy::Raid5,
            _ => return None,
        })
    }
}

impl MemoryType {
    pub const fn from_u8(v: u8) -> Option<MemoryType> {
        Some(match v {
            0 => MemoryType::Default,
            1 => MemoryType::Volatile,
            2 => MemoryType::Persistent,
            _ => return None,
        })
    }
}

impl Interleave {
    pub const fn from_u8(v: u8) -> Option<Interleave> {
        Some(match v {
            0 => Interleave::Default,
            1 => Interleave::Enable,
            2 => Interleave::Disable,
            _ => return None,
        })
    }
}

/// Lent pages of an item: `len` bytes from GSAS address `addr` on `node`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Extent {
    pub node: u16,
    pub addr: u64,
    pub len: u64,
}

/// At most `N` values in place: a list without allocation. Reads as a slice.
#[derive(Clone, Copy)]
pub struct Bounded<T: Copy + Default, const N: usize> {
    len: usize,
    items: [T; N],
}

/// A region's lenders.
pub type Lenders = Bounded<u16, MAX_LENDERS>;
/// Extents of one reply.
pub type Extents = Bounded<Extent, MAX_EXTENTS>;

impl<T: Copy + Default, const N: usize> Bounded<T, N> {
    /// Empty.
    pub fn new() -> Self {
        Bounded {
            len: 0,
            items: [T::default(); N],
        }
    }

    /// All of `values`, or `None` if there are more than `N`.
    pub fn from_slice(values: &[T]) -> Option<Self> {
        (values.len() <= N).then(|| Self::prefix(values))
    }

    /// The first (at most) `N` of `values`: an item description's first extents.
    pub fn prefix(values: &[T]) -> Self {
        let mut b = Self::new();
        let n = values.len().min(N);
        b.items[..n].copy_from_slice(&values[..n]);
        b.len = n;
        b
    }

    /// Appends `v`; `false` (and nothing changes) when full.
    pub fn push(&mut self, v: T) -> bool {
        let Some(slot) = self.items.get_mut(self.len) else {
            return false;
        };
        *slot = v;
        self.len += 1;
        true
    }

    pub fn as_slice(&self) -> &[T] {
        &self.items[..self.len]
    }
}

impl<T: Copy + Default, const N: usize> Default for Bounded<T, N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Copy + Default, const N: usize> Deref for Bounded<T, N> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        self.as_slice()
    }
}

// Equal when the lists are: what lies past `len` is not part of the value.
impl<T: Copy + Default + PartialEq, const N: usize> PartialEq for Bounded<T, N> {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl<T: Copy + Default + Eq, const N: usize> Eq for Bounded<T, N> {}

impl<T: Copy + Default + core::fmt::Debug, const N: usize> core::fmt::Debug for Bounded<T, N> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        self.as_slice().fmt(f)
    }
}

/// A control request. Ids are the store's `RegionId`/`ItemId` numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Request<'a> {
    Hello {
        version: u16,
    },
    CreateRegion {
        name: &'a str,
        size: u64,
        mode: u32,
        redundancy: Redundancy,
        memory_type: MemoryType,
        interleave: Interleave,
    },
    DestroyRegion {
        region: u64,
    },
    ResizeRegion {
        region: u64,
        size: u64,
    },
    LookupRegion {
        name: &'a str,
    },
    ChangeRegionPermissions {
        region: u64,
        mode: u32,
    },
    StatRegion {
        region: u64,
    },
    /// `name` empty: an anonymous item.
    Allocate {
        region: u64,
        name: &'a str,
        size: u64,
        mode: u32,
    },
    Deallocate {
        item: u64,
    },
    Lookup {
        item: &'a str,
        region: &'a str,
    },
    ChangeItemPermissions {
        item: u64,
        mode: u32,
    },
    StatItem {
        item: u64,
    },
    /// The extents of an item from index `first`: the pages after an item description's
    /// first [`MAX_EXTENTS`]. An item's extents never change while it lives, and item ids are
    /// never reused, so pages fetched one by one make up one consistent list.
    ItemExtents {
        item: u64,
        first: u32,
    },
}

/// A region as the store describes it (`fam::meta::Region`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RegionDesc<'a> {
    pub id: u64,
    pub name: &'a str,
    pub size: u64,
    pub uid: u32,
    pub gid: u32,
    pub mode: u32,
    pub redundancy: Redundancy,
    pub memory_type: MemoryType,
    /// Interleave stripe in bytes; 0: not interleaved.
    pub stripe: u64,
    /// Bytes its items take.
    pub used: u64,
    pub lenders: Lenders,
}

/// An item as the store describes it (`fam::meta::Item`), with its first extents.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ItemDesc<'a> {
    pub id: u64,
    pub region: u64,
    /// Empty for an anonymous item.
    pub name: &'a str,
    pub size: u64,
    pub uid: u32,
    pub gid: u32,
    pub mode: u32,
    /// Interleave stripe in bytes; 0: not interleaved.
    pub stripe: u64,
    /// How many extents the item has. `extents` holds the first `min(extent_count,
    /// MAX_EXTENTS)`; when that is not all, [`Request::ItemExtents`] gets the others.
    pub extent_count: u32,
    pub extents: Extents,
}

/// Extents `first..first + extents.len()` of an item that has `total`: as many as fit, so a
/// page is short only at the end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExtentPage {
    pub total: u32,
    pub first: u32,
    pub extents: Extents,
}

/// What a successful request answers; which one is fixed by the opcode ([`op`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reply<'a> {
    /// Success without data (destroy, resize, permission changes, deallocate).
    Done,
    Hello {
        version: u16,
    },
    Region(RegionDesc<'a>),
    Item(ItemDesc<'a>),
    Extents(ExtentPage),
}

/// A failed request: OpenFAM's error number (not 0) and a sentence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Failure<'a> {
    pub code: i32,
    /// At most [`MAX_ERROR_MESSAGE`] bytes on the wire: longer ones are cut when encoded.
    pub message: &'a str,
}

/// A response: the opcode of the request it answers (kept raw, so an opcode the daemon does
/// not know can still be answered `FAM_ERR_UNIMPL` rather than left to time out) and the
/// outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Response<'a> {
    pub op: u8,
    pub result: Result<Reply<'a>, Failure<'a>>,
}

/// Why a message was not encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EncodeError {
    /// The output buffer is too short ([`MAX_MESSAGE`] bytes always suffice).
    BufferTooSmall,
    /// A name longer than [`NAME_MAX`] bytes.
    NameTooLong(usize),
    /// A failure with code 0 (which means success).
    Status,
    /// A reply other than the one the opcode calls for, or a success for an unknown opcode.
    Reply { op: u8 },
    /// Extents that disagree with the count or page position they come with.
    ExtentCount,
}

/// Why bytes are not a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecodeError {
    /// The input ends inside a field.
    Truncated,
    /// Bytes after the last field (how many).
    Trailing(usize),
    /// An opcode this version does not have.
    Opcode(u8),
    /// A name longer than [`NAME_MAX`] bytes.
    NameTooLong(usize),
    /// A name or message that is not UTF-8.
    Utf8,
    /// An error message longer than [`MAX_ERROR_MESSAGE`].
    MessageTooLong(usize),
    Redundancy(u8),
    MemoryType(u8),
    Interleave(u8),
    /// More lenders than [`MAX_LENDERS`].
    TooManyLenders(usize),
    /// More extents than [`MAX_EXTENTS`].
    TooManyExtents(usize),
    /// Extents that disagree with their count or page position.
    ExtentCount,
}

impl DecodeError {
    /// The status a daemon answers a request that does not decode with (if [`peek`] finds
    /// its opcode and id).
    pub const fn status(self) -> i32 {
        match self {
            DecodeError::Opcode(_) => status::UNIMPL,
            DecodeError::NameTooLong(_) => status::NAME_TOO_LONG,
            _ => status::INVALID,
        }
    }
}

/// The opcode and request id of a message, if it is long enough to have them: enough to
/// answer a request that does not decode.
pub fn peek(bytes: &[u8]) -> Option<(u8, u32)> {
    let mut r = Reader::new(bytes);
    Some((r.u8().ok()?, r.u32().ok()?))
}

/// `s` cut to at most `max` bytes at a character boundary.
pub fn truncate(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// Appends fields to a buffer, refusing to run past its end.
struct Writer<'a> {
    buf: &'a mut [u8],
    pos: usize,
}

impl<'a> Writer<'a> {
    fn new(buf: &'a mut [u8]) -> Self {
        Writer { buf, pos: 0 }
    }

    fn bytes(&mut self, b: &[u8]) -> Result<(), EncodeError> {
        let dst = self
            .buf
            .get_mut(self.pos..self.pos + b.len())
            .ok_or(EncodeError::BufferTooSmall)?;
        dst.copy_from_slice(b);
        self.pos += b.len();
        Ok(())
    }

    fn u8(&mut self, v: u8) -> Result<(), EncodeError> {
        self.bytes(&[v])
    }

    fn u16(&mut self, v: u16) -> Result<(), EncodeError> {
        self.bytes(&v.to_le_bytes())
    }

    fn u32(&mut self, v: u32) -> Result<(), EncodeError> {
        self.bytes(&v.to_le_bytes())
    }

    fn i32(&mut self, v: i32) -> Result<(), EncodeError> {
        self.bytes(&v.to_le_bytes())
    }

    fn u64(&mut self, v: u64) -> Result<(), EncodeError> {
        self.bytes(&v.to_le_bytes())
    }

    fn name(&mut self, s: &str) -> Result<(), EncodeError> {
        if s.len() > NAME_MAX {
            return Err(EncodeError::NameTooLong(s.len()));
        }
        self.u16(s.len() as u16)?;
        self.bytes(s.as_bytes())
    }

    fn extents(&mut self, e: &Extents) -> Result<(), EncodeError> {
        self.u8(e.len() as u8)?;
        for x in e.iter() {
            self.u16(x.node)?;
            self.u64(x.addr)?;
            self.u64(x.len)?;
        }
        Ok(())
    }
}

/// Takes fields from the front of the input.
struct Reader<'a> {
    b: &'a [u8],
}

impl<'a> Reader<'a> {
    fn new(b: &'a [u8]) -> Self {
        Reader { b }
    }

    fn bytes(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        if self.b.len() < n {
            return Err(DecodeError::Truncated);
        }
        let (head, rest) = self.b.split_at(n);
        self.b = rest;
        Ok(head)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], DecodeError> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.bytes(N)?);
        Ok(a)
    }

    fn u8(&mut self) -> Result<u8, DecodeError> {
        Ok(self.array::<1>()?[0])
    }

    fn u16(&mut self) -> Result<u16, DecodeError> {
        self.array().map(u16::from_le_bytes)
    }

    fn u32(&mut self) -> Result<u32, DecodeError> {
        self.array().map(u32::from_le_bytes)
    }

    fn i32(&mut self) -> Result<i32, DecodeError> {
        self.array().map(i32::from_le_bytes)
    }

    fn u64(&mut self) -> Result<u64, DecodeError> {
        self.array().map(u64::from_le_bytes)
    }

    fn str(&mut self, n: usize) -> Result<&'a str, DecodeError> {
        core::str::from_utf8(self.bytes(n)?).map_err(|_| DecodeError::Utf8)
    }

    fn name(&mut self) -> Result<&'a str, DecodeError> {
        let n = usize::from(self.u16()?);
        if n > NAME_MAX {
            return Err(DecodeError::NameTooLong(n));
        }
        self.str(n)
    }

    fn extents(&mut self) -> Result<Extents, DecodeError> {
        let n = usize::from(self.u8()?);
        if n > MAX_EXTENTS {
            return Err(DecodeError::TooManyExtents(n));
        }
        let mut e = Extents::new();
        for _ in 0..n {
            let x = Extent {
                node: self.u16()?,
                addr: self.u64()?,
                len: self.u64()?,
            };
            e.push(x);
        }
        Ok(e)
    }

    fn end(&self) -> Result<(), DecodeError> {
        match self.b.len() {
            0 => Ok(()),
            n => Err(DecodeError::Trailing(n)),
        }
    }
}

impl<'a> Request<'a> {
    /// Its opcode ([`op`]).
    pub const fn op(&self) -> u8 {
        match self {
            Request::Hello { .. } => op::HELLO,
            Request::CreateRegion { .. } => op::CREATE_REGION,
            Request::DestroyRegion { .. } => op::DESTROY_REGION,
            Request::ResizeRegion { .. } => op::RESIZE_REGION,
            Request::LookupRegion { .. } => op::LOOKUP_REGION,
            Request::ChangeRegionPermissions { .. } => op::CHANGE_REGION_PERMISSIONS,
            Request::StatRegion { .. } => op::STAT_REGION,
            Request::Allocate { .. } => op::ALLOCATE,
            Request::Deallocate { .. } => op::DEALLOCATE,
            Request::Lookup { .. } => op::LOOKUP,
            Request::ChangeItemPermissions { .. } => op::CHANGE_ITEM_PERMISSIONS,
            Request::StatItem { .. } => op::STAT_ITEM,
            Request::ItemExtents { .. } => op::ITEM_EXTENTS,
        }
    }

    /// Writes it, with request id `id`, to the front of `out`; returns the length
    /// (at most [`MAX_REQUEST_LEN`]).
    pub fn encode(&self, id: u32, out: &mut [u8]) -> Result<usize, EncodeError> {
        let mut w = Writer::new(out);
        w.u8(self.op())?;
        w.u32(id)?;
        match *self {
            Request::Hello { version } => w.u16(version)?,
            Request::CreateRegion {
                name,
                size,
                mode,
                redundancy,
                memory_type,
                interleave,
            } => {
                w.name(name)?;
                w.u64(size)?;
                w.u32(mode)?;
                w.u8(redundancy as u8)?;
                w.u8(memory_type as u8)?;
                w.u8(interleave as u8)?;
            }
            Request::DestroyRegion { region }
            | Request::StatRegion { region }
            | Request::Deallocate { item: region }
            | Request::StatItem { item: region } => w.u64(region)?,
            Request::ResizeRegion { region, size } => {
                w.u64(region)?;
                w.u64(size)?;
            }
            Request::LookupRegion { name } => w.name(name)?,
            Request::ChangeRegionPermissions { region, mode }
            | Request::ChangeItemPermissions { item: region, mode } => {
                w.u64(region)?;
                w.u32(mode)?;
            }
            Request::Allocate {
                region,
                name,
                size,
                mode,
            } => {
                w.u64(region)?;
                w.name(name)?;
                w.u64(size)?;
                w.u32(mode)?;
            }
            Request::Lookup { item, region } => {
                w.name(item)?;
                w.name(region)?;
            }
            Request::ItemExtents { item, first } => {
                w.u64(item)?;
                w.u32(first)?;
            }
        }
        Ok(w.pos)
    }

    /// Reads a whole message: the request id and the request, names borrowed from `bytes`.
    pub fn decode(bytes: &'a [u8]) -> Result<(u32, Request<'a>), DecodeError> {
        let mut r = Reader::new(bytes);
        let opcode = r.u8()?;
        let id = r.u32()?;
        let req = match opcode {
            op::HELLO => Request::Hello { version: r.u16()? },
            op::CREATE_REGION => {
                let name = r.name()?;
                let size = r.u64()?;
                let mode = r.u32()?;
                let v = r.u8()?;
                let redundancy = Redundancy::from_u8(v).ok_or(DecodeError::Redundancy(v))?;
                let v = r.u8()?;
                let memory_type = MemoryType::from_u8(v).ok_or(DecodeError::MemoryType(v))?;
                let v = r.u8()?;
                let interleave = Interleave::from_u8(v).ok_or(DecodeError::Interleave(v))?;
                Request::CreateRegion {
                    name,
                    size,
                    mode,
                    redundancy,
                    memory_type,
                    interleave,
                }
            }
            op::DESTROY_REGION => Request::DestroyRegion { region: r.u64()? },
            op::RESIZE_REGION => Request::ResizeRegion {
                region: r.u64()?,
                size: r.u64()?,
            },
            op::LOOKUP_REGION => Request::LookupRegion { name: r.name()? },
            op::CHANGE_REGION_PERMISSIONS => Request::ChangeRegionPermissions {
                region: r.u64()?,
                mode: r.u32()?,
            },
            op::STAT_REGION => Request::StatRegion { region: r.u64()? },
            op::ALLOCATE => Request::Allocate {
                region: r.u64()?,
                name: r.name()?,
                size: r.u64()?,
                mode: r.u32()?,
            },
            op::DEALLOCATE => Request::Deallocate { item: r.u64()? },
            op::LOOKUP => Request::Lookup {
                item: r.name()?,
                region: r.name()?,
            },
            op::CHANGE_ITEM_PERMISSIONS => Request::ChangeItemPermissions {
                item: r.u64()?,
                mode: r.u32()?,
            },
            op::STAT_ITEM => Request::StatItem { item: r.u64()? },
            op::ITEM_EXTENTS => Request::ItemExtents {
                item: r.u64()?,
                first: r.u32()?,
            },
            other => return Err(DecodeError::Opcode(other)),
        };
        r.end()?;
        Ok((id, req))
    }
}

/// The shape of a successful reply, by opcode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Done,
    Hello,
    Region,
    Item,
    Extents,
}

const fn kind_of(opcode: u8) -> Option<Kind> {
    Some(match opcode {
        op::HELLO => Kind::Hello,
        op::CREATE_REGION | op::LOOKUP_REGION | op::STAT_REGION => Kind::Region,
        op::ALLOCATE | op::LOOKUP | op::STAT_ITEM => Kind::Item,
        op::ITEM_EXTENTS => Kind::Extents,
        op::DESTROY_REGION
        | op::RESIZE_REGION
        | op::CHANGE_REGION_PERMISSIONS
        | op::DEALLOCATE
        | op::CHANGE_ITEM_PERMISSIONS => Kind::Done,
        _ => return None,
    })
}

impl Reply<'_> {
    const fn kind(&self) -> Kind {
        match self {
            Reply::Done => Kind::Done,
            Reply::Hello { .. } => Kind::Hello,
            Reply::Region(_) => Kind::Region,
            Reply::Item(_) => Kind::Item,
            Reply::Extents(_) => Kind::Extents,
        }
    }
}

/// Whether a description carries the extents it should: all of them up to [`MAX_EXTENTS`].
fn item_extents_ok(total: u32, carried: usize) -> bool {
    carried as u64 == u64::from(total).min(MAX_EXTENTS as u64)
}

/// Whether a page is one the daemon sends: not empty, inside the list, full unless last.
fn page_ok(total: u32, first: u32, carried: usize) -> bool {
    let end = u64::from(first) + carried as u64;
    carried > 0 && end <= u64::from(total) && (carried == MAX_EXTENTS || end == u64::from(total))
}

impl<'a> Failure<'a> {
    /// A failure with OpenFAM error `code`, its message cut to [`MAX_ERROR_MESSAGE`] bytes.
    pub fn new(code: i32, message: &'a str) -> Failure<'a> {
        Failure {
            code,
            message: truncate(message, MAX_ERROR_MESSAGE),
        }
    }
}

impl<'a> Response<'a> {
    /// A success.
    pub const fn ok(op: u8, reply: Reply<'a>) -> Response<'a> {
        Response {
            op,
            result: Ok(reply),
        }
    }

    /// A failure (the message is cut to [`MAX_ERROR_MESSAGE`] bytes).
    pub fn err(op: u8, code: i32, message: &'a str) -> Response<'a> {
        Response {
            op,
            result: Err(Failure::new(code, message)),
        }
    }

    /// The status it carries: 0 or the failure's code.
    pub const fn status(&self) -> i32 {
        match &self.result {
            Ok(_) => status::OK,
            Err(f) => f.code,
        }
    }

    /// Writes it, answering request `id`, to the front of `out`; returns the length (at most
    /// [`MAX_RESPONSE_LEN`]).
    pub fn encode(&self, id: u32, out: &mut [u8]) -> Result<usize, EncodeError> {
        let mut w = Writer::new(out);
        w.u8(self.op)?;
        w.u32(id)?;
        let reply = match &self.result {
            Err(f) => {
                if f.code == status::OK {
                    return Err(EncodeError::Status);
                }
                let m = truncate(f.message, MAX_ERROR_MESSAGE);
                w.i32(f.code)?;
                w.u8(m.len() as u8)?;
                w.bytes(m.as_bytes())?;
                return Ok(w.pos);
            }
            Ok(reply) => reply,
        };
        if kind_of(self.op) != Some(reply.kind()) {
            return Err(EncodeError::Reply { op: self.op });
        }
        w.i32(status::OK)?;
        match reply {
            Reply::Done => {}
            Reply::Hello { version } => w.u16(*version)?,
            Reply::Region(d) => {
                w.u64(d.id)?;
                w.name(d.name)?;
                w.u64(d.size)?;
                w.u32(d.uid)?;
                w.u32(d.gid)?;
                w.u32(d.mode)?;
                w.u8(d.redundancy as u8)?;
                w.u8(d.memory_type as u8)?;
                w.u64(d.stripe)?;
                w.u64(d.used)?;
                w.u8(d.lenders.len() as u8)?;
                for &l in d.lenders.iter() {
                    w.u16(l)?;
                }
            }
            Reply::Item(d) => {
                if !item_extents_ok(d.extent_count, d.extents.len()) {
                    return Err(EncodeError::ExtentCount);
                }
                w.u64(d.id)?;
                w.u64(d.region)?;
                w.name(d.name)?;
                w.u64(d.size)?;
                w.u32(d.uid)?;
                w.u32(d.gid)?;
                w.u32(d.mode)?;
                w.u64(d.stripe)?;
                w.u32(d.extent_count)?;
                w.extents(&d.extents)?;
            }
            Reply::Extents(p) => {
                if !page_ok(p.total, p.first, p.extents.len()) {
                    return Err(EncodeError::ExtentCount);
                }
                w.u32(p.total)?;
                w.u32(p.first)?;
                w.extents(&p.extents)?;
            }
        }
        Ok(w.pos)
    }

    /// Reads a whole message: the request id it answers and the response, names and message
    /// borrowed from `bytes`.
    pub fn decode(bytes: &'a [u8]) -> Result<(u32, Response<'a>), DecodeError> {
        let mut r = Reader::new(bytes);
        let opcode = r.u8()?;
        let id = r.u32()?;
        let code = r.i32()?;
        let result = if code != status::OK {
            let n = usize::from(r.u8()?);
            if n > MAX_ERROR_MESSAGE {
                return Err(DecodeError::MessageTooLong(n));
            }
            Err(Failure {
                code,
                message: r.str(n)?,
            })
        } else {
            Ok(match kind_of(opcode).ok_or(DecodeError::Opcode(opcode))? {
                Kind::Done => Reply::Done,
                Kind::Hello => Reply::Hello { version: r.u16()? },
                Kind::Region => Reply::Region(region_desc(&mut r)?),
                Kind::Item => Reply::Item(item_desc(&mut r)?),
                Kind::Extents => {
                    let total = r.u32()?;
                    let first = r.u32()?;
                    let extents = r.extents()?;
                    if !page_ok(total, first, extents.len()) {
                        return Err(DecodeError::ExtentCount);
                    }
                    Reply::Extents(ExtentPage {
                        total,
                        first,
                        extents,
                    })
                }
            })
        };
        r.end()?;
        Ok((id, Response { op: opcode, result }))
    }
}

fn region_desc<'a>(r: &mut Reader<'a>) -> Result<RegionDesc<'a>, DecodeError> {
    let id = r.u64()?;
    let name = r.name()?;
    let size = r.u64()?;
    let uid = r.u32()?;
    let gid = r.u32()?;
    let mode = r.u32()?;
    let v = r.u8()?;
    let redundancy = Redundancy::from_u8(v).ok_or(DecodeError::Redundancy(v))?;
    let v = r.u8()?;
    let memory_type = MemoryType::from_u8(v).ok_or(DecodeError::MemoryType(v))?;
    let stripe = r.u64()?;
    let used = r.u64()?;
    let n = usize::from(r.u8()?);
    if n > MAX_LENDERS {
        return Err(DecodeError::TooManyLenders(n));
    }
    let mut lenders = Lenders::new();
    for _ in 0..n {
        lenders.push(r.u16()?);
    }
    Ok(RegionDesc {
        id,
        name,
        size,
        uid,
        gid,
        mode,
        redundancy,
        memory_type,
        stripe,
        used,
        lenders,
    })
}

fn item_desc<'a>(r: &mut Reader<'a>) -> Result<ItemDesc<'a>, DecodeError> {
    let d = ItemDesc {
        id: r.u64()?,
        region: r.u64()?,
        name: r.name()?,
        size: r.u64()?,
        uid: r.u32()?,
        gid: r.u32()?,
        mode: r.u32()?,
        stripe: r.u64()?,
        extent_count: r.u32()?,
        extents: r.extents()?,
    };
    if !item_extents_ok(d.extent_count, d.extents.len()) {
        return Err(DecodeError::ExtentCount);
    }
    Ok(d)
}

#[cfg(test)]
mod tests {
    extern crate std;

    use super::*;
    use std::vec::Vec;

    const LONG_A: [u8; NAME_MAX] = [b'a'; NAME_MAX];
    const LONG_B: [u8; NAME_MAX] = [b'b'; NAME_MAX];

    /// A name of NAME_MAX bytes, `a`s or `b`s (distinct, to find them in encodings).
    fn long(which: u8) -> &'static str {
        let bytes: &'static [u8; NAME_MAX] = if which == b'a' { &LONG_A } else { &LONG_B };
        core::str::from_utf8(bytes).unwrap()
    }

    fn extent(i: usize) -> Extent {
        let node = (i % 16) as u16;
        Extent {
            node,
            addr: crate::gsas::addr(node, 0x10_0000 + i as u64 * 4096),
            len: 4096 * (i as u64 + 1),
        }
    }

    fn extents(n: usize) -> Extents {
        let mut e = Extents::new();
        for i in 0..n {
            assert!(e.push(extent(i)));
        }
        e
    }

    fn lenders(n: usize) -> Lenders {
        let all: Vec<u16> = (0..n as u16).map(|i| 15 - i).collect();
        Lenders::from_slice(&all).unwrap()
    }

    fn requests() -> Vec<Request<'static>> {
        std::vec![
            Request::Hello { version: VERSION },
            Request::CreateRegion {
                name: "région",
                size: 1 << 30,
                mode: 0o640,
                redundancy: Redundancy::None,
                memory_type: MemoryType::Volatile,
                interleave: Interleave::Enable,
            },
            Request::CreateRegion {
                name: long(b'a'),
                size: u64::MAX,
                mode: u32::MAX,
                redundancy: Redundancy::Raid5,
                memory_type: MemoryType::Persistent,
                interleave: Interleave::Disable,
            },
            Request::CreateRegion {
                name: "",
                size: 0,
                mode: 0,
                redundancy: Redundancy::Default,
                memory_type: MemoryType::Default,
                interleave: Interleave::Default,
            },
            Request::DestroyRegion { region: 7 },
            Request::ResizeRegion {
                region: u64::MAX,
                size: 0x1234_5678_9abc_def0,
            },
            Request::LookupRegion { name: "r" },
            Request::LookupRegion { name: long(b'a') },
            Request::ChangeRegionPermissions {
                region: 3,
                mode: 0o777,
            },
            Request::StatRegion { region: 1 },
            Request::Allocate {
                region: 2,
                name: "item",
                size: 5000,
                mode: 0o600,
            },
            Request::Allocate {
                region: 2,
                name: "",
                size: 1,
                mode: 0,
            },
            Request::Deallocate { item: 9 },
            Request::Lookup {
                item: "i",
                region: "r",
            },
            Request::Lookup {
                item: long(b'a'),
                region: long(b'b'),
            },
            Request::Lookup {
                item: "",
                region: "",
            },
            Request::ChangeItemPermissions {
                item: 4,
                mode: 0o444,
            },
            Request::StatItem { item: 5 },
            Request::ItemExtents { item: 5, first: 32 },
        ]
    }

    fn region(name: &str, n: usize) -> RegionDesc<'_> {
        RegionDesc {
            id: 11,
            name,
            size: 1 << 40,
            uid: 1000,
            gid: 100,
            mode: 0o750,
            redundancy: Redundancy::None,
            memory_type: MemoryType::Volatile,
            stripe: 64 << 10,
            used: 12288,
            lenders: lenders(n),
        }
    }

    fn item(name: &str, total: u32) -> ItemDesc<'_> {
        ItemDesc {
            id: 42,
            region: 11,
            name,
            size: 123_456_789,
            uid: 1000,
            gid: 100,
            mode: 0o640,
            stripe: 0,
            extent_count: total,
            extents: extents((total as usize).min(MAX_EXTENTS)),
        }
    }

    fn responses() -> Vec<Response<'static>> {
        let mut v = std::vec![
            Response::ok(op::HELLO, Reply::Hello { version: VERSION }),
            Response::ok(op::CREATE_REGION, Reply::Region(region("r", 3))),
            Response::ok(op::LOOKUP_REGION, Reply::Region(region(long(b'a'), 0))),
            Response::ok(
                op::STAT_REGION,
                Reply::Region(region(long(b'a'), MAX_LENDERS))
            ),
            Response::ok(op::ALLOCATE, Reply::Item(item("", 1))),
            Response::ok(op::LOOKUP, Reply::Item(item("ïtem", 5))),
            Response::ok(op::STAT_ITEM, Reply::Item(item(long(b'a'), 32))),
            Response::ok(op::STAT_ITEM, Reply::Item(item(long(b'a'), 100))),
            Response::ok(op::STAT_ITEM, Reply::Item(item("none", 0))),
            Response::ok(
                op::ITEM_EXTENTS,
                Reply::Extents(ExtentPage {
                    total: 100,
                    first: 32,
                    extents: extents(MAX_EXTENTS),
                }),
            ),
            Response::ok(
                op::ITEM_EXTENTS,
                Reply::Extents(ExtentPage {
                    total: 100,
                    first: 96,
                    extents: extents(4),
                }),
            ),
            Response::err(op::LOOKUP_REGION, 8, "not found: region \"r\""),
            Response::err(op::ALLOCATE, 14, ""),
            Response::err(op::CREATE_REGION, -1, "négatif"),
            Response::err(0xee, status::UNIMPL, "unknown opcode"),
            Response::err(op::STAT_ITEM, 21, long(b'b')),
        ];
        for opcode in [
            op::DESTROY_REGION,
            op::RESIZE_REGION,
            op::CHANGE_REGION_PERMISSIONS,
            op::DEALLOCATE,
            op::CHANGE_ITEM_PERMISSIONS,
        ] {
            v.push(Response::ok(opcode, Reply::Done));
        }
        v
    }

    fn encode_request(r: &Request, id: u32) -> Vec<u8> {
        let mut buf = [0u8; MAX_MESSAGE];
        let n = r.encode(id, &mut buf).unwrap();
        buf[..n].to_vec()
    }

    fn encode_response(r: &Response, id: u32) -> Vec<u8> {
        let mut buf = [0u8; MAX_MESSAGE];
        let n = r.encode(id, &mut buf).unwrap();
        buf[..n].to_vec()
    }

    /// Sends `msg` through fragments and a fresh reassembler, checking that only the last
    /// fragment completes it; returns what came out.
    fn carry(id: u8, msg: &[u8]) -> Vec<u8> {
        let mut r = Reassembler::new();
        let frags: Vec<_> = fragments(id, msg).unwrap().collect();
        assert_eq!(frags.len(), fragment_count(msg.len()));
        let mut out = None;
        for (i, f) in frags.iter().enumerate() {
            let fed = r.feed(f).unwrap();
            assert_eq!(fed.interrupted, None);
            assert_eq!(fed.message.is_some(), i + 1 == frags.len(), "fragment {i}");
            out = fed.message.map(|m| m.to_vec());
        }
        assert_eq!(r.in_progress(), None);
        out.unwrap()
    }

    // ---- messages ----

    #[test]
    fn every_request_round_trips() {
        let all = requests();
        let mut ops: Vec<u8> = all.iter().map(|r| r.op()).collect();
        ops.sort_unstable();
        ops.dedup();
        assert_eq!(ops.len(), 13, "every opcode has a sample");
        for (i, req) in all.iter().enumerate() {
            let id = 0xdead_0000 + i as u32;
            let bytes = encode_request(req, id);
            assert!(bytes.len() <= MAX_REQUEST_LEN);
            let carried = carry(i as u8, &bytes);
            assert_eq!(carried, bytes);
            assert_eq!(Request::decode(&carried), Ok((id, *req)));
            assert_eq!(peek(&carried), Some((req.op(), id)));
        }
    }

    #[test]
    fn every_response_round_trips() {
        for (i, resp) in responses().iter().enumerate() {
            let id = 0x5eed_0000 + i as u32;
            let bytes = encode_response(resp, id);
            assert!(bytes.len() <= MAX_RESPONSE_LEN);
            let carried = carry(200u8.wrapping_add(i as u8), &bytes);
            assert_eq!(Response::decode(&carried), Ok((id, *resp)), "{resp:?}");
        }
    }

    #[test]
    fn exact_bytes() {
        let req = Request::ResizeRegion {
            region: 0x0102,
            size: 0x0a0b_0c0d,
        };
        let b = encode_request(&req, 0x1122_3344);
        // Opcode, request id, region, size.
        let want = [
            &[op::RESIZE_REGION][..],
            &[0x44, 0x33, 0x22, 0x11],
            &[0x02, 0x01, 0, 0, 0, 0, 0, 0],
            &[0x0d, 0x0c, 0x0b, 0x0a, 0, 0, 0, 0],
        ]
        .concat();
        assert_eq!(b, want);
        let b = encode_request(&Request::LookupRegion { name: "ab" }, 1);
        assert_eq!(b, [op::LOOKUP_REGION, 1, 0, 0, 0, 2, 0, b'a', b'b']);
        let b = encode_response(&Response::err(op::STAT_ITEM, 8, "no"), 5);
        assert_eq!(b, [op::STAT_ITEM, 5, 0, 0, 0, 8, 0, 0, 0, 2, b'n', b'o']);
        let b = encode_response(&Response::ok(op::DEALLOCATE, Reply::Done), 6);
        assert_eq!(b, [op::DEALLOCATE, 6, 0, 0, 0, 0, 0, 0, 0]);
        // And the fragment carrying a short message.
        let p: Vec<_> = fragments(9, &b).unwrap().collect();
        let mut want = [0u8; PAYLOAD_LEN];
        want[..4].copy_from_slice(&[flag::FIRST | flag::LAST, 9, 0, 9]);
        want[4..13].copy_from_slice(&b);
        assert_eq!(p, [want]);
    }

    #[test]
    fn largest_messages_are_the_limits() {
        let req = Request::Lookup {
            item: long(b'a'),
            region: long(b'b'),
        };
        assert_eq!(encode_request(&req, 0).len(), MAX_REQUEST_LEN);
        let resp = Response::ok(op::STAT_ITEM, Reply::Item(item(long(b'a'), 1000)));
        let b = encode_response(&resp, 0);
        assert_eq!(b.len(), MAX_RESPONSE_LEN);
        assert_eq!(MAX_RESPONSE_LEN, 891);
        let mut exact = std::vec![0u8; b.len()];
        assert_eq!(resp.encode(0, &mut exact), Ok(b.len()));
    }

    #[test]
    fn short_output_buffer() {
        for req in requests() {
            let n = encode_request(&req, 1).len();
            let mut buf = std::vec![0u8; n - 1];
            assert_eq!(req.encode(1, &mut buf), Err(EncodeError::BufferTooSmall));
        }
        for resp in responses() {
            let n = encode_response(&resp, 1).len();
            let mut buf = std::vec![0u8; n - 1];
            assert_eq!(resp.encode(1, &mut buf), Err(EncodeError::BufferTooSmall));
        }
    }

    #[test]
    fn truncated_anywhere() {
        for req in requests() {
            let b = encode_request(&req, 77);
            for n in 0..b.len() {
                assert_eq!(
                    Request::decode(&b[..n]),
                    Err(DecodeError::Truncated),
                    "{req:?} cut at {n}"
                );
            }
        }
        for resp in responses() {
            let b = encode_response(&resp, 77);
            for n in 0..b.len() {
                assert_eq!(
                    Response::decode(&b[..n]),
                    Err(DecodeError::Truncated),
                    "{resp:?} cut at {n}"
                );
            }
        }
    }

    #[test]
    fn trailing_bytes() {
        for req in requests() {
            let mut b = encode_request(&req, 1);
            b.push(0);
            assert_eq!(Request::decode(&b), Err(DecodeError::Trailing(1)));
            b.extend_from_slice(&[1, 2]);
            assert_eq!(Request::decode(&b), Err(DecodeError::Trailing(3)));
        }
        for resp in responses() {
            let mut b = encode_response(&resp, 1);
            b.push(0);
            assert_eq!(Response::decode(&b), Err(DecodeError::Trailing(1)));
        }
    }

    #[test]
    fn unknown_opcodes() {
        let known: Vec<u8> = requests().iter().map(|r| r.op()).collect();
        for opcode in 0..=255u8 {
            let mut b = [opcode, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
            if known.contains(&opcode) {
                assert_ne!(Request::decode(&b), Err(DecodeError::Opcode(opcode)));
                continue;
            }
            assert_eq!(Request::decode(&b), Err(DecodeError::Opcode(opcode)));
            assert_eq!(peek(&b), Some((opcode, 1)));
            // A success for it is neither encoded nor decoded...
            b[5..9].fill(0);
            assert_eq!(Response::decode(&b[..9]), Err(DecodeError::Opcode(opcode)));
            let done = Response::ok(opcode, Reply::Done);
            assert_eq!(
                done.encode(1, &mut [0; MAX_MESSAGE]),
                Err(EncodeError::Reply { op: opcode })
            );
            // ...but a failure is: the daemon can refuse what it does not know.
            let no = Response::err(opcode, status::UNIMPL, "?");
            let enc = encode_response(&no, 3);
            assert_eq!(Response::decode(&enc), Ok((3, no)));
        }
    }

    #[test]
    fn reply_must_fit_the_opcode() {
        let cases = [
            Response::ok(op::DESTROY_REGION, Reply::Region(region("r", 1))),
            Response::ok(op::STAT_REGION, Reply::Item(item("i", 1))),
            Response::ok(op::STAT_ITEM, Reply::Done),
            Response::ok(op::HELLO, Reply::Done),
            Response::ok(op::LOOKUP, Reply::Hello { version: 1 }),
        ];
        for c in cases {
            assert_eq!(
                c.encode(0, &mut [0; MAX_MESSAGE]),
                Err(EncodeError::Reply { op: c.op })
            );
        }
        // A failure must say why: code 0 is success.
        let zero = Response {
            op: op::STAT_ITEM,
            result: Err(Failure {
                code: 0,
                message: "x",
            }),
        };
        assert_eq!(
            zero.encode(0, &mut [0; MAX_MESSAGE]),
            Err(EncodeError::Status)
        );
    }

    /// `enc` with the first NAME_MAX-long run of `c` turned into one of NAME_MAX + 1.
    fn lengthen_name(enc: &[u8], c: u8) -> Vec<u8> {
        let at = enc
            .windows(NAME_MAX)
            .position(|w| w.iter().all(|&b| b == c))
            .unwrap();
        let mut b = enc.to_vec();
        assert_eq!(&b[at - 2..at], &(NAME_MAX as u16).to_le_bytes());
        b[at - 2..at].copy_from_slice(&(NAME_MAX as u16 + 1).to_le_bytes());
        b.insert(at, c);
        b
    }

    #[test]
    fn names_of_256_bytes() {
        let buf = [b'n'; NAME_MAX + 1];
        let n256 = core::str::from_utf8(&buf).unwrap();
        let too_long = [
            Request::LookupRegion { name: n256 },
            Request::Lookup {
                item: "i",
                region: n256,
            },
            Request::Allocate {
                region: 1,
                name: n256,
                size: 1,
                mode: 0,
            },
        ];
        for r in too_long {
            assert_eq!(
                r.encode(0, &mut [0; MAX_MESSAGE]),
                Err(EncodeError::NameTooLong(256))
            );
        }
        let r = Response::ok(op::STAT_REGION, Reply::Region(region(n256, 1)));
        assert_eq!(
            r.encode(0, &mut [0; MAX_MESSAGE]),
            Err(EncodeError::NameTooLong(256))
        );

        let mut checked = 0;
        for req in requests() {
            let enc = encode_request(&req, 1);
            for c in [b'a', b'b'] {
                if enc.windows(NAME_MAX).any(|w| w.iter().all(|&b| b == c)) {
                    let b = lengthen_name(&enc, c);
                    assert_eq!(Request::decode(&b), Err(DecodeError::NameTooLong(256)));
                    assert_eq!(DecodeError::NameTooLong(256).status(), 23);
                    checked += 1;
                }
            }
        }
        assert_eq!(checked, 4, "create, lookup region, lookup's two names");
        let mut checked = 0;
        for resp in responses() {
            let enc = encode_response(&resp, 1);
            if resp.result.is_ok() && enc.windows(NAME_MAX).any(|w| w.iter().all(|&b| b == b'a')) {
                let b = lengthen_name(&enc, b'a');
                assert_eq!(Response::decode(&b), Err(DecodeError::NameTooLong(256)));
                checked += 1;
            }
        }
        assert_eq!(checked, 4, "region and item descriptions");
        // Longest the length field can say.
        let mut b = std::vec![op::LOOKUP_REGION, 0, 0, 0, 0, 0xff, 0xff];
        b.resize(7 + 0xffff, b'n');
        assert_eq!(Request::decode(&b), Err(DecodeError::NameTooLong(0xffff)));
    }

    #[test]
    fn bad_utf8() {
        // Every name and message, made invalid where the sample had "~~".
        let reqs = [
            Request::CreateRegion {
                name: "~~",
                size: 1,
                mode: 0,
                redundancy: Redundancy::Default,
                memory_type: MemoryType::Default,
                interleave: Interleave::Default,
            },
            Request::LookupRegion { name: "~~" },
            Request::Allocate {
                region: 1,
                name: "~~",
                size: 1,
                mode: 0,
            },
            Request::Lookup {
                item: "~~",
                region: "r",
            },
            Request::Lookup {
                item: "i",
                region: "~~",
            },
        ];
        let spoil = |mut b: Vec<u8>, bad: [u8; 2]| {
            let at = b.windows(2).position(|w| w == b"~~").unwrap();
            b[at..at + 2].copy_from_slice(&bad);
            b
        };
        // A lone continuation byte, a truncated sequence, and a surrogate's first bytes.
        for bad in [[0x80, b'x'], [b'x', 0xc3], [0xed, 0xa0]] {
            for r in reqs {
                let b = spoil(encode_request(&r, 1), bad);
                assert_eq!(Request::decode(&b), Err(DecodeError::Utf8), "{r:?}");
            }
            let resps = [
                Response::ok(op::STAT_REGION, Reply::Region(region("~~", 1))),
                Response::ok(op::STAT_ITEM, Reply::Item(item("~~", 1))),
                Response::err(op::STAT_ITEM, 8, "~~"),
            ];
            for r in resps {
                let b = spoil(encode_response(&r, 1), bad);
                assert_eq!(Response::decode(&b), Err(DecodeError::Utf8), "{r:?}");
            }
        }
    }

    #[test]
    fn enum_bytes_out_of_range() {
        let create = Request::CreateRegion {
            name: "r",
            size: 1,
            mode: 0,
            redundancy: Redundancy::Default,
            memory_type: MemoryType::Default,
            interleave: Interleave::Default,
        };
        let b = encode_request(&create, 1);
        let n = b.len();
        for v in 0..=255u8 {
            let mut x = b.clone();
            x[n - 3] = v;
            let want = Redundancy::from_u8(v).map_or(Err(DecodeError::Redundancy(v)), |_| Ok(()));
            assert_eq!(Request::decode(&x).map(|_| ()), want);
            let mut x = b.clone();
            x[n - 2] = v;
            let want = MemoryType::from_u8(v).map_or(Err(DecodeError::MemoryType(v)), |_| Ok(()));
            assert_eq!(Request::decode(&x).map(|_| ()), want);
            let mut x = b.clone();
            x[n - 1] = v;
            let want = Interleave::from_u8(v).map_or(Err(DecodeError::Interleave(v)), |_| Ok(()));
            assert_eq!(Request::decode(&x).map(|_| ()), want);
        }
        assert_eq!(Redundancy::from_u8(3), Some(Redundancy::Raid5));
        assert_eq!(Redundancy::from_u8(4), None);
        assert_eq!(MemoryType::from_u8(3), None);
        assert_eq!(Interleave::from_u8(3), None);
        // In a region description: after id, name "r", size, uid, gid, mode.
        let d = encode_response(
            &Response::ok(op::STAT_REGION, Reply::Region(region("r", 0))),
            1,
        );
        let at = RESPONSE_HEAD_LEN + 8 + 3 + 8 + 12;
        let mut x = d.clone();
        x[at] = 4;
        assert_eq!(Response::decode(&x), Err(DecodeError::Redundancy(4)));
        let mut x = d.clone();
        x[at + 1] = 3;
        assert_eq!(Response::decode(&x), Err(DecodeError::MemoryType(3)));
    }

    #[test]
    fn too_many_extents_and_lenders() {
        // An item description with no extents ends with the extent count byte.
        let d = encode_response(&Response::ok(op::STAT_ITEM, Reply::Item(item("i", 0))), 1);
        for n in [MAX_EXTENTS + 1, 255] {
            let mut x = d.clone();
            *x.last_mut().unwrap() = n as u8;
            x.resize(x.len() + n * EXTENT_LEN, 0);
            assert_eq!(Response::decode(&x), Err(DecodeError::TooManyExtents(n)));
        }
        // An extent page: total, first, count.
        let page = Response::ok(
            op::ITEM_EXTENTS,
            Reply::Extents(ExtentPage {
                total: 1000,
                first: 0,
                extents: extents(MAX_EXTENTS),
            }),
        );
        let mut x = encode_response(&page, 1);
        x[RESPONSE_HEAD_LEN + 8] = MAX_EXTENTS as u8 + 1;
        x.resize(x.len() + EXTENT_LEN, 0);
        assert_eq!(
            Response::decode(&x),
            Err(DecodeError::TooManyExtents(MAX_EXTENTS + 1))
        );
        // A region description with no lenders ends with the lender count byte.
        let d = encode_response(
            &Response::ok(op::STAT_REGION, Reply::Region(region("r", 0))),
            1,
        );
        let mut x = d.clone();
        *x.last_mut().unwrap() = MAX_LENDERS as u8 + 1;
        x.resize(x.len() + 2 * (MAX_LENDERS + 1), 0);
        assert_eq!(
            Response::decode(&x),
            Err(DecodeError::TooManyLenders(MAX_LENDERS + 1))
        );
        // The lists themselves refuse more than they hold.
        assert!(Extents::from_slice(&[Extent::default(); MAX_EXTENTS + 1]).is_none());
        assert_eq!(Extents::prefix(&[extent(1); 40]).len(), MAX_EXTENTS);
        let mut l = lenders(MAX_LENDERS);
        assert!(!l.push(99));
        assert_eq!(l.len(), MAX_LENDERS);
    }

    #[test]
    fn extent_counts_must_agree() {
        // An item description carries min(count, MAX_EXTENTS) extents, no fewer, no more.
        for (count, carried) in [(5, 4), (5, 6), (100, 31), (0, 1), (1, 0)] {
            let mut d = item("i", 0);
            d.extent_count = count;
            d.extents = extents(carried);
            let r = Response::ok(op::STAT_ITEM, Reply::Item(d));
            assert_eq!(
                r.encode(0, &mut [0; MAX_MESSAGE]),
                Err(EncodeError::ExtentCount),
                "{count} {carried}"
            );
            // The same bytes crafted by hand are refused by the decoder.
            let good = encode_response(
                &Response::ok(op::STAT_ITEM, Reply::Item(item("i", carried as u32))),
                0,
            );
            let mut x = good.clone();
            let at = good.len() - 1 - carried * EXTENT_LEN - 4;
            x[at..at + 4].copy_from_slice(&count.to_le_bytes());
            assert_eq!(Response::decode(&x), Err(DecodeError::ExtentCount));
        }
        // Pages: not empty, inside the list, full unless last.
        for (total, first, carried) in [
            (10, 0, 0),
            (10, 10, 0),
            (10, 8, 3),
            (100, 0, 31),
            (10, 10, 1),
        ] {
            let p = ExtentPage {
                total,
                first,
                extents: extents(carried),
            };
            let r = Response::ok(op::ITEM_EXTENTS, Reply::Extents(p));
            assert_eq!(
                r.encode(0, &mut [0; MAX_MESSAGE]),
                Err(EncodeError::ExtentCount)
            );
            let mut x = std::vec![op::ITEM_EXTENTS, 0, 0, 0, 0, 0, 0, 0, 0];
            x.extend_from_slice(&total.to_le_bytes());
            x.extend_from_slice(&first.to_le_bytes());
            x.push(carried as u8);
            x.resize(x.len() + carried * EXTENT_LEN, 0);
            assert_eq!(Response::decode(&x), Err(DecodeError::ExtentCount));
        }
        // first + count past u32 does not wrap into a valid page.
        let mut x = std::vec![op::ITEM_EXTENTS, 0, 0, 0, 0, 0, 0, 0, 0];
        x.extend_from_slice(&u32::MAX.to_le_bytes());
        x.extend_from_slice(&(u32::MAX - 1).to_le_bytes());
        x.push(2);
        x.resize(x.len() + 2 * EXTENT_LEN, 0);
        assert_eq!(Response::decode(&x), Err(DecodeError::ExtentCount));
    }

    #[test]
    fn error_messages_are_bounded() {
        // 159 ASCII bytes and a 2-byte character: cut before the character.
        let mut s = std::string::String::new();
        for _ in 0..MAX_ERROR_MESSAGE - 1 {
            s.push('m');
        }
        s.push('é');
        s.push_str(" and more");
        assert_eq!(truncate(&s, MAX_ERROR_MESSAGE).len(), MAX_ERROR_MESSAGE - 1);
        assert_eq!(truncate("abc", 3), "abc");
        assert_eq!(truncate("€", 2), "");
        let r = Response {
            op: op::LOOKUP,
            result: Err(Failure {
                code: 8,
                message: &s,
            }),
        };
        let b = encode_response(&r, 4);
        assert_eq!(b.len(), RESPONSE_HEAD_LEN + 1 + MAX_ERROR_MESSAGE - 1);
        let (_, back) = Response::decode(&b).unwrap();
        assert_eq!(back, Response::err(op::LOOKUP, 8, &s));
        assert_eq!(back.status(), 8);
        assert_eq!(
            back.result.unwrap_err().message,
            &s[..MAX_ERROR_MESSAGE - 1]
        );
        // A peer's longer message is refused, not cut.
        let mut x = std::vec![
            op::LOOKUP,
            0,
            0,
            0,
            0,
            8,
            0,
            0,
            0,
            MAX_ERROR_MESSAGE as u8 + 1
        ];
        x.resize(x.len() + MAX_ERROR_MESSAGE + 1, b'm');
        assert_eq!(
            Response::decode(&x),
            Err(DecodeError::MessageTooLong(MAX_ERROR_MESSAGE + 1))
        );
    }

    #[test]
    fn peek_and_status() {
        assert_eq!(peek(&[op::HELLO, 1, 2, 3]), None);
        assert_eq!(peek(&[0x99, 1, 2, 3, 4]), Some((0x99, 0x0403_0201)));
        assert_eq!(DecodeError::Opcode(0x99).status(), status::UNIMPL);
        assert_eq!(DecodeError::Truncated.status(), status::INVALID);
        assert_eq!(DecodeError::Utf8.status(), status::INVALID);
        assert_eq!(
            Response::ok(op::HELLO, Reply::Hello { version: 1 }).status(),
            0
        );
    }

    // ---- framing ----

    #[test]
    fn fragment_counts_and_bounds() {
        assert_eq!(FRAGMENT_DATA, 21);
        assert_eq!(MAX_FRAGMENTS, 49);
        let msg: Vec<u8> = (0..MAX_MESSAGE).map(|i| (i * 7 + 1) as u8).collect();
        for len in [1, 20, 21, 22, 42, 43, 500, MAX_MESSAGE - 1, MAX_MESSAGE] {
            let f: Vec<_> = fragments(3, &msg[..len]).unwrap().collect();
            assert_eq!(f.len(), len.div_ceil(21), "{len}");
            assert_eq!(f[0][0] & flag::FIRST, flag::FIRST);
            assert!(f[1..].iter().all(|p| p[0] & flag::FIRST == 0));
            assert_eq!(f.last().unwrap()[0] & flag::LAST, flag::LAST);
            assert!(f[..f.len() - 1].iter().all(|p| p[0] & flag::LAST == 0));
            assert_eq!(f.last().unwrap()[3] as usize, len - (f.len() - 1) * 21);
            assert_eq!(carry(3, &msg[..len]), &msg[..len]);
        }
        assert!(matches!(fragments(0, &[]), Err(FrameError::Empty)));
        assert!(matches!(
            fragments(0, &[0; MAX_MESSAGE + 1]),
            Err(FrameError::TooLong)
        ));
        let it = fragments(0, &msg).unwrap();
        assert_eq!(it.len(), MAX_FRAGMENTS);
    }

    /// Payload of a hand-made fragment.
    fn raw(flags: u8, id: u8, index: u8, data: &[u8]) -> [u8; PAYLOAD_LEN] {
        let mut p = [0u8; PAYLOAD_LEN];
        p[..4].copy_from_slice(&[flags, id, index, data.len() as u8]);
        p[4..4 + data.len()].copy_from_slice(data);
        p
    }

    /// Whether `r` still takes a whole new message after whatever happened to it.
    fn still_works(r: &mut Reassembler) {
        let msg: Vec<u8> = (0..100u8).collect();
        let mut got = None;
        for p in fragments(77, &msg).unwrap() {
            let fed = r.feed(&p).unwrap();
            assert_eq!(fed.interrupted, None);
            got = fed.message.map(|m| m.to_vec());
        }
        assert_eq!(got.unwrap(), msg);
    }

    #[test]
    fn malformed_fragments() {
        let full = [7u8; FRAGMENT_DATA];
        let cases: [([u8; PAYLOAD_LEN], FrameError); 9] = [
            (raw(0x04, 1, 0, &full), FrameError::Flags(0x04)),
            (
                raw(0x80 | flag::FIRST, 1, 0, &full),
                FrameError::Flags(0x81),
            ),
            (
                raw(flag::FIRST | flag::LAST, 1, 0, &[]),
                FrameError::DataLen(0),
            ),
            (raw(flag::FIRST, 1, 0, &full[..20]), FrameError::DataLen(20)),
            (
                {
                    let mut p = raw(flag::FIRST | flag::LAST, 1, 0, &full);
                    p[3] = 22;
                    p
                },
                FrameError::DataLen(22),
            ),
            (
                {
                    let mut p = raw(flag::LAST | flag::FIRST, 1, 0, &[1, 2]);
                    p[24] = 1;
                    p
                },
                FrameError::Padding,
            ),
            (
                raw(flag::FIRST, 1, 3, &full),
                FrameError::OutOfSequence {
                    expected: 0,
                    got: 3,
                },
            ),
            (raw(0, 1, 1, &full), FrameError::NoFirst { id: 1, index: 1 }),
            (
                raw(flag::LAST, 1, 0, &[1]),
                FrameError::NoFirst { id: 1, index: 0 },
            ),
        ];
        for (p, want) in cases {
            let mut r = Reassembler::new();
            assert_eq!(r.feed(&p).err(), Some(want));
            still_works(&mut r);
            // In the middle of a message: the error drops it too.
            let mut r = Reassembler::new();
            r.feed(&raw(flag::FIRST, 5, 0, &full)).unwrap();
            assert_eq!(r.in_progress(), Some(5));
            assert!(r.feed(&p).is_err());
            assert_eq!(r.in_progress(), None);
            assert_eq!(
                r.feed(&raw(flag::LAST, 5, 1, &[1])).err(),
                Some(FrameError::NoFirst { id: 5, index: 1 })
            );
            still_works(&mut r);
        }
        // A FIRST not at index 0 is malformed on its own, before any sequence.
        assert_eq!(
            Fragment::parse(&raw(flag::FIRST, 1, 3, &full)),
            Err(FrameError::OutOfSequence {
                expected: 0,
                got: 3
            })
        );
        let p = raw(flag::LAST, 1, 3, &full[..2]);
        let f = Fragment::parse(&p).unwrap();
        assert_eq!(
            (f.is_first(), f.is_last(), f.id, f.index),
            (false, true, 1, 3)
        );
        assert_eq!(f.data, [7, 7]);
        // Every data length: 1..=21 only, and only the last may be short.
        for len in 0..=255u8 {
            let mut p = raw(flag::FIRST | flag::LAST, 0, 0, &[]);
            p[3] = len;
            p[4..4 + usize::from(len).min(FRAGMENT_DATA)].fill(1);
            let ok = (1..=FRAGMENT_DATA as u8).contains(&len);
            assert_eq!(Fragment::parse(&p).is_ok(), ok, "{len}");
        }
        // Every flag byte.
        for flags in 0..=255u8 {
            let p = raw(flags, 0, 0, &full);
            assert_eq!(
                Fragment::parse(&p).is_ok(),
                flags & !flag::ALL == 0,
                "{flags:#x}"
            );
        }
    }

    #[test]
    fn out_of_order() {
        let msg = [9u8; 100];
        let f: Vec<_> = fragments(4, &msg).unwrap().collect();
        let mut r = Reassembler::new();
        r.feed(&f[0]).unwrap();
        assert_eq!(
            r.feed(&f[2]).err(),
            Some(FrameError::OutOfSequence {
                expected: 1,
                got: 2
            })
        );
        // The rest of that message is refused, fragment by fragment.
        for p in &f[3..] {
            assert!(matches!(r.feed(p), Err(FrameError::NoFirst { .. })));
        }
        still_works(&mut r);
        // Backwards.
        let mut r = Reassembler::new();
        r.feed(&f[0]).unwrap();
        r.feed(&f[1]).unwrap();
        r.feed(&f[2]).unwrap();
        assert_eq!(
            r.feed(&f[1]).err(),
            Some(FrameError::OutOfSequence {
                expected: 3,
                got: 1
            })
        );
        still_works(&mut r);
    }

    #[test]
    fn duplicated_fragment() {
        let msg = [1u8; 50];
        let f: Vec<_> = fragments(4, &msg).unwrap().collect();
        let mut r = Reassembler::new();
        r.feed(&f[0]).unwrap();
        r.feed(&f[1]).unwrap();
        assert_eq!(
            r.feed(&f[1]).err(),
            Some(FrameError::OutOfSequence {
                expected: 2,
                got: 1
            })
        );
        assert!(
            r.feed(&f[2]).is_err(),
            "no message spliced from a duplicate"
        );
        // A repeated FIRST restarts: the message still arrives, once.
        let mut r = Reassembler::new();
        r.feed(&f[0]).unwrap();
        let fed = r.feed(&f[0]).unwrap();
        assert_eq!(
            fed.interrupted,
            Some(Interrupted {
                id: 4,
                received: 21
            })
        );
        r.feed(&f[1]).unwrap();
        assert_eq!(r.feed(&f[2]).unwrap().message, Some(&msg[..]));
        // A repeated LAST after completion has no message to belong to.
        assert_eq!(
            r.feed(&f[2]).err(),
            Some(FrameError::NoFirst { id: 4, index: 2 })
        );
    }

    #[test]
    fn interleaved_ids() {
        let a = [0xaau8; 60];
        let b = [0xbbu8; 60];
        let fa: Vec<_> = fragments(1, &a).unwrap().collect();
        let fb: Vec<_> = fragments(2, &b).unwrap().collect();
        let mut r = Reassembler::new();
        r.feed(&fa[0]).unwrap();
        // Another message's FIRST drops the first one and starts anew.
        let fed = r.feed(&fb[0]).unwrap();
        assert_eq!(
            fed.interrupted,
            Some(Interrupted {
                id: 1,
                received: 21
            })
        );
        assert_eq!(
            r.feed(&fa[1]).err(),
            Some(FrameError::MessageId {
                expected: 2,
                got: 1
            })
        );
        // That error dropped message 2 as well: its next fragment has no FIRST.
        assert_eq!(
            r.feed(&fb[1]).err(),
            Some(FrameError::NoFirst { id: 2, index: 1 })
        );
        // Same index, other id, mid-message.
        let mut r = Reassembler::new();
        r.feed(&fa[0]).unwrap();
        r.feed(&fa[1]).unwrap();
        assert_eq!(
            r.feed(&fb[2]).err(),
            Some(FrameError::MessageId {
                expected: 1,
                got: 2
            })
        );
        still_works(&mut r);
    }

    #[test]
    fn first_interrupting_is_kept_whole() {
        let mut r = Reassembler::new();
        r.feed(&raw(flag::FIRST, 8, 0, &[5; FRAGMENT_DATA]))
            .unwrap();
        r.feed(&raw(0, 8, 1, &[5; FRAGMENT_DATA])).unwrap();
        // A one-fragment message cuts it short, and is delivered.
        let fed = r
            .feed(&raw(flag::FIRST | flag::LAST, 9, 0, b"hello"))
            .unwrap();
        assert_eq!(fed.message, Some(&b"hello"[..]));
        assert_eq!(
            fed.interrupted,
            Some(Interrupted {
                id: 8,
                received: 42
            })
        );
        assert_eq!(r.in_progress(), None);
    }

    #[test]
    fn flood_of_firsts() {
        let mut r = Reassembler::new();
        let mut interrupted = 0;
        for i in 0..10_000u32 {
            let fed = r
                .feed(&raw(flag::FIRST, i as u8, 0, &[i as u8; FRAGMENT_DATA]))
                .unwrap();
            assert_eq!(fed.message, None);
            if let Some(x) = fed.interrupted {
                assert_eq!(x.received, FRAGMENT_DATA, "nothing accumulates");
                assert_eq!(x.id, (i - 1) as u8);
                interrupted += 1;
            }
        }
        assert_eq!(interrupted, 9_999);
        // The last FIRST is the message in progress, and it completes.
        let fed = r.feed(&raw(flag::LAST, 15, 1, &[1, 2, 3])).unwrap();
        assert_eq!(fed.message.unwrap().len(), FRAGMENT_DATA + 3);
        assert_eq!(&fed.message.unwrap()[FRAGMENT_DATA..], [1, 2, 3]);
    }

    #[test]
    fn oversize() {
        let full = [3u8; FRAGMENT_DATA];
        let mut r = Reassembler::new();
        r.feed(&raw(flag::FIRST, 6, 0, &full)).unwrap();
        // 48 full fragments hold 1008 bytes; a 49th full one would make 1029 > 1024.
        for i in 1..MAX_FRAGMENTS as u8 - 1 {
            assert_eq!(r.feed(&raw(0, 6, i, &full)).unwrap().message, None);
        }
        assert_eq!(
            r.feed(&raw(0, 6, MAX_FRAGMENTS as u8 - 1, &full)).err(),
            Some(FrameError::TooLong)
        );
        assert_eq!(r.in_progress(), None);
        // Ending at exactly MAX_MESSAGE is fine; as a LAST one byte more is not.
        for (extra, ok) in [(16usize, true), (17, false)] {
            let mut r = Reassembler::new();
            r.feed(&raw(flag::FIRST, 6, 0, &full)).unwrap();
            for i in 1..MAX_FRAGMENTS as u8 - 1 {
                r.feed(&raw(0, 6, i, &full)).unwrap();
            }
            let last = r.feed(&raw(flag::LAST, 6, MAX_FRAGMENTS as u8 - 1, &full[..extra]));
            match last {
                Ok(fed) => {
                    assert!(ok);
                    assert_eq!(fed.message.unwrap().len(), MAX_MESSAGE);
                }
                Err(e) => {
                    assert!(!ok);
                    assert_eq!(e, FrameError::TooLong);
                }
            }
        }
        // An endless message never grows past the buffer: every fragment after is refused.
        let mut r = Reassembler::new();
        r.feed(&raw(flag::FIRST, 6, 0, &full)).unwrap();
        let mut errors = 0;
        for i in 1..=255u8 {
            if r.feed(&raw(0, 6, i, &full)).is_err() {
                errors += 1;
            }
        }
        assert_eq!(errors, 255 - (MAX_FRAGMENTS - 2));
        still_works(&mut r);
    }

    #[test]
    fn message_id_wraps() {
        // Ids are the sender's counter modulo 256: any value works, consecutive ones too.
        let mut r = Reassembler::new();
        for id in 0..=600u32 {
            let msg = [id as u8; 30];
            let mut got = None;
            for p in fragments(id as u8, &msg).unwrap() {
                got = r.feed(&p).unwrap().message.map(|m| m.to_vec());
            }
            assert_eq!(got.unwrap(), msg);
        }
    }
}
