//! Unit tests only: an in-memory GSAS cluster behind the [`Transport`] trait. Every node's
//! memory and page owners sit under one mutex, so each request is applied atomically, as the
//! node services do; handles of several threads share it. [`Cluster::poke`] writes memory as
//! a hostile node would (no tree check).

use gsas::{addr, node_of, offset_of, op, status, Pause, Transport, BULK_MAX, PAGE_SIZE};
use nix::errno::Errno;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use unimem_wire::gsas::Response;
use unimem_wire::packet::Payload;

pub const TREE: u32 = 0x01_0001;
pub const OTHER_TREE: u32 = 0x02_0001;

#[derive(Default)]
struct State {
    mem: BTreeMap<u16, Vec<u8>>,
    /// (node, page) -> (tree, first page of the allocation, pages).
    owner: BTreeMap<(u16, u64), (u32, u64, u64)>,
    allocs: u64,
    /// (node, interface) -> (tree, generation) of the handles alive: dropping a handle is a
    /// thread that died.
    ifaces: BTreeMap<(u16, u32), (u32, u32)>,
    generations: u32,
    /// (node, first page) -> the allocation's tag, if it has one.
    tags: BTreeMap<(u16, u64), u64>,
}

/// The nodes' memories: `pages` per node (page 0 never allocated, as a pool never starts at 0).
#[derive(Clone)]
pub struct Cluster {
    s: Arc<Mutex<State>>,
    pages: Arc<BTreeMap<u16, u64>>,
}

impl Cluster {
    pub fn new(nodes: u16, pages: u64) -> Self {
        Self::with_pages(&(0..nodes).map(|n| (n, pages)).collect::<Vec<_>>())
    }

    pub fn with_pages(nodes: &[(u16, u64)]) -> Self {
        let mut s = State::default();
        for &(n, p) in nodes {
            s.mem.insert(n, vec![0; (p * PAGE_SIZE) as usize]);
        }
        Cluster {
            s: Arc::new(Mutex::new(s)),
            pages: Arc::new(nodes.iter().copied().collect()),
        }
    }

    /// A GSAS handle of `tree` on `node`.
    pub fn handle(&self, node: u16, iface: u32, tree: u32) -> gsas::Gsas<Handle> {
        let generation = {
            let mut s = self.s.lock().unwrap();
            s.generations += 1;
            let g = s.generations;
            s.ifaces.insert((node, iface), (tree, g));
            g
        };
        gsas::Gsas::with_transport(Handle {
            c: self.clone(),
            node,
            iface,
            tree,
            generation,
            slots: RefCell::new(BTreeMap::new()),
            bulk_in: RefCell::new(vec![0; BULK_MAX as usize]),
            bulk_out: RefCell::new(vec![0; BULK_MAX as usize]),
        })
    }

    /// Writes `bytes` at `a`, whoever owns it.
    pub fn poke(&self, a: u64, bytes: &[u8]) {
        let mut s = self.s.lock().unwrap();
        let o = offset_of(a) as usize;
        s.mem.get_mut(&node_of(a)).unwrap()[o..o + bytes.len()].copy_from_slice(bytes);
    }

    pub fn poke_word(&self, a: u64, w: u64) {
        self.poke(a, &w.to_le_bytes());
    }

    /// Allocations alive (of any tree).
    pub fn allocations(&self) -> u64 {
        self.s.lock().unwrap().allocs
    }

