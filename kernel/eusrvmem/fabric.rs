// SPDX-License-Identifier: GPL-2.0
//! What this node knows about the fabric, and where the rest of the module finds it.

use crate::{
    clients::Users,
    doorbell::Doorbell,
    fabric_api::FabricInfo,
    gas::GasDescriptor,
    published::{Published, Slot},
    regs::DoorbellRegs,
    window::GasWindow,
};
use core::sync::atomic::{AtomicBool, Ordering};
use kernel::{prelude::*, sync::Arc};

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

/// The bound fabric device, if any (only one is supported), read under RCU.
static CURRENT: Slot<Fabric> = Slot::new();

/// Runs `f` on the bound fabric without taking a reference; `f` must not sleep.
pub(crate) fn with_current<R>(f: impl FnOnce(&Fabric) -> R) -> Option<R> {
    CURRENT.with(f)
}

/// Returns a counted reference to the bound fabric (for callers that may sleep).
pub(crate) fn current() -> Option<Arc<Fabric>> {
    CURRENT.get()
}

/// Publishes `fabric` for the lifetime of the returned guard; `EBUSY` if a device is bound.
pub(crate) fn publish(fabric: Arc<Fabric>) -> Result<Published<Fabric>> {
    CURRENT.publish(fabric)
}
