//! The libnuma calls of the seed's Table 2, through FFI to the system's `libnuma.so.1`
//! (Debian's `libnuma1`; building needs `libnuma-dev` for the unversioned `libnuma.so`), and
//! small owning wrappers so the rest of the crate needs no `unsafe`.

use anyhow::{bail, Context, Result};
use std::ffi::{c_int, c_longlong, c_uint, c_ulong, c_void};
use std::io;
use std::ptr::NonNull;

/// `struct bitmask` of `<numa.h>`.
#[repr(C)]
struct RawBitmask {
    size: c_ulong,
    maskp: *mut c_ulong,
}

#[link(name = "numa")]
extern "C" {
    fn numa_available() -> c_int;
    fn numa_max_node() -> c_int;
    fn numa_num_possible_nodes() -> c_int;
    fn numa_node_size64(node: c_int, freep: *mut c_longlong) -> c_longlong;
    fn numa_alloc_onnode(size: usize, node: c_int) -> *mut c_void;
    fn numa_alloc_interleaved(size: usize) -> *mut c_void;
    fn numa_free(mem: *mut c_void, size: usize);
    fn numa_move_pages(
        pid: c_int,
        count: c_ulong,
        pages: *mut *mut c_void,
        nodes: *const c_int,
        status: *mut c_int,
        flags: c_int,
    ) -> c_int;
    fn numa_migrate_pages(pid: c_int, from: *mut RawBitmask, to: *mut RawBitmask) -> c_int;
    fn numa_bitmask_alloc(nbits: c_uint) -> *mut RawBitmask;
    fn numa_bitmask_setbit(bmp: *mut RawBitmask, n: c_uint) -> *mut RawBitmask;
    fn numa_bitmask_free(bmp: *mut RawBitmask);
}

/// `MPOL_MF_MOVE` of `<linux/mempolicy.h>`: move only pages this process maps alone, which
/// needs no privilege (`MPOL_MF_MOVE_ALL` needs `CAP_SYS_NICE`).
const MPOL_MF_MOVE: c_int = 1 << 1;

/// `numa_available()`: false when the kernel has no NUMA policy support. libnuma requires this
/// call before any other.
pub fn available() -> bool {
    // SAFETY: no arguments; libnuma only probes get_mempolicy().
    unsafe { numa_available() >= 0 }
}

/// `numa_max_node()`: the highest node number the system has.
pub fn max_node() -> i32 {
    // SAFETY: no arguments, reads libnuma's state set up at load time.
    unsafe { numa_max_node() }
}

/// `numa_node_size64()`: (total, free) bytes of `node`, `None` when the node does not exist.
pub fn node_size(node: i32) -> Option<(u64, u64)> {
    let mut free: c_longlong = 0;
    // SAFETY: `free` is a valid out-pointer for the duration of the call.
    let total = unsafe { numa_node_size64(node, &mut free) };
    (total >= 0).then(|| (total as u64, free.max(0) as u64))
}

/// Nodes (up to `max_node()`) that have memory: the set `numa_alloc_interleaved` spreads over.
pub fn nodes_with_memory() -> Vec<i32> {
    (0..=max_node())
        .filter(|&n| matches!(node_size(n), Some((total, _)) if total > 0))
        .collect()
}

/// Memory from `numa_alloc_onnode` / `numa_alloc_interleaved`, freed with `numa_free`. The
/// pages are not populated until touched; placement happens at first touch.
pub struct NumaBuf {
    ptr: NonNull<c_void>,
    len: usize,
}

impl NumaBuf {
    /// `numa_alloc_onnode(len, node)`: bound (libnuma's default `MPOL_BIND`) to `node`.
    pub fn on_node(len: usize, node: i32) -> Result<Self> {
        // SAFETY: plain allocation call; a null result is handled below.
        let ptr = unsafe { numa_alloc_onnode(len, node) };
        Self::from_raw(ptr, len).with_context(|| format!("numa_alloc_onnode({len}, {node})"))
    }

    /// `numa_alloc_interleaved(len)`: page-interleaved over all nodes the process may use.
    pub fn interleaved(len: usize) -> Result<Self> {
        // SAFETY: plain allocation call; a null result is handled below.
        let ptr = unsafe { numa_alloc_interleaved(len) };
        Self::from_raw(ptr, len).with_context(|| format!("numa_alloc_interleaved({len})"))
    }

    fn from_raw(ptr: *mut c_void, len: usize) -> Result<Self> {
        let err = io::Error::last_os_error();
        match NonNull::new(ptr) {
            Some(ptr) => Ok(Self { ptr, len }),
            None => Err(err).context("allocation failed"),
        }
    }

