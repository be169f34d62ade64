//! The OpenFAM seed's memory-side operations (seed 003, "Memory side operations"; issue 30
//! item 4): `fam_queue_operation` queues element operations on an item at the client, split
//! by the home node of each element, and each home's queue goes out as one GSAS `INDEXED`
//! request (docs/GSAS.md, "Indexed batches"), applied by that home's service, when it holds a
//! full batch or at `fam_aggregate_flush`. OpenFAM 3.x has no such calls: this is unimem's
//! extension, with the seed's names (docs/FAM.md, "Memory-side operations").
//!
//! - Element index `i` is the element of `elem_size` bytes (4 or 8) at byte offset
//!   `i * elem_size` of the item. An index past the end fails the call (`FAM_ERR_OUTOFRANGE`)
//!   and queues nothing.
//! - ADD and SCATTER read their values from `local` when they are queued; GATHER writes the
//!   elements into `local` when their batch is sent: `local` must stay valid until
//!   `fam_aggregate_flush` returns (as with OpenFAM's non-blocking gets).
//! - ADD is an integer add (wrapping) of the element's width; the home does no floating point.
//! - A failure of a batch sent because it was full is reported by the next
//!   `fam_aggregate_flush` of the item (the first one; the other batches still go).
//! - Per home, batches go out in the order their operations were queued; a queue switches to a
//!   new batch (sending the one it holds) when the operation or element size changes.
//!   Operations on different homes are not ordered with each other before the flush.
//! - The queues belong to the client and are kept per item: descriptors of one item share
//!   one queue. Operations still queued when the client goes are dropped.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

use unimem_wire::gsas::indexed::{self, ADD, GATHER, SCATTER};

use super::data::check_range;
use super::memory::{gsas_error, Memory, Pool};
use crate::meta::Item;
use crate::{FamError, Result};

/// `FAM_QUEUE_OP`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueOp {
    /// `OP_ADD_INDEXED`: add `local[i]` to element `index[i]`.
    AddIndexed,
    /// `OP_SCATTER`: store `local[i]` in element `index[i]`.
    Scatter,
    /// `OP_GATHER`: read element `index[i]` into `local[i]`.
    Gather,
}

impl QueueOp {
    /// From `FAM_QUEUE_OP`'s value (`OP_ADD_INDEXED` 0, `OP_SCATTER` 1, `OP_GATHER` 2).
    pub fn from_c(v: i32) -> Option<QueueOp> {
        match v {
            0 => Some(QueueOp::AddIndexed),
            1 => Some(QueueOp::Scatter),
            2 => Some(QueueOp::Gather),
            _ => None,
        }
    }

    /// The INDEXED kind.
    fn kind(self) -> u8 {
        match self {
            QueueOp::AddIndexed => ADD,
            QueueOp::Scatter => SCATTER,
            QueueOp::Gather => GATHER,
        }
    }
}

/// Where a gathered element goes: `elem_size` bytes of the caller's buffer.
struct Dest(*mut u8);

// SAFETY: the pointer is the caller's buffer, which `queue_operation`'s contract keeps valid
// until the flush; it is written only under the queues' lock, by whichever thread sends.
unsafe impl Send for Dest {}

/// One home's batch being filled: entries of one kind and element size.
struct Batch {
    kind: u8,
    elem_size: u8,
    entries: Vec<(u64, u64)>,
    /// GATHER: where each entry's element goes.
    dests: Vec<Dest>,
}

impl Batch {
    fn full(&self) -> bool {
        self.entries.len() >= indexed::max(self.kind) as usize
    }

    /// Sends it to its home; a GATHER's elements are written to their destinations.
    fn send(self, m: &dyn Memory) -> Result<()> {
        let mut out = vec![
            0u64;
            if self.kind == GATHER {
                self.entries.len()
            } else {
                0
            }
        ];
        m.indexed(self.kind, self.elem_size, &self.entries, &mut out)
            .map_err(|e| gsas_error("fam_queue_operation", e))?;
        let n = usize::from(self.elem_size);
        for (d, v) in self.dests.iter().zip(&out) {
            let bytes = if n == 4 {
                (*v as u32).to_ne_bytes().to_vec()
            } else {
                v.to_ne_bytes().to_vec()
            };
            // SAFETY: `d` is `n` writable bytes of the caller's buffer, valid until the flush
            // (`queue_operation`'s contract); nothing else of ours refers to them.
            unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), d.0, n) };
        }
        Ok(())
    }
}

/// An item's queues: one batch per home, and the first failure of a batch sent before the
/// flush.
#[derive(Default)]
struct ItemQueue {
    homes: BTreeMap<u16, Batch>,
    failed: Option<FamError>,
}

/// The queues of one client, per item id.
#[derive(Default)]
pub struct Queues {
    items: Mutex<HashMap<u64, ItemQueue>>,
}

