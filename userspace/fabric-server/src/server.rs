//! The event loop: accepts VMs and introduces them to each other.

use std::collections::{HashMap, VecDeque};
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::rc::Rc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use log::{debug, error, info, warn};
use mio::net::{UnixListener, UnixStream};
use mio::{Events, Interest, Poll, Token};
use nix::errno::Errno;
use nix::sys::eventfd::{EfdFlags, EventFd};
use nix::sys::signal::Signal;
use nix::sys::socket::{getsockopt, recv, sockopt, MsgFlags};
use signal_hook_mio::v1_0::Signals;
use unimem_wire::gas::{node_state, GasDescriptor};

use crate::control::{self, Command, Line};
use crate::listen::SocketFile;
use crate::nodes::{state_name, NodeStates};
use crate::peers::{Doorbells, Peer, Peers};
use crate::protocol::{Flush, Outbox};
use crate::shm::SharedRegion;
use crate::state::StateDir;

const LISTENER: Token = Token(0);
const SIGNALS: Token = Token(1);
const CONTROL: Token = Token(2);
/// Peers and control clients alike.
const FIRST_CLIENT_TOKEN: usize = 3;

/// A client is dropped once this many messages wait for it. A QEMU that is merely slow never
/// gets near it: a connect handshake is at most 3 + 16 * 64 messages.
const MAX_BACKLOG: usize = 4096;

/// Reads per readiness event before other clients get a turn; clients have nothing to say in
/// this protocol, so only a misbehaving one ever hits it.
const READS_PER_TURN: usize = 16;

/// Bytes of a partition poisoned per turn of the event loop: a poison makes every page of the
/// partition resident, which takes seconds for a few GiB on a busy host, and VMs and other
/// control clients are served in between.
const POISON_STEP: u64 = 32 << 20;

/// A `poison` under way: the node is LOST already, its partition is being filled.
struct Poisoning {
    id: u32,
    offset: u64,
    len: u64,
    done: u64,
    /// Who asked, for the reply (gone if it hung up meanwhile).
    client: Token,
    pid: Option<i32>,
    started: Instant,
}

pub struct Settings {
    pub nodes: u32,
    pub vectors: u32,
    pub layout: GasDescriptor,
}

pub struct Server {
    poll: Poll,
    listener: UnixListener,
    signals: Signals,
    settings: Settings,
    shm: SharedRegion,
    peers: Peers,
    /// Every node's liveness word, mirrored into the region's control area.
    nodes: NodeStates,
    state: Option<StateDir>,
    control: Option<UnixListener>,
    controls: HashMap<Token, control::Client>,
    /// Poisons under way, in the order they were asked for.
    poisoning: VecDeque<Poisoning>,
    next_token: usize,
    /// Peers whose sockets failed, disconnected once the current event is handled: a send
    /// fails in the middle of walking the peers, where removing one is not possible.
    doomed: Vec<(u32, String)>,
    /// Peers and control clients that still had unread input when their turn ended.
    unread: Vec<Token>,
    // Last, so the socket files disappear only after everything else is torn down.
    _control_socket: Option<SocketFile>,
    _socket: SocketFile,
}

