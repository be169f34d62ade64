//! The agent of one PE, started by oshrun on the PE's node (remoteFork carries no
//! environment and no output): it starts the program with `SHMEM_JOB`, `SHMEM_PE` and its
//! protection tree, forwards its output into the PE's ring, stops it when the job is aborted
//! or oshrun's heartbeat stops, and exits with its status.

use anyhow::{Context, Result};
use gsas::Gsas;
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use shmem::job::{self, Layout};
use shmem::pe::{JOB_ENV, PE_ENV};
use shmem::ring::Ring;
use std::io::Read;
use std::os::fd::AsRawFd;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// oshrun counts its heartbeat every 0.5 s: this long without one, it is gone.
const HEARTBEAT_LOST: Duration = Duration::from_secs(15);
/// How long a stopped PE gets between SIGTERM and SIGKILL.
const TERM_GRACE: Duration = Duration::from_secs(2);

pub fn run(desc: u64, pe: usize, env: &[String], command: &[String]) -> Result<i32> {
    let g = Gsas::open().context("opening GSAS in the job's tree")?;
    let layout = Layout::open(&g, desc).map_err(anyhow::Error::msg)?;
    anyhow::ensure!(pe < layout.npes, "PE {pe} of a job of {}", layout.npes);
    let ring = Ring::of(&layout, pe);
    let tree = gsas::export_tree_fd().context("passing the tree to the PE")?;
    let (rd, wr) = nix::unistd::pipe().context("pipe")?;
    nix::fcntl::fcntl(
        rd.as_raw_fd(),
        nix::fcntl::FcntlArg::F_SETFD(nix::fcntl::FdFlag::FD_CLOEXEC),
    )?;
    let mut rd = std::fs::File::from(rd);
    let wr2 = wr.try_clone()?;
    let mut cmd = Command::new(&command[0]);
    for e in env {
        if let Some((k, v)) = e.split_once('=') {
            cmd.env(k, v);
        }
    }
    cmd.args(&command[1..])
        .env(JOB_ENV, format!("{desc:x}"))
        .env(PE_ENV, pe.to_string())
        .env(gsas::TREE_FD_ENV, tree.as_raw_fd().to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::from(wr))
        .stderr(Stdio::from(wr2))
        .process_group(0);
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            let msg = format!("cannot start {}: {e}\n", command[0]);
            let _ = ring.push(&g, &mut 0, msg.as_bytes());
            layout.abort(&g);
            finish(&g, &layout, pe, false);
            return Ok(127);
        }
    };
    drop(cmd);
    drop(tree);
    nix::fcntl::fcntl(
        rd.as_raw_fd(),
        nix::fcntl::FcntlArg::F_SETFL(nix::fcntl::OFlag::O_NONBLOCK),
    )?;
    let mut head = 0u64;
    let mut buf = vec![0u8; 4096];
    let mut status = None;
    let mut last_check = Instant::now();
    let mut beat = (0u64, Instant::now());
    let mut stopping: Option<Instant> = None;
    let mut eof = false;
    loop {
        let mut got = false;
        if !eof {
            match rd.read(&mut buf) {
                Ok(0) => eof = true,
                Ok(n) => {
                    got = true;
                    push_all(&g, &layout, &ring, &mut head, &buf[..n]);
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e).context("reading the PE's output"),
            }
        }
        if status.is_none() {
            status = child.try_wait()?;
        }
        if status.is_some() && (eof || !got) {
            break;
        }
        if last_check.elapsed() >= Duration::from_millis(200) {
            last_check = Instant::now();
            let hb = g.read(layout.word(job::hdr::HEARTBEAT)).unwrap_or(beat.0);
            if hb != beat.0 {
                beat = (hb, Instant::now());
            }
            let lost = beat.1.elapsed() > HEARTBEAT_LOST;
            if stopping.is_none() && (layout.aborted(&g) || lost) {
                if lost {
                    log::warn!("PE {pe}: oshrun's heartbeat stopped: stopping the PE");
                }
                signal(&child, Signal::SIGTERM);
                stopping = Some(Instant::now());
            }
            if stopping.is_some_and(|t| t.elapsed() > TERM_GRACE) {
                signal(&child, Signal::SIGKILL);
            }
        }
        if !got {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    finish(&g, &layout, pe, beat.1.elapsed() > HEARTBEAT_LOST);
    let s = status.expect("the loop ends when the child has exited");
    Ok(s.code().unwrap_or_else(|| 128 + s.signal().unwrap_or(127)))
}

/// After the PE: closes its ring and counts this agent done. If oshrun is gone, frees what
/// the PE left allocated (it died before shmem_finalize), and the last agent frees the
/// descriptor. Otherwise oshrun frees leftovers once every PE has exited: other PEs may
/// still be reaching this one's pages until then.
fn finish(g: &Gsas, layout: &Layout, pe: usize, oshrun_gone: bool) {
    if oshrun_gone {
        for a in layout.recorded(g, pe) {
            match g.free(a) {
                Ok(()) => log::info!("PE {pe}: freed {a:#x} it left allocated"),
                Err(e) => log::warn!("PE {pe}: freeing {a:#x}: {e}"),
            }
        }
        layout.forget(g, pe);
    }
    let _ = Ring::of(layout, pe).close(g);
    let done = g.fetch_add(layout.word(job::hdr::DONE), 1).map(|d| d + 1);
    if oshrun_gone && done.is_ok_and(|d| d == layout.npes as u64) {
        match g.free(layout.base) {
            Ok(()) => log::warn!(
                "oshrun is gone: freed the job descriptor {:#x}",
                layout.base
            ),
            Err(e) => log::warn!("freeing the job descriptor: {e}"),
        }
    }
}

fn signal(child: &Child, sig: Signal) {
    let _ = killpg(Pid::from_raw(child.id() as i32), sig);
}

/// Pushes all of `data`, waiting for oshrun to make room (it drains every few ms); gives
/// up when the job is aborted (oshrun may be gone).
fn push_all(g: &Gsas, layout: &Layout, ring: &Ring, head: &mut u64, mut data: &[u8]) {
    let mut waited = Instant::now();
    while !data.is_empty() {
        match ring.push(g, head, data) {
            Ok(n) if n > 0 => {
                data = &data[n..];
                waited = Instant::now();
            }
            Ok(_) => {
                if waited.elapsed() > Duration::from_secs(1) {
                    if layout.aborted(g) {
                        return;
                    }
                    waited = Instant::now();
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(e) => {
                log::warn!("output ring: {e}");
                return;
            }
        }
    }
}
