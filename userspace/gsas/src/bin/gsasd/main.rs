//! `gsasd`: the remoteFork daemon of a node. It takes the programs other nodes' threads
//! remoteFork here from the node's atomic service (`/dev/unimem_gsas`, root only, one daemon
//! per node), starts each in its issuer's protection tree and reports its exit status.
//!
//! For each job: the child's user is the issuer's (uid and gid as the issuing node's kernel
//! sealed them; uid 0 only if the issuer had `CAP_SYS_ADMIN`), with that uid's supplementary
//! groups on this node, and the administrator's policy (`--policy`) must allow that user to run
//! that program. A mailbox file is opened and put in the issuer's tree (`SET_TREE`, which is why
//! this daemon runs as root), then allocated and passed to the child as `GSAS_TREE_FD`, so the
//! child's GSAS handles (the library's root file `INHERIT`s from it) are that tree's. The
//! program is started with `execve(path, [path, args...])` as that user, stdin `/dev/null`,
//! stdout and stderr appended to `LOG_DIR/child-<serial>.log` (the user's); a failure to start
//! or a refusal (`EPERM`: root without `CAP_SYS_ADMIN`, `EACCES`: the policy) is reported with
//! its errno. A thread per child reaps it and posts its wait status.

mod creds;
mod policy;

use anyhow::{bail, Context, Result};
use clap::{CommandFactory, Parser};
use creds::{Identity, LogDir};
use nix::errno::Errno;
use policy::{Policy, SystemNames};
use std::ffi::OsStr;
use std::fs::{File, OpenOptions};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use unimem_mailbox::Mailbox;
use unimem_wire::gsas::daemon::{
    Job, Post, EXITED, FAILED, IOCTL_TYPE, JOB_ADMIN, NR_JOB, NR_POST, STARTED,
};
use unimem_wire::gsas::fork;

nix::ioctl_read!(ioctl_job, IOCTL_TYPE as u8, NR_JOB as u8, Job);
nix::ioctl_write_ptr!(ioctl_post, IOCTL_TYPE as u8, NR_POST as u8, Post);

/// The device of the node's atomic service (unimem_gsas.ko).
const DEVICE: &str = "/dev/unimem_gsas";

/// The policy read when --policy is not given, if it exists.
const DEFAULT_POLICY: &str = "/etc/unimem/fork.policy";

#[derive(Parser)]
#[command(
    name = "gsasd",
    version,
    about = "remoteFork daemon: starts the programs other nodes' GSAS threads remoteFork on this node, in their protection trees, as their users, and reports their exit status",
    after_help = "Each child runs as the user who forked it: the uid and gid its node's kernel sealed in the request, with that uid's supplementary groups on this node (initgroups), no capabilities and no new privileges. uid 0 only if the issuer had CAP_SYS_ADMIN (else the fork fails with EPERM); a program or user the policy refuses fails with EACCES (both logged here).\n\nNeeds root (CAP_SYS_ADMIN: /dev/unimem_gsas and SET_TREE; CAP_SETUID, CAP_SETGID) and unimem_gsas loaded. One daemon per node. Log level: RUST_LOG (default info). See docs/GSAS.md, \"remoteFork\"."
)]
struct Cli {
    /// Where each child's stdout and stderr go: LOG_DIR/child-<serial>.log (appended, owned by
    /// the child's user, mode 0600). LOG_DIR must be owned by root and writable by it alone.
    #[arg(long, default_value = "/var/log/gsasd")]
    log_dir: PathBuf,
    /// The administrator's fork policy: which programs (allow-path, deny-path: globs on the
    /// absolute path, symlinks resolved) and which users (allow-user, deny-user: name or uid;
    /// allow-group, deny-group: name or gid) may be forked here; deny wins, and where any
    /// allow rule of a kind exists only what it allows may run. Default /etc/unimem/fork.policy
    /// if it exists (else everything is allowed); a FILE given here must exist. Read at start-up.
    #[arg(long, value_name = "FILE")]
    policy: Option<PathBuf>,
    /// Gone: children run as their issuers (an error that says so, for old flag files).
    #[arg(long, hide = true)]
    uid: Option<u32>,
    /// Gone, as --uid.
    #[arg(long, hide = true)]
    gid: Option<u32>,
}

