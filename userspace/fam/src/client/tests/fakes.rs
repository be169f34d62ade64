//! The fakes: GSAS services of every node behind [`gsas::Transport`], and famd behind
//! [`Wire`].

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, HashSet, VecDeque};
use std::ffi::c_void;
use std::num::NonZeroUsize;
use std::ptr::NonNull;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use gsas::{Gsas, Pause, Transport, WaitPolicy};
use nix::errno::Errno;
use unimem_wire::fam::{self, Reply, Request, Response};
use unimem_wire::gsas::{addr, node_of, offset_of, op, status, Response as GResponse};
use unimem_wire::packet::Payload;

use crate::client::memory::{Memory, PageMap, Pool};
use crate::client::{Client, Link, Options, Pe, Wire};
use crate::meta::{Extent, Item, ItemId, RegionId};
use crate::Result;

const NODE_BYTES: usize = 1 << 20;

#[derive(Default)]
struct Shared {
    mem: HashMap<u16, Vec<u8>>,
    denied: HashSet<u16>,
    requests: u64,
    /// COPY requests served (memory-side copies).
    copies: u64,
    /// INDEXED requests served.
    indexed: u64,
    /// KEEP requests: address, and whether it kept (else let go).
    keeps: Vec<(u64, bool)>,
    /// Before the next CAS, this (node, offset) word is set to this value (another writer).
    interfere: Option<(u16, u64, u64)>,
}

/// GSAS memory of every node, shared by the handles of a test.
#[derive(Clone)]
pub struct Gas {
    node: u16,
    shared: Arc<Mutex<Shared>>,
}

impl Gas {
    pub fn new(node: u16) -> Gas {
        Gas {
            node,
            shared: Arc::default(),
        }
    }

    pub fn peek(&self, node: u16, off: u64, len: usize) -> Vec<u8> {
        let mut s = self.shared.lock().unwrap();
        let m = s.mem.entry(node).or_insert_with(|| vec![0; NODE_BYTES]);
        m[off as usize..off as usize + len].to_vec()
    }

    pub fn deny(&self, node: u16) {
        self.shared.lock().unwrap().denied.insert(node);
    }

    pub fn requests(&self) -> u64 {
        self.shared.lock().unwrap().requests
    }

    /// INDEXED requests served so far.
    pub fn indexed(&self) -> u64 {
        self.shared.lock().unwrap().indexed
    }

    /// KEEP requests served so far: address, and whether it kept (else let go).
    pub fn keeps(&self) -> Vec<(u64, bool)> {
        self.shared.lock().unwrap().keeps.clone()
    }

    /// COPY requests served so far.
    pub fn copies(&self) -> u64 {
        self.shared.lock().unwrap().copies
    }

    pub fn interfere_once(&self, node: u16, off: u64, v: u64) {
        self.shared.lock().unwrap().interfere = Some((node, off, v));
    }

    /// A handle over this memory.
    pub fn handle(&self) -> Gsas<FakeTransport> {
        let g = Gsas::with_transport(FakeTransport {
            gas: self.clone(),
            slots: RefCell::default(),
            bulk_in: RefCell::new(vec![0; 4096]),
            bulk_out: RefCell::new(vec![0; 4096]),
            seq: Cell::new(0),
        });
        g.set_policy(WaitPolicy {
            spins: 1,
            yields: 1,
            sleep_min: Duration::from_micros(1),
            sleep_max: Duration::from_micros(10),
            timeout: Duration::from_secs(5),
            answer_sleep_after: None,
        });
        g
    }

    pub fn pool(&self) -> Pool {
        let g = self.clone();
        Pool::new(Box::new(
            move || Ok(Box::new(g.handle()) as Box<dyn Memory>),
        ))
    }

    pub fn with<R>(&self, f: impl FnOnce(&dyn Memory) -> Result<R>) -> Result<R> {
        f(&self.handle())
    }
}

/// One handle's interface: its response slots and bulk pages.
pub struct FakeTransport {
    gas: Gas,
    slots: RefCell<HashMap<u16, GResponse>>,
    bulk_in: RefCell<Vec<u8>>,
    bulk_out: RefCell<Vec<u8>>,
    seq: Cell<u32>,
}

