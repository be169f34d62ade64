//! QEMU's ivshmem client-server protocol (QEMU docs/specs/ivshmem-spec.rst): the server talks,
//! clients only listen. Every message is one little-endian i64, optionally carrying one fd.
//!
//! The spec's disconnect notification (a peer id without an fd) is never sent: see
//! `Server::admit`.

use std::collections::VecDeque;
use std::io::IoSlice;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};
use std::rc::Rc;

use nix::errno::Errno;
use nix::sys::socket::{sendmsg, ControlMessage, MsgFlags};

/// The only protocol version QEMU (since 2.5) understands.
pub const PROTOCOL_VERSION: i64 = 0;
/// The id that announces the shared-memory fd.
pub const SHM_MESSAGE_ID: i64 = -1;

/// One protocol message, possibly partly sent.
struct Message {
    bytes: [u8; 8],
    sent: usize,
    /// Shared with the owning peer so that a peer's eventfds outlive it while notifications
    /// that carry them are still queued for someone else.
    fd: Option<Rc<OwnedFd>>,
}

/// What a socket did with the queued messages.
#[derive(Debug, PartialEq, Eq)]
pub enum Flush {
    /// Everything was sent.
    Done,
    /// The socket buffer is full; try again when it is writable.
    Blocked,
}

/// Messages waiting for one client. Sockets are non-blocking so that one VM that stops reading
/// cannot stall the whole fabric; what does not fit in its socket buffer waits here.
#[derive(Default)]
pub struct Outbox {
    queue: VecDeque<Message>,
}

impl Outbox {
    pub fn len(&self) -> usize {
        self.queue.len()
    }

    fn push(&mut self, value: i64, fd: Option<&Rc<OwnedFd>>) {
        self.queue.push_back(Message {
            bytes: value.to_le_bytes(),
            sent: 0,
            fd: fd.cloned(),
        });
    }

    /// Steps 1-3 of the connect sequence: version, the client's id, the shared memory.
    pub fn push_greeting(&mut self, id: u32, shm: &Rc<OwnedFd>) {
        self.push(PROTOCOL_VERSION, None);
        self.push(i64::from(id), None);
        self.push(SHM_MESSAGE_ID, Some(shm));
    }

    /// Tells the client how to ring peer `id`'s doorbells: one message per vector, in vector
    /// order. When `id` is the client's own id these are the fds it receives its interrupts on
    /// (step 5 of the connect sequence).
    pub fn push_peer(&mut self, id: u32, vectors: &[Rc<OwnedFd>]) {
        for fd in vectors {
            self.push(i64::from(id), Some(fd));
        }
    }

    /// Sends as much as the socket takes. Errors other than a full buffer mean the client is
    /// gone or broken.
    pub fn flush(&mut self, sock: BorrowedFd<'_>) -> nix::Result<Flush> {
        while let Some(msg) = self.queue.front_mut() {
            while msg.sent < msg.bytes.len() {
                match send(sock, msg) {
                    Ok(()) => {}
                    Err(Errno::EAGAIN) => return Ok(Flush::Blocked),
                    Err(Errno::EINTR) => {}
                    Err(e) => return Err(e),
                }
            }
            self.queue.pop_front();
        }
        Ok(Flush::Done)
    }
}

fn send(sock: BorrowedFd<'_>, msg: &mut Message) -> nix::Result<()> {
    let iov = [IoSlice::new(&msg.bytes[msg.sent..])];
    let raw = msg.fd.as_ref().map(|fd| [fd.as_raw_fd()]);
    let cmsgs: &[ControlMessage] = match &raw {
        Some(fds) => &[ControlMessage::ScmRights(fds)],
        None => &[],
    };
    // MSG_NOSIGNAL: a client that vanished must show up as EPIPE, not kill the server.
    let n = sendmsg::<()>(
        sock.as_raw_fd(),
        &iov,
        cmsgs,
        MsgFlags::MSG_NOSIGNAL | MsgFlags::MSG_DONTWAIT,
        None,
    )?;
    if n > 0 {
        // The fd travels with the first byte; resending it with the rest would duplicate it.
        msg.fd = None;
        msg.sent += n;
    }
    Ok(())
}
