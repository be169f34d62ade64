//! The event loop: the mailbox file (bound to service KRAM_DAEMON), the signal pipe
//! (SIGTERM, SIGINT, SIGHUP), the status socket, and the earliest deadline (offer, lease,
//! grace) as the poll timeout. The lease record in this node's partition is rewritten before
//! any reply goes out whenever the set of lent grants changed; expired leases are wiped
//! before their chunks are free.

use crate::logging::{self, RateLimit};
use crate::partition::{NodeStates, Partition};
use anyhow::{bail, Context, Result};
use kram_daemon::heartbeat::Heartbeats;
use kram_daemon::lease::{self, RecordStart, StartMode};
use kram_daemon::state;
use kram_daemon::status;
use kram_daemon::table::{AckKind, Expired, Grant, GrantKind, Outcome, Revoke, Table};
use log::{debug, error, info, warn};
use mio::net::UnixListener;
use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token};
use nix::sys::signal::Signal;
use signal_hook_mio::v1_0::Signals;
use std::collections::{HashMap, HashSet};
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use unimem_mailbox::{service, Errno, Mailbox};
use unimem_wire::gas::{node_state, MAX_NODES};
use unimem_wire::kram::reply_service;

const MAILBOX: Token = Token(0);
const SIGNALS: Token = Token(1);
const LISTENER: Token = Token(2);
/// The loop wakes at least this often and drains the mailbox even without an event, so a
/// lost wake-up delays a message by at most this much.
const MAX_SLEEP: Duration = Duration::from_secs(1);

pub struct Config {
    pub node: u32,
    pub chunks: u32,
    /// GAS offset of chunk 0 (for aligned requests).
    pub gas_offset: u64,
    /// eusrvmem's layout, to map this node's partition.
    pub ctl_size: u64,
    pub partition_size: u64,
    /// V2, or V1 for a seed-protocol peer.
    pub max_version: u8,
    pub offer_timeout: Duration,
    pub socket: PathBuf,
    pub state_file: Option<PathBuf>,
}

pub struct Daemon {
    config: Config,
    table: Table,
    mailbox: Mailbox,
    poll: Poll,
    signals: Signals,
    listener: UnixListener,
    started: Instant,
    /// The grants as last written to the state file.
    saved: Vec<(Grant, GrantKind)>,
    /// The record area and the chunks, mapped.
    partition: Partition,
    start_mode: StartMode,
    /// The generation of the lease record last written (or found).
    generation: Option<u64>,
    /// The lent grants as the record in the partition says them (`None`: unknown, write it).
    recorded: Option<Vec<Grant>>,
    /// (node, instance, chunks) of requests already logged as unanswered (or deferred) since
    /// the table last changed: a driver asks every second, the log says it once.
    quiet: HashSet<(u8, u8, u32)>,
    noisy: RateLimit,
    /// The fabric's liveness words and the nodes' kernel heartbeats (the lease rule).
    states: NodeStates,
    /// Per lent grant (node, instance): its borrower's connection count when it took (or last
    /// confirmed) the range, or first renewed it after a restore; a borrower that reconnected
    /// since (rebooted) no longer uses that range.
    connects: HashMap<(u8, u8), u64>,
    /// Which borrowers are frozen or thawing.
    heartbeats: Heartbeats,
}

