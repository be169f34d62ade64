//! Errors, one variant per OpenFAM `Fam_Error` code this crate raises, so the C API and the
//! daemon's answers carry the numbers OpenFAM programs test for ([`FamError::code`]).

use thiserror::Error;

/// OpenFAM's `Fam_Error` numbers, as `include/fam/fam_exception.h` of the OpenFAM/OpenFAM
/// repository numbers them at commit 2dfb164 (2024-09-16, after release 3.1). Releases before
/// `FAM_ERR_NOT_CREATED` and `FAM_ERR_NO_SPACE` were added numbered the codes after
/// `FAM_ERR_SHM` differently (`FAM_ERR_NOTFOUND` was 7): these follow the current header.
/// Only the codes this crate raises are listed (the store's and the client library's).
pub mod code {
    /// `FAM_NO_ERROR`
    pub const NO_ERROR: i32 = 0;
    /// `FAM_ERR_UNKNOWN`
    pub const UNKNOWN: i32 = 1;
    /// `FAM_ERR_NOPERM`
    pub const NOPERM: i32 = 2;
    /// `FAM_ERR_TIMEOUT`
    pub const TIMEOUT: i32 = 3;
    /// `FAM_ERR_INVALID`
    pub const INVALID: i32 = 4;
    /// `FAM_ERR_LIBFABRIC`
    pub const LIBFABRIC: i32 = 5;
    /// `FAM_ERR_NOT_CREATED`
    pub const NOT_CREATED: i32 = 7;
    /// `FAM_ERR_NOTFOUND`
    pub const NOTFOUND: i32 = 8;
    /// `FAM_ERR_ALREADYEXIST`
    pub const ALREADYEXIST: i32 = 9;
    /// `FAM_ERR_ALLOCATOR`
    pub const ALLOCATOR: i32 = 10;
    /// `FAM_ERR_RPC`
    pub const RPC: i32 = 11;
    /// `FAM_ERR_OUTOFRANGE`
    pub const OUTOFRANGE: i32 = 13;
    /// `FAM_ERR_NO_SPACE`
    pub const NO_SPACE: i32 = 14;
    /// `FAM_ERR_NULLPTR`
    pub const NULLPTR: i32 = 15;
    /// `FAM_ERR_UNIMPL`
    pub const UNIMPL: i32 = 16;
    /// `FAM_ERR_RESOURCE`
    pub const RESOURCE: i32 = 17;
    /// `FAM_ERR_INVALIDOP`
    pub const INVALIDOP: i32 = 18;
    /// `FAM_ERR_METADATA`
    pub const METADATA: i32 = 21;
    /// `FAM_ERR_NAME_TOO_LONG`
    pub const NAME_TOO_LONG: i32 = 23;
    /// `FAM_BACKUP_NOT_CREATED`
    pub const BACKUP_NOT_CREATED: i32 = 28;
    /// `FAM_BACKUP_NOTFOUND`
    pub const BACKUP_NOTFOUND: i32 = 29;
}

/// What went wrong, with a sentence saying on what. The variant is the OpenFAM error class.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum FamError {
    /// The caller's credentials do not allow the operation (`FAM_ERR_NOPERM`).
    #[error("permission denied: {0}")]
    NoPerm(String),
    /// A malformed argument: size 0, mode bits beyond 0o777, an empty or NUL-holding name
    /// (`FAM_ERR_INVALID`).
    #[error("invalid argument: {0}")]
    Invalid(String),
    /// The region cannot be made with these attributes here, e.g. persistent memory, which
    /// unimem does not lend (`FAM_ERR_NOT_CREATED`, OpenFAM's answer when the requested
    /// memory type has no server).
    #[error("not created: {0}")]
    NotCreated(String),
    /// No region or item of that name or id (`FAM_ERR_NOTFOUND`).
    #[error("not found: {0}")]
    NotFound(String),
    /// A region, or an item in the same region, already has that name
    /// (`FAM_ERR_ALREADYEXIST`).
    #[error("already exists: {0}")]
    AlreadyExist(String),
    /// The page allocator failed otherwise than for lack of memory, or answered nonsense
    /// (`FAM_ERR_ALLOCATOR`).
    #[error("allocator error: {0}")]
    Allocator(String),
    /// A value outside what is allowed, e.g. shrinking a region below the bytes its items hold,
    /// or a size that overflows when rounded to pages (`FAM_ERR_OUTOFRANGE`).
    #[error("out of range: {0}")]
    OutOfRange(String),
    /// The region's size, or a lender's memory, cannot hold the item (`FAM_ERR_NO_SPACE`).
    #[error("no space: {0}")]
    NoSpace(String),
    /// A requested feature unimem does not implement, e.g. RAID redundancy
    /// (`FAM_ERR_UNIMPL`).
    #[error("not implemented: {0}")]
    Unimpl(String),
    /// A resource the operation needs is missing, e.g. no lender nodes configured
    /// (`FAM_ERR_RESOURCE`).
    #[error("no resource: {0}")]
    Resource(String),
    /// The metadata file cannot be read, written or trusted (`FAM_ERR_METADATA`).
    #[error("metadata error: {0}")]
    Metadata(String),
    /// A region or item name longer than [`crate::meta::NAME_MAX`] bytes
    /// (`FAM_ERR_NAME_TOO_LONG`).
    #[error("name too long: {0}")]
    NameTooLong(String),
    /// A backup could not be written (`FAM_BACKUP_NOT_CREATED`).
    #[error("backup not created: {0}")]
    BackupNotCreated(String),
    /// No backup of that name (`FAM_BACKUP_NOTFOUND`).
    #[error("backup not found: {0}")]
    BackupNotFound(String),
    // The client library's own failures (the store never raises these).
    /// Something failed for a reason no other code names, e.g. a panic caught at the C ABI
    /// (`FAM_ERR_UNKNOWN`).
    #[error("{0}")]
    Unknown(String),
    /// `famd` or a memory node did not answer in time (`FAM_ERR_TIMEOUT`).
    #[error("timed out: {0}")]
    Timeout(String),
    /// The memory stack (GSAS, the mailbox) failed on the data path: OpenFAM's fabric error,
    /// the closest code it has (`FAM_ERR_LIBFABRIC`).
    #[error("memory access failed: {0}")]
    Libfabric(String),
    /// The control link to `famd` cannot be opened or broke (`FAM_ERR_RPC`).
    #[error("famd unreachable: {0}")]
    Rpc(String),
    /// A NULL pointer where one is needed (`FAM_ERR_NULLPTR`).
    #[error("null pointer: {0}")]
    NullPtr(String),
    /// A call in the wrong state, e.g. before `fam_initialize` (`FAM_ERR_INVALIDOP`).
    #[error("invalid operation: {0}")]
    InvalidOp(String),
    /// A failure `famd` answered: its `Fam_Error` number and message, passed on as they are.
    #[error("{message}")]
    Remote { code: i32, message: String },
}

