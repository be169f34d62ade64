//! `unimem-numabench`: memory benchmark kernels, one metric per output line, meant to run
//! under `numactl --membind=<node>` to compare local and remote memory. A test rig (tests/rigs,
//! not installed: a benchmark driver); the kernels are `unimem_numa_tools::bench`.

use anyhow::Result;
use clap::{CommandFactory, Parser, Subcommand};
use unimem_numa_tools::bench::{self, ChaseResult};

#[derive(Parser)]
#[command(
    version,
    about = "Memory bandwidth (STREAM) and latency (pointer chase) of the memory this process \
             gets; run it under `numactl --membind=<node>`",
    after_help = "--json keys: stream: mib, reps, copy_mb_per_s, scale_mb_per_s, add_mb_per_s, \
triad_mb_per_s (MB = 10^6 bytes), valid (always true: a failed verification exits 1); chase: \
ns_per_access, mib, steps, seed."
)]
struct Args {
    /// One JSON object instead of the metric lines (stream: mib, reps, copy_mb_per_s,
    /// scale_mb_per_s, add_mb_per_s, triad_mb_per_s, valid; chase: ns_per_access, mib, steps,
    /// seed).
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Bandwidth: STREAM copy/scale/add/triad, single-threaded
    ///
    /// Prints `stream <kernel> MB/s <best>` per kernel (MB = 10^6 bytes, STREAM's byte
    /// counts), then `stream valid 1` once the arrays verified (exits 1 otherwise).
    Stream {
        /// Size of each of the three f64 arrays in MiB.
        #[arg(long, default_value_t = 32)]
        mib: usize,
        /// Repetitions; the best time of each kernel counts.
        #[arg(long, default_value_t = 5)]
        reps: usize,
    },
    /// Latency: a pointer chase through 64-byte slots
    ///
    /// Dependent loads over a random single cycle through all slots (Sattolo's algorithm),
    /// checked to visit every slot. Prints `chase ns/access <average>`.
    Chase {
        /// Size of the slot array in MiB; make it well above the last-level cache.
        #[arg(long, default_value_t = 64)]
        mib: usize,
        /// Loads to time.
        #[arg(long, default_value_t = 2_000_000)]
        steps: u64,
        /// Seed of the random cycle.
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
}

fn main() -> Result<()> {
    unimem_clidoc::generate_if_asked(Args::command, "1");
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    let args = Args::parse();
    match args.cmd {
        Cmd::Stream { mib, reps } => {
            let r = bench::stream(mib, reps)?;
            if args.json {
                println!("{}", r.json(mib, reps));
                return Ok(());
            }
            for (kernel, mbs) in r.kernels() {
                println!("stream {kernel} MB/s {mbs:.1}");
            }
            println!("stream valid 1");
        }
        Cmd::Chase { mib, steps, seed } => {
            let ns = bench::chase(mib, steps, seed)?;
            if args.json {
                let r = ChaseResult {
                    ns_per_access: ns,
                    mib,
                    steps,
                    seed,
                };
                println!("{}", r.json());
            } else {
                println!("chase ns/access {ns:.1}");
            }
        }
    }
    Ok(())
}
