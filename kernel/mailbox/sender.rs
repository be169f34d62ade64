// SPDX-License-Identifier: GPL-2.0
//! Sending: this node as the producer of its peers' rings (packets to their interfaces,
//! 64-bit kernel messages to their services), and the doorbells that tell them.
//!
//! [`Sender`] holds what sending needs of its own; `SEND`, `KICK` and `unimem_mbox_send` are
//! methods of the whole state, since a packet's header comes from its interface's owner
//! (`owners.rs`), a packet for a local kernel service is served at once (`served.rs`), and a
//! doorbell to this node runs the dispatch (`dispatch.rs`).

use crate::{
    counters::Counters,
    doorbell_limit::DoorbellLimit,
    gsas::USER_INTERFACES,
    iface::Iface,
    mailbox::{Kmsg, DOORBELL_VECTOR, INTERFACES},
    packet::{Header, Packet, PACKET_LEN, PAYLOAD_LEN},
    state::State,
    window::Window,
};
use core::sync::atomic::Ordering;
use kernel::{new_spinlock_irq, prelude::*, sync::SpinLockIrq};

pub(crate) struct Sender {
    /// Serializes this node's producers per destination node (one producer per ring).
    send_locks: KVec<Pin<KBox<SpinLockIrq<()>>>>,
    /// The rate of doorbells users cause without queuing anything new.
    doorbell_limit: DoorbellLimit,
}

impl Sender {
    /// A sender to `nodes` nodes, with at most `doorbell_rate` doorbells per millisecond to each
    /// that queue nothing new (0: no limit).
    pub(crate) fn new(nodes: u32, doorbell_rate: u32) -> Result<Self> {
        let mut send_locks = KVec::with_capacity(nodes as usize, GFP_KERNEL)?;
        for _ in 0..nodes {
            send_locks.push(
                KBox::pin_init(new_spinlock_irq!((), "unimem_mailbox::send"), GFP_KERNEL)?,
                GFP_KERNEL,
            )?;
        }
        let doorbell_limit = DoorbellLimit::new(nodes, doorbell_rate)?;
        Ok(Self {
            send_locks,
            doorbell_limit,
        })
    }

    /// Queues `packet` on node `dest`'s ring of `iface` that this node feeds: whether it was
    /// queued (`false`: the ring is full), and whether the receiver polls the ring (then no
    /// doorbell is needed).
    fn push_packet(
        &self,
        win: &Window,
        dest: u32,
        iface: u32,
        packet: &[u8; PACKET_LEN],
    ) -> Result<(bool, bool)> {
        let _producer = self.send_locks[dest as usize].lock();
        let w = win.gas().access().ok_or(ENODEV)?;
        let ring = win.packet_ring(&w, dest, iface, win.node);
        let pushed = ring.push(packet);
        // Only kernel services poll; a user interface's receiver sleeps until rung.
        let polled = pushed && iface >= USER_INTERFACES && ring.consumer_polling();
        Ok((pushed, polled))
    }

    /// Queues kernel message `msg` on node `dest`'s ring that this node feeds; `false` when the
    /// ring is full.
    fn push_kmsg(&self, win: &Window, dest: u32, msg: &Kmsg) -> Result<bool> {
        let _producer = self.send_locks[dest as usize].lock();
        let w = win.gas().access().ok_or(ENODEV)?;
        Ok(win.kmsg_ring(&w, dest, win.node).push(&msg.encode()))
    }

    /// `doorbell_rate`, for the counters.
    pub(crate) fn doorbell_rate(&self) -> u64 {
        self.doorbell_limit.per_ms()
    }

    /// Waits until a doorbell to `node` that queues nothing new is due (`doorbell_limit.rs`).
    /// Process context.
    fn throttle(&self, win: &Window, counters: &Counters, node: u32) {
        if self.doorbell_limit.wait(node, win.now_ns()) {
            counters.doorbells_throttled.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Rings peer `node`'s doorbell.
    fn ring(win: &Window, node: u32) {
        if let Err(e) = win.gas().ring(node, DOORBELL_VECTOR) {
            // A user's KICK or SEND can get here: at a limited rate.
            if win.warn_peer() {
                pr_warn!("doorbell to node {} failed: {:?} (rate-limited)\n", node, e);
            }
        }
    }
}

impl State {
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
        let win = &self.window;
        if node >= win.nodes || iface >= INTERFACES {
            return Err(EINVAL);
        }
        let src = self.owners.ifaces.get(from as usize).ok_or(EINVAL)?;
        let prot_id = src.owner.lock().ok_or(EINVAL)?.prot_id;
        let header = Header {
            node: win.node as u8,
            iface: from as u16,
            prot_id,
        };
        let packet = Packet::seal(header, payload);
        if node == win.node && self.served.serve_now(win, &self.owners, iface, &packet) {
            Iface::count(&src.sent);
            return Ok(false);
        }
        let (pushed, polled) = self.sender.push_packet(win, node, iface, &packet)?;
        if !pushed {
            Iface::count(&src.rejected);
            // Still ring: a receiver that missed a doorbell, or whose ring indices are damaged,
            // drains (or repairs) the ring when it hears one. Nothing new was queued: at the
            // limited rate.
            self.sender.throttle(win, &self.counters, node);
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
        if node >= self.window.nodes {
            return Err(EINVAL);
        }
        self.counters.kicks.fetch_add(1, Ordering::Relaxed);
        self.sender.throttle(&self.window, &self.counters, node);
        self.notify(node);
        Ok(())
    }

    /// Queues a kernel message for `service` on `node`.
    pub(crate) fn ksend(&self, node: u32, service: u32, word: u64) -> Result {
        if node >= self.window.nodes {
            return Err(EINVAL);
        }
        let msg = Kmsg {
            service,
            sender: self.window.node,
            word,
        };
        crate::kmsg::check_service(service)?;
        let pushed = self.sender.push_kmsg(&self.window, node, &msg)?;
        if !pushed {
            self.services.count_rejected(service);
            self.notify(node);
            return Err(EAGAIN);
        }
        self.services.count_sent(service);
        self.notify(node);
        Ok(())
    }

    /// Tells node `node` that something was queued for it.
    pub(crate) fn notify(&self, node: u32) {
        if node == self.window.node {
            self.kick();
        } else {
            Sender::ring(&self.window, node);
        }
    }
}
