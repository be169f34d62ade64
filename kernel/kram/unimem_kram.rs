// SPDX-License-Identifier: GPL-2.0
//! unimem KRAM: swap devices whose storage is memory lent by other nodes (seed 000 2.5-2.6).
//!
//! `insmod unimem_kram.ko ninstances=2 size=32,64 transfermode=1`: the lease ticker fires every
//! `RENEW_PERIOD_MS`; while an instance lacks memory, a work item asks every other node's kram-daemon
//! for what is missing (REQUEST; the seed's 8-bit layout for up to 255 MiB from one lender,
//! protocol v2 for larger instances, which may be striped over several lenders). Fitting
//! OFFERs are CONFIRMed, the rest DECLINEd. Every lease is RENEWed each tick; a lender's ACK
//! keeps it usable for `BORROWER_LEASE_MS` after the RENEW it answers, a REVOKE or missing ACKs
//! make its I/O fail rather than touch memory that may be someone else's. Once every part is
//! acknowledged a work item adds `/dev/kram<N>`. On unload the disks go away and every lender
//! gets its memory back, wiped. The disks pin the module while open (kernel patch 0005), so
//! unloading under a mount or active swap is refused.

use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use kernel::{
    block::{
        bio,
        mq::{gen_disk::GenDisk, gen_disk::GenDiskBuilder, TagSet, TagSetFlags},
    },
    debugfs, new_mutex,
    prelude::*,
    sync::{Arc, ArcBorrow, Mutex},
    workqueue::{impl_has_work, new_work, Work, WorkItem},
};

mod disk;
mod dma;
mod lending;
mod params;
mod sysfs;
#[path = "../include/sysfs_group.rs"]
mod sysfs_group;

#[path = "../include/unimem_fabric.rs"]
#[allow(dead_code, unreachable_pub)]
mod fabric_api;
#[path = "../include/fabric_client.rs"]
#[allow(dead_code)]
mod fabric_client;
#[path = "../include/unimem_mailbox.rs"]
#[allow(dead_code, unreachable_pub)]
mod kmsg_api;
#[path = "../include/kram_client.rs"]
mod kram_client;
#[path = "../include/lease_ticker.rs"]
mod lease_ticker;
#[path = "../include/wire.rs"]
#[allow(dead_code, unreachable_pub)]
mod wire;
// The wire files name each other `crate::gas`, `crate::packet`, `crate::mailbox`.
#[allow(unused_imports)]
use wire::{gas, mailbox, packet};

use disk::{Backing, Fabric, KramBio, KramDisk, Shared, Transfer};
use fabric_client::{Gas, OnRevoke, RevokeHook};
use kram_client::{set_handler, Epoch, LenderSink, LogLimit};
use lease_ticker::{LeaseTicker, Tick};
use mailbox::service;
use wire::kram::MAX_INSTANCES;

module! {
    type: KramModule,
    name: "unimem_kram",
    authors: ["unimem developers"],
    description: "unimem KRAM: swap block devices /dev/kramN backed by memory lent by other nodes",
    license: "GPL v2",
    params: {
        ninstances: u32 {
            default: 1,
            description: "Number of swap devices to create (1-15)",
        },
        size: SizeList {
            default: SizeList::EMPTY,
            description: "Size in MiB of each device, comma separated, one per instance (1-65535 each; above 255 MiB protocol v2, possibly striped over several lenders)",
        },
        mirror: bool {
            default: false,
            description: "Keep every instance on two disjoint sets of lenders: reads fail over when a lender is lost, and the lost part is mirrored again onto another lender",
        },
        transfermode: u32 {
            default: 1,
            description: "How data is copied: 1 = by DMA_MEMCPY channels of a DMA engine (the fabric card's CDMA; emulated by unimem_eusrvmem in the virtual cluster, where the CPU is faster), 0 = by the CPU (a bio-based disk, as brd)",
        },
        stall_timeout: u32 {
            default: 60,
            description: "Seconds I/O waits for a lender that stopped acknowledging its lease without revoking it (its daemon or node restarting; it keeps the loan) before the I/O fails (1-3600)",
        },
    },
}