impl Daemon {
    /// Loads the state file or the lease record, binds the service, opens the status socket.
    pub fn start(config: Config) -> Result<Self> {
        logging::set_node(config.node);
        let mut table = Table::new(config.node, config.chunks, config.offer_timeout)?;
        table.set_gas_offset(config.gas_offset);
        table.set_max_version(config.max_version);
        let mut partition = Partition::open(
            config.ctl_size,
            config.partition_size,
            config.node,
            config.chunks,
        )?;
        let record = partition.read_record();
        let now = Instant::now();
        let from_file = match &config.state_file {
            Some(path) => restore(&mut table, path)?,
            None => None,
        };
        let (start_mode, generation, recorded, saved) = match from_file {
            Some(saved) => {
                // The state file wins; the record only tells its generation.
                let mut scratch = Table::new(config.node, config.chunks, config.offer_timeout)?;
                let gen = lease::restore(&mut scratch, &record, now).generation();
                let mode = StartMode::StateFile {
                    grants: saved.len(),
                };
                (mode, gen, None, saved)
            }
            None => {
                match lease::restore(&mut table, &record, now) {
                    RecordStart::Fresh => {
                        info!("the lease record in this partition is empty: nothing was lent from here");
                        (StartMode::Fresh, None, Some(Vec::new()), Vec::new())
                    }
                    RecordStart::Restored { generation, grants } => {
                        for g in &grants {
                            info!(
                            "restored from the lease record (generation {generation}): lent {g}, lease renewed for {:?}",
                            table.lease()
                        );
                        }
                        let mode = StartMode::Record {
                            generation,
                            grants: grants.len(),
                        };
                        (mode, Some(generation), Some(grants), Vec::new())
                    }
                    RecordStart::Invalid { why, generation } => {
                        table.start_grace(now);
                        warn!(
                        "no state file and no usable lease record ({why}): grace period of {:?}: \
                         REQUESTs deferred, borrowers claim their ranges back with RENEW / CONFIRM; \
                         then every unclaimed chunk is wiped",
                        table.lease()
                    );
                        (StartMode::Grace { why }, generation, None, Vec::new())
                    }
                }
            }
        };

        let mailbox = Mailbox::open_nonblocking().context("opening /dev/unimem_mailbox")?;
        if let Err(e) = mailbox.kbind(service::KRAM_DAEMON) {
            if e.is(Errno::EBUSY) {
                bail!(
                    "service KRAM_DAEMON ({}) is already bound on node {}: another kram-daemon \
                     is running here (kram-daemon --status shows it)",
                    service::KRAM_DAEMON,
                    config.node
                );
            }
            return Err(e).context("binding service KRAM_DAEMON");
        }

        // The service is ours, so no other daemon of this node uses the socket: a file there
        // is left over from a daemon that was killed.
        match std::fs::remove_file(&config.socket) {
            Ok(()) => warn!("removed a stale {}", config.socket.display()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e).context(format!("removing {}", config.socket.display())),
        }
        let mut listener = UnixListener::bind(&config.socket)
            .with_context(|| format!("listening on {}", config.socket.display()))?;
        std::fs::set_permissions(&config.socket, std::fs::Permissions::from_mode(0o600))?;

        let poll = Poll::new().context("creating the event loop")?;
        let mut signals = Signals::new([
            Signal::SIGTERM as i32,
            Signal::SIGINT as i32,
            Signal::SIGHUP as i32,
        ])
        .context("installing signal handlers")?;
        let registry = poll.registry();
        // After KBIND: the driver's poll registers the wait queues the file has when added.
        registry.register(
            &mut SourceFd(&mailbox.as_raw_fd()),
            MAILBOX,
            Interest::READABLE,
        )?;
        registry.register(&mut signals, SIGNALS, Interest::READABLE)?;
        registry.register(&mut listener, LISTENER, Interest::READABLE)?;

        info!(
            "started (pid {}): lending {} chunks of 1 MiB (partition offset {:#x}..{:#x}), \
             offers expire after {:?}, leases after {:?}, protocol {}, status on {}, state file {}, start: {start_mode}",
            std::process::id(),
            config.chunks,
            unimem_wire::kram::LENDABLE_OFFSET,
            unimem_wire::kram::LENDABLE_OFFSET
                + u64::from(config.chunks) * unimem_wire::kram::CHUNK_SIZE,
            config.offer_timeout,
            table.lease(),
            if config.max_version == unimem_wire::kram::V1 { "v1 only" } else { "v1+v2" },
            config.socket.display(),
            config
                .state_file
                .as_ref()
                .map_or("none".into(), |p| p.display().to_string())
        );
        let states = NodeStates::open(config.ctl_size)?;
        let mut daemon = Daemon {
            states,
            connects: HashMap::new(),
            heartbeats: Heartbeats::new(),
            config,
            table,
            mailbox,
            poll,
            signals,
            listener,
            started: Instant::now(),
            saved,
            partition,
            start_mode,
            generation,
            recorded,
            quiet: HashSet::new(),
            noisy: RateLimit::new(20, Duration::from_secs(10)),
        };
        daemon.persist();
        Ok(daemon)
    }

