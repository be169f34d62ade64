//! [`Dht`]: a table handle of one thread (it owns a GSAS handle), and the operations.
//!
//! Writers of a first-level entry take its lock (a CAS of word 0) and hold it while they change
//! the entry or its container; every change they make visible is one WRITE or WRITE128, so a
//! reader's READ256 sees an entry before or after it, never half of it. Readers retry while an
//! entry is locked (the seed's protocol), up to [`Config`]'s bounds. See `docs/DHT.md`.

use crate::entry::{
    holder_id, holder_of, state, Entry, CONTAINER_ENTRIES, ENTRY_BYTES, GENERATION_MASK,
};
use crate::error::{Error, Result};
use crate::hash::{h1, h2, mix};
use crate::layout::{Layout, DESTROYED, HEADER_WORDS, LIVE, MAX_NODES, STATE_WORD};
use gsas::{node_of, offset_of, Device, Gsas, Transport, PAGE_SIZE};
use std::cell::Cell;
use std::collections::BTreeSet;
use std::time::{Duration, Instant};

/// Bound of `destroy`'s sweep for unlinked containers per node (a pool's pages at 4 GiB).
const MAX_TAG_SWEEP: u32 = 1 << 20;

/// The value [`Dht::get`] reports as "no value" in the C API (`DHT_INVALID`): never stored.
pub const INVALID: u128 = u128::MAX;

/// How long an operation waits for a locked entry before it fails with [`Error::Busy`], and
/// after how long an unchanged lock makes it ask whether the holder still lives; whether puts
/// may publish without a lock (`put_unlocked`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Config {
    pub busy_tries: u32,
    pub busy_timeout: Duration,
    pub stale_after: Duration,
    pub unlocked_puts: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            busy_tries: 1_000_000,
            busy_timeout: Duration::from_secs(5),
            stale_after: Duration::from_millis(100),
            unlocked_puts: true,
        }
    }
}

impl Config {
    /// The default, with the timeout from `DHT_BUSY_MS` and the stale time from
    /// `DHT_STALE_MS` if set; `DHT_UNLOCKED_PUTS=0` makes every put lock (for comparisons).
    pub fn from_env() -> Self {
        let mut c = Config::default();
        let ms = |k: &str| {
            std::env::var(k)
                .ok()
                .and_then(|v| v.trim().parse::<u64>().ok())
                .map(|ms| Duration::from_millis(ms.max(1)))
        };
        if let Some(d) = ms("DHT_BUSY_MS") {
            c.busy_timeout = d;
        }
        if let Some(d) = ms("DHT_STALE_MS") {
            c.stale_after = d;
        }
        if std::env::var("DHT_UNLOCKED_PUTS").is_ok_and(|v| v.trim() == "0") {
            c.unlocked_puts = false;
        }
        c
    }
}

/// What a handle has done.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OpStats {
    pub gets: u64,
    pub puts: u64,
    pub deletes: u64,
    /// Reads repeated because an entry was locked or changed under a get.
    pub retries: u64,
    /// Container entries read beyond the first of a probe.
    pub probes: u64,
    /// Containers this handle allocated.
    pub containers: u64,
    /// Locks this handle broke because their holder was gone.
    pub broken_locks: u64,
    /// Tries to take a first-level entry's lock that found it held, or lost the CAS.
    pub lock_retries: u64,
    /// Time this handle held first-level locks, summed (ns): from the CAS that took one to
    /// the write that released it.
    pub lock_held_ns: u64,
    /// Locks taken (puts and deletes).
    pub locks: u64,
    /// Puts published without a lock: one SCATTER_IF guarded by the entry's head as read.
    pub unlocked_puts: u64,
    /// Unlocked puts whose guard no longer held (the entry changed): the put took the lock.
    pub unlocked_misses: u64,
}

