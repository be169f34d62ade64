// SPDX-License-Identifier: GPL-2.0
//! The kernel's mapping of the GAS window (the fabric device's shared-memory BAR).

use core::sync::atomic::AtomicU64;
use kernel::{bindings, prelude::*};

/// A write-back mapping of the whole window.
///
/// The BAR is ordinary host RAM shared by all nodes (no side effects on access), so a cacheable
/// mapping is right; the region is deliberately not claimed with `pci_request_region` so that
/// a NUMA module can later hot-add a lent range of it as System RAM.
///
/// # Invariants
///
/// `virt` is the `memremap` mapping of `[phys, phys + size)`, unmapped only in `Drop`.
pub(crate) struct GasWindow {
    phys: u64,
    size: usize,
    virt: *mut u8,
}

// SAFETY: the mapping is plain memory valid until `Drop`; concurrent access is the
// responsibility of the protocols that use the window, as for any shared memory.
unsafe impl Send for GasWindow {}
// SAFETY: see `Send`; `&GasWindow` only hands out the address and copies bytes.
unsafe impl Sync for GasWindow {}

impl GasWindow {
    /// Maps `size` bytes at physical address `phys`.
    pub(crate) fn map(phys: u64, size: u64) -> Result<Self> {
        let size = usize::try_from(size).map_err(|_| EINVAL)?;
        // SAFETY: `memremap` has no preconditions beyond a valid range; it returns NULL on error.
        let virt = unsafe { bindings::memremap(phys, size, bindings::MEMREMAP_WB as usize) };
        if virt.is_null() {
            return Err(ENOMEM);
        }
        Ok(Self {
            phys,
            size,
            virt: virt.cast(),
        })
    }

    pub(crate) fn phys(&self) -> u64 {
        self.phys
    }

    pub(crate) fn size(&self) -> usize {
        self.size
    }

    pub(crate) fn virt(&self) -> *mut u8 {
        self.virt
    }

    /// The 8-byte aligned word at `offset`, if it lies inside the window. Other nodes access
    /// shared words with aligned loads and stores too.
    pub(crate) fn word(&self, offset: usize) -> Option<&AtomicU64> {
        let end = offset.checked_add(8)?;
        if offset % 8 != 0 || end > self.size {
            return None;
        }
        // SAFETY: 8 bytes inside the mapping (checked above, type invariant), 8-byte aligned
        // (the mapping is page-aligned and `offset` a multiple of 8), valid as long as `self`,
        // which the returned borrow cannot outlive.
        Some(unsafe { AtomicU64::from_ptr(self.virt.add(offset).cast()) })
    }

    /// Copies `out.len()` bytes starting at `offset` out of the window.
    pub(crate) fn read(&self, offset: usize, out: &mut [u8]) -> Result {
        let end = offset.checked_add(out.len()).ok_or(EINVAL)?;
        if end > self.size {
            return Err(EINVAL);
        }
        // SAFETY: `[offset, end)` lies inside the mapping (checked above, type invariant); `out`
        // is a distinct kernel buffer.
        unsafe {
            core::ptr::copy_nonoverlapping(self.virt.add(offset), out.as_mut_ptr(), out.len())
        };
        Ok(())
    }
}

impl Drop for GasWindow {
    fn drop(&mut self) {
        // SAFETY: `virt` came from `memremap` and is unmapped exactly once (type invariant).
        unsafe { bindings::memunmap(self.virt.cast()) };
    }
}
