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

use core::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use kernel::{
    bindings,
    mm::{
        memory_hotplug::{self, OnlineType},
        memory_tiers::{self, NodeMemoryType},
    },
    new_mutex, numa,
    prelude::*,
    proc_fs,
    sync::{Arc, ArcBorrow, Mutex},
    workqueue::{self, impl_has_work, new_work, Work, WorkItem},
};

#[path = "../include/privilege.rs"]
#[allow(dead_code)]
mod privilege;
mod procfs;

#[path = "../include/unimem_fabric.rs"]
#[allow(dead_code, unreachable_pub)]
mod fabric_api;
#[path = "../include/fabric_client.rs"]
#[allow(dead_code)]
mod fabric_client;
#[path = "../include/unimem_mailbox.rs"]
#[allow(dead_code, unreachable_pub)]
mod kmsg_api;
#[path = "../include/kram_borrow.rs"]
// Shared with unimem_gsas, which leases with `lease` and takes messages with `message`.
#[allow(dead_code)]
mod kram_borrow;
#[path = "../include/kram_client.rs"]
// Shared with unimem_kram, which uses all of it.
#[allow(dead_code)]
mod kram_client;
#[path = "../include/lease_ticker.rs"]
mod lease_ticker;
#[path = "../include/wire.rs"]
#[allow(dead_code, unreachable_pub)]
mod wire;
// The wire files name each other `crate::gas`, `crate::packet`, `crate::mailbox`.
#[allow(unused_imports)]
use wire::{gas, mailbox, packet};

use fabric_client::{Gas, OnRevoke, RevokeHook};
use kram_borrow::{Borrow, Delivery, Failure, Tally};
use kram_client::{set_handler, Epoch, LeaseClock, LenderSink, LogLimit};
use lease_ticker::{LeaseTicker, Tick};
use mailbox::service;
use wire::kram::{CHUNK_SIZE, MAX_REQUEST_CHUNKS_V2, NUMA_INSTANCE};

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

/// One lent range, online on the remote node.
#[derive(Clone)]
struct Region {
    lender: u32,
    first_chunk: u32,
    chunks: u32,
    phys: u64,
    clock: Arc<LeaseClock>,
}

impl Region {
    fn size(&self) -> u64 {
        u64::from(self.chunks) * CHUNK_SIZE
    }
}

#[pin_data]
struct Numa {
    info: fabric_api::FabricInfo,
    gas: Arc<Gas>,
    /// Held once per online range: remote memory must be removed before the module can go,
    /// since nothing renews its lease once the module is gone.
    module: &'static ThisModule,
    /// The node remote memory goes to.
    nid: i32,
    block_size: u64,
    offer_timeout_ms: u32,
    /// The abstract distance of the node's memory type; `None`: the node gets none (DRAM).
    adistance: Option<i32>,
    /// The node's memory type while a range is online (taken under `regions`' lock, after it).
    #[pin]
    memtype: Mutex<Option<NodeMemoryType>>,
    /// Also serializes `add` and `remove`: held across the whole hotplug operation.
    #[pin]
    regions: Mutex<KVec<Region>>,
    /// The lease with each node, indexed by node id (one range per lender); apart from
    /// `regions`, whose lock `add` holds while it waits for the lender's messages.
    borrows: KVec<Pin<KBox<Borrow>>>,
    epoch: Epoch,
    stopping: AtomicBool,
    /// When a tick first found a range at risk (`at_risk`), 0 if the last one found none.
    at_risk_since: AtomicI64,
    /// The lenders' messages, by what they did (`/proc/unimem_numa`).
    tally: Tally,
    noisy: LogLimit,
    /// Takes ranges whose lease is not being renewed offline (`Numa::rescue`).
    #[pin]
    rescue: Work<Numa, 2>,
}

impl_has_work! {
    impl HasWork<Self, 2> for Numa { self.rescue }
}

/// A range with less validity than this left (no renewal acknowledged for half a borrower's
/// lease, 8 s) goes offline before its lease lapses: once it lapses, the lender may wipe it and
/// lend it to someone else while this node's kernel still uses it.
const RESCUE_NS: i64 = wire::kram::BORROWER_LEASE_MS as i64 * 1_000_000 / 2;

/// The lease ticker's period, in the epoch's nanoseconds.
const PERIOD_NS: i64 = wire::kram::RENEW_PERIOD_MS as i64 * 1_000_000;