/// What [`Dht::destroy`] freed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Destroyed {
    pub containers: u64,
    /// Entries whose contents were not this library's (not followed).
    pub malformed: u64,
    /// Frees that failed (logged).
    pub free_errors: u64,
    /// Containers found by their tag only: allocated but never linked into the table.
    pub unlinked: u64,
}

/// The contents of a table, counted by [`Dht::scan`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Scan {
    pub entries: u64,
    pub direct: u64,
    pub indirect: u64,
    pub in_containers: u64,
    pub deleted: u64,
    pub locked: u64,
    /// Entries with a state, lock or pointer this library never writes (counted, skipped).
    pub malformed: u64,
}

impl Scan {
    pub fn keys(&self) -> u64 {
        self.direct + self.in_containers
    }
}

/// The waiting of one operation for a locked entry: a few immediate retries, then yields,
/// then growing sleeps; [`Error::Busy`] past the tries or the time of [`Config`].
struct Backoff {
    cfg: Config,
    tries: u32,
    t0: Instant,
    /// The locked word 0 waited for, and since when (or since its holder was last found alive).
    seen: Option<(u64, Instant)>,
}

impl Backoff {
    fn new(cfg: Config) -> Self {
        Backoff {
            cfg,
            tries: 0,
            t0: Instant::now(),
            seen: None,
        }
    }

    /// Whether the locked `word0` has stayed the same for the stale time since it was first
    /// seen (or since the last time this said so): then the waiter asks if the holder lives.
    fn stale(&mut self, word0: u64) -> bool {
        let now = Instant::now();
        match self.seen {
            Some((w, since)) if w == word0 => {
                let stale = now.duration_since(since) >= self.cfg.stale_after;
                if stale {
                    self.seen = Some((w, now));
                }
                stale
            }
            _ => {
                self.seen = Some((word0, now));
                false
            }
        }
    }

    /// Whether the next [`again`](Self::again) gives up.
    fn last_try(&self) -> bool {
        self.tries + 1 >= self.cfg.busy_tries || self.t0.elapsed() >= self.cfg.busy_timeout
    }

    fn again(&mut self, addr: u64, lock: u16) -> Result<()> {
        self.tries += 1;
        let after = self.t0.elapsed();
        if self.tries >= self.cfg.busy_tries || after >= self.cfg.busy_timeout {
            let (node, iface, _) = holder_of(lock);
            return Err(Error::Busy {
                addr,
                node,
                iface,
                tries: self.tries,
                after,
            });
        }
        match self.tries {
            0..=8 => {}
            9..=64 => std::thread::yield_now(),
            n => std::thread::sleep(Duration::from_micros(10 << (n - 64).min(7))),
        }
        Ok(())
    }
}

/// How a locked first-level entry is released: by writing word 0, or already (the last write
/// published word 0 and the key together).
enum Release {
    Head(u64),
    Done,
}

/// A handle on a table for one thread (not `Sync`, like the GSAS handle inside).
pub struct Dht<T: Transport = Device> {
    g: Gsas<T>,
    l: Layout,
    cfg: Config,
    /// This handle's lock value, once known ([`me`](Self::me)); 0 before.
    me: Cell<u16>,
    st: Cell<OpStats>,
}

