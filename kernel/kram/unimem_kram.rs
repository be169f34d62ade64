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
//!
//! The driver: `kram.rs` (its methods in the files it names); an instance and its block device:
//! `instance.rs`, `disk.rs`.

use core::sync::atomic::Ordering;
use kernel::{debugfs, prelude::*, sync::Arc};

mod disk;
mod dma;
mod dma_ctx;
mod dma_submit;
mod give_back;
mod instance;
mod io;
mod kram;
mod layout;
mod lending;
mod params;
mod stats;
mod sysfs;
#[path = "../common/sysfs_group.rs"]
mod sysfs_group;
mod works;

// The shared layer (kernel/README.md): the wire formats, both seams, the fabric client, the
// KRAM lease protocol and its ticker.
#[path = "../common/borrower.rs"]
mod common;
use common::*;

use fabric_client::{Gas, RevokeHook};
use kram::Kram;
use kram_client::set_handler;
use lease_ticker::LeaseTicker;
use mailbox::service;

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

use params::validated_params;

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
        let params = validated_params()?;
        let gas = Gas::attach()?;
        let kram = Kram::new(&gas, &params)?;
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
        let (mode, chans) = match &kram.dma {
            Some(d) => ("1 (DMA engine channels ", d.names()),
            None => ("0 (CPU copies", ""),
        };
        pr_info!(
            "node {}: {} instance(s), transfermode {}{}){}; asking lenders every second\n",
            kram.info.node_id,
            params.sizes.len(),
            mode,
            chans,
            if params.mirror {
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
