// SPDX-License-Identifier: GPL-2.0
//! `transfermode=1`: requests copied by a DMA engine's `DMA_MEMCPY` channels, the way KRAM on
//! the seed boards drives their Xilinx CDMA (seed 000, 3.2). In the virtual cluster the engine
//! is the one `unimem_eusrvmem` emulates; on a board it would be `xilinx_dma`'s, unchanged.
//!
//! At load KRAM takes one channel per CPU (at least one), maps the GAS window for the engine's
//! device and allocates its request contexts (the "page descriptors" seed 3.2 pre-allocates);
//! the engine's driver allocates its own descriptors when a channel is taken. A request's
//! segments are mapped, each becomes one copy per copy of the data (two with `mirror=1`), and
//! the request ends in the completion of its last copy. A read whose lender was lost meanwhile,
//! or a failed copy, is served again by the CPU, which fails over to the mirror. What the engine
//! cannot take (no free context or descriptor, a segment across parts) the CPU copies, as with
//! `transfermode=0`.
//!
//! Completion context: an engine may call its callbacks from its interrupt handler (hard IRQ) or
//! a tasklet. The completion path therefore only takes interrupt-safe locks, unmaps and ends the
//! request; a request that the CPU must serve again (a failed copy, a lender lost meanwhile)
//! goes to a work item, since that copy takes the layout's lock and up to 1 MiB of CPU time.

use crate::disk::{finish, Backing, KramDisk};
use core::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use kernel::{
    block::mq::{Command, Request},
    device::Device,
    dma::{self, DataDirection, DmaAddress},
    dmaengine::{Channel, Completion, TxResult},
    new_spinlock_irq, new_work,
    prelude::*,
    revocable::Revocable,
    sync::{aref::ARef, Arc, SpinLockIrq},
    time::{delay::fsleep, Delta},
    workqueue::{self, impl_has_work, Work, WorkItem},
};

/// Request contexts: requests the engine can have in flight, over all instances.
const CONTEXTS: usize = 256;
/// Segments of one request the engine takes (a 1 MiB request of whole pages has 256).
const MAX_SEGMENTS: usize = 256;
/// How long revocation waits for copies in flight before it takes the channels back anyway.
const DRAIN_MS: u32 = 10_000;

/// The channels, and the window mapped for their device.
struct Channels {
    chans: KVec<Channel>,
    window: DmaAddress,
    window_len: usize,
}

impl Drop for Channels {
    fn drop(&mut self) {
        if let Some(c) = self.chans.first() {
            // SAFETY: `window` is the mapping `Dma::new` made on this device; nothing uses it
            // any more (the channels are revoked, their copies drained).
            unsafe {
                dma::unmap_resource(
                    c.device(),
                    self.window,
                    self.window_len,
                    DataDirection::Bidirectional,
                )
            };
        }
    }
}

/// What one request in flight needs at its completion.
struct CtxState {
    rq: Option<ARef<Request<KramDisk>>>,
    /// The disk's queue data; valid while `rq` is in flight.
    backing: *const Backing,
    maps: KVec<(DmaAddress, u32)>,
    read: bool,
    /// Lenders whose parts hold the request's bytes (bit per node).
    nodes: u64,
}

