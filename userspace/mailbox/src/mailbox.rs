//! [`Mailbox`]: one open file of `/dev/unimem_mailbox`, i.e. (after `alloc`) one
//! mailbox/packetizer interface pair of this node, and optionally a kernel-message service.

use crate::error::{Error, Op, Result};
use crate::ioctl;
use nix::errno::Errno;
use nix::fcntl::{fcntl, FcntlArg, OFlag};
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;
use unimem_wire::gsas::owner::Creds;
use unimem_wire::mailbox::{
    AllocInfo, Kmsg, KmsgArgs, OwnerArgs, RecvArgs, RecvCredsArgs, SendArgs, SetProtArgs,
};
use unimem_wire::packet::{Packet, Payload, PACKET_LEN, PAYLOAD_LEN};

/// Path of the character device.
pub const DEVICE_PATH: &str = "/dev/unimem_mailbox";

/// An open `/dev/unimem_mailbox` file.
///
/// Blocking behaviour does not depend on how the file was opened:
/// * [`recv`](Self::recv)/[`krecv`](Self::krecv) always wait for a packet. On a blocking file
///   they are one ioctl that sleeps in the driver; on a nonblocking file they `poll(2)` and
///   retry on `EAGAIN`.
/// * [`try_recv`](Self::try_recv)/[`try_krecv`](Self::try_krecv) never wait. On a nonblocking
///   file they are one ioctl. On a blocking file they set `O_NONBLOCK` with `fcntl` for the
///   duration of the ioctl (two more system calls). Concurrent callers in this process share
///   that state through a counter, so the flag is only cleared when the last of them is done;
///   a `recv` that meanwhile sees `EAGAIN` polls and retries. Open with
///   [`open_nonblocking`](Self::open_nonblocking) when you poll/epoll: it avoids the `fcntl`s.
///
/// For poll/epoll, add the file *after* `alloc`/`kbind`: the driver's poll registers the wait
/// queues of what the file has at that moment, and epoll polls a file only when it is added
/// (and on wake-ups), so a file added before `alloc` is never reported ready.
///
/// Signals are not retried: a wait interrupted by a signal without `SA_RESTART` returns
/// `EINTR`, which is how callers implement timeouts with `alarm(2)`.
///
/// Closing (dropping) the `Mailbox` frees its interface and unbinds its service.
#[derive(Debug)]
pub struct Mailbox {
    fd: OwnedFd,
    nonblocking: bool,
    /// For a blocking file: how many `try_*` calls currently need `O_NONBLOCK` set.
    nonblock_users: Mutex<usize>,
}

impl Mailbox {
    /// Opens `/dev/unimem_mailbox` for blocking receives (close-on-exec).
    pub fn open() -> Result<Self> {
        Self::open_path(DEVICE_PATH, false)
    }

    /// Opens `/dev/unimem_mailbox` with `O_NONBLOCK` (close-on-exec), for poll/epoll loops.
    pub fn open_nonblocking() -> Result<Self> {
        Self::open_path(DEVICE_PATH, true)
    }

    /// Opens a device at another path (tests, renamed nodes).
    pub fn open_path(path: impl AsRef<Path>, nonblocking: bool) -> Result<Self> {
        let mut options = std::fs::OpenOptions::new();
        // std opens with O_CLOEXEC already; the ioctls need no particular access mode, but
        // read+write states what the file is used for.
        options.read(true).write(true);
        if nonblocking {
            options.custom_flags(OFlag::O_NONBLOCK.bits());
        }
        let file = options.open(path).map_err(|e| {
            Error::sys(
                Op::Open,
                Errno::from_raw(e.raw_os_error().unwrap_or(libc_eio())),
            )
        })?;
        Ok(Self {
            fd: file.into(),
            nonblocking,
            nonblock_users: Mutex::new(0),
        })
    }

    /// Whether the file was opened with `O_NONBLOCK`.
    pub fn is_nonblocking(&self) -> bool {
        self.nonblocking
    }