    /// Serves until SIGTERM or SIGINT.
    pub fn run(mut self) -> Result<()> {
        let mut events = Events::with_capacity(16);
        let result = loop {
            let now = Instant::now();
            let timeout = self.table.next_deadline().map_or(MAX_SLEEP, |d| {
                d.saturating_duration_since(now).min(MAX_SLEEP)
            });
            match self.poll.poll(&mut events, Some(timeout)) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => break Err(e).context("waiting for events"),
                Ok(()) => {}
            }
            let mut stop = None;
            for event in &events {
                match event.token() {
                    SIGNALS => stop = stop.or(self.signals()),
                    LISTENER => self.serve_status(),
                    _ => {}
                }
            }
            self.refresh_present();
            // Cheap (one ioctl answering EAGAIN when empty), so always.
            if let Err(e) = self.drain() {
                break Err(e);
            }
            self.expire();
            self.persist();
            if let Some(sig) = stop {
                info!("{sig} received, stopping");
                break Ok(());
            }
        };
        self.shutdown();
        result
    }

    /// Handles pending signals; returns the name of a stopping one.
    fn signals(&mut self) -> Option<&'static str> {
        let mut stop = None;
        let pending: Vec<i32> = self.signals.pending().collect();
        for sig in pending {
            let name = Signal::try_from(sig).map_or("signal", Signal::as_str);
            if sig == Signal::SIGHUP as i32 {
                if let Err(e) = logging::reopen() {
                    error!("{e:#}");
                }
                info!(
                    "SIGHUP: log reopened; status:\n{}",
                    self.status().trim_end()
                );
            } else {
                stop = Some(name);
            }
        }
        stop
    }

    /// Receives every waiting message.
    fn drain(&mut self) -> Result<()> {
        loop {
            match self.mailbox.try_krecv() {
                Ok(Some(m)) => {
                    if m.service != service::KRAM_DAEMON {
                        warn!("message for service {} delivered to KRAM_DAEMON", m.service);
                    }
                    self.handle(m.sender, m.word);
                }
                Ok(None) => return Ok(()),
                Err(e) if e.is(Errno::EINTR) => {}
                Err(e) => return Err(e).context("receiving from the mailbox"),
            }
        }
    }

    fn handle(&mut self, sender: u32, word: u64) {
        // One `now` for both: what expires is wiped here, never inside `Table::handle`.
        let now = Instant::now();
        self.expire_at(now);
        self.persist();
        debug!("received {word:#018x} from node {sender}");
        let out = self.table.handle(sender, word, now);
        // The record says what is lent before any ACK says it to a borrower.
        self.persist();
        if let Some((to, msg)) = out.reply() {
            if let Err(e) = self
                .mailbox
                .ksend(to, reply_service(msg.instance), msg.encode())
            {
                self.table.count_send_error();
                warn!(
                    "sending {} {}+{} instance {} to node {to} failed: {e} (the driver repeats its message)",
                    reply_name(msg.opcode),
                    msg.first_chunk,
                    msg.chunks,
                    msg.instance
                );
            }
        }
        match out {
            Outcome::Offer {
                to,
                msg,
                grant,
                repeat,
                superseded,
            } => {
                if let Some(old) = superseded {
                    info!(
                        "released the offer of {old}: the instance now asks for {} chunks",
                        grant.chunks
                    );
                }
                let line = format!(
                    "{} {grant} (REQUEST v{} from node {to})",
                    if repeat { "offer again" } else { "offer" },
                    if msg.version == unimem_wire::kram::V2 {
                        2
                    } else {
                        1
                    }
                );
                if repeat {
                    debug!("{line}");
                } else {
                    info!("{line}");
                    self.quiet.clear();
                }
            }
            Outcome::Unanswered {
                node,
                instance,
                chunks,
                min,
                superseded,
            } => {
                if let Some(old) = superseded {
                    info!("released the offer of {old}: the instance now asks for {chunks} chunks");
                    self.quiet.clear();
                }
                let t = self.table.totals();
                let line = format!(
                    "no answer to node {node} instance {instance}: {chunks} contiguous chunks \
                     wanted (at least {min}), {} free",
                    t.free
                );
                if self.quiet.insert((node, instance, chunks)) {
                    info!("{line}");
                } else {
                    debug!("{line}");
                }
            }
            Outcome::Deferred {
                node,
                instance,
                chunks,
            } => {
                let line = format!(
                    "REQUEST of node {node} instance {instance} for {chunks} chunks deferred: grace period"
                );
                if self.quiet.insert((node, instance, chunks)) {
                    info!("{line}");
                } else {
                    debug!("{line}");
                }
            }
            Outcome::Ack {
                msg, grant, kind, ..
            } => {
                // The borrower's connection count when it took the range (kept across its
                // renewals); a range restored from the record gets it at its first RENEW.
                if let Some(w) = self.states.word(u32::from(grant.node)) {
                    let connects = node_state::connects(w);
                    let key = (grant.node, grant.instance);
                    if kind == AckKind::Renewed {
                        self.connects.entry(key).or_insert(connects);
                    } else {
                        self.connects.insert(key, connects);
                    }
                }
                match kind {
                    AckKind::Confirmed => info!("lent {grant} (ACK tag {})", msg.tag),
                    AckKind::Reconfirmed => {
                        info!("CONFIRM of {grant} again: already lent, lease renewed")
                    }
                    AckKind::LateConfirmed => info!(
                    "lent {grant} (CONFIRM after the offer had expired; chunks were still free)"
                ),
                    AckKind::Claimed => info!(
                        "claimed back during grace: {grant} ({} accepted)",
                        if msg.version == unimem_wire::kram::V2 {
                            "v2"
                        } else {
                            "v1"
                        }
                    ),
                    AckKind::Renewed => debug!("renewed {grant} (tag {})", msg.tag),
                }
            }
            Outcome::Revoke { asked, why, .. } => {
                let line = format!(
                    "REVOKE {} from node {} for instance {} chunks {}+{}: {why}",
                    opcode_name(asked.opcode),
                    asked.node,
                    asked.instance,
                    asked.first_chunk,
                    asked.chunks
                );
                if why == Revoke::LateConfirmTaken {
                    error!("{line} (the driver must not use them)");
                } else {
                    self.noisy(now, || line);
                }
            }
            Outcome::Declined { grant, kept_lent } => {
                if kept_lent {
                    info!("DECLINE of the repeated offer of {grant}: it stays lent");
                } else {
                    info!("declined {grant}: free again");
                    self.quiet.clear();
                }
            }
            Outcome::Freed { grant, wipe: false } => {
                info!("freed {grant}");
                self.quiet.clear();
            }
            Outcome::Freed { grant, wipe: true } => {
                info!("freed {grant} unwiped (the borrower's lease lapsed on its clock): wiping");
                self.quiet.clear();
            }
            Outcome::Malformed { word, sender, why } => self.noisy(now, || {
                format!("dropped malformed word {word:#018x} from node {sender}: {why}")
            }),
            Outcome::Inconsistent { msg, sender, why } => {
                let line = format!(
                    "dropped {} from node {sender} for instance {} chunks {}+{}: {why}",
                    opcode_name(msg.opcode),
                    msg.instance,
                    msg.first_chunk,
                    msg.chunks
                );
                self.noisy(now, || line);
            }
        }
    }

    /// Logs a warning, at most 20 per 10 s (then debug).
    fn noisy(&mut self, now: Instant, line: impl FnOnce() -> String) {
        let (allowed, suppressed) = self.noisy.allow(now);
        if let Some(n) = suppressed {
            warn!(
                "{n} more malformed/inconsistent messages were not logged (see --status counters)"
            );
        }
        if allowed {
            warn!("{}", line());
        } else {
            debug!("{}", line());
        }
    }

    /// Tells the table which lent grants may still be in use although their lease lapsed (the
    /// lease rule, `Table::set_present`): the fabric shows their borrower connected without a
    /// reconnection since it took them, and its kernel's heartbeat says it is frozen or
    /// thawing (`Heartbeats`).
    fn refresh_present(&mut self) {
        let now = Instant::now();
        let lent: HashSet<(u8, u8)> = self
            .table
            .lent()
            .iter()
            .map(|g| (g.node, g.instance))
            .collect();
        let nodes: HashSet<u8> = lent.iter().map(|&(node, _)| node).collect();
        self.connects.retain(|grant, _| lent.contains(grant));
        // Every node that ever connected is watched, not only those that borrow now: a node
        // must have been seen beating before it can be taken as frozen, and one that froze
        // seconds after it started to borrow must be too.
        let mut frozen = HashSet::new();
        for node in 0..MAX_NODES as u8 {
            let (Some(word), Some(beat)) = (
                self.states.word(u32::from(node)),
                self.states.heartbeat(u32::from(node)),
            ) else {
                continue;
            };
            if node_state::state(word) == node_state::NEVER {
                continue;
            }
            self.heartbeats.observe(node, beat, now);
            if nodes.contains(&node)
                && node_state::state(word) == node_state::UP
                && self.heartbeats.frozen(node, now)
            {
                frozen.insert((node, node_state::connects(word)));
            }
        }
        // A range restored from the record that its borrower has not renewed since is not
        // held: a borrower that no longer knows it (its FREE was lost) would keep it forever.
        let present: Vec<(u8, u8)> = lent
            .into_iter()
            .filter(|grant| {
                self.connects
                    .get(grant)
                    .is_some_and(|&since| frozen.contains(&(grant.0, since)))
            })
            .collect();
        self.table.set_present(present);
    }

    /// Releases expired offers, wipes expired leases (then they are free) and, at the end of
    /// the grace period, every chunk nobody claimed.
    fn expire(&mut self) {
        self.expire_at(Instant::now());
    }

    fn expire_at(&mut self, now: Instant) {
        let Expired {
            offers,
            leases,
            held,
            grace_ended,
        } = self.table.expire(now);
        for g in held {
            warn!(
                "lease of {g} lapsed, but node {} is still connected to the fabric and its \
                 kernel's heartbeat stalled (frozen): held, not reclaimed, for another {:?}: its \
                 borrower may still be using it",
                g.node,
                self.table.lease()
            );
        }
        for g in offers {
            info!(
                "offer of {g} timed out after {:?} without CONFIRM: free again",
                self.config.offer_timeout
            );
            self.quiet.clear();
        }
        for g in leases {
            warn!(
                "lease of {g} expired: no RENEW for {:?} (the borrower died or lost touch): wiping",
                self.table.lease()
            );
        }
        if let Some(runs) = &grace_ended {
            let n: u32 = runs.iter().map(|r| r.1).sum();
            info!(
                "grace period over: wiping the {n} unclaimed chunks (their contents are unknown), \
                 then serving REQUESTs"
            );
        }
        let wiping = self.table.wiping();
        for &(first, chunks) in &wiping {
            let t = Instant::now();
            self.partition.wipe(first, chunks);
            self.table.wiped(first);
            info!(
                "wiped chunks {first}-{} ({chunks} MiB) in {:.1?}: free again",
                first + chunks - 1,
                t.elapsed()
            );
            self.quiet.clear();
        }
        if !wiping.is_empty() {
            self.persist();
        }
    }

    fn status_info(&self) -> status::Info<'_> {
        status::Info {
            pid: std::process::id(),
            uptime: self.started.elapsed(),
            start: &self.start_mode,
            generation: self.generation,
        }
    }

    fn status(&self) -> String {
        status::render(&self.table, Instant::now(), &self.status_info())
    }

    /// Writes the status to every waiting client of the socket and closes it.
    fn serve_status(&mut self) {
        loop {
            match self.listener.accept() {
                Ok((mut stream, _)) => {
                    let text =
                        status::socket_text(&self.table, Instant::now(), &self.status_info());
                    // Far below a socket buffer; a client that does not read gets less.
                    if let Err(e) = stream.write_all(text.as_bytes()) {
                        debug!("status client: {e}");
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    warn!("accepting a status client: {e}");
                    return;
                }
            }
        }
    }

    /// Rewrites the lease record if the lent grants changed, and the state file if the
    /// grants changed. Neither during the grace period: a restart then must run grace again
    /// (a record or state file holding only the claims so far would hide the ranges of the
    /// borrowers that have not claimed yet).
    fn persist(&mut self) {
        if self.table.grace_until().is_some() {
            return;
        }
        let lent = self.table.lent();
        if self.recorded.as_ref() != Some(&lent) {
            let generation = self.generation.map_or(1, |g| g + 1);
            let bytes = lease::encode(&self.table, generation);
            self.partition.write_record(&bytes);
            debug!(
                "lease record generation {generation}: {} lent ranges",
                lent.len()
            );
            self.generation = Some(generation);
            self.recorded = Some(lent);
        }
        self.save_state();
    }

    /// Rewrites the state file if the grants changed.
    fn save_state(&mut self) {
        let Some(path) = &self.config.state_file else {
            return;
        };
        let grants = self.table.grants();
        if grants == self.saved {
            return;
        }
        match write_atomically(path, &state::render(&self.table)) {
            Ok(()) => self.saved = grants,
            Err(e) => warn!("writing {}: {e:#}", path.display()),
        }
    }

    fn shutdown(&mut self) {
        if let Err(e) = std::fs::remove_file(&self.config.socket) {
            warn!("removing {}: {e}", self.config.socket.display());
        }
        if self.table.grace_until().is_some() {
            info!(
                "stopping during the grace period: no state file written, the next start runs \
                 grace again"
            );
        } else if let Some(path) = self.config.state_file.clone() {
            if self.table.grants().is_empty() {
                let _ = std::fs::remove_file(&path);
            } else {
                self.persist();
                info!(
                    "{} keeps the offered/lent ranges for the next start",
                    path.display()
                );
            }
        }
        info!("stopped; final status:\n{}", self.status().trim_end());
    }
}

