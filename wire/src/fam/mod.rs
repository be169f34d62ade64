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

use crate::gas::MAX_NODES;
use crate::packet::PAYLOAD_LEN;

// One file per part of the protocol; everything public is re-exported here, so the items keep
// their paths (`unimem_wire::fam::Request`, ...).
mod bounded;
mod codec;
mod frame;
mod region_attributes;
mod request;
mod response;
#[cfg(test)]
mod tests;

pub use bounded::{Bounded, Extents, Lenders};
pub use codec::{peek, DecodeError, EncodeError};
pub use frame::{
    fragment_count, fragments, Fed, Fragment, Fragments, FrameError, Interrupted, Reassembler,
};
pub use region_attributes::{Interleave, MemoryType, Redundancy};
pub use request::Request;
pub use response::{truncate, Extent, ExtentPage, Failure, ItemDesc, RegionDesc, Reply, Response};

// ---------------------------------------------------------------------------------------------
// Limits
// ---------------------------------------------------------------------------------------------

/// Protocol version, exchanged by [`Request::Hello`]. Changes with any format change (the
/// limits below included: both sides size their buffers from them).
pub const VERSION: u16 = 2;

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

/// Longest encoded request: [`Request::RestoreNew`] with two names of [`NAME_MAX`] bytes.
pub const MAX_REQUEST_LEN: usize = HEAD_LEN + 2 * name_len(NAME_MAX) + 8 + 4;
/// Longest text a reply carries ([`Reply::Text`]); a longer listing is cut by the daemon.
pub const MAX_TEXT: usize = 640;
const TEXT_MAX: usize = 2 + MAX_TEXT;
/// Longest encoded response: an item description with [`MAX_EXTENTS`] extents and a name of
/// [`NAME_MAX`] bytes.
pub const MAX_RESPONSE_LEN: usize = RESPONSE_HEAD_LEN
    + max(
        max(REGION_MAX, ITEM_MAX),
        max(max(PAGE_MAX, FAILURE_MAX), TEXT_MAX),
    );
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
    /// `u64 item, backup name` -> nothing: famd copies the item's bytes, size, owner and mode
    /// to backup `name` in its backup directory (`FAM_ERR_ALREADYEXIST` if it exists).
    pub const BACKUP: u8 = 0x0e;
    /// `backup name, u64 item` -> nothing: the backup's bytes into an item at least as large.
    pub const RESTORE: u8 = 0x0f;
    /// `backup name, u64 region, item name, u32 mode` -> item: a new item of the backup's
    /// size in `region`, holding the backup's bytes.
    pub const RESTORE_NEW: u8 = 0x10;
    /// `backup name` -> nothing.
    pub const DELETE_BACKUP: u8 = 0x11;
    /// `backup name (empty: every backup)` -> text: one line per backup the caller may read.
    pub const LIST_BACKUP: u8 = 0x12;
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
