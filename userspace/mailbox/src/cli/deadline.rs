//! A process-wide time limit. A watchdog thread sleeps, then sends SIGALRM to the main thread,
//! whose handler is installed *without* `SA_RESTART`: a receive sleeping in the driver (or in
//! poll/epoll) returns `EINTR`, and the command says what it was waiting for instead of
//! hanging or dying silently. Not `alarm(2)`: the guest kernel is built without
//! `CONFIG_POSIX_TIMERS`, where alarm/setitimer/timer_create fail with ENOSYS. The signal is
//! repeated until the process ends, in case the first one landed just before a blocking call.

use crate::Errno;
use anyhow::{anyhow, Result};
use nix::sys::pthread::{pthread_kill, pthread_self};
use nix::sys::signal::{sigaction, SaFlags, SigAction, SigHandler, SigSet, Signal};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::Duration;

static EXPIRED: AtomicBool = AtomicBool::new(false);
static SECONDS: AtomicU32 = AtomicU32::new(0);

extern "C" fn on_alarm(_: nix::libc::c_int) {
    EXPIRED.store(true, Ordering::SeqCst);
}

/// `--timeout SECONDS`, an option of every subcommand of a program that flattens it.
#[derive(clap::Args)]
pub struct TimeoutArg {
    /// Give up (exit non-zero) after this many seconds of waiting; 0 = never.
    /// Default: 60 for commands that wait for a peer, never for those that serve or hold.
    #[arg(long, global = true)]
    timeout: Option<u32>,
}

impl TimeoutArg {
    /// Starts the limit given, or by default 60 s for a command that waits on another process
    /// (`waits_for_peer`), so that a missing peer ends in a clear message rather than a
    /// test-harness kill, and none for the others.
    pub fn arm(&self, waits_for_peer: bool) -> Result<()> {
        arm(self.timeout.unwrap_or(if waits_for_peer { 60 } else { 0 }))
    }
}

/// Starts the limit for the calling (main) thread; 0: none.
pub fn arm(seconds: u32) -> Result<()> {
    if seconds == 0 {
        return Ok(());
    }
    let action = SigAction::new(
        SigHandler::Handler(on_alarm),
        SaFlags::empty(),
        SigSet::empty(),
    );
    // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
    unsafe { sigaction(Signal::SIGALRM, &action) }?;
    SECONDS.store(seconds, Ordering::SeqCst);
    let main = pthread_self();
    std::thread::Builder::new()
        .name("deadline".into())
        .spawn(move || {
            std::thread::sleep(Duration::from_secs(u64::from(seconds)));
            EXPIRED.store(true, Ordering::SeqCst);
            loop {
                let _ = pthread_kill(main, Signal::SIGALRM);
                std::thread::sleep(Duration::from_millis(100));
            }
        })?;
    Ok(())
}

/// True once the limit has passed.
pub fn expired() -> bool {
    EXPIRED.load(Ordering::SeqCst)
}

/// Fails with a timeout message if the limit has passed (for loops that never sleep).
pub fn check(what: &str) -> Result<()> {
    if expired() {
        Err(timeout_error(what))
    } else {
        Ok(())
    }
}

/// Turns the `EINTR` caused by the alarm into "timed out waiting for ...".
pub fn explain<T>(r: crate::Result<T>, what: &str) -> Result<T> {
    match r {
        Err(e) if e.is(Errno::EINTR) && expired() => Err(timeout_error(what)),
        Err(e) => Err(anyhow!(e).context(what.to_owned())),
        Ok(v) => Ok(v),
    }
}

fn timeout_error(what: &str) -> anyhow::Error {
    anyhow!(
        "timed out after {} s {what}",
        SECONDS.load(Ordering::SeqCst)
    )
}
