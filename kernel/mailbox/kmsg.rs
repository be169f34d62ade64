// SPDX-License-Identifier: GPL-2.0
//! 64-bit messages addressed to services: kernel clients register per-opcode callbacks, a
//! privileged user-space process (kram-daemon) can bind a service to its file instead. The
//! dispatch work takes the messages from this node's kernel-message rings
//! ([`Services::drain`]); `sender.rs` queues them on a peer's.

use crate::{
    counters::Counters as NodeCounters,
    kmsg_api::KmsgHandler,
    mailbox::{kmsg_opcode, layout, service, Kmsg},
    ring::Resynced,
    window::Window,
};
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use kernel::{
    ffi::c_void,
    new_mutex, new_poll_condvar, new_spinlock_irq,
    prelude::*,
    sync::{poll::PollCondVar, Mutex, SpinLockIrq},
};

const OPCODES: usize = 16;
const SERVICES: usize = service::COUNT as usize;
/// Messages a bound user-space service may have waiting before new ones are dropped.
const QUEUE_LEN: usize = 64;

pub(crate) fn check_service(service: u32) -> Result {
    if service == 0 || service >= service::COUNT {
        return Err(EINVAL);
    }
    Ok(())
}

#[derive(Clone, Copy)]
struct Handler {
    func: KmsgHandler,
    ctx: usize,
}

/// Messages waiting for a bound user-space service.
pub(crate) struct Queue {
    items: [(u32, u64); QUEUE_LEN],
    head: usize,
    len: usize,
}

impl Queue {
    pub(crate) fn pop(&mut self) -> Option<(u32, u64)> {
        if self.len == 0 {
            return None;
        }
        let item = self.items[self.head];
        self.head = (self.head + 1) % QUEUE_LEN;
        self.len -= 1;
        Some(item)
    }

    fn push(&mut self, item: (u32, u64)) -> bool {
        if self.len == QUEUE_LEN {
            return false;
        }
        self.items[(self.head + self.len) % QUEUE_LEN] = item;
        self.len += 1;
        true
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len == 0
    }
}

#[pin_data]
pub(crate) struct UserService {
    bound: AtomicBool,
    #[pin]
    pub(crate) queue: SpinLockIrq<Queue>,
    #[pin]
    pub(crate) wait: PollCondVar,
}

/// Per-service counters, shown in debugfs.
pub(crate) struct Counters {
    pub(crate) sent: [AtomicU64; SERVICES],
    pub(crate) received: [AtomicU64; SERVICES],
    pub(crate) rejected: [AtomicU64; SERVICES],
    pub(crate) dropped: [AtomicU64; SERVICES],
}

#[pin_data]
pub(crate) struct Services {
    /// `[service][opcode]`. Held while a callback runs, so removing one waits for it.
    #[pin]
    handlers: Mutex<[[Option<Handler>; OPCODES]; SERVICES]>,
    pub(crate) user: KVec<Pin<KBox<UserService>>>,
    pub(crate) counters: Counters,
}

fn counters() -> Counters {
    Counters {
        sent: [const { AtomicU64::new(0) }; SERVICES],
        received: [const { AtomicU64::new(0) }; SERVICES],
        rejected: [const { AtomicU64::new(0) }; SERVICES],
        dropped: [const { AtomicU64::new(0) }; SERVICES],
    }
}

fn user_services() -> Result<KVec<Pin<KBox<UserService>>>> {
    let mut v = KVec::with_capacity(SERVICES, GFP_KERNEL)?;
    for _ in 0..SERVICES {
        let queue = Queue {
            items: [(0, 0); QUEUE_LEN],
            head: 0,
            len: 0,
        };
        v.push(
            KBox::pin_init(
                pin_init!(UserService {
                    bound: AtomicBool::new(false),
                    queue <- new_spinlock_irq!(queue, "unimem_mailbox::kqueue"),
                    wait <- new_poll_condvar!("unimem_mailbox::kwait"),
                }),
                GFP_KERNEL,
            )?,
            GFP_KERNEL,
        )?;
    }
    Ok(v)
}

impl Services {
    pub(crate) fn new() -> impl PinInit<Self, Error> {
        try_pin_init!(Services {
            handlers <- new_mutex!([[None; OPCODES]; SERVICES], "unimem_mailbox::handlers"),
            user: user_services()?,
            counters: counters(),
        }? Error)
    }

    /// Wakes every reader sleeping in `KRECV`.
    pub(crate) fn wake_all(&self) {
        for user in self.user.iter() {
            let _queue = user.queue.lock();
            user.wait.notify_all();
        }
    }

