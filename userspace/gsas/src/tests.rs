//! Unit tests against a fake atomic service: the [`Transport`] trait with a service that
//! applies requests to a `Vec<u8>` per node and writes response slots as the kernel's does.

use crate::*;
use nix::errno::Errno;
use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;
use unimem_wire::gsas::{Response, RESPONSE_LEN};
use unimem_wire::packet::Payload;

const NODE_PAGES: u64 = 32;
const MY_TREE: u32 = 0x01_0001;
const OTHER_TREE: u32 = 0x02_0005;

/// (node, page) -> (tree, first page of its allocation, pages).
type Owners = BTreeMap<(u16, u64), (u32, u64, u64)>;

/// A fake service for every node, answering the one handle above it.
struct Fake {
    node: u16,
    mem: RefCell<BTreeMap<u16, Vec<u8>>>,
    owner: RefCell<Owners>,
    slots: RefCell<BTreeMap<u16, [u8; RESPONSE_LEN]>>,
    bulk_in: RefCell<Vec<u8>>,
    bulk_out: RefCell<Vec<u8>>,
    /// Requests not yet answered: (home, payload, pauses left).
    pending: RefCell<VecDeque<(u16, Payload, u32)>>,
    /// Pauses before each answer.
    delay: Cell<u32>,
    /// The next N requests are never answered.
    lose: Cell<u32>,
    /// Before the next answer, write this (stale) answer first, as a separate slot update.
    stale: RefCell<Option<(u8, u64)>>,
    /// The next N SENDs fail with EAGAIN.
    eagain: Cell<u32>,
    /// Answer the next request with this status instead.
    force_status: Cell<Option<u8>>,
    /// Answers this many requests with `STALLED` (applying nothing) first.
    stalled: Cell<u32>,
    /// SEND fails with this errno.
    send_errno: Cell<Option<Errno>>,
    sent: RefCell<Vec<(u16, Payload)>>,
    pauses: RefCell<Vec<Pause>>,
    /// WAITs answered for the fake child.
    waits: Cell<u32>,
    /// The service polls: SEND says so, and slot requests are taken at once.
    polling: Cell<bool>,
    /// Slot requests: (home, seq, payload).
    submitted: RefCell<Vec<(u16, u32, Payload)>>,
    /// Slot requests a sleeping service has not seen yet (until a KICK).
    parked: RefCell<Vec<(u16, Payload)>>,
    kicks: Cell<u32>,
    /// `WAIT_ANSWER`s: (home, seq); `None`: the fake has none (`ENOSYS`), as a driver without it.
    answer_waits: RefCell<Option<Vec<(u16, u32)>>>,
}

impl Fake {
    fn new() -> Self {
        Fake {
            node: 1,
            mem: RefCell::new(BTreeMap::new()),
            owner: RefCell::new(BTreeMap::new()),
            slots: RefCell::new(BTreeMap::new()),
            bulk_in: RefCell::new(vec![0; BULK_MAX as usize]),
            bulk_out: RefCell::new(vec![0; BULK_MAX as usize]),
            pending: RefCell::new(VecDeque::new()),
            delay: Cell::new(0),
            lose: Cell::new(0),
            stale: RefCell::new(None),
            eagain: Cell::new(0),
            force_status: Cell::new(None),
            stalled: Cell::new(0),
            send_errno: Cell::new(None),
            sent: RefCell::new(Vec::new()),
            pauses: RefCell::new(Vec::new()),
            waits: Cell::new(0),
            answer_waits: RefCell::new(None),
            polling: Cell::new(false),
            submitted: RefCell::new(Vec::new()),
            parked: RefCell::new(Vec::new()),
            kicks: Cell::new(0),
        }
    }

    fn set_seq(&self, home: u16, seq: u32) {
        let mut slots = self.slots.borrow_mut();
        let s = slots.entry(home).or_insert([0; RESPONSE_LEN]);
        s[..4].copy_from_slice(&seq.to_le_bytes());
    }

    fn write_slot(&self, home: u16, mut r: Response) {
        let mut slots = self.slots.borrow_mut();
        let s = slots.entry(home).or_insert([0; RESPONSE_LEN]);
        r.seq = Response::decode(s).seq.wrapping_add(1);
        *s = r.encode();
    }

    /// Gives pages of `node` to `tree` directly (another tree's allocation).
    fn give(&self, node: u16, first: u64, pages: u64, tree: u32) {
        for p in first..first + pages {
            self.owner
                .borrow_mut()
                .insert((node, p), (tree, first, pages));
        }
    }

    /// Writes the stale answer if one is set: true if it did (the real one comes later).
    fn answer_stale(&self, home: u16) -> bool {
        let Some((opcode, address)) = self.stale.borrow_mut().take() else {
            return false;
        };
        self.write_slot(
            home,
            Response {
                opcode,
                address,
                value: [0xee; 32],
                ..Default::default()
            },
        );
        true
    }

    fn answer(&self, home: u16, p: Payload) {
        let mut r = Response {
            opcode: p.opcode,
            address: p.address,
            ..Default::default()
        };
        let stalled = self.stalled.get();
        if stalled > 0 {
            self.stalled.set(stalled - 1);
        }
        r.status = match self.force_status.take() {
            Some(s) => s,
            None if stalled > 0 => status::STALLED,
            None => match self.apply(home, &p, &mut r.value) {
                Ok(()) => status::OK,
                Err(s) => s,
            },
        };
        self.write_slot(home, r);
    }

