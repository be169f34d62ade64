// SPDX-License-Identifier: GPL-2.0
//! An instance: its size, where its bytes are, and its block device once all of them are lent
//! and acknowledged; and the making of that device.

use crate::disk::{Backing, KramBio, KramDisk};
use crate::kram::Kram;
use crate::layout::Shared;
use kernel::{
    block::{
        bio,
        mq::{gen_disk::GenDisk, gen_disk::GenDiskBuilder, TagSet, TagSetFlags},
    },
    prelude::*,
    sync::{Arc, Mutex},
};

/// An instance's block device; deleting it waits for the I/O that runs in it.
pub(crate) enum Disk {
    /// `transfermode=0`: bio-based.
    Bio { _disk: bio::Disk<KramBio> },
    /// `transfermode=1`: blk-mq.
    Queue { _disk: GenDisk<KramDisk> },
}

pub(crate) struct InstanceState {
    /// Where the instance's bytes are; shared with its disk.
    pub(crate) shared: Arc<Shared>,
    pub(crate) disk: Option<Disk>,
    /// A part of the disk (without a mirror) was revoked: its data is gone, its I/O fails.
    pub(crate) lost: bool,
}

impl InstanceState {
    /// Whether any lender lends this instance a part yet.
    pub(crate) fn uses_any(&self) -> bool {
        self.shared.layout.lock().parts().next().is_some()
    }
}

/// One swap device, `/dev/kram<id>`.
#[pin_data]
pub(crate) struct Instance {
    pub(crate) id: u32,
    pub(crate) size_mib: u32,
    #[pin]
    pub(crate) state: Mutex<InstanceState>,
}

/// Requests in flight per hardware queue.
const QUEUE_DEPTH: u32 = 128;
/// The largest request (and data segment): 1 MiB, a KRAM chunk.
const MAX_REQUEST_BYTES: u32 = 1 << 20;

impl Kram {
    pub(crate) fn new_disk(&self, inst: &Instance, state: &InstanceState) -> Result<Disk> {
        let len = u64::from(inst.size_mib) << 20;
        let backing = KBox::new(
            Backing {
                shared: state.shared.clone(),
                len,
                dma: self.dma.clone(),
                epoch: self.epoch,
                fabric: self.fabric.clone(),
                max_stall_ns: self.max_stall_ns,
            },
            GFP_KERNEL,
        )?;
        let name = fmt!("kram{}", inst.id);
        // I/O accounting costs a visible share of a copy at memory speed: off, as on brd, until
        // a user writes 1 to `queue/iostats`; swap may read in place (synchronous, as on brd
        // and zram).
        let builder = GenDiskBuilder::new()
            .capacity_sectors(len >> 9)
            .logical_block_size(4096)?
            .physical_block_size(4096)?
            .synchronous(true)
            .io_stat(false)
            .max_hw_sectors(MAX_REQUEST_BYTES >> 9)
            .max_segment_size(MAX_REQUEST_BYTES)?
            // A discard is zeroed under the layout's spinlock and the window's RCU read side
            // (`Io::zero`): the block layer splits them into requests no longer than a read's,
            // so no CPU spends seconds on 4 GiB with preemption off.
            .max_discard_sectors(MAX_REQUEST_BYTES >> 9);
        if self.dma.is_none() {
            return Ok(Disk::Bio {
                _disk: builder.build_bio::<KramBio>(name, backing)?,
            });
        }
        // The engine's completions end requests: blk-mq's tags bound the copies in flight, no
        // I/O scheduler by default, and one queue per CPU keeps submitters apart.
        let tagset = Arc::pin_init(
            TagSet::new_with_flags(
                kernel::cpu::nr_cpu_ids(),
                QUEUE_DEPTH,
                1,
                TagSetFlags::NO_SCHED_BY_DEFAULT,
            ),
            GFP_KERNEL,
        )?;
        Ok(Disk::Queue {
            _disk: builder.build(name, tagset, backing)?,
        })
    }
}
