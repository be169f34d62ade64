// SPDX-License-Identifier: GPL-2.0
//! `/sys/kernel/unimem_mailbox/<name>`: the node's totals, one value per file (the per-interface
//! and per-service table stays in debugfs, `stats.rs`). The attributes are a C
//! `attribute_group` in `static`s (`kernel/include/sysfs_group.rs`), as `unimem_gsas`'s.

use crate::{
    state::State,
    sysfs_group::{show_counter, static_attribute_group, KernelDir},
};
use core::sync::atomic::{AtomicPtr, AtomicU64, Ordering};
use kernel::{bindings, ffi::c_char, prelude::*, sync::Arc};

const NAMES: [&CStr; 13] = [
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
];

impl State {
    /// The value of counter `name` (sums over interfaces or kernel-message services).
    fn value(&self, name: &[u8]) -> Option<u64> {
        let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let ifaces = |f: fn(&crate::iface::Iface) -> &AtomicU64| {
            self.ifaces.iter().map(|i| load(f(i))).sum::<u64>()
        };
        let c = &self.services.counters;
        let services = |a: &[AtomicU64]| a.iter().skip(1).map(load).sum::<u64>();
        Some(match name {
            b"node" => u64::from(self.node),
            b"nodes" => u64::from(self.nodes),
            b"interfaces_allocated" => self
                .ifaces
                .iter()
                .filter(|i| i.owner.lock().is_some())
                .count() as u64,
            b"packets_sent" => ifaces(|i| &i.sent),
            b"packets_received" => ifaces(|i| &i.received),
            b"packets_rejected" => ifaces(|i| &i.rejected),
            b"packets_dropped" => ifaces(|i| &i.dropped),
            b"malformed" => load(&self.malformed),
            b"resynced" => load(&self.resynced),
            b"messages_sent" => services(&c.sent),
            b"messages_received" => services(&c.received),
            b"messages_rejected" => services(&c.rejected),
            b"messages_dropped" => services(&c.dropped),
            _ => return None,
        })
    }
}

/// The mailbox the files show, set while they exist.
static SHOWN: AtomicPtr<State> = AtomicPtr::new(core::ptr::null_mut());

/// # Safety
///
/// Called by sysfs with one of our attributes and a PAGE_SIZE buffer.
unsafe extern "C" fn show(
    _kobj: *mut bindings::kobject,
    attr: *mut bindings::kobj_attribute,
    buf: *mut c_char,
) -> isize {
    // SAFETY: as this function's contract; `SHOWN` is set by the `KernelDir` of `GROUP`.
    unsafe { show_counter(&SHOWN, attr, buf, |s: &State, name| s.value(name)) }
}

static_attribute_group! {
    /// One file per name, read by `show`.
    static GROUP: bindings::kobj_attribute = (NAMES, show);
}

/// `/sys/kernel/unimem_mailbox/` while alive.
pub(crate) fn create(state: Arc<State>) -> Result<KernelDir<State>> {
    KernelDir::new(c"unimem_mailbox", &GROUP, &SHOWN, state)
}
