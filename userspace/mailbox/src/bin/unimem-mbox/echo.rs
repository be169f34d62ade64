//! `serve` and `ping`: an echo server and a ping-pong client over mailbox packets.

use anyhow::{bail, Context, Result};
use std::time::{Duration, Instant};
use unimem_mailbox::cli::latency::Summary;
use unimem_mailbox::cli::wait::{retry_full, ModeArgs, WaitMode, Waiter};
use unimem_mailbox::cli::{decode, hex, payload_of, print_identity, run_tag};
use unimem_mailbox::PAYLOAD_LEN;
use unimem_wire::gsas::owner::ADMIN;

/// How long an echo may wait for room in a full destination ring before it is given up.
const FULL_RING_PATIENCE: Duration = Duration::from_secs(1);

/// Echoes packets back to their senders, `count` times (or forever).
pub fn serve(count: Option<u64>, mode: WaitMode, whois: bool) -> Result<()> {
    let w = Waiter::open(mode)?;
    let me = w.mailbox().alloc().context("ALLOC")?;
    print_identity(&me);
    log::info!("serving on node {} iface {} ({mode})", me.node, me.iface);
    let (mut served, mut lost) = (0u64, 0u64);
    while count.is_none_or(|c| served < c) {
        let raw = if whois {
            let (raw, creds) = w.mailbox().recv_raw_with_creds()?;
            let p = decode(&raw)?;
            let who = match creds {
                Some(c) if c.flags & ADMIN != 0 => format!("uid {} gid {} admin", c.uid, c.gid),
                Some(c) => format!("uid {} gid {}", c.uid, c.gid),
                None => "sender unknown (not a user's interface, or it changed hands)".into(),
            };
            println!(
                "from node {} iface {} tree {:#x}: {who}",
                p.header.node, p.header.iface, p.header.prot_id
            );
            raw
        } else {
            w.recv_raw("for a packet to echo")?
        };
        let p = decode(&raw)?;
        let payload = payload_of(&raw);
        let (node, iface) = (u32::from(p.header.node), u32::from(p.header.iface));
        if let Err(e) = retry_full(FULL_RING_PATIENCE, "echoing", || {
            w.mailbox().send_bytes(node, iface, &payload)
        }) {
            lost += 1;
            log::warn!("could not echo to node {node} iface {iface}: {e:#}");
        }
        served += 1;
    }
    println!("served {served} packets, {lost} not echoed");
    if lost > 0 {
        bail!("{lost} echoes could not be sent");
    }
    Ok(())
}

#[derive(clap::Args)]
pub struct PingArgs {
    /// Node of the echo server.
    #[arg(long)]
    node: u32,
    /// Interface of the echo server (first line of `serve`).
    #[arg(long)]
    iface: u32,
    /// Timed round trips.
    #[arg(long, default_value_t = 1000)]
    count: u64,
    /// Payload bytes filled and checked (the packet is always 32 bytes on the wire).
    #[arg(long, default_value_t = 25, value_parser = clap::value_parser!(u8).range(8..=25))]
    size: u8,
    /// Untimed round trips first (the server must echo count + warmup packets).
    #[arg(long, default_value_t = 0)]
    warmup: u64,
    /// Packets in flight (1 = strict ping-pong; at most the 32 ring slots).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=32))]
    window: u32,
    #[command(flatten)]
    mode: ModeArgs,
}

pub fn ping(a: &PingArgs) -> Result<()> {
    let mode = a.mode.mode();
    let w = Waiter::open(mode)?;
    let mb = w.mailbox();
    let me = mb.alloc().context("ALLOC")?;
    print_identity(&me);
    let total = a.warmup + a.count;
    let size = usize::from(a.size);
    println!(
        "ping: node {} iface {} -> node {} iface {}: {} round trips (+{} warm-up), payload {size} B, mode {mode}, window {}",
        me.node, me.iface, a.node, a.iface, a.count, a.warmup, a.window
    );
    let run = run_tag();
    let mut sent_at: Vec<Instant> = Vec::with_capacity(total as usize);
    let mut rtts = Vec::with_capacity(a.count as usize);
    let mut full = 0;
    let mut send_next = |sent_at: &mut Vec<Instant>| -> Result<()> {
        let seq = sent_at.len() as u64;
        let payload = pattern(run, seq, size);
        sent_at.push(Instant::now());
        full += retry_full(FULL_RING_PATIENCE, "sending a ping", || {
            mb.send_bytes(a.node, a.iface, &payload)
        })?;
        Ok(())
    };
    while (sent_at.len() as u64) < total.min(u64::from(a.window)) {
        send_next(&mut sent_at)?;
    }
    let mut server_prot = None;
    let mut timed_from = None;
    for seq in 0..total {
        let raw = w.recv_raw(&format!("for echo {seq} of {total}"))?;
        let now = Instant::now();
        let p = decode(&raw)?;
        let (hn, hi) = (u32::from(p.header.node), u32::from(p.header.iface));
        if (hn, hi) != (a.node, a.iface) {
            bail!(
                "packet {seq} came from node {hn} iface {hi}, expected the echo of node {} iface {}",
                a.node,
                a.iface
            );
        }
        server_prot.get_or_insert(p.header.prot_id);
        let got = payload_of(&raw);
        let got_seq = u64::from_le_bytes(got[..8].try_into().expect("8 bytes"));
        if got != pattern(run, seq, size) {
            bail!(
                "echo {seq} is not what was sent (carries sequence number {got_seq}): {}",
                hex(&got)
            );
        }
        if seq >= a.warmup {
            timed_from.get_or_insert(sent_at[seq as usize]);
            rtts.push(now - sent_at[seq as usize]);
        }
        if (sent_at.len() as u64) < total {
            send_next(&mut sent_at)?;
        }
    }
    let elapsed = timed_from.map_or(Duration::ZERO, |t| t.elapsed());
    let s = Summary::from_round_trips(&rtts, elapsed);
    println!(
        "ok: {total} echoes intact, all from node {} iface {} (prot {}); {full} sends met a full ring",
        a.node,
        a.iface,
        server_prot.unwrap_or(0)
    );
    println!("{}", s.human());
    let mode_name = if a.window > 1 {
        format!("{mode}-w{}", a.window)
    } else {
        mode.to_string()
    };
    println!("{}", s.result_line("ping", &mode_name, size));
    Ok(())
}

/// The payload of ping `seq`: sequence number, then `size - 8` bytes derived from the run and
/// the sequence number, then zeros.
fn pattern(run: u64, seq: u64, size: usize) -> [u8; PAYLOAD_LEN] {
    let mut b = [0u8; PAYLOAD_LEN];
    b[..8].copy_from_slice(&seq.to_le_bytes());
    // xorshift64*: cheap, and every byte depends on run and seq.
    let mut x = (run ^ seq.wrapping_mul(0x9e37_79b9_7f4a_7c15)) | 1;
    for byte in &mut b[8..size] {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        *byte = (x.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 56) as u8;
    }
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pattern_fills_exactly_size_bytes() {
        let p = pattern(7, 3, 16);
        assert_eq!(&p[..8], &3u64.to_le_bytes());
        assert!(p[8..16].iter().any(|&b| b != 0));
        assert!(p[16..].iter().all(|&b| b == 0));
        assert_eq!(pattern(7, 3, 8)[8..], [0; 17]);
        assert_ne!(pattern(7, 3, 25), pattern(8, 3, 25));
        assert_ne!(pattern(7, 3, 25), pattern(7, 4, 25));
    }
}
