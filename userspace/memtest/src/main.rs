//! `unimem-memtest`: writes a seeded pattern to every byte of an anonymous memory area (which
//! may be larger than RAM, so it lands in swap), then reads every byte back and verifies it.
//! Exits 1 at the first wrong byte. The swap acceptance tests run it on the borrowing node.

use anyhow::{bail, Result};
use clap::{CommandFactory, Parser};
use serde_json::{json, Value};
use std::io::{IsTerminal, Write};
use std::time::Instant;

#[derive(Parser)]
#[command(
    version,
    about = "Fill N MiB with a pattern and verify every byte (a swap workload)",
    after_help = "--json keys: mib, bytes (the area's size), passes (asked for), seed, \
compressible, hot_mib, seconds (the whole run), mib_per_s (MiB written plus MiB verified per \
second spent writing and verifying), errors (0, or 1: a wrong byte ends the run), error (its \
message, or null), results (one object per pass completed: pass, write_s, hot_sweeps, hot_s, \
verify_s)."
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
    /// Print one JSON object at the end instead of the lines per pass (keys below), also when a
    /// wrong byte ends the run (then with errors 1; the message is on stderr too and the exit
    /// status is still 1).
    #[arg(long)]
    json: bool,
    /// Show progress on stderr (pass and percent written / verified, at most once a second):
    /// rewritten in place on a terminal, one line per update otherwise; the default when stderr
    /// is a terminal. Stdout is the same either way.
    #[arg(long)]
    progress: bool,
}

/// Percent done on stderr, at most once a second, when enabled: rewritten in place on a
/// terminal, one line per update otherwise (a log file gets no control characters).
struct Progress {
    on: bool,
    terminal: bool,
    last: Instant,
}

impl Progress {
    fn new(on: bool, terminal: bool) -> Self {
        Self {
            on,
            terminal,
            last: Instant::now(),
        }
    }

    /// Called every `CHUNK` words: `done` of `total` words of `what` in pass `pass`.
    fn at(&mut self, pass: u32, what: &str, done: usize, total: usize) {
        if self.on && self.last.elapsed().as_secs() >= 1 {
            let pct = done.min(total) * 100 / total.max(1);
            if self.terminal {
                eprint!("\rpass {pass} {what}: {pct}%   ");
            } else {
                eprintln!("pass {pass} {what}: {pct}%");
            }
            self.last = Instant::now();
        }
    }

    fn end(&self) {
        if self.on && self.terminal {
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
    if args.hot_mib > args.mib {
        bail!(
            "--hot-mib {} is larger than --mib {}",
            args.hot_mib,
            args.mib
        );
    }
    let terminal = std::io::stderr().is_terminal();
    let mut progress = Progress::new(args.progress || terminal, terminal);
    let mut results = Vec::new();
    let start = Instant::now();
    let outcome = run(&args, &mut progress, &mut results);
    progress.end();
    if args.json {
        let summary = Summary {
            args: &args,
            seconds: start.elapsed().as_secs_f64(),
            results,
            error: outcome.as_ref().err().map(|e| format!("{e:#}")),
        };
        println!("{}", summary.json());
    }
    outcome
}

/// The passes: write, hold, hot part, verify. Each completed pass is added to `results`;
/// the first wrong byte ends the run with an error.
fn run(args: &Args, progress: &mut Progress, results: &mut Vec<PassResult>) -> Result<()> {
    let words = args.mib * (1 << 20) / 8;
    let mut area = vec![0u64; words];
    for pass in 0..args.passes {
        let seed = args.seed ^ u64::from(pass) << 32;
        let t = Instant::now();
        let run = if args.compressible { 64 } else { 1 };
        for (c, chunk) in area.chunks_mut(CHUNK).enumerate() {
            for (j, w) in chunk.iter_mut().enumerate() {
                *w = word(seed, ((c * CHUNK + j) / run) as u64);
            }
            progress.at(pass, "writing", (c + 1) * CHUNK, words);
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
                    bail!(
                        "pass {pass}: byte offset {:#x}: found {w:#018x}, expected {want:#018x}",
                        i * 8
                    );
                }
            }
            progress.at(pass, "verifying", (c + 1) * CHUNK, words);
        }
        progress.end();
        let (write_s, verify_s) = (written.as_secs_f64(), verifying.elapsed().as_secs_f64());
        if !args.json {
            println!(
                "pass {pass}: wrote and verified {} MiB (write {write_s:.1} s, verify {verify_s:.1} s)",
                args.mib
            );
        }
        results.push(PassResult {
            pass,
            write_s,
            hot_sweeps: sweeps,
            hot_s,
            verify_s,
        });
    }
    Ok(())
}

