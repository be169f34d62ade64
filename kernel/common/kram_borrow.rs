// SPDX-License-Identifier: GPL-2.0
//! One range borrowed from one kram-daemon, for kernel borrowers that hold a single contiguous
//! range per lender (the GSAS service's page pool; `unimem_numa`, one `Borrow` per lender):
//! REQUEST, wait for the OFFER, CONFIRM, wait for the ACK, then RENEW every period and follow
//! the lender's ACKs and REVOKEs; FREE when given back. The lease clock is `kram_client`'s.
//!
//! Included at the crate root (`#[path = "../common/kram_borrow.rs"] mod kram_borrow;`) by
//! `unimem_numa` and `unimem_gsas`, next to `borrower.rs`: names `crate::kram_client` and
//! `crate::wire`, which `borrower.rs` provides. Items only one of the two uses say so.

use crate::{
    kram_client::{send, try_send, Epoch, LeaseClock},
    wire::kram::{to_daemon, to_driver, KramMsg},
};
use core::sync::atomic::{AtomicU64, Ordering};
use kernel::{
    new_condvar, new_mutex,
    prelude::*,
    sync::{Arc, CondVar, CondVarTimeoutResult, Mutex, MutexGuard},
    time::msecs_to_jiffies,
};

/// Where the borrowing stands.
struct Progress {
    /// Set by `lease` while it runs or once it succeeded.
    lender: Option<u32>,
    /// Asked for at most this many chunks, then (from the OFFER) the size of the range.
    chunks: u32,
    /// The fewest chunks an OFFER may hold.
    min: u32,
    first: Option<u32>,
    clock: Option<Arc<LeaseClock>>,
    acked: bool,
    revoked: bool,
    /// The lease succeeded: RENEWs go out.
    held: bool,
}

/// What a lender's message did, for the borrower's counters.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Delivery {
    /// An OFFER taken by a running `lease`.
    Offer,
    /// An OFFER nobody waits for: DECLINEd.
    Declined,
    /// An ACK of our range (whether or not it extended the lease).
    Ack,
    /// A REVOKE of our range: the range must not be touched again.
    Revoke,
    /// An ACK or REVOKE of a range that is not ours.
    Stray,
    /// Not a message of this instance from that node.
    Malformed,
}

impl Delivery {
    /// How many kinds there are (`Malformed` is the last).
    #[allow(dead_code)] // For `Tally`.
    const COUNT: usize = Delivery::Malformed as usize + 1;
}

/// How many messages of each [`Delivery`] a borrower received, for its statistics.
#[allow(dead_code)] // `unimem_numa`'s only.
pub(crate) struct Tally([AtomicU64; Delivery::COUNT]);

#[allow(dead_code)] // `unimem_numa`'s only.
impl Tally {
    pub(crate) const fn new() -> Self {
        Self([const { AtomicU64::new(0) }; Delivery::COUNT])
    }

    pub(crate) fn count(&self, d: Delivery) {
        self.0[d as usize].fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn get(&self, d: Delivery) -> u64 {
        self.0[d as usize].load(Ordering::Relaxed)
    }
}

/// The step at which [`Borrow::lease_detailed`] failed, so that the borrower can say why.
#[derive(Clone, Copy)]
pub(crate) enum Failure {
    /// Nothing was sent: a lease runs or is held (`EBUSY`), or no memory.
    NotStarted(Error),
    /// The REQUEST was not sent.
    Request(Error),
    /// No OFFER: `ETIMEDOUT`, or `EINTR` (a signal).
    Offer(Error),
    /// The CONFIRM was not sent.
    Confirm(Error),
    /// No ACK: `ETIMEDOUT`, or `EINTR` (a signal).
    Ack(Error),
    /// The lender REVOKEd the offered chunks from `first` instead of acknowledging them.
    #[allow(dead_code)] // Read by `unimem_numa` only.
    Revoked { first: u32 },
}

impl Failure {
    pub(crate) fn error(self) -> Error {
        match self {
            Self::NotStarted(e)
            | Self::Request(e)
            | Self::Offer(e)
            | Self::Confirm(e)
            | Self::Ack(e) => e,
            Self::Revoked { .. } => EAGAIN,
        }
    }
}

/// One borrowed range of instance `instance` of node `me`.
#[pin_data]
pub(crate) struct Borrow {
    me: u8,
    instance: u8,
    epoch: Epoch,
    #[pin]
    progress: Mutex<Progress>,
    #[pin]
    changed: CondVar,
}

impl Borrow {
    pub(crate) fn new(me: u32, instance: u8, epoch: Epoch) -> impl PinInit<Self> {
        pin_init!(Self {
            me: me as u8,
            instance,
            epoch,
            progress <- new_mutex!(
                Progress { lender: None, chunks: 0, min: 0, first: None, clock: None, acked: false, revoked: false, held: false },
                "kram_borrow::progress"
            ),
            changed <- new_condvar!("kram_borrow::changed"),
        })
    }

