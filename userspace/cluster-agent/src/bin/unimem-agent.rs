//! Guest side: serves unimem-exec requests on the node's virtio-serial port.

use anyhow::{Context, Result};
use clap::Parser;
use std::fs::File;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;
use unimem_cluster_agent::port::{find_port, open_port, VIRTIO_PORTS_CLASS};
use unimem_cluster_agent::{serve, ServeOptions};

/// Pause before reopening the transport after it failed or could not be
/// found, so a persistent problem costs one log line a second at most.
const RETRY: Duration = Duration::from_secs(1);

#[derive(Debug, Parser)]
#[command(
    name = "unimem-agent",
    version,
    about = "Run commands for the host inside a unimem cluster node",
    long_about = "Run commands for the host inside a unimem cluster node.\n\n\
        Serves unimem-exec requests on a virtio-serial port: each request is \
        run as `/bin/sh -c COMMAND` (cwd /, stdin /dev/null, PATH from --path plus the \
        request's variables) in its own process \
        group, its stdout and stderr are streamed back as they are produced, \
        then its exit status (128+N if killed by signal N, 124 on timeout). \
        Requests run one at a time. A command whose host client disconnects \
        is killed: once the host has been gone for a second, or at once when \
        the next request arrives.\n\n\
        Runs forever and survives host clients coming and going; started by \
        the guest's init. Logs go to stderr (RUST_LOG sets the level, default \
        info)."
)]
struct Args {
    /// Serve the virtio-serial port with this name (looked up in
    /// /sys/class/virtio-ports/*/name)
    #[arg(long, value_name = "NAME", default_value = "unimem.agent")]
    port_name: String,

    /// Serve this port device (e.g. /dev/vport1p1) instead of looking the
    /// port up by name
    #[arg(long, value_name = "PATH", conflicts_with = "port_name")]
    device: Option<PathBuf>,

    /// TEST TRANSPORT ONLY: connect to this UNIX socket and serve it as if
    /// it were the port, so host tests can run the agent without a VM.
    #[arg(long, value_name = "PATH", hide = true, conflicts_with_all = ["port_name", "device"])]
    connect_unix: Option<PathBuf>,

    /// PATH given to commands (request variables are applied after it)
    #[arg(
        long,
        value_name = "DIRS",
        default_value = "/usr/sbin:/usr/bin:/sbin:/bin"
    )]
    path: String,
}

enum Transport {
    Named(String),
    Device(PathBuf),
    TestUnixSocket(PathBuf),
}

impl Transport {
    fn open(&self) -> Result<(File, String)> {
        match self {
            Transport::Named(name) => {
                let dev = find_port(Path::new(VIRTIO_PORTS_CLASS), Path::new("/dev"), name)
                    .with_context(|| format!("scanning {VIRTIO_PORTS_CLASS}"))?
                    .with_context(|| {
                        format!("no virtio-serial port named {name:?} in {VIRTIO_PORTS_CLASS}")
                    })?;
                let file = open_port(&dev).with_context(|| format!("opening {}", dev.display()))?;
                Ok((file, dev.display().to_string()))
            }
            Transport::Device(dev) => {
                let file = open_port(dev).with_context(|| format!("opening {}", dev.display()))?;
                Ok((file, dev.display().to_string()))
            }
            Transport::TestUnixSocket(path) => {
                let stream = UnixStream::connect(path)
                    .with_context(|| format!("connecting to {}", path.display()))?;
                let fd: std::os::fd::OwnedFd = stream.into();
                Ok((
                    File::from(fd),
                    format!("unix:{} (test transport)", path.display()),
                ))
            }
        }
    }
}

fn main() {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")).init();
    let args = Args::parse();
    let mut opts = ServeOptions::default();
    opts.launch.path = args.path;
    let transport = match (args.connect_unix, args.device) {
        (Some(path), _) => Transport::TestUnixSocket(path),
        (None, Some(dev)) => Transport::Device(dev),
        (None, None) => Transport::Named(args.port_name),
    };
    log::info!("unimem-agent {} starting", env!("CARGO_PKG_VERSION"));
    // Tests take swap devices away under load (tests/cluster/unbind.sh unbinds the fabric while
    // KRAM is swap): a page of the agent swapped out there would kill it with SIGBUS, and the
    // host's request with it. Locked pages are never swapped; children do not inherit the lock.
    let all =
        nix::sys::mman::MlockAllFlags::MCL_CURRENT | nix::sys::mman::MlockAllFlags::MCL_FUTURE;
    if let Err(e) = nix::sys::mman::mlockall(all) {
        log::warn!("mlockall: {e}: the agent's pages may be swapped out");
    }
    // Only repeat a failure in the log when it changes, so a port that never
    // shows up does not flood the console.
    let mut last_error = String::new();
    loop {
        match transport.open() {
            Ok((file, name)) => {
                log::info!("serving {name}");
                last_error.clear();
                if let Err(e) = serve(file, &opts) {
                    log::error!("serving {name}: {e}; reopening");
                }
            }
            Err(e) => {
                let msg = format!("{e:#}");
                if msg != last_error {
                    log::error!("{msg}; retrying every {RETRY:?}");
                    last_error = msg;
                }
            }
        }
        std::thread::sleep(RETRY);
    }
}
