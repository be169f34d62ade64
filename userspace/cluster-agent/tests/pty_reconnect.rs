//! The agent over a pseudo-terminal, which behaves like a virtio-serial port
//! as far as the agent can tell: the master stays open, while closing the
//! slave makes the master poll POLLHUP (and fail reads) until the slave is
//! opened again, just like a port whose host client went away.
//!
//! Kept in its own test binary so the CPU-time measurement sees only the
//! agent.

use nix::fcntl::OFlag;
use nix::pty::{grantpt, posix_openpt, ptsname_r, unlockpt};
use nix::sys::termios::{cfmakeraw, tcgetattr, tcsetattr, SetArg};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::fd::{FromRawFd, IntoRawFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::time::{Duration, Instant};
use unimem_cluster_agent::client::{Captured, RunSpec, Session};
use unimem_cluster_agent::frame::{Frame, Request};
use unimem_cluster_agent::{serve, OnHangup, ServeOptions};

const LIMIT: Duration = Duration::from_secs(20);

/// Opens the slave as a host client would connect: raw, so the line
/// discipline passes frames through untouched and does not echo.
fn connect(slave: &str) -> File {
    let f = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(OFlag::O_NOCTTY.bits())
        .open(slave)
        .unwrap();
    let mut t = tcgetattr(&f).unwrap();
    cfmakeraw(&mut t);
    tcsetattr(&f, SetArg::TCSANOW, &t).unwrap();
    f
}

fn run(slave: &str, command: &str) -> (i32, String) {
    let mut session = Session::new(connect(slave));
    session.ping(Instant::now() + LIMIT).unwrap();
    let mut out = Captured::default();
    let status = session
        .run(
            &RunSpec {
                command: command.into(),
                ..RunSpec::default()
            },
            &mut out,
            Some(Instant::now() + LIMIT),
        )
        .unwrap();
    (status, String::from_utf8(out.stdout).unwrap())
}

/// User plus system CPU time of this process, in clock ticks.
fn cpu_ticks() -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    let fields: Vec<&str> = stat
        .rsplit(')')
        .next()
        .unwrap()
        .split_whitespace()
        .collect();
    // Fields 14 and 15 of stat(5), counted after the ")" that ends field 2.
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

fn read_pid(path: &Path) -> i32 {
    let until = Instant::now() + LIMIT;
    loop {
        if let Some(pid) = std::fs::read_to_string(path)
            .ok()
            .and_then(|s| s.trim().parse().ok())
        {
            return pid;
        }
        assert!(Instant::now() < until, "no pid in {}", path.display());
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn gone(pid: i32, within: Duration) -> bool {
    let until = Instant::now() + within;
    while Instant::now() < until {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => return true,
            Ok(s) if s.rsplit(')').next().unwrap().trim_start().starts_with('Z') => return true,
            Ok(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
    false
}

#[test]
fn agent_survives_clients_coming_and_going_without_spinning() {
    let master = posix_openpt(OFlag::O_RDWR | OFlag::O_NOCTTY).unwrap();
    grantpt(&master).unwrap();
    unlockpt(&master).unwrap();
    let slave = ptsname_r(&master).unwrap();
    // SAFETY: the raw fd was just released by `master` and is owned by nothing else.
    let port = unsafe { File::from_raw_fd(master.into_raw_fd()) };
    let opts = ServeOptions {
        on_hangup: OnHangup::Wait(Duration::from_millis(100)),
        ..ServeOptions::default()
    };
    // Serves forever, like in the guest; the thread ends with the process.
    std::thread::spawn(move || serve(port, &opts));

    for round in 0..3 {
        let (status, out) = run(&slave, &format!("echo round {round}"));
        assert_eq!((status, out), (0, format!("round {round}\n")));

        // Nobody connected: the agent must idle, not spin on POLLHUP.
        let (cpu0, t0) = (cpu_ticks(), Instant::now());
        std::thread::sleep(Duration::from_secs(1));
        let (cpu, wall) = (cpu_ticks() - cpu0, t0.elapsed());
        assert!(
            cpu < 20,
            "agent used {cpu} ticks of CPU in {wall:?} with no client"
        );
    }

    // A client that disconnects mid-command gets its command killed, and
    // the next client is served normally.
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("pty-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let pidfile = dir.join("cmd.pid");
    {
        let mut client = connect(&slave);
        let req = Frame::Request(Request {
            id: 77,
            timeout_ms: 0,
            env: vec![],
            command: format!("echo $$ > {}; exec sleep 30", pidfile.display()),
        });
        client.write_all(&req.encode().unwrap()).unwrap();
        let pid = read_pid(&pidfile);
        drop(client);
        assert!(
            gone(pid, Duration::from_secs(5)),
            "command {pid} outlived its client"
        );
    }
    let (status, out) = run(&slave, "echo after");
    assert_eq!((status, out.as_str()), (0, "after\n"));
}
