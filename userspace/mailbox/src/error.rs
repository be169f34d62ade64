//! Errors of the mailbox library. Every system-call failure keeps its `errno` so that callers
//! (and the acceptance tests) can tell `EBUSY` from `EINVAL` from `EAGAIN`; the message adds
//! what that errno means for that operation according to the driver's ABI.

use nix::errno::Errno;
use std::fmt;
use unimem_wire::packet::PacketError;

/// The operation that failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Open,
    Alloc,
    AllocAt,
    Send,
    Recv,
    SetProt,
    KBind,
    KSend,
    KRecv,
    /// `poll(2)` while waiting for a packet or message.
    Poll,
    /// `fcntl(2)` toggling `O_NONBLOCK` for `try_recv` on a blocking file.
    Fcntl,
    Inherit,
    SetTree,
    SetOwner,
    /// `mmap(2)` of the interface's GSAS area.
    Mmap,
    Kick,
    WaitAnswer,
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Op::Open => "open",
            Op::Alloc => "ALLOC",
            Op::AllocAt => "ALLOC_AT",
            Op::Send => "SEND",
            Op::Recv => "RECV",
            Op::SetProt => "SET_PROT",
            Op::KBind => "KBIND",
            Op::KSend => "KSEND",
            Op::KRecv => "KRECV",
            Op::Poll => "poll",
            Op::Fcntl => "fcntl",
            Op::Inherit => "INHERIT",
            Op::SetTree => "SET_TREE",
            Op::SetOwner => "SET_OWNER",
            Op::Mmap => "mmap",
            Op::Kick => "KICK",
            Op::WaitAnswer => "WAIT_ANSWER",
        })
    }
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A system call failed; `errno` is exactly what the kernel returned.
    #[error("{op}: {errno}{}", hint(*op, *errno).map(|h| format!(" ({h})")).unwrap_or_default())]
    Sys { op: Op, errno: Errno },
    /// `RECV` returned bytes that are not a packet (the driver broke its own format).
    #[error("RECV: the driver returned a malformed packet: {0:?}")]
    BadPacket(PacketError),
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    pub fn sys(op: Op, errno: Errno) -> Self {
        Error::Sys { op, errno }
    }

    /// The errno of a failed system call (`None` for a malformed packet).
    pub fn errno(&self) -> Option<Errno> {
        match self {
            Error::Sys { errno, .. } => Some(*errno),
            Error::BadPacket(_) => None,
        }
    }

    /// The operation that failed (`Recv` for a malformed packet).
    pub fn op(&self) -> Op {
        match self {
            Error::Sys { op, .. } => *op,
            Error::BadPacket(_) => Op::Recv,
        }
    }

    /// True if the kernel answered `errno`.
    pub fn is(&self, errno: Errno) -> bool {
        self.errno() == Some(errno)
    }
}

