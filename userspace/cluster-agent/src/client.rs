//! Host side: talking to one node's agent through the UNIX socket that QEMU
//! serves for the virtio-serial port.

use crate::decoder::{FrameDecoder, Interrupt};
use crate::frame::{Frame, FrameError, Request};
use nix::fcntl::{Flock, FlockArg};
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use thiserror::Error;

/// How often a Ping is repeated while waiting for the agent. Earlier ones
/// may have been swallowed by a partial frame left on the port; the extras
/// are answered later with our own id and simply ignored.
const PING_INTERVAL: Duration = Duration::from_secs(1);
/// Pause between attempts to reach a socket that does not exist yet.
const CONNECT_RETRY: Duration = Duration::from_millis(100);

#[derive(Debug, Error)]
pub enum ClientError {
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: io::Error,
    },
    #[error("timed out {0}")]
    Timeout(String),
    #[error("the agent's socket closed the connection (VM gone?)")]
    Disconnected,
    #[error("bad request: {0}")]
    Frame(#[from] FrameError),
    /// Writing the command's output locally failed (e.g. a closed pipe).
    #[error("writing local {stream}: {source}")]
    Output {
        stream: &'static str,
        #[source]
        source: io::Error,
    },
}

fn io_err(context: impl Into<String>) -> impl FnOnce(io::Error) -> ClientError {
    let context = context.into();
    move |source| ClientError::Io { context, source }
}

/// A fresh request id. Ids only need to differ from those of earlier,
/// abandoned clients, so hashing the time and pid with std's randomly
/// keyed hasher is enough.
pub fn new_request_id() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    h.write_u128(nanos);
    h.write_u32(std::process::id());
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    h.finish()
}

/// `SOCKET.lock`, the file host callers flock to take turns: QEMU's
/// chardev serves one client at a time and would leave others queued on
/// the socket, talking into a port they do not own.
pub fn lock_path(socket: &Path) -> PathBuf {
    let mut p = socket.as_os_str().to_owned();
    p.push(".lock");
    PathBuf::from(p)
}

/// Takes the exclusive lock for `socket`. Creating the lock file is retried
/// until `create_by` (the run directory may not exist yet while the cluster
/// starts); waiting for another caller to finish is bounded by `wait_until`
/// if given.
pub fn acquire_lock(
    socket: &Path,
    create_by: Instant,
    wait_until: Option<Instant>,
) -> Result<Flock<File>, ClientError> {
    let path = lock_path(socket);
    let file = loop {
        match OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
        {
            Ok(f) => break f,
            Err(e) if e.kind() == io::ErrorKind::NotFound && Instant::now() < create_by => {
                std::thread::sleep(CONNECT_RETRY)
            }
            Err(e) => return Err(io_err(format!("creating {}", path.display()))(e)),
        }
    };
    let Some(until) = wait_until else {
        return Flock::lock(file, FlockArg::LockExclusive)
            .map_err(|(_, e)| io_err(format!("locking {}", path.display()))(e.into()));
    };
    let mut file = file;
    loop {
        match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
            Ok(lock) => return Ok(lock),
            Err((f, nix::errno::Errno::EWOULDBLOCK)) if Instant::now() < until => {
                file = f;
                std::thread::sleep(CONNECT_RETRY);
            }
            Err((_, nix::errno::Errno::EWOULDBLOCK)) => {
                return Err(ClientError::Timeout(format!(
                    "waiting for another client to release {}",
                    path.display()
                )))
            }
            Err((_, e)) => return Err(io_err(format!("locking {}", path.display()))(e.into())),
        }
    }
}

/// Connects to `socket`, retrying until `deadline` while it does not exist
/// or nobody listens on it yet (QEMU still starting).
pub fn connect(socket: &Path, deadline: Instant) -> Result<UnixStream, ClientError> {
    loop {
        match UnixStream::connect(socket) {
            Ok(s) => return Ok(s),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::NotFound | io::ErrorKind::ConnectionRefused
                ) && Instant::now() < deadline =>
            {
                std::thread::sleep(CONNECT_RETRY.min(deadline - Instant::now()))
            }
            Err(e) => return Err(io_err(format!("connecting to {}", socket.display()))(e)),
        }
    }
}

/// Receives a command's output as it arrives.
pub trait OutputSink {
    fn stdout(&mut self, data: &[u8]) -> io::Result<()>;
    fn stderr(&mut self, data: &[u8]) -> io::Result<()>;
}

/// Copies output to this process's stdout and stderr, flushing every chunk
/// so interleaving and progress stay visible.
#[derive(Debug, Default)]
pub struct StdioSink;

impl OutputSink for StdioSink {
    fn stdout(&mut self, data: &[u8]) -> io::Result<()> {
        let mut out = io::stdout().lock();
        out.write_all(data)?;
        out.flush()
    }
    fn stderr(&mut self, data: &[u8]) -> io::Result<()> {
        let mut err = io::stderr().lock();
        err.write_all(data)?;
        err.flush()
    }
}

/// Collects output in memory (for tests and programmatic callers).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Captured {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

impl OutputSink for Captured {
    fn stdout(&mut self, data: &[u8]) -> io::Result<()> {
        self.stdout.extend_from_slice(data);
        Ok(())
    }
    fn stderr(&mut self, data: &[u8]) -> io::Result<()> {
        self.stderr.extend_from_slice(data);
        Ok(())
    }
}

