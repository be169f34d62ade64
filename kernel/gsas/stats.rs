// SPDX-License-Identifier: GPL-2.0
//! The service's counters: `/sys/kernel/debug/unimem_gsas/stats` (all of them, one `name value`
//! per line) and `/sys/kernel/unimem_gsas/<name>` (one value per file).
//!
//! The sysfs attributes are a C `attribute_group` in `static`s (`kernel/common/sysfs_group.rs`,
//! as `unimem_eusrvmem`'s), on a kobject made for them under `/sys/kernel`.

use crate::{
    gsas::{op, status},
    service::Service,
    sysfs_group::{kernel_dir_counters, KernelDir},
};
use core::{
    fmt,
    sync::atomic::{AtomicU64, Ordering},
};
use kernel::prelude::*;

/// Request opcodes by counter index (the base opcode, width flag removed).
const OPS: [(u8, &str); 30] = [
    (op::NOP, "nop"),
    (op::READ, "read"),
    (op::WRITE, "write"),
    (op::READ128, "read128"),
    (op::READ256, "read256"),
    (op::WRITE128, "write128"),
    (op::FETCH_ADD, "fetch_add"),
    (op::CAS, "cas"),
    (op::SWAP, "swap"),
    (op::FETCH_AND, "fetch_and"),
    (op::FETCH_OR, "fetch_or"),
    (op::FETCH_XOR, "fetch_xor"),
    (op::FETCH_MIN, "fetch_min"),
    (op::FETCH_MAX, "fetch_max"),
    (op::FETCH_UMIN, "fetch_umin"),
    (op::FETCH_UMAX, "fetch_umax"),
    (op::CAS128, "cas128"),
    (op::COPY, "copy"),
    (op::INDEXED, "indexed"),
    (op::BULK_READ, "bulk_read"),
    (op::BULK_WRITE, "bulk_write"),
    (op::ALLOC, "alloc"),
    (op::FREE, "free"),
    (op::FORK, "fork"),
    (op::WAIT, "wait"),
    (op::IFACE_STATE, "iface_state"),
    (op::FREE_TAG, "free_tag"),
    (op::GRANT, "grant"),
    (op::MAP, "map"),
    (op::KEEP, "keep"),
];

/// Counters other than the per-opcode ones.
#[derive(Clone, Copy)]
pub(crate) enum Counter {
    /// Requests answered OK.
    Ok,
    /// Another tree's page: nothing changed.
    Denied,
    /// Not an allocated page of this node.
    Faults,
    /// Unknown opcode or width, bad length or count.
    Invalid,
    Unaligned,
    NoMemory,
    NoPool,
    /// Packets dropped: not from an interface threads have.
    Malformed,
    /// Answers that could not be written (the fabric device went away).
    Unanswered,
    /// FORKs queued for the daemon.
    Forks,
    /// Programs the daemon could not start.
    ForkFailed,
    /// Children that exited.
    Exits,
    /// FORKs answered `NO_DAEMON`, `BUSY`; WAITs answered `RUNNING`, `NO_CHILD`.
    NoDaemon,
    Busy,
    Running,
    NoChild,
    /// Mappings of pages granted to their tree's threads (`mailbox::MMAP_GSAS`).
    Maps,
    /// Mappings refused: a page of another tree.
    MapDenied,
    /// Mappings refused: a page not allocated (or no pool).
    MapFaults,
    /// Requests dropped because their interface changed owner (or was freed) before they were
    /// applied: never applied for the next owner (`claims.rs`).
    Stale,
    /// ALLOCs and FORKs refused: the issuing user is at its quota on this node.
    Quota,
    /// Freed allocations larger than 1 MiB, zeroed by the zeroing work after the FREE was
    /// answered (not inside the mailbox's served section).
    ZeroedLater,
    /// MAPs approved: another node's thread may map pages (`remote_maps.rs`).
    RemoteMaps,
    /// Rounds of ZAPs begun (a freed or narrowed allocation that other nodes may map).
    ZapRounds,
    /// Freed allocations held out of use until their mappers acknowledged.
    Quarantines,
    /// ZAP_ACKs received.
    ZapAcks,
    /// Rounds not acknowledged within 10 s (logged once each).
    ZapsUnacked,
    /// Requests answered `STALLED` (a lease being renewed, or the pool growing: asked again).
    Stalled,
    /// Ranges added to the pool (`grow.rs`), and attempts that got none.
    PoolGrown,
    PoolGrowFailed,
    /// Ranges given back to the daemon (unused at the pool's end).
    PoolShrunk,
    /// Answers after which the issuer node was rung: its thread slept for the answer
    /// (`mailbox::NR_WAIT_ANSWER`).
    AnswerDoorbells,
}

