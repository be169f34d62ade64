//! Placement: how an item's bytes are spread over its region's lenders, and getting the
//! memory from the [`Space`] all or nothing.
//!
//! **Policy: round-robin.** Each region keeps a cursor into its lenders
//! ([`Region::next_lender`](super::Region::next_lender)); an item starts on the cursor's
//! lender and the cursor then moves one on, so consecutive items start on consecutive lenders.
//! - An item no larger than one stripe, or any item of a region without interleaving, goes
//!   whole on one lender. If that lender is out of memory ([`FamError::NoSpace`]) the next
//!   ones are tried in turn. Round-robin rather than most-free-space: the store does not see
//!   the lenders' free memory (the Space only allocates), and round-robin spreads load
//!   without it.
//! - A larger item of an interleaving region is cut into stripes dealt round-robin over
//!   `min(stripes, lenders)` lenders from the cursor's; each lender gets one share holding
//!   its stripes back to back (OpenFAM lays interleaved items out the same way), so an item
//!   costs one allocation per lender, not one per stripe. Its layout is fixed: a lender out
//!   of memory fails the allocation.
//!
//! A share larger than [`Space::max_pages`] is split into several extents. Every share is
//! page-rounded; only the share with the item's last, partial stripe has a partial page.

use unimem_wire::gsas;

use super::model::{extent_ok, Extent};
use super::space::{pages_for, round_to_pages, Space};
use crate::error::{FamError, Result};

/// How an item of some size is cut: its stripe (`None` when it is on one lender) and the
/// page-rounded bytes of each lender's share, in lender order from the starting lender.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub stripe: Option<u64>,
    pub shares: Vec<u64>,
}

impl Plan {
    /// `size` bytes over `lenders` lenders (at least 1), interleaved in `stripe`-byte stripes
    /// if `stripe` is set (a whole number of pages). `None` if a share overflows `u64`, or
    /// for a stripe of 0.
    pub fn new(size: u64, stripe: Option<u64>, lenders: usize) -> Option<Plan> {
        let single = || {
            Some(Plan {
                stripe: None,
                shares: vec![round_to_pages(size)?],
            })
        };
        let Some(stripe) = stripe else {
            return single();
        };
        if stripe == 0 {
            return None;
        }
        if size <= stripe || lenders < 2 {
            return single();
        }
        let stripes = size.div_ceil(stripe);
        let n = stripes.min(lenders as u64);
        let last = stripes - 1;
        let tail = round_to_pages(size - last * stripe)?;
        let shares = (0..n)
            .map(|j| {
                // Stripes j, j + n, j + 2n, ... below `stripes`.
                let count = (stripes - j).div_ceil(n);
                if j == last % n {
                    Some((count - 1) * stripe + tail)
                } else {
                    count.checked_mul(stripe)
                }
            })
            .collect::<Option<Vec<u64>>>()?;
        Some(Plan {
            stripe: Some(stripe),
            shares,
        })
    }

    /// Bytes of lent memory the item will take.
    pub fn total(&self) -> Option<u64> {
        self.shares.iter().try_fold(0u64, |a, s| a.checked_add(*s))
    }
}

/// Gets the memory for `plan` from `space`: share *j* on `order[j]` for an interleaved plan;
/// for a plan on one lender, on the first of `order` that has room. Returns the extents and
/// the index in `order` of the first lender used. On failure, frees whatever it got.
pub fn allocate(space: &mut dyn Space, plan: &Plan, order: &[u16]) -> Result<(Vec<Extent>, usize)> {
    if plan.stripe.is_some() {
        let mut got = Vec::new();
        for (share, node) in plan.shares.iter().zip(order) {
            if let Err(e) = share_on(space, *node, *share, &mut got) {
                release(space, &got);
                return Err(e);
            }
        }
        return Ok((got, 0));
    }
    let share = plan.shares.first().copied().unwrap_or(0);
    let mut last = FamError::Resource("no lender to place the item on".into());
    for (i, node) in order.iter().enumerate() {
        let mut got = Vec::new();
        match share_on(space, *node, share, &mut got) {
            Ok(()) => return Ok((got, i)),
            Err(e) => {
                release(space, &got);
                if !matches!(e, FamError::NoSpace(_)) {
                    return Err(e);
                }
                log::debug!("lender {node} has no room for {share} bytes: {e}");
                last = e;
            }
        }
    }
    Err(last)
}

/// `bytes` (a whole number of pages) on `node`, appended to `got` extent by extent (what was
/// got before a failure stays in `got` for the caller to free).
fn share_on(space: &mut dyn Space, node: u16, bytes: u64, got: &mut Vec<Extent>) -> Result<()> {
    let max = space.max_pages().max(1);
    let mut pages = pages_for(bytes).unwrap_or(0);
    while pages > 0 {
        let n = pages.min(max);
        let addr = space.alloc(node, n)?;
        let e = Extent {
            node,
            addr,
            len: n * gsas::PAGE_SIZE,
        };
        if !extent_ok(&e) {
            // Not what was asked for: give it back and call it an allocator fault.
            if let Err(f) = space.free(addr) {
                log::warn!("freeing bad allocation {addr:#x} on node {node}: {f}");
            }
            return Err(FamError::Allocator(format!(
                "asked node {node} for {n} pages, got address {addr:#x}"
            )));
        }
        got.push(e);
        pages -= n;
    }
    Ok(())
}

/// Frees `extents`, logging what cannot be freed (leaked: the metadata no longer names it).
pub fn release(space: &mut dyn Space, extents: &[Extent]) {
    for e in extents {
        if let Err(err) = space.free(e.addr) {
            log::warn!(
                "leaking {} bytes at {:#x} on node {}: free failed: {err}",
                e.len,
                e.addr,
                e.node
            );
        }
    }
}