impl Tick for Numa {
    fn tick(this: &Arc<Numa>) {
        if this.stopping.load(Ordering::Acquire) {
            return;
        }
        this.renew();
        let now = this.epoch.now();
        if !this.at_risk() {
            this.at_risk_since.store(0, Ordering::Relaxed);
            return;
        }
        // At two ticks in a row: after a freeze of this node every lease looks lapsed until the
        // renewal just sent is acknowledged (its lender held it: the fabric showed this node).
        let since =
            match this
                .at_risk_since
                .compare_exchange(0, now, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => now,
                Err(since) => since,
            };
        if now - since >= PERIOD_NS * 9 / 10 {
            // Offlining migrates pages and may take seconds: not in the renewing work.
            let _ = workqueue::system_percpu().enqueue::<Arc<Numa>, 2>(this.clone());
        }
    }
}

impl WorkItem<2> for Numa {
    type Pointer = Arc<Numa>;

    fn run(this: Arc<Numa>) {
        this.rescue();
    }
}

// SAFETY: `info.gas_virt` is the fabric's mapping, written only through `gas` (to wipe a range
// nobody uses any more); everything mutable is behind a lock or an atomic.
unsafe impl Send for Numa {}
// SAFETY: see `Send`.
unsafe impl Sync for Numa {}

impl Numa {
    /// The lease with `lender`, if it is a node of this fabric.
    fn borrow(&self, lender: u32) -> Option<&Borrow> {
        self.borrows.get(lender as usize).map(|b| &**b)
    }

    /// RENEW every lease that is not revoked.
    fn renew(&self) {
        if self.gas.is_revoked() {
            return;
        }
        for b in self.borrows.iter() {
            b.renew();
        }
    }

    /// Whether a range's lease is not being renewed (`RESCUE_NS`). Skipped while `add` or
    /// `remove` holds the ranges: the next tick looks again.
    fn at_risk(&self) -> bool {
        let now = self.epoch.now();
        self.regions.try_lock().is_some_and(|regions| {
            regions
                .iter()
                .any(|r| r.clock.is_revoked() || r.clock.left(now) < RESCUE_NS)
        })
    }

    /// Takes every range whose lease is not being renewed offline, migrating its pages, before
    /// the lease lapses. A range that cannot go offline is reported at a limited rate; it stays
    /// online, and once its lease lapses its lender may lend it again.
    fn rescue(&self) {
        let mut regions = self.regions.lock();
        for i in (0..regions.len()).rev() {
            let r = regions[i].clone();
            let now = self.epoch.now();
            if !r.clock.is_revoked() && r.clock.left(now) >= RESCUE_NS {
                continue;
            }
            // Tried again every tick while it fails: at a limited rate.
            if self.noisy.allow(now) {
                pr_warn!(
                "node {} has not acknowledged renewals of chunks {}+{} ({} MiB at {:#x}, {} ms of lease left): taking them offline before the lease lapses\n",
                r.lender, r.first_chunk, r.chunks, r.chunks, r.phys, r.clock.left(now).max(0) / 1_000_000
            );
            }
            match self.remove_region(r.clone()) {
                Ok(()) => {
                    let _ = regions.remove(i);
                }
                Err(e) => {
                    if self.noisy.allow(self.epoch.now()) {
                        pr_crit!(
                            "chunks {}+{} of node {} could not go offline ({:?}) and stay online on NUMA node {} while their lease lapses: node {} may lend them again; free memory and write `remove {}` to /proc/unimem_numa (rate-limited)\n",
                            r.first_chunk, r.chunks, r.lender, e, self.nid, r.lender, r.lender
                        );
                    }
                }
            }
        }
        self.untier(&regions);
    }

