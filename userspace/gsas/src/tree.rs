//! Mailbox interfaces with their GSAS area mapped, and the process's protection tree.
//!
//! Every handle has its own interface (its own response slots). The first handle of a process
//! makes the process's **root** file: a fresh tree from `ALLOC`, or the tree of the file whose
//! number is in `GSAS_TREE_FD` (a parent passed it across `exec`). Later handles `INHERIT` the
//! root's tree before their `ALLOC`, so all threads of a process share one tree. A forked child
//! inherits from its parent's root and makes its own. The root stays open until the process
//! exits; a handle dropped and opened again (one thread after another) reuses it.

use crate::error::{Error, Result};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::atomic::{fence, Ordering};
use std::sync::{Arc, Mutex};
use unimem_mailbox::{AllocInfo, Area, Mailbox};
use unimem_wire::gsas::{Response, PAGE_SIZE, RESPONSE_LEN};

/// Environment variable naming an inherited mailbox file whose tree the process joins.
pub const TREE_FD_ENV: &str = "GSAS_TREE_FD";

/// Slots in the responses page.
const SLOTS: u16 = (PAGE_SIZE as usize / RESPONSE_LEN) as u16;

/// Which protection tree a new handle joins.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TreeSource {
    /// The process's tree (the usual case; see the module documentation).
    #[default]
    Process,
    /// A tree of its own, shared with nobody.
    Fresh,
    /// Tree `id` (`SET_TREE`, `CAP_SYS_ADMIN`): what remoteFork gives a remote child.
    Id(u32),
    /// The tree of mailbox file `fd` (`INHERIT`).
    Fd(RawFd),
}

/// An allocated mailbox interface and its mapped GSAS area.
#[derive(Debug)]
pub struct Interface {
    // Field order: the area is unmapped before the file closes.
    area: Area,
    pub mailbox: Mailbox,
    pub info: AllocInfo,
}

impl Interface {
    /// Opens the device, lets `join` put the file in a tree, allocates and maps.
    pub fn open(join: impl FnOnce(&Mailbox) -> unimem_mailbox::Result<()>) -> Result<Self> {
        let mailbox = Mailbox::open()?;
        join(&mailbox)?;
        let info = mailbox.alloc()?;
        let area = mailbox.map_area()?;
        log::debug!(
            "gsas: node {} iface {} tree {:#08x}",
            info.node,
            info.iface,
            info.prot_id
        );
        Ok(Interface {
            area,
            mailbox,
            info,
        })
    }

    /// The `seq` of `home`'s slot.
    pub fn seq(&self, home: u16) -> u32 {
        self.area.seq(u32::from(home % SLOTS))
    }

    /// A consistent copy of `home`'s slot: `seq` is read before and after the rest; a copy
    /// that straddles an update is retried (a bounded number of times).
    pub fn response(&self, home: u16) -> Response {
        let home = u32::from(home % SLOTS);
        let mut r = self.area.response(home);
        for _ in 0..1000 {
            fence(Ordering::Acquire);
            let after = self.area.seq(home);
            if after == r.seq {
                break;
            }
            r = self.area.response(home);
        }
        r
    }

    /// Leaves `req` as request `seq` in the submission slot for `home`.
    pub fn submit(&self, home: u16, seq: u32, req: &unimem_wire::packet::Payload) {
        self.area
            .submit(u32::from(home % SLOTS), seq, &req.encode());
    }

    /// Copies the start of the bulk-in page.
    pub fn read_bulk_in(&self, dst: &mut [u8]) {
        fence(Ordering::Acquire);
        self.area.read_bulk_in(dst);
    }

    /// Writes the start of the bulk-out page (before the SEND that makes it visible).
    pub fn write_bulk_out(&self, src: &[u8]) {
        self.area.write_bulk_out(src);
        fence(Ordering::Release);
    }

    /// A duplicate of the mailbox file without close-on-exec: pass its number to a child in
    /// [`TREE_FD_ENV`] and the child joins this tree.
    pub fn export_fd(&self) -> Result<OwnedFd> {
        let fd = nix::fcntl::fcntl(self.mailbox.as_raw_fd(), nix::fcntl::FcntlArg::F_DUPFD(0))?;
        // SAFETY: F_DUPFD returned a new descriptor that nothing else owns.
        Ok(unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) })
    }
}

