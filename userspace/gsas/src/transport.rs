//! The seam between the API and the mailbox device: [`Transport`]. [`Device`] is the real one
//! (`/dev/unimem_mailbox`, one interface, its GSAS area mapped); the unit tests put a fake
//! service behind the same trait.

use crate::error::{Error, Result};
use crate::tree::{self, Interface, TreeSource};
use nix::errno::Errno;
use std::sync::Arc;
use std::time::Duration;
use unimem_wire::gsas::Response;
use unimem_wire::packet::Payload;

/// How the waiting thread gives the CPU away between looks at its response slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pause {
    /// `sched_yield()` (one system call).
    Yield,
    /// `nanosleep()` (one system call).
    Sleep(Duration),
}

/// What a GSAS handle needs from below: send a request to a node's service, look at the
/// response slots and the bulk pages of its interface's area, and pause.
pub trait Transport {
    /// This node's id.
    fn node(&self) -> u16;
    /// The mailbox interface (0-62) of this handle.
    fn iface(&self) -> u32;
    /// The protection tree of this handle.
    fn prot_id(&self) -> u32;
    /// Sends `req` to the atomic service of `home` (one `SEND` ioctl): `true` if the service
    /// was polling (see [`submit`](Self::submit)). `EAGAIN`: the ring to that service is full
    /// (the caller retries).
    fn send(&self, home: u16, req: &Payload) -> std::result::Result<bool, Errno>;
    /// Leaves `req` as request `seq` in the submission slot of `home` (no system call); only
    /// a polling service sees it.
    fn submit(&self, home: u16, seq: u32, req: &Payload);
    /// Rings `home` (one `KICK` ioctl), for a request left in its slot.
    fn kick(&self, home: u16) -> std::result::Result<(), Errno>;
    /// The current `seq` of the slot `home` writes for this interface.
    fn seq(&self, home: u16) -> u32;
    /// A consistent copy of that slot (seq read before and after the other bytes agree).
    fn response(&self, home: u16) -> Response;
    /// Copies the first `dst.len()` bytes of the bulk-in page.
    fn read_bulk_in(&self, dst: &mut [u8]);
    /// Writes `src` at the start of the bulk-out page.
    fn write_bulk_out(&self, src: &[u8]);
    /// Gives the CPU away.
    fn pause(&self, how: Pause);
    /// Sleeps until `home`'s slot for this interface no longer holds `seq`, at most `timeout`
    /// (one `WAIT_ANSWER` ioctl; `home` rings this node when it answers): `true` if answered.
    /// The unit tests' fake cannot (`ENOSYS`).
    fn wait_answer(
        &self,
        _home: u16,
        _seq: u32,
        _timeout: std::time::Duration,
    ) -> std::result::Result<bool, Errno> {
        Err(Errno::ENOSYS)
    }
    /// Whether [`map_read_only_at`](Self::map_read_only_at) can work (reads through mappings,
    /// `mapped_read.rs`); the unit tests' fake service cannot.
    fn maps(&self) -> bool {
        false
    }
    /// Maps `len` bytes at partition offset `offset` of node `home` read-only at `at`,
    /// replacing what is there: this node's pages as its driver checks them, another node's
    /// as its service approved (a MAP request just before).
    fn map_read_only_at(
        &self,
        _home: u16,
        _offset: u64,
        _len: usize,
        _at: std::num::NonZeroUsize,
    ) -> std::result::Result<(), Errno> {
        Err(Errno::ENODEV)
    }
}

/// The real transport: an interface of `/dev/unimem_mailbox` with its area mapped.
#[derive(Debug)]
pub struct Device {
    iface: Arc<Interface>,
    is_root: bool,
}

impl Device {
    /// Opens an interface in the tree `source` says (see [`TreeSource`]).
    pub fn open(source: TreeSource) -> Result<Self> {
        let (iface, is_root) = tree::open(source)?;
        Ok(Device { iface, is_root })
    }

    /// The mailbox file (for `INHERIT` by a child, see `remoteFork`).
    pub fn interface(&self) -> &Arc<Interface> {
        &self.iface
    }
}

impl Drop for Device {
    fn drop(&mut self) {
        if self.is_root {
            tree::release_root(&self.iface);
        }
    }
}

impl Transport for Device {
    fn node(&self) -> u16 {
        self.iface.info.node as u16
    }

    fn iface(&self) -> u32 {
        self.iface.info.iface
    }

    fn prot_id(&self) -> u32 {
        self.iface.info.prot_id
    }

    fn send(&self, home: u16, req: &Payload) -> std::result::Result<bool, Errno> {
        self.iface
            .mailbox
            .send_polled(&unimem_wire::mailbox::SendArgs {
                node: u32::from(home),
                iface: unimem_wire::gsas::SERVICE_IFACE,
                payload: req.encode(),
                reserved: [0; 7],
            })
            .map_err(|e| e.errno().unwrap_or(Errno::EIO))
    }

    fn submit(&self, home: u16, seq: u32, req: &Payload) {
        self.iface.submit(home, seq, req);
    }

    fn kick(&self, home: u16) -> std::result::Result<(), Errno> {
        self.iface
            .mailbox
            .kick(u32::from(home))
            .map_err(|e| e.errno().unwrap_or(Errno::EIO))
    }

    fn seq(&self, home: u16) -> u32 {
        self.iface.seq(home)
    }

    fn wait_answer(
        &self,
        home: u16,
        seq: u32,
        timeout: std::time::Duration,
    ) -> std::result::Result<bool, Errno> {
        self.iface
            .mailbox
            .wait_answer(u32::from(home), seq, timeout)
            .map_err(|e| e.errno().unwrap_or(Errno::EIO))
    }

    fn response(&self, home: u16) -> Response {
        self.iface.response(home)
    }

    fn read_bulk_in(&self, dst: &mut [u8]) {
        self.iface.read_bulk_in(dst);
    }

    fn write_bulk_out(&self, src: &[u8]) {
        self.iface.write_bulk_out(src);
    }

    fn pause(&self, how: Pause) {
        match how {
            Pause::Yield => {
                let _ = nix::sched::sched_yield();
            }
            Pause::Sleep(d) => std::thread::sleep(d),
        }
    }

    fn maps(&self) -> bool {
        true
    }

    fn map_read_only_at(
        &self,
        home: u16,
        offset: u64,
        len: usize,
        at: std::num::NonZeroUsize,
    ) -> std::result::Result<(), Errno> {
        let m = &self.iface.mailbox;
        let r = if u32::from(home) == self.iface.info.node {
            m.map_partition_prot(offset, len, Some(at), false)
        } else {
            m.map_remote(home, offset, len, Some(at), false)
        };
        r.map(drop).map_err(|e| e.errno().unwrap_or(Errno::EIO))
    }
}

/// Maps a failed SEND to the error the API returns.
pub(crate) fn send_error(errno: Errno) -> Error {
    Error::Mailbox(unimem_mailbox::Error::sys(unimem_mailbox::Op::Send, errno))
}

/// Maps a failed KICK to the error the API returns.
pub(crate) fn kick_error(errno: Errno) -> Error {
    Error::Mailbox(unimem_mailbox::Error::sys(unimem_mailbox::Op::Kick, errno))
}
