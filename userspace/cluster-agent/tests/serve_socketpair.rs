//! The agent's serving loop and the client, end to end over a socketpair.

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::os::unix::fs::MetadataExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use unimem_cluster_agent::client::{Captured, RunSpec, Session};
use unimem_cluster_agent::decoder::FrameDecoder;
use unimem_cluster_agent::frame::{Frame, Request, MAGIC};
use unimem_cluster_agent::{serve, Launch, OnHangup, ServeOptions, TIMEOUT_STATUS};

/// Upper bound for any single exchange, so a broken agent fails the test
/// instead of hanging it.
const LIMIT: Duration = Duration::from_secs(20);

struct Agent {
    host: UnixStream,
    thread: Option<JoinHandle<std::io::Result<()>>>,
}

impl Agent {
    fn start() -> Self {
        Self::with_launch(Launch::default())
    }

    fn with_launch(launch: Launch) -> Self {
        let (host, guest) = UnixStream::pair().unwrap();
        let opts = ServeOptions {
            on_hangup: OnHangup::Return,
            launch,
        };
        let port = File::from(OwnedFd::from(guest));
        let thread = std::thread::spawn(move || serve(port, &opts));
        Agent {
            host,
            thread: Some(thread),
        }
    }

    fn session(&self) -> Session {
        Session::new(self.host.try_clone().unwrap())
    }

    fn run(&self, command: &str, timeout: Option<Duration>) -> Outcome {
        self.run_spec(&RunSpec {
            command: command.into(),
            env: vec![],
            timeout,
        })
    }

    fn run_spec(&self, spec: &RunSpec) -> Outcome {
        let started = Instant::now();
        let mut out = Captured::default();
        let status = self
            .session()
            .run(spec, &mut out, Some(started + LIMIT))
            .unwrap();
        Outcome {
            status,
            stdout: String::from_utf8(out.stdout).unwrap(),
            stderr: String::from_utf8(out.stderr).unwrap(),
            elapsed: started.elapsed(),
        }
    }

    /// Writes raw bytes to the agent, as a misbehaving client would.
    fn inject(&self, bytes: &[u8]) {
        (&self.host).write_all(bytes).unwrap();
    }

    /// Closes the host side and waits for the serving loop to return.
    fn finish(mut self) {
        let thread = self.thread.take().unwrap();
        drop(self);
        thread.join().unwrap().unwrap();
    }
}

#[derive(Debug)]
struct Outcome {
    status: i32,
    stdout: String,
    stderr: String,
    elapsed: Duration,
}

fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("serve-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Waits for `path` to hold a pid and returns it.
fn read_pid(path: &Path) -> i32 {
    let until = Instant::now() + LIMIT;
    loop {
        if let Ok(s) = std::fs::read_to_string(path) {
            if let Ok(pid) = s.trim().parse() {
                return pid;
            }
        }
        assert!(Instant::now() < until, "no pid in {}", path.display());
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether `pid` is gone or a zombie (nothing reaps orphans in some
/// containers, so a zombie counts as dead).
fn wait_dead(pid: i32, within: Duration) -> bool {
    let until = Instant::now() + within;
    loop {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => return true,
            Ok(stat) => {
                let state = stat.rsplit(')').next().unwrap_or("").trim_start();
                if state.starts_with('Z') || state.starts_with('X') {
                    return true;
                }
            }
        }
        if Instant::now() >= until {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn stdout_and_stderr_are_separated() {
    let agent = Agent::start();
    let out = agent.run("echo out; echo err >&2; echo more", None);
    assert_eq!(out.status, 0);
    assert_eq!(out.stdout, "out\nmore\n");
    assert_eq!(out.stderr, "err\n");
    agent.finish();
}

#[test]
fn exit_status_propagates() {
    let agent = Agent::start();
    assert_eq!(agent.run("exit 3", None).status, 3);
    assert_eq!(agent.run("false", None).status, 1);
    assert_eq!(agent.run("true", None).status, 0);
    agent.finish();
}

#[test]
fn death_by_signal_is_128_plus_signal() {
    let agent = Agent::start();
    assert_eq!(agent.run("kill -TERM $$", None).status, 128 + 15);
    agent.finish();
}

#[test]
fn timeout_kills_the_process_group_and_reports_124() {
    let dir = scratch("timeout");
    let pidfile = dir.join("bg.pid");
    let agent = Agent::start();
    let out = agent.run(
        &format!(
            "sleep 30 & echo $! > {}; echo before; sleep 10; echo after",
            pidfile.display()
        ),
        Some(Duration::from_secs(1)),
    );
    assert_eq!(out.status, TIMEOUT_STATUS);
    assert!(out.elapsed >= Duration::from_millis(900), "{out:?}");
    assert!(out.elapsed < Duration::from_secs(4), "{out:?}");
    assert_eq!(out.stdout, "before\n");
    assert!(out.stderr.contains("timed out"), "{out:?}");
    // The background sleep was in the same process group.
    let bg = read_pid(&pidfile);
    assert!(
        wait_dead(bg, Duration::from_secs(3)),
        "background pid {bg} survived"
    );
    agent.finish();
}

#[test]
fn environment_and_working_directory() {
    let agent = Agent::start();
    let out = agent.run_spec(&RunSpec {
        command: r#"echo "$FOO|$PATH|$(pwd)|${HOME-unset}""#.into(),
        env: vec![("FOO".into(), "bar baz".into())],
        timeout: None,
    });
    assert_eq!(out.status, 0);
    assert_eq!(
        out.stdout,
        "bar baz|/usr/sbin:/usr/bin:/sbin:/bin|/|unset\n"
    );
    agent.finish();
}

#[test]
fn stdin_is_dev_null() {
    let agent = Agent::start();
    let out = agent.run(
        "cat; readlink /proc/self/fd/0",
        Some(Duration::from_secs(5)),
    );
    assert_eq!(out.status, 0);
    assert_eq!(out.stdout, "/dev/null\n");
    agent.finish();
}

#[test]
fn port_fd_is_not_inherited() {
    let (host, guest) = UnixStream::pair().unwrap();
    let port = File::from(OwnedFd::from(guest));
    let ino = port.metadata().unwrap().ino();
    let opts = ServeOptions {
        on_hangup: OnHangup::Return,
        launch: Launch::default(),
    };
    let thread = std::thread::spawn(move || serve(port, &opts));
    let mut out = Captured::default();
    let status = Session::new(host.try_clone().unwrap())
        .run(
            &RunSpec {
                command: "ls -l /proc/$$/fd/".into(),
                ..RunSpec::default()
            },
            &mut out,
            Some(Instant::now() + LIMIT),
        )
        .unwrap();
    assert_eq!(status, 0);
    let fds = String::from_utf8(out.stdout).unwrap();
    assert!(fds.contains("/dev/null"), "{fds}");
    assert!(
        !fds.contains(&format!("socket:[{ino}]")),
        "port leaked into the command: {fds}"
    );
    drop(host);
    thread.join().unwrap().unwrap();
}

#[test]
fn large_output_arrives_complete_and_in_order() {
    let agent = Agent::start();
    let out = agent.run("seq 1 300000; echo tail >&2", None);
    assert_eq!(out.status, 0);
    let expected: String = (1..=300000).map(|i| format!("{i}\n")).collect();
    assert!(
        out.stdout == expected,
        "stdout differs ({} bytes)",
        out.stdout.len()
    );
    assert_eq!(out.stderr, "tail\n");
    agent.finish();
}

#[test]
fn background_process_holding_stdout_does_not_hold_the_exit() {
    let agent = Agent::start();
    let out = agent.run("sleep 5 & echo started", None);
    assert_eq!(out.status, 0);
    assert_eq!(out.stdout, "started\n");
    assert!(out.elapsed < Duration::from_secs(2), "{out:?}");
    agent.finish();
}

#[test]
fn absurd_timeout_means_none() {
    let agent = Agent::start();
    // Duration::MAX goes on the wire as timeout_ms = u64::MAX, which must
    // not overflow the agent's clock arithmetic.
    let out = agent.run("echo fine", Some(Duration::MAX));
    assert_eq!((out.status, out.stdout.as_str()), (0, "fine\n"));
    agent.finish();
}

#[test]
fn consecutive_requests_on_one_connection() {
    let agent = Agent::start();
    for i in 0..5 {
        let out = agent.run(&format!("echo {i}; exit {i}"), None);
        assert_eq!((out.status, out.stdout), (i, format!("{i}\n")));
    }
    agent.finish();
}

#[test]
fn ping_is_answered() {
    let agent = Agent::start();
    let started = Instant::now();
    agent.session().ping(started + LIMIT).unwrap();
    assert!(started.elapsed() < Duration::from_secs(2));
    agent.finish();
}

#[test]
fn shell_that_cannot_start_reports_127() {
    let agent = Agent::with_launch(Launch {
        shell: "/nonexistent/sh".into(),
        ..Launch::default()
    });
    let out = agent.run("true", None);
    assert_eq!(out.status, 127);
    assert!(out.stderr.contains("cannot run /nonexistent/sh"), "{out:?}");
    agent.finish();
}

#[test]
fn garbage_and_a_truncated_frame_before_a_request_are_skipped() {
    let agent = Agent::start();
    agent.inject(b"\0\0garbage left by a previous client\r\n");
    agent.inject(&MAGIC);
    agent.inject(&[0xff; 30]);
    // Header of a big request whose body never came (its client died).
    let dead = Frame::Request(Request {
        id: 1,
        timeout_ms: 0,
        env: vec![],
        command: "x".repeat(50_000),
    })
    .encode()
    .unwrap();
    agent.inject(&dead[..100]);
    let out = agent.run("echo ok", None);
    assert_eq!((out.status, out.stdout.as_str()), (0, "ok\n"));
    agent.finish();
}

#[test]
fn new_request_supersedes_an_abandoned_one() {
    let dir = scratch("supersede");
    let pidfile = dir.join("old.pid");
    let agent = Agent::start();
    // A client that sent a request and went away without reading.
    agent.inject(
        &Frame::Request(Request {
            id: 0xdead,
            timeout_ms: 0,
            env: vec![],
            command: format!(
                "echo old-start; echo $$ > {}; exec sleep 30",
                pidfile.display()
            ),
        })
        .encode()
        .unwrap(),
    );
    let old = read_pid(&pidfile);
    let out = agent.run("echo new", None);
    assert_eq!(out.status, 0);
    assert_eq!(out.stdout, "new\n", "stale output leaked: {out:?}");
    assert!(out.elapsed < Duration::from_secs(3), "{out:?}");
    assert!(
        wait_dead(old, Duration::from_secs(3)),
        "old command {old} survived"
    );
    agent.finish();
}

#[test]
fn hangup_kills_the_running_command() {
    let dir = scratch("hangup");
    let pidfile = dir.join("cmd.pid");
    let agent = Agent::start();
    agent.inject(
        &Frame::Request(Request {
            id: 1,
            timeout_ms: 0,
            env: vec![],
            command: format!("echo $$ > {}; exec sleep 30", pidfile.display()),
        })
        .encode()
        .unwrap(),
    );
    let pid = read_pid(&pidfile);
    agent.finish();
    assert!(
        wait_dead(pid, Duration::from_secs(3)),
        "command {pid} survived"
    );
}

/// The client side of stale-frame handling, against a scripted agent.
#[test]
fn client_ignores_stale_frames_and_garbage() {
    let (host, mut fake) = UnixStream::pair().unwrap();
    let script = std::thread::spawn(move || {
        let other = 0x0bad;
        let mut stale = Vec::new();
        stale.extend_from_slice(b"noise");
        for f in [
            Frame::Stdout {
                id: other,
                data: b"stale stdout\n".to_vec(),
            },
            Frame::Stderr {
                id: other,
                data: b"stale stderr\n".to_vec(),
            },
            Frame::Exit {
                id: other,
                status: 99,
            },
            Frame::Pong { id: other },
        ] {
            stale.extend(f.encode().unwrap());
        }
        // Cut off mid-payload, as when a previous client disconnected.
        let cut = Frame::Stdout {
            id: other,
            data: vec![b'z'; 10_000],
        }
        .encode()
        .unwrap();
        stale.extend_from_slice(&cut[..500]);
        fake.write_all(&stale).unwrap();

        let mut dec = FrameDecoder::default();
        let mut buf = [0u8; 4096];
        let req = loop {
            if let Some(Frame::Request(r)) = dec.next_frame() {
                break r;
            }
            let n = fake.read(&mut buf).unwrap();
            assert!(n > 0);
            dec.push(&buf[..n]);
        };
        for f in [
            Frame::Stdout {
                id: other,
                data: b"late stale\n".to_vec(),
            },
            Frame::Stdout {
                id: req.id,
                data: b"real\n".to_vec(),
            },
            Frame::Exit {
                id: other,
                status: 1,
            },
            Frame::Stderr {
                id: req.id,
                data: b"warn\n".to_vec(),
            },
            Frame::Exit {
                id: req.id,
                status: 5,
            },
        ] {
            fake.write_all(&f.encode().unwrap()).unwrap();
        }
        req
    });
    let mut session = Session::new(host);
    let mut out = Captured::default();
    let status = session
        .run(
            &RunSpec {
                command: "anything".into(),
                ..RunSpec::default()
            },
            &mut out,
            Some(Instant::now() + LIMIT),
        )
        .unwrap();
    let req = script.join().unwrap();
    assert_eq!(req.id, session.id());
    assert_eq!(req.command, "anything");
    assert_eq!(status, 5);
    assert_eq!(out.stdout, b"real\n");
    assert_eq!(out.stderr, b"warn\n");
}
