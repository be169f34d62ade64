//! Errors of DHT operations. The C API returns them as negative errno values
//! ([`Error::errno`]).

use nix::errno::Errno;
use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A GSAS operation failed (the service's status, a timeout, the mailbox).
    #[error(transparent)]
    Gsas(#[from] gsas::Error),
    /// A bad argument (nothing was changed).
    #[error("{0}")]
    Argument(String),
    /// The value that means "no value" (all ones) cannot be stored.
    #[error("the value {:#x} is the invalid value dhtGet returns for a missing key and cannot be stored", u128::MAX)]
    InvalidValue,
    /// The key's container has no free entry (128 keys share its first-level entry).
    #[error("key {key:#x}: its container at {container:#x} is full ({entries} keys share one first-level entry)")]
    Full {
        key: u64,
        container: u64,
        entries: u64,
    },
    /// An entry stayed locked (or kept changing) through every retry: a live writer holds it
    /// (stopped, or slow), or the holder's node did not answer whether it lives. A dead
    /// holder's lock is broken instead.
    #[error("entry at {addr:#x} still locked by node {node} interface {iface} after {tries} tries in {after:?}")]
    Busy {
        addr: u64,
        node: u16,
        iface: u16,
        tries: u32,
        after: Duration,
    },
    /// The table's memory holds something this library never writes (another node wrote it,
    /// or it is not a table). Nothing was changed.
    #[error("malformed table: {0}")]
    Corrupt(String),
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    /// The errno the C API returns (negated) and sets.
    pub fn errno(&self) -> Errno {
        match self {
            Error::Gsas(e) => e.errno(),
            Error::Argument(_) | Error::InvalidValue => Errno::EINVAL,
            Error::Full { .. } => Errno::EXFULL,
            Error::Busy { .. } => Errno::EBUSY,
            Error::Corrupt(_) => Errno::EBADMSG,
        }
    }
}
