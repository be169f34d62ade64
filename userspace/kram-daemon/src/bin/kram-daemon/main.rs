//! `kram-daemon`: lends 1 MiB chunks of this node's partition to the `unimem_kram` swap
//! drivers of other nodes (seed 000 §2.5.5-2.5.8). See docs/KRAM-DAEMON.md.

mod daemon;
mod logging;
mod partition;

use anyhow::{bail, Context, Result};
use clap::{CommandFactory, Parser};
use std::io::Read;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;
use unimem_wire::kram::{lent_range, CHUNK_SIZE, LENDABLE_OFFSET, MAX_CHUNKS, V1, V2};

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
                  contiguous free chunks (first fit; a v2 REQUEST also accepts a smaller run \
                  down to its minimum; silence otherwise), and keeps a table of free / offered \
                  / lent chunks. CONFIRM and RENEW are answered with ACK; a lease not renewed \
                  for 20 s is wiped and free again. Unconfirmed offers are released after \
                  --offer-timeout. Malformed messages are counted and dropped; CONFIRM / RENEW \
                  of ranges that are not the sender's get REVOKE.\n\n\
                  The lent ranges are also recorded in this node's partition (lease record at \
                  3 MiB - 64 KiB), so a restart without the state file (reboot) does not lend \
                  them twice; a record that does not decode starts a 20 s grace period in \
                  which borrowers claim their ranges back.\n\n\
                  Chunk i is the MiB at partition offset 3 MiB + i MiB (the first 3 MiB hold \
                  the mailbox rings and the lease record).",
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
    /// With --status: print it as one JSON object.
    #[arg(long, requires = "status")]
    json: bool,
    /// How many 1 MiB chunks of this node's partition to lend [default: as many as fit
    /// after the first 3 MiB, at most 65536].
    #[arg(long, value_name = "N", conflicts_with = "lend")]
    chunks: Option<u32>,
    /// How much of this node's partition to lend: a size (512M, 2G, 1T; whole MiB) or a
    /// percentage of what can be lent (50%).
    #[arg(long, value_name = "SIZE|PERCENT", value_parser = parse_lend)]
    lend: Option<Lend>,
    /// The newest protocol layout spoken: 2 (v1 and v2), or 1 to behave like a peer of the
    /// seed's protocol (every v2 word is malformed).
    #[arg(long, value_name = "1|2", default_value_t = 2, value_parser = clap::value_parser!(u8).range(1..=2))]
    max_version: u8,
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
    /// Neither read nor write the state file (the lease record in the partition is still
    /// read and written).
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
    unimem_clidoc::generate_if_asked(Cli::command, "8");
    let cli = Cli::parse();
    if cli.status {
        match print_status(&cli.socket, cli.json) {
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
    let chunks = match cli.lend {
        Some(lend) => lend_chunks(lend, partition, node)?,
        None => chunk_count(cli.chunks, partition, node)?,
    };
    let node = u32::try_from(node).context("node_id out of range")?;
    let (gas_offset, _) = lent_range(ctl, partition, node, 0, chunks)
        .context("the chunk table does not fit this node's partition")?;
    let config = daemon::Config {
        node,
        chunks,
        gas_offset,
        ctl_size: ctl,
        partition_size: partition,
        max_version: if cli.max_version == 1 { V1 } else { V2 },
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

/// What `--lend` asks for.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Lend {
    /// Bytes (a whole number of MiB).
    Bytes(u64),
    /// Percent of what can be lent.
    Percent(f64),
}

/// `512M`, `2G`, `2GiB`, `1T`, `1048576K`, `50%`.
fn parse_lend(s: &str) -> Result<Lend, String> {
    let t = s.trim();
    if let Some(p) = t.strip_suffix('%') {
        let p: f64 = p
            .trim()
            .parse()
            .map_err(|_| format!("{s:?}: not a percentage"))?;
        if !(p > 0.0 && p <= 100.0) {
            return Err(format!("{s:?}: a percentage in (0, 100]"));
        }
        return Ok(Lend::Percent(p));
    }
    let lower = t.to_ascii_lowercase();
    let digits = lower.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let unit = &lower[digits.len()..];
    let shift = match unit {
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        _ => {
            return Err(format!(
                "{s:?}: give a unit (512M, 2G, 1T) or a percentage (50%)"
            ))
        }
    };
    let n: u64 = digits
        .trim()
        .parse()
        .map_err(|_| format!("{s:?}: not a whole number before the unit"))?;
    let bytes = n
        .checked_mul(1 << shift)
        .ok_or_else(|| format!("{s:?}: too large"))?;
    if bytes % CHUNK_SIZE != 0 {
        return Err(format!(
            "{s:?}: not a whole number of MiB (chunks are 1 MiB)"
        ));
    }
    Ok(Lend::Bytes(bytes))
}

/// The table size for `--lend`.
fn lend_chunks(lend: Lend, partition: u64, node: u64) -> Result<u32> {
    let room = partition.saturating_sub(LENDABLE_OFFSET) / CHUNK_SIZE;
    let fit = room.min(u64::from(MAX_CHUNKS));
    let chunks = match lend {
        Lend::Bytes(b) => b / CHUNK_SIZE,
        Lend::Percent(p) => (fit as f64 * p / 100.0).floor() as u64,
    };
    if chunks == 0 {
        bail!("--lend gives 0 chunks of 1 MiB: nothing to lend (node {node} can lend {fit} MiB)");
    }
    if chunks > room {
        bail!(
            "--lend {} MiB is too large: the partition of node {node} is {} MiB, which leaves \
             room for {room} chunks of 1 MiB after the first {} MiB",
            chunks,
            partition >> 20,
            LENDABLE_OFFSET >> 20
        );
    }
    if chunks > u64::from(MAX_CHUNKS) {
        bail!("--lend {chunks} MiB: at most {MAX_CHUNKS} chunks (16-bit chunk indices)");
    }
    Ok(chunks as u32)
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
            "--chunks {n}: at most {MAX_CHUNKS} chunks (chunk indices are 16-bit in the protocol)"
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

/// `--status`: connect to the daemon, print what it sends (the text, or with `json` its JSON
/// line).
fn print_status(socket: &Path, json: bool) -> Result<()> {
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
    let (text, json_line) = kram_daemon::status::split(&text);
    if json {
        match json_line {
            Some(j) => println!("{j}"),
            None => bail!("the daemon at {} sent no JSON status", socket.display()),
        }
    } else {
        print!("{text}");
    }
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
        // 1 GiB GAS / 3 nodes: 337 chunks fit.
        assert_eq!(chunk_count(None, 340 * mib, 1).unwrap(), 337);
        assert_eq!(chunk_count(None, 1 << 40, 1).unwrap(), MAX_CHUNKS);
        assert_eq!(chunk_count(None, 67 * mib, 1).unwrap(), 64);
        assert_eq!(chunk_count(Some(64), 67 * mib, 1).unwrap(), 64);
        let e = chunk_count(Some(65), 67 * mib, 1).unwrap_err().to_string();
        assert!(e.contains("too large") && e.contains("room for 64"), "{e}");
        assert_eq!(chunk_count(Some(300), 340 * mib, 1).unwrap(), 300);
        assert!(chunk_count(Some(MAX_CHUNKS + 1), 1 << 40, 1).is_err());
        assert!(chunk_count(Some(0), 67 * mib, 1).is_err());
        assert!(chunk_count(None, 3 * mib, 1).is_err());
        assert!(chunk_count(None, 0, 1).is_err());
    }

    #[test]
    fn lend_sizes_and_percentages() {
        let mib: u64 = 1 << 20;
        assert_eq!(parse_lend("512M"), Ok(Lend::Bytes(512 * mib)));
        assert_eq!(parse_lend("2G"), Ok(Lend::Bytes(2048 * mib)));
        assert_eq!(parse_lend("2GiB"), Ok(Lend::Bytes(2048 * mib)));
        assert_eq!(parse_lend("1t"), Ok(Lend::Bytes(1 << 40)));
        assert_eq!(parse_lend("50%"), Ok(Lend::Percent(50.0)));
        assert_eq!(parse_lend("12.5%"), Ok(Lend::Percent(12.5)));
        for bad in ["0%", "101%", "x%", "512", "1.5G", "100K", "G", "-1M"] {
            assert!(parse_lend(bad).is_err(), "{bad}");
        }
        // 340 MiB partitions: 337 chunks can be lent.
        let part = 340 * mib;
        assert_eq!(lend_chunks(Lend::Bytes(300 * mib), part, 1).unwrap(), 300);
        assert_eq!(lend_chunks(Lend::Percent(50.0), part, 1).unwrap(), 168);
        assert_eq!(lend_chunks(Lend::Percent(100.0), part, 1).unwrap(), 337);
        let e = lend_chunks(Lend::Bytes(2048 * mib), part, 1)
            .unwrap_err()
            .to_string();
        assert!(e.contains("too large") && e.contains("room for 337"), "{e}");
        assert!(lend_chunks(Lend::Bytes(0), part, 1).is_err());
        assert!(lend_chunks(Lend::Percent(0.1), 10 * mib, 1).is_err());
        // 100% of a huge partition is what the table can hold.
        assert_eq!(
            lend_chunks(Lend::Percent(100.0), 1 << 40, 1).unwrap(),
            MAX_CHUNKS
        );
        assert!(lend_chunks(Lend::Bytes(1 << 40), 2 << 40, 1).is_err());
        // --lend and --chunks exclude each other.
        assert!(Cli::try_parse_from(["kram-daemon", "--lend", "1G", "--chunks", "4"]).is_err());
        assert!(Cli::try_parse_from(["kram-daemon", "--max-version", "3"]).is_err());
        assert!(Cli::try_parse_from(["kram-daemon", "--json"]).is_err());
    }

    #[test]
    fn status_of_a_missing_daemon_is_a_clear_error() {
        let e = print_status(Path::new("/nonexistent/kram-daemon.sock"), false).unwrap_err();
        assert!(e.to_string().contains("not running"), "{e}");
    }
}