    /// Physical address of a lender's chunks, checked to lie in its partition.
    fn chunk_phys(&self, lender: u32, first_chunk: u32, chunks: u32) -> Result<u64> {
        let (offset, _) = self
            .gas
            .lent_range(lender, first_chunk, chunks)
            .ok_or(EINVAL)?;
        Ok(self.info.gas_phys + offset)
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

    /// `add <lender> [<MiB>]`: lease, confirm, hot-add.
    fn add(&self, lender: u32, mib: Option<u32>) -> Result {
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

    /// A message from a lender's daemon: OFFER, ACK or REVOKE.
    fn message(&self, from: u32, word: u64) {
        let (delivery, lost) = match self.borrow(from) {
            Some(b) => b.deliver(from, word),
            // Not a node of this fabric: no lease of ours can be meant.
            None => (Delivery::Malformed, None),
        };
        self.tally.count(delivery);
        if delivery == Delivery::Malformed && self.noisy.allow(self.epoch.now()) {
            pr_warn!(
                "malformed message {:#018x} from node {} dropped\n",
                word,
                from
            );
        }
        if let Some((first, chunks)) = lost {
            pr_crit!(
                "node {} revoked chunks {}+{} (lease lapsed) while they are online on NUMA node {}: remove them now\n",
                from, first, chunks, self.nid
            );
        }
    }

    /// `remove <lender>`: migrate back, offline, remove, FREE.
    fn remove(&self, lender: u32) -> Result {
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

    /// Gives the node its memory type before its first range comes online (`regions` locked).
    fn tier(&self, regions: &KVec<Region>) -> Result {
        let Some(adistance) = self.adistance else {
            return Ok(());
        };
        let mut memtype = self.memtype.lock();
        if regions.is_empty() && memtype.is_none() {
            // SAFETY: dropped only by `untier`, when no range of the node is online (`regions`
            // empty, under its lock); the node had no memory but ours (`target_node`).
            *memtype = Some(unsafe { NodeMemoryType::new(self.nid, adistance) }?);
        }
        Ok(())
    }

    /// Takes the node's memory type away once no range is online (`regions` locked).
    fn untier(&self, regions: &KVec<Region>) {
        if regions.is_empty() {
            drop(self.memtype.lock().take());
        }
    }

    fn remove_region(&self, r: Region) -> Result {
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

    /// Removes every range it can; the ones that fail stay in the list.
    fn remove_all(&self) -> Result {
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

impl LenderSink for Numa {
    fn message(this: ArcBorrow<'_, Self>, from: u32, word: u64) {
        this.message(from, word);
    }
}

/// The target node from `node=`, checked.
fn target_node() -> Result<i32> {
    let asked = *module_parameters::node.value_ref();
    if asked == -1 {
        let free = numa::possible_nodes().find(|&n| !numa::has_memory(n) && !numa::has_cpus(n));
        return free.ok_or_else(|| {
            pr_err!("node: no possible NUMA node without memory and CPUs to hold remote memory; give the VM one (QEMU: -numa node,nodeid=1) or set node=\n");
            ENODEV
        });
    }
    if !numa::is_possible(asked) {
        pr_err!(
            "node={} is not a possible NUMA node of this machine (firmware SRAT or device tree)\n",
            asked
        );
        return Err(EINVAL);
    }
    if numa::has_cpus(asked) {
        pr_err!(
            "node={} has CPUs: remote memory needs a CPU-less node\n",
            asked
        );
        return Err(EINVAL);
    }
    Ok(asked)
}

/// The abstract distance of the remote node's memory type (`adistance=`), or `None` for no type.
fn tier_adistance(nid: i32) -> Result<Option<i32>> {
    let dram = memory_tiers::ADISTANCE_DRAM;
    match *module_parameters::adistance.value_ref() {
        -1 => Ok(None),
        0 => {
            // Slower by the SLIT ratio (40 / 10 by default: four times DRAM's distance).
            let local = numa::distance(0, 0).filter(|&d| d > 0).unwrap_or(10);
            let remote = numa::distance(0, nid)
                .filter(|&d| d > local)
                .unwrap_or(local * 4);
            Ok(Some(dram.saturating_mul(remote) / local))
        }
        a if a > 0 => {
            if a < dram + memory_tiers::CHUNK_SIZE {
                pr_warn!(
                    "adistance={} is within DRAM's tier: nothing will be demoted to NUMA node {}\n",
                    a,
                    nid
                );
            }
            Ok(Some(a))
        }
        a => {
            pr_err!(
                "adistance={} is invalid (-1, 0 or a positive abstract distance)\n",
                a
            );
            Err(EINVAL)
        }
    }
}

struct NumaModule {
    revoke: Option<RevokeHook<Numa>>,
    numa: Arc<Numa>,
    proc: Option<proc_fs::Entry<procfs::NumaProc>>,
    ticker: Arc<LeaseTicker<Numa>>,
}

impl kernel::Module for NumaModule {
    fn init(module: &'static ThisModule) -> Result<Self> {
        let nid = target_node()?;
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
        let adistance = tier_adistance(nid)?;
        let gas = Gas::attach()?;
        let info = *gas.info();
        let gas_ref = gas.clone();
        // One clock for the leases and for reading them.
        let epoch = Epoch::new();
        let mut borrows = KVec::with_capacity(info.node_count as usize, GFP_KERNEL)?;
        for _ in 0..info.node_count {
            borrows.push(
                KBox::pin_init(Borrow::new(info.node_id, NUMA_INSTANCE, epoch), GFP_KERNEL)?,
                GFP_KERNEL,
            )?;
        }
        let numa = Arc::pin_init(
            pin_init!(Numa {
                info,
                gas: gas_ref,
                module,
                nid,
                block_size,
                offer_timeout_ms,
                adistance,
                memtype <- new_mutex!(None, "unimem_numa::memtype"),
                regions <- new_mutex!(KVec::new(), "unimem_numa::regions"),
                borrows,
                epoch,
                stopping: AtomicBool::new(false),
                at_risk_since: AtomicI64::new(0),
                tally: Tally::new(),
                noisy: LogLimit::new(),
                rescue <- new_work!("unimem_numa::rescue"),
            }),
            GFP_KERNEL,
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
            info.node_id,
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
