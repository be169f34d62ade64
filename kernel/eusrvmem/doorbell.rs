// SPDX-License-Identifier: GPL-2.0
//! Doorbell interrupts: one MSI-X vector (PCI) or interrupt line (device tree) per doorbell,
//! each counted and optionally forwarded to a client module's handler (see
//! `unimem_fabric_set_handler`).

use crate::{fabric::Fabric, fabric_api::DoorbellHandler};
use core::sync::atomic::{AtomicPtr, AtomicU64, Ordering};
use kernel::{
    ffi::c_void,
    irq::{self, IrqRequest, IrqReturn, Registration},
    pci,
    prelude::*,
    sync::{rcu, Arc},
};

/// A client handler and its context, published to the IRQ path through one pointer so the pair
/// can never be seen half-updated.
struct HandlerSlot {
    func: DoorbellHandler,
    ctx: *mut c_void,
}

/// Per-vector state, shared by the IRQ handler, sysfs and the seam.
///
/// # Invariants
///
/// `handler` is null or a pointer from `KBox::into_raw`, read by the IRQ path only inside an RCU
/// read-side critical section; a slot taken out of it is freed only after a grace period.
pub(crate) struct Doorbell {
    vector: u32,
    count: AtomicU64,
    handler: AtomicPtr<HandlerSlot>,
}

impl Doorbell {
    pub(crate) fn new(vector: u32) -> Self {
        Self {
            vector,
            count: AtomicU64::new(0),
            handler: AtomicPtr::new(core::ptr::null_mut()),
        }
    }

    pub(crate) fn count(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }

    /// Installs (`Some`) or removes (`None`) the client handler of this vector. Removing waits
    /// until no IRQ handler still calls the old one.
    pub(crate) fn set_handler(&self, func: Option<DoorbellHandler>, ctx: *mut c_void) -> Result {
        match func {
            Some(func) => {
                let slot = KBox::into_raw(KBox::new(HandlerSlot { func, ctx }, GFP_KERNEL)?);
                if self
                    .handler
                    .compare_exchange(
                        core::ptr::null_mut(),
                        slot,
                        Ordering::AcqRel,
                        Ordering::Acquire,
                    )
                    .is_err()
                {
                    // SAFETY: `slot` was never published; we still own it.
                    drop(unsafe { KBox::from_raw(slot) });
                    return Err(EBUSY);
                }
            }
            None => {
                let old = self.handler.swap(core::ptr::null_mut(), Ordering::AcqRel);
                if !old.is_null() {
                    // The IRQ path reads the slot under `rcu::read_lock`: after a grace period
                    // no handler still uses `old`.
                    rcu::synchronize_rcu();
                    // SAFETY: `old` came from `KBox::into_raw` in `Some` above, is unpublished,
                    // and no reader is left (type invariant, grace period above).
                    drop(unsafe { KBox::from_raw(old) });
                }
            }
        }
        Ok(())
    }

    /// The doorbell rang: count it and call the client handler, if any. Hard-IRQ context.
    fn ring(&self) {
        self.count.fetch_add(1, Ordering::Relaxed);
        let _guard = rcu::read_lock();
        let slot = self.handler.load(Ordering::Acquire);
        if !slot.is_null() {
            // SAFETY: a published slot is freed only after a grace period that begins after it
            // was unpublished (type invariant), and we are inside a read-side critical section.
            let slot = unsafe { &*slot };
            // SAFETY: the client promised (`unimem_fabric_set_handler`) that `func` is callable
            // in hard-IRQ context with `ctx` until it is removed.
            unsafe { (slot.func)(slot.ctx, self.vector) };
        }
    }
}

impl Drop for Doorbell {
    fn drop(&mut self) {
        let old = *self.handler.get_mut();
        if !old.is_null() {
            // SAFETY: `&mut self`: no IRQ handler can use this doorbell any more (each holds a
            // reference to the fabric that owns it), and `old` came from `KBox::into_raw`.
            drop(unsafe { KBox::from_raw(old) });
        }
    }
}