impl<T: Transport> Dht<T> {
    /// dhtCreate: a table for about `capacity` keys whose first level is spread over `nodes`
    /// (contiguous slices, in this order), its root page on `root_node`. Everything allocated
    /// is freed again if a step fails.
    pub fn create(g: Gsas<T>, nodes: &[u16], capacity: u64, root_node: u16) -> Result<Self> {
        let per_node = Layout::per_node_for(capacity, nodes.len())?;
        let mut seen = 0u32;
        for &n in nodes {
            if usize::from(n) >= MAX_NODES || seen & 1 << n != 0 {
                return Err(Error::Argument(format!(
                    "nodes {nodes:?}: each node once, ids 0-{}",
                    MAX_NODES - 1
                )));
            }
            seen |= 1 << n;
        }
        let seed = {
            use std::hash::BuildHasher;
            std::collections::hash_map::RandomState::new().hash_one(root_node)
        };
        let mut l = Layout {
            root: 0,
            per_node,
            seed1: mix(seed),
            seed2: mix(seed ^ 0x5555),
            capacity,
            slices: Vec::new(),
        };
        let mut made = Vec::new();
        let r = (|| -> Result<()> {
            l.root = g.alloc_shared_page(root_node, 1)?;
            made.push(l.root);
            for &n in nodes {
                let s = g.alloc_shared_page(n, per_node / CONTAINER_ENTRIES)?;
                made.push(s);
                l.slices.push(s);
            }
            g.bulk_write(l.root, &l.encode())?;
            Ok(())
        })();
        if let Err(e) = r {
            for a in made.into_iter().rev() {
                if let Err(f) = g.free(a) {
                    log::warn!("dht: create failed ({e}); freeing {a:#x}: {f}");
                }
            }
            return Err(e);
        }
        log::info!(
            "dht: table {:#x}: {} entries per node on nodes {nodes:?}",
            l.root,
            per_node
        );
        Ok(Self::attach(g, l))
    }

    /// Opens the table whose root page is at `root` (made by any process of this tree).
    pub fn open(g: Gsas<T>, root: u64) -> Result<Self> {
        if offset_of(root) % PAGE_SIZE != 0 {
            return Err(Error::Argument(format!(
                "{root:#x} is not a table root (roots are page addresses)"
            )));
        }
        let mut b = vec![0u8; HEADER_WORDS * 8];
        g.bulk_read(root, &mut b)?;
        let l = Layout::decode(root, &b)?;
        Ok(Self::attach(g, l))
    }

    /// A handle on a table whose layout is known (another thread's [`layout`](Self::layout)).
    pub fn attach(g: Gsas<T>, l: Layout) -> Self {
        Dht {
            g,
            l,
            cfg: Config::from_env(),
            me: Cell::new(0),
            st: Cell::new(OpStats::default()),
        }
    }

    pub fn layout(&self) -> &Layout {
        &self.l
    }

    /// The table's root address (what [`open`](Self::open) takes).
    pub fn root(&self) -> u64 {
        self.l.root
    }

    pub fn gsas(&self) -> &Gsas<T> {
        &self.g
    }

    pub fn stats(&self) -> OpStats {
        self.st.get()
    }

    pub fn set_config(&mut self, cfg: Config) {
        self.cfg = cfg;
    }

    fn count(&self, f: impl FnOnce(&mut OpStats)) {
        let mut s = self.st.get();
        f(&mut s);
        self.st.set(s);
    }

    /// The lock value of this handle: its node, interface and the interface's allocation count,
    /// asked of this node's service at the first write.
    fn me(&self) -> Result<u16> {
        if self.me.get() == 0 {
            let (node, iface) = (self.g.node(), self.g.iface());
            let generation = self.g.iface_state(node, iface)?.ok_or_else(|| {
                Error::Argument(format!(
                    "node {node}'s service does not know interface {iface} as this tree's"
                ))
            })?;
            self.me.set(holder_id(node, iface, generation));
        }
        Ok(self.me.get())
    }

    /// Waits once more for the locked first-level entry at `a` whose word 0 is `word0`, first
    /// breaking the lock if its holder is gone, asked when the lock has not moved for the stale
    /// time and before giving up.
    fn wait_locked(&self, b: &mut Backoff, a: u64, word0: u64) -> Result<()> {
        if (b.stale(word0) || b.last_try()) && self.break_dead_lock(a, word0) {
            return Ok(());
        }
        b.again(a, Entry::decode([word0, 0, 0, 0]).lock)
    }

