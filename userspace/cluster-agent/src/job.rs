//! One command run by the agent: its process group, pipes and deadline.

use crate::frame::{Frame, Request};
use nix::fcntl::{fcntl, FcntlArg, OFlag};
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use std::io::{self, Read};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::{Child, ChildStderr, ChildStdout, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// Exit status reported when a request's timeout expires (as timeout(1)).
pub const TIMEOUT_STATUS: i32 = 124;

/// After the shell exits, its pipes may still be held by processes it put in
/// the background. Output it wrote itself is already in the pipe, so stop
/// waiting for EOF once the pipes have been quiet this long...
const DRAIN_IDLE: Duration = Duration::from_millis(200);
/// ...or once this much more has been read (two full pipe buffers is all
/// the exited shell can have left behind; the rest is a chatty background
/// process that would otherwise hold the agent forever).
const DRAIN_LIMIT: usize = 256 * 1024;
/// How often to check for the exit of a child whose pipes are still open;
/// the usual exit also closes the pipes, which wakes the loop sooner.
const EXIT_POLL: Duration = Duration::from_millis(50);

/// How commands are started.
#[derive(Debug, Clone)]
pub struct Launch {
    pub shell: PathBuf,
    pub cwd: PathBuf,
    /// PATH for commands; request env entries are applied after it.
    pub path: String,
}

impl Default for Launch {
    fn default() -> Self {
        Launch {
            shell: "/bin/sh".into(),
            cwd: "/".into(),
            path: "/usr/sbin:/usr/bin:/sbin:/bin".into(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stream {
    Stdout,
    Stderr,
}

pub(crate) enum JobState {
    Running,
    TimedOut,
    Finished(i32),
}

struct Exited {
    status: i32,
    idle_since: Instant,
    drained: usize,
}

pub(crate) struct Job {
    pub id: u64,
    child: Child,
    stdout: Option<ChildStdout>,
    stderr: Option<ChildStderr>,
    pub started: Instant,
    deadline: Option<Instant>,
    pipes_closed_at: Option<Instant>,
    exited: Option<Exited>,
}

impl Job {
    pub fn spawn(req: &Request, launch: &Launch) -> io::Result<Job> {
        let mut cmd = Command::new(&launch.shell);
        cmd.arg("-c")
            .arg(&req.command)
            .current_dir(&launch.cwd)
            .env_clear()
            .env("PATH", &launch.path)
            .envs(req.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Own process group, so a timeout also kills what the shell
            // started, and nothing else.
            .process_group(0);
        let mut child = cmd.spawn()?;
        let stdout = child.stdout.take();
        let stderr = child.stderr.take();
        for fd in [
            stdout.as_ref().map(|p| p.as_raw_fd()),
            stderr.as_ref().map(|p| p.as_raw_fd()),
        ]
        .into_iter()
        .flatten()
        {
            fcntl(fd, FcntlArg::F_SETFL(OFlag::O_NONBLOCK))?;
        }
        let started = Instant::now();
        // A timeout too large to represent is as good as none.
        let deadline = (req.timeout_ms > 0)
            .then(|| started.checked_add(Duration::from_millis(req.timeout_ms)))
            .flatten();
        Ok(Job {
            id: req.id,
            child,
            stdout,
            stderr,
            started,
            deadline,
            pipes_closed_at: None,
            exited: None,
        })
    }

    pub fn pipes(&self) -> Vec<(Stream, BorrowedFd<'_>)> {
        let mut v = Vec::with_capacity(2);
        if let Some(p) = &self.stdout {
            v.push((Stream::Stdout, p.as_fd()));
        }
        if let Some(p) = &self.stderr {
            v.push((Stream::Stderr, p.as_fd()));
        }
        v
    }

    /// One read from a pipe the poll said is ready. Returns output to
    /// forward; closes the pipe on EOF or error.
    pub fn read(&mut self, stream: Stream, buf: &mut [u8], now: Instant) -> Option<Frame> {
        let res = match stream {
            Stream::Stdout => self.stdout.as_mut().map(|p| p.read(buf)),
            Stream::Stderr => self.stderr.as_mut().map(|p| p.read(buf)),
        }?;
        match res {
            Ok(n) if n > 0 => {
                if let Some(ex) = &mut self.exited {
                    ex.drained += n;
                    ex.idle_since = now;
                }
                let (id, data) = (self.id, buf[..n].to_vec());
                Some(match stream {
                    Stream::Stdout => Frame::Stdout { id, data },
                    Stream::Stderr => Frame::Stderr { id, data },
                })
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => None,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => None,
            res => {
                if let Err(e) = res {
                    log::warn!("request {:#x}: reading {stream:?}: {e}", self.id);
                }
                match stream {
                    Stream::Stdout => self.stdout = None,
                    Stream::Stderr => self.stderr = None,
                }
                if self.stdout.is_none() && self.stderr.is_none() {
                    self.pipes_closed_at = Some(now);
                }
                None
            }
        }
    }

    /// Advances the job's state. `paused` says the agent is not reading the
    /// pipes (output backlog), which must not count as the pipes being idle.
    pub fn poll_state(&mut self, now: Instant, paused: bool) -> io::Result<JobState> {
        if self.exited.is_none() {
            if let Some(status) = self.child.try_wait()? {
                self.exited = Some(Exited {
                    status: status_code(status),
                    idle_since: now,
                    drained: 0,
                });
            }
        }
        match &mut self.exited {
            None if self.deadline.is_some_and(|d| now >= d) => Ok(JobState::TimedOut),
            None => Ok(JobState::Running),
            Some(ex) => {
                if paused {
                    ex.idle_since = now;
                }
                let drained = self.stdout.is_none() && self.stderr.is_none();
                if drained || now >= ex.idle_since + DRAIN_IDLE || ex.drained >= DRAIN_LIMIT {
                    Ok(JobState::Finished(ex.status))
                } else {
                    Ok(JobState::Running)
                }
            }
        }
    }

    /// When the agent loop must look at this job again even if nothing is
    /// readable.
    pub fn wake_at(&self, now: Instant) -> Instant {
        let next = match (&self.exited, self.pipes_closed_at) {
            (Some(ex), _) => ex.idle_since + DRAIN_IDLE,
            // Pipes closed but not reaped yet: exit is imminent, so look
            // again soon, backing off in case the command just closed its
            // output and kept running.
            (None, Some(closed)) => {
                now + ((now - closed) / 4).clamp(Duration::from_millis(1), EXIT_POLL)
            }
            (None, None) => now + EXIT_POLL,
        };
        match self.deadline {
            Some(d) if self.exited.is_none() => next.min(d),
            _ => next,
        }
    }

    /// Kills the whole process group and hands back the child for reaping;
    /// the pipes are closed so leftover writers get EPIPE instead of blocking.
    pub fn kill(self) -> Child {
        let mut child = self.child;
        if self.exited.is_none() {
            let pgid = Pid::from_raw(child.id() as i32);
            if let Err(e) = killpg(pgid, Signal::SIGKILL) {
                log::debug!("killpg {pgid}: {e}");
            }
            let _ = child.kill();
        }
        child
    }
}

/// Shell convention: the exit code, or 128 + the signal that killed it.
pub(crate) fn status_code(status: ExitStatus) -> i32 {
    match (status.code(), status.signal()) {
        (Some(code), _) => code,
        (None, Some(sig)) => 128 + sig,
        (None, None) => 255,
    }
}