    fn apply(&self, home: u16, p: &Payload, value: &mut [u8; 32]) -> std::result::Result<(), u8> {
        unimem_wire::gsas::check(p).map_err(|e| e.status())?;
        let base = op_base(p.opcode);
        match base {
            op::NOP => return Ok(()),
            // remoteFork as the kernel's fork.rs answers it: the blob checked, a child that
            // runs for two WAITs and exits with status 3; `/nonexistent` fails with ENOENT.
            op::FORK => {
                let len = p.arg1 as usize;
                if len == 0 || len > fork::BLOB_MAX {
                    return Err(status::INVALID);
                }
                let blob = self.bulk_out.borrow()[..len].to_vec();
                fork::check(&blob).map_err(|_| status::INVALID)?;
                if blob.starts_with(b"/nonexistent\0") {
                    value[..8].copy_from_slice(&(Errno::ENOENT as u64).to_le_bytes());
                    return Err(status::EXEC_FAILED);
                }
                let id = fork::child_id(home, 7);
                self.waits.set(0);
                value[..8].copy_from_slice(&id.to_le_bytes());
                return Ok(());
            }
            op::WAIT => {
                if p.address != fork::child_id(home, 7) || self.waits.get() > 2 {
                    return Err(status::NO_CHILD);
                }
                self.waits.set(self.waits.get() + 1);
                if self.waits.get() <= 2 {
                    return Err(status::RUNNING);
                }
                value[..8].copy_from_slice(&(3u64 << 8).to_le_bytes());
                return Ok(());
            }
            op::ALLOC => {
                let n = p.arg1;
                if n == 0 || n > MAX_ALLOC_PAGES {
                    return Err(status::INVALID);
                }
                let owner = self.owner.borrow();
                let first = (1..NODE_PAGES)
                    .find(|&f| {
                        f + n <= NODE_PAGES && (f..f + n).all(|q| !owner.contains_key(&(home, q)))
                    })
                    .ok_or(status::NO_MEMORY)?;
                drop(owner);
                self.give(home, first, n, MY_TREE);
                let mut mem = self.mem.borrow_mut();
                let m = mem
                    .entry(home)
                    .or_insert_with(|| vec![0; (NODE_PAGES * PAGE_SIZE) as usize]);
                m[(first * PAGE_SIZE) as usize..((first + n) * PAGE_SIZE) as usize].fill(0);
                value[..8].copy_from_slice(&addr(home, first * PAGE_SIZE).to_le_bytes());
                return Ok(());
            }
            op::INDEXED => return self.indexed(home, p, value),
            _ => {}
        }
        if node_of(p.address) != home {
            return Err(status::FAULT);
        }
        let off = offset_of(p.address);
        let len = match base {
            op::BULK_READ | op::BULK_WRITE => {
                if p.arg1 == 0 || p.arg1 > BULK_MAX {
                    return Err(status::INVALID);
                }
                p.arg1
            }
            op::FREE => 1,
            _ => op::size(p.opcode).unwrap(),
        };
        let (first, last) = (off / PAGE_SIZE, (off + len - 1) / PAGE_SIZE);
        let owner = self.owner.borrow();
        for pg in first..=last {
            match owner.get(&(home, pg)) {
                None => return Err(status::FAULT),
                Some((t, ..)) if *t != MY_TREE => return Err(status::DENIED),
                _ => {}
            }
        }
        let (_, start, pages) = owner[&(home, first)];
        drop(owner);
        if base == op::FREE {
            if start * PAGE_SIZE != off {
                return Err(status::FAULT);
            }
            for q in start..start + pages {
                self.owner.borrow_mut().remove(&(home, q));
            }
            return Ok(());
        }
        let mut mem = self.mem.borrow_mut();
        let m = mem.get_mut(&home).unwrap();
        let o = off as usize;
        let w32 = p.opcode & op::WIDTH32 != 0;
        let rd = |m: &Vec<u8>| -> u64 {
            if w32 {
                u64::from(u32::from_le_bytes(m[o..o + 4].try_into().unwrap()))
            } else {
                u64::from_le_bytes(m[o..o + 8].try_into().unwrap())
            }
        };
        let wr = |m: &mut Vec<u8>, v: u64| {
            if w32 {
                m[o..o + 4].copy_from_slice(&(v as u32).to_le_bytes());
            } else {
                m[o..o + 8].copy_from_slice(&v.to_le_bytes());
            }
        };
        let old = rd(m);
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
                    op::FETCH_MIN => {
                        if signed(a) < signed(old) {
                            a
                        } else {
                            old
                        }
                    }
                    op::FETCH_MAX => {
                        if signed(a) > signed(old) {
                            a
                        } else {
                            old
                        }
                    }
                    op::FETCH_UMIN => a.min(old),
                    _ => a.max(old),
                })
            }
            op::COPY => {
                // Source on the same fake node's memory, as the service requires.
                let (n, from) = (p.arg2 as usize, offset_of(p.arg1) as usize);
                let bytes = m[from..from + n].to_vec();
                m[o..o + n].copy_from_slice(&bytes);
                return Ok(());
            }
            op::CAS128 => {
                let ops = self.bulk_out.borrow()[..32].to_vec();
                value[..16].copy_from_slice(&m[o..o + 16]);
                if m[o..o + 16] == ops[..16] {
                    m[o..o + 16].copy_from_slice(&ops[16..32]);
                }
                return Ok(());
            }
            op::READ128 | op::READ256 => {
                let n = len as usize;
                value[..n].copy_from_slice(&m[o..o + n]);
                return Ok(());
            }
            op::WRITE128 => {
                m[o..o + 8].copy_from_slice(&p.arg1.to_le_bytes());
                m[o + 8..o + 16].copy_from_slice(&p.arg2.to_le_bytes());
                return Ok(());
            }
            op::BULK_READ => {
                let n = len as usize;
                self.bulk_in.borrow_mut()[..n].copy_from_slice(&m[o..o + n]);
                return Ok(());
            }
            op::BULK_WRITE => {
                let n = len as usize;
                m[o..o + n].copy_from_slice(&self.bulk_out.borrow()[..n]);
                return Ok(());
            }
            _ => return Err(status::INVALID),
        };
        value[..8].copy_from_slice(&old.to_le_bytes());
        if let Some(v) = new {
            wr(m, v);
        }
        Ok(())
    }

    /// INDEXED as `kernel/gsas/indexed.rs` serves it: every entry checked, then all applied.
    fn indexed(&self, home: u16, p: &Payload, value: &mut [u8; 32]) -> std::result::Result<(), u8> {
        use unimem_wire::gsas::indexed::{Batch, ADD, GATHER, SCATTER_IF};
        if node_of(p.address) != home {
            return Err(status::FAULT);
        }
        let b = Batch::from_arg1(p.arg1)?;
        let ops = self.bulk_out.borrow()[..b.operands_len()].to_vec();
        let size = u64::from(b.elem_size);
        let entries: Vec<(u64, u64)> = (0..b.count as usize)
            .map(|i| b.entry(&ops, i).unwrap())
            .collect();
        for &(a, _) in &entries {
            let off = b.check_address(home, a)?;
            match self.owner.borrow().get(&(home, off / PAGE_SIZE)) {
                None => return Err(status::FAULT),
                Some((t, ..)) if *t != MY_TREE => return Err(status::DENIED),
                _ => {}
            }
        }
        let mut mem = self.mem.borrow_mut();
        let m = mem.get_mut(&home).unwrap();
        let mut results = self.bulk_in.borrow_mut();
        let load = |m: &[u8], a: u64| {
            let o = offset_of(a) as usize;
            let mut w = [0u8; 8];
            w[..size as usize].copy_from_slice(&m[o..o + size as usize]);
            u64::from_le_bytes(w)
        };
        let skip = if b.kind == SCATTER_IF {
            if !b.judge_guard(load(m, entries[0].0), entries[0].1, value) {
                return Ok(());
            }
            1
        } else {
            0
        };
        for (i, &(a, v)) in entries.iter().enumerate().skip(skip) {
            let o = offset_of(a) as usize;
            let old = load(m, a);
            let new = match b.kind {
                GATHER => {
                    results[i * 8..i * 8 + 8].copy_from_slice(&old.to_le_bytes());
                    continue;
                }
                ADD => b.add(old, v),
                _ => v,
            };
            m[o..o + size as usize].copy_from_slice(&new.to_le_bytes()[..size as usize]);
        }
        Ok(())
    }

    fn run_pending(&self) {
        loop {
            let next = {
                let mut q = self.pending.borrow_mut();
                match q.front_mut() {
                    Some((_, _, 0)) => q.pop_front(),
                    Some((_, _, n)) => {
                        *n -= 1;
                        None
                    }
                    None => None,
                }
            };
            match next {
                Some((home, p, _)) if self.answer_stale(home) => {
                    self.pending.borrow_mut().push_front((home, p, 2));
                    break;
                }
                Some((home, p, _)) => self.answer(home, p),
                None => break,
            }
        }
    }
}

