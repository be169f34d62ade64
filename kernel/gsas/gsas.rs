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

use core::sync::atomic::{AtomicBool, Ordering};
use kernel::{
    bindings, debugfs,
    ffi::{c_int, c_void},
    miscdevice::{MiscDeviceOptions, MiscDeviceRegistration},
    new_condvar, new_spinlock,
    prelude::*,
    sync::{Arc, ArcBorrow, CondVar, SpinLock},
    workqueue::{self, impl_has_work, new_work, Work, WorkItem},
};

mod claims;
mod fork;
mod pool;
mod service;
mod stats;

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
// Shared with unimem_numa, which uses all of it.
#[allow(dead_code)]
mod kram_borrow;
#[path = "../include/kram_client.rs"]
// Shared with unimem_kram, which uses all of it.
#[allow(dead_code)]
mod kram_client;
#[path = "../include/lease_ticker.rs"]
mod lease_ticker;
#[path = "../include/privilege.rs"]
// Only `require_admin` is used here.
#[allow(dead_code)]
mod privilege;
#[path = "../include/sysfs_group.rs"]
mod sysfs_group;
#[path = "../include/wire.rs"]
#[allow(dead_code, unreachable_pub)]
mod wire;
#[path = "../include/wire_gsas.rs"]
#[allow(dead_code, unreachable_pub)]
mod wire_gsas;
// The wire files name each other `crate::gas`, `crate::packet`, `crate::mailbox`, ...
#[allow(unused_imports)]
use wire::{gas, kram, mailbox, packet};
#[allow(unused_imports)]
use wire_gsas::{gsas, lease_record, trees};

use fabric_api::FabricInfo;
use fabric_client::{Gas, OnRevoke, RevokeHook};
use kram_borrow::{Borrow, Delivery};
use kram_client::{set_handler, Epoch, LenderSink, LogLimit};
use lease_ticker::{LeaseTicker, Tick};
use mailbox::{service as mbox_service, INTERFACES};
use packet::PACKET_LEN;
use service::PoolState;
use stats::{sysfs, Stats, Sysfs};
use wire::kram::{BORROWER_LEASE_MS, CHUNK_SIZE, GSAS_INSTANCE, LEASE_MS, MAX_REQUEST_CHUNKS_V2};

/// How long a pool whose lease lapsed on this node's clock waits for a renewal to be
/// acknowledged before it is given up. A node that was not frozen must stop using the pool
/// before its lender's lease ends: that lease counts `LEASE_MS` from the last RENEW the lender
/// received, ours ends `LEASE_MS - BORROWER_LEASE_MS` earlier and a tick sees it within a renewal
/// period, so the stall may take half that margin.
const STALL_NS: i64 = ((LEASE_MS - BORROWER_LEASE_MS) / 2 * 1_000_000) as i64;

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
            description: "remoteFork children one user may have on this node, started or not waited for (1-64); users with CAP_SYS_ADMIN on their node are not limited",
        },
    },
}

/// What one user may hold on this node (`user_pages_pct=`, `user_forks=`).
#[derive(Clone, Copy)]
pub(crate) struct Quota {
    pub(crate) pages_pct: u32,
    pub(crate) forks: u32,
}

/// What the service lock protects.
pub(crate) struct Inner {
    /// `None` once the fabric device went.
    pool: Option<PoolState>,
    /// Per (issuer node, interface): the owner entry word under which it was last answered
    /// (0: not since load) and the `seq` of that answer.
    seqs: KVec<(u64, u32)>,
    /// A module reference is held while allocations exist (unload is refused: nothing would
    /// renew their lease).
    module_held: bool,
    /// remoteFork's children and whether a daemon is attached.
    children: fork::Children,
}

