//! The wire format shared by `unimem-agent` and `unimem-exec`.
//!
//! Every frame is
//!
//! ```text
//! offset size  field
//!      0    4  magic  C5 75 6D 41   ("\xC5umA")
//!      4    1  version (1)
//!      5    1  kind    1 Request, 2 Ping, 3 Pong, 4 Stdout, 5 Stderr, 6 Exit
//!      6    2  reserved, zero
//!      8    8  request id, u64 little-endian
//!     16    4  payload length, u32 little-endian, at most MAX_PAYLOAD
//!     20    4  CRC-32 of bytes 0..20
//!     24    n  payload
//!   24+n    4  CRC-32 of bytes 0..24+n
//! ```
//!
//! The header has its own checksum so a reader that meets a magic sequence
//! inside leftover garbage can reject it before trusting its length, and never
//! waits for (or allocates) a payload that a random length field promised.
//!
//! Payloads (integers little-endian):
//! * Request: `timeout_ms: u64` (0 = none), `env_count: u32`, then per entry
//!   `key_len: u32, key, value_len: u32, value`, then `cmd_len: u32, cmd`;
//!   all strings UTF-8.
//! * Ping, Pong: empty.
//! * Stdout, Stderr: raw bytes.
//! * Exit: `status: i32` (exit code, 128+signal, or 124 on timeout).

use crc32fast::hash as crc32;
use thiserror::Error;

pub const MAGIC: [u8; 4] = [0xC5, b'u', b'm', b'A'];
pub const VERSION: u8 = 1;
pub const HEADER_LEN: usize = 24;
pub const TRAILER_LEN: usize = 4;
/// Largest payload either side accepts. Bounds the decoder's buffer.
pub const MAX_PAYLOAD: usize = 1 << 20;
/// Largest encoded frame.
pub const MAX_FRAME: usize = HEADER_LEN + MAX_PAYLOAD + TRAILER_LEN;

const KIND_REQUEST: u8 = 1;
const KIND_PING: u8 = 2;
const KIND_PONG: u8 = 3;
const KIND_STDOUT: u8 = 4;
const KIND_STDERR: u8 = 5;
const KIND_EXIT: u8 = 6;

#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum FrameError {
    /// Not an error in a stream: more bytes are needed. `needed` is the
    /// total frame length known so far (it grows once the header is read).
    #[error("truncated frame: {needed} bytes needed, {have} available")]
    Truncated { needed: usize, have: usize },
    #[error("bad magic")]
    BadMagic,
    #[error("unsupported protocol version {0}")]
    UnsupportedVersion(u8),
    #[error("header checksum mismatch")]
    HeaderChecksum,
    #[error("reserved header bytes are not zero")]
    Reserved,
    #[error("payload of {len} bytes exceeds the {max} byte limit")]
    Oversized { len: usize, max: usize },
    #[error("frame checksum mismatch")]
    FrameChecksum,
    #[error("unknown frame kind {0}")]
    UnknownKind(u8),
    #[error("malformed {kind} payload: {reason}")]
    Malformed {
        kind: &'static str,
        reason: &'static str,
    },
}

/// A command to run: `/bin/sh -c command` with `env` added to the agent's
/// minimal environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub id: u64,
    /// 0 means no timeout.
    pub timeout_ms: u64,
    pub env: Vec<(String, String)>,
    pub command: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    Request(Request),
    Ping { id: u64 },
    Pong { id: u64 },
    Stdout { id: u64, data: Vec<u8> },
    Stderr { id: u64, data: Vec<u8> },
    Exit { id: u64, status: i32 },
}

impl Frame {
    pub fn id(&self) -> u64 {
        match self {
            Frame::Request(r) => r.id,
            Frame::Ping { id }
            | Frame::Pong { id }
            | Frame::Stdout { id, .. }
            | Frame::Stderr { id, .. }
            | Frame::Exit { id, .. } => *id,
        }
    }

