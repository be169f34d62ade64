//! Who may do what to a region or an item: the caller's [`Creds`] against the object's owner,
//! group and POSIX-like mode, for one [`Access`].
//!
//! The rules follow OpenFAM's control path (its CIS and metadata service):
//! - finding a region or item by name, or its stat ([`Access::Lookup`]): the owner, or whoever
//!   the mode gives read;
//! - allocating an item in a region, destroying or resizing a region, deallocating an item
//!   ([`Access::Manage`]): the owner, or whoever the mode gives write;
//! - changing the mode ([`Access::ChangePerms`]): the owner only;
//! - reading or writing an item's bytes ([`Access::Read`], [`Access::Write`]): the mode alone.
//!
//! One difference: OpenFAM grants a permission when the owner, group *or* other bits that
//! match the caller grant it; here, as in POSIX, the first class that matches decides (owner,
//! else group, else other), so mode 0o077 keeps the owner out of the data. Administrators
//! ([`Creds::admin`]) pass every check, like root on a file.
//!
//! Resize is the owner's or a writer's here; OpenFAM asks the owner for the write bit too.

use std::fmt;

use crate::error::{FamError, Result};

/// Bits a mode may hold: owner, group and other rwx. Set-id and sticky bits mean nothing for
/// memory and are refused rather than stored.
pub const MODE_MASK: u32 = 0o777;

/// The caller, as the daemon learned it (its socket peer's credentials).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Creds {
    pub uid: u32,
    pub gid: u32,
    /// Passes every permission check (the daemon's choice: root, or `CAP_SYS_ADMIN`).
    pub admin: bool,
}

impl Creds {
    /// An ordinary user.
    pub fn user(uid: u32, gid: u32) -> Creds {
        Creds {
            uid,
            gid,
            admin: false,
        }
    }

    /// An administrator.
    pub fn admin(uid: u32, gid: u32) -> Creds {
        Creds {
            uid,
            gid,
            admin: true,
        }
    }
}

/// An operation's need, as OpenFAM's control path checks it (module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Find by name, stat: the owner, or the read bit.
    Lookup,
    /// Read the item's bytes: the read bit.
    Read,
    /// Write the item's bytes: the write bit.
    Write,
    /// Allocate in a region, destroy or resize it, deallocate an item: the owner, or the
    /// write bit.
    Manage,
    /// Change the mode: the owner only.
    ChangePerms,
}

impl fmt::Display for Access {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Access::Lookup => "look up",
            Access::Read => "read",
            Access::Write => "write",
            Access::Manage => "manage",
            Access::ChangePerms => "change the permissions of",
        })
    }
}

/// Something with an owner and a mode: a region or an item.
pub trait Owned {
    fn owner(&self) -> (u32, u32);
    fn mode(&self) -> u32;
    /// How error messages name it, e.g. `region "data" (id 3)`.
    fn describe(&self) -> String;
}

/// `mode` if it holds only [`MODE_MASK`] bits.
pub fn check_mode(mode: u32) -> Result<u32> {
    if mode & !MODE_MASK != 0 {
        return Err(FamError::Invalid(format!(
            "mode {mode:#o} has bits beyond {MODE_MASK:#o}"
        )));
    }
    Ok(mode)
}

/// Whether `creds` may do `access` to an object owned by `uid`:`gid` with `mode`.
pub fn allowed(creds: &Creds, uid: u32, gid: u32, mode: u32, access: Access) -> bool {
    if creds.admin {
        return true;
    }
    let owner = creds.uid == uid;
    // The caller's three bits: POSIX's class selection (module documentation).
    let rwx = if owner {
        (mode >> 6) & 7
    } else if creds.gid == gid {
        (mode >> 3) & 7
    } else {
        mode & 7
    };
    let (read, write) = (rwx & 4 != 0, rwx & 2 != 0);
    match access {
        Access::Lookup => owner || read,
        Access::Read => read,
        Access::Write => write,
        Access::Manage => owner || write,
        Access::ChangePerms => owner,
    }
}

/// [`allowed`] on `obj`, as a [`FamError::NoPerm`] naming the caller and the object.
pub fn check(creds: &Creds, obj: &impl Owned, access: Access) -> Result<()> {
    let (uid, gid) = obj.owner();
    if allowed(creds, uid, gid, obj.mode(), access) {
        Ok(())
    } else {
        Err(FamError::NoPerm(format!(
            "uid {} gid {} may not {access} {} (owner {uid}:{gid}, mode {:#o})",
            creds.uid,
            creds.gid,
            obj.describe(),
            obj.mode()
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OWNER: (u32, u32) = (1000, 100);

    fn may(creds: Creds, mode: u32, access: Access) -> bool {
        allowed(&creds, OWNER.0, OWNER.1, mode, access)
    }

    #[test]
    fn owner_bits_apply_to_the_owner() {
        let me = Creds::user(1000, 100);
        assert!(may(me, 0o600, Access::Read));
        assert!(may(me, 0o600, Access::Write));
        assert!(!may(me, 0o400, Access::Write));
        assert!(!may(me, 0o200, Access::Read));
    }

    #[test]
    fn group_bits_apply_to_the_group() {
        let mate = Creds::user(1001, 100);
        assert!(may(mate, 0o640, Access::Read));
        assert!(!may(mate, 0o640, Access::Write));
        assert!(may(mate, 0o660, Access::Write));
        assert!(
            !may(mate, 0o604, Access::Read),
            "other bits do not help the group"
        );
    }

    #[test]
    fn other_bits_apply_to_the_rest() {
        let stranger = Creds::user(2000, 200);
        assert!(!may(stranger, 0o660, Access::Read));
        assert!(may(stranger, 0o604, Access::Read));
        assert!(!may(stranger, 0o604, Access::Write));
        assert!(may(stranger, 0o606, Access::Write));
    }

    #[test]
    fn first_matching_class_decides_as_in_posix() {
        let me = Creds::user(1000, 100);
        assert!(!may(me, 0o077, Access::Read));
        assert!(!may(me, 0o077, Access::Write));
    }

    #[test]
    fn owner_may_look_up_and_manage_whatever_the_mode() {
        let me = Creds::user(1000, 999);
        assert!(may(me, 0, Access::Lookup));
        assert!(may(me, 0, Access::Manage));
        assert!(may(me, 0, Access::ChangePerms));
        let stranger = Creds::user(2000, 200);
        assert!(!may(stranger, 0o773, Access::Lookup));
        assert!(may(stranger, 0o774, Access::Lookup));
        assert!(!may(stranger, 0o775, Access::Manage));
        assert!(may(stranger, 0o776, Access::Manage));
    }

    #[test]
    fn only_the_owner_changes_permissions() {
        assert!(!may(Creds::user(1001, 100), 0o777, Access::ChangePerms));
        assert!(!may(Creds::user(2000, 200), 0o777, Access::ChangePerms));
    }

    #[test]
    fn admin_passes_every_check() {
        let root = Creds::admin(0, 0);
        for access in [
            Access::Lookup,
            Access::Read,
            Access::Write,
            Access::Manage,
            Access::ChangePerms,
        ] {
            assert!(may(root, 0, access), "{access}");
        }
    }

    #[test]
    fn modes_beyond_rwx_are_refused() {
        assert_eq!(check_mode(0o755), Ok(0o755));
        assert_eq!(check_mode(0o1777).map_err(|e| e.code()), Err(4));
        assert_eq!(check_mode(0o4755).map_err(|e| e.code()), Err(4));
        assert_eq!(check_mode(1 << 20).map_err(|e| e.code()), Err(4));
    }
}
