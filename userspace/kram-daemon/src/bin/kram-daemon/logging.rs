//! Logging to `/var/log/kram-daemon.log` (seed 000 §2.5.5) or stderr: one line per event,
//! `2026-05-04T10:00:00.123Z INFO  kram-daemon[node 1]: offer chunks 0-31 (32 MiB) node 0
//! instance 0`. The file is opened in append mode and reopened on SIGHUP (log rotation).

use anyhow::{Context, Result};
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// This node's id once known (`u32::MAX` before), shown in every line.
static NODE: AtomicU32 = AtomicU32::new(u32::MAX);
/// The open log file, shared by the logger and [`reopen`].
static FILE: OnceLock<(PathBuf, Mutex<File>)> = OnceLock::new();

pub fn set_node(node: u32) {
    NODE.store(node, Ordering::Relaxed);
}

fn open(path: &Path) -> io::Result<File> {
    OpenOptions::new().create(true).append(true).open(path)
}

/// The logger's target: forwards to the current file.
struct FileTarget;

impl Write for FileTarget {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match FILE.get() {
            Some((_, f)) => f.lock().unwrap_or_else(|p| p.into_inner()).write(buf),
            None => Ok(buf.len()),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Installs the logger: `path` `-` means stderr. `RUST_LOG` overrides the level.
pub fn init(path: &Path, verbose: bool) -> Result<()> {
    let default = if verbose { "debug" } else { "info" };
    let mut b =
        env_logger::Builder::from_env(env_logger::Env::default().default_filter_or(default));
    b.format(|buf, record| {
        let node = NODE.load(Ordering::Relaxed);
        let ts = buf.timestamp_millis();
        let node = if node == u32::MAX {
            String::new()
        } else {
            format!("[node {node}]")
        };
        writeln!(
            buf,
            "{ts} {:<5} kram-daemon{node}: {}",
            record.level(),
            record.args()
        )
    });
    if path != Path::new("-") {
        let file =
            open(path).with_context(|| format!("opening the log file {}", path.display()))?;
        let _ = FILE.set((path.to_path_buf(), Mutex::new(file)));
        b.target(env_logger::Target::Pipe(Box::new(FileTarget)))
            .write_style(env_logger::WriteStyle::Never);
    }
    b.try_init().context("installing the logger")?;
    Ok(())
}

/// Reopens the log file (after `logrotate` moved it). Nothing to do when logging to stderr.
pub fn reopen() -> Result<()> {
    if let Some((path, f)) = FILE.get() {
        let new = open(path).with_context(|| format!("reopening {}", path.display()))?;
        *f.lock().unwrap_or_else(|p| p.into_inner()) = new;
    }
    Ok(())
}

/// Lets through at most `burst` messages per `window`; counts the rest, so that a node
/// flooding garbage cannot flood the log.
pub struct RateLimit {
    burst: u32,
    window: Duration,
    start: Option<Instant>,
    used: u32,
    suppressed: u64,
}

impl RateLimit {
    pub const fn new(burst: u32, window: Duration) -> Self {
        RateLimit {
            burst,
            window,
            start: None,
            used: 0,
            suppressed: 0,
        }
    }

    /// Whether to log now; when a new window starts, `Some(n)` also reports how many were
    /// suppressed in the last one.
    pub fn allow(&mut self, now: Instant) -> (bool, Option<u64>) {
        let mut report = None;
        if self
            .start
            .is_none_or(|s| now.duration_since(s) >= self.window)
        {
            self.start = Some(now);
            self.used = 0;
            if self.suppressed > 0 {
                report = Some(std::mem::take(&mut self.suppressed));
            }
        }
        if self.used < self.burst {
            self.used += 1;
            (true, report)
        } else {
            self.suppressed += 1;
            (false, report)
        }
    }
}
