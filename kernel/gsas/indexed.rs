// SPDX-License-Identifier: GPL-2.0
//! INDEXED: a batch of element operations (ADD, SCATTER, GATHER, SCATTER_IF) on this node's
//! pool, applied by the service itself, so that many small updates cost one request (the
//! OpenFAM seed's memory-side `fam_queue_operation`). The entries are copied out of the issuer's
//! bulk-out page once, every entry is checked, and only then are they applied: a failed batch
//! changes nothing, and what was checked is what is applied (the issuer may rewrite its page
//! meanwhile). SCATTER_IF compares its guard (entry 0) under the same hold of the service lock
//! as its stores, so no other request comes between them.

use crate::{
    claims::Claim,
    gsas::{
        indexed::{Batch, ADD, GATHER, RESULT_LEN, SCATTER_IF},
        offset_of, status, BULK_IN_PAGE, BULK_MAX, BULK_OUT_PAGE,
    },
    lease::PoolState,
    service::Service,
    versions_writer::Changing,
};

/// Room for one batch's entries: the bulk-out page, copied under the service lock.
pub(crate) type Operands = [u8; BULK_MAX as usize];

impl Service {
    /// INDEXED with `arg1` from the claimed issuer in tree `tree` (the request's address was
    /// checked to be this node's): value = the count. Called under the service lock.
    pub(crate) fn indexed(
        &self,
        pool: &PoolState,
        claim: &Claim<'_>,
        tree: u32,
        arg1: u64,
        scratch: &mut Operands,
        value: &mut [u8; 32],
    ) -> Result<(), u8> {
        let batch = Batch::from_arg1(arg1)?;
        let w = claim.w;
        let ops = scratch
            .get_mut(..batch.operands_len())
            .ok_or(status::INVALID)?;
        let page = self.area(claim.from, claim.iface, BULK_OUT_PAGE);
        let src = w.ptr(page, ops.len() as u64).ok_or(status::FAULT)?;
        // SAFETY: `src` is `ops.len()` bytes inside the window (`ptr`), usable while the
        // claim's access lives; `ops` is the service's own buffer. The issuer may write its
        // page meanwhile: the bytes are copied once, and only the copy is used.
        unsafe { core::ptr::copy_nonoverlapping(src, ops.as_mut_ptr(), ops.len()) };
        let ops = &*ops;
        let size = u64::from(batch.elem_size);
        // Every entry first: the home's, aligned, in the pool, and the issuer's to act on.
        for i in 0..batch.count as usize {
            let (addr, _) = batch.entry(ops, i).ok_or(status::INVALID)?;
            let off = batch.check_address(self.node as u16, addr)?;
            self.check_range(pool, claim, tree, off, size, batch.need())?;
            w.ptr(self.part + off, size).ok_or(status::FAULT)?;
        }
        let results = if batch.kind == GATHER {
            let at = self.area(claim.from, claim.iface, BULK_IN_PAGE);
            Some(w.ptr(at, batch.results_len() as u64).ok_or(status::FAULT)?)
        } else {
            None
        };
        // A guard that does not hold: nothing is stored; the answer shows what is there.
        let first = if batch.kind == SCATTER_IF {
            let (addr, expected) = batch.entry(ops, 0).ok_or(status::INVALID)?;
            let p = w
                .ptr(self.part + offset_of(addr), size)
                .ok_or(status::FAULT)?;
            // SAFETY: `p` is the guard's element of `size` bytes inside the window (`ptr`),
            // aligned to its size (checked with every entry above), usable while the access
            // lives.
            let found = unsafe { load(p, batch.elem_size) };
            if !batch.judge_guard(found, expected, value) {
                return Ok(());
            }
            1
        } else {
            0
        };
        // Then all of them, in order.
        for i in first..batch.count as usize {
            let (addr, v) = batch.entry(ops, i).ok_or(status::INVALID)?;
            let p = w
                .ptr(self.part + offset_of(addr), size)
                .ok_or(status::FAULT)?;
            // SAFETY: `p` is an element of `size` bytes inside the window (`ptr`), aligned to
            // its size (`check_address`: the window and the partitions are page-aligned), usable
            // while the access lives across the loop.
            let old = unsafe { load(p, batch.elem_size) };
            // Each element a change of its own (`versions_writer.rs`); GATHER changes nothing.
            let _changing = (batch.kind != GATHER)
                .then(|| Changing::begin(w, self.node, offset_of(addr), size));
            match (batch.kind, results) {
                (GATHER, Some(r)) => {
                    // SAFETY: `i < count`, so the 8 bytes at `i * RESULT_LEN` are inside the
                    // `results_len()` bytes of the issuer's bulk-in page `ptr` returned, and
                    // 8-byte aligned (the page is).
                    unsafe {
                        r.add(i * RESULT_LEN)
                            .cast::<u64>()
                            .write_volatile(old.to_le())
                    };
                }
                // SAFETY: as the load above.
                (ADD, _) => unsafe { store(p, batch.elem_size, batch.add(old, v)) },
                // SAFETY: as the load above.
                _ => unsafe { store(p, batch.elem_size, v) },
            }
        }
        value[..8].copy_from_slice(&u64::from(batch.count).to_le_bytes());
        Ok(())
    }
}

/// The element of `size` bytes (4 or 8) at `p`, zero-extended.
///
/// # Safety
///
/// `p` must be aligned to `size` and inside the window, in an access that lives across the call.
unsafe fn load(p: *mut u8, size: u8) -> u64 {
    if size == 4 {
        // SAFETY: guaranteed by the caller.
        u64::from(u32::from_le(unsafe { p.cast::<u32>().read_volatile() }))
    } else {
        // SAFETY: guaranteed by the caller.
        u64::from_le(unsafe { p.cast::<u64>().read_volatile() })
    }
}

/// Stores `v` (its low 32 bits for `size` 4) as the element at `p`.
///
/// # Safety
///
/// As for [`load`].
unsafe fn store(p: *mut u8, size: u8, v: u64) {
    if size == 4 {
        // SAFETY: guaranteed by the caller.
        unsafe { p.cast::<u32>().write_volatile((v as u32).to_le()) }
    } else {
        // SAFETY: guaranteed by the caller.
        unsafe { p.cast::<u64>().write_volatile(v.to_le()) }
    }
}
