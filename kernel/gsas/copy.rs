// SPDX-License-Identifier: GPL-2.0
//! COPY: bytes moved from one place of this node's pool to another by the service itself, so
//! that a copy between two data items held here never crosses the fabric to the issuer and back
//! (OpenFAM's memory-side `fam_copy`).

use crate::{
    claims::Claim,
    fabric_client::Access,
    gsas::{self, grant, status, COPY_MAX, PAGE_SIZE},
    lease::PoolState,
    service::Service,
    versions_writer::Changing,
};

impl Service {
    /// Checks that the issuer may act on `len` bytes at partition offset `off` as `need` says:
    /// pages of its tree, or of an allocation whose grant allows it that (`FAULT`: not
    /// allocated or not in the pool; `DENIED`: otherwise).
    pub(crate) fn check_range(
        &self,
        pool: &PoolState,
        claim: &Claim<'_>,
        tree: u32,
        off: u64,
        len: u64,
        need: u32,
    ) -> Result<(), u8> {
        let rel = pool.ranges.rel(off).ok_or(status::FAULT)?;
        let first = (rel / PAGE_SIZE) as usize;
        let last = ((rel + len - 1) / PAGE_SIZE) as usize;
        match pool.pages.check(first, last, tree) {
            Err(status::DENIED) => {
                let creds = self.issuer_creds(claim);
                if pool.pages.granted(first, last, &creds, tree, need) {
                    Ok(())
                } else {
                    Err(status::DENIED)
                }
            }
            r => r,
        }
    }

    /// COPY of `len` bytes from GSAS address `src` to partition offset `dst_off` (checked for
    /// this node by the caller): both ranges checked, then moved in the window.
    pub(crate) fn copy_in_pool(
        &self,
        pool: &PoolState,
        claim: &Claim<'_>,
        tree: u32,
        dst_off: u64,
        src: u64,
        len: u64,
    ) -> Result<(), u8> {
        if len == 0 || len > COPY_MAX {
            return Err(status::INVALID);
        }
        if gsas::node_of(src) != self.node as u16 {
            return Err(status::FAULT);
        }
        let src_off = gsas::offset_of(src);
        self.check_range(pool, claim, tree, dst_off, len, grant::WRITE)?;
        self.check_range(pool, claim, tree, src_off, len, grant::READ)?;
        let _changing = Changing::begin(claim.w, self.node, dst_off, len);
        move_bytes(claim.w, self.part + dst_off, self.part + src_off, len)
    }
}

/// Moves `len` bytes inside the window, the ranges possibly overlapping (as `memmove`).
fn move_bytes(w: &Access<'_>, to: u64, from: u64, len: u64) -> Result<(), u8> {
    let (Some(dst), Some(src)) = (w.ptr(to, len), w.ptr(from, len)) else {
        return Err(status::FAULT);
    };
    // SAFETY: both ranges are inside the window (`ptr`), usable while `w` lives across the
    // call; `copy` allows them to overlap. Other nodes may write them meanwhile: the bytes are
    // data, never interpreted.
    unsafe { core::ptr::copy(src, dst, len as usize) };
    Ok(())
}
