// SPDX-License-Identifier: GPL-2.0
//! Kernel services on the interfaces threads cannot allocate (`unimem_mbox_serve`; the GSAS
//! service on `SERVICE_IFACE`): who serves each, and handing them the packets of their rings,
//! which the dispatch work reads (one consumer), or a local sender's packet at once.
//!
//! The same part remembers what the service took from the peers' submission slots
//! (`submit.rs`) and how long the dispatch work keeps polling the served rings (`poll.rs`).

use crate::{
    counters::Counters,
    gsas::{SERVICE_IFACE, USER_INTERFACES},
    iface::Iface,
    kmsg_api::PacketHandler,
    mailbox::{layout, INTERFACES},
    owners::Owners,
    packet::{Packet, PACKET_LEN},
    ring::Resynced,
    window::Window,
};
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use kernel::{ffi::c_void, new_mutex, prelude::*, sync::Mutex};

/// Interfaces threads cannot allocate: `USER_INTERFACES..INTERFACES`, served by kernel clients.
pub(crate) const KERNEL_IFACES: usize = (INTERFACES - USER_INTERFACES) as usize;

/// A kernel service on one of the kernel's interfaces (`unimem_mbox_serve`).
#[derive(Clone, Copy)]
struct Handler {
    func: PacketHandler,
    ctx: usize,
}

#[pin_data]
pub(crate) struct Served {
    /// Kernel services of the interfaces `USER_INTERFACES..`; held while a handler runs (so
    /// removal waits for it) and while their rings are read (one consumer).
    #[pin]
    handlers: Mutex<[Option<Handler>; KERNEL_IFACES]>,
    /// Mirrors `handlers` for the doorbell handler.
    serving: [AtomicBool; KERNEL_IFACES],
    /// Per (peer node, user interface): the submission this node's service last took from
    /// that peer's slot (`submit.rs`). Written by the one consumer of the service's rings.
    pub(crate) last_taken: KVec<AtomicU64>,
    /// How long the dispatch work keeps polling the served rings after serving packets
    /// (`poll_us`); 0: never.
    pub(crate) poll_ns: u64,
    /// The current polling window (ns, at most `poll_ns`), and when the last one ended (ns
    /// since the module's epoch, `Window::now_ns`); only the dispatch work, which never runs
    /// twice at once, writes them.
    pub(crate) poll_window: AtomicU64,
    pub(crate) poll_idle_at: AtomicU64,
}

/// One "nothing taken yet" per (peer node, user interface) of `nodes` nodes.
fn last_taken(nodes: u32) -> Result<KVec<AtomicU64>> {
    let slots = nodes as usize * USER_INTERFACES as usize;
    let mut last_taken = KVec::with_capacity(slots, GFP_KERNEL)?;
    for _ in 0..slots {
        last_taken.push(AtomicU64::new(0), GFP_KERNEL)?;
    }
    Ok(last_taken)
}

/// The index of kernel interface `iface` among `KERNEL_IFACES`, if it is one.
fn kernel_iface(iface: u32) -> Option<usize> {
    iface
        .checked_sub(USER_INTERFACES)
        .map(|k| k as usize)
        .filter(|&k| k < KERNEL_IFACES)
}

impl Served {
    pub(crate) fn new(nodes: u32, poll_ns: u64) -> impl PinInit<Self, Error> {
        try_pin_init!(Served {
            handlers <- new_mutex!([None; KERNEL_IFACES], "unimem_mailbox::served"),
            serving: [const { AtomicBool::new(false) }; KERNEL_IFACES],
            last_taken: last_taken(nodes)?,
            poll_ns,
            poll_window: AtomicU64::new(0),
            poll_idle_at: AtomicU64::new(0),
        }? Error)
    }

