//! Shared mappings of a device file, optionally at an address the caller reserved.
//!
//! Why not `MAP_FIXED` on the file: when a driver's `mmap` refuses (the mailbox driver does,
//! with `EACCES` or `ENXIO`, for pages that are not the caller's), the kernel has already
//! unmapped what was at the address and leaves a hole there (`vms_abort_munmap_vmas`, "leaving
//! a gap where the MAP_FIXED mapping failed"). A caller that keeps a reservation (the GSAS
//! reads' arena, a symmetric heap) then has a gap in it, where another thread's next `mmap`
//! lands, and the caller later maps over that thread's memory when it fills its reservation
//! again. So the file is mapped where the kernel chooses, and only a mapping that exists is
//! moved over the reservation: `mremap` with `MREMAP_FIXED` replaces the destination in one
//! step under the address-space lock. A refusal leaves the reservation as it was.

use nix::errno::Errno;
use nix::sys::mman::{mmap, mremap, munmap, MRemapFlags, MapFlags, ProtFlags};
use std::ffi::c_void;
use std::num::NonZeroUsize;
use std::os::fd::AsFd;
use std::ptr::NonNull;

/// Maps `len` bytes at offset `off` of `fd`, shared, readable and (if `write`) writable: at
/// `fixed` if given, replacing what is there only if the mapping was made.
pub(crate) fn map_shared(
    fd: impl AsFd,
    off: nix::libc::off_t,
    len: NonZeroUsize,
    fixed: Option<NonZeroUsize>,
    write: bool,
) -> Result<NonNull<c_void>, Errno> {
    let prot = if write {
        ProtFlags::PROT_READ | ProtFlags::PROT_WRITE
    } else {
        ProtFlags::PROT_READ
    };
    // SAFETY: a new shared mapping of the file at an address the kernel chooses: it replaces
    // nothing.
    let p = unsafe { mmap(None, len, prot, MapFlags::MAP_SHARED, fd, off) }?;
    let Some(to) = fixed.and_then(|a| NonNull::new(a.get() as *mut c_void)) else {
        return Ok(p);
    };
    let flags = MRemapFlags::MREMAP_FIXED | MRemapFlags::MREMAP_MAYMOVE;
    // SAFETY: `p` is the mapping just made, `len` long; at `to` are pages the caller owns and
    // lets go (its contract), which the move replaces.
    match unsafe { mremap(p, len.get(), len.get(), flags, Some(to)) } {
        Ok(q) => Ok(q),
        Err(e) => {
            // SAFETY: the mapping made above, not moved, used by nothing.
            let _ = unsafe { munmap(p, len.get()) };
            Err(e)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use nix::sys::memfd::{memfd_create, MemFdCreateFlag};
    use nix::sys::mman::{mmap_anonymous, mprotect};
    use std::os::fd::OwnedFd;

    /// One huge page: what the refusing file maps.
    const HUGE: usize = 2 << 20;

    /// A file whose mappings the kernel refuses inside the file's own `mmap`, as the mailbox
    /// driver refuses another tree's pages: a huge-page memfd on a host with no huge pages to
    /// reserve (`ENOMEM` from its reservation, after the range was cleared).
    fn refusing_file() -> Option<OwnedFd> {
        let pool = std::fs::read_to_string("/proc/sys/vm/nr_hugepages").ok()?;
        if pool.trim() != "0" {
            eprintln!("this host keeps huge pages: no file here refuses inside its mmap");
            return None;
        }
        let fd = memfd_create(c"fixed-map-test", MemFdCreateFlag::MFD_HUGETLB).expect("memfd");
        nix::unistd::ftruncate(&fd, HUGE as i64).expect("ftruncate");
        Some(fd)
    }

    /// A reservation of `len` bytes aligned to `align` (inside a larger one, unmapped on drop).
    struct Reservation {
        base: NonNull<c_void>,
        size: usize,
        at: NonNull<c_void>,
    }

    impl Reservation {
        fn new(len: usize, align: usize) -> Self {
            let size = len + align;
            // SAFETY: a new private anonymous mapping the kernel places: it replaces nothing.
            let base = unsafe {
                mmap_anonymous(
                    None,
                    NonZeroUsize::new(size).expect("size"),
                    ProtFlags::PROT_NONE,
                    MapFlags::MAP_PRIVATE | MapFlags::MAP_NORESERVE,
                )
            }
            .expect("reservation");
            let a = (base.as_ptr() as usize).next_multiple_of(align);
            let at = NonNull::new(a as *mut c_void).expect("aligned address");
            Reservation { base, size, at }
        }

        fn fixed(&self) -> Option<NonZeroUsize> {
            NonZeroUsize::new(self.at.as_ptr() as usize)
        }

        /// Every page of the first `len` bytes is mapped (`mprotect` fails with `ENOMEM` over
        /// a hole).
        fn whole(&self, len: usize) -> bool {
            // SAFETY: the test's own reservation; PROT_NONE changes nothing anyone reads.
            unsafe { mprotect(self.at, len, ProtFlags::PROT_NONE) }.is_ok()
        }
    }

    impl Drop for Reservation {
        fn drop(&mut self) {
            // SAFETY: the test's own range.
            let _ = unsafe { munmap(self.base, self.size) };
        }
    }

    /// What the detour is for: the kernel's own `MAP_FIXED` leaves a hole when the file
    /// refuses. If this ever fails, the kernel keeps reservations whole and the detour is not
    /// needed any more.
    #[test]
    fn a_refused_map_fixed_leaves_a_hole() {
        let Some(fd) = refusing_file() else { return };
        let res = Reservation::new(HUGE, HUGE);
        let len = NonZeroUsize::new(HUGE).expect("len");
        let prot = ProtFlags::PROT_READ | ProtFlags::PROT_WRITE;
        let flags = MapFlags::MAP_SHARED | MapFlags::MAP_FIXED;
        // SAFETY: replaces the test's own reservation.
        let r = unsafe { mmap(res.fixed(), len, prot, flags, &fd, 0) };
        assert_eq!(r.err(), Some(Errno::ENOMEM));
        assert!(!res.whole(HUGE), "the kernel kept the reservation");
    }

    #[test]
    fn a_refused_mapping_leaves_the_reservation_whole() {
        let Some(fd) = refusing_file() else { return };
        let res = Reservation::new(HUGE, HUGE);
        let len = NonZeroUsize::new(HUGE).expect("len");
        let r = map_shared(&fd, 0, len, res.fixed(), true);
        assert_eq!(r.err(), Some(Errno::ENOMEM));
        assert!(
            res.whole(HUGE),
            "a refused mapping left a hole in the reservation"
        );
    }

    #[test]
    fn a_mapping_replaces_the_reservation_in_place() {
        const LEN: usize = 2 * 4096;
        let fd = memfd_create(c"fixed-map-test", MemFdCreateFlag::empty()).expect("memfd");
        nix::unistd::ftruncate(&fd, LEN as i64).expect("ftruncate");
        let res = Reservation::new(LEN, 4096);
        let len = NonZeroUsize::new(LEN).expect("len");
        let p = map_shared(&fd, 0, len, res.fixed(), true).expect("mapping");
        assert_eq!(p, res.at);
        // SAFETY: the mapping just made, shared and writable, `LEN` long.
        unsafe { p.cast::<u64>().add(LEN / 8 - 1).write_volatile(0x5eed) };
        let mut b = [0u8; 8];
        nix::sys::uio::pread(&fd, &mut b, (LEN - 8) as i64).expect("pread");
        assert_eq!(
            u64::from_ne_bytes(b),
            0x5eed,
            "the file is what is mapped there"
        );
        assert!(res.whole(LEN));
    }
}
