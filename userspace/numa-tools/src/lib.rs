//! NUMA tools for unimem's remote memory, which a guest sees as a CPU-less NUMA node:
//! `unimem-sl` (service levels: the ratio of remote to local pages of a process group), and
//! the logic of the test rigs `unimem-numatest` (the seed's libNUMA acceptance calls) and
//! `unimem-numabench` (STREAM and a pointer chase, run under `numactl --membind`), whose thin
//! binaries are in tests/rigs so that `make install` ships neither. The logic is here.

pub mod bench;
pub mod libnuma;
pub mod mempolicy;
pub mod numa_maps;
pub mod numatest;
pub mod pattern;
pub mod procfs;
pub mod registry;
pub mod service_level;
pub mod sl_commands;
pub mod topology;

/// The size of a base page, which `move_pages` and `numa_maps` count in.
pub fn page_size() -> usize {
    match nix::unistd::sysconf(nix::unistd::SysconfVar::PAGE_SIZE) {
        Ok(Some(n)) if n > 0 => n as usize,
        // POSIX requires the value; 4 KiB is x86_64's and arm64's usual base page.
        _ => 4096,
    }
}
