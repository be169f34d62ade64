//! [`Memory`]: the GSAS operations the data path needs, so that it runs over a
//! [`gsas::Gsas`] handle in a program and over a fake service in the unit tests; [`Pool`]: the
//! handles of one client, one per thread using it at a time (a `Gsas` is not `Sync`).

use std::ffi::c_void;
use std::num::NonZeroUsize;
use std::ptr::NonNull;
use std::sync::Mutex;

use gsas::{Gsas, Transport};
use unimem_wire::gsas::op;

use crate::{FamError, Result};

/// GSAS operations on addresses of any node, answered by the home node's service.
pub trait Memory: Send {
    /// This node's id.
    fn node(&self) -> u16;
    /// A word operation (`op::READ`, `WRITE`, `FETCH_ADD`, `CAS`, `SWAP`, `FETCH_AND/OR/XOR`,
    /// with `op::WIDTH32` for 32 bits): the old value.
    fn word(&self, opcode: u8, addr: u64, a1: u64, a2: u64) -> gsas::Result<u64>;
    fn read128(&self, addr: u64) -> gsas::Result<u128>;
    fn write128(&self, addr: u64, v: u128) -> gsas::Result<()>;
    /// 128-bit compare-and-swap: the old value.
    fn cas128(&self, addr: u64, expected: u128, new: u128) -> gsas::Result<u128>;
    /// `len` bytes from `src` to `dst`, both on one node, copied by that node's service.
    fn copy(&self, dst: u64, src: u64, len: u64) -> gsas::Result<()>;
    fn bulk_read(&self, addr: u64, buf: &mut [u8]) -> gsas::Result<()>;
    fn bulk_write(&self, addr: u64, data: &[u8]) -> gsas::Result<()>;
    /// One INDEXED batch on the home of the entries (all on one node), applied by its service:
    /// [`Gsas::indexed`].
    fn indexed(
        &self,
        kind: u8,
        elem_size: u8,
        entries: &[(u64, u64)],
        out: &mut [u64],
    ) -> gsas::Result<()>;
    /// Keeps (`on`) or lets go of what the grant of the allocation `addr` lies in lets this
    /// user do now, across later grants that take it away (GSAS `KEEP`): what a descriptor
    /// keeps in OpenFAM. The bits kept.
    fn keep(&self, addr: u64, on: bool) -> gsas::Result<u32>;
    /// Maps `len` bytes of GSAS memory at `addr`, of this node or another (at `fixed` if
    /// given), writable if `write`: another node's pages after that node's service approved
    /// them (GSAS `MAP`), this node's checked by its service at `mmap`.
    fn map(
        &self,
        addr: u64,
        len: usize,
        fixed: Option<NonZeroUsize>,
        write: bool,
    ) -> gsas::Result<NonNull<c_void>>;
}

/// Mapping GSAS pages, which only the real device can do: this node's, or another node's
/// that its service approved for this interface just before.
pub trait PageMap {
    fn map_pages(
        &self,
        addr: u64,
        len: usize,
        fixed: Option<NonZeroUsize>,
        write: bool,
    ) -> gsas::Result<NonNull<c_void>>;
}

impl PageMap for gsas::Device {
    fn map_pages(
        &self,
        addr: u64,
        len: usize,
        fixed: Option<NonZeroUsize>,
        write: bool,
    ) -> gsas::Result<NonNull<c_void>> {
        let (node, offset) = (gsas::node_of(addr), gsas::offset_of(addr));
        // Gsas::map has no `fixed`: an item of several pieces is mapped contiguously, so go to
        // the interface's file directly (what Gsas does too).
        let mailbox = &self.interface().mailbox;
        Ok(if node == Transport::node(self) {
            mailbox.map_partition_prot(offset, len, fixed, write)?
        } else {
            mailbox.map_remote(node, offset, len, fixed, write)?
        })
    }
}