    /// Allocates the lowest free interface of this node for the calling thread (interfaces
    /// 0..63; 63 is the GSAS service's), in a fresh protection tree unless
    /// [`inherit`](Self::inherit) or [`set_tree`](Self::set_tree) chose one.
    /// Errors: `EBUSY` (all 63 taken), `EINVAL` (this file already has one).
    pub fn alloc(&self) -> Result<AllocInfo> {
        let mut info = AllocInfo::default();
        // SAFETY: the driver writes one `AllocInfo` to the pointer, valid for the call.
        unsafe { ioctl::alloc(self.raw(), &mut info) }.map_err(|e| Error::sys(Op::Alloc, e))?;
        Ok(info)
    }

    /// Allocates well-known interface `iface` (`unimem_wire::mailbox::well_known`), as
    /// [`alloc`](Self::alloc) does any other: how a system service such as `famd` takes the
    /// interface its clients send to (`CAP_SYS_ADMIN`). Errors: `EBUSY` (held: the service
    /// already runs), `EINVAL` (not a well-known interface, or this file has one), `EPERM`.
    pub fn alloc_at(&self, iface: u32) -> Result<AllocInfo> {
        let mut info = AllocInfo {
            iface,
            ..AllocInfo::default()
        };
        // SAFETY: the driver reads and writes one `AllocInfo` at the pointer, valid for the
        // call.
        unsafe { ioctl::alloc_at(self.raw(), &mut info) }
            .map_err(|e| Error::sys(Op::AllocAt, e))?;
        Ok(info)
    }

    /// Sends `payload` to interface `iface` of `node` (same node allowed). The driver adds the
    /// header. Errors: `EAGAIN` (destination ring full), `EINVAL` (bad node/iface, no alloc).
    pub fn send(&self, node: u32, iface: u32, payload: &Payload) -> Result<()> {
        self.send_bytes(node, iface, &payload.encode())
    }

    /// Sends 25 raw payload bytes, e.g. bytes that imitate a header.
    pub fn send_bytes(&self, node: u32, iface: u32, payload: &[u8; PAYLOAD_LEN]) -> Result<()> {
        self.send_args(&SendArgs {
            node,
            iface,
            payload: *payload,
            reserved: [0; 7],
        })
    }

    /// Issues `SEND` with exactly these arguments, reserved bytes included (for ABI tests).
    pub fn send_args(&self, args: &SendArgs) -> Result<()> {
        self.send_polled(args).map(drop)
    }

    /// As [`send_args`](Self::send_args); `true` if the destination was busy-polling its ring
    /// (a kernel service: no doorbell was rung), so a request left in a submission slot of the
    /// GSAS area ([`Area::submit`]) would be seen without [`kick`](Self::kick).
    pub fn send_polled(&self, args: &SendArgs) -> Result<bool> {
        // SAFETY: the driver reads one `SendArgs` from the pointer, valid for the call.
        let r = unsafe { ioctl::send(self.raw(), args) }.map_err(|e| Error::sys(Op::Send, e))?;
        Ok(r == 1)
    }

    /// Rings node `node`'s doorbell (`KICK`): its service then looks at the submission slots
    /// even if it was not polling. Errors: `EINVAL` (bad node, no `ALLOC`).
    pub fn kick(&self, node: u32) -> Result<()> {
        // SAFETY: the driver reads one `u32` from the pointer, valid for the call.
        unsafe { ioctl::kick(self.raw(), &node) }.map_err(|e| Error::sys(Op::Kick, e))?;
        Ok(())
    }

    /// Sleeps until node `home`'s response slot for this interface no longer holds `seq`, for at
    /// most `timeout` (`WAIT_ANSWER`; the home rings this node when it answers): `true` if it
    /// answered, `false` at the timeout. Errors: `EINVAL` (bad node, no `ALLOC`), `EINTR`.
    pub fn wait_answer(&self, home: u32, seq: u32, timeout: Duration) -> Result<bool> {
        let args = unimem_wire::mailbox::WaitAnswerArgs {
            home,
            seq,
            timeout_us: u32::try_from(timeout.as_micros()).unwrap_or(u32::MAX),
            reserved: 0,
        };
        // SAFETY: the driver reads one `WaitAnswerArgs` from the pointer, valid for the call.
        match unsafe { ioctl::wait_answer(self.raw(), &args) } {
            Ok(_) => Ok(true),
            Err(Errno::ETIMEDOUT) => Ok(false),
            Err(e) => Err(Error::sys(Op::WaitAnswer, e)),
        }
    }

