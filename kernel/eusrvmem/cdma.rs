// SPDX-License-Identifier: GPL-2.0
//! The fabric card's copy engine, emulated for the virtual cluster.
//!
//! The seed boards move KRAM's pages with a Xilinx AXI CDMA, which Linux drives through the
//! dmaengine API (`xilinx_dma`, `DMA_MEMCPY`). QEMU's `ivshmem` has no engine, so this module
//! offers the same API on the fabric device: `cdma_channels` dmaengine channels whose copies run
//! in a work item beside the submitting CPU and end with the client's callback, as an engine's
//! completion interrupt would. A client written for it (`unimem_kram`, `transfermode=1`) uses a
//! board's CDMA channels unchanged. On a board (`board.rs`) nothing is emulated.
//!
//! The engine resolves the DMA addresses it is given: the GAS window (what clients map with
//! `dma_map_resource`) and RAM (their pages); anything else fails the copy.

use crate::window::GasWindow;
use core::sync::atomic::{AtomicU64, Ordering};
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

/// The engine: where the window is, and counters of what it did.
pub(crate) struct Cdma {
    dev: ARef<Device>,
    window_phys: u64,
    window_size: usize,
    window_virt: *mut u8,
    pub(crate) copies: AtomicU64,
    pub(crate) bytes: AtomicU64,
    pub(crate) errors: AtomicU64,
    /// Keeps the window mapped while channels exist.
    _fabric: Arc<crate::fabric::Fabric>,
}

// SAFETY: `window_virt` is the fabric's window mapping, which `_fabric` keeps; copies through it
// are plain memory accesses, safe from any thread.
unsafe impl Send for Cdma {}
// SAFETY: see `Send`; the counters are atomic.
unsafe impl Sync for Cdma {}

impl Cdma {
    /// The kernel address of `len` bytes at DMA address `addr`: in the window or in RAM.
    fn resolve(&self, addr: u64, len: usize) -> Option<*mut u8> {
        let phys = provider::dma_to_phys(&self.dev, addr);
        let off = phys.wrapping_sub(self.window_phys);
        if phys >= self.window_phys && off < self.window_size as u64 {
            let end = off.checked_add(len as u64)?;
            if end > self.window_size as u64 {
                return None;
            }
            // SAFETY: `[off, end)` lies inside the window mapping (checked above).
            return Some(unsafe { self.window_virt.add(off as usize) });
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
        let Some(src) = self.resolve(job.src, job.len) else {
            self.errors.fetch_add(1, Ordering::Relaxed);
            return TxResult::ReadFailed;
        };
        let Some(dst) = self.resolve(job.dst, job.len) else {
            self.errors.fetch_add(1, Ordering::Relaxed);
            return TxResult::WriteFailed;
        };
        // SAFETY: both ranges are `len` bytes of RAM or of the window (`resolve`); `copy`
        // allows them to overlap, which a client's memcpy must not rely on anyway.
        unsafe { core::ptr::copy(src, dst, job.len) };
        self.copies.fetch_add(1, Ordering::Relaxed);
        self.bytes.fetch_add(job.len as u64, Ordering::Relaxed);
        TxResult::NoError
    }
}

/// Registers `channels` channels of `dev` copying to and from `fabric`'s window.
pub(crate) fn register(
    dev: &Device<Bound>,
    fabric: &Arc<crate::fabric::Fabric>,
    channels: usize,
) -> Result<Registration<Cdma>> {
    let w: &GasWindow = &fabric.window;
    let engine = Arc::new(
        Cdma {
            dev: dev.into(),
            window_phys: w.phys(),
            window_size: w.size(),
            window_virt: w.virt(),
            copies: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
            errors: AtomicU64::new(0),
            _fabric: fabric.clone(),
        },
        GFP_KERNEL,
    )?;
    Registration::new(dev, channels, engine)
}
