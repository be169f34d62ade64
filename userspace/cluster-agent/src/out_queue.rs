//! Frames waiting to be written to a non-blocking port.

use crate::frame::Frame;
use std::collections::VecDeque;
use std::io::{self, Write};

/// Encoded frames in send order. A frame that has been partly written is
/// always finished before anything else, even when later frames are
/// discarded, so the peer never sees a frame cut short by us.
#[derive(Debug, Default)]
pub(crate) struct OutQueue {
    frames: VecDeque<(u64, Vec<u8>)>,
    /// Bytes of the front frame already written.
    sent: usize,
    bytes: usize,
}

impl OutQueue {
    pub fn push(&mut self, frame: &Frame) {
        if let Some(bytes) = encode(frame) {
            self.bytes += bytes.len();
            self.frames.push_back((frame.id(), bytes));
        }
    }

    /// Queues `frame` ahead of bulk output (but behind a partly sent frame),
    /// so a Pong is not delayed by a backlog of stdout.
    pub fn push_urgent(&mut self, frame: &Frame) {
        if let Some(bytes) = encode(frame) {
            self.bytes += bytes.len();
            let at = usize::from(self.sent > 0).min(self.frames.len());
            self.frames.insert(at, (frame.id(), bytes));
        }
    }

    /// Drops unsent frames whose id fails `keep`.
    pub fn retain_unsent(&mut self, keep: impl Fn(u64) -> bool) {
        let partial = if self.sent > 0 {
            self.frames.pop_front()
        } else {
            None
        };
        self.frames.retain(|(id, _)| keep(*id));
        if let Some(front) = partial {
            self.frames.push_front(front);
        }
        self.bytes = self.frames.iter().map(|(_, b)| b.len()).sum::<usize>() - self.sent;
    }

    pub fn is_empty(&self) -> bool {
        self.frames.is_empty()
    }

    /// Unwritten bytes.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Writes as much as the writer takes without blocking. `WouldBlock` is
    /// not an error here; anything else is returned.
    pub fn flush_into(&mut self, w: &mut impl Write) -> io::Result<()> {
        while let Some((_, front)) = self.frames.front() {
            match w.write(&front[self.sent..]) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => {
                    self.sent += n;
                    self.bytes -= n;
                    if self.sent == front.len() {
                        self.frames.pop_front();
                        self.sent = 0;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

fn encode(frame: &Frame) -> Option<Vec<u8>> {
    match frame.encode() {
        Ok(b) => Some(b),
        Err(e) => {
            log::error!("dropping unencodable {} frame: {e}", frame.kind_name());
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::OutQueue;
    use crate::frame::Frame;
    use std::io::{self, Write};

    /// Accepts `budget` bytes, then reports WouldBlock.
    struct Trickle {
        out: Vec<u8>,
        budget: usize,
    }

    impl Write for Trickle {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            if self.budget == 0 {
                return Err(io::ErrorKind::WouldBlock.into());
            }
            let n = buf.len().min(self.budget);
            self.budget -= n;
            self.out.extend_from_slice(&buf[..n]);
            Ok(n)
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn discarding_keeps_partly_sent_frame_whole() {
        let mut q = OutQueue::default();
        let a = Frame::Stdout {
            id: 1,
            data: b"aaaa".to_vec(),
        };
        let b = Frame::Stdout {
            id: 1,
            data: b"bbbb".to_vec(),
        };
        q.push(&a);
        q.push(&b);
        let mut w = Trickle {
            out: Vec::new(),
            budget: 10,
        };
        q.flush_into(&mut w).unwrap();
        q.retain_unsent(|id| id == 2);
        q.push_urgent(&Frame::Pong { id: 2 });
        w.budget = usize::MAX;
        q.flush_into(&mut w).unwrap();
        assert!(q.is_empty());
        assert_eq!(q.bytes(), 0);
        let mut expect = a.encode().unwrap();
        expect.extend(Frame::Pong { id: 2 }.encode().unwrap());
        assert_eq!(w.out, expect);
    }
}
