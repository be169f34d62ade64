//! The shared global-address-space region every VM maps as its ivshmem BAR.

use std::num::NonZeroUsize;
use std::os::fd::{AsRawFd, OwnedFd};
use std::rc::Rc;

use anyhow::{Context, Result};
use nix::fcntl::{fcntl, FcntlArg, SealFlag};
use nix::sys::memfd::{memfd_create, MemFdCreateFlag};
use nix::sys::mman::{mmap, munmap, MapFlags, ProtFlags};
use nix::unistd::ftruncate;
use unimem_wire::gas::{GasDescriptor, PAGE_SIZE};

/// The region's memory, reachable only through this fd: an anonymous memfd leaves nothing in
/// /dev/shm behind when the server dies, however it dies.
pub struct SharedRegion {
    fd: Rc<OwnedFd>,
}

impl SharedRegion {
    /// Creates a region of `desc.region_size` bytes whose first bytes hold `desc`.
    pub fn create(desc: &GasDescriptor) -> Result<Self> {
        let fd = memfd_create(
            c"unimem-gas",
            MemFdCreateFlag::MFD_CLOEXEC | MemFdCreateFlag::MFD_ALLOW_SEALING,
        )
        .context("memfd_create for the shared region")?;
        let len = i64::try_from(desc.region_size).context("region size does not fit in off_t")?;
        ftruncate(&fd, len)
            .with_context(|| format!("sizing the shared region to {} bytes", desc.region_size))?;

        // Only the descriptor's page is touched; the rest stays sparse until guests use it.
        let page = NonZeroUsize::new(PAGE_SIZE as usize).expect("PAGE_SIZE is non-zero");
        // SAFETY: a fresh shared mapping of our own memfd, at an address the kernel picks; it
        // aliases no Rust object and is unmapped below before anything else can see it.
        let map = unsafe {
            mmap(
                None,
                page,
                ProtFlags::PROT_READ | ProtFlags::PROT_WRITE,
                MapFlags::MAP_SHARED,
                &fd,
                0,
            )
        }
        .context("mapping the shared region")?;
        let bytes = desc.encode();
        // SAFETY: the mapping is one page long and the descriptor is far shorter than a page.
        unsafe {
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), map.as_ptr().cast::<u8>(), bytes.len());
            munmap(map, page.get()).context("unmapping the shared region")?;
        }

        // Every VM gets this fd. A guest that shrank it would make every other VM's accesses to
        // the cut-off pages fault with SIGBUS, so the size is sealed before anyone sees the fd.
        fcntl(
            fd.as_raw_fd(),
            FcntlArg::F_ADD_SEALS(
                SealFlag::F_SEAL_SHRINK | SealFlag::F_SEAL_GROW | SealFlag::F_SEAL_SEAL,
            ),
        )
        .context("sealing the shared region's size")?;

        Ok(Self { fd: Rc::new(fd) })
    }

    /// The fd to hand to clients; shared so queued messages keep it alive.
    pub fn fd(&self) -> &Rc<OwnedFd> {
        &self.fd
    }
}