    /// Waits for a packet and returns it decoded (header as written by the sender's driver).
    pub fn recv(&self) -> Result<Packet> {
        decode(&self.recv_raw()?)
    }

    /// Waits for a packet and returns its 32 bytes undecoded.
    pub fn recv_raw(&self) -> Result<[u8; PACKET_LEN]> {
        self.wait_for(Op::Recv, |s| s.recv_once())
    }

    /// Waits for a packet and returns it with who sent it: the credentials the sender's node
    /// sealed for the sending interface (`None` when they no longer name the packet's sender:
    /// a kernel interface, or an interface that changed hands since; refuse such a request).
    pub fn recv_with_creds(&self) -> Result<(Packet, Option<Creds>)> {
        let (raw, creds) = self.recv_raw_with_creds()?;
        Ok((decode(&raw)?, creds))
    }

    /// As [`recv_with_creds`](Self::recv_with_creds), the packet's 32 bytes undecoded.
    pub fn recv_raw_with_creds(&self) -> Result<([u8; PACKET_LEN], Option<Creds>)> {
        self.wait_for(Op::Recv, |s| s.recv_creds_once())
    }

    /// [`recv_raw_with_creds`](Self::recv_raw_with_creds) without waiting: `None` when no
    /// packet is there (a service's event loop drains its file this way).
    #[allow(clippy::type_complexity)]
    pub fn try_recv_raw_with_creds(&self) -> Result<Option<([u8; PACKET_LEN], Option<Creds>)>> {
        self.without_waiting(Op::Recv, |s| s.recv_creds_once())
    }

    /// Returns a waiting packet, or `None` without waiting.
    pub fn try_recv(&self) -> Result<Option<Packet>> {
        self.try_recv_raw()?.as_ref().map(decode).transpose()
    }

    /// Returns a waiting packet's 32 bytes, or `None` without waiting.
    pub fn try_recv_raw(&self) -> Result<Option<[u8; PACKET_LEN]>> {
        self.without_waiting(Op::Recv, |s| s.recv_once())
    }

    /// Sets the protection id stamped on future packets of interface `iface` of this node
    /// (`CAP_SYS_ADMIN`). Errors: `EPERM`, `EINVAL` (iface >= 64, prot >= 2^24), `ENOENT`.
    pub fn set_prot(&self, iface: u32, prot_id: u32) -> Result<()> {
        let args = SetProtArgs { iface, prot_id };
        // SAFETY: the driver reads one `SetProtArgs` from the pointer, valid for the call.
        unsafe { ioctl::set_prot(self.raw(), &args) }.map_err(|e| Error::sys(Op::SetProt, e))?;
        Ok(())
    }

    /// Before [`alloc`](Self::alloc): puts the interface this file will allocate in the
    /// protection tree of `other` (a mailbox file that has allocated). Threads of a process,
    /// or a process and its children, share a tree this way.
    /// Errors: `EINVAL` (other has not allocated, is this file, or this file has allocated).
    pub fn inherit(&self, other: &impl AsRawFd) -> Result<()> {
        let fd = other.as_raw_fd() as u32;
        // SAFETY: the driver reads one `u32` from the pointer, valid for the call.
        unsafe { ioctl::inherit(self.raw(), &fd) }.map_err(|e| Error::sys(Op::Inherit, e))?;
        Ok(())
    }

    /// Before [`alloc`](Self::alloc): puts the interface in protection tree `prot_id`
    /// (`CAP_SYS_ADMIN`; remoteFork). Errors: `EPERM`, `EINVAL` (0, >= 2^24, after ALLOC).
    pub fn set_tree(&self, prot_id: u32) -> Result<()> {
        // SAFETY: the driver reads one `u32` from the pointer, valid for the call.
        unsafe { ioctl::set_tree(self.raw(), &prot_id) }.map_err(|e| Error::sys(Op::SetTree, e))?;
        Ok(())
    }

