// SPDX-License-Identifier: GPL-2.0
//! Responses: what `famd` answers, a [`Reply`] shaped by the request's opcode or a
//! [`Failure`], and the region and item descriptions replies carry.

use super::codec::{DecodeError, EncodeError, Reader, Writer};
use super::{
    op, status, Extents, Lenders, MemoryType, Redundancy, MAX_ERROR_MESSAGE, MAX_EXTENTS,
    MAX_LENDERS, MAX_TEXT,
};

/// Lent pages of an item: `len` bytes from GSAS address `addr` on `node`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Extent {
    pub node: u16,
    pub addr: u64,
    pub len: u64,
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
    /// MAX_EXTENTS)`; when that is not all, [`Request::ItemExtents`](super::Request::ItemExtents)
    /// gets the others.
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
    /// Lines of text (a backup listing), at most [`MAX_TEXT`] bytes.
    Text(&'a str),
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

/// The shape of a successful reply, by opcode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Done,
    Hello,
    Region,
    Item,
    Extents,
    Text,
}

const fn kind_of(opcode: u8) -> Option<Kind> {
    Some(match opcode {
        op::HELLO => Kind::Hello,
        op::CREATE_REGION | op::LOOKUP_REGION | op::STAT_REGION => Kind::Region,
        op::ALLOCATE | op::LOOKUP | op::STAT_ITEM | op::RESTORE_NEW => Kind::Item,
        op::LIST_BACKUP => Kind::Text,
        op::ITEM_EXTENTS => Kind::Extents,
        op::DESTROY_REGION
        | op::RESIZE_REGION
        | op::CHANGE_REGION_PERMISSIONS
        | op::DEALLOCATE
        | op::CHANGE_ITEM_PERMISSIONS
        | op::BACKUP
        | op::RESTORE
        | op::DELETE_BACKUP => Kind::Done,
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
            Reply::Text(_) => Kind::Text,
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
    /// [`MAX_RESPONSE_LEN`](super::MAX_RESPONSE_LEN)).
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
            Reply::Text(t) => {
                if t.len() > MAX_TEXT {
                    return Err(EncodeError::TextTooLong);
                }
                w.u16(t.len() as u16)?;
                w.bytes(t.as_bytes())?;
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
                Kind::Text => {
                    let n = usize::from(r.u16()?);
                    if n > MAX_TEXT {
                        return Err(DecodeError::TextTooLong(n));
                    }
                    Reply::Text(r.str(n)?)
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
