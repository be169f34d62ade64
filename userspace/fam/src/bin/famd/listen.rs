//! famd's mailbox side: the well-known interface (`ALLOC_AT` of `well_known::FAMD`), requests
//! put back together from their fragments per sender, and answers cut into fragments to the
//! sender's interface.
//!
//! A sender is a (node, interface) pair as the sending node's kernel wrote it in the packet
//! header; its identity is what that node sealed for the interface (`RECV_CREDS`). A message is
//! served only if every fragment came from the same tree with the same identity, so a message
//! cannot be spliced from two owners of one interface.

use anyhow::{Context, Result};
use std::collections::HashMap;
use std::os::fd::{AsRawFd, RawFd};
use std::time::{Duration, Instant};
use unimem_mailbox::{Errno, Mailbox};
use unimem_wire::fam::{fragments, Reassembler, MAX_MESSAGE};
use unimem_wire::gsas::owner::Creds;
use unimem_wire::mailbox::well_known;
use unimem_wire::packet::{Packet, HEADER_LEN, PACKET_LEN, PAYLOAD_LEN};

/// How long an answer may wait for room in the client's ring (32 packets; an answer is at most
/// 49): a client that stopped reading must not stall famd for longer.
const PATIENCE: Duration = Duration::from_secs(1);

/// Who sent a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sender {
    pub node: u32,
    pub iface: u32,
    pub tree: u32,
    /// `None`: the node sealed nothing that still names this sender (refuse).
    pub creds: Option<Creds>,
}

struct Partial {
    tree: u32,
    creds: Option<Creds>,
    re: Reassembler,
}

/// The well-known interface and the messages in progress on it.
pub struct Listener {
    mailbox: Mailbox,
    node: u32,
    partial: HashMap<(u32, u32), Partial>,
    next_id: u8,
    /// Answers given up on (the client's ring stayed full).
    pub dropped: u64,
}

impl Listener {
    /// Takes the well-known interface of this node.
    pub fn open() -> Result<Listener> {
        let mailbox = Mailbox::open_nonblocking().context("opening /dev/unimem_mailbox")?;
        let info = mailbox.alloc_at(well_known::FAMD).with_context(|| {
            format!(
                "taking the well-known interface {} (ALLOC_AT)",
                well_known::FAMD
            )
        })?;
        Ok(Listener {
            mailbox,
            node: info.node,
            partial: HashMap::new(),
            next_id: 0,
            dropped: 0,
        })
    }

    pub fn node(&self) -> u32 {
        self.node
    }

    /// Takes every packet waiting; for each completed message calls `serve(sender, message,
    /// answer buffer)`, which returns the answer's length (0: no answer), and sends it.
    pub fn drain(
        &mut self,
        mut serve: impl FnMut(&Sender, &[u8], &mut [u8; MAX_MESSAGE]) -> usize,
    ) -> Result<()> {
        let mut answer = [0u8; MAX_MESSAGE];
        while let Some((raw, creds)) = self
            .mailbox
            .try_recv_raw_with_creds()
            .context("RECV_CREDS")?
        {
            let Some((sender, message)) = self.feed(&raw, creds) else {
                continue;
            };
            let len = serve(&sender, &message, &mut answer);
            if len > 0 {
                self.answer(&sender, &answer[..len]);
            }
        }
        Ok(())
    }

    /// Adds a packet to its sender's message; the sender and the message when it completes.
    fn feed(&mut self, raw: &[u8; PACKET_LEN], creds: Option<Creds>) -> Option<(Sender, Vec<u8>)> {
        let header = match Packet::decode(raw) {
            Ok(p) => p.header,
            Err(e) => {
                log::warn!("famd: a malformed packet: {e:?}");
                return None;
            }
        };
        let key = (u32::from(header.node), u32::from(header.iface));
        let mut payload = [0u8; PAYLOAD_LEN];
        payload.copy_from_slice(&raw[HEADER_LEN..]);
        let p = self.partial.entry(key).or_insert_with(|| Partial {
            tree: header.prot_id,
            creds,
            re: Reassembler::new(),
        });
        if p.tree != header.prot_id || p.creds != creds {
            // The interface changed hands (or identity) mid-message: start over.
            p.re.reset();
            p.tree = header.prot_id;
            p.creds = creds;
        }
        match p.re.feed(&payload) {
            Ok(fed) => {
                if let Some(i) = fed.interrupted {
                    log::debug!(
                        "famd: node {} iface {}: message {} dropped after {} bytes by a new one",
                        key.0,
                        key.1,
                        i.id,
                        i.received
                    );
                }
                let message = fed.message?.to_vec();
                let sender = Sender {
                    node: key.0,
                    iface: key.1,
                    tree: p.tree,
                    creds: p.creds,
                };
                Some((sender, message))
            }
            Err(e) => {
                log::warn!("famd: node {} iface {}: bad fragment: {e:?}", key.0, key.1);
                None
            }
        }
    }

    /// Sends `message` to the sender, fragment by fragment, waiting for room at most
    /// [`PATIENCE`] in all.
    fn answer(&mut self, to: &Sender, message: &[u8]) {
        self.next_id = self.next_id.wrapping_add(1);
        let Ok(frags) = fragments(self.next_id, message) else {
            log::error!(
                "famd: an answer of {} bytes cannot be framed",
                message.len()
            );
            return;
        };
        let deadline = Instant::now() + PATIENCE;
        for f in frags {
            loop {
                match self.mailbox.send_bytes(to.node, to.iface, &f) {
                    Ok(()) => break,
                    Err(e) if e.is(Errno::EAGAIN) && Instant::now() < deadline => {
                        std::thread::sleep(Duration::from_micros(200));
                    }
                    Err(e) => {
                        self.dropped += 1;
                        log::warn!(
                            "famd: answer to node {} iface {} dropped: {e}",
                            to.node,
                            to.iface
                        );
                        return;
                    }
                }
            }
        }
    }
}

impl AsRawFd for Listener {
    fn as_raw_fd(&self) -> RawFd {
        self.mailbox.as_raw_fd()
    }
}