    /// Installs (`Some`) or removes (`None`, waiting for a running call) the kernel service of
    /// interface `iface` (`unimem_mbox_serve`).
    pub(crate) fn serve(
        &self,
        win: &Window,
        owners: &Owners,
        iface: u32,
        handler: Option<PacketHandler>,
        ctx: *mut c_void,
    ) -> Result {
        let k = kernel_iface(iface).ok_or(EINVAL)?;
        let mut served = self.handlers.lock();
        match handler {
            Some(func) => {
                if served[k].is_some() {
                    return Err(EBUSY);
                }
                // Sent while nobody served the interface: not for this service.
                let w = win.gas().access().ok_or(ENODEV)?;
                for sender in 0..win.nodes {
                    let stale = win.packet_ring(&w, win.node, iface, sender).discard();
                    owners.ifaces[iface as usize]
                        .dropped
                        .fetch_add(u64::from(stale), Ordering::Relaxed);
                }
                if iface == SERVICE_IFACE {
                    self.skip_submissions(win, &w);
                }
                drop(w);
                served[k] = Some(Handler {
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
    pub(crate) fn drain(
        &self,
        win: &Window,
        owners: &Owners,
        counters: &Counters,
    ) -> (usize, bool) {
        // Handlers may sleep, so each ring's entries are copied out of the window first: into
        // 1 KiB of stack rather than an allocation per pass (this runs for every request while
        // the work busy-polls).
        let mut batch = [[0u8; PACKET_LEN]; layout::SLOTS as usize];
        let served = self.handlers.lock();
        let mut more = false;
        let mut handed = 0;
        for (k, service) in served.iter().enumerate() {
            let Some(service) = service else { continue };
            let id = USER_INTERFACES + k as u32;
            let iface = &owners.ifaces[id as usize];
            for sender in 0..win.nodes {
                let mut n = 0;
                {
                    let Some(w) = win.gas().access() else {
                        return (handed, false);
                    };
                    let mut pass = match win.packet_ring(&w, win.node, id, sender).pass() {
                        Ok(pass) => pass,
                        Err(Resynced) => {
                            counters.resynced.fetch_add(1, Ordering::Relaxed);
                            if win.warn_peer() {
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
                            counters.malformed.fetch_add(1, Ordering::Relaxed);
                            if win.warn_peer() {
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
                    let Some(w) = win.gas().access() else {
                        return (handed, false);
                    };
                    let room = batch.len() - n;
                    let taken = self.take_submissions(win, &w, counters, sender, &mut batch[n..]);
                    // Full: more slots may hold requests; the next pass takes them.
                    more |= room > 0 && taken == room;
                    n += taken;
                }
                handed += n;
                for packet in &batch[..n] {
                    Iface::count(&iface.received);
                    // SAFETY: the registrant promised `func` is callable with `ctx` in process
                    // context until removed, which waits for `handlers`, held here; `packet` is
                    // `PACKET_LEN` bytes valid for the call.
                    unsafe { (service.func)(service.ctx as *mut c_void, sender, packet.as_ptr()) };
                }
            }
            more |= win.gas().access().is_some_and(|w| win.queued(&w, id));
        }
        (handed, more)
    }

    /// Hands a packet from this node to the kernel service of `iface` at once, in the sending
    /// thread's context (a `SEND`, process context): no ring and no wake-up of the dispatch
    /// work, which on a one-vCPU node would first have to win the sender's CPU. Packets of one
    /// sender reach the service in order either way (a thread has one request outstanding per
    /// home). False if no service has `iface`: then the packet goes through the ring.
    pub(crate) fn serve_now(
        &self,
        win: &Window,
        owners: &Owners,
        iface: u32,
        packet: &[u8; PACKET_LEN],
    ) -> bool {
        let Some(k) = kernel_iface(iface) else {
            return false;
        };
        if !self.serving[k].load(Ordering::Acquire) {
            return false;
        }
        let served = self.handlers.lock();
        let Some(service) = served[k] else {
            return false;
        };
        Iface::count(&owners.ifaces[iface as usize].received);
        // SAFETY: the registrant promised `func` is callable with `ctx` in process context until
        // removed, which waits for `handlers`, held here; `packet` is `PACKET_LEN` bytes valid
        // for the call.
        unsafe {
            (service.func)(
                service.ctx as *mut c_void,
                win.node | crate::kmsg_api::FROM_SENDER,
                packet.as_ptr(),
            )
        };
        true
    }

    /// Sets or clears the polling flag of every ring of the served interfaces.
    pub(crate) fn set_polling(&self, win: &Window, on: bool) {
        let Some(w) = win.gas().access() else { return };
        for k in 0..KERNEL_IFACES {
            if !self.serving[k].load(Ordering::Acquire) && on {
                continue;
            }
            for sender in 0..win.nodes {
                win.packet_ring(&w, win.node, USER_INTERFACES + k as u32, sender)
                    .set_polling(on);
            }
        }
    }

    /// Whether packets wait for a served interface or kernel messages for this node.
    pub(crate) fn dispatch_pending(&self, win: &Window) -> (bool, bool) {
        let Some(w) = win.gas().access() else {
            return (false, false);
        };
        let served = (0..KERNEL_IFACES).any(|k| {
            let id = USER_INTERFACES + k as u32;
            self.serving[k].load(Ordering::Acquire)
                && (win.queued(&w, id)
                    || (id == SERVICE_IFACE && self.submissions_pending(win, &w)))
        });
        let kmsgs = win.kmsgs_queued(&w);
        (served, kmsgs)
    }
}