fn op_base(opcode: u8) -> u8 {
    if op::valid(opcode) {
        opcode & !op::WIDTH32
    } else {
        opcode
    }
}

impl Transport for &Fake {
    fn node(&self) -> u16 {
        self.node
    }
    fn iface(&self) -> u32 {
        3
    }
    fn prot_id(&self) -> u32 {
        MY_TREE
    }
    fn send(&self, home: u16, req: &Payload) -> std::result::Result<bool, Errno> {
        if let Some(e) = self.send_errno.get() {
            return Err(e);
        }
        if self.eagain.get() > 0 {
            self.eagain.set(self.eagain.get() - 1);
            return Err(Errno::EAGAIN);
        }
        self.sent.borrow_mut().push((home, *req));
        if self.lose.get() > 0 {
            self.lose.set(self.lose.get() - 1);
            return Ok(self.polling.get());
        }
        self.pending
            .borrow_mut()
            .push_back((home, *req, self.delay.get()));
        self.run_pending();
        Ok(self.polling.get())
    }
    fn submit(&self, home: u16, seq: u32, req: &Payload) {
        self.submitted.borrow_mut().push((home, seq, *req));
        if self.polling.get() {
            self.pending.borrow_mut().push_back((home, *req, 0));
            self.run_pending();
        } else {
            self.parked.borrow_mut().push((home, *req));
        }
    }
    fn kick(&self, _home: u16) -> std::result::Result<(), Errno> {
        self.kicks.set(self.kicks.get() + 1);
        for (home, req) in self.parked.borrow_mut().drain(..) {
            self.pending.borrow_mut().push_back((home, req, 0));
        }
        self.run_pending();
        Ok(())
    }
    fn seq(&self, home: u16) -> u32 {
        // The service makes progress while the handle looks (spins) too.
        self.run_pending();
        self.response(home).seq
    }
    fn response(&self, home: u16) -> Response {
        Response::decode(self.slots.borrow().get(&home).unwrap_or(&[0; RESPONSE_LEN]))
    }
    fn read_bulk_in(&self, dst: &mut [u8]) {
        let n = dst.len();
        dst.copy_from_slice(&self.bulk_in.borrow()[..n]);
    }
    fn write_bulk_out(&self, src: &[u8]) {
        self.bulk_out.borrow_mut()[..src.len()].copy_from_slice(src);
    }
    fn wait_answer(
        &self,
        home: u16,
        seq: u32,
        _timeout: Duration,
    ) -> std::result::Result<bool, Errno> {
        self.answer_waits
            .borrow_mut()
            .as_mut()
            .ok_or(Errno::ENOSYS)?
            .push((home, seq));
        // The home answers while the thread sleeps, and rings.
        for r in self.pending.borrow_mut().iter_mut() {
            r.2 = 0;
        }
        self.run_pending();
        Ok(self.response(home).seq != seq)
    }
    fn pause(&self, how: Pause) {
        self.pauses.borrow_mut().push(how);
        if let Pause::Sleep(d) = how {
            std::thread::sleep(d);
        }
        self.run_pending();
    }
}

