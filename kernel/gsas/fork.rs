// SPDX-License-Identifier: GPL-2.0
//! remoteFork (seed 000 section 2.2): FORK and WAIT requests, the node's bounded table of
//! children, and what the node's root daemon (`gsasd`) does to it through `/dev/unimem_gsas`
//! (`daemon.rs`): take the programs to start and report what became of them.
//!
//! FORK: the service checks the blob (path and arguments, copied from the issuer's bulk-out
//! page), queues a job carrying the issuer's sealed protection id and does not answer yet; the
//! daemon takes the job, starts the program in that tree and posts STARTED (the service then
//! answers the issuer with the child id) or FAILED (answered `EXEC_FAILED`); later it posts
//! EXITED with the wait status. WAIT is answered at once: the status if the child exited (and
//! the child is forgotten), else `RUNNING` (the library asks again), so no answer is ever
//! pending for a WAIT.

use crate::{
    claims::Claim,
    gsas::{
        daemon::{self as abi, Post},
        fork::{self as fk, BLOB_MAX, MAX_CHILDREN},
        op,
        owner::{self, Creds},
        status, Response, BULK_OUT_PAGE,
    },
    packet::Payload,
    service::{Inner, Service},
    stats::Counter,
};
use kernel::{
    fs::{file, File},
    prelude::*,
    uaccess::{UserPtr, UserSlice},
};

enum State {
    /// Waiting for the daemon; the checked blob.
    Queued(KVec<u8>),
    /// Handed to the daemon, which has not said whether it started.
    Taken,
    Running,
    /// Exited with this wait status, not waited for yet.
    Exited(u32),
    /// The daemon went away while the child ran: its status is lost.
    Lost,
}

struct Child {
    serial: u32,
    tree: u32,
    /// The issuer of the FORK, answered when the daemon posts STARTED or FAILED, only if its
    /// interface is still owned under the entry word `entry` then (`claims.rs`).
    node: u32,
    iface: u32,
    entry: u64,
    /// Who issued it, as its node sealed it: the daemon runs the child as this user.
    creds: Creds,
    /// The FORK's address, echoed in its answer.
    echo: u64,
    state: State,
}

impl Child {
    /// Whether the child is starting or running (it holds a process, and a place its issuer's
    /// quota counts).
    fn alive(&self) -> bool {
        matches!(self.state, State::Queued(_) | State::Taken | State::Running)
    }
}

/// The children this node started or is about to start: at most `MAX_CHILDREN`. An entry goes
/// when its exit status is collected by a WAIT, when it failed to start, or, if the table is
/// full, the oldest entry whose child exited (or was lost) makes room for a FORK. Under the
/// service lock.
pub(crate) struct Children {
    list: KVec<Child>,
    next: u32,
    /// A daemon has `/dev/unimem_gsas` open.
    pub(crate) daemon: bool,
}

impl Children {
    pub(crate) fn new() -> Result<Self> {
        Ok(Self {
            list: KVec::with_capacity(MAX_CHILDREN, GFP_KERNEL)?,
            next: 1,
            daemon: false,
        })
    }

    fn find(&self, serial: u32) -> Option<usize> {
        self.list.iter().position(|c| c.serial == serial)
    }

    /// A serial not 0 and not in the table (bounded: the table holds at most `MAX_CHILDREN`).
    fn fresh_serial(&mut self) -> u32 {
        for _ in 0..=MAX_CHILDREN {
            let s = self.next;
            self.next = self.next.wrapping_add(1).max(1);
            if self.find(s).is_none() {
                return s;
            }
        }
        // Unreachable: `MAX_CHILDREN + 1` consecutive serials cannot all be in the table.
        self.next
    }

    /// Room for one more entry: drops the oldest finished child if the table is full. `Err`
    /// if there is none; `Ok(Some(tree))` names the tree of the child dropped.
    fn make_room(&mut self) -> Result<Option<u32>, ()> {
        if self.list.len() < MAX_CHILDREN {
            return Ok(None);
        }
        let i = self.list.iter().position(|c| !c.alive()).ok_or(())?;
        Ok(self.list.remove(i).ok().map(|c| c.tree))
    }

    /// Whether a child of `tree` is in the table (started or not, not waited for).
    pub(crate) fn holds(&self, tree: u32) -> bool {
        self.list.iter().any(|c| c.tree == tree)
    }
}

impl Service {
    /// Writes an answer for the claimed interface under the lock, counting its status.
    fn answer(
        &self,
        inner: &mut Inner,
        claim: &Claim<'_>,
        opcode: u8,
        echo: u64,
        st: u8,
        value: u64,
    ) {
        let mut resp = Response {
            seq: 0,
            status: st,
            opcode,
            address: echo,
            value: [0; 32],
        };
        resp.value[..8].copy_from_slice(&value.to_le_bytes());
        self.stats.status(st);
        self.respond(inner, claim, &mut resp);
    }

