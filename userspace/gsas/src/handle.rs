//! [`Gsas`]: a per-thread handle that applies GSAS operations through the home nodes' atomic
//! services: one `SEND` per operation, the answer read from the mapped response slot.

use crate::error::{Error, Request, Result};
use crate::mapped_read::Reads;
use crate::submit::Slots;
use crate::transport::{kick_error, send_error, Device, Pause, Transport};
use crate::tree::TreeSource;
use nix::errno::Errno;
use std::cell::{Cell, RefCell};
use std::time::{Duration, Instant};
use unimem_wire::gas::MAX_NODES;
use unimem_wire::gsas::{self, fork, op, request, status, Response, BULK_MAX, PAGE_SIZE};

/// A remoteForked child: its node (bits 48-63) and that node's serial.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ChildId(pub u64);

impl ChildId {
    /// The node that runs the child.
    pub fn node(self) -> u16 {
        gsas::node_of(self.0)
    }
}

impl std::fmt::Display for ChildId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:#x}", self.0)
    }
}

/// A child's wait status, as `waitpid` gives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExitStatus(pub i32);

impl ExitStatus {
    /// The exit code, if it exited (rather than being killed).
    pub fn code(self) -> Option<i32> {
        (self.0 & 0x7f == 0).then_some((self.0 >> 8) & 0xff)
    }

    /// The signal that killed it, if one did.
    pub fn signal(self) -> Option<i32> {
        let s = self.0 & 0x7f;
        (s != 0 && s != 0x7f).then_some(s)
    }

    /// As a shell reports it: the code, or 128 + the signal.
    pub fn shell(self) -> i32 {
        self.code()
            .or(self.signal().map(|s| 128 + s))
            .unwrap_or(255)
    }
}

impl std::fmt::Display for ExitStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.code(), self.signal()) {
            (Some(c), _) => write!(f, "exit code {c}"),
            (_, Some(s)) => write!(f, "killed by signal {s}"),
            _ => write!(f, "wait status {:#x}", self.0),
        }
    }
}

/// How a handle waits for an answer: first it only reads its slot (`spins` times; not when
/// the home is this node, whose service needs this CPU), then it
/// calls `sched_yield()` between reads (`yields` times), then it sleeps between reads, from
/// `sleep_min` doubling up to `sleep_max`. After `timeout` it gives up ([`Error::Timeout`]).
/// A full request ring (SEND `EAGAIN`) is retried the same way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WaitPolicy {
    pub spins: u32,
    pub yields: u32,
    pub sleep_min: Duration,
    pub sleep_max: Duration,
    pub timeout: Duration,
    /// After this many looks at the slot, a thread waiting for another node's answer sleeps
    /// in the driver until the home rings it (`WAIT_ANSWER`), instead of spinning on: its CPU
    /// is then free for others, at the cost of a doorbell and a wake-up per answer. `None`:
    /// never (`GSAS_ANSWER_SLEEP_AFTER`, a number or `off`).
    pub answer_sleep_after: Option<u32>,
}

impl Default for WaitPolicy {
    fn default() -> Self {
        WaitPolicy {
            spins: 20_000,
            yields: 200,
            sleep_min: Duration::from_micros(20),
            sleep_max: Duration::from_millis(1),
            timeout: Duration::from_secs(5),
            answer_sleep_after: None,
        }
    }
}

/// The number in environment variable `k`, if it is set to one.
pub(crate) fn env_u64(k: &str) -> Option<u64> {
    std::env::var(k)
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
}

impl WaitPolicy {
    /// The default, changed by `GSAS_TIMEOUT_MS`, `GSAS_SPINS`, `GSAS_YIELDS`,
    /// `GSAS_SLEEP_MIN_US` and `GSAS_SLEEP_MAX_US` if set.
    pub fn from_env() -> Self {
        let mut p = WaitPolicy::default();
        let num = env_u64;
        if let Some(ms) = num("GSAS_TIMEOUT_MS") {
            p.timeout = Duration::from_millis(ms.max(1));
        }
        if let Some(n) = num("GSAS_SPINS") {
            p.spins = n.min(u64::from(u32::MAX)) as u32;
        }
        if let Some(n) = num("GSAS_YIELDS") {
            p.yields = n.min(u64::from(u32::MAX)) as u32;
        }
        if let Some(us) = num("GSAS_SLEEP_MIN_US") {
            p.sleep_min = Duration::from_micros(us.max(1));
        }
        if let Some(us) = num("GSAS_SLEEP_MAX_US") {
            p.sleep_max = Duration::from_micros(us.max(1));
        }
        if let Ok(v) = std::env::var("GSAS_ANSWER_SLEEP_AFTER") {
            p.answer_sleep_after = v
                .trim()
                .parse::<u64>()
                .ok()
                .map(|n| n.min(u64::from(u32::MAX)) as u32);
        }
        p
    }
}

/// What a handle has done: requests, and the system calls they cost.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Requests answered (any status), resynchronizing NOPs included.
    pub requests: u64,
    /// `SEND` ioctls, retries of a full ring included.
    pub sends: u64,
    /// `SEND`s that found the ring full (`EAGAIN`) and were retried.
    pub send_retries: u64,
    /// Requests left in a submission slot (no system call).
    pub submits: u64,
    /// Requests answered `STALLED` (the home's pool lease was being renewed) and asked again.
    pub stalls: u64,
    /// `KICK`s: slot requests the home did not take while polling.
    pub kicks: u64,
    /// `sched_yield()`s while waiting.
    pub yields: u64,
    /// Sleeps while waiting.
    pub sleeps: u64,
    /// Sleeps in the driver until a home rang with the answer (`WAIT_ANSWER`).
    pub answer_sleeps: u64,
    /// Answers whose echo did not match the request (late answers to timed-out requests).
    pub mismatches: u64,
    /// Requests that timed out.
    pub timeouts: u64,
    /// Reads answered through a mapping, with no request (`mapped_read.rs`).
    pub mapped_reads: u64,
    /// Copies through a mapping taken again because the home changed the page meanwhile.
    pub mapped_retries: u64,
    /// Reads that went to the service although mappings are on (page not mappable, freed,
    /// or changing for too long).
    pub mapped_fallbacks: u64,
}

