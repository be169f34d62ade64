//! `unimem-gsas fork`: a refused remoteFork said in words. (The cluster check of remoteFork,
//! `check fork`, is the test rig's: `unimem-gsas-test check fork`, tests/rigs.)

use anyhow::anyhow;
use gsas::Error;
use nix::errno::Errno;

/// `unimem-gsas fork`'s error for a program `node` did not start: the refusals of its gsasd
/// (docs/GSAS.md, "remoteFork") said in words. The issuer gets the errno alone, so an EACCES
/// may also be exec's own (a program the user may not run there).
pub fn explain(e: Error, node: u16, prog: &str) -> anyhow::Error {
    match &e {
        Error::ExecFailed {
            errno: Errno::EACCES,
            ..
        } => anyhow!(
            "{prog} refused by node {node}'s fork policy (gsasd --policy; its log names the rule), or not executable there by this user: {e}"
        ),
        Error::ExecFailed {
            errno: Errno::EPERM,
            ..
        } if nix::unistd::geteuid().is_root() && !has_cap_sys_admin() => anyhow!(
            "root without CAP_SYS_ADMIN may not fork as root (node {node}'s gsasd refuses uid 0 unless the issuer has CAP_SYS_ADMIN): {e}"
        ),
        Error::ExecFailed {
            errno: Errno::EPERM,
            ..
        } => anyhow!(
            "node {node}'s gsasd could not run {prog} as this user (not running as root there?): {e}"
        ),
        _ => e.into(),
    }
}

/// Whether this process has `CAP_SYS_ADMIN` (bit 21) in its effective set.
fn has_cap_sys_admin() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("CapEff:"))
                .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        })
        .is_some_and(|caps| caps & (1 << 21) != 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use gsas::{addr, op};

    fn failed(errno: Errno) -> Error {
        Error::ExecFailed {
            req: gsas::Request {
                opcode: op::FORK,
                addr: addr(2, 1),
            },
            errno,
        }
    }

    #[test]
    fn refusals_are_explained() {
        let msg = explain(failed(Errno::EACCES), 2, "/usr/bin/x").to_string();
        assert!(
            msg.starts_with("/usr/bin/x refused by node 2's fork policy"),
            "{msg}"
        );
        let msg = explain(failed(Errno::EPERM), 2, "/usr/bin/x").to_string();
        let root_without = nix::unistd::geteuid().is_root() && !has_cap_sys_admin();
        assert_eq!(
            msg.starts_with("root without CAP_SYS_ADMIN may not fork as root"),
            root_without,
            "{msg}"
        );
        let msg = explain(failed(Errno::ENOENT), 2, "/usr/bin/x").to_string();
        assert!(msg.contains("could not be started on node 2"), "{msg}");
    }
}
