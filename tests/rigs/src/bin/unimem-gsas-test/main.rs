//! `unimem-gsas-test`: the GSAS checks of the cluster tests and the benchmarks that
//! `unimem-gsas` used to carry: exact Fetch&Add sums, torn reads, every operation, protection,
//! mappings, the bad-input matrix and remoteFork (`check ...`), the latency of one operation
//! (`bench`) and the throughput of many threads (`throughput`). They probe corner cases and
//! measure, which no operator of a real cluster runs, so they live here, outside the installed
//! tools. The subcommands keep their former names and the global options `--tree`,
//! `--tree-socket` and `--timeout-ms` (gsas::cli::HandleArgs, shared with `unimem-gsas`).

mod bench;
mod check;
mod checks;
mod fork;
mod map;
mod map_hold;
mod mapped;
mod throughput;

use anyhow::Result;
use clap::{Parser, Subcommand};
use gsas::cli::{Ctx, HandleArgs};
use std::time::Duration;

/// Test rig: checks and benchmarks of GSAS, the global shared address space.
#[derive(Parser)]
#[command(
    version,
    after_help = gsas::cli::ADDRESS_HELP
)]
struct Cli {
    #[command(flatten)]
    handle: HandleArgs,
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Checks for the acceptance tests (exit status 1 if a check fails).
    #[command(subcommand)]
    Check(check::Check),
    /// Latency of an operation against a home node: repetitions, median.
    Bench(bench::Bench),
    /// Operations per second of threads applying one operation for a fixed time, to one
    /// variable or to variables picked at random on several nodes.
    Throughput(throughput::Throughput),
    /// Map one GSAS page of this node (another tree's, by its grant) and keep reading it.
    MapHold(map_hold::MapHold),
}

fn main() {
    let cli = Cli::parse();
    gsas::cli::main_with("unimem-gsas-test", || {
        let ctx = cli.handle.ctx()?;
        match cli.cmd {
            Cmd::Check(c) => check::run(&ctx, c),
            Cmd::Bench(b) => bench::run(&ctx, b),
            Cmd::Throughput(t) => throughput::run(&ctx, t),
            Cmd::MapHold(m) => map_hold::run(&ctx, m),
        }
    })
}

/// Arrives at the barrier word `b` and waits (up to 120 s) until `parties` have: processes
/// started one after the other on several nodes then run at the same time (`check faa-sum`,
/// `throughput`).
fn wait_barrier(ctx: &Ctx, b: u64, parties: u64) -> Result<()> {
    gsas::measure::barrier(&ctx.open()?, b, parties, Duration::from_secs(120))
}