    /// A FORK or WAIT (checked by `gsas::check`) of tree `tree` from interface `iface` of node
    /// `from` (`in_sender`: in its local sender's `SEND`), served under a claim on that
    /// interface.
    pub(crate) fn fork_or_wait(
        &self,
        in_sender: bool,
        from: u32,
        iface: u32,
        tree: u32,
        req: &Payload,
    ) {
        // The blob's buffer is allocated before the window access (an RCU read-side section).
        let buf = (req.opcode == op::FORK).then(|| blob_buffer(req.arg1));
        let Some(w) = self.gas.access() else {
            self.stats.bump(Counter::Unanswered);
            return;
        };
        let Some(claim) = self.claim_request(&w, in_sender, from, iface, tree) else {
            return;
        };
        if let Some(buf) = buf {
            // Copied and checked before taking the lock (it may be a page; the bytes are
            // untrusted and copied once).
            let blob = buf.and_then(|b| self.fork_blob(&claim, b));
            let creds = self.issuer_creds(&claim);
            let mut inner = self.inner.lock();
            let st = match blob {
                Err(st) => st,
                Ok(_) if tree == 0 => status::DENIED,
                Ok(blob) => match self.queue(&mut inner, &claim, creds, tree, req.address, blob) {
                    Ok(()) => return,
                    Err(st) => st,
                },
            };
            self.answer(&mut inner, &claim, req.opcode, req.address, st, 0);
            return;
        }
        let mut inner = self.inner.lock();
        let (st, value) = wait(&mut inner.children, self.node, tree, req.address);
        if matches!(st, status::OK | status::NO_DAEMON) {
            // The child's entry went: the tree may have nothing left here.
            self.refresh_live(&inner, tree);
        }
        self.answer(&mut inner, &claim, req.opcode, req.address, st, value);
    }

    /// Copies the claimed issuer's bulk-out page, as long as `blob`'s capacity, into `blob`
    /// and checks it as a blob.
    fn fork_blob(&self, claim: &Claim<'_>, mut blob: KVec<u8>) -> Result<KVec<u8>, u8> {
        let len = blob.capacity() as u64;
        let src = claim
            .w
            .ptr(self.area(claim.from, claim.iface, BULK_OUT_PAGE), len)
            .ok_or(status::FAULT)?;
        for i in 0..len as usize {
            // SAFETY: `i < len`: inside the range `ptr` returned for the claim's access, which
            // lives across the loop. Other nodes may write it meanwhile: bytes, checked below.
            let b = unsafe { src.add(i).read_volatile() };
            // Within the capacity: no allocation (this runs in an RCU read-side section).
            blob.push(b, GFP_ATOMIC).map_err(|_| status::NO_MEMORY)?;
        }
        fk::check(&blob).map_err(|_| status::INVALID)?;
        Ok(blob)
    }

    /// Queues a job for the daemon (the FORK is answered when it posts).
    fn queue(
        &self,
        inner: &mut Inner,
        claim: &Claim<'_>,
        user: Creds,
        tree: u32,
        echo: u64,
        blob: KVec<u8>,
    ) -> Result<(), u8> {
        let ch = &mut inner.children;
        if !ch.daemon {
            return Err(status::NO_DAEMON);
        }
        // Only children that are starting or running count: an exited one's entry, waited for
        // or not, is given up to the next fork when the table is full (`make_room`), so a user
        // who never waits is not locked out by its own finished children.
        if user.flags & owner::ADMIN == 0
            && ch
                .list
                .iter()
                .filter(|c| c.creds.uid == user.uid && c.alive())
                .count()
                >= self.quota.forks as usize
        {
            return Err(status::QUOTA);
        }
        let dropped = ch.make_room().map_err(|()| status::BUSY)?;
        let serial = ch.fresh_serial();
        // The table's capacity is `MAX_CHILDREN` and `make_room` left room: no allocation.
        ch.list
            .push(
                Child {
                    serial,
                    tree,
                    node: claim.from,
                    iface: claim.iface,
                    entry: claim.entry,
                    creds: user,
                    echo,
                    state: State::Queued(blob),
                },
                GFP_ATOMIC,
            )
            .map_err(|_| status::NO_MEMORY)?;
        // Before the claim's release: from now on the tree is live here (`claims.rs`).
        self.set_live(tree, true);
        if let Some(t) = dropped {
            self.refresh_live(inner, t);
        }
        self.stats.bump(Counter::Forks);
        self.jobs.notify_one();
        Ok(())
    }

    /// The daemon went away: queued and taken jobs are answered `NO_DAEMON`, running children
    /// are lost (their WAIT answers `NO_DAEMON`).
    pub(crate) fn daemon_gone(&self) {
        let mut inner = self.inner.lock();
        inner.children.daemon = false;
        let mut i = 0;
        while i < inner.children.list.len() {
            let c = &mut inner.children.list[i];
            match c.state {
                State::Queued(_) | State::Taken => {
                    let (node, iface, entry, echo, tree) =
                        (c.node, c.iface, c.entry, c.echo, c.tree);
                    let _ = inner.children.list.remove(i);
                    self.refresh_live(&inner, tree);
                    let w = self.gas.access();
                    if let Some(claim) =
                        w.as_ref().and_then(|w| self.reclaim(w, node, iface, entry))
                    {
                        self.answer(&mut inner, &claim, op::FORK, echo, status::NO_DAEMON, 0);
                    }
                    continue;
                }
                State::Running => c.state = State::Lost,
                _ => {}
            }
            i += 1;
        }
    }

