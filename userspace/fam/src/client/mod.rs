//! The OpenFAM client: a [`Client`] is one initialised `openfam::fam` instance.
//!
//! - Control path: region and item calls are requests to famd ([`link`]), found on the node
//!   [`config`] names; each answer is owned ([`item`]).
//! - Data path: put/get, gather/scatter and atomics go straight to the GSAS addresses of the
//!   item's extents, through the home nodes' services ([`data`], [`gather`], [`atomic`]),
//!   with a [`memory::Pool`] of GSAS handles shared by the client's threads. The home's
//!   kernel checks every access against the grant famd set from the item's mode.
//! - [`map`]: load/store access to items on this node. [`pe`]: rank and barrier.
//!   [`options`]: `Fam_Options` and `fam_get_option`.
//!
//! - [`queue`]: the seed's memory-side operations (`fam_queue_operation`,
//!   `fam_aggregate_flush`), our extension: element operations queued per home node and
//!   applied there by its service in batches (GSAS `INDEXED`).
//!
//! Every call completes before it returns, the non-blocking ones included (the C ABI's
//! `quiet` then has nothing to wait for), except queued operations, which complete by
//! [`Client::aggregate_flush`].

pub mod atomic;
pub mod config;
pub mod data;
pub mod gather;
pub mod item;
pub mod link;
pub mod map;
pub mod memory;
pub mod options;
pub mod pe;
pub mod queue;

#[cfg(test)]
pub(crate) mod tests;

use std::collections::HashMap;
use std::sync::Mutex;

use unimem_wire::fam::{Interleave, MemoryType, Redundancy, Request};

pub use atomic::{AtomicOp, Value};
pub use gather::Elements;
pub use item::RegionInfo;
pub use link::{Answer, Link, MailboxWire, Wire};
pub use map::Mapping;
pub use memory::{Memory, Pool};
pub use options::{OptionValue, Options};
pub use pe::Pe;
pub use queue::{QueueOp, Queues};

use crate::meta::Item;
use crate::{FamError, Result};

/// Attributes of a new region (the wire's; permission level and placement are not carried).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RegionAttributes {
    pub redundancy: Redundancy,
    pub memory_type: MemoryType,
    pub interleave: Interleave,
}

/// One initialised instance: the link to famd, the GSAS handles, the PE.
pub struct Client {
    options: Options,
    famd_node: u16,
    link: Link,
    pool: Pool,
    pe: Pe,
    /// `fam_queue_operation`'s queues, per item.
    queues: Queues,
    /// Open descriptors per item id whose allocations this process keeps ([`Client::keep`]).
    kept: Mutex<HashMap<u64, usize>>,
}

impl Client {
    /// Connects to famd (found by [`config::famd_node`]) and says hello, opens the data path
    /// and joins the PE group. Fails cleanly (`FAM_ERR_RPC` without the mailbox device,
    /// `FAM_ERR_TIMEOUT` when famd does not answer) rather than waiting forever.
    pub fn connect(options: Options) -> Result<Client> {
        options.check()?;
        let (famd_node, source) =
            config::famd_node(options.cis_server.as_deref()).map_err(FamError::Invalid)?;
        log::debug!("fam: famd on node {famd_node} ({source:?})");
        let wire = MailboxWire::open(famd_node)?;
        let link = Link::new(Box::new(wire), config::timeout());
        link.hello().map_err(|e| match e {
            FamError::Timeout(m) => FamError::Timeout(format!("famd on node {famd_node}: {m}")),
            other => other,
        })?;
        let pool = Pool::device();
        let pe = pool.with(pe::join_from_env)?;
        Ok(Client {
            options,
            famd_node,
            link,
            pool,
            pe,
            queues: Queues::default(),
            kept: Mutex::default(),
        })
    }

    /// A client over given parts (tests, or a program with its own transport).
    pub fn with_parts(options: Options, famd_node: u16, link: Link, pool: Pool, pe: Pe) -> Client {
        Client {
            options,
            famd_node,
            link,
            pool,
            pe,
            queues: Queues::default(),
            kept: Mutex::default(),
        }
    }

    pub fn options(&self) -> &Options {
        &self.options
    }

    pub fn famd_node(&self) -> u16 {
        self.famd_node
    }

    pub fn pe(&self) -> &Pe {
        &self.pe
    }

    /// Option `name` as `fam_get_option` reports it.
    pub fn option(&self, name: &str) -> Result<OptionValue> {
        self.options.value(name, &self.pe, self.famd_node)
    }

    /// Runs `f` with a GSAS handle of the pool.
    pub fn with_memory<R>(&self, f: impl FnOnce(&dyn Memory) -> Result<R>) -> Result<R> {
        self.pool.with(f)
    }

