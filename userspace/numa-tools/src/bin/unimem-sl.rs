//! `unimem-sl`: service levels, the ratio of remote to local pages of a process group.

use anyhow::Result;
use clap::{CommandFactory, Parser, Subcommand};
use std::path::PathBuf;
use unimem_numa_tools::registry::DEFAULT_DIR;
use unimem_numa_tools::sl_commands::{self, Paths, RunOptions};

#[derive(Parser)]
#[command(
    version,
    about = "Service levels: run a process group with a set ratio of remote to local pages",
    long_about = "Service levels (seed 000, section 4.3): run a process group with a set ratio \
of remote to local pages, using the kernel's weighted interleave (Linux 6.9+). The weights are \
system-wide (/sys/kernel/mm/mempolicy/weighted_interleave/), so groups that need different \
weights on the same node cannot run at once; running groups are registered in \
/run/unimem/service-levels/<pgid>. Writing weights needs root."
)]
struct Args {
    #[command(subcommand)]
    cmd: Cmd,
    /// sysfs root (for tests).
    #[arg(
        long,
        env = "UNIMEM_SL_SYSFS",
        default_value = "/sys",
        hide = true,
        global = true
    )]
    sysfs: PathBuf,
    /// Registry directory (for tests).
    #[arg(long, env = "UNIMEM_SL_REGISTRY", default_value = DEFAULT_DIR, hide = true, global = true)]
    registry: PathBuf,
    /// procfs root (for tests).
    #[arg(
        long,
        env = "UNIMEM_SL_PROC",
        default_value = "/proc",
        hide = true,
        global = true
    )]
    proc: PathBuf,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run a command at a remote:local page ratio, as its own process group
    ///
    /// The command's new pages go remote:local in the given ratio (page by page, weighted
    /// interleave over the two nodes); children inherit the policy. The command runs in a new
    /// process group whose id is its pid, unless it already leads one (a job-control shell's
    /// job): then that group is the one registered.
    ///
    /// Example: `unimem-sl run --remote 1 --local 3 -- stress-ng --vm 1` puts a quarter of the
    /// pages on the remote node. Refuses while another live group needs different weights on
    /// the same nodes, unless --force.
    Run(RunOptions),
    /// Show where running groups' pages are
    ///
    /// For each registered running group (or only --pgid), the pages its processes have on
    /// the remote and the local node, from /proc/<pid>/numa_maps, in base pages. One line per
    /// group of key=value fields: pgid, ratio, remote_node, local_node, procs, remote_pages,
    /// local_pages, other_pages, remote_pct (of remote+local), target_pct. Registry entries
    /// of groups that have exited are removed.
    Show {
        /// Only this process group (also works for a group that is not registered).
        #[arg(long)]
        pgid: Option<i32>,
        /// A JSON array, one object per group with the same keys as the text.
        #[arg(long)]
        json: bool,
    },
    /// Print the weighted-interleave weights
    ///
    /// `auto=<bool>` (Linux 6.16+), then `node<N>=<weight>` per node with memory.
    Weights {
        /// One JSON object with the same keys as the text.
        #[arg(long)]
        json: bool,
    },
}

fn main() -> Result<()> {
    unimem_clidoc::generate_if_asked(Args::command, "1");
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    let a = Args::parse();
    let paths = Paths {
        sysfs: a.sysfs,
        registry: a.registry,
        proc: a.proc,
    };
    match a.cmd {
        Cmd::Run(o) => sl_commands::run(&paths, &o),
        Cmd::Show { pgid, json } => sl_commands::show(&paths, pgid, json),
        Cmd::Weights { json } => sl_commands::weights(&paths, json),
    }
}