impl Stats {
    /// System calls made by the operations: sends + kicks + yields + sleeps (clock reads,
    /// which are vDSO calls where the clock source allows, are not counted; they happen only
    /// once the waiting has reached the yield phase).
    pub fn syscalls(&self) -> u64 {
        self.sends + self.kicks + self.yields + self.sleeps + self.answer_sleeps
    }

    /// Adds `other`'s counts (the threads of a run).
    pub fn add(&mut self, other: &Stats) {
        self.requests += other.requests;
        self.sends += other.sends;
        self.send_retries += other.send_retries;
        self.submits += other.submits;
        self.kicks += other.kicks;
        self.yields += other.yields;
        self.sleeps += other.sleeps;
        self.answer_sleeps += other.answer_sleeps;
        self.mismatches += other.mismatches;
        self.timeouts += other.timeouts;
        self.mapped_reads += other.mapped_reads;
        self.mapped_retries += other.mapped_retries;
        self.mapped_fallbacks += other.mapped_fallbacks;
    }

    /// System calls per request.
    pub fn syscalls_per_request(&self) -> f64 {
        if self.requests == 0 {
            0.0
        } else {
            self.syscalls() as f64 / self.requests as f64
        }
    }

    /// The counts accumulated since `earlier`.
    pub fn since(&self, earlier: &Stats) -> Stats {
        Stats {
            requests: self.requests - earlier.requests,
            sends: self.sends - earlier.sends,
            send_retries: self.send_retries - earlier.send_retries,
            submits: self.submits - earlier.submits,
            kicks: self.kicks - earlier.kicks,
            yields: self.yields - earlier.yields,
            sleeps: self.sleeps - earlier.sleeps,
            answer_sleeps: self.answer_sleeps - earlier.answer_sleeps,
            mismatches: self.mismatches - earlier.mismatches,
            timeouts: self.timeouts - earlier.timeouts,
            stalls: self.stalls - earlier.stalls,
            mapped_reads: self.mapped_reads - earlier.mapped_reads,
            mapped_retries: self.mapped_retries - earlier.mapped_retries,
            mapped_fallbacks: self.mapped_fallbacks - earlier.mapped_fallbacks,
        }
    }
}

/// A GSAS handle: one mailbox interface of this thread. Not `Sync`: open one per thread
/// (it is `Send`, so it may move to the thread that uses it).
#[derive(Debug)]
pub struct Gsas<T: Transport = Device> {
    t: T,
    policy: Cell<WaitPolicy>,
    stats: Cell<Stats>,
    /// Nodes whose answers may be out of step (a request timed out): bit per node.
    unsynced: Cell<u64>,
    /// Makes every NOP's address distinct, so that its answer cannot be an older one.
    nonce: Cell<u64>,
    /// Which homes take requests from the submission slots now.
    slots: Cell<Slots>,
    /// Pages mapped for reads (`mapped_read.rs`).
    pub(crate) reads: RefCell<Reads>,
}

/// Which width an operation has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Width {
    W64,
    W32,
}

impl Gsas<Device> {
    /// Opens a handle in the process's protection tree (see [`crate::tree`]), with the wait
    /// policy from the environment ([`WaitPolicy::from_env`]).
    pub fn open() -> Result<Self> {
        Self::open_in(TreeSource::Process)
    }

    /// Opens a handle in the tree `source` says.
    pub fn open_in(source: TreeSource) -> Result<Self> {
        Ok(Self::with_transport(Device::open(source)?))
    }

    /// Maps `len` bytes (whole pages) of GSAS memory at `addr` into this process, shared and
    /// read-write (at `fixed`, replacing what is mapped there, if given): pages of this node
    /// allocated to this handle's tree, or another tree's whose grant lets this user read and
    /// write them ([`grant`](Self::grant)), which the node's service checks (other pages fail
    /// with `EACCES`, pages not allocated with `ENXIO`). Loads and stores on it are
    /// the memory the service's operations change, with no request; but under TCG the
    /// process's atomic instructions are not atomic against the service: use the operations.
    /// A free of the pages, or a narrower grant of them, removes the mapping (later accesses
    /// get `SIGBUS`); otherwise the caller unmaps it with `munmap`.
    pub fn map_local(
        &self,
        addr: u64,
        len: usize,
        fixed: Option<std::num::NonZeroUsize>,
    ) -> Result<std::ptr::NonNull<std::ffi::c_void>> {
        let offset = self.local_offset(addr)?;
        Ok(self
            .t
            .interface()
            .mailbox
            .map_partition(offset, len, fixed)?)
    }

    /// The partition offset of `addr`, a page of this node (only those can be mapped).
    fn local_offset(&self, addr: u64) -> Result<u64> {
        if gsas::node_of(addr) != self.node() {
            return Err(Error::Argument(format!(
                "{addr:#x} is on node {}, not on this node ({}): only local pages can be mapped",
                gsas::node_of(addr),
                self.node()
            )));
        }
        Ok(gsas::offset_of(addr))
    }