/// The IRQ handler of one doorbell vector.
struct DoorbellIrq {
    fabric: Arc<Fabric>,
    index: usize,
}

impl irq::Handler for DoorbellIrq {
    fn handle(&self) -> IrqReturn {
        if let Some(db) = self.fabric.doorbells.get(self.index) {
            db.ring();
        }
        IrqReturn::Handled
    }
}

/// The device-bound part: one IRQ registration per doorbell, on the MSI-X vectors of a PCI
/// function or on the interrupt lines of a device-tree node.
///
/// # Invariants
///
/// `_vectors`, when set, is neither moved out of its box nor dropped while `irqs` holds a
/// registration: the registrations borrow it for `'bound` (see [`DoorbellIrqs::request_msix`]).
pub(crate) struct DoorbellIrqs<'bound> {
    // Declared first so that it drops first: every IRQ is freed before its vector.
    irqs: KVec<Pin<KBox<Registration<'bound, DoorbellIrq>>>>,
    /// The MSI-X vectors of a PCI function; `None` for a platform device, whose interrupt lines
    /// need no allocation.
    _vectors: Option<KBox<pci::IrqVectorRegistration<'bound>>>,
}

impl<'bound> DoorbellIrqs<'bound> {
    /// Registers one IRQ handler per doorbell of `fabric`, on the MSI-X vectors of the same
    /// index.
    pub(crate) fn request_msix(
        vectors: pci::IrqVectorRegistration<'bound>,
        fabric: &Arc<Fabric>,
    ) -> Result<Self> {
        let count = fabric.doorbells.len();
        let vectors = KBox::new(vectors, GFP_KERNEL)?;
        let registration = core::ptr::from_ref(&*vectors);
        let mut this = Self {
            irqs: KVec::with_capacity(count, GFP_KERNEL)?,
            _vectors: Some(vectors),
        };
        // SAFETY: the registration lives in its own heap allocation (moving the box into
        // `this._vectors` moved the pointer, not the allocation), which stays where it is until
        // `this._vectors` is dropped; that happens after `this.irqs` (field order; also on the
        // error paths below, which drop `this`), and `DoorbellIrqs` hands neither field out
        // (type invariant). So every IRQ registration made from it ends while it is alive.
        let vectors: &'bound pci::IrqVectorRegistration<'bound> = unsafe { &*registration };
        for index in 0..count {
            this.register(index, IrqRequest::from(vectors.index(index)?), fabric)?;
        }
        Ok(this)
    }

    /// Registers one IRQ handler per doorbell of `fabric`, on the interrupt line of the same
    /// index (a platform device's interrupts, in device-tree order).
    pub(crate) fn request_lines(
        lines: KVec<IrqRequest<'bound>>,
        fabric: &Arc<Fabric>,
    ) -> Result<Self> {
        if lines.len() != fabric.doorbells.len() {
            return Err(EINVAL);
        }
        let mut this = Self {
            irqs: KVec::with_capacity(lines.len(), GFP_KERNEL)?,
            _vectors: None,
        };
        for (index, request) in lines.into_iter().enumerate() {
            this.register(index, request, fabric)?;
        }
        Ok(this)
    }

    /// Registers the handler of doorbell `index` on `request`.
    fn register(
        &mut self,
        index: usize,
        request: IrqRequest<'bound>,
        fabric: &Arc<Fabric>,
    ) -> Result {
        let handler = Ok::<_, Error>(DoorbellIrq {
            fabric: fabric.clone(),
            index,
        });
        // SAFETY: the registration is kept in `self.irqs` and dropped with it, never leaked.
        let reg = unsafe {
            Registration::new(
                request,
                irq::Flags::TRIGGER_NONE,
                c"unimem_doorbell",
                handler,
            )
        };
        self.irqs
            .push(KBox::pin_init(reg, GFP_KERNEL)?, GFP_KERNEL)?;
        Ok(())
    }
}