fn opcode_name(op: u8) -> &'static str {
    use unimem_wire::kram::to_daemon::*;
    match op {
        REQUEST => "REQUEST",
        CONFIRM => "CONFIRM",
        RENEW => "RENEW",
        DECLINE => "DECLINE",
        FREE => "FREE",
        _ => "message",
    }
}

fn reply_name(op: u8) -> &'static str {
    use unimem_wire::kram::to_driver::*;
    match op {
        OFFER => "OFFER",
        ACK => "ACK",
        REVOKE => "REVOKE",
        _ => "message",
    }
}

/// Loads the state file of a previous run into `table`; returns the restored grants, or
/// `None` when there is no state file.
fn restore(table: &mut Table, path: &PathBuf) -> Result<Option<Vec<(Grant, GrantKind)>>> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
    };
    let advice = "remove it (or use --no-state) only if no node uses this node's memory";
    let saved =
        state::parse(&text).with_context(|| format!("state file {}: {advice}", path.display()))?;
    if saved.node != table.node() {
        bail!(
            "state file {} belongs to node {}, this is node {}: {advice}",
            path.display(),
            saved.node,
            table.node()
        );
    }
    let now = Instant::now();
    for (g, kind) in &saved.grants {
        table.restore(*g, *kind, now).with_context(|| {
            format!(
                "state file {}: cannot restore {kind:?} {g} into a table of {} chunks \
                 (was {}); {advice}",
                path.display(),
                table.len(),
                saved.chunks
            )
        })?;
        let kind = match kind {
            GrantKind::Offered => "offered (fresh deadline)",
            GrantKind::Lent => "lent (lease renewed)",
        };
        info!("restored from {}: {kind} {g}", path.display());
    }
    Ok(Some(table.grants()))
}

fn write_atomically(path: &PathBuf, text: &str) -> Result<()> {
    let mut tmp = path.clone().into_os_string();
    tmp.push(".tmp");
    std::fs::write(&tmp, text).with_context(|| format!("writing {tmp:?}"))?;
    std::fs::rename(&tmp, path).with_context(|| format!("renaming {tmp:?}"))?;
    Ok(())
}
