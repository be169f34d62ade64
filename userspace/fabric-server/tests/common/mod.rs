//! Shared by the integration tests: runs the real binary, and talks to it the way QEMU's
//! ivshmem-doorbell device does and the way scripts/cluster talks to its control socket.
#![allow(dead_code)] // each test crate uses its own subset

use std::collections::BTreeMap;
use std::fs;
use std::io::{IoSliceMut, Read};
use std::num::NonZeroUsize;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread::sleep;
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::mman::{mmap, munmap, MapFlags, ProtFlags};
use nix::sys::signal::{kill, Signal};
use nix::sys::socket::{recvmsg, ControlMessageOwned, MsgFlags};
use nix::unistd::{read, write, Pid};

pub const TIMEOUT: Duration = Duration::from_secs(10);
pub const REGION: u64 = 64 << 20;
pub const CTL: u64 = 2 << 20;

/// A scratch directory removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new() -> Self {
        static COUNT: AtomicUsize = AtomicUsize::new(0);
        let path = std::env::temp_dir().join(format!(
            "unimem-fabric-test-{}-{}",
            std::process::id(),
            COUNT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = fs::remove_dir_all(&path);
        fs::create_dir_all(&path).unwrap();
        TempDir(path)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

pub fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(start.elapsed() < TIMEOUT, "timed out waiting for {what}");
        sleep(Duration::from_millis(10));
    }
}

pub fn wait_exit(child: &mut Child) -> ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        assert!(start.elapsed() < TIMEOUT, "server did not exit");
        sleep(Duration::from_millis(10));
    }
}

/// A running server with its socket and state directory in a scratch directory.
pub struct Server {
    pub child: Option<Child>,
    pub socket: PathBuf,
    pub state: PathBuf,
    pub log: PathBuf,
    /// Its control socket.
    pub control: PathBuf,
    // Last: removed after the child is gone.
    _dir: TempDir,
}

impl Server {
    pub fn start(nodes: u32, vectors: u32) -> Self {
        Self::start_with(nodes, vectors, |_| {})
    }

    pub fn start_with(nodes: u32, vectors: u32, tweak: impl FnOnce(&mut Command)) -> Self {
        Self::start_full(nodes, vectors, "64M", "2M", tweak)
    }

    /// With a region of `region_size` and a control area of `ctl_size` (sizes as the command
    /// line takes them).
    pub fn start_full(
        nodes: u32,
        vectors: u32,
        region_size: &str,
        ctl_size: &str,
        tweak: impl FnOnce(&mut Command),
    ) -> Self {
        let dir = TempDir::new();
        let socket = dir.0.join("fabric.sock");
        let state = dir.0.join("state");
        let log = dir.0.join("server.log");
        let mut cmd = command_with(&socket, &state, &log, nodes, vectors, region_size, ctl_size);
        tweak(&mut cmd);
        let child = cmd.spawn().unwrap();
        let server = Server {
            child: Some(child),
            control: control_path(&socket),
            socket,
            state,
            log,
            _dir: dir,
        };
        let ready = server.state.join("ready");
        wait_until("the ready file", || ready.exists());
        server
    }

    pub fn connect(&self) -> Client {
        Client::connect(&self.socket)
    }

    pub fn pid(&self) -> Pid {
        Pid::from_raw(self.child.as_ref().unwrap().id() as i32)
    }

    pub fn stop(&mut self, signal: Signal) -> ExitStatus {
        let mut child = self.child.take().unwrap();
        kill(Pid::from_raw(child.id() as i32), signal).unwrap();
        wait_exit(&mut child)
    }

    pub fn peer_file(&self, id: u32) -> PathBuf {
        self.state.join(format!("peer-{id}"))
    }

    /// Connects to the control socket.
    pub fn ctl_conn(&self) -> CtlConn {
        CtlConn::connect(&self.control)
    }

    /// Sends one command line (`line` without its newline) on a connection of its own and
    /// returns the reply line.
    pub fn ctl(&self, line: &str) -> String {
        let mut c = self.ctl_conn();
        c.send(line.as_bytes());
        c.reply()
    }

    /// `unimem-fabric ctl --control ... WORDS`: its exit code and stdout.
    pub fn ctl_tool(&self, words: &[&str]) -> (i32, String) {
        let out = Command::new(env!("CARGO_BIN_EXE_unimem-fabric"))
            .arg("ctl")
            .arg("--control")
            .arg(&self.control)
            .args(words)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8(out.stdout).unwrap(),
        )
    }
}

/// The control socket a server started by these helpers uses, next to its VM socket.
pub fn control_path(socket: &Path) -> PathBuf {
    socket.with_extension("ctl")
}

