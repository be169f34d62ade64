//! `unimem-mbox`: exercise and measure `/dev/unimem_mailbox` from the command line. Used by
//! `tests/cluster/mailbox.sh` and `scripts/bench/mailbox.sh`; every subcommand prints
//! greppable results and exits non-zero when a check fails.

mod alloc_max;
mod bad_args;
mod baseline;
mod deadline;
mod echo;
mod flood;
mod forge;
mod gsas_raw;
mod kmsg;
mod latency;
mod verdict;
mod wait;

use anyhow::Result;
use clap::{CommandFactory, Parser, Subcommand};
use std::io::Write;
use unimem_mailbox::AllocInfo;
use wait::ModeArgs;

#[derive(Parser)]
#[command(
    version,
    about = "Exercise and measure the unimem mailbox (/dev/unimem_mailbox)",
    after_help = "Timed results are printed on one line starting with RESULT (key=value pairs).\n\
                  Latencies are half round trips in microseconds; msgs/s counts packets \
                  delivered in both directions."
)]
struct Cli {
    /// Give up (exit non-zero) after this many seconds of waiting; 0 = never.
    /// Default: 60 for commands that wait for a peer, never for serve/kserve/hold.
    #[arg(long, global = true)]
    timeout: Option<u32>,
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Allocate an interface and echo every packet back to its sender.
    Serve {
        /// Stop after echoing N packets (default: forever).
        #[arg(long)]
        count: Option<u64>,
        #[command(flatten)]
        mode: ModeArgs,
    },
    /// Send packets to a server and check every echo; print latency and rate.
    Ping(echo::PingArgs),
    /// Receive packets and check that the driver-written header names the given sender.
    ExpectSender(forge::ExpectArgs),
    /// Send payloads that imitate a header (node 9, iface 42, prot 4242).
    SendForged(forge::ForgeArgs),
    /// Set the protection id of an interface of this node (CAP_SYS_ADMIN).
    SetProt {
        #[arg(long)]
        iface: u32,
        #[arg(long)]
        prot: u32,
    },
    /// Allocate all 64 interfaces; the 65th must fail with EBUSY; freeing makes room again.
    AllocMax,
    /// Check that invalid requests fail with EINVAL / EPERM / ENOENT / EBUSY.
    BadArgs,
    /// Send to an interface that does not read until the driver answers EAGAIN.
    Flood(flood::FloodArgs),
    /// Allocate an interface and do not read until a file appears; then drain and count.
    Hold(flood::HoldArgs),
    /// Ring a node's mailbox doorbell COUNT times with KICK (queuing nothing); prints how long
    /// it took (the driver's doorbell_rate bounds the rate).
    Kick(flood::KickArgs),
    /// Bind a kernel-message service and print (optionally echo) every 64-bit message.
    Kserve(kmsg::KserveArgs),
    /// Send 64-bit kernel messages to a node's service and check the echoes.
    Kping(kmsg::KpingArgs),
    /// Allocate an interface, print who this file is, and exit.
    Info,
    /// Print the driver's debugfs statistics (per interface and service; root, debugfs).
    Stats {
        /// Instead, the node's totals from /sys/kernel/unimem_mailbox as one JSON object:
        /// node, nodes, interfaces_allocated, packets_{sent,received,rejected,dropped},
        /// malformed, resynced, messages_{sent,received,rejected,dropped}.
        #[arg(long)]
        json: bool,
    },
    /// Ping-pong over a pipe and over eventfds between two threads of this process.
    BenchBaseline(baseline::BaselineArgs),
    /// Send raw requests to a node's GSAS atomic service and print the response slots
    /// (tests of unimem_gsas.ko without the GSAS library).
    GsasRaw(gsas_raw::GsasRawArgs),
}

fn main() {
    unimem_clidoc::generate_if_asked(Cli::command, "1");
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")).init();
    let cli = Cli::parse();
    if let Err(e) = run(cli) {
        eprintln!("FAIL: {e:#}");
        std::process::exit(1);
    }
}

fn run(cli: Cli) -> Result<()> {
    // Commands that wait on another process get a default limit so a missing peer ends in a
    // clear message rather than a test-harness kill.
    let waits_for_peer = matches!(
        cli.cmd,
        Cmd::Ping(_)
            | Cmd::ExpectSender(_)
            | Cmd::SendForged(_)
            | Cmd::Kping(_)
            | Cmd::BadArgs
            | Cmd::GsasRaw(_)
    );
    deadline::arm(cli.timeout.unwrap_or(if waits_for_peer { 60 } else { 0 }))?;
    match cli.cmd {
        Cmd::Serve { count, mode } => echo::serve(count, mode.mode()),
        Cmd::Ping(a) => echo::ping(&a),
        Cmd::ExpectSender(a) => forge::expect_sender(&a),
        Cmd::SendForged(a) => forge::send_forged(&a),
        Cmd::SetProt { iface, prot } => forge::set_prot(iface, prot),
        Cmd::AllocMax => alloc_max::run(),
        Cmd::BadArgs => bad_args::run(),
        Cmd::Flood(a) => flood::flood(&a),
        Cmd::Kick(a) => flood::kick(&a),
        Cmd::Hold(a) => flood::hold(&a),
        Cmd::Kserve(a) => kmsg::kserve(&a),
        Cmd::Kping(a) => kmsg::kping(&a),
        Cmd::Info => {
            let mb = unimem_mailbox::Mailbox::open()?;
            print_identity(&mb.alloc()?);
            Ok(())
        }
        Cmd::Stats { json: false } => {
            print!("{}", unimem_mailbox::stats::read()?);
            Ok(())
        }
        Cmd::Stats { json: true } => {
            use unimem_mailbox::stats::{counters_in, counters_json, SYSFS_DIR};
            let c = counters_in(std::path::Path::new(SYSFS_DIR)).map_err(|e| {
                anyhow::anyhow!("reading {SYSFS_DIR}: {e} (is unimem_mailbox loaded?)")
            })?;
            println!("{}", counters_json(&c));
            Ok(())
        }
        Cmd::BenchBaseline(a) => baseline::run(&a),
        Cmd::GsasRaw(a) => gsas_raw::run(&a),
    }
}

/// The first line of every command that allocates: tests read the interface id from it while
/// the command keeps running, so it is flushed at once.
pub fn print_identity(info: &AllocInfo) {
    println!(
        "iface {} node {} thread {} prot {}",
        info.iface, info.node, info.thread_id, info.prot_id
    );
    let _ = std::io::stdout().flush();
}
