// SPDX-License-Identifier: GPL-2.0
//! What this node knows about the fabric, and where the rest of the module finds it.

use crate::{
    clients::Users, doorbell::Doorbell, fabric_api::FabricInfo, gas::GasDescriptor,
    regs::DoorbellRegs, window::GasWindow,
};
use core::sync::atomic::{AtomicBool, AtomicPtr, Ordering};
use kernel::{
    prelude::*,
    sync::{rcu, Arc, ArcBorrow},
};

/// State shared by the driver, open files, sysfs and attached clients. Everything here stays
/// valid after the device is unbound (register access is revocable, the window stays mapped
/// until the last reference goes), so open files and clients may hold it; `live` says whether
/// they may still use it. It is the same whichever bus the device came from (PCI function or
/// device-tree node).
#[pin_data]
pub(crate) struct Fabric {
    pub(crate) regs: DoorbellRegs,
    pub(crate) window: GasWindow,
    pub(crate) desc: GasDescriptor,
    pub(crate) node_id: u32,
    pub(crate) doorbells: KVec<Doorbell>,
    /// Cleared by revocation (`clients.rs`), read by clients under RCU.
    pub(crate) live: AtomicBool,
    #[pin]
    pub(crate) users: Users,
}

impl Fabric {
    pub(crate) fn info(&self) -> FabricInfo {
        FabricInfo {
            node_id: self.node_id,
            node_count: self.desc.node_count,
            vectors: self.doorbells.len() as u32,
            reserved: 0,
            gas_phys: self.window.phys(),
            gas_size: self.window.size() as u64,
            ctl_size: self.desc.ctl_size,
            partition_size: self.desc.partition_size,
            gas_virt: self.window.virt(),
        }
    }

    pub(crate) fn is_live(&self) -> bool {
        self.live.load(Ordering::Acquire)
    }

    /// Raises doorbell `vector` of node `node`.
    pub(crate) fn ring(&self, node: u32, vector: u32) -> Result {
        if !self.is_live() {
            return Err(ENODEV);
        }
        if node >= self.desc.node_count || vector >= self.desc.vectors {
            return Err(EINVAL);
        }
        self.regs.ring(node, vector).ok_or(ENODEV)
    }
}

/// The bound fabric device, if any: an `Arc<Fabric>` turned into a raw pointer, read under RCU.
static CURRENT: AtomicPtr<Fabric> = AtomicPtr::new(core::ptr::null_mut());

/// Runs `f` on the bound fabric without taking a reference; `f` must not sleep.
pub(crate) fn with_current<R>(f: impl FnOnce(&Fabric) -> R) -> Option<R> {
    let _guard = rcu::read_lock();
    let p = CURRENT.load(Ordering::Acquire);
    // SAFETY: a non-null `CURRENT` is a live `Arc` whose release waits for an RCU grace period
    // after unpublishing, and we are inside an RCU read-side section.
    (!p.is_null()).then(|| f(unsafe { &*p }))
}

/// Returns a counted reference to the bound fabric (for callers that may sleep).
pub(crate) fn current() -> Option<Arc<Fabric>> {
    let _guard = rcu::read_lock();
    let p = CURRENT.load(Ordering::Acquire);
    // SAFETY: as in `with_current`; the borrow is turned into a new reference before the
    // read-side section ends.
    (!p.is_null()).then(|| unsafe { ArcBorrow::from_raw(p) }.into())
}

/// Publishes a fabric for the lifetime of this value; only one device can be bound.
pub(crate) struct Published(*const Fabric);

// SAFETY: `Published` only owns an `Arc<Fabric>` in raw form; `Fabric` is `Send + Sync`.
unsafe impl Send for Published {}

impl Published {
    pub(crate) fn new(fabric: Arc<Fabric>) -> Result<Self> {
        let raw = Arc::into_raw(fabric);
        if CURRENT
            .compare_exchange(
                core::ptr::null_mut(),
                raw.cast_mut(),
                Ordering::AcqRel,
                Ordering::Acquire,
            )
            .is_err()
        {
            // SAFETY: `raw` came from `Arc::into_raw` just above and was not published.
            drop(unsafe { Arc::from_raw(raw) });
            return Err(EBUSY);
        }
        Ok(Self(raw))
    }
}

impl Drop for Published {
    fn drop(&mut self) {
        CURRENT.store(core::ptr::null_mut(), Ordering::Release);
        rcu::synchronize_rcu();
        // SAFETY: `self.0` came from `Arc::into_raw`; after the grace period no reader holds it.
        drop(unsafe { Arc::from_raw(self.0) });
    }
}