struct Root {
    pid: nix::unistd::Pid,
    iface: Arc<Interface>,
    in_use: bool,
}

static ROOT: Mutex<Option<Root>> = Mutex::new(None);

fn lock() -> std::sync::MutexGuard<'static, Option<Root>> {
    ROOT.lock().unwrap_or_else(|p| p.into_inner())
}

/// The inherited tree file named by `GSAS_TREE_FD`, if it is set and open.
fn env_tree_fd() -> Option<RawFd> {
    let v = std::env::var(TREE_FD_ENV).ok()?;
    match v.trim().parse::<RawFd>() {
        Ok(fd) if fd >= 0 && nix::fcntl::fcntl(fd, nix::fcntl::FcntlArg::F_GETFD).is_ok() => {
            Some(fd)
        }
        _ => {
            log::warn!("gsas: ignoring {TREE_FD_ENV}={v}: not an open file descriptor");
            None
        }
    }
}

fn inherit_raw(mb: &Mailbox, fd: RawFd) -> unimem_mailbox::Result<()> {
    mb.inherit(&fd)
}

/// Opens an interface in `source`'s tree. Returns whether it is the process's root.
pub(crate) fn open(source: TreeSource) -> Result<(Arc<Interface>, bool)> {
    match source {
        TreeSource::Fresh => return Ok((Arc::new(Interface::open(|_| Ok(()))?), false)),
        TreeSource::Id(id) => {
            return Ok((Arc::new(Interface::open(|mb| mb.set_tree(id))?), false));
        }
        TreeSource::Fd(fd) => {
            if nix::fcntl::fcntl(fd, nix::fcntl::FcntlArg::F_GETFD).is_err() {
                return Err(Error::Argument(format!("tree fd {fd} is not open")));
            }
            return Ok((Arc::new(Interface::open(|mb| inherit_raw(mb, fd))?), false));
        }
        TreeSource::Process => {}
    }
    let pid = nix::unistd::getpid();
    let mut root = lock();
    match root.as_mut() {
        Some(r) if r.pid == pid && !r.in_use => {
            r.in_use = true;
            Ok((r.iface.clone(), true))
        }
        Some(r) if r.pid == pid => {
            let i = Interface::open(|mb| mb.inherit(&r.iface.mailbox))?;
            Ok((Arc::new(i), false))
        }
        Some(r) => {
            // A forked child: join the parent's tree with a file of its own.
            let i = Arc::new(Interface::open(|mb| mb.inherit(&r.iface.mailbox))?);
            *root = Some(Root {
                pid,
                iface: i.clone(),
                in_use: true,
            });
            Ok((i, true))
        }
        None => {
            let i = match env_tree_fd() {
                Some(fd) => Interface::open(|mb| inherit_raw(mb, fd))?,
                None => Interface::open(|_| Ok(()))?,
            };
            let i = Arc::new(i);
            *root = Some(Root {
                pid,
                iface: i.clone(),
                in_use: true,
            });
            Ok((i, true))
        }
    }
}

/// The root's handle is gone: the next handle of this process may use its interface.
pub(crate) fn release_root(iface: &Arc<Interface>) {
    if let Some(r) = lock().as_mut() {
        if Arc::ptr_eq(&r.iface, iface) {
            r.in_use = false;
        }
    }
}

/// A descriptor of the process's tree (the root file, duplicated without close-on-exec) to
/// put in a child's [`TREE_FD_ENV`]. Opens the root if there is none yet.
pub fn export_tree_fd() -> Result<OwnedFd> {
    {
        if let Some(r) = lock().as_ref() {
            if r.pid == nix::unistd::getpid() {
                return r.iface.export_fd();
            }
        }
    }
    let (i, is_root) = open(TreeSource::Process)?;
    let fd = i.export_fd();
    if is_root {
        release_root(&i);
    }
    fd
}