    /// Maps `len` bytes (whole pages) of GSAS memory at `addr` on any node into this process,
    /// shared, read-write if `write` (else read-only, and never made writable): on this node as
    /// [`map_local`](Self::map_local) (or [`map_local_read_only`](Self::map_local_read_only));
    /// on another node, the home's service first approves the mapping with a MAP request,
    /// checking every page as for a bulk read (or write) by this handle (its tree's pages, or
    /// another tree's whose grant lets this user read, and write), then this node's driver maps
    /// the home's pages (`mailbox::MMAP_REMOTE`). Loads and stores are then the home's memory,
    /// with no request (atomics: use the operations). Errors: the service's (`Denied`, `Fault`,
    /// `Invalid` for a length of no whole pages), or the mailbox's `mmap` (`EACCES`: the
    /// approval was withdrawn meanwhile: the pages were freed or their grant narrowed). A free
    /// of the pages, or a narrower grant, removes the mapping (later accesses get `SIGBUS`);
    /// otherwise the caller unmaps it with `munmap`.
    pub fn map(
        &self,
        addr: u64,
        len: usize,
        write: bool,
    ) -> Result<std::ptr::NonNull<std::ffi::c_void>> {
        let node = gsas::node_of(addr);
        if node == self.node() {
            return if write {
                self.map_local(addr, len, None)
            } else {
                self.map_local_read_only(addr, len)
            };
        }
        self.call_at(op::MAP, addr, len as u64, u64::from(write))?;
        Ok(self
            .t
            .interface()
            .mailbox
            .map_remote(node, gsas::offset_of(addr), len, None, write)?)
    }

    /// As [`map_local`](Self::map_local), readable only: what a grant that lets this user read
    /// another tree's pages (not write them) allows.
    pub fn map_local_read_only(
        &self,
        addr: u64,
        len: usize,
    ) -> Result<std::ptr::NonNull<std::ffi::c_void>> {
        let offset = self.local_offset(addr)?;
        Ok(self
            .t
            .interface()
            .mailbox
            .map_partition_prot(offset, len, None, false)?)
    }
}

impl<T: Transport> Gsas<T> {
    /// A handle over any transport (the unit tests use a fake service).
    pub fn with_transport(t: T) -> Self {
        Gsas {
            t,
            policy: Cell::new(WaitPolicy::from_env()),
            stats: Cell::new(Stats::default()),
            unsynced: Cell::new(0),
            nonce: Cell::new(0),
            slots: Cell::new(Slots::from_env()),
            reads: RefCell::new(Reads::from_env()),
        }
    }

    /// The transport below (the device: node, interface, tree).
    pub fn transport(&self) -> &T {
        &self.t
    }

    /// This node's id.
    pub fn node(&self) -> u16 {
        self.t.node()
    }

    /// The mailbox interface of this handle.
    pub fn iface(&self) -> u32 {
        self.t.iface()
    }

    /// The protection tree of this handle.
    pub fn prot_id(&self) -> u32 {
        self.t.prot_id()
    }

    pub fn policy(&self) -> WaitPolicy {
        self.policy.get()
    }

    pub fn set_policy(&self, p: WaitPolicy) {
        self.policy.set(p);
    }

    /// Changes only the timeout.
    pub fn set_timeout(&self, timeout: Duration) {
        let mut p = self.policy.get();
        p.timeout = timeout;
        self.policy.set(p);
    }

    /// Turns reads through mappings on or off for this handle (on by default unless
    /// `GSAS_MAPPED_READS=0`; docs/GSAS.md, "Reads through mappings"). A process that reads a
    /// page once gains nothing from mapping it.
    pub fn set_mapped_reads(&self, on: bool) {
        self.reads.borrow_mut().set_on(on);
    }

    /// What this handle has done: requests, system calls, reads through mappings.
    pub fn stats(&self) -> Stats {
        let mut s = self.stats.get();
        let r = self.reads.borrow();
        s.mapped_reads = r.mapped;
        s.mapped_retries = r.retries;
        s.mapped_fallbacks = r.fallbacks;
        s
    }

    fn count(&self, f: impl FnOnce(&mut Stats)) {
        let mut s = self.stats.get();
        f(&mut s);
        self.stats.set(s);
    }

    fn with_slots<R>(&self, f: impl FnOnce(&mut Slots) -> R) -> R {
        let mut s = self.slots.get();
        let r = f(&mut s);
        self.slots.set(s);
        r
    }

    // ---- the operations ----

    /// AllocSharedPage: `pages` zeroed pages on `node`, owned by this handle's tree. Returns
    /// the address of the first (consecutive addresses).
    pub fn alloc_shared_page(&self, node: u16, pages: u64) -> Result<u64> {
        let a = self
            .call(node, op::ALLOC, gsas::addr(node, 0), pages, 0)?
            .word();
        self.reads.borrow_mut().forget_range(a, pages);
        Ok(a)
    }

    /// [`alloc_shared_page`](Self::alloc_shared_page) with a tag (not 0) the allocation keeps:
    /// [`free_tag`](Self::free_tag) finds it again even if its address was lost.
    pub fn alloc_tagged(&self, node: u16, pages: u64, tag: u64) -> Result<u64> {
        let a = self
            .call(node, op::ALLOC, gsas::addr(node, 0), pages, tag)?
            .word();
        // What this handle knew of those pages (refused reads of them) is of before.
        self.reads.borrow_mut().forget_range(a, pages);
        Ok(a)
    }

    /// Frees one allocation of this handle's tree on `node` tagged `tag`: its address, or
    /// `None` when there is none left.
    pub fn free_tag(&self, node: u16, tag: u64) -> Result<Option<u64>> {
        self.reads.borrow_mut().forget_home(node);
        let a = self
            .call(node, op::FREE_TAG, gsas::addr(node, 0), tag, 0)?
            .word();
        Ok((a != 0).then_some(a))
    }

    /// Frees the allocation that starts at `addr`.
    pub fn free(&self, addr: u64) -> Result<()> {
        // This handle's mappings of that home's pages go first: a read after the free gets the
        // service's answer, not the page as it was (`mapped_read.rs`).
        self.reads.borrow_mut().forget_home(gsas::node_of(addr));
        self.call_at(op::FREE, addr, 0, 0).map(drop)
    }