    /// Unlocks the entry at `a` (word 0 `word0`, locked) if its holder is gone: the holder's
    /// interface is free, another tree's, or held by a later owner (its allocation count moved
    /// on). The entry stays as the holder left it (a writer publishes with one write, so it is
    /// whole), one version further. Whether this call broke it; a holder that cannot be asked
    /// (its node does not answer) counts as alive.
    fn break_dead_lock(&self, a: u64, word0: u64) -> bool {
        let e = Entry::decode([word0, 0, 0, 0]);
        let (node, iface, generation) = holder_of(e.lock);
        match self.g.iface_state(node, u32::from(iface)) {
            Ok(Some(g)) if g & GENERATION_MASK == generation => return false,
            Ok(_) => {}
            Err(err) => {
                log::debug!("dht: entry {a:#x}: cannot ask about its lock holder (node {node} interface {iface}): {err}");
                return false;
            }
        }
        match self.g.cas(a, word0, e.next_head(e.state)) {
            Ok(old) if old == word0 => {
                self.count(|s| s.broken_locks += 1);
                log::warn!("dht: entry {a:#x}: broke the lock of node {node} interface {iface}, whose holder is gone");
                true
            }
            Ok(_) => false,
            Err(err) => {
                log::debug!("dht: entry {a:#x}: breaking a dead holder's lock: {err}");
                false
            }
        }
    }

    fn slot(&self, key: u64) -> u64 {
        self.l.entry_addr(h1(self.l.seed1, key, self.l.size()))
    }

    fn read(&self, addr: u64) -> Result<Entry> {
        Ok(Entry::decode(self.g.read256(addr)?))
    }

    /// Publishes word 0 and the key (or pointer) together.
    fn publish(&self, addr: u64, head: u64, key: u64) -> Result<()> {
        Ok(self
            .g
            .write128(addr, u128::from(head) | u128::from(key) << 64)?)
    }

    /// Writes `value` into the entry at `addr`, then its key (if `key`) and last its head, in
    /// one request (an INDEXED scatter, applied by the home in this order under its lock):
    /// what a value write followed by [`publish`](Self::publish) or a head write does, at one
    /// round trip instead of two. The head goes last, so a reader never sees it before the
    /// rest; until then the entry is locked (first level) or not yet published (container).
    fn fill(&self, addr: u64, value: u128, key: Option<u64>, head: u64) -> Result<()> {
        let (e, n) = fill_stores(addr, value, key, head);
        Ok(self
            .g
            .indexed(gsas::indexed::SCATTER, 8, &e[..n], &mut [])?)
    }

    /// The container an indirect entry at `at` points to, if it is one this library could have
    /// made: a page on the entry's node, not page 0.
    fn container(&self, at: u64, ptr: u64) -> Result<u64> {
        if node_of(ptr) != node_of(at) || offset_of(ptr) % PAGE_SIZE != 0 || offset_of(ptr) == 0 {
            return Err(Error::Corrupt(format!(
                "entry at {at:#x} points to {ptr:#x}, not a container page on node {}",
                node_of(at)
            )));
        }
        Ok(ptr)
    }

    fn corrupt_state(at: u64, e: &Entry) -> Error {
        Error::Corrupt(format!(
            "entry at {at:#x} has state {} (lock {}, version {})",
            e.state, e.lock, e.version
        ))
    }

    // ---- dhtGet ----

    /// dhtGet: the value of `key`, or `None`.
    pub fn get(&self, key: u64) -> Result<Option<u128>> {
        self.count(|s| s.gets += 1);
        let a = self.slot(key);
        let mut b = Backoff::new(self.cfg);
        loop {
            let e = self.read(a)?;
            if e.locked() {
                self.count(|s| s.retries += 1);
                self.wait_locked(&mut b, a, e.word0())?;
                continue;
            }
            match e.state {
                state::EMPTY => return Ok(None),
                state::PAIR => return Ok((e.key == key).then_some(e.value)),
                state::INDIRECT => {
                    let c = self.container(a, e.key)?;
                    let (found, probes) = self.find(c, key, &mut b)?;
                    if let Some((_, ce)) = found {
                        return Ok(Some(ce.value));
                    }
                    // A miss that read several entries: valid only if no writer changed the
                    // container meanwhile (every change bumps the first-level version).
                    let now = if probes > 1 { self.read(a)? } else { e };
                    if now.word0() != e.word0() {
                        self.count(|s| s.retries += 1);
                        b.again(a, now.lock)?;
                        continue;
                    }
                    return Ok(None);
                }
                _ => return Err(Self::corrupt_state(a, &e)),
            }
        }
    }