/// What every job needs.
struct Daemon {
    dev: Arc<File>,
    log_dir: LogDir,
    policy: Policy,
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

/// A file of the issuer's tree to pass to the child, without close-on-exec. It carries the
/// issuer's identity, not this daemon's: whatever the child sends through it is the issuer's
/// (a file of root's would let the child fork as root elsewhere).
fn tree_file(job: &Job) -> Result<OwnedFd> {
    let mb = Mailbox::open().context("opening the mailbox")?;
    mb.set_tree(job.tree)
        .with_context(|| format!("SET_TREE {:#x}", job.tree))?;
    mb.set_owner(job.uid, job.gid, job.flags & JOB_ADMIN != 0)
        .with_context(|| format!("SET_OWNER uid {} gid {}", job.uid, job.gid))?;
    mb.alloc().context("ALLOC")?;
    let fd = nix::fcntl::fcntl(mb.as_raw_fd(), nix::fcntl::FcntlArg::F_DUPFD(3))?;
    // SAFETY: F_DUPFD returned a new descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn start(d: &Daemon, job: &Job) -> Result<(), i32> {
    let blob = job.blob.get(..job.len as usize).ok_or(libc_einval())?;
    // The service checked the blob; check again (it is the program this daemon starts).
    fork::check(blob).map_err(|_| libc_einval())?;
    let strs: Vec<&OsStr> = blob[..blob.len() - 1]
        .split(|&b| b == 0)
        .map(OsStr::from_bytes)
        .collect();
    let (&path, args) = strs.split_first().ok_or(libc_einval())?;
    let path = Path::new(path);
    let what = format!(
        "child {}: {} for uid {} gid {}, tree {:#x} of node {}",
        job.serial,
        path.display(),
        job.uid,
        job.gid,
        job.tree,
        job.node
    );
    let id = Identity::of(job).map_err(|e| {
        if e == Errno::EPERM {
            log::warn!("{what}: refused: uid 0, and the issuer had no CAP_SYS_ADMIN");
        } else {
            log::error!("{what}: looking up the user: {e}");
        }
        e as i32
    })?;
    // Path rules judge the file exec will run: the path with its symlinks resolved, which is
    // then what is executed (a symlink changed in between cannot swap the program).
    let program = if d.policy.has_path_rules() {
        std::fs::canonicalize(path).map_err(|e| {
            log::warn!("{what}: {e}");
            e.raw_os_error().unwrap_or(Errno::EIO as i32)
        })?
    } else {
        path.to_path_buf()
    };
    let resolved = d
        .policy
        .has_path_rules()
        .then(|| program.as_os_str().as_bytes());
    d.policy
        .decide(job.uid, &id.raw_groups(), resolved)
        .map_err(|why| {
            let resolved = if program != path {
                format!(" (that is {})", program.display())
            } else {
                String::new()
            };
            log::warn!("{what}{resolved}: refused by the fork policy: {why}");
            Errno::EACCES as i32
        })?;
    let tree = tree_file(job).map_err(|e| {
        log::error!("{what}: tree {:#x}: {e:#}", job.tree);
        e.downcast_ref::<unimem_mailbox::Error>()
            .and_then(|m| m.errno())
            .map_or(Errno::EIO as i32, |e| e as i32)
    })?;
    let out = d.log_dir.child_log(job.serial, &id).map_err(|e| {
        log::error!(
            "{what}: {}/child-{}.log: {e}",
            d.log_dir.path.display(),
            job.serial
        );
        e as i32
    })?;
    let err = out.try_clone().map_err(|e| e.raw_os_error().unwrap_or(5))?;
    let mut cmd = Command::new(&program);
    cmd.arg0(path)
        .args(args)
        .env(gsas::TREE_FD_ENV, tree.as_raw_fd().to_string())
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err);
    match &id.user {
        Some(u) => cmd
            .env("HOME", &u.dir)
            .env("USER", &u.name)
            .env("LOGNAME", &u.name),
        None => cmd
            .env_remove("HOME")
            .env_remove("USER")
            .env_remove("LOGNAME"),
    };
    let become_it = id.clone();
    // SAFETY: `become_it` makes only async-signal-safe calls (system calls on data prepared
    // here), as the child of a threaded process must.
    unsafe {
        cmd.pre_exec(move || become_it.become_it());
    }
    let mut child = cmd.spawn().map_err(|e| {
        log::warn!("{what}: {e}");
        e.raw_os_error().unwrap_or(5)
    })?;
    drop(tree);
    log::info!(
        "child {}: started {} {args:?} (pid {}) as uid {} gid {} groups {:?} for tree {:#x} of node {}, output in {}/child-{}.log",
        job.serial,
        path.display(),
        child.id(),
        job.uid,
        job.gid,
        id.raw_groups(),
        job.tree,
        job.node,
        d.log_dir.path.display(),
        job.serial
    );
    post(&d.dev, job.serial, STARTED, child.id());
    let dev = d.dev.clone();
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

/// The policy of `--policy FILE`, or of [`DEFAULT_POLICY`] if it exists.
fn load_policy(given: Option<&Path>) -> Result<Policy> {
    let path = given.unwrap_or(Path::new(DEFAULT_POLICY));
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && given.is_none() => {
            log::info!("no fork policy ({DEFAULT_POLICY} does not exist): any program, any user");
            return Ok(Policy::default());
        }
        Err(e) => return Err(e).with_context(|| format!("fork policy {}", path.display())),
    };
    let policy = Policy::parse(&text, &path.display().to_string(), &SystemNames)?;
    // Whoever may write it decides what runs as whom on this node.
    if let Ok(m) = std::fs::metadata(path) {
        if m.uid() != nix::unistd::geteuid().as_raw() || m.mode() & 0o022 != 0 {
            log::warn!(
                "fork policy {}: owned by uid {} with mode {:o}: others than root may change it",
                path.display(),
                m.uid(),
                m.mode() & 0o7777
            );
        }
    }
    log::info!("fork policy {}: {}", path.display(), policy.summary());
    Ok(policy)
}

fn main() -> Result<()> {
    unimem_clidoc::generate_if_asked(Cli::command, "8");
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")).init();
    let cli = Cli::parse();
    if cli.uid.is_some() || cli.gid.is_some() {
        bail!("--uid and --gid are gone: every child runs as the user who forked it; --policy says who may fork what");
    }
    let policy = load_policy(cli.policy.as_deref())?;
    let log_dir = LogDir::open(&cli.log_dir)?;
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
    let d = Daemon {
        dev,
        log_dir,
        policy,
    };
    let mut job = Box::new(Job {
        serial: 0,
        tree: 0,
        node: 0,
        len: 0,
        uid: 0,
        gid: 0,
        flags: 0,
        _reserved: 0,
        blob: [0; fork::BLOB_MAX],
    });
    loop {
        // SAFETY: `job` is a valid `Job` the kernel writes.
        match unsafe { ioctl_job(d.dev.as_raw_fd(), &mut *job) } {
            Ok(_) => {}
            Err(Errno::EINTR) => continue,
            Err(e) => bail!("{DEVICE}: taking a job: {e}"),
        }
        if let Err(errno) = start(&d, &job) {
            post(&d.dev, job.serial, FAILED, errno as u32);
        }
    }
}
