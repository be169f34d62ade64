//! Mappings of GSAS pages into the process, and the executable's writable data segment (its
//! `.data` and `.bss`).
//!
//! Why: an OpenSHMEM program reads and writes its own symmetric objects with plain loads and
//! stores, while other PEs change them with puts and atomics. So the memory the program uses
//! must be the memory the atomic service changes: as Gmem did, each PE maps GSAS pages of its
//! own node over its static data and for its symmetric heap. PEs of one node map each other's
//! regions too (direct puts and gets). The mappings go through the PE's GSAS handle
//! ([`gsas::Gsas::map_local`]): the node's service lets a process map only its own
//! protection tree's pages (the job's), so a PE needs no privilege and reaches no other job's
//! memory.

use gsas::Gsas;
use nix::sys::mman::{mmap_anonymous, munmap, MapFlags, ProtFlags};
use std::num::NonZeroUsize;
use std::ptr::NonNull;

const PAGE: usize = 4096;

/// Maps `len` bytes (a multiple of the page size) of this node's GSAS memory at `addr`,
/// read-write and shared; at `fixed` (replacing what is mapped there) if given.
pub fn map(g: &Gsas, addr: u64, len: usize, fixed: Option<usize>) -> Result<usize, String> {
    let p = g
        .map_local(addr, len, fixed.and_then(NonZeroUsize::new))
        .map_err(|e| format!("mapping GSAS {addr:#x}+{len:#x}: {e}"))?;
    Ok(p.as_ptr() as usize)
}

/// As [`map`], at an address that is a multiple of `align` (a power of two, at least a page):
/// `len + align` bytes of address space are reserved (no memory), the pages are mapped over
/// the aligned part of it and the rest is given back. Why: `shmem_align` must return
/// addresses aligned in the address space, and the heap allocator aligns offsets into the
/// heap, so the heap's start must be aligned at least as much.
pub fn map_aligned(g: &Gsas, addr: u64, len: usize, align: usize) -> Result<usize, String> {
    if !align.is_power_of_two() || align < PAGE {
        return Err(format!(
            "alignment {align:#x} is not a power of two of pages"
        ));
    }
    let span = len
        .checked_add(align)
        .and_then(NonZeroUsize::new)
        .ok_or("address range too large")?;
    // SAFETY: a fresh inaccessible reservation, mapped over or unmapped below.
    let res = unsafe {
        mmap_anonymous(
            None,
            span,
            ProtFlags::PROT_NONE,
            MapFlags::MAP_PRIVATE | MapFlags::MAP_NORESERVE,
        )
    }
    .map_err(|e| format!("reserving {span:#x} bytes of address space: {e}"))?;
    let start = res.as_ptr() as usize;
    let at = start.next_multiple_of(align);
    let end = start + span.get();
    match map(g, addr, len, Some(at)) {
        Ok(va) => {
            unmap(start, at - start);
            unmap(at + len, end - (at + len));
            Ok(va)
        }
        Err(e) => {
            unmap(start, span.get());
            Err(e)
        }
    }
}

/// Unmaps `[va, va + len)`.
pub fn unmap(va: usize, len: usize) {
    if let Some(p) = NonNull::new(va as *mut std::ffi::c_void) {
        // SAFETY: the caller's mapping, no longer referred to.
        let _ = unsafe { munmap(p, len) };
    }
}

/// Puts private anonymous memory holding the same bytes in place of the mapping at `va`
/// (the static data at finalize: the program goes on using its globals).
pub fn privatize(va: usize, len: usize) -> Result<(), String> {
    let nz = NonZeroUsize::new(len).ok_or("empty range")?;
    // SAFETY: copies the live mapping out, then replaces it in place with the copy; no other
    // thread of a PE uses its globals during shmem_finalize.
    unsafe {
        let copy = std::slice::from_raw_parts(va as *const u8, len).to_vec();
        mmap_anonymous(
            NonZeroUsize::new(va),
            nz,
            ProtFlags::PROT_READ | ProtFlags::PROT_WRITE,
            MapFlags::MAP_PRIVATE | MapFlags::MAP_FIXED,
        )
        .map_err(|e| format!("mmap over the static data: {e}"))?;
        std::ptr::copy_nonoverlapping(copy.as_ptr(), va as *mut u8, len);
    }
    Ok(())
}

/// The page range `[start, end)` of the executable's writable segment that stays writable
/// (its RELRO part excluded): the program's `.data` and `.bss`. `None` if it has none.
pub fn data_segment() -> Option<(usize, usize)> {
    let (start, end, _) = segment();
    (end > start).then_some((start, end))
}

/// Where that range starts in the executable's image (its address less the load address): the
/// same in every process that runs the same build, whatever address randomisation did.
pub fn data_segment_offset() -> usize {
    let (start, _, base) = segment();
    start.wrapping_sub(base)
}

/// `(start, end, load address)` of the executable's data range.
fn segment() -> (usize, usize, usize) {
    let mut r: (usize, usize, usize) = (0, 0, 0);
    // SAFETY: dl_iterate_phdr calls back with valid program headers; the first object is the
    // executable, and the callback stops the iteration after it.
    unsafe {
        libc::dl_iterate_phdr(
            Some(first_object),
            (&mut r as *mut (usize, usize, usize)).cast(),
        );
    }
    r
}

unsafe extern "C" fn first_object(
    info: *mut libc::dl_phdr_info,
    _size: usize,
    data: *mut libc::c_void,
) -> libc::c_int {
    let info = &*info;
    let out = &mut *(data as *mut (usize, usize, usize));
    let phdrs = std::slice::from_raw_parts(info.dlpi_phdr, usize::from(info.dlpi_phnum));
    let base = info.dlpi_addr as usize;
    let mut relro_end = 0usize;
    for ph in phdrs {
        if ph.p_type == libc::PT_GNU_RELRO {
            relro_end = base + ph.p_vaddr as usize + ph.p_memsz as usize;
        }
    }
    for ph in phdrs {
        if ph.p_type == libc::PT_LOAD && ph.p_flags & libc::PF_W != 0 {
            let start = base + ph.p_vaddr as usize;
            let end = start + ph.p_memsz as usize;
            // ld.so makes RELRO read-only up to the page holding its end.
            let first = (start / PAGE).max(relro_end / PAGE) * PAGE;
            *out = (first, end.div_ceil(PAGE) * PAGE, base);
        }
    }
    1
}

#[cfg(test)]
mod tests {
    use super::data_segment;

    static mut IN_BSS: [u8; 100] = [0; 100];
    static mut IN_DATA: u64 = 7;

    #[test]
    fn the_data_segment_holds_the_programs_globals() {
        let (start, end) = data_segment().expect("a test binary has data");
        assert_eq!(start % 4096, 0);
        assert_eq!(end % 4096, 0);
        for a in [&raw const IN_BSS as usize, &raw const IN_DATA as usize] {
            assert!(a >= start && a < end, "{a:#x} not in {start:#x}..{end:#x}");
        }
    }
}
