//! `unimem-exec` and `unimem-agent` as processes, connected through a
//! stand-in for QEMU's socket chardev: a UNIX socket that accepts one client
//! at a time and relays its bytes to and from the agent's single,
//! long-lived connection (the agent's hidden `--connect-unix` test
//! transport playing the part of the virtio port).

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::fd::AsFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

const EXEC: &str = env!("CARGO_BIN_EXE_unimem-exec");
const AGENT: &str = env!("CARGO_BIN_EXE_unimem-agent");
const LIMIT: Duration = Duration::from_secs(20);

fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("bin-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

struct Node {
    socket: PathBuf,
    agent: Child,
    stop: Arc<AtomicBool>,
    relay: Option<JoinHandle<()>>,
}

impl Node {
    fn start(dir: &Path) -> Node {
        Self::start_after(dir, Duration::ZERO)
    }

    /// Like QEMU started late: the client socket appears after `delay`.
    fn start_after(dir: &Path, delay: Duration) -> Node {
        let port_path = dir.join("port.sock");
        let port_listener = UnixListener::bind(&port_path).unwrap();
        let log = std::fs::File::create(dir.join("agent.log")).unwrap();
        let agent = Command::new(AGENT)
            .arg("--connect-unix")
            .arg(&port_path)
            .env("RUST_LOG", "debug")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        port_listener.set_nonblocking(true).unwrap();
        let until = Instant::now() + LIMIT;
        let port = loop {
            match port_listener.accept() {
                Ok((s, _)) => break s,
                Err(_) if Instant::now() < until => std::thread::sleep(Duration::from_millis(10)),
                Err(e) => panic!("agent never connected: {e}"),
            }
        };
        port.set_nonblocking(false).unwrap();
        let socket = dir.join("node0.agent");
        let stop = Arc::new(AtomicBool::new(false));
        let relay = {
            let (socket, stop) = (socket.clone(), stop.clone());
            std::thread::spawn(move || {
                std::thread::sleep(delay);
                relay(UnixListener::bind(&socket).unwrap(), port, &stop)
            })
        };
        Node {
            socket,
            agent,
            stop,
            relay: Some(relay),
        }
    }

    fn exec(&self, args: &[&str]) -> (Output, Duration) {
        let started = Instant::now();
        let out = Command::new(EXEC)
            .arg("--socket")
            .arg(&self.socket)
            .args(args)
            .output()
            .unwrap();
        (out, started.elapsed())
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.relay.take() {
            let _ = t.join();
        }
        let _ = self.agent.kill();
        let _ = self.agent.wait();
    }
}

/// One client at a time, as QEMU's `server=on` chardev: bytes from the
/// client go to the port, bytes from the port go to the client, and while no
/// client is connected the port is not read (QEMU throttles it).
fn relay(listener: UnixListener, mut port: UnixStream, stop: &AtomicBool) {
    let tick = PollTimeout::from(50u16);
    let mut buf = vec![0u8; 65536];
    while !stop.load(Ordering::Relaxed) {
        let mut fds = [PollFd::new(listener.as_fd(), PollFlags::POLLIN)];
        if poll(&mut fds, tick).unwrap() == 0 {
            continue;
        }
        let Ok((mut client, _)) = listener.accept() else {
            continue;
        };
        while !stop.load(Ordering::Relaxed) {
            let mut fds = [
                PollFd::new(client.as_fd(), PollFlags::POLLIN),
                PollFd::new(port.as_fd(), PollFlags::POLLIN),
            ];
            if poll(&mut fds, tick).unwrap() == 0 {
                continue;
            }
            let (from_client, from_port) = (fds[0].any().unwrap(), fds[1].any().unwrap());
            if from_client {
                match client.read(&mut buf) {
                    Ok(n) if n > 0 => port.write_all(&buf[..n]).unwrap(),
                    _ => break,
                }
            }
            if from_port {
                let n = port.read(&mut buf).unwrap();
                assert!(n > 0, "agent closed its port");
                if client.write_all(&buf[..n]).is_err() {
                    break;
                }
            }
        }
    }
}

fn text(b: &[u8]) -> &str {
    std::str::from_utf8(b).unwrap()
}

#[test]
fn output_and_exit_status_come_back() {
    let dir = scratch("basic");
    let node = Node::start(&dir);
    let (out, _) = node.exec(&["--", "echo out; echo err >&2; exit 3"]);
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    assert_eq!(text(&out.stdout), "out\n");
    assert_eq!(text(&out.stderr), "err\n");

    // Words are joined with spaces like ssh does; `--` is optional.
    let (out, _) = node.exec(&["echo", "a", "-n", "b"]);
    assert_eq!(
        (out.status.code(), text(&out.stdout)),
        (Some(0), "a -n b\n")
    );

    let (out, _) = node.exec(&[
        "-e",
        "FOO=x y",
        "--env",
        "BAR=z",
        "--",
        "echo \"$FOO|$BAR\"",
    ]);
    assert_eq!(text(&out.stdout), "x y|z\n");
}

#[test]
fn timeout_gives_124_quickly() {
    let dir = scratch("timeout");
    let node = Node::start(&dir);
    let (out, took) = node.exec(&["--timeout", "1", "--", "sleep", "10"]);
    assert_eq!(out.status.code(), Some(124), "{out:?}");
    assert!(took < Duration::from_secs(5), "took {took:?}");
    assert!(text(&out.stderr).contains("timed out"));
}

#[test]
fn exec_waits_for_the_socket_to_appear() {
    let dir = scratch("late");
    let node = Node::start_after(&dir, Duration::from_secs(1));
    let (out, took) = node.exec(&["--connect-timeout", "10", "--", "echo", "up"]);
    assert_eq!(
        (out.status.code(), text(&out.stdout)),
        (Some(0), "up\n"),
        "{out:?}"
    );
    assert!(took >= Duration::from_millis(900));
}

#[test]
fn ping_and_unreachable_nodes() {
    let dir = scratch("ping");
    let node = Node::start(&dir);
    let (out, _) = node.exec(&["--ping"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(out.stdout.is_empty());

    // No socket at all.
    let missing = dir.join("missing.agent");
    let started = Instant::now();
    let out = Command::new(EXEC)
        .args(["--ping", "--connect-timeout", "1", "--socket"])
        .arg(&missing)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(255));
    assert!(started.elapsed() < Duration::from_secs(5));
    let out = Command::new(EXEC)
        .args(["--connect-timeout", "0.5", "--socket"])
        .arg(&missing)
        .args(["--", "true"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(255));
    assert!(text(&out.stderr).contains("missing.agent"), "{out:?}");

    // A socket that accepts but where no agent ever answers (VM booting).
    let silent = dir.join("silent.agent");
    let _listener = UnixListener::bind(&silent).unwrap();
    let started = Instant::now();
    let out = Command::new(EXEC)
        .args(["--ping", "--connect-timeout", "1", "--socket"])
        .arg(&silent)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(255), "{out:?}");
    let took = started.elapsed();
    assert!(took >= Duration::from_millis(900) && took < Duration::from_secs(5));
    assert!(text(&out.stderr).contains("timed out"), "{out:?}");
}

#[test]
fn killed_client_does_not_confuse_the_next_one() {
    let dir = scratch("killed");
    let node = Node::start(&dir);
    let mut first = Command::new(EXEC)
        .arg("--socket")
        .arg(&node.socket)
        .args(["--", "echo start; sleep 30; echo late"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(first.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line, "start\n");
    first.kill().unwrap();
    first.wait().unwrap();

    let (out, took) = node.exec(&["--", "echo next"]);
    assert_eq!(
        (out.status.code(), text(&out.stdout)),
        (Some(0), "next\n"),
        "{out:?}"
    );
    assert!(took < Duration::from_secs(5), "took {took:?}");
}

#[test]
fn concurrent_callers_take_turns() {
    let dir = scratch("concurrent");
    let node = Node::start(&dir);
    let children: Vec<_> = (0..4)
        .map(|i| {
            Command::new(EXEC)
                .arg("--socket")
                .arg(&node.socket)
                .args(["--", &format!("echo caller {i}; sleep 0.2; exit {i}")])
                .stdout(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for (i, child) in children.into_iter().enumerate() {
        let out = child.wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(i as i32));
        assert_eq!(text(&out.stdout), format!("caller {i}\n"));
    }
}

#[test]
fn usage_errors_are_255_and_help_is_0() {
    let out = Command::new(EXEC).arg("true").output().unwrap();
    assert_eq!(out.status.code(), Some(255));
    let out = Command::new(EXEC).args(["--socket", "x"]).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(255),
        "a command or --ping is required"
    );
    let out = Command::new(EXEC).arg("--help").output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(text(&out.stdout).contains("--connect-timeout"));
    let out = Command::new(AGENT).arg("--help").output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(text(&out.stdout).contains("--port-name"));
    assert!(
        !text(&out.stdout).contains("connect-unix"),
        "test transport is hidden"
    );
}

#[test]
fn closed_stdout_ends_exec_like_sigpipe() {
    let dir = scratch("sigpipe");
    let node = Node::start(&dir);
    let script = format!(
        "'{EXEC}' --socket '{}' -- yes | head -n 2; echo \"status=${{PIPESTATUS[0]}}\"",
        node.socket.display()
    );
    let started = Instant::now();
    let out = Command::new("bash").args(["-c", &script]).output().unwrap();
    assert_eq!(text(&out.stdout), "y\ny\nstatus=141\n", "{out:?}");
    assert!(started.elapsed() < Duration::from_secs(10));
    // The abandoned `yes` must not keep the node from answering.
    let (out, _) = node.exec(&["--", "echo still here"]);
    assert_eq!(
        (out.status.code(), text(&out.stdout)),
        (Some(0), "still here\n")
    );
}
