//! `gsasd`: the remoteFork daemon of a node. It takes the programs other nodes' threads
//! remoteFork here from the node's atomic service (`/dev/unimem_gsas`, root only, one daemon
//! per node), starts each in its issuer's protection tree and reports its exit status.
//!
//! For each job: a mailbox file is opened and put in the issuer's tree (`SET_TREE`, which is why
//! this daemon runs as root), then allocated and passed to the child as `GSAS_TREE_FD`, so the
//! child's GSAS handles (the library's root file `INHERIT`s from it) are that tree's. The
//! program is started with `execve(path, [path, args...])`, stdin `/dev/null`, stdout and
//! stderr appended to `LOG_DIR/child-<serial>.log`; a failure to start is reported with its
//! errno. A thread per child reaps it and posts its wait status.

use anyhow::{bail, Context, Result};
use clap::{CommandFactory, Parser};
use std::fs::{File, OpenOptions};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;
use unimem_mailbox::Mailbox;
use unimem_wire::gsas::daemon::{Job, Post, EXITED, FAILED, IOCTL_TYPE, NR_JOB, NR_POST, STARTED};
use unimem_wire::gsas::fork;

nix::ioctl_read!(ioctl_job, IOCTL_TYPE as u8, NR_JOB as u8, Job);
nix::ioctl_write_ptr!(ioctl_post, IOCTL_TYPE as u8, NR_POST as u8, Post);

/// The device of the node's atomic service (unimem_gsas.ko).
const DEVICE: &str = "/dev/unimem_gsas";

#[derive(Parser)]
#[command(
    name = "gsasd",
    version,
    about = "remoteFork daemon: starts the programs other nodes' GSAS threads remoteFork on this node, in their protection trees, and reports their exit status",
    after_help = "Needs root (CAP_SYS_ADMIN: /dev/unimem_gsas and SET_TREE) and unimem_gsas loaded. One daemon per node. Log level: RUST_LOG (default info). See docs/GSAS.md, \"remoteFork\"."
)]
struct Cli {
    /// Where each child's stdout and stderr go: LOG_DIR/child-<serial>.log (appended).
    #[arg(long, default_value = "/var/log/gsasd")]
    log_dir: PathBuf,
    /// Run the children as this user id (default: the daemon's, root).
    #[arg(long)]
    uid: Option<u32>,
    /// Run the children with this group id (default: the daemon's).
    #[arg(long)]
    gid: Option<u32>,
}

fn post(dev: &File, serial: u32, kind: u32, value: u32) {
    let p = Post {
        serial,
        kind,
        value,
        _reserved: 0,
    };
    // SAFETY: `dev` is /dev/unimem_gsas, `p` a valid `Post` the kernel only reads.
    if let Err(e) = unsafe { ioctl_post(dev.as_raw_fd(), &p) } {
        log::error!("posting {kind} for child {serial}: {e}");
    }
}

/// A file of the issuer's tree to pass to the child, without close-on-exec.
fn tree_file(tree: u32) -> Result<OwnedFd> {
    let mb = Mailbox::open().context("opening the mailbox")?;
    mb.set_tree(tree)
        .with_context(|| format!("SET_TREE {tree:#x}"))?;
    mb.alloc().context("ALLOC")?;
    let fd = nix::fcntl::fcntl(mb.as_raw_fd(), nix::fcntl::FcntlArg::F_DUPFD(3))?;
    // SAFETY: F_DUPFD returned a new descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn start(cli: &Cli, dev: &Arc<File>, job: &Job) -> Result<(), i32> {
    let blob = job.blob.get(..job.len as usize).ok_or(libc_einval())?;
    // The service checked the blob; check again (it is the program this daemon starts).
    fork::check(blob).map_err(|_| libc_einval())?;
    let strs: Vec<String> = blob[..blob.len() - 1]
        .split(|&b| b == 0)
        .map(|s| String::from_utf8_lossy(s).into_owned())
        .collect();
    let (path, args) = strs.split_first().ok_or(libc_einval())?;
    let tree = tree_file(job.tree).map_err(|e| {
        log::error!("child {}: tree {:#x}: {e:#}", job.serial, job.tree);
        e.downcast_ref::<unimem_mailbox::Error>()
            .and_then(|m| m.errno())
            .map_or(nix::errno::Errno::EIO as i32, |e| e as i32)
    })?;
    let log_path = cli.log_dir.join(format!("child-{}.log", job.serial));
    let out = OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log_path)
        .map_err(|e| {
            log::error!("child {}: {}: {e}", job.serial, log_path.display());
            e.raw_os_error().unwrap_or(5)
        })?;
    let err = out.try_clone().map_err(|e| e.raw_os_error().unwrap_or(5))?;
    let mut cmd = Command::new(path);
    cmd.args(args)
        .env(gsas::TREE_FD_ENV, tree.as_raw_fd().to_string())
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err);
    if let Some(uid) = cli.uid {
        cmd.uid(uid);
    }
    if let Some(gid) = cli.gid {
        cmd.gid(gid);
    }
    let mut child = cmd.spawn().map_err(|e| {
        log::warn!(
            "child {}: {path} for tree {:#x} of node {}: {e}",
            job.serial,
            job.tree,
            job.node
        );
        e.raw_os_error().unwrap_or(5)
    })?;
    drop(tree);
    log::info!(
        "child {}: started {path} {args:?} (pid {}) for tree {:#x} of node {}, output in {}",
        job.serial,
        child.id(),
        job.tree,
        job.node,
        log_path.display()
    );
    post(dev, job.serial, STARTED, child.id());
    let dev = dev.clone();
    let serial = job.serial;
    std::thread::spawn(move || {
        let ws = match child.wait() {
            Ok(s) => s.into_raw(),
            Err(e) => {
                log::error!("child {serial}: wait: {e}");
                0xff00
            }
        };
        log::info!("child {serial}: exited, wait status {ws:#x}");
        post(&dev, serial, EXITED, ws as u32);
    });
    Ok(())
}

fn libc_einval() -> i32 {
    nix::errno::Errno::EINVAL as i32
}

fn main() -> Result<()> {
    unimem_clidoc::generate_if_asked(Cli::command, "8");
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")).init();
    let cli = Cli::parse();
    std::fs::create_dir_all(&cli.log_dir)
        .with_context(|| format!("creating {}", cli.log_dir.display()))?;
    let dev = match OpenOptions::new().read(true).write(true).open(DEVICE) {
        Ok(f) => Arc::new(f),
        Err(e) => bail!(
            "{DEVICE}: {e} ({})",
            match e.raw_os_error() {
                Some(2) => "is unimem_gsas loaded?",
                Some(1) | Some(13) => "run as root",
                Some(16) => "another gsasd runs on this node",
                _ => "cannot attach to the atomic service",
            }
        ),
    };
    log::info!(
        "serving remoteFork (children's output in {})",
        cli.log_dir.display()
    );
    let mut job = Box::new(Job {
        serial: 0,
        tree: 0,
        node: 0,
        len: 0,
        blob: [0; fork::BLOB_MAX],
    });
    loop {
        // SAFETY: `job` is a valid `Job` the kernel writes.
        match unsafe { ioctl_job(dev.as_raw_fd(), &mut *job) } {
            Ok(_) => {}
            Err(nix::errno::Errno::EINTR) => continue,
            Err(e) => bail!("{DEVICE}: taking a job: {e}"),
        }
        if let Err(errno) = start(&cli, &dev, &job) {
            post(&dev, job.serial, FAILED, errno as u32);
        }
    }
}