    fn msg(&self, opcode: u8, first: u32, chunks: u32, tag: u8) -> KramMsg {
        KramMsg::new(opcode, self.me, self.instance, first, chunks, tag)
    }

    /// Borrows `chunks` chunks from `lender`, the first `2^align`-chunk aligned: REQUEST, OFFER,
    /// CONFIRM, ACK, each wait at most `timeout_ms`. Returns the first chunk and the lease.
    /// One lease per `Borrow`: `EBUSY` if one runs or is held.
    #[allow(dead_code)] // `unimem_gsas`'s only (`unimem_numa` uses `lease_detailed`).
    pub(crate) fn lease(
        &self,
        lender: u32,
        chunks: u32,
        align: u8,
        timeout_ms: u32,
    ) -> Result<(u32, Arc<LeaseClock>)> {
        self.lease_detailed(lender, chunks, align, timeout_ms)
            .map_err(Failure::error)
    }

    /// [`Borrow::lease`] of at least `min` and at most `chunks` chunks, as many as the lender
    /// has (a v2 REQUEST's partial grant): the first chunk, the range's size and the lease.
    #[allow(dead_code)] // `unimem_gsas`'s only (a growing pool).
    pub(crate) fn lease_partial(
        &self,
        lender: u32,
        min: u32,
        chunks: u32,
        timeout_ms: u32,
    ) -> Result<(u32, u32, Arc<LeaseClock>)> {
        let (first, clock) = self
            .lease_steps_from(lender, min, chunks, 0, timeout_ms)
            .map_err(Failure::error)?;
        Ok((first, self.progress.lock().chunks, clock))
    }

    /// [`Borrow::lease`], failing with the step that failed.
    pub(crate) fn lease_detailed(
        &self,
        lender: u32,
        chunks: u32,
        align: u8,
        timeout_ms: u32,
    ) -> Result<(u32, Arc<LeaseClock>), Failure> {
        self.lease_steps_from(lender, chunks, chunks, align, timeout_ms)
    }

    fn lease_steps_from(
        &self,
        lender: u32,
        min: u32,
        chunks: u32,
        align: u8,
        timeout_ms: u32,
    ) -> Result<(u32, Arc<LeaseClock>), Failure> {
        let mut p = self.progress.lock();
        if p.lender.is_some() {
            return Err(Failure::NotStarted(EBUSY));
        }
        let clock =
            Arc::new(LeaseClock::new(), GFP_KERNEL).map_err(|e| Failure::NotStarted(e.into()))?;
        *p = Progress {
            lender: Some(lender),
            chunks,
            min,
            first: None,
            clock: None,
            acked: false,
            revoked: false,
            held: false,
        };
        let result = self.lease_steps(&mut p, lender, align, timeout_ms, clock);
        match &result {
            Ok(_) => p.held = true,
            Err(_) => p.lender = None,
        }
        result
    }

    fn lease_steps(
        &self,
        p: &mut MutexGuard<'_, Progress>,
        lender: u32,
        align: u8,
        timeout_ms: u32,
        clock: Arc<LeaseClock>,
    ) -> Result<(u32, Arc<LeaseClock>), Failure> {
        try_send(
            lender,
            KramMsg::request(self.me, self.instance, p.chunks, p.min, align),
        )
        .map_err(Failure::Request)?;
        self.wait(p, timeout_ms, |p| p.first.is_some())
            .map_err(Failure::Offer)?;
        let first = p.first.ok_or(Failure::Offer(EINVAL))?;
        let chunks = p.chunks;
        let tag = clock.stamp(self.epoch.now());
        p.clock = Some(clock.clone());
        try_send(lender, self.msg(to_daemon::CONFIRM, first, chunks, tag))
            .map_err(Failure::Confirm)?;
        self.wait(p, timeout_ms, |p| p.acked || p.revoked)
            .map_err(Failure::Ack)?;
        if p.revoked {
            return Err(Failure::Revoked { first });
        }
        Ok((first, clock))
    }

