//! `kram-probe`: plays the `unimem_kram` driver from user space, to test `kram-daemon`
//! without the kernel driver. Binds service KRAM_DRIVER (1) on its node (so it cannot run
//! while `unimem_kram.ko` is loaded, nor twice at once on one node) for the commands that
//! wait for replies, sends REQUESTs like the driver's timer does (v1, or v2 for more than 255
//! chunks or with a minimum), CONFIRMs (or DECLINEs) the first OFFER and DECLINEs later ones,
//! waits for the ACK, keeps the lease with RENEWs (`--hold`), and sends FREE, RENEW or any raw
//! word on request. Every result is one greppable line. A fake borrower is no tool for a real
//! cluster, so it is a test rig (tests/rigs), which `make install` does not ship.

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand, ValueEnum};
use serde_json::Value;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use unimem_mailbox::{service, Errno, Mailbox};
use unimem_wire::kram::{
    to_daemon, to_driver, KramMsg, MAX_CHUNKS_V1, MAX_REQUEST_CHUNKS, RENEW_PERIOD_MS, SEQ_MOD, V1,
    V2,
};

#[derive(Parser)]
#[command(
    version,
    about = "Play the unimem_kram driver from user space to test kram-daemon",
    after_help = "Output lines (one per event, greppable):\n  \
        request: node R instance I chunks N [min M] [align A] v1|v2 to nodes A B ...\n  \
        offer: from node L instance I first F chunks N\n  \
        confirmed: node L instance I first F chunks N   (or declined:)\n  \
        ack: from node L instance I first F chunks N tag T\n  \
        revoke: from node L instance I first F chunks N\n  \
        RESULT lender=L instance=I first=F chunks=N action=confirm|decline|ignore acked=yes|no\n  \
        held: lender L instance I first F chunks N for Ss: renews R acks A revokes V\n  \
        sent: FREE node L instance I first F chunks N\n  \
        RESULT renews=R acks=A revokes=V   (renew)\n\
        Other events: ignored:, unanswered:, warning:, sent: (a raw word), FAIL: (then exit 1).\n\
        With --json each line is one JSON object instead: event (the first word, without its \
        colon), line (the text above), its key=value tokens (lender, instance, first, chunks, \
        action, acked, renews, acks, revokes), and its `name number` pairs (node, instance, \
        first, chunks, min, align, tag, lender, renews, acks, revokes), numbers as JSON numbers; \
        nodes (the lenders asked) is an array.\n\
        Exit status 0 on success, 1 on failure (e.g. no offer before --timeout, a REVOKE of \
        the CONFIRM)."
)]
struct Cli {
    /// Each output line as one JSON object instead (JSON Lines; keys below).
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    cmd: Cmd,
}

/// `--json`: set once in `main`, read by `say`.
static JSON: AtomicBool = AtomicBool::new(false);