    /// Before [`alloc`](Self::alloc): the identity the interface will carry instead of the
    /// opener's (`CAP_SYS_ADMIN`; remoteFork's daemon gives a child's file the issuer's).
    /// `admin`: the identity may run programs as root. Errors: `EPERM`, `EINVAL` (after ALLOC).
    pub fn set_owner(&self, uid: u32, gid: u32, admin: bool) -> Result<()> {
        let args = OwnerArgs {
            uid,
            gid,
            flags: if admin {
                unimem_wire::gsas::owner::ADMIN
            } else {
                0
            },
        };
        // SAFETY: the driver reads one `OwnerArgs` from the pointer, valid for the call.
        unsafe { ioctl::set_owner(self.raw(), &args) }.map_err(|e| Error::sys(Op::SetOwner, e))?;
        Ok(())
    }

    /// Maps the allocated interface's GSAS area: its response slots and bulk-in page
    /// (read-only) and its bulk-out page (read-write). See [`Area`].
    pub fn map_area(&self) -> Result<Area> {
        Area::map(self.fd.as_fd())
    }

    /// Maps `len` bytes (whole pages) at offset `offset` of this node's partition, shared and
    /// read-write, at `fixed` (replacing what is there) if given: GSAS pages the node's service
    /// allocated to this file's protection tree (`mailbox::MMAP_GSAS`). Errors: `EACCES` (a
    /// page of another tree), `ENXIO` (a page not allocated, or no GSAS service), `EINVAL`.
    /// The mapping goes when the pages are freed; the caller unmaps it with `munmap`.
    pub fn map_partition(
        &self,
        offset: u64,
        len: usize,
        fixed: Option<std::num::NonZeroUsize>,
    ) -> Result<std::ptr::NonNull<std::ffi::c_void>> {
        self.map_partition_prot(offset, len, fixed, true)
    }

    /// As [`map_partition`](Self::map_partition), readable only (`write` false): the driver
    /// then also refuses a later `mprotect` to writable, and another tree's pages need only a
    /// grant to read.
    pub fn map_partition_prot(
        &self,
        offset: u64,
        len: usize,
        fixed: Option<std::num::NonZeroUsize>,
        write: bool,
    ) -> Result<std::ptr::NonNull<std::ffi::c_void>> {
        let off = unimem_wire::mailbox::MMAP_GSAS.checked_add(offset);
        self.map_at(off, len, fixed, write)
    }

    /// Maps `len` bytes (whole pages) at offset `offset` of node `node`'s partition (not this
    /// node's), shared, read-write if `write`: what that node's GSAS service approved for this
    /// file's interface with a MAP request just before (`mailbox::MMAP_REMOTE`; the approval is
    /// used up). Errors: `EACCES` (no approval, or one for another offset, fewer pages, or
    /// read-only), `EINVAL` (this node, or past the partition). The mapping goes when the home
    /// frees the pages or narrows their grant; the caller unmaps it with `munmap`. At `fixed`
    /// (replacing what is there) if given, as [`map_partition_prot`](Self::map_partition_prot).
    pub fn map_remote(
        &self,
        node: u16,
        offset: u64,
        len: usize,
        fixed: Option<std::num::NonZeroUsize>,
        write: bool,
    ) -> Result<std::ptr::NonNull<std::ffi::c_void>> {
        let off = (offset >> unimem_wire::mailbox::MMAP_NODE_SHIFT == 0)
            .then(|| unimem_wire::mailbox::mmap_remote(u32::from(node), offset));
        self.map_at(off, len, fixed, write)
    }

