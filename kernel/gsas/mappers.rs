// SPDX-License-Identifier: GPL-2.0
//! Which other nodes map an allocation's pages (`op::MAP`, approved here, mapped by the
//! issuer's kernel), and the ZAP rounds that have them remove those mappings: after a FREE the
//! pages stay out of use (quarantined) until every mapper acknowledged; after a grant that took
//! something away only the mappings go. Bookkeeping only: no memory or message is touched here.

use crate::gas::MAX_NODES;
use kernel::{alloc::KVVec, bindings, prelude::*};

/// ZAPs sent for one range that not every mapper has acknowledged yet.
#[derive(Clone, Copy)]
pub(crate) struct Round {
    /// The range, in pool pages.
    pub(crate) first: usize,
    pub(crate) n: usize,
    /// Whether the pages are freed ones, held out of use until the round ends (a narrowed
    /// grant's pages stay allocated).
    pub(crate) holds: bool,
    /// Nodes that have not acknowledged a ZAP numbered `need` or later.
    pub(crate) pending: u16,
    /// The number of the last ZAPs sent for it.
    pub(crate) need: u32,
    /// Lease ticks it has waited (`remote_maps.rs` sends again and warns by it).
    pub(crate) waited: u32,
}

pub(crate) struct Mappers {
    /// At an allocation's first page: the nodes other than this one approved to map any of it.
    nodes: KVVec<u16>,
    pub(crate) rounds: KVec<Round>,
    /// Per node: the number of the last ZAP it acknowledged (every earlier one is done too: a
    /// node takes a sender's messages in order).
    acked: [u32; MAX_NODES as usize],
    /// The number of the last ZAP sent.
    seq: u32,
    /// Freed pages held out of use.
    pub(crate) held: usize,
}

/// Whether ZAP number `a` was sent no earlier than `b` (numbers wrap).
fn not_before(a: u32, b: u32) -> bool {
    a.wrapping_sub(b) as i32 >= 0
}

impl Mappers {
    pub(crate) fn new(pages: usize) -> Result<Self> {
        let mut nodes = KVVec::with_capacity(pages, GFP_KERNEL)?;
        for _ in 0..pages {
            nodes.push(0, GFP_KERNEL)?;
        }
        // SAFETY: `get_random_u32` has no preconditions. A random start per pool keeps a late
        // acknowledgement of a previous load's ZAP from passing for one of this pool's.
        let seq = unsafe { bindings::get_random_u32() };
        Ok(Self {
            nodes,
            rounds: KVec::new(),
            acked: [seq; MAX_NODES as usize],
            seq,
            held: 0,
        })
    }

    /// The per-page storage replaced by what `f` makes of it (`Pool::grow`); the old one.
    pub(crate) fn regrow(&mut self, f: impl FnOnce(&mut KVVec<u16>) -> KVVec<u16>) -> KVVec<u16> {
        f(&mut self.nodes)
    }

    /// The first `pages` pages only (`Pool::shrink`: the rest are free, so in no round).
    pub(crate) fn truncate(&mut self, pages: usize) {
        self.nodes.truncate(pages);
    }

    /// The allocation starting at `first` is new: mapped by nobody.
    pub(crate) fn reset(&mut self, first: usize) {
        if let Some(m) = self.nodes.get_mut(first) {
            *m = 0;
        }
    }

    /// Node `node` may map pages of the allocation that starts at `first`.
    pub(crate) fn add(&mut self, first: usize, node: u32) {
        if let (Some(m), true) = (self.nodes.get_mut(first), node < MAX_NODES) {
            *m |= 1 << node;
        }
    }

    /// The nodes that may map the allocation that starts at `first`.
    pub(crate) fn of(&self, first: usize) -> u16 {
        self.nodes.get(first).copied().unwrap_or(0)
    }

    /// Every node that may map anything of the pool, or has not acknowledged a round.
    pub(crate) fn everyone(&self) -> u16 {
        let waiting = self.rounds.iter().fold(0, |a, r| a | r.pending);
        self.nodes.iter().fold(waiting, |a, &m| a | m)
    }

    /// The number for the next ZAPs.
    pub(crate) fn next_seq(&mut self) -> u32 {
        self.seq = self.seq.wrapping_add(1);
        self.seq
    }

    /// Starts a round for pool pages `first..first + n`, sent to `nodes` as number `need`.
    /// Called under a spinlock: the list grows with `GFP_ATOMIC`, and the caller keeps freed
    /// pages out of use for good if it cannot.
    pub(crate) fn start(
        &mut self,
        first: usize,
        n: usize,
        holds: bool,
        nodes: u16,
        need: u32,
    ) -> Result {
        self.rounds.push(
            Round {
                first,
                n,
                holds,
                pending: nodes,
                need,
                waited: 0,
            },
            GFP_ATOMIC,
        )?;
        if holds {
            self.held += n;
        }
        Ok(())
    }

    /// Node `node` acknowledged the ZAP whose number ends in `seq` (the wire's 16 bits): the
    /// most recent number sent with those bits. An acknowledgement of a number not sent yet
    /// reads as an old one, which releases nothing new.
    pub(crate) fn ack(&mut self, node: u32, seq: u16) {
        let Some(acked) = self.acked.get_mut(node as usize) else {
            return;
        };
        let behind = (self.seq as u16).wrapping_sub(seq);
        let full = self.seq.wrapping_sub(u32::from(behind));
        if not_before(full, *acked) {
            *acked = full;
        }
    }

    /// A round every node has acknowledged, taken off the list (the caller frees a freed
    /// one's pages).
    pub(crate) fn take_done(&mut self) -> Option<Round> {
        let acked = self.acked;
        for r in self.rounds.iter_mut() {
            for (node, &a) in acked.iter().enumerate() {
                if not_before(a, r.need) {
                    r.pending &= !(1 << node);
                }
            }
        }
        let i = self.rounds.iter().position(|r| r.pending == 0)?;
        let r = self.rounds.remove(i).ok()?;
        if r.holds {
            self.held -= r.n;
        }
        Some(r)
    }
}
