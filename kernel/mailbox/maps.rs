// SPDX-License-Identifier: GPL-2.0
//! Where threads mapped interface areas and GSAS pages of this node's partition (and of other
//! nodes', `remote_map.rs`), so that revocation (the fabric device goes) and the GSAS services
//! (pages they free or lose) can zap them, and the service's check that a thread maps only its
//! own tree's pages.

use crate::{
    file_maps::FileMaps,
    kmsg_api::{MapCheck, MapRequest},
    mailbox::MMAP_GSAS,
};
use kernel::{bindings, ffi::c_void, new_mutex, prelude::*, sync::Mutex};

struct Maps {
    revoked: bool,
    list: FileMaps,
    /// The GSAS service's ownership check for mappings of partition pages
    /// (`unimem_mbox_map_check`), with its context. Called under this lock, so removing it
    /// waits for a running call, and a page the service frees (which it zaps under this lock)
    /// cannot be mapped between its check and the zap.
    check: Option<(MapCheck, usize)>,
}

#[pin_data]
pub(crate) struct UserMaps {
    #[pin]
    inner: Mutex<Maps>,
}

impl UserMaps {
    pub(crate) fn new() -> impl PinInit<Self> {
        pin_init!(Self {
            inner <- new_mutex!(
                Maps { revoked: false, list: FileMaps::new(), check: None },
                "unimem_mailbox::maps"
            ),
        })
    }

    /// Runs `map` (which maps part of the GAS window into user space through `file`) unless the
    /// device is gone or, for partition `pages`, the GSAS service does not approve them; records
    /// the file's mapping so that revocation and [`zap_pages`](Self::zap_pages) reach it.
    pub(crate) fn map_user(
        &self,
        file: *mut bindings::file,
        pages: Option<MapRequest>,
        map: impl FnOnce() -> Result,
    ) -> Result {
        self.map_locked(
            file,
            |check| {
                let Some(p) = &pages else {
                    return Ok(());
                };
                // No service, no owner to ask: nothing of the partition is mappable.
                let (check, ctx) = check.ok_or(ENXIO)?;
                // SAFETY: the registrant promised `check` is callable with `ctx` until
                // removed, which takes this lock, held by `map_locked`; `p` lives across the
                // call.
                let ret = unsafe { check(ctx as *mut c_void, p) };
                kernel::error::to_result(ret)
            },
            map,
        )
    }

    /// Runs `map` (which maps another node's pages through `file`) if `consume` (which takes
    /// the home's approval, `remote_map.rs`) succeeds, under the lock that
    /// [`zap_remote`](Self::zap_remote) takes: a ZAP cannot come between them.
    pub(crate) fn map_remote(
        &self,
        file: *mut bindings::file,
        consume: impl FnOnce() -> Result,
        map: impl FnOnce() -> Result,
    ) -> Result {
        self.map_locked(file, |_| consume(), map)
    }

    fn map_locked(
        &self,
        file: *mut bindings::file,
        approve: impl FnOnce(Option<(MapCheck, usize)>) -> Result,
        map: impl FnOnce() -> Result,
    ) -> Result {
        let mut m = self.inner.lock();
        if m.revoked {
            return Err(ENODEV);
        }
        approve(m.check)?;
        // SAFETY: `file` is being mmapped, so open; its `release` calls `unmap_file`
        // (`chardev.rs`).
        unsafe { m.list.add(file)? };
        map()
    }

    /// Zaps every user mapping of the file range `[begin, begin + len)` (another node's pages,
    /// `mailbox::MMAP_REMOTE`) and runs `invalidate` (which withdraws approvals of them not
    /// used yet), both under the lock [`map_remote`](Self::map_remote) takes.
    pub(crate) fn zap_remote(&self, begin: u64, len: u64, invalidate: impl FnOnce()) -> Result {
        let (begin, len) = (
            i64::try_from(begin).map_err(|_| EINVAL)?,
            i64::try_from(len).map_err(|_| EINVAL)?,
        );
        let m = self.inner.lock();
        invalidate();
        m.list.zap(begin, len);
        Ok(())
    }

    /// Forgets the mapping of a file being released (its mappings are gone: each held the file).
    pub(crate) fn unmap_file(&self, file: *mut bindings::file) {
        self.inner.lock().list.remove(file);
    }

    /// Installs (`Some`, `EBUSY` if one is) or removes the GSAS service's check of partition
    /// mappings (`unimem_mbox_map_check`); removal waits for a running check.
    pub(crate) fn set_map_check(&self, check: Option<MapCheck>, ctx: *mut c_void) -> Result {
        let mut m = self.inner.lock();
        match check {
            Some(_) if m.check.is_some() => Err(EBUSY),
            Some(f) => {
                m.check = Some((f, ctx as usize));
                Ok(())
            }
            None => {
                m.check = None;
                Ok(())
            }
        }
    }

    /// Zaps every user mapping of the partition range `[offset, offset + len)` (`len` 0: to
    /// the end): pages the GSAS service freed or lost. Holding the lock, it waits for a mapping
    /// being made, so none made after the service's check survives.
    pub(crate) fn zap_pages(&self, offset: u64, len: u64) -> Result {
        let begin = MMAP_GSAS.checked_add(offset).ok_or(EINVAL)?;
        let (begin, len) = (
            i64::try_from(begin).map_err(|_| EINVAL)?,
            i64::try_from(len).map_err(|_| EINVAL)?,
        );
        self.inner.lock().list.zap(begin, len);
        Ok(())
    }

    /// Zaps every user mapping of an interface area (the process gets SIGBUS at its next
    /// access) and refuses new ones: the fabric device goes.
    pub(crate) fn zap_user_maps(&self) {
        let mut m = self.inner.lock();
        m.revoked = true;
        m.list.zap(0, 0);
    }
}
