// SPDX-License-Identifier: GPL-2.0
//! Framing: a message cut into fragments, one per packet payload, and put back together by one
//! [`Reassembler`] per sender. The fragment layout is in the module's documentation (`fam`).

use super::{flag, FRAGMENT_DATA, FRAGMENT_HEADER, MAX_MESSAGE};
use crate::packet::PAYLOAD_LEN;

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
