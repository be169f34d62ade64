// SPDX-License-Identifier: GPL-2.0
//! unimem NUMA: memory lent by other nodes becomes a CPU-less NUMA node (seed 000 section 4).
//!
//! `echo add 1 > /proc/unimem_numa` asks node 1's kram-daemon for one memory block (128 MiB)
//! of its partition, aligned so that it can be hot-added, confirms the offer and hot-adds the
//! range to the remote NUMA node (the first possible node without memory or CPUs, or
//! `node=`), onlined to ZONE_MOVABLE. The kernel's NUMA code does the rest: `numactl
//! --membind`, libnuma, page migration and weighted interleave see an ordinary node at the
//! SLIT / device-tree distance. `remove 1` migrates the node's pages back to local memory,
//! offlines and removes the range and sends FREE to the lender; unloading does it for every
//! range. Reading the file shows the topology and the ranges.
//!
//! The crate root holds the module and its parameters; the state and its jobs are in
//! `state.rs` (ranges, leases, memory type), `add.rs`, `remove.rs`, `lease.rs` (renewal,
//! lenders' messages, rescue), `params.rs` (`node=`, `adistance=`) and `procfs.rs`.

use core::sync::atomic::Ordering;
use kernel::{
    mm::{memory_hotplug, memory_tiers},
    numa,
    prelude::*,
    proc_fs,
    sync::Arc,
};

mod add;
mod lease;
mod params;
#[path = "../common/privilege.rs"]
mod privilege;
mod procfs;
mod remove;
mod state;

// The shared layer (kernel/README.md): the wire formats, both seams, the fabric client, the
// KRAM lease protocol and its ticker; one borrowed range per lender.
#[path = "../common/borrower.rs"]
mod common;
use common::*;
#[path = "../common/kram_borrow.rs"]
mod kram_borrow;

use fabric_client::{Gas, RevokeHook};
use kram_client::set_handler;
use lease_ticker::LeaseTicker;
use mailbox::service;
use state::Numa;
use wire::kram::CHUNK_SIZE;

module! {
    type: NumaModule,
    name: "unimem_numa",
    authors: ["unimem developers"],
    description: "unimem NUMA: memory lent by other nodes as a CPU-less NUMA node (/proc/unimem_numa)",
    license: "GPL v2",
    params: {
        node: i32 {
            default: -1,
            description: "NUMA node to add remote memory to: a possible node without CPUs; -1 = the first possible node with neither memory nor CPUs",
        },
        adistance: i32 {
            default: 0,
            description: "Abstract distance of the remote node's memory type (memory tiers; DRAM is 576, a tier spans 128): 0 = DRAM's times the SLIT distance ratio, so the node is a lower tier that node 0 demotes cold pages to; -1 = no memory type (the kernel treats the node as DRAM)",
        },
        offer_timeout_ms: u32 {
            default: 5000,
            description: "How long `add` waits for the lender's kram-daemon to offer memory (100-60000 ms)",
        },
    },
}

struct NumaModule {
    revoke: Option<RevokeHook<Numa>>,
    numa: Arc<Numa>,
    proc: Option<proc_fs::Entry<procfs::NumaProc>>,
    ticker: Arc<LeaseTicker<Numa>>,
}

impl kernel::Module for NumaModule {
    fn init(module: &'static ThisModule) -> Result<Self> {
        let nid = params::target_node()?;
        let offer_timeout_ms = *module_parameters::offer_timeout_ms.value_ref();
        if !(100..=60000).contains(&offer_timeout_ms) {
            pr_err!(
                "offer_timeout_ms={} is out of range (100-60000)\n",
                offer_timeout_ms
            );
            return Err(EINVAL);
        }
        let block_size = memory_hotplug::block_size();
        if block_size < CHUNK_SIZE || !block_size.is_power_of_two() {
            pr_err!(
                "memory block size {:#x} is not a power-of-two number of 1 MiB chunks\n",
                block_size
            );
            return Err(EINVAL);
        }
        let adistance = params::tier_adistance(nid)?;
        let gas = Gas::attach()?;
        let numa = Numa::new(
            module,
            gas.clone(),
            nid,
            block_size,
            offer_timeout_ms,
            adistance,
        )?;
        let ticker = LeaseTicker::new(numa.clone())?;
        let proc = proc_fs::Entry::new(c"unimem_numa", 0o600, numa.clone()).inspect_err(|_| {
            pr_err!("cannot create /proc/unimem_numa (another unimem_numa?)\n");
        })?;
        set_handler(service::NUMA_DRIVER, Some(&numa)).inspect_err(|e| {
            pr_err!("cannot take the NUMA_DRIVER service: {:?}\n", e);
        })?;
        let revoke = gas.on_revoke(numa.clone()).inspect_err(|_| {
            let _ = set_handler::<Numa>(service::NUMA_DRIVER, None);
        })?;
        LeaseTicker::start(&ticker);
        pr_info!(
            "node {}: remote memory goes to NUMA node {} (distance {}, memory type adistance {}, DRAM {}, -1 none); memory block {} MiB; write `add <lender>` to /proc/unimem_numa\n",
            numa.info.node_id,
            nid,
            numa::distance(0, nid).unwrap_or(0),
            adistance.unwrap_or(-1),
            memory_tiers::ADISTANCE_DRAM,
            block_size >> 20
        );
        Ok(Self {
            revoke: Some(revoke),
            numa,
            proc: Some(proc),
            ticker,
        })
    }
}

impl Drop for NumaModule {
    fn drop(&mut self) {
        // No new commands (waits for a running one, which may still need offers), then no
        // more offers (waits for a running callback): the list of ranges is final.
        drop(self.proc.take());
        // A revocation removes ranges too: not both at once.
        drop(self.revoke.take());
        let _ = set_handler::<Numa>(service::NUMA_DRIVER, None);
        if self.numa.remove_all().is_err() {
            let regions = self.numa.regions.lock();
            for r in regions.iter() {
                pr_crit!(
                    "NUMA node {}: {} MiB lent by node {} at {:#x} could not be offlined and stays online and lent; do not unbind the fabric device\n",
                    self.numa.nid, r.chunks, r.lender, r.phys
                );
            }
        }
        // Renewals go on while ranges are removed (migration can take long); now stop them.
        // A range that stays online is then reclaimed by its lender after the lease time.
        self.numa.stopping.store(true, Ordering::Release);
        LeaseTicker::stop(&self.ticker);
        // A rescue that gave back the last range may still be returning.
        self.numa.rescue.flush();
    }
}