/// One completed pass, in seconds.
#[derive(Clone, Debug, PartialEq)]
struct PassResult {
    pass: u32,
    write_s: f64,
    hot_sweeps: u64,
    hot_s: f64,
    verify_s: f64,
}

impl PassResult {
    fn json(&self) -> Value {
        json!({
            "pass": self.pass,
            "write_s": self.write_s,
            "hot_sweeps": self.hot_sweeps,
            "hot_s": self.hot_s,
            "verify_s": self.verify_s,
        })
    }
}

/// The `--json` object: the run's settings, what it took, and how it ended.
struct Summary<'a> {
    args: &'a Args,
    /// The whole run, holds included.
    seconds: f64,
    results: Vec<PassResult>,
    /// Why the run stopped early (a wrong byte), if it did.
    error: Option<String>,
}

impl Summary<'_> {
    /// MiB written plus MiB verified per second spent writing and verifying (0 before the
    /// first pass completed).
    fn mib_per_s(&self) -> f64 {
        let busy: f64 = self.results.iter().map(|r| r.write_s + r.verify_s).sum();
        if busy > 0.0 {
            (2 * self.args.mib * self.results.len()) as f64 / busy
        } else {
            0.0
        }
    }

    fn json(&self) -> Value {
        json!({
            "mib": self.args.mib,
            "bytes": (self.args.mib as u64) << 20,
            "passes": self.args.passes,
            "seed": self.args.seed,
            "compressible": self.args.compressible,
            "hot_mib": self.args.hot_mib,
            "seconds": self.seconds,
            "mib_per_s": self.mib_per_s(),
            "errors": u32::from(self.error.is_some()),
            "error": self.error,
            "results": self.results.iter().map(PassResult::json).collect::<Vec<_>>(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(v: &Value) -> Vec<&str> {
        let mut k: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        k.sort_unstable();
        k
    }

    fn pass(pass: u32, write_s: f64, verify_s: f64) -> PassResult {
        PassResult {
            pass,
            write_s,
            hot_sweeps: 0,
            hot_s: 0.0,
            verify_s,
        }
    }

    #[test]
    fn json_summary_has_the_documented_keys() {
        let args = Args::parse_from(["unimem-memtest", "--mib", "4", "--passes", "2", "--json"]);
        let s = Summary {
            args: &args,
            seconds: 3.5,
            results: vec![pass(0, 0.5, 0.5), pass(1, 1.0, 2.0)],
            error: None,
        };
        let v = s.json();
        assert_eq!(
            keys(&v),
            [
                "bytes",
                "compressible",
                "error",
                "errors",
                "hot_mib",
                "mib",
                "mib_per_s",
                "passes",
                "results",
                "seconds",
                "seed"
            ]
        );
        assert_eq!(v["mib"], 4);
        assert_eq!(v["bytes"], 4 << 20);
        assert_eq!(v["passes"], 2);
        assert_eq!(v["errors"], 0);
        assert_eq!(v["error"], Value::Null);
        // 2 passes x 4 MiB written and verified in 4 s of writing and verifying.
        assert_eq!(v["mib_per_s"], 4.0);
        assert_eq!(
            keys(&v["results"][1]),
            ["hot_s", "hot_sweeps", "pass", "verify_s", "write_s"]
        );
        assert_eq!(v["results"][1]["pass"], 1);
        assert_eq!(v["results"][1]["verify_s"], 2.0);
    }

    #[test]
    fn json_summary_of_a_failed_run() {
        let args = Args::parse_from(["unimem-memtest", "--mib", "4", "--passes", "3", "--json"]);
        let s = Summary {
            args: &args,
            seconds: 1.0,
            results: vec![],
            error: Some("pass 0: byte offset 0x8: found 0x1, expected 0x2".into()),
        };
        let v = s.json();
        assert_eq!(v["errors"], 1);
        assert_eq!(
            v["error"],
            "pass 0: byte offset 0x8: found 0x1, expected 0x2"
        );
        assert_eq!(v["mib_per_s"], 0.0);
        assert_eq!(v["results"], json!([]));
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