    fn map_at(
        &self,
        off: Option<u64>,
        len: usize,
        fixed: Option<std::num::NonZeroUsize>,
        write: bool,
    ) -> Result<std::ptr::NonNull<std::ffi::c_void>> {
        let err = |e| Error::sys(Op::Mmap, e);
        let len = std::num::NonZeroUsize::new(len).ok_or_else(|| err(Errno::EINVAL))?;
        let off = off
            .and_then(|o| nix::libc::off_t::try_from(o).ok())
            .ok_or_else(|| err(Errno::EINVAL))?;
        // At `fixed` only once the driver made the mapping (`fixed_map.rs`: a refused
        // `MAP_FIXED` would leave a hole in the caller's reservation).
        crate::fixed_map::map_shared(self.fd.as_fd(), off, len, fixed, write).map_err(err)
    }

    /// Receives the 64-bit messages of `service` on this node through this file
    /// (`CAP_SYS_ADMIN`). Errors: `EBUSY` (bound elsewhere), `EINVAL` (not 1..15), `EPERM`.
    pub fn kbind(&self, service: u32) -> Result<()> {
        // SAFETY: the driver reads one `u32` from the pointer, valid for the call.
        unsafe { ioctl::kbind(self.raw(), &service) }.map_err(|e| Error::sys(Op::KBind, e))?;
        Ok(())
    }

    /// Sends a 64-bit message to `service` on `node` (`CAP_SYS_ADMIN`).
    /// Errors: `EINVAL` (bad node/service), `EAGAIN` (destination ring full), `EPERM`.
    pub fn ksend(&self, node: u32, service: u32, word: u64) -> Result<()> {
        let args = KmsgArgs {
            node,
            service,
            word,
        };
        // SAFETY: the driver reads one `KmsgArgs` from the pointer, valid for the call.
        unsafe { ioctl::ksend(self.raw(), &args) }.map_err(|e| Error::sys(Op::KSend, e))?;
        Ok(())
    }

    /// Waits for a 64-bit message of the bound service; `sender` is the sending node.
    pub fn krecv(&self) -> Result<Kmsg> {
        self.wait_for(Op::KRecv, |s| s.krecv_once())
    }

    /// Returns a waiting 64-bit message, or `None` without waiting.
    pub fn try_krecv(&self) -> Result<Option<Kmsg>> {
        self.without_waiting(Op::KRecv, |s| s.krecv_once())
    }

    /// Waits until a packet or message is waiting (`POLLIN`), at most `timeout` (`None`:
    /// forever). Returns false on timeout.
    pub fn wait_readable(&self, timeout: Option<Duration>) -> Result<bool> {
        let timeout = match timeout {
            None => PollTimeout::NONE,
            // Round up so that a short timeout does not become a busy poll.
            Some(d) => PollTimeout::try_from(d.as_millis().max(1).min(i32::MAX as u128) as i32)
                .unwrap_or(PollTimeout::MAX),
        };
        let mut fds = [PollFd::new(self.fd.as_fd(), PollFlags::POLLIN)];
        let n = poll(&mut fds, timeout).map_err(|e| Error::sys(Op::Poll, e))?;
        Ok(n > 0)
    }

