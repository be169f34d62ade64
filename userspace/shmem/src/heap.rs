//! The symmetric heap's allocator: offsets into a PE's heap region. It is deterministic, so
//! every PE making the same calls in the same order (as OpenSHMEM requires of
//! `shmem_malloc` and friends) gets the same offsets: an offset means the same object on
//! every PE, and no PE has to tell another where it put anything.

use std::collections::BTreeMap;

/// Smallest alignment of a block (enough for every C type and the 16-byte GSAS operations).
pub const MIN_ALIGN: u64 = 16;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Heap {
    len: u64,
    /// offset -> length of every live block.
    blocks: BTreeMap<u64, u64>,
}

impl Heap {
    pub fn new(len: u64) -> Self {
        Heap {
            len,
            blocks: BTreeMap::new(),
        }
    }

    /// First fit of `size` bytes (at least 1) aligned to `align` (a power of two; at least
    /// [`MIN_ALIGN`]). `None` if no gap is large enough or `align` is not a power of two.
    pub fn alloc(&mut self, size: u64, align: u64) -> Option<u64> {
        if !align.is_power_of_two() {
            return None;
        }
        let align = align.max(MIN_ALIGN);
        let size = size.max(1).checked_next_multiple_of(MIN_ALIGN)?;
        let mut start = 0u64;
        let mut found = None;
        for (&off, &len) in &self.blocks {
            let at = start.checked_next_multiple_of(align)?;
            if at.checked_add(size)? <= off {
                found = Some(at);
                break;
            }
            start = off + len;
        }
        let at = match found {
            Some(at) => at,
            None => {
                let at = start.checked_next_multiple_of(align)?;
                (at.checked_add(size)? <= self.len).then_some(at)?
            }
        };
        self.blocks.insert(at, size);
        Some(at)
    }

    /// Frees the block at `off`: its length, or `None` if no block starts there.
    pub fn free(&mut self, off: u64) -> Option<u64> {
        self.blocks.remove(&off)
    }

    /// The usable length of the block at `off`.
    pub fn size_of(&self, off: u64) -> Option<u64> {
        self.blocks.get(&off).copied()
    }

    pub fn in_use(&self) -> u64 {
        self.blocks.values().sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_fit_aligned_and_reuses_gaps() {
        let mut h = Heap::new(4096);
        let a = h.alloc(10, 1).unwrap();
        let b = h.alloc(100, 64).unwrap();
        let c = h.alloc(8, 8).unwrap();
        assert_eq!(a, 0);
        assert_eq!(b, 64);
        assert_eq!(c, 16);
        assert_eq!(h.free(a), Some(16));
        assert_eq!(h.alloc(16, 1), Some(0));
        assert_eq!(h.free(12345), None);
    }

    #[test]
    fn full_and_bad_alignment() {
        let mut h = Heap::new(256);
        assert_eq!(h.alloc(256, 1), Some(0));
        assert_eq!(h.alloc(1, 1), None);
        assert_eq!(h.free(0), Some(256));
        assert_eq!(h.alloc(257, 1), None);
        assert_eq!(h.alloc(8, 3), None);
        assert_eq!(h.alloc(u64::MAX, 1), None);
    }

    #[test]
    fn same_calls_same_offsets() {
        let run = || {
            let mut h = Heap::new(1 << 20);
            let mut v = Vec::new();
            for i in 0..50u64 {
                v.push(h.alloc(i * 37 + 1, 1 << (i % 8)).unwrap());
                if i % 3 == 0 {
                    h.free(v[(i / 2) as usize]);
                }
            }
            v
        };
        assert_eq!(run(), run());
    }
}