    /// JOB: the next queued program, written to user memory at `arg`.
    pub(crate) fn next_job(&self, file: &File, arg: usize) -> Result<isize> {
        let (serial, tree, node, creds, blob) = {
            let mut inner = self.inner.lock();
            loop {
                let ch = &mut inner.children;
                if let Some(c) = ch
                    .list
                    .iter_mut()
                    .find(|c| matches!(c.state, State::Queued(_)))
                {
                    let State::Queued(blob) = core::mem::replace(&mut c.state, State::Taken) else {
                        return Err(EINVAL);
                    };
                    break (c.serial, c.tree, c.node, c.creds, blob);
                }
                if file.flags() & file::flags::O_NONBLOCK != 0 {
                    return Err(EAGAIN);
                }
                if self.jobs.wait_interruptible(&mut inner) {
                    return Err(ERESTARTSYS);
                }
            }
        };
        // `abi::Job` up to its blob: eight `u32`s.
        let mut hdr = [0u8; 32];
        let fields = [
            serial,
            tree,
            node,
            blob.len() as u32,
            creds.uid,
            creds.gid,
            creds.flags,
            0,
        ];
        for (k, v) in fields.iter().enumerate() {
            hdr[k * 4..k * 4 + 4].copy_from_slice(&v.to_ne_bytes());
        }
        let mut w =
            UserSlice::new(UserPtr::from_addr(arg), core::mem::size_of::<abi::Job>()).writer();
        let copied = w.write_slice(&hdr).and_then(|()| w.write_slice(&blob));
        if copied.is_err() {
            // The daemon passed a bad buffer: the job cannot be started.
            self.post(Post {
                serial,
                kind: abi::FAILED,
                value: EFAULT.to_errno().unsigned_abs(),
                _reserved: 0,
            })?;
        }
        copied.map(|()| 0)
    }

    /// POST: what became of child `p.serial`.
    pub(crate) fn post(&self, p: Post) -> Result<isize> {
        let mut inner = self.inner.lock();
        let i = inner.children.find(p.serial).ok_or(ENOENT)?;
        let c = &mut inner.children.list[i];
        let (node, iface, entry, echo, tree) = (c.node, c.iface, c.entry, c.echo, c.tree);
        let w = self.gas.access();
        let reclaim = || w.as_ref().and_then(|w| self.reclaim(w, node, iface, entry));
        match (p.kind, &c.state) {
            (abi::STARTED, State::Taken) => {
                c.state = State::Running;
                let id = fk::child_id(self.node as u16, p.serial);
                // The issuer's interface changed owner meanwhile: the answer is not for the
                // next one (its WAIT still works, by child id).
                if let Some(claim) = reclaim() {
                    self.answer(&mut inner, &claim, op::FORK, echo, status::OK, id);
                }
            }
            (abi::FAILED, State::Taken) => {
                let _ = inner.children.list.remove(i);
                self.refresh_live(&inner, tree);
                self.stats.bump(Counter::ForkFailed);
                if let Some(claim) = reclaim() {
                    self.answer(
                        &mut inner,
                        &claim,
                        op::FORK,
                        echo,
                        status::EXEC_FAILED,
                        u64::from(p.value),
                    );
                }
            }
            (abi::EXITED, State::Running) => {
                c.state = State::Exited(p.value);
                self.stats.bump(Counter::Exits);
            }
            _ => return Err(EINVAL),
        }
        Ok(0)
    }
}

/// An empty buffer for a FORK's blob of `len` bytes, or the status that refuses it.
fn blob_buffer(len: u64) -> Result<KVec<u8>, u8> {
    if len == 0 || len > BLOB_MAX as u64 {
        return Err(status::INVALID);
    }
    KVec::with_capacity(len as usize, GFP_KERNEL).map_err(|_| status::NO_MEMORY)
}

/// WAIT for `id` by `tree`: (status, value).
fn wait(ch: &mut Children, node: u32, tree: u32, id: u64) -> (u8, u64) {
    let serial = fk::serial(id);
    let i = match ch.find(serial) {
        Some(i)
            if u32::from(crate::gsas::node_of(id)) == node
                && u64::from(serial) == crate::gsas::offset_of(id) =>
        {
            i
        }
        _ => return (status::NO_CHILD, 0),
    };
    if ch.list[i].tree != tree {
        return (status::DENIED, 0);
    }
    match ch.list[i].state {
        State::Exited(ws) => {
            let _ = ch.list.remove(i);
            (status::OK, u64::from(ws))
        }
        State::Lost => {
            let _ = ch.list.remove(i);
            (status::NO_DAEMON, 0)
        }
        _ => (status::RUNNING, 0),
    }
}
