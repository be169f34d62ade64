//! `kserve` and `kping`: 64-bit kernel messages between privileged services (the channel the
//! KRAM driver and daemon use), exercised from user space on the TEST service.

use anyhow::{bail, Context, Result};
use std::io::Write;
use std::time::{Duration, Instant};
use unimem_mailbox::cli::latency::Summary;
use unimem_mailbox::cli::wait::{retry_full, ModeArgs, Waiter};
use unimem_mailbox::{fabric, service};

const FULL_RING_PATIENCE: Duration = Duration::from_secs(1);
/// The bits of a word below the opcode.
const PAYLOAD_MASK: u64 = (1 << 60) - 1;

#[derive(clap::Args)]
pub struct KserveArgs {
    /// Service to bind (1..15).
    #[arg(long, default_value_t = service::TEST)]
    service: u32,
    /// Stop after N messages (default: forever).
    #[arg(long)]
    count: Option<u64>,
    /// Send every word back to the sender node's same service.
    #[arg(long)]
    echo: bool,
    /// Fail if a message comes from another node than this one.
    #[arg(long)]
    from: Option<u32>,
    #[command(flatten)]
    mode: ModeArgs,
}

pub fn kserve(a: &KserveArgs) -> Result<()> {
    let w = Waiter::open(a.mode.mode())?;
    w.mailbox().kbind(a.service).context("KBIND")?;
    println!(
        "bound service {} node {}",
        a.service,
        fabric::node_id().map_or("?".into(), |n| n.to_string())
    );
    std::io::stdout().flush()?;
    let mut n = 0u64;
    while a.count.is_none_or(|c| n < c) {
        let m = w.krecv("for a kernel message")?;
        println!(
            "kmsg from node {} service {} word {:#018x} opcode {}",
            m.sender,
            m.service,
            m.word,
            unimem_wire::mailbox::kmsg_opcode(m.word)
        );
        if m.service != a.service {
            bail!(
                "message for service {} delivered to service {}",
                m.service,
                a.service
            );
        }
        if let Some(from) = a.from {
            if m.sender != from {
                bail!("message from node {}, expected node {from}", m.sender);
            }
        }
        if a.echo {
            retry_full(FULL_RING_PATIENCE, "echoing a kernel message", || {
                w.mailbox().ksend(m.sender, m.service, m.word)
            })?;
        }
        n += 1;
    }
    println!("kserve: {n} messages");
    Ok(())
}

#[derive(clap::Args)]
pub struct KpingArgs {
    /// Destination node.
    #[arg(long)]
    node: u32,
    /// Service on the destination (and, for echoes, bound here too).
    #[arg(long, default_value_t = service::TEST)]
    service: u32,
    /// Timed messages.
    #[arg(long, default_value_t = 100)]
    count: u64,
    /// Untimed exchanges first.
    #[arg(long, default_value_t = 0)]
    warmup: u64,
    /// Only send (kserve without --echo); no latency.
    #[arg(long)]
    no_echo: bool,
    /// Service bound here for the replies (default: --service). A kernel client such as
    /// unimem_mbox_echo answers on another service than the one it serves.
    #[arg(long)]
    reply_service: Option<u32>,
    /// Opcode (4 most significant bits of every word) the kernel callbacks dispatch on.
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u64).range(0..16))]
    opcode: u64,
    /// Expect replies whose low 60 bits are the sent word's plus one (unimem_mbox_echo's
    /// opcode 2) instead of identical words.
    #[arg(long)]
    expect_increment: bool,
    #[command(flatten)]
    mode: ModeArgs,
}

pub fn kping(a: &KpingArgs) -> Result<()> {
    let mode = a.mode.mode();
    let w = Waiter::open(mode)?;
    let mb = w.mailbox();
    let reply_service = a.reply_service.unwrap_or(a.service);
    if !a.no_echo {
        mb.kbind(reply_service)
            .context("KBIND (for the echoes; the service must be free on this node)")?;
    }
    let total = a.warmup + a.count;
    let me = fabric::node_id().map_or("?".into(), |n| n.to_string());
    println!(
        "kping: node {me} -> node {} service {}: {total} messages, mode {mode}{}",
        a.node,
        a.service,
        if a.no_echo { ", no echo" } else { "" }
    );
    // Word: a per-run tag in bits 32..60 and the sequence number below, so a stale message
    // from an earlier run is not mistaken for an echo.
    let tag = unimem_mailbox::cli::run_tag() & 0x0fff_ffff;
    let mut rtts = Vec::with_capacity(a.count as usize);
    let mut timed_from = None;
    for seq in 0..total {
        let word = (a.opcode << 60) | (tag << 32) | seq;
        let expected = if a.expect_increment {
            (word & !PAYLOAD_MASK) | (word.wrapping_add(1) & PAYLOAD_MASK)
        } else {
            word
        };
        let t = Instant::now();
        retry_full(FULL_RING_PATIENCE, "sending a kernel message", || {
            mb.ksend(a.node, a.service, word)
        })?;
        if a.no_echo {
            continue;
        }
        let m = w.krecv(&format!("for echo {seq} of {total}"))?;
        let rtt = t.elapsed();
        if (m.sender, m.service, m.word) != (a.node, reply_service, expected) {
            bail!(
                "echo {seq}: got word {:#x} from node {} service {}, expected {expected:#x} from node {} service {}",
                m.word, m.sender, m.service, a.node, reply_service
            );
        }
        if seq >= a.warmup {
            timed_from.get_or_insert(t);
            rtts.push(rtt);
        }
    }
    if a.no_echo {
        println!("kping: sent {total} messages");
        return Ok(());
    }
    let s = Summary::from_round_trips(&rtts, timed_from.map_or(Duration::ZERO, |t| t.elapsed()));
    println!(
        "ok: {total} echoes intact from node {} service {}",
        a.node, reply_service
    );
    println!("{}", s.human());
    println!("{}", s.result_line("kping", &mode.to_string(), 8));
    Ok(())
}
