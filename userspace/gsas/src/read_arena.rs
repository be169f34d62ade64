//! The address space that reads through mappings use (`mapped_read.rs`): one reservation per
//! process, of pages each holding one mapped GSAS page (or a run holding a node's version
//! table), and the SIGBUS handler that makes a withdrawn mapping harmless.
//!
//! Why a handler: a home removes every mapping of pages that are freed or whose grant narrows
//! (its ZAP; docs/GSAS.md, "Mapping another node's pages"), and a later load from such a
//! mapping faults with SIGBUS. A read through a cached mapping must then fail as the service
//! would (the pages are no longer the reader's), not kill the process. The handler puts a
//! private zero page in place of the faulting page of the reservation and marks it stale; the
//! reader sees the mark after its copy and asks the service instead. Faults anywhere else go
//! to the disposition the process had before.

use nix::libc::{self, c_int, c_void, siginfo_t};
use nix::sys::signal::{sigaction, SaFlags, SigAction, SigHandler, SigSet, Signal};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use unimem_wire::gsas::PAGE_SIZE;

const PAGE: usize = PAGE_SIZE as usize;
/// Pages reserved (1 GiB of address space, no memory).
const PAGES: usize = 1 << 18;

/// Start of the reservation (0 until made): read by the handler.
static BASE: AtomicUsize = AtomicUsize::new(0);
/// One mark per page of the reservation, set by the handler.
static STALE: OnceLock<Box<[AtomicBool]>> = OnceLock::new();
/// The disposition of SIGBUS before ours.
static PREVIOUS: OnceLock<SigAction> = OnceLock::new();
static ARENA: OnceLock<Option<Arena>> = OnceLock::new();

/// The reservation: pages handed out and given back.
#[derive(Debug)]
pub(crate) struct Arena {
    base: usize,
    free: Mutex<Free>,
}

#[derive(Debug, Default)]
struct Free {
    /// Pages never handed out start here.
    next: usize,
    /// Single pages given back.
    pages: Vec<usize>,
}

impl Arena {
    /// The process's reservation, made (and the handler installed) on first use; `None` if
    /// either failed (logged once): reads then go to the services.
    pub(crate) fn get() -> Option<&'static Arena> {
        ARENA
            .get_or_init(|| match Self::make() {
                Ok(a) => Some(a),
                Err(e) => {
                    log::warn!("reads through mappings are off in this process: {e}");
                    None
                }
            })
            .as_ref()
    }

    fn make() -> Result<Self, nix::Error> {
        // SAFETY: a new private, inaccessible anonymous mapping chosen by the kernel: it
        // replaces nothing.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                PAGES * PAGE,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(nix::Error::last());
        }
        let _ = STALE.set((0..PAGES).map(|_| AtomicBool::new(false)).collect());
        let ours = SigAction::new(
            SigHandler::SigAction(on_sigbus),
            SaFlags::SA_SIGINFO | SaFlags::SA_ONSTACK,
            SigSet::empty(),
        );
        // The reservation is published before the handler can look at it.
        BASE.store(base as usize, Ordering::Release);
        // SAFETY: `on_sigbus` only makes system calls and touches atomics (async-signal-safe).
        match unsafe { sigaction(Signal::SIGBUS, &ours) } {
            Ok(previous) => {
                let _ = PREVIOUS.set(previous);
            }
            Err(e) => {
                BASE.store(0, Ordering::Release);
                return Err(e);
            }
        }
        Ok(Arena {
            base: base as usize,
            free: Mutex::new(Free::default()),
        })
    }

    /// `n` consecutive pages of the reservation: their index.
    pub(crate) fn take(&self, n: usize) -> Option<usize> {
        let mut f = self.free.lock().ok()?;
        if n == 1 {
            if let Some(i) = f.pages.pop() {
                return Some(i);
            }
        }
        let i = f.next;
        (i + n <= PAGES).then(|| {
            f.next = i + n;
            i
        })
    }

    /// The address of page `i`.
    pub(crate) fn addr(&self, i: usize) -> usize {
        self.base + i * PAGE
    }

    /// Whether page `i`'s mapping was withdrawn (the handler replaced it).
    pub(crate) fn stale(&self, i: usize) -> bool {
        STALE.get().is_some_and(|s| s[i].load(Ordering::Acquire))
    }

    /// Gives page `i` back: whatever is mapped there goes, the page is reserved again.
    pub(crate) fn give_back(&self, i: usize) {
        // SAFETY: page `i` lies in the reservation, and the caller no longer reads it.
        let r = unsafe {
            libc::mmap(
                self.addr(i) as *mut c_void,
                PAGE,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE | libc::MAP_FIXED,
                -1,
                0,
            )
        };
        if r == libc::MAP_FAILED {
            // Left as it is, and never handed out again.
            return;
        }
        if let Some(s) = STALE.get() {
            s[i].store(false, Ordering::Release);
        }
        if let Ok(mut f) = self.free.lock() {
            f.pages.push(i);
        }
    }
}

