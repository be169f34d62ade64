//! unimem-fabric: the interconnect switch of the unimem virtual cluster.
//!
//! An ivshmem server (QEMU docs/specs/ivshmem-spec.rst) for `-device ivshmem-doorbell`: every
//! VM that connects gets a node id, the shared global-address-space region, and eventfd
//! doorbells to and from every other VM. It keeps every node's liveness word in the region's
//! control area and, on its control socket, can make a departed node's memory go away.

mod control;
mod listen;
mod nodes;
mod peers;
mod protocol;
mod server;
mod shm;
mod size;
mod state;

use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{anyhow, ensure, Context, Result};
use clap::{Args, Parser, Subcommand};
use nix::sys::resource::{getrlimit, setrlimit, Resource};
use unimem_wire::gas::{GasDescriptor, MAX_NODES, PAGE_SIZE};

#[derive(Parser, Debug)]
#[command(
    name = "unimem-fabric",
    version,
    about = "Interconnect switch of the unimem virtual cluster (a QEMU ivshmem server)",
    long_about = "Interconnect switch of the unimem virtual cluster: a QEMU ivshmem server.\n\n\
        Start it once, then start each VM with\n  \
        -chardev socket,path=SOCKET,id=fab -device ivshmem-doorbell,chardev=fab,vectors=N\n\
        Every VM that connects gets the lowest free node id in 0..NODES, the shared region \
        (an anonymous memfd whose first bytes hold the GAS descriptor), and one eventfd \
        doorbell per vector to and from every other VM. A VM that reconnects after a restart \
        gets its old id back if nobody took it meanwhile, with the same doorbells; departures \
        are not announced, because QEMU's ivshmem device cannot take an id back after a \
        disconnect notification.\n\n\
        Node states: the control area holds one little-endian u64 per node at offset 4096 \
        (unimem_wire::gas::node_state): never connected, up, gone (disconnected, its memory \
        still there) or lost (its partition was poisoned), and how often it connected.\n\n\
        SIGINT or SIGTERM stop the server; it removes its sockets and state files.\n\
        Log verbosity follows RUST_LOG (default: info).\n\n\
        `unimem-fabric ctl --control PATH COMMAND...` sends a command to a running server \
        (see `unimem-fabric ctl --help`).",
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Cmd>,

    #[command(flatten)]
    serve: Serve,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Send one command to a running server's control socket and print its reply.
    #[command(
        long_about = "Send one command to a running server's control socket (--control) \
        and print its one-line reply.\n\n\
        Commands:\n  \
        poison N   node N's memory goes away: its state word becomes LOST, then every byte of \
        its partition 0xff (what reads from a dead link return). Refused while node N is \
        connected. Replies `ok: node N poisoned (M MiB)`.\n  \
        states     every node's state and connection count: `ID:STATE:CONNECTS ...` with \
        STATE never, up, gone or lost.\n\n\
        Exit status: 0 for a reply, 1 for an `error: ...` reply (nothing changed, unless it \
        says otherwise), 2 if the server could not be reached or did not answer."
    )]
    Ctl(Ctl),
}

#[derive(Args, Debug)]
struct Ctl {
    /// The server's control socket (its --control).
    #[arg(long, value_name = "PATH")]
    control: PathBuf,

    /// Seconds to wait for the reply (poisoning a large partition takes a while).
    #[arg(long, value_name = "SECS", default_value_t = 300)]
    timeout: u64,

    /// The command and its arguments, e.g. `poison 3` or `states`.
    #[arg(required = true, num_args = 1.., allow_hyphen_values = true, value_name = "COMMAND")]
    words: Vec<String>,
}

#[derive(Args, Debug)]
struct Serve {
    /// Unix socket the VMs' ivshmem chardevs connect to. A stale socket file is replaced; a
    /// live server on it is left alone and this one refuses to start.
    #[arg(long, value_name = "PATH", required = true)]
    socket: Option<PathBuf>,

    /// Unix socket (mode 0600) for control commands, one per line, one reply line each:
    /// `poison N`, `states` (see `unimem-fabric ctl --help`). Replaced if stale, like
    /// --socket.
    #[arg(long, value_name = "PATH")]
    control: Option<PathBuf>,

