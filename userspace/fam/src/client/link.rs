//! The control link to famd: requests out, responses back, one at a time.
//!
//! [`Wire`] moves whole messages; [`MailboxWire`] is the real one (fragments in mailbox
//! packets to famd's well-known interface, reassembled from famd's packets only), and the
//! unit tests put a fake famd behind the trait. [`Link`] numbers requests, matches
//! responses to them (a late answer to a request that timed out is skipped) and turns them
//! into owned [`Answer`]s or the failure famd gave.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use unimem_mailbox::{Errno, Mailbox, Packet, PACKET_LEN};
use unimem_wire::fam::{
    fragments, EncodeError, Reassembler, Reply, Request, Response, MAX_REQUEST_LEN, NAME_MAX,
    VERSION,
};
use unimem_wire::mailbox::well_known::FAMD;

use super::item::{extent, item_from, RegionInfo};
use crate::meta::{Extent, Item};
use crate::{FamError, Result};

/// Moves whole control messages to and from famd.
pub trait Wire: Send {
    /// Sends message `msg` tagged `msg_id` (the framing's id), giving up at `deadline`.
    fn send(&mut self, msg_id: u8, msg: &[u8], deadline: Instant) -> Result<()>;
    /// The next complete message from famd, or `None` at `deadline`.
    fn recv(&mut self, deadline: Instant) -> Result<Option<Vec<u8>>>;
}

/// The wire over `/dev/unimem_mailbox`: an interface of this thread's process sending to
/// interface `FAMD` of famd's node.
pub struct MailboxWire {
    mb: Mailbox,
    famd: u16,
    reassembler: Reassembler,
}

fn rpc(what: &str, e: unimem_mailbox::Error) -> FamError {
    FamError::Rpc(format!("{what}: {e}"))
}

impl MailboxWire {
    /// Opens an interface for talking to famd on node `famd`.
    pub fn open(famd: u16) -> Result<MailboxWire> {
        let mb = Mailbox::open().map_err(|e| {
            FamError::Rpc(format!("cannot open {}: {e}", unimem_mailbox::DEVICE_PATH))
        })?;
        mb.alloc()
            .map_err(|e| rpc("allocating a mailbox interface for famd's link", e))?;
        Ok(MailboxWire {
            mb,
            famd,
            reassembler: Reassembler::new(),
        })
    }
}

impl Wire for MailboxWire {
    fn send(&mut self, msg_id: u8, msg: &[u8], deadline: Instant) -> Result<()> {
        let frags = fragments(msg_id, msg)
            .map_err(|e| FamError::Invalid(format!("request cannot be framed: {e:?}")))?;
        for f in frags {
            loop {
                match self.mb.send_bytes(u32::from(self.famd), FAMD, &f) {
                    Ok(()) => break,
                    // famd's ring is full: it is busy, not gone; wait a little.
                    Err(e) if e.errno() == Some(Errno::EAGAIN) => {
                        if Instant::now() >= deadline {
                            return Err(FamError::Timeout(format!(
                                "famd on node {} takes no requests (its ring stays full)",
                                self.famd
                            )));
                        }
                        std::thread::sleep(Duration::from_micros(200));
                    }
                    Err(e) => {
                        return Err(rpc(&format!("sending to famd on node {}", self.famd), e))
                    }
                }
            }
        }
        Ok(())
    }

    fn recv(&mut self, deadline: Instant) -> Result<Option<Vec<u8>>> {
        loop {
            while let Some(raw) = self
                .mb
                .try_recv_raw()
                .map_err(|e| rpc("receiving famd's answer", e))?
            {
                if let Some(m) = self.accept(&raw) {
                    return Ok(Some(m));
                }
            }
            let now = Instant::now();
            if now >= deadline {
                return Ok(None);
            }
            self.mb
                .wait_readable(Some(deadline - now))
                .map_err(|e| rpc("waiting for famd's answer", e))?;
        }
    }
}

impl MailboxWire {
    /// Feeds a packet from famd to the reassembler: the message it completes. Packets of
    /// anyone else (the driver seals the sender) are dropped: only famd answers requests.
    fn accept(&mut self, raw: &[u8; PACKET_LEN]) -> Option<Vec<u8>> {
        let p = Packet::decode(raw).ok()?;
        if u16::from(p.header.node) != self.famd || u32::from(p.header.iface) != FAMD {
            log::debug!(
                "fam: dropping a packet from node {} interface {}",
                p.header.node,
                p.header.iface
            );
            return None;
        }
        let mut payload = [0u8; unimem_wire::packet::PAYLOAD_LEN];
        payload.copy_from_slice(&raw[unimem_wire::packet::HEADER_LEN..]);
        match self.reassembler.feed(&payload) {
            Ok(fed) => fed.message.map(<[u8]>::to_vec),
            Err(e) => {
                log::warn!("fam: bad fragment from famd: {e:?}");
                None
            }
        }
    }
}