    // ---- regions ----

    pub fn create_region(
        &self,
        name: &str,
        size: u64,
        mode: u32,
        attrs: RegionAttributes,
    ) -> Result<RegionInfo> {
        self.link.region(&Request::CreateRegion {
            name,
            size,
            mode,
            redundancy: attrs.redundancy,
            memory_type: attrs.memory_type,
            interleave: attrs.interleave,
        })
    }

    pub fn destroy_region(&self, region: u64) -> Result<()> {
        self.link.done(&Request::DestroyRegion { region })
    }

    pub fn resize_region(&self, region: u64, size: u64) -> Result<()> {
        self.link.done(&Request::ResizeRegion { region, size })
    }

    pub fn lookup_region(&self, name: &str) -> Result<RegionInfo> {
        self.link.region(&Request::LookupRegion { name })
    }

    pub fn change_region_permissions(&self, region: u64, mode: u32) -> Result<()> {
        self.link
            .done(&Request::ChangeRegionPermissions { region, mode })
    }

    pub fn stat_region(&self, region: u64) -> Result<RegionInfo> {
        self.link.region(&Request::StatRegion { region })
    }

    // ---- items ----

    /// Allocates an item (`name` empty: anonymous) in `region`.
    pub fn allocate(&self, region: u64, name: &str, size: u64, mode: u32) -> Result<Item> {
        let item = self.link.item(&Request::Allocate {
            region,
            name,
            size,
            mode,
        })?;
        self.keep(&item, true);
        Ok(item)
    }

    /// A descriptor keeps the access its allocation or lookup found, as an open file keeps
    /// its access after a `chmod` (OpenFAM's descriptors hold the keys they were given): the
    /// first open descriptor of an item keeps each of its allocations on its home (`on`), the
    /// last one closed lets go. Best effort: a home that cannot keep it (its table is full)
    /// checks the item's current mode, which is the stricter rule.
    pub fn keep(&self, item: &Item, on: bool) {
        let reach = {
            let mut kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
            let n = kept.entry(item.id.0).or_insert(0);
            let was = *n;
            *n = if on { was + 1 } else { was.saturating_sub(1) };
            if *n == 0 {
                kept.remove(&item.id.0);
            }
            // Only the first open and the last close reach the homes.
            if on {
                was == 0
            } else {
                was == 1
            }
        };
        if !reach {
            return;
        }
        let _ = self.pool.with(|m| {
            for e in &item.extents {
                if let Err(err) = m.keep(e.addr, on) {
                    log::debug!(
                        "item {} at {:#x}: {} failed: {err}",
                        item.name,
                        e.addr,
                        if on { "keep" } else { "unkeep" }
                    );
                }
            }
            Ok(())
        });
    }

    // ---- backups (famd writes them on its node) ----

    /// Backs item `item` up as `name`.
    pub fn backup(&self, item: u64, name: &str) -> Result<()> {
        self.link.done(&Request::Backup { item, name })
    }

    /// Writes backup `name` into item `item`.
    pub fn restore(&self, name: &str, item: u64) -> Result<()> {
        self.link.done(&Request::Restore { name, item })
    }

    /// A new item of region `region` (named `item`, or anonymous if empty) holding backup
    /// `name`.
    pub fn restore_new(&self, name: &str, region: u64, item: &str, mode: u32) -> Result<Item> {
        self.link.item(&Request::RestoreNew {
            name,
            region,
            item,
            mode,
        })
    }

    pub fn delete_backup(&self, name: &str) -> Result<()> {
        self.link.done(&Request::DeleteBackup { name })
    }

    /// One line per backup the caller may read (`name` empty: all).
    pub fn list_backup(&self, name: &str) -> Result<String> {
        self.link.text(&Request::ListBackup { name })
    }