    /// Lets users other than this tree's threads use the allocation that starts at `addr`,
    /// as `mode` (POSIX bits, `0o640`) says for user `uid`, group `gid` and others: reads
    /// need `r`, writes `w`, atomics both. Mode 0 takes every grant back. Only the tree that
    /// made the allocation (or an issuer with `CAP_SYS_ADMIN`) may; other trees' mappings of
    /// it are removed (they map again under the new grant).
    pub fn grant(&self, addr: u64, uid: u32, gid: u32, mode: u32) -> Result<()> {
        let g = unimem_wire::gsas::grant::Grant { uid, gid, mode };
        self.call_at(op::GRANT, addr, g.arg1(), u64::from(mode))
            .map(drop)
    }

    /// Keeps what the grant of the allocation that `addr` lies in lets this tree's user do now
    /// (`grant::READ` | `grant::WRITE`, the value), across later grants that take it away,
    /// until [`unkeep`](Self::unkeep) or the allocation is freed: an open file's access after
    /// a `chmod`. `EACCES` if the grant gives this user nothing.
    pub fn keep(&self, addr: u64) -> Result<u32> {
        Ok(self.call_at(op::KEEP, addr, 1, 0)?.word() as u32)
    }

    /// Lets go of what [`keep`](Self::keep) kept of the allocation that `addr` lies in.
    pub fn unkeep(&self, addr: u64) -> Result<()> {
        self.call_at(op::KEEP, addr, 0, 0).map(drop)
    }

    /// The allocation count of interface `iface` of `node` while a thread of this handle's
    /// tree holds it, else `None` (free, or another tree's). With [`iface`](Self::iface) and
    /// [`node`](Self::node) it names a holder: a lock whose holder's count moved on, or whose
    /// interface is free, was left by a thread that is gone.
    pub fn iface_state(&self, node: u16, iface: u32) -> Result<Option<u32>> {
        let w = self
            .call(
                node,
                op::IFACE_STATE,
                gsas::addr(node, 0),
                u64::from(iface),
                0,
            )?
            .word();
        Ok((w & op::IFACE_HELD != 0).then_some(w as u32))
    }

    /// A round trip to `node`'s service (its NOP).
    pub fn nop(&self, node: u16) -> Result<()> {
        let n = self.nonce.get().wrapping_add(1);
        self.nonce.set(n);
        self.call(node, op::NOP, gsas::addr(node, n), 0, 0)
            .map(drop)
    }

    /// READ of 64 bits (through a mapping when it can: `mapped_read.rs`).
    pub fn read(&self, addr: u64) -> Result<u64> {
        if let Some(b) = self.mapped::<8>(addr)? {
            return Ok(u64::from_le_bytes(b));
        }
        self.refused(addr, self.word(op::READ, Width::W64, addr, 0, 0))
    }

    /// READ of 32 bits (through a mapping when it can).
    pub fn read32(&self, addr: u64) -> Result<u32> {
        if let Some(b) = self.mapped::<4>(addr)? {
            return Ok(u32::from_le_bytes(b));
        }
        let r = self.word(op::READ, Width::W32, addr, 0, 0);
        self.refused(addr, r).map(|v| v as u32)
    }

    /// WRITE of 64 bits.
    pub fn write(&self, addr: u64, value: u64) -> Result<()> {
        self.word(op::WRITE, Width::W64, addr, value, 0).map(drop)
    }

    /// WRITE of 32 bits.
    pub fn write32(&self, addr: u64, value: u32) -> Result<()> {
        self.word(op::WRITE, Width::W32, addr, u64::from(value), 0)
            .map(drop)
    }

    /// Atomic 128-bit read (16-byte aligned).
    pub fn read128(&self, addr: u64) -> Result<u128> {
        if let Some(b) = self.mapped::<16>(addr)? {
            return Ok(u128::from_le_bytes(b));
        }
        let r = self.refused(addr, self.call_at(op::READ128, addr, 0, 0))?;
        let mut b = [0u8; 16];
        b.copy_from_slice(&r.value[..16]);
        Ok(u128::from_le_bytes(b))
    }

    /// Atomic 256-bit read (32-byte aligned): the four words, lowest address first.
    pub fn read256(&self, addr: u64) -> Result<[u64; 4]> {
        let value = match self.mapped::<32>(addr)? {
            Some(b) => b,
            None => {
                self.refused(addr, self.call_at(op::READ256, addr, 0, 0))?
                    .value
            }
        };
        let mut w = [0u64; 4];
        for (i, c) in value.chunks_exact(8).enumerate() {
            w[i] = u64::from_le_bytes(c.try_into().expect("8 bytes"));
        }
        Ok(w)
    }

    /// Atomic 128-bit write (16-byte aligned).
    pub fn write128(&self, addr: u64, value: u128) -> Result<()> {
        self.call_at(op::WRITE128, addr, value as u64, (value >> 64) as u64)
            .map(drop)
    }

    /// Fetch&Add (wrapping): returns the old value.
    pub fn fetch_add(&self, addr: u64, add: u64) -> Result<u64> {
        self.word(op::FETCH_ADD, Width::W64, addr, add, 0)
    }

    /// 32-bit Fetch&Add.
    pub fn fetch_add32(&self, addr: u64, add: u32) -> Result<u32> {
        self.word(op::FETCH_ADD, Width::W32, addr, u64::from(add), 0)
            .map(|v| v as u32)
    }

    /// Compare-and-swap: writes `new` if the word is `expected`; returns the old word either
    /// way (it succeeded if that equals `expected`).
    pub fn cas(&self, addr: u64, expected: u64, new: u64) -> Result<u64> {
        self.word(op::CAS, Width::W64, addr, expected, new)
    }