    /// Probes container `c` for `key` from h2(key): the entry holding it, and how many entries
    /// were read. Stops at an empty entry or after all 128.
    fn find(&self, c: u64, key: u64, b: &mut Backoff) -> Result<(Option<(u64, Entry)>, u64)> {
        let start = h2(self.l.seed2, key, CONTAINER_ENTRIES);
        for i in 0..CONTAINER_ENTRIES {
            let ca = c + (start + i) % CONTAINER_ENTRIES * ENTRY_BYTES;
            if i > 0 {
                self.count(|s| s.probes += 1);
            }
            let ce = loop {
                let ce = self.read(ca)?;
                if !ce.locked() {
                    break ce;
                }
                self.count(|s| s.retries += 1);
                b.again(ca, ce.lock)?;
            };
            match ce.state {
                state::EMPTY => return Ok((None, i + 1)),
                state::PAIR if ce.key == key => return Ok((Some((ca, ce)), i + 1)),
                state::PAIR | state::DELETED => {}
                _ => return Err(Self::corrupt_state(ca, &ce)),
            }
        }
        Ok((None, CONTAINER_ENTRIES))
    }

    // ---- writers ----

    /// Takes the lock of the first-level entry at `a`: the entry as it was (unlocked).
    fn lock(&self, a: u64) -> Result<Entry> {
        let me = self.me()?;
        let mut b = Backoff::new(self.cfg);
        loop {
            let e = self.read(a)?;
            if e.locked() {
                self.count(|s| s.lock_retries += 1);
                self.wait_locked(&mut b, a, e.word0())?;
                continue;
            }
            if !matches!(e.state, state::EMPTY | state::PAIR | state::INDIRECT) {
                return Err(Self::corrupt_state(a, &e));
            }
            let want = Entry::head(e.state, me, e.version);
            let old = self.g.cas(a, e.word0(), want)?;
            if old == e.word0() {
                self.count(|s| s.locks += 1);
                return Ok(e);
            }
            self.count(|s| s.lock_retries += 1);
            b.again(a, Entry::decode([old, 0, 0, 0]).lock)?;
        }
    }

    /// Runs `f` with the first-level entry of `key` locked, then releases it: as `f` says, or
    /// on an error with the version moved on (the entry may have been partly written). After an
    /// error the entry is read again first: a write that timed out may still have been applied
    /// (it may even have published and unlocked the entry), and the read, answered after it,
    /// shows what is there.
    fn locked<R>(
        &self,
        key: u64,
        f: impl FnOnce(u64, &Entry) -> Result<(Release, R)>,
    ) -> Result<R> {
        let a = self.slot(key);
        let e = self.lock(a)?;
        let held = std::time::Instant::now();
        let r = self.locked_body(a, &e, f);
        let ns = held.elapsed().as_nanos() as u64;
        self.count(|s| s.lock_held_ns += ns);
        r
    }

    /// [`locked`](Self::locked)'s work once the entry at `a` (`e` before) is locked.
    fn locked_body<R>(
        &self,
        a: u64,
        e: &Entry,
        f: impl FnOnce(u64, &Entry) -> Result<(Release, R)>,
    ) -> Result<R> {
        match f(a, e) {
            Ok((Release::Head(h), r)) => {
                self.g.write(a, h)?;
                Ok(r)
            }
            Ok((Release::Done, r)) => Ok(r),
            Err(err) => {
                let unlock = self.read(a).and_then(|cur| {
                    if cur.lock == self.me.get() {
                        self.g.write(a, cur.next_head(cur.state))?;
                    }
                    Ok(())
                });
                if let Err(u) = unlock {
                    log::error!("dht: entry {a:#x} may stay locked: {err}; unlocking: {u}");
                }
                Err(err)
            }
        }
    }

