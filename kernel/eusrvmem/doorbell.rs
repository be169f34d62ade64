// SPDX-License-Identifier: GPL-2.0
//! Doorbell interrupts: one MSI-X vector per doorbell, each counted and optionally forwarded to
//! a client module's handler (see `unimem_fabric_set_handler`).

use crate::fabric_api::DoorbellHandler;
use kernel::{
    bindings,
    ffi::{c_int, c_void},
    pci,
    prelude::*,
};
use core::sync::atomic::{AtomicPtr, AtomicU32, AtomicU64, Ordering};

/// A client handler and its context, published to the IRQ path through one pointer so the pair
/// can never be seen half-updated.
struct HandlerSlot {
    func: DoorbellHandler,
    ctx: *mut c_void,
}

/// Per-vector state, shared with the IRQ handler (its `dev_id`).
pub(crate) struct Doorbell {
    vector: u32,
    irq: AtomicU32,
    count: AtomicU64,
    handler: AtomicPtr<HandlerSlot>,
}

impl Doorbell {
    pub(crate) fn new(vector: u32) -> Self {
        Self {
            vector,
            irq: AtomicU32::new(0),
            count: AtomicU64::new(0),
            handler: AtomicPtr::new(core::ptr::null_mut()),
        }
    }

    pub(crate) fn count(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }

    /// Installs (`Some`) or removes (`None`) the client handler of this vector.
    pub(crate) fn set_handler(&self, func: Option<DoorbellHandler>, ctx: *mut c_void) -> Result {
        match func {
            Some(func) => {
                let slot = KBox::into_raw(KBox::new(HandlerSlot { func, ctx }, GFP_KERNEL)?);
                if self
                    .handler
                    .compare_exchange(core::ptr::null_mut(), slot, Ordering::AcqRel, Ordering::Acquire)
                    .is_err()
                {
                    // SAFETY: `slot` was never published; we still own it.
                    drop(unsafe { KBox::from_raw(slot) });
                    return Err(EBUSY);
                }
            }
            None => {
                let old = self.handler.swap(core::ptr::null_mut(), Ordering::AcqRel);
                let irq = self.irq.load(Ordering::Relaxed);
                if irq != 0 {
                    // SAFETY: `irq` is requested for this vector; waiting for running handlers
                    // guarantees none still uses `old` after this returns.
                    unsafe { bindings::synchronize_irq(irq) };
                }
                if !old.is_null() {
                    // SAFETY: `old` came from `KBox::into_raw` above and is unpublished now.
                    drop(unsafe { KBox::from_raw(old) });
                }
            }
        }
        Ok(())
    }
}

impl Drop for Doorbell {
    fn drop(&mut self) {
        let old = *self.handler.get_mut();
        if !old.is_null() {
            // SAFETY: no IRQ handler runs any more (the IRQs are freed before the fabric is
            // dropped) and `old` came from `KBox::into_raw`.
            drop(unsafe { KBox::from_raw(old) });
        }
    }
}

/// # Safety
///
/// Called by the IRQ core with the `dev_id` passed to `request_threaded_irq`: a live `Doorbell`.
unsafe extern "C" fn doorbell_irq(_irq: c_int, dev_id: *mut c_void) -> bindings::irqreturn_t {
    // SAFETY: `dev_id` is the `Doorbell` this IRQ was requested with; it outlives the request
    // (`DoorbellIrqs` holds the fabric that owns it and frees the IRQ first).
    let db = unsafe { &*dev_id.cast::<Doorbell>() };
    db.count.fetch_add(1, Ordering::Relaxed);
    let slot = db.handler.load(Ordering::Acquire);
    if !slot.is_null() {
        // SAFETY: a published slot stays valid until `set_handler(None)` has synchronized with
        // this handler.
        let slot = unsafe { &*slot };
        // SAFETY: the client promised (`unimem_fabric_set_handler`) that `func` is callable in
        // hard-IRQ context with `ctx`.
        unsafe { (slot.func)(slot.ctx, db.vector) };
    }
    bindings::irqreturn_t(bindings::irqreturn::IRQ_HANDLED.0)
}

/// The device-bound part: MSI-X vectors and the IRQs requested on them.
///
/// # Invariants
///
/// Every `(irq, doorbell)` in `requested` is a live `request_irq` with `dev_id == doorbell`.
pub(crate) struct DoorbellIrqs<'bound> {
    requested: KVec<(u32, usize)>,
    // Dropped after `Drop::drop` has freed the IRQs, which is what `pci_free_irq_vectors` needs.
    _vectors: pci::IrqVectorRegistration<'bound>,
}

impl<'bound> DoorbellIrqs<'bound> {
    /// Requests one IRQ per vector in `vectors`, each delivering to `doorbells[i]`.
    pub(crate) fn request(
        vectors: pci::IrqVectorRegistration<'bound>,
        doorbells: &[Doorbell],
    ) -> Result<Self> {
        // Capacity up front: a failed push after a successful request_irq would leak the IRQ.
        let requested = KVec::with_capacity(doorbells.len(), GFP_KERNEL)?;
        let mut this = Self { requested, _vectors: vectors };
        for (i, db) in doorbells.iter().enumerate() {
            let irq = kernel::irq::IrqRequest::from(this._vectors.index(i)?).irq();
            let dev_id = core::ptr::from_ref(db).cast_mut().cast::<c_void>();
            // SAFETY: `irq` belongs to our device; `dev_id` points at a `Doorbell` that outlives
            // the request (see `doorbell_irq`); the name is a static C string.
            kernel::error::to_result(unsafe {
                bindings::request_threaded_irq(
                    irq,
                    Some(doorbell_irq),
                    None,
                    0,
                    c"unimem_doorbell".as_char_ptr(),
                    dev_id,
                )
            })?;
            db.irq.store(irq, Ordering::Relaxed);
            this.requested.push((irq, dev_id as usize), GFP_KERNEL)?;
        }
        Ok(this)
    }
}

impl Drop for DoorbellIrqs<'_> {
    fn drop(&mut self) {
        for &(irq, dev_id) in self.requested.iter() {
            // SAFETY: requested in `request` with exactly this `dev_id` (type invariant).
            unsafe { bindings::free_irq(irq, dev_id as *mut c_void) };
            // SAFETY: `dev_id` points at the live `Doorbell` the IRQ was requested for.
            unsafe { (*(dev_id as *const Doorbell)).irq.store(0, Ordering::Relaxed) };
        }
    }
}
