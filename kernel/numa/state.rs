// SPDX-License-Identifier: GPL-2.0
//! The module's state: the ranges online on the remote node, the lease with each lender and
//! the node's memory type. One object, shared by `/proc/unimem_numa`, the lease ticker, the
//! lenders' messages and the fabric's revocation; its methods live by job in:
//!
//! - `add.rs`: `add`, leasing a range and hot-adding it;
//! - `remove.rs`: `remove`, `remove_all` and the fabric's revocation, offlining ranges and
//!   giving them back;
//! - `lease.rs`: renewing the leases, the lenders' messages, and the rescue of ranges whose
//!   lease is not being renewed;
//! - `procfs.rs`: the control file.

use crate::{
    fabric_api,
    fabric_client::Gas,
    kram_borrow::{Borrow, Tally},
    kram_client::{Epoch, LeaseClock, LogLimit},
    wire::kram::{CHUNK_SIZE, NUMA_INSTANCE},
};
use core::sync::atomic::{AtomicBool, AtomicI64};
use kernel::{
    mm::memory_tiers::NodeMemoryType,
    new_mutex,
    prelude::*,
    sync::{Arc, Mutex},
    workqueue::{impl_has_work, new_work, Work},
};

/// One lent range, online on the remote node.
#[derive(Clone)]
pub(crate) struct Region {
    pub(crate) lender: u32,
    pub(crate) first_chunk: u32,
    pub(crate) chunks: u32,
    pub(crate) phys: u64,
    pub(crate) clock: Arc<LeaseClock>,
}

impl Region {
    pub(crate) fn size(&self) -> u64 {
        u64::from(self.chunks) * CHUNK_SIZE
    }
}

#[pin_data]
pub(crate) struct Numa {
    pub(crate) info: fabric_api::FabricInfo,
    pub(crate) gas: Arc<Gas>,
    /// Held once per online range: remote memory must be removed before the module can go,
    /// since nothing renews its lease once the module is gone.
    pub(crate) module: &'static ThisModule,
    /// The node remote memory goes to.
    pub(crate) nid: i32,
    pub(crate) block_size: u64,
    pub(crate) offer_timeout_ms: u32,
    /// The abstract distance of the node's memory type; `None`: the node gets none (DRAM).
    pub(crate) adistance: Option<i32>,
    /// The node's memory type while a range is online (taken under `regions`' lock, after it).
    #[pin]
    pub(crate) memtype: Mutex<Option<NodeMemoryType>>,
    /// Also serializes `add` and `remove`: held across the whole hotplug operation.
    #[pin]
    pub(crate) regions: Mutex<KVec<Region>>,
    /// The lease with each node, indexed by node id (one range per lender); apart from
    /// `regions`, whose lock `add` holds while it waits for the lender's messages.
    pub(crate) borrows: KVec<Pin<KBox<Borrow>>>,
    pub(crate) epoch: Epoch,
    pub(crate) stopping: AtomicBool,
    /// When a tick first found a range at risk (`at_risk`), 0 if the last one found none.
    pub(crate) at_risk_since: AtomicI64,
    /// The lenders' messages, by what they did (`/proc/unimem_numa`).
    pub(crate) tally: Tally,
    pub(crate) noisy: LogLimit,
    /// Takes ranges whose lease is not being renewed offline (`Numa::rescue`).
    #[pin]
    pub(crate) rescue: Work<Numa, 2>,
}

impl_has_work! {
    impl HasWork<Self, 2> for Numa { self.rescue }
}

// SAFETY: `info.gas_virt` is the fabric's mapping, written only through `gas` (to wipe a range
// nobody uses any more); everything mutable is behind a lock or an atomic.
unsafe impl Send for Numa {}
// SAFETY: see `Send`.
unsafe impl Sync for Numa {}

impl Numa {
    /// The state for remote memory on NUMA node `nid`, with a lease per node of `gas`'s fabric.
    pub(crate) fn new(
        module: &'static ThisModule,
        gas: Arc<Gas>,
        nid: i32,
        block_size: u64,
        offer_timeout_ms: u32,
        adistance: Option<i32>,
    ) -> Result<Arc<Self>> {
        let info = *gas.info();
        // One clock for the leases and for reading them.
        let epoch = Epoch::new();
        let mut borrows = KVec::with_capacity(info.node_count as usize, GFP_KERNEL)?;
        for _ in 0..info.node_count {
            borrows.push(
                KBox::pin_init(Borrow::new(info.node_id, NUMA_INSTANCE, epoch), GFP_KERNEL)?,
                GFP_KERNEL,
            )?;
        }
        Arc::pin_init(
            pin_init!(Numa {
                info,
                gas,
                module,
                nid,
                block_size,
                offer_timeout_ms,
                adistance,
                memtype <- new_mutex!(None, "unimem_numa::memtype"),
                regions <- new_mutex!(KVec::new(), "unimem_numa::regions"),
                borrows,
                epoch,
                stopping: AtomicBool::new(false),
                at_risk_since: AtomicI64::new(0),
                tally: Tally::new(),
                noisy: LogLimit::new(),
                rescue <- new_work!("unimem_numa::rescue"),
            }),
            GFP_KERNEL,
        )
    }

    /// The lease with `lender`, if it is a node of this fabric.
    pub(crate) fn borrow(&self, lender: u32) -> Option<&Borrow> {
        self.borrows.get(lender as usize).map(|b| &**b)
    }

    /// Gives the node its memory type before its first range comes online (`regions` locked).
    pub(crate) fn tier(&self, regions: &KVec<Region>) -> Result {
        let Some(adistance) = self.adistance else {
            return Ok(());
        };
        let mut memtype = self.memtype.lock();
        if regions.is_empty() && memtype.is_none() {
            // SAFETY: dropped only by `untier`, when no range of the node is online (`regions`
            // empty, under its lock); the node had no memory but ours
            // (`params::target_node`).
            *memtype = Some(unsafe { NodeMemoryType::new(self.nid, adistance) }?);
        }
        Ok(())
    }

    /// Takes the node's memory type away once no range is online (`regions` locked).
    pub(crate) fn untier(&self, regions: &KVec<Region>) {
        if regions.is_empty() {
            drop(self.memtype.lock().take());
        }
    }
}