/// What an errno means for an operation of `/dev/unimem_mailbox`, as the ABI documents it.
pub fn hint(op: Op, errno: Errno) -> Option<&'static str> {
    use Errno::*;
    Some(match (op, errno) {
        (Op::Open, ENOENT | ENXIO | ENODEV) => "is unimem_mailbox loaded?",
        (Op::Open, EACCES | EPERM) => "no permission to open the device",
        (_, ENOTTY) => "the driver does not know this ioctl: ABI mismatch with unimem-wire?",
        (_, ENODEV) => "the device went away",
        (_, EINTR) => "interrupted by a signal",
        (Op::Alloc, EBUSY) => {
            "all 62 interfaces threads may have on this node are allocated (62: well-known services', 63: the GSAS service's)"
        }
        (Op::AllocAt, EBUSY) => "the well-known interface is held: does the service already run?",
        (Op::AllocAt, EINVAL) => {
            "not a well-known interface (unimem_wire::mailbox::well_known), or this file has one"
        }
        (Op::AllocAt, EPERM) => "needs CAP_SYS_ADMIN",
        (Op::Alloc, EINVAL) => "this file already has an interface",
        (Op::Alloc, EAGAIN) => {
            "every free interface still has a previous owner's request being applied by a home (or no fresh tree id): try again"
        }
        (Op::SetOwner, EINVAL) => "unknown flags, or this file has allocated already",
        (Op::Send, EAGAIN) => "the destination ring is full (32 slots per sender node)",
        (Op::Send, EINVAL) => {
            "bad node or interface, nonzero reserved bytes, or no ALLOC on this file"
        }
        (Op::Recv, EAGAIN) => "no packet waiting",
        (Op::Recv, EINVAL) => "no ALLOC on this file",
        (Op::SetProt | Op::SetTree | Op::SetOwner | Op::KBind | Op::KSend | Op::KRecv, EPERM) => {
            "needs CAP_SYS_ADMIN"
        }
        (Op::SetProt, EINVAL) => {
            "interface not one threads may have (>= 63), or protection id 0 or >= 2^24"
        }
        (Op::SetTree, EINVAL) => "protection id 0 or >= 2^24, or this file has allocated already",
        (Op::Inherit, EBADF) => "not an open file descriptor",
        (Op::Inherit, EINVAL) => {
            "not another mailbox file that has allocated, or this file has allocated already"
        }
        (Op::Mmap, EINVAL) => {
            "no ALLOC on this file, or offset/length outside the 3-page area or the partition"
        }
        (Op::Mmap, ENXIO) => "not a GSAS page allocated on this node (freed, or never), or no GSAS service",
        (Op::Mmap, EACCES) => {
            "a GSAS page of another protection tree, or the read-only responses and bulk-in"
        }
        (Op::SetProt, ENOENT) => "that interface is not allocated",
        (Op::KBind, EBUSY) => "another file on this node has bound that service",
        (Op::KBind, EINVAL) => "services are 1..15",
        (Op::KSend, EINVAL) => "bad node or service",
        (Op::KSend, EAGAIN) => "the destination's kernel-message ring is full",
        (Op::KRecv, EAGAIN) => "no message waiting",
        (Op::KRecv, EINVAL) => "this file is not bound to a service (KBIND)",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errno_is_kept_and_matchable() {
        for (op, e) in [
            (Op::Alloc, Errno::EBUSY),
            (Op::Send, Errno::EINVAL),
            (Op::Send, Errno::EAGAIN),
            (Op::SetProt, Errno::EPERM),
            (Op::SetProt, Errno::ENOENT),
        ] {
            let err = Error::sys(op, e);
            assert_eq!(err.errno(), Some(e));
            assert_eq!(err.op(), op);
            assert!(err.is(e));
            assert!(matches!(err, Error::Sys { errno, .. } if errno == e));
        }
        assert!(!Error::sys(Op::Alloc, Errno::EBUSY).is(Errno::EINVAL));
    }

    #[test]
    fn message_names_op_errno_and_meaning() {
        let s = Error::sys(Op::Alloc, Errno::EBUSY).to_string();
        assert!(s.starts_with("ALLOC: EBUSY"), "{s}");
        assert!(s.contains("all 62 interfaces"), "{s}");
        let s = Error::sys(Op::KBind, Errno::EPERM).to_string();
        assert!(
            s.contains("KBIND: EPERM") && s.contains("CAP_SYS_ADMIN"),
            "{s}"
        );
        // An errno the ABI does not document gets no invented explanation.
        assert_eq!(
            Error::sys(Op::Recv, Errno::EIO).to_string(),
            format!("RECV: {}", Errno::EIO)
        );
    }

    #[test]
    fn hints_are_specific_to_the_operation() {
        assert_ne!(
            hint(Op::Alloc, Errno::EINVAL),
            hint(Op::Send, Errno::EINVAL)
        );
        assert_eq!(hint(Op::Send, Errno::EBUSY), None);
        assert!(hint(Op::Recv, Errno::ENOTTY).unwrap().contains("ABI"));
        assert!(hint(Op::Open, Errno::ENOENT).unwrap().contains("loaded"));
    }

    #[test]
    fn malformed_packet_has_no_errno() {
        let e = Error::BadPacket(PacketError::Reserved(3));
        assert_eq!(e.errno(), None);
        assert_eq!(e.op(), Op::Recv);
        assert!(e.to_string().contains("Reserved(3)"));
    }
}