    /// Takes the lock of `key`'s first-level entry and keeps it; the entry's address. For
    /// showing what a holder that stops or dies does to the others (`unimem-dht-test hold`).
    pub fn hold(&self, key: u64) -> Result<u64> {
        let a = self.slot(key);
        self.lock(a)?;
        Ok(a)
    }

    /// Releases what [`hold`](Self::hold) took: the entry as it is, one version further.
    pub fn release(&self, key: u64) -> Result<()> {
        let a = self.slot(key);
        let cur = self.read(a)?;
        if cur.lock == 0 || cur.lock != self.me.get() {
            return Err(Error::Argument(format!(
                "entry {a:#x} of key {key:#x} is not locked by this handle"
            )));
        }
        Ok(self.g.write(a, cur.next_head(cur.state))?)
    }

    /// dhtPut: inserts `key` with `value`, or replaces its value.
    pub fn put(&self, key: u64, value: u128) -> Result<()> {
        if value == INVALID {
            return Err(Error::InvalidValue);
        }
        self.count(|s| s.puts += 1);
        if self.cfg.unlocked_puts && self.put_unlocked(key, value)? {
            return Ok(());
        }
        self.locked(key, |a, e| match e.state {
            state::EMPTY => {
                self.fill(a, value, Some(key), e.next_head(state::PAIR))?;
                Ok((Release::Done, ()))
            }
            state::PAIR if e.key == key => {
                self.fill(a, value, None, e.next_head(state::PAIR))?;
                Ok((Release::Done, ()))
            }
            state::PAIR => {
                let c = self.split(a, e, key, value)?;
                self.publish(a, e.next_head(state::INDIRECT), c)?;
                Ok((Release::Done, ()))
            }
            _ => {
                let c = self.container(a, e.key)?;
                self.put_in(c, key, value)?;
                Ok((Release::Head(e.next_head(state::INDIRECT)), ()))
            }
        })
    }

    /// A put that needs no lock (issue 31: a lock and a fill are two round trips to the
    /// entry's home, and on a cluster whose homes sleep each costs a wake-up): when `key`'s
    /// first-level entry is unlocked and empty or holds `key`, its value, key and new head go
    /// in one SCATTER_IF guarded by the head as read, which the home applies only if no writer
    /// came between (a lock taken, a version moved on). Whether it was published; `false`
    /// sends the put down the locked path (another key or a container there, a holder, or a
    /// change since the read).
    fn put_unlocked(&self, key: u64, value: u128) -> Result<bool> {
        let a = self.slot(key);
        let e = self.read(a)?;
        let new_key = match e.state {
            _ if e.locked() => return Ok(false),
            state::EMPTY => Some(key),
            state::PAIR if e.key == key => None,
            _ => return Ok(false),
        };
        let (stores, n) = fill_stores(a, value, new_key, e.next_head(state::PAIR));
        let found = self.g.scatter_if(8, (a, e.word0()), &stores[..n])?;
        if found == e.word0() {
            self.count(|s| s.unlocked_puts += 1);
            return Ok(true);
        }
        self.count(|s| s.unlocked_misses += 1);
        Ok(false)
    }

    /// A container for a direct entry's pair and a new one, on the entry's node, filled before
    /// the entry points to it. Freed again if filling fails.
    fn split(&self, a: u64, e: &Entry, key: u64, value: u128) -> Result<u64> {
        // Tagged with the root: a container this handle loses track of (the ALLOC answered
        // after it gave up, or it dies before linking it) is still freed by `destroy`.
        let c = self.g.alloc_tagged(node_of(a), 1, self.l.root)?;
        self.count(|s| s.containers += 1);
        let r = self
            .put_in(c, e.key, e.value)
            .and_then(|()| self.put_in(c, key, value));
        if let Err(err) = r {
            if let Err(f) = self.g.free(c) {
                log::warn!("dht: freeing container {c:#x} after {err}: {f}");
            }
            return Err(err);
        }
        Ok(c)
    }