fn handle(f: &Fake) -> Gsas<&Fake> {
    let g = Gsas::with_transport(f);
    g.set_policy(WaitPolicy {
        spins: 4,
        yields: 8,
        sleep_min: Duration::from_micros(1),
        sleep_max: Duration::from_micros(50),
        // Far above what the fakes' delays take even on a loaded host; the tests of timeouts
        // set their own.
        timeout: Duration::from_secs(10),
        answer_sleep_after: None,
    });
    g
}

#[test]
fn every_operation_encodes_and_decodes() {
    let f = Fake::new();
    let g = handle(&f);
    let a = g.alloc_shared_page(2, 2).unwrap();
    assert_eq!((node_of(a), offset_of(a)), (2, PAGE_SIZE));
    let (home, p) = f.sent.borrow()[0];
    assert_eq!((home, p.opcode, p.arg1), (2, op::ALLOC, 2));

    g.write(a, 41).unwrap();
    assert_eq!(g.read(a).unwrap(), 41);
    assert_eq!(g.fetch_add(a, 1).unwrap(), 41);
    assert_eq!(g.fetch_add(a, u64::MAX).unwrap(), 42, "wrapping add of -1");
    assert_eq!(g.read(a).unwrap(), 41);
    assert_eq!(
        g.cas(a, 40, 7).unwrap(),
        41,
        "failed CAS returns the old value"
    );
    assert_eq!(g.read(a).unwrap(), 41);
    assert_eq!(g.cas(a, 41, 7).unwrap(), 41);
    assert_eq!(g.swap(a, 0xf0).unwrap(), 7);
    assert_eq!(g.fetch_and(a, 0x3c).unwrap(), 0xf0);
    assert_eq!(g.fetch_or(a, 0x01).unwrap(), 0x30);
    assert_eq!(g.fetch_xor(a, 0xff).unwrap(), 0x31);
    assert_eq!(g.read(a).unwrap(), 0xce);

    // 32-bit operations touch only their word and carry the width flag.
    let b = a + 8;
    g.write(b, u64::MAX).unwrap();
    g.write32(b, 5).unwrap();
    assert_eq!(g.read(b).unwrap(), 0xffff_ffff_0000_0005);
    assert_eq!(g.read32(b + 4).unwrap(), u32::MAX);
    assert_eq!(g.fetch_add32(b, u32::MAX).unwrap(), 5);
    assert_eq!(g.read32(b).unwrap(), 4, "32-bit add wraps in 32 bits");
    assert_eq!(g.read32(b + 4).unwrap(), u32::MAX, "and does not carry");
    assert_eq!(g.cas32(b, 4, 9).unwrap(), 4);
    assert_eq!(g.swap32(b, 0xff).unwrap(), 9);
    assert_eq!(g.fetch_and32(b, 0x0f).unwrap(), 0xff);
    assert_eq!(g.fetch_or32(b, 0x30).unwrap(), 0x0f);
    assert_eq!(g.fetch_xor32(b, 0x3f).unwrap(), 0x3f);
    assert_eq!(g.read32(b).unwrap(), 0);
    let last = f.sent.borrow().last().unwrap().1;
    assert_eq!(last.opcode, op::READ | op::WIDTH32);
    let cas32 = f
        .sent
        .borrow()
        .iter()
        .find(|(_, p)| p.opcode == op::CAS | op::WIDTH32)
        .unwrap()
        .1;
    assert_eq!((cas32.arg1, cas32.arg2), (4, 9));

    // 128 and 256 bits.
    let c = a + 32;
    let v: u128 = 0x1111_2222_3333_4444_5555_6666_7777_8888;
    g.write128(c, v).unwrap();
    let w128 = f.sent.borrow().last().unwrap().1;
    assert_eq!((w128.arg1, w128.arg2), (v as u64, (v >> 64) as u64));
    assert_eq!(g.read128(c).unwrap(), v);
    g.write128(c + 16, 0xabcd).unwrap();
    assert_eq!(
        g.read256(c).unwrap(),
        [0x5555_6666_7777_8888, 0x1111_2222_3333_4444, 0xabcd, 0]
    );

    g.nop(3).unwrap();
    assert_eq!(f.sent.borrow().last().unwrap().0, 3);
    g.free(a).unwrap();
    assert!(matches!(g.read(a), Err(Error::Fault(_))));
    let s = g.stats();
    assert_eq!(s.sends, s.requests, "one SEND per operation");
    assert_eq!(s.syscalls(), s.requests, "answered at once: no waiting");
}

#[test]
fn bulk_transfers_of_any_length_are_split_into_pages() {
    let f = Fake::new();
    let g = handle(&f);
    let a = g.alloc_shared_page(0, 4).unwrap();
    let data: Vec<u8> = (0..3 * PAGE_SIZE as usize + 100)
        .map(|i| (i * 7 + 3) as u8)
        .collect();
    let start = a + 50;
    g.bulk_write(start, &data).unwrap();
    let writes: Vec<(u64, u64)> = f
        .sent
        .borrow()
        .iter()
        .filter(|(_, p)| p.opcode == op::BULK_WRITE)
        .map(|(_, p)| (p.address, p.arg1))
        .collect();
    // 50 bytes into a page: a short first piece, whole pages, the rest.
    assert_eq!(
        writes,
        vec![
            (start, PAGE_SIZE - 50),
            (a + PAGE_SIZE, PAGE_SIZE),
            (a + 2 * PAGE_SIZE, PAGE_SIZE),
            (a + 3 * PAGE_SIZE, 150),
        ]
    );
    let mut back = vec![0u8; data.len()];
    g.bulk_read(start, &mut back).unwrap();
    assert_eq!(back, data);
    let mut one = [0u8; 1];
    g.bulk_read(start + 1, &mut one).unwrap();
    assert_eq!(one[0], data[1]);
    // Zero bytes: nothing sent.
    let before = f.sent.borrow().len();
    g.bulk_read(start, &mut []).unwrap();
    g.bulk_write(start, &[]).unwrap();
    assert_eq!(f.sent.borrow().len(), before);
    // Pieces never exceed BULK_MAX nor cross a page; past the end of the node is refused.
    for (addr0, len) in [(0u64, 1usize), (4095, 2), (4096, 4096), (1, 10000), (0, 0)] {
        let ps = pieces(addr0, len).unwrap();
        assert_eq!(ps.iter().map(|(_, r)| r.len()).sum::<usize>(), len);
        for (a, r) in &ps {
            assert!(
                r.len() as u64 <= BULK_MAX && a / PAGE_SIZE == (a + r.len() as u64 - 1) / PAGE_SIZE
            );
        }
    }
    assert!(matches!(
        pieces(addr(1, unimem_wire::gsas::OFFSET_MASK), 2),
        Err(Error::Argument(_))
    ));
}