    pub fn kind_name(&self) -> &'static str {
        kind_name(self.kind())
    }

    fn kind(&self) -> u8 {
        match self {
            Frame::Request(_) => KIND_REQUEST,
            Frame::Ping { .. } => KIND_PING,
            Frame::Pong { .. } => KIND_PONG,
            Frame::Stdout { .. } => KIND_STDOUT,
            Frame::Stderr { .. } => KIND_STDERR,
            Frame::Exit { .. } => KIND_EXIT,
        }
    }

    /// Serializes the frame; fails only if the payload exceeds [`MAX_PAYLOAD`].
    pub fn encode(&self) -> Result<Vec<u8>, FrameError> {
        let mut payload = Vec::new();
        match self {
            Frame::Request(r) => {
                payload.extend_from_slice(&r.timeout_ms.to_le_bytes());
                put_len(&mut payload, r.env.len())?;
                for (k, v) in &r.env {
                    put_bytes(&mut payload, k.as_bytes())?;
                    put_bytes(&mut payload, v.as_bytes())?;
                }
                put_bytes(&mut payload, r.command.as_bytes())?;
            }
            Frame::Ping { .. } | Frame::Pong { .. } => {}
            Frame::Stdout { data, .. } | Frame::Stderr { data, .. } => {
                payload.extend_from_slice(data)
            }
            Frame::Exit { status, .. } => payload.extend_from_slice(&status.to_le_bytes()),
        }
        encode_raw(self.kind(), self.id(), &payload)
    }
}

fn kind_name(kind: u8) -> &'static str {
    match kind {
        KIND_REQUEST => "Request",
        KIND_PING => "Ping",
        KIND_PONG => "Pong",
        KIND_STDOUT => "Stdout",
        KIND_STDERR => "Stderr",
        KIND_EXIT => "Exit",
        _ => "unknown",
    }
}

fn put_len(out: &mut Vec<u8>, len: usize) -> Result<(), FrameError> {
    let len = u32::try_from(len).map_err(|_| FrameError::Oversized {
        len,
        max: MAX_PAYLOAD,
    })?;
    out.extend_from_slice(&len.to_le_bytes());
    Ok(())
}

fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) -> Result<(), FrameError> {
    put_len(out, bytes.len())?;
    out.extend_from_slice(bytes);
    Ok(())
}

/// Builds a frame around an arbitrary payload. Public so tests (and future
/// protocol versions) can produce frames the typed API cannot express.
pub fn encode_raw(kind: u8, id: u64, payload: &[u8]) -> Result<Vec<u8>, FrameError> {
    if payload.len() > MAX_PAYLOAD {
        return Err(FrameError::Oversized {
            len: payload.len(),
            max: MAX_PAYLOAD,
        });
    }
    let mut out = Vec::with_capacity(HEADER_LEN + payload.len() + TRAILER_LEN);
    out.extend_from_slice(&MAGIC);
    out.push(VERSION);
    out.push(kind);
    out.extend_from_slice(&[0, 0]);
    out.extend_from_slice(&id.to_le_bytes());
    out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    let hcrc = crc32(&out);
    out.extend_from_slice(&hcrc.to_le_bytes());
    out.extend_from_slice(payload);
    let fcrc = crc32(&out);
    out.extend_from_slice(&fcrc.to_le_bytes());
    Ok(out)
}

/// A header that passed its checksum and sanity checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Header {
    pub kind: u8,
    pub id: u64,
    pub payload_len: usize,
}

impl Header {
    pub fn frame_len(&self) -> usize {
        HEADER_LEN + self.payload_len + TRAILER_LEN
    }
}

fn le_u32(b: &[u8]) -> u32 {
    u32::from_le_bytes(b[..4].try_into().expect("4 bytes"))
}

fn le_u64(b: &[u8]) -> u64 {
    u64::from_le_bytes(b[..8].try_into().expect("8 bytes"))
}

/// Validates the header at the start of `buf`.
pub(crate) fn parse_header(buf: &[u8]) -> Result<Header, FrameError> {
    let magic_have = buf.len().min(MAGIC.len());
    if buf[..magic_have] != MAGIC[..magic_have] {
        return Err(FrameError::BadMagic);
    }
    if buf.len() < HEADER_LEN {
        return Err(FrameError::Truncated {
            needed: HEADER_LEN,
            have: buf.len(),
        });
    }
    if crc32(&buf[..20]) != le_u32(&buf[20..24]) {
        return Err(FrameError::HeaderChecksum);
    }
    if buf[4] != VERSION {
        return Err(FrameError::UnsupportedVersion(buf[4]));
    }
    if buf[6] != 0 || buf[7] != 0 {
        return Err(FrameError::Reserved);
    }
    let payload_len = le_u32(&buf[16..20]) as usize;
    if payload_len > MAX_PAYLOAD {
        return Err(FrameError::Oversized {
            len: payload_len,
            max: MAX_PAYLOAD,
        });
    }
    Ok(Header {
        kind: buf[5],
        id: le_u64(&buf[8..16]),
        payload_len,
    })
}