impl FamError {
    /// OpenFAM's `Fam_Error` number for this error (see [`code`]).
    pub fn code(&self) -> i32 {
        match self {
            FamError::NoPerm(_) => code::NOPERM,
            FamError::Invalid(_) => code::INVALID,
            FamError::NotCreated(_) => code::NOT_CREATED,
            FamError::NotFound(_) => code::NOTFOUND,
            FamError::AlreadyExist(_) => code::ALREADYEXIST,
            FamError::Allocator(_) => code::ALLOCATOR,
            FamError::OutOfRange(_) => code::OUTOFRANGE,
            FamError::NoSpace(_) => code::NO_SPACE,
            FamError::Unimpl(_) => code::UNIMPL,
            FamError::Resource(_) => code::RESOURCE,
            FamError::Metadata(_) => code::METADATA,
            FamError::NameTooLong(_) => code::NAME_TOO_LONG,
            FamError::BackupNotCreated(_) => code::BACKUP_NOT_CREATED,
            FamError::BackupNotFound(_) => code::BACKUP_NOTFOUND,
            FamError::Unknown(_) => code::UNKNOWN,
            FamError::Timeout(_) => code::TIMEOUT,
            FamError::Libfabric(_) => code::LIBFABRIC,
            FamError::Rpc(_) => code::RPC,
            FamError::NullPtr(_) => code::NULLPTR,
            FamError::InvalidOp(_) => code::INVALIDOP,
            FamError::Remote { code, .. } => *code,
        }
    }
}

/// Results of this crate.
pub type Result<T> = std::result::Result<T, FamError>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_openfams() {
        let s = String::new;
        let table = [
            (FamError::NoPerm(s()), 2),
            (FamError::Invalid(s()), 4),
            (FamError::NotCreated(s()), 7),
            (FamError::NotFound(s()), 8),
            (FamError::AlreadyExist(s()), 9),
            (FamError::Allocator(s()), 10),
            (FamError::OutOfRange(s()), 13),
            (FamError::NoSpace(s()), 14),
            (FamError::Unimpl(s()), 16),
            (FamError::Resource(s()), 17),
            (FamError::Metadata(s()), 21),
            (FamError::NameTooLong(s()), 23),
            (FamError::BackupNotCreated(s()), 28),
            (FamError::BackupNotFound(s()), 29),
            (FamError::Unknown(s()), 1),
            (FamError::Timeout(s()), 3),
            (FamError::Libfabric(s()), 5),
            (FamError::Rpc(s()), 11),
            (FamError::NullPtr(s()), 15),
            (FamError::InvalidOp(s()), 18),
            (
                FamError::Remote {
                    code: 29,
                    message: s(),
                },
                29,
            ),
        ];
        for (e, c) in table {
            assert_eq!(e.code(), c, "{e:?}");
        }
    }

    #[test]
    fn wire_statuses_are_these_codes() {
        // famd's protocol (unimem_wire::fam) answers undecodable requests with these.
        use unimem_wire::fam::status;
        assert_eq!(status::OK, code::NO_ERROR);
        assert_eq!(status::INVALID, code::INVALID);
        assert_eq!(status::UNIMPL, code::UNIMPL);
        assert_eq!(status::NAME_TOO_LONG, code::NAME_TOO_LONG);
        assert_eq!(unimem_wire::fam::NAME_MAX, crate::meta::NAME_MAX);
    }

    #[test]
    fn message_says_class_and_detail() {
        let e = FamError::NotFound("region \"r\"".into());
        assert_eq!(e.to_string(), "not found: region \"r\"");
    }
}
