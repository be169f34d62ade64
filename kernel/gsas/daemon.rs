// SPDX-License-Identifier: GPL-2.0
//! `/dev/unimem_gsas`: the device through which the node's root daemon (`gsasd`) takes the
//! remoteFork jobs to start (JOB) and reports what became of them (POST); one daemon at a
//! time. The children's table and what JOB and POST do to it are in `fork.rs`.

use crate::{
    gsas::daemon::{self as abi, Post, IOCTL_TYPE, NR_JOB, NR_POST},
    published::{Published, Slot},
    service::Service,
};
use kernel::{
    fs::File,
    ioctl::{_IOR, _IOW},
    miscdevice::{MiscDevice, MiscDeviceRegistration},
    prelude::*,
    sync::Arc,
    transmute::FromBytes,
    uaccess::{UserPtr, UserSlice},
};

const JOB: u32 = _IOR::<abi::Job>(IOCTL_TYPE, NR_JOB);
const POST: u32 = _IOW::<Post>(IOCTL_TYPE, NR_POST);

// SAFETY: four `u32`s: every bit pattern is a valid value.
unsafe impl FromBytes for Post {}

/// The service published for `/dev/unimem_gsas` opens.
static SERVICE: Slot<Service> = Slot::new();

/// Publishes the service for `/dev/unimem_gsas` while the returned guard lives.
pub(crate) fn publish(service: Arc<Service>) -> Result<Published<Service>> {
    SERVICE.publish(service)
}

fn published() -> Option<Arc<Service>> {
    SERVICE.get()
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
