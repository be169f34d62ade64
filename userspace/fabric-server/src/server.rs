//! The event loop: accepts VMs and introduces them to each other.

use std::io::{self, Read};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::rc::Rc;
use std::time::Duration;

use anyhow::{Context, Result};
use log::{debug, error, info, warn};
use mio::net::{UnixListener, UnixStream};
use mio::{Events, Interest, Poll, Token};
use nix::errno::Errno;
use nix::sys::eventfd::{EfdFlags, EventFd};
use nix::sys::signal::Signal;
use nix::sys::socket::{getsockopt, recv, sockopt, MsgFlags};
use signal_hook_mio::v1_0::Signals;

use crate::listen::SocketFile;
use crate::peers::{Doorbells, Peer, Peers};
use crate::protocol::{Flush, Outbox};
use crate::shm::SharedRegion;
use crate::state::StateDir;

const LISTENER: Token = Token(0);
const SIGNALS: Token = Token(1);
const FIRST_PEER_TOKEN: usize = 2;

/// A client is dropped once this many messages wait for it. A QEMU that is merely slow never
/// gets near it: a connect handshake is at most 3 + 16 * 64 messages.
const MAX_BACKLOG: usize = 4096;

/// Reads per readiness event before other clients get a turn; clients have nothing to say in
/// this protocol, so only a misbehaving one ever hits it.
const READS_PER_TURN: usize = 16;

pub struct Settings {
    pub nodes: u32,
    pub vectors: u32,
}

pub struct Server {
    poll: Poll,
    listener: UnixListener,
    signals: Signals,
    settings: Settings,
    shm: SharedRegion,
    peers: Peers,
    state: Option<StateDir>,
    next_token: usize,
    /// Peers whose sockets failed, disconnected once the current event is handled: a send
    /// fails in the middle of walking the peers, where removing one is not possible.
    doomed: Vec<(u32, String)>,
    /// Peers that still had unread input when their turn ended.
    unread: Vec<Token>,
    // Last, so the socket file disappears only after everything else is torn down.
    _socket: SocketFile,
}

impl Server {
    pub fn new(
        settings: Settings,
        shm: SharedRegion,
        (mut listener, socket): (UnixListener, SocketFile),
        state: Option<StateDir>,
    ) -> Result<Self> {
        let poll = Poll::new().context("creating the event loop")?;
        poll.registry()
            .register(&mut listener, LISTENER, Interest::READABLE)
            .context("registering the listener")?;
        let mut signals = Signals::new([Signal::SIGINT as i32, Signal::SIGTERM as i32])
            .context("installing SIGINT/SIGTERM handlers")?;
        poll.registry()
            .register(&mut signals, SIGNALS, Interest::READABLE)
            .context("registering the signal pipe")?;
        Ok(Self {
            poll,
            listener,
            signals,
            peers: Peers::new(settings.nodes),
            settings,
            shm,
            state,
            next_token: FIRST_PEER_TOKEN,
            doomed: Vec::new(),
            unread: Vec::new(),
            _socket: socket,
        })
    }

