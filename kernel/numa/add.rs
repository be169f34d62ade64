// SPDX-License-Identifier: GPL-2.0
//! `add <lender> [<MiB>]`: lease a memory-block aligned range of the lender's partition
//! (REQUEST, OFFER, CONFIRM, ACK), reserve it against user mappings and hot-add it to the
//! remote node.

use crate::{
    kram_borrow::{Borrow, Failure},
    kram_client::LeaseClock,
    state::{Numa, Region},
    wire::kram::{CHUNK_SIZE, MAX_REQUEST_CHUNKS_V2},
};
use kernel::{
    bindings,
    mm::memory_hotplug::{self, OnlineType},
    prelude::*,
    sync::Arc,
};

impl Numa {
    /// Physical address of a lender's chunks, checked to lie in its partition.
    fn chunk_phys(&self, lender: u32, first_chunk: u32, chunks: u32) -> Result<u64> {
        let (offset, _) = self
            .gas
            .lent_range(lender, first_chunk, chunks)
            .ok_or(EINVAL)?;
        Ok(self.info.gas_phys + offset)
    }

    /// `add <lender> [<MiB>]`: lease, confirm, hot-add.
    pub(crate) fn add(&self, lender: u32, mib: Option<u32>) -> Result {
        let block_mib = (self.block_size / CHUNK_SIZE) as u32;
        let mib = mib.unwrap_or(block_mib);
        if lender == self.info.node_id || lender >= self.info.node_count {
            pr_err!(
                "add {}: not another node of this cluster (nodes 0-{}, this is {})\n",
                lender,
                self.info.node_count.saturating_sub(1),
                self.info.node_id
            );
            return Err(EINVAL);
        }
        if mib == 0 || !mib.is_multiple_of(block_mib) || mib > MAX_REQUEST_CHUNKS_V2 {
            pr_err!("add {} {}: the size must be a multiple of the {} MiB memory block, at most {} MiB\n", lender, mib, block_mib, MAX_REQUEST_CHUNKS_V2);
            return Err(EINVAL);
        }
        if self.gas.is_revoked() {
            pr_err!("add {}: the fabric device is gone\n", lender);
            return Err(ENODEV);
        }
        let mut regions = self.regions.lock();
        if let Some(r) = regions.iter().find(|r| r.lender == lender) {
            pr_err!("add {}: node {} already lends {} MiB here (one range per lender; remove it first)\n", lender, lender, r.chunks);
            return Err(EEXIST);
        }
        let borrow = self.borrow(lender).ok_or(EINVAL)?;
        let (first, clock) = self.lease(borrow, lender, mib)?;
        // Gives back a lease this node never used.
        let give_back = || {
            borrow.give_back(true);
        };
        let phys = match self.chunk_phys(lender, first, mib) {
            Ok(p) if p.is_multiple_of(self.block_size) => p,
            _ => {
                pr_err!("add {}: offered chunks {}+{} are not a memory-block aligned range of its partition\n", lender, first, mib);
                give_back();
                return Err(EINVAL);
            }
        };
        let region = Region {
            lender,
            first_chunk: first,
            chunks: mib,
            phys,
            clock,
        };
        regions
            .reserve(1, GFP_KERNEL)
            .inspect_err(|_| give_back())?;
        // From now on the range is on its way to being this node's RAM: no user mapping of it
        // through /dev/eusrvmem may exist or be made.
        let offset = phys - self.info.gas_phys;
        self.gas
            .reserve(offset, region.size(), true)
            .inspect_err(|_| give_back())?;
        let unreserve = || {
            let _ = self.gas.reserve(offset, region.size(), false);
        };
        if let Err(e) = self.tier(&regions) {
            pr_err!(
                "add {}: cannot give NUMA node {} its memory type: {:?}; memory returned\n",
                lender,
                self.nid,
                e
            );
            unreserve();
            give_back();
            return Err(e);
        }
        // SAFETY: the range is memory-block aligned (checked above) memory of the fabric window,
        // which eusrvmem maps without claiming; the lease makes it ours until we send FREE, which
        // happens only after `offline_and_remove` (or if this add fails).
        let added = unsafe {
            memory_hotplug::add_driver_managed(
                self.nid,
                phys,
                region.size(),
                c"System RAM (unimem)",
                OnlineType::Movable,
            )
        };
        if let Err(e) = added {
            pr_err!(
                "add {}: hot-adding {:#x}+{} MiB to node {} failed: {:?}; memory returned\n",
                lender,
                phys,
                mib,
                self.nid,
                e
            );
            unreserve();
            give_back();
            self.untier(&regions);
            return Err(e);
        }
        regions.push(region, GFP_KERNEL)?;
        // SAFETY: `module` is this module, alive while its code runs; the reference is dropped
        // when the range is removed (`remove_region`).
        unsafe { bindings::__module_get(self.module.as_ptr()) };
        pr_info!(
            "NUMA node {}: {} MiB lent by node {} (chunks {}+{}, phys {:#x}) online\n",
            self.nid,
            mib,
            lender,
            first,
            mib,
            phys
        );
        Ok(())
    }

    /// REQUEST, wait for the OFFER, CONFIRM, wait for the ACK; returns the first chunk and the
    /// lease. Says in the log why it failed.
    fn lease(&self, borrow: &Borrow, lender: u32, chunks: u32) -> Result<(u32, Arc<LeaseClock>)> {
        let align = (self.block_size / CHUNK_SIZE).trailing_zeros() as u8;
        borrow.lease_detailed(lender, chunks, align, self.offer_timeout_ms).map_err(|f| {
            let what = match f {
                Failure::Request(e) => {
                    pr_err!("add {}: cannot send the request: {:?}\n", lender, e);
                    None
                }
                Failure::Offer(e) if e == ETIMEDOUT => Some("offer"),
                Failure::Ack(e) if e == ETIMEDOUT => Some("acknowledgement"),
                Failure::Revoked { first } => {
                    pr_err!("add {}: node {} revoked chunks {}+{} instead of acknowledging them\n", lender, lender, first, chunks);
                    None
                }
                // A signal, or no memory; a CONFIRM not sent is logged where it failed.
                _ => None,
            };
            if let Some(what) = what {
                pr_err!(
                    "add {}: no {} for {} aligned MiB within {} ms: is kram-daemon running on node {}, with that much contiguous free memory?\n",
                    lender, what, chunks, self.offer_timeout_ms, lender
                );
            }
            f.error()
        })
    }
}
