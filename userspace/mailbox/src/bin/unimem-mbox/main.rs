//! `unimem-mbox`: exercise and measure `/dev/unimem_mailbox` from the command line, as an
//! operator sees the mailbox work: an echo server and its ping, who an interface is, the
//! driver's statistics, and the administrator's set-prot. Every subcommand prints greppable
//! results and exits non-zero when a check fails. The forging, flooding and bad-argument
//! checks and the benchmarks of the tests are the test rig `unimem-mbox-test` (tests/rigs),
//! which `make install` does not ship; both share `unimem_mailbox::cli`.

mod echo;

use anyhow::Result;
use clap::{CommandFactory, Parser, Subcommand};
use unimem_mailbox::cli::deadline::TimeoutArg;
use unimem_mailbox::cli::print_identity;
use unimem_mailbox::cli::wait::ModeArgs;

#[derive(Parser)]
#[command(
    version,
    about = "Exercise and measure the unimem mailbox (/dev/unimem_mailbox)",
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
    /// Allocate an interface and echo every packet back to its sender.
    Serve {
        /// Stop after echoing N packets (default: forever).
        #[arg(long)]
        count: Option<u64>,
        #[command(flatten)]
        mode: ModeArgs,
        /// Print who sent each packet, as the sender's node sealed it (uid, gid; RECV_CREDS).
        /// Waits in the kernel (the wait mode is ignored).
        #[arg(long)]
        whois: bool,
    },
    /// Send packets to a server and check every echo; print latency and rate.
    Ping(echo::PingArgs),
    /// Set the protection id of an interface of this node (CAP_SYS_ADMIN).
    SetProt {
        #[arg(long)]
        iface: u32,
        #[arg(long)]
        prot: u32,
    },
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
}

fn main() {
    unimem_clidoc::generate_if_asked(Cli::command, "1");
    unimem_mailbox::cli::main_with(run);
}

fn run(cli: Cli) -> Result<()> {
    cli.timeout.arm(matches!(cli.cmd, Cmd::Ping(_)))?;
    match cli.cmd {
        Cmd::Serve { count, mode, whois } => echo::serve(count, mode.mode(), whois),
        Cmd::Ping(a) => echo::ping(&a),
        Cmd::SetProt { iface, prot } => {
            unimem_mailbox::Mailbox::open()?.set_prot(iface, prot)?;
            println!("iface {iface} prot {prot}");
            Ok(())
        }
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
    }
}