    fn raw(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    fn recv_once(&self) -> std::result::Result<[u8; PACKET_LEN], Errno> {
        let mut args = RecvArgs {
            packet: [0; PACKET_LEN],
        };
        // SAFETY: the driver writes one `RecvArgs` to the pointer, valid for the call.
        unsafe { ioctl::recv(self.raw(), &mut args) }?;
        Ok(args.packet)
    }

    #[allow(clippy::type_complexity)]
    fn recv_creds_once(&self) -> std::result::Result<([u8; PACKET_LEN], Option<Creds>), Errno> {
        let mut args = RecvCredsArgs {
            packet: [0; PACKET_LEN],
            uid: 0,
            gid: 0,
            flags: 0,
            valid: 0,
        };
        // SAFETY: the driver writes one `RecvCredsArgs` to the pointer, valid for the call.
        unsafe { ioctl::recv_creds(self.raw(), &mut args) }?;
        let creds = (args.valid == 1).then_some(Creds {
            uid: args.uid,
            gid: args.gid,
            flags: args.flags,
        });
        Ok((args.packet, creds))
    }

    fn krecv_once(&self) -> std::result::Result<Kmsg, Errno> {
        let mut args = KmsgArgs::default();
        // SAFETY: the driver writes one `KmsgArgs` to the pointer, valid for the call.
        unsafe { ioctl::krecv(self.raw(), &mut args) }?;
        Ok(Kmsg {
            service: args.service,
            sender: args.node,
            word: args.word,
        })
    }

    /// Runs a receive ioctl until it returns something: directly on a blocking file (the
    /// driver sleeps), with poll between `EAGAIN`s on a nonblocking one.
    fn wait_for<T>(
        &self,
        op: Op,
        once: impl Fn(&Self) -> std::result::Result<T, Errno>,
    ) -> Result<T> {
        loop {
            match once(self) {
                Ok(v) => return Ok(v),
                Err(Errno::EAGAIN) => {
                    self.wait_readable(None)?;
                }
                Err(e) => return Err(Error::sys(op, e)),
            }
        }
    }

    /// Runs a receive ioctl that must not sleep: `EAGAIN` becomes `None`.
    fn without_waiting<T>(
        &self,
        op: Op,
        once: impl Fn(&Self) -> std::result::Result<T, Errno>,
    ) -> Result<Option<T>> {
        let r = if self.nonblocking {
            once(self)
        } else {
            self.nonblock_begin()?;
            let r = once(self);
            self.nonblock_end()?;
            r
        };
        match r {
            Ok(v) => Ok(Some(v)),
            Err(Errno::EAGAIN) => Ok(None),
            Err(e) => Err(Error::sys(op, e)),
        }
    }

    fn nonblock_begin(&self) -> Result<()> {
        let mut users = self
            .nonblock_users
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if *users == 0 {
            self.set_o_nonblock(true)?;
        }
        *users += 1;
        Ok(())
    }

    fn nonblock_end(&self) -> Result<()> {
        let mut users = self
            .nonblock_users
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        *users -= 1;
        if *users == 0 {
            self.set_o_nonblock(false)?;
        }
        Ok(())
    }

    fn set_o_nonblock(&self, on: bool) -> Result<()> {
        let fcntl_err = |e| Error::sys(Op::Fcntl, e);
        let flags =
            OFlag::from_bits_retain(fcntl(self.raw(), FcntlArg::F_GETFL).map_err(fcntl_err)?);
        let flags = if on {
            flags | OFlag::O_NONBLOCK
        } else {
            flags - OFlag::O_NONBLOCK
        };
        fcntl(self.raw(), FcntlArg::F_SETFL(flags)).map_err(fcntl_err)?;
        Ok(())
    }
}

/// The mapped GSAS area of an interface (`unimem_wire::gsas::AREA_*`, docs/GSAS.md): page 0
/// holds one 64-byte response slot per home node, written by that node's atomic service; page
/// 1 is bulk-in (what `BULK_READ` brought); both are read-only. Bulk-out is a writable page,
/// read by a service for `BULK_WRITE`, and after it the page of submission slots, one per home
/// node, where a request is left without a system call (`gsas::submit_slot`). The memory is shared with other nodes: every access is
/// volatile, and a slot's `seq` is read with acquire ordering (the service writes it last,
/// with release). Unmapped on drop; the mapping keeps the mailbox file (and so the interface)
/// alive.
#[derive(Debug)]
pub struct Area {
    ro: std::ptr::NonNull<std::ffi::c_void>,
    out: std::ptr::NonNull<std::ffi::c_void>,
}

// SAFETY: the mappings are plain shared memory, accessed only with volatile/atomic operations.
unsafe impl Send for Area {}
// SAFETY: see `Send`.
unsafe impl Sync for Area {}

const PAGE: usize = unimem_wire::gsas::PAGE_SIZE as usize;

impl Area {
    fn map(fd: BorrowedFd<'_>) -> Result<Self> {
        use nix::sys::mman::{mmap, MapFlags, ProtFlags};
        use std::num::NonZeroUsize;
        let err = |e| Error::sys(Op::Mmap, e);
        let two = NonZeroUsize::new(2 * PAGE).expect("nonzero");
        let off = |o: u64| o as nix::libc::off_t;
        // SAFETY: a new mapping of the device at an address the kernel chooses; nothing else
        // is affected.
        let ro = unsafe {
            mmap(
                None,
                two,
                ProtFlags::PROT_READ,
                MapFlags::MAP_SHARED,
                fd,
                off(unimem_wire::mailbox::MMAP_RESPONSES),
            )
        }
        .map_err(err)?;
        // SAFETY: as above.
        let out = unsafe {
            mmap(
                None,
                two,
                ProtFlags::PROT_READ | ProtFlags::PROT_WRITE,
                MapFlags::MAP_SHARED,
                fd,
                off(unimem_wire::mailbox::MMAP_BULK_OUT),
            )
        };
        match out {
            Ok(out) => Ok(Area { ro, out }),
            Err(e) => {
                // SAFETY: `ro` was mapped above with this length and is not used elsewhere.
                let _ = unsafe { nix::sys::mman::munmap(ro, 2 * PAGE) };
                Err(err(e))
            }
        }
    }

