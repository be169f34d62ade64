// SPDX-License-Identifier: GPL-2.0
//! The open files through which user space mapped parts of the GAS window, each with its
//! `address_space`, so that their mappings can be zapped: when the fabric device goes, when
//! memory stops being the mapper's (a reservation, pages a service freed or lost). The owner
//! keeps it under its own lock, which also orders a zap with a mapping being made.
//!
//! Included with `#[path]` by `unimem_eusrvmem` (`/dev/eusrvmem`) and `unimem_mailbox`
//! (`/dev/unimem_mailbox`); the includer provides nothing.

use kernel::{bindings, prelude::*};

/// (file, its `address_space`), by address.
pub(crate) struct FileMaps(KVec<(usize, usize)>);

impl FileMaps {
    pub(crate) fn new() -> Self {
        Self(KVec::new())
    }

    /// Records `file` (once).
    ///
    /// # Safety
    ///
    /// `file` is an open file, and is [`removed`](Self::remove) before it is released.
    pub(crate) unsafe fn add(&mut self, file: *mut bindings::file) -> Result {
        if self.0.iter().any(|e| e.0 == file as usize) {
            return Ok(());
        }
        // SAFETY: `file` is open (the caller's contract); `f_mapping` is set at open.
        let mapping = unsafe { (*file).f_mapping };
        self.0.push((file as usize, mapping as usize), GFP_KERNEL)?;
        Ok(())
    }

    /// Forgets `file` (it is being released: its mappings are gone, each held the file).
    pub(crate) fn remove(&mut self, file: *mut bindings::file) {
        self.0.retain(|e| e.0 != file as usize);
    }

    /// Zaps bytes `[begin, begin + len)` of every recorded file's mappings (`len` 0: to the
    /// end); a process touching them next gets `SIGBUS`.
    pub(crate) fn zap(&self, begin: i64, len: i64) {
        for &(_, mapping) in self.0.iter() {
            // SAFETY: `mapping` belongs to an open file (`add`'s contract: it is removed before
            // the file is released, under the owner's lock, held here by `&self`); zapping any
            // range of it is always allowed.
            unsafe {
                bindings::unmap_mapping_range(
                    mapping as *mut bindings::address_space,
                    begin,
                    len,
                    1,
                )
            };
        }
    }
}