/// A successful answer, owned.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    Done,
    Hello(u16),
    Region(RegionInfo),
    /// An item with its first extents, and its extent count.
    Item(Item, u32),
    Extents {
        total: u32,
        first: u32,
        extents: Vec<Extent>,
    },
    /// Lines of text (a backup listing).
    Text(String),
}

struct State {
    wire: Box<dyn Wire>,
    next_request: u32,
    next_message: u8,
}

/// One outstanding request at a time (the Mutex), so responses never interleave.
pub struct Link {
    state: Mutex<State>,
    timeout: Duration,
}

impl Link {
    pub fn new(wire: Box<dyn Wire>, timeout: Duration) -> Link {
        Link {
            state: Mutex::new(State {
                wire,
                next_request: 1,
                next_message: 0,
            }),
            timeout,
        }
    }

    /// Says hello: famd's protocol version (which must be ours).
    pub fn hello(&self) -> Result<u16> {
        match self.call(&Request::Hello { version: VERSION })? {
            Answer::Hello(v) if v == VERSION => Ok(v),
            Answer::Hello(v) => Err(FamError::Rpc(format!(
                "famd speaks protocol version {v}, this library {VERSION}"
            ))),
            other => Err(unexpected(&other)),
        }
    }

    /// Sends `req` and waits for its response, at most the link's timeout.
    pub fn call(&self, req: &Request<'_>) -> Result<Answer> {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let id = s.next_request;
        s.next_request = s.next_request.wrapping_add(1).max(1);
        let msg_id = s.next_message;
        s.next_message = s.next_message.wrapping_add(1);
        let mut buf = [0u8; MAX_REQUEST_LEN];
        let n = req.encode(id, &mut buf).map_err(|e| match e {
            EncodeError::NameTooLong(n) => {
                FamError::NameTooLong(format!("a name of {n} bytes (at most {NAME_MAX})"))
            }
            e => FamError::Invalid(format!("request cannot be encoded: {e:?}")),
        })?;
        let deadline = Instant::now() + self.timeout;
        s.wire.send(msg_id, &buf[..n], deadline)?;
        loop {
            let Some(msg) = s.wire.recv(deadline)? else {
                return Err(FamError::Timeout(format!(
                    "famd did not answer within {:?} (is famd running, and UNIMEM_FAMD_NODE or /etc/unimem/fam.conf right?)",
                    self.timeout
                )));
            };
            let (rid, resp) = match Response::decode(&msg) {
                Ok(r) => r,
                Err(e) => {
                    log::warn!("fam: undecodable answer from famd: {e:?}");
                    continue;
                }
            };
            if rid != id || resp.op != req.op() {
                log::debug!(
                    "fam: skipping famd's answer {rid} (op {:#x}), waiting for {id}",
                    resp.op
                );
                continue;
            }
            return match resp.result {
                Err(f) => Err(FamError::Remote {
                    code: f.code,
                    message: f.message.to_string(),
                }),
                Ok(r) => Ok(match r {
                    Reply::Done => Answer::Done,
                    Reply::Hello { version } => Answer::Hello(version),
                    Reply::Region(d) => Answer::Region(RegionInfo::from(&d)),
                    Reply::Item(d) => {
                        let (item, n) = item_from(&d);
                        Answer::Item(item, n)
                    }
                    Reply::Extents(p) => Answer::Extents {
                        total: p.total,
                        first: p.first,
                        extents: p.extents.iter().map(extent).collect(),
                    },
                    Reply::Text(t) => Answer::Text(t.to_string()),
                }),
            };
        }
    }

    /// A request whose answer is a region.
    pub fn region(&self, req: &Request<'_>) -> Result<RegionInfo> {
        match self.call(req)? {
            Answer::Region(r) => Ok(r),
            other => Err(unexpected(&other)),
        }
    }

    /// A request whose answer is text.
    pub fn text(&self, req: &Request<'_>) -> Result<String> {
        match self.call(req)? {
            Answer::Text(t) => Ok(t),
            other => Err(unexpected(&other)),
        }
    }

    /// A request whose answer is nothing.
    pub fn done(&self, req: &Request<'_>) -> Result<()> {
        match self.call(req)? {
            Answer::Done => Ok(()),
            other => Err(unexpected(&other)),
        }
    }

    /// A request whose answer is an item: with all its extents, the ones past the first
    /// page fetched with `ItemExtents` (an item's extents never change while it lives).
    pub fn item(&self, req: &Request<'_>) -> Result<Item> {
        let (mut item, total) = match self.call(req)? {
            Answer::Item(i, n) => (i, n),
            other => return Err(unexpected(&other)),
        };
        while item.extents.len() < total as usize {
            let first = item.extents.len() as u32;
            match self.call(&Request::ItemExtents {
                item: item.id.0,
                first,
            })? {
                Answer::Extents {
                    total: t,
                    first: f,
                    extents,
                } if t == total && f == first && !extents.is_empty() => {
                    item.extents.extend(extents)
                }
                other => return Err(unexpected(&other)),
            }
        }
        Ok(item)
    }
}

fn unexpected(a: &Answer) -> FamError {
    FamError::Rpc(format!("famd answered with something else: {a:?}"))
}
