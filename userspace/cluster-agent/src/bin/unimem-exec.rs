//! Host side: runs a command on a cluster node through its agent, like ssh.

use clap::Parser;
use std::io::{self, Write};
use std::path::PathBuf;
use std::time::{Duration, Instant};
use unimem_cluster_agent::client::{
    acquire_lock, connect, ClientError, RunSpec, Session, StdioSink,
};

/// Exit status for failures of unimem-exec itself, as ssh uses.
const TRANSPORT_FAILURE: i32 = 255;
/// How long past --timeout to wait for the agent's report before giving up
/// on it: the agent enforces the timeout, this only guards against an agent
/// that died.
const TIMEOUT_GRACE: Duration = Duration::from_secs(30);

#[derive(Debug, Parser)]
#[command(
    name = "unimem-exec",
    version,
    about = "Run a command on a unimem cluster node through its agent",
    long_about = "Run a command on a unimem cluster node through its agent.\n\n\
        Connects to the UNIX socket QEMU serves for the node's unimem.agent \
        virtio-serial port, runs the command with `/bin/sh -c` in the guest, \
        copies its stdout and stderr here as they arrive and exits with its \
        status. The command words are joined with spaces, as ssh does, so \
        quote what the guest shell should see.\n\n\
        Callers of the same socket take turns (flock on SOCKET.lock).\n\n\
        The status is reported as soon as the shell exits; its output pipes \
        are closed then, so commands that leave processes running should \
        redirect their output (`daemon >/tmp/daemon.log 2>&1 &`).",
    after_help = "Exit status: the command's (128+N if killed by signal N, 124 if \
        --timeout expired), or 255 if unimem-exec failed (node unreachable, bad usage).\n\n\
        Examples:\n  \
        unimem-exec --socket run/node0.agent -- uname -a\n  \
        unimem-exec -s run/node1.agent -t 60 -e RUST_LOG=debug -- 'dmesg | tail'\n  \
        unimem-exec -s run/node2.agent --ping --connect-timeout 300"
)]
struct Args {
    /// The node's agent socket (RUN/nodeN.agent)
    #[arg(short, long, value_name = "PATH")]
    socket: PathBuf,

    /// Kill the command's process group after SECS seconds (exit status 124)
    #[arg(short, long, value_name = "SECS", value_parser = parse_secs)]
    timeout: Option<Duration>,

    /// How long to wait for the socket to appear and the agent to answer;
    /// the VM may still be booting
    #[arg(long, value_name = "SECS", default_value = "30", value_parser = parse_secs)]
    connect_timeout: Duration,

    /// Set an environment variable for the command (repeatable)
    #[arg(short, long = "env", value_name = "KEY=VALUE", value_parser = parse_env)]
    env: Vec<(String, String)>,

    /// Only wait until the agent answers (node booted): exit 0, or 255 after
    /// --connect-timeout
    #[arg(long, conflicts_with_all = ["command", "timeout", "env"])]
    ping: bool,

    /// Command to run in the guest
    #[arg(
        value_name = "CMD",
        trailing_var_arg = true,
        allow_hyphen_values = true,
        required_unless_present = "ping"
    )]
    command: Vec<String>,
}

fn parse_secs(s: &str) -> Result<Duration, String> {
    let secs: f64 = s.parse().map_err(|e| format!("{e}"))?;
    if !(secs.is_finite() && secs > 0.0) {
        return Err("must be a positive number of seconds".into());
    }
    Duration::try_from_secs_f64(secs).map_err(|e| e.to_string())
}

fn parse_env(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k.to_string(), v.to_string())),
        _ => Err("expected KEY=VALUE".into()),
    }
}

/// `now + d`, saturating: absurdly long timeouts mean "practically never".
fn after(d: Duration) -> Instant {
    let now = Instant::now();
    now.checked_add(d)
        .unwrap_or_else(|| now + Duration::from_secs(100 * 365 * 86400))
}

fn run(args: Args) -> Result<i32, ClientError> {
    let started = Instant::now();
    let connect_by = after(args.connect_timeout);
    let _lock = if args.ping {
        acquire_lock(&args.socket, connect_by, Some(connect_by))?
    } else {
        // A long command of another caller is not a reason to fail; wait
        // for it, and only then start the clock for reaching the node.
        let lock = acquire_lock(&args.socket, connect_by, None)?;
        log::debug!("lock acquired after {:?}", started.elapsed());
        lock
    };
    let connect_by = if args.ping {
        connect_by
    } else {
        after(args.connect_timeout)
    };
    let stream = connect(&args.socket, connect_by)?;
    let mut session = Session::new(stream);
    log::debug!("connected; request id {:#x}", session.id());
    // Ping first even when running a command: a VM that is up but whose
    // agent is not would otherwise leave us waiting forever.
    session.ping(connect_by)?;
    if args.ping {
        return Ok(0);
    }
    let spec = RunSpec {
        command: args.command.join(" "),
        env: args.env,
        timeout: args.timeout,
    };
    let deadline = args.timeout.map(|t| after(t.saturating_add(TIMEOUT_GRACE)));
    session.run(&spec, &mut StdioSink, deadline)
}

fn main() {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    let args = match Args::try_parse() {
        Ok(args) => args,
        Err(e) => {
            let _ = e.print();
            // Usage errors are failures of unimem-exec itself, not a status
            // the remote command could have produced.
            std::process::exit(if e.use_stderr() { TRANSPORT_FAILURE } else { 0 });
        }
    };
    let socket = args.socket.clone();
    let code = match run(args) {
        Ok(status) => u8::try_from(status).map_or(TRANSPORT_FAILURE, i32::from),
        Err(ClientError::Output { source, .. }) if source.kind() == io::ErrorKind::BrokenPipe => {
            // Our reader went away: behave like a process killed by SIGPIPE.
            128 + nix::sys::signal::Signal::SIGPIPE as i32
        }
        Err(e) => {
            let _ = io::stdout().flush();
            match e {
                // These already name the path they failed on.
                ClientError::Io { .. } => eprintln!("unimem-exec: {e}"),
                _ => eprintln!("unimem-exec: {}: {e}", socket.display()),
            }
            TRANSPORT_FAILURE
        }
    };
    std::process::exit(code);
}