    /// 32-bit compare-and-swap.
    pub fn cas32(&self, addr: u64, expected: u32, new: u32) -> Result<u32> {
        self.word(
            op::CAS,
            Width::W32,
            addr,
            u64::from(expected),
            u64::from(new),
        )
        .map(|v| v as u32)
    }

    /// Swap: writes `value`, returns the old word.
    pub fn swap(&self, addr: u64, value: u64) -> Result<u64> {
        self.word(op::SWAP, Width::W64, addr, value, 0)
    }

    /// 32-bit swap.
    pub fn swap32(&self, addr: u64, value: u32) -> Result<u32> {
        self.word(op::SWAP, Width::W32, addr, u64::from(value), 0)
            .map(|v| v as u32)
    }

    pub fn fetch_and(&self, addr: u64, v: u64) -> Result<u64> {
        self.word(op::FETCH_AND, Width::W64, addr, v, 0)
    }

    pub fn fetch_or(&self, addr: u64, v: u64) -> Result<u64> {
        self.word(op::FETCH_OR, Width::W64, addr, v, 0)
    }

    pub fn fetch_xor(&self, addr: u64, v: u64) -> Result<u64> {
        self.word(op::FETCH_XOR, Width::W64, addr, v, 0)
    }

    pub fn fetch_and32(&self, addr: u64, v: u32) -> Result<u32> {
        self.word(op::FETCH_AND, Width::W32, addr, u64::from(v), 0)
            .map(|v| v as u32)
    }

    pub fn fetch_or32(&self, addr: u64, v: u32) -> Result<u32> {
        self.word(op::FETCH_OR, Width::W32, addr, u64::from(v), 0)
            .map(|v| v as u32)
    }

    pub fn fetch_xor32(&self, addr: u64, v: u32) -> Result<u32> {
        self.word(op::FETCH_XOR, Width::W32, addr, u64::from(v), 0)
            .map(|v| v as u32)
    }

    /// Fetch-min, signed: the word becomes `min(word, v)`; returns the old word.
    pub fn fetch_min(&self, addr: u64, v: i64) -> Result<i64> {
        self.word(op::FETCH_MIN, Width::W64, addr, v as u64, 0)
            .map(|o| o as i64)
    }

    /// Fetch-max, signed.
    pub fn fetch_max(&self, addr: u64, v: i64) -> Result<i64> {
        self.word(op::FETCH_MAX, Width::W64, addr, v as u64, 0)
            .map(|o| o as i64)
    }

    /// Fetch-min, unsigned.
    pub fn fetch_umin(&self, addr: u64, v: u64) -> Result<u64> {
        self.word(op::FETCH_UMIN, Width::W64, addr, v, 0)
    }

    /// Fetch-max, unsigned.
    pub fn fetch_umax(&self, addr: u64, v: u64) -> Result<u64> {
        self.word(op::FETCH_UMAX, Width::W64, addr, v, 0)
    }

    /// 32-bit fetch-min, signed.
    pub fn fetch_min32(&self, addr: u64, v: i32) -> Result<i32> {
        self.word(op::FETCH_MIN, Width::W32, addr, u64::from(v as u32), 0)
            .map(|o| o as u32 as i32)
    }

    /// 32-bit fetch-max, signed.
    pub fn fetch_max32(&self, addr: u64, v: i32) -> Result<i32> {
        self.word(op::FETCH_MAX, Width::W32, addr, u64::from(v as u32), 0)
            .map(|o| o as u32 as i32)
    }

    /// 32-bit fetch-min, unsigned.
    pub fn fetch_umin32(&self, addr: u64, v: u32) -> Result<u32> {
        self.word(op::FETCH_UMIN, Width::W32, addr, u64::from(v), 0)
            .map(|o| o as u32)
    }

    /// 32-bit fetch-max, unsigned.
    pub fn fetch_umax32(&self, addr: u64, v: u32) -> Result<u32> {
        self.word(op::FETCH_UMAX, Width::W32, addr, u64::from(v), 0)
            .map(|o| o as u32)
    }

    /// 128-bit compare-and-swap (16-byte aligned): writes `new` if the 16 bytes are
    /// `expected`; returns the old value either way. The operands travel in the bulk-out page.
    pub fn cas128(&self, addr: u64, expected: u128, new: u128) -> Result<u128> {
        let mut operands = [0u8; 32];
        operands[..16].copy_from_slice(&expected.to_le_bytes());
        operands[16..].copy_from_slice(&new.to_le_bytes());
        self.t.write_bulk_out(&operands);
        let r = self.call_at(op::CAS128, addr, 0, 0)?;
        let mut b = [0u8; 16];
        b.copy_from_slice(&r.value[..16]);
        Ok(u128::from_le_bytes(b))
    }

    /// Copies `len` bytes from `src` to `dst`, both on one node, by that node's service (the
    /// bytes do not come here): one COPY per [`COPY_MAX`](crate::COPY_MAX) bytes.
    /// The ranges may overlap only if `dst <= src` or `len <= COPY_MAX` (pieces go in order).
    pub fn copy(&self, dst: u64, src: u64, len: u64) -> Result<()> {
        let mut done = 0;
        while done < len {
            let n = (len - done).min(crate::COPY_MAX);
            self.call_at(op::COPY, dst + done, src + done, n)?;
            done += n;
        }
        Ok(())
    }

