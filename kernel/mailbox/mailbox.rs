// SPDX-License-Identifier: GPL-2.0
//! unimem mailbox: the atomicity driver of the virtualized mailbox and packetizer.
//!
//! 64 mailbox/packetizer interface pairs per node, allocated by threads through
//! `/dev/unimem_mailbox`. A packet is 256 bits: the 56-bit header (sender node and interface,
//! protection id) is written here, from the interface's record, never by the thread. Receive
//! rings live in the receiving node's GAS partition (one per interface and sending node) and a
//! doorbell wakes the receiver. Also carries 64-bit messages between kernel clients (KRAM) and
//! daemons, with per-opcode callbacks. Seed 000 sections 2.1-2.2, seed 002 section 2.1.
//!
//! The node's state and the parts it is made of: `state.rs`.

use core::sync::atomic::Ordering;
use kernel::{
    debugfs,
    ffi::c_void,
    miscdevice::{MiscDeviceOptions, MiscDeviceRegistration},
    prelude::*,
    sync::{Arc, ArcBorrow},
    workqueue::Work,
};

mod answer_wait;
mod chardev;
mod counters;
mod dispatch;
mod doorbell_limit;
#[path = "../common/file_maps.rs"]
mod file_maps;
mod iface;
mod kmsg;
#[path = "../common/log_limit.rs"]
mod log_limit;
mod maps;
mod owner_table;
mod owners;
mod poll;
#[path = "../common/privilege.rs"]
mod privilege;
#[path = "../common/published.rs"]
mod published;
mod receive;
mod remote_map;
mod ring;
// The seam functions are `pub` because other modules link against them (exports.c).
#[allow(unreachable_pub)]
mod seam;
mod sender;
mod served;
mod state;
mod stats;
mod submit;
mod sysfs;
#[path = "../common/sysfs_group.rs"]
mod sysfs_group;
mod window;

// The shared layer (kernel/README.md): the wire formats, both seams, the fabric client; and
// the GSAS formats, which name `crate::kram`.
#[path = "../common/client.rs"]
mod common;
use common::*;
#[path = "../common/wire_gsas.rs"]
mod wire_gsas;
use wire_gsas::*;

use fabric_client::{Gas, OnRevoke, RevokeHook};
use published::{Published, Slot};
use state::State;

/// The module's state, published while the module is loaded.
static STATE: Slot<State> = Slot::new();

/// The module's state, for file opens and the seam.
pub(crate) fn current_state() -> Option<Arc<State>> {
    STATE.get()
}

/// The doorbell handler installed on the fabric while alive.
struct Doorbell(Arc<State>);

/// # Safety
///
/// Called by unimem_eusrvmem in hard-IRQ context with the `ctx` given at installation: a
/// `State` kept alive by `Doorbell` until the handler is removed.
unsafe extern "C" fn doorbell(ctx: *mut c_void, _vector: u32) {
    // SAFETY: see above.
    let state = unsafe { &*ctx.cast::<State>() };
    state.kick();
}

impl Doorbell {
    fn install(state: Arc<State>) -> Result<Self> {
        let ctx = Arc::as_ptr(&state).cast_mut().cast::<c_void>();
        // SAFETY: `doorbell` is IRQ-safe and `ctx` stays valid until `Drop` removes it.
        unsafe {
            state
                .window
                .gas()
                .set_doorbell(mailbox::DOORBELL_VECTOR, Some(doorbell), ctx)
        }
        .inspect_err(|e| {
            pr_err!(
                "cannot take doorbell vector {}: {:?}\n",
                mailbox::DOORBELL_VECTOR,
                e
            );
        })?;
        Ok(Self(state))
    }
}

impl Drop for Doorbell {
    fn drop(&mut self) {
        // SAFETY: removing waits for running handlers (unimem_fabric_set_handler contract).
        let _ = unsafe {
            self.0
                .window
                .gas()
                .set_doorbell(mailbox::DOORBELL_VECTOR, None, core::ptr::null_mut())
        };
        // No doorbell can queue the dispatch work any more, and the work stops queueing itself
        // again; cancel a queued run and wait for a running one before the code goes away.
        self.0.stopping.store(true, Ordering::Release);
        self.0.cancel_work();
    }
}

