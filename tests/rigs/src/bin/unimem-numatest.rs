//! `unimem-numatest`: the seed's libNUMA acceptance test (Table 2) against a remote node. A test
//! rig (tests/rigs, not installed: an acceptance test, not a tool of an operator); the test
//! itself is `unimem_numa_tools::numatest`.

use anyhow::Result;
use clap::{CommandFactory, Parser};
use unimem_numa_tools::numatest::{self, Options};

#[derive(Parser)]
#[command(
    version,
    about = "Acceptance test of the libNUMA calls on a remote-memory NUMA node",
    long_about = "Acceptance test of the libNUMA calls (seed 000, Table 2) on a remote-memory \
NUMA node. Steps: numa_available (node exists and has memory), numa_alloc_onnode (every page \
on the remote node), numa_alloc_interleaved (local and remote each get >= 30% of the pages; \
with n > 2 nodes with memory, >= 100/(2n)%), numa_move_pages (local -> remote -> local, every \
page), numa_migrate_pages (>= 90% of a local buffer moves to remote, then the process goes \
back). Each step prints `PASS <step>: <detail>` or `FAIL <step>: <detail>`, and data written \
before is verified after every move. Exits 1 if any step failed.",
    after_help = "With --json, one JSON object instead of the lines: remote, local, mib, passed \
(every step passed), steps (in order: step, result (PASS, FAIL or SKIP), detail)."
)]
struct Args {
    /// The remote-memory node under test.
    #[arg(long)]
    remote: i32,
    /// The local node (with CPUs) to compare and move against.
    #[arg(long, default_value_t = 0)]
    local: i32,
    /// Size of each test buffer in MiB.
    #[arg(long, default_value_t = 16)]
    mib: usize,
    /// Seed of the data pattern.
    #[arg(long, default_value_t = 0x5eed)]
    seed: u64,
    /// Print one JSON object at the end instead of a line per step (keys below); the exit
    /// status is the same.
    #[arg(long)]
    json: bool,
}

fn main() -> Result<()> {
    unimem_clidoc::generate_if_asked(Args::command, "1");
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    let a = Args::parse();
    let opts = Options {
        remote: a.remote,
        local: a.local,
        mib: a.mib,
        seed: a.seed,
    };
    let report = numatest::run(&opts, |step| {
        if !a.json {
            println!("{}", step.line());
        }
    })?;
    if a.json {
        println!("{}", report.json());
    }
    if !report.passed() {
        std::process::exit(1);
    }
    Ok(())
}
