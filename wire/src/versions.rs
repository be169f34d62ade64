//! The version table: what lets a thread read another node's GSAS memory through a mapping,
//! with no request, and still get READ128/READ256's atomicity (docs/GSAS.md, "Reads through
//! mappings").
//!
//! Each node's partition holds [`STRIPES`] little-endian `u64` words at [`OFFSET`], written
//! only by that node's GSAS service. Pool page `p` (by partition page index) has the word of
//! stripe `p % STRIPES`. Around every change the service makes to a page (a WRITE, an atomic,
//! a bulk write, a COPY, an INDEXED element), under its lock, it makes that word odd before the
//! first store and even again after the last one (a seqlock). A reader that mapped the page
//! and the table (both approved by the home like any mapping: the table is readable by anyone
//! who can reach the node) loads the word, copies the bytes, loads the word again, and keeps
//! the copy only if both loads saw the same even value. Stores that threads make through their
//! own writable mappings are not counted: they never were atomic against the service either.
//!
//! A word counts writes to every page of its stripe: a reader learns how often pages sharing
//! its stripe are changed, nothing of their bytes.

use crate::gsas::PAGE_SIZE;

/// Partition offset of the table: after the live-tree maps, page-aligned.
pub const OFFSET: u64 = crate::trees::LIVE_END;
/// Words in the table.
pub const STRIPES: u64 = 8192;
/// Bytes of the table (whole pages).
pub const LEN: u64 = STRIPES * 8;
/// End of the table.
pub const END: u64 = OFFSET + LEN;

const _: () = assert!(OFFSET % PAGE_SIZE == 0);
const _: () = assert!(LEN % PAGE_SIZE == 0);
const _: () = assert!(END <= crate::lease_record::RECORD_OFFSET);

/// Partition offset of the word counting writes to the page at partition offset `offset`.
pub const fn word_of(offset: u64) -> u64 {
    OFFSET + (offset / PAGE_SIZE % STRIPES) * 8
}

/// Whether `len` bytes at partition offset `offset` are the whole table or part of it.
pub const fn in_table(offset: u64, len: u64) -> bool {
    offset >= OFFSET && len <= LEN && offset - OFFSET <= LEN - len
}

/// The stripes a change of `len` bytes (> 0) at partition offset `offset` touches, each once:
/// `(first, count)`, wrapping past the last stripe. A change of more pages than there are
/// stripes touches every stripe once (so no word is made odd twice, which would make it even).
pub const fn stripes(offset: u64, len: u64) -> (u64, u64) {
    let first_page = offset / PAGE_SIZE;
    let last_page = (offset + len - 1) / PAGE_SIZE;
    let pages = last_page - first_page + 1;
    let count = if pages < STRIPES { pages } else { STRIPES };
    (first_page % STRIPES, count)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout() {
        const { assert!(OFFSET >= crate::trees::LIVE_END) };
        assert_eq!(word_of(0), OFFSET);
        assert_eq!(word_of(PAGE_SIZE * STRIPES + 5), OFFSET);
        assert_eq!(word_of(3 * PAGE_SIZE + 4095), OFFSET + 24);
    }

    #[test]
    fn table_bounds() {
        assert!(in_table(OFFSET, LEN));
        assert!(in_table(OFFSET + PAGE_SIZE, PAGE_SIZE));
        assert!(!in_table(OFFSET, LEN + PAGE_SIZE));
        assert!(!in_table(OFFSET - PAGE_SIZE, PAGE_SIZE));
        assert!(!in_table(END, PAGE_SIZE));
        assert!(!in_table(u64::MAX - 10, 20));
    }

    #[test]
    fn stripes_touched_once() {
        assert_eq!(stripes(0, 1), (0, 1));
        assert_eq!(stripes(PAGE_SIZE - 8, 16), (0, 2));
        assert_eq!(
            stripes((STRIPES - 1) * PAGE_SIZE, 2 * PAGE_SIZE),
            (STRIPES - 1, 2)
        );
        assert_eq!(
            stripes(5 * PAGE_SIZE, STRIPES * PAGE_SIZE + 1),
            (5, STRIPES)
        );
        assert_eq!(stripes(5 * PAGE_SIZE, 1 << 40), (5, STRIPES));
    }
}
