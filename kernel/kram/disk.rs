// SPDX-License-Identifier: GPL-2.0
//! The block device of one instance: requests copied to and from the lent memory in the GAS,
//! only while the leases are valid; with `mirror=1` every write goes to both copies and a read
//! is served by whichever copy is intact.
//!
//! Here the disk's two forms (blk-mq and bio-based) and what their requests need; where the
//! bytes are: `layout.rs`; how a request reaches them: `io.rs`.

use crate::dma::Dma;
use crate::dma_submit::Submitted;
use crate::fabric_client::Gas;
use crate::io::NotServed;
use crate::kram_client::Epoch;
use crate::layout::Shared;
use kernel::{
    block::{
        bio::{self, Bio},
        mq::{Command, Operations, Request, Segment},
    },
    prelude::*,
    sync::{aref::ARef, Arc},
    time::{delay::fsleep, Delta},
};

/// How data moves between bio pages and the GAS (`transfermode`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Transfer {
    /// The CPU copies in `submit_bio` and ends the bio there: a bio-based disk, as brd and zram
    /// are, since blk-mq's per-request work costs more than a copy ([`KramBio`]).
    Memcpy,
    /// A DMA engine's channels copy, and the last copy's completion ends the request (`dma.rs`).
    Cdma,
}

/// The fabric as the disk sees it: the window (while the device is bound) and the liveness
/// words the fabric server keeps in its control area (`gas::node_state`).
#[derive(Clone)]
pub(crate) struct Fabric {
    gas: Arc<Gas>,
}

impl Fabric {
    pub(crate) fn new(gas: Arc<Gas>) -> Self {
        Self { gas }
    }

    pub(crate) fn gas(&self) -> &Arc<Gas> {
        &self.gas
    }

    /// Whether `node`'s memory went away: the fabric poisoned its partition, or the fabric
    /// device itself is gone.
    pub(crate) fn lost(&self, node: u32) -> bool {
        self.gas.access().is_none_or(|w| w.node_lost(node))
    }
}

/// What the disk's requests need.
pub(crate) struct Backing {
    pub(crate) shared: Arc<Shared>,
    pub(crate) len: u64,
    /// The engine's channels, with `transfermode=1`.
    pub(crate) dma: Option<Arc<Dma>>,
    pub(crate) epoch: Epoch,
    pub(crate) fabric: Fabric,
    /// How long I/O waits for a lapsed lease to be acknowledged again before it fails.
    pub(crate) max_stall_ns: i64,
}

/// The blk-mq disk of `transfermode=1`: its tags bound the copies in flight, and the engine's
/// completions end requests.
pub(crate) struct KramDisk;

/// The bio-based disk of `transfermode=0`.
pub(crate) struct KramBio;

/// What the disk is asked to do: a blk-mq request or a bio.
pub(crate) trait Work {
    fn command(&self) -> Command;
    fn sector(&self) -> u64;
    fn bytes(&self) -> u32;
    fn for_each_segment(&self, f: impl FnMut(&Segment<'_>) -> Result) -> Result;
}

/// Both have the same methods under the same names.
macro_rules! impl_work {
    ($t:ty) => {
        impl Work for $t {
            fn command(&self) -> Command {
                <$t>::command(self)
            }
            fn sector(&self) -> u64 {
                <$t>::sector(self)
            }
            fn bytes(&self) -> u32 {
                <$t>::bytes(self)
            }
            fn for_each_segment(&self, f: impl FnMut(&Segment<'_>) -> Result) -> Result {
                <$t>::for_each_segment(self, f)
            }
        }
    };
}
impl_work!(Request<KramDisk>);
impl_work!(Bio);

pub(crate) fn finish(rq: ARef<Request<KramDisk>>, result: Result) {
    if Request::end(rq, result).is_err() {
        // Only possible if someone kept an extra reference; the request cannot be ended twice.
        pr_err!("request still referenced, not completed\n");
    }
}

#[vtable]
impl Operations for KramDisk {
    type QueueData = KBox<Backing>;

    fn queue_rq(backing: &Backing, rq: ARef<Request<Self>>, is_last: bool) -> Result {
        let rq = match &backing.dma {
            // Moved, not cloned: the copies' completion ends it, maybe before this returns.
            Some(d) => {
                let s = d.submit(backing, rq, is_last);
                if is_last && !matches!(s, Submitted::Engine) {
                    // Earlier requests of the batch may wait on the engine.
                    d.issue_all();
                }
                match s {
                    Submitted::Engine => return Ok(()),
                    Submitted::Requeue => return Err(ENOMEM),
                    Submitted::Cpu(rq) => rq,
                }
            }
            None => rq,
        };
        match backing.serve(&*rq) {
            // A stalled lease or no memory for a bounce buffer: not ended, blk-mq requeues it
            // (BLK_STS_RESOURCE, which is what `ENOMEM` means here) and runs the queue again
            // after a short delay.
            Err(NotServed::Later) => return Err(ENOMEM),
            result => finish(rq, result.map_err(NotServed::error)),
        }
        Ok(())
    }

    fn commit_rqs(backing: &Backing) {
        // blk-mq ended a batch early (its last request was not marked last).
        if let Some(d) = &backing.dma {
            d.issue_all();
        }
    }

    fn complete(rq: ARef<Request<Self>>) {
        finish(rq, Ok(()));
    }
}

/// A bio waits for a stalled lease or for memory in steps of `RETRY_MS` (as blk-mq requeues a
/// request after `BLK_MQ_RESOURCE_DELAY`), at most `stall_timeout` and 1000 steps more (a
/// stall ends within `stall_timeout`), before it fails.
const RETRY_MS: i64 = 3;
const EXTRA_RETRIES: i64 = 1000;

impl Backing {
    /// How many times a bio of this disk sleeps `RETRY_MS` before it fails; worked out only
    /// once a bio waits.
    fn max_retries(&self) -> i64 {
        self.max_stall_ns / (RETRY_MS * 1_000_000) + EXTRA_RETRIES
    }
}

#[vtable]
impl bio::Operations for KramBio {
    type Data = KBox<Backing>;

    fn submit_bio(backing: &Backing, bio: Bio) {
        let mut tries = 0;
        loop {
            match backing.serve(&bio) {
                // The bio-based disk does not take REQ_NOWAIT bios, so it may sleep here.
                Err(NotServed::Later) if tries < backing.max_retries() => {
                    tries += 1;
                    fsleep(Delta::from_millis(RETRY_MS));
                }
                r => return bio.end(r.map_err(NotServed::error)),
            }
        }
    }
}