const COUNTERS: [(Counter, &str); 32] = [
    (Counter::Ok, "ok"),
    (Counter::Denied, "denied"),
    (Counter::Faults, "faults"),
    (Counter::Invalid, "invalid"),
    (Counter::Unaligned, "unaligned"),
    (Counter::NoMemory, "no_memory"),
    (Counter::NoPool, "no_pool"),
    (Counter::Malformed, "malformed"),
    (Counter::Unanswered, "unanswered"),
    (Counter::Forks, "forks"),
    (Counter::ForkFailed, "fork_failed"),
    (Counter::Exits, "exits"),
    (Counter::NoDaemon, "no_daemon"),
    (Counter::Busy, "busy"),
    (Counter::Running, "running"),
    (Counter::NoChild, "no_child"),
    (Counter::Maps, "maps"),
    (Counter::MapDenied, "map_denied"),
    (Counter::MapFaults, "map_faults"),
    (Counter::Stale, "stale"),
    (Counter::Quota, "over_quota"),
    (Counter::ZeroedLater, "zeroed_later"),
    (Counter::RemoteMaps, "remote_maps"),
    (Counter::ZapRounds, "zap_rounds"),
    (Counter::Quarantines, "quarantines"),
    (Counter::ZapAcks, "zap_acks"),
    (Counter::ZapsUnacked, "zaps_unacked"),
    (Counter::Stalled, "stalled"),
    (Counter::PoolGrown, "pool_grown"),
    (Counter::PoolGrowFailed, "pool_grow_failed"),
    (Counter::PoolShrunk, "pool_shrunk"),
    (Counter::AnswerDoorbells, "answer_doorbells"),
];

pub(crate) struct Stats {
    requests: [AtomicU64; OPS.len()],
    /// Requests whose opcode names no operation (also counted `invalid` when answered).
    unknown: AtomicU64,
    counters: [AtomicU64; COUNTERS.len()],
}

impl Stats {
    pub(crate) const fn new() -> Self {
        Self {
            requests: [const { AtomicU64::new(0) }; OPS.len()],
            unknown: AtomicU64::new(0),
            counters: [const { AtomicU64::new(0) }; COUNTERS.len()],
        }
    }

    pub(crate) fn request(&self, opcode: u8) {
        let base = opcode & !op::WIDTH32;
        match OPS.iter().position(|&(o, _)| o == base) {
            Some(i) => self.requests[i].fetch_add(1, Ordering::Relaxed),
            None => self.unknown.fetch_add(1, Ordering::Relaxed),
        };
    }

    pub(crate) fn bump(&self, c: Counter) {
        self.counters[c as usize].fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn status(&self, s: u8) {
        self.bump(match s {
            status::OK => Counter::Ok,
            status::DENIED => Counter::Denied,
            status::FAULT => Counter::Faults,
            status::UNALIGNED => Counter::Unaligned,
            status::NO_MEMORY => Counter::NoMemory,
            status::NO_POOL => Counter::NoPool,
            status::NO_DAEMON => Counter::NoDaemon,
            status::BUSY => Counter::Busy,
            status::RUNNING => Counter::Running,
            status::NO_CHILD => Counter::NoChild,
            status::QUOTA => Counter::Quota,
            status::STALLED => Counter::Stalled,
            // Counted as `fork_failed` by the service.
            status::EXEC_FAILED => return,
            _ => Counter::Invalid,
        });
    }

    fn get(&self, name: &[u8]) -> Option<u64> {
        let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
        if let Some(op) = name.strip_prefix(b"requests_") {
            if op == b"unknown" {
                return Some(load(&self.unknown));
            }
            let i = OPS.iter().position(|(_, n)| n.as_bytes() == op)?;
            return Some(load(&self.requests[i]));
        }
        let i = COUNTERS.iter().position(|(_, n)| n.as_bytes() == name)?;
        Some(load(&self.counters[i]))
    }
}

impl Service {
    /// The pool's figures: pages, pages in use, allocations, freed pages held out of use
    /// until other nodes' mappings are gone.
    fn pool_figures(&self) -> (usize, usize, usize, usize, usize) {
        let inner = self.inner.lock();
        inner.pool.as_ref().map_or((0, 0, 0, 0, 0), |p| {
            (
                p.pages.pages(),
                p.pages.used,
                p.pages.allocations,
                p.pages.remote.held,
                p.pages.ranges(),
            )
        })
    }

