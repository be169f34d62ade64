//! Puts and gets. The target PE's copy of a symmetric object is reached directly when it is
//! mapped here (this PE, the PEs of this node, and other nodes' PEs whose homes approved a
//! mapping: `far.rs`) and through its node's atomic service (bulk transfers) otherwise. Every
//! transfer is complete when the call returns (the copy is done, or the service answered), so
//! `shmem_quiet` and `shmem_fence` only order this PE's own accesses.

use crate::pe::{must, with_gsas, Job, Region};

/// Copies `src` into PE `pe`'s `(region, off)`.
pub fn put_at(j: &Job, routine: &str, pe: usize, region: Region, off: u64, src: &[u8]) {
    if src.is_empty() {
        return;
    }
    match j.data_va(pe, region, off) {
        // SAFETY: the range was checked to lie in the region, which is mapped here; memmove
        // semantics, as a PE may put from its own symmetric memory into itself.
        Some(va) => unsafe { std::ptr::copy(src.as_ptr(), va as *mut u8, src.len()) },
        None => with_gsas(|g| must(routine, g.bulk_write(j.addr(pe, region, off), src))),
    }
}

/// Copies PE `pe`'s `(region, off)` into `dst`.
pub fn get_at(j: &Job, routine: &str, pe: usize, region: Region, off: u64, dst: &mut [u8]) {
    if dst.is_empty() {
        return;
    }
    match j.data_va(pe, region, off) {
        // SAFETY: as in put_at.
        Some(va) => unsafe { std::ptr::copy(va as *const u8, dst.as_mut_ptr(), dst.len()) },
        None => with_gsas(|g| must(routine, g.bulk_read(j.addr(pe, region, off), dst))),
    }
}

/// `shmem_putmem`: `len` bytes from local `src` to symmetric `dest` on `pe`.
pub fn put(j: &Job, routine: &str, dest: usize, src: usize, len: usize, pe: i32) {
    let pe = j.check_pe(routine, pe);
    if len == 0 {
        return;
    }
    let (r, off) = j.symmetric(routine, "dest", dest, len);
    // SAFETY: the caller passes a source of `len` readable bytes (the C contract).
    let s = unsafe { std::slice::from_raw_parts(src as *const u8, len) };
    put_at(j, routine, pe, r, off, s);
}

/// `shmem_getmem`: `len` bytes from symmetric `src` on `pe` to local `dest`.
pub fn get(j: &Job, routine: &str, dest: usize, src: usize, len: usize, pe: i32) {
    let pe = j.check_pe(routine, pe);
    if len == 0 {
        return;
    }
    let (r, off) = j.symmetric(routine, "source", src, len);
    // SAFETY: the caller passes a destination of `len` writable bytes (the C contract).
    let d = unsafe { std::slice::from_raw_parts_mut(dest as *mut u8, len) };
    get_at(j, routine, pe, r, off, d);
}

/// Strides in elements (`dst`, `sst` at least 1), `nelems` elements of `size` bytes.
pub struct Strided {
    pub dst: isize,
    pub sst: isize,
    pub nelems: usize,
    pub size: usize,
}

impl Strided {
    fn check(&self, j: &Job, routine: &str) {
        if self.dst < 1 || self.sst < 1 {
            crate::pe::die(&format!(
                "{routine}: strides must be at least 1 (dst {}, sst {}) on PE {}",
                self.dst, self.sst, j.me
            ));
        }
    }

    fn at(&self, base: usize, stride: isize, i: usize) -> usize {
        base + i * stride as usize * self.size
    }
}

/// `shmem_iput`: element `i` of `src` (stride `sst`) to element `i` of `dest` (stride `dst`).
pub fn iput(j: &Job, routine: &str, dest: usize, src: usize, s: &Strided, pe: i32) {
    let pe = j.check_pe(routine, pe);
    s.check(j, routine);
    for i in 0..s.nelems {
        let d = s.at(dest, s.dst, i);
        let (r, off) = j.symmetric(routine, "dest", d, s.size);
        // SAFETY: the caller's source array holds nelems elements at stride sst.
        let e = unsafe { std::slice::from_raw_parts(s.at(src, s.sst, i) as *const u8, s.size) };
        put_at(j, routine, pe, r, off, e);
    }
}

/// `shmem_iget`: element `i` of `src` on `pe` (stride `sst`) to element `i` of local `dest`.
pub fn iget(j: &Job, routine: &str, dest: usize, src: usize, s: &Strided, pe: i32) {
    let pe = j.check_pe(routine, pe);
    s.check(j, routine);
    for i in 0..s.nelems {
        let (r, off) = j.symmetric(routine, "source", s.at(src, s.sst, i), s.size);
        // SAFETY: the caller's destination array holds nelems elements at stride dst.
        let e = unsafe { std::slice::from_raw_parts_mut(s.at(dest, s.dst, i) as *mut u8, s.size) };
        get_at(j, routine, pe, r, off, e);
    }
}