#[derive(Subcommand)]
enum Cmd {
    /// Ask lenders for N chunks for instance I until one offers; CONFIRM the first offer
    /// (DECLINE with --decline), wait for its ACK, DECLINE later offers; with --hold keep the
    /// lease with a RENEW every second.
    Request {
        /// Lender to ask (repeatable) [default: every other node].
        #[arg(long = "node", value_name = "NODE")]
        nodes: Vec<u32>,
        /// Instance id (0..15; 15 is the NUMA driver's).
        #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..16))]
        instance: u8,
        /// Chunks (MiB) wanted (1..65535; above 255 the REQUEST is v2).
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..65536))]
        chunks: u32,
        /// The smallest grant accepted (a v2 REQUEST) [default: --chunks].
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..65536))]
        min: Option<u32>,
        /// Alignment: the range's GAS offset a multiple of 2^A chunks.
        #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..16))]
        align: u8,
        /// Layout of the REQUEST (and so of the replies) [default: v1 when it fits].
        #[arg(long, value_parser = clap::value_parser!(u8).range(1..=2))]
        version: Option<u8>,
        /// DECLINE the first offer instead of confirming it.
        #[arg(long)]
        decline: bool,
        /// Do not answer offers at all (the lender's offer then times out).
        #[arg(long, conflicts_with = "decline")]
        ignore: bool,
        /// Seconds between repeated REQUESTs while no offer came (the driver's timer).
        #[arg(long, default_value_t = 1.0)]
        interval: f64,
        /// Give up after this many seconds without an offer.
        #[arg(long, default_value_t = 30.0)]
        timeout: f64,
        /// After the first offer, keep listening this long to DECLINE later offers.
        #[arg(long, default_value_t = 1.0)]
        linger: f64,
        /// After the ACK, keep the lease this many seconds: a RENEW every second.
        #[arg(long, value_name = "SECS", conflicts_with_all = ["decline", "ignore"])]
        hold: Option<f64>,
        /// At the end, FREE the range (after --hold, if given).
        #[arg(long, conflicts_with_all = ["decline", "ignore"])]
        free: bool,
    },
    /// Send FREE{node=this, instance, first, chunks} to a lender.
    Free {
        /// The lender.
        #[arg(long)]
        node: u32,
        #[arg(long, value_parser = clap::value_parser!(u8).range(0..16))]
        instance: u8,
        #[arg(long)]
        first: u32,
        #[arg(long)]
        chunks: u32,
        /// Layout [default: v1 when the range fits it].
        #[arg(long, value_parser = clap::value_parser!(u8).range(1..=2))]
        version: Option<u8>,
    },
    /// Send RENEW{node=this (or --from), instance, first, chunks} to a lender every second for
    /// --seconds; print the ACKs and REVOKEs.
    Renew {
        /// The lender.
        #[arg(long)]
        node: u32,
        #[arg(long, value_parser = clap::value_parser!(u8).range(0..16))]
        instance: u8,
        #[arg(long)]
        first: u32,
        #[arg(long)]
        chunks: u32,
        /// How long to renew (one RENEW per second, at least one).
        #[arg(long, default_value_t = 1.0)]
        seconds: f64,
        /// Node field [default: this node].
        #[arg(long)]
        from: Option<u8>,
        /// Layout [default: v1 when the range fits it].
        #[arg(long, value_parser = clap::value_parser!(u8).range(1..=2))]
        version: Option<u8>,
        /// Exit 1 unless every RENEW was acknowledged (waiting up to --ack-wait seconds after
        /// the last one for the ACKs still missing).
        #[arg(long)]
        expect_ack: bool,
        /// With --expect-ack: how long to wait for missing ACKs (a slow node, e.g. a debug
        /// kernel, can take longer than the renewal period to answer).
        #[arg(long, default_value_t = 5.0)]
        ack_wait: f64,
    },
    /// Send one driver message (any opcode, any fields) or a raw word to a lender's daemon.
    Send {
        /// The lender.
        #[arg(long)]
        node: u32,
        /// Message kind; ignored with --word.
        #[arg(long, value_enum, default_value_t = Kind::Request)]
        kind: Kind,
        /// Node field [default: this node].
        #[arg(long)]
        from: Option<u8>,
        #[arg(long, default_value_t = 0)]
        instance: u8,
        /// First chunk (a v2 REQUEST's minimum).
        #[arg(long, default_value_t = 0)]
        first: u32,
        #[arg(long, default_value_t = 1)]
        chunks: u32,
        /// Tag: a REQUEST's alignment, a CONFIRM's / RENEW's sequence number.
        #[arg(long, default_value_t = 0)]
        tag: u8,
        /// Layout [default: v1 when the range fits it].
        #[arg(long, value_parser = clap::value_parser!(u8).range(1..=2))]
        version: Option<u8>,
        /// Send this 64-bit word as is (hex with 0x, or decimal).
        #[arg(long, value_parser = parse_word)]
        word: Option<u64>,
        /// Send it this many times.
        #[arg(long, default_value_t = 1)]
        count: u32,
    },
}

#[derive(Clone, Copy, ValueEnum)]
enum Kind {
    Request,
    Confirm,
    Renew,
    Decline,
    Free,
}

impl Kind {
    fn opcode(self) -> u8 {
        match self {
            Kind::Request => to_daemon::REQUEST,
            Kind::Confirm => to_daemon::CONFIRM,
            Kind::Renew => to_daemon::RENEW,
            Kind::Decline => to_daemon::DECLINE,
            Kind::Free => to_daemon::FREE,
        }
    }
}

