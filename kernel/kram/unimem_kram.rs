// SPDX-License-Identifier: GPL-2.0
//! unimem KRAM: swap devices whose storage is memory lent by other nodes (seed 000 2.5-2.6).
//!
//! `insmod unimem_kram.ko ninstances=2 size=32,64 transfermode=1`: an hrtimer fires about every
//! second; while an instance has no lender, a work item asks every other node's kram-daemon
//! for `size` MiB (REQUEST). The first OFFER for an instance is CONFIRMed, later ones are
//! DECLINEd, and a work item maps the lent range and adds `/dev/kram<N>`. On unload the disks
//! go away and every lender gets FREE. The disks pin the module while open (kernel patch
//! 0005), so unloading under a mount or active swap is refused.

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

use disk::{Backing, KramDisk, Transfer};
use kram_client::{send, set_offer_handler, OfferSink};
use mailbox::service;
use wire::kram::{lent_range, to_daemon, KramMsg, MAX_INSTANCES};

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
            description: "Size in MiB of each device, comma separated, one per instance (1-255 each)",
        },
        transfermode: u32 {
            default: 1,
            description: "How data is copied: 1 = CDMA engine (emulated, asynchronous completion), 0 = memcpy",
        },
    },
}

use params::SizeList;

/// The memory one lender gave one instance.
#[derive(Clone, Copy)]
struct Lease {
    node: u32,
    first_chunk: u32,
    chunks: u32,
}

struct InstanceState {
    lease: Option<Lease>,
    disk: Option<GenDisk<KramDisk>>,
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
    instances: KVec<Pin<KBox<Instance>>>,
    /// Set at unload: no new requests, no new disks.
    stopping: AtomicBool,
    /// Offers confirmed and declined, and daemon messages dropped as malformed.
    confirmed: AtomicU64,
    declined: AtomicU64,
    malformed: AtomicU64,
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
        this.ask_lenders();
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

    /// REQUEST memory for every instance without a lender from every other node.
    fn ask_lenders(&self) {
        for inst in self.instances.iter() {
            if inst.state.lock().lease.is_some() {
                continue;
            }
            let msg = KramMsg {
                opcode: to_daemon::REQUEST,
                node: self.me(),
                instance: inst.id as u8,
                first_chunk: 0,
                chunks: inst.size_mib as u8,
                align: 0,
            };
            for node in (0..self.info.node_count).filter(|&n| n != self.info.node_id) {
                send(node, msg);
            }
        }
    }

    /// OFFER from a daemon: the first one for an instance wins.
    fn offer(self: &Arc<Self>, from: u32, word: u64) {
        let Ok(m) = KramMsg::decode_for_driver(word) else {
            self.malformed.fetch_add(1, Ordering::Relaxed);
            pr_warn!("malformed message {:#018x} from node {} dropped\n", word, from);
            return;
        };
        let reply = |opcode| {
            let counter = if opcode == to_daemon::CONFIRM { &self.confirmed } else { &self.declined };
            counter.fetch_add(1, Ordering::Relaxed);
            KramMsg { opcode, node: self.me(), ..m }
        };
        let Some(inst) = self.instances.get(usize::from(m.instance)) else {
            pr_warn!("offer from node {} for unknown instance {}\n", from, m.instance);
            return send(from, reply(to_daemon::DECLINE));
        };
        if u32::from(m.node) != from || u32::from(m.chunks) != inst.size_mib || self.stopping.load(Ordering::Acquire) {
            return send(from, reply(to_daemon::DECLINE));
        }
        {
            let mut state = inst.state.lock();
            if state.lease.is_some() {
                drop(state);
                return send(from, reply(to_daemon::DECLINE));
            }
            state.lease = Some(Lease { node: from, first_chunk: u32::from(m.first_chunk), chunks: u32::from(m.chunks) });
        }
        send(from, reply(to_daemon::CONFIRM));
        pr_info!("kram{}: node {} lends chunks {}+{}\n", inst.id, from, m.first_chunk, m.chunks);
        let _ = workqueue::system_percpu().enqueue::<Arc<Kram>, 2>(self.clone());
    }

    /// GAS offset and length of a lease, checked to lie in the lender's partition.
    fn lease_range(&self, lease: Lease) -> Result<(usize, usize)> {
        let info = &self.info;
        let (offset, len) = lent_range(info.ctl_size, info.partition_size, lease.node, lease.first_chunk, lease.chunks)
            .ok_or(EINVAL)?;
        if lease.node >= info.node_count || offset + len > info.gas_size {
            return Err(EINVAL);
        }
        Ok((offset as usize, len as usize))
    }

