// SPDX-License-Identifier: GPL-2.0
//! Mappings of other nodes' GSAS pages (`mailbox::MMAP_REMOTE`; docs/GSAS.md, "Mapping another
//! node's pages"). The home's service approves one with a MAP request: it writes the approval
//! into the issuing interface's approval word (`gsas::remote_map`), in this node's partition,
//! which threads map read-only, so only a kernel wrote it. `mmap` takes the approval (one
//! mapping each) and maps the home's pages. When the home frees them or narrows their grant it
//! sends a ZAP: every mapping of the range goes, and every approval of it not used yet, before
//! this node acknowledges.

use crate::{
    gsas::{
        remote_map::{approval_slot, Approval, Zap, ZAP},
        PAGE_SIZE, USER_INTERFACES,
    },
    mailbox::{mmap_remote, service},
    state::State,
};
use core::sync::atomic::Ordering;
use kernel::{
    bindings,
    ffi::c_void,
    fs::File,
    mm::virt::{flags as vm, VmaNew},
    prelude::*,
    sync::Arc,
};

/// Maps `len` bytes at partition offset `offset` of node `home` through interface `id`'s file,
/// as the approval that `home` wrote for `id` allows (`EACCES` without one, or for more than it
/// approved, or writable against a read-only approval); the approval is used up. Shared, never
/// executable; a read-only mapping cannot become writable.
pub(crate) fn mmap(
    state: &State,
    file: &File,
    id: u32,
    vma: &VmaNew,
    home: u32,
    offset: u64,
    len: usize,
) -> Result {
    let info = state.window.gas().info();
    if home == state.window.node || home >= state.window.nodes {
        // This node's pages: `MMAP_GSAS`.
        return Err(EINVAL);
    }
    let end = offset.checked_add(len as u64).ok_or(EINVAL)?;
    if end > info.partition_size {
        return Err(EINVAL);
    }
    if vma.flags() & vm::SHARED == 0 && vma.flags() & vm::MAYWRITE != 0 {
        // A private copy would never be the memory the home's service changes.
        return Err(EINVAL);
    }
    let write = vma.writable();
    if !write {
        vma.try_clear_maywrite()?;
    }
    let phys = info.gas_phys + info.ctl_size + u64::from(home) * info.partition_size + offset;
    vma.set_io();
    vma.set_dontexpand();
    vma.set_dontdump();
    state.maps.map_remote(
        file.as_ptr(),
        || take_approval(state, id, home, offset, len as u64, write),
        || {
            // SAFETY: `[phys, phys + len)` lies inside node `home`'s partition of the window
            // (checked above), pages its service approved for this interface (just taken);
            // the device is bound (`map_remote`; revocation zaps this mapping), the home's ZAP
            // zaps it (under the lock held here), and `VM_IO | VM_DONTEXPAND` keep the core
            // from treating it as ordinary pages or growing it.
            kernel::error::to_result(unsafe {
                bindings::remap_pfn_range(
                    vma.as_ptr(),
                    vma.start(),
                    (phys >> bindings::PAGE_SHIFT) as usize,
                    len,
                    (*vma.as_ptr()).vm_page_prot,
                )
            })
        },
    )
}

/// Takes the approval `home` wrote for interface `id` if it allows the mapping (`EACCES`
/// otherwise, and it stays). Under the maps lock.
fn take_approval(state: &State, id: u32, home: u32, offset: u64, len: u64, write: bool) -> Result {
    let w = state.window.gas().access().ok_or(ENODEV)?;
    let word = state
        .window
        .word64(&w, state.window.node, approval_slot(id, home));
    let approved = Approval::decode(u64::from_le(word.load(Ordering::Acquire)));
    if !approved.is_some_and(|a| a.allows(offset, len, write)) {
        return Err(EACCES);
    }
    // Used up: one approval, one mapping. Only the home writes a new one, for a new MAP.
    word.store(0, Ordering::Release);
    Ok(())
}

impl State {
    /// A ZAP from node `home`: its pages in the range are freed or their grant narrowed. Every
    /// mapping of them goes, and every approval of them not taken yet; then the home is told.
    fn zap_remote(&self, home: u32, word: u64) {
        let zap = match Zap::decode(word) {
            Ok(z) if z.opcode == ZAP && home != self.window.node && home < self.window.nodes => z,
            _ => {
                if self.window.warn_peer() {
                    pr_warn!(
                        "GSAS message {:#018x} from node {} is not a ZAP: dropped (rate-limited)\n",
                        word,
                        home
                    );
                }
                return;
            }
        };
        let begin = mmap_remote(home, zap.first_page * PAGE_SIZE);
        let done = self.maps.zap_remote(begin, zap.pages * PAGE_SIZE, || {
            let Some(w) = self.window.gas().access() else {
                return;
            };
            for id in 0..USER_INTERFACES {
                let slot = self
                    .window
                    .word64(&w, self.window.node, approval_slot(id, home));
                let named = Approval::decode(u64::from_le(slot.load(Ordering::Acquire)))
                    .is_some_and(|a| a.overlaps(zap.first_page, zap.pages));
                if named {
                    slot.store(0, Ordering::Release);
                }
            }
        });
        if done.is_ok() {
            // A full ring: the home sends the ZAP again.
            let _ = self.ksend(home, service::GSAS, zap.ack().encode());
        }
    }
}

/// # Safety
///
/// Called by the kernel-message dispatch in process context with the `ctx` given by
/// [`ZapRoute::start`]: the `State` the route holds until it is removed.
unsafe extern "C" fn on_zap(ctx: *mut c_void, from_node: u32, word: u64) {
    // SAFETY: see above.
    let state = unsafe { &*ctx.cast::<State>() };
    state.zap_remote(from_node, word);
}

/// The GSAS ZAPs routed to this node's mappings while alive.
pub(crate) struct ZapRoute(Arc<State>);

impl ZapRoute {
    pub(crate) fn start(state: Arc<State>) -> Result<Self> {
        let ctx = Arc::as_ptr(&state).cast_mut().cast::<c_void>();
        state
            .services
            .register(service::GSAS, u32::from(ZAP), Some(on_zap), ctx)?;
        Ok(Self(state))
    }
}

impl Drop for ZapRoute {
    fn drop(&mut self) {
        // Waits for a running call.
        let _ =
            self.0
                .services
                .register(service::GSAS, u32::from(ZAP), None, core::ptr::null_mut());
    }
}
