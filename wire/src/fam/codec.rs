// SPDX-License-Identifier: GPL-2.0
//! The fields messages are made of (little-endian integers, names, extent lists), written and
//! read with every length checked; why a message is not encoded or decoded; and [`peek`], for
//! answering one that is not.

use super::{status, Extent, Extents, MAX_EXTENTS, NAME_MAX};

/// Why a message was not encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EncodeError {
    /// The output buffer is too short ([`MAX_MESSAGE`](super::MAX_MESSAGE) bytes always suffice).
    BufferTooSmall,
    /// A name longer than [`NAME_MAX`] bytes.
    NameTooLong(usize),
    /// A failure with code 0 (which means success).
    Status,
    /// A reply other than the one the opcode calls for, or a success for an unknown opcode.
    Reply { op: u8 },
    /// Extents that disagree with the count or page position they come with.
    ExtentCount,
    /// A text longer than [`MAX_TEXT`](super::MAX_TEXT) bytes.
    TextTooLong,
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
    /// An error message longer than [`MAX_ERROR_MESSAGE`](super::MAX_ERROR_MESSAGE).
    MessageTooLong(usize),
    Redundancy(u8),
    MemoryType(u8),
    Interleave(u8),
    /// More lenders than [`MAX_LENDERS`](super::MAX_LENDERS).
    TooManyLenders(usize),
    /// More extents than [`MAX_EXTENTS`].
    TooManyExtents(usize),
    /// A text longer than [`MAX_TEXT`](super::MAX_TEXT) bytes.
    TextTooLong(usize),
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

/// Appends fields to a buffer, refusing to run past its end.
pub(super) struct Writer<'a> {
    buf: &'a mut [u8],
    pub(super) pos: usize,
}

impl<'a> Writer<'a> {
    pub(super) fn new(buf: &'a mut [u8]) -> Self {
        Writer { buf, pos: 0 }
    }

    pub(super) fn bytes(&mut self, b: &[u8]) -> Result<(), EncodeError> {
        let dst = self
            .buf
            .get_mut(self.pos..self.pos + b.len())
            .ok_or(EncodeError::BufferTooSmall)?;
        dst.copy_from_slice(b);
        self.pos += b.len();
        Ok(())
    }

    pub(super) fn u8(&mut self, v: u8) -> Result<(), EncodeError> {
        self.bytes(&[v])
    }

    pub(super) fn u16(&mut self, v: u16) -> Result<(), EncodeError> {
        self.bytes(&v.to_le_bytes())
    }

    pub(super) fn u32(&mut self, v: u32) -> Result<(), EncodeError> {
        self.bytes(&v.to_le_bytes())
    }

    pub(super) fn i32(&mut self, v: i32) -> Result<(), EncodeError> {
        self.bytes(&v.to_le_bytes())
    }

    pub(super) fn u64(&mut self, v: u64) -> Result<(), EncodeError> {
        self.bytes(&v.to_le_bytes())
    }

    pub(super) fn name(&mut self, s: &str) -> Result<(), EncodeError> {
        if s.len() > NAME_MAX {
            return Err(EncodeError::NameTooLong(s.len()));
        }
        self.u16(s.len() as u16)?;
        self.bytes(s.as_bytes())
    }

    pub(super) fn extents(&mut self, e: &Extents) -> Result<(), EncodeError> {
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
pub(super) struct Reader<'a> {
    b: &'a [u8],
}

impl<'a> Reader<'a> {
    pub(super) fn new(b: &'a [u8]) -> Self {
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

    pub(super) fn u8(&mut self) -> Result<u8, DecodeError> {
        Ok(self.array::<1>()?[0])
    }

    pub(super) fn u16(&mut self) -> Result<u16, DecodeError> {
        self.array().map(u16::from_le_bytes)
    }

    pub(super) fn u32(&mut self) -> Result<u32, DecodeError> {
        self.array().map(u32::from_le_bytes)
    }

    pub(super) fn i32(&mut self) -> Result<i32, DecodeError> {
        self.array().map(i32::from_le_bytes)
    }

    pub(super) fn u64(&mut self) -> Result<u64, DecodeError> {
        self.array().map(u64::from_le_bytes)
    }

    pub(super) fn str(&mut self, n: usize) -> Result<&'a str, DecodeError> {
        core::str::from_utf8(self.bytes(n)?).map_err(|_| DecodeError::Utf8)
    }

    pub(super) fn name(&mut self) -> Result<&'a str, DecodeError> {
        let n = usize::from(self.u16()?);
        if n > NAME_MAX {
            return Err(DecodeError::NameTooLong(n));
        }
        self.str(n)
    }

    pub(super) fn extents(&mut self) -> Result<Extents, DecodeError> {
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

    pub(super) fn end(&self) -> Result<(), DecodeError> {
        match self.b.len() {
            0 => Ok(()),
            n => Err(DecodeError::Trailing(n)),
        }
    }
}
