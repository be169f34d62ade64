//! `kram-probe`: plays the `unimem_kram` driver from user space, to test `kram-daemon`
//! without the kernel driver. Binds service KRAM_DRIVER (1) on its node (so it cannot run
//! while `unimem_kram.ko` is loaded, nor twice at once on one node), sends REQUESTs like the
//! driver's timer does, CONFIRMs (or DECLINEs) the first OFFER and DECLINEs later ones, and
//! sends FREE or any raw word on request. Every result is one greppable line.

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand, ValueEnum};
use std::io::Write;
use std::time::{Duration, Instant};
use unimem_mailbox::{service, Errno, Mailbox};
use unimem_wire::kram::{to_daemon, KramMsg};

#[derive(Parser)]
#[command(
    version,
    about = "Play the unimem_kram driver from user space to test kram-daemon",
    after_help = "Output lines (one per event, greppable):\n  \
        request: node R instance I chunks N to nodes A B ...\n  \
        offer: from node L instance I first F chunks N\n  \
        confirmed: node L instance I first F chunks N   (or declined:)\n  \
        RESULT lender=L instance=I first=F chunks=N action=confirm|decline\n  \
        sent: FREE node L instance I first F chunks N\n\
        Exit status 0 on success, 1 on failure (e.g. no offer before --timeout)."
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Ask lenders for N chunks for instance I until one offers; CONFIRM the first offer
    /// (DECLINE with --decline) and DECLINE later ones.
    Request {
        /// Lender to ask (repeatable) [default: every other node].
        #[arg(long = "node", value_name = "NODE")]
        nodes: Vec<u32>,
        /// Swap instance id (0..15).
        #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..16))]
        instance: u8,
        /// Chunks (MiB) wanted (1..255).
        #[arg(long, value_parser = clap::value_parser!(u8).range(1..))]
        chunks: u8,
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
    },
    /// Send FREE{node=this, instance, first, chunks} to a lender.
    Free {
        /// The lender.
        #[arg(long)]
        node: u32,
        #[arg(long, value_parser = clap::value_parser!(u8).range(0..16))]
        instance: u8,
        #[arg(long)]
        first: u8,
        #[arg(long)]
        chunks: u8,
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
        #[arg(long, default_value_t = 0)]
        first: u8,
        #[arg(long, default_value_t = 1)]
        chunks: u8,
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
    Decline,
    Free,
}

impl Kind {
    fn opcode(self) -> u8 {
        match self {
            Kind::Request => to_daemon::REQUEST,
            Kind::Confirm => to_daemon::CONFIRM,
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

fn main() {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    let cli = Cli::parse();
    if let Err(e) = run(cli) {
        println!("FAIL: {e:#}");
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
            decline,
            ignore,
            interval,
            timeout,
            linger,
        } => {
            let nodes = if nodes.is_empty() {
                (0..sysfs_u32("node_count")?).filter(|&n| n != me).collect()
            } else {
                nodes
            };
            if nodes.is_empty() {
                bail!("no lender to ask: give --node");
            }
            let p = Probe {
                me,
                nodes,
                instance,
                chunks,
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
            };
            p.run()
        }
        Cmd::Free {
            node,
            instance,
            first,
            chunks,
        } => {
            let mb = Mailbox::open().context("opening /dev/unimem_mailbox")?;
            let m = KramMsg {
                opcode: to_daemon::FREE,
                node: me as u8,
                instance,
                first_chunk: first,
                chunks,
                align: 0,
            };
            send(&mb, node, m.encode())?;
            say(format!(
                "sent: FREE node {node} instance {instance} first {first} chunks {chunks}"
            ));
            Ok(())
        }
        Cmd::Send {
            node,
            kind,
            from,
            instance,
            first,
            chunks,
            word,
            count,
        } => {
            let mb = Mailbox::open().context("opening /dev/unimem_mailbox")?;
            let word = word.unwrap_or_else(|| {
                KramMsg {
                    opcode: kind.opcode(),
                    node: from.unwrap_or(me as u8),
                    instance,
                    first_chunk: first,
                    chunks,
                    align: 0,
                }
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
    println!("{line}");
    let _ = std::io::stdout().flush();
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
    chunks: u8,
    action: Action,
    interval: Duration,
    timeout: Duration,
    linger: Duration,
}

impl Probe {
    fn run(&self) -> Result<()> {
        let mb = Mailbox::open_nonblocking().context("opening /dev/unimem_mailbox")?;
        mb.kbind(service::KRAM_DRIVER).context(
            "binding KRAM_DRIVER (is unimem_kram loaded, or another kram-probe running here?)",
        )?;
        let request = KramMsg {
            opcode: to_daemon::REQUEST,
            node: self.me as u8,
            instance: self.instance,
            first_chunk: 0,
            chunks: self.chunks,
            align: 0,
        };
        let list: Vec<String> = self.nodes.iter().map(u32::to_string).collect();
        say(format!(
            "request: node {} instance {} chunks {} to nodes {}",
            self.me,
            self.instance,
            self.chunks,
            list.join(" ")
        ));
        let start = Instant::now();
        let mut next_request = start;
        let mut chosen: Option<(u32, KramMsg)> = None;
        let mut linger_until = None;
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
                            println!("warning: {e:#}");
                        }
                    }
                    next_request = now + self.interval;
                }
            }
            let until = match linger_until {
                Some(t) => t,
                None => next_request.min(start + self.timeout),
            };
            if now >= until && linger_until.is_some() {
                break;
            }
            mb.wait_readable(Some(until.saturating_duration_since(now)))?;
            while let Some(m) = mb.try_krecv()? {
                let Ok(offer) = KramMsg::decode_for_driver(m.word) else {
                    say(format!(
                        "ignored: word {:#018x} from node {} is not an OFFER",
                        m.word, m.sender
                    ));
                    continue;
                };
                let desc = format!(
                    "node {} instance {} first {} chunks {}",
                    m.sender, offer.instance, offer.first_chunk, offer.chunks
                );
                say(format!(
                    "offer: from node {} instance {} first {} chunks {}",
                    m.sender, offer.instance, offer.first_chunk, offer.chunks
                ));
                if u32::from(offer.node) != m.sender
                    || offer.instance != self.instance
                    || offer.chunks != self.chunks
                {
                    say(format!(
                        "ignored: offer {desc} does not answer this request"
                    ));
                    continue;
                }
                let first = chosen.is_none();
                let reply = if first { self.action } else { Action::Decline };
                if first {
                    chosen = Some((m.sender, offer));
                    linger_until = Some(Instant::now() + self.linger);
                }
                let (op, word) = match reply {
                    Action::Confirm => ("confirmed", to_daemon::CONFIRM),
                    Action::Decline => ("declined", to_daemon::DECLINE),
                    Action::Ignore => {
                        say(format!("unanswered: {desc}"));
                        continue;
                    }
                };
                let answer = KramMsg {
                    opcode: word,
                    node: self.me as u8,
                    ..offer
                };
                send(&mb, m.sender, answer.encode())?;
                say(format!("{op}: {desc}"));
            }
        }
        let (lender, offer) = chosen.expect("loop ends after an offer");
        say(format!(
            "RESULT lender={lender} instance={} first={} chunks={} action={}",
            offer.instance,
            offer.first_chunk,
            offer.chunks,
            match self.action {
                Action::Confirm => "confirm",
                Action::Decline => "decline",
                Action::Ignore => "ignore",
            }
        ));
        Ok(())
    }
}