#[pin_data]
struct Ctx {
    /// Interrupt-safe: the last copy's completion may come in hard IRQ context.
    #[pin]
    state: SpinLockIrq<CtxState>,
    /// Copies not completed, plus one held by the submitter until it has submitted them all.
    pending: AtomicUsize,
    failed: AtomicBool,
    /// Serves the request again with the CPU, in process context.
    #[pin]
    again: Work<Ctx>,
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

/// What [`Dma::submit`] did with a request.
pub(crate) enum Submitted {
    /// The engine has it; its last copy's completion ends it.
    Engine,
    /// It must wait for a stalled lease (blk-mq requeues it).
    Requeue,
    /// The CPU must copy it (`transfermode=0`'s path).
    Cpu(ARef<Request<KramDisk>>),
}

/// The engine as KRAM uses it.
#[pin_data(PinnedDrop)]
pub(crate) struct Dma {
    #[pin]
    chans: Revocable<Channels>,
    /// The channels' device, on which the requests' pages are mapped; kept to unmap those of
    /// requests the engine never finished once its channels are gone.
    dev: ARef<Device>,
    names: KVec<u8>,
    window_virt: usize,
    /// Free contexts (interrupt-safe: completions give them back). Room for all of them.
    #[pin]
    pool: SpinLockIrq<KVec<Arc<Ctx>>>,
    /// Every context, free or not.
    all: KVec<Arc<Ctx>>,
    inflight: AtomicUsize,
    pub(crate) copies: AtomicU64,
    pub(crate) cpu_copies: AtomicU64,
    pub(crate) failed: AtomicU64,
}

impl Dma {
    /// Takes up to `want` `DMA_MEMCPY` channels of one device (at least one) and maps the
    /// window (`phys`, `len` bytes, mapped at `virt`) for it.
    pub(crate) fn new(want: usize, phys: u64, len: usize, virt: *mut u8) -> Result<Arc<Self>> {
        let mut chans: KVec<Channel> = KVec::new();
        while chans.len() < want.max(1) {
            let c = match Channel::request_memcpy() {
                Ok(c) => c,
                Err(e) if chans.is_empty() => {
                    pr_err!(
                        "transfermode=1 needs a free DMA_MEMCPY channel and found none ({:?}): is unimem_eusrvmem bound with cdma_channels other than 0? transfermode=0 copies with the CPU\n",
                        e
                    );
                    return Err(e);
                }
                Err(_) => break,
            };
            // Buffers are mapped once for the first channel's device.
            if chans
                .first()
                .is_some_and(|f| !core::ptr::eq(f.device(), c.device()))
            {
                break;
            }
            chans.push(c, GFP_KERNEL)?;
        }
        let dev = chans.first().ok_or(ENODEV)?.device();
        let dev_ref: ARef<Device> = dev.into();
        let window = dma::map_resource(dev, phys, len, DataDirection::Bidirectional)
            .inspect_err(|e| pr_err!("cannot map the GAS window for the DMA engine: {:?}\n", e))?;
        let mut names = KVec::new();
        for (i, c) in chans.iter().enumerate() {
            if i > 0 {
                names.extend_from_slice(b",", GFP_KERNEL)?;
            }
            names.extend_from_slice(c.name().to_bytes(), GFP_KERNEL)?;
        }
        let channels = Channels {
            chans,
            window,
            window_len: len,
        };
        let mut pool = KVec::with_capacity(CONTEXTS, GFP_KERNEL)?;
        let mut all = KVec::with_capacity(CONTEXTS, GFP_KERNEL)?;
        for _ in 0..CONTEXTS {
            let state = CtxState {
                rq: None,
                backing: core::ptr::null(),
                maps: KVec::with_capacity(MAX_SEGMENTS, GFP_KERNEL)?,
                read: false,
                nodes: 0,
            };
            let ctx = Arc::pin_init(
                pin_init!(Ctx {
                    state <- new_spinlock_irq!(state, "unimem_kram::dma::ctx"),
                    pending: AtomicUsize::new(0),
                    failed: AtomicBool::new(false),
                    again <- new_work!("unimem_kram::dma::again"),
                }),
                GFP_KERNEL,
            )?;
            all.push(ctx.clone(), GFP_KERNEL)?;
            pool.push(ctx, GFP_KERNEL)?;
        }
        Arc::pin_init(
            pin_init!(Self {
                chans <- Revocable::new(channels),
                dev: dev_ref,
                names,
                window_virt: virt as usize,
                pool <- new_spinlock_irq!(pool, "unimem_kram::dma::pool"),
                all,
                inflight: AtomicUsize::new(0),
                copies: AtomicU64::new(0),
                cpu_copies: AtomicU64::new(0),
                failed: AtomicU64::new(0),
            }),
            GFP_KERNEL,
        )
    }

