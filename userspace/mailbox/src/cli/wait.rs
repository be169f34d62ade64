//! How a command waits for packets: sleeping in the driver, poll(2), epoll or spinning. The
//! mode decides how the file is opened (blocking only for `--block`).

use super::deadline;
use crate::{Kmsg, Mailbox, PACKET_LEN};
use anyhow::{Context, Result};
use nix::sys::epoll::{Epoll, EpollCreateFlags, EpollEvent, EpollFlags, EpollTimeout};
use std::cell::OnceCell;
use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitMode {
    /// RECV on a blocking file: the thread sleeps in the driver until a packet arrives.
    Block,
    /// poll(2) for POLLIN on a nonblocking file, then RECV.
    Poll,
    /// epoll_wait(2) on a nonblocking file, then RECV.
    Epoll,
    /// RECV on a nonblocking file in a loop (yielding the CPU between tries).
    Spin,
}

impl fmt::Display for WaitMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            WaitMode::Block => "block",
            WaitMode::Poll => "poll",
            WaitMode::Epoll => "epoll",
            WaitMode::Spin => "spin",
        })
    }
}

/// `--block | --poll | --epoll | --spin` (default: block).
#[derive(clap::Args, Debug, Clone, Copy)]
#[group(multiple = false)]
pub struct ModeArgs {
    /// Sleep in the RECV ioctl (blocking file) [default].
    #[arg(long)]
    block: bool,
    /// Wait with poll(2) on a nonblocking file, then RECV.
    #[arg(long)]
    poll: bool,
    /// Wait with epoll on a nonblocking file, then RECV.
    #[arg(long)]
    epoll: bool,
    /// Busy-poll RECV on a nonblocking file (yields between tries).
    #[arg(long)]
    spin: bool,
}

impl ModeArgs {
    pub fn mode(&self) -> WaitMode {
        if self.poll {
            WaitMode::Poll
        } else if self.epoll {
            WaitMode::Epoll
        } else if self.spin {
            WaitMode::Spin
        } else {
            WaitMode::Block
        }
    }
}

/// A mailbox file plus what it takes to wait on it in one mode.
pub struct Waiter {
    mb: Mailbox,
    mode: WaitMode,
    /// Created at the first wait, i.e. after ALLOC/KBIND: the driver's poll() registers the
    /// wait queues of what the file has at that moment, and epoll calls it only when the file
    /// is added, so a file added before ALLOC would never become ready.
    epoll: OnceCell<Epoll>,
}

impl Waiter {
    pub fn open(mode: WaitMode) -> Result<Self> {
        let mb = if mode == WaitMode::Block {
            Mailbox::open()
        } else {
            Mailbox::open_nonblocking()
        }?;
        Ok(Self {
            mb,
            mode,
            epoll: OnceCell::new(),
        })
    }

    pub fn mailbox(&self) -> &Mailbox {
        &self.mb
    }

    /// The next packet, undecoded.
    pub fn recv_raw(&self, what: &str) -> Result<[u8; PACKET_LEN]> {
        self.next(what, Mailbox::recv_raw, Mailbox::try_recv_raw)
    }

    /// The next kernel message of the bound service.
    pub fn krecv(&self, what: &str) -> Result<Kmsg> {
        self.next(what, Mailbox::krecv, Mailbox::try_krecv)
    }

    fn next<T>(
        &self,
        what: &str,
        blocking: impl Fn(&Mailbox) -> crate::Result<T>,
        attempt: impl Fn(&Mailbox) -> crate::Result<Option<T>>,
    ) -> Result<T> {
        let mb = &self.mb;
        match self.mode {
            WaitMode::Block => deadline::explain(blocking(mb), what),
            WaitMode::Poll => loop {
                deadline::explain(mb.wait_readable(None), what)?;
                if let Some(v) = deadline::explain(attempt(mb), what)? {
                    return Ok(v);
                }
            },
            WaitMode::Epoll => {
                let ep = match self.epoll.get() {
                    Some(ep) => ep,
                    None => {
                        let ep = Epoll::new(EpollCreateFlags::EPOLL_CLOEXEC)?;
                        ep.add(&self.mb, EpollEvent::new(EpollFlags::EPOLLIN, 0))
                            .context("adding the mailbox to epoll")?;
                        self.epoll.get_or_init(|| ep)
                    }
                };
                loop {
                    let mut events = [EpollEvent::empty()];
                    match ep.wait(&mut events, EpollTimeout::NONE) {
                        Err(nix::errno::Errno::EINTR) => deadline::check(what)?,
                        Err(e) => return Err(e).context(format!("epoll_wait {what}")),
                        Ok(_) => {}
                    }
                    if let Some(v) = deadline::explain(attempt(mb), what)? {
                        return Ok(v);
                    }
                }
            }
            WaitMode::Spin => loop {
                if let Some(v) = deadline::explain(attempt(mb), what)? {
                    return Ok(v);
                }
                deadline::check(what)?;
                // One vCPU per node: without yielding, a same-node peer could not run.
                std::thread::yield_now();
            },
        }
    }
}

/// Runs a send until it is accepted, sleeping briefly while the destination ring is full
/// (`EAGAIN`), for at most `limit`. Returns how many `EAGAIN`s there were, or the error.
pub fn retry_full<F>(limit: std::time::Duration, what: &str, mut send: F) -> Result<u64>
where
    F: FnMut() -> crate::Result<()>,
{
    let start = std::time::Instant::now();
    let mut full = 0;
    loop {
        match send() {
            Ok(()) => return Ok(full),
            Err(e) if e.is(nix::errno::Errno::EAGAIN) && start.elapsed() < limit => {
                full += 1;
                std::thread::sleep(std::time::Duration::from_micros(50));
            }
            Err(e) => return deadline::explain(Err(e), what),
        }
    }
}
