// SPDX-License-Identifier: GPL-2.0
//! `/sys/kernel/unimem_mailbox/<name>`: the node's totals, one value per file (the per-interface
//! and per-service table stays in debugfs, `stats.rs`). The attributes are a C
//! `attribute_group` in `static`s (`kernel/common/sysfs_group.rs`), as `unimem_gsas`'s.

use crate::{state::State, sysfs_group::kernel_dir_counters};
use core::sync::atomic::{AtomicU64, Ordering};
use kernel::prelude::*;

const NAMES: [&CStr; 25] = [
    c"node",
    c"nodes",
    c"interfaces_allocated",
    c"packets_sent",
    c"packets_received",
    c"packets_rejected",
    c"packets_dropped",
    c"malformed",
    c"resynced",
    c"messages_sent",
    c"messages_received",
    c"messages_rejected",
    c"messages_dropped",
    c"poll_us",
    c"busy_polls",
    c"busy_poll_packets",
    c"busy_poll_window_ns",
    c"doorbells_skipped",
    c"doorbells_throttled",
    c"doorbell_rate",
    c"submissions",
    c"kicks",
    c"answer_sleeps",
    c"allocs_quarantined",
    c"trees_exhausted",
];

impl State {
    /// The value of counter `name` (sums over interfaces or kernel-message services).
    fn value(&self, name: &[u8]) -> Option<u64> {
        let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let ifaces = |f: fn(&crate::iface::Iface) -> &AtomicU64| {
            self.owners.ifaces.iter().map(|i| load(f(i))).sum::<u64>()
        };
        let c = &self.services.counters;
        let services = |a: &[AtomicU64]| a.iter().skip(1).map(load).sum::<u64>();
        Some(match name {
            b"node" => u64::from(self.window.node),
            b"nodes" => u64::from(self.window.nodes),
            b"interfaces_allocated" => self
                .owners
                .ifaces
                .iter()
                .filter(|i| i.owner.lock().is_some())
                .count() as u64,
            b"packets_sent" => ifaces(|i| &i.sent),
            b"packets_received" => ifaces(|i| &i.received),
            b"packets_rejected" => ifaces(|i| &i.rejected),
            b"packets_dropped" => ifaces(|i| &i.dropped),
            b"malformed" => load(&self.counters.malformed),
            b"resynced" => load(&self.counters.resynced),
            b"messages_sent" => services(&c.sent),
            b"messages_received" => services(&c.received),
            b"messages_rejected" => services(&c.rejected),
            b"messages_dropped" => services(&c.dropped),
            b"poll_us" => self.served.poll_ns / 1000,
            b"busy_polls" => load(&self.counters.busy_polls),
            b"busy_poll_packets" => load(&self.counters.busy_poll_packets),
            b"busy_poll_window_ns" => load(&self.served.poll_window),
            b"doorbells_skipped" => load(&self.counters.doorbells_skipped),
            b"doorbells_throttled" => load(&self.counters.doorbells_throttled),
            b"doorbell_rate" => self.sender.doorbell_rate(),
            b"submissions" => load(&self.counters.submitted),
            b"kicks" => load(&self.counters.kicks),
            b"answer_sleeps" => load(&self.counters.answer_sleeps),
            b"allocs_quarantined" => load(&self.counters.quarantined),
            b"trees_exhausted" => load(&self.counters.trees_exhausted),
            _ => return None,
        })
    }
}

kernel_dir_counters! {
    pub(crate) fn create(State) = (c"unimem_mailbox", NAMES, State::value)
}
