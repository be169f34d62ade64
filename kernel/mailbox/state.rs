// SPDX-License-Identifier: GPL-2.0
//! The node's mailbox: interface table, packet send/receive over the GAS rings, doorbells.

use crate::{
    doorbell_limit::DoorbellLimit,
    fabric_client::{Access, Gas},
    gsas::{owner, SERVICE_IFACE, USER_INTERFACES},
    iface::Iface,
    kmsg::Services,
    kmsg_api::PacketHandler,
    log_limit::LogLimit,
    mailbox::{layout, Kmsg, DOORBELL_VECTOR, INTERFACES},
    maps::UserMaps,
    packet::{Header, Packet, PACKET_LEN, PAYLOAD_LEN},
    ring::{Resynced, Ring},
};
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use kernel::{
    bindings,
    ffi::c_void,
    new_mutex, new_spinlock_irq,
    prelude::*,
    sync::{Arc, ArcBorrow, Mutex, SpinLockIrq},
    time::{Instant, Monotonic},
    workqueue::{self, impl_has_work, new_work, Work, WorkItem},
};

/// Interfaces threads cannot allocate: `USER_INTERFACES..INTERFACES`, served by kernel clients.
pub(crate) const KERNEL_IFACES: usize = (INTERFACES - USER_INTERFACES) as usize;

/// A kernel service on one of the kernel's interfaces (`unimem_mbox_serve`).
#[derive(Clone, Copy)]
struct Served {
    func: PacketHandler,
    ctx: usize,
}

#[pin_data]
pub(crate) struct State {
    pub(crate) node: u32,
    pub(crate) nodes: u32,
    gas: Arc<Gas>,
    ctl_size: usize,
    partition_size: usize,
    pub(crate) ifaces: KVec<Pin<KBox<Iface>>>,
    /// Serializes this node's producers per destination node (one producer per ring).
    send_locks: KVec<Pin<KBox<SpinLockIrq<()>>>>,
    #[pin]
    pub(crate) services: Services,
    #[pin]
    pub(crate) work: Work<State>,
    /// How long the dispatch work keeps polling the served rings after serving packets
    /// (`poll_us`); 0: never.
    pub(crate) poll_ns: u64,
    /// The current polling window (ns, at most `poll_ns`), and when the last one ended (ns
    /// since `epoch`); only the dispatch work, which never runs twice at once, writes them.
    pub(crate) poll_window: AtomicU64,
    pub(crate) poll_idle_at: AtomicU64,
    /// Numbers the owner-table publications of this load (`submit.rs`), from a random start.
    pub(crate) publications: AtomicU32,
    /// Per (peer node, user interface): the submission this node's service last took from
    /// that peer's slot (`submit.rs`). Written by the one consumer of the service's rings.
    pub(crate) last_taken: KVec<AtomicU64>,
    /// Peer-caused warnings; the counters above count everything.
    noisy: LogLimit,
    pub(crate) epoch: Instant<Monotonic>,
    /// Set at module exit: the dispatch work no longer queues itself again.
    pub(crate) stopping: AtomicBool,
    /// Kernel services of the interfaces `USER_INTERFACES..`; held while a handler runs (so
    /// removal waits for it) and while their rings are read (one consumer).
    #[pin]
    served: Mutex<[Option<Served>; KERNEL_IFACES]>,
    /// Mirrors `served` for the doorbell handler.
    serving: [AtomicBool; KERNEL_IFACES],
    /// The next serial to try for a protection tree made on this node. Also serializes `alloc`
    /// (`owners.rs`).
    #[pin]
    pub(crate) trees: Mutex<u16>,
    /// User mappings of interface areas and partition pages (`maps.rs`).
    #[pin]
    pub(crate) maps: UserMaps,
    /// The node's totals (`sysfs.rs`).
    pub(crate) counters: Counters,
    /// The rate of doorbells users cause without queuing anything new.
    doorbell_limit: DoorbellLimit,
}

