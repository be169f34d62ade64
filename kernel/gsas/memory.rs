// SPDX-License-Identifier: GPL-2.0
//! The operations on the pool's memory, once a request is checked: bulk copies between an
//! interface's area and the pool, and the word reads, writes and atomics.

use crate::{
    fabric_client::Access,
    gsas::{op, status},
    service::Service,
};

impl Service {
    /// Copies `len` bytes inside the window (from an area or the pool to the other).
    pub(crate) fn copy(&self, w: &Access<'_>, to: u64, from: u64, len: u64) -> Result<(), u8> {
        let (Some(dst), Some(src)) = (w.ptr(to, len), w.ptr(from, len)) else {
            return Err(status::FAULT);
        };
        // SAFETY: both ranges are inside the window (`ptr`), usable while `w` lives, and do not
        // overlap (one is in an interface area, before `AREA_END`, the other in the pool, after
        // `LENDABLE_OFFSET`). Other nodes may write the source meanwhile: its bytes are data,
        // never interpreted.
        unsafe { core::ptr::copy_nonoverlapping(src, dst, len as usize) };
        Ok(())
    }
}

/// # Safety
///
/// `p` must be an 8-byte aligned address of the window, inside an access that lives across the
/// call.
unsafe fn read64(p: *mut u8) -> u64 {
    // SAFETY: guaranteed by the caller.
    u64::from_le(unsafe { p.cast::<u64>().read_volatile() })
}

/// # Safety
///
/// As for [`read64`].
unsafe fn write64(p: *mut u8, v: u64) {
    // SAFETY: guaranteed by the caller.
    unsafe { p.cast::<u64>().write_volatile(v.to_le()) }
}

/// The new word of a FETCH_(U)MIN/MAX: `old` or `a` (both already masked to the width).
fn min_max(base: u8, narrow: bool, old: u64, a: u64) -> u64 {
    // Signed comparisons on the operation's width: a 32-bit word is an `i32`.
    let signed = |v: u64| {
        if narrow {
            i64::from(v as u32 as i32)
        } else {
            v as i64
        }
    };
    let a_wins = match base {
        op::FETCH_MIN => signed(a) < signed(old),
        op::FETCH_MAX => signed(a) > signed(old),
        op::FETCH_UMIN => a < old,
        _ => a > old,
    };
    if a_wins {
        a
    } else {
        old
    }
}

/// CAS128 on the aligned 16 bytes at window offset `at` (checked as for [`apply_word`]), with
/// the expected and new values read from the issuer's bulk-out page at window offset
/// `operands`; the old 16 bytes go to `value`.
pub(crate) fn cas128(
    w: &Access<'_>,
    at: u64,
    operands: u64,
    value: &mut [u8; 32],
) -> Result<(), u8> {
    let p = w.ptr(at, 16).ok_or(status::FAULT)?;
    let ops = w.ptr(operands, 32).ok_or(status::FAULT)?;
    // SAFETY: `p` and `ops` are 8-byte aligned ranges of 16 and 32 bytes inside the window
    // (`ptr`), usable while `w` lives across the call. The operands are the issuer's bytes,
    // read once each; the service lock makes the read-compare-write one operation against
    // every other request.
    unsafe {
        let old = [read64(p), read64(p.add(8))];
        let expected = [read64(ops), read64(ops.add(8))];
        if old == expected {
            write64(p, read64(ops.add(16)));
            write64(p.add(8), read64(ops.add(24)));
        }
        value[..8].copy_from_slice(&old[0].to_le_bytes());
        value[8..16].copy_from_slice(&old[1].to_le_bytes());
    }
    Ok(())
}

/// READ, WRITE, the 128/256-bit operations and the atomics, on the aligned word(s) at window
/// offset `at` (checked: allocated to the issuer's tree, aligned by `gsas::check`).
pub(crate) fn apply_word(
    w: &Access<'_>,
    at: u64,
    req: &crate::packet::Payload,
    value: &mut [u8; 32],
) -> Result<(), u8> {
    let base = req.opcode & !op::WIDTH32;
    let narrow = req.opcode & op::WIDTH32 != 0;
    let size = op::size(req.opcode).ok_or(status::INVALID)?;
    let p = w.ptr(at, size).ok_or(status::FAULT)?;
    match base {
        op::READ128 | op::READ256 => {
            for k in 0..(size / 8) as usize {
                // SAFETY: `k * 8 < size`: an aligned word inside the range `ptr` returned for
                // `w`, which lives across the call.
                let word = unsafe { read64(p.add(k * 8)) };
                value[k * 8..k * 8 + 8].copy_from_slice(&word.to_le_bytes());
            }
            return Ok(());
        }
        op::WRITE128 => {
            // SAFETY: the two aligned words of the 16-byte range `ptr` returned for `w`.
            unsafe {
                write64(p, req.arg1);
                write64(p.add(8), req.arg2);
            }
            return Ok(());
        }
        _ => {}
    }
    let (mask, old) = if narrow {
        // SAFETY: a 4-byte aligned word inside the range.
        (
            u64::from(u32::MAX),
            u64::from(u32::from_le(unsafe { p.cast::<u32>().read_volatile() })),
        )
    } else {
        // SAFETY: the aligned word `ptr` returned for `w`.
        (u64::MAX, unsafe { read64(p) })
    };
    let (a, b) = (req.arg1 & mask, req.arg2 & mask);
    let new = match base {
        op::READ => None,
        op::WRITE => Some(a),
        op::FETCH_ADD => Some(old.wrapping_add(a) & mask),
        op::CAS => (old == a).then_some(b),
        op::SWAP => Some(a),
        op::FETCH_AND => Some(old & a),
        op::FETCH_OR => Some(old | a),
        op::FETCH_XOR => Some(old ^ a),
        op::FETCH_MIN | op::FETCH_MAX | op::FETCH_UMIN | op::FETCH_UMAX => {
            Some(min_max(base, narrow, old, a))
        }
        _ => return Err(status::INVALID),
    };
    if let Some(new) = new {
        if narrow {
            // SAFETY: as the read above.
            unsafe { p.cast::<u32>().write_volatile((new as u32).to_le()) };
        } else {
            // SAFETY: as the read above.
            unsafe { write64(p, new) };
        }
    }
    if base != op::WRITE {
        value[..8].copy_from_slice(&old.to_le_bytes());
    }
    Ok(())
}