/// What to run.
#[derive(Debug, Clone, Default)]
pub struct RunSpec {
    /// Shell command line, run as `/bin/sh -c command`.
    pub command: String,
    pub env: Vec<(String, String)>,
    /// Enforced by the agent, which then reports status 124.
    pub timeout: Option<Duration>,
}

/// One client's conversation with the agent. The Ping and the Request share
/// the session's id, so everything carrying another id is left over from
/// somebody else and is dropped.
///
/// The stream is normally the QEMU socket; anything pollable works (tests
/// use socketpairs and ptys). It is used in blocking mode.
pub struct Session<S = UnixStream> {
    stream: S,
    id: u64,
    decoder: FrameDecoder,
    buf: Vec<u8>,
}

impl<S: Read + Write + AsFd> Session<S> {
    pub fn new(stream: S) -> Self {
        Self::with_id(stream, new_request_id())
    }

    pub fn with_id(stream: S, id: u64) -> Self {
        Session {
            stream,
            id,
            decoder: FrameDecoder::new(Interrupt::Id(id)),
            buf: vec![0; 64 * 1024],
        }
    }

    pub fn id(&self) -> u64 {
        self.id
    }

    pub fn into_inner(self) -> S {
        self.stream
    }

    /// Waits until the agent answers, i.e. the node has booted far enough.
    pub fn ping(&mut self, deadline: Instant) -> Result<(), ClientError> {
        loop {
            self.send(&Frame::Ping { id: self.id })?;
            let resend = (Instant::now() + PING_INTERVAL).min(deadline);
            while let Some(frame) = self.next_frame(Some(resend))? {
                match frame {
                    Frame::Pong { id } if id == self.id => return Ok(()),
                    other => self.stale(&other),
                }
            }
            if Instant::now() >= deadline {
                return Err(ClientError::Timeout(
                    "waiting for the agent to answer".into(),
                ));
            }
        }
    }

    /// Runs `spec` and returns its exit status, passing output to `sink` as
    /// it arrives. `deadline` bounds the whole wait (None: wait as long as
    /// the command runs).
    pub fn run(
        &mut self,
        spec: &RunSpec,
        sink: &mut dyn OutputSink,
        deadline: Option<Instant>,
    ) -> Result<i32, ClientError> {
        let timeout_ms = spec
            .timeout
            .map(|t| (t.as_nanos().div_ceil(1_000_000)).clamp(1, u128::from(u64::MAX)) as u64)
            .unwrap_or(0);
        self.send(&Frame::Request(Request {
            id: self.id,
            timeout_ms,
            env: spec.env.clone(),
            command: spec.command.clone(),
        }))?;
        loop {
            let Some(frame) = self.next_frame(deadline)? else {
                return Err(ClientError::Timeout(
                    "waiting for the command to finish".into(),
                ));
            };
            if frame.id() != self.id {
                self.stale(&frame);
                continue;
            }
            match frame {
                Frame::Stdout { data, .. } => {
                    sink.stdout(&data).map_err(|source| ClientError::Output {
                        stream: "stdout",
                        source,
                    })?
                }
                Frame::Stderr { data, .. } => {
                    sink.stderr(&data).map_err(|source| ClientError::Output {
                        stream: "stderr",
                        source,
                    })?
                }
                Frame::Exit { status, .. } => return Ok(status),
                // Answers to our repeated pings.
                Frame::Pong { .. } => {}
                other => self.stale(&other),
            }
        }
    }

    fn stale(&self, frame: &Frame) {
        log::debug!(
            "ignoring {} frame for id {:#x} (ours is {:#x})",
            frame.kind_name(),
            frame.id(),
            self.id
        );
    }

    fn send(&mut self, frame: &Frame) -> Result<(), ClientError> {
        let bytes = frame.encode()?;
        self.stream
            .write_all(&bytes)
            .map_err(io_err("sending to the agent"))
    }

    /// The next frame, or None if `deadline` passed first.
    fn next_frame(&mut self, deadline: Option<Instant>) -> Result<Option<Frame>, ClientError> {
        loop {
            let frame = self.decoder.next_frame();
            if let Some(s) = self.decoder.take_skipped() {
                log::debug!("skipped {} bytes of stale data ({})", s.bytes, s.reason);
            }
            if frame.is_some() {
                return Ok(frame);
            }
            let timeout = match deadline {
                None => PollTimeout::NONE,
                Some(d) => {
                    let left = d.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return Ok(None);
                    }
                    let ms = left.as_micros().div_ceil(1000).min(60_000) as u32;
                    PollTimeout::try_from(ms).unwrap_or(PollTimeout::MAX)
                }
            };
            let mut fds = [PollFd::new(self.stream.as_fd(), PollFlags::POLLIN)];
            match poll(&mut fds, timeout) {
                Ok(0) => continue,
                Ok(_) => {}
                Err(nix::errno::Errno::EINTR) => continue,
                Err(e) => return Err(io_err("polling the agent socket")(e.into())),
            }
            match self.stream.read(&mut self.buf) {
                Ok(0) => return Err(ClientError::Disconnected),
                Ok(n) => self.decoder.push(&self.buf[..n]),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(io_err("reading from the agent")(e)),
            }
        }
    }
}
