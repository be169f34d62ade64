//! The header-forgery check: a sender fills its payload with bytes that look like a header
//! claiming another node, interface and protection id; the receiver must still see the true
//! sender, because only the sending node's driver writes the header. `unimem-mbox set-prot` (the
//! remoteFork service's privilege) is the one legitimate way to change what receivers see.

use anyhow::{bail, Context, Result};
use unimem_mailbox::cli::wait::{WaitMode, Waiter};
use unimem_mailbox::cli::{decode, hex, payload_of, print_identity};
use unimem_mailbox::{Header, Packet, PAYLOAD_LEN};

/// What the forged payload claims.
pub const CLAIM: Header = Header {
    node: 9,
    iface: 42,
    prot_id: 4242,
};

/// The forged payload: the 7 header bytes of `CLAIM`, repeated.
pub fn forged_payload() -> [u8; PAYLOAD_LEN] {
    let fake = Packet::seal(CLAIM, &[0; PAYLOAD_LEN]);
    let mut b = [0u8; PAYLOAD_LEN];
    for (i, byte) in b.iter_mut().enumerate() {
        *byte = fake[i % 7];
    }
    b
}

#[derive(clap::Args)]
pub struct ExpectArgs {
    /// Packets to receive.
    #[arg(long)]
    count: u64,
    /// True sender node.
    #[arg(long)]
    node: u32,
    /// True sender interface.
    #[arg(long)]
    iface: u32,
    /// True sender protection id.
    #[arg(long)]
    prot: u32,
    /// First send one "go" packet to (node, iface), for a `send-forged --reply` waiting there.
    #[arg(long)]
    go: bool,
}

pub fn expect_sender(a: &ExpectArgs) -> Result<()> {
    let w = Waiter::open(WaitMode::Block)?;
    let me = w.mailbox().alloc().context("ALLOC")?;
    print_identity(&me);
    if a.go {
        w.mailbox()
            .send_bytes(a.node, a.iface, &[b'G'; PAYLOAD_LEN])
            .context("sending the go packet")?;
    }
    let want = (a.node, a.iface, a.prot);
    for k in 0..a.count {
        let raw = w.recv_raw(&format!("for packet {k} of {}", a.count))?;
        let p = decode(&raw)?;
        let h = p.header;
        println!(
            "packet {k}: header node {} iface {} prot {}; payload {}",
            h.node,
            h.iface,
            h.prot_id,
            hex(&payload_of(&raw))
        );
        let got = (u32::from(h.node), u32::from(h.iface), h.prot_id);
        if got == (u32::from(CLAIM.node), u32::from(CLAIM.iface), CLAIM.prot_id) {
            bail!("packet {k}: the header is the one forged in the payload");
        }
        if got != want {
            bail!(
                "packet {k}: header says node {} iface {} prot {}, the true sender is node {} iface {} prot {}",
                got.0, got.1, got.2, want.0, want.1, want.2
            );
        }
        if payload_of(&raw) != forged_payload() {
            bail!("packet {k}: the payload was altered in transit");
        }
    }
    println!(
        "ok: {} packets carry the true sender node {} iface {} prot {}, not the forged node {} iface {} prot {}",
        a.count, a.node, a.iface, a.prot, CLAIM.node, CLAIM.iface, CLAIM.prot_id
    );
    Ok(())
}

#[derive(clap::Args)]
pub struct ForgeArgs {
    /// Destination node (not needed with --reply).
    #[arg(long, required_unless_present = "reply")]
    node: Option<u32>,
    /// Destination interface (not needed with --reply).
    #[arg(long, required_unless_present = "reply")]
    iface: Option<u32>,
    /// Forged packets to send (per round).
    #[arg(long, default_value_t = 1)]
    count: u64,
    /// Wait for a packet first and send to its sender (as told by the header).
    #[arg(long)]
    reply: bool,
    /// With --reply: how many times to wait for a packet and answer it.
    #[arg(long, default_value_t = 1)]
    rounds: u64,
}

pub fn send_forged(a: &ForgeArgs) -> Result<()> {
    let w = Waiter::open(WaitMode::Block)?;
    let mb = w.mailbox();
    let me = mb.alloc().context("ALLOC")?;
    print_identity(&me);
    let payload = forged_payload();
    for round in 0..if a.reply { a.rounds } else { 1 } {
        let (node, iface) = if a.reply {
            let raw = w.recv_raw(&format!("for go packet {round}"))?;
            let h = decode(&raw)?.header;
            (u32::from(h.node), u32::from(h.iface))
        } else {
            (a.node.unwrap_or_default(), a.iface.unwrap_or_default())
        };
        for _ in 0..a.count {
            mb.send_bytes(node, iface, &payload)
                .with_context(|| format!("sending to node {node} iface {iface}"))?;
        }
        println!(
            "sent {} forged packets to node {node} iface {iface} (payload claims node {} iface {} prot {}); true sender node {} iface {}",
            a.count, CLAIM.node, CLAIM.iface, CLAIM.prot_id, me.node, me.iface
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forged_payload_decodes_as_the_claim() {
        let mut packet = [0u8; 32];
        packet[..7].copy_from_slice(&forged_payload()[..7]);
        assert_eq!(Packet::decode(&packet).unwrap().header, CLAIM);
    }
}