impl FakeTransport {
    fn apply(&self, home: u16, p: &Payload, value: &mut [u8; 32]) -> u8 {
        let mut s = self.gas.shared.lock().unwrap();
        s.requests += 1;
        if node_of(p.address) != home {
            return status::FAULT;
        }
        if s.denied.contains(&home) {
            return status::DENIED;
        }
        if p.opcode == op::KEEP {
            s.keeps.push((p.address, p.arg1 == 1));
            value[..8].copy_from_slice(&6u64.to_le_bytes());
            return status::OK;
        }
        if p.opcode == op::INDEXED {
            s.indexed += 1;
            let m = s.mem.entry(home).or_insert_with(|| vec![0; NODE_BYTES]);
            return self.indexed(m, home, p);
        }
        let w32 = p.opcode & op::WIDTH32 != 0;
        let base = p.opcode & !op::WIDTH32;
        let o = offset_of(p.address) as usize;
        let size = match base {
            op::BULK_READ | op::BULK_WRITE => p.arg1 as usize,
            op::COPY => p.arg2 as usize,
            op::READ128 | op::WRITE128 | op::CAS128 => 16,
            _ if w32 => 4,
            _ => 8,
        };
        if o % size.clamp(1, 16) != 0 && !matches!(base, op::BULK_READ | op::BULK_WRITE | op::COPY)
        {
            return status::UNALIGNED;
        }
        if base == op::CAS {
            if let Some((n, off, v)) = s.interfere.take() {
                let m = s.mem.entry(n).or_insert_with(|| vec![0; NODE_BYTES]);
                m[off as usize..off as usize + 8].copy_from_slice(&v.to_le_bytes());
            }
        }
        let m = s.mem.entry(home).or_insert_with(|| vec![0; NODE_BYTES]);
        if o + size > m.len() {
            return status::FAULT;
        }
        match base {
            op::BULK_READ => {
                self.bulk_in.borrow_mut()[..size].copy_from_slice(&m[o..o + size]);
                return status::OK;
            }
            op::BULK_WRITE => {
                m[o..o + size].copy_from_slice(&self.bulk_out.borrow()[..size]);
                return status::OK;
            }
            op::READ128 => {
                value[..16].copy_from_slice(&m[o..o + 16]);
                return status::OK;
            }
            op::WRITE128 => {
                m[o..o + 8].copy_from_slice(&p.arg1.to_le_bytes());
                m[o + 8..o + 16].copy_from_slice(&p.arg2.to_le_bytes());
                return status::OK;
            }
            op::CAS128 => {
                let ops = self.bulk_out.borrow()[..32].to_vec();
                value[..16].copy_from_slice(&m[o..o + 16]);
                if m[o..o + 16] == ops[..16] {
                    m[o..o + 16].copy_from_slice(&ops[16..]);
                }
                return status::OK;
            }
            op::COPY => {
                if node_of(p.arg1) != home {
                    return status::FAULT;
                }
                let from = offset_of(p.arg1) as usize;
                if from + size > m.len() {
                    return status::FAULT;
                }
                m.copy_within(from..from + size, o);
                s.copies += 1;
                return status::OK;
            }
            _ => {}
        }
        let old = if w32 {
            u64::from(u32::from_le_bytes(m[o..o + 4].try_into().unwrap()))
        } else {
            u64::from_le_bytes(m[o..o + 8].try_into().unwrap())
        };
        let new = match base {
            op::READ => None,
            op::WRITE => Some(p.arg1),
            op::FETCH_ADD => Some(old.wrapping_add(p.arg1)),
            op::CAS => (old == p.arg1).then_some(p.arg2),
            op::SWAP => Some(p.arg1),
            op::FETCH_AND => Some(old & p.arg1),
            op::FETCH_OR => Some(old | p.arg1),
            op::FETCH_XOR => Some(old ^ p.arg1),
            op::FETCH_MIN | op::FETCH_MAX | op::FETCH_UMIN | op::FETCH_UMAX => {
                let a = if w32 {
                    p.arg1 & u64::from(u32::MAX)
                } else {
                    p.arg1
                };
                let signed = |v: u64| {
                    if w32 {
                        i64::from(v as u32 as i32)
                    } else {
                        v as i64
                    }
                };
                Some(match base {
                    op::FETCH_MIN if signed(a) < signed(old) => a,
                    op::FETCH_MAX if signed(a) > signed(old) => a,
                    op::FETCH_UMIN => a.min(old),
                    op::FETCH_UMAX => a.max(old),
                    _ => old,
                })
            }
            _ => return status::INVALID,
        };
        if let Some(v) = new {
            if w32 {
                m[o..o + 4].copy_from_slice(&(v as u32).to_le_bytes());
            } else {
                m[o..o + 8].copy_from_slice(&v.to_le_bytes());
            }
        }
        value[..8].copy_from_slice(&old.to_le_bytes());
        status::OK
    }
}