    /// Serves until SIGINT or SIGTERM.
    pub fn run(&mut self) -> Result<()> {
        if let Some(state) = &self.state {
            state.mark_ready()?;
        }
        let mut events = Events::with_capacity(64);
        loop {
            let timeout = (!self.unread.is_empty()).then_some(Duration::ZERO);
            match self.poll.poll(&mut events, timeout) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                other => other.context("waiting for events")?,
            }
            for token in std::mem::take(&mut self.unread) {
                self.drain_input(token);
            }
            self.reap();
            for event in &events {
                match event.token() {
                    LISTENER => self.accept_all(),
                    SIGNALS => {
                        if let Some(sig) = self.signals.pending().next() {
                            let name = Signal::try_from(sig).map_or("signal", Signal::as_str);
                            info!("{name} received, shutting down");
                            // No departure notices: the VMs can keep using the region and
                            // each other's doorbells without a server.
                            return Ok(());
                        }
                    }
                    token => {
                        if event.is_writable() {
                            self.flush_token(token);
                        }
                        if event.is_readable() || event.is_read_closed() || event.is_error() {
                            self.drain_input(token);
                        }
                    }
                }
                self.reap();
            }
        }
    }

    fn accept_all(&mut self) {
        loop {
            match self.listener.accept() {
                Ok((stream, _)) => self.admit(stream),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::ConnectionAborted => {}
                Err(e) => {
                    // Out of fds, say. The connection stays queued and is retried when the
                    // next one arrives; exiting would take every connected VM's fabric down.
                    error!("accepting a client: {e}");
                    return;
                }
            }
        }
    }

    /// Doorbells belong to node ids, not to connections, and departures are never announced.
    ///
    /// QEMU's ivshmem device cannot take an id back: on a disconnect notification it frees
    /// that peer's eventfd array but keeps the pointer (close_peer_eventfds() in
    /// hw/misc/ivshmem-pci.c), so connect messages for the same id later write to freed
    /// memory, and the VMs that stayed up crash with heap corruption. QEMU's own server never
    /// reuses ids; this one must, so that a restarted VM gets its partition back. So an id's
    /// eventfds are created on its first connection and kept until the server exits: every VM
    /// learns them exactly once, and a VM that returns under its old id answers the doorbells
    /// the others already hold. Guests cannot see connections anyway; a doorbell rung while
    /// its node is down is simply dropped when the node returns.
    fn admit(&mut self, mut stream: UnixStream) {
        let pid = getsockopt(&stream, sockopt::PeerCredentials)
            .ok()
            .map(|c| c.pid())
            .filter(|&p| p > 0);
        let who = pid.map_or_else(|| "unknown pid".to_string(), |p| format!("pid {p}"));
        if hung_up(&stream) {
            // Admitting it would only make the other VMs learn the doorbells of a node that
            // is already gone. A second server probing whether this one is alive connects
            // and closes like this.
            debug!("client ({who}) closed its connection before it was admitted");
            return;
        }
        let Some(id) = self.peers.lowest_free() else {
            warn!(
                "refusing client ({who}): all {} node ids are in use",
                self.settings.nodes
            );
            return;
        };
        let (doorbells, first_time) = match self.peers.doorbells(id) {
            Some(bells) => {
                bells.iter().for_each(|fd| drain(fd));
                (bells.clone(), false)
            }
            None => match self.new_doorbells() {
                Ok(bells) => (bells, true),
                Err(e) => {
                    error!("refusing client ({who}): {e:#}");
                    return;
                }
            },
        };
        let token = Token(self.next_token);
        self.next_token += 1;
        if let Err(e) = self
            .poll
            .registry()
            .register(&mut stream, token, Interest::READABLE)
        {
            error!("refusing client ({who}): registering its socket: {e}");
            return;
        }

        let mut outbox = Outbox::default();
        outbox.push_greeting(id, self.shm.fd());
        for (other, bells) in self.peers.all_doorbells() {
            if other != id {
                outbox.push_peer(other, bells);
            }
        }
        outbox.push_peer(id, &doorbells);
        if first_time {
            for other in self.peers.ids() {
                self.enqueue(other, |o| o.push_peer(id, &doorbells));
            }
            self.peers.set_doorbells(id, doorbells);
        }
        self.peers.insert(Peer {
            id,
            pid,
            stream,
            token,
            outbox,
            wants_write: false,
        });
        info!("node {id} connected ({who})");
        // Before the first byte goes out, so peer-<id> exists by the time the client knows
        // its id.
        if let Some(state) = &self.state {
            if let Err(e) = state.peer_connected(id, pid) {
                error!("writing {}/peer-{id}: {e}", state.path().display());
            }
        }
        self.flush(id);
    }

    fn new_doorbells(&self) -> Result<Doorbells> {
        (0..self.settings.vectors)
            .map(|_| {
                // Non-blocking so that `drain` never waits (QEMU sets that flag anyway, and
                // it belongs to the file, which QEMU shares).
                EventFd::from_flags(EfdFlags::EFD_CLOEXEC | EfdFlags::EFD_NONBLOCK)
                    .map(|e| Rc::new(OwnedFd::from(e)))
                    .context("creating a doorbell eventfd")
            })
            .collect()
    }

    fn enqueue(&mut self, id: u32, push: impl FnOnce(&mut Outbox)) {
        if let Some(peer) = self.peers.get_mut(id) {
            push(&mut peer.outbox);
            self.flush(id);
        }
    }

    fn flush_token(&mut self, token: Token) {
        if let Some(id) = self.peers.id_of(token) {
            self.flush(id);
        }
    }

    fn flush(&mut self, id: u32) {
        let Some(peer) = self.peers.get_mut(id) else {
            return;
        };
        let result = peer.outbox.flush(peer.stream.as_fd());
        let wants_write = match result {
            Ok(Flush::Done) => false,
            Ok(Flush::Blocked) if peer.outbox.len() > MAX_BACKLOG => {
                self.doomed
                    .push((id, format!("{} messages unread", peer.outbox.len())));
                return;
            }
            Ok(Flush::Blocked) => true,
            Err(Errno::EPIPE | Errno::ECONNRESET) => {
                self.doomed.push((id, "hung up".into()));
                return;
            }
            Err(e) => {
                self.doomed.push((id, format!("send failed: {e}")));
                return;
            }
        };
        if wants_write != peer.wants_write {
            let interest = if wants_write {
                Interest::READABLE | Interest::WRITABLE
            } else {
                Interest::READABLE
            };
            match self
                .poll
                .registry()
                .reregister(&mut peer.stream, peer.token, interest)
            {
                Ok(()) => peer.wants_write = wants_write,
                Err(e) => self.doomed.push((id, format!("reregistering: {e}"))),
            }
        }
    }

    /// Clients never speak in this protocol: whatever they send is read and dropped, and only
    /// end-of-file or an error means something (the client is gone).
    fn drain_input(&mut self, token: Token) {
        let Some(id) = self.peers.id_of(token) else {
            return;
        };
        let Some(peer) = self.peers.get_mut(id) else {
            return;
        };
        let mut buf = [0u8; 4096];
        for _ in 0..READS_PER_TURN {
            match peer.stream.read(&mut buf) {
                Ok(0) => {
                    self.doomed.push((id, "hung up".into()));
                    return;
                }
                // What a client that exits with our messages still unread looks like.
                Err(e) if e.kind() == io::ErrorKind::ConnectionReset => {
                    self.doomed.push((id, "hung up".into()));
                    return;
                }
                Ok(n) => debug!("ignoring {n} bytes from node {id}"),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.doomed.push((id, format!("receive failed: {e}")));
                    return;
                }
            }
        }
        self.unread.push(token);
    }

    fn reap(&mut self) {
        while let Some((id, why)) = self.doomed.pop() {
            let Some(mut peer) = self.peers.remove(id) else {
                continue; // doomed twice
            };
            if let Err(e) = self.poll.registry().deregister(&mut peer.stream) {
                debug!("deregistering node {id}: {e}");
            }
            info!("{} disconnected: {why}", peer.describe());
            // Its socket and unsent messages close here; its doorbells stay (see `admit`), and
            // the others are not told.
            drop(peer);
            if let Some(state) = &self.state {
                if let Err(e) = state.peer_gone(id) {
                    error!("removing {}/peer-{id}: {e}", state.path().display());
                }
            }
        }
    }
}

/// Resets an eventfd's counter; it is non-blocking, so an idle one just says EAGAIN.
fn drain(fd: &OwnedFd) {
    let mut counter = [0u8; 8];
    let _ = nix::unistd::read(fd.as_raw_fd(), &mut counter);
}

/// Whether the client already closed its end (EOF is waiting on a fresh connection).
fn hung_up(stream: &UnixStream) -> bool {
    let mut byte = [0u8; 1];
    matches!(
        recv(
            stream.as_raw_fd(),
            &mut byte,
            MsgFlags::MSG_PEEK | MsgFlags::MSG_DONTWAIT
        ),
        Ok(0)
    )
}