#[test]
fn answers_after_a_wait_and_counts_the_system_calls() {
    let f = Fake::new();
    let g = handle(&f);
    let a = g.alloc_shared_page(2, 1).unwrap();
    f.delay.set(2);
    g.write(a, 3).unwrap();
    // Spins are not system calls; the answer came during the spins.
    assert_eq!(g.stats().yields + g.stats().sleeps, 0);
    f.delay.set(60);
    let before = g.stats();
    assert_eq!(g.read(a).unwrap(), 3);
    let d = g.stats().since(&before);
    assert_eq!((d.requests, d.sends), (1, 1));
    assert!(d.yields > 0 && d.yields <= 8, "{d:?}");
    assert!(d.sleeps > 0, "{d:?}");
    assert_eq!(d.syscalls(), 1 + d.yields + d.sleeps);
    assert_eq!(d.syscalls() as usize, f.pauses.borrow().len() + 1);
    assert_eq!(f.pauses.borrow()[0], Pause::Yield);
    assert!(matches!(f.pauses.borrow().last(), Some(Pause::Sleep(_))));
    // A request to this node's own service yields at once (no polling: it needs this CPU).
    let mine = g.alloc_shared_page(1, 1).unwrap();
    f.delay.set(2);
    f.pauses.borrow_mut().clear();
    g.write(mine, 1).unwrap();
    assert_eq!(f.pauses.borrow()[0], Pause::Yield);
}

#[test]
fn a_wait_for_another_node_sleeps_until_rung_after_its_looks() {
    let f = Fake::new();
    *f.answer_waits.borrow_mut() = Some(Vec::new());
    let g = handle(&f);
    g.set_policy(WaitPolicy {
        answer_sleep_after: Some(3),
        ..g.policy()
    });
    let a = g.alloc_shared_page(2, 1).unwrap();
    f.delay.set(1_000);
    let seq = Transport::response(&&f, 2).seq;
    let before = g.stats();
    g.write(a, 7).unwrap();
    let d = g.stats().since(&before);
    // Three looks, then one sleep that the home's answer ended: no yield, no timed sleep.
    assert_eq!(f.answer_waits.borrow().as_deref(), Some(&[(2, seq)][..]));
    assert_eq!((d.answer_sleeps, d.yields, d.sleeps), (1, 0, 0), "{d:?}");
    assert_eq!(d.syscalls(), 2);
    // An answer within the looks needs no sleep.
    f.delay.set(1);
    let before = g.stats();
    assert_eq!(g.read(a).unwrap(), 7);
    assert_eq!(g.stats().since(&before).answer_sleeps, 0);
    // This node's own service answers in the caller's SEND: never a sleep for it.
    let mine = g.alloc_shared_page(1, 1).unwrap();
    f.delay.set(20);
    g.write(mine, 1).unwrap();
    assert_eq!(f.answer_waits.borrow().as_ref().map(Vec::len), Some(1));
}

#[test]
fn without_wait_answer_the_wait_goes_on_as_before() {
    let f = Fake::new();
    let g = handle(&f);
    g.set_policy(WaitPolicy {
        answer_sleep_after: Some(0),
        ..g.policy()
    });
    let a = g.alloc_shared_page(2, 1).unwrap();
    f.delay.set(60);
    let before = g.stats();
    g.write(a, 9).unwrap();
    let d = g.stats().since(&before);
    assert_eq!(d.answer_sleeps, 0, "{d:?}");
    assert!(d.yields > 0, "{d:?}");
    assert_eq!(g.read(a).unwrap(), 9);
}

#[test]
fn sequence_number_wraps() {
    let f = Fake::new();
    let g = handle(&f);
    let a = g.alloc_shared_page(1, 1).unwrap();
    f.set_seq(1, u32::MAX - 1);
    for i in 0..4 {
        g.write(a, i).unwrap();
        assert_eq!(g.read(a).unwrap(), i);
    }
    assert_eq!((&f).response(1).seq, 6, "wrapped past u32::MAX");
    // A slot whose seq is 0 (fresh interface area) works too.
    f.set_seq(1, 0);
    assert_eq!(g.fetch_add(a, 1).unwrap(), 3);
}

#[test]
fn an_answer_with_another_echo_is_skipped() {
    let f = Fake::new();
    let g = handle(&f);
    let a = g.alloc_shared_page(1, 1).unwrap();
    g.write(a, 10).unwrap();
    // A late answer to another request lands first: same opcode, other address...
    *f.stale.borrow_mut() = Some((op::FETCH_ADD, a + 8));
    f.delay.set(1);
    assert_eq!(g.fetch_add(a, 1).unwrap(), 10);
    // ... and other opcode, same address.
    *f.stale.borrow_mut() = Some((op::READ, a));
    assert_eq!(g.fetch_add(a, 1).unwrap(), 11);
    assert_eq!(g.stats().mismatches, 2);
}