impl FakeTransport {
    /// INDEXED as the home's service applies it: every entry checked, then all applied.
    fn indexed(&self, m: &mut [u8], home: u16, p: &Payload) -> u8 {
        use unimem_wire::gsas::indexed::{Batch, ADD, GATHER};
        let b = match Batch::from_arg1(p.arg1) {
            Ok(b) => b,
            Err(st) => return st,
        };
        let ops = self.bulk_out.borrow()[..b.operands_len()].to_vec();
        let size = usize::from(b.elem_size);
        let entries: Vec<(u64, u64)> = (0..b.count as usize)
            .map(|i| b.entry(&ops, i).unwrap())
            .collect();
        for &(a, _) in &entries {
            match b.check_address(home, a) {
                Ok(o) if o as usize + size <= m.len() => {}
                Ok(_) => return status::FAULT,
                Err(st) => return st,
            }
        }
        let mut results = self.bulk_in.borrow_mut();
        for (i, &(a, v)) in entries.iter().enumerate() {
            let o = offset_of(a) as usize;
            let mut w = [0u8; 8];
            w[..size].copy_from_slice(&m[o..o + size]);
            let old = u64::from_le_bytes(w);
            let new = match b.kind {
                GATHER => {
                    results[i * 8..i * 8 + 8].copy_from_slice(&old.to_le_bytes());
                    continue;
                }
                ADD => b.add(old, v),
                _ => v,
            };
            m[o..o + size].copy_from_slice(&new.to_le_bytes()[..size]);
        }
        status::OK
    }
}

impl Transport for FakeTransport {
    fn node(&self) -> u16 {
        self.gas.node
    }
    fn iface(&self) -> u32 {
        3
    }
    fn prot_id(&self) -> u32 {
        0x1_0001
    }
    fn send(&self, home: u16, req: &Payload) -> std::result::Result<bool, Errno> {
        let mut value = [0u8; 32];
        let st = self.apply(home, req, &mut value);
        self.seq.set(self.seq.get().wrapping_add(1));
        self.slots.borrow_mut().insert(
            home,
            GResponse {
                seq: self.seq.get(),
                status: st,
                opcode: req.opcode,
                address: req.address,
                value,
            },
        );
        Ok(false)
    }
    fn submit(&self, home: u16, _seq: u32, req: &Payload) {
        let _ = self.send(home, req);
    }
    fn kick(&self, _home: u16) -> std::result::Result<(), Errno> {
        Ok(())
    }
    fn seq(&self, home: u16) -> u32 {
        self.slots.borrow().get(&home).map_or(0, |r| r.seq)
    }
    fn response(&self, home: u16) -> GResponse {
        self.slots.borrow().get(&home).copied().unwrap_or_default()
    }
    fn read_bulk_in(&self, dst: &mut [u8]) {
        let n = dst.len();
        dst.copy_from_slice(&self.bulk_in.borrow()[..n]);
    }
    fn write_bulk_out(&self, src: &[u8]) {
        self.bulk_out.borrow_mut()[..src.len()].copy_from_slice(src);
    }
    fn pause(&self, how: Pause) {
        if let Pause::Sleep(d) = how {
            std::thread::sleep(d);
        }
    }
}