impl<T: Transport + PageMap + Send> Memory for Gsas<T> {
    fn node(&self) -> u16 {
        Gsas::node(self)
    }
    fn word(&self, opcode: u8, addr: u64, a1: u64, a2: u64) -> gsas::Result<u64> {
        let mask = if opcode & op::WIDTH32 != 0 {
            u64::from(u32::MAX)
        } else {
            u64::MAX
        };
        Ok(self.raw(opcode, addr, a1 & mask, a2 & mask)?.word() & mask)
    }
    fn read128(&self, addr: u64) -> gsas::Result<u128> {
        Gsas::read128(self, addr)
    }
    fn write128(&self, addr: u64, v: u128) -> gsas::Result<()> {
        Gsas::write128(self, addr, v)
    }
    fn cas128(&self, addr: u64, expected: u128, new: u128) -> gsas::Result<u128> {
        Gsas::cas128(self, addr, expected, new)
    }
    fn copy(&self, dst: u64, src: u64, len: u64) -> gsas::Result<()> {
        Gsas::copy(self, dst, src, len)
    }
    fn bulk_read(&self, addr: u64, buf: &mut [u8]) -> gsas::Result<()> {
        Gsas::bulk_read(self, addr, buf)
    }
    fn bulk_write(&self, addr: u64, data: &[u8]) -> gsas::Result<()> {
        Gsas::bulk_write(self, addr, data)
    }
    fn indexed(
        &self,
        kind: u8,
        elem_size: u8,
        entries: &[(u64, u64)],
        out: &mut [u64],
    ) -> gsas::Result<()> {
        Gsas::indexed(self, kind, elem_size, entries, out)
    }
    fn keep(&self, addr: u64, on: bool) -> gsas::Result<u32> {
        if on {
            Gsas::keep(self, addr)
        } else {
            Gsas::unkeep(self, addr).map(|()| 0)
        }
    }
    fn map(
        &self,
        addr: u64,
        len: usize,
        fixed: Option<NonZeroUsize>,
        write: bool,
    ) -> gsas::Result<NonNull<c_void>> {
        if gsas::node_of(addr) != Gsas::node(self) {
            // The home checks the pages as it would this user's reads (and writes) and
            // approves them for this interface; the mmap below uses the approval up.
            self.raw(op::MAP, addr, len as u64, u64::from(write))?;
        }
        self.transport().map_pages(addr, len, fixed, write)
    }
}

/// The `Fam_Error` a failed GSAS operation becomes. Refusals by the home's kernel (another
/// tree's page and no grant for this user) are OpenFAM's permission error; a page that is not
/// allocated (the item was deallocated) is "not found"; the rest is the memory stack failing,
/// which OpenFAM would call a fabric error.
pub fn gsas_error(what: &str, e: gsas::Error) -> FamError {
    use gsas::Error as E;
    let m = format!("{what}: {e}");
    match e {
        E::Denied(_) => FamError::NoPerm(m),
        E::Fault(_) => FamError::NotFound(m),
        E::Unaligned(_) | E::Invalid(_) | E::Argument(_) => FamError::Invalid(m),
        E::Timeout { .. } => FamError::Timeout(m),
        E::NoMemory(_) | E::NoPool(_) | E::Quota(_) => FamError::NoSpace(m),
        E::Mailbox(ref me) if me.errno() == Some(nix::errno::Errno::EACCES) => FamError::NoPerm(m),
        _ => FamError::Libfabric(m),
    }
}

/// Opens a new handle (a thread that finds the pool empty).
pub type Opener = Box<dyn Fn() -> gsas::Result<Box<dyn Memory>> + Send + Sync>;

/// GSAS handles shared by the threads of one client: a call takes one (opening a new one if
/// all are in use) and gives it back, so N threads cost at most N mailbox interfaces.
pub struct Pool {
    free: Mutex<Vec<Box<dyn Memory>>>,
    open: Opener,
}

impl Pool {
    pub fn new(open: Opener) -> Pool {
        Pool {
            free: Mutex::new(Vec::new()),
            open,
        }
    }

    /// A pool of real handles, each one mailbox interface of this process's tree.
    pub fn device() -> Pool {
        Pool::new(Box::new(|| {
            Gsas::open().map(|g| Box::new(g) as Box<dyn Memory>)
        }))
    }

    /// Runs `f` with a handle.
    pub fn with<R>(&self, f: impl FnOnce(&dyn Memory) -> Result<R>) -> Result<R> {
        let taken = self.free.lock().unwrap_or_else(|p| p.into_inner()).pop();
        let m = match taken {
            Some(m) => m,
            None => (self.open)().map_err(|e| {
                FamError::Libfabric(format!(
                    "cannot open a GSAS handle: {e} (is unimem_mailbox loaded, /dev/unimem_mailbox there?)"
                ))
            })?,
        };
        let r = f(m.as_ref());
        self.free.lock().unwrap_or_else(|p| p.into_inner()).push(m);
        r
    }
}
