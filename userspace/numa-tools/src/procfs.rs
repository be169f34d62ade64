//! Finding a process group's members in procfs and adding up where their pages are.

use crate::numa_maps;
use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

/// The process group (field 5) of a `/proc/<pid>/stat` line. The command name (field 2) is
/// in parentheses and may itself hold spaces and parentheses, so fields are counted from the
/// last `)`.
pub fn pgrp(stat: &str) -> Option<i32> {
    let rest = &stat[stat.rfind(')')? + 1..];
    // state, ppid, pgrp
    rest.split_whitespace().nth(2)?.parse().ok()
}

/// Where the pages of a process group are.
#[derive(Debug, Default)]
pub struct GroupUsage {
    /// Processes in the group.
    pub procs: usize,
    /// Of those, how many had a `numa_maps` this user may not read (or that vanished).
    pub unreadable: usize,
    pub bytes_per_node: BTreeMap<u32, u64>,
}

/// Scans `<proc_root>/*/stat` for members of `pgid` and sums their `numa_maps`.
pub fn group_usage(proc_root: &Path, pgid: i32, base_page: u64) -> std::io::Result<GroupUsage> {
    let mut usage = GroupUsage::default();
    for entry in fs::read_dir(proc_root)? {
        let entry = entry?;
        let name = entry.file_name();
        if !name.to_string_lossy().bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        // Processes exit while we scan: a missing file just means one fewer member.
        let Ok(stat) = fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        if pgrp(&stat) != Some(pgid) {
            continue;
        }
        usage.procs += 1;
        match fs::read_to_string(entry.path().join("numa_maps")) {
            Ok(maps) => {
                for (node, b) in numa_maps::bytes_per_node(&maps, base_page) {
                    *usage.bytes_per_node.entry(node).or_insert(0) += b;
                }
            }
            Err(e) => {
                log::debug!("{}: {e}", entry.path().display());
                usage.unreadable += 1;
            }
        }
    }
    Ok(usage)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_comm() {
        assert_eq!(pgrp("1234 (bash) S 1 1234 1234 34816 ..."), Some(1234));
    }

    #[test]
    fn comm_with_spaces_and_parens() {
        let s = "4242 (my (evil) prog ) ) R 17 4000 17 0 -1 4194560 99 0 0 0";
        assert_eq!(pgrp(s), Some(4000));
    }

    #[test]
    fn malformed() {
        assert_eq!(pgrp("4242 no parens 1 2 3"), None);
        assert_eq!(pgrp("4242 (x) S 1"), None);
        assert_eq!(pgrp("4242 (x) S 1 abc"), None);
    }

    #[test]
    fn own_process_group() {
        let stat = fs::read_to_string("/proc/self/stat").unwrap();
        assert_eq!(pgrp(&stat), Some(nix::unistd::getpgrp().as_raw()));
    }

    #[test]
    fn scans_fake_procfs() {
        let dir = std::env::temp_dir().join(format!("unimem-procfs-test-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        for (pid, pg, maps) in [
            (
                10,
                10,
                Some("1000 default anon=3 N0=2 N1=1 kernelpagesize_kB=4\n"),
            ),
            (11, 10, None),
            (
                12,
                99,
                Some("1000 default anon=5 N1=5 kernelpagesize_kB=4\n"),
            ),
        ] {
            let p = dir.join(pid.to_string());
            fs::create_dir_all(&p).unwrap();
            fs::write(p.join("stat"), format!("{pid} (a b) S 1 {pg} 1 0")).unwrap();
            if let Some(m) = maps {
                fs::write(p.join("numa_maps"), m).unwrap();
            }
        }
        fs::create_dir_all(dir.join("self")).unwrap();
        let u = group_usage(&dir, 10, 4096).unwrap();
        fs::remove_dir_all(&dir).unwrap();
        assert_eq!((u.procs, u.unreadable), (2, 1));
        assert_eq!(u.bytes_per_node, [(0, 8192), (1, 4096)].into());
    }
}