#[pin_data]
pub(crate) struct Service {
    gas: Arc<Gas>,
    info: FabricInfo,
    node: u32,
    /// Window offset of this node's partition.
    part: u64,
    quota: Quota,
    module: &'static ThisModule,
    #[pin]
    inner: SpinLock<Inner>,
    /// Requests being applied, per issuer interface (`claims.rs`).
    #[pin]
    claims: claims::Claims,
    /// Signalled when a FORK is queued for the daemon.
    #[pin]
    jobs: CondVar,
    #[pin]
    borrow: Borrow,
    epoch: Epoch,
    stats: Stats,
    noisy: LogLimit,
    stopping: AtomicBool,
    /// Zeroes large freed allocations (`Service::zero_queued`).
    #[pin]
    zero: Work<Service, 1>,
}

// SAFETY: the window is reached only through `gas` accesses; everything mutable is behind the
// lock or atomic.
unsafe impl Send for Service {}
// SAFETY: see `Send`.
unsafe impl Sync for Service {}

impl_has_work! {
    impl HasWork<Self, 1> for Service { self.zero }
}

impl Tick for Service {
    fn tick(this: &Arc<Service>) {
        if !this.stopping.load(Ordering::Acquire) && !this.gas.is_revoked() {
            this.borrow.renew();
            this.check_lease();
        }
    }
}

impl WorkItem<1> for Service {
    type Pointer = Arc<Service>;

    fn run(this: Arc<Service>) {
        this.zero_queued();
    }
}

impl LenderSink for Service {
    fn message(this: ArcBorrow<'_, Self>, from: u32, word: u64) {
        match this.borrow.message(from, word) {
            Delivery::Revoke => pr_crit!("node {}'s kram-daemon revoked the page pool: every request is answered NO_POOL until unimem_gsas is reloaded\n", from),
            Delivery::Malformed | Delivery::Stray => {
                if this.noisy.allow(this.epoch.now()) {
                    pr_warn!("message {:#018x} from node {} is not about this pool: dropped (rate-limited)\n", word, from);
                }
            }
            _ => {}
        }
    }
}

/// # Safety
///
/// Called by unimem_mailbox in process context with the `ctx` given to `unimem_mbox_serve`: a
/// `Service` kept alive by `Serving` until the handler is removed; `packet` is `PACKET_LEN`
/// bytes valid for the call.
unsafe extern "C" fn on_packet(ctx: *mut c_void, from_node: u32, packet: *const u8) {
    // SAFETY: see above; `ctx` is `Arc::as_ptr` of that service (`Serving::new`).
    let service = unsafe { ArcBorrow::<Service>::from_raw(ctx.cast::<Service>()) };
    // SAFETY: see above.
    let raw = unsafe { &*packet.cast::<[u8; PACKET_LEN]>() };
    if service.handle(from_node, raw) {
        // A large freed allocation: zeroed by the work, not in the mailbox's served section.
        // Its module reference (`release_module` waits for it) keeps this code loaded.
        let _ = workqueue::system_percpu().enqueue::<Arc<Service>, 1>(service.into());
    }
}

