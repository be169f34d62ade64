//! A PE's output ring in the job descriptor: its agent (on the PE's node) pushes the PE's
//! stdout and stderr, `oshrun` pulls them and prints them line by line with the PE number.
//! `head` counts bytes pushed, `tail` bytes pulled; the writer waits for room, so nothing is
//! lost and the ring never holds more than its size. The reader checks what the writer
//! wrote (a head behind the tail or more than a ring ahead is an error, not a loop).

use crate::job::{slot, Layout, RING_BYTES};
use crate::remote::Remote;

#[derive(Debug, Clone, Copy)]
pub struct Ring {
    head: u64,
    tail: u64,
    closed: u64,
    data: u64,
}

impl Ring {
    pub fn of(layout: &Layout, pe: usize) -> Ring {
        Ring {
            head: layout.slot(pe, slot::OUT_HEAD),
            tail: layout.slot(pe, slot::OUT_TAIL),
            closed: layout.slot(pe, slot::OUT_CLOSED),
            data: layout.ring(pe),
        }
    }

    /// Writes the pieces of `[pos, pos + len)` (ring positions) with `f(addr, range)`.
    fn pieces(
        &self,
        pos: u64,
        len: usize,
        mut f: impl FnMut(u64, std::ops::Range<usize>) -> gsas::Result<()>,
    ) -> gsas::Result<()> {
        let at = pos % RING_BYTES;
        let first = len.min((RING_BYTES - at) as usize);
        f(self.data + at, 0..first)?;
        if first < len {
            f(self.data, first..len)?;
        }
        Ok(())
    }

    /// Pushes as much of `buf` as there is room for; how much that was. `head` is the
    /// writer's own count (it is the only writer).
    pub fn push(&self, g: &impl Remote, head: &mut u64, buf: &[u8]) -> gsas::Result<usize> {
        let tail = g.read(self.tail)?;
        let used = head.wrapping_sub(tail).min(RING_BYTES);
        let n = buf.len().min((RING_BYTES - used) as usize);
        if n == 0 {
            return Ok(0);
        }
        self.pieces(*head, n, |a, r| g.bulk_write(a, &buf[r]))?;
        *head += n as u64;
        g.write(self.head, *head)?;
        Ok(n)
    }

    /// Pulls everything pushed since `tail` (the reader's own count).
    pub fn pull(&self, g: &impl Remote, tail: &mut u64) -> Result<Vec<u8>, String> {
        let e = |e: gsas::Error| format!("output ring: {e}");
        let head = g.read(self.head).map_err(e)?;
        let n = head.wrapping_sub(*tail);
        if n > RING_BYTES {
            return Err(format!(
                "output ring: head {head} is not within a ring of tail {tail}",
                tail = *tail
            ));
        }
        let mut out = vec![0u8; n as usize];
        if n > 0 {
            self.pieces(*tail, n as usize, |a, r| g.bulk_read(a, &mut out[r]))
                .map_err(e)?;
            *tail = head;
            g.write(self.tail, head).map_err(e)?;
        }
        Ok(out)
    }

    pub fn close(&self, g: &impl Remote) -> gsas::Result<()> {
        g.write(self.closed, 1)
    }

    pub fn is_closed(&self, g: &impl Remote) -> bool {
        g.read(self.closed).map(|v| v != 0).unwrap_or(false)
    }
}

/// Splits a PE's output into lines prefixed with its number.
#[derive(Debug, Default)]
pub struct Lines {
    partial: Vec<u8>,
}

impl Lines {
    /// The complete lines in `data` (with what was left from before), each `prefix` + line.
    pub fn feed(&mut self, prefix: &str, data: &[u8]) -> String {
        self.partial.extend_from_slice(data);
        let Some(last) = self.partial.iter().rposition(|&b| b == b'\n') else {
            return String::new();
        };
        let rest = self.partial.split_off(last + 1);
        let done = std::mem::replace(&mut self.partial, rest);
        String::from_utf8_lossy(&done)
            .lines()
            .map(|l| format!("{prefix}{l}\n"))
            .collect()
    }