    /// Number of nodes: the size of the id space and the number of partitions in the region.
    #[arg(
        long,
        value_name = "N",
        default_value_t = 3,
        value_parser = clap::value_parser!(u32).range(1..=i64::from(MAX_NODES))
    )]
    nodes: u32,

    /// Size of the shared region (becomes the ivshmem BAR, so a power of two). Suffixes K, M,
    /// G, T are binary multiples.
    #[arg(long, value_name = "SIZE", default_value = "1G", value_parser = size::parse_region_size)]
    region_size: u64,

    /// Size of the control area at the start of the region, before partition 0 (descriptor
    /// included); a multiple of 4K.
    #[arg(long, value_name = "SIZE", default_value = "2M", value_parser = size::parse_size)]
    ctl_size: u64,

    /// Doorbell vectors (eventfds) per node; must match the ivshmem-doorbell `vectors=`.
    #[arg(
        long,
        value_name = "N",
        default_value_t = 4,
        value_parser = clap::value_parser!(u32).range(1..=64)
    )]
    vectors: u32,

    /// Directory for status files: `ready` once listening, and `peer-<id>` holding the pid of
    /// the client connected as node <id> (pid and a newline). Created if missing; the files
    /// are removed on exit.
    #[arg(long, value_name = "DIR")]
    state_dir: Option<PathBuf>,
}

fn main() {
    let cli = Cli::parse();
    if let Some(Cmd::Ctl(ctl)) = &cli.command {
        let command = ctl.words.join(" ");
        match control::send(&ctl.control, &command, Duration::from_secs(ctl.timeout)) {
            Ok(true) => std::process::exit(0),
            Ok(false) => std::process::exit(1),
            Err(e) => {
                eprintln!("unimem-fabric ctl: {e:#}");
                std::process::exit(2);
            }
        }
    }
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")).init();
    if let Err(e) = run(&cli.serve) {
        log::error!("{e:#}");
        std::process::exit(1);
    }
}

fn run(cli: &Serve) -> Result<()> {
    let desc = layout(cli)?;
    let socket = cli.socket.as_deref().expect("clap requires --socket");
    if let Some(control) = &cli.control {
        ensure!(
            control != socket,
            "--control and --socket must be different paths"
        );
    }
    raise_fd_limit(cli);
    // Bind before creating anything else: a second server must fail before it touches the
    // state directory the live one is using.
    let listener = listen::bind(socket, false)?;
    let control = cli
        .control
        .as_deref()
        .map(|path| listen::bind(path, true))
        .transpose()?;
    let state = cli
        .state_dir
        .as_deref()
        .map(state::StateDir::open)
        .transpose()?;
    let region = shm::SharedRegion::create(&desc)?;
    let settings = server::Settings {
        nodes: cli.nodes,
        vectors: cli.vectors,
        layout: desc,
    };
    let mut server = server::Server::new(settings, region, listener, control, state)?;
    if let Some(path) = &cli.control {
        log::info!("control socket {}", path.display());
    }
    log::info!(
        "listening on {}: {} nodes, {} vectors, region {} bytes ({} control + {} per node), generation {:#x}",
        socket.display(),
        desc.node_count,
        desc.vectors,
        desc.region_size,
        desc.ctl_size,
        desc.partition_size,
        desc.generation
    );
    server.run()
}

fn layout(cli: &Serve) -> Result<GasDescriptor> {
    ensure!(
        cli.ctl_size > 0 && cli.ctl_size % PAGE_SIZE == 0,
        "--ctl-size {} is not a non-zero multiple of {PAGE_SIZE}",
        cli.ctl_size
    );
    ensure!(
        cli.ctl_size < cli.region_size,
        "--ctl-size {} leaves no room for partitions in --region-size {}",
        cli.ctl_size,
        cli.region_size
    );
    GasDescriptor::layout(
        cli.nodes,
        cli.vectors,
        cli.region_size,
        cli.ctl_size,
        generation(),
    )
    .map_err(|e| anyhow!("{e:?}"))
    .with_context(|| {
        format!(
            "--region-size {} cannot hold {} page-aligned partitions after --ctl-size {}",
            cli.region_size, cli.nodes, cli.ctl_size
        )
    })
}