    /// The channels' names, for the log and the stats.
    pub(crate) fn names(&self) -> &str {
        core::str::from_utf8(&self.names).unwrap_or("?")
    }

    /// Hands `rq` to the engine, or says why not. The copies start with the last request of
    /// blk-mq's batch (`is_last`, else [`Dma::issue_all`] from `commit_rqs`), as a driver rings
    /// an engine's doorbell once per batch.
    pub(crate) fn submit(
        &self,
        backing: &Backing,
        rq: ARef<Request<KramDisk>>,
        is_last: bool,
    ) -> Submitted {
        let read = match rq.command() {
            Command::Read => true,
            Command::Write => false,
            _ => return Submitted::Cpu(rq),
        };
        let Some(chans) = self.chans.try_access() else {
            return Submitted::Cpu(rq);
        };
        let Some(ctx) = self.pool.lock().pop() else {
            return Submitted::Cpu(rq);
        };
        // One channel per CPU keeps submitters apart.
        let cpu = kernel::cpu::CpuId::current().as_u32() as usize;
        let Some(chan) = chans
            .chans
            .get(cpu.checked_rem(chans.chans.len()).unwrap_or(0))
        else {
            drop(chans);
            self.recycle(ctx);
            return Submitted::Cpu(rq);
        };
        let dev = chan.device();
        let dir = if read {
            DataDirection::FromDevice
        } else {
            DataDirection::ToDevice
        };
        ctx.pending.store(1, Ordering::Relaxed);
        ctx.failed.store(false, Ordering::Relaxed);
        self.inflight.fetch_add(1, Ordering::AcqRel);
        // Filled without the context's lock, which completions take in hard IRQ: holding it
        // across `with_io` would nest the layout's lock (taken with interrupts on) inside an
        // interrupt-safe one. Nothing reads them before the submitter's count is dropped.
        let mut maps = core::mem::take(&mut ctx.state.lock().maps);
        maps.clear();
        let mut nodes = 0u64;
        let mut submitted = false;
        let outcome = backing.with_io(&*rq, |io, start| {
            // Everything is checked before the first copy is submitted.
            let mut at = start;
            let mut segments = 0usize;
            rq.for_each_segment(|seg| {
                segments += 1;
                if segments > MAX_SEGMENTS || !io.within_parts(at, seg.len()) {
                    return Err(EAGAIN);
                }
                at += seg.len() as u64;
                Ok(())
            })?;
            submitted = true;
            let mut at = start;
            rq.for_each_segment(|seg| {
                let n = seg.len();
                nodes |= io.nodes_at(at);
                let page = seg.dma_map(dev, dir).ok();
                if let Some(p) = page {
                    // Cannot fail: `maps` has room for `MAX_SEGMENTS`.
                    let _ = maps.push_within_capacity((p, n as u32));
                }
                // `within_parts`: each copy hands out the whole segment at once.
                let piece = |gas: *mut u8| {
                    let on_engine = page.and_then(|p| {
                        let g = chans
                            .window
                            .wrapping_add((gas as usize).wrapping_sub(self.window_virt) as u64);
                        let (dst, src) = if read { (p, g) } else { (g, p) };
                        ctx.pending.fetch_add(1, Ordering::Relaxed);
                        match chan.memcpy::<Done>(dst, src, n, ctx.clone()) {
                            Ok(_) => Some(()),
                            Err(_) => {
                                ctx.pending.fetch_sub(1, Ordering::Relaxed);
                                None
                            }
                        }
                    });
                    if on_engine.is_some() {
                        self.copies.fetch_add(1, Ordering::Relaxed);
                        return;
                    }
                    self.cpu_copies.fetch_add(1, Ordering::Relaxed);
                    // SAFETY: `gas` has the segment's `n` bytes of one part (`within_parts`).
                    unsafe {
                        if read {
                            seg.copy_from(gas)
                        } else {
                            seg.copy_to(gas)
                        }
                    }
                };
                if read {
                    io.read(at, n, |src, _, _| piece(src.cast_mut()))?;
                } else {
                    io.write(at, n, |dst, _, _| piece(dst))?;
                }
                at += n as u64;
                Ok(())
            })
        });
        match outcome {
            Ok(()) => {}
            Err(e) if !submitted => {
                ctx.state.lock().maps = maps;
                self.inflight.fetch_sub(1, Ordering::AcqRel);
                self.recycle(ctx);
                if e == ENOMEM {
                    return Submitted::Requeue;
                }
                return Submitted::Cpu(rq);
            }
            // Some piece had no usable copy: the request fails once its copies are done.
            Err(_) => ctx.failed.store(true, Ordering::Relaxed),
        }
        {
            let mut st = ctx.state.lock();
            st.read = read;
            st.nodes = nodes;
            st.backing = backing;
            st.maps = maps;
            st.rq = Some(rq);
        }
        if is_last {
            chan.issue_pending();
        }
        drop(chans);
        self.put(ctx);
        Submitted::Engine
    }