    /// What is left (a last line without a newline).
    pub fn finish(&mut self, prefix: &str) -> String {
        if self.partial.is_empty() {
            return String::new();
        }
        let s = format!("{prefix}{}\n", String::from_utf8_lossy(&self.partial));
        self.partial.clear();
        s
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::cell::RefCell;
    use std::collections::HashMap;

    /// GSAS memory as a map of bytes.
    #[derive(Default)]
    pub struct Fake(pub RefCell<HashMap<u64, u8>>);

    impl Remote for Fake {
        fn read(&self, addr: u64) -> gsas::Result<u64> {
            let mut b = [0u8; 8];
            self.bulk_read(addr, &mut b)?;
            Ok(u64::from_le_bytes(b))
        }
        fn write(&self, addr: u64, v: u64) -> gsas::Result<()> {
            self.bulk_write(addr, &v.to_le_bytes())
        }
        fn fetch_add(&self, addr: u64, v: u64) -> gsas::Result<u64> {
            let old = self.read(addr)?;
            self.write(addr, old.wrapping_add(v))?;
            Ok(old)
        }
        fn bulk_read(&self, addr: u64, buf: &mut [u8]) -> gsas::Result<()> {
            let m = self.0.borrow();
            for (i, b) in buf.iter_mut().enumerate() {
                *b = m.get(&(addr + i as u64)).copied().unwrap_or(0);
            }
            Ok(())
        }
        fn bulk_write(&self, addr: u64, data: &[u8]) -> gsas::Result<()> {
            let mut m = self.0.borrow_mut();
            for (i, b) in data.iter().enumerate() {
                m.insert(addr + i as u64, *b);
            }
            Ok(())
        }
    }

    fn layout() -> Layout {
        Layout {
            base: gsas::addr(1, 0x10000),
            npes: 3,
        }
    }

    #[test]
    fn push_pull_wraps_and_waits_for_room() {
        let g = Fake::default();
        let r = Ring::of(&layout(), 2);
        let (mut head, mut tail) = (0u64, 0u64);
        let big: Vec<u8> = (0..RING_BYTES as usize + 100).map(|i| i as u8).collect();
        assert_eq!(r.push(&g, &mut head, &big).unwrap(), RING_BYTES as usize);
        assert_eq!(r.push(&g, &mut head, b"x").unwrap(), 0);
        let got = r.pull(&g, &mut tail).unwrap();
        assert_eq!(got, big[..RING_BYTES as usize]);
        assert_eq!(
            r.push(&g, &mut head, &big[RING_BYTES as usize..]).unwrap(),
            100
        );
        assert_eq!(r.pull(&g, &mut tail).unwrap(), big[RING_BYTES as usize..]);
        assert!(r.pull(&g, &mut tail).unwrap().is_empty());
        assert!(!r.is_closed(&g));
        r.close(&g).unwrap();
        assert!(r.is_closed(&g));
    }

    #[test]
    fn a_bad_head_is_an_error() {
        let g = Fake::default();
        let l = layout();
        let r = Ring::of(&l, 0);
        g.write(l.slot(0, slot::OUT_HEAD), RING_BYTES + 1).unwrap();
        assert!(r.pull(&g, &mut 0).is_err());
    }

    #[test]
    fn lines_get_prefixed() {
        let mut l = Lines::default();
        assert_eq!(l.feed("PE 1: ", b"hel"), "");
        assert_eq!(l.feed("PE 1: ", b"lo\nwor"), "PE 1: hello\n");
        assert_eq!(l.feed("PE 1: ", b"ld\n\nx"), "PE 1: world\nPE 1: \n");
        assert_eq!(l.finish("PE 1: "), "PE 1: x\n");
        assert_eq!(l.finish("PE 1: "), "");
    }
}
