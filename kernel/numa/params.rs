// SPDX-License-Identifier: GPL-2.0
//! The checked values of the module parameters `node=` and `adistance=`, which need the
//! machine's NUMA topology to be read.

use crate::module_parameters;
use kernel::{mm::memory_tiers, numa, prelude::*};

/// The target node from `node=`, checked.
pub(crate) fn target_node() -> Result<i32> {
    let asked = *module_parameters::node.value_ref();
    if asked == -1 {
        let free = numa::possible_nodes().find(|&n| !numa::has_memory(n) && !numa::has_cpus(n));
        return free.ok_or_else(|| {
            pr_err!("node: no possible NUMA node without memory and CPUs to hold remote memory; give the VM one (QEMU: -numa node,nodeid=1) or set node=\n");
            ENODEV
        });
    }
    if !numa::is_possible(asked) {
        pr_err!(
            "node={} is not a possible NUMA node of this machine (firmware SRAT or device tree)\n",
            asked
        );
        return Err(EINVAL);
    }
    if numa::has_cpus(asked) {
        pr_err!(
            "node={} has CPUs: remote memory needs a CPU-less node\n",
            asked
        );
        return Err(EINVAL);
    }
    Ok(asked)
}

/// The abstract distance of the remote node's memory type (`adistance=`), or `None` for no type.
pub(crate) fn tier_adistance(nid: i32) -> Result<Option<i32>> {
    let dram = memory_tiers::ADISTANCE_DRAM;
    match *module_parameters::adistance.value_ref() {
        -1 => Ok(None),
        0 => {
            // Slower by the SLIT ratio (40 / 10 by default: four times DRAM's distance).
            let local = numa::distance(0, 0).filter(|&d| d > 0).unwrap_or(10);
            let remote = numa::distance(0, nid)
                .filter(|&d| d > local)
                .unwrap_or(local * 4);
            Ok(Some(dram.saturating_mul(remote) / local))
        }
        a if a > 0 => {
            if a < dram + memory_tiers::CHUNK_SIZE {
                pr_warn!(
                    "adistance={} is within DRAM's tier: nothing will be demoted to NUMA node {}\n",
                    a,
                    nid
                );
            }
            Ok(Some(a))
        }
        a => {
            pr_err!(
                "adistance={} is invalid (-1, 0 or a positive abstract distance)\n",
                a
            );
            Err(EINVAL)
        }
    }
}
