//! `/dev/eusrvmem`: mappings of the GAS window and the doorbell ioctl.

use anyhow::{bail, Context, Result};
use nix::sys::mman::{mmap, munmap, MapFlags, ProtFlags};
use std::{fs::File, num::NonZeroUsize, os::fd::AsRawFd, ptr::NonNull};
use unimem_wire::eusrvmem::{RingRequest, DEVICE_NAME, IOCTL_NR_RING, IOCTL_TYPE};

nix::ioctl_write_ptr!(
    ring_ioctl,
    IOCTL_TYPE as u8,
    IOCTL_NR_RING as u8,
    RingRequest
);

pub struct Device {
    file: File,
}

/// A mapping of part of the GAS window; unmapped on drop.
pub struct Mapping {
    base: NonNull<std::ffi::c_void>,
    page_len: usize,
    skip: usize,
    len: usize,
}

impl Device {
    pub fn open() -> Result<Self> {
        let path = format!("/dev/{DEVICE_NAME}");
        let file = File::options()
            .read(true)
            .write(true)
            .open(&path)
            .with_context(|| format!("opening {path} (needs CAP_SYS_ADMIN and unimem_eusrvmem)"))?;
        Ok(Self { file })
    }

    /// Maps `len` bytes at GAS offset `gas_offset` (any alignment) read-write, shared.
    pub fn map(&self, gas_offset: u64, len: usize) -> Result<Mapping> {
        let page = 4096u64;
        let start = gas_offset / page * page;
        let skip = (gas_offset - start) as usize;
        let page_len = (skip + len).div_ceil(page as usize) * page as usize;
        let Some(nz) = NonZeroUsize::new(page_len) else {
            bail!("empty mapping")
        };
        // SAFETY: a fresh shared mapping of the device; nothing else in this process aliases it.
        let base = unsafe {
            mmap(
                None,
                nz,
                ProtFlags::PROT_READ | ProtFlags::PROT_WRITE,
                MapFlags::MAP_SHARED,
                &self.file,
                start as i64,
            )
        }
        .with_context(|| format!("mmap of GAS offset {start:#x}+{page_len:#x}"))?;
        Ok(Mapping {
            base,
            page_len,
            skip,
            len,
        })
    }

    /// Raises doorbell `vector` on `node`.
    pub fn ring(&self, node: u32, vector: u32) -> Result<()> {
        let req = RingRequest { node, vector };
        // SAFETY: the ioctl reads a `RingRequest` from the pointer, which is valid for the call.
        unsafe { ring_ioctl(self.file.as_raw_fd(), &req) }
            .with_context(|| format!("ringing doorbell {vector} of node {node}"))?;
        Ok(())
    }
}

impl Mapping {
    /// Length of the mapped range in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the mapping is empty (never: `Device::map` refuses empty ranges).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The mapped bytes. Other nodes may write them concurrently; callers use volatile-free bulk
    /// copies, which is what a pattern check wants.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: `[skip, skip + len)` lies inside the live mapping owned by `self`.
        unsafe {
            std::slice::from_raw_parts_mut(self.base.as_ptr().cast::<u8>().add(self.skip), self.len)
        }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: `base`/`page_len` describe the mapping created in `Device::map`.
        let _ = unsafe { munmap(self.base, self.page_len) };
    }
}
