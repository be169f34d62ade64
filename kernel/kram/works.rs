// SPDX-License-Identifier: GPL-2.0
//! The driver's two work items, queued from lender messages (which come in a context that
//! may not sleep long): adding the disk of an instance whose memory is all in, and copying a
//! mirror into its acknowledged replacement parts.

use crate::kram::Kram;
use core::sync::atomic::Ordering;
use kernel::{
    prelude::*,
    sync::Arc,
    workqueue::{impl_has_work, WorkItem},
};

impl_has_work! {
    impl HasWork<Self, 2> for Kram { self.attach }
    impl HasWork<Self, 3> for Kram { self.resync }
}

impl WorkItem<2> for Kram {
    type Pointer = Arc<Kram>;

    fn run(this: Arc<Kram>) {
        this.attach_disks();
    }
}

impl WorkItem<3> for Kram {
    type Pointer = Arc<Kram>;

    fn run(this: Arc<Kram>) {
        this.resync_all();
    }
}

impl Kram {
    /// Waits for queued disk work (the lease ticker is stopped first: nothing queues it again).
    pub(crate) fn flush_works(&self) {
        self.attach.flush();
        self.resync.flush();
    }

    /// Copies the intact copy into every acknowledged replacement part.
    pub(crate) fn resync_all(&self) {
        for inst in self.instances.iter() {
            let mut todo = KVec::<(usize, u64, u32)>::new();
            let shared = inst.state.lock().shared.clone();
            {
                let l = shared.layout.lock();
                for (c, copy) in l.copies.iter().enumerate() {
                    for p in copy.iter().filter(|p| p.syncing && p.lease.clock.acked()) {
                        let _ = todo.push((c, p.offset, p.lease.node), GFP_ATOMIC);
                    }
                }
            }
            for &(copy, offset, node) in todo.iter() {
                if crate::io::resync(&shared, &self.fabric, &self.epoch, copy, offset) {
                    pr_info!(
                        "kram{}: mirror copy {} in sync again (part at {} MiB on node {})\n",
                        inst.id,
                        copy,
                        offset >> 20,
                        node
                    );
                } else {
                    pr_warn!(
                        "kram{}: could not copy the mirror to node {}; trying again later\n",
                        inst.id,
                        node
                    );
                }
            }
        }
    }

    /// Adds the disk of every instance whose copies are complete and acknowledged.
    pub(crate) fn attach_disks(&self) {
        for inst in self.instances.iter() {
            let mut state = inst.state.lock();
            if state.disk.is_some()
                || !state.complete(inst.size_mib)
                || self.stopping.load(Ordering::Acquire)
            {
                continue;
            }
            match self.new_disk(inst, &state) {
                Ok(disk) => {
                    let l = state.shared.layout.lock();
                    pr_info!(
                        "kram{}: /dev/kram{} ready, {} MiB in {} cop{} over {} part(s)\n",
                        inst.id,
                        inst.id,
                        inst.size_mib,
                        l.ncopies,
                        if l.ncopies > 1 { "ies" } else { "y" },
                        l.parts().count()
                    );
                    drop(l);
                    state.disk = Some(disk);
                }
                Err(e) => {
                    pr_err!(
                        "kram{}: cannot create the disk: {:?}; returning the memory\n",
                        inst.id,
                        e
                    );
                    self.give_back_all(inst, &state);
                }
            }
        }
    }
}
