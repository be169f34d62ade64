// SPDX-License-Identifier: GPL-2.0
//! unimem KRAM: swap devices whose storage is memory lent by other nodes (seed 000 2.5-2.6).
//!
//! `insmod unimem_kram.ko ninstances=2 size=32,64 transfermode=1`: an hrtimer fires about every
//! second; while an instance lacks memory, a work item asks every other node's kram-daemon
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
    bindings, debugfs,
    block::mq::{gen_disk::GenDisk, gen_disk::GenDiskBuilder, TagSet},
    impl_has_hr_timer, new_mutex,
    prelude::*,
    sync::{Arc, ArcBorrow, Mutex},
    time::{
        hrtimer::{
            ArcHrTimerHandle, HrTimer, HrTimerCallback, HrTimerCallbackContext, HrTimerHandle,
            HrTimerPointer, HrTimerRestart, RelativeMode,
        },
        Delta, Monotonic,
    },
    workqueue::{self, impl_has_work, new_work, Work, WorkItem},
};

mod disk;
mod params;

#[path = "../include/unimem_fabric.rs"]
#[allow(dead_code, unreachable_pub)]
mod fabric_api;
#[path = "../include/unimem_mailbox.rs"]
#[allow(dead_code, unreachable_pub)]
mod kmsg_api;
#[path = "../include/kram_client.rs"]
mod kram_client;
#[path = "../include/wire.rs"]
#[allow(dead_code, unreachable_pub)]
mod wire;
// The wire files name each other `crate::gas`, `crate::packet`, `crate::mailbox`.
#[allow(unused_imports)]
use wire::{gas, mailbox, packet};

use disk::{Backing, KramDisk, Lease, Transfer};
use kram_client::{send, set_handler, Epoch, LeaseClock, LenderSink, LogLimit};
use mailbox::service;
use wire::kram::{lent_range, to_daemon, to_driver, KramMsg, MAX_INSTANCES, MAX_REQUEST_CHUNKS, V2};

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
        transfermode: u32 {
            default: 1,
            description: "How data is copied: 1 = CDMA engine (emulated, asynchronous completion), 0 = memcpy",
        },
    },
}

use params::SizeList;

/// The smallest part of an instance a v2 REQUEST accepts from one lender.
const MIN_STRIPE_MIB: u32 = 64;

struct InstanceState {
    /// The parts, in the order they were accepted (the disk's order).
    leases: KVec<Arc<Lease>>,
    disk: Option<GenDisk<KramDisk>>,
    /// A part of the disk was revoked or lapsed: its data is gone, its I/O fails.
    lost: bool,
}

impl InstanceState {
    fn have(&self) -> u32 {
        self.leases.iter().map(|l| l.chunks).sum()
    }

    fn find(&self, node: u32, first: u32, chunks: u32) -> Option<usize> {
        self.leases.iter().position(|l| (l.node, l.first_chunk, l.chunks) == (node, first, chunks))
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
    transfer: Transfer,
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
    timer: HrTimer<Kram>,
    #[pin]
    tick: Work<Kram, 1>,
    #[pin]
    attach: Work<Kram, 2>,
}

// SAFETY: `info.gas_virt` is the fabric's mapping, valid while unimem_eusrvmem is loaded (a
// symbol dependency of this module); everything mutable is behind a lock or atomic.
unsafe impl Send for Kram {}
// SAFETY: see `Send`.
unsafe impl Sync for Kram {}

impl_has_hr_timer! {
    impl HasHrTimer<Self> for Kram {
        mode: RelativeMode<Monotonic>, field: self.timer
    }
}

impl_has_work! {
    impl HasWork<Self, 1> for Kram { self.tick }
    impl HasWork<Self, 2> for Kram { self.attach }
}

const PERIOD: Delta = Delta::from_secs(1);

impl HrTimerCallback for Kram {
    type Pointer<'a> = Arc<Self>;

    fn run(this: ArcBorrow<'_, Self>, mut ctx: HrTimerCallbackContext<'_, Self>) -> HrTimerRestart {
        if this.stopping.load(Ordering::Acquire) {
            return HrTimerRestart::NoRestart;
        }
        // Sending may wait for a ring; do it in process context.
        let _ = workqueue::system_percpu().enqueue::<Arc<Kram>, 1>(this.into());
        ctx.forward_now(PERIOD);
        HrTimerRestart::Restart
    }
}

impl WorkItem<1> for Kram {
    type Pointer = Arc<Kram>;