    /// Puts into container `c` (its first-level entry locked by this handle): replaces the
    /// key's value, or takes the first deleted or empty entry of its probe sequence.
    fn put_in(&self, c: u64, key: u64, value: u128) -> Result<()> {
        let start = h2(self.l.seed2, key, CONTAINER_ENTRIES);
        let mut free = None;
        for i in 0..CONTAINER_ENTRIES {
            let ca = c + (start + i) % CONTAINER_ENTRIES * ENTRY_BYTES;
            let ce = self.read(ca)?;
            if ce.locked() {
                return Err(Self::corrupt_state(ca, &ce));
            }
            match ce.state {
                state::PAIR if ce.key == key => {
                    return self.fill(ca, value, None, ce.next_head(state::PAIR));
                }
                state::PAIR => {}
                state::DELETED => {
                    free.get_or_insert((ca, ce));
                }
                state::EMPTY => {
                    free.get_or_insert((ca, ce));
                    break;
                }
                _ => return Err(Self::corrupt_state(ca, &ce)),
            }
        }
        let Some((ca, ce)) = free else {
            return Err(Error::Full {
                key,
                container: c,
                entries: CONTAINER_ENTRIES,
            });
        };
        self.fill(ca, value, Some(key), ce.next_head(state::PAIR))
    }

    /// dhtDelete: removes `key`; whether it was there.
    pub fn delete(&self, key: u64) -> Result<bool> {
        self.count(|s| s.deletes += 1);
        let mut b = Backoff::new(self.cfg);
        self.locked(key, |a, e| match e.state {
            state::PAIR if e.key == key => Ok((Release::Head(e.next_head(state::EMPTY)), true)),
            state::EMPTY | state::PAIR => Ok((Release::Head(e.word0()), false)),
            _ => {
                let c = self.container(a, e.key)?;
                match self.find(c, key, &mut b)?.0 {
                    Some((ca, ce)) => {
                        self.g.write(ca, ce.next_head(state::DELETED))?;
                        Ok((Release::Head(e.next_head(state::INDIRECT)), true))
                    }
                    None => Ok((Release::Head(e.word0()), false)),
                }
            }
        })
    }

    // ---- the whole table ----

    /// Reads every first-level entry (a bulk read per page of each slice): calls `f` with each
    /// entry's address.
    fn each_entry(&self, mut f: impl FnMut(u64, Entry)) -> Result<()> {
        let mut page = vec![0u8; PAGE_SIZE as usize];
        for &s in &self.l.slices {
            for p in 0..self.l.slice_pages() {
                let pa = s + p * PAGE_SIZE;
                self.g.bulk_read(pa, &mut page)?;
                for (i, e) in entries(&page).enumerate() {
                    f(pa + i as u64 * ENTRY_BYTES, e);
                }
            }
        }
        Ok(())
    }

    /// The containers the first level points to: each checked (a page of the entry's node,
    /// none of the table's own pages, each once); the rest counted as malformed.
    fn containers(&self) -> Result<(Vec<u64>, u64)> {
        let own: BTreeSet<u64> = std::iter::once(self.l.root)
            .chain(
                self.l
                    .slices
                    .iter()
                    .flat_map(|&s| (0..self.l.slice_pages()).map(move |p| s + p * PAGE_SIZE)),
            )
            .collect();
        let mut found = BTreeSet::new();
        let mut malformed = 0;
        self.each_entry(|a, e| {
            if e.state == state::INDIRECT {
                match self.container(a, e.key) {
                    Ok(c) if !own.contains(&c) && found.insert(c) => {}
                    _ => malformed += 1,
                }
            }
        })?;
        Ok((found.into_iter().collect(), malformed))
    }

