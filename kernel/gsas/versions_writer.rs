// SPDX-License-Identifier: GPL-2.0
//! The writer's half of the version table (`versions` in the wire crate): every change the
//! service makes to pool memory is bracketed by making its stripes' words odd and then even
//! again, so that a thread reading the pages through a mapping can tell a copy taken during a
//! change from a whole one. All changes are made under the service lock: one writer at a time.

use crate::{fabric_client::Access, gsas::PAGE_SIZE, service::Service, versions};
use core::sync::atomic::{fence, Ordering};

/// A change of a range of this node's pool in progress: its stripes' words are odd from
/// [`begin`](Self::begin) until this is dropped (after the change's last store).
pub(crate) struct Changing<'a, 'w> {
    w: &'a Access<'w>,
    node: u32,
    first: u64,
    count: u64,
}

impl<'a, 'w> Changing<'a, 'w> {
    /// Before the first store of a change of `len` bytes at partition offset `offset` of node
    /// `node` (this node), under the service lock.
    pub(crate) fn begin(w: &'a Access<'w>, node: u32, offset: u64, len: u64) -> Self {
        let (first, count) = versions::stripes(offset, len.max(1));
        let c = Self {
            w,
            node,
            first,
            count,
        };
        c.bump();
        // The odd words before any store of the change: a store-store order, what a seqlock
        // writer needs (a release fence: no instruction on x86, where a full fence cost 8% of
        // a local Fetch&Add under TCG, `scripts/bench/modules_ab.sh`).
        fence(Ordering::Release);
        c
    }

    /// Adds one to each stripe's word (only this node's service writes them, under its lock).
    fn bump(&self) {
        for i in 0..self.count {
            let at = versions::OFFSET + (self.first + i) % versions::STRIPES * 8;
            if let Some(word) = self.w.part_word(self.node, at) {
                let v = u64::from_le(word.load(Ordering::Relaxed));
                word.store(v.wrapping_add(1).to_le(), Ordering::Release);
            }
        }
    }
}

impl Drop for Changing<'_, '_> {
    fn drop(&mut self) {
        // Release (each store): the change's stores before the even words.
        self.bump();
    }
}

impl Service {
    /// At load: a previous load may have stopped in the middle of a change (its words odd);
    /// readers would wait for it for ever. Each odd word becomes even (never back to a value a
    /// reader may have seen).
    pub(crate) fn settle_versions(&self) {
        let Some(w) = self.gas.access() else { return };
        for s in 0..versions::STRIPES {
            if let Some(word) = w.part_word(self.node, versions::OFFSET + s * 8) {
                let v = u64::from_le(word.load(Ordering::Relaxed));
                if v & 1 != 0 {
                    word.store(v.wrapping_add(1).to_le(), Ordering::Release);
                }
            }
        }
    }

    /// Whether a mapping of `len` bytes at partition offset `offset`, read-only, is of the
    /// version table (which anyone who may send this node requests may read).
    pub(crate) fn versions_mappable(offset: u64, len: u64, write: bool) -> bool {
        !write
            && offset % PAGE_SIZE == 0
            && len % PAGE_SIZE == 0
            && len > 0
            && versions::in_table(offset, len)
    }
}
