// SPDX-License-Identifier: GPL-2.0
//! The client side of the fabric seam (`unimem_fabric.rs`), once for every module that uses
//! the GAS window: attach, window access that revocation can end, doorbells, the revocation
//! hook.
//!
//! The fabric device can be unbound or unplugged while clients are loaded. A client touches
//! the window only through an [`Access`]: an RCU read-side section in which the attachment was
//! seen live. Revocation first runs the client's hook (which ends what the client does, and
//! calls [`Gas::revoke`]), then marks the attachment dead and waits for every such section.
//!
//! Declared as `fabric_client` by `client.rs`, next to `unimem_fabric.rs` as `fabric_api` and
//! `wire.rs`: names `crate::fabric_api` and `crate::wire`, which `client.rs` provides. Every
//! client uses part of this view (the mailbox its rings and doorbells, the borrowers the lent
//! ranges).
#![allow(dead_code)]

use crate::fabric_api::{self, DoorbellHandler, FabricInfo};
use crate::wire::gas::{node_state, MAX_NODES, NODE_STATE_END, NODE_STATE_OFFSET};
use core::{
    marker::PhantomData,
    ptr::NonNull,
    sync::atomic::{AtomicBool, AtomicU64, Ordering},
};
use kernel::{
    ffi::c_void,
    prelude::*,
    sync::{rcu, Arc},
};

/// An attachment to the fabric device.
///
/// # Invariants
///
/// `handle` is a live handle from `unimem_fabric_attach`, detached only in `Drop`; `info` is
/// what that call filled in, so `info.gas_virt` maps `info.gas_size` bytes until then.
pub(crate) struct Gas {
    handle: NonNull<c_void>,
    info: FabricInfo,
    /// Set by the client's own revocation ([`Gas::revoke`]).
    revoked: AtomicBool,
}

// SAFETY: the handle may be used from any thread (the seam's functions are thread-safe) and
// the window pointer is only dereferenced under an `Access`.
unsafe impl Send for Gas {}
// SAFETY: see `Send`; `revoked` is atomic.
unsafe impl Sync for Gas {}

impl Gas {
    /// Attaches to the bound fabric device.
    pub(crate) fn attach() -> Result<Arc<Self>> {
        // SAFETY: all-zero is a valid `FabricInfo` (integers and a null pointer).
        let mut info: FabricInfo = unsafe { core::mem::zeroed() };
        let mut handle = core::ptr::null_mut();
        // SAFETY: both pointers are writable.
        let ret = unsafe { fabric_api::unimem_fabric_attach(&mut info, &mut handle) };
        if ret != 0 {
            pr_err!(
                "no fabric device: is unimem_eusrvmem loaded and bound? ({})\n",
                ret
            );
            return Err(Error::from_errno(ret));
        }
        let handle = NonNull::new(handle).ok_or(ENODEV)?;
        // On allocation failure the value is dropped, which detaches.
        Ok(Arc::new(
            Self {
                handle,
                info,
                revoked: AtomicBool::new(false),
            },
            GFP_KERNEL,
        )?)
    }

    pub(crate) fn info(&self) -> &FabricInfo {
        &self.info
    }