    /// One INDEXED batch, applied by the home of the first entry's address (the OpenFAM seed's
    /// memory-side operations; docs/GSAS.md, "Indexed batches"): `kind`
    /// [`indexed::ADD`](gsas::indexed::ADD) adds each entry's value to its element (wrapping),
    /// [`SCATTER`](gsas::indexed::SCATTER) stores it, [`GATHER`](gsas::indexed::GATHER) reads
    /// each element into `out[i]` (zero-extended; values ignored; `out` may be empty for the
    /// other kinds). Entries are (GSAS address, value), elements of `elem_size` bytes (4 or 8),
    /// 1..=[`indexed::max`](gsas::indexed::max)`(kind)` of them, all on one node (an entry on
    /// another node is `Fault`). The home checks every entry before it applies any: after an
    /// error nothing changed. The entries travel in the bulk-out page, the results in bulk-in.
    pub fn indexed(
        &self,
        kind: u8,
        elem_size: u8,
        entries: &[(u64, u64)],
        out: &mut [u64],
    ) -> Result<()> {
        use gsas::indexed::{GATHER, RESULT_LEN};
        let n = entries.len();
        if kind == GATHER && out.len() < n {
            return Err(Error::Argument(format!(
                "INDEXED GATHER of {n} elements into room for {}",
                out.len()
            )));
        }
        self.indexed_request(kind, elem_size, entries)?;
        if kind == GATHER {
            let mut results = vec![0u8; n * RESULT_LEN];
            self.t.read_bulk_in(&mut results);
            for (o, r) in out.iter_mut().zip(results.chunks_exact(RESULT_LEN)) {
                *o = u64::from_le_bytes(r.try_into().expect("8 bytes"));
            }
        }
        Ok(())
    }

    /// A multi-word compare-and-swap on one home (INDEXED
    /// [`SCATTER_IF`](gsas::indexed::SCATTER_IF)): stores each of `stores` (GSAS address,
    /// value; elements of `elem_size` bytes, in order) only if the element at `guard.0` holds
    /// `guard.1`, all in one request under the home's lock. The guard's element as found: the
    /// stores were applied if and only if it equals `guard.1` (as
    /// [`guard_holds`](gsas::indexed::guard_holds) compares). The guard and the stores must be
    /// on one node, at most [`indexed::MAX_PAIRS`](gsas::indexed::MAX_PAIRS) in all; errors as
    /// [`indexed`](Self::indexed)'s, and after one nothing changed.
    pub fn scatter_if(
        &self,
        elem_size: u8,
        guard: (u64, u64),
        stores: &[(u64, u64)],
    ) -> Result<u64> {
        use gsas::indexed::{guard_found, SCATTER_IF};
        let mut entries = Vec::with_capacity(stores.len() + 1);
        entries.push(guard);
        entries.extend_from_slice(stores);
        let r = self.indexed_request(SCATTER_IF, elem_size, &entries)?;
        Ok(guard_found(&r.value).1)
    }

    /// One INDEXED request of `entries` (checked here as the home checks them).
    fn indexed_request(&self, kind: u8, elem_size: u8, entries: &[(u64, u64)]) -> Result<Response> {
        use gsas::indexed::{max, Batch};
        let n = entries.len();
        let batch = u32::try_from(n)
            .ok()
            .and_then(|count| Batch::new(kind, elem_size, count))
            .ok_or_else(|| {
                Error::Argument(format!(
                    "INDEXED batch of {n} entries of kind {kind} on {elem_size}-byte elements: \
                     kinds are ADD 0, SCATTER 1, GATHER 2, SCATTER_IF 3, elements 4 or 8 bytes, \
                     1-{} entries",
                    max(kind).max(1)
                ))
            })?;
        let mut operands = vec![0u8; batch.operands_len()];
        for (i, &(a, v)) in entries.iter().enumerate() {
            batch.put_entry(&mut operands, i, a, v);
        }
        self.t.write_bulk_out(&operands);
        self.call_at(op::INDEXED, entries[0].0, batch.arg1(), 0)
    }

    /// Reads `buf.len()` bytes at `addr`: one BULK_READ per piece of at most [`BULK_MAX`]
    /// bytes that does not cross a page. Each piece is atomic; the whole is not.
    pub fn bulk_read(&self, addr: u64, buf: &mut [u8]) -> Result<()> {
        for (a, range) in pieces(addr, buf.len())? {
            let piece = &mut buf[range];
            self.call_at(op::BULK_READ, a, piece.len() as u64, 0)?;
            self.t.read_bulk_in(piece);
        }
        Ok(())
    }

    /// Writes `data` at `addr`, split as [`bulk_read`](Self::bulk_read) splits.
    pub fn bulk_write(&self, addr: u64, data: &[u8]) -> Result<()> {
        for (a, range) in pieces(addr, data.len())? {
            let piece = &data[range];
            self.t.write_bulk_out(piece);
            self.call_at(op::BULK_WRITE, a, piece.len() as u64, 0)?;
        }
        Ok(())
    }

    /// Sends any request to the node of its address and returns the raw response if its
    /// status is OK (tools and tests: unknown opcodes, bad widths).
    pub fn raw(&self, opcode: u8, addr: u64, arg1: u64, arg2: u64) -> Result<Response> {
        self.call_at(opcode, addr, arg1, arg2)
    }

    /// Sends a request to `home`'s service with an address of any node (tests: a request for
    /// an address that is not the home's).
    pub fn raw_to(
        &self,
        home: u16,
        opcode: u8,
        addr: u64,
        arg1: u64,
        arg2: u64,
    ) -> Result<Response> {
        self.call(home, opcode, addr, arg1, arg2)
    }

    // ---- remoteFork ----

