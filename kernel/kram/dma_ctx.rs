// SPDX-License-Identifier: GPL-2.0
//! `transfermode=1`: a request's context on the DMA engine, and the end of the request once its
//! last copy completes (in any context, hard IRQ included) or the CPU has served it again.

use crate::disk::{finish, Backing, KramDisk};
use crate::dma::Dma;
use crate::io::NotServed;
use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use kernel::{
    block::mq::Request,
    dma::{self, DataDirection, DmaAddress},
    dmaengine::{Completion, TxResult},
    prelude::*,
    sync::{aref::ARef, Arc, SpinLockIrq},
    workqueue::{self, impl_has_work, Work, WorkItem},
};

/// What one request in flight needs at its completion.
pub(crate) struct CtxState {
    pub(crate) rq: Option<ARef<Request<KramDisk>>>,
    /// The disk's queue data; valid while `rq` is in flight.
    pub(crate) backing: *const Backing,
    pub(crate) maps: KVec<(DmaAddress, u32)>,
    pub(crate) read: bool,
    /// Lenders whose parts hold the request's bytes (bit per node).
    pub(crate) nodes: u64,
}

#[pin_data]
pub(crate) struct Ctx {
    /// Interrupt-safe: the last copy's completion may come in hard IRQ context.
    #[pin]
    pub(crate) state: SpinLockIrq<CtxState>,
    /// Copies not completed, plus one held by the submitter until it has submitted them all.
    pub(crate) pending: AtomicUsize,
    pub(crate) failed: AtomicBool,
    /// Serves the request again with the CPU, in process context.
    #[pin]
    pub(crate) again: Work<Ctx>,
}

impl_has_work! {
    impl HasWork<Self> for Ctx { self.again }
}

impl WorkItem for Ctx {
    type Pointer = Arc<Ctx>;

    fn run(ctx: Arc<Ctx>) {
        let backing = ctx.state.lock().backing;
        // SAFETY: the request is still in flight (`complete` handed it here without ending
        // it), so its queue data is alive.
        let backing = unsafe { &*backing };
        if let Some(d) = backing.dma.as_ref() {
            d.serve_again(ctx);
        }
    }
}

// SAFETY: `backing` is only dereferenced while the request it belongs to is in flight, which
// keeps the disk and its queue data alive; the rest is owned data behind a lock or atomic.
unsafe impl Send for Ctx {}
// SAFETY: see `Send`.
unsafe impl Sync for Ctx {}

impl Dma {
    /// Drops one count of `ctx`; the last ends its request.
    pub(crate) fn put(&self, ctx: Arc<Ctx>) {
        if ctx.pending.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.complete(ctx);
        }
    }

    /// Gives a context back to the pool (never allocates: the pool has room for all).
    pub(crate) fn recycle(&self, ctx: Arc<Ctx>) {
        if self.pool.lock().push_within_capacity(ctx).is_err() {
            pr_err!("DMA request context pool full: context dropped\n");
        }
    }

    /// Unmaps the pages of `ctx`'s request (its copies are done or will never be). Any context.
    /// Called only while the channels' device is bound: from a copy's completion (its channel
    /// is held, and the engine's device unregisters the engine, in its unbind, only after the
    /// clients gave their channels back) or from [`Dma::revoke`] (in that unbind, before).
    pub(crate) fn unmap(&self, st: &mut CtxState) {
        let dir = if st.read {
            DataDirection::FromDevice
        } else {
            DataDirection::ToDevice
        };
        // SAFETY: the device is bound during this call (see above), and the reference does not
        // outlive it.
        let dev = unsafe { self.dev.as_bound() };
        for &(addr, len) in st.maps.iter() {
            // SAFETY: each entry is a mapping of this request's pages on `dev`, the channels'
            // device, and no copy of them runs any more.
            unsafe { dma::unmap_page(dev, addr, len as usize, dir) };
        }
        st.maps.clear();
    }

    /// All copies of `ctx`'s request are done: unmap, check, end it and recycle the context;
    /// or hand it to [`Dma::serve_again`] if the CPU must serve it. Any context, hard IRQ
    /// included.
    fn complete(&self, ctx: Arc<Ctx>) {
        let (rq, backing, read, nodes) = {
            let mut st = ctx.state.lock();
            self.unmap(&mut st);
            (st.rq.take(), st.backing, st.read, st.nodes)
        };
        let Some(rq) = rq else {
            return;
        };
        // SAFETY: `rq` was in flight until now, so its disk and queue data are alive.
        let backing = unsafe { &*backing };
        let failed = ctx.failed.load(Ordering::Acquire);
        if failed || (read && backing.any_lost(nodes)) {
            if failed {
                self.failed.fetch_add(1, Ordering::Relaxed);
            }
            ctx.state.lock().rq = Some(rq);
            // The CPU serves it again, through the copy that is intact: not in this context.
            let _ = workqueue::system_percpu().enqueue(ctx);
            return;
        }
        self.end(ctx, rq, Ok(()));
    }

    /// Ends `rq`, whose copies are all done or dropped, and gives its context back. `rq` goes
    /// last: its queue data (and so `self`) may go with it.
    pub(crate) fn end(&self, ctx: Arc<Ctx>, rq: ARef<Request<KramDisk>>, result: Result) {
        self.recycle(ctx);
        self.inflight.fetch_sub(1, Ordering::AcqRel);
        finish(rq, result);
    }

    /// Serves `ctx`'s request with the CPU after a failed copy or a lost lender. Process
    /// context (`Ctx`'s work item).
    fn serve_again(&self, ctx: Arc<Ctx>) {
        let (rq, backing) = {
            let mut st = ctx.state.lock();
            (st.rq.take(), st.backing)
        };
        let Some(rq) = rq else {
            return;
        };
        // SAFETY: `rq` is in flight until `finish` below, so its queue data is alive.
        let backing = unsafe { &*backing };
        let result = match backing.serve(&*rq) {
            // Served again from a completion: no one would requeue it.
            Err(NotServed::Later) => Err(EIO),
            r => r.map_err(NotServed::error),
        };
        self.end(ctx, rq, result);
    }
}

/// Completion of one copy: its request's context.
pub(crate) struct Done;

impl Completion for Done {
    type Data = Arc<Ctx>;

    fn complete(ctx: Arc<Ctx>, result: TxResult) {
        if result != TxResult::NoError {
            ctx.failed.store(true, Ordering::Release);
        }
        if ctx.pending.fetch_sub(1, Ordering::AcqRel) != 1 {
            return;
        }
        let backing = ctx.state.lock().backing;
        // SAFETY: the request is still in flight (this is its last copy), so its queue data is
        // alive.
        let backing = unsafe { &*backing };
        if let Some(d) = backing.dma.as_ref() {
            d.complete(ctx);
        }
    }
}
