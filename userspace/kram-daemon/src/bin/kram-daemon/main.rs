//! `kram-daemon`: lends 1 MiB chunks of this node's partition to the `unimem_kram` swap
//! drivers of other nodes (seed 000 §2.5.5-2.5.8). See docs/KRAM-DAEMON.md.

mod daemon;
mod logging;

use anyhow::{bail, Context, Result};
use clap::Parser;
use std::io::Read;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;
use unimem_wire::kram::{lent_range, CHUNK_SIZE, LENDABLE_OFFSET, MAX_CHUNKS};

/// Default `--log-file` (seed 000 §2.5.5).
pub const LOG_FILE: &str = "/var/log/kram-daemon.log";
/// Default `--socket`.
pub const SOCKET: &str = "/run/kram-daemon.sock";
/// Default `--state-file`.
pub const STATE_FILE: &str = "/run/kram-daemon.state";
/// sysfs directory of `unimem_eusrvmem`.
pub const SYSFS: &str = "/sys/class/misc/eusrvmem";

#[derive(Parser, Debug)]
#[command(
    version,
    about = "KRAM lender daemon: lends 1 MiB chunks of this node's partition to remote \
             unimem_kram swap drivers over the mailbox",
    long_about = "KRAM lender daemon: lends 1 MiB chunks of this node's partition to remote \
                  unimem_kram swap drivers over the mailbox.\n\n\
                  Binds the kernel-message service KRAM_DAEMON (2) of /dev/unimem_mailbox \
                  (needs unimem_eusrvmem + unimem_mailbox loaded and CAP_SYS_ADMIN), answers \
                  REQUEST{node,instance,chunks} with OFFER{first,chunks} when it has that many \
                  contiguous free chunks (first fit; silence otherwise), and keeps a table of \
                  free / offered / lent chunks. Unconfirmed offers are released after \
                  --offer-timeout. Malformed and inconsistent messages are counted and \
                  dropped.\n\n\
                  Chunk i is the MiB at partition offset 3 MiB + i MiB (the first 3 MiB hold \
                  the mailbox rings).",
    after_help = "Status: `kram-daemon --status` asks the running daemon (UNIX socket --socket) \
                  and prints `free N, offered N, lent N`, one line per run of chunks \
                  (`chunks 0-31 lent to node 0 instance 0`) and the counters.\n\
                  Signals: SIGTERM/SIGINT stop (socket removed), SIGHUP reopens the log file \
                  and logs the table.\n\
                  Logging: RUST_LOG (e.g. RUST_LOG=debug) overrides the level."
)]
struct Cli {
    /// Print the status of the running daemon (table and counters) and exit.
    #[arg(long)]
    status: bool,
    /// How many 1 MiB chunks of this node's partition to lend [default: as many as fit
    /// after the mailbox's 3 MiB, at most 256].
    #[arg(long, value_name = "N")]
    chunks: Option<u32>,
    /// Seconds an offer stays reserved without CONFIRM before it is released.
    #[arg(long, value_name = "SECS", default_value_t = 10.0)]
    offer_timeout: f64,
    /// Log file (appended to; reopened on SIGHUP); `-` logs to stderr.
    #[arg(long, value_name = "PATH", default_value = LOG_FILE)]
    log_file: PathBuf,
    /// UNIX socket that serves the status to `kram-daemon --status`.
    #[arg(long, value_name = "PATH", default_value = SOCKET)]
    socket: PathBuf,
    /// Where the offered and lent ranges are kept across daemon restarts (rewritten on every
    /// change, removed on a clean exit with nothing lent).
    #[arg(long, value_name = "PATH", default_value = STATE_FILE)]
    state_file: PathBuf,
    /// Neither read nor write the state file: start from an empty table.
    #[arg(long)]
    no_state: bool,
    /// sysfs directory of unimem_eusrvmem (node_id, ctl_size, partition_size).
    #[arg(long, value_name = "DIR", default_value = SYSFS)]
    sysfs: PathBuf,
    /// Log every message (debug level).
    #[arg(short, long)]
    verbose: bool,
}

fn main() {
    let cli = Cli::parse();
    if cli.status {
        match print_status(&cli.socket) {
            Ok(()) => return,
            Err(e) => {
                eprintln!("kram-daemon --status: {e:#}");
                std::process::exit(1);
            }
        }
    }
    if let Err(e) = logging::init(&cli.log_file, cli.verbose) {
        eprintln!("kram-daemon: {e:#}");
        std::process::exit(1);
    }
    if let Err(e) = run(&cli) {
        log::error!("{e:#}");
        // The log may be a file: say it on stderr too (systemd's journal, a shell).
        if cli.log_file != Path::new("-") {
            eprintln!("kram-daemon: {e:#}");
        }
        std::process::exit(1);
    }
}

