//! `unimem-memtest`: writes a seeded pattern to every byte of an anonymous memory area (which
//! may be larger than RAM, so it lands in swap), then reads every byte back and verifies it.
//! Exits 1 at the first wrong byte. The swap acceptance tests run it on the borrowing node.

use anyhow::{bail, Result};
use clap::{CommandFactory, Parser};
use serde_json::json;
use std::io::{IsTerminal, Write};
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
    /// Print one JSON object at the end instead of the lines per pass (keys: mib, passes, seed,
    /// compressible, hot_mib, seconds, results: per pass write_s, hot_sweeps, hot_s,
    /// verify_s). A wrong byte still ends the program with status 1 and a message on stderr.
    #[arg(long)]
    json: bool,
    /// Show progress on stderr (percent written / verified, at most once a second); the
    /// default when stderr is a terminal.
    #[arg(long)]
    progress: bool,
}

/// Percent done on stderr, at most once a second, when enabled.
struct Progress {
    on: bool,
    last: Instant,
}

impl Progress {
    fn new(on: bool) -> Self {
        Self {
            on,
            last: Instant::now(),
        }
    }

    /// Called every `CHUNK` words: `done` of `total` words of `what`.
    fn at(&mut self, what: &str, done: usize, total: usize) {
        if self.on && self.last.elapsed().as_secs() >= 1 {
            eprint!("\r{what}: {}%   ", done * 100 / total.max(1));
            self.last = Instant::now();
        }
    }

    fn end(&self) {
        if self.on {
            eprint!("\r\x1b[K");
        }
    }
}

/// Words between progress checks (1 MiB).
const CHUNK: usize = 1 << 17;

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
    let mut progress = Progress::new(args.progress || std::io::stderr().is_terminal());
    let mut results = Vec::new();
    let start = Instant::now();
    for pass in 0..args.passes {
        let seed = args.seed ^ u64::from(pass) << 32;
        let t = Instant::now();
        let run = if args.compressible { 64 } else { 1 };
        for (c, chunk) in area.chunks_mut(CHUNK).enumerate() {
            for (j, w) in chunk.iter_mut().enumerate() {
                *w = word(seed, ((c * CHUNK + j) / run) as u64);
            }
            progress.at("writing", (c + 1) * CHUNK, words);
        }
        progress.end();
        let written = t.elapsed();
        if let Some(flag) = &args.hold_until {
            let line = format!(
                "pass {pass}: written, holding until {} exists",
                flag.display()
            );
            // The test scripts wait for this line on stdout; with --json stdout is one object.
            if args.json {
                eprintln!("{line}");
            } else {
                println!("{line}");
            }
            std::io::stdout().flush()?;
            while !flag.exists() {
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
        }
        let (mut sweeps, mut hot_s) = (0, 0.0);
        if args.hot_seconds > 0 || args.hot_sweeps > 0 {
            let hot = if args.hot_sweeps > 0 {
                Hot::Sweeps(args.hot_sweeps)
            } else {
                Hot::Seconds(args.hot_seconds)
            };
            let from = words - args.hot_mib * (1 << 20) / 8;
            let busy = Instant::now();
            sweeps = hot_sweeps(&area, from, hot, |i| word(seed, (i / run) as u64))?;
            hot_s = busy.elapsed().as_secs_f64();
            if !args.json {
                println!(
                    "pass {pass}: hot part ({} MiB) checked {sweeps} times in {hot_s:.1} s",
                    args.hot_mib
                );
            }
        }
        let verifying = Instant::now();
        for (c, chunk) in area.chunks(CHUNK).enumerate() {
            for (j, w) in chunk.iter().enumerate() {
                let i = c * CHUNK + j;
                let want = word(seed, (i / run) as u64);
                if *w != want {
                    progress.end();
                    bail!(
                        "pass {pass}: byte offset {:#x}: found {w:#018x}, expected {want:#018x}",
                        i * 8
                    );
                }
            }
            progress.at("verifying", (c + 1) * CHUNK, words);
        }
        progress.end();
        let (write_s, verify_s) = (written.as_secs_f64(), verifying.elapsed().as_secs_f64());
        if !args.json {
            println!(
                "pass {pass}: wrote and verified {} MiB (write {write_s:.1} s, verify {verify_s:.1} s)",
                args.mib
            );
        }
        results.push(json!({
            "pass": pass,
            "write_s": write_s,
            "hot_sweeps": sweeps,
            "hot_s": hot_s,
            "verify_s": verify_s,
        }));
    }
    if args.json {
        println!("{}", summary(&args, start.elapsed().as_secs_f64(), results));
    }
    Ok(())
}

/// The `--json` object.
fn summary(args: &Args, seconds: f64, results: Vec<serde_json::Value>) -> serde_json::Value {
    json!({
        "mib": args.mib,
        "passes": args.passes,
        "seed": args.seed,
        "compressible": args.compressible,
        "hot_mib": args.hot_mib,
        "seconds": seconds,
        "results": results,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_summary_has_the_documented_keys() {
        let args = Args::parse_from(["unimem-memtest", "--mib", "4", "--json"]);
        let v = summary(&args, 1.5, vec![json!({"pass": 0, "write_s": 0.1})]);
        for key in [
            "mib",
            "passes",
            "seed",
            "compressible",
            "hot_mib",
            "seconds",
            "results",
        ] {
            assert!(v.get(key).is_some(), "missing {key}");
        }
        assert_eq!(v["mib"], 4);
        assert_eq!(v["results"][0]["pass"], 0);
    }

    #[test]
    fn hot_sweeps_catch_a_wrong_word() {
        let mut area: Vec<u64> = (0..1024).map(|i| word(1, i)).collect();
        assert_eq!(
            hot_sweeps(&area, 512, Hot::Sweeps(3), |i| word(1, i as u64)).unwrap(),
            3
        );
        area[700] ^= 1;
        assert!(hot_sweeps(&area, 512, Hot::Sweeps(1), |i| word(1, i as u64)).is_err());
        // A wrong word outside the hot part is not the hot check's business.
        assert!(hot_sweeps(&area, 701, Hot::Sweeps(1), |i| word(1, i as u64)).is_ok());
    }
}