    /// Waits until `done` or `timeout_ms` (`ETIMEDOUT`); a signal gives `EINTR`.
    fn wait(
        &self,
        p: &mut MutexGuard<'_, Progress>,
        timeout_ms: u32,
        done: impl Fn(&Progress) -> bool,
    ) -> Result {
        let mut left = msecs_to_jiffies(timeout_ms);
        while !done(p) {
            match self.changed.wait_interruptible_timeout(p, left) {
                CondVarTimeoutResult::Woken { jiffies } => left = jiffies,
                CondVarTimeoutResult::Timeout => return Err(ETIMEDOUT),
                CondVarTimeoutResult::Signal { .. } => return Err(EINTR),
            }
        }
        Ok(())
    }

    /// A message of the borrower's service from node `from` (undecoded: another node wrote it).
    #[allow(dead_code)] // `unimem_gsas`'s only (`unimem_numa` takes `deliver`'s range too).
    pub(crate) fn message(&self, from: u32, word: u64) -> Delivery {
        self.deliver(from, word).0
    }

    /// [`Borrow::message`]; for a REVOKE of the range after `lease` returned it (so in use,
    /// where a REVOKE during `lease` only makes it fail), also that range's first chunk and
    /// size.
    pub(crate) fn deliver(&self, from: u32, word: u64) -> (Delivery, Option<(u32, u32)>) {
        let m = match KramMsg::decode_for_driver(word) {
            Ok(m) if u32::from(m.node) == from && m.instance == self.instance => m,
            _ => return (Delivery::Malformed, None),
        };
        let mut p = self.progress.lock();
        if m.opcode == to_driver::OFFER {
            if p.lender == Some(from) && p.first.is_none() && (p.min..=p.chunks).contains(&m.chunks)
            {
                p.first = Some(m.first_chunk);
                p.chunks = m.chunks;
                self.changed.notify_all();
                return (Delivery::Offer, None);
            }
            drop(p);
            send(from, m.reply(to_daemon::DECLINE, self.me, 0));
            return (Delivery::Declined, None);
        }
        let ours = p.lender == Some(from) && p.first == Some(m.first_chunk) && p.chunks == m.chunks;
        let Some(clock) = p.clock.clone().filter(|_| ours) else {
            return (Delivery::Stray, None);
        };
        let delivery = if m.opcode == to_driver::ACK {
            if clock.ack(m.tag, self.epoch.now()) {
                p.acked = true;
            }
            (Delivery::Ack, None)
        } else {
            clock.revoke();
            p.revoked = true;
            (
                Delivery::Revoke,
                p.held.then_some((m.first_chunk, m.chunks)),
            )
        };
        self.changed.notify_all();
        delivery
    }

    /// RENEWs the held range (each period), unless revoked.
    pub(crate) fn renew(&self) {
        let p = self.progress.lock();
        let (Some(lender), Some(first), Some(clock), true) =
            (p.lender, p.first, p.clock.clone(), p.held)
        else {
            return;
        };
        if clock.is_revoked() {
            return;
        }
        let m = self.msg(
            to_daemon::RENEW,
            first,
            p.chunks,
            clock.stamp(self.epoch.now()),
        );
        drop(p);
        send(lender, m);
    }

    /// Gives the held range back and stops renewing it. `wiped`: the caller wiped it (FREE);
    /// otherwise (its lease lapsed on our clock, so it must not be written, or wiping failed)
    /// FREE_UNWIPED: the lender wipes it before lending it again. A lapsed range may still be
    /// ours (the lenders' lease rule holds it while this node is frozen), and a FREE of one
    /// that is not is refused by its lender; a revoked range is not ours: nothing is sent.
    /// Returns whether a FREE was sent.
    pub(crate) fn give_back(&self, wiped: bool) -> bool {
        let Some((lender, first, chunks, clock)) = self.stop() else {
            return false;
        };
        if clock.is_revoked() {
            pr_warn!(
                "chunks {}+{} of node {} were revoked: not ours, not returned\n",
                first,
                chunks,
                lender
            );
            return false;
        }
        let wiped = wiped && clock.usable(self.epoch.now());
        let tag = if wiped { 0 } else { to_daemon::FREE_UNWIPED };
        if try_send(lender, self.msg(to_daemon::FREE, first, chunks, tag)).is_err() {
            pr_err!("FREE of chunks {}+{} to node {} was not sent: its daemon keeps them lent while this node is connected\n", first, chunks, lender);
            return false;
        }
        true
    }

    /// Ends the held lease: its lender, first chunk, size and clock.
    fn stop(&self) -> Option<(u32, u32, u32, Arc<LeaseClock>)> {
        let mut p = self.progress.lock();
        let (Some(lender), Some(first), Some(clock), true) =
            (p.lender, p.first, p.clock.clone(), p.held)
        else {
            return None;
        };
        p.held = false;
        p.lender = None;
        Some((lender, first, p.chunks, clock))
    }
}