    fn value(&self, name: &[u8]) -> Option<u64> {
        let (pages, used, allocations, quarantined, ranges) = self.pool_figures();
        Some(match name {
            b"node" => u64::from(self.node),
            b"pool_pages" => pages as u64,
            b"pool_max_pages" => self.max_pages as u64,
            b"pool_ranges" => ranges as u64,
            b"used_pages" => used as u64,
            b"allocations" => allocations as u64,
            b"quarantined_pages" => quarantined as u64,
            _ => return self.stats.get(name),
        })
    }

    pub(crate) fn write_stats(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for name in NAMES {
            let name = name.to_bytes();
            if let (Ok(s), Some(v)) = (core::str::from_utf8(name), self.value(name)) {
                writeln!(f, "{} {}", s, v)?;
            }
        }
        if let Some(p) = self.inner.lock().pool.as_ref() {
            let left = p.ranges.left(self.epoch.now()) / 1_000_000;
            for r in p.ranges.iter() {
                writeln!(f, "pool_range {:#x} {}", r.offset, r.pages)?;
            }
            writeln!(
                f,
                "lease_ms_left {}",
                if p.ranges.is_revoked() { -1 } else { left }
            )?;
        }
        Ok(())
    }
}

/// Every name shown, in order (sysfs files and debugfs lines).
const NAMES: [&CStr; 69] = [
    c"node",
    c"pool_pages",
    c"pool_max_pages",
    c"pool_ranges",
    c"used_pages",
    c"allocations",
    c"quarantined_pages",
    c"requests_nop",
    c"requests_read",
    c"requests_write",
    c"requests_read128",
    c"requests_read256",
    c"requests_write128",
    c"requests_fetch_add",
    c"requests_cas",
    c"requests_swap",
    c"requests_fetch_and",
    c"requests_fetch_or",
    c"requests_fetch_xor",
    c"requests_fetch_min",
    c"requests_fetch_max",
    c"requests_fetch_umin",
    c"requests_fetch_umax",
    c"requests_cas128",
    c"requests_copy",
    c"requests_bulk_read",
    c"requests_bulk_write",
    c"requests_indexed",
    c"requests_alloc",
    c"requests_free",
    c"requests_iface_state",
    c"requests_free_tag",
    c"requests_grant",
    c"requests_map",
    c"requests_fork",
    c"requests_wait",
    c"requests_unknown",
    c"ok",
    c"denied",
    c"faults",
    c"invalid",
    c"unaligned",
    c"no_memory",
    c"no_pool",
    c"malformed",
    c"unanswered",
    c"forks",
    c"fork_failed",
    c"exits",
    c"no_daemon",
    c"busy",
    c"running",
    c"no_child",
    c"maps",
    c"map_denied",
    c"map_faults",
    c"stale",
    c"over_quota",
    c"zeroed_later",
    c"remote_maps",
    c"zap_rounds",
    c"quarantines",
    c"zap_acks",
    c"zaps_unacked",
    c"stalled",
    c"pool_grown",
    c"pool_grow_failed",
    c"pool_shrunk",
    c"answer_doorbells",
];

/// `/sys/kernel/unimem_gsas/` while alive.
pub(crate) type Sysfs = KernelDir<Service>;

kernel_dir_counters! {
    pub(crate) fn sysfs(Service) = (c"unimem_gsas", NAMES, Service::value)
}
