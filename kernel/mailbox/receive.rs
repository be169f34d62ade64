// SPDX-License-Identifier: GPL-2.0
//! Receiving for the user interfaces (`RECV`, `poll`): the next valid packet of this node's
//! rings for an interface, senders taken round-robin. Entries peers got wrong are counted and
//! dropped here. (The served interfaces' rings are read by the dispatch work: `served.rs`.)

use crate::{
    counters::Counters,
    mailbox::{layout, INTERFACES},
    packet::{Packet, PACKET_LEN},
    ring::{Resynced, Ring},
    window::Window,
};
use core::sync::atomic::Ordering;
use kernel::prelude::*;

/// What [`Window::take_packet`] found.
pub(crate) enum Take {
    Packet([u8; PACKET_LEN]),
    Empty,
    /// The fabric device is gone.
    Gone,
    /// Nothing valid in this pass, but peers queued more since: try again (not under the lock).
    Again,
}

impl Window {
    /// One receive pass over `ring` (fed by `sender`): takes entries until one that `decode`
    /// accepts, at most the ring's worth published when the pass started. Rejected entries are
    /// counted as malformed and dropped, impossible indices resync the ring; both are logged at
    /// a limited rate, since a peer causes them.
    fn next_valid<T>(
        &self,
        counters: &Counters,
        ring: Ring<'_>,
        sender: u32,
        what: &str,
        decode: impl Fn(&[u8; layout::SLOT_LEN]) -> Option<T>,
    ) -> Option<T> {
        let mut pass = match ring.pass() {
            Ok(pass) => pass,
            Err(Resynced) => {
                counters.resynced.fetch_add(1, Ordering::Relaxed);
                if self.warn_peer() {
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
            counters.malformed.fetch_add(1, Ordering::Relaxed);
            if self.warn_peer() {
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
    pub(crate) fn take_packet(&self, counters: &Counters, id: u32, start: u32) -> Take {
        let Some(w) = self.gas().access() else {
            return Take::Gone;
        };
        // `nodes <= MAX_NODES`, so `first + k` cannot overflow, whatever `start` is.
        let first = start % self.nodes;
        for k in 0..self.nodes {
            let sender = (first + k) % self.nodes;
            let packet = self.next_valid(
                counters,
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

    /// Whether packets wait for local interface `id` (none once the fabric is gone).
    pub(crate) fn has_packet(&self, id: u32) -> bool {
        self.gas().access().is_some_and(|w| self.queued(&w, id))
    }
}