    fn apply(&self, h: &Handle, home: u16, p: &Payload, value: &mut [u8; 32]) -> Result<(), u8> {
        unimem_wire::gsas::check(p).map_err(|e| e.status())?;
        let mut s = self.s.lock().unwrap();
        let pages = *self.pages.get(&home).ok_or(status::FAULT)?;
        let base = p.opcode & !op::WIDTH32;
        match base {
            op::NOP => return Ok(()),
            op::IFACE_STATE => {
                if p.arg1 >= u64::from(unimem_wire::gsas::USER_INTERFACES) {
                    return Err(status::INVALID);
                }
                let w = match s.ifaces.get(&(home, p.arg1 as u32)) {
                    Some(&(t, g)) if t == h.tree => op::IFACE_HELD | u64::from(g),
                    _ => 0,
                };
                value[..8].copy_from_slice(&w.to_le_bytes());
                return Ok(());
            }
            op::FREE_TAG => {
                if p.arg1 == 0 {
                    return Err(status::INVALID);
                }
                let found = s
                    .owner
                    .iter()
                    .find(|(&(n, q), &(t, first, _))| {
                        n == home
                            && q == first
                            && t == h.tree
                            && s.tags.get(&(n, q)) == Some(&p.arg1)
                    })
                    .map(|(&(_, q), &(_, _, len))| (q, len));
                let mut w = 0u64;
                if let Some((first, len)) = found {
                    for q in first..first + len {
                        s.owner.remove(&(home, q));
                    }
                    s.tags.remove(&(home, first));
                    s.allocs -= 1;
                    w = addr(home, first * PAGE_SIZE);
                }
                value[..8].copy_from_slice(&w.to_le_bytes());
                return Ok(());
            }
            op::ALLOC => {
                let n = p.arg1;
                if n == 0 || n > gsas::MAX_ALLOC_PAGES {
                    return Err(status::INVALID);
                }
                let first = (1..pages)
                    .find(|&f| {
                        f + n <= pages && (f..f + n).all(|q| !s.owner.contains_key(&(home, q)))
                    })
                    .ok_or(status::NO_MEMORY)?;
                for q in first..first + n {
                    s.owner.insert((home, q), (h.tree, first, n));
                }
                s.allocs += 1;
                if p.arg2 != 0 {
                    s.tags.insert((home, first), p.arg2);
                }
                let m = s.mem.get_mut(&home).unwrap();
                m[(first * PAGE_SIZE) as usize..((first + n) * PAGE_SIZE) as usize].fill(0);
                value[..8].copy_from_slice(&addr(home, first * PAGE_SIZE).to_le_bytes());
                return Ok(());
            }
            op::INDEXED => return Self::indexed(&mut s, h, home, p, value),
            _ => {}
        }
        if node_of(p.address) != home {
            return Err(status::FAULT);
        }
        let off = offset_of(p.address);
        let len = match base {
            op::BULK_READ | op::BULK_WRITE if p.arg1 == 0 || p.arg1 > BULK_MAX => {
                return Err(status::INVALID)
            }
            op::BULK_READ | op::BULK_WRITE => p.arg1,
            op::FREE => 1,
            _ => op::size(p.opcode).ok_or(status::INVALID)?,
        };
        for pg in off / PAGE_SIZE..=(off + len - 1) / PAGE_SIZE {
            match s.owner.get(&(home, pg)) {
                None => return Err(status::FAULT),
                Some((t, ..)) if *t != h.tree => return Err(status::DENIED),
                _ => {}
            }
        }
        if base == op::FREE {
            let (_, first, n) = s.owner[&(home, off / PAGE_SIZE)];
            if first * PAGE_SIZE != off {
                return Err(status::FAULT);
            }
            for q in first..first + n {
                s.owner.remove(&(home, q));
            }
            s.tags.remove(&(home, first));
            s.allocs -= 1;
            return Ok(());
        }
        let m = s.mem.get_mut(&home).unwrap();
        let (o, n) = (off as usize, len as usize);
        let word = |m: &Vec<u8>| u64::from_le_bytes(m[o..o + 8].try_into().unwrap());
        match base {
            op::READ128 | op::READ256 => value[..n].copy_from_slice(&m[o..o + n]),
            op::WRITE128 => {
                m[o..o + 8].copy_from_slice(&p.arg1.to_le_bytes());
                m[o + 8..o + 16].copy_from_slice(&p.arg2.to_le_bytes());
            }
            op::BULK_READ => h.bulk_in.borrow_mut()[..n].copy_from_slice(&m[o..o + n]),
            op::BULK_WRITE => m[o..o + n].copy_from_slice(&h.bulk_out.borrow()[..n]),
            _ if p.opcode & op::WIDTH32 != 0 => return Err(status::INVALID),
            _ => {
                let old = word(m);
                let new = match base {
                    op::READ => None,
                    op::WRITE => Some(p.arg1),
                    op::FETCH_ADD => Some(old.wrapping_add(p.arg1)),
                    op::CAS => (old == p.arg1).then_some(p.arg2),
                    op::SWAP => Some(p.arg1),
                    _ => return Err(status::INVALID),
                };
                value[..8].copy_from_slice(&old.to_le_bytes());
                if let Some(v) = new {
                    m[o..o + 8].copy_from_slice(&v.to_le_bytes());
                }
            }
        }
        Ok(())
    }
}