    fn run(this: Arc<Kram>) {
        this.tick();
    }
}

impl WorkItem<2> for Kram {
    type Pointer = Arc<Kram>;

    fn run(this: Arc<Kram>) {
        this.attach_disks();
    }
}

impl Kram {
    fn me(&self) -> u8 {
        self.info.node_id as u8
    }

    /// Every tick: RENEW every lease, and REQUEST what each incomplete instance lacks from
    /// every other node that does not lend it a part yet.
    fn tick(&self) {
        let now = self.epoch.now();
        let Ok(mut out) = KVec::<(u32, KramMsg)>::with_capacity(16, GFP_KERNEL) else { return };
        for inst in self.instances.iter() {
            let state = inst.state.lock();
            for l in state.leases.iter().filter(|l| !l.clock.is_revoked()) {
                let tag = l.clock.stamp(now);
                let m = KramMsg::new(to_daemon::RENEW, self.me(), inst.id as u8, l.first_chunk, l.chunks, tag);
                let _ = out.push((l.node, m), GFP_KERNEL);
            }
            let need = inst.size_mib - state.have();
            if need == 0 || state.disk.is_some() || self.stopping.load(Ordering::Acquire) {
                continue;
            }
            // The seed's message (exactly `size` MiB from one lender) while it can say it.
            let min = if state.leases.is_empty() && need <= MAX_REQUEST_CHUNKS { need } else { need.min(MIN_STRIPE_MIB) };
            let request = KramMsg::request(self.me(), inst.id as u8, need, min, 0);
            for node in (0..self.info.node_count).filter(|&n| n != self.info.node_id) {
                if !state.leases.iter().any(|l| l.node == node) {
                    let _ = out.push((node, request), GFP_KERNEL);
                }
            }
        }
        for (node, m) in out.iter() {
            send(*node, *m);
        }
    }

    /// A message from a lender's daemon: OFFER, ACK or REVOKE.
    fn message(self: &Arc<Self>, from: u32, word: u64) {
        let m = match KramMsg::decode_for_driver(word) {
            Ok(m) if u32::from(m.node) == from => m,
            _ => {
                self.malformed.fetch_add(1, Ordering::Relaxed);
                if self.noisy.allow(self.epoch.now()) {
                    pr_warn!("malformed message {:#018x} from node {} dropped\n", word, from);
                }
                return;
            }
        };
        match m.opcode {
            to_driver::OFFER => self.offer(from, m),
            to_driver::ACK => self.ack(from, m),
            _ => self.revoke(from, m),
        }
    }

    /// The lease of `inst` that `m` names, if any.
    fn with_lease(&self, from: u32, m: &KramMsg, f: impl FnOnce(&Instance, &mut InstanceState, usize)) -> bool {
        let Some(inst) = self.instances.get(usize::from(m.instance)) else { return false };
        let mut state = inst.state.lock();
        let Some(i) = state.find(from, m.first_chunk, m.chunks) else { return false };
        f(inst, &mut state, i);
        true
    }

    fn ack(self: &Arc<Self>, from: u32, m: KramMsg) {
        let now = self.epoch.now();
        let mut complete = false;
        let found = self.with_lease(from, &m, |inst, state, i| {
            let first = !state.leases[i].clock.acked();
            if state.leases[i].clock.ack(m.tag, now) && first {
                pr_info!("kram{}: node {} confirmed chunks {}+{}\n", inst.id, from, m.first_chunk, m.chunks);
                complete = state.disk.is_none()
                    && state.have() == inst.size_mib
                    && state.leases.iter().all(|l| l.clock.acked());
            }
        });
        let counter = if found { &self.acks } else { &self.stray };
        counter.fetch_add(1, Ordering::Relaxed);
        if complete {
            let _ = workqueue::system_percpu().enqueue::<Arc<Kram>, 2>(self.clone());
        }
    }