    /// The window, unless revoked; revocation waits until the returned section ends. Must not
    /// sleep while held.
    pub(crate) fn access(&self) -> Option<Access<'_>> {
        let rcu = rcu::read_lock();
        // SAFETY: `handle` is live (type invariant).
        if self.is_revoked() || unsafe { fabric_api::unimem_fabric_live(self.handle.as_ptr()) } == 0
        {
            return None;
        }
        Some(Access {
            _rcu: rcu,
            gas: self,
            _not_send: PhantomData,
        })
    }

    /// Stops this client's use of the window: no [`Access`] starts after this, and it returns
    /// once the running ones have ended. For the revocation hook; may sleep.
    pub(crate) fn revoke(&self) {
        self.revoked.store(true, Ordering::Release);
        rcu::synchronize_rcu();
    }

    pub(crate) fn is_revoked(&self) -> bool {
        self.revoked.load(Ordering::Acquire)
    }

    /// Window offset and length of chunks `first..first + chunks` that `lender` lends (the KRAM
    /// protocol's numbering), if they lie in its partition of this fabric.
    pub(crate) fn lent_range(&self, lender: u32, first: u32, chunks: u32) -> Option<(u64, u64)> {
        let i = &self.info;
        let (offset, len) =
            crate::wire::kram::lent_range(i.ctl_size, i.partition_size, lender, first, chunks)?;
        (lender < i.node_count && offset.checked_add(len)? <= i.gas_size).then_some((offset, len))
    }

    /// Zeroes `len` bytes at window offset `offset` (memory given back to its lender, so that
    /// its next borrower cannot read ours), a piece at a time so that no window access lasts
    /// long. `ENODEV` if the device went away before the end, `EINVAL` outside the window.
    /// Any context (under a spinlock the caller keeps `len` small); for large ranges in process
    /// context, [`Gas::wipe_long`].
    pub(crate) fn wipe(&self, offset: u64, len: u64) -> Result {
        self.wipe_pieces(offset, len, false)
    }

    /// [`Gas::wipe`] of a range that may be large (a pool, a hot-added range, a lease's
    /// chunks): gives up the CPU between pieces if the scheduler wants it. Process context, no
    /// spinlock held.
    pub(crate) fn wipe_long(&self, offset: u64, len: u64) -> Result {
        self.wipe_pieces(offset, len, true)
    }

    fn wipe_pieces(&self, offset: u64, len: u64, resched: bool) -> Result {
        const PIECE: u64 = 4 << 20;
        let mut done = 0;
        while done < len {
            let n = PIECE.min(len - done);
            let w = self.access().ok_or(ENODEV)?;
            let p = w.ptr(offset + done, n).ok_or(EINVAL)?;
            // SAFETY: `p` has `n` bytes of the window (`ptr`), usable while `w` lives; the
            // caller no longer uses them.
            unsafe { core::ptr::write_bytes(p, 0, n as usize) };
            drop(w);
            done += n;
            if resched {
                kernel::task::cond_resched();
            }
        }
        Ok(())
    }

    /// Keeps user space from mapping window bytes `[offset, offset + len)` (`reserve`) or lets
    /// it again; reserving zaps the mappings it has. May sleep.
    pub(crate) fn reserve(&self, offset: u64, len: u64, reserve: bool) -> Result {
        // SAFETY: `handle` is live (type invariant).
        kernel::error::to_result(unsafe {
            fabric_api::unimem_fabric_reserve(
                self.handle.as_ptr(),
                offset,
                len,
                kernel::ffi::c_int::from(reserve),
            )
        })
    }

    /// Raises doorbell `vector` on node `node`. Any context.
    pub(crate) fn ring(&self, node: u32, vector: u32) -> Result {
        // SAFETY: `handle` is live (type invariant).
        kernel::error::to_result(unsafe {
            fabric_api::unimem_fabric_ring(self.handle.as_ptr(), node, vector)
        })
    }

    /// Installs (`Some`) or removes (`None`, waiting for running calls) the doorbell handler of
    /// `vector`.
    ///
    /// # Safety
    ///
    /// `handler`, if any, must be callable in hard-IRQ context with `ctx` until it is removed.
    pub(crate) unsafe fn set_doorbell(
        &self,
        vector: u32,
        handler: Option<DoorbellHandler>,
        ctx: *mut c_void,
    ) -> Result {
        // SAFETY: `handle` is live (type invariant); the caller vouches for `handler` and `ctx`.
        kernel::error::to_result(unsafe {
            fabric_api::unimem_fabric_set_handler(self.handle.as_ptr(), vector, handler, ctx)
        })
    }

    /// Calls `ctx.revoke()` when the device goes; the hook stays until the returned value drops.
    pub(crate) fn on_revoke<T: OnRevoke>(self: &Arc<Self>, ctx: Arc<T>) -> Result<RevokeHook<T>> {
        let raw = Arc::as_ptr(&ctx).cast_mut().cast::<c_void>();
        // SAFETY: `handle` is live; `revoke_hook::<T>` may sleep and `ctx` stays alive in the
        // returned value until `Drop` removes the hook (which waits for a running call).
        kernel::error::to_result(unsafe {
            fabric_api::unimem_fabric_on_revoke(self.handle.as_ptr(), Some(revoke_hook::<T>), raw)
        })?;
        Ok(RevokeHook {
            gas: self.clone(),
            _ctx: ctx,
        })
    }
}

impl Drop for Gas {
    fn drop(&mut self) {
        // SAFETY: `handle` is live and given up here (type invariant).
        unsafe { fabric_api::unimem_fabric_detach(self.handle.as_ptr()) };
    }
}

/// The window while the fabric device is bound: an RCU read-side section.
pub(crate) struct Access<'a> {
    _rcu: rcu::Guard,
    gas: &'a Gas,
    _not_send: PhantomData<*mut u8>,
}

