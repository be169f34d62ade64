//! `without-admin`: a command run by the same user without CAP_SYS_ADMIN, for the tests that
//! check what an unprivileged root (as in a container) is refused.

use anyhow::{bail, Context, Result};

/// `CAP_SYS_ADMIN` (linux/capability.h).
const CAP_SYS_ADMIN: u32 = 21;

pub fn exec(command: &[String]) -> Result<()> {
    use std::os::unix::process::CommandExt;
    let cap = nix::libc::c_ulong::from(CAP_SYS_ADMIN);
    // SAFETY: PR_CAPBSET_DROP takes a capability number and no pointers.
    if unsafe { nix::libc::prctl(nix::libc::PR_CAPBSET_DROP, cap, 0, 0, 0) } != 0 {
        bail!(
            "dropping CAP_SYS_ADMIN from the bounding set: {}",
            std::io::Error::last_os_error()
        );
    }
    let (prog, args) = command.split_first().context("no command")?;
    // `exec` returns only on failure; the new program's capabilities are computed from the
    // bounding set, which no longer has CAP_SYS_ADMIN.
    let err = std::process::Command::new(prog).args(args).exec();
    bail!("running {prog}: {err}")
}