/// The element size as INDEXED takes it: 4 or 8 bytes.
fn element_size(elem_size: u64) -> Result<u8> {
    match elem_size {
        4 => Ok(4),
        8 => Ok(8),
        _ => Err(FamError::Invalid(format!(
            "fam_queue_operation: element size {elem_size} (4 or 8 bytes)"
        ))),
    }
}

/// The GSAS address of each element, all checked before anything is queued.
fn addresses(item: &Item, indexes: &[u64], es: u8) -> Result<Vec<u64>> {
    let size = u64::from(es);
    indexes
        .iter()
        .enumerate()
        .map(|(i, &x)| {
            let off = x.checked_mul(size).ok_or_else(|| {
                FamError::OutOfRange(format!("fam_queue_operation: element {i}'s index {x}"))
            })?;
            check_range(item, off, size)?;
            match item.locate(off) {
                Some((a, run)) if run >= size && a % size == 0 => Ok(a),
                _ => Err(FamError::Metadata(format!(
                    "item {}: element {x} of {es} bytes is not in one piece of its memory",
                    item.id
                ))),
            }
        })
        .collect()
}

impl Queues {
    /// Queues `op` on the elements of `item` at `indexes` (see the module documentation);
    /// batches that fill up are sent with a handle of `pool`.
    ///
    /// # Safety
    ///
    /// `local` must point to `indexes.len() * elem_size` bytes, readable for ADD and SCATTER
    /// during the call, writable for GATHER until [`flush`](Self::flush) of the item returns
    /// (or the client is dropped) and not otherwise accessed meanwhile.
    pub unsafe fn queue(
        &self,
        pool: &Pool,
        op: QueueOp,
        local: *mut u8,
        item: &Item,
        indexes: &[u64],
        elem_size: u64,
    ) -> Result<()> {
        let es = element_size(elem_size)?;
        let addrs = addresses(item, indexes, es)?;
        if !addrs.is_empty() && local.is_null() {
            return Err(FamError::NullPtr(
                "fam_queue_operation: local is NULL".into(),
            ));
        }
        let n = usize::from(es);
        let kind = op.kind();
        let mut items = self.items.lock().unwrap_or_else(|p| p.into_inner());
        let q = items.entry(item.id.0).or_default();
        let mut ready = Vec::new();
        for (i, &a) in addrs.iter().enumerate() {
            // SAFETY: element `i` of the caller's buffer (the contract).
            let at = unsafe { local.add(i * n) };
            let (value, dest) = if kind == GATHER {
                (0, Some(Dest(at)))
            } else {
                let mut b = [0u8; 8];
                // SAFETY: `n` readable bytes of the caller's buffer (the contract).
                unsafe { std::ptr::copy_nonoverlapping(at, b.as_mut_ptr(), n) };
                let v = if n == 4 {
                    u64::from(u32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
                } else {
                    u64::from_ne_bytes(b)
                };
                (v, None)
            };
            let home = unimem_wire::gsas::node_of(a);
            if q.homes
                .get(&home)
                .is_some_and(|b| b.kind != kind || b.elem_size != es)
            {
                ready.extend(q.homes.remove(&home));
            }
            let b = q.homes.entry(home).or_insert_with(|| Batch {
                kind,
                elem_size: es,
                entries: Vec::new(),
                dests: Vec::new(),
            });
            b.entries.push((a, value));
            b.dests.extend(dest);
            if b.full() {
                ready.extend(q.homes.remove(&home));
            }
        }
        if !ready.is_empty() {
            let r = pool.with(|m| {
                for b in ready {
                    b.send(m)?;
                }
                Ok(())
            });
            // The batches a failure left unsent fail with it: reported at the flush.
            if let Err(e) = r {
                q.failed.get_or_insert(e);
            }
        }
        Ok(())
    }

    /// Sends everything queued on `item` and reports the first failure since its last flush.
    pub fn flush(&self, pool: &Pool, item: &Item) -> Result<()> {
        let mut items = self.items.lock().unwrap_or_else(|p| p.into_inner());
        let Some(mut q) = items.remove(&item.id.0) else {
            return Ok(());
        };
        drop(items);
        let mut failed = q.failed.take();
        let batches: Vec<Batch> = std::mem::take(&mut q.homes).into_values().collect();
        if !batches.is_empty() {
            let r = pool.with(|m| {
                let mut first: Option<FamError> = None;
                for b in batches {
                    if let Err(e) = b.send(m) {
                        first.get_or_insert(e);
                    }
                }
                first.map_or(Ok(()), Err)
            });
            if let Err(e) = r {
                failed.get_or_insert(e);
            }
        }
        failed.map_or(Ok(()), Err)
    }

    /// Whether anything is queued on item `id` (tests).
    pub fn pending(&self, id: u64) -> usize {
        self.items
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&id)
            .map_or(0, |q| q.homes.values().map(|b| b.entries.len()).sum())
    }
}
