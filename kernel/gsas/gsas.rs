// SPDX-License-Identifier: GPL-2.0
//! unimem GSAS: the atomic service of the global shared address space (seed 000 section 2,
//! docs/GSAS.md).
//!
//! Threads of any node send requests (256-bit mailbox packets, header sealed by their node's
//! driver) to interface `SERVICE_IFACE` of the node whose memory they address. This module
//! serves that interface: it applies every operation on this node's GSAS pages under one lock
//! (so operations on a node's memory are linearizable, which TCG's non-atomic cross-VM atomics
//! require), checks that the page belongs to the issuer's protection tree, and answers in the
//! issuer's response slot. The pages come from a pool borrowed from this node's own
//! kram-daemon (KRAM instance `GSAS_INSTANCE`, leased and renewed like any loan).
//!
//! This file holds the module: its parameters, what loading sets up and in which order, and
//! what unloading undoes; the service and its jobs are in `service.rs` and the files it names.

use core::sync::atomic::Ordering;
use kernel::{
    debugfs,
    miscdevice::{MiscDeviceOptions, MiscDeviceRegistration},
    prelude::*,
    sync::Arc,
};

mod claims;
mod copy;
mod daemon;
mod fork;
mod grow;
mod indexed;
mod keeps;
mod lease;
mod mappers;
mod memory;
mod pool;
#[path = "../common/privilege.rs"]
mod privilege;
#[path = "../common/published.rs"]
mod published;
mod remote_maps;
mod request;
mod service;
mod serving;
mod stats;
#[path = "../common/sysfs_group.rs"]
mod sysfs_group;
mod versions_writer;
mod zero;

// The shared layer (kernel/README.md): the wire formats, both seams, the fabric client, the
// KRAM lease protocol and its ticker; one borrowed range per lender; the GSAS formats, which
// name `crate::kram`.
#[path = "../common/borrower.rs"]
mod common;
use common::*;
#[path = "../common/kram_borrow.rs"]
mod kram_borrow;
#[path = "../common/wire_gsas.rs"]
mod wire_gsas;
use wire_gsas::*;

use fabric_client::{Gas, RevokeHook};
use kram_client::set_handler;
use lease_ticker::LeaseTicker;
use mailbox::service as mbox_service;
use service::{Quota, Service};
use serving::Serving;
use stats::{sysfs, Sysfs};
use wire::kram::{CHUNK_SIZE, MAX_REQUEST_CHUNKS_V2};

module! {
    type: GsasModule,
    name: "unimem_gsas",
    authors: ["unimem developers"],
    description: "unimem GSAS atomic service: applies global shared address space requests (mailbox interface 63) to a page pool borrowed from this node's kram-daemon",
    license: "GPL v2",
    params: {
        pool_mib: u32 {
            default: 16,
            description: "MiB of this node's partition the service borrows from its own kram-daemon as its page pool (1-4096)",
        },
        pool_max_mib: u32 {
            default: 1024,
            description: "MiB the page pool may grow to, in up to 7 ranges borrowed as allocations need them (0: it stays at pool_mib)",
        },
        offer_timeout_ms: u32 {
            default: 5000,
            description: "How long loading waits for the kram-daemon's offer and acknowledgement before it fails (100-60000 ms)",
        },
        user_pages_pct: u32 {
            default: 50,
            description: "Percentage of the page pool one user may hold (1-100); users with CAP_SYS_ADMIN on their node are not limited",
        },
        user_forks: u32 {
            default: 32,
            description: "remoteFork children one user may have starting or running on this node (1-64); users with CAP_SYS_ADMIN on their node are not limited",
        },
    },
}

struct GsasModule {
    // Teardown order: no stats readers, no requests (waits for a running one), no revocation,
    // then the pool goes back (Drop), then no renewals and no lender messages.
    _sysfs: Option<Sysfs>,
    // `/dev/unimem_gsas` goes before the service it publishes.
    _daemon_dev: Option<Pin<KBox<daemon::Registration>>>,
    _published: Option<published::Published<Service>>,
    _stats: Option<Pin<KBox<debugfs::File<Arc<Service>>>>>,
    _dir: Option<debugfs::Dir>,
    serving: Option<Serving>,
    acks: Option<remote_maps::AckRoute>,
    revoke: Option<RevokeHook<Service>>,
    service: Arc<Service>,
    ticker: Option<Arc<LeaseTicker<Service>>>,
}