fn parse_word(s: &str) -> Result<u64, String> {
    let r = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(&hex.replace('_', ""), 16),
        None => s.parse(),
    };
    r.map_err(|e| e.to_string())
}

/// The layout: `--version` if given, else v1 when the range can be said in it.
fn layout(version: Option<u8>, first: u32, chunks: u32) -> u8 {
    match version {
        Some(2) => V2,
        Some(_) => V1,
        None if first + chunks <= MAX_CHUNKS_V1 && chunks <= MAX_REQUEST_CHUNKS => V1,
        None => V2,
    }
}

fn message(
    opcode: u8,
    version: u8,
    node: u8,
    instance: u8,
    first: u32,
    chunks: u32,
    tag: u8,
) -> KramMsg {
    KramMsg {
        opcode,
        version,
        node,
        instance,
        first_chunk: first,
        chunks,
        tag,
    }
}

fn main() {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    let cli = Cli::parse();
    JSON.store(cli.json, Ordering::Relaxed);
    if let Err(e) = run(cli) {
        say(format!("FAIL: {e:#}"));
        eprintln!("kram-probe: {e:#}");
        std::process::exit(1);
    }
}

fn sysfs_u32(name: &str) -> Result<u32> {
    let path = format!("{}/{name}", unimem_mailbox::fabric::SYSFS_DIR);
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("reading {path} (is unimem_eusrvmem loaded?)"))?;
    text.trim()
        .parse()
        .with_context(|| format!("{path}: {text:?}"))
}

fn run(cli: Cli) -> Result<()> {
    let me = sysfs_u32("node_id")?;
    match cli.cmd {
        Cmd::Request {
            nodes,
            instance,
            chunks,
            min,
            align,
            version,
            decline,
            ignore,
            interval,
            timeout,
            linger,
            hold,
            free,
        } => {
            let nodes = if nodes.is_empty() {
                (0..sysfs_u32("node_count")?).filter(|&n| n != me).collect()
            } else {
                nodes
            };
            if nodes.is_empty() {
                bail!("no lender to ask: give --node");
            }
            let min = min.unwrap_or(chunks);
            if min > chunks {
                bail!("--min {min} is above --chunks {chunks}");
            }
            let version = match version {
                Some(1) if chunks > MAX_REQUEST_CHUNKS || min != chunks => {
                    bail!("a v1 REQUEST asks for exactly 1..255 chunks")
                }
                Some(1) => V1,
                Some(_) => V2,
                None if chunks <= MAX_REQUEST_CHUNKS && min == chunks => V1,
                None => V2,
            };
            let p = Probe {
                me,
                nodes,
                instance,
                chunks,
                min,
                align,
                version,
                action: if ignore {
                    Action::Ignore
                } else if decline {
                    Action::Decline
                } else {
                    Action::Confirm
                },
                interval: secs(interval)?,
                timeout: secs(timeout)?,
                linger: secs(linger)?,
                hold: hold.map(secs).transpose()?,
                free,
            };
            p.run()
        }
        Cmd::Free {
            node,
            instance,
            first,
            chunks,
            version,
        } => {
            let mb = Mailbox::open().context("opening /dev/unimem_mailbox")?;
            let v = layout(version, first, chunks);
            let m = message(to_daemon::FREE, v, me as u8, instance, first, chunks, 0);
            send(&mb, node, m.encode())?;
            say(format!(
                "sent: FREE node {node} instance {instance} first {first} chunks {chunks}"
            ));
            Ok(())
        }
        Cmd::Renew {
            node,
            instance,
            first,
            chunks,
            seconds,
            from,
            version,
            expect_ack,
            ack_wait,
        } => {
            let mb = bind()?;
            let v = layout(version, first, chunks);
            let from = from.unwrap_or(me as u8);
            let mut r = Renewer::new(
                node,
                message(to_daemon::RENEW, v, from, instance, first, chunks, 0),
            );
            if expect_ack {
                r.ack_wait = secs(ack_wait)?;
            }
            let end = Instant::now() + secs(seconds)?;
            r.run(&mb, end)?;
            say(format!(
                "RESULT renews={} acks={} revokes={}",
                r.renews, r.acks, r.revokes
            ));
            if expect_ack && r.acks < r.renews {
                bail!("{} of {} RENEWs acknowledged", r.acks, r.renews);
            }
            Ok(())
        }
        Cmd::Send {
            node,
            kind,
            from,
            instance,
            first,
            chunks,
            tag,
            version,
            word,
            count,
        } => {
            let mb = Mailbox::open().context("opening /dev/unimem_mailbox")?;
            let word = word.unwrap_or_else(|| {
                // A v2 REQUEST's first-chunk field is its minimum: the layout follows the
                // size alone.
                let v = if kind.opcode() == to_daemon::REQUEST {
                    layout(version, 0, chunks)
                } else {
                    layout(version, first, chunks)
                };
                message(
                    kind.opcode(),
                    v,
                    from.unwrap_or(me as u8),
                    instance,
                    first,
                    chunks,
                    tag,
                )
                .encode()
            });
            for _ in 0..count {
                send(&mb, node, word)?;
            }
            say(format!("sent: {count} x word {word:#018x} to node {node}"));
            Ok(())
        }
    }
}