/// # Safety
///
/// Called by unimem_mailbox with the `ctx` given to `unimem_mbox_map_check`: a `Service` kept
/// alive by `Serving` until the check is removed.
unsafe extern "C" fn on_map(ctx: *mut c_void, tree: u32, offset: u64, len: u64) -> c_int {
    // SAFETY: see above.
    let service = unsafe { &*ctx.cast::<Service>() };
    match service.may_map(tree, offset, len) {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// Removes threads' mappings of `len` bytes at `offset` of this node's partition (`len` 0: to
/// its end): pages freed or lost. Without a mailbox (the fabric device went) nothing is mapped.
pub(crate) fn zap_pages(offset: u64, len: u64) -> Result {
    // SAFETY: no lock of ours is held by callers (`on_map` takes the service lock).
    match kernel::error::to_result(unsafe { kmsg_api::unimem_mbox_zap_pages(offset, len) }) {
        Err(e) if e == ENODEV => Ok(()),
        r => r,
    }
}

impl Service {
    /// Takes a module reference for the first allocation. Under the lock.
    fn hold_module(&self, inner: &mut Inner) {
        if !inner.module_held {
            // SAFETY: `module` is this module, alive while its code runs; dropped by
            // `release_module` when the last allocation is freed.
            unsafe { bindings::__module_get(self.module.as_ptr()) };
            inner.module_held = true;
        }
    }

    /// Drops the module reference once no allocation is left and every freed one is zeroed
    /// (or the pool is gone). Under the lock.
    fn release_module(&self, inner: &mut Inner) {
        let none_left = inner
            .pool
            .as_ref()
            .is_none_or(|p| p.pages.allocations == 0 && p.pages.unzeroed == 0);
        if inner.module_held && none_left {
            // SAFETY: taken by `hold_module`.
            unsafe { bindings::module_put(self.module.as_ptr()) };
            inner.module_held = false;
        }
    }

    /// Drops a pool whose lease was revoked, or lapsed on this node's clock and was not
    /// acknowledged again within [`STALL_NS`]: its memory may be lent to someone else by now,
    /// so every allocation in it is lost; requests get `NO_POOL` from now on, and the module
    /// can be unloaded (nothing left to keep).
    ///
    /// A lapse alone is first a stall: a node frozen past its lease finds it lapsed when it
    /// runs again, while its lender held it (the lease rule: the node is connected and its
    /// heartbeat stalled). The tick's RENEW is then acknowledged and the pool is back; until
    /// then requests are answered `STALLED` (the library asks again). The stall counts from
    /// the first tick that saw it, so a freeze does not use it up.
    fn check_lease(&self) {
        let mut inner = self.inner.lock();
        let now = self.epoch.now();
        let Some(pool) = inner.pool.as_mut() else {
            return;
        };
        if pool.clock.usable(now) {
            if let Some(since) = pool.stalled_since.take() {
                pr_info!(
                    "node {}: page pool's lease acknowledged again after a stall of {} ms: back in use\n",
                    self.node,
                    (now - since) / 1_000_000
                );
            }
            return;
        }
        if !pool.clock.is_revoked() {
            let since = *pool.stalled_since.get_or_insert(now);
            if since == now {
                pr_warn!(
                    "node {}: page pool's lease lapsed on this node's clock (was it frozen?): renewing; requests are answered STALLED meanwhile\n",
                    self.node
                );
            }
            if now - since < STALL_NS {
                return;
            }
        }
        if let Some(pool) = inner.pool.take() {
            pr_crit!(
                "page pool lost (lease {}): {} allocations ({} pages) are gone; requests are answered NO_POOL until unimem_gsas is reloaded\n",
                if pool.clock.is_revoked() { "revoked" } else { "not acknowledged in time: is kram-daemon running?" },
                pool.pages.allocations,
                pool.pages.used
            );
        }
        self.release_module(&mut inner);
        drop(inner);
        // The memory may be someone else's now: no thread keeps a mapping of it.
        if let Err(e) = zap_pages(0, 0) {
            pr_crit!("unmapping the lost pool from user space failed: {:?}\n", e);
            return;
        }
        // No longer used here: back to the daemon, which wipes it (a revoked pool is not ours:
        // nothing is sent).
        self.borrow.give_back(false);
    }

    /// Borrows the pool, wipes it (lent memory is not trusted to be zero) and installs it.
    fn take_pool(&self, mib: u32, timeout_ms: u32) -> Result {
        let (first, clock) = self.borrow.lease(self.node, mib, 0, timeout_ms).inspect_err(|e| {
            pr_err!(
                "no page pool: node {}'s kram-daemon did not lend {} MiB within {} ms ({:?}); is kram-daemon running on this node, with that much contiguous free memory? (pool_mib= sets the size)\n",
                self.node, mib, timeout_ms, e
            );
        })?;
        let installed = (|| {
            let (offset, len) = self.gas.lent_range(self.node, first, mib).ok_or(EINVAL)?;
            self.gas.wipe_long(offset, len)?;
            let pages = pool::Pool::new((len / gsas::PAGE_SIZE) as usize)?;
            self.inner.lock().pool = Some(PoolState {
                pages,
                offset: offset - self.part,
                clock,
                stalled_since: None,
            });
            pr_info!("node {}: page pool of {} MiB (chunks {}+{}, partition offset {:#x}) lent by this node's kram-daemon\n", self.node, mib, first, mib, offset - self.part);
            Ok(())
        })();
        if installed.is_err() {
            // Only zeroes were written to it.
            self.borrow.give_back(true);
        }
        installed
    }

    /// Wipes the pool and gives it back to the daemon (unload).
    fn return_pool(&self) {
        let Some(pool) = self.inner.lock().pool.take() else {
            return;
        };
        // Nothing is allocated (unload waits for that), so nothing is mapped; make sure.
        if let Err(e) = zap_pages(0, 0) {
            pr_warn!(
                "node {}: unmapping the pool from user space failed ({:?}): not returned\n",
                self.node,
                e
            );
            return;
        }
        let len = pool.pages.pages() as u64 * gsas::PAGE_SIZE;
        let wiped = pool.clock.usable(self.epoch.now())
            && self.gas.wipe_long(self.part + pool.offset, len).is_ok();
        if self.borrow.give_back(wiped) {
            if wiped {
                pr_info!(
                    "node {}: page pool wiped and returned to this node's kram-daemon\n",
                    self.node
                );
            } else {
                pr_warn!("node {}: page pool returned unwiped (its lease lapsed on this node's clock): the daemon wipes it\n", self.node);
            }
        }
    }
}

impl OnRevoke for Service {
    /// The fabric device goes: no request is applied or answered again; the pool (and every
    /// allocation in it) is lost, since its lease can no longer be renewed.
    fn revoke(&self) {
        self.gas.revoke();
        let mut inner = self.inner.lock();
        if let Some(pool) = inner.pool.take() {
            if pool.pages.allocations > 0 {
                pr_crit!(
                    "fabric device going: {} GSAS allocations ({} pages) are lost\n",
                    pool.pages.allocations,
                    pool.pages.used
                );
            }
        }
        self.release_module(&mut inner);
        drop(inner);
        pr_warn!("fabric device gone: GSAS requests are no longer served until unimem_gsas is reloaded\n");
    }
}

/// The interface served and the pool's pages mappable while alive; keeps the handlers'
/// context alive.
struct Serving {
    _service: Arc<Service>,
}

impl Serving {
    fn start(service: Arc<Service>) -> Result<Self> {
        let ctx = Arc::as_ptr(&service).cast_mut().cast::<c_void>();
        // SAFETY: `on_map` runs in process context with `ctx` alive until `Drop` removes it
        // (which waits for a running call).
        let ret = unsafe { kmsg_api::unimem_mbox_map_check(Some(on_map), ctx) };
        if ret != 0 {
            pr_err!(
                "cannot check mappings of this node's partition: {} (another unimem_gsas?)\n",
                ret
            );
            return Err(Error::from_errno(ret));
        }
        // SAFETY: `on_packet` runs in process context with `ctx` alive until `Drop` removes it
        // (which waits for a running call).
        let ret = unsafe { kmsg_api::unimem_mbox_serve(gsas::SERVICE_IFACE, Some(on_packet), ctx) };
        if ret != 0 {
            pr_err!(
                "cannot serve mailbox interface {}: {} (another unimem_gsas?)\n",
                gsas::SERVICE_IFACE,
                ret
            );
            Self::stop_maps();
            return Err(Error::from_errno(ret));
        }
        Ok(Self { _service: service })
    }

    fn stop_maps() {
        // SAFETY: removal passes no check and waits for a running call.
        unsafe { kmsg_api::unimem_mbox_map_check(None, core::ptr::null_mut()) };
    }
}

impl Drop for Serving {
    fn drop(&mut self) {
        // SAFETY: removal passes no handler and waits for a running call.
        unsafe { kmsg_api::unimem_mbox_serve(gsas::SERVICE_IFACE, None, core::ptr::null_mut()) };
        Self::stop_maps();
    }
}

struct GsasModule {
    // Teardown order: no stats readers, no requests (waits for a running one), no revocation,
    // then the pool goes back (Drop), then no renewals and no lender messages.
    _sysfs: Option<Sysfs>,
    // `/dev/unimem_gsas` goes before the service it publishes.
    _daemon_dev: Option<Pin<KBox<fork::Registration>>>,
    _published: Option<fork::Published>,
    _stats: Option<Pin<KBox<debugfs::File<Arc<Service>>>>>,
    _dir: Option<debugfs::Dir>,
    serving: Option<Serving>,
    revoke: Option<RevokeHook<Service>>,
    service: Arc<Service>,
    ticker: Option<Arc<LeaseTicker<Service>>>,
}

fn check_params() -> Result<(u32, u32, Quota)> {
    let mib = *module_parameters::pool_mib.value_ref();
    if !(1..=4096).contains(&mib) || mib > MAX_REQUEST_CHUNKS_V2 {
        pr_err!("pool_mib={} is out of range (1-4096)\n", mib);
        return Err(EINVAL);
    }
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
    Ok((mib, timeout, quota))
}

impl kernel::Module for GsasModule {
    fn init(module: &'static ThisModule) -> Result<Self> {
        let (mib, timeout, quota) = check_params()?;
        let gas = Gas::attach()?;
        let info = *gas.info();
        let part = info.ctl_size + u64::from(info.node_id) * info.partition_size;
        if info.partition_size < wire::kram::LENDABLE_OFFSET + u64::from(mib) * CHUNK_SIZE {
            pr_err!(
                "pool_mib={}: partitions of {} MiB cannot hold it\n",
                mib,
                info.partition_size >> 20
            );
            return Err(EINVAL);
        }
        let mut seqs = KVec::with_capacity((info.node_count * INTERFACES) as usize, GFP_KERNEL)?;
        for _ in 0..info.node_count * INTERFACES {
            seqs.push((0, 0), GFP_KERNEL)?;
        }
        let children = fork::Children::new()?;
        let gas_ref = gas.clone();
        let service = Arc::pin_init(
            pin_init!(Service {
                gas: gas_ref,
                info,
                node: info.node_id,
                part,
                quota,
                module,
                inner <- new_spinlock!(Inner { pool: None, seqs, module_held: false, children }, "unimem_gsas::inner"),
                claims <- claims::Claims::new(),
                jobs <- new_condvar!("unimem_gsas::jobs"),
                borrow <- Borrow::new(info.node_id, GSAS_INSTANCE, Epoch::new()),
                epoch: Epoch::new(),
                stats: Stats::new(),
                noisy: LogLimit::new(),
                stopping: AtomicBool::new(false),
                zero <- new_work!("unimem_gsas::zero"),
            }),
            GFP_KERNEL,
        )?;
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
            revoke: None,
            service: service.clone(),
            ticker: None,
        };
        // Nothing of a previous load is claimed or lives here any more.
        service.reset_tree_tables()?;
        service.take_pool(mib, timeout)?;
        // Renewals from now on (the ACK made the lease good for `BORROWER_LEASE_MS`).
        let ticker = this.ticker.insert(LeaseTicker::new(service.clone())?);
        LeaseTicker::start(ticker);
        this.revoke = Some(gas.on_revoke(service.clone())?);
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
        this._published = Some(fork::Published::new(service.clone()));
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
        self.service.retire_tree_tables();
        drop(self.revoke.take());
        // Unload is refused while allocations exist or freed ones wait to be zeroed (module
        // reference), so the pool is all free and zero here, but wipe it anyway before it goes
        // back. The zeroing work may still be returning from its last run.
        self.service.zero.flush();
        self.service.return_pool();
        self.service.stopping.store(true, Ordering::Release);
        if let Some(ticker) = self.ticker.take() {
            LeaseTicker::stop(&ticker);
        }
        let _ = set_handler::<Service>(mbox_service::GSAS, None);
    }
}