/// Node-wide counters, shown in `/sys/kernel/unimem_mailbox/`.
#[derive(Default)]
pub(crate) struct Counters {
    /// Polling windows entered, and packets served while polling (`poll.rs`).
    pub(crate) busy_polls: AtomicU64,
    pub(crate) busy_poll_packets: AtomicU64,
    /// Doorbells this node did not ring because the destination polled the ring.
    pub(crate) doorbells_skipped: AtomicU64,
    /// `KICK`s and full-ring `SEND`s whose doorbell waited for `doorbell_rate`.
    pub(crate) doorbells_throttled: AtomicU64,
    /// Ring entries rejected on receipt (bad header, wrong sender).
    pub(crate) malformed: AtomicU64,
    /// Receive rings found with impossible indices (more than a ring's worth queued) and reset.
    pub(crate) resynced: AtomicU64,
    /// Requests taken from submission slots, and `KICK`s this node's threads asked for.
    pub(crate) submitted: AtomicU64,
    pub(crate) kicks: AtomicU64,
    /// `ALLOC`s refused because every free interface still had a previous owner's request
    /// applied somewhere, and because no fresh tree id was found (`owners.rs`).
    pub(crate) quarantined: AtomicU64,
    pub(crate) trees_exhausted: AtomicU64,
}

/// What [`State::take_packet`] found.
pub(crate) enum Take {
    Packet([u8; PACKET_LEN]),
    Empty,
    /// The fabric device is gone.
    Gone,
    /// Nothing valid in this pass, but peers queued more since: try again (not under the lock).
    Again,
}

// SAFETY: the window is reached only through `gas` accesses; everything else is synchronized by
// locks or atomics.
unsafe impl Send for State {}
// SAFETY: see `Send`.
unsafe impl Sync for State {}

impl_has_work! {
    impl HasWork<Self> for State { self.work }
}

impl WorkItem for State {
    type Pointer = Arc<State>;

    fn run(this: Arc<State>) {
        let started = this.now_ns();
        // One ring's worth per sender and run; a peer that keeps its ring full gets another run
        // later, not a CPU spinning here.
        let more = this.drain_kmsgs();
        let (served, more_served) = this.drain_served();
        let more = more || more_served || (served > 0 && this.busy_poll(started));
        if served == 0 {
            // The flags are ours to write, but a peer may have scribbled on them: a run that did
            // not poll leaves them cleared, so senders ring again (polling clears its own).
            this.set_polling(false);
        }
        if more && !this.stopping.load(Ordering::Acquire) {
            // Already queued is fine: that run will see the rest.
            let _ = workqueue::system_percpu().enqueue(this);
        }
    }
}

