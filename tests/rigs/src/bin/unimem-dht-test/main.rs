//! `unimem-dht-test`: the DHT checks of the cluster tests and the benchmark that `unimem-dht`
//! used to carry: the concurrency checker (`check`, `check-final`), another tree's denial
//! (`denied`), a lock held on purpose (`hold`: a writer that stops or dies) and the seed's
//! workloads (`bench`). They verify, inject faults and measure, which no operator of a real
//! cluster runs, so they live here, outside the installed tools. The subcommands keep their
//! former names and the global options `--tree`, `--tree-socket` and `--timeout-ms`; how
//! handles and tables open is `dht::cli`, shared with `unimem-dht`.

mod bench;
mod check;

use anyhow::Result;
use clap::{Parser, Subcommand};
use dht::cli::Ctx;
use gsas::cli::{parse_u64, HandleArgs};
use std::time::{Duration, Instant};

/// Test rig: checks and benchmarks of the distributed hash table on GSAS.
#[derive(Parser)]
#[command(version, after_help = dht::cli::TABLE_HELP)]
struct Cli {
    #[command(flatten)]
    handle: HandleArgs,
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Takes the lock of KEY's entry and keeps it for SECONDS (default: until killed), then
    /// releases it: shows what a writer that stops (SIGSTOP: others wait, then fail with
    /// EBUSY) or dies (the next operation breaks its lock) does to the others.
    Hold {
        #[arg(value_parser = parse_u64)]
        root: u64,
        #[arg(value_parser = parse_u64)]
        key: u64,
        #[arg(long)]
        seconds: Option<u64>,
    },
    /// The concurrency checker: threads put, get and delete, then the history is verified
    /// (exit status 1 on any violation).
    Check(check::Check),
    /// After every `check` process is done: the keys they all shared hold the last write of
    /// one of their threads (from their `--last-writes` files; exit status 1 otherwise).
    CheckFinal(check::CheckFinal),
    /// Tries every operation on a table from this process's tree, given the table's layout
    /// (`stats` prints it): succeeds only if every one is denied.
    Denied(check::Denied),
    /// Operations per second of the seed's workloads (gets of a prefilled table, puts from
    /// empty, 80/20 and 50/50 put/get).
    Bench(bench::Bench),
}

fn main() {
    let cli = Cli::parse();
    gsas::cli::main_with("unimem-dht-test", || run(cli))
}

fn run(cli: Cli) -> Result<i32> {
    let ctx = Ctx(cli.handle.ctx()?);
    match cli.cmd {
        Cmd::Hold { root, key, seconds } => hold(&ctx, root, key, seconds),
        Cmd::Check(c) => check::run(&ctx, c),
        Cmd::CheckFinal(c) => check::check_final(&ctx, c),
        Cmd::Denied(d) => check::denied(&ctx, d),
        Cmd::Bench(b) => bench::run(&ctx, b),
    }
}

/// `hold`: the lock of KEY's entry, kept for SECONDS (or until killed), then released.
fn hold(ctx: &Ctx, root: u64, key: u64, seconds: Option<u64>) -> Result<i32> {
    let t = ctx.open(root)?;
    let a = t.hold(key)?;
    let g = t.gsas();
    println!(
        "held key {key:#x}: entry {a:#x} locked by node {} interface {}",
        g.node(),
        g.iface()
    );
    let wait = seconds.map_or(Duration::MAX, Duration::from_secs);
    let t0 = Instant::now();
    while t0.elapsed() < wait {
        std::thread::sleep(Duration::from_millis(200).min(wait - t0.elapsed()));
    }
    t.release(key)?;
    println!("released key {key:#x}");
    Ok(0)
}