impl Access<'_> {
    /// The window's first byte, for offsets the caller has checked against `info().gas_size`;
    /// for use while `self` lives.
    pub(crate) fn base(&self) -> *mut u8 {
        self.gas.info.gas_virt
    }

    /// The kernel address of `len` bytes at `offset` of the window, if they lie inside it;
    /// for use while `self` lives.
    #[inline]
    pub(crate) fn ptr(&self, offset: u64, len: u64) -> Option<*mut u8> {
        let info = &self.gas.info;
        let end = offset.checked_add(len)?;
        // SAFETY: `[offset, end)` lies inside the mapped window (checked; `Gas` invariant).
        (end <= info.gas_size).then(|| unsafe { info.gas_virt.add(offset as usize) })
    }

    /// The 8-byte aligned word at window offset `offset`, if it lies inside the window. Other
    /// nodes access shared words with aligned loads and stores too.
    #[inline]
    pub(crate) fn word(&self, offset: u64) -> Option<&AtomicU64> {
        if offset % 8 != 0 {
            return None;
        }
        let p = self.ptr(offset, 8)?;
        // SAFETY: 8 bytes inside the window (`ptr`), 8-byte aligned (the window is mapped
        // page-aligned and `offset` is a multiple of 8), usable while `self` lives, which the
        // returned borrow cannot outlive.
        Some(unsafe { AtomicU64::from_ptr(p.cast()) })
    }

    /// Window offset of byte `offset` of node `node`'s partition, if both are in range.
    #[inline]
    fn part_offset(&self, node: u32, offset: u64) -> Option<u64> {
        let info = &self.gas.info;
        (node < info.node_count && offset < info.partition_size)
            .then(|| info.ctl_size + u64::from(node) * info.partition_size + offset)
    }

    /// The word at byte `offset` of node `node`'s partition (see [`Access::word`]).
    #[inline]
    pub(crate) fn part_word(&self, node: u32, offset: u64) -> Option<&AtomicU64> {
        self.word(self.part_offset(node, offset)?)
    }

    /// Copies `out.len()` bytes from byte `offset` of node `node`'s partition; false if they do
    /// not lie in the window. Other nodes may write them meanwhile: volatile byte reads, for
    /// the caller to decode as untrusted.
    pub(crate) fn read_part(&self, node: u32, offset: u64, out: &mut [u8]) -> bool {
        let Some(src) = self
            .part_offset(node, offset)
            .and_then(|at| self.ptr(at, out.len() as u64))
        else {
            return false;
        };
        for (i, b) in out.iter_mut().enumerate() {
            // SAFETY: `i < out.len()`: inside the range `ptr` checked, usable while `self`
            // lives.
            *b = unsafe { src.add(i).read_volatile() };
        }
        true
    }

    /// Whether the fabric marks `node`'s memory lost (its partition poisoned): nothing in it is
    /// to be read as data. False on fabrics without node states.
    pub(crate) fn node_lost(&self, node: u32) -> bool {
        if self.gas.info.ctl_size < NODE_STATE_END || node >= MAX_NODES {
            return false;
        }
        self.word(NODE_STATE_OFFSET + u64::from(node) * 8)
            .is_some_and(|w| {
                node_state::state(u64::from_le(w.load(Ordering::Relaxed))) == node_state::LOST
            })
    }
}

/// What a client does when the fabric device goes: end its own use of the window (in the end
/// calling [`Gas::revoke`]). Runs in process context and may sleep, with the window mapped.
pub(crate) trait OnRevoke: Send + Sync {
    fn revoke(&self);
}

/// # Safety
///
/// Called by unimem_eusrvmem with the `ctx` registered by [`Gas::on_revoke`], alive until the
/// hook is removed.
unsafe extern "C" fn revoke_hook<T: OnRevoke>(ctx: *mut c_void) {
    // SAFETY: see above.
    unsafe { &*ctx.cast::<T>() }.revoke();
}

/// A registered revocation hook; removing it (on drop) waits for a running call.
pub(crate) struct RevokeHook<T: OnRevoke> {
    gas: Arc<Gas>,
    _ctx: Arc<T>,
}

impl<T: OnRevoke> Drop for RevokeHook<T> {
    fn drop(&mut self) {
        // SAFETY: `handle` is live (held by `gas`); removal waits for a running hook, so `_ctx`
        // may go after this.
        unsafe {
            fabric_api::unimem_fabric_on_revoke(
                self.gas.handle.as_ptr(),
                None,
                core::ptr::null_mut(),
            )
        };
    }
}