/// Decodes the frame at the very start of `buf`, returning it and the number
/// of bytes it occupied. Never reads past the frame, never allocates more
/// than the (bounded) payload.
pub fn decode_frame(buf: &[u8]) -> Result<(Frame, usize), FrameError> {
    let header = parse_header(buf)?;
    let total = header.frame_len();
    if buf.len() < total {
        return Err(FrameError::Truncated {
            needed: total,
            have: buf.len(),
        });
    }
    let body_end = total - TRAILER_LEN;
    if crc32(&buf[..body_end]) != le_u32(&buf[body_end..total]) {
        return Err(FrameError::FrameChecksum);
    }
    let frame = decode_payload(header.kind, header.id, &buf[HEADER_LEN..body_end])?;
    Ok((frame, total))
}

fn decode_payload(kind: u8, id: u64, payload: &[u8]) -> Result<Frame, FrameError> {
    let name = kind_name(kind);
    let malformed = |reason| FrameError::Malformed { kind: name, reason };
    let empty = |frame: Frame| {
        if payload.is_empty() {
            Ok(frame)
        } else {
            Err(malformed("expected an empty payload"))
        }
    };
    match kind {
        KIND_REQUEST => decode_request(id, payload).map(Frame::Request),
        KIND_PING => empty(Frame::Ping { id }),
        KIND_PONG => empty(Frame::Pong { id }),
        KIND_STDOUT => Ok(Frame::Stdout {
            id,
            data: payload.to_vec(),
        }),
        KIND_STDERR => Ok(Frame::Stderr {
            id,
            data: payload.to_vec(),
        }),
        KIND_EXIT => {
            let b: [u8; 4] = payload
                .try_into()
                .map_err(|_| malformed("status must be 4 bytes"))?;
            Ok(Frame::Exit {
                id,
                status: i32::from_le_bytes(b),
            })
        }
        other => Err(FrameError::UnknownKind(other)),
    }
}

/// Bounds-checked reader over a payload; lengths inside the payload are
/// checked against what is actually there before anything is copied.
struct Cursor<'a> {
    rest: &'a [u8],
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], FrameError> {
        if self.rest.len() < n {
            return Err(FrameError::Malformed {
                kind: "Request",
                reason: "field runs past the end of the payload",
            });
        }
        let (head, tail) = self.rest.split_at(n);
        self.rest = tail;
        Ok(head)
    }

    fn u32(&mut self) -> Result<u32, FrameError> {
        self.take(4).map(le_u32)
    }

    fn string(&mut self) -> Result<String, FrameError> {
        let len = self.u32()? as usize;
        let bytes = self.take(len)?;
        String::from_utf8(bytes.to_vec()).map_err(|_| FrameError::Malformed {
            kind: "Request",
            reason: "string is not UTF-8",
        })
    }
}

fn decode_request(id: u64, payload: &[u8]) -> Result<Request, FrameError> {
    let mut c = Cursor { rest: payload };
    let timeout_ms = le_u64(c.take(8)?);
    let env_count = c.u32()?;
    // Each entry needs at least its two length fields, so a count larger than
    // that is a lie; checking up front keeps a forged count from looping long.
    if env_count as usize > c.rest.len() / 8 {
        return Err(FrameError::Malformed {
            kind: "Request",
            reason: "env count exceeds payload",
        });
    }
    let mut env = Vec::new();
    for _ in 0..env_count {
        let k = c.string()?;
        let v = c.string()?;
        env.push((k, v));
    }
    let command = c.string()?;
    if !c.rest.is_empty() {
        return Err(FrameError::Malformed {
            kind: "Request",
            reason: "trailing bytes",
        });
    }
    Ok(Request {
        id,
        timeout_ms,
        env,
        command,
    })
}

/// Whether `buf` starts with a complete header that passes validation; used
/// to look for a new frame inside the unfinished payload of an older one.
pub(crate) fn valid_header_at(buf: &[u8]) -> Option<Header> {
    if buf.len() < HEADER_LEN {
        return None;
    }
    parse_header(buf).ok()
}