    /// Starts what was submitted on every channel: the end of a batch whose last request did
    /// not reach the engine.
    pub(crate) fn issue_all(&self) {
        if let Some(chans) = self.chans.try_access() {
            for c in chans.chans.iter() {
                c.issue_pending();
            }
        }
    }

    /// Drops one count of `ctx`; the last ends its request.
    fn put(&self, ctx: Arc<Ctx>) {
        if ctx.pending.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.complete(ctx);
        }
    }

    /// Gives a context back to the pool (never allocates: the pool has room for all).
    fn recycle(&self, ctx: Arc<Ctx>) {
        if self.pool.lock().push_within_capacity(ctx).is_err() {
            pr_err!("DMA request context pool full: context dropped\n");
        }
    }

    /// Unmaps the pages of `ctx`'s request (its copies are done or will never be). Any context.
    /// Called only while the channels' device is bound: from a copy's completion (its channel
    /// is held, and the engine's device unregisters the engine, in its unbind, only after the
    /// clients gave their channels back) or from [`Dma::revoke`] (in that unbind, before).
    fn unmap(&self, st: &mut CtxState) {
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
    fn end(&self, ctx: Arc<Ctx>, rq: ARef<Request<KramDisk>>, result: Result) {
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
            Err(e) if e == ENOMEM => Err(EIO),
            r => r,
        };
        self.end(ctx, rq, result);
    }

    /// For the revocation of the fabric device, once no new request can reach the window:
    /// waits for the copies in flight, then gives the channels back to their engine.
    pub(crate) fn revoke(&self) {
        let mut waited = 0;
        while self.inflight.load(Ordering::Acquire) != 0 && waited < DRAIN_MS {
            fsleep(Delta::from_millis(1));
            waited += 1;
        }
        let left = self.inflight.load(Ordering::Acquire);
        if left != 0 {
            pr_err!(
                "{} request(s) still on the DMA engine after {} ms; taking the channels back and failing them\n",
                left,
                DRAIN_MS
            );
        }
        // Releasing the channels drops their unfinished copies without callbacks, and no
        // callback runs after it returns.
        self.chans.revoke();
        // Whatever had copies left would wait forever: end it with an error. A context whose
        // count this swap does not take (0) was completed, or is with its work item.
        for ctx in self.all.iter() {
            if ctx.pending.swap(0, Ordering::AcqRel) == 0 {
                continue;
            }
            let rq = {
                let mut st = ctx.state.lock();
                self.unmap(&mut st);
                st.rq.take()
            };
            if let Some(rq) = rq {
                self.failed.fetch_add(1, Ordering::Relaxed);
                self.end(ctx.clone(), rq, Err(EIO));
            }
        }
    }
}

/// Completion of one copy: its request's context.
struct Done;

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

#[pinned_drop]
impl PinnedDrop for Dma {
    fn drop(self: Pin<&mut Self>) {
        // A context's work item may still be returning after it ended its request.
        for ctx in self.all.iter() {
            ctx.again.flush();
        }
    }
}
