// SPDX-License-Identifier: GPL-2.0
//! The node's mailbox state: one object for the dispatch work item, the doorbell handler,
//! files, sysfs and the C seam, made of parts that each hold one job's data and methods:
//!
//! - [`Window`] (`window.rs`): where partitions, rings and words lie in the GAS window; every
//!   other part gets it by reference.
//! - [`Owners`] (`owners.rs`, `owner_table.rs`): the interfaces, who holds them, protection
//!   trees, and the owner table that tells the homes.
//! - [`Sender`] (`sender.rs`): this node's producers on its peers' rings and its doorbells.
//! - [`Served`] (`served.rs`, `submit.rs`, `poll.rs`): kernel services on the kernel
//!   interfaces, what they took from submission slots, and busy polling of their rings.
//! - [`Services`] (`kmsg.rs`): kernel-message services.
//! - [`UserMaps`] (`maps.rs`): user mappings of the window.
//! - [`Counters`] (`counters.rs`): the node's totals.

use crate::{
    counters::Counters, fabric_client::Gas, kmsg::Services, maps::UserMaps, owners::Owners,
    sender::Sender, served::Served, window::Window,
};
use core::sync::atomic::AtomicBool;
use kernel::{new_work, prelude::*, sync::Arc, workqueue::Work};

#[pin_data]
pub(crate) struct State {
    pub(crate) window: Window,
    #[pin]
    pub(crate) owners: Owners,
    pub(crate) sender: Sender,
    #[pin]
    pub(crate) served: Served,
    #[pin]
    pub(crate) services: Services,
    /// The dispatch work (`dispatch.rs`).
    #[pin]
    pub(crate) work: Work<State>,
    /// Set at module exit: the dispatch work no longer queues itself again.
    pub(crate) stopping: AtomicBool,
    /// User mappings of interface areas and partition pages (`maps.rs`).
    #[pin]
    pub(crate) maps: UserMaps,
    /// The node's totals (`sysfs.rs`).
    pub(crate) counters: Counters,
}

// SAFETY: the window is reached only through `window`'s `gas` accesses; everything else is
// synchronized by locks or atomics.
unsafe impl Send for State {}
// SAFETY: see `Send`.
unsafe impl Sync for State {}

impl State {
    pub(crate) fn new(gas: Arc<Gas>, poll_ns: u64, doorbell_rate: u32) -> Result<Arc<Self>> {
        let window = Window::new(gas)?;
        let nodes = window.nodes;
        let sender = Sender::new(nodes, doorbell_rate)?;
        let state = Arc::pin_init(
            try_pin_init!(State {
                window,
                owners <- Owners::new(),
                sender,
                served <- Served::new(nodes, poll_ns),
                services <- Services::new(),
                work <- new_work!("unimem_mailbox::kmsg"),
                stopping: AtomicBool::new(false),
                maps <- UserMaps::new(),
                counters: Counters::default(),
            }? Error),
            GFP_KERNEL,
        )?;
        // Rings in our partition may hold anything: a previous run's entries, or bytes a
        // privileged tool wrote there. Start from empty rings.
        let w = state.window.gas().access().ok_or(ENODEV)?;
        state.window.reset_rings(&w);
        Owners::reset_owner_table(&state.window, &w);
        drop(w);
        Ok(state)
    }
}