fn run(cli: &Cli) -> Result<()> {
    if !(cli.offer_timeout > 0.0 && cli.offer_timeout <= 3600.0) {
        bail!("--offer-timeout must be in (0, 3600] seconds");
    }
    let node = read_sysfs(&cli.sysfs, "node_id")?;
    let partition = read_sysfs(&cli.sysfs, "partition_size")?;
    let ctl = read_sysfs(&cli.sysfs, "ctl_size")?;
    let chunks = chunk_count(cli.chunks, partition, node)?;
    let node = u32::try_from(node).context("node_id out of range")?;
    let (gas_offset, _) = lent_range(ctl, partition, node, 0, chunks)
        .context("the chunk table does not fit this node's partition")?;
    let config = daemon::Config {
        node,
        chunks,
        gas_offset,
        offer_timeout: Duration::from_secs_f64(cli.offer_timeout),
        socket: cli.socket.clone(),
        state_file: (!cli.no_state).then(|| cli.state_file.clone()),
    };
    daemon::Daemon::start(config)?.run()
}

fn read_sysfs(dir: &Path, name: &str) -> Result<u64> {
    let path = dir.join(name);
    let text = std::fs::read_to_string(&path).with_context(|| {
        format!(
            "reading {} (is unimem_eusrvmem loaded and bound?)",
            path.display()
        )
    })?;
    text.trim()
        .parse()
        .with_context(|| format!("{}: not a number: {text:?}", path.display()))
}

/// The table size: `--chunks`, or what fits in the partition after [`LENDABLE_OFFSET`],
/// at most [`MAX_CHUNKS`].
fn chunk_count(asked: Option<u32>, partition: u64, node: u64) -> Result<u32> {
    let room = partition.saturating_sub(LENDABLE_OFFSET) / CHUNK_SIZE;
    let fit = room.min(u64::from(MAX_CHUNKS)) as u32;
    match asked {
        None if fit == 0 => bail!(
            "the partition of node {node} ({partition} bytes) has no room for a 1 MiB chunk \
             after the {} MiB the mailbox reserves",
            LENDABLE_OFFSET >> 20
        ),
        None => Ok(fit),
        Some(0) => bail!("--chunks 0: nothing to lend"),
        Some(n) if n > MAX_CHUNKS => bail!(
            "--chunks {n}: at most {MAX_CHUNKS} chunks (chunk indices are 8-bit in the protocol)"
        ),
        Some(n) if u64::from(n) > room => bail!(
            "--chunks {n} is too large: the partition of node {node} is {} MiB, which leaves \
             room for {room} chunks of 1 MiB after the {} MiB the mailbox reserves",
            partition >> 20,
            LENDABLE_OFFSET >> 20
        ),
        Some(n) => Ok(n),
    }
}

/// `--status`: connect to the daemon, print what it sends.
fn print_status(socket: &Path) -> Result<()> {
    let mut s = match UnixStream::connect(socket) {
        Ok(s) => s,
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::ConnectionRefused
            ) =>
        {
            bail!("not running (nothing listens on {}: {e})", socket.display())
        }
        Err(e) => return Err(e).with_context(|| format!("connecting to {}", socket.display())),
    };
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut text = String::new();
    s.read_to_string(&mut text)
        .with_context(|| format!("reading the status from {}", socket.display()))?;
    if text.is_empty() {
        bail!("the daemon at {} sent no status", socket.display());
    }
    print!("{text}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn chunk_count_defaults_and_limits() {
        let mib = 1 << 20;
        // 1 GiB GAS / 3 nodes: far more than 256 chunks fit.
        assert_eq!(chunk_count(None, 340 * mib, 1).unwrap(), 256);
        assert_eq!(chunk_count(None, 67 * mib, 1).unwrap(), 64);
        assert_eq!(chunk_count(Some(64), 67 * mib, 1).unwrap(), 64);
        let e = chunk_count(Some(65), 67 * mib, 1).unwrap_err().to_string();
        assert!(e.contains("too large") && e.contains("room for 64"), "{e}");
        assert!(chunk_count(Some(257), 4096 * mib, 1).is_err());
        assert!(chunk_count(Some(0), 67 * mib, 1).is_err());
        assert!(chunk_count(None, 3 * mib, 1).is_err());
        assert!(chunk_count(None, 0, 1).is_err());
    }

    #[test]
    fn status_of_a_missing_daemon_is_a_clear_error() {
        let e = print_status(Path::new("/nonexistent/kram-daemon.sock")).unwrap_err();
        assert!(e.to_string().contains("not running"), "{e}");
    }
}