use params::SizeList;

/// An instance's block device; deleting it waits for the I/O that runs in it.
enum Disk {
    /// `transfermode=0`: bio-based.
    Bio { _disk: bio::Disk<KramBio> },
    /// `transfermode=1`: blk-mq.
    Queue { _disk: GenDisk<KramDisk> },
}

struct InstanceState {
    /// Where the instance's bytes are; shared with its disk.
    shared: Arc<Shared>,
    disk: Option<Disk>,
    /// A part of the disk (without a mirror) was revoked: its data is gone, its I/O fails.
    lost: bool,
}

impl InstanceState {
    /// Whether any lender lends this instance a part yet.
    fn uses_any(&self) -> bool {
        self.shared.layout.lock().parts().next().is_some()
    }
}

#[pin_data]
struct Instance {
    id: u32,
    size_mib: u32,
    #[pin]
    state: Mutex<InstanceState>,
}

#[pin_data]
struct Kram {
    info: fabric_api::FabricInfo,
    fabric: Fabric,
    /// The engine's channels, with `transfermode=1`.
    dma: Option<Arc<dma::Dma>>,
    mirror: bool,
    /// `stall_timeout`.
    max_stall_ns: i64,
    epoch: Epoch,
    instances: KVec<Pin<KBox<Instance>>>,
    /// Set at unload: no new requests, no new disks.
    stopping: AtomicBool,
    /// Offers confirmed and declined; ACKs and REVOKEs taken; lender messages dropped as
    /// malformed or matching no lease.
    confirmed: AtomicU64,
    declined: AtomicU64,
    acks: AtomicU64,
    revokes: AtomicU64,
    malformed: AtomicU64,
    stray: AtomicU64,
    /// Peer-caused warnings.
    noisy: LogLimit,
    #[pin]
    attach: Work<Kram, 2>,
    #[pin]
    resync: Work<Kram, 3>,
}

// SAFETY: `info.gas_virt` is the fabric's mapping, dereferenced only under a window access of
// `fabric`; everything mutable is behind a lock or atomic.
unsafe impl Send for Kram {}
// SAFETY: see `Send`.
unsafe impl Sync for Kram {}

impl OnRevoke for Kram {
    /// The fabric device goes: every request fails from now on (the data is out of reach), no
    /// lease is renewed and no memory asked for; the disks stay until unloaded.
    fn revoke(&self) {
        self.fabric.gas().revoke();
        // No request reaches the window any more; the engine's copies end, then its channels
        // go back before the fabric device unregisters the engine.
        if let Some(d) = &self.dma {
            d.revoke();
        }
        pr_warn!(
            "fabric device gone: /dev/kram* fail every request; swapoff, then unload unimem_kram\n"
        );
    }
}

impl_has_work! {
    impl HasWork<Self, 2> for Kram { self.attach }
    impl HasWork<Self, 3> for Kram { self.resync }
}

impl Tick for Kram {
    fn tick(this: &Arc<Self>) {
        if !this.stopping.load(Ordering::Acquire) {
            this.tick();
        }
    }
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

/// Requests in flight per hardware queue.
const QUEUE_DEPTH: u32 = 128;
/// The largest request (and data segment): 1 MiB, a KRAM chunk.
const MAX_REQUEST_BYTES: u32 = 1 << 20;

impl Kram {
    fn me(&self) -> u8 {
        self.info.node_id as u8
    }

