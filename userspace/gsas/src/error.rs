//! Errors of GSAS operations. A home service's status (`unimem_wire::gsas::status`) becomes
//! one variant each, naming the operation and address; local failures keep their `errno`.

use nix::errno::Errno;
use std::fmt;
use std::time::Duration;
use unimem_wire::gsas::{self, op, status};

/// Which request failed: its opcode and address (as sent, and as the service echoes them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request {
    pub opcode: u8,
    pub addr: u64,
}

/// The name of an opcode, as the API and the C header spell it.
pub fn op_name(opcode: u8) -> &'static str {
    if !op::valid(opcode) {
        return "opcode";
    }
    let w32 = opcode & op::WIDTH32 != 0;
    match (opcode & !op::WIDTH32, w32) {
        (op::NOP, _) => "NOP",
        (op::READ, false) => "READ",
        (op::READ, true) => "READ32",
        (op::WRITE, false) => "WRITE",
        (op::WRITE, true) => "WRITE32",
        (op::READ128, _) => "READ128",
        (op::READ256, _) => "READ256",
        (op::WRITE128, _) => "WRITE128",
        (op::FETCH_ADD, false) => "FETCH_ADD",
        (op::FETCH_ADD, true) => "FETCH_ADD32",
        (op::CAS, false) => "CAS",
        (op::CAS, true) => "CAS32",
        (op::SWAP, false) => "SWAP",
        (op::SWAP, true) => "SWAP32",
        (op::FETCH_AND, false) => "FETCH_AND",
        (op::FETCH_AND, true) => "FETCH_AND32",
        (op::FETCH_OR, false) => "FETCH_OR",
        (op::FETCH_OR, true) => "FETCH_OR32",
        (op::FETCH_XOR, false) => "FETCH_XOR",
        (op::FETCH_XOR, true) => "FETCH_XOR32",
        (op::FETCH_MIN, false) => "FETCH_MIN",
        (op::FETCH_MIN, true) => "FETCH_MIN32",
        (op::FETCH_MAX, false) => "FETCH_MAX",
        (op::FETCH_MAX, true) => "FETCH_MAX32",
        (op::FETCH_UMIN, false) => "FETCH_UMIN",
        (op::FETCH_UMIN, true) => "FETCH_UMIN32",
        (op::FETCH_UMAX, false) => "FETCH_UMAX",
        (op::FETCH_UMAX, true) => "FETCH_UMAX32",
        (op::CAS128, _) => "CAS128",
        (op::COPY, _) => "COPY",
        (op::INDEXED, _) => "INDEXED",
        (op::BULK_READ, _) => "BULK_READ",
        (op::BULK_WRITE, _) => "BULK_WRITE",
        (op::ALLOC, _) => "ALLOC",
        (op::FREE, _) => "FREE",
        (op::FORK, _) => "FORK",
        (op::WAIT, _) => "WAIT",
        (op::IFACE_STATE, _) => "IFACE_STATE",
        (op::FREE_TAG, _) => "FREE_TAG",
        (op::GRANT, _) => "GRANT",
        (op::MAP, _) => "MAP",
        (op::KEEP, _) => "KEEP",
        _ => "opcode",
    }
}

