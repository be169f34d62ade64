// SPDX-License-Identifier: GPL-2.0
//! Taking ranges off the remote node: `remove <lender>`, `remove all` (also at unload) and the
//! fabric device's revocation. Each range's pages migrate back to local memory, then it is
//! offlined, wiped and given back to its lender.

use crate::{
    fabric_client::OnRevoke,
    state::{Numa, Region},
};
use kernel::{bindings, mm::memory_hotplug, numa, prelude::*};

impl Numa {
    /// `remove <lender>`: migrate back, offline, remove, FREE.
    pub(crate) fn remove(&self, lender: u32) -> Result {
        let mut regions = self.regions.lock();
        let Some(idx) = regions.iter().position(|r| r.lender == lender) else {
            pr_err!(
                "remove {}: node {} lends no memory to NUMA node {}\n",
                lender,
                lender,
                self.nid
            );
            return Err(ENOENT);
        };
        self.remove_region(regions[idx].clone())?;
        regions.remove(idx)?;
        self.untier(&regions);
        Ok(())
    }

    pub(crate) fn remove_region(&self, r: Region) -> Result {
        let node = numa::pages(self.nid);
        let used = node
            .managed
            .saturating_sub(node.free)
            .min((r.size() / kernel::page::PAGE_SIZE as u64) as usize);
        let room: usize = numa::possible_nodes()
            .filter(|&n| n != self.nid)
            .map(|n| numa::pages(n).free_above_high)
            .sum();
        if used > room {
            pr_err!(
                "remove {}: {} pages in use on NUMA node {} but only {} free on other nodes: free memory, then retry; the range stays online\n",
                r.lender, used, self.nid, room
            );
            return Err(ENOMEM);
        }
        // SAFETY: `add` added exactly this range; it is removed once (the region leaves the list).
        if let Err(e) = unsafe { memory_hotplug::offline_and_remove(r.phys, r.size()) } {
            // The kernel retries pages it cannot migrate until a signal comes: name that case,
            // whose pages the kernel dumped ("migrating pfn ... failed"), apart from the others.
            let why = if e == EINTR {
                "interrupted by a signal while pages that cannot be migrated (the kernel log dumps them) kept it busy"
            } else {
                "pages could not be migrated off"
            };
            pr_err!(
                "remove {}: offlining {:#x}+{} MiB failed ({:?}): {}; the range stays online\n",
                r.lender,
                r.phys,
                r.chunks,
                e,
                why
            );
            return Err(e);
        }
        let wiped = self.wipe(&r);
        let _ = self
            .gas
            .reserve(r.phys - self.info.gas_phys, r.size(), false);
        // An unwiped range goes back as such (FREE_UNWIPED): its lender wipes it before the
        // next borrower could read this node's data.
        if let Some(b) = self.borrow(r.lender) {
            b.give_back(wiped);
        }
        // SAFETY: taken by `add` for this range, which is gone now.
        unsafe { bindings::module_put(self.module.as_ptr()) };
        pr_info!(
            "NUMA node {}: {} MiB offline and returned to node {} (its pages migrated)\n",
            self.nid,
            r.chunks,
            r.lender
        );
        Ok(())
    }

    /// Zeroes a range that was offlined, so that the lender's next borrower cannot read what
    /// this node's programs left in it; false if it could not (the lease lapsed, or the fabric
    /// device is gone), and then it must not be given back.
    fn wipe(&self, r: &Region) -> bool {
        if !r.clock.usable(self.epoch.now()) {
            return false;
        }
        let offset = r.phys - self.info.gas_phys;
        self.gas
            .wipe_long(offset, r.size())
            .inspect_err(|e| pr_err!("wiping {:#x}+{} MiB failed: {:?}\n", r.phys, r.chunks, e))
            .is_ok()
    }

    /// Removes every range it can; the ones that fail stay in the list.
    pub(crate) fn remove_all(&self) -> Result {
        let mut regions = self.regions.lock();
        let mut result = Ok(());
        for i in (0..regions.len()).rev() {
            match self.remove_region(regions[i].clone()) {
                Ok(()) => drop(regions.remove(i)?),
                Err(e) => result = Err(e),
            }
        }
        self.untier(&regions);
        result
    }
}

impl OnRevoke for Numa {
    /// The fabric device goes: remote memory cannot stay (its lease cannot be renewed without
    /// the mailbox), so every range is migrated back and removed while the window still works.
    fn revoke(&self) {
        let _ = self.remove_all();
        for r in self.regions.lock().iter() {
            pr_crit!(
                "fabric device going: {} MiB lent by node {} at {:#x} could not be offlined and stays online; its lease will lapse and the lender reclaim it\n",
                r.chunks, r.lender, r.phys
            );
        }
        self.gas.revoke();
        pr_warn!(
            "fabric device gone: no remote memory can be added until unimem_numa is reloaded\n"
        );
    }
}