    /// remoteFork: starts `path` (absolute) with arguments `args` on `node`, in this handle's
    /// protection tree (its GSAS memory is the child's, and the child's is this tree's). Returns
    /// when `node`'s daemon has started it, with the child's id (for [`wait`](Self::wait));
    /// [`Error::ExecFailed`] with the target's errno if it could not be started,
    /// [`Error::NoDaemon`] if no `gsasd` runs there. Waits up to 4 times the handle's timeout
    /// (starting a program under TCG takes a while).
    pub fn remote_fork<S: AsRef<str>>(&self, node: u16, path: &str, args: &[S]) -> Result<ChildId> {
        let mut blob = [0u8; fork::BLOB_MAX];
        let argv: Vec<&[u8]> = args.iter().map(|a| a.as_ref().as_bytes()).collect();
        let len = fork::encode(path.as_bytes(), &argv, &mut blob).map_err(|e| {
            Error::Argument(format!(
                "remoteFork {path:?} with {} arguments: {}",
                args.len(),
                match e {
                    fork::BlobError::Relative => "the path must be absolute".to_string(),
                    fork::BlobError::Empty => "an empty path or argument".to_string(),
                    fork::BlobError::Unterminated =>
                        "a NUL byte in the path or an argument".to_string(),
                    fork::BlobError::Length => format!(
                        "path and arguments take more than {} bytes (NULs included)",
                        fork::BLOB_MAX
                    ),
                    fork::BlobError::TooMany => {
                        format!("more than {} arguments", fork::MAX_ARGS - 1)
                    }
                }
            ))
        })?;
        self.t.write_bulk_out(&blob[..len]);
        let n = self.nonce.get().wrapping_add(1);
        self.nonce.set(n);
        let address = gsas::addr(node, n);
        let saved = self.policy.get();
        let mut p = saved;
        p.timeout = p.timeout.saturating_mul(4);
        self.policy.set(p);
        let r = self.call(node, op::FORK, address, len as u64, 0);
        self.policy.set(saved);
        match r {
            Ok(r) => Ok(ChildId(r.word())),
            Err(Error::Status(req, gsas::status::EXEC_FAILED)) => {
                let errno = self.t.response(node).word();
                Err(Error::ExecFailed {
                    req,
                    errno: Errno::from_raw(errno as i32),
                })
            }
            Err(e) => Err(e),
        }
    }