fn secs(s: f64) -> Result<Duration> {
    Duration::try_from_secs_f64(s).context("a duration in seconds")
}

fn say(line: String) {
    if JSON.load(Ordering::Relaxed) {
        println!("{}", event_json(&line));
    } else {
        println!("{line}");
    }
    let _ = std::io::stdout().flush();
}

/// `--json`'s object for an output line: [`unimem_clidoc::json::event_line`] (`event`, `line`,
/// the `key=value` tokens) plus each `name number...` run of the text (`from node 1 instance 0
/// first 3 chunks 8`), one number as a number, several as an array. `nodes` is always an
/// array; a name already set (by `key=value` or earlier in the line) keeps its value.
fn event_json(line: &str) -> Value {
    let mut v = unimem_clidoc::json::event_line(line);
    let Some(map) = v.as_object_mut() else {
        return v;
    };
    let tokens: Vec<&str> = line.split_whitespace().skip(1).collect();
    let mut i = 0;
    while i < tokens.len() {
        let name = tokens[i];
        let numbers: Vec<u64> = tokens[i + 1..]
            .iter()
            .map_while(|t| t.parse().ok())
            .collect();
        i += 1 + numbers.len();
        if numbers.is_empty()
            || !name.bytes().all(|b| b.is_ascii_lowercase())
            || map.contains_key(name)
        {
            continue;
        }
        let value = if numbers.len() == 1 && name != "nodes" {
            Value::from(numbers[0])
        } else {
            Value::from(numbers)
        };
        map.insert(name.to_string(), value);
    }
    v
}

fn bind() -> Result<Mailbox> {
    let mb = Mailbox::open_nonblocking().context("opening /dev/unimem_mailbox")?;
    mb.kbind(service::KRAM_DRIVER).context(
        "binding KRAM_DRIVER (is unimem_kram loaded, or another kram-probe running here?)",
    )?;
    Ok(mb)
}

/// Sends to the daemon's service, waiting up to a second while its ring is full.
fn send(mb: &Mailbox, node: u32, word: u64) -> Result<()> {
    let start = Instant::now();
    loop {
        match mb.ksend(node, service::KRAM_DAEMON, word) {
            Ok(()) => return Ok(()),
            Err(e) if e.is(Errno::EAGAIN) && start.elapsed() < Duration::from_secs(1) => {
                std::thread::sleep(Duration::from_millis(1));
            }
            Err(e) => return Err(e).context(format!("KSEND to node {node}")),
        }
    }
}

/// A received driver message, decoded, with its sender.
fn receive(mb: &Mailbox) -> Result<Option<(u32, Option<KramMsg>, u64)>> {
    Ok(mb
        .try_krecv()?
        .map(|m| (m.sender, KramMsg::decode_for_driver(m.word).ok(), m.word)))
}

