// SPDX-License-Identifier: GPL-2.0
//! `/dev/eusrvmem`: privileged mmap of the GAS window (except what became System RAM of this
//! node), and a doorbell ioctl.

use crate::{fabric, fabric::Fabric, privilege, wire::eusrvmem as wire_dev};
use kernel::{
    bindings,
    fs::File,
    ioctl::_IOW,
    miscdevice::{MiscDevice, MiscDeviceRegistration},
    mm::virt::VmaNew,
    prelude::*,
    sync::{Arc, ArcBorrow},
    transmute::FromBytes,
    uaccess::{UserPtr, UserSlice},
};

const RING: u32 = _IOW::<wire_dev::RingRequest>(wire_dev::IOCTL_TYPE, wire_dev::IOCTL_NR_RING);

// SAFETY: `RingRequest` is `#[repr(C)]` with only `u32` fields: every bit pattern is a valid value.
unsafe impl FromBytes for wire_dev::RingRequest {}

pub(crate) struct GasFile;

#[vtable]
impl MiscDevice for GasFile {
    type Ptr = Arc<Fabric>;

    fn open(file: &File, _misc: &MiscDeviceRegistration<Self>) -> Result<Arc<Fabric>> {
        // Another node's memory is as sensitive as /dev/mem: root alone is not enough in a
        // container without CAP_SYS_ADMIN, and a locked-down kernel refuses it.
        privilege::require_dev_mem()?;
        let fabric = fabric::current().ok_or(ENODEV)?;
        // Recorded so that unbinding the device can zap this file's mappings.
        fabric.add_file(file.as_ptr())?;
        Ok(fabric)
    }

    fn release(fabric: Arc<Fabric>, file: &File) {
        fabric.remove_file(file.as_ptr());
    }

    fn mmap(fabric: ArcBorrow<'_, Fabric>, _file: &File, vma: &VmaNew) -> Result {
        // Shared mappings only: `remap_pfn_range` of a private (copy-on-write) mapping sets its
        // `vm_pgoff` to the pfn, so `unmap_mapping_range` by window offset never finds it and a
        // revocation or reservation would leave it mapped (memory that may become another
        // node's, or this node's own RAM).
        if vma.flags() & kernel::mm::virt::flags::SHARED == 0 {
            return Err(EINVAL);
        }
        let len = vma.end() - vma.start();
        // SAFETY: `vma` is a valid VMA being set up; `vm_pgoff` is plain data.
        let pgoff = unsafe { (*vma.as_ptr()).vm_pgoff };
        let offset = pgoff.checked_mul(bindings::PAGE_SIZE).ok_or(EINVAL)?;
        let end = offset.checked_add(len).ok_or(EINVAL)?;
        if end > fabric.window.size() {
            return Err(EINVAL);
        }
        let phys = fabric.window.phys() + offset as u64;
        // Parts of the window that unimem_numa hot-added are this node's System RAM now, owned
        // by the page allocator: a mapping of the device would bypass it (as /dev/mem may not).
        // SAFETY: `region_intersects` only walks the resource tree, under its own lock.
        let ram = unsafe {
            bindings::region_intersects(
                phys,
                len,
                bindings::IORESOURCE_SYSTEM_RAM as kernel::ffi::c_ulong,
                bindings::IORES_DESC_NONE as kernel::ffi::c_ulong,
            )
        };
        if ram != bindings::REGION_DISJOINT as i32 {
            return Err(EPERM);
        }
        vma.set_io();
        vma.set_dontexpand();
        vma.set_dontdump();
        let pfn = phys >> bindings::PAGE_SHIFT;
        fabric.map_user(offset as u64, len as u64, || {
            // SAFETY: the range `[offset, end)` is inside the window (checked above) and the
            // device is bound (`map_user`; unbinding zaps this mapping); `VM_IO | VM_DONTEXPAND`
            // keep the core from treating it as ordinary pages or growing the mapping.
            kernel::error::to_result(unsafe {
                bindings::remap_pfn_range(
                    vma.as_ptr(),
                    vma.start(),
                    pfn as usize,
                    len,
                    (*vma.as_ptr()).vm_page_prot,
                )
            })
        })
    }

    fn ioctl(fabric: ArcBorrow<'_, Fabric>, _file: &File, cmd: u32, arg: usize) -> Result<isize> {
        match cmd {
            RING => {
                let size = core::mem::size_of::<wire_dev::RingRequest>();
                let req: wire_dev::RingRequest = UserSlice::new(UserPtr::from_addr(arg), size)
                    .reader()
                    .read()?;
                fabric.ring(req.node, req.vector)?;
                Ok(0)
            }
            _ => Err(ENOTTY),
        }
    }
}
