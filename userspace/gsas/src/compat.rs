//! Stand-in for what the kernel engineer's branch (gsas-kernel) adds to `unimem-mailbox`:
//! `Mailbox::{inherit, set_tree, map_area}` and `Area`, with the same names and signatures.
//! Deleted when that branch is merged.

use nix::errno::Errno;
use nix::sys::mman::{mmap, munmap, MapFlags, ProtFlags};
use std::num::NonZeroUsize;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::ptr::NonNull;
use unimem_mailbox::{Error, Mailbox, Op, Result};
use unimem_wire::gsas::{PAGE_SIZE, RESPONSE_LEN};
use unimem_wire::mailbox::{IOCTL_TYPE, MMAP_BULK_OUT, MMAP_RESPONSES, NR_INHERIT, NR_SET_TREE};

nix::ioctl_write_ptr!(ioc_inherit, IOCTL_TYPE as u8, NR_INHERIT as u8, u32);
nix::ioctl_write_ptr!(ioc_set_tree, IOCTL_TYPE as u8, NR_SET_TREE as u8, u32);

const PAGE: usize = PAGE_SIZE as usize;

pub trait MailboxExt {
    fn inherit(&self, other: &impl AsRawFd) -> Result<()>;
    fn set_tree(&self, prot_id: u32) -> Result<()>;
    fn map_area(&self) -> Result<Area>;
}

impl MailboxExt for Mailbox {
    fn inherit(&self, other: &impl AsRawFd) -> Result<()> {
        let fd = other.as_raw_fd() as u32;
        // SAFETY: the driver reads one u32.
        unsafe { ioc_inherit(self.as_raw_fd(), &fd) }.map_err(|e| Error::sys(Op::Alloc, e))?;
        Ok(())
    }

    fn set_tree(&self, prot_id: u32) -> Result<()> {
        // SAFETY: the driver reads one u32.
        unsafe { ioc_set_tree(self.as_raw_fd(), &prot_id) }
            .map_err(|e| Error::sys(Op::SetProt, e))?;
        Ok(())
    }

    fn map_area(&self) -> Result<Area> {
        Area::map(self.as_fd())
    }
}

#[derive(Debug)]
pub struct Area {
    ro: NonNull<std::ffi::c_void>,
    out: NonNull<std::ffi::c_void>,
}

// SAFETY: plain shared memory, accessed with volatile operations only.
unsafe impl Send for Area {}
// SAFETY: as above.
unsafe impl Sync for Area {}

impl Area {
    fn map(fd: BorrowedFd<'_>) -> Result<Self> {
        let err = |e: Errno| Error::sys(Op::Alloc, e);
        // SAFETY: new mappings at addresses the kernel chooses.
        let ro = unsafe {
            mmap(
                None,
                NonZeroUsize::new(2 * PAGE).expect("nonzero"),
                ProtFlags::PROT_READ,
                MapFlags::MAP_SHARED,
                fd,
                MMAP_RESPONSES as i64,
            )
        }
        .map_err(err)?;
        // SAFETY: as above.
        let out = unsafe {
            mmap(
                None,
                NonZeroUsize::new(PAGE).expect("nonzero"),
                ProtFlags::PROT_READ | ProtFlags::PROT_WRITE,
                MapFlags::MAP_SHARED,
                fd,
                MMAP_BULK_OUT as i64,
            )
        };
        match out {
            Ok(out) => Ok(Area { ro, out }),
            Err(e) => {
                // SAFETY: mapped above, unused.
                let _ = unsafe { munmap(ro, 2 * PAGE) };
                Err(err(e))
            }
        }
    }

    pub fn seq(&self, home: u32) -> u32 {
        let off = home as usize * RESPONSE_LEN;
        assert!(off < PAGE);
        // SAFETY: aligned, inside the mapped page.
        let p = unsafe { self.ro.as_ptr().cast::<u8>().add(off) }.cast::<u32>();
        // SAFETY: as above.
        let seq = unsafe { std::sync::atomic::AtomicU32::from_ptr(p) }
            .load(std::sync::atomic::Ordering::Acquire);
        u32::from_le(seq)
    }

    pub fn response(&self, home: u32) -> unimem_wire::gsas::Response {
        let off = home as usize * RESPONSE_LEN;
        assert!(off < PAGE);
        let mut b = [0u8; RESPONSE_LEN];
        for (i, byte) in b.iter_mut().enumerate() {
            // SAFETY: inside the mapped page.
            *byte = unsafe { self.ro.as_ptr().cast::<u8>().add(off + i).read_volatile() };
        }
        unimem_wire::gsas::Response::decode(&b)
    }

    pub fn read_bulk_in(&self, out: &mut [u8]) {
        assert!(out.len() <= PAGE);
        for (i, byte) in out.iter_mut().enumerate() {
            // SAFETY: inside the bulk-in page.
            *byte = unsafe { self.ro.as_ptr().cast::<u8>().add(PAGE + i).read_volatile() };
        }
    }

    pub fn write_bulk_out(&self, data: &[u8]) {
        assert!(data.len() <= PAGE);
        for (i, byte) in data.iter().enumerate() {
            // SAFETY: inside the bulk-out page.
            unsafe { self.out.as_ptr().cast::<u8>().add(i).write_volatile(*byte) };
        }
    }
}

impl Drop for Area {
    fn drop(&mut self) {
        // SAFETY: mapped in `map` with these lengths.
        unsafe {
            let _ = munmap(self.ro, 2 * PAGE);
            let _ = munmap(self.out, PAGE);
        }
    }
}