impl Server {
    pub fn new(
        settings: Settings,
        shm: SharedRegion,
        (mut listener, socket): (UnixListener, SocketFile),
        control: Option<(UnixListener, SocketFile)>,
        state: Option<StateDir>,
    ) -> Result<Self> {
        let poll = Poll::new().context("creating the event loop")?;
        poll.registry()
            .register(&mut listener, LISTENER, Interest::READABLE)
            .context("registering the listener")?;
        let (control, control_socket) = match control {
            Some((mut l, file)) => {
                poll.registry()
                    .register(&mut l, CONTROL, Interest::READABLE)
                    .context("registering the control socket")?;
                (Some(l), Some(file))
            }
            None => (None, None),
        };
        let nodes = NodeStates::new(&shm, settings.nodes, settings.layout.ctl_size)?;
        if !nodes.in_region() {
            warn!(
                "the control area ({} bytes) has no room for the node state table: guests \
                 cannot tell lost nodes, and poison is refused",
                settings.layout.ctl_size
            );
        }
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
            nodes,
            settings,
            shm,
            state,
            control,
            controls: HashMap::new(),
            poisoning: VecDeque::new(),
            next_token: FIRST_CLIENT_TOKEN,
            doomed: Vec::new(),
            unread: Vec::new(),
            _control_socket: control_socket,
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
            let timeout = if self.unread.is_empty() && self.poisoning.is_empty() {
                self.next_idle_deadline()
                    .map(|t| t.saturating_duration_since(Instant::now()))
            } else {
                Some(Duration::ZERO)
            };
            match self.poll.poll(&mut events, timeout) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                other => other.context("waiting for events")?,
            }
            for token in std::mem::take(&mut self.unread) {
                self.readable(token);
            }
            self.reap();
            self.close_idle_controls();
            self.advance_poisoning();
            for event in &events {
                match event.token() {
                    LISTENER => self.accept_all(),
                    CONTROL => self.accept_controls(),
                    token if self.controls.contains_key(&token) => self.serve_control(token),
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
                            self.readable(token);
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
        // Its memory went away before it returns, not while it uses it.
        while self.poisoning.iter().any(|p| p.id == id) {
            self.advance_poisoning();
        }
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
        // Before the client can see the region.
        let word = self.nodes.connected(id);
        info!(
            "node {id} connected ({who}), connection {}",
            node_state::connects(word)
        );
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

    /// Input is waiting on `token`, a peer's or a control client's.
    fn readable(&mut self, token: Token) {
        if self.controls.contains_key(&token) {
            self.serve_control(token);
        } else {
            self.drain_input(token);
        }
    }

    fn accept_controls(&mut self) {
        loop {
            let Some(listener) = &self.control else {
                return;
            };
            match listener.accept() {
                Ok((stream, _)) => self.admit_control(stream),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::ConnectionAborted => {}
                Err(e) => {
                    error!("accepting a control client: {e}");
                    return;
                }
            }
        }
    }

    fn admit_control(&mut self, mut stream: UnixStream) {
        let pid = getsockopt(&stream, sockopt::PeerCredentials)
            .ok()
            .map(|c| c.pid())
            .filter(|&p| p > 0);
        if self.controls.len() >= control::MAX_CLIENTS {
            warn!(
                "refusing a control client (pid {pid:?}): {} connections are open",
                self.controls.len()
            );
            // Best effort: the socket is fresh, so one short line fits in its buffer.
            let _ = (&stream).write(b"error: too many control connections\n");
            return;
        }
        let token = Token(self.next_token);
        self.next_token += 1;
        // Both directions at once: edge-triggered, so a client that is always writable costs
        // one spurious event, and a stuck reply is sent as soon as the client reads.
        if let Err(e) = self.poll.registry().register(
            &mut stream,
            token,
            Interest::READABLE | Interest::WRITABLE,
        ) {
            error!("refusing a control client: registering its socket: {e}");
            return;
        }
        let client = control::Client::new(stream, pid);
        debug!("{} connected", client.describe());
        self.controls.insert(token, client);
        // Whatever it already sent is announced by the registration's first event.
    }

    /// Reads what a control client sent, answers every complete line, and sends the replies
    /// that fit; closes the client once it is done or misbehaves. Never waits.
    fn serve_control(&mut self, token: Token) {
        let Some(mut client) = self.controls.remove(&token) else {
            return;
        };
        match self.converse(token, &mut client) {
            Ok(()) if !client.done() => {
                self.controls.insert(token, client);
            }
            Ok(()) => self.close_control(client, "done"),
            Err(why) => self.close_control(client, &why),
        }
    }

    fn converse(&mut self, token: Token, client: &mut control::Client) -> Result<(), String> {
        let mut buf = [0u8; 4096];
        let mut drained = client.eof;
        for _ in 0..READS_PER_TURN {
            if drained {
                break;
            }
            match client.stream.read(&mut buf) {
                Ok(0) => {
                    client.eof = true;
                    client.finish();
                    drained = true;
                }
                Ok(n) => {
                    if !client.feed(&buf[..n]) {
                        return Err("sends commands faster than they are answered".into());
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => drained = true,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::ConnectionReset => {
                    return Err("hung up".into())
                }
                Err(e) => return Err(format!("receive failed: {e}")),
            }
            self.answer(token, client)?;
        }
        if !drained {
            self.unread.push(token);
        }
        // Lines that waited behind a poison that just finished.
        self.answer(token, client)?;
        match client.flush() {
            Ok(_) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Err("hung up".into()),
            Err(e) if e.kind() == io::ErrorKind::ConnectionReset => Err("hung up".into()),
            Err(e) => Err(format!("send failed: {e}")),
        }
    }

    /// Answers the client's complete lines, up to one whose reply is not ready yet.
    fn answer(&mut self, token: Token, client: &mut control::Client) -> Result<(), String> {
        while let Some(line) = client.next_line() {
            match self.execute(line, token, client.pid) {
                Some(reply) => {
                    if !client.reply(&reply) {
                        return Err("does not read its replies".into());
                    }
                }
                None => client.waiting = true,
            }
        }
        Ok(())
    }

    fn close_control(&mut self, mut client: control::Client, why: &str) {
        if let Err(e) = self.poll.registry().deregister(&mut client.stream) {
            debug!("deregistering a control client: {e}");
        }
        debug!("{} closed: {why}", client.describe());
    }

    fn next_idle_deadline(&self) -> Option<Instant> {
        self.controls
            .values()
            .filter(|c| !c.waiting)
            .map(|c| c.active + control::IDLE_TIMEOUT)
            .min()
    }

    fn close_idle_controls(&mut self) {
        let now = Instant::now();
        let idle: Vec<Token> = self
            .controls
            .iter()
            .filter(|(_, c)| !c.waiting && now >= c.active + control::IDLE_TIMEOUT)
            .map(|(t, _)| *t)
            .collect();
        for token in idle {
            if let Some(client) = self.controls.remove(&token) {
                self.close_control(client, "idle");
            }
        }
    }

    /// One control command from the client at `token`; returns its reply line, or `None` if
    /// the reply comes later (a poison under way).
    fn execute(&mut self, line: Line, token: Token, pid: Option<i32>) -> Option<String> {
        let command = match line {
            Line::TooLong => Err(format!(
                "command longer than {} bytes; ignored",
                control::MAX_LINE
            )),
            Line::Command(bytes) => control::parse(&bytes),
        };
        match command {
            Ok(Command::States) => Some(self.states()),
            Ok(Command::Poison(id)) => match self.poison(id, token, pid) {
                Ok(()) => None,
                Err(e) => Some(refused(pid, &e)),
            },
            Err(e) => Some(refused(pid, &e)),
        }
    }

    fn states(&self) -> String {
        (0..self.settings.nodes)
            .map(|id| {
                let word = self.nodes.word(id);
                format!("{id}:{}:{}", state_name(word), node_state::connects(word))
            })
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Node `id`'s memory goes away: its word says LOST first, then every byte of its
    /// partition becomes 0xff (what reads over a dead link return), a step per turn of the
    /// event loop; the client gets its reply when the last byte is written.
    fn poison(&mut self, id: u32, client: Token, pid: Option<i32>) -> Result<(), String> {
        let nodes = self.settings.nodes;
        if id >= nodes {
            return Err(format!(
                "poison: node {id} does not exist (nodes 0-{})",
                nodes - 1
            ));
        }
        if let Some(peer) = self.peers.iter().find(|p| p.id == id) {
            return Err(format!(
                "poison: {} is connected; kill it first (its memory only goes away with it)",
                peer.describe()
            ));
        }
        if !self.nodes.in_region() {
            return Err(format!(
                "poison: the control area ({} bytes) has no node state table, so guests \
                 would take the poison for data",
                self.settings.layout.ctl_size
            ));
        }
        let layout = &self.settings.layout;
        let offset = layout
            .partition_offset(id)
            .expect("node ids are below the node count");
        let len = layout.partition_size;
        let queued = self.poisoning.iter().map(|p| p.len - p.done).sum();
        self.shm
            .ensure_memory_for(offset, len, queued)
            .map_err(|e| format!("poison: cannot poison node {id}'s partition: {e:#}"))?;
        self.nodes.lost(id);
        info!("control (pid {pid:?}): node {id} is lost; poisoning its partition");
        self.poisoning.push_back(Poisoning {
            id,
            offset,
            len,
            done: 0,
            client,
            pid,
            started: Instant::now(),
        });
        Ok(())
    }

    /// Poisons the next step of the oldest poison under way; answers its client once it is
    /// complete.
    fn advance_poisoning(&mut self) {
        let Some(job) = self.poisoning.front_mut() else {
            return;
        };
        let step = (job.len - job.done).min(POISON_STEP);
        let result = self.shm.fill(job.offset + job.done, step, 0xff);
        job.done += step;
        let reply = match result {
            Err(e) => refused(
                job.pid,
                &format!(
                    "poison: node {} is lost, but poisoning its partition failed: {e:#}",
                    job.id
                ),
            ),
            Ok(()) if job.done < job.len => return,
            Ok(()) => {
                let size = if job.len % (1 << 20) == 0 {
                    format!("{} MiB", job.len >> 20)
                } else {
                    format!("{} KiB", job.len >> 10)
                };
                info!(
                    "control (pid {:?}): node {} poisoned ({size} at {:#x} in {:.1?})",
                    job.pid,
                    job.id,
                    job.offset,
                    job.started.elapsed()
                );
                format!("ok: node {} poisoned ({size})", job.id)
            }
        };
        let job = self.poisoning.pop_front().expect("the job just advanced");
        let Some(client) = self.controls.get_mut(&job.client) else {
            return; // it hung up meanwhile
        };
        client.waiting = false;
        client.active = Instant::now();
        if client.reply(&reply) {
            // Sends the reply and answers what waited behind it.
            self.serve_control(job.client);
        } else if let Some(client) = self.controls.remove(&job.client) {
            self.close_control(client, "does not read its replies");
        }
    }

    fn reap(&mut self) {
        while let Some((id, why)) = self.doomed.pop() {
            let Some(mut peer) = self.peers.remove(id) else {
                continue; // doomed twice
            };
            if let Err(e) = self.poll.registry().deregister(&mut peer.stream) {
                debug!("deregistering node {id}: {e}");
            }
            let word = self.nodes.disconnected(id);
            info!(
                "{} disconnected: {why}; now {}",
                peer.describe(),
                state_name(word)
            );
            // Its socket and unsent messages close here; its doorbells stay (see `admit`), and
            // the others are not told. Its state is written before peer-<id> goes, so a
            // script that saw the file go finds the node gone, and `poison` accepts it.
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

/// An `error:` reply, logged.
fn refused(pid: Option<i32>, why: &str) -> String {
    warn!("control (pid {pid:?}): refused: {why}");
    format!("error: {why}")
}