impl State {
    pub(crate) fn new(gas: Arc<Gas>, poll_ns: u64, doorbell_rate: u32) -> Result<Arc<Self>> {
        let info = *gas.info();
        // The rings, then the interfaces' GSAS areas (mapped into their threads).
        let reserved = (layout::RESERVED as u64).max(owner::TABLE_END);
        let partitions_end = u64::from(info.node_count)
            .checked_mul(info.partition_size)
            .and_then(|p| p.checked_add(info.ctl_size));
        if info.partition_size < reserved
            || partitions_end.is_none_or(|end| end > info.gas_size)
            || info.node_count == 0
            || info.node_count > crate::gas::MAX_NODES
            || info.vectors <= DOORBELL_VECTOR
        {
            pr_err!(
                "fabric unusable: partitions of {} bytes (need {}), {} doorbell vectors (need {}), {} nodes (1 to {})\n",
                info.partition_size,
                reserved,
                info.vectors,
                DOORBELL_VECTOR + 1,
                info.node_count,
                crate::gas::MAX_NODES
            );
            return Err(EINVAL);
        }
        let mut ifaces = KVec::with_capacity(INTERFACES as usize, GFP_KERNEL)?;
        for _ in 0..INTERFACES {
            // SAFETY: `get_random_u32` has no preconditions. A random start keeps owners of a
            // previous load from matching this load's.
            let generation = unsafe { bindings::get_random_u32() };
            ifaces.push(
                KBox::pin_init(Iface::new(generation), GFP_KERNEL)?,
                GFP_KERNEL,
            )?;
        }
        let slots = info.node_count as usize * USER_INTERFACES as usize;
        let mut last_taken = KVec::with_capacity(slots, GFP_KERNEL)?;
        for _ in 0..slots {
            last_taken.push(AtomicU64::new(0), GFP_KERNEL)?;
        }
        let mut send_locks = KVec::with_capacity(info.node_count as usize, GFP_KERNEL)?;
        for _ in 0..info.node_count {
            send_locks.push(
                KBox::pin_init(new_spinlock_irq!((), "unimem_mailbox::send"), GFP_KERNEL)?,
                GFP_KERNEL,
            )?;
        }
        let doorbell_limit = DoorbellLimit::new(info.node_count, doorbell_rate)?;
        let state = Arc::pin_init(
            try_pin_init!(State {
                node: info.node_id,
                nodes: info.node_count,
                gas,
                ctl_size: info.ctl_size as usize,
                partition_size: info.partition_size as usize,
                ifaces,
                send_locks,
                services <- Services::new(),
                work <- new_work!("unimem_mailbox::kmsg"),
                poll_ns,
                poll_window: AtomicU64::new(0),
                poll_idle_at: AtomicU64::new(0),
                // SAFETY: `get_random_u32` has no preconditions. A random start keeps a peer's
                // memory of this node's previous load from matching a new owner.
                publications: AtomicU32::new(unsafe { bindings::get_random_u32() }),
                last_taken,
                noisy: LogLimit::new(),
                epoch: Instant::now(),
                stopping: AtomicBool::new(false),
                served <- new_mutex!([None; KERNEL_IFACES], "unimem_mailbox::served"),
                serving: [const { AtomicBool::new(false) }; KERNEL_IFACES],
                // SAFETY: `get_random_u32` has no preconditions. A random start makes it less
                // likely that a tree id of a previous load (whose GSAS pages may still exist)
                // is handed out again soon.
                trees <- new_mutex!((unsafe { bindings::get_random_u32() } as u16).max(1), "unimem_mailbox::trees"),
                maps <- UserMaps::new(),
                counters: Counters::default(),
                doorbell_limit,
            }? Error),
            GFP_KERNEL,
        )?;
        // Rings in our partition may hold anything: a previous run's entries, or bytes a
        // privileged tool wrote there. Start from empty rings.
        let w = state.gas.access().ok_or(ENODEV)?;
        for sender in 0..state.nodes {
            for iface in 0..INTERFACES {
                state.packet_ring(&w, state.node, iface, sender).reset();
            }
            state.kmsg_ring(&w, state.node, sender).reset();
        }
        state.reset_owner_table(&w);
        drop(w);
        Ok(state)
    }

    pub(crate) fn gas(&self) -> &Arc<Gas> {
        &self.gas
    }

    /// The kernel address of byte `offset` of node `node`'s partition, for callers that pass
    /// `node < nodes` and an offset inside the reserved start of a partition (`RESERVED` and
    /// the owner table end below `partition_size`, and the partitions lie inside the window:
    /// checked in `new`); usable while `w` lives.
    pub(crate) fn part_ptr(&self, w: &Access<'_>, node: u32, offset: usize) -> *mut u8 {
        let part = self.ctl_size + node as usize * self.partition_size;
        // Computing the address is safe; whoever dereferences it relies on the bounds above.
        w.base().wrapping_add(part + offset)
    }

    fn ring_at<'a>(&self, w: &'a Access<'_>, node: u32, offset: usize) -> Ring<'a> {
        // SAFETY: `node < nodes` at every caller and `offset + RING_STRIDE <= RESERVED`, so the
        // ring lies inside the partition (`part_ptr`), which `w` keeps usable.
        unsafe { Ring::new(self.part_ptr(w, node, offset)) }
    }

