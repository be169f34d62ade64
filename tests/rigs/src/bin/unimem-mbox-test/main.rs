//! `unimem-mbox-test`: the mailbox checks of the cluster tests and the benchmarks that
//! `unimem-mbox` used to carry: a forged header, a flooded ring, a held interface, doorbell
//! storms, every bad argument, all interfaces at once, kernel messages on the TEST service, raw
//! GSAS service requests and the pipe/eventfd baseline. They forge, flood and probe corner
//! cases, which no operator of a real cluster runs, so they live here, outside the installed
//! tools. The subcommands keep their former names; waiting, time limits, latency figures and
//! the identity line are `unimem_mailbox::cli`, shared with `unimem-mbox`.

mod alloc_max;
mod bad_args;
mod baseline;
mod flood;
mod forge;
mod gsas_raw;
mod kmsg;
mod verdict;

use anyhow::Result;
use clap::{Parser, Subcommand};
use unimem_mailbox::cli::deadline::TimeoutArg;

/// Test rig: checks and benchmarks of the unimem mailbox (/dev/unimem_mailbox).
#[derive(Parser)]
#[command(
    version,
    after_help = unimem_mailbox::cli::RESULT_HELP
)]
struct Cli {
    #[command(flatten)]
    timeout: TimeoutArg,
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Receive packets and check that the driver-written header names the given sender.
    ExpectSender(forge::ExpectArgs),
    /// Send payloads that imitate a header (node 9, iface 42, prot 4242).
    SendForged(forge::ForgeArgs),
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
    /// Ping-pong over a pipe and over eventfds between two threads of this process.
    BenchBaseline(baseline::BaselineArgs),
    /// Send raw requests to a node's GSAS atomic service and print the response slots
    /// (tests of unimem_gsas.ko without the GSAS library).
    GsasRaw(gsas_raw::GsasRawArgs),
}

fn main() {
    unimem_mailbox::cli::main_with(run);
}

fn run(cli: Cli) -> Result<()> {
    let waits_for_peer = matches!(
        cli.cmd,
        Cmd::ExpectSender(_) | Cmd::SendForged(_) | Cmd::Kping(_) | Cmd::BadArgs | Cmd::GsasRaw(_)
    );
    cli.timeout.arm(waits_for_peer)?;
    match cli.cmd {
        Cmd::ExpectSender(a) => forge::expect_sender(&a),
        Cmd::SendForged(a) => forge::send_forged(&a),
        Cmd::AllocMax => alloc_max::run(),
        Cmd::BadArgs => bad_args::run(),
        Cmd::Flood(a) => flood::flood(&a),
        Cmd::Kick(a) => flood::kick(&a),
        Cmd::Hold(a) => flood::hold(&a),
        Cmd::Kserve(a) => kmsg::kserve(&a),
        Cmd::Kping(a) => kmsg::kping(&a),
        Cmd::BenchBaseline(a) => baseline::run(&a),
        Cmd::GsasRaw(a) => gsas_raw::run(&a),
    }
}
