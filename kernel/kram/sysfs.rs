// SPDX-License-Identifier: GPL-2.0
//! `/sys/kernel/unimem_kram/<name>`: the lending protocol's counters and the instances' state,
//! one value per file (leases in detail stay in debugfs). The I/O counters of each disk are the
//! block layer's own (`/sys/block/kramN/stat`). Files from `kernel/common/sysfs_group.rs`, as
//! `unimem_gsas`'s.

use crate::{sysfs_group::kernel_dir_counters, Kram};
use core::sync::atomic::{AtomicU64, Ordering};
use kernel::prelude::*;

const NAMES: [&CStr; 11] = [
    c"offers_confirmed",
    c"offers_declined",
    c"acks",
    c"revokes",
    c"malformed",
    c"stray",
    c"instances",
    c"instances_ready",
    c"instances_lost",
    c"lent_mib",
    c"failovers",
];

impl Kram {
    /// The value of counter `name`.
    fn value(&self, name: &[u8]) -> Option<u64> {
        let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
        // (ready, lost, lent MiB, failovers) over the instances.
        let sums = || {
            self.instances
                .iter()
                .fold((0, 0, 0, 0), |(r, l, m, f), inst| {
                    let state = inst.state.lock();
                    let layout = state.shared.layout.lock();
                    let lent = (0..layout.ncopies)
                        .map(|c| layout.covered(c))
                        .min()
                        .unwrap_or(0)
                        >> 20;
                    (
                        r + u64::from(state.disk.is_some() && !state.lost),
                        l + u64::from(state.lost),
                        m + lent,
                        f + load(&state.shared.failovers),
                    )
                })
        };
        Some(match name {
            b"offers_confirmed" => load(&self.confirmed),
            b"offers_declined" => load(&self.declined),
            b"acks" => load(&self.acks),
            b"revokes" => load(&self.revokes),
            b"malformed" => load(&self.malformed),
            b"stray" => load(&self.stray),
            b"instances" => self.instances.len() as u64,
            b"instances_ready" => sums().0,
            b"instances_lost" => sums().1,
            b"lent_mib" => sums().2,
            b"failovers" => sums().3,
            _ => return None,
        })
    }
}

kernel_dir_counters! {
    pub(crate) fn create(Kram) = (c"unimem_kram", NAMES, Kram::value)
}