    /// The `seq` word of the slot that node `home`'s service writes (acquire).
    pub fn seq(&self, home: u32) -> u32 {
        let off = home as usize * unimem_wire::gsas::RESPONSE_LEN;
        assert!(off < PAGE, "home node {home} out of range");
        // SAFETY: the slot lies in the mapped, 4-byte aligned response page.
        let p = unsafe { self.ro.as_ptr().cast::<u8>().add(off) }.cast::<u32>();
        // SAFETY: `p` is aligned and mapped for the life of `self`; the service writes it with
        // release ordering.
        let seq = unsafe { std::sync::atomic::AtomicU32::from_ptr(p) }
            .load(std::sync::atomic::Ordering::Acquire);
        u32::from_le(seq)
    }

    /// A copy of the response slot node `home`'s service writes (read after [`seq`](Self::seq)).
    pub fn response(&self, home: u32) -> unimem_wire::gsas::Response {
        let off = home as usize * unimem_wire::gsas::RESPONSE_LEN;
        assert!(off < PAGE, "home node {home} out of range");
        let mut b = [0u8; unimem_wire::gsas::RESPONSE_LEN];
        for (i, byte) in b.iter_mut().enumerate() {
            // SAFETY: inside the mapped response page.
            *byte = unsafe { self.ro.as_ptr().cast::<u8>().add(off + i).read_volatile() };
        }
        unimem_wire::gsas::Response::decode(&b)
    }

    /// Copies `out.len()` (at most a page) bytes of bulk-in.
    pub fn read_bulk_in(&self, out: &mut [u8]) {
        assert!(out.len() <= PAGE);
        for (i, byte) in out.iter_mut().enumerate() {
            // SAFETY: inside the mapped bulk-in page (the second page of `ro`).
            *byte = unsafe { self.ro.as_ptr().cast::<u8>().add(PAGE + i).read_volatile() };
        }
    }

    /// Writes `data` (at most a page) at the start of bulk-out.
    pub fn write_bulk_out(&self, data: &[u8]) {
        assert!(data.len() <= PAGE);
        for (i, byte) in data.iter().enumerate() {
            // SAFETY: inside the mapped bulk-out page.
            unsafe { self.out.as_ptr().cast::<u8>().add(i).write_volatile(*byte) };
        }
    }

    /// Leaves `payload` in the submission slot for node `home` as request number `seq` (not
    /// 0): the payload first, then `seq` with release ordering. The slots start at 0 for each
    /// new owner of the interface; the home takes a request when `seq` changes.
    pub fn submit(&self, home: u32, seq: u32, payload: &[u8; unimem_wire::packet::PAYLOAD_LEN]) {
        use unimem_wire::gsas::{SUBMIT_LEN, SUBMIT_PAYLOAD_OFFSET, SUBMIT_SEQ_OFFSET};
        let off = home as usize * SUBMIT_LEN;
        assert!(off < PAGE, "home node {home} out of range");
        // SAFETY: the slot lies in the mapped submission page (the second page of `out`).
        let slot = unsafe { self.out.as_ptr().cast::<u8>().add(PAGE + off) };
        for (i, byte) in payload.iter().enumerate() {
            // SAFETY: inside the slot.
            unsafe { slot.add(SUBMIT_PAYLOAD_OFFSET + i).write_volatile(*byte) };
        }
        // SAFETY: `seq` is an aligned word of the slot, mapped for the life of `self`; the
        // home reads it with acquire ordering.
        unsafe { std::sync::atomic::AtomicU32::from_ptr(slot.add(SUBMIT_SEQ_OFFSET).cast()) }
            .store(seq.to_le(), std::sync::atomic::Ordering::Release);
    }

