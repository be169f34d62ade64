//! Streaming frame decoder that resynchronizes after garbage.
//!
//! A virtio-serial port outlives the host clients that use it: a client that
//! died mid-write leaves half a frame behind, and bytes written while nobody
//! was connected may arrive in front of the next client's data. So the
//! decoder never gives up on the stream: whatever does not parse is skipped
//! up to the next occurrence of the magic, and the caller is told how many
//! bytes were dropped and why.

use crate::frame::{decode_frame, parse_header, valid_header_at, Frame, FrameError};
use crate::frame::{HEADER_LEN, MAGIC};

/// When a frame whose header arrived but whose payload is still incomplete
/// should be abandoned because a new valid header shows up inside it.
///
/// Without this, a stale header promising a large payload would swallow the
/// following (real) frames until that many bytes had arrived. The check only
/// runs while a payload is incomplete and needs a header with a valid
/// checksum, so legitimate payloads trip it only if they embed such a header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Interrupt {
    /// Always wait for the full payload.
    Never,
    /// Any valid header interrupts (the agent: requests never embed frames).
    AnyHeader,
    /// Only a header carrying this id interrupts (a client: stdout may carry
    /// arbitrary bytes, but not a header with the client's fresh random id).
    Id(u64),
}

#[derive(Debug)]
pub struct FrameDecoder {
    buf: Vec<u8>,
    /// Start of unconsumed data in `buf`.
    start: usize,
    /// Offset (relative to `start`) up to which the pending partial frame
    /// has been scanned for an interrupting header.
    scanned: usize,
    interrupt: Interrupt,
    skipped: u64,
    last_skip: Option<FrameError>,
}

/// Bytes dropped during resynchronization since the last report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    pub bytes: u64,
    /// Why the most recent run of bytes was rejected.
    pub reason: FrameError,
}

impl Default for FrameDecoder {
    fn default() -> Self {
        Self::new(Interrupt::Never)
    }
}

impl FrameDecoder {
    pub fn new(interrupt: Interrupt) -> Self {
        FrameDecoder {
            buf: Vec::new(),
            start: 0,
            scanned: 0,
            interrupt,
            skipped: 0,
            last_skip: None,
        }
    }

    /// Appends received bytes. Call [`next_frame`](Self::next_frame) until it
    /// returns `None` after each push; the buffer then holds at most one
    /// incomplete frame, so its size stays bounded by `MAX_FRAME`.
    pub fn push(&mut self, data: &[u8]) {
        if self.start > 0 {
            self.buf.drain(..self.start);
            self.start = 0;
        }
        self.buf.extend_from_slice(data);
    }

    /// Drops everything buffered, e.g. when the peer went away so any partial
    /// frame can never be completed.
    pub fn reset(&mut self) {
        let pending = self.buffered();
        if pending > 0 {
            self.note_skip(
                pending,
                FrameError::Truncated {
                    needed: 0,
                    have: pending,
                },
            );
        }
        self.buf.clear();
        self.start = 0;
        self.scanned = 0;
    }

    /// Bytes received but not yet returned as a frame.
    pub fn buffered(&self) -> usize {
        self.buf.len() - self.start
    }

    /// Reports (and clears) the bytes dropped so far, if any.
    pub fn take_skipped(&mut self) -> Option<Skipped> {
        let reason = self.last_skip.take()?;
        let bytes = std::mem::take(&mut self.skipped);
        Some(Skipped { bytes, reason })
    }

    /// The next complete frame, skipping anything that is not one.
    pub fn next_frame(&mut self) -> Option<Frame> {
        loop {
            let avail = &self.buf[self.start..];
            if avail.is_empty() {
                return None;
            }
            match decode_frame(avail) {
                Ok((frame, used)) => {
                    self.consume(used);
                    return Some(frame);
                }
                Err(FrameError::Truncated { .. }) => {
                    let at = self.find_interrupt()?;
                    self.skip(
                        at,
                        FrameError::Truncated {
                            needed: 0,
                            have: at,
                        },
                    );
                }
                // The frame is intact, just not one we understand: drop it
                // whole rather than hunting for magic inside its payload.
                Err(e @ (FrameError::UnknownKind(_) | FrameError::Malformed { .. })) => {
                    let len = parse_header(avail).map(|h| h.frame_len()).unwrap_or(1);
                    self.skip(len, e);
                }
                Err(e) => {
                    let next = next_magic_candidate(avail);
                    self.skip(next, e);
                }
            }
        }
    }

    fn consume(&mut self, n: usize) {
        self.start += n;
        self.scanned = 0;
        if self.start == self.buf.len() {
            self.buf.clear();
            self.start = 0;
        }
    }

    fn skip(&mut self, n: usize, why: FrameError) {
        self.note_skip(n, why);
        self.consume(n);
    }

    fn note_skip(&mut self, n: usize, why: FrameError) {
        self.skipped += n as u64;
        self.last_skip = Some(why);
    }

    /// Offset of a header that should cut the pending partial frame short.
    fn find_interrupt(&mut self) -> Option<usize> {
        if self.interrupt == Interrupt::Never {
            return None;
        }
        let avail = &self.buf[self.start..];
        // Only a partial frame whose header already checked out is waiting
        // on its payload; an incomplete header is simply short.
        parse_header(avail).ok()?;
        let mut pos = self.scanned.max(HEADER_LEN);
        while pos < avail.len() {
            if avail[pos] != MAGIC[0] {
                pos += 1;
                continue;
            }
            if avail.len() - pos < HEADER_LEN {
                break;
            }
            if let Some(h) = valid_header_at(&avail[pos..]) {
                let wanted = match self.interrupt {
                    Interrupt::Never => false,
                    Interrupt::AnyHeader => true,
                    Interrupt::Id(id) => h.id == id,
                };
                if wanted {
                    return Some(pos);
                }
            }
            pos += 1;
        }
        self.scanned = pos;
        None
    }
}

/// Where the next frame could start after a failure at offset 0: the next
/// full magic, or a magic prefix at the very end that more data may complete.
fn next_magic_candidate(buf: &[u8]) -> usize {
    (1..buf.len())
        .find(|&p| {
            let n = (buf.len() - p).min(MAGIC.len());
            buf[p..p + n] == MAGIC[..n]
        })
        .unwrap_or(buf.len())
}

#[cfg(test)]
mod tests {
    use super::next_magic_candidate;
    use crate::frame::MAGIC;

    #[test]
    fn magic_candidate_finds_full_and_trailing_partial_magic() {
        let mut b = vec![1, 2, 3];
        b.extend_from_slice(&MAGIC);
        assert_eq!(next_magic_candidate(&b), 3);
        assert_eq!(next_magic_candidate(&[9, 9, MAGIC[0], MAGIC[1]]), 2);
        assert_eq!(next_magic_candidate(&[9, 9, MAGIC[0], 0]), 4);
        // Offset 0 is the failed position itself and must not be returned.
        assert_eq!(next_magic_candidate(&MAGIC), 4);
    }
}
