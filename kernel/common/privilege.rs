// SPDX-License-Identifier: GPL-2.0
//! Who may use the privileged interfaces of the unimem modules, decided in one place.
//!
//! Included at the crate root (`#[path = "../common/privilege.rs"] mod privilege;`) by
//! `unimem_eusrvmem`, `unimem_mailbox`, `unimem_numa` and `unimem_gsas`; needs nothing of its
//! includer.

use kernel::{
    prelude::*,
    security::{capable, locked_down, CAP_SYS_ADMIN, LOCKDOWN_DEV_MEM},
};

/// The system's administrator: `CAP_SYS_ADMIN`, which uid 0 in a container may lack.
pub(crate) fn require_admin() -> Result {
    if capable(CAP_SYS_ADMIN) {
        Ok(())
    } else {
        Err(EPERM)
    }
}

/// Raw access to memory of the fabric, as `/dev/mem` gives to RAM: the administrator, and only
/// while the kernel is not locked down against it.
#[allow(dead_code)] // `unimem_eusrvmem`'s only (`/dev/eusrvmem`).
pub(crate) fn require_dev_mem() -> Result {
    require_admin()?;
    locked_down(LOCKDOWN_DEV_MEM)
}
