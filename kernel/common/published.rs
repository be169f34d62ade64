// SPDX-License-Identifier: GPL-2.0
//! The one object of a module that code without a reference to it finds: the C entry points of
//! a seam, a misc device's `open`, a sysfs `show`. A [`Slot`] is a static that holds an `Arc`
//! while a [`Published`] guard lives; readers take a counted reference ([`Slot::get`]) or borrow
//! it without one ([`Slot::with`]) inside an RCU read-side section, and dropping the guard empties
//! the slot and waits for a grace period before it lets its reference go, so no reader is left
//! with a dangling pointer whatever the order of teardown.
//!
//! Included with `#[path]` by `unimem_eusrvmem` (the bound fabric), `unimem_mailbox` (its state)
//! and `unimem_gsas` (its service); the includer provides nothing.

use core::{
    marker::PhantomData,
    sync::atomic::{AtomicPtr, Ordering},
};
use kernel::{
    prelude::*,
    sync::{rcu, Arc, ArcBorrow},
};

/// A static slot for one `Arc<T>`.
pub(crate) struct Slot<T>(AtomicPtr<T>);

impl<T: Send + Sync> Slot<T> {
    pub(crate) const fn new() -> Self {
        Self(AtomicPtr::new(core::ptr::null_mut()))
    }

    /// Puts `value` in the slot until the returned guard drops; `EBUSY` if the slot is taken.
    pub(crate) fn publish(&'static self, value: Arc<T>) -> Result<Published<T>> {
        let raw = Arc::into_raw(value);
        if self
            .0
            .compare_exchange(
                core::ptr::null_mut(),
                raw.cast_mut(),
                Ordering::AcqRel,
                Ordering::Acquire,
            )
            .is_err()
        {
            // SAFETY: `raw` came from `Arc::into_raw` just above and was not published.
            drop(unsafe { Arc::from_raw(raw) });
            return Err(EBUSY);
        }
        Ok(Published {
            slot: self,
            _owns: PhantomData,
        })
    }

    /// Runs `f` on the published value without taking a reference; `f` must not sleep.
    // Used by eusrvmem (its sysfs `show`); the others take references.
    #[allow(dead_code)]
    pub(crate) fn with<R>(&self, f: impl FnOnce(&T) -> R) -> Option<R> {
        let _guard = rcu::read_lock();
        let p = self.0.load(Ordering::Acquire);
        // SAFETY: a non-null pointer in the slot is an `Arc` reference owned by the `Published`
        // guard, whose drop empties the slot and waits for an RCU grace period before releasing
        // it; we are inside a read-side section.
        (!p.is_null()).then(|| f(unsafe { &*p }))
    }

    /// A counted reference to the published value (for callers that may sleep).
    pub(crate) fn get(&self) -> Option<Arc<T>> {
        let _guard = rcu::read_lock();
        let p = self.0.load(Ordering::Acquire);
        // SAFETY: as in `with`; the borrow becomes a new reference before the section ends.
        (!p.is_null()).then(|| unsafe { ArcBorrow::from_raw(p) }.into())
    }
}

/// Keeps a value in its [`Slot`] while alive.
pub(crate) struct Published<T: Send + Sync + 'static> {
    slot: &'static Slot<T>,
    /// The guard owns the reference the slot holds.
    _owns: PhantomData<Arc<T>>,
}

impl<T: Send + Sync + 'static> Drop for Published<T> {
    fn drop(&mut self) {
        let p = self.slot.0.swap(core::ptr::null_mut(), Ordering::AcqRel);
        rcu::synchronize_rcu();
        if !p.is_null() {
            // SAFETY: `p` came from `Arc::into_raw` in `publish`; the slot is empty and, after the
            // grace period, no reader borrows it.
            drop(unsafe { Arc::from_raw(p) });
        }
    }
}
