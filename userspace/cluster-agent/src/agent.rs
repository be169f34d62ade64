//! The agent's serving loop: reads requests from the port, runs them one at
//! a time and streams their output back.

use crate::decoder::{FrameDecoder, Interrupt};
use crate::frame::{Frame, Request};
use crate::job::{Job, JobState, Launch, Stream, TIMEOUT_STATUS};
use crate::out_queue::OutQueue;
use nix::fcntl::{fcntl, FcntlArg, OFlag};
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsFd, AsRawFd};
use std::process::Child;
use std::time::{Duration, Instant};

/// Pipe and port reads are done in chunks of this size; it is also the
/// largest Stdout/Stderr payload the agent produces.
const CHUNK: usize = 64 * 1024;
/// Stop reading the command's output while this much is waiting for the
/// host, so a slow or absent reader throttles the command instead of
/// growing the agent's memory.
const BACKLOG_LIMIT: usize = 512 * 1024;
/// How often killed children that have not died yet are checked on.
const REAP_POLL: Duration = Duration::from_millis(100);
/// How long a virtio port must keep reporting "no host" before the agent
/// concludes the client is gone and kills its command. Reacting at once is
/// unsafe: the guest learns of a disconnect through a control queue that
/// races with the data queue, so when one client leaves and the next one
/// connects, the next client's request can be read before the brief hangup
/// is seen, and would be killed with it. A next client that comes sooner
/// supersedes the old request anyway.
const HOST_GONE_AFTER: Duration = Duration::from_secs(1);

/// What to do when the port reports that the host side went away.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnHangup {
    /// Keep the port and try again after this long. A virtio port with no
    /// host client reads EOF and polls POLLHUP continuously, so without the
    /// pause the agent would spin. A running command is killed once the
    /// host has been away for a second.
    Wait(Duration),
    /// Return from [`serve`]; for transports that cannot come back, such
    /// as one end of a socketpair in tests.
    Return,
}

#[derive(Debug, Clone)]
pub struct ServeOptions {
    pub on_hangup: OnHangup,
    pub launch: Launch,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            on_hangup: OnHangup::Wait(Duration::from_millis(100)),
            launch: Launch::default(),
        }
    }
}

/// Serves requests arriving on `port` (any readable and writable fd: a
/// virtio port, a socket). Returns only on a hangup with
/// [`OnHangup::Return`] or on an unexpected I/O error.
pub fn serve(port: File, opts: &ServeOptions) -> io::Result<()> {
    let flags = OFlag::from_bits_retain(fcntl(port.as_raw_fd(), FcntlArg::F_GETFL)?);
    fcntl(
        port.as_raw_fd(),
        FcntlArg::F_SETFL(flags | OFlag::O_NONBLOCK),
    )?;
    let mut agent = Agent {
        port,
        opts,
        decoder: FrameDecoder::new(Interrupt::AnyHeader),
        out: OutQueue::default(),
        job: None,
        dying: Vec::new(),
        detached_until: None,
        host_missing_since: None,
        absence_handled: false,
        buf: vec![0; CHUNK],
    };
    let result = agent.run();
    agent.shutdown();
    result
}

enum Flow {
    Continue,
    Stop,
}

struct Agent<'a> {
    port: File,
    opts: &'a ServeOptions,
    decoder: FrameDecoder,
    out: OutQueue,
    job: Option<Job>,
    /// Killed children not reaped yet. They are not waited for inline: a
    /// process stuck in the kernel (this project's modules are under
    /// development) must not take the agent down with it.
    dying: Vec<Child>,
    /// While set, the host is away and the port is left alone until then.
    detached_until: Option<Instant>,
    /// Start of the current run of "no host" reports from the port.
    host_missing_since: Option<Instant>,
    /// Whether the current absence has already been acted upon.
    absence_handled: bool,
    buf: Vec<u8>,
}

/// What one poll found ready.
#[derive(Default)]
struct Ready {
    /// None while detached (the port was not polled).
    port: Option<PollFlags>,
    pipes: Vec<(Stream, PollFlags)>,
}

