//! `set_mempolicy(2)` with `MPOL_WEIGHTED_INTERLEAVE`, which libnuma 2.0.16 does not wrap.

use anyhow::{ensure, Result};
use nix::errno::Errno;
use nix::libc::{self, c_long, c_ulong};

/// `MPOL_WEIGHTED_INTERLEAVE` of `<linux/mempolicy.h>` (Linux 6.9+).
pub const MPOL_WEIGHTED_INTERLEAVE: c_long = 6;

const BITS: usize = c_ulong::BITS as usize;

/// The kernel's nodemask layout: bit n of word n / BITS.
pub fn nodemask(nodes: &[u32]) -> Vec<c_ulong> {
    let max = nodes.iter().copied().max().unwrap_or(0) as usize;
    let mut mask = vec![0; max / BITS + 1];
    for &n in nodes {
        mask[n as usize / BITS] |= 1 << (n as usize % BITS);
    }
    mask
}

/// `set_mempolicy(mode, nodes)` for the calling thread.
fn set_mempolicy(mode: c_long, nodes: &[u32]) -> Result<(), Errno> {
    let mask = nodemask(nodes);
    // The kernel reads maxnode - 1 bits.
    let maxnode = (mask.len() * BITS + 1) as c_ulong;
    // SAFETY: `mask` holds `maxnode - 1` bits and outlives the call; the kernel only reads it.
    let rc = unsafe { libc::syscall(libc::SYS_set_mempolicy, mode, mask.as_ptr(), maxnode) };
    if rc == 0 {
        Ok(())
    } else {
        Err(Errno::last())
    }
}

/// Sets the calling thread's policy to weighted interleave over `nodes`. The policy is
/// inherited across fork and kept across exec.
pub fn set_weighted_interleave(nodes: &[u32]) -> Result<()> {
    ensure!(!nodes.is_empty(), "no nodes to interleave over");
    if let Err(e) = set_mempolicy(MPOL_WEIGHTED_INTERLEAVE, nodes) {
        let hint = match e {
            Errno::EINVAL => {
                ": the kernel lacks MPOL_WEIGHTED_INTERLEAVE (Linux 6.9+) or none of the \
                 nodes has memory this process may use"
            }
            _ => "",
        };
        anyhow::bail!("set_mempolicy(MPOL_WEIGHTED_INTERLEAVE, nodes {nodes:?}): {e}{hint}");
    }
    Ok(())
}

/// `MPOL_INTERLEAVE`, there since Linux 2.6.7.
const MPOL_INTERLEAVE: c_long = 3;

/// Whether this kernel lets the process use weighted interleave over `nodes`; `Err` says why
/// not. It tries the call (a kernel without the mode refuses it with EINVAL, as it refuses
/// nodes the process may not use: plain interleave over the same nodes tells them apart), in a
/// thread of its own, since the policy is per thread and the caller's must stay as it is.
pub fn probe_weighted_interleave(nodes: &[u32]) -> Result<(), String> {
    let nodes = nodes.to_vec();
    std::thread::spawn(move || match set_weighted_interleave(&nodes) {
        Ok(()) => Ok(()),
        Err(_) if set_mempolicy(MPOL_INTERLEAVE, &nodes).is_ok() => Err(format!(
            "this kernel lacks MPOL_WEIGHTED_INTERLEAVE (Linux 6.9+): set_mempolicy refuses it, \
             plain interleave over nodes {nodes:?} works"
        )),
        Err(e) => Err(format!("{e:#}")),
    })
    .join()
    .unwrap_or_else(|_| Err("the probe thread panicked".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mask_layout() {
        assert_eq!(nodemask(&[0, 1]), vec![0b11]);
        assert_eq!(nodemask(&[1]), vec![0b10]);
        assert_eq!(nodemask(&[0, 65]), vec![1, 0b10]);
    }
}
