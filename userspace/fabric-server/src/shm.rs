//! The shared global-address-space region every VM maps as its ivshmem BAR.

use std::ffi::c_void;
use std::num::NonZeroUsize;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::ptr::NonNull;
use std::rc::Rc;

use anyhow::{bail, ensure, Context, Result};
use nix::errno::Errno;
use nix::fcntl::{fcntl, FcntlArg, SealFlag};
use nix::sys::memfd::{memfd_create, MemFdCreateFlag};
use nix::sys::mman::{mmap, munmap, MapFlags, ProtFlags};
use nix::sys::uio::pwrite;
use nix::unistd::{ftruncate, lseek, Whence};
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

    /// Maps the page at `offset` (page-aligned, inside the region) for reading and writing.
    pub fn map_page(&self, offset: u64) -> Result<PageMap> {
        let len = NonZeroUsize::new(PAGE_SIZE as usize).expect("PAGE_SIZE is non-zero");
        let off = i64::try_from(offset).context("page offset does not fit in off_t")?;
        // SAFETY: a fresh shared mapping of our own memfd at an address the kernel picks; it
        // aliases no Rust object and is only accessed through `PageMap`.
        let ptr = unsafe {
            mmap(
                None,
                len,
                ProtFlags::PROT_READ | ProtFlags::PROT_WRITE,
                MapFlags::MAP_SHARED,
                self.fd.as_fd(),
                off,
            )
        }
        .with_context(|| format!("mapping the region's page at {offset:#x}"))?;
        Ok(PageMap { ptr })
    }

    /// Whether the host can back every page of `offset..offset + len`, and `more` bytes
    /// besides: filling a sparse range makes all of it resident, and the out-of-memory killer
    /// would rather pick a VM.
    pub fn ensure_memory_for(&self, offset: u64, len: u64, more: u64) -> Result<()> {
        let needed = self.unallocated(offset, offset + len)? + more;
        if let Some(available) = available_memory() {
            ensure!(
                needed <= available,
                "it needs {} MiB more host memory and only {} MiB are available",
                needed >> 20,
                available >> 20
            );
        }
        Ok(())
    }

    /// Sets `len` bytes from `offset` to `byte`, through the file rather than a mapping, so a
    /// partition of any size costs no address space (see [`Self::ensure_memory_for`]).
    pub fn fill(&self, offset: u64, len: u64, byte: u8) -> Result<()> {
        const STEP: u64 = 1 << 20;
        let buf = vec![byte; STEP as usize];
        let mut done = 0u64;
        while done < len {
            let n = (len - done).min(STEP) as usize;
            let at = i64::try_from(offset + done).context("offset does not fit in off_t")?;
            match pwrite(self.fd.as_fd(), &buf[..n], at) {
                Ok(0) => bail!("writing the region at {:#x}: no progress", offset + done),
                Ok(w) => done += w as u64,
                Err(Errno::EINTR) => {}
                Err(e) => {
                    return Err(e)
                        .with_context(|| format!("writing the region at {:#x}", offset + done))
                }
            }
        }
        Ok(())
    }

    /// Bytes of `start..end` that no page backs yet (the region is sparse: holes read as
    /// zeros until someone writes them).
    fn unallocated(&self, start: u64, end: u64) -> Result<u64> {
        let raw = self.fd.as_raw_fd();
        let to_off = |v: u64| i64::try_from(v).context("offset does not fit in off_t");
        let mut holes = 0;
        let mut pos = start;
        while pos < end {
            // Absolute seeks: the file offset is shared with the VMs' copies of the fd, and
            // nobody uses it (QEMU maps the fd).
            let data = match lseek(raw, to_off(pos)?, Whence::SeekData) {
                Ok(d) => (d as u64).min(end),
                Err(Errno::ENXIO) => end,
                Err(e) => return Err(e).context("looking for the region's allocated pages"),
            };
            holes += data - pos;
            if data >= end {
                break;
            }
            pos = match lseek(raw, to_off(data)?, Whence::SeekHole) {
                Ok(h) => (h as u64).min(end),
                Err(e) => return Err(e).context("looking for the region's holes"),
            };
        }
        Ok(holes)
    }
}

/// `MemAvailable` from /proc/meminfo, in bytes.
fn available_memory() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// One page of the region, mapped shared: what is stored here the VMs see at once.
pub struct PageMap {
    ptr: NonNull<c_void>,
}

impl PageMap {
    /// Stores `value` (already in the byte order the readers expect) as the `index`th `u64` of
    /// the page. Volatile: the guests read it concurrently, with volatile loads.
    pub fn write_u64(&self, index: usize, value: u64) {
        assert!(
            index < PAGE_SIZE as usize / 8,
            "word {index} is beyond the page"
        );
        // SAFETY: the page is mapped read-write for as long as `self` lives, and the word is
        // inside it and 8-byte aligned (mappings are page-aligned).
        unsafe { std::ptr::write_volatile(self.ptr.as_ptr().cast::<u64>().add(index), value) };
        // Ordered before whatever the server does next to the region (a partition's poison).
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
    }
}

impl Drop for PageMap {
    fn drop(&mut self) {
        // SAFETY: mapped by `SharedRegion::map_page` with this length, not used after this.
        if let Err(e) = unsafe { munmap(self.ptr, PAGE_SIZE as usize) } {
            log::warn!("unmapping a page of the region: {e}");
        }
    }
}