impl Agent<'_> {
    fn run(&mut self) -> io::Result<()> {
        loop {
            let now = Instant::now();
            self.reap();
            self.advance_job(now)?;
            if self.detached_until.is_some_and(|t| now >= t) {
                self.detached_until = None;
            }
            if let Flow::Stop = self.flush() {
                return Ok(());
            }
            let ready = self.wait(now)?;
            let now = Instant::now();
            for (stream, rev) in ready.pipes {
                if rev.is_empty() {
                    continue;
                }
                if let Some(job) = &mut self.job {
                    if let Some(frame) = job.read(stream, &mut self.buf, now) {
                        self.out.push(&frame);
                    }
                }
            }
            if let Some(rev) = ready.port {
                if let Flow::Stop = self.port_ready(rev)? {
                    return Ok(());
                }
            }
        }
    }

    /// Blocks until the port or the command's output is ready, or until
    /// something time-driven (exit check, timeout, retry) is due.
    fn wait(&self, now: Instant) -> io::Result<Ready> {
        let attached = self.detached_until.is_none();
        // With a backlog the pipes are left unread, which blocks the command.
        let pipes = match &self.job {
            Some(job) if self.out.bytes() < BACKLOG_LIMIT => job.pipes(),
            _ => Vec::new(),
        };
        let mut port_events = PollFlags::POLLIN;
        if !self.out.is_empty() {
            port_events |= PollFlags::POLLOUT;
        }
        let mut fds = Vec::with_capacity(3);
        if attached {
            fds.push(PollFd::new(self.port.as_fd(), port_events));
        }
        fds.extend(
            pipes
                .iter()
                .map(|(_, fd)| PollFd::new(*fd, PollFlags::POLLIN)),
        );
        match poll(&mut fds, self.poll_timeout(now)) {
            Ok(_) => {}
            Err(nix::errno::Errno::EINTR) => return Ok(Ready::default()),
            Err(e) => return Err(e.into()),
        }
        let mut revs = fds
            .iter()
            .map(|f| f.revents().unwrap_or(PollFlags::empty()));
        let port = if attached { revs.next() } else { None };
        let pipes = pipes.iter().map(|(s, _)| *s).zip(revs).collect();
        Ok(Ready { port, pipes })
    }

    fn poll_timeout(&self, now: Instant) -> PollTimeout {
        let mut wake = self.detached_until;
        if let Some(job) = &self.job {
            wake = earliest(wake, Some(job.wake_at(now)));
        }
        if !self.dying.is_empty() {
            wake = earliest(wake, Some(now + REAP_POLL));
        }
        match wake {
            None => PollTimeout::NONE,
            Some(t) => {
                // Round up so a deadline is never polled for 0 ms early.
                let ms = t.saturating_duration_since(now).as_micros().div_ceil(1000);
                PollTimeout::try_from(ms.min(60_000) as u32).unwrap_or(PollTimeout::MAX)
            }
        }
    }

    fn port_ready(&mut self, rev: PollFlags) -> io::Result<Flow> {
        if rev.contains(PollFlags::POLLNVAL) {
            return Err(io::Error::other("port fd is invalid"));
        }
        let hup = rev.intersects(PollFlags::POLLHUP | PollFlags::POLLERR);
        if !hup && self.host_missing_since.take().is_some() {
            log::debug!("host connected");
            self.absence_handled = false;
        }
        if rev.contains(PollFlags::POLLIN) {
            match self.port.read(&mut self.buf) {
                Ok(0) => return Ok(self.host_missing()),
                Ok(n) => {
                    self.decoder.push(&self.buf[..n]);
                    self.handle_frames();
                    return Ok(Flow::Continue);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    log::debug!("reading port: {e}");
                    return Ok(self.host_missing());
                }
            }
        }
        if hup {
            return Ok(self.host_missing());
        }
        Ok(Flow::Continue)
    }

    fn handle_frames(&mut self) {
        while let Some(frame) = self.decoder.next_frame() {
            self.report_skipped();
            match frame {
                Frame::Request(req) => self.start(req),
                Frame::Ping { id } => self.out.push_urgent(&Frame::Pong { id }),
                other => log::warn!(
                    "ignoring unexpected {} frame (id {:#x})",
                    other.kind_name(),
                    other.id()
                ),
            }
        }
        self.report_skipped();
    }

    fn report_skipped(&mut self) {
        if let Some(s) = self.decoder.take_skipped() {
            log::warn!(
                "skipped {} bytes of garbage from host ({})",
                s.bytes,
                s.reason
            );
        }
    }

    fn start(&mut self, req: Request) {
        // The host serializes its clients, so a new request while one is
        // still running means the previous client is gone: its command and
        // any output not yet sent are of no use to anyone.
        if let Some(old) = self.job.take() {
            log::warn!(
                "request {:#x} supersedes unfinished request {:#x}; killing it",
                req.id,
                old.id
            );
            self.dying.push(old.kill());
        }
        self.out.retain_unsent(|id| id == req.id);
        log::info!(
            "request {:#x}: {:?} (timeout {} ms, {} env)",
            req.id,
            abbreviate(&req.command),
            req.timeout_ms,
            req.env.len()
        );
        match Job::spawn(&req, &self.opts.launch) {
            Ok(job) => self.job = Some(job),
            Err(e) => {
                log::error!("request {:#x}: spawning shell: {e}", req.id);
                let msg = format!(
                    "unimem-agent: cannot run {}: {e}\n",
                    self.opts.launch.shell.display()
                );
                self.out.push(&Frame::Stderr {
                    id: req.id,
                    data: msg.into_bytes(),
                });
                self.out.push(&Frame::Exit {
                    id: req.id,
                    status: 127,
                });
            }
        }
    }

    fn advance_job(&mut self, now: Instant) -> io::Result<()> {
        let Some(job) = &mut self.job else {
            return Ok(());
        };
        let paused = self.out.bytes() >= BACKLOG_LIMIT;
        match job.poll_state(now, paused)? {
            JobState::Running => {}
            JobState::Finished(status) => {
                let job = self.job.take().expect("job present");
                log::info!(
                    "request {:#x}: exit status {status} after {:?}",
                    job.id,
                    job.started.elapsed()
                );
                self.out.push(&Frame::Exit { id: job.id, status });
            }
            JobState::TimedOut => {
                let job = self.job.take().expect("job present");
                let (id, elapsed) = (job.id, job.started.elapsed());
                log::warn!("request {id:#x}: timed out after {elapsed:?}; killing");
                self.dying.push(job.kill());
                let note = format!(
                    "unimem-agent: timed out after {:.1}s; killed the command's process group\n",
                    elapsed.as_secs_f64()
                );
                self.out.push(&Frame::Stderr {
                    id,
                    data: note.into_bytes(),
                });
                self.out.push(&Frame::Exit {
                    id,
                    status: TIMEOUT_STATUS,
                });
            }
        }
        Ok(())
    }

    fn flush(&mut self) -> Flow {
        if self.detached_until.is_some() || self.out.is_empty() {
            return Flow::Continue;
        }
        match self.out.flush_into(&mut self.port) {
            Ok(()) => Flow::Continue,
            Err(e) => {
                log::debug!("writing port: {e}");
                self.host_missing()
            }
        }
    }

    /// The port says no host is connected (or, for a socket, the peer
    /// closed it).
    fn host_missing(&mut self) -> Flow {
        let now = Instant::now();
        match self.opts.on_hangup {
            OnHangup::Return => {
                self.abandon();
                Flow::Stop
            }
            OnHangup::Wait(pause) => {
                let since = *self.host_missing_since.get_or_insert(now);
                if !self.absence_handled && now - since >= HOST_GONE_AFTER {
                    log::debug!("host disconnected");
                    self.absence_handled = true;
                    self.abandon();
                }
                self.detached_until = Some(now + pause);
                Flow::Continue
            }
        }
    }

    /// The host client is gone: whatever it asked for is abandoned, like a
    /// command whose ssh session closed, and so is anything it half sent.
    fn abandon(&mut self) {
        if let Some(job) = self.job.take() {
            log::warn!("request {:#x}: host went away; killing it", job.id);
            self.dying.push(job.kill());
        }
        self.out.retain_unsent(|_| false);
        self.decoder.reset();
        // A partial frame from a client that died is expected; not worth a
        // warning.
        let _ = self.decoder.take_skipped();
    }

    fn reap(&mut self) {
        self.dying.retain_mut(|child| match child.try_wait() {
            Ok(Some(_)) => false,
            Ok(None) => true,
            Err(e) => {
                log::warn!("reaping {}: {e}", child.id());
                false
            }
        });
    }

    fn shutdown(&mut self) {
        if let Some(job) = self.job.take() {
            self.dying.push(job.kill());
        }
        for mut child in self.dying.drain(..) {
            let _ = child.wait();
        }
    }
}

/// Keeps the console readable when a request carries a whole script.
fn abbreviate(s: &str) -> std::borrow::Cow<'_, str> {
    const MAX: usize = 200;
    match s.char_indices().nth(MAX) {
        None => s.into(),
        Some((cut, _)) => format!("{}...", &s[..cut]).into(),
    }
}

fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}