    /// Counts what the table holds (a consistent picture only while nobody writes).
    pub fn scan(&self) -> Result<Scan> {
        let mut s = Scan::default();
        self.each_entry(|_, e| {
            s.entries += 1;
            s.locked += u64::from(e.locked());
            match e.state {
                state::EMPTY => {}
                state::PAIR => s.direct += 1,
                state::INDIRECT => s.indirect += 1,
                _ => s.malformed += 1,
            }
        })?;
        let (cs, bad) = self.containers()?;
        s.malformed += bad;
        let mut page = vec![0u8; PAGE_SIZE as usize];
        for c in cs {
            self.g.bulk_read(c, &mut page)?;
            for e in entries(&page) {
                s.locked += u64::from(e.locked());
                match e.state {
                    state::EMPTY => {}
                    state::PAIR => s.in_containers += 1,
                    state::DELETED => s.deleted += 1,
                    _ => s.malformed += 1,
                }
            }
        }
        Ok(s)
    }

    /// dhtDestroy: marks the table destroyed (so no process opens it again; only one destroy
    /// wins), then frees its containers, slices and root. Use it when nobody else uses the
    /// table: their operations fail once the pages are gone.
    pub fn destroy(self) -> Result<Destroyed> {
        let st = self.l.root + STATE_WORD * 8;
        let old = self.g.cas(st, LIVE, DESTROYED)?;
        if old != LIVE {
            return Err(Error::Corrupt(format!(
                "table root {:#x}: state {old} (destroyed already?)",
                self.l.root
            )));
        }
        let (cs, malformed) = self.containers()?;
        let mut d = Destroyed {
            malformed,
            ..Default::default()
        };
        let all = cs
            .iter()
            .copied()
            .chain(self.l.slices.iter().copied())
            .chain(std::iter::once(self.l.root));
        for a in all {
            if let Err(e) = self.g.free(a) {
                log::warn!("dht: destroy {:#x}: freeing {a:#x}: {e}", self.l.root);
                d.free_errors += 1;
            }
        }
        d.containers = cs.len() as u64;
        // Containers allocated but never linked (tagged with the root), at most as many as a
        // node's pool has pages.
        for n in self.l.nodes() {
            for _ in 0..MAX_TAG_SWEEP {
                match self.g.free_tag(n, self.l.root) {
                    Ok(Some(a)) => {
                        log::info!(
                            "dht: destroy {:#x}: freed unlinked container {a:#x}",
                            self.l.root
                        );
                        d.unlinked += 1;
                    }
                    Ok(None) => break,
                    Err(e) => {
                        log::warn!(
                            "dht: destroy {:#x}: freeing unlinked containers on node {n}: {e}",
                            self.l.root
                        );
                        d.free_errors += 1;
                        break;
                    }
                }
            }
        }
        Ok(d)
    }
}

/// The entries of a page read in bulk.
fn entries(page: &[u8]) -> impl Iterator<Item = Entry> + '_ {
    page.chunks_exact(ENTRY_BYTES as usize).map(|c| {
        let mut w = [0u64; 4];
        for (i, x) in c.chunks_exact(8).enumerate() {
            w[i] = u64::from_le_bytes(x.try_into().expect("8 bytes"));
        }
        Entry::decode(w)
    })
}

/// The stores of a fill of the entry at `addr`: its value, then its key (if `key`), and last
/// its head, so that a reader never sees the head before the rest. (Stores, how many.)
fn fill_stores(addr: u64, value: u128, key: Option<u64>, head: u64) -> ([(u64, u64); 4], usize) {
    let mut e = [(0, 0); 4];
    let mut n = 0;
    let mut push = |a: u64, v: u64| {
        e[n] = (a, v);
        n += 1;
    };
    push(addr + 16, value as u64);
    push(addr + 24, (value >> 64) as u64);
    if let Some(k) = key {
        push(addr + 8, k);
    }
    push(addr, head);
    (e, n)
}