    fn new_disk(&self, inst: &Instance, state: &InstanceState) -> Result<Disk> {
        let len = u64::from(inst.size_mib) << 20;
        let backing = KBox::new(
            Backing {
                shared: state.shared.clone(),
                len,
                dma: self.dma.clone(),
                epoch: self.epoch,
                fabric: self.fabric.clone(),
                max_stall_ns: self.max_stall_ns,
            },
            GFP_KERNEL,
        )?;
        let name = fmt!("kram{}", inst.id);
        // I/O accounting costs a visible share of a copy at memory speed: off, as on brd, until
        // a user writes 1 to `queue/iostats`; swap may read in place (synchronous, as on brd
        // and zram).
        let builder = GenDiskBuilder::new()
            .capacity_sectors(len >> 9)
            .logical_block_size(4096)?
            .physical_block_size(4096)?
            .synchronous(true)
            .io_stat(false)
            .max_hw_sectors(MAX_REQUEST_BYTES >> 9)
            .max_segment_size(MAX_REQUEST_BYTES)?
            // A discard is zeroed under the layout's spinlock and the window's RCU read side
            // (`Io::zero`): the block layer splits them into requests no longer than a read's,
            // so no CPU spends seconds on 4 GiB with preemption off.
            .max_discard_sectors(MAX_REQUEST_BYTES >> 9);
        if self.dma.is_none() {
            return Ok(Disk::Bio {
                _disk: builder.build_bio::<KramBio>(name, backing)?,
            });
        }
        // The engine's completions end requests: blk-mq's tags bound the copies in flight, no
        // I/O scheduler by default, and one queue per CPU keeps submitters apart.
        let tagset = Arc::pin_init(
            TagSet::new_with_flags(
                kernel::cpu::nr_cpu_ids(),
                QUEUE_DEPTH,
                1,
                TagSetFlags::NO_SCHED_BY_DEFAULT,
            ),
            GFP_KERNEL,
        )?;
        Ok(Disk::Queue {
            _disk: builder.build(name, tagset, backing)?,
        })
    }