/// The server holds `vectors` eventfds per node, and each fd in flight to a VM that has not
/// read it yet counts against the sender's RLIMIT_NOFILE too: 16 nodes with 64 vectors do not
/// fit in the usual soft limit of 1024.
fn raise_fd_limit(cli: &Serve) {
    let wanted = u64::from(cli.nodes) * u64::from(cli.vectors) * 2 + 64;
    let limit = match getrlimit(Resource::RLIMIT_NOFILE) {
        Ok((soft, hard)) if soft < hard => match setrlimit(Resource::RLIMIT_NOFILE, hard, hard) {
            Ok(()) => hard,
            Err(e) => {
                log::warn!("raising the open-file limit from {soft} to {hard}: {e}");
                soft
            }
        },
        Ok((soft, _)) => soft,
        Err(e) => {
            log::warn!("reading the open-file limit: {e}");
            return;
        }
    };
    if limit < wanted {
        log::warn!(
            "open-file limit {limit} is below the ~{wanted} fds {} nodes x {} vectors may need",
            cli.nodes,
            cli.vectors
        );
    }
}

/// Differs between server starts, so a node can tell a region re-created by a restarted
/// server from the one it knew.
fn generation() -> u64 {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    nanos ^ u64::from(std::process::id()).rotate_left(32)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn defaults() {
        let cli = Cli::try_parse_from(["unimem-fabric", "--socket", "/tmp/s"])
            .unwrap()
            .serve;
        assert_eq!(
            (cli.nodes, cli.vectors, cli.region_size, cli.ctl_size),
            (3, 4, 1 << 30, 2 << 20)
        );
        let desc = layout(&cli).unwrap();
        assert_eq!(desc.node_count, 3);
        assert_eq!(desc.partition_offset(0), Some(2 << 20));
    }

    #[test]
    fn rejects_bad_values() {
        for args in [
            &["--nodes", "0"][..],
            &["--nodes", "17"],
            &["--vectors", "0"],
            &["--vectors", "65"],
            &["--region-size", "3M"],
            &["--region-size", "lots"],
            &["--ctl-size", "2Q"],
        ] {
            let argv = ["unimem-fabric", "--socket", "/tmp/s"].iter().chain(args);
            assert!(Cli::try_parse_from(argv).is_err(), "{args:?} was accepted");
        }
        for args in [
            &["--ctl-size", "1000"][..],
            &["--ctl-size", "0"],
            &["--ctl-size", "1G"],
            &["--region-size", "64K", "--ctl-size", "32K", "--nodes", "16"],
        ] {
            let argv = ["unimem-fabric", "--socket", "/tmp/s"].iter().chain(args);
            let cli = Cli::try_parse_from(argv).unwrap();
            assert!(layout(&cli.serve).is_err(), "{args:?} was accepted");
        }
    }

    #[test]
    fn ctl_subcommand() {
        let cli =
            Cli::try_parse_from(["unimem-fabric", "ctl", "--control", "/tmp/c", "poison", "3"])
                .unwrap();
        let Some(Cmd::Ctl(ctl)) = cli.command else {
            panic!("no ctl")
        };
        assert_eq!(ctl.words, ["poison", "3"]);
        assert_eq!(ctl.control, PathBuf::from("/tmp/c"));
        // Serving needs --socket; ctl needs --control and a command; they do not mix.
        for argv in [
            &["unimem-fabric"][..],
            &["unimem-fabric", "ctl", "--control", "/tmp/c"],
            &["unimem-fabric", "ctl", "states"],
            &[
                "unimem-fabric",
                "--socket",
                "/tmp/s",
                "ctl",
                "--control",
                "/c",
                "states",
            ],
        ] {
            assert!(Cli::try_parse_from(argv).is_err(), "{argv:?} was accepted");
        }
        let cli =
            Cli::try_parse_from(["unimem-fabric", "--socket", "/s", "--control", "/c"]).unwrap();
        assert!(cli.command.is_none());
        assert_eq!(cli.serve.control, Some(PathBuf::from("/c")));
    }
}
