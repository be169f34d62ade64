// SPDX-License-Identifier: GPL-2.0
//! `/proc/unimem_numa` (seed 000 section 4.2): describe remote ranges to add or remove, and
//! show the topology.
//!
//! Commands (one per write): `add <lender> [<MiB>]`, `remove <lender>`, `remove all`.

use crate::{kram_borrow::Delivery, state::Numa};
use kernel::{mm::memory_tiers, numa, prelude::*, proc_fs::ProcFile, seq_file::SeqFile, seq_print};

pub(crate) struct NumaProc;

enum Command {
    Add { lender: u32, mib: Option<u32> },
    Remove { lender: Option<u32> },
}

fn number(word: &[u8]) -> Result<u32> {
    if word.is_empty() {
        return Err(EINVAL);
    }
    word.iter()
        .try_fold(0u32, |acc, &d| {
            let digit = char::from(d).to_digit(10)?;
            acc.checked_mul(10)?.checked_add(digit)
        })
        .ok_or(EINVAL)
}

fn parse(line: &[u8]) -> Result<Command> {
    let mut words = line
        .split(|b| b.is_ascii_whitespace())
        .filter(|w| !w.is_empty());
    let (verb, arg, extra, rest) = (words.next(), words.next(), words.next(), words.next());
    let cmd = match (verb, arg, extra, rest) {
        (Some(b"add"), Some(lender), mib, None) => Command::Add {
            lender: number(lender)?,
            mib: mib.map(number).transpose()?,
        },
        (Some(b"remove"), Some(b"all"), None, None) => Command::Remove { lender: None },
        (Some(b"remove"), Some(lender), None, None) => Command::Remove {
            lender: Some(number(lender)?),
        },
        _ => return Err(EINVAL),
    };
    Ok(cmd)
}

impl ProcFile for NumaProc {
    type Data = Numa;

    fn show(this: &Numa, m: &SeqFile) -> Result {
        let page_kib = kernel::page::PAGE_SIZE / 1024;
        // The remote node first: scripts look at the first line.
        let others = numa::possible_nodes().filter(|&nid| nid != this.nid);
        for nid in Iterator::chain(core::iter::once(this.nid), others) {
            let pages = numa::pages(nid);
            let kind = if nid == this.nid { "remote" } else { "local" };
            let cpus = if numa::has_cpus(nid) { "some" } else { "none" };
            seq_print!(
                m,
                "node {} {} cpus {} distance_from_0 {} managed_kib {} free_kib {}\n",
                nid,
                kind,
                cpus,
                numa::distance(0, nid).unwrap_or(0),
                pages.managed * page_kib,
                pages.free * page_kib
            );
        }
        seq_print!(
            m,
            "this_node {} block_mib {} offers_declined {} malformed {} acks {} revokes {} stray {}\n",
            this.info.node_id,
            this.block_size >> 20,
            this.tally.get(Delivery::Declined),
            this.tally.get(Delivery::Malformed),
            this.tally.get(Delivery::Ack),
            this.tally.get(Delivery::Revoke),
            this.tally.get(Delivery::Stray)
        );
        let regions = this.regions.lock();
        match this.adistance {
            Some(a) => seq_print!(
                m,
                "memory_type adistance {} dram {} given {}\n",
                a,
                memory_tiers::ADISTANCE_DRAM,
                if this.memtype.lock().is_some() {
                    "yes"
                } else {
                    "no"
                }
            ),
            None => seq_print!(m, "memory_type none\n"),
        }
        for r in regions.iter() {
            seq_print!(
                m,
                "range lender {} mib {} chunks {}+{} phys {:#x}-{:#x} node {} lease {}\n",
                r.lender,
                r.chunks,
                r.first_chunk,
                r.chunks,
                r.phys,
                r.phys + r.size() - 1,
                this.nid,
                if r.clock.is_revoked() {
                    "revoked"
                } else if r.clock.usable(this.epoch.now()) {
                    "valid"
                } else {
                    "lapsed"
                }
            );
        }
        Ok(())
    }

    fn write(this: &Numa, buf: &[u8]) -> Result<usize> {
        // Hot-adding or removing memory is for the administrator of the machine: uid 0 in a
        // container without CAP_SYS_ADMIN is not.
        crate::privilege::require_admin()?;
        let line = buf.strip_suffix(b"\n").unwrap_or(buf);
        let cmd = parse(line).inspect_err(|_| {
            pr_err!("/proc/unimem_numa: expected `add <lender> [<MiB>]`, `remove <lender>` or `remove all`\n");
        })?;
        match cmd {
            Command::Add { lender, mib } => this.add(lender, mib)?,
            Command::Remove {
                lender: Some(lender),
            } => this.remove(lender)?,
            Command::Remove { lender: None } => this.remove_all()?,
        }
        Ok(buf.len())
    }
}
