// SPDX-License-Identifier: GPL-2.0
//! The fabric card's copy engine, emulated for the virtual cluster.
//!
//! The seed boards move KRAM's pages with a Xilinx AXI CDMA, which Linux drives through the
//! dmaengine API (`xilinx_dma`, `DMA_MEMCPY`). QEMU's `ivshmem` has no engine, so this module
//! offers the same API on the fabric device: `cdma_channels` dmaengine channels whose copies run
//! in a work item beside the submitting CPU and end with the client's callback, as an engine's
//! completion interrupt would (with `cdma_hardirq=1` the callback runs in hard interrupt
//! context, as a board's may: a client's completion path is tested in that context). A client
//! written for it (`unimem_kram`, `transfermode=1`) uses a board's CDMA channels unchanged. On a
//! board (`board.rs`) nothing is emulated.
//!
//! The engine resolves the DMA addresses it is given: the GAS window (what clients map with
//! `dma_map_resource`) and RAM (their pages); anything else fails the copy.

use crate::fabric::Fabric;
use core::sync::atomic::{AtomicU32, Ordering};
use kernel::{
    device::{Bound, Device},
    dmaengine::{
        provider::{self, Engine, Job, Registration},
        TxResult,
    },
    prelude::*,
    sync::{aref::ARef, Arc},
    time::Delta,
};

/// Most channels offered (one per CPU by default).
pub(crate) const MAX_CHANNELS: usize = 16;

/// The engine: the device it resolves DMA addresses for, and the fabric whose window it copies
/// to and from (the reference keeps the window mapped while channels exist).
pub(crate) struct Cdma {
    dev: ARef<Device>,
    fabric: Arc<Fabric>,
    /// `cdma_fail_every`: every Nth copy fails, as a bus error would fail it (0: none).
    fail_every: u32,
    /// `cdma_hardirq`: completion callbacks run in hard interrupt context.
    hardirq: bool,
    copies: AtomicU32,
}

impl Cdma {
    /// The kernel address of `len` bytes at DMA address `addr`: in the window or in RAM.
    fn resolve(&self, addr: u64, len: usize) -> Option<*mut u8> {
        let w = &self.fabric.window;
        let phys = provider::dma_to_phys(&self.dev, addr);
        let off = phys.wrapping_sub(w.phys());
        if phys >= w.phys() && off < w.size() as u64 {
            let end = off.checked_add(len as u64)?;
            if end > w.size() as u64 {
                return None;
            }
            // SAFETY: `[off, end)` lies inside the window mapping (checked above).
            return Some(unsafe { w.virt().add(off as usize) });
        }
        provider::ram(phys, len).map(|p| p.as_ptr())
    }
}

impl Engine for Cdma {
    /// As many as a KRAM hardware queue can have requests in flight, with room for requests
    /// that span parts of the disk.
    const DESCRIPTORS: usize = 256;

    /// A CPU that would idle spins a little for the next batch: a worker's wake-up costs more
    /// than a 4 KiB copy (about 100 µs between two vCPUs under TCG, against 10 µs for the copy
    /// and its request).
    const POLL: Delta = Delta::from_micros(100);

    fn transfer(&self, _channel: usize, job: &Job) -> TxResult {
        if self.fail_every != 0 {
            let n = self.copies.fetch_add(1, Ordering::Relaxed).wrapping_add(1);
            if n.checked_rem(self.fail_every) == Some(0) {
                return TxResult::WriteFailed;
            }
        }
        let Some(src) = self.resolve(job.src, job.len) else {
            return TxResult::ReadFailed;
        };
        let Some(dst) = self.resolve(job.dst, job.len) else {
            return TxResult::WriteFailed;
        };
        // SAFETY: both ranges are `len` bytes of RAM or of the window (`resolve`); `copy`
        // allows them to overlap, which a client's memcpy must not rely on anyway.
        unsafe { core::ptr::copy(src, dst, job.len) };
        TxResult::NoError
    }

    fn completes_in_hardirq(&self) -> bool {
        self.hardirq
    }
}

/// Registers `channels` channels of `dev` copying to and from `fabric`'s window; every
/// `fail_every`th copy fails (0: none); completion callbacks run in hard IRQ context if
/// `hardirq`.
pub(crate) fn register(
    dev: &Device<Bound>,
    fabric: &Arc<Fabric>,
    channels: usize,
    fail_every: u32,
    hardirq: bool,
) -> Result<Registration<Cdma>> {
    if fail_every != 0 {
        dev_warn!(
            dev,
            "the emulated CDMA engine fails every {} copies (cdma_fail_every)\n",
            fail_every
        );
    }
    let engine = Arc::new(
        Cdma {
            dev: dev.into(),
            fabric: fabric.clone(),
            fail_every,
            hardirq,
            copies: AtomicU32::new(0),
        },
        GFP_KERNEL,
    )?;
    Registration::new(dev, channels, engine)
}
