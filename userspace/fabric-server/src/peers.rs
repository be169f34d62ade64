//! Connected clients (QEMU ivshmem-doorbell devices, one per VM), their node ids, and the
//! doorbells that belong to each id.

use std::os::fd::OwnedFd;
use std::rc::Rc;

use mio::net::UnixStream;
use mio::Token;

use crate::protocol::Outbox;

/// One eventfd per vector. Shared so that queued messages keep them open.
pub type Doorbells = Vec<Rc<OwnedFd>>;

/// One connected VM.
pub struct Peer {
    pub id: u32,
    /// From SO_PEERCRED when it connected; `None` if the kernel could not tell.
    pub pid: Option<i32>,
    pub stream: UnixStream,
    /// Unique per connection, so an event still queued for a departed client is never
    /// mistaken for one of the client that inherited its id.
    pub token: Token,
    pub outbox: Outbox,
    /// Whether the stream is registered for writability (only while the outbox is stuck).
    pub wants_write: bool,
}

impl Peer {
    pub fn describe(&self) -> String {
        match self.pid {
            Some(pid) => format!("node {} (pid {pid})", self.id),
            None => format!("node {} (pid unknown)", self.id),
        }
    }
}

#[derive(Default)]
struct Slot {
    peer: Option<Peer>,
    /// Created when the id is first used and kept until the server exits, across
    /// reconnects; see `Server::admit` for why.
    doorbells: Option<Doorbells>,
}

/// Node ids double as partition numbers in the shared region, so they stay within
/// `0..nodes`, and a VM that reconnects gets the lowest free id: after a restart it is handed
/// its old partition back.
pub struct Peers {
    slots: Vec<Slot>,
}

impl Peers {
    pub fn new(nodes: u32) -> Self {
        Self {
            slots: (0..nodes).map(|_| Slot::default()).collect(),
        }
    }

    pub fn lowest_free(&self) -> Option<u32> {
        self.slots
            .iter()
            .position(|s| s.peer.is_none())
            .map(|i| u32::try_from(i).expect("at most 16 nodes"))
    }

    /// Stores `peer` under its id, which must be free.
    pub fn insert(&mut self, peer: Peer) {
        let slot = &mut self.slots[peer.id as usize].peer;
        assert!(slot.is_none(), "node id {} is already taken", peer.id);
        *slot = Some(peer);
    }

    pub fn remove(&mut self, id: u32) -> Option<Peer> {
        self.slots.get_mut(id as usize)?.peer.take()
    }

    pub fn get_mut(&mut self, id: u32) -> Option<&mut Peer> {
        self.slots.get_mut(id as usize)?.peer.as_mut()
    }

    pub fn id_of(&self, token: Token) -> Option<u32> {
        self.iter().find(|p| p.token == token).map(|p| p.id)
    }

    /// Connected peers in id order.
    pub fn iter(&self) -> impl Iterator<Item = &Peer> {
        self.slots.iter().filter_map(|s| s.peer.as_ref())
    }

    pub fn ids(&self) -> Vec<u32> {
        self.iter().map(|p| p.id).collect()
    }

    pub fn doorbells(&self, id: u32) -> Option<&Doorbells> {
        self.slots.get(id as usize)?.doorbells.as_ref()
    }

    pub fn set_doorbells(&mut self, id: u32, doorbells: Doorbells) {
        let slot = &mut self.slots[id as usize].doorbells;
        assert!(slot.is_none(), "node {id} already has doorbells");
        *slot = Some(doorbells);
    }

    /// Every id that has doorbells, connected now or not, in id order.
    pub fn all_doorbells(&self) -> impl Iterator<Item = (u32, &Doorbells)> {
        self.slots
            .iter()
            .zip(0u32..)
            .filter_map(|(s, id)| Some((id, s.doorbells.as_ref()?)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn peer(id: u32) -> Peer {
        let (stream, _other) = UnixStream::pair().unwrap();
        Peer {
            id,
            pid: None,
            stream,
            token: Token(100 + id as usize),
            outbox: Outbox::default(),
            wants_write: false,
        }
    }

    #[test]
    fn lowest_free_id_is_reused() {
        let mut peers = Peers::new(3);
        for id in 0..3 {
            assert_eq!(peers.lowest_free(), Some(id));
            peers.insert(peer(id));
        }
        assert_eq!(peers.lowest_free(), None);
        peers.remove(1).unwrap();
        assert_eq!(peers.lowest_free(), Some(1));
        peers.remove(0).unwrap();
        assert_eq!(peers.lowest_free(), Some(0));
        assert_eq!(peers.ids(), vec![2]);
        assert_eq!(peers.id_of(Token(102)), Some(2));
        assert_eq!(peers.id_of(Token(101)), None);
        assert!(peers.remove(7).is_none());
    }

    #[test]
    fn doorbells_outlive_connections() {
        let mut peers = Peers::new(3);
        peers.insert(peer(1));
        peers.set_doorbells(1, Vec::new());
        peers.set_doorbells(2, Vec::new());
        peers.remove(1).unwrap();
        assert!(peers.doorbells(1).is_some());
        assert!(peers.doorbells(0).is_none());
        let ids: Vec<u32> = peers.all_doorbells().map(|(id, _)| id).collect();
        assert_eq!(ids, [1, 2]);
    }
}