impl fmt::Display for Request {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = op_name(self.opcode);
        if name == "opcode" {
            write!(f, "opcode {:#04x}", self.opcode)?;
        } else {
            f.write_str(name)?;
        }
        write!(
            f,
            " at {:#x} (node {}, offset {:#x})",
            self.addr,
            gsas::node_of(self.addr),
            gsas::offset_of(self.addr)
        )
    }
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// `status::INVALID`: unknown opcode or width, bad length, page count or tag.
    #[error("{0}: invalid request (unknown operation or width, bad length, page count or tag)")]
    Invalid(Request),
    /// `status::UNALIGNED`: the address is not aligned to the operation's size.
    #[error("{0}: address not aligned to the operation's size")]
    Unaligned(Request),
    /// `status::FAULT`: not an allocated GSAS page of that node (never allocated, or freed).
    #[error(
        "{0}: not an allocated GSAS page of that node (never allocated, freed, or out of range)"
    )]
    Fault(Request),
    /// `status::DENIED`: the page belongs to another protection tree, and its grant does not
    /// allow the operation to this user (or it is not the tree's to grant); memory unchanged.
    #[error("{0}: denied, the {what} belongs to another protection tree{grant}", what = if .0.opcode == op::WAIT { "child" } else { "page" }, grant = if .0.opcode == op::WAIT { "" } else { " (and no grant lets this user do that)" })]
    Denied(Request),
    /// `status::NO_MEMORY`: the home node has no free GSAS pages for this allocation.
    #[error("{0}: the home node has not enough free GSAS pages")]
    NoMemory(Request),
    /// `status::NO_POOL`: the home service has no memory pool (its lender did not answer).
    #[error(
        "{0}: the home node's GSAS service has no memory pool (is kram-daemon running there?)"
    )]
    NoPool(Request),
    /// `status::NO_DAEMON`: no remoteFork daemon (`gsasd`) on that node, or it went away before
    /// the program started (FORK) or while the child ran (WAIT: its status is lost).
    #[error("{0}: no remoteFork daemon on node {n} (is gsasd running there?), or it went away", n = gsas::node_of(.0.addr))]
    NoDaemon(Request),
    /// `status::EXEC_FAILED`: the program could not be started; the target's errno.
    #[error("{req}: the program could not be started on node {n}: {errno}", n = gsas::node_of(.req.addr))]
    ExecFailed { req: Request, errno: Errno },
    /// `status::NO_CHILD`: the node knows no such child (never started, already waited for,
    /// or forgotten to make room).
    #[error("{0}: no such child on node {n} (never started, already waited for, or forgotten)", n = gsas::node_of(.0.addr))]
    NoChild(Request),
    /// `status::BUSY`: the node's table of children is full of running children.
    #[error("{0}: node {n} runs too many remoteForked children (wait for some)", n = gsas::node_of(.0.addr))]
    Busy(Request),
    /// `status::QUOTA`: the issuing user has as many pages or children on that node as it
    /// allows one user.
    #[error("{0}: over your quota on node {n} (pages or remoteForked children per user)", n = gsas::node_of(.0.addr))]
    Quota(Request),
    /// `status::STALLED` until the timeout: the home's pool lease lapsed on its clock and no
    /// renewal was acknowledged since, or its pool was still growing for an ALLOC.
    #[error("{0}: node {n}'s page pool lease is stalled, or the pool is still growing (the node was frozen, or its kram-daemon does not answer); try again", n = gsas::node_of(.0.addr))]
    Stalled(Request),
    /// A status this library does not know (a newer service?).
    #[error("{0}: the service answered with unknown status {1}")]
    Status(Request, u8),
    /// No answer within the timeout. The handle resynchronizes with that node before its next
    /// request (a NOP whose answer proves every older answer has arrived).
    #[error("{req}: no answer from node {node}'s GSAS service within {after:?} (is unimem_gsas loaded there, is the node up?)")]
    Timeout {
        req: Request,
        node: u16,
        after: Duration,
    },
    /// An argument the wire cannot carry (checked before sending).
    #[error("{0}")]
    Argument(String),
    /// Opening, allocating or mapping the mailbox interface, or SEND, failed.
    #[error(transparent)]
    Mailbox(#[from] unimem_mailbox::Error),
    /// Another system call failed.
    #[error("{0}")]
    Io(#[from] nix::Error),
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// The error for a response status that is not OK (`None` for OK).
    pub fn from_status(st: u8, req: Request) -> Option<Self> {
        Some(match st {
            status::OK => return None,
            status::INVALID => Error::Invalid(req),
            status::UNALIGNED => Error::Unaligned(req),
            status::FAULT => Error::Fault(req),
            status::DENIED => Error::Denied(req),
            status::NO_MEMORY => Error::NoMemory(req),
            status::NO_POOL => Error::NoPool(req),
            status::NO_DAEMON => Error::NoDaemon(req),
            status::NO_CHILD => Error::NoChild(req),
            status::BUSY => Error::Busy(req),
            status::QUOTA => Error::Quota(req),
            status::STALLED => Error::Stalled(req),
            other => Error::Status(req, other),
        })
    }

    /// The errno the C API reports (docs/GSAS.md and gsas.h list the mapping).
    pub fn errno(&self) -> Errno {
        match self {
            Error::Invalid(_) | Error::Unaligned(_) | Error::Argument(_) => Errno::EINVAL,
            Error::Fault(_) => Errno::EFAULT,
            Error::Denied(_) => Errno::EACCES,
            Error::NoMemory(_) => Errno::ENOMEM,
            Error::NoPool(_) => Errno::ENOSPC,
            Error::NoDaemon(_) => Errno::ESRCH,
            Error::ExecFailed { errno, .. } => *errno,
            Error::NoChild(_) => Errno::ECHILD,
            Error::Busy(_) => Errno::EAGAIN,
            Error::Quota(_) => Errno::EDQUOT,
            Error::Stalled(_) => Errno::EAGAIN,
            Error::Status(..) => Errno::EPROTO,
            Error::Timeout { .. } => Errno::ETIMEDOUT,
            Error::Mailbox(e) => e.errno().unwrap_or(Errno::EIO),
            Error::Io(e) => *e,
        }
    }

    /// The status byte this error came from, if it came from a service.
    pub fn status(&self) -> Option<u8> {
        Some(match self {
            Error::Invalid(_) => status::INVALID,
            Error::Unaligned(_) => status::UNALIGNED,
            Error::Fault(_) => status::FAULT,
            Error::Denied(_) => status::DENIED,
            Error::NoMemory(_) => status::NO_MEMORY,
            Error::NoPool(_) => status::NO_POOL,
            Error::NoDaemon(_) => status::NO_DAEMON,
            Error::ExecFailed { .. } => status::EXEC_FAILED,
            Error::NoChild(_) => status::NO_CHILD,
            Error::Busy(_) => status::BUSY,
            Error::Quota(_) => status::QUOTA,
            Error::Stalled(_) => status::STALLED,
            Error::Status(_, s) => *s,
            _ => return None,
        })
    }

    /// A short stable name of the kind of error (the CLI's `--json` and the tests use it).
    pub fn kind(&self) -> &'static str {
        match self {
            Error::Invalid(_) => "invalid",
            Error::Unaligned(_) => "unaligned",
            Error::Fault(_) => "fault",
            Error::Denied(_) => "denied",
            Error::NoMemory(_) => "no-memory",
            Error::NoPool(_) => "no-pool",
            Error::NoDaemon(_) => "no-daemon",
            Error::ExecFailed { .. } => "exec-failed",
            Error::NoChild(_) => "no-child",
            Error::Busy(_) => "busy",
            Error::Quota(_) => "quota",
            Error::Stalled(_) => "stalled",
            Error::Status(..) => "status",
            Error::Timeout { .. } => "timeout",
            Error::Argument(_) => "argument",
            Error::Mailbox(_) => "mailbox",
            Error::Io(_) => "io",
        }
    }
}
