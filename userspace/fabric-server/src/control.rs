//! `--control`: a line protocol for the orchestration (scripts/cluster) on a UNIX socket.
//!
//! A client sends commands, one per line, and gets one reply line per command, in order; it
//! may send one command per connection or several. Replies to commands that were refused start
//! with `error: ` and nothing changed; others start with `ok: ` or are data (`states`).
//!
//! * `poison N`: node N's memory goes away. Refused while N is connected or when it does not
//!   exist; otherwise N's liveness word becomes LOST, then every byte of its partition 0xff
//!   (in steps, between other work: the reply comes when the last byte is written).
//! * `states`: `ID:STATE:CONNECTS` for every node, space-separated, e.g. `0:up:1 1:lost:2`.
//!
//! The server never waits for a client: lines are at most [`MAX_LINE`] bytes, a client that
//! does not read its replies is dropped, and one that says nothing is closed after
//! [`IDLE_TIMEOUT`].

use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::net::Shutdown;
use std::os::unix::net::UnixStream as StdStream;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use mio::net::UnixStream;

/// Longest command line accepted, newline excluded.
pub const MAX_LINE: usize = 256;
/// A client with this many bytes of replies unread is dropped.
const MAX_PENDING_REPLIES: usize = 64 * 1024;
/// A client that sends no complete line for this long is closed.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(30);
/// Control connections open at once; more are refused.
pub const MAX_CLIENTS: usize = 16;
/// Commands a client may have waiting for their turn (behind a poison that is under way).
const MAX_PENDING_LINES: usize = 1024;

pub const HELP: &str = "commands: poison N, states";

#[derive(Debug, PartialEq, Eq)]
pub enum Command {
    Poison(u32),
    States,
}

/// One line, without its newline. The error is the reply's text after `error: `.
pub fn parse(line: &[u8]) -> Result<Command, String> {
    let Ok(text) = std::str::from_utf8(line) else {
        return Err(format!("the command is not UTF-8 text ({HELP})"));
    };
    let words: Vec<&str> = text.split_ascii_whitespace().collect();
    match words.as_slice() {
        [] => Err(format!("empty command ({HELP})")),
        ["states"] => Ok(Command::States),
        ["poison", n] => match n.parse::<u32>() {
            Ok(id) if n.bytes().all(|b| b.is_ascii_digit()) => Ok(Command::Poison(id)),
            _ => Err(format!("poison: {n:?} is not a node number")),
        },
        ["poison"] => Err("poison: which node? (poison N)".into()),
        ["poison", ..] => Err("poison takes one node number (poison N)".into()),
        ["states", ..] => Err("states takes no arguments".into()),
        [verb, ..] => Err(format!("unknown command {:?} ({HELP})", truncate(verb))),
    }
}

fn truncate(s: &str) -> String {
    s.chars().take(32).collect()
}

/// What a client's bytes amount to.
#[derive(Debug, PartialEq, Eq)]
pub enum Line {
    Command(Vec<u8>),
    /// A line longer than [`MAX_LINE`]; its bytes were dropped.
    TooLong,
}

/// One control connection.
pub struct Client {
    pub stream: UnixStream,
    pub pid: Option<i32>,
    /// The current line so far.
    line: Vec<u8>,
    /// Inside a line that already proved too long: dropping bytes until its newline.
    discarding: bool,
    /// Complete lines not answered yet.
    pending: VecDeque<Line>,
    /// A command's reply is not ready yet (a poison under way): the next lines wait, so that
    /// replies stay in order.
    pub waiting: bool,
    /// Replies not sent yet.
    out: Vec<u8>,
    /// The client closed its sending side: no more commands.
    pub eof: bool,
    /// Last complete line (or the connection); for the idle timeout.
    pub active: Instant,
}

impl Client {
    pub fn new(stream: UnixStream, pid: Option<i32>) -> Self {
        Self {
            stream,
            pid,
            line: Vec::new(),
            discarding: false,
            pending: VecDeque::new(),
            waiting: false,
            out: Vec::new(),
            eof: false,
            active: Instant::now(),
        }
    }

    pub fn describe(&self) -> String {
        self.pid.map_or_else(
            || "control client (pid unknown)".into(),
            |p| format!("control client (pid {p})"),
        )
    }

    /// Splits received bytes into lines. False if too many lines wait for their turn.
    pub fn feed(&mut self, bytes: &[u8]) -> bool {
        for &b in bytes {
            if b == b'\n' {
                self.pending.push_back(if self.discarding {
                    Line::TooLong
                } else {
                    Line::Command(std::mem::take(&mut self.line))
                });
                self.discarding = false;
                self.active = Instant::now();
            } else if !self.discarding {
                if self.line.len() == MAX_LINE {
                    self.line.clear();
                    self.discarding = true;
                } else {
                    self.line.push(b);
                }
            }
        }
        self.pending.len() <= MAX_PENDING_LINES
    }

    /// At end of file: a last command without its newline still counts.
    pub fn finish(&mut self) {
        if self.discarding {
            self.pending.push_back(Line::TooLong);
        } else if !self.line.is_empty() {
            self.pending
                .push_back(Line::Command(std::mem::take(&mut self.line)));
        }
        self.discarding = false;
    }