    /// Whether `child` (of this tree) has exited: its status (and the child is forgotten), or
    /// `None` while it runs.
    pub fn try_wait(&self, child: ChildId) -> Result<Option<ExitStatus>> {
        match self.call_at(op::WAIT, child.0, 0, 0) {
            Ok(r) => Ok(Some(ExitStatus(r.word() as i32))),
            Err(Error::Status(_, gsas::status::RUNNING)) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Waits until `child` (of this tree) exits; its status. Asks its node every 2 ms at
    /// first, backing off to every 100 ms; no timeout (each request has the handle's).
    pub fn wait(&self, child: ChildId) -> Result<ExitStatus> {
        let mut pause = Duration::from_millis(2);
        loop {
            if let Some(s) = self.try_wait(child)? {
                return Ok(s);
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(100));
        }
    }

    // ---- the protocol ----

    fn word(&self, opcode: u8, w: Width, addr: u64, a1: u64, a2: u64) -> Result<u64> {
        let (opcode, mask) = match w {
            Width::W64 => (opcode, u64::MAX),
            Width::W32 => (opcode | op::WIDTH32, u64::from(u32::MAX)),
        };
        Ok(self.call_at(opcode, addr, a1 & mask, a2 & mask)?.word() & mask)
    }

    fn call_at(&self, opcode: u8, addr: u64, a1: u64, a2: u64) -> Result<Response> {
        self.call(gsas::node_of(addr), opcode, addr, a1, a2)
    }

    /// One request to `addr`'s home, for the crate's other modules.
    pub(crate) fn call_raw(&self, opcode: u8, addr: u64, a1: u64, a2: u64) -> Result<Response> {
        self.call_at(opcode, addr, a1, a2)
    }

    /// One request: resynchronize with `home` if needed, send, wait for the matching answer.
    fn call(&self, home: u16, opcode: u8, addr: u64, a1: u64, a2: u64) -> Result<Response> {
        if u32::from(home) >= MAX_NODES {
            return Err(Error::Argument(format!(
                "node {home} does not exist (nodes are 0-{})",
                MAX_NODES - 1
            )));
        }
        let bit = 1u64 << home;
        if self.unsynced.get() & bit != 0 {
            let n = self.nonce.get().wrapping_add(1);
            self.nonce.set(n);
            self.exchange(home, op::NOP, gsas::addr(home, n), 0, 0)?;
            self.unsynced.set(self.unsynced.get() & !bit);
        }
        // A home whose pool lease is being renewed after a stall (it was frozen), or whose pool
        // grows for an ALLOC, did nothing: ask again, within the usual timeout (an ALLOC's
        // growth borrows and wipes memory first: four times that).
        let mut policy = self.policy.get();
        if opcode == op::ALLOC {
            policy.timeout = policy.timeout.saturating_mul(4);
        }
        let mut stall = Waiter::new(policy);
        let r = loop {
            let r = self.exchange(home, opcode, addr, a1, a2)?;
            if r.status != status::STALLED {
                break r;
            }
            self.count(|s| s.stalls += 1);
            if !stall.pause(self) {
                break r;
            }
        };
        match Error::from_status(r.status, Request { opcode, addr }) {
            None => Ok(r),
            Some(e) => Err(e),
        }
    }

    fn exchange(&self, home: u16, opcode: u8, addr: u64, a1: u64, a2: u64) -> Result<Response> {
        let req = Request { opcode, addr };
        let payload = request(opcode, addr, a1, a2);
        let mut policy = self.policy.get();
        if home == self.t.node() {
            // This node's own service runs on this CPU: polling only delays it.
            policy.spins = 0;
        }
        let mut w = Waiter::new(policy);
        let mut last = self.t.seq(home);
        // In the slot while the home polls (no system call), else SEND, retrying while the
        // ring to the service is full.
        let in_slot = home != self.t.node() && self.slots.get().use_slot(home);
        if in_slot {
            self.count(|s| s.submits += 1);
            let seq = self.with_slots(|s| s.next_seq(home));
            self.t.submit(home, seq, &payload);
        } else {
            loop {
                self.count(|s| s.sends += 1);
                match self.t.send(home, &payload) {
                    Ok(polled) => {
                        self.with_slots(|s| s.set_polling(home, polled));
                        break;
                    }
                    Err(Errno::EAGAIN) => {
                        self.count(|s| s.send_retries += 1);
                        if !w.pause(self) {
                            return Err(self.timed_out(home, req, &w));
                        }
                    }
                    Err(e) => return Err(send_error(e)),
                }
            }
        }
        let mut kick_at = in_slot.then(|| self.slots.get().kick_polls);
        loop {
            if self.t.seq(home) != last {
                let r = self.t.response(home);
                if r.seq != last && r.opcode == opcode && r.address == addr {
                    self.count(|s| s.requests += 1);
                    return Ok(r);
                }
                if r.seq != last {
                    // An answer to an older request (one that timed out): wait for ours.
                    self.count(|s| s.mismatches += 1);
                    log::debug!(
                        "gsas: node {home} answered {:?} while waiting for {req}",
                        (r.opcode, r.address)
                    );
                    last = r.seq;
                }
                continue;
            }
            if kick_at.is_some_and(|n| w.polls >= n) {
                // Not taken: the home stopped polling. Ring it, and SEND next time.
                kick_at = None;
                self.count(|s| s.kicks += 1);
                self.with_slots(|s| s.set_polling(home, false));
                self.t.kick(home).map_err(kick_error)?;
            }
            let asleep = kick_at.is_none() && home != self.t.node();
            let more = match asleep
                .then(|| w.sleep_for_answer(self, home, last))
                .flatten()
            {
                Some(more) => more,
                None => w.pause(self),
            };
            if !more {
                return Err(self.timed_out(home, req, &w));
            }
        }
    }

    fn timed_out(&self, home: u16, req: Request, w: &Waiter) -> Error {
        self.unsynced.set(self.unsynced.get() | 1u64 << home);
        self.count(|s| s.timeouts += 1);
        Error::Timeout {
            req,
            node: home,
            after: w.policy.timeout,
        }
    }
}

/// The longest sleep of one `WAIT_ANSWER`: a doorbell lost between two nodes (their fences
/// are not ordered against each other under TCG) costs at most this, or a tick.
const ANSWER_SLICE: Duration = Duration::from_millis(2);

/// The waiting of one request: spins, then yields, then growing sleeps, until the deadline.
struct Waiter {
    policy: WaitPolicy,
    polls: u64,
    yields: u32,
    sleep: Duration,
    /// Taken at the first yield: a request answered while spinning reads no clock.
    deadline: Option<Instant>,
}

impl Waiter {
    fn new(policy: WaitPolicy) -> Self {
        Waiter {
            policy,
            polls: 0,
            yields: 0,
            sleep: policy.sleep_min,
            deadline: None,
        }
    }

    /// Once the policy's looks are over, sleeps in the driver until `home` changes the slot
    /// from `seq` (it rings this node), for a slice of the time left: `Some(false)` once the
    /// deadline has passed; `None` if this wait does not sleep so (the caller pauses).
    fn sleep_for_answer<T: Transport>(&mut self, g: &Gsas<T>, home: u16, seq: u32) -> Option<bool> {
        let after = self.policy.answer_sleep_after?;
        self.polls += 1;
        if self.polls <= u64::from(after) {
            std::hint::spin_loop();
            return Some(true);
        }
        let now = Instant::now();
        let deadline = *self.deadline.get_or_insert(now + self.policy.timeout);
        if now >= deadline {
            return Some(false);
        }
        match g
            .t
            .wait_answer(home, seq, (deadline - now).min(ANSWER_SLICE))
        {
            Ok(_) | Err(Errno::EINTR) => {
                g.count(|s| s.answer_sleeps += 1);
                Some(true)
            }
            Err(e) => {
                // A driver without WAIT_ANSWER (or a fake): wait as before, from now on.
                log::debug!("gsas: WAIT_ANSWER for node {home}: {e}; waiting without it");
                self.policy.answer_sleep_after = None;
                None
            }
        }
    }

    /// Waits a little; false once the deadline has passed.
    fn pause<T: Transport>(&mut self, g: &Gsas<T>) -> bool {
        self.polls += 1;
        if self.polls <= u64::from(self.policy.spins) {
            std::hint::spin_loop();
            return true;
        }
        let now_needed = self.deadline.is_none() || self.yields % 16 == 0;
        if now_needed || self.yields >= self.policy.yields {
            let now = Instant::now();
            let deadline = *self.deadline.get_or_insert(now + self.policy.timeout);
            if now >= deadline {
                return false;
            }
        }
        if self.yields < self.policy.yields {
            self.yields += 1;
            g.count(|s| s.yields += 1);
            g.t.pause(Pause::Yield);
        } else {
            g.count(|s| s.sleeps += 1);
            g.t.pause(Pause::Sleep(self.sleep));
            self.sleep = (self.sleep * 2).min(self.policy.sleep_max);
        }
        true
    }
}

/// Splits a transfer of `len` bytes at `addr` into requests: at most [`BULK_MAX`] bytes, none
/// crossing a page. Returns (address, range in the buffer) pairs.
pub fn pieces(addr: u64, len: usize) -> Result<Vec<(u64, std::ops::Range<usize>)>> {
    let off = gsas::offset_of(addr);
    if (len as u64)
        .checked_add(off)
        .is_none_or(|end| end > gsas::OFFSET_MASK + 1)
    {
        return Err(Error::Argument(format!(
            "bulk transfer of {len} bytes at {addr:#x} runs past the end of node {}'s addresses",
            gsas::node_of(addr)
        )));
    }
    let mut out = Vec::new();
    let mut done = 0usize;
    while done < len {
        let a = addr + done as u64;
        let to_page_end = PAGE_SIZE - a % PAGE_SIZE;
        let n = (len - done).min(to_page_end.min(BULK_MAX) as usize);
        out.push((a, done..done + n));
        done += n;
    }
    Ok(out)
}
