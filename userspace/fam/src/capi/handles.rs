//! Instance and context handles (`c_fam *`): boxed [`Handle`]s that share the instance's
//! state ([`Shared`]: its client once initialised, and its mappings). A context has its own
//! ordering stream, which is empty since every operation completes before it returns.

use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use crate::client::{Client, Mapping};
use crate::{FamError, Result};

const INSTANCE_MAGIC: u64 = 0x4641_4d5f_494e_5354; // "FAM_INST"
const CONTEXT_MAGIC: u64 = 0x4641_4d5f_4354_5854; // "FAM_CTXT"

/// What an instance and its contexts share.
#[derive(Default)]
pub struct Shared {
    pub client: RwLock<Option<Arc<Client>>>,
    /// fam_map's mappings by address, for fam_unmap.
    pub maps: Mutex<HashMap<usize, Mapping>>,
}

/// A `c_fam *`.
pub struct Handle {
    magic: AtomicU64,
    pub shared: Arc<Shared>,
    /// Contexts: false once closed (every call then fails).
    open: AtomicBool,
    /// The first failure of a non-blocking call since the last quiet: OpenFAM reports those
    /// at `fam_quiet` (its own stream per handle: an instance's and each context's).
    deferred: Mutex<Option<(String, FamError)>>,
}

impl Handle {
    pub fn instance() -> Handle {
        Handle {
            magic: AtomicU64::new(INSTANCE_MAGIC),
            shared: Arc::new(Shared::default()),
            open: AtomicBool::new(true),
            deferred: Mutex::new(None),
        }
    }

    pub fn context(shared: Arc<Shared>) -> Handle {
        Handle {
            magic: AtomicU64::new(CONTEXT_MAGIC),
            shared,
            open: AtomicBool::new(true),
            deferred: Mutex::new(None),
        }
    }

    pub fn is_context(&self) -> bool {
        self.magic.load(Ordering::Relaxed) == CONTEXT_MAGIC
    }

    pub fn close(&self) {
        self.open.store(false, Ordering::Release);
    }

    /// Marks it freed: a stale pointer used later fails rather than acting (best effort).
    pub fn forget(&self) {
        self.magic.store(0, Ordering::Relaxed);
    }

    /// Keeps the failure of non-blocking call `what` for the next quiet (the first one only:
    /// quiet reports one error, as OpenFAM's does).
    pub fn defer(&self, what: &str, e: FamError) {
        let mut d = self.deferred.lock().unwrap_or_else(|p| p.into_inner());
        if d.is_none() {
            *d = Some((what.to_string(), e));
        }
    }

    /// The failure kept by [`defer`](Self::defer) since the last call, if any.
    pub fn take_deferred(&self) -> Option<(String, FamError)> {
        self.deferred
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
    }

    /// The instance's client: it must be initialised (and a context open).
    pub fn client(&self) -> Result<Arc<Client>> {
        if self.is_context() && !self.open.load(Ordering::Acquire) {
            return Err(FamError::InvalidOp("the context is closed".into()));
        }
        self.shared
            .client
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
            .ok_or_else(|| FamError::InvalidOp("fam_initialize has not been called".into()))
    }

    /// Fails for a context (initialize, finalize, context open/close need the instance).
    pub fn instance_only(&self, what: &str) -> Result<()> {
        if self.is_context() {
            return Err(FamError::NoPerm(format!("{what} on a context")));
        }
        Ok(())
    }
}

/// The handle at `p`.
pub unsafe fn handle<'a>(p: *mut c_void) -> Result<&'a Handle> {
    if p.is_null() {
        return Err(FamError::NullPtr("fam handle is NULL".into()));
    }
    // SAFETY: a handle of c_fam_create / c_fam_context_open not yet deleted (the contract);
    // the magic catches some misuse.
    let h = unsafe { &*(p as *const Handle) };
    match h.magic.load(Ordering::Relaxed) {
        INSTANCE_MAGIC | CONTEXT_MAGIC => Ok(h),
        _ => Err(FamError::Invalid(
            "not a fam handle (or one already deleted)".into(),
        )),
    }
}

/// The client of the handle at `p`.
pub unsafe fn client(p: *mut c_void) -> Result<Arc<Client>> {
    // SAFETY: the caller's handle (contract).
    unsafe { handle(p) }?.client()
}
