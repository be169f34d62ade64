// SPDX-License-Identifier: GPL-2.0
//! The mailbox's hooks: the packets of `SERVICE_IFACE` handed to the service, the check of
//! threads' mappings of this node's partition, and the removal of mappings of pages freed or
//! lost.

use crate::{
    gsas::{self, grant, owner, status, PAGE_SIZE},
    kmsg_api::{self, MapRequest},
    packet::PACKET_LEN,
    request::Queue,
    service::Service,
    stats::Counter,
};
use kernel::{
    ffi::{c_int, c_void},
    prelude::*,
    sync::{Arc, ArcBorrow},
    workqueue,
};

/// # Safety
///
/// Called by unimem_mailbox in process context with the `ctx` given to `unimem_mbox_serve`: a
/// `Service` kept alive by `Serving` until the handler is removed; `packet` is `PACKET_LEN`
/// bytes valid for the call.
unsafe extern "C" fn on_packet(ctx: *mut c_void, from_node: u32, packet: *const u8) {
    // SAFETY: see above; `ctx` is `Arc::as_ptr` of that service (`Serving::start`).
    let service = unsafe { ArcBorrow::<Service>::from_raw(ctx.cast::<Service>()) };
    // SAFETY: see above.
    let raw = unsafe { &*packet.cast::<[u8; PACKET_LEN]>() };
    match service.handle(from_node, raw) {
        // A large freed allocation: zeroed by the work, not in the mailbox's served section.
        // Its module reference (`release_module` waits for it) keeps this code loaded.
        Queue::Zero => {
            let _ = workqueue::system_percpu().enqueue::<Arc<Service>, 1>(service.into());
        }
        Queue::Grow => Service::grow_later(&service.into()),
        Queue::Nothing => {}
    }
}

/// # Safety
///
/// Called by unimem_mailbox with the `ctx` given to `unimem_mbox_map_check`: a `Service` kept
/// alive by `Serving` until the check is removed; `req` is valid for the call.
unsafe extern "C" fn on_map(ctx: *mut c_void, req: *const MapRequest) -> c_int {
    // SAFETY: see above.
    let (service, req) = unsafe { (&*ctx.cast::<Service>(), &*req) };
    match service.may_map(req) {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// Removes threads' mappings of `len` bytes at `offset` of this node's partition (`len` 0: to
/// its end): pages freed or lost. Without a mailbox (the fabric device went) nothing is mapped.
pub(crate) fn zap_pages(offset: u64, len: u64) -> Result {
    // SAFETY: no lock of ours is held by callers (`on_map` takes the service lock).
    match kernel::error::to_result(unsafe { kmsg_api::unimem_mbox_zap_pages(offset, len) }) {
        Err(e) if e == ENODEV => Ok(()),
        r => r,
    }
}

/// The interface served and the pool's pages mappable while alive; keeps the handlers'
/// context alive.
pub(crate) struct Serving {
    _service: Arc<Service>,
}

impl Serving {
    pub(crate) fn start(service: Arc<Service>) -> Result<Self> {
        let ctx = Arc::as_ptr(&service).cast_mut().cast::<c_void>();
        // SAFETY: `on_map` runs in process context with `ctx` alive until `Drop` removes it
        // (which waits for a running call).
        let ret = unsafe { kmsg_api::unimem_mbox_map_check(Some(on_map), ctx) };
        if ret != 0 {
            pr_err!(
                "cannot check mappings of this node's partition: {} (another unimem_gsas?)\n",
                ret
            );
            return Err(Error::from_errno(ret));
        }
        // SAFETY: `on_packet` runs in process context with `ctx` alive until `Drop` removes it
        // (which waits for a running call).
        let ret = unsafe { kmsg_api::unimem_mbox_serve(gsas::SERVICE_IFACE, Some(on_packet), ctx) };
        if ret != 0 {
            pr_err!(
                "cannot serve mailbox interface {}: {} (another unimem_gsas?)\n",
                gsas::SERVICE_IFACE,
                ret
            );
            Self::stop_maps();
            return Err(Error::from_errno(ret));
        }
        Ok(Self { _service: service })
    }

    fn stop_maps() {
        // SAFETY: removal passes no check and waits for a running call.
        unsafe { kmsg_api::unimem_mbox_map_check(None, core::ptr::null_mut()) };
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        // SAFETY: removal passes no handler and waits for a running call.
        unsafe { kmsg_api::unimem_mbox_serve(gsas::SERVICE_IFACE, None, core::ptr::null_mut()) };
        Self::stop_maps();
    }
}

impl Service {
    /// Whether a thread may map what `req` names: pages allocated to its tree, or pages of one
    /// allocation whose grant lets its user read (and write, for a writable mapping) them
    /// (`EACCES`: another tree's, `ENXIO`: not allocated, no pool); or the version table,
    /// read-only (`versions_writer.rs`).
    pub(crate) fn may_map(&self, req: &MapRequest) -> Result {
        let (tree, offset, len) = (req.tree, req.offset, req.len);
        let checked = (|| {
            if Self::versions_mappable(offset, len, req.write != 0) {
                return Ok(());
            }
            let inner = self.inner.lock();
            let pool = inner.pool.as_ref().ok_or(ENXIO)?;
            if !pool.ranges.usable(self.epoch.now()) {
                return Err(ENXIO);
            }
            let rel = pool.ranges.rel(offset).ok_or(ENXIO)?;
            if rel % PAGE_SIZE != 0 || len == 0 || len % PAGE_SIZE != 0 {
                return Err(EINVAL);
            }
            let first = (rel / PAGE_SIZE) as usize;
            let last = first + (len / PAGE_SIZE) as usize - 1;
            match pool.pages.check(first, last, tree) {
                Err(status::DENIED) => {
                    let creds = owner::Creds {
                        uid: req.uid,
                        gid: req.gid,
                        flags: req.flags & owner::ADMIN,
                    };
                    let need = if req.write != 0 {
                        grant::READ | grant::WRITE
                    } else {
                        grant::READ
                    };
                    if pool.pages.granted(first, last, &creds, tree, need) {
                        Ok(())
                    } else {
                        Err(EACCES)
                    }
                }
                Err(_) => Err(ENXIO),
                Ok(()) => Ok(()),
            }
        })();
        self.stats.bump(match checked {
            Ok(()) => Counter::Maps,
            Err(e) if e == EACCES => Counter::MapDenied,
            Err(_) => Counter::MapFaults,
        });
        checked
    }
}
