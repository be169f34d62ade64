// SPDX-License-Identifier: GPL-2.0
//! The service of this node's partition: what it holds, what its lock protects, how it is
//! made, and the module reference that keeps the module loaded while anything of a user's
//! lives in the pool. Its jobs are in the files named for them: `request.rs` (serving a
//! request), `memory.rs` (the operations on the pool's memory), `lease.rs` (the pool's lease),
//! `zero.rs` (zeroing freed pages), `serving.rs` (the mailbox's hooks), `remote_maps.rs` and
//! `mappers.rs` (other nodes' mappings of the pool), `grow.rs` (more ranges on demand),
//! `copy.rs` and `indexed.rs` (memory-side operations), `claims.rs`, `fork.rs` and `stats.rs`.

use crate::{
    claims,
    fabric_api::FabricInfo,
    fabric_client::Gas,
    fork,
    indexed::Operands,
    kram_borrow::Borrow,
    kram_client::{Epoch, LogLimit},
    lease::PoolState,
    mailbox::INTERFACES,
    stats::Stats,
    wire::kram::GSAS_INSTANCES,
};
use core::sync::atomic::AtomicBool;
use kernel::{
    bindings, new_condvar, new_spinlock,
    prelude::*,
    sync::{Arc, CondVar, SpinLock},
    workqueue::{new_work, Work},
};

/// What one user may hold on this node (`user_pages_pct=`, `user_forks=`).
#[derive(Clone, Copy)]
pub(crate) struct Quota {
    pub(crate) pages_pct: u32,
    pub(crate) forks: u32,
}

/// What the service lock protects.
pub(crate) struct Inner {
    /// `None` once the fabric device went.
    pub(crate) pool: Option<PoolState>,
    /// Per (issuer node, interface): the owner entry word under which it was last answered
    /// (0: not since load) and the `seq` of that answer.
    pub(crate) seqs: KVec<(u64, u32)>,
    /// A module reference is held while allocations exist (unload is refused: nothing would
    /// renew their lease).
    module_held: bool,
    /// remoteFork's children and whether a daemon is attached.
    pub(crate) children: fork::Children,
    /// An INDEXED batch's entries, copied out of the issuer's bulk-out page (`indexed.rs`).
    pub(crate) operands: KBox<Operands>,
}

#[pin_data]
pub(crate) struct Service {
    pub(crate) gas: Arc<Gas>,
    pub(crate) info: FabricInfo,
    pub(crate) node: u32,
    /// Window offset of this node's partition.
    pub(crate) part: u64,
    pub(crate) quota: Quota,
    /// The most pages the pool may grow to (`pool_max_mib=`).
    pub(crate) max_pages: usize,
    module: &'static ThisModule,
    #[pin]
    pub(crate) inner: SpinLock<Inner>,
    /// Requests being applied, per issuer interface (`claims.rs`).
    #[pin]
    pub(crate) claims: claims::Claims,
    /// Signalled when a FORK is queued for the daemon.
    #[pin]
    pub(crate) jobs: CondVar,
    /// One per range the pool may have, for `GSAS_INSTANCES` in order (`lease.rs`).
    pub(crate) borrows: KVec<Pin<KBox<Borrow>>>,
    pub(crate) epoch: Epoch,
    pub(crate) stats: Stats,
    pub(crate) noisy: LogLimit,
    pub(crate) stopping: AtomicBool,
    /// Zeroes large freed allocations (`Service::zero_queued`).
    #[pin]
    pub(crate) zero: Work<Service, 1>,
    /// Borrows another range for the pool (`grow.rs`).
    #[pin]
    pub(crate) grow: Work<Service, 2>,
}

// SAFETY: the window is reached only through `gas` accesses; everything mutable is behind the
// lock or atomic.
unsafe impl Send for Service {}
// SAFETY: see `Send`.
unsafe impl Sync for Service {}

impl Service {
    /// The service of the partition `info` names, with no pool yet (`take_pool` installs it)
    /// and no answer given yet to any (issuer node, interface).
    pub(crate) fn new(
        gas: &Arc<Gas>,
        info: FabricInfo,
        quota: Quota,
        max_pages: usize,
        module: &'static ThisModule,
    ) -> Result<Arc<Self>> {
        let part = info.ctl_size + u64::from(info.node_id) * info.partition_size;
        let mut seqs = KVec::with_capacity((info.node_count * INTERFACES) as usize, GFP_KERNEL)?;
        for _ in 0..info.node_count * INTERFACES {
            seqs.push((0, 0), GFP_KERNEL)?;
        }
        let children = fork::Children::new()?;
        let operands = KBox::<Operands>::zeroed(GFP_KERNEL)?;
        let mut borrows = KVec::with_capacity(GSAS_INSTANCES.len(), GFP_KERNEL)?;
        for instance in GSAS_INSTANCES {
            borrows.push(
                KBox::pin_init(
                    Borrow::new(info.node_id, instance, Epoch::new()),
                    GFP_KERNEL,
                )?,
                GFP_KERNEL,
            )?;
        }
        let gas_ref = gas.clone();
        Arc::pin_init(
            pin_init!(Service {
                gas: gas_ref,
                info,
                node: info.node_id,
                part,
                quota,
                max_pages,
                module,
                inner <- new_spinlock!(Inner { pool: None, seqs, module_held: false, children, operands }, "unimem_gsas::inner"),
                claims <- claims::Claims::new(),
                jobs <- new_condvar!("unimem_gsas::jobs"),
                borrows,
                epoch: Epoch::new(),
                stats: Stats::new(),
                noisy: LogLimit::new(),
                stopping: AtomicBool::new(false),
                zero <- new_work!("unimem_gsas::zero"),
                grow <- new_work!("unimem_gsas::grow"),
            }),
            GFP_KERNEL,
        )
    }

    /// Takes a module reference for the first allocation. Under the lock.
    pub(crate) fn hold_module(&self, inner: &mut Inner) {
        if !inner.module_held {
            // SAFETY: `module` is this module, alive while its code runs; dropped by
            // `release_module` when the last allocation is freed.
            unsafe { bindings::__module_get(self.module.as_ptr()) };
            inner.module_held = true;
        }
    }

    /// Drops the module reference once no allocation is left and every freed one is zeroed
    /// (or the pool is gone). Under the lock.
    pub(crate) fn release_module(&self, inner: &mut Inner) {
        let none_left = inner
            .pool
            .as_ref()
            .is_none_or(|p| p.pages.allocations == 0 && p.pages.unzeroed == 0);
        if inner.module_held && none_left {
            // SAFETY: taken by `hold_module`.
            unsafe { bindings::module_put(self.module.as_ptr()) };
            inner.module_held = false;
        }
    }
}