    /// The response and bulk-in pages, for callers that read them themselves (volatile).
    pub fn responses_ptr(&self) -> *const u8 {
        self.ro.as_ptr().cast()
    }

    /// The bulk-out page (volatile writes).
    pub fn bulk_out_ptr(&self) -> *mut u8 {
        self.out.as_ptr().cast()
    }
}

impl Drop for Area {
    fn drop(&mut self) {
        // SAFETY: both were mapped in `map` with these lengths; no reference into them outlives
        // `self`.
        unsafe {
            let _ = nix::sys::mman::munmap(self.ro, 2 * PAGE);
            let _ = nix::sys::mman::munmap(self.out, 2 * PAGE);
        }
    }
}

fn decode(raw: &[u8; PACKET_LEN]) -> Result<Packet> {
    Packet::decode(raw).map_err(Error::BadPacket)
}

/// `EIO`, for the (impossible) io::Error without an OS error code.
fn libc_eio() -> i32 {
    Errno::EIO as i32
}

impl AsFd for Mailbox {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

impl AsRawFd for Mailbox {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_device_is_enoent_with_hint() {
        let err = Mailbox::open_path("/nonexistent/unimem_mailbox", false).unwrap_err();
        assert!(err.is(Errno::ENOENT));
        assert_eq!(err.op(), Op::Open);
        assert!(err.to_string().contains("loaded"), "{err}");
    }

    /// On a file that is not the mailbox (here /dev/null), the ioctls fail with ENOTTY and the
    /// receive helpers pass that errno through instead of spinning or hiding it; the
    /// O_NONBLOCK toggling of try_recv leaves the file's flags as they were.
    #[test]
    fn non_mailbox_file_gives_enotty_and_flags_are_restored() {
        let mb = Mailbox::open_path("/dev/null", false).unwrap();
        let flags = || OFlag::from_bits_retain(fcntl(mb.raw(), FcntlArg::F_GETFL).unwrap());
        let before = flags();
        assert!(mb.alloc().unwrap_err().is(Errno::ENOTTY));
        assert!(mb.try_recv().unwrap_err().is(Errno::ENOTTY));
        let err = mb.try_krecv().unwrap_err();
        assert!(err.is(Errno::ENOTTY) && err.op() == Op::KRecv);
        assert_eq!(flags(), before);
        assert!(!before.contains(OFlag::O_NONBLOCK));
        assert!(mb.recv().unwrap_err().is(Errno::ENOTTY));
        assert!(mb
            .send(0, 0, &Payload::default())
            .unwrap_err()
            .is(Errno::ENOTTY));
        assert!(mb.set_prot(0, 1).unwrap_err().is(Errno::ENOTTY));
        assert!(mb.kbind(15).unwrap_err().is(Errno::ENOTTY));
        assert!(mb.ksend(0, 15, 1).unwrap_err().is(Errno::ENOTTY));
        assert!(mb.krecv().unwrap_err().is(Errno::ENOTTY));

        let nb = Mailbox::open_path("/dev/null", true).unwrap();
        assert!(nb.is_nonblocking());
        assert!(
            OFlag::from_bits_retain(fcntl(nb.raw(), FcntlArg::F_GETFL).unwrap())
                .contains(OFlag::O_NONBLOCK)
        );
    }

    #[test]
    fn opened_close_on_exec() {
        let mb = Mailbox::open_path("/dev/null", false).unwrap();
        let fd_flags = fcntl(mb.as_raw_fd(), FcntlArg::F_GETFD).unwrap();
        assert_ne!(fd_flags & nix::libc::FD_CLOEXEC, 0);
    }
}