    /// Ring of `iface` on node `dest` that this node's `sender` feeds.
    pub(crate) fn packet_ring<'a>(
        &self,
        w: &'a Access<'_>,
        dest: u32,
        iface: u32,
        sender: u32,
    ) -> Ring<'a> {
        self.ring_at(w, dest, layout::packet_ring(iface, sender))
    }

    pub(crate) fn kmsg_ring<'a>(&self, w: &'a Access<'_>, dest: u32, sender: u32) -> Ring<'a> {
        self.ring_at(w, dest, layout::kmsg_ring(sender))
    }

    /// Sends `payload` from local interface `from` to interface `iface` of node `node`. The
    /// header comes from the interface's owner record, never from the caller. `true` if the
    /// receiver was polling (no doorbell rung): the caller may use its submission slot next.
    pub(crate) fn send(
        &self,
        from: u32,
        node: u32,
        iface: u32,
        payload: &[u8; PAYLOAD_LEN],
    ) -> Result<bool> {
        if node >= self.nodes || iface >= INTERFACES {
            return Err(EINVAL);
        }
        let src = self.ifaces.get(from as usize).ok_or(EINVAL)?;
        let prot_id = src.owner.lock().ok_or(EINVAL)?.prot_id;
        let header = Header {
            node: self.node as u8,
            iface: from as u16,
            prot_id,
        };
        let packet = Packet::seal(header, payload);
        if node == self.node && self.serve_now(iface, &packet) {
            Iface::count(&src.sent);
            return Ok(false);
        }
        let (pushed, polled) = {
            let _producer = self.send_locks[node as usize].lock();
            let w = self.gas.access().ok_or(ENODEV)?;
            let ring = self.packet_ring(&w, node, iface, self.node);
            let pushed = ring.push(&packet);
            // Only kernel services poll; a user interface's receiver sleeps until rung.
            let polled = pushed && iface >= USER_INTERFACES && ring.consumer_polling();
            (pushed, polled)
        };
        if !pushed {
            Iface::count(&src.rejected);
            // Still ring: a receiver that missed a doorbell, or whose ring indices are damaged,
            // drains (or repairs) the ring when it hears one. Nothing new was queued: at the
            // limited rate.
            self.throttle(node);
            self.notify(node);
            return Err(EAGAIN);
        }
        Iface::count(&src.sent);
        if polled {
            self.counters
                .doorbells_skipped
                .fetch_add(1, Ordering::Relaxed);
        } else {
            self.notify(node);
        }
        Ok(polled)
    }

    /// `KICK`: rings node `node`, whose service a local thread left a request in a submission
    /// slot for and did not hear from.
    pub(crate) fn kick_node(&self, node: u32) -> Result {
        if node >= self.nodes {
            return Err(EINVAL);
        }
        self.counters.kicks.fetch_add(1, Ordering::Relaxed);
        self.throttle(node);
        self.notify(node);
        Ok(())
    }

    /// `doorbell_rate`, for the counters.
    pub(crate) fn doorbell_rate(&self) -> u64 {
        self.doorbell_limit.per_ms()
    }

    /// Waits until a doorbell to `node` that queues nothing new is due (`doorbell_limit.rs`).
    /// Process context.
    fn throttle(&self, node: u32) {
        if self.doorbell_limit.wait(node, self.now_ns()) {
            self.counters
                .doorbells_throttled
                .fetch_add(1, Ordering::Relaxed);
        }
    }

    /// One receive pass over `ring` (fed by `sender`): takes entries until one that `decode`
    /// accepts, at most the ring's worth published when the pass started. Rejected entries are
    /// counted as malformed and dropped, impossible indices resync the ring; both are logged at
    /// a limited rate, since a peer causes them.
    fn next_valid<T>(
        &self,
        ring: Ring<'_>,
        sender: u32,
        what: &str,
        decode: impl Fn(&[u8; layout::SLOT_LEN]) -> Option<T>,
    ) -> Option<T> {
        let mut pass = match ring.pass() {
            Ok(pass) => pass,
            Err(Resynced) => {
                self.counters.resynced.fetch_add(1, Ordering::Relaxed);
                if self.noisy.allow(self.epoch.elapsed().as_nanos()) {
                    pr_warn!(
                        "{} ring of node {} had impossible indices: resynced (rate-limited)\n",
                        what,
                        sender
                    );
                }
                return None;
            }
        };
        let mut slot = [0u8; layout::SLOT_LEN];
        while pass.next(&mut slot) {
            if let Some(item) = decode(&slot) {
                return Some(item);
            }
            self.counters.malformed.fetch_add(1, Ordering::Relaxed);
            if self.noisy.allow(self.epoch.elapsed().as_nanos()) {
                pr_warn!(
                    "malformed entry from node {} in a {} ring dropped (rate-limited)\n",
                    sender,
                    what
                );
            }
        }
        None
    }

    /// Takes the next valid packet for local interface `id`, visiting senders round-robin
    /// from `start` (a free-running counter). Bounded: one pass per sender's ring.
    pub(crate) fn take_packet(&self, id: u32, start: u32) -> Take {
        let Some(w) = self.gas.access() else {
            return Take::Gone;
        };
        // `nodes <= MAX_NODES`, so `first + k` cannot overflow, whatever `start` is.
        let first = start % self.nodes;
        for k in 0..self.nodes {
            let sender = (first + k) % self.nodes;
            let packet = self.next_valid(
                self.packet_ring(&w, self.node, id, sender),
                sender,
                "packet",
                |slot| {
                    // The ring says who the producer was; a header claiming otherwise was not
                    // written by that node's driver.
                    let p = Packet::decode(slot).ok()?;
                    (u32::from(p.header.node) == sender && u32::from(p.header.iface) < INTERFACES)
                        .then(|| {
                            let mut out = [0u8; PACKET_LEN];
                            out.copy_from_slice(&slot[..PACKET_LEN]);
                            out
                        })
                },
            );
            if let Some(packet) = packet {
                return Take::Packet(packet);
            }
        }
        if self.queued(&w, id) {
            Take::Again
        } else {
            Take::Empty
        }
    }

    fn queued(&self, w: &Access<'_>, id: u32) -> bool {
        (0..self.nodes).any(|s| !self.packet_ring(w, self.node, id, s).is_empty())
    }

    /// Whether packets wait for local interface `id` (none once the fabric is gone).
    pub(crate) fn has_packet(&self, id: u32) -> bool {
        self.gas.access().is_some_and(|w| self.queued(&w, id))
    }

    /// Wakes every sleeping receiver, so that it looks again (and finds the fabric gone).
    pub(crate) fn wake_all(&self) {
        for iface in self.ifaces.iter() {
            let _owner = iface.owner.lock();
            iface.wait.notify_all();
        }
        self.services.wake_all();
    }

    /// Whether the fabric device is gone (every ioctl then fails with `ENODEV`).
    pub(crate) fn gone(&self) -> bool {
        self.gas.access().is_none()
    }

    /// Tells node `node` that something was queued for it.
    pub(crate) fn notify(&self, node: u32) {
        if node == self.node {
            self.kick();
        } else {
            if let Err(e) = self.gas.ring(node, DOORBELL_VECTOR) {
                // A user's KICK or SEND can get here: at a limited rate.
                if self.noisy.allow(self.epoch.elapsed().as_nanos()) {
                    pr_warn!("doorbell to node {} failed: {:?} (rate-limited)\n", node, e);
                }
            }
        }
    }

    /// Doorbell: wake receivers with queued packets, schedule kernel-message dispatch.
    /// Runs in hard-IRQ context (or from a local send).
    pub(crate) fn kick(&self) {
        let Some(w) = self.gas.access() else { return };
        for (id, iface) in self.ifaces.iter().enumerate() {
            if !iface.in_use.load(Ordering::Acquire) {
                continue;
            }
            // Taking the receivers' lock orders this wake-up after any check they made.
            let _owner = iface.owner.lock();
            if self.queued(&w, id as u32) {
                iface.wait.notify_all();
            }
        }
        drop(w);
        let (served, kmsgs) = self.dispatch_pending();
        if served || kmsgs {
            // SAFETY: `self` lives in an `Arc` (`State::new`) that outlives every doorbell
            // handler call and local send (the module keeps one reference until both stopped).
            let this: Arc<State> = unsafe { ArcBorrow::from_raw(self) }.into();
            // Already queued is fine: that run will see these messages too.
            let _ = workqueue::system_percpu().enqueue(this);
        }
    }

    /// Queues a kernel message for `service` on `node`.
    pub(crate) fn ksend(&self, node: u32, service: u32, word: u64) -> Result {
        if node >= self.nodes {
            return Err(EINVAL);
        }
        let msg = Kmsg {
            service,
            sender: self.node,
            word,
        };
        crate::kmsg::check_service(service)?;
        let pushed = {
            let _producer = self.send_locks[node as usize].lock();
            let w = self.gas.access().ok_or(ENODEV)?;
            self.kmsg_ring(&w, node, self.node).push(&msg.encode())
        };
        if !pushed {
            self.services.count_rejected(service);
            self.notify(node);
            return Err(EAGAIN);
        }
        self.services.count_sent(service);
        self.notify(node);
        Ok(())
    }

    /// Delivers what the kernel-message rings held when this pass started (at most one ring's
    /// worth per sender); `true` when peers have queued more since.
    fn drain_kmsgs(&self) -> bool {
        // Handlers may sleep, so not under the window access: each pass copies what one ring
        // held (at most `SLOTS` entries) and the messages are delivered after it.
        let Ok(mut batch) = KVec::<Kmsg>::with_capacity(layout::SLOTS as usize, GFP_KERNEL) else {
            return true;
        };
        for sender in 0..self.nodes {
            batch.clear();
            {
                let Some(w) = self.gas.access() else {
                    return false;
                };
                let mut pass = match self.kmsg_ring(&w, self.node, sender).pass() {
                    Ok(pass) => pass,
                    Err(Resynced) => {
                        self.counters.resynced.fetch_add(1, Ordering::Relaxed);
                        if self.noisy.allow(self.epoch.elapsed().as_nanos()) {
                            pr_warn!("message ring of node {} had impossible indices: resynced (rate-limited)\n", sender);
                        }
                        continue;
                    }
                };
                let mut slot = [0u8; layout::SLOT_LEN];
                while pass.next(&mut slot) {
                    match Kmsg::decode(&slot).ok().filter(|m| m.sender == sender) {
                        // A pass takes at most `SLOTS` entries, the capacity.
                        Some(m) => drop(batch.push_within_capacity(m)),
                        None => {
                            self.counters.malformed.fetch_add(1, Ordering::Relaxed);
                            if self.noisy.allow(self.epoch.elapsed().as_nanos()) {
                                pr_warn!(
                                    "malformed message from node {} dropped (rate-limited)\n",
                                    sender
                                );
                            }
                        }
                    }
                }
            }
            for m in batch.iter() {
                self.services.deliver(*m);
            }
        }
        self.gas
            .access()
            .is_some_and(|w| (0..self.nodes).any(|s| !self.kmsg_ring(&w, self.node, s).is_empty()))
    }

    /// Installs (`Some`) or removes (`None`, waiting for a running call) the kernel service of
    /// interface `iface` (`unimem_mbox_serve`).
    pub(crate) fn serve(
        &self,
        iface: u32,
        handler: Option<PacketHandler>,
        ctx: *mut c_void,
    ) -> Result {
        let k = iface
            .checked_sub(USER_INTERFACES)
            .map(|k| k as usize)
            .filter(|&k| k < KERNEL_IFACES)
            .ok_or(EINVAL)?;
        let mut served = self.served.lock();
        match handler {
            Some(func) => {
                if served[k].is_some() {
                    return Err(EBUSY);
                }
                // Sent while nobody served the interface: not for this service.
                let w = self.gas.access().ok_or(ENODEV)?;
                for sender in 0..self.nodes {
                    let stale = self.packet_ring(&w, self.node, iface, sender).discard();
                    self.ifaces[iface as usize]
                        .dropped
                        .fetch_add(u64::from(stale), Ordering::Relaxed);
                }
                if iface == SERVICE_IFACE {
                    self.skip_submissions(&w);
                }
                drop(w);
                served[k] = Some(Served {
                    func,
                    ctx: ctx as usize,
                });
                self.serving[k].store(true, Ordering::Release);
            }
            None => {
                self.serving[k].store(false, Ordering::Release);
                served[k] = None;
            }
        }
        Ok(())
    }

    /// Hands the packets the served interfaces' rings held when this pass started (at most one
    /// ring's worth per sender) to their services: how many, and whether peers have queued more
    /// since.
    pub(crate) fn drain_served(&self) -> (usize, bool) {
        // Handlers may sleep, so each ring's entries are copied out of the window first: into
        // 1 KiB of stack rather than an allocation per pass (this runs for every request while
        // the work busy-polls).
        let mut batch = [[0u8; PACKET_LEN]; layout::SLOTS as usize];
        let served = self.served.lock();
        let mut more = false;
        let mut handed = 0;
        for (k, service) in served.iter().enumerate() {
            let Some(service) = service else { continue };
            let id = USER_INTERFACES + k as u32;
            let iface = &self.ifaces[id as usize];
            for sender in 0..self.nodes {
                let mut n = 0;
                {
                    let Some(w) = self.gas.access() else {
                        return (handed, false);
                    };
                    let mut pass = match self.packet_ring(&w, self.node, id, sender).pass() {
                        Ok(pass) => pass,
                        Err(Resynced) => {
                            self.counters.resynced.fetch_add(1, Ordering::Relaxed);
                            if self.noisy.allow(self.epoch.elapsed().as_nanos()) {
                                pr_warn!("packet ring of node {} for interface {} had impossible indices: resynced (rate-limited)\n", sender, id);
                            }
                            continue;
                        }
                    };
                    let mut slot = [0u8; layout::SLOT_LEN];
                    while pass.next(&mut slot) {
                        // As in `take_packet`: the ring says who the producer was.
                        let valid = Packet::decode(&slot).is_ok_and(|p| {
                            u32::from(p.header.node) == sender
                                && u32::from(p.header.iface) < INTERFACES
                        });
                        if !valid {
                            self.counters.malformed.fetch_add(1, Ordering::Relaxed);
                            if self.noisy.allow(self.epoch.elapsed().as_nanos()) {
                                pr_warn!("malformed entry from node {} for interface {} dropped (rate-limited)\n", sender, id);
                            }
                            continue;
                        }
                        // A pass takes at most `SLOTS` entries, the batch's length.
                        if let Some(packet) = batch.get_mut(n) {
                            packet.copy_from_slice(&slot[..PACKET_LEN]);
                            n += 1;
                        }
                    }
                }
                if id == SERVICE_IFACE {
                    let Some(w) = self.gas.access() else {
                        return (handed, false);
                    };
                    let room = batch.len() - n;
                    let taken = self.take_submissions(&w, sender, &mut batch[n..]);
                    // Full: more slots may hold requests; the next pass takes them.
                    more |= room > 0 && taken == room;
                    n += taken;
                }
                handed += n;
                for packet in &batch[..n] {
                    Iface::count(&iface.received);
                    // SAFETY: the registrant promised `func` is callable with `ctx` in process
                    // context until removed, which waits for `served`, held here; `packet` is
                    // `PACKET_LEN` bytes valid for the call.
                    unsafe { (service.func)(service.ctx as *mut c_void, sender, packet.as_ptr()) };
                }
            }
            more |= self.gas.access().is_some_and(|w| self.queued(&w, id));
        }
        (handed, more)
    }

    /// Hands a packet from this node to the kernel service of `iface` at once, in the sending
    /// thread's context (a `SEND`, process context): no ring and no wake-up of the dispatch
    /// work, which on a one-vCPU node would first have to win the sender's CPU. Packets of one
    /// sender reach the service in order either way (a thread has one request outstanding per
    /// home). False if no service has `iface`: then the packet goes through the ring.
    fn serve_now(&self, iface: u32, packet: &[u8; PACKET_LEN]) -> bool {
        let Some(k) = iface
            .checked_sub(USER_INTERFACES)
            .map(|k| k as usize)
            .filter(|&k| k < KERNEL_IFACES)
        else {
            return false;
        };
        if !self.serving[k].load(Ordering::Acquire) {
            return false;
        }
        let served = self.served.lock();
        let Some(service) = served[k] else {
            return false;
        };
        Iface::count(&self.ifaces[iface as usize].received);
        // SAFETY: the registrant promised `func` is callable with `ctx` in process context until
        // removed, which waits for `served`, held here; `packet` is `PACKET_LEN` bytes valid for
        // the call.
        unsafe {
            (service.func)(
                service.ctx as *mut c_void,
                self.node | crate::kmsg_api::FROM_SENDER,
                packet.as_ptr(),
            )
        };
        true
    }

    /// Sets or clears the polling flag of every ring of the served interfaces.
    pub(crate) fn set_polling(&self, on: bool) {
        let Some(w) = self.gas.access() else { return };
        for k in 0..KERNEL_IFACES {
            if !self.serving[k].load(Ordering::Acquire) && on {
                continue;
            }
            for sender in 0..self.nodes {
                self.packet_ring(&w, self.node, USER_INTERFACES + k as u32, sender)
                    .set_polling(on);
            }
        }
    }

    /// Whether packets wait for a served interface or kernel messages for this node.
    pub(crate) fn dispatch_pending(&self) -> (bool, bool) {
        let Some(w) = self.gas.access() else {
            return (false, false);
        };
        let served = (0..KERNEL_IFACES).any(|k| {
            let id = USER_INTERFACES + k as u32;
            self.serving[k].load(Ordering::Acquire)
                && (self.queued(&w, id) || (id == SERVICE_IFACE && self.submissions_pending(&w)))
        });
        let kmsgs = (0..self.nodes).any(|s| !self.kmsg_ring(&w, self.node, s).is_empty());
        (served, kmsgs)
    }
}