    fn write_stats(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
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

    /// Waits for queued disk work (the lease ticker is stopped first: nothing queues it again).
    fn flush_works(&self) {
        self.attach.flush();
        self.resync.flush();
    }
}

impl LenderSink for Kram {
    fn message(this: ArcBorrow<'_, Self>, from: u32, word: u64) {
        let kram: Arc<Kram> = this.into();
        kram.message(from, word);
    }
}

/// The module parameters, checked.
struct Params {
    sizes: KVec<u32>,
    transfer: Transfer,
    mirror: bool,
    max_stall_ns: i64,
}

fn validated_params() -> Result<Params> {
    let n = *module_parameters::ninstances.value_ref();
    if n == 0 || n > MAX_INSTANCES {
        pr_err!("ninstances={} is out of range (1-{})\n", n, MAX_INSTANCES);
        return Err(EINVAL);
    }
    let sizes = module_parameters::size.value_ref();
    if sizes.as_slice().len() != n as usize {
        pr_err!(
            "size: {} size(s) given for ninstances={} (one per instance, e.g. size=32,64)\n",
            sizes.as_slice().len(),
            n
        );
        return Err(EINVAL);
    }
    let transfer = match *module_parameters::transfermode.value_ref() {
        0 => Transfer::Memcpy,
        1 => Transfer::Cdma,
        t => {
            pr_err!(
                "transfermode={} is invalid (0 = memcpy, 1 = CDMA engine)\n",
                t
            );
            return Err(EINVAL);
        }
    };
    let stall_s = *module_parameters::stall_timeout.value_ref();
    if !(1..=3600).contains(&stall_s) {
        pr_err!(
            "stall_timeout={} is out of range (1-3600 seconds)\n",
            stall_s
        );
        return Err(EINVAL);
    }
    let mut v = KVec::with_capacity(n as usize, GFP_KERNEL)?;
    for &mib in sizes.as_slice() {
        v.push(mib, GFP_KERNEL)?;
    }
    Ok(Params {
        sizes: v,
        transfer,
        mirror: *module_parameters::mirror.value_ref(),
        max_stall_ns: i64::from(stall_s) * 1_000_000_000,
    })
}

struct KramModule {
    _revoke: RevokeHook<Kram>,
    _sysfs: sysfs_group::KernelDir<Kram>,
    _stats: Pin<KBox<debugfs::File<Arc<Kram>>>>,
    _dir: debugfs::Dir,
    kram: Arc<Kram>,
    ticker: Arc<LeaseTicker<Kram>>,
}

impl kernel::Module for KramModule {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let Params {
            sizes,
            transfer,
            mirror,
            max_stall_ns,
        } = validated_params()?;
        let gas = Gas::attach()?;
        let info = *gas.info();
        let fabric = Fabric::new(gas.clone());
        let dma = match transfer {
            Transfer::Cdma => Some(dma::Dma::new(
                kernel::cpu::nr_cpu_ids() as usize,
                info.gas_phys,
                usize::try_from(info.gas_size)?,
                info.gas_virt,
            )?),
            Transfer::Memcpy => None,
        };
        let mut instances = KVec::with_capacity(sizes.len(), GFP_KERNEL)?;
        for (id, &size_mib) in sizes.iter().enumerate() {
            let shared = Shared::new(if mirror { 2 } else { 1 })?;
            instances.push(
                KBox::pin_init(
                    pin_init!(Instance {
                        id: id as u32,
                        size_mib,
                        state <- new_mutex!(InstanceState { shared, disk: None, lost: false }, "unimem_kram::instance"),
                    }),
                    GFP_KERNEL,
                )?,
                GFP_KERNEL,
            )?;
        }
        let kram_dma = dma.clone();
        let kram = Arc::pin_init(
            pin_init!(Kram {
                info,
                fabric,
                dma: kram_dma,
                mirror,
                max_stall_ns,
                epoch: Epoch::new(),
                instances,
                stopping: AtomicBool::new(false),
                confirmed: AtomicU64::new(0),
                declined: AtomicU64::new(0),
                acks: AtomicU64::new(0),
                revokes: AtomicU64::new(0),
                malformed: AtomicU64::new(0),
                stray: AtomicU64::new(0),
                noisy: LogLimit::new(),
                attach <- new_work!("unimem_kram::attach"),
                resync <- new_work!("unimem_kram::resync"),
            }),
            GFP_KERNEL,
        )?;
        // Everything fallible comes before the offer callback: nothing may fail once it is in.
        let ticker = LeaseTicker::new(kram.clone())?;
        let revoke = gas.on_revoke(kram.clone())?;
        let dir = debugfs::Dir::new(c"unimem_kram");
        let stats = KBox::pin_init(
            dir.read_callback_file(c"stats", kram.clone(), &|k: &Arc<Kram>, f| k.write_stats(f)),
            GFP_KERNEL,
        )?;
        let sysfs = sysfs::create(kram.clone())?;
        set_handler(service::KRAM_DRIVER, Some(&kram)).inspect_err(|e| {
            pr_err!(
                "cannot take the KRAM_DRIVER service (another unimem_kram?): {:?}\n",
                e
            );
        })?;
        LeaseTicker::start(&ticker);
        let (mode, chans) = match &dma {
            Some(d) => ("1 (DMA engine channels ", d.names()),
            None => ("0 (CPU copies", ""),
        };
        pr_info!(
            "node {}: {} instance(s), transfermode {}{}){}; asking lenders every second\n",
            info.node_id,
            sizes.len(),
            mode,
            chans,
            if mirror {
                ", mirrored on two sets of lenders"
            } else {
                ""
            }
        );
        Ok(Self {
            _revoke: revoke,
            _sysfs: sysfs,
            _stats: stats,
            _dir: dir,
            kram,
            ticker,
        })
    }
}

impl Drop for KramModule {
    fn drop(&mut self) {
        let kram = &self.kram;
        kram.stopping.store(true, Ordering::Release);
        LeaseTicker::stop(&self.ticker);
        // No more ticks (waits for a running callback), no more offers (waits for a running one), then no more queued work.
        let _ = set_handler::<Kram>(service::KRAM_DRIVER, None);
        kram.flush_works();
        for inst in kram.instances.iter() {
            let mut state = inst.state.lock();
            // Deleting the disk waits for its requests; only then can the memory go back.
            drop(state.disk.take());
            kram.give_back_all(inst, &state);
        }
    }
}
