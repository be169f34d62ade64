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
//!
//! Here the channels and their setup and revocation; a request's way onto the engine:
//! `dma_submit.rs`; its context and completion: `dma_ctx.rs`.

use crate::dma_ctx::{Ctx, CtxState};
use core::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use kernel::{
    device::Device,
    dma::{self, DataDirection, DmaAddress},
    dmaengine::Channel,
    new_spinlock_irq, new_work,
    prelude::*,
    revocable::Revocable,
    sync::{aref::ARef, Arc, SpinLockIrq},
    time::{delay::fsleep, Delta},
};

/// Request contexts: requests the engine can have in flight, over all instances.
const CONTEXTS: usize = 256;
/// Segments of one request the engine takes (a 1 MiB request of whole pages has 256).
pub(crate) const MAX_SEGMENTS: usize = 256;
/// How long revocation waits for copies in flight before it takes the channels back anyway.
const DRAIN_MS: u32 = 10_000;

/// The channels, and the window mapped for their device.
pub(crate) struct Channels {
    pub(crate) chans: KVec<Channel>,
    pub(crate) window: DmaAddress,
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

/// The engine as KRAM uses it.
#[pin_data(PinnedDrop)]
pub(crate) struct Dma {
    #[pin]
    pub(crate) chans: Revocable<Channels>,
    /// The channels' device, on which the requests' pages are mapped; kept to unmap those of
    /// requests the engine never finished once its channels are gone.
    pub(crate) dev: ARef<Device>,
    names: KVec<u8>,
    pub(crate) window_virt: usize,
    /// Free contexts (interrupt-safe: completions give them back). Room for all of them.
    #[pin]
    pub(crate) pool: SpinLockIrq<KVec<Arc<Ctx>>>,
    /// Every context, free or not.
    all: KVec<Arc<Ctx>>,
    pub(crate) inflight: AtomicUsize,
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

    /// Starts what was submitted on every channel: the end of a batch whose last request did
    /// not reach the engine.
    pub(crate) fn issue_all(&self) {
        if let Some(chans) = self.chans.try_access() {
            for c in chans.chans.iter() {
                c.issue_pending();
            }
        }
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

#[pinned_drop]
impl PinnedDrop for Dma {
    fn drop(self: Pin<&mut Self>) {
        // A context's work item may still be returning after it ended its request.
        for ctx in self.all.iter() {
            ctx.again.flush();
        }
    }
}
