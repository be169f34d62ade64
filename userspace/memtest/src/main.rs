//! `unimem-memtest`: writes a seeded pattern to every byte of an anonymous memory area (which
//! may be larger than RAM, so it lands in swap), then reads every byte back and verifies it.
//! Exits 1 at the first wrong byte. The swap acceptance tests run it on the borrowing node.

use anyhow::{bail, Result};
use clap::{CommandFactory, Parser};
use std::time::Instant;

#[derive(Parser)]
#[command(
    version,
    about = "Fill N MiB with a pattern and verify every byte (a swap workload)"
)]
struct Args {
    /// Size of the area in MiB.
    #[arg(long)]
    mib: usize,
    /// Pattern seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Passes of write-then-verify.
    #[arg(long, default_value_t = 1)]
    passes: u32,
    /// Repeat each word over 512 bytes, so compressing swap (zram) sees data that compresses;
    /// pages still differ from each other, so a misplaced page is still caught.
    #[arg(long)]
    compressible: bool,
    /// After writing, print "written" and wait until this file exists before verifying: a test
    /// can move the pages meanwhile (NUMA removal, migration) and check nothing was lost.
    #[arg(long, value_name = "FILE")]
    hold_until: Option<std::path::PathBuf>,
    /// After writing, read and check the last N MiB (the hot part, written last: where an area
    /// larger than RAM spills to a slower NUMA node; the rest stays cold) for --hot-seconds
    /// before the full verification: a working set with a hot part, as memory tiering wants to
    /// see (hot pages promoted to fast memory, cold ones demoted to make room).
    #[arg(long, value_name = "MIB", default_value_t = 0)]
    hot_mib: usize,
    /// How long to keep the hot part busy.
    #[arg(
        long,
        value_name = "SECONDS",
        default_value_t = 0,
        requires = "hot_mib"
    )]
    hot_seconds: u64,
    /// Check the hot part this many times instead (a fixed amount of work, for benchmarks).
    #[arg(
        long,
        value_name = "N",
        default_value_t = 0,
        requires = "hot_mib",
        conflicts_with = "hot_seconds"
    )]
    hot_sweeps: u64,
}

/// How long the hot part is kept busy.
#[derive(Clone, Copy)]
enum Hot {
    Seconds(u64),
    Sweeps(u64),
}

/// Checks `area[from..]` against the pattern for as long as `hot` says; returns the sweeps.
fn hot_sweeps(area: &[u64], from: usize, hot: Hot, want: impl Fn(usize) -> u64) -> Result<u64> {
    let t = Instant::now();
    let mut sweeps = 0;
    while match hot {
        Hot::Seconds(s) => t.elapsed().as_secs() < s,
        Hot::Sweeps(n) => sweeps < n,
    } {
        for (i, w) in area.iter().enumerate().skip(from) {
            if *w != want(i) {
                bail!(
                    "hot part: byte offset {:#x}: found {w:#018x}, expected {:#018x}",
                    i * 8,
                    want(i)
                );
            }
        }
        sweeps += 1;
    }
    Ok(sweeps)
}

/// The 8-byte word at `index`: depends on the seed, the pass and its own position, so a page
/// swapped back from the wrong slot or a stale copy never verifies.
fn word(seed: u64, index: u64) -> u64 {
    let mut z = seed ^ index.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn main() -> Result<()> {
    unimem_clidoc::generate_if_asked(Args::command, "1");
    let args = Args::parse();
    let words = args.mib * (1 << 20) / 8;
    if args.hot_mib > args.mib {
        bail!(
            "--hot-mib {} is larger than --mib {}",
            args.hot_mib,
            args.mib
        );
    }
    let mut area = vec![0u64; words];
    for pass in 0..args.passes {
        let seed = args.seed ^ u64::from(pass) << 32;
        let t = Instant::now();
        let run = if args.compressible { 64 } else { 1 };
        for (i, w) in area.iter_mut().enumerate() {
            *w = word(seed, (i / run) as u64);
        }
        let written = t.elapsed();
        if let Some(flag) = &args.hold_until {
            println!(
                "pass {pass}: written, holding until {} exists",
                flag.display()
            );
            std::io::Write::flush(&mut std::io::stdout())?;
            while !flag.exists() {
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
        }
        if args.hot_seconds > 0 || args.hot_sweeps > 0 {
            let hot = if args.hot_sweeps > 0 {
                Hot::Sweeps(args.hot_sweeps)
            } else {
                Hot::Seconds(args.hot_seconds)
            };
            let from = words - args.hot_mib * (1 << 20) / 8;
            let busy = Instant::now();
            let n = hot_sweeps(&area, from, hot, |i| word(seed, (i / run) as u64))?;
            println!(
                "pass {pass}: hot part ({} MiB) checked {n} times in {:.1} s",
                args.hot_mib,
                busy.elapsed().as_secs_f64()
            );
        }
        let verifying = Instant::now();
        for (i, w) in area.iter().enumerate() {
            let want = word(seed, (i / run) as u64);
            if *w != want {
                bail!(
                    "pass {pass}: byte offset {:#x}: found {w:#018x}, expected {want:#018x}",
                    i * 8
                );
            }
        }
        println!(
            "pass {pass}: wrote and verified {} MiB (write {:.1} s, verify {:.1} s)",
            args.mib,
            written.as_secs_f64(),
            verifying.elapsed().as_secs_f64()
        );
    }
    Ok(())
}
