//! unimem-fabric: the interconnect switch of the unimem virtual cluster.
//!
//! An ivshmem server (QEMU docs/specs/ivshmem-spec.rst) for `-device ivshmem-doorbell`: every
//! VM that connects gets a node id, the shared global-address-space region, and eventfd
//! doorbells to and from every other VM.

mod listen;
mod peers;
mod protocol;
mod server;
mod shm;
mod size;
mod state;

use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{anyhow, ensure, Context, Result};
use clap::Parser;
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
        SIGINT or SIGTERM stop the server; it removes its socket and state files.\n\
        Log verbosity follows RUST_LOG (default: info)."
)]
struct Cli {
    /// Unix socket the VMs' ivshmem chardevs connect to. A stale socket file is replaced; a
    /// live server on it is left alone and this one refuses to start.
    #[arg(long, value_name = "PATH")]
    socket: PathBuf,

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
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")).init();
    let cli = Cli::parse();
    if let Err(e) = run(&cli) {
        log::error!("{e:#}");
        std::process::exit(1);
    }
}

fn run(cli: &Cli) -> Result<()> {
    let desc = layout(cli)?;
    raise_fd_limit(cli);
    // Bind before creating anything else: a second server must fail before it touches the
    // state directory the live one is using.
    let listener = listen::bind(&cli.socket)?;
    let state = cli
        .state_dir
        .as_deref()
        .map(state::StateDir::open)
        .transpose()?;
    let region = shm::SharedRegion::create(&desc)?;
    let settings = server::Settings {
        nodes: cli.nodes,
        vectors: cli.vectors,
    };
    let mut server = server::Server::new(settings, region, listener, state)?;
    log::info!(
        "listening on {}: {} nodes, {} vectors, region {} bytes ({} control + {} per node), generation {:#x}",
        cli.socket.display(),
        desc.node_count,
        desc.vectors,
        desc.region_size,
        desc.ctl_size,
        desc.partition_size,
        desc.generation
    );
    server.run()
}

fn layout(cli: &Cli) -> Result<GasDescriptor> {
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
fn raise_fd_limit(cli: &Cli) {
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
        let cli = Cli::try_parse_from(["unimem-fabric", "--socket", "/tmp/s"]).unwrap();
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
            assert!(layout(&cli).is_err(), "{args:?} was accepted");
        }
    }
}