    /// The buffer as 64-bit words (libnuma returns page-aligned memory from mmap).
    pub fn words_mut(&mut self) -> &mut [u64] {
        // SAFETY: the mapping is page-aligned, `len` bytes long, readable and writable, owned
        // by `self` for the borrow, and anonymous memory is zero-filled so every word is
        // initialised.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr().cast(), self.len / 8) }
    }

    /// The address of each page, as `move_pages` wants them.
    pub fn pages(&self, page_size: usize) -> Vec<*mut c_void> {
        (0..self.len / page_size)
            .map(|i| {
                self.ptr
                    .as_ptr()
                    .cast::<u8>()
                    .wrapping_add(i * page_size)
                    .cast()
            })
            .collect()
    }
}

impl Drop for NumaBuf {
    fn drop(&mut self) {
        // SAFETY: `ptr`/`len` are exactly what the libnuma allocator returned, freed once.
        unsafe { numa_free(self.ptr.as_ptr(), self.len) }
    }
}

/// `numa_move_pages(0, ..., nodes = NULL, ...)`: the node each page is on, or a negative errno
/// (`-ENOENT`: not populated, `-EFAULT`: not mapped).
pub fn query_nodes(pages: &[*mut c_void]) -> Result<Vec<i32>> {
    move_pages(pages, None).context("numa_move_pages (query)")
}

/// `numa_move_pages(0, ..., nodes = [node; n], ...)`: moves every page to `node`; the result
/// is each page's node afterwards or a negative errno for a page that could not move.
pub fn move_to_node(pages: &[*mut c_void], node: i32) -> Result<Vec<i32>> {
    let nodes = vec![node; pages.len()];
    move_pages(pages, Some(&nodes)).with_context(|| format!("numa_move_pages (to node {node})"))
}

fn move_pages(pages: &[*mut c_void], nodes: Option<&[c_int]>) -> Result<Vec<i32>> {
    let mut status = vec![0 as c_int; pages.len()];
    let nodes_ptr = nodes.map_or(std::ptr::null(), |n| n.as_ptr());
    let flags = if nodes.is_some() { MPOL_MF_MOVE } else { 0 };
    // SAFETY: `pages`, `nodes` (when given) and `status` all hold `pages.len()` elements and
    // outlive the call; the kernel only reads `pages` despite the non-const C prototype.
    let rc = unsafe {
        numa_move_pages(
            0,
            pages.len() as c_ulong,
            pages.as_ptr().cast_mut(),
            nodes_ptr,
            status.as_mut_ptr(),
            flags,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error().into());
    }
    Ok(status)
}

/// A libnuma node bitmask, freed on drop.
pub struct NodeMask(NonNull<RawBitmask>);

impl NodeMask {
    /// A mask of `nodes`, sized for every possible node as `numa_migrate_pages` expects.
    pub fn of(nodes: &[i32]) -> Result<Self> {
        // SAFETY: no arguments.
        let bits = unsafe { numa_num_possible_nodes() }.max(1) as c_uint;
        // SAFETY: allocation call; null is handled.
        let raw = unsafe { numa_bitmask_alloc(bits) };
        let mask = Self(NonNull::new(raw).context("numa_bitmask_alloc failed")?);
        for &n in nodes {
            if n < 0 || n as c_uint >= bits {
                bail!("node {n} is outside the {bits} possible nodes");
            }
            // SAFETY: the mask is live and `n` is below its size.
            unsafe { numa_bitmask_setbit(mask.0.as_ptr(), n as c_uint) };
        }
        Ok(mask)
    }
}

impl Drop for NodeMask {
    fn drop(&mut self) {
        // SAFETY: allocated by numa_bitmask_alloc, freed once.
        unsafe { numa_bitmask_free(self.0.as_ptr()) }
    }
}

/// `numa_migrate_pages(pid, from, to)`: moves the process's pages on `from` to `to`; returns
/// how many pages could not be moved.
pub fn migrate_pages(pid: i32, from: &NodeMask, to: &NodeMask) -> Result<u64> {
    // SAFETY: both masks are live libnuma bitmasks; libnuma only reads them.
    let rc = unsafe { numa_migrate_pages(pid, from.0.as_ptr(), to.0.as_ptr()) };
    if rc < 0 {
        return Err(io::Error::last_os_error()).context("numa_migrate_pages");
    }
    Ok(rc as u64)
}