    fn backing(&self, lease: Lease) -> Result<KBox<Backing>> {
        let (offset, len) = self.lease_range(lease)?;
        // SAFETY: `[offset, offset + len)` lies inside the GAS window (checked by `lease_range`).
        let base = unsafe { self.info.gas_virt.add(offset) };
        Ok(KBox::new(Backing { base, len: len as u64, transfer: self.transfer }, GFP_KERNEL)?)
    }

    /// Zeroes a lease before it goes back, so that the lender's next borrower cannot read
    /// this node's swapped-out pages.
    fn wipe(&self, lease: Lease) {
        if let Ok((offset, len)) = self.lease_range(lease) {
            // SAFETY: the range lies inside the GAS window (checked by `lease_range`), mapped
            // while unimem_eusrvmem is loaded; its disk is gone, so nothing else uses it.
            unsafe { core::ptr::write_bytes(self.info.gas_virt.add(offset), 0, len) };
        }
    }

    fn new_disk(&self, inst: &Instance, lease: Lease) -> Result<GenDisk<KramDisk>> {
        let tagset = Arc::pin_init(TagSet::new(1, 128, 1), GFP_KERNEL)?;
        GenDiskBuilder::new()
            .capacity_sectors(u64::from(inst.size_mib) << 11)
            .logical_block_size(4096)?
            .physical_block_size(4096)?
            .max_discard_sectors(u32::MAX >> 9)
            .build(fmt!("kram{}", inst.id), tagset, self.backing(lease)?)
    }

    /// Adds the disk of every instance that has a lender and no disk yet.
    fn attach_disks(&self) {
        for inst in self.instances.iter() {
            let mut state = inst.state.lock();
            let Some(lease) = state.lease else { continue };
            if state.disk.is_some() || self.stopping.load(Ordering::Acquire) {
                continue;
            }
            match self.new_disk(inst, lease) {
                Ok(disk) => {
                    pr_info!("kram{}: /dev/kram{} ready, {} MiB on node {}\n", inst.id, inst.id, inst.size_mib, lease.node);
                    state.disk = Some(disk);
                }
                Err(e) => {
                    pr_err!("kram{}: cannot create the disk: {:?}; returning the memory\n", inst.id, e);
                    state.lease = None;
                    send(lease.node, free_msg(self.me(), inst.id, lease));
                }
            }
        }
    }

    fn write_stats(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
        writeln!(
            f,
            "offers confirmed {}, declined {}, malformed {}",
            load(&self.confirmed),
            load(&self.declined),
            load(&self.malformed)
        )?;
        for inst in self.instances.iter() {
            let state = inst.state.lock();
            match state.lease {
                Some(l) => writeln!(
                    f,
                    "kram{} {} MiB: node {} chunks {}+{}{}",
                    inst.id,
                    inst.size_mib,
                    l.node,
                    l.first_chunk,
                    l.chunks,
                    if state.disk.is_some() { "" } else { " (disk pending)" }
                )?,
                None => writeln!(f, "kram{} {} MiB: waiting for a lender", inst.id, inst.size_mib)?,
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

fn free_msg(me: u8, id: u32, lease: Lease) -> KramMsg {
    KramMsg {
        opcode: to_daemon::FREE,
        node: me,
        instance: id as u8,
        first_chunk: lease.first_chunk as u8,
        chunks: lease.chunks as u8,
        align: 0,
    }
}

impl OfferSink for Kram {
    fn offer(this: ArcBorrow<'_, Self>, from: u32, word: u64) {
        let kram: Arc<Kram> = this.into();
        kram.offer(from, word);
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
                        state <- new_mutex!(InstanceState { lease: None, disk: None }, "unimem_kram::instance"),
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
                instances,
                stopping: AtomicBool::new(false),
                confirmed: AtomicU64::new(0),
                declined: AtomicU64::new(0),
                malformed: AtomicU64::new(0),
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
        set_offer_handler(service::KRAM_DRIVER, Some(&kram)).inspect_err(|e| {
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
        let _ = set_offer_handler::<Kram>(service::KRAM_DRIVER, None);
        kram.flush_works();
        for inst in kram.instances.iter() {
            let mut state = inst.state.lock();
            // Deleting the disk waits for its requests; only then can the memory go back.
            drop(state.disk.take());
            if let Some(lease) = state.lease.take() {
                kram.wipe(lease);
                send(lease.node, free_msg(kram.me(), inst.id, lease));
                pr_info!("kram{}: returned chunks {}+{} to node {}\n", inst.id, lease.first_chunk, lease.chunks, lease.node);
            }
        }
    }
}
