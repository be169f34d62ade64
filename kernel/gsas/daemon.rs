// SPDX-License-Identifier: GPL-2.0
//! `/dev/unimem_gsas`: the device through which the node's root daemon (`gsasd`) takes the
//! remoteFork jobs to start (JOB) and reports what became of them (POST); one daemon at a
//! time. The children's table and what JOB and POST do to it are in `fork.rs`.

use crate::{
    gsas::daemon::{self as abi, Post, IOCTL_TYPE, NR_JOB, NR_POST},
    service::Service,
};
use core::sync::atomic::{AtomicPtr, Ordering};
use kernel::{
    fs::File,
    ioctl::{_IOR, _IOW},
    miscdevice::{MiscDevice, MiscDeviceRegistration},
    prelude::*,
    sync::{Arc, ArcBorrow},
    transmute::FromBytes,
    uaccess::{UserPtr, UserSlice},
};

const JOB: u32 = _IOR::<abi::Job>(IOCTL_TYPE, NR_JOB);
const POST: u32 = _IOW::<Post>(IOCTL_TYPE, NR_POST);

// SAFETY: four `u32`s: every bit pattern is a valid value.
unsafe impl FromBytes for Post {}

/// The service published for `/dev/unimem_gsas` opens.
static SERVICE: AtomicPtr<Service> = AtomicPtr::new(core::ptr::null_mut());

/// Keeps `SERVICE` set while alive (dropped after the device is deregistered).
pub(crate) struct Published(*const Service);

// SAFETY: only holds an `Arc<Service>` in raw form; `Service` is `Send + Sync`.
unsafe impl Send for Published {}
// SAFETY: see `Send`.
unsafe impl Sync for Published {}

impl Published {
    pub(crate) fn new(service: Arc<Service>) -> Self {
        let p = Arc::into_raw(service);
        SERVICE.store(p.cast_mut(), Ordering::Release);
        Self(p)
    }
}

impl Drop for Published {
    fn drop(&mut self) {
        SERVICE.store(core::ptr::null_mut(), Ordering::Release);
        // SAFETY: `self.0` came from `Arc::into_raw` in `new`.
        drop(unsafe { Arc::from_raw(self.0) });
    }
}

fn published() -> Option<Arc<Service>> {
    let p = SERVICE.load(Ordering::Acquire);
    // SAFETY: a non-null `SERVICE` is an `Arc` reference owned by `Published`, which is dropped
    // only after the device is deregistered, at module exit, when no file can be opened.
    (!p.is_null()).then(|| unsafe { ArcBorrow::from_raw(p) }.into())
}

/// An open `/dev/unimem_gsas`: the node's remoteFork daemon (one at a time).
pub(crate) struct DaemonFile {
    service: Arc<Service>,
}

#[vtable]
impl MiscDevice for DaemonFile {
    type Ptr = KBox<Self>;

    fn open(_file: &File, _misc: &MiscDeviceRegistration<Self>) -> Result<KBox<Self>> {
        crate::privilege::require_admin()?;
        let service = published().ok_or(ENODEV)?;
        {
            let mut inner = service.inner.lock();
            if inner.children.daemon {
                return Err(EBUSY);
            }
            inner.children.daemon = true;
        }
        pr_info!("node {}: remoteFork daemon attached\n", service.node);
        Ok(KBox::new(Self { service }, GFP_KERNEL).inspect_err(|_| service_detach_on_error())?)
    }

    fn release(this: KBox<Self>, _file: &File) {
        this.service.daemon_gone();
        pr_info!("node {}: remoteFork daemon detached\n", this.service.node);
    }

    fn ioctl(this: &Self, file: &File, cmd: u32, arg: usize) -> Result<isize> {
        match cmd {
            JOB => this.service.next_job(file, arg),
            POST => {
                let p: Post = UserSlice::new(UserPtr::from_addr(arg), core::mem::size_of::<Post>())
                    .reader()
                    .read()?;
                this.service.post(p)
            }
            _ => Err(ENOTTY),
        }
    }
}

/// `open` could not allocate its file after marking the daemon attached: undo the mark.
fn service_detach_on_error() {
    if let Some(s) = published() {
        s.inner.lock().children.daemon = false;
    }
}

/// Registration of `/dev/unimem_gsas`.
pub(crate) type Registration = MiscDeviceRegistration<DaemonFile>;
