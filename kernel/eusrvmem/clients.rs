// SPDX-License-Identifier: GPL-2.0
//! Who uses the fabric besides this driver: attached client modules, each with its revocation
//! hook, and the mappings of `/dev/eusrvmem`; and the revocation that ends both when the device
//! is unbound or unplugged (the window must not be used once the device is gone).

use crate::{fabric::Fabric, fabric_api::RevokeHook, file_maps::FileMaps};
use core::sync::atomic::Ordering;
use kernel::{
    bindings, new_mutex,
    prelude::*,
    sync::{rcu, Arc, Mutex},
};

/// An attached client: a revocation hook and its context (kept as an address: the client owns
/// it and keeps it alive until it removes the hook).
struct Client {
    id: u64,
    hook: Option<(RevokeHook, usize)>,
}

struct ClientList {
    revoked: bool,
    next_id: u64,
    list: KVec<Client>,
}

/// The `address_space` of each open `/dev/eusrvmem` file, by file, so that revocation can zap
/// every user mapping of the window; and the window ranges clients reserved (by client id),
/// which user space may not map.
struct FileList {
    revoked: bool,
    list: FileMaps,
    reserved: KVec<(u64, u64, u64)>,
}

impl FileList {
    /// Removes every user mapping of window bytes `[offset, offset + len)`.
    fn zap(&self, offset: u64, len: u64) {
        self.list.zap(offset as i64, len as i64);
    }
}

#[pin_data]
pub(crate) struct Users {
    /// Also held while hooks run: attach, detach and hook changes wait for a revocation.
    #[pin]
    clients: Mutex<ClientList>,
    #[pin]
    files: Mutex<FileList>,
}

impl Users {
    pub(crate) fn new() -> impl PinInit<Self> {
        pin_init!(Self {
            clients <- new_mutex!(ClientList { revoked: false, next_id: 0, list: KVec::new() }, "unimem_eusrvmem::clients"),
            files <- new_mutex!(
                FileList { revoked: false, list: FileMaps::new(), reserved: KVec::new() },
                "unimem_eusrvmem::files"
            ),
        })
    }
}

/// What `unimem_fabric_attach` hands out: a counted reference to the fabric (which keeps the
/// window mapped) and the client's entry.
pub(crate) struct Handle {
    pub(crate) fabric: Arc<Fabric>,
    id: u64,
}

impl Fabric {
    pub(crate) fn attach(self: Arc<Self>) -> Result<KBox<Handle>> {
        let mut c = self.users.clients.lock();
        if c.revoked {
            return Err(ENODEV);
        }
        let id = c.next_id;
        c.list.push(Client { id, hook: None }, GFP_KERNEL)?;
        c.next_id += 1;
        drop(c);
        Ok(KBox::new(
            Handle {
                fabric: self.clone(),
                id,
            },
            GFP_KERNEL,
        )
        .inspect_err(|_| {
            self.users.clients.lock().list.retain(|e| e.id != id);
        })?)
    }

    pub(crate) fn detach(&self, h: &Handle) {
        self.users.clients.lock().list.retain(|e| e.id != h.id);
        self.users.files.lock().reserved.retain(|r| r.0 != h.id);
    }

    /// Reserves (or releases) window bytes `[offset, offset + len)` for client `h`: user space
    /// cannot map them, and mappings it has are zapped (memory about to become this node's
    /// RAM, for instance).
    pub(crate) fn reserve(&self, h: &Handle, offset: u64, len: u64, reserve: bool) -> Result {
        let end = offset.checked_add(len).ok_or(EINVAL)?;
        if end > self.window.size() as u64 {
            return Err(EINVAL);
        }
        let mut f = self.users.files.lock();
        if reserve {
            f.reserved.push((h.id, offset, len), GFP_KERNEL)?;
            f.zap(offset, len);
        } else {
            f.reserved.retain(|r| *r != (h.id, offset, len));
        }
        Ok(())
    }

    pub(crate) fn set_hook(&self, h: &Handle, hook: Option<(RevokeHook, usize)>) -> Result {
        let mut c = self.users.clients.lock();
        if hook.is_some() && c.revoked {
            return Err(ENODEV);
        }
        let e = c.list.iter_mut().find(|e| e.id == h.id).ok_or(ENODEV)?;
        e.hook = hook;
        Ok(())
    }

    /// Records a `/dev/eusrvmem` file being opened (`file`), whose `release` calls
    /// [`remove_file`](Self::remove_file).
    pub(crate) fn add_file(&self, file: *mut bindings::file) -> Result {
        let mut f = self.users.files.lock();
        if f.revoked {
            return Err(ENODEV);
        }
        // SAFETY: `file` is being opened, and its `release` removes it (`chardev.rs`).
        unsafe { f.list.add(file) }
    }

    pub(crate) fn remove_file(&self, file: *mut bindings::file) {
        self.users.files.lock().list.remove(file);
    }

    /// Runs `map` for window bytes `[offset, offset + len)` unless the device is gone or a
    /// client reserved some of them, so that no mapping is made after a revocation or a
    /// reservation zapped them.
    pub(crate) fn map_user(&self, offset: u64, len: u64, map: impl FnOnce() -> Result) -> Result {
        let f = self.users.files.lock();
        if f.revoked {
            return Err(ENODEV);
        }
        if f.reserved
            .iter()
            .any(|&(_, o, l)| offset < o + l && o < offset + len)
        {
            return Err(EPERM);
        }
        let r = map();
        drop(f);
        r
    }

    /// Ends every use of the window: client hooks (newest first: a client loaded later may
    /// depend on an earlier one, as KRAM on the mailbox), then attachments dead and the RCU
    /// sections that checked them finished, doorbell handlers removed, user mappings zapped.
    pub(crate) fn revoke(&self) {
        {
            let mut c = self.users.clients.lock();
            c.revoked = true;
            for e in c.list.iter().rev() {
                if let Some((hook, ctx)) = e.hook {
                    // SAFETY: the client promised (`unimem_fabric_on_revoke`) that `hook` may be
                    // called with `ctx` until it removes it, which waits for this lock.
                    unsafe { hook(ctx as *mut kernel::ffi::c_void) };
                }
            }
        }
        self.live.store(false, Ordering::Release);
        rcu::synchronize_rcu();
        for db in self.doorbells.iter() {
            let _ = db.set_handler(None, core::ptr::null_mut());
        }
        let mut f = self.users.files.lock();
        f.revoked = true;
        // A length of 0 means to the end of the file.
        f.zap(0, 0);
    }
}

/// Revokes the fabric's users when dropped (first thing at unbind, after unpublishing).
pub(crate) struct Revoker(pub(crate) Arc<Fabric>);

impl Drop for Revoker {
    fn drop(&mut self) {
        self.0.revoke();
    }
}