    pub fn deallocate(&self, item: u64) -> Result<()> {
        self.link.done(&Request::Deallocate { item })?;
        // Its allocations, and what was kept of them, are gone.
        self.kept
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&item);
        Ok(())
    }

    pub fn lookup(&self, item: &str, region: &str) -> Result<Item> {
        let found = self.link.item(&Request::Lookup { item, region })?;
        self.keep(&found, true);
        Ok(found)
    }

    pub fn change_item_permissions(&self, item: u64, mode: u32) -> Result<()> {
        self.link
            .done(&Request::ChangeItemPermissions { item, mode })
    }

    pub fn stat_item(&self, item: u64) -> Result<Item> {
        self.link.item(&Request::StatItem { item })
    }

    // ---- data path ----

    pub fn put(&self, item: &Item, offset: u64, data: &[u8]) -> Result<()> {
        data::check_range(item, offset, data.len() as u64)?;
        self.pool.with(|m| data::put(m, item, offset, data))
    }

    pub fn get(&self, item: &Item, offset: u64, buf: &mut [u8]) -> Result<()> {
        data::check_range(item, offset, buf.len() as u64)?;
        self.pool.with(|m| data::get(m, item, offset, buf))
    }

    pub fn gather(
        &self,
        item: &Item,
        which: Elements<'_>,
        element_size: u64,
        buf: &mut [u8],
    ) -> Result<()> {
        self.pool
            .with(|m| gather::gather(m, item, which, element_size, buf))
    }

    pub fn scatter(
        &self,
        item: &Item,
        which: Elements<'_>,
        element_size: u64,
        buf: &[u8],
    ) -> Result<()> {
        self.pool
            .with(|m| gather::scatter(m, item, which, element_size, buf))
    }

    /// FAM-to-FAM copy, through this process for now.
    pub fn copy(
        &self,
        src: &Item,
        src_offset: u64,
        dst: &Item,
        dst_offset: u64,
        len: u64,
    ) -> Result<()> {
        self.pool
            .with(|m| data::copy(m, src, src_offset, dst, dst_offset, len))
    }

    /// Atomic `op` with operand `v` on the value at `offset`; the old value.
    pub fn atomic<T: Value>(&self, item: &Item, offset: u64, op: AtomicOp, v: T) -> Result<T> {
        let addr = atomic::address(item, offset, T::SIZE)?;
        self.pool.with(|m| atomic::apply(m, addr, op, v))
    }

    /// Compare-and-swap at `offset`: the value found.
    pub fn compare_swap<T: Value>(&self, item: &Item, offset: u64, old: T, new: T) -> Result<T> {
        let addr = atomic::address(item, offset, T::SIZE)?;
        self.pool.with(|m| atomic::compare_swap(m, addr, old, new))
    }

    pub fn fetch_i128(&self, item: &Item, offset: u64) -> Result<i128> {
        let addr = atomic::address(item, offset, 16)?;
        self.pool.with(|m| atomic::fetch128(m, addr))
    }

    pub fn set_i128(&self, item: &Item, offset: u64, v: i128) -> Result<()> {
        let addr = atomic::address(item, offset, 16)?;
        self.pool.with(|m| atomic::set128(m, addr, v))
    }

    pub fn compare_swap_i128(
        &self,
        item: &Item,
        offset: u64,
        old: i128,
        new: i128,
    ) -> Result<i128> {
        let addr = atomic::address(item, offset, 16)?;
        self.pool
            .with(|m| atomic::compare_swap128(m, addr, old, new))
    }

    // ---- memory-side operations (the seed's fam_queue_operation, our extension) ----

    /// Queues `op` on the elements of `item` at `indexes`, of `elem_size` bytes (4 or 8), with
    /// their values in (ADD, SCATTER) or their destinations at (GATHER) `local`, element `i` at
    /// `local + i * elem_size` ([`queue`]). Checked at once (element size: `FAM_ERR_INVALID`,
    /// an index past the end: `FAM_ERR_OUTOFRANGE`, and nothing is queued); a home whose queue
    /// fills is sent its batch (its failure is reported by [`aggregate_flush`](Self::aggregate_flush)).
    ///
    /// # Safety
    ///
    /// `local` must point to `indexes.len() * elem_size` bytes, readable for ADD and SCATTER
    /// during the call, writable for GATHER until `aggregate_flush(item)` returns and not used
    /// otherwise meanwhile.
    pub unsafe fn queue_operation(
        &self,
        op: QueueOp,
        local: *mut u8,
        item: &Item,
        indexes: &[u64],
        elem_size: u64,
    ) -> Result<()> {
        // SAFETY: the caller's contract, passed on.
        unsafe {
            self.queues
                .queue(&self.pool, op, local, item, indexes, elem_size)
        }
    }

    /// Sends every operation queued on `item` and waits for them: the first failure since the
    /// item's last flush, if any.
    pub fn aggregate_flush(&self, item: &Item) -> Result<()> {
        self.queues.flush(&self.pool, item)
    }

    /// Elements queued on item `id` and not sent yet.
    pub fn queued(&self, id: u64) -> usize {
        self.queues.pending(id)
    }

    // ---- map, barrier ----

    pub fn map(&self, item: &Item) -> Result<Mapping> {
        self.pool.with(|m| map::map(m, item))
    }

    pub fn unmap(&self, mapping: &Mapping) -> Result<()> {
        map::unmap(mapping)
    }

    /// Waits for every PE of the group.
    pub fn barrier_all(&self) -> Result<()> {
        self.pool.with(|m| pe::barrier(m, &self.pe))
    }
}