impl PageMap for FakeTransport {
    fn map_pages(
        &self,
        _addr: u64,
        _len: usize,
        _fixed: Option<NonZeroUsize>,
        _write: bool,
    ) -> gsas::Result<NonNull<c_void>> {
        Err(gsas::Error::Argument("the fake cannot map".into()))
    }
}

type Handler = Box<dyn FnMut(u8, Request<'_>) -> Option<Response<'static>> + Send>;

/// famd: `handler` answers each request (None: no answer).
pub struct FakeFamd {
    handler: Handler,
    queue: VecDeque<Vec<u8>>,
    /// Precede each answer with one to another request id, and a message that does not decode.
    pub stale: bool,
}

impl FakeFamd {
    pub fn new(
        handler: impl FnMut(u8, Request<'_>) -> Option<Response<'static>> + Send + 'static,
    ) -> FakeFamd {
        FakeFamd {
            handler: Box::new(handler),
            queue: VecDeque::new(),
            stale: false,
        }
    }
}

impl Wire for FakeFamd {
    fn send(&mut self, _msg_id: u8, msg: &[u8], _deadline: Instant) -> Result<()> {
        let (id, req) = Request::decode(msg).expect("the client sends valid requests");
        if let Request::Hello { version } = req {
            let r = Response::ok(fam::op::HELLO, Reply::Hello { version });
            let mut b = vec![0u8; fam::MAX_MESSAGE];
            let n = r.encode(id, &mut b).unwrap();
            b.truncate(n);
            self.queue.push_back(b);
            return Ok(());
        }
        if let Some(r) = (self.handler)(req.op(), req) {
            let mut b = vec![0u8; fam::MAX_MESSAGE];
            if self.stale {
                let n = r.encode(id.wrapping_add(100), &mut b).unwrap();
                self.queue.push_back(b[..n].to_vec());
                self.queue.push_back(vec![0xff, 1, 2]);
            }
            let n = r.encode(id, &mut b).unwrap();
            b.truncate(n);
            self.queue.push_back(b);
        }
        Ok(())
    }
    fn recv(&mut self, deadline: Instant) -> Result<Option<Vec<u8>>> {
        if let Some(m) = self.queue.pop_front() {
            return Ok(Some(m));
        }
        std::thread::sleep(deadline.saturating_duration_since(Instant::now()));
        Ok(None)
    }
}

/// A client of node `gas.node` over the fakes.
pub fn client(gas: &Gas, famd: FakeFamd) -> Client {
    let link = Link::new(Box::new(famd), Duration::from_secs(5));
    link.hello().unwrap();
    Client::with_parts(Options::default(), 0, link, gas.pool(), Pe::SINGLE)
}

/// A 20000-byte item in 4 KiB stripes over nodes 1 and 2: node 1 has 8 KiB at 0x10000 and
/// 4 KiB at 0x40000, node 2 8 KiB at 0x10000.
pub fn striped_item() -> Item {
    Item {
        id: ItemId(5),
        region: RegionId(1),
        name: "striped".into(),
        size: 20000,
        uid: 1000,
        gid: 1000,
        mode: 0o600,
        stripe: Some(4096),
        extents: vec![
            Extent {
                node: 1,
                addr: addr(1, 0x10000),
                len: 8192,
            },
            Extent {
                node: 2,
                addr: addr(2, 0x10000),
                len: 8192,
            },
            Extent {
                node: 1,
                addr: addr(1, 0x40000),
                len: 4096,
            },
        ],
    }
}

/// famd's description of item `id` of region 1, named "x", with `extents` (at most the first
/// MAX_EXTENTS carried).
pub fn item_desc_reply(op: u8, id: u64, size: u64, extents: &[fam::Extent]) -> Response<'static> {
    Response::ok(
        op,
        Reply::Item(fam::ItemDesc {
            id,
            region: 1,
            name: "x",
            size,
            uid: 1000,
            gid: 1000,
            mode: 0o640,
            stripe: 0,
            extent_count: extents.len() as u32,
            extents: fam::Extents::prefix(extents),
        }),
    )
}
