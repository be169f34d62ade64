//! `flood` and `hold`: ring overflow. `hold` allocates an interface and does not read it;
//! `flood` sends to it until the driver refuses with EAGAIN (32 slots per sending node), then
//! shows the driver's statistics while its own interface is still allocated. `kick`: a loop of
//! doorbells that queue nothing (the driver's `doorbell_rate` bounds them).

use anyhow::{bail, Context, Result};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use unimem_mailbox::cli::{decode, payload_of, print_identity};
use unimem_mailbox::{stats, Errno, Mailbox, PAYLOAD_LEN};

#[derive(clap::Args)]
pub struct FloodArgs {
    /// Destination node.
    #[arg(long)]
    node: u32,
    /// Destination interface (one that does not read, e.g. `hold`).
    #[arg(long)]
    iface: u32,
    /// Give up (fail) if EAGAIN has not come after this many packets.
    #[arg(long, default_value_t = 10_000)]
    max: u64,
    /// Fail unless exactly this many packets were accepted before EAGAIN.
    #[arg(long)]
    expect: Option<u64>,
}

pub fn flood(a: &FloodArgs) -> Result<()> {
    let mb = Mailbox::open()?;
    let me = mb.alloc().context("ALLOC")?;
    print_identity(&me);
    let mut accepted = 0u64;
    let refusal = loop {
        if accepted >= a.max {
            bail!(
                "no EAGAIN after {accepted} packets to node {} iface {}",
                a.node,
                a.iface
            );
        }
        let mut payload = [0u8; PAYLOAD_LEN];
        payload[..8].copy_from_slice(&accepted.to_le_bytes());
        match mb.send_bytes(a.node, a.iface, &payload) {
            Ok(()) => accepted += 1,
            Err(e) => break e,
        }
    };
    if !refusal.is(Errno::EAGAIN) {
        bail!("after {accepted} packets SEND failed with {refusal}, expected EAGAIN");
    }
    println!("flood: accepted {accepted} packets, then EAGAIN");
    // A second attempt must still be refused: the ring stays full while nobody reads.
    let again = mb.send_bytes(a.node, a.iface, &[0; PAYLOAD_LEN]);
    match again {
        Err(e) if e.is(Errno::EAGAIN) => println!("flood: still EAGAIN on retry"),
        other => bail!("retry after EAGAIN: expected EAGAIN again, got {other:?}"),
    }
    // The stats text is the driver's; shown as is (the test greps it loosely).
    match stats::read() {
        Ok(text) => {
            println!(
                "--- {} (flood's iface {} still allocated)",
                stats::STATS_PATH,
                me.iface
            );
            print!("{text}");
            println!("--- end of stats");
        }
        Err(e) => log::warn!("cannot read {}: {e}", stats::STATS_PATH),
    }
    if let Some(want) = a.expect {
        if accepted != want {
            bail!("accepted {accepted} packets before EAGAIN, expected {want}");
        }
    }
    Ok(())
}

#[derive(clap::Args)]
pub struct KickArgs {
    /// Node to ring.
    #[arg(long)]
    node: u32,
    /// How many KICKs.
    #[arg(long, default_value_t = 1)]
    count: u64,
}

/// Rings `node` `count` times with `KICK` and says how long that took: `kick: N kicks to node
/// M in T ms`.
pub fn kick(a: &KickArgs) -> Result<()> {
    let mb = Mailbox::open()?;
    let me = mb.alloc().context("ALLOC")?;
    print_identity(&me);
    let start = Instant::now();
    for i in 0..a.count {
        mb.kick(a.node)
            .with_context(|| format!("KICK {} of {} to node {}", i + 1, a.count, a.node))?;
    }
    println!(
        "kick: {} kicks to node {} in {} ms",
        a.count,
        a.node,
        start.elapsed().as_millis()
    );
    Ok(())
}

#[derive(clap::Args)]
pub struct HoldArgs {
    /// Keep the interface unread until this file exists (checked every 100 ms).
    #[arg(long)]
    until_file: Option<PathBuf>,
    /// Longest wait; with --until-file, reaching it is a failure.
    #[arg(long, default_value_t = 600)]
    seconds: u64,
    /// Fail unless exactly this many packets are waiting when the wait ends.
    #[arg(long)]
    expect: Option<u64>,
}

pub fn hold(a: &HoldArgs) -> Result<()> {
    let mb = Mailbox::open_nonblocking()?;
    let me = mb.alloc().context("ALLOC")?;
    print_identity(&me);
    let start = Instant::now();
    let limit = Duration::from_secs(a.seconds);
    let mut appeared = false;
    while start.elapsed() < limit {
        if a.until_file.as_ref().is_some_and(|f| f.exists()) {
            appeared = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    // Drain: count per sender and check each sender's sequence numbers (flood's payload) are
    // 0, 1, 2, ...: nothing lost, duplicated or reordered.
    let mut per_sender: BTreeMap<(u8, u16), (u64, bool)> = BTreeMap::new();
    let mut total = 0u64;
    while let Some(raw) = mb.try_recv_raw()? {
        let h = decode(&raw)?.header;
        let seq = u64::from_le_bytes(payload_of(&raw)[..8].try_into().expect("8 bytes"));
        let (n, in_order) = per_sender.entry((h.node, h.iface)).or_insert((0, true));
        *in_order &= seq == *n;
        *n += 1;
        total += 1;
    }
    for ((node, iface), (n, in_order)) in &per_sender {
        let order = if *in_order {
            "sequence 0.. in order"
        } else {
            "NOT in sequence order"
        };
        println!("from node {node} iface {iface}: {n} packets, {order}");
    }
    println!("drained {total} packets");
    if let (Some(file), false) = (&a.until_file, appeared) {
        bail!("{} did not appear within {} s", file.display(), a.seconds);
    }
    if let Some(want) = a.expect {
        if total != want {
            bail!("{total} packets were waiting, expected {want}");
        }
    }
    Ok(())
}
