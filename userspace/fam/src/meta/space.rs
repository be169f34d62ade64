//! The page allocator the store places items with. The daemon implements it over GSAS
//! (`ALLOC`/`FREE` on the lender node's atomic service, docs/GSAS.md); the tests fake it.

use unimem_wire::gsas;

use crate::error::Result;

/// Allocates and frees whole pages of lent memory.
pub trait Space {
    /// `pages` pages (1..=[`max_pages`](Self::max_pages)) on `node`: the GSAS address of the
    /// first. Out of memory is [`FamError::NoSpace`](crate::FamError::NoSpace): the store
    /// then tries another lender for an item that is not interleaved.
    fn alloc(&mut self, node: u16, pages: u64) -> Result<u64>;

    /// Frees the allocation that starts at `addr`.
    fn free(&mut self, addr: u64) -> Result<()>;

    /// Most pages one [`alloc`](Self::alloc) may ask for; larger shares are split into
    /// several extents. GSAS's limit per request by default.
    fn max_pages(&self) -> u64 {
        gsas::MAX_ALLOC_PAGES
    }
}

/// Pages that hold `bytes`: `bytes` / page size, rounded up. `None` on overflow (only for
/// sizes within a page of `u64::MAX`).
pub fn pages_for(bytes: u64) -> Option<u64> {
    Some(bytes.checked_add(gsas::PAGE_SIZE - 1)? / gsas::PAGE_SIZE)
}

/// `bytes` rounded up to a whole number of pages; `None` on overflow.
pub fn round_to_pages(bytes: u64) -> Option<u64> {
    pages_for(bytes)?.checked_mul(gsas::PAGE_SIZE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_up_to_pages() {
        assert_eq!(pages_for(0), Some(0));
        assert_eq!(pages_for(1), Some(1));
        assert_eq!(pages_for(4096), Some(1));
        assert_eq!(pages_for(4097), Some(2));
        assert_eq!(round_to_pages(1), Some(4096));
        assert_eq!(round_to_pages(8192), Some(8192));
        assert_eq!(round_to_pages(u64::MAX), None);
        assert_eq!(round_to_pages(u64::MAX - 4095), Some(u64::MAX - 4095));
    }
}