#[test]
fn a_stalled_pool_is_asked_again_until_it_answers() {
    let f = Fake::new();
    let g = handle(&f);
    let a = g.alloc_shared_page(1, 1).unwrap();
    f.stalled.set(3);
    assert_eq!(g.fetch_add(a, 5).unwrap(), 0);
    assert_eq!(g.stats().stalls, 3);
    assert_eq!(
        g.read(a).unwrap(),
        5,
        "applied once, by the answer that was not STALLED"
    );
    // Stalled past the timeout: EAGAIN, nothing applied.
    g.set_timeout(Duration::from_millis(50));
    f.stalled.set(u32::MAX);
    let e = g.fetch_add(a, 1).unwrap_err();
    assert_eq!((e.kind(), e.errno()), ("stalled", Errno::EAGAIN), "{e}");
    f.stalled.set(0);
    assert_eq!(g.read(a).unwrap(), 5);
}

#[test]
fn every_status_maps_to_its_error() {
    let f = Fake::new();
    let g = handle(&f);
    let a = g.alloc_shared_page(1, 1).unwrap();
    let cases: [(u8, &str, Errno); 7] = [
        (status::INVALID, "invalid", Errno::EINVAL),
        (status::UNALIGNED, "unaligned", Errno::EINVAL),
        (status::FAULT, "fault", Errno::EFAULT),
        (status::DENIED, "denied", Errno::EACCES),
        (status::NO_MEMORY, "no-memory", Errno::ENOMEM),
        (status::NO_POOL, "no-pool", Errno::ENOSPC),
        (0x77, "status", Errno::EPROTO),
    ];
    for (st, kind, errno) in cases {
        f.force_status.set(Some(st));
        let e = g.fetch_add(a, 1).unwrap_err();
        assert_eq!(
            (e.kind(), e.errno(), e.status()),
            (kind, errno, Some(st)),
            "{e}"
        );
        let msg = e.to_string();
        assert!(msg.starts_with("FETCH_ADD at 0x1000000001000"), "{msg}");
    }
    assert_eq!(g.read(a).unwrap(), 0, "a failed request changed nothing");
}

#[test]
fn the_service_checks_give_clear_errors() {
    let f = Fake::new();
    let g = handle(&f);
    let a = g.alloc_shared_page(2, 1).unwrap();
    assert!(matches!(g.read(a + 4), Err(Error::Unaligned(_))));
    assert!(matches!(g.read256(a + 16), Err(Error::Unaligned(_))));
    assert!(g.read32(a + 4).is_ok());
    assert!(matches!(g.raw(0x7f, a, 0, 0), Err(Error::Invalid(_))));
    let e = g.raw(op::READ256 | op::WIDTH32, a, 0, 0).unwrap_err();
    assert!(e.to_string().contains("opcode 0x14"), "{e}");
    assert!(matches!(g.alloc_shared_page(2, 0), Err(Error::Invalid(_))));
    assert!(matches!(
        g.alloc_shared_page(2, MAX_ALLOC_PAGES + 1),
        Err(Error::Invalid(_))
    ));
    assert!(matches!(
        g.alloc_shared_page(2, NODE_PAGES),
        Err(Error::NoMemory(_))
    ));
    assert!(matches!(g.read(a + PAGE_SIZE), Err(Error::Fault(_))));
    // An address of node 3 sent to node 2's service.
    assert!(matches!(
        g.raw_to(2, op::READ, addr(3, offset_of(a)), 0, 0),
        Err(Error::Fault(_))
    ));
    f.give(2, 20, 1, OTHER_TREE);
    let theirs = addr(2, 20 * PAGE_SIZE);
    for e in [
        g.read(theirs).map(drop),
        g.write(theirs, 1),
        g.fetch_add(theirs, 1).map(drop),
        g.free(theirs),
        g.bulk_write(theirs, &[1; 10]),
    ] {
        assert!(matches!(e, Err(Error::Denied(_))), "{e:?}");
    }
    g.free(a).unwrap();
    assert!(matches!(g.free(a), Err(Error::Fault(_))), "double free");
    let e = g.read(addr(16, 0)).unwrap_err();
    assert!(matches!(e, Error::Argument(_)) && e.to_string().contains("node 16"));
}

#[test]
fn send_errors_and_full_rings() {
    let f = Fake::new();
    let g = handle(&f);
    let a = g.alloc_shared_page(1, 1).unwrap();
    f.eagain.set(3);
    g.write(a, 1).unwrap();
    let s = g.stats();
    assert_eq!(s.send_retries, 3);
    f.send_errno.set(Some(Errno::EINVAL));
    let e = g.read(a).unwrap_err();
    assert_eq!(e.errno(), Errno::EINVAL);
    assert!(e.to_string().contains("SEND"), "{e}");
    f.send_errno.set(None);
    // A ring that stays full times out.
    g.set_timeout(Duration::from_millis(200));
    f.eagain.set(u32::MAX);
    assert!(matches!(g.read(a), Err(Error::Timeout { .. })));
    f.eagain.set(0);
}

#[test]
fn a_lost_answer_times_out_and_the_next_request_resynchronizes() {
    let f = Fake::new();
    let g = handle(&f);
    let a = g.alloc_shared_page(1, 1).unwrap();
    g.set_timeout(Duration::from_millis(30));
    f.lose.set(1);
    let t0 = std::time::Instant::now();
    let e = g.fetch_add(a, 1).unwrap_err();
    let took = t0.elapsed();
    assert!(matches!(e, Error::Timeout { node: 1, .. }), "{e}");
    assert_eq!(e.errno(), Errno::ETIMEDOUT);
    assert!(e.to_string().contains("no answer from node 1"), "{e}");
    assert!(
        took >= Duration::from_millis(30) && took < Duration::from_secs(2),
        "{took:?}"
    );
    assert_eq!(g.stats().timeouts, 1);
    assert!(g.stats().sleeps > 0);
    // The next request to node 1 first sends a NOP with a fresh address and waits for it.
    let n = f.sent.borrow().len();
    assert_eq!(
        g.fetch_add(a, 1).unwrap(),
        0,
        "the lost request was never applied"
    );
    let sent = f.sent.borrow();
    assert_eq!(sent[n].1.opcode, op::NOP);
    assert_eq!(sent[n + 1].1.opcode, op::FETCH_ADD);
    // Node 2 was never out of step: no NOP.
    drop(sent);
    let n = f.sent.borrow().len();
    g.nop(2).unwrap();
    assert_eq!(f.sent.borrow().len(), n + 1);
}