    /// The lender says a range is not ours: never touch it again, nor FREE it.
    fn revoke(&self, from: u32, m: KramMsg) {
        let found = self.with_lease(from, &m, |inst, state, i| {
            state.leases[i].clock.revoke();
            if state.disk.is_some() {
                state.lost = true;
                pr_crit!(
                    "kram{}: node {} revoked chunks {}+{} (lease lapsed): what /dev/kram{} kept there is lost, its I/O fails\n",
                    inst.id, from, m.first_chunk, m.chunks, inst.id
                );
            } else {
                // Not in use yet: forget it, ask again.
                pr_warn!("kram{}: node {} revoked chunks {}+{} before use; asking again\n", inst.id, from, m.first_chunk, m.chunks);
                state.leases.remove(i).ok();
            }
        });
        let counter = if found { &self.revokes } else { &self.stray };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// OFFER: taken if the instance still needs that much and has no part on that lender.
    fn offer(&self, from: u32, m: KramMsg) {
        let decline = || {
            self.declined.fetch_add(1, Ordering::Relaxed);
            send(from, m.reply(to_daemon::DECLINE, self.me(), 0));
        };
        let Some(inst) = self.instances.get(usize::from(m.instance)) else {
            if self.noisy.allow(self.epoch.now()) {
                pr_warn!("offer from node {} for unknown instance {}\n", from, m.instance);
            }
            return decline();
        };
        let base = match self.lease_base(from, m.first_chunk, m.chunks) {
            Ok(b) => b,
            Err(_) => {
                self.malformed.fetch_add(1, Ordering::Relaxed);
                if self.noisy.allow(self.epoch.now()) {
                    pr_warn!("offer from node {} of chunks {}+{} lies outside its partition\n", from, m.first_chunk, m.chunks);
                }
                return;
            }
        };
        let tag = {
            let mut state = inst.state.lock();
            let need = inst.size_mib - state.have();
            let exact = m.version != V2 && state.leases.is_empty();
            if self.stopping.load(Ordering::Acquire)
                || state.disk.is_some()
                || m.chunks > need
                || (exact && m.chunks != need)
                || state.leases.iter().any(|l| l.node == from)
            {
                drop(state);
                return decline();
            }
            let lease = Lease { node: from, first_chunk: m.first_chunk, chunks: m.chunks, base, clock: LeaseClock::new() };
            let tag = lease.clock.stamp(self.epoch.now());
            let Ok(lease) = Arc::new(lease, GFP_KERNEL) else {
                drop(state);
                return decline();
            };
            if state.leases.push(lease, GFP_KERNEL).is_err() {
                drop(state);
                return decline();
            }
            tag
        };
        self.confirmed.fetch_add(1, Ordering::Relaxed);
        send(from, m.reply(to_daemon::CONFIRM, self.me(), tag));
        pr_info!("kram{}: node {} offers chunks {}+{}; confirmed\n", inst.id, from, m.first_chunk, m.chunks);
    }

    /// GAS offset and length of a lender's chunks, checked to lie in its partition.
    fn lease_range(&self, node: u32, first: u32, chunks: u32) -> Result<(usize, usize)> {
        let info = &self.info;
        let (offset, len) = lent_range(info.ctl_size, info.partition_size, node, first, chunks).ok_or(EINVAL)?;
        if node >= info.node_count || node == info.node_id || offset + len > info.gas_size {
            return Err(EINVAL);
        }
        Ok((offset as usize, len as usize))
    }

    fn lease_base(&self, node: u32, first: u32, chunks: u32) -> Result<*mut u8> {
        let (offset, _) = self.lease_range(node, first, chunks)?;
        // SAFETY: `[offset, offset + len)` lies inside the GAS window (checked by `lease_range`).
        Ok(unsafe { self.info.gas_virt.add(offset) })
    }

    /// Gives a lease back at unload: zeroed, so that the lender's next borrower cannot read
    /// this node's swapped-out pages, then FREE. A lease that is revoked or lapsed may be
    /// someone else's by now: left alone (the lender wipes what expires).
    fn give_back(&self, id: u32, l: &Lease) {
        if !l.clock.usable(self.epoch.now()) {
            pr_warn!("kram{}: chunks {}+{} of node {} not valid any more: not touched, the lender reclaims them\n", id, l.first_chunk, l.chunks, l.node);
            return;
        }
        // SAFETY: the lease's chunks are mapped at `base` (its invariant); its disk is gone,
        // so nothing else uses them.
        unsafe { core::ptr::write_bytes(l.base, 0, l.len() as usize) };
        send(l.node, KramMsg::new(to_daemon::FREE, self.me(), id as u8, l.first_chunk, l.chunks, 0));
        pr_info!("kram{}: returned chunks {}+{} to node {}\n", id, l.first_chunk, l.chunks, l.node);
    }

    fn new_disk(&self, inst: &Instance, state: &InstanceState) -> Result<GenDisk<KramDisk>> {
        let mut parts = KVec::with_capacity(state.leases.len(), GFP_KERNEL)?;
        let mut offset = 0u64;
        for l in state.leases.iter() {
            parts.push((offset, l.clone()), GFP_KERNEL)?;
            offset += l.len();
        }
        let backing = KBox::new(Backing { parts, len: offset, transfer: self.transfer, epoch: self.epoch }, GFP_KERNEL)?;
        let tagset = Arc::pin_init(TagSet::new(1, 128, 1), GFP_KERNEL)?;
        GenDiskBuilder::new()
            .capacity_sectors(u64::from(inst.size_mib) << 11)
            .logical_block_size(4096)?
            .physical_block_size(4096)?
            .max_discard_sectors(u32::MAX >> 9)
            .build(fmt!("kram{}", inst.id), tagset, backing)
    }

    /// Adds the disk of every instance whose parts are all there and acknowledged.
    fn attach_disks(&self) {
        for inst in self.instances.iter() {
            let mut state = inst.state.lock();
            let ready = state.have() == inst.size_mib && state.leases.iter().all(|l| l.clock.acked());
            if state.disk.is_some() || !ready || self.stopping.load(Ordering::Acquire) {
                continue;
            }
            match self.new_disk(inst, &state) {
                Ok(disk) => {
                    pr_info!("kram{}: /dev/kram{} ready, {} MiB from {} lender(s)\n", inst.id, inst.id, inst.size_mib, state.leases.len());
                    state.disk = Some(disk);
                }
                Err(e) => {
                    pr_err!("kram{}: cannot create the disk: {:?}; returning the memory\n", inst.id, e);
                    for l in core::mem::take(&mut state.leases).iter() {
                        self.give_back(inst.id, l);
                    }
                }
            }
        }
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
        let now = self.epoch.now();
        for inst in self.instances.iter() {
            let state = inst.state.lock();
            let what = match (&state.disk, state.lost) {
                (Some(_), true) => "LOST (a part was revoked or lapsed)",
                (Some(_), false) => "ready",
                (None, _) => "waiting for lenders",
            };
            writeln!(f, "kram{} {} MiB: {} MiB lent, {}", inst.id, inst.size_mib, state.have(), what)?;
            for l in state.leases.iter() {
                let left = l.clock.left(now) / 1_000_000;
                let lease = if l.clock.is_revoked() {
                    "revoked"
                } else if !l.clock.acked() {
                    "not acknowledged yet"
                } else if left <= 0 {
                    "lapsed"
                } else {
                    "valid"
                };
                writeln!(f, "  node {} chunks {}+{}: {} ({} ms left)", l.node, l.first_chunk, l.chunks, lease, left.max(0))?;
            }
        }
        Ok(())
    }

    fn flush_works(&self) {
        // SAFETY: both work items are initialized and live as long as `self`.
        unsafe {
            bindings::flush_work(Work::<Kram, 1>::raw_get(&self.tick));
            bindings::flush_work(Work::<Kram, 2>::raw_get(&self.attach));
        }
    }
}

impl LenderSink for Kram {
    fn message(this: ArcBorrow<'_, Self>, from: u32, word: u64) {
        let kram: Arc<Kram> = this.into();
        kram.message(from, word);
    }
}

fn validated_params() -> Result<(KVec<u32>, Transfer)> {
    let n = *module_parameters::ninstances.value_ref();
    if n == 0 || n > MAX_INSTANCES {
        pr_err!("ninstances={} is out of range (1-{})\n", n, MAX_INSTANCES);
        return Err(EINVAL);
    }
    let sizes = module_parameters::size.value_ref();
    if sizes.as_slice().len() != n as usize {
        pr_err!("size: {} size(s) given for ninstances={} (one per instance, e.g. size=32,64)\n", sizes.as_slice().len(), n);
        return Err(EINVAL);
    }
    let transfer = match *module_parameters::transfermode.value_ref() {
        0 => Transfer::Memcpy,
        1 => Transfer::Cdma,
        t => {
            pr_err!("transfermode={} is invalid (0 = memcpy, 1 = CDMA engine)\n", t);
            return Err(EINVAL);
        }
    };
    let mut v = KVec::with_capacity(n as usize, GFP_KERNEL)?;
    for &mib in sizes.as_slice() {
        v.push(mib, GFP_KERNEL)?;
    }
    Ok((v, transfer))
}

struct KramModule {
    _stats: Pin<KBox<debugfs::File<Arc<Kram>>>>,
    _dir: debugfs::Dir,
    kram: Arc<Kram>,
    timer: ArcHrTimerHandle<Kram>,
}

impl kernel::Module for KramModule {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let (sizes, transfer) = validated_params()?;
        // SAFETY: all-zero is a valid `FabricInfo` (integers and a null pointer).
        let mut info: fabric_api::FabricInfo = unsafe { core::mem::zeroed() };
        // SAFETY: `info` is writable.
        let ret = unsafe { fabric_api::unimem_fabric_info(&mut info) };
        if ret != 0 {
            pr_err!("no fabric device: is unimem_eusrvmem loaded and bound? ({})\n", ret);
            return Err(ENODEV);
        }
        let mut instances = KVec::with_capacity(sizes.len(), GFP_KERNEL)?;
        for (id, &size_mib) in sizes.iter().enumerate() {
            instances.push(
                KBox::pin_init(
                    pin_init!(Instance {
                        id: id as u32,
                        size_mib,
                        state <- new_mutex!(InstanceState { leases: KVec::new(), disk: None, lost: false }, "unimem_kram::instance"),
                    }),
                    GFP_KERNEL,
                )?,
                GFP_KERNEL,
            )?;
        }
        let kram = Arc::pin_init(
            pin_init!(Kram {
                info,
                transfer,
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
                timer <- HrTimer::new(),
                tick <- new_work!("unimem_kram::tick"),
                attach <- new_work!("unimem_kram::attach"),
            }),
            GFP_KERNEL,
        )?;
        // Everything fallible comes before the offer callback: nothing may fail once it is in.
        let dir = debugfs::Dir::new(c"unimem_kram");
        let stats = KBox::pin_init(
            dir.read_callback_file(c"stats", kram.clone(), &|k: &Arc<Kram>, f| k.write_stats(f)),
            GFP_KERNEL,
        )?;
        set_handler(service::KRAM_DRIVER, Some(&kram)).inspect_err(|e| {
            pr_err!("cannot take the KRAM_DRIVER service (another unimem_kram?): {:?}\n", e);
        })?;
        let timer = kram.clone().start(PERIOD);
        let _ = workqueue::system_percpu().enqueue::<Arc<Kram>, 1>(kram.clone());
        let mode = match transfer {
            Transfer::Cdma => "1 (CDMA engine, emulated)",
            Transfer::Memcpy => "0 (memcpy)",
        };
        pr_info!(
            "node {}: {} instance(s), transfermode {}; asking lenders every second\n",
            info.node_id,
            sizes.len(),
            mode
        );
        Ok(Self { _stats: stats, _dir: dir, kram, timer })
    }
}

impl Drop for KramModule {
    fn drop(&mut self) {
        let kram = &self.kram;
        kram.stopping.store(true, Ordering::Release);
        self.timer.cancel();
        // No more ticks (waits for a running callback), no more offers (waits for a running one), then no more queued work.
        let _ = set_handler::<Kram>(service::KRAM_DRIVER, None);
        kram.flush_works();
        for inst in kram.instances.iter() {
            let mut state = inst.state.lock();
            // Deleting the disk waits for its requests; only then can the memory go back.
            drop(state.disk.take());
            for l in core::mem::take(&mut state.leases).iter() {
                kram.give_back(inst.id, l);
            }
        }
    }
}
