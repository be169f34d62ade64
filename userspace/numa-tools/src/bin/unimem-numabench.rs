//! `unimem-numabench`: memory benchmark kernels, one metric per output line, meant to run
//! under `numactl --membind=<node>` to compare local and remote memory.

use anyhow::Result;
use clap::{CommandFactory, Parser, Subcommand};
use unimem_numa_tools::bench;

#[derive(Parser)]
#[command(
    version,
    about = "Memory bandwidth (STREAM) and latency (pointer chase) of the memory this process \
             gets; run it under `numactl --membind=<node>`"
)]
struct Args {
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
    match Args::parse().cmd {
        Cmd::Stream { mib, reps } => {
            let r = bench::stream(mib, reps)?;
            for (kernel, mbs) in [
                ("copy", r.copy),
                ("scale", r.scale),
                ("add", r.add),
                ("triad", r.triad),
            ] {
                println!("stream {kernel} MB/s {mbs:.1}");
            }
            println!("stream valid 1");
        }
        Cmd::Chase { mib, steps, seed } => {
            println!("chase ns/access {:.1}", bench::chase(mib, steps, seed)?);
        }
    }
    Ok(())
}