#[test]
fn a_late_answer_does_not_pass_for_the_next_request() {
    let f = Fake::new();
    let g = handle(&f);
    let a = g.alloc_shared_page(1, 1).unwrap();
    g.set_timeout(Duration::from_millis(20));
    // The answer comes, but only after the timeout (many pauses later).
    f.delay.set(100_000);
    let r = g.fetch_add(a, 5);
    assert!(matches!(r, Err(Error::Timeout { .. })), "{r:?}");
    // The late FETCH_ADD answer (same opcode and address as the next request) arrives while the
    // resynchronizing NOP waits, and is skipped; the next FETCH_ADD sees 5.
    f.delay.set(0);
    g.set_timeout(Duration::from_secs(5));
    f.pending.borrow_mut()[0].2 = 0;
    assert_eq!(g.fetch_add(a, 1).unwrap(), 5);
    assert_eq!(g.read(a).unwrap(), 6);
}

#[test]
fn wait_policy_from_the_environment() {
    let d = WaitPolicy::default();
    assert_eq!(d.timeout, Duration::from_secs(5));
    assert!(d.spins > 0 && d.yields > 0 && d.sleep_min <= d.sleep_max);
}

#[test]
fn op_names() {
    assert_eq!(op_name(op::FETCH_ADD | op::WIDTH32), "FETCH_ADD32");
    assert_eq!(op_name(op::READ256), "READ256");
    assert_eq!(op_name(0x7f), "opcode");
    let r = Request {
        opcode: 0x7f,
        addr: addr(2, 0x1001),
    };
    assert_eq!(
        r.to_string(),
        "opcode 0x7f at 0x2000000001001 (node 2, offset 0x1001)"
    );
}

#[test]
fn remote_fork_wait_and_their_errors() {
    let f = Fake::new();
    let g = Gsas::with_transport(&f);
    let c = g.remote_fork(2, "/bin/prog", &["a", "b"]).unwrap();
    assert_eq!(c.node(), 2);
    // The blob went through bulk-out, its length in arg1.
    assert_eq!(&f.bulk_out.borrow()[..14], b"/bin/prog\0a\0b\0");
    let (home, req) = *f.sent.borrow().last().unwrap();
    assert_eq!((home, req.opcode, req.arg1), (2, op::FORK, 14));
    assert_eq!(g.try_wait(c).unwrap(), None);
    let st = g.wait(c).unwrap();
    assert_eq!((st.code(), st.signal(), st.shell()), (Some(3), None, 3));
    assert!(matches!(g.wait(c), Err(Error::NoChild(_))));
    match g.remote_fork::<&str>(1, "/nonexistent", &[]) {
        Err(Error::ExecFailed { errno, .. }) => assert_eq!(errno, Errno::ENOENT),
        other => panic!("{other:?}"),
    }
    let sent = f.sent.borrow().len();
    for (path, args) in [
        ("rel", vec![]),
        ("/p", vec![""]),
        ("/p", vec!["x"; fork::MAX_ARGS]),
    ] {
        let r = g.remote_fork(1, path, &args);
        assert!(matches!(r, Err(Error::Argument(_))), "{path} {r:?}");
    }
    // Argument errors are found before sending.
    assert_eq!(f.sent.borrow().len(), sent);
    let killed = ExitStatus(9);
    assert_eq!(
        (killed.code(), killed.signal(), killed.shell()),
        (None, Some(9), 137)
    );
    assert_eq!(
        Error::NoDaemon(Request {
            opcode: op::FORK,
            addr: 0
        })
        .errno(),
        Errno::ESRCH
    );
}

#[test]
fn requests_to_a_polling_home_use_its_slot_without_a_system_call() {
    let f = Fake::new();
    f.polling.set(true);
    let g = handle(&f);
    let a = g.alloc_shared_page(2, 1).unwrap();
    // The ALLOC was a SEND, which said the home polls: the rest go through the slot.
    for i in 1..=5u64 {
        assert_eq!(g.fetch_add(a, 1).unwrap(), i - 1);
    }
    let s = g.stats();
    assert_eq!((s.sends, s.submits, s.kicks), (1, 5, 0));
    assert_eq!(s.syscalls(), 1, "six requests, one system call");
    let seqs: Vec<u32> = f.submitted.borrow().iter().map(|x| x.1).collect();
    assert_eq!(seqs, [1, 2, 3, 4, 5]);
    assert!(f.submitted.borrow().iter().all(|x| x.0 == 2));
    // This node's own service is always SENT to: that applies the request at once.
    let local = g.alloc_shared_page(1, 1).unwrap();
    g.write(local, 9).unwrap();
    assert_eq!(g.stats().since(&s).sends, 2);
    assert_eq!(f.submitted.borrow().len(), 5);
}

#[test]
fn a_slot_request_the_home_does_not_take_is_kicked_and_the_next_one_sent() {
    let f = Fake::new();
    f.polling.set(true);
    let g = handle(&f);
    let a = g.alloc_shared_page(2, 1).unwrap();
    g.write(a, 5).unwrap();
    // The home stops polling: the next slot request waits for a KICK, then SEND again.
    f.polling.set(false);
    assert_eq!(g.fetch_add(a, 2).unwrap(), 5);
    assert_eq!(f.kicks.get(), 1);
    assert_eq!(g.read(a).unwrap(), 7);
    let s = g.stats();
    assert_eq!((s.sends, s.submits, s.kicks), (2, 2, 1));
    // The kicked request waited (yields and sleeps): a kick costs more than a SEND.
    assert!(s.syscalls() > 3);
    assert_eq!(f.kicks.get(), 1, "a SEND needs no kick");
}