    fn bump(c: &[AtomicU64; SERVICES], service: u32) {
        if let Some(c) = c.get(service as usize) {
            c.fetch_add(1, Ordering::Relaxed);
        }
    }

    pub(crate) fn count_sent(&self, service: u32) {
        Self::bump(&self.counters.sent, service);
    }

    pub(crate) fn count_rejected(&self, service: u32) {
        Self::bump(&self.counters.rejected, service);
    }

    /// Installs (`Some`) or removes (`None`) a kernel callback.
    pub(crate) fn register(
        &self,
        service: u32,
        opcode: u32,
        func: Option<KmsgHandler>,
        ctx: *mut c_void,
    ) -> Result {
        check_service(service)?;
        if opcode as usize >= OPCODES {
            return Err(EINVAL);
        }
        let mut handlers = self.handlers.lock();
        let slot = &mut handlers[service as usize][opcode as usize];
        match func {
            Some(func) => {
                if slot.is_some() || self.user[service as usize].bound.load(Ordering::Acquire) {
                    return Err(EBUSY);
                }
                *slot = Some(Handler {
                    func,
                    ctx: ctx as usize,
                });
            }
            None => *slot = None,
        }
        Ok(())
    }

    /// Routes `service` to a user-space file; refused while kernel callbacks serve it.
    pub(crate) fn bind(&self, service: u32) -> Result {
        check_service(service)?;
        let handlers = self.handlers.lock();
        if handlers[service as usize].iter().any(Option::is_some) {
            return Err(EBUSY);
        }
        self.user[service as usize]
            .bound
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .map_err(|_| EBUSY)?;
        Ok(())
    }

    pub(crate) fn unbind(&self, service: u32) {
        if let Some(user) = self.user.get(service as usize) {
            user.bound.store(false, Ordering::Release);
            let mut queue = user.queue.lock();
            while queue.pop().is_some() {}
        }
    }

    /// Hands a received message to its kernel callback or bound file; counts what nobody takes.
    pub(crate) fn deliver(&self, m: Kmsg) {
        let s = m.service as usize;
        {
            let handlers = self.handlers.lock();
            if let Some(h) = handlers[s][kmsg_opcode(m.word) as usize] {
                Self::bump(&self.counters.received, m.service);
                // SAFETY: the registrant promised `func` is callable with `ctx` in process
                // context until removed, and removal waits for this lock.
                unsafe { (h.func)(h.ctx as *mut c_void, m.sender, m.word) };
                return;
            }
        }
        let user = &self.user[s];
        if user.bound.load(Ordering::Acquire) {
            let mut queue = user.queue.lock();
            if queue.push((m.sender, m.word)) {
                Self::bump(&self.counters.received, m.service);
                // Under the queue lock, so a reader between its check and its sleep is woken.
                user.wait.notify_all();
                return;
            }
        }
        Self::bump(&self.counters.dropped, m.service);
    }

    /// Delivers what the kernel-message rings held when this pass started (at most one ring's
    /// worth per sender); `true` when peers have queued more since.
    pub(crate) fn drain(&self, win: &Window, counters: &NodeCounters) -> bool {
        // Handlers may sleep, so not under the window access: each pass copies what one ring
        // held (at most `SLOTS` entries) and the messages are delivered after it.
        let Ok(mut batch) = KVec::<Kmsg>::with_capacity(layout::SLOTS as usize, GFP_KERNEL) else {
            return true;
        };
        for sender in 0..win.nodes {
            batch.clear();
            {
                let Some(w) = win.gas().access() else {
                    return false;
                };
                let mut pass = match win.kmsg_ring(&w, win.node, sender).pass() {
                    Ok(pass) => pass,
                    Err(Resynced) => {
                        counters.resynced.fetch_add(1, Ordering::Relaxed);
                        if win.warn_peer() {
                            pr_warn!("message ring of node {} had impossible indices: resynced (rate-limited)\n", sender);
                        }
                        continue;
                    }
                };
                let mut slot = [0u8; layout::SLOT_LEN];
                while pass.next(&mut slot) {
                    match Kmsg::decode(&slot).ok().filter(|m| m.sender == sender) {
                        // A pass takes at most `SLOTS` entries, the capacity.
                        Some(m) => drop(batch.push_within_capacity(m)),
                        None => {
                            counters.malformed.fetch_add(1, Ordering::Relaxed);
                            if win.warn_peer() {
                                pr_warn!(
                                    "malformed message from node {} dropped (rate-limited)\n",
                                    sender
                                );
                            }
                        }
                    }
                }
            }
            for m in batch.iter() {
                self.deliver(*m);
            }
        }
        win.gas().access().is_some_and(|w| win.kmsgs_queued(&w))
    }
}