/// A connection to a server's control socket.
pub struct CtlConn {
    pub sock: UnixStream,
    /// Received bytes not returned yet.
    buf: Vec<u8>,
}

impl CtlConn {
    pub fn connect(path: &Path) -> Self {
        let sock = UnixStream::connect(path).unwrap();
        sock.set_read_timeout(Some(TIMEOUT)).unwrap();
        sock.set_write_timeout(Some(TIMEOUT)).unwrap();
        CtlConn {
            sock,
            buf: Vec::new(),
        }
    }

    /// Sends `bytes` and a newline.
    pub fn send(&mut self, bytes: &[u8]) {
        use std::io::Write;
        let mut line = bytes.to_vec();
        line.push(b'\n');
        self.sock.write_all(&line).unwrap();
    }

    /// The next reply line, without its newline. Fails the test on a timeout or end of file.
    pub fn reply(&mut self) -> String {
        loop {
            if let Some(end) = self.buf.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = self.buf.drain(..=end).collect();
                return String::from_utf8(line[..end].to_vec()).unwrap();
            }
            let mut chunk = [0u8; 4096];
            let n = self
                .sock
                .read(&mut chunk)
                .unwrap_or_else(|e| panic!("reading a control reply: {e}"));
            assert!(n > 0, "the control connection closed without a reply");
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = kill(Pid::from_raw(child.id() as i32), Signal::SIGKILL);
            let _ = child.wait();
        }
        if std::thread::panicking() {
            let log = fs::read_to_string(&self.log).unwrap_or_default();
            eprintln!("--- server log ---\n{log}--- end of server log ---");
        }
    }
}

pub fn spawn(socket: &Path, state: &Path, log: &Path, nodes: u32, vectors: u32) -> Child {
    command(socket, state, log, nodes, vectors).spawn().unwrap()
}

pub fn command(socket: &Path, state: &Path, log: &Path, nodes: u32, vectors: u32) -> Command {
    command_with(socket, state, log, nodes, vectors, "64M", "2M")
}

pub fn command_with(
    socket: &Path,
    state: &Path,
    log: &Path,
    nodes: u32,
    vectors: u32,
    region_size: &str,
    ctl_size: &str,
) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_unimem-fabric"));
    cmd.arg("--socket")
        .arg(socket)
        .arg("--control")
        .arg(control_path(socket))
        .arg("--state-dir")
        .arg(state)
        .args(["--nodes", &nodes.to_string()])
        .args(["--vectors", &vectors.to_string()])
        .args(["--region-size", region_size, "--ctl-size", ctl_size])
        .env("RUST_LOG", "debug")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(fs::File::create(log).unwrap());
    cmd
}

/// A fake QEMU: reads the server's messages and keeps the fds they carry.
pub struct Client {
    pub sock: UnixStream,
}

/// What a client learns on connect.
pub struct Welcome {
    pub id: i64,
    pub shm: OwnedFd,
    /// Doorbells of the other peers, by peer id, in vector order.
    pub peers: BTreeMap<i64, Vec<OwnedFd>>,
    /// The client's own doorbells, in vector order.
    pub own: Vec<OwnedFd>,
}

impl Client {
    pub fn connect(path: &Path) -> Self {
        let sock = UnixStream::connect(path).unwrap();
        sock.set_read_timeout(Some(TIMEOUT)).unwrap();
        Client { sock }
    }

    /// The next message, or `None` at end of file. Fails the test on a timeout.
    pub fn recv(&self) -> Option<(i64, Option<OwnedFd>)> {
        let mut bytes = [0u8; 8];
        let mut got = 0;
        let mut fds: Vec<OwnedFd> = Vec::new();
        while got < bytes.len() {
            let mut cmsg = nix::cmsg_space!([RawFd; 4]);
            let mut iov = [IoSliceMut::new(&mut bytes[got..])];
            let msg = recvmsg::<()>(
                self.sock.as_raw_fd(),
                &mut iov,
                Some(&mut cmsg),
                MsgFlags::MSG_CMSG_CLOEXEC,
            )
            .unwrap_or_else(|e| panic!("recvmsg: {e}"));
            for c in msg.cmsgs().unwrap() {
                if let ControlMessageOwned::ScmRights(raw) = c {
                    // SAFETY: the kernel just installed these fds for us; nothing else owns them.
                    fds.extend(
                        raw.into_iter()
                            .map(|fd| unsafe { OwnedFd::from_raw_fd(fd) }),
                    );
                }
            }
            assert!(
                !msg.flags.contains(MsgFlags::MSG_CTRUNC),
                "fds were truncated"
            );
            if msg.bytes == 0 {
                assert_eq!(got, 0, "end of file inside a message");
                assert!(fds.is_empty());
                return None;
            }
            got += msg.bytes;
        }
        assert!(fds.len() <= 1, "a message carried {} fds", fds.len());
        Some((i64::from_le_bytes(bytes), fds.pop()))
    }