#[test]
fn grant_modes_parse_as_chmod_takes_them() {
    use crate::cli::parse_mode;
    assert_eq!(parse_mode("640"), Ok(0o640));
    assert_eq!(parse_mode("0640"), Ok(0o640));
    assert_eq!(parse_mode("0o604"), Ok(0o604));
    assert_eq!(parse_mode("0"), Ok(0));
    assert!(parse_mode("1777").unwrap_err().contains("beyond 0777"));
    assert!(parse_mode("0x640").is_err());
    assert!(parse_mode("rw").is_err());
}

#[test]
fn scatter_if_stores_only_when_its_guard_holds() {
    use unimem_wire::gsas::indexed::MAX_PAIRS;
    let f = Fake::new();
    let g = handle(&f);
    let a = g.alloc_shared_page(1, 1).unwrap();
    g.write(a, 3).unwrap();
    // Guard holds: every store applied, in order (the guard's own word last).
    assert_eq!(
        g.scatter_if(8, (a, 3), &[(a + 8, 10), (a + 16, 11), (a, 4)])
            .unwrap(),
        3
    );
    assert_eq!(
        (
            g.read(a).unwrap(),
            g.read(a + 8).unwrap(),
            g.read(a + 16).unwrap()
        ),
        (4, 10, 11)
    );
    // Guard does not hold: nothing stored, the guard as found returned.
    assert_eq!(g.scatter_if(8, (a, 3), &[(a + 8, 99), (a, 5)]).unwrap(), 4);
    assert_eq!((g.read(a).unwrap(), g.read(a + 8).unwrap()), (4, 10));
    // 4-byte elements compare the low 32 bits.
    g.write(a + 24, 0x1_0000_0007).unwrap();
    assert_eq!(g.scatter_if(4, (a + 24, 7), &[(a + 32, 1)]).unwrap(), 7);
    assert_eq!(g.read(a + 32).unwrap(), 1);
    // One request each; too many entries refused before sending.
    let sent = f.sent.borrow().len();
    let r = g.scatter_if(8, (a, 4), &vec![(a, 1); MAX_PAIRS as usize]);
    assert!(matches!(r, Err(Error::Argument(_))), "{r:?}");
    assert_eq!(f.sent.borrow().len(), sent, "nothing sent");
}

#[test]
fn indexed_batches_add_scatter_gather_and_fail_whole() {
    use unimem_wire::gsas::indexed::{ADD, GATHER, MAX_ADDRS, MAX_PAIRS, SCATTER};
    let f = Fake::new();
    let g = handle(&f);
    let a = g.alloc_shared_page(2, 1).unwrap();
    // 8-byte scatter, then adds (twice to one element), then a gather of both widths.
    g.indexed(SCATTER, 8, &[(a, 5), (a + 8, 7)], &mut [])
        .unwrap();
    g.indexed(ADD, 8, &[(a, 1), (a + 8, u64::MAX), (a, 10)], &mut [])
        .unwrap();
    assert_eq!((g.read(a).unwrap(), g.read(a + 8).unwrap()), (16, 6));
    g.indexed(ADD, 4, &[(a + 16, 0xffff_ffff), (a + 16, 2)], &mut [])
        .unwrap();
    assert_eq!(
        g.read(a + 16).unwrap(),
        1,
        "32-bit wrap, neighbour untouched"
    );
    let mut out = [0u64; 3];
    g.indexed(GATHER, 4, &[(a + 16, 0), (a, 0), (a + 20, 0)], &mut out)
        .unwrap();
    assert_eq!(out, [1, 16, 0]);
    let sent = f.sent.borrow().last().copied().unwrap();
    assert_eq!(
        (sent.0, sent.1.opcode, sent.1.address),
        (2, op::INDEXED, a + 16)
    );
    // Refused before sending: counts, sizes, room for the results.
    let sent = f.sent.borrow().len();
    for r in [
        g.indexed(ADD, 8, &[], &mut []),
        g.indexed(ADD, 2, &[(a, 1)], &mut []),
        g.indexed(7, 8, &[(a, 1)], &mut []),
        g.indexed(SCATTER, 8, &vec![(a, 1); MAX_PAIRS as usize + 1], &mut []),
        g.indexed(
            GATHER,
            8,
            &vec![(a, 0); MAX_ADDRS as usize + 1],
            &mut [0; 1024],
        ),
        g.indexed(GATHER, 8, &[(a, 0), (a, 0)], &mut [0; 1]),
    ] {
        assert!(matches!(r, Err(Error::Argument(_))), "{r:?}");
    }
    assert_eq!(f.sent.borrow().len(), sent, "nothing sent");
    // The home's refusals, and a failed batch changes nothing.
    f.give(2, 5, 1, OTHER_TREE);
    let theirs = addr(2, 5 * PAGE_SIZE);
    let e = g
        .indexed(ADD, 8, &[(a, 100), (theirs, 1)], &mut [])
        .unwrap_err();
    assert!(matches!(e, Error::Denied(_)), "{e}");
    let e = g
        .indexed(SCATTER, 8, &[(a, 100), (a + 4, 1)], &mut [])
        .unwrap_err();
    assert!(matches!(e, Error::Unaligned(_)), "{e}");
    let e = g
        .indexed(
            SCATTER,
            8,
            &[(a, 100), (addr(2, 9 * PAGE_SIZE), 1)],
            &mut [],
        )
        .unwrap_err();
    assert!(matches!(e, Error::Fault(_)), "{e}");
    let e = g
        .indexed(SCATTER, 8, &[(a, 100), (addr(3, 0), 1)], &mut [])
        .unwrap_err();
    assert!(matches!(e, Error::Fault(_)), "another node's entry: {e}");
    assert_eq!(g.read(a).unwrap(), 16, "nothing applied");
    let e = g.raw(op::INDEXED, a, 8 << 32, 0).unwrap_err();
    assert!(matches!(e, Error::Invalid(_)), "count 0: {e}");
    assert_eq!(op_name(op::INDEXED), "INDEXED");
}
