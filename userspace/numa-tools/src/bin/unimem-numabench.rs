//! `unimem-numabench`: memory benchmark kernels, one metric per output line, meant to run
//! under `numactl --membind=<node>` to compare local and remote memory.

use anyhow::Result;
use clap::{CommandFactory, Parser, Subcommand};
use serde_json::json;
use unimem_numa_tools::bench;

#[derive(Parser)]
#[command(
    version,
    about = "Memory bandwidth (STREAM) and latency (pointer chase) of the memory this process \
             gets; run it under `numactl --membind=<node>`"
)]
struct Args {
    /// One JSON object instead of the metric lines (stream: mib, reps, copy_mb_per_s,
    /// scale_mb_per_s, add_mb_per_s, triad_mb_per_s, valid; chase: ns_per_access, mib, steps).
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
            let kernels = [
                ("copy", r.copy),
                ("scale", r.scale),
                ("add", r.add),
                ("triad", r.triad),
            ];
            if args.json {
                println!("{}", stream_json(mib, reps, &kernels));
                return Ok(());
            }
            for (kernel, mbs) in kernels {
                println!("stream {kernel} MB/s {mbs:.1}");
            }
            println!("stream valid 1");
        }
        Cmd::Chase { mib, steps, seed } => {
            let ns = bench::chase(mib, steps, seed)?;
            if args.json {
                println!(
                    "{}",
                    json!({"ns_per_access": ns, "mib": mib, "steps": steps})
                );
            } else {
                println!("chase ns/access {ns:.1}");
            }
        }
    }
    Ok(())
}

/// The `stream --json` object: MB/s per kernel (`bench::stream` fails unless the arrays
/// verified, so `valid` is always true when printed).
fn stream_json(mib: usize, reps: usize, kernels: &[(&str, f64)]) -> serde_json::Value {
    let mut v = json!({"mib": mib, "reps": reps, "valid": true});
    for (k, mbs) in kernels {
        v[format!("{k}_mb_per_s")] = json!(mbs);
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_json_keys() {
        let v = stream_json(8, 2, &[("copy", 1.5), ("triad", 2.5)]);
        assert_eq!(v["copy_mb_per_s"], 1.5);
        assert_eq!(v["triad_mb_per_s"], 2.5);
        assert_eq!(v["valid"], true);
        assert_eq!(v["mib"], 8);
    }
}
