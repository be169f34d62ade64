// SPDX-License-Identifier: GPL-2.0
//! `/sys/kernel/debug/unimem_kram/stats`: the lending protocol's counters, the engine's, and
//! each instance's state with every lease in detail.

use crate::kram::Kram;
use core::sync::atomic::{AtomicU64, Ordering};

impl Kram {
    pub(crate) fn write_stats(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
        writeln!(
            f,
            "offers confirmed {}, declined {}, acks {}, revokes {}, malformed {}, stray {}",
            load(&self.confirmed),
            load(&self.declined),
            load(&self.acks),
            load(&self.revokes),
            load(&self.malformed),
            load(&self.stray)
        )?;
        if let Some(d) = &self.dma {
            writeln!(
                f,
                "dma channels {}: copies {}, by the CPU instead {}, failed requests {}",
                d.names(),
                load(&d.copies),
                load(&d.cpu_copies),
                load(&d.failed)
            )?;
        }
        let now = self.epoch.now();
        for inst in self.instances.iter() {
            let state = inst.state.lock();
            let l = state.shared.layout.lock();
            let lent: u64 = (0..l.ncopies).map(|c| l.covered(c)).min().unwrap_or(0) >> 20;
            let what = match (&state.disk, state.lost) {
                (Some(_), true) => "LOST (a part was revoked or lapsed)",
                (Some(_), false) if l.parts().any(|p| p.syncing) => "ready, mirroring again",
                (Some(_), false)
                    if (0..l.ncopies).any(|c| l.covered(c) < u64::from(inst.size_mib) << 20) =>
                {
                    "ready, degraded"
                }
                (Some(_), false) => "ready",
                (None, _) => "waiting for lenders",
            };
            writeln!(
                f,
                "kram{} {} MiB: {} MiB lent, {}, failovers {}",
                inst.id,
                inst.size_mib,
                lent,
                what,
                load(&state.shared.failovers)
            )?;
            for (c, copy) in l.copies.iter().enumerate().take(l.ncopies) {
                for p in copy.iter() {
                    let k = &p.lease;
                    let left = k.clock.left(now) / 1_000_000;
                    let lease = if k.clock.is_revoked() {
                        "revoked"
                    } else if self.fabric.lost(k.node) {
                        "lender lost"
                    } else if k.is_lost() {
                        "stale"
                    } else if !k.clock.acked() {
                        "not acknowledged yet"
                    } else if left <= 0 {
                        "lapsed"
                    } else if p.syncing {
                        "valid, syncing"
                    } else {
                        "valid"
                    };
                    let copy = if l.ncopies > 1 {
                        if c == 0 {
                            " copy A"
                        } else {
                            " copy B"
                        }
                    } else {
                        ""
                    };
                    writeln!(
                        f,
                        "  node {} chunks {}+{}{} at {} MiB: {} ({} ms left)",
                        k.node,
                        k.first_chunk,
                        k.chunks,
                        copy,
                        p.offset >> 20,
                        lease,
                        left.max(0)
                    )?;
                }
            }
        }
        Ok(())
    }
}