extern "C" fn on_sigbus(sig: c_int, info: *mut siginfo_t, ctx: *mut c_void) {
    let base = BASE.load(Ordering::Acquire);
    // SAFETY: the kernel passes a valid `siginfo_t` to an `SA_SIGINFO` handler.
    let addr = unsafe { (*info).si_addr() } as usize;
    if base != 0 && addr >= base && addr < base + PAGES * PAGE {
        let i = (addr - base) / PAGE;
        // SAFETY: a page of the reservation, whose mapping the driver withdrew: a private zero
        // page takes its place, so the load that faulted reads zeros when it runs again.
        let r = unsafe {
            libc::mmap(
                (base + i * PAGE) as *mut c_void,
                PAGE,
                libc::PROT_READ,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED,
                -1,
                0,
            )
        };
        if r != libc::MAP_FAILED {
            if let Some(s) = STALE.get() {
                s[i].store(true, Ordering::Release);
            }
            return;
        }
    }
    match PREVIOUS.get().map(|p| p.handler()) {
        Some(SigHandler::SigAction(f)) => f(sig, info, ctx),
        Some(SigHandler::Handler(f)) => f(sig),
        _ => {
            // The default (or ignoring a fault, which cannot be): it takes effect when the
            // faulting instruction runs again.
            // SAFETY: resetting a disposition is async-signal-safe.
            unsafe { libc::signal(libc::SIGBUS, libc::SIG_DFL) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;

    /// A page of the reservation mapped from a file that then shrinks faults as a withdrawn
    /// GSAS mapping does (SIGBUS): the handler must make the load read zeros and mark the page.
    #[test]
    fn withdrawn_mapping_reads_zeros_and_is_marked() {
        let a = Arena::get().expect("reservation");
        let i = a.take(1).expect("a page");
        let fd =
            nix::sys::memfd::memfd_create(c"arena-test", nix::sys::memfd::MemFdCreateFlag::empty())
                .expect("memfd");
        nix::unistd::ftruncate(&fd, PAGE as i64).expect("ftruncate");
        // SAFETY: page `i` of the reservation, handed to this test.
        let p = unsafe {
            libc::mmap(
                a.addr(i) as *mut c_void,
                PAGE,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_FIXED,
                fd.as_raw_fd(),
                0,
            )
        };
        assert_ne!(p, libc::MAP_FAILED);
        let word = p as *mut u64;
        // SAFETY: the page is mapped, shared, writable.
        unsafe { word.write_volatile(0x1234) };
        assert_eq!(unsafe { word.read_volatile() }, 0x1234);
        assert!(!a.stale(i));
        // The file loses its page: the next load faults.
        nix::unistd::ftruncate(&fd, 0).expect("ftruncate");
        // SAFETY: the load faults; the handler maps a zero page there and it runs again.
        assert_eq!(unsafe { word.read_volatile() }, 0);
        assert!(a.stale(i));
        a.give_back(i);
        assert!(!a.stale(i));
    }
}
