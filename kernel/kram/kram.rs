// SPDX-License-Identifier: GPL-2.0
//! The driver: the fabric and the engine it copies with, its instances, and the lending
//! protocol's counters; what it does at a tick, at a lender's message and when the fabric
//! device goes. Its methods are in the files of their jobs (`lending.rs`, `give_back.rs`,
//! `works.rs`, `instance.rs`, `stats.rs`, `sysfs.rs`).

use crate::disk::{Fabric, Transfer};
use crate::dma::Dma;
use crate::fabric_api;
use crate::fabric_client::{Gas, OnRevoke};
use crate::instance::{Instance, InstanceState};
use crate::kram_client::{Epoch, LenderSink, LogLimit};
use crate::layout::Shared;
use crate::lease_ticker::Tick;
use crate::params::Params;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use kernel::{
    new_mutex, new_work,
    prelude::*,
    sync::{Arc, ArcBorrow},
    workqueue::Work,
};

/// The driver, shared by the module, the lease ticker, the mailbox's lender callback and the
/// work items.
#[pin_data]
pub(crate) struct Kram {
    pub(crate) info: fabric_api::FabricInfo,
    pub(crate) fabric: Fabric,
    /// The engine's channels, with `transfermode=1`.
    pub(crate) dma: Option<Arc<Dma>>,
    pub(crate) mirror: bool,
    /// `stall_timeout`.
    pub(crate) max_stall_ns: i64,
    pub(crate) epoch: Epoch,
    pub(crate) instances: KVec<Pin<KBox<Instance>>>,
    /// Set at unload: no new requests, no new disks.
    pub(crate) stopping: AtomicBool,
    /// Offers confirmed and declined; ACKs and REVOKEs taken; lender messages dropped as
    /// malformed or matching no lease.
    pub(crate) confirmed: AtomicU64,
    pub(crate) declined: AtomicU64,
    pub(crate) acks: AtomicU64,
    pub(crate) revokes: AtomicU64,
    pub(crate) malformed: AtomicU64,
    pub(crate) stray: AtomicU64,
    /// Peer-caused warnings.
    pub(crate) noisy: LogLimit,
    #[pin]
    pub(crate) attach: Work<Kram, 2>,
    #[pin]
    pub(crate) resync: Work<Kram, 3>,
}

// SAFETY: `info.gas_virt` is the fabric's mapping, dereferenced only under a window access of
// `fabric`; everything mutable is behind a lock or atomic.
unsafe impl Send for Kram {}
// SAFETY: see `Send`.
unsafe impl Sync for Kram {}

impl OnRevoke for Kram {
    /// The fabric device goes: every request fails from now on (the data is out of reach), no
    /// lease is renewed and no memory asked for; the disks stay until unloaded.
    fn revoke(&self) {
        self.fabric.gas().revoke();
        // No request reaches the window any more; the engine's copies end, then its channels
        // go back before the fabric device unregisters the engine.
        if let Some(d) = &self.dma {
            d.revoke();
        }
        pr_warn!(
            "fabric device gone: /dev/kram* fail every request; swapoff, then unload unimem_kram\n"
        );
    }
}

impl Tick for Kram {
    fn tick(this: &Arc<Self>) {
        if !this.stopping.load(Ordering::Acquire) {
            this.tick();
        }
    }
}

impl LenderSink for Kram {
    fn message(this: ArcBorrow<'_, Self>, from: u32, word: u64) {
        let kram: Arc<Kram> = this.into();
        kram.message(from, word);
    }
}

impl Kram {
    /// The driver for the checked parameters, on the attached fabric: the engine's channels
    /// (`transfermode=1`) and every instance, still without memory.
    pub(crate) fn new(gas: &Arc<Gas>, params: &Params) -> Result<Arc<Self>> {
        let mirror = params.mirror;
        let info = *gas.info();
        let fabric = Fabric::new(gas.clone());
        let dma = match params.transfer {
            Transfer::Cdma => Some(Dma::new(
                kernel::cpu::nr_cpu_ids() as usize,
                info.gas_phys,
                usize::try_from(info.gas_size)?,
                info.gas_virt,
            )?),
            Transfer::Memcpy => None,
        };
        let mut instances = KVec::with_capacity(params.sizes.len(), GFP_KERNEL)?;
        for (id, &size_mib) in params.sizes.iter().enumerate() {
            let shared = Shared::new(if mirror { 2 } else { 1 })?;
            instances.push(
                KBox::pin_init(
                    pin_init!(Instance {
                        id: id as u32,
                        size_mib,
                        state <- new_mutex!(InstanceState { shared, disk: None, lost: false }, "unimem_kram::instance"),
                    }),
                    GFP_KERNEL,
                )?,
                GFP_KERNEL,
            )?;
        }
        Arc::pin_init(
            pin_init!(Kram {
                info,
                fabric,
                dma,
                mirror,
                max_stall_ns: params.max_stall_ns,
                epoch: Epoch::new(),
                instances,
                stopping: AtomicBool::new(false),
                confirmed: AtomicU64::new(0),
                declined: AtomicU64::new(0),
                acks: AtomicU64::new(0),
                revokes: AtomicU64::new(0),
                malformed: AtomicU64::new(0),
                stray: AtomicU64::new(0),
                noisy: LogLimit::new(),
                attach <- new_work!("unimem_kram::attach"),
                resync <- new_work!("unimem_kram::resync"),
            }),
            GFP_KERNEL,
        )
    }

    pub(crate) fn me(&self) -> u8 {
        self.info.node_id as u8
    }
}