impl Cluster {
    /// INDEXED as the service applies it: every entry checked (the issuer's tree's page of
    /// `home`, aligned), then all applied in order.
    fn indexed(
        s: &mut State,
        h: &Handle,
        home: u16,
        p: &Payload,
        value: &mut [u8; 32],
    ) -> Result<(), u8> {
        use unimem_wire::gsas::indexed::{Batch, ADD, GATHER, RESULT_LEN, SCATTER_IF};
        let batch = Batch::from_arg1(p.arg1)?;
        let ops = h.bulk_out.borrow()[..batch.operands_len()].to_vec();
        let size = usize::from(batch.elem_size);
        let mut at = Vec::new();
        for i in 0..batch.count as usize {
            let (a, v) = batch.entry(&ops, i).ok_or(status::INVALID)?;
            let off = batch.check_address(home, a)?;
            match s.owner.get(&(home, off / PAGE_SIZE)) {
                None => return Err(status::FAULT),
                Some((t, ..)) if *t != h.tree => return Err(status::DENIED),
                _ => {}
            }
            at.push((off as usize, v));
        }
        let m = s.mem.get_mut(&home).ok_or(status::FAULT)?;
        let mut skip = 0;
        if batch.kind == SCATTER_IF {
            let (o, expected) = at[0];
            let mut b = [0u8; 8];
            b[..size].copy_from_slice(&m[o..o + size]);
            if !batch.judge_guard(u64::from_le_bytes(b), expected, value) {
                return Ok(());
            }
            skip = 1;
        }
        for (i, (o, v)) in at.into_iter().enumerate().skip(skip) {
            let mut b = [0u8; 8];
            b[..size].copy_from_slice(&m[o..o + size]);
            let old = u64::from_le_bytes(b);
            let new = match batch.kind {
                GATHER => {
                    h.bulk_in.borrow_mut()[i * RESULT_LEN..i * RESULT_LEN + 8]
                        .copy_from_slice(&old.to_le_bytes());
                    continue;
                }
                ADD => batch.add(old, v),
                _ => v,
            };
            m[o..o + size].copy_from_slice(&new.to_le_bytes()[..size]);
        }
        value[..8].copy_from_slice(&u64::from(batch.count).to_le_bytes());
        Ok(())
    }
}

/// One handle's transport: its response slots and bulk pages.
pub struct Handle {
    c: Cluster,
    node: u16,
    iface: u32,
    tree: u32,
    generation: u32,
    slots: RefCell<BTreeMap<u16, Response>>,
    bulk_in: RefCell<Vec<u8>>,
    bulk_out: RefCell<Vec<u8>>,
}

impl Drop for Handle {
    fn drop(&mut self) {
        let mut s = self.c.s.lock().unwrap();
        if s.ifaces.get(&(self.node, self.iface)).map(|e| e.1) == Some(self.generation) {
            s.ifaces.remove(&(self.node, self.iface));
        }
    }
}

impl Transport for Handle {
    fn node(&self) -> u16 {
        self.node
    }
    fn iface(&self) -> u32 {
        self.iface
    }
    fn prot_id(&self) -> u32 {
        self.tree
    }
    fn submit(&self, home: u16, _seq: u32, req: &Payload) {
        // Never polling (`send` says so), but a slot request is served like a SEND anyway.
        let _ = self.send(home, req);
    }
    fn kick(&self, _home: u16) -> Result<(), Errno> {
        Ok(())
    }
    fn send(&self, home: u16, req: &Payload) -> Result<bool, Errno> {
        let mut r = Response {
            opcode: req.opcode,
            address: req.address,
            ..Default::default()
        };
        r.status = match self.c.apply(self, home, req, &mut r.value) {
            Ok(()) => status::OK,
            Err(s) => s,
        };
        let mut slots = self.slots.borrow_mut();
        r.seq = slots.get(&home).map_or(0, |s| s.seq).wrapping_add(1);
        slots.insert(home, r);
        // Let other threads' requests in between this thread's: more interleavings.
        std::thread::yield_now();
        Ok(false)
    }
    fn seq(&self, home: u16) -> u32 {
        self.slots.borrow().get(&home).map_or(0, |s| s.seq)
    }
    fn response(&self, home: u16) -> Response {
        self.slots.borrow().get(&home).copied().unwrap_or_default()
    }
    fn read_bulk_in(&self, dst: &mut [u8]) {
        dst.copy_from_slice(&self.bulk_in.borrow()[..dst.len()]);
    }
    fn write_bulk_out(&self, src: &[u8]) {
        self.bulk_out.borrow_mut()[..src.len()].copy_from_slice(src);
    }
    fn pause(&self, _: Pause) {
        std::thread::yield_now();
    }
}