fn describe(sender: u32, m: &KramMsg) -> String {
    format!(
        "from node {sender} instance {} first {} chunks {}",
        m.instance, m.first_chunk, m.chunks
    )
}

/// Sends a RENEW every second; counts ACKs and REVOKEs of that range.
struct Renewer {
    lender: u32,
    renew: KramMsg,
    seq: u8,
    renews: u64,
    acks: u64,
    revokes: u64,
    /// How much longer than a period to listen after the last RENEW while ACKs are missing.
    ack_wait: Duration,
}

impl Renewer {
    fn new(lender: u32, renew: KramMsg) -> Self {
        Renewer {
            lender,
            renew,
            seq: 0,
            renews: 0,
            acks: 0,
            revokes: 0,
            ack_wait: Duration::ZERO,
        }
    }

    /// RENEWs until `end` (at least one), then listens one more period for replies. Stops
    /// early after a REVOKE when `stop_on_revoke`.
    fn run(&mut self, mb: &Mailbox, end: Instant) -> Result<()> {
        self.run_until(mb, end, false)
    }

    fn run_until(&mut self, mb: &Mailbox, end: Instant, stop_on_revoke: bool) -> Result<()> {
        let period = Duration::from_millis(RENEW_PERIOD_MS);
        let mut next = Instant::now();
        let listen_until = |now: Instant| now.max(end) + period + self.ack_wait;
        let mut last_send = None;
        loop {
            let now = Instant::now();
            if now >= next && (now < end || last_send.is_none()) {
                self.seq = (self.seq + 1) % SEQ_MOD;
                let m = KramMsg {
                    tag: self.seq,
                    ..self.renew
                };
                match send(mb, self.lender, m.encode()) {
                    Ok(()) => self.renews += 1,
                    Err(e) => say(format!("warning: RENEW not sent: {e:#}")),
                }
                last_send = Some(now);
                next = now + period;
            }
            let stop = last_send.map_or(now, listen_until);
            let all_acked = !self.ack_wait.is_zero() && self.renews > 0 && self.acks >= self.renews;
            if now >= end && (now >= stop || all_acked) {
                return Ok(());
            }
            let wake = if now < end { next.min(stop) } else { stop };
            mb.wait_readable(Some(wake.saturating_duration_since(now)))?;
            while let Some((sender, m, word)) = receive(mb)? {
                let Some(m) = m else {
                    say(format!("ignored: word {word:#018x} from node {sender}"));
                    continue;
                };
                let same = (m.instance, m.first_chunk, m.chunks)
                    == (
                        self.renew.instance,
                        self.renew.first_chunk,
                        self.renew.chunks,
                    )
                    && sender == self.lender;
                match m.opcode {
                    to_driver::ACK if same => {
                        self.acks += 1;
                        say(format!("ack: {} tag {}", describe(sender, &m), m.tag));
                    }
                    to_driver::REVOKE if same => {
                        self.revokes += 1;
                        say(format!("revoke: {}", describe(sender, &m)));
                        if stop_on_revoke {
                            return Ok(());
                        }
                    }
                    _ => say(format!("ignored: {:#x} {}", m.opcode, describe(sender, &m))),
                }
            }
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Action {
    Confirm,
    Decline,
    Ignore,
}

struct Probe {
    me: u32,
    nodes: Vec<u32>,
    instance: u8,
    chunks: u32,
    min: u32,
    align: u8,
    version: u8,
    action: Action,
    interval: Duration,
    timeout: Duration,
    linger: Duration,
    hold: Option<Duration>,
    free: bool,
}

impl Probe {
    fn run(&self) -> Result<()> {
        let mb = bind()?;
        let request = KramMsg {
            opcode: to_daemon::REQUEST,
            version: self.version,
            node: self.me as u8,
            instance: self.instance,
            first_chunk: if self.version == V2 { self.min } else { 0 },
            chunks: self.chunks,
            tag: self.align,
        };
        let list: Vec<String> = self.nodes.iter().map(u32::to_string).collect();
        say(format!(
            "request: node {} instance {} chunks {}{}{} v{} to nodes {}",
            self.me,
            self.instance,
            self.chunks,
            if self.min != self.chunks {
                format!(" min {}", self.min)
            } else {
                String::new()
            },
            if self.align != 0 {
                format!(" align {}", self.align)
            } else {
                String::new()
            },
            if self.version == V2 { 2 } else { 1 },
            list.join(" ")
        ));
        let start = Instant::now();
        let mut next_request = start;
        let mut chosen: Option<(u32, KramMsg)> = None;
        let mut linger_until: Option<Instant> = None;
        // The CONFIRM sent (lender, message) until its ACK arrives; resent every second.
        let mut confirm: Option<(u32, KramMsg, Instant)> = None;
        let mut acked = false;
        let ack_deadline = |t: Instant| t + Duration::from_secs(10);
        let mut ack_until = None;
        loop {
            let now = Instant::now();
            if chosen.is_none() {
                if now >= start + self.timeout {
                    bail!(
                        "no offer for instance {} ({} chunks) within {:?}",
                        self.instance,
                        self.chunks,
                        self.timeout
                    );
                }
                if now >= next_request {
                    for &n in &self.nodes {
                        if let Err(e) = send(&mb, n, request.encode()) {
                            say(format!("warning: {e:#}"));
                        }
                    }
                    next_request = now + self.interval;
                }
            }
            if let Some((lender, m, at)) = confirm {
                if !acked && now >= at + Duration::from_secs(1) {
                    send(&mb, lender, m.encode())?;
                    confirm = Some((lender, m, now));
                }
            }
            let waiting_ack = self.action == Action::Confirm && chosen.is_some() && !acked;
            if let Some(until) = ack_until {
                if waiting_ack && now >= until {
                    bail!("no ACK of the CONFIRM within 10 s");
                }
            }
            let until = match linger_until {
                // Waiting for the ACK (the CONFIRM is resent every second meanwhile).
                _ if waiting_ack => now + Duration::from_millis(200),
                Some(t) => t,
                None => next_request.min(start + self.timeout),
            };
            if linger_until.is_some_and(|t| now >= t) && !waiting_ack {
                break;
            }
            mb.wait_readable(Some(until.saturating_duration_since(now)))?;
            while let Some((sender, m, word)) = receive(&mb)? {
                let Some(m) = m else {
                    say(format!(
                        "ignored: word {word:#018x} from node {sender} is not a driver message"
                    ));
                    continue;
                };
                let desc = format!(
                    "node {} instance {} first {} chunks {}",
                    sender, m.instance, m.first_chunk, m.chunks
                );
                match m.opcode {
                    to_driver::ACK => {
                        say(format!("ack: {} tag {}", describe(sender, &m), m.tag));
                        if let Some((lender, c, _)) = confirm {
                            if lender == sender
                                && (c.instance, c.first_chunk, c.chunks, c.tag)
                                    == (m.instance, m.first_chunk, m.chunks, m.tag)
                            {
                                acked = true;
                            }
                        }
                        continue;
                    }
                    to_driver::REVOKE => {
                        say(format!("revoke: {}", describe(sender, &m)));
                        if let Some((lender, c, _)) = confirm {
                            if lender == sender
                                && (c.instance, c.first_chunk, c.chunks)
                                    == (m.instance, m.first_chunk, m.chunks)
                            {
                                bail!("the CONFIRM of {desc} was revoked");
                            }
                        }
                        continue;
                    }
                    _ => {}
                }
                say(format!("offer: {}", describe(sender, &m)));
                if u32::from(m.node) != sender
                    || m.instance != self.instance
                    || m.chunks < self.min
                    || m.chunks > self.chunks
                {
                    say(format!(
                        "ignored: offer {desc} does not answer this request"
                    ));
                    continue;
                }
                let first = chosen.is_none();
                let reply = if first { self.action } else { Action::Decline };
                if first {
                    chosen = Some((sender, m));
                    linger_until = Some(Instant::now() + self.linger);
                }
                let (op, opcode, tag) = match reply {
                    Action::Confirm => ("confirmed", to_daemon::CONFIRM, 1),
                    Action::Decline => ("declined", to_daemon::DECLINE, 0),
                    Action::Ignore => {
                        say(format!("unanswered: {desc}"));
                        continue;
                    }
                };
                let answer = KramMsg {
                    opcode,
                    node: self.me as u8,
                    tag,
                    ..m
                };
                send(&mb, sender, answer.encode())?;
                if reply == Action::Confirm {
                    confirm = Some((sender, answer, Instant::now()));
                    ack_until = Some(ack_deadline(Instant::now()));
                }
                say(format!("{op}: {desc}"));
            }
        }
        let (lender, offer) = chosen.context("the loop ended without an offer")?;
        say(format!(
            "RESULT lender={lender} instance={} first={} chunks={} action={} acked={}",
            offer.instance,
            offer.first_chunk,
            offer.chunks,
            match self.action {
                Action::Confirm => "confirm",
                Action::Decline => "decline",
                Action::Ignore => "ignore",
            },
            if acked { "yes" } else { "no" }
        ));
        if self.action != Action::Confirm {
            return Ok(());
        }
        if let Some(hold) = self.hold {
            let renew = KramMsg {
                opcode: to_daemon::RENEW,
                node: self.me as u8,
                tag: 0,
                ..offer
            };
            let mut r = Renewer::new(lender, renew);
            let t0 = Instant::now();
            r.run_until(&mb, t0 + hold, true)?;
            say(format!(
                "held: lender {lender} instance {} first {} chunks {} for {:.0}s: renews {} acks {} revokes {}",
                offer.instance,
                offer.first_chunk,
                offer.chunks,
                t0.elapsed().as_secs_f64(),
                r.renews,
                r.acks,
                r.revokes
            ));
            if r.revokes > 0 {
                bail!("the lease was revoked: not freeing it");
            }
        }
        if self.free {
            let m = KramMsg {
                opcode: to_daemon::FREE,
                node: self.me as u8,
                tag: 0,
                ..offer
            };
            send(&mb, lender, m.encode())?;
            say(format!(
                "sent: FREE node {lender} instance {} first {} chunks {}",
                offer.instance, offer.first_chunk, offer.chunks
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::event_json;
    use serde_json::{json, Value};

    fn keys(v: &Value) -> Vec<&str> {
        let mut k: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        k.sort_unstable();
        k
    }

    #[test]
    fn event_json_of_the_text_lines() {
        let v = event_json("offer: from node 2 instance 0 first 3 chunks 8");
        assert_eq!(
            keys(&v),
            ["chunks", "event", "first", "instance", "line", "node"]
        );
        assert_eq!(v["event"], "offer");
        assert_eq!(v["line"], "offer: from node 2 instance 0 first 3 chunks 8");
        assert_eq!(
            (&v["node"], &v["first"], &v["chunks"]),
            (&json!(2), &json!(3), &json!(8))
        );

        let v = event_json("request: node 0 instance 1 chunks 400 min 100 v2 to nodes 1 2 3");
        assert_eq!(
            keys(&v),
            ["chunks", "event", "instance", "line", "min", "node", "nodes"]
        );
        assert_eq!(v["nodes"], json!([1, 2, 3]));
        assert_eq!(v["min"], 100);
        assert_eq!(
            event_json("request: node 0 instance 1 chunks 4 v1 to nodes 2")["nodes"],
            json!([2])
        );

        let v = event_json(
            "held: lender 1 instance 0 first 0 chunks 32 for 5s: renews 5 acks 5 revokes 0",
        );
        assert_eq!(
            keys(&v),
            [
                "acks", "chunks", "event", "first", "instance", "lender", "line", "renews",
                "revokes"
            ]
        );
        assert_eq!(v["revokes"], 0);

        // key=value tokens win; words without a number and hex words stay in `line` only.
        let v = event_json("RESULT lender=2 instance=0 first=3 chunks=8 action=confirm acked=yes");
        assert_eq!(v["acked"], "yes");
        assert_eq!(v["lender"], 2);
        let v = event_json("sent: 3 x word 0x0000000000000001 to node 2");
        assert_eq!(keys(&v), ["event", "line", "node"]);
        let v = event_json("ack: from node 1 instance 0 first 3 chunks 8 tag 9");
        assert_eq!(v["tag"], 9);
    }
}