    /// The next line to answer, unless an earlier one still waits for its reply.
    pub fn next_line(&mut self) -> Option<Line> {
        if self.waiting {
            return None;
        }
        self.pending.pop_front()
    }

    /// Queues a reply line. False if the client has too many unread replies.
    pub fn reply(&mut self, text: &str) -> bool {
        self.out.extend_from_slice(text.as_bytes());
        self.out.push(b'\n');
        self.out.len() <= MAX_PENDING_REPLIES
    }

    /// Sends what the socket takes. Ok(true) once everything is sent.
    pub fn flush(&mut self) -> io::Result<bool> {
        while !self.out.is_empty() {
            match (&self.stream).write(&self.out) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => {
                    self.out.drain(..n);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(true)
    }

    /// Whether nothing is left to do for this client.
    pub fn done(&self) -> bool {
        self.eof && self.out.is_empty() && self.pending.is_empty() && !self.waiting
    }
}

/// `unimem-fabric ctl`: sends one command, prints the reply. Ok(false) for an `error:` reply.
pub fn send(control: &Path, command: &str, timeout: Duration) -> Result<bool> {
    if command.contains('\n') {
        bail!("the command must be one line");
    }
    let mut sock = StdStream::connect(control)
        .with_context(|| format!("connecting to the control socket {}", control.display()))?;
    sock.set_read_timeout(Some(timeout))?;
    sock.set_write_timeout(Some(timeout))?;
    sock.write_all(format!("{command}\n").as_bytes())
        .context("sending the command")?;
    // One command per connection: the server answers it and closes.
    sock.shutdown(Shutdown::Write)
        .context("sending the command")?;
    let mut reply = Vec::new();
    let mut buf = [0u8; 4096];
    while !reply.contains(&b'\n') {
        match sock.read(&mut buf) {
            Ok(0) => break,
            Ok(n) if reply.len() + n > MAX_PENDING_REPLIES => bail!("the reply is too long"),
            Ok(n) => reply.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                bail!("no reply within {} s", timeout.as_secs())
            }
            Err(e) => return Err(e).context("reading the reply"),
        }
    }
    let Some(end) = reply.iter().position(|&b| b == b'\n') else {
        bail!("the server closed the connection without a reply");
    };
    let line = String::from_utf8_lossy(&reply[..end]);
    println!("{line}");
    Ok(!line.starts_with("error:"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_commands() {
        assert_eq!(parse(b"poison 3"), Ok(Command::Poison(3)));
        assert_eq!(parse(b"  poison\t15 \r"), Ok(Command::Poison(15)));
        assert_eq!(parse(b"states"), Ok(Command::States));
        for bad in [
            &b""[..],
            b"   ",
            b"poison",
            b"poison x",
            b"poison -1",
            b"poison +1",
            b"poison 1 2",
            b"poison 99999999999",
            b"states now",
            b"POISON 1",
            b"reboot",
            b"poison \xff",
        ] {
            assert!(
                parse(bad).is_err(),
                "{:?} was accepted",
                String::from_utf8_lossy(bad)
            );
        }
    }

    fn client() -> Client {
        let (a, _b) = UnixStream::pair().unwrap();
        Client::new(a, None)
    }

    fn lines(c: &mut Client) -> Vec<Line> {
        std::iter::from_fn(|| c.next_line()).collect()
    }

    #[test]
    fn splits_lines_and_bounds_them() {
        let mut c = client();
        assert!(c.feed(b"states\npoi"));
        assert!(c.feed(b"son 1\n\n"));
        assert_eq!(
            lines(&mut c),
            [
                Line::Command(b"states".to_vec()),
                Line::Command(b"poison 1".to_vec()),
                Line::Command(Vec::new()),
            ]
        );
        c.feed(&[b'a'; MAX_LINE]);
        c.feed(b"\n");
        assert_eq!(lines(&mut c), [Line::Command(vec![b'a'; MAX_LINE])]);
        c.feed(&[b'a'; 10_000]);
        c.feed(b"b\nstates\nstat");
        c.finish();
        assert_eq!(
            lines(&mut c),
            [
                Line::TooLong,
                Line::Command(b"states".to_vec()),
                Line::Command(b"stat".to_vec()),
            ]
        );
        c.feed(&[b'a'; MAX_LINE + 1]);
        c.finish();
        assert_eq!(lines(&mut c), [Line::TooLong]);
    }

    #[test]
    fn lines_wait_behind_a_pending_reply() {
        let mut c = client();
        c.feed(b"poison 1\nstates\n");
        assert_eq!(c.next_line(), Some(Line::Command(b"poison 1".to_vec())));
        c.waiting = true;
        assert_eq!(c.next_line(), None);
        c.eof = true;
        assert!(!c.done());
        c.waiting = false;
        assert_eq!(c.next_line(), Some(Line::Command(b"states".to_vec())));
        assert!(c.done());
        // A client cannot queue lines without bound.
        c.waiting = true;
        assert!(!c.feed(&b"states\n".repeat(MAX_PENDING_LINES + 1)));
    }
}
