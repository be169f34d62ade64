// SPDX-License-Identifier: GPL-2.0
//! The lease engine's ticker, one for every borrower of lent memory (KRAM disks, NUMA ranges,
//! GSAS pools): the owner's `tick` runs in process context (renewals send on the mailbox, which
//! may wait for a ring) at once and then every [`RENEW_PERIOD_MS`], until the ticker is stopped.
//! Declared by `borrower.rs` (`unimem_kram`, `unimem_numa`, `unimem_gsas`) and, at its crate
//! root, by `unimem_eusrvmem` for the node's kernel heartbeat, which beats at the same period.
//! Names `crate::wire`, which `borrower.rs` and `exporter.rs` provide.
//!
//! A self-rearming delayed work item: a tick never overlaps the previous one, and a slow tick
//! delays the next instead of piling runs up. [`LeaseTicker::stop`] cancels a pending tick and
//! waits for a running one, which then does not re-arm (`cancel_delayed_work_sync`), so once it
//! returns nothing of the owner runs from here again.

use crate::wire::kram::RENEW_PERIOD_MS;
use core::sync::atomic::{AtomicBool, Ordering};
use kernel::{
    prelude::*,
    sync::Arc,
    time::msecs_to_jiffies,
    workqueue::{self, impl_has_delayed_work, new_delayed_work, DelayedWork, WorkItem},
};

/// What a lease ticker drives.
pub(crate) trait Tick: Send + Sync + 'static {
    /// Renew what is held, and whatever else the borrower does once a period (the `Arc`: to
    /// queue work of its own).
    fn tick(this: &Arc<Self>);
}

/// Runs `T::tick` every [`RENEW_PERIOD_MS`] (see the module documentation).
#[pin_data]
pub(crate) struct LeaseTicker<T: Tick> {
    owner: Arc<T>,
    stopping: AtomicBool,
    #[pin]
    work: DelayedWork<LeaseTicker<T>>,
}

impl_has_delayed_work! {
    impl{T: Tick} HasDelayedWork<Self> for LeaseTicker<T> { self.work }
}

impl<T: Tick> WorkItem for LeaseTicker<T> {
    type Pointer = Arc<Self>;

    fn run(this: Arc<Self>) {
        if this.stopping.load(Ordering::Acquire) {
            return;
        }
        T::tick(&this.owner);
        // Already pending cannot happen (only this run queues it); a stop in between makes the
        // queueing fail (`cancel_delayed_work_sync`) or cancels it.
        let period = msecs_to_jiffies(RENEW_PERIOD_MS as u32);
        let _ = workqueue::system_percpu().enqueue_delayed(this, period);
    }
}

impl<T: Tick> LeaseTicker<T> {
    /// A ticker for `owner`, not ticking yet (allocating is the only step that can fail).
    pub(crate) fn new(owner: Arc<T>) -> Result<Arc<Self>> {
        Arc::pin_init(
            pin_init!(LeaseTicker {
                owner,
                stopping: AtomicBool::new(false),
                work <- new_delayed_work!("unimem::lease_ticker"),
            }),
            GFP_KERNEL,
        )
    }

    /// Starts ticking: the first tick at once.
    pub(crate) fn start(this: &Arc<Self>) {
        let _ = workqueue::system_percpu().enqueue_delayed(this.clone(), 0);
    }

    /// Stops the ticker: no tick is pending or running once this returns, and none comes again.
    pub(crate) fn stop(this: &Arc<Self>) {
        this.stopping.store(true, Ordering::Release);
        DelayedWork::<Self>::cancel_sync(this);
    }
}
