// SPDX-License-Identifier: GPL-2.0
//! `transfermode=1`: how a request gets onto the DMA engine. Its segments are checked, mapped
//! and become one copy per copy of the data; what the engine cannot take goes back to the CPU.

use crate::disk::{Backing, KramDisk};
use crate::dma::{Dma, MAX_SEGMENTS};
use crate::dma_ctx::Done;
use crate::io::NotServed;
use core::sync::atomic::Ordering;
use kernel::{
    block::mq::{Command, Request},
    dma::DataDirection,
    prelude::*,
    sync::aref::ARef,
};

/// What [`Dma::submit`] did with a request.
pub(crate) enum Submitted {
    /// The engine has it; its last copy's completion ends it.
    Engine,
    /// It must wait for a stalled lease (blk-mq requeues it).
    Requeue,
    /// The CPU must copy it (`transfermode=0`'s path).
    Cpu(ARef<Request<KramDisk>>),
}

impl Dma {
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
            Ok(rq.for_each_segment(|seg| {
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
            })?)
        });
        match outcome {
            Ok(()) => {}
            Err(e) if !submitted => {
                ctx.state.lock().maps = maps;
                self.inflight.fetch_sub(1, Ordering::AcqRel);
                self.recycle(ctx);
                if e == NotServed::Later {
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
}
