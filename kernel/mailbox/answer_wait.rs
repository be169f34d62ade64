// SPDX-License-Identifier: GPL-2.0
//! `WAIT_ANSWER`: a thread sleeps until a home's service has answered its GSAS request, and the
//! home rings this node when it answers (docs/GSAS.md, "Waiting for an answer asleep").
//!
//! Why: a thread that spins for an answer holds its vCPU, and on the virtual cluster, where
//! the nodes share the host's cores, that is the core the homes need to serve it. Asleep, the
//! thread frees the CPU, at the cost of a doorbell and a wake-up per answer.
//!
//! The handshake with the home, which reads the interface's wake word after it wrote an answer
//! (`kernel/gsas/request.rs`): the waiter publishes [`WAKE_ASLEEP`] in the wake word, then looks
//! at the slot's `seq`, each with a full fence in between, as the home writes `seq` and then
//! reads the word. One of the two sees the other's store; when neither does (a store the host
//! had not yet made visible, as cross-VM fences under TCG do not order), the sleep ends at its
//! timeout, a tick later, and the thread looks again.

use crate::state::State;
use crate::{
    gas::MAX_NODES,
    gsas::{response_slot, wake_word, WAKE_ASLEEP},
    mailbox::WaitAnswerArgs,
};
use core::sync::atomic::{fence, Ordering};
use kernel::{
    prelude::*,
    sync::CondVarTimeoutResult,
    time::{msecs_to_jiffies, Jiffies},
};

impl State {
    /// Sleeps until the response slot of node `a.home` for local interface `id` no longer holds
    /// `a.seq`, for at most `a.timeout_us`: `ETIMEDOUT` if it still does, `ERESTARTSYS` on a
    /// signal, `ENODEV` once the fabric is gone.
    pub(crate) fn wait_answer(&self, id: u32, a: &WaitAnswerArgs) -> Result {
        if a.home >= self.window.nodes || a.home >= MAX_NODES || a.reserved != 0 {
            return Err(EINVAL);
        }
        let iface = self.owners.ifaces.get(id as usize).ok_or(EINVAL)?;
        let win = &self.window;
        let node = win.node;
        let deadline = win
            .now_ns()
            .saturating_add(u64::from(a.timeout_us).saturating_mul(1000));
        let answered = || -> Result<bool> {
            let w = win.gas().access().ok_or(ENODEV)?;
            let seq = win.word32(&w, node, response_slot(id, a.home));
            Ok(u32::from_le(seq.load(Ordering::Acquire)) != a.seq)
        };
        let wake = |on: bool| -> Result {
            let w = win.gas().access().ok_or(ENODEV)?;
            let word = win.word32(&w, node, wake_word(id));
            word.store(if on { WAKE_ASLEEP.to_le() } else { 0 }, Ordering::Release);
            // The home's answer (`seq`) is read after this store is visible.
            fence(Ordering::SeqCst);
            Ok(())
        };
        if answered()? {
            return Ok(());
        }
        iface.answer_wait.store(true, Ordering::Release);
        wake(true)?;
        self.counters.answer_sleeps.fetch_add(1, Ordering::Relaxed);
        let r = loop {
            let mut owner = iface.owner.lock();
            match answered() {
                Ok(true) => break Ok(()),
                Ok(false) => {}
                Err(e) => break Err(e),
            }
            let now = win.now_ns();
            if now >= deadline {
                break Err(ETIMEDOUT);
            }
            let left_ms = (deadline - now)
                .div_ceil(1_000_000)
                .min(u64::from(u32::MAX));
            let ticks: Jiffies = msecs_to_jiffies(left_ms as u32).max(1);
            // The doorbell handler (`Owners::wake_queued`) takes `owner` before it wakes this
            // queue, so its wake-up cannot fall between the look above and the sleep.
            if let CondVarTimeoutResult::Signal { .. } =
                iface.wait.wait_interruptible_timeout(&mut owner, ticks)
            {
                break Err(ERESTARTSYS);
            }
        };
        iface.answer_wait.store(false, Ordering::Release);
        let cleared = wake(false);
        r.and(cleared)
    }
}
