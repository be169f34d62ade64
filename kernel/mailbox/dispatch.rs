// SPDX-License-Identifier: GPL-2.0
//! What a doorbell to this node does: wake the receivers of user interfaces with packets, and
//! queue the dispatch work, which hands kernel messages (`kmsg.rs`) and the served interfaces'
//! packets (`served.rs`) to their services and then busy-polls (`poll.rs`).

use crate::{poll::PollWith, state::State};
use core::sync::atomic::Ordering;
use kernel::{
    sync::{Arc, ArcBorrow},
    workqueue::{self, impl_has_work, WorkItem},
};

impl_has_work! {
    impl HasWork<Self> for State { self.work }
}

impl WorkItem for State {
    type Pointer = Arc<State>;

    fn run(this: Arc<State>) {
        let (win, served) = (&this.window, &this.served);
        let started = win.now_ns();
        // One ring's worth per sender and run; a peer that keeps its ring full gets another run
        // later, not a CPU spinning here.
        let more = this.services.drain(win, &this.counters);
        let (handed, more_served) = served.drain(win, &this.owners, &this.counters);
        let more = more
            || more_served
            || (handed > 0
                && served.busy_poll(
                    &PollWith {
                        win,
                        owners: &this.owners,
                        counters: &this.counters,
                        stopping: &this.stopping,
                    },
                    started,
                ));
        if handed == 0 {
            // The flags are ours to write, but a peer may have scribbled on them: a run that did
            // not poll leaves them cleared, so senders ring again (polling clears its own).
            served.set_polling(win, false);
        }
        if more && !this.stopping.load(Ordering::Acquire) {
            // Already queued is fine: that run will see the rest.
            let _ = workqueue::system_percpu().enqueue(this);
        }
    }
}

impl State {
    /// Doorbell: wake receivers with queued packets, schedule kernel-message dispatch.
    /// Runs in hard-IRQ context (or from a local send).
    pub(crate) fn kick(&self) {
        let Some(w) = self.window.gas().access() else {
            return;
        };
        self.owners.wake_queued(&self.window, &w);
        drop(w);
        let (served, kmsgs) = self.served.dispatch_pending(&self.window);
        if served || kmsgs {
            // SAFETY: `self` lives in an `Arc` (`State::new`) that outlives every doorbell
            // handler call and local send (the module keeps one reference until both stopped).
            let this: Arc<State> = unsafe { ArcBorrow::from_raw(self) }.into();
            // Already queued is fine: that run will see these messages too.
            let _ = workqueue::system_percpu().enqueue(this);
        }
    }
}