impl State {
    /// Cancels a queued dispatch run (releasing the reference it held) and waits for a running
    /// one; `cancel_sync` copes with a run that queues itself again.
    fn cancel_work(&self) {
        // SAFETY: `self` lives in an `Arc` (`State::new`) that the module keeps until the
        // doorbell and the revocation hook are gone, so it outlives this borrow.
        let this = unsafe { ArcBorrow::from_raw(self) };
        Work::<State>::cancel_sync(&this.into());
    }
}

impl OnRevoke for State {
    /// The fabric device goes: user mappings of interface areas are zapped (SIGBUS at the next
    /// access), no ring is touched again, nothing is dispatched, and every sleeping reader
    /// wakes up to fail with `ENODEV`.
    fn revoke(&self) {
        self.maps.zap_user_maps();
        self.window.gas().revoke();
        self.stopping.store(true, Ordering::Release);
        self.cancel_work();
        // Every sleeping reader, so that it looks again (and finds the fabric gone).
        self.owners.wake_all();
        self.services.wake_all();
        pr_warn!("fabric device gone: mailbox operations fail with ENODEV until unimem_mailbox is reloaded\n");
    }
}

struct MailboxModule {
    // Teardown order: no ZAPs, no revocation call, no new opens or reads of stats, then no
    // doorbells, then the state.
    _zaps: remote_map::ZapRoute,
    _revoke: RevokeHook<State>,
    _sysfs: sysfs_group::KernelDir<State>,
    _stats: Pin<KBox<debugfs::File<Arc<State>>>>,
    _dir: debugfs::Dir,
    _misc: Pin<KBox<MiscDeviceRegistration<chardev::MboxFile>>>,
    _doorbell: Doorbell,
    _published: Published<State>,
}

impl kernel::Module for MailboxModule {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let poll_us = *module_parameters::poll_us.value_ref();
        if poll_us > MAX_POLL_US {
            pr_err!("poll_us={} out of range (0-{})\n", poll_us, MAX_POLL_US);
            return Err(EINVAL);
        }
        let gas = Gas::attach()?;
        let info = *gas.info();
        let doorbell_rate = *module_parameters::doorbell_rate.value_ref();
        let state = State::new(gas.clone(), u64::from(poll_us) * 1000, doorbell_rate)?;
        let revoke = gas.on_revoke(state.clone())?;
        let published = STATE.publish(state.clone())?;
        let doorbell = Doorbell::install(state.clone())?;
        let misc = KBox::pin_init(
            MiscDeviceRegistration::register(MiscDeviceOptions {
                name: c"unimem_mailbox",
            }),
            GFP_KERNEL,
        )?;
        let dir = debugfs::Dir::new(c"unimem_mailbox");
        let stats = KBox::pin_init(
            dir.read_callback_file(c"stats", state.clone(), &|s: &Arc<State>, f| {
                s.write_stats(f)
            }),
            GFP_KERNEL,
        )?;
        let sysfs = sysfs::create(state.clone())?;
        let zaps = remote_map::ZapRoute::start(state.clone())?;
        pr_info!(
            "node {} of {}: {} interfaces, doorbell vector {}, busy polling {} us, user doorbells {}/ms per node\n",
            info.node_id,
            info.node_count,
            mailbox::INTERFACES,
            mailbox::DOORBELL_VECTOR,
            poll_us,
            doorbell_rate
        );
        Ok(Self {
            _zaps: zaps,
            _revoke: revoke,
            _sysfs: sysfs,
            _stats: stats,
            _dir: dir,
            _misc: misc,
            _doorbell: doorbell,
            _published: published,
        })
    }
}

module! {
    type: MailboxModule,
    name: "unimem_mailbox",
    authors: ["unimem developers"],
    description: "unimem virtualized mailbox and packetizer (atomicity driver): /dev/unimem_mailbox; serves GSAS interface areas and protection trees; counters in /sys/kernel/unimem_mailbox",
    license: "GPL v2",
    params: {
        poll_us: u32 {
            default: 200,
            description: "After serving packets for a kernel service (GSAS), keep polling its rings for this many microseconds while nothing else wants the CPU, so back-to-back requests skip the doorbell wake-up (0: never; at most 10000)",
        },
        doorbell_rate: u32 {
            default: 20,
            description: "Doorbells per millisecond to each node that users may cause without queuing anything new (KICK, SEND to a full ring), after a burst of 64; a thread over it waits (0: no limit)",
        },
    },
}

/// The largest `poll_us` accepted.
const MAX_POLL_US: u32 = 10_000;