    pub fn expect(&self, value: i64, with_fd: bool) -> Option<OwnedFd> {
        let (v, fd) = self.recv().expect("unexpected end of file");
        assert_eq!(v, value, "unexpected message");
        assert_eq!(fd.is_some(), with_fd, "message {v} fd presence");
        fd
    }

    /// Checks the whole connect sequence: the spec's steps 1-5, with existing peers in id
    /// order.
    pub fn welcome(&self, id: i64, peers: &[i64], vectors: u32) -> Welcome {
        self.expect(0, false);
        self.expect(id, false);
        let shm = self.expect(-1, true).unwrap();
        let mut known = BTreeMap::new();
        for &p in peers {
            let fds = (0..vectors)
                .map(|_| self.expect(p, true).unwrap())
                .collect();
            known.insert(p, fds);
        }
        let own = (0..vectors)
            .map(|_| self.expect(id, true).unwrap())
            .collect();
        self.assert_quiet();
        Welcome {
            id,
            shm,
            peers: known,
            own,
        }
    }

    /// A peer connected: its id once per vector, each with a doorbell fd.
    pub fn peer_joined(&self, id: i64, vectors: u32) -> Vec<OwnedFd> {
        (0..vectors)
            .map(|_| self.expect(id, true).unwrap())
            .collect()
    }

    /// Nothing more is queued for this client (give the server a moment to send strays).
    pub fn assert_quiet(&self) {
        sleep(Duration::from_millis(50));
        let mut b = [0u8; 8];
        match nix::sys::socket::recv(self.sock.as_raw_fd(), &mut b, MsgFlags::MSG_DONTWAIT) {
            Err(Errno::EAGAIN) => {}
            other => panic!("expected no pending message, got {other:?} ({b:?})"),
        }
    }

    pub fn assert_closed(&self) {
        assert!(self.recv().is_none(), "expected end of file");
    }
}

pub fn readable(fd: &OwnedFd) -> bool {
    let mut fds = [PollFd::new(fd.as_fd(), PollFlags::POLLIN)];
    poll(&mut fds, PollTimeout::from(200u16)).unwrap() == 1
}

pub fn ring(fd: &OwnedFd) {
    assert_eq!(write(fd, &1u64.to_ne_bytes()).unwrap(), 8);
}

/// Drains an eventfd, returning its counter.
pub fn take(fd: &OwnedFd) -> u64 {
    let mut b = [0u8; 8];
    assert_eq!(read(fd.as_raw_fd(), &mut b).unwrap(), 8);
    u64::from_ne_bytes(b)
}

/// Maps one page of the region.
pub struct Mapping {
    ptr: std::ptr::NonNull<std::ffi::c_void>,
}

pub const PAGE: usize = 4096;

impl Mapping {
    /// The first page, where the descriptor is.
    pub fn new(fd: &OwnedFd) -> Self {
        Self::at(fd, 0)
    }

    /// The page at `offset` (page-aligned).
    pub fn at(fd: &OwnedFd, offset: u64) -> Self {
        // SAFETY: a fresh shared mapping at a kernel-chosen address, only accessed via this
        // struct and unmapped on drop.
        let ptr = unsafe {
            mmap(
                None,
                NonZeroUsize::new(PAGE).unwrap(),
                ProtFlags::PROT_READ | ProtFlags::PROT_WRITE,
                MapFlags::MAP_SHARED,
                fd,
                i64::try_from(offset).unwrap(),
            )
        }
        .unwrap();
        Mapping { ptr }
    }

    pub fn bytes(&mut self) -> &mut [u8] {
        // SAFETY: PAGE bytes mapped read-write for as long as self lives.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr().cast(), PAGE) }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: mapped in new() with this length.
        unsafe { munmap(self.ptr, PAGE) }.unwrap();
    }
}

/// Which file an fd refers to.
pub fn identity(fd: &OwnedFd) -> (u64, u64) {
    let st = nix::sys::stat::fstat(fd.as_raw_fd()).unwrap();
    (st.st_dev as u64, st.st_ino as u64)
}

/// Fills a page with a pattern that depends on `seed` and on the byte's place.
pub fn fill(map: &mut Mapping, seed: u8) {
    for (i, b) in map.bytes().iter_mut().enumerate() {
        *b = seed ^ (i as u8) ^ (i >> 8) as u8;
    }
}

pub fn holds(map: &mut Mapping, seed: u8) -> bool {
    map.bytes()
        .iter()
        .enumerate()
        .all(|(i, &b)| b == seed ^ (i as u8) ^ (i >> 8) as u8)
}