fn check_params() -> Result<(u32, u32, u32, Quota)> {
    let mib = *module_parameters::pool_mib.value_ref();
    if !(1..=4096).contains(&mib) || mib > MAX_REQUEST_CHUNKS_V2 {
        pr_err!("pool_mib={} is out of range (1-4096)\n", mib);
        return Err(EINVAL);
    }
    let max = match *module_parameters::pool_max_mib.value_ref() {
        0 => mib,
        m if (mib..=16384).contains(&m) => m,
        m => {
            pr_err!(
                "pool_max_mib={} is out of range (0, or pool_mib={} to 16384)\n",
                m,
                mib
            );
            return Err(EINVAL);
        }
    };
    let timeout = *module_parameters::offer_timeout_ms.value_ref();
    if !(100..=60000).contains(&timeout) {
        pr_err!("offer_timeout_ms={} is out of range (100-60000)\n", timeout);
        return Err(EINVAL);
    }
    let quota = Quota {
        pages_pct: *module_parameters::user_pages_pct.value_ref(),
        forks: *module_parameters::user_forks.value_ref(),
    };
    if !(1..=100).contains(&quota.pages_pct) {
        pr_err!(
            "user_pages_pct={} is out of range (1-100)\n",
            quota.pages_pct
        );
        return Err(EINVAL);
    }
    if !(1..=gsas::fork::MAX_CHILDREN as u32).contains(&quota.forks) {
        pr_err!(
            "user_forks={} is out of range (1-{})\n",
            quota.forks,
            gsas::fork::MAX_CHILDREN
        );
        return Err(EINVAL);
    }
    Ok((mib, max, timeout, quota))
}

impl kernel::Module for GsasModule {
    fn init(module: &'static ThisModule) -> Result<Self> {
        let (mib, max_mib, timeout, quota) = check_params()?;
        let gas = Gas::attach()?;
        let info = *gas.info();
        if info.partition_size > gsas::remote_map::ZAP_PAGE_LIMIT * gsas::PAGE_SIZE {
            pr_err!(
                "partitions of {} MiB: pages of other nodes' mappings could not be named\n",
                info.partition_size >> 20
            );
            return Err(EINVAL);
        }
        if info.partition_size < wire::kram::LENDABLE_OFFSET + u64::from(mib) * CHUNK_SIZE {
            pr_err!(
                "pool_mib={}: partitions of {} MiB cannot hold it\n",
                mib,
                info.partition_size >> 20
            );
            return Err(EINVAL);
        }
        // The pool never grows past the partition's lendable memory.
        let lendable = (info.partition_size - wire::kram::LENDABLE_OFFSET) / CHUNK_SIZE;
        let max_pages = (u64::from(max_mib).min(lendable) * CHUNK_SIZE / gsas::PAGE_SIZE) as usize;
        let service = Service::new(&gas, info, quota, max_pages, module)?;
        set_handler(mbox_service::GSAS, Some(&service)).inspect_err(|e| {
            pr_err!(
                "cannot take mailbox service {} (GSAS): {:?}\n",
                mbox_service::GSAS,
                e
            );
        })?;
        // From here on `Drop` undoes what was done, whatever fails.
        let mut this = Self {
            _sysfs: None,
            _daemon_dev: None,
            _published: None,
            _stats: None,
            _dir: None,
            serving: None,
            acks: None,
            revoke: None,
            service: service.clone(),
            ticker: None,
        };
        // Nothing of a previous load is claimed or lives here any more.
        service.reset_tree_tables()?;
        service.settle_versions();
        service.take_pool(mib, timeout)?;
        // Renewals from now on (the ACK made the lease good for `BORROWER_LEASE_MS`).
        let ticker = this.ticker.insert(LeaseTicker::new(service.clone())?);
        LeaseTicker::start(ticker);
        this.revoke = Some(gas.on_revoke(service.clone())?);
        this.acks = Some(remote_maps::AckRoute::start(&service)?);
        service.clear_approvals();
        this.serving = Some(Serving::start(service.clone())?);
        let dir = debugfs::Dir::new(c"unimem_gsas");
        this._stats = Some(KBox::pin_init(
            dir.read_callback_file(c"stats", service.clone(), &|s: &Arc<Service>, f| {
                s.write_stats(f)
            }),
            GFP_KERNEL,
        )?);
        this._dir = Some(dir);
        this._sysfs = Some(sysfs(service.clone())?);
        this._published = Some(daemon::publish(service.clone())?);
        this._daemon_dev = Some(KBox::pin_init(
            MiscDeviceRegistration::register(MiscDeviceOptions {
                name: c"unimem_gsas",
            }),
            GFP_KERNEL,
        )?);
        pr_info!(
            "node {}: serving GSAS on mailbox interface {}, {} pages of 4 KiB\n",
            info.node_id,
            gsas::SERVICE_IFACE,
            u64::from(mib) * CHUNK_SIZE / gsas::PAGE_SIZE
        );
        Ok(this)
    }
}

impl Drop for GsasModule {
    fn drop(&mut self) {
        drop(self._daemon_dev.take());
        drop(self._published.take());
        drop(self._sysfs.take());
        drop(self._stats.take());
        drop(self._dir.take());
        drop(self.serving.take());
        drop(self.acks.take());
        self.service.retire_tree_tables();
        drop(self.revoke.take());
        // Unload is refused while allocations exist or freed ones wait to be zeroed (module
        // reference), so the pool is all free and zero here, but wipe it anyway before it goes
        // back. The zeroing work may still be returning from its last run.
        self.service.zero.flush();
        // No ALLOC queues it again: nothing is served any more.
        self.service.grow.flush();
        self.service.return_pool();
        self.service.stopping.store(true, Ordering::Release);
        if let Some(ticker) = self.ticker.take() {
            LeaseTicker::stop(&ticker);
        }
        let _ = set_handler::<Service>(mbox_service::GSAS, None);
    }
}
